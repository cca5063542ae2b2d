/*
 * test_cache.c - the 3.15 frame cache on a synthetic 3.15 image whose pops
 * move the anchor as CPython's do (fake_pop_frame): a miss stores the
 * stack and writes the anchor (only that word), a full hit and a partial
 * hit read only what they must and equal an uncached snapshot, an anchor
 * moved by someone else or a table replaced is never taken as ours,
 * read-only and readers without write never write, a thread state freed
 * or reused, or of a thread running no Python code, is never written, nothing is stored under an anchor written
 * on a frame that had returned.  Run under ASan/UBSan
 * in ctest-asan.
 */
#include "fake_target.h"

#include <string.h>

#define DEPTH 60
#define NL(a) (sizeof(a) / sizeof((a)[0]))

static const fake_loc L_A[] = {{3, 10, 10, 4, 18}, {5, 11, 12, 8, 1}};
static const fake_loc L_B[] = {{2, 40, 40, 2, 9}, {2, 41, 41, 4, 12}};

typedef struct scene {
    fake_target *ft;
    fake_thread *th;
    uint64_t code_a, code_b;
    pyf_target *cached, *plain;
} scene;

static pyf_snapshot *take(pyf_target *t)
{
    return fake_take(t);
}

static pyf_stats stats_of(pyf_target *t)
{
    pyf_stats st;
    pyf_target_stats(t, &st);
    return st;
}

/* The cached snapshot equals an uncached one of the same moment; returns
 * the change of the cached target's counters. */
static pyf_stats check_same(scene *sc, const char *what)
{
    pyf_stats before = stats_of(sc->cached);
    pyf_snapshot *a = take(sc->cached), *b = take(sc->plain);
    pyf_stats after = stats_of(sc->cached), d;
    memset(&d, 0, sizeof d);
    d.frame_cache_hits = after.frame_cache_hits - before.frame_cache_hits;
    d.frame_cache_partial_hits = after.frame_cache_partial_hits - before.frame_cache_partial_hits;
    d.frame_cache_misses = after.frame_cache_misses - before.frame_cache_misses;
    d.frames_from_cache = after.frames_from_cache - before.frames_from_cache;
    d.anchor_writes = after.anchor_writes - before.anchor_writes;
    d.read_calls = after.read_calls - before.read_calls;
    if (a != NULL && b != NULL) {
        CHECK_MSG(a->nframes == b->nframes, "%s: %u frames cached, %u not", what, a->nframes,
                  b->nframes);
        for (uint32_t i = 0; i < a->nframes && i < b->nframes; i++) {
            const pyf_frame *x = &a->frames[i], *y = &b->frames[i];
            CHECK_MSG(x->frame_addr == y->frame_addr && x->code_addr == y->code_addr &&
                          x->info.line == y->info.line && x->info.flags == y->info.flags &&
                          strcmp(x->info.function, y->info.function) == 0,
                      "%s: frame %u differs (%s:%d vs %s:%d)", what, i, x->info.function,
                      x->info.line, y->info.function, y->info.line);
        }
        CHECK_EQ_INT(a->threads[0].flags & PYF_THREAD_COMPLETE, PYF_THREAD_COMPLETE);
    }
    pyf_snapshot_free(a);
    pyf_snapshot_free(b);
    return d;
}

static void build(scene *sc)
{
    memset(sc, 0, sizeof *sc);
    sc->ft = fake_new(15);
    sc->code_a = fake_code(sc->ft, "/app/a.py", "walk", 10, L_A, NL(L_A));
    sc->code_b = fake_code(sc->ft, "/app/b.py", "Leaf.run", 40, L_B, NL(L_B));
    uint64_t in = fake_add_interp(sc->ft, 0);
    sc->th = fake_add_thread(sc->ft, in, 0x77, 4242, 1);
    for (int i = 0; i < DEPTH; i++)
        fake_push_frame(sc->th, sc->code_a, 1);
    fake_set_writable(sc->ft, 1);
    sc->cached = fake_open(sc->ft, NULL, 1);
    sc->plain = fake_open(sc->ft, NULL, 1);
}

static void done(scene *sc)
{
    pyf_target_close(sc->cached);
    pyf_target_close(sc->plain);
    fake_free(sc->ft);
}

static void test_paths(void)
{
    check_begin("3.15 frame cache: miss, full hit, partial hit, returns");
    scene sc;
    build(&sc);
    REQUIRE(sc.cached != NULL && sc.plain != NULL);
    uint32_t mode = 9;
    CHECK_EQ_INT(pyf_target_set_cache(sc.cached, PYF_CACHE_ON, &mode), PYF_OK);
    CHECK_EQ_INT(mode, PYF_CACHE_ON);

    pyf_stats d = check_same(&sc, "first");
    CHECK_EQ_INT(d.frame_cache_misses, 1);
    CHECK_EQ_INT(d.anchor_writes, 1);
    uint64_t seq0 = 0, top = fake_thread_anchor(sc.th, &seq0);
    CHECK_MSG(top != 0, "no anchor written");

    d = check_same(&sc, "unchanged");
    CHECK_EQ_INT(d.frame_cache_hits, 1);
    CHECK_EQ_INT(d.frames_from_cache, DEPTH - 1);
    CHECK_EQ_INT(d.anchor_writes, 0);
    /* from the second hit on, one reader call: the thread state, the top
     * frame and the anchor after it, all prefetched in one batch */
    d = check_same(&sc, "unchanged again");
    CHECK_EQ_INT(d.frame_cache_hits, 1);
    CHECK_EQ_INT(d.read_calls, 1);

    /* two returns move the anchor down twice; a call goes above it */
    fake_pop_frame(sc.th);
    fake_pop_frame(sc.th);
    uint64_t seq = 0;
    fake_thread_anchor(sc.th, &seq);
    CHECK_EQ_INT(seq, seq0 + 2);
    fake_push_frame(sc.th, sc.code_b, 1);
    d = check_same(&sc, "call after two returns");
    CHECK_EQ_INT(d.frame_cache_partial_hits, 1);
    CHECK_EQ_INT(d.frames_from_cache, DEPTH - 3);

    /* someone else moves the anchor lower without the seq: a miss */
    pyf_snapshot *s = take(sc.plain);
    REQUIRE(s != NULL && s->nframes > 10);
    fake_thread_set_anchor(sc.th, s->frames[10].frame_addr);
    pyf_snapshot_free(s);
    d = check_same(&sc, "anchor moved by another profiler");
    CHECK_EQ_INT(d.frame_cache_misses, 1);
    CHECK_EQ_INT(d.frames_from_cache, 0);
    d = check_same(&sc, "ours again");
    CHECK_EQ_INT(d.frame_cache_hits, 1);

    /* a flush drops the entries: a miss */
    pyf_target_flush(sc.cached);
    d = check_same(&sc, "after flush");
    CHECK_EQ_INT(d.frame_cache_misses, 1);
    done(&sc);
}

static void test_read_only(void)
{
    check_begin("3.15 frame cache: read-only and readers that cannot write");
    scene sc;
    build(&sc);
    REQUIRE(sc.cached != NULL);
    uint32_t mode = 9;
    CHECK_EQ_INT(pyf_target_set_cache(sc.cached, PYF_CACHE_READ_ONLY, &mode), PYF_OK);
    CHECK_EQ_INT(mode, PYF_CACHE_READ_ONLY);
    fake_reset_counters(sc.ft);
    check_same(&sc, "read-only 1");
    check_same(&sc, "read-only 2");
    CHECK_EQ_INT(fake_get_counters(sc.ft).writes, 0);
    CHECK_EQ_INT(stats_of(sc.cached).anchor_writes, 0);
    CHECK_EQ_INT(fake_thread_anchor(sc.th, NULL), 0);

    fake_set_writable(sc.ft, 0);
    pyf_target *t = fake_open(sc.ft, NULL, 1);
    REQUIRE(t != NULL);
    CHECK_EQ_INT(pyf_target_set_cache(t, PYF_CACHE_ON, &mode), PYF_OK);
    CHECK_EQ_INT(mode, PYF_CACHE_READ_ONLY);
    CHECK_EQ_INT(pyf_target_set_cache(t, 7, &mode), PYF_EINVAL);
    pyf_target_close(t);
    done(&sc);
}

static void test_older_versions(void)
{
    check_begin("frame cache on 3.13/3.14: read-only");
    for (int minor = 13; minor <= 14; minor++) {
        fake_target *ft = fake_new(minor);
        fake_set_writable(ft, 1);
        pyf_target *t = fake_open(ft, NULL, 1);
        uint32_t mode = 9;
        CHECK(t != NULL && pyf_target_set_cache(t, PYF_CACHE_ON, &mode) == PYF_OK);
        CHECK_EQ_INT(mode, PYF_CACHE_READ_ONLY);
        pyf_target_close(t);
        fake_free(ft);
    }
}

/* The thread ends while it is walked and its state is freed.  Three cases,
 * each made to happen just before the check that precedes the write (the
 * read of the state's words from current_frame to thread_id):
 *  - reused: the memory is given to another object, whose words lie over
 *    the whole state (a dict's keys, say);
 *  - freed: nothing reuses it yet; the thread had returned from every
 *    frame, and its id is still there (free() keeps it);
 *  - control: the thread runs on as it was walked: the anchor is written.
 * In the first two nothing may be written. */
enum { FREED_REUSED, FREED_KEPT, FREED_CONTROL };

typedef struct freed {
    fake_thread *th;
    uint64_t state;
    int how;
} freed;

static void state_freed(fake_target *ft, void *arg)
{
    freed *r = arg;
    if (r->how == FREED_REUSED) {
        for (uint64_t off = 0; off < 256; off += 8)
            fake_w64(ft, r->state + off, 0x0000000000000011ULL + off);
    } else if (r->how == FREED_KEPT) {
        /* as a thread leaves its state: on its base frame (3.15) */
        while (fake_thread_current(r->th) != fake_thread_base_frame(r->th))
            fake_pop_frame(r->th);
    }
}

static void test_freed_state_not_written(void)
{
    static const char *const what[] = {
        "3.15 frame cache: a thread state freed and reused before the anchor write is "
        "not written",
        "3.15 frame cache: a thread state freed, its thread id still in it, is not written",
        "3.15 frame cache: the same thread state is written (control)",
    };
    for (int how = FREED_REUSED; how <= FREED_CONTROL; how++) {
        check_begin(what[how]);
        scene sc;
        build(&sc);
        REQUIRE(sc.cached != NULL);
        uint32_t mode = 9;
        CHECK_EQ_INT(pyf_target_set_cache(sc.cached, PYF_CACHE_ON, &mode), PYF_OK);
        freed r = {sc.th, fake_thread_addr(sc.th), how};
        uint64_t thread_id_off = fake_off(sc.ft, "thread_state.thread_id");
        uint64_t lpf = fake_off(sc.ft, "thread_state.last_profiled_frame");
        /* the check's read starts at the first of its words: current_frame */
        fake_on_read(sc.ft, r.state + fake_off(sc.ft, "thread_state.current_frame"),
                     state_freed, &r);
        uint64_t writes0 = fake_get_counters(sc.ft).writes;
        uint64_t anchor0 = fake_r64(sc.ft, r.state + lpf);
        pyf_snapshot *snap = NULL;
        CHECK_EQ_INT(pyf_snapshot_take(sc.cached, NULL, &snap), PYF_OK);
        pyf_snapshot_free(snap);
        uint64_t written = fake_get_counters(sc.ft).writes - writes0;
        if (how == FREED_REUSED) {
            CHECK_EQ_INT(written, 0);
            CHECK_EQ_INT(stats_of(sc.cached).anchor_writes, 0);
            /* the reused memory is as the other object left it */
            CHECK_EQ_INT(fake_r64(sc.ft, r.state + lpf), 0x0000000000000011ULL + lpf);
        } else if (how == FREED_KEPT) {
            CHECK_EQ_INT(fake_r64(sc.ft, r.state + thread_id_off), 0x77);
            CHECK_EQ_INT(written, 0);
            CHECK_EQ_INT(stats_of(sc.cached).anchor_writes, 0);
            CHECK_EQ_INT(fake_r64(sc.ft, r.state + lpf), anchor0);
        } else {
            CHECK_EQ_INT(written, 1);
        }
        done(&sc);
    }
}

/* A thread running no Python code (its base frame on top, or an entry
 * frame of the interpreter's) has nothing to anchor, and its state is the
 * kind that is freed: every state is freed with its base frame on top,
 * and freed memory reads as the state did until reused.  Never written. */
static void test_idle_thread_not_written(void)
{
    for (int entry = 0; entry <= 1; entry++) {
        check_begin(entry ? "3.15 frame cache: a thread with only an entry frame is not "
                            "written"
                          : "3.15 frame cache: a thread on its base frame is not written");
        fake_target *ft = fake_new(15);
        uint64_t code = fake_code(ft, "/app/a.py", "walk", 10, L_A, NL(L_A));
        uint64_t in = fake_add_interp(ft, 0);
        fake_thread *busy = fake_add_thread(ft, in, 0x77, 4242, 1);
        for (int i = 0; i < 5; i++)
            fake_push_frame(busy, code, 1);
        fake_thread *idle = fake_add_thread(ft, in, 0x78, 4243, entry);
        fake_set_writable(ft, 1);
        pyf_target *t = fake_open(ft, NULL, 1);
        REQUIRE(t != NULL);
        uint32_t mode = 9;
        CHECK_EQ_INT(pyf_target_set_cache(t, PYF_CACHE_ON, &mode), PYF_OK);
        uint64_t lpf = fake_off(ft, "thread_state.last_profiled_frame");
        for (int k = 0; k < 2; k++) {
            pyf_snapshot *snap = take(t);
            pyf_snapshot_free(snap);
        }
        CHECK_EQ_INT(fake_r64(ft, fake_thread_addr(idle) + lpf), 0);
        /* the thread running Python code beside it is (a control) */
        CHECK_EQ_INT(fake_r64(ft, fake_thread_addr(busy) + lpf), fake_thread_current(busy));
        CHECK_EQ_INT(stats_of(t).anchor_writes, 1);
        pyf_target_close(t);
        fake_free(ft);
    }
}

/* The top frame returns between the check and the anchor write: the
 * anchor names a frame no longer on the stack, which no return will move.
 * Nothing may be stored under it: its caller returns too, two calls take
 * their places, and the new top at the anchor's address would find the
 * old caller cached below it. */
static void top_returns(fake_target *ft, void *arg)
{
    (void)ft;
    fake_pop_frame(arg);
}

static void test_anchor_on_returned_frame(void)
{
    check_begin("3.15 frame cache: nothing stored under an anchor written on a frame that "
                "had returned");
    scene sc;
    build(&sc);
    REQUIRE(sc.cached != NULL && sc.plain != NULL);
    uint32_t mode = 9;
    CHECK_EQ_INT(pyf_target_set_cache(sc.cached, PYF_CACHE_ON, &mode), PYF_OK);
    uint64_t top = fake_thread_current(sc.th);
    uint64_t state = fake_thread_addr(sc.th);
    fake_on_write(sc.ft, state + fake_off(sc.ft, "thread_state.last_profiled_frame"),
                  top_returns, sc.th);
    pyf_snapshot *snap = take(sc.cached);
    pyf_snapshot_free(snap);
    CHECK_EQ_INT(stats_of(sc.cached).anchor_writes, 1);
    CHECK_EQ_INT(fake_thread_anchor(sc.th, NULL), top); /* written on the returned frame */
    /* the caller returns; two calls of another function in their places */
    fake_pop_frame(sc.th);
    fake_push_frame(sc.th, sc.code_b, 1);
    CHECK_EQ_INT(fake_push_frame(sc.th, sc.code_b, 3), top);
    pyf_stats d = check_same(&sc, "a call at the returned anchor's address");
    CHECK_EQ_INT(d.frame_cache_hits, 0);
    done(&sc);
}

int main(void)
{
    test_paths();
    test_anchor_on_returned_frame();
    test_read_only();
    test_older_versions();
    test_freed_state_not_written();
    test_idle_thread_not_written();
    return check_end();
}
