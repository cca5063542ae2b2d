/*
 * values.c - what a frame holds, as a tree of pyf_value nodes: the calls
 * (pyf_frame_locals, pyf_value_read, pyf_values_free), the result, a
 * frame's locals and its value stack.  The decoder's top layer (values.h):
 * it calls the three below it, value_prefetch.c (what a call reads
 * ahead), objects.c (one decoder a kind of object) and value_core.c (the
 * context and its reads); none of them calls it.
 *
 * Bounds: every count read from the target is checked before it sizes a
 * read or a loop; the call stops decoding (BUDGET nodes) when its objects
 * or bytes run out; nesting is cut at max_depth (at most value_core.c's
 * VALUE_DEPTH_CAP, so the recursion is bounded); cycles are cut by the set
 * of objects on the current path.  Nothing is written to the target.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "containers.h"
#include "objhead.h"
#include "offsets.h"
#include "reads.h"
#include "target.h"
#include "value_layout.h"
#include "values.h"
#include "walk.h"

#define LOCALS_MAX 65536u        /* co_nlocalsplus */

/* The call's result: the public struct first, then what frees it. */
typedef struct values_result {
    pyf_values pub;
    pyf__arena arena;
} values_result;

_Static_assert(sizeof(pyf_value) == PYF_VALUE_SIZE, "pyf_value is frozen");
_Static_assert(sizeof(pyf_local) == PYF_LOCAL_SIZE, "pyf_local is frozen");
_Static_assert(sizeof(pyf_values_request) == PYF_VALUES_REQUEST_SIZE_V0,
               "pyf_values_request");

/* ---- the calls ------------------------------------------------------------ */

/* A read of the frame or its code object (outside the budget, a failure
 * detailed in t->io.fail), served from what was read ahead when it can be. */
static int frame_read(pyf__vctx *c, uint64_t addr, void *dst, size_t len, const char *what)
{
    if (c->batch.n != 0 && pyf__vbatch_get(c, addr, dst, len))
        return PYF_OK;
    return pyf__read(c->t, addr, dst, len, what);
}

/* The result: the nodes and locals copied into the arena, which the
 * result keeps. */
static int ctx_end(pyf__vctx *c, const pyf_local *locals, uint32_t nlocals,
                   pyf_values **out)
{
    values_result *r = calloc(1, sizeof *r);
    pyf_value *v = c->nomem ? NULL : pyf__arena_alloc(&c->arena, (size_t)c->n * sizeof *v + 8);
    pyf_local *l = c->nomem ? NULL
                            : pyf__arena_alloc(&c->arena, (size_t)nlocals * sizeof *l + 8);
    if (r == NULL || v == NULL || l == NULL) {
        free(r);
        return pyf__fail(c->t, PYF_ENOMEM, "out of memory decoding values");
    }
    if (c->n)
        memcpy(v, c->v, (size_t)c->n * sizeof *v);
    if (nlocals)
        memcpy(l, locals, (size_t)nlocals * sizeof *l);
    r->pub.nlocals = nlocals;
    r->pub.nvalues = c->n;
    r->pub.locals = l;
    r->pub.values = v;
    r->pub.local_size = PYF_LOCAL_SIZE;
    r->pub.value_size = PYF_VALUE_SIZE;
    r->pub.objects_read = c->objects;
    r->pub.bytes_read = c->bytes;
    r->pub.opcode = r->pub.oparg = PYF_NO_VALUE;
    r->arena = c->arena;
    c->arena = (pyf__arena){0};
    *out = &r->pub;
    return PYF_OK;
}

/* One object as values[0]. */
static int one_value(pyf__vctx *c, uint64_t addr, pyf_values **out)
{
    if (addr == 0)
        return pyf__fail(c->t, PYF_EINVAL, "no object at address 0");
    uint32_t i = pyf__vnodes(c, 1);
    pyf__vprefetch(c, 0, &addr, 1);
    if (i != PYF_NO_VALUE)
        pyf__decode_object(c, i, addr, 0);
    pyf__vprefetch_learn(c);
    return ctx_end(c, NULL, 0, out);
}

/* A call: its arguments checked, a context made, body run, the context freed. */
static int values_call(pyf_target *t, uint64_t addr, const pyf_values_request *req,
                       pyf_values **out, int (*body)(pyf__vctx *, uint64_t, pyf_values **))
{
    if (out != NULL)
        *out = NULL;
    if (t == NULL || out == NULL)
        return PYF_EINVAL;
    pyf__vctx c;
    int rc = pyf__vctx_begin(&c, t, req);
    if (rc == PYF_OK)
        rc = body(&c, addr, out);
    pyf__vctx_end(&c);
    return rc;
}

int pyf_value_read(pyf_target *t, uint64_t addr, const pyf_values_request *req,
                   pyf_values **out)
{
    return values_call(t, addr, req, out, one_value);
}

void pyf_values_free(pyf_values *v)
{
    if (v == NULL)
        return;
    values_result *r = (values_result *)v;
    pyf__arena_free(&r->arena);
    free(r);
}

/* ---- a frame's locals ------------------------------------------------------- */

/* Where a frame's locals start: f_localsplus of a frame object (3.8-3.10),
 * localsplus of an interpreter frame. */
static uint64_t localsplus_at(const pyf__offsets *o)
{
    return o->frame_model == PYF__FRAMES_HEAP ? o->heapframe.localsplus : o->frame.localsplus;
}

/* What a code object says about its locals. */
typedef struct code_locals {
    uint32_t n;              /* the locals shown (co_nlocalsplus) */
    uint64_t *names;         /* [n] str addresses */
    uint8_t *kinds;          /* [n] CO_FAST_* */
    /* frame_model HEAP: [n] the frame slot holding each (an argument that
     * is also a cell: its cell's), of nslots in f_localsplus; NULL: slot
     * i is local i, nslots n */
    uint32_t *slot;
    uint32_t nslots;
    uint32_t nargs, argcount, kwonly;
    uint32_t co_flags;
} code_locals;

/* The items of a tuple of names (a code object's co_varnames, co_cellvars
 * or co_freevars, as what says) appended to *names (grown) after its *n. */
static int name_tuple(pyf__vctx *c, uint64_t tuple, const char *what, uint64_t **names,
                      uint32_t *n)
{
    const pyf__offsets *o = c->o;
    uint8_t hdr[PYF__OBJECT_READ_MAX];
    if (tuple == 0)
        return PYF_OK;
    int rc = tuple % 8 != 0 ? pyf__fail(c->t, PYF_ECORRUPT, "%s at 0x%llx", what,
                                        (unsigned long long)tuple)
                            : frame_read(c, tuple, hdr, (size_t)o->tuple.ob_item, what);
    if (rc != PYF_OK)
        return rc;
    int64_t size = (int64_t)pyf__ld64(hdr + o->tuple.ob_size);
    if (size < 0 || size > (int64_t)(LOCALS_MAX - *n))
        return pyf__fail(c->t, PYF_ECORRUPT, "%s at 0x%llx has an implausible size (%lld)",
                         what, (unsigned long long)tuple, (long long)size);
    uint64_t *grown = realloc(*names, ((size_t)*n + (size_t)size) * 8 + 8);
    if (grown == NULL)
        return pyf__fail(c->t, PYF_ENOMEM, "out of memory");
    *names = grown;
    c->bytes += (uint64_t)size * 8;
    rc = size == 0 ? PYF_OK
                   : frame_read(c, tuple + o->tuple.ob_item, grown + *n, (size_t)size * 8, what);
    *n += (uint32_t)size;
    return rc;
}

/* 3.8-3.10 (frame_model HEAP): f_localsplus holds co_nlocals locals (named
 * by co_varnames), then the cells of co_cellvars, then the free variables
 * of co_freevars.  An argument that is also a cell (co_cell2arg: for each
 * cell, the argument it was made from, or -1) has its slot cleared when
 * the frame starts and its value in the cell: it is shown once, as the
 * argument, read from the cell, as 3.11+ (one slot of kinds LOCAL|CELL)
 * show it.  The kinds are made as 3.11+'s co_localspluskinds say them. */
static int read_heap_code_locals(pyf__vctx *c, uint64_t code, const uint8_t *buf,
                                 code_locals *cl)
{
    const pyf__offsets *o = c->o;
    pyf_target *t = c->t;
    int32_t nlocals = (int32_t)pyf__ld32(buf + o->code.nlocals);
    uint64_t cell2arg = pyf__ld64(buf + o->code.cell2arg);
    if (nlocals < 0 || nlocals > (int32_t)LOCALS_MAX)
        return pyf__fail(t, PYF_ECORRUPT, "code object at 0x%llx has implausible locals "
                         "(co_nlocals %d)", (unsigned long long)code, nlocals);
    uint64_t *names = NULL;
    uint32_t nslots = 0;
    int rc = name_tuple(c, pyf__ld64(buf + o->code.varnames), "code object's co_varnames",
                        &names, &nslots);
    uint32_t nv = nslots;
    if (rc == PYF_OK)
        rc = name_tuple(c, pyf__ld64(buf + o->code.cellvars), "code object's co_cellvars",
                        &names, &nslots);
    uint32_t ncell = nslots - nv;
    if (rc == PYF_OK)
        rc = name_tuple(c, pyf__ld64(buf + o->code.freevars), "code object's co_freevars",
                        &names, &nslots);
    int64_t *c2a = NULL;
    if (rc == PYF_OK && nv != (uint32_t)nlocals)
        rc = pyf__fail(t, PYF_ECORRUPT, "code object at 0x%llx has %u local names for "
                       "co_nlocals %d", (unsigned long long)code, nv, nlocals);
    if (rc == PYF_OK && cell2arg != 0 && ncell != 0) {
        c2a = malloc((size_t)ncell * 8);
        rc = c2a == NULL ? pyf__fail(t, PYF_ENOMEM, "out of memory")
                         : frame_read(c, cell2arg, c2a, (size_t)ncell * 8,
                                      "code object's co_cell2arg");
        c->bytes += (uint64_t)ncell * 8;
    }
    if (rc != PYF_OK)
        nslots = 0;
    cl->names = rc == PYF_OK ? malloc((size_t)nslots * 8 + 8) : NULL;
    cl->kinds = rc == PYF_OK ? malloc((size_t)nslots + 8) : NULL;
    cl->slot = rc == PYF_OK ? malloc((size_t)nslots * 4 + 8) : NULL;
    if (rc == PYF_OK && (cl->names == NULL || cl->kinds == NULL || cl->slot == NULL))
        rc = pyf__fail(t, PYF_ENOMEM, "out of memory");
    uint32_t n = 0;
    for (uint32_t i = 0; rc == PYF_OK && i < nslots; i++) {
        uint32_t cell = i - nv;
        uint8_t kind = i < nv      ? PYF__CO_FAST_LOCAL
                       : i < nv + ncell ? PYF__CO_FAST_CELL
                                        : PYF__CO_FAST_FREE;
        if (kind == PYF__CO_FAST_CELL && c2a != NULL && c2a[cell] >= 0) {
            if (c2a[cell] >= (int64_t)nv) {
                rc = pyf__fail(t, PYF_ECORRUPT, "code object at 0x%llx maps cell %u to "
                               "argument %lld of %u", (unsigned long long)code, cell,
                               (long long)c2a[cell], nv);
                break;
            }
            cl->kinds[c2a[cell]] |= PYF__CO_FAST_CELL; /* shown as the argument */
            cl->slot[c2a[cell]] = i;
            continue;
        }
        cl->names[n] = names[i];
        cl->kinds[n] = kind;
        cl->slot[n++] = i;
    }
    free(names);
    free(c2a);
    cl->n = n;
    cl->nslots = nslots;
    return rc;
}

static int read_code_locals(pyf__vctx *c, uint64_t code, code_locals *cl)
{
    const pyf__offsets *o = c->o;
    pyf_target *t = c->t;
    uint8_t *buf = malloc((size_t)o->code.size);
    if (buf == NULL)
        return pyf__fail(t, PYF_ENOMEM, "out of memory");
    int rc = frame_read(c, code, buf, (size_t)o->code.size, "code object");
    c->bytes += o->code.size;
    if (rc != PYF_OK) {
        free(buf);
        return rc;
    }
    int32_t argcount = (int32_t)pyf__ld32(buf + o->code.argcount);
    int32_t kwonly = (int32_t)pyf__ld32(buf + c->vl.code_kwonlyargcount);
    cl->co_flags = o->code.co_flags != PYF__ABSENT ? pyf__ld32(buf + o->code.co_flags) : 0;
    uint32_t nargs = 0;
    if (argcount >= 0 && kwonly >= 0)
        nargs = (uint32_t)argcount + (uint32_t)kwonly +
                ((cl->co_flags & PYF__CO_VARARGS) ? 1 : 0) +
                ((cl->co_flags & PYF__CO_VARKEYWORDS) ? 1 : 0);
    cl->argcount = (uint32_t)argcount;
    cl->kwonly = (uint32_t)kwonly;
    cl->nargs = nargs;
    if (o->frame_model == PYF__FRAMES_HEAP) {
        rc = read_heap_code_locals(c, code, buf, cl);
        free(buf);
        if (rc == PYF_OK && (argcount < 0 || kwonly < 0 || nargs > cl->n))
            rc = pyf__fail(t, PYF_ECORRUPT, "code object at 0x%llx has implausible locals "
                           "(%u names, %d arguments)", (unsigned long long)code, cl->n,
                           argcount);
        return rc;
    }
    uint64_t names = pyf__ld64(buf + o->code.localsplusnames);
    uint64_t kinds = pyf__ld64(buf + o->code.localspluskinds);
    free(buf);

    uint8_t hdr[PYF__OBJECT_READ_MAX];
    rc = frame_read(c, names, hdr, (size_t)o->tuple.ob_item, "code object's local names");
    if (rc != PYF_OK)
        return rc;
    int64_t n = (int64_t)pyf__ld64(hdr + o->tuple.ob_size);
    rc = frame_read(c, kinds, hdr, (size_t)o->bytes.ob_sval, "code object's local kinds");
    if (rc != PYF_OK)
        return rc;
    int64_t nk = (int64_t)pyf__ld64(hdr + o->bytes.ob_size);
    if (n < 0 || n > LOCALS_MAX || nk != n || argcount < 0 || kwonly < 0 || nargs > n)
        return pyf__fail(t, PYF_ECORRUPT, "code object at 0x%llx has implausible locals "
                         "(%lld names, %lld kinds, %d arguments)", (unsigned long long)code,
                         (long long)n, (long long)nk, argcount);
    cl->n = cl->nslots = (uint32_t)n;
    cl->names = malloc((size_t)n * 8 + 8);
    cl->kinds = malloc((size_t)n + 8);
    if (cl->names == NULL || cl->kinds == NULL)
        return pyf__fail(t, PYF_ENOMEM, "out of memory");
    rc = frame_read(c, names + o->tuple.ob_item, cl->names, (size_t)n * 8,
                    "code object's local names");
    if (rc == PYF_OK)
        rc = frame_read(c, kinds + o->bytes.ob_sval, cl->kinds, (size_t)n,
                        "code object's local kinds");
    c->bytes += (uint64_t)n * 9;
    return rc;
}

/* kind and flags of local i */
static void local_kind(const code_locals *cl, uint32_t i, pyf_local *l)
{
    uint8_t k = cl->kinds[i];
    if (i < cl->nargs) {
        l->kind = PYF_LOCAL_ARG;
        uint32_t after = cl->argcount + cl->kwonly;
        if (i >= cl->argcount && i < after)
            l->flags |= PYF_LOCAL_KWONLY;
        else if (i == after && (cl->co_flags & PYF__CO_VARARGS))
            l->flags |= PYF_LOCAL_VARARGS;
        else if (i >= after)
            l->flags |= PYF_LOCAL_VARKEYWORDS;
    } else if (k & PYF__CO_FAST_FREE)
        l->kind = PYF_LOCAL_FREE;
    else if (k & PYF__CO_FAST_CELL)
        l->kind = PYF_LOCAL_CELL;
    else
        l->kind = PYF_LOCAL_LOCAL;
    if (k & PYF__CO_FAST_HIDDEN)
        l->flags |= PYF_LOCAL_HIDDEN;
}

/* The value of one slot into l (a cell's contents for a cell or free
 * variable once the slot holds a cell). */
static void local_value(pyf__vctx *c, const code_locals *cl, uint32_t i, uint64_t raw,
                        pyf_local *l)
{
    const pyf__offsets *o = c->o;
    l->value = PYF_NO_VALUE;
    if (o->tagged_ints && (raw & 3) == 3) { /* a tagged int (Py_INT_TAG) */
        uint32_t v = pyf__vnodes(c, 1);
        if (v == PYF_NO_VALUE)
            return;
        int64_t x = (int64_t)raw >> 2;
        uint64_t mag = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
        uint32_t digits[3] = {(uint32_t)(mag & 0x3fffffff), (uint32_t)((mag >> 30) & 0x3fffffff),
                              (uint32_t)(mag >> 60)};
        uint32_t nd = mag == 0 ? 0 : mag >> 60 ? 3 : mag >> 30 ? 2 : 1;
        c->v[v].kind = PYF_VALUE_INT;
        c->v[v].type_name = "int";
        c->v[v].number = x < 0 ? -1 : x > 0;
        c->v[v].length = nd;
        pyf__vdata(c, v, digits, nd * 4);
        l->value = v;
        return;
    }
    uint64_t addr = raw & o->tag_mask;
    if (addr == 0) {
        l->flags |= PYF_LOCAL_UNBOUND;
        return;
    }
    if (cl->kinds[i] & (PYF__CO_FAST_CELL | PYF__CO_FAST_FREE)) {
        uint8_t hdr[64];
        const pyf__vtype *ty = NULL;
        if (addr % 8 == 0 && pyf__vread(c, addr, hdr, (size_t)o->pyobject.size) == PYF_OK)
            ty = pyf__vtype_get(c, pyf__ld64(hdr + o->pyobject.ob_type));
        if (ty != NULL && ty->kind == PYF_VALUE_CELL) {
            uint64_t ref = 0;
            if (pyf__vread(c, addr + c->vl.cell_ref, &ref, 8) == PYF_OK && ref == 0) {
                l->flags |= PYF_LOCAL_UNBOUND;
                return;
            }
            if (ref != 0)
                addr = ref; /* else the cell itself shows why */
        }
    }
    uint32_t v = pyf__vnodes(c, 1);
    if (v == PYF_NO_VALUE)
        return;
    pyf__decode_object(c, v, addr, 0);
    l->value = v;
}

/* ---- a frame's value stack (PYF_VALUES_STACK) ----------------------------- */

#define STACK_DEPTH 1u   /* an entry's nesting: a bound method's __self__ */
#define STACK_ITEMS 8u
#define STACK_STRING 64u

/* What the nodes [from, c->n) of stack entries add: a method_descriptor's
 * name (its PyMethodDef's ml_name), an RLock's owner and count, an
 * _asyncio.FutureIter's future (Modules/_asynciomodule.c: futureiterobject,
 * the future after the object header). */
static void stack_extras(pyf__vctx *c, uint32_t from)
{
    for (uint32_t i = from; i < c->n; i++) {
        uint64_t addr = c->v[i].addr, w[2];
        if (c->v[i].kind != PYF_VALUE_OTHER || addr == 0)
            continue;
        if (strcmp(c->v[i].type_name, "_asyncio.FutureIter") == 0) {
            if (pyf__vread(c, addr + c->o->pyobject.size, w, 8) == PYF_OK && w[0] % 8 == 0)
                c->v[i].number = (int64_t)w[0];
            continue;
        }
        if (strcmp(c->v[i].type_name, "method_descriptor") == 0) {
            if (pyf__vread(c, addr + c->vl.method_descr_method, w, 8) == PYF_OK && w[0] != 0 &&
                w[0] % 8 == 0 && pyf__vread(c, w[0], w + 1, 8) == PYF_OK) {
                const char *name = pyf__vcstr(c, w[1], 128);
                if (name != NULL)
                    pyf__vdata(c, i, name, strlen(name));
            }
        } else if (strcmp(c->v[i].type_name, "_thread.RLock") == 0 &&
                   pyf__vread(c, addr + c->vl.rlock_owner, w, 8) == PYF_OK &&
                   pyf__vread(c, addr + c->vl.rlock_count, w + 1, 8) == PYF_OK) {
            c->v[i].number = (int64_t)w[0];
            c->v[i].length = w[1];
        }
    }
}

/* The instruction a frame is at, as far as it can be known. */
typedef struct instr_at {
    bool known;
    bool on_cache;           /* the pointer is on one of its inline caches */
    uint8_t unit[2];         /* its first code unit: opcode, oparg */
} instr_at;

#define BYTECODE_MAX (1u << 17) /* code units walked to find an instruction */

/* The instruction of the frame running code whose instruction pointer is
 * ip.  3.13+ (ip_kind PYF__IP_CURRENT): the one at ip.  3.11, 3.12:
 * prev_instr is the last code unit run, an inline cache entry after a
 * call the eval loop made itself (the caches skipped first), so the
 * bytecode is walked from its start by each opcode's caches
 * (opcode_caches) to the instruction that unit belongs to: unknown before
 * the frame's first instruction, outside the code, past an opcode whose
 * caches the version hides (3.12's instrumented lines) or unreadable. */
static instr_at frame_instr(pyf__vctx *c, uint64_t code, uint64_t ip)
{
    const pyf__offsets *o = c->o;
    instr_at in = {0};
    if (ip == 0)
        return in;
    if (o->ip_kind == PYF__IP_CURRENT) {
        in.known = pyf__vread(c, ip, in.unit, 2) == PYF_OK;
        return in;
    }
    uint64_t base = code + o->code.co_code_adaptive, units = 0;
    if (ip < base || (ip - base) % 2 != 0 || (ip - base) / 2 >= BYTECODE_MAX ||
        pyf__vread(c, code + o->bytes.ob_size, &units, 8) != PYF_OK ||
        (ip - base) / 2 >= units)
        return in;
    uint64_t idx = (ip - base) / 2;
    uint8_t *b = malloc((size_t)(idx + 1) * 2);
    if (b == NULL) {
        c->nomem = true;
        return in;
    }
    if (pyf__vread(c, base, b, (size_t)(idx + 1) * 2) == PYF_OK)
        for (uint64_t at = 0; at <= idx;) {
            unsigned caches = o->opcode_caches[b[2 * at]];
            if (caches == PYF__CACHES_UNKNOWN)
                break;
            if (idx <= at + caches) {
                in.known = true;
                in.on_cache = idx > at;
                memcpy(in.unit, b + 2 * at, 2);
                break;
            }
            at += 1 + caches;
        }
    free(b);
    return in;
}

/* Whether a frame whose stack pointer the version leaves stale while it
 * runs (PYF__STACK_STALE, 3.11) saved it: suspended in a call the eval
 * loop made (prev_instr on that call's inline caches), or a generator's
 * frame suspended at a yield. */
static bool stack_saved(pyf__vctx *c, const uint8_t *f, uint64_t frame_addr,
                        const instr_at *in)
{
    const pyf__offsets *o = c->o;
    if (in->known && in->on_cache)
        return true;
    int8_t state;
    return (int8_t)f[o->frame.owner] == o->owner_generator && o->gen_suspended != INT32_MIN &&
           o->gen.gi_iframe != PYF__ABSENT && o->gen.gi_frame_state < o->gen.gi_iframe &&
           pyf__vread(c, frame_addr - o->gen.gi_iframe + o->gen.gi_frame_state, &state, 1) ==
               PYF_OK &&
           state == o->gen_suspended;
}

/* Where the frame's stack ends, within [base, base + co_stacksize slots];
 * NULL, or why it cannot be known. */
static const char *stack_top(pyf__vctx *c, const uint8_t *f, uint64_t frame_addr,
                             uint64_t code, uint64_t base, const instr_at *in, uint64_t *sp,
                             bool *unsaved, char *why, size_t len)
{
    const pyf__offsets *o = c->o;
    int32_t size;
    *unsaved = false;
    if (o->frame_model == PYF__FRAMES_HEAP)
        return "value stack not read: CPython 3.8-3.10 keep none while a frame runs (a "
               "suspended generator's frame, which has one, is not read either)";
    if (pyf__vread(c, code + c->vl.code_stacksize, &size, 4) != PYF_OK)
        return "unreadable co_stacksize";
    int got = pyf__frame_sp(o, f, frame_addr, sp);
    if (got == PYF__STACK_NONE)
        return "no stack pointer in this version's frame";
    if (got == PYF__STACK_STALE && !stack_saved(c, f, frame_addr, in))
        got = PYF__STACK_RUNNING;
    if (got == PYF__STACK_RUNNING) {
        if ((c->req.flags & PYF_VALUES_STACK_UNSAVED) && size >= 0 &&
            size <= (int32_t)LOCALS_MAX) {
            *sp = base + (uint64_t)size * 8; /* every slot, flagged */
            *unsaved = true;
            return NULL;
        }
        return "stack pointer not saved: the frame runs (CPython 3.11-3.13 save it only "
               "while the frame calls a Python function)";
    }
    if (size < 0 || size > (int32_t)LOCALS_MAX || *sp < base || (*sp - base) % 8 != 0 ||
        (*sp - base) / 8 > (uint64_t)size) {
        snprintf(why, len, "stack pointer 0x%llx outside the frame's stack (0x%llx, "
                 "co_stacksize %d)", (unsigned long long)*sp, (unsigned long long)base, size);
        return why;
    }
    return NULL;
}

/* The slot (from base) of what a generator or coroutine frame suspended in
 * an await awaits (offsets.c: gen_yield_from, await_back), else UINT32_MAX. */
static uint32_t awaited_slot(pyf__vctx *c, const uint8_t *f, uint64_t frame_addr,
                             uint64_t base, uint64_t sp)
{
    const pyf__offsets *o = c->o;
    int8_t state;
    if ((int8_t)f[o->frame.owner] != o->owner_generator || o->gen.gi_iframe == PYF__ABSENT ||
        o->gen.gi_frame_state == PYF__ABSENT || frame_addr < o->gen.gi_iframe ||
        sp < base + o->await_back ||
        pyf__vread(c, frame_addr - o->gen.gi_iframe + o->gen.gi_frame_state, &state, 1) !=
            PYF_OK || state != o->gen_yield_from)
        return UINT32_MAX;
    return (uint32_t)((sp - o->await_back - base) / 8);
}

/* The value stack of a frame of nlocalsplus locals appended to *locals (*n
 * entries, grown), each entry decoded STACK_DEPTH deep (what a suspended
 * await awaits flagged PYF_LOCAL_AWAITED); op: the first code unit of the
 * instruction the frame is at (frame_instr). */
static int frame_stack(pyf__vctx *c, const uint8_t *f, uint64_t frame_addr, uint64_t code,
                       uint64_t ip, uint32_t nlocalsplus, pyf_local **locals, uint32_t *n,
                       uint32_t op[2])
{
    uint64_t base = frame_addr + localsplus_at(c->o) + (uint64_t)nlocalsplus * 8, sp = 0;
    char buf[160];
    bool unsaved;
    instr_at in = frame_instr(c, code, ip);
    if (in.known) {
        op[0] = in.unit[0];
        op[1] = in.unit[1];
    }
    const char *why = stack_top(c, f, frame_addr, code, base, &in, &sp, &unsaved, buf,
                                sizeof buf);
    uint32_t count = why == NULL ? (uint32_t)((sp - base) / 8) : 1;
    uint64_t *slots = malloc((size_t)count * 8 + 8);
    pyf_local *grown = realloc(*locals, ((size_t)*n + count + 1) * sizeof **locals);
    if (grown != NULL)
        *locals = grown;
    if (slots == NULL || grown == NULL) {
        free(slots);
        return pyf__fail(c->t, PYF_ENOMEM, "out of memory");
    }
    if (why == NULL && count != 0 && pyf__vread(c, base, slots, (size_t)count * 8) != PYF_OK)
        why = "unreadable stack";
    pyf_values_request keep = c->req;
    c->req.flags &= ~PYF_VALUES_ATTRS;
    c->req.max_depth = keep.max_depth < STACK_DEPTH ? keep.max_depth : STACK_DEPTH;
    c->req.max_items = keep.max_items < STACK_ITEMS ? keep.max_items : STACK_ITEMS;
    c->req.max_string = keep.max_string < STACK_STRING ? keep.max_string : STACK_STRING;
    uint32_t from = c->n;
    uint32_t awaited = why == NULL && !unsaved ? awaited_slot(c, f, frame_addr, base, sp)
                                               : UINT32_MAX;
    uint8_t plain = 0; /* no CO_FAST_* kind: an object, never a cell's contents */
    code_locals entry = {.n = 1, .kinds = &plain};
    for (uint32_t i = 0; i < (why == NULL ? count : 1); i++) {
        pyf_local *l = &(*locals)[*n + i];
        *l = (pyf_local){.name = "", .kind = PYF_LOCAL_STACK, .value = PYF_NO_VALUE};
        if (why != NULL) {
            l->flags = PYF_LOCAL_NO_STACK;
            l->value = pyf__vnodes(c, 1);
            if (l->value != PYF_NO_VALUE)
                pyf__vbad(c, l->value, 0, "%s", why);
        } else {
            local_value(c, &entry, 0, slots[i], l);
            if (unsaved)
                l->flags |= PYF_LOCAL_UNSAVED;
            if (i == awaited)
                l->flags |= PYF_LOCAL_AWAITED;
        }
    }
    *n += why == NULL ? count : 1;
    stack_extras(c, from);
    c->req = keep;
    free(slots);
    return PYF_OK;
}

/* PYF_VALUES_STACK_ONLY: the stack of a frame running code, its locals
 * only counted (co_localsplusnames' size). */
static int stack_only(pyf__vctx *c, const uint8_t *f, uint64_t frame_addr, uint64_t code,
                      uint64_t ip, pyf_values **out)
{
    const pyf__offsets *o = c->o;
    uint64_t names = 0, size = 0;
    int rc = PYF_OK;
    if (o->frame_model == PYF__FRAMES_DATASTACK) /* else no stack to find: frame_stack */
        rc = pyf__read(c->t, code + o->code.localsplusnames, &names, 8, "code object");
    if (rc == PYF_OK && names != 0)
        rc = pyf__read(c->t, names + o->tuple.ob_size, &size, 8, "code object's local names");
    if (rc == PYF_OK && size > LOCALS_MAX)
        rc = pyf__fail(c->t, PYF_ECORRUPT, "code object at 0x%llx has %llu locals",
                       (unsigned long long)code, (unsigned long long)size);
    c->frame_reads = false;
    pyf_local *locals = NULL;
    uint32_t n = 0, op[2] = {PYF_NO_VALUE, PYF_NO_VALUE};
    if (rc == PYF_OK)
        rc = frame_stack(c, f, frame_addr, code, ip, (uint32_t)size, &locals, &n, op);
    if (rc == PYF_OK)
        rc = ctx_end(c, locals, n, out);
    if (rc == PYF_OK) {
        (*out)->code_addr = code;
        (*out)->globals_addr = pyf__ld64(f + c->vl.frame_globals);
        (*out)->opcode = op[0];
        (*out)->oparg = op[1];
    }
    free(locals);
    return rc;
}

static int frame_locals(pyf__vctx *c, uint64_t frame_addr, pyf_values **out)
{
    const pyf__offsets *o = c->o;
    pyf_target *t = c->t;
    uint8_t f[PYF__OBJECT_READ_MAX];
    if (frame_addr == 0 || frame_addr % 8 != 0)
        return pyf__fail(t, PYF_EINVAL, "no frame at 0x%llx", (unsigned long long)frame_addr);
    pyf__vprefetch(c, frame_addr, NULL, 0);
    bool heap = o->frame_model == PYF__FRAMES_HEAP;
    int rc = frame_read(c, frame_addr, f, (size_t)pyf__frame_size(o),
                        heap ? "frame object" : "interpreter frame");
    if (rc != PYF_OK)
        return rc;
    c->frame_reads = true; /* until the names are read: outside the budget */
    pyf__iframe fr = {0};  /* the walk's decoder: f_executable's tag bits masked */
    if (heap)
        fr.exe = pyf__ld64(f + o->heapframe.code); /* no instruction pointer */
    else
        pyf__iframe_decode(o, f, frame_addr, &fr);
    uint64_t code = fr.exe;
    uint64_t localsplus = frame_addr + localsplus_at(o);
    uint64_t globals = pyf__ld64(f + c->vl.frame_globals);
    uint8_t hdr[64];
    const pyf__vtype *ty = NULL;
    if (code != 0 && code % 8 == 0 &&
        pyf__vread(c, code, hdr, (size_t)o->pyobject.size) == PYF_OK)
        ty = pyf__vtype_get(c, pyf__ld64(hdr + o->pyobject.ob_type));
    if (ty == NULL || ty->kind != PYF_VALUE_CODE)
        return pyf__fail(t, PYF_ECORRUPT, "the frame at 0x%llx runs no code object "
                         "(executable 0x%llx)", (unsigned long long)frame_addr,
                         (unsigned long long)code);
    if ((c->req.flags & (PYF_VALUES_STACK | PYF_VALUES_STACK_ONLY)) ==
        (PYF_VALUES_STACK | PYF_VALUES_STACK_ONLY))
        return stack_only(c, f, frame_addr, code, fr.ip, out);
    code_locals cl = {0};
    pyf_local *locals = NULL;
    uint64_t *slots = NULL;
    rc = read_code_locals(c, code, &cl);
    if (rc == PYF_OK) {
        locals = calloc((size_t)cl.n + 1, sizeof *locals);
        slots = malloc((size_t)cl.nslots * 8 + 8);
        if (locals == NULL || slots == NULL)
            rc = pyf__fail(t, PYF_ENOMEM, "out of memory");
    }
    if (rc == PYF_OK) {
        rc = frame_read(c, localsplus, slots, (size_t)cl.nslots * 8, "frame's locals");
        c->bytes += (uint64_t)cl.nslots * 8;
    }
    /* the names first, outside the budget (the values spend it) */
    for (uint32_t i = 0; rc == PYF_OK && i < cl.n; i++) {
        size_t nb;
        uint64_t chars;
        bool cut;
        const char *name = pyf__vstr(c, cl.names[i], PYF__VNAME_MAX_CHARS, &nb, &chars, &cut);
        locals[i].name = name != NULL ? name : "?";
        local_kind(&cl, i, &locals[i]);
    }
    c->frame_reads = false;
    for (uint32_t i = 0; rc == PYF_OK && i < cl.n; i++)
        local_value(c, &cl, i, slots[cl.slot != NULL ? cl.slot[i] : i], &locals[i]);
    uint32_t nl = cl.n, op[2] = {PYF_NO_VALUE, PYF_NO_VALUE};
    if (rc == PYF_OK && (c->req.flags & PYF_VALUES_STACK))
        rc = frame_stack(c, f, frame_addr, code, fr.ip, cl.nslots, &locals, &nl, op);
    pyf__vprefetch_learn(c);
    if (rc == PYF_OK) {
        rc = ctx_end(c, locals, nl, out);
        if (rc == PYF_OK) {
            (*out)->code_addr = code;
            (*out)->globals_addr = globals;
            (*out)->opcode = op[0];
            (*out)->oparg = op[1];
        }
    }
    free(cl.names);
    free(cl.kinds);
    free(cl.slot);
    free(locals);
    free(slots);
    return rc;
}

int pyf_frame_locals(pyf_target *t, uint64_t frame_addr, const pyf_values_request *req,
                     pyf_values **out)
{
    return values_call(t, frame_addr, req, out, frame_locals);
}

/* ---- the version of a runtime that does not say it -------------------------- */

/* A built-in table was chosen by the runtime's shape (offsets.c): the main
 * interpreter and its first thread must link back to each other, its sys
 * module's dict must be a dict, and its sys.hexversion (an int) names the
 * exact version, which must be of the table's minor and a final release. */
int pyf__offsets_version_read(pyf_target *t)
{
    pyf__offsets *o = &t->off;
    uint32_t minor = o->minor;
    uint64_t interp = 0, tstate = 0, sysdict = 0, link[3];
    int rc = pyf__read(t, t->runtime_addr + o->runtime.interpreters_main, &interp, 8,
                       "_PyRuntime.interpreters.main");
    if (rc == PYF_OK && interp % 8 == 0)
        rc = pyf__read(t, interp + o->interp.threads_head, &tstate, 8,
                       "interpreter state");
    if (rc == PYF_OK && tstate != 0 && tstate % 8 == 0)
        rc = pyf__read(t, tstate, link, sizeof link, "thread state");
    if (rc != PYF_OK)
        return rc;
    if (interp == 0 || interp % 8 != 0 || tstate % 8 != 0 ||
        (tstate != 0 && (link[0] != 0 || pyf__ld64((const uint8_t *)link + o->tstate.interp) !=
                                             interp)))
        return pyf__fail(t, PYF_ENOTPY, "_PyRuntime at 0x%llx has the shape of CPython "
                         "3.%u's, but its main interpreter and first thread do not link "
                         "back to each other: not a CPython 3.%u runtime",
                         (unsigned long long)t->runtime_addr, minor, minor);
    rc = pyf__read(t, interp + o->interp.sysdict, &sysdict, 8, "interpreter state");
    if (rc != PYF_OK)
        return rc;

    pyf__vctx c;
    rc = pyf__vctx_begin(&c, t, NULL);
    if (rc != PYF_OK)
        return rc;
    uint64_t hex = 0;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    size_t len = pyf__int_head_len(o) + 8;
    uint64_t obj = pyf__dict_lookup(&c, sysdict, "hexversion");
    bool found = obj != 0 && len <= sizeof b && pyf__vread(&c, obj, b, len) == PYF_OK &&
                 pyf__vtype_get(&c, pyf__ld64(b + o->pyobject.ob_type))->kind ==
                     PYF_VALUE_INT &&
                 pyf__int_small(o, b, len, 2, &hex);
    pyf__vctx_end(&c);
    if (!found)
        return pyf__fail(t, PYF_EVERSION, "_PyRuntime at 0x%llx has the shape of CPython "
                         "3.%u's, but its version cannot be read (sys.hexversion of its "
                         "main interpreter: %s): the process may be starting up or "
                         "finalizing", (unsigned long long)t->runtime_addr, minor,
                         sysdict == 0 ? "no sys module yet" : "not found");
    char vtext[40];
    pyf__version_text(hex, vtext, sizeof vtext);
    if ((hex >> 24) != 3 || ((hex >> 16) & 0xff) != minor)
        return pyf__fail(t, PYF_ENOTPY, "_PyRuntime at 0x%llx has the shape of CPython "
                         "3.%u's, but its sys.hexversion says %s", (unsigned long long)t->runtime_addr,
                         minor, vtext);
    uint64_t level = (hex >> 4) & 0xf;
    o->hexversion = hex;
    o->micro = (hex >> 8) & 0xff;
    o->level = (uint32_t)level;
    o->serial = hex & 0xf;
    o->version_pending = false;
    if (level != 0xF)
        return pyf__fail(t, PYF_EVERSION, "unsupported CPython %s (pre-releases of 3.%u "
                         "are laid out otherwise than its final releases; use a final "
                         "release)", vtext, minor);
    return PYF_OK;
}
