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
 *   - a running process read by a reader that batches (walk_live): the
 *     top frame and the HEAD frames under it are read twice in one reader
 *     call between two reads of the thread state's frame, which must both
 *     name the top (the moment: a few microseconds), and must agree (the
 *     top the same object under the same caller, not returned; each
 *     caller to the byte); each frame under them is
 *     read before the moment and after it, and must hold the same type,
 *     caller, code, generator, state and instruction in both.  A caller
 *     holds still while it waits in a call; the frames near the top are
 *     the ones a loop of short calls changes, a caller's instruction from
 *     one call under the top of the next, so they are read at the moment.
 *   - a running process read otherwise: the chain is read a second time
 *     right after the first, every frame and the thread state's frame
 *     (before the frames and after them) in one reader call: the thread
 *     state must still name the top, and each frame must hold the same
 *     type, caller, code, generator and state, and each frame below the
 *     top the same instruction; the top's instruction alone may move (it
 *     runs), and is taken from the second read.
 *   Frame objects are reused (the free list, a code object's zombie
 *   frame), so a frame that returned and was made again between the reads
 *   is seen as a change, unless made again as the same call at the same
 *   instruction under the same caller (the same frame, to any reader).
 * Nothing is delivered before those checks: a failed walk hands the sink
 * nothing to take back.
 *
 * Frame objects are small heap blocks, mostly near each other (pymalloc's
 * pools).  A running process's frames are read as few ranges: where a
 * thread's frames were at its last walk (spans: frames this near each
 * other merged) is read whole in one reader call before the walk, and the
 * second read is of the spans of the frames found, in one call; a frame
 * outside them is read on its own (and, in walk_live, everything read
 * again from the spans of the frames now).
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

/* A live walk's moment (walk_live) reads twice, with the thread state's
 * frame before and after them, the frames a thread's top has lately been
 * (TOPS_MAX) and the HEAD frames under its top at its last walk; frames
 * this near each other as one range; that read made at most MOMENT_TRIES
 * times a walk. */
#define TOPS_MAX 4u
#define HEAD 8u
#define MOMENT_GAP 1024u
#define MOMENT_TRIES 16
#define MOMENT_MAX (TOPS_MAX + HEAD)

/* Where one thread's frames were: sorted, disjoint ranges; its tops and
 * head. */
typedef struct spans {
    uint64_t tstate;         /* 0: unused */
    uint32_t n;
    uint64_t lo[SPAN_MAX], hi[SPAN_MAX];
    uint32_t ntops, nhead;
    uint64_t tops[TOPS_MAX]; /* newest first */
    uint64_t head[HEAD];     /* the top HEAD frames of its last walk */
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
    /* the moment's ranges and their bytes */
    uint32_t mn;
    uint64_t mlo[MOMENT_MAX], mhi[MOMENT_MAX];
    int mstatus[MOMENT_MAX];
    uint8_t moment[MOMENT_MAX * (MOMENT_GAP + 512)];
    /* the same ranges read a second time within the moment */
    int mstatus2[MOMENT_MAX];
    uint8_t moment2[MOMENT_MAX * (MOMENT_GAP + 512)];
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

/* Frame addr's bytes f as e, when it can be what the chain says: a frame
 * object with a non-zero refcount; below the top (is_top false), one that
 * runs, since it waits in a call.  A running process's top frame that has
 * returned is, a moment after, no longer the thread's; one read while it
 * is being made again for another call (from the free list, or its code's
 * zombie frame) holds its new caller under its old code and state, and
 * that moment recurs in a loop: not taken (read again).  A stopped process
 * may be stopped while its top frame returns: taken. */
static int take(pyf_target *t, struct pyf__hwalk *hw, const pyf__thread_walk *w,
                pyf__walk_result *res, hentry *e, const uint8_t *f, uint64_t addr, bool is_top)
{
    const pyf__offsets *o = &t->off;
    pyf__hframe_decode(o, f, addr, &e->fr);
    e->type = pyf__ld64(f + o->pyobject.ob_type);
    e->running = running_byte(o, f);
    if (!frame_type(t, hw, e->type))
        return bad_frame(t, w, res, addr, "is not a frame object");
    if (e->fr.refcnt == 0)
        return bad_frame(t, w, res, addr, "is being freed (its refcount is 0)");
    if (is_top && w->live && !w->frozen && e->fr.state == PYF__HFRAME_DONE)
        return bad_frame(t, w, res, addr, "is the thread's top but has returned");
    if (!is_top && e->fr.state != PYF__HFRAME_RUNNING)
        return bad_frame(t, w, res, addr, "is a caller that does not run");
    return PYF_OK;
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

/* Whether the chain may go on to frame addr, n frames read, from frame
 * last: an aligned address not seen before, within the depth limit.
 * PYF_EDEPTH past it (the frames read are shown with it). */
static int link_to(pyf_target *t, const pyf__thread_walk *w, pyf__walk_result *res,
                   pyf__addrset *seen, uint64_t addr, uint64_t last, uint32_t n)
{
    if (addr % 8 != 0)
        return bad_frame(t, w, res, last, "names a caller at an unaligned address");
    bool dup = false;
    if (!pyf__addrset_add(seen, addr, &dup))
        return PYF_ENOMEM;
    if (dup) {
        if (w->live)
            res->torn = true;
        return pyf__fail(t, PYF_ECYCLE, "frame chain loops back to frame 0x%llx (from frame "
                         "0x%llx)", (unsigned long long)addr, (unsigned long long)last);
    }
    if (n >= (uint64_t)w->max_depth)
        return pyf__fail(t, PYF_EDEPTH, "more than %llu Python frames (raise the depth limit "
                         "to see more)", (unsigned long long)w->max_depth);
    return PYF_OK;
}

/* Frame addr, the n-th, into hw->v[n] (take) from its bytes f, or read on
 * its own into fb (hlen bytes) when f is NULL. */
static int add_frame(pyf_target *t, struct pyf__hwalk *hw, const pyf__thread_walk *w,
                     pyf__walk_result *res, const uint8_t *f, uint8_t *fb, size_t hlen,
                     uint64_t addr, uint32_t n)
{
    int rc;
    if (f == NULL) {
        if ((rc = pyf__read(t, addr, fb, hlen, "frame object")) != PYF_OK) {
            if (w->live && n > 0)
                res->torn = true; /* a caller freed meanwhile */
            return rc;
        }
        f = fb;
    }
    hentry *v = room(hw, n);
    if (v == NULL)
        return PYF_ENOMEM;
    return take(t, hw, w, res, &v[n], f, addr, n == 0);
}

/* Whether two reads of a frame object hold the same object, caller, code
 * and generator. */
static bool same_frame(const pyf__offsets *o, const uint8_t *a, const uint8_t *b)
{
    const uint64_t at[] = {o->pyobject.ob_type, o->heapframe.back, o->heapframe.code,
                           o->heapframe.gen};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        if (pyf__ld64(a + at[i]) != pyf__ld64(b + at[i]))
            return false;
    return pyf__ld64(a) != 0 && pyf__ld64(b) != 0;
}

/* Whether a top frame read as f has not returned. */
static bool top_runs(const pyf__offsets *o, const uint8_t *f)
{
    pyf__hframe fr;
    pyf__hframe_decode(o, f, 0, &fr);
    return fr.state != PYF__HFRAME_DONE;
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

/* ---- a running process, read by a reader that batches ------------------- */

/* Make addr the newest of the thread's tops. */
static void tops_put(spans *sp, uint64_t addr)
{
    uint32_t i = 0;
    while (i < sp->ntops && sp->tops[i] != addr)
        i++;
    if (i == sp->ntops && sp->ntops < TOPS_MAX)
        sp->ntops++;
    if (i == TOPS_MAX)
        i = TOPS_MAX - 1; /* the oldest makes room */
    memmove(sp->tops + 1, sp->tops, i * sizeof *sp->tops);
    sp->tops[0] = addr;
}

/* sp given the tops and head of from (its ranges its own). */
static void tops_of(spans *sp, const spans *from)
{
    sp->ntops = from->ntops;
    memcpy(sp->tops, from->tops, sizeof sp->tops);
    sp->nhead = from->nhead;
    memcpy(sp->head, from->head, sizeof sp->head);
}

/* [addr, addr+len) in the moment's bytes (again: in those read right
 * after it), or NULL; *asked: among the ranges it read (when NULL: that
 * range unreadable). */
static const uint8_t *in_moment(const struct pyf__hwalk *hw, uint64_t addr, size_t len,
                                bool again, bool *asked)
{
    uint64_t at = 0;
    *asked = false;
    for (uint32_t i = 0; i < hw->mn; i++) {
        if (addr >= hw->mlo[i] && addr - hw->mlo[i] + len <= hw->mhi[i] - hw->mlo[i]) {
            *asked = true;
            if ((again ? hw->mstatus2[i] : hw->mstatus[i]) != PYF_OK)
                return NULL;
            return (again ? hw->moment2 : hw->moment) + at + (addr - hw->mlo[i]);
        }
        at += hw->mhi[i] - hw->mlo[i];
    }
    return NULL;
}

/* The moment of a live walk: the thread state's frame, the frames its top
 * has lately been and the head of its last walk (sp), those frames again,
 * and the thread state's frame again, in one reader call of a few
 * microseconds.  When both
 * reads of the thread state name the same frame and its bytes were among
 * those read, they were read while the thread state named it: *x (0: no
 * Python frame), the bytes in hw (in_moment).  A top not among them is one
 * of the tops from then on, and the moment read again. */
static int moment(pyf_target *t, struct pyf__hwalk *hw, const pyf__thread_walk *w,
                  pyf__walk_result *res, spans *sp, size_t hlen, uint64_t *x)
{
    const pyf__offsets *o = &t->off;
    uint64_t at = w->tstate_addr + o->tstate.frame, gap = MOMENT_GAP;
    for (int k = 0; k < MOMENT_TRIES; k++) {
        uint64_t s[MOMENT_MAX];
        uint32_t ns = 0;
        for (uint32_t i = 0; i < sp->ntops; i++)
            s[ns++] = sp->tops[i];
        for (uint32_t i = 0; i < sp->nhead; i++)
            s[ns++] = sp->head[i];
        for (uint32_t i = 1; i < ns; i++) /* sorted: a dozen at most */
            for (uint32_t j = i; j > 0 && s[j - 1] > s[j]; j--) {
                uint64_t tmp = s[j];
                s[j] = s[j - 1];
                s[j - 1] = tmp;
            }
        hw->mn = 0;
        for (uint32_t i = 0; i < ns; i++) {
            if (s[i] > UINT64_MAX - hlen - MOMENT_GAP)
                continue;
            if (hw->mn > 0 && s[i] <= hw->mhi[hw->mn - 1] + gap) {
                if (s[i] + hlen > hw->mhi[hw->mn - 1])
                    hw->mhi[hw->mn - 1] = s[i] + hlen;
                continue;
            }
            hw->mlo[hw->mn] = s[i];
            hw->mhi[hw->mn++] = s[i] + hlen;
        }
        /* the frames twice between the two reads of the thread state's
         * frame: one being written while read (made again for another
         * call), or a caller under another call a moment, then differs */
        uint8_t wa[8], wb[8];
        pyf_iovec iov[2 * MOMENT_MAX + 3];
        int status[2 * MOMENT_MAX + 3];
        uint32_t m = 0;
        uint64_t off = 0;
        iov[m++] = (pyf_iovec){at, wa, 8};
        for (uint32_t i = 0; i < hw->mn; i++) {
            iov[m++] = (pyf_iovec){hw->mlo[i], hw->moment + off, hw->mhi[i] - hw->mlo[i]};
            off += hw->mhi[i] - hw->mlo[i];
        }
        for (uint32_t i = 0, a = 0; i < hw->mn; i++) {
            iov[m++] = (pyf_iovec){hw->mlo[i], hw->moment2 + a, hw->mhi[i] - hw->mlo[i]};
            a += hw->mhi[i] - hw->mlo[i];
        }
        iov[m++] = (pyf_iovec){at, wb, 8};
        pyf__readv(t, iov, m, status);
        if (status[0] != PYF_OK || status[m - 1] != PYF_OK)
            return pyf__read(t, at, wa, 8, "thread state"); /* says why */
        memcpy(hw->mstatus, status + 1, hw->mn * sizeof *status);
        memcpy(hw->mstatus2, status + 1 + hw->mn, hw->mn * sizeof *status);
        bool failed = false;
        for (uint32_t i = 0; i < hw->mn; i++)
            failed |= hw->mstatus[i] != PYF_OK;
        if (failed && gap > 0) {
            gap = 0; /* a frame unreadable: each on its own from now on */
            continue;
        }
        if (pyf__read_stalled(t) || pyf__ld64(wa) != pyf__ld64(wb))
            continue;
        uint64_t top = pyf__ld64(wa);
        if (top == 0) {
            *x = 0;
            return PYF_OK;
        }
        if (top % 8 != 0)
            return bad_frame(t, w, res, top, "named by the thread state is unaligned");
        tops_put(sp, top);
        bool asked;
        if (in_moment(hw, top, hlen, false, &asked) != NULL) {
            *x = top;
            return PYF_OK;
        }
    }
    res->torn = res->torn_moved = true;
    return pyf__fail(t, PYF_ECORRUPT, "the thread's top frame changed at every read of it "
                     "(%d reads)", MOMENT_TRIES);
}

/* A running process's chain, read by a reader that batches:
 *   1. where the thread's frames were (its spans) read whole, one call;
 *   2. the moment (above): the top frame, and the HEAD frames under it,
 *      read twice while the thread state names the top;
 *   3. the chain from the top: its HEAD frames from the moment's bytes,
 *      alike in both reads (the top: the same object under the same
 *      caller, not returned; a caller: to the byte), each under them from
 *      step 1's, each under the top a frame that runs.  One of the HEAD not among the moment's: the moment read
 *      again; one under them outside step 1's spans: read on its own, and
 *      all read again from the spans of the frames now;
 *   4. the spans read again, one call: each frame under the HEAD must
 *      hold what step 1 read.
 * A caller holds still while it waits in a call, and the deeper it is, the
 * longer its call: a frame under the HEAD holding the same in steps 1 and
 * 4 held it at the moment.  The HEAD frames are the ones a loop of short
 * calls changes (a caller's instruction, from one call, under the top of
 * the next), read at the moment.  What the moment cannot see: a top that
 * returns and is called again within it (its code's zombie frame, the same
 * object), another call between, in step with both reads of a caller
 * (docs/architecture.md: 0-0.15 % of the snapshots of a loop of
 * microsecond calls, target and reader on CPUs apart; not explained).  *handled false: not for this walk (frames
 * too spread for spans); the caller reads it otherwise. */
static int walk_live(pyf_target *t, struct pyf__hwalk *hw, const pyf__thread_walk *w,
                     const pyf__sink *sink, pyf__walk_result *res, size_t hlen, bool *handled)
{
    const pyf__offsets *o = &t->off;
    *handled = true;
    spans cur = {.tstate = w->tstate_addr};
    const spans *known = spans_of(hw, w->tstate_addr);
    if (known != NULL)
        cur = *known;
    else if (w->current_frame != 0)
        tops_put(&cur, w->current_frame);
    uint32_t head = t->walk.heap_head != 0 && t->walk.heap_head < HEAD ? t->walk.heap_head : HEAD;
    uint8_t fb[512];
    bool before = false;
    int moments = 0;
    for (int round = 0; round < 2;) {
        if (!before && cur.n > 0) {
            int rc = spans_read(t, hw, &cur, &hw->before, &hw->before_cap, NULL, 0, NULL, 0);
            if (rc == PYF_ENOMEM)
                return rc;
            before = rc == PYF_OK && !pyf__read_stalled(t);
        }
        uint64_t x = 0;
        int rc = moment(t, hw, w, res, &cur, hlen, &x);
        if (rc != PYF_OK)
            return rc;
        res->top = x;
        if (x == 0)
            return PYF_OK; /* no Python frame at that moment */
        pyf__addrmap_slot seen_slots[64];
        pyf__addrset seen;
        PYF__ADDRSET_LOCAL(seen, seen_slots);
        uint64_t addr = x, last = 0;
        uint32_t n = 0, outside = 0, unhead = 0;
        while (addr != 0) {
            if ((rc = link_to(t, w, res, &seen, addr, last, n)) != PYF_OK)
                break;
            /* a frame of the head the moment did not ask for: the moment
             * again; one it could not read: read on its own, to say why */
            bool asked = false;
            const uint8_t *f = n < head ? in_moment(hw, addr, hlen, false, &asked) : NULL;
            if (f == NULL && n < head && !asked)
                unhead++;
            /* each frame of the head read twice within the moment: the top
             * the same object, caller, code and generator, not returned;
             * each caller the same to its instruction (it waits in the
             * same call throughout).  A top that returned and was called
             * again within the moment, another call made between, would
             * have to be found running both times, each caller under the
             * other call both times */
            const uint8_t *f2 = f != NULL ? in_moment(hw, addr, hlen, true, &asked) : NULL;
            if (f != NULL && (f2 == NULL || !same_frame(o, f, f2) ||
                              (n > 0 ? memcmp(f, f2, hlen) != 0 : !top_runs(o, f2)))) {
                rc = changed(t, res, addr, "frame");
                break;
            }
            if (f == NULL && before && n >= head)
                f = in_spans(hw, &cur, hw->before, addr, hlen);
            outside += f == NULL;
            if ((rc = add_frame(t, hw, w, res, f, fb, hlen, addr, n)) != PYF_OK)
                break;
            last = addr;
            addr = hw->v[n].fr.back;
            n++;
        }
        pyf__addrset_free(&seen);
        if (rc != PYF_OK && rc != PYF_EDEPTH)
            return rc;
        int why = rc;
        pyf_failure fail = t->io.fail;
        cur.nhead = n < head ? n : head;
        for (uint32_t i = 0; i < cur.nhead; i++)
            cur.head[i] = hw->v[i].fr.addr;
        if (outside > unhead) {
            /* a caller under the head outside the spans (read after the
             * moment only): all again, from where the frames are now */
            spans_make(hw, hw->v, n, hlen, w->tstate_addr);
            if (hw->now.n == 0) {
                *handled = false; /* too spread: frame by frame */
                return PYF_OK;
            }
            tops_of(&hw->now, &cur);
            cur = hw->now;
            before = false;
            round++;
            continue;
        }
        if (unhead > 0) {
            /* the head has frames the moment did not ask for: it again,
             * with them */
            if (++moments >= MOMENT_TRIES)
                break;
            continue;
        }
        if (n > head) {
            /* the frames under the head read again, their spans in one
             * call: each must hold what step 1 read */
            spans_make(hw, hw->v + head, n - head, hlen, w->tstate_addr);
            if (hw->now.n == 0) {
                *handled = false;
                return PYF_OK;
            }
            rc = spans_read(t, hw, &hw->now, &hw->again, &hw->again_cap, NULL, 0, NULL, 0);
            if (rc == PYF_ENOMEM)
                return rc;
            if (rc != PYF_OK || pyf__read_stalled(t)) {
                res->torn = res->torn_moved = true;
                return pyf__fail(t, PYF_ECORRUPT, "the read that checked the stack %s",
                                 rc != PYF_OK ? "failed (a frame freed meanwhile)"
                                              : "stalled: it may hold memory of several "
                                                "moments");
            }
            for (uint32_t i = head; i < n; i++) {
                const uint8_t *f = in_spans(hw, &hw->now, hw->again, hw->v[i].fr.addr, hlen);
                if (f == NULL || !holds(o, &hw->v[i], f, false))
                    return changed(t, res, hw->v[i].fr.addr, "frame");
            }
        }
        /* kept: the spans of every frame (every one was in them, when
         * they were read: outside is 0 here), the tops and the head */
        if (before)
            hw->now = cur;
        else
            spans_make(hw, hw->v, n, hlen, w->tstate_addr);
        if (hw->now.n > 0) {
            tops_of(&hw->now, &cur);
            spans_keep(hw);
        }
        rc = deliver(t, w, sink, res, hw->v, n);
        if (rc == PYF_OK && why != PYF_OK) {
            t->io.fail = fail;
            rc = why;
        }
        return rc;
    }
    res->torn = res->torn_moved = true;
    return pyf__fail(t, PYF_ECORRUPT, "the thread's frames moved while they were read");
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
    if (w->live && !w->frozen && t->io.reader.readv != NULL && w->tstate_addr != 0) {
        bool handled = false;
        int rc = walk_live(t, hw, w, sink, res, hlen, &handled);
        if (handled)
            return rc;
        memset(res, 0, sizeof *res);
        res->top = w->current_frame;
    }

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
    uint64_t addr = w->current_frame, last = 0;
    uint32_t n = 0, outside = 0;
    int rc = PYF_OK;
    while (addr != 0) {
        if ((rc = link_to(t, w, res, &seen, addr, last, n)) != PYF_OK)
            break;
        const uint8_t *f = before != NULL ? in_spans(hw, before, hw->before, addr, hlen) : NULL;
        outside += f == NULL;
        if ((rc = add_frame(t, hw, w, res, f, fb, hlen, addr, n)) != PYF_OK)
            break;
        last = addr;
        addr = hw->v[n].fr.back;
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
    if (n > 0 && w->live && !w->frozen) {
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
