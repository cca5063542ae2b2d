/*
 * process.h - the process a PID names: its reader and where its runtime and
 * asyncio tables are (reader_pid.c, runtime_find.c, elf.c).
 */
#ifndef PYFRAMES_PROCESS_H
#define PYFRAMES_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"

/* ==== the PID reader (reader_pid.c) ======================================
 * A pyf_reader over a live local process: process_vm_readv (readv batches
 * ranges in one system call), falling back to pread on /proc/PID/mem.
 * errno mapping: EFAULT/EIO -> PYF_EFAULT, EPERM/EACCES -> PYF_EPERM,
 * ESRCH -> PYF_ENOPROC.  create fills *out (arg is heap-owned); destroy frees
 * it. */
int pyf__pid_reader_create(int pid, pyf_reader *out, char *err, size_t errlen);
void pyf__pid_reader_destroy(pyf_reader *r);
/* Whether r is the PID reader and every thread of its process is stopped
 * (a job-control stop such as SIGSTOP, or a tracer's such as a debugger's)
 * with *token saying how often each was switched out: two equal tokens
 * say no thread ran between them, so what was read between them is the
 * memory of one moment.  False for every other reader; a process found
 * running is taken to run for a millisecond more without looking. */
bool pyf__pid_reader_frozen(const pyf_reader *r, uint64_t *token);
/* The start of a /proc file (a status file) as a string of at most len - 1
 * bytes; false when it cannot be read. */
bool pyf__proc_text(const char *path, char *buf, size_t len);

/* ==== runtime discovery for a PID (runtime_find.c, elf.c) ================
 * /proc/PID/maps, then the .PyRuntime section of each mapped file whose
 * basename contains "python" (handling " (deleted)"), then a scan of
 * writable mappings for the cookie.  Every candidate is confirmed with
 * pyf_runtime_probe. */
int pyf__pid_find_runtime(int pid, const pyf_reader *r, uint64_t *found,
                          char *err, size_t errlen);
/* The .AsyncioDebug section of the first mapped python file (basename
 * containing "python", which includes _asyncio.cpython-*.so) that has
 * one.  PYF_ENOTSUP when none has. */
int pyf__pid_find_asyncio(int pid, uint64_t *found, char *err, size_t errlen);

#endif /* PYFRAMES_PROCESS_H */
