/*
 * test_addrmap.c - the address map and set (addrmap.c) in both kinds of
 * storage: the heap from the first key, and the caller's own slots
 * (pyf__addrset_local) until the set outgrows them.  Every key stays found
 * across growth, duplicates are told, removal keeps the probe runs intact,
 * values survive the move to the heap, and freeing never frees the caller's
 * slots (run under ASan, a free of them fails the test).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "../../native/src/containers.h"
#include "check.h"

#define KEYS 1000u

/* Keys that collide in a small table: multiples of 64 (the hash mixes them,
 * but many still share low bits), never 0. */
static uint64_t key_at(uint32_t i)
{
    return 0x7f0000000000ull + (uint64_t)(i + 1) * 64u;
}

static void exercise(pyf__addrset *s, const char *what)
{
    bool dup = true;
    for (uint32_t i = 0; i < KEYS; i++) {
        CHECK_MSG(pyf__addrset_add(s, key_at(i), &dup), "%s: add %u", what, i);
        CHECK_MSG(!dup, "%s: key %u new, said duplicate", what, i);
    }
    CHECK_MSG(s->n == KEYS, "%s: %u keys held", what, s->n);
    for (uint32_t i = 0; i < KEYS; i++) {
        CHECK_MSG(pyf__addrset_add(s, key_at(i), &dup) && dup, "%s: key %u again", what, i);
        CHECK_MSG(pyf__addrmap_get(s, key_at(i)) != NULL, "%s: key %u found", what, i);
    }
    CHECK(pyf__addrmap_get(s, key_at(KEYS)) == NULL);
    CHECK(pyf__addrmap_get(s, 0) == NULL);
    CHECK(pyf__addrset_add(s, 0, &dup) && !dup); /* 0: never stored, not an error */
    /* every other key removed: the rest still found, the removed ones not */
    for (uint32_t i = 0; i < KEYS; i += 2)
        pyf__addrmap_remove(s, key_at(i));
    CHECK_MSG(s->n == KEYS / 2, "%s: %u keys after removal", what, s->n);
    for (uint32_t i = 0; i < KEYS; i++)
        CHECK_MSG((pyf__addrmap_get(s, key_at(i)) != NULL) == (i % 2 == 1),
                  "%s: key %u after removal", what, i);
}

int main(void)
{
    check_begin("a set on the heap");
    pyf__addrset heap = {0};
    exercise(&heap, "heap");
    pyf__addrset_free(&heap);
    CHECK(heap.slots == NULL && heap.cap == 0 && heap.n == 0);

    check_begin("a set in the caller's slots, then the heap");
    pyf__addrmap_slot mine[16];
    memset(mine, 0xAB, sizeof mine); /* zeroed by pyf__addrset_local */
    pyf__addrset local;
    PYF__ADDRSET_LOCAL(local, mine);
    CHECK(local.slots == mine && local.cap == 16 && local.n == 0 && local.borrowed);
    CHECK(mine[0].key == 0 && mine[15].key == 0 && mine[15].value == 0);
    exercise(&local, "local");
    CHECK(local.slots != mine && !local.borrowed && local.cap >= 2 * KEYS);
    pyf__addrset_free(&local);

    check_begin("a small set stays in the caller's slots and frees nothing");
    pyf__addrset small;
    bool dup = true;
    PYF__ADDRSET_LOCAL(small, mine);
    for (uint32_t i = 0; i < 7; i++) /* 7 keys fit 16 slots: at most half full */
        CHECK(pyf__addrset_add(&small, key_at(i), &dup) && !dup);
    pyf__addrmap_remove(&small, key_at(3));
    CHECK(pyf__addrmap_get(&small, key_at(3)) == NULL && pyf__addrmap_get(&small, key_at(4)));
    CHECK(small.slots == mine);
    pyf__addrset_free(&small); /* must not free mine: ASan says so if it does */
    CHECK(small.slots == NULL && !small.borrowed);

    check_begin("a map's values move with it to the heap");
    pyf__addrmap map;
    PYF__ADDRSET_LOCAL(map, mine);
    bool added = false;
    for (uint32_t i = 0; i < 200; i++) {
        uint64_t *v = pyf__addrmap_put(&map, key_at(i), &added);
        REQUIRE(v != NULL && added);
        *v = i * 3u + 1u;
    }
    CHECK(map.slots != mine);
    for (uint32_t i = 0; i < 200; i++) {
        uint64_t *v = pyf__addrmap_get(&map, key_at(i));
        CHECK_MSG(v != NULL && *v == i * 3u + 1u, "value of key %u", i);
    }
    pyf__addrmap_free(&map);
    return check_end();
}
