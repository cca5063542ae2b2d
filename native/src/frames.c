/*
 * frames.c - walk one thread's chain of _PyInterpreterFrame.
 *
 * The thread's data-stack chunks are copied first, one read per chunk, and
 * frames are resolved inside those copies; frames outside them (generator
 * and coroutine frames live in their objects, 3.13/3.14 entry frames on the
 * C stack, the 3.15 base frame in the thread state) are read one by one.
 * Entry frames are skipped; tagged pointers (3.14+) are masked.  A visited
 * set and limits end cycles and runaway chains with a named error.  What
 * else a walk finds (a stack changing under it) is its pyf__walk_result.
 * The frame decoder here (pyf__iframe_*) is the asyncio reader's too.
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

#define CHUNK_SPECULATIVE (16u * 1024u) /* CPython's DATA_STACK_CHUNK_SIZE */
#define CHUNK_MAX_BYTES (16u << 20)
#define CHUNKS_MAX_TOTAL (64u << 20)
#define CHUNKS_MAX_COUNT 4096u
#define CHUNK_DATA_OFFSET 24 /* offsetof(_PyStackChunk, data) */

/* The copies live in t->walk.chunks and their buffers are kept from one
 * walk to the next (up to CHUNKS_KEEP_BYTES), so a warm walk allocates nothing. */
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

/* The next chunk slot, its buffer at least len bytes; NULL when out of
 * memory. */
static pyf__chunk *chunk_slot(pyf__chunk_list *cl, uint64_t len)
{
    uint32_t had = cl->cap;
    if (!pyf__grow((void **)&cl->v, &cl->cap, cl->n + 1, sizeof *cl->v))
        return NULL;
    memset(cl->v + had, 0, (cl->cap - had) * sizeof *cl->v); /* no buffers yet */
    pyf__chunk *c = &cl->v[cl->n];
    return pyf__buf_room(&c->data, &c->cap, len) ? c : NULL;
}

/* The check was read (check_bytes, then[]): the top frame it names, or
 * none when the _PyCFrame it was read from is no longer the thread's (its
 * eval loop returned: the word is stale, or another loop's at the same
 * address; seen 0, the walk cannot start there). */
static void checked(pyf_target *t, pyf__chunk_list *cl)
{
    cl->seen = pyf__ld64(cl->check_bytes);
    if (cl->then_cframe >= 0 && pyf__ld64(cl->then[cl->then_cframe].bytes) != cl->cframe)
        cl->seen = 0;
    cl->moved |= cl->seen != cl->check_value;
    cl->check_ok = true;
    cl->check_calls = t->io.calls;
}

/* The ranges of the check, in the order they are read: check_addr, then
 * then[] (into their bytes).  Returns how many. */
static size_t check_ranges(pyf__chunk_list *cl, pyf_iovec *iov)
{
    size_t n = 0;
    iov[n++] = (pyf_iovec){cl->check_addr, cl->check_bytes, cl->check_len};
    for (uint32_t i = 0; i < cl->nthen; i++)
        iov[n++] = (pyf_iovec){cl->then[i].addr, cl->then[i].bytes, cl->then[i].len};
    return n;
}

/* The bytes of the thread state the check reads, from current_frame: up to
 * the last of the fields a walk takes from it (pyf__walk_from_tstate; on
 * 3.15 the cache's anchor and seq) when they follow it closely (*whole),
 * else current_frame alone. */
static uint32_t check_span(const pyf__offsets *o, bool *whole)
{
    const uint64_t fields[] = {o->tstate.base_frame, o->tstate.datastack_chunk,
                               o->tstate.last_profiled_frame,
                               o->tstate.last_profiled_frame_seq};
    uint64_t from = o->tstate.current_frame, end = from + 8;
    *whole = false;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        if (fields[i] == PYF__ABSENT)
            continue;
        if (fields[i] < from || fields[i] - from > PYF__CHECK_MAX - 8)
            return 8;
        if (fields[i] + 8 > end)
            end = fields[i] + 8;
    }
    *whole = true;
    return (uint32_t)(end - from);
}

bool pyf__walk_recheck(const pyf_target *t, uint64_t addr, size_t len, uint8_t *out)
{
    const pyf__chunk_list *cl = &t->walk.chunks;
    if (cl->check_calls != t->io.calls)
        return false;
    return pyf__walk_checked(t, addr, len, out);
}

bool pyf__walk_checked(const pyf_target *t, uint64_t addr, size_t len, uint8_t *out)
{
    const pyf__chunk_list *cl = &t->walk.chunks;
    if (!cl->check_ok || addr < cl->check_addr ||
        addr - cl->check_addr > cl->check_len || len > cl->check_len - (addr - cl->check_addr))
        return false;
    memcpy(out, cl->check_bytes + (addr - cl->check_addr), len);
    return true;
}

/* PYF__COPIES copies of [lo, lo+len) for chunk c, made back to back: all
 * from the prefetch (which read the range as often in its one call), else
 * read now in one reader call.  Copies of a stalled call (pyf__read_stalled:
 * the prefetch then serves nothing; this one's: cl->stalled, the walk fails
 * as torn) are of no one moment.  False when they cannot be made. */
static bool copy_live(pyf_target *t, pyf__chunk_list *cl, pyf__chunk *c, uint64_t lo,
                      uint64_t len)
{
    const uint8_t *v[PYF__COPIES];
    int got = 0;
    memset(c->again, 0, sizeof c->again);
    while (got < PYF__COPIES && (v[got] = pyf__read_view(t, lo, (size_t)len)) != NULL)
        got++;
    pyf_iovec check[PYF__THEN_MAX];
    size_t nchecks = cl->check_addr != 0 ? check_ranges(cl, check) : 0;
    if (got == PYF__COPIES) {
        c->mem = v[0];
        for (int k = 1; k < PYF__COPIES; k++)
            c->again[k - 1] = v[k];
        if (nchecks != 0) {
            /* the check after the copies in the same call, or read now */
            if (pyf__read_after(t, check, nchecks) != PYF_OK)
                return false;
            checked(t, cl);
        }
        return true;
    }
    void *dst[PYF__COPIES];
    if (!pyf__buf_room(&c->data, &c->cap, len))
        return false;
    dst[0] = c->data;
    for (int k = 1; k < PYF__COPIES; k++) {
        if (!pyf__buf_room(&c->again_data[k - 1], &c->again_cap[k - 1], len))
            return false;
        dst[k] = c->again_data[k - 1];
    }
    if (pyf__read_copies(t, lo, dst, (size_t)len, check, nchecks) != PYF_OK)
        return false;
    cl->stalled |= pyf__read_stalled(t);
    c->mem = c->data;
    for (int k = 1; k < PYF__COPIES; k++)
        c->again[k - 1] = c->again_data[k - 1];
    if (cl->check_addr != 0)
        checked(t, cl);
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
        if (!copy_live(t, cl, c, from, len))
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
            if (c != NULL && copy_live(t, cl, c, addr, used)) {
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

/* ---- one frame ------------------------------------------------------------ */

/* A frame that has not reached its first traceable instruction is still
 * setting itself up (3.11, 3.12: _PyFrame_IsIncomplete; a frame pushed
 * has not run even its first instruction, index -1), and CPython shows no
 * such frame. */
static inline bool iframe_incomplete(const pyf__offsets *o, const pyf__iframe *fr,
                                     const pyf__code *code)
{
    return code != NULL && o->code.firsttraceable != PYF__ABSENT &&
           fr->owner != o->owner_generator &&
           pyf__code_index(fr->ip, fr->exe + o->code.co_code_adaptive) <
               (int64_t)code->firsttraceable;
}

/* pyf__iframe_code, inlined into the walk (it runs per frame) */
static inline int iframe_code(pyf_target *t, const pyf__iframe *fr, const pyf__code **code,
                              bool *shown)
{
    const pyf__offsets *o = &t->off;
    *code = NULL;
    *shown = false;
    if (fr->exe == 0)
        return PYF_OK;
    int soft = PYF_ECORRUPT;
    if (fr->exe % 8 == 0)
        *code = pyf__code_get(t, fr->exe, fr->addr, &soft);
    if (soft == PYF_ENOMEM)
        return soft;
    if (soft == PYF__ESTALE) /* the frame returned and its code object was freed */
        return pyf__fail(t, PYF_ECORRUPT, "the code object of frame 0x%llx was freed "
                         "while it was read (the stack changed)",
                         (unsigned long long)fr->addr);
    /* Code whose line table locates nothing is an interpreter-made shim
     * (_Py_InitCleanup, pushed by specialized calls of __init__): it has no
     * first traceable instruction, so CPython counts its frames as
     * incomplete and never shows them.  An executable that is not a code
     * object is not shown either. */
    bool shim = *code != NULL && (*code)->no_lines && fr->owner != o->owner_generator;
    *shown = !shim && !iframe_incomplete(o, fr, *code) && (*code != NULL || soft != PYF_ENOTSUP);
    return PYF_OK;
}

int pyf__iframe_code(pyf_target *t, const pyf__iframe *fr, const pyf__code **code,
                     bool *shown)
{
    return iframe_code(t, fr, code, shown);
}

/* ---- the walk ------------------------------------------------------------- */

typedef struct walker {
    pyf_target *t;
    const pyf__thread_walk *w;
    const pyf__sink *sink;
    pyf__walk_result *res;
    pyf__chunk_list *cl;
    uint32_t hint;           /* the chunk of the last frame found */
    size_t fsize;
    uint64_t top;            /* the top frame, aligned */
    uint64_t max_depth, keep, emitted, counted;
    bool from_c;             /* an entry frame since the last frame delivered */
    /* 3.11: the _PyCFrame of the run being walked (0: unknown), the entry
     * of the frame whose is_entry flag ends the run */
    uint64_t cframe;
    bool cut_entry;          /* the first entry past keep_frames was handed over */
    bool stopped;            /* the rest of the stack came from at_anchor */
    uint8_t *direct;         /* room for a frame read on its own */
    /* 3.11, 3.12: the top frame, when its stack pointer is saved: its
     * caller must have its own saved too (sp_saved), else 0 */
    uint64_t top_idle;
    bool top_new;            /* ... and it has not run its first instruction */
    bool top_gen;            /* ... and it is a generator's frame */
} walker;

/* The walk's top frame does not run and its caller is not waiting for it
 * (sp_saved): the thread is read again.  Returns PYF_ECORRUPT. */
static int torn(walker *k, uint64_t addr, bool moved);
static int idle_top(walker *k)
{
    pyf__fail(k->t, PYF_ECORRUPT, "the top frame 0x%llx does not run and its caller does "
              "not wait for it (%s)", (unsigned long long)k->top_idle,
              k->w->frozen ? "the process is stopped between the writes of a call from C "
                             "or a return to it, where that frame may be one that returned"
                           : "its call returned, or it is being set up: the stack changed "
                             "while it was read");
    /* never shown as steady: two chains taking each other's addresses give
     * every try the same idle top at the same address (aba_cframes.py) */
    return torn(k, k->top_idle, true);
}

/* 3.11, 3.12: whether the eval loop whose _PyCFrame is at cframe was made
 * from the frame link: the _PyCFrame before it (*prev; 0 where the first
 * loop has none) names link as its current frame (that loop waits in the
 * C call that made this one, and the loop wrote link as the caller of its
 * first frame or entry frame). */
static bool loop_made_from(pyf_target *t, uint64_t cframe, uint64_t link, uint64_t *prev)
{
    const pyf__offsets *o = &t->off;
    uint8_t cf[64];
    *prev = 0;
    if (cframe == 0 || o->cframe.size > sizeof cf ||
        pyf__read_quiet(t, cframe, cf, (size_t)o->cframe.size) != PYF_OK)
        return false;
    *prev = pyf__ld64(cf + o->cframe.previous);
    if (*prev == 0) /* the first loop (CPython's has the thread's root _PyCFrame) */
        return link == 0;
    return *prev % 8 == 0 && pyf__read_quiet(t, *prev, cf, (size_t)o->cframe.size) == PYF_OK &&
           pyf__ld64(cf + o->cframe.current_frame) == link;
}

/* 3.11, 3.12, a thread frozen throughout the walk (walk_frozen): whether
 * its idle top frame is one a call from C is setting up: a frame that has
 * not run its first instruction, or a generator's it resumes (its state
 * executing), whose caller, link (3.11: the top's previous frame; 3.12:
 * the previous frame of the entry frame under it), is the current frame
 * of the eval loop that made the call (the _PyCFrame before the one the
 * thread state names).  An eval loop being made names its _PyCFrame in
 * the thread state before it writes its current frame: until then that
 * names what its C stack held, a frame that returned or yielded, or one
 * with a caller of its own. */
static bool set_up_from_c(walker *k, uint64_t link)
{
    pyf_target *t = k->t;
    const pyf__offsets *o = &t->off;
    if (!k->w->frozen)
        return false;
    if (!k->top_new) {
        uint8_t state;
        if (!k->top_gen || o->gen.gi_iframe == PYF__ABSENT ||
            o->gen.gi_frame_state == PYF__ABSENT || k->top_idle < o->gen.gi_iframe ||
            pyf__read_quiet(t, k->top_idle - o->gen.gi_iframe + o->gen.gi_frame_state,
                            &state, 1) != PYF_OK ||
            o->gen_executing == INT32_MIN || (int8_t)state != o->gen_executing)
            return false;
    }
    uint64_t prev;
    return loop_made_from(t, k->w->cframe, link, &prev);
}

/* The stack changed under the walk at frame addr (moved: in copies that
 * differ).  Returns PYF_ECORRUPT (detail already in t->io.fail). */
static int torn(walker *k, uint64_t addr, bool moved)
{
    k->res->torn = true;
    k->res->torn_moved |= moved;
    k->res->torn_at = addr;
    return PYF_ECORRUPT;
}

/* A range read after the check_addr's (pyf__chunk_list). */
static void add_then(pyf__chunk_list *cl, uint64_t addr, uint32_t len)
{
    cl->then[cl->nthen].addr = addr;
    cl->then[cl->nthen].len = len;
    cl->nthen++;
}

static bool in_extra(const pyf__thread_walk *w, uint64_t addr)
{
    return w->extra != NULL && addr >= w->extra_addr && addr - w->extra_addr < w->extra_len;
}

/* Every copy must agree on the frame's link, code and owner: the chain is
 * one the thread had (a caller's line may be a moment older than its
 * callee's, as in any copy of a running stack). */
static bool copies_agree(const pyf__offsets *o, const pyf__iframe *fr,
                         const uint8_t *const again[PYF__COPIES - 1])
{
    for (int i = 0; i < PYF__COPIES - 1 && again[i] != NULL; i++) {
        pyf__iframe other;
        pyf__iframe_decode(o, again[i], fr->addr, &other);
        if (other.prev != fr->prev || other.exe != fr->exe || other.owner != fr->owner)
            return false;
    }
    return true;
}

/* A frame outside the copies (an entry frame on the C stack, a generator's)
 * read on its own into k->direct.  A running process's is read with the
 * check after it, in the same reader call: the thread's top frame must be
 * the one the walk started from (cl->moved says when not; 3.11/3.12: and
 * the thread state must name the same _PyCFrame), or the frame may be a
 * run's that returned after the copies were made -- its memory then
 * another call's, its caller another frame (a chain shown over a caller
 * it never had), a generator's that yielded (its caller NULL: a chain cut
 * short), or garbage.  Served from the prefetch, all of them were read in
 * its one call at the snapshot's start, the check there naming the same
 * top as the walk's. */
static int read_direct(walker *k, uint64_t addr)
{
    pyf_target *t = k->t;
    pyf__chunk_list *cl = k->cl;
    if (!k->w->live || cl->check_addr == 0)
        return pyf__read(t, addr, k->direct, k->fsize, "interpreter frame");
    pyf_iovec iov[1 + PYF__THEN_MAX];
    iov[0] = (pyf_iovec){addr, k->direct, k->fsize};
    size_t n = 1 + check_ranges(cl, iov + 1);
    int rc = pyf__read_after(t, iov, n);
    if (rc != PYF_OK)
        return pyf__read_failed(&t->io.fail, &t->io.reader, rc, "interpreter frame", addr,
                                k->fsize);
    checked(t, cl);
    return PYF_OK;
}

/* The copy of the frame at addr: in a chunk copy (every chunk is copied
 * when the first ones miss it), in the thread state's copy, else read on
 * its own.  again[] is the frame in the chunk's other copies (a running
 * process's newest chunk), NULL where none. */
static int find_frame(walker *k, uint64_t addr, const uint8_t **out,
                      const uint8_t *again[PYF__COPIES - 1])
{
    pyf_target *t = k->t;
    const pyf__thread_walk *w = k->w;
    pyf__chunk_list *cl = k->cl;
    const uint8_t *f = find_in_chunks(cl, addr, k->fsize, &k->hint);
    if (f == NULL && cl->partial && !(w->chunks == PYF__CHUNKS_NONE && addr == w->stop_at) &&
        !in_extra(w, addr)) {
        /* past what was copied first: every chunk now */
        copy_chunks(t, w->datastack_chunk, k->top, k->fsize, w->live, cl);
        f = find_in_chunks(cl, addr, k->fsize, &k->hint);
    }
    if (f == NULL && w->extra != NULL && addr >= w->extra_addr &&
        addr - w->extra_addr <= w->extra_len &&
        k->fsize <= w->extra_len - (addr - w->extra_addr))
        f = w->extra + (addr - w->extra_addr);
    for (int i = 0; i < PYF__COPIES - 1; i++)
        again[i] = NULL;
    if (f != NULL && k->hint < cl->n && cl->v[k->hint].again[0] != NULL) {
        const pyf__chunk *c = &cl->v[k->hint];
        if (f >= c->mem && (uint64_t)(f - c->mem) < c->addr + c->size - c->lo)
            for (int i = 0; i < PYF__COPIES - 1 && c->again[i] != NULL; i++)
                again[i] = c->again[i] + (f - c->mem);
    }
    if (f != NULL) {
        t->io.stats.chunk_frames++;
    } else {
        int rc = read_direct(k, addr);
        if (rc != PYF_OK)
            return rc;
        f = k->direct;
        t->io.stats.direct_frames++;
    }
    *out = f;
    return PYF_OK;
}

/* Where nothing else marks a frame that returned (3.11, 3.12): whether a
 * frame of the thread's own (or a generator's) has its stack pointer
 * saved, not at -1.  An eval loop keeps the frame it runs at -1
 * (_PyFrame_GetStackPointer as it resumes it) and saves it at the frame's
 * Python calls (DISPATCH_INLINED, before the callee becomes the current
 * frame), its return (where it stays once the frame returned:
 * _PyFrame_Clear needs it), its yield and trace or monitoring calls; a
 * frame being set up has co_nlocalsplus.  False for other frames and
 * versions (3.13+ mark a cleared frame instead: cleared). */
static bool sp_saved(const pyf__offsets *o, const pyf__iframe *fr)
{
    if (o->cleared_kind != PYF__CLEARED_UNMARKED || o->frame.stacktop == PYF__ABSENT ||
        (fr->owner != o->owner_thread && fr->owner != o->owner_generator))
        return false;
    return (int32_t)pyf__ld32(fr->copy + o->frame.stacktop) != -1;
}

/* Whether a frame of the thread's own was cleared, its locals released
 * when its call returned: its stack pointer back at localsplus (3.14+'s
 * stackpointer; 3.13's stacktop 0), where a frame on the stack keeps it
 * past its co_nlocalsplus locals (or -1 while it runs).  A copy of a
 * running process showing one holds memory the thread had left.  3.11
 * and 3.12 leave a cleared frame's stacktop where its return saved it:
 * nothing says so here (their top frame is checked instead: sp_saved). */
static bool cleared(const pyf__offsets *o, const pyf__iframe *fr, const pyf__code *code)
{
    if (code == NULL || code->nlocalsplus == 0 ||
        (fr->owner != o->owner_thread && fr->owner != o->owner_generator))
        return false;
    uint64_t sp;
    if (o->cleared_kind == PYF__CLEARED_UNMARKED ||
        pyf__frame_sp(o, fr->copy, fr->addr, &sp) != PYF__STACK_SAVED)
        return false;
    uint64_t base = fr->addr + o->frame.localsplus;
    return sp >= base && sp - base < 8 * (uint64_t)code->nlocalsplus;
}

/* The frame just delivered is the anchor: the rest of the stack from the
 * cache, or walk on. */
static int anchor(walker *k)
{
    pyf__rest rest = {0};
    int took = k->w->at_anchor(k->w->anchor_ctx, (uint32_t)k->emitted, &rest);
    if (took <= 0)
        return took;
    int rc = k->sink->keys(k->sink->ctx, rest.keys, rest.n, rest.entry_from_c);
    if (rc == PYF_OK)
        k->stopped = true;
    return rc;
}

/* A frame running Python code: delivered (or only counted past
 * keep_frames), then checked against a running process's changes. */
static int python_frame(walker *k, const pyf__iframe *fr)
{
    pyf_target *t = k->t;
    const pyf__offsets *o = &t->off;
    const pyf__thread_walk *w = k->w;
    const pyf__code *code;
    bool shown;
    int rc = iframe_code(t, fr, &code, &shown);
    if (rc == PYF_ECORRUPT)
        return torn(k, fr->addr, true);
    if (rc != PYF_OK)
        return rc;
    /* A frame setting itself up calls nothing from Python: one under a
     * frame shown, not entered from C, is memory the thread had left (a
     * call being made where a returned caller was): read again */
    if (!shown && w->live && !w->steady && k->emitted > 0 && !k->from_c &&
        iframe_incomplete(o, fr, code)) {
        pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx, a caller, is being set up (the stack "
                  "changed while it was read)", (unsigned long long)fr->addr);
        return torn(k, fr->addr, false);
    }
    if (!shown)
        return rc;
    if (k->emitted + k->counted >= k->max_depth)
        return pyf__fail(t, PYF_EDEPTH, "more than %llu Python frames (raise the depth "
                         "limit to see more)", (unsigned long long)k->max_depth);
    if (k->emitted >= k->keep) {
        k->counted++; /* past what the caller keeps: only counted */
        return PYF_OK;
    }
    int64_t instr = INT64_MIN;
    if (code != NULL)
        instr = pyf__iframe_instr(t, fr, code, &k->res->tlbc_failures);
    /* A running process's frame whose instruction lies outside the code
     * object read for it was copied while that memory held another frame
     * or code object: never shown, even when every try finds it so (the
     * same frame address and code address reused round after round look
     * steady) */
    if (pyf__target_live(t) && (!w->live || w->steady) && code != NULL && code->units != 0 &&
        instr >= (int64_t)code->units)
        return pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx runs outside its code object "
                         "(the stack changed while it was read)",
                         (unsigned long long)fr->addr);
    if (w->live && cleared(o, fr, code)) {
        pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx was cleared (its call returned while the "
                  "stack was read)", (unsigned long long)fr->addr);
        return torn(k, fr->addr, true);
    }
    uint32_t flags = fr->owner == o->owner_generator ? pyf__owned_flags(code) : 0;
    rc = k->sink->frame(k->sink->ctx, fr->addr, fr->exe, code, instr, flags);
    if (rc != PYF_OK)
        return rc;
    if (k->res->first == 0)
        k->res->first = fr->addr;
    /* In a live process: an instruction pointer outside the frame's code,
     * or at an instruction without a location, is the last frame's at that
     * address (the frame is being set up, even its link may be stale; or
     * the frame is dead and its code object's memory reused); a caller
     * that has not run its first instruction called nothing (unless
     * through C, e.g. a signal handler), so the frame above it is a dead
     * one.  Either way the copy was probably made while the stack changed:
     * the thread is read again (walk_thread). */
    if (w->live && !w->steady && code != NULL && fr->owner != o->owner_generator &&
        code->linetable != NULL &&
        (instr >= (int64_t)code->units || (k->emitted > 0 && !k->from_c && instr <= 0) ||
         (k->sink->located != NULL && !k->sink->located(k->sink->ctx)))) {
        pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx is being set up (the stack changed "
                  "while it was read)", (unsigned long long)fr->addr);
        return torn(k, fr->addr, false);
    }
    k->emitted++;
    k->from_c = false;
    if (fr->addr == w->stop_at && w->at_anchor != NULL)
        return anchor(k);
    return PYF_OK;
}

/* The frames since the last one delivered were entered from C, by an
 * eval call whose entry (on the C stack) is at entry (0: unknown). */
static int entered_from_c(walker *k, uint64_t entry)
{
    k->from_c = true;
    if (k->sink->mark_entry && k->emitted > 0 && k->counted == 0)
        return k->sink->mark_entry(k->sink->ctx, entry);
    /* the first entry among the frames counted past keep_frames ends the
     * run the last frame kept belongs to (unless that run ended at the
     * cut: its entry was marked above) */
    if (k->sink->cut_entry && k->counted > 0 && !k->cut_entry) {
        k->cut_entry = true;
        return k->sink->cut_entry(k->sink->ctx, entry);
    }
    return PYF_OK;
}

/* 3.11: the frame fr, just walked, was entered from C (its is_entry
 * flag).  Its run's entry is the _PyCFrame the walk is at; the next run's
 * is the one before it, which must name fr's caller as its current frame
 * (that eval loop called C there), else the entries below are unknown. */
static int flagged_entry(walker *k, const pyf__iframe *fr)
{
    uint64_t entry = k->cframe, prev;
    k->cframe = loop_made_from(k->t, entry, fr->prev, &prev) ? prev : 0;
    return entered_from_c(k, entry);
}

/* 3.12, a running process: the entry frame fr, just reached, belongs to
 * the eval loop whose _PyCFrame the walk is at (k->cframe); the loop
 * wrote fr's caller from the _PyCFrame before its own, whose current
 * frame it must still be (that loop waits in the C call that made this
 * one).  An entry frame read after the copies, its C stack memory since
 * taken by another loop's, names another caller (a leaf shown over the
 * caller of a chain it was never on, or alone).  False when they differ
 * or cannot be read; true when the _PyCFrame is not known. */
static bool entry_links(walker *k, const pyf__iframe *fr)
{
    if (k->cframe == 0)
        return true;
    uint64_t entry = k->cframe;
    return loop_made_from(k->t, entry, fr->prev, &k->cframe);
}

/* One frame of the chain, by its owner. */
static int visit_frame(walker *k, const pyf__iframe *fr)
{
    const pyf__offsets *o = &k->t->off;
    if (pyf__iframe_entry(o, fr)) {
        if (k->w->live && o->top_kind == PYF__TOP_CFRAME && !entry_links(k, fr)) {
            pyf__fail(k->t, PYF_ECORRUPT, "entry frame 0x%llx names a caller its eval "
                      "loop's _PyCFrame does not (the stack changed while it was read)",
                      (unsigned long long)fr->addr);
            return torn(k, fr->addr, true);
        }
        return entered_from_c(k, fr->addr);
    }
    if (pyf__iframe_python(o, fr)) {
        int rc = python_frame(k, fr);
        if (rc == PYF_OK && o->entry_kind == PYF__ENTRY_FLAG && fr->copy[o->frame.is_entry])
            rc = flagged_entry(k, fr);
        return rc;
    }
    return pyf__fail(k->t, PYF_ECORRUPT, "frame 0x%llx has an invalid owner %d",
                     (unsigned long long)fr->addr, fr->owner);
}

int pyf__walk_frames(pyf_target *t, const pyf__thread_walk *w, const pyf__sink *sink,
                     pyf__walk_result *res)
{
    const pyf__offsets *o = &t->off;
    if (o->frame_model == PYF__FRAMES_HEAP)
        return pyf__walk_heap_frames(t, w, sink, res);
    memset(res, 0, sizeof *res);
    uint8_t direct[4096];
    walker *k = &(walker){.t = t, .w = w, .sink = sink, .res = res, .cl = &t->walk.chunks,
                          .fsize = (size_t)o->frame.size, .direct = direct,
                          .cframe = w->cframe};
    if (k->fsize > sizeof direct)
        return pyf__fail(t, PYF_EOFFSETS, "frame size %zu is too large", k->fsize);

    pyf__chunk_list *cl = k->cl;
    /* the frames reached by a step that does not go down: a few */
    pyf__addrmap_slot seen_slots[16];
    pyf__addrset seen;
    PYF__ADDRSET_LOCAL(seen, seen_slots);
    k->top = w->current_frame & ~(uint64_t)7;
    cl->n = 0;
    cl->partial = true;
    cl->nthen = 0;
    cl->then_cframe = -1;
    if (o->top_kind == PYF__TOP_TSTATE) {
        cl->check_addr = w->recheck_top && w->tstate_addr != 0
                             ? w->tstate_addr + o->tstate.current_frame : 0;
        cl->check_len = check_span(o, &cl->check_whole);
    } else {
        /* the top frame the thread's _PyCFrame names (3.11, 3.12): a new
         * call in that eval loop changes it; and that _PyCFrame must
         * still be the thread's (its loop may have returned, and another
         * run at its address) */
        cl->check_addr = w->recheck_top && w->cframe != 0 && w->tstate_addr != 0
                             ? w->cframe + o->cframe.current_frame : 0;
        cl->check_len = 8;
        cl->check_whole = false;
        if (cl->check_addr != 0) {
            cl->cframe = w->cframe;
            cl->then_cframe = (int)cl->nthen;
            add_then(cl, w->tstate_addr + o->tstate.cframe, 8);
        }
    }
    cl->check_value = cl->seen = w->current_frame;
    cl->moved = cl->stalled = false;
    cl->check_ok = false;
    if (w->chunks == PYF__CHUNKS_ALL ||
        (w->chunks == PYF__CHUNKS_FROM_STOP &&
         !copy_top(t, w->datastack_chunk, k->top, k->fsize, w->stop_at, w->live, cl)))
        copy_chunks(t, w->datastack_chunk, k->top, k->fsize, w->live, cl);
    uint64_t addr = w->current_frame;
    if (cl->moved && cl->seen != 0 && cl->seen % 8 == 0 &&
        find_in_chunks(cl, cl->seen, k->fsize, &k->hint) != NULL) {
        /* the top frame right after the copies, which hold it: the walk
         * starts there (where nothing marks a frame that returned, the
         * copies may hold one at its address, the new frame made there
         * after them: it must run, or its caller wait, sp_saved) */
        addr = k->top = cl->check_value = cl->seen;
        cl->moved = false;
    }
    res->top = addr;

    k->max_depth = w->max_depth;
    k->keep = w->keep_frames != 0 ? w->keep_frames : UINT64_MAX;
    uint64_t visit_limit = k->max_depth * 2 + 64, visits = 0;
    uint64_t last = 0;
    int rc = PYF_OK;

    while (addr != 0 && !k->stopped) {
        if (addr % 8 != 0) {
            rc = pyf__fail(t, PYF_ECORRUPT, "frame pointer 0x%llx is not aligned (after "
                           "frame 0x%llx)", (unsigned long long)addr,
                           (unsigned long long)last);
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
            rc = pyf__fail(t, PYF_ECYCLE, "frame chain loops back to frame 0x%llx (from "
                           "frame 0x%llx)", (unsigned long long)addr,
                           (unsigned long long)last);
            break;
        }
        if (++visits > visit_limit) {
            rc = pyf__fail(t, PYF_EDEPTH, "frame chain has more than %llu entries",
                           (unsigned long long)visit_limit);
            break;
        }
        const uint8_t *f, *again[PYF__COPIES - 1];
        if ((rc = find_frame(k, addr, &f, again)) != PYF_OK)
            break;
        if (cl->moved) { /* the top moved and the copies lack it, or find_frame copied again */
            pyf__fail(t, PYF_ECORRUPT, "the top frame moved from 0x%llx while the stack "
                      "was copied", (unsigned long long)cl->check_value);
            rc = torn(k, addr, true);
            break;
        }
        /* a walk of a process stopped throughout (walk_frozen) reads no
         * moment but one: a stalled call copied it as it is */
        if (cl->stalled && !k->w->frozen) {
            pyf__fail(t, PYF_ECORRUPT, "the read that copied the stack stalled: its copies "
                      "may hold memory of two moments");
            rc = torn(k, addr, true);
            break;
        }
        pyf__iframe fr;
        pyf__iframe_decode(o, f, addr, &fr);
        last = addr;
        if (!copies_agree(o, &fr, again)) {
            pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx changed while it was read",
                      (unsigned long long)addr);
            rc = torn(k, addr, true);
            break;
        }
        /* 3.11, 3.12: a top frame whose stack pointer is saved does not
         * run: it returned, is being set up, or is being returned to (its
         * callee just returned) or under a trace call.  Shown only over a
         * caller that called it from Python and has not run since (its own
         * stack pointer saved at that call): then it is, or was a moment
         * ago, that caller's callee.  A frame that returned over a caller
         * that runs again, or over another call made in its caller's place,
         * is memory the thread had left: read again. */
        if (visits == 1 && w->live && sp_saved(o, &fr)) {
            bool from_c = o->entry_kind == PYF__ENTRY_FLAG && fr.copy[o->frame.is_entry];
            k->top_idle = addr;
            k->top_new = pyf__code_index(fr.ip, fr.exe + o->code.co_code_adaptive) == -1;
            k->top_gen = fr.owner == o->owner_generator;
            if (from_c || fr.prev == 0) {
                if (!set_up_from_c(k, fr.prev)) {
                    rc = idle_top(k);
                    break;
                }
                k->top_idle = 0; /* its caller waits in C */
            }
        } else if (visits == 2 && k->top_idle != 0) {
            if ((!pyf__iframe_python(o, &fr) || !sp_saved(o, &fr)) &&
                !(pyf__iframe_entry(o, &fr) && set_up_from_c(k, fr.prev))) {
                rc = idle_top(k);
                break;
            }
            k->top_idle = 0;
        }
        if (visits == 1 && w->live && o->top_kind == PYF__TOP_CFRAME &&
            pyf__iframe_entry(o, &fr)) {
            /* 3.12: an eval loop names its entry frame, on the C stack, as
             * its current frame only in passing (its run returning), and
             * a loop being made has its _PyCFrame in the thread state a
             * moment before its current frame is written: the word there
             * is the last loop's at that address, its entry frame, whose
             * memory the new loop is writing (its caller may be the last
             * loop's).  Never shown, even when every try finds it so (a
             * thread stopped between those two writes). */
            pyf__fail(t, PYF_ECORRUPT, "the top frame 0x%llx is an entry frame (the thread "
                      "was entering or leaving a call from C)", (unsigned long long)addr);
            rc = torn(k, addr, false);
            break;
        }
        if ((rc = visit_frame(k, &fr)) != PYF_OK)
            break;
        addr = fr.prev;
    }

    if (rc == PYF_OK && !k->stopped && w->base_frame != 0 && w->current_frame != 0 &&
        last != w->base_frame)
        rc = pyf__fail(t, PYF_ECORRUPT, "frame chain ended at 0x%llx, not at the thread's "
                       "base frame 0x%llx (the thread was changing its stack, or the chain "
                       "is corrupt)", (unsigned long long)last,
                       (unsigned long long)w->base_frame);
    pyf__addrset_free(&seen);
    chunks_done(cl);
    res->more = (uint32_t)k->counted; /* counted < max_depth <= UINT32_MAX */
    return rc;
}
