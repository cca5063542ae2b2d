/*
 * tasks.c - asyncio tasks of CPython 3.14+: the .AsyncioDebug table, the
 * task lists of thread and interpreter states, each task's name, state,
 * coroutine stack and awaiters.
 *
 * The table has no cookie and no version: offsets.c checks every size and
 * offset against the structures it describes, as it checks
 * _Py_DebugOffsets.  Interpreters and threads are visited by threads.c's
 * loop, as the stack walk visits them; coroutine frames are decoded by the
 * walk's own frame decoder.  Task lists, await chains and sets are bounded
 * and checked for cycles; a broken list keeps the tasks read before the
 * break.  Types are recognised by their tp_name, never by a heap type (a
 * class of the program's own could carry any name).
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "code.h"
#include "containers.h"
#include "errors.h"
#include "objhead.h"
#include "offsets.h"
#include "process.h"
#include "reads.h"
#include "target.h"
#include "tasks.h"
#include "value_layout.h"
#include "values.h"
#include "walk.h"

#define MAX_TASKS (1u << 20)     /* tasks per snapshot */
#define MAX_AWAITERS_SET (1u << 16) /* slots of an awaited_by set read */
#define TYPE_NAME_MAX 40u
#define NAME_READ 192u           /* a name's header and its first characters */
#define GEN_SPECULATIVE 256u     /* read past a coroutine's frame: its value stack */
#define KINDS_MAX 4096u          /* types remembered */

/* What a type is, as far as tasks go (pyf__asyncio.kinds values): the
 * kinds of the one type classifier (value_core.c, pyf__type_kind). */
enum kind {
    K_OTHER = PYF_VALUE_OTHER, K_STR = PYF_VALUE_STR, K_INT = PYF_VALUE_INT,
    K_COROUTINE = PYF_VALUE_COROUTINE, K_GENERATOR = PYF_VALUE_GENERATOR,
    K_ASYNC_GEN = PYF_VALUE_ASYNC_GENERATOR, K_AWAIT_WRAPPER = PYF__KIND_AWAIT_WRAPPER
};

void pyf__asyncio_free(pyf__asyncio *a)
{
    pyf__addrmap_free(&a->kinds);
    memset(a, 0, sizeof *a);
}

void pyf__tasks_free(pyf__tasks *ts)
{
    free(ts->v);
    free(ts->awaited);
    memset(ts, 0, sizeof *ts);
}

/* ---- the table ------------------------------------------------------------ */

static int load_table(pyf_target *t, uint64_t addr);

int pyf_target_set_asyncio(pyf_target *t, uint64_t addr)
{
    if (t == NULL)
        return PYF_EINVAL;
    int rc = load_table(t, addr);
    t->asyncio.refused = t->io.fail; /* code 0 when it was taken */
    return rc;
}

static int load_table(pyf_target *t, uint64_t addr)
{
    pyf__failure_clear(&t->io.fail);
    pyf__addrmap kinds = t->asyncio.kinds; /* types stay what they are */
    memset(&t->asyncio, 0, sizeof t->asyncio);
    t->asyncio.kinds = kinds;
    if (addr == 0)
        return PYF_OK;
    const pyf__offsets *o = &t->off;
    if (!o->has_tasks)
        return pyf__fail(t, PYF_ENOTSUP, "CPython %u.%u publishes no asyncio task "
                         "layout (3.14 and later do)", o->major, o->minor);
    if (addr % 8 != 0)
        return pyf__fail(t, PYF_EINVAL, "asyncio debug offsets address 0x%llx is "
                         "not aligned", (unsigned long long)addr);
    uint8_t raw[PYF__ASYNCIO_TABLE_SIZE];
    int rc = pyf__read(t, addr, raw, sizeof raw, "asyncio debug offsets");
    if (rc != PYF_OK)
        return rc;
    char why[PYF__ERRBUF];
    if (pyf__asyncio_offsets_decode(raw, o, &t->asyncio.off, why, sizeof why) != PYF_OK)
        return pyf__fail(t, PYF_EOFFSETS, "the asyncio debug offsets at 0x%llx are "
                         "implausible (%s): not CPython's table, or a layout this "
                         "version of pyframes does not know",
                         (unsigned long long)addr, why);
    t->asyncio.addr = addr;
    return PYF_OK;
}

/* ---- objects -------------------------------------------------------------- */

typedef struct walk {
    pyf_target *t;
    const pyf__sink *sink;
    const uint32_t *nframes;
    pyf__arena *arena;
    pyf__tasks *ts;
    pyf__addrset seen;       /* tasks listed so far */
    uint8_t *task_buf;
    /* the current thread (0s for an interpreter's list) */
    uint64_t tstate_addr, thread_id, native_thread_id;
    int64_t interp_id;
    uint32_t flags;          /* PYF_TASK_THREAD_GONE for an interpreter's list */
} walk;

/* The kind of the type at type_addr (read once per type). */
static int type_kind(pyf_target *t, uint64_t type_addr)
{
    uint64_t *slot = pyf__addrmap_get(&t->asyncio.kinds, type_addr);
    if (slot != NULL)
        return (int)*slot;
    const pyf__offsets *o = &t->off;
    uint64_t end = o->type.tp_flags + 8 > o->type.tp_name + 8 ? o->type.tp_flags + 8
                                                                : o->type.tp_name + 8;
    uint8_t buf[1024];
    if (type_addr == 0 || type_addr % 8 != 0 || end > sizeof buf ||
        pyf__read_quiet(t, type_addr, buf, (size_t)end) != PYF_OK)
        return K_OTHER; /* not remembered: it may be readable next time */
    int kind = K_OTHER;
    uint64_t flags = pyf__ld64(buf + o->type.tp_flags);
    if (!(flags & PYF__TPFLAGS_HEAPTYPE)) {
        char name[TYPE_NAME_MAX + 1] = {0};
        uint64_t np = pyf__ld64(buf + o->type.tp_name);
        if (np != 0 && (pyf__read_quiet(t, np, name, TYPE_NAME_MAX) == PYF_OK ||
                        pyf__read_quiet(t, np, name, 24) == PYF_OK))
            kind = (int)pyf__type_kind(flags, name);
    }
    if (t->asyncio.kinds.n < KINDS_MAX) { /* past it: looked up each time */
        bool added;
        uint64_t *put = pyf__addrmap_put(&t->asyncio.kinds, type_addr, &added);
        if (put != NULL)
            *put = (uint64_t)kind;
    }
    return kind;
}

/* Read the object at addr into buf: want bytes when they are readable,
 * else at least need (an object near the end of a mapping).  *have: how
 * many.  Its type's kind, K_OTHER when unreadable (*have 0). */
static int read_object(pyf_target *t, uint64_t addr, uint8_t *buf, size_t want,
                       size_t need, size_t *have)
{
    *have = 0;
    if (addr == 0 || addr % 8 != 0)
        return K_OTHER;
    if (pyf__read_quiet(t, addr, buf, want) == PYF_OK)
        *have = want;
    else if (need < want && pyf__read_quiet(t, addr, buf, need) == PYF_OK)
        *have = need;
    else
        return K_OTHER;
    return type_kind(t, pyf__ld64(buf + t->off.pyobject.ob_type));
}

/* A failure of the walk (t->io.fail) kept for a task or a list. */
static const pyf_failure *keep_failure(walk *w, int rc)
{
    pyf_failure *copy = pyf__arena_alloc(w->arena, sizeof *copy);
    if (copy != NULL) {
        *copy = w->t->io.fail;
        copy->struct_size = 0;
        copy->code = rc;
    }
    return copy;
}

/* prefix + the number (decimal, or hex after "0x") + suffix, in the arena */
static const char *arena_num(walk *w, const char *prefix, unsigned long long v, bool hex,
                             const char *suffix)
{
    char buf[96];
    if (hex)
        pyf__fmt(buf, sizeof buf, "%s0x%llx%s", prefix, v, suffix);
    else
        pyf__fmt(buf, sizeof buf, "%s%llu%s", prefix, v, suffix);
    return pyf__arena_dup(w->arena, buf);
}

/* The task's name as Task.get_name() gives it: a str; the int of an
 * unnamed task as "Task-N"; anything else as its type and address. */
static const char *task_name(walk *w, uint64_t obj, uint32_t *flags)
{
    pyf_target *t = w->t;
    const pyf__offsets *o = &t->off;
    uint8_t buf[NAME_READ];
    size_t have;
    /* the header and a short name in one read */
    int kind = read_object(t, obj, buf, sizeof buf, (size_t)o->pyobject.size, &have);
    if (kind == K_STR) {
        char *s = NULL;
        bool truncated;
        size_t need = 0;
        int rc = pyf__decode_str(o, buf, have, t->opts.max_string, &s, &truncated, &need);
        if (rc == PYF__EMORE)
            rc = pyf__read_str(t, obj, t->opts.max_string, &s, &truncated, "task name");
        if (rc == PYF_OK) {
            const char *kept = pyf__arena_dup(w->arena, s);
            free(s);
            return kept;
        }
        return arena_num(w, "<unreadable name at ", obj, true, ">");
    }
    *flags |= PYF_TASK_NAME_NOT_STR;
    if (kind == K_INT) {
        uint64_t value;
        if (pyf__int_small(o, buf, have, 2, &value))
            return arena_num(w, "Task-", value, false, "");
    }
    return arena_num(w, "<object at ", obj, true, ">");
}

/* The coroutine stack from coro down its await chain: the task's
 * coroutine's frame, then the frame of the coroutine it awaits, and so on
 * (the caller reverses them: innermost first).  One read per coroutine:
 * its object with the frame and, mostly, the value stack holding what it
 * awaits. */
static int coro_stack(walk *w, uint64_t coro)
{
    pyf_target *t = w->t;
    const pyf__offsets *o = &t->off;
    uint8_t buf[PYF__OBJECT_READ_MAX + GEN_SPECULATIVE];
    size_t need = (size_t)(o->gen.gi_iframe + o->frame.size), have;
    int kind = read_object(t, coro, buf, need + GEN_SPECULATIVE, need, &have);
    if (kind != K_COROUTINE && kind != K_GENERATOR && kind != K_ASYNC_GEN)
        return PYF_OK; /* not a coroutine we can follow: no stack */
    pyf__addrset chain = {0};
    uint32_t tlbc_failures = 0; /* a frame without its location: shown so */
    int rc = PYF_OK;
    for (uint32_t depth = 0;; depth++) {
        bool dup = false;
        if (!pyf__addrset_add(&chain, coro, &dup)) {
            rc = PYF_ENOMEM;
            break;
        }
        if (dup) {
            rc = pyf__fail(t, PYF_ECYCLE, "await chain loops back to coroutine 0x%llx",
                           (unsigned long long)coro);
            break;
        }
        if (depth >= t->opts.max_depth) {
            rc = pyf__fail(t, PYF_EDEPTH, "await chain longer than %u coroutines",
                           t->opts.max_depth);
            break;
        }
        if (have < need) { /* read_object gave up on it */
            rc = pyf__read(t, coro, buf, need, "coroutine");
            if (rc != PYF_OK)
                break;
            have = need;
        }
        int state = (int8_t)buf[o->gen.gi_frame_state];
        if (state == o->gen_cleared || state == o->gen_completed)
            break; /* finished: no frame */
        pyf__iframe fr;
        pyf__iframe_decode(o, buf + o->gen.gi_iframe, coro + o->gen.gi_iframe, &fr);
        if (fr.owner != o->owner_generator) {
            rc = pyf__fail(t, PYF_ECORRUPT, "the frame of coroutine 0x%llx is not "
                           "owned by it (owner %d)", (unsigned long long)coro, fr.owner);
            break;
        }
        const pyf__code *code;
        bool shown;
        if ((rc = pyf__iframe_code(t, &fr, &code, &shown)) != PYF_OK)
            break;
        if (shown) {
            int64_t instr =
                code != NULL ? pyf__iframe_instr(t, &fr, code, &tlbc_failures) : INT64_MIN;
            rc = w->sink->frame(w->sink->ctx, fr.addr, fr.exe, code, instr,
                                pyf__owned_flags(code));
        }
        if (rc != PYF_OK || state != o->gen_yield_from)
            break;
        /* what it awaits: on its value stack (offsets.c: await_back),
         * inside the coroutine object */
        uint64_t sp = 0, back = o->await_back;
        if (pyf__frame_sp(o, fr.copy, fr.addr, &sp) != PYF__STACK_SAVED ||
            sp < fr.addr + o->frame.localsplus + back || sp - coro > (1u << 20))
            break; /* no value stack to look at */
        uint64_t slot = sp - back, awaited = 0;
        if (slot + 8 <= coro + have)
            awaited = pyf__ld64(buf + (slot - coro));
        else if (pyf__read_quiet(t, slot, &awaited, 8) != PYF_OK)
            break;
        awaited &= o->tag_mask;
        kind = read_object(t, awaited, buf, need + GEN_SPECULATIVE, (size_t)o->pyobject.size + 8,
                           &have);
        if (kind == K_AWAIT_WRAPPER) {
            /* asend/athrow: the async generator they drive */
            awaited = pyf__ld64(buf + o->pyobject.size) & o->tag_mask;
            kind = read_object(t, awaited, buf, need + GEN_SPECULATIVE, need, &have);
            if (kind != K_ASYNC_GEN)
                break;
        } else if (kind != K_COROUTINE) {
            break; /* a future, a task, another awaitable: the chain ends */
        }
        coro = awaited;
    }
    pyf__addrset_free(&chain);
    return rc;
}

static bool push_awaiter(pyf__tasks *ts, uint64_t addr)
{
    if (!pyf__grow((void **)&ts->awaited, &ts->cap_awaited, ts->nawaited + 1,
                   sizeof *ts->awaited))
        return false;
    ts->awaited[ts->nawaited++] = addr;
    return true;
}

/* The tasks awaiting this one: one task, or a set of them (tombstones and
 * empty slots skipped). */
static int awaiters(walk *w, uint64_t obj, bool is_set)
{
    pyf_target *t = w->t;
    const pyf__offsets *o = &t->off;
    obj &= o->tag_mask;
    if (obj == 0)
        return PYF_OK;
    if (!is_set)
        return push_awaiter(w->ts, obj) ? PYF_OK : PYF_ENOMEM;
    uint8_t hdr[PYF__OBJECT_READ_MAX];
    int rc = pyf__read(t, obj, hdr, (size_t)o->set.size, "awaited_by set");
    if (rc != PYF_OK)
        return rc;
    uint64_t used = pyf__ld64(hdr + o->set.used), mask = pyf__ld64(hdr + o->set.mask);
    uint64_t table = pyf__ld64(hdr + o->set.table);
    if (mask >= MAX_AWAITERS_SET || ((mask + 1) & mask) != 0 || used > mask + 1 ||
        table == 0 || table % 8 != 0)
        return pyf__fail(t, PYF_ECORRUPT, "awaited_by set 0x%llx is implausible "
                         "(%llu used of %llu slots)", (unsigned long long)obj,
                         (unsigned long long)used, (unsigned long long)mask + 1);
    size_t bytes = (size_t)(mask + 1) * 16;
    uint8_t *slots = malloc(bytes);
    if (slots == NULL)
        return PYF_ENOMEM;
    rc = pyf__read(t, table, slots, bytes, "awaited_by set table");
    uint64_t found = 0;
    for (uint64_t i = 0; rc == PYF_OK && i <= mask && found < used; i++) {
        uint64_t key = pyf__ld64(slots + 16 * i), hash = pyf__ld64(slots + 16 * i + 8);
        if (key == 0 || hash == UINT64_MAX) /* empty, or a deleted entry */
            continue;
        found++;
        if (!push_awaiter(w->ts, key & o->tag_mask))
            rc = PYF_ENOMEM;
    }
    free(slots);
    return rc;
}

/* One task, whose object is in buf. */
static int read_task(walk *w, uint64_t addr, const uint8_t *buf, uint32_t flags)
{
    pyf_target *t = w->t;
    const pyf__asyncio_offsets *a = &t->asyncio.off;
    pyf__tasks *ts = w->ts;
    if (!pyf__grow((void **)&ts->v, &ts->cap, ts->n + 1, sizeof *ts->v))
        return PYF_ENOMEM;
    pyf_task task = {0};
    task.task_addr = addr;
    task.tstate_addr = w->tstate_addr;
    task.thread_id = w->thread_id;
    task.native_thread_id = w->native_thread_id;
    task.interp_id = w->interp_id;
    task.flags = w->flags | flags;
    task.name = task_name(w, pyf__ld64(buf + a->task.name) & t->off.tag_mask, &task.flags);
    if (task.name == NULL)
        return PYF_ENOMEM;
    task.state = PYF_TASK_STATE_UNKNOWN;
    if (a->task.state != PYF__ABSENT) {
        uint32_t st = pyf__ld32(buf + a->task.state);
        if (st <= PYF_TASK_FINISHED)
            task.state = st;
    }
    task.coro_addr = pyf__ld64(buf + a->task.coro) & t->off.tag_mask;
    task.first_frame = *w->nframes;
    int rc = coro_stack(w, task.coro_addr);
    task.nframes = *w->nframes - task.first_frame;
    if (task.nframes > 1) /* innermost first, as thread stacks */
        w->sink->reverse(w->sink->ctx, task.first_frame);
    task.first_awaiter = ts->nawaited;
    if (rc == PYF_OK || rc == PYF_EFAULT || rc == PYF_ECORRUPT || rc == PYF_ECYCLE ||
        rc == PYF_EDEPTH) {
        int rc2 = awaiters(w, pyf__ld64(buf + a->task.awaited_by),
                           buf[a->task.awaited_by_is_set] != 0);
        if (rc == PYF_OK)
            rc = rc2;
    }
    task.nawaiters = ts->nawaited - task.first_awaiter;
    if (rc == PYF_ENOMEM)
        return rc;
    if (rc != PYF_OK) {
        task.error = rc;
        task.failure = keep_failure(w, rc);
        if (task.failure == NULL)
            return PYF_ENOMEM;
    }
    ts->v[ts->n++] = task;
    return PYF_OK;
}

/* A broken list (of threads, or the interpreter's tasks) keeps what was
 * read: the first break is the snapshot's list_error. */
static int list_broken(walk *w, int rc)
{
    if (w->ts->list_error != PYF_OK)
        return PYF_OK;
    w->ts->list_error = rc;
    w->ts->failure = keep_failure(w, rc);
    return w->ts->failure != NULL ? PYF_OK : PYF_ENOMEM;
}

/* The circular list whose head is at head_addr and whose first node is
 * first.  A task already listed (the running task of a thread read
 * before, or a task on two lists) is not listed again.  A broken list
 * keeps what was read and sets ts->list_error. */
static int walk_list(walk *w, uint64_t head_addr, uint64_t first)
{
    pyf_target *t = w->t;
    const pyf__asyncio_offsets *a = &t->asyncio.off;
    uint64_t node = first;
    pyf__addrset here = {0}; /* this list's nodes: its cycles */
    int rc = PYF_OK;
    while (node != head_addr) {
        if (node == 0 || node % 8 != 0 || node < a->task.node) {
            rc = pyf__fail(t, PYF_ECORRUPT, "task list at 0x%llx is broken: link "
                           "0x%llx", (unsigned long long)head_addr, (unsigned long long)node);
            break;
        }
        uint64_t addr = node - a->task.node;
        bool dup = false, listed = false;
        if (w->seen.n >= MAX_TASKS || here.n >= MAX_TASKS) {
            rc = pyf__fail(t, PYF_EDEPTH, "more than %u asyncio tasks", MAX_TASKS);
            break;
        }
        if (!pyf__addrset_add(&here, addr, &dup) || !pyf__addrset_add(&w->seen, addr, &listed)) {
            pyf__addrset_free(&here);
            return PYF_ENOMEM;
        }
        if (dup) {
            rc = pyf__fail(t, PYF_ECYCLE, "task list at 0x%llx loops back to task "
                           "0x%llx", (unsigned long long)head_addr,
                           (unsigned long long)addr);
            break;
        }
        rc = pyf__read(t, addr, w->task_buf, (size_t)a->task.size, "asyncio task");
        if (rc != PYF_OK)
            break;
        uint64_t next = pyf__ld64(w->task_buf + a->task.node + t->off.llist.next);
        if (!listed && (rc = read_task(w, addr, w->task_buf, 0)) != PYF_OK) {
            pyf__addrset_free(&here);
            return rc; /* out of memory */
        }
        node = next;
    }
    pyf__addrset_free(&here);
    return rc != PYF_OK ? list_broken(w, rc) : PYF_OK;
}

/* The running task of the current thread, when it is not on a list. */
static int running_task(walk *w, uint64_t addr)
{
    pyf_target *t = w->t;
    for (uint32_t i = 0; i < w->ts->n; i++) {
        if (w->ts->v[i].task_addr == addr) {
            w->ts->v[i].flags |= PYF_TASK_RUNNING;
            return PYF_OK;
        }
    }
    bool dup;
    if (addr % 8 != 0 || pyf__read(t, addr, w->task_buf, (size_t)t->asyncio.off.task.size,
                                   "running task") != PYF_OK)
        return PYF_OK; /* not shown: it is not on any list either */
    /* A task whose coroutine has just returned is off its list but still
     * the running task until the step ends (leave_task): done, and not
     * shown, like every done task (CPython's get_all_awaited_by agrees). */
    if (t->asyncio.off.task.state != PYF__ABSENT &&
        pyf__ld32(w->task_buf + t->asyncio.off.task.state) != PYF_TASK_PENDING)
        return PYF_OK;
    if (!pyf__addrset_add(&w->seen, addr, &dup))
        return PYF_ENOMEM;
    return read_task(w, addr, w->task_buf, PYF_TASK_RUNNING);
}

/* ---- the visit ----------------------------------------------------------- */

static int visit_interp(void *ctx, const pyf__interp_info *ii)
{
    walk *w = ctx;
    w->interp_id = ii->id;
    return PYF_OK;
}

/* A thread's tasks, then its running task when no list holds it. */
static int visit_thread(void *ctx, pyf__thread_info *ti)
{
    walk *w = ctx;
    pyf_target *t = w->t;
    const pyf__offsets *o = &t->off;
    const pyf__asyncio_offsets *a = &t->asyncio.off;
    const uint8_t *tsbuf = ti->buf;
    w->tstate_addr = ti->addr;
    w->thread_id = ti->th.thread_id;
    w->native_thread_id = ti->th.native_thread_id;
    w->flags = 0;
    uint32_t before = w->ts->n;
    int rc = walk_list(w, ti->addr + a->thread.tasks_head,
                       pyf__ld64(tsbuf + a->thread.tasks_head + o->llist.next));
    uint64_t loop = pyf__ld64(tsbuf + a->thread.running_loop);
    uint64_t running = pyf__ld64(tsbuf + a->thread.running_task) & o->tag_mask;
    if (rc == PYF_OK && loop != 0 && running != 0) {
        /* look among this thread's tasks first, then add it */
        pyf__tasks *ts = w->ts;
        bool found = false;
        for (uint32_t i = before; i < ts->n && !found; i++)
            if (ts->v[i].task_addr == running) {
                ts->v[i].flags |= PYF_TASK_RUNNING;
                found = true;
            }
        if (!found)
            rc = running_task(w, running);
    }
    return rc;
}

static int visit_broken(void *ctx, const pyf__interp_info *ii, uint64_t addr, int why)
{
    (void)ii;
    (void)addr;
    return list_broken(ctx, why);
}

/* After its threads: the tasks of the interpreter's exited threads. */
static int visit_interp_end(void *ctx, const pyf__interp_info *ii)
{
    walk *w = ctx;
    pyf_target *t = w->t;
    const pyf__asyncio_offsets *a = &t->asyncio.off;
    uint64_t head[2] = {0, 0};
    int rc = pyf__read(t, ii->addr + a->interp.tasks_head, head, 16,
                       "interpreter's task list");
    if (rc != PYF_OK)
        return list_broken(w, rc);
    w->tstate_addr = w->thread_id = w->native_thread_id = 0;
    w->flags = PYF_TASK_THREAD_GONE;
    return walk_list(w, ii->addr + a->interp.tasks_head, head[0]);
}

static int fail_all(walk *w, int rc)
{
    w->ts->status = rc;
    w->ts->failure = keep_failure(w, rc);
    return w->ts->failure != NULL ? PYF_OK : PYF_ENOMEM;
}

int pyf__tasks_read(pyf_target *t, const pyf__sink *sink, const uint32_t *nframes,
                    pyf__arena *arena, pyf__tasks *ts)
{
    walk w = {t, sink, nframes, arena, ts, {0}, NULL, 0, 0, 0, 0, 0};
    memset(ts, 0, sizeof *ts);
    const pyf__offsets *o = &t->off;
    if (!o->has_tasks) {
        pyf__fail(t, PYF_ENOTSUP, "CPython %u.%u publishes no asyncio task layout "
                  "(3.14 and later do): tasks cannot be read", o->major, o->minor);
        return fail_all(&w, PYF_ENOTSUP);
    }
    if (t->asyncio.addr == 0 && t->io.pid > 0) {
        uint64_t found = 0;
        char err[PYF__ERRBUF];
        int rc = pyf__pid_find_asyncio(t->io.pid, &found, err, sizeof err);
        if (rc == PYF_OK)
            rc = pyf_target_set_asyncio(t, found);
        else
            pyf__fail(t, rc, "%s", err);
        if (rc != PYF_OK)
            return rc == PYF_ENOMEM ? rc : fail_all(&w, rc);
    }
    if (t->asyncio.addr == 0 && t->asyncio.refused.code != PYF_OK) {
        t->io.fail = t->asyncio.refused; /* the table given was refused: why */
        return fail_all(&w, t->io.fail.code);
    }
    if (t->asyncio.addr == 0) {
        pyf__fail(t, PYF_ENOTSUP, "no .AsyncioDebug section among the files the debugger "
                  "knows: the process has not imported asyncio (or its _asyncio module "
                  "is not loaded)");
        return fail_all(&w, PYF_ENOTSUP);
    }
    const pyf__asyncio_offsets *a = &t->asyncio.off;
    w.task_buf = malloc((size_t)a->task.size);
    int rc = w.task_buf != NULL ? PYF_OK : PYF_ENOMEM;
    /* the thread states as _PyThreadStateImpl, which holds the task list */
    pyf__thread_visitor v = {
        .ctx = &w,
        .want = (size_t)a->thread.size,
        .need = (size_t)a->thread.size,
        .interp = visit_interp,
        .thread = visit_thread,
        .broken = visit_broken,
        .interp_end = visit_interp_end,
    };
    if (rc == PYF_OK)
        rc = pyf__visit_threads(t, &v);
    if (rc != PYF_OK && rc != PYF_ENOMEM) /* the interpreter list broke */
        rc = list_broken(&w, rc);
    free(w.task_buf);
    pyf__addrset_free(&w.seen);
    return rc;
}
