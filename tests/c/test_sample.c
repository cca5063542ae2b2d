/*
 * test_sample.c - pyf_sample_run on synthetic 3.13/3.14/3.15 images: a
 * batch counts each thread's stack by its frame keys (the keys of
 * pyf_snapshot_take for the same stack), every thread, the request's one
 * thread or the GIL's holder (a thread without a Python frame as the
 * empty stack), records each thread-sample's time, hands over the newest
 * snapshot of its table with its frames made, ends when an array would
 * overflow (a sample counted whole or not at all), refuses a sample that
 * fits no array, counts failed samples by code and ends at one that says
 * the process may be gone, and keeps to its schedule: waits drawn around
 * the interval, none past until.
 */
#define PYF_STATIC_API /* pyf_sample_run: the bundled binding's call */
#include "fake_target.h"

#include <string.h>
#include <time.h>

#define NL(a) (sizeof(a) / sizeof((a)[0]))
#define MS 1000000ull

static const fake_loc L_F[] = {{2, 10, 10, 0, 4}, {2, 11, 11, 0, 4}, {4, 12, 12, 0, 4}};

typedef struct scene {
    fake_target *ft;
    pyf_target *t;
    fake_thread *main, *worker;
    uint64_t top; /* the worker's top frame */
    uint64_t code;
} scene;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The main thread 3 frames deep, a worker 5 deep. */
static void build(scene *sc, int minor)
{
    sc->ft = fake_new(minor);
    sc->code = fake_code(sc->ft, "/app/s.py", "f", 10, L_F, NL(L_F));
    uint64_t interp = fake_add_interp(sc->ft, 0);
    sc->main = fake_add_thread(sc->ft, interp, 0x100, 100, 1);
    sc->worker = fake_add_thread(sc->ft, interp, 0x200, 200, 1);
    for (int i = 0; i < 3; i++)
        fake_push_frame(sc->main, sc->code, 1);
    for (int i = 0; i < 5; i++)
        sc->top = fake_push_frame(sc->worker, sc->code, 1);
    sc->t = fake_open(sc->ft, NULL, 1);
    REQUIRE(sc->t != NULL);
}

static void drop(scene *sc)
{
    pyf_target_close(sc->t);
    fake_free(sc->ft);
}

/* the main thread's (its native id is the process's) */
static const pyf_snapshot_request main_only = {
    .struct_size = sizeof main_only, .flags = PYF_SNAP_ONE_THREAD, .native_tid = 100};

typedef struct arrays {
    pyf_sample_stack stacks[64];
    uint32_t keys[4096];
    pyf_sample_time times[256];
} arrays;

static void batch_init(pyf_sample_batch *b, arrays *a, uint32_t flags)
{
    memset(b, 0, sizeof *b);
    b->flags = flags;
    b->stacks = a->stacks;
    b->stacks_cap = NL(a->stacks);
    b->keys = a->keys;
    b->keys_cap = NL(a->keys);
    b->times = a->times;
    b->times_cap = NL(a->times);
    b->until_ns = now_ns() + 60000 * MS;
    b->rng = 7;
}

static int run(pyf_target *t, pyf_sample_batch *b)
{
    fake_watchdog(60, "pyf_sample_run");
    int rc = pyf_sample_run(t, b);
    fake_watchdog(0, NULL);
    return rc;
}

static void free_tables(pyf_sample_batch *b)
{
    for (uint32_t i = 0; i < b->ntables; i++)
        pyf_snapshot_free(b->tables[i]);
    b->ntables = 0;
}

/* The stack of thread native in b, or NULL. */
static const pyf_sample_stack *stack_of(const pyf_sample_batch *b, uint64_t native)
{
    for (uint32_t i = 0; i < b->nstacks; i++)
        if (b->stacks[i].native_thread_id == native)
            return &b->stacks[i];
    return NULL;
}

static void counts_by_stack(int minor)
{
    check_begin(minor == 13 ? "3.13: every thread counted by its keys"
                : minor == 14 ? "3.14: every thread counted by its keys"
                              : "3.15: every thread counted by its keys");
    scene sc;
    build(&sc, minor);
    arrays a;
    pyf_sample_batch b;
    batch_init(&b, &a, PYF_SAMPLE_TIMES);
    b.max_samples = 10;
    CHECK_EQ_INT(run(sc.t, &b), 0);
    CHECK_EQ_INT(b.end, PYF_SAMPLE_END_DONE);
    CHECK_EQ_INT(b.samples, 10);
    CHECK_EQ_INT(b.failed, 0);
    CHECK_EQ_INT(b.nstacks, 2);
    CHECK_EQ_INT(b.ntimes, 20);
    CHECK_EQ_INT(b.ntables, 1);
    /* what a snapshot of the same target shows, key for key */
    pyf_snapshot *s = NULL;
    REQUIRE(pyf_snapshot_take(sc.t, NULL, &s) == 0);
    pyf_frame_table ft = {.struct_size = sizeof ft};
    REQUIRE(pyf_snapshot_table(s, &ft) == 0);
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const pyf_thread *th = &s->threads[i];
        const pyf_sample_stack *st = stack_of(&b, th->native_thread_id);
        REQUIRE(st != NULL);
        CHECK_EQ_INT(st->count, 10);
        CHECK(st->thread_id == th->thread_id && st->table_id == ft.table_id);
        CHECK_EQ_INT(st->nkeys, th->nframes);
        CHECK(memcmp(&a.keys[st->first_key], &ft.frame_keys[th->first_frame],
                     th->nframes * sizeof(uint32_t)) == 0);
    }
    CHECK_EQ_INT(stack_of(&b, 100)->nkeys, 3);
    pyf_snapshot_free(s);
    /* times in order, each naming a stack */
    for (uint32_t i = 0; i < b.ntimes; i++) {
        CHECK(b.times[i].stack < b.nstacks);
        if (i > 0)
            CHECK(b.times[i].ns >= b.times[i - 1].ns);
    }
    /* the kept snapshot: frames made, of the same table */
    pyf_snapshot *kept = b.tables[0];
    REQUIRE(kept != NULL);
    CHECK(kept->frames != NULL && kept->nframes == 8);
    pyf_frame_table kt = {.struct_size = sizeof kt};
    REQUIRE(pyf_snapshot_table(kept, &kt) == 0);
    CHECK(kt.table_id == b.stacks[0].table_id);
    CHECK(strcmp(kept->frames[0].info.function, "f") == 0);
    free_tables(&b);

    /* the main thread only (the request's one thread, as the binding asks
     * it); the thread holding the GIL only (3.15 says which) */
    batch_init(&b, &a, 0);
    b.request = &main_only;
    b.max_samples = 3;
    CHECK_EQ_INT(run(sc.t, &b), 0);
    CHECK_EQ_INT(b.nstacks, 1);
    CHECK(b.stacks[0].native_thread_id == 100 && b.stacks[0].count == 3);
    CHECK_EQ_INT(b.ntimes, 0);
    free_tables(&b);
    if (minor == 15) {
        fake_thread_set_holds_gil(sc.worker, 1);
        batch_init(&b, &a, PYF_SAMPLE_GIL);
        b.max_samples = 3;
        CHECK_EQ_INT(run(sc.t, &b), 0);
        CHECK_EQ_INT(b.nstacks, 1);
        CHECK(b.stacks[0].native_thread_id == 200 && b.stacks[0].count == 3);
        free_tables(&b);
        fake_thread_set_holds_gil(sc.worker, 0);
        batch_init(&b, &a, PYF_SAMPLE_GIL);
        b.max_samples = 3;
        CHECK_EQ_INT(run(sc.t, &b), 0);
        CHECK(b.samples == 3 && b.nstacks == 0); /* nobody holds it */
        free_tables(&b);
    }
    /* a moved top frame is another stack */
    batch_init(&b, &a, 0);
    b.max_samples = 2;
    CHECK_EQ_INT(run(sc.t, &b), 0);
    uint32_t before = stack_of(&b, 200)->first_key;
    uint32_t top_key = a.keys[before];
    free_tables(&b);
    fake_w64(sc.ft, sc.top + fake_off(sc.ft, "interpreter_frame.instr_ptr"),
             sc.code + fake_off(sc.ft, "code_object.co_code_adaptive") + 2u * 2);
    batch_init(&b, &a, 0);
    b.max_samples = 2;
    CHECK_EQ_INT(run(sc.t, &b), 0);
    const pyf_sample_stack *w = stack_of(&b, 200);
    REQUIRE(w != NULL);
    CHECK(a.keys[w->first_key] != top_key && w->count == 2);
    free_tables(&b);
    drop(&sc);
}

static void no_python_frame(int minor)
{
    check_begin(minor == 13 ? "3.13: a thread without a Python frame is the empty stack"
                            : "3.15: a thread without a Python frame is the empty stack");
    fake_target *ft = fake_new(minor);
    uint64_t interp = fake_add_interp(ft, 0);
    fake_add_thread(ft, interp, 0x300, 300, 0);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    arrays a;
    pyf_sample_batch b;
    batch_init(&b, &a, PYF_SAMPLE_TIMES);
    b.max_samples = 4;
    CHECK_EQ_INT(run(t, &b), 0);
    CHECK(b.samples == 4 && b.failed == 0 && b.thread_errors == 0);
    /* counted, as the per-sample loop counts it: every sample a thread-sample */
    CHECK_EQ_INT(b.nstacks, 1);
    CHECK(b.stacks[0].nkeys == 0 && b.stacks[0].count == 4 &&
          b.stacks[0].native_thread_id == 300);
    CHECK_EQ_INT(b.ntimes, 4);
    free_tables(&b);
    pyf_target_close(t);
    fake_free(ft);
}

static void arrays_full(void)
{
    check_begin("3.15: a batch ends before an array overflows; a sample too big for them fails");
    scene sc;
    build(&sc, 15);
    arrays a;
    pyf_sample_batch b;
    /* times for 3 thread-samples: the second sample (2 more) does not fit */
    batch_init(&b, &a, PYF_SAMPLE_TIMES);
    b.times_cap = 3;
    CHECK_EQ_INT(run(sc.t, &b), 0);
    CHECK_EQ_INT(b.end, PYF_SAMPLE_END_FULL);
    CHECK_EQ_INT(b.samples, 1);
    CHECK_EQ_INT(b.ntimes, 2);
    CHECK(stack_of(&b, 100)->count == 1 && stack_of(&b, 200)->count == 1);
    free_tables(&b);
    /* keys for 6 frames: the 8 of one sample never fit */
    batch_init(&b, &a, 0);
    b.keys_cap = 6;
    CHECK_EQ_INT(run(sc.t, &b), PYF_EDEPTH);
    CHECK_EQ_INT(b.ntables, 0);
    CHECK_EQ_INT(b.samples, 0);
    /* one stack slot for two threads: likewise */
    batch_init(&b, &a, 0);
    b.stacks_cap = 1;
    CHECK_EQ_INT(run(sc.t, &b), PYF_EDEPTH);
    /* refused: no arrays, unknown flags, jitter above 1 */
    batch_init(&b, &a, 0);
    b.stacks = NULL;
    CHECK_EQ_INT(run(sc.t, &b), PYF_EINVAL);
    batch_init(&b, &a, 0x80);
    CHECK_EQ_INT(run(sc.t, &b), PYF_EINVAL);
    batch_init(&b, &a, 0);
    b.jitter_ppm = 1000001;
    CHECK_EQ_INT(run(sc.t, &b), PYF_EINVAL);
    drop(&sc);
}

static void failures(void)
{
    check_begin("3.14: failed samples are counted by code; one the process may be gone for ends");
    scene sc;
    build(&sc, 14);
    arrays a;
    pyf_sample_batch b;
    /* the interpreter's memory unreadable: every sample fails */
    batch_init(&b, &a, 0);
    b.max_samples = 5;
    fake_fail_nth(sc.ft, 1, PYF_EPERM, 1);
    CHECK_EQ_INT(run(sc.t, &b), 0);
    CHECK_EQ_INT(b.samples, 5);
    CHECK_EQ_INT(b.failed, 5);
    CHECK_EQ_INT(b.failed_by_code[-PYF_EPERM], 5);
    CHECK_EQ_INT(b.nstacks, 0);
    CHECK_EQ_INT(b.end, PYF_SAMPLE_END_DONE);
    fake_fail_nth(sc.ft, 0, 0, 0);
    /* EFAULT: the batch ends there */
    batch_init(&b, &a, 0);
    b.max_samples = 5;
    fake_fail_nth(sc.ft, 1, PYF_EFAULT, 1);
    CHECK_EQ_INT(run(sc.t, &b), 0);
    CHECK_EQ_INT(b.end, PYF_SAMPLE_END_GONE);
    CHECK_EQ_INT(b.samples, 1);
    CHECK_EQ_INT(b.failed_by_code[-PYF_EFAULT], 1);
    fake_fail_nth(sc.ft, 0, 0, 0);
    /* and the target reads again */
    batch_init(&b, &a, 0);
    b.max_samples = 1;
    CHECK_EQ_INT(run(sc.t, &b), 0);
    CHECK(b.samples == 1 && b.failed == 0 && b.nstacks == 2);
    free_tables(&b);
    drop(&sc);
}

static void schedule(void)
{
    check_begin("3.15: waits drawn around the interval, none past until");
    scene sc;
    build(&sc, 15);
    arrays a;
    pyf_sample_batch b;
    batch_init(&b, &a, PYF_SAMPLE_TIMES);
    b.request = &main_only;
    b.interval_ns = 2 * MS;
    b.jitter_ppm = 500000;
    uint64_t start = now_ns();
    b.until_ns = start + 120 * MS;
    CHECK_EQ_INT(run(sc.t, &b), 0);
    uint64_t end = now_ns();
    CHECK_EQ_INT(b.end, PYF_SAMPLE_END_DONE);
    CHECK_MSG(end >= b.until_ns, "returned %llu ns before until",
              (unsigned long long)(b.until_ns - end));
    /* at most one sample per 1 ms (the shortest wait), the first at once */
    CHECK_MSG(b.samples >= 2 && b.samples <= 121, "%u samples", b.samples);
    CHECK(b.next_ns >= b.until_ns || b.next_ns + b.interval_ns >= b.until_ns);
    CHECK(b.rng != 7); /* the generator moved on, for the next call */
    free_tables(&b);
    /* each wait as drawn: a call of one sample leaves its next start in
     * next_ns; from 1 - jitter to 1 + jitter of the interval, the mean the
     * interval (200 draws: 2.04 % of it their standard error) */
    double sum = 0, lo = 2, hi = 0;
    for (int i = 0; i < 200; i++) {
        uint64_t rng = b.rng;
        batch_init(&b, &a, PYF_SAMPLE_TIMES);
        b.request = &main_only;
        b.rng = rng;
        b.interval_ns = 20 * MS; /* far above a sample's time: never behind */
        b.jitter_ppm = 500000;
        b.max_samples = 1;
        REQUIRE(run(sc.t, &b) == 0 && b.ntimes == 1);
        double f = (double)(b.next_ns - b.times[0].ns) / (double)b.interval_ns;
        sum += f;
        lo = f < lo ? f : lo;
        hi = f > hi ? f : hi;
        free_tables(&b);
    }
    CHECK_MSG(lo >= 0.5 && hi <= 1.5, "waits from %.3f to %.3f of the interval", lo, hi);
    CHECK_MSG(lo < 0.6 && hi > 1.4, "waits from %.3f to %.3f: not drawn", lo, hi);
    CHECK_MSG(sum / 200 > 0.92 && sum / 200 < 1.08, "mean wait %.3f of the interval", sum / 200);
    /* a sample due after until: the call waits until then, takes none */
    batch_init(&b, &a, 0);
    b.interval_ns = 1000 * MS;
    b.next_ns = now_ns() + 1000 * MS;
    b.until_ns = now_ns() + 20 * MS;
    CHECK_EQ_INT(run(sc.t, &b), 0);
    CHECK(now_ns() >= b.until_ns);
    CHECK_EQ_INT(b.samples, 0);
    drop(&sc);
}

int main(void)
{
    for (int minor = 13; minor <= 15; minor++)
        counts_by_stack(minor);
    no_python_frame(13);
    no_python_frame(15);
    arrays_full();
    failures();
    schedule();
    return check_end();
}
