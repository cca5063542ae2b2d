/*
 * thread_facts.h - each thread's name, GIL state and exception in flight
 * (thread_facts.c; PYF_SNAP_THREAD_FACTS).
 */
#ifndef PYFRAMES_THREAD_FACTS_H
#define PYFRAMES_THREAD_FACTS_H

#include <stdbool.h>
#include <stdint.h>

#include "api.h"
#include "containers.h"

/* Where a key was found in a dict with a combined table: the dict, its
 * keys object, the address of the entry's key and value, and both: valid
 * again while the dict still has those keys and the entry still holds
 * both (read again before each use, never trusted as it is). */
typedef struct pyf__dict_slot {
    uint64_t dict, keys, entry, key, value;
} pyf__dict_slot;

/* What the last snapshot found of one interpreter's threading module:
 * sys.modules["threading"] and its global _active. */
typedef struct pyf__facts_memo {
    uint64_t interp;
    pyf__dict_slot module, active;
} pyf__facts_memo;

/* The facts of the snapshot's threads[nthreads] (of interps[ninterps]),
 * into a new array of the arena with strings of the arena: *out; the
 * value trees their exc_value index, one pyf_values in the arena:
 * *trees.  *pure: what they are depends on nothing but those threads and
 * what their reads found (and the memo, facts_memo): no code object came
 * from the target's cache.  Never fails but for memory (PYF_ENOMEM). */
int pyf__thread_facts_read(pyf_target *t, const pyf_interp *interps, uint32_t ninterps,
                           const pyf_thread *threads, uint32_t nthreads, pyf__arena *arena,
                           pyf_thread_facts **out, pyf_values **trees, bool *pure);

/* PYF_SNAP_GIL: on a 3.11-3.14 default build, PYF_THREAD_GIL_KNOWN and
 * HOLDS_GIL of threads[nthreads] from each interpreter's GIL (two reads
 * per interpreter, made within the walk's prefetch: planned into the next
 * snapshot's one reader call).  What cannot be read leaves the flags
 * unset; nothing fails. */
void pyf__thread_gil_mark(pyf_target *t, const pyf_interp *interps, uint32_t ninterps,
                          pyf_thread *threads, uint32_t nthreads);

#endif /* PYFRAMES_THREAD_FACTS_H */
