/*
 * replay.h - pyf_snapshot_take_copy's answer given again while its one read
 * finds the same bytes, and the thread facts' reads logged for it
 * (replay.c).
 */
#ifndef PYFRAMES_REPLAY_H
#define PYFRAMES_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"

typedef struct pyf__replay pyf__replay;
typedef struct pyf__readlog pyf__readlog;

/* pyf_target.replay: take_copy's last answer, and while the thread facts
 * are read, the log of their reads (else NULL). */
typedef struct pyf__replay_state {
    pyf__replay *last;
    pyf__readlog *log;
} pyf__replay_state;

/* pyf_snapshot_take_copy's answer given again while its one read finds
 * the same bytes (replay.c), req the request normalised (or NULL).  _note
 * after a take_copy, with the stats and reader calls from before it and
 * whether its answer is the last one's but for its thread facts (settled:
 * it was freed, or only the facts kept it); _try before one: true when it
 * answered, else the prefetch may be begun already (take goes on with
 * it); _forget when the caches or the reading change. */
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
 * answer with facts.  _add is read.c's, for each read while t->replay.log. */
void pyf__readlog_begin(pyf_target *t);
void pyf__readlog_end(pyf_target *t, bool pure);
void pyf__readlog_add(pyf__readlog *log, uint64_t addr, const void *bytes, size_t len, int rc);

#endif /* PYFRAMES_REPLAY_H */
