/*
 * value_layout.h - where the value decoder (value_core.c, objects.c,
 * values.c) finds what _Py_DebugOffsets does not publish: dict keys and
 * values, instance dicts, cells, methods, functions, modules, complex,
 * bytearray, range, sets on 3.13, exceptions, __slots__ members, type
 * fields and frame globals; laid out per minor version and flavour from
 * CPython's own headers (value_layout.c says which header each comes
 * from).
 *
 * The field list (value_fields.h) is one X macro so that
 * tests/c/ft/emit_layout.c prints the same fields from the headers
 * themselves (test_values compares them).
 */
#ifndef PYFRAMES_VALUE_LAYOUT_H
#define PYFRAMES_VALUE_LAYOUT_H

#include <stdint.h>

#include "offsets.h"
#include "value_fields.h"

typedef struct pyf__value_layout {
#define PYF__VL_FIELD(name) uint64_t name;
    PYF__VALUE_LAYOUT(PYF__VL_FIELD)
#undef PYF__VL_FIELD
    /* 3.11: where an object with a managed dict keeps its values while no
     * dict is made (the word before managed_dict_back's) */
    uint64_t managed_values_back;
} pyf__value_layout;

/* The layout of o's version and flavour (value_layout.c). */
void pyf__value_layout_fill(const pyf__offsets *o, pyf__value_layout *vl);

/* Flags and kinds of 3.13-3.15 (Include/object.h, Include/cpython/code.h,
 * internal/pycore_code.h, internal/pycore_dict.h; the same in all three). */
#define PYF__TPFLAGS_INLINE_VALUES (1ull << 2)
#define PYF__TPFLAGS_MANAGED_DICT (1ull << 4)
#define PYF__TPFLAGS_HEAPTYPE (1ull << 9)
#define PYF__TPFLAGS_BASE_EXC_SUBCLASS (1ull << 30)
#define PYF__TPFLAGS_TYPE_SUBCLASS (1ull << 31)
#define PYF__CO_VARARGS 0x0004u
#define PYF__CO_VARKEYWORDS 0x0008u
#define PYF__CO_FAST_HIDDEN 0x10u
#define PYF__CO_FAST_LOCAL 0x20u
#define PYF__CO_FAST_CELL 0x40u
#define PYF__CO_FAST_FREE 0x80u
#define PYF__DICT_KEYS_GENERAL 0u  /* PyDictKeyEntry {hash, key, value} */
#define PYF__T_OBJECT_EX 16        /* PyMemberDef.type of a __slots__ member */

#endif /* PYFRAMES_VALUE_LAYOUT_H */
