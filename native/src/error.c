/*
 * error.c - the error list (names, messages) and message formatting.
 */
#include <stdarg.h>
#include <stdio.h>

#include "api.h"
#include "errors.h"

const char *pyf_error_message(int code)
{
    switch (code) {
#define PYF__ERR_MSG(name, value, msg) case value: return msg;
        PYF_ERRORS(PYF__ERR_MSG)
#undef PYF__ERR_MSG
    }
    return "unknown error";
}

const char *pyf_error_name(int code)
{
    switch (code) {
#define PYF__ERR_NAME(name, value, msg) case value: return "PYF_" #name;
        PYF_ERRORS(PYF__ERR_NAME)
#undef PYF__ERR_NAME
    }
    return "PYF_UNKNOWN";
}

int pyf_library_version(void)
{
    return PYF_VERSION_NUMBER;
}

void pyf__fmt(char *buf, size_t len, const char *fmt, ...)
{
    if (buf == NULL || len == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, len, fmt, ap);
    va_end(ap);
    if (n < 0)
        buf[0] = '\0';
}
