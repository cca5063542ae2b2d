/*
 * strings.c - decode remote str objects (every compact kind) into UTF-8.
 *
 * Compact ASCII strings keep their characters right after PyASCIIObject;
 * other compact strings (Latin-1, UCS-2, UCS-4) after
 * PyCompactUnicodeObject.  Lengths come from the target and are capped;
 * invalid code points become U+FFFD; U+0000 is written C0 80 (as in
 * modified UTF-8) so that a name holding NUL is not cut short at it.
 * Nothing here trusts the target.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "code.h"
#include "errors.h"
#include "offsets.h"
#include "reads.h"
#include "target.h"

#define SPECULATIVE_DATA 192 /* bytes read past the header on the first try */

/* One code point as UTF-8.  raw: lone surrogates kept (as "surrogatepass"
 * writes them) and U+0000 as one NUL byte; otherwise a surrogate becomes
 * U+FFFD and U+0000 C0 80, so that a name ends at its only NUL. */
static size_t put_utf8(char *dst, uint32_t cp, bool raw)
{
    if (cp >= 0xD800 && cp <= 0xDFFF && !raw)
        cp = 0xFFFD; /* lone surrogate */
    if (cp > 0x10FFFF)
        cp = 0xFFFD;
    if (cp == 0 && !raw) { /* U+0000 as C0 80, so a string ends at its only NUL */
        dst[0] = (char)0xC0;
        dst[1] = (char)0x80;
        return 2;
    }
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xC0 | (cp >> 6));
        dst[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xE0 | (cp >> 12));
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | (cp >> 18));
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    dst[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A str header's kind, ascii bit and length into si, and whether it says
 * compact; false when they make no str (a kind but 1, 2, 4: a legacy str
 * never made ready has 0; ascii of another kind; a negative length). */
static bool str_state(const pyf__offsets *o, const uint8_t *buf, pyf__str_info *si,
                      bool *compact)
{
    uint32_t state = pyf__ld32(buf + o->unicode.state);
    int64_t length = (int64_t)pyf__ld64(buf + o->unicode.length);
    unsigned kind = (state >> o->str_kind_shift) & 7;
    bool ascii = (state >> o->str_ascii_bit) & 1;
    *compact = (state >> o->str_compact_bit) & 1;
    si->kind = kind;
    si->ascii = ascii;
    si->length = (uint64_t)length;
    return (kind == 1 || kind == 2 || kind == 4) && !(ascii && kind != 1) && length >= 0;
}

int pyf__str_header(const pyf__offsets *o, const uint8_t *buf, pyf__str_info *si)
{
    bool compact;
    if (!str_state(o, buf, si, &compact) || !compact)
        return PYF_ECORRUPT;
    si->data_off = si->ascii ? o->unicode.asciiobject_size : o->unicode.compactunicodeobject_size;
    return PYF_OK;
}

int pyf__str_legacy(const pyf__offsets *o, const uint8_t *buf, pyf__str_info *si)
{
    bool compact;
    if (!o->legacy_strs || o->unicode.data == PYF__ABSENT || !str_state(o, buf, si, &compact) ||
        compact)
        return PYF_ECORRUPT;
    si->data_off = o->unicode.data;
    return PYF_OK;
}

int pyf__str_utf8(const pyf__str_info *si, const uint8_t *d, uint64_t nchars,
                  uint32_t max_bytes, bool raw, char **out, size_t *out_len,
                  bool *truncated)
{
    char *s = malloc((size_t)nchars * 4 + 1);
    if (s == NULL)
        return PYF_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < nchars; i++) {
        uint32_t cp;
        if (si->kind == 1) {
            cp = d[i];
            if (si->ascii && cp > 0x7F)
                cp = 0xFFFD;
        } else if (si->kind == 2) {
            uint16_t u;
            memcpy(&u, d + i * 2, 2);
            cp = u;
        } else {
            memcpy(&cp, d + i * 4, 4);
        }
        char tmp[4];
        size_t k = put_utf8(tmp, cp, raw);
        if (n + k > max_bytes) {
            *truncated = true;
            break;
        }
        memcpy(s + n, tmp, k);
        n += k;
    }
    s[n] = '\0';
    *out = s;
    *out_len = n;
    return PYF_OK;
}

int pyf__decode_str(const pyf__offsets *o, const uint8_t *buf, size_t have,
                    uint32_t max_bytes, char **out, bool *truncated,
                    size_t *need)
{
    *out = NULL;
    *truncated = false;
    size_t header = (size_t)o->unicode.asciiobject_size;
    if (have < header) {
        *need = (size_t)o->unicode.compactunicodeobject_size;
        return PYF__EMORE;
    }
    pyf__str_info si;
    if (pyf__str_header(o, buf, &si) != PYF_OK)
        return PYF_ECORRUPT;
    uint64_t nchars = si.length;
    if (nchars > max_bytes) {
        nchars = max_bytes;
        *truncated = true;
    }
    size_t data_len = (size_t)nchars * si.kind;
    if (have < si.data_off + data_len) {
        *need = si.data_off + data_len;
        return PYF__EMORE;
    }
    size_t len;
    return pyf__str_utf8(&si, buf + si.data_off, nchars, max_bytes, false, out, &len,
                         truncated);
}

int pyf__read_str(pyf_target *t, uint64_t addr, uint32_t max_bytes,
                  char **out, bool *truncated, const char *what)
{
    const pyf__offsets *o = &t->off;
    *out = NULL;
    *truncated = false;
    if (addr == 0 || addr % 8 != 0)
        return pyf__fail(t, PYF_ECORRUPT, "%s: bad str pointer 0x%llx", what,
                         (unsigned long long)addr);
    size_t header = (size_t)o->unicode.compactunicodeobject_size;
    size_t want = header + SPECULATIVE_DATA;
    uint8_t stackbuf[256 + SPECULATIVE_DATA];
    uint8_t *buf = stackbuf;
    if (want > sizeof stackbuf)
        want = sizeof stackbuf;

    int rc = pyf__read_now(t, addr, buf, want);
    if (rc == PYF_EFAULT) /* may run past the end of a mapping */
        rc = pyf__read(t, addr, buf, want = header, what);
    else if (rc != PYF_OK) {
        pyf__read_failed(&t->io.fail, &t->io.reader, rc, what, addr, want);
        return rc;
    }
    if (rc != PYF_OK)
        return rc;

    size_t need = 0;
    rc = pyf__decode_str(o, buf, want, max_bytes, out, truncated, &need);
    if (rc == PYF__EMORE) {
        uint8_t *big = malloc(need);
        if (big == NULL)
            return PYF_ENOMEM;
        rc = pyf__read(t, addr, big, need, what);
        if (rc == PYF_OK)
            rc = pyf__decode_str(o, big, need, max_bytes, out, truncated,
                                 &need);
        if (rc == PYF__EMORE)
            rc = PYF_ECORRUPT;
        free(big);
    }
    if (rc == PYF_ECORRUPT)
        pyf__fail(t, rc, "%s at 0x%llx is not a valid compact str object",
                  what, (unsigned long long)addr);
    return rc;
}
