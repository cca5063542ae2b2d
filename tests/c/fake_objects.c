/*
 * fake_objects.c - type, str and bytes objects.
 * See fake_target.h.
 */
#include "fake_internal.h"

#include <string.h>

/* ==== objects ========================================================== */

static uint64_t cstring(fake_target *ft, const char *s)
{
    size_t n = strlen(s) + 1;
    uint64_t a = fake_alloc(ft, n);
    fake_write(ft, a, s, n);
    return a;
}

uint64_t fake_type(fake_target *ft, const char *name)
{
    for (size_t i = 0; i < ft->ntypes; i++)
        if (strcmp(ft->types[i].text, name) == 0)
            return ft->types[i].addr;
    uint64_t t = fake_alloc(ft, ft->o.ty_size);
    uint64_t meta = strcmp(name, "type") == 0 ? t : fake_type(ft, "type");
    fake_w64(ft, t, 1);
    fake_w64(ft, t + ft->o.ob_type, meta);
    fake_w64(ft, t + ft->o.ty_tp_name, cstring(ft, name));
    GROW(ft->types, ft->ntypes, ft->captypes);
    ft->types[ft->ntypes].text = strdup(name);
    ft->types[ft->ntypes].addr = t;
    ft->ntypes++;
    return t;
}

/* Decode valid UTF-8 into code points; returns the count. */
static size_t utf8_decode(const char *s, uint32_t *out)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    while (*p) {
        uint32_t c;
        if (*p < 0x80) {
            c = *p++;
        } else if ((*p & 0xE0) == 0xC0) {
            c = (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
            p += 2;
        } else if ((*p & 0xF0) == 0xE0) {
            c = (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
            p += 3;
        } else {
            c = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
                (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
            p += 4;
        }
        if (out)
            out[n] = c;
        n++;
    }
    return n;
}

size_t fake_utf8_len(const char *utf8)
{
    return utf8_decode(utf8, NULL);
}

static uint64_t make_str_cp(fake_target *ft, const uint32_t *cp, size_t n,
                            int force_kind, unsigned interned,
                            int statically_allocated)
{
    uint32_t maxc = 0;
    for (size_t i = 0; i < n; i++)
        if (cp[i] > maxc)
            maxc = cp[i];
    int kind = maxc < 0x100 ? 1 : maxc < 0x10000 ? 2 : 4;
    if (force_kind) {
        if (force_kind < kind || (force_kind != 1 && force_kind != 2 && force_kind != 4))
            ft_die("fake_str: kind %d cannot hold the text", force_kind);
        kind = force_kind;
    }
    int ascii = kind == 1 && maxc < 0x80;
    uint64_t hdr = ascii ? ft->o.un_ascii_size : ft->o.un_compact_size;
    uint64_t s = fake_alloc(ft, hdr + (n + 1) * (size_t)kind);
    uint64_t str_type = fake_type(ft, "str");
    fake_w64(ft, s, 1);
    fake_w64(ft, s + ft->o.ob_type, str_type);
    fake_w64(ft, s + ft->o.un_length, n);
    fake_w64(ft, s + ft->o.str_hash, UINT64_MAX); /* hash = -1 */
    uint32_t state;
    if (ft->layout == NULL)
        state = (interned & 3u) | (uint32_t)kind << 2 | 1u << 5 | (uint32_t)ascii << 6 |
                (statically_allocated ? 1u << 7 : 0u);
    else /* the bits CPython's headers put there (statically_allocated unused) */
        state = ft->o.str_kind_shift_mul[kind] | ft->o.str_compact |
                (ascii ? ft->o.str_ascii : 0u) | (interned ? ft->o.str_interned : 0u);
    fake_w32(ft, s + ft->o.un_state, state);
    uint8_t *data = fake_host(ft, s + hdr, (n + 1) * (size_t)kind);
    for (size_t i = 0; i < n; i++) {
        if (kind == 1)
            data[i] = (uint8_t)cp[i];
        else if (kind == 2) {
            uint16_t v = (uint16_t)cp[i];
            memcpy(data + 2 * i, &v, 2);
        } else
            memcpy(data + 4 * i, &cp[i], 4);
    }
    return s;
}

uint64_t fake_str_cp(fake_target *ft, const uint32_t *cp, size_t n, int kind)
{
    return make_str_cp(ft, cp, n, kind, 0, 0);
}

static uint64_t make_str(fake_target *ft, const char *utf8, int force_kind,
                         unsigned interned, int statically_allocated)
{
    if (!fake_valid_utf8(utf8))
        ft_die("fake_str: invalid UTF-8");
    size_t n = utf8_decode(utf8, NULL);
    uint32_t *cp = ft_xcalloc(n + 1, sizeof *cp);
    utf8_decode(utf8, cp);
    uint64_t s = make_str_cp(ft, cp, n, force_kind, interned, statically_allocated);
    free(cp);
    return s;
}

uint64_t fake_str(fake_target *ft, const char *utf8)
{
    for (size_t i = 0; i < ft->nstrs; i++)
        if (strcmp(ft->strs[i].text, utf8) == 0)
            return ft->strs[i].addr;
    uint64_t s = make_str(ft, utf8, 0, 1, 0);
    GROW(ft->strs, ft->nstrs, ft->capstrs);
    ft->strs[ft->nstrs].text = strdup(utf8);
    ft->strs[ft->nstrs].addr = s;
    ft->nstrs++;
    return s;
}

uint64_t fake_str_ex(fake_target *ft, const char *utf8, int force_kind,
                     unsigned interned, int statically_allocated)
{
    return make_str(ft, utf8, force_kind, interned, statically_allocated);
}

uint64_t fake_bytes(fake_target *ft, const void *data, size_t len)
{
    uint64_t b = fake_alloc(ft, ft->o.by_ob_sval + len + 1);
    fake_w64(ft, b, 1);
    fake_w64(ft, b + ft->o.ob_type, fake_type(ft, "bytes"));
    fake_w64(ft, b + ft->o.by_ob_size, len);
    fake_w64(ft, b + ft->o.bytes_shash, UINT64_MAX); /* ob_shash = -1 */
    if (len)
        fake_write(ft, b + ft->o.by_ob_sval, data, len);
    return b;
}
