/*
 * test_walk.c - snapshots of synthetic 3.13/3.14/3.15 images: interpreters,
 * threads, frame chains through data-stack chunks, entry frames, generator
 * frames, tag bits, broken chains (cycles, depth, unreadable memory), the
 * one-thread request, and the read budget of a deep stack.
 *
 * Every case works on a scene: image() makes the image with its main
 * interpreter, build_scene() (three threads in two interpreters) or
 * build_chain() (one plain chain and a healthy thread) fill it, the case
 * varies it, open_take() snapshots it and done() frees it all.
 */
#include "fake_target.h"

#include <stdbool.h>
#include <string.h>

#define MAXF 256

/* Whether the broken-chain cases open their targets with a readv reader. */
static int g_readv;

typedef struct code_info {
    uint64_t addr;
    const char *func, *file;
    const fake_loc *locs;
    size_t nlocs;
} code_info;

typedef struct exp_frame {
    const char *func, *file;
    uint64_t frame_addr, code_addr;
    int line, end_line, col, end_col;
    uint32_t flags;
} exp_frame;

/* Expected frames, outermost first (push order). */
typedef struct stk {
    exp_frame f[MAXF];
    int n;
    int after_entry;
} stk;

static code_info mkcode(fake_target *ft, const char *file, const char *func, int first,
                        const fake_loc *locs, size_t n)
{
    code_info ci = {fake_code(ft, file, func, first, locs, n), func, file, locs, n};
    return ci;
}

static void expect_frame(stk *s, const code_info *ci, uint64_t frame, int idx,
                         uint32_t flags)
{
    if (s->n >= MAXF)
        abort();
    exp_frame *e = &s->f[s->n++];
    fake_loc l;
    e->func = ci->func;
    e->file = ci->file;
    e->frame_addr = frame;
    e->code_addr = ci->addr;
    if (fake_loc_at(ci->locs, ci->nlocs, idx, &l) == 0) {
        e->line = l.line;
        e->end_line = l.end_line;
        e->col = l.col;
        e->end_col = l.end_col;
    } else {
        e->line = e->end_line = e->col = e->end_col = -1;
    }
    e->flags = flags | (s->after_entry ? PYF_FRAME_ENTRY_FROM_C : 0u);
    s->after_entry = 0;
}

static uint64_t push(fake_thread *th, stk *s, const code_info *ci, int idx)
{
    uint64_t f = fake_push_frame(th, ci->addr, idx);
    expect_frame(s, ci, f, idx, 0);
    return f;
}

static uint64_t push_gen(fake_thread *th, stk *s, const code_info *ci, int idx)
{
    uint64_t f = fake_gen_frame(th, ci->addr, idx, NULL);
    expect_frame(s, ci, f, idx, PYF_FRAME_GENERATOR);
    return f;
}

static uint64_t entry(fake_thread *th, stk *s, int owner)
{
    s->after_entry = 1;
    return fake_push_entry(th, owner);
}

/* Compare the frames of thread ti with s (innermost first), flags under mask;
 * nexp < 0 means all of s, else only the innermost nexp. */
static int check_frames(const pyf_snapshot *snap, int ti, const stk *s, int nexp,
                        uint32_t mask, const char *what)
{
    int before = check_failures;
    if (ti < 0 || (uint32_t)ti >= snap->nthreads) {
        CHECK_MSG(0, "%s: thread not found", what);
        return 0;
    }
    const pyf_thread *t = &snap->threads[ti];
    int want = nexp < 0 ? s->n : nexp;
    CHECK_MSG((int)t->nframes == want, "%s: nframes %u, expected %d", what, t->nframes,
              want);
    int n = (int)t->nframes < want ? (int)t->nframes : want;
    for (int k = 0; k < n; k++) {
        const pyf_frame *f = &snap->frames[t->first_frame + (uint32_t)k];
        const exp_frame *e = &s->f[s->n - 1 - k];
        CHECK_MSG(strcmp(f->info.function, e->func) == 0, "%s #%d function '%s' != '%s'", what, k,
                  f->info.function, e->func);
        CHECK_MSG(strcmp(f->info.filename, e->file) == 0, "%s #%d filename '%s' != '%s'", what, k,
                  f->info.filename, e->file);
        CHECK_MSG(f->frame_addr == e->frame_addr, "%s #%d frame_addr 0x%llx != 0x%llx", what,
                  k, (unsigned long long)f->frame_addr, (unsigned long long)e->frame_addr);
        CHECK_MSG(f->code_addr == e->code_addr, "%s #%d code_addr 0x%llx != 0x%llx", what, k,
                  (unsigned long long)f->code_addr, (unsigned long long)e->code_addr);
        const pyf_frame_info *fi = &f->info;
        CHECK_MSG(fi->line == e->line && fi->end_line == e->end_line && fi->column == e->col &&
                      fi->end_column == e->end_col,
                  "%s #%d %s location %d-%d:%d-%d != %d-%d:%d-%d", what, k, e->func, fi->line,
                  fi->end_line, fi->column, fi->end_column, e->line, e->end_line, e->col,
                  e->end_col);
        CHECK_MSG((f->info.flags & mask) == (e->flags & mask), "%s #%d %s flags 0x%x != 0x%x", what,
                  k, e->func, f->info.flags & mask, e->flags & mask);
    }
    return check_failures == before;
}

static pyf_snapshot *take(pyf_target *t, const pyf_snapshot_request *req, int expect_rc)
{
    pyf_snapshot *s = NULL;
    fake_watchdog(30, "pyf_snapshot_take");
    int rc = pyf_snapshot_take(t, req, &s);
    fake_watchdog(0, NULL);
    CHECK_MSG(rc == expect_rc, "pyf_snapshot_take: %s, expected %s (%s)", pyf_error_name(rc),
              pyf_error_name(expect_rc), fake_last_detail(t));
    if (rc == 0) {
        const char *why = fake_check_snapshot(s);
        CHECK_MSG(why == NULL, "inconsistent snapshot: %s", why);
        if (s == NULL)
            return NULL;
    }
    return rc == 0 ? s : NULL;
}

/* ---- the scene every case starts from ------------------------------------ */

static const fake_loc L_MOD[] = {{2, 1, 1, 0, 0}, {3, 3, 3, 0, 12}, {4, 5, 5, 4, 30}};
static const fake_loc L_F[] = {{1, 10, 10, 0, 0}, {4, 11, 11, 8, 20}, {3, 12, 14, 4, 9}};
static const fake_loc L_G[] = {{1, 30, 30, 0, 0}, {2, 31, 31, -1, -1}, {2, 33, 33, 100, 110}};
static const fake_loc L_GEN[] = {{1, 40, 40, 0, 0}, {2, 41, 41, 4, 10}};
static const fake_loc L_H[] = {{1, 50, 50, 0, 0}, {1, 52, 52, 16, 20}};
#define NL(a) (sizeof(a) / sizeof((a)[0]))

typedef struct scene {
    fake_target *ft;
    pyf_target *t; /* open_take's, closed by done() */
    uint64_t interp0, interp1;
    /* build_scene: the threads, what each should show, the code */
    fake_thread *t1, *t2, *t3;
    stk s1, s2, s3;
    code_info mod, f, g, gen, h;
    /* build_chain: thread 3001 (th: entry frame, then fr[0] outermost ..
     * innermost, shown as st) and the healthy thread 3002 (other, so) */
    fake_thread *th, *other;
    stk st, so;
    uint64_t entry;
    uint64_t fr[MAXF];
    code_info codes[3];
} scene;

/* A new image of 3.<minor> with its main interpreter (id 0). */
static void image(scene *sc, int minor)
{
    memset(sc, 0, sizeof *sc);
    sc->ft = fake_new(minor);
    sc->interp0 = fake_add_interp(sc->ft, 0);
}

/* Open a target over the image (closing the one before) and take a
 * snapshot with rq (may be NULL); NULL when either fails. */
static pyf_snapshot *open_take(scene *sc, const pyf_options *o, int readv,
                               const pyf_snapshot_request *rq)
{
    pyf_target_close(sc->t);
    sc->t = fake_open(sc->ft, o, readv);
    return sc->t ? take(sc->t, rq, 0) : NULL;
}

/* Another snapshot through the open target; NULL when there is none. */
static pyf_snapshot *take_again(scene *sc, const pyf_snapshot_request *rq)
{
    return sc->t ? take(sc->t, rq, 0) : NULL;
}

/* Free the snapshot s, the target and the image. */
static void done(scene *sc, pyf_snapshot *s)
{
    pyf_snapshot_free(s);
    pyf_target_close(sc->t);
    fake_free(sc->ft);
}

/* check_begin("3.<minor> <what>", " (readv)" after it when readv); the
 * name lives until the next case (check_begin keeps the pointer). */
static void begin(int minor, const char *what, int readv)
{
    static char name[64];
    snprintf(name, sizeof name, "3.%d %s%s", minor, what, readv ? " (readv)" : "");
    check_begin(name);
}

/* The common scene: three threads in two interpreters, generator and entry
 * frames, every tag; returns the image (sc->ft). */
static fake_target *build_scene(scene *sc, int minor)
{
    image(sc, minor);
    fake_target *ft = sc->ft;
    sc->mod = mkcode(ft, "/app/main.py", "<module>", 1, L_MOD, NL(L_MOD));
    sc->f = mkcode(ft, "/app/main.py", "Outer.f", 10, L_F, NL(L_F));
    sc->g = mkcode(ft, "/app/lib/util.py", "g", 30, L_G, NL(L_G));
    sc->gen = mkcode(ft, "/app/lib/util.py", "producer", 40, L_GEN, NL(L_GEN));
    sc->h = mkcode(ft, "/app/lib/util.py", "Worker.run.<locals>.h", 50, L_H, NL(L_H));

    sc->interp1 = fake_add_interp(ft, 1);

    /* main thread: <module> -> Outer.f -> [C call] -> g */
    sc->t1 = fake_add_thread(ft, sc->interp0, 0x7f00aa001000ull, 1001, 0);
    entry(sc->t1, &sc->s1, -1);
    fake_set_exec_tag(ft, 1);
    push(sc->t1, &sc->s1, &sc->mod, 3);
    fake_set_exec_tag(ft, 3);
    push(sc->t1, &sc->s1, &sc->f, 6);
    entry(sc->t1, &sc->s1, minor == 14 ? 4 : -1); /* 3.14: CSTACK */
    fake_set_exec_tag(ft, 2);
    push(sc->t1, &sc->s1, &sc->g, 2);
    fake_set_exec_tag(ft, 1);

    /* second thread: <module> -> producer (generator) -> h */
    sc->t2 = fake_add_thread(ft, sc->interp0, 0x7f00aa002000ull, 1002, 0);
    entry(sc->t2, &sc->s2, -1);
    push(sc->t2, &sc->s2, &sc->mod, 0);
    push_gen(sc->t2, &sc->s2, &sc->gen, 1);
    push(sc->t2, &sc->s2, &sc->h, 1);

    /* subinterpreter thread */
    sc->t3 = fake_add_thread(ft, sc->interp1, 0x7f00aa003000ull, 1003, 0);
    entry(sc->t3, &sc->s3, -1);
    push(sc->t3, &sc->s3, &sc->mod, 8);

    if (minor >= 15) {
        fake_thread_set_holds_gil(sc->t1, 1);
        fake_thread_set_holds_gil(sc->t2, 0);
    }
    return ft;
}

static void check_thread_meta(const pyf_snapshot *s, int ti, fake_thread *th, uint64_t tid,
                              uint64_t native, int64_t interp_id, int is_main, int minor,
                              int holds_gil)
{
    if (ti < 0) {
        CHECK_MSG(0, "thread %llu missing", (unsigned long long)native);
        return;
    }
    const pyf_thread *t = &s->threads[ti];
    CHECK_EQ_INT(t->tstate_addr, fake_thread_addr(th));
    CHECK_EQ_INT(t->thread_id, tid);
    CHECK_EQ_INT(t->native_thread_id, native);
    CHECK(t->interp_index < s->ninterps);
    if (t->interp_index < s->ninterps)
        CHECK_EQ_INT(s->interps[t->interp_index].id, interp_id);
    CHECK_MSG(t->flags & PYF_THREAD_COMPLETE, "thread %llu not complete: %s %s",
              (unsigned long long)native, pyf_error_name(t->error), fake_thread_detail(&s->threads[ti]));
    CHECK_EQ_INT(t->error, 0);
    CHECK_EQ_STR(fake_thread_detail(&s->threads[ti]), "");
    if (minor >= 14)
        CHECK_EQ_INT(!!(t->flags & PYF_THREAD_MAIN), is_main);
    else
        CHECK_EQ_INT(t->flags & PYF_THREAD_MAIN, 0);
    if (minor >= 15) {
        CHECK(t->flags & PYF_THREAD_GIL_KNOWN);
        CHECK_EQ_INT(!!(t->flags & PYF_THREAD_HOLDS_GIL), holds_gil);
    } else {
        CHECK_EQ_INT(t->flags & (PYF_THREAD_GIL_KNOWN | PYF_THREAD_HOLDS_GIL), 0);
    }
}

static void check_scene(scene *sc, const pyf_snapshot *s, int minor, uint32_t mask)
{
    CHECK_EQ_INT(s->ninterps, 2);
    CHECK_EQ_INT(s->nthreads, 3);
    if (s->ninterps == 2) {
        /* list order: the newest interpreter is the head */
        CHECK_EQ_INT(s->interps[0].id, 1);
        CHECK_EQ_INT(s->interps[0].addr, sc->interp1);
        CHECK_EQ_INT(s->interps[0].nthreads, 1);
        CHECK_EQ_INT(s->interps[1].id, 0);
        CHECK_EQ_INT(s->interps[1].addr, sc->interp0);
        CHECK_EQ_INT(s->interps[1].nthreads, 2);
    }
    int i1 = fake_find_thread(s, 1001), i2 = fake_find_thread(s, 1002),
        i3 = fake_find_thread(s, 1003);
    check_thread_meta(s, i1, sc->t1, 0x7f00aa001000ull, 1001, 0, 1, minor, 1);
    check_thread_meta(s, i2, sc->t2, 0x7f00aa002000ull, 1002, 0, 0, minor, 0);
    check_thread_meta(s, i3, sc->t3, 0x7f00aa003000ull, 1003, 1, 1, minor, 0);
    check_frames(s, i1, &sc->s1, -1, mask, "main thread");
    check_frames(s, i2, &sc->s2, -1, mask, "generator thread");
    check_frames(s, i3, &sc->s3, -1, mask, "subinterpreter thread");
}

static void test_basic(int minor, int with_readv)
{
    begin(minor, "basic walk", with_readv);
    scene sc;
    build_scene(&sc, minor);
    pyf_snapshot *s = open_take(&sc, NULL, with_readv, NULL);
    CHECK(sc.t != NULL);
    if (sc.t == NULL) {
        done(&sc, NULL);
        return;
    }
    uint32_t mask = ~PYF_FRAME_ENTRY_FROM_C;
    if (s) {
        int before = check_failures;
        check_scene(&sc, s, minor, mask);
        if (check_failures != before)
            fake_dump_snapshot(s, stderr);
        pyf_snapshot_free(s);
    }
    /* again, now with warm caches */
    s = take(sc.t, NULL, 0);
    if (s) {
        check_scene(&sc, s, minor, mask);
        pyf_snapshot_free(s);
    }
    pyf_stats st;
    pyf_target_stats(sc.t, &st);
    CHECK_EQ_INT(st.snapshots, 2);
    CHECK_EQ_INT(st.frames, 2 * (3 + 3 + 1));
    CHECK(st.code_cache_hits > 0);
    done(&sc, NULL);
}

/* PYF_FRAME_ENTRY_FROM_C: the first Python frame above each entry frame. */
static void test_entry_flag(int minor)
{
    begin(minor, "ENTRY_FROM_C flag", 0);
    scene sc;
    build_scene(&sc, minor);
    pyf_snapshot *s = open_take(&sc, NULL, 0, NULL);
    if (s) {
        check_frames(s, fake_find_thread(s, 1001), &sc.s1, -1, PYF_FRAME_ENTRY_FROM_C,
                     "main thread entry flags");
        check_frames(s, fake_find_thread(s, 1002), &sc.s2, -1, PYF_FRAME_ENTRY_FROM_C,
                     "generator thread entry flags");
    }
    done(&sc, s);
}

/* ---- idle threads -------------------------------------------------------- */
static void test_idle_threads(int minor)
{
    begin(minor, "idle threads", 0);
    scene sc;
    image(&sc, minor);
    fake_add_thread(sc.ft, sc.interp0, 11, 2001, 0); /* no frame at all */
    fake_add_thread(sc.ft, sc.interp0, 12, 2002, 1); /* only an entry frame */
    pyf_snapshot *s = open_take(&sc, NULL, 0, NULL);
    if (s) {
        CHECK_EQ_INT(s->nthreads, 2);
        CHECK_EQ_INT(s->nframes, 0);
        for (uint32_t i = 0; i < s->nthreads; i++) {
            CHECK_EQ_INT(s->threads[i].nframes, 0);
            CHECK_EQ_INT(s->threads[i].error, 0);
            CHECK(s->threads[i].flags & PYF_THREAD_COMPLETE);
        }
    }
    done(&sc, s);
}

/* ---- a single thread with a plain chain, for the broken-chain cases ----- */
static const fake_loc L_A[] = {{4, 7, 7, 2, 9}};
static const fake_loc L_B[] = {{4, 17, 17, 0, 5}};
static const fake_loc L_C[] = {{4, 27, 27, 1, 3}};

/* The first ncodes of the chain's code objects (fa, fb, fc) and thread
 * 3001, no frame yet. */
static void chain_thread(scene *sc, int minor, int ncodes)
{
    static const char *const files[] = {"/x/a.py", "/x/b.py", "/x/c.py"};
    static const char *const funcs[] = {"fa", "fb", "fc"};
    static const fake_loc *const locs[] = {L_A, L_B, L_C};
    image(sc, minor);
    for (int i = 0; i < ncodes; i++)
        sc->codes[i] = mkcode(sc->ft, files[i], funcs[i], 7 + 10 * i, locs[i], 1);
    sc->th = fake_add_thread(sc->ft, sc->interp0, 0x1111, 3001, 0);
}

static void build_chain(scene *sc, int minor, int n)
{
    chain_thread(sc, minor, 3);
    sc->entry = entry(sc->th, &sc->st, -1);
    for (int i = 0; i < n; i++)
        sc->fr[i] = push(sc->th, &sc->st, &sc->codes[i % 3], i % 4);
    /* an unrelated healthy thread */
    sc->other = fake_add_thread(sc->ft, sc->interp0, 0x2222, 3002, 0);
    entry(sc->other, &sc->so, -1);
    push(sc->other, &sc->so, &sc->codes[0], 0);
    push(sc->other, &sc->so, &sc->codes[1], 1);
}

static void check_other_ok(const pyf_snapshot *s, scene *sc)
{
    int oi = fake_find_thread(s, 3002);
    CHECK(oi >= 0);
    if (oi >= 0) {
        CHECK(s->threads[oi].flags & PYF_THREAD_COMPLETE);
        check_frames(s, oi, &sc->so, -1, ~PYF_FRAME_ENTRY_FROM_C, "healthy thread");
    }
}

/* Thread 3001 of s (index *ti); NULL when there is no snapshot, or (a
 * failed check) no such thread in it. */
static const pyf_thread *broken_thread(const pyf_snapshot *s, int *ti)
{
    *ti = -1;
    if (s == NULL)
        return NULL;
    *ti = fake_find_thread(s, 3001);
    CHECK(*ti >= 0);
    return *ti >= 0 ? &s->threads[*ti] : NULL;
}

/* The healthy thread is whole (when there is a snapshot); then done(). */
static void chain_done(scene *sc, pyf_snapshot *s)
{
    if (s)
        check_other_ok(s, sc);
    done(sc, s);
}

static void run_cycle_case(int minor, const char *what, int link_from, int link_to_entry)
{
    scene sc;
    build_chain(&sc, minor, 4);
    /* fr[0] is the outermost python frame, fr[3] the innermost */
    if (link_to_entry)
        fake_frame_set_previous(sc.ft, sc.entry, sc.fr[3]);
    else
        fake_frame_set_previous(sc.ft, sc.fr[link_from], sc.fr[3]);
    int prefix = link_to_entry ? 4 : 4 - link_from;
    int ti;
    pyf_snapshot *s = open_take(&sc, NULL, g_readv, NULL);
    const pyf_thread *th = broken_thread(s, &ti);
    if (th) {
        CHECK_MSG(th->error == PYF_ECYCLE, "%s: error %s", what, pyf_error_name(th->error));
        CHECK(!(th->flags & PYF_THREAD_COMPLETE));
        CHECK(fake_thread_detail(&s->threads[ti])[0] != '\0');
        CHECK_MSG(th->nframes >= (uint32_t)prefix && th->nframes < 64,
                  "%s: %u frames kept", what, th->nframes);
        /* the frames read before the cycle closed are kept, in order */
        if (th->nframes >= (uint32_t)prefix) {
            const stk *tail = &sc.st;
            int before = check_failures;
            for (int k = 0; k < prefix; k++) {
                const pyf_frame *f = &s->frames[th->first_frame + (uint32_t)k];
                CHECK_EQ_INT(f->frame_addr, sc.fr[3 - k]);
                CHECK_EQ_STR(f->info.function, tail->f[tail->n - 1 - k].func);
            }
            if (check_failures != before)
                fake_dump_snapshot(s, stderr);
        }
    }
    chain_done(&sc, s);
}

static void test_cycles(int minor)
{
    begin(minor, "frame cycles", g_readv);
    run_cycle_case(minor, "4-frame cycle", 0, 0);
    run_cycle_case(minor, "self loop", 3, 0);
    run_cycle_case(minor, "2-frame cycle", 2, 0);
    run_cycle_case(minor, "cycle through the entry frame", 0, 1);
}

static void test_depth(int minor)
{
    begin(minor, "max_depth", 0);
    scene sc;
    build_chain(&sc, minor, 50);
    pyf_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_depth = 10;
    pyf_snapshot *s = open_take(&sc, &o, 0, NULL);
    int ti;
    const pyf_thread *th = broken_thread(s, &ti);
    if (th) {
        CHECK_EQ_INT(th->error, PYF_EDEPTH);
        CHECK(!(th->flags & PYF_THREAD_COMPLETE));
        CHECK(fake_thread_detail(&s->threads[ti])[0] != '\0');
        check_frames(s, ti, &sc.st, 10, ~PYF_FRAME_ENTRY_FROM_C, "options.max_depth 10");
    }
    if (s)
        check_other_ok(s, &sc);
    pyf_snapshot_free(s);

    pyf_snapshot_request rq;
    memset(&rq, 0, sizeof rq);
    rq.struct_size = sizeof rq;
    rq.max_depth = 7;
    s = take_again(&sc, &rq);
    th = broken_thread(s, &ti);
    if (th) {
        CHECK_EQ_INT(th->error, PYF_EDEPTH);
        check_frames(s, ti, &sc.st, 7, ~PYF_FRAME_ENTRY_FROM_C, "request.max_depth 7");
    }
    pyf_snapshot_free(s);

    rq.max_depth = 0; /* the target's option */
    s = take_again(&sc, &rq);
    th = broken_thread(s, &ti);
    if (th)
        check_frames(s, ti, &sc.st, 10, ~PYF_FRAME_ENTRY_FROM_C, "request.max_depth 0");
    pyf_snapshot_free(s);

    rq.max_depth = 60; /* a request may raise the limit too */
    s = take_again(&sc, &rq);
    th = broken_thread(s, &ti);
    if (th) {
        CHECK_EQ_INT(th->error, 0);
        CHECK(th->flags & PYF_THREAD_COMPLETE);
        check_frames(s, ti, &sc.st, -1, ~PYF_FRAME_ENTRY_FROM_C, "request.max_depth 60");
    }
    pyf_snapshot_free(s);

    /* exactly max_depth Python frames: nothing is missing */
    o.max_depth = 50;
    s = open_take(&sc, &o, 0, NULL);
    th = broken_thread(s, &ti);
    if (th) {
        CHECK_MSG(th->error == 0, "50 frames, max_depth 50: %s", pyf_error_name(th->error));
        CHECK(th->flags & PYF_THREAD_COMPLETE);
        check_frames(s, ti, &sc.st, -1, ~PYF_FRAME_ENTRY_FROM_C, "max_depth == depth");
    }
    pyf_snapshot_free(s);

    /* default limit */
    s = open_take(&sc, NULL, 0, NULL);
    th = broken_thread(s, &ti);
    if (th) {
        CHECK(th->flags & PYF_THREAD_COMPLETE);
        check_frames(s, ti, &sc.st, -1, ~PYF_FRAME_ENTRY_FROM_C, "default max_depth");
    }
    done(&sc, s);
}

/* keep_frames: the innermost frames as a full walk gives them (entry flags
 * too), the rest counted, the same end as a full walk, and no table key for
 * a counted frame.  With PYF_SNAP_ENTRIES each frame entered from C has its
 * entry, and so has the last frame kept whose run goes on past the cut
 * (the entry its eval call pushed, found among the frames counted): a
 * debugger places that run by it. */
static void test_keep_frames(int minor)
{
    begin(minor, "keep_frames", 0);
    scene sc;
    chain_thread(&sc, minor, 2);
    uint64_t run_entry[30]; /* per frame, outermost first: its run's entry frame */
    uint64_t last_entry = 0;
    for (int i = 0; i < 30; i++) {
        if (i % 4 == 0)
            last_entry = entry(sc.th, &sc.st, -1);
        run_entry[i] = last_entry;
        push(sc.th, &sc.st, &sc.codes[i % 2], i % 3);
    }
    pyf_snapshot_request rq;
    memset(&rq, 0, sizeof rq);
    rq.struct_size = sizeof rq;
    rq.flags = PYF_SNAP_ENTRIES;
    for (uint32_t keep = 1; keep <= 31; keep++) {
        rq.keep_frames = keep;
        pyf_snapshot *s = open_take(&sc, NULL, 0, &rq); /* a fresh table each time */
        int ti = s ? fake_find_thread(s, 3001) : -1;
        if (ti >= 0) {
            const pyf_thread *pt = &s->threads[ti];
            uint32_t shown = keep < 30 ? keep : 30;
            char what[48];
            snprintf(what, sizeof what, "keep_frames %u", keep);
            CHECK_MSG(pt->error == 0, "%s: %s", what, pyf_error_name(pt->error));
            CHECK(pt->flags & PYF_THREAD_COMPLETE);
            CHECK_MSG(pt->more_frames == 30 - shown, "%s: more_frames %u", what,
                      pt->more_frames);
            check_frames(s, ti, &sc.st, (int)shown, ~0u, what);
            pyf_frame_table tab;
            memset(&tab, 0, sizeof tab);
            tab.struct_size = sizeof tab;
            CHECK_EQ_INT(pyf_snapshot_table(s, &tab), PYF_OK);
            /* a kept frame makes one key, two when it is marked entered
             * from C afterwards (every 4th here); a counted one none */
            CHECK_MSG(tab.nkeys <= shown + (shown + 3) / 4, "%s: %u keys", what,
                      tab.nkeys);
            const uint64_t *entries = NULL;
            CHECK_EQ_INT(pyf_snapshot_entries(s, &entries), PYF_OK);
            for (uint32_t k = 0; entries != NULL && k < pt->nframes; k++) {
                int i = 29 - (int)k; /* its push: outermost first */
                bool from_c = i % 4 == 0, cut = k + 1 == pt->nframes && pt->more_frames > 0;
                uint64_t want = from_c || cut ? run_entry[i] : 0;
                CHECK_MSG(entries[pt->first_frame + k] == want,
                          "%s: frame #%u entry 0x%llx, expected 0x%llx", what, k,
                          (unsigned long long)entries[pt->first_frame + k],
                          (unsigned long long)want);
            }
        } else {
            CHECK_MSG(0, "keep_frames %u: no thread", keep);
        }
        pyf_snapshot_free(s);
    }
    /* past max_depth: the error of a full walk, frames kept as asked */
    rq.keep_frames = 5;
    rq.max_depth = 20;
    pyf_snapshot *s = open_take(&sc, NULL, 0, &rq);
    int ti = s ? fake_find_thread(s, 3001) : -1;
    if (ti >= 0) {
        const pyf_thread *pt = &s->threads[ti];
        CHECK_EQ_INT(pt->error, PYF_EDEPTH);
        CHECK(!(pt->flags & PYF_THREAD_COMPLETE));
        CHECK_EQ_INT(pt->more_frames, 15);
        check_frames(s, ti, &sc.st, 5, ~0u, "keep 5 of max_depth 20");
    } else {
        CHECK_MSG(0, "keep 5 of max_depth 20: no thread");
    }
    done(&sc, s);
}

static void test_unreadable_previous(int minor)
{
    begin(minor, "unreadable previous", g_readv);
    for (int variant = 0; variant < 2; variant++) {
        scene sc;
        build_chain(&sc, minor, 4);
        uint64_t bad;
        if (variant == 0) {
            bad = fake_unmapped_addr(sc.ft);
        } else {
            /* a frame in a region the reader may not access */
            bad = fake_region(sc.ft, 0x7f6600000000ull, 4096);
            fake_add_fault(sc.ft, bad, 4096, PYF_EPERM);
        }
        fake_frame_set_previous(sc.ft, sc.fr[2], bad); /* fr[3] -> fr[2] -> bad */
        int ti;
        pyf_snapshot *s = open_take(&sc, NULL, g_readv, NULL);
        const pyf_thread *th = broken_thread(s, &ti);
        if (th) {
            CHECK_MSG(th->error == (variant == 0 ? PYF_EFAULT : PYF_EPERM),
                      "variant %d: error %s", variant, pyf_error_name(th->error));
            CHECK(!(th->flags & PYF_THREAD_COMPLETE));
            CHECK(fake_thread_detail(&s->threads[ti])[0] != '\0');
            check_frames(s, ti, &sc.st, 2, ~PYF_FRAME_ENTRY_FROM_C, "frames before the fault");
        }
        chain_done(&sc, s);
    }
}

static void test_unreadable_code(int minor)
{
    begin(minor, "unreadable code object", g_readv);
    scene sc;
    build_chain(&sc, minor, 5);
    uint64_t hole = fake_unmapped_addr(sc.ft);
    uint64_t denied = fake_region(sc.ft, 0x7f6700000000ull, 4096);
    fake_add_fault(sc.ft, denied, 4096, PYF_EPERM);
    uint64_t tag = minor >= 14 ? 1 : 0;
    fake_frame_set_executable(sc.ft, sc.fr[1], hole | tag);
    fake_frame_set_executable(sc.ft, sc.fr[3], denied | tag);
    int ti;
    pyf_snapshot *s = open_take(&sc, NULL, g_readv, NULL);
    const pyf_thread *th = broken_thread(s, &ti);
    if (th) {
        CHECK_EQ_INT(th->nframes, 5);
        CHECK_EQ_INT(th->error, 0);
        CHECK(th->flags & PYF_THREAD_COMPLETE);
        for (uint32_t k = 0; k < th->nframes && k < 5; k++) {
            const pyf_frame *f = &s->frames[th->first_frame + k];
            int idx = 4 - (int)k;
            CHECK_EQ_INT(f->frame_addr, sc.fr[idx]);
            if (idx == 1 || idx == 3) {
                CHECK_EQ_STR(f->info.function, "???");
                CHECK_EQ_STR(f->info.filename, "???");
                CHECK(f->info.flags & PYF_FRAME_CODE_UNREADABLE);
                CHECK_EQ_INT(f->info.line, -1);
                CHECK_EQ_INT(f->code_addr, idx == 1 ? hole : denied);
            } else {
                CHECK_EQ_STR(f->info.function, sc.st.f[idx + 0].func);
                CHECK(!(f->info.flags & PYF_FRAME_CODE_UNREADABLE));
            }
        }
    }
    chain_done(&sc, s);
}

/* f_executable that is not a code object, or NULL. */
static void test_odd_executables(int minor)
{
    begin(minor, "non-code executables", g_readv);
    scene sc;
    build_chain(&sc, minor, 5);
    fake_target *ft = sc.ft;
    /* a readable object of another type, with plausible-looking pointers */
    uint64_t dict = fake_alloc(ft, 256);
    fake_w64(ft, dict, 1);
    fake_w64(ft, dict + fake_off(ft, "pyobject.ob_type"), fake_type(ft, "dict"));
    fake_w64(ft, dict + fake_off(ft, "code_object.qualname"), fake_str(ft, "bogus"));
    fake_w64(ft, dict + fake_off(ft, "code_object.filename"), fake_str(ft, "bogus.py"));
    uint64_t tag = minor >= 14 ? 1 : 0;
    fake_frame_set_executable(ft, sc.fr[1], dict | tag);
    fake_frame_set_executable(ft, sc.fr[3], tag); /* NULL (tagged NULL on 3.14+) */
    int ti;
    pyf_snapshot *s = open_take(&sc, NULL, g_readv, NULL);
    const pyf_thread *th = broken_thread(s, &ti);
    if (th) {
        /* fr[4], fr[2], fr[0] must be there, in order; fr[1] and fr[3]
         * either skipped or shown as unreadable code, never as "bogus" */
        int want[] = {4, 2, 0};
        int w = 0;
        for (uint32_t k = 0; k < th->nframes; k++) {
            const pyf_frame *f = &s->frames[th->first_frame + k];
            CHECK_MSG(strcmp(f->info.function, "bogus") != 0, "non-code object decoded as code");
            if (w < 3 && f->frame_addr == sc.fr[want[w]]) {
                CHECK_EQ_STR(f->info.function, sc.st.f[want[w] + 0].func);
                w++;
            } else if (f->frame_addr == sc.fr[1] || f->frame_addr == sc.fr[3]) {
                CHECK(f->info.flags & PYF_FRAME_CODE_UNREADABLE);
                CHECK_EQ_STR(f->info.function, "???");
            }
        }
        CHECK_MSG(w == 3, "only %d of the 3 real frames found", w);
        CHECK_MSG(th->nframes <= 5, "%u frames", th->nframes);
        if (w != 3)
            fake_dump_snapshot(s, stderr);
    }
    done(&sc, s);
}

/* 3.15: only a walk that ends at base_frame is complete. */
static void test_base_frame(void)
{
    begin(15, "base_frame", g_readv);
    for (int variant = 0; variant < 2; variant++) {
        scene sc;
        build_chain(&sc, 15, 3);
        if (variant == 0) {
            /* the chain ends at NULL without visiting the base frame */
            fake_frame_set_previous(sc.ft, sc.entry, 0);
        } else {
            /* the chain ends at some other sentinel-like frame */
            fake_thread *x = fake_add_thread(sc.ft, sc.interp0, 0x3333, 3003, 0);
            fake_frame_set_previous(sc.ft, sc.entry, fake_thread_base_frame(x));
        }
        int ti;
        pyf_snapshot *s = open_take(&sc, NULL, g_readv, NULL);
        const pyf_thread *th = broken_thread(s, &ti);
        if (th) {
            CHECK_MSG(th->error == PYF_ECORRUPT, "variant %d: error %s", variant,
                      pyf_error_name(th->error));
            CHECK(!(th->flags & PYF_THREAD_COMPLETE));
            check_frames(s, ti, &sc.st, -1, ~PYF_FRAME_ENTRY_FROM_C, "frames kept");
        }
        chain_done(&sc, s);
    }
}

/* ---- request: one thread -------------------------------------------------- */
static void test_one_thread(int minor)
{
    begin(minor, "PYF_SNAP_ONE_THREAD", 0);
    scene sc;
    build_scene(&sc, minor);
    pyf_target *t = sc.t = fake_open(sc.ft, NULL, 0);
    pyf_snapshot_request rq;
    memset(&rq, 0, sizeof rq);
    rq.struct_size = sizeof rq;
    rq.flags = PYF_SNAP_ONE_THREAD;
    static const uint64_t tids[] = {1002, 1003, 1001};
    for (int i = 0; i < 3 && t; i++) {
        rq.native_tid = tids[i];
        pyf_snapshot *s = take(t, &rq, 0);
        if (!s)
            continue;
        CHECK_EQ_INT(s->nthreads, 1);
        if (s->nthreads == 1) {
            CHECK_EQ_INT(s->threads[0].native_thread_id, tids[i]);
            const stk *st = tids[i] == 1001 ? &sc.s1 : tids[i] == 1002 ? &sc.s2 : &sc.s3;
            check_frames(s, 0, st, -1, ~PYF_FRAME_ENTRY_FROM_C, "one thread");
            CHECK_EQ_INT(s->nframes, s->threads[0].nframes);
            if (s->threads[0].interp_index < s->ninterps)
                CHECK_EQ_INT(s->interps[s->threads[0].interp_index].id, tids[i] == 1003 ? 1 : 0);
        }
        pyf_snapshot_free(s);
    }
    /* together with a depth limit */
    rq.native_tid = 1001;
    rq.max_depth = 1;
    pyf_snapshot *s = t ? take(t, &rq, 0) : NULL;
    if (s) {
        CHECK_EQ_INT(s->nthreads, 1);
        if (s->nthreads == 1) {
            CHECK_EQ_INT(s->threads[0].error, PYF_EDEPTH);
            check_frames(s, 0, &sc.s1, 1, ~PYF_FRAME_ENTRY_FROM_C, "one thread, depth 1");
        }
    }
    pyf_snapshot_free(s);
    /* a cycle in the thread list after the requested thread: still only
     * that thread */
    {
        uint64_t ts_next = fake_off(sc.ft, "thread_state.next");
        uint64_t saved = fake_r64(sc.ft, fake_thread_addr(sc.t1) + ts_next);
        fake_w64(sc.ft, fake_thread_addr(sc.t1) + ts_next, fake_thread_addr(sc.t2));
        rq.native_tid = 1002;
        rq.max_depth = 0;
        s = t ? take(t, &rq, 0) : NULL;
        if (s) {
            CHECK_MSG(s->nthreads == 1, "one thread requested, %u listed", s->nthreads);
            if (s->nthreads >= 1)
                CHECK_EQ_INT(s->threads[0].native_thread_id, 1002);
            if (s->nthreads != 1)
                fake_dump_snapshot(s, stderr);
        }
        pyf_snapshot_free(s);
        fake_w64(sc.ft, fake_thread_addr(sc.t1) + ts_next, saved);
    }
    /* no such thread */
    rq.native_tid = 999999;
    rq.max_depth = 0;
    s = NULL;
    int rc = t ? pyf_snapshot_take(t, &rq, &s) : PYF_ENOTHREAD;
    CHECK_MSG(rc == PYF_ENOTHREAD || (rc == 0 && s && s->nthreads == 0),
              "unknown tid: rc %s", pyf_error_name(rc));
    done(&sc, s);
}

/* ---- cycles in the thread and interpreter lists ---------------------------- */
static void test_list_cycles(int minor)
{
    begin(minor, "thread/interpreter list cycles", 0);
    for (int variant = 0; variant < 4; variant++) {
        scene sc;
        fake_target *ft = build_scene(&sc, minor);
        uint64_t ts_next = fake_off(ft, "thread_state.next");
        uint64_t in_next = fake_off(ft, "interpreter_state.next");
        switch (variant) {
        case 0: /* t1 (tail) -> t2 (head) -> t1 ... */
            fake_w64(ft, fake_thread_addr(sc.t1) + ts_next, fake_thread_addr(sc.t2));
            break;
        case 1: /* thread pointing at itself */
            fake_w64(ft, fake_thread_addr(sc.t2) + ts_next, fake_thread_addr(sc.t2));
            break;
        case 2: /* interpreter pointing at itself */
            fake_w64(ft, sc.interp1 + in_next, sc.interp1);
            break;
        case 3: /* interp0 -> interp1 -> interp0 */
            fake_w64(ft, sc.interp0 + in_next, sc.interp1);
            break;
        }
        sc.t = fake_open(ft, NULL, 0);
        pyf_snapshot *s = NULL;
        fake_watchdog(20, "list cycle");
        int rc = sc.t ? pyf_snapshot_take(sc.t, NULL, &s) : PYF_EINVAL;
        fake_watchdog(0, NULL);
        CHECK_MSG(rc == 0 || (rc < 0 && fake_known_error(rc)), "variant %d: rc %d", variant, rc);
        if (rc == 0) {
            const char *why = fake_check_snapshot(s);
            CHECK_MSG(why == NULL, "variant %d: %s", variant, why);
            CHECK(s->ninterps <= PYF_DEFAULT_MAX_INTERPRETERS);
            CHECK(s->nthreads <= s->ninterps * PYF_DEFAULT_MAX_THREADS);
            /* a cycle is not a reason to repeat entries many times */
            CHECK_MSG(s->nthreads <= 8, "variant %d: %u threads listed", variant, s->nthreads);
            CHECK_MSG(s->ninterps <= 4, "variant %d: %u interpreters listed", variant,
                      s->ninterps);
            /* the threads that were reachable are all there */
            if (variant == 0)
                CHECK(fake_find_thread(s, 1001) >= 0);
            if (variant < 2)
                CHECK(fake_find_thread(s, 1002) >= 0);
            if (variant >= 2)
                CHECK(fake_find_thread(s, 1003) >= 0);
        }
        done(&sc, s);
    }
}

/* ---- unreadable interpreters ------------------------------------------------ */
static int has_hex(const char *msg, uint64_t addr)
{
    char lo[32], up[32];
    snprintf(lo, sizeof lo, "%llx", (unsigned long long)addr);
    snprintf(up, sizeof up, "%llX", (unsigned long long)addr);
    return strstr(msg, lo) != NULL || strstr(msg, up) != NULL;
}

static void test_unreadable_interp(int minor)
{
    begin(minor, "unreadable interpreter", 0);
    for (int variant = 0; variant < 2; variant++) {
        scene sc;
        fake_target *ft = build_scene(&sc, minor);
        uint64_t bad;
        if (variant == 0) {
            bad = fake_unmapped_addr(ft);
            fake_w64(ft, fake_runtime_addr(ft) + fake_off(ft, "runtime_state.interpreters_head"),
                     bad);
        } else {
            /* the second interpreter of the list */
            bad = sc.interp0;
            fake_add_fault(ft, bad, fake_off(ft, "interpreter_state.size"), PYF_EFAULT);
        }
        pyf_target *t = sc.t = fake_open(ft, NULL, 0);
        pyf_snapshot *s = (pyf_snapshot *)(uintptr_t)1;
        int rc = t ? pyf_snapshot_take(t, NULL, &s) : PYF_EINVAL;
        CHECK_MSG(rc == PYF_EFAULT, "variant %d: rc %s", variant, pyf_error_name(rc));
        if (rc != 0)
            CHECK(s == NULL || s == (pyf_snapshot *)(uintptr_t)1);
        if (t) {
            const char *le = fake_last_detail(t);
            CHECK(le != NULL);
            if (le) {
                CHECK_MSG(has_hex(le, bad), "last error '%s' lacks address 0x%llx", le,
                          (unsigned long long)bad);
                CHECK_MSG(strstr(le, "interp") != NULL, "last error '%s' does not say what", le);
            }
        }
        done(&sc, rc == 0 ? s : NULL);
    }
}

/* ---- nested generators ------------------------------------------------------ */
static void test_generators(int minor)
{
    begin(minor, "generator frames", 0);
    scene sc;
    image(&sc, minor);
    fake_target *ft = sc.ft;
    code_info mod = mkcode(ft, "/g/m.py", "<module>", 1, L_MOD, NL(L_MOD));
    code_info g1 = mkcode(ft, "/g/m.py", "outer_gen", 40, L_GEN, NL(L_GEN));
    code_info g2 = mkcode(ft, "/g/m.py", "inner_gen", 40, L_GEN, NL(L_GEN));
    code_info h = mkcode(ft, "/g/m.py", "helper", 50, L_H, NL(L_H));
    fake_thread *t1 = fake_add_thread(ft, sc.interp0, 0x10, 4001, 0);
    entry(t1, &sc.s1, -1);
    push(t1, &sc.s1, &mod, 0);
    push_gen(t1, &sc.s1, &g1, 1);
    push_gen(t1, &sc.s1, &g2, 2); /* yield from */
    push(t1, &sc.s1, &h, 1);
    fake_thread *t2 = fake_add_thread(ft, sc.interp0, 0x20, 4002, 0);
    entry(t2, &sc.s2, -1);
    push(t2, &sc.s2, &mod, 4);
    entry(t2, &sc.s2, -1); /* next() from C */
    push_gen(t2, &sc.s2, &g1, 0);
    pyf_snapshot *s = open_take(&sc, NULL, 0, NULL);
    if (s) {
        int a = fake_find_thread(s, 4001), b = fake_find_thread(s, 4002);
        check_frames(s, a, &sc.s1, -1, ~PYF_FRAME_ENTRY_FROM_C, "nested generators");
        check_frames(s, b, &sc.s2, -1, ~PYF_FRAME_ENTRY_FROM_C, "generator innermost");
        if (a >= 0)
            CHECK(s->threads[a].flags & PYF_THREAD_COMPLETE);
        if (b >= 0)
            CHECK(s->threads[b].flags & PYF_THREAD_COMPLETE);
    }
    done(&sc, s);
}

/* ---- the owner of a generator's frame, by its code's co_flags ---------------- */
static void test_generator_kinds(int minor)
{
    begin(minor, "generator, coroutine and async generator frames", 0);
    scene sc;
    image(&sc, minor);
    fake_target *ft = sc.ft;
    static const struct {
        const char *func;
        uint32_t co_flags, owned; /* owned: -1 = a frame the thread owns */
    } kinds[] = {
        {"main", FAKE_CO_COROUTINE, PYF_FRAME_GENERATOR | PYF_FRAME_COROUTINE},
        {"ticks", FAKE_CO_ASYNC_GENERATOR, PYF_FRAME_GENERATOR | PYF_FRAME_ASYNC_GENERATOR},
        {"numbers", FAKE_CO_GENERATOR, PYF_FRAME_GENERATOR},
        /* @types.coroutine: still a generator object */
        {"sleep0", FAKE_CO_GENERATOR | FAKE_CO_ITERABLE_COROUTINE, PYF_FRAME_GENERATOR},
        /* bits CPython never gives a generator's code: unknown */
        {"odd", 0, PYF_FRAME_GENERATOR},
        /* a coroutine's code in a frame of the thread (before
         * RETURN_GENERATOR moved it into the coroutine): no owner */
        {"starting", FAKE_CO_COROUTINE, UINT32_MAX},
    };
    code_info mod = mkcode(ft, "/k/m.py", "<module>", 1, L_MOD, NL(L_MOD));
    fake_thread *t1 = fake_add_thread(ft, sc.interp0, 0x10, 4101, 0);
    entry(t1, &sc.s1, -1);
    push(t1, &sc.s1, &mod, 0);
    code_info ci[sizeof kinds / sizeof kinds[0]];
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        ci[i] = mkcode(ft, "/k/m.py", kinds[i].func, 40, L_GEN, NL(L_GEN));
        fake_code_set_flags(ft, ci[i].addr, kinds[i].co_flags);
        if (kinds[i].owned == UINT32_MAX) {
            push(t1, &sc.s1, &ci[i], 1);
        } else {
            uint64_t f = fake_gen_frame(t1, ci[i].addr, 1, NULL);
            expect_frame(&sc.s1, &ci[i], f, 1, kinds[i].owned);
        }
    }
    pyf_snapshot *s = open_take(&sc, NULL, 0, NULL);
    /* again: the owner comes from the cached decode of each code object */
    pyf_snapshot *s2 = s ? take_again(&sc, NULL) : NULL;
    for (int round = 0; round < 2; round++) {
        const pyf_snapshot *snap = round == 0 ? s : s2;
        if (snap == NULL)
            continue;
        int a = fake_find_thread(snap, 4101);
        check_frames(snap, a, &sc.s1, -1, ~PYF_FRAME_ENTRY_FROM_C,
                     round == 0 ? "owners" : "owners, cached");
        pyf_frame_table tb = {.struct_size = sizeof tb};
        CHECK(pyf_snapshot_table(snap, &tb) == 0);
        /* the records carry them too: a frame is its key's record */
        for (uint32_t i = 0; a >= 0 && i < snap->threads[a].nframes; i++) {
            uint32_t k = tb.frame_keys[snap->threads[a].first_frame + i];
            CHECK_EQ_INT(tb.records[tb.keys[k].record].info.flags,
                         snap->frames[snap->threads[a].first_frame + i].info.flags);
        }
    }
    pyf_snapshot_free(s2);
    done(&sc, s);
}

/* ---- max_threads -------------------------------------------------------- */
static void test_max_threads(int minor)
{
    begin(minor, "max_threads", 0);
    scene sc;
    image(&sc, minor);
    code_info mod = mkcode(sc.ft, "/m.py", "<module>", 1, L_MOD, NL(L_MOD));
    for (int i = 0; i < 5; i++) {
        fake_thread *th =
            fake_add_thread(sc.ft, sc.interp0, 0x100 + (uint64_t)i, 6001 + (uint64_t)i, 1);
        fake_push_frame(th, mod.addr, 0);
    }
    pyf_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_threads = 2;
    pyf_snapshot *s = open_take(&sc, &o, 0, NULL);
    if (s) {
        CHECK_EQ_INT(s->ninterps, 1);
        /* at most 2 threads are walked; the truncation may be shown by one
         * extra entry carrying PYF_EDEPTH and no frames */
        uint32_t real = 0;
        for (uint32_t i = 0; i < s->nthreads; i++) {
            if (s->threads[i].error == 0 && s->threads[i].nframes == 1) {
                real++;
            } else {
                CHECK_EQ_INT(s->threads[i].error, PYF_EDEPTH);
                CHECK_EQ_INT(s->threads[i].nframes, 0);
            }
        }
        CHECK_MSG(real >= 1 && real <= 2, "%u threads walked with max_threads 2", real);
        CHECK_MSG(s->nthreads <= 3, "%u threads listed with max_threads 2", s->nthreads);
    }
    pyf_snapshot_free(s);
    s = open_take(&sc, NULL, 0, NULL);
    if (s)
        CHECK_EQ_INT(s->nthreads, 5);
    done(&sc, s);
}

/* ---- a code object freed and another allocated at the same address ------ */
static void test_code_reuse(int minor)
{
    begin(minor, "code address reuse", 0);
    scene sc;
    image(&sc, minor);
    fake_target *ft = sc.ft;
    uint64_t in = sc.interp0;
    code_info c = mkcode(ft, "/old.py", "old_name", 10, L_F, NL(L_F));
    fake_thread *th = fake_add_thread(ft, in, 0x42, 6101, 1);
    uint64_t fr = fake_push_frame(th, c.addr, 5);
    pyf_snapshot *s = open_take(&sc, NULL, 0, NULL);
    if (s && s->nframes == 1) {
        CHECK_EQ_STR(s->frames[0].info.function, "old_name");
        CHECK_EQ_INT(s->frames[0].info.line, 12);
    }
    pyf_snapshot_free(s);
    /* the new code object: other names, other line table, same address */
    static const fake_loc L_NEW[] = {{8, 70, 70, 1, 2}};
    uint8_t lt[32];
    size_t n = fake_encode_linetable(70, L_NEW, 1, lt, sizeof lt);
    fake_w64(ft, c.addr + fake_off(ft, "code_object.qualname"), fake_str(ft, "new_name"));
    fake_w64(ft, c.addr + fake_off(ft, "code_object.name"), fake_str(ft, "new_name"));
    fake_w64(ft, c.addr + fake_off(ft, "code_object.filename"), fake_str(ft, "/new.py"));
    fake_w64(ft, c.addr + fake_off(ft, "code_object.linetable"), fake_bytes(ft, lt, n));
    fake_w32(ft, c.addr + fake_off(ft, "code_object.firstlineno"), 70);
    if (minor >= 14) { /* code_dealloc bumps the interpreter's generation */
        uint64_t gen_at = in + fake_off(ft, "interpreter_state.code_object_generation");
        fake_w64(ft, gen_at, fake_r64(ft, gen_at) + 1);
    }
    (void)fr;
    s = take_again(&sc, NULL);
    if (s && s->nframes == 1) {
        CHECK_EQ_STR(s->frames[0].info.function, "new_name");
        CHECK_EQ_STR(s->frames[0].info.filename, "/new.py");
        CHECK_EQ_INT(s->frames[0].info.line, 70);
        CHECK_EQ_INT(s->frames[0].info.column, 1);
    }
    done(&sc, s);
}

/* ---- deep stack and read budget -------------------------------------------- */
#define DEEP 5000
#define NCODES 10

static void test_deep(int minor, int with_readv)
{
    begin(minor, "deep stack", with_readv);
    scene sc;
    image(&sc, minor);
    fake_target *ft = sc.ft;
    static const fake_loc L[] = {{2, 100, 100, 0, 4}, {6, 101, 101, 4, 40},
                                 {4, 103, 105, 8, 2}};
    code_info codes[NCODES];
    char names[NCODES][32];
    for (int i = 0; i < NCODES; i++) {
        snprintf(names[i], sizeof names[i], "mod.level_%d", i);
        codes[i] = mkcode(ft, "/deep/recursion.py", names[i], 100, L, NL(L));
    }
    fake_thread *th = fake_add_thread(ft, sc.interp0, 0x77, 5001, 1);
    uint64_t *frames = calloc(DEEP, sizeof *frames);
    for (int i = 0; i < DEEP; i++) {
        fake_set_exec_tag(ft, (unsigned)(i & 3));
        frames[i] = fake_push_frame(th, codes[i % NCODES].addr, i % 12);
    }
    size_t nchunks = fake_thread_nchunks(th);
    CHECK(nchunks >= 3);

    pyf_target *t = sc.t = fake_open(ft, NULL, with_readv);
    if (t) {
        pyf_target_reset_stats(t);
        fake_reset_counters(ft);
        pyf_snapshot *s = take(t, NULL, 0);
        pyf_stats st1;
        pyf_target_stats(t, &st1);
        fake_counters fc = fake_get_counters(ft);
        if (s) {
            CHECK_EQ_INT(s->nthreads, 1);
            CHECK_EQ_INT(s->nframes, DEEP);
            if (s->nthreads == 1) {
                const pyf_thread *pt = &s->threads[0];
                CHECK_EQ_INT(pt->nframes, DEEP);
                CHECK(pt->flags & PYF_THREAD_COMPLETE);
                CHECK_EQ_INT(pt->error, 0);
                int bad = 0;
                for (uint32_t k = 0; k < pt->nframes && bad < 5; k++) {
                    const pyf_frame *f = &s->frames[pt->first_frame + k];
                    int i = DEEP - 1 - (int)k;
                    fake_loc l;
                    int have = fake_loc_at(L, NL(L), i % 12, &l) == 0;
                    if (f->frame_addr != frames[i] || strcmp(f->info.function, names[i % NCODES]) ||
                        strcmp(f->info.filename, "/deep/recursion.py") ||
                        f->info.line != (have ? l.line : -1) ||
                        f->info.end_column != (have ? l.end_col : -1)) {
                        CHECK_MSG(0, "frame %u: %s line %d end_col %d", k, f->info.function,
                                  f->info.line, f->info.end_column);
                        bad++;
                    }
                }
            }
        }
        pyf_snapshot_free(s);
        uint64_t bound = nchunks + 4 * NCODES + 16;
        fprintf(stderr, "   reads: %llu calls (%llu ranges, %llu bytes); chunks %zu, "
                "bound %llu; chunk_frames %llu direct_frames %llu\n",
                (unsigned long long)st1.read_calls, (unsigned long long)st1.read_ranges,
                (unsigned long long)st1.bytes_read, nchunks, (unsigned long long)bound,
                (unsigned long long)st1.chunk_frames, (unsigned long long)st1.direct_frames);
        CHECK_MSG(st1.read_calls <= bound, "%llu reader calls for a %d-frame stack (bound %llu)",
                  (unsigned long long)st1.read_calls, DEEP, (unsigned long long)bound);
        CHECK_EQ_INT(st1.read_calls, fc.calls);
        CHECK_EQ_INT(st1.read_ranges, fc.ranges);
        CHECK_EQ_INT(st1.bytes_read, fc.bytes);
        CHECK_EQ_INT(st1.read_failures, 0);
        CHECK_EQ_INT(st1.frames, DEEP);
        CHECK_EQ_INT(st1.snapshots, 1);
        CHECK_EQ_INT(st1.code_cache_misses, NCODES);

        /* second snapshot: code objects come from the cache */
        pyf_target_reset_stats(t);
        s = take(t, NULL, 0);
        pyf_stats st2;
        pyf_target_stats(t, &st2);
        if (s)
            CHECK_EQ_INT(s->nframes, DEEP);
        pyf_snapshot_free(s);
        CHECK_MSG(st2.bytes_read < st1.bytes_read, "second snapshot read %llu bytes, first %llu",
                  (unsigned long long)st2.bytes_read, (unsigned long long)st1.bytes_read);
        CHECK(st2.read_calls <= st1.read_calls);
        CHECK(st2.code_cache_hits > 0);
        CHECK_EQ_INT(st2.code_cache_misses, 0);

        /* after a flush everything is read again */
        pyf_target_flush(t);
        pyf_target_reset_stats(t);
        s = take(t, NULL, 0);
        pyf_stats st3;
        pyf_target_stats(t, &st3);
        pyf_snapshot_free(s);
        CHECK_EQ_INT(st3.code_cache_misses, NCODES);
    }
    free(frames);
    done(&sc, NULL);
}

int main(void)
{
    static const int minors[] = {13, 14, 15};
    for (int i = 0; i < 3; i++) {
        int m = minors[i];
        test_basic(m, 0);
        test_basic(m, 1);
        test_entry_flag(m);
        test_idle_threads(m);
        test_depth(m);
        test_keep_frames(m);
        for (g_readv = 0; g_readv < 2; g_readv++) {
            test_cycles(m);
            test_unreadable_previous(m);
            test_unreadable_code(m);
            test_odd_executables(m);
        }
        g_readv = 0;
        test_one_thread(m);
        test_list_cycles(m);
        test_unreadable_interp(m);
        test_generators(m);
        test_generator_kinds(m);
        test_max_threads(m);
        test_code_reuse(m);
        test_deep(m, 0);
        test_deep(m, 1);
    }
    for (g_readv = 0; g_readv < 2; g_readv++)
        test_base_frame();
    return check_end();
}
