/*
 * linetable.c - a code object's line table, decoded into the line (and,
 * 3.11+, the columns) of one code unit: the location table of CPython
 * 3.11+ (Objects/locations.md), 3.10's PEP 626 co_linetable and 3.8/3.9's
 * co_lnotab (pyf__line_kind).  Bounded by the table's length; a corrupt
 * table yields no location, never a read past it.  Each older decoder
 * follows the interpreter's own (PyCode_Addr2Line) and is checked against
 * it on every code object of each version's standard library
 * (tests/python/test_line_tables.py).
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

/* 3.10's "no line" delta */
#define PEP626_NO_LINE (-128)

bool pyf__linetable_has_lines(pyf__line_kind kind, const uint8_t *tab, uint32_t len)
{
    uint32_t i = 0;
    if (kind == PYF__LINES_LNOTAB)
        return true; /* every address has a line */
    if (kind == PYF__LINES_PEP626) {
        for (i = 0; i + 2 <= len; i += 2)
            if ((int8_t)tab[i + 1] != PEP626_NO_LINE)
                return true;
        return len < 2;
    }
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

/* 3.8, 3.9 (PyCode_Addr2Line of Objects/codeobject.c): from the first
 * line, each pair's line delta counts once the address it advances to is
 * at or before the byte offset asked for; an odd last byte is ignored. */
static int64_t lnotab_line(const uint8_t *tab, uint32_t len, int32_t firstlineno, int64_t byte)
{
    int64_t line = firstlineno, addr = 0;
    for (uint32_t i = 0; i + 2 <= len; i += 2) {
        addr += tab[i];
        if (addr > byte)
            break;
        line += (int8_t)tab[i + 1];
    }
    return line;
}

/* 3.10 (_PyCode_CheckLineNumber over _PyLineTable_NextAddressRange): each
 * pair ends a range [start, start + bytes advanced) and moves the running
 * line by its delta, except -128, which leaves the running line and gives
 * the range none (-1).  Empty ranges are skipped (their deltas still
 * count).  false when the table ends before the byte offset. */
static bool pep626_line(const uint8_t *tab, uint32_t len, int32_t firstlineno, int64_t byte,
                        int64_t *line)
{
    int64_t computed = firstlineno, start = 0, end = 0;
    uint32_t i = 0;
    *line = -1;
    while (end <= byte) {
        do {
            if (i + 2 > len)
                return false;
            start = end;
            end += tab[i];
            int8_t delta = (int8_t)tab[i + 1];
            i += 2;
            if (delta == PEP626_NO_LINE) {
                *line = -1;
            } else {
                computed += delta;
                *line = computed;
            }
        } while (start == end);
    }
    return true;
}

bool pyf__linetable_lookup(pyf__line_kind kind, const uint8_t *tab, uint32_t len,
                           int32_t firstlineno, int64_t addrq, pyf__location *loc)
{
    loc->line = loc->end_line = loc->column = loc->end_column = -1;
    if (tab == NULL)
        return false;
    if (addrq < 0) {
        loc->line = loc->end_line = firstlineno;
        return true;
    }
    if (kind != PYF__LINES_LOCATIONS) {
        int64_t line;
        if (addrq > INT64_MAX / 2)
            return false;
        if (kind == PYF__LINES_LNOTAB)
            line = lnotab_line(tab, len, firstlineno, addrq * 2);
        else if (!pep626_line(tab, len, firstlineno, addrq * 2, &line))
            return false;
        if (line < -1 || line > INT32_MAX)
            return false;
        loc->line = loc->end_line = (int32_t)line;
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
