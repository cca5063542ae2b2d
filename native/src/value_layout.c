/*
 * value_layout.c - the object layouts the value decoder needs and
 * _Py_DebugOffsets lacks, per minor version and flavour.
 *
 * Every struct below starts with PyObject_HEAD (or PyObject_VAR_HEAD) in
 * 3.13, 3.14 and 3.15, so its fields sit at fixed distances after the
 * object header, whose size the table gives (pyobject.size: 16, or 32 on
 * free-threaded builds); the structs that are not objects (dict keys and
 * values, the interpreter frame) have the same layout in both flavours.
 * tests/c/ft/emit_layout.c prints each field from the -dev headers of every
 * version and flavour, and test_values checks these against them.
 */
#include <string.h>

#include "offsets.h"
#include "value_fields.h"
#include "value_layout.h"

/* The layouts of a version with a built-in table (3.11, 3.12): the
 * table's "values." numbers, from that version's own headers; a field the
 * version lacks is PYF__ABSENT. */
static void fill_builtin(const pyf__offsets *o, pyf__value_layout *vl)
{
#define PYF__VL_ABSENT(name) vl->name = PYF__ABSENT;
    PYF__VALUE_LAYOUT(PYF__VL_ABSENT)
#undef PYF__VL_ABSENT
    vl->managed_values_back = PYF__ABSENT;
    for (uint32_t i = 0; i < o->nbuiltin; i++) {
        const char *name = o->builtin[i].name;
        if (strncmp(name, "values.", 7) != 0)
            continue;
        name += 7;
#define PYF__VL_SET(field)                 \
        if (strcmp(name, #field) == 0)     \
            vl->field = o->builtin[i].value;
        PYF__VALUE_LAYOUT(PYF__VL_SET)
        PYF__VL_SET(managed_values_back)
#undef PYF__VL_SET
    }
}

void pyf__value_layout_fill(const pyf__offsets *o, pyf__value_layout *vl)
{
    if (o->builtin != NULL) {
        fill_builtin(o, vl);
        return;
    }
    const uint64_t h = o->pyobject.size; /* sizeof(PyObject) */
    const uint64_t p = 8;                /* sizeof(PyObject *) */

    /* internal/pycore_dict.h: PyDictObject { PyObject_HEAD; Py_ssize_t
     * ma_used; ... }; struct _dictkeysobject { Py_ssize_t dk_refcnt;
     * uint8_t dk_log2_size, dk_log2_index_bytes, dk_kind; [PyMutex
     * dk_mutex, free-threaded: in the padding]; uint32_t dk_version;
     * Py_ssize_t dk_usable, dk_nentries; char dk_indices[]; } with the
     * entries after 1 << dk_log2_index_bytes bytes of indices;
     * struct _dictvalues { uint8_t capacity, size, embedded, valid;
     * PyObject *values[]; } with the insertion order (one byte a value)
     * after values[capacity]. */
    vl->dict_used = h;
    vl->keys_log2_size = 8;
    vl->keys_log2_index_bytes = 9;
    vl->keys_kind = 10;
    vl->keys_nentries = 24;
    vl->keys_indices = 32;
    vl->keys_size = PYF__ABSENT; /* 3.8-3.10 only */
    vl->values_capacity = 0;
    vl->values_size = 1;
    vl->values_embedded = 2;
    vl->values_valid = 3;
    vl->values_values = 8;
    /* internal/pycore_object.h: MANAGED_DICT_OFFSET is -3 pointers (before
     * the GC header), -1 pointer on free-threaded builds (no GC header) */
    vl->managed_dict_back = o->free_threaded ? p : 3 * p;
    vl->managed_values_back = PYF__ABSENT; /* inline values (3.13+) */
    /* cpython/cellobject.h: PyCellObject { PyObject_HEAD; PyObject *ob_ref; } */
    vl->cell_ref = h;
    /* cpython/classobject.h: PyMethodObject { PyObject_HEAD; im_func; im_self; ... } */
    vl->method_func = h;
    vl->method_self = h + p;
    /* cpython/funcobject.h: PyFunctionObject { PyObject_HEAD; func_globals,
     * func_builtins, func_name, func_qualname, ... } */
    vl->func_qualname = h + 3 * p;
    /* internal/pycore_moduleobject.h: PyModuleObject { PyObject_HEAD; md_dict; ... } */
    vl->module_dict = h;
    /* cpython/complexobject.h: PyComplexObject { PyObject_HEAD; Py_complex cval; } */
    vl->complex_real = h;
    vl->complex_imag = h + 8;
    /* cpython/bytearrayobject.h: { PyObject_VAR_HEAD; Py_ssize_t ob_alloc;
     * char *ob_bytes; char *ob_start; ... } (ob_size at bytes.ob_size) */
    vl->bytearray_start = h + 3 * p;
    /* cpython/methodobject.h: PyCFunctionObject { PyObject_HEAD; PyMethodDef
     * *m_ml; PyObject *m_self; ... }; ml_name is PyMethodDef's first field */
    vl->cfunc_ml = h;
    vl->cfunc_self = h + p;
    /* internal/pycore_genobject.h (_PyGenObject_HEAD): weakreflist, name, qualname */
    vl->gen_qualname = h + 2 * p;
    /* cpython/setobject.h: PySetObject { PyObject_HEAD; Py_ssize_t fill,
     * used, mask; setentry *table; ... }; the table also serves 3.14+
     * where _Py_DebugOffsets has set_object (used there instead) */
    vl->set_used = o->set.used != PYF__ABSENT ? o->set.used : h + p;
    vl->set_mask = o->set.mask != PYF__ABSENT ? o->set.mask : h + 2 * p;
    vl->set_table = o->set.table != PYF__ABSENT ? o->set.table : h + 3 * p;
    /* cpython/pyerrors.h: PyBaseExceptionObject { PyObject_HEAD; dict; args; ... } */
    vl->exc_args = h + p;
    /* cpython/object.h: PyTypeObject { PyObject_VAR_HEAD; tp_name;
     * tp_basicsize; ... tp_base at 240 bytes past the header, tp_dict
     * right after it, tp_dictoffset at 272 } (3.15's table publishes
     * tp_basicsize and tp_dictoffset) */
    vl->type_basicsize = h + 2 * p;
    vl->type_base = h + 240;
    vl->type_dict = h + 248;
    vl->type_dictoffset = h + 272;
    /* cpython/object.h: PyHeapTypeObject { PyTypeObject ht_type;
     * PyAsyncMethods as_async (4 pointers); PyNumberMethods as_number (36);
     * PyMappingMethods as_mapping (3); PySequenceMethods as_sequence (10);
     * PyBufferProcs as_buffer (2); ht_name, ht_slots, ht_qualname,
     * ht_cached_keys, ... }: 57 pointers past the type object, whose size
     * the table gives (3.15's has one more pointer) */
    vl->heap_qualname = o->type.size + 57 * p;
    vl->heap_cached_keys = vl->heap_qualname + p;
    /* cpython/descrobject.h: PyMemberDescrObject { PyDescr_COMMON (PyObject_HEAD;
     * d_type; d_name; d_qualname); PyMemberDef *d_member; }; descrobject.h:
     * PyMemberDef { const char *name; int type; Py_ssize_t offset; ... } */
    vl->member_descr_member = h + 3 * p;
    vl->member_def_type = 8;
    vl->member_def_offset = 16;
    /* cpython/code.h: co_argcount, co_posonlyargcount, co_kwonlyargcount,
     * co_stacksize, co_firstlineno: consecutive ints */
    vl->code_kwonlyargcount = o->code.firstlineno - 8;
    vl->code_stacksize = o->code.firstlineno - 4;
    /* internal/pycore_frame.h (3.13), pycore_interpframe_structs.h (3.14+):
     * f_executable, previous, f_funcobj, f_globals */
    vl->frame_globals = 24;
    /* cpython/descrobject.h: PyMethodDescrObject { PyDescr_COMMON;
     * PyMethodDef *d_method; ... } (ml_name: PyMethodDef's first field) */
    vl->method_descr_method = h + 3 * p;
    /* Modules/_threadmodule.c (in no header): 3.13 rlockobject {
     * PyObject_HEAD; PyThread_type_lock rlock_lock; PyThread_ident_t
     * rlock_owner; unsigned long rlock_count; ... }; 3.14+ rlockobject {
     * PyObject_HEAD; _PyRecursiveMutex lock; ... } with
     * internal/pycore_lock.h's _PyRecursiveMutex { PyMutex mutex;
     * unsigned long long thread; size_t level; }: the owner's
     * PyThread_get_thread_ident_ex() and the count at the same places */
    vl->rlock_owner = h + p;
    vl->rlock_count = h + 2 * p;
    /* Objects/rangeobject.c: rangeobject { PyObject_HEAD; start; stop;
     * step; length; } (in no header) */
    vl->range_start = h;
    vl->range_stop = h + p;
    vl->range_step = h + 2 * p;

    /* The thread facts' (thread_facts.c).  cpython/pystate.h: struct _ts
     * { prev, next, interp, eval_breaker, _status, ... current_frame,
     * c_profilefunc, c_tracefunc, c_profileobj, c_traceobj,
     * current_exception, exc_info, ... }: current_exception at 112 in 3.13
     * and 3.14 (both flavours), where 3.15's table publishes it (136);
     * exc_info, a _PyErr_StackItem *, is the next pointer in all three. */
    vl->tstate_current_exception =
        o->tstate.current_exception != PYF__ABSENT ? o->tstate.current_exception : 112;
    vl->tstate_exc_info = vl->tstate_current_exception + p;
    /* ... the thread's own _PyErr_StackItem exc_state, where exc_info
     * points when no generator runs: at 256 in 3.13 and 3.14 (both
     * flavours), where 3.15's table publishes it (288) */
    vl->tstate_exc_state = o->tstate.exc_state != PYF__ABSENT ? o->tstate.exc_state : 256;
    /* cpython/pystate.h: _PyErr_StackItem { PyObject *exc_value; struct
     * _err_stackitem *previous_item; } (3.15's table: exc_value) */
    vl->stackitem_exc_value = 0;
    vl->stackitem_previous = p;
    /* cpython/pyerrors.h: PyException_HEAD is PyObject_HEAD; dict; args;
     * notes; traceback; context; cause; char suppress_context;
     * PyOSErrorObject { PyException_HEAD; myerrno; strerror; filename;
     * filename2; [winerror;] written; } */
    vl->exc_traceback = h + 3 * p;
    vl->oserror_errno = h + 7 * p;
    vl->oserror_strerror = h + 8 * p;
    vl->oserror_filename = h + 9 * p;
    vl->oserror_filename2 = h + 10 * p;
    /* cpython/traceback.h: PyTracebackObject { PyObject_HEAD; tb_next;
     * tb_frame; int tb_lasti (bytes: code unit index * 2); int tb_lineno
     * (-1 until asked: Python/traceback.c computes it from tb_lasti) } */
    vl->tb_next = h;
    vl->tb_frame = h + p;
    vl->tb_lasti = h + 2 * p;
    vl->tb_lineno = h + 2 * p + 4;
    /* internal/pycore_frame.h: struct _frame (PyFrameObject) { PyObject_HEAD;
     * f_back; _PyInterpreterFrame *f_frame; ... } */
    vl->frameobj_f_frame = h + p;
}
