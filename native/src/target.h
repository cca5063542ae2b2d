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
#include "table.h"
#include "tasks.h"
#include "thread_facts.h"
#include "values.h"
#include "walk.h"

/* ==== the target ========================================================= */

struct pyf_target {
    pyf_reader reader;
    bool owns_pid_reader;    /* the PID reader, made by the open: closed with it */
    int pid;                 /* -1 for a caller-supplied reader */
    uint64_t runtime_addr;
    pyf__offsets off;
    pyf_options opts;
    pyf_stats stats;
    pyf_failure fail;        /* the last failure (pyf_target_failure) */

    pyf__code_state code;
    pyf__walk_state walk;
    pyf__frame_cache cache;
    /* reader calls made, never reset (stats.read_calls counts the same for
     * the caller, who may reset it): whether a walk read anything itself */
    uint64_t reader_calls;
    pyf__asyncio asyncio;
    pyf__facts_memo facts_memo; /* the thread facts' (thread_facts.c) */
    /* what the value calls found, to read ahead the next time (values.h) */
    struct pyf__vhints *vhints;
    struct pyf__replay *replay; /* take_copy's last answer (replay.c) */
    /* while the thread facts are read: their reads, logged (replay.c) */
    struct pyf__readlog *rlog;
};

/* Whether the target runs while it is read, as its reader declares
 * (pyf_reader.reads): the one test behind every check of a running read. */
static inline bool pyf__target_live(const pyf_target *t)
{
    return t->reader.reads == PYF_READS_RUNNING;
}

/* The spare snapshot pyf_snapshot_take_copy keeps (snapshot.c). */
void pyf__snapshot_spare_free(pyf_target *t);
/* What the sampler (sample.c) builds on, in snapshot.c: a snapshot whose
 * frames are not made (pyf_snapshot.frames NULL; its table and frame keys
 * are there), the frames made later, and a snapshot let go with its
 * arrays kept for the target's next one. */
int pyf__snapshot_take_bare(pyf_target *t, const pyf_snapshot_request *req,
                            pyf_snapshot **out);
int pyf__snapshot_make_frames(pyf_target *t, pyf_snapshot *s);
void pyf__snapshot_recycle(pyf_target *t, pyf_snapshot *s);

/* pyf_snapshot_take_copy's answer given again while its one read finds
 * the same bytes (replay.c), req the request normalised (or NULL).  _note
 * after a take_copy, with the stats and reader calls from before it and
 * whether its answer is the last one's but for its thread facts (settled:
 * it was freed, or only the facts kept it); _try before one: true when it
 * answered, else the prefetch may be begun already (take goes on with
 * it); _forget when the caches or the reading change. */
typedef struct pyf__replay pyf__replay;
void pyf__replay_note(pyf_target *t, const pyf_snapshot_copy *c,
                      const pyf_snapshot_request *req, const pyf_stats *before,
                      uint64_t calls_before, bool settled);
bool pyf__replay_try(pyf_target *t, pyf_snapshot_copy *c,
                     const pyf_snapshot_request *req);
void pyf__replay_forget(pyf_target *t);
void pyf__replay_free(pyf_target *t);
/* The thread facts' reads, logged with the bytes they found between
 * _begin and _end (pure: the facts read nothing but through the reader,
 * no cache of the target's served them): what _try reads again for an
 * answer with facts.  _add is read.c's, for each read while t->rlog. */
typedef struct pyf__readlog pyf__readlog;
void pyf__readlog_begin(pyf_target *t);
void pyf__readlog_end(pyf_target *t, bool pure);
void pyf__readlog_add(pyf__readlog *log, uint64_t addr, const void *bytes, size_t len, int rc);

#endif /* PYFRAMES_TARGET_H */
