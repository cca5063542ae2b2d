/*
 * cache.h - the 3.15 frame cache (cache.c).
 */
#ifndef PYFRAMES_CACHE_H
#define PYFRAMES_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "walk.h"

/* ==== the 3.15 frame cache (cache.c) ===================================== */
typedef struct pyf__cache_entry {
    uint64_t tstate_addr, thread_id;
    uint64_t seq;            /* last_profiled_frame_seq once the anchor was ours */
    uint64_t table_id;       /* the table its keys index */
    uint32_t *keys;          /* the stack from the anchor down, innermost first */
    uint32_t n;
    bool seen;               /* its thread was in the current snapshot */
} pyf__cache_entry;

typedef struct pyf__frame_cache {
    uint32_t mode;           /* PYF_CACHE_* in effect */
    pyf__cache_entry *v;
    uint32_t n, cap;
    uint64_t nkeys;          /* keys held by all entries */
    /* the keys of a walk made to store an entry (a buffer kept) */
    uint32_t *tmp;
    uint32_t ntmp, cap_tmp;
} pyf__frame_cache;

void pyf__cache_clear(pyf__frame_cache *fc);
/* Whether a thread is walked with the anchor protocol (3.15, PYF_CACHE_ON). */
bool pyf__cache_protocol(const pyf_target *t);
/* Walk one thread with the protocol (the rest of the stack from the cache
 * when the anchor and its seq say it holds); tsbuf is its thread state as
 * read.  As pyf__walk_frames. */
int pyf__cache_walk(pyf_target *t, pyf__thread_walk *w, const uint8_t *tsbuf,
                    uint64_t thread_id, const pyf__sink *sink, pyf__walk_result *res);
/* After a snapshot of every thread: entries of threads not seen are dropped. */
void pyf__cache_sweep(pyf_target *t);

#endif /* PYFRAMES_CACHE_H */
