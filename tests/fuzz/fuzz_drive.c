/*
 * fuzz_drive.c - one fuzz input: build an image, then a bounded sequence of
 * public pyf_ calls on it, checking what they return.
 *
 *   probe, open (options from the input), python info, the asyncio table,
 *   the cache mode, then 1-4 rounds of: CPython's own changes (cache
 *   profile), mutations, reader failures (the n-th call, reads past a
 *   length), a snapshot (threads, one thread, tasks, entries,
 *   depth and keep_frames from the input), every string of it read, the
 *   frame table, tasks and entries checked; stats, a flush now and then, a
 *   runtime scan; one snapshot is kept past pyf_target_close and read
 *   after it.  Everything is freed: LeakSanitizer sees what the library
 *   leaks.
 *
 * Invariants, beyond "no crash" (a violation aborts with a message, which
 * libFuzzer reports as a crash with the input):
 *   - every pyf_ call returns 0 or a code of the error list;
 *   - failures: code equal to the returned one, what/reader_message/detail
 *     NUL-terminated inside their arrays, a detail when the code is not 0;
 *   - snapshots pass fake_check_snapshot (index ranges, UTF-8, the frame
 *     table agrees with the frames), tasks and entries stay inside the
 *     snapshot;
 *   - a decoded string (names, file names, task names) is at most
 *     max_string bytes, or, for the library's own placeholders ("???",
 *     "Task-N", "<object at 0x...>"), under 64;
 *   - 3.15 cache profile: while only CPython-like changes were made, a
 *     cached snapshot equals an uncached one of the same moment.
 */
#include "fuzz_drive.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_image.h"

void fz_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz invariant violated: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void fz_check_rc(int rc, const char *call)
{
    if (!fake_known_error(rc))
        fz_die("%s returned %d, not a PYF_E* code", call, rc);
}

static volatile uint32_t g_sink;

/* Read every byte of a C string of at most cap bytes (NUL included):
 * ASan sees any byte that is not the library's. */
size_t fz_touch(const char *s, size_t cap, const char *what)
{
    if (s == NULL)
        fz_die("%s is NULL", what);
    const char *nul = memchr(s, '\0', cap);
    if (nul == NULL)
        fz_die("%s is not NUL-terminated within %zu bytes", what, cap);
    uint32_t h = 0;
    for (const char *p = s; p < nul; p++)
        h = h * 31u + (uint8_t)*p;
    g_sink += h;
    return (size_t)(nul - s);
}

void fz_check_failure(const pyf_failure *f, int rc, const char *what)
{
    fz_touch(f->what, sizeof f->what, "failure.what");
    fz_touch(f->reader_message, sizeof f->reader_message, "failure.reader_message");
    size_t n = fz_touch(f->detail, sizeof f->detail, "failure.detail");
    fz_check_rc(f->code, what);
    if (f->code != rc)
        fz_die("%s: failure code %d, returned %d", what, f->code, rc);
    if (rc != 0 && n == 0)
        fz_die("%s: failed (%d) without a detail", what, rc);
}

static void target_failure(const pyf_target *t, int rc, const char *what)
{
    pyf_failure f;
    memset(&f, 0xA5, sizeof f);
    f.struct_size = sizeof f;
    int frc = pyf_target_failure(t, &f);
    if (frc != 0)
        fz_die("pyf_target_failure: %d", frc);
    fz_check_failure(&f, rc, what);
}

/* A decoded string: valid UTF-8 within its bound. */
static void check_str(const char *s, uint32_t max_string, const char *what)
{
    size_t n = fz_touch(s, (size_t)max_string + 64 + 1, what);
    if (n > max_string && n >= 64)
        fz_die("%s: %zu bytes, max_string %u", what, n, max_string);
    if (!fake_valid_utf8(s))
        fz_die("%s: not valid UTF-8", what);
}

/* Everything a snapshot returns, read and checked. */
static void read_snapshot(const pyf_snapshot *s, uint32_t max_string, int tasks, int entries)
{
    const char *why = fake_check_snapshot(s);
    if (why != NULL) {
        fake_dump_snapshot(s, stderr);
        fz_die("inconsistent snapshot: %s", why);
    }
    for (uint32_t i = 0; i < s->nframes; i++) {
        check_str(s->frames[i].info.function, max_string, "frame function");
        check_str(s->frames[i].info.filename, max_string, "frame filename");
    }
    for (uint32_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].failure != NULL)
            fz_check_failure(s->threads[i].failure, s->threads[i].error, "thread failure");

    pyf_frame_table tab;
    memset(&tab, 0, sizeof tab);
    tab.struct_size = sizeof tab;
    fz_check_rc(pyf_snapshot_table(s, &tab), "pyf_snapshot_table");
    for (uint32_t i = 0; i < tab.nrecords; i++) {
        check_str(tab.records[i].info.function, max_string, "record function");
        check_str(tab.records[i].info.filename, max_string, "record filename");
    }
    for (uint32_t i = 0; i < tab.nkeys; i++)
        if (tab.keys[i].record >= tab.nrecords)
            fz_die("key %u: record %u of %u", i, tab.keys[i].record, tab.nrecords);

    const uint64_t *ent = NULL;
    int rc = pyf_snapshot_entries(s, &ent);
    fz_check_rc(rc, "pyf_snapshot_entries");
    if (entries != (rc == 0) || (rc == 0 && s->nframes > 0 && ent == NULL))
        fz_die("pyf_snapshot_entries: %d for a snapshot %s entries", rc,
               entries ? "with" : "without");
    for (uint32_t i = 0; rc == 0 && i < s->nframes; i++)
        g_sink += (uint32_t)ent[i];

    pyf_task_list tl;
    memset(&tl, 0, sizeof tl);
    tl.struct_size = sizeof tl;
    fz_check_rc(pyf_snapshot_tasks(s, &tl), "pyf_snapshot_tasks");
    fz_check_rc(tl.status, "task list status");
    fz_check_rc(tl.list_error, "task list error");
    if (!tasks && (tl.status != PYF_ENOTSUP || tl.ntasks != 0))
        fz_die("tasks without PYF_SNAP_TASKS: status %d, %u tasks", tl.status, tl.ntasks);
    if ((tl.status == 0 && tl.list_error == 0) != (tl.failure == NULL))
        fz_die("task list failure present exactly when status or list_error");
    if (tl.failure != NULL) {
        fz_touch(tl.failure->detail, sizeof tl.failure->detail, "task list detail");
        if (tl.failure->detail[0] == '\0')
            fz_die("task list failure without a detail");
    }
    if (tl.ntasks > 0 && tl.task_size != sizeof(pyf_task))
        fz_die("task_size %u", tl.task_size);
    uint32_t threads_end = 0;
    for (uint32_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].first_frame + s->threads[i].nframes > threads_end)
            threads_end = s->threads[i].first_frame + s->threads[i].nframes;
    for (uint32_t i = 0; i < tl.ntasks; i++) {
        const pyf_task *k = &tl.tasks[i];
        check_str(k->name, max_string, "task name");
        fz_check_rc(k->error, "task error");
        if (k->state > PYF_TASK_STATE_UNKNOWN || (k->flags & ~7u) != 0)
            fz_die("task %u: state %u flags 0x%x", i, k->state, k->flags);
        if (k->first_frame < threads_end || (uint64_t)k->first_frame + k->nframes > s->nframes)
            fz_die("task %u: frames [%u, +%u) of %u, threads end at %u", i, k->first_frame,
                   k->nframes, s->nframes, threads_end);
        if ((uint64_t)k->first_awaiter + k->nawaiters > tl.nawaited_by)
            fz_die("task %u: awaiters [%u, +%u) of %u", i, k->first_awaiter, k->nawaiters,
                   tl.nawaited_by);
        if ((k->error == 0) != (k->failure == NULL))
            fz_die("task %u: failure present exactly when error", i);
        if (k->failure != NULL)
            fz_check_failure(k->failure, k->error, "task failure");
    }
    for (uint32_t i = 0; i < tl.nawaited_by; i++)
        g_sink += (uint32_t)tl.awaited_by[i];
}

/* The thread facts (asked: PYF_SNAP_THREAD_FACTS), read and checked. */
static void read_facts(const pyf_snapshot *s, uint32_t max_string, int asked)
{
    const pyf_thread_facts *f = NULL;
    int rc = pyf_snapshot_thread_facts(s, &f);
    fz_check_rc(rc, "pyf_snapshot_thread_facts");
    if (asked != (rc == 0) || (rc == 0) != (f != NULL))
        fz_die("pyf_snapshot_thread_facts: %d for a snapshot %s facts", rc,
               asked ? "with" : "without");
    const pyf_values *trees = NULL;
    int trc = pyf_snapshot_fact_values(s, &trees);
    if ((trc == 0) != (rc == 0) || (trc == 0) != (trees != NULL))
        fz_die("pyf_snapshot_fact_values: %d beside the facts' %d", trc, rc);
    for (uint32_t i = 0; trc == 0 && i < trees->nvalues; i++) {
        const pyf_value *v = &trees->values[i];
        if (v->type_name == NULL || (v->data == NULL && v->data_size != 0) ||
            (v->nchildren != 0 &&
             (v->first_child <= i || (uint64_t)v->first_child + v->nchildren > trees->nvalues)))
            fz_die("fact value %u: a malformed node", i);
    }
    for (uint32_t i = 0; rc == 0 && i < s->nthreads; i++) {
        if ((f[i].flags & ~0x1fffu) != 0 || (f[i].name != NULL) != !!(f[i].flags & PYF_FACT_NAME))
            fz_die("thread %u: facts flags 0x%x, name %p", i, f[i].flags, (void *)f[i].name);
        if (f[i].name != NULL)
            check_str(f[i].name, 1024, "thread name");
        if (f[i].exc_type != NULL)
            check_str(f[i].exc_type, 1024, "exception type");
        if (f[i].exc_message != NULL || (f[i].exc_value != PYF_NO_VALUE &&
                                         (trees == NULL || f[i].exc_value >= trees->nvalues)))
            fz_die("thread %u: exception message %p, tree %u", i, (void *)f[i].exc_message,
                   f[i].exc_value);
        if (f[i].exc_file != NULL)
            check_str(f[i].exc_file, max_string, "exception file");
    }
}

/* The cached snapshot equals the uncached one (frames of every thread). */
static void same_frames(const pyf_snapshot *a, const pyf_snapshot *b)
{
    if (a->nthreads != b->nthreads || a->nframes != b->nframes) {
        fake_dump_snapshot(a, stderr);
        fake_dump_snapshot(b, stderr);
        fz_die("cached snapshot: %u threads %u frames, uncached %u %u", a->nthreads,
               a->nframes, b->nthreads, b->nframes);
    }
    for (uint32_t i = 0; i < a->nframes; i++) {
        const pyf_frame *x = &a->frames[i], *y = &b->frames[i];
        if (x->frame_addr != y->frame_addr || x->code_addr != y->code_addr ||
            x->info.line != y->info.line || x->info.flags != y->info.flags ||
            strcmp(x->info.function, y->info.function) ||
            strcmp(x->info.filename, y->info.filename)) {
            fake_dump_snapshot(a, stderr);
            fake_dump_snapshot(b, stderr);
            fz_die("cached frame %u differs from the uncached one", i);
        }
    }
}

static pyf_target *open_target(const pyf_reader *r, uint64_t addr, const pyf_options *o)
{
    pyf_target *t = NULL;
    pyf_failure f;
    memset(&f, 0x5A, sizeof f);
    f.struct_size = sizeof f;
    int rc = pyf_target_open(r, addr, o, &t, &f);
    fz_check_rc(rc, "pyf_target_open");
    fz_check_failure(&f, rc, "pyf_target_open");
    if ((rc == 0) != (t != NULL))
        fz_die("pyf_target_open: %d with target %p", rc, (void *)t);
    return t;
}

/* A scan of the image's runtime region for the cookie. */
static void scan(const pyf_reader *r, uint64_t rt)
{
    pyf_mapping m;
    memset(&m, 0, sizeof m);
    m.start = rt & ~4095ull;
    m.end = m.start + 0x10000;
    m.flags = PYF_MAP_READ | PYF_MAP_WRITE;
    pyf_locate_request req;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.methods = PYF_LOCATE_SCAN;
    req.maps = &m;
    req.nmaps = 1;
    req.scan_budget = 1u << 20;
    pyf_runtime_location loc;
    memset(&loc, 0x33, sizeof loc);
    loc.struct_size = sizeof loc;
    pyf_failure f;
    memset(&f, 0x33, sizeof f);
    f.struct_size = sizeof f;
    int rc = pyf_runtime_locate(r, &req, &loc, &f);
    fz_check_rc(rc, "pyf_runtime_locate");
    fz_touch(loc.how, sizeof loc.how, "pyf_runtime_location.how");
    fz_touch(f.detail, sizeof f.detail, "pyf_runtime_locate failure detail");
    if (rc == 0 && loc.addr == 0)
        fz_die("pyf_runtime_locate: found nothing at 0");
}

/* The n-th reader call of the snapshot fails (once or from then on) with
 * one of a reader's codes, or reads longer than a bound fail (a reader that
 * cannot read that much at once).  Not a change CPython makes: the cache
 * profile's cached = uncached check is off from here. */
static void reader_faults(fz_image *im, fz_in *in)
{
    static const int codes[] = {PYF_EFAULT, PYF_EPERM, PYF_EIO, PYF_ENOPROC};
    uint8_t b = fz_u8(in);
    if (b & 1)
        fake_fail_nth(im->ft, 1 + fz_u8(in) % 48u, codes[(b >> 1) & 3u], (b >> 3) & 1);
    if (b & 0x10)
        fake_short_reads_over(im->ft, (size_t)8 << ((b >> 5) & 7u));
    if (b & 0x11)
        im->corrupted = 1;
}

void fz_run(const uint8_t *data, size_t size, int profile)
{
    fz_in in = {data, size};
    fz_image im;
    fz_build(&im, profile, &in);

    uint8_t opt = fz_u8(&in), flow = fz_u8(&in);
    unsigned rounds = 1 + (flow & 3u);
    pyf_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_string = (opt & 1) ? 1 + fz_u8(&in) % 40u : 0;
    o.max_depth = (opt & 2) ? 1 + fz_u8(&in) % 64u : 0;
    o.max_threads = (opt & 4) ? 1 + fz_u8(&in) % 4u : 0;
    uint32_t max_string = o.max_string ? o.max_string : PYF_DEFAULT_MAX_STRING;
    if (profile == FZ_CACHE)
        fake_set_writable(im.ft, !(opt & 8));

    /* mutations made before the target is opened: the offsets table is
     * read once, at open */
    fz_mutate(&im, &in, fz_u8(&in) % 4u);

    pyf_reader r = fake_reader(im.ft, (opt >> 4) & 1);
    uint64_t rt = fake_runtime_addr(im.ft);
    pyf_python_info info;
    fz_check_rc(pyf_runtime_probe(&r, rt, &info, NULL), "pyf_runtime_probe");
    if (opt & 0x20)
        scan(&r, rt);

    pyf_target *t = open_target(&r, rt, &o);
    pyf_target *plain = NULL;
    if (t == NULL) {
        fz_image_free(&im);
        return;
    }
    fz_check_rc(pyf_target_python(t, &info), "pyf_target_python");
    if (im.asyncio_table != 0) {
        int rc = pyf_target_set_asyncio(t, im.asyncio_table);
        fz_check_rc(rc, "pyf_target_set_asyncio");
        target_failure(t, rc, "pyf_target_set_asyncio");
    }
    uint32_t mode = 0;
    if (profile == FZ_CACHE) {
        uint32_t want = (opt & 0x40) ? PYF_CACHE_READ_ONLY : PYF_CACHE_ON;
        fz_check_rc(pyf_target_set_cache(t, want, &mode), "pyf_target_set_cache");
        plain = open_target(&r, rt, &o);
    }

    pyf_snapshot *kept = NULL;
    int kept_tasks = 0, kept_entries = 0;
    for (unsigned round = 0; round < rounds; round++) {
        uint8_t b = fz_u8(&in);
        if (profile == FZ_CACHE)
            for (unsigned k = 0; k < 1 + (b & 1u); k++)
                fz_evolve(&im, &in);
        fz_mutate(&im, &in, (b >> 1) % 4u);
        if (b & 0x08) {
            pyf_target_flush(t);
        }
        pyf_snapshot_request req;
        memset(&req, 0, sizeof req);
        req.struct_size = sizeof req;
        uint8_t rf = fz_u8(&in);
        req.flags = rf & 7u;
        if (profile == FZ_TASKS)
            req.flags |= PYF_SNAP_TASKS;
        if (b & 0x40)
            req.flags |= PYF_SNAP_THREAD_FACTS;
        if (req.flags & PYF_SNAP_ONE_THREAD)
            req.native_tid = im.nthreads ? im.native_tids[(rf >> 3) % im.nthreads] : 1;
        if (rf & 0x40)
            req.max_depth = 1 + fz_u8(&in) % 32u;
        if (rf & 0x80)
            req.keep_frames = 1 + fz_u8(&in) % 8u;
        if (profile == FZ_CACHE && !im.corrupted) /* the differential check: whole walks */
            req.flags &= ~(uint32_t)PYF_SNAP_ONE_THREAD, req.keep_frames = 0, req.max_depth = 0;

        if (opt & 0x80) /* the reader fails now and then */
            reader_faults(&im, &in);
        pyf_snapshot *s = NULL;
        int rc = pyf_snapshot_take(t, &req, &s);
        fake_fail_nth(im.ft, 0, 0, 0);
        fake_short_reads_over(im.ft, 0);
        fz_check_rc(rc, "pyf_snapshot_take");
        target_failure(t, rc, "pyf_snapshot_take");
        if ((rc == 0) != (s != NULL))
            fz_die("pyf_snapshot_take: %d with snapshot %p", rc, (void *)s);
        if (s == NULL)
            continue;
        int tasks = (req.flags & PYF_SNAP_TASKS) != 0, entries = (req.flags & PYF_SNAP_ENTRIES) != 0;
        read_snapshot(s, max_string, tasks, entries);
        read_facts(s, max_string, (req.flags & PYF_SNAP_THREAD_FACTS) != 0);
        if (getenv("PYF_FUZZ_DUMP") != NULL) { /* what an input builds, for a person */
            pyf_task_list tl = {.struct_size = sizeof tl};
            pyf_snapshot_tasks(s, &tl);
            fprintf(stderr, "round %u (3.%d, %zu threads, cache %u, %s): %u tasks, status %d\n",
                    round, im.minor, im.nthreads, mode, im.corrupted ? "mutated" : "as built",
                    tl.ntasks, tl.status);
            fake_dump_snapshot(s, stderr);
        }
        if (plain != NULL) {
            pyf_snapshot *u = NULL;
            rc = pyf_snapshot_take(plain, &req, &u);
            fz_check_rc(rc, "pyf_snapshot_take (uncached)");
            if (u != NULL) {
                read_snapshot(u, max_string, tasks, entries);
                if (!im.corrupted && rc == 0)
                    same_frames(s, u);
                pyf_snapshot_free(u);
            }
        }
        pyf_stats st;
        pyf_target_stats(t, &st);
        g_sink += (uint32_t)st.frames;
        if (b & 0x10) {
            pyf_snapshot_free(kept);
            kept = s, kept_tasks = tasks, kept_entries = entries;
        } else {
            pyf_snapshot_free(s);
        }
        if (b & 0x20)
            pyf_target_reset_stats(t);
    }
    pyf_target_close(t);
    pyf_target_close(plain);
    if (kept != NULL) { /* valid after the target is gone */
        read_snapshot(kept, max_string, kept_tasks, kept_entries);
        pyf_snapshot_free(kept);
    }
    fz_image_free(&im);
}
