/*
 * arena.c - bump allocation in 64 KiB blocks, all freed at once: the strings
 * of the frame table and the failure copies of a snapshot.  Nothing
 * allocated here moves or is freed before the arena itself.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
