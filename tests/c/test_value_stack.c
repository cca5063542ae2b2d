/*
 * test_value_stack.c - a frame's value stack (pyf_frame_locals with
 * PYF_VALUES_STACK) on synthetic images laid out from CPython's own headers
 * (ft_layout.h), for 3.11 and 3.12, and 3.13, 3.14 and 3.15, default and
 * free-threaded:
 *
 * - the entries between the locals and the saved stack pointer (3.14+
 *   stackpointer, 3.11-3.13 stacktop), bottom first, as PYF_LOCAL_STACK
 *   entries: objects, NULL (unbound), 3.14+ tagged references and tagged
 *   ints, a method_descriptor with its name, an RLock with its owner and
 *   count, a bound builtin with its __self__ one level down;
 * - the instruction the frame is at (opcode, oparg): the code unit at
 *   instr_ptr (3.13+), or (3.11, 3.12) the instruction prev_instr's unit
 *   belongs to, found by the opcodes' inline caches (a call's last cache
 *   entry: the CALL); unknown before the first instruction and past 3.12's
 *   INSTRUMENTED_LINE;
 * - 3.11, whose running frame's stacktop is stale: trusted only when the
 *   frame is suspended in a call the eval loop made (prev_instr on its
 *   caches) or is a generator's suspended at a yield; else as unsaved;
 * - bounds: a stack pointer below the locals, past co_stacksize, not
 *   slot-aligned, 3.13's -1 (the frame runs), an unreadable stack: one
 *   PYF_LOCAL_NO_STACK entry saying why, the locals still read;
 * - PYF_VALUES_STACK_UNSAVED: 3.13's -1 gives every co_stacksize slot,
 *   each flagged PYF_LOCAL_UNSAVED;
 * - a coroutine suspended in an await: what it awaits flagged
 *   PYF_LOCAL_AWAITED (3.14: the top of its stack, 3.15: the slot under
 *   it), an _asyncio.FutureIter with its future; nothing while it runs,
 *   nor on 3.13 (no gen_object layout in its table);
 * - garbage entries: UNREADABLE nodes, never a failed call;
 * - PYF_VALUES_STACK_ONLY: the same entries without the locals;
 * - without the flag: the locals only, opcode PYF_NO_VALUE.
 */
#include <string.h>

#include "../../native/src/api.h"
#include "../../native/src/offsets.h"
#include "../../native/src/target.h"
#include "fake_target.h"

#define NLOCALS 2u
#define STACKSIZE 6

static const pyf_value *V(const pyf_values *v, uint32_t i)
{
    REQUIRE(i < v->nvalues);
    return &v->values[i];
}

typedef struct stack_frame {
    uint64_t frame, base, code;
} stack_frame;

/* def f(a, b) with co_stacksize STACKSIZE, at its first code unit; on
 * 3.11/3.12 a CALL 1 there, prev_instr on its last cache entry (suspended
 * in the call: its stack saved). */
static stack_frame new_frame(fake_target *ft)
{
    const ft_layout *l = fake_layout(ft);
    static const fake_loc L[] = {{8, 1, 1, 0, 4}}; /* room for a CALL and its caches */
    static const char *const names[] = {"a", "b"};
    static const uint8_t kinds[] = {0x20, 0x20};
    stack_frame s;
    s.code = fake_code(ft, "/m.py", "f", 1, L, 1);
    fake_code_locals(ft, s.code, names, kinds, NLOCALS, 2, 0, 0);
    fake_w32(ft, s.code + fake_layout(ft)->values.code_stacksize, STACKSIZE);
    uint64_t slots[NLOCALS + STACKSIZE + 2] = {fake_int(ft, 1), fake_int(ft, 2)};
    s.frame = fake_locals_frame(ft, s.code, 0, slots, NLOCALS + STACKSIZE + 2);
    s.base = s.frame + fake_off(ft, "interpreter_frame.localsplus") + 8 * NLOCALS;
    uint64_t unit0 = s.code + fake_off(ft, "code_object.co_code_adaptive");
    fake_w64(ft, s.frame + fake_off(ft, "interpreter_frame.instr_ptr"), unit0);
    if (l->opcode_call >= 0) {
        fake_w16(ft, unit0, (uint16_t)(l->opcode_call | 1 << 8));
        for (int k = 1; k <= l->call_caches; k++)
            fake_w16(ft, unit0 + 2 * (uint64_t)k, 0);
        fake_w64(ft, s.frame + fake_off(ft, "interpreter_frame.instr_ptr"),
                 unit0 + 2 * (uint64_t)l->call_caches);
    }
    return s;
}

/* The opcode the frame of new_frame is at. */
static uint32_t new_frame_opcode(fake_target *ft)
{
    return fake_layout(ft)->opcode_call >= 0 ? (uint32_t)fake_layout(ft)->opcode_call
                                             : 0x1b; /* fake_code's units: 0x011b */
}

/* The saved stack pointer: depth slots above the locals (may be anything). */
static void set_depth(fake_target *ft, const stack_frame *s, int64_t depth)
{
    if (fake_minor(ft) >= 14)
        fake_w64(ft, s->frame + fake_off(ft, "interpreter_frame.stackpointer"),
                 s->base + (uint64_t)(depth * 8));
    else
        fake_w32(ft, s->frame + fake_layout(ft)->frame_stacktop,
                 (uint32_t)(int32_t)(depth < 0 ? -1 : (int64_t)NLOCALS + depth));
}

static pyf_values *read_stack(pyf_target *t, uint64_t frame, uint32_t flags)
{
    pyf_values_request r = {sizeof r, flags, 0, 0, 0, 0, 0};
    pyf_values *v = NULL;
    CHECK_RC(pyf_frame_locals(t, frame, &r, &v), PYF_OK);
    REQUIRE(v != NULL);
    return v;
}

static uint64_t method_descriptor(fake_target *ft, const char *name)
{
    uint64_t a = fake_obj(ft, fake_type(ft, "method_descriptor"), 96);
    uint64_t def = fake_alloc(ft, 32), text = fake_alloc(ft, strlen(name) + 1);
    fake_write(ft, text, name, strlen(name) + 1);
    fake_w64(ft, def, text);
    fake_w64(ft, a + fake_layout(ft)->values.method_descr_method, def);
    return a;
}

static uint64_t rlock(fake_target *ft, uint64_t owner, uint64_t count)
{
    uint64_t a = fake_obj(ft, fake_heap_type(ft, "_thread.RLock", "_thread", "RLock", 0, 0, 0),
                          64);
    fake_w64(ft, a + fake_layout(ft)->values.rlock_owner, owner);
    fake_w64(ft, a + fake_layout(ft)->values.rlock_count, count);
    return a;
}

static void entries(fake_target *ft, pyf_target *t)
{
    stack_frame s = new_frame(ft);
    uint64_t lock = rlock(ft, 0x7f0012345600ull, 2);
    uint64_t desc = method_descriptor(ft, "__exit__");
    uint64_t bound = fake_builtin(ft, "acquire", lock);
    uint64_t deferred = fake_minor(ft) >= 14 ? fake_int(ft, 5) | 1 : fake_int(ft, 5);
    uint64_t tagged = fake_minor(ft) >= 14 ? (uint64_t)(7 << 2 | 3) : fake_int(ft, 7);
    const uint64_t stack[] = {desc, lock, bound, 0, deferred, tagged};
    for (size_t i = 0; i < 6; i++)
        fake_w64(ft, s.base + 8 * i, stack[i]);
    set_depth(ft, &s, 6);
    pyf_values *v = read_stack(t, s.frame, PYF_VALUES_STACK);
    CHECK_EQ_INT(v->nlocals, NLOCALS + 6);
    const pyf_local *l = v->locals;
    CHECK_EQ_STR(l[0].name, "a");
    CHECK_EQ_INT(l[1].kind, PYF_LOCAL_ARG);
    for (uint32_t i = NLOCALS; i < v->nlocals; i++) {
        CHECK_EQ_INT(l[i].kind, PYF_LOCAL_STACK);
        CHECK_EQ_STR(l[i].name, "");
    }
    const pyf_local *e = l + NLOCALS;
    CHECK_EQ_STR(V(v, e[0].value)->type_name, "method_descriptor");
    CHECK_EQ_STR(V(v, e[0].value)->data, "__exit__");
    const pyf_value *r = V(v, e[1].value);
    CHECK_EQ_STR(r->type_name, "_thread.RLock");
    CHECK(r->addr == lock && (uint64_t)r->number == 0x7f0012345600ull && r->length == 2);
    const pyf_value *b = V(v, e[2].value);
    CHECK(b->kind == PYF_VALUE_BUILTIN && b->nchildren == 1);
    CHECK_EQ_STR(b->data, "acquire");
    const pyf_value *self = V(v, b->first_child);
    CHECK(self->addr == lock && (uint64_t)self->number == 0x7f0012345600ull);
    CHECK(e[3].value == PYF_NO_VALUE && (e[3].flags & PYF_LOCAL_UNBOUND));
    CHECK(V(v, e[4].value)->kind == PYF_VALUE_INT && V(v, e[4].value)->data[0] == 5);
    CHECK(V(v, e[5].value)->kind == PYF_VALUE_INT && V(v, e[5].value)->data[0] == 7);
    CHECK_EQ_INT(v->opcode, new_frame_opcode(ft));
    CHECK_EQ_INT(v->oparg, 1);
    pyf_values_free(v);
    /* the stack only: the same entries, no locals */
    v = read_stack(t, s.frame, PYF_VALUES_STACK | PYF_VALUES_STACK_ONLY);
    CHECK_EQ_INT(v->nlocals, 6);
    CHECK(v->locals[0].kind == PYF_LOCAL_STACK && v->code_addr == s.code);
    CHECK_EQ_STR(V(v, v->locals[0].value)->data, "__exit__");
    CHECK(v->opcode == new_frame_opcode(ft) && V(v, v->locals[1].value)->addr == lock);
    pyf_values_free(v);
    /* an empty stack: no entry */
    set_depth(ft, &s, 0);
    v = read_stack(t, s.frame, PYF_VALUES_STACK);
    CHECK_EQ_INT(v->nlocals, NLOCALS);
    pyf_values_free(v);
    /* without the flag: the locals only */
    set_depth(ft, &s, 6);
    v = read_stack(t, s.frame, 0);
    CHECK_EQ_INT(v->nlocals, NLOCALS);
    CHECK(v->opcode == PYF_NO_VALUE && v->oparg == PYF_NO_VALUE);
    pyf_values_free(v);
}

/* One NO_STACK entry after the locals, its value saying why. */
static void check_no_stack(pyf_target *t, uint64_t frame, const char *why, int line)
{
    pyf_values *v = read_stack(t, frame, PYF_VALUES_STACK);
    CHECK_MSG(v->nlocals == NLOCALS + 1, "line %d: %u entries", line, v->nlocals);
    if (v->nlocals == NLOCALS + 1) {
        const pyf_local *e = &v->locals[NLOCALS];
        CHECK(e->kind == PYF_LOCAL_STACK && e->flags == PYF_LOCAL_NO_STACK);
        const pyf_value *n = V(v, e->value);
        CHECK_MSG(n->kind == PYF_VALUE_UNREADABLE && strstr(n->data, why) != NULL,
                  "line %d: %s", line, n->data);
    }
    CHECK(v->locals[0].value != PYF_NO_VALUE); /* the locals are still read */
    pyf_values_free(v);
}

static void bounds(fake_target *ft, pyf_target *t)
{
    stack_frame s = new_frame(ft);
    set_depth(ft, &s, STACKSIZE + 1);
    check_no_stack(t, s.frame, "outside the frame's stack", __LINE__);
    set_depth(ft, &s, STACKSIZE);
    pyf_values *v = read_stack(t, s.frame, PYF_VALUES_STACK); /* full: fine */
    CHECK_EQ_INT(v->nlocals, NLOCALS + STACKSIZE);
    pyf_values_free(v);
    if (fake_minor(ft) >= 14) {
        set_depth(ft, &s, -1);
        check_no_stack(t, s.frame, "outside the frame's stack", __LINE__);
        fake_w64(ft, s.frame + fake_off(ft, "interpreter_frame.stackpointer"), s.base + 12);
        check_no_stack(t, s.frame, "outside the frame's stack", __LINE__);
        fake_w64(ft, s.frame + fake_off(ft, "interpreter_frame.stackpointer"), 0);
        check_no_stack(t, s.frame, "outside the frame's stack", __LINE__);
    } else {
        set_depth(ft, &s, -1);
        check_no_stack(t, s.frame, "the frame runs", __LINE__);
        fake_w32(ft, s.frame + fake_layout(ft)->frame_stacktop, 1); /* inside the locals */
        check_no_stack(t, s.frame, "outside the frame's stack", __LINE__);
    }
    /* an absurd co_stacksize */
    set_depth(ft, &s, 1);
    fake_w32(ft, s.code + fake_layout(ft)->values.code_stacksize, 0x80000000u);
    check_no_stack(t, s.frame, "outside the frame's stack", __LINE__);
    /* the stack only, of a code object whose local names are absurd */
    uint64_t names = fake_r64(ft, s.code + fake_off(ft, "code_object.localsplusnames"));
    fake_w64(ft, names + fake_off(ft, "tuple_object.ob_size"), 1u << 20);
    pyf_values_request r = {sizeof r, PYF_VALUES_STACK | PYF_VALUES_STACK_ONLY, 0, 0, 0, 0, 0};
    pyf_values *bad = NULL;
    CHECK_RC(pyf_frame_locals(t, s.frame, &r, &bad), PYF_ECORRUPT);
    CHECK(bad == NULL);
}

/* PYF_VALUES_STACK_UNSAVED: a 3.13 frame running C code (stacktop -1)
 * gives its co_stacksize slots, each flagged, live or left over (garbage
 * among them read like any target memory); a saved stack pointer, and
 * 3.14+, are read as without the flag. */
static void unsaved(fake_target *ft, pyf_target *t)
{
    stack_frame s = new_frame(ft);
    uint64_t lock = rlock(ft, 0, 0);
    uint64_t desc = method_descriptor(ft, "acquire");
    const uint64_t slots[STACKSIZE] = {desc, lock, 0, 0xdeadbeefdeadbeefull,
                                       fake_unmapped_addr(ft), fake_int(ft, 9)};
    for (size_t i = 0; i < STACKSIZE; i++)
        fake_w64(ft, s.base + 8 * i, slots[i]);
    uint32_t flags = PYF_VALUES_STACK | PYF_VALUES_STACK_UNSAVED;
    set_depth(ft, &s, fake_minor(ft) >= 14 ? 2 : -1);
    pyf_values *v = read_stack(t, s.frame, flags);
    if (fake_minor(ft) >= 14) { /* a saved pointer: its two entries, unflagged */
        CHECK_EQ_INT(v->nlocals, NLOCALS + 2);
        CHECK_EQ_INT(v->locals[NLOCALS].flags & PYF_LOCAL_UNSAVED, 0);
        pyf_values_free(v);
        return;
    }
    CHECK_EQ_INT(v->nlocals, NLOCALS + STACKSIZE);
    const pyf_local *e = v->locals + NLOCALS;
    for (uint32_t i = 0; i < STACKSIZE && NLOCALS + i < v->nlocals; i++) {
        CHECK_EQ_INT(e[i].kind, PYF_LOCAL_STACK);
        CHECK(e[i].flags & PYF_LOCAL_UNSAVED);
    }
    CHECK_EQ_STR(V(v, e[0].value)->data, "acquire");
    CHECK(V(v, e[1].value)->addr == lock);
    CHECK(e[2].value == PYF_NO_VALUE && (e[2].flags & PYF_LOCAL_UNBOUND));
    CHECK_EQ_INT(V(v, e[3].value)->kind, PYF_VALUE_UNREADABLE);
    CHECK_EQ_INT(V(v, e[4].value)->kind, PYF_VALUE_UNREADABLE);
    CHECK(V(v, e[5].value)->kind == PYF_VALUE_INT && V(v, e[5].value)->data[0] == 9);
    pyf_values_free(v);
    /* the stack only: the same slots */
    v = read_stack(t, s.frame, flags | PYF_VALUES_STACK_ONLY);
    CHECK_EQ_INT(v->nlocals, STACKSIZE);
    pyf_values_free(v);
    /* a saved stacktop: read as without the flag, unflagged */
    set_depth(ft, &s, 2);
    v = read_stack(t, s.frame, flags);
    CHECK_EQ_INT(v->nlocals, NLOCALS + 2);
    CHECK_EQ_INT(v->locals[NLOCALS].flags & PYF_LOCAL_UNSAVED, 0);
    pyf_values_free(v);
    /* an absurd co_stacksize: one NO_STACK entry, as without the flag */
    set_depth(ft, &s, -1);
    fake_w32(ft, s.code + fake_layout(ft)->values.code_stacksize, 0x80000000u);
    v = read_stack(t, s.frame, flags);
    CHECK(v->nlocals == NLOCALS + 1 && v->locals[NLOCALS].flags == PYF_LOCAL_NO_STACK);
    pyf_values_free(v);
}

/* A coroutine object holding a frame of the code of s (its two locals, a
 * stack of n entries, the frame state given); returns the frame. */
static uint64_t coroutine_frame(fake_target *ft, const stack_frame *s, const uint64_t *stack,
                                size_t n, int state)
{
    const ft_layout *l = fake_layout(ft);
    uint64_t ls = fake_off(ft, "interpreter_frame.localsplus");
    uint64_t g = fake_obj(ft, fake_type(ft, "coroutine"),
                          l->gen_gi_iframe + ls + 8 * (NLOCALS + STACKSIZE + 2));
    uint64_t f = g + l->gen_gi_iframe, base = f + ls + 8 * NLOCALS;
    fake_w8(ft, g + l->gen_gi_frame_state, (uint8_t)(int8_t)state);
    fake_w64(ft, f + fake_off(ft, "interpreter_frame.executable"), s->code);
    fake_w8(ft, f + fake_off(ft, "interpreter_frame.owner"), (uint8_t)l->owner_generator);
    fake_w64(ft, f + fake_off(ft, "interpreter_frame.instr_ptr"),
             s->code + fake_off(ft, "code_object.co_code_adaptive"));
    fake_w64(ft, f + ls, fake_int(ft, 1));
    fake_w64(ft, f + ls + 8, fake_int(ft, 2));
    for (size_t i = 0; i < n; i++)
        fake_w64(ft, base + 8 * i, stack[i]);
    if (fake_minor(ft) >= 14)
        fake_w64(ft, f + fake_off(ft, "interpreter_frame.stackpointer"), base + 8 * n);
    else
        fake_w32(ft, f + l->frame_stacktop, (uint32_t)(NLOCALS + n));
    return f;
}

/* What a suspended await awaits: cr_await, CPython's _PyGen_yf(). */
static void awaited(fake_target *ft, pyf_target *t)
{
    const ft_layout *l = fake_layout(ft);
    stack_frame s = new_frame(ft);
    uint64_t future = fake_obj(ft, fake_heap_type(ft, "_asyncio.Future", "_asyncio", "Future",
                                                  0, 0, 0), 128);
    uint64_t iter = fake_obj(ft, fake_heap_type(ft, "_asyncio.FutureIter", "_asyncio",
                                                "FutureIter", 0, 0, 0), 32);
    fake_w64(ft, iter + l->pyobject_size, future);
    /* 3.15 keeps what it awaits under the top (its sent value on top) */
    uint64_t none = fake_singleton(ft, "NoneType");
    const uint64_t stack[] = {fake_int(ft, 3), iter, none};
    size_t n = fake_minor(ft) >= 15 ? 3 : 2;
    uint64_t f = coroutine_frame(ft, &s, stack, n, l->frame_suspended_yield_from);
    pyf_values *v = read_stack(t, f, PYF_VALUES_STACK | PYF_VALUES_STACK_ONLY);
    CHECK_EQ_INT(v->nlocals, n);
    for (uint32_t i = 0; i < v->nlocals; i++) {
        bool is_it = i == 1 && fake_minor(ft) >= 14;
        CHECK_EQ_INT(v->locals[i].flags & PYF_LOCAL_AWAITED, is_it ? PYF_LOCAL_AWAITED : 0);
    }
    const pyf_value *it = V(v, v->locals[1].value);
    CHECK_EQ_STR(it->type_name, "_asyncio.FutureIter");
    CHECK((uint64_t)it->number == future);
    pyf_values_free(v);
    /* running (or just suspended at a yield): nothing awaited */
    f = coroutine_frame(ft, &s, stack, n, l->frame_executing);
    v = read_stack(t, f, PYF_VALUES_STACK | PYF_VALUES_STACK_ONLY);
    for (uint32_t i = 0; i < v->nlocals; i++)
        CHECK_EQ_INT(v->locals[i].flags & PYF_LOCAL_AWAITED, 0);
    pyf_values_free(v);
    /* a frame of a call (owner THREAD) in the same state: nothing */
    set_depth(ft, &s, 2);
    fake_w64(ft, s.base, stack[0]);
    fake_w64(ft, s.base + 8, stack[1]);
    v = read_stack(t, s.frame, PYF_VALUES_STACK | PYF_VALUES_STACK_ONLY);
    CHECK((v->locals[1].flags & PYF_LOCAL_AWAITED) == 0);
    pyf_values_free(v);
}

static void garbage(fake_target *ft, pyf_target *t)
{
    stack_frame s = new_frame(ft);
    const uint64_t junk[] = {0x10, fake_unmapped_addr(ft), 0xdeadbeefdeadbeefull,
                             s.frame, fake_int(ft, 3) + 4};
    for (size_t i = 0; i < 5; i++)
        fake_w64(ft, s.base + 8 * i, junk[i]);
    set_depth(ft, &s, 5);
    pyf_values *v = read_stack(t, s.frame, PYF_VALUES_STACK);
    CHECK_EQ_INT(v->nlocals, NLOCALS + 5);
    for (uint32_t i = 0; i < v->nvalues; i++)
        CHECK(v->values[i].type_name != NULL);
    CHECK_EQ_INT(V(v, v->locals[NLOCALS].value)->kind, PYF_VALUE_UNREADABLE);
    pyf_values_free(v);
    /* the stack's own memory unreadable: the call still succeeds */
    stack_frame u = new_frame(ft);
    set_depth(ft, &u, 2);
    uint64_t sp_field = fake_minor(ft) >= 14
        ? u.frame + fake_off(ft, "interpreter_frame.stackpointer") : 0;
    if (sp_field != 0) { /* a stack pointer into unmapped memory: out of bounds */
        fake_w64(ft, sp_field, fake_unmapped_addr(ft));
        check_no_stack(t, u.frame, "outside the frame's stack", __LINE__);
    }
}

/* 3.11/3.12's prev_instr: the instruction its unit belongs to, or none
 * known; 3.11's stale stacktop, trusted only where the frame saved it. */
static void previous_instr(fake_target *ft, pyf_target *t)
{
    const ft_layout *l = fake_layout(ft);
    if (l->opcode_call < 0)
        return; /* 3.13+: instr_ptr is the instruction (entries) */
    stack_frame s = new_frame(ft);
    uint64_t ip_at = s.frame + fake_off(ft, "interpreter_frame.instr_ptr");
    uint64_t unit0 = s.code + fake_off(ft, "code_object.co_code_adaptive");
    set_depth(ft, &s, 2);
    /* on the CALL itself (running it: a C call), and on each cache entry */
    for (int k = 0; k <= l->call_caches; k++) {
        fake_w64(ft, ip_at, unit0 + 2 * (uint64_t)k);
        pyf_values *v = read_stack(t, s.frame, PYF_VALUES_STACK);
        CHECK_MSG(v->opcode == (uint32_t)l->opcode_call && v->oparg == 1,
                  "%s unit %d: opcode %u", l->name, k, v->opcode);
        /* 3.11: a stacktop left as it was while the frame runs a C call
         * is stale; on the call's caches it was saved for the call */
        bool stale = t->off.sp_kind == PYF__SP_STACKTOP_STALE && k == 0;
        CHECK_MSG(v->nlocals == NLOCALS + (stale ? 1 : 2), "%s unit %d: %u entries", l->name,
                  k, v->nlocals);
        if (stale && v->nlocals == NLOCALS + 1)
            CHECK(v->locals[NLOCALS].flags == PYF_LOCAL_NO_STACK &&
                  strstr(V(v, v->locals[NLOCALS].value)->data, "the frame runs") != NULL);
        pyf_values_free(v);
        if (stale) { /* with PYF_VALUES_STACK_UNSAVED: every slot, flagged */
            v = read_stack(t, s.frame, PYF_VALUES_STACK | PYF_VALUES_STACK_UNSAVED);
            CHECK(v->nlocals == NLOCALS + STACKSIZE &&
                  (v->locals[NLOCALS].flags & PYF_LOCAL_UNSAVED));
            pyf_values_free(v);
        }
    }
    /* not started: prev_instr one unit before the code */
    fake_w64(ft, ip_at, unit0 - 2);
    pyf_values *v = read_stack(t, s.frame, PYF_VALUES_STACK);
    CHECK(v->opcode == PYF_NO_VALUE && v->oparg == PYF_NO_VALUE);
    pyf_values_free(v);
    /* past the code's last unit, and an odd address: unknown */
    fake_w64(ft, ip_at, unit0 + 2 * 4096);
    v = read_stack(t, s.frame, PYF_VALUES_STACK);
    CHECK(v->opcode == PYF_NO_VALUE);
    pyf_values_free(v);
    fake_w64(ft, ip_at, unit0 + 1);
    v = read_stack(t, s.frame, PYF_VALUES_STACK);
    CHECK(v->opcode == PYF_NO_VALUE);
    pyf_values_free(v);
    fake_w64(ft, ip_at, unit0 + 2 * (uint64_t)l->call_caches);
    /* 3.12: an INSTRUMENTED_LINE before the unit hides how long its
     * instruction is: unknown */
    if (l->opcode_instrumented_line >= 0) {
        fake_w16(ft, unit0, (uint16_t)l->opcode_instrumented_line);
        v = read_stack(t, s.frame, PYF_VALUES_STACK);
        CHECK(v->opcode == PYF_NO_VALUE);
        pyf_values_free(v);
        fake_w16(ft, unit0, (uint16_t)(l->opcode_call | 1 << 8));
    }
    /* 3.11: a generator's frame suspended at a yield (prev_instr on no
     * cache) saved its stack */
    if (t->off.sp_kind == PYF__SP_STACKTOP_STALE) {
        uint64_t gi_iframe = fake_off(ft, "gen_object.gi_iframe");
        uint64_t state = fake_off(ft, "gen_object.gi_frame_state");
        uint64_t ls = fake_off(ft, "interpreter_frame.localsplus");
        uint64_t g = fake_obj(ft, fake_type(ft, "generator"),
                              gi_iframe + ls + 8 * (NLOCALS + STACKSIZE) + 8);
        uint64_t f = g + gi_iframe;
        fake_write(ft, f, fake_host(ft, s.frame, ls + 8 * (NLOCALS + STACKSIZE)),
                   ls + 8 * (NLOCALS + STACKSIZE));
        fake_w64(ft, f + fake_off(ft, "interpreter_frame.instr_ptr"), unit0);
        fake_w8(ft, f + fake_off(ft, "interpreter_frame.owner"), (uint8_t)l->owner_generator);
        fake_w8(ft, g + state, (uint8_t)l->gen_suspended);
        v = read_stack(t, f, PYF_VALUES_STACK);
        CHECK_EQ_INT(v->nlocals, NLOCALS + 2);
        pyf_values_free(v);
        fake_w8(ft, g + state, (uint8_t)l->frame_executing); /* running it: stale */
        v = read_stack(t, f, PYF_VALUES_STACK);
        CHECK(v->nlocals == NLOCALS + 1 && v->locals[NLOCALS].flags == PYF_LOCAL_NO_STACK);
        pyf_values_free(v);
    }
}

static void one_layout(const ft_layout *l)
{
    check_begin(l->name);
    fake_target *ft = fake_new_layout(l);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    entries(ft, t);
    previous_instr(ft, t);
    bounds(ft, t);
    unsaved(ft, t);
    awaited(ft, t);
    garbage(ft, t);
    pyf_target_close(t);
    fake_free(ft);
    check_end();
}

int main(void)
{
    int missing = ft_layouts_missing_exit();
    if (missing != 0)
        return missing;
    fake_watchdog(120, "test_value_stack");
    for (const ft_layout *l = ft_layouts; l->name != NULL; l++)
        one_layout(l);
    return check_failures ? 1 : 0;
}
