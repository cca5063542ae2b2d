/*
 * emit_builtin_table.c - print, as one block of native/src/layout_tables.h,
 * the layout of a CPython that publishes no _Py_DebugOffsets (3.8-3.12),
 * from its own headers: every offset and size libpyframes reads, named as
 * the library's decoder names them (the _Py_DebugOffsets names where the
 * field means the same, others for what only these versions have), and the
 * object layouts of the value decoder (native/src/value_fields.h) under
 * "values.".  A field the version lacks is left out (the library reads it
 * as absent).  Compiled with -DPy_BUILD_CORE against an installed
 * include/python3.X (pyenv's builds install their internal headers, and so
 * does Debian's python3.X-dev); tests/c/builtin_tables.cmake regenerates
 * each block where the headers are and compares it with the checked-in one.
 * Usage: emit_builtin_table INCLUDE_DIR_LABEL
 */
#define Py_BUILD_CORE 1
#include <pyconfig.h>
/* 3.8's Python.h includes <crypt.h> where its build had one; no layout
 * needs it, and a machine without libcrypt's headers has none */
#undef HAVE_CRYPT_H
#include <Python.h>
#include <frameobject.h>
#if PY_MINOR_VERSION >= 9
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#else
#include <internal/pycore_pystate.h> /* 3.8: _PyRuntimeState, struct _is */
#endif
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_frame.h>
#include <internal/pycore_dict.h>
#include <internal/pycore_object.h>
#include <internal/pycore_moduleobject.h>
#include <internal/pycore_code.h>
#define NEED_OPCODE_TABLES /* _PyOpcode_Caches and _PyOpcode_Deopt */
#include <internal/pycore_opcode.h>
#endif
#include <internal/pycore_gil.h>
#include <structmember.h>
#include <stdio.h>
#include <string.h>

#include "../../../native/src/value_fields.h"

#if PY_MAJOR_VERSION != 3 || PY_MINOR_VERSION < 8 || PY_MINOR_VERSION > 12
#error "emit_builtin_table is for CPython 3.8-3.12 (3.13+ publish _Py_DebugOffsets)"
#endif
/* 3.8-3.10 keep their frames as heap objects (PyFrameObject, chained by
 * f_back from the thread state's frame); 3.11+ keep _PyInterpreterFrame
 * records in the thread's data stack */
#define HEAP_FRAMES (PY_MINOR_VERSION <= 10)

static void field(const char *name, unsigned long long value)
{
    printf("    {\"%s\", %llu},\n", name, value);
}

#define OFF(name, type, member) field(name, (unsigned long long)offsetof(type, member))
#define SIZE(name, type) field(name, (unsigned long long)sizeof(type))

/* PyASCIIObject.state with one bitfield set, read back from a real object */
static unsigned state_bit(int which)
{
    PyASCIIObject o;
    memset(&o, 0, sizeof o);
    switch (which) {
    case 1: o.state.kind = 1; break;
    case 5: o.state.compact = 1; break;
    default: o.state.ascii = 1; break;
    }
    unsigned w = 0;
    memcpy(&w, &o.state, sizeof w);
    return w;
}

static unsigned bit_index(unsigned w)
{
    unsigned i = 0;
    while (w != 0 && (w & 1) == 0) {
        w >>= 1;
        i++;
    }
    return i;
}

/* The runtime, its interpreters and their thread states. */
static void state_fields(void)
{
    SIZE("runtime_state.size", _PyRuntimeState);
#if PY_MINOR_VERSION == 8
    OFF("runtime_state.finalizing", _PyRuntimeState, finalizing);
#else
    OFF("runtime_state.finalizing", _PyRuntimeState, _finalizing);
#endif
    OFF("runtime_state.interpreters_head", _PyRuntimeState, interpreters.head);
    OFF("runtime_state.interpreters_main", _PyRuntimeState, interpreters.main);
#if PY_MINOR_VERSION >= 11
    OFF("runtime_state.main_interpreter", _PyRuntimeState, _main_interpreter);
#endif
#if PY_MINOR_VERSION <= 11
    /* the one GIL, in the runtime */
    OFF("runtime_state.gil_locked", _PyRuntimeState, ceval.gil.locked);
    OFF("runtime_state.gil_holder", _PyRuntimeState, ceval.gil.last_holder);
#endif
#if HEAP_FRAMES
    /* the thread state holding the GIL */
    OFF("runtime_state.tstate_current", _PyRuntimeState, gilstate.tstate_current);
#endif

    SIZE("interpreter_state.size", PyInterpreterState);
    OFF("interpreter_state.id", PyInterpreterState, id);
    OFF("interpreter_state.next", PyInterpreterState, next);
#if HEAP_FRAMES
    OFF("interpreter_state.threads_head", PyInterpreterState, tstate_head);
#else
    OFF("interpreter_state.threads_head", PyInterpreterState, threads.head);
#endif
    OFF("interpreter_state.sysdict", PyInterpreterState, sysdict);
#if PY_MINOR_VERSION <= 11
    OFF("interpreter_state.imports_modules", PyInterpreterState, modules);
#else
    OFF("interpreter_state.imports_modules", PyInterpreterState, imports.modules);
    /* the GIL in use (a pointer), and the interpreter's own */
    OFF("interpreter_state.ceval_gil", PyInterpreterState, ceval.gil);
    OFF("interpreter_state.gil_runtime_state", PyInterpreterState, _gil);
    OFF("interpreter_state.gil_runtime_state_locked", PyInterpreterState, _gil.locked);
    OFF("interpreter_state.gil_runtime_state_holder", PyInterpreterState, _gil.last_holder);
#endif

    SIZE("thread_state.size", PyThreadState);
    OFF("thread_state.prev", PyThreadState, prev);
    OFF("thread_state.next", PyThreadState, next);
    OFF("thread_state.interp", PyThreadState, interp);
#if HEAP_FRAMES
    /* the newest frame object, NULL while no Python code runs */
    OFF("thread_state.frame", PyThreadState, frame);
#endif
#if PY_MINOR_VERSION >= 10
    OFF("thread_state.cframe", PyThreadState, cframe);
    OFF("thread_state.root_cframe", PyThreadState, root_cframe);
#endif
    OFF("thread_state.thread_id", PyThreadState, thread_id);
#if !HEAP_FRAMES
    OFF("thread_state.native_thread_id", PyThreadState, native_thread_id);
    OFF("thread_state.datastack_chunk", PyThreadState, datastack_chunk);
#endif
#if PY_MINOR_VERSION <= 11
    OFF("thread_state.curexc_type", PyThreadState, curexc_type);
    OFF("thread_state.curexc_value", PyThreadState, curexc_value);
    OFF("thread_state.curexc_traceback", PyThreadState, curexc_traceback);
#else
    OFF("thread_state.current_exception", PyThreadState, current_exception);
#endif
    OFF("thread_state.exc_info", PyThreadState, exc_info);
    OFF("thread_state.exc_state", PyThreadState, exc_state);
#if HEAP_FRAMES
    /* the handled exception, a triple */
    OFF("err_stackitem.exc_type", _PyErr_StackItem, exc_type);
    OFF("err_stackitem.exc_traceback", _PyErr_StackItem, exc_traceback);
#endif
    OFF("err_stackitem.exc_value", _PyErr_StackItem, exc_value);
    OFF("err_stackitem.previous_item", _PyErr_StackItem, previous_item);

#if PY_MINOR_VERSION == 10
    /* one CFrame on the C stack per running frame (no pointer to it) */
    SIZE("cframe.size", CFrame);
    OFF("cframe.previous", CFrame, previous);
#elif PY_MINOR_VERSION >= 11
    SIZE("cframe.size", _PyCFrame);
    OFF("cframe.current_frame", _PyCFrame, current_frame);
    OFF("cframe.previous", _PyCFrame, previous);
#endif
}

/* The frames: heap objects (3.8-3.10), or data-stack records (3.11+). */
static void frame_fields(void)
{
#if HEAP_FRAMES
    SIZE("frame_object.size", PyFrameObject);
    OFF("frame_object.back", PyFrameObject, f_back);
    OFF("frame_object.code", PyFrameObject, f_code);
    OFF("frame_object.globals", PyFrameObject, f_globals);
    OFF("frame_object.locals", PyFrameObject, f_locals);
    OFF("frame_object.valuestack", PyFrameObject, f_valuestack);
    OFF("frame_object.trace", PyFrameObject, f_trace);
    OFF("frame_object.gen", PyFrameObject, f_gen);
    /* the last instruction run: a byte offset (3.8, 3.9) or a code unit
     * index (3.10), -1 before the first */
    OFF("frame_object.lasti", PyFrameObject, f_lasti);
    OFF("frame_object.lineno", PyFrameObject, f_lineno);
    OFF("frame_object.localsplus", PyFrameObject, f_localsplus);
#if PY_MINOR_VERSION == 10
    /* the value stack's depth, kept while suspended; the frame's state
     * (a signed char) and its values */
    OFF("frame_object.stackdepth", PyFrameObject, f_stackdepth);
    OFF("frame_object.state", PyFrameObject, f_state);
    field("frame_state.created", (unsigned char)FRAME_CREATED);
    field("frame_state.suspended", (unsigned char)FRAME_SUSPENDED);
    field("frame_state.executing", FRAME_EXECUTING);
    field("frame_state.returned", FRAME_RETURNED);
    field("frame_state.unwinding", FRAME_UNWINDING);
    field("frame_state.raised", FRAME_RAISED);
    field("frame_state.cleared", FRAME_CLEARED);
#else
    /* the value stack's top, NULL while executing; whether it executes
     * (a char, 1 while it does) */
    OFF("frame_object.stacktop", PyFrameObject, f_stacktop);
    OFF("frame_object.executing", PyFrameObject, f_executing);
#endif
#else
    SIZE("interpreter_frame.size", _PyInterpreterFrame);
    OFF("interpreter_frame.previous", _PyInterpreterFrame, previous);
    OFF("interpreter_frame.executable", _PyInterpreterFrame, f_code);
    OFF("interpreter_frame.instr_ptr", _PyInterpreterFrame, prev_instr);
    OFF("interpreter_frame.localsplus", _PyInterpreterFrame, localsplus);
    OFF("interpreter_frame.owner", _PyInterpreterFrame, owner);
    OFF("interpreter_frame.stacktop", _PyInterpreterFrame, stacktop);
    OFF("interpreter_frame.globals", _PyInterpreterFrame, f_globals);
#if PY_MINOR_VERSION == 11
    OFF("interpreter_frame.is_entry", _PyInterpreterFrame, is_entry);
#else
    field("frame_owner.cstack", FRAME_OWNED_BY_CSTACK);
#endif
    field("frame_owner.thread", FRAME_OWNED_BY_THREAD);
    field("frame_owner.generator", FRAME_OWNED_BY_GENERATOR);
    field("frame_owner.frame_object", FRAME_OWNED_BY_FRAME_OBJECT);
    OFF("stack_chunk.data", _PyStackChunk, data);
#endif
}

/* Code objects: names, first line, line table (3.8, 3.9 co_lnotab; 3.10
 * co_linetable; 3.11+ the location table: offsets.c says which format),
 * bytecode and locals. */
static void code_fields(void)
{
    SIZE("code_object.size", PyCodeObject);
    OFF("code_object.filename", PyCodeObject, co_filename);
    OFF("code_object.name", PyCodeObject, co_name);
#if HEAP_FRAMES
    /* no co_qualname: the library shows co_name */
#else
    OFF("code_object.qualname", PyCodeObject, co_qualname);
#endif
#if PY_MINOR_VERSION <= 9
    OFF("code_object.linetable", PyCodeObject, co_lnotab);
#else
    OFF("code_object.linetable", PyCodeObject, co_linetable);
#endif
    OFF("code_object.firstlineno", PyCodeObject, co_firstlineno);
    OFF("code_object.argcount", PyCodeObject, co_argcount);
#if HEAP_FRAMES
    /* the bytecode, a bytes object; the locals' names by kind (varnames,
     * then cells, then free variables in f_localsplus) */
    OFF("code_object.code", PyCodeObject, co_code);
    OFF("code_object.nlocals", PyCodeObject, co_nlocals);
    OFF("code_object.varnames", PyCodeObject, co_varnames);
    OFF("code_object.cellvars", PyCodeObject, co_cellvars);
    OFF("code_object.freevars", PyCodeObject, co_freevars);
    OFF("code_object.cell2arg", PyCodeObject, co_cell2arg);
    OFF("code_object.zombieframe", PyCodeObject, co_zombieframe);
    OFF("code_object.co_flags", PyCodeObject, co_flags);
#else
    OFF("code_object.localsplusnames", PyCodeObject, co_localsplusnames);
    OFF("code_object.localspluskinds", PyCodeObject, co_localspluskinds);
    OFF("code_object.co_code_adaptive", PyCodeObject, co_code_adaptive);
    OFF("code_object.co_flags", PyCodeObject, co_flags);
    OFF("code_object.nlocalsplus", PyCodeObject, co_nlocalsplus);
    OFF("code_object.firsttraceable", PyCodeObject, _co_firsttraceable);
#endif
#if PY_MINOR_VERSION == 12
    OFF("code_object.co_version", PyCodeObject, co_version);
#endif
    field("code_flags.generator", CO_GENERATOR);
    field("code_flags.coroutine", CO_COROUTINE);
    field("code_flags.iterable_coroutine", CO_ITERABLE_COROUTINE);
    field("code_flags.async_generator", CO_ASYNC_GENERATOR);
    field("code_flags.varargs", CO_VARARGS);
    field("code_flags.varkeywords", CO_VARKEYWORDS);
#if !HEAP_FRAMES
    field("locals_kind.local", CO_FAST_LOCAL);
    field("locals_kind.cell", CO_FAST_CELL);
    field("locals_kind.free", CO_FAST_FREE);
#endif
}

/* The objects the walk and the value decoder read. */
static void object_fields(void)
{
    SIZE("pyobject.size", PyObject);
    OFF("pyobject.ob_type", PyObject, ob_type);
    SIZE("type_object.size", PyTypeObject);
    OFF("type_object.tp_name", PyTypeObject, tp_name);
    OFF("type_object.tp_repr", PyTypeObject, tp_repr);
    OFF("type_object.tp_flags", PyTypeObject, tp_flags);
#if !HEAP_FRAMES
    field("type_flags.managed_dict", Py_TPFLAGS_MANAGED_DICT);
#endif
    field("type_flags.heaptype", Py_TPFLAGS_HEAPTYPE);
    field("type_flags.base_exc_subclass", Py_TPFLAGS_BASE_EXC_SUBCLASS);
    field("type_flags.type_subclass", Py_TPFLAGS_TYPE_SUBCLASS);

    SIZE("tuple_object.size", PyTupleObject);
    OFF("tuple_object.ob_item", PyTupleObject, ob_item);
    OFF("tuple_object.ob_size", PyTupleObject, ob_base.ob_size);
    SIZE("list_object.size", PyListObject);
    OFF("list_object.ob_item", PyListObject, ob_item);
    OFF("list_object.ob_size", PyListObject, ob_base.ob_size);
    SIZE("dict_object.size", PyDictObject);
    OFF("dict_object.ma_keys", PyDictObject, ma_keys);
    OFF("dict_object.ma_values", PyDictObject, ma_values);
    SIZE("float_object.size", PyFloatObject);
    OFF("float_object.ob_fval", PyFloatObject, ob_fval);
    SIZE("long_object.size", PyLongObject);
#if PY_MINOR_VERSION <= 11
    OFF("long_object.ob_size", PyLongObject, ob_base.ob_size);
    OFF("long_object.ob_digit", PyLongObject, ob_digit);
#else
    OFF("long_object.lv_tag", PyLongObject, long_value.lv_tag);
    OFF("long_object.ob_digit", PyLongObject, long_value.ob_digit);
#endif
    SIZE("bytes_object.size", PyBytesObject);
    OFF("bytes_object.ob_size", PyBytesObject, ob_base.ob_size);
    OFF("bytes_object.ob_sval", PyBytesObject, ob_sval);
    SIZE("unicode_object.size", PyUnicodeObject);
    OFF("unicode_object.state", PyASCIIObject, state);
    OFF("unicode_object.length", PyASCIIObject, length);
    SIZE("unicode_object.asciiobject_size", PyASCIIObject);
    SIZE("unicode_object.compactunicodeobject_size", PyCompactUnicodeObject);
    OFF("unicode_object.data", PyUnicodeObject, data);
#if PY_MINOR_VERSION <= 11
    /* a legacy str's wchar_t copy (3.12 has none) */
    OFF("unicode_object.wstr", PyASCIIObject, wstr);
#endif
    field("unicode_state.kind_shift", bit_index(state_bit(1)));
    field("unicode_state.compact_bit", bit_index(state_bit(5)));
    field("unicode_state.ascii_bit", bit_index(state_bit(6)));
    SIZE("gen_object.size", PyGenObject);
    OFF("gen_object.gi_name", PyGenObject, gi_name);
#if HEAP_FRAMES
    /* a generator's frame object (NULL once it finished) and its code */
    OFF("gen_object.gi_frame", PyGenObject, gi_frame);
    OFF("gen_object.gi_code", PyGenObject, gi_code);
#else
    OFF("gen_object.gi_iframe", PyGenObject, gi_iframe);
    OFF("gen_object.gi_frame_state", PyGenObject, gi_frame_state);
#endif
    SIZE("set_object.size", PySetObject);
    OFF("set_object.used", PySetObject, used);
    OFF("set_object.table", PySetObject, table);
    OFF("set_object.mask", PySetObject, mask);
#if !HEAP_FRAMES
    field("gen_state.completed", FRAME_COMPLETED);
    field("gen_state.cleared", FRAME_CLEARED);
    field("gen_state.executing", FRAME_EXECUTING);
    /* -1: a byte of the frame state, as the library compares it */
    field("gen_state.suspended", (unsigned char)FRAME_SUSPENDED);
#endif
}

/* The inline cache entries after each opcode (the code units prev_instr
 * may point at while a frame calls): _PyOpcode_Caches of the opcode a
 * specialized one deoptimizes to (_PyOpcode_Deopt), only those with any;
 * OPCODE_UNKNOWN where the headers do not tell (an opcode no table
 * names; 3.12's INSTRUMENTED_LINE and INSTRUMENTED_INSTRUCTION, which
 * hide the opcode they replace). */
#define OPCODE_UNKNOWN 255
static void opcode_caches(void)
{
#if !HEAP_FRAMES
    unsigned caches[256];
    for (int op = 0; op < 256; op++) {
        int base = _PyOpcode_Deopt[op];
        caches[op] = base != 0 || op == 0 ? _PyOpcode_Caches[base] : OPCODE_UNKNOWN;
    }
#if PY_MINOR_VERSION == 12
    /* an instrumented opcode keeps its own's caches (Python/instrumentation.c) */
#define INSTRUMENTED(op) caches[INSTRUMENTED_##op] = _PyOpcode_Caches[op];
    INSTRUMENTED(LOAD_SUPER_ATTR) INSTRUMENTED(POP_JUMP_IF_NONE)
    INSTRUMENTED(POP_JUMP_IF_NOT_NONE) INSTRUMENTED(RESUME) INSTRUMENTED(CALL)
    INSTRUMENTED(RETURN_VALUE) INSTRUMENTED(YIELD_VALUE) INSTRUMENTED(CALL_FUNCTION_EX)
    INSTRUMENTED(JUMP_FORWARD) INSTRUMENTED(JUMP_BACKWARD) INSTRUMENTED(RETURN_CONST)
    INSTRUMENTED(FOR_ITER) INSTRUMENTED(POP_JUMP_IF_FALSE) INSTRUMENTED(POP_JUMP_IF_TRUE)
    INSTRUMENTED(END_FOR) INSTRUMENTED(END_SEND)
#undef INSTRUMENTED
    caches[INSTRUMENTED_LINE] = caches[INSTRUMENTED_INSTRUCTION] = OPCODE_UNKNOWN;
#endif
    char name[32];
    for (int op = 0; op < 256; op++)
        if (caches[op] != 0) {
            snprintf(name, sizeof name, "opcode_caches.%d", op);
            field(name, caches[op]);
        }
#endif
}

/* The value decoder's and the thread facts' object layouts: the fields of
 * native/src/value_fields.h these versions have, from the structs CPython
 * declares (rlockobject and rangeobject are declared in .c files only:
 * their members after the object header, as Modules/_threadmodule.c and
 * Objects/rangeobject.c lay them out). */
static void value_fields(void)
{
    OFF("values.dict_used", PyDictObject, ma_used);
#if HEAP_FRAMES
    /* Objects/dict-common.h (no installed header) of 3.8-3.10: struct
     * _dictkeysobject { Py_ssize_t dk_refcnt; Py_ssize_t dk_size;
     * dict_lookup_func dk_lookup; Py_ssize_t dk_usable; Py_ssize_t
     * dk_nentries; char dk_indices[]; }, its entries PyDictKeyEntry {
     * hash, key, value } after dk_size indices of 1, 2, 4 or 8 bytes; a
     * split table's ma_values is a PyObject *[] in entry order */
    field("values.keys_size", sizeof(Py_ssize_t));
    field("values.keys_nentries", 3 * sizeof(Py_ssize_t) + sizeof(void *));
    field("values.keys_indices", 4 * sizeof(Py_ssize_t) + sizeof(void *));
    /* Objects/moduleobject.c: PyModuleObject { PyObject_HEAD; PyObject
     * *md_dict; ... } */
    field("values.module_dict", sizeof(PyObject));
#else
    OFF("values.keys_log2_size", PyDictKeysObject, dk_log2_size);
    OFF("values.keys_log2_index_bytes", PyDictKeysObject, dk_log2_index_bytes);
    OFF("values.keys_kind", PyDictKeysObject, dk_kind);
    OFF("values.keys_nentries", PyDictKeysObject, dk_nentries);
    OFF("values.keys_indices", PyDictKeysObject, dk_indices);
    OFF("values.values_values", PyDictValues, values);
    /* where an object of a class with a managed dict keeps it, before the
     * object (its GC header after it): measured on an address, through the
     * headers' own accessors (compiled with NDEBUG: they assert the flag) */
    PyObject *obj = (PyObject *)(uintptr_t)0x100000;
#if PY_MINOR_VERSION == 11
    field("values.managed_dict_back",
          (unsigned long long)((char *)obj - (char *)_PyObject_ManagedDictPointer(obj)));
    /* and its values, while no dict is made */
    field("values.managed_values_back",
          (unsigned long long)((char *)obj - (char *)_PyObject_ValuesPointer(obj)));
#else
    /* one word: a dict, or (bit 0 set) its values */
    field("values.managed_dict_back",
          (unsigned long long)((char *)obj - (char *)_PyObject_DictOrValuesPointer(obj)));
#endif
#endif
    OFF("values.cell_ref", PyCellObject, ob_ref);
    OFF("values.method_func", PyMethodObject, im_func);
    OFF("values.method_self", PyMethodObject, im_self);
    OFF("values.func_qualname", PyFunctionObject, func_qualname);
#if !HEAP_FRAMES /* 3.8-3.10 declare it in Objects/moduleobject.c only */
    OFF("values.module_dict", PyModuleObject, md_dict);
#endif
    OFF("values.complex_real", PyComplexObject, cval.real);
    OFF("values.complex_imag", PyComplexObject, cval.imag);
    OFF("values.bytearray_start", PyByteArrayObject, ob_start);
    OFF("values.cfunc_ml", PyCFunctionObject, m_ml);
    OFF("values.cfunc_self", PyCFunctionObject, m_self);
    OFF("values.gen_qualname", PyGenObject, gi_qualname);
    OFF("values.set_used", PySetObject, used);
    OFF("values.set_mask", PySetObject, mask);
    OFF("values.set_table", PySetObject, table);
    OFF("values.exc_args", PyBaseExceptionObject, args);
    OFF("values.type_basicsize", PyTypeObject, tp_basicsize);
    OFF("values.type_base", PyTypeObject, tp_base);
    OFF("values.type_dict", PyTypeObject, tp_dict);
    OFF("values.type_dictoffset", PyTypeObject, tp_dictoffset);
    OFF("values.heap_qualname", PyHeapTypeObject, ht_qualname);
    OFF("values.heap_cached_keys", PyHeapTypeObject, ht_cached_keys);
    OFF("values.member_descr_member", PyMemberDescrObject, d_member);
    OFF("values.member_def_type", PyMemberDef, type);
    OFF("values.member_def_offset", PyMemberDef, offset);
    OFF("values.code_kwonlyargcount", PyCodeObject, co_kwonlyargcount);
    OFF("values.code_stacksize", PyCodeObject, co_stacksize);
#if HEAP_FRAMES
    OFF("values.frame_globals", PyFrameObject, f_globals);
#else
    OFF("values.frame_globals", _PyInterpreterFrame, f_globals);
#endif
    OFF("values.method_descr_method", PyMethodDescrObject, d_method);
    field("values.rlock_owner", sizeof(PyObject) + sizeof(void *));
    field("values.rlock_count", sizeof(PyObject) + sizeof(void *) + sizeof(unsigned long));
    field("values.range_start", sizeof(PyObject));
    field("values.range_stop", sizeof(PyObject) + sizeof(PyObject *));
    field("values.range_step", sizeof(PyObject) + 2 * sizeof(PyObject *));
#if PY_MINOR_VERSION == 12
    OFF("values.tstate_current_exception", PyThreadState, current_exception);
#endif
    OFF("values.tstate_exc_info", PyThreadState, exc_info);
    OFF("values.tstate_exc_state", PyThreadState, exc_state);
    OFF("values.stackitem_exc_value", _PyErr_StackItem, exc_value);
    OFF("values.stackitem_previous", _PyErr_StackItem, previous_item);
    OFF("values.exc_traceback", PyBaseExceptionObject, traceback);
    OFF("values.oserror_errno", PyOSErrorObject, myerrno);
    OFF("values.oserror_strerror", PyOSErrorObject, strerror);
    OFF("values.oserror_filename", PyOSErrorObject, filename);
    OFF("values.oserror_filename2", PyOSErrorObject, filename2);
    OFF("values.tb_next", PyTracebackObject, tb_next);
    OFF("values.tb_frame", PyTracebackObject, tb_frame);
    OFF("values.tb_lasti", PyTracebackObject, tb_lasti);
    OFF("values.tb_lineno", PyTracebackObject, tb_lineno);
#if !HEAP_FRAMES
    OFF("values.frameobj_f_frame", PyFrameObject, f_frame);
#endif
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: emit_builtin_table INCLUDE_DIR_LABEL\n");
        return 2;
    }
    printf("/* CPython 3.%d, from the headers of CPython %s (PY_VERSION_HEX 0x%08lx) in %s */\n",
           PY_MINOR_VERSION, PY_VERSION, (unsigned long)PY_VERSION_HEX, argv[1]);
    printf("static const pyf__builtin_field pyf__builtin_3%d[] = {\n", PY_MINOR_VERSION);
    state_fields();
    frame_fields();
    code_fields();
    object_fields();
    opcode_caches();
    value_fields();
    printf("};\n");
    return fflush(stdout) == 0 ? 0 : 1;
}
