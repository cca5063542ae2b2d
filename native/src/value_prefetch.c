/*
 * value_prefetch.c - what a values call reads ahead of its decoder, one
 * reader call (readv) per round: the frame; then its code object, the
 * local names and kinds and the first level's objects; then their types,
 * items and dict entries; then the next level's objects, and so on.  The
 * decoder (values.c, objects.c, value_core.c) then runs as it always did,
 * its reads served from these copies (value_core.c's store) when one holds
 * the whole read and read from the target otherwise: what it decodes, its
 * budget and its failures are the same, only the reader calls are fewer.
 *
 * What to read ahead is guessed from what the target's earlier calls found
 * (pyf__vhints, kept in the target): the kind of the type at an address,
 * where its name is, a code object's names.  A wrong guess only reads
 * bytes the decoder does not use; no value, name or type is ever taken
 * from a hint.  Only readers that batch (readv) are read ahead.
 *
 * Bounds: a round holds at most ROUND_MAX ranges, a range at most
 * RANGE_MAX bytes; a call reads ahead at most CALL_BYTES_MAX bytes (and
 * twice its byte budget, plus CALL_BYTES_SLACK for the frame's names), the
 * call's max_objects objects, in at most ROUNDS_MAX rounds; every count
 * read is checked before it sizes a range; the hints are emptied past
 * HINT_TYPES_MAX types or HINT_CODES_MAX code objects.
 *
 * May call objects.c and value_core.c, never values.c; it calls only
 * value_core.c (pyf__vtype_len, pyf__vbuiltin_kind), and fills its store
 * (c->batch) directly.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "code.h"
#include "containers.h"
#include "objhead.h"
#include "offsets.h"
#include "reads.h"
#include "target.h"
#include "value_layout.h"
#include "values.h"

#define OBJ_BYTES 128u           /* an object's head and small data */
#define KEYS_BYTES 512u          /* a small dict's keys object with its entries */
#define SLOTS 64u                /* frame slots read with the frame */
#define ROUND_MAX 1024u          /* ranges per readv */
#define ROUNDS_MAX 64u
#define RANGE_MAX (64u << 10)
#define CALL_BYTES_MAX (2u << 20)
#define CALL_BYTES_SLACK (64u << 10)
#define HINT_TYPES_MAX 4096u
#define HINT_CODES_MAX 1024u
#define HINT_NAMES_MAX 256u
#define LOCALS_MAX 65536u
#define WAIT_ROUNDS 3u

enum { R_OBJ, R_NAME, R_TYPE, R_TPNAME, R_RAW, R_ITEMS, R_KEYS, R_ENTRIES, R_SETTAB,
       R_FRAME, R_CODE, R_NAMES, R_KINDS, R_SLOTS, R_HT, R_LOOKUP, R_CELLS, R_CELL_SLOTS };
/* R_KEYS, R_ENTRIES of a dict searched by name (pyf__dict_lookup): its keys
 * and, of the names searched for, their values */
#define AUX_LOOKUP (1ull << 62)
#define LOOKUP_KEYS_BYTES 2048u
/* R_CELLS of a 3.8-3.10 code object's co_freevars (else its co_cellvars):
 * the slot their first one is in, below */
#define AUX_FREEVARS (1ull << 40)
#define CELLS_BYTES 152u         /* such a tuple with its first 16 names */

typedef struct req {
    uint64_t addr;
    uint32_t len;
    uint8_t what;
    uint8_t hinted;          /* R_NAMES: the names were asked for from a hint */
    uint16_t depth;
    uint64_t aux;            /* items wanted (R_KEYS, R_ENTRIES, R_SETTAB); entry
                                size (R_ENTRIES, bits 32-39), AUX_LOOKUP; the type
                                (R_TPNAME, bit 0: a heap type) */
} req;

typedef struct waiting {
    uint64_t addr, type;
    const uint8_t *d;
    uint32_t len, rounds;
    uint16_t depth;
} waiting;

typedef struct pf {
    pyf__vctx *c;
    pyf__vhints *h;
    req *cur, *next;
    uint32_t ncur, nnext, capcur, capnext;
    pyf__addrset objs, types, tpnames;
    pyf__addrmap looked_up;  /* key of a searched dict -> its value */
    waiting *wait;
    uint32_t nwait, capwait;
    uint64_t objects;
    uint64_t max_bytes;      /* read ahead at most */
    /* the frame: its copy, what the code object says */
    uint64_t frame;
    const uint8_t *fbuf;
    uint32_t flen;
    uint64_t code, kinds;
    uint64_t freevars;       /* 3.8-3.10: the code object's co_freevars */
    bool roots_done;
} pf;

/* ---- hints ---------------------------------------------------------------- */

void pyf__vhints_free(pyf_target *t)
{
    pyf__vhints *h = t->value_hints;
    if (h == NULL)
        return;
    for (uint32_t i = 0; i < h->nco; i++)
        free(h->co[i].name_addrs);
    free(h->co);
    free(h->ty);
    pyf__addrmap_free(&h->types);
    pyf__addrmap_free(&h->codes);
    free(h);
    t->value_hints = NULL;
}

static void hints_clear_types(pyf__vhints *h)
{
    pyf__addrmap_free(&h->types);
    h->nty = 0;
}

static void hints_clear_codes(pyf__vhints *h)
{
    for (uint32_t i = 0; i < h->nco; i++)
        free(h->co[i].name_addrs);
    pyf__addrmap_free(&h->codes);
    h->nco = 0;
}

static pyf__vhint_type *hint_type(pyf__vhints *h, uint64_t addr)
{
    uint64_t *v = pyf__addrmap_get(&h->types, addr);
    return v != NULL ? &h->ty[*v - 1] : NULL;
}

static pyf__vhint_code *hint_code(pyf__vhints *h, uint64_t addr)
{
    uint64_t *v = pyf__addrmap_get(&h->codes, addr);
    return v != NULL ? &h->co[*v - 1] : NULL;
}

/* The entry of addr in the array *arr (*n entries of size bytes) that map
 * indexes, or a new one, zeroed (*fresh), after clear when there are max
 * already; NULL when out of memory. */
static void *hint_slot(pyf__vhints *h, pyf__addrmap *map, void **arr, uint32_t *n,
                       uint32_t *cap, size_t size, uint32_t max,
                       void (*clear)(pyf__vhints *), uint64_t addr, bool *fresh)
{
    uint64_t *v = pyf__addrmap_get(map, addr);
    *fresh = v == NULL;
    if (v != NULL)
        return (uint8_t *)*arr + (size_t)(*v - 1) * size;
    if (*n >= max)
        clear(h);
    bool added;
    if (!pyf__grow(arr, cap, *n + 1, size) || (v = pyf__addrmap_put(map, addr, &added)) == NULL)
        return NULL;
    *v = ++*n;
    uint8_t *e = (uint8_t *)*arr + (size_t)(*n - 1) * size;
    memset(e, 0, size);
    return e;
}

/* The hint of the type at addr, made (kind unknown) when absent; NULL when
 * out of memory. */
static pyf__vhint_type *hint_type_put(pyf__vhints *h, uint64_t addr)
{
    bool fresh;
    pyf__vhint_type *e = hint_slot(h, &h->types, (void **)&h->ty, &h->nty, &h->capty,
                                   sizeof *e, HINT_TYPES_MAX, hints_clear_types, addr, &fresh);
    if (e != NULL && fresh)
        e->kind = UINT32_MAX;
    return e;
}

static pyf__vhint_code *hint_code_put(pyf__vhints *h, uint64_t addr)
{
    bool fresh;
    return hint_slot(h, &h->codes, (void **)&h->co, &h->nco, &h->capco, sizeof(pyf__vhint_code),
                     HINT_CODES_MAX, hints_clear_codes, addr, &fresh);
}

void pyf__vprefetch_learn(pyf__vctx *c)
{
    pyf__vhints *h = c->t->value_hints;
    if (h == NULL)
        return;
    for (uint32_t i = 0; i < c->ntv; i++) {
        const pyf__vtype *ty = &c->tv[i];
        pyf__vhint_type *e = ty->bad == NULL && ty->addr != 0 ? hint_type_put(h, ty->addr)
                                                               : NULL;
        if (e != NULL) {
            e->kind = ty->kind;
            e->name_ptr = ty->name_ptr;
        }
    }
}

/* ---- the ranges read ------------------------------------------------------ */

/* The order value_core.c's pyf__vbatch_get finds the ranges in: by
 * address, the longest first. */
static int range_order(const void *a, const void *b)
{
    const pyf__vrange *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->len > y->len ? -1 : x->len < y->len;
}

/* ---- requests ------------------------------------------------------------- */

static bool plausible(uint64_t addr)
{
    return addr >= 4096 && addr % 8 == 0 && addr < ((uint64_t)1 << 57);
}

/* Ask for [addr, addr+len) in the next round; false when refused (a bound). */
static bool ask(pf *p, uint8_t what, uint64_t addr, uint64_t len, uint32_t depth,
                uint64_t aux)
{
    if (addr < 4096 || len == 0 || len > RANGE_MAX || addr + len < addr ||
        p->nnext >= ROUND_MAX ||
        !pyf__grow((void **)&p->next, &p->capnext, p->nnext + 1, sizeof *p->next))
        return false;
    p->next[p->nnext++] = (req){addr, (uint32_t)len, what, 0, (uint16_t)depth, aux};
    return true;
}

/* The C string of a type's name as value_core.c's pyf__vcstr reads it first:
 * up to PYF__VTYPE_NAME_MAX, not past its page.  aux: the type. */
static void ask_tpname(pf *p, uint64_t name, uint64_t type)
{
    bool dup;
    uint64_t piece = 4096 - name % 4096;
    if (pyf__addrset_add(&p->tpnames, name, &dup) && !dup)
        ask(p, R_TPNAME, name, piece < PYF__VTYPE_NAME_MAX ? piece : PYF__VTYPE_NAME_MAX, 0, type);
}

/* An object, once a call. */
static void ask_obj(pf *p, uint8_t what, uint64_t addr, uint32_t depth)
{
    bool dup;
    if (!plausible(addr) || p->objects >= p->c->req.max_objects ||
        !pyf__addrset_add(&p->objs, addr, &dup) || dup)
        return;
    p->objects++;
    ask(p, what, addr, OBJ_BYTES, depth, 0);
}

/* A type object and, when known, its name, once a call. */
static void ask_type(pf *p, uint64_t addr)
{
    bool dup;
    if (!plausible(addr) || !pyf__addrset_add(&p->types, addr, &dup) || dup)
        return;
    ask(p, R_TYPE, addr, pyf__vtype_len(p->c), 0, 0);
    pyf__vhint_type *e = hint_type(p->h, addr);
    if (e != NULL && e->name_ptr != 0)
        ask_tpname(p, e->name_ptr, addr);
}

/* The pointers at d[n] as objects at depth. */
static void ask_pointers(pf *p, const uint8_t *d, uint64_t n, uint32_t depth)
{
    for (uint64_t k = 0; k < n; k++)
        ask_obj(p, R_OBJ, pyf__ld64(d + k * 8), depth);
}

/* ---- what a read says ------------------------------------------------------- */

/* The rest of a str (at addr, d its first len bytes) a decode reads. */
static void str_rest(pf *p, uint64_t addr, const uint8_t *d, uint32_t len)
{
    const pyf__offsets *o = p->c->o;
    pyf__str_info si;
    if (len < o->unicode.compactunicodeobject_size || pyf__str_header(o, d, &si) != PYF_OK)
        return;
    uint64_t chars = p->c->req.max_string > PYF__VNAME_MAX_CHARS ? p->c->req.max_string
                                                                 : PYF__VNAME_MAX_CHARS;
    uint64_t n = si.length < chars ? si.length : chars;
    uint64_t need = si.data_off + n * si.kind;
    if (need > len)
        ask(p, R_RAW, addr, need, 0, 0);
}

/* What a decode of the object at addr (its first len bytes at d), of kind,
 * reads next. */
static void follow(pf *p, uint64_t addr, const uint8_t *d, uint32_t len, uint32_t kind,
                   uint32_t depth)
{
    const pyf__offsets *o = p->c->o;
    const pyf__value_layout *vl = &p->c->vl;
    uint64_t items = p->c->req.max_items;
    bool down = depth < p->c->req.max_depth;
    uint64_t f[3];
    int64_t n;
    switch (kind) {
    case PYF_VALUE_INT:
    case PYF_VALUE_BOOL: {
        uint64_t nd;
        unsigned sign;
        if (len >= pyf__int_head_len(o) && pyf__int_head(o, d, &nd, &sign)) {
            if (o->lng.ob_digit + nd * 4 > len && nd < RANGE_MAX / 4)
                ask(p, R_RAW, addr + o->lng.ob_digit, nd * 4, 0, 0);
        }
        break;
    }
    case PYF_VALUE_STR:
        str_rest(p, addr, d, len);
        break;
    case PYF_VALUE_BYTES:
        if (len >= o->bytes.ob_sval) {
            n = (int64_t)pyf__ld64(d + o->bytes.ob_size);
            if (n >= 0 && n < RANGE_MAX) {
                uint64_t k = (uint64_t)n < p->c->req.max_string ? (uint64_t)n
                                                                 : p->c->req.max_string;
                if (o->bytes.ob_sval + k > len)
                    ask(p, R_RAW, addr, o->bytes.ob_sval + k, 0, 0);
            }
        }
        break;
    case PYF_VALUE_TUPLE:
    case PYF_VALUE_LIST: {
        bool tuple = kind == PYF_VALUE_TUPLE;
        uint64_t head = tuple ? o->tuple.ob_item : o->list.size;
        if (!down || len < head)
            break;
        n = (int64_t)pyf__ld64(d + (tuple ? o->tuple.ob_size : o->list.ob_size));
        if (n <= 0 || n > ((int64_t)1 << 40))
            break;
        uint64_t k = (uint64_t)n < items ? (uint64_t)n : items;
        uint64_t at = tuple ? addr + o->tuple.ob_item : pyf__ld64(d + o->list.ob_item);
        if (tuple && o->tuple.ob_item + k * 8 <= len)
            ask_pointers(p, d + o->tuple.ob_item, k, depth + 1);
        else if (plausible(at))
            ask(p, R_ITEMS, at, k * 8, depth, 0);
        break;
    }
    case PYF_VALUE_DICT:
        if (!down || len < o->dict.size)
            break;
        n = (int64_t)pyf__ld64(d + vl->dict_used);
        if (n > 0 && pyf__ld64(d + o->dict.ma_values) == 0 &&
            plausible(pyf__ld64(d + o->dict.ma_keys)))
            ask(p, R_KEYS, pyf__ld64(d + o->dict.ma_keys), KEYS_BYTES, depth,
                (uint64_t)n < items ? (uint64_t)n : items);
        break;
    case PYF_VALUE_SET:
    case PYF_VALUE_FROZENSET: {
        uint64_t end = vl->set_table > vl->set_used ? vl->set_table : vl->set_used;
        end = (end > vl->set_mask ? end : vl->set_mask) + 8;
        if (!down || len < end)
            break;
        n = (int64_t)pyf__ld64(d + vl->set_used);
        uint64_t mask = pyf__ld64(d + vl->set_mask), table = pyf__ld64(d + vl->set_table);
        if (n > 0 && mask < (1u << 30) && ((mask + 1) & mask) == 0 && plausible(table))
            ask(p, R_SETTAB, table, (mask + 1 < PYF__VCHUNK ? mask + 1 : PYF__VCHUNK) * 16,
                depth, (uint64_t)n < items ? (uint64_t)n : items);
        break;
    }
    case PYF_VALUE_CELL:
        if (vl->cell_ref + 8 <= len)
            ask_obj(p, R_OBJ, pyf__ld64(d + vl->cell_ref), depth);
        break;
    case PYF_VALUE_METHOD:
    case PYF_VALUE_RANGE:
    case PYF_VALUE_EXCEPTION: {
        const uint64_t *offs = kind == PYF_VALUE_METHOD ? &vl->method_func
                               : kind == PYF_VALUE_RANGE ? &vl->range_start : &vl->exc_args;
        int count = kind == PYF_VALUE_METHOD ? 2 : kind == PYF_VALUE_RANGE ? 3 : 1;
        for (int k = 0; k < count && down; k++)
            if (offs[k] + 8 <= len)
                ask_obj(p, R_OBJ, pyf__ld64(d + offs[k]), depth + 1);
        break;
    }
    case PYF_VALUE_FUNCTION:
    case PYF_VALUE_GENERATOR:
    case PYF_VALUE_COROUTINE:
    case PYF_VALUE_ASYNC_GENERATOR:
        f[0] = kind == PYF_VALUE_FUNCTION ? vl->func_qualname : vl->gen_qualname;
        if (f[0] + 8 <= len)
            ask_obj(p, R_NAME, pyf__ld64(d + f[0]), depth);
        break;
    case PYF_VALUE_TYPE:
        ask_type(p, addr);
        break;
    case PYF_VALUE_MODULE:
        if (vl->module_dict + 8 <= len)
            ask(p, R_LOOKUP, pyf__ld64(d + vl->module_dict), OBJ_BYTES, 0, 0);
        break;
    default:
        break;
    }
}

/* Whether the str whose first len bytes are d is the name searched for
 * in a dict by type_read and decode_module. */
static bool searched_name(const pyf__offsets *o, const uint8_t *d, uint32_t len)
{
    static const char *const names[] = {"__module__", "__name__", "__file__"};
    pyf__str_info si;
    if (len < o->unicode.compactunicodeobject_size || pyf__str_header(o, d, &si) != PYF_OK ||
        si.kind != 1 || si.data_off + si.length > len)
        return false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (si.length == strlen(names[i]) && memcmp(d + si.data_off, names[i], si.length) == 0)
            return true;
    return false;
}

/* An object's head read: its type asked for, its next reads when the
 * type's kind is known (else it waits for it). */
static void on_obj(pf *p, const req *r, const uint8_t *d)
{
    const pyf__offsets *o = p->c->o;
    if (!o->free_threaded && pyf__ld32(d) == 0)
        return; /* freed: the decoder stops there */
    uint64_t type = pyf__ld64(d + o->pyobject.ob_type);
    ask_type(p, type);
    uint64_t *value = p->looked_up.n ? pyf__addrmap_get(&p->looked_up, r->addr) : NULL;
    if (value != NULL && searched_name(o, d, r->len))
        ask_obj(p, R_NAME, *value, 0);
    if (r->what == R_NAME) {
        str_rest(p, r->addr, d, r->len);
        return;
    }
    pyf__vhint_type *e = hint_type(p->h, type);
    if (e != NULL && e->kind != UINT32_MAX) {
        follow(p, r->addr, d, r->len, e->kind, r->depth);
        return;
    }
    if (pyf__grow((void **)&p->wait, &p->capwait, p->nwait + 1, sizeof *p->wait))
        p->wait[p->nwait++] = (waiting){r->addr, type, d, r->len, 0, r->depth};
}

/* A type object read: its name; a heap type's qualname and module (the
 * "__module__" of its dict). */
static void on_type(pf *p, const req *r, const uint8_t *d)
{
    const pyf__offsets *o = p->c->o;
    const pyf__value_layout *vl = &p->c->vl;
    uint64_t name = pyf__ld64(d + o->type.tp_name);
    bool heap = pyf__ld64(d + o->type.tp_flags) & PYF__TPFLAGS_HEAPTYPE;
    pyf__vhint_type *e = hint_type_put(p->h, r->addr);
    if (e == NULL || name == 0)
        return;
    if (e->name_ptr != name) {
        e->name_ptr = name;
        e->kind = UINT32_MAX;
    }
    ask_tpname(p, name, r->addr | heap);
    if (heap) {
        ask(p, R_HT, r->addr + vl->heap_qualname, 16, 0, 0);
        ask(p, R_LOOKUP, pyf__ld64(d + vl->type_dict), OBJ_BYTES, 0, 0);
    }
}

static void on_ht(pf *p, const req *r, const uint8_t *d)
{
    (void)r;
    ask_obj(p, R_NAME, pyf__ld64(d), 0); /* ht_qualname */
}

/* A dict searched by name: its keys. */
static void on_lookup(pf *p, const req *r, const uint8_t *d)
{
    const pyf__offsets *o = p->c->o;
    if (r->len < o->dict.size || r->addr % 8 != 0)
        return;
    ask_type(p, pyf__ld64(d + o->pyobject.ob_type));
    if (pyf__ld64(d + o->dict.ma_values) == 0)
        ask(p, R_KEYS, pyf__ld64(d + o->dict.ma_keys), LOOKUP_KEYS_BYTES, 0,
            PYF__VLOOKUP_ITEMS | AUX_LOOKUP);
}

static void on_tpname(pf *p, const req *r, const uint8_t *d)
{
    pyf__vhint_type *e = r->aux & 1 ? NULL : hint_type(p->h, r->aux);
    char name[PYF__VTYPE_NAME_MAX + 1];
    size_t n = r->len < PYF__VTYPE_NAME_MAX ? r->len : PYF__VTYPE_NAME_MAX;
    if (e == NULL || e->kind != UINT32_MAX || memchr(d, 0, n) == NULL)
        return;
    memcpy(name, d, n);
    name[n] = '\0';
    uint32_t kind = pyf__vbuiltin_kind(name);
    if (kind != PYF_VALUE_OTHER)
        e->kind = kind;
}

/* A combined dict's entries (r->aux: their size above, pairs wanted below):
 * the first pairs. */
static void on_entries(pf *p, const req *r, const uint8_t *d)
{
    uint64_t esize = (r->aux >> 32) & 0xff, max = r->aux & 0xffffffffu, got = 0;
    bool general = esize == 24, lookup = r->aux & AUX_LOOKUP;
    for (uint64_t k = 0; k < r->len / esize && got < max; k++) {
        uint64_t key = pyf__ld64(d + k * esize + (general ? 8 : 0));
        uint64_t val = pyf__ld64(d + k * esize + (general ? 16 : 8));
        bool added;
        uint64_t *v;
        if (key == 0 || val == 0)
            continue;
        got++;
        if (!lookup) {
            ask_obj(p, R_OBJ, key, r->depth + 1);
            ask_obj(p, R_OBJ, val, r->depth + 1);
        } else if ((v = pyf__addrmap_put(&p->looked_up, key, &added)) != NULL) {
            *v = val;
            ask_obj(p, R_NAME, key, 0);
        }
    }
}

/* A combined dict's keys object (KEYS_BYTES of it): its first pairs. */
static void on_keys(pf *p, const req *r, const uint8_t *d)
{
    pyf__dkeys k;
    if (r->len < p->c->vl.keys_indices || pyf__dkeys_decode(p->c, d, r->addr, &k) != NULL ||
        k.nentries <= 0)
        return;
    uint64_t off = k.entries - r->addr, esize = k.esize;
    uint64_t m = (uint64_t)k.nentries < PYF__VCHUNK ? (uint64_t)k.nentries : PYF__VCHUNK;
    req e = {r->addr + off, (uint32_t)(m * esize), R_ENTRIES, 0, r->depth,
             r->aux | esize << 32};
    if (off + m * esize > r->len)
        ask(p, R_ENTRIES, e.addr, e.len, e.depth, e.aux);
    else
        on_entries(p, &e, d + off); /* in this copy already */
}

static void on_settab(pf *p, const req *r, const uint8_t *d)
{
    uint64_t got = 0;
    for (uint64_t k = 0; k < r->len / 16 && got < r->aux; k++) {
        uint64_t key = pyf__ld64(d + k * 16);
        if (key != 0 && pyf__ld64(d + k * 16 + 8) != UINT64_MAX) {
            ask_obj(p, R_OBJ, key, r->depth + 1);
            got++;
        }
    }
}

/* ---- a frame ---------------------------------------------------------------- */

/* The frame's locals (slots at s[n]) as the first level. */
static void ask_slots(pf *p, const uint8_t *s, uint64_t n)
{
    const pyf__offsets *o = p->c->o;
    if (p->roots_done)
        return;
    p->roots_done = true;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t raw = pyf__ld64(s + i * 8);
        if (!(o->tagged_ints && (raw & 3) == 3))
            ask_obj(p, R_OBJ, raw & o->tag_mask, 0);
    }
}

/* Where a frame's locals start: f_localsplus of a frame object (3.8-3.10),
 * localsplus of an interpreter frame. */
static uint64_t localsplus_of(const pyf__offsets *o)
{
    return o->frame_model == PYF__FRAMES_HEAP ? o->heapframe.localsplus : o->frame.localsplus;
}

/* The objects in slots [from, from + n) of the frame (3.8-3.10's cells
 * and free variables, after the locals): from its copy, else read. */
static void ask_slot_range(pf *p, uint64_t from, uint64_t n)
{
    const pyf__offsets *o = p->c->o;
    uint64_t at = localsplus_of(o) + from * 8;
    if (at + n * 8 <= p->flen) {
        for (uint64_t i = 0; i < n; i++)
            ask_obj(p, R_OBJ, pyf__ld64(p->fbuf + at + i * 8), 0);
    } else {
        ask(p, R_CELL_SLOTS, p->frame + at, n * 8, 0, 0);
    }
}

/* The locals n slots of the frame read ahead: from its copy, else read. */
static void ask_frame_slots(pf *p, uint64_t n)
{
    const pyf__offsets *o = p->c->o;
    if (localsplus_of(o) + n * 8 <= p->flen)
        ask_slots(p, p->fbuf + localsplus_of(o), n);
    else
        ask(p, R_SLOTS, p->frame + localsplus_of(o), n * 8, 0, 0);
}

/* The names tuple and kinds bytes of n locals (names from the hint when
 * it has them; 3.8-3.10: co_varnames, which number the first slots, and no
 * kinds, kinds 0). */
static void ask_names(pf *p, uint64_t names, uint64_t kinds, uint64_t n, bool hinted)
{
    const pyf__offsets *o = p->c->o;
    if (ask(p, R_NAMES, names, o->tuple.ob_item + n * 8, 0, 0))
        p->next[p->nnext - 1].hinted = hinted;
    if (kinds != 0)
        ask(p, R_KINDS, kinds, o->bytes.ob_sval + n, 0, 0);
}

static void on_frame(pf *p, const req *r, const uint8_t *d)
{
    const pyf__offsets *o = p->c->o;
    p->fbuf = d;
    p->flen = r->len;
    if (r->len < pyf__frame_code_at(o) + 8)
        return;
    p->code = pyf__ld64(d + pyf__frame_code_at(o)) & o->tag_mask;
    if (!plausible(p->code))
        return;
    ask(p, R_CODE, p->code, o->code.size, 0, 0);
    const pyf__vhint_code *hc = hint_code(p->h, p->code);
    if (hc == NULL || hc->names == 0)
        return;
    ask_names(p, hc->names, hc->kinds, hc->n, true);
    for (uint32_t i = 0; i < hc->n && hc->name_addrs != NULL; i++)
        ask_obj(p, R_NAME, hc->name_addrs[i], 0);
    ask_frame_slots(p, hc->n);
}

static void on_code(pf *p, const req *r, const uint8_t *d)
{
    const pyf__offsets *o = p->c->o;
    (void)r;
    ask_type(p, pyf__ld64(d + o->pyobject.ob_type));
    bool heap = o->frame_model == PYF__FRAMES_HEAP;
    if (heap) { /* the cells and free variables after its co_nlocals locals */
        uint64_t cellvars = pyf__ld64(d + o->code.cellvars);
        int32_t nlocals = (int32_t)pyf__ld32(d + o->code.nlocals);
        p->freevars = pyf__ld64(d + o->code.freevars);
        if (nlocals >= 0 && nlocals <= (int32_t)LOCALS_MAX)
            ask(p, R_CELLS, plausible(cellvars) ? cellvars : p->freevars, CELLS_BYTES, 0,
                (uint64_t)nlocals | (plausible(cellvars) ? 0 : AUX_FREEVARS));
    }
    uint64_t names = pyf__ld64(d + (heap ? o->code.varnames : o->code.localsplusnames));
    p->kinds = heap ? 0 : pyf__ld64(d + o->code.localspluskinds);
    const pyf__vhint_code *hc = hint_code(p->h, p->code);
    if (hc != NULL && hc->names == names && hc->kinds == p->kinds)
        return; /* asked for with the frame */
    if (plausible(names) && (heap || plausible(p->kinds)))
        ask_names(p, names, p->kinds, SLOTS, false);
}

/* The names tuple: its names, the slots they number, the hint. */
static void on_names(pf *p, const req *r, const uint8_t *d)
{
    const pyf__offsets *o = p->c->o;
    if (r->len < o->tuple.ob_item)
        return;
    int64_t n = (int64_t)pyf__ld64(d + o->tuple.ob_size);
    if (n < 0 || n > LOCALS_MAX)
        return;
    if (o->tuple.ob_item + (uint64_t)n * 8 > r->len) {
        ask(p, R_NAMES, r->addr, o->tuple.ob_item + (uint64_t)n * 8, 0, 0);
        return;
    }
    const uint8_t *items = d + o->tuple.ob_item;
    pyf__vhint_code *hc = hint_code_put(p->h, p->code);
    if (hc != NULL && (hc->names != r->addr || hc->n != (uint32_t)n)) {
        uint32_t keep = n < HINT_NAMES_MAX ? (uint32_t)n : HINT_NAMES_MAX;
        free(hc->name_addrs);
        hc->name_addrs = keep ? malloc((size_t)keep * 8) : NULL;
        hc->n = hc->name_addrs != NULL ? keep : 0;
        if (hc->name_addrs != NULL)
            memcpy(hc->name_addrs, items, (size_t)keep * 8);
        hc->names = r->addr;
        hc->kinds = p->kinds;
    }
    if (r->hinted)
        return;
    for (int64_t i = 0; i < n; i++)
        ask_obj(p, R_NAME, pyf__ld64(items + i * 8), 0);
    ask_frame_slots(p, (uint64_t)n);
}

/* 3.8-3.10: the co_cellvars (then co_freevars) tuple of the frame's code,
 * whose size says how many slots of cells follow slot r->aux. */
static void on_cells(pf *p, const req *r, const uint8_t *d)
{
    const pyf__offsets *o = p->c->o;
    if (r->len < o->tuple.ob_size + 8)
        return;
    int64_t n = (int64_t)pyf__ld64(d + o->tuple.ob_size);
    uint64_t from = r->aux & 0xffffffffu;
    if (n < 0 || from + (uint64_t)n > LOCALS_MAX)
        return;
    if (n > 0)
        ask_slot_range(p, from, (uint64_t)n);
    if (!(r->aux & AUX_FREEVARS) && plausible(p->freevars))
        ask(p, R_CELLS, p->freevars, CELLS_BYTES, 0, (from + (uint64_t)n) | AUX_FREEVARS);
}

static void on_cell_slots(pf *p, const req *r, const uint8_t *d)
{
    for (uint64_t i = 0; i < r->len / 8; i++)
        ask_obj(p, R_OBJ, pyf__ld64(d + i * 8), 0);
}

/* ---- rounds ----------------------------------------------------------------- */

static void on_items(pf *p, const req *r, const uint8_t *d)
{
    ask_pointers(p, d, r->len / 8, r->depth + 1);
}

static void on_slots(pf *p, const req *r, const uint8_t *d)
{
    ask_slots(p, d, r->len / 8);
}

/* What each read says (none: R_RAW, R_KINDS are read for the decoder only). */
static void (*const on_read[])(pf *, const req *, const uint8_t *) = {
    [R_OBJ] = on_obj,     [R_NAME] = on_obj,         [R_TYPE] = on_type,
    [R_TPNAME] = on_tpname, [R_ITEMS] = on_items,    [R_KEYS] = on_keys,
    [R_ENTRIES] = on_entries, [R_SETTAB] = on_settab, [R_FRAME] = on_frame,
    [R_CODE] = on_code,   [R_NAMES] = on_names,      [R_SLOTS] = on_slots,
    [R_CELLS] = on_cells, [R_CELL_SLOTS] = on_cell_slots,
    [R_HT] = on_ht,       [R_LOOKUP] = on_lookup,    [R_RAW] = NULL,
    [R_KINDS] = NULL,
};

/* Objects waiting for their type's kind: followed once it is known,
 * dropped after WAIT_ROUNDS rounds. */
static void rewait(pf *p)
{
    uint32_t keep = 0;
    for (uint32_t i = 0; i < p->nwait; i++) {
        waiting w = p->wait[i];
        pyf__vhint_type *e = hint_type(p->h, w.type);
        if (e != NULL && e->kind != UINT32_MAX)
            follow(p, w.addr, w.d, w.len, e->kind, w.depth);
        else if (++w.rounds < WAIT_ROUNDS)
            p->wait[keep++] = w;
    }
    p->nwait = keep;
}

/* One round: what was asked for, read in one call; what it says asked for
 * next.  False when nothing more is read ahead. */
static bool round_run(pf *p)
{
    pyf__vctx *c = p->c;
    req *t = p->cur;
    uint32_t tc = p->capcur;
    p->cur = p->next;
    p->capcur = p->capnext;
    p->ncur = p->nnext;
    p->next = t;
    p->capnext = tc;
    p->nnext = 0;
    uint32_t n = p->ncur;
    pyf_iovec *iov = malloc((size_t)n * sizeof *iov + 1);
    int *st = malloc((size_t)n * sizeof *st + 1);
    bool ok = iov != NULL && st != NULL &&
              pyf__grow((void **)&c->batch.r, &c->batch.cap, c->batch.n + n,
                        sizeof *c->batch.r);
    uint32_t m = 0;
    for (uint32_t i = 0; ok && i < n; i++) {
        if (c->batch.bytes + p->cur[i].len > p->max_bytes)
            break;
        uint8_t *buf = pyf__arena_alloc(&c->batch.mem, p->cur[i].len);
        if (buf == NULL)
            break;
        c->batch.bytes += p->cur[i].len;
        iov[m++] = (pyf_iovec){p->cur[i].addr, buf, p->cur[i].len};
    }
    if (m > 0)
        pyf__readv(c->t, iov, m, st);
    for (uint32_t i = 0; i < m; i++) {
        const pyf__offsets *o = c->o;
        if (st[i] != PYF_OK && p->cur[i].what == R_FRAME &&
            p->cur[i].len > pyf__frame_size(o))
            ask(p, R_FRAME, p->cur[i].addr, pyf__frame_size(o), 0, 0); /* at a chunk's end */
        if (st[i] != PYF_OK)
            continue;
        c->batch.r[c->batch.n++] = (pyf__vrange){iov[i].addr, iov[i].dst, (uint32_t)iov[i].len};
        if (on_read[p->cur[i].what] != NULL)
            on_read[p->cur[i].what](p, &p->cur[i], iov[i].dst);
    }
    rewait(p);
    free(iov);
    free(st);
    return ok && m == n && p->nnext > 0;
}

void pyf__vprefetch(pyf__vctx *c, uint64_t frame_addr, const uint64_t *roots, uint32_t n)
{
    pyf_target *t = c->t;
    if (t->io.reader.readv == NULL)
        return;
    if (t->value_hints == NULL && (t->value_hints = calloc(1, sizeof *t->value_hints)) == NULL)
        return;
    pf p = {.c = c, .h = t->value_hints, .frame = frame_addr, .max_bytes = CALL_BYTES_MAX};
    if (c->req.max_bytes < (CALL_BYTES_MAX - CALL_BYTES_SLACK) / 2)
        p.max_bytes = 2 * c->req.max_bytes + CALL_BYTES_SLACK;
    const pyf__offsets *o = c->o;
    if (frame_addr != 0 && frame_addr % 8 == 0)
        ask(&p, R_FRAME, frame_addr, localsplus_of(o) + SLOTS * 8, 0, 0);
    for (uint32_t i = 0; i < n; i++)
        ask_obj(&p, R_OBJ, roots[i], 0);
    for (uint32_t r = 0; r < ROUNDS_MAX && p.nnext > 0; r++)
        if (!round_run(&p))
            break;
    if (c->batch.n > 1)
        qsort(c->batch.r, c->batch.n, sizeof *c->batch.r, range_order);
    free(p.cur);
    free(p.next);
    free(p.wait);
    pyf__addrset_free(&p.objs);
    pyf__addrset_free(&p.types);
    pyf__addrset_free(&p.tpnames);
    pyf__addrmap_free(&p.looked_up);
}
