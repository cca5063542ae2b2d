/*
 * objhead.h - the fixed parts of objects that more than one reader decodes
 * (the value decoder, the thread facts, the asyncio reader), decoded one
 * way for every version.
 */
#ifndef PYFRAMES_OBJHEAD_H
#define PYFRAMES_OBJHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "offsets.h"
#include "reads.h"

/* ---- ints -----------------------------------------------------------------
 * An int is a header (ob_size on 3.11: its digit count, negative for a
 * negative int; lv_tag on 3.12+: the count shifted by 3 over a sign of 0
 * positive, 1 zero, 2 negative) and 30-bit digits from lng.ob_digit. */
#define PYF__INT_SIGN_POSITIVE 0u
#define PYF__INT_SIGN_ZERO 1u
#define PYF__INT_SIGN_NEGATIVE 2u

/* The digit count and sign of the int whose bytes up to lng.ob_digit are
 * at b.  False when the header is no int's (lv_tag's sign 3, a zero with
 * digits). */
static inline bool pyf__int_head(const pyf__offsets *o, const uint8_t *b, uint64_t *ndigits,
                                 unsigned *sign)
{
    if (o->int_kind == PYF__INT_LV_TAG) {
        uint64_t tag = pyf__ld64(b + o->lng.lv_tag);
        *ndigits = tag >> 3;
        *sign = (unsigned)(tag & 3);
        return *sign != 3 && !(*sign == PYF__INT_SIGN_ZERO && *ndigits > 1);
    }
    int64_t size = (int64_t)pyf__ld64(b + o->lng.ob_size);
    *sign = size > 0 ? PYF__INT_SIGN_POSITIVE : size == 0 ? PYF__INT_SIGN_ZERO
                                                           : PYF__INT_SIGN_NEGATIVE;
    *ndigits = size < 0 ? (uint64_t)0 - (uint64_t)size : (uint64_t)size;
    return true;
}

/* The bytes of an int's header, up to its first digit. */
static inline size_t pyf__int_head_len(const pyf__offsets *o)
{
    return (size_t)o->lng.ob_digit;
}

/* The value of a non-negative int of at most max_digits (<= 3) digits whose
 * header and digits are at b (len bytes): false when it is negative,
 * longer, past 64 bits or not all there. */
static inline bool pyf__int_small(const pyf__offsets *o, const uint8_t *b, size_t len,
                                  unsigned max_digits, uint64_t *value)
{
    uint64_t nd;
    unsigned sign;
    if (len < pyf__int_head_len(o) || !pyf__int_head(o, b, &nd, &sign) ||
        sign == PYF__INT_SIGN_NEGATIVE || nd > max_digits || nd > 3 ||
        pyf__int_head_len(o) + 4 * nd > len)
        return false;
    uint64_t v = 0;
    if (sign != PYF__INT_SIGN_ZERO)
        for (uint64_t d = nd; d-- > 0;) {
            uint32_t digit = pyf__ld32(b + o->lng.ob_digit + 4 * d);
            if (digit >> 30 || (d == 2 && digit >= 16))
                return false; /* no digit, or past 64 bits */
            v = (v << 30) | digit;
        }
    *value = v;
    return true;
}

#endif /* PYFRAMES_OBJHEAD_H */
