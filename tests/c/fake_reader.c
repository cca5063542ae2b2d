/*
 * fake_reader.c - the pyf_reader over an image (fault injection, the
 * live-change hook, counters) and opening targets with it.
 * See fake_target.h.
 */
#include "fake_internal.h"

#include <string.h>

/* ==== the reader ======================================================= */

static int read_range(fake_target *ft, uint64_t addr, void *dst, size_t len)
{
    if (len == 0)
        return 0;
    if (addr + len < addr)
        return PYF_EFAULT;
    if (ft->watch_fn != NULL &&
        (ft->watch_within ? addr <= ft->watch_addr && ft->watch_addr - addr < len
                          : ft->watch_addr == addr) &&
        --ft->watch_left == 0) {
        void (*fn)(fake_target *, void *) = ft->watch_fn;
        ft->watch_fn = NULL;
        fn(ft, ft->watch_arg); /* the process moves on before this read */
    }
    for (size_t i = 0; i < ft->nfaults; i++) {
        const ft_fault *f = &ft->faults[i];
        if (addr < f->addr + f->len && f->addr < addr + len)
            return f->code;
    }
    if (ft->short_over && len > ft->short_over)
        return PYF_EIO;
    ft_region *r = ft_find_region(ft, addr, len);
    if (r == NULL)
        return PYF_EFAULT;
    memcpy(dst, r->mem + (addr - r->base), len);
    ft->cnt.bytes += len;
    return 0;
}

static int injected(fake_target *ft)
{
    if (ft->fail_at == 0)
        return 0;
    if (ft->cnt.calls == ft->fail_at || (ft->fail_sticky && ft->cnt.calls > ft->fail_at))
        return 1;
    return 0;
}

static int fake_read_cb(void *arg, uint64_t addr, void *dst, size_t len)
{
    fake_target *ft = arg;
    ft->cnt.calls++;
    ft->cnt.ranges++;
    int rc = injected(ft) ? ft->fail_code : read_range(ft, addr, dst, len);
    if (rc)
        ft->cnt.failures++;
    return rc;
}

static int fake_readv_cb(void *arg, const pyf_iovec *iov, size_t n, int *status)
{
    fake_target *ft = arg;
    ft->cnt.calls++;
    ft->cnt.ranges += n;
    int inj = injected(ft);
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = inj ? ft->fail_code : read_range(ft, iov[i].addr, iov[i].dst, iov[i].len);
        if (status)
            status[i] = rc;
        if (rc && first == 0)
            first = rc;
    }
    if (first)
        ft->cnt.failures++;
    return first;
}

/* Writes land in the image where it is mapped (counted); EFAULT elsewhere. */
static int fake_write_cb(void *arg, uint64_t addr, const void *src, size_t len)
{
    fake_target *ft = arg;
    uint8_t probe[64];
    if (ft->write_watch_fn != NULL && ft->write_watch_addr == addr) {
        void (*fn)(fake_target *, void *) = ft->write_watch_fn;
        ft->write_watch_fn = NULL;
        fn(ft, ft->write_watch_arg); /* the process moves on before the write */
    }
    if (len > sizeof probe || read_range(ft, addr, probe, len) != 0)
        return PYF_EFAULT;
    fake_write(ft, addr, src, len);
    ft->cnt.writes++;
    return PYF_OK;
}

pyf_reader fake_reader(fake_target *ft, int with_readv)
{
    pyf_reader r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.read = fake_read_cb;
    r.readv = with_readv ? fake_readv_cb : NULL;
    r.write = ft->writable ? fake_write_cb : NULL;
    r.arg = ft;
    return r;
}

void fake_add_fault(fake_target *ft, uint64_t addr, uint64_t len, int code)
{
    GROW(ft->faults, ft->nfaults, ft->capfaults);
    ft->faults[ft->nfaults].addr = addr;
    ft->faults[ft->nfaults].len = len;
    ft->faults[ft->nfaults].code = code;
    ft->nfaults++;
}

void fake_clear_faults(fake_target *ft)
{
    ft->nfaults = 0;
}

void fake_fail_nth(fake_target *ft, uint64_t n, int code, int sticky)
{
    ft->fail_at = n ? ft->cnt.calls + n : 0;
    ft->fail_code = code;
    ft->fail_sticky = sticky;
}

void fake_short_reads_over(fake_target *ft, size_t max)
{
    ft->short_over = max;
}

void fake_on_read(fake_target *ft, uint64_t addr, void (*fn)(fake_target *, void *), void *arg)
{
    ft->watch_addr = addr;
    ft->watch_within = 0;
    ft->watch_left = 1;
    ft->watch_fn = fn;
    ft->watch_arg = arg;
}

void fake_on_read_within(fake_target *ft, uint64_t addr, unsigned nth,
                         void (*fn)(fake_target *, void *), void *arg)
{
    fake_on_read(ft, addr, fn, arg);
    ft->watch_within = 1;
    ft->watch_left = nth;
}

void fake_on_write(fake_target *ft, uint64_t addr, void (*fn)(fake_target *, void *), void *arg)
{
    ft->write_watch_addr = addr;
    ft->write_watch_fn = fn;
    ft->write_watch_arg = arg;
}

fake_counters fake_get_counters(const fake_target *ft)
{
    return ft->cnt;
}

void fake_reset_counters(fake_target *ft)
{
    uint64_t pending = ft->fail_at ? ft->fail_at - ft->cnt.calls : 0;
    memset(&ft->cnt, 0, sizeof ft->cnt);
    if (ft->fail_at)
        ft->fail_at = pending;
}

pyf_target *fake_open(fake_target *ft, const pyf_options *opts, int with_readv)
{
    pyf_reader r = fake_reader(ft, with_readv);
    pyf_target *t = NULL;
    char err[512] = "";
    int rc = fake_open_detail(&r, fake_runtime_addr(ft), opts, &t, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "fake_open(3.%d): %s (%d): %s\n", ft->minor,
                pyf_error_name(rc), rc, err);
        return NULL;
    }
    return t;
}

int fake_open_detail(const pyf_reader *r, uint64_t runtime_addr, const pyf_options *opts,
                     pyf_target **out, char *err, size_t errlen)
{
    pyf_failure f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    int rc = pyf_target_open(r, runtime_addr, opts, out, err ? &f : NULL);
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", f.detail);
    if (err != NULL && f.code != rc)
        CHECK_MSG(f.code == rc, "failure code %d, returned %d", f.code, rc);
    return rc;
}

const char *fake_thread_detail(const pyf_thread *th)
{
    return th->failure ? th->failure->detail : "";
}

const char *fake_last_detail(const pyf_target *t)
{
    static pyf_failure f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    if (pyf_target_failure(t, &f) != PYF_OK)
        return "(pyf_target_failure failed)";
    return f.detail;
}
