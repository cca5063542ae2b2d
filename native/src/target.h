/*
 * target.h - the target (target.c): what a pyf_target holds.
 */
#ifndef PYFRAMES_TARGET_H
#define PYFRAMES_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "cache.h"
#include "code.h"
#include "offsets.h"
#include "pthread_tid.h"
#include "reads.h"
#include "replay.h"
#include "tasks.h"
#include "thread_facts.h"
#include "values.h"
#include "walk.h"

/* ==== the target ========================================================= */

struct pyf_target {
    /* what the target is: how it is read, where its runtime is, its
     * layout and the caller's options */
    pyf__target_io io;            /* the reader and its bookkeeping (reads.h) */
    uint64_t runtime_addr;
    pyf__offsets off;
    pyf_options opts;

    /* what each subsystem keeps of it, in the subsystem's own struct */
    pyf__code_state code;         /* code objects (code.h) */
    pyf__walk_state walk;         /* the walks between snapshots (walk.h) */
    pyf__frame_cache frame_cache; /* 3.15's frame cache (cache.h) */
    pyf__asyncio asyncio;         /* asyncio tasks: its table (tasks.h) */
    pyf__facts_memo facts_memo;   /* the thread facts' (thread_facts.h) */
    /* what the value calls found, to read ahead the next time (values.h) */
    pyf__vhints *value_hints;
    pyf__replay_state replay;     /* take_copy's answer again (replay.h) */
    pyf__os_threads os_threads;   /* OS thread ids from pthread handles (pthread_tid.h) */
};

/* Whether the target runs while it is read, as its reader declares
 * (pyf_reader.reads): the one test behind every check of a running read. */
static inline bool pyf__target_live(const pyf_target *t)
{
    return t->io.reader.reads == PYF_READS_RUNNING;
}

#endif /* PYFRAMES_TARGET_H */
