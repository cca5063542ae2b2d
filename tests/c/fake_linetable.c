/*
 * fake_linetable.c - the line-table encoder (CPython's location table)
 * and the locations it stands for.
 * See fake_target.h.
 */
#include "fake_internal.h"

/* ==== line tables ====================================================== */

typedef struct lt_buf {
    uint8_t *p;
    size_t n, cap;
} lt_buf;

static void lt_byte(lt_buf *b, unsigned v)
{
    if (b->n >= b->cap)
        ft_die("line table buffer too small");
    b->p[b->n++] = (uint8_t)v;
}

static void lt_varint(lt_buf *b, unsigned v)
{
    while (v >= 64) {
        lt_byte(b, 64 | (v & 63));
        v >>= 6;
    }
    lt_byte(b, v);
}

static void lt_svarint(lt_buf *b, int v)
{
    unsigned u = v < 0 ? ((unsigned)(-v) << 1) | 1u : (unsigned)v << 1;
    lt_varint(b, u);
}

static void lt_first(lt_buf *b, int code, int len)
{
    lt_byte(b, 0x80u | (unsigned)code << 3 | (unsigned)(len - 1));
}

/* One entry of 1..8 code units, as CPython's write_location_info_entry. */
static void lt_entry(lt_buf *b, int *cur_line, const fake_loc *l, int len)
{
    if (l->line < 0) {
        lt_first(b, 15, len);
        return;
    }
    int delta = l->line - *cur_line;
    int col = l->col, end_col = l->end_col;
    if (col < 0 || end_col < 0) {
        if (l->end_line != l->line)
            ft_die("no-column location must be on one line");
        lt_first(b, 13, len);
        lt_svarint(b, delta);
        *cur_line = l->line;
        return;
    }
    if (l->end_line == l->line) {
        if (delta == 0 && col < 80 && end_col - col < 16 && end_col >= col) {
            int code = col / 8;
            lt_first(b, code, len);
            lt_byte(b, (unsigned)((col % 8) << 4 | (end_col - col)));
            return;
        }
        if (delta >= 0 && delta < 3 && col < 128 && end_col < 128) {
            lt_first(b, 10 + delta, len);
            lt_byte(b, (unsigned)col);
            lt_byte(b, (unsigned)end_col);
            *cur_line = l->line;
            return;
        }
    }
    if (l->end_line < l->line)
        ft_die("end_line before line");
    lt_first(b, 14, len);
    lt_svarint(b, delta);
    lt_varint(b, (unsigned)(l->end_line - l->line));
    lt_varint(b, (unsigned)col + 1);
    lt_varint(b, (unsigned)end_col + 1);
    *cur_line = l->line;
}

size_t fake_encode_linetable(int firstlineno, const fake_loc *locs, size_t n,
                             uint8_t *out, size_t cap)
{
    lt_buf b = {out, 0, cap};
    int cur = firstlineno;
    for (size_t i = 0; i < n; i++) {
        int left = locs[i].ncu;
        if (left < 1)
            ft_die("location run of %d code units", left);
        while (left > 0) {
            int len = left > 8 ? 8 : left;
            lt_entry(&b, &cur, &locs[i], len);
            left -= len;
        }
    }
    return b.n;
}

int fake_loc_at(const fake_loc *locs, size_t n, int idx, fake_loc *found)
{
    int start = 0;
    for (size_t i = 0; i < n; i++) {
        if (idx >= start && idx < start + locs[i].ncu) {
            *found = locs[i];
            if (found->line < 0) {
                found->end_line = found->col = found->end_col = -1;
            } else if (found->col < 0 || found->end_col < 0) {
                found->col = found->end_col = -1;
            }
            return 0;
        }
        start += locs[i].ncu;
    }
    return -1;
}
