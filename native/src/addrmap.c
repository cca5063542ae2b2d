/*
 * addrmap.c - the library's map from one 64-bit key (a target address, or a
 * code decode's serial) to a 64-bit value.  It serves as a set for cycle
 * detection in the lists and chains the walkers follow (frames, thread
 * states, task lists, await chains), as the index of the code-object cache
 * (code.c), as the frame table's names of each code decode (table.c) and as
 * the asyncio reader's kinds of types (tasks.c).  (The frame table interns
 * its records and keys with a map of its own over composite keys: tmap in
 * table.c.)  Open addressing with linear probing, removal by back-shifting
 * (no tombstones); grows with what it holds, which every caller bounds, from
 * the caller's own slots where it began in them (pyf__addrset_local).  Key
 * 0 is never stored.
 */
#include <stdlib.h>
#include <string.h>

#include "containers.h"

static uint32_t slot_of(uint64_t a, uint32_t mask)
{
    a ^= a >> 33;
    a *= 0xff51afd7ed558ccdULL;
    a ^= a >> 33;
    return (uint32_t)a & mask;
}

static bool grow(pyf__addrmap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 64;
    if (ncap == 0) /* 2^32 slots: never reached, the callers bound sizes */
        return false;
    pyf__addrmap_slot *ns = calloc(ncap, sizeof *ns);
    if (ns == NULL)
        return false;
    for (uint32_t i = 0; i < m->cap; i++) {
        if (m->slots[i].key == 0)
            continue;
        uint32_t k = slot_of(m->slots[i].key, ncap - 1);
        while (ns[k].key != 0)
            k = (k + 1) & (ncap - 1);
        ns[k] = m->slots[i];
    }
    if (!m->borrowed)
        free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->borrowed = false;
    return true;
}

uint64_t *pyf__addrmap_get(const pyf__addrmap *m, uint64_t key)
{
    if (m->cap == 0 || key == 0)
        return NULL;
    uint32_t mask = m->cap - 1;
    for (uint32_t k = slot_of(key, mask); m->slots[k].key != 0; k = (k + 1) & mask)
        if (m->slots[k].key == key)
            return &m->slots[k].value;
    return NULL;
}

uint64_t *pyf__addrmap_put(pyf__addrmap *m, uint64_t key, bool *added)
{
    *added = false;
    if (key == 0)
        return NULL;
    /* room first, so that one probe finds the key or where it goes */
    if ((m->n + 1) * 2 > m->cap && !grow(m))
        return NULL;
    uint32_t mask = m->cap - 1;
    uint32_t k = slot_of(key, mask);
    for (; m->slots[k].key != 0; k = (k + 1) & mask)
        if (m->slots[k].key == key)
            return &m->slots[k].value;
    m->slots[k].key = key;
    m->slots[k].value = 0;
    m->n++;
    *added = true;
    return &m->slots[k].value;
}

void pyf__addrmap_remove(pyf__addrmap *m, uint64_t key)
{
    uint64_t *v = pyf__addrmap_get(m, key);
    if (v == NULL)
        return;
    uint32_t mask = m->cap - 1;
    uint32_t i = (uint32_t)((pyf__addrmap_slot *)(void *)v - m->slots);
    m->slots[i].key = 0;
    m->n--;
    /* re-place the rest of the probe run */
    for (uint32_t j = (i + 1) & mask; m->slots[j].key != 0; j = (j + 1) & mask) {
        pyf__addrmap_slot moved = m->slots[j];
        m->slots[j].key = 0;
        uint32_t k = slot_of(moved.key, mask);
        while (m->slots[k].key != 0)
            k = (k + 1) & mask;
        m->slots[k] = moved;
    }
}

void pyf__addrmap_free(pyf__addrmap *m)
{
    if (!m->borrowed)
        free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
    m->borrowed = false;
}

void pyf__addrset_local(pyf__addrmap *s, pyf__addrmap_slot *slots, uint32_t cap)
{
    memset(slots, 0, (size_t)cap * sizeof *slots);
    s->slots = slots;
    s->cap = cap;
    s->n = 0;
    s->borrowed = true;
}

bool pyf__addrset_add(pyf__addrmap *s, uint64_t a, bool *dup)
{
    bool added;
    *dup = false;
    if (a == 0) /* callers never walk address 0 */
        return true;
    if (pyf__addrmap_put(s, a, &added) == NULL)
        return false;
    *dup = !added;
    return true;
}
