/*
 * offsets.h - _Py_DebugOffsets and the asyncio debug offsets, decoded and
 * checked (offsets.c). Part of internal.h, which every source file includes
 * (it includes this).
 */
#ifndef PYFRAMES_OFFSETS_H
#define PYFRAMES_OFFSETS_H

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
        /* the thread facts' (thread_facts.c): sys.modules, the GIL
         * (gil_locked and gil_holder are offsets into the interpreter
         * state, inside its own _gil at gil_runtime_state; gil_enabled an
         * offset into the _gil struct itself; ceval_gil the pointer to the
         * GIL in use) */
        uint64_t imports_modules, sysdict, ceval_gil, gil_runtime_state,
            gil_enabled, gil_locked, gil_holder;
    } interp;
    struct {
        uint64_t size, prev, next, interp, current_frame, base_frame,
            last_profiled_frame, last_profiled_frame_seq, thread_id,
            native_thread_id, datastack_chunk, status, holds_gil;
        /* 3.15 only (the thread facts') */
        uint64_t gil_requested, current_exception, exc_state;
    } tstate;
    /* 3.15 only; no size in the table: 16 (exc_value, previous_item) */
    struct { uint64_t size, exc_value; } err_stackitem;
    struct {
        uint64_t size, previous, executable, instr_ptr, localsplus, owner,
            stackpointer, tlbc_index;
        uint64_t stacktop;   /* 3.13's int: not in the table, see offsets.c */
    } frame;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno,
            co_code_adaptive, co_tlbc;
        uint64_t argcount, localsplusnames, localspluskinds; /* the values' */
        uint64_t co_version; /* not in the table: see offsets.c */
        uint64_t co_flags;   /* not in the table: see offsets.c */
        uint64_t nlocalsplus; /* not in the table: see offsets.c */
    } code;
    struct { uint64_t size, ob_type; } pyobject;
    struct { uint64_t size, tp_name, tp_flags; } type;
    struct { uint64_t size, ob_size, ob_sval; } bytes;
    struct {
        uint64_t size, state, length, asciiobject_size,
            compactunicodeobject_size;
    } unicode;
    /* the value decoder's (value_core.c, objects.c, values.c) */
    struct { uint64_t size, ob_item, ob_size; } tuple, list;
    struct { uint64_t size, ma_keys, ma_values; } dict;
    struct { uint64_t size, ob_fval; } flt;
    /* the rest serve the asyncio reader (tasks.c), the int layout the
     * value decoder too */
    struct { uint64_t size, gi_name, gi_iframe, gi_frame_state; } gen;
    struct { uint64_t size, used, table, mask; } set;
    struct { uint64_t size, lv_tag, ob_digit; } lng;
    /* llist_node has no size in the table: 16 (next, prev) where it exists */
    struct { uint64_t size, next; } llist;

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
    /* generator and coroutine frame states (gi_frame_state; renumbered in
     * 3.15): suspended in an await (yield from), and finished; and where a
     * suspended await keeps what it awaits: stackpointer - await_back
     * (the top of the value stack in 3.14, the slot under it in 3.15) */
    int gen_yield_from, gen_cleared, gen_completed;
    uint64_t await_back;
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

/* The most the value decoder copies of an object's fixed part (an int, a
 * tuple, a list, a dict, a float, a bytes header) at each level of its
 * recursion: larger layouts are refused. */
#define PYF__VALUE_HEAD_MAX 512u
/* The fields the value decoder relies on, checked when it is first used:
 * PYF_OK, or PYF_EOFFSETS with the field named in err. */
int pyf__offsets_check_values(const pyf__offsets *o, char *err, size_t errlen);

/* The fields the thread facts rely on (thread_facts.c), checked at their
 * first use: PYF_OK, or PYF_EOFFSETS with the field named in err. */
int pyf__offsets_check_facts(const pyf__offsets *o, char *err, size_t errlen);

/* Size in bytes of the table for 3.<minor>, 0 when unsupported. */
size_t pyf__offsets_table_size(int minor);

/* Read everything needed to validate the table at addr and decode it.
 * Shared by target open and pyf_runtime_probe.  stats may be NULL. */
int pyf__offsets_load(const pyf_reader *r, uint64_t addr, pyf__offsets *off,
                      pyf_stats *stats, pyf_failure *f);

/* ---- the asyncio debug offsets (_AsyncioDebug, 3.14+) ----
 * 13 uint64_t, no cookie, no version: checked like _Py_DebugOffsets (the
 * same machinery, offsets.c), and against it. */
#define PYF__ASYNCIO_TABLE_SIZE 104u
/* the most the asyncio reader copies of one object (a task, a coroutine
 * with its frame, a set's header): offsets past it are refused */
#define PYF__OBJECT_READ_MAX 4096u

typedef struct pyf__asyncio_offsets {
    struct {
        uint64_t size, name, awaited_by, is_task, awaited_by_is_set, coro, node;
        uint64_t state;      /* fut_state, PYF__ABSENT when the layout does not tell */
    } task;
    struct { uint64_t size, tasks_head; } interp;
    struct { uint64_t size, running_loop, running_task, tasks_head; } thread;
} pyf__asyncio_offsets;

/* Decode and check the table's raw bytes against the decoded
 * _Py_DebugOffsets o (which must have the generator, set, int and list
 * node layouts: 3.14+).  PYF_OK, or PYF_EOFFSETS with the field named in
 * err. */
int pyf__asyncio_offsets_decode(const uint8_t *raw, const pyf__offsets *o,
                                pyf__asyncio_offsets *a, char *err, size_t errlen);

#endif /* PYFRAMES_OFFSETS_H */
