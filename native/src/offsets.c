/*
 * offsets.c - the one place that fills the library's layout of a CPython
 * (pyf__offsets) and decides every difference between versions: from the
 * target's _Py_DebugOffsets (3.13+), decoded and validated, or from a
 * built-in table generated from CPython's own headers (3.8-3.12:
 * layout_tables.h), identified by the runtime's shape (3.11, 3.12).
 *
 * _Py_DebugOffsets' own layout differs per minor version (fields are
 * inserted in the middle of sections), so each supported version has its
 * field list in order.  The table is 8 bytes of cookie followed by uint64_t
 * slots.  A built-in table is a list of (name, value) pairs under the same
 * names.  Both are decoded by one field list into one version-independent
 * pyf__offsets; after this file nothing branches on the layout, and nothing
 * compares version numbers: the semantic differences are pyf__offsets'
 * named properties, set here.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "api.h"
#include "errors.h"
#include "layout_tables.h"
#include "linetable.h"
#include "offsets.h"
#include "reads.h"
#include "target.h"

/* ---- field lists, in table order (slot 0 is the cookie) ---------------- */

#define COMMON_HEAD "cookie", "version", "free_threaded", \
    "runtime_state.size", "runtime_state.finalizing",     \
    "runtime_state.interpreters_head"

static const char *const layout_313[] = {
    COMMON_HEAD,
    "interpreter_state.size", "interpreter_state.id", "interpreter_state.next",
    "interpreter_state.threads_head", "interpreter_state.gc",
    "interpreter_state.imports_modules", "interpreter_state.sysdict",
    "interpreter_state.builtins", "interpreter_state.ceval_gil",
    "interpreter_state.gil_runtime_state",
    "interpreter_state.gil_runtime_state_enabled",
    "interpreter_state.gil_runtime_state_locked",
    "interpreter_state.gil_runtime_state_holder",
    "thread_state.size", "thread_state.prev", "thread_state.next",
    "thread_state.interp", "thread_state.current_frame",
    "thread_state.thread_id", "thread_state.native_thread_id",
    "thread_state.datastack_chunk", "thread_state.status",
    "interpreter_frame.size", "interpreter_frame.previous",
    "interpreter_frame.executable", "interpreter_frame.instr_ptr",
    "interpreter_frame.localsplus", "interpreter_frame.owner",
    "code_object.size", "code_object.filename", "code_object.name",
    "code_object.qualname", "code_object.linetable", "code_object.firstlineno",
    "code_object.argcount", "code_object.localsplusnames",
    "code_object.localspluskinds", "code_object.co_code_adaptive",
    "pyobject.size", "pyobject.ob_type",
    "type_object.size", "type_object.tp_name", "type_object.tp_repr",
    "type_object.tp_flags",
    "tuple_object.size", "tuple_object.ob_item", "tuple_object.ob_size",
    "list_object.size", "list_object.ob_item", "list_object.ob_size",
    "dict_object.size", "dict_object.ma_keys", "dict_object.ma_values",
    "float_object.size", "float_object.ob_fval",
    "long_object.size", "long_object.lv_tag", "long_object.ob_digit",
    "bytes_object.size", "bytes_object.ob_size", "bytes_object.ob_sval",
    "unicode_object.size", "unicode_object.state", "unicode_object.length",
    "unicode_object.asciiobject_size",
    "gc.size", "gc.collecting",
};

#define INTERP_314                                                           \
    "interpreter_state.size", "interpreter_state.id", "interpreter_state.next", \
    "interpreter_state.threads_head", "interpreter_state.threads_main",      \
    "interpreter_state.gc", "interpreter_state.imports_modules",             \
    "interpreter_state.sysdict", "interpreter_state.builtins",               \
    "interpreter_state.ceval_gil", "interpreter_state.gil_runtime_state",    \
    "interpreter_state.gil_runtime_state_enabled",                           \
    "interpreter_state.gil_runtime_state_locked",                            \
    "interpreter_state.gil_runtime_state_holder",                            \
    "interpreter_state.code_object_generation",                              \
    "interpreter_state.tlbc_generation"

#define FRAME_CODE_314                                                       \
    "interpreter_frame.size", "interpreter_frame.previous",                  \
    "interpreter_frame.executable", "interpreter_frame.instr_ptr",           \
    "interpreter_frame.localsplus", "interpreter_frame.owner",               \
    "interpreter_frame.stackpointer", "interpreter_frame.tlbc_index",        \
    "code_object.size", "code_object.filename", "code_object.name",          \
    "code_object.qualname", "code_object.linetable",                         \
    "code_object.firstlineno", "code_object.argcount",                       \
    "code_object.localsplusnames", "code_object.localspluskinds",            \
    "code_object.co_code_adaptive", "code_object.co_tlbc"

#define TAIL_CONTAINERS                                                      \
    "tuple_object.size", "tuple_object.ob_item", "tuple_object.ob_size",     \
    "list_object.size", "list_object.ob_item", "list_object.ob_size",        \
    "set_object.size", "set_object.used", "set_object.table",                \
    "set_object.mask",                                                       \
    "dict_object.size", "dict_object.ma_keys", "dict_object.ma_values",      \
    "float_object.size", "float_object.ob_fval",                             \
    "long_object.size", "long_object.lv_tag", "long_object.ob_digit",        \
    "bytes_object.size", "bytes_object.ob_size", "bytes_object.ob_sval",     \
    "unicode_object.size", "unicode_object.state", "unicode_object.length",  \
    "unicode_object.asciiobject_size"

#define TAIL_GEN_DEBUGGER                                                    \
    "gen_object.size", "gen_object.gi_name", "gen_object.gi_iframe",         \
    "gen_object.gi_frame_state",                                             \
    "llist_node.next", "llist_node.prev",                                    \
    "debugger_support.eval_breaker",                                         \
    "debugger_support.remote_debugger_support",                              \
    "debugger_support.remote_debugging_enabled",                             \
    "debugger_support.debugger_pending_call",                                \
    "debugger_support.debugger_script_path",                                 \
    "debugger_support.debugger_script_path_size"

static const char *const layout_314[] = {
    COMMON_HEAD,
    INTERP_314,
    "thread_state.size", "thread_state.prev", "thread_state.next",
    "thread_state.interp", "thread_state.current_frame",
    "thread_state.thread_id", "thread_state.native_thread_id",
    "thread_state.datastack_chunk", "thread_state.status",
    FRAME_CODE_314,
    "pyobject.size", "pyobject.ob_type",
    "type_object.size", "type_object.tp_name", "type_object.tp_repr",
    "type_object.tp_flags",
    TAIL_CONTAINERS,
    "gc.size", "gc.collecting",
    TAIL_GEN_DEBUGGER,
};

static const char *const layout_315[] = {
    COMMON_HEAD,
    INTERP_314,
    "thread_state.size", "thread_state.prev", "thread_state.next",
    "thread_state.interp", "thread_state.current_frame",
    "thread_state.base_frame", "thread_state.last_profiled_frame",
    "thread_state.last_profiled_frame_seq", "thread_state.thread_id",
    "thread_state.native_thread_id", "thread_state.datastack_chunk",
    "thread_state.status", "thread_state.holds_gil",
    "thread_state.gil_requested", "thread_state.current_exception",
    "thread_state.exc_state",
    "err_stackitem.exc_value",
    FRAME_CODE_314,
    "pyobject.size", "pyobject.ob_type",
    "type_object.size", "type_object.tp_name", "type_object.tp_repr",
    "type_object.tp_flags", "type_object.tp_basicsize",
    "type_object.tp_dictoffset",
    "heap_type_object.size", "heap_type_object.ht_cached_keys",
    TAIL_CONTAINERS,
    "unicode_object.compactunicodeobject_size",
    "gc.size", "gc.collecting", "gc.frame", "gc.generation_stats_size",
    "gc.generation_stats",
    TAIL_GEN_DEBUGGER,
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

_Static_assert(COUNT(layout_313) * 8 == 584, "3.13 _Py_DebugOffsets is 584 bytes");
_Static_assert(COUNT(layout_314) * 8 == 760, "3.14 _Py_DebugOffsets is 760 bytes");
_Static_assert(COUNT(layout_315) * 8 == 888, "3.15 _Py_DebugOffsets is 888 bytes");

typedef struct layout {
    int minor;
    const char *const *fields;
    size_t nfields;
} layout;

static const layout layouts[] = {
    {13, layout_313, COUNT(layout_313)},
    {14, layout_314, COUNT(layout_314)},
    {15, layout_315, COUNT(layout_315)},
};

static const layout *layout_for(int minor)
{
    for (size_t i = 0; i < COUNT(layouts); i++)
        if (layouts[i].minor == minor)
            return &layouts[i];
    return NULL;
}

/* Where a layout's numbers come from: the slots of a _Py_DebugOffsets
 * table (fields, in table order, and its raw bytes), or the (name, value)
 * pairs of a built-in table. */
typedef struct source {
    const char *const *fields;
    size_t nfields;
    const uint8_t *raw;
    const pyf__builtin_field *pairs;
    size_t npairs;
} source;

/* Value of a named field, or PYF__ABSENT when the source has none.  A
 * slot whose value is all ones (PYF__ABSENT too) names it in *all_ones:
 * it would pass for a field the version lacks and skip its checks. */
static uint64_t slot(const source *src, const char *name, const char **all_ones)
{
    for (size_t i = 0; i < src->nfields; i++)
        if (strcmp(src->fields[i], name) == 0) {
            uint64_t v = pyf__ld64(src->raw + i * 8);
            if (v == PYF__ABSENT && *all_ones == NULL)
                *all_ones = name;
            return v;
        }
    for (size_t i = 0; i < src->npairs; i++)
        if (strcmp(src->pairs[i].name, name) == 0)
            return src->pairs[i].value;
    return PYF__ABSENT;
}

/* ---- the fields the library uses ----------------------------------------
 * One list: each entry names the pyf__offsets member, the table field it is
 * decoded from, how it is checked against its section, and who uses it:
 *   SIZE  the section's size (16 bytes .. SECTION_MAX)
 *   PTR   a pointer-aligned offset of a field of `width` bytes inside the
 *         section
 *   OFF   an offset of a field of `width` bytes inside the section
 *   NONE  not checked here (see validate)
 *   WALK  the stack walk: checked when the table is decoded (a target
 *         fails to open without them)
 *   TASKS only the asyncio reader: checked with its own table
 *         (pyf__asyncio_offsets_decode; a target without them still opens)
 *   VALUES only the value decoder: checked at its first use
 *         (pyf__offsets_check_values)
 * The decoder and the checks are generated from it.  A field a version lacks
 * decodes as PYF__ABSENT and is not checked. */
#define USED_FIELDS(X)                                                                      \
    X(runtime, size, "runtime_state.size", SIZE, 0, WALK)                                   \
    X(runtime, finalizing, "runtime_state.finalizing", NONE, 0, WALK)                       \
    X(runtime, interpreters_head, "runtime_state.interpreters_head", PTR, 8, WALK)          \
    X(runtime, interpreters_main, "runtime_state.interpreters_main", PTR, 8, WALK)          \
    X(runtime, main_interpreter, "runtime_state.main_interpreter", PTR, 8, WALK)            \
    X(runtime, gil_locked, "runtime_state.gil_locked", OFF, 4, FACTS)                       \
    X(runtime, gil_holder, "runtime_state.gil_holder", PTR, 8, FACTS)                       \
    X(runtime, tstate_current, "runtime_state.tstate_current", PTR, 8, FACTS)               \
    X(interp, size, "interpreter_state.size", SIZE, 0, WALK)                                \
    X(interp, id, "interpreter_state.id", OFF, 8, WALK)                                     \
    X(interp, next, "interpreter_state.next", PTR, 8, WALK)                                 \
    X(interp, threads_head, "interpreter_state.threads_head", PTR, 8, WALK)                 \
    X(interp, threads_main, "interpreter_state.threads_main", PTR, 8, WALK)                 \
    X(interp, gc, "interpreter_state.gc", NONE, 0, WALK)                                    \
    X(interp, code_object_generation, "interpreter_state.code_object_generation", OFF, 8, WALK) \
    X(interp, tlbc_generation, "interpreter_state.tlbc_generation", NONE, 0, WALK)          \
    X(interp, imports_modules, "interpreter_state.imports_modules", PTR, 8, FACTS)          \
    X(interp, sysdict, "interpreter_state.sysdict", PTR, 8, FACTS)                          \
    X(interp, ceval_gil, "interpreter_state.ceval_gil", PTR, 8, FACTS)                      \
    X(interp, gil_runtime_state, "interpreter_state.gil_runtime_state", PTR, 32, FACTS)     \
    X(interp, gil_enabled, "interpreter_state.gil_runtime_state_enabled", NONE, 0, FACTS)   \
    X(interp, gil_locked, "interpreter_state.gil_runtime_state_locked", OFF, 4, FACTS)      \
    X(interp, gil_holder, "interpreter_state.gil_runtime_state_holder", PTR, 8, FACTS)      \
    X(tstate, size, "thread_state.size", SIZE, 0, WALK)                                     \
    X(tstate, prev, "thread_state.prev", PTR, 8, WALK)                                      \
    X(tstate, next, "thread_state.next", PTR, 8, WALK)                                      \
    X(tstate, interp, "thread_state.interp", PTR, 8, WALK)                                  \
    X(tstate, current_frame, "thread_state.current_frame", PTR, 8, WALK)                    \
    X(tstate, base_frame, "thread_state.base_frame", PTR, 8, WALK)                          \
    X(tstate, last_profiled_frame, "thread_state.last_profiled_frame", PTR, 8, WALK)        \
    X(tstate, last_profiled_frame_seq, "thread_state.last_profiled_frame_seq", OFF, 8, WALK) \
    X(tstate, thread_id, "thread_state.thread_id", OFF, 8, WALK)                            \
    X(tstate, native_thread_id, "thread_state.native_thread_id", OFF, 8, WALK)              \
    X(tstate, datastack_chunk, "thread_state.datastack_chunk", PTR, 8, WALK)                \
    X(tstate, status, "thread_state.status", NONE, 0, WALK)                                 \
    X(tstate, holds_gil, "thread_state.holds_gil", OFF, 4, WALK)                            \
    X(tstate, gil_requested, "thread_state.gil_requested", OFF, 4, FACTS)                   \
    X(tstate, current_exception, "thread_state.current_exception", PTR, 8, FACTS)           \
    X(tstate, exc_state, "thread_state.exc_state", PTR, 16, FACTS)                          \
    X(tstate, cframe, "thread_state.cframe", PTR, 8, WALK)                                  \
    X(tstate, root_cframe, "thread_state.root_cframe", PTR, 16, WALK)                       \
    X(tstate, curexc_type, "thread_state.curexc_type", PTR, 8, FACTS)                       \
    X(tstate, curexc_value, "thread_state.curexc_value", PTR, 8, FACTS)                     \
    X(tstate, curexc_traceback, "thread_state.curexc_traceback", PTR, 8, FACTS)             \
    X(tstate, frame, "thread_state.frame", PTR, 8, WALK)                                    \
    X(err_stackitem, exc_value, "err_stackitem.exc_value", PTR, 8, FACTS)                   \
    X(cframe, size, "cframe.size", SIZE, 0, WALK)                                           \
    X(cframe, current_frame, "cframe.current_frame", PTR, 8, WALK)                          \
    X(cframe, previous, "cframe.previous", PTR, 8, WALK)                                    \
    X(frame, size, "interpreter_frame.size", SIZE, 0, WALK)                                 \
    X(frame, previous, "interpreter_frame.previous", PTR, 8, WALK)                          \
    X(frame, executable, "interpreter_frame.executable", PTR, 8, WALK)                      \
    X(frame, instr_ptr, "interpreter_frame.instr_ptr", PTR, 8, WALK)                        \
    X(frame, localsplus, "interpreter_frame.localsplus", NONE, 0, WALK)                     \
    X(frame, owner, "interpreter_frame.owner", OFF, 1, WALK)                                \
    X(frame, stackpointer, "interpreter_frame.stackpointer", PTR, 8, TASKS)                 \
    X(frame, tlbc_index, "interpreter_frame.tlbc_index", OFF, 4, WALK)                      \
    X(frame, stacktop, "interpreter_frame.stacktop", OFF, 4, WALK)                          \
    X(frame, is_entry, "interpreter_frame.is_entry", OFF, 1, WALK)                          \
    X(heapframe, size, "frame_object.size", SIZE, 0, WALK)                                  \
    X(heapframe, back, "frame_object.back", PTR, 8, WALK)                                   \
    X(heapframe, code, "frame_object.code", PTR, 8, WALK)                                   \
    X(heapframe, globals, "frame_object.globals", PTR, 8, VALUES)                           \
    X(heapframe, locals, "frame_object.locals", PTR, 8, VALUES)                             \
    X(heapframe, valuestack, "frame_object.valuestack", PTR, 8, VALUES)                     \
    X(heapframe, trace, "frame_object.trace", PTR, 8, WALK)                                 \
    X(heapframe, gen, "frame_object.gen", PTR, 8, WALK)                                     \
    X(heapframe, lasti, "frame_object.lasti", OFF, 4, WALK)                                 \
    X(heapframe, lineno, "frame_object.lineno", OFF, 4, WALK)                               \
    X(heapframe, localsplus, "frame_object.localsplus", PTR, 0, VALUES)                     \
    X(heapframe, stacktop, "frame_object.stacktop", PTR, 8, VALUES)                         \
    X(heapframe, stackdepth, "frame_object.stackdepth", OFF, 4, VALUES)                     \
    X(heapframe, executing, "frame_object.executing", OFF, 1, WALK)                         \
    X(heapframe, state, "frame_object.state", OFF, 1, WALK)                                 \
    X(code, size, "code_object.size", SIZE, 0, WALK)                                        \
    X(code, filename, "code_object.filename", PTR, 8, WALK)                                 \
    X(code, name, "code_object.name", PTR, 8, WALK)                                         \
    X(code, qualname, "code_object.qualname", PTR, 8, WALK)                                 \
    X(code, linetable, "code_object.linetable", PTR, 8, WALK)                               \
    X(code, firstlineno, "code_object.firstlineno", OFF, 4, WALK)                           \
    X(code, co_code_adaptive, "code_object.co_code_adaptive", OFF, 2, WALK)                 \
    X(code, co_tlbc, "code_object.co_tlbc", PTR, 8, WALK)                                   \
    X(code, co_version, "code_object.co_version", OFF, 4, WALK)                             \
    X(code, co_flags, "code_object.co_flags", OFF, 4, WALK)                                 \
    X(code, nlocalsplus, "code_object.nlocalsplus", OFF, 4, WALK)                           \
    X(code, firsttraceable, "code_object.firsttraceable", OFF, 4, WALK)                     \
    X(code, argcount, "code_object.argcount", OFF, 4, VALUES)                               \
    X(code, localsplusnames, "code_object.localsplusnames", PTR, 8, VALUES)                 \
    X(code, localspluskinds, "code_object.localspluskinds", PTR, 8, VALUES)                 \
    X(code, code, "code_object.code", PTR, 8, WALK)                                         \
    X(code, nlocals, "code_object.nlocals", OFF, 4, VALUES)                                 \
    X(code, varnames, "code_object.varnames", PTR, 8, VALUES)                               \
    X(code, cellvars, "code_object.cellvars", PTR, 8, VALUES)                               \
    X(code, freevars, "code_object.freevars", PTR, 8, VALUES)                               \
    X(code, cell2arg, "code_object.cell2arg", PTR, 8, VALUES)                               \
    X(tuple, size, "tuple_object.size", SIZE, 0, VALUES)                                    \
    X(tuple, ob_item, "tuple_object.ob_item", PTR, 0, VALUES)                               \
    X(tuple, ob_size, "tuple_object.ob_size", OFF, 8, VALUES)                               \
    X(list, size, "list_object.size", SIZE, 0, VALUES)                                      \
    X(list, ob_item, "list_object.ob_item", PTR, 8, VALUES)                                 \
    X(list, ob_size, "list_object.ob_size", OFF, 8, VALUES)                                 \
    X(dict, size, "dict_object.size", SIZE, 0, VALUES)                                      \
    X(dict, ma_keys, "dict_object.ma_keys", PTR, 8, VALUES)                                 \
    X(dict, ma_values, "dict_object.ma_values", PTR, 8, VALUES)                             \
    X(flt, size, "float_object.size", SIZE, 0, VALUES)                                      \
    X(flt, ob_fval, "float_object.ob_fval", OFF, 8, VALUES)                                 \
    X(pyobject, size, "pyobject.size", SIZE, 0, WALK)                                       \
    X(pyobject, ob_type, "pyobject.ob_type", PTR, 8, WALK)                                  \
    X(type, size, "type_object.size", SIZE, 0, WALK)                                        \
    X(type, tp_name, "type_object.tp_name", PTR, 8, WALK)                                   \
    X(type, tp_flags, "type_object.tp_flags", OFF, 8, WALK)                                 \
    X(bytes, size, "bytes_object.size", SIZE, 0, WALK)                                      \
    X(bytes, ob_size, "bytes_object.ob_size", OFF, 8, WALK)                                 \
    X(bytes, ob_sval, "bytes_object.ob_sval", NONE, 0, WALK)                                \
    X(unicode, size, "unicode_object.size", SIZE, 0, WALK)                                  \
    X(unicode, state, "unicode_object.state", OFF, 4, WALK)                                 \
    X(unicode, length, "unicode_object.length", OFF, 8, WALK)                               \
    X(unicode, asciiobject_size, "unicode_object.asciiobject_size", NONE, 0, WALK)          \
    X(unicode, compactunicodeobject_size, "unicode_object.compactunicodeobject_size", NONE, 0, WALK) \
    X(unicode, data, "unicode_object.data", PTR, 8, VALUES)                                 \
    X(unicode, wstr, "unicode_object.wstr", PTR, 8, VALUES)                                 \
    X(gen, size, "gen_object.size", SIZE, 0, TASKS)                                         \
    X(gen, gi_name, "gen_object.gi_name", NONE, 0, TASKS)                                   \
    X(gen, gi_iframe, "gen_object.gi_iframe", PTR, 8, TASKS)                                \
    X(gen, gi_frame_state, "gen_object.gi_frame_state", OFF, 1, TASKS)                      \
    X(gen, gi_frame, "gen_object.gi_frame", PTR, 8, WALK)                                   \
    X(gen, gi_code, "gen_object.gi_code", PTR, 8, WALK)                                     \
    X(set, size, "set_object.size", SIZE, 0, TASKS)                                         \
    X(set, used, "set_object.used", OFF, 8, TASKS)                                          \
    X(set, table, "set_object.table", PTR, 8, TASKS)                                        \
    X(set, mask, "set_object.mask", OFF, 8, TASKS)                                          \
    X(lng, size, "long_object.size", SIZE, 0, TASKS)                                        \
    X(lng, lv_tag, "long_object.lv_tag", OFF, 8, TASKS)                                     \
    X(lng, ob_size, "long_object.ob_size", OFF, 8, TASKS)                                   \
    X(lng, ob_digit, "long_object.ob_digit", OFF, 4, TASKS)                                 \
    X(llist, next, "llist_node.next", PTR, 8, TASKS)

#define SECTION_MAX (1u << 20)

typedef enum check_kind { SIZE, PTR, OFF, NONE } check_kind;
typedef enum check_group { WALK, TASKS, ASYNCIO, VALUES, FACTS } check_group;

typedef struct check_ctx {
    char *err;
    size_t errlen;
    int rc;
    check_group group;       /* the fields checked now */
} check_ctx;

/* What a field of section sec (its name in pyf__offsets or
 * pyf__asyncio_offsets) describes, for the asyncio reader's refusals. */
static const char *section_label(check_group group, const char *sec)
{
    if (group == WALK)
        return NULL;
    if (group == VALUES)
        return "value layout";
    if (group == FACTS)
        return "thread facts layout";
    if (group == TASKS)
        return strcmp(sec, "llist") == 0 ? "list node layout"
                                          : "generator, set or int layout";
    return strcmp(sec, "task") == 0     ? "task field"
           : strcmp(sec, "interp") == 0 ? "interpreter field"
                                        : "thread field";
}

/* One check of one field (value) of section sec, whose size is
 * section_size. */
static void check(check_ctx *c, check_group group, const char *sec, check_kind kind,
                  const char *name, uint64_t value, uint64_t width, uint64_t section_size)
{
    if (c->rc != PYF_OK || kind == NONE || group != c->group)
        return;
    const char *label = section_label(group, sec);
    const char *table = group == ASYNCIO ? "_AsyncioDebug" : "_Py_DebugOffsets";
    char why[200];
    why[0] = '\0';
    if (kind == SIZE) { /* a section this version has */
        if (value == PYF__ABSENT)
            return;
        if (value < 16 || value > SECTION_MAX)
            pyf__fmt(why, sizeof why, "%s field %s is %llu (expected 16..%u)", table, name,
                     (unsigned long long)value, SECTION_MAX);
    } else if (value == PYF__ABSENT) { /* a field this version lacks */
        return;
    } else if (value > section_size || width > section_size - value) {
        pyf__fmt(why, sizeof why, "%s field %s is %llu, outside its structure of %llu bytes",
                 table, name, (unsigned long long)value, (unsigned long long)section_size);
    } else if (kind == PTR && value % 8 != 0) {
        pyf__fmt(why, sizeof why, "%s field %s is %llu, not pointer-aligned", table, name,
                 (unsigned long long)value);
    }
    if (why[0] == '\0')
        return;
    if (label != NULL)
        pyf__fmt(c->err, c->errlen, "%s: %s", label, why);
    else
        pyf__fmt(c->err, c->errlen, "%s", why);
    c->rc = PYF_EOFFSETS;
}

/* The checks of a list of fields of one group: sizes first, the offsets
 * are checked against them. */
#define CHECK_SIZE(sec, member, name, kind, width, group) \
    if (kind == SIZE)                                     \
        check(c, group, #sec, kind, name, o->sec.member, width, 0);
#define CHECK_FIELD(sec, member, name, kind, width, group) \
    if (kind != SIZE)                                      \
        check(c, group, #sec, kind, name, o->sec.member, width, o->sec.size);

/* The stack walk's fields (WALK), or the asyncio reader's (TASKS). */
static int check_used(const pyf__offsets *o, check_group group, char *err, size_t errlen)
{
    check_ctx *c = &(check_ctx){err, errlen, PYF_OK, group};
    USED_FIELDS(CHECK_SIZE)
    USED_FIELDS(CHECK_FIELD)
    return c->rc;
}

static int validate(const pyf__offsets *o, char *err, size_t errlen)
{
    int rc = check_used(o, WALK, err, errlen);
    if (rc != PYF_OK)
        return rc;

    /* Sizes of objects the walker copies whole. */
    uint64_t frame_size = pyf__frame_size(o);
    if (frame_size > 4096 || o->code.size > 65536 ||
        o->tstate.size > 65536) {
        pyf__fmt(err, errlen,
                 "_Py_DebugOffsets sizes are implausible (frame %llu, code "
                 "%llu, thread state %llu bytes)",
                 (unsigned long long)frame_size,
                 (unsigned long long)o->code.size,
                 (unsigned long long)o->tstate.size);
        return PYF_EOFFSETS;
    }
    /* The flavour is the table's word, cross-checked by the object header:
     * 16 bytes in a default build, 32 in a free-threaded one (ob_tid, the
     * shared refcount, the mutex and gc bits come first). */
    if ((o->free_threaded && o->pyobject.size < 24) ||
        (!o->free_threaded && o->pyobject.size != 16)) {
        pyf__fmt(err, errlen,
                 "_Py_DebugOffsets says %s build but its objects have a %llu-byte "
                 "header", o->free_threaded ? "a free-threaded" : "a default (GIL)",
                 (unsigned long long)o->pyobject.size);
        return PYF_EOFFSETS;
    }
    /* Variable-size payloads start at or after their header fields. */
    if (o->bytes.ob_sval > o->bytes.size ||
        o->unicode.asciiobject_size > o->unicode.size ||
        o->unicode.compactunicodeobject_size > o->unicode.size ||
        o->unicode.asciiobject_size < o->unicode.state + 4) {
        pyf__fmt(err, errlen,
                 "_Py_DebugOffsets string/bytes layout is implausible "
                 "(ob_sval %llu, ascii header %llu, compact header %llu)",
                 (unsigned long long)o->bytes.ob_sval,
                 (unsigned long long)o->unicode.asciiobject_size,
                 (unsigned long long)o->unicode.compactunicodeobject_size);
        return PYF_EOFFSETS;
    }
    return PYF_OK;
}

/* ---- version acceptance ------------------------------------------------- */

static const char *level_name(uint32_t level)
{
    switch (level) {
    case 0xA: return "a";
    case 0xB: return "b";
    case 0xC: return "rc";
    default: return "";
    }
}

void pyf__version_text(uint64_t hex, char *buf, size_t len)
{
    uint32_t major = (hex >> 24) & 0xff, minor = (hex >> 16) & 0xff,
             micro = (hex >> 8) & 0xff, level = (hex >> 4) & 0xf,
             serial = hex & 0xf;
    if (level == 0xF)
        pyf__fmt(buf, len, "%u.%u.%u", major, minor, micro);
    else
        pyf__fmt(buf, len, "%u.%u.%u%s%u", major, minor, micro,
                 level_name(level), serial);
}

int pyf__version_refused(uint64_t hexversion, char *err, size_t errlen)
{
    char vtext[40];

    pyf__version_text(hexversion, vtext, sizeof vtext);
    pyf__fmt(err, errlen, "unsupported CPython %s (pyframes reads CPython 3.8-3.15)", vtext);
    return PYF_EVERSION;
}

int pyf__layout_refused(uint64_t hexversion, uint64_t size, uint64_t known, char *err,
                        size_t errlen)
{
    char vtext[40];

    pyf__version_text(hexversion, vtext, sizeof vtext);
    pyf__fmt(err, errlen, "unsupported CPython %s build: its _PyRuntime is %llu bytes, not the "
             "%llu of the CPython %u.%u layout pyframes knows (a debug or otherwise modified "
             "build, whose layout it does not guess)", vtext, (unsigned long long)size,
             (unsigned long long)known, (unsigned)((hexversion >> 24) & 0xff),
             (unsigned)((hexversion >> 16) & 0xff));
    return PYF_EVERSION;
}

/* Pre-releases are accepted only where their layout is known to equal the
 * final one: 3.15.0b4 and later (b4 added last_profiled_frame_seq). */
static bool prerelease_known(uint32_t minor, uint32_t micro, uint32_t level,
                             uint32_t serial)
{
    if (minor == 15 && micro == 0)
        return (level == 0xB && serial >= 4) || level == 0xC;
    return false;
}

/* Whether hex can be a PY_VERSION_HEX at all (a major version of one digit
 * from 2, a release level a, b, rc or final). */
static bool plausible_version(uint64_t hex)
{
    uint32_t major = (hex >> 24) & 0xff, level = (hex >> 4) & 0xf;
    return (hex >> 32) == 0 && major >= 2 && major <= 9 &&
           (level == 0xA || level == 0xB || level == 0xC || level == 0xF);
}

/* The version's parts into off. */
static void set_version(pyf__offsets *off, uint64_t hex)
{
    off->hexversion = hex;
    off->major = (hex >> 24) & 0xff;
    off->minor = (hex >> 16) & 0xff;
    off->micro = (hex >> 8) & 0xff;
    off->level = (hex >> 4) & 0xf;
    off->serial = hex & 0xf;
}

/* A built-in table's number that is not an offset (an owner value, a str
 * state bit), or dflt where the table has none. */
static int builtin_int(const pyf__offsets *off, const char *name, int dflt)
{
    for (uint32_t i = 0; i < off->nbuiltin; i++)
        if (strcmp(off->builtin[i].name, name) == 0)
            return (int)off->builtin[i].value;
    return dflt;
}

/* What _Py_DebugOffsets leaves out, in the layout CPython 3.13-3.15 give
 * it, derived from what it has (tests/c/ft/emit_layout.c checks each
 * against the headers, default and free-threaded). */
static void derive_313(pyf__offsets *off)
{
    uint32_t minor = off->minor;
    /* PyCompactUnicodeObject adds utf8_length and utf8 (16 bytes) to
     * PyASCIIObject; 3.15 publishes its size, earlier versions do not. */
    if (off->unicode.compactunicodeobject_size == PYF__ABSENT)
        off->unicode.compactunicodeobject_size =
            off->unicode.asciiobject_size + 16;
    off->owner_thread = 0;
    off->owner_generator = 1;
    off->owner_frame_object = 2;
    off->owner_interpreter = minor >= 14 ? 3 : -1;
    off->owner_cstack = minor == 13 ? 3 : (minor == 14 ? 4 : -1);
    /* str state bits: free-threaded 3.14+ builds widen "interned" to a
     * full byte, moving kind/compact/ascii up. */
    if (off->free_threaded && minor >= 14) {
        off->str_kind_shift = 8;
        off->str_compact_bit = 11;
        off->str_ascii_bit = 12;
    } else {
        off->str_kind_shift = 2;
        off->str_compact_bit = 5;
        off->str_ascii_bit = 6;
    }
    /* co_version (uint32_t), set once when a code object is made from a
     * counter of the interpreter (Objects/codeobject.c, init_code): which
     * code object it is.  The table lacks it; Include/cpython/code.h puts
     * it 24 bytes after co_firstlineno in every 3.13-3.15 layout, default
     * and free-threaded. */
    off->code.co_version = off->code.firstlineno + 24;
    /* co_flags (int, CO_*), which decide the type of a generator-owned
     * frame's owner: the first of the six ints that end with
     * co_firstlineno (co_flags, co_argcount, co_posonlyargcount,
     * co_kwonlyargcount, co_stacksize, co_firstlineno), 20 bytes before it.
     * A table whose co_firstlineno leaves no room for it: absent, the
     * owner stays unnamed. */
    off->code.co_flags = off->code.firstlineno >= 20 ? off->code.firstlineno - 20
                                                     : PYF__ABSENT;
    /* co_nlocalsplus (int), the number of locals, cells and free
     * variables: the int right after co_firstlineno (co_firstlineno,
     * co_nlocalsplus, co_framesize, co_nlocals, co_ncellvars,
     * co_nfreevars, co_version: 4 bytes apart). */
    off->code.nlocalsplus = off->code.firstlineno + 4;
    /* 3.13's frames carry no stack pointer the table names, but an int
     * stacktop, its distance from localsplus in slots, right before
     * return_offset and owner (internal/pycore_frame.h: ... instr_ptr;
     * int stacktop; uint16_t return_offset; char owner; localsplus[]).
     * Placed only where the table's owner and localsplus say that layout. */
    off->frame.stacktop = minor == 13 && off->frame.owner == off->frame.localsplus - 2 &&
                                  off->frame.localsplus >= 8
                              ? off->frame.localsplus - 8 : PYF__ABSENT;
    /* Thread-local bytecode: free-threaded 3.14+, where the table gives
     * both the frame's index and the code object's array (0: absent). */
    off->has_tlbc = off->free_threaded && minor >= 14 &&
                    off->frame.tlbc_index != PYF__ABSENT && off->frame.tlbc_index != 0 &&
                    off->code.co_tlbc != PYF__ABSENT && off->code.co_tlbc != 0;
    /* Generator frame states were renumbered in 3.15 (CREATED 0 ...
     * CLEARED 5, COMPLETED gone), and a suspended await keeps what it
     * awaits under the top of the value stack rather than at it. */
    if (minor >= 15) {
        off->gen_yield_from = 2;
        off->gen_cleared = 5;
        off->gen_completed = 5;
        off->await_back = 16;
    } else {
        off->gen_yield_from = -1;
        off->gen_cleared = 4;
        off->gen_completed = 1;
        off->await_back = 8;
    }
    off->gen_suspended = INT32_MIN; /* not used */
    off->gen_executing = INT32_MIN;
}

/* The numbers of a built-in table that are not offsets (3.11, 3.12). */
static void derive_builtin(pyf__offsets *off)
{
    /* 3.8-3.10 have no co_qualname: a frame is named by its co_name (as
     * their tracebacks name it), never by a guessed qualified name */
    if (off->code.qualname == PYF__ABSENT)
        off->code.qualname = off->code.name;
    off->owner_thread = builtin_int(off, "frame_owner.thread", 0);
    off->owner_generator = builtin_int(off, "frame_owner.generator", 1);
    off->owner_frame_object = builtin_int(off, "frame_owner.frame_object", 2);
    off->owner_cstack = builtin_int(off, "frame_owner.cstack", -1);
    off->owner_interpreter = -1;
    off->str_kind_shift = (unsigned)builtin_int(off, "unicode_state.kind_shift", 2);
    off->str_compact_bit = (unsigned)builtin_int(off, "unicode_state.compact_bit", 5);
    off->str_ascii_bit = (unsigned)builtin_int(off, "unicode_state.ascii_bit", 6);
    off->gen_yield_from = INT32_MIN; /* no such state */
    off->gen_cleared = builtin_int(off, "gen_state.cleared", 4);
    off->gen_completed = builtin_int(off, "gen_state.completed", 1);
    int suspended = builtin_int(off, "gen_state.suspended", INT32_MIN); /* a byte: -1 */
    off->gen_suspended = suspended == INT32_MIN ? suspended : (int8_t)suspended;
    off->gen_executing = builtin_int(off, "gen_state.executing", INT32_MIN);
    off->await_back = 8;
    /* 3.10's frame states (a signed char; INT32_MIN where the version has
     * none) */
    const char *const states[] = {"frame_state.created", "frame_state.suspended",
                                  "frame_state.executing", "frame_state.unwinding"};
    int *to[] = {&off->frame_state.created, &off->frame_state.suspended,
                 &off->frame_state.executing, &off->frame_state.unwinding};
    for (size_t i = 0; i < COUNT(states); i++) {
        int v = builtin_int(off, states[i], INT32_MIN);
        *to[i] = v == INT32_MIN ? v : (int8_t)v;
    }
    /* "opcode_caches.<opcode>": the opcodes with inline caches */
    for (uint32_t i = 0; i < off->nbuiltin; i++) {
        const char *name = off->builtin[i].name, *end;
        if (strncmp(name, "opcode_caches.", 14) != 0)
            continue;
        unsigned long op = strtoul(name + 14, (char **)&end, 10);
        uint64_t n = off->builtin[i].value;
        if (op < 256 && *end == '\0')
            off->opcode_caches[op] = n < PYF__CACHES_UNKNOWN ? (uint8_t)n : PYF__CACHES_UNKNOWN;
    }
}

/* Every semantic difference between versions, by the version: the one
 * place that compares version numbers (pyf__offsets' named properties say
 * what each means). */
static void decide(pyf__offsets *off)
{
    uint32_t minor = off->minor;
    /* 3.8-3.10: PyFrameObjects chained by f_back (the walk's other frame
     * model; the properties below that name data-stack frames do not
     * apply to them) */
    off->frame_model = minor <= 10 ? PYF__FRAMES_HEAP : PYF__FRAMES_DATASTACK;
    off->line_kind = minor <= 9    ? PYF__LINES_LNOTAB
                     : minor == 10 ? PYF__LINES_PEP626
                                   : PYF__LINES_LOCATIONS;
    off->lasti_kind = minor <= 9 ? PYF__LASTI_BYTES : PYF__LASTI_UNITS;
    off->running_kind = minor <= 9 ? PYF__RUNNING_FLAG : PYF__RUNNING_STATE;
    /* 3.8-3.10 keep the newest frame object in the thread state */
    off->top_kind = minor >= 11 && minor <= 12 ? PYF__TOP_CFRAME : PYF__TOP_TSTATE;
    if (minor <= 10)
        off->tstate.current_frame = off->tstate.frame;
    off->entry_kind = minor <= 11 ? PYF__ENTRY_FLAG : PYF__ENTRY_OWNER;
    off->ip_kind = minor <= 12 ? PYF__IP_PREVIOUS : PYF__IP_CURRENT;
    off->sp_kind = minor >= 14   ? PYF__SP_POINTER
                   : minor >= 12 ? PYF__SP_STACKTOP
                                 : PYF__SP_STACKTOP_STALE;
    /* 3.13 puts a cleared frame's stacktop at 0 (_PyFrame_ClearLocals);
     * 3.11's _PyFrame_Clear and 3.12's _PyFrame_ClearExceptCode leave it
     * where the return saved it, co_nlocalsplus: as a caller's that
     * called with an empty value stack */
    off->cleared_kind = minor >= 14   ? PYF__CLEARED_POINTER
                        : minor >= 13 ? PYF__CLEARED_STACKTOP
                                      : PYF__CLEARED_UNMARKED;
    off->executable_is_code = minor <= 12;
    off->int_kind = minor <= 11 ? PYF__INT_OB_SIZE : PYF__INT_LV_TAG;
    off->tagged_ints = minor >= 14;
    off->tag_mask = minor >= 14 ? ~(uint64_t)3 : ~(uint64_t)0;
    off->dictkeys_kind = minor <= 10 ? PYF__DICTKEYS_SIZED : PYF__DICTKEYS_LOG2;
    off->dictvalues_kind = minor <= 10   ? PYF__DICTVALUES_ARRAY
                           : minor <= 12 ? PYF__DICTVALUES_ORDER_BEFORE
                                         : PYF__DICTVALUES_HEADER;
    off->instdict_kind = minor <= 10   ? PYF__INSTDICT_NONE
                         : minor <= 11 ? PYF__INSTDICT_TWO_POINTERS
                         : minor == 12 ? PYF__INSTDICT_TAGGED
                                       : PYF__INSTDICT_INLINE;
    off->legacy_strs = minor <= 11;
    off->gil_kind = minor <= 11 ? PYF__GIL_RUNTIME : PYF__GIL_INTERP;
    off->exc_kind = minor <= 11 ? PYF__EXC_TRIPLE : PYF__EXC_SINGLE;
    off->has_tasks = minor >= 14 && off->gen.gi_iframe != PYF__ABSENT &&
                     off->set.table != PYF__ABSENT && off->llist.next != PYF__ABSENT;
    /* 3.14+ bumps code_object_generation whenever a code object is freed,
     * so a cached decode needs no re-check while it is unchanged; 3.11-3.13
     * have no such counter: each code object is checked again once per
     * snapshot. */
    off->has_code_generation = off->interp.code_object_generation != PYF__ABSENT;
}

/* Decode the fields of src into off (its version set), derive the rest,
 * decide the semantics and check it all. */
static int fill(pyf__offsets *off, const source *src, const char *what, char *err,
                size_t errlen)
{
    const char *all_ones = NULL;
#define DECODE(sec, member, name, kind, width, group) \
    off->sec.member = slot(src, name, &all_ones);
    USED_FIELDS(DECODE)
#undef DECODE
    /* llist_node has no size: a node is two pointers */
    off->llist.size = off->llist.next != PYF__ABSENT ? 16 : PYF__ABSENT;
    off->err_stackitem.size = 16;
    if (all_ones != NULL) {
        pyf__fmt(err, errlen, "%s field %s is 2^64-1", what, all_ones);
        return PYF_EOFFSETS;
    }
    if (off->builtin != NULL)
        derive_builtin(off);
    else
        derive_313(off);
    decide(off);
    return validate(off, err, errlen);
}

int pyf__offsets_decode(const uint8_t *raw, size_t len, pyf__offsets *off,
                        char *err, size_t errlen)
{
    memset(off, 0, sizeof *off);
    if (len < 24) {
        pyf__fmt(err, errlen, "_Py_DebugOffsets header is truncated");
        return PYF_EOFFSETS;
    }
    if (memcmp(raw, PYF__COOKIE, 8) != 0) {
        pyf__fmt(err, errlen,
                 "no \"xdebugpy\" cookie at the start of _PyRuntime: not a "
                 "CPython 3.13+ runtime (or the wrong address)");
        return PYF_ENOTPY;
    }
    uint64_t hex = pyf__ld64(raw + 8);
    if (!plausible_version(hex)) {
        /* the cookie's bytes in some other memory (a text that quotes it):
         * not a runtime, and no version to name */
        pyf__fmt(err, errlen, "the word after the \"xdebugpy\" cookie (0x%llx) is no "
                 "CPython version: not a _Py_DebugOffsets table", (unsigned long long)hex);
        return PYF_ENOTPY;
    }
    char vtext[40];
    pyf__version_text(hex, vtext, sizeof vtext);
    /* the version is known from here on, refused or not */
    set_version(off, hex);
    uint32_t major = off->major, minor = off->minor;
    const layout *l = major == 3 ? layout_for((int)minor) : NULL;
    if (l == NULL || (hex >> 32) != 0)
        return pyf__version_refused(hex, err, errlen);
    if (off->level != 0xF && !prerelease_known(minor, off->micro, off->level, off->serial)) {
        pyf__fmt(err, errlen,
                 "unsupported CPython %s (pre-releases of %u.%u have "
                 "different _Py_DebugOffsets layouts; use a final release%s)",
                 vtext, major, minor,
                 minor == 15 ? " or 3.15.0b4 and later" : "");
        return PYF_EVERSION;
    }
    if (len < l->nfields * 8) {
        pyf__fmt(err, errlen, "_Py_DebugOffsets table is truncated");
        return PYF_EOFFSETS;
    }
    uint64_t ft = pyf__ld64(raw + 16);
    if (ft > 1) {
        pyf__fmt(err, errlen,
                 "_Py_DebugOffsets free_threaded flag is %llu (expected 0 "
                 "or 1)", (unsigned long long)ft);
        return PYF_EOFFSETS;
    }
    off->free_threaded = ft == 1;
    source src = {.fields = l->fields, .nfields = l->nfields, .raw = raw};
    return fill(off, &src, "_Py_DebugOffsets", err, errlen);
}

/* ---- the built-in tables (3.8-3.12) --------------------------------------- */

typedef struct builtin_table {
    uint32_t minor;
    const pyf__builtin_field *pairs;
    size_t npairs;
    bool heap_frames; /* 3.8-3.10: the interpreter on the heap */
} builtin_table;

static const builtin_table builtins[] = {
    {8, pyf__builtin_38, COUNT(pyf__builtin_38), true},
    {9, pyf__builtin_39, COUNT(pyf__builtin_39), true},
    {10, pyf__builtin_310, COUNT(pyf__builtin_310), true},
    {11, pyf__builtin_311, COUNT(pyf__builtin_311), false},
    {12, pyf__builtin_312, COUNT(pyf__builtin_312), false},
};

/* The built-in table of hexversion's minor version, NULL for none. */
static const builtin_table *builtin_for(uint64_t hexversion)
{
    if (((hexversion >> 24) & 0xff) != 3)
        return NULL;
    for (size_t i = 0; i < COUNT(builtins); i++)
        if (((hexversion >> 16) & 0xff) == builtins[i].minor)
            return &builtins[i];
    return NULL;
}

static uint64_t builtin_value(const builtin_table *b, const char *name)
{
    source src = {.pairs = b->pairs, .npairs = b->npairs};
    const char *all_ones = NULL;
    return slot(&src, name, &all_ones);
}

int pyf__offsets_builtin(uint64_t hexversion, pyf__offsets *off, char *err, size_t errlen)
{
    memset(off, 0, sizeof *off);
    set_version(off, hexversion);
    const builtin_table *b = builtin_for(hexversion);
    if (b == NULL)
        return pyf__version_refused(hexversion, err, errlen);
    off->builtin = b->pairs;
    off->nbuiltin = (uint32_t)b->npairs;
    source src = {.pairs = b->pairs, .npairs = b->npairs};
    return fill(off, &src, "the built-in table", err, errlen);
}

uint64_t pyf__offsets_builtin_runtime_size(uint64_t hexversion)
{
    const builtin_table *b = builtin_for(hexversion);
    return b != NULL ? builtin_value(b, "runtime_state.size") : 0;
}

/* Which built-in table's runtime is at addr, by its shape: 3.11 and 3.12
 * embed the main interpreter in _PyRuntime, each at its own offset, and
 * interpreters.main points there.  0 when none fits. */
static uint32_t builtin_minor_at(const uint8_t *head, size_t len, uint64_t addr)
{
    for (size_t i = 0; i < COUNT(builtins); i++) {
        const builtin_table *b = &builtins[i];
        if (b->heap_frames) /* allocated on the heap: no such shape */
            continue;
        uint64_t main_at = builtin_value(b, "runtime_state.interpreters_main");
        uint64_t head_at = builtin_value(b, "runtime_state.interpreters_head");
        uint64_t embedded = builtin_value(b, "runtime_state.main_interpreter");
        if (main_at + 8 > len || head_at + 8 > len || embedded > UINT64_MAX - addr)
            continue;
        if (pyf__ld64(head + main_at) == addr + embedded && pyf__ld64(head + head_at) != 0 &&
            pyf__ld64(head + head_at) % 8 == 0)
            return b->minor;
    }
    return 0;
}

/* The heap-frame versions (3.8-3.10) whose runtime could be at addr, bit
 * 3.<n> set: they allocate the main interpreter on the heap, so the shape
 * says little (the interpreter pointers set and aligned, outside the
 * runtime) and cannot tell them apart; the version read decides
 * (pyf__offsets_version_read, each candidate in turn). */
static uint32_t heap_minors_at(const uint8_t *head, size_t len, uint64_t addr)
{
    uint32_t minors = 0;
    for (size_t i = 0; i < COUNT(builtins); i++) {
        const builtin_table *b = &builtins[i];
        if (!b->heap_frames)
            continue;
        uint64_t main_at = builtin_value(b, "runtime_state.interpreters_main");
        uint64_t head_at = builtin_value(b, "runtime_state.interpreters_head");
        uint64_t size = builtin_value(b, "runtime_state.size");
        if (main_at + 8 > len || head_at + 8 > len)
            continue;
        uint64_t main_interp = pyf__ld64(head + main_at), head_interp = pyf__ld64(head + head_at);
        if (main_interp != 0 && main_interp % 8 == 0 && head_interp != 0 &&
            head_interp % 8 == 0 && (main_interp < addr || main_interp - addr >= size))
            minors |= 1u << b->minor;
    }
    return minors;
}

/* ---- the asyncio debug offsets --------------------------------------------- */

static const char *const asyncio_layout[] = {
    "asyncio_task_object.size", "asyncio_task_object.task_name",
    "asyncio_task_object.task_awaited_by", "asyncio_task_object.task_is_task",
    "asyncio_task_object.task_awaited_by_is_set", "asyncio_task_object.task_coro",
    "asyncio_task_object.task_node",
    "asyncio_interpreter_state.size", "asyncio_interpreter_state.asyncio_tasks_head",
    "asyncio_thread_state.size", "asyncio_thread_state.asyncio_running_loop",
    "asyncio_thread_state.asyncio_running_task", "asyncio_thread_state.asyncio_tasks_head",
};
_Static_assert(COUNT(asyncio_layout) * 8 == PYF__ASYNCIO_TABLE_SIZE,
               "Py_AsyncioModuleDebugOffsets is 13 words");

/* Its fields, as USED_FIELDS (the thread section's offsets are into
 * _PyThreadStateImpl, the interpreter's into PyInterpreterState). */
#define ASYNCIO_FIELDS(X)                                                                   \
    X(task, size, "asyncio_task_object.size", SIZE, 0, ASYNCIO)                             \
    X(task, name, "asyncio_task_object.task_name", PTR, 8, ASYNCIO)                         \
    X(task, awaited_by, "asyncio_task_object.task_awaited_by", PTR, 8, ASYNCIO)             \
    X(task, is_task, "asyncio_task_object.task_is_task", OFF, 1, ASYNCIO)                   \
    X(task, awaited_by_is_set, "asyncio_task_object.task_awaited_by_is_set", OFF, 1, ASYNCIO) \
    X(task, coro, "asyncio_task_object.task_coro", PTR, 8, ASYNCIO)                         \
    X(task, node, "asyncio_task_object.task_node", PTR, 16, ASYNCIO)                        \
    X(interp, size, "asyncio_interpreter_state.size", SIZE, 0, ASYNCIO)                     \
    X(interp, tasks_head, "asyncio_interpreter_state.asyncio_tasks_head", PTR, 16, ASYNCIO) \
    X(thread, size, "asyncio_thread_state.size", SIZE, 0, ASYNCIO)                          \
    X(thread, running_loop, "asyncio_thread_state.asyncio_running_loop", PTR, 8, ASYNCIO)   \
    X(thread, running_task, "asyncio_thread_state.asyncio_running_task", PTR, 8, ASYNCIO)   \
    X(thread, tasks_head, "asyncio_thread_state.asyncio_tasks_head", PTR, 16, ASYNCIO)

static int check_asyncio(const pyf__asyncio_offsets *o, char *err, size_t errlen)
{
    check_ctx *c = &(check_ctx){err, errlen, PYF_OK, ASYNCIO};
    ASYNCIO_FIELDS(CHECK_SIZE)
    ASYNCIO_FIELDS(CHECK_FIELD)
    return c->rc;
}

/* Bounds of what the asyncio reader copies whole, and how the two tables
 * must fit together. */
static const char *asyncio_relations(const pyf__offsets *o, const pyf__asyncio_offsets *a)
{
    if (a->task.size < 32 || a->task.size > PYF__OBJECT_READ_MAX)
        return "task size";
    if (a->thread.size < o->tstate.size || a->thread.size > 65536)
        return "thread field";
    if (o->gen.gi_iframe + o->frame.size > PYF__OBJECT_READ_MAX ||
        o->gen.gi_frame_state >= o->gen.gi_iframe || o->set.size > PYF__OBJECT_READ_MAX ||
        o->lng.ob_digit + 8 > PYF__OBJECT_READ_MAX || o->lng.lv_tag + 8 > o->lng.ob_digit ||
        o->frame.stackpointer + 8 > o->frame.size)
        return "generator, set or int layout";
    return NULL;
}

int pyf__asyncio_offsets_decode(const uint8_t *raw, const pyf__offsets *o,
                                pyf__asyncio_offsets *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    const char *all_ones = NULL;
    source src = {.fields = asyncio_layout, .nfields = COUNT(asyncio_layout), .raw = raw};
#define DECODE(sec, member, name, kind, width, group) \
    a->sec.member = slot(&src, name, &all_ones);
    ASYNCIO_FIELDS(DECODE)
#undef DECODE
    if (all_ones != NULL) {
        pyf__fmt(err, errlen, "_AsyncioDebug field %s is 2^64-1", all_ones);
        return PYF_EOFFSETS;
    }
    /* its own fields, then the ones of _Py_DebugOffsets it relies on */
    int rc = check_asyncio(a, err, errlen);
    if (rc == PYF_OK)
        rc = check_used(o, TASKS, err, errlen);
    if (rc != PYF_OK)
        return rc;
    const char *bad = asyncio_relations(o, a);
    if (bad != NULL) {
        pyf__fmt(err, errlen, "%s", bad);
        return PYF_EOFFSETS;
    }
    /* The future's state is not published, but FutureObj keeps it between
     * awaited_by and is_task: trust that only where the layout shows it. */
    a->task.state = PYF__ABSENT;
    if (a->task.is_task == a->task.awaited_by + 12 &&
        a->task.awaited_by_is_set == a->task.is_task + 1)
        a->task.state = a->task.awaited_by + 8;
    return PYF_OK;
}

int pyf__offsets_check_values(const pyf__offsets *o, char *err, size_t errlen)
{
    int rc = check_used(o, VALUES, err, errlen);
    if (rc != PYF_OK)
        return rc;
    /* what the decoder copies whole, and the int layout (checked for the
     * asyncio reader, which needs 3.14+, with its table) */
    const uint64_t head = PYF__VALUE_HEAD_MAX;
    if (o->lng.size == PYF__ABSENT || o->lng.size > head ||
        o->lng.lv_tag + 8 > o->lng.ob_digit || o->lng.ob_digit > o->lng.size ||
        o->type.size > PYF__OBJECT_READ_MAX || o->tuple.size > head ||
        o->list.size > head || o->dict.size > head ||
        o->flt.size > head || o->frame.localsplus < 32 ||
        o->frame.localsplus > o->frame.size || o->code.firstlineno < 8 ||
        o->tuple.ob_item > o->tuple.size || o->pyobject.size > 64 ||
        o->bytes.size > head || o->code.size > 2 * PYF__OBJECT_READ_MAX ||
        o->unicode.asciiobject_size > 256 || o->unicode.compactunicodeobject_size > 256 ||
        (o->set.table != PYF__ABSENT &&
         (o->set.table > 120 || o->set.used > 120 || o->set.mask > 120))) {
        pyf__fmt(err, errlen, "value layout: the object, int, type, tuple, list, dict, "
                 "float, bytes, str, set, code or frame layout of _Py_DebugOffsets is "
                 "implausible");
        return PYF_EOFFSETS;
    }
    return PYF_OK;
}

int pyf__offsets_check_facts(const pyf__offsets *o, char *err, size_t errlen)
{
    int rc = check_used(o, FACTS, err, errlen);
    if (rc != PYF_OK)
        return rc;
    /* the exception being raised: one object, or (3.11) the triple */
    if (o->exc_kind == PYF__EXC_TRIPLE &&
        (o->tstate.curexc_type == PYF__ABSENT || o->tstate.curexc_value == PYF__ABSENT ||
         o->tstate.curexc_traceback == PYF__ABSENT)) {
        pyf__fmt(err, errlen, "thread facts layout: the thread state's exception fields "
                 "are missing");
        return PYF_EOFFSETS;
    }
    return PYF_OK;
}

int pyf__offsets_check_gil(const pyf__offsets *o, char *err, size_t errlen)
{
    bool ok;
    if (o->gil_kind == PYF__GIL_RUNTIME) {
        /* the runtime's one GIL (checked against the runtime's size) */
        ok = o->runtime.gil_locked != PYF__ABSENT && o->runtime.gil_holder != PYF__ABSENT;
    } else {
        /* the GIL's locked and holder are offsets into the interpreter
         * state, inside its own _gil (after its start); enabled
         * (free-threaded 3.13+; 0 in default builds) is an offset into
         * struct _gil_runtime_state itself (3.13-3.15 initialize it with
         * offsetof(struct _gil_runtime_state, enabled), 0: its first
         * field), absent before 3.13 */
        const uint64_t g = o->interp.gil_runtime_state;
        ok = g != PYF__ABSENT && o->interp.ceval_gil != PYF__ABSENT &&
             o->interp.gil_locked != PYF__ABSENT && o->interp.gil_holder != PYF__ABSENT &&
             o->interp.gil_locked >= g && o->interp.gil_locked - g <= 256 &&
             o->interp.gil_holder >= g && o->interp.gil_holder - g <= 256 &&
             (o->interp.gil_enabled == PYF__ABSENT ? !o->free_threaded
                                                   : o->interp.gil_enabled <= 256);
    }
    if (!ok) {
        pyf__fmt(err, errlen, "thread facts layout: the GIL fields are missing or "
                 "implausible");
        return PYF_EOFFSETS;
    }
    return PYF_OK;
}

size_t pyf__offsets_table_size(int minor)
{
    const layout *l = layout_for(minor);
    return l ? l->nfields * 8 : 0;
}

/* A runtime without the cookie: a CPython 3.11 or 3.12 runtime by its
 * shape (builtin_minor_at; its exact version is read by the target), or
 * none. */
static int no_cookie(const pyf_reader *r, pyf_stats *stats, uint64_t addr, uint8_t *raw,
                     pyf__offsets *off, char *err, size_t errlen)
{
    const size_t head = 64;
    memset(off, 0, sizeof *off);
    if (pyf__raw_read(r, stats, addr + 24, raw + 24, head - 24) == PYF_OK) {
        uint32_t minor = builtin_minor_at(raw, head, addr), others = 0;
        if (minor == 0 && (others = heap_minors_at(raw, head, addr)) != 0) {
            minor = 31 - (uint32_t)__builtin_clz(others); /* the newest first */
            others &= ~(1u << minor);
        }
        if (minor != 0) {
            int rc = pyf__offsets_builtin(0x030000F0u | (uint64_t)minor << 16, off, err, errlen);
            off->version_pending = rc == PYF_OK;
            off->version_others = others;
            return rc;
        }
    }
    pyf__fmt(err, errlen,
             "no \"xdebugpy\" cookie at the start of _PyRuntime, nor a CPython 3.8-3.12 "
             "runtime there: not a CPython runtime pyframes reads (or the wrong address)");
    return PYF_ENOTPY;
}

int pyf__offsets_load(const pyf_reader *r, uint64_t addr, pyf__offsets *off,
                      pyf_stats *stats, pyf_failure *f)
{
    uint8_t raw[PYF__RAW_OFFSETS_MAX];
    char *err = f->detail;
    size_t errlen = sizeof f->detail;
    int rc;

    pyf__failure_clear(f);
    if (addr == 0 || addr % 8 != 0)
        return pyf__failure_set(f, PYF_EINVAL, "_PyRuntime address 0x%llx is not a "
                                "valid (8-aligned, non-null) address",
                                (unsigned long long)addr);
    rc = pyf__raw_read(r, stats, addr, raw, 24);
    if (rc != PYF_OK)
        return pyf__read_failed(f, r, rc, "_Py_DebugOffsets", addr, 24);
    if (memcmp(raw, PYF__COOKIE, 8) != 0)
        return f->code = no_cookie(r, stats, addr, raw, off, err, errlen);
    uint64_t hex = pyf__ld64(raw + 8);
    size_t need = ((hex >> 24) & 0xff) == 3
                      ? pyf__offsets_table_size((int)((hex >> 16) & 0xff))
                      : 0;
    if (need == 0) /* let decode name the version */
        return f->code = pyf__offsets_decode(raw, 24, off, err, errlen);
    rc = pyf__raw_read(r, stats, addr + 24, raw + 24, need - 24);
    if (rc != PYF_OK)
        return pyf__read_failed(f, r, rc, "_Py_DebugOffsets", addr + 24, need - 24);
    return f->code = pyf__offsets_decode(raw, need, off, err, errlen);
}

/* ---- the probe ------------------------------------------------------------ */

void pyf__python_info_fill(const pyf__offsets *o, uint64_t addr, pyf_python_info *out)
{
    memset(out, 0, sizeof *out);
    out->runtime_addr = addr;
    out->hexversion = o->hexversion;
    out->major = o->major;
    out->minor = o->minor;
    out->micro = o->micro;
    out->level = o->level;
    out->serial = o->serial;
    out->free_threaded = o->free_threaded ? 1 : 0;
}

void pyf__python_info_version(uint64_t hexversion, uint64_t addr, pyf_python_info *out)
{
    pyf__offsets o;
    memset(&o, 0, sizeof o);
    set_version(&o, hexversion);
    pyf__python_info_fill(&o, addr, out);
}

int pyf_runtime_probe(const pyf_reader *reader, uint64_t addr,
                      pyf_python_info *out, pyf_failure *failure)
{
    pyf__offsets off;
    pyf_reader r;
    pyf_failure f;

    if (!pyf__failure_begin(failure, &f))
        return PYF_EINVAL;
    int rc = pyf__reader_in(reader, &r, f.detail, sizeof f.detail);
    if (rc != PYF_OK)
        return pyf__failure_out(failure, &f, rc);
    rc = pyf__offsets_load(&r, addr, &off, NULL, &f);
    if (rc == PYF_OK && off.version_pending) {
        /* its version is read through a target (sys.hexversion) */
        pyf_target *t = NULL;
        f.struct_size = sizeof f;
        rc = pyf_target_open(&r, addr, NULL, &t, &f);
        if (t != NULL) {
            off = t->off;
            pyf_target_close(t);
        } else if (rc == PYF_EVERSION) {
            off.major = 0; /* no version to name unless the target read one */
        }
    }
    /* an unsupported version is still a version: say which */
    if ((rc == PYF_OK || (rc == PYF_EVERSION && off.major != 0)) && out != NULL)
        pyf__python_info_fill(&off, addr, out);
    return pyf__failure_out(failure, &f, rc);
}
