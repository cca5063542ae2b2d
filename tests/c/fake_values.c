/*
 * fake_values.c - objects a frame can hold, for the value decoder's tests:
 * numbers, containers, dicts (combined, unicode-keyed, split), sets,
 * types (static and heap), instances (managed dicts, inline values),
 * functions, methods, modules, cells, generators, exceptions, frames with
 * locals.  Laid out from a layout CPython's headers gave (fake_new_layout:
 * ft_layout.h, its .values), never from the library's own tables; but for
 * 3.8-3.10 (fake_new_heap), whose layout is the library's built-in table
 * (checked against their headers by the builtin_tables test).
 * See fake_target.h.
 */
#include "fake_internal.h"

#include <string.h>

static const ft_layout *lay(const fake_target *ft)
{
    if (ft->layout == NULL)
        ft_die("fake_values: the image needs a layout from CPython's headers");
    return ft->layout;
}

uint64_t fake_obj(fake_target *ft, uint64_t type, size_t size)
{
    uint64_t a = fake_alloc(ft, size < 64 ? 64 : size);
    fake_w64(ft, a, 1);
    fake_w64(ft, a + ft->o.ob_type, type);
    return a;
}

static uint64_t obj(fake_target *ft, const char *type, size_t size)
{
    return fake_obj(ft, fake_type(ft, type), size);
}

uint64_t fake_singleton(fake_target *ft, const char *type)
{
    if (strcmp(type, "NoneType") == 0)
        return ft->none_obj;
    return obj(ft, type, 0);
}

/* An int's header: lv_tag (3.12+: the digit count over the sign), or
 * ob_size (3.11: the digit count, negative for a negative int). */
static void int_head(fake_target *ft, uint64_t a, int sign, size_t n)
{
    uint64_t lv = fake_off(ft, "long_object.lv_tag");
    if (lv != UINT64_MAX) {
        unsigned bits = sign < 0 ? 2 : sign == 0 ? 1 : 0;
        fake_w64(ft, a + lv, (uint64_t)n << 3 | bits);
    } else {
        fake_w64(ft, a + fake_off(ft, "long_object.ob_size"),
                 sign < 0 ? (uint64_t)0 - n : sign == 0 ? 0 : n);
    }
}

uint64_t fake_int_digits(fake_target *ft, int sign, const uint32_t *digits, size_t n)
{
    uint64_t od = fake_off(ft, "long_object.ob_digit");
    uint64_t a = obj(ft, "int", od + 4 * (n ? n : 1));
    int_head(ft, a, sign, n);
    for (size_t i = 0; i < n; i++)
        fake_w32(ft, a + od + 4 * i, digits[i]);
    return a;
}

uint64_t fake_int(fake_target *ft, int64_t v)
{
    uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    uint32_t d[3];
    size_t n = 0;
    for (; mag != 0; mag >>= 30)
        d[n++] = (uint32_t)(mag & 0x3fffffff);
    return fake_int_digits(ft, v < 0 ? -1 : v > 0, d, n);
}

uint64_t fake_bool(fake_target *ft, int v)
{
    uint64_t od = fake_off(ft, "long_object.ob_digit");
    uint64_t a = obj(ft, "bool", od + 4);
    int_head(ft, a, v ? 1 : 0, v ? 1 : 0);
    fake_w32(ft, a + od, v ? 1 : 0);
    return a;
}

uint64_t fake_float(fake_target *ft, double v)
{
    uint64_t a = obj(ft, "float", 64);
    fake_write(ft, a + fake_off(ft, "float_object.ob_fval"), &v, 8);
    return a;
}

uint64_t fake_complex(fake_target *ft, double re, double im)
{
    uint64_t a = obj(ft, "complex", 64);
    fake_write(ft, a + lay(ft)->values.complex_real, &re, 8);
    fake_write(ft, a + lay(ft)->values.complex_imag, &im, 8);
    return a;
}

uint64_t fake_bytearray(fake_target *ft, const void *data, size_t len)
{
    uint64_t a = obj(ft, "bytearray", 96);
    uint64_t buf = fake_alloc(ft, len + 1);
    fake_write(ft, buf, data, len);
    fake_w64(ft, a + lay(ft)->var_ob_size, len);
    fake_w64(ft, a + lay(ft)->values.bytearray_start, buf);
    return a;
}

uint64_t fake_tuple(fake_target *ft, const uint64_t *items, size_t n)
{
    uint64_t oi = fake_off(ft, "tuple_object.ob_item");
    uint64_t a = obj(ft, "tuple", oi + 8 * n);
    fake_w64(ft, a + fake_off(ft, "tuple_object.ob_size"), n);
    for (size_t i = 0; i < n; i++)
        fake_w64(ft, a + oi + 8 * i, items[i]);
    return a;
}

uint64_t fake_list(fake_target *ft, const uint64_t *items, size_t n)
{
    uint64_t a = obj(ft, "list", 64);
    uint64_t arr = fake_alloc(ft, 8 * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        fake_w64(ft, arr + 8 * i, items[i]);
    fake_w64(ft, a + fake_off(ft, "list_object.ob_size"), n);
    fake_w64(ft, a + fake_off(ft, "list_object.ob_item"), arr);
    return a;
}

/* 3.8-3.10's keys (Objects/dictobject.c): dk_size slots, indices as wide
 * as it needs (DK_IXSIZE), then general entries {hash, key, value}. */
static uint64_t sized_keys(fake_target *ft, const uint64_t *kv, size_t n)
{
    const ft_layout *l = lay(ft);
    size_t size = 8;
    while (size * 2 < n * 3)
        size *= 2;
    size_t ix = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
    uint64_t entries = l->values.keys_indices + size * ix;
    uint64_t k = fake_alloc(ft, entries + 24 * size);
    fake_w64(ft, k, 1);
    fake_w64(ft, k + l->values.keys_size, size);
    fake_w64(ft, k + l->values.keys_nentries, n);
    uint8_t *indices = fake_host(ft, k + l->values.keys_indices, size * ix);
    memset(indices, 0xff, size * ix); /* DKIX_EMPTY */
    for (size_t i = 0; i < n; i++) {
        uint64_t e = entries + 24 * i, v = i;
        memcpy(indices + i * ix, &v, ix); /* little-endian: the low bytes */
        fake_w64(ft, k + e, 0x1234 + i); /* hash */
        fake_w64(ft, k + e + 8, kv[2 * i]);
        fake_w64(ft, k + e + 16, kv[2 * i + 1]);
    }
    return k;
}

uint64_t fake_dict_keys(fake_target *ft, const uint64_t *kv, size_t n, int unicode)
{
    const ft_layout *l = lay(ft);
    if (l->values.keys_size != UINT64_MAX)
        return sized_keys(ft, kv, n);
    unsigned log2 = 3;
    while (((size_t)1 << log2) * 2 < n * 3)
        log2++;
    unsigned log2ib = log2 + (log2 < 8 ? 0 : log2 < 16 ? 1 : 2);
    size_t esize = unicode ? 16 : 24;
    uint64_t entries = l->values.keys_indices + ((uint64_t)1 << log2ib);
    uint64_t k = fake_alloc(ft, entries + esize * (((size_t)1 << log2) + 1));
    fake_w64(ft, k, 1);
    fake_w8(ft, k + l->values.keys_log2_size, (uint8_t)log2);
    fake_w8(ft, k + l->values.keys_log2_index_bytes, (uint8_t)log2ib);
    fake_w8(ft, k + l->values.keys_kind, unicode ? 1 : (uint8_t)l->dict_keys_general);
    fake_w64(ft, k + l->values.keys_nentries, n);
    for (size_t i = 0; i < n; i++) {
        uint64_t e = k + entries + esize * i;
        if (!unicode)
            fake_w64(ft, e, 0x1234 + i); /* hash */
        fake_w64(ft, e + (unicode ? 0 : 8), kv[2 * i]);
        fake_w64(ft, e + (unicode ? 8 : 16), kv[2 * i + 1]);
    }
    return k;
}

uint64_t fake_dict_of(fake_target *ft, uint64_t keys, uint64_t values, size_t used)
{
    uint64_t a = obj(ft, "dict", 64);
    fake_w64(ft, a + lay(ft)->values.dict_used, used);
    fake_w64(ft, a + fake_off(ft, "dict_object.ma_keys"), keys);
    fake_w64(ft, a + fake_off(ft, "dict_object.ma_values"), values);
    return a;
}

uint64_t fake_dict(fake_target *ft, const uint64_t *kv, size_t n, int unicode)
{
    return fake_dict_of(ft, fake_dict_keys(ft, kv, n, unicode), 0, n);
}

/* The bytes before 3.11's and 3.12's PyDictValues: the insertion order
 * (internal/pycore_dict.h, _PyDictValues_AddToInsertionOrder) */
#define ORDER_PREFIX(capacity) (((capacity) + 2 + 7) & ~(size_t)7)

uint64_t fake_dict_values_at(fake_target *ft, uint64_t at, const uint64_t *values,
                             const uint8_t *order, size_t n, size_t capacity)
{
    const ft_layout *l = lay(ft);
    if (l->values.values_capacity == UINT64_MAX) { /* the order before the values */
        size_t prefix = ORDER_PREFIX(capacity);
        fake_w8(ft, at - 1, (uint8_t)prefix);
        fake_w8(ft, at - 2, (uint8_t)n);
        for (size_t i = 0; i < n; i++)
            fake_w8(ft, at - 3 - i, order[i]);
        for (size_t i = 0; i < capacity; i++)
            fake_w64(ft, at + l->values.values_values + 8 * i, values[i]);
        return at;
    }
    fake_w8(ft, at + l->values.values_capacity, (uint8_t)capacity);
    fake_w8(ft, at + l->values.values_size, (uint8_t)n);
    fake_w8(ft, at + l->values.values_valid, 1);
    for (size_t i = 0; i < capacity; i++)
        fake_w64(ft, at + l->values.values_values + 8 * i, values[i]);
    for (size_t i = 0; i < n; i++)
        fake_w8(ft, at + l->values.values_values + 8 * capacity + i, order[i]);
    return at;
}

uint64_t fake_dict_values(fake_target *ft, const uint64_t *values, const uint8_t *order,
                          size_t n, size_t capacity)
{
    size_t prefix = ORDER_PREFIX(capacity);
    uint64_t at = fake_alloc(ft, prefix + lay(ft)->values.values_values + 9 * capacity + 8);
    return fake_dict_values_at(ft, at + prefix, values, order, n, capacity);
}

uint64_t fake_set(fake_target *ft, const char *type, const uint64_t *items, size_t n)
{
    const ft_layout *l = lay(ft);
    size_t slots = 8;
    while (slots < n * 2 + 2)
        slots *= 2;
    uint64_t a = obj(ft, type, 256);
    uint64_t table = fake_alloc(ft, 16 * slots);
    /* items spread out, with a dummy entry between the first two */
    for (size_t i = 0; i < n; i++) {
        fake_w64(ft, table + 16 * (2 * i), items[i]);
        fake_w64(ft, table + 16 * (2 * i) + 8, 0x55 + i);
    }
    fake_w64(ft, table + 16, fake_singleton(ft, "str")); /* dummy key, hash -1 */
    fake_w64(ft, table + 24, UINT64_MAX);
    fake_w64(ft, a + l->values.set_used, n);
    fake_w64(ft, a + l->values.set_mask, slots - 1);
    fake_w64(ft, a + l->values.set_table, table);
    return a;
}

uint64_t fake_range(fake_target *ft, int64_t start, int64_t stop, int64_t step)
{
    const ft_layout *l = lay(ft);
    uint64_t a = obj(ft, "range", 96);
    fake_w64(ft, a + l->values.range_start, fake_int(ft, start));
    fake_w64(ft, a + l->values.range_stop, fake_int(ft, stop));
    fake_w64(ft, a + l->values.range_step, fake_int(ft, step));
    return a;
}

uint64_t fake_heap_type(fake_target *ft, const char *tp_name, const char *module,
                        const char *qualname, uint64_t flags, uint64_t basicsize,
                        uint64_t cached_keys)
{
    const ft_layout *l = lay(ft);
    uint64_t t = fake_alloc(ft, l->values.heap_cached_keys + 64);
    fake_w64(ft, t, 1);
    fake_w64(ft, t + ft->o.ob_type, fake_type(ft, "type"));
    size_t n = strlen(tp_name) + 1;
    uint64_t name = fake_alloc(ft, n);
    fake_write(ft, name, tp_name, n);
    fake_w64(ft, t + ft->o.ty_tp_name, name);
    fake_w64(ft, t + fake_off(ft, "type_object.tp_flags"), flags | l->tp_heaptype);
    fake_w64(ft, t + l->values.type_basicsize, basicsize);
    fake_w64(ft, t + l->values.heap_qualname, fake_str(ft, qualname));
    fake_w64(ft, t + l->values.heap_cached_keys, cached_keys);
    if (module != NULL) {
        uint64_t kv[4] = {fake_str(ft, "__doc__"), ft->none_obj, fake_str(ft, "__module__"),
                          fake_str(ft, module)};
        fake_w64(ft, t + l->values.type_dict, fake_dict(ft, kv, 2, 1));
    }
    return t;
}

void fake_type_set_base(fake_target *ft, uint64_t type, uint64_t base)
{
    fake_w64(ft, type + lay(ft)->values.type_base, base);
}

void fake_type_set_flags(fake_target *ft, uint64_t type, uint64_t flags)
{
    fake_w64(ft, type + fake_off(ft, "type_object.tp_flags"), flags);
}

uint64_t fake_instance_dict(fake_target *ft, uint64_t type, uint64_t dict)
{
    uint64_t back = lay(ft)->values.managed_dict_back;
    uint64_t a = fake_alloc(ft, back + 64) + back;
    fake_w64(ft, a, 1);
    fake_w64(ft, a + ft->o.ob_type, type);
    fake_w64(ft, a - back, dict);
    return a;
}

uint64_t fake_instance_inline(fake_target *ft, uint64_t type, const uint64_t *values,
                              const uint8_t *order, size_t n, size_t capacity)
{
    const ft_layout *l = lay(ft);
    uint64_t back = l->values.managed_dict_back, basic = ft->o.ob_size + 8;
    if (l->values.values_capacity == UINT64_MAX) {
        /* 3.11: a values pointer before the dict pointer; 3.12: the one
         * word, the values' address - 1 */
        if (l->managed_values_back != UINT64_MAX)
            back = l->managed_values_back;
        uint64_t a = fake_alloc(ft, back + 64) + back;
        fake_w64(ft, a, 1);
        fake_w64(ft, a + ft->o.ob_type, type);
        uint64_t vals = fake_dict_values(ft, values, order, n, capacity);
        if (l->managed_values_back != UINT64_MAX)
            fake_w64(ft, a - l->managed_values_back, vals);
        else
            fake_w64(ft, a - l->values.managed_dict_back, vals - 1);
        return a;
    }
    fake_w64(ft, type + l->values.type_basicsize, basic);
    uint64_t a = fake_alloc(ft, back + basic + l->values.values_values + 9 * capacity + 8) + back;
    fake_w64(ft, a, 1);
    fake_w64(ft, a + ft->o.ob_type, type);
    fake_dict_values_at(ft, a + basic, values, order, n, capacity);
    return a;
}

uint64_t fake_slots_type(fake_target *ft, const char *qualname, const char *const *names,
                         size_t n)
{
    return fake_slots_subtype(ft, qualname, names, n, 0);
}

uint64_t fake_slots_subtype(fake_target *ft, const char *qualname, const char *const *names,
                            size_t n, uint64_t base_type)
{
    /* a class's slots come after its bases' (each base: its basicsize) */
    size_t first = 0;
    if (base_type != 0)
        first = (size_t)(fake_r64(ft, base_type + lay(ft)->values.type_basicsize) -
                         ft->o.ob_size) / 8;
    const ft_layout *l = lay(ft);
    uint64_t *kv = ft_xcalloc(2 * n + 2, 8);
    kv[0] = fake_str(ft, "__module__");
    kv[1] = fake_str(ft, "app");
    for (size_t i = 0; i < n; i++) {
        uint64_t def = fake_alloc(ft, 40), d = obj(ft, "member_descriptor", 64);
        fake_w32(ft, def + l->values.member_def_type, (uint32_t)l->t_object_ex);
        fake_w64(ft, def + l->values.member_def_offset, ft->o.ob_size + 8 * (first + i));
        fake_w64(ft, d + l->values.member_descr_member, def);
        kv[2 * i + 2] = fake_str(ft, names[i]);
        kv[2 * i + 3] = d;
    }
    uint64_t t = fake_heap_type(ft, qualname, NULL, qualname, 0, ft->o.ob_size + 8 * (first + n),
                                0);
    fake_w64(ft, t + l->values.type_dict, fake_dict(ft, kv, n + 1, 1));
    fake_w64(ft, t + l->values.type_base, base_type);
    free(kv);
    return t;
}

uint64_t fake_slots_instance(fake_target *ft, uint64_t type, const uint64_t *values, size_t n)
{
    uint64_t a = fake_obj(ft, type, ft->o.ob_size + 8 * n);
    for (size_t i = 0; i < n; i++)
        fake_w64(ft, a + ft->o.ob_size + 8 * i, values[i]);
    return a;
}

uint64_t fake_function(fake_target *ft, const char *qualname)
{
    uint64_t a = obj(ft, "function", 256);
    fake_w64(ft, a + lay(ft)->values.func_qualname, fake_str(ft, qualname));
    return a;
}

uint64_t fake_builtin(fake_target *ft, const char *name, uint64_t self)
{
    const ft_layout *l = lay(ft);
    uint64_t a = obj(ft, "builtin_function_or_method", 128);
    uint64_t def = fake_alloc(ft, 32), s = fake_alloc(ft, strlen(name) + 1);
    fake_write(ft, s, name, strlen(name) + 1);
    fake_w64(ft, def, s);
    fake_w64(ft, a + l->values.cfunc_ml, def);
    fake_w64(ft, a + l->values.cfunc_self, self);
    return a;
}

uint64_t fake_method(fake_target *ft, uint64_t func, uint64_t self)
{
    uint64_t a = obj(ft, "method", 96);
    fake_w64(ft, a + lay(ft)->values.method_func, func);
    fake_w64(ft, a + lay(ft)->values.method_self, self);
    return a;
}

uint64_t fake_module(fake_target *ft, const char *name, const char *file)
{
    uint64_t kv[6] = {fake_str(ft, "__name__"), fake_str(ft, name), fake_str(ft, "__doc__"),
                      ft->none_obj, fake_str(ft, "__file__"), file ? fake_str(ft, file) : 0};
    uint64_t a = obj(ft, "module", 128);
    fake_w64(ft, a + lay(ft)->values.module_dict, fake_dict(ft, kv, file ? 3 : 2, 1));
    return a;
}

uint64_t fake_cell(fake_target *ft, uint64_t contents)
{
    uint64_t a = obj(ft, "cell", 64);
    fake_w64(ft, a + lay(ft)->values.cell_ref, contents);
    return a;
}

uint64_t fake_genobj(fake_target *ft, const char *type, const char *qualname)
{
    uint64_t a = obj(ft, type, lay(ft)->gen_size);
    fake_w64(ft, a + lay(ft)->values.gen_qualname, fake_str(ft, qualname));
    return a;
}

uint64_t fake_exception(fake_target *ft, uint64_t type, uint64_t args)
{
    uint64_t a = fake_obj(ft, type, 128);
    fake_w64(ft, a + lay(ft)->values.exc_args, args);
    return a;
}

void fake_code_locals(fake_target *ft, uint64_t code, const char *const *names,
                      const uint8_t *kinds, size_t n, int argcount, int kwonly,
                      uint32_t co_flags)
{
    const ft_layout *l = lay(ft);
    uint64_t *items = ft_xcalloc(n + 1, 8);
    for (size_t i = 0; i < n; i++)
        items[i] = fake_str(ft, names[i]);
    fake_w64(ft, code + fake_off(ft, "code_object.localsplusnames"), fake_tuple(ft, items, n));
    fake_w64(ft, code + fake_off(ft, "code_object.localspluskinds"), fake_bytes(ft, kinds, n));
    fake_w32(ft, code + fake_off(ft, "code_object.argcount"), (uint32_t)argcount);
    fake_w32(ft, code + l->values.code_kwonlyargcount, (uint32_t)kwonly);
    fake_w32(ft, code + ft->o.co_flags, co_flags);
    free(items);
}

uint64_t fake_locals_frame(fake_target *ft, uint64_t code, uint64_t globals,
                           const uint64_t *slots, size_t n)
{
    const ft_layout *l = lay(ft);
    uint64_t ls = fake_off(ft, "interpreter_frame.localsplus");
    uint64_t f = fake_alloc(ft, ls + 8 * (n + 1));
    fake_w64(ft, f + fake_off(ft, "interpreter_frame.executable"), code | ft->exec_tag);
    fake_w64(ft, f + l->values.frame_globals, globals);
    fake_w8(ft, f + fake_off(ft, "interpreter_frame.owner"), (uint8_t)l->owner_thread);
    for (size_t i = 0; i < n; i++)
        fake_w64(ft, f + ls + 8 * i, slots[i]);
    return f;
}

/* def f(a, b, *args, k, **kw): x (unbound), c (a cell), r (a cell before
 * MAKE_CELL), e (an empty cell), h (hidden), n (a tagged int on 3.14+),
 * fv (free); then one local of every other kind. */
uint64_t fake_values_frame(fake_target *ft, uint64_t *code_out, uint64_t *globals_out)
{
    static const fake_loc L[] = {{4, 1, 1, 0, 4}};
    static const char *const names[] = {
        "a", "b", "k", "args", "kw", "x", "c", "r", "e", "h", "n", "fv",
        "lst", "gd", "split", "st", "fs", "rg", "mod", "meth", "bi", "exc", "obj", "inl",
        "big", "fl", "cx", "by", "ba", "s2", "s4", "gen", "code", "cls", "cyc", "none",
        "slotted"};
    const uint8_t LOCAL = 0x20, CELL = 0x40, FREE = 0x80, HIDDEN = 0x10;
    uint8_t kinds[sizeof names / sizeof names[0]];
    memset(kinds, LOCAL, sizeof kinds);
    kinds[1] = LOCAL | CELL;
    kinds[6] = kinds[7] = kinds[8] = CELL;
    kinds[9] = LOCAL | HIDDEN;
    kinds[11] = FREE;
    uint64_t code = fake_code(ft, "/m.py", "f", 1, L, 1);
    fake_code_locals(ft, code, names, kinds, sizeof names / sizeof names[0], 2, 1,
                     0x4 | 0x8 /* CO_VARARGS | CO_VARKEYWORDS */);
    uint64_t one = fake_int(ft, 1), s = fake_str(ft, "s");
    uint64_t kv[6] = {fake_str(ft, "a"), one, one, s, fake_tuple(ft, &one, 1), s};
    uint64_t items[4] = {one, fake_list(ft, &one, 1), fake_dict(ft, kv, 1, 1), s};
    uint64_t skeys[4] = {fake_str(ft, "p"), 0, fake_str(ft, "q"), 0};
    uint64_t sk = fake_dict_keys(ft, skeys, 2, 1);
    uint64_t svals[2] = {one, s};
    uint8_t order[2] = {1, 0};
    uint64_t cls = fake_heap_type(ft, "P", "app", "P", ft->layout->tp_managed_dict, 0, 0);
    uint64_t icls = fake_heap_type(ft, "Q", "app", "Q",
                                   ft->layout->tp_managed_dict | ft->layout->tp_inline_values,
                                   0, sk);
    uint64_t exc = fake_type(ft, "KeyError");
    fake_type_set_flags(ft, exc, ft->layout->tp_base_exc);
    uint32_t digits[5] = {1, 2, 3, 4, 5};
    uint32_t cps[3] = {0x20ac, 'x', 0x1f600};
    uint64_t cyc = fake_list(ft, &one, 1);
    fake_w64(ft, fake_r64(ft, cyc + fake_off(ft, "list_object.ob_item")), cyc);
    uint64_t globals = fake_dict(ft, kv, 3, 0);
    uint64_t slots[] = {
        one, fake_cell(ft, fake_str(ft, "bee")), fake_int(ft, 3), fake_tuple(ft, NULL, 0),
        fake_dict(ft, NULL, 0, 1), 0, fake_cell(ft, fake_int(ft, 7)), fake_int(ft, 8),
        fake_cell(ft, 0), fake_int(ft, 9),
        ft->minor >= 14 ? (uint64_t)(42 << 2 | 3) : fake_int(ft, 42),
        fake_cell(ft, fake_str(ft, "free")),
        fake_list(ft, items, 4), fake_dict(ft, kv, 3, 0),
        fake_dict_of(ft, sk, fake_dict_values(ft, svals, order, 2, 2), 2),
        fake_set(ft, "set", items, 2), fake_set(ft, "frozenset", &s, 1),
        fake_range(ft, 0, 10, 2), fake_module(ft, "mod", "/mod.py"),
        fake_method(ft, fake_function(ft, "P.m"), one), fake_builtin(ft, "append", cyc),
        fake_exception(ft, exc, fake_tuple(ft, &s, 1)),
        fake_instance_dict(ft, cls, fake_dict(ft, kv, 2, 1)),
        fake_instance_inline(ft, icls, svals, order, 2, 2),
        fake_int_digits(ft, -1, digits, 5), fake_float(ft, 0.25), fake_complex(ft, 1, 2),
        fake_bytes(ft, "xy", 2), fake_bytearray(ft, "z", 1), fake_str(ft, "\xe2\x82\xac"),
        fake_str_cp(ft, cps, 3, 0), fake_genobj(ft, "coroutine", "co"), code, cls, cyc,
        ft->none_obj, 0,
    };
    static const char *const slot_names[] = {"u", "v", "w"};
    uint64_t slot_values[3] = {one, 0, s};
    slots[sizeof slots / sizeof slots[0] - 1] =
        fake_slots_instance(ft, fake_slots_type(ft, "S", slot_names, 3), slot_values, 3);
    *code_out = code;
    *globals_out = globals;
    return fake_locals_frame(ft, code, globals, slots, sizeof slots / sizeof slots[0]);
}
