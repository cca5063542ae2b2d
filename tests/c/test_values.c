/*
 * test_values.c - the value decoder (pyf_frame_locals, pyf_value_read) on
 * synthetic images laid out from CPython's own headers (ft_layout.h), for
 * 3.11 and 3.12 and for 3.13, 3.14 and 3.15, default and free-threaded:
 *
 * - the decoder's own object layouts (value_layout.c) equal the headers';
 * - every kind of value: None, bool, ints of any size, float, complex, str
 *   of every kind, bytes, bytearray, tuple, list, dicts (combined, unicode
 *   keys, split: the insertion order after the values, or before them on
 *   3.11/3.12), set, frozenset, range, types (static and heap), function,
 *   builtin, method, module, cell, code, generators, exceptions (OSError's
 *   errno, strerror and file names), Ellipsis, NotImplemented, other
 *   objects with their attributes (managed dict; the values of a managed
 *   dict not made: inline on 3.13+, 3.12's tagged word, 3.11's values
 *   pointer); 3.11's legacy strs, their characters elsewhere, and one not
 *   made ready (unreadable);
 * - a frame's locals: arguments of every sort, locals, cells before and
 *   after MAKE_CELL, free variables, unbound slots, tagged ints;
 * - limits (string, items, depth, objects, bytes), cycles, and corrupted
 *   objects (bad type, absurd sizes, freed, unreadable) as UNREADABLE
 *   nodes, then every object of the image made unreadable or overwritten
 *   word by word: never a crash, always a well-formed tree.
 * White-box: it compares the library's layouts with the headers'.
 */
#include "whitebox.h" /* the library's headers: first */
#include "../../native/src/target.h"
#include "../../native/src/value_layout.h"
#include "fake_target.h"

#include <stdio.h>
#include <stdlib.h>


#define NL(a) (sizeof(a) / sizeof((a)[0]))

static const pyf_value *V(const pyf_values *v, uint32_t i)
{
    REQUIRE(i < v->nvalues);
    return &v->values[i];
}
static const pyf_value *kid_at(const pyf_values *v, const pyf_value *p, uint32_t k, int line)
{
    if (k >= p->nchildren) {
        fprintf(stderr, "line %d: child %u of a node with %u (kind %u, data \"%s\")\n", line,
                k, p->nchildren, p->kind, p->data ? p->data : "");
        exit(1);
    }
    return V(v, p->first_child + k);
}
#define kid(v, p, k) kid_at(v, p, k, __LINE__)

/* A tree is well formed: children inside the array and after their parent,
 * strings non-NULL, data_size bytes at data. */
static void check_tree(const pyf_values *v)
{
    for (uint32_t i = 0; i < v->nvalues; i++) {
        const pyf_value *x = &v->values[i];
        CHECK(x->type_name != NULL);
        CHECK(x->kind <= PYF_VALUE_NOTIMPLEMENTED);
        CHECK(x->data != NULL || x->data_size == 0);
        if (x->nchildren) {
            CHECK(x->first_child > i);
            CHECK((uint64_t)x->first_child + x->nchildren <= v->nvalues);
        }
        if (x->kind == PYF_VALUE_UNREADABLE)
            CHECK(x->data != NULL && x->nchildren == 0);
    }
    for (uint32_t i = 0; i < v->nlocals; i++) {
        CHECK(v->locals[i].name != NULL);
        CHECK(v->locals[i].value == PYF_NO_VALUE || v->locals[i].value < v->nvalues);
    }
}

static pyf_values *read1(pyf_target *t, uint64_t addr, const pyf_values_request *req)
{
    pyf_values *v = NULL;
    CHECK_RC(pyf_value_read(t, addr, req, &v), PYF_OK);
    REQUIRE(v != NULL && v->nvalues >= 1);
    check_tree(v);
    return v;
}

/* The object at addr decodes as kind with type name tn and data (NULL: not
 * checked). */
static void expect(pyf_target *t, uint64_t addr, uint32_t kind, const char *tn, const char *data)
{
    pyf_values *v = read1(t, addr, NULL);
    const pyf_value *x = V(v, 0);
    CHECK_MSG(x->kind == kind, "%s: kind %u, expected %u (%s)", tn, x->kind, kind,
              x->data ? x->data : "");
    CHECK_EQ_STR(x->type_name, tn);
    CHECK_ADDR(x->addr, addr);
    if (data != NULL) {
        CHECK_EQ_STR(x->data, data);
        CHECK_EQ_INT(x->data_size, strlen(data));
    }
    pyf_values_free(v);
}

static pyf_values_request req_of(uint32_t flags)
{
    pyf_values_request r = {sizeof r, flags, 0, 0, 0, 0, 0};
    return r;
}

/* ---- the layouts ----------------------------------------------------------- */

static void layouts(const ft_layout *l)
{
    pyf__offsets o;
    char err[256];
    whitebox_offsets(l, &o);
    CHECK_RC(pyf__offsets_check_values(&o, err, sizeof err), PYF_OK);
    pyf__value_layout vl;
    pyf__value_layout_fill(&o, &vl);
#define SAME(f) CHECK_MSG(vl.f == l->values.f, "%s " #f ": %llu, headers %llu", l->name, \
                          (unsigned long long)vl.f, (unsigned long long)l->values.f);
    PYF__VALUE_LAYOUT(SAME)
#undef SAME
    CHECK_MSG(vl.managed_values_back == l->managed_values_back, "%s managed_values_back: %llu, "
              "headers %llu", l->name, (unsigned long long)vl.managed_values_back,
              (unsigned long long)l->managed_values_back);
    CHECK_EQ_INT(o.frame.stacktop == PYF__ABSENT ? 0 : o.frame.stacktop, l->frame_stacktop);
    CHECK_EQ_INT(PYF__CO_VARARGS, l->co_varargs);
    CHECK_EQ_INT(PYF__CO_VARKEYWORDS, l->co_varkeywords);
    /* 3.11 has no CO_FAST_HIDDEN, 3.11 and 3.12 no Py_TPFLAGS_INLINE_VALUES (0) */
    CHECK(l->co_fast_hidden == 0 || PYF__CO_FAST_HIDDEN == l->co_fast_hidden);
    CHECK_EQ_INT(PYF__CO_FAST_LOCAL, l->co_fast_local);
    CHECK_EQ_INT(PYF__CO_FAST_CELL, l->co_fast_cell);
    CHECK_EQ_INT(PYF__CO_FAST_FREE, l->co_fast_free);
    CHECK(l->tp_inline_values == 0 || PYF__TPFLAGS_INLINE_VALUES == l->tp_inline_values);
    CHECK_EQ_INT(o.instdict_kind == PYF__INSTDICT_INLINE, l->tp_inline_values != 0);
    CHECK_EQ_INT(PYF__TPFLAGS_MANAGED_DICT, l->tp_managed_dict);
    CHECK_EQ_INT(PYF__TPFLAGS_HEAPTYPE, l->tp_heaptype);
    CHECK_EQ_INT(PYF__TPFLAGS_BASE_EXC_SUBCLASS, l->tp_base_exc);
    CHECK_EQ_INT(PYF__TPFLAGS_TYPE_SUBCLASS, l->tp_type_subclass);
    CHECK_EQ_INT(PYF__DICT_KEYS_GENERAL, l->dict_keys_general);
    CHECK_EQ_INT(PYF__T_OBJECT_EX, l->t_object_ex);
}

/* ---- every kind ------------------------------------------------------------ */

static void scalars(fake_target *ft, pyf_target *t)
{
    expect(t, fake_singleton(ft, "NoneType"), PYF_VALUE_NONE, "NoneType", NULL);
    expect(t, fake_singleton(ft, "ellipsis"), PYF_VALUE_ELLIPSIS, "ellipsis", NULL);
    expect(t, fake_singleton(ft, "NotImplementedType"), PYF_VALUE_NOTIMPLEMENTED,
           "NotImplementedType", NULL);
    for (int b = 0; b < 2; b++) {
        pyf_values *v = read1(t, fake_bool(ft, b), NULL);
        CHECK_EQ_INT(V(v, 0)->kind, PYF_VALUE_BOOL);
        CHECK_EQ_INT(V(v, 0)->number, b);
        pyf_values_free(v);
    }
    static const int64_t ints[] = {0, 5, -7, (int64_t)1 << 40, -((int64_t)1 << 62)};
    for (size_t k = 0; k < NL(ints); k++) {
        pyf_values *v = read1(t, fake_int(ft, ints[k]), NULL);
        const pyf_value *x = V(v, 0);
        CHECK_EQ_INT(x->kind, PYF_VALUE_INT);
        CHECK_EQ_INT(x->number, ints[k] < 0 ? -1 : ints[k] > 0);
        uint64_t mag = 0;
        for (uint64_t d = x->length; d-- > 0;) {
            uint32_t digit;
            memcpy(&digit, x->data + 4 * d, 4);
            mag = mag << 30 | digit;
        }
        CHECK_EQ_INT(x->data_size, 4 * x->length);
        CHECK(mag == (ints[k] < 0 ? (uint64_t)0 - (uint64_t)ints[k] : (uint64_t)ints[k]));
        pyf_values_free(v);
    }
    uint32_t big[40];
    for (size_t k = 0; k < NL(big); k++)
        big[k] = (uint32_t)(k * 7919u) & 0x3fffffff;
    big[39] = 1;
    pyf_values *v = read1(t, fake_int_digits(ft, 1, big, NL(big)), NULL);
    CHECK_EQ_INT(V(v, 0)->length, 40);
    CHECK(V(v, 0)->data_size == sizeof big && memcmp(V(v, 0)->data, big, sizeof big) == 0);
    pyf_values_free(v);
    v = read1(t, fake_float(ft, 2.5), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_FLOAT && V(v, 0)->real == 2.5);
    pyf_values_free(v);
    v = read1(t, fake_complex(ft, 1.5, -2.0), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_COMPLEX && V(v, 0)->real == 1.5 && V(v, 0)->imag == -2.0);
    pyf_values_free(v);
}

static void strings(fake_target *ft, pyf_target *t)
{
    static const char *const texts[] = {"hello", "caf\xc3\xa9", "\xe2\x82\xac 5",
                                        "\xf0\x9f\x98\x80!", ""};
    for (size_t k = 0; k < NL(texts); k++) {
        pyf_values *v = read1(t, fake_str_ex(ft, texts[k], 0, 0, 0), NULL);
        CHECK_EQ_INT(V(v, 0)->kind, PYF_VALUE_STR);
        CHECK_EQ_STR(V(v, 0)->data, texts[k]);
        CHECK_EQ_INT(V(v, 0)->length, fake_utf8_len(texts[k]));
        pyf_values_free(v);
    }
    /* Latin-1 text in a UCS-4 object; a lone surrogate; a NUL */
    pyf_values *v = read1(t, fake_str_ex(ft, "ab", 4, 0, 0), NULL);
    CHECK_EQ_STR(V(v, 0)->data, "ab");
    pyf_values_free(v);
    uint32_t cps[] = {'x', 0xD800, 0, 'y'};
    v = read1(t, fake_str_cp(ft, cps, 4, 0), NULL);
    CHECK(V(v, 0)->data_size == 6 && memcmp(V(v, 0)->data, "x\xed\xa0\x80\0y", 6) == 0);
    CHECK_EQ_INT(V(v, 0)->length, 4);
    pyf_values_free(v);
    expect(t, fake_bytes(ft, "a\0b", 3), PYF_VALUE_BYTES, "bytes", NULL);
    v = read1(t, fake_bytearray(ft, "xyz", 3), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_BYTEARRAY && V(v, 0)->length == 3);
    CHECK_EQ_STR(V(v, 0)->data, "xyz");
    pyf_values_free(v);
}

static void expect_bad(pyf_target *t, uint64_t addr, const char *why);

/* A str that is not compact (PyUnicodeObject, its characters at its data
 * pointer), of UCS1 text (Latin-1, NUL-ended), as CPython 3.11's
 * deprecated APIs make: state its state word (0: never made ready, its
 * characters only in its wchar_t buffer, a UCS4 copy). */
static uint64_t legacy_str(fake_target *ft, const char *latin1, uint32_t state)
{
    size_t n = strlen(latin1);
    uint64_t s = fake_obj(ft, fake_type(ft, "str"), fake_off(ft, "unicode_object.size"));
    uint64_t data = fake_alloc(ft, n + 1);
    fake_write(ft, data, latin1, n + 1);
    fake_w64(ft, s + fake_off(ft, "unicode_object.length"), n);
    fake_w32(ft, s + fake_off(ft, "unicode_object.state"), state);
    if (fake_off(ft, "unicode_object.data") != UINT64_MAX)
        fake_w64(ft, s + fake_off(ft, "unicode_object.data"), data);
    if (state == 0 && fake_off(ft, "unicode_object.wstr") != UINT64_MAX) {
        uint64_t w = fake_alloc(ft, 4 * (n + 1));
        for (size_t i = 0; i <= n; i++)
            fake_w32(ft, w + 4 * i, (uint8_t)latin1[i]);
        fake_w64(ft, s + fake_off(ft, "unicode_object.wstr"), w);
        fake_w64(ft, s + fake_off(ft, "unicode_object.data"), 0);
    }
    return s;
}

/* 3.11's legacy strs: made ready, read through their data pointer; never
 * made ready (kind 0), unreadable, saying so; elsewhere (3.12+, where no str is
 * legacy) a header saying so is corrupt: unreadable. */
static void legacy_strs(fake_target *ft, pyf_target *t)
{
    const ft_layout *l = fake_layout(ft);
    uint64_t ready = legacy_str(ft, "h\xe9llo", l->str_kind1);
    uint64_t ascii = legacy_str(ft, "plain", l->str_kind1 | l->str_ascii);
    if (t->off.legacy_strs) {
        pyf_values *v = read1(t, ready, NULL);
        CHECK_EQ_INT(V(v, 0)->kind, PYF_VALUE_STR);
        CHECK_EQ_STR(V(v, 0)->data, "h\xc3\xa9llo");
        CHECK_EQ_INT(V(v, 0)->length, 5);
        pyf_values_free(v);
        expect(t, ascii, PYF_VALUE_STR, "str", "plain");
        /* cut by max_string: it must end where its length says */
        pyf_values_request r = req_of(0);
        r.max_string = 2;
        v = read1(t, ready, &r);
        CHECK(V(v, 0)->kind == PYF_VALUE_STR && (V(v, 0)->flags & PYF_VALUE_TRUNCATED));
        pyf_values_free(v);
        fake_w64(ft, ready + fake_off(ft, "unicode_object.length"), 1u << 20);
        v = read1(t, ready, &r);
        CHECK_EQ_INT(V(v, 0)->kind, PYF_VALUE_UNREADABLE);
        pyf_values_free(v);
    } else {
        expect_bad(t, ready, "not a readable str");
        expect_bad(t, ascii, "not a readable str");
    }
    /* not ready: where legacy strs exist, said so */
    expect_bad(t, legacy_str(ft, "wide", 0), t->off.legacy_strs ? "a str never made ready"
                                                                 : "not a readable str");
}

/* An OSError whose errno and strerror are set: its args, then those and
 * its file names (what its str() words); a builtin without them, and any
 * other exception, its args only. */
static void oserrors(fake_target *ft, pyf_target *t)
{
    const ft_layout *l = fake_layout(ft);
    uint64_t fnf = fake_type(ft, "FileNotFoundError");
    fake_type_set_flags(ft, fnf, l->tp_base_exc);
    uint64_t args[2] = {fake_int(ft, 2), fake_str(ft, "No such file or directory")};
    uint64_t e = fake_exception(ft, fnf, fake_tuple(ft, args, 2));
    fake_w64(ft, e + l->values.oserror_errno, args[0]);
    fake_w64(ft, e + l->values.oserror_strerror, args[1]);
    fake_w64(ft, e + l->values.oserror_filename, fake_str(ft, "/x"));
    pyf_values *v = read1(t, e, NULL);
    CHECK_EQ_INT(V(v, 0)->nchildren, 4);
    CHECK_EQ_INT(kid(v, V(v, 0), 0)->kind, PYF_VALUE_TUPLE);
    CHECK_EQ_INT(kid(v, V(v, 0), 1)->kind, PYF_VALUE_INT);
    CHECK_EQ_STR(kid(v, V(v, 0), 2)->data, "No such file or directory");
    CHECK_EQ_STR(kid(v, V(v, 0), 3)->data, "/x");
    pyf_values_free(v);
    fake_w64(ft, e + l->values.oserror_filename2, fake_str(ft, "/y"));
    v = read1(t, e, NULL);
    CHECK(V(v, 0)->nchildren == 5 && strcmp(kid(v, V(v, 0), 4)->data, "/y") == 0);
    pyf_values_free(v);
    fake_w64(ft, e + l->values.oserror_strerror, 0); /* str() is BaseException's */
    v = read1(t, e, NULL);
    CHECK_EQ_INT(V(v, 0)->nchildren, 1);
    pyf_values_free(v);
    /* a class deriving from OSError: its args only (its str() is unknown) */
    uint64_t mine = fake_heap_type(ft, "FileNotFoundError", "app", "FileNotFoundError",
                                   l->tp_base_exc, 0, 0);
    uint64_t m = fake_exception(ft, mine, fake_tuple(ft, args, 2));
    fake_w64(ft, m + l->values.oserror_errno, args[0]);
    fake_w64(ft, m + l->values.oserror_strerror, args[1]);
    v = read1(t, m, NULL);
    CHECK_EQ_INT(V(v, 0)->nchildren, 1);
    pyf_values_free(v);
}

static void containers(fake_target *ft, pyf_target *t)
{
    uint64_t items[3] = {fake_int(ft, 1), fake_str(ft, "two"), fake_singleton(ft, "NoneType")};
    struct { uint64_t obj; uint32_t kind; } seqs[] = {
        {fake_tuple(ft, items, 3), PYF_VALUE_TUPLE}, {fake_list(ft, items, 3), PYF_VALUE_LIST},
        {fake_set(ft, "set", items, 3), PYF_VALUE_SET},
        {fake_set(ft, "frozenset", items, 3), PYF_VALUE_FROZENSET},
    };
    for (size_t k = 0; k < NL(seqs); k++) {
        pyf_values *v = read1(t, seqs[k].obj, NULL);
        const pyf_value *x = V(v, 0);
        CHECK_EQ_INT(x->kind, seqs[k].kind);
        CHECK_EQ_INT(x->length, 3);
        CHECK_EQ_INT(x->nchildren, 3);
        CHECK_EQ_INT(kid(v, x, 0)->kind, PYF_VALUE_INT);
        CHECK_EQ_STR(kid(v, x, 1)->data, "two");
        CHECK_EQ_INT(kid(v, x, 2)->kind, PYF_VALUE_NONE);
        pyf_values_free(v);
    }
    uint64_t kv[4] = {fake_str(ft, "a"), fake_int(ft, 1), fake_int(ft, 2), fake_str(ft, "b")};
    for (int unicode = 0; unicode < 2; unicode++) {
        pyf_values *v = read1(t, fake_dict(ft, kv, unicode ? 1 : 2, unicode), NULL);
        const pyf_value *x = V(v, 0);
        CHECK_EQ_INT(x->kind, PYF_VALUE_DICT);
        CHECK_EQ_INT(x->nchildren, unicode ? 2 : 4);
        CHECK_EQ_STR(kid(v, x, 0)->data, "a");
        CHECK_EQ_INT(kid(v, x, 1)->kind, PYF_VALUE_INT);
        pyf_values_free(v);
    }
    /* a split table: keys a, b, c; values in slots 2, 0 (insertion order) */
    uint64_t skeys[6] = {fake_str(ft, "a"), 0, fake_str(ft, "b"), 0, fake_str(ft, "c"), 0};
    uint64_t svals[4] = {fake_int(ft, 10), 0, fake_int(ft, 30), 0};
    uint8_t order[2] = {2, 0};
    uint64_t split = fake_dict_of(ft, fake_dict_keys(ft, skeys, 3, 1),
                                  fake_dict_values(ft, svals, order, 2, 4), 2);
    pyf_values *v = read1(t, split, NULL);
    CHECK_EQ_INT(V(v, 0)->nchildren, 4);
    CHECK_EQ_STR(kid(v, V(v, 0), 0)->data, "c");
    CHECK_EQ_STR(kid(v, V(v, 0), 2)->data, "a");
    pyf_values_free(v);
    v = read1(t, fake_range(ft, 1, 10, 3), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_RANGE && V(v, 0)->nchildren == 3);
    CHECK_EQ_INT(kid(v, V(v, 0), 2)->kind, PYF_VALUE_INT);
    pyf_values_free(v);
}

static void callables(fake_target *ft, pyf_target *t)
{
    expect(t, fake_type(ft, "int"), PYF_VALUE_TYPE, "type", "int");
    uint64_t heap = fake_heap_type(ft, "Point", "geometry", "Shapes.Point", 0, 0, 0);
    expect(t, heap, PYF_VALUE_TYPE, "type", "geometry.Shapes.Point");
    expect(t, fake_heap_type(ft, "B", "builtins", "B", 0, 0, 0), PYF_VALUE_TYPE, "type", "B");
    /* a class of a metaclass: a class, unless the metaclass has a __repr__ */
    uint64_t meta = fake_heap_type(ft, "abc.ABCMeta", "abc", "ABCMeta",
                                   PYF__TPFLAGS_TYPE_SUBCLASS, 0, 0);
    uint64_t cls = fake_heap_type(ft, "Base", "app", "Base", 0, 0, 0);
    fake_w64(ft, cls + fake_off(ft, "pyobject.ob_type"), meta);
    expect(t, cls, PYF_VALUE_TYPE, "abc.ABCMeta", "app.Base");
    uint64_t rkv[2] = {fake_str(ft, "__repr__"), fake_function(ft, "EnumType.__repr__")};
    uint64_t emeta = fake_heap_type(ft, "enum.EnumType", NULL, "EnumType",
                                    PYF__TPFLAGS_TYPE_SUBCLASS, 0, 0);
    fake_w64(ft, emeta + fake_layout(ft)->values.type_dict, fake_dict(ft, rkv, 1, 1));
    uint64_t color = fake_heap_type(ft, "Color", "app", "Color", 0, 0, 0);
    fake_w64(ft, color + fake_off(ft, "pyobject.ob_type"), emeta);
    expect(t, color, PYF_VALUE_OTHER, "EnumType", NULL);
    expect(t, fake_function(ft, "outer.<locals>.inner"), PYF_VALUE_FUNCTION, "function",
           "outer.<locals>.inner");
    uint64_t mod = fake_module(ft, "json", "/usr/lib/json/__init__.py");
    pyf_values *v = read1(t, mod, NULL);
    CHECK_EQ_INT(V(v, 0)->kind, PYF_VALUE_MODULE);
    CHECK_EQ_STR(V(v, 0)->data, "json");
    CHECK_EQ_INT(V(v, 0)->nchildren, 1);
    CHECK_EQ_STR(kid(v, V(v, 0), 0)->data, "/usr/lib/json/__init__.py");
    pyf_values_free(v);
    v = read1(t, fake_module(ft, "sys", NULL), NULL);
    CHECK_EQ_INT(V(v, 0)->nchildren, 0);
    pyf_values_free(v);
    v = read1(t, fake_builtin(ft, "len", mod), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_BUILTIN && V(v, 0)->nchildren == 0);
    CHECK_EQ_STR(V(v, 0)->data, "len");
    pyf_values_free(v);
    uint64_t lst = fake_list(ft, NULL, 0);
    v = read1(t, fake_builtin(ft, "append", lst), NULL);
    CHECK_EQ_INT(V(v, 0)->nchildren, 1);
    CHECK_EQ_INT(kid(v, V(v, 0), 0)->kind, PYF_VALUE_LIST);
    pyf_values_free(v);
    v = read1(t, fake_method(ft, fake_function(ft, "C.m"), fake_int(ft, 3)), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_METHOD && V(v, 0)->nchildren == 2);
    CHECK_EQ_STR(kid(v, V(v, 0), 0)->data, "C.m");
    pyf_values_free(v);
    v = read1(t, fake_cell(ft, fake_int(ft, 4)), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_CELL && V(v, 0)->nchildren == 1);
    pyf_values_free(v);
    v = read1(t, fake_cell(ft, 0), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_CELL && V(v, 0)->nchildren == 0);
    pyf_values_free(v);
    static const fake_loc L[] = {{2, 3, 3, 0, 4}};
    v = read1(t, fake_code(ft, "/a/m.py", "M.f", 3, L, 1), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_CODE && V(v, 0)->number == 3);
    CHECK_EQ_STR(V(v, 0)->data, "f");
    CHECK_EQ_STR(kid(v, V(v, 0), 0)->data, "/a/m.py");
    pyf_values_free(v);
    expect(t, fake_genobj(ft, "generator", "g"), PYF_VALUE_GENERATOR, "generator", "g");
    expect(t, fake_genobj(ft, "coroutine", "C.co"), PYF_VALUE_COROUTINE, "coroutine", "C.co");
    expect(t, fake_genobj(ft, "async_generator", "ag"), PYF_VALUE_ASYNC_GENERATOR,
           "async_generator", "ag");
    uint64_t ve = fake_type(ft, "ValueError");
    fake_type_set_flags(ft, ve, PYF__TPFLAGS_BASE_EXC_SUBCLASS);
    uint64_t arg = fake_str(ft, "bad");
    v = read1(t, fake_exception(ft, ve, fake_tuple(ft, &arg, 1)), NULL);
    CHECK(V(v, 0)->kind == PYF_VALUE_EXCEPTION && V(v, 0)->nchildren == 1);
    CHECK_EQ_STR(V(v, 0)->type_name, "ValueError");
    CHECK_EQ_INT(kid(v, V(v, 0), 0)->kind, PYF_VALUE_TUPLE);
    pyf_values_free(v);
    uint64_t mine = fake_heap_type(ft, "MyError", "app", "MyError",
                                   PYF__TPFLAGS_BASE_EXC_SUBCLASS, 0, 0);
    expect(t, fake_exception(ft, mine, fake_tuple(ft, NULL, 0)), PYF_VALUE_EXCEPTION,
           "app.MyError", NULL);
}

static void others(fake_target *ft, pyf_target *t)
{
    uint64_t kv[4] = {fake_str(ft, "x"), fake_int(ft, 1), fake_str(ft, "y"), fake_str(ft, "z")};
    uint64_t cls = fake_heap_type(ft, "P", "shapes", "P", PYF__TPFLAGS_MANAGED_DICT, 0, 0);
    uint64_t p = fake_instance_dict(ft, cls, fake_dict(ft, kv, 2, 1));
    expect(t, p, PYF_VALUE_OTHER, "shapes.P", NULL);
    pyf_values_request r = req_of(PYF_VALUES_ATTRS);
    pyf_values *v = read1(t, p, &r);
    CHECK_EQ_INT(V(v, 0)->nchildren, 4);
    CHECK_EQ_STR(kid(v, V(v, 0), 0)->data, "x");
    CHECK_EQ_STR(kid(v, V(v, 0), 3)->data, "z");
    pyf_values_free(v);
    /* inline values: keys x, y shared by the type */
    uint64_t ck[4] = {fake_str(ft, "x"), 0, fake_str(ft, "y"), 0};
    uint64_t cls2 = fake_heap_type(ft, "Q", "shapes", "Q",
                                   PYF__TPFLAGS_MANAGED_DICT | fake_layout(ft)->tp_inline_values,
                                   0, fake_dict_keys(ft, ck, 2, 1));
    uint64_t vals[2] = {fake_int(ft, 5), p};
    uint8_t order[2] = {0, 1};
    uint64_t q = fake_instance_inline(ft, cls2, vals, order, 2, 2);
    v = read1(t, q, &r);
    CHECK_EQ_STR(V(v, 0)->type_name, "shapes.Q");
    CHECK_EQ_INT(V(v, 0)->nchildren, 4);
    CHECK_EQ_STR(kid(v, V(v, 0), 2)->data, "y");
    /* one level: the P instance among the attributes shows no attributes */
    CHECK_EQ_INT(kid(v, V(v, 0), 3)->kind, PYF_VALUE_OTHER);
    CHECK_EQ_INT(kid(v, V(v, 0), 3)->nchildren, 0);
    pyf_values_free(v);
    /* without PYF_VALUES_ATTRS: no children */
    v = read1(t, q, NULL);
    CHECK_EQ_INT(V(v, 0)->nchildren, 0);
    pyf_values_free(v);
    /* __slots__: u and w set, v not */
    static const char *const names[] = {"u", "v", "w"};
    uint64_t sv[3] = {fake_int(ft, 1), 0, fake_str(ft, "ww")};
    uint64_t st = fake_slots_type(ft, "S", names, 3);
    uint64_t so = fake_slots_instance(ft, st, sv, 3);
    v = read1(t, so, &r);
    CHECK_EQ_STR(V(v, 0)->type_name, "app.S");
    CHECK_EQ_INT(V(v, 0)->nchildren, 4);
    CHECK_EQ_STR(kid(v, V(v, 0), 0)->data, "u");
    CHECK_EQ_STR(kid(v, V(v, 0), 2)->data, "w");
    CHECK_EQ_STR(kid(v, V(v, 0), 3)->data, "ww");
    pyf_values_free(v);
    /* a subclass's own slots first, then those of the class it derives from */
    static const char *const sub_names[] = {"z"};
    uint64_t sub_type = fake_slots_subtype(ft, "T", sub_names, 1, st);
    uint64_t subv[4] = {fake_int(ft, 1), 0, fake_str(ft, "ww"), fake_str(ft, "zz")};
    uint64_t sub = fake_slots_instance(ft, sub_type, subv, 4);
    v = read1(t, sub, &r);
    CHECK_EQ_STR(V(v, 0)->type_name, "app.T");
    CHECK_EQ_INT(V(v, 0)->nchildren, 6);
    CHECK_EQ_STR(kid(v, V(v, 0), 0)->data, "z");
    CHECK_EQ_STR(kid(v, V(v, 0), 1)->data, "zz");
    CHECK_EQ_STR(kid(v, V(v, 0), 2)->data, "u");
    CHECK_EQ_STR(kid(v, V(v, 0), 5)->data, "ww");
    pyf_values_free(v);
    /* a base chain that loops (T's base made T's subclass): bounded, no
     * slot twice */
    fake_type_set_base(ft, st, sub_type);
    v = read1(t, sub, &r);
    CHECK_EQ_INT(V(v, 0)->nchildren, 6);
    pyf_values_free(v);
    fake_type_set_base(ft, st, 0);
    /* a static type outside the builtins */
    expect(t, fake_obj(ft, fake_type(ft, "collections.OrderedDict"), 64), PYF_VALUE_OTHER,
           "collections.OrderedDict", NULL);
}

/* ---- a frame's locals ------------------------------------------------------- */

static void frame_locals(fake_target *ft, pyf_target *t)
{
    uint64_t code, globals;
    uint64_t f = fake_values_frame(ft, &code, &globals);
    pyf_values *v = NULL;
    CHECK_RC(pyf_frame_locals(t, f, NULL, &v), PYF_OK);
    REQUIRE(v != NULL && v->nlocals > 12);
    check_tree(v);
    CHECK_ADDR(v->code_addr, code);
    CHECK_ADDR(v->globals_addr, globals);
    const pyf_local *l = v->locals;
    static const struct { uint32_t kind, flags; } want[] = {
        {PYF_LOCAL_ARG, 0}, {PYF_LOCAL_ARG, 0}, {PYF_LOCAL_ARG, PYF_LOCAL_KWONLY},
        {PYF_LOCAL_ARG, PYF_LOCAL_VARARGS}, {PYF_LOCAL_ARG, PYF_LOCAL_VARKEYWORDS},
        {PYF_LOCAL_LOCAL, PYF_LOCAL_UNBOUND}, {PYF_LOCAL_CELL, 0}, {PYF_LOCAL_CELL, 0},
        {PYF_LOCAL_CELL, PYF_LOCAL_UNBOUND}, {PYF_LOCAL_LOCAL, PYF_LOCAL_HIDDEN},
        {PYF_LOCAL_LOCAL, 0}, {PYF_LOCAL_FREE, 0},
    };
    for (size_t i = 0; i < NL(want); i++) {
        CHECK_MSG(l[i].kind == want[i].kind && l[i].flags == want[i].flags,
                  "local %s: kind %u flags 0x%x", l[i].name, l[i].kind, l[i].flags);
        CHECK_EQ_INT(l[i].value == PYF_NO_VALUE, (want[i].flags & PYF_LOCAL_UNBOUND) != 0);
    }
    CHECK_EQ_STR(l[3].name, "args");
    CHECK_EQ_STR(V(v, l[1].value)->data, "bee");          /* a cell argument's contents */
    CHECK_EQ_INT(V(v, l[6].value)->kind, PYF_VALUE_INT);  /* after MAKE_CELL */
    CHECK_EQ_INT(V(v, l[7].value)->kind, PYF_VALUE_INT);  /* before */
    CHECK_EQ_STR(V(v, l[11].value)->data, "free");
    const pyf_value *n = V(v, l[10].value);
    CHECK(n->kind == PYF_VALUE_INT && n->number == 1 && n->length == 1);
    CHECK(n->data_size == 4 && n->data[0] == 42);
    for (uint32_t i = 12; i < v->nlocals; i++) /* one of every other kind */
        CHECK_MSG(l[i].value != PYF_NO_VALUE && V(v, l[i].value)->kind != PYF_VALUE_UNREADABLE,
                  "%s: %s", l[i].name, l[i].value != PYF_NO_VALUE ? V(v, l[i].value)->data : "");
    pyf_values_free(v);
    /* a frame that runs no code object */
    uint64_t bad = fake_locals_frame(ft, fake_int(ft, 1), 0, NULL, 0);
    CHECK_RC(pyf_frame_locals(t, bad, NULL, &v), PYF_ECORRUPT);
    CHECK(v == NULL);
    CHECK_RC(pyf_frame_locals(t, 0, NULL, &v), PYF_EINVAL);
    CHECK_RC(pyf_frame_locals(NULL, f, NULL, &v), PYF_EINVAL);
    CHECK_RC(pyf_value_read(t, 0, NULL, &v), PYF_EINVAL);
    pyf_values_free(NULL);
}

/* What earlier calls found at an address (what the decoder reads ahead
 * by) never stands for what is there now: a type renamed, a list's item
 * replaced by another kind, a frame's code object replaced, each between
 * two calls on the same target. */
static void read_ahead(fake_target *ft, pyf_target *t)
{
    uint64_t tp_name = fake_off(ft, "type_object.tp_name");
    uint64_t alpha = fake_type(ft, "alpha"), beta = fake_type(ft, "beta");
    uint64_t items[2] = {fake_obj(ft, alpha, 64), fake_int(ft, 7)};
    uint64_t lst = fake_list(ft, items, 2);
    for (int round = 0; round < 2; round++) {
        pyf_values *v = read1(t, lst, NULL);
        CHECK_EQ_STR(kid(v, V(v, 0), 0)->type_name, round ? "beta" : "alpha");
        CHECK_EQ_INT(kid(v, V(v, 0), 1)->kind, round ? PYF_VALUE_STR : PYF_VALUE_INT);
        pyf_values_free(v);
        fake_w64(ft, alpha + tp_name, fake_r64(ft, beta + tp_name));
        fake_w64(ft, fake_r64(ft, lst + fake_off(ft, "list_object.ob_item")) + 8,
                 fake_str(ft, "now"));
    }
    static const fake_loc L[] = {{2, 1, 1, -1, -1}};
    static const char *const n1[] = {"a", "b"}, *const n2[] = {"p", "q", "r"};
    static const uint8_t kinds[] = {0x20, 0x20, 0x20};
    uint64_t c1 = fake_code(ft, "/m.py", "f", 1, L, 1), c2 = fake_code(ft, "/m.py", "g", 1, L, 1);
    fake_code_locals(ft, c1, n1, kinds, 2, 0, 0, 0);
    fake_code_locals(ft, c2, n2, kinds, 3, 0, 0, 0);
    uint64_t slots[3] = {fake_int(ft, 1), fake_str(ft, "two"), fake_int(ft, 3)};
    uint64_t f = fake_locals_frame(ft, c1, 0, slots, 3);
    uint64_t exe = f + fake_off(ft, "interpreter_frame.executable");
    for (int round = 0; round < 2; round++) {
        pyf_values *v = NULL;
        CHECK_RC(pyf_frame_locals(t, f, NULL, &v), PYF_OK);
        REQUIRE(v != NULL);
        check_tree(v);
        CHECK_EQ_INT(v->nlocals, round ? 3 : 2);
        CHECK_EQ_STR(v->locals[0].name, round ? "p" : "a");
        CHECK_EQ_STR(v->locals[1].name, round ? "q" : "b");
        CHECK_EQ_STR(V(v, v->locals[1].value)->data, "two");
        pyf_values_free(v);
        fake_w64(ft, exe, c2 | (fake_r64(ft, exe) & 7));
    }
    /* warm, a batching reader reads the frame, then its code object, names
     * and objects, then their types: one call each */
    pyf_stats s0, s1;
    pyf_values *v = NULL;
    pyf_target_stats(t, &s0);
    CHECK_RC(pyf_frame_locals(t, f, NULL, &v), PYF_OK);
    pyf_target_stats(t, &s1);
    pyf_values_free(v);
    CHECK_MSG(s1.read_calls - s0.read_calls <= 3, "%llu reader calls for 3 locals",
              (unsigned long long)(s1.read_calls - s0.read_calls));
}

/* ---- limits and cycles ---------------------------------------------------- */

static void limits(fake_target *ft, pyf_target *t)
{
    pyf_values_request r = req_of(0);
    r.max_string = 3;
    pyf_values *v = read1(t, fake_str_ex(ft, "abcdef", 0, 0, 0), &r);
    CHECK_EQ_STR(V(v, 0)->data, "abc");
    CHECK(V(v, 0)->flags & PYF_VALUE_TRUNCATED);
    CHECK_EQ_INT(V(v, 0)->length, 6);
    pyf_values_free(v);
    v = read1(t, fake_bytes(ft, "abcdef", 6), &r);
    CHECK(V(v, 0)->data_size == 3 && (V(v, 0)->flags & PYF_VALUE_TRUNCATED));
    pyf_values_free(v);
    uint64_t items[10];
    for (int i = 0; i < 10; i++)
        items[i] = fake_int(ft, i);
    r = req_of(0);
    r.max_items = 4;
    uint64_t kv[20];
    for (int i = 0; i < 10; i++)
        kv[2 * i] = kv[2 * i + 1] = items[i];
    uint64_t objs[] = {fake_list(ft, items, 10), fake_tuple(ft, items, 10),
                       fake_set(ft, "set", items, 10), fake_dict(ft, kv, 10, 0)};
    for (size_t k = 0; k < NL(objs); k++) {
        v = read1(t, objs[k], &r);
        CHECK(V(v, 0)->flags & PYF_VALUE_TRUNCATED);
        CHECK_EQ_INT(V(v, 0)->length, 10);
        CHECK_EQ_INT(V(v, 0)->nchildren, k == 3 ? 8 : 4);
        pyf_values_free(v);
    }
    /* depth: [[[[1]]]] with max_depth 2 */
    uint64_t nest = items[1];
    for (int d = 0; d < 4; d++)
        nest = fake_list(ft, &nest, 1);
    r = req_of(0);
    r.max_depth = 2;
    v = read1(t, nest, &r);
    const pyf_value *x = kid(v, kid(v, V(v, 0), 0), 0);
    CHECK(x->kind == PYF_VALUE_LIST && (x->flags & PYF_VALUE_TOO_DEEP) && x->nchildren == 0);
    CHECK_EQ_INT(x->length, 1);
    pyf_values_free(v);
    /* budgets: objects, then bytes */
    r = req_of(0);
    r.max_objects = 4;
    v = read1(t, objs[0], &r);
    CHECK_EQ_INT(V(v, 0)->nchildren, 10);
    CHECK(kid(v, V(v, 0), 2)->kind == PYF_VALUE_INT);
    CHECK(kid(v, V(v, 0), 3)->kind == PYF_VALUE_UNREADABLE &&
          (kid(v, V(v, 0), 3)->flags & PYF_VALUE_BUDGET));
    CHECK_EQ_INT(v->objects_read, 4);
    pyf_values_free(v);
    r = req_of(0);
    r.max_bytes = 1500;
    v = read1(t, objs[0], &r);
    CHECK(v->bytes_read <= 1500);
    CHECK_EQ_INT(kid(v, V(v, 0), 0)->kind, PYF_VALUE_INT);
    CHECK(kid(v, V(v, 0), 9)->flags & PYF_VALUE_BUDGET);
    pyf_values_free(v);
    /* a frame's names are read whatever the budget */
    uint64_t code, globals;
    uint64_t f = fake_values_frame(ft, &code, &globals);
    r = req_of(0);
    r.max_bytes = 64;
    CHECK_RC(pyf_frame_locals(t, f, &r, &v), PYF_OK);
    REQUIRE(v != NULL);
    check_tree(v);
    CHECK_EQ_STR(v->locals[v->nlocals - 1].name, "slotted");
    CHECK(V(v, v->locals[0].value)->flags & PYF_VALUE_BUDGET);
    pyf_values_free(v);
    /* a request too small to be one */
    pyf_values_request tiny = {8, 0, 0, 0, 0, 0, 0};
    CHECK_RC(pyf_value_read(t, items[0], &tiny, &v), PYF_EINVAL);
}

static void cycles(fake_target *ft, pyf_target *t)
{
    uint64_t one = fake_int(ft, 1);
    uint64_t lst = fake_list(ft, &one, 1);
    /* l = [1, l] */
    uint64_t arr = fake_alloc(ft, 16);
    fake_w64(ft, arr, one);
    fake_w64(ft, arr + 8, lst);
    fake_w64(ft, lst + fake_off(ft, "list_object.ob_item"), arr);
    fake_w64(ft, lst + fake_off(ft, "list_object.ob_size"), 2);
    pyf_values *v = read1(t, lst, NULL);
    const pyf_value *self = kid(v, V(v, 0), 1);
    CHECK(self->kind == PYF_VALUE_LIST && (self->flags & PYF_VALUE_CYCLE) && !self->nchildren);
    CHECK_ADDR(self->addr, lst);
    pyf_values_free(v);
    /* d = {"d": d}, and the same list twice side by side is no cycle */
    uint64_t kv[2] = {fake_str(ft, "d"), 0};
    uint64_t d = fake_dict(ft, kv, 1, 1);
    uint64_t keys = fake_r64(ft, d + fake_off(ft, "dict_object.ma_keys"));
    const ft_layout *l = fake_layout(ft);
    uint8_t log2ib;
    fake_read_raw(ft, keys + l->values.keys_log2_index_bytes, &log2ib, 1);
    fake_w64(ft, keys + l->values.keys_indices + (1u << log2ib) + 8, d); /* the value */
    v = read1(t, d, NULL);
    CHECK(kid(v, V(v, 0), 1)->flags & PYF_VALUE_CYCLE);
    pyf_values_free(v);
    uint64_t inner = fake_list(ft, &one, 1);
    uint64_t pair[2] = {inner, inner};
    v = read1(t, fake_tuple(ft, pair, 2), NULL);
    CHECK(!(kid(v, V(v, 0), 1)->flags & PYF_VALUE_CYCLE) && kid(v, V(v, 0), 1)->nchildren == 1);
    pyf_values_free(v);
}

/* ---- corrupted objects ---------------------------------------------------- */

static void expect_bad(pyf_target *t, uint64_t addr, const char *why)
{
    pyf_values *v = read1(t, addr, NULL);
    CHECK_MSG(V(v, 0)->kind == PYF_VALUE_UNREADABLE && V(v, 0)->data != NULL &&
                  strstr(V(v, 0)->data, why) != NULL,
              "kind %u, data \"%s\", expected \"%s\"", V(v, 0)->kind,
              V(v, 0)->data ? V(v, 0)->data : "", why);
    pyf_values_free(v);
}

static void corrupted(fake_target *ft, pyf_target *t)
{
    uint64_t o = fake_int(ft, 5);
    fake_w64(ft, o + fake_off(ft, "pyobject.ob_type"), 0x10);
    expect_bad(t, o, "bad type pointer 0x10");
    o = fake_int(ft, 5);
    fake_w64(ft, o + fake_off(ft, "pyobject.ob_type"), fake_unmapped_addr(ft));
    expect_bad(t, o, "bad type pointer");
    uint64_t tup = fake_tuple(ft, NULL, 0);
    fake_w64(ft, tup + fake_off(ft, "tuple_object.ob_size"), (uint64_t)1 << 50);
    expect_bad(t, tup, "implausible size");
    uint64_t lst = fake_list(ft, NULL, 0);
    fake_w64(ft, lst + fake_off(ft, "list_object.ob_size"), UINT64_MAX);
    expect_bad(t, lst, "implausible size");
    expect_bad(t, fake_unmapped_addr(ft), "unreadable memory");
    expect_bad(t, 0x11, "bad object pointer");
    if (!fake_layout(ft)->free_threaded) {
        o = fake_int(ft, 5);
        fake_w64(ft, o, 0);
        expect_bad(t, o, "reference count 0");
    }
    uint64_t s = fake_str_ex(ft, "text", 0, 0, 0);
    fake_w32(ft, s + fake_off(ft, "unicode_object.state"), 0);
    expect_bad(t, s, "not a readable str");
    uint64_t d = fake_dict(ft, NULL, 0, 1);
    fake_w64(ft, d + fake_layout(ft)->values.dict_used, 3);
    fake_w64(ft, d + fake_off(ft, "dict_object.ma_keys"), fake_unmapped_addr(ft));
    expect_bad(t, d, "dict keys");
    /* an unreadable item among readable ones: the rest still decodes */
    uint64_t items[3] = {fake_int(ft, 1), fake_unmapped_addr(ft), fake_int(ft, 3)};
    pyf_values *v = read1(t, fake_list(ft, items, 3), NULL);
    CHECK_EQ_INT(kid(v, V(v, 0), 1)->kind, PYF_VALUE_UNREADABLE);
    CHECK_EQ_INT(kid(v, V(v, 0), 2)->kind, PYF_VALUE_INT);
    pyf_values_free(v);
    /* an unreadable local among others: the frame still decodes */
    uint64_t code, globals;
    uint64_t f = fake_values_frame(ft, &code, &globals);
    uint64_t ls = fake_off(ft, "interpreter_frame.localsplus");
    fake_w64(ft, f + ls, fake_unmapped_addr(ft));
    CHECK_RC(pyf_frame_locals(t, f, NULL, &v), PYF_OK);
    REQUIRE(v != NULL);
    CHECK_EQ_INT(V(v, v->locals[0].value)->kind, PYF_VALUE_UNREADABLE);
    CHECK_EQ_INT(V(v, v->locals[2].value)->kind, PYF_VALUE_INT);
    pyf_values_free(v);
}

static bool same_str(const char *a, const char *b)
{
    return (a == NULL) == (b == NULL) && (a == NULL || strcmp(a, b) == 0);
}

/* Two results are the same, node for node and byte for byte. */
static bool same_values(const pyf_values *a, const pyf_values *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    if (a->nvalues != b->nvalues || a->nlocals != b->nlocals || a->code_addr != b->code_addr ||
        a->globals_addr != b->globals_addr || a->objects_read != b->objects_read ||
        a->bytes_read != b->bytes_read)
        return false;
    for (uint32_t i = 0; i < a->nvalues; i++) {
        const pyf_value *x = &a->values[i], *y = &b->values[i];
        if (x->addr != y->addr || !same_str(x->type_name, y->type_name) ||
            x->data_size != y->data_size || (x->data == NULL) != (y->data == NULL) ||
            (x->data_size && memcmp(x->data, y->data, x->data_size) != 0) ||
            x->length != y->length || memcmp(&x->real, &y->real, 8) != 0 ||
            memcmp(&x->imag, &y->imag, 8) != 0 || x->number != y->number ||
            x->kind != y->kind || x->flags != y->flags || x->first_child != y->first_child ||
            x->nchildren != y->nchildren)
            return false;
    }
    for (uint32_t i = 0; i < a->nlocals; i++) {
        const pyf_local *x = &a->locals[i], *y = &b->locals[i];
        if (!same_str(x->name, y->name) || x->kind != y->kind || x->flags != y->flags ||
            x->value != y->value)
            return false;
    }
    return true;
}

/* The frame's locals read by t (no readv: every read made as the decoder
 * asks) and by tv (a batching reader: read ahead, its hints from every
 * earlier state of the image): the same result, the same failure. */
static pyf_values *locals_both(pyf_target *t, pyf_target *tv, uint64_t frame,
                               const pyf_values_request *r, int *rc)
{
    pyf_values *v = NULL, *w = NULL;
    *rc = pyf_frame_locals(t, frame, r, &v);
    int rcv = pyf_frame_locals(tv, frame, r, &w);
    CHECK_MSG(rcv == *rc && same_values(v, w), "read ahead: rc %d against %d, %s result",
              rcv, *rc, same_values(v, w) ? "the same" : "another");
    pyf_values_free(w);
    return v;
}

/* Every object of the image unreadable in turn, then each of its words
 * overwritten with hostile values: the frame's locals always decode (or
 * the call fails cleanly), as a well-formed tree, the same when read ahead
 * (tv). */
static void sweeps(fake_target *ft, pyf_target *t, pyf_target *tv, uint64_t frame)
{
    static const uint64_t hostile[] = {0, 1, 0x10, UINT64_MAX, (uint64_t)1 << 62, 0x7fffffff};
    size_t nobj = fake_nobjects(ft);
    pyf_values_request r = req_of(PYF_VALUES_ATTRS);
    fake_save(ft);
    for (size_t i = 0; i < nobj; i++) {
        uint64_t a;
        size_t size;
        fake_object(ft, i, &a, &size);
        fake_add_fault(ft, a, size, PYF_EFAULT);
        int rc;
        pyf_values *v = locals_both(t, tv, frame, &r, &rc);
        CHECK(rc == PYF_OK || rc == PYF_EFAULT || rc == PYF_ECORRUPT);
        if (v != NULL)
            check_tree(v);
        pyf_values_free(v);
        fake_clear_faults(ft);
        size_t words = size / 8 < 16 ? size / 8 : 16;
        for (size_t w = 0; w < words; w++)
            for (size_t h = 0; h < NL(hostile) + 2; h++) {
                uint64_t val = h < NL(hostile) ? hostile[h] : h == NL(hostile) ? a : a + 8;
                fake_w64(ft, a + 8 * w, val);
                v = locals_both(t, tv, frame, &r, &rc);
                CHECK(fake_known_error(rc));
                if (v != NULL)
                    check_tree(v);
                pyf_values_free(v);
                fake_restore(ft);
            }
    }
}

static void one_layout(const ft_layout *l, int sweep)
{
    check_begin(l->name);
    layouts(l);
    fake_target *ft = fake_new_layout(l);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    scalars(ft, t);
    strings(ft, t);
    legacy_strs(ft, t);
    oserrors(ft, t);
    containers(ft, t);
    callables(ft, t);
    others(ft, t);
    frame_locals(ft, t);
    read_ahead(ft, t);
    limits(ft, t);
    cycles(ft, t);
    corrupted(ft, t);
    pyf_target_close(t);
    fake_free(ft);
    if (sweep) {
        ft = fake_new_layout(l);
        t = fake_open(ft, NULL, 0);
        pyf_target *tv = fake_open(ft, NULL, 1);
        REQUIRE(t != NULL && tv != NULL);
        uint64_t code, globals;
        sweeps(ft, t, tv, fake_values_frame(ft, &code, &globals));
        pyf_target_close(t);
        pyf_target_close(tv);
        fake_free(ft);
    }
    check_end();
}

/* test_values [K N]: the layouts whose index is K modulo N (all of them
 * without arguments); ctest runs the parts side by side, the sweeps under
 * ASan being most of the C tests' time. */
int main(int argc, char **argv)
{
    int missing = ft_layouts_missing_exit();
    if (missing != 0)
        return missing;
    long part = 0, parts = 1;
    if (argc == 3) {
        part = strtol(argv[1], NULL, 10);
        parts = strtol(argv[2], NULL, 10);
    }
    if (argc != 1 && (argc != 3 || parts < 1 || part < 0 || part >= parts)) {
        fprintf(stderr, "usage: test_values [PART PARTS]\n");
        return 2;
    }
    long i = 0;
    for (const ft_layout *l = ft_layouts; l->name != NULL; l++, i++)
        if (i % parts == part) {
            fake_watchdog(300, l->name); /* each layout, its sweeps under ASan */
            one_layout(l, 1);
        }
    return check_failures ? 1 : 0;
}
