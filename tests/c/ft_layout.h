/*
 * ft_layout.h - one CPython build's layout, as its own headers give it:
 * the _Py_DebugOffsets table (_Py_DebugOffsets_INIT, or 3.13's
 * _PyRuntimeState_INIT) and the facts a synthetic image needs that the
 * table does not carry.  Filled by ft/emit_layout.c, compiled against the
 * installed -dev headers of 3.13, 3.14 and 3.15, with and without
 * Py_GIL_DISABLED, and of 3.11 and 3.12 (pyenv's, Debian's), at build time
 * (tests/c/ft_layouts.cmake); the results are listed by ft_layouts.c.  Test data only: never pyframes' own values.
 */
#ifndef PYF_TEST_FT_LAYOUT_H
#define PYF_TEST_FT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "../../native/src/value_fields.h"

/* One offset of a version without _Py_DebugOffsets (3.11, 3.12), under the
 * name offsets.c gives it. */
typedef struct ft_pair {
    const char *name;             /* NULL ends the list */
    uint64_t value;
} ft_pair;

typedef struct ft_layout {
    const char *name;             /* "3.14t", "3.14", "3.12" */
    const char *include_dir;      /* the headers it was made from */
    int minor, free_threaded;     /* Py_GIL_DISABLED */
    uint64_t hexversion;          /* PY_VERSION_HEX of the headers */
    const uint8_t *table;         /* the _Py_DebugOffsets bytes (NULL: 3.11, 3.12) */
    size_t table_len;
    const ft_pair *pairs;         /* 3.11, 3.12: the offsets by name instead */
    uint64_t pyobject_size;       /* sizeof(PyObject) */
    uint64_t var_ob_size;         /* offsetof(PyVarObject, ob_size) */
    /* PyASCIIObject.state words with one bitfield set, read back from a
     * real object: kind 1/2/4, compact, ascii, interned = 1 (mortal) */
    uint32_t str_kind1, str_kind2, str_kind4, str_compact, str_ascii, str_interned;
    uint64_t str_hash;            /* offsetof(PyASCIIObject, hash) */
    uint64_t bytes_shash;         /* offsetof(PyBytesObject, ob_shash) */
    uint64_t gen_size, gen_gi_name, gen_gi_iframe, gen_gi_frame_state;
    uint64_t co_version;          /* offsetof(PyCodeObject, co_version) */
    uint64_t co_flags;            /* offsetof(PyCodeObject, co_flags) */
    /* its bits: CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE,
     * CO_ASYNC_GENERATOR */
    uint32_t co_generator, co_coroutine, co_iterable_coroutine, co_async_generator;
    int frame_executing;          /* FRAME_EXECUTING */
    int frame_suspended_yield_from; /* FRAME_SUSPENDED_YIELD_FROM (3.11, 3.12: FRAME_SUSPENDED) */
    int owner_thread, owner_generator, owner_entry; /* CSTACK (3.13) / INTERPRETER */
    uint64_t chunk_data;          /* offsetof(_PyStackChunk, data) */
    uint64_t tag_bits;            /* Py_TAG_BITS (0 on 3.13) */
    /* thread-local bytecode (free-threaded 3.14+; has_tlbc 0 otherwise) */
    int has_tlbc;
    uint64_t co_tlbc;             /* offsetof(PyCodeObject, co_tlbc) */
    uint64_t frame_tlbc_index, frame_tlbc_index_size;
    uint64_t codearray_size, codearray_entries, codearray_entry_size;
    /* the value decoder's object layouts (native/src/value_fields.h) */
    struct {
#define FT_VALUE_FIELD(name) uint64_t name;
        PYF__VALUE_LAYOUT(FT_VALUE_FIELD)
#undef FT_VALUE_FIELD
    } values;
    uint32_t co_varargs, co_varkeywords;
    uint32_t co_fast_hidden, co_fast_local, co_fast_cell, co_fast_free;
    uint64_t tp_inline_values, tp_managed_dict, tp_heaptype, tp_base_exc, tp_type_subclass;
    int dict_keys_general, t_object_ex;
    uint64_t frame_stacktop;      /* offsetof(_PyInterpreterFrame, stacktop); 0: none */
    /* 3.11: where an object of a class with a managed dict keeps its
     * values while no dict is made, before it; UINT64_MAX elsewhere */
    uint64_t managed_values_back;
    /* 3.11, 3.12 (-1 elsewhere): CALL and its inline cache entries, 3.12's
     * INSTRUMENTED_LINE, a suspended generator's frame state */
    int opcode_call, call_caches, opcode_instrumented_line, gen_suspended;
} ft_layout;


/* Every layout made at build time (the last one's name is NULL), and the
 * headers that were missing at configure time ("" when none). */
extern const ft_layout ft_layouts[];
extern const char ft_layouts_missing[];

/* 0 when every layout was made; else what a test exits with after saying
 * why (77, skipped; 1 inside the sandbox, whose headers must be there). */
int ft_layouts_missing_exit(void);

/* The layout of 3.<minor>, free-threaded or not; NULL when not made. */
const ft_layout *ft_layout_find(int minor, int free_threaded);

#endif
