/*
 * objects.c - one decoder a kind of object, into a pyf_value node and its
 * children (values.h): numbers, str, bytes, containers, dicts (combined and
 * split tables, instance values), sets, functions, methods, modules,
 * cells, code objects, generators, exceptions, and any other object with
 * its attributes.  Offsets come from _Py_DebugOffsets (c->o) and, where it
 * has none, from value_layout.c (c->vl).  Every size read from the target
 * is checked before it sizes a read or a loop.
 *
 * Calls value_core.c only (its reads, nodes, strings, dict pairs and
 * lookups, types) and itself, recursively (pyf__decode_object): never
 * value_prefetch.c or values.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "containers.h"
#include "objhead.h"
#include "offsets.h"
#include "reads.h"
#include "value_layout.h"
#include "values.h"

#define INT_DIGITS_MAX (1u << 20)   /* digits kept of a huge int */
#define INT_DIGITS_ABSURD (1ull << 28)
#define SIZE_ABSURD (1ll << 40)     /* a length no object in memory has */
#define SET_SLOTS_MAX (1ull << 30)
#define SPLIT_MAX 256u              /* a split table's pairs (one byte indexes them) */

/* Read len bytes of the object at addr into buf, or mark node i. */
static bool obj_read(pyf__vctx *c, uint32_t i, uint64_t addr, void *buf, size_t len)
{
    int rc = pyf__vread(c, addr, buf, len);
    if (rc == PYF_OK)
        return true;
    if (rc == PYF__EBUDGET)
        pyf__vbad(c, i, PYF_VALUE_BUDGET, "byte budget spent");
    else
        pyf__vbad(c, i, 0, "unreadable memory at 0x%llx (%zu bytes)",
                  (unsigned long long)addr, len);
    return false;
}

/* Whether node i (the object at addr) may get children: not an object on
 * the path to it (CYCLE), not deeper than allowed (TOO_DEEP). */
static bool may_descend(pyf__vctx *c, uint32_t i, uint64_t addr, uint32_t depth)
{
    if (pyf__addrmap_get(&c->path, addr) != NULL) {
        c->v[i].flags |= PYF_VALUE_CYCLE;
        return false;
    }
    if (depth >= c->req.max_depth) {
        c->v[i].flags |= PYF_VALUE_TOO_DEEP;
        return false;
    }
    return true;
}

/* How many of n items node i shows: at most max_items (TRUNCATED when
 * cut), none when it may not descend. */
static uint64_t shown(pyf__vctx *c, uint32_t i, uint64_t n, uint32_t depth)
{
    if (n > c->req.max_items) {
        n = c->req.max_items;
        c->v[i].flags |= PYF_VALUE_TRUNCATED;
    }
    return n == 0 || !may_descend(c, i, c->v[i].addr, depth) ? 0 : n;
}

/* n words of scratch, or NULL (out of memory noted). */
static uint64_t *words(pyf__vctx *c, uint64_t n)
{
    uint64_t *w = malloc((size_t)n * 8);
    if (w == NULL)
        c->nomem = true;
    return w;
}

/* Children of node i: the objects at addrs[n] (0: unreadable). */
static void children(pyf__vctx *c, uint32_t i, const uint64_t *addrs, uint32_t n,
                     uint32_t depth)
{
    if (n == 0)
        return;
    uint32_t first = pyf__vnodes(c, n);
    if (first == PYF_NO_VALUE)
        return;
    c->v[i].first_child = first;
    c->v[i].nchildren = n;
    uint64_t self = c->v[i].addr;
    bool dup;
    if (!pyf__addrset_add(&c->path, self, &dup)) {
        c->nomem = true;
        return;
    }
    for (uint32_t k = 0; k < n; k++) {
        if (addrs[k] == 0)
            pyf__vbad(c, first + k, 0, "NULL");
        else
            pyf__decode_object(c, first + k, addrs[k], depth + 1);
    }
    pyf__addrmap_remove(&c->path, self);
}

/* One child: the object at addr. */
static void child(pyf__vctx *c, uint32_t i, uint64_t addr, uint32_t depth)
{
    if (may_descend(c, i, c->v[i].addr, depth))
        children(c, i, &addr, 1, depth);
}

/* The first items of a sequence whose n item pointers start at items. */
static void sequence(pyf__vctx *c, uint32_t i, int64_t n, uint64_t items, uint32_t depth)
{
    if (n < 0 || n > SIZE_ABSURD) {
        pyf__vbad(c, i, 0, "implausible size %lld", (long long)n);
        return;
    }
    c->v[i].length = (uint64_t)n;
    uint64_t k = shown(c, i, (uint64_t)n, depth);
    uint64_t *addrs = k ? words(c, k) : NULL;
    if (addrs == NULL)
        return;
    uint64_t last;
    /* a sequence cut short must own its last item pointer too: a garbage
     * size runs past the object (one more read, of cut sequences only) */
    if (items != 0 && obj_read(c, i, items, addrs, (size_t)k * 8) &&
        (k == (uint64_t)n || obj_read(c, i, items + ((uint64_t)n - 1) * 8, &last, 8)))
        children(c, i, addrs, (uint32_t)k, depth);
    else if (items == 0)
        pyf__vbad(c, i, 0, "NULL items of a sequence of %lld", (long long)n);
    free(addrs);
}

/* ---- dicts ------------------------------------------------------------------ */

/* Node i's children: the pairs of a dict's table (length already set). */
static void dict_children(pyf__vctx *c, uint32_t i, uint64_t keys, uint64_t values,
                          uint32_t depth)
{
    uint64_t max = shown(c, i, c->v[i].length, depth);
    uint64_t *kv = max ? words(c, 2 * max) : NULL;
    if (kv == NULL)
        return;
    const char *why;
    bool budget;
    int64_t n = pyf__dict_pairs(c, keys, values, max, kv, NULL, &why, &budget);
    if (n < 0)
        pyf__vbad(c, i, budget ? PYF_VALUE_BUDGET : 0, "%s", why);
    else
        children(c, i, kv, (uint32_t)n * 2, depth);
    free(kv);
}

static void decode_dict(pyf__vctx *c, uint32_t i, uint64_t addr, uint32_t depth)
{
    const pyf__offsets *o = c->o;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    if (!obj_read(c, i, addr, b, (size_t)o->dict.size))
        return;
    int64_t used = (int64_t)pyf__ld64(b + c->vl.dict_used);
    if (used < 0 || used > SIZE_ABSURD) {
        pyf__vbad(c, i, 0, "implausible size %lld", (long long)used);
        return;
    }
    c->v[i].length = (uint64_t)used;
    dict_children(c, i, pyf__ld64(b + o->dict.ma_keys), pyf__ld64(b + o->dict.ma_values),
                  depth);
}

int64_t pyf__dict_items(pyf__vctx *c, uint64_t dict_addr, uint64_t max, uint64_t *kv)
{
    const pyf__offsets *o = c->o;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    const char *why;
    bool budget;
    if (dict_addr < 4096 || dict_addr % 8 != 0 ||
        pyf__vread(c, dict_addr, b, (size_t)o->dict.size) != PYF_OK ||
        pyf__vtype_get(c, pyf__ld64(b + o->pyobject.ob_type))->kind != PYF_VALUE_DICT)
        return -1;
    return pyf__dict_pairs(c, pyf__ld64(b + o->dict.ma_keys), pyf__ld64(b + o->dict.ma_values),
                           max, kv, NULL, &why, &budget);
}

size_t pyf__managed_back(const pyf__vctx *c)
{
    const pyf__value_layout *vl = &c->vl;
    uint64_t back = vl->managed_dict_back;
    if (c->o->instdict_kind == PYF__INSTDICT_NONE)
        return 0;
    if (c->o->instdict_kind == PYF__INSTDICT_TWO_POINTERS && vl->managed_values_back > back)
        back = vl->managed_values_back;
    return back <= 64 ? (size_t)back : 0;
}

void pyf__managed_dict(const pyf__vctx *c, const pyf__vtype *ty, uint64_t addr,
                       const uint8_t *end, uint64_t *dict, uint64_t *values)
{
    const pyf__value_layout *vl = &c->vl;
    uint64_t w = pyf__ld64(end - vl->managed_dict_back);
    *dict = *values = 0;
    switch (c->o->instdict_kind) {
    case PYF__INSTDICT_TAGGED: /* bit 0 set: the values' address - 1, else the dict */
        *(w & 1 ? values : dict) = w & 1 ? w + 1 : w;
        break;
    case PYF__INSTDICT_TWO_POINTERS:
        *dict = w;
        if (w == 0)
            *values = pyf__ld64(end - vl->managed_values_back);
        break;
    default: /* inline, right after the object's own size */
        *dict = w;
        if (w == 0 && (ty->flags & PYF__TPFLAGS_INLINE_VALUES) && ty->basicsize >= 16 &&
            ty->basicsize < (1u << 20))
            *values = addr + ty->basicsize;
        break;
    }
}

/* Where the attributes of the instance at addr of type ty are: its
 * __dict__ (*dict, a managed one or at tp_dictoffset), or the values of
 * its type's shared keys while no dict is made (*values); neither when it
 * has none.  False when they cannot be read: the words before it, or
 * inline values that are no longer valid (3.13+: its dict was made from
 * them elsewhere). */
static bool instance_where(pyf__vctx *c, uint64_t addr, const pyf__vtype *ty, uint64_t *dict,
                           uint64_t *values)
{
    *dict = *values = 0;
    if ((ty->flags & PYF__TPFLAGS_MANAGED_DICT) && c->o->instdict_kind != PYF__INSTDICT_NONE) {
        uint8_t before[64];
        size_t back = pyf__managed_back(c);
        if (back == 0 || pyf__vread(c, addr - back, before, back) != PYF_OK)
            return false;
        pyf__managed_dict(c, ty, addr, before + back, dict, values);
        uint8_t vh[8];
        if (*values != 0 && c->o->dictvalues_kind == PYF__DICTVALUES_HEADER &&
            (pyf__vread(c, *values, vh, 8) != PYF_OK || !vh[c->vl.values_valid]))
            return false;
        return true;
    }
    if (ty->dictoffset > 0 && ty->dictoffset < (1u << 20))
        return pyf__vread(c, addr + ty->dictoffset, dict, 8) == PYF_OK;
    return true;
}

int64_t pyf__instance_items(pyf__vctx *c, uint64_t addr, const pyf__vtype *ty, uint64_t max,
                            uint64_t *kv)
{
    const char *why;
    bool budget;
    uint64_t dict, values;
    if (!instance_where(c, addr, ty, &dict, &values))
        return -1;
    if (values != 0)
        return pyf__dict_pairs(c, ty->cached_keys, values, max, kv, NULL, &why, &budget);
    return dict == 0 ? 0 : pyf__dict_items(c, dict, max, kv);
}

/* ---- sets ----------------------------------------------------------------- */

/* Up to max keys of a set's table of mask + 1 entries {key, hash} (empty
 * and dummy ones left out) into keys; UINT64_MAX when unreadable (node i
 * says why). */
__attribute__((noinline)) /* its buffer stays off the recursion's stack */
static uint64_t set_keys(pyf__vctx *c, uint32_t i, uint64_t table, uint64_t mask,
                         uint64_t max, uint64_t *keys)
{
    uint64_t got = 0;
    uint8_t buf[PYF__VCHUNK * 16];
    for (uint64_t at = 0; at <= mask && got < max; at += PYF__VCHUNK) {
        uint64_t m = mask + 1 - at < PYF__VCHUNK ? mask + 1 - at : PYF__VCHUNK;
        if (!obj_read(c, i, table + at * 16, buf, (size_t)m * 16))
            return UINT64_MAX;
        for (uint64_t e = 0; e < m && got < max; e++) {
            uint64_t key = pyf__ld64(buf + e * 16);
            if (key != 0 && pyf__ld64(buf + e * 16 + 8) != UINT64_MAX) /* dummy: hash -1 */
                keys[got++] = key;
        }
    }
    return got;
}

static void decode_set(pyf__vctx *c, uint32_t i, uint64_t addr, uint32_t depth)
{
    const pyf__value_layout *vl = &c->vl;
    uint8_t b[128]; /* the offsets are at most 120 (pyf__offsets_check_values) */
    uint64_t end = vl->set_table > vl->set_used ? vl->set_table : vl->set_used;
    end = (end > vl->set_mask ? end : vl->set_mask) + 8;
    if (end > sizeof b || !obj_read(c, i, addr, b, (size_t)end))
        return;
    int64_t used = (int64_t)pyf__ld64(b + vl->set_used);
    uint64_t mask = pyf__ld64(b + vl->set_mask), table = pyf__ld64(b + vl->set_table);
    if (used < 0 || mask >= SET_SLOTS_MAX || ((mask + 1) & mask) != 0 ||
        (uint64_t)used > mask + 1 || table == 0 || table % 8 != 0) {
        pyf__vbad(c, i, 0, "implausible set (used %lld, mask %llu)", (long long)used,
                  (unsigned long long)mask);
        return;
    }
    c->v[i].length = (uint64_t)used;
    uint64_t max = shown(c, i, (uint64_t)used, depth);
    uint64_t *keys = max ? words(c, max) : NULL;
    if (keys == NULL)
        return;
    uint64_t got = set_keys(c, i, table, mask, max, keys);
    bool ok = got != UINT64_MAX;
    if (ok)
        children(c, i, keys, (uint32_t)got, depth);
    free(keys);
}

/* ---- numbers, str, bytes ---------------------------------------------------- */

static void decode_int(pyf__vctx *c, uint32_t i, uint64_t addr, bool is_bool)
{
    const pyf__offsets *o = c->o;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    if (!obj_read(c, i, addr, b, pyf__int_head_len(o)))
        return;
    uint64_t nd;
    unsigned sign;
    if (!pyf__int_head(o, b, &nd, &sign) || nd > INT_DIGITS_ABSURD) {
        pyf__vbad(c, i, 0, "implausible int (%llu digits)", (unsigned long long)nd);
        return;
    }
    uint64_t keep = nd;
    if (keep > INT_DIGITS_MAX) {
        keep = INT_DIGITS_MAX;
        c->v[i].flags |= PYF_VALUE_TRUNCATED;
    }
    uint32_t *d = malloc((size_t)keep * 4 + 4);
    if (d == NULL) {
        c->nomem = true;
        return;
    }
    if (keep == 0 || obj_read(c, i, addr + o->lng.ob_digit, d, (size_t)keep * 4)) {
        bool zero = sign == PYF__INT_SIGN_ZERO, bad = false;
        for (uint64_t k = 0; k < keep; k++)
            if (d[k] >> 30)
                zero = false, keep = 0, bad = true;
        if (bad) {
            pyf__vbad(c, i, 0, "implausible int digit");
        } else if (is_bool) {
            c->v[i].number = !zero && keep > 0 && d[0] != 0;
        } else {
            c->v[i].number = zero ? 0 : sign == PYF__INT_SIGN_NEGATIVE ? -1 : 1;
            c->v[i].length = zero ? 0 : nd;
            if (zero)
                keep = 0;
            pyf__vdata(c, i, d, (size_t)keep * 4);
        }
    }
    free(d);
}

/* Whether the str at addr is one of the versions' with legacy strs
 * (3.8-3.11) that was never made ready: not compact, of no kind (0,
 * PyUnicode_WCHAR_KIND), its characters only in its wchar_t buffer (which
 * it has: a state word of zeros alone is no such str). */
static bool str_not_ready(pyf__vctx *c, uint64_t addr)
{
    const pyf__offsets *o = c->o;
    uint32_t state;
    uint64_t wstr = 0;
    if (!o->legacy_strs || o->unicode.wstr == PYF__ABSENT ||
        pyf__vread(c, addr + o->unicode.state, &state, 4) != PYF_OK ||
        pyf__vread(c, addr + o->unicode.wstr, &wstr, 8) != PYF_OK)
        return false;
    return ((state >> o->str_kind_shift) & 7) == 0 && !((state >> o->str_compact_bit) & 1) &&
           wstr != 0;
}

static void decode_str(pyf__vctx *c, uint32_t i, uint64_t addr)
{
    size_t nb;
    uint64_t chars;
    bool cut;
    const char *s = pyf__vstr(c, addr, c->req.max_string, &nb, &chars, &cut);
    if (s == NULL) {
        pyf__vbad(c, i, 0, str_not_ready(c, addr)
                               ? "a str never made ready (its characters only in its "
                                 "wchar_t buffer): not decoded"
                               : "not a readable str");
        return;
    }
    if (cut && !pyf__vstr_ends(c, addr)) {
        pyf__vbad(c, i, 0, "a str whose length runs past the object");
        return;
    }
    c->v[i].data = s;
    c->v[i].data_size = nb;
    c->v[i].length = chars;
    if (cut)
        c->v[i].flags |= PYF_VALUE_TRUNCATED;
}

/* n bytes at data as node i's data, cut at max_string. */
static void byte_data(pyf__vctx *c, uint32_t i, int64_t n, uint64_t data)
{
    if (n < 0 || n > SIZE_ABSURD) {
        pyf__vbad(c, i, 0, "implausible size %lld", (long long)n);
        return;
    }
    c->v[i].length = (uint64_t)n;
    uint64_t k = (uint64_t)n;
    if (k > c->req.max_string) {
        k = c->req.max_string;
        c->v[i].flags |= PYF_VALUE_TRUNCATED;
    }
    uint8_t *buf = malloc((size_t)k + 1);
    if (buf == NULL) {
        c->nomem = true;
        return;
    }
    if (k == 0 || (data != 0 && obj_read(c, i, data, buf, (size_t)k)))
        pyf__vdata(c, i, buf, (size_t)k);
    else if (data == 0)
        pyf__vbad(c, i, 0, "NULL data of %lld bytes", (long long)n);
    free(buf);
}

/* The str at addr as node i's data (a name: qualname, __name__), or why not. */
static void name_data(pyf__vctx *c, uint32_t i, uint64_t addr)
{
    size_t nb;
    uint64_t chars;
    bool cut;
    const char *s = pyf__vstr(c, addr, c->req.max_string, &nb, &chars, &cut);
    if (s != NULL) {
        c->v[i].data = s;
        c->v[i].data_size = nb;
        if (cut)
            c->v[i].flags |= PYF_VALUE_TRUNCATED;
    }
}

/* ---- other objects: attributes ------------------------------------------------ */

/* How many types up the tp_base chain slot_pairs looks for __slots__. */
#define SLOT_BASES_MAX 16u

/* The __slots__ members of an instance of ty that are set, as name, value
 * pairs: the entries of the dicts of ty and of the classes it derives
 * from (the tp_base chain up to its first builtin type: every other class
 * with slots in the instance's layout lies on it) that are member
 * descriptors of object slots (Py_T_OBJECT_EX) inside the instance; the
 * type's own first. */
__attribute__((noinline)) /* its buffers stay off the recursion's stack */
static uint64_t slot_pairs(pyf__vctx *c, uint64_t addr, const pyf__vtype *ty, uint64_t max,
                           uint64_t *kv)
{
    const pyf__offsets *o = c->o;
    const pyf__value_layout *vl = &c->vl;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    uint64_t entries[2 * PYF__VLOOKUP_ITEMS];
    const char *why;
    bool budget;
    /* copied: pyf__vtype_get may move the table ty and its bases are in */
    const uint64_t size = ty->basicsize, self = ty->addr;
    uint64_t at = ty->addr, dict = ty->dict, base = ty->base;
    bool readable = ty->bad == NULL;
    uint64_t got = 0;
    for (unsigned level = 0; level < SLOT_BASES_MAX && readable && got < max; level++) {
        int64_t n = 0;
        if (dict != 0 && dict % 8 == 0 && pyf__vread(c, dict, b, (size_t)o->dict.size) == PYF_OK)
            n = pyf__dict_pairs(c, pyf__ld64(b + o->dict.ma_keys),
                                pyf__ld64(b + o->dict.ma_values), PYF__VLOOKUP_ITEMS, entries,
                                NULL, &why, &budget);
        for (int64_t k = 0; k < n && got < max; k++) {
            uint64_t d = entries[2 * k + 1], def, value;
            uint8_t h[64], m[24];
            if (d % 8 != 0 || pyf__vread(c, d, h, (size_t)o->pyobject.size) != PYF_OK ||
                strcmp(pyf__vtype_get(c, pyf__ld64(h + o->pyobject.ob_type))->name,
                       "member_descriptor") != 0 ||
                pyf__vread(c, d + vl->member_descr_member, &def, 8) != PYF_OK || def % 8 != 0 ||
                pyf__vread(c, def, m, sizeof m) != PYF_OK ||
                (int32_t)pyf__ld32(m + vl->member_def_type) != PYF__T_OBJECT_EX)
                continue;
            /* within the instance: its own type's size bounds every slot */
            uint64_t off = pyf__ld64(m + vl->member_def_offset);
            if (size < 16 || size > (1u << 20) || off < o->pyobject.size || off > size - 8 ||
                pyf__vread(c, addr + off, &value, 8) != PYF_OK || value == 0)
                continue;
            kv[2 * got] = entries[2 * k];
            kv[2 * got + 1] = value;
            got++;
        }
        /* object (no base), a bad pointer, or a chain that loops back */
        if (base == 0 || base % 8 != 0 || base == at || base == self)
            break;
        const pyf__vtype *t = pyf__vtype_get(c, base);
        /* classes only: a builtin base (object) declares no __slots__ */
        readable = t->bad == NULL && (t->flags & PYF__TPFLAGS_HEAPTYPE);
        at = t->addr;
        dict = t->dict;
        base = t->base;
    }
    return got;
}

/* An instance's attributes (its __dict__, its inline values, or its
 * __slots__) as name, value pairs. */
static void attributes(pyf__vctx *c, uint32_t i, uint64_t addr, const pyf__vtype *ty,
                       uint32_t depth)
{
    const pyf__value_layout *vl = &c->vl;
    uint64_t dict, values;
    if (!instance_where(c, addr, ty, &dict, &values))
        return;
    if (values != 0) { /* a managed dict not made yet: every pair, counted */
        uint64_t *kv = words(c, 2 * SPLIT_MAX);
        const char *why;
        bool budget;
        int64_t n = kv != NULL ? pyf__dict_pairs(c, ty->cached_keys, values, SPLIT_MAX, kv,
                                                 NULL, &why, &budget)
                               : -1;
        if (n >= 0) {
            c->v[i].length = (uint64_t)n;
            uint64_t shows = shown(c, i, (uint64_t)n, depth);
            bool saved = c->no_attrs;
            c->no_attrs = true;
            children(c, i, kv, (uint32_t)shows * 2, depth);
            c->no_attrs = saved;
        }
        free(kv);
        return;
    }
    if (dict == 0 || dict % 8 != 0) {
        uint64_t kv[2 * PYF__VLOOKUP_ITEMS];
        uint64_t n = slot_pairs(c, addr, ty, PYF__VLOOKUP_ITEMS, kv);
        c->v[i].length = n;
        uint64_t shows = shown(c, i, n, depth);
        bool saved = c->no_attrs;
        c->no_attrs = true;
        children(c, i, kv, (uint32_t)shows * 2, depth);
        c->no_attrs = saved;
        return;
    }
    const pyf__offsets *o = c->o;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    if (pyf__vread(c, dict, b, (size_t)o->dict.size) != PYF_OK ||
        pyf__vtype_get(c, pyf__ld64(b + o->pyobject.ob_type))->kind != PYF_VALUE_DICT)
        return;
    int64_t used = (int64_t)pyf__ld64(b + vl->dict_used);
    if (used < 0 || used > SIZE_ABSURD)
        return;
    c->v[i].length = (uint64_t)used;
    bool saved = c->no_attrs;
    c->no_attrs = true;
    dict_children(c, i, pyf__ld64(b + o->dict.ma_keys), pyf__ld64(b + o->dict.ma_values),
                  depth);
    c->no_attrs = saved;
}

/* ---- the kinds with a few fields ---------------------------------------------- */

/* Read the fields at offs[n] (pointers) of the object at addr into out. */
static bool fields(pyf__vctx *c, uint32_t i, uint64_t addr, const uint64_t *offs, int n,
                   uint64_t *out)
{
    uint64_t end = 0;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    for (int k = 0; k < n; k++)
        if (offs[k] + 8 > end)
            end = offs[k] + 8;
    if (end > sizeof b || !obj_read(c, i, addr, b, (size_t)end))
        return false;
    for (int k = 0; k < n; k++)
        out[k] = pyf__ld64(b + offs[k]);
    return true;
}

/* The type of the object at addr (NULL when unreadable). */
static const pyf__vtype *type_at(pyf__vctx *c, uint64_t addr)
{
    uint8_t h[64];
    if (addr == 0 || addr % 8 != 0 || c->o->pyobject.size > sizeof h ||
        pyf__vread(c, addr, h, (size_t)c->o->pyobject.size) != PYF_OK)
        return NULL;
    return pyf__vtype_get(c, pyf__ld64(h + c->o->pyobject.ob_type));
}

static bool kind_at(pyf__vctx *c, uint64_t addr, uint32_t kind)
{
    const pyf__vtype *ty = type_at(c, addr);
    return ty != NULL && ty->kind == kind;
}

/* The attributes name[k] of the instance at addr of type ty into out[k]
 * (0 when absent): from its __dict__ or inline values. */
#define SPEC_ITEMS 16u
static void attrs_of(pyf__vctx *c, uint64_t addr, const pyf__vtype *ty,
                     const char *const *name, uint64_t *out, int n)
{
    uint64_t kv[2 * SPEC_ITEMS];
    for (int k = 0; k < n; k++)
        out[k] = 0;
    int64_t got = pyf__instance_items(c, addr, ty, SPEC_ITEMS, kv);
    for (int64_t j = 0; j < got; j++) {
        size_t nb;
        uint64_t chars;
        bool cut;
        const char *s = pyf__vstr(c, kv[2 * j], 32, &nb, &chars, &cut);
        for (int k = 0; s != NULL && k < n; k++)
            if (out[k] == 0 && nb == strlen(name[k]) && memcmp(s, name[k], nb) == 0)
                out[k] = kv[2 * j + 1];
    }
}

static bool ends_with(const char *s, const char *end)
{
    size_t a = s != NULL ? strlen(s) : 0, b = strlen(end);
    return a >= b && memcmp(s + a - b, end, b) == 0 && (a == b || s[a - b - 1] == '.');
}

/* A module as repr() names it (importlib's _module_repr): with a
 * ModuleSpec, spec.name and spec.origin ("from 'origin'" when
 * spec.has_location, "(origin)" when not: built-in, frozen); without one,
 * __name__ and __file__.  The forms repr() takes from a loader's repr (a
 * spec without origin, a module without spec and file but with a loader)
 * are not decoded: the value says it was cut. */
static void decode_module(pyf__vctx *c, uint32_t i, uint64_t addr, uint32_t depth)
{
    uint64_t dict;
    if (!fields(c, i, addr, &c->vl.module_dict, 1, &dict))
        return;
    uint64_t name = pyf__dict_lookup(c, dict, "__name__");
    uint64_t spec = pyf__dict_lookup(c, dict, "__spec__");
    const pyf__vtype *sty = type_at(c, spec);
    if (sty != NULL && sty->kind == PYF_VALUE_OTHER && ends_with(sty->name, "ModuleSpec")) {
        static const char *const keys[3] = {"name", "origin", "_set_fileattr"};
        uint64_t a[3];
        attrs_of(c, spec, sty, keys, a, 3);
        name_data(c, i, kind_at(c, a[0], PYF_VALUE_STR) ? a[0] : name);
        if (kind_at(c, a[1], PYF_VALUE_STR) && kind_at(c, a[2], PYF_VALUE_BOOL)) {
            c->v[i].number = 1;
            if (may_descend(c, i, addr, depth))
                children(c, i, a + 1, 2, depth);
        } else {
            c->v[i].flags |= PYF_VALUE_TRUNCATED;
        }
        return;
    }
    if (name != 0)
        name_data(c, i, name);
    uint64_t file = pyf__dict_lookup(c, dict, "__file__");
    if (kind_at(c, file, PYF_VALUE_STR)) {
        child(c, i, file, depth);
    } else {
        uint64_t loader = pyf__dict_lookup(c, dict, "__loader__");
        if (loader != 0 && !kind_at(c, loader, PYF_VALUE_NONE))
            c->v[i].flags |= PYF_VALUE_TRUNCATED;
    }
}

static void decode_builtin(pyf__vctx *c, uint32_t i, uint64_t addr, uint32_t depth)
{
    uint64_t offs[2] = {c->vl.cfunc_ml, c->vl.cfunc_self}, f[2], ml_name;
    if (!fields(c, i, addr, offs, 2, f))
        return;
    if (f[0] != 0 && f[0] % 8 == 0 && pyf__vread(c, f[0], &ml_name, 8) == PYF_OK) {
        const char *s = pyf__vcstr(c, ml_name, 128);
        if (s != NULL)
            pyf__vdata(c, i, s, strlen(s));
    }
    uint8_t h[64];
    if (f[1] != 0 && f[1] % 8 == 0 &&
        pyf__vread(c, f[1], h, (size_t)c->o->pyobject.size) == PYF_OK &&
        pyf__vtype_get(c, pyf__ld64(h + c->o->pyobject.ob_type))->kind != PYF_VALUE_MODULE)
        child(c, i, f[1], depth);
}

static void decode_code(pyf__vctx *c, uint32_t i, uint64_t addr, uint32_t depth)
{
    const pyf__offsets *o = c->o;
    uint8_t *b = malloc((size_t)o->code.size);
    if (b == NULL) {
        c->nomem = true;
        return;
    }
    if (obj_read(c, i, addr, b, (size_t)o->code.size)) {
        c->v[i].number = (int32_t)pyf__ld32(b + o->code.firstlineno);
        uint64_t name = pyf__ld64(b + o->code.name), file = pyf__ld64(b + o->code.filename);
        free(b);
        name_data(c, i, name);
        child(c, i, file, depth);
        return;
    }
    free(b);
}

static void decode_type(pyf__vctx *c, uint32_t i, uint64_t addr)
{
    const pyf__vtype *ty = pyf__vtype_get(c, addr);
    if (ty->bad != NULL)
        pyf__vbad(c, i, 0, "unreadable type object");
    else
        pyf__vdata(c, i, ty->name, strlen(ty->name));
}

/* The builtin exceptions whose str() is OSError's (Objects/exceptions.c,
 * OSError_str). */
static bool oserror_family(const pyf__vtype *ty)
{
    static const char *const names[] = {
        "OSError", "BlockingIOError", "ChildProcessError", "ConnectionError",
        "BrokenPipeError", "ConnectionAbortedError", "ConnectionRefusedError",
        "ConnectionResetError", "FileExistsError", "FileNotFoundError", "InterruptedError",
        "IsADirectoryError", "NotADirectoryError", "PermissionError", "ProcessLookupError",
        "TimeoutError",
    };
    if (ty->flags & PYF__TPFLAGS_HEAPTYPE)
        return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(ty->name, names[i]) == 0)
            return true;
    return false;
}

/* An exception: its args and, for an OSError whose errno and strerror are
 * set, those, filename and filename2 when set (what OSError's str()
 * words). */
static void decode_exception(pyf__vctx *c, uint32_t i, uint64_t addr, const pyf__vtype *ty,
                             uint32_t depth)
{
    const pyf__value_layout *vl = &c->vl;
    const uint64_t offs[5] = {vl->exc_args, vl->oserror_errno, vl->oserror_strerror,
                              vl->oserror_filename, vl->oserror_filename2};
    uint64_t f[5];
    bool oserror = oserror_family(ty);
    if (!fields(c, i, addr, offs, oserror ? 5 : 1, f) || f[0] == 0 ||
        !may_descend(c, i, addr, depth))
        return;
    uint32_t n = 1;
    if (oserror && f[1] != 0 && f[2] != 0)
        n = f[3] == 0 ? 3 : f[4] == 0 ? 4 : 5;
    children(c, i, f, n, depth);
}

static void decode_kind(pyf__vctx *c, uint32_t i, uint64_t addr, const pyf__vtype *ty,
                        uint32_t depth)
{
    const pyf__offsets *o = c->o;
    const pyf__value_layout *vl = &c->vl;
    uint64_t f[3];
    uint8_t b[PYF__VALUE_HEAD_MAX];
    switch (ty->kind) {
    case PYF_VALUE_BOOL:
    case PYF_VALUE_INT:
        decode_int(c, i, addr, ty->kind == PYF_VALUE_BOOL);
        break;
    case PYF_VALUE_FLOAT:
        if (obj_read(c, i, addr, b, (size_t)o->flt.ob_fval + 8))
            memcpy(&c->v[i].real, b + o->flt.ob_fval, 8);
        break;
    case PYF_VALUE_COMPLEX:
        if (obj_read(c, i, addr, b, (size_t)vl->complex_imag + 8)) {
            memcpy(&c->v[i].real, b + vl->complex_real, 8);
            memcpy(&c->v[i].imag, b + vl->complex_imag, 8);
        }
        break;
    case PYF_VALUE_STR:
        decode_str(c, i, addr);
        break;
    case PYF_VALUE_BYTES:
        if (obj_read(c, i, addr, b, (size_t)o->bytes.ob_sval))
            byte_data(c, i, (int64_t)pyf__ld64(b + o->bytes.ob_size), addr + o->bytes.ob_sval);
        break;
    case PYF_VALUE_BYTEARRAY:
        if (obj_read(c, i, addr, b, (size_t)vl->bytearray_start + 8))
            byte_data(c, i, (int64_t)pyf__ld64(b + o->bytes.ob_size),
                      pyf__ld64(b + vl->bytearray_start));
        break;
    case PYF_VALUE_TUPLE:
        if (obj_read(c, i, addr, b, (size_t)o->tuple.ob_item))
            sequence(c, i, (int64_t)pyf__ld64(b + o->tuple.ob_size), addr + o->tuple.ob_item,
                     depth);
        break;
    case PYF_VALUE_LIST:
        if (obj_read(c, i, addr, b, (size_t)o->list.size))
            sequence(c, i, (int64_t)pyf__ld64(b + o->list.ob_size),
                     pyf__ld64(b + o->list.ob_item), depth);
        break;
    case PYF_VALUE_DICT:
        decode_dict(c, i, addr, depth);
        break;
    case PYF_VALUE_SET:
    case PYF_VALUE_FROZENSET:
        decode_set(c, i, addr, depth);
        break;
    case PYF_VALUE_RANGE:
        if (fields(c, i, addr, &vl->range_start, 3, f) && may_descend(c, i, addr, depth))
            children(c, i, f, 3, depth);
        break;
    case PYF_VALUE_TYPE:
        decode_type(c, i, addr);
        break;
    case PYF_VALUE_FUNCTION:
        if (fields(c, i, addr, &vl->func_qualname, 1, f))
            name_data(c, i, f[0]);
        break;
    case PYF_VALUE_BUILTIN:
        decode_builtin(c, i, addr, depth);
        break;
    case PYF_VALUE_METHOD:
        if (fields(c, i, addr, &vl->method_func, 2, f) && may_descend(c, i, addr, depth))
            children(c, i, f, 2, depth);
        break;
    case PYF_VALUE_MODULE:
        decode_module(c, i, addr, depth);
        break;
    case PYF_VALUE_CELL:
        if (fields(c, i, addr, &vl->cell_ref, 1, f) && f[0] != 0)
            child(c, i, f[0], depth);
        break;
    case PYF_VALUE_CODE:
        decode_code(c, i, addr, depth);
        break;
    case PYF_VALUE_GENERATOR:
    case PYF_VALUE_COROUTINE:
    case PYF_VALUE_ASYNC_GENERATOR:
        if (fields(c, i, addr, &vl->gen_qualname, 1, f))
            name_data(c, i, f[0]);
        break;
    case PYF_VALUE_EXCEPTION:
        decode_exception(c, i, addr, ty, depth);
        break;
    case PYF_VALUE_OTHER:
        if ((c->req.flags & PYF_VALUES_ATTRS) && !c->no_attrs)
            attributes(c, i, addr, ty, depth);
        break;
    default: /* None, Ellipsis, NotImplemented: nothing more */
        break;
    }
}

void pyf__decode_object(pyf__vctx *c, uint32_t i, uint64_t addr, uint32_t depth)
{
    const pyf__offsets *o = c->o;
    c->v[i].addr = addr;
    if (c->objects >= c->req.max_objects) {
        pyf__vbad(c, i, PYF_VALUE_BUDGET, "object budget spent");
        return;
    }
    c->objects++;
    if (addr < 4096 || addr % 8 != 0) {
        pyf__vbad(c, i, 0, "bad object pointer 0x%llx", (unsigned long long)addr);
        return;
    }
    uint8_t hdr[64];
    if (!obj_read(c, i, addr, hdr, (size_t)o->pyobject.size))
        return;
    /* a default build's first word is the reference count: 0 once freed
     * (free-threaded builds keep the owning thread there) */
    if (!o->free_threaded && pyf__ld32(hdr) == 0) {
        pyf__vbad(c, i, 0, "freed object (reference count 0)");
        return;
    }
    uint64_t type = pyf__ld64(hdr + o->pyobject.ob_type);
    const pyf__vtype *ty = pyf__vtype_get(c, type);
    if (ty->bad != NULL) {
        pyf__vbad(c, i, strstr(ty->bad, "budget") ? PYF_VALUE_BUDGET : 0, "%s 0x%llx", ty->bad,
                  (unsigned long long)type);
        return;
    }
    c->v[i].kind = ty->kind;
    c->v[i].type_name = ty->name;
    pyf__vtype copy = *ty; /* the table of types may grow while decoding */
    decode_kind(c, i, addr, &copy, depth);
}
