/*
 * snapshot.h - what the sampler (sample.c) and the target (target.c) call
 * of the snapshots (snapshot.c).
 */
#ifndef PYFRAMES_SNAPSHOT_H
#define PYFRAMES_SNAPSHOT_H

#include "api.h"

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

#endif /* PYFRAMES_SNAPSHOT_H */
