/*
 * children.h - child processes of the C tests that fork targets: tracked so
 * that every one is killed and reaped, even when a test fails or crashes.
 */
#ifndef PYFRAMES_TEST_CHILDREN_H
#define PYFRAMES_TEST_CHILDREN_H

#include <sys/types.h>

/* Remember pid (REQUIRE: at most 32 at once). */
void child_track(pid_t pid);
/* Wait for pid (status may be NULL) and forget it. */
void child_reap(pid_t pid, int *status);
/* SIGKILL and reap every tracked child; async-signal-safe. */
void children_kill(void);

#endif
