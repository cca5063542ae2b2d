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
 *   - a running process's chain is read a second time right after the
 *     first, every frame and the thread state's frame in one reader call:
 *     the thread state must still name the top, and each frame must hold
 *     the same type, caller, code, generator and state, and each frame
 *     below the top the same instruction.  Frame objects are reused (the
 *     free list, a code object's zombie frame), so a frame that returned
 *     and was made again elsewhere in the chain between the two reads is
 *     seen as a change; the top's instruction alone may move (it runs),
 *     and is taken from the second read.
 * Nothing is delivered before those checks: a failed walk hands the sink
 * nothing to take back.
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

/* Frames compared per reader call of the second read. */
#define RECHECK_BATCH 256

/* One frame of the first read. */
typedef struct pyf__hentry {
    pyf__hframe fr;
    uint64_t type;
    uint8_t running;         /* f_executing or f_state as read */
} hentry;

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
static bool frame_type(pyf_target *t, uint64_t type)
{
    if (t->walk.frame_type != 0)
        return type == t->walk.frame_type;
    const pyf__offsets *o = &t->off;
    uint8_t tb[8];
    char name[8];
    if (type == 0 || type % 8 != 0 ||
        pyf__read_quiet(t, type + o->type.tp_name, tb, 8) != PYF_OK ||
        pyf__read_quiet(t, pyf__ld64(tb), name, 6) != PYF_OK || memcmp(name, "frame", 6) != 0)
        return false;
    t->walk.frame_type = type;
    return true;
}

static hentry *room(pyf__walk_state *ws, uint32_t n)
{
    if (n < ws->heap_cap)
        return ws->heap;
    uint32_t cap = ws->heap_cap ? ws->heap_cap * 2 : 64;
    hentry *v = realloc(ws->heap, (size_t)cap * sizeof *v);
    if (v == NULL)
        return NULL;
    ws->heap = v;
    ws->heap_cap = cap;
    return v;
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

/* The second read of a running process's chain (n frames from v[0], the
 * top): PYF_OK when it holds what the first read did, the top's
 * instruction and state taken from it; else torn. */
static int recheck(pyf_target *t, const pyf__thread_walk *w, pyf__walk_result *res,
                   hentry *v, uint32_t n, size_t hlen)
{
    const pyf__offsets *o = &t->off;
    uint8_t buf[RECHECK_BATCH * 160 + 8];
    pyf_iovec iov[RECHECK_BATCH + 1];
    int status[RECHECK_BATCH + 1];
    if (hlen > 160)
        return pyf__fail(t, PYF_EOFFSETS, "frame object header of %zu bytes", hlen);
    for (uint32_t at = 0; at < n; at += RECHECK_BATCH) {
        uint32_t m = n - at < RECHECK_BATCH ? n - at : RECHECK_BATCH, k = 0;
        uint8_t top[8];
        if (at == 0 && w->tstate_addr != 0)
            iov[k++] = (pyf_iovec){w->tstate_addr + o->tstate.frame, top, 8};
        uint32_t first = k;
        for (uint32_t i = 0; i < m; i++)
            iov[k++] = (pyf_iovec){v[at + i].fr.addr, buf + (size_t)i * hlen, hlen};
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
        if (first == 1 && pyf__ld64(top) != v[0].fr.addr) {
            res->torn = res->torn_moved = true;
            res->torn_at = v[0].fr.addr;
            return pyf__fail(t, PYF_ECORRUPT, "the top frame moved from 0x%llx while the "
                             "stack was read", (unsigned long long)v[0].fr.addr);
        }
        for (uint32_t i = 0; i < m; i++) {
            hentry *e = &v[at + i];
            const uint8_t *f = buf + (size_t)i * hlen;
            pyf__hframe again;
            pyf__hframe_decode(o, f, e->fr.addr, &again);
            bool is_top = at + i == 0;
            if (pyf__ld64(f + o->pyobject.ob_type) != e->type || again.refcnt == 0 ||
                again.back != e->fr.back || again.code != e->fr.code ||
                again.gen != e->fr.gen ||
                (!is_top && (again.instr != e->fr.instr || running_byte(o, f) != e->running))) {
                res->torn = res->torn_moved = true;
                res->torn_at = e->fr.addr;
                return pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx changed while the stack was "
                                 "read", (unsigned long long)e->fr.addr);
            }
            if (is_top) {
                e->fr.instr = again.instr;
                e->fr.state = again.state;
            }
        }
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
    uint64_t *entry = NULL;
    if (sink->mark_entry != NULL && want > 0) {
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
        if (entry != NULL && (rc = sink->mark_entry(sink->ctx, entry[emitted])) != PYF_OK)
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
    pyf__walk_state *ws = &t->walk;
    size_t hlen = head_len(o);
    uint8_t f[512];
    memset(res, 0, sizeof *res);
    if (hlen > sizeof f || hlen > o->heapframe.size)
        return pyf__fail(t, PYF_EOFFSETS, "frame object fields lie beyond %zu bytes",
                         (size_t)o->heapframe.size);
    res->top = w->current_frame;

    /* frame objects are anywhere on the heap: every one is remembered */
    pyf__addrmap_slot seen_slots[64];
    pyf__addrset seen;
    PYF__ADDRSET_LOCAL(seen, seen_slots);
    uint64_t limit = (uint64_t)w->max_depth, addr = w->current_frame, last = 0;
    uint32_t n = 0;
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
        if ((rc = pyf__read(t, addr, f, hlen, "frame object")) != PYF_OK) {
            if (w->live && n > 0)
                res->torn = true; /* a caller freed meanwhile */
            break;
        }
        hentry *v = room(ws, n);
        if (v == NULL) {
            rc = PYF_ENOMEM;
            break;
        }
        hentry *e = &v[n];
        pyf__hframe_decode(o, f, addr, &e->fr);
        e->type = pyf__ld64(f + o->pyobject.ob_type);
        e->running = running_byte(o, f);
        if (!frame_type(t, e->type)) {
            rc = bad_frame(t, w, res, addr, "is not a frame object");
            break;
        }
        if (e->fr.refcnt == 0) {
            rc = bad_frame(t, w, res, addr, "is being freed (its refcount is 0)");
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
    if (rc == PYF_OK && n > 0 && w->live)
        rc = recheck(t, w, res, ws->heap, n, hlen);
    if (rc == PYF_OK)
        rc = deliver(t, w, sink, res, ws->heap, n);
    return rc;
}

void pyf__walk_heap_free(pyf__walk_state *ws)
{
    free(ws->heap);
    ws->heap = NULL;
    ws->heap_cap = 0;
    ws->frame_type = 0;
}
