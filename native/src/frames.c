/*
 * frames.c - walk one thread's chain of _PyInterpreterFrame.
 *
 * The thread's data-stack chunks are copied first, one read per chunk, and
 * frames are resolved inside those copies; frames outside them (generator
 * and coroutine frames live in their objects, 3.13/3.14 entry frames on the
 * C stack, the 3.15 base frame in the thread state) are read one by one.
 * Entry frames are skipped; tagged pointers (3.14+) are masked.  A visited
 * set and limits end cycles and runaway chains with a named error.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK_SPECULATIVE (16u * 1024u) /* CPython's DATA_STACK_CHUNK_SIZE */
#define CHUNK_MAX_BYTES (16u << 20)
#define CHUNKS_MAX_TOTAL (64u << 20)
#define CHUNKS_MAX_COUNT 4096u
#define CHUNK_DATA_OFFSET 24 /* offsetof(_PyStackChunk, data) */

/* The copies live in t->chunks and their buffers are kept from one walk to
 * the next (up to CHUNKS_KEEP_BYTES), so a warm walk allocates nothing. */
#define CHUNKS_KEEP_BYTES (4u << 20)

void pyf__chunks_free(pyf__chunk_list *cl)
{
    for (uint32_t i = 0; i < cl->cap; i++) {
        free(cl->v[i].data);
        for (int k = 0; k < PYF__COPIES - 1; k++)
            free(cl->v[i].again_data[k]);
    }
    free(cl->v);
    memset(cl, 0, sizeof *cl);
}

/* After a walk: keep the buffers unless they hold too much. */
static void chunks_done(pyf__chunk_list *cl)
{
    uint64_t held = 0;
    for (uint32_t i = 0; i < cl->cap; i++) {
        held += cl->v[i].cap;
        for (int k = 0; k < PYF__COPIES - 1; k++)
            held += cl->v[i].again_cap[k];
    }
    if (held > CHUNKS_KEEP_BYTES)
        pyf__chunks_free(cl);
    cl->n = 0;
}

/* *buf (of *cap bytes) holds at least len bytes; false when out of memory. */
static bool buf_room(uint8_t **buf, uint64_t *cap, uint64_t len)
{
    if (*cap >= len)
        return true;
    uint8_t *nb = realloc(*buf, (size_t)len);
    if (nb == NULL)
        return false;
    *buf = nb;
    *cap = len;
    return true;
}

/* The next chunk slot, its buffer at least len bytes; NULL when out of
 * memory. */
static pyf__chunk *chunk_slot(pyf__chunk_list *cl, uint64_t len)
{
    uint32_t had = cl->cap;
    if (!pyf__grow((void **)&cl->v, &cl->cap, cl->n + 1, sizeof *cl->v))
        return NULL;
    memset(cl->v + had, 0, (cl->cap - had) * sizeof *cl->v); /* no buffers yet */
    pyf__chunk *c = &cl->v[cl->n];
    return buf_room(&c->data, &c->cap, len) ? c : NULL;
}

/* PYF__COPIES copies of [lo, lo+len) for chunk c, made back to back: all
 * from the prefetch (which read the range as often in its one call), else
 * read now in one reader call.  False when they cannot be made. */
static bool copy_live(pyf_target *t, pyf__chunk *c, uint64_t lo, uint64_t len)
{
    const uint8_t *v[PYF__COPIES];
    int got = 0;
    memset(c->again, 0, sizeof c->again);
    while (got < PYF__COPIES && (v[got] = pyf__read_view(t, lo, (size_t)len)) != NULL)
        got++;
    if (got == PYF__COPIES) {
        c->mem = v[0];
        for (int k = 1; k < PYF__COPIES; k++)
            c->again[k - 1] = v[k];
        return true;
    }
    void *dst[PYF__COPIES];
    if (!buf_room(&c->data, &c->cap, len))
        return false;
    dst[0] = c->data;
    for (int k = 1; k < PYF__COPIES; k++) {
        if (!buf_room(&c->again_data[k - 1], &c->again_cap[k - 1], len))
            return false;
        dst[k] = c->again_data[k - 1];
    }
    if (pyf__read_copies(t, lo, dst, (size_t)len) != PYF_OK)
        return false;
    c->mem = c->data;
    for (int k = 1; k < PYF__COPIES; k++)
        c->again[k - 1] = c->again_data[k - 1];
    return true;
}

/* Only [from, the top frame's end) of the newest chunk at addr: the
 * frames above a cache anchor at from.  False when from is not there.  A
 * live process's range is copied PYF__COPIES times (copy_live): the walk
 * compares the frames of every copy, so a stack that changed while it was
 * copied is not taken for one stack (frames above the anchor have no seq
 * to say so). */
static bool copy_top(pyf_target *t, uint64_t addr, uint64_t top, uint64_t fsize,
                     uint64_t from, bool live, pyf__chunk_list *cl)
{
    from &= ~(uint64_t)7;
    if (addr == 0 || addr % 8 != 0 || from < addr + CHUNK_DATA_OFFSET || from > top ||
        top - addr > CHUNK_MAX_BYTES)
        return false;
    uint64_t end = (top + fsize + 7) & ~(uint64_t)7, len = end - from;
    pyf__chunk *c = chunk_slot(cl, 0);
    if (c == NULL)
        return false;
    memset(c->again, 0, sizeof c->again);
    if (live) {
        if (!copy_live(t, c, from, len))
            return false;
    } else {
        const uint8_t *mem = pyf__read_view(t, from, len);
        if (mem == NULL && ((c = chunk_slot(cl, len)) == NULL ||
                            pyf__read_quiet(t, from, c->data, len) != PYF_OK))
            return false;
        c->mem = mem != NULL ? mem : c->data;
    }
    c->addr = addr;
    c->size = end - addr;
    c->lo = from;
    cl->n = 1;
    return true;
}

static void copy_chunks(pyf_target *t, uint64_t addr, uint64_t top, uint64_t fsize,
                        bool live, pyf__chunk_list *cl)
{
    uint64_t total = 0;
    cl->n = 0;
    cl->partial = false;
    while (addr != 0 && cl->n < CHUNKS_MAX_COUNT && addr % 8 == 0) {
        for (uint32_t i = 0; i < cl->n; i++)
            if (cl->v[i].addr == addr)
                return; /* cycle */
        /* the newest chunk up to the top frame, others whole */
        uint64_t want = CHUNK_SPECULATIVE, used = UINT64_MAX;
        if (cl->n == 0 && top >= addr + CHUNK_DATA_OFFSET &&
            top - addr <= CHUNK_MAX_BYTES) {
            used = (top - addr + fsize + 7) & ~(uint64_t)7;
            if (used < want)
                want = used;
        }
        if (live && cl->n == 0 && used != UINT64_MAX) {
            /* The newest chunk of a running process changes while it is
             * copied: its frames must agree in PYF__COPIES copies made back
             * to back (a copy made while a call returned and another was
             * made in its place would show the new callee over the old
             * caller; two copies can still agree on that, PYF__COPIES). */
            pyf__chunk *c = chunk_slot(cl, 0);
            if (c != NULL && copy_live(t, c, addr, used)) {
                uint64_t size = pyf__ld64(c->mem + 8);
                if (size >= used && size <= CHUNK_MAX_BYTES) {
                    c->addr = c->lo = addr;
                    c->size = used;
                    cl->n++;
                    total += used;
                    addr = pyf__ld64(c->mem); /* previous */
                    continue;
                }
            }
            live = false; /* not a chunk we can copy again: as any other */
        }
        uint64_t have = want;
        /* what the last snapshot read here is used in place, else copied */
        const uint8_t *mem = pyf__read_view(t, addr, have);
        pyf__chunk *c = chunk_slot(cl, mem != NULL ? 0 : want);
        if (c == NULL)
            return;
        int rc = PYF_OK;
        bool copied = mem == NULL;
        if (copied) {
            rc = pyf__read_quiet(t, addr, c->data, have);
            if (rc != PYF_OK) {
                have = CHUNK_DATA_OFFSET;
                rc = pyf__read_quiet(t, addr, c->data, have);
            }
            mem = c->data;
        }
        uint64_t size = rc == PYF_OK ? pyf__ld64(mem + 8) : 0;
        if (rc != PYF_OK || size < CHUNK_DATA_OFFSET || size > CHUNK_MAX_BYTES ||
            total + size > CHUNKS_MAX_TOTAL)
            return;
        if (used < size)
            size = used;
        if (have > size)
            have = size;
        if (size > have) {
            if ((c = chunk_slot(cl, size)) == NULL) /* may move c->data */
                return;
            if (!copied)
                memcpy(c->data, mem, have);
            if (pyf__read_quiet(t, addr + have, c->data + have, size - have) != PYF_OK)
                return;
            mem = c->data;
        }
        c->mem = mem;
        memset(c->again, 0, sizeof c->again);
        c->addr = c->lo = addr;
        c->size = size;
        cl->n++;
        total += size;
        addr = pyf__ld64(c->mem); /* previous */
    }
}

static const uint8_t *in_chunk(const pyf__chunk *c, uint64_t addr, uint64_t len)
{
    if (addr >= c->addr + CHUNK_DATA_OFFSET && addr >= c->lo &&
        addr - c->addr <= c->size && len <= c->size - (addr - c->addr))
        return c->mem + (addr - c->lo);
    return NULL;
}

/* The copy of [addr, addr+len) in a chunk; *hint is the chunk of the last
 * hit, tried first (a chain runs through its chunks in order). */
static const uint8_t *find_in_chunks(const pyf__chunk_list *cl, uint64_t addr,
                                     uint64_t len, uint32_t *hint)
{
    const uint8_t *p;
    if (*hint < cl->n && (p = in_chunk(&cl->v[*hint], addr, len)) != NULL)
        return p;
    for (uint32_t i = 0; i < cl->n; i++) {
        if ((p = in_chunk(&cl->v[i], addr, len)) != NULL) {
            *hint = i;
            return p;
        }
    }
    return NULL;
}

/* ---- the walk ------------------------------------------------------------- */

int pyf__walk_frames(pyf_target *t, const pyf__thread_walk *w,
                     const pyf__sink *sink, uint32_t *more)
{
    const pyf__offsets *o = &t->off;
    size_t fsize = (size_t)o->frame.size;
    uint8_t direct[4096];
    if (fsize > sizeof direct)
        return pyf__fail(t, PYF_EOFFSETS, "frame size %zu is too large", fsize);

    pyf__chunk_list *cl = &t->chunks;
    uint32_t hint = 0;
    pyf__addrset seen = {0};
    uint64_t top = w->current_frame & ~(uint64_t)7;
    cl->n = 0;
    cl->partial = true;
    if (w->chunks == PYF__CHUNKS_ALL ||
        (w->chunks == PYF__CHUNKS_FROM_STOP &&
         !copy_top(t, w->datastack_chunk, top, fsize, w->stop_at, w->live, cl)))
        copy_chunks(t, w->datastack_chunk, top, fsize, w->live, cl);
    bool stopped = false;
    bool from_c = false; /* an entry frame since the last frame delivered */

    uint64_t max_depth = w->max_depth;
    uint64_t keep = w->keep_frames != 0 ? w->keep_frames : UINT64_MAX;
    uint64_t visit_limit = max_depth * 2 + 64;
    uint64_t emitted = 0, counted = 0, visits = 0;
    *more = 0;
    uint64_t addr = w->current_frame, last = 0;
    int rc = PYF_OK;

    while (addr != 0) {
        if (addr % 8 != 0) {
            rc = pyf__fail(t, PYF_ECORRUPT, "frame pointer 0x%llx is not "
                           "aligned (after frame 0x%llx)",
                           (unsigned long long)addr, (unsigned long long)last);
            break;
        }
        /* A cycle has at least one step that does not go down (frames in a
         * chunk point down to their callers): remembering the frames such
         * steps reach finds every cycle by its second lap, and a plain
         * stack only at its chunk, entry and generator frames. */
        bool dup = false;
        if (addr >= last && !pyf__addrset_add(&seen, addr, &dup)) {
            rc = PYF_ENOMEM;
            break;
        }
        if (dup) {
            rc = pyf__fail(t, PYF_ECYCLE, "frame chain loops back to frame "
                           "0x%llx (from frame 0x%llx)",
                           (unsigned long long)addr, (unsigned long long)last);
            break;
        }
        if (++visits > visit_limit) {
            rc = pyf__fail(t, PYF_EDEPTH, "frame chain has more than %llu "
                           "entries", (unsigned long long)visit_limit);
            break;
        }
        const uint8_t *f = find_in_chunks(cl, addr, fsize, &hint);
        if (f == NULL && cl->partial &&
            !(w->chunks == PYF__CHUNKS_NONE && addr == w->stop_at) &&
            !(w->extra != NULL && addr >= w->extra_addr &&
              addr - w->extra_addr < w->extra_len)) {
            /* past what was copied first: every chunk now */
            copy_chunks(t, w->datastack_chunk, top, fsize, w->live, cl);
            f = find_in_chunks(cl, addr, fsize, &hint);
        }
        if (f == NULL && w->extra != NULL && addr >= w->extra_addr &&
            addr - w->extra_addr <= w->extra_len &&
            fsize <= w->extra_len - (addr - w->extra_addr))
            f = w->extra + (addr - w->extra_addr);
        const uint8_t *again[PYF__COPIES - 1] = {NULL}; /* the frame in the other copies */
        if (f != NULL && hint < cl->n && cl->v[hint].again[0] != NULL) {
            const pyf__chunk *c = &cl->v[hint];
            if (f >= c->mem && (uint64_t)(f - c->mem) < c->addr + c->size - c->lo)
                for (int k = 0; k < PYF__COPIES - 1 && c->again[k] != NULL; k++)
                    again[k] = c->again[k] + (f - c->mem);
        }
        if (f != NULL) {
            t->stats.chunk_frames++;
        } else {
            rc = pyf__read(t, addr, direct, fsize, "interpreter frame");
            if (rc != PYF_OK)
                break;
            f = direct;
            t->stats.direct_frames++;
        }
        uint64_t prev = pyf__ld64(f + o->frame.previous);
        uint64_t exe = pyf__ld64(f + o->frame.executable) & o->tag_mask;
        uint64_t ip = pyf__ld64(f + o->frame.instr_ptr);
        int owner = (int8_t)f[o->frame.owner];
        last = addr;
        /* every copy must agree on the frame's link, code and owner: the
         * chain is one the thread had (a caller's line may be a moment
         * older than its callee's, as in any copy of a running stack) */
        bool moved = false;
        for (int k = 0; k < PYF__COPIES - 1 && again[k] != NULL && !moved; k++)
            moved = pyf__ld64(again[k] + o->frame.previous) != prev ||
                    (pyf__ld64(again[k] + o->frame.executable) & o->tag_mask) != exe ||
                    (int8_t)again[k][o->frame.owner] != owner;
        if (moved) {
            t->torn = true;
            t->torn_moved = true;
            t->torn_at = addr;
            rc = pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx changed while it was read",
                           (unsigned long long)addr);
            break;
        }

        if (owner == o->owner_cstack || owner == o->owner_interpreter) {
            from_c = true;
            if (sink->mark_entry && emitted > 0 && counted == 0) {
                rc = sink->mark_entry(sink->ctx, addr);
                if (rc != PYF_OK)
                    break;
            }
        } else if (owner == o->owner_thread || owner == o->owner_generator ||
                   owner == o->owner_frame_object) {
            if (exe != 0) {
                int soft = PYF_OK;
                const pyf__code *code = NULL;
                if (exe % 8 == 0)
                    code = pyf__code_get(t, exe, addr, &soft);
                else
                    soft = PYF_ECORRUPT;
                if (soft == PYF_ENOMEM) {
                    rc = soft;
                    break;
                }
                if (soft == PYF__ESTALE) {
                    /* the frame returned and its code object was freed
                     * while it was read: the stack changed */
                    t->torn = true;
                    t->torn_moved = true;
                    t->torn_at = addr;
                    rc = pyf__fail(t, PYF_ECORRUPT, "the code object of frame 0x%llx "
                                   "was freed while it was read (the stack changed)",
                                   (unsigned long long)addr);
                    break;
                }
                /* Code whose line table locates nothing is an
                 * interpreter-made shim (_Py_InitCleanup, pushed by
                 * specialized calls of __init__): it has no first traceable
                 * instruction, so CPython counts its frames as incomplete
                 * and never shows them. */
                bool shim = code != NULL && code->no_lines &&
                            owner != o->owner_generator;
                if (!shim && (code != NULL || soft != PYF_ENOTSUP)) {
                    if (emitted + counted >= max_depth) {
                        rc = pyf__fail(t, PYF_EDEPTH, "more than %llu Python "
                                       "frames (raise the depth limit to see "
                                       "more)", (unsigned long long)max_depth);
                        break;
                    }
                    if (emitted >= keep) {
                        /* past what the caller keeps: only counted */
                        counted++;
                        addr = prev;
                        continue;
                    }
                    int64_t instr = INT64_MIN;
                    if (code != NULL)
                        instr = pyf__frame_instr(t, f, exe, code, ip);
                    /* A running process's frame whose instruction lies
                     * outside the code object read for it was copied while
                     * that memory held another frame or code object: never
                     * shown, even when every try finds it so (the same
                     * frame address and code address reused round after
                     * round look steady) */
                    if (t->owns_pid_reader && !w->live && code != NULL &&
                        code->units != 0 && instr >= (int64_t)code->units) {
                        rc = pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx runs outside its "
                                       "code object (the stack changed while it was read)",
                                       (unsigned long long)addr);
                        break;
                    }
                    uint32_t flags = 0;
                    if (owner == o->owner_generator)
                        flags |= PYF_FRAME_GENERATOR;
                    rc = sink->frame(sink->ctx, addr, exe, code, instr, flags);
                    if (rc != PYF_OK)
                        break;
                    /* In a live process: an instruction pointer outside the
                     * frame's code, or at an instruction without a
                     * location, is the last frame's at that address (the
                     * frame is being set up, even its link may be stale;
                     * or the frame is dead and its code object's memory
                     * reused); a caller that has not run its first
                     * instruction called nothing (unless through C, e.g. a
                     * signal handler), so the frame above it is a dead one.
                     * Either way the copy was probably made while the stack
                     * changed: the thread is read again (walk_thread). */
                    if (w->live && code != NULL && owner != o->owner_generator &&
                        code->linetable != NULL &&
                        (instr >= (int64_t)code->units ||
                         (emitted > 0 && !from_c && instr <= 0) ||
                         (sink->located != NULL && !sink->located(sink->ctx)))) {
                        t->torn = true;
                        t->torn_at = addr;
                        rc = pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx is being set up "
                                       "(the stack changed while it was read)",
                                       (unsigned long long)addr);
                        break;
                    }
                    emitted++;
                    from_c = false;
                    if (addr == w->stop_at && sink->at_anchor != NULL) {
                        int took = sink->at_anchor(sink->ctx);
                        if (took < 0) {
                            rc = took;
                            break;
                        }
                        if (took > 0) {
                            stopped = true;
                            break;
                        }
                    }
                }
            }
        } else {
            rc = pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx has an invalid "
                           "owner %d", (unsigned long long)addr, owner);
            break;
        }
        addr = prev;
    }

    if (rc == PYF_OK && !stopped && w->base_frame != 0 && w->current_frame != 0 &&
        last != w->base_frame)
        rc = pyf__fail(t, PYF_ECORRUPT, "frame chain ended at 0x%llx, not at "
                       "the thread's base frame 0x%llx (the thread was "
                       "changing its stack, or the chain is corrupt)",
                       (unsigned long long)last,
                       (unsigned long long)w->base_frame);
    pyf__addrset_free(&seen);
    chunks_done(cl);
    *more = (uint32_t)counted; /* counted < max_depth <= UINT32_MAX */
    return rc;
}
