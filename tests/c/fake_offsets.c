/*
 * fake_offsets.c - _Py_DebugOffsets tables for synthetic targets.
 *
 * Field order follows the published layouts (3.13: pycore_runtime.h,
 * 3.14/3.15: pycore_debug_offsets.h).  Values are those observed in Debian's
 * x86-64 GIL builds (3.13.18, 3.14.10, 3.15.2).  A few values that were not
 * observed (interpreter size on 3.13, the set and heap-type sections) are
 * plausible stand-ins derived from the struct definitions.
 *
 * Table layout: cookie[8] @0, version @8, free_threaded @16, then one
 * uint64_t per entry below, in order, starting at byte 24.
 */
#include "fake_offsets.h"

#include <string.h>

typedef struct fo_field {
    const char *name; /* "section.field" */
    uint64_t value;
} fo_field;

/* ---- CPython 3.13 (584 bytes) ------------------------------------------ */
static const fo_field fields_313[] = {
    {"runtime_state.size", 283408},
    {"runtime_state.finalizing", 608},
    {"runtime_state.interpreters_head", 632},

    {"interpreter_state.size", 222192},
    {"interpreter_state.id", 7272},
    {"interpreter_state.next", 7264},
    {"interpreter_state.threads_head", 7344},
    {"interpreter_state.gc", 7400},
    {"interpreter_state.imports_modules", 7656},
    {"interpreter_state.sysdict", 7640},
    {"interpreter_state.builtins", 7648},
    {"interpreter_state.ceval_gil", 16},
    {"interpreter_state.gil_runtime_state", 7752},
    {"interpreter_state.gil_runtime_state_enabled", 0},
    {"interpreter_state.gil_runtime_state_locked", 7768},
    {"interpreter_state.gil_runtime_state_holder", 7760},

    {"thread_state.size", 312},
    {"thread_state.prev", 0},
    {"thread_state.next", 8},
    {"thread_state.interp", 16},
    {"thread_state.current_frame", 72},
    {"thread_state.thread_id", 152},
    {"thread_state.native_thread_id", 160},
    {"thread_state.datastack_chunk", 232},
    {"thread_state.status", 32},

    {"interpreter_frame.size", 80},
    {"interpreter_frame.previous", 8},
    {"interpreter_frame.executable", 0},
    {"interpreter_frame.instr_ptr", 56},
    {"interpreter_frame.localsplus", 72},
    {"interpreter_frame.owner", 70},

    {"code_object.size", 208},
    {"code_object.filename", 112},
    {"code_object.name", 120},
    {"code_object.qualname", 128},
    {"code_object.linetable", 136},
    {"code_object.firstlineno", 68},
    {"code_object.argcount", 52},
    {"code_object.localsplusnames", 96},
    {"code_object.localspluskinds", 104},
    {"code_object.co_code_adaptive", 200},

    {"pyobject.size", 16},
    {"pyobject.ob_type", 8},

    {"type_object.size", 416},
    {"type_object.tp_name", 24},
    {"type_object.tp_repr", 88},
    {"type_object.tp_flags", 168},

    {"tuple_object.size", 32},
    {"tuple_object.ob_item", 24},
    {"tuple_object.ob_size", 16},

    {"list_object.size", 40},
    {"list_object.ob_item", 24},
    {"list_object.ob_size", 16},

    {"dict_object.size", 48},
    {"dict_object.ma_keys", 32},
    {"dict_object.ma_values", 40},

    {"float_object.size", 24},
    {"float_object.ob_fval", 16},

    {"long_object.size", 32},
    {"long_object.lv_tag", 16},
    {"long_object.ob_digit", 24},

    {"bytes_object.size", 40},
    {"bytes_object.ob_size", 16},
    {"bytes_object.ob_sval", 32},

    {"unicode_object.size", 64},
    {"unicode_object.state", 32},
    {"unicode_object.length", 16},
    {"unicode_object.asciiobject_size", 40},

    {"gc.size", 240},
    {"gc.collecting", 200},
};

/* ---- CPython 3.14 (760 bytes) ------------------------------------------ */

#define FIELDS_314_315_FRAME_CODE \
    {"interpreter_frame.size", 88}, \
    {"interpreter_frame.previous", 8}, \
    {"interpreter_frame.executable", 0}, \
    {"interpreter_frame.instr_ptr", 56}, \
    {"interpreter_frame.localsplus", 80}, \
    {"interpreter_frame.owner", 74}, \
    {"interpreter_frame.stackpointer", 64}, \
    {"interpreter_frame.tlbc_index", 0}, \
    {"code_object.size", 216}, \
    {"code_object.filename", 112}, \
    {"code_object.name", 120}, \
    {"code_object.qualname", 128}, \
    {"code_object.linetable", 136}, \
    {"code_object.firstlineno", 68}, \
    {"code_object.argcount", 52}, \
    {"code_object.localsplusnames", 96}, \
    {"code_object.localspluskinds", 104}, \
    {"code_object.co_code_adaptive", 208}, \
    {"code_object.co_tlbc", 0}, \
    {"pyobject.size", 16}, \
    {"pyobject.ob_type", 8},


#define FIELDS_314_315_OBJECTS \
    {"tuple_object.size", 40}, \
    {"tuple_object.ob_item", 32}, \
    {"tuple_object.ob_size", 16}, \
    {"list_object.size", 40}, \
    {"list_object.ob_item", 24}, \
    {"list_object.ob_size", 16}, \
    {"set_object.size", 200}, \
    {"set_object.used", 24}, \
    {"set_object.table", 40}, \
    {"set_object.mask", 32}, \
    {"dict_object.size", 48}, \
    {"dict_object.ma_keys", 32}, \
    {"dict_object.ma_values", 40}, \
    {"float_object.size", 24}, \
    {"float_object.ob_fval", 16}, \
    {"long_object.size", 32}, \
    {"long_object.lv_tag", 16}, \
    {"long_object.ob_digit", 24}, \
    {"bytes_object.size", 40}, \
    {"bytes_object.ob_size", 16}, \
    {"bytes_object.ob_sval", 32}, \
    {"unicode_object.size", 64}, \
    {"unicode_object.state", 32}, \
    {"unicode_object.length", 16}, \
    {"unicode_object.asciiobject_size", 40},

/* Values 3.14 and 3.15 share. */
#define FIELDS_314_315_DEBUGGER \
    {"gen_object.size", 160}, \
    {"gen_object.gi_name", 24}, \
    {"gen_object.gi_iframe", 72}, \
    {"gen_object.gi_frame_state", 67}, \
    {"llist_node.next", 0}, \
    {"llist_node.prev", 8}, \
    {"debugger_support.eval_breaker", 24},

static const fo_field fields_314[] = {
    {"runtime_state.size", 316616},
    {"runtime_state.finalizing", 784},
    {"runtime_state.interpreters_head", 808},

    {"interpreter_state.size", 225864},
    {"interpreter_state.id", 7280},
    {"interpreter_state.next", 7272},
    {"interpreter_state.threads_head", 7344},
    {"interpreter_state.threads_main", 7360},
    {"interpreter_state.gc", 7408},
    {"interpreter_state.imports_modules", 7688},
    {"interpreter_state.sysdict", 7672},
    {"interpreter_state.builtins", 7680},
    {"interpreter_state.ceval_gil", 16},
    {"interpreter_state.gil_runtime_state", 7784},
    {"interpreter_state.gil_runtime_state_enabled", 0},
    {"interpreter_state.gil_runtime_state_locked", 7800},
    {"interpreter_state.gil_runtime_state_holder", 7792},
    {"interpreter_state.code_object_generation", 7992},
    {"interpreter_state.tlbc_generation", 0},

    {"thread_state.size", 832},
    {"thread_state.prev", 0},
    {"thread_state.next", 8},
    {"thread_state.interp", 16},
    {"thread_state.current_frame", 72},
    {"thread_state.thread_id", 152},
    {"thread_state.native_thread_id", 160},
    {"thread_state.datastack_chunk", 232},
    {"thread_state.status", 32},

    FIELDS_314_315_FRAME_CODE

    {"type_object.size", 416},
    {"type_object.tp_name", 24},
    {"type_object.tp_repr", 88},
    {"type_object.tp_flags", 168},

    FIELDS_314_315_OBJECTS

    {"gc.size", 264},
    {"gc.collecting", 192},

    FIELDS_314_315_DEBUGGER
    {"debugger_support.remote_debugger_support", 304},
    {"debugger_support.remote_debugging_enabled", 8076},
    {"debugger_support.debugger_pending_call", 0},
    {"debugger_support.debugger_script_path", 4},
    {"debugger_support.debugger_script_path_size", 512},
};

/* ---- CPython 3.15 (888 bytes) ------------------------------------------ */
static const fo_field fields_315[] = {
    {"runtime_state.size", 346568},
    {"runtime_state.finalizing", 912},
    {"runtime_state.interpreters_head", 936},

    {"interpreter_state.size", 226240},
    {"interpreter_state.id", 7272},
    {"interpreter_state.next", 7264},
    {"interpreter_state.threads_head", 7336},
    {"interpreter_state.threads_main", 7352},
    {"interpreter_state.gc", 7400},
    {"interpreter_state.imports_modules", 7592},
    {"interpreter_state.sysdict", 7576},
    {"interpreter_state.builtins", 7584},
    {"interpreter_state.ceval_gil", 16},
    {"interpreter_state.gil_runtime_state", 7736},
    {"interpreter_state.gil_runtime_state_enabled", 0},
    {"interpreter_state.gil_runtime_state_locked", 7752},
    {"interpreter_state.gil_runtime_state_holder", 7744},
    {"interpreter_state.code_object_generation", 7944},
    {"interpreter_state.tlbc_generation", 0},

    {"thread_state.size", 888},
    {"thread_state.prev", 0},
    {"thread_state.next", 8},
    {"thread_state.interp", 16},
    {"thread_state.current_frame", 72},
    {"thread_state.base_frame", 80},
    {"thread_state.last_profiled_frame", 88},
    {"thread_state.last_profiled_frame_seq", 96},
    {"thread_state.thread_id", 176},
    {"thread_state.native_thread_id", 184},
    {"thread_state.datastack_chunk", 256},
    {"thread_state.status", 32},
    {"thread_state.holds_gil", 36},
    {"thread_state.gil_requested", 40},
    {"thread_state.current_exception", 136},
    {"thread_state.exc_state", 288},

    {"err_stackitem.exc_value", 0},

    FIELDS_314_315_FRAME_CODE

    {"type_object.size", 424},
    {"type_object.tp_name", 24},
    {"type_object.tp_repr", 88},
    {"type_object.tp_flags", 168},
    {"type_object.tp_basicsize", 32},
    {"type_object.tp_dictoffset", 288},

    {"heap_type_object.size", 936},
    {"heap_type_object.ht_cached_keys", 824},

    FIELDS_314_315_OBJECTS
    {"unicode_object.compactunicodeobject_size", 56},

    {"gc.size", 176},
    {"gc.collecting", 112},
    {"gc.frame", 120},
    {"gc.generation_stats_size", 1120},
    {"gc.generation_stats", 104},

    FIELDS_314_315_DEBUGGER
    {"debugger_support.remote_debugger_support", 344},
    {"debugger_support.remote_debugging_enabled", 8028},
    {"debugger_support.debugger_pending_call", 0},
    {"debugger_support.debugger_script_path", 4},
    {"debugger_support.debugger_script_path_size", 512},
};

#define FO_HEADER 24u
#define FO_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const fo_field *fo_table(int minor, size_t *n)
{
    switch (minor) {
    case 13: *n = FO_COUNT(fields_313); return fields_313;
    case 14: *n = FO_COUNT(fields_314); return fields_314;
    case 15: *n = FO_COUNT(fields_315); return fields_315;
    default: *n = 0; return NULL;
    }
}

static void fo_put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, sizeof v); /* x86-64: native little-endian, like the target */
}

static uint64_t fo_get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

size_t pyf_test_fill_offsets(uint8_t *buf, size_t cap, int minor, uint64_t hexversion)
{
    size_t n;
    const fo_field *f = fo_table(minor, &n);
    if (f == NULL)
        return 0;
    size_t total = FO_HEADER + 8u * n;
    if (buf == NULL || cap < total)
        return 0;
    memcpy(buf, "xdebugpy", 8);
    fo_put64(buf + 8, hexversion);
    fo_put64(buf + 16, 0); /* GIL build */
    for (size_t i = 0; i < n; i++)
        fo_put64(buf + FO_HEADER + 8u * i, f[i].value);
    return total;
}

size_t pyf_test_offsets_field(int minor, const char *name)
{
    size_t n;
    const fo_field *f = fo_table(minor, &n);
    if (f == NULL || name == NULL)
        return (size_t)-1;
    if (strcmp(name, "cookie") == 0)
        return 0;
    if (strcmp(name, "version") == 0)
        return 8;
    if (strcmp(name, "free_threaded") == 0)
        return 16;
    for (size_t i = 0; i < n; i++)
        if (strcmp(f[i].name, name) == 0)
            return FO_HEADER + 8u * i;
    return (size_t)-1;
}

uint64_t pyf_test_offsets_get(const uint8_t *table, int minor, const char *name)
{
    size_t off = pyf_test_offsets_field(minor, name);
    if (table == NULL || off == (size_t)-1)
        return UINT64_MAX;
    return fo_get64(table + off);
}
