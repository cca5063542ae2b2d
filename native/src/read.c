/*
 * read.c - every read of target memory goes through here: counting for
 * pyf_stats, and a detail message naming what was read where on failure.
 *
 * Prefetch: a snapshot remembers the ranges it read (the walk's reads of
 * runtime, interpreters, thread states, chunks, code headers); when the
 * reader can read several ranges in one call, the next snapshot reads them
 * all first, in that one call, and its reads of the same ranges are served
 * from that copy, once each.  An unchanged stack then costs one reader call;
 * what moved is simply read again.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "containers.h"
#include "errors.h"
#include "reads.h"
#include "replay.h"
#include "target.h"
#include "walk.h"

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

int pyf__read_now(pyf_target *t, uint64_t addr, void *dst, size_t len)
{
    if (len > 0)
        t->io.calls++;
    int rc = pyf__raw_read(&t->io.reader, &t->io.stats, addr, dst, len);
    if (t->replay.log != NULL)
        pyf__readlog_add(t->replay.log, addr, dst, len, rc);
    return rc;
}

void pyf__failure_clear(pyf_failure *f)
{
    f->code = PYF_OK;
    f->addr = f->len = 0;
    f->what[0] = f->reader_message[0] = f->detail[0] = '\0';
}

static int failure_vset(pyf_failure *f, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static int failure_vset(pyf_failure *f, int code, const char *fmt, va_list ap)
{
    pyf__failure_clear(f);
    f->code = code;
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
    failure_vset(&t->io.fail, code, fmt, ap);
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

#define PLAN_MAX_RANGES 1024u   /* process_vm_readv takes up to IOV_MAX */
#define PLAN_MAX_BYTES (8u << 20)
#define PREFETCH_USED 1 /* a range's status once it has served its read */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool pyf__read_stalled(const pyf_target *t)
{
    return t->io.stall_ns != 0 && pyf__target_live(t) && t->io.call_ns > t->io.stall_ns &&
           t->io.call_ns - t->io.stall_ns > t->io.call_bytes;
}

void pyf__prefetch_free(pyf__prefetch *p)
{
    free(p->iov);
    free(p->status);
    free(p->buf);
    free(p->plan);
    memset(p, 0, sizeof *p);
}

void pyf__prefetch_begin(pyf_target *t)
{
    pyf__prefetch *p = &t->walk.prefetch;
    p->n = 0;
    p->nread = 0;
    p->read_ok = false;
    p->active = true;
    p->stalled = false;
    uint32_t n = p->nplan;
    p->nplan = 0;
    p->plan_bytes = 0;
    if (t->io.reader.readv == NULL || n == 0)
        return;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total += p->plan[i].len;
    if (total > p->buf_cap) {
        uint8_t *nb = realloc(p->buf, total);
        if (nb == NULL)
            return;
        p->buf = nb;
        p->buf_cap = total;
    }
    if (!pyf__grow((void **)&p->iov, &p->cap_iov, n, sizeof *p->iov) ||
        !pyf__grow((void **)&p->status, &p->cap_status, n, sizeof *p->status))
        return;
    uint64_t at = 0;
    for (uint32_t i = 0; i < n; i++) {
        p->iov[i] = (pyf_iovec){p->plan[i].addr, p->buf + at, p->plan[i].len};
        at += p->plan[i].len;
    }
    pyf__readv(t, p->iov, n, p->status);
    p->stalled = pyf__read_stalled(t);
    /* a stalled call's ranges are of no one moment: none is served (the
     * snapshot reads as a first one does), each is planned again */
    p->n = p->stalled ? 0 : n;
    p->nread = n;
    p->read_ok = true;
    for (uint32_t i = 0; i < n; i++)
        p->read_ok = p->read_ok && p->status[i] == PYF_OK;
}

uint32_t pyf__prefetch_pause(pyf_target *t)
{
    uint32_t n = t->walk.prefetch.n;
    t->walk.prefetch.n = 0;
    return n;
}

void pyf__prefetch_resume(pyf_target *t, uint32_t n)
{
    /* a walk that gave up the prefetch meanwhile (n = 0) keeps it given up */
    if (t->walk.prefetch.n == 0 && t->walk.prefetch.active)
        t->walk.prefetch.n = n;
}

void pyf__prefetch_end(pyf_target *t)
{
    t->walk.prefetch.active = false;
    t->walk.prefetch.n = 0;
}

/* The prefetched copy of [addr, addr+len), from a range that holds it
 * (each range serves one read), or NULL. */
static const uint8_t *prefetched(pyf__prefetch *p, uint64_t addr, size_t len)
{
    for (uint32_t i = 0; i < p->n; i++) {
        pyf_iovec *v = &p->iov[i];
        if (p->status[i] == PYF_OK && addr >= v->addr && addr - v->addr <= v->len &&
            len <= v->len - (addr - v->addr)) {
            p->status[i] = PREFETCH_USED;
            return (const uint8_t *)v->dst + (addr - v->addr);
        }
    }
    return NULL;
}

uint32_t pyf__plan_mark(const pyf_target *t)
{
    return t->walk.prefetch.nplan;
}

void pyf__plan_truncate(pyf_target *t, uint32_t mark)
{
    pyf__prefetch *p = &t->walk.prefetch;
    while (p->nplan > mark) {
        p->nplan--;
        p->plan_bytes -= p->plan[p->nplan].len;
    }
}

static void plan_add(pyf__prefetch *p, uint64_t addr, size_t len)
{
    if (p->nplan >= PLAN_MAX_RANGES || p->plan_bytes + len > PLAN_MAX_BYTES ||
        !pyf__grow((void **)&p->plan, &p->cap_plan, p->nplan + 1, sizeof *p->plan))
        return;
    p->plan[p->nplan].addr = addr;
    p->plan[p->nplan].len = len;
    p->nplan++;
    p->plan_bytes += len;
}

const uint8_t *pyf__read_view(pyf_target *t, uint64_t addr, size_t len)
{
    pyf__prefetch *p = &t->walk.prefetch;
    const uint8_t *v = p->n != 0 && len > 0 ? prefetched(p, addr, len) : NULL;
    if (v != NULL && p->active)
        plan_add(p, addr, len);
    return v;
}

int pyf__read_quiet(pyf_target *t, uint64_t addr, void *dst, size_t len)
{
    pyf__prefetch *p = &t->walk.prefetch;
    int rc = PYF_OK;
    const uint8_t *v = p->n != 0 ? prefetched(p, addr, len) : NULL;
    if (v != NULL)
        memcpy(dst, v, len);
    else
        rc = pyf__read_now(t, addr, dst, len);
    if (rc == PYF_OK && p->active && len > 0)
        plan_add(p, addr, len); /* what failed is not read ahead */
    return rc;
}

int pyf__read_fresh(pyf_target *t, uint64_t addr, void *dst, size_t len)
{
    pyf__prefetch *p = &t->walk.prefetch;
    int rc = pyf__read_now(t, addr, dst, len);
    if (rc == PYF_OK && p->active && len > 0)
        plan_add(p, addr, len);
    return rc;
}

int pyf__read_copies(pyf_target *t, uint64_t addr, void *const *dst, size_t len,
                     const pyf_iovec *then, size_t nthen)
{
    pyf__prefetch *p = &t->walk.prefetch;
    pyf_iovec iov[PYF__COPIES + PYF__THEN_MAX];
    int status[PYF__COPIES + PYF__THEN_MAX];
    if (nthen > PYF__THEN_MAX)
        return PYF_EINVAL;
    for (int i = 0; i < PYF__COPIES; i++) {
        iov[i].addr = addr;
        iov[i].dst = dst[i];
        iov[i].len = len;
    }
    size_t n = PYF__COPIES;
    for (size_t i = 0; i < nthen; i++)
        iov[n++] = then[i];
    int rc = pyf__readv(t, iov, n, status);
    if (rc == PYF_OK && p->active && len > 0)
        for (size_t i = 0; i < n; i++)
            plan_add(p, iov[i].addr, iov[i].len);
    return rc;
}

int pyf__read_after(pyf_target *t, const pyf_iovec *iov, size_t n)
{
    pyf__prefetch *p = &t->walk.prefetch;
    const uint8_t *v[PYF__THEN_MAX];
    int status[PYF__THEN_MAX];
    size_t got = 0;
    if (n > PYF__THEN_MAX)
        return PYF_EINVAL;
    while (got < n && (v[got] = pyf__read_view(t, iov[got].addr, iov[got].len)) != NULL)
        got++;
    if (got == n) {
        for (size_t i = 0; i < n; i++)
            memcpy(iov[i].dst, v[i], iov[i].len);
        return PYF_OK;
    }
    int rc = pyf__readv(t, iov, n, status);
    if (rc == PYF_OK && p->active)
        for (size_t i = 0; i < n; i++)
            plan_add(p, iov[i].addr, iov[i].len);
    return rc;
}

int pyf__read(pyf_target *t, uint64_t addr, void *dst, size_t len,
              const char *what)
{
    int rc = pyf__read_quiet(t, addr, dst, len);
    if (rc != PYF_OK)
        pyf__read_failed(&t->io.fail, &t->io.reader, rc, what, addr, len);
    return rc;
}

int pyf__readv(pyf_target *t, const pyf_iovec *iov, size_t n, int *status)
{
    int first = PYF_OK;
    if (n == 0)
        return PYF_OK;
    if (t->io.reader.readv != NULL) {
        for (size_t i = 0; i < n; i++)
            status[i] = PYF_OK;
        bool timed = t->io.stall_ns != 0 && pyf__target_live(t);
        uint64_t start = timed ? now_ns() : 0;
        int rc = t->io.reader.readv(t->io.reader.arg, iov, n, status);
        if (timed) {
            t->io.call_ns = now_ns() - start;
            t->io.call_bytes = 0;
            for (size_t i = 0; i < n; i++)
                t->io.call_bytes += iov[i].len;
        }
        t->io.calls++;
        t->io.stats.read_calls++;
        t->io.stats.read_ranges += n;
        for (size_t i = 0; i < n; i++) {
            if (rc == PYF_OK)
                status[i] = PYF_OK;
            if (status[i] > 0)
                status[i] = PYF_EIO;
            if (status[i] == PYF_OK) {
                t->io.stats.bytes_read += iov[i].len;
            } else {
                t->io.stats.read_failures++;
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
        for (size_t i = 0; t->replay.log != NULL && i < n; i++)
            pyf__readlog_add(t->replay.log, iov[i].addr, iov[i].dst, iov[i].len, status[i]);
        return first;
    }
    for (size_t i = 0; i < n; i++) {
        status[i] = pyf__read_now(t, iov[i].addr, iov[i].dst, iov[i].len);
        if (status[i] != PYF_OK && first == PYF_OK)
            first = status[i];
    }
    return first;
}
