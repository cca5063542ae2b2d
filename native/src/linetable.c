/*
 * linetable.c - a code object's line table: the location table of CPython
 * 3.11+ (Objects/locations.md), decoded into the line and columns of one
 * code unit.  Bounded by the table's length; a corrupt table yields no
 * location, never a read past it.
 */
#include <stddef.h>
#include "linetable.h"

typedef struct lt_reader {
    const uint8_t *p;
    uint32_t len, i;
    bool bad;
} lt_reader;

static uint32_t lt_byte(lt_reader *r)
{
    if (r->i >= r->len) {
        r->bad = true;
        return 0;
    }
    return r->p[r->i++];
}

static uint32_t lt_varint(lt_reader *r)
{
    uint32_t b = lt_byte(r);
    uint32_t val = b & 63;
    unsigned shift = 6;
    while ((b & 64) && !r->bad) {
        if (shift > 24) {
            r->bad = true;
            return 0;
        }
        b = lt_byte(r);
        val |= (b & 63) << shift;
        shift += 6;
    }
    return val;
}

static int32_t lt_svarint(lt_reader *r)
{
    uint32_t u = lt_varint(r);
    return (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

bool pyf__linetable_has_lines(const uint8_t *tab, uint32_t len)
{
    uint32_t i = 0;
    if (len == 0)
        return true; /* missing locations, not a shim's explicit "none" */
    while (i < len) {
        uint32_t first = tab[i];
        if (!(first & 0x80))
            return true; /* corrupt: do not call it a shim */
        if (((first >> 3) & 15) != 15)
            return true;
        i++; /* a no-location entry is one byte */
    }
    return false;
}

bool pyf__linetable_lookup(const uint8_t *tab, uint32_t len, int32_t firstlineno,
                           int64_t addrq, pyf__location *loc)
{
    loc->line = loc->end_line = loc->column = loc->end_column = -1;
    if (tab == NULL)
        return false;
    if (addrq < 0) {
        loc->line = loc->end_line = firstlineno;
        return true;
    }
    lt_reader r = {tab, len, 0, false};
    int64_t line = firstlineno;
    int64_t addr = 0;
    while (r.i < r.len) {
        uint32_t first = lt_byte(&r);
        if (!(first & 0x80))
            return false;
        uint32_t code = (first >> 3) & 15;
        int64_t length = (first & 7) + 1;
        int64_t eline = -1, col = -1, ecol = -1;
        bool has_line = true;
        if (code == 15) {
            has_line = false;
        } else if (code == 14) {
            line += lt_svarint(&r);
            eline = line + lt_varint(&r);
            col = (int64_t)lt_varint(&r) - 1;
            ecol = (int64_t)lt_varint(&r) - 1;
        } else if (code == 13) {
            line += lt_svarint(&r);
            eline = line;
        } else if (code >= 10) {
            line += code - 10;
            eline = line;
            col = lt_byte(&r);
            ecol = lt_byte(&r);
        } else {
            uint32_t second = lt_byte(&r);
            eline = line;
            col = code * 8 + ((second >> 4) & 7);
            ecol = col + (second & 15);
        }
        if (r.bad || line < -1 || line > INT32_MAX || eline > INT32_MAX)
            return false;
        if (addrq >= addr && addrq < addr + length) {
            if (has_line) {
                loc->line = (int32_t)line;
                loc->end_line = (int32_t)eline;
                loc->column = (int32_t)col;
                loc->end_column = (int32_t)ecol;
            }
            return true;
        }
        addr += length;
    }
    return false;
}
