/*
 * internal.h - declarations shared between the library's source files: the
 * one header they (and the white-box tests) include.  It holds what every
 * part needs (private result codes, the frozen public struct sizes, struct
 * copying, errors) and includes one header per subsystem, below.  Nothing
 * here is exported; cross-file names start with pyf__.
 */
#ifndef PYFRAMES_INTERNAL_H
#define PYFRAMES_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PYF_STATIC_API /* the library implements the static API too */
#include "pyframes.h"

#define PYF__ERRBUF 512

/* Private result of the decoders: "the prefix read so far is too short,
 * read more".  Never returned through the public API. */
#define PYF__EMORE (-1000)
/* Private result of the code decoder: a running process freed or replaced
 * the code object while it was read (code.c). */
#define PYF__ESTALE (-1001)

_Static_assert(sizeof(pyf_frame) == PYF_FRAME_SIZE, "pyf_frame is frozen");
_Static_assert(sizeof(pyf_record) == PYF_RECORD_SIZE, "pyf_record is frozen");
_Static_assert(sizeof(pyf_frame_info) == PYF_FRAME_INFO_SIZE, "pyf_frame_info is frozen");
/* the one view of a frame, at 0.5's offsets in both structs that hold it */
_Static_assert(offsetof(pyf_frame, info) == 16 && offsetof(pyf_record, info) == 16 &&
                   offsetof(pyf_frame, code_addr) == 8 && offsetof(pyf_record, instr) == 8,
               "pyf_frame_info's offsets are frozen");
_Static_assert(sizeof(pyf_thread) == PYF_THREAD_SIZE, "pyf_thread is frozen");
_Static_assert(sizeof(pyf_snapshot_copy) == PYF_SNAPSHOT_COPY_SIZE,
               "pyf_snapshot_copy is frozen");
_Static_assert(sizeof(pyf_interp) == PYF_INTERP_SIZE, "pyf_interp is frozen");
_Static_assert(sizeof(pyf_thread_facts) == PYF_THREAD_FACTS_SIZE, "pyf_thread_facts is frozen");
_Static_assert(sizeof(pyf_python_info) == 40, "pyf_python_info is frozen");
_Static_assert(sizeof(pyf_stats) == 176, "pyf_stats is frozen");
_Static_assert(sizeof(pyf_failure) == PYF_FAILURE_SIZE_V0, "pyf_failure");
_Static_assert(PYF_READER_SIZE_V0 == offsetof(pyf_reader, arg) + sizeof(void *),
               "first published pyf_reader");
_Static_assert(PYF_OPTIONS_SIZE_V0 == sizeof(pyf_options), "pyf_options");
_Static_assert(PYF_SNAPSHOT_REQUEST_SIZE_V0 == sizeof(pyf_snapshot_request),
               "pyf_snapshot_request");
_Static_assert(sizeof(pyf_task) == PYF_TASK_SIZE, "pyf_task is frozen");
_Static_assert(PYF_TASK_LIST_SIZE_V0 == sizeof(pyf_task_list), "pyf_task_list");
_Static_assert(PYF_LOCATE_REQUEST_SIZE_V0 ==
                   offsetof(pyf_locate_request, scan_budget) + sizeof(uint64_t),
               "first published pyf_locate_request");
_Static_assert(PYF_RUNTIME_LOCATION_SIZE_V0 == sizeof(pyf_runtime_location),
               "pyf_runtime_location");

/* ==== input structs (abi.c) ==============================================
 * Copy the caller's struct at in (whose first field is its struct_size)
 * into local (local_size = the library's sizeof), zero-filling what an
 * older caller lacks; see "ABI policy" in pyframes.h.  PYF_EINVAL below
 * v0_size, PYF_ENOTSUP for a newer struct with non-zero unknown bytes. */
int pyf__struct_in(const void *in, size_t v0_size, void *local,
                   size_t local_size, const char *name, char *err,
                   size_t errlen);
/* Copy the library's result (local, whose first field is struct_size) into
 * the caller's struct out, whose struct_size says how much it holds;
 * PYF_EINVAL below v0_size. */
int pyf__struct_out(void *out, size_t v0_size, void *local, size_t local_size);
/* The start of a call that reports through a failure out-parameter: f (the
 * call's own) cleared, and whether the caller's is usable: NULL (no detail
 * wanted) or a struct_size of at least PYF_FAILURE_SIZE_V0. */
bool pyf__failure_begin(const pyf_failure *caller, pyf_failure *f);
/* Set f->code = rc (an empty detail on success, the code's message when
 * none was written) and hand f to the caller's struct, when given, as far
 * as its struct_size goes.  Returns rc. */
int pyf__failure_out(pyf_failure *caller, pyf_failure *f, int rc);

/* ==== errors (error.c) =================================================== */

/* Format a message into buf (always NUL-terminated, truncated to fit). */
void pyf__fmt(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A caller's reader, normalised (pyf__struct_in) and checked. */
int pyf__reader_in(const pyf_reader *in, pyf_reader *out, char *err,
                   size_t errlen);

/* ==== the subsystems, in the order their declarations need ============== */
#include "containers.h"
#include "linetable.h"
#include "offsets.h"
#include "process.h"
#include "core.h"
#include "reads.h"
#include "objhead.h"
#include "code.h"
#include "table.h"
#include "walk.h"
#include "cache.h"
#include "tasks.h"
#include "thread_facts.h"
#include "target.h"
#include "value_layout.h"
#include "values.h"

#endif /* PYFRAMES_INTERNAL_H */
