/*
 * linetable.h - a code object's line table (linetable.c).
 */
#ifndef PYFRAMES_LINETABLE_H
#define PYFRAMES_LINETABLE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct pyf__location {
    int32_t line, end_line, column, end_column;
} pyf__location;
/* False only for a non-empty table whose every entry is "no location". */
bool pyf__linetable_has_lines(const uint8_t *tab, uint32_t len);
/* Decode the location of code unit index addrq.  Returns false when the
 * table is missing or corrupt (loc is then all -1). */
bool pyf__linetable_lookup(const uint8_t *tab, uint32_t len, int32_t firstlineno,
                           int64_t addrq, pyf__location *loc);

#endif /* PYFRAMES_LINETABLE_H */
