/*
 * addrset.c - a set of target addresses, for cycle detection in the lists
 * and chains the walker follows (frames, thread states).  Open addressing;
 * grows with what it holds, which the callers bound.
 */
#include <stdlib.h>

#include "internal.h"

static uint32_t slot_of(uint64_t a, uint32_t mask)
{
    return (uint32_t)(((a >> 3) * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
}

bool pyf__addrset_add(pyf__addrset *s, uint64_t a, bool *dup)
{
    *dup = false;
    if (a == 0) /* 0 marks an empty slot; callers never walk address 0 */
        return true;
    if ((s->n + 1) * 2 > s->cap) {
        uint32_t ncap = s->cap ? s->cap * 2 : 256;
        uint64_t *nv = calloc(ncap, sizeof *nv);
        if (nv == NULL)
            return false;
        for (uint32_t i = 0; i < s->cap; i++) {
            if (s->v[i] == 0)
                continue;
            uint32_t k = slot_of(s->v[i], ncap - 1);
            while (nv[k] != 0)
                k = (k + 1) & (ncap - 1);
            nv[k] = s->v[i];
        }
        free(s->v);
        s->v = nv;
        s->cap = ncap;
    }
    uint32_t mask = s->cap - 1;
    uint32_t k = slot_of(a, mask);
    while (s->v[k] != 0) {
        if (s->v[k] == a) {
            *dup = true;
            return true;
        }
        k = (k + 1) & mask;
    }
    s->v[k] = a;
    s->n++;
    return true;
}

void pyf__addrset_free(pyf__addrset *s)
{
    free(s->v);
    s->v = NULL;
    s->cap = s->n = 0;
}
