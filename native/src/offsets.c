/*
 * offsets.c - decode and validate _Py_DebugOffsets.
 *
 * The table's own layout differs per minor version (fields are inserted in
 * the middle of sections), so each supported version has its field list in
 * order.  The table is 8 bytes of cookie followed by uint64_t slots.  The
 * decoded result is one version-independent pyf__offsets; after this file
 * nothing branches on the layout, only on genuine semantic differences.
 */
#include <string.h>

#include "internal.h"

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

/* Value of a named slot, or PYF__ABSENT. */
static uint64_t slot(const layout *l, const uint8_t *raw, const char *name)
{
    for (size_t i = 0; i < l->nfields; i++)
        if (strcmp(l->fields[i], name) == 0)
            return pyf__ld64(raw + i * 8);
    return PYF__ABSENT;
}

/* ---- validation ----------------------------------------------------------
 * Every field the walker dereferences is checked against its section's size:
 * offset + width <= size, and the size against a sane cap. */

#define SECTION_MAX (1u << 20)

typedef struct check_ctx {
    char *err;
    size_t errlen;
    int rc;
} check_ctx;

static void check_size(check_ctx *c, const char *name, uint64_t size,
                       uint64_t min)
{
    if (c->rc != PYF_OK)
        return;
    if (size < min || size > SECTION_MAX) {
        pyf__fmt(c->err, c->errlen,
                 "_Py_DebugOffsets field %s.size is %llu (expected %llu..%u)",
                 name, (unsigned long long)size, (unsigned long long)min,
                 SECTION_MAX);
        c->rc = PYF_EOFFSETS;
    }
}

static void check_field(check_ctx *c, const char *name, uint64_t off,
                        uint64_t width, uint64_t section_size)
{
    if (c->rc != PYF_OK || off == PYF__ABSENT)
        return;
    if (off > section_size || width > section_size - off) {
        pyf__fmt(c->err, c->errlen,
                 "_Py_DebugOffsets field %s is %llu, outside its structure "
                 "of %llu bytes",
                 name, (unsigned long long)off,
                 (unsigned long long)section_size);
        c->rc = PYF_EOFFSETS;
    }
}

static void check_align(check_ctx *c, const char *name, uint64_t off)
{
    if (c->rc != PYF_OK || off == PYF__ABSENT)
        return;
    if (off % 8 != 0) {
        pyf__fmt(c->err, c->errlen,
                 "_Py_DebugOffsets field %s is %llu, not pointer-aligned",
                 name, (unsigned long long)off);
        c->rc = PYF_EOFFSETS;
    }
}

static int validate(const pyf__offsets *o, char *err, size_t errlen)
{
    check_ctx c = {err, errlen, PYF_OK};

    check_size(&c, "runtime_state", o->runtime.size, 16);
    check_size(&c, "interpreter_state", o->interp.size, 16);
    check_size(&c, "thread_state", o->tstate.size, 16);
    check_size(&c, "interpreter_frame", o->frame.size, 16);
    check_size(&c, "code_object", o->code.size, 16);
    check_size(&c, "pyobject", o->pyobject.size, 16);
    check_size(&c, "type_object", o->type.size, 16);
    check_size(&c, "bytes_object", o->bytes.size, 16);
    check_size(&c, "unicode_object", o->unicode.size, 16);

#define F(sec, name, field, width) \
    check_field(&c, sec "." #field, o->name.field, width, o->name.size)
#define P(sec, name, field)                          \
    do {                                             \
        F(sec, name, field, 8);                      \
        check_align(&c, sec "." #field, o->name.field); \
    } while (0)

    P("runtime_state", runtime, interpreters_head);
    P("interpreter_state", interp, next);
    P("interpreter_state", interp, threads_head);
    P("interpreter_state", interp, threads_main);
    F("interpreter_state", interp, id, 8);
    F("interpreter_state", interp, code_object_generation, 8);
    P("thread_state", tstate, next);
    P("thread_state", tstate, interp);
    P("thread_state", tstate, current_frame);
    P("thread_state", tstate, base_frame);
    P("thread_state", tstate, last_profiled_frame);
    F("thread_state", tstate, last_profiled_frame_seq, 8);
    F("thread_state", tstate, thread_id, 8);
    F("thread_state", tstate, native_thread_id, 8);
    P("thread_state", tstate, datastack_chunk);
    F("thread_state", tstate, holds_gil, 4);
    P("interpreter_frame", frame, previous);
    P("interpreter_frame", frame, executable);
    P("interpreter_frame", frame, instr_ptr);
    F("interpreter_frame", frame, owner, 1);
    F("interpreter_frame", frame, tlbc_index, 4);
    P("code_object", code, filename);
    P("code_object", code, qualname);
    P("code_object", code, name);
    P("code_object", code, linetable);
    F("code_object", code, firstlineno, 4);
    F("code_object", code, co_code_adaptive, 2);
    P("pyobject", pyobject, ob_type);
    P("type_object", type, tp_name);
    F("type_object", type, tp_flags, 8);
    F("bytes_object", bytes, ob_size, 8);
    F("unicode_object", unicode, state, 4);
    F("unicode_object", unicode, length, 8);
#undef P
#undef F
    if (c.rc != PYF_OK)
        return c.rc;

    /* Sizes of objects the walker copies whole. */
    if (o->frame.size > 4096 || o->code.size > 65536 ||
        o->tstate.size > 65536) {
        pyf__fmt(err, errlen,
                 "_Py_DebugOffsets sizes are implausible (frame %llu, code "
                 "%llu, thread state %llu bytes)",
                 (unsigned long long)o->frame.size,
                 (unsigned long long)o->code.size,
                 (unsigned long long)o->tstate.size);
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

static void version_text(uint64_t hex, char *buf, size_t len)
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

/* Pre-releases are accepted only where their layout is known to equal the
 * final one: 3.15.0b4 and later (b4 added last_profiled_frame_seq). */
static bool prerelease_known(uint32_t minor, uint32_t micro, uint32_t level,
                             uint32_t serial)
{
    if (minor == 15 && micro == 0)
        return (level == 0xB && serial >= 4) || level == 0xC;
    return false;
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
    char vtext[40];
    version_text(hex, vtext, sizeof vtext);
    uint32_t major = (hex >> 24) & 0xff, minor = (hex >> 16) & 0xff,
             micro = (hex >> 8) & 0xff, level = (hex >> 4) & 0xf,
             serial = hex & 0xf;
    const layout *l = major == 3 ? layout_for((int)minor) : NULL;
    if (l == NULL || (hex >> 32) != 0) {
        pyf__fmt(err, errlen,
                 "unsupported CPython %s: pyframes reads CPython 3.13, 3.14 "
                 "and 3.15", vtext);
        return PYF_EVERSION;
    }
    if (level != 0xF && !prerelease_known(minor, micro, level, serial)) {
        pyf__fmt(err, errlen,
                 "unsupported CPython %s: pre-releases of %u.%u have "
                 "different _Py_DebugOffsets layouts; use a final release%s",
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

    off->hexversion = hex;
    off->major = major;
    off->minor = minor;
    off->micro = micro;
    off->level = level;
    off->serial = serial;
    off->free_threaded = ft == 1;

#define G(name) slot(l, raw, name)
    off->runtime.size = G("runtime_state.size");
    off->runtime.finalizing = G("runtime_state.finalizing");
    off->runtime.interpreters_head = G("runtime_state.interpreters_head");
    off->interp.size = G("interpreter_state.size");
    off->interp.id = G("interpreter_state.id");
    off->interp.next = G("interpreter_state.next");
    off->interp.threads_head = G("interpreter_state.threads_head");
    off->interp.threads_main = G("interpreter_state.threads_main");
    off->interp.gc = G("interpreter_state.gc");
    off->interp.code_object_generation =
        G("interpreter_state.code_object_generation");
    off->interp.tlbc_generation = G("interpreter_state.tlbc_generation");
    off->tstate.size = G("thread_state.size");
    off->tstate.prev = G("thread_state.prev");
    off->tstate.next = G("thread_state.next");
    off->tstate.interp = G("thread_state.interp");
    off->tstate.current_frame = G("thread_state.current_frame");
    off->tstate.base_frame = G("thread_state.base_frame");
    off->tstate.last_profiled_frame = G("thread_state.last_profiled_frame");
    off->tstate.last_profiled_frame_seq =
        G("thread_state.last_profiled_frame_seq");
    off->tstate.thread_id = G("thread_state.thread_id");
    off->tstate.native_thread_id = G("thread_state.native_thread_id");
    off->tstate.datastack_chunk = G("thread_state.datastack_chunk");
    off->tstate.status = G("thread_state.status");
    off->tstate.holds_gil = G("thread_state.holds_gil");
    off->frame.size = G("interpreter_frame.size");
    off->frame.previous = G("interpreter_frame.previous");
    off->frame.executable = G("interpreter_frame.executable");
    off->frame.instr_ptr = G("interpreter_frame.instr_ptr");
    off->frame.localsplus = G("interpreter_frame.localsplus");
    off->frame.owner = G("interpreter_frame.owner");
    off->frame.stackpointer = G("interpreter_frame.stackpointer");
    off->frame.tlbc_index = G("interpreter_frame.tlbc_index");
    off->code.size = G("code_object.size");
    off->code.filename = G("code_object.filename");
    off->code.name = G("code_object.name");
    off->code.qualname = G("code_object.qualname");
    off->code.linetable = G("code_object.linetable");
    off->code.firstlineno = G("code_object.firstlineno");
    off->code.co_code_adaptive = G("code_object.co_code_adaptive");
    off->code.co_tlbc = G("code_object.co_tlbc");
    off->pyobject.size = G("pyobject.size");
    off->pyobject.ob_type = G("pyobject.ob_type");
    off->type.size = G("type_object.size");
    off->type.tp_name = G("type_object.tp_name");
    off->type.tp_flags = G("type_object.tp_flags");
    off->bytes.size = G("bytes_object.size");
    off->bytes.ob_size = G("bytes_object.ob_size");
    off->bytes.ob_sval = G("bytes_object.ob_sval");
    off->unicode.size = G("unicode_object.size");
    off->unicode.state = G("unicode_object.state");
    off->unicode.length = G("unicode_object.length");
    off->unicode.asciiobject_size = G("unicode_object.asciiobject_size");
    off->unicode.compactunicodeobject_size =
        G("unicode_object.compactunicodeobject_size");
    off->gen.size = G("gen_object.size");
    off->gen.gi_name = G("gen_object.gi_name");
    off->gen.gi_iframe = G("gen_object.gi_iframe");
    off->gen.gi_frame_state = G("gen_object.gi_frame_state");
#undef G

    /* PyCompactUnicodeObject adds utf8_length and utf8 (16 bytes) to
     * PyASCIIObject; 3.15 publishes its size, earlier versions do not. */
    if (off->unicode.compactunicodeobject_size == PYF__ABSENT)
        off->unicode.compactunicodeobject_size =
            off->unicode.asciiobject_size + 16;

    off->tag_mask = minor >= 14 ? ~(uint64_t)3 : ~(uint64_t)0;
    off->owner_thread = 0;
    off->owner_generator = 1;
    off->owner_frame_object = 2;
    off->owner_interpreter = minor >= 14 ? 3 : -1;
    off->owner_cstack = minor == 13 ? 3 : (minor == 14 ? 4 : -1);

    return validate(off, err, errlen);
}

size_t pyf__offsets_table_size(int minor)
{
    const layout *l = layout_for(minor);
    return l ? l->nfields * 8 : 0;
}

int pyf__offsets_load(const pyf_reader *r, uint64_t addr, pyf__offsets *off,
                      pyf_stats *stats, char *err, size_t errlen)
{
    uint8_t raw[PYF__RAW_OFFSETS_MAX];
    if (addr == 0 || addr % 8 != 0) {
        pyf__fmt(err, errlen, "_PyRuntime address 0x%llx is not a valid "
                 "(8-aligned, non-null) address", (unsigned long long)addr);
        return PYF_EINVAL;
    }
    int rc = pyf__raw_read(r, stats, addr, raw, 24);
    if (rc != PYF_OK) {
        pyf__read_failed(err, errlen, r, rc, "_Py_DebugOffsets", addr, 24);
        return rc;
    }
    if (memcmp(raw, PYF__COOKIE, 8) != 0)
        return pyf__offsets_decode(raw, 24, off, err, errlen);
    uint64_t hex = pyf__ld64(raw + 8);
    size_t need = ((hex >> 24) & 0xff) == 3
                      ? pyf__offsets_table_size((int)((hex >> 16) & 0xff))
                      : 0;
    if (need == 0) /* let decode name the version */
        return pyf__offsets_decode(raw, 24, off, err, errlen);
    rc = pyf__raw_read(r, stats, addr + 24, raw + 24, need - 24);
    if (rc != PYF_OK) {
        pyf__read_failed(err, errlen, r, rc, "_Py_DebugOffsets", addr + 24,
                         need - 24);
        return rc;
    }
    return pyf__offsets_decode(raw, need, off, err, errlen);
}
