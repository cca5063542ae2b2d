/*
 * table.h - the frame table (table.c).
 */
#ifndef PYFRAMES_TABLE_H
#define PYFRAMES_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "code.h"
#include "containers.h"

/* ==== the frame table (table.c) ===========================================
 * See "The frame table" in pyframes.h.  Records are interned by (the code
 * decode's serial, or the address of an unreadable code object; the
 * instruction; the frame's flags), keys by (frame address, record). */

typedef struct pyf__tmap_slot {
    uint64_t a, b;
    uint32_t c, v;           /* v: the index, UINT32_MAX when the slot is empty */
} pyf__tmap_slot;

typedef struct pyf__tmap {
    pyf__tmap_slot *slots;
    uint32_t cap, n;
} pyf__tmap;

/* A thread of the last snapshot: its frames' keys are
 * prev_keys[first, first + n). */
typedef struct pyf__prev_thread {
    uint64_t tstate_addr;
    uint32_t first, n;
} pyf__prev_thread;

typedef struct pyf__rec_key {
    uint64_t a;
    uint32_t c;
} pyf__rec_key;

typedef struct pyf__table {
    uint32_t refs;           /* the target's, and one per snapshot */
    uint64_t id;
    uint64_t code_clears;    /* pyf__code_cache.clears when it was made */
    pyf_record *records;
    pyf__rec_key *rec_keys;  /* per record: how it is interned */
    uint32_t nrecords, cap_records, cap_rec_keys;
    pyf_frame_key *keys;
    uint32_t nkeys, cap_keys;
    void **retired;          /* arrays replaced while a snapshot held them */
    uint32_t nretired, cap_retired;
    pyf__tmap rec_index, key_index;
    pyf__addrmap names;      /* code serial -> (uintptr_t) const char *[2] */
    pyf__arena strings;
} pyf__table;

/* A table with one reference (NULL when out of memory). */
pyf__table *pyf__table_new(uint64_t id, uint64_t code_clears);
void pyf__table_ref(pyf__table *tb);
void pyf__table_unref(pyf__table *tb); /* accepts NULL */
/* The record of a frame running code (NULL: unreadable, shown as "???") at
 * instruction instr with the frame's own flags (PYF_FRAME_GENERATOR and
 * its owner's type, PYF_FRAME_ENTRY_FROM_C); its location is decoded when it is new. */
int pyf__table_record(pyf__table *tb, uint64_t code_addr, const pyf__code *code,
                      int64_t instr, uint32_t flags, uint32_t *out);
/* The record like rec with add_flags set too. */
int pyf__table_record_with(pyf__table *tb, uint32_t rec, uint32_t add_flags,
                           uint32_t *out);
int pyf__table_key(pyf__table *tb, uint64_t frame_addr, uint32_t rec, uint32_t *out);
/* set in pyf__rec_key.c beside the flags: the record of an unreadable code object */
#define PYF__CODE_UNREADABLE_KEY 0x80000000u
/* Whether key is the key pyf__table_record + pyf__table_key would give
 * (a cheap check of a guess, made per frame: inline). */
static inline bool pyf__table_key_is(const pyf__table *tb, uint32_t key, uint64_t frame_addr,
                                     uint64_t code_addr, const pyf__code *code,
                                     int64_t instr, uint32_t flags)
{
    if (key >= tb->nkeys || tb->keys[key].frame_addr != frame_addr)
        return false;
    uint32_t rec = tb->keys[key].record;
    const pyf__rec_key *k = &tb->rec_keys[rec];
    if (code != NULL)
        return k->a == code->serial && k->c == flags && tb->records[rec].instr == instr;
    return k->a == code_addr && k->c == (flags | PYF__CODE_UNREADABLE_KEY) &&
           tb->records[rec].instr == INT64_MIN;
}
/* Whether key is the key of frame_addr with the record like rec plus
 * add_flags (pyf__table_record_with). */
bool pyf__table_key_is_with(const pyf__table *tb, uint32_t key, uint64_t frame_addr,
                            uint32_t rec, uint32_t add_flags);

#endif /* PYFRAMES_TABLE_H */
