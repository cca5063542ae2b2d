/*
 * internal.h - declarations shared between the library's source files.
 * Nothing here is exported; cross-file names start with pyf__.
 */
#ifndef PYFRAMES_INTERNAL_H
#define PYFRAMES_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pyframes.h"

#define PYF__ERRBUF 512

/* ==== errors (error.c) =================================================== */

/* Format a message into buf (always NUL-terminated, truncated to fit). */
void pyf__fmt(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ==== the PID reader (reader_pid.c) ======================================
 * A pyf_reader over a live local process: process_vm_readv (readv batches
 * ranges in one system call), falling back to pread on /proc/PID/mem.
 * errno mapping: EFAULT/EIO -> PYF_EFAULT, EPERM/EACCES -> PYF_EPERM,
 * ESRCH -> PYF_ENOPROC.  create fills *out (arg is heap-owned); destroy frees
 * it. */
int pyf__pid_reader_create(int pid, pyf_reader *out, char *err, size_t errlen);
void pyf__pid_reader_destroy(pyf_reader *r);

/* ==== runtime discovery for a PID (runtime_find.c, elf.c) ================
 * /proc/PID/maps, then the .PyRuntime section of each mapped file whose
 * basename contains "python" (handling " (deleted)"), then a scan of
 * writable mappings for the cookie.  Every candidate is confirmed with
 * pyf_probe_runtime. */
int pyf__pid_find_runtime(int pid, const pyf_reader *r, uint64_t *found,
                          char *err, size_t errlen);

/* ==== _Py_DebugOffsets (offsets.c) ======================================== */

#define PYF__COOKIE "xdebugpy"
#define PYF__RAW_OFFSETS_MAX 1024 /* bytes read at _PyRuntime for decoding */

/* Normalised view: every field the walker uses, for every supported
 * version.  Fields a version lacks are set to PYF__ABSENT. */
#define PYF__ABSENT UINT64_MAX

typedef struct pyf__offsets {
    uint64_t hexversion;
    uint32_t major, minor, micro, level, serial;
    bool free_threaded;

    struct { uint64_t size, finalizing, interpreters_head; } runtime;
    struct {
        uint64_t size, id, next, threads_head, threads_main, gc,
            code_object_generation, tlbc_generation;
    } interp;
    struct {
        uint64_t size, prev, next, interp, current_frame, base_frame,
            last_profiled_frame, last_profiled_frame_seq, thread_id,
            native_thread_id, datastack_chunk, status, holds_gil;
    } tstate;
    struct {
        uint64_t size, previous, executable, instr_ptr, localsplus, owner,
            stackpointer, tlbc_index;
    } frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno,
            co_code_adaptive, co_tlbc;
    } code;
    struct { uint64_t size, ob_type; } pyobject;
    struct { uint64_t size, tp_name, tp_flags; } type;
    struct { uint64_t size, ob_size, ob_sval; } bytes;
    struct {
        uint64_t size, state, length, asciiobject_size,
            compactunicodeobject_size;
    } unicode;
    struct { uint64_t size, gi_name, gi_iframe, gi_frame_state; } gen;

    /* Semantics that differ by version, decided once at decode. */
    uint64_t tag_mask;        /* ~0 (3.13) or ~3 (3.14+) */
    int owner_thread;         /* FRAME_OWNED_BY_THREAD (0) */
    int owner_generator;      /* 1 */
    int owner_frame_object;   /* 2 */
    int owner_interpreter;    /* 3.14/3.15: 3; 3.13: -1 (none) */
    int owner_cstack;         /* 3.13: 3; 3.14: 4; 3.15: -1 (none) */
} pyf__offsets;

/* Decode raw bytes read at _PyRuntime (len >= what the version needs) into
 * *off.  Returns PYF_OK, PYF_ENOTPY (bad cookie), PYF_EVERSION (unsupported
 * version, named in err) or PYF_EOFFSETS (a size/offset failed its bounds,
 * named in err). */
int pyf__offsets_decode(const uint8_t *raw, size_t len, pyf__offsets *off,
                        char *err, size_t errlen);

#endif /* PYFRAMES_INTERNAL_H */
