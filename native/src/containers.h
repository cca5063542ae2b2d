/*
 * containers.h - the address map, arenas and growing arrays (addrmap.c,
 * arena.c).
 */
#ifndef PYFRAMES_CONTAINERS_H
#define PYFRAMES_CONTAINERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ==== the address map (addrmap.c) =======================================
 * Target address (or code serial) -> value.  Used as a set for cycle
 * detection, as the code-object cache's index, the frame table's names and
 * the asyncio reader's type kinds.  Zero-initialise before use; key 0 is
 * never stored. */

typedef struct pyf__addrmap_slot {
    uint64_t key, value;
} pyf__addrmap_slot;

typedef struct pyf__addrmap {
    pyf__addrmap_slot *slots;
    uint32_t cap, n;
    bool borrowed;           /* slots are the caller's (pyf__addrset_local) */
} pyf__addrmap;

/* The value of key, or NULL. */
uint64_t *pyf__addrmap_get(const pyf__addrmap *m, uint64_t key);
/* The value of key, inserted as 0 (*added set) when absent; NULL when out of
 * memory or key is 0.  The pointer is valid until the next put or remove. */
uint64_t *pyf__addrmap_put(pyf__addrmap *m, uint64_t key, bool *added);
void pyf__addrmap_remove(pyf__addrmap *m, uint64_t key);
void pyf__addrmap_free(pyf__addrmap *m);

/* The map as a set: add a (non-zero) address; *dup when it was there.
 * False only when out of memory. */
typedef pyf__addrmap pyf__addrset;
bool pyf__addrset_add(pyf__addrmap *s, uint64_t a, bool *dup);
#define pyf__addrset_free pyf__addrmap_free
/* An empty set (or map) in the caller's storage of cap slots (a power of
 * two, zeroed here): a walk's cycle set, which mostly stays small, without
 * an allocation.  It moves to the heap once it outgrows them; free it with
 * pyf__addrset_free all the same (the caller's slots are never freed).
 * PYF__ADDRSET_LOCAL(set, slots) gives it an array's whole length. */
void pyf__addrset_local(pyf__addrmap *s, pyf__addrmap_slot *slots, uint32_t cap);
#define PYF__ADDRSET_LOCAL(set, slots)                                         \
    do {                                                                       \
        _Static_assert((sizeof(slots) / sizeof((slots)[0]) &                   \
                        (sizeof(slots) / sizeof((slots)[0]) - 1)) == 0,        \
                       "a power of two of slots");                             \
        pyf__addrset_local(&(set), (slots),                                    \
                           (uint32_t)(sizeof(slots) / sizeof((slots)[0])));    \
    } while (0)

/* ==== arenas (arena.c) ====================================================
 * Bump allocation, 8-aligned, freed all at once.  Zero-initialise. */
typedef struct pyf__arena_block pyf__arena_block;
typedef struct pyf__arena {
    pyf__arena_block *head;
    uint64_t bytes;
} pyf__arena;
void *pyf__arena_alloc(pyf__arena *a, size_t len);
char *pyf__arena_dup(pyf__arena *a, const char *str);
void pyf__arena_free(pyf__arena *a);
/* Move every block of from into a (freed with it); from is left empty.
 * What was allocated in either stays where it is. */
void pyf__arena_adopt(pyf__arena *a, pyf__arena *from);

/* Room for need elements of elem bytes in the heap array *v of *cap
 * (doubling); false when out of memory or past 2^31 elements.  Inline for
 * the common case, called per frame. */
bool pyf__grow_slow(void **v, uint32_t *cap, uint32_t need, size_t elem);
static inline bool pyf__grow(void **v, uint32_t *cap, uint32_t need, size_t elem)
{
    return need <= *cap || pyf__grow_slow(v, cap, need, elem);
}
/* The capacity pyf__grow would give (0: too large). */
uint32_t pyf__grown_cap(uint32_t cap, uint32_t need);
/* Room for len bytes in the heap buffer *buf of *cap bytes (grown to
 * exactly len); false when out of memory. */
bool pyf__buf_room(uint8_t **buf, uint64_t *cap, uint64_t len);

#endif /* PYFRAMES_CONTAINERS_H */
