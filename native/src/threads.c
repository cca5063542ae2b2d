/*
 * threads.c - walk the runtime's interpreters and each interpreter's thread
 * states, and hand every thread to the frame walker.
 *
 * Lists in the target are bounded by count and checked for cycles.  On
 * 3.14+ the interpreters' code_object_generation counters decide whether
 * the code-object cache is still valid.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define INTERP_READ_MAX (64u * 1024u)
/* a running process's thread list read again from a changed link, at most */
#define LIST_RELINKS 16

typedef struct interp_info {
    uint64_t addr, next;
    int64_t id;
    uint64_t threads_head, threads_main, code_generation;
} interp_info;

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
static int read_interp(pyf_target *t, uint64_t addr, interp_info *ii)
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
    if (t->reader.readv == NULL) {
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

/* One thread's frames.  A walk of a live process that saw the stack change
 * under it is made again from a fresh read of the thread state (the walk's
 * copies are then never from the prefetch), a bounded number of times.
 * When every read finds the same frame odd under the same top frame, the
 * stack is not changing (a stopped process; a frame really at an
 * instruction without a location): it is shown as it is. */
#define WALK_TRIES 3
/* A stack seen in copies that differ is changing right now, often
 * (a loop of short calls): it gets more tries, each a few microseconds. */
#define WALK_TRIES_MOVING 8
static int walk_thread(pyf_target *t, pyf__thread_walk *w, uint8_t *buf, size_t tlen,
                       uint64_t thread_id, const pyf__sink *sink, uint32_t *more)
{
    const pyf__offsets *o = &t->off;
    pyf__thread_walk first = *w;
    int rc = PYF_OK;
    uint64_t odd = 0, top = 0;
    bool steady = true;
    int tries = WALK_TRIES;
    for (int try = 0; try < tries; try++) {
        t->torn = false;
        t->torn_moved = false;
        rc = pyf__cache_protocol(t) ? pyf__cache_walk(t, w, buf, thread_id, sink, more)
                                    : pyf__walk_frames(t, w, sink, more);
        /* a broken chain in a running process is most often one read
         * while it changed (a thread starting or ending): read it again */
        bool broken = w->live && (rc == PYF_ECYCLE || rc == PYF_ECORRUPT || rc == PYF_EFAULT);
        if (!t->torn && !(broken && try + 1 < tries))
            break;
        if (!t->torn) {
            t->torn_at = 0;
            steady = false; /* a broken chain is never shown as steady */
        }
        if (t->torn_moved || (try > 0 && (t->torn_at != odd || w->current_frame != top)))
            steady = false;
        /* a chain that changed, or broke, under the walk: a thread
         * that calls and returns all the time, read on a loaded machine
         * (the walk is often interrupted), needs more reads to find a
         * moment when it holds still */
        if (t->torn_moved || broken)
            tries = WALK_TRIES_MOVING;
        odd = t->torn_at;
        top = w->current_frame;
        if (try + 1 >= tries) {
            if (!steady)
                break;
            sink->rollback(sink->ctx);
            w->live = false;
            w->stop_at = 0;
            w->chunks = PYF__CHUNKS_ALL;
            rc = pyf__walk_frames(t, w, sink, more);
            break;
        }
        t->stats.retried_walks++;
        sink->rollback(sink->ctx);
        pyf__prefetch *p = &t->prefetch;
        p->n = 0; /* from now on this snapshot reads the target as it is */
        if (pyf__read_fresh(t, w->tstate_addr, buf, tlen) != PYF_OK)
            break;
        *w = first;
        pyf__walk_from_tstate(o, w, buf);
    }
    return rc;
}

static int walk_threads(pyf_target *t, const interp_info *ii, uint32_t index,
                        const pyf_snapshot_request *req, uint32_t max_depth,
                        const pyf__sink *sink, bool *found)
{
    const pyf__offsets *o = &t->off;
    size_t tsize = (size_t)o->tstate.size;
    /* Thread states are allocated as a larger _PyThreadStateImpl; reading a
     * frame's worth past PyThreadState picks up the 3.15 base frame. */
    size_t textra = tsize + (size_t)o->frame.size;
    uint8_t *buf = malloc(textra);
    if (buf == NULL)
        return PYF_ENOMEM;
    uint32_t max_threads = t->opts.max_threads;
    pyf__addrset seen = {0};
    int rc = PYF_OK;
    uint64_t addr = ii->threads_head;
    uint64_t from = 0; /* the state addr was reached from (0: the head) */
    uint32_t relinks = 0;
    bool one = req != NULL && (req->flags & PYF_SNAP_ONE_THREAD);

    while (addr != 0 && rc == PYF_OK) {
        int why = PYF_OK;
        bool dup = false;
        if (addr % 8 != 0) {
            why = pyf__fail(t, PYF_ECORRUPT, "interpreter %lld: bad thread "
                            "pointer 0x%llx", (long long)ii->id,
                            (unsigned long long)addr);
        } else if (!pyf__addrset_add(&seen, addr, &dup)) {
            rc = PYF_ENOMEM;
            break;
        } else if (dup) {
            why = pyf__fail(t, PYF_ECYCLE, "thread list of interpreter %lld "
                            "loops back to 0x%llx", (long long)ii->id,
                            (unsigned long long)addr);
        } else if (seen.n > max_threads) {
            why = pyf__fail(t, PYF_EDEPTH, "interpreter %lld has more than "
                            "%u threads (the thread limit); stopped at 0x%llx",
                            (long long)ii->id, max_threads,
                            (unsigned long long)addr);
        }
        if (why != PYF_OK) {
            if (one)
                break; /* the requested thread was not before the break */
            /* Shown as a thread that could not be read, then stop. */
            pyf_thread th = {0};
            th.tstate_addr = addr;
            th.interp_index = index;
            rc = sink->thread(sink->ctx, &th);
            if (rc == PYF_OK)
                rc = sink->thread_end(sink->ctx, why, &t->fail, 0);
            break;
        }

        size_t tlen = textra;
        int rrc = pyf__read_quiet(t, addr, buf, tlen);
        if (rrc != PYF_OK)
            rrc = pyf__read(t, addr, buf, tlen = tsize, "thread state");
        if (rrc != PYF_OK && one)
            break;
        if (rrc != PYF_OK) {
            pyf_thread th = {0};
            th.tstate_addr = addr;
            th.interp_index = index;
            rc = sink->thread(sink->ctx, &th);
            if (rc == PYF_OK)
                rc = sink->thread_end(sink->ctx, rrc, &t->fail, 0);
            break;
        }
        /* A running process's list changes while it is walked: a state
         * freed after the one before it was read holds its allocator's
         * links where prev and next were, and leads into freed memory.
         * Every state must name its interpreter and the state it was
         * reached from; else that link is read again (a state unlinked
         * meanwhile is passed over), a bounded number of times. */
        if (rrc == PYF_OK && t->owns_pid_reader &&
            (pyf__ld64(buf + o->tstate.prev) != from ||
             pyf__ld64(buf + o->tstate.interp) != ii->addr)) {
            uint64_t link = from != 0 ? from + o->tstate.next
                                      : ii->addr + o->interp.threads_head;
            uint64_t again = 0;
            pyf__addrmap_remove(&seen, addr);
            if (relinks++ < LIST_RELINKS &&
                pyf__read_fresh(t, link, &again, 8) == PYF_OK) {
                t->stats.retried_walks++;
                addr = again;
                continue;
            }
            if (one)
                break;
            pyf_thread th = {0};
            th.tstate_addr = addr;
            th.interp_index = index;
            rc = sink->thread(sink->ctx, &th);
            if (rc == PYF_OK)
                rc = sink->thread_end(sink->ctx,
                                      pyf__fail(t, PYF_ECORRUPT, "the thread list of "
                                                "interpreter %lld changed while it was "
                                                "read (at 0x%llx)", (long long)ii->id,
                                                (unsigned long long)addr),
                                      &t->fail, 0);
            break;
        }
        pyf_thread th = {0};
        th.tstate_addr = addr;
        th.interp_index = index;
        th.thread_id = pyf__ld64(buf + o->tstate.thread_id);
        th.native_thread_id = pyf__ld64(buf + o->tstate.native_thread_id);
        if (ii->threads_main != 0 && ii->threads_main == addr)
            th.flags |= PYF_THREAD_MAIN;
        /* a free-threaded build has no one GIL holder: not known */
        if (o->tstate.holds_gil != PYF__ABSENT && !o->free_threaded) {
            th.flags |= PYF_THREAD_GIL_KNOWN;
            if (pyf__ld32(buf + o->tstate.holds_gil) != 0)
                th.flags |= PYF_THREAD_HOLDS_GIL;
        }
        uint64_t next = pyf__ld64(buf + o->tstate.next);

        if (!one || th.native_thread_id == req->native_tid) {
            *found = true;
            pyf__thread_walk w = {0};
            w.tstate_addr = addr;
            pyf__walk_from_tstate(o, &w, buf);
            w.max_depth = max_depth;
            w.keep_frames = req != NULL ? req->keep_frames : 0;
            w.extra = buf;
            w.extra_addr = addr;
            w.extra_len = tlen;
            w.live = t->owns_pid_reader;
            rc = sink->thread(sink->ctx, &th);
            if (rc != PYF_OK)
                break;
            uint32_t more = 0;
            int wrc = walk_thread(t, &w, buf, tlen, th.thread_id, sink, &more);
            if (wrc == PYF_ENOMEM) {
                rc = wrc;
                break;
            }
            rc = sink->thread_end(sink->ctx, wrc, &t->fail, more);
        }
        from = addr;
        addr = next;
    }
    pyf__addrset_free(&seen);
    free(buf);
    return rc;
}

int pyf__walk_all(pyf_target *t, const pyf_snapshot_request *req,
                  const pyf__sink *sink)
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

    /* Read every interpreter first: their code generations decide whether
     * cached code objects may be used in this snapshot. */
    interp_info interps[PYF_DEFAULT_MAX_INTERPRETERS];
    uint32_t n = 0;
    uint64_t generation = 0;
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
        generation = generation * 31 + interps[n].code_generation + 1;
        addr = interps[n].next;
        n++;
    }
    if (o->interp.code_object_generation != PYF__ABSENT) {
        if (t->code_generation_known && generation != t->code_generation) {
            pyf__code_cache_clear(&t->codes);
            t->stats.code_cache_invalidations++;
        }
        t->code_generation = generation;
        t->code_generation_known = true;
    }

    uint32_t max_depth = t->opts.max_depth;
    if (req != NULL && req->max_depth != 0)
        max_depth = req->max_depth;
    bool found = false;
    for (uint32_t i = 0; i < n; i++) {
        rc = sink->interp(sink->ctx, interps[i].addr, interps[i].id);
        if (rc == PYF_OK)
            rc = walk_threads(t, &interps[i], i, req, max_depth, sink, &found);
        if (rc != PYF_OK)
            return rc;
    }
    if (req != NULL && (req->flags & PYF_SNAP_ONE_THREAD) && !found)
        return pyf__fail(t, PYF_ENOTHREAD, "no Python thread has native "
                         "thread id %llu", (unsigned long long)req->native_tid);
    return PYF_OK;
}
