/*
 * replay.c - pyf_snapshot_take_copy's answer given again without a walk.
 *
 * A snapshot is a function of the bytes it read and of the target's caches
 * (code decodes, the 3.15 frame cache, the last snapshot's keys).  When a
 * take_copy read nothing but its prefetch (one reader call, every range
 * whole, no write, no walk read again, no cache miss or invalidation: the
 * caches are as they were before it), its
 * plan for the next prefetch is the very ranges that prefetch read, and it
 * was given back unchanged (PYF_COPY_FREED: the arrays and every thread's
 * frames as the snapshot before), the next take_copy of the same request
 * reads those ranges in its own prefetch: if they hold the same bytes, its
 * walk would take the same path through the same caches to the same answer.
 * That answer is given at once, with the counters the walk would have added
 * (pyf_stats.same_reads counts these).  Any other snapshot, a flush or a
 * change of cache mode forgets it.
 *
 * An answer with the threads' facts (PYF_SNAP_THREAD_FACTS) is never
 * freed, but it is given again the same way when it was the last one's
 * but for its facts (every thread's frames the same, which the caller
 * kept) and the facts read nothing but through the reader (no cache of
 * the target served them, their memo of where threading keeps its
 * threads was the same after as before, every read whole): the facts are
 * a function of the snapshot's threads and of the bytes their reads
 * found, so when the next call's prefetch finds the walk's bytes again
 * and one more reader call finds the facts' reads' bytes again, they are
 * the same facts (PYF_COPY_SAME_FACTS).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "containers.h"
#include "reads.h"
#include "replay.h"
#include "table.h"
#include "target.h"
#include "thread_facts.h"

/* The facts' reads while t->replay.log is this: their ranges and bytes, in
 * order, while ok (every read whole, within the bounds). */
#define LOG_MAX_RANGES 512u
#define LOG_MAX_BYTES (256u << 10)
struct pyf__readlog {
    bool ok;
    uint64_t epoch;                  /* the snapshot's (t->walk.epoch) */
    uint64_t calls;                  /* t->io.calls when they began */
    pyf__facts_memo memo;            /* the facts' memo then */
    struct pyf__range *r;
    uint32_t n, cap;
    uint8_t *bytes;
    uint64_t len, cap_bytes;
};

struct pyf__replay {
    bool ok;
    uint64_t epoch;                  /* t->walk.epoch of the answer */
    bool has_req;                    /* the request (normalised), if any */
    pyf_snapshot_request req;
    uint32_t cap;
    const pyf__table *table;
    uint32_t nrecords, nkeys;
    uint32_t nplan;
    uint8_t *bytes;                  /* what the prefetch read */
    uint64_t len, cap_bytes;
    uint8_t *arrays;                 /* the interps and threads copied */
    uint64_t arrays_len, cap_arrays;
    pyf_stats delta;                 /* what the walk added */
    pyf_snapshot_copy head;          /* the answer */
    bool facts;                      /* with the facts the log's reads made */
    pyf__readlog log;                /* the last snapshot's facts' reads */
    uint8_t *again;                  /* the log's ranges read again */
    uint64_t cap_again;
    pyf_iovec *iov;
    int *status;
    uint32_t cap_iov, cap_status;
};

#define NSTATS (sizeof(pyf_stats) / sizeof(uint64_t))
/* the counters the prefetch's own read adds (it is made again) */
#define READ_STATS 4u
_Static_assert(offsetof(pyf_stats, write_calls) == READ_STATS * sizeof(uint64_t),
               "pyf_stats: the read counters come first");

void pyf__replay_forget(pyf_target *t)
{
    if (t->replay.last != NULL)
        t->replay.last->ok = false;
}

void pyf__replay_free(pyf_target *t)
{
    if (t->replay.last != NULL) {
        t->replay.log = NULL;
        free(t->replay.last->bytes);
        free(t->replay.last->arrays);
        free(t->replay.last->log.r);
        free(t->replay.last->log.bytes);
        free(t->replay.last->again);
        free(t->replay.last->iov);
        free(t->replay.last->status);
        free(t->replay.last);
        t->replay.last = NULL;
    }
}

static uint64_t prefetched_bytes(const pyf__prefetch *p)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->nread; i++)
        total += p->iov[i].len;
    return total;
}

static bool keep(uint8_t **buf, uint64_t *cap, const void *src, uint64_t len)
{
    if (!pyf__buf_room(buf, cap, len))
        return false;
    if (len > 0)
        memcpy(*buf, src, len);
    return true;
}

/* ---- the facts' reads ---------------------------------------------------- */

void pyf__readlog_begin(pyf_target *t)
{
    t->replay.log = NULL;
    if (t->replay.last == NULL && (t->replay.last = calloc(1, sizeof *t->replay.last)) == NULL)
        return;
    pyf__readlog *log = &t->replay.last->log;
    log->ok = true;
    log->epoch = t->walk.epoch;
    log->calls = t->io.calls;
    log->memo = t->facts_memo;
    log->n = 0;
    log->len = 0;
    t->replay.log = log;
}

void pyf__readlog_end(pyf_target *t, bool pure)
{
    pyf__readlog *log = t->replay.log;
    t->replay.log = NULL;
    if (log != NULL)
        log->ok = log->ok && pure &&
                  memcmp(&log->memo, &t->facts_memo, sizeof log->memo) == 0;
}

void pyf__readlog_add(pyf__readlog *log, uint64_t addr, const void *bytes, size_t len, int rc)
{
    if (!log->ok || len == 0)
        return;
    if (rc != PYF_OK || log->n >= LOG_MAX_RANGES || len > LOG_MAX_BYTES - log->len ||
        !pyf__grow((void **)&log->r, &log->cap, log->n + 1, sizeof *log->r)) {
        log->ok = false;
        return;
    }
    if (log->len + len > log->cap_bytes) {
        uint64_t cap = log->cap_bytes * 2 > log->len + len ? log->cap_bytes * 2
                                                            : log->len + len;
        uint8_t *nb = realloc(log->bytes, (size_t)cap);
        if (nb == NULL) {
            log->ok = false;
            return;
        }
        log->bytes = nb;
        log->cap_bytes = cap;
    }
    memcpy(log->bytes + log->len, bytes, len);
    log->r[log->n++] = (struct pyf__range){addr, len};
    log->len += len;
}

/* Whether the log's reads find the same bytes again (one reader call). */
static bool facts_again(pyf_target *t, pyf__replay *r)
{
    const pyf__readlog *log = &r->log;
    if (memcmp(&log->memo, &t->facts_memo, sizeof log->memo) != 0)
        return false;
    if (log->n == 0)
        return true;
    if (!pyf__buf_room(&r->again, &r->cap_again, log->len) ||
        !pyf__grow((void **)&r->iov, &r->cap_iov, log->n, sizeof *r->iov) ||
        !pyf__grow((void **)&r->status, &r->cap_status, log->n, sizeof *r->status))
        return false;
    uint64_t at = 0;
    for (uint32_t i = 0; i < log->n; i++) {
        r->iov[i] = (pyf_iovec){log->r[i].addr, r->again + at, log->r[i].len};
        at += log->r[i].len;
    }
    if (pyf__readv(t, r->iov, log->n, r->status) != PYF_OK)
        return false;
    return memcmp(r->again, log->bytes, log->len) == 0;
}

/* ---- the answer ------------------------------------------------------------ */

void pyf__replay_note(pyf_target *t, const pyf_snapshot_copy *c,
                      const pyf_snapshot_request *req, const pyf_stats *before,
                      uint64_t calls_before, bool settled)
{
    pyf__replay_forget(t);
    const pyf__prefetch *p = &t->walk.prefetch;
    /* with facts: whether their reads were logged as this snapshot's,
     * made through the reader alone; the walk's reader calls end where
     * theirs began */
    bool facts = req != NULL && (req->flags & PYF_SNAP_THREAD_FACTS);
    const pyf__readlog *log = t->replay.last != NULL ? &t->replay.last->log : NULL;
    bool logged = log != NULL && log->ok && log->epoch == t->walk.epoch;
    uint64_t walk_calls = facts && logged ? log->calls : t->io.calls;
    pyf_stats d;
    const uint64_t *a = (const uint64_t *)before, *b = (const uint64_t *)&t->io.stats;
    uint64_t *dd = (uint64_t *)&d;
    for (size_t i = 0; i < NSTATS; i++)
        dd[i] = b[i] - a[i];
    bool pure = settled && (!facts || logged) && walk_calls == calls_before + 1 &&
                p->nread > 0 && p->read_ok && p->nplan == p->nread && d.write_calls == 0 &&
                d.code_cache_misses == 0 && d.code_cache_invalidations == 0 &&
                d.frame_cache_misses == 0 && /* a hit, full or partial, stores nothing
                                                 without writing the anchor */
                d.anchor_writes == 0 && d.retried_walks == 0 && d.code_changed == 0 &&
                t->walk.table != NULL;
    for (uint32_t i = 0; pure && i < p->nread; i++)
        pure = p->plan[i].addr == p->iov[i].addr && p->plan[i].len == p->iov[i].len;
    if (!pure)
        return;
    if (t->replay.last == NULL && (t->replay.last = calloc(1, sizeof *t->replay.last)) == NULL)
        return;
    pyf__replay *r = t->replay.last;
    uint64_t arrays = c->size - sizeof *c;
    if (c->size < sizeof *c || c->size > c->cap ||
        !keep(&r->bytes, &r->cap_bytes, p->buf, r->len = prefetched_bytes(p)) ||
        !keep(&r->arrays, &r->cap_arrays, (const uint8_t *)c + sizeof *c, arrays))
        return;
    r->arrays_len = arrays;
    r->epoch = t->walk.epoch;
    r->has_req = req != NULL;
    if (req != NULL)
        r->req = *req;
    r->cap = c->cap;
    r->table = t->walk.table;
    r->nrecords = t->walk.table->nrecords;
    r->nkeys = t->walk.table->nkeys;
    r->nplan = p->nplan;
    r->delta = d;
    r->head = *c;
    /* an answer with facts was not freed: nothing of its snapshot is given
     * again (the caller freed it) */
    r->head.out = NULL;
    r->head.snapshot.interps = NULL;
    r->head.snapshot.threads = NULL;
    r->head.snapshot.frames = NULL;
    r->head.table.frame_keys = NULL;
    r->facts = facts;
    r->ok = true;
}

/* The last answer, if this call's prefetch reads what it read.  Else the
 * prefetch is left begun, for the walk (false). */
bool pyf__replay_try(pyf_target *t, pyf_snapshot_copy *c, const pyf_snapshot_request *req)
{
    pyf__replay *r = t->replay.last;
    pyf__prefetch *p = &t->walk.prefetch;
    if (r == NULL || !r->ok || r->epoch != t->walk.epoch || t->walk.prev_epoch != t->walk.epoch ||
        c->kept != t->walk.epoch || c->cap != r->cap || r->has_req != (req != NULL) ||
        (req != NULL && memcmp(req, &r->req, sizeof *req) != 0) || t->walk.table != r->table ||
        r->table->nrecords != r->nrecords || r->table->nkeys != r->nkeys ||
        p->nplan != r->nplan)
        return false;
    r->ok = false; /* from here on this answer is given once or never */
    uint64_t plan_bytes = p->plan_bytes;
    pyf__prefetch_begin(t);
    if (p->stalled || !p->read_ok || p->nread != r->nplan || prefetched_bytes(p) != r->len ||
        memcmp(p->buf, r->bytes, r->len) != 0 || (r->facts && !facts_again(t, r)))
        return false;
    pyf__prefetch_end(t);
    p->nplan = r->nplan; /* the plan the walk would have made again */
    p->plan_bytes = plan_bytes;

    uint64_t *s = (uint64_t *)&t->io.stats;
    const uint64_t *d = (const uint64_t *)&r->delta;
    for (size_t i = READ_STATS; i < NSTATS; i++)
        s[i] += d[i];
    t->io.stats.same_reads++;
    uint64_t same_as = t->walk.epoch;
    t->walk.epoch++;
    t->walk.prev_epoch = t->walk.epoch;
    pyf__failure_clear(&t->io.fail);

    uint8_t *dst = (uint8_t *)c + sizeof *c;
    bool same = c->size == r->head.size &&
                (r->arrays_len == 0 || memcmp(dst, r->arrays, r->arrays_len) == 0);
    if (!same && r->arrays_len > 0)
        memcpy(dst, r->arrays, r->arrays_len);
    c->flags = PYF_COPY_ARRAYS | PYF_COPY_FREED | PYF_COPY_KEPT |
               (same ? PYF_COPY_SAME_ARRAYS : 0u) | (r->facts ? PYF_COPY_SAME_FACTS : 0u);
    c->out = NULL;
    c->size = r->head.size;
    c->reserved = 0;
    c->serial = t->walk.epoch;
    c->same_as = same_as;
    c->kept = t->walk.epoch;
    c->snapshot = r->head.snapshot;
    c->table = r->head.table;
    r->epoch = t->walk.epoch;
    r->ok = true;
    return true;
}
