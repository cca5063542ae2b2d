/*
 * pthread_tid.h - the OS thread of a thread state that records only its
 * pthread handle (3.8-3.10: thread_id = pthread_self(), no
 * native_thread_id): pthread_tid.c.
 *
 * The handle is the address of the C library's struct pthread (glibc, musl),
 * which holds the thread's kernel id; on x86-64 it is also the thread's TLS
 * base (fs_base).  Two ways to the id, decided here for every reader:
 *
 *   - a core whose threads' registers hold their TLS base: the thread
 *     whose fs_base is the handle (pyf__os_threads_core);
 *   - else the id inside struct pthread, at an offset calibrated once per
 *     target: the main thread's struct holds the process's pid at exactly
 *     one 4-byte aligned offset of its first PYF__PTHREAD_SCAN bytes.  Each
 *     id read there is kept only when the process has that thread: its
 *     /proc/PID/task (a live process read by PID) or its NT_PRSTATUS notes
 *     (a core).  No pid known, or no thread state calibrates (the main
 *     thread gone): 0, not known.
 *
 * A live process read by PID gets its own ids (what threading.get_native_id()
 * returns in it: NSpid's last for a process in a PID namespace of its own),
 * as the native_thread_id of 3.11+ is; a core's or a debugger's threads
 * keep the ids the core or the debugger names them by.
 */
#ifndef PYFRAMES_PTHREAD_TID_H
#define PYFRAMES_PTHREAD_TID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "containers.h"

/* the bytes of a struct pthread searched for the pid (pystack's bound) */
#define PYF__PTHREAD_SCAN 2048u
/* snapshots that look for the main thread's struct, at most, per target */
#define PYF__PTHREAD_TRIES 4u

typedef struct pyf__os_threads {
    bool ready;           /* set up from the target's reader */
    int64_t pid;          /* the process's own id of itself; 0 unknown */
    int proc_pid;         /* a live process's /proc entry; 0 none */
    bool foreign;         /* its ids are of a PID namespace below ours */
    bool scanned;         /* its task list read in this snapshot */
    enum { PYF__TID_UNCALIBRATED, PYF__TID_CALIBRATED, PYF__TID_NONE } calib;
    uint32_t tid_at;      /* where struct pthread holds the id */
    uint32_t tries;
    pyf__addrmap tids;    /* the process's thread ids (value 1) */
    pyf__addrmap by_tls;  /* a core's TLS bases -> thread ids */
} pyf__os_threads;

/* The one offset of buf (len bytes of a main thread's struct pthread) whose
 * aligned 32-bit word is pid; -1 when none is, or more than one. */
int64_t pyf__pthread_tid_offset(const uint8_t *buf, size_t len, uint32_t pid);

/* Before a snapshot's thread lists of a version without threads_main
 * (the task list may be read again once): until the offset is known, the
 * thread states of the list at threads_head (the main interpreter's) are
 * tried for it (3.8-3.10). */
void pyf__os_threads_begin(pyf_target *t, uint64_t threads_head);
/* The OS id of the thread whose pthread handle is handle; 0 unknown. */
uint64_t pyf__os_tid(pyf_target *t, uint64_t handle);
/* Whether tid is the process's main thread (its id is the pid). */
bool pyf__os_tid_is_main(const pyf_target *t, uint64_t tid);
/* A core's threads: their ids, TLS bases (x86-64) and the pid. */
int pyf__os_threads_core(pyf_target *t, const pyf_core_thread *threads, uint32_t n,
                         uint32_t machine, int64_t pid);
void pyf__os_threads_free(pyf__os_threads *o);

#endif /* PYFRAMES_PTHREAD_TID_H */
