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
_Static_assert(sizeof(pyf_thread) == PYF_THREAD_SIZE, "pyf_thread is frozen");
_Static_assert(sizeof(pyf_snapshot_copy) == PYF_SNAPSHOT_COPY_SIZE,
               "pyf_snapshot_copy is frozen");
_Static_assert(sizeof(pyf_interp) == PYF_INTERP_SIZE, "pyf_interp is frozen");
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
_Static_assert(PYF_LOCATE_REQUEST_SIZE_V0 == sizeof(pyf_locate_request),
               "pyf_locate_request");
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
/* The failure out-parameter of a call without a target: NULL (no detail
 * wanted) or a struct_size of at least PYF_FAILURE_SIZE_V0. */
bool pyf__failure_ok(const pyf_failure *f);
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
 * pyf_runtime_probe. */
int pyf__pid_find_runtime(int pid, const pyf_reader *r, uint64_t *found,
                          char *err, size_t errlen);
/* The .AsyncioDebug section of the first mapped python file (basename
 * containing "python", which includes _asyncio.cpython-*.so) that has
 * one.  PYF_ENOTSUP when none has. */
int pyf__pid_find_asyncio(int pid, uint64_t *found, char *err, size_t errlen);

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
        uint64_t co_version; /* not in the table: see offsets.c */
    } code;
    struct { uint64_t size, ob_type; } pyobject;
    struct { uint64_t size, tp_name, tp_flags; } type;
    struct { uint64_t size, ob_size, ob_sval; } bytes;
    struct {
        uint64_t size, state, length, asciiobject_size,
            compactunicodeobject_size;
    } unicode;
    struct { uint64_t size, gi_name, gi_iframe, gi_frame_state; } gen;
    /* used by the asyncio reader (tasks.c), which checks them itself */
    struct { uint64_t size, used, table, mask; } set;
    struct { uint64_t size, lv_tag, ob_digit; } lng;
    struct { uint64_t next; } llist;

    /* Semantics that differ by version, decided once at decode. */
    uint64_t tag_mask;        /* ~0 (3.13) or ~3 (3.14+) */
    int owner_thread;         /* FRAME_OWNED_BY_THREAD (0) */
    int owner_generator;      /* 1 */
    int owner_frame_object;   /* 2 */
    int owner_interpreter;    /* 3.14/3.15: 3; 3.13: -1 (none) */
    int owner_cstack;         /* 3.13: 3; 3.14: 4; 3.15: -1 (none) */
    unsigned str_kind_shift, str_compact_bit, str_ascii_bit; /* str state bits */
    bool has_code_generation; /* interp.code_object_generation exists (3.14+) */
    /* free-threaded 3.14+: frames run thread-local bytecode copies
     * (frame.tlbc_index into the code object's co_tlbc array) */
    bool has_tlbc;
} pyf__offsets;

/* Decode raw bytes read at _PyRuntime (len >= what the version needs) into
 * *off.  Returns PYF_OK, PYF_ENOTPY (bad cookie), PYF_EVERSION (unsupported
 * version, named in err) or PYF_EOFFSETS (a size/offset failed its bounds,
 * named in err). */
int pyf__offsets_decode(const uint8_t *raw, size_t len, pyf__offsets *off,
                        char *err, size_t errlen);

/* "3.15.2", "3.15.0b4": the one place the library words a PY_VERSION_HEX. */
void pyf__version_text(uint64_t hexversion, char *buf, size_t len);
/* PYF_EVERSION, with "unsupported CPython 3.11.2 (pyframes reads CPython
 * 3.13, 3.14 and 3.15)" in err: the one wording of a refused version. */
int pyf__version_refused(uint64_t hexversion, char *err, size_t errlen);

/* The public pyf_python_info of a decoded table at addr. */
void pyf__python_info_fill(const pyf__offsets *o, uint64_t addr, pyf_python_info *out);

/* Size in bytes of the table for 3.<minor>, 0 when unsupported. */
size_t pyf__offsets_table_size(int minor);

/* Read everything needed to validate the table at addr and decode it.
 * Shared by target open and pyf_runtime_probe.  stats may be NULL. */
int pyf__offsets_load(const pyf_reader *r, uint64_t addr, pyf__offsets *off,
                      pyf_stats *stats, pyf_failure *f);

/* ==== the address map (addrmap.c) =======================================
 * Target address -> value.  Used as a set for cycle detection, as the
 * code-object cache's index and as the snapshot's name table.  Zero-initialise
 * before use; key 0 is never stored. */

typedef struct pyf__addrmap_slot {
    uint64_t key, value;
} pyf__addrmap_slot;

typedef struct pyf__addrmap {
    pyf__addrmap_slot *slots;
    uint32_t cap, n;
} pyf__addrmap;

/* The value of key, or NULL. */
uint64_t *pyf__addrmap_get(const pyf__addrmap *m, uint64_t key);
/* The value of key, inserted as 0 (*added set) when absent; NULL when out of
 * memory or key is 0.  The pointer is valid until the next put or remove. */
uint64_t *pyf__addrmap_put(pyf__addrmap *m, uint64_t key, bool *added);
void pyf__addrmap_remove(pyf__addrmap *m, uint64_t key);
void pyf__addrmap_free(pyf__addrmap *m);

/* The map as a set: add a (non-zero) address; *dup when it was there.
 * False only when out of memory. */
typedef pyf__addrmap pyf__addrset;
bool pyf__addrset_add(pyf__addrmap *s, uint64_t a, bool *dup);
#define pyf__addrset_free pyf__addrmap_free

/* ==== arenas (arena.c) ====================================================
 * Bump allocation, 8-aligned, freed all at once.  Zero-initialise. */
typedef struct pyf__arena_block pyf__arena_block;
typedef struct pyf__arena {
    pyf__arena_block *head;
    uint64_t bytes;
} pyf__arena;
void *pyf__arena_alloc(pyf__arena *a, size_t len);
char *pyf__arena_dup(pyf__arena *a, const char *str);
void pyf__arena_free(pyf__arena *a);

/* Room for need elements of elem bytes in the heap array *v of *cap
 * (doubling); false when out of memory or past 2^31 elements.  Inline for
 * the common case, called per frame. */
bool pyf__grow_slow(void **v, uint32_t *cap, uint32_t need, size_t elem);
static inline bool pyf__grow(void **v, uint32_t *cap, uint32_t need, size_t elem)
{
    return need <= *cap || pyf__grow_slow(v, cap, need, elem);
}
/* The capacity pyf__grow would give (0: too large). */
uint32_t pyf__grown_cap(uint32_t cap, uint32_t need);

/* ==== the code-object cache (code.c) ===================================== */

typedef struct pyf__code {
    uint64_t addr;           /* remote code object; 0 = empty slot */
    uint64_t serial;         /* this decode, unique within the target */
    /* identity: what the entry was decoded from */
    uint64_t qualname_ptr, filename_ptr, linetable_ptr;
    int32_t firstlineno;
    uint32_t version;        /* co_version: which code object it was */
    uint64_t units;          /* bytecode length in code units (ob_size) */
    uint32_t flags;          /* PYF_FRAME_NAME_TRUNCATED | PYF_FRAME_NO_LOCATION */
    char *qualname;          /* UTF-8, heap */
    char *filename;          /* UTF-8, heap */
    uint8_t *linetable;      /* heap copy, NULL when unreadable */
    uint32_t linetable_len;
    bool no_lines;           /* table read, but no entry has a line: a shim */
    /* free-threaded 3.14+: the co_tlbc array as read in snapshot tlbc_epoch
     * (never trusted across snapshots: it grows and fills without notice) */
    uint64_t tlbc_epoch, tlbc_arr;
    int64_t tlbc_size;       /* entries, 0 when unreadable or implausible */
    uint64_t checked_epoch;  /* snapshot epoch of the last identity check */
} pyf__code;

typedef struct pyf__code_cache {
    pyf__addrmap index;      /* code address -> (uintptr_t) pyf__code *, heap */
    uint32_t count;
    uint64_t bytes;          /* heap bytes held by entries */
    uint64_t clears;         /* times the cache was emptied */
    pyf__code *last;         /* the entry found last (consecutive frames often
                                run the same code) */
} pyf__code_cache;

/* ==== the frame table (table.c) ===========================================
 * See "The frame table" in pyframes.h.  Records are interned by (the code
 * decode's serial, or the address of an unreadable code object; the
 * instruction; the frame's flags), keys by (frame address, record). */

typedef struct pyf__tmap_slot {
    uint64_t a, b;
    uint32_t c, v;           /* v: the index, UINT32_MAX when the slot is empty */
} pyf__tmap_slot;

typedef struct pyf__tmap {
    pyf__tmap_slot *slots;
    uint32_t cap, n;
} pyf__tmap;

/* A thread of the last snapshot: its frames' keys are
 * prev_keys[first, first + n). */
typedef struct pyf__prev_thread {
    uint64_t tstate_addr;
    uint32_t first, n;
} pyf__prev_thread;

typedef struct pyf__rec_key {
    uint64_t a;
    uint32_t c;
} pyf__rec_key;

typedef struct pyf__table {
    uint32_t refs;           /* the target's, and one per snapshot */
    uint64_t id;
    uint64_t code_clears;    /* pyf__code_cache.clears when it was made */
    pyf_record *records;
    pyf__rec_key *rec_keys;  /* per record: how it is interned */
    uint32_t nrecords, cap_records, cap_rec_keys;
    pyf_frame_key *keys;
    uint32_t nkeys, cap_keys;
    void **retired;          /* arrays replaced while a snapshot held them */
    uint32_t nretired, cap_retired;
    pyf__tmap rec_index, key_index;
    pyf__addrmap names;      /* code serial -> (uintptr_t) const char *[2] */
    pyf__arena strings;
} pyf__table;

/* A table with one reference (NULL when out of memory). */
pyf__table *pyf__table_new(uint64_t id, uint64_t code_clears);
void pyf__table_ref(pyf__table *tb);
void pyf__table_unref(pyf__table *tb); /* accepts NULL */
/* The record of a frame running code (NULL: unreadable, shown as "???") at
 * instruction instr with the frame's own flags (PYF_FRAME_GENERATOR,
 * PYF_FRAME_ENTRY_FROM_C); its location is decoded when it is new. */
int pyf__table_record(pyf__table *tb, uint64_t code_addr, const pyf__code *code,
                      int64_t instr, uint32_t flags, uint32_t *out);
/* The record like rec with add_flags set too. */
int pyf__table_record_with(pyf__table *tb, uint32_t rec, uint32_t add_flags,
                           uint32_t *out);
int pyf__table_key(pyf__table *tb, uint64_t frame_addr, uint32_t rec, uint32_t *out);
/* set in pyf__rec_key.c beside the flags: the record of an unreadable code object */
#define PYF__CODE_UNREADABLE_KEY 0x80000000u
/* Whether key is the key pyf__table_record + pyf__table_key would give
 * (a cheap check of a guess, made per frame: inline). */
static inline bool pyf__table_key_is(const pyf__table *tb, uint32_t key, uint64_t frame_addr,
                                     uint64_t code_addr, const pyf__code *code,
                                     int64_t instr, uint32_t flags)
{
    if (key >= tb->nkeys || tb->keys[key].frame_addr != frame_addr)
        return false;
    uint32_t rec = tb->keys[key].record;
    const pyf__rec_key *k = &tb->rec_keys[rec];
    if (code != NULL)
        return k->a == code->serial && k->c == flags && tb->records[rec].instr == instr;
    return k->a == code_addr && k->c == (flags | PYF__CODE_UNREADABLE_KEY) &&
           tb->records[rec].instr == INT64_MIN;
}
/* Whether key is the key of frame_addr with the record like rec plus
 * add_flags (pyf__table_record_with). */
bool pyf__table_key_is_with(const pyf__table *tb, uint32_t key, uint64_t frame_addr,
                            uint32_t rec, uint32_t add_flags);

/* ==== copies of a thread's data-stack chunks (frames.c) ================== */
typedef struct pyf__chunk {
    uint64_t addr, size;     /* the chunk in the target */
    uint64_t lo;             /* the first address held (addr, or more) */
    uint64_t cap;            /* bytes of data */
    uint8_t *data;           /* our copy, when mem is not a prefetch view */
    const uint8_t *mem;      /* the bytes from lo: data or a prefetched range */
    /* NULL, or more copies of the same bytes made right after mem: a
     * running process's newest chunk (PYF__COPIES in all) */
    const uint8_t *again[2];
    uint8_t *again_data[2];  /* our buffers for again, when not views */
    uint64_t again_cap[2];
} pyf__chunk;

/* Copies of a running process's newest data-stack chunk, made back to back:
 * its frames must agree in all of them.  A copy made while the thread
 * returned and called again shows the new callee over the old caller; two
 * copies can still agree when the thread switched back and forth in step
 * with them (a tight loop alternating two call chains), three very rarely. */
#define PYF__COPIES 3

typedef struct pyf__chunk_list {
    pyf__chunk *v;           /* [n] in use; buffers of [n, cap) kept for reuse */
    uint32_t n, cap;
    bool partial;            /* not every chunk copied: copy them on a miss */
} pyf__chunk_list;
void pyf__chunks_free(pyf__chunk_list *cl);

/* ==== the 3.15 frame cache (cache.c) ===================================== */
typedef struct pyf__cache_entry {
    uint64_t tstate_addr, thread_id;
    uint64_t seq;            /* last_profiled_frame_seq once the anchor was ours */
    uint64_t table_id;       /* the table its keys index */
    uint32_t *keys;          /* the stack from the anchor down, innermost first */
    uint32_t n;
    bool seen;               /* its thread was in the current snapshot */
} pyf__cache_entry;

typedef struct pyf__frame_cache {
    uint32_t mode;           /* PYF_CACHE_* in effect */
    pyf__cache_entry *v;
    uint32_t n, cap;
    uint64_t nkeys;          /* keys held by all entries */
    /* the thread being walked */
    pyf__cache_entry *cur;
    uint64_t tstate_addr, anchor, seq;
    uint32_t walked;         /* frames delivered before the anchor was reached */
    uint32_t max_depth;      /* the walk's frame limit: no entry takes it past */
    uint64_t calls_before;   /* read_calls when the thread's walk began */
    int outcome;             /* 0 miss, 1 full hit, 2 partial hit */
    /* the keys of a walk made to store an entry */
    uint32_t *tmp;
    uint32_t ntmp, cap_tmp;
} pyf__frame_cache;

/* ==== prefetch (read.c) ================================================== */
typedef struct pyf__prefetch {
    /* the ranges read at the start of this snapshot, and their results */
    pyf_iovec *iov;
    int *status;             /* 0: not served yet */
    uint32_t n, cap_iov, cap_status;
    uint8_t *buf;
    uint64_t buf_cap;
    /* the ranges this snapshot reads: the next one's prefetch */
    struct pyf__range { uint64_t addr, len; } *plan;
    uint32_t nplan, cap_plan;
    uint64_t plan_bytes;
    bool active;             /* within a snapshot */
} pyf__prefetch;
void pyf__prefetch_begin(pyf_target *t);
void pyf__prefetch_end(pyf_target *t);
/* Reads from now on bypass the prefetched copies (they are of the start of
 * the snapshot) until pyf__prefetch_resume with what this returned. */
uint32_t pyf__prefetch_pause(pyf_target *t);
void pyf__prefetch_resume(pyf_target *t, uint32_t n);
void pyf__prefetch_free(pyf__prefetch *p);
/* The bytes of [addr, addr+len) where the prefetch already holds them, without
 * copying (the range then counts as read, and is planned for the next
 * snapshot); NULL otherwise.  Valid until the snapshot ends. */
const uint8_t *pyf__read_view(pyf_target *t, uint64_t addr, size_t len);

/* ==== asyncio tasks (tasks.c) ============================================ */
typedef struct pyf__asyncio {
    uint64_t addr;           /* the table, 0 until located */
    struct {
        uint64_t size, name, awaited_by, is_task, awaited_by_is_set, coro, node;
        uint64_t state;      /* fut_state, PYF__ABSENT when the layout does not tell */
    } task;
    struct { uint64_t size, tasks_head; } interp;
    struct { uint64_t size, running_loop, running_task, tasks_head; } thread;
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

/* ==== the target ========================================================= */

struct pyf_target {
    pyf_reader reader;
    bool owns_pid_reader;
    int pid;                 /* -1 for a caller-supplied reader */
    uint64_t runtime_addr;
    pyf__offsets off;
    pyf_options opts;
    pyf_stats stats;
    pyf_failure fail;        /* the last failure (pyf_target_failure) */

    pyf__code_cache codes;
    pyf__code scratch;       /* a decode that hit read errors: not cached */
    uint64_t code_serial;    /* the last pyf__code.serial given */
    pyf__table *table;       /* NULL until the next snapshot makes one */
    pyf__chunk_list chunks;  /* the walk's chunk copies, buffers reused */
    pyf__prefetch prefetch;
    pyf__frame_cache cache;
    uint64_t table_ids;      /* the last table id given */
    /* the frame keys of the last snapshot (of table prev_table) and where
     * each thread state's frames were in them: the first guess for a frame
     * is the key at the same depth of the same thread last time */
    uint32_t *prev_keys;
    uint32_t prev_n, prev_cap;
    uint64_t prev_table;
    pyf__prev_thread *prev_threads;
    uint32_t prev_nthreads, prev_cap_threads;
    bool torn;               /* the last walk saw a stack changing under it */
    bool torn_moved;         /* ... in copies that differ: never steady */
    uint64_t torn_at;        /* the frame that said so */
    uint64_t epoch;          /* incremented per snapshot */
    uint64_t tlbc_failures;  /* failed reads of thread-local bytecode arrays:
                                a frame shows no location, no walk fails */
    uint64_t prev_epoch;     /* the epoch of the snapshot prev_keys are of */
    void *spare_snap;        /* a freed snapshot's arrays, for the next one */
    uint64_t code_generation;/* last interp code_object_generation seen */
    bool code_generation_known;
    uint64_t code_type_addr; /* address of PyCode_Type once confirmed */
    uint64_t not_code_type_addr; /* last type found not to be "code" */
    pyf__asyncio asyncio;
};

/* ==== reads (read.c) ======================================================
 * All target reads go through these: they count, and on failure write a
 * detail "reading WHAT at 0xADDR (N bytes): reason" into t->err. */
int pyf__read(pyf_target *t, uint64_t addr, void *dst, size_t len,
              const char *what);
/* Several ranges at once (one reader call when the reader has readv).
 * status[i] receives each range's result.  No detail is written. */
int pyf__readv(pyf_target *t, const pyf_iovec *iov, size_t n, int *status);
/* Record a failed read in f: its facts (what, address, length, the reader's
 * own message) and, for C callers, one line "reading WHAT at 0xADDR (N
 * bytes): reason [reader: its own message]".  Returns rc. */
int pyf__read_failed(pyf_failure *f, const pyf_reader *r, int rc,
                     const char *what, uint64_t addr, size_t len);
/* Record a failure that is not a read (detail formatted).  Returns code. */
int pyf__failure_set(pyf_failure *f, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Set t->err and return code. */
int pyf__fail(pyf_target *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A read without failure detail, served from the prefetch when it holds
 * the range (the walk's speculative reads). */
int pyf__read_quiet(pyf_target *t, uint64_t addr, void *dst, size_t len);
/* A read made now, never served from the prefetch (planned for the next
 * one like any other). */
int pyf__read_fresh(pyf_target *t, uint64_t addr, void *dst, size_t len);
/* [addr, addr+len) copied PYF__COPIES times, back to back in one reader
 * call when the reader batches, into dst[0], dst[1], ... (planned as often
 * for the next snapshot: its prefetch makes every copy in its one call). */
int pyf__read_copies(pyf_target *t, uint64_t addr, void *const *dst, size_t len);
/* A reader's raw call with counting only (used by pyf__offsets_load). */
int pyf__raw_read(const pyf_reader *r, pyf_stats *stats, uint64_t addr,
                  void *dst, size_t len);

static inline uint64_t pyf__ld64(const uint8_t *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return v;
}
static inline uint32_t pyf__ld32(const uint8_t *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

/* ==== strings (strings.c) ================================================= */

/* Decode the str object at addr into a heap UTF-8 string (*out, NUL
 * terminated) capped at max_bytes.  *truncated is set when capped.  On
 * failure *out is NULL and the code is returned (detail in t->err). */
int pyf__read_str(pyf_target *t, uint64_t addr, uint32_t max_bytes,
                  char **out, bool *truncated, const char *what);
/* Decode a str from an already-read prefix (header + some data) when it
 * holds the whole string; returns PYF__EMORE when more must be read. */
int pyf__decode_str(const pyf__offsets *o, const uint8_t *buf, size_t have,
                    uint32_t max_bytes, char **out, bool *truncated,
                    size_t *need);

/* ==== code objects and line tables (code.c) ============================== */

void pyf__code_cache_clear(pyf__code_cache *c);
void pyf__code_scratch_free(pyf_target *t);
/* Find or decode the code object at addr.  Never fails hard: an unreadable
 * code object yields NULL with *soft_err set (the frame shows "???");
 * PYF__ESTALE: a running process freed or replaced the code object while
 * it was read (the frame is gone: read the thread again).  frame_addr is
 * the frame that runs it (0: none), read again with the code object to
 * check a running process's decode. */
const pyf__code *pyf__code_get(pyf_target *t, uint64_t addr, uint64_t frame_addr,
                               int *soft_err);

typedef struct pyf__location {
    int32_t line, end_line, column, end_column;
} pyf__location;
/* Decode the location of code unit index addrq.  Returns false when the
 * table is missing or corrupt (loc is then all -1). */
/* False only for a non-empty table whose every entry is "no location". */
bool pyf__linetable_has_lines(const uint8_t *tab, uint32_t len);
bool pyf__linetable_lookup(const uint8_t *tab, uint32_t len, int32_t firstlineno,
                           int64_t addrq, pyf__location *loc);

/* ==== walking (frames.c, threads.c) ===================================== */

/* The pyf_frame of a key of the table (which must hold it). */
static inline pyf_frame pyf__table_frame(const pyf__table *tb, uint32_t key)
{
    const pyf_record *r = &tb->records[tb->keys[key].record];
    return (pyf_frame){tb->keys[key].frame_addr, r->code_addr, r->function, r->filename,
                       r->line, r->end_line, r->column, r->end_column, r->flags, 0};
}

/* Where the walk delivers frames (implemented by snapshot.c). */
typedef struct pyf__sink {
    void *ctx;
    /* code may be NULL (unreadable code object: show "???"); instr is the
     * code-unit index of the instruction; flags the frame's own
     * (PYF_FRAME_GENERATOR) */
    int (*frame)(void *ctx, uint64_t frame_addr, uint64_t code_addr,
                 const pyf__code *code, int64_t instr, uint32_t flags);
    /* the most recently delivered frame was entered from C: entry_addr is
     * the entry frame (on the C stack) below it, 0 when unknown */
    int (*mark_entry)(void *ctx, uint64_t entry_addr);
    /* the frame just delivered is the walk's stop_at: 1 when the sink took
     * the rest of the chain from the cache (the walk ends), 0 to walk on,
     * or a PYF_E* code */
    int (*at_anchor)(void *ctx);
    /* forget the current thread's frames (a walk to be made again) */
    void (*rollback)(void *ctx);
    /* whether the frame just delivered has a source location */
    bool (*located)(void *ctx);
    /* a thread starts: its header is filled in by the walker */
    int (*thread)(void *ctx, const pyf_thread *th);
    /* the current thread ended with rc (why in f when rc != 0); more
     * frames were counted past keep_frames */
    int (*thread_end)(void *ctx, int rc, const pyf_failure *f, uint32_t more);
    int (*interp)(void *ctx, uint64_t addr, int64_t id);
    /* reverse the order of the frames from index first to the last */
    void (*reverse)(void *ctx, uint32_t first);
} pyf__sink;

typedef struct pyf__thread_walk {
    uint64_t tstate_addr;
    uint64_t current_frame;
    uint64_t base_frame;      /* 0 when the version has none */
    uint64_t datastack_chunk;
    uint32_t max_depth;
    uint32_t keep_frames;     /* 0, or frames delivered before counting */
    /* an already-read copy of target memory that may hold frames (the
     * thread state: 3.15 embeds the base frame right after it) */
    const uint8_t *extra;
    uint64_t extra_addr, extra_len;
    /* the frame cache (cache.c): stop_at is a frame at which the sink's
     * at_anchor decides whether the rest comes from the cache; chunks says
     * what is copied first (the rest is copied when a frame is not found) */
    uint64_t stop_at;
    enum { PYF__CHUNKS_ALL, PYF__CHUNKS_NONE, PYF__CHUNKS_FROM_STOP } chunks;
    bool live;               /* the process runs while it is read */
} pyf__thread_walk;

/* The walk's fields that come from the thread state copied in buf:
 * current frame, base frame (3.15), newest data-stack chunk. */
static inline void pyf__walk_from_tstate(const pyf__offsets *o, pyf__thread_walk *w,
                                         const uint8_t *buf)
{
    w->current_frame = pyf__ld64(buf + o->tstate.current_frame);
    w->base_frame = o->tstate.base_frame != PYF__ABSENT
                        ? pyf__ld64(buf + o->tstate.base_frame) : 0;
    w->datastack_chunk = pyf__ld64(buf + o->tstate.datastack_chunk);
}

/* Index in code units of the instruction at ip, for bytecode at base; -1
 * just before the first instruction, INT64_MAX when ip is nowhere near. */
static inline int64_t pyf__code_index(uint64_t ip, uint64_t base)
{
    if (ip < base)
        return base - ip <= 2 ? -1 : INT64_MAX;
    uint64_t d = (ip - base) / 2;
    return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* The instruction index (code units) of a frame f (its copy) running
 * decoded code at exe with instruction pointer ip: against the main
 * bytecode (co_code_adaptive), or on free-threaded 3.14+ against the
 * thread-local copy its tlbc_index names (read afresh each snapshot; a
 * bad index, NULL slot or failed read falls back to the main copy, and an
 * ip outside the copy used gives INT64_MAX: no location, never a wrong
 * line).  (code.c) */
int64_t pyf__frame_instr(pyf_target *t, const uint8_t *f, uint64_t exe,
                         const pyf__code *code, uint64_t ip);

/* Walk one thread's frame chain.  Returns 0 when the chain ended normally
 * (and, on 3.15, at base_frame) or the sink took the rest at stop_at, else
 * the reason (detail in t->err).  *more is the number of frames counted
 * past w->keep_frames. */
int pyf__walk_frames(pyf_target *t, const pyf__thread_walk *w,
                     const pyf__sink *sink, uint32_t *more);

/* The spare snapshot pyf_snapshot_take_copy keeps (snapshot.c). */
void pyf__snapshot_spare_free(pyf_target *t);

/* Walk interpreters and threads (threads.c). */
int pyf__walk_all(pyf_target *t, const pyf_snapshot_request *req,
                  const pyf__sink *sink);

/* The 3.15 frame cache (cache.c). */
void pyf__cache_clear(pyf__frame_cache *fc);
/* Whether a thread is walked with the anchor protocol (3.15, PYF_CACHE_ON). */
bool pyf__cache_protocol(const pyf_target *t);
/* Walk one thread with the protocol; tsbuf is its thread state as read. */
int pyf__cache_walk(pyf_target *t, pyf__thread_walk *w, const uint8_t *tsbuf,
                    uint64_t thread_id, const pyf__sink *sink, uint32_t *more);
/* At the anchor (the sink's at_anchor): 1 and the cached keys of the
 * frames that follow the anchor (*entry_from_c: the anchor itself was
 * entered from C) when the cache holds the rest of the stack, 0 when not. */
int pyf__cache_continue(pyf_target *t, const uint32_t **keys, uint32_t *n,
                        bool *entry_from_c);
/* After a snapshot of every thread: entries of threads not seen are dropped. */
void pyf__cache_sweep(pyf_target *t);

/* asyncio tasks (tasks.c). */
/* Read every task.  Coroutine frames go to sink->frame (the snapshot
 * appends them; *nframes is its count of frames).  Strings and failures
 * are allocated in arena.  Only PYF_ENOMEM fails the call: the rest is
 * data (ts->status, list_error, each task's error). */
int pyf__tasks_read(pyf_target *t, const pyf__sink *sink, const uint32_t *nframes,
                    pyf__arena *arena, pyf__tasks *ts);

#endif /* PYFRAMES_INTERNAL_H */
