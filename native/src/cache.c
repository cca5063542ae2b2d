/*
 * cache.c - CPython 3.15's frame cache protocol (last_profiled_frame and
 * last_profiled_frame_seq), as described in pyframes.h.
 *
 * A thread is walked from its top frame with the anchor as the walk's
 * stop_at.  At the anchor the cache entry of the thread state is consulted:
 * the anchor must be in it at index i with seq == entry seq + i, and the
 * anchor must still read the same afterwards; then the frames below come
 * from the entry.  Otherwise the walk goes on (a miss).
 *
 * An entry is stored only this way: check the thread state is still the
 * thread's as the walk left it (one read right before the write), write
 * the anchor (the top frame), read the thread state back (the anchor
 * must be ours, its seq is the entry's), copy and walk the stack from the anchor down with reads made
 * after the write, read the anchor again (unchanged: the anchor frame was
 * not popped, so nothing below it changed while it was copied).  A frame
 * that died and was replaced at the same address before the write is
 * therefore never stored as the old one.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "cache.h"
#include "code.h"
#include "containers.h"
#include "offsets.h"
#include "reads.h"
#include "replay.h"
#include "table.h"
#include "target.h"
#include "walk.h"

#define CACHE_MAX_ENTRIES 64u
#define CACHE_MAX_KEYS (1u << 20)
/* a partial hit that walked more than this above the anchor moves it up */
#define CACHE_REFRESH_WALKED 32u

/* One thread's walk with the protocol: what it started from. */
typedef struct anchor_walk {
    pyf_target *t;
    pyf__cache_entry *cur;   /* the thread state's entry, NULL: none */
    uint64_t tstate_addr, anchor, seq;
    uint32_t max_depth;      /* the walk's frame limit: no entry takes it past */
    uint64_t calls_before;   /* t->io.calls when the walk began */
    uint32_t walked;         /* frames delivered when the anchor was reached */
    int outcome;             /* 0 miss, 1 full hit, 2 partial hit */
} anchor_walk;

static void entry_drop(pyf__frame_cache *fc, uint32_t i)
{
    fc->nkeys -= fc->v[i].n;
    free(fc->v[i].keys);
    fc->v[i] = fc->v[--fc->n];
}

void pyf__cache_clear(pyf__frame_cache *fc)
{
    for (uint32_t i = 0; i < fc->n; i++)
        free(fc->v[i].keys);
    free(fc->v);
    free(fc->tmp);
    uint32_t mode = fc->mode;
    memset(fc, 0, sizeof *fc);
    fc->mode = mode;
}

bool pyf__cache_protocol(const pyf_target *t)
{
    return t->frame_cache.mode == PYF_CACHE_ON;
}

static bool can_write(const pyf_target *t)
{
    return t->io.reader.write != NULL && t->off.tstate.last_profiled_frame != PYF__ABSENT &&
           t->off.tstate.last_profiled_frame_seq != PYF__ABSENT;
}

int pyf_target_set_cache(pyf_target *t, uint32_t mode, uint32_t *effective)
{
    if (t == NULL || mode > PYF_CACHE_READ_ONLY)
        return PYF_EINVAL;
    if (mode == PYF_CACHE_ON && !can_write(t))
        mode = PYF_CACHE_READ_ONLY;
    if (mode != t->frame_cache.mode) {
        pyf__cache_clear(&t->frame_cache);
        t->frame_cache.mode = mode;
        pyf__replay_forget(t);
    }
    if (effective != NULL)
        *effective = mode;
    return PYF_OK;
}

/* The entry of this thread state, valid for the current table; a stale one
 * (another thread now at that address, another table) is dropped. */
static pyf__cache_entry *entry_find(pyf_target *t, uint64_t tstate, uint64_t thread_id)
{
    pyf__frame_cache *fc = &t->frame_cache;
    for (uint32_t i = 0; i < fc->n; i++) {
        pyf__cache_entry *e = &fc->v[i];
        if (e->tstate_addr != tstate)
            continue;
        if (e->thread_id != thread_id || t->walk.table == NULL ||
            e->table_id != t->walk.table->id) {
            entry_drop(fc, i);
            return NULL;
        }
        return e;
    }
    return NULL;
}

/* The anchor and its seq, read after what the walk read.  The copy the
 * prefetch made may serve only when the walk took everything from that
 * same batch (batched: its ranges are copied in order, the anchor's last);
 * after a read of its own the anchor is read again now. */
static int read_anchor(pyf_target *t, uint64_t tstate, bool batched, uint64_t *frame,
                       uint64_t *seq)
{
    const pyf__offsets *o = &t->off;
    uint8_t b[16];
    uint64_t fa = tstate + o->tstate.last_profiled_frame;
    uint64_t sa = tstate + o->tstate.last_profiled_frame_seq;
    int (*rd)(pyf_target *, uint64_t, void *, size_t) =
        batched ? pyf__read_quiet : pyf__read_fresh;
    int rc;
    if (pyf__walk_recheck(t, fa, 8, b) && pyf__walk_recheck(t, sa, 8, b + 8)) {
        rc = PYF_OK; /* read after the stack's copies, the walk's last read */
    } else if (sa == fa + 8) {
        rc = rd(t, fa, b, 16);
    } else {
        rc = rd(t, fa, b, 8);
        if (rc == PYF_OK)
            rc = rd(t, sa, b + 8, 8);
    }
    if (rc == PYF_OK) {
        *frame = pyf__ld64(b);
        *seq = pyf__ld64(b + 8);
    }
    return rc;
}

/* At the anchor, after `walked` frames (the walk's at_anchor): 1 and the
 * cached keys of the frames below the anchor when the entry holds the rest
 * of the stack (the anchor in it at index i with seq == entry seq + i, and
 * reading the same afterwards), 0 when not. */
static int at_anchor(void *ctx, uint32_t walked, pyf__rest *rest)
{
    anchor_walk *aw = ctx;
    pyf_target *t = aw->t;
    pyf__cache_entry *e = aw->cur;
    aw->walked = walked;
    if (e == NULL || t->walk.table == NULL || e->table_id != t->walk.table->id)
        return 0;
    const pyf__table *tb = t->walk.table;
    uint32_t i = 0;
    while (i < e->n && (e->keys[i] >= tb->nkeys || tb->keys[e->keys[i]].frame_addr != aw->anchor))
        i++;
    if (i == e->n || aw->seq != e->seq + i)
        return 0;
    /* a stack deeper than the limit is walked on, to fail like any walk */
    if ((uint64_t)walked + (e->n - i - 1) > aw->max_depth)
        return 0;
    uint64_t frame, seq;
    /* no reader call since the walk began: all of it from the prefetch */
    bool batched = t->io.calls == aw->calls_before && t->walk.prefetch.active;
    if (read_anchor(t, aw->tstate_addr, batched, &frame, &seq) != PYF_OK ||
        frame != aw->anchor || seq != aw->seq)
        return 0;
    uint32_t rec = tb->keys[e->keys[i]].record;
    rest->entry_from_c =
        rec < tb->nrecords && (tb->records[rec].info.flags & PYF_FRAME_ENTRY_FROM_C);
    rest->keys = e->keys + i + 1;
    rest->n = e->n - i - 1;
    aw->outcome = i == 0 && walked == 1 ? 1 : 2;
    t->io.stats.frames_from_cache += rest->n;
    return 1;
}

/* ---- storing: the keys of a walk made after the anchor write ------------- */

static int tmp_push(pyf__frame_cache *fc, uint32_t key)
{
    if (!pyf__grow((void **)&fc->tmp, &fc->cap_tmp, fc->ntmp + 1, sizeof *fc->tmp))
        return PYF_ENOMEM;
    fc->tmp[fc->ntmp++] = key;
    return PYF_OK;
}

static int tmp_frame(void *ctx, uint64_t frame_addr, uint64_t code_addr,
                     const pyf__code *code, int64_t instr, uint32_t flags)
{
    pyf_target *t = ctx;
    uint32_t rec, key;
    int rc = pyf__table_record(t->walk.table, code_addr, code, instr, flags, &rec);
    if (rc == PYF_OK)
        rc = pyf__table_key(t->walk.table, frame_addr, rec, &key);
    if (rc == PYF_OK)
        rc = tmp_push(&t->frame_cache, key);
    return rc;
}

static int tmp_mark_entry(void *ctx, uint64_t entry_addr)
{
    (void)entry_addr; /* the cache keeps keys only */
    pyf_target *t = ctx;
    pyf__frame_cache *fc = &t->frame_cache;
    if (fc->ntmp == 0)
        return PYF_OK;
    uint32_t *last = &fc->tmp[fc->ntmp - 1];
    uint32_t rec, key;
    int rc = pyf__table_record_with(t->walk.table, t->walk.table->keys[*last].record,
                                    PYF_FRAME_ENTRY_FROM_C, &rec);
    if (rc == PYF_OK)
        rc = pyf__table_key(t->walk.table, t->walk.table->keys[*last].frame_addr, rec, &key);
    if (rc == PYF_OK)
        *last = key;
    return rc;
}

/* Room for one more entry within the bounds (the oldest entries go). */
static pyf__cache_entry *entry_slot(pyf__frame_cache *fc, uint64_t tstate, uint32_t n)
{
    for (uint32_t i = 0; i < fc->n; i++)
        if (fc->v[i].tstate_addr == tstate)
            entry_drop(fc, i);
    if (n > CACHE_MAX_KEYS)
        return NULL;
    while (fc->n > 0 && (fc->n >= CACHE_MAX_ENTRIES || fc->nkeys + n > CACHE_MAX_KEYS))
        entry_drop(fc, 0);
    if (!pyf__grow((void **)&fc->v, &fc->cap, fc->n + 1, sizeof *fc->v))
        return NULL;
    pyf__cache_entry *e = &fc->v[fc->n];
    memset(e, 0, sizeof *e);
    if (n > 0 && (e->keys = malloc(n * sizeof *e->keys)) == NULL)
        return NULL;
    fc->n++;
    return e;
}

/* One read of the thread state's words from its current frame to its
 * thread id, into buf (the state's size): still thread_id's, C its current
 * frame (a Python frame the walk delivered, never the base frame), the
 * anchor and seq as the walk read them. */
static bool state_unchanged(pyf_target *t, uint64_t tstate, uint64_t thread_id, uint64_t c,
                            uint64_t anchor, uint64_t anchor_seq, uint8_t *buf)
{
    const pyf__offsets *o = &t->off;
    uint64_t f[4] = {o->tstate.current_frame, o->tstate.last_profiled_frame,
                     o->tstate.last_profiled_frame_seq, o->tstate.thread_id};
    uint64_t lo = f[0], hi = f[0] + 8;
    for (int i = 1; i < 4; i++) {
        lo = f[i] < lo ? f[i] : lo;
        hi = f[i] + 8 > hi ? f[i] + 8 : hi;
    }
    if (hi > o->tstate.size || pyf__read_now(t, tstate + lo, buf + lo, hi - lo) != PYF_OK)
        return false;
    return pyf__ld64(buf + f[3]) == thread_id && pyf__ld64(buf + f[0]) == c &&
           pyf__ld64(buf + f[1]) == anchor && pyf__ld64(buf + f[2]) == anchor_seq;
}

/* Make the top frame C the anchor and store the stack below it (the
 * anchor and seq those the walk started from).  Any failure only means
 * nothing is stored. */
static int store(pyf_target *t, const pyf__thread_walk *w0, uint64_t thread_id,
                 uint64_t anchor, uint64_t anchor_seq)
{
    const pyf__offsets *o = &t->off;
    pyf__frame_cache *fc = &t->frame_cache;
    uint64_t c = w0->current_frame, tstate = w0->tstate_addr;
    if (c == 0)
        return PYF_OK;
    size_t textra = (size_t)o->tstate.size + (size_t)o->frame.size;
    uint8_t *buf = malloc(textra);
    if (buf == NULL)
        return PYF_ENOMEM;
    int rc = PYF_OK;
    pyf__prefetch *p = &t->walk.prefetch;
    uint32_t pn = p->n;
    bool active = p->active;
    p->n = 0; /* the process runs: what follows reads the target as it is now */
    p->active = false;
    /* Right before the write, one read of the words from current_frame to
     * the thread id (the anchor word among them) must show the thread as
     * the walk left it, running Python code: its thread id, C (a Python
     * frame, never the base frame) its current frame, the anchor and seq
     * unmoved.  A thread
     * state is freed only once its thread runs no Python code (its current
     * frame its base frame, or none), and freed memory keeps what the state
     * held until another object takes it -- an image the walk itself may
     * have read, consistent with every check but this one -- while a split
     * of the freed block puts another object, or the allocator's own
     * words, over the anchor word.  What remains is the gap between this
     * read and the write: the thread would have to return from C and every
     * frame below, end, and its memory be reused, all within it. */
    if (!state_unchanged(t, tstate, thread_id, c, anchor, anchor_seq, buf))
        goto out;
    uint8_t v[8];
    for (int k = 0; k < 8; k++)
        v[k] = (uint8_t)(c >> (8 * k));
    const pyf_reader *r = &t->io.reader;
    if (r->write(r->arg, tstate + o->tstate.last_profiled_frame, v, 8) != PYF_OK)
        goto out;
    t->io.stats.write_calls++;
    t->io.stats.anchor_writes++;

    /* The thread state as it is after the write: the anchor must be ours,
     * and C the thread's current frame.  An anchor written on a frame that
     * had returned before the write is never moved by a return (CPython
     * moves it when the frame it names is removed): the walk below would
     * read that dead frame and its dead callers unchanged, the seq with
     * them, and a later call at the same address would find that stack
     * stored under it.  A frame current after the write is on the stack
     * from then on until its return moves the anchor and the seq. */
    if (pyf__read_now(t, tstate, buf, textra) != PYF_OK ||
        pyf__ld64(buf + o->tstate.last_profiled_frame) != c ||
        pyf__ld64(buf + o->tstate.current_frame) != c)
        goto out;
    uint64_t seq = pyf__ld64(buf + o->tstate.last_profiled_frame_seq);
    pyf__thread_walk w = *w0;
    pyf__walk_from_tstate(o, &w, buf);
    w.current_frame = c; /* the stack from the anchor down */
    w.recheck_top = false; /* c is the anchor, checked above and by its seq below */
    w.extra = buf;
    w.extra_len = textra;
    w.stop_at = 0;
    w.at_anchor = NULL;
    w.chunks = PYF__CHUNKS_ALL;
    w.keep_frames = 0;
    pyf__sink sink = {.ctx = t, .frame = tmp_frame, .mark_entry = tmp_mark_entry};
    fc->ntmp = 0;
    pyf__walk_result res;
    int wrc = pyf__walk_frames(t, &w, &sink, &res);
    if (res.tlbc_failures != 0) /* a frame without its line: not kept */
        wrc = PYF_EFAULT;
    if (wrc == PYF_ENOMEM) {
        rc = wrc;
        goto out;
    }
    uint64_t frame2, seq2;
    if (wrc != PYF_OK || fc->ntmp == 0 || t->walk.table->keys[fc->tmp[0]].frame_addr != c ||
        read_anchor(t, tstate, false, &frame2, &seq2) != PYF_OK ||
        frame2 != c || seq2 != seq)
        goto out;
    pyf__cache_entry *e = entry_slot(fc, tstate, fc->ntmp);
    if (e == NULL)
        goto out;
    e->tstate_addr = tstate;
    e->thread_id = thread_id;
    e->seq = seq;
    e->table_id = t->walk.table->id;
    e->n = fc->ntmp;
    e->seen = true;
    memcpy(e->keys, fc->tmp, fc->ntmp * sizeof *e->keys);
    fc->nkeys += fc->ntmp;
out:
    p->n = pn;
    p->active = active;
    free(buf);
    return rc;
}

/* ---- one thread ----------------------------------------------------------- */

int pyf__cache_walk(pyf_target *t, pyf__thread_walk *w, const uint8_t *tsbuf,
                    uint64_t thread_id, const pyf__sink *sink, pyf__walk_result *res)
{
    const pyf__offsets *o = &t->off;
    anchor_walk aw = {
        .t = t,
        .cur = entry_find(t, w->tstate_addr, thread_id),
        .tstate_addr = w->tstate_addr,
        .anchor = pyf__ld64(tsbuf + o->tstate.last_profiled_frame),
        .seq = pyf__ld64(tsbuf + o->tstate.last_profiled_frame_seq),
        .max_depth = w->max_depth,
        .calls_before = t->io.calls,
    };
    if (aw.cur != NULL) {
        aw.cur->seen = true;
        if (aw.anchor != 0 && w->current_frame != 0 && w->keep_frames == 0) {
            w->stop_at = aw.anchor;
            w->at_anchor = at_anchor;
            w->anchor_ctx = &aw;
            w->chunks = aw.anchor == w->current_frame ? PYF__CHUNKS_NONE
                                                      : PYF__CHUNKS_FROM_STOP;
        }
    }
    int rc = pyf__walk_frames(t, w, sink, res);
    w->at_anchor = NULL; /* aw ends here */
    w->anchor_ctx = NULL;
    if (aw.outcome == 1)
        t->io.stats.frame_cache_hits++;
    else if (aw.outcome == 2)
        t->io.stats.frame_cache_partial_hits++;
    else
        t->io.stats.frame_cache_misses++;
    if (rc == PYF_ENOMEM)
        return rc;
    /* store the stack after a miss, or move the anchor up when the walk
     * above it grows long; only when the thread's top is a Python frame
     * the walk delivered (a thread running no Python code has its base
     * frame, or an entry frame, on top: nothing to anchor, and a state
     * about to be freed is always such a thread's) */
    if (rc == PYF_OK && res->top != 0 && res->first == res->top && w->keep_frames == 0 &&
        (aw.outcome == 0 || aw.walked > CACHE_REFRESH_WALKED)) {
        /* the anchor goes on the frame the walk started from */
        pyf__thread_walk top = *w;
        top.current_frame = res->top;
        int src = store(t, &top, thread_id, aw.anchor, aw.seq);
        if (src == PYF_ENOMEM)
            return src;
    }
    return rc;
}

void pyf__cache_sweep(pyf_target *t)
{
    pyf__frame_cache *fc = &t->frame_cache;
    for (uint32_t i = 0; i < fc->n;) {
        if (!fc->v[i].seen) {
            entry_drop(fc, i);
            continue;
        }
        fc->v[i].seen = false;
        i++;
    }
}
