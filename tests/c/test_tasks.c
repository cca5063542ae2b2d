/*
 * test_tasks.c - asyncio tasks (CPython 3.14/3.15) on synthetic images: an
 * .AsyncioDebug table with the values of Debian's builds, Task objects on
 * thread and interpreter lists, coroutines whose suspended frames await
 * the next one (through an async generator's asend too), awaited_by as one
 * task or as a set (with an empty slot and a tombstone).  Checked: names,
 * states, stacks innermost first, awaiters, the running task, tasks of
 * exited threads; await cycles between tasks, coroutine chains that loop,
 * broken task lists, thread lists broken as the stack walk sees them,
 * implausible tables and sets; 3.13 has no tasks.
 * Every case runs under a watchdog.  Run under ASan/UBSan in the sanitized
 * build.
 */
#include "fake_target.h"

#include <string.h>

#define NL(a) (sizeof(a) / sizeof((a)[0]))

/* .AsyncioDebug fields, in table order */
enum { T_SIZE, T_NAME, T_AWAITED_BY, T_IS_TASK, T_IS_SET, T_CORO, T_NODE,
       I_SIZE, I_HEAD, TH_SIZE, TH_LOOP, TH_RUNNING, TH_HEAD, NFIELDS };

static const fake_loc L[] = {{4, 10, 10, 0, 5}, {4, 12, 12, 4, 9}, {4, 15, 16, 2, 7}};

typedef struct world {
    fake_target *ft;
    int minor;
    uint64_t v[NFIELDS];        /* the table's values */
    uint64_t table;             /* its address */
    uint64_t interp;            /* interpreter 0 */
    fake_thread *th;            /* its first thread (native id 501) */
    uint64_t code_main, code_a, code_b, code_c, code_decoy;
    uint64_t code_agen; /* an async generator's (the others' are coroutines') */
    uint64_t coro_type, task_type, decoy;
} world;

static uint64_t off(world *w, const char *name) { return fake_off(w->ft, name); }
static int st_yield_from(world *w) { return w->minor >= 15 ? 2 : -1; }
static int st_suspended(world *w) { return w->minor >= 15 ? 1 : -2; }
static int st_cleared(world *w) { return w->minor >= 15 ? 5 : 4; }

/* The values of CPython 3.14.10 / 3.15.2 (Debian x86-64). */
static void real_table(int minor, uint64_t v[NFIELDS])
{
    static const uint64_t v14[NFIELDS] = {168, 136, 96, 108, 109, 128, 152,
                                          225864, 10880, 936, 864, 872, 880};
    static const uint64_t v15[NFIELDS] = {168, 136, 96, 108, 109, 128, 152,
                                          226240, 10856, 1104, 1024, 1032, 1048};
    memcpy(v, minor >= 15 ? v15 : v14, sizeof v14);
}

static uint64_t write_table(world *w, const uint64_t v[NFIELDS])
{
    uint64_t a = fake_alloc(w->ft, 8 * NFIELDS);
    for (int i = 0; i < NFIELDS; i++)
        fake_w64(w->ft, a + 8u * (uint64_t)i, v[i]);
    return a;
}

/* ---- lists ---------------------------------------------------------------- */

static uint64_t thread_head(world *w, fake_thread *th) { return fake_thread_addr(th) + w->v[TH_HEAD]; }
static uint64_t interp_head(world *w, uint64_t in) { return in + w->v[I_HEAD]; }
static uint64_t node_of(world *w, uint64_t task) { return task + w->v[T_NODE]; }

/* head <-> tasks[0] <-> ... <-> tasks[n-1] <-> head (n = 0: empty list) */
static void link_list(world *w, uint64_t head, const uint64_t *tasks, size_t n)
{
    uint64_t prev = head;
    for (size_t i = 0; i < n; i++) {
        uint64_t node = node_of(w, tasks[i]);
        fake_w64(w->ft, prev + 0, node);
        fake_w64(w->ft, node + 8, prev);
        prev = node;
    }
    fake_w64(w->ft, prev + 0, head);
    fake_w64(w->ft, head + 8, prev);
}

static fake_thread *add_thread(world *w, uint64_t in, uint64_t native)
{
    fake_thread *th = fake_add_thread(w->ft, in, 0x7f0000000000ull + native * 0x1000, native, 1);
    fake_push_frame(th, w->code_main, 2);
    if (w->minor >= 14)
        link_list(w, thread_head(w, th), NULL, 0);
    return th;
}

static void set_running(world *w, fake_thread *th, uint64_t loop, uint64_t task)
{
    fake_w64(w->ft, fake_thread_addr(th) + w->v[TH_LOOP], loop);
    fake_w64(w->ft, fake_thread_addr(th) + w->v[TH_RUNNING], task);
}

/* ---- objects -------------------------------------------------------------- */

static uint64_t new_obj(world *w, uint64_t type, size_t size)
{
    uint64_t o = fake_alloc(w->ft, size);
    fake_w64(w->ft, o, 1);
    fake_w64(w->ft, o + 8, type);
    return o;
}

/* A type named like a builtin but with Py_TPFLAGS_HEAPTYPE (a class). */
static uint64_t heap_type(world *w, const char *name)
{
    uint64_t t = new_obj(w, fake_type(w->ft, "type"), off(w, "type_object.size"));
    uint64_t s = fake_alloc(w->ft, strlen(name) + 1);
    fake_write(w->ft, s, name, strlen(name) + 1);
    fake_w64(w->ft, t + off(w, "type_object.tp_name"), s);
    fake_w64(w->ft, t + off(w, "type_object.tp_flags"), 1ull << 9);
    return t;
}

/* An unnamed task's name: the int n (one 30-bit digit). */
static uint64_t int_name(world *w, uint32_t n)
{
    uint64_t o = new_obj(w, fake_type(w->ft, "int"), off(w, "long_object.size"));
    fake_w64(w->ft, o + off(w, "long_object.lv_tag"), 1u << 3);
    fake_w32(w->ft, o + off(w, "long_object.ob_digit"), n);
    return o;
}

/* A suspended generator-like object of this type running code at instr. */
static uint64_t new_gen(world *w, uint64_t type, uint64_t code, int instr)
{
    uint64_t fsize = off(w, "interpreter_frame.size");
    uint64_t g = new_obj(w, type, off(w, "gen_object.gi_iframe") + fsize + 32);
    uint64_t f = g + off(w, "gen_object.gi_iframe");
    fake_w64(w->ft, f + off(w, "interpreter_frame.executable"), code | 1);
    fake_w64(w->ft, f + off(w, "interpreter_frame.instr_ptr"),
             code + off(w, "code_object.co_code_adaptive") + 2u * (uint64_t)instr);
    fake_w8(w->ft, f + off(w, "interpreter_frame.owner"), 1); /* GENERATOR */
    fake_w64(w->ft, f + off(w, "interpreter_frame.stackpointer"),
             f + off(w, "interpreter_frame.localsplus"));
    fake_w8(w->ft, g + off(w, "gen_object.gi_frame_state"), (uint8_t)st_suspended(w));
    return g;
}

static uint64_t new_coro(world *w, uint64_t code, int instr)
{
    return new_gen(w, w->coro_type, code, instr);
}

static void gen_state(world *w, uint64_t g, int state)
{
    fake_w8(w->ft, g + off(w, "gen_object.gi_frame_state"), (uint8_t)state);
}

/* g suspended in `await awaited`: the awaited object at sp-8 (3.14) or
 * sp-16 (3.15), tagged; the other slot holds a decoy coroutine. */
static void gen_await(world *w, uint64_t g, uint64_t awaited)
{
    uint64_t f = g + off(w, "gen_object.gi_iframe");
    uint64_t sp = f + off(w, "interpreter_frame.localsplus") + 16;
    uint64_t slot = sp - (w->minor >= 15 ? 16 : 8), other = w->minor >= 15 ? sp - 8 : sp - 16;
    fake_w64(w->ft, f + off(w, "interpreter_frame.stackpointer"), sp);
    fake_w64(w->ft, slot, awaited | 1);
    fake_w64(w->ft, other, w->decoy | 1);
    gen_state(w, g, st_yield_from(w));
}

static uint64_t new_task(world *w, uint64_t name, uint64_t coro, uint32_t state)
{
    uint64_t t = new_obj(w, w->task_type, w->v[T_SIZE]);
    fake_w64(w->ft, t + w->v[T_NAME], name);
    fake_w64(w->ft, t + w->v[T_CORO], coro);
    fake_w32(w->ft, t + w->v[T_AWAITED_BY] + 8, state);
    fake_w8(w->ft, t + w->v[T_IS_TASK], 1);
    return t;
}

static void awaited_by(world *w, uint64_t task, uint64_t obj, int is_set)
{
    fake_w64(w->ft, task + w->v[T_AWAITED_BY], obj);
    fake_w8(w->ft, task + w->v[T_IS_SET], (uint8_t)is_set);
}

/* A set of n (<= 6) tasks in 8 slots: slot 0 empty, slot 1 a deleted entry
 * (hash -1), then the tasks. */
static uint64_t new_set(world *w, const uint64_t *keys, size_t n)
{
    uint64_t s = new_obj(w, fake_type(w->ft, "set"), off(w, "set_object.size"));
    uint64_t table = fake_alloc(w->ft, 8 * 16);
    fake_w64(w->ft, table + 16, w->decoy); /* the dummy key of a deleted entry */
    fake_w64(w->ft, table + 24, UINT64_MAX);
    for (size_t i = 0; i < n; i++) {
        fake_w64(w->ft, table + 16 * (2 + i), keys[i]);
        fake_w64(w->ft, table + 16 * (2 + i) + 8, 0x1234 + i);
    }
    fake_w64(w->ft, s + off(w, "set_object.used"), n);
    fake_w64(w->ft, s + off(w, "set_object.mask"), 7);
    fake_w64(w->ft, s + off(w, "set_object.table"), table);
    return s;
}

static void world_new(world *w, int minor)
{
    memset(w, 0, sizeof *w);
    w->ft = fake_new(minor);
    w->minor = minor;
    real_table(minor >= 14 ? minor : 14, w->v);
    w->table = write_table(w, w->v);
    w->code_main = fake_code(w->ft, "/app/main.py", "<module>", 10, L, NL(L));
    w->code_a = fake_code(w->ft, "/app/jobs.py", "serve", 10, L, NL(L));
    w->code_b = fake_code(w->ft, "/app/jobs.py", "Client.read", 10, L, NL(L));
    w->code_c = fake_code(w->ft, "/app/net.py", "Stream.wait", 10, L, NL(L));
    w->code_decoy = fake_code(w->ft, "/app/x.py", "decoy", 10, L, NL(L));
    w->code_agen = fake_code(w->ft, "/app/net.py", "Stream.chunks", 10, L, NL(L));
    const uint64_t coros[] = {w->code_a, w->code_b, w->code_c, w->code_decoy};
    for (size_t i = 0; i < NL(coros); i++)
        fake_code_set_flags(w->ft, coros[i], FAKE_CO_COROUTINE);
    fake_code_set_flags(w->ft, w->code_agen, FAKE_CO_ASYNC_GENERATOR);
    w->coro_type = fake_type(w->ft, "coroutine");
    w->task_type = fake_type(w->ft, "_asyncio.Task");
    w->decoy = new_coro(w, w->code_decoy, 0);
    w->interp = fake_add_interp(w->ft, 0);
    if (minor >= 14)
        link_list(w, interp_head(w, w->interp), NULL, 0);
    w->th = add_thread(w, w->interp, 501);
}

static void world_free(world *w, pyf_target *t)
{
    pyf_target_close(t);
    fake_free(w->ft);
}

static pyf_target *open_tasks(world *w)
{
    pyf_target *t = fake_open(w->ft, NULL, 1);
    REQUIRE(t != NULL);
    int rc = pyf_target_set_asyncio(t, w->table);
    CHECK_MSG(rc == PYF_OK, "set_asyncio: %s (%s)", pyf_error_name(rc), fake_last_detail(t));
    return t;
}

/* ---- snapshots ------------------------------------------------------------ */

/* "3.<minor> what", under a watchdog for the whole case */
static void begin(int minor, const char *what)
{
    static char name[128];
    snprintf(name, sizeof name, "3.%d %s", minor, what);
    check_begin(name);
    fake_watchdog(60, "whole case");
}

/* Structure every task list must have, whatever the image. */
static void check_list(const pyf_snapshot *s, const pyf_task_list *tl)
{
    uint32_t threads_end = 0, prev_end = 0;
    for (uint32_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].first_frame + s->threads[i].nframes > threads_end)
            threads_end = s->threads[i].first_frame + s->threads[i].nframes;
    CHECK_EQ_INT(tl->task_size, sizeof(pyf_task));
    CHECK((tl->status == 0 && tl->list_error == 0) == (tl->failure == NULL));
    /* one failure: status and list_error are its code */
    CHECK(tl->failure == NULL ||
          tl->failure->code == (tl->status != 0 ? tl->status : tl->list_error));
    CHECK(tl->status == 0 || (tl->list_error == 0 && tl->ntasks == 0));
    CHECK(tl->failure == NULL || tl->failure->detail[0] != '\0');
    for (uint32_t i = 0; i < tl->ntasks; i++) {
        const pyf_task *k = &tl->tasks[i];
        CHECK_MSG(k->name != NULL && fake_valid_utf8(k->name), "task %u name", i);
        CHECK(k->state <= PYF_TASK_STATE_UNKNOWN && (k->flags & ~7u) == 0);
        CHECK_MSG(k->first_frame >= threads_end && k->first_frame >= prev_end &&
                      (uint64_t)k->first_frame + k->nframes <= s->nframes,
                  "task %u frames [%u, +%u) of %u (threads end at %u)", i, k->first_frame,
                  k->nframes, s->nframes, threads_end);
        prev_end = k->first_frame + k->nframes;
        CHECK((uint64_t)k->first_awaiter + k->nawaiters <= tl->nawaited_by);
        CHECK(fake_known_error(k->error) && (k->error == 0) == (k->failure == NULL));
        CHECK(k->failure == NULL || (k->failure->code == k->error && k->failure->detail[0]));
        for (uint32_t j = 0; j < k->nframes && k->first_frame + j < s->nframes; j++)
            CHECK(s->frames[k->first_frame + j].info.flags & PYF_FRAME_GENERATOR);
    }
}

static pyf_snapshot *take(pyf_target *t, uint32_t flags, uint64_t tid, pyf_task_list *tl)
{
    pyf_snapshot_request req = {sizeof req, flags, tid, 0, 0};
    pyf_snapshot *s = NULL;
    int rc = pyf_snapshot_take(t, &req, &s);
    CHECK_MSG(rc == PYF_OK, "snapshot: %s (%s)", pyf_error_name(rc), fake_last_detail(t));
    REQUIRE(s != NULL);
    const char *why = fake_check_snapshot(s);
    CHECK_MSG(why == NULL, "inconsistent snapshot: %s", why);
    memset(tl, 0, sizeof *tl);
    tl->struct_size = sizeof *tl;
    CHECK_RC(pyf_snapshot_tasks(s, tl), PYF_OK);
    check_list(s, tl);
    return s;
}

static const pyf_task *find(const pyf_task_list *tl, uint64_t addr, int *index)
{
    const pyf_task *hit = NULL;
    int n = 0;
    for (uint32_t i = 0; i < tl->ntasks; i++)
        if (tl->tasks[i].task_addr == addr) {
            hit = &tl->tasks[i];
            n++;
            if (index)
                *index = (int)i;
        }
    CHECK_MSG(n <= 1, "task 0x%" PRIx64 " listed %d times", addr, n);
    return hit;
}

/* The task at addr is listed with this stack (function names, innermost
 * first) and these awaiters (in order). */
static const pyf_task *expect(const pyf_snapshot *s, const pyf_task_list *tl, uint64_t addr,
                              const char *name, const char *const *stack, uint32_t nstack,
                              const uint64_t *by, uint32_t nby)
{
    const pyf_task *k = find(tl, addr, NULL);
    CHECK_MSG(k != NULL, "task %s (0x%" PRIx64 ") missing", name, addr);
    if (k == NULL)
        return NULL;
    CHECK_EQ_STR(k->name, name);
    CHECK_MSG(k->nframes == nstack, "%s: %u frames, expected %u", name, k->nframes, nstack);
    for (uint32_t i = 0; i < k->nframes && i < nstack; i++)
        CHECK_EQ_STR(s->frames[k->first_frame + i].info.function, stack[i]);
    CHECK_MSG(k->nawaiters == nby, "%s: %u awaiters, expected %u", name, k->nawaiters, nby);
    for (uint32_t i = 0; i < k->nawaiters && i < nby; i++)
        CHECK_ADDR(tl->awaited_by[k->first_awaiter + i], by[i]);
    return k;
}

/* ---- cases ---------------------------------------------------------------- */

static void test_happy(int minor)
{
    begin(minor, "tasks: names, states, stacks, awaiters, running, exited threads");
    world w;
    world_new(&w, minor);
    fake_target *ft = w.ft;
    uint64_t in3 = fake_add_interp(ft, 3);
    link_list(&w, interp_head(&w, in3), NULL, 0);
    fake_thread *t2 = add_thread(&w, w.interp, 502), *t3 = add_thread(&w, in3, 503);

    /* A: serve -> Client.read -> Stream.wait -> a future (not a coroutine) */
    uint64_t fut = new_obj(&w, fake_type(ft, "_asyncio.Future"), 64);
    uint64_t a3 = new_coro(&w, w.code_c, 5), a2 = new_coro(&w, w.code_b, 1),
             a1 = new_coro(&w, w.code_a, 9);
    gen_await(&w, a3, fut);
    gen_await(&w, a2, a3);
    gen_await(&w, a1, a2);
    uint64_t A = new_task(&w, fake_str(ft, "server"), a1, PYF_TASK_PENDING);
    uint64_t b2 = new_coro(&w, w.code_c, 2), b1 = new_coro(&w, w.code_b, 0);
    gen_await(&w, b1, b2);
    uint64_t B = new_task(&w, fake_str(ft, "worker-ü"), b1, PYF_TASK_PENDING);
    uint64_t c1 = new_coro(&w, w.code_a, 0);
    gen_state(&w, c1, st_cleared(&w));
    uint64_t C = new_task(&w, fake_str(ft, "cancelled"), c1, PYF_TASK_CANCELLED);
    uint64_t D = new_task(&w, fake_str(ft, "done"), 0, PYF_TASK_FINISHED);
    uint64_t BC[] = {B, C};
    awaited_by(&w, A, new_set(&w, BC, 2), 1);
    awaited_by(&w, B, C, 0);
    uint64_t E = new_task(&w, int_name(&w, 7), new_coro(&w, w.code_a, 1), PYF_TASK_PENDING);
    /* G (its thread gone): serve awaits an asend wrapper of an async generator */
    uint64_t agen = new_gen(&w, fake_type(ft, "async_generator"), w.code_agen, 3);
    uint64_t asend = new_obj(&w, fake_type(ft, "async_generator_asend"), 32);
    fake_w64(ft, asend + 16, agen);
    uint64_t g1 = new_coro(&w, w.code_a, 4);
    gen_await(&w, g1, asend);
    uint64_t G = new_task(&w, fake_str(ft, "orphan"), g1, PYF_TASK_PENDING);
    /* H: awaits an object of a class named "coroutine": the chain ends */
    uint64_t h2 = new_gen(&w, heap_type(&w, "coroutine"), w.code_c, 0), h1 = new_coro(&w, w.code_b, 0);
    gen_await(&w, h1, h2);
    uint64_t H = new_task(&w, fake_str(ft, "heap"), h1, PYF_TASK_PENDING);
    uint64_t I = new_task(&w, fake_str(ft, "sub"), 0, PYF_TASK_PENDING);

    link_list(&w, thread_head(&w, w.th), (uint64_t[]){A, B, C, D}, 4);
    link_list(&w, thread_head(&w, t2), (uint64_t[]){E}, 1);
    link_list(&w, interp_head(&w, w.interp), (uint64_t[]){G, H}, 2);
    link_list(&w, thread_head(&w, t3), (uint64_t[]){I}, 1);
    uint64_t loop = new_obj(&w, fake_type(ft, "_UnixSelectorEventLoop"), 32);
    set_running(&w, w.th, loop, B | 1);
    set_running(&w, t2, 0, E); /* no loop running: E is not running */

    pyf_target *t = open_tasks(&w);
    pyf_task_list tl;
    for (int round = 0; round < 2; round++) { /* the second with the types known */
        pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
        CHECK_RC(tl.status, PYF_OK);
        CHECK_RC(tl.list_error, PYF_OK);
        CHECK_EQ_INT(s->nthreads, 3);
        CHECK_EQ_INT(tl.ntasks, 8);
        CHECK_EQ_INT(tl.nawaited_by, 3);
        const char *sa[] = {"Stream.wait", "Client.read", "serve"};
        const pyf_task *k = expect(s, &tl, A, "server", sa, 3, BC, 2);
        if (k != NULL) {
            fake_loc l;
            REQUIRE(fake_loc_at(L, NL(L), 9, &l) == 0);
            CHECK_EQ_INT(s->frames[k->first_frame + 2].info.line, l.line);
            CHECK_ADDR(s->frames[k->first_frame + 2].frame_addr, a1 + off(&w, "gen_object.gi_iframe"));
            CHECK_ADDR(k->coro_addr, a1);
            CHECK_EQ_INT(k->state, PYF_TASK_PENDING);
            CHECK_EQ_INT(k->flags, 0);
            CHECK_ADDR(k->tstate_addr, fake_thread_addr(w.th));
            CHECK_EQ_INT(k->native_thread_id, 501);
            CHECK_EQ_INT(k->interp_id, 0);
        }
        const char *sb[] = {"Stream.wait", "Client.read"};
        k = expect(s, &tl, B, "worker-ü", sb, 2, &C, 1);
        CHECK(k == NULL || k->flags == PYF_TASK_RUNNING);
        k = expect(s, &tl, C, "cancelled", NULL, 0, NULL, 0);
        CHECK(k == NULL || (k->state == PYF_TASK_CANCELLED && k->error == 0));
        k = expect(s, &tl, D, "done", NULL, 0, NULL, 0);
        CHECK(k == NULL || (k->state == PYF_TASK_FINISHED && k->coro_addr == 0));
        const char *se[] = {"serve"};
        k = expect(s, &tl, E, "Task-7", se, 1, NULL, 0);
        CHECK(k == NULL || (k->flags == PYF_TASK_NAME_NOT_STR && k->native_thread_id == 502));
        const char *sg[] = {"Stream.chunks", "serve"};
        int ig = -1, ih = -1, ie = -1, ia = -1;
        k = expect(s, &tl, G, "orphan", sg, 2, NULL, 0);
        CHECK(k == NULL || (k->flags == PYF_TASK_THREAD_GONE && k->tstate_addr == 0 &&
                            k->thread_id == 0 && k->native_thread_id == 0 && k->interp_id == 0));
        /* each frame named by its owner: an async generator, a coroutine */
        if (k != NULL && k->nframes == 2) {
            CHECK_EQ_INT(s->frames[k->first_frame].info.flags,
                         PYF_FRAME_GENERATOR | PYF_FRAME_ASYNC_GENERATOR);
            CHECK_EQ_INT(s->frames[k->first_frame + 1].info.flags,
                         PYF_FRAME_GENERATOR | PYF_FRAME_COROUTINE);
        }
        const char *sh[] = {"Client.read"};
        k = expect(s, &tl, H, "heap", sh, 1, NULL, 0);
        CHECK(k == NULL || k->error == 0);
        k = expect(s, &tl, I, "sub", NULL, 0, NULL, 0);
        CHECK(k == NULL || (k->interp_id == 3 && k->native_thread_id == 503));
        find(&tl, G, &ig), find(&tl, H, &ih), find(&tl, E, &ie), find(&tl, A, &ia);
        CHECK_MSG(ig > ie && ig > ia && ih > ie && ih > ia,
                  "interpreter's list before its threads' (%d %d %d %d)", ig, ih, ie, ia);
        pyf_snapshot_free(s);
    }

    /* one thread walked: every task still read */
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS | PYF_SNAP_ONE_THREAD, 501, &tl);
    CHECK_EQ_INT(s->nthreads, 1);
    CHECK_EQ_INT(tl.ntasks, 8);
    pyf_snapshot_free(s);
    /* not asked for: ENOTSUP, no tasks */
    s = take(t, 0, 0, &tl);
    CHECK_RC(tl.status, PYF_ENOTSUP);
    CHECK_EQ_INT(tl.ntasks, 0);
    CHECK_RC(pyf_snapshot_tasks(NULL, &tl), PYF_EINVAL);
    tl.struct_size = 8;
    CHECK_RC(pyf_snapshot_tasks(s, &tl), PYF_EINVAL);
    pyf_snapshot_free(s);
    world_free(&w, t);
}

static void test_await_cycle(int minor)
{
    begin(minor, "tasks awaiting each other");
    world w;
    world_new(&w, minor);
    uint64_t a = new_coro(&w, w.code_a, 0), b = new_coro(&w, w.code_b, 0);
    uint64_t A = new_task(&w, fake_str(w.ft, "A"), a, PYF_TASK_PENDING);
    uint64_t B = new_task(&w, fake_str(w.ft, "B"), b, PYF_TASK_PENDING);
    awaited_by(&w, A, B, 0);
    uint64_t setA = new_set(&w, &A, 1);
    awaited_by(&w, B, setA, 1);
    link_list(&w, thread_head(&w, w.th), (uint64_t[]){A, B}, 2);
    pyf_target *t = open_tasks(&w);
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_RC(tl.list_error, PYF_OK);
    CHECK_EQ_INT(tl.ntasks, 2);
    const char *sa[] = {"serve"}, *sb[] = {"Client.read"};
    const pyf_task *k = expect(s, &tl, A, "A", sa, 1, &B, 1);
    CHECK(k == NULL || k->error == 0);
    k = expect(s, &tl, B, "B", sb, 1, &A, 1);
    CHECK(k == NULL || k->error == 0);
    pyf_snapshot_free(s);
    world_free(&w, t);
}

static void test_coro_cycle(int minor)
{
    begin(minor, "await chain that loops");
    world w;
    world_new(&w, minor);
    uint64_t x = new_coro(&w, w.code_a, 0), y = new_coro(&w, w.code_b, 0);
    gen_await(&w, x, y);
    gen_await(&w, y, x);
    uint64_t z = new_coro(&w, w.code_c, 0);
    gen_await(&w, z, z);
    uint64_t X = new_task(&w, fake_str(w.ft, "X"), x, PYF_TASK_PENDING);
    uint64_t Z = new_task(&w, fake_str(w.ft, "Z"), z, PYF_TASK_PENDING);
    uint64_t Y = new_task(&w, fake_str(w.ft, "Y"), new_coro(&w, w.code_c, 1), PYF_TASK_PENDING);
    awaited_by(&w, X, Y, 0);
    link_list(&w, thread_head(&w, w.th), (uint64_t[]){X, Z, Y}, 3);
    pyf_target *t = open_tasks(&w);
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_RC(tl.list_error, PYF_OK);
    CHECK_EQ_INT(tl.ntasks, 3);
    const char *sx[] = {"Client.read", "serve"}, *sz[] = {"Stream.wait"};
    const pyf_task *k = expect(s, &tl, X, "X", sx, 2, &Y, 1); /* awaiters still read */
    CHECK(k == NULL || (k->error == PYF_ECYCLE && k->failure && k->failure->detail[0]));
    k = expect(s, &tl, Z, "Z", sz, 1, NULL, 0);
    CHECK(k == NULL || k->error == PYF_ECYCLE);
    k = expect(s, &tl, Y, "Y", sz, 1, NULL, 0);
    CHECK(k == NULL || k->error == 0);
    pyf_snapshot_free(s);
    world_free(&w, t);
}

/* The thread's list [tasks[0..2]] is broken: the error, the tasks read
 * before the break, the interpreter's list still read. */
static void list_case(pyf_target *t, const uint64_t *tasks, int want_rc, int npresent,
                      uint64_t orphan)
{
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_RC(tl.list_error, want_rc);
    CHECK(tl.list_error < 0 && fake_known_error(tl.list_error));
    CHECK(tl.failure != NULL && tl.failure->code == tl.list_error && tl.failure->detail[0]);
    CHECK_MSG(s->nthreads == 1 && s->threads[0].nframes >= 1, "threads still there");
    for (int i = 0; i < 3; i++)
        CHECK_MSG((find(&tl, tasks[i], NULL) != NULL) == (i < npresent),
                  "task %d of the broken list %s", i, i < npresent ? "missing" : "listed");
    CHECK_MSG(find(&tl, orphan, NULL) != NULL, "the interpreter's list was not read");
    CHECK_EQ_INT(tl.ntasks, npresent + 1);
    if (tl.failure != NULL)
        fprintf(stderr, "   list_error %s: %s\n", pyf_error_name(tl.list_error),
                tl.failure->detail);
    pyf_snapshot_free(s);
}

static void test_broken_lists(int minor)
{
    begin(minor, "broken task lists");
    world w;
    world_new(&w, minor);
    uint64_t T[3];
    for (int i = 0; i < 3; i++)
        T[i] = new_task(&w, fake_str(w.ft, "t"), new_coro(&w, w.code_a, i), PYF_TASK_PENDING);
    uint64_t G = new_task(&w, fake_str(w.ft, "orphan"), 0, PYF_TASK_PENDING);
    link_list(&w, interp_head(&w, w.interp), &G, 1);
    uint64_t head = thread_head(&w, w.th);
    pyf_target *t = open_tasks(&w);

    link_list(&w, head, T, 3); /* unmapped next */
    fake_w64(w.ft, node_of(&w, T[1]), fake_unmapped_addr(w.ft));
    list_case(t, T, PYF_EFAULT, 2, G);
    link_list(&w, head, T, 3); /* back to an earlier node, not the head */
    fake_w64(w.ft, node_of(&w, T[2]), node_of(&w, T[1]));
    list_case(t, T, PYF_ECYCLE, 3, G);
    link_list(&w, head, T, 3); /* misaligned */
    fake_w64(w.ft, node_of(&w, T[1]), node_of(&w, T[0]) + 4);
    list_case(t, T, PYF_ECORRUPT, 2, G);
    link_list(&w, head, T, 3); /* a NULL first link */
    fake_w64(w.ft, head, 0);
    list_case(t, T, PYF_ECORRUPT, 0, G);
    world_free(&w, t);
}

/* A thread list that breaks (a loop, past the thread limit, a bad link)
 * ends the tasks' visit of that interpreter where it ends the stack walk's,
 * with the same code: the thread shown as unreadable, the task list's
 * list_error.  The tasks of the threads before the break and of the
 * interpreter's own list are kept. */
static void thread_list_case(world *w, const pyf_options *opts, const uint64_t T[2],
                             uint64_t orphan, int want_rc)
{
    pyf_target *t = fake_open(w->ft, opts, 1);
    REQUIRE(t != NULL);
    CHECK_RC(pyf_target_set_asyncio(t, w->table), PYF_OK);
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    /* the walk: the second thread (listed first), maybe the first, then
     * the break as a thread that could not be read */
    REQUIRE(s->nthreads >= 2);
    const pyf_thread *bad = &s->threads[s->nthreads - 1];
    CHECK_RC(bad->error, want_rc);
    CHECK_RC(tl.list_error, want_rc);
    /* the same words, but a read's length: the tasks read more of a state */
    CHECK(tl.failure != NULL && bad->failure != NULL &&
          (want_rc == PYF_EFAULT || strcmp(tl.failure->detail, bad->failure->detail) == 0));
    CHECK_MSG(find(&tl, T[1], NULL) != NULL, "the task of the thread before the break");
    CHECK_EQ_INT(find(&tl, T[0], NULL) != NULL, s->nthreads == 3);
    CHECK_MSG(find(&tl, orphan, NULL) != NULL, "the interpreter's list was not read");
    fprintf(stderr, "   %s: %s\n", pyf_error_name(tl.list_error),
            tl.failure ? tl.failure->detail : "");
    pyf_snapshot_free(s);
    pyf_target_close(t);
}

static void test_broken_thread_lists(int minor)
{
    begin(minor, "broken thread lists, as the stack walk sees them");
    world w;
    world_new(&w, minor);
    fake_thread *th2 = add_thread(&w, w.interp, 502); /* listed before w.th */
    uint64_t T[2];
    T[0] = new_task(&w, fake_str(w.ft, "one"), new_coro(&w, w.code_a, 0), PYF_TASK_PENDING);
    T[1] = new_task(&w, fake_str(w.ft, "two"), new_coro(&w, w.code_b, 0), PYF_TASK_PENDING);
    link_list(&w, thread_head(&w, w.th), &T[0], 1);
    link_list(&w, thread_head(&w, th2), &T[1], 1);
    uint64_t G = new_task(&w, fake_str(w.ft, "orphan"), 0, PYF_TASK_PENDING);
    link_list(&w, interp_head(&w, w.interp), &G, 1);
    uint64_t next = fake_thread_addr(w.th) + off(&w, "thread_state.next");

    fake_w64(w.ft, next, fake_thread_addr(th2)); /* back to the first */
    thread_list_case(&w, NULL, T, G, PYF_ECYCLE);
    fake_w64(w.ft, next, fake_thread_addr(th2) + 4); /* misaligned */
    thread_list_case(&w, NULL, T, G, PYF_ECORRUPT);
    fake_w64(w.ft, next, fake_unmapped_addr(w.ft)); /* unreadable */
    thread_list_case(&w, NULL, T, G, PYF_EFAULT);
    fake_w64(w.ft, next, 0); /* whole again, but one thread allowed */
    pyf_options opts = {.struct_size = sizeof opts, .max_threads = 1};
    thread_list_case(&w, &opts, T, G, PYF_EDEPTH);
    fake_free(w.ft);
}

static void bad_table(world *w, pyf_target *t, int field, uint64_t value)
{
    uint64_t v[NFIELDS];
    memcpy(v, w->v, sizeof v);
    v[field] = value;
    int rc = pyf_target_set_asyncio(t, write_table(w, v));
    CHECK_MSG(rc == PYF_EOFFSETS, "field %d = 0x%" PRIx64 ": %s", field, value,
              pyf_error_name(rc));
    CHECK_MSG(strstr(fake_last_detail(t), "implausible") != NULL, "detail: %s",
              fake_last_detail(t));
}

static void test_bad_table(int minor)
{
    begin(minor, "implausible asyncio tables");
    world w;
    world_new(&w, minor);
    uint64_t A = new_task(&w, fake_str(w.ft, "A"), new_coro(&w, w.code_a, 0), PYF_TASK_PENDING);
    link_list(&w, thread_head(&w, w.th), &A, 1);
    pyf_target *t = open_tasks(&w);
    bad_table(&w, t, T_SIZE, 0);
    bad_table(&w, t, T_SIZE, 1ull << 40);
    bad_table(&w, t, T_CORO, 168);               /* outside the task */
    bad_table(&w, t, T_NODE, 160);               /* its second word outside */
    bad_table(&w, t, T_NAME, 1ull << 62);
    bad_table(&w, t, T_AWAITED_BY, 97);          /* misaligned */
    bad_table(&w, t, TH_HEAD, w.v[TH_SIZE] - 8); /* beyond the thread state */
    bad_table(&w, t, TH_SIZE, 64);               /* smaller than PyThreadState */
    bad_table(&w, t, TH_SIZE, 1ull << 40);
    bad_table(&w, t, I_SIZE, 1ull << 40);
    bad_table(&w, t, I_HEAD, UINT64_MAX - 8);
    CHECK_RC(pyf_target_set_asyncio(t, fake_unmapped_addr(w.ft)), PYF_EFAULT);
    CHECK(fake_last_detail(t)[0] != '\0');
    CHECK_RC(pyf_target_set_asyncio(t, w.table + 4), PYF_EINVAL);
    bad_table(&w, t, T_SIZE, 0); /* the last refusal is the one reported */

    /* threads are still read; tasks are not (the table was not accepted) */
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_EQ_INT(s->nthreads, 1);
    CHECK(s->nthreads == 1 && s->threads[0].nframes >= 1 &&
          (s->threads[0].flags & PYF_THREAD_COMPLETE));
    CHECK_MSG(tl.status == PYF_EOFFSETS, "status %s", pyf_error_name(tl.status));
    CHECK(tl.failure != NULL && strstr(tl.failure->detail, "implausible") != NULL);
    CHECK_EQ_INT(tl.ntasks, 0);
    fprintf(stderr, "   after the refused tables: status %s: %s\n", pyf_error_name(tl.status),
            tl.failure ? tl.failure->detail : "");
    pyf_snapshot_free(s);
    /* a good table again */
    CHECK_RC(pyf_target_set_asyncio(t, w.table), PYF_OK);
    s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_RC(tl.status, PYF_OK);
    CHECK_EQ_INT(tl.ntasks, 1);
    pyf_snapshot_free(s);
    world_free(&w, t);
}

static void test_bad_sets(int minor)
{
    begin(minor, "implausible awaited_by sets");
    world w;
    world_new(&w, minor);
    uint64_t T[4], sets[4];
    for (int i = 0; i < 4; i++) {
        T[i] = new_task(&w, fake_str(w.ft, "t"), new_coro(&w, w.code_a, 0), PYF_TASK_PENDING);
        sets[i] = new_set(&w, &w.decoy, 1);
        awaited_by(&w, T[i], sets[i], 1);
    }
    uint64_t mask = off(&w, "set_object.mask"), used = off(&w, "set_object.used");
    fake_w64(w.ft, sets[0] + mask, 6);                  /* not 2^n - 1 */
    fake_w64(w.ft, sets[1] + mask, (1ull << 40) - 1);   /* huge */
    fake_w64(w.ft, sets[2] + used, 9);                  /* more used than slots */
    link_list(&w, thread_head(&w, w.th), T, 4);
    pyf_target *t = open_tasks(&w);
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_RC(tl.list_error, PYF_OK);
    CHECK_EQ_INT(tl.ntasks, 4);
    const char *st[] = {"serve"};
    for (int i = 0; i < 4; i++) {
        const pyf_task *k = expect(s, &tl, T[i], "t", st, 1, i == 3 ? &w.decoy : NULL, i == 3);
        if (k != NULL)
            CHECK_RC(k->error, i == 3 ? PYF_OK : PYF_ECORRUPT);
    }
    pyf_snapshot_free(s);
    world_free(&w, t);
}

static void test_313(void)
{
    begin(13, "no asyncio task layout");
    world w;
    world_new(&w, 13);
    pyf_target *t = fake_open(w.ft, NULL, 1);
    REQUIRE(t != NULL);
    CHECK_RC(pyf_target_set_asyncio(t, w.table), PYF_ENOTSUP);
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_RC(tl.status, PYF_ENOTSUP);
    CHECK_EQ_INT(tl.ntasks, 0);
    CHECK(s->nthreads == 1 && s->threads[0].nframes >= 1);
    pyf_snapshot_free(s);
    world_free(&w, t);
}

/* A running task created by a thread that has exited: it is on the
 * interpreter's list, which is read after the thread that runs it. */
static void test_running_elsewhere(int minor)
{
    begin(minor, "running task on a later list");
    world w;
    world_new(&w, minor);
    uint64_t T[3];
    for (int i = 0; i < 3; i++)
        T[i] = new_task(&w, fake_str(w.ft, "t"), new_coro(&w, w.code_a, i), PYF_TASK_PENDING);
    link_list(&w, interp_head(&w, w.interp), T, 3);
    set_running(&w, w.th, new_obj(&w, fake_type(w.ft, "loop"), 32), T[1]);
    pyf_target *t = open_tasks(&w);
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    /* LIBRARY BUG (see the report): the running task, read first for its
     * thread, is then taken for a loop of the interpreter's list: ECYCLE
     * and the tasks after it are lost. */
    CHECK_MSG(tl.list_error == PYF_OK, "list_error %s: %s", pyf_error_name(tl.list_error),
              tl.failure ? tl.failure->detail : "");
    CHECK_EQ_INT(tl.ntasks, 3);
    for (int i = 0; i < 3; i++)
        CHECK_MSG(find(&tl, T[i], NULL) != NULL, "task %d missing", i);
    const pyf_task *k = find(&tl, T[1], NULL);
    CHECK(k == NULL || (k->flags & PYF_TASK_RUNNING));
    pyf_snapshot_free(s);
    world_free(&w, t);
}

/* A running task whose coroutine has just returned: CPython has taken it
 * off its thread's list (state finished) and clears the running task only
 * when the step ends.  Done, it is not listed (as CPython's own reader,
 * which lists what the lists hold); a pending running task off the lists
 * is. */
static void test_running_done(int minor)
{
    begin(minor, "running task done, off its list");
    world w;
    world_new(&w, minor);
    uint64_t on = new_task(&w, fake_str(w.ft, "on"), new_coro(&w, w.code_a, 0), PYF_TASK_PENDING);
    uint64_t done = new_task(&w, fake_str(w.ft, "done"), 0, PYF_TASK_FINISHED);
    link_list(&w, thread_head(&w, w.th), &on, 1);
    set_running(&w, w.th, new_obj(&w, fake_type(w.ft, "loop"), 32), done);
    pyf_target *t = open_tasks(&w);
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_EQ_INT(tl.ntasks, 1);
    CHECK(find(&tl, on, NULL) != NULL);
    CHECK_MSG(find(&tl, done, NULL) == NULL, "a done running task off its list is listed");
    pyf_snapshot_free(s);
    /* a pending one off the lists (being set up) is listed, as running */
    fake_w32(w.ft, done + w.v[T_AWAITED_BY] + 8, PYF_TASK_PENDING); /* the state */
    s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_EQ_INT(tl.ntasks, 2);
    const pyf_task *k = find(&tl, done, NULL);
    CHECK(k != NULL && (k->flags & PYF_TASK_RUNNING));
    pyf_snapshot_free(s);
    world_free(&w, t);
}

/* More distinct types than the library remembers before the first
 * coroutine is seen; that type is then met again (a second task). */
static void test_many_types(int minor)
{
    begin(minor, "coroutines after 4100 other types");
    world w;
    world_new(&w, minor);
    enum { N = 4100 };
    uint64_t *T = calloc(N + 2, sizeof *T);
    REQUIRE(T != NULL);
    for (int i = 0; i < N; i++) {
        char tn[32];
        snprintf(tn, sizeof tn, "Name%d", i);
        T[i] = new_task(&w, new_obj(&w, fake_type(w.ft, tn), 16), 0, PYF_TASK_PENDING);
    }
    T[N] = new_task(&w, fake_str(w.ft, "first"), new_coro(&w, w.code_a, 0), PYF_TASK_PENDING);
    T[N + 1] = new_task(&w, fake_str(w.ft, "second"), new_coro(&w, w.code_b, 0),
                        PYF_TASK_PENDING);
    link_list(&w, thread_head(&w, w.th), T, N + 2);
    pyf_target *t = open_tasks(&w);
    pyf_task_list tl;
    pyf_snapshot *s = take(t, PYF_SNAP_TASKS, 0, &tl);
    CHECK_EQ_INT(tl.ntasks, N + 2);
    /* LIBRARY BUG (see the report): past 4096 remembered types a new type
     * is still put in the map, with kind 0: its first object is recognised,
     * the next ones (kind 0 from the map) are not.  Here "str" and
     * "coroutine" are first met by "first": "second" loses its name
     * ("<object at ...>") and its stack. */
    const char *s1[] = {"serve"}, *s2[] = {"Client.read"};
    expect(s, &tl, T[N], "first", s1, 1, NULL, 0);
    expect(s, &tl, T[N + 1], "second", s2, 1, NULL, 0);
    pyf_snapshot_free(s);
    world_free(&w, t);
    free(T);
}

int main(void)
{
    test_313();
    for (int minor = 14; minor <= 15; minor++) {
        test_happy(minor);
        test_await_cycle(minor);
        test_coro_cycle(minor);
        test_broken_lists(minor);
        test_broken_thread_lists(minor);
        test_bad_table(minor);
        test_bad_sets(minor);
        test_running_elsewhere(minor);
        test_running_done(minor);
        test_many_types(minor);
    }
    fake_watchdog(0, NULL);
    return check_end();
}
