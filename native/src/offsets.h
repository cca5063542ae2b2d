/*
 * offsets.h - _Py_DebugOffsets and the asyncio debug offsets, decoded and
 * checked (offsets.c).
 */
#ifndef PYFRAMES_OFFSETS_H
#define PYFRAMES_OFFSETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "linetable.h"

/* ==== the layout of a CPython: _Py_DebugOffsets or a built-in table
 * (offsets.c) ==============================================================
 * CPython 3.13+ publish their layout in _Py_DebugOffsets, at the start of
 * _PyRuntime; 3.11 and 3.12 publish none, and the library carries a table
 * per minor version generated from their own headers (layout_tables.h).
 * Either source fills one pyf__offsets; every difference between versions
 * that is not a number in it is one of the named properties below, decided
 * in offsets.c and nowhere else. */

#define PYF__COOKIE "xdebugpy"
#define PYF__RAW_OFFSETS_MAX 1024 /* bytes read at _PyRuntime for decoding */

/* Normalised view: every field the walker uses, for every supported
 * version.  Fields a version lacks are set to PYF__ABSENT. */
#define PYF__ABSENT UINT64_MAX

/* One number of a built-in table (layout_tables.h). */
typedef struct pyf__builtin_field {
    const char *name;
    uint64_t value;
} pyf__builtin_field;

typedef struct pyf__offsets {
    uint64_t hexversion;
    uint32_t major, minor, micro, level, serial;
    bool free_threaded;
    /* A built-in table chosen by the runtime's shape: only the minor
     * version is known until the target reads sys.hexversion (target.c). */
    bool version_pending;
    /* ... and where that shape is shared (3.8-3.10 keep the interpreter on
     * the heap): the other minors whose tables read it the same way, bit
     * 3.<n> set, to be tried when this one's version read fails. */
    uint32_t version_others;

    struct {
        uint64_t size, finalizing, interpreters_head;
        /* 3.11/3.12 (built-in tables): the main interpreter's pointer and
         * where the runtime embeds it; 3.11: the one GIL, in the runtime */
        uint64_t interpreters_main, main_interpreter, gil_locked, gil_holder;
        /* 3.8-3.10: the thread state holding the GIL */
        uint64_t tstate_current;
    } runtime;
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
        /* 3.11/3.12: the _PyCFrame the current frame is reached through,
         * and the one the thread state embeds; 3.11's exception being
         * raised (type, value, traceback) */
        uint64_t cframe, root_cframe, curexc_type, curexc_value, curexc_traceback;
        /* 3.8-3.10: the newest frame object (frame_model HEAP) */
        uint64_t frame;
    } tstate;
    /* 3.11/3.12: _PyCFrame, on the C stack of each eval loop */
    struct { uint64_t size, current_frame, previous; } cframe;
    /* 3.15 only; no size in the table: 16 (exc_value, previous_item) */
    struct { uint64_t size, exc_value; } err_stackitem;
    struct {
        uint64_t size, previous, executable, instr_ptr, localsplus, owner,
            stackpointer, tlbc_index;
        uint64_t stacktop;   /* 3.11-3.13's int: see offsets.c */
        uint64_t is_entry;   /* 3.11's bool */
    } frame;
    /* 3.8-3.10 (frame_model PYF__FRAMES_HEAP): PyFrameObject, a heap
     * object; back its caller, lasti its last instruction (lasti_kind),
     * executing (3.8, 3.9: a char) or state (3.10: a signed char) whether
     * it runs (running_kind); stacktop (3.8, 3.9) or stackdepth (3.10)
     * its value stack while suspended */
    struct {
        uint64_t size, back, code, globals, locals, valuestack, trace, gen, lasti,
            lineno, localsplus, stacktop, stackdepth, executing, state;
    } heapframe;
    struct {
        uint64_t size, filename, name, qualname, linetable, firstlineno,
            co_code_adaptive, co_tlbc;
        uint64_t argcount, localsplusnames, localspluskinds; /* the values' */
        uint64_t co_version; /* not in the table: see offsets.c */
        uint64_t co_flags;   /* not in the table: see offsets.c */
        uint64_t nlocalsplus; /* not in the table: see offsets.c */
        uint64_t firsttraceable; /* 3.11/3.12's _co_firsttraceable */
        /* 3.8-3.10: the bytecode (a bytes object), and the locals' names:
         * co_nlocals varnames, then cellvars, then freevars */
        uint64_t code, nlocals, varnames, cellvars, freevars, cell2arg;
    } code;
    struct { uint64_t size, ob_type; } pyobject;
    struct { uint64_t size, tp_name, tp_flags; } type;
    struct { uint64_t size, ob_size, ob_sval; } bytes;
    struct {
        uint64_t size, state, length, asciiobject_size,
            compactunicodeobject_size;
        uint64_t data;       /* a legacy (not compact) str's data pointer */
        uint64_t wstr;       /* 3.8-3.11: its wchar_t buffer (a str not made
                                ready has only that) */
    } unicode;
    /* the value decoder's (value_core.c, objects.c, values.c) */
    struct { uint64_t size, ob_item, ob_size; } tuple, list;
    struct { uint64_t size, ma_keys, ma_values; } dict;
    struct { uint64_t size, ob_fval; } flt;
    /* the rest serve the asyncio reader (tasks.c), the int layout the
     * value decoder too */
    /* gi_frame, gi_code: 3.8-3.10's frame object and code */
    struct { uint64_t size, gi_name, gi_iframe, gi_frame_state, gi_frame, gi_code; } gen;
    struct { uint64_t size, used, table, mask; } set;
    /* lv_tag (3.12+) or ob_size (3.11): int_kind says which */
    struct { uint64_t size, lv_tag, ob_size, ob_digit; } lng;
    /* llist_node has no size in the table: 16 (next, prev) where it exists */
    struct { uint64_t size, next; } llist;

    /* The built-in table this layout came from (3.11, 3.12), NULL for
     * _Py_DebugOffsets: the value decoder's object layouts are read from
     * it (value_layout.c). */
    const pyf__builtin_field *builtin;
    uint32_t nbuiltin;

    /* Semantics that differ by version, decided once at decode. */
    /* Where a thread's frames are: _PyInterpreterFrame records in its
     * data stack (3.11+), or PyFrameObjects on the heap chained by f_back
     * from the thread state's frame (3.8-3.10: heapframe, walked by
     * frames_heap.c; no co_qualname: code.qualname is co_name). */
    enum { PYF__FRAMES_DATASTACK, PYF__FRAMES_HEAP } frame_model;
    /* A code object's line table: the location table (3.11+,
     * Objects/locations.md), PEP 626's co_linetable (3.10) or co_lnotab
     * (3.8, 3.9); pyf__linetable_lookup decodes each. */
    pyf__line_kind line_kind;
    /* frame_model HEAP: what f_lasti counts, bytes (3.8, 3.9) or code
     * units (3.10); and what says whether a frame runs: f_executing (3.8,
     * 3.9: a char, 1 while it runs), or f_state (3.10: a signed char,
     * whose values are frame_state's) */
    enum { PYF__LASTI_BYTES, PYF__LASTI_UNITS } lasti_kind;
    enum { PYF__RUNNING_FLAG, PYF__RUNNING_STATE } running_kind;
    struct { int created, suspended, executing, unwinding; } frame_state;
    /* How a thread's current frame is reached: the thread state's
     * current_frame, or its cframe's (on the C stack). */
    enum { PYF__TOP_TSTATE, PYF__TOP_CFRAME } top_kind;
    /* What marks a run of frames entered from C: an entry frame of its
     * own (owner_cstack, owner_interpreter), or the entered frame's
     * is_entry flag, its entry the run's _PyCFrame (3.11). */
    enum { PYF__ENTRY_OWNER, PYF__ENTRY_FLAG } entry_kind;
    /* The frame's instruction pointer: the instruction running or next
     * (instr_ptr, 3.13+), or the last code unit done (prev_instr: a
     * running instruction's inline caches may follow it; 3.11, 3.12). */
    enum { PYF__IP_CURRENT, PYF__IP_PREVIOUS } ip_kind;
    /* Where a frame keeps its value stack's top while it calls: a pointer
     * (stackpointer, 3.14+), or an int count of slots from localsplus
     * (stacktop) that is -1 while the frame runs (3.12, 3.13) or left
     * from its last call (3.11: never reset, so a running frame's is
     * stale). */
    enum { PYF__SP_POINTER, PYF__SP_STACKTOP, PYF__SP_STACKTOP_STALE } sp_kind;
    /* How a frame whose call returned looks while its memory is not yet
     * reused: its stack pointer back at its locals (3.14+: stackpointer
     * at localsplus; 3.13: stacktop 0), or nothing says so (3.11, 3.12:
     * stacktop as the return saved it, as a live caller's may be; the
     * walk then reads the top frame again after the copies, frames.c). */
    enum { PYF__CLEARED_UNMARKED, PYF__CLEARED_STACKTOP, PYF__CLEARED_POINTER } cleared_kind;
    /* Whether a frame's executable is always a code object (3.11, 3.12:
     * f_code) or may be another object (3.13+: f_executable). */
    bool executable_is_code;
    /* Ints: ob_size (sign and digit count, 3.11) or lv_tag (3.12+); and
     * whether a value stack holds tagged ints (3.14+ _PyStackRef). */
    enum { PYF__INT_OB_SIZE, PYF__INT_LV_TAG } int_kind;
    bool tagged_ints;
    /* A dict's keys: dk_log2_size, dk_log2_index_bytes and dk_kind bytes
     * (3.11+), or a dk_size word, always general entries {hash, key,
     * value} (3.8-3.10). */
    enum { PYF__DICTKEYS_LOG2, PYF__DICTKEYS_SIZED } dictkeys_kind;
    /* A split dict's values: PyDictValues with the insertion order in the
     * bytes before it (3.11, 3.12), a header (capacity, size, embedded,
     * valid) with the order after the values (3.13+), or a plain array of
     * values in the keys' entry order, their insertion order (3.8-3.10). */
    enum { PYF__DICTVALUES_ORDER_BEFORE, PYF__DICTVALUES_HEADER,
           PYF__DICTVALUES_ARRAY } dictvalues_kind;
    /* An instance's managed dict: a dict pointer and a values pointer
     * before the object (3.11), one word that is either (bit 0 set: the
     * values; 3.12), or a dict pointer with the values inline in the
     * object (3.13+); or none (3.8-3.10: every instance dict is at its
     * type's tp_dictoffset, and Py_TPFLAGS_MANAGED_DICT's bit means
     * nothing). */
    enum { PYF__INSTDICT_TWO_POINTERS, PYF__INSTDICT_TAGGED, PYF__INSTDICT_INLINE,
           PYF__INSTDICT_NONE } instdict_kind;
    /* Strs that are not compact (a data pointer) may exist (3.11). */
    bool legacy_strs;
    /* Where the GIL is: in the runtime (3.11), or the interpreter's
     * ceval_gil pointer (3.12+; 3.15 also tells each thread). */
    enum { PYF__GIL_RUNTIME, PYF__GIL_INTERP } gil_kind;
    /* The exception being raised: a (type, value, traceback) triple in
     * the thread state (3.11), or one object (3.12+). */
    enum { PYF__EXC_TRIPLE, PYF__EXC_SINGLE } exc_kind;
    /* asyncio tasks can be read (3.14+: the _AsyncioDebug table and the
     * generator, set and list node layouts). */
    bool has_tasks;
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
    /* a generator's frame suspended at a yield (its state byte; 3.11, 3.12:
     * the value stack it saved is whole), INT32_MIN where not used */
    int gen_suspended;
    /* ... and one an eval loop runs or is resuming (3.11, 3.12: a call
     * from C setting it up, walk_frozen), INT32_MIN where not used */
    int gen_executing;
    /* ip_kind PYF__IP_PREVIOUS (3.11, 3.12): the inline cache entries
     * that follow each opcode, as the code units prev_instr may be left
     * on; PYF__CACHES_UNKNOWN where the version does not tell (3.12's
     * instrumented lines, which hide the opcode they replace) */
    uint8_t opcode_caches[256];
} pyf__offsets;
#define PYF__CACHES_UNKNOWN 255u

/* Decode raw bytes read at _PyRuntime (len >= what the version needs) into
 * *off.  Returns PYF_OK, PYF_ENOTPY (bad cookie), PYF_EVERSION (unsupported
 * version, named in err) or PYF_EOFFSETS (a size/offset failed its bounds,
 * named in err). */
int pyf__offsets_decode(const uint8_t *raw, size_t len, pyf__offsets *off,
                        char *err, size_t errlen);

/* The layout of CPython 3.<minor> from its built-in table (3.8-3.12),
 * hexversion its version:
 * PYF_OK, PYF_EVERSION (no table for it, named in err) or PYF_EOFFSETS. */
int pyf__offsets_builtin(uint64_t hexversion, pyf__offsets *off, char *err, size_t errlen);
/* The version of a target whose layout came from a built-in table
 * (version_pending), from sys.hexversion as the target holds it, checked
 * against the table's minor version (values.c). */
int pyf__offsets_version_read(pyf_target *t);

/* Where a frame names its code (f_executable; 3.8-3.10's f_code), and the
 * bytes of a frame to read to reach it. */
static inline uint64_t pyf__frame_code_at(const pyf__offsets *o)
{
    return o->frame_model == PYF__FRAMES_HEAP ? o->heapframe.code : o->frame.executable;
}
static inline uint64_t pyf__frame_size(const pyf__offsets *o)
{
    return o->frame_model == PYF__FRAMES_HEAP ? o->heapframe.size : o->frame.size;
}

/* "3.15.2", "3.15.0b4": the one place the library words a PY_VERSION_HEX. */
void pyf__version_text(uint64_t hexversion, char *buf, size_t len);
/* PYF_EVERSION, with "unsupported CPython 3.7.17 (pyframes reads CPython
 * 3.8-3.15)" in err: the one wording of a refused version. */
int pyf__version_refused(uint64_t hexversion, char *err, size_t errlen);
/* PYF_EVERSION, naming a build of a version with a built-in table whose
 * _PyRuntime has another size (size) than the table's (known): an unknown
 * layout (a Py_DEBUG 3.12, say), refused rather than guessed. */
int pyf__layout_refused(uint64_t hexversion, uint64_t size, uint64_t known, char *err,
                        size_t errlen);
/* sizeof(_PyRuntimeState) in the built-in table of hexversion's minor
 * version (3.8-3.12); 0 for a version without one (its runtime is
 * described by its own _Py_DebugOffsets, or not read at all). */
uint64_t pyf__offsets_builtin_runtime_size(uint64_t hexversion);

/* The public pyf_python_info of a decoded table at addr. */
void pyf__python_info_fill(const pyf__offsets *o, uint64_t addr, pyf_python_info *out);
/* The same of a version alone (a refused one, named by what was read). */
void pyf__python_info_version(uint64_t hexversion, uint64_t addr, pyf_python_info *out);

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
/* The GIL's fields (gil_kind): PYF_OK, or PYF_EOFFSETS with why in err. */
int pyf__offsets_check_gil(const pyf__offsets *o, char *err, size_t errlen);

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
