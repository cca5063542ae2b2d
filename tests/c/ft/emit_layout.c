/*
 * emit_layout.c - print, as a C initializer of ft_layout (tests/c/ft_layout.h),
 * the layout of the CPython whose headers this is compiled against: the
 * _Py_DebugOffsets table CPython itself initializes and the facts the table
 * lacks (bitfield positions read back from a real PyASCIIObject, generator,
 * stack-chunk and _PyCodeArray layouts, co_version and co_flags with its
 * CO_* bits, tag bits, frame owners, and the object layouts of the value
 * decoder and the thread facts: native/src/value_fields.h).  Compiled
 * with -DPy_BUILD_CORE and, for a free-threaded layout, -DPy_GIL_DISABLED=1
 * (the -dev headers carry both branches).
 * CPython 3.11 and 3.12 publish no _Py_DebugOffsets: their layouts list,
 * instead of its bytes, the same offsets under the same names
 * (offsets.c's), each an offsetof() of their own structs.
 * Usage: emit_layout NAME INCLUDE_DIR OUTPUT_FILE
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_frame.h>
#include <internal/pycore_genobject.h>
#include <internal/pycore_dict.h>
#include <internal/pycore_object.h>
#include <internal/pycore_moduleobject.h>
#include <internal/pycore_code.h>
#include <stdio.h>
#include "../../../native/src/value_fields.h"
#include <string.h>

#if PY_MINOR_VERSION <= 12
/* no table: the offsets by name (print_pairs) */
#include <internal/pycore_gil.h>
#include <structmember.h>
#include <opcode.h>
#define OLDER 1
#if PY_MINOR_VERSION == 12
#define OWNER_ENTRY FRAME_OWNED_BY_CSTACK
#define T_OBJECT_EX_ Py_T_OBJECT_EX
#else
#define OWNER_ENTRY (-1) /* 3.11: the entered frame's is_entry flag */
#define T_OBJECT_EX_ T_OBJECT_EX
#endif
#define TAG_BITS 0
#elif PY_MINOR_VERSION == 13
/* 3.13 initializes its table inside _PyRuntimeState_INIT only: the
 * runtime's other members refer to functions this program does not link
 * (it is linked with unresolved symbols ignored; it never uses them). */
#include <internal/pycore_ceval.h>
#include <internal/pycore_runtime_init.h>
static const _PyRuntimeState rt = _PyRuntimeState_INIT(rt, "xdebugpy");
#define TABLE (rt.debug_offsets)
#define OWNER_ENTRY FRAME_OWNED_BY_CSTACK
#define TAG_BITS 0
#define T_OBJECT_EX_ Py_T_OBJECT_EX
#else
#include <internal/pycore_debug_offsets.h>
#include <internal/pycore_interpframe_structs.h>
#include <internal/pycore_stackref.h>
#include <internal/pycore_lock.h>
static const _Py_DebugOffsets table = _Py_DebugOffsets_INIT("xdebugpy");
#define TABLE table
#define OWNER_ENTRY FRAME_OWNED_BY_INTERPRETER
#define TAG_BITS ((unsigned long long)Py_TAG_BITS)
#define T_OBJECT_EX_ Py_T_OBJECT_EX
#endif
#define ABSENT UINT64_MAX /* a field the version lacks */

static unsigned state_word(int which)
{
    PyASCIIObject o;
    memset(&o, 0, sizeof o);
    switch (which) {
    case 1: o.state.kind = 1; break;
    case 2: o.state.kind = 2; break;
    case 4: o.state.kind = 4; break;
    case 5: o.state.compact = 1; break;
    case 6: o.state.ascii = 1; break;
    default: o.state.interned = 1; break;
    }
    uint32_t w;
    memcpy(&w, &o.state, sizeof w);
    return w;
}

/* The value decoder's layouts (native/src/value_fields.h), each from the
 * struct CPython declares.  rangeobject is declared in Objects/rangeobject.c
 * only (start, stop, step, length after the object header): no header
 * carries it, so only its header shift is checked. */
static void print_values(void)
{
    PyDictKeysObject *dk = NULL;
    PyDictValues *dv = NULL;
    (void)dk;
    (void)dv;
    const uint64_t dict_used = offsetof(PyDictObject, ma_used);
    const uint64_t keys_log2_size = offsetof(PyDictKeysObject, dk_log2_size);
    const uint64_t keys_log2_index_bytes = offsetof(PyDictKeysObject, dk_log2_index_bytes);
    const uint64_t keys_kind = offsetof(PyDictKeysObject, dk_kind);
    const uint64_t keys_nentries = offsetof(PyDictKeysObject, dk_nentries);
    const uint64_t keys_indices = offsetof(PyDictKeysObject, dk_indices);
    const uint64_t keys_size = ABSENT; /* 3.8-3.10's dk_size */
#ifdef OLDER
    /* no header: the insertion order is in the bytes before the values */
    const uint64_t values_capacity = ABSENT, values_size = ABSENT, values_embedded = ABSENT,
                   values_valid = ABSENT;
    /* measured on an address, through the headers' own accessors */
    PyObject *obj = (PyObject *)(uintptr_t)0x100000;
#if PY_MINOR_VERSION == 11
    const uint64_t managed_dict_back =
        (uint64_t)((char *)obj - (char *)_PyObject_ManagedDictPointer(obj));
#else
    const uint64_t managed_dict_back =
        (uint64_t)((char *)obj - (char *)_PyObject_DictOrValuesPointer(obj));
#endif
#else
    const uint64_t values_capacity = offsetof(PyDictValues, capacity);
    const uint64_t values_size = offsetof(PyDictValues, size);
    const uint64_t values_embedded = offsetof(PyDictValues, embedded);
    const uint64_t values_valid = offsetof(PyDictValues, valid);
    const uint64_t managed_dict_back = (uint64_t)-(MANAGED_DICT_OFFSET);
#endif
    const uint64_t values_values = offsetof(PyDictValues, values);
    const uint64_t cell_ref = offsetof(PyCellObject, ob_ref);
    const uint64_t method_func = offsetof(PyMethodObject, im_func);
    const uint64_t method_self = offsetof(PyMethodObject, im_self);
    const uint64_t func_qualname = offsetof(PyFunctionObject, func_qualname);
    const uint64_t module_dict = offsetof(PyModuleObject, md_dict);
    const uint64_t complex_real = offsetof(PyComplexObject, cval.real);
    const uint64_t complex_imag = offsetof(PyComplexObject, cval.imag);
    const uint64_t bytearray_start = offsetof(PyByteArrayObject, ob_start);
    const uint64_t cfunc_ml = offsetof(PyCFunctionObject, m_ml);
    const uint64_t cfunc_self = offsetof(PyCFunctionObject, m_self);
    const uint64_t gen_qualname = offsetof(PyGenObject, gi_qualname);
    const uint64_t set_used = offsetof(PySetObject, used);
    const uint64_t set_mask = offsetof(PySetObject, mask);
    const uint64_t set_table = offsetof(PySetObject, table);
    const uint64_t exc_args = offsetof(PyBaseExceptionObject, args);
    const uint64_t type_basicsize = offsetof(PyTypeObject, tp_basicsize);
    const uint64_t type_base = offsetof(PyTypeObject, tp_base);
    const uint64_t type_dict = offsetof(PyTypeObject, tp_dict);
    const uint64_t type_dictoffset = offsetof(PyTypeObject, tp_dictoffset);
    const uint64_t heap_qualname = offsetof(PyHeapTypeObject, ht_qualname);
    const uint64_t heap_cached_keys = offsetof(PyHeapTypeObject, ht_cached_keys);
    const uint64_t member_descr_member = offsetof(PyMemberDescrObject, d_member);
    const uint64_t member_def_type = offsetof(PyMemberDef, type);
    const uint64_t member_def_offset = offsetof(PyMemberDef, offset);
    const uint64_t code_kwonlyargcount = offsetof(PyCodeObject, co_kwonlyargcount);
    const uint64_t code_stacksize = offsetof(PyCodeObject, co_stacksize);
    const uint64_t frame_globals = offsetof(_PyInterpreterFrame, f_globals);
    const uint64_t method_descr_method = offsetof(PyMethodDescrObject, d_method);
#ifdef OLDER
    /* rlockobject (Modules/_threadmodule.c): PyObject_HEAD, PyThread_type_lock
     * rlock_lock, unsigned long rlock_owner, unsigned long rlock_count */
    const uint64_t rlock_owner = sizeof(PyObject) + sizeof(void *);
    const uint64_t rlock_count = rlock_owner + sizeof(unsigned long);
#elif PY_MINOR_VERSION == 13
    /* rlockobject is declared in Modules/_threadmodule.c only: PyObject_HEAD,
     * PyThread_type_lock rlock_lock, PyThread_ident_t rlock_owner,
     * unsigned long rlock_count (test_locks checks it against live targets) */
    const uint64_t rlock_owner = sizeof(PyObject) + sizeof(void *);
    const uint64_t rlock_count = rlock_owner + sizeof(PyThread_ident_t);
#else
    /* rlockobject (Modules/_threadmodule.c): PyObject_HEAD, then a
     * _PyRecursiveMutex, which internal/pycore_lock.h declares */
    const uint64_t rlock_owner = sizeof(PyObject) + offsetof(_PyRecursiveMutex, thread);
    const uint64_t rlock_count = sizeof(PyObject) + offsetof(_PyRecursiveMutex, level);
#endif
    const uint64_t range_start = sizeof(PyObject);
    const uint64_t range_stop = sizeof(PyObject) + sizeof(PyObject *);
    const uint64_t range_step = sizeof(PyObject) + 2 * sizeof(PyObject *);
#if PY_MINOR_VERSION == 11
    const uint64_t tstate_current_exception = ABSENT; /* curexc_type, _value, _traceback */
#else
    const uint64_t tstate_current_exception = offsetof(PyThreadState, current_exception);
#endif
    const uint64_t tstate_exc_info = offsetof(PyThreadState, exc_info);
    const uint64_t tstate_exc_state = offsetof(PyThreadState, exc_state);
    const uint64_t stackitem_exc_value = offsetof(_PyErr_StackItem, exc_value);
    const uint64_t stackitem_previous = offsetof(_PyErr_StackItem, previous_item);
    const uint64_t exc_traceback = offsetof(PyBaseExceptionObject, traceback);
    const uint64_t oserror_errno = offsetof(PyOSErrorObject, myerrno);
    const uint64_t oserror_strerror = offsetof(PyOSErrorObject, strerror);
    const uint64_t oserror_filename = offsetof(PyOSErrorObject, filename);
    const uint64_t oserror_filename2 = offsetof(PyOSErrorObject, filename2);
    const uint64_t tb_next = offsetof(PyTracebackObject, tb_next);
    const uint64_t tb_frame = offsetof(PyTracebackObject, tb_frame);
    const uint64_t tb_lasti = offsetof(PyTracebackObject, tb_lasti);
    const uint64_t tb_lineno = offsetof(PyTracebackObject, tb_lineno);
    const uint64_t frameobj_f_frame = offsetof(PyFrameObject, f_frame);
    printf("    .values = {\n");
#define PRINT_FIELD(name) printf("        ." #name " = %lluu,\n", (unsigned long long)name);
    PYF__VALUE_LAYOUT(PRINT_FIELD)
#undef PRINT_FIELD
    printf("    },\n");
#if PY_MINOR_VERSION == 11
#define CO_FAST_HIDDEN 0 /* none: no comprehension is inlined */
#endif
#ifdef OLDER
#define Py_TPFLAGS_INLINE_VALUES 0 /* none: the values are elsewhere */
    printf("    .managed_values_back = %lluu,\n",
#if PY_MINOR_VERSION == 11 /* while no dict is made */
           (unsigned long long)((char *)obj - (char *)_PyObject_ValuesPointer(obj)));
#else
           (unsigned long long)ABSENT);
#endif
#else
    printf("    .managed_values_back = %lluu,\n", (unsigned long long)ABSENT);
#endif
    printf("    .co_varargs = 0x%x, .co_varkeywords = 0x%x,\n", CO_VARARGS, CO_VARKEYWORDS);
    printf("    .co_fast_hidden = 0x%x, .co_fast_local = 0x%x, .co_fast_cell = 0x%x, "
           ".co_fast_free = 0x%x,\n", CO_FAST_HIDDEN, CO_FAST_LOCAL, CO_FAST_CELL,
           CO_FAST_FREE);
    printf("    .tp_inline_values = 0x%llx, .tp_managed_dict = 0x%llx, .tp_heaptype = 0x%llx, "
           ".tp_base_exc = 0x%llx, .tp_type_subclass = 0x%llx,\n",
           (unsigned long long)Py_TPFLAGS_INLINE_VALUES,
           (unsigned long long)Py_TPFLAGS_MANAGED_DICT, (unsigned long long)Py_TPFLAGS_HEAPTYPE,
           (unsigned long long)Py_TPFLAGS_BASE_EXC_SUBCLASS,
           (unsigned long long)Py_TPFLAGS_TYPE_SUBCLASS);
    printf("    .dict_keys_general = %d, .t_object_ex = %d,\n", (int)DICT_KEYS_GENERAL,
           (int)T_OBJECT_EX_);
#if PY_MINOR_VERSION <= 13
    printf("    .frame_stacktop = %zu,\n", offsetof(_PyInterpreterFrame, stacktop));
#else
    printf("    .frame_stacktop = 0,\n"); /* stackpointer is in the table */
#endif
}

#ifdef OLDER
/* The offsets of a version without _Py_DebugOffsets, under offsets.c's
 * names (the _Py_DebugOffsets field's where it means the same): what a
 * synthetic image of it is laid out by. */
#define PAIR(name, type, member) \
    printf("        {\"%s\", %zu},\n", name, offsetof(type, member));
#define PAIR_SIZE(name, type) printf("        {\"%s\", %zu},\n", name, sizeof(type));
static void print_pairs(void)
{
    printf("    .pairs = (const ft_pair[]){\n");
    PAIR_SIZE("runtime_state.size", _PyRuntimeState)
    PAIR("runtime_state.interpreters_head", _PyRuntimeState, interpreters.head)
    PAIR("runtime_state.interpreters_main", _PyRuntimeState, interpreters.main)
    PAIR("runtime_state.main_interpreter", _PyRuntimeState, _main_interpreter)
    PAIR_SIZE("interpreter_state.size", PyInterpreterState)
    PAIR("interpreter_state.id", PyInterpreterState, id)
    PAIR("interpreter_state.next", PyInterpreterState, next)
    PAIR("interpreter_state.threads_head", PyInterpreterState, threads.head)
    PAIR("interpreter_state.sysdict", PyInterpreterState, sysdict)
#if PY_MINOR_VERSION == 11
    PAIR("runtime_state.gil_locked", _PyRuntimeState, ceval.gil.locked)
    PAIR("runtime_state.gil_holder", _PyRuntimeState, ceval.gil.last_holder)
    PAIR("interpreter_state.imports_modules", PyInterpreterState, modules)
    PAIR("thread_state.curexc_type", PyThreadState, curexc_type)
    PAIR("thread_state.curexc_value", PyThreadState, curexc_value)
    PAIR("thread_state.curexc_traceback", PyThreadState, curexc_traceback)
    PAIR("interpreter_frame.is_entry", _PyInterpreterFrame, is_entry)
    PAIR("long_object.ob_size", PyLongObject, ob_base.ob_size)
    PAIR("long_object.ob_digit", PyLongObject, ob_digit)
#else
    PAIR("interpreter_state.imports_modules", PyInterpreterState, imports.modules)
    PAIR("interpreter_state.ceval_gil", PyInterpreterState, ceval.gil)
    PAIR("interpreter_state.gil_runtime_state", PyInterpreterState, _gil)
    PAIR("interpreter_state.gil_runtime_state_locked", PyInterpreterState, _gil.locked)
    PAIR("interpreter_state.gil_runtime_state_holder", PyInterpreterState, _gil.last_holder)
    PAIR("thread_state.current_exception", PyThreadState, current_exception)
    PAIR("long_object.lv_tag", PyLongObject, long_value.lv_tag)
    PAIR("long_object.ob_digit", PyLongObject, long_value.ob_digit)
#endif
    PAIR_SIZE("thread_state.size", PyThreadState)
    PAIR("thread_state.prev", PyThreadState, prev)
    PAIR("thread_state.next", PyThreadState, next)
    PAIR("thread_state.interp", PyThreadState, interp)
    PAIR("thread_state.cframe", PyThreadState, cframe)
    PAIR("thread_state.root_cframe", PyThreadState, root_cframe)
    PAIR("thread_state.thread_id", PyThreadState, thread_id)
    PAIR("thread_state.native_thread_id", PyThreadState, native_thread_id)
    PAIR("thread_state.datastack_chunk", PyThreadState, datastack_chunk)
    PAIR_SIZE("cframe.size", _PyCFrame)
    PAIR("cframe.current_frame", _PyCFrame, current_frame)
    PAIR("cframe.previous", _PyCFrame, previous)
    PAIR_SIZE("interpreter_frame.size", _PyInterpreterFrame)
    PAIR("interpreter_frame.previous", _PyInterpreterFrame, previous)
    PAIR("interpreter_frame.executable", _PyInterpreterFrame, f_code)
    PAIR("interpreter_frame.instr_ptr", _PyInterpreterFrame, prev_instr)
    PAIR("interpreter_frame.localsplus", _PyInterpreterFrame, localsplus)
    PAIR("interpreter_frame.owner", _PyInterpreterFrame, owner)
    PAIR("interpreter_frame.stacktop", _PyInterpreterFrame, stacktop)
    PAIR_SIZE("code_object.size", PyCodeObject)
    PAIR("code_object.filename", PyCodeObject, co_filename)
    PAIR("code_object.name", PyCodeObject, co_name)
    PAIR("code_object.qualname", PyCodeObject, co_qualname)
    PAIR("code_object.linetable", PyCodeObject, co_linetable)
    PAIR("code_object.firstlineno", PyCodeObject, co_firstlineno)
    PAIR("code_object.argcount", PyCodeObject, co_argcount)
    PAIR("code_object.localsplusnames", PyCodeObject, co_localsplusnames)
    PAIR("code_object.localspluskinds", PyCodeObject, co_localspluskinds)
    PAIR("code_object.co_code_adaptive", PyCodeObject, co_code_adaptive)
    PAIR("code_object.nlocalsplus", PyCodeObject, co_nlocalsplus)
    PAIR("code_object.firsttraceable", PyCodeObject, _co_firsttraceable)
    PAIR_SIZE("pyobject.size", PyObject)
    PAIR("pyobject.ob_type", PyObject, ob_type)
    PAIR_SIZE("type_object.size", PyTypeObject)
    PAIR("type_object.tp_name", PyTypeObject, tp_name)
    PAIR("type_object.tp_flags", PyTypeObject, tp_flags)
    PAIR_SIZE("tuple_object.size", PyTupleObject)
    PAIR("tuple_object.ob_item", PyTupleObject, ob_item)
    PAIR("tuple_object.ob_size", PyTupleObject, ob_base.ob_size)
    PAIR_SIZE("list_object.size", PyListObject)
    PAIR("list_object.ob_item", PyListObject, ob_item)
    PAIR("list_object.ob_size", PyListObject, ob_base.ob_size)
    PAIR_SIZE("dict_object.size", PyDictObject)
    PAIR("dict_object.ma_keys", PyDictObject, ma_keys)
    PAIR("dict_object.ma_values", PyDictObject, ma_values)
    PAIR_SIZE("float_object.size", PyFloatObject)
    PAIR("float_object.ob_fval", PyFloatObject, ob_fval)
    PAIR_SIZE("long_object.size", PyLongObject)
    PAIR_SIZE("bytes_object.size", PyBytesObject)
    PAIR("bytes_object.ob_size", PyBytesObject, ob_base.ob_size)
    PAIR("bytes_object.ob_sval", PyBytesObject, ob_sval)
    PAIR_SIZE("unicode_object.size", PyUnicodeObject)
    PAIR("unicode_object.state", PyASCIIObject, state)
    PAIR("unicode_object.length", PyASCIIObject, length)
    PAIR_SIZE("unicode_object.asciiobject_size", PyASCIIObject)
    PAIR_SIZE("unicode_object.compactunicodeobject_size", PyCompactUnicodeObject)
    PAIR("unicode_object.data", PyUnicodeObject, data)
#if PY_MINOR_VERSION <= 11
    PAIR("unicode_object.wstr", PyASCIIObject, wstr) /* a str not made ready's */
#endif
    PAIR_SIZE("gen_object.size", PyGenObject)
    PAIR("gen_object.gi_name", PyGenObject, gi_name)
    PAIR("gen_object.gi_iframe", PyGenObject, gi_iframe)
    PAIR("gen_object.gi_frame_state", PyGenObject, gi_frame_state)
    PAIR_SIZE("set_object.size", PySetObject)
    PAIR("set_object.used", PySetObject, used)
    PAIR("set_object.table", PySetObject, table)
    PAIR("set_object.mask", PySetObject, mask)
    printf("        {NULL, 0},\n    },\n");
}
#endif

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: emit_layout NAME INCLUDE_DIR OUTPUT_FILE\n");
        return 2;
    }
    if (freopen(argv[3], "w", stdout) == NULL) {
        perror(argv[3]);
        return 1;
    }
#ifdef Py_GIL_DISABLED
    int ft = 1;
#else
    int ft = 0;
#endif
    printf("/* generated by tests/c/ft/emit_layout.c from %s, %s; do not edit */\n",
           argv[2], ft ? "Py_GIL_DISABLED" : "default build");
    printf("{\n    .name = \"%s\",\n    .include_dir = \"%s\",\n", argv[1], argv[2]);
    printf("    .minor = %d, .free_threaded = %d,\n", PY_MINOR_VERSION, ft);
    printf("    .hexversion = 0x%lx,\n", (unsigned long)PY_VERSION_HEX);
#ifdef OLDER
    print_pairs();
    /* a call the eval loop makes itself leaves prev_instr on its last cache
     * entry; 3.12's INSTRUMENTED_LINE hides the opcode it replaces */
    printf("    .opcode_call = %d, .call_caches = %d, .opcode_instrumented_line = %d,\n", CALL,
           (int)INLINE_CACHE_ENTRIES_CALL,
#if PY_MINOR_VERSION == 12
           INSTRUMENTED_LINE);
#else
           -1);
#endif
    printf("    .gen_suspended = %d,\n", (int)FRAME_SUSPENDED);
#else
    printf("    .opcode_call = -1, .opcode_instrumented_line = -1,\n");
    _Py_DebugOffsets o = TABLE;
    const unsigned char *p = (const unsigned char *)&o;
    printf("    .table = (const uint8_t[]){");
    for (size_t i = 0; i < sizeof o; i++)
        printf("%s0x%02x,", i % 16 == 0 ? "\n        " : " ", p[i]);
    printf("\n    },\n    .table_len = %zu,\n", sizeof o);
#endif
    printf("    .pyobject_size = %zu, .var_ob_size = %zu,\n", sizeof(PyObject),
           offsetof(PyVarObject, ob_size));
    printf("    .str_kind1 = 0x%x, .str_kind2 = 0x%x, .str_kind4 = 0x%x,\n", state_word(1),
           state_word(2), state_word(4));
    printf("    .str_compact = 0x%x, .str_ascii = 0x%x, .str_interned = 0x%x,\n",
           state_word(5), state_word(6), state_word(0));
    printf("    .str_hash = %zu, .bytes_shash = %zu,\n", offsetof(PyASCIIObject, hash),
           offsetof(PyBytesObject, ob_shash));
    printf("    .gen_size = %zu, .gen_gi_name = %zu, .gen_gi_iframe = %zu, "
           ".gen_gi_frame_state = %zu,\n", sizeof(PyGenObject), offsetof(PyGenObject, gi_name),
           offsetof(PyGenObject, gi_iframe), offsetof(PyGenObject, gi_frame_state));
#if PY_MINOR_VERSION == 11
    printf("    .co_version = 0,\n"); /* none */
#else
    printf("    .co_version = %zu,\n", offsetof(PyCodeObject, co_version));
#endif
    printf("    .co_flags = %zu,\n", offsetof(PyCodeObject, co_flags));
    printf("    .co_generator = 0x%x, .co_coroutine = 0x%x, .co_iterable_coroutine = 0x%x, "
           ".co_async_generator = 0x%x,\n", CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE,
           CO_ASYNC_GENERATOR);
    printf("    .frame_executing = %d,\n", (int)FRAME_EXECUTING);
#if PY_MINOR_VERSION >= 13
    printf("    .frame_suspended_yield_from = %d,\n", (int)FRAME_SUSPENDED_YIELD_FROM);
#else
    /* no state of its own: an await suspends a coroutine as a yield does */
    printf("    .frame_suspended_yield_from = %d,\n", (int)FRAME_SUSPENDED);
#endif
    printf("    .owner_thread = %d, .owner_generator = %d, .owner_entry = %d,\n",
           (int)FRAME_OWNED_BY_THREAD, (int)FRAME_OWNED_BY_GENERATOR, (int)OWNER_ENTRY);
    printf("    .chunk_data = %zu, .tag_bits = %llu,\n", offsetof(_PyStackChunk, data),
           (unsigned long long)TAG_BITS);
#if defined(Py_GIL_DISABLED) && PY_MINOR_VERSION >= 14
    _PyInterpreterFrame *fr = NULL;
    _PyCodeArray *ca = NULL;
    (void)fr;
    (void)ca;
    printf("    .has_tlbc = 1, .co_tlbc = %zu,\n", offsetof(PyCodeObject, co_tlbc));
    printf("    .frame_tlbc_index = %zu, .frame_tlbc_index_size = %zu,\n",
           offsetof(_PyInterpreterFrame, tlbc_index), sizeof fr->tlbc_index);
    printf("    .codearray_size = %zu, .codearray_entries = %zu, .codearray_entry_size = %zu,\n",
           offsetof(_PyCodeArray, size), offsetof(_PyCodeArray, entries), sizeof ca->entries[0]);
#else
    printf("    .has_tlbc = 0,\n");
#endif
    print_values();
    printf("},\n");
    return fclose(stdout) == 0 ? 0 : 1;
}
