/*
 * fault_sweeps.c - fault injection over one image (fault_sweeps.h): fail
 * the N-th reader call for every N of a clean open and snapshot (one-off
 * and sticky failures, several error codes, with and without readv), short
 * reads, then random corruption of the image.  Every outcome must be a
 * defined error or a consistent (possibly partial) snapshot; never a crash
 * (the suite runs under ASan/UBSan), never a hang, never a result that
 * differs from the clean one without showing an error, and a failed read
 * must not leave wrong data in the caches.  Used by test_faults (default
 * builds) and test_free_threaded (free-threaded ones).
 */
#include "fault_sweeps.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

/* ---- canonical text of a snapshot ----------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int w = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (w < 0)
            abort();
        if (b->p && b->n + (size_t)w < b->cap) {
            b->n += (size_t)w;
            return;
        }
        b->cap = (b->cap + (size_t)w + 1) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            abort();
    }
}

static char *snap_text(const pyf_snapshot *s)
{
    sbuf b = {NULL, 0, 0};
    sb_printf(&b, "interps %u threads %u frames %u\n", s->ninterps, s->nthreads, s->nframes);
    for (uint32_t i = 0; i < s->ninterps; i++)
        sb_printf(&b, "I %lld %llx %u %u\n", (long long)s->interps[i].id,
                  (unsigned long long)s->interps[i].addr, s->interps[i].first_thread,
                  s->interps[i].nthreads);
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const pyf_thread *t = &s->threads[i];
        sb_printf(&b, "T %llx %llx %llu %u %x %d %u\n", (unsigned long long)t->tstate_addr,
                  (unsigned long long)t->thread_id, (unsigned long long)t->native_thread_id,
                  t->interp_index, t->flags & ~PYF_THREAD_SAME_FRAMES, /* history */
                  t->error, t->nframes);
        for (uint32_t k = 0; k < t->nframes; k++) {
            const pyf_frame *f = &s->frames[t->first_frame + k];
            const pyf_frame_info *fi = &f->info;
            sb_printf(&b, "  F %llx %llx %s|%s %d %d %d %d %x\n",
                      (unsigned long long)f->frame_addr, (unsigned long long)f->code_addr,
                      fi->function, fi->filename, fi->line, fi->end_line, fi->column,
                      fi->end_column, fi->flags);
        }
    }
    return b.p;
}

/* Whether a snapshot shows that something went wrong. */
static int has_marks(const pyf_snapshot *s)
{
    for (uint32_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].error != 0 || !(s->threads[i].flags & PYF_THREAD_COMPLETE))
            return 1;
    for (uint32_t i = 0; i < s->nframes; i++) {
        const pyf_frame *f = &s->frames[i];
        if (f->info.flags & (PYF_FRAME_CODE_UNREADABLE | PYF_FRAME_NO_LOCATION |
                             PYF_FRAME_NAME_TRUNCATED))
            return 1;
        if (strcmp(f->info.function, "???") == 0 || strcmp(f->info.filename, "???") == 0)
            return 1;
    }
    return 0;
}

static const char *first_diff_line(const char *want, const char *got, char *out,
                                   size_t len)
{
    size_t i = 0;
    while (want[i] && want[i] == got[i])
        i++;
    while (i > 0 && got[i - 1] != '\n')
        i--;
    const char *g = got + i, *w = want + i;
    int gl = (int)(strchr(g, '\n') ? strchr(g, '\n') - g : (ptrdiff_t)strlen(g));
    int wl = (int)(strchr(w, '\n') ? strchr(w, '\n') - w : (ptrdiff_t)strlen(w));
    snprintf(out, len, "got '%.*s' expected '%.*s'", gl > 150 ? 150 : gl, g,
             wl > 150 ? 150 : wl, w);
    return out;
}

/* ---- sweeps --------------------------------------------------------------- */

static const char *code_label(int code)
{
    return pyf_error_name(code);
}

void sweep_snapshot(const sweep_image *im, int with_readv, int code, int sticky, int cache)
{
    char name[96];
    snprintf(name, sizeof name, "%s fail every read of a snapshot: %s%s%s%s", im->label,
             code_label(code), sticky ? " sticky" : "", with_readv ? " readv" : "",
             cache ? " frame cache" : "");
    check_begin(name);
    fake_target *ft = im->build(im);
    fake_set_writable(ft, cache);
    pyf_target *t = fake_open(ft, NULL, with_readv);
    CHECK(t != NULL);
    if (!t) {
        fake_free(ft);
        return;
    }
    if (cache) { /* every snapshot below starts with a miss that stores */
        uint32_t mode = 0;
        CHECK(pyf_target_set_cache(t, PYF_CACHE_ON, &mode) == PYF_OK && mode == PYF_CACHE_ON);
    }
    pyf_snapshot *s = NULL;
    fake_reset_counters(ft);
    int rc = pyf_snapshot_take(t, NULL, &s);
    CHECK_EQ_INT(rc, 0);
    uint64_t total = fake_get_counters(ft).calls;
    if (rc != 0) {
        pyf_target_close(t);
        fake_free(ft);
        return;
    }
    CHECK_MSG(!has_marks(s), "the clean image already shows errors");
    char *base = snap_text(s);
    pyf_snapshot_free(s);
    CHECK(total > 5);

    int partial = 0, failed = 0, silent = 0, poisoned = 0;
    for (uint64_t n = 1; n <= total + 1; n++) {
        pyf_target_flush(t);
        fake_fail_nth(ft, n, code, sticky);
        s = NULL;
        fake_watchdog(20, name);
        rc = pyf_snapshot_take(t, NULL, &s);
        fake_watchdog(0, NULL);
        fake_fail_nth(ft, 0, 0, 0);
        if (rc != 0) {
            failed++;
            CHECK_MSG(rc < 0 && fake_known_error(rc), "N=%llu: rc %d",
                      (unsigned long long)n, rc);
            CHECK_MSG(strlen(fake_last_detail(t)) > 0, "N=%llu: no last error",
                      (unsigned long long)n);
        } else {
            const char *why = fake_check_snapshot(s);
            CHECK_MSG(why == NULL, "N=%llu: %s", (unsigned long long)n, why);
            char *txt = snap_text(s);
            if (strcmp(txt, base) != 0) {
                partial++;
                if (!has_marks(s)) {
                    char d[400];
                    silent++;
                    CHECK_MSG(0, "N=%llu (%s): snapshot differs without any error shown: %s",
                              (unsigned long long)n, fake_last_detail(t),
                              first_diff_line(base, txt, d, sizeof d));
                }
            }
            free(txt);
            pyf_snapshot_free(s);
        }
        /* the next clean snapshot, caches kept, equals the clean result */
        s = NULL;
        rc = pyf_snapshot_take(t, NULL, &s);
        CHECK_MSG(rc == 0, "N=%llu: clean retake failed: %s", (unsigned long long)n,
                  pyf_error_name(rc));
        if (rc == 0) {
            char *txt = snap_text(s);
            if (strcmp(txt, base) != 0) {
                char d[400];
                poisoned++;
                if (poisoned <= 3)
                    CHECK_MSG(0, "N=%llu: a failed read left wrong data in a cache: %s",
                              (unsigned long long)n, first_diff_line(base, txt, d, sizeof d));
            }
            free(txt);
            pyf_snapshot_free(s);
        }
    }
    CHECK_MSG(poisoned == 0, "%d of %llu injected failures poisoned the caches", poisoned,
              (unsigned long long)total);
    fprintf(stderr, "   %llu reads: %d failed calls, %d partial results, %d silent, %d poisoned\n",
            (unsigned long long)total, failed, partial, silent, poisoned);
    /* failures must be visible: either the call fails or the result shows it */
    CHECK(failed + partial > 0);
    free(base);
    pyf_target_close(t);
    fake_free(ft);
}

void sweep_open(const sweep_image *im)
{
    char name[64];
    snprintf(name, sizeof name, "%s fail every read of open", im->label);
    check_begin(name);
    fake_target *ft = im->build(im);
    fake_reset_counters(ft);
    pyf_target *t = fake_open(ft, NULL, 0);
    CHECK(t != NULL);
    pyf_target_close(t);
    uint64_t total = fake_get_counters(ft).calls;
    CHECK(total >= 1);
    for (uint64_t n = 1; n <= total; n++) {
        for (int sticky = 0; sticky < 2; sticky++) {
            pyf_reader r = fake_reader(ft, 0);
            fake_fail_nth(ft, n, PYF_EFAULT, sticky);
            t = (pyf_target *)(uintptr_t)1;
            char err[256] = "";
            int rc = fake_open_detail(&r, fake_runtime_addr(ft), NULL, &t, err, sizeof err);
            fake_fail_nth(ft, 0, 0, 0);
            if (rc != 0) {
                CHECK_MSG(rc < 0 && fake_known_error(rc), "N=%llu rc %d", (unsigned long long)n,
                          rc);
                CHECK(t == NULL);
                CHECK(err[0] != '\0');
            } else {
                pyf_target_close(t);
            }
        }
    }
    fake_free(ft);
}

void short_reads(const sweep_image *im)
{
    char name[64];
    snprintf(name, sizeof name, "%s short reads", im->label);
    check_begin(name);
    fake_target *ft = im->build(im);
    pyf_target *t = fake_open(ft, NULL, 0);
    static const size_t limits[] = {8, 16, 64, 100, 512, 4096, 16384};
    for (size_t i = 0; t && i < sizeof limits / sizeof limits[0]; i++) {
        pyf_target_flush(t);
        fake_short_reads_over(ft, limits[i]);
        pyf_snapshot *s = NULL;
        fake_watchdog(20, name);
        int rc = pyf_snapshot_take(t, NULL, &s);
        fake_watchdog(0, NULL);
        fake_short_reads_over(ft, 0);
        if (rc == 0) {
            const char *why = fake_check_snapshot(s);
            CHECK_MSG(why == NULL, "limit %zu: %s", limits[i], why);
            pyf_snapshot_free(s);
        } else {
            CHECK_MSG(rc < 0 && fake_known_error(rc), "limit %zu: rc %d", limits[i], rc);
        }
    }
    pyf_target_close(t);
    fake_free(ft);
}

/* ---- random corruption ---------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

static void corrupt_once(fake_target *ft)
{
    size_t nobj = fake_nobjects(ft);
    int k = 1 + (int)(rnd() % 6);
    for (int i = 0; i < k; i++) {
        uint64_t addr, other;
        size_t size, osize;
        fake_object(ft, (size_t)(rnd() % nobj), &addr, &size);
        if (size == 0)
            continue;
        uint64_t at = addr + rnd() % size;
        switch (rnd() % 6) {
        case 0:
        case 1: /* a random byte */
            fake_w8(ft, at, (uint8_t)rnd());
            break;
        case 2: { /* a pointer-sized slot: a pointer to another object */
            at &= ~7ull;
            if (at + 8 > addr + size)
                break;
            fake_object(ft, (size_t)(rnd() % nobj), &other, &osize);
            fake_w64(ft, at, other + (rnd() % 4 == 0 ? rnd() % (osize + 1) : 0) + rnd() % 4);
            break;
        }
        case 3: /* a pointer-sized slot: random value or special */
            at &= ~7ull;
            if (at + 8 > addr + size)
                break;
            {
                static const uint64_t specials[] = {0, 1, 3, UINT64_MAX, 0x8000000000000000ull,
                                                    0x7fffffffffffffffull, 4096, 1ull << 40};
                uint64_t v = rnd() % 2 ? specials[rnd() % 8] : rnd();
                fake_w64(ft, at, v);
            }
            break;
        case 4: /* flip one bit */
            {
                uint8_t b;
                fake_read_raw(ft, at, &b, 1);
                fake_w8(ft, at, (uint8_t)(b ^ (1u << (rnd() % 8))));
            }
            break;
        default: /* a 32-bit field */
            at &= ~3ull;
            if (at + 4 > addr + size)
                break;
            fake_w32(ft, at, (uint32_t)rnd());
            break;
        }
    }
}

void random_corruption(const sweep_image *im, unsigned iterations, double max_seconds)
{
    char name[64];
    snprintf(name, sizeof name, "%s random corruption", im->label);
    check_begin(name);
    fake_target *ft = im->build(im);
    fake_save(ft);
    rng_state = 0x9E3779B97F4A7C15ull ^ (uint64_t)im->minor ^ (uint64_t)im->seed << 8;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned it, ok = 0, errs = 0, open_errs = 0;
    for (it = 0; it < iterations; it++) {
        fake_restore(ft);
        /* with the 3.15 frame cache, one clean snapshot first stores the
         * stack; the corruption then meets the cache's paths */
        int cache = im->minor == 15 && it % 3 == 1;
        fake_set_writable(ft, cache);
        pyf_target *t = NULL;
        if (cache) {
            pyf_reader r = fake_reader(ft, 1);
            char err[256];
            if (fake_open_detail(&r, fake_runtime_addr(ft), NULL, &t, err, sizeof err) == 0) {
                pyf_snapshot *s = NULL;
                pyf_target_set_cache(t, PYF_CACHE_ON, NULL);
                if (pyf_snapshot_take(t, NULL, &s) == 0)
                    pyf_snapshot_free(s);
            }
        }
        corrupt_once(ft);
        char what[96];
        snprintf(what, sizeof what, "corruption iteration %u", it);
        fake_watchdog(10, what);
        pyf_reader r = fake_reader(ft, it & 1);
        char err[256];
        int rc = t != NULL ? 0
                           : fake_open_detail(&r, fake_runtime_addr(ft), NULL, &t, err, sizeof err);
        if (rc != 0) {
            CHECK_MSG(rc < 0 && fake_known_error(rc), "iteration %u: open rc %d", it, rc);
            open_errs++;
        } else {
            for (int rep = 0; rep < 2; rep++) { /* cold, then warm caches */
                pyf_snapshot *s = NULL;
                pyf_snapshot_request rq;
                memset(&rq, 0, sizeof rq);
                rq.struct_size = sizeof rq;
                if (it % 7 == 3) {
                    rq.flags = PYF_SNAP_ONE_THREAD;
                    rq.native_tid = im->one_tid;
                }
                rc = pyf_snapshot_take(t, &rq, &s);
                if (rc == 0) {
                    const char *why = fake_check_snapshot(s);
                    CHECK_MSG(why == NULL, "iteration %u: %s", it, why);
                    pyf_snapshot_free(s);
                    ok++;
                } else {
                    CHECK_MSG(rc < 0 && fake_known_error(rc), "iteration %u: rc %d", it, rc);
                    errs++;
                }
            }
            pyf_target_close(t);
        }
        fake_watchdog(0, NULL);
        clock_gettime(CLOCK_MONOTONIC, &now);
        double el = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        if (el > max_seconds)
            break;
        if (check_failures > 20)
            break;
    }
    fprintf(stderr, "   %u iterations: %u snapshots, %u failed snapshots, %u failed opens\n", it,
            ok, errs, open_errs);
    CHECK(it >= 200 || check_failures > 0);
    fake_free(ft);
}

void sweep_all(const sweep_image *im, unsigned iterations, double max_seconds)
{
    sweep_open(im);
    sweep_snapshot(im, 0, PYF_EFAULT, 0, 0);
    sweep_snapshot(im, 0, PYF_EFAULT, 1, 0);
    sweep_snapshot(im, 0, PYF_EPERM, 0, 0);
    sweep_snapshot(im, 0, PYF_EIO, 0, 0);
    sweep_snapshot(im, 1, PYF_EFAULT, 0, 0);
    if (im->minor == 15) {
        sweep_snapshot(im, 0, PYF_EFAULT, 0, 1);
        sweep_snapshot(im, 1, PYF_EFAULT, 1, 1);
    }
    short_reads(im);
    if (iterations > 0)
        random_corruption(im, iterations, max_seconds);
}
