/*
 * test_heap_walk.c - the walk of CPython 3.8, 3.9 and 3.10's heap frames
 * (PyFrameObjects chained by f_back, native/src/frames_heap.c) on
 * synthetic images (fake_new_heap), through pyf_target_open and
 * pyf_snapshot_take.
 *
 * - The version read from sys.hexversion (3.10.13, 3.9.18, 3.8.18); a
 *   3-frame stack read exactly: co_name, co_filename, the line of each
 *   frame's instruction in the version's line table (co_lnotab, 3.10's
 *   co_linetable; the lines expected are the runs the tables were written
 *   from), a frame not yet started at its first line.
 * - A generator's, coroutine's or async generator's frame flagged as the
 *   3.11+ walk flags it (a 3.13 image's).
 * - A running process changing between the walk's first read of the chain
 *   and its second (fake_on_read, at the first read of the bottom frame,
 *   so the change lands after the frames above it were read): a caller
 *   gone to the free list, a caller replaced in place by another
 *   function's frame, the top's instruction moving (the newer one shown,
 *   not read again), the thread state's frame moving (the top returned,
 *   or called another); then one field of the caller alone, each what one
 *   comparison of the second read sees (refcount, f_back, state,
 *   instruction, type, generator; its memory unmapped).  Each runs cold
 *   and with the code objects known from a first snapshot (a profiler's
 *   next sample: code.c then reads no frame again), as a running process
 *   and, as a control, as a stopped one (read once, as a walk without the
 *   second read would be): the control shows the mix, the running process
 *   never does.
 * - A caller under the top that does not run (returned, not started, at
 *   a yield) never shown; 3.10's unwinding caller is running.
 * - Hostile memory: a cycle in f_back, an unaligned f_back, an object
 *   that is not a frame, a refcount of 0, more frames than max_depth,
 *   unreadable frame memory, a long chain looping back: named errors, no
 *   frame past the bad link shown (none are today), no hang.  Past max_depth the 3.11+ walk
 *   keeps the frames it read (test_walk.c): here none are (an expected
 *   failure, reported, not counted).
 *
 * White-box only to take the reader's stall timing off (t->io.stall_ns),
 * as test_live_change.c does: a loaded machine's stalls add no reads.
 */
#include "../../native/src/api.h"
#include "../../native/src/reads.h"
#include "../../native/src/target.h"
#include "fake_target.h"

#include <string.h>

#define NL(a) (sizeof(a) / sizeof((a)[0]))

/* An allocator's free-list link where a freed frame's f_back was. */
#define FREE_LINK 0x00007f3a12345670ULL

/* The three functions of the stack, bottom first, and their lines: long
 * runs (more than 255 bytes), a line going back, a jump of more than 127
 * lines (pairs split as CPython's assemblers split them). */
static const fake_loc L_MAIN[] = {{3, 1, 1, -1, -1}, {4, 2, 2, -1, -1}, {2, 5, 5, -1, -1}};
static const fake_loc L_MID[] = {
    {2, 10, 10, -1, -1}, {3, 12, 12, -1, -1}, {300, 14, 14, -1, -1}, {1, 11, 11, -1, -1}};
static const fake_loc L_TOP[] = {{1, 20, 20, -1, -1}, {2, 25, 25, -1, -1},
                                 {2, 160, 160, -1, -1}, {3, 21, 21, -1, -1}};
static const fake_loc L_OTHER[] = {{4, 40, 40, -1, -1}, {400, 41, 41, -1, -1}};

/* A 3.<minor> image whose thread runs main -> mid -> top. */
typedef struct image {
    int minor;
    fake_target *ft;
    fake_thread *th;
    uint64_t main_code, mid_code, top_code, other_code;
    uint64_t main_f, mid_f, top_f;
} image;

enum { MAIN_AT = 7, MID_AT = 305, MID_LATER = 3, TOP_AT = 4, TOP_LATER = 6 };

static image build(int minor)
{
    image im = {.minor = minor};
    im.ft = fake_new_heap(minor);
    uint64_t interp = fake_add_interp(im.ft, 0);
    im.th = fake_add_thread(im.ft, interp, 0x7f00aa001700ull, 0, 0);
    im.main_code = fake_heap_code(im.ft, "/app/main.py", "<module>", 1, L_MAIN, NL(L_MAIN));
    im.mid_code = fake_heap_code(im.ft, "/app/mid.py", "mid", 10, L_MID, NL(L_MID));
    im.top_code = fake_heap_code(im.ft, "/app/top.py", "top", 20, L_TOP, NL(L_TOP));
    im.other_code = fake_heap_code(im.ft, "/app/other.py", "other", 40, L_OTHER, NL(L_OTHER));
    im.main_f = fake_heap_push(im.th, im.main_code, MAIN_AT);
    im.mid_f = fake_heap_push(im.th, im.mid_code, MID_AT);
    im.top_f = fake_heap_push(im.th, im.top_code, TOP_AT);
    return im;
}

/* The line CPython gives code unit idx of a function of locs (-1: its
 * first line, before it started). */
static int line_of(const fake_loc *locs, size_t n, int firstlineno, int idx)
{
    fake_loc found;
    if (idx < 0)
        return firstlineno;
    REQUIRE(fake_loc_at(locs, n, idx, &found) == 0);
    return found.line;
}

/* A target over the image's reader, which says it reads a running process
 * (live) or a stopped one: the checks follow that. */
static pyf_target *open_as(fake_target *ft, int live, const pyf_options *opts)
{
    pyf_reader r = fake_reader(ft, 1);
    pyf_target *t = NULL;
    char err[256] = "";
    r.reads = live ? PYF_READS_RUNNING : PYF_READS_STOPPED;
    int rc = fake_open_detail(&r, fake_runtime_addr(ft), opts, &t, err, sizeof err);
    CHECK_MSG(rc == PYF_OK, "open: %s (%s)", pyf_error_name(rc), err);
    if (rc != PYF_OK)
        return NULL;
    t->io.stall_ns = 0;
    return t;
}

/* A snapshot of the image's one thread. */
static pyf_snapshot *take(pyf_target *t)
{
    pyf_snapshot *s = fake_take(t);
    if (s != NULL)
        CHECK_EQ_INT(s->nthreads, 1);
    return s;
}

/* Whether any frame of s runs function. */
static int shows(const pyf_snapshot *s, const char *function)
{
    for (uint32_t i = 0; s != NULL && i < s->nframes; i++)
        if (strcmp(s->frames[i].info.function, function) == 0)
            return 1;
    return 0;
}

/* Frame k (top first) of the snapshot's one thread, NULL past them. */
static const pyf_frame *frame_at(const pyf_snapshot *s, uint32_t k)
{
    if (s == NULL || s->nthreads < 1 || k >= s->threads[0].nframes)
        return NULL;
    return &s->frames[s->threads[0].first_frame + k];
}

/* Frame k is function in filename at line, with flags (and entered from
 * C: on 3.8-3.10 every frame runs in an eval call of its own). */
static void check_frame(const pyf_snapshot *s, uint32_t k, uint64_t addr, const char *function,
                        const char *filename, int line, uint32_t flags)
{
    const pyf_frame *f = frame_at(s, k);
    CHECK_MSG(f != NULL, "no frame %u", k);
    if (f == NULL)
        return;
    CHECK_ADDR(f->frame_addr, addr);
    CHECK_EQ_STR(f->info.function, function);
    CHECK_EQ_STR(f->info.filename, filename);
    CHECK_EQ_INT(f->info.line, line);
    CHECK_EQ_INT(f->info.flags, flags | PYF_FRAME_ENTRY_FROM_C);
}

/* The thread was read: no error (else its detail printed). */
static void no_error(const pyf_thread *th)
{
    CHECK_MSG(th->error == 0, "thread error %s: %s", pyf_error_name(th->error),
              fake_thread_detail(th));
}

static void begin(int minor, const char *what, int live)
{
    static char name[208]; /* check_begin keeps it */
    snprintf(name, sizeof name, "3.%d: %s (%s)", minor, what,
             live ? "running" : "stopped: control");
    check_begin(name);
}

static void finish(pyf_snapshot *s, pyf_target *t, image *im)
{
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(im->ft);
}

/* ==== 1. the version and a stack read exactly ============================ */

static void read_exactly(int minor, int live, int started)
{
    begin(minor, started ? "version and a 3-frame stack" : "a top frame not yet started",
          live);
    image im = build(minor);
    int top_at = started ? TOP_AT : -1;
    if (!started)
        fake_heap_set_state(im.ft, im.top_f, FAKE_HFRAME_CREATED);
    pyf_target *t = open_as(im.ft, live, NULL);
    REQUIRE(t != NULL);
    pyf_python_info py;
    REQUIRE(pyf_target_python(t, &py) == PYF_OK);
    const uint64_t hex[] = {[8] = 0x030812f0, [9] = 0x030912f0, [10] = 0x030a0df0};
    const uint32_t micro[] = {[8] = 18, [9] = 18, [10] = 13};
    CHECK_ADDR(py.hexversion, hex[minor]);
    CHECK_EQ_INT(py.major, 3);
    CHECK_EQ_INT(py.minor, (uint32_t)minor);
    CHECK_EQ_INT(py.micro, micro[minor]);
    CHECK_EQ_INT(py.level, 0xF);
    CHECK_EQ_INT(py.free_threaded, 0);

    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    no_error(&s->threads[0]);
    CHECK_EQ_INT(s->threads[0].nframes, 3);
    CHECK(s->threads[0].flags & PYF_THREAD_COMPLETE);
    check_frame(s, 0, im.top_f, "top", "/app/top.py", line_of(L_TOP, NL(L_TOP), 20, top_at), 0);
    check_frame(s, 1, im.mid_f, "mid", "/app/mid.py", line_of(L_MID, NL(L_MID), 10, MID_AT), 0);
    check_frame(s, 2, im.main_f, "<module>", "/app/main.py",
                line_of(L_MAIN, NL(L_MAIN), 1, MAIN_AT), 0);
    /* the lines asked for are not the first ones: the tables were read */
    CHECK_EQ_INT(line_of(L_MID, NL(L_MID), 10, MID_AT), 11);
    CHECK_EQ_INT(line_of(L_MAIN, NL(L_MAIN), 1, MAIN_AT), 5);
    pyf_stats st;
    pyf_target_stats(t, &st);
    CHECK_EQ_INT(st.retried_walks, 0);
    if (s->threads[0].nframes != 3)
        fake_dump_snapshot(s, stderr);
    finish(s, t, &im);
}

/* Every line of a function, at each of its code units, and before it ran:
 * the whole of each table decoded as it was written. */
static void every_line(int minor)
{
    begin(minor, "every code unit's line", 0);
    image im = build(minor);
    pyf_target *t = open_as(im.ft, 0, NULL);
    REQUIRE(t != NULL);
    const struct {
        const fake_loc *locs;
        size_t n;
        int first;
        uint64_t frame;
    } fns[] = {{L_TOP, NL(L_TOP), 20, im.top_f}, {L_MID, NL(L_MID), 10, im.mid_f}};
    for (size_t k = 0; k < NL(fns); k++) {
        int units = 0;
        for (size_t i = 0; i < fns[k].n; i++)
            units += fns[k].locs[i].ncu;
        for (int idx = -1; idx < units; idx++) {
            fake_heap_set_lasti(im.ft, fns[k].frame, idx);
            pyf_target_flush(t);
            pyf_snapshot *s = take(t);
            const pyf_frame *f = frame_at(s, (uint32_t)k);
            int want = line_of(fns[k].locs, fns[k].n, fns[k].first, idx);
            CHECK_MSG(f != NULL && f->info.line == want, "frame %zu at code unit %d: line %d, "
                      "want %d", k, idx, f != NULL ? f->info.line : -2, want);
            pyf_snapshot_free(s);
        }
        fake_heap_set_lasti(im.ft, fns[k].frame, k == 0 ? TOP_AT : MID_AT);
    }
    finish(NULL, t, &im);
}

/* ==== 2. generators ===================================================== */

/* The flags the 3.11+ walk gives a frame of a generator object running
 * code with co_flags (a 3.13 image's, fake_gen_frame). */
static uint32_t flags_313(uint32_t co_flags)
{
    static const fake_loc L[] = {{4, 7, 7, 4, 20}};
    fake_target *ft = fake_new(13);
    fake_thread *th = fake_add_thread(ft, fake_add_interp(ft, 0), 0x1000, 4242, 1);
    uint64_t code = fake_code(ft, "/app/gen.py", "produce", 7, L, NL(L));
    fake_code_set_flags(ft, code, co_flags);
    fake_gen_frame(th, code, 2, NULL);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    pyf_snapshot *s = take(t);
    const pyf_frame *f = frame_at(s, 0);
    CHECK_MSG(f != NULL, "3.13: no frame");
    /* its entry from C is the 3.13 image's (an entry frame under it) */
    uint32_t flags = f != NULL ? f->info.flags & ~PYF_FRAME_ENTRY_FROM_C : 0;
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(ft);
    return flags;
}

static void generator(int minor, uint32_t co_flags, uint32_t want)
{
    begin(minor, co_flags == FAKE_CO_GENERATOR   ? "a generator's frame"
                 : co_flags == FAKE_CO_COROUTINE ? "a coroutine's frame"
                                                 : "an async generator's frame",
          0);
    CHECK_EQ_INT(flags_313(co_flags), want);
    image im = build(minor);
    uint64_t gen_code = fake_heap_code(im.ft, "/app/gen.py", "produce", 30, L_OTHER,
                                       NL(L_OTHER));
    fake_code_set_flags(im.ft, gen_code, co_flags);
    uint64_t g = fake_heap_gen_push(im.th, gen_code, 5, NULL);
    pyf_target *t = open_as(im.ft, 0, NULL);
    REQUIRE(t != NULL);
    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    CHECK_EQ_INT(s->threads[0].nframes, 4);
    check_frame(s, 0, g, "produce", "/app/gen.py", 41, want);
    check_frame(s, 1, im.top_f, "top", "/app/top.py", line_of(L_TOP, NL(L_TOP), 20, TOP_AT), 0);
    finish(s, t, &im);
}

/* ==== 3. a running process changing between the two reads =============== */

typedef enum change {
    CALLER_FREED,    /* mid to the free list: refcount 0, f_back its link */
    CALLER_REPLACED, /* mid's frame object now another function's */
    TOP_MOVED,       /* top runs on to a later instruction */
    TOP_RETURNED,    /* top returned (its object kept): the thread's frame mid */
    TOP_CALLED,      /* top called other: the thread's frame a new one */
    /* one field of mid alone, each what one comparison of the two reads
     * sees: */
    CALLER_DYING,    /* its refcount 0 */
    CALLER_RELINKED, /* its f_back another running frame */
    CALLER_STOPPED,  /* it returned */
    CALLER_MOVED,    /* at another instruction (mid called again, its
                      * zombie frame and top's frame reused) */
    CALLER_RETYPED,  /* its memory another object's (a dict's) */
    CALLER_GEN,      /* a generator's frame now */
    CALLER_UNMAPPED, /* its memory unmapped */
} change;

typedef struct race {
    image *im;
    change what;
    uint64_t new_top, new_back;
} race;

static void move_on(fake_target *ft, void *arg)
{
    race *r = arg;
    image *im = r->im;
    r->im = NULL; /* made */
    switch (r->what) {
    case CALLER_FREED:
        fake_heap_set_state(ft, im->mid_f, FAKE_HFRAME_RETURNED);
        fake_w64(ft, im->mid_f, 0);
        fake_w64(ft, im->mid_f + fake_off(ft, "frame_object.back"), FREE_LINK);
        break;
    case CALLER_REPLACED: /* running, at the same instruction, same caller */
        fake_w64(ft, im->mid_f + fake_off(ft, "frame_object.code"), im->other_code);
        break;
    case TOP_MOVED:
        fake_heap_set_lasti(ft, im->top_f, TOP_LATER);
        break;
    case TOP_RETURNED:
        fake_heap_set_state(ft, im->top_f, FAKE_HFRAME_RETURNED);
        fake_thread_set_current(im->th, im->mid_f);
        break;
    case TOP_CALLED:
        r->new_top = fake_heap_push(im->th, im->other_code, 2);
        break;
    case CALLER_DYING:
        fake_w64(ft, im->mid_f, 0);
        break;
    case CALLER_RELINKED:
        r->new_back = fake_heap_frame(ft, im->other_code, 2, 0);
        fake_w64(ft, im->mid_f + fake_off(ft, "frame_object.back"), r->new_back);
        break;
    case CALLER_STOPPED:
        fake_heap_set_state(ft, im->mid_f, FAKE_HFRAME_RETURNED);
        break;
    case CALLER_MOVED:
        fake_heap_set_lasti(ft, im->mid_f, MID_LATER);
        break;
    case CALLER_RETYPED:
        fake_w64(ft, im->mid_f + fake_off(ft, "pyobject.ob_type"), fake_type(ft, "dict"));
        break;
    case CALLER_UNMAPPED:
        fake_add_fault(ft, im->mid_f, 8, PYF_EFAULT);
        break;
    case CALLER_GEN: {
        uint64_t g = fake_obj(ft, fake_type(ft, "generator"), fake_off(ft, "gen_object.size"));
        fake_w64(ft, im->mid_f + fake_off(ft, "frame_object.gen"), g);
        break;
    }
    }
}

static const char *const change_names[] = {
    "a caller freed between the reads",
    "a caller replaced in place between the reads",
    "the top's instruction moved between the reads",
    "the top returned between the reads",
    "the top called another function between the reads",
    "a caller's refcount 0 between the reads",
    "a caller's f_back changed between the reads",
    "a caller returned between the reads",
    "a caller's instruction changed between the reads",
    "a caller's memory another object's between the reads",
    "a caller a generator's frame between the reads",
    "a caller's memory unmapped between the reads",
};

/* warm: the change comes in the target's second snapshot, its code
 * objects known from the first (a profiler's next sample), which read them
 * whole: only the walk's own checks see that the frames changed. */
static void live_change(int minor, change what, int live, int warm, int head)
{
    char name[160];
    snprintf(name, sizeof name, "%s%s%s", change_names[what],
             warm ? ", code objects known" : "",
             head ? ", the callers read twice" : ", every frame at the moment");
    begin(minor, name, live);
    image im = build(minor);
    pyf_target *t = open_as(im.ft, live, NULL);
    REQUIRE(t != NULL);
    /* head 1: the top alone is read at the walk's moment (with the thread
     * state's frame before and after it), the callers before the moment
     * and after it; else every frame of this short stack at the moment */
    t->walk.heap_head = head ? 1 : 0;
    /* warm: two snapshots before, so that the next reads the frames
     * where they were (spans, running) rather than one by one */
    for (int i = 0; i < 2 * warm; i++) {
        pyf_snapshot *s0 = take(t);
        REQUIRE(s0 != NULL);
        CHECK_EQ_INT(s0->threads[0].nframes, 3);
        pyf_snapshot_free(s0);
        pyf_target_reset_stats(t);
    }
    race r = {&im, what, 0, 0};
    bool top_change = what == TOP_MOVED || what == TOP_RETURNED || what == TOP_CALLED;
    if (warm && live)
        /* the walk reads where the frames were last time whole, in one
         * call (the first read of each frame), then the moment, then the
         * callers under the moment's frames again: a change of the top
         * made within the moment (the top's second read, between the two
         * reads of the thread state's frame), one of a caller between the
         * callers' two reads (head 1), or within the moment */
        fake_on_read_within(im.ft, top_change ? im.top_f : im.main_f, 2, move_on, &r);
    else
        /* cold: the frames are first found one by one (never shown), the
         * change made there */
        fake_on_read(im.ft, im.main_f, move_on, &r);
    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    const pyf_thread *th = &s->threads[0];
    pyf_stats st;
    pyf_target_stats(t, &st);
    CHECK_MSG(r.im == NULL, "the change was not made: no read of the bottom frame");
    int top_line = line_of(L_TOP, NL(L_TOP), 20, TOP_AT);
    int later_line = line_of(L_TOP, NL(L_TOP), 20, TOP_LATER);
    REQUIRE(top_line != later_line);
    if (!live) {
        /* read once: the mix a walk without the second read shows */
        no_error(th);
        CHECK_EQ_INT(th->nframes, 3);
        check_frame(s, 0, im.top_f, "top", "/app/top.py", top_line, 0);
        check_frame(s, 1, im.mid_f, "mid", "/app/mid.py", line_of(L_MID, NL(L_MID), 10, MID_AT),
                    0);
        check_frame(s, 2, im.main_f, "<module>", "/app/main.py",
                    line_of(L_MAIN, NL(L_MAIN), 1, MAIN_AT), 0);
        finish(s, t, &im);
        return;
    }
    /* a caller's change between its two reads is seen, and the stack read
     * again */
    if (warm && head && !top_change)
        CHECK_MSG(st.retried_walks >= 1, "read again %llu times",
                  (unsigned long long)st.retried_walks);
    int mid_line = line_of(L_MID, NL(L_MID), 10, MID_AT);
    switch (what) {
    case CALLER_FREED: /* gone for good: the thread is not read */
    case CALLER_DYING:
    case CALLER_STOPPED:
    case CALLER_RETYPED:
        CHECK_MSG(!shows(s, "mid"), "a frame that is no caller is shown");
        CHECK_EQ_INT(th->nframes, 0);
        CHECK_EQ_INT(th->error, PYF_ECORRUPT);
        break;
    case CALLER_UNMAPPED:
        CHECK_MSG(!shows(s, "mid"), "a frame that cannot be read again is shown");
        CHECK_EQ_INT(th->nframes, 0);
        CHECK_EQ_INT(th->error, PYF_EFAULT);
        break;
    case CALLER_RELINKED: /* read again: mid over its new caller */
        no_error(th);
        CHECK_EQ_INT(th->nframes, 3);
        CHECK_MSG(!shows(s, "<module>"), "mid's old caller is shown");
        check_frame(s, 2, r.new_back, "other", "/app/other.py", 40, 0);
        break;
    case CALLER_MOVED: /* read again: mid at its new instruction */
        no_error(th);
        CHECK_EQ_INT(th->nframes, 3);
        CHECK(line_of(L_MID, NL(L_MID), 10, MID_LATER) != mid_line);
        check_frame(s, 1, im.mid_f, "mid", "/app/mid.py",
                    line_of(L_MID, NL(L_MID), 10, MID_LATER), 0);
        break;
    case CALLER_GEN: /* read again: mid a generator's frame */
        no_error(th);
        CHECK_EQ_INT(th->nframes, 3);
        check_frame(s, 1, im.mid_f, "mid", "/app/mid.py", mid_line, PYF_FRAME_GENERATOR);
        break;
    case CALLER_REPLACED: /* read again: the new caller under the top */
        CHECK_MSG(!shows(s, "mid"), "the replaced caller is shown");
        no_error(th);
        CHECK_EQ_INT(th->nframes, 3);
        check_frame(s, 1, im.mid_f, "other", "/app/other.py",
                    line_of(L_OTHER, NL(L_OTHER), 40, MID_AT), 0);
        break;
    case TOP_MOVED: /* the top as the moment had it, not read again */
        CHECK_EQ_INT(st.retried_walks, 0);
        no_error(th);
        CHECK_EQ_INT(th->nframes, 3);
        check_frame(s, 0, im.top_f, "top", "/app/top.py", later_line, 0);
        break;
    case TOP_RETURNED:
        CHECK_MSG(!shows(s, "top"), "a frame that returned is shown");
        no_error(th);
        CHECK_EQ_INT(th->nframes, 2);
        check_frame(s, 0, im.mid_f, "mid", "/app/mid.py", line_of(L_MID, NL(L_MID), 10, MID_AT),
                    0);
        break;
    case TOP_CALLED:
        no_error(th);
        CHECK_EQ_INT(th->nframes, 4);
        check_frame(s, 0, r.new_top, "other", "/app/other.py", 40, 0);
        check_frame(s, 1, im.top_f, "top", "/app/top.py", top_line, 0);
        break;
    }
    finish(s, t, &im);
}

/* ==== 4. callers that do not run ======================================== */

static void idle_caller(int minor, int state, int live)
{
    static const char *const names[] = {"running", "not started", "at a yield", "unwinding",
                                        "returned"};
    char what[96];
    snprintf(what, sizeof what, "a caller %s under the top", names[state]);
    begin(minor, what, live);
    image im = build(minor);
    fake_heap_set_state(im.ft, im.mid_f, state);
    pyf_target *t = open_as(im.ft, live, NULL);
    REQUIRE(t != NULL);
    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    const pyf_thread *th = &s->threads[0];
    if (state == FAKE_HFRAME_UNWINDING) { /* 3.10: it runs, an exception on its way out */
        no_error(th);
        CHECK_EQ_INT(th->nframes, 3);
        CHECK(shows(s, "mid"));
    } else {
        /* the frames above the idle caller, as the 3.11+ walk keeps those
         * above a broken link: where nothing changes (stopped) */
        CHECK_MSG(!shows(s, "mid") && !shows(s, "<module>"), "a stack over an idle caller shown");
        CHECK_EQ_INT(th->nframes, live ? 0 : 1);
        CHECK_EQ_INT(th->error, PYF_ECORRUPT);
        CHECK(strstr(fake_thread_detail(th), "does not run") != NULL);
    }
    finish(s, t, &im);
}

/* ==== 5. hostile memory ================================================== */

typedef enum hostile {
    CYCLE,      /* main's f_back names the top */
    UNALIGNED,  /* mid's f_back 4 bytes into main */
    NOT_FRAME,  /* mid's type a dict */
    FREED,      /* mid's refcount 0 */
    TOO_DEEP,   /* max_depth 2 */
    UNREADABLE, /* mid's memory */
    LONG_LOOP,  /* 5,000 frames, the last one's f_back the 100th */
} hostile;

static void hostile_chain(int minor, hostile what, int live)
{
    static const char *const names[] = {"a cycle in f_back", "an unaligned f_back",
                                        "a non-frame object in the chain",
                                        "a frame whose refcount is 0",
                                        "more frames than max_depth", "unreadable frame memory",
                                        "a long chain looping back"};
    static const int want[] = {PYF_ECYCLE, PYF_ECORRUPT, PYF_ECORRUPT, PYF_ECORRUPT,
                               PYF_EDEPTH, PYF_EFAULT, PYF_ECYCLE};
    static const char *const says[] = {"loops back", "unaligned", "not a frame object",
                                       "refcount is 0",
                                       "more than 2 Python frames", "frame object",
                                       "loops back"};
    begin(minor, names[what], live);
    image im = build(minor);
    fake_target *ft = im.ft;
    const uint64_t back = fake_off(ft, "frame_object.back");
    pyf_options opts;
    memset(&opts, 0, sizeof opts);
    opts.struct_size = sizeof opts;
    switch (what) {
    case CYCLE:
        fake_w64(ft, im.main_f + back, im.top_f);
        break;
    case UNALIGNED:
        fake_w64(ft, im.mid_f + back, im.main_f + 4);
        break;
    case NOT_FRAME:
        fake_w64(ft, im.mid_f + fake_off(ft, "pyobject.ob_type"), fake_type(ft, "dict"));
        break;
    case FREED:
        fake_w64(ft, im.mid_f, 0);
        break;
    case TOO_DEEP:
        opts.max_depth = 2;
        break;
    case UNREADABLE:
        fake_add_fault(ft, im.mid_f, 8, PYF_EFAULT);
        break;
    case LONG_LOOP: {
        uint64_t hundredth = 0;
        for (int i = 0; i < 5000; i++) {
            uint64_t f = fake_heap_push(im.th, im.other_code, 3);
            if (i == 100)
                hundredth = f;
        }
        fake_w64(ft, im.main_f + back, hundredth);
        opts.max_depth = 100000;
        break;
    }
    }
    /* the frames of the chain before its bad link, top first */
    static uint64_t real[5003];
    size_t nreal = 0;
    for (uint64_t f = fake_thread_current(im.th); f != im.top_f; f = fake_r64(ft, f + back))
        real[nreal++] = f; /* LONG_LOOP's 5,000 */
    real[nreal++] = im.top_f;
    if (what == CYCLE || what == UNALIGNED || what == LONG_LOOP)
        real[nreal++] = im.mid_f;
    if (what == CYCLE || what == LONG_LOOP)
        real[nreal++] = im.main_f;
    pyf_target *t = open_as(ft, live, &opts);
    REQUIRE(t != NULL);
    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    const pyf_thread *th = &s->threads[0];
    CHECK_MSG(th->error == want[what], "error %s, want %s (%s)", pyf_error_name(th->error),
              pyf_error_name(want[what]), fake_thread_detail(th));
    CHECK_MSG(strstr(fake_thread_detail(th), says[what]) != NULL, "the error says \"%s\"",
              fake_thread_detail(th));
    if (what == TOO_DEEP) {
        /* As the 3.11+ walk does (test_walk.c, test_depth): the max_depth
         * frames read, top first, kept with PYF_EDEPTH. */
        const pyf_frame *top = frame_at(s, 0), *mid = frame_at(s, 1);
        CHECK_MSG(th->nframes == 2 && top != NULL && top->frame_addr == im.top_f &&
                      mid != NULL && mid->frame_addr == im.mid_f,
                  "%u frames kept past max_depth 2, want the 2 read", th->nframes);
    } else {
        /* none, or (as the 3.11+ walk keeps them) those read before the
         * bad link: never a frame past it */
        CHECK_MSG(th->nframes <= nreal, "%u frames of a chain of %zu shown", th->nframes,
                  nreal);
        for (uint32_t k = 0; k < th->nframes && k < nreal; k++)
            CHECK_MSG(frame_at(s, k)->frame_addr == real[k], "frame %u: 0x%llx, want 0x%llx", k,
                      (unsigned long long)frame_at(s, k)->frame_addr,
                      (unsigned long long)real[k]);
    }
    finish(s, t, &im);
}

int main(void)
{
    const int minors[] = {10, 9, 8};
    for (size_t m = 0; m < NL(minors); m++) {
        int minor = minors[m];
        for (int live = 1; live >= 0; live--) {
            read_exactly(minor, live, 1);
            read_exactly(minor, live, 0);
        }
        every_line(minor);
        generator(minor, FAKE_CO_GENERATOR, PYF_FRAME_GENERATOR);
        generator(minor, FAKE_CO_COROUTINE, PYF_FRAME_GENERATOR | PYF_FRAME_COROUTINE);
        generator(minor, FAKE_CO_ASYNC_GENERATOR, PYF_FRAME_GENERATOR | PYF_FRAME_ASYNC_GENERATOR);
        for (int live = 1; live >= 0; live--) {
            for (change c = CALLER_FREED; c <= CALLER_UNMAPPED; c++)
                for (int warm = 0; warm <= 1; warm++)
                    for (int head = 1; head >= 0; head--)
                        live_change(minor, c, live, warm, head);
            for (int st = FAKE_HFRAME_CREATED; st <= FAKE_HFRAME_RETURNED; st++)
                if (st != FAKE_HFRAME_UNWINDING || minor >= 10)
                    idle_caller(minor, st, live);
            for (hostile h = CYCLE; h <= LONG_LOOP; h++)
                hostile_chain(minor, h, live);
        }
    }
    return check_end();
}
