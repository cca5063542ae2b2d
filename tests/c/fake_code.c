/*
 * fake_code.c - code objects.
 * See fake_target.h.
 */
#include "fake_internal.h"

#include <string.h>

/* ==== code objects ===================================================== */

uint64_t fake_code_raw(fake_target *ft, uint64_t filename, uint64_t qualname,
                       uint64_t name, uint64_t linetable, int firstlineno,
                       int ncu)
{
    const ft_offs *o = &ft->o;
    size_t size = (size_t)o->co_code_adaptive + 2u * (size_t)(ncu > 0 ? ncu : 1);
    if (size < o->co_size)
        size = o->co_size;
    uint64_t c = fake_alloc(ft, size);
    fake_w64(ft, c, 1);
    fake_w64(ft, c + o->ob_type, fake_type(ft, "code"));
    fake_w64(ft, c + o->co_filename, filename);
    fake_w64(ft, c + o->co_qualname, qualname);
    fake_w64(ft, c + o->co_name, name);
    fake_w64(ft, c + o->co_linetable, linetable);
    fake_w32(ft, c + o->co_firstlineno, (uint32_t)firstlineno);
    /* Some recognisable bytecode: NOP-like opcode pairs. */
    for (int i = 0; i < ncu; i++)
        fake_w16(ft, c + o->co_code_adaptive + 2u * (uint64_t)i, 0x011b);
    if (ft->layout != NULL) {
        fake_w64(ft, c + o->ob_size, (uint64_t)(ncu > 0 ? ncu : 0));
        /* as CPython's init_code: an array of one, the main copy */
        if (o->co_tlbc != 0)
            fake_code_tlbc(ft, c, 1);
    }
    return c;
}

void fake_code_set_flags(fake_target *ft, uint64_t code, uint32_t co_flags)
{
    fake_w32(ft, code + ft->o.co_flags, co_flags);
}

uint64_t fake_code(fake_target *ft, const char *filename, const char *qualname,
                   int firstlineno, const fake_loc *locs, size_t nlocs)
{
    uint8_t buf[8192];
    size_t len = fake_encode_linetable(firstlineno, locs, nlocs, buf, sizeof buf);
    int ncu = 0;
    for (size_t i = 0; i < nlocs; i++)
        ncu += locs[i].ncu;
    const char *dot = strrchr(qualname, '.');
    const char *name = dot ? dot + 1 : qualname;
    return fake_code_raw(ft, fake_str(ft, filename), fake_str(ft, qualname),
                         fake_str(ft, name), fake_bytes(ft, buf, len),
                         firstlineno, ncu);
}
