/*
 * value_core.c - the value decoder's bottom layer (values.h): its context
 * and its reads.  The store of what value_prefetch.c read ahead (looked
 * up, freed); reads within the call's byte budget, served from that store
 * when it holds the whole read; the result's nodes, an unreadable node's
 * reason and a node's data; C strings and str objects; a dict's pairs and
 * a key searched by name; the builtin kinds and the type objects (read
 * once per call, their names from their dicts); the context itself: its
 * limits filled in, begun and freed.
 *
 * Calls no other file of the decoder (objects.c, value_prefetch.c,
 * values.c): only the library below it (read.c, strings.c, arena.c,
 * addrmap.c, offsets.c, value_layout.c).
 *
 * Bounds: at most TYPES_MAX types a call, type names of PYF__VTYPE_NAME_MAX
 * bytes, the limits asked for capped (VALUE_*_CAP); a dict's table of at
 * most 2^DICT_LOG2_MAX slots, its split values at most 255, a lookup
 * searching its first PYF__VLOOKUP_ITEMS entries, LOOKUP_DEPTH lookups deep.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "api.h"
#include "code.h"
#include "containers.h"
#include "errors.h"
#include "offsets.h"
#include "reads.h"
#include "target.h"
#include "value_layout.h"
#include "values.h"

#define VALUE_DEPTH_CAP 64u      /* the recursion's bound, whatever is asked */
#define VALUE_STRING_CAP (1u << 24)
#define VALUE_ITEMS_CAP (1u << 20)
#define VALUE_OBJECTS_CAP (1u << 24)
#define TYPES_MAX 4096u          /* types read per call */
#define QUALNAME_MAX 200u
#define LOOKUP_DEPTH 4u          /* lookups within lookups (types of keys) */
#define DICT_LOG2_MAX 30u

/* ---- the ranges read ahead (value_prefetch.c fills them) ------------------ */

bool pyf__vbatch_get(pyf__vctx *c, uint64_t addr, void *dst, size_t len)
{
    const pyf__vbatch *b = &c->batch;
    /* the last range starting at or before addr, then a few before it
     * (ranges overlap where an object was read again, longer) */
    uint32_t lo = 0, hi = b->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (b->r[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (uint32_t k = lo, tries = 0; k > 0 && tries < 16; k--, tries++) {
        const pyf__vrange *r = &b->r[k - 1];
        if (addr - r->addr <= r->len && len <= r->len - (addr - r->addr)) {
            memcpy(dst, r->data + (addr - r->addr), len);
            return true;
        }
    }
    return false;
}

void pyf__vbatch_free(pyf__vbatch *b)
{
    free(b->r);
    pyf__arena_free(&b->mem);
    memset(b, 0, sizeof *b);
}

/* ---- reads, nodes, strings ------------------------------------------------ */

int pyf__vread(pyf__vctx *c, uint64_t addr, void *dst, size_t len)
{
    if (!c->frame_reads && (len > c->req.max_bytes || c->bytes > c->req.max_bytes - len))
        return PYF__EBUDGET;
    c->bytes += len;
    if (c->batch.n != 0 && pyf__vbatch_get(c, addr, dst, len))
        return PYF_OK;
    return pyf__read_now(c->t, addr, dst, len);
}

uint32_t pyf__vnodes(pyf__vctx *c, uint32_t count)
{
    if (c->nomem || count > (1u << 30) - c->n) {
        c->nomem = true;
        return PYF_NO_VALUE;
    }
    if (!pyf__grow((void **)&c->v, &c->cap, c->n + count, sizeof *c->v)) {
        c->nomem = true;
        return PYF_NO_VALUE;
    }
    uint32_t first = c->n;
    memset(c->v + first, 0, (size_t)count * sizeof *c->v);
    for (uint32_t i = 0; i < count; i++)
        c->v[first + i].type_name = "";
    c->n += count;
    return first;
}

void pyf__vbad(pyf__vctx *c, uint32_t i, uint32_t flags, const char *fmt, ...)
{
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(why, sizeof why, fmt, ap) < 0)
        why[0] = '\0';
    va_end(ap);
    pyf_value *v = &c->v[i];
    v->kind = PYF_VALUE_UNREADABLE;
    v->flags |= flags;
    v->first_child = v->nchildren = 0;
    pyf__vdata(c, i, why, strlen(why));
}

void pyf__vdata(pyf__vctx *c, uint32_t i, const void *data, size_t len)
{
    char *p = pyf__arena_alloc(&c->arena, len + 1);
    if (p == NULL) {
        c->nomem = true;
        return;
    }
    if (len)
        memcpy(p, data, len);
    p[len] = '\0';
    c->v[i].data = p;
    c->v[i].data_size = len;
}

static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

const char *pyf__vcstr(pyf__vctx *c, uint64_t addr, size_t max)
{
    char buf[PYF__VTYPE_NAME_MAX + 1];
    size_t have = 0;
    if (addr == 0 || max > PYF__VTYPE_NAME_MAX)
        return NULL;
    while (have < max) { /* page by page: a name may end a mapping */
        size_t piece = 4096 - (size_t)((addr + have) % 4096);
        if (piece > max - have)
            piece = max - have;
        if (pyf__vread(c, addr + have, buf + have, piece) != PYF_OK)
            return NULL;
        void *nul = memchr(buf + have, 0, piece);
        have += piece;
        if (nul != NULL) {
            if (nul == buf || !printable(buf))
                return NULL;
            const char *s = pyf__arena_dup(&c->arena, buf);
            if (s == NULL)
                c->nomem = true;
            return s;
        }
    }
    return NULL;
}

/* The str at addr: its header decoded (si) and where its characters are
 * (*data: after a compact str's header, or where a legacy str's pointer
 * says); false when it is no readable str. */
static bool str_at(pyf__vctx *c, uint64_t addr, pyf__str_info *si, uint64_t *data)
{
    const pyf__offsets *o = c->o;
    uint8_t hdr[256];
    size_t hlen = (size_t)o->unicode.compactunicodeobject_size;
    if (addr == 0 || addr % 8 != 0 || hlen > sizeof hdr)
        return false;
    if (pyf__vread(c, addr, hdr, hlen) != PYF_OK &&
        pyf__vread(c, addr, hdr, hlen = (size_t)o->unicode.asciiobject_size) != PYF_OK)
        return false;
    if (pyf__str_header(o, hdr, si) == PYF_OK) {
        *data = addr + si->data_off;
        return si->data_off <= hlen + 16 && si->length <= ((uint64_t)1 << 40);
    }
    uint64_t ptr = 0;
    if (pyf__str_legacy(o, hdr, si) != PYF_OK || si->length > ((uint64_t)1 << 40) ||
        pyf__vread(c, addr + si->data_off, &ptr, 8) != PYF_OK || ptr < 4096 ||
        ptr % si->kind != 0)
        return false;
    *data = ptr;
    return true;
}

const char *pyf__vstr(pyf__vctx *c, uint64_t addr, uint32_t max_chars, size_t *bytes,
                      uint64_t *chars, bool *cut)
{
    pyf__str_info si;
    uint64_t at;
    *cut = false;
    if (!str_at(c, addr, &si, &at))
        return NULL;
    uint64_t n = si.length;
    if (n > max_chars) {
        n = max_chars;
        *cut = true;
    }
    uint8_t *d = malloc((size_t)n * si.kind + 1);
    if (d == NULL) {
        c->nomem = true;
        return NULL;
    }
    char *utf8 = NULL;
    size_t len = 0;
    bool cut_bytes = false;
    const char *s = NULL;
    if (pyf__vread(c, at, d, (size_t)n * si.kind) == PYF_OK &&
        pyf__str_utf8(&si, d, n, (uint32_t)(n * 4), true, &utf8, &len, &cut_bytes) == PYF_OK) {
        char *a = pyf__arena_alloc(&c->arena, len + 1);
        if (a != NULL) {
            memcpy(a, utf8, len + 1);
            s = a;
        } else
            c->nomem = true;
    }
    free(utf8);
    free(d);
    *bytes = len;
    *chars = si.length;
    return s;
}

bool pyf__vstr_ends(pyf__vctx *c, uint64_t addr)
{
    uint32_t end = 1;
    pyf__str_info si;
    uint64_t at;
    if (!str_at(c, addr, &si, &at) || si.kind > sizeof end ||
        pyf__vread(c, at + si.length * si.kind, &end, si.kind) != PYF_OK)
        return false;
    return end == 0;
}

/* ---- dicts: their pairs, a key searched by name --------------------------- */

const char *pyf__dkeys_decode(const pyf__vctx *c, const uint8_t *hdr, uint64_t keys,
                              pyf__dkeys *k)
{
    const pyf__value_layout *vl = &c->vl;
    k->nentries = (int64_t)pyf__ld64(hdr + vl->keys_nentries);
    if (c->o->dictkeys_kind == PYF__DICTKEYS_SIZED) {
        /* 3.8-3.10: dk_size slots (a power of two), indices as wide as
         * it needs (Objects/dictobject.c, DK_IXSIZE), general entries */
        uint64_t size = pyf__ld64(hdr + vl->keys_size);
        if (size < 8 || size > ((uint64_t)1 << DICT_LOG2_MAX) || (size & (size - 1)) != 0 ||
            k->nentries < 0 || (uint64_t)k->nentries > size)
            return "implausible dict keys";
        uint64_t ix = size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffu ? 4 : 8;
        k->entries = keys + vl->keys_indices + size * ix;
        k->general = true;
        k->esize = 24;
        k->koff = 8;
        return NULL;
    }
    unsigned log2 = hdr[vl->keys_log2_size], log2ib = hdr[vl->keys_log2_index_bytes];
    k->general = hdr[vl->keys_kind] == PYF__DICT_KEYS_GENERAL;
    if (log2 > DICT_LOG2_MAX || log2ib < log2 || log2ib > log2 + 3 || k->nentries < 0 ||
        k->nentries > ((int64_t)1 << log2) || hdr[vl->keys_kind] > 2)
        return "implausible dict keys";
    k->entries = keys + vl->keys_indices + ((uint64_t)1 << log2ib);
    k->esize = k->general ? 24 : 16;
    k->koff = k->general ? 8 : 0;
    return NULL;
}

/* A dict keys object's header read and decoded (pyf__dkeys_decode). */
static const char *keys_read(pyf__vctx *c, uint64_t keys, pyf__dkeys *k, bool *budget)
{
    uint8_t hdr[64];
    int rc;
    *budget = false;
    if (keys == 0 || keys % 8 != 0 || c->vl.keys_indices > sizeof hdr)
        return "bad dict keys pointer";
    if ((rc = pyf__vread(c, keys, hdr, (size_t)c->vl.keys_indices)) != PYF_OK) {
        *budget = rc == PYF__EBUDGET;
        return "unreadable dict keys";
    }
    return pyf__dkeys_decode(c, hdr, keys, k);
}

/* The entries of a split table in insertion order (their indexes into
 * order[], at most 255), and the values the table's entries have (vals[],
 * by index, ne of them): from a PyDictValues at values, laid out as the
 * version does (dictvalues_kind).  NULL, or why they cannot be read. */
static const char *split_values(pyf__vctx *c, uint64_t values, unsigned ne, uint64_t *vals,
                                uint8_t *order, unsigned *norder, bool *budget)
{
    const pyf__value_layout *vl = &c->vl;
    uint8_t vh[8], prefix[257];
    int rc;
    *budget = false;
    if (values % 8 != 0)
        return "unreadable dict values";
    if (c->o->dictvalues_kind == PYF__DICTVALUES_ARRAY) {
        /* 3.8-3.10: ma_values[i] is the value of entry i, inserted in
         * entry order */
        if ((rc = pyf__vread(c, values, vals, (size_t)ne * 8)) != PYF_OK) {
            *budget = rc == PYF__EBUDGET;
            return "unreadable dict values";
        }
        for (unsigned j = 0; j < ne; j++)
            order[j] = (uint8_t)j;
        *norder = ne;
        return NULL;
    }
    if (c->o->dictvalues_kind == PYF__DICTVALUES_ORDER_BEFORE) {
        /* the insertion order before the values: [-1] the prefix's size,
         * [-2] the entries in it, their indexes below, the first
         * inserted nearest (internal/pycore_dict.h,
         * _PyDictValues_AddToInsertionOrder) */
        if ((rc = pyf__vread(c, values - 2, vh, 2)) != PYF_OK) {
            *budget = rc == PYF__EBUDGET;
            return "unreadable dict values";
        }
        unsigned n = vh[0];
        if (n + 2 > vh[1])
            return "implausible dict values";
        if ((rc = pyf__vread(c, values - 2 - n, prefix, n)) != PYF_OK ||
            (rc = pyf__vread(c, values + vl->values_values, vals, (size_t)ne * 8)) != PYF_OK) {
            *budget = rc == PYF__EBUDGET;
            return "unreadable dict values";
        }
        for (unsigned j = 0; j < n; j++)
            order[j] = prefix[n - 1 - j];
        *norder = n;
        return NULL;
    }
    /* a header (capacity, size, embedded, valid), the values, then the
     * insertion order after them, one byte each */
    if ((rc = pyf__vread(c, values, vh, 8)) != PYF_OK) {
        *budget = rc == PYF__EBUDGET;
        return "unreadable dict values";
    }
    unsigned cap = vh[vl->values_capacity], size = vh[vl->values_size];
    if (size > cap || cap > ne + 256u)
        return "implausible dict values";
    uint64_t all[256];
    if ((rc = pyf__vread(c, values + vl->values_values, all, (size_t)cap * 8)) != PYF_OK ||
        (rc = pyf__vread(c, values + vl->values_values + (uint64_t)cap * 8, order, size)) !=
            PYF_OK) {
        *budget = rc == PYF__EBUDGET;
        return "unreadable dict values";
    }
    for (unsigned j = 0; j < ne; j++)
        vals[j] = j < cap ? all[j] : 0;
    *norder = size;
    return NULL;
}

__attribute__((noinline)) /* its buffers stay off the recursion's stack */
int64_t pyf__dict_pairs(pyf__vctx *c, uint64_t keys, uint64_t values, uint64_t max,
                        uint64_t *kv, uint64_t *where, const char **why, bool *budget)
{
    pyf__dkeys k;
    int rc;
    if ((*why = keys_read(c, keys, &k, budget)) != NULL)
        return -1;
    int64_t got = 0;
    if (values == 0) {
        uint8_t buf[PYF__VCHUNK * 24];
        for (int64_t at = 0; at < k.nentries && (uint64_t)got < max; at += PYF__VCHUNK) {
            int64_t m = k.nentries - at < PYF__VCHUNK ? k.nentries - at : PYF__VCHUNK;
            uint64_t base = k.entries + (uint64_t)at * k.esize;
            if ((rc = pyf__vread(c, base, buf, (size_t)((uint64_t)m * k.esize))) != PYF_OK) {
                *budget = rc == PYF__EBUDGET;
                *why = "unreadable dict entries";
                return -1;
            }
            for (int64_t e = 0; e < m && (uint64_t)got < max; e++) {
                uint64_t key = pyf__ld64(buf + e * k.esize + k.koff);
                uint64_t v = pyf__ld64(buf + e * k.esize + k.koff + 8);
                if (key != 0 && v != 0) {
                    kv[2 * got] = key;
                    kv[2 * got + 1] = v;
                    if (where != NULL)
                        where[got] = base + (uint64_t)e * k.esize + k.koff;
                    got++;
                }
            }
        }
        return got;
    }
    /* split: the shared keys' entries (no values there) */
    uint64_t vals[256];
    uint8_t order[256], ents[256 * 24];
    unsigned ne = k.nentries < 256 ? (unsigned)k.nentries : 256, n = 0;
    bool array = c->o->dictvalues_kind == PYF__DICTVALUES_ARRAY;
    if (k.general != array) { /* 3.11+: split keys are unicode-only */
        *why = "unreadable dict values";
        return -1;
    }
    if ((*why = split_values(c, values, ne, vals, order, &n, budget)) != NULL)
        return -1;
    if ((rc = pyf__vread(c, k.entries, ents, (size_t)(ne * k.esize))) != PYF_OK) {
        *budget = rc == PYF__EBUDGET;
        *why = "unreadable dict values";
        return -1;
    }
    for (unsigned j = 0; j < n && (uint64_t)got < max; j++) {
        unsigned ix = order[j];
        if (ix >= ne || vals[ix] == 0)
            continue;
        kv[2 * got] = pyf__ld64(ents + ix * k.esize + k.koff);
        kv[2 * got + 1] = vals[ix];
        if (where != NULL)
            where[got] = 0;
        got++;
    }
    return got;
}

int64_t pyf__dict_keys(pyf__vctx *c, uint64_t keys, uint64_t max, uint64_t *out)
{
    pyf__dkeys k;
    bool budget;
    uint8_t ents[PYF__VCHUNK * 24];
    if (keys_read(c, keys, &k, &budget) != NULL)
        return -1;
    uint64_t n = (uint64_t)k.nentries < max ? (uint64_t)k.nentries : max;
    if (n > PYF__VCHUNK)
        n = PYF__VCHUNK;
    if (n != 0 && pyf__vread(c, k.entries, ents, (size_t)(n * k.esize)) != PYF_OK)
        return -1;
    for (uint64_t i = 0; i < n; i++)
        out[i] = pyf__ld64(ents + i * k.esize + k.koff);
    return (int64_t)n;
}

uint64_t pyf__dict_lookup(pyf__vctx *c, uint64_t dict_addr, const char *name)
{
    const pyf__offsets *o = c->o;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    uint64_t kv[2 * PYF__VLOOKUP_ITEMS];
    const char *why;
    bool budget;
    uint64_t found = 0;
    if (dict_addr == 0 || dict_addr % 8 != 0 || c->lookups >= LOOKUP_DEPTH ||
        pyf__vread(c, dict_addr, b, (size_t)o->dict.size) != PYF_OK)
        return 0;
    c->lookups++;
    const pyf__vtype *ty = pyf__vtype_get(c, pyf__ld64(b + o->pyobject.ob_type));
    int64_t n = ty->kind == PYF_VALUE_DICT
                    ? pyf__dict_pairs(c, pyf__ld64(b + o->dict.ma_keys),
                                      pyf__ld64(b + o->dict.ma_values), PYF__VLOOKUP_ITEMS, kv,
                                      NULL, &why, &budget)
                    : -1;
    size_t want = strlen(name);
    for (int64_t k = 0; k < n && found == 0; k++) {
        size_t nb;
        uint64_t chars;
        bool cut;
        const char *s = pyf__vstr(c, kv[2 * k], (uint32_t)want + 1, &nb, &chars, &cut);
        if (s != NULL && nb == want && memcmp(s, name, want) == 0)
            found = kv[2 * k + 1];
    }
    c->lookups--;
    return found;
}

/* ---- types ---------------------------------------------------------------- */

/* The builtin static types the decoder knows, by tp_name. */
static const struct {
    const char *name;
    uint32_t kind;
} builtin_types[] = {
    {"NoneType", PYF_VALUE_NONE}, {"bool", PYF_VALUE_BOOL}, {"int", PYF_VALUE_INT},
    {"float", PYF_VALUE_FLOAT}, {"complex", PYF_VALUE_COMPLEX}, {"str", PYF_VALUE_STR},
    {"bytes", PYF_VALUE_BYTES}, {"bytearray", PYF_VALUE_BYTEARRAY},
    {"tuple", PYF_VALUE_TUPLE}, {"list", PYF_VALUE_LIST}, {"dict", PYF_VALUE_DICT},
    {"set", PYF_VALUE_SET}, {"frozenset", PYF_VALUE_FROZENSET}, {"range", PYF_VALUE_RANGE},
    {"type", PYF_VALUE_TYPE}, {"function", PYF_VALUE_FUNCTION},
    {"builtin_function_or_method", PYF_VALUE_BUILTIN}, {"method", PYF_VALUE_METHOD},
    {"module", PYF_VALUE_MODULE}, {"cell", PYF_VALUE_CELL}, {"code", PYF_VALUE_CODE},
    {"generator", PYF_VALUE_GENERATOR}, {"coroutine", PYF_VALUE_COROUTINE},
    {"async_generator", PYF_VALUE_ASYNC_GENERATOR}, {"ellipsis", PYF_VALUE_ELLIPSIS},
    {"NotImplementedType", PYF_VALUE_NOTIMPLEMENTED},
    {"async_generator_asend", PYF__KIND_AWAIT_WRAPPER},
    {"async_generator_athrow", PYF__KIND_AWAIT_WRAPPER},
};

uint32_t pyf__type_kind(uint64_t tp_flags, const char *tp_name)
{
    if (tp_flags & PYF__TPFLAGS_HEAPTYPE)
        return PYF_VALUE_OTHER; /* a class may carry any name */
    for (size_t i = 0; i < sizeof builtin_types / sizeof builtin_types[0]; i++)
        if (strcmp(tp_name, builtin_types[i].name) == 0)
            return builtin_types[i].kind;
    return PYF_VALUE_OTHER;
}

uint32_t pyf__vbuiltin_kind(const char *tp_name)
{
    uint32_t kind = pyf__type_kind(0, tp_name);
    return kind < PYF__KIND_PRIVATE ? kind : PYF_VALUE_OTHER;
}

size_t pyf__vtype_len(const pyf__vctx *c)
{
    size_t len = (size_t)c->o->type.size;
    if (len < c->vl.type_dictoffset + 8)
        len = (size_t)c->vl.type_dictoffset + 8;
    return len;
}

/* "module.qualname" of a heap type (module left out for builtins), or
 * NULL when its qualname or module cannot be read. */
static const char *heap_type_name(pyf__vctx *c, pyf__vtype *ty, uint64_t qualname)
{
    size_t qb, mb;
    uint64_t chars;
    bool cut;
    const char *q = pyf__vstr(c, qualname, QUALNAME_MAX, &qb, &chars, &cut);
    if (q == NULL || qb == 0 || strlen(q) != qb)
        return NULL;
    uint64_t mod = ty->dict != 0 ? pyf__dict_lookup(c, ty->dict, "__module__") : 0;
    const char *m = mod != 0 ? pyf__vstr(c, mod, QUALNAME_MAX, &mb, &chars, &cut) : NULL;
    if (m == NULL || mb == 0 || strlen(m) != mb || strcmp(m, "builtins") == 0)
        return q;
    char *name = pyf__arena_alloc(&c->arena, mb + 1 + qb + 1);
    if (name == NULL) {
        c->nomem = true;
        return q;
    }
    memcpy(name, m, mb);
    name[mb] = '.';
    memcpy(name + mb + 1, q, qb + 1);
    return name;
}

static void type_read(pyf__vctx *c, pyf__vtype *ty)
{
    const pyf__offsets *o = c->o;
    const pyf__value_layout *vl = &c->vl;
    uint8_t buf[PYF__OBJECT_READ_MAX];
    uint64_t addr = ty->addr;
    size_t len = pyf__vtype_len(c);
    int rc = addr < 4096 || addr % 8 != 0 || len > sizeof buf ? PYF_EFAULT
                                                               : pyf__vread(c, addr, buf, len);
    if (rc != PYF_OK) {
        ty->bad = rc == PYF__EBUDGET ? "byte budget spent reading type" : "bad type pointer";
        return;
    }
    ty->flags = pyf__ld64(buf + o->type.tp_flags);
    ty->basicsize = pyf__ld64(buf + vl->type_basicsize);
    ty->dictoffset = pyf__ld64(buf + vl->type_dictoffset);
    ty->dict = pyf__ld64(buf + vl->type_dict);
    ty->base = pyf__ld64(buf + vl->type_base);
    uint64_t meta = pyf__ld64(buf + o->pyobject.ob_type);
    ty->name_ptr = pyf__ld64(buf + o->type.tp_name);
    const char *tp_name = pyf__vcstr(c, ty->name_ptr, PYF__VTYPE_NAME_MAX);
    if (tp_name == NULL || meta == 0 || meta % 8 != 0 || ty->basicsize > (1u << 20)) {
        ty->bad = "bad type pointer";
        return;
    }
    ty->name = tp_name;
    ty->kind = PYF_VALUE_OTHER;
    if (!(ty->flags & PYF__TPFLAGS_HEAPTYPE)) {
        ty->kind = pyf__vbuiltin_kind(tp_name);
    } else {
        uint8_t ht[16];
        if (pyf__vread(c, addr + vl->heap_qualname, ht, sizeof ht) == PYF_OK) {
            ty->cached_keys = pyf__ld64(ht + 8);
            const char *name = heap_type_name(c, ty, pyf__ld64(ht));
            if (name != NULL)
                ty->name = name;
        }
    }
    if (ty->kind == PYF_VALUE_OTHER && (ty->flags & PYF__TPFLAGS_BASE_EXC_SUBCLASS))
        ty->kind = PYF_VALUE_EXCEPTION;
    /* a metaclass: its instances are classes, shown as classes unless it
     * says how itself (__repr__ in its own dict, as enum's does) */
    if (ty->kind == PYF_VALUE_OTHER && (ty->flags & PYF__TPFLAGS_TYPE_SUBCLASS) &&
        (ty->dict == 0 || pyf__dict_lookup(c, ty->dict, "__repr__") == 0))
        ty->kind = PYF_VALUE_TYPE;
}

const pyf__vtype *pyf__vtype_get(pyf__vctx *c, uint64_t addr)
{
    static const pyf__vtype too_many = {.kind = PYF_VALUE_UNREADABLE, .name = "",
                                        .bad = "too many types"};
    uint64_t *slot = pyf__addrmap_get(&c->types, addr);
    if (slot != NULL)
        return &c->tv[*slot - 1];
    if (c->ntv >= TYPES_MAX)
        return &too_many;
    if (!pyf__grow((void **)&c->tv, &c->captv, c->ntv + 1, sizeof *c->tv)) {
        c->nomem = true;
        return &too_many;
    }
    uint32_t at = c->ntv++;
    pyf__vtype ty = {.addr = addr, .name = ""};
    c->tv[at] = (pyf__vtype){.addr = addr, .name = "", .bad = "type read within itself"};
    /* remembered before it is read: a type whose dict leads back to it
     * finds it (unfinished, its name still ""); read into a copy, since
     * the table may grow meanwhile */
    bool added;
    uint64_t *put = addr != 0 ? pyf__addrmap_put(&c->types, addr, &added) : NULL;
    if (put != NULL)
        *put = at + 1;
    type_read(c, &ty);
    if (ty.bad != NULL)
        ty.kind = PYF_VALUE_UNREADABLE;
    c->tv[at] = ty;
    return &c->tv[at];
}

/* ---- the context ---------------------------------------------------------- */

static uint32_t limit(uint32_t asked, uint32_t dflt, uint32_t cap)
{
    uint32_t v = asked != 0 ? asked : dflt;
    return v < cap ? v : cap;
}

static int ctx_begin(pyf__vctx *c, pyf_target *t, const pyf_values_request *req)
{
    memset(c, 0, sizeof *c);
    c->t = t;
    c->o = &t->off;
    pyf__failure_clear(&t->io.fail);
    if (req != NULL) {
        int rc = pyf__struct_in(req, PYF_VALUES_REQUEST_SIZE_V0, &c->req, sizeof c->req,
                                "pyf_values_request", t->io.fail.detail, sizeof t->io.fail.detail);
        if (rc != PYF_OK)
            return t->io.fail.code = rc;
    }
    char why[PYF__ERRBUF];
    if (pyf__offsets_check_values(c->o, why, sizeof why) != PYF_OK)
        return pyf__fail(t, PYF_EOFFSETS, "%s", why);
    c->req.max_string = limit(c->req.max_string, PYF_DEFAULT_VALUE_STRING, VALUE_STRING_CAP);
    c->req.max_items = limit(c->req.max_items, PYF_DEFAULT_VALUE_ITEMS, VALUE_ITEMS_CAP);
    c->req.max_depth = limit(c->req.max_depth, PYF_DEFAULT_VALUE_DEPTH, VALUE_DEPTH_CAP);
    c->req.max_objects = limit(c->req.max_objects, PYF_DEFAULT_VALUE_OBJECTS,
                               VALUE_OBJECTS_CAP);
    if (c->req.max_bytes == 0)
        c->req.max_bytes = PYF_DEFAULT_VALUE_BYTES;
    pyf__value_layout_fill(c->o, &c->vl);
    return PYF_OK;
}

static void ctx_free(pyf__vctx *c)
{
    free(c->v);
    free(c->tv);
    pyf__addrmap_free(&c->types);
    pyf__addrset_free(&c->path);
    pyf__arena_free(&c->arena);
    pyf__vbatch_free(&c->batch);
}

int pyf__vctx_begin(pyf__vctx *c, pyf_target *t, const pyf_values_request *req)
{
    return ctx_begin(c, t, req);
}

void pyf__vctx_end(pyf__vctx *c)
{
    ctx_free(c);
}
