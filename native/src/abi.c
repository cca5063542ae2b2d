/*
 * abi.c - the struct_size contract of the public input structs.
 *
 * A caller built against an older pyframes.h passes a smaller struct: the
 * fields it lacks read as zero (their documented default).  A caller built
 * against a newer header passes a larger one: accepted when every byte this
 * library does not know is zero (the caller asked for nothing new), refused
 * with PYF_ENOTSUP otherwise.  Output structs the caller sizes get the
 * bytes its struct_size covers, the rest zeroed.
 */
#include <string.h>

#include "abi.h"
#include "api.h"
#include "errors.h"

/* The caller arrays' structs are frozen (ABI policy: their stride). */
_Static_assert(sizeof(pyf_mapping) == PYF_MAPPING_SIZE, "pyf_mapping is frozen");
_Static_assert(sizeof(pyf_iovec) == PYF_IOVEC_SIZE, "pyf_iovec is frozen");
_Static_assert(sizeof(pyf_os_thread) == PYF_OS_THREAD_SIZE, "pyf_os_thread is frozen");

int pyf__struct_in(const void *in, size_t v0_size, void *local,
                   size_t local_size, const char *name, char *err,
                   size_t errlen)
{
    uint32_t size;

    memset(local, 0, local_size);
    memcpy(&size, in, sizeof size); /* struct_size is every struct's first field */
    if (size < v0_size) {
        pyf__fmt(err, errlen, "%s.struct_size is %u, below the %zu bytes of its "
                 "first published layout", name, size, v0_size);
        return PYF_EINVAL;
    }
    if (size > local_size) {
        const unsigned char *tail = (const unsigned char *)in + local_size;
        for (size_t i = 0; i < size - local_size; i++) {
            if (tail[i] != 0) {
                pyf__fmt(err, errlen, "%s.struct_size is %u and its byte %zu is set: "
                         "this library knows only the first %zu bytes", name,
                         size, local_size + i, local_size);
                return PYF_ENOTSUP;
            }
        }
    }
    memcpy(local, in, size < local_size ? size : local_size);
    memcpy(local, &(uint32_t){(uint32_t)local_size}, sizeof(uint32_t));
    return PYF_OK;
}

int pyf__struct_out(void *out, size_t v0_size, void *local, size_t local_size)
{
    uint32_t size;

    memcpy(&size, out, sizeof size);
    if (size < v0_size)
        return PYF_EINVAL;
    ((uint32_t *)local)[0] = (uint32_t)(size < local_size ? size : local_size);
    memcpy(out, local, size < local_size ? size : local_size);
    if (size > local_size) /* a newer caller: what we do not know reads as zero */
        memset((unsigned char *)out + local_size, 0, size - local_size);
    return PYF_OK;
}

int pyf__reader_in(const pyf_reader *in, pyf_reader *out, char *err,
                   size_t errlen)
{
    if (in == NULL) {
        pyf__fmt(err, errlen, "no reader given");
        return PYF_EINVAL;
    }
    int rc = pyf__struct_in(in, PYF_READER_SIZE_V0, out, sizeof *out,
                            "pyf_reader", err, errlen);
    if (rc == PYF_OK && out->read == NULL) {
        pyf__fmt(err, errlen, "the reader has no read callback");
        rc = PYF_EINVAL;
    }
    if (rc == PYF_OK && out->reads > PYF_READS_CORE) {
        pyf__fmt(err, errlen, "pyf_reader.reads is %u, not a PYF_READS_* value", out->reads);
        rc = PYF_EINVAL;
    }
    return rc;
}

bool pyf__failure_begin(const pyf_failure *caller, pyf_failure *f)
{
    memset(f, 0, sizeof *f);
    return caller == NULL || caller->struct_size >= PYF_FAILURE_SIZE_V0;
}

int pyf__failure_out(pyf_failure *caller, pyf_failure *f, int rc)
{
    f->code = rc;
    if (rc == PYF_OK)
        f->detail[0] = '\0';
    else if (f->detail[0] == '\0') /* a cause without words: name it at least */
        pyf__fmt(f->detail, sizeof f->detail, "%s", pyf_error_message(rc));
    if (caller != NULL)
        pyf__struct_out(caller, PYF_FAILURE_SIZE_V0, f, sizeof *f);
    return rc;
}
