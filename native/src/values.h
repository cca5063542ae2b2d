/*
 * values.h - the value decoder's insides.
 *
 * The decoder is four files in layers, each calling only the files below
 * it (thread_facts.c calls value_core.c and objects.c besides):
 *
 *   values.c          the calls (pyf_frame_locals, pyf_value_read,
 *                     pyf_values_free), the result, a frame's locals and
 *                     its value stack
 *   value_prefetch.c  what a call reads ahead of the decoder, one readv a
 *                     round, guessed from the last calls' hints
 *   objects.c         one decoder a kind of object, recursing into the
 *                     children
 *   value_core.c      the context and its reads: the read-ahead store,
 *                     reads within the byte budget, nodes, C strings and
 *                     str objects, dict pairs and lookups, type objects,
 *                     the context begun and ended
 *
 * The sections below go from the bottom up, each named after the file
 * that defines what it declares.
 */
#ifndef PYFRAMES_VALUES_H
#define PYFRAMES_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "containers.h"
#include "offsets.h"
#include "reads.h"
#include "value_layout.h"

/* Sizes the read-ahead (value_prefetch.c) must match to serve the
 * decoder's reads: dict and set table entries read at once, a dict's
 * entries searched by name (__name__, __slots__ ...), a type name's
 * bytes and a local's name's characters. */
#define PYF__VCHUNK 128u
#define PYF__VLOOKUP_ITEMS 64u
/* The most values a split dict holds (its order bytes are uint8_t). */
#define PYF__SPLIT_VALUES_MAX 256u
#define PYF__VTYPE_NAME_MAX 128u
#define PYF__VNAME_MAX_CHARS 256u

/* ---- value_core.c ---- */

/* What a type object is, read once per call. */
typedef struct pyf__vtype {
    uint64_t addr;
    uint32_t kind;           /* PYF_VALUE_* of its instances */
    uint64_t flags;          /* tp_flags */
    uint64_t basicsize, dictoffset, dict, cached_keys;
    uint64_t base;           /* tp_base (0 for object) */
    const char *name;        /* repr()'s name of its instances (arena) */
    const char *bad;         /* why it is no readable type (arena), else NULL */
    uint64_t name_ptr;       /* tp_name */
} pyf__vtype;

/* What this call read ahead: ranges of target memory (value_prefetch.c
 * fills them).  The decoder's reads are served from them when one holds
 * the whole read. */
typedef struct pyf__vrange {
    uint64_t addr;
    const uint8_t *data;
    uint32_t len;
} pyf__vrange;

typedef struct pyf__vbatch {
    pyf__vrange *r;          /* sorted by address once read */
    uint32_t n, cap;
    pyf__arena mem;          /* the ranges' bytes */
    uint64_t bytes;          /* read ahead this call */
} pyf__vbatch;

typedef struct pyf__vctx {
    pyf_target *t;
    const pyf__offsets *o;
    pyf__value_layout vl;
    pyf_values_request req;  /* every limit filled in */
    pyf__arena arena;        /* strings of the result */
    pyf_value *v;            /* the nodes, children of one node contiguous */
    uint32_t n, cap;
    pyf__addrmap types;      /* type address -> index + 1 into tv */
    pyf__vtype *tv;
    uint32_t ntv, captv;
    pyf__addrset path;       /* objects being decoded: a cycle's mark */
    uint64_t objects, bytes; /* spent */
    uint32_t lookups;        /* dict lookups under way (pyf__dict_lookup) */
    bool no_attrs;           /* decoding attributes: not theirs again */
    bool frame_reads;        /* reading a frame's names: outside the budget */
    bool nomem;
    pyf__vbatch batch;       /* read ahead (value_prefetch.c) */
} pyf__vctx;

/* Whether [addr, addr+len) was read ahead: copied to dst. */
bool pyf__vbatch_get(pyf__vctx *c, uint64_t addr, void *dst, size_t len);
void pyf__vbatch_free(pyf__vbatch *b);

/* Private result of a read refused by the byte budget. */
#define PYF__EBUDGET (-1002)

/* Read [addr, addr+len) within the byte budget: PYF_OK, PYF__EBUDGET or the
 * reader's code.  Never writes t->io.fail. */
int pyf__vread(pyf__vctx *c, uint64_t addr, void *dst, size_t len);
/* count more nodes after the last, zeroed (type_name ""); their first index,
 * or PYF_NO_VALUE when out of memory (c->nomem) or past 2^31 nodes. */
uint32_t pyf__vnodes(pyf__vctx *c, uint32_t count);
/* Mark node i unreadable: why, formatted into the arena. */
void pyf__vbad(pyf__vctx *c, uint32_t i, uint32_t flags, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Copy len bytes into the arena as node i's data (NUL added). */
void pyf__vdata(pyf__vctx *c, uint32_t i, const void *data, size_t len);
/* The type at addr (never NULL unless out of memory; ->bad says whether it
 * is usable). */
const pyf__vtype *pyf__vtype_get(pyf__vctx *c, uint64_t addr);
/* A C string of at most max bytes at addr into the arena; NULL when
 * unreadable, unterminated or not printable. */
const char *pyf__vcstr(pyf__vctx *c, uint64_t addr, size_t max);
/* A str object's text into the arena (raw UTF-8, at most max_chars
 * characters); NULL when it is no readable str.  *chars: its length. */
const char *pyf__vstr(pyf__vctx *c, uint64_t addr, uint32_t max_chars, size_t *bytes,
                      uint64_t *chars, bool *cut);
/* Whether the str at addr ends where its length says: CPython ends every
 * str's characters with a NUL one.  A str that pyf__vstr cut must, before
 * its first characters are shown: a garbage header whose length runs past
 * the object would show the memory after it. */
bool pyf__vstr_ends(pyf__vctx *c, uint64_t addr);

/* Up to max (key, value) pairs, in insertion order, of the keys object at
 * keys with, for a split table or an object's inline values, the values at
 * values (0: combined; the values laid out as dictvalues_kind says).  The
 * pairs go to kv[2 * max] and, where is not NULL, the address of each
 * one's entry (its key and value words) to where[max] (0 for a split
 * table's); returns how many, or -1 with *why (and *budget when the byte
 * budget ran out).  The one decoder of a dict's table. */
int64_t pyf__dict_pairs(pyf__vctx *c, uint64_t keys, uint64_t values, uint64_t max,
                        uint64_t *kv, uint64_t *where, const char **why, bool *budget);
/* A dict keys object's header (its first keys_indices bytes at hdr, the
 * object at keys), checked: where its entries are, how many it has and
 * their layout (dictkeys_kind); NULL, or why it is no readable keys object.
 * The one reading of that header: the decoder's and the read ahead's. */
typedef struct pyf__dkeys {
    uint64_t entries;        /* the first entry */
    int64_t nentries;
    uint64_t esize, koff;    /* an entry's size and its key's offset */
    bool general;            /* PyDictKeyEntry {hash, key, value} */
} pyf__dkeys;
const char *pyf__dkeys_decode(const pyf__vctx *c, const uint8_t *hdr, uint64_t keys,
                              pyf__dkeys *k);
/* The keys of the first entries (at most max and PYF__VCHUNK) of the keys
 * object at keys, by entry index (the slot of a split table's values; 0:
 * an empty entry) into out; how many, -1 when unreadable. */
int64_t pyf__dict_keys(pyf__vctx *c, uint64_t keys, uint64_t max, uint64_t *out);
/* The value in slot of the split values whose bytes from their start
 * through the slot are b (a managed dict's not made yet): 0 where the
 * values say it is not there (3.13+: not valid, past their capacity). */
static inline uint64_t pyf__values_slot(const pyf__offsets *o, const pyf__value_layout *vl,
                                        const uint8_t *b, uint64_t slot)
{
    if (o->dictvalues_kind == PYF__DICTVALUES_HEADER &&
        (!b[vl->values_valid] || b[vl->values_capacity] <= slot))
        return 0;
    return pyf__ld64(b + vl->values_values + 8 * slot);
}
/* The value of key name (a str) in the dict at addr, 0 when absent or
 * unreadable (the first entries only: __name__, __module__, __file__). */
uint64_t pyf__dict_lookup(pyf__vctx *c, uint64_t dict_addr, const char *name);

/* What an instance of a type is, by the type's tp_flags and tp_name: the
 * builtin kind of a static type of a builtin's name, else PYF_VALUE_OTHER
 * (a heap type: a class may carry any name); the one type classifier (the
 * value decoder's, the asyncio reader's).  Kinds past PYF__KIND_PRIVATE
 * are the library's own, never a pyf_value's: an async generator's
 * asend/athrow awaitable. */
#define PYF__KIND_PRIVATE 100u
#define PYF__KIND_AWAIT_WRAPPER 100u
uint32_t pyf__type_kind(uint64_t tp_flags, const char *tp_name);
/* The same for a static type, as a pyf_value's kind (a private kind is
 * PYF_VALUE_OTHER), and the bytes type_read reads of a type object. */
uint32_t pyf__vbuiltin_kind(const char *tp_name);
size_t pyf__vtype_len(const pyf__vctx *c);

/* Begin a context on t (req may be NULL: the defaults): PYF_OK, or
 * PYF_EOFFSETS when the value layout fails its checks (t->io.fail says why). */
int pyf__vctx_begin(pyf__vctx *c, pyf_target *t, const pyf_values_request *req);
void pyf__vctx_end(pyf__vctx *c);

/* ---- objects.c ---- */
/* Decode the object at addr into node i (allocated), at depth below a
 * local; children are allocated after every node there is. */
void pyf__decode_object(pyf__vctx *c, uint32_t i, uint64_t addr, uint32_t depth);

/* Up to max (key, value) pairs of the dict at dict_addr (its type checked)
 * into kv[2 * max], in insertion order; -1 when it is no readable dict. */
int64_t pyf__dict_items(pyf__vctx *c, uint64_t dict_addr, uint64_t max, uint64_t *kv);
/* The same for the attributes of the instance at addr of type ty: its
 * __dict__ or its inline values (not __slots__); 0 when it has none, -1
 * when unreadable. */
int64_t pyf__instance_items(pyf__vctx *c, uint64_t addr, const pyf__vtype *ty, uint64_t max,
                            uint64_t *kv);
/* The bytes before an object that say where its managed dict is (0 when
 * the layout's are implausible or it has none: 3.8-3.10), and what they
 * say (instdict_kind): end
 * points just past them, at the object (addr) of type ty.  *dict its
 * __dict__, else *values: those of its type's shared keys while no dict
 * is made (3.11: the values pointer; 3.12: the tagged word; 3.13+: inline
 * after the object, not yet checked valid); both 0: none.  One reading of
 * that layout: the decoder's and the thread facts' batches. */
size_t pyf__managed_back(const pyf__vctx *c);
void pyf__managed_dict(const pyf__vctx *c, const pyf__vtype *ty, uint64_t addr,
                       const uint8_t *end, uint64_t *dict, uint64_t *values);

/* ---- value_prefetch.c ----
 * Reads ahead of the decoder, one reader call per level of the tree: what
 * the decoder will read of a frame (its code object, the names, the
 * slots) and of each object (its head and small data, its type and the
 * type's name, items, dict entries), guessed from what the target's last
 * calls found at the same addresses (pyf__vhints: type kinds, a code
 * object's names).  A guess only decides what is read ahead: every value
 * is decoded from bytes read in this call, never from the hints. */
typedef struct pyf__vhint_type {
    uint64_t name_ptr;       /* tp_name */
    uint32_t kind;           /* PYF_VALUE_* as decoded last; UINT32_MAX unknown */
} pyf__vhint_type;
typedef struct pyf__vhint_code {
    uint64_t names, kinds;   /* co_localsplusnames, co_localspluskinds */
    uint32_t n;              /* names held in name_addrs (the first HINT_NAMES_MAX) */
    uint64_t *name_addrs;    /* heap */
} pyf__vhint_code;
typedef struct pyf__vhints {
    pyf__addrmap types;      /* type address -> index + 1 into ty */
    pyf__vhint_type *ty;
    uint32_t nty, capty;
    pyf__addrmap codes;      /* code address -> index + 1 into co */
    pyf__vhint_code *co;
    uint32_t nco, capco;
} pyf__vhints;
void pyf__vhints_free(pyf_target *t);
/* Read ahead what decoding the frame at frame_addr (0: none) and the
 * objects at roots[n] will read. */
void pyf__vprefetch(pyf__vctx *c, uint64_t frame_addr, const uint64_t *roots, uint32_t n);
/* After the decode: the kinds and names of the types it read, as hints. */
void pyf__vprefetch_learn(pyf__vctx *c);

/* ---- values.c: nothing here (its calls are pyframes.h's) ---- */

#endif /* PYFRAMES_VALUES_H */
