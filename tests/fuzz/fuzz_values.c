/*
 * fuzz_values.c - libFuzzer target: the value decoder (pyf_frame_locals,
 * pyf_value_read) over a frame whose locals hold every kind of value
 * (fake_values_frame), on a layout CPython's headers gave (3.13, 3.14,
 * 3.15, default or free-threaded), with every field it reads open to
 * corruption: the input picks the layout, the request (limits, attributes)
 * and up to 32 writes, each into any object the image holds (type objects,
 * dict keys and values, tables, strs, the frame and its code object ...)
 * of a value from the input, another object's address, or a hostile
 * number; then reader failures.
 *
 * Invariants (a violation aborts): every call returns 0 or a PYF_E* code;
 * a result is a well-formed tree (children after their parent and inside
 * the array, strings present and readable, data_size bytes at data,
 * UNREADABLE nodes with a reason and no children), within the request's
 * objects and bytes, and its locals name values inside it; everything is
 * freed (LeakSanitizer).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint32_t g_sink;

#define PYF__OBJECT_READ_MAX_TEST 4096u /* the most of a code object read */

static void die(const char *what, uint64_t a, uint64_t b) __attribute__((noreturn));
static void die(const char *what, uint64_t a, uint64_t b)
{
    fprintf(stderr, "fuzz invariant violated: %s (%llu, %llu)\n", what,
            (unsigned long long)a, (unsigned long long)b);
    abort();
}

static void check_values(const pyf_values *v, const pyf_values_request *req)
{
    if (v->local_size != PYF_LOCAL_SIZE || v->value_size != PYF_VALUE_SIZE)
        die("strides", v->local_size, v->value_size);
    /* the frame, its code object and its names are read besides the budget */
    uint64_t frame_reads = 2 * PYF__OBJECT_READ_MAX_TEST + (24ull + 1100) * v->nlocals;
    if (v->objects_read > req->max_objects || v->bytes_read > req->max_bytes + frame_reads)
        die("budget exceeded", v->objects_read, v->bytes_read);
    for (uint32_t i = 0; i < v->nvalues; i++) {
        const pyf_value *x = &v->values[i];
        if (x->type_name == NULL || x->kind > PYF_VALUE_NOTIMPLEMENTED || (x->flags & ~15u))
            die("node kind or flags", i, x->kind);
        g_sink += (uint32_t)strlen(x->type_name);
        if (x->data == NULL ? x->data_size != 0 : x->data[x->data_size] != '\0')
            die("node data", i, x->data_size);
        for (uint64_t k = 0; x->data != NULL && k < x->data_size; k++)
            g_sink += (uint8_t)x->data[k];
        if (x->nchildren && (x->first_child <= i ||
                             (uint64_t)x->first_child + x->nchildren > v->nvalues))
            die("children", i, x->first_child);
        if (x->kind == PYF_VALUE_UNREADABLE && (x->data == NULL || x->nchildren != 0))
            die("unreadable node", i, x->nchildren);
        if ((x->flags & (PYF_VALUE_CYCLE | PYF_VALUE_TOO_DEEP)) && x->nchildren != 0)
            die("cut node with children", i, x->nchildren);
    }
    for (uint32_t i = 0; i < v->nlocals; i++) {
        const pyf_local *l = &v->locals[i];
        if (l->name == NULL || (l->value != PYF_NO_VALUE && l->value >= v->nvalues) ||
            l->kind < PYF_LOCAL_ARG || l->kind > PYF_LOCAL_FREE)
            die("local", i, l->value);
        g_sink += (uint32_t)strlen(l->name);
    }
}

static void check_rc(int rc, pyf_values *v)
{
    if (!fake_known_error(rc) || (rc == 0) != (v != NULL))
        die("return code", (uint64_t)rc, v != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size};
    size_t nlayouts = 0;
    while (ft_layouts[nlayouts].name != NULL)
        nlayouts++;
    if (nlayouts == 0)
        return 0;
    const ft_layout *l = &ft_layouts[fz_u8(&in) % nlayouts];
    fake_target *ft = fake_new_layout(l);
    uint64_t code, globals;
    uint64_t frame = fake_values_frame(ft, &code, &globals);

    pyf_values_request req = {sizeof req, fz_u8(&in) & 1u, 0, 0, 0, 0, 0};
    uint8_t lim = fz_u8(&in);
    req.max_string = lim & 1 ? fz_u8(&in) : 0;
    req.max_items = lim & 2 ? fz_u8(&in) : 0;
    req.max_depth = lim & 4 ? fz_u8(&in) : 0;
    req.max_objects = lim & 8 ? fz_u16(&in) : 0;
    req.max_bytes = lim & 16 ? fz_u16(&in) * 16u : 0;

    /* corruption: any word of any object */
    size_t nobj = fake_nobjects(ft);
    unsigned writes = fz_u8(&in) % 33;
    for (unsigned w = 0; w < writes && nobj > 0; w++) {
        uint64_t a, other;
        size_t osz, other_size;
        fake_object(ft, fz_u16(&in) % nobj, &a, &osz);
        fake_object(ft, fz_u16(&in) % nobj, &other, &other_size);
        uint16_t at = fz_u16(&in);
        uint8_t how = fz_u8(&in);
        uint64_t val;
        switch (how % 6) {
        case 0: val = fz_u64(&in); break;
        case 1: val = other + (fz_u8(&in) & 0x38); break; /* another object */
        case 2: val = fz_u8(&in); break;
        case 3: val = fake_unmapped_addr(ft); break;
        case 4: val = UINT64_MAX - fz_u8(&in); break;
        default: val = (uint64_t)1 << (fz_u8(&in) % 64); break;
        }
        size_t width = (size_t)1 << ((how >> 3) % 4);
        if (osz >= width)
            fake_write(ft, a + at % (osz - width + 1), &val, width);
    }
    if (fz_u8(&in) & 1)
        fake_fail_nth(ft, 1 + fz_u8(&in), PYF_EFAULT, fz_u8(&in) & 1);

    pyf_target *t = NULL;
    pyf_reader r = fake_reader(ft, fz_u8(&in) & 1);
    if (pyf_target_open(&r, fake_runtime_addr(ft), NULL, &t, NULL) == PYF_OK) {
        pyf_values_request eff = req;
        eff.max_objects = req.max_objects ? req.max_objects : PYF_DEFAULT_VALUE_OBJECTS;
        eff.max_bytes = req.max_bytes ? req.max_bytes : PYF_DEFAULT_VALUE_BYTES;
        pyf_values *v = NULL;
        int rc = pyf_frame_locals(t, frame, &req, &v);
        check_rc(rc, v);
        if (v != NULL)
            check_values(v, &eff);
        /* one object more: an address from the input, or one of the image */
        uint64_t a = 0;
        size_t osz;
        if (nobj > 0)
            fake_object(ft, fz_u16(&in) % nobj, &a, &osz);
        if (fz_u8(&in) & 1)
            a = fz_u64(&in);
        pyf_values *w = NULL;
        rc = pyf_value_read(t, a, &req, &w);
        check_rc(rc, w);
        if (w != NULL)
            check_values(w, &eff);
        pyf_values_free(w);
        pyf_values_free(v);
        pyf_target_close(t);
    }
    fake_free(ft);
    return 0;
}
