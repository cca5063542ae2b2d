/*
 * api.h - the public API as the library sees it: pyframes.h with its static
 * part (the library implements it too), and the sizes and offsets of its
 * structs that are frozen.  Private headers and sources reach pyframes.h
 * through this header only, so that the static part is always declared.
 */
#ifndef PYFRAMES_API_H
#define PYFRAMES_API_H

#include <stddef.h>
#include <stdint.h>

#ifndef PYF_STATIC_API
#define PYF_STATIC_API /* the library implements the static API too */
#endif
#include "pyframes.h"

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

#endif /* PYFRAMES_API_H */
