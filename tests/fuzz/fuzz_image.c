/*
 * fuzz_image.c - build and mutate synthetic images from fuzz input.
 * See fuzz_image.h.
 */
#include "fuzz_image.h"

#include <string.h>

/* ==== input ============================================================= */

uint8_t fz_u8(fz_in *in)
{
    if (in->n == 0)
        return 0;
    in->n--;
    return *in->p++;
}

uint16_t fz_u16(fz_in *in)
{
    uint16_t lo = fz_u8(in);
    return (uint16_t)(lo | (uint16_t)fz_u8(in) << 8);
}

uint64_t fz_u64(fz_in *in)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)fz_u8(in) << (8 * i);
    return v;
}

/* ==== bookkeeping ======================================================= */

static void file_obj(fz_image *im, int kind, uint64_t addr, size_t size)
{
    if (im->nobjs[kind] < FZ_MAX_OBJS) {
        im->objs[kind][im->nobjs[kind]].addr = addr;
        im->objs[kind][im->nobjs[kind]].size = size ? size : 8;
        im->nobjs[kind]++;
    }
}

/* The object the last builder call allocated (its address and size). */
static uint64_t file_last(fz_image *im, int kind)
{
    uint64_t addr = 0;
    size_t size = 0;
    size_t n = fake_nobjects(im->ft);
    if (n == 0)
        return 0;
    fake_object(im->ft, n - 1, &addr, &size);
    file_obj(im, kind, addr, size);
    return addr;
}

static uint64_t off(fz_image *im, const char *name) { return fake_off(im->ft, name); }

/* ==== strings and code ================================================== */

/* A str of up to 24 code points: ASCII, Latin-1, BMP, astral, lone
 * surrogates or values past U+10FFFF, as the input picks. */
static uint64_t make_str(fz_image *im, fz_in *in, const char *dflt)
{
    uint8_t hdr = fz_u8(in);
    size_t n = hdr % 25u;
    unsigned cls = hdr / 25u % 6u;
    if (n == 0 && cls == 0)
        return fake_str(im->ft, dflt); /* shared, like interned names */
    uint32_t cp[24];
    for (size_t i = 0; i < n; i++) {
        uint8_t b = fz_u8(in);
        switch (cls) {
        case 0: cp[i] = 0x20u + b % 0x5Fu; break;
        case 1: cp[i] = b; break;
        case 2: cp[i] = 0x100u + (uint32_t)b * 0x101u; break;          /* BMP, some surrogates */
        case 3: cp[i] = 0x10000u + (uint32_t)b * 0x1111u; break;      /* astral */
        case 4: cp[i] = 0xD800u + b; break;                            /* lone surrogates */
        default: cp[i] = b & 1 ? 0x110000u + b : 0x7Fu + b % 3u; break; /* out of range */
        }
    }
    fake_str_cp(im->ft, cp, n, 0);
    return file_last(im, K_STR);
}

/* A line table: encoded from 1-6 runs (short, one-line, long, no-column
 * and no-location forms) or raw bytes; *ncu gets the code units. */
static uint64_t make_linetable(fz_image *im, fz_in *in, int firstlineno, int *ncu)
{
    uint8_t mode = fz_u8(in);
    uint8_t buf[512];
    size_t len;
    if (mode & 1) {
        len = mode / 2u % 48u;
        for (size_t i = 0; i < len; i++)
            buf[i] = fz_u8(in);
        *ncu = 1 + fz_u8(in) % 40;
    } else {
        fake_loc locs[6];
        size_t n = 1 + mode / 2u % 6u;
        int line = firstlineno, total = 0;
        for (size_t i = 0; i < n; i++) {
            uint8_t a = fz_u8(in), b = fz_u8(in), c = fz_u8(in);
            locs[i].ncu = 1 + a % 12;
            total += locs[i].ncu;
            if (a >= 240) { /* no location */
                locs[i].line = FAKE_NOLINE;
                locs[i].end_line = locs[i].col = locs[i].end_col = 0;
                continue;
            }
            line += (int)(b % 16) - 4;
            if (line < 0)
                line = 0;
            locs[i].line = line;
            locs[i].end_line = line + (c & 0x80 ? c % 5 : 0);
            if (c % 7 == 0) { /* no columns */
                locs[i].end_line = line;
                locs[i].col = locs[i].end_col = -1;
            } else {
                locs[i].col = b % 130;
                locs[i].end_col = locs[i].col + c % 20;
            }
        }
        len = fake_encode_linetable(firstlineno, locs, n, buf, sizeof buf);
        *ncu = total;
    }
    fake_bytes(im->ft, buf, len);
    return file_last(im, K_LINETABLE);
}

static void make_code(fz_image *im, fz_in *in, size_t i)
{
    static const char *const files[] = {"/app/main.py", "/app/jobs.py", "/app/net.py",
                                        "/app/x.py"};
    static const char *const names[] = {"<module>", "serve", "Client.read", "Stream.wait"};
    uint64_t filename = make_str(im, in, files[i]);
    uint64_t qualname = make_str(im, in, names[i]);
    uint64_t name = (fz_u8(in) & 1) ? qualname : make_str(im, in, "read");
    int firstlineno = 1 + fz_u8(in);
    int ncu = 1;
    uint64_t lt = make_linetable(im, in, firstlineno, &ncu);
    uint64_t c = fake_code_raw(im->ft, filename, qualname, name, lt, firstlineno, ncu);
    im->codes[i] = c;
    im->code_ncu[i] = ncu;
    file_last(im, K_CODE);
}

/* ==== frames ============================================================ */

static void push_some(fz_image *im, fake_thread *th, fz_in *in, unsigned n)
{
    uint64_t fsize = off(im, "interpreter_frame.size");
    for (unsigned k = 0; k < n; k++) {
        uint8_t op = fz_u8(in), arg = fz_u8(in);
        size_t ci = arg % im->ncodes;
        int instr = im->code_ncu[ci] > 0 ? (arg >> 2) % im->code_ncu[ci] : 0;
        uint64_t f;
        switch (op % 8) {
        case 5: {
            uint64_t gen = 0;
            f = fake_gen_frame(th, im->codes[ci], instr, &gen);
            file_obj(im, K_CORO, gen, (size_t)(f - gen + fsize));
            break;
        }
        case 6:
            f = fake_push_entry(th, op & 0x80 ? 4 : -1);
            break;
        case 7: /* an instruction pointer outside the code, before or after */
            f = fake_push_frame(th, im->codes[ci], op & 0x80 ? -1 - (int)(arg % 4) :
                                                        im->code_ncu[ci] + arg % 8);
            break;
        default:
            f = fake_push_frame(th, im->codes[ci], instr);
            break;
        }
        file_obj(im, K_FRAME, f, (size_t)fsize + 32);
    }
}

/* ==== asyncio =========================================================== */

/* .AsyncioDebug fields, in table order */
enum { T_SIZE, T_NAME, T_AWAITED_BY, T_IS_TASK, T_IS_SET, T_CORO, T_NODE,
       I_SIZE, I_HEAD, TH_SIZE, TH_LOOP, TH_RUNNING, TH_HEAD, NFIELDS };

/* The values of CPython 3.14.10 / 3.15.2 (Debian x86-64). */
static const uint64_t V14[NFIELDS] = {168, 136, 96, 108, 109, 128, 152,
                                      225864, 10880, 936, 864, 872, 880};
static const uint64_t V15[NFIELDS] = {168, 136, 96, 108, 109, 128, 152,
                                      226240, 10856, 1104, 1024, 1032, 1048};

typedef struct fz_aio {
    const uint64_t *v;
    uint64_t coro_type, task_type;
    uint64_t tasks[24];
    size_t ntasks;
} fz_aio;

static void link_list(fz_image *im, const fz_aio *a, uint64_t head, const uint64_t *tasks,
                      size_t n)
{
    uint64_t prev = head;
    for (size_t i = 0; i < n; i++) {
        uint64_t node = tasks[i] + a->v[T_NODE];
        fake_w64(im->ft, prev + 0, node);
        fake_w64(im->ft, node + 8, prev);
        prev = node;
    }
    fake_w64(im->ft, prev + 0, head);
    fake_w64(im->ft, head + 8, prev);
}

static uint64_t new_obj(fz_image *im, uint64_t type, size_t size)
{
    uint64_t o = fake_alloc(im->ft, size);
    fake_w64(im->ft, o, 1);
    fake_w64(im->ft, o + 8, type);
    return o;
}

/* A suspended coroutine-like object of type running code ci. */
static uint64_t new_gen(fz_image *im, uint64_t type, size_t ci, int instr)
{
    uint64_t fsize = off(im, "interpreter_frame.size");
    uint64_t gi = off(im, "gen_object.gi_iframe");
    uint64_t g = new_obj(im, type, gi + fsize + 32);
    uint64_t f = g + gi, code = im->codes[ci];
    fake_w64(im->ft, f + off(im, "interpreter_frame.executable"), code | 1);
    fake_w64(im->ft, f + off(im, "interpreter_frame.instr_ptr"),
             code + off(im, "code_object.co_code_adaptive") + 2u * (uint64_t)instr);
    fake_w8(im->ft, f + off(im, "interpreter_frame.owner"), 1); /* GENERATOR */
    fake_w64(im->ft, f + off(im, "interpreter_frame.stackpointer"),
             f + off(im, "interpreter_frame.localsplus"));
    fake_w8(im->ft, g + off(im, "gen_object.gi_frame_state"),
            (uint8_t)(im->minor >= 15 ? 1 : -2)); /* suspended */
    file_obj(im, K_CORO, g, (size_t)(gi + fsize + 32));
    return g;
}

/* g suspended in `await awaited` (the awaited object at sp-8 on 3.14,
 * sp-16 on 3.15, tagged). */
static void gen_await(fz_image *im, uint64_t g, uint64_t awaited)
{
    uint64_t f = g + off(im, "gen_object.gi_iframe");
    uint64_t sp = f + off(im, "interpreter_frame.localsplus") + 16;
    fake_w64(im->ft, f + off(im, "interpreter_frame.stackpointer"), sp);
    fake_w64(im->ft, sp - (im->minor >= 15 ? 16 : 8), awaited | 1);
    fake_w8(im->ft, g + off(im, "gen_object.gi_frame_state"),
            (uint8_t)(im->minor >= 15 ? 2 : -1)); /* suspended in yield from */
}

/* A coroutine chain of depth 0-3 (0: no coroutine): each coroutine awaits
 * the one made before it, directly or through an asend wrapper; the last
 * one made is the task's. */
static uint64_t make_coro(fz_image *im, fz_aio *a, fz_in *in)
{
    unsigned depth = fz_u8(in) % 4u;
    uint64_t inner = 0;
    for (unsigned d = 0; d < depth; d++) {
        uint8_t c = fz_u8(in);
        size_t ci = c % im->ncodes;
        uint64_t type = a->coro_type;
        if (c & 0x80) /* an async generator */
            type = fake_type(im->ft, "async_generator");
        uint64_t g = new_gen(im, type, ci, im->code_ncu[ci] ? (c >> 2) % im->code_ncu[ci] : 0);
        uint64_t awaited = inner;
        if (inner != 0 && (c & 0x40)) {
            awaited = new_obj(im, fake_type(im->ft, "async_generator_asend"), 32);
            fake_w64(im->ft, awaited + 16, inner);
        }
        if (awaited != 0)
            gen_await(im, g, awaited);
        inner = g;
    }
    return inner;
}

static uint64_t make_name(fz_image *im, fz_in *in)
{
    uint8_t b = fz_u8(in);
    if (b % 4 == 1) { /* unnamed: an int */
        uint64_t o = new_obj(im, fake_type(im->ft, "int"), off(im, "long_object.size"));
        fake_w64(im->ft, o + off(im, "long_object.lv_tag"), (uint64_t)(b >> 4) << 3);
        fake_w32(im->ft, o + off(im, "long_object.ob_digit"), fz_u8(in));
        file_obj(im, K_ANY, o, off(im, "long_object.size"));
        return o;
    }
    if (b % 4 == 2) /* some other object */
        return new_obj(im, fake_type(im->ft, "Name"), 32);
    return make_str(im, in, "Task-1");
}

static uint64_t new_set(fz_image *im, const uint64_t *keys, size_t n)
{
    uint64_t s = new_obj(im, fake_type(im->ft, "set"), off(im, "set_object.size"));
    uint64_t table = fake_alloc(im->ft, 8 * 16);
    fake_w64(im->ft, table + 24, UINT64_MAX); /* a deleted entry's hash */
    for (size_t i = 0; i < n && i < 6; i++) {
        fake_w64(im->ft, table + 16 * (2 + i), keys[i]);
        fake_w64(im->ft, table + 16 * (2 + i) + 8, 0x1234 + i);
    }
    fake_w64(im->ft, s + off(im, "set_object.used"), n < 6 ? n : 6);
    fake_w64(im->ft, s + off(im, "set_object.mask"), 7);
    fake_w64(im->ft, s + off(im, "set_object.table"), table);
    file_obj(im, K_SET, s, off(im, "set_object.size"));
    file_obj(im, K_SET, table, 8 * 16);
    return s;
}

static void make_tasks(fz_image *im, fz_in *in, const uint64_t *interps, size_t ninterps)
{
    fz_aio a;
    memset(&a, 0, sizeof a);
    a.v = im->minor >= 15 ? V15 : V14;
    im->asyncio_table = fake_alloc(im->ft, 8 * NFIELDS);
    for (int i = 0; i < NFIELDS; i++)
        fake_w64(im->ft, im->asyncio_table + 8u * (uint64_t)i, a.v[i]);
    file_obj(im, K_ATABLE, im->asyncio_table, 8 * NFIELDS);
    a.coro_type = fake_type(im->ft, "coroutine");
    a.task_type = fake_type(im->ft, "_asyncio.Task");

    /* lists: one per thread state, one per interpreter */
    size_t nlists = im->nthreads + ninterps;
    size_t first[FZ_MAX_THREADS + 2], count[FZ_MAX_THREADS + 2];
    for (size_t l = 0; l < nlists; l++) {
        first[l] = a.ntasks;
        count[l] = 0;
        unsigned n = fz_u8(in) % 5u;
        for (unsigned k = 0; k < n && a.ntasks < 24; k++) {
            uint64_t name = make_name(im, in);
            uint64_t coro = make_coro(im, &a, in);
            uint8_t st = fz_u8(in);
            uint64_t t = new_obj(im, a.task_type, a.v[T_SIZE]);
            fake_w64(im->ft, t + a.v[T_NAME], name);
            fake_w64(im->ft, t + a.v[T_CORO], coro);
            fake_w32(im->ft, t + a.v[T_AWAITED_BY] + 8, st % 4u);
            fake_w8(im->ft, t + a.v[T_IS_TASK], 1);
            file_obj(im, K_TASK, t, a.v[T_SIZE]);
            a.tasks[a.ntasks++] = t;
            count[l]++;
        }
    }
    /* awaiters: none, one task, or a set of tasks */
    for (size_t i = 0; i < a.ntasks; i++) {
        uint8_t b = fz_u8(in);
        if (b % 3 == 1) {
            fake_w64(im->ft, a.tasks[i] + a.v[T_AWAITED_BY], a.tasks[(b >> 2) % a.ntasks]);
        } else if (b % 3 == 2) {
            uint64_t keys[3];
            size_t n = 1 + (b >> 2) % 3;
            for (size_t k = 0; k < n; k++)
                keys[k] = a.tasks[(b + 7 * k) % a.ntasks];
            fake_w64(im->ft, a.tasks[i] + a.v[T_AWAITED_BY], new_set(im, keys, n));
            fake_w8(im->ft, a.tasks[i] + a.v[T_IS_SET], 1);
        }
    }
    for (size_t l = 0; l < nlists; l++) {
        uint64_t head = l < im->nthreads ? fake_thread_addr(im->threads[l]) + a.v[TH_HEAD]
                                         : interps[l - im->nthreads] + a.v[I_HEAD];
        link_list(im, &a, head, a.tasks + first[l], count[l]);
    }
    /* running tasks */
    for (size_t i = 0; i < im->nthreads && a.ntasks > 0; i++) {
        uint8_t b = fz_u8(in);
        if (b & 1) {
            uint64_t ts = fake_thread_addr(im->threads[i]);
            uint64_t loop = new_obj(im, fake_type(im->ft, "_UnixSelectorEventLoop"), 32);
            fake_w64(im->ft, ts + a.v[TH_LOOP], b & 2 ? loop : 0);
            fake_w64(im->ft, ts + a.v[TH_RUNNING], a.tasks[(b >> 2) % a.ntasks] | (b >> 7));
        }
    }
}

/* ==== the image ========================================================= */

void fz_build(fz_image *im, int profile, fz_in *in)
{
    memset(im, 0, sizeof *im);
    uint8_t v = fz_u8(in);
    im->minor = profile == FZ_WALK ? 13 + v % 3 : profile == FZ_TASKS ? 14 + v % 2 : 15;
    im->ft = fake_new(im->minor);
    uint8_t scratch[1024]; /* the table's size, from a scratch fill */
    file_obj(im, K_OFFSETS, fake_runtime_addr(im->ft),
             pyf_test_fill_offsets(scratch, sizeof scratch, im->minor,
                                   fake_default_hexversion(im->minor)));
    /* the types first: a builder that makes its type after its object
     * would leave the type's name as the last object (file_last) */
    fake_type(im->ft, "str");
    fake_type(im->ft, "bytes");
    fake_type(im->ft, "code");
    if (v & 0x80)
        fake_set_exec_tag(im->ft, (v >> 3) & 3u);

    uint8_t shape = fz_u8(in);
    im->ncodes = 1 + shape % 4u;
    for (size_t i = 0; i < im->ncodes; i++)
        make_code(im, in, i);

    size_t ninterps = 1 + (shape >> 2) % 2u;
    uint64_t interps[2];
    uint64_t isize = off(im, "interpreter_state.size");
    for (size_t i = 0; i < ninterps; i++) {
        interps[i] = fake_add_interp(im->ft, (int64_t)i * 3);
        file_obj(im, K_INTERP, interps[i], (size_t)isize);
    }
    int aio = profile == FZ_TASKS;
    if (aio) /* empty interpreter lists, before the threads' */
        for (size_t i = 0; i < ninterps; i++) {
            uint64_t head = interps[i] + (im->minor >= 15 ? V15 : V14)[I_HEAD];
            fake_w64(im->ft, head, head);
            fake_w64(im->ft, head + 8, head);
        }
    uint64_t tsize = off(im, "thread_state.size");
    for (size_t i = 0; i < ninterps; i++) {
        unsigned nth = 1 + (shape >> 3) % 3u;
        for (unsigned k = 0; k < nth && im->nthreads < FZ_MAX_THREADS; k++) {
            uint8_t b = fz_u8(in);
            uint64_t native = 500 + im->nthreads;
            fake_thread *th = fake_add_thread(im->ft, interps[i], 0x7f0000001000ull * (1 + im->nthreads),
                                              native, b & 1);
            if (im->minor >= 15)
                fake_thread_set_holds_gil(th, (b >> 1) & 1);
            im->threads[im->nthreads] = th;
            im->native_tids[im->nthreads++] = native;
            file_obj(im, K_TSTATE, fake_thread_addr(th), (size_t)tsize);
            push_some(im, th, in, (b >> 2) % (profile == FZ_CACHE ? 40u : 16u));
        }
    }
    if (aio)
        make_tasks(im, in, interps, ninterps);
}

void fz_image_free(fz_image *im)
{
    fake_free(im->ft);
    im->ft = NULL;
}

/* ==== mutations ========================================================= */

static int pick(const fz_image *im, int kind, unsigned idx, uint64_t *addr, size_t *size)
{
    if (kind == K_ANY) {
        size_t n = fake_nobjects(im->ft);
        if (n == 0)
            return 0;
        fake_object(im->ft, idx % n, addr, size);
        return *size > 0;
    }
    if (im->nobjs[kind] == 0)
        return 0;
    const fz_obj *o = &im->objs[kind][idx % im->nobjs[kind]];
    *addr = o->addr;
    *size = o->size;
    return 1;
}

unsigned fz_mutate(fz_image *im, fz_in *in, unsigned max)
{
    unsigned done = 0;
    for (unsigned m = 0; m < max && in->n > 0; m++) {
        uint8_t kind = fz_u8(in) % K_NKINDS, idx = fz_u8(in), how = fz_u8(in);
        uint16_t at = fz_u16(in);
        uint64_t base;
        size_t size;
        if (!pick(im, kind, idx, &base, &size))
            continue;
        unsigned width = 1u << (how & 3u);
        uint64_t addr = base + at % size;
        if (how & 4)
            addr &= ~(uint64_t)(width - 1);
        uint8_t *host = fake_host(im->ft, addr, width);
        if (host == NULL)
            continue;
        uint64_t old = 0, val;
        memcpy(&old, host, width);
        switch ((how >> 3) % 8u) {
        case 0: val = fz_u64(in); break;
        case 1: val = 0; break;
        case 2: { /* another object, maybe off by a little */
            uint8_t k2 = fz_u8(in) % K_NKINDS, i2 = fz_u8(in);
            int8_t delta = (int8_t)fz_u8(in);
            uint64_t a2;
            size_t s2;
            val = pick(im, k2, i2, &a2, &s2) ? a2 + (uint64_t)(int64_t)delta : 0;
            break;
        }
        case 3: val = old + (uint64_t)(int64_t)(int8_t)fz_u8(in); break;
        case 4: val = fake_unmapped_addr(im->ft); break;
        case 5: val = ~(uint64_t)0 >> (fz_u8(in) % 64u); break;
        case 6: val = base; break; /* points at its own object: loops */
        default: val = old ^ (1ull << (fz_u8(in) % (8u * width))); break;
        }
        memcpy(host, &val, width);
        im->corrupted = 1;
        done++;
    }
    return done;
}

/* ==== CPython's own changes ============================================= */

void fz_evolve(fz_image *im, fz_in *in)
{
    if (im->nthreads == 0)
        return;
    uint8_t b = fz_u8(in);
    fake_thread *th = im->threads[b % im->nthreads];
    unsigned n = (b >> 3) % 8u;
    uint64_t prev_off = off(im, "interpreter_frame.previous");
    switch ((b >> 6) & 3u) {
    case 0: /* returns, moving the anchor as CPython does */
        for (unsigned k = 0; k < n; k++) {
            uint64_t cur = fake_thread_current(th);
            if (cur == 0 || fake_host(im->ft, cur + prev_off, 8) == NULL ||
                cur == fake_thread_base_frame(th))
                break;
            fake_pop_frame(th);
        }
        break;
    case 1: /* calls */
        push_some(im, th, in, n);
        break;
    case 2: { /* returns then calls: frames at reused addresses */
        for (unsigned k = 0; k < n; k++) {
            uint64_t cur = fake_thread_current(th);
            if (cur == 0 || fake_host(im->ft, cur + prev_off, 8) == NULL ||
                cur == fake_thread_base_frame(th))
                break;
            fake_pop_frame(th);
        }
        push_some(im, th, in, n);
        break;
    }
    default: /* another profiler moves the anchor (not the seq) */
        if (im->minor >= 15 && im->nobjs[K_FRAME] > 0)
            fake_thread_set_anchor(th, im->objs[K_FRAME][fz_u8(in) % im->nobjs[K_FRAME]].addr);
        break;
    }
}
