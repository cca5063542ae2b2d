/*
 * arena.c - memory helpers: bump allocation in 64 KiB blocks, all freed at
 * once (the strings of the frame table, the failure copies of a snapshot;
 * nothing allocated there moves or is freed before the arena itself), and
 * the growth of the library's arrays.
 */
#include <stdlib.h>
#include <string.h>

#include "containers.h"

#define ARENA_BLOCK (64u * 1024u)

struct pyf__arena_block {
    struct pyf__arena_block *next;
    size_t used, cap;
    char data[];
};

void *pyf__arena_alloc(pyf__arena *a, size_t len)
{
    len = (len + 7) & ~(size_t)7;
    pyf__arena_block *b = a->head;
    if (b == NULL || b->cap - b->used < len) {
        size_t cap = len > ARENA_BLOCK ? len : ARENA_BLOCK;
        pyf__arena_block *nb = malloc(sizeof *nb + cap);
        if (nb == NULL)
            return NULL;
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        a->head = nb;
        a->bytes += cap;
        b = nb;
    }
    char *p = b->data + b->used;
    b->used += len;
    return p;
}

char *pyf__arena_dup(pyf__arena *a, const char *str)
{
    size_t len = strlen(str) + 1;
    char *p = pyf__arena_alloc(a, len);
    if (p != NULL)
        memcpy(p, str, len);
    return p;
}

void pyf__arena_free(pyf__arena *a)
{
    for (pyf__arena_block *b = a->head; b != NULL;) {
        pyf__arena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
    a->bytes = 0;
}

void pyf__arena_adopt(pyf__arena *a, pyf__arena *from)
{
    if (from->head == NULL)
        return;
    pyf__arena_block *last = from->head;
    while (last->next != NULL)
        last = last->next;
    /* from's blocks after a's newest, which keeps serving allocations */
    if (a->head == NULL) {
        a->head = from->head;
    } else {
        last->next = a->head->next;
        a->head->next = from->head;
    }
    a->bytes += from->bytes;
    from->head = NULL;
    from->bytes = 0;
}

bool pyf__grow_slow(void **v, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint32_t ncap = pyf__grown_cap(*cap, need);
    if (ncap == 0)
        return false;
    void *nv = realloc(*v, (size_t)ncap * elem);
    if (nv == NULL)
        return false;
    *v = nv;
    *cap = ncap;
    return true;
}

bool pyf__buf_room(uint8_t **buf, uint64_t *cap, uint64_t len)
{
    if (*cap >= len)
        return true;
    uint8_t *nb = realloc(*buf, (size_t)len);
    if (nb == NULL)
        return false;
    *buf = nb;
    *cap = len;
    return true;
}

uint32_t pyf__grown_cap(uint32_t cap, uint32_t need)
{
    uint32_t ncap = cap ? cap : 16;
    while (ncap < need) {
        if (ncap > UINT32_MAX / 2)
            return 0;
        ncap *= 2;
    }
    return ncap;
}
