/*
 * test_live_change.c - a running process changing between the reads of one
 * snapshot, on synthetic 3.13, 3.14 and 3.15 images: fake_on_read changes
 * the image just before a chosen read, as the target would between two
 * ranges of one process_vm_readv.
 *
 * - A code object freed between its header and its strings, its file name's
 *   memory taken by another string: never shown as one code object's name
 *   with another's file; the thread is read again and says it could not be
 *   read (the object stays dead).
 * - A code object replaced at the same address (a new co_version) while its
 *   strings were read: the decode is dropped and the new object shown whole.
 * - A thread state freed while the thread list was walked (its links now
 *   the allocator's): no thread made of freed memory.
 * - The stack copied after its top frame returned, its caller too, and
 *   another function called in the caller's place: the old callee, cleared
 *   by its return, is never shown over the new caller; nor when the new
 *   caller is setting up a call at the old callee's address (its stack
 *   pointer set, its code not yet written: nothing there says it is dead).
 * - The top frame replaced between the copies of the stack (its caller
 *   called again at its address): on 3.14+, when only the first copy
 *   differs, in that frame's code alone, and the thread state names it
 *   right after them, taken from the last copy without a second read; read
 *   again on 3.13 (its returned frames look live), when the last copy
 *   differs, and when the caller was replaced too.  A frame that returned
 *   (3.14+: its code cleared) taken so is never shown.
 *
 * Each case runs twice: as a running process (what the library does for
 * the PID reader) and, as a control, as a stopped one, where nothing may
 * change and the mix is what a reader without the checks shows: the
 * control proves the case builds the race it claims.  White-box: it marks
 * a callback-read target as a running process.
 */
#include "../../native/src/api.h"
#include "../../native/src/offsets.h"
#include "../../native/src/target.h"
#include "fake_target.h"

#include <string.h>
#include <time.h>

#define NL(a) (sizeof(a) / sizeof((a)[0]))

static const fake_loc L_F[] = {{4, 7, 7, 4, 20}, {4, 8, 8, 4, 12}};

/* An allocator's free-list link where a freed object's first word was. */
#define FREED_LINK 0x00007f3a12345670ULL

typedef struct race {
    uint64_t code, qualname, filename, linetable;
    uint64_t code_version_off;
    /* 0: the code object is freed; 1: another takes its place; 2: another
     * is being made in its place (header as it was, old table freed) */
    int replace;
} race;

/* The target moves on: the code object goes, its strings' memory is
 * reused ("new.py" in the file name's place); or a new code object is made
 * at the same address (a later co_version) with "new_fn" in "new.py". */
static void move_on(fake_target *ft, void *arg)
{
    race *r = arg;
    uint8_t *fname = fake_host(ft, r->filename, 64);
    uint8_t *qname = fake_host(ft, r->qualname, 64);
    const uint64_t data = fake_off(ft, "unicode_object.asciiobject_size");
    memcpy(fname + data, "new.py", 6); /* same length as "old.py" */
    if (r->replace == 2) {
        fake_w64(ft, r->linetable, FREED_LINK);
    } else if (r->replace) {
        memcpy(qname + data, "new_fn", 6);
        fake_w32(ft, r->code + r->code_version_off, fake_r32(ft, r->code + r->code_version_off) + 2);
    } else {
        fake_w64(ft, r->code, FREED_LINK);
    }
}

/* A code object's length in code units (ob_size), as CPython sets it: a
 * running process's frame past it is one being set up. */
static uint64_t sized(fake_target *ft, uint64_t code)
{
    fake_w64(ft, code + fake_off(ft, "bytes_object.ob_size"), 8); /* L_F's code units */
    return code;
}

static pyf_snapshot *take(pyf_target *t)
{
    return fake_take(t);
}

/* Whether any frame of s pairs function with filename. */
static int shows(const pyf_snapshot *s, const char *function, const char *filename)
{
    for (uint32_t i = 0; s != NULL && i < s->nframes; i++)
        if (strcmp(s->frames[i].info.function, function) == 0 &&
            strcmp(s->frames[i].info.filename, filename) == 0)
            return 1;
    return 0;
}

/* Begin the case "3.MINOR: WHAT (running | stopped: control)". */
static void begin(int minor, const char *what, int live)
{
    static char name[128]; /* check_begin keeps it */
    snprintf(name, sizeof name, "3.%d: %s (%s)", minor, what,
             live ? "running" : "stopped: control");
    check_begin(name);
}

/* The end of a case: its snapshot, target and image freed. */
static void finish(pyf_snapshot *s, pyf_target *t, fake_target *ft)
{
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(ft);
}

/* A target over the image's reader, which says it reads a running process
 * (live) or a stopped one (pyf_reader.reads): the checks follow that. */
static pyf_target *open_as(fake_target *ft, int live)
{
    pyf_reader r = fake_reader(ft, 1);
    pyf_target *t = NULL;
    r.reads = live ? PYF_READS_RUNNING : PYF_READS_STOPPED;
    if (fake_open_detail(&r, fake_runtime_addr(ft), NULL, &t, NULL, 0) != PYF_OK)
        return NULL;
    t->io.stall_ns = 0; /* a loaded machine's stalls add no reads (stalled_copies) */
    return t;
}

static void code_race(int minor, int replace, int live)
{
    begin(minor, replace == 2 ? "code object being made in place while read"
                 : replace ? "code object replaced while read" : "code object freed while read",
          live);
    fake_target *ft = fake_new(minor);
    uint64_t interp = fake_add_interp(ft, 0);
    fake_thread *th = fake_add_thread(ft, interp, 0x1000, 4242, 1);
    uint64_t outer = sized(ft, fake_code(ft, "main.py", "main", 1, L_F, NL(L_F)));
    uint64_t code = sized(ft, fake_code(ft, "old.py", "old_fn", 7, L_F, NL(L_F)));
    fake_push_frame(th, outer, 3);
    fake_push_frame(th, code, 5);
    pyf_target *t = open_as(ft, live);
    REQUIRE(t != NULL);

    race r = {code, fake_r64(ft, code + fake_off(ft, "code_object.qualname")),
              fake_r64(ft, code + fake_off(ft, "code_object.filename")),
              fake_r64(ft, code + fake_off(ft, "code_object.linetable")), t->off.code.co_version,
              replace};
    /* the change lands between the name and the file name of one decode */
    fake_on_read(ft, r.filename, move_on, &r);
    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    pyf_stats st;
    pyf_target_stats(t, &st);
    if (live) {
        CHECK_MSG(!shows(s, "old_fn", "new.py"), "a frame pairs one code object's name "
                  "with another's file");
        CHECK(st.code_changed >= 1);
        if (replace == 1) {
            CHECK_MSG(shows(s, "new_fn", "new.py"), "the new code object is not shown");
            CHECK_MSG(s->threads[0].error == 0, "thread error %s: %s",
                      pyf_error_name(s->threads[0].error), fake_thread_detail(&s->threads[0]));
            if (s->threads[0].error != 0)
                fake_dump_snapshot(s, stderr);
        } else {
            /* the frame's code object is gone for good: no frame for it,
             * and the thread says it could not be read */
            CHECK_EQ_INT(s->threads[0].error, PYF_ECORRUPT);
            CHECK(strstr(fake_thread_detail(&s->threads[0]), "freed while it was read") != NULL);
        }
    } else {
        CHECK_MSG(shows(s, "old_fn", "new.py"), "control: the race did not happen");
        CHECK_EQ_INT(st.code_changed, 0);
    }
    finish(s, t, ft);
}

typedef struct gone {
    uint64_t prev_state, state, next_off, prev_off, interp_off;
} gone;

/* The thread ends while the list is walked: unlinked, then freed (its
 * first words the allocator's links, the rest left as it was). */
static void thread_ends(fake_target *ft, void *arg)
{
    gone *g = arg;
    fake_w64(ft, g->prev_state + g->next_off, 0);
    fake_w64(ft, g->state + g->prev_off, FREED_LINK);
    fake_w64(ft, g->state + g->next_off, 0x5a5a5a5a5a5a5a58ULL);
}

static void list_race(int minor, int live)
{
    begin(minor, "thread state freed while the list is walked", live);
    fake_target *ft = fake_new(minor);
    uint64_t interp = fake_add_interp(ft, 0);
    uint64_t code = sized(ft, fake_code(ft, "main.py", "main", 1, L_F, NL(L_F)));
    fake_thread *ending = fake_add_thread(ft, interp, 0x2000, 5001, 1);
    fake_push_frame(ending, code, 3);
    fake_thread *staying = fake_add_thread(ft, interp, 0x1000, 5000, 1); /* the head */
    fake_push_frame(staying, code, 3);
    pyf_target *t = open_as(ft, live);
    REQUIRE(t != NULL);
    gone g = {fake_thread_addr(staying), fake_thread_addr(ending),
              fake_off(ft, "thread_state.next"), fake_off(ft, "thread_state.prev"),
              fake_off(ft, "thread_state.interp")};
    fake_on_read(ft, g.state, thread_ends, &g);
    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    if (live) {
        CHECK_EQ_INT(s->nthreads, 1);
        CHECK_EQ_INT(s->threads[0].native_thread_id, 5000);
        CHECK_EQ_INT(s->threads[0].error, 0);
    } else {
        /* a reader without the check goes on through the freed state */
        CHECK_MSG(s->nthreads >= 2 && s->threads[1].native_thread_id == 5001,
                  "control: the freed state was not read (%u threads)", s->nthreads);
    }
    finish(s, t, ft);
}

/* ---- a copy of the stack made after the thread returned ------------------ */

/* Where a frame's stack ends, as CPython keeps it: slots past localsplus,
 * -1 for 3.13's running frame (3.14+ keep the last saved pointer). */
static void set_stack(fake_target *ft, const pyf_target *t, uint64_t frame, int32_t slots)
{
    const pyf__offsets *o = &t->off;
    if (o->frame.stacktop != PYF__ABSENT)
        fake_w32(ft, frame + o->frame.stacktop, (uint32_t)slots);
    else
        fake_w64(ft, frame + o->frame.stackpointer,
                 frame + o->frame.localsplus + 8 * (uint64_t)(slots < 0 ? 1 : slots));
}

/* A frame's stack as its return leaves it: at its locals on 3.13+ (the
 * mark the library reads there), where the return saved it on 3.11 and
 * 3.12 (past its one local, as a live caller's may be). */
static void set_returned(fake_target *ft, const pyf_target *t, uint64_t frame)
{
    set_stack(ft, t, frame, t->off.cleared_kind == PYF__CLEARED_UNMARKED ? 1 : 0);
}

typedef struct returned {
    fake_thread *th;
    const pyf_target *t;
    uint64_t other;          /* the code the new call runs */
    uint64_t parent, leaf;   /* the frames */
    uint64_t callee;         /* 0, or the code the new call then calls */
} returned;

/* Between the read of the thread state and the copy of the stack, the
 * callee returns (its frame cleared: stack pointer back at localsplus),
 * then its caller, and the thread calls another function in the caller's
 * place, which runs (3 code units in) but has called nothing yet. */
static void returns_and_calls(fake_target *ft, void *arg)
{
    returned *r = arg;
    fake_pop_frame(r->th);
    set_returned(ft, r->t, r->leaf);
    fake_pop_frame(r->th);
    set_returned(ft, r->t, r->parent);
    uint64_t f = fake_push_frame(r->th, r->other, 3);
    REQUIRE(f == r->parent);
    set_stack(ft, r->t, f, -1);
    if (r->callee != 0) {
        /* ... and calls r->callee at the old callee's address: its stack
         * pointer is set, its code and instruction still the old callee's,
         * and the thread state still names the caller */
        uint64_t exe = fake_off(ft, "interpreter_frame.executable");
        uint64_t instr = fake_off(ft, "interpreter_frame.instr_ptr");
        uint64_t old_exe = fake_r64(ft, r->leaf + exe), old_instr = fake_r64(ft, r->leaf + instr);
        uint64_t g = fake_push_frame(r->th, r->callee, 3);
        REQUIRE(g == r->leaf);
        set_stack(ft, r->t, f, 1); /* saved at the call */
        fake_thread_set_current(r->th, f);
        fake_w64(ft, g + exe, old_exe);
        fake_w64(ft, g + instr, old_instr);
        set_stack(ft, r->t, g, 1);
    }
}

/* ---- 3.11 and 3.12 ---------------------------------------------------------
 * Their current frame is kept in the _PyCFrame of the eval loop running it,
 * on the C stack (tstate->cframe->current_frame), and nothing marks a frame
 * that returned.  The cases run on images laid out as 3.13's, read as the
 * library reads 3.11 and 3.12 (white-box): the walk's named properties and
 * the _PyCFrame layout are the ones the library decides for CPython 3.11
 * and 3.12 (pyf__offsets_builtin), and the fake keeps each thread's current
 * frame in its _PyCFrame (fake_thread_use_cframes).  The layouts themselves
 * are checked against CPython's headers (the builtin_tables test) and by
 * the live suites. */

/* The layout the library decides for CPython 3.<minor> (11, 12). */
static pyf__offsets older_layout(int minor)
{
    pyf__offsets b;
    char err[256];
    int rc = pyf__offsets_builtin(0x030000f0ull | (uint64_t)minor << 16, &b, err, sizeof err);
    if (rc != PYF_OK) {
        fprintf(stderr, "pyf__offsets_builtin(3.%d): %s\n", minor, err);
        abort();
    }
    return b;
}

/* t, opened on an image laid out as 3.13's, reads it as 3.<minor>: how the
 * top frame is reached, what marks an entry, what marks a frame that
 * returned, the frame owners, and the _PyCFrame. */
static void older_semantics(pyf_target *t, const pyf__offsets *b)
{
    pyf__offsets *o = &t->off;
    o->minor = b->minor;
    o->top_kind = b->top_kind;
    o->entry_kind = b->entry_kind;
    o->cleared_kind = b->cleared_kind;
    o->owner_cstack = b->owner_cstack;
    o->owner_interpreter = b->owner_interpreter;
    o->tstate.cframe = b->tstate.cframe;
    o->cframe = b->cframe;
    o->frame.is_entry = b->frame.is_entry;
    if (b->code.co_version == PYF__ABSENT) /* 3.11's code objects have none */
        o->code.co_version = PYF__ABSENT;
}

/* One thread in file running names[0] -> names[1] -> names[2] (main, a
 * caller, its callee, the callee running), and a code object for every name
 * (each but main with one local), in the order given: the scene of the
 * stack cases below.  live: the target is a running process. */
typedef struct scene {
    fake_target *ft;
    pyf_target *t;
    fake_thread *th;
    uint64_t code[6];        /* by the index of its name */
    uint64_t parent, leaf;   /* the frames of names[1] and names[2] */
    uint64_t chunk;          /* the thread's newest data-stack chunk */
    int minor;
    /* 3.11, 3.12 (enter_from_c): the _PyCFrame of the leaf's eval loop,
     * and 3.12's entry frame of that loop */
    uint64_t cframe, entry;
} scene;

static void chain_scene(scene *sc, int minor, const char *file, const char *const *names,
                        size_t n, int live)
{
    REQUIRE(n >= 3 && n <= NL(sc->code));
    memset(sc, 0, sizeof *sc);
    sc->minor = minor;
    sc->ft = fake_new(minor < 13 ? 13 : minor);
    uint64_t interp = fake_add_interp(sc->ft, 0);
    sc->th = fake_add_thread(sc->ft, interp, 0x1000, 4242, minor != 11);
    pyf__offsets older;
    if (minor < 13) {
        older = older_layout(minor);
        fake_thread_use_cframes(sc->th, older.tstate.cframe, older.cframe.size,
                                older.cframe.current_frame, older.cframe.previous);
    }
    for (size_t i = 0; i < n; i++)
        sc->code[i] = sized(sc->ft, fake_code(sc->ft, file, names[i], i == 0 ? 1 : 7, L_F,
                                              NL(L_F)));
    sc->t = open_as(sc->ft, live);
    REQUIRE(sc->t != NULL);
    if (minor < 13)
        older_semantics(sc->t, &older);
    for (size_t i = 1; i < n; i++) /* one local each (co_nlocalsplus), main none */
        fake_w32(sc->ft, sc->code[i] + sc->t->off.code.nlocalsplus, 1);
    uint64_t m = fake_push_frame(sc->th, sc->code[0], 3);
    set_stack(sc->ft, sc->t, m, 0);
    if (minor == 11) /* 3.11's first frame of a run says so itself */
        fake_w8(sc->ft, m + sc->t->off.frame.is_entry, 1);
    sc->parent = fake_push_frame(sc->th, sc->code[1], 3);
    set_stack(sc->ft, sc->t, sc->parent, 1); /* saved at the call */
    sc->leaf = fake_push_frame(sc->th, sc->code[2], 3);
    set_stack(sc->ft, sc->t, sc->leaf, -1);
    sc->chunk = fake_r64(sc->ft, fake_thread_addr(sc->th) +
                                     fake_off(sc->ft, "thread_state.datastack_chunk"));
}

/* Alternating call chains main -> a_parent -> a_leaf and main -> b_parent
 * -> b_leaf reuse the same frame addresses.  The thread state said a_leaf
 * runs; the copy of the stack shows b_parent where a_parent was and
 * a_leaf's frame as its return left it.  A stack a_leaf over b_parent
 * never existed: a running process is read again (b_parent over main). */
static void stale_top(int minor, int live, int setup)
{
    begin(minor, setup ? "the stack copied while a new call was set up where its top frame was"
                       : "the stack copied after its top frame returned", live);
    static const char *const names[] = {"main", "a_parent", "a_leaf", "b_parent", "b_leaf"};
    scene sc;
    chain_scene(&sc, minor, "aba.py", names, NL(names), live);
    fake_target *ft = sc.ft;
    pyf_target *t = sc.t;
    fake_thread *th = sc.th;
    uint64_t parent = sc.parent, leaf = sc.leaf, chunk = sc.chunk;
    uint64_t b_parent = sc.code[3], b_leaf = sc.code[4];
    returned r = {th, t, b_parent, parent, leaf, setup ? b_leaf : 0};
    fake_on_read(ft, chunk, returns_and_calls, &r);
    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    CHECK_MSG(ft != NULL && fake_thread_current(th) == parent, "the race did not happen");
    int mixed = shows(s, "a_leaf", "aba.py") && shows(s, "b_parent", "aba.py");
    if (live) {
        CHECK_MSG(!mixed, "a_leaf shown over b_parent: a stack the thread never had");
        CHECK_MSG(s->threads[0].error == 0, "thread error %s: %s",
                  pyf_error_name(s->threads[0].error), fake_thread_detail(&s->threads[0]));
        /* the walk starts from the top frame the thread state names right
         * after the copies (b_parent), which they hold (3.11, 3.12: in the
         * middle of a call, its stack pointer saved, over main, which
         * waits for it) */
        CHECK_EQ_INT(s->threads[0].nframes, 2);
        CHECK(shows(s, "b_parent", "aba.py") && shows(s, "main", "aba.py"));
        CHECK(!shows(s, "b_leaf", "aba.py"));
    } else {
        CHECK_MSG(mixed, "control: the copy did not mix the chains");
    }
    finish(s, t, ft);
}

/* The thread's frames, innermost first, are exactly names[0..n). */
static int stack_is(const pyf_snapshot *s, const char *const *names, uint32_t n)
{
    if (s == NULL || s->nthreads != 1 || s->threads[0].nframes != n)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(s->frames[s->threads[0].first_frame + i].info.function, names[i]) != 0)
            return 0;
    return 1;
}

/* A snapshot first, as a sampler's earlier ones: the code objects on the
 * stack are cached (a first decode reads its frame again, which would
 * find a change the cases are about before the checks they test). */
static void warm(pyf_target *t)
{
    pyf_snapshot_free(take(t));
    pyf_target_reset_stats(t);
}

/* ---- 3.11, 3.12: the top frame's eval loop returning ----------------- */

/* The scene's leaf entered from C: its caller called into C, which runs it
 * in an eval loop of its own (a new _PyCFrame; 3.12: that loop's entry
 * frame on the C stack under it; 3.11: the leaf's is_entry flag). */
static void enter_from_c(scene *sc)
{
    fake_pop_frame(sc->th); /* chain_scene called it from Python */
    sc->cframe = fake_cframe_push(sc->th);
    if (sc->minor == 12)
        sc->entry = fake_push_entry(sc->th, -1);
    uint64_t leaf = fake_push_frame(sc->th, sc->code[2], 3);
    REQUIRE(leaf == sc->leaf);
    set_stack(sc->ft, sc->t, leaf, -1);
    if (sc->minor == 11)
        fake_w8(sc->ft, leaf + sc->t->off.frame.is_entry, 1);
}

/* The leaf returns, and its eval loop: the thread state names the caller's
 * _PyCFrame again (3.11, 3.12), or the caller (3.13).  The popped one is
 * left as it was: naming 3.12's entry frame (the loop's last current
 * frame), 3.11's leaf. */
static void leave_from_c(scene *sc)
{
    if (sc->minor == 11) {
        fake_cframe_pop(sc->th);
        fake_pop_frame(sc->th); /* then the leaf leaves the data stack */
    } else {
        fake_pop_frame(sc->th); /* the current frame: the entry frame */
        if (sc->minor == 12)
            fake_cframe_pop(sc->th);
        else
            fake_pop_frame(sc->th);
        fake_thread_set_current(sc->th, sc->parent);
    }
    set_returned(sc->ft, sc->t, sc->leaf);
}

/* The caller, names[1], returns too, and main calls names[which] in its
 * place, which runs (3 code units in) but calls nothing yet. */
static void caller_replaced(scene *sc, size_t which)
{
    fake_pop_frame(sc->th);
    set_returned(sc->ft, sc->t, sc->parent);
    uint64_t f = fake_push_frame(sc->th, sc->code[which], 3);
    REQUIRE(f == sc->parent);
    set_stack(sc->ft, sc->t, f, -1);
}

/* The caller names[which] calls into C, whose eval loop runs names[leaf]:
 * its _PyCFrame (and 3.12's entry frame) where the last loop's were, its
 * frame where the last leaf's was. */
static void calls_from_c(scene *sc, size_t leaf)
{
    REQUIRE(fake_cframe_push(sc->th) == sc->cframe);
    if (sc->minor == 12)
        REQUIRE(fake_push_entry(sc->th, -1) == sc->entry);
    uint64_t f = fake_push_frame(sc->th, sc->code[leaf], 3);
    REQUIRE(f == sc->leaf);
    set_stack(sc->ft, sc->t, f, -1);
    if (sc->minor == 11)
        fake_w8(sc->ft, f + sc->t->off.frame.is_entry, 1);
}

/* The word of a _PyCFrame that names its current frame. */
static uint64_t cframe_slot(const scene *sc, uint64_t cframe)
{
    return cframe + sc->t->off.cframe.current_frame;
}

typedef struct looped {
    scene *sc;
    int variant;             /* LOOP_* */
} looped;

enum {
    LOOP_POPPED,   /* before its current frame was read: its memory reused */
    LOOP_ZEROED,   /* the same, the word where its current frame was now 0 */
    LOOP_GONE,     /* before the copies (its _PyCFrame still naming the leaf) */
    LOOP_NEW,      /* before the copies, another loop at its address after them */
};

/* Before the read it watches: the leaf's eval loop returns, its caller
 * too, and main calls "other" in the caller's place.  LOOP_POPPED: the
 * C stack where the loop's _PyCFrame was is taken by another call, a
 * pointer to the leaf's frame where its current frame was.  LOOP_GONE:
 * nothing more (3.11's _PyCFrame still names the leaf, 3.12's its entry
 * frame).  LOOP_NEW: right before the check after the copies, "other"
 * calls into C, whose new eval loop runs other_leaf: its _PyCFrame and
 * frame at the old ones' addresses. */
static void loop_returns(fake_target *ft, void *arg);
static void loop_made(fake_target *ft, void *arg)
{
    looped *l = arg;
    calls_from_c(l->sc, 4);
    (void)ft;
}

static void loop_returns(fake_target *ft, void *arg)
{
    looped *l = arg;
    scene *sc = l->sc;
    leave_from_c(sc);
    caller_replaced(sc, 3);
    if (l->variant == LOOP_POPPED || l->variant == LOOP_ZEROED)
        fake_w64(ft, cframe_slot(sc, sc->cframe), l->variant == LOOP_POPPED ? sc->leaf : 0);
    else if (l->variant == LOOP_NEW)
        fake_on_read(ft, cframe_slot(sc, sc->cframe), loop_made, l);
}

/* main -> parent -> (C) -> leaf, the leaf's eval loop returning while the
 * stack is read (loop_returns).  Never the leaf over "other", a caller it
 * never had. */
static void loop_race(int minor, int variant, int live)
{
    static const char *const what[] = {
        "the top frame's eval loop returned before its _PyCFrame was read, its memory reused",
        "the top frame's eval loop returned before its _PyCFrame was read, its memory zeroed",
        "the top frame's eval loop returned before the stack was copied",
        "the top frame's eval loop returned, another made at its address after the copies"};
    begin(minor, what[variant], live);
    static const char *const names[] = {"main", "parent", "leaf", "other", "other_leaf"};
    scene sc;
    chain_scene(&sc, minor, "loop.py", names, NL(names), live);
    enter_from_c(&sc);
    warm(sc.t);
    looped l = {&sc, variant};
    int early = variant == LOOP_POPPED || variant == LOOP_ZEROED;
    fake_on_read(sc.ft, early ? cframe_slot(&sc, sc.cframe) : sc.chunk, loop_returns, &l);
    pyf_snapshot *s = take(sc.t);
    fake_on_read(sc.ft, 0, NULL, NULL);
    REQUIRE(s != NULL);
    CHECK_MSG(fake_thread_current(sc.th) != sc.leaf || variant == LOOP_NEW,
              "the race did not happen");
    int mixed = shows(s, "leaf", "loop.py") && shows(s, "other", "loop.py");
    if (variant == LOOP_ZEROED) /* shown as a thread without frames */
        mixed = s->threads[0].error == 0 && s->threads[0].nframes == 0;
    if (live) {
        CHECK_MSG(!mixed, "leaf shown over other: a caller it never had");
        CHECK_MSG(s->threads[0].error == 0, "thread error %s: %s",
                  pyf_error_name(s->threads[0].error), fake_thread_detail(&s->threads[0]));
        if (variant != LOOP_NEW) {
            static const char *const want[] = {"other", "main"};
            CHECK_MSG(stack_is(s, want, 2), "not other > main");
        } else {
            static const char *const want[] = {"other_leaf", "other", "main"};
            CHECK_MSG(stack_is(s, want, 3), "not other_leaf > other > main");
        }
        pyf_stats st;
        pyf_target_stats(sc.t, &st);
        CHECK(st.retried_walks >= 1);
    } else if (variant == LOOP_ZEROED) {
        /* a _PyCFrame of a loop naming no frame is the window where a loop
         * is being made, whatever the reader: the thread is not read */
        CHECK_MSG(s->threads[0].error != 0 && s->threads[0].nframes == 0,
                  "control: a thread without frames shown as read");
    } else {
        CHECK_MSG(mixed, "control: the read did not mix the runs");
    }
    finish(s, sc.t, sc.ft);
}

typedef struct reused {
    scene *sc;
    uint64_t check_at;       /* where the check after the copies starts */
    uint64_t deep;           /* 0, or a_deep's frame, over a_leaf */
} reused;

/* Right before the check after the copies: b_parent calls b_leaf, at
 * a_leaf's address. */
static void leaf_called(fake_target *ft, void *arg)
{
    reused *r = arg;
    uint64_t f = fake_push_frame(r->sc->th, r->sc->code[4], 3);
    REQUIRE(f == r->sc->leaf);
    set_stack(ft, r->sc->t, f, -1);
}

/* Before the copies: a_leaf (and a_deep above it) and a_parent return,
 * main calls b_parent in a_parent's place (it runs, calls nothing yet);
 * the check after the copies then finds b_leaf called at a_leaf's address
 * (leaf_called). */
static void chain_returns(fake_target *ft, void *arg)
{
    reused *r = arg;
    if (r->deep != 0) {
        fake_pop_frame(r->sc->th);
        set_returned(ft, r->sc->t, r->deep);
    }
    fake_pop_frame(r->sc->th);
    set_returned(ft, r->sc->t, r->sc->leaf);
    caller_replaced(r->sc, 3);
    fake_on_read(ft, r->check_at, leaf_called, r);
}

/* main -> a_parent -> a_leaf.  The copies of the stack hold a_leaf as its
 * return left it over b_parent, and right after them the thread's current
 * frame is at a_leaf's address again: b_leaf's.  3.13 knows a_leaf's frame
 * returned by its stack pointer; 3.11 and 3.12 leave no mark, and read the
 * top frame again with the check.  deep: the thread was in a_deep, called
 * by a_leaf, so the check names another frame than the walk's top, one
 * the copies hold (3.13+ start there; 3.11 and 3.12 read again).  Never
 * a_leaf over b_parent. */
static void top_reused(int minor, int deep, int live)
{
    begin(minor, deep ? "the top frame and its caller returned before the copies, the "
                        "caller's address called again after them"
                      : "the top frame returned before the copies, its address called again "
                        "after them", live);
    static const char *const names[] = {"main", "a_parent", "a_leaf", "b_parent", "b_leaf",
                                        "a_deep"};
    scene sc;
    chain_scene(&sc, minor, "reuse.py", names, NL(names), live);
    const pyf__offsets *o = &sc.t->off;
    uint64_t cf = fake_thread_cframe(sc.th);
    reused r = {&sc, o->top_kind == PYF__TOP_CFRAME
                         ? cf + o->cframe.current_frame
                         : fake_thread_addr(sc.th) + o->tstate.current_frame, 0};
    if (deep) {
        set_stack(sc.ft, sc.t, sc.leaf, 1); /* saved at the call */
        r.deep = fake_push_frame(sc.th, sc.code[5], 3);
        set_stack(sc.ft, sc.t, r.deep, -1);
    }
    warm(sc.t);
    fake_on_read(sc.ft, sc.chunk, chain_returns, &r);
    pyf_snapshot *s = take(sc.t);
    fake_on_read(sc.ft, 0, NULL, NULL);
    REQUIRE(s != NULL);
    int mixed = shows(s, "a_leaf", "reuse.py") && shows(s, "b_parent", "reuse.py");
    if (live) {
        CHECK_MSG(fake_thread_current(sc.th) == sc.leaf, "the race did not happen");
        CHECK_MSG(!mixed, "a_leaf shown over b_parent: a stack the thread never had");
        CHECK_MSG(s->threads[0].error == 0, "thread error %s: %s",
                  pyf_error_name(s->threads[0].error), fake_thread_detail(&s->threads[0]));
        static const char *const want[] = {"b_leaf", "b_parent", "main"};
        CHECK_MSG(stack_is(s, want, 3), "not b_leaf > b_parent > main");
    } else {
        /* a stopped reader makes no check: the second change never comes */
        CHECK_MSG(mixed, "control: the copy did not mix the chains");
    }
    finish(s, sc.t, sc.ft);
}

typedef struct direct_race {
    scene *sc;
} direct_race;

/* Right before the entry frame under the leaf is read (on its own: it is
 * on the C stack, outside the copies): the leaf's eval loop returns, its
 * caller too, and main calls into C, whose new eval loop runs other_leaf:
 * its entry frame where the last one was, naming main as its caller. */
static void loop_from_main(fake_target *ft, void *arg)
{
    scene *sc = ((direct_race *)arg)->sc;
    leave_from_c(sc);
    fake_pop_frame(sc->th);
    set_returned(ft, sc->t, sc->parent);
    if (sc->minor < 13)
        REQUIRE(fake_cframe_push(sc->th) == sc->cframe);
    REQUIRE(fake_push_entry(sc->th, -1) == sc->entry);
    uint64_t f = fake_push_frame(sc->th, sc->code[4], 3);
    REQUIRE(f == sc->parent);
    set_stack(ft, sc->t, f, -1);
}

/* main -> parent -> (C) -> leaf, read while the leaf's eval loop returns
 * and main makes another (loop_from_main), right before the entry frame
 * under the leaf is read: the copies hold leaf over that entry frame, the
 * entry frame now names main.  Never leaf over main, without the parent
 * that called it: the entry frame is read with the check, which names
 * another top. */
static void entry_race(int minor, int live)
{
    begin(minor, "the top frame's eval loop returned and another made before its entry "
                 "frame was read", live);
    static const char *const names[] = {"main", "parent", "leaf", "other", "other_leaf"};
    scene sc;
    chain_scene(&sc, minor, "entry.py", names, NL(names), live);
    if (minor >= 13) { /* 3.13: no _PyCFrame, the entry frame alone */
        fake_pop_frame(sc.th);
        sc.entry = fake_push_entry(sc.th, -1);
        REQUIRE(fake_push_frame(sc.th, sc.code[2], 3) == sc.leaf);
        set_stack(sc.ft, sc.t, sc.leaf, -1);
    } else {
        enter_from_c(&sc);
    }
    warm(sc.t);
    direct_race r = {&sc};
    fake_on_read(sc.ft, sc.entry, loop_from_main, &r);
    pyf_snapshot *s = take(sc.t);
    fake_on_read(sc.ft, 0, NULL, NULL);
    REQUIRE(s != NULL);
    CHECK_MSG(fake_thread_current(sc.th) != sc.leaf, "the race did not happen");
    static const char *const wrong[] = {"leaf", "main"};
    if (live) {
        CHECK_MSG(!stack_is(s, wrong, 2), "leaf shown over main, without its caller");
        CHECK_MSG(s->threads[0].error == 0, "thread error %s: %s",
                  pyf_error_name(s->threads[0].error), fake_thread_detail(&s->threads[0]));
        static const char *const want[] = {"other_leaf", "main"};
        CHECK_MSG(stack_is(s, want, 2), "not other_leaf > main");
    } else {
        CHECK_MSG(stack_is(s, wrong, 2), "control: the read did not mix the runs");
    }
    finish(s, sc.t, sc.ft);
}

/* Right before the entry frame under the leaf is read: its memory names
 * main as its caller (another eval loop's entry frame at that C stack
 * address, made while the thread's top and _PyCFrame read the same
 * again: two chains taking each other's addresses), the thread's
 * _PyCFrames as they were. */
static void entry_names_main(fake_target *ft, void *arg)
{
    scene *sc = arg;
    fake_frame_set_previous(ft, sc->entry,
                            fake_r64(ft, sc->parent + sc->t->off.frame.previous));
}

/* 3.12: main -> parent -> (C) -> leaf, the entry frame under the leaf
 * naming main when it is read (entry_names_main): the _PyCFrame before
 * the leaf's loop names parent as its current frame, so the entry frame
 * is not the one that loop made.  Never leaf over main: read again, and
 * the thread marked as not read when every try finds it so.  Control: a
 * stopped process shows what its memory holds. */
static void entry_other_caller(int live)
{
    begin(12, "an entry frame naming a caller its eval loop's _PyCFrame does not", live);
    static const char *const names[] = {"main", "parent", "leaf"};
    scene sc;
    chain_scene(&sc, 12, "entry_caller.py", names, NL(names), live);
    enter_from_c(&sc);
    warm(sc.t);
    fake_on_read(sc.ft, sc.entry, entry_names_main, &sc);
    pyf_snapshot *s = take(sc.t);
    fake_on_read(sc.ft, 0, NULL, NULL);
    REQUIRE(s != NULL);
    static const char *const wrong[] = {"leaf", "main"};
    if (live) {
        CHECK_MSG(!stack_is(s, wrong, 2), "leaf shown over main, without its caller");
        CHECK_MSG(s->threads[0].error != 0, "the thread was not marked as not read");
    } else {
        CHECK_MSG(stack_is(s, wrong, 2), "control: the entry frame did not name main");
    }
    finish(s, sc.t, sc.ft);
}

/* Right before the generator's frame is read (on its own: it lives in its
 * generator object): the loop that ran the leaf returns (its _PyCFrame
 * left naming the leaf, 3.11's is_entry frame), the generator yields (its
 * frame's caller NULL) and its own loop returns: main runs. */
static void gen_yields(fake_target *ft, void *arg)
{
    scene *sc = arg;
    fake_cframe_pop(sc->th);
    fake_pop_frame(sc->th); /* the leaf leaves the data stack; the generator on top */
    fake_frame_set_previous(ft, sc->entry, 0);
    fake_cframe_pop(sc->th);
    fake_thread_set_current(sc->th, sc->parent);
    set_stack(ft, sc->t, sc->parent, -1); /* main runs */
}

/* 3.11: main -> gen_fn (a generator resumed from C: its frame, in the
 * generator object, starts an eval loop) -> (C) -> leaf, another loop.
 * The generator's frame, outside the copies, is read after the leaf's loop
 * returned and the generator yielded (gen_yields): its caller is NULL
 * then, and the chain would end there, a thread of two frames.  The check
 * read with it names the leaf still (the returned loop's _PyCFrame
 * does), but the thread state names another _PyCFrame: read again. */
static void generator_race(int live)
{
    begin(11, "a generator's frame read after it yielded, the loop over it returned", live);
    static const char *const names[] = {"main", "parent", "leaf", "gen_fn"};
    scene sc;
    chain_scene(&sc, 11, "gen.py", names, NL(names), live);
    fake_pop_frame(sc.th); /* main alone (sc.parent: main's frame now) */
    fake_pop_frame(sc.th);
    sc.parent = fake_thread_current(sc.th);
    fake_cframe_push(sc.th);
    uint64_t gen = 0;
    sc.entry = fake_gen_frame(sc.th, sc.code[3], 3, &gen); /* the generator's frame */
    fake_w8(sc.ft, sc.entry + sc.t->off.frame.is_entry, 1);
    set_stack(sc.ft, sc.t, sc.entry, -1);
    fake_cframe_push(sc.th);
    uint64_t leaf = fake_push_frame(sc.th, sc.code[2], 3);
    fake_w8(sc.ft, leaf + sc.t->off.frame.is_entry, 1);
    set_stack(sc.ft, sc.t, leaf, -1);
    warm(sc.t);
    fake_on_read(sc.ft, sc.entry, gen_yields, &sc);
    pyf_snapshot *s = take(sc.t);
    fake_on_read(sc.ft, 0, NULL, NULL);
    REQUIRE(s != NULL);
    CHECK_MSG(fake_thread_current(sc.th) == sc.parent, "the race did not happen");
    static const char *const cut[] = {"leaf", "gen_fn"};
    if (live) {
        CHECK_MSG(!stack_is(s, cut, 2), "leaf over gen_fn shown as the whole stack");
        CHECK_MSG(s->threads[0].error == 0, "thread error %s: %s",
                  pyf_error_name(s->threads[0].error), fake_thread_detail(&s->threads[0]));
        static const char *const want[] = {"main"};
        CHECK_MSG(stack_is(s, want, 1), "not main alone");
    } else {
        CHECK_MSG(stack_is(s, cut, 2), "control: the read did not cut the stack");
    }
    finish(s, sc.t, sc.ft);
}

/* 3.11 (no co_version): between two snapshots the leaf's code object is
 * freed and another made at its address, whose name, file name and line
 * table take the freed ones' addresses (CPython's allocators hand out the
 * last block freed first): the header the cache checks is the same.  The
 * new function is shown, never the cached decode of the freed one. */
static void code_reused(int live)
{
    begin(11, "a code object made where a cached one was, its strings where its were", live);
    static const char *const names[] = {"main", "parent", "old_fn"};
    scene sc;
    chain_scene(&sc, 11, "old.py", names, NL(names), live);
    pyf_snapshot *s = take(sc.t);
    REQUIRE(s != NULL);
    CHECK(shows(s, "old_fn", "old.py"));
    pyf_snapshot_free(s);
    const uint64_t data = fake_off(sc.ft, "unicode_object.asciiobject_size");
    uint64_t code = sc.code[2];
    uint64_t name = fake_r64(sc.ft, code + fake_off(sc.ft, "code_object.qualname"));
    uint64_t file = fake_r64(sc.ft, code + fake_off(sc.ft, "code_object.filename"));
    uint64_t table = fake_r64(sc.ft, code + fake_off(sc.ft, "code_object.linetable"));
    REQUIRE(name != 0 && file != 0 && table != 0);
    memcpy(fake_host(sc.ft, name, 64) + data, "new_fn", 6);
    memcpy(fake_host(sc.ft, file, 64) + data, "new.py", 6);
    s = take(sc.t);
    REQUIRE(s != NULL);
    CHECK_MSG(!shows(s, "old_fn", "old.py"), "the freed code object's cached names shown");
    CHECK_MSG(shows(s, "new_fn", "new.py"), "the new code object is not shown");
    CHECK_EQ_INT(s->threads[0].error, 0);
    finish(s, sc.t, sc.ft);
}

/* 3.12: an eval loop being made, its _PyCFrame named by the thread state,
 * its current frame not yet written: the word there is the last loop's,
 * its entry frame, whose memory says nothing true (its caller NULL here).
 * A running process's thread is never shown from it (not as a thread
 * without frames): it says it could not be read. */
static void entry_on_top(int live)
{
    begin(12, "an eval loop being made, its current frame not yet written", live);
    static const char *const names[] = {"main", "parent", "leaf"};
    scene sc;
    chain_scene(&sc, 12, "entry.py", names, NL(names), live);
    enter_from_c(&sc);
    leave_from_c(&sc);          /* the loop's _PyCFrame names its entry frame */
    REQUIRE(fake_cframe_push(sc.th) == sc.cframe);
    fake_w64(sc.ft, cframe_slot(&sc, sc.cframe), sc.entry);
    fake_frame_set_previous(sc.ft, sc.entry, 0);
    pyf_snapshot *s = take(sc.t);
    REQUIRE(s != NULL && s->nthreads == 1);
    if (live) {
        CHECK_EQ_INT(s->threads[0].error, PYF_ECORRUPT);
        CHECK(strstr(fake_thread_detail(&s->threads[0]), "entry frame") != NULL);
    } else {
        CHECK_MSG(s->threads[0].error == 0 && s->threads[0].nframes == 0,
                  "control: not shown as a thread without frames");
    }
    finish(s, sc.t, sc.ft);
}

/* ---- the top frame replaced while the stack was copied ------------------ */

typedef struct replaced {
    fake_thread *th;
    const pyf_target *t;
    uint64_t chunk;          /* the copies' first address: the watch */
    int variant;             /* REPLACED_* */
    uint64_t leaf_b, b_parent, b_leaf;
    int reads;               /* reads of the chunk seen so far */
    int changed;             /* the race happened */
} replaced;

enum {
    REPLACED_CALL,   /* main -> parent -> leaf_b: the caller calls again */
    REPLACED_LATE,   /* the same between the second copy and the third */
    REPLACED_CHAIN,  /* main -> b_parent -> b_leaf: the caller returned too */
    REPLACED_CHAIN_LATE, /* the same between the second copy and the third */
    REPLACED_DEAD,   /* 3.14+: leaf_a returned, nothing called there yet */
};

static int replaced_late(int variant)
{
    return variant == REPLACED_LATE || variant == REPLACED_CHAIN_LATE;
}

/* Between the first copy of the stack and the second (the reads of the
 * newest chunk, back to back in one reader call; the _LATE variants:
 * between the second and the third), the top frame leaf_a
 * returns and the thread calls again at its address; the thread state
 * names that frame again right after the copies. */
static void replace_top(fake_target *ft, void *arg)
{
    replaced *r = arg;
    r->reads++;
    fake_on_read(ft, r->chunk, replace_top, r); /* every read of the chunk */
    if (r->reads == (replaced_late(r->variant) ? 3 : 2)) {
        uint64_t leaf = fake_thread_current(r->th);
        uint64_t parent = fake_pop_frame(r->th);
        set_returned(ft, r->t, leaf);
        if (r->variant == REPLACED_DEAD) {
            /* as 3.14+ leave a returned frame: code and function cleared
             * (the NULL stack reference), stack pointer at its locals; the
             * thread state already names the next call there, not yet
             * written */
            fake_w64(ft, leaf + fake_off(ft, "interpreter_frame.executable"), 1);
            fake_thread_set_current(r->th, leaf);
        } else if (r->variant == REPLACED_CHAIN || r->variant == REPLACED_CHAIN_LATE) {
            fake_pop_frame(r->th);
            set_returned(ft, r->t, parent);
            uint64_t p = fake_push_frame(r->th, r->b_parent, 3);
            REQUIRE(p == parent);
            set_stack(ft, r->t, p, 1);
            uint64_t g = fake_push_frame(r->th, r->b_leaf, 3);
            REQUIRE(g == leaf);
            set_stack(ft, r->t, g, -1);
        } else {
            uint64_t g = fake_push_frame(r->th, r->leaf_b, 3);
            REQUIRE(g == leaf);
            set_stack(ft, r->t, g, -1);
        }
        r->changed = 1;
    }
}

/* main -> parent -> leaf_a, and between the copies the caller calls again
 * at leaf_a's address (REPLACED_CHAIN: the caller returned too and another
 * was called at its address; REPLACED_DEAD: leaf_a returned and nothing
 * is there yet).  Never a leaf over a caller it was not called by: copies
 * that differ are read again on every version, in the top frame too.  (A
 * rule that took a top frame replaced once from the copies that agree
 * showed one chain's leaf over the other's caller on 3.13, and on 3.14 and
 * 3.15 once the target ran beside the reader on another core, each copy
 * then holding memory of two moments: benchmarks.md.) */
static void top_replaced(int minor, int variant)
{
    static const char *const what[] = {
        "the top frame replaced by a new call after the first copy of the stack",
        "the top frame replaced by a new call after the second copy",
        "the top frame and its caller replaced after the first copy",
        "the top frame and its caller replaced after the second copy",
        "the top frame returned after the first copy, nothing called there yet"};
    begin(minor, what[variant], 1);
    static const char *const names[] = {"main",   "parent",   "leaf_a",
                                        "leaf_b", "b_parent", "b_leaf"};
    scene sc;
    chain_scene(&sc, minor, "top.py", names, NL(names), 1);
    fake_target *ft = sc.ft;
    pyf_target *t = sc.t;
    fake_thread *th = sc.th;
    uint64_t chunk = sc.chunk;
    uint64_t leaf_b = sc.code[3], b_parent = sc.code[4], b_leaf = sc.code[5];
    replaced r = {th, t, chunk, variant, leaf_b, b_parent, b_leaf, 0, 0};
    /* a snapshot first, as a sampler's earlier ones: leaf_a's code is
     * cached (its first decode would find the frame naming another code
     * object afterwards, and read the thread again) */
    pyf_snapshot_free(take(t));
    pyf_target_reset_stats(t);
    fake_on_read(ft, chunk, replace_top, &r);
    pyf_snapshot *s = take(t);
    fake_on_read(ft, chunk, NULL, NULL);
    REQUIRE(s != NULL);
    CHECK_MSG(r.changed, "the race did not happen (%d reads of the chunk)", r.reads);
    pyf_stats st;
    pyf_target_stats(t, &st);
    CHECK_MSG(s->threads[0].error == 0, "thread error %s: %s",
              pyf_error_name(s->threads[0].error), fake_thread_detail(&s->threads[0]));
    int chain = variant == REPLACED_CHAIN || variant == REPLACED_CHAIN_LATE;
    CHECK_MSG(st.retried_walks >= 1, "copies that differ were not read again");
    CHECK_EQ_INT(st.top_replaced, 0);
    if (variant == REPLACED_DEAD) {
        /* read again: the returned frame, its code cleared, is no frame */
        static const char *const want[] = {"parent", "main"};
        CHECK_MSG(stack_is(s, want, 2), "not parent > main");
    } else if (chain) {
        static const char *const want[] = {"b_leaf", "b_parent", "main"};
        CHECK_MSG(stack_is(s, want, 3), "not b_leaf > b_parent > main");
        CHECK_MSG(!shows(s, "parent", "top.py"), "the old caller shown");
        CHECK_MSG(!shows(s, "leaf_a", "top.py"), "leaf_a shown over another caller");
    } else {
        static const char *const want[] = {"leaf_b", "parent", "main"};
        CHECK_MSG(stack_is(s, want, 3), "not leaf_b > parent > main");
    }
    finish(s, t, ft);
}

/* 3.11, 3.12: the top frame does not run (its stack pointer saved) and its
 * caller does not wait for it (runs: -1), and every try of the walk finds
 * it so, at the same address: what two chains taking each other's
 * addresses show (aba_cframes.py).  Never shown as it is (a last "steady"
 * walk showed such a leaf alone, or over another chain's caller): the
 * thread is marked as not read.  Control: a stopped process shows it. */
static void idle_top_every_try(int minor, int live)
{
    begin(minor, "a top frame that does not run over a caller that runs, every try", live);
    static const char *const names[] = {"main", "parent", "leaf"};
    scene sc;
    chain_scene(&sc, minor, "idle.py", names, NL(names), live);
    set_stack(sc.ft, sc.t, sc.leaf, 1);
    set_stack(sc.ft, sc.t, sc.parent, -1);
    pyf_snapshot *s = take(sc.t);
    REQUIRE(s != NULL);
    static const char *const want[] = {"leaf", "parent", "main"};
    if (live) {
        CHECK_MSG(!stack_is(s, want, 3), "an idle top shown over a caller that runs");
        CHECK_MSG(s->threads[0].error != 0, "the thread was not marked as not read");
    } else {
        CHECK_MSG(stack_is(s, want, 3), "control: not leaf > parent > main");
    }
    finish(s, sc.t, sc.ft);
}

/* The reader stopped for 2 ms in the middle of the copies of the stack,
 * as a preempted reader is (pyf__read_stalled): the copies are not taken
 * for one moment's, the walk is made again (nothing else changed: the
 * same stack).  With the prefetch (the second snapshot), its stalled
 * call serves nothing: the snapshot reads as a first one does.  Control:
 * calls not timed (stall_ns 0) take the copies. */
static void stall(fake_target *ft, void *arg)
{
    (void)ft;
    (void)arg;
    struct timespec d = {0, 2000000};
    nanosleep(&d, NULL);
}

static void stalled_copies(int minor, int timed)
{
    begin(minor, timed ? "the copies of the stack made in a stalled read"
                       : "a stalled read, calls not timed", 1);
    static const char *const names[] = {"main", "parent", "leaf"};
    scene sc;
    chain_scene(&sc, minor, "stall.py", names, NL(names), 1);
    sc.t->io.stall_ns = timed ? PYF__STALL_NS : 0;
    for (int round = 0; round < 2; round++) { /* round 1: from the prefetch */
        pyf_target_reset_stats(sc.t);
        uint64_t calls = sc.t->io.calls;
        fake_on_read(sc.ft, sc.chunk, stall, NULL);
        pyf_snapshot *s = take(sc.t);
        fake_on_read(sc.ft, sc.chunk, NULL, NULL);
        REQUIRE(s != NULL);
        pyf_stats st;
        pyf_target_stats(sc.t, &st);
        static const char *const want[] = {"leaf", "parent", "main"};
        CHECK_MSG(stack_is(s, want, 3), "not leaf > parent > main (round %d)", round);
        if (round == 0)
            CHECK_EQ_INT(st.retried_walks, timed ? 1 : 0);
        else if (timed) /* the stalled prefetch serves nothing: read as a first one */
            CHECK_MSG(sc.t->io.calls - calls > 2, "%llu reader calls",
                      (unsigned long long)(sc.t->io.calls - calls));
        else /* the prefetch's one call */
            CHECK_EQ_INT(sc.t->io.calls - calls, 1);
        pyf_snapshot_free(s);
    }
    finish(NULL, sc.t, sc.ft);
}

int main(void)
{
    for (int minor = 11; minor <= 12; minor++) {
        idle_top_every_try(minor, 1);
        idle_top_every_try(minor, 0);
    }
    for (int minor = 13; minor <= 15; minor += 2) {
        stalled_copies(minor, 1);
        stalled_copies(minor, 0);
    }
    for (int minor = 11; minor <= 12; minor++) {
        for (int live = 1; live >= 0; live--) {
            stale_top(minor, live, 0);
            stale_top(minor, live, 1);
            top_reused(minor, 0, live);
            top_reused(minor, 1, live);
            loop_race(minor, LOOP_POPPED, live);
            loop_race(minor, LOOP_ZEROED, live);
            loop_race(minor, LOOP_GONE, live);
            loop_race(minor, LOOP_NEW, live);
            if (minor == 12)
                entry_race(minor, live);
        }
        for (int variant = REPLACED_CALL; variant < REPLACED_DEAD; variant++)
            top_replaced(minor, variant);
    }
    entry_on_top(1);
    entry_on_top(0);
    entry_other_caller(1);
    entry_other_caller(0);
    code_reused(1);
    code_reused(0);
    generator_race(1);
    generator_race(0);
    for (int live = 1; live >= 0; live--) {
        top_reused(13, 0, live);
        top_reused(13, 1, live);
        entry_race(13, live);
    }
    for (int minor = 13; minor <= 15; minor++) {
        for (int live = 1; live >= 0; live--) {
            code_race(minor, 0, live);
            code_race(minor, 1, live);
            code_race(minor, 2, live);
            list_race(minor, live);
            stale_top(minor, live, 0);
            stale_top(minor, live, 1);
        }
        for (int variant = REPLACED_CALL; variant <= REPLACED_DEAD; variant++)
            if (variant != REPLACED_DEAD || minor >= 14)
                top_replaced(minor, variant);
    }
    return check_end();
}
