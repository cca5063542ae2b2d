/*
 * pyframes.h - read the Python stacks of a CPython 3.8-3.15 process
 * from outside it.
 *
 * This is the only public header of libpyframes.  All exported symbols start
 * with "pyf_".  Every function returns 0 (PYF_OK) or a negative PYF_E* code
 * unless documented otherwise.
 *
 * Model:
 *   - A pyf_target is opened over a memory reader: either one supplied by the
 *     caller (a debugger: live, core file, remote), or the built-in reader of
 *     a live local PID (process_vm_readv, falling back to /proc/PID/mem), or
 *     the built-in reader of a core file (pyf_core_open, "Core files").
 *     Each reader says what it reads (pyf_reader.reads): the checks of a
 *     walk follow that.
 *   - _PyRuntime is found by the caller (a symbol) or by pyf_runtime_locate
 *     from what the caller knows of the address space; the built-in PID
 *     reader runs the same search over /proc/PID/maps.
 *   - The target validates its layout once, at open: the target's own
 *     _Py_DebugOffsets (3.13+), or a built-in table (3.11, 3.12).
 *   - pyf_snapshot_take() walks every interpreter, thread and frame chain and
 *     returns a pyf_snapshot (flat arrays) that stays valid until
 *     pyf_snapshot_free(), whatever happens to the target meanwhile.
 *   - Each frame is also an entry of the target's frame table
 *     (pyf_snapshot_table): distinct frame records, and keys (a frame
 *     address and its record) whose indexes stay the same from one
 *     snapshot to the next, so a caller converts each distinct frame once.
 *   - Failures are data (pyf_failure): what failed, and for a read what was
 *     read, where, how much and the reader's own words.
 *
 * Thread safety: a pyf_target is not thread-safe; use one per thread.
 * Nothing is written to the target except, with PYF_CACHE_ON on CPython
 * 3.15, the last_profiled_frame field of its thread states (see "The 3.15
 * frame cache").
 *
 * ABI policy (0.x):
 *   - Function names are pyf_<noun>_<verb>; only pyf_ symbols are exported.
 *     The soname carries the major version.  Until 1.0 a minor release may
 *     also rename or remove functions (0.2 renamed 0.1's to this scheme and
 *     replaced its error strings by pyf_failure; 0.6 gave the calls without a
 *     target their pyf_failure argument and put a frame's names and
 *     position under pyf_frame_info, offsets unchanged); a patch release only adds
 *     functions, appends fields to input structs and uses reserved fields.
 *   - Input structs (pyf_reader, pyf_options, pyf_snapshot_request,
 *     pyf_locate_request, pyf_core_request) start with struct_size =
 *     sizeof(the caller's struct).  The library accepts any
 *     size from the struct's first published layout (PYF_<STRUCT>_SIZE_V0)
 *     up: fields a smaller (older) struct lacks read as zero, their default.
 *     A larger (newer) struct is accepted when every byte past what the
 *     library knows is zero, refused with PYF_ENOTSUP otherwise; below the
 *     first layout it is PYF_EINVAL.
 *   - Output structs the caller sizes (pyf_failure, pyf_runtime_location,
 *     pyf_frame_table, pyf_task_list, pyf_core_info: struct_size set by the
 *     caller)
 *     receive only the bytes that size covers; below the first layout the
 *     call is PYF_EINVAL and writes nothing.
 *   - Output structs (pyf_python_info, pyf_stats, pyf_frame, pyf_thread,
 *     pyf_interp, pyf_snapshot, pyf_record, pyf_frame_key, pyf_task,
 *     pyf_thread_facts, pyf_core_thread, pyf_core_file, pyf_native_frame,
 *     and pyf_frame_info inside pyf_frame and pyf_record) and
 *     the structs of caller arrays (pyf_mapping, pyf_iovec) are frozen
 *     within 0.x: their size never changes; new facts go into reserved
 *     fields, which read as zero until then.
 *   - Arrays: every array the library hands out carries its stride, frozen
 *     within 0.x like its element: pyf_snapshot's interp_size, thread_size
 *     and frame_size (PYF_INTERP_SIZE, PYF_THREAD_SIZE, PYF_FRAME_SIZE),
 *     pyf_frame_table's record_size and key_size (PYF_RECORD_SIZE,
 *     PYF_FRAME_KEY_SIZE), pyf_task_list's task_size (PYF_TASK_SIZE);
 *     pyf_snapshot_thread_facts' array has PYF_THREAD_FACTS_SIZE;
 *     pyf_core_threads', pyf_core_files' and pyf_core_native_frames' have
 *     PYF_CORE_THREAD_SIZE, PYF_CORE_FILE_SIZE and PYF_NATIVE_FRAME_SIZE
 *     (pyf_core_mappings' are pyf_mapping, PYF_MAPPING_SIZE).
 *     Arrays the caller hands in are of structs frozen the same way, whose
 *     stride is their sizeof in this header: pyf_mapping (PYF_MAPPING_SIZE,
 *     pyf_locate_request.maps) and pyf_iovec (PYF_IOVEC_SIZE, the readv
 *     callback's ranges).
 *   - Failures: every call that can fail in more than one way and has no
 *     target to keep its failure takes a pyf_failure *failure as its last
 *     argument (pyf_target_open*, pyf_runtime_*, pyf_elf_*, pyf_core_open,
 *     pyf_core_native_frames); calls on a target leave theirs for
 *     pyf_target_failure.  failure may be NULL
 *     (no detail wanted); a struct_size below PYF_FAILURE_SIZE_V0 is
 *     PYF_EINVAL.  On success it gets code 0 and an empty detail.
 *   - NULL: a function returning int given NULL for its handle or for a
 *     pointer it needs returns PYF_EINVAL and changes nothing else (it still
 *     clears the out-pointers it was given: *out = NULL); a function
 *     returning void does nothing (pyf_target_stats zeroes its out).
 *     Pointers documented as optional ("may be NULL") are the exceptions.
 *     tests/c/test_null_args.c calls every exported function so.
 *   - The static API: declarations inside #ifdef PYF_STATIC_API (the one
 *     call a bundled binding makes per sample, pyf_snapshot_take_copy) are
 *     exported like the rest but follow none of the above: they may change
 *     in any 0.x release.  Define PYF_STATIC_API before including this
 *     header only when the library is bundled with the caller.
 *   - Error codes are never renumbered or reused; -14 is retired.
 */
#ifndef PYFRAMES_H
#define PYFRAMES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PYF_BUILDING_LIBRARY) && defined(__GNUC__)
#define PYF_API __attribute__((visibility("default")))
#else
#define PYF_API
#endif

#define PYF_VERSION_MAJOR 0
#define PYF_VERSION_MINOR 6
#define PYF_VERSION_PATCH 0
#define PYF_VERSION_NUMBER \
    (PYF_VERSION_MAJOR * 10000 + PYF_VERSION_MINOR * 100 + PYF_VERSION_PATCH)

/* ==== Errors ============================================================
 * One list, fixed values, never renumbered.  X(NAME, value, message).
 * -14 is retired (it never reached a caller) and stays unused. */
#define PYF_ERRORS(X)                                                          \
    X(OK, 0, "success")                                                        \
    X(EINVAL, -1, "invalid argument")                                          \
    X(ENOMEM, -2, "out of memory")                                             \
    X(EFAULT, -3, "target memory not readable")                                \
    X(EPERM, -4, "permission denied reading target memory")                    \
    X(ENOPROC, -5, "no such process")                                          \
    X(ENOTPY, -6, "no CPython runtime found in target")                        \
    X(EVERSION, -7, "unsupported CPython version")                             \
    X(EOFFSETS, -8, "_Py_DebugOffsets failed validation")                      \
    X(ECORRUPT, -9, "inconsistent data in target")                             \
    X(ECYCLE, -10, "cycle in a linked structure of the target")                \
    X(EDEPTH, -11, "depth or count limit reached")                             \
    X(ENOTSUP, -12, "operation not supported by this target or reader")        \
    X(EIO, -13, "I/O error")                                                   \
    X(ENOTHREAD, -15, "no such thread")

enum pyf_error {
#define PYF__ERR_ENUM(name, value, msg) PYF_##name = value,
    PYF_ERRORS(PYF__ERR_ENUM)
#undef PYF__ERR_ENUM
};

/* Static message for a code ("unknown error" for values not in the list). */
PYF_API const char *pyf_error_message(int code);
/* Static name for a code, e.g. "PYF_EFAULT" ("PYF_UNKNOWN" otherwise). */
PYF_API const char *pyf_error_name(int code);
/* PYF_VERSION_NUMBER of the loaded library. */
PYF_API int pyf_library_version(void);

/* ==== Failures ===========================================================
 * How a call failed, as data: the one channel of failure details (the
 * failure argument of an open and of every call without a target,
 * pyf_target_failure after a call on a target, pyf_thread.failure for a
 * thread whose walk stopped early).  A failed read says what was read, where
 * and how much, and the reader's own words; detail holds the whole failure
 * as one line for C callers and logs. */
typedef struct pyf_failure {
    uint32_t struct_size;      /* set by the caller (0 in a snapshot's copies) */
    int32_t code;              /* PYF_E*, 0 when nothing failed */
    uint64_t addr;             /* the read that failed */
    uint64_t len;              /* its length; 0 when the failure was not a read */
    char what[64];             /* what was being read, e.g. "interpreter frame" */
    char reader_message[160];  /* the reader's own words about it, or "" */
    char detail[512];          /* the whole failure in one line */
} pyf_failure;
#define PYF_FAILURE_SIZE_V0 760u

/* ==== Readers ===========================================================
 * A read callback fills exactly len bytes at dst from target address addr and
 * returns 0, or a negative code: PYF_EFAULT when (any part of) the range is
 * not mapped/readable, PYF_EPERM when the OS refuses access (ptrace rules,
 * credentials), another PYF_E* otherwise.  It must not raise or longjmp.
 *
 * readv (optional) reads several ranges in one go; it returns 0 when all were
 * read, otherwise the code of the first failing range, and sets status[i] to
 * each range's result.  When NULL the library calls read for each range.
 *
 * write (optional) is used only by the documented 3.15 frame-cache mode.
 *
 * The struct is copied at open; arg is retained and must outlive the target. */
typedef struct pyf_iovec {
    uint64_t addr;
    void *dst;
    size_t len;
} pyf_iovec;
#define PYF_IOVEC_SIZE 24u /* the stride of a readv batch: frozen within 0.x */

typedef int (*pyf_read_fn)(void *arg, uint64_t addr, void *dst, size_t len);
typedef int (*pyf_readv_fn)(void *arg, const pyf_iovec *iov, size_t n, int *status);
typedef int (*pyf_write_fn)(void *arg, uint64_t addr, const void *src, size_t len);
/* The reader's own words about its most recent failure (e.g. the debugger's
 * "Cannot access memory at address 0x..."), or NULL.  The string must stay
 * valid until the reader's next call. */
typedef const char *(*pyf_message_fn)(void *arg);

typedef struct pyf_reader {
    uint32_t struct_size; /* = sizeof(pyf_reader) */
    pyf_read_fn read;     /* required */
    pyf_readv_fn readv;   /* optional */
    pyf_write_fn write;   /* optional */
    void *arg;
    /* appended after the first layout (PYF_READER_SIZE_V0) */
    pyf_message_fn message; /* optional: appended to read-failure details */
    uint32_t reads;         /* what it reads: PYF_READS_* (0: a stopped process) */
} pyf_reader;
#define PYF_READER_SIZE_V0 40u /* up to and including arg */

/* pyf_reader.reads: what the reader reads, which decides the consistency
 * checks of a walk ("When is a frame true?" in docs/architecture.md).
 * A running process changes under every read: a thread list or a frame
 * chain that changed while it was read is read again, a code object freed
 * while it was decoded is dropped, a frame whose instruction lies outside
 * its code is never shown.  A stopped process (a debugger's stop) and a
 * core do not change while they are read, and get none of these.  The
 * built-in PID reader reads a running process, the core reader
 * (pyf_core_reader) a core. */
#define PYF_READS_STOPPED 0u /* a process held stopped while read (the default) */
#define PYF_READS_RUNNING 1u /* a process that runs while it is read */
#define PYF_READS_CORE 2u    /* a core file: it never changes */

/* ==== Targets =========================================================== */
typedef struct pyf_target pyf_target;

typedef struct pyf_options {
    uint32_t struct_size;  /* = sizeof(pyf_options) */
    uint32_t max_depth;    /* frames per thread; 0 = default (PYF_DEFAULT_MAX_DEPTH) */
    uint32_t max_threads;  /* threads per interpreter; 0 = default */
    uint32_t max_string;   /* bytes kept per decoded string; 0 = default */
} pyf_options;
#define PYF_OPTIONS_SIZE_V0 16u

#define PYF_DEFAULT_MAX_DEPTH 10000u
#define PYF_DEFAULT_MAX_THREADS 4096u
/* Not an option: the fixed cap on the interpreters one snapshot walks (and
 * whose asyncio task lists it reads); the walk stops there with PYF_EDEPTH. */
#define PYF_MAX_INTERPRETERS 256u
/* Deprecated: the old name of PYF_MAX_INTERPRETERS, which no option sets. */
#define PYF_DEFAULT_MAX_INTERPRETERS PYF_MAX_INTERPRETERS
#define PYF_DEFAULT_MAX_STRING 4096u

/* Open a target over a caller-supplied reader.  runtime_addr is the address
 * of _PyRuntime (the debugger resolves the symbol, or pyf_runtime_locate
 * finds it); 0 is PYF_EINVAL here.  opts may be NULL.  On failure *out is
 * NULL and, when failure is given, it says why. */
PYF_API int pyf_target_open(const pyf_reader *reader, uint64_t runtime_addr,
                            const pyf_options *opts, pyf_target **out,
                            pyf_failure *failure);

/* Open a live local process by PID with the built-in reader.  runtime_addr 0
 * means discover it from /proc/PID/maps with pyf_runtime_locate's search
 * (the ELF section .PyRuntime or symbol _PyRuntime of the mapped python and
 * libpython files and of the program, then a scan of writable mappings for
 * the "xdebugpy" cookie); its failures name the process as "process 12
 * (sleep)" (its /proc/PID/comm): "process 12 (sleep) is not a Python
 * process". */
PYF_API int pyf_target_open_pid(int pid, uint64_t runtime_addr,
                                const pyf_options *opts, pyf_target **out,
                                pyf_failure *failure);

/* Accepts NULL. */
PYF_API void pyf_target_close(pyf_target *t);

/* The last failure of a call on this target (code 0 when the last call
 * succeeded).  PYF_EINVAL for a NULL argument or a struct_size below
 * PYF_FAILURE_SIZE_V0. */
PYF_API int pyf_target_failure(const pyf_target *t, pyf_failure *out);

typedef struct pyf_python_info {
    uint64_t runtime_addr;
    uint64_t hexversion;  /* PY_VERSION_HEX of the target */
    uint32_t major, minor, micro;
    uint32_t level;       /* 0xA alpha, 0xB beta, 0xC rc, 0xF final */
    uint32_t serial;
    uint32_t free_threaded; /* 1 for a Py_GIL_DISABLED build */
} pyf_python_info;

PYF_API int pyf_target_python(const pyf_target *t, pyf_python_info *out);

/* Drop every cached decode (code objects, strings).  Call when the target
 * may have changed in ways the library cannot see. */
PYF_API void pyf_target_flush(pyf_target *t);

/* Counters, cumulative since open (or the last pyf_target_reset_stats). */
typedef struct pyf_stats {
    uint64_t read_calls;      /* reader calls (a readv batch counts once) */
    uint64_t read_ranges;     /* ranges requested */
    uint64_t bytes_read;
    uint64_t read_failures;
    uint64_t write_calls;
    uint64_t code_cache_hits;
    uint64_t code_cache_misses;
    uint64_t code_cache_invalidations;
    uint64_t snapshots;
    uint64_t frames;          /* frames produced */
    uint64_t chunk_frames;    /* frames resolved from copied stack chunks */
    uint64_t direct_frames;   /* frames read one by one */
    /* the 3.15 frame cache, per thread walked with it (pyf_target_set_cache) */
    uint64_t frame_cache_hits;         /* the whole stack from the cache but its top */
    uint64_t frame_cache_partial_hits; /* the frames below the anchor from it */
    uint64_t frame_cache_misses;       /* walked in full */
    uint64_t frames_from_cache;        /* frames taken from cache entries */
    uint64_t frames_from_memory;       /* frames decoded from target memory */
    uint64_t anchor_writes;            /* last_profiled_frame written */
    uint64_t retried_walks;            /* a live thread read again: it changed under the walk */
    uint64_t code_changed;  /* code objects freed or replaced while they were read (live) */
    /* pyf_snapshot_take_copy answers given without a walk: their one read
     * found the bytes of the last answer's (its counters are added too) */
    uint64_t same_reads;
    /* kept for the layout: 0 (a top frame replaced while its stack was
     * copied was once taken from the copies that agree; it is read again,
     * as every frame whose copies differ: architecture.md, "When is a
     * frame true?") */
    uint64_t top_replaced;
} pyf_stats;

PYF_API void pyf_target_stats(const pyf_target *t, pyf_stats *out);

/* ==== The 3.15 frame cache ================================================
 * CPython 3.15 keeps, per thread state, last_profiled_frame (an anchor a
 * profiler sets to the frame on top) and last_profiled_frame_seq (+1 each
 * time the interpreter pops the anchor frame and moves the anchor to its
 * caller).  With PYF_CACHE_ON a target remembers each thread's complete
 * stack from the anchor down; a later snapshot walks from the top frame
 * only down to the anchor and takes the rest from the cache when the anchor
 * is found in it at index i and seq == the stored seq + i (every frame
 * above it was popped exactly once: no frame at a reused address is taken
 * for the old one), re-reading the anchor after the walk.  The anchor frame
 * itself is always read again (its line moves).
 *
 * Writes: the cache stores a stack only after writing the anchor (the 8
 * bytes of last_profiled_frame, never the seq) through the reader's write
 * and copying the stack after that write, validated by reading the anchor
 * back; this is the one write the library ever makes to a target.
 * PYF_CACHE_READ_ONLY never writes (frames are still matched against the
 * last snapshot, so unchanged frames cost no code-object read).  ON falls
 * back to READ_ONLY on 3.13/3.14 and when the reader cannot write (a core
 * file).  Entries are dropped for threads gone from a snapshot of every
 * thread, on pyf_target_flush and when the frame table is replaced; the
 * cache holds at most 64 threads and 1M frames. */
#define PYF_CACHE_OFF 0u
#define PYF_CACHE_ON 1u
#define PYF_CACHE_READ_ONLY 2u

/* Set the cache mode; *effective (may be NULL) receives the mode in force. */
PYF_API int pyf_target_set_cache(pyf_target *t, uint32_t mode, uint32_t *effective);
PYF_API void pyf_target_reset_stats(pyf_target *t);

/* ==== Snapshots ========================================================= */

/* pyf_frame_info.flags */
#define PYF_FRAME_NAME_TRUNCATED 0x01u     /* function or file name was capped */
#define PYF_FRAME_NO_LOCATION 0x02u        /* line table missing/unreadable/corrupt */
#define PYF_FRAME_CODE_UNREADABLE 0x04u    /* code object or its names unreadable: "???" */
#define PYF_FRAME_GENERATOR 0x08u          /* frame owned by a generator, coroutine
                                              or async generator object */
#define PYF_FRAME_ENTRY_FROM_C 0x10u       /* first Python frame above a C entry */
/* Which object owns a PYF_FRAME_GENERATOR frame, as CPython chose its type
 * from the code's co_flags (Objects/genobject.c, _Py_MakeCoro): with
 * PYF_FRAME_GENERATOR always, so a reader that knows only that flag still
 * sees a generator-owned frame.  Neither: a generator (also one made a
 * generator-based coroutine by @types.coroutine, CO_ITERABLE_COROUTINE,
 * which stays a generator object) or code whose flags could not be read. */
#define PYF_FRAME_COROUTINE 0x20u          /* a coroutine (async def) */
#define PYF_FRAME_ASYNC_GENERATOR 0x40u    /* an async generator */

/* What a frame shows: its function, file, position and flags, as its code
 * object and instruction decode.  The one view of a frame's contents: a
 * snapshot's pyf_frame and a frame table's pyf_record both hold it, at
 * offset 16 in both, so one routine (or one memcpy) serves either.  What
 * it is a view of stays outside it, the same in both at offsets 0 and 8:
 * the frame and code object (frame_addr, code_addr) of a pyf_frame, the
 * code object and instruction (code_addr, instr: what makes a record
 * distinct) of a pyf_record.  code_addr stays outside because 0.5 put it
 * before instr in a pyf_record: inside, it would have moved every other
 * field of the record.  Every field keeps the offset it had in 0.5.0 and
 * both structs their size, so compiled callers are unaffected; C source
 * written against 0.5.0 reads f->info.function where it read f->function.
 * Frozen within 0.x like the structs that hold it. */
typedef struct pyf_frame_info {
    /* Strings of the target are UTF-8 with U+0000 written C0 80. */
    const char *function;  /* co_qualname, UTF-8, never NULL */
    const char *filename;  /* co_filename, UTF-8, never NULL */
    int32_t line;          /* -1 when unknown */
    int32_t end_line;
    int32_t column;        /* 0-based UTF-8 byte offsets like CPython; -1 unknown */
    int32_t end_column;
    uint32_t flags;        /* PYF_FRAME_* */
    uint32_t reserved;
} pyf_frame_info;
#define PYF_FRAME_INFO_SIZE 40u

/* A frame of a snapshot: its key's frame address and its record's code
 * object and info (pyf_frame_table).  Per-frame facts beyond these are
 * arrays parallel to pyf_snapshot.frames, asked for by the request: the one
 * so far is pyf_snapshot_entries (PYF_SNAP_ENTRIES), a uint64 that no
 * reserved field of a 56-byte frame could hold and that most callers never
 * read. */
typedef struct pyf_frame {
    uint64_t frame_addr;   /* remote _PyInterpreterFrame* */
    uint64_t code_addr;    /* remote code object */
    pyf_frame_info info;
} pyf_frame;

/* pyf_thread.flags */
#define PYF_THREAD_COMPLETE 0x01u        /* the whole chain was read */
#define PYF_THREAD_HOLDS_GIL 0x02u       /* only meaningful with GIL_KNOWN */
#define PYF_THREAD_GIL_KNOWN 0x04u       /* 3.15 default builds: holds_gil was read
                                            (3.13/3.14 too with PYF_SNAP_GIL);
                                            never set for a free-threaded build,
                                            which has no GIL */
#define PYF_THREAD_MAIN 0x08u            /* the interpreter's main thread (3.14+) */
/* The thread's frames are the same keys (pyf_frame_table) as this thread
 * state's in the target's previous snapshot, which had the same table_id:
 * nothing in its stack changed that the snapshot shows. */
#define PYF_THREAD_SAME_FRAMES 0x10u

typedef struct pyf_thread {
    uint64_t tstate_addr;
    uint64_t thread_id;         /* pthread_t as Python's threading.get_ident() */
    uint64_t native_thread_id;  /* OS tid, as threading.get_native_id() */
    uint32_t interp_index;      /* index into pyf_snapshot.interps */
    uint32_t flags;             /* PYF_THREAD_* */
    uint32_t first_frame;       /* index into pyf_snapshot.frames */
    uint32_t nframes;           /* innermost first */
    /* failure->code, 0 when failure is NULL: an alias kept only so that
     * the fields after it keep their place (removing it would move them);
     * read the failure */
    int32_t error;
    /* frames of the chain past the request's keep_frames: walked and
     * counted, not returned (0 without keep_frames) */
    uint32_t more_frames;
    /* The one failure of the thread: why its walk stopped early (what
     * failed, where, why, and its code); NULL when it did not.  Owned by
     * the snapshot. */
    const pyf_failure *failure;
} pyf_thread;

typedef struct pyf_interp {
    uint64_t addr;
    int64_t id;
    uint32_t first_thread;      /* index into pyf_snapshot.threads */
    uint32_t nthreads;
} pyf_interp;

/* Element sizes of the snapshot arrays: frozen within 0.x (see ABI policy). */
#define PYF_FRAME_SIZE 56u
#define PYF_THREAD_SIZE 56u
#define PYF_INTERP_SIZE 24u

typedef struct pyf_snapshot {
    uint32_t ninterps;
    uint32_t nthreads;
    uint32_t nframes;
    uint32_t reserved;
    const pyf_interp *interps;
    const pyf_thread *threads;
    const pyf_frame *frames;
    /* the strides of the arrays above: PYF_*_SIZE of the library */
    uint32_t interp_size, thread_size, frame_size;
    uint32_t reserved2;
} pyf_snapshot;

/* pyf_snapshot_request.flags */
#define PYF_SNAP_ONE_THREAD 0x01u /* only the thread whose native id is native_tid */
/* also every asyncio task of every interpreter (CPython 3.14+; see
 * "asyncio tasks"), whichever threads are walked */
#define PYF_SNAP_TASKS 0x02u
/* also where each Python frame's eval call is: see pyf_snapshot_entries */
#define PYF_SNAP_ENTRIES 0x04u
/* also each thread's name, GIL state and exception: see
 * pyf_snapshot_thread_facts */
#define PYF_SNAP_THREAD_FACTS 0x08u
/* also which thread holds the GIL, cheaply (for a sampler): on 3.13/3.14
 * default builds, pyf_thread's PYF_THREAD_GIL_KNOWN and HOLDS_GIL are set
 * from the interpreter's GIL (locked, and its last holder is the thread
 * state: one batch of reads per interpreter after the walk); on 3.15
 * they are the thread's holds_gil as without the flag.  Never set on a
 * free-threaded build, nor where the GIL could not be read.  No other
 * fact is read (no facts array). */
#define PYF_SNAP_GIL 0x10u

typedef struct pyf_snapshot_request {
    uint32_t struct_size;       /* = sizeof(pyf_snapshot_request) */
    uint32_t flags;
    uint64_t native_tid;
    uint32_t max_depth;         /* 0 = the target's option */
    /* 0, or return at most this many frames per thread: the rest of the
     * chain (up to max_depth, with the same errors as a full walk) is
     * stepped through and counted into pyf_thread.more_frames; no record,
     * key or string is made for those frames. */
    uint32_t keep_frames;
} pyf_snapshot_request;
#define PYF_SNAPSHOT_REQUEST_SIZE_V0 24u

/* Walk the target.  req may be NULL (everything).  A thread whose chain is
 * broken still appears, with the frames read so far, without
 * PYF_THREAD_COMPLETE and with its error; only failures that leave nothing to
 * show (runtime or interpreter unreadable) fail the call. */
PYF_API int pyf_snapshot_take(pyf_target *t, const pyf_snapshot_request *req,
                              pyf_snapshot **out);
/* Accepts NULL. */
PYF_API void pyf_snapshot_free(pyf_snapshot *s);

/* Per frame of a snapshot taken with PYF_SNAP_ENTRIES (parallel to
 * pyf_snapshot.frames: the one per-frame fact kept outside pyf_frame, see
 * there; *out is NULL for a snapshot without the flag, then
 * PYF_ENOTSUP): for a frame entered from C (PYF_FRAME_ENTRY_FROM_C), the
 * address of the entry frame its eval call pushed on the C stack, which
 * lies inside that call's native stack frame: a debugger places the
 * Python frames on its own native backtrace by it.  With keep_frames, a
 * thread's last frame kept whose eval call runs on into the frames only
 * counted has that call's entry too (found among them; the frame is not
 * entered from C).  0 for other frames, and where it is not known (frames
 * taken from the 3.15 frame cache).  Valid until pyf_snapshot_free. */
PYF_API int pyf_snapshot_entries(const pyf_snapshot *s, const uint64_t **out);

/* ==== Thread facts ========================================================
 * What a snapshot taken with PYF_SNAP_THREAD_FACTS knows of each thread
 * besides its frames, parallel to pyf_snapshot.threads (PYF_THREAD_FACTS_SIZE
 * bytes apart, frozen within 0.x like pyf_thread).  Read after the walk,
 * once per snapshot; a fact that cannot be read is a flag, never a failure
 * of the snapshot, and never a guess.
 *
 * Name: the name of the thread's threading.Thread (its _name attribute),
 * found through the interpreter's sys.modules["threading"]._active, the
 * dict {threading.get_ident(): Thread} (whose key equals
 * pyf_thread.thread_id).  NULL without PYF_FACT_NAME_UNREADABLE: threading
 * is not imported, the thread is not in _active (a thread started by
 * _thread.start_new_thread), or its _name is no str.  With
 * PYF_FACT_NAME_UNREADABLE: sys.modules, threading, _active or the name
 * could not be read or made no sense.
 *
 * GIL: GIL_KNOWN when the interpreter's GIL (its locked flag and last
 * holder: the runtime's on 3.11, the one the interpreter's ceval.gil
 * points at on 3.12-3.15) was read; GIL_HOLDER when it is locked and its
 * last holder is this thread state; GIL_HOLDS the thread's own verdict:
 * on 3.15 its holds_gil, on 3.11-3.14 GIL_HOLDER.  On 3.15
 * GIL_REQUEST_KNOWN and GIL_REQUESTED (gil_requested: it waits for it).
 * NO_GIL: a free-threaded build running without the GIL (then no other
 * GIL flag).  pyf_thread's own PYF_THREAD_GIL_KNOWN/HOLDS_GIL are
 * unchanged: 3.15 default builds only, from holds_gil (3.11-3.14 too when
 * PYF_SNAP_GIL is asked as well).
 *
 * Exception: the one being raised (the thread state's current_exception;
 * on 3.11 curexc_type/value/traceback), else the one being handled (what
 * sys.exception() returns in the thread: the first exc_value of the
 * exc_info chain that is neither NULL nor None): its type as repr() names
 * it, the exception as a value tree (exc_value, an index into the values
 * of pyf_snapshot_fact_values: a PYF_VALUE_EXCEPTION node, its args and,
 * for an OSError, what its str() words; a binding renders str() of it),
 * and the innermost entry of its traceback: file and line (NULL and -1
 * when it has none, e.g. raised and not yet added to).  On 3.11 an
 * exception raised from C may not be made yet (its class and the value
 * to call it with held apart): exc_addr is 0 and its tree the exception
 * that would be made, a node of the class's name at address 0 whose args
 * are that value (a tuple), or a tuple (address 0) of it, or empty.
 * exc_message is NULL: str() is no longer worded here but by the binding,
 * from the tree (the one renderer of values); PYF_FACT_MESSAGE_PARTIAL
 * says the class words its str() itself (a builtin with its own __str__,
 * a class defining one), so the tree's BaseException wording may not be
 * what str() says.  PYF_FACT_MESSAGE_TRUNCATED is no longer set. */
#define PYF_FACT_NAME 0x0001u             /* name is the threading.Thread's name */
#define PYF_FACT_NAME_UNREADABLE 0x0002u  /* the name could not be read */
#define PYF_FACT_GIL_KNOWN 0x0004u        /* the interpreter's GIL was read */
#define PYF_FACT_GIL_HOLDS 0x0008u        /* the thread holds the GIL */
#define PYF_FACT_GIL_HOLDER 0x0010u       /* the GIL is locked, this its last holder */
#define PYF_FACT_GIL_REQUEST_KNOWN 0x0020u /* 3.15: gil_requested was read */
#define PYF_FACT_GIL_REQUESTED 0x0040u    /* 3.15: the thread asks for the GIL */
#define PYF_FACT_NO_GIL 0x0080u           /* free-threaded, the GIL disabled */
#define PYF_FACT_EXCEPTION 0x0100u        /* an exception is raised or handled */
#define PYF_FACT_EXC_HANDLED 0x0200u      /* handled (except/finally), not raised */
#define PYF_FACT_EXC_UNREADABLE 0x0400u   /* the thread state or exception could
                                             not be read (fields NULL as unknown) */
#define PYF_FACT_MESSAGE_TRUNCATED 0x0800u /* no longer set (exc_message is NULL) */
#define PYF_FACT_MESSAGE_PARTIAL 0x1000u  /* the class words str() itself */
#define PYF_FACT_MESSAGE_MAX 200u

typedef struct pyf_thread_facts {
    const char *name;        /* UTF-8, or NULL (see above) */
    const char *exc_type;    /* "ValueError", "mod.Qualname"; NULL when none */
    const char *exc_message; /* NULL (str() is rendered from exc_value) */
    const char *exc_file;    /* its innermost traceback entry's file, or NULL */
    int32_t exc_line;        /* and line, -1 when unknown */
    uint32_t flags;          /* PYF_FACT_* */
    uint64_t exc_addr;       /* the exception object, 0 when none (or not made) */
    /* the exception's tree: its node in pyf_snapshot_fact_values' values,
     * PYF_NO_VALUE when none (was reserved: 0 from libraries before it) */
    uint32_t exc_value;
    uint32_t reserved32;
    uint64_t reserved;
} pyf_thread_facts;
#define PYF_THREAD_FACTS_SIZE 64u /* the stride of the array: frozen within 0.x */

/* The facts of each thread of a snapshot taken with PYF_SNAP_THREAD_FACTS
 * (*out[i] is of pyf_snapshot.threads[i]); *out is NULL and the call
 * PYF_ENOTSUP for a snapshot without the flag.  The strings and the array
 * are owned by the snapshot: valid until pyf_snapshot_free. */
PYF_API int pyf_snapshot_thread_facts(const pyf_snapshot *s, const pyf_thread_facts **out);

/* ==== The frame table =====================================================
 * A target keeps one table of what its snapshots saw, shared by them:
 *   - records: a distinct frame as the code shows it: code object,
 *     instruction, flags and what they decode to (names, positions).  Every
 *     level of a recursion at the same instruction is one record.
 *   - keys: a frame address and its record.  A frame of a snapshot is a key;
 *     the same frame (same address, code, instruction and flags) in the
 *     next snapshot is the same key.
 * Records and keys are only appended: two snapshots with the same table_id
 * agree on every index both have, and the records' strings are made once
 * per code object (a snapshot of an unchanged stack makes none).  A new
 * table (a new table_id, indexes start over) replaces the old one after
 * pyf_target_flush, when the code-object cache was reset (the target freed
 * code objects: CPython 3.14+'s code_object_generation moved, or the cache
 * filled up) and when the table has grown past its bound.
 *
 * Ownership: the target owns its table and each snapshot holds a reference
 * to the version it was taken with.  A snapshot's records, keys and strings
 * (those of pyf_frame too) stay valid and unchanged until
 * pyf_snapshot_free, also after pyf_target_flush and after
 * pyf_target_close; the memory goes with the last of them. */

typedef struct pyf_record {
    uint64_t code_addr;    /* remote code object */
    int64_t instr;         /* code-unit index of the instruction; -1 before the
                              first; INT64_MIN when the code is unreadable */
    pyf_frame_info info;   /* what its frames show (as a pyf_frame's info) */
} pyf_record;

typedef struct pyf_frame_key {
    uint64_t frame_addr;   /* remote _PyInterpreterFrame* */
    uint32_t record;       /* index into pyf_frame_table.records */
    uint32_t reserved;
} pyf_frame_key;

#define PYF_RECORD_SIZE 56u
#define PYF_FRAME_KEY_SIZE 16u

typedef struct pyf_frame_table {
    uint32_t struct_size;      /* = sizeof(pyf_frame_table), set by the caller */
    uint32_t nframes;          /* = pyf_snapshot.nframes */
    uint64_t table_id;         /* non-zero; equal ids: the same indexes */
    const pyf_record *records; /* [nrecords], as of this snapshot */
    const pyf_frame_key *keys; /* [nkeys], as of this snapshot */
    /* per frame of the snapshot (parallel to pyf_snapshot.frames): the
     * index of its key; a thread's are [first_frame, first_frame+nframes) */
    const uint32_t *frame_keys;
    uint32_t nrecords, nkeys;
    uint32_t record_size, key_size; /* strides: PYF_RECORD_SIZE, PYF_FRAME_KEY_SIZE */
} pyf_frame_table;
#define PYF_FRAME_TABLE_SIZE_V0 56u

/* The frame table as of snapshot s.  PYF_EINVAL for NULL arguments or a
 * struct_size below PYF_FRAME_TABLE_SIZE_V0. */
PYF_API int pyf_snapshot_table(const pyf_snapshot *s, pyf_frame_table *out);

/* ==== The static API: one call for the bundled binding ====================
 * Only with PYF_STATIC_API defined before this header is included, the
 * way zstd keeps ZSTD_STATIC_LINKING_ONLY: for the Python binding shipped
 * with the library (and tests and benchmarks built with it), which is
 * never mixed with a library of another release.  It may change in any 0.x
 * release; other callers use pyf_snapshot_take and pyf_snapshot_table.
 *
 * Why not a struct_size like the other input structs: pyf_snapshot_copy is
 * input and output at once, and the arrays the library copies start right
 * after it in the caller's buffer, at an offset both sides compute from
 * its size.  A caller-sized struct would make that offset, and every field
 * the binding unpacks with one precompiled struct format per sample, depend
 * on the caller's size: a check and a branch more on the hot path of the
 * sampler for a compatibility no bundled caller needs.  Its size is
 * PYF_SNAPSHOT_COPY_SIZE of the release it comes with (the binding's
 * mirror is checked against it by tests/python/test_ffi_unit.py).
 *
 * pyf_snapshot_take, and what a binding reads of the snapshot (its header,
 * pyf_snapshot_table's answer, the interps and threads) copied into one
 * buffer of the caller, in one call with two arguments: for bindings that
 * pay for each call, each argument and each read of library memory
 * (Python's ctypes).
 *
 * c points to a buffer of c->cap bytes (8-byte aligned, at least
 * sizeof(pyf_snapshot_copy)) that starts with a pyf_snapshot_copy whose
 * inputs the caller sets: cap, request (NULL: everything) and kept.  The
 * library fills the rest and, when they fit (PYF_COPY_ARRAYS), puts
 * pyf_interp[ninterps] right after the struct and pyf_thread[nthreads]
 * right after them; c->size is the bytes the whole takes.  Without
 * PYF_COPY_ARRAYS the arrays are read through the snapshot as usual;
 * PYF_COPY_SAME_ARRAYS says they are, byte for byte, what the buffer held
 * there before the call, whose size field had the same size (a caller that
 * converted the last copy in the same buffer can reuse what it made of
 * it).
 *
 * serial numbers the target's snapshots (1, 2, ...); same_as is the serial
 * of the snapshot PYF_THREAD_SAME_FRAMES compares with (the target's last
 * successful one; 0 when none).  kept is the serial of the snapshot whose
 * frames, thread by thread, the caller keeps (0: none); on success the
 * library sets it to this snapshot's serial, the caller sets it back to 0
 * when it does not keep this one's.
 *
 * c->out is the snapshot, to free with pyf_snapshot_free, unless nothing
 * else of it can be needed: kept was same_as, the arrays were copied,
 * every thread has PYF_THREAD_SAME_FRAMES and no failure, and the request
 * asks none of PYF_SNAP_TASKS, PYF_SNAP_ENTRIES and PYF_SNAP_THREAD_FACTS.
 * Then the snapshot is freed at once (its frames never made), c->out is NULL and PYF_COPY_FREED
 * is set: the copy's pointers into the snapshot (snapshot.interps,
 * .threads, .frames, table.frame_keys) are NULL, and table.records,
 * table.keys and their strings stay valid only until the next call on the
 * target.  Such an answer, when the one reader call its snapshot made was
 * the prefetch of what the last one read and it missed and wrote nothing,
 * is given again by the next call of the same request whose prefetch reads
 * the same bytes, without a walk (pyf_stats.same_reads).  So is an answer
 * to a request with PYF_SNAP_THREAD_FACTS (never freed itself) that would
 * have been freed but for its facts, when the facts were read through the
 * reader alone (no cache of the target's served them) and every one of
 * their reads was whole: when the next call's prefetch finds the same
 * bytes and its reads of the facts' ranges do too (one more reader
 * call), it is given again, freed, with PYF_COPY_SAME_FACTS: the threads'
 * facts are those of the snapshot kept (same_as), field for field and
 * string for string.  On failure nothing but c->out (NULL) is written. */
#ifdef PYF_STATIC_API
#define PYF_COPY_ARRAYS 0x01u   /* the interps and threads follow the copy */
#define PYF_COPY_FREED 0x02u    /* the snapshot is freed, out is NULL */
#define PYF_COPY_SAME_ARRAYS 0x04u /* the arrays were in the buffer already */
#define PYF_COPY_KEPT 0x08u     /* kept was same_as (set with FREED, too) */
#define PYF_COPY_SAME_FACTS 0x10u /* freed; the facts are those of same_as */

typedef struct pyf_snapshot_copy {
    uint32_t cap;                          /* in: bytes of the buffer */
    uint32_t flags;                        /* PYF_COPY_* */
    const pyf_snapshot_request *request;   /* in */
    uint64_t kept;                         /* in and out */
    pyf_snapshot *out;
    uint32_t size;                         /* bytes of the whole copy */
    uint32_t reserved;
    uint64_t serial;
    uint64_t same_as;
    pyf_snapshot snapshot;                 /* the header */
    pyf_frame_table table;                 /* as pyf_snapshot_table fills it */
} pyf_snapshot_copy;
#define PYF_SNAPSHOT_COPY_SIZE 168u /* of this release */

PYF_API int pyf_snapshot_take_copy(pyf_target *t, pyf_snapshot_copy *c);

/* pyf_sample_run: many samples in one call, counted by stack in the
 * library, for a sampler that would otherwise pay a call and a loop of its
 * own language per sample (the command line at --rate 0).
 *
 * A sample is a snapshot taken with b->request (its frames are not made:
 * the frame keys are what is counted; PYF_SNAP_ONE_THREAD picks one
 * thread).  Each of its threads that b->flags keep and whose stack was read to the end is a thread-sample: its frame
 * keys (innermost first) with its thread_id and native_thread_id and the
 * table_id of the snapshot are a stack, counted in b->stacks (one element
 * per distinct stack; its keys in b->keys[first_key, first_key + nkeys)).
 * A thread whose walk failed is counted in thread_errors (and by its
 * failure's code) instead.
 *
 * Timing (CLOCK_MONOTONIC, nanoseconds): samples start no earlier than
 * b->next_ns (0: at once) and none starts at or after b->until_ns; a call
 * whose next sample is due after until_ns waits until until_ns.  With
 * interval_ns, each next_ns is the last one plus interval_ns times a factor
 * drawn uniformly from [1 - jitter, 1 + jitter] (jitter_ppm millionths,
 * b->rng the generator's state, any non-zero value; both are written back
 * for the next call); a sampler that fell more than an interval behind
 * starts again from now instead of catching up.  0: back to back.
 *
 * The call returns PYF_OK when it ended (b->end says why): until_ns or
 * max_samples reached, one of the caller's arrays full, or a sample that
 * failed with PYF_ENOPROC or PYF_EFAULT (the process may be gone: the
 * caller decides), or a signal interrupted a wait.  Failed samples are
 * counted per code (failed_by_code[-code], capped at the last index).
 *
 * b->tables: the newest snapshot of each frame table the stacks count
 * against (their frames made), the caller's to free with
 * pyf_snapshot_free; the call ends before it would need more than
 * PYF_SAMPLE_MAX_TABLES.  Not thread-safe with other calls on t. */
#define PYF_SAMPLE_GIL 0x01u   /* keep only the thread holding the GIL
                                  (PYF_THREAD_GIL_KNOWN and HOLDS_GIL) */
#define PYF_SAMPLE_TIMES 0x02u /* each thread-sample in b->times, in order */

#define PYF_SAMPLE_END_DONE 0u     /* until_ns or max_samples */
#define PYF_SAMPLE_END_FULL 1u     /* stacks, keys, times or tables full */
#define PYF_SAMPLE_END_GONE 2u     /* a sample failed with ENOPROC or EFAULT */
#define PYF_SAMPLE_END_SIGNAL 3u   /* a signal interrupted a wait */
#define PYF_SAMPLE_MAX_TABLES 4u
#define PYF_SAMPLE_CODES 16u

typedef struct pyf_sample_stack {
    uint64_t table_id;
    uint64_t thread_id;
    uint64_t native_thread_id;
    uint32_t first_key;   /* index into keys */
    uint32_t nkeys;
    uint32_t count;       /* thread-samples */
    uint32_t reserved;
} pyf_sample_stack;

typedef struct pyf_sample_time {
    uint64_t ns;          /* when its sample started */
    uint32_t stack;       /* index into stacks */
    uint32_t reserved;
} pyf_sample_time;

typedef struct pyf_sample_batch {
    /* in */
    const pyf_snapshot_request *request;
    uint32_t flags;                 /* PYF_SAMPLE_* */
    uint32_t max_samples;           /* 0: no bound */
    uint64_t until_ns;
    uint64_t interval_ns;
    uint32_t jitter_ppm;            /* at most 1000000 */
    uint32_t stacks_cap, keys_cap, times_cap;
    pyf_sample_stack *stacks;
    uint32_t *keys;
    pyf_sample_time *times;         /* may be NULL without PYF_SAMPLE_TIMES */
    /* in and out */
    uint64_t next_ns;
    uint64_t rng;
    /* out */
    uint32_t end;                   /* PYF_SAMPLE_END_* */
    uint32_t samples, failed, thread_errors;
    uint32_t nstacks, nkeys, ntimes, ntables;
    uint64_t busy_ns;               /* time spent sampling, waits excluded */
    uint32_t failed_by_code[PYF_SAMPLE_CODES];
    uint32_t thread_errors_by_code[PYF_SAMPLE_CODES];
    pyf_snapshot *tables[PYF_SAMPLE_MAX_TABLES];
} pyf_sample_batch;
#define PYF_SAMPLE_BATCH_SIZE 288u /* of this release */

PYF_API int pyf_sample_run(pyf_target *t, pyf_sample_batch *b);
#endif /* PYF_STATIC_API */

/* ==== asyncio tasks (CPython 3.14+) =======================================
 * CPython 3.14+ publishes the layout of its asyncio tasks in the section
 * .AsyncioDebug (the symbol _AsyncioDebug): in the _asyncio extension
 * module on 3.14 (mapped once asyncio is imported), in the python
 * executable or libpython on 3.15.  A PID target finds it itself in
 * /proc/PID/maps; a debugger gives its address (the symbol, or
 * pyf_elf_find_asyncio on its loaded files) with pyf_target_set_asyncio.
 * Every size and offset of that table is checked before use.
 * A snapshot taken with PYF_SNAP_TASKS then holds every task: those on each
 * thread state's list (tasks created in that thread), then those on each
 * interpreter's list (tasks whose thread has exited).  Each task's
 * coroutine stack is its coroutine's frame, then the frame of the
 * coroutine (or async generator, through asend/athrow) it awaits, and so
 * on: the frames are appended to pyf_snapshot.frames after the threads',
 * as keys and records of the same frame table.  Lists, chains and sets
 * are bounded and checked for cycles: a broken list ends with the tasks
 * read so far and the list's error. */

/* pyf_task.state: the future state, where the layout tells */
#define PYF_TASK_PENDING 0u
#define PYF_TASK_CANCELLED 1u
#define PYF_TASK_FINISHED 2u
#define PYF_TASK_STATE_UNKNOWN 3u

/* pyf_task.flags */
#define PYF_TASK_RUNNING 0x01u       /* the running task of its thread */
#define PYF_TASK_THREAD_GONE 0x02u   /* on an interpreter's list: its thread exited */
#define PYF_TASK_NAME_NOT_STR 0x04u  /* the name object is not a str (shown as str() would) */

typedef struct pyf_task {
    uint64_t task_addr;        /* the Task object (its id) */
    uint64_t coro_addr;        /* its coroutine, 0 when none */
    uint64_t tstate_addr;      /* the thread state whose list holds it, 0 if none */
    uint64_t thread_id;        /* that thread's threading.get_ident(), 0 if none */
    uint64_t native_thread_id; /* its OS thread id, 0 if none */
    int64_t interp_id;         /* the interpreter whose state holds it */
    const char *name;          /* UTF-8, never NULL; "Task-N" for unnamed tasks */
    uint32_t state;            /* PYF_TASK_PENDING ... */
    uint32_t flags;            /* PYF_TASK_* */
    uint32_t first_frame;      /* its coroutine stack: pyf_snapshot.frames */
    uint32_t nframes;          /* [first_frame, first_frame + nframes), innermost first */
    uint32_t first_awaiter;    /* the tasks awaiting it: pyf_task_list.awaited_by */
    uint32_t nawaiters;        /* [first_awaiter, first_awaiter + nawaiters) */
    int32_t error;             /* failure->code, 0 when failure is NULL: an alias
                                  kept for the layout; read the failure */
    uint32_t reserved;
    /* The one failure of the task: why its stack or awaiters are cut
     * short; NULL when they are not.  Owned by the snapshot. */
    const pyf_failure *failure;
} pyf_task;
#define PYF_TASK_SIZE 96u

typedef struct pyf_task_list {
    uint32_t struct_size;      /* = sizeof(pyf_task_list), set by the caller */
    /* failure->code when no task could be read at all, else 0 (then
     * ntasks is 0): PYF_ENOTSUP (CPython 3.13, asyncio never imported, its
     * offsets not located; also when the snapshot was not asked for
     * tasks), or why the table last given to pyf_target_set_asyncio was
     * refused (PYF_EOFFSETS: it failed validation; PYF_EFAULT, PYF_EINVAL).
     * An alias of the failure's code kept for the layout, like list_error */
    int32_t status;
    const pyf_task *tasks;     /* [ntasks] */
    const uint64_t *awaited_by; /* task addresses */
    uint32_t ntasks, nawaited_by;
    uint32_t task_size;        /* stride: PYF_TASK_SIZE */
    /* failure->code when a list was cut short (a broken link, a cycle, a
     * bound: the first one; the tasks read before the break are there),
     * else 0 */
    int32_t list_error;
    /* The one failure of the list: why no task could be read (status) or
     * why a list was cut short (list_error); NULL when neither.  Owned by
     * the snapshot. */
    const pyf_failure *failure;
} pyf_task_list;
#define PYF_TASK_LIST_SIZE_V0 48u

/* The tasks of snapshot s.  PYF_EINVAL for NULL arguments or a struct_size
 * below PYF_TASK_LIST_SIZE_V0. */
PYF_API int pyf_snapshot_tasks(const pyf_snapshot *s, pyf_task_list *out);

/* Where the asyncio debug offsets of the target are (0 forgets them).
 * Returns PYF_ENOTSUP on CPython 3.13, PYF_EFAULT when unreadable,
 * PYF_EOFFSETS when the table fails validation (detail in
 * pyf_target_failure). */
PYF_API int pyf_target_set_asyncio(pyf_target *t, uint64_t addr);

/* An OS thread of the process a target reads, as a debugger knows it. */
typedef struct pyf_os_thread {
    uint64_t tid;            /* its OS thread id */
    uint64_t tls_base;       /* its TLS base (x86-64: fs_base), which glibc and
                                musl make its pthread handle; 0 unknown */
} pyf_os_thread;
#define PYF_OS_THREAD_SIZE 16u /* the stride of pyf_target_set_os_threads' array:
                                  frozen within 0.x */

/* The OS threads of the process t reads (n of them) and its pid (0 when
 * unknown), replacing what the target knew.  Before 3.14 the main thread
 * is the main interpreter's thread whose native id is the pid.  CPython
 * 3.8-3.10 keep no native thread id, only the pthread handle (thread_id),
 * and a target read through a debugger's callbacks learns their ids from
 * this.  A thread
 * state whose handle is a thread's TLS base gets that thread's id; without
 * TLS bases, the id that struct pthread holds where the main thread's
 * holds the pid, when it is one of these threads.  A target opened by PID
 * or on a core (pyf_target_open_core) knows its threads already.
 * PYF_EINVAL for a NULL t, or NULL threads with n > 0; PYF_ENOMEM. */
PYF_API int pyf_target_set_os_threads(pyf_target *t, int64_t pid, const pyf_os_thread *threads,
                                      uint32_t n);

/* ==== Helpers for debuggers ============================================= */

/* Validate the runtime at addr: its _Py_DebugOffsets (cookie, version,
 * layout; 3.13+), or the shape of a CPython 3.8-3.12 runtime (3.11, 3.12:
 * its main interpreter embedded where that version's layout has it; 3.8-
 * 3.10: its interpreter pointers, each of their layouts tried newest
 * first) and the version the target's sys.hexversion says.  Returns 0 or the error a target open
 * would report, with the same failure; out (may be NULL) gets the runtime's
 * version, also on PYF_EVERSION when the table's cookie is there (the
 * version it says).  The size and Py_Version checks of pyf_runtime_locate
 * need the runtime's file: a probe alone does not make them.
 * A refused version's failure names it: "unsupported CPython 3.16.0
 * (pyframes reads CPython 3.8-3.15)". */
PYF_API int pyf_runtime_probe(const pyf_reader *reader, uint64_t addr,
                              pyf_python_info *out, pyf_failure *failure);

/* Where _PyRuntime is, from what a debugger (or /proc/PID/maps) knows of the
 * target's address space.  The library tries, in this order and as the
 * request's methods allow: the address of the symbol _PyRuntime (when the
 * caller's symbol tables have it: SYMBOL); in each mapped file whose name
 * contains "python" (not an extension module, "*.cpython-*.so"), and in the
 * program (the first file mapped), its ELF
 * section .PyRuntime (SECTION), then its own symbol _PyRuntime (.dynsym,
 * else .symtab: SYMBOL) where that is elsewhere (the file's mapping at file
 * offset 0 gives where it is loaded; it is opened by path, else by
 * open_path); a scan of the writable mappings for the "xdebugpy" cookie of
 * CPython 3.13+ (SCAN: python files, other files, then anonymous memory,
 * smallest first) within one byte budget.  Every candidate is confirmed
 * with pyf_runtime_probe.  A runtime described by a built-in layout (3.11,
 * 3.12) is taken only when its size (the symbol's or the section's) is that
 * layout's and its file's Py_Version agrees with the target's
 * sys.hexversion: another size is an unknown layout (a debug build), refused
 * by name.  The PID reader uses the same search over /proc/PID/maps. */
#define PYF_MAP_READ 0x1u
#define PYF_MAP_WRITE 0x2u
#define PYF_MAP_EXEC 0x4u

typedef struct pyf_mapping {
    uint64_t start, end;       /* [start, end) in the target */
    uint64_t file_offset;      /* offset in the file of start */
    uint32_t flags;            /* PYF_MAP_* */
    uint32_t reserved;
    const char *path;          /* the file as the target names it, or NULL */
    const char *open_path;     /* where this machine can open it, or NULL */
} pyf_mapping;
#define PYF_MAPPING_SIZE 48u /* the stride of pyf_locate_request.maps: frozen within 0.x */

#define PYF_LOCATE_SYMBOL 0x1u
#define PYF_LOCATE_SECTION 0x2u
#define PYF_LOCATE_SCAN 0x4u

typedef struct pyf_locate_request {
    uint32_t struct_size;      /* = sizeof(pyf_locate_request) */
    uint32_t methods;          /* PYF_LOCATE_*; 0 = all */
    uint64_t symbol_addr;      /* the address of _PyRuntime, 0 when unknown */
    const pyf_mapping *maps;   /* [nmaps], PYF_MAPPING_SIZE bytes apart */
    size_t nmaps;
    uint64_t scan_budget;      /* bytes scanned at most; 0 = 512 MiB */
    /* appended after the first layout (PYF_LOCATE_REQUEST_SIZE_V0) */
    const char *target_name;   /* how failures name the target, e.g. "process 12
                                * (sleep)"; NULL: "the target" */
} pyf_locate_request;
#define PYF_LOCATE_REQUEST_SIZE_V0 40u /* up to and including scan_budget */

typedef struct pyf_runtime_location {
    uint32_t struct_size;      /* = sizeof(pyf_runtime_location), set by the caller */
    uint32_t method;           /* the PYF_LOCATE_* that found it */
    uint64_t addr;             /* 0 when nothing was found */
    /* the runtime found; on PYF_EVERSION, the version refused (hexversion
     * and its parts; runtime_addr 0 when it came from Py_Version) */
    pyf_python_info python;
    /* how it was found, e.g. "the .PyRuntime section of /usr/bin/python3.15";
     * "" when nothing was (why is in the failure) */
    char how[256];
} pyf_runtime_location;
#define PYF_RUNTIME_LOCATION_SIZE_V0 312u

/* Returns 0 (out->addr, out->method, out->python, out->how), or PYF_ENOTPY
 * (nothing found), PYF_EVERSION / PYF_EOFFSETS (a runtime was found and
 * refused: out->python says its version), PYF_EPERM, PYF_ENOPROC,
 * PYF_EINVAL, with why in failure.  When no runtime is found at all, the
 * files searched name the version: the symbol Py_Version (3.11+), else the
 * string Py_GetVersion keeps in the .bss of the file with CPython's code
 * (2.7-3.10); one this library does not read is PYF_EVERSION, out->python
 * its version, failure "unsupported CPython 3.7.17 (pyframes reads CPython
 * 3.8-3.15)".  When no file holds anything of CPython (and no symbol was
 * given), the failure is "<target_name> is not a Python process".  out may
 * be NULL. */
PYF_API int pyf_runtime_locate(const pyf_reader *reader, const pyf_locate_request *req,
                               pyf_runtime_location *out, pyf_failure *failure);

/* Scan [start, end) through reader, in page-sized steps, for a valid
 * _PyRuntime (cookie at an 8-aligned address that also probes valid): the
 * scan step of pyf_runtime_locate over one range.  PYF_ENOTPY when the
 * range holds none (the failure names the first table refused there, if
 * any), PYF_EDEPTH when the scan budget ran out first. */
PYF_API int pyf_runtime_find_in_range(const pyf_reader *reader, uint64_t start,
                                      uint64_t end, uint64_t *found,
                                      pyf_failure *failure);

/* Read the ELF file at path and return where its .PyRuntime section lives
 * when the file is mapped with its first PT_LOAD at map_start:
 * map_start + sh_addr - align_down(first PT_LOAD p_vaddr, p_align).
 * PYF_ENOTPY when the file has no such section, PYF_EIO when unreadable,
 * PYF_ECORRUPT for a malformed ELF, PYF_ENOTSUP for an ELF that is not
 * 64-bit little-endian; the failure names the file and what was wrong. */
PYF_API int pyf_elf_find_runtime(const char *path, uint64_t map_start,
                                 uint64_t *found, pyf_failure *failure);
/* The same for the section .AsyncioDebug (the asyncio debug offsets of
 * CPython 3.14+: in the _asyncio module on 3.14, in python/libpython on
 * 3.15). */
PYF_API int pyf_elf_find_asyncio(const char *path, uint64_t map_start,
                                 uint64_t *found, pyf_failure *failure);

/* ==== Core files ========================================================
 * A core file read by the library itself, no debugger needed: an ELF core
 * (the kernel's, gdb's gcore, systemd-coredump's) or a minidump (lldb's
 * process save-core), plain or compressed with zstd, xz, lz4 (frames) or
 * gzip, each as this build has its library (pyf_core_compressions).  A
 * compressed core is decompressed once, as it is opened, into a temporary
 * file deleted from the start (its name never appears): the memory used
 * stays that of the decompressor's buffers whatever the core's size; the
 * file takes the core's size, less its pages of zeros, on the file system
 * of temp_dir.
 *
 * What it holds:
 *   - memory: the core's own segments (ELF PT_LOAD, a minidump's memory
 *     lists), and what the core leaves out of a file mapping (program
 *     text, read-only data: what the process never changed, which the
 *     kernel and gdb do not copy) from that file, as the core names it
 *     (ELF NT_FILE, a minidump's copy of /proc/PID/maps), on this machine
 *     or under the sysroot, once its build id equals the one the core holds
 *     (PYF_CORE_FILE_*; a mapping the process could write, or whose
 *     permissions the core does not say, only then, and only in an ELF
 *     core: a minidump's writer leaves out what it chooses).  A read of memory the
 *     core holds no bytes for, or that lies past the end of a core cut
 *     short, fails with PYF_EFAULT and the reader's message says which
 *     (pyf_core_reader);
 *   - its threads (NT_PRSTATUS; a minidump's thread list) with their
 *     registers;
 *   - the signal that ended the process and the thread that received it
 *     (NT_SIGINFO, else the first thread's pr_cursig; a minidump's
 *     exception stream).
 * Every size and count read from the file is checked against the file
 * and bounded: a truncated, corrupt or hostile core gives a named error
 * (PYF_ECORRUPT: not a core, or its headers unreadable) or a core marked
 * partial (PYF_CORE_CUT_SHORT, PYF_CORE_NOTES_PARTIAL, PYF_CORE_STREAM_ENDED,
 * with the first problem in pyf_core_info.problem), never a read outside
 * the file.  Only regular files are opened, without following a FIFO or
 * a device a hostile core names.
 *
 * A pyf_core is not thread-safe; its reader and every target opened on it
 * must be closed before it. */
typedef struct pyf_core pyf_core;

typedef struct pyf_core_request {
    uint32_t struct_size;    /* = sizeof(pyf_core_request) */
    uint32_t flags;          /* 0 */
    const char *path;        /* the core file (required) */
    const char *executable;  /* the executable; NULL: the file the core names */
    /* the directory the core's files are under (a copy of the machine or
     * container it was written on); NULL: at the paths the core names */
    const char *sysroot;
    /* where a compressed core is decompressed; NULL: $TMPDIR, else /var/tmp */
    const char *temp_dir;
    /* the most bytes a compressed core may decompress to; 0: 1 TiB */
    uint64_t max_size;
} pyf_core_request;
#define PYF_CORE_REQUEST_SIZE_V0 48u

/* pyf_core_info.format */
#define PYF_CORE_ELF 1u
#define PYF_CORE_MINIDUMP 2u
/* pyf_core_info.compression; pyf_core_compressions' bits are 1 << these */
#define PYF_CORE_PLAIN 0u
#define PYF_CORE_ZSTD 1u
#define PYF_CORE_XZ 2u
#define PYF_CORE_LZ4 3u
#define PYF_CORE_GZIP 4u
/* pyf_core_info.flags */
#define PYF_CORE_SIGNAL 0x01u         /* signo and signal_tid are known */
#define PYF_CORE_SIGINFO 0x02u        /* code and signal_addr too (NT_SIGINFO) */
#define PYF_CORE_CUT_SHORT 0x04u      /* the file ends before what its headers
                                         describe: missing_bytes are not there */
#define PYF_CORE_NOTES_PARTIAL 0x08u  /* notes (threads, files) cut or malformed:
                                         those before are kept */
#define PYF_CORE_STREAM_ENDED 0x10u   /* the compressed stream ended early or is
                                         corrupt: what came before is read */

typedef struct pyf_core_info {
    uint32_t struct_size;    /* = sizeof(pyf_core_info), set by the caller */
    uint32_t format;         /* PYF_CORE_ELF, PYF_CORE_MINIDUMP */
    uint32_t compression;    /* PYF_CORE_PLAIN, _ZSTD, ... */
    uint32_t flags;          /* PYF_CORE_* */
    uint32_t machine;        /* ELF e_machine of the process (62: x86-64) */
    uint32_t nthreads;       /* pyf_core_threads */
    uint32_t nmappings;      /* pyf_core_mappings */
    uint32_t nfiles;         /* pyf_core_files */
    int64_t pid;             /* the process, 0 when unknown */
    int32_t signo;           /* the signal that ended it (11: SIGSEGV), 0 none */
    int32_t code;            /* its si_code, with PYF_CORE_SIGINFO */
    uint64_t signal_addr;    /* its si_addr for SIGSEGV, SIGBUS, SIGILL, SIGFPE
                                and SIGTRAP (the faulting address), else 0 */
    uint64_t signal_tid;     /* the thread that received it, 0 when unknown */
    uint64_t size;           /* bytes of the core (decompressed) */
    uint64_t missing_bytes;  /* what its segments claim past its end */
    char executable[256];    /* the executable as the core names it (or the
                                one given), "" when unknown */
    char command[256];       /* its command line as the core keeps it (an ELF
                                core: the first 80 bytes), "" when unknown */
    char problem[256];       /* the first of the partial flags' causes, in
                                words; "" when none */
} pyf_core_info;
#define PYF_CORE_INFO_SIZE_V0 848u

/* pyf_core_thread.flags */
#define PYF_CORE_THREAD_SIGNALLED 0x01u /* the thread that received the signal */
#define PYF_CORE_THREAD_REGS 0x02u      /* regs hold its registers */
#define PYF_CORE_THREAD_SYSCALL 0x04u   /* x86-64: regs[15] is the kernel's
                                           orig_rax (an ELF core; a minidump
                                           has none): the system call it was
                                           in, or -1 */
#define PYF_CORE_REGS_MAX 34u

typedef struct pyf_core_thread {
    uint64_t tid;            /* its OS thread id */
    int32_t signo;           /* its pending signal (pr_cursig), 0 none */
    uint32_t flags;          /* PYF_CORE_THREAD_* */
    uint32_t nregs;          /* words of regs used */
    uint32_t reserved;
    /* the machine's user_regs_struct, as NT_PRSTATUS keeps it: x86-64 27
     * words r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi
     * orig_rax rip cs eflags rsp ss fs_base gs_base ds es fs gs (a
     * minidump's context put in the same places, orig_rax 0 and not
     * flagged); aarch64 34: x0-x30 sp pc pstate */
    uint64_t regs[PYF_CORE_REGS_MAX];
    uint64_t reserved2[2];
} pyf_core_thread;
#define PYF_CORE_THREAD_SIZE 312u /* the stride of pyf_core_threads: frozen within 0.x */

/* pyf_core_file.status: the file read for what the core leaves out */
#define PYF_CORE_FILE_USED 0u       /* found; its build id is the core's */
#define PYF_CORE_FILE_UNCHECKED 1u  /* found and used; the core holds no build
                                       id for it (or it is not checked yet) */
#define PYF_CORE_FILE_MISSING 2u    /* not found (at its path under the sysroot) */
#define PYF_CORE_FILE_MISMATCH 3u   /* found with another build id: not read */
#define PYF_CORE_FILE_UNREADABLE 4u /* found, but not a regular file that reads */
/* pyf_core_file.flags */
#define PYF_CORE_FILE_EXECUTABLE 0x1u /* the process's executable */

typedef struct pyf_core_file {
    const char *path;         /* as the core names it (UTF-8 or not: bytes) */
    const char *open_path;    /* the file read for it, NULL when none */
    uint64_t start;           /* where its first mapping starts */
    uint32_t status;          /* PYF_CORE_FILE_* */
    uint32_t flags;           /* PYF_CORE_FILE_EXECUTABLE */
    uint8_t build_id[32];     /* the core's (its first build_id_size bytes) */
    uint8_t file_build_id[32]; /* the file's, when found */
    uint32_t build_id_size, file_build_id_size; /* 0: none */
} pyf_core_file;
#define PYF_CORE_FILE_SIZE 104u /* the stride of pyf_core_files: frozen within 0.x */

/* The compressions this build reads: bit (1u << PYF_CORE_ZSTD) and so on;
 * PYF_CORE_PLAIN's always. */
PYF_API uint32_t pyf_core_compressions(void);

/* Open the core file req->path (see above).  PYF_EIO when it cannot be
 * read (or, compressed, decompressed: no room in temp_dir), PYF_ECORRUPT
 * when it is no core or its headers cannot be read, PYF_ENOTSUP for a
 * compression this build lacks (the failure names the library's package)
 * or a core of a 32-bit or big-endian machine, PYF_EDEPTH when it would
 * decompress past max_size; the failure says which and why. */
PYF_API int pyf_core_open(const pyf_core_request *req, pyf_core **out,
                          pyf_failure *failure);
/* Accepts NULL. */
PYF_API void pyf_core_close(pyf_core *c);
/* What the core says of itself; PYF_EINVAL for a struct_size below
 * PYF_CORE_INFO_SIZE_V0. */
PYF_API int pyf_core_info_get(const pyf_core *c, pyf_core_info *out);
/* Its threads ([*n], PYF_CORE_THREAD_SIZE apart), the one that received
 * the signal first when known; owned by the core. */
PYF_API int pyf_core_threads(const pyf_core *c, const pyf_core_thread **out, uint32_t *n);
/* The process's mappings ([*n], in address order; path as the core names
 * the file, NULL for memory of no file; open_path the file read for it,
 * NULL when none: the input pyf_runtime_locate takes); owned by the core. */
PYF_API int pyf_core_mappings(const pyf_core *c, const pyf_mapping **out, uint32_t *n);
/* The files the core names ([*n]), each once, with what became of it.
 * Checked as it is first needed (a read in its mappings; the executable
 * and python files at open): call after the reads to know of every file. */
PYF_API int pyf_core_files(const pyf_core *c, const pyf_core_file **out, uint32_t *n);
/* A reader of the core's memory (PYF_READS_CORE; no write), valid until
 * pyf_core_close. */
PYF_API int pyf_core_reader(pyf_core *c, pyf_reader *out);
/* The native stack of a core's thread: each frame's pc (the innermost's,
 * or a signal frame's, where it is: PYF_NATIVE_ACTIVATION; a caller's, its
 * return address), its stack pointer (0 when unknown), and the function
 * and file it lies in as the file's symbols (and separate debug files,
 * found by build id) name them. */
#define PYF_NATIVE_ACTIVATION 0x1u
#define PYF_NATIVE_MAX_FRAMES 256u

typedef struct pyf_native_frame {
    uint64_t pc;
    uint64_t sp;
    uint64_t offset;          /* of pc in function, with function */
    const char *function;     /* its symbol, NULL when none */
    const char *module;       /* the file, as the core names it; NULL when none */
    uint32_t flags;           /* PYF_NATIVE_* */
    uint32_t reserved;
} pyf_native_frame;
#define PYF_NATIVE_FRAME_SIZE 48u /* the stride of pyf_core_native_frames: frozen within 0.x */

/* The native stack of the core's thread tid, innermost first, at most
 * PYF_NATIVE_MAX_FRAMES, unwound by libdw (elfutils) from the thread's
 * registers through the core's memory (the core reader's) and the call
 * frame information of the files the core names that the core reader
 * found and checked (pyf_core_files).  It ends where the unwind cannot go
 * on (a file missing, memory the core lacks).  The array and its strings
 * are the core's, valid until the next call or pyf_core_close.
 * PYF_ENOTSUP when this build has no libdw (the failure names its
 * package), or for a machine other than x86-64 and aarch64;
 * PYF_ENOTHREAD for a thread the core does not hold; PYF_EFAULT when not
 * even the first frame could be read. */
PYF_API int pyf_core_native_frames(pyf_core *c, uint64_t tid, const pyf_native_frame **out,
                                   uint32_t *n, pyf_failure *failure);
/* Open a target on the core: runtime_addr 0 means find it with
 * pyf_runtime_locate over the core's mappings (the .PyRuntime section of
 * its python files, then the cookie in its writable memory); the asyncio
 * table too, from the .AsyncioDebug section of its files.  The core must
 * outlive the target. */
PYF_API int pyf_target_open_core(pyf_core *c, uint64_t runtime_addr,
                                 const pyf_options *opts, pyf_target **out,
                                 pyf_failure *failure);

/* ==== Values ============================================================
 * What a frame holds: its arguments, locals, cells and free variables, each
 * decoded into a small tree of pyf_value nodes that a binding renders the
 * way repr() in the target would.  Reading is bounded (pyf_values_request)
 * and cycle-safe; an object that cannot be read or makes no sense becomes
 * one PYF_VALUE_UNREADABLE node saying why, and the rest still decodes.
 * Nothing is written to the target.  The target should be stopped: values
 * of a running thread may come from different moments. */

/* pyf_value.kind: what the object is.  Builtin types are recognised by
 * their type object (its address in the runtime, or name and tp_flags);
 * subclasses of builtins are PYF_VALUE_OTHER. */
#define PYF_VALUE_UNREADABLE 0 /* data: why, e.g. "bad type pointer 0x10" */
#define PYF_VALUE_OTHER 1      /* any other object: type_name, addr; with
                                  PYF_VALUES_ATTRS, children: its attributes
                                  (__dict__ or slots) as name, value pairs */
#define PYF_VALUE_NONE 2
#define PYF_VALUE_BOOL 3       /* number: 0 or 1 */
#define PYF_VALUE_INT 4        /* data: |value| as little-endian uint32
                                  digits of 30 bits (CPython's); number: sign
                                  -1, 0 or 1; length: digits in the object */
#define PYF_VALUE_FLOAT 5      /* real */
#define PYF_VALUE_COMPLEX 6    /* real, imag */
#define PYF_VALUE_STR 7        /* data: UTF-8 (lone surrogates encoded as
                                  "surrogatepass" would); length: chars */
#define PYF_VALUE_BYTES 8      /* data: the bytes; length: len() */
#define PYF_VALUE_BYTEARRAY 9  /* data, length as bytes */
#define PYF_VALUE_TUPLE 10     /* children: items; length: len() */
#define PYF_VALUE_LIST 11
#define PYF_VALUE_DICT 12      /* children: key, value, key, value ... in
                                  insertion order; length: len() */
#define PYF_VALUE_SET 13       /* children: items in table order */
#define PYF_VALUE_FROZENSET 14
#define PYF_VALUE_RANGE 15     /* children: start, stop, step (ints) */
#define PYF_VALUE_TYPE 16      /* data: the name repr() shows (module.qualname) */
#define PYF_VALUE_FUNCTION 17  /* data: __qualname__ */
#define PYF_VALUE_BUILTIN 18   /* data: __name__; children: __self__ when it
                                  is not a module (repr's "of X object") */
#define PYF_VALUE_METHOD 19    /* children: __func__, __self__ */
#define PYF_VALUE_MODULE 20    /* as repr() names it.  number 1 (its
                                  __spec__): data: spec.name; children:
                                  spec.origin (a str), spec.has_location (a
                                  bool): "from 'origin'" or "(origin)".
                                  number 0 (no spec): data: __name__;
                                  children: __file__ (a str) when it has
                                  one ("from '...'").  Cut (PYF_VALUE_
                                  TRUNCATED) where repr() shows a loader's
                                  repr, which is not read. */
#define PYF_VALUE_CELL 21      /* children: the contents, none when empty */
#define PYF_VALUE_CODE 22      /* data: co_name; children: co_filename (str);
                                  number: co_firstlineno */
#define PYF_VALUE_GENERATOR 23 /* data: __qualname__ */
#define PYF_VALUE_COROUTINE 24
#define PYF_VALUE_ASYNC_GENERATOR 25
#define PYF_VALUE_EXCEPTION 26 /* children: args (a tuple); for a builtin
                                  OSError (and its builtin subclasses)
                                  whose errno and strerror are set, also
                                  errno, strerror and, when set, filename
                                  and filename2: what its str() words
                                  ("[Errno N] strerror: 'filename' ->
                                  'filename2'") */
#define PYF_VALUE_ELLIPSIS 27
#define PYF_VALUE_NOTIMPLEMENTED 28

/* pyf_value.flags */
#define PYF_VALUE_TRUNCATED 0x01u /* data or children cut by a limit:
                                     length says how much there was */
#define PYF_VALUE_CYCLE 0x02u     /* an object already being decoded on the
                                     path to it: no children (repr's [...]) */
#define PYF_VALUE_TOO_DEEP 0x04u  /* max_depth reached: no children */
#define PYF_VALUE_BUDGET 0x08u    /* the call's object or byte budget ran out
                                     (with kind UNREADABLE) */

typedef struct pyf_value {
    uint64_t addr;          /* remote object; 0 for none */
    const char *type_name;  /* the type's name as repr() of an instance shows
                               it: tp_name of a static type, "module.qualname"
                               of a heap type (module left out for builtins);
                               UTF-8, never NULL ("" when unreadable) */
    const char *data;       /* kind-specific bytes (see kinds), NULL if none */
    uint64_t data_size;     /* bytes at data */
    uint64_t length;        /* the object's own length (see kinds) */
    double real, imag;
    int64_t number;
    uint32_t kind;          /* PYF_VALUE_* */
    uint32_t flags;         /* PYF_VALUE_* flags */
    uint32_t first_child;   /* index into pyf_values.values */
    uint32_t nchildren;
} pyf_value;
#define PYF_VALUE_SIZE 80u

/* pyf_local.kind, from co_localspluskinds */
#define PYF_LOCAL_ARG 1   /* a parameter (positional, keyword, *args, **kwargs) */
#define PYF_LOCAL_LOCAL 2
#define PYF_LOCAL_CELL 3  /* a local captured by an inner function */
#define PYF_LOCAL_FREE 4  /* a variable of an enclosing function */
#define PYF_LOCAL_STACK 5 /* an entry of the frame's value stack (PYF_VALUES_STACK);
                             name "" */
/* pyf_local.flags */
#define PYF_LOCAL_VARARGS 0x01u     /* *args */
#define PYF_LOCAL_VARKEYWORDS 0x02u /* **kwargs */
#define PYF_LOCAL_KWONLY 0x04u      /* keyword-only parameter */
#define PYF_LOCAL_UNBOUND 0x08u     /* NULL slot or empty cell: value is PYF_NO_VALUE */
#define PYF_LOCAL_HIDDEN 0x10u      /* CO_FAST_HIDDEN: an inlined comprehension's */
#define PYF_LOCAL_NO_STACK 0x20u    /* the one PYF_LOCAL_STACK entry of a frame whose
                                       value stack cannot be read: its value is a
                                       PYF_VALUE_UNREADABLE node saying why */
#define PYF_LOCAL_UNSAVED 0x40u     /* a PYF_LOCAL_STACK entry of a frame whose stack
                                       pointer is not saved (PYF_VALUES_STACK_UNSAVED):
                                       live or left over, unknown */
#define PYF_LOCAL_AWAITED 0x80u     /* the PYF_LOCAL_STACK entry a suspended generator or
                                       coroutine frame awaits (``yield from``, ``await``:
                                       what its cr_await / gi_yieldfrom gives) */
#define PYF_NO_VALUE 0xffffffffu

typedef struct pyf_local {
    const char *name;       /* UTF-8, never NULL */
    uint32_t kind;          /* PYF_LOCAL_* */
    uint32_t flags;
    uint32_t value;         /* index into pyf_values.values, or PYF_NO_VALUE.
                               A cell's value is its contents (the cell itself
                               is not shown); before MAKE_CELL ran, the raw
                               slot's value */
    uint32_t reserved;
} pyf_local;
#define PYF_LOCAL_SIZE 24u

/* pyf_values_request.flags */
#define PYF_VALUES_ATTRS 0x01u  /* other objects' attributes, one level down */
/* pyf_frame_locals: the frame's value stack too, the objects between its
 * locals and its stack pointer (bottom first), as PYF_LOCAL_STACK entries
 * after the locals (counted in nlocals), each decoded one level deep (a
 * bound method's __self__, no attributes), with three additions: a
 * method_descriptor (a builtin type's method, unbound) has data: its name;
 * a _thread.RLock has number: its owner's thread ident (0: none) and
 * length: its recursion count; an _asyncio.FutureIter (what ``await fut``
 * awaits) has number: the address of its future (0: none).  The stack
 * pointer is the frame's saved one
 * (3.14+ stackpointer, 3.11-3.13 stacktop), valid while the frame is
 * suspended in a call (every frame of a thread but its innermost; the
 * innermost one too while it calls C code, on 3.14+; 3.11-3.13 save it
 * only on a call of a Python function): the innermost frame of a thread
 * that runs bytecode shows its last saved stack.  3.11 leaves a running
 * frame's stacktop as it was: it is taken only from a frame suspended in a
 * call the eval loop made (prev_instr on the call's inline caches) or a
 * generator's suspended at a yield, else the frame's stack is not saved
 * (as 3.13's while it runs).  A stack pointer outside the frame's
 * co_stacksize gives one PYF_LOCAL_NO_STACK entry.  pyf_values.opcode and
 * oparg: the instruction the frame is at: the code unit at instr_ptr
 * (3.13+); on 3.11/3.12 the first code unit of the instruction whose unit
 * prev_instr points at (the last unit run: an inline cache entry after a
 * call), found by the opcodes' inline cache sizes; PYF_NO_VALUE when it
 * cannot be known (before the frame's first instruction, outside its code,
 * past an opcode of 3.12's instrumentation that hides the one it
 * replaces). */
#define PYF_VALUES_STACK 0x02u
/* With PYF_VALUES_STACK: the stack entries only, the locals left unread
 * (nlocals counts the stack entries). */
#define PYF_VALUES_STACK_ONLY 0x04u
/* With PYF_VALUES_STACK, on 3.11-3.13: a frame whose stack pointer is not
 * saved (the innermost frame of a thread running C code) gives all its
 * co_stacksize slots, bottom first, each flagged PYF_LOCAL_UNSAVED,
 * instead of the one PYF_LOCAL_NO_STACK entry.  On 3.11, whose running
 * frames keep the stack pointer of their last Python call (nothing marks
 * it stale), the flag says the frame runs: its slots are given so.  Its
 * live stack is a bottom part of them, how long is unknown; the slots
 * above hold what earlier instructions left there: objects that may since
 * have been freed, their memory reused (decoded like any target memory:
 * unreadable, or another object).  A caller may infer the live part from
 * what it knows (the instruction at instr_ptr, the thread's native state)
 * and must say the result is inferred. */
#define PYF_VALUES_STACK_UNSAVED 0x08u

#define PYF_DEFAULT_VALUE_STRING 200u    /* chars of a str, bytes of a bytes */
#define PYF_DEFAULT_VALUE_ITEMS 100u     /* items of a container */
#define PYF_DEFAULT_VALUE_DEPTH 6u       /* nesting below a local */
#define PYF_DEFAULT_VALUE_OBJECTS 10000u /* objects decoded per call */
#define PYF_DEFAULT_VALUE_BYTES (4u << 20) /* bytes read per call */

typedef struct pyf_values_request {
    uint32_t struct_size;   /* = sizeof(pyf_values_request) */
    uint32_t flags;         /* PYF_VALUES_* */
    uint32_t max_string;    /* 0 = default; each, 0 = its PYF_DEFAULT_VALUE_* */
    uint32_t max_items;
    uint32_t max_depth;
    uint32_t max_objects;
    uint64_t max_bytes;
} pyf_values_request;
#define PYF_VALUES_REQUEST_SIZE_V0 32u

typedef struct pyf_values {
    uint32_t nlocals;
    uint32_t nvalues;
    const pyf_local *locals;   /* co_localsplusnames order (arguments first) */
    const pyf_value *values;   /* pyf_value_read: values[0] is the object */
    uint32_t local_size, value_size; /* strides: PYF_LOCAL_SIZE, PYF_VALUE_SIZE */
    uint64_t code_addr;        /* the frame's code object (pyf_frame_locals) */
    uint64_t globals_addr;     /* the frame's globals dict, 0 if unknown */
    uint64_t objects_read;     /* what the call cost (bytes_read: max_bytes
                                  bounds the objects' reads; a frame, its code
                                  object and names are read besides) */
    uint64_t bytes_read;
    uint32_t opcode;           /* PYF_VALUES_STACK: the first code unit at the frame's */
    uint32_t oparg;            /* instr_ptr (opcode, oparg bytes); else PYF_NO_VALUE */
} pyf_values;

/* The locals of the interpreter frame at frame_addr (a pyf_frame's
 * frame_addr of a snapshot of the stopped target).  PYF_ECORRUPT when the
 * frame no longer runs a readable code object.  req may be NULL. */
PYF_API int pyf_frame_locals(pyf_target *t, uint64_t frame_addr,
                             const pyf_values_request *req, pyf_values **out);
/* One object (e.g. a value's addr, a globals dict) decoded as values[0];
 * nlocals is 0. */
PYF_API int pyf_value_read(pyf_target *t, uint64_t addr, const pyf_values_request *req,
                           pyf_values **out);
/* Accepts NULL. */
PYF_API void pyf_values_free(pyf_values *v);

/* The value trees of a snapshot's thread facts (PYF_SNAP_THREAD_FACTS):
 * each pyf_thread_facts.exc_value is the index of its exception's node in
 * *out's values (nlocals 0; objects_read and bytes_read what the facts
 * read).  *out is NULL and the call PYF_ENOTSUP for a snapshot without
 * the flag.  Owned by the snapshot (never pyf_values_free): valid until
 * pyf_snapshot_free. */
PYF_API int pyf_snapshot_fact_values(const pyf_snapshot *s, const pyf_values **out);

#ifdef __cplusplus
}
#endif
#endif /* PYFRAMES_H */
