/*
 * threads.c - the one loop over the runtime's interpreters and each
 * interpreter's thread states (pyf__visit_threads), and its two visitors'
 * first: the stack walk, which hands every thread to the frame walker (the
 * asyncio reader, tasks.c, is the other).
 *
 * Lists in the target are bounded by count and checked for cycles; a
 * running process's thread list is read again where it changed.  On 3.14+
 * the interpreters' code_object_generation counters decide whether the
 * code-object cache is still valid.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cache.h"
#include "code.h"
#include "containers.h"
#include "offsets.h"
#include "process.h"
#include "pthread_tid.h"
#include "reads.h"
#include "target.h"
#include "walk.h"

#define INTERP_READ_MAX (64u * 1024u)
/* a running process's thread list read again from a changed link, at most */
#define LIST_RELINKS 16

static uint64_t field_end(uint64_t off, uint64_t width, uint64_t end)
{
    return (off != PYF__ABSENT && off + width > end) ? off + width : end;
}

/* The interpreter's fields.  With a batching reader each group of fields
 * within 2 KB of each other is its own range (3.15 keeps them 7-8 KB into
 * the state: under a kilobyte instead of the pages before it; one reader
 * call either way, and each range costs the kernel about as much as a
 * kilobyte); otherwise one range up to the last field, one call. */
#define INTERP_GAP_MAX 2048u
#define INTERP_FIELDS 5
static int read_interp(pyf_target *t, uint64_t addr, pyf__interp_info *ii)
{
    const pyf__offsets *o = &t->off;
    uint64_t off[INTERP_FIELDS] = {o->interp.id, o->interp.next, o->interp.threads_head,
                                   o->interp.threads_main, o->interp.code_object_generation};
    uint64_t end = 0;
    for (int i = 0; i < INTERP_FIELDS; i++)
        end = field_end(off[i], 8, end);
    if (end > INTERP_READ_MAX)
        return pyf__fail(t, PYF_EOFFSETS, "interpreter fields lie beyond %u "
                         "bytes", INTERP_READ_MAX);
    if (addr % 8 != 0)
        return pyf__fail(t, PYF_ECORRUPT, "interpreter pointer 0x%llx is not "
                         "aligned", (unsigned long long)addr);
    uint8_t *buf = malloc((size_t)end);
    if (buf == NULL)
        return PYF_ENOMEM;
    int rc = PYF_OK;
    if (t->io.reader.readv == NULL) {
        rc = pyf__read(t, addr, buf, (size_t)end, "interpreter state");
    } else {
        /* fields in address order, grouped */
        uint64_t sorted[INTERP_FIELDS];
        int n = 0;
        for (int i = 0; i < INTERP_FIELDS; i++) {
            if (off[i] == PYF__ABSENT)
                continue;
            int j = n++;
            while (j > 0 && sorted[j - 1] > off[i]) {
                sorted[j] = sorted[j - 1];
                j--;
            }
            sorted[j] = off[i];
        }
        for (int i = 0; i < n && rc == PYF_OK;) {
            uint64_t lo = sorted[i], hi = sorted[i] + 8;
            while (++i < n && sorted[i] <= hi + INTERP_GAP_MAX)
                hi = sorted[i] + 8 > hi ? sorted[i] + 8 : hi;
            rc = pyf__read(t, addr + lo, buf + lo, (size_t)(hi - lo), "interpreter state");
        }
    }
    if (rc == PYF_OK) {
        memset(ii, 0, sizeof *ii);
        ii->addr = addr;
        ii->next = pyf__ld64(buf + o->interp.next);
        ii->id = (int64_t)pyf__ld64(buf + o->interp.id);
        ii->threads_head = pyf__ld64(buf + o->interp.threads_head);
        if (o->interp.threads_main != PYF__ABSENT)
            ii->threads_main = pyf__ld64(buf + o->interp.threads_main);
        if (o->interp.code_object_generation != PYF__ABSENT)
            ii->code_generation = pyf__ld64(buf + o->interp.code_object_generation);
    }
    free(buf);
    return rc;
}

/* ---- the loop ------------------------------------------------------------- */

/* The interpreter's thread list; a break in it goes to the visitor's
 * broken and ends the list. */
static int visit_list(pyf_target *t, const pyf__interp_info *ii, const pyf__thread_visitor *v,
                      uint8_t *buf)
{
    const pyf__offsets *o = &t->off;
    uint32_t max_threads = t->opts.max_threads;
    pyf__addrmap_slot seen_slots[64]; /* up to 32 thread states, then the heap */
    pyf__addrset seen;
    PYF__ADDRSET_LOCAL(seen, seen_slots);
    int rc = PYF_OK;
    uint64_t addr = ii->threads_head;
    uint64_t from = 0; /* the state addr was reached from (0: the head) */
    uint32_t relinks = 0;

    while (addr != 0 && rc == PYF_OK) {
        int why = PYF_OK;
        bool dup = false;
        if (addr % 8 != 0) {
            why = pyf__fail(t, PYF_ECORRUPT, "interpreter %lld: bad thread pointer 0x%llx",
                            (long long)ii->id, (unsigned long long)addr);
        } else if (!pyf__addrset_add(&seen, addr, &dup)) {
            rc = PYF_ENOMEM;
            break;
        } else if (dup) {
            why = pyf__fail(t, PYF_ECYCLE, "thread list of interpreter %lld loops back to "
                            "0x%llx", (long long)ii->id, (unsigned long long)addr);
        } else if (seen.n > max_threads) {
            why = pyf__fail(t, PYF_EDEPTH, "interpreter %lld has more than %u threads (the "
                            "thread limit); stopped at 0x%llx", (long long)ii->id,
                            max_threads, (unsigned long long)addr);
        }
        size_t len = v->want;
        uint64_t calls = t->io.calls;
        if (why == PYF_OK) {
            int rrc = v->want > v->need ? pyf__read_quiet(t, addr, buf, len) : PYF_EFAULT;
            if (rrc != PYF_OK)
                rrc = pyf__read(t, addr, buf, len = v->need, "thread state");
            why = rrc;
        }
        /* A running process's list changes while it is walked: a state
         * freed after the one before it was read holds its allocator's
         * links where prev and next were, and leads into freed memory.
         * Every state must name its interpreter and the state it was
         * reached from; else that link is read again (a state unlinked
         * meanwhile is passed over), a bounded number of times. */
        if (why == PYF_OK && pyf__target_live(t) &&
            (pyf__ld64(buf + o->tstate.prev) != from ||
             pyf__ld64(buf + o->tstate.interp) != ii->addr)) {
            uint64_t link = from != 0 ? from + o->tstate.next
                                      : ii->addr + o->interp.threads_head;
            uint64_t again = 0;
            pyf__addrmap_remove(&seen, addr);
            if (relinks++ < LIST_RELINKS && pyf__read_fresh(t, link, &again, 8) == PYF_OK) {
                t->io.stats.retried_walks++;
                addr = again;
                continue;
            }
            why = pyf__fail(t, PYF_ECORRUPT, "the thread list of interpreter %lld changed "
                            "while it was read (at 0x%llx)", (long long)ii->id,
                            (unsigned long long)addr);
        }
        if (why != PYF_OK) {
            rc = v->broken(v->ctx, ii, addr, why);
            break;
        }
        pyf__thread_info ti = {.interp = ii, .addr = addr, .buf = buf, .len = len,
                               .fresh = t->io.calls != calls};
        pyf_thread *th = &ti.th;
        th->tstate_addr = addr;
        th->interp_index = ii->index;
        th->thread_id = pyf__ld64(buf + o->tstate.thread_id);
        /* 3.8-3.10 keep only the pthread handle: the OS thread it names,
         * 0 when not known */
        th->native_thread_id = o->tstate.native_thread_id != PYF__ABSENT
                                   ? pyf__ld64(buf + o->tstate.native_thread_id)
                                   : pyf__os_tid(t, th->thread_id);
        /* before 3.14 no threads_main: the main interpreter's thread on
         * the process's first thread */
        if (o->interp.threads_main != PYF__ABSENT ? ii->threads_main != 0 && ii->threads_main == addr
                                                  : ii->id == 0 &&
                                                        pyf__os_tid_is_main(t, th->native_thread_id))
            th->flags |= PYF_THREAD_MAIN;
        /* a free-threaded build has no one GIL holder: not known */
        if (o->tstate.holds_gil != PYF__ABSENT && !o->free_threaded) {
            th->flags |= PYF_THREAD_GIL_KNOWN;
            if (pyf__ld32(buf + o->tstate.holds_gil) != 0)
                th->flags |= PYF_THREAD_HOLDS_GIL;
        }
        uint64_t next = pyf__ld64(buf + o->tstate.next); /* the visitor may read buf again */
        rc = v->thread(v->ctx, &ti);
        from = addr;
        addr = next;
    }
    pyf__addrset_free(&seen);
    return rc;
}

int pyf__visit_threads(pyf_target *t, const pyf__thread_visitor *v)
{
    const pyf__offsets *o = &t->off;
    uint8_t p[8];
    int rc = pyf__read(t, t->runtime_addr + o->runtime.interpreters_head, p, 8,
                       "_PyRuntime.interpreters.head");
    if (rc != PYF_OK)
        return rc;
    uint64_t addr = pyf__ld64(p);
    if (addr == 0)
        return pyf__fail(t, PYF_ENOTPY, "the runtime has no interpreter (the "
                         "process is starting up or finalizing)");

    /* Every interpreter first: their code generations decide whether
     * cached code objects may be used (the stack walk's interps). */
    pyf__interp_info interps[PYF_DEFAULT_MAX_INTERPRETERS];
    uint32_t n = 0;
    while (addr != 0) {
        for (uint32_t i = 0; i < n; i++)
            if (interps[i].addr == addr)
                return pyf__fail(t, PYF_ECYCLE, "interpreter list loops back "
                                 "to 0x%llx", (unsigned long long)addr);
        if (n == PYF_DEFAULT_MAX_INTERPRETERS)
            return pyf__fail(t, PYF_EDEPTH, "more than %u interpreters",
                             PYF_DEFAULT_MAX_INTERPRETERS);
        rc = read_interp(t, addr, &interps[n]);
        if (rc != PYF_OK)
            return rc;
        interps[n].index = n;
        addr = interps[n].next;
        n++;
    }
    if (v->interps != NULL && (rc = v->interps(v->ctx, interps, n)) != PYF_OK)
        return rc;

    if (o->interp.threads_main == PYF__ABSENT)
        for (uint32_t i = 0; i < n; i++)
            if (interps[i].id == 0)
                pyf__os_threads_begin(t, interps[i].threads_head);
    size_t cap = v->want > v->need ? v->want : v->need;
    uint8_t *buf = malloc(cap);
    if (buf == NULL)
        return PYF_ENOMEM;
    for (uint32_t i = 0; i < n && rc == PYF_OK; i++) {
        rc = v->interp(v->ctx, &interps[i]);
        if (rc == PYF_OK)
            rc = visit_list(t, &interps[i], v, buf);
        if (rc == PYF_OK && v->interp_end != NULL)
            rc = v->interp_end(v->ctx, &interps[i]);
    }
    free(buf);
    return rc;
}

/* ---- the stack walk --------------------------------------------------------- */

/* A running thread's _PyCFrame read again at most this many times when the
 * thread state names another one right after its current frame was read */
#define CFRAME_TRIES 4

int pyf__walk_top(pyf_target *t, pyf__thread_walk *w, const uint8_t *buf, size_t len)
{
    const pyf__offsets *o = &t->off;
    w->cframe = 0;
    if (o->top_kind == PYF__TOP_TSTATE) {
        pyf__walk_from_tstate(o, w, buf);
        return PYF_OK;
    }
    /* the eval loop running the thread's newest frames keeps them in its
     * _PyCFrame, on the C stack (the thread state's own root_cframe, whose
     * current frame is NULL, when none runs) */
    w->base_frame = 0;
    w->datastack_chunk = pyf__ld64(buf + o->tstate.datastack_chunk);
    w->current_frame = 0;
    uint64_t cf = pyf__ld64(buf + o->tstate.cframe);
    for (int try = 0; cf != 0; try++) {
        if (cf % 8 != 0 || cf > UINT64_MAX - o->cframe.size)
            return pyf__fail(t, PYF_ECORRUPT, "thread state 0x%llx: bad _PyCFrame pointer "
                             "0x%llx", (unsigned long long)w->tstate_addr,
                             (unsigned long long)cf);
        uint64_t at = cf + o->cframe.current_frame;
        if (at >= w->tstate_addr && at - w->tstate_addr <= len &&
            len - (at - w->tstate_addr) >= 8) {
            /* the thread state's own root_cframe: in buf */
            w->cframe = cf;
            w->current_frame = pyf__ld64(buf + (at - w->tstate_addr));
            return PYF_OK;
        }
        /* A running thread's _PyCFrame lives as long as its eval loop: read
         * after it returned, the word is stale, or another call's.  The
         * thread state must still name it right after (another loop made
         * at its address since is read as it is now). */
        uint8_t cur[8], again[8];
        pyf_iovec iov[2] = {{at, cur, 8}, {w->tstate_addr + o->tstate.cframe, again, 8}};
        uint64_t calls = t->io.calls;
        int rc = pyf__target_live(t) ? pyf__read_after(t, iov, 2) : pyf__read_quiet(t, at, cur, 8);
        w->fresh |= t->io.calls != calls;
        if (rc != PYF_OK)
            return pyf__read_failed(&t->io.fail, &t->io.reader, rc, "_PyCFrame (C stack)", at, 8);
        if (!pyf__target_live(t) || pyf__ld64(again) == cf) {
            w->cframe = cf;
            w->current_frame = pyf__ld64(cur);
            /* an eval loop's own _PyCFrame names a frame once the loop
             * wrote it; until then the word is what its C stack held, NULL
             * too: not a thread without Python frames */
            if (w->current_frame == 0)
                return pyf__fail(t, PYF_ECORRUPT, "thread state 0x%llx: its eval loop's "
                                 "_PyCFrame names no frame yet (the thread was entering a "
                                 "call from C)", (unsigned long long)w->tstate_addr);
            return PYF_OK;
        }
        if (try + 1 >= CFRAME_TRIES)
            return pyf__fail(t, PYF_ECORRUPT, "thread state 0x%llx: its _PyCFrame changed "
                             "each time it was read (the thread was entering and leaving "
                             "Python calls)", (unsigned long long)w->tstate_addr);
        t->io.stats.retried_walks++;
        cf = pyf__ld64(again);
    }
    return PYF_OK;
}

typedef struct stack_walk {
    pyf_target *t;
    const pyf_snapshot_request *req;
    const pyf__sink *sink;
    uint32_t max_depth;
    bool one;                /* PYF_SNAP_ONE_THREAD */
    bool found;              /* ... and that thread was found */
} stack_walk;

/* One thread's frames.  A walk of a live process that saw the stack change
 * under it is made again from a fresh read of the thread state (the walk's
 * copies are then never from the prefetch), a bounded number of times.
 * When every read finds the same frame odd under the same top frame, the
 * stack is not changing (a stopped process; a frame really at an
 * instruction without a location): a last walk shows that frame as it is
 * (steady), every other check of a running process still made. */
#define WALK_TRIES 3

/* The tries of a live walk found the stack changing.  When every thread
 * of the process is stopped (SIGSTOP, a debugger's stop) and none runs
 * until the walk is done (pyf__pid_reader_frozen's token the same before
 * and after), the stack did not change: a thread stopped between the
 * writes of a call or a return (3.11, 3.12: a top frame being set up
 * over a caller in C) is shown as it is (frozen), every other check
 * still made; when it fails, its failure says why.  When the process is
 * not stopped, or ran meanwhile, the failure of the tries (rc) stands. */
static int walk_frozen(pyf_target *t, pyf__thread_walk *w, const pyf__thread_walk *first,
                       uint8_t *buf, size_t tlen, const pyf__sink *sink,
                       pyf__walk_result *res, int rc)
{
    uint64_t before, after;
    if (!w->live || !pyf__pid_reader_frozen(&t->io.reader, &before))
        return rc;
    pyf_failure fail = t->io.fail;
    pyf__walk_result tried = *res;
    sink->rollback(sink->ctx);
    t->walk.prefetch.n = 0;
    *w = *first;
    int frc = pyf__read_now(t, w->tstate_addr, buf, tlen);
    if (frc == PYF_OK)
        frc = pyf__walk_top(t, w, buf, tlen);
    if (frc == PYF_OK) {
        w->steady = w->frozen = true;
        w->stop_at = 0;
        w->chunks = PYF__CHUNKS_ALL;
        frc = pyf__walk_frames(t, w, sink, res);
    }
    bool held = pyf__pid_reader_frozen(&t->io.reader, &after) && after == before;
    /* stopped throughout: its frames, and its failure says why */
    if (held || frc == PYF_ENOMEM)
        return frc;
    sink->rollback(sink->ctx);
    t->io.fail = fail;
    *res = tried;
    return rc;
}
/* A stack seen in copies that differ is changing right now, often
 * (a loop of short calls): it gets more tries, each a few microseconds. */
#define WALK_TRIES_MOVING 8
static int walk_thread(pyf_target *t, pyf__thread_walk *w, uint8_t *buf, size_t tlen,
                       uint64_t thread_id, const pyf__sink *sink, uint32_t *more)
{
    const pyf__offsets *o = &t->off;
    pyf__thread_walk first = *w;
    pyf__walk_result res;
    int rc = PYF_OK;
    uint64_t odd = 0, top = 0;
    bool steady = true;
    int tries = WALK_TRIES;
    uint32_t plan = pyf__plan_mark(t); /* the thread state's read is in it */
    for (int try = 0; try < tries; try++) {
        rc = pyf__cache_protocol(t) ? pyf__cache_walk(t, w, buf, thread_id, sink, &res)
                                    : pyf__walk_frames(t, w, sink, &res);
        /* a broken chain in a running process is most often one read
         * while it changed (a thread starting or ending): read it again */
        bool broken = w->live && (rc == PYF_ECYCLE || rc == PYF_ECORRUPT || rc == PYF_EFAULT);
        if (!res.torn && !(broken && try + 1 < tries))
            break;
        if (!res.torn)
            steady = false; /* a broken chain is never shown as steady */
        if (res.torn_moved || (try > 0 && (res.torn_at != odd || w->current_frame != top)))
            steady = false;
        /* a chain that changed, or broke, under the walk: a thread
         * that calls and returns all the time, read on a loaded machine
         * (the walk is often interrupted), needs more reads to find a
         * moment when it holds still */
        if (res.torn_moved || broken)
            tries = WALK_TRIES_MOVING;
        odd = res.torn_at;
        top = w->current_frame;
        if (try + 1 >= tries) {
            if (!steady) {
                rc = walk_frozen(t, w, &first, buf, tlen, sink, &res, rc);
                break;
            }
            sink->rollback(sink->ctx);
            w->steady = true;
            w->stop_at = 0;
            w->chunks = PYF__CHUNKS_ALL;
            rc = pyf__walk_frames(t, w, sink, &res);
            break;
        }
        t->io.stats.retried_walks++;
        sink->rollback(sink->ctx);
        pyf__plan_truncate(t, plan); /* this try's reads are planned instead */
        pyf__prefetch *p = &t->walk.prefetch;
        p->n = 0; /* from now on this snapshot reads the target as it is */
        /* the thread state as the last try's check read it right after
         * its copies (every field the walk takes), else read now */
        uint64_t cf = o->tstate.current_frame, span = t->walk.chunks.check_len;
        if ((o->top_kind != PYF__TOP_TSTATE || !t->walk.chunks.check_whole || cf + span > tlen ||
             !pyf__walk_checked(t, w->tstate_addr + cf, (size_t)span, buf + cf)) &&
            pyf__read_now(t, w->tstate_addr, buf, tlen) != PYF_OK)
            break;
        *w = first;
        if (pyf__walk_top(t, w, buf, tlen) != PYF_OK)
            break;
    }
    *more = res.more;
    return rc;
}

/* Before any thread: a code generation that moved empties the code cache. */
static int walk_interps(void *ctx, const pyf__interp_info *v, uint32_t n)
{
    stack_walk *sw = ctx;
    pyf_target *t = sw->t;
    if (t->off.interp.code_object_generation == PYF__ABSENT)
        return PYF_OK;
    uint64_t generation = 0;
    for (uint32_t i = 0; i < n; i++)
        generation = generation * 31 + v[i].code_generation + 1;
    if (t->code.generation_known && generation != t->code.generation) {
        pyf__code_cache_clear(&t->code.cache);
        t->io.stats.code_cache_invalidations++;
    }
    t->code.generation = generation;
    t->code.generation_known = true;
    return PYF_OK;
}

static int walk_interp(void *ctx, const pyf__interp_info *ii)
{
    stack_walk *sw = ctx;
    return sw->sink->interp(sw->sink->ctx, ii->addr, ii->id);
}

static int walk_one(void *ctx, pyf__thread_info *ti)
{
    stack_walk *sw = ctx;
    pyf_target *t = sw->t;
    const pyf__sink *sink = sw->sink;
    if (sw->one && ti->th.native_thread_id != sw->req->native_tid)
        return PYF_OK;
    sw->found = true;
    pyf__thread_walk w = {0};
    w.tstate_addr = ti->addr;
    w.fresh = ti->fresh;
    int trc = pyf__walk_top(t, &w, ti->buf, ti->len);
    w.max_depth = sw->max_depth;
    w.keep_frames = sw->req != NULL ? sw->req->keep_frames : 0;
    w.entries = sw->req != NULL && (sw->req->flags & PYF_SNAP_ENTRIES);
    w.extra = ti->buf;
    w.extra_addr = ti->addr;
    w.extra_len = ti->len;
    w.live = pyf__target_live(t);
    w.recheck_top = w.live;
    /* A running thread's top read now, after the prefetch: what that
     * holds (older chunks, frames) is from before that top existed, and
     * only the copies and checks made after it say what went with it */
    if (w.live && w.fresh)
        t->walk.prefetch.n = 0;
    int rc = sink->thread(sink->ctx, &ti->th);
    if (rc != PYF_OK)
        return rc;
    uint32_t more = 0;
    int wrc = trc != PYF_OK ? trc
                            : walk_thread(t, &w, ti->buf, ti->len, ti->th.thread_id, sink, &more);
    if (wrc == PYF_ENOMEM)
        return wrc;
    return sink->thread_end(sink->ctx, wrc, &t->io.fail, more);
}

/* Shown as a thread that could not be read (the list ends there). */
static int walk_broken(void *ctx, const pyf__interp_info *ii, uint64_t addr, int why)
{
    stack_walk *sw = ctx;
    if (sw->one)
        return PYF_OK; /* the requested thread was not before the break */
    pyf_thread th = {0};
    th.tstate_addr = addr;
    th.interp_index = ii->index;
    int rc = sw->sink->thread(sw->sink->ctx, &th);
    if (rc == PYF_OK)
        rc = sw->sink->thread_end(sw->sink->ctx, why, &sw->t->io.fail, 0);
    return rc;
}

int pyf__walk_all(pyf_target *t, const pyf_snapshot_request *req,
                  const pyf__sink *sink)
{
    const pyf__offsets *o = &t->off;
    stack_walk sw = {t, req, sink, t->opts.max_depth, false, false};
    if (req != NULL && req->max_depth != 0)
        sw.max_depth = req->max_depth;
    sw.one = req != NULL && (req->flags & PYF_SNAP_ONE_THREAD);
    /* Thread states are allocated as a larger _PyThreadStateImpl; reading a
     * frame's worth past PyThreadState picks up the 3.15 base frame. */
    pyf__thread_visitor v = {
        .ctx = &sw,
        .want = (size_t)o->tstate.size + (size_t)o->frame.size,
        .need = (size_t)o->tstate.size,
        .interps = walk_interps,
        .interp = walk_interp,
        .thread = walk_one,
        .broken = walk_broken,
    };
    int rc = pyf__visit_threads(t, &v);
    if (rc == PYF_OK && sw.one && !sw.found)
        return pyf__fail(t, PYF_ENOTHREAD, "no Python thread has native "
                         "thread id %llu", (unsigned long long)req->native_tid);
    return rc;
}
