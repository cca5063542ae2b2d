/*
 * fake_heap.c - CPython 3.8-3.10 images, whose frames are heap objects:
 * their layout (the library's built-in table of the version,
 * native/src/layout_tables.h, made from the version's headers and checked
 * against them by the builtin_tables test), code objects with their
 * bytecode in a bytes object and the version's line table (co_lnotab,
 * 3.10's PEP 626 co_linetable), PyFrameObjects chained by f_back from the
 * thread state's frame, generators.
 * See fake_target.h.
 */
/* the library's headers first: its static API declared (api.h) */
#include "../../native/src/api.h"
/* the tables of 3.11 and 3.12 are not used here: their images are laid
 * out from their headers (ft_layouts.cmake) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-const-variable"
#include "../../native/src/layout_tables.h"
#pragma GCC diagnostic pop
#include "fake_internal.h"

#include <string.h>

#define HEAP_PAIRS_MAX 512

/* A field of the version's table (UINT64_MAX when it has none). */
static uint64_t table_value(const ft_pair *p, const char *name)
{
    for (; p->name != NULL; p++)
        if (strcmp(p->name, name) == 0)
            return p->value;
    return UINT64_MAX;
}

const ft_layout *fake_heap_layout(int minor)
{
    static ft_pair pairs[3][HEAP_PAIRS_MAX];
    static ft_layout layouts[3];
    const pyf__builtin_field *f;
    size_t n;
    const char *name;
    switch (minor) {
    case 8: f = pyf__builtin_38; n = sizeof pyf__builtin_38 / sizeof *f; name = "3.8"; break;
    case 9: f = pyf__builtin_39; n = sizeof pyf__builtin_39 / sizeof *f; name = "3.9"; break;
    case 10: f = pyf__builtin_310; n = sizeof pyf__builtin_310 / sizeof *f; name = "3.10"; break;
    default: ft_die("no heap-frame layout of 3.%d", minor);
    }
    ft_layout *l = &layouts[minor - 8];
    if (l->name != NULL)
        return l;
    if (n >= HEAP_PAIRS_MAX)
        ft_die("3.%d: a table of %zu fields", minor, n);
    ft_pair *p = pairs[minor - 8];
    for (size_t i = 0; i < n; i++)
        p[i] = (ft_pair){f[i].name, f[i].value};
    p[n] = (ft_pair){NULL, 0};
    l->name = name;
    l->include_dir = "native/src/layout_tables.h";
    l->minor = minor;
    l->hexversion = fake_default_hexversion(minor);
    l->pairs = p;
    l->pyobject_size = table_value(p, "pyobject.size");
    l->var_ob_size = l->pyobject_size;
    /* PyASCIIObject.state: interned:2 (SSTATE_INTERNED_MORTAL 1), kind:3,
     * compact:1, ascii:1, ready:1 (Include/cpython/unicodeobject.h) */
    uint64_t kind_shift = table_value(p, "unicode_state.kind_shift");
    l->str_kind1 = 1u << kind_shift;
    l->str_kind2 = 2u << kind_shift;
    l->str_kind4 = 4u << kind_shift;
    l->str_compact = 1u << table_value(p, "unicode_state.compact_bit");
    l->str_ascii = 1u << table_value(p, "unicode_state.ascii_bit");
    l->str_interned = 1u;
    l->str_hash = table_value(p, "unicode_object.length") + 8; /* after length */
    l->bytes_shash = table_value(p, "bytes_object.ob_size") + 8;  /* after ob_size */
    l->co_flags = table_value(p, "code_object.co_flags");
    l->co_generator = (uint32_t)table_value(p, "code_flags.generator");
    l->co_coroutine = (uint32_t)table_value(p, "code_flags.coroutine");
    l->co_iterable_coroutine = (uint32_t)table_value(p, "code_flags.iterable_coroutine");
    l->co_async_generator = (uint32_t)table_value(p, "code_flags.async_generator");
#define FT_VALUE_FIELD(field) l->values.field = table_value(p, "values." #field);
    PYF__VALUE_LAYOUT(FT_VALUE_FIELD)
#undef FT_VALUE_FIELD
    l->frame_stacktop = 0;
    l->managed_values_back = UINT64_MAX;
    l->opcode_call = l->call_caches = l->opcode_instrumented_line = l->gen_suspended = -1;
    return l;
}

fake_target *fake_new_heap(int minor)
{
    return fake_new_layout(fake_heap_layout(minor));
}

static uint64_t off(const fake_target *ft, const char *name)
{
    uint64_t v = fake_off(ft, name);
    if (!ft_heap_frames(ft) || v == UINT64_MAX)
        ft_die("3.%d image: no heap-frame offset %s", ft->minor, name);
    return v;
}

/* ==== line tables ====================================================== */

typedef struct table_out {
    uint8_t *b;
    size_t len, cap;
} table_out;

static void pair(table_out *t, int bytes, int delta)
{
    if (t->len + 2 > t->cap)
        ft_die("line table longer than %zu bytes", t->cap);
    t->b[t->len++] = (uint8_t)bytes;
    t->b[t->len++] = (uint8_t)(int8_t)delta;
}

/* 3.8, 3.9 (Python/compile.c, assemble_lnotab): at each new line, the
 * bytes since the last one and the line delta, in pairs of at most 255
 * bytes and [-128, 127] lines. */
static void lnotab(table_out *t, int firstlineno, const fake_loc *locs, size_t n)
{
    int line = firstlineno, at = 0, last = 0;
    for (size_t i = 0; i < n; at += 2 * locs[i].ncu, i++) {
        if (locs[i].line == FAKE_NOLINE)
            ft_die("co_lnotab has no \"no line\"");
        if (locs[i].line == line)
            continue;
        int db = at - last, dl = locs[i].line - line;
        for (; db > 255; db -= 255)
            pair(t, 255, 0);
        for (; dl > 127; dl -= 127, db = 0)
            pair(t, db, 127);
        for (; dl < -128; dl += 128, db = 0)
            pair(t, db, -128);
        pair(t, db, dl);
        line = locs[i].line;
        last = at;
    }
}

/* 3.10 (Python/compile.c, assemble_line_range): each run a range of its
 * bytes with its line's delta from the last line, -128 for none; at most
 * 254 bytes and [-127, 127] lines a pair. */
static void pep626(table_out *t, int firstlineno, const fake_loc *locs, size_t n)
{
    int prev = firstlineno;
    for (size_t i = 0; i < n; i++) {
        int db = 2 * locs[i].ncu, dl = -128;
        if (locs[i].line != FAKE_NOLINE) {
            dl = locs[i].line - prev;
            prev = locs[i].line;
            for (; dl > 127; dl -= 127)
                pair(t, 0, 127);
            for (; dl < -127; dl += 127)
                pair(t, 0, -127);
        }
        for (; db > 254; db -= 254) {
            pair(t, 254, dl);
            dl = locs[i].line == FAKE_NOLINE ? -128 : 0;
        }
        pair(t, db, dl);
    }
}

/* ==== code objects, frames, generators ================================== */

uint64_t fake_heap_code(fake_target *ft, const char *filename, const char *name,
                        int firstlineno, const fake_loc *locs, size_t nlocs)
{
    uint8_t buf[8192];
    table_out t = {buf, 0, sizeof buf};
    int ncu = 0;
    for (size_t i = 0; i < nlocs; i++)
        ncu += locs[i].ncu;
    if (ft->minor >= 10)
        pep626(&t, firstlineno, locs, nlocs);
    else
        lnotab(&t, firstlineno, locs, nlocs);
    uint8_t *bytecode = ft_xcalloc((size_t)ncu + 1, 2);
    for (int i = 0; i < ncu; i++) { /* NOP (9), arg 0 */
        bytecode[2 * i] = 9;
        bytecode[2 * i + 1] = 0;
    }
    const ft_offs *o = &ft->o;
    uint64_t c = fake_alloc(ft, o->co_size);
    fake_w64(ft, c, 1);
    fake_w64(ft, c + o->ob_type, fake_type(ft, "code"));
    fake_w64(ft, c + o->co_filename, fake_str(ft, filename));
    fake_w64(ft, c + o->co_name, fake_str(ft, name));
    fake_w64(ft, c + o->co_linetable, fake_bytes(ft, buf, t.len));
    fake_w32(ft, c + o->co_firstlineno, (uint32_t)firstlineno);
    fake_w64(ft, c + off(ft, "code_object.code"), fake_bytes(ft, bytecode, 2 * (size_t)ncu));
    free(bytecode);
    return c;
}

void fake_heap_set_state(fake_target *ft, uint64_t frame, int state)
{
    uint64_t executing = fake_off(ft, "frame_object.executing");
    if (executing != UINT64_MAX) {
        /* 3.8, 3.9: f_executing, and f_stacktop set while it does not run
         * and has a value stack to keep (made, or at a yield) */
        uint64_t stacktop = off(ft, "frame_object.stacktop");
        fake_w8(ft, frame + executing, state == FAKE_HFRAME_RUNNING);
        fake_w64(ft, frame + stacktop,
                 state == FAKE_HFRAME_CREATED || state == FAKE_HFRAME_SUSPENDED
                     ? frame + off(ft, "frame_object.localsplus") : 0);
        if (state == FAKE_HFRAME_CREATED)
            fake_heap_set_lasti(ft, frame, -1);
        return;
    }
    const char *name = state == FAKE_HFRAME_RUNNING     ? "frame_state.executing"
                       : state == FAKE_HFRAME_CREATED   ? "frame_state.created"
                       : state == FAKE_HFRAME_SUSPENDED ? "frame_state.suspended"
                       : state == FAKE_HFRAME_UNWINDING ? "frame_state.unwinding"
                                                        : "frame_state.returned";
    fake_w8(ft, frame + off(ft, "frame_object.state"), (uint8_t)off(ft, name));
    if (state == FAKE_HFRAME_CREATED)
        fake_heap_set_lasti(ft, frame, -1);
}

void fake_heap_set_lasti(fake_target *ft, uint64_t frame, int lasti)
{
    /* 3.8, 3.9 count bytes, 3.10 code units; -1 in both before the first */
    int v = lasti >= 0 && ft->minor < 10 ? 2 * lasti : lasti;
    fake_w32(ft, frame + off(ft, "frame_object.lasti"), (uint32_t)v);
}

uint64_t fake_heap_frame(fake_target *ft, uint64_t code, int lasti, uint64_t back)
{
    uint64_t f = fake_alloc(ft, off(ft, "frame_object.size") + 8 * FRAME_SLOTS);
    fake_w64(ft, f, 1);
    fake_w64(ft, f + ft->o.ob_type, fake_type(ft, "frame"));
    fake_w64(ft, f + off(ft, "frame_object.back"), back);
    fake_w64(ft, f + off(ft, "frame_object.code"), code);
    fake_heap_set_lasti(ft, f, lasti);
    fake_heap_set_state(ft, f, lasti < 0 ? FAKE_HFRAME_CREATED : FAKE_HFRAME_RUNNING);
    return f;
}

uint64_t fake_heap_push(fake_thread *th, uint64_t code, int lasti)
{
    fake_target *ft = fake_thread_target(th);
    uint64_t f = fake_heap_frame(ft, code, lasti, fake_thread_current(th));
    fake_thread_set_current(th, f);
    return f;
}

uint64_t fake_heap_gen_push(fake_thread *th, uint64_t code, int lasti, uint64_t *gen_out)
{
    fake_target *ft = fake_thread_target(th);
    uint64_t f = fake_heap_push(th, code, lasti);
    uint64_t g = fake_obj(ft, fake_type(ft, "generator"), off(ft, "gen_object.size"));
    fake_w64(ft, g + off(ft, "gen_object.gi_frame"), f);
    fake_w64(ft, g + off(ft, "gen_object.gi_code"), code);
    fake_w64(ft, f + off(ft, "frame_object.gen"), g);
    if (gen_out != NULL)
        *gen_out = g;
    return f;
}
