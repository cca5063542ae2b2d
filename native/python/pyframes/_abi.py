"""The ctypes mirror of native/include/pyframes.h, and nothing else.

Structures mirror the header field by field; _PROTOTYPES gives every
exported function its restype and argtypes (applied by _loader.load()).
:class:`Layout` derives from a mirrored structure the struct-module view of
it (format, value index and byte offset of each field) that the fast paths
unpack raw bytes with: no layout is written down a second time.
"""

import ctypes
import operator
import struct

__all__ = [
    "PYF_VERSION_MAJOR",
    "PYF_VERSION_MINOR",
    "PYF_VERSION_PATCH",
    "pyf_iovec",
    "pyf_reader",
    "pyf_options",
    "pyf_python_info",
    "pyf_stats",
    "pyf_frame_info",
    "pyf_frame",
    "pyf_thread",
    "pyf_interp",
    "pyf_snapshot",
    "pyf_snapshot_request",
    "pyf_record",
    "pyf_frame_key",
    "pyf_frame_table",
    "pyf_task",
    "pyf_task_list",
    "pyf_value",
    "pyf_local",
    "pyf_values_request",
    "pyf_values",
    "pyf_core_request",
    "pyf_core_info",
    "pyf_core_thread",
    "pyf_core_file",
    "pyf_native_frame",
    "STRUCTURES",
    "Layout",
    "decode",
]

# The library version this package was written against.
PYF_VERSION_MAJOR = 0
PYF_VERSION_MINOR = 6
PYF_VERSION_PATCH = 0

PYF_DEFAULT_MAX_DEPTH = 10000
PYF_DEFAULT_MAX_THREADS = 4096
PYF_MAX_INTERPRETERS = 256  # a fixed cap, not an option
PYF_DEFAULT_MAX_INTERPRETERS = PYF_MAX_INTERPRETERS  # deprecated name
PYF_DEFAULT_MAX_STRING = 4096

PYF_FRAME_NAME_TRUNCATED = 0x01
PYF_FRAME_NO_LOCATION = 0x02
PYF_FRAME_CODE_UNREADABLE = 0x04
PYF_FRAME_GENERATOR = 0x08
PYF_FRAME_ENTRY_FROM_C = 0x10
PYF_FRAME_COROUTINE = 0x20
PYF_FRAME_ASYNC_GENERATOR = 0x40

PYF_THREAD_COMPLETE = 0x01
PYF_THREAD_HOLDS_GIL = 0x02
PYF_THREAD_GIL_KNOWN = 0x04
PYF_THREAD_MAIN = 0x08
PYF_THREAD_SAME_FRAMES = 0x10

PYF_SNAP_ONE_THREAD = 0x01
PYF_SNAP_TASKS = 0x02
PYF_SNAP_ENTRIES = 0x04
PYF_SNAP_THREAD_FACTS = 0x08
PYF_SNAP_GIL = 0x10

# pyf_thread_facts.flags
PYF_FACT_NAME = 0x0001
PYF_FACT_NAME_UNREADABLE = 0x0002
PYF_FACT_GIL_KNOWN = 0x0004
PYF_FACT_GIL_HOLDS = 0x0008
PYF_FACT_GIL_HOLDER = 0x0010
PYF_FACT_GIL_REQUEST_KNOWN = 0x0020
PYF_FACT_GIL_REQUESTED = 0x0040
PYF_FACT_NO_GIL = 0x0080
PYF_FACT_EXCEPTION = 0x0100
PYF_FACT_EXC_HANDLED = 0x0200
PYF_FACT_EXC_UNREADABLE = 0x0400
PYF_FACT_MESSAGE_TRUNCATED = 0x0800
PYF_FACT_MESSAGE_PARTIAL = 0x1000
PYF_FACT_MESSAGE_MAX = 200

PYF_TASK_PENDING = 0
PYF_TASK_CANCELLED = 1
PYF_TASK_FINISHED = 2
PYF_TASK_STATE_UNKNOWN = 3
PYF_TASK_RUNNING = 0x01
PYF_TASK_THREAD_GONE = 0x02
PYF_TASK_NAME_NOT_STR = 0x04

PYF_CACHE_OFF = 0
PYF_CACHE_ON = 1
PYF_CACHE_READ_ONLY = 2

# pyf_reader.reads
PYF_READS_STOPPED = 0
PYF_READS_RUNNING = 1
PYF_READS_CORE = 2

# core files
PYF_CORE_ELF = 1
PYF_CORE_MINIDUMP = 2
PYF_CORE_PLAIN = 0
PYF_CORE_ZSTD = 1
PYF_CORE_XZ = 2
PYF_CORE_LZ4 = 3
PYF_CORE_GZIP = 4
PYF_CORE_SIGNAL = 0x01
PYF_CORE_SIGINFO = 0x02
PYF_CORE_CUT_SHORT = 0x04
PYF_CORE_NOTES_PARTIAL = 0x08
PYF_CORE_STREAM_ENDED = 0x10
PYF_CORE_THREAD_SIGNALLED = 0x01
PYF_CORE_THREAD_REGS = 0x02
PYF_CORE_THREAD_SYSCALL = 0x04
PYF_CORE_REGS_MAX = 34
PYF_CORE_THREAD_SIZE = 312
PYF_CORE_FILE_USED = 0
PYF_CORE_FILE_UNCHECKED = 1
PYF_CORE_FILE_MISSING = 2
PYF_CORE_FILE_MISMATCH = 3
PYF_CORE_FILE_UNREADABLE = 4
PYF_CORE_FILE_EXECUTABLE = 0x1
PYF_CORE_FILE_SIZE = 104
PYF_NATIVE_ACTIVATION = 0x1
PYF_NATIVE_MAX_FRAMES = 256
PYF_NATIVE_FRAME_SIZE = 48
PYF_OS_THREAD_SIZE = 16

PYF_COPY_ARRAYS = 0x01
PYF_COPY_FREED = 0x02
PYF_COPY_SAME_ARRAYS = 0x04
PYF_COPY_KEPT = 0x08
PYF_COPY_SAME_FACTS = 0x10
PYF_SNAPSHOT_COPY_SIZE = 168

# pyf_sample_run (static API, like pyf_snapshot_take_copy)
PYF_SAMPLE_GIL = 0x01
PYF_SAMPLE_TIMES = 0x02
PYF_SAMPLE_END_DONE = 0
PYF_SAMPLE_END_FULL = 1
PYF_SAMPLE_END_GONE = 2
PYF_SAMPLE_END_SIGNAL = 3
PYF_SAMPLE_MAX_TABLES = 4
PYF_SAMPLE_CODES = 16
PYF_SAMPLE_BATCH_SIZE = 288

# pyf_value.kind
PYF_VALUE_UNREADABLE = 0
PYF_VALUE_OTHER = 1
PYF_VALUE_NONE = 2
PYF_VALUE_BOOL = 3
PYF_VALUE_INT = 4
PYF_VALUE_FLOAT = 5
PYF_VALUE_COMPLEX = 6
PYF_VALUE_STR = 7
PYF_VALUE_BYTES = 8
PYF_VALUE_BYTEARRAY = 9
PYF_VALUE_TUPLE = 10
PYF_VALUE_LIST = 11
PYF_VALUE_DICT = 12
PYF_VALUE_SET = 13
PYF_VALUE_FROZENSET = 14
PYF_VALUE_RANGE = 15
PYF_VALUE_TYPE = 16
PYF_VALUE_FUNCTION = 17
PYF_VALUE_BUILTIN = 18
PYF_VALUE_METHOD = 19
PYF_VALUE_MODULE = 20
PYF_VALUE_CELL = 21
PYF_VALUE_CODE = 22
PYF_VALUE_GENERATOR = 23
PYF_VALUE_COROUTINE = 24
PYF_VALUE_ASYNC_GENERATOR = 25
PYF_VALUE_EXCEPTION = 26
PYF_VALUE_ELLIPSIS = 27
PYF_VALUE_NOTIMPLEMENTED = 28
# pyf_value.flags
PYF_VALUE_TRUNCATED = 0x01
PYF_VALUE_CYCLE = 0x02
PYF_VALUE_TOO_DEEP = 0x04
PYF_VALUE_BUDGET = 0x08
PYF_VALUE_SIZE = 80
# pyf_local.kind and flags
PYF_LOCAL_ARG = 1
PYF_LOCAL_LOCAL = 2
PYF_LOCAL_CELL = 3
PYF_LOCAL_FREE = 4
PYF_LOCAL_STACK = 5
PYF_LOCAL_VARARGS = 0x01
PYF_LOCAL_VARKEYWORDS = 0x02
PYF_LOCAL_KWONLY = 0x04
PYF_LOCAL_UNBOUND = 0x08
PYF_LOCAL_HIDDEN = 0x10
PYF_LOCAL_NO_STACK = 0x20
PYF_LOCAL_UNSAVED = 0x40
PYF_LOCAL_AWAITED = 0x80
PYF_NO_VALUE = 0xFFFFFFFF
PYF_LOCAL_SIZE = 24
# pyf_values_request
PYF_VALUES_ATTRS = 0x01
PYF_VALUES_STACK = 0x02
PYF_VALUES_STACK_ONLY = 0x04
PYF_VALUES_STACK_UNSAVED = 0x08
PYF_DEFAULT_VALUE_STRING = 200
PYF_DEFAULT_VALUE_ITEMS = 100
PYF_DEFAULT_VALUE_DEPTH = 6
PYF_DEFAULT_VALUE_OBJECTS = 10000
PYF_DEFAULT_VALUE_BYTES = 4 << 20
PYF_VALUES_REQUEST_SIZE_V0 = 32

c_int = ctypes.c_int
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_uint32 = ctypes.c_uint32
c_uint64 = ctypes.c_uint64
c_size_t = ctypes.c_size_t
c_void_p = ctypes.c_void_p
c_char_p = ctypes.c_char_p
POINTER = ctypes.POINTER

# ---- Structures ----------------------------------------------------------


class pyf_failure(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("code", c_int32),
        ("addr", c_uint64),
        ("len", c_uint64),
        ("what", ctypes.c_char * 64),
        ("reader_message", ctypes.c_char * 160),
        ("detail", ctypes.c_char * 512),
    ]


class pyf_iovec(ctypes.Structure):
    _fields_ = [
        ("addr", c_uint64),
        ("dst", c_void_p),
        ("len", c_size_t),
    ]


# int (*)(void *arg, uint64_t addr, void *dst, size_t len)
pyf_read_fn = ctypes.CFUNCTYPE(c_int, c_void_p, c_uint64, c_void_p, c_size_t)
# int (*)(void *arg, const pyf_iovec *iov, size_t n, int *status)
pyf_readv_fn = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(pyf_iovec), c_size_t,
                                POINTER(c_int))
# int (*)(void *arg, uint64_t addr, const void *src, size_t len)
pyf_write_fn = ctypes.CFUNCTYPE(c_int, c_void_p, c_uint64, c_void_p, c_size_t)
# const char *(*)(void *arg); c_void_p so that the returned buffer stays ours
pyf_message_fn = ctypes.CFUNCTYPE(c_void_p, c_void_p)


class pyf_reader(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("read", pyf_read_fn),
        ("readv", pyf_readv_fn),
        ("write", pyf_write_fn),
        ("arg", c_void_p),
        ("message", pyf_message_fn),
        ("reads", c_uint32),
    ]


class pyf_options(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("max_depth", c_uint32),
        ("max_threads", c_uint32),
        ("max_string", c_uint32),
    ]


class pyf_python_info(ctypes.Structure):
    _fields_ = [
        ("runtime_addr", c_uint64),
        ("hexversion", c_uint64),
        ("major", c_uint32),
        ("minor", c_uint32),
        ("micro", c_uint32),
        ("level", c_uint32),
        ("serial", c_uint32),
        ("free_threaded", c_uint32),
    ]


class pyf_stats(ctypes.Structure):
    _fields_ = [
        ("read_calls", c_uint64),
        ("read_ranges", c_uint64),
        ("bytes_read", c_uint64),
        ("read_failures", c_uint64),
        ("write_calls", c_uint64),
        ("code_cache_hits", c_uint64),
        ("code_cache_misses", c_uint64),
        ("code_cache_invalidations", c_uint64),
        ("snapshots", c_uint64),
        ("frames", c_uint64),
        ("chunk_frames", c_uint64),
        ("direct_frames", c_uint64),
        ("frame_cache_hits", c_uint64),
        ("frame_cache_partial_hits", c_uint64),
        ("frame_cache_misses", c_uint64),
        ("frames_from_cache", c_uint64),
        ("frames_from_memory", c_uint64),
        ("anchor_writes", c_uint64),
        ("retried_walks", c_uint64),
        ("code_changed", c_uint64),
        ("same_reads", c_uint64),
        ("top_replaced", c_uint64),
    ]


class pyf_frame_info(ctypes.Structure):
    _fields_ = [
        ("function", c_char_p),
        ("filename", c_char_p),
        ("line", c_int32),
        ("end_line", c_int32),
        ("column", c_int32),
        ("end_column", c_int32),
        ("flags", c_uint32),
        ("reserved", c_uint32),
    ]


class pyf_frame(ctypes.Structure):
    _fields_ = [
        ("frame_addr", c_uint64),
        ("code_addr", c_uint64),
        ("info", pyf_frame_info),
    ]


class pyf_thread(ctypes.Structure):
    _fields_ = [
        ("tstate_addr", c_uint64),
        ("thread_id", c_uint64),
        ("native_thread_id", c_uint64),
        ("interp_index", c_uint32),
        ("flags", c_uint32),
        ("first_frame", c_uint32),
        ("nframes", c_uint32),
        ("error", c_int32),
        ("more_frames", c_uint32),
        ("failure", POINTER(pyf_failure)),
    ]


class pyf_thread_facts(ctypes.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("exc_type", c_char_p),
        ("exc_message", c_char_p),
        ("exc_file", c_char_p),
        ("exc_line", c_int32),
        ("flags", c_uint32),
        ("exc_addr", c_uint64),
        ("exc_value", c_uint32),
        ("reserved32", c_uint32),
        ("reserved", c_uint64),
    ]


PYF_THREAD_FACTS_SIZE = 64


class pyf_interp(ctypes.Structure):
    _fields_ = [
        ("addr", c_uint64),
        ("id", c_int64),
        ("first_thread", c_uint32),
        ("nthreads", c_uint32),
    ]


class pyf_snapshot(ctypes.Structure):
    _fields_ = [
        ("ninterps", c_uint32),
        ("nthreads", c_uint32),
        ("nframes", c_uint32),
        ("reserved", c_uint32),
        ("interps", POINTER(pyf_interp)),
        ("threads", POINTER(pyf_thread)),
        ("frames", POINTER(pyf_frame)),
        ("interp_size", c_uint32),
        ("thread_size", c_uint32),
        ("frame_size", c_uint32),
        ("reserved2", c_uint32),
    ]


class pyf_record(ctypes.Structure):
    _fields_ = [
        ("code_addr", c_uint64),
        ("instr", c_int64),
        ("info", pyf_frame_info),
    ]


class pyf_frame_key(ctypes.Structure):
    _fields_ = [
        ("frame_addr", c_uint64),
        ("record", c_uint32),
        ("reserved", c_uint32),
    ]


class pyf_frame_table(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("nframes", c_uint32),
        ("table_id", c_uint64),
        ("records", POINTER(pyf_record)),
        ("keys", POINTER(pyf_frame_key)),
        ("frame_keys", POINTER(c_uint32)),
        ("nrecords", c_uint32),
        ("nkeys", c_uint32),
        ("record_size", c_uint32),
        ("key_size", c_uint32),
    ]


PYF_MAP_READ = 0x1
PYF_MAP_WRITE = 0x2
PYF_MAP_EXEC = 0x4

PYF_LOCATE_SYMBOL = 0x1
PYF_LOCATE_SECTION = 0x2
PYF_LOCATE_SCAN = 0x4


class pyf_os_thread(ctypes.Structure):
    _fields_ = [
        ("tid", c_uint64),
        ("tls_base", c_uint64),
    ]


class pyf_mapping(ctypes.Structure):
    _fields_ = [
        ("start", c_uint64),
        ("end", c_uint64),
        ("file_offset", c_uint64),
        ("flags", c_uint32),
        ("reserved", c_uint32),
        ("path", c_char_p),
        ("open_path", c_char_p),
    ]


class pyf_locate_request(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("methods", c_uint32),
        ("symbol_addr", c_uint64),
        ("maps", POINTER(pyf_mapping)),
        ("nmaps", c_size_t),
        ("scan_budget", c_uint64),
        ("target_name", ctypes.c_char_p),
    ]


class pyf_core_request(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("path", c_char_p),
        ("executable", c_char_p),
        ("sysroot", c_char_p),
        ("temp_dir", c_char_p),
        ("max_size", c_uint64),
    ]


class pyf_core_info(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("format", c_uint32),
        ("compression", c_uint32),
        ("flags", c_uint32),
        ("machine", c_uint32),
        ("nthreads", c_uint32),
        ("nmappings", c_uint32),
        ("nfiles", c_uint32),
        ("pid", c_int64),
        ("signo", c_int32),
        ("code", c_int32),
        ("signal_addr", c_uint64),
        ("signal_tid", c_uint64),
        ("size", c_uint64),
        ("missing_bytes", c_uint64),
        ("executable", ctypes.c_char * 256),
        ("command", ctypes.c_char * 256),
        ("problem", ctypes.c_char * 256),
    ]


class pyf_core_thread(ctypes.Structure):
    _fields_ = [
        ("tid", c_uint64),
        ("signo", c_int32),
        ("flags", c_uint32),
        ("nregs", c_uint32),
        ("reserved", c_uint32),
        ("regs", c_uint64 * PYF_CORE_REGS_MAX),
        ("reserved2", c_uint64 * 2),
    ]


class pyf_core_file(ctypes.Structure):
    _fields_ = [
        ("path", c_char_p),
        ("open_path", c_char_p),
        ("start", c_uint64),
        ("status", c_uint32),
        ("flags", c_uint32),
        ("build_id", ctypes.c_uint8 * 32),
        ("file_build_id", ctypes.c_uint8 * 32),
        ("build_id_size", c_uint32),
        ("file_build_id_size", c_uint32),
    ]


class pyf_native_frame(ctypes.Structure):
    _fields_ = [
        ("pc", c_uint64),
        ("sp", c_uint64),
        ("offset", c_uint64),
        ("function", c_char_p),
        ("module", c_char_p),
        ("flags", c_uint32),
        ("reserved", c_uint32),
    ]


class pyf_runtime_location(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("method", c_uint32),
        ("addr", c_uint64),
        ("python", pyf_python_info),
        ("how", ctypes.c_char * 256),
    ]


class pyf_snapshot_request(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("native_tid", c_uint64),
        ("max_depth", c_uint32),
        ("keep_frames", c_uint32),
    ]


class pyf_task(ctypes.Structure):
    _fields_ = [
        ("task_addr", c_uint64),
        ("coro_addr", c_uint64),
        ("tstate_addr", c_uint64),
        ("thread_id", c_uint64),
        ("native_thread_id", c_uint64),
        ("interp_id", c_int64),
        ("name", c_char_p),
        ("state", c_uint32),
        ("flags", c_uint32),
        ("first_frame", c_uint32),
        ("nframes", c_uint32),
        ("first_awaiter", c_uint32),
        ("nawaiters", c_uint32),
        ("error", c_int32),
        ("reserved", c_uint32),
        ("failure", POINTER(pyf_failure)),
    ]


class pyf_task_list(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("status", c_int32),
        ("tasks", POINTER(pyf_task)),
        ("awaited_by", POINTER(c_uint64)),
        ("ntasks", c_uint32),
        ("nawaited_by", c_uint32),
        ("task_size", c_uint32),
        ("list_error", c_int32),
        ("failure", POINTER(pyf_failure)),
    ]


class pyf_snapshot_copy(ctypes.Structure):
    _fields_ = [
        ("cap", c_uint32),
        ("flags", c_uint32),
        ("request", POINTER(pyf_snapshot_request)),
        ("kept", c_uint64),
        ("out", POINTER(pyf_snapshot)),
        ("size", c_uint32),
        ("reserved", c_uint32),
        ("serial", c_uint64),
        ("same_as", c_uint64),
        ("snapshot", pyf_snapshot),
        ("table", pyf_frame_table),
    ]


class pyf_sample_stack(ctypes.Structure):
    _fields_ = [
        ("table_id", c_uint64),
        ("thread_id", c_uint64),
        ("native_thread_id", c_uint64),
        ("first_key", c_uint32),
        ("nkeys", c_uint32),
        ("count", c_uint32),
        ("reserved", c_uint32),
    ]


class pyf_sample_time(ctypes.Structure):
    _fields_ = [
        ("ns", c_uint64),
        ("stack", c_uint32),
        ("reserved", c_uint32),
    ]


class pyf_sample_batch(ctypes.Structure):
    _fields_ = [
        ("request", POINTER(pyf_snapshot_request)),
        ("flags", c_uint32),
        ("max_samples", c_uint32),
        ("until_ns", c_uint64),
        ("interval_ns", c_uint64),
        ("jitter_ppm", c_uint32),
        ("stacks_cap", c_uint32),
        ("keys_cap", c_uint32),
        ("times_cap", c_uint32),
        ("stacks", POINTER(pyf_sample_stack)),
        ("keys", POINTER(c_uint32)),
        ("times", POINTER(pyf_sample_time)),
        ("next_ns", c_uint64),
        ("rng", c_uint64),
        ("end", c_uint32),
        ("samples", c_uint32),
        ("failed", c_uint32),
        ("thread_errors", c_uint32),
        ("nstacks", c_uint32),
        ("nkeys", c_uint32),
        ("ntimes", c_uint32),
        ("ntables", c_uint32),
        ("busy_ns", c_uint64),
        ("failed_by_code", c_uint32 * PYF_SAMPLE_CODES),
        ("thread_errors_by_code", c_uint32 * PYF_SAMPLE_CODES),
        ("tables", POINTER(pyf_snapshot) * PYF_SAMPLE_MAX_TABLES),
    ]


class pyf_value(ctypes.Structure):
    _fields_ = [
        ("addr", c_uint64),
        ("type_name", c_char_p),
        ("data", c_void_p),  # const char *: bytes of data_size (NULs inside)
        ("data_size", c_uint64),
        ("length", c_uint64),
        ("real", ctypes.c_double),
        ("imag", ctypes.c_double),
        ("number", c_int64),
        ("kind", c_uint32),
        ("flags", c_uint32),
        ("first_child", c_uint32),
        ("nchildren", c_uint32),
    ]


class pyf_local(ctypes.Structure):
    _fields_ = [
        ("name", c_char_p),
        ("kind", c_uint32),
        ("flags", c_uint32),
        ("value", c_uint32),
        ("reserved", c_uint32),
    ]


class pyf_values_request(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("max_string", c_uint32),
        ("max_items", c_uint32),
        ("max_depth", c_uint32),
        ("max_objects", c_uint32),
        ("max_bytes", c_uint64),
    ]


class pyf_values(ctypes.Structure):
    _fields_ = [
        ("nlocals", c_uint32),
        ("nvalues", c_uint32),
        ("locals", POINTER(pyf_local)),
        ("values", POINTER(pyf_value)),
        ("local_size", c_uint32),
        ("value_size", c_uint32),
        ("code_addr", c_uint64),
        ("globals_addr", c_uint64),
        ("objects_read", c_uint64),
        ("bytes_read", c_uint64),
        ("opcode", c_uint32),
        ("oparg", c_uint32),
    ]


#: Every mirrored structure, by its C name (used by the layout test).
STRUCTURES = {
    cls.__name__: cls
    for cls in (pyf_failure, pyf_iovec, pyf_reader, pyf_options, pyf_python_info,
                pyf_stats, pyf_frame_info, pyf_frame, pyf_thread, pyf_interp, pyf_snapshot,
                pyf_record, pyf_frame_key, pyf_frame_table, pyf_snapshot_copy,
                pyf_sample_stack, pyf_sample_time, pyf_sample_batch,
                pyf_snapshot_request, pyf_mapping, pyf_locate_request,
                pyf_runtime_location, pyf_task, pyf_task_list, pyf_value, pyf_local,
                pyf_values_request, pyf_values, pyf_thread_facts, pyf_core_request,
                pyf_core_info, pyf_core_thread, pyf_core_file, pyf_native_frame, pyf_os_thread)
}

pyf_target_p = c_void_p
pyf_core_p = c_void_p

# name -> (restype, argtypes)
_PROTOTYPES = {
    "pyf_error_message": (c_char_p, [c_int]),
    "pyf_error_name": (c_char_p, [c_int]),
    "pyf_library_version": (c_int, []),
    "pyf_target_open": (c_int, [POINTER(pyf_reader), c_uint64,
                                POINTER(pyf_options), POINTER(pyf_target_p),
                                POINTER(pyf_failure)]),
    "pyf_target_open_pid": (c_int, [c_int, c_uint64, POINTER(pyf_options),
                                    POINTER(pyf_target_p), POINTER(pyf_failure)]),
    "pyf_target_close": (None, [pyf_target_p]),
    "pyf_target_failure": (c_int, [pyf_target_p, POINTER(pyf_failure)]),
    "pyf_target_python": (c_int, [pyf_target_p, POINTER(pyf_python_info)]),
    "pyf_target_flush": (None, [pyf_target_p]),
    "pyf_target_stats": (None, [pyf_target_p, POINTER(pyf_stats)]),
    "pyf_target_reset_stats": (None, [pyf_target_p]),
    "pyf_target_set_cache": (c_int, [pyf_target_p, c_uint32, POINTER(c_uint32)]),
    "pyf_snapshot_take": (c_int, [pyf_target_p, POINTER(pyf_snapshot_request),
                                  POINTER(POINTER(pyf_snapshot))]),
    "pyf_snapshot_free": (None, [POINTER(pyf_snapshot)]),
    "pyf_snapshot_table": (c_int, [POINTER(pyf_snapshot), POINTER(pyf_frame_table)]),
    "pyf_snapshot_take_copy": (c_int, [pyf_target_p, POINTER(pyf_snapshot_copy)]),
    "pyf_sample_run": (c_int, [pyf_target_p, POINTER(pyf_sample_batch)]),
    "pyf_runtime_probe": (c_int, [POINTER(pyf_reader), c_uint64,
                                  POINTER(pyf_python_info), POINTER(pyf_failure)]),
    "pyf_runtime_locate": (c_int, [POINTER(pyf_reader), POINTER(pyf_locate_request),
                                   POINTER(pyf_runtime_location), POINTER(pyf_failure)]),
    "pyf_runtime_find_in_range": (c_int, [POINTER(pyf_reader), c_uint64,
                                          c_uint64, POINTER(c_uint64), POINTER(pyf_failure)]),
    "pyf_elf_find_runtime": (c_int, [c_char_p, c_uint64,
                                        POINTER(c_uint64), POINTER(pyf_failure)]),
    "pyf_elf_find_asyncio": (c_int, [c_char_p, c_uint64, POINTER(c_uint64),
                                     POINTER(pyf_failure)]),
    "pyf_snapshot_tasks": (c_int, [POINTER(pyf_snapshot), POINTER(pyf_task_list)]),
    "pyf_target_set_asyncio": (c_int, [pyf_target_p, c_uint64]),
    "pyf_target_set_os_threads": (c_int, [pyf_target_p, c_int64,
                                          ctypes.POINTER(pyf_os_thread), c_uint32]),
    "pyf_snapshot_entries": (c_int, [POINTER(pyf_snapshot), POINTER(POINTER(c_uint64))]),
    "pyf_snapshot_thread_facts": (c_int, [POINTER(pyf_snapshot),
                                          POINTER(POINTER(pyf_thread_facts))]),
    "pyf_snapshot_fact_values": (c_int, [POINTER(pyf_snapshot), POINTER(POINTER(pyf_values))]),
    "pyf_frame_locals": (c_int, [pyf_target_p, c_uint64, POINTER(pyf_values_request),
                                 POINTER(POINTER(pyf_values))]),
    "pyf_value_read": (c_int, [pyf_target_p, c_uint64, POINTER(pyf_values_request),
                               POINTER(POINTER(pyf_values))]),
    "pyf_values_free": (None, [POINTER(pyf_values)]),
    "pyf_core_compressions": (c_uint32, []),
    "pyf_core_open": (c_int, [POINTER(pyf_core_request), POINTER(pyf_core_p),
                              POINTER(pyf_failure)]),
    "pyf_core_close": (None, [pyf_core_p]),
    "pyf_core_info_get": (c_int, [pyf_core_p, POINTER(pyf_core_info)]),
    "pyf_core_threads": (c_int, [pyf_core_p, POINTER(POINTER(pyf_core_thread)),
                                 POINTER(c_uint32)]),
    "pyf_core_mappings": (c_int, [pyf_core_p, POINTER(POINTER(pyf_mapping)),
                                  POINTER(c_uint32)]),
    "pyf_core_files": (c_int, [pyf_core_p, POINTER(POINTER(pyf_core_file)),
                               POINTER(c_uint32)]),
    "pyf_core_reader": (c_int, [pyf_core_p, POINTER(pyf_reader)]),
    "pyf_core_native_frames": (c_int, [pyf_core_p, c_uint64, POINTER(POINTER(pyf_native_frame)),
                                       POINTER(c_uint32), POINTER(pyf_failure)]),
    "pyf_target_open_core": (c_int, [pyf_core_p, c_uint64, POINTER(pyf_options),
                                     POINTER(pyf_target_p), POINTER(pyf_failure)]),
}


class Layout:
    """A mirrored structure as the struct module reads it: ``struct`` (a
    struct.Struct of exactly its size, padding included, whose values are
    its fields in order; a nested structure's fields in its place, named
    ``outer.inner``; a char array one bytes value, another array one value
    per element), ``index`` (field name -> position of its (first) value),
    ``offset`` (field name -> byte offset), ``names`` (the names in value
    order) and ``spans`` (nested structure name -> slice of its values)."""

    def __init__(self, cls):
        self.cls = cls
        self._fields = list(self._flatten(cls, "", 0))  # (name, offset, code)
        self.names = tuple(name for name, _, _ in self._fields)
        self._pos = {name: i for i, name in enumerate(self.names)}
        # a value's position: an array but a char one has one value per element
        self.index, count, at = {}, {}, 0
        for name, _, code in self._fields:
            self.index[name] = at
            count[name] = 1 if code.endswith("s") else int(code[:-1] or 1)
            at += count[name]
        self.offset = {name: offset for name, offset, _ in self._fields}
        self.spans = {}
        for name in self.names:
            # each structure it is nested in spans the values up to it
            i = self.index[name]
            outer = name.rpartition(".")[0]
            while outer:
                span = self.spans.get(outer)
                self.spans[outer] = slice(span.start if span else i, i + count[name])
                outer = outer.rpartition(".")[0]
        size = self.size = ctypes.sizeof(cls)
        fmt = self._format(cls, self._fields)
        if struct.calcsize(fmt) < size:
            fmt += "%dx" % (size - struct.calcsize(fmt))
        self.struct = struct.Struct(fmt)
        if self.struct.size != size:
            raise TypeError("%s: %d bytes, not %d" % (cls.__name__, self.struct.size, size))

    @staticmethod
    def _format(cls, fields):
        """The struct format of these (name, offset, code) fields, each
        padded to its offset."""
        fmt = "@"
        for name, offset, code in fields:
            at = struct.calcsize(fmt)
            if offset < at:
                raise TypeError("%s.%s overlaps the field before it" % (cls.__name__, name))
            fmt += ("%dx" % (offset - at) if offset > at else "") + code
            if struct.calcsize(fmt) != offset + struct.calcsize("@" + code):
                raise TypeError("%s.%s is not where C puts it" % (cls.__name__, name))
        return fmt

    @classmethod
    def _flatten(cls, ctype, prefix, base):
        """(dotted name, byte offset, struct code) of every field."""
        for name, field_type in ctype._fields_:
            offset = base + getattr(ctype, name).offset
            if issubclass(field_type, ctypes.Structure):
                yield from cls._flatten(field_type, prefix + name + ".", offset)
            else:
                yield prefix + name, offset, cls._code(field_type)

    @staticmethod
    def _code(ctype):
        """The struct code of a scalar, pointer or array field (its ctypes
        type code: the same native sizes)."""
        if issubclass(ctype, ctypes.Array):
            if ctype._type_ is ctypes.c_char:
                return "%ds" % ctype._length_
            return "%d%s" % (ctype._length_, Layout._code(ctype._type_))
        if issubclass(ctype, (ctypes._Pointer, ctypes._CFuncPtr)):
            return "P"
        code = ctype._type_
        return "P" if code in "zZP" else code

    def struct_upto(self, name):
        """A struct.Struct of the fields from the first to ``name``."""
        return struct.Struct(self._format(self.cls, self._fields[:self._pos[name] + 1]))

    def field_struct(self, name):
        """A struct.Struct of the one field ``name`` (at offset[name])."""
        return struct.Struct("@" + self._fields[self._pos[name]][2])

    def getter(self, *names):
        """operator.itemgetter of these fields' values (one name: the value)."""
        return operator.itemgetter(*(self.index[n] for n in names))


def decode(raw):
    """Text from a C string of the target (UTF-8 with U+0000 written as the
    bytes C0 80, which UTF-8 never uses; never raises)."""
    if raw is None:
        return ""
    if b"\xc0\x80" in raw:
        raw = raw.replace(b"\xc0\x80", b"\x00")
    return raw.decode("utf-8", "replace")
