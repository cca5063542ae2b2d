/*
 * tasks.h - asyncio tasks (tasks.c).
 */
#ifndef PYFRAMES_TASKS_H
#define PYFRAMES_TASKS_H

#include <stdint.h>

#include "api.h"
#include "containers.h"
#include "offsets.h"
#include "walk.h"

/* ==== asyncio tasks (tasks.c) ============================================ */
typedef struct pyf__asyncio {
    uint64_t addr;           /* the table, 0 until located */
    pyf__asyncio_offsets off;
    pyf__addrmap kinds;      /* type address -> what it is (tasks.c) */
    pyf_failure refused;     /* why the last table given was refused (code 0: taken) */
} pyf__asyncio;

/* A snapshot's tasks (held by the snapshot). */
typedef struct pyf__tasks {
    pyf_task *v;
    uint32_t n, cap;
    uint64_t *awaited;
    uint32_t nawaited, cap_awaited;
    int status, list_error;
    const pyf_failure *failure;
} pyf__tasks;
void pyf__tasks_free(pyf__tasks *ts);
void pyf__asyncio_free(pyf__asyncio *a);

/* Read every task: the threads visited as the stack walk visits them
 * (pyf__visit_threads).  Coroutine frames go to sink->frame (the snapshot
 * appends them; *nframes is its count of frames).  Strings and failures
 * are allocated in arena.  Only PYF_ENOMEM fails the call: the rest is
 * data (ts->status, list_error, each task's error). */
int pyf__tasks_read(pyf_target *t, const pyf__sink *sink, const uint32_t *nframes,
                    pyf__arena *arena, pyf__tasks *ts);

#endif /* PYFRAMES_TASKS_H */
