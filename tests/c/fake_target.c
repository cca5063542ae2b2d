/*
 * fake_target.c - synthetic CPython address spaces for the C tests.
 * See fake_target.h.
 */
#include "fake_target.h"

#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

static char g_watch_what[256];

static void watchdog_fired(int sig)
{
    (void)sig;
    static const char pre[] = "\nWATCHDOG: step took too long (hang?): ";
    ssize_t w = write(2, pre, sizeof pre - 1);
    w = write(2, g_watch_what, strlen(g_watch_what));
    w = write(2, "\n", 1);
    (void)w;
    _exit(3);
}

void fake_watchdog(unsigned seconds, const char *what)
{
    static int installed;
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = watchdog_fired;
        sigaction(SIGALRM, &sa, NULL);
        installed = 1;
    }
    snprintf(g_watch_what, sizeof g_watch_what, "%s: %s", check_case(),
             what ? what : "");
    alarm(seconds);
}

/* ==== internals ======================================================== */

#define RUNTIME_BASE 0x555555600000ull
#define HEAP_BASE 0x7f3a00000000ull
#define CHUNK_BASE 0x7f5000000000ull
#define CSTACK_BASE 0x7ffd00000000ull
#define UNMAPPED_ADDR 0x6e0000001000ull
#define ARENA_SIZE (1u << 20)
#define REGION_GAP 0x10000ull
#define CHUNK_MIN (16u * 1024u)
#define CSTACK_SIZE (64u * 1024u)
#define FRAME_SLOTS 4

typedef struct ft_region {
    uint64_t base;
    size_t size;
    uint8_t *mem;
    uint8_t *saved;
} ft_region;

typedef struct ft_fault {
    uint64_t addr, len;
    int code;
} ft_fault;

typedef struct ft_obj {
    uint64_t addr;
    size_t size;
} ft_obj;

typedef struct ft_named {
    char *text;
    uint64_t addr;
} ft_named;

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
};

/* Offsets the builders use, resolved once. */
typedef struct ft_offs {
    uint64_t rt_size, rt_interps_head;
    uint64_t in_size, in_id, in_next, in_threads_head, in_threads_main,
        in_code_gen;
    uint64_t ts_size, ts_prev, ts_next, ts_interp, ts_current_frame,
        ts_base_frame, ts_thread_id, ts_native_thread_id, ts_datastack_chunk,
        ts_anchor, ts_anchor_seq,
        ts_status, ts_holds_gil;
    uint64_t fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_localsplus,
        fr_owner, fr_stackpointer;
    uint64_t co_size, co_filename, co_name, co_qualname, co_linetable,
        co_firstlineno, co_code_adaptive;
    uint64_t ob_type;
    uint64_t ty_size, ty_tp_name;
    uint64_t by_ob_size, by_ob_sval;
    uint64_t un_state, un_length, un_ascii_size, un_compact_size;
    uint64_t gen_size, gen_gi_name, gen_gi_iframe, gen_gi_frame_state;
    /* the object header, free-threaded layouts (0 when absent) */
    uint64_t ob_size, str_hash, bytes_shash;
    uint64_t fr_tlbc_index, co_tlbc;
    uint32_t str_kind_shift_mul[5], str_compact, str_ascii, str_interned;
    uint8_t owner_entry, gen_executing;
} ft_offs;

struct fake_target {
    int minor;
    const ft_layout *layout; /* NULL: fake_offsets' default table */
    uint64_t hexversion;
    uint8_t table[1024];
    size_t table_size;
    ft_offs o;

    ft_region *regions;
    size_t nregions, capregions;
    size_t last_hit;

    uint64_t heap_next_region;
    uint64_t arena_base, arena_used, arena_size;
    uint64_t chunk_next;
    uint64_t cstack_next;

    ft_obj *objs;
    size_t nobjs, capobjs;

    ft_named *types;
    size_t ntypes, captypes;
    ft_named *strs;
    size_t nstrs, capstrs;

    fake_thread **threads;
    size_t nthreads, capthreads;

    uint64_t none_obj;
    uint64_t trampoline;
    unsigned exec_tag;
    size_t ninterps;

    ft_fault *faults;
    size_t nfaults, capfaults;
    uint64_t fail_at;  /* absolute call number, 0 = none */
    int fail_code;
    int fail_sticky;
    size_t short_over;
    /* fake_on_read: run once before a read that starts at watch_addr */
    uint64_t watch_addr;
    void (*watch_fn)(fake_target *, void *);
    void *watch_arg;
    fake_counters cnt;
    int writable;             /* readers from fake_reader() can write */
};

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fake_target: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        die("out of memory");
    return p;
}

static void *xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (q == NULL)
        die("out of memory");
    return q;
}

#define GROW(arr, n, cap)                                                      \
    do {                                                                       \
        if ((n) == (cap)) {                                                    \
            (cap) = (cap) ? (cap) * 2 : 16;                                    \
            (arr) = xrealloc((arr), (cap) * sizeof(*(arr)));                   \
        }                                                                      \
    } while (0)

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

static uint64_t need_off(const fake_target *ft, const char *name)
{
    uint64_t v = pyf_test_offsets_get(ft->table, ft->minor, name);
    if (v == UINT64_MAX)
        die("3.%d has no offset %s", ft->minor, name);
    return v;
}

static uint64_t opt_off(const fake_target *ft, const char *name, uint64_t dflt)
{
    uint64_t v = pyf_test_offsets_get(ft->table, ft->minor, name);
    return v == UINT64_MAX ? dflt : v;
}

static void record_obj(fake_target *ft, uint64_t addr, size_t size)
{
    GROW(ft->objs, ft->nobjs, ft->capobjs);
    ft->objs[ft->nobjs].addr = addr;
    ft->objs[ft->nobjs].size = size;
    ft->nobjs++;
}

static ft_region *find_region(const fake_target *ft, uint64_t addr, size_t len)
{
    fake_target *mft = (fake_target *)ft;
    if (addr + len < addr)
        return NULL;
    if (ft->last_hit < ft->nregions) {
        ft_region *r = &ft->regions[ft->last_hit];
        if (addr >= r->base && addr + len <= r->base + r->size)
            return r;
    }
    for (size_t i = 0; i < ft->nregions; i++) {
        ft_region *r = &ft->regions[i];
        if (addr >= r->base && addr - r->base < r->size) {
            if (addr + len > r->base + r->size)
                return NULL;
            mft->last_hit = i;
            return r;
        }
    }
    return NULL;
}

/* ==== image ============================================================ */

uint64_t fake_default_hexversion(int minor)
{
    switch (minor) {
    case 13: return 0x030d12f0ull;
    case 14: return 0x030e0af0ull;
    case 15: return 0x030f02f0ull;
    default: return 0;
    }
}

uint64_t fake_region(fake_target *ft, uint64_t base, size_t size)
{
    for (size_t i = 0; i < ft->nregions; i++) {
        ft_region *r = &ft->regions[i];
        if (base < r->base + r->size && r->base < base + size)
            die("region 0x%llx+%zu overlaps another", (unsigned long long)base, size);
    }
    GROW(ft->regions, ft->nregions, ft->capregions);
    ft_region *r = &ft->regions[ft->nregions++];
    r->base = base;
    r->size = size;
    r->mem = xcalloc(1, size);
    r->saved = NULL;
    return base;
}

static void resolve_offsets(fake_target *ft)
{
    ft_offs *o = &ft->o;
    o->rt_size = need_off(ft, "runtime_state.size");
    o->rt_interps_head = need_off(ft, "runtime_state.interpreters_head");
    o->in_size = need_off(ft, "interpreter_state.size");
    o->in_id = need_off(ft, "interpreter_state.id");
    o->in_next = need_off(ft, "interpreter_state.next");
    o->in_threads_head = need_off(ft, "interpreter_state.threads_head");
    o->in_threads_main = opt_off(ft, "interpreter_state.threads_main", UINT64_MAX);
    o->in_code_gen = opt_off(ft, "interpreter_state.code_object_generation", UINT64_MAX);
    o->ts_size = need_off(ft, "thread_state.size");
    o->ts_prev = need_off(ft, "thread_state.prev");
    o->ts_next = need_off(ft, "thread_state.next");
    o->ts_interp = need_off(ft, "thread_state.interp");
    o->ts_current_frame = need_off(ft, "thread_state.current_frame");
    o->ts_base_frame = opt_off(ft, "thread_state.base_frame", UINT64_MAX);
    o->ts_anchor = opt_off(ft, "thread_state.last_profiled_frame", UINT64_MAX);
    o->ts_anchor_seq = opt_off(ft, "thread_state.last_profiled_frame_seq", UINT64_MAX);
    o->ts_thread_id = need_off(ft, "thread_state.thread_id");
    o->ts_native_thread_id = need_off(ft, "thread_state.native_thread_id");
    o->ts_datastack_chunk = need_off(ft, "thread_state.datastack_chunk");
    o->ts_status = need_off(ft, "thread_state.status");
    o->ts_holds_gil = opt_off(ft, "thread_state.holds_gil", UINT64_MAX);
    o->fr_size = need_off(ft, "interpreter_frame.size");
    o->fr_previous = need_off(ft, "interpreter_frame.previous");
    o->fr_executable = need_off(ft, "interpreter_frame.executable");
    o->fr_instr_ptr = need_off(ft, "interpreter_frame.instr_ptr");
    o->fr_localsplus = need_off(ft, "interpreter_frame.localsplus");
    o->fr_owner = need_off(ft, "interpreter_frame.owner");
    o->fr_stackpointer = opt_off(ft, "interpreter_frame.stackpointer", UINT64_MAX);
    o->co_size = need_off(ft, "code_object.size");
    o->co_filename = need_off(ft, "code_object.filename");
    o->co_name = need_off(ft, "code_object.name");
    o->co_qualname = need_off(ft, "code_object.qualname");
    o->co_linetable = need_off(ft, "code_object.linetable");
    o->co_firstlineno = need_off(ft, "code_object.firstlineno");
    o->co_code_adaptive = need_off(ft, "code_object.co_code_adaptive");
    o->ob_type = need_off(ft, "pyobject.ob_type");
    o->ty_size = need_off(ft, "type_object.size");
    o->ty_tp_name = need_off(ft, "type_object.tp_name");
    o->by_ob_size = need_off(ft, "bytes_object.ob_size");
    o->by_ob_sval = need_off(ft, "bytes_object.ob_sval");
    o->un_state = need_off(ft, "unicode_object.state");
    o->un_length = need_off(ft, "unicode_object.length");
    o->un_ascii_size = need_off(ft, "unicode_object.asciiobject_size");
    o->un_compact_size = opt_off(ft, "unicode_object.compactunicodeobject_size",
                                 o->un_ascii_size + 16);
    /* 3.13 publishes no gen_object section; the GIL layout is the same. */
    o->gen_size = opt_off(ft, "gen_object.size", 152);
    o->gen_gi_name = opt_off(ft, "gen_object.gi_name", 24);
    o->gen_gi_iframe = opt_off(ft, "gen_object.gi_iframe", 72);
    o->gen_gi_frame_state = opt_off(ft, "gen_object.gi_frame_state", 67);
    o->str_hash = o->bytes_shash = 24;
    o->str_kind_shift_mul[1] = 1u << 2;
    o->str_kind_shift_mul[2] = 2u << 2;
    o->str_kind_shift_mul[4] = 4u << 2;
    o->str_compact = 1u << 5;
    o->str_ascii = 1u << 6;
    o->str_interned = 1u;
    o->owner_entry = 3;
    o->gen_executing = ft->minor >= 15 ? 4 : 0;
    const ft_layout *l = ft->layout;
    if (l != NULL) { /* what CPython's headers say, not what we assume */
        if (opt_off(ft, "gen_object.size", UINT64_MAX) == UINT64_MAX) {
            o->gen_size = l->gen_size;
            o->gen_gi_name = l->gen_gi_name;
            o->gen_gi_iframe = l->gen_gi_iframe;
            o->gen_gi_frame_state = l->gen_gi_frame_state;
        }
        o->ob_size = l->var_ob_size;
        o->str_hash = l->str_hash;
        o->bytes_shash = l->bytes_shash;
        o->str_kind_shift_mul[1] = l->str_kind1;
        o->str_kind_shift_mul[2] = l->str_kind2;
        o->str_kind_shift_mul[4] = l->str_kind4;
        o->str_compact = l->str_compact;
        o->str_ascii = l->str_ascii;
        o->str_interned = l->str_interned;
        o->owner_entry = (uint8_t)l->owner_entry;
        o->gen_executing = (uint8_t)l->frame_executing;
        if (l->has_tlbc) {
            o->fr_tlbc_index = l->frame_tlbc_index;
            o->co_tlbc = l->co_tlbc;
        }
    }
}

static fake_target *new_image(int minor, uint64_t hexversion, const ft_layout *l)
{
    fake_target *ft = xcalloc(1, sizeof *ft);
    ft->minor = minor;
    ft->hexversion = hexversion;
    ft->layout = l;
    if (l != NULL) {
        if (l->table_len > sizeof ft->table)
            die("layout %s: table of %zu bytes", l->name, l->table_len);
        memcpy(ft->table, l->table, l->table_len);
        ft->table_size = l->table_len;
    } else {
        ft->table_size = pyf_test_fill_offsets(ft->table, sizeof ft->table, minor, hexversion);
    }
    if (ft->table_size == 0)
        die("unknown minor %d", minor);
    resolve_offsets(ft);
    ft->heap_next_region = HEAP_BASE;
    ft->chunk_next = CHUNK_BASE;
    ft->cstack_next = CSTACK_BASE;
    ft->exec_tag = minor >= 14 ? 1u : 0u;

    fake_region(ft, RUNTIME_BASE, ft->o.rt_size);
    fake_write(ft, RUNTIME_BASE, ft->table, ft->table_size);
    record_obj(ft, RUNTIME_BASE, ft->table_size);
    record_obj(ft, RUNTIME_BASE + ft->o.rt_interps_head, 8);

    ft->none_obj = fake_alloc(ft, ft->o.ob_type + 8);
    fake_w64(ft, ft->none_obj, 1);
    fake_w64(ft, ft->none_obj + ft->o.ob_type, fake_type(ft, "NoneType"));
    ft->trampoline = fake_alloc(ft, 16);
    return ft;
}

fake_target *fake_new_hex(int minor, uint64_t hexversion)
{
    return new_image(minor, hexversion, NULL);
}

fake_target *fake_new_layout(const ft_layout *l)
{
    uint64_t hex;
    memcpy(&hex, l->table + 8, 8);
    return new_image(l->minor, hex, l);
}

const ft_layout *fake_layout(const fake_target *ft) { return ft->layout; }

fake_target *fake_new(int minor)
{
    return fake_new_hex(minor, fake_default_hexversion(minor));
}

void fake_free(fake_target *ft)
{
    if (ft == NULL)
        return;
    for (size_t i = 0; i < ft->nregions; i++) {
        free(ft->regions[i].mem);
        free(ft->regions[i].saved);
    }
    for (size_t i = 0; i < ft->ntypes; i++)
        free(ft->types[i].text);
    for (size_t i = 0; i < ft->nstrs; i++)
        free(ft->strs[i].text);
    for (size_t i = 0; i < ft->nthreads; i++)
        free(ft->threads[i]);
    free(ft->regions);
    free(ft->objs);
    free(ft->types);
    free(ft->strs);
    free(ft->threads);
    free(ft->faults);
    free(ft);
}

int fake_minor(const fake_target *ft) { return ft->minor; }
uint64_t fake_runtime_addr(const fake_target *ft) { (void)ft; return RUNTIME_BASE; }

uint64_t fake_off(const fake_target *ft, const char *name)
{
    return pyf_test_offsets_get(ft->table, ft->minor, name);
}

uint64_t fake_offset_addr(const fake_target *ft, const char *name)
{
    size_t off = pyf_test_offsets_field(ft->minor, name);
    if (off == (size_t)-1)
        die("3.%d has no offset %s", ft->minor, name);
    return RUNTIME_BASE + off;
}

void fake_set_offset(fake_target *ft, const char *name, uint64_t value)
{
    fake_w64(ft, fake_offset_addr(ft, name), value);
}

static uint64_t alloc_norec(fake_target *ft, size_t size);

uint64_t fake_alloc(fake_target *ft, size_t size)
{
    uint64_t addr = alloc_norec(ft, size);
    record_obj(ft, addr, size);
    return addr;
}

static uint64_t alloc_norec(fake_target *ft, size_t size)
{
    size_t need = (size_t)align_up(size ? size : 1, 16);
    if (ft->arena_size == 0 || ft->arena_used + need > ft->arena_size) {
        size_t asz = need > ARENA_SIZE ? (size_t)align_up(need, 4096) : ARENA_SIZE;
        ft->arena_base = fake_region(ft, ft->heap_next_region, asz);
        ft->arena_size = asz;
        ft->arena_used = 0;
        ft->heap_next_region += asz + REGION_GAP;
    }
    uint64_t addr = ft->arena_base + ft->arena_used;
    ft->arena_used += need;
    return addr;
}

uint8_t *fake_host(fake_target *ft, uint64_t addr, size_t len)
{
    ft_region *r = find_region(ft, addr, len);
    return r ? r->mem + (addr - r->base) : NULL;
}

void fake_write(fake_target *ft, uint64_t addr, const void *src, size_t len)
{
    uint8_t *p = fake_host(ft, addr, len);
    if (p == NULL)
        die("write of %zu bytes at unmapped 0x%llx", len, (unsigned long long)addr);
    memcpy(p, src, len);
}

void fake_read_raw(const fake_target *ft, uint64_t addr, void *dst, size_t len)
{
    ft_region *r = find_region(ft, addr, len);
    if (r == NULL)
        die("raw read of %zu bytes at unmapped 0x%llx", len, (unsigned long long)addr);
    memcpy(dst, r->mem + (addr - r->base), len);
}

void fake_w8(fake_target *ft, uint64_t addr, uint8_t v) { fake_write(ft, addr, &v, 1); }
void fake_w16(fake_target *ft, uint64_t addr, uint16_t v) { fake_write(ft, addr, &v, 2); }
void fake_w32(fake_target *ft, uint64_t addr, uint32_t v) { fake_write(ft, addr, &v, 4); }
void fake_w64(fake_target *ft, uint64_t addr, uint64_t v) { fake_write(ft, addr, &v, 8); }

uint64_t fake_r64(const fake_target *ft, uint64_t addr)
{
    uint64_t v;
    fake_read_raw(ft, addr, &v, 8);
    return v;
}

uint32_t fake_r32(const fake_target *ft, uint64_t addr)
{
    uint32_t v;
    fake_read_raw(ft, addr, &v, 4);
    return v;
}

uint64_t fake_unmapped_addr(const fake_target *ft)
{
    if (find_region(ft, UNMAPPED_ADDR, 1) != NULL)
        die("unmapped address is mapped");
    return UNMAPPED_ADDR;
}

/* ==== objects ========================================================== */

static uint64_t cstring(fake_target *ft, const char *s)
{
    size_t n = strlen(s) + 1;
    uint64_t a = fake_alloc(ft, n);
    fake_write(ft, a, s, n);
    return a;
}

uint64_t fake_type(fake_target *ft, const char *name)
{
    for (size_t i = 0; i < ft->ntypes; i++)
        if (strcmp(ft->types[i].text, name) == 0)
            return ft->types[i].addr;
    uint64_t t = fake_alloc(ft, ft->o.ty_size);
    uint64_t meta = strcmp(name, "type") == 0 ? t : fake_type(ft, "type");
    fake_w64(ft, t, 1);
    fake_w64(ft, t + ft->o.ob_type, meta);
    fake_w64(ft, t + ft->o.ty_tp_name, cstring(ft, name));
    GROW(ft->types, ft->ntypes, ft->captypes);
    ft->types[ft->ntypes].text = strdup(name);
    ft->types[ft->ntypes].addr = t;
    ft->ntypes++;
    return t;
}

/* Decode valid UTF-8 into code points; returns the count. */
static size_t utf8_decode(const char *s, uint32_t *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (*p) {
        uint32_t c;
        if (*p < 0x80) {
            c = *p++;
        } else if ((*p & 0xE0) == 0xC0) {
            c = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
            p += 2;
        } else if ((*p & 0xF0) == 0xE0) {
            c = (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
            p += 3;
        } else {
            c = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
                (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
            p += 4;
        }
        if (out)
            out[n] = c;
        n++;
    }
    return n;
}

size_t fake_utf8_len(const char *utf8)
{
    return utf8_decode(utf8, NULL);
}

static uint64_t make_str_cp(fake_target *ft, const uint32_t *cp, size_t n,
                            int force_kind, unsigned interned,
                            int statically_allocated)
{
    uint32_t maxc = 0;
    for (size_t i = 0; i < n; i++)
        if (cp[i] > maxc)
            maxc = cp[i];
    int kind = maxc < 0x100 ? 1 : maxc < 0x10000 ? 2 : 4;
    if (force_kind) {
        if (force_kind < kind || (force_kind != 1 && force_kind != 2 && force_kind != 4))
            die("fake_str: kind %d cannot hold the text", force_kind);
        kind = force_kind;
    }
    int ascii = kind == 1 && maxc < 0x80;
    uint64_t hdr = ascii ? ft->o.un_ascii_size : ft->o.un_compact_size;
    uint64_t s = fake_alloc(ft, hdr + (n + 1) * (size_t)kind);
    uint64_t str_type = fake_type(ft, "str");
    fake_w64(ft, s, 1);
    fake_w64(ft, s + ft->o.ob_type, str_type);
    fake_w64(ft, s + ft->o.un_length, n);
    fake_w64(ft, s + ft->o.str_hash, UINT64_MAX); /* hash = -1 */
    uint32_t state;
    if (ft->layout == NULL)
        state = (interned & 3u) | (uint32_t)kind << 2 | 1u << 5 | (uint32_t)ascii << 6 |
                (statically_allocated ? 1u << 7 : 0u);
    else /* the bits CPython's headers put there (statically_allocated unused) */
        state = ft->o.str_kind_shift_mul[kind] | ft->o.str_compact |
                (ascii ? ft->o.str_ascii : 0u) | (interned ? ft->o.str_interned : 0u);
    fake_w32(ft, s + ft->o.un_state, state);
    uint8_t *data = fake_host(ft, s + hdr, (n + 1) * (size_t)kind);
    for (size_t i = 0; i < n; i++) {
        if (kind == 1)
            data[i] = (uint8_t)cp[i];
        else if (kind == 2) {
            uint16_t v = (uint16_t)cp[i];
            memcpy(data + 2 * i, &v, 2);
        } else
            memcpy(data + 4 * i, &cp[i], 4);
    }
    return s;
}

uint64_t fake_str_cp(fake_target *ft, const uint32_t *cp, size_t n, int kind)
{
    return make_str_cp(ft, cp, n, kind, 0, 0);
}

static uint64_t make_str(fake_target *ft, const char *utf8, int force_kind,
                         unsigned interned, int statically_allocated)
{
    if (!fake_valid_utf8(utf8))
        die("fake_str: invalid UTF-8");
    size_t n = utf8_decode(utf8, NULL);
    uint32_t *cp = xcalloc(n + 1, sizeof *cp);
    utf8_decode(utf8, cp);
    uint64_t s = make_str_cp(ft, cp, n, force_kind, interned, statically_allocated);
    free(cp);
    return s;
}

uint64_t fake_str(fake_target *ft, const char *utf8)
{
    for (size_t i = 0; i < ft->nstrs; i++)
        if (strcmp(ft->strs[i].text, utf8) == 0)
            return ft->strs[i].addr;
    uint64_t s = make_str(ft, utf8, 0, 1, 0);
    GROW(ft->strs, ft->nstrs, ft->capstrs);
    ft->strs[ft->nstrs].text = strdup(utf8);
    ft->strs[ft->nstrs].addr = s;
    ft->nstrs++;
    return s;
}

uint64_t fake_str_ex(fake_target *ft, const char *utf8, int force_kind,
                     unsigned interned, int statically_allocated)
{
    return make_str(ft, utf8, force_kind, interned, statically_allocated);
}

uint64_t fake_bytes(fake_target *ft, const void *data, size_t len)
{
    uint64_t b = fake_alloc(ft, ft->o.by_ob_sval + len + 1);
    fake_w64(ft, b, 1);
    fake_w64(ft, b + ft->o.ob_type, fake_type(ft, "bytes"));
    fake_w64(ft, b + ft->o.by_ob_size, len);
    fake_w64(ft, b + ft->o.bytes_shash, UINT64_MAX); /* ob_shash = -1 */
    if (len)
        fake_write(ft, b + ft->o.by_ob_sval, data, len);
    return b;
}

/* ==== line tables ====================================================== */

typedef struct lt_buf {
    uint8_t *p;
    size_t n, cap;
} lt_buf;

static void lt_byte(lt_buf *b, unsigned v)
{
    if (b->n >= b->cap)
        die("line table buffer too small");
    b->p[b->n++] = (uint8_t)v;
}

static void lt_varint(lt_buf *b, unsigned v)
{
    while (v >= 64) {
        lt_byte(b, 64 | (v & 63));
        v >>= 6;
    }
    lt_byte(b, v);
}

static void lt_svarint(lt_buf *b, int v)
{
    unsigned u = v < 0 ? ((unsigned)(-v) << 1) | 1u : (unsigned)v << 1;
    lt_varint(b, u);
}

static void lt_first(lt_buf *b, int code, int len)
{
    lt_byte(b, 0x80u | (unsigned)code << 3 | (unsigned)(len - 1));
}

/* One entry of 1..8 code units, as CPython's write_location_info_entry. */
static void lt_entry(lt_buf *b, int *cur_line, const fake_loc *l, int len)
{
    if (l->line < 0) {
        lt_first(b, 15, len);
        return;
    }
    int delta = l->line - *cur_line;
    int col = l->col, end_col = l->end_col;
    if (col < 0 || end_col < 0) {
        if (l->end_line != l->line)
            die("no-column location must be on one line");
        lt_first(b, 13, len);
        lt_svarint(b, delta);
        *cur_line = l->line;
        return;
    }
    if (l->end_line == l->line) {
        if (delta == 0 && col < 80 && end_col - col < 16 && end_col >= col) {
            int code = col / 8;
            lt_first(b, code, len);
            lt_byte(b, (unsigned)((col % 8) << 4 | (end_col - col)));
            return;
        }
        if (delta >= 0 && delta < 3 && col < 128 && end_col < 128) {
            lt_first(b, 10 + delta, len);
            lt_byte(b, (unsigned)col);
            lt_byte(b, (unsigned)end_col);
            *cur_line = l->line;
            return;
        }
    }
    if (l->end_line < l->line)
        die("end_line before line");
    lt_first(b, 14, len);
    lt_svarint(b, delta);
    lt_varint(b, (unsigned)(l->end_line - l->line));
    lt_varint(b, (unsigned)col + 1);
    lt_varint(b, (unsigned)end_col + 1);
    *cur_line = l->line;
}

size_t fake_encode_linetable(int firstlineno, const fake_loc *locs, size_t n,
                             uint8_t *out, size_t cap)
{
    lt_buf b = {out, 0, cap};
    int cur = firstlineno;
    for (size_t i = 0; i < n; i++) {
        int left = locs[i].ncu;
        if (left < 1)
            die("location run of %d code units", left);
        while (left > 0) {
            int len = left > 8 ? 8 : left;
            lt_entry(&b, &cur, &locs[i], len);
            left -= len;
        }
    }
    return b.n;
}

int fake_loc_at(const fake_loc *locs, size_t n, int idx, fake_loc *found)
{
    int start = 0;
    for (size_t i = 0; i < n; i++) {
        if (idx >= start && idx < start + locs[i].ncu) {
            *found = locs[i];
            if (found->line < 0) {
                found->end_line = found->col = found->end_col = -1;
            } else if (found->col < 0 || found->end_col < 0) {
                found->col = found->end_col = -1;
            }
            return 0;
        }
        start += locs[i].ncu;
    }
    return -1;
}

/* ==== code objects ===================================================== */

uint64_t fake_code_raw(fake_target *ft, uint64_t filename, uint64_t qualname,
                       uint64_t name, uint64_t linetable, int firstlineno,
                       int ncu)
{
    const ft_offs *o = &ft->o;
    size_t size = (size_t)o->co_code_adaptive + 2u * (size_t)(ncu > 0 ? ncu : 1);
    if (size < o->co_size)
        size = o->co_size;
    uint64_t c = fake_alloc(ft, size);
    fake_w64(ft, c, 1);
    fake_w64(ft, c + o->ob_type, fake_type(ft, "code"));
    fake_w64(ft, c + o->co_filename, filename);
    fake_w64(ft, c + o->co_qualname, qualname);
    fake_w64(ft, c + o->co_name, name);
    fake_w64(ft, c + o->co_linetable, linetable);
    fake_w32(ft, c + o->co_firstlineno, (uint32_t)firstlineno);
    /* Some recognisable bytecode: NOP-like opcode pairs. */
    for (int i = 0; i < ncu; i++)
        fake_w16(ft, c + o->co_code_adaptive + 2u * (uint64_t)i, 0x011b);
    if (ft->layout != NULL) {
        fake_w64(ft, c + o->ob_size, (uint64_t)(ncu > 0 ? ncu : 0));
        /* as CPython's init_code: an array of one, the main copy */
        if (o->co_tlbc != 0)
            fake_code_tlbc(ft, c, 1);
    }
    return c;
}

uint64_t fake_code(fake_target *ft, const char *filename, const char *qualname,
                   int firstlineno, const fake_loc *locs, size_t nlocs)
{
    uint8_t buf[8192];
    size_t len = fake_encode_linetable(firstlineno, locs, nlocs, buf, sizeof buf);
    int ncu = 0;
    for (size_t i = 0; i < nlocs; i++)
        ncu += locs[i].ncu;
    const char *dot = strrchr(qualname, '.');
    const char *name = dot ? dot + 1 : qualname;
    return fake_code_raw(ft, fake_str(ft, filename), fake_str(ft, qualname),
                         fake_str(ft, name), fake_bytes(ft, buf, len),
                         firstlineno, ncu);
}

/* ==== interpreters, threads, frames ==================================== */

uint64_t fake_add_interp(fake_target *ft, int64_t id)
{
    const ft_offs *o = &ft->o;
    uint64_t in;
    if (ft->ninterps == 0) {
        in = (RUNTIME_BASE + o->rt_size - o->in_size) & ~63ull;
        if (in < RUNTIME_BASE + 1024)
            die("runtime too small for the main interpreter");
    } else {
        in = alloc_norec(ft, o->in_size);
    }
    /* for targeted corruption: the fields the walk reads, not the whole
     * (mostly irrelevant) interpreter state */
    uint64_t lo = o->in_next < o->in_id ? o->in_next : o->in_id;
    uint64_t hi = o->in_threads_head;
    if (o->in_threads_main != UINT64_MAX && o->in_threads_main > hi)
        hi = o->in_threads_main;
    if (o->in_id > hi)
        hi = o->in_id;
    record_obj(ft, in + lo, (size_t)(hi + 8 - lo));
    if (o->in_code_gen != UINT64_MAX)
        record_obj(ft, in + o->in_code_gen, 8);
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
    th->current = frame;
    fake_w64(th->ft, th->addr + th->ft->o.ts_current_frame, frame);
}

fake_thread *fake_add_thread(fake_target *ft, uint64_t interp,
                             uint64_t thread_id, uint64_t native_tid, int entry)
{
    const ft_offs *o = &ft->o;
    size_t impl = (size_t)o->ts_size + 512;
    uint64_t ts = fake_alloc(ft, impl);
    fake_thread *th = xcalloc(1, sizeof *th);
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
    fake_w64(ft, ts + o->ts_native_thread_id, native_tid);
    fake_w32(ft, ts + o->ts_status, 0x13); /* initialized, bound, active */

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
        die("holds_gil needs 3.15");
    fake_w32(th->ft, th->addr + th->ft->o.ts_holds_gil, (uint32_t)v);
}

uint64_t fake_push_entry(fake_thread *th, int owner_override)
{
    fake_target *ft = th->ft;
    if (th->cstack == 0) {
        th->cstack = fake_region(ft, ft->cstack_next, CSTACK_SIZE);
        ft->cstack_next += 0x200000;
    }
    size_t fsize = (size_t)align_up(ft->o.fr_size, 16);
    if (th->cstack_used + fsize > CSTACK_SIZE)
        die("C stack region full");
    uint64_t f = th->cstack + th->cstack_used;
    th->cstack_used += fsize;
    uint8_t owner = owner_override >= 0 ? (uint8_t)owner_override : ft->o.owner_entry;
    make_frame(ft, f, ft->none_obj | ft->exec_tag, th->current, ft->trampoline, owner);
    record_obj(ft, f, (size_t)ft->o.fr_size);
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
        record_obj(ft, c, 24);
        fake_w64(ft, th->addr + o->ts_datastack_chunk, c);
    }
    uint64_t f = th->chunk + 24 + th->chunk_used;
    th->chunk_used += fsize;
    uint64_t ip = code + o->co_code_adaptive + 2u * (uint64_t)instr_index;
    make_frame(ft, f, code | ft->exec_tag, th->current, ip, 0);
    record_obj(ft, f, (size_t)o->fr_size);
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

/* ==== the reader ======================================================= */

static int read_range(fake_target *ft, uint64_t addr, void *dst, size_t len)
{
    if (len == 0)
        return 0;
    if (addr + len < addr)
        return PYF_EFAULT;
    if (ft->watch_fn != NULL && ft->watch_addr == addr) {
        void (*fn)(fake_target *, void *) = ft->watch_fn;
        ft->watch_fn = NULL;
        fn(ft, ft->watch_arg); /* the process moves on before this read */
    }
    for (size_t i = 0; i < ft->nfaults; i++) {
        const ft_fault *f = &ft->faults[i];
        if (addr < f->addr + f->len && f->addr < addr + len)
            return f->code;
    }
    if (ft->short_over && len > ft->short_over)
        return PYF_EIO;
    ft_region *r = find_region(ft, addr, len);
    if (r == NULL)
        return PYF_EFAULT;
    memcpy(dst, r->mem + (addr - r->base), len);
    ft->cnt.bytes += len;
    return 0;
}

static int injected(fake_target *ft)
{
    if (ft->fail_at == 0)
        return 0;
    if (ft->cnt.calls == ft->fail_at || (ft->fail_sticky && ft->cnt.calls > ft->fail_at))
        return 1;
    return 0;
}

static int fake_read_cb(void *arg, uint64_t addr, void *dst, size_t len)
{
    fake_target *ft = arg;
    ft->cnt.calls++;
    ft->cnt.ranges++;
    int rc = injected(ft) ? ft->fail_code : read_range(ft, addr, dst, len);
    if (rc)
        ft->cnt.failures++;
    return rc;
}

static int fake_readv_cb(void *arg, const pyf_iovec *iov, size_t n, int *status)
{
    fake_target *ft = arg;
    ft->cnt.calls++;
    ft->cnt.ranges += n;
    int inj = injected(ft);
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = inj ? ft->fail_code : read_range(ft, iov[i].addr, iov[i].dst, iov[i].len);
        if (status)
            status[i] = rc;
        if (rc && first == 0)
            first = rc;
    }
    if (first)
        ft->cnt.failures++;
    return first;
}

/* Writes land in the image where it is mapped (counted); EFAULT elsewhere. */
static int fake_write_cb(void *arg, uint64_t addr, const void *src, size_t len)
{
    fake_target *ft = arg;
    uint8_t probe[64];
    if (len > sizeof probe || read_range(ft, addr, probe, len) != 0)
        return PYF_EFAULT;
    fake_write(ft, addr, src, len);
    ft->cnt.writes++;
    return PYF_OK;
}

pyf_reader fake_reader(fake_target *ft, int with_readv)
{
    pyf_reader r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.read = fake_read_cb;
    r.readv = with_readv ? fake_readv_cb : NULL;
    r.write = ft->writable ? fake_write_cb : NULL;
    r.arg = ft;
    return r;
}

void fake_add_fault(fake_target *ft, uint64_t addr, uint64_t len, int code)
{
    GROW(ft->faults, ft->nfaults, ft->capfaults);
    ft->faults[ft->nfaults].addr = addr;
    ft->faults[ft->nfaults].len = len;
    ft->faults[ft->nfaults].code = code;
    ft->nfaults++;
}

void fake_clear_faults(fake_target *ft)
{
    ft->nfaults = 0;
}

void fake_fail_nth(fake_target *ft, uint64_t n, int code, int sticky)
{
    ft->fail_at = n ? ft->cnt.calls + n : 0;
    ft->fail_code = code;
    ft->fail_sticky = sticky;
}

void fake_short_reads_over(fake_target *ft, size_t max)
{
    ft->short_over = max;
}

void fake_on_read(fake_target *ft, uint64_t addr, void (*fn)(fake_target *, void *), void *arg)
{
    ft->watch_addr = addr;
    ft->watch_fn = fn;
    ft->watch_arg = arg;
}

fake_counters fake_get_counters(const fake_target *ft)
{
    return ft->cnt;
}

void fake_reset_counters(fake_target *ft)
{
    uint64_t pending = ft->fail_at ? ft->fail_at - ft->cnt.calls : 0;
    memset(&ft->cnt, 0, sizeof ft->cnt);
    if (ft->fail_at)
        ft->fail_at = pending;
}

/* ==== image snapshots / corruption ===================================== */

void fake_save(fake_target *ft)
{
    for (size_t i = 0; i < ft->nregions; i++) {
        ft_region *r = &ft->regions[i];
        if (r->saved == NULL)
            r->saved = xcalloc(1, r->size);
        memcpy(r->saved, r->mem, r->size);
    }
}

void fake_restore(fake_target *ft)
{
    for (size_t i = 0; i < ft->nregions; i++) {
        ft_region *r = &ft->regions[i];
        if (r->saved)
            memcpy(r->mem, r->saved, r->size);
    }
}

size_t fake_nobjects(const fake_target *ft) { return ft->nobjs; }

void fake_object(const fake_target *ft, size_t i, uint64_t *addr, size_t *size)
{
    if (i >= ft->nobjs)
        die("object %zu out of range", i);
    *addr = ft->objs[i].addr;
    *size = ft->objs[i].size;
}

/* ==== snapshot checks ================================================== */

int fake_known_error(int code)
{
    return code <= 0 && code >= PYF_ENOTHREAD;
}

int fake_valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        uint32_t c;
        int n;
        if (*p < 0x80) {
            p++;
            continue;
        } else if (p[0] == 0xC0 && p[1] == 0x80) {
            p += 2; /* U+0000, as pyframes.h writes it */
            continue;
        } else if ((*p & 0xE0) == 0xC0) {
            c = *p & 0x1F;
            n = 1;
        } else if ((*p & 0xF0) == 0xE0) {
            c = *p & 0x0F;
            n = 2;
        } else if ((*p & 0xF8) == 0xF0) {
            c = *p & 0x07;
            n = 3;
        } else {
            return 0;
        }
        for (int i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return 0;
            c = c << 6 | (p[i] & 0x3F);
        }
        if ((n == 1 && c < 0x80) || (n == 2 && c < 0x800) || (n == 3 && c < 0x10000))
            return 0; /* overlong */
        if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return 0;
        p += n + 1;
    }
    return 1;
}

const char *fake_check_snapshot(const pyf_snapshot *s)
{
    if (s == NULL)
        return "snapshot is NULL";
    if (s->ninterps && s->interps == NULL)
        return "interps NULL";
    if (s->nthreads && s->threads == NULL)
        return "threads NULL";
    if (s->interp_size != sizeof(pyf_interp) || s->thread_size != sizeof(pyf_thread) ||
        s->frame_size != sizeof(pyf_frame))
        return "array strides differ from the frozen element sizes";
    if (s->nframes && s->frames == NULL)
        return "frames NULL";
    for (uint32_t i = 0; i < s->ninterps; i++) {
        const pyf_interp *in = &s->interps[i];
        if ((uint64_t)in->first_thread + in->nthreads > s->nthreads)
            return "interp thread range out of bounds";
        for (uint32_t k = 0; k < in->nthreads; k++)
            if (s->threads[in->first_thread + k].interp_index != i)
                return "thread of an interp range has another interp_index";
    }
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const pyf_thread *t = &s->threads[i];
        if (t->interp_index >= s->ninterps)
            return "thread interp_index out of bounds";
        if ((uint64_t)t->first_frame + t->nframes > s->nframes)
            return "thread frame range out of bounds";
        if (!fake_known_error(t->error))
            return "thread error is not a PYF_E* code";
        if ((t->error == 0) != (t->failure == NULL))
            return "failure present exactly when error != 0";
        if (t->failure != NULL && (t->failure->code != t->error || t->failure->detail[0] == '\0'))
            return "failure's code differs from error, or it has no detail";
        if ((t->flags & PYF_THREAD_COMPLETE) && t->error != 0)
            return "thread COMPLETE with an error";
        if (t->flags & ~0x1Fu)
            return "unknown thread flag";
    }
    for (uint32_t i = 0; i < s->nframes; i++) {
        const pyf_frame *f = &s->frames[i];
        if (f->function == NULL || f->filename == NULL)
            return "frame string NULL";
        if (!fake_valid_utf8(f->function) || !fake_valid_utf8(f->filename))
            return "frame string not valid UTF-8";
        if (f->flags & ~0x1Fu)
            return "unknown frame flag";
    }
    /* the frame table agrees with the frames, frame by frame */
    pyf_frame_table tab;
    tab.struct_size = sizeof tab;
    if (pyf_snapshot_table(s, &tab) != 0)
        return "pyf_snapshot_table failed";
    if (tab.table_id == 0 || tab.nframes != s->nframes ||
        tab.record_size != sizeof(pyf_record) || tab.key_size != sizeof(pyf_frame_key))
        return "frame table header (id, nframes, strides) wrong";
    if ((tab.nframes && tab.frame_keys == NULL) || (tab.nkeys && tab.keys == NULL) ||
        (tab.nrecords && tab.records == NULL))
        return "frame table array NULL";
    for (uint32_t i = 0; i < s->nframes; i++) {
        const pyf_frame *f = &s->frames[i];
        if (tab.frame_keys[i] >= tab.nkeys)
            return "frame key out of bounds";
        const pyf_frame_key *k = &tab.keys[tab.frame_keys[i]];
        if (k->record >= tab.nrecords)
            return "key's record out of bounds";
        const pyf_record *r = &tab.records[k->record];
        if (k->frame_addr != f->frame_addr || r->code_addr != f->code_addr ||
            r->function != f->function || r->filename != f->filename ||
            r->line != f->line || r->end_line != f->end_line || r->column != f->column ||
            r->end_column != f->end_column || r->flags != f->flags)
            return "frame differs from its key and record";
    }
    return NULL;
}

pyf_target *fake_open(fake_target *ft, const pyf_options *opts, int with_readv)
{
    pyf_reader r = fake_reader(ft, with_readv);
    pyf_target *t = NULL;
    char err[512] = "";
    int rc = fake_open_detail(&r, fake_runtime_addr(ft), opts, &t, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "fake_open(3.%d): %s (%d): %s\n", ft->minor,
                pyf_error_name(rc), rc, err);
        return NULL;
    }
    return t;
}

int fake_find_thread(const pyf_snapshot *s, uint64_t native_tid)
{
    for (uint32_t i = 0; i < s->nthreads; i++)
        if (s->threads[i].native_thread_id == native_tid)
            return (int)i;
    return -1;
}

void fake_dump_snapshot(const pyf_snapshot *s, FILE *out)
{
    if (s == NULL) {
        fprintf(out, "  (no snapshot)\n");
        return;
    }
    for (uint32_t i = 0; i < s->ninterps; i++)
        fprintf(out, "  interp[%u] id=%lld addr=0x%llx threads=%u+%u\n", i,
                (long long)s->interps[i].id, (unsigned long long)s->interps[i].addr,
                s->interps[i].first_thread, s->interps[i].nthreads);
    for (uint32_t i = 0; i < s->nthreads; i++) {
        const pyf_thread *t = &s->threads[i];
        fprintf(out, "  thread[%u] ts=0x%llx tid=0x%llx native=%llu interp=%u flags=0x%x "
                "error=%s '%s' frames=%u+%u\n", i, (unsigned long long)t->tstate_addr,
                (unsigned long long)t->thread_id, (unsigned long long)t->native_thread_id,
                t->interp_index, t->flags, pyf_error_name(t->error),
                fake_thread_detail(t), t->first_frame, t->nframes);
        for (uint32_t k = 0; k < t->nframes && t->first_frame + k < s->nframes; k++) {
            const pyf_frame *f = &s->frames[t->first_frame + k];
            fprintf(out, "    #%u %s (%s:%d-%d:%d-%d) flags=0x%x frame=0x%llx code=0x%llx\n",
                    k, f->function, f->filename, f->line, f->end_line, f->column,
                    f->end_column, f->flags, (unsigned long long)f->frame_addr,
                    (unsigned long long)f->code_addr);
        }
    }
}

int fake_open_detail(const pyf_reader *r, uint64_t runtime_addr, const pyf_options *opts,
                     pyf_target **out, char *err, size_t errlen)
{
    pyf_failure f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    int rc = pyf_target_open(r, runtime_addr, opts, out, err ? &f : NULL);
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", f.detail);
    if (err != NULL && f.code != rc)
        CHECK_MSG(f.code == rc, "failure code %d, returned %d", f.code, rc);
    return rc;
}

const char *fake_thread_detail(const pyf_thread *th)
{
    return th->failure ? th->failure->detail : "";
}

const char *fake_last_detail(const pyf_target *t)
{
    static pyf_failure f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    if (pyf_target_failure(t, &f) != PYF_OK)
        return "(pyf_target_failure failed)";
    return f.detail;
}

/* ==== thread-local bytecode (free-threaded 3.14+) ======================== */

static void need_tlbc(const fake_target *ft)
{
    if (ft->o.co_tlbc == 0)
        die("thread-local bytecode needs a free-threaded 3.14+ layout");
}

static int code_units(const fake_target *ft, uint64_t code)
{
    return (int)fake_r64(ft, code + ft->o.ob_size);
}

uint64_t fake_code_tlbc(fake_target *ft, uint64_t code, int size)
{
    need_tlbc(ft);
    const ft_layout *l = ft->layout;
    if (size < 1)
        die("a _PyCodeArray holds at least the main copy");
    uint64_t a = fake_alloc(ft, l->codearray_entries + (size_t)size * l->codearray_entry_size);
    fake_w64(ft, a + l->codearray_size, (uint64_t)size);
    fake_w64(ft, a + l->codearray_entries, code + ft->o.co_code_adaptive);
    fake_w64(ft, code + ft->o.co_tlbc, a);
    return a;
}

uint64_t fake_code_tlbc_array(const fake_target *ft, uint64_t code)
{
    need_tlbc(ft);
    return fake_r64(ft, code + ft->o.co_tlbc);
}

uint64_t fake_code_tlbc_entry(const fake_target *ft, uint64_t code, int idx)
{
    const ft_layout *l = ft->layout;
    uint64_t a = fake_code_tlbc_array(ft, code);
    if (idx < 0 || (uint64_t)idx >= fake_r64(ft, a + l->codearray_size))
        die("tlbc index %d outside the array", idx);
    return fake_r64(ft, a + l->codearray_entries + (uint64_t)idx * l->codearray_entry_size);
}

uint64_t fake_code_tlbc_fill(fake_target *ft, uint64_t code, int idx)
{
    const ft_layout *l = ft->layout;
    uint64_t a = fake_code_tlbc_array(ft, code);
    if (idx < 1 || (uint64_t)idx >= fake_r64(ft, a + l->codearray_size))
        die("tlbc slot %d outside the array", idx);
    int ncu = code_units(ft, code);
    uint64_t copy = fake_alloc(ft, 2u * (size_t)(ncu > 0 ? ncu : 1));
    for (int i = 0; i < ncu; i++) /* a thread's specialized copy */
        fake_w16(ft, copy + 2u * (uint64_t)i, (uint16_t)(0x2200 + idx));
    fake_w64(ft, a + l->codearray_entries + (uint64_t)idx * l->codearray_entry_size, copy);
    return copy;
}

uint64_t fake_code_tlbc_grow(fake_target *ft, uint64_t code, int size)
{
    const ft_layout *l = ft->layout;
    uint64_t old = fake_code_tlbc_array(ft, code);
    int64_t had = (int64_t)fake_r64(ft, old + l->codearray_size);
    if (size < had)
        die("a _PyCodeArray only grows");
    /* CPython's resize_array: a new array, the old one freed later (QSBR) */
    uint64_t a = fake_alloc(ft, l->codearray_entries + (size_t)size * l->codearray_entry_size);
    fake_w64(ft, a + l->codearray_size, (uint64_t)size);
    for (int64_t i = 0; i < had; i++)
        fake_w64(ft, a + l->codearray_entries + (uint64_t)i * l->codearray_entry_size,
                 fake_r64(ft, old + l->codearray_entries + (uint64_t)i * l->codearray_entry_size));
    fake_w64(ft, code + ft->o.co_tlbc, a);
    return a;
}

void fake_frame_set_tlbc(fake_target *ft, uint64_t frame, int32_t idx, uint64_t instr_ptr)
{
    need_tlbc(ft);
    fake_w32(ft, frame + ft->o.fr_tlbc_index, (uint32_t)idx);
    fake_w64(ft, frame + ft->o.fr_instr_ptr, instr_ptr);
}
