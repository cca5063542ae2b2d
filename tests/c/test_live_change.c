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
#include "../../native/src/internal.h"
#include "fake_target.h"

#include <string.h>

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
    pyf_snapshot *s = NULL;
    fake_watchdog(30, "pyf_snapshot_take");
    int rc = pyf_snapshot_take(t, NULL, &s);
    fake_watchdog(0, NULL);
    CHECK_MSG(rc == 0, "pyf_snapshot_take: %s (%s)", pyf_error_name(rc), fake_last_detail(t));
    if (s != NULL) {
        const char *why = fake_check_snapshot(s);
        CHECK_MSG(why == NULL, "inconsistent snapshot: %s", why);
    }
    return s;
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
    set_stack(ft, r->t, r->leaf, 0);
    fake_pop_frame(r->th);
    set_stack(ft, r->t, r->parent, 0);
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
} scene;

static void chain_scene(scene *sc, int minor, const char *file, const char *const *names,
                        size_t n, int live)
{
    REQUIRE(n >= 3 && n <= NL(sc->code));
    sc->ft = fake_new(minor);
    uint64_t interp = fake_add_interp(sc->ft, 0);
    sc->th = fake_add_thread(sc->ft, interp, 0x1000, 4242, 1);
    for (size_t i = 0; i < n; i++)
        sc->code[i] = sized(sc->ft, fake_code(sc->ft, file, names[i], i == 0 ? 1 : 7, L_F,
                                              NL(L_F)));
    sc->t = open_as(sc->ft, live);
    REQUIRE(sc->t != NULL);
    for (size_t i = 1; i < n; i++) /* one local each (co_nlocalsplus), main none */
        fake_w32(sc->ft, sc->code[i] + sc->t->off.code.nlocalsplus, 1);
    uint64_t m = fake_push_frame(sc->th, sc->code[0], 3);
    set_stack(sc->ft, sc->t, m, 0);
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
         * after the copies (b_parent), which they hold */
        CHECK_EQ_INT(s->threads[0].nframes, 2);
        CHECK(shows(s, "b_parent", "aba.py") && shows(s, "main", "aba.py"));
        CHECK(!shows(s, "b_leaf", "aba.py"));
    } else {
        CHECK_MSG(mixed, "control: the copy did not mix the chains");
    }
    finish(s, t, ft);
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
        set_stack(ft, r->t, leaf, 0); /* cleared by its return */
        if (r->variant == REPLACED_DEAD) {
            /* as 3.14+ leave a returned frame: code and function cleared
             * (the NULL stack reference), stack pointer at its locals; the
             * thread state already names the next call there, not yet
             * written */
            fake_w64(ft, leaf + fake_off(ft, "interpreter_frame.executable"), 1);
            fake_thread_set_current(r->th, leaf);
        } else if (r->variant == REPLACED_CHAIN || r->variant == REPLACED_CHAIN_LATE) {
            fake_pop_frame(r->th);
            set_stack(ft, r->t, parent, 0);
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

/* main -> parent -> leaf_a, and between the copies the caller calls again
 * at leaf_a's address (REPLACED_CHAIN: the caller returned too and another
 * was called at its address; REPLACED_DEAD: leaf_a returned and nothing
 * is there yet).  Never a leaf over a caller it was not called by.  On
 * 3.14+ REPLACED_CALL is taken from the last copy and REPLACED_LATE from
 * the first two (leaf_a, live while they were made), neither read again
 * (frames.c, top_from_agreeing_copies); on 3.13 both are read again: a
 * live 3.13 target alternating two chains was shown mixed (one chain's
 * dead leaf over the other's caller) 14 times in about 2.2 million
 * snapshots and samples when the last copy was taken there too
 * (benchmarks.md).  The chain replaced (its caller differs) is read again
 * on every version. */
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
    int taken = minor >= 14 && !chain; /* from the copies that agree */
    if (taken) {
        CHECK_EQ_INT(st.top_replaced, 1);
        CHECK_EQ_INT(st.retried_walks, 0);
    } else {
        CHECK_MSG(st.retried_walks >= 1, "copies that differ were not read again");
        if (!chain) /* a chain's top may be taken, its caller then differs */
            CHECK_EQ_INT(st.top_replaced, 0);
    }
    if (variant == REPLACED_DEAD) {
        /* taken from the last copy, where no code is: the caller on top */
        static const char *const want[] = {"parent", "main"};
        CHECK_MSG(stack_is(s, want, 2), "not parent > main");
    } else if (chain) {
        static const char *const want[] = {"b_leaf", "b_parent", "main"};
        CHECK_MSG(stack_is(s, want, 3), "not b_leaf > b_parent > main");
        CHECK_MSG(!shows(s, "parent", "top.py"), "the old caller shown");
        CHECK_MSG(!shows(s, "leaf_a", "top.py"), "leaf_a shown over another caller");
    } else if (variant == REPLACED_LATE && taken) {
        /* the first two copies agree: leaf_a, live while they were made */
        static const char *const want[] = {"leaf_a", "parent", "main"};
        CHECK_MSG(stack_is(s, want, 3), "not leaf_a > parent > main");
    } else {
        static const char *const want[] = {"leaf_b", "parent", "main"};
        CHECK_MSG(stack_is(s, want, 3), "not leaf_b > parent > main");
    }
    finish(s, t, ft);
}

int main(void)
{
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
