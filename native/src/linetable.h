/*
 * linetable.h - a code object's line table (linetable.c).
 */
#ifndef PYFRAMES_LINETABLE_H
#define PYFRAMES_LINETABLE_H

#include <stdbool.h>
#include <stdint.h>

/* A line table's format, by version (offsets.c decides which):
 *   LOCATIONS  3.11+ co_linetable, Objects/locations.md: lines and columns
 *   PEP626     3.10 co_linetable: (bytes advanced, line delta) pairs, each
 *              ending an address range; a delta of -128 gives its range no
 *              line (Objects/lnotab_notes.txt of 3.10)
 *   LNOTAB     3.8, 3.9 co_lnotab: (bytes advanced, signed line delta)
 *              pairs, as PyCode_Addr2Line reads them */
typedef enum pyf__line_kind {
    PYF__LINES_LOCATIONS,
    PYF__LINES_PEP626,
    PYF__LINES_LNOTAB,
} pyf__line_kind;

typedef struct pyf__location {
    int32_t line, end_line, column, end_column;
} pyf__location;
/* False only for a non-empty table whose every entry is "no location". */
bool pyf__linetable_has_lines(pyf__line_kind kind, const uint8_t *tab, uint32_t len);
/* Decode the location of code unit index addrq (2-byte units in every
 * format; -1 before the first instruction: the first line), as CPython
 * does.  The older formats give lines only (columns -1).  Returns false
 * when the table is missing or corrupt, or (LOCATIONS, PEP626) ends before
 * addrq (loc is then all -1); true with line -1 for a range without one. */
bool pyf__linetable_lookup(pyf__line_kind kind, const uint8_t *tab, uint32_t len,
                           int32_t firstlineno, int64_t addrq, pyf__location *loc);

#endif /* PYFRAMES_LINETABLE_H */
