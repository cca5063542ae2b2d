/*
 * whitebox.h - what the white-box tests (those including the library's
 * private headers) share: the library's own layout of a layout CPython's
 * headers gave.
 */
#ifndef PYF_TEST_WHITEBOX_H
#define PYF_TEST_WHITEBOX_H

#include "../../native/src/api.h"
#include "../../native/src/offsets.h"
#include "check.h"
#include "ft_layout.h"

/* The library's layout of l's version: decoded from its _Py_DebugOffsets,
 * or (3.11, 3.12) its built-in table, the library's own data made from
 * the same headers. */
static inline void whitebox_offsets(const ft_layout *l, pyf__offsets *o)
{
    char err[256];
    if (l->table != NULL)
        REQUIRE(pyf__offsets_decode(l->table, l->table_len, o, err, sizeof err) == PYF_OK);
    else
        REQUIRE(pyf__offsets_builtin(l->hexversion, o, err, sizeof err) == PYF_OK);
}

#endif
