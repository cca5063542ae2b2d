/*
 * read.c - every read of target memory goes through here: counting for
 * pyf_stats, and a detail message naming what was read where on failure.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

int pyf__raw_read(const pyf_reader *r, pyf_stats *stats, uint64_t addr,
                  void *dst, size_t len)
{
    if (len == 0)
        return PYF_OK;
    if (addr + len < addr)
        return PYF_EFAULT;
    int rc = r->read(r->arg, addr, dst, len);
    if (rc > 0)
        rc = PYF_EIO; /* a reader must return 0 or a negative code */
    if (stats) {
        stats->read_calls++;
        stats->read_ranges++;
        if (rc == PYF_OK)
            stats->bytes_read += len;
        else
            stats->read_failures++;
    }
    return rc;
}

static int failure_vset(pyf_failure *f, int code, const char *fmt, va_list ap)
{
    f->code = code;
    f->addr = f->len = 0;
    f->what[0] = f->reader_message[0] = '\0';
    if (vsnprintf(f->detail, sizeof f->detail, fmt, ap) < 0)
        f->detail[0] = '\0';
    return code;
}

int pyf__failure_set(pyf_failure *f, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failure_vset(f, code, fmt, ap);
    va_end(ap);
    return code;
}

int pyf__fail(pyf_target *t, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failure_vset(&t->fail, code, fmt, ap);
    va_end(ap);
    return code;
}

int pyf__read_failed(pyf_failure *f, const pyf_reader *r, int rc,
                     const char *what, uint64_t addr, size_t len)
{
    const char *own = r->message ? r->message(r->arg) : NULL;
    pyf__failure_set(f, rc, "reading %s at 0x%llx (%zu bytes): %s", what,
                     (unsigned long long)addr, len, pyf_error_message(rc));
    f->addr = addr;
    f->len = len;
    pyf__fmt(f->what, sizeof f->what, "%s", what);
    if (own != NULL && *own != '\0') {
        size_t n = strlen(f->detail);
        pyf__fmt(f->reader_message, sizeof f->reader_message, "%s", own);
        pyf__fmt(f->detail + n, sizeof f->detail - n, " [reader: %s]", f->reader_message);
    }
    return rc;
}

int pyf__read(pyf_target *t, uint64_t addr, void *dst, size_t len,
              const char *what)
{
    int rc = pyf__raw_read(&t->reader, &t->stats, addr, dst, len);
    if (rc != PYF_OK)
        pyf__read_failed(&t->fail, &t->reader, rc, what, addr, len);
    return rc;
}

int pyf__readv(pyf_target *t, const pyf_iovec *iov, size_t n, int *status)
{
    int first = PYF_OK;
    if (n == 0)
        return PYF_OK;
    if (t->reader.readv != NULL) {
        for (size_t i = 0; i < n; i++)
            status[i] = PYF_OK;
        int rc = t->reader.readv(t->reader.arg, iov, n, status);
        t->stats.read_calls++;
        t->stats.read_ranges += n;
        for (size_t i = 0; i < n; i++) {
            if (rc == PYF_OK)
                status[i] = PYF_OK;
            if (status[i] > 0)
                status[i] = PYF_EIO;
            if (status[i] == PYF_OK) {
                t->stats.bytes_read += iov[i].len;
            } else {
                t->stats.read_failures++;
                if (first == PYF_OK)
                    first = status[i];
            }
        }
        if (rc != PYF_OK && first == PYF_OK) {
            /* a reader that failed without saying which range */
            for (size_t i = 0; i < n; i++)
                status[i] = rc < 0 ? rc : PYF_EIO;
            first = status[0];
        }
        return first;
    }
    for (size_t i = 0; i < n; i++) {
        status[i] = pyf__raw_read(&t->reader, &t->stats, iov[i].addr,
                                  iov[i].dst, iov[i].len);
        if (status[i] != PYF_OK && first == PYF_OK)
            first = status[i];
    }
    return first;
}
