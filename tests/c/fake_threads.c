/*
 * fake_threads.c - interpreters, thread states, data-stack chunks and
 * frames (entry, Python, generator).
 * See fake_target.h.
 */
#include "fake_internal.h"

struct fake_thread {
    fake_target *ft;
    uint64_t addr;
    uint64_t interp;
    uint64_t current;
    uint64_t base_frame;
    uint64_t chunk;       /* newest chunk, 0 if none */
    size_t chunk_size;
    size_t chunk_used;    /* bytes used in data[] */
    size_t nchunks;
    uint64_t cstack;      /* C stack region */
    size_t cstack_used;
    /* fake_thread_use_cframes: the _PyCFrame layout (0: none), and the
     * thread's current one (0: the thread state's own, none yet) */
    uint64_t ts_cframe, cf_size, cf_current, cf_previous;
    uint64_t cframe;
};

/* ==== interpreters, threads, frames ==================================== */

uint64_t fake_add_interp(fake_target *ft, int64_t id)
{
    const ft_offs *o = &ft->o;
    uint64_t in;
    if (ft->main_interp != 0) { /* made with the image (3.11, 3.12) */
        in = ft->main_interp;
        ft->main_interp = 0;
        fake_w64(ft, in + o->in_id, (uint64_t)id);
        return in;
    }
    if (ft->ninterps == 0 && o->rt_main_interp != UINT64_MAX) {
        /* 3.11, 3.12: where the runtime embeds it, interpreters.main */
        in = RUNTIME_BASE + o->rt_main_interp;
        fake_w64(ft, RUNTIME_BASE + o->rt_interps_main, in);
    } else if (ft->ninterps == 0 && ft_heap_frames(ft)) {
        /* 3.8-3.10: made on the heap, named by interpreters.main */
        in = ft_alloc_norec(ft, o->in_size);
        fake_w64(ft, RUNTIME_BASE + o->rt_interps_main, in);
    } else if (ft->ninterps == 0) {
        in = (RUNTIME_BASE + o->rt_size - o->in_size) & ~63ull;
        if (in < RUNTIME_BASE + 1024)
            ft_die("runtime too small for the main interpreter");
    } else {
        in = ft_alloc_norec(ft, o->in_size);
    }
    /* for targeted corruption: the fields the walk reads, not the whole
     * (mostly irrelevant) interpreter state */
    uint64_t lo = o->in_next < o->in_id ? o->in_next : o->in_id;
    uint64_t hi = o->in_threads_head;
    if (o->in_threads_main != UINT64_MAX && o->in_threads_main > hi)
        hi = o->in_threads_main;
    if (o->in_id > hi)
        hi = o->in_id;
    ft_record_obj(ft, in + lo, (size_t)(hi + 8 - lo));
    if (o->in_code_gen != UINT64_MAX)
        ft_record_obj(ft, in + o->in_code_gen, 8);
    ft->ninterps++;
    uint64_t head_addr = RUNTIME_BASE + o->rt_interps_head;
    fake_w64(ft, in + o->in_id, (uint64_t)id);
    fake_w64(ft, in + o->in_next, fake_r64(ft, head_addr));
    fake_w64(ft, head_addr, in);
    if (o->in_code_gen != UINT64_MAX)
        fake_w64(ft, in + o->in_code_gen, 1);
    return in;
}

static uint64_t make_frame(fake_target *ft, uint64_t at, uint64_t exec,
                           uint64_t previous, uint64_t instr_ptr, uint8_t owner)
{
    const ft_offs *o = &ft->o;
    fake_w64(ft, at + o->fr_executable, exec);
    fake_w64(ft, at + o->fr_previous, previous);
    fake_w64(ft, at + o->fr_instr_ptr, instr_ptr);
    fake_w8(ft, at + o->fr_owner, owner);
    if (o->fr_stackpointer != UINT64_MAX)
        fake_w64(ft, at + o->fr_stackpointer, at + o->fr_localsplus + 8);
    return at;
}

static void thread_set_current(fake_thread *th, uint64_t frame)
{
    const ft_offs *o = &th->ft->o;
    th->current = frame;
    if (o->ts_current_frame != UINT64_MAX)
        fake_w64(th->ft, th->addr + o->ts_current_frame, frame);
    else if (o->ts_frame != UINT64_MAX) /* 3.8-3.10: the frame object */
        fake_w64(th->ft, th->addr + o->ts_frame, frame);
    else if (th->cframe == 0) /* 3.11, 3.12: the thread's _PyCFrame's (the one it embeds) */
        fake_w64(th->ft, th->addr + o->ts_root_cframe + o->cf_current_frame, frame);
    if (th->cframe != 0) /* a _PyCFrame a test pushed (fake_cframe_push) */
        fake_w64(th->ft, th->cframe + th->cf_current, frame);
}

static uint64_t cstack_take(fake_thread *th, size_t size)
{
    fake_target *ft = th->ft;
    if (th->cstack == 0) {
        th->cstack = fake_region(ft, ft->cstack_next, CSTACK_SIZE);
        ft->cstack_next += 0x200000;
    }
    size = (size_t)align_up(size, 16);
    if (th->cstack_used + size > CSTACK_SIZE)
        ft_die("C stack region full");
    uint64_t at = th->cstack + th->cstack_used;
    th->cstack_used += size;
    return at;
}

void fake_thread_use_cframes(fake_thread *th, uint64_t ts_cframe, uint64_t size,
                             uint64_t current, uint64_t previous)
{
    th->ts_cframe = ts_cframe;
    th->cf_size = size;
    th->cf_current = current;
    th->cf_previous = previous;
    fake_cframe_push(th);
}

uint64_t fake_cframe_push(fake_thread *th)
{
    if (th->cf_size == 0)
        ft_die("fake_cframe_push: the thread has no _PyCFrame layout");
    uint64_t cf = cstack_take(th, (size_t)th->cf_size);
    fake_w64(th->ft, cf + th->cf_previous, th->cframe);
    fake_w64(th->ft, th->addr + th->ts_cframe, cf);
    th->cframe = cf;
    thread_set_current(th, th->current);
    return cf;
}

uint64_t fake_cframe_pop(fake_thread *th)
{
    uint64_t cf = th->cframe;
    if (cf == 0)
        ft_die("fake_cframe_pop: no _PyCFrame");
    th->cframe = fake_r64(th->ft, cf + th->cf_previous);
    fake_w64(th->ft, th->addr + th->ts_cframe, th->cframe);
    th->cstack_used = (size_t)(cf - th->cstack); /* its memory free for the next */
    return th->cframe;
}

uint64_t fake_thread_cframe(const fake_thread *th) { return th->cframe; }

fake_thread *fake_add_thread(fake_target *ft, uint64_t interp,
                             uint64_t thread_id, uint64_t native_tid, int entry)
{
    const ft_offs *o = &ft->o;
    size_t impl = (size_t)o->ts_size + 512;
    uint64_t ts = fake_alloc(ft, impl);
    fake_thread *th = ft_xcalloc(1, sizeof *th);
    th->ft = ft;
    th->addr = ts;
    th->interp = interp;
    GROW(ft->threads, ft->nthreads, ft->capthreads);
    ft->threads[ft->nthreads++] = th;

    uint64_t head = fake_r64(ft, interp + o->in_threads_head);
    fake_w64(ft, ts + o->ts_next, head);
    fake_w64(ft, ts + o->ts_prev, 0);
    if (head)
        fake_w64(ft, head + o->ts_prev, ts);
    fake_w64(ft, interp + o->in_threads_head, ts);
    if (o->in_threads_main != UINT64_MAX && fake_r64(ft, interp + o->in_threads_main) == 0)
        fake_w64(ft, interp + o->in_threads_main, ts);
    fake_w64(ft, ts + o->ts_interp, interp);
    fake_w64(ft, ts + o->ts_thread_id, thread_id);
    if (o->ts_native_thread_id != UINT64_MAX) /* none before 3.11 */
        fake_w64(ft, ts + o->ts_native_thread_id, native_tid);
    if (o->ts_status != UINT64_MAX)
        fake_w32(ft, ts + o->ts_status, 0x13); /* initialized, bound, active */
    if (o->ts_cframe != UINT64_MAX) /* 3.11, 3.12: the _PyCFrame it embeds */
        fake_w64(ft, ts + o->ts_cframe, ts + o->ts_root_cframe);

    if (o->ts_base_frame != UINT64_MAX) {
        uint64_t bf = ts + align_up(o->ts_size, 16);
        make_frame(ft, bf, ft->none_obj | ft->exec_tag, 0, ft->trampoline, o->owner_entry);
        fake_w64(ft, ts + o->ts_base_frame, bf);
        th->base_frame = bf;
        thread_set_current(th, bf);
    }
    if (entry)
        fake_push_entry(th, -1);
    return th;
}

uint64_t fake_thread_addr(const fake_thread *th) { return th->addr; }
fake_target *fake_thread_target(const fake_thread *th) { return th->ft; }

void fake_set_writable(fake_target *ft, int writable) { ft->writable = writable; }
uint64_t fake_thread_base_frame(const fake_thread *th) { return th->base_frame; }
uint64_t fake_thread_current(const fake_thread *th) { return th->current; }
size_t fake_thread_nchunks(const fake_thread *th) { return th->nchunks; }

void fake_thread_set_current(fake_thread *th, uint64_t frame)
{
    thread_set_current(th, frame);
}

void fake_thread_set_holds_gil(fake_thread *th, int v)
{
    if (th->ft->o.ts_holds_gil == UINT64_MAX)
        ft_die("holds_gil needs 3.15");
    fake_w32(th->ft, th->addr + th->ft->o.ts_holds_gil, (uint32_t)v);
}

uint64_t fake_push_entry(fake_thread *th, int owner_override)
{
    fake_target *ft = th->ft;
    if (ft->o.owner_entry == 0xff)
        ft_die("3.%d has no entry frames (the entered frame's is_entry says so)", ft->minor);
    uint64_t f = cstack_take(th, (size_t)ft->o.fr_size);
    uint8_t owner = owner_override >= 0 ? (uint8_t)owner_override : ft->o.owner_entry;
    make_frame(ft, f, ft->none_obj | ft->exec_tag, th->current, ft->trampoline, owner);
    ft_record_obj(ft, f, (size_t)ft->o.fr_size);
    thread_set_current(th, f);
    return f;
}

uint64_t fake_push_frame(fake_thread *th, uint64_t code, int instr_index)
{
    fake_target *ft = th->ft;
    const ft_offs *o = &ft->o;
    size_t fsize = (size_t)align_up(o->fr_size + 8u * FRAME_SLOTS, 8);
    if (th->chunk == 0 || th->chunk_used + fsize > th->chunk_size - 24) {
        size_t csize = CHUNK_MIN;
        while (csize < fsize + 32)
            csize *= 2;
        uint64_t c = fake_region(ft, ft->chunk_next, csize);
        ft->chunk_next += align_up(csize, 0x100000) + REGION_GAP;
        if (th->chunk) /* save the top of the chunk being left, in slots */
            fake_w64(ft, th->chunk + 16, th->chunk_used / 8);
        fake_w64(ft, c + 0, th->chunk);
        fake_w64(ft, c + 8, csize);
        fake_w64(ft, c + 16, 0); /* the live chunk's top is not maintained */
        /* The root chunk skips its first slot, like CPython's push_chunk. */
        th->chunk_used = th->chunk == 0 ? 8 : 0;
        th->chunk = c;
        th->chunk_size = csize;
        th->nchunks++;
        ft_record_obj(ft, c, 24);
        fake_w64(ft, th->addr + o->ts_datastack_chunk, c);
    }
    uint64_t f = th->chunk + 24 + th->chunk_used;
    th->chunk_used += fsize;
    uint64_t ip = code + o->co_code_adaptive + 2u * (uint64_t)instr_index;
    make_frame(ft, f, code | ft->exec_tag, th->current, ip, 0);
    ft_record_obj(ft, f, (size_t)o->fr_size);
    thread_set_current(th, f);
    return f;
}

uint64_t fake_pop_frame(fake_thread *th)
{
    fake_target *ft = th->ft;
    const ft_offs *o = &ft->o;
    uint64_t f = th->current, prev = fake_frame_previous(ft, f);
    size_t fsize = (size_t)align_up(o->fr_size + 8u * FRAME_SLOTS, 8);
    /* CPython 3.15's _PyThreadState_UpdateLastProfiledFrame */
    if (o->ts_anchor != UINT64_MAX && fake_r64(ft, th->addr + o->ts_anchor) == f) {
        fake_w64(ft, th->addr + o->ts_anchor, prev);
        fake_w64(ft, th->addr + o->ts_anchor_seq,
                 fake_r64(ft, th->addr + o->ts_anchor_seq) + 1);
    }
    if (th->chunk != 0 && f == th->chunk + 24 + th->chunk_used - fsize)
        th->chunk_used -= fsize;
    /* an entry frame, the last thing on the C stack: its memory is free */
    size_t esize = (size_t)align_up(o->fr_size, 16);
    if (th->cstack != 0 && th->cstack_used >= esize &&
        f == th->cstack + th->cstack_used - esize)
        th->cstack_used -= esize;
    thread_set_current(th, prev);
    return prev;
}

uint64_t fake_thread_anchor(const fake_thread *th, uint64_t *seq)
{
    const ft_offs *o = &th->ft->o;
    if (o->ts_anchor == UINT64_MAX)
        return 0;
    if (seq != NULL)
        *seq = fake_r64(th->ft, th->addr + o->ts_anchor_seq);
    return fake_r64(th->ft, th->addr + o->ts_anchor);
}

void fake_thread_set_anchor(fake_thread *th, uint64_t frame)
{
    fake_w64(th->ft, th->addr + th->ft->o.ts_anchor, frame);
}

uint64_t fake_gen_frame(fake_thread *th, uint64_t code, int instr_index,
                        uint64_t *gen_out)
{
    fake_target *ft = th->ft;
    const ft_offs *o = &ft->o;
    size_t gsize = (size_t)o->gen_gi_iframe + (size_t)o->fr_size + 8u * FRAME_SLOTS;
    if (gsize < o->gen_size)
        gsize = (size_t)o->gen_size;
    uint64_t g = fake_alloc(ft, gsize);
    fake_w64(ft, g, 1);
    fake_w64(ft, g + o->ob_type, fake_type(ft, "generator"));
    fake_w64(ft, g + o->gen_gi_name, fake_str(ft, "gen"));
    fake_w8(ft, g + o->gen_gi_frame_state, o->gen_executing); /* FRAME_EXECUTING */
    uint64_t f = g + o->gen_gi_iframe;
    uint64_t ip = code + o->co_code_adaptive + 2u * (uint64_t)instr_index;
    make_frame(ft, f, code | ft->exec_tag, th->current, ip, 1);
    thread_set_current(th, f);
    if (gen_out)
        *gen_out = g;
    return f;
}

void fake_set_exec_tag(fake_target *ft, unsigned tag)
{
    ft->exec_tag = ft->minor >= 14 ? (tag & 3u) : 0u;
}

void fake_frame_set_previous(fake_target *ft, uint64_t frame, uint64_t prev)
{
    fake_w64(ft, frame + ft->o.fr_previous, prev);
}

uint64_t fake_frame_previous(const fake_target *ft, uint64_t frame)
{
    return fake_r64(ft, frame + ft->o.fr_previous);
}

void fake_frame_set_executable(fake_target *ft, uint64_t frame, uint64_t v)
{
    fake_w64(ft, frame + ft->o.fr_executable, v);
}

void fake_frame_set_owner(fake_target *ft, uint64_t frame, uint8_t owner)
{
    fake_w8(ft, frame + ft->o.fr_owner, owner);
}
