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

int pyf__fail(pyf_target *t, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->err, sizeof t->err, fmt, ap);
    va_end(ap);
    if (n < 0)
        t->err[0] = '\0';
    return code;
}

void pyf__read_failed(char *buf, size_t buflen, const pyf_reader *r, int rc,
                      const char *what, uint64_t addr, size_t len)
{
    const char *own = r->message ? r->message(r->arg) : NULL;
    bool has_own = own != NULL && *own != '\0';
    pyf__fmt(buf, buflen, "reading %s at 0x%llx (%zu bytes): %s%s%s%s", what,
             (unsigned long long)addr, len, pyf_error_message(rc),
             has_own ? " [reader: " : "", has_own ? own : "", has_own ? "]" : "");
}

int pyf__read(pyf_target *t, uint64_t addr, void *dst, size_t len,
              const char *what)
{
    int rc = pyf__raw_read(&t->reader, &t->stats, addr, dst, len);
    if (rc != PYF_OK)
        pyf__read_failed(t->err, sizeof t->err, &t->reader, rc, what, addr, len);
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
