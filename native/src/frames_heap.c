/*
 * frames_heap.c - a thread's frames where they are heap objects (CPython
 * 3.8-3.10, frame_model PYF__FRAMES_HEAP): PyFrameObjects chained by
 * f_back from the thread state's frame.  The walk's other frame model,
 * behind the same pyf__walk_frames and the same sink (frames.c walks the
 * data-stack frames of 3.11+).
 *
 * When a heap frame is true (docs/architecture.md, "Heap frames"):
 *   - every frame is a frame object (its type's tp_name is "frame") with a
 *     non-zero refcount, and its code object is a code object;
 *   - every frame below the top runs (f_executing, f_state EXECUTING or
 *     UNWINDING): it waits in the call of the frame above it; the top may
 *     also be one being entered (not started, or a generator's being
 *     resumed) or returning;
 *   - a running process's top frame has not returned (one that has is
 *     being made again for another call, or no longer the thread's);
 *   - a running process's chain is read a second time right after the
 *     first, every frame and the thread state's frame (before the frames
 *     and after them) in one reader call: the thread state must still
 *     name the top, and each frame must hold
 *     the same type, caller, code, generator and state, and each frame
 *     below the top the same instruction.  Frame objects are reused (the
 *     free list, a code object's zombie frame), so a frame that returned
 *     and was made again elsewhere in the chain between the two reads is
 *     seen as a change; the top's instruction alone may move (it runs),
 *     and is taken from the second read.
 * Nothing is delivered before those checks: a failed walk hands the sink
 * nothing to take back.
 *
 * Frame objects are small heap blocks, mostly near each other (pymalloc's
 * pools).  A running process's frames are read as few ranges: where a
 * thread's frames were at its last walk (spans: frames this near each
 * other merged) is read whole in one reader call before the walk, and the
 * second read is of the spans of the frames found, in one call; a frame
 * outside them is read on its own.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "code.h"
#include "containers.h"
#include "errors.h"
#include "offsets.h"
#include "reads.h"
#include "target.h"
#include "walk.h"

/* Frames compared per reader call of the second read, frame by frame. */
#define RECHECK_BATCH 256
/* Spans: frames at most SPAN_GAP bytes apart are one range; at most
 * SPAN_MAX ranges and SPAN_BYTES bytes a thread (beyond, frame by frame),
 * kept for the last SPAN_THREADS threads walked. */
#define SPAN_GAP 512u
#define SPAN_MAX 64u
#define SPAN_BYTES (1u << 20)
#define SPAN_THREADS 32u

/* One frame of the first read. */
typedef struct hentry {
    pyf__hframe fr;
    uint64_t type;
    uint8_t running;         /* f_executing or f_state as read */
} hentry;

/* Where one thread's frames were: sorted, disjoint ranges. */
typedef struct spans {
    uint64_t tstate;         /* 0: unused */
    uint32_t n;
    uint64_t lo[SPAN_MAX], hi[SPAN_MAX];
} spans;

/* pyf__walk_state.heap: what the heap-frame walks keep. */
struct pyf__hwalk {
    hentry *v;               /* one thread's frames as first read */
    uint32_t cap;
    uint64_t frame_type;     /* the frame type's address, once known */
    spans known[SPAN_THREADS];
    uint32_t next;           /* the slot the next new thread takes */
    spans now;               /* the spans of the frames just read */
    uint64_t *addrs;         /* scratch: the frames' addresses, sorted */
    uint32_t addrs_cap;
    uint8_t *before, *again; /* the spans' bytes, before and after the walk */
    uint64_t before_cap, again_cap;
    int status[SPAN_MAX];
};

/* The bytes of a frame object the walk reads: its header to the last
 * field it takes. */
static size_t head_len(const pyf__offsets *o)
{
    uint64_t end = o->heapframe.lasti + 4;
    const uint64_t fields[] = {o->heapframe.back, o->heapframe.code, o->heapframe.gen,
                               o->pyobject.ob_type};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i] + 8 > end)
            end = fields[i] + 8;
    uint64_t flag = o->running_kind == PYF__RUNNING_FLAG ? o->heapframe.executing
                                                         : o->heapframe.state;
    if (flag + 1 > end)
        end = flag + 1;
    if (o->running_kind == PYF__RUNNING_FLAG && o->heapframe.stacktop + 8 > end)
        end = o->heapframe.stacktop + 8;
    return (size_t)end;
}

static uint8_t running_byte(const pyf__offsets *o, const uint8_t *f)
{
    return f[o->running_kind == PYF__RUNNING_FLAG ? o->heapframe.executing
                                                  : o->heapframe.state];
}

/* Whether type is the frame type: learned from the first frame whose type
 * is named "frame", then compared by address. */
static bool frame_type(pyf_target *t, struct pyf__hwalk *hw, uint64_t type)
{
    if (hw->frame_type != 0)
        return type == hw->frame_type;
    const pyf__offsets *o = &t->off;
    uint8_t tb[8];
    char name[8];
    if (type == 0 || type % 8 != 0 ||
        pyf__read_quiet(t, type + o->type.tp_name, tb, 8) != PYF_OK ||
        pyf__read_quiet(t, pyf__ld64(tb), name, 6) != PYF_OK || memcmp(name, "frame", 6) != 0)
        return false;
    hw->frame_type = type;
    return true;
}

/* ---- spans ---------------------------------------------------------------- */

static spans *spans_of(struct pyf__hwalk *hw, uint64_t tstate)
{
    for (uint32_t i = 0; i < SPAN_THREADS; i++)
        if (hw->known[i].tstate == tstate && tstate != 0)
            return &hw->known[i];
    return NULL;
}

static uint64_t spans_bytes(const spans *sp)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < sp->n; i++)
        total += sp->hi[i] - sp->lo[i];
    return total;
}

/* The ranges of sp in one reader call into *buf one after the other, the
 * npre ranges of pre before them and the npost of post after them.  PYF_OK,
 * else the reader's failure; hw->status[i] says which range of sp failed. */
static int spans_read(pyf_target *t, struct pyf__hwalk *hw, const spans *sp, uint8_t **buf,
                      uint64_t *cap, const pyf_iovec *pre, uint32_t npre,
                      const pyf_iovec *post, uint32_t npost)
{
    pyf_iovec iov[SPAN_MAX + 4];
    int status[SPAN_MAX + 4];
    uint64_t at = 0;
    uint32_t k = 0;
    if (npre + npost > 4 || !pyf__buf_room(buf, cap, spans_bytes(sp)))
        return PYF_ENOMEM;
    for (uint32_t i = 0; i < npre; i++)
        iov[k++] = pre[i];
    for (uint32_t i = 0; i < sp->n; i++) {
        iov[k++] = (pyf_iovec){sp->lo[i], *buf + at, sp->hi[i] - sp->lo[i]};
        at += sp->hi[i] - sp->lo[i];
    }
    for (uint32_t i = 0; i < npost; i++)
        iov[k++] = post[i];
    int rc = pyf__readv(t, iov, k, status);
    memcpy(hw->status, status + npre, sp->n * sizeof *status);
    return rc;
}

/* [addr, addr+len) in the bytes spans_read made of sp (buf), or NULL
 * (not in a span, or its span unread). */
static const uint8_t *in_spans(const struct pyf__hwalk *hw, const spans *sp, const uint8_t *buf,
                               uint64_t addr, size_t len)
{
    uint64_t at = 0;
    for (uint32_t i = 0; i < sp->n; i++) {
        if (addr >= sp->lo[i] && addr - sp->lo[i] + len <= sp->hi[i] - sp->lo[i])
            return hw->status[i] == PYF_OK ? buf + at + (addr - sp->lo[i]) : NULL;
        at += sp->hi[i] - sp->lo[i];
    }
    return NULL;
}

static int addr_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The spans of the n frames of v (hlen bytes each) into hw->now; n 0
 * when they need more than SPAN_MAX ranges or SPAN_BYTES bytes. */
static void spans_make(struct pyf__hwalk *hw, const hentry *v, uint32_t n, size_t hlen,
                       uint64_t tstate)
{
    spans *sp = &hw->now;
    sp->tstate = tstate;
    sp->n = 0;
    if (n == 0 || !pyf__grow((void **)&hw->addrs, &hw->addrs_cap, n, sizeof *hw->addrs))
        return;
    for (uint32_t i = 0; i < n; i++)
        hw->addrs[i] = v[i].fr.addr;
    qsort(hw->addrs, n, sizeof *hw->addrs, addr_cmp);
    for (uint32_t i = 0; i < n; i++) {
        uint64_t lo = hw->addrs[i], hi = lo + hlen;
        if (sp->n > 0 && lo <= sp->hi[sp->n - 1] + SPAN_GAP) {
            if (hi > sp->hi[sp->n - 1])
                sp->hi[sp->n - 1] = hi;
            continue;
        }
        if (sp->n == SPAN_MAX) {
            sp->n = 0;
            return;
        }
        sp->lo[sp->n] = lo;
        sp->hi[sp->n] = hi;
        sp->n++;
    }
    if (spans_bytes(sp) > SPAN_BYTES)
        sp->n = 0;
}

/* Keep hw->now as the thread's spans. */
static void spans_keep(struct pyf__hwalk *hw)
{
    spans *slot = spans_of(hw, hw->now.tstate);
    if (slot == NULL) {
        slot = &hw->known[hw->next];
        hw->next = (hw->next + 1) % SPAN_THREADS;
    }
    *slot = hw->now;
}

/* ---- the walk --------------------------------------------------------------- */

static hentry *room(struct pyf__hwalk *hw, uint32_t n)
{
    return pyf__grow((void **)&hw->v, &hw->cap, n + 1, sizeof *hw->v) ? hw->v : NULL;
}

/* A frame that cannot be what the chain says: a running process changed it
 * while it was read (torn, read again), else the chain is corrupt. */
static int bad_frame(pyf_target *t, const pyf__thread_walk *w, pyf__walk_result *res,
                     uint64_t addr, const char *why)
{
    if (w->live) {
        res->torn = true;
        res->torn_at = addr;
        return pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx %s (the stack changed while it was "
                         "read)", (unsigned long long)addr, why);
    }
    return pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx %s", (unsigned long long)addr, why);
}

/* Whether frame e, read again as f, holds what the first read did (the
 * top: but for its instruction and state, taken from f). */
static bool holds(const pyf__offsets *o, hentry *e, const uint8_t *f, bool is_top)
{
    pyf__hframe again;
    pyf__hframe_decode(o, f, e->fr.addr, &again);
    if (pyf__ld64(f + o->pyobject.ob_type) != e->type || again.refcnt == 0 ||
        again.back != e->fr.back || again.code != e->fr.code || again.gen != e->fr.gen ||
        (!is_top && (again.instr != e->fr.instr || running_byte(o, f) != e->running)))
        return false;
    if (is_top) {
        e->fr.instr = again.instr;
        e->fr.state = again.state;
    }
    return true;
}

static int changed(pyf_target *t, pyf__walk_result *res, uint64_t addr, const char *what)
{
    res->torn = res->torn_moved = true;
    res->torn_at = addr;
    return pyf__fail(t, PYF_ECORRUPT, "%s 0x%llx changed while the stack was read", what,
                     (unsigned long long)addr);
}

/* The second read of a running process's chain (n frames from v[0], the
 * top), with the thread state's frame, in one reader call: the spans of
 * the frames (hw->now), else frame by frame in batches.  PYF_OK when it
 * holds what the first read did; else torn. */
static int recheck(pyf_target *t, struct pyf__hwalk *hw, const pyf__thread_walk *w,
                   pyf__walk_result *res, hentry *v, uint32_t n, size_t hlen)
{
    const pyf__offsets *o = &t->off;
    uint8_t top[8], top_after[8], top_frame[160];
    if (hlen > sizeof top_frame)
        return pyf__fail(t, PYF_EOFFSETS, "frame object header of %zu bytes", hlen);
    pyf_iovec top_iov = {w->tstate_addr + o->tstate.frame, top, 8};
    /* the thread state's frame and the top frame right after it, before
     * the rest, and the thread state's frame again after them all: the
     * top is read at a moment the thread state names it, the rest between
     * two such moments */
    pyf_iovec pre[2] = {top_iov, {v[0].fr.addr, top_frame, hlen}};
    pyf_iovec post[1] = {{w->tstate_addr + o->tstate.frame, top_after, 8}};
    bool named = w->tstate_addr != 0;
    bool spanned = hw->now.n > 0;
    if (spanned) {
        int rc = spans_read(t, hw, &hw->now, &hw->again, &hw->again_cap, named ? pre : pre + 1,
                            named ? 2 : 1, post, named ? 1 : 0);
        if (rc == PYF_ENOMEM)
            return rc;
        spanned = rc == PYF_OK;
    }
    if (spanned) {
        if (pyf__read_stalled(t)) {
            res->torn = res->torn_moved = true;
            return pyf__fail(t, PYF_ECORRUPT, "the read that checked the stack stalled: the "
                             "two reads may hold memory of several moments");
        }
        if (named && (pyf__ld64(top) != v[0].fr.addr || pyf__ld64(top_after) != v[0].fr.addr))
            return changed(t, res, v[0].fr.addr, "the thread's top frame");
        for (uint32_t i = 0; i < n; i++) {
            const uint8_t *f = i == 0 ? top_frame
                                      : in_spans(hw, &hw->now, hw->again, v[i].fr.addr, hlen);
            if (f == NULL || !holds(o, &v[i], f, i == 0))
                return changed(t, res, v[i].fr.addr, "frame");
        }
        return PYF_OK;
    }
    /* frame by frame (too many ranges, or one of them unreadable) */
    uint8_t buf[RECHECK_BATCH * 160];
    pyf_iovec iov[RECHECK_BATCH + 2];
    int status[RECHECK_BATCH + 2];
    if (hlen > 160)
        return pyf__fail(t, PYF_EOFFSETS, "frame object header of %zu bytes", hlen);
    for (uint32_t at = 0; at < n; at += RECHECK_BATCH) {
        uint32_t m = n - at < RECHECK_BATCH ? n - at : RECHECK_BATCH, k = 0;
        if (at == 0 && w->tstate_addr != 0)
            iov[k++] = top_iov;
        uint32_t first = k;
        for (uint32_t i = 0; i < m; i++)
            iov[k++] = (pyf_iovec){v[at + i].fr.addr, buf + (size_t)i * hlen, hlen};
        bool last = at + m == n && w->tstate_addr != 0;
        if (last)
            iov[k++] = post[0];
        if (pyf__readv(t, iov, k, status) != PYF_OK) {
            res->torn = true;
            return pyf__fail(t, PYF_ECORRUPT, "a frame could not be read again (the stack "
                             "changed while it was read)");
        }
        if (pyf__read_stalled(t)) {
            res->torn = res->torn_moved = true;
            return pyf__fail(t, PYF_ECORRUPT, "the read that checked the stack stalled: the "
                             "two reads may hold memory of several moments");
        }
        if ((first == 1 && pyf__ld64(top) != v[0].fr.addr) ||
            (last && pyf__ld64(top_after) != v[0].fr.addr))
            return changed(t, res, v[0].fr.addr, "the thread's top frame");
        for (uint32_t i = 0; i < m; i++)
            if (!holds(o, &v[at + i], buf + (size_t)i * hlen, at + i == 0))
                return changed(t, res, v[at + i].fr.addr, "frame");
    }
    return PYF_OK;
}

/* Bytes of C stack read at once while following the CFrame chain (a
 * 3.10 Python call takes about 400 bytes of it): a read that runs past the
 * stack's end is made again a quarter as long, down to one word. */
#define CFRAME_WINDOW 65536

/* 3.10: the entries of the thread's n frames, top first, into entry[0 ..
 * want): each eval call pushes one CFrame on the C stack, so the k-th
 * CFrame from the thread state's cframe goes with the k-th frame from the
 * top (nothing in a CFrame names its frame).  True only when the chain
 * holds exactly n CFrames, each outer than the one before it, before the
 * thread state's root_cframe (whose previous is never set); else the
 * entries are not known (never a wrong one).  3.8 and 3.9 push no marker:
 * false. */
static bool cframe_entries(pyf_target *t, const pyf__thread_walk *w, uint64_t *entry,
                           uint32_t n, uint32_t want)
{
    const pyf__offsets *o = &t->off;
    if (o->tstate.cframe == PYF__ABSENT || o->tstate.root_cframe == PYF__ABSENT ||
        o->cframe.previous == PYF__ABSENT || w->tstate_addr == 0 ||
        w->tstate_addr > UINT64_MAX - o->tstate.root_cframe)
        return false;
    uint64_t root = w->tstate_addr + o->tstate.root_cframe, lo = 0, hi = 0;
    uint8_t word[8];
    if (pyf__read_quiet(t, w->tstate_addr + o->tstate.cframe, word, 8) != PYF_OK)
        return false;
    uint8_t *win = malloc(CFRAME_WINDOW);
    if (win == NULL)
        return false;
    uint64_t cf = pyf__ld64(word), last = 0;
    bool ok = true;
    for (uint32_t k = 0; k < n; k++) {
        /* on the C stack, outward: each CFrame above the one before it */
        if (cf == root || cf % 8 != 0 || cf <= last ||
            cf > UINT64_MAX - CFRAME_WINDOW - o->cframe.previous) {
            ok = false;
            break;
        }
        if (k < want)
            entry[k] = cf;
        uint64_t at = cf + o->cframe.previous;
        if (at < lo || at + 8 > hi) {
            size_t len = CFRAME_WINDOW;
            int rc;
            while ((rc = pyf__read_quiet(t, at, win, len)) != PYF_OK && len > 8)
                len = len / 4 > 8 ? len / 4 : 8;
            if (rc != PYF_OK) {
                ok = false;
                break;
            }
            lo = at;
            hi = at + len;
        }
        last = cf;
        cf = pyf__ld64(win + (at - lo));
    }
    free(win);
    return ok && cf == root;
}

/* Hand the frames read to the sink, top first, as frames.c does its own:
 * kept up to keep_frames, counted past them, up to max_depth.  Every heap
 * frame runs in its own eval call, entered from C: each kept frame is
 * marked so, with its entry when known (3.10's CFrame, else 0).  A kept
 * frame's run never goes on past the cut, so no cut entry is handed. */
static int deliver(pyf_target *t, const pyf__thread_walk *w, const pyf__sink *sink,
                   pyf__walk_result *res, const hentry *v, uint32_t n)
{
    uint64_t keep = w->keep_frames != 0 ? w->keep_frames : UINT64_MAX, emitted = 0;
    uint32_t want = keep < n ? (uint32_t)keep : n;
    /* where each eval call is (3.10's CFrames), only when asked: a
     * sample marks its frames entered from C without it */
    uint64_t *entry = NULL;
    if (sink->mark_entry != NULL && want > 0 && w->entries) {
        entry = calloc(want, sizeof *entry);
        if (entry == NULL)
            return PYF_ENOMEM;
        if (!cframe_entries(t, w, entry, n, want))
            memset(entry, 0, want * sizeof *entry);
    }
    int rc = PYF_OK;
    for (uint32_t i = 0; i < n; i++) {
        const hentry *e = &v[i];
        if (emitted >= keep) {
            res->more++;
            continue;
        }
        int soft = PYF_ECORRUPT;
        const pyf__code *code = e->fr.code % 8 == 0
                                    ? pyf__code_get(t, e->fr.code, e->fr.addr, &soft)
                                    : NULL;
        if (soft == PYF_ENOMEM) {
            rc = soft;
            break;
        }
        if (soft == PYF__ESTALE) {
            res->torn = true;
            res->torn_at = e->fr.addr;
            rc = pyf__fail(t, PYF_ECORRUPT, "the code object of frame 0x%llx was freed "
                           "while it was read (the stack changed)",
                           (unsigned long long)e->fr.addr);
            break;
        }
        uint32_t flags = e->fr.gen != 0 ? pyf__owned_flags(code) : 0;
        rc = sink->frame(sink->ctx, e->fr.addr, e->fr.code, code, e->fr.instr, flags);
        if (rc != PYF_OK)
            break;
        if (res->first == 0)
            res->first = e->fr.addr;
        if (sink->mark_entry != NULL &&
            (rc = sink->mark_entry(sink->ctx, entry != NULL ? entry[emitted] : 0)) != PYF_OK)
            break;
        emitted++;
    }
    free(entry);
    return rc;
}

int pyf__walk_heap_frames(pyf_target *t, const pyf__thread_walk *w, const pyf__sink *sink,
                          pyf__walk_result *res)
{
    const pyf__offsets *o = &t->off;
    size_t hlen = head_len(o);
    uint8_t fb[512];
    memset(res, 0, sizeof *res);
    if (hlen > sizeof fb || hlen > o->heapframe.size)
        return pyf__fail(t, PYF_EOFFSETS, "frame object fields lie beyond %zu bytes",
                         (size_t)o->heapframe.size);
    struct pyf__hwalk *hw = t->walk.heap;
    if (hw == NULL && (hw = t->walk.heap = calloc(1, sizeof *hw)) == NULL)
        return PYF_ENOMEM;
    res->top = w->current_frame;

    /* a running process: where the thread's frames were last time, read
     * whole in one call (a reader that batches) */
    const spans *before = NULL;
    if (w->live && t->io.reader.readv != NULL &&
        (before = spans_of(hw, w->tstate_addr)) != NULL) {
        int rc = spans_read(t, hw, before, &hw->before, &hw->before_cap, NULL, 0, NULL, 0);
        if (rc == PYF_ENOMEM)
            return rc;
        if (pyf__read_stalled(t))
            before = NULL; /* of no one moment: frame by frame instead */
    }

    /* frame objects are anywhere on the heap: every one is remembered */
    pyf__addrmap_slot seen_slots[64];
    pyf__addrset seen;
    PYF__ADDRSET_LOCAL(seen, seen_slots);
    uint64_t limit = (uint64_t)w->max_depth, addr = w->current_frame, last = 0;
    uint32_t n = 0, outside = 0;
    int rc = PYF_OK;
    while (addr != 0) {
        if (addr % 8 != 0) {
            rc = bad_frame(t, w, res, last, "names a caller at an unaligned address");
            break;
        }
        bool dup = false;
        if (!pyf__addrset_add(&seen, addr, &dup)) {
            rc = PYF_ENOMEM;
            break;
        }
        if (dup) {
            rc = pyf__fail(t, PYF_ECYCLE, "frame chain loops back to frame 0x%llx (from "
                           "frame 0x%llx)", (unsigned long long)addr,
                           (unsigned long long)last);
            if (w->live)
                res->torn = true;
            break;
        }
        if (n >= limit) {
            rc = pyf__fail(t, PYF_EDEPTH, "more than %llu Python frames (raise the depth "
                           "limit to see more)", (unsigned long long)limit);
            break;
        }
        const uint8_t *f = before != NULL ? in_spans(hw, before, hw->before, addr, hlen) : NULL;
        outside += f == NULL;
        if (f == NULL) {
            if ((rc = pyf__read(t, addr, fb, hlen, "frame object")) != PYF_OK) {
                if (w->live && n > 0)
                    res->torn = true; /* a caller freed meanwhile */
                break;
            }
            f = fb;
        }
        hentry *v = room(hw, n);
        if (v == NULL) {
            rc = PYF_ENOMEM;
            break;
        }
        hentry *e = &v[n];
        pyf__hframe_decode(o, f, addr, &e->fr);
        e->type = pyf__ld64(f + o->pyobject.ob_type);
        e->running = running_byte(o, f);
        if (!frame_type(t, hw, e->type)) {
            rc = bad_frame(t, w, res, addr, "is not a frame object");
            break;
        }
        if (e->fr.refcnt == 0) {
            rc = bad_frame(t, w, res, addr, "is being freed (its refcount is 0)");
            break;
        }
        /* A running process's top frame that has returned is, a moment
         * after, no longer the thread's; one read while it is being made
         * again for another call (from the free list, or its code's zombie
         * frame) holds its new caller under its old code and state, and
         * that moment recurs in a loop: read again.  (A stopped process
         * may be stopped while its top frame returns: shown.) */
        if (n == 0 && w->live && !w->frozen && e->fr.state == PYF__HFRAME_DONE) {
            rc = bad_frame(t, w, res, addr, "is the thread's top but has returned");
            break;
        }
        /* below the top, every frame waits in a call: it runs */
        if (n > 0 && e->fr.state != PYF__HFRAME_RUNNING) {
            rc = bad_frame(t, w, res, addr, "is a caller that does not run");
            break;
        }
        last = addr;
        addr = e->fr.back;
        n++;
    }
    pyf__addrset_free(&seen);
    /* the frames above where the chain ended are shown with its failure,
     * as frames.c shows them: past the depth limit, or a stopped
     * process's chain broken below them; a running process's broken chain
     * is read again (torn) */
    int why = rc;
    pyf_failure fail = t->io.fail;
    if (rc != PYF_OK && !(rc == PYF_EDEPTH || (!res->torn && rc != PYF_ENOMEM)))
        return rc;
    rc = PYF_OK;
    if (n > 0 && w->live) {
        /* the same spans while they hold every frame (a stack that changes
         * near its top), else those of the frames now */
        if (before != NULL && outside == 0)
            hw->now = *before;
        else
            spans_make(hw, hw->v, n, hlen, w->tstate_addr);
        rc = recheck(t, hw, w, res, hw->v, n, hlen);
        if (rc == PYF_OK && hw->now.n > 0 && w->tstate_addr != 0)
            spans_keep(hw);
    }
    if (rc == PYF_OK)
        rc = deliver(t, w, sink, res, hw->v, n);
    if (rc == PYF_OK && why != PYF_OK) {
        t->io.fail = fail;
        rc = why;
    }
    return rc;
}

void pyf__walk_heap_free(pyf__walk_state *ws)
{
    struct pyf__hwalk *hw = ws->heap;
    if (hw == NULL)
        return;
    free(hw->v);
    free(hw->addrs);
    free(hw->before);
    free(hw->again);
    free(hw);
    ws->heap = NULL;
}
