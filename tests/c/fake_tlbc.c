/*
 * fake_tlbc.c - thread-local bytecode: free-threaded 3.14+ code
 * objects' _PyCodeArray and the frames that use a copy.
 * See fake_target.h.
 */
#include "fake_internal.h"

/* ==== thread-local bytecode (free-threaded 3.14+) ======================== */

static void need_tlbc(const fake_target *ft)
{
    if (ft->o.co_tlbc == 0)
        ft_die("thread-local bytecode needs a free-threaded 3.14+ layout");
}

static int code_units(const fake_target *ft, uint64_t code)
{
    return (int)fake_r64(ft, code + ft->o.ob_size);
}

uint64_t fake_code_tlbc(fake_target *ft, uint64_t code, int size)
{
    need_tlbc(ft);
    const ft_layout *l = ft->layout;
    if (size < 1)
        ft_die("a _PyCodeArray holds at least the main copy");
    uint64_t a = fake_alloc(ft, l->codearray_entries + (size_t)size * l->codearray_entry_size);
    fake_w64(ft, a + l->codearray_size, (uint64_t)size);
    fake_w64(ft, a + l->codearray_entries, code + ft->o.co_code_adaptive);
    fake_w64(ft, code + ft->o.co_tlbc, a);
    return a;
}

uint64_t fake_code_tlbc_array(const fake_target *ft, uint64_t code)
{
    need_tlbc(ft);
    return fake_r64(ft, code + ft->o.co_tlbc);
}

uint64_t fake_code_tlbc_entry(const fake_target *ft, uint64_t code, int idx)
{
    const ft_layout *l = ft->layout;
    uint64_t a = fake_code_tlbc_array(ft, code);
    if (idx < 0 || (uint64_t)idx >= fake_r64(ft, a + l->codearray_size))
        ft_die("tlbc index %d outside the array", idx);
    return fake_r64(ft, a + l->codearray_entries + (uint64_t)idx * l->codearray_entry_size);
}

uint64_t fake_code_tlbc_fill(fake_target *ft, uint64_t code, int idx)
{
    const ft_layout *l = ft->layout;
    uint64_t a = fake_code_tlbc_array(ft, code);
    if (idx < 1 || (uint64_t)idx >= fake_r64(ft, a + l->codearray_size))
        ft_die("tlbc slot %d outside the array", idx);
    int ncu = code_units(ft, code);
    uint64_t copy = fake_alloc(ft, 2u * (size_t)(ncu > 0 ? ncu : 1));
    for (int i = 0; i < ncu; i++) /* a thread's specialized copy */
        fake_w16(ft, copy + 2u * (uint64_t)i, (uint16_t)(0x2200 + idx));
    fake_w64(ft, a + l->codearray_entries + (uint64_t)idx * l->codearray_entry_size, copy);
    return copy;
}

uint64_t fake_code_tlbc_grow(fake_target *ft, uint64_t code, int size)
{
    const ft_layout *l = ft->layout;
    uint64_t old = fake_code_tlbc_array(ft, code);
    int64_t had = (int64_t)fake_r64(ft, old + l->codearray_size);
    if (size < had)
        ft_die("a _PyCodeArray only grows");
    /* CPython's resize_array: a new array, the old one freed later (QSBR) */
    uint64_t a = fake_alloc(ft, l->codearray_entries + (size_t)size * l->codearray_entry_size);
    fake_w64(ft, a + l->codearray_size, (uint64_t)size);
    for (int64_t i = 0; i < had; i++)
        fake_w64(ft, a + l->codearray_entries + (uint64_t)i * l->codearray_entry_size,
                 fake_r64(ft, old + l->codearray_entries + (uint64_t)i * l->codearray_entry_size));
    fake_w64(ft, code + ft->o.co_tlbc, a);
    return a;
}

void fake_frame_set_tlbc(fake_target *ft, uint64_t frame, int32_t idx, uint64_t instr_ptr)
{
    need_tlbc(ft);
    fake_w32(ft, frame + ft->o.fr_tlbc_index, (uint32_t)idx);
    fake_w64(ft, frame + ft->o.fr_instr_ptr, instr_ptr);
}
