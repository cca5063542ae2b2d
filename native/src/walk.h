/*
 * walk.h - walking a thread's frames (frames.c) and the interpreters'
 * threads (threads.c).
 */
#ifndef PYFRAMES_WALK_H
#define PYFRAMES_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "code.h"
#include "offsets.h"
#include "reads.h"
#include "table.h"

/* ==== copies of a thread's data-stack chunks (frames.c) ================== */
typedef struct pyf__chunk {
    uint64_t addr, size;     /* the chunk in the target */
    uint64_t lo;             /* the first address held (addr, or more) */
    uint64_t cap;            /* bytes of data */
    uint8_t *data;           /* our copy, when mem is not a prefetch view */
    const uint8_t *mem;      /* the bytes from lo: data or a prefetched range */
    /* NULL, or more copies of the same bytes made right after mem: a
     * running process's newest chunk (PYF__COPIES in all) */
    const uint8_t *again[2];
    uint8_t *again_data[2];  /* our buffers for again, when not views */
    uint64_t again_cap[2];
} pyf__chunk;

/* Copies of a running process's newest data-stack chunk, made back to back:
 * its frames must agree in all of them.  A copy made while the thread
 * returned and called again shows the new callee over the old caller; two
 * copies can still agree when the thread switched back and forth in step
 * with them (a tight loop alternating two call chains), three very rarely.
 * Copies made while the thread did not run agree whatever it had done
 * since its state was read: a frame that returned meanwhile is known by its
 * stack pointer, which its return left at localsplus (frames.c, cleared). */
#define PYF__COPIES 3

#define PYF__CHECK_MAX 256

typedef struct pyf__chunk_list {
    pyf__chunk *v;           /* [n] in use; buffers of [n, cap) kept for reuse */
    uint32_t n, cap;
    bool partial;            /* not every chunk copied: copy them on a miss */
    /* A running process's top frame is read again right after the copies
     * of its newest chunk (check_addr: the thread state's current_frame;
     * 0: no check), in the same reader call: the walk starts from the top
     * frame its thread state named before the copies, and a frame that
     * was no longer on the stack while they were made (its address being
     * set up for a new call, which its stack pointer does not tell) would
     * be shown over the new caller.  moved: it named another frame then
     * (seen); a walk that has shown nothing yet starts from that one
     * instead when the copies hold it. */
    uint64_t check_addr, check_value;
    uint64_t seen;           /* what the check read last */
    bool moved;
    bool stalled;            /* copies made in a stalled call (pyf__read_stalled) */
    /* The check's bytes: the thread state from current_frame to the last
     * field a walk takes from it (check_len of them, at most
     * PYF__CHECK_MAX), as read at reader call check_calls.  The cache's
     * re-read of its anchor after the walk takes them while no reader call
     * came since (pyf__walk_recheck); a walk made again starts from them
     * (pyf__walk_checked: read after the last try's copies, as a fresh read
     * of the thread state would be). */
    uint8_t check_bytes[PYF__CHECK_MAX];
    uint32_t check_len;
    bool check_whole;        /* every field the walk takes is among them */
    bool check_ok;
    uint64_t check_calls;
    /* Read after check_addr in the same reader call, where the version
     * needs them (nthen of them, each at most PYF__CHECK_MAX bytes): the
     * thread state's cframe (3.11, 3.12: then_cframe).  check_addr is then
     * a field of the _PyCFrame the walk's top came from, on the C stack of
     * an eval loop; when that loop has returned, the word there is stale
     * or another call's, and the check says nothing unless the thread
     * state still names that _PyCFrame. */
    struct {
        uint64_t addr;
        uint32_t len;
        uint8_t bytes[PYF__CHECK_MAX];
    } then[1];
    uint32_t nthen;
    int then_cframe;         /* its index in then[], -1: not read */
    uint64_t cframe;         /* the _PyCFrame then_cframe must name */
} pyf__chunk_list;
void pyf__chunks_free(pyf__chunk_list *cl);

/* ==== what the walks keep from one snapshot to the next ================== */
/* pyf_target.walk: the frame table, the buffers the walks reuse, and the
 * last snapshot's frame keys (snapshot.c) that the next one guesses from. */
typedef struct pyf__walk_state {
    pyf__table *table;       /* NULL until the next snapshot makes one */
    uint64_t table_ids;      /* the last table id given */
    pyf__chunk_list chunks;  /* the walk's chunk copies, buffers reused */
    pyf__prefetch prefetch;
    uint64_t epoch;          /* incremented per snapshot */
    /* the frame keys of the last snapshot (of table prev_table, epoch
     * prev_epoch) and where each thread state's frames were in them: the
     * first guess for a frame is the key at the same depth of the same
     * thread last time */
    uint32_t *prev_keys;
    uint32_t prev_n, prev_cap;
    uint64_t prev_table;
    pyf__prev_thread *prev_threads;
    uint32_t prev_nthreads, prev_cap_threads;
    uint64_t prev_epoch;
    void *spare_snap;        /* a freed snapshot's arrays, for the next one */
    /* the heap-frame walk's (frames_heap.c, 3.8-3.10): one thread's frames
     * as first read, where each thread's frames were, the frame type */
    struct pyf__hwalk *heap;
    /* the frames under the top a running process's heap walk reads at its
     * moment (frames_heap.c's HEAD): 0 for HEAD; the tests' to set */
    uint32_t heap_head;
} pyf__walk_state;
void pyf__walk_heap_free(pyf__walk_state *ws);
/* [addr, addr+len) of the thread state as the walk's check read it right
 * after the copies, when that was the last reader call: true and the bytes
 * in out. */
bool pyf__walk_recheck(const pyf_target *t, uint64_t addr, size_t len, uint8_t *out);
/* The same whatever was read since, as long as the last walk made its
 * check. */
bool pyf__walk_checked(const pyf_target *t, uint64_t addr, size_t len, uint8_t *out);

/* ==== walking (frames.c, threads.c) ===================================== */

/* The pyf_frame of a key of the table (which must hold it). */
static inline pyf_frame pyf__table_frame(const pyf__table *tb, uint32_t key)
{
    const pyf_record *r = &tb->records[tb->keys[key].record];
    return (pyf_frame){tb->keys[key].frame_addr, r->code_addr, r->info};
}

/* Where the walk delivers frames (implemented by snapshot.c). */
typedef struct pyf__sink {
    void *ctx;
    /* code may be NULL (unreadable code object: show "???"); instr is the
     * code-unit index of the instruction; flags the frame's own
     * (pyf__owned_flags for a generator's frame) */
    int (*frame)(void *ctx, uint64_t frame_addr, uint64_t code_addr,
                 const pyf__code *code, int64_t instr, uint32_t flags);
    /* the most recently delivered frame was entered from C: entry_addr is
     * the entry frame (on the C stack) below it, 0 when unknown */
    int (*mark_entry)(void *ctx, uint64_t entry_addr);
    /* the rest of the stack by its frame table keys (the 3.15 frame
     * cache's), after the frame just delivered, which was entered from C
     * when entry_from_c */
    int (*keys)(void *ctx, const uint32_t *keys, uint32_t n, bool entry_from_c);
    /* forget the current thread's frames (a walk to be made again) */
    void (*rollback)(void *ctx);
    /* whether the frame just delivered has a source location */
    bool (*located)(void *ctx);
    /* a thread starts: its header is filled in by the walker */
    int (*thread)(void *ctx, const pyf_thread *th);
    /* the current thread ended with rc (why in f when rc != 0); more
     * frames were counted past keep_frames */
    int (*thread_end)(void *ctx, int rc, const pyf_failure *f, uint32_t more);
    int (*interp)(void *ctx, uint64_t addr, int64_t id);
    /* reverse the order of the frames from index first to the last */
    void (*reverse)(void *ctx, uint32_t first);
    /* past keep_frames (may be NULL): the first entry frame the walk steps
     * over among the frames it counts, which the eval call running the
     * last frame delivered pushed when that frame's run goes on past the
     * cut (that frame is not entered from C: mark_entry is not called) */
    int (*cut_entry)(void *ctx, uint64_t entry_addr);
} pyf__sink;

/* What the frame cache hands a walk that reached its anchor: the keys of
 * the rest of the stack, below the anchor frame. */
typedef struct pyf__rest {
    const uint32_t *keys;
    uint32_t n;
    bool entry_from_c;       /* the anchor frame itself was entered from C */
} pyf__rest;

typedef struct pyf__thread_walk {
    uint64_t tstate_addr;
    uint64_t current_frame;
    /* 3.11/3.12: the _PyCFrame current_frame was read from (0: none, or
     * the version keeps current_frame in the thread state) */
    uint64_t cframe;
    uint64_t base_frame;      /* 0 when the version has none */
    uint64_t datastack_chunk;
    uint32_t max_depth;
    uint32_t keep_frames;     /* 0, or frames delivered before counting */
    /* an already-read copy of target memory that may hold frames (the
     * thread state: 3.15 embeds the base frame right after it) */
    const uint8_t *extra;
    uint64_t extra_addr, extra_len;
    /* the frame cache (cache.c): when the frame stop_at has been delivered
     * (after `walked` frames in all), at_anchor says whether the rest of
     * the stack comes from the cache (1, *rest filled: the walk hands it
     * to the sink's keys and ends), or not (0: walk on), or fails (a
     * PYF_E* code).  chunks says what is copied first (the rest is copied
     * when a frame is not found). */
    uint64_t stop_at;
    int (*at_anchor)(void *ctx, uint32_t walked, pyf__rest *rest);
    void *anchor_ctx;
    enum { PYF__CHUNKS_ALL, PYF__CHUNKS_NONE, PYF__CHUNKS_FROM_STOP } chunks;
    bool live;               /* the process runs while it is read */
    /* current_frame is the thread state's as read before the copies (not
     * an anchor the cache wrote and checked): a live walk reads it again
     * right after them (pyf__chunk_list) */
    bool recheck_top;
    /* the top was read now, after the snapshot's prefetch: that holds
     * the target as it was before, and a live walk no longer uses it */
    bool fresh;
    /* a live walk made again after every try found the same frame odd
     * under the same top (walk_thread): that frame is shown as it is (a
     * stopped process; a frame at an instruction without a location);
     * every other check of a running process still holds */
    bool steady;
    /* ... because every thread of the process was stopped throughout the
     * walk (walk_frozen): a top frame that does not run is shown too */
    bool frozen;
    /* the caller asked where each frame's eval call is (PYF_SNAP_ENTRIES):
     * a walk that finds them apart from the frames (3.10's CFrames) reads
     * them only then */
    bool entries;
} pyf__thread_walk;

/* What one walk of a thread found besides its frames (filled by
 * pyf__walk_frames; the thread walker reads it to decide on another try,
 * the frame cache whether to store the stack). */
typedef struct pyf__walk_result {
    uint32_t more;           /* frames counted past keep_frames */
    uint32_t tlbc_failures;  /* failed reads of thread-local bytecode: a
                                frame shows no location, the walk goes on */
    bool torn;               /* the stack changed under the walk */
    bool torn_moved;         /* ... seen in copies that differ: never steady */
    uint64_t torn_at;        /* the frame that said so (0: none) */
    uint64_t first;          /* the first frame handed to the sink (0: none) */
    /* the frame the walk started from: current_frame, or the top frame the
     * thread state named right after the copies (recheck_top) */
    uint64_t top;
} pyf__walk_result;

/* A thread's frames where they are heap objects (frame_model
 * PYF__FRAMES_HEAP, frames_heap.c): what pyf__walk_frames does for them. */
int pyf__walk_heap_frames(pyf_target *t, const pyf__thread_walk *w, const pyf__sink *sink,
                          pyf__walk_result *res);

/* The walk's fields that come from the thread state copied in buf, where
 * it holds the current frame (top_kind PYF__TOP_TSTATE): current frame,
 * base frame (3.15), newest data-stack chunk. */
static inline void pyf__walk_from_tstate(const pyf__offsets *o, pyf__thread_walk *w,
                                         const uint8_t *buf)
{
    w->current_frame = pyf__ld64(buf + o->tstate.current_frame);
    w->base_frame = o->tstate.base_frame != PYF__ABSENT
                        ? pyf__ld64(buf + o->tstate.base_frame) : 0;
    /* 3.8-3.10 have no data stack */
    w->datastack_chunk = o->tstate.datastack_chunk != PYF__ABSENT
                             ? pyf__ld64(buf + o->tstate.datastack_chunk) : 0;
}

/* The same for every version (threads.c): where the current frame is
 * reached through the thread's _PyCFrame (3.11, 3.12), that is read too,
 * unless buf (len bytes of the thread state at w->tstate_addr) holds it.
 * PYF_OK, or the read's failure (detail in t->io.fail). */
int pyf__walk_top(pyf_target *t, pyf__thread_walk *w, const uint8_t *buf, size_t len);

/* ---- one frame: the decoder both walkers use (the stack walk and the
 * asyncio reader's coroutine chains) ---- */
typedef struct pyf__iframe {
    uint64_t addr;           /* the _PyInterpreterFrame in the target */
    const uint8_t *copy;     /* its bytes as read */
    uint64_t prev;           /* previous (the caller) */
    uint64_t exe;            /* f_executable, tag bits masked */
    uint64_t ip;             /* instr_ptr */
    int owner;               /* FRAME_OWNED_BY_*, numbered as the version does */
} pyf__iframe;

static inline void pyf__iframe_decode(const pyf__offsets *o, const uint8_t *f, uint64_t addr,
                                      pyf__iframe *fr)
{
    fr->addr = addr;
    fr->copy = f;
    fr->prev = pyf__ld64(f + o->frame.previous);
    fr->exe = pyf__ld64(f + o->frame.executable) & o->tag_mask;
    fr->ip = pyf__ld64(f + o->frame.instr_ptr);
    fr->owner = (int8_t)f[o->frame.owner];
}

/* ---- one heap frame (frame_model PYF__FRAMES_HEAP, 3.8-3.10): a
 * PyFrameObject, linked to its caller by f_back from the thread state's
 * frame ---- */
typedef enum pyf__hframe_state {
    /* in its eval loop: executing, or (3.10) unwinding an exception */
    PYF__HFRAME_RUNNING,
    /* made, its first instruction not yet run (on a thread's chain: the
     * frame being entered, pushed before it says it runs) */
    PYF__HFRAME_NOT_STARTED,
    /* a generator's frame at a yield (on a chain: being resumed, or
     * yielding) */
    PYF__HFRAME_SUSPENDED,
    /* returned, raised or cleared (on a chain: returning, or memory the
     * thread has left) */
    PYF__HFRAME_DONE,
} pyf__hframe_state;

typedef struct pyf__hframe {
    uint64_t addr;           /* the PyFrameObject in the target */
    uint64_t refcnt;         /* ob_refcnt (0: being freed) */
    uint64_t back;           /* f_back (the caller) */
    uint64_t code;           /* f_code */
    uint64_t gen;            /* f_gen: the generator running it, or 0 */
    /* the last instruction run, in code units (f_lasti as the version
     * counts it, lasti_kind); -1 before the first */
    int64_t instr;
    pyf__hframe_state state;
} pyf__hframe;

static inline void pyf__hframe_decode(const pyf__offsets *o, const uint8_t *f, uint64_t addr,
                                      pyf__hframe *fr)
{
    fr->addr = addr;
    fr->refcnt = pyf__ld64(f);
    fr->back = pyf__ld64(f + o->heapframe.back);
    fr->code = pyf__ld64(f + o->heapframe.code);
    fr->gen = pyf__ld64(f + o->heapframe.gen);
    int32_t lasti = (int32_t)pyf__ld32(f + o->heapframe.lasti);
    /* -1 is tested before a byte offset is halved */
    fr->instr = lasti < 0 ? -1 : o->lasti_kind == PYF__LASTI_BYTES ? lasti / 2 : lasti;
    if (o->running_kind == PYF__RUNNING_FLAG) {
        /* 3.8, 3.9: f_executing; a frame made keeps its value stack's top
         * in f_stacktop until its eval loop takes it, and a generator's
         * sets it again at each yield */
        fr->state = f[o->heapframe.executing] != 0 ? PYF__HFRAME_RUNNING
                    : lasti < 0                    ? PYF__HFRAME_NOT_STARTED
                    : pyf__ld64(f + o->heapframe.stacktop) != 0 ? PYF__HFRAME_SUSPENDED
                                                                : PYF__HFRAME_DONE;
        return;
    }
    int s = (int8_t)f[o->heapframe.state];
    fr->state = s == o->frame_state.executing || s == o->frame_state.unwinding
                    ? PYF__HFRAME_RUNNING
                : s == o->frame_state.created   ? PYF__HFRAME_NOT_STARTED
                : s == o->frame_state.suspended ? PYF__HFRAME_SUSPENDED
                                                : PYF__HFRAME_DONE;
}

/* Where a frame's value stack ends: the one reading of the stack pointer
 * a version saves (sp_kind).  PYF__STACK_SAVED with *sp (3.14+'s
 * stackpointer; 3.12's and 3.13's stacktop, counted from localsplus);
 * PYF__STACK_RUNNING when the frame runs and saved none (stacktop -1,
 * 3.11-3.13); PYF__STACK_STALE with *sp where the version leaves a
 * running frame's as it was (3.11): true only of a frame known to be
 * suspended in a call or at a yield; PYF__STACK_NONE when the layout has
 * no stack pointer. */
enum { PYF__STACK_NONE, PYF__STACK_SAVED, PYF__STACK_RUNNING, PYF__STACK_STALE };
static inline int pyf__frame_sp(const pyf__offsets *o, const uint8_t *f, uint64_t addr,
                                uint64_t *sp)
{
    if (o->sp_kind == PYF__SP_POINTER) {
        if (o->frame.stackpointer == PYF__ABSENT || o->frame.stackpointer + 8 > o->frame.size)
            return PYF__STACK_NONE;
        *sp = pyf__ld64(f + o->frame.stackpointer);
        return PYF__STACK_SAVED;
    }
    if (o->frame.stacktop == PYF__ABSENT || o->frame.stacktop + 4 > o->frame.size)
        return PYF__STACK_NONE;
    int32_t top = (int32_t)pyf__ld32(f + o->frame.stacktop);
    if (top < 0)
        return PYF__STACK_RUNNING;
    *sp = addr + o->frame.localsplus + 8 * (uint64_t)top;
    return o->sp_kind == PYF__SP_STACKTOP_STALE ? PYF__STACK_STALE : PYF__STACK_SAVED;
}

/* Whether the frame runs Python code of its own (owned by a thread, a
 * generator or a frame object), or is an entry frame (C stack,
 * interpreter), or neither (a corrupt owner). */
static inline bool pyf__iframe_python(const pyf__offsets *o, const pyf__iframe *fr)
{
    return fr->owner == o->owner_thread || fr->owner == o->owner_generator ||
           fr->owner == o->owner_frame_object;
}
static inline bool pyf__iframe_entry(const pyf__offsets *o, const pyf__iframe *fr)
{
    return fr->owner == o->owner_cstack || fr->owner == o->owner_interpreter;
}

/* The code object of a Python frame (frames.c).  PYF_OK with *code (NULL:
 * unreadable, the frame shows "???") and *shown (false: nothing to show:
 * no executable, not a code object, or an interpreter-made shim);
 * PYF_ENOMEM; PYF_ECORRUPT when a running process freed or replaced the
 * code object while it was read (the stack changed; detail in t->io.fail). */
int pyf__iframe_code(pyf_target *t, const pyf__iframe *fr, const pyf__code **code,
                     bool *shown);

/* (the frame's fields passed one by one: a walk keeps fr in registers) */
static inline int64_t pyf__iframe_instr(pyf_target *t, const pyf__iframe *fr,
                                        const pyf__code *code, uint32_t *tlbc_failures)
{
    return pyf__frame_instr(t, fr->copy, fr->exe, fr->ip, code, tlbc_failures);
}

/* Walk one thread's frame chain.  Returns 0 when the chain ended normally
 * (and, on 3.15, at base_frame) or the rest came from at_anchor, else the
 * reason (detail in t->io.fail); *res says what else the walk found. */
int pyf__walk_frames(pyf_target *t, const pyf__thread_walk *w, const pyf__sink *sink,
                     pyf__walk_result *res);

/* ---- interpreters and their threads (threads.c): the one loop both the
 * stack walk and the asyncio reader visit them with ---- */
typedef struct pyf__interp_info {
    uint64_t addr, next;
    int64_t id;
    uint64_t threads_head, threads_main, code_generation;
    uint32_t index;          /* its place in the runtime's list */
} pyf__interp_info;

/* A thread state that was read and is linked as the list says. */
typedef struct pyf__thread_info {
    const pyf__interp_info *interp;
    uint64_t addr;
    uint8_t *buf;            /* its copy (the visitor may read it again into buf) */
    size_t len;              /* bytes held: want, or need when want was unreadable */
    bool fresh;              /* read now, not from the snapshot's prefetch */
    pyf_thread th;           /* the header: ids, flags, interp_index */
} pyf__thread_info;

typedef struct pyf__thread_visitor {
    void *ctx;
    /* bytes of each thread state to read: want when readable, else need */
    size_t want, need;
    /* every interpreter, read before any is visited (NULL: not wanted) */
    int (*interps)(void *ctx, const pyf__interp_info *v, uint32_t n);
    /* an interpreter, before its threads */
    int (*interp)(void *ctx, const pyf__interp_info *ii);
    int (*thread)(void *ctx, pyf__thread_info *ti);
    /* the interpreter's thread list breaks at addr (not aligned, a loop,
     * past the thread limit, unreadable, relinked too often): why (detail
     * in t->io.fail).  Its threads end there. */
    int (*broken)(void *ctx, const pyf__interp_info *ii, uint64_t addr, int why);
    /* after the interpreter's threads (NULL: nothing to do) */
    int (*interp_end)(void *ctx, const pyf__interp_info *ii);
} pyf__thread_visitor;

/* Visit every interpreter and thread.  A visitor's code other than PYF_OK
 * ends the visit and is returned; so is a broken interpreter list. */
int pyf__visit_threads(pyf_target *t, const pyf__thread_visitor *v);

/* The stack walk of every thread (threads.c), into the sink. */
int pyf__walk_all(pyf_target *t, const pyf_snapshot_request *req,
                  const pyf__sink *sink);

#endif /* PYFRAMES_WALK_H */
