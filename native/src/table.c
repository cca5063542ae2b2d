/*
 * table.c - the frame table a target shares with its snapshots (see "The
 * frame table" in pyframes.h): distinct frame records and frame keys,
 * interned, append-only, reference-counted.
 *
 * A record is identified by the decode of its code object (the code
 * cache's serial: a code object decoded again, because it was freed and
 * another took its address, gets a new one), the instruction and the
 * frame's own flags; its location is decoded once, when it is made.  A key
 * is a frame address and a record.  The arrays never change in place:
 * while a snapshot holds the table, growing one leaves the old array to
 * that snapshot (kept until the table goes) and copies into a new one.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "code.h"
#include "containers.h"
#include "linetable.h"
#include "table.h"

#define NO_SLOT UINT32_MAX

/* ---- a hash map from (a, b, c) to an index -------------------------------- */

static uint32_t tmap_hash(uint64_t a, uint64_t b, uint32_t c, uint32_t mask)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL) *
                 0xff51afd7ed558ccdULL ^ (uint64_t)c * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 29;
    return (uint32_t)h & mask;
}

static bool tmap_grow(pyf__tmap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 256;
    if (ncap == 0)
        return false;
    pyf__tmap_slot *ns = malloc((size_t)ncap * sizeof *ns);
    if (ns == NULL)
        return false;
    for (uint32_t i = 0; i < ncap; i++)
        ns[i].v = NO_SLOT;
    for (uint32_t i = 0; i < m->cap; i++) {
        pyf__tmap_slot *s = &m->slots[i];
        if (s->v == NO_SLOT)
            continue;
        uint32_t k = tmap_hash(s->a, s->b, s->c, ncap - 1);
        while (ns[k].v != NO_SLOT)
            k = (k + 1) & (ncap - 1);
        ns[k] = *s;
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return true;
}

/* The slot of (a, b, c): its v is the index, or NO_SLOT when absent (then
 * the caller fills the slot in).  NULL when out of memory. */
static pyf__tmap_slot *tmap_slot(pyf__tmap *m, uint64_t a, uint64_t b, uint32_t c)
{
    if ((m->n + 1) * 2 > m->cap && !tmap_grow(m))
        return NULL;
    uint32_t mask = m->cap - 1;
    uint32_t k = tmap_hash(a, b, c, mask);
    for (; m->slots[k].v != NO_SLOT; k = (k + 1) & mask) {
        pyf__tmap_slot *s = &m->slots[k];
        if (s->a == a && s->b == b && s->c == c)
            return s;
    }
    m->slots[k] = (pyf__tmap_slot){a, b, c, NO_SLOT};
    return &m->slots[k];
}

/* ---- the table ------------------------------------------------------------ */

pyf__table *pyf__table_new(uint64_t id, uint64_t code_clears)
{
    pyf__table *tb = calloc(1, sizeof *tb);
    if (tb == NULL)
        return NULL;
    tb->refs = 1;
    tb->id = id;
    tb->code_clears = code_clears;
    return tb;
}

void pyf__table_ref(pyf__table *tb)
{
    tb->refs++;
}

void pyf__table_unref(pyf__table *tb)
{
    if (tb == NULL || --tb->refs > 0)
        return;
    for (uint32_t i = 0; i < tb->nretired; i++)
        free(tb->retired[i]);
    free(tb->retired);
    free(tb->records);
    free(tb->keys);
    free(tb->rec_keys);
    free(tb->rec_index.slots);
    free(tb->key_index.slots);
    pyf__addrmap_free(&tb->names);
    pyf__arena_free(&tb->strings);
    free(tb);
}

/* Room for need elements in *v.  A snapshot may point at *v (refs > 1): the
 * old array is then kept until the table goes, never moved. */
static bool grow(pyf__table *tb, void **v, uint32_t *cap, uint32_t need,
                 size_t elem, bool shared)
{
    if (!shared || tb->refs <= 1 || *v == NULL)
        return pyf__grow(v, cap, need, elem);
    if (need <= *cap)
        return true;
    uint32_t ncap = pyf__grown_cap(*cap, need);
    if (ncap == 0)
        return false;
    if (!pyf__grow((void **)&tb->retired, &tb->cap_retired, tb->nretired + 1,
                   sizeof *tb->retired))
        return false;
    void *nv = malloc((size_t)ncap * elem);
    if (nv == NULL)
        return false;
    memcpy(nv, *v, (size_t)*cap * elem);
    tb->retired[tb->nretired++] = *v;
    *v = nv;
    *cap = ncap;
    return true;
}

/* The function and file name of a code decode, copied once per serial. */
static const char *const *names_of(pyf__table *tb, const pyf__code *code)
{
    bool added;
    uint64_t *slot = pyf__addrmap_put(&tb->names, code->serial, &added);
    if (slot == NULL)
        return NULL;
    if (!added)
        return (const char *const *)(uintptr_t)*slot;
    const char **pair = pyf__arena_alloc(&tb->strings, 2 * sizeof *pair);
    if (pair != NULL) {
        pair[0] = pyf__arena_dup(&tb->strings, code->qualname);
        pair[1] = pyf__arena_dup(&tb->strings, code->filename);
    }
    if (pair == NULL || pair[0] == NULL || pair[1] == NULL) {
        pyf__addrmap_remove(&tb->names, code->serial);
        return NULL;
    }
    *slot = (uint64_t)(uintptr_t)pair;
    return pair;
}

static int append_record(pyf__table *tb, pyf__tmap_slot *slot, const pyf_record *r,
                         uint32_t *out)
{
    uint32_t n = tb->nrecords;
    if (!grow(tb, (void **)&tb->records, &tb->cap_records, n + 1, sizeof *tb->records, true) ||
        !pyf__grow((void **)&tb->rec_keys, &tb->cap_rec_keys, n + 1, sizeof *tb->rec_keys))
        return PYF_ENOMEM;
    tb->records[n] = *r;
    tb->rec_keys[n] = (pyf__rec_key){slot->a, slot->c};
    slot->v = n;
    tb->rec_index.n++;
    tb->nrecords = n + 1;
    *out = n;
    return PYF_OK;
}

int pyf__table_record(pyf__table *tb, uint64_t code_addr, const pyf__code *code,
                      int64_t instr, uint32_t flags, uint32_t *out)
{
    /* a decoded code object by its serial; an unreadable one by address */
    uint64_t a = code != NULL ? code->serial : code_addr;
    uint32_t c = flags | (code != NULL ? 0 : PYF__CODE_UNREADABLE_KEY);
    int64_t b = code != NULL ? instr : INT64_MIN;
    pyf__tmap_slot *slot = tmap_slot(&tb->rec_index, a, (uint64_t)b, c);
    if (slot == NULL)
        return PYF_ENOMEM;
    if (slot->v != NO_SLOT) {
        *out = slot->v;
        return PYF_OK;
    }
    pyf_record r = {code_addr, b, {"???", "???", -1, -1, -1, -1, flags, 0}};
    if (code != NULL) {
        const char *const *names = names_of(tb, code);
        if (names == NULL)
            return PYF_ENOMEM; /* the slot stays empty */
        r.info.function = names[0];
        r.info.filename = names[1];
        r.info.flags |= code->flags & (PYF_FRAME_NAME_TRUNCATED | PYF_FRAME_CODE_UNREADABLE);
        pyf__location loc;
        if (!pyf__linetable_lookup(code->line_kind, code->linetable, code->linetable_len,
                                   code->firstlineno, instr, &loc))
            r.info.flags |= PYF_FRAME_NO_LOCATION;
        r.info.line = loc.line;
        r.info.end_line = loc.end_line;
        r.info.column = loc.column;
        r.info.end_column = loc.end_column;
    } else {
        r.info.flags |= PYF_FRAME_CODE_UNREADABLE | PYF_FRAME_NO_LOCATION;
    }
    return append_record(tb, slot, &r, out);
}

int pyf__table_record_with(pyf__table *tb, uint32_t rec, uint32_t add_flags,
                           uint32_t *out)
{
    if (rec >= tb->nrecords)
        return PYF_EINVAL;
    pyf__rec_key k = tb->rec_keys[rec];
    if ((k.c | add_flags) == k.c) {
        *out = rec;
        return PYF_OK;
    }
    pyf__tmap_slot *slot = tmap_slot(&tb->rec_index, k.a,
                                     (uint64_t)tb->records[rec].instr, k.c | add_flags);
    if (slot == NULL)
        return PYF_ENOMEM;
    if (slot->v != NO_SLOT) {
        *out = slot->v;
        return PYF_OK;
    }
    pyf_record r = tb->records[rec]; /* a copy: appending may move the array */
    r.info.flags |= add_flags;
    return append_record(tb, slot, &r, out);
}

int pyf__table_key(pyf__table *tb, uint64_t frame_addr, uint32_t rec, uint32_t *out)
{
    pyf__tmap_slot *slot = tmap_slot(&tb->key_index, frame_addr, rec, 0);
    if (slot == NULL)
        return PYF_ENOMEM;
    if (slot->v != NO_SLOT) {
        *out = slot->v;
        return PYF_OK;
    }
    uint32_t n = tb->nkeys;
    if (!grow(tb, (void **)&tb->keys, &tb->cap_keys, n + 1, sizeof *tb->keys, true))
        return PYF_ENOMEM;
    tb->keys[n] = (pyf_frame_key){frame_addr, rec, 0};
    slot->v = n;
    tb->key_index.n++;
    tb->nkeys = n + 1;
    *out = n;
    return PYF_OK;
}

bool pyf__table_key_is_with(const pyf__table *tb, uint32_t key, uint64_t frame_addr,
                            uint32_t rec, uint32_t add_flags)
{
    if (key >= tb->nkeys || rec >= tb->nrecords || tb->keys[key].frame_addr != frame_addr)
        return false;
    uint32_t r = tb->keys[key].record;
    return tb->rec_keys[r].a == tb->rec_keys[rec].a &&
           tb->rec_keys[r].c == (tb->rec_keys[rec].c | add_flags) &&
           tb->records[r].instr == tb->records[rec].instr;
}
