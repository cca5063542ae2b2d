/*
 * fake_image.c - the image: regions, the offsets the builders use, raw
 * memory, allocation, snapshots of the bytes.
 * See fake_target.h.
 */
#include "fake_internal.h"

#include <stdarg.h>
#include <string.h>

void ft_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fake_target: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void *ft_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (p == NULL)
        ft_die("out of memory");
    return p;
}

void *ft_xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (q == NULL)
        ft_die("out of memory");
    return q;
}

uint64_t fake_layout_off(const ft_layout *l, const char *name)
{
    if (l->pairs == NULL)
        return pyf_test_offsets_get(l->table, l->minor, name);
    for (const ft_pair *p = l->pairs; p->name != NULL; p++)
        if (strcmp(p->name, name) == 0)
            return p->value;
    return UINT64_MAX;
}

/* An offset of the image's table, or of its layout's pairs (3.11, 3.12). */
static uint64_t image_off(const fake_target *ft, const char *name)
{
    if (ft->layout != NULL && ft->layout->pairs != NULL)
        return fake_layout_off(ft->layout, name);
    return pyf_test_offsets_get(ft->table, ft->minor, name);
}

static uint64_t need_off(const fake_target *ft, const char *name)
{
    uint64_t v = image_off(ft, name);
    if (v == UINT64_MAX)
        ft_die("3.%d has no offset %s", ft->minor, name);
    return v;
}

static uint64_t opt_off(const fake_target *ft, const char *name, uint64_t dflt)
{
    uint64_t v = image_off(ft, name);
    return v == UINT64_MAX ? dflt : v;
}

void ft_record_obj(fake_target *ft, uint64_t addr, size_t size)
{
    GROW(ft->objs, ft->nobjs, ft->capobjs);
    ft->objs[ft->nobjs].addr = addr;
    ft->objs[ft->nobjs].size = size;
    ft->nobjs++;
}

ft_region *ft_find_region(const fake_target *ft, uint64_t addr, size_t len)
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
    case 8: return 0x030812f0ull;
    case 9: return 0x030912f0ull;
    case 10: return 0x030a0df0ull;
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
            ft_die("region 0x%llx+%zu overlaps another", (unsigned long long)base, size);
    }
    GROW(ft->regions, ft->nregions, ft->capregions);
    ft_region *r = &ft->regions[ft->nregions++];
    r->base = base;
    r->size = size;
    r->mem = ft_xcalloc(1, size);
    r->saved = NULL;
    return base;
}

/* The offsets the builders use, from the table: NEED ones must be there,
 * an OPT one is UINT64_MAX when absent (some have a default below). */
typedef struct ft_off_name {
    size_t field; /* offsetof(ft_offs, ...) */
    const char *name;
    int needed;   /* 2: where frames live on a data stack (3.11+) */
} ft_off_name;

#define NEED(f, name) {offsetof(ft_offs, f), name, 1}
#define OPT(f, name) {offsetof(ft_offs, f), name, 0}
#define STACK(f, name) {offsetof(ft_offs, f), name, 2}
static const ft_off_name k_offs[] = {
    NEED(rt_size, "runtime_state.size"),
    NEED(rt_interps_head, "runtime_state.interpreters_head"),
    NEED(in_size, "interpreter_state.size"),
    NEED(in_id, "interpreter_state.id"),
    NEED(in_next, "interpreter_state.next"),
    NEED(in_threads_head, "interpreter_state.threads_head"),
    OPT(in_threads_main, "interpreter_state.threads_main"),
    OPT(in_code_gen, "interpreter_state.code_object_generation"),
    NEED(ts_size, "thread_state.size"),
    NEED(ts_prev, "thread_state.prev"),
    NEED(ts_next, "thread_state.next"),
    NEED(ts_interp, "thread_state.interp"),
    OPT(ts_current_frame, "thread_state.current_frame"), /* 3.13+ */
    OPT(ts_base_frame, "thread_state.base_frame"),
    OPT(ts_anchor, "thread_state.last_profiled_frame"),
    OPT(ts_anchor_seq, "thread_state.last_profiled_frame_seq"),
    NEED(ts_thread_id, "thread_state.thread_id"),
    STACK(ts_native_thread_id, "thread_state.native_thread_id"),
    STACK(ts_datastack_chunk, "thread_state.datastack_chunk"),
    OPT(ts_status, "thread_state.status"), /* 3.13+ */
    OPT(ts_holds_gil, "thread_state.holds_gil"),
    STACK(fr_size, "interpreter_frame.size"),
    STACK(fr_previous, "interpreter_frame.previous"),
    STACK(fr_executable, "interpreter_frame.executable"),
    STACK(fr_instr_ptr, "interpreter_frame.instr_ptr"),
    STACK(fr_localsplus, "interpreter_frame.localsplus"),
    STACK(fr_owner, "interpreter_frame.owner"),
    OPT(fr_stackpointer, "interpreter_frame.stackpointer"),
    NEED(co_size, "code_object.size"),
    NEED(co_filename, "code_object.filename"),
    NEED(co_name, "code_object.name"),
    STACK(co_qualname, "code_object.qualname"),
    NEED(co_linetable, "code_object.linetable"),
    NEED(co_firstlineno, "code_object.firstlineno"),
    STACK(co_code_adaptive, "code_object.co_code_adaptive"),
    NEED(ob_type, "pyobject.ob_type"),
    NEED(ty_size, "type_object.size"),
    NEED(ty_tp_name, "type_object.tp_name"),
    NEED(by_ob_size, "bytes_object.ob_size"),
    NEED(by_ob_sval, "bytes_object.ob_sval"),
    NEED(un_state, "unicode_object.state"),
    NEED(un_length, "unicode_object.length"),
    NEED(un_ascii_size, "unicode_object.asciiobject_size"),
    OPT(un_compact_size, "unicode_object.compactunicodeobject_size"),
    OPT(rt_interps_main, "runtime_state.interpreters_main"),
    OPT(rt_main_interp, "runtime_state.main_interpreter"),
    OPT(in_sysdict, "interpreter_state.sysdict"),
    OPT(ts_cframe, "thread_state.cframe"),
    OPT(ts_root_cframe, "thread_state.root_cframe"),
    OPT(cf_current_frame, "cframe.current_frame"),
    OPT(fr_stacktop, "interpreter_frame.stacktop"),
    OPT(ts_frame, "thread_state.frame"), /* 3.8-3.10 */
};
#undef NEED
#undef OPT
#undef STACK

static void resolve_offsets(fake_target *ft)
{
    ft_offs *o = &ft->o;
    for (size_t i = 0; i < sizeof k_offs / sizeof k_offs[0]; i++) {
        int needed = k_offs[i].needed == 1 || (k_offs[i].needed == 2 && !ft_heap_frames(ft));
        uint64_t v = needed ? need_off(ft, k_offs[i].name)
                            : opt_off(ft, k_offs[i].name, UINT64_MAX);
        memcpy((char *)o + k_offs[i].field, &v, sizeof v);
    }
    if (o->un_compact_size == UINT64_MAX)
        o->un_compact_size = o->un_ascii_size + 16;
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
    /* 3.13-3.15 (Include/cpython/code.h): co_flags, then four more ints,
     * then co_firstlineno; test_free_threaded checks it in every layout */
    o->co_flags = o->co_firstlineno - 20;
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
        o->co_flags = l->co_flags;
        o->gen_executing = (uint8_t)l->frame_executing;
        if (l->has_tlbc) {
            o->fr_tlbc_index = l->frame_tlbc_index;
            o->co_tlbc = l->co_tlbc;
        }
    }
}

static fake_target *new_image(int minor, uint64_t hexversion, const ft_layout *l)
{
    fake_target *ft = ft_xcalloc(1, sizeof *ft);
    ft->minor = minor;
    ft->hexversion = hexversion;
    ft->layout = l;
    if (l != NULL && l->pairs != NULL) {
        ft->table_size = 0; /* 3.11, 3.12: no table, the pairs' offsets */
    } else if (l != NULL) {
        if (l->table_len > sizeof ft->table)
            ft_die("layout %s: table of %zu bytes", l->name, l->table_len);
        memcpy(ft->table, l->table, l->table_len);
        ft->table_size = l->table_len;
    } else {
        ft->table_size = pyf_test_fill_offsets(ft->table, sizeof ft->table, minor, hexversion);
    }
    if (ft->table_size == 0 && (l == NULL || l->pairs == NULL))
        ft_die("unknown minor %d", minor);
    resolve_offsets(ft);
    ft->heap_next_region = HEAP_BASE;
    ft->chunk_next = CHUNK_BASE;
    ft->cstack_next = CSTACK_BASE;
    ft->exec_tag = minor >= 14 ? 1u : 0u;

    fake_region(ft, RUNTIME_BASE, ft->o.rt_size);
    if (ft->table_size != 0) {
        fake_write(ft, RUNTIME_BASE, ft->table, ft->table_size);
        ft_record_obj(ft, RUNTIME_BASE, ft->table_size);
    }
    ft_record_obj(ft, RUNTIME_BASE + ft->o.rt_interps_head, 8);

    ft->none_obj = fake_alloc(ft, ft->o.ob_type + 8);
    fake_w64(ft, ft->none_obj, 1);
    fake_w64(ft, ft->none_obj + ft->o.ob_type, fake_type(ft, "NoneType"));
    ft->trampoline = fake_alloc(ft, 16);
    if (ft->table_size == 0) { /* 3.8-3.12: known by the runtime's shape */
        uint64_t in = fake_add_interp(ft, 0);
        uint64_t kv[2] = {fake_str(ft, "hexversion"), fake_int(ft, (int64_t)hexversion)};
        fake_w64(ft, in + ft->o.in_sysdict, fake_dict(ft, kv, 1, 1));
        ft->main_interp = in; /* the first fake_add_interp's */
    }
    return ft;
}

fake_target *fake_new_hex(int minor, uint64_t hexversion)
{
    return new_image(minor, hexversion, NULL);
}

fake_target *fake_new_layout(const ft_layout *l)
{
    return new_image(l->minor, l->hexversion, l);
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
    return image_off(ft, name);
}

uint64_t fake_offset_addr(const fake_target *ft, const char *name)
{
    if (ft->table_size == 0)
        ft_die("a 3.%d image has no table", ft->minor);
    size_t off = pyf_test_offsets_field(ft->minor, name);
    if (off == (size_t)-1)
        ft_die("3.%d has no offset %s", ft->minor, name);
    return RUNTIME_BASE + off;
}

void fake_set_offset(fake_target *ft, const char *name, uint64_t value)
{
    fake_w64(ft, fake_offset_addr(ft, name), value);
}

uint64_t fake_alloc(fake_target *ft, size_t size)
{
    uint64_t addr = ft_alloc_norec(ft, size);
    ft_record_obj(ft, addr, size);
    return addr;
}

uint64_t ft_alloc_norec(fake_target *ft, size_t size)
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
    ft_region *r = ft_find_region(ft, addr, len);
    return r ? r->mem + (addr - r->base) : NULL;
}

void fake_write(fake_target *ft, uint64_t addr, const void *src, size_t len)
{
    uint8_t *p = fake_host(ft, addr, len);
    if (p == NULL)
        ft_die("write of %zu bytes at unmapped 0x%llx", len, (unsigned long long)addr);
    memcpy(p, src, len);
}

void fake_read_raw(const fake_target *ft, uint64_t addr, void *dst, size_t len)
{
    ft_region *r = ft_find_region(ft, addr, len);
    if (r == NULL)
        ft_die("raw read of %zu bytes at unmapped 0x%llx", len, (unsigned long long)addr);
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
    if (ft_find_region(ft, UNMAPPED_ADDR, 1) != NULL)
        ft_die("unmapped address is mapped");
    return UNMAPPED_ADDR;
}

/* ==== image snapshots / corruption ===================================== */

void fake_save(fake_target *ft)
{
    for (size_t i = 0; i < ft->nregions; i++) {
        ft_region *r = &ft->regions[i];
        if (r->saved == NULL)
            r->saved = ft_xcalloc(1, r->size);
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
        ft_die("object %zu out of range", i);
    *addr = ft->objs[i].addr;
    *size = ft->objs[i].size;
}
