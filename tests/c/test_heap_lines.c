/*
 * test_heap_lines.c - the line-table decoders of CPython 3.8/3.9
 * (co_lnotab) and 3.10 (PEP 626 co_linetable) in linetable.c, on hand-made
 * tables: the edges (signed deltas, "no line" ranges that still advance
 * the address, empty ranges, odd and cut-short tables, the table's end)
 * that the check against each interpreter's standard library
 * (tests/python/test_line_tables.py) meets only where CPython happens to
 * make them.  Expected lines follow PyCode_Addr2Line of each version.
 */
#include "../../native/src/linetable.h"
#include "check.h"

static int32_t line_at(pyf__line_kind kind, const uint8_t *tab, uint32_t len, int64_t unit)
{
    pyf__location loc;
    if (!pyf__linetable_lookup(kind, tab, len, 10, unit, &loc))
        return -99;
    CHECK(loc.column == -1 && loc.end_column == -1 && loc.end_line == loc.line);
    return loc.line;
}

static void lnotab_edges(void)
{
    check_begin("co_lnotab (3.8, 3.9)");
    /* line 10 until byte 6, then 12 until byte 10, then back to 11
     * (signed deltas since 3.8), then a jump of 300 bytes in two pairs
     * (255, 0) (45, 3): line 14 from byte 310 */
    static const uint8_t tab[] = {6, 2, 4, 0xff, 255, 0, 45, 3};
    const pyf__line_kind k = PYF__LINES_LNOTAB;
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, -1), 10);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 0), 10);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 2), 10);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 3), 12);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 5), 11);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 154), 11);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 155), 14);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 1000), 14); /* past the end: the last */
    CHECK_EQ_INT(line_at(k, tab, 7, 155), 11);          /* an odd last byte ignored */
    CHECK_EQ_INT(line_at(k, tab, 0, 3), 10);            /* empty: the first line */
    CHECK(pyf__linetable_has_lines(k, tab, sizeof tab));
    pyf__location loc;
    CHECK(!pyf__linetable_lookup(k, NULL, 0, 10, 0, &loc) && loc.line == -1);
}

static void pep626_edges(void)
{
    check_begin("co_linetable (3.10, PEP 626)");
    /* [0,4) line 11; [4,8) no line (-128: the address still advances and
     * the running line stays 11); an empty range moving the line by 5;
     * [8,10) line 16 + (-2) = 14; [10,12) line 14 */
    static const uint8_t tab[] = {4, 1, 4, 0x80, 0, 5, 2, 0xfe, 2, 0};
    const pyf__line_kind k = PYF__LINES_PEP626;
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, -1), 10);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 0), 11);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 1), 11);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 2), -1);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 3), -1);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 4), 14);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 5), 14);
    CHECK_EQ_INT(line_at(k, tab, sizeof tab, 6), -99); /* past the table */
    CHECK_EQ_INT(line_at(k, tab, 5, 4), -99);          /* the table cut short before it */
    CHECK_EQ_INT(line_at(k, tab, 0, 0), -99);
    CHECK(pyf__linetable_has_lines(k, tab, sizeof tab));
    static const uint8_t none[] = {6, 0x80, 2, 0x80};
    CHECK(!pyf__linetable_has_lines(k, none, sizeof none));
    CHECK(pyf__linetable_has_lines(k, none, 0));
}

int main(void)
{
    lnotab_edges();
    pep626_edges();
    return check_end();
}
