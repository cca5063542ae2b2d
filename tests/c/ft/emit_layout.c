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

#if PY_MINOR_VERSION == 13
/* 3.13 initializes its table inside _PyRuntimeState_INIT only: the
 * runtime's other members refer to functions this program does not link
 * (it is linked with unresolved symbols ignored; it never uses them). */
#include <internal/pycore_ceval.h>
#include <internal/pycore_runtime_init.h>
static const _PyRuntimeState rt = _PyRuntimeState_INIT(rt, "xdebugpy");
#define TABLE (rt.debug_offsets)
#define OWNER_ENTRY FRAME_OWNED_BY_CSTACK
#define TAG_BITS 0
#else
#include <internal/pycore_debug_offsets.h>
#include <internal/pycore_interpframe_structs.h>
#include <internal/pycore_stackref.h>
#include <internal/pycore_lock.h>
static const _Py_DebugOffsets table = _Py_DebugOffsets_INIT("xdebugpy");
#define TABLE table
#define OWNER_ENTRY FRAME_OWNED_BY_INTERPRETER
#define TAG_BITS ((unsigned long long)Py_TAG_BITS)
#endif

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
    const uint64_t values_capacity = offsetof(PyDictValues, capacity);
    const uint64_t values_size = offsetof(PyDictValues, size);
    const uint64_t values_embedded = offsetof(PyDictValues, embedded);
    const uint64_t values_valid = offsetof(PyDictValues, valid);
    const uint64_t values_values = offsetof(PyDictValues, values);
    const uint64_t managed_dict_back = (uint64_t)-(MANAGED_DICT_OFFSET);
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
#if PY_MINOR_VERSION == 13
    const uint64_t frame_stacktop = offsetof(_PyInterpreterFrame, stacktop);
    /* rlockobject is declared in Modules/_threadmodule.c only: PyObject_HEAD,
     * PyThread_type_lock rlock_lock, PyThread_ident_t rlock_owner,
     * unsigned long rlock_count (test_locks checks it against live targets) */
    const uint64_t rlock_owner = sizeof(PyObject) + sizeof(void *);
    const uint64_t rlock_count = rlock_owner + sizeof(PyThread_ident_t);
#else
    const uint64_t frame_stacktop = 0; /* stackpointer is in the table */
    /* rlockobject (Modules/_threadmodule.c): PyObject_HEAD, then a
     * _PyRecursiveMutex, which internal/pycore_lock.h declares */
    const uint64_t rlock_owner = sizeof(PyObject) + offsetof(_PyRecursiveMutex, thread);
    const uint64_t rlock_count = sizeof(PyObject) + offsetof(_PyRecursiveMutex, level);
#endif
    const uint64_t range_start = sizeof(PyObject);
    const uint64_t range_stop = sizeof(PyObject) + sizeof(PyObject *);
    const uint64_t range_step = sizeof(PyObject) + 2 * sizeof(PyObject *);
    const uint64_t tstate_current_exception = offsetof(PyThreadState, current_exception);
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
#define PRINT_FIELD(name) printf("        ." #name " = %llu,\n", (unsigned long long)name);
    PYF__VALUE_LAYOUT(PRINT_FIELD)
#undef PRINT_FIELD
    printf("    },\n");
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
           (int)Py_T_OBJECT_EX);
}

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
    _Py_DebugOffsets o = TABLE;
    const unsigned char *p = (const unsigned char *)&o;
#ifdef Py_GIL_DISABLED
    int ft = 1;
#else
    int ft = 0;
#endif
    printf("/* generated by tests/c/ft/emit_layout.c from %s, %s; do not edit */\n",
           argv[2], ft ? "Py_GIL_DISABLED" : "default build");
    printf("{\n    .name = \"%s\",\n    .include_dir = \"%s\",\n", argv[1], argv[2]);
    printf("    .minor = %d, .free_threaded = %d,\n", PY_MINOR_VERSION, ft);
    printf("    .table = (const uint8_t[]){");
    for (size_t i = 0; i < sizeof o; i++)
        printf("%s0x%02x,", i % 16 == 0 ? "\n        " : " ", p[i]);
    printf("\n    },\n    .table_len = %zu,\n", sizeof o);
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
    printf("    .co_version = %zu,\n", offsetof(PyCodeObject, co_version));
    printf("    .co_flags = %zu,\n", offsetof(PyCodeObject, co_flags));
    printf("    .co_generator = 0x%x, .co_coroutine = 0x%x, .co_iterable_coroutine = 0x%x, "
           ".co_async_generator = 0x%x,\n", CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE,
           CO_ASYNC_GENERATOR);
    printf("    .frame_executing = %d,\n", (int)FRAME_EXECUTING);
    printf("    .frame_suspended_yield_from = %d,\n", (int)FRAME_SUSPENDED_YIELD_FROM);
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
