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
#include "reads.h"
#include "replay.h"
#include "tasks.h"
#include "thread_facts.h"
#include "values.h"
#include "walk.h"

/* ==== the target ========================================================= */

struct pyf_target {
    pyf__target_io io;
    uint64_t runtime_addr;
    pyf__offsets off;
    pyf_options opts;

    pyf__code_state code;
    pyf__walk_state walk;
    pyf__frame_cache cache;
    pyf__asyncio asyncio;
    pyf__facts_memo facts_memo; /* the thread facts' (thread_facts.c) */
    /* what the value calls found, to read ahead the next time (values.h) */
    struct pyf__vhints *vhints;
    pyf__replay_state replay;
};

/* Whether the target runs while it is read, as its reader declares
 * (pyf_reader.reads): the one test behind every check of a running read. */
static inline bool pyf__target_live(const pyf_target *t)
{
    return t->io.reader.reads == PYF_READS_RUNNING;
}

#endif /* PYFRAMES_TARGET_H */
