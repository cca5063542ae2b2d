/*
 * value_fields.h - the fields of pyf__value_layout (value_layout.h), one X
 * macro with no other dependency: tests/c/ft/emit_layout.c prints each from
 * CPython's headers and tests/c/ft_layout.h holds them.  Every value is a
 * byte offset from the start of its struct.
 */
#ifndef PYFRAMES_VALUE_FIELDS_H
#define PYFRAMES_VALUE_FIELDS_H

#define PYF__VALUE_LAYOUT(X)                                                   \
    /* PyDictObject: ma_used (ma_keys, ma_values are in the table) */          \
    X(dict_used)                                                               \
    /* PyDictKeysObject (internal/pycore_dict.h) */                            \
    X(keys_log2_size) X(keys_log2_index_bytes) X(keys_kind) X(keys_nentries)   \
    X(keys_indices) X(keys_size)         /* keys_size: 3.8-3.10's dk_size */   \
    /* PyDictValues */                                                         \
    X(values_capacity) X(values_size) X(values_embedded) X(values_valid)       \
    X(values_values)                                                           \
    /* minus MANAGED_DICT_OFFSET: the managed dict pointer before an object */ \
    X(managed_dict_back)                                                       \
    X(cell_ref)                                  /* PyCellObject.ob_ref */     \
    X(method_func) X(method_self)                /* PyMethodObject */          \
    X(func_qualname)                             /* PyFunctionObject */        \
    X(module_dict)                               /* PyModuleObject.md_dict */  \
    X(complex_real) X(complex_imag)              /* PyComplexObject.cval */    \
    X(bytearray_start)                           /* PyByteArrayObject */       \
    X(cfunc_ml) X(cfunc_self)                    /* PyCFunctionObject */       \
    X(gen_qualname)                              /* _PyGenObject_HEAD */       \
    X(set_used) X(set_mask) X(set_table)         /* PySetObject */             \
    X(exc_args)                                  /* PyBaseExceptionObject */   \
    X(type_basicsize) X(type_base) X(type_dict) X(type_dictoffset) /* PyTypeObject */ \
    X(heap_qualname) X(heap_cached_keys)         /* PyHeapTypeObject */        \
    X(member_descr_member)                       /* PyMemberDescrObject */     \
    X(member_def_type) X(member_def_offset)      /* PyMemberDef */             \
    X(code_kwonlyargcount) X(code_stacksize)     /* PyCodeObject */            \
    X(frame_globals)                             /* _PyInterpreterFrame */     \
    X(method_descr_method)                       /* PyMethodDescrObject */     \
    X(rlock_owner) X(rlock_count)                /* _thread.RLock */           \
    X(range_start) X(range_stop) X(range_step)   /* rangeobject */         \
    /* the thread facts' (thread_facts.c): */                                  \
    X(tstate_current_exception) X(tstate_exc_info) /* PyThreadState */        \
    X(tstate_exc_state)                                                        \
    X(stackitem_exc_value) X(stackitem_previous) /* _PyErr_StackItem */       \
    X(exc_traceback)                             /* PyBaseExceptionObject */   \
    X(oserror_errno) X(oserror_strerror)         /* PyOSErrorObject */         \
    X(oserror_filename) X(oserror_filename2)                                   \
    X(tb_next) X(tb_frame) X(tb_lasti) X(tb_lineno) /* PyTracebackObject */    \
    X(frameobj_f_frame)                          /* PyFrameObject */

#endif /* PYFRAMES_VALUE_FIELDS_H */
