/*
 * thread_facts.c - what a snapshot knows of each thread besides its frames
 * (PYF_SNAP_THREAD_FACTS, pyf_snapshot_thread_facts): the name of its
 * threading.Thread, its GIL state and the exception it raises or handles.
 *
 * Read once per snapshot, after the walk, with the value decoder's context
 * (values.c, objects.c: types, dicts, instance attributes, strs, a value
 * tree of the exception's arguments).  Per interpreter: sys.modules ->
 * "threading" -> its globals -> "_active" (where they were last time is
 * remembered in the target and checked again, else searched: the keys'
 * headers read in batches), the _active dict read once, its keys in one
 * batch; the GIL's locked flag and holder in one batch.  For every thread
 * at once: the thread states' exception fields (one batch), the names
 * (four batches: names_batched).  Then only what a thread has, one by one:
 * a name off the common path, its exception, its traceback.
 * Every loop is bounded, every chain cycle-checked; what cannot be read is
 * a flag of the fact (pyframes.h, "Thread facts"), never a guess and never
 * a failure of the snapshot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "code.h"
#include "containers.h"
#include "errors.h"
#include "linetable.h"
#include "objhead.h"
#include "offsets.h"
#include "reads.h"
#include "target.h"
#include "thread_facts.h"
#include "value_layout.h"
#include "values.h"

#define MODULES_MAX 8192u   /* sys.modules entries searched */
#define GLOBALS_MAX 4096u   /* threading's globals searched */
#define ACTIVE_MAX 8192u    /* threading._active entries read */
#define ATTRS_MAX 256u      /* a Thread's attributes searched */
#define EXC_CHAIN_MAX 256u  /* exc_info items walked */
#define TB_MAX 4096u        /* traceback entries followed */
#define NAME_CHARS 256u     /* characters of a thread's name */
#define BATCH 256u          /* ranges per reader call */
#define KEY_NAME_MAX 16u    /* the longest key searched ("threading") */
#define FACTS_BYTES (16ull << 20) /* what one snapshot's facts read at most */

typedef struct fctx {
    pyf__vctx v;
    pyf_target *t;
    const pyf__offsets *o;
    pyf__arena *arena;  /* the snapshot's: every string handed out */
    bool values_ok;     /* the value layout passed its checks */
    bool facts_ok;      /* and the facts' offsets theirs */
    bool gil_ok;        /* and the GIL's */
    bool cached;        /* a code object came from the target's cache */
} fctx;

/* What one interpreter says of its threads. */
typedef struct interp_facts {
    int names;          /* 1: _active read; 0: no threading (no names); -1: unreadable */
    uint64_t *ids;      /* [n] _active's keys (0: no int) */
    uint64_t *objs;     /* [n] its Thread objects */
    uint32_t n;
    int gil;            /* -1 unknown, 0 no GIL (free-threaded), 1 a GIL */
    bool locked;
    uint64_t holder;
} interp_facts;

static char *dup_n(fctx *f, const char *s, size_t n)
{
    char *d = pyf__arena_alloc(f->arena, n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* Several ranges in one reader call (BATCH at a time), within the facts'
 * byte budget; status[i] each one's result. */
static void read_batch(fctx *f, pyf_iovec *iov, size_t n, int *status)
{
    for (size_t at = 0; at < n; at += BATCH) {
        size_t m = n - at < BATCH ? n - at : BATCH;
        uint64_t bytes = 0;
        for (size_t i = 0; i < m; i++)
            bytes += iov[at + i].len;
        if (bytes > f->v.req.max_bytes || f->v.bytes > f->v.req.max_bytes - bytes) {
            for (size_t i = 0; i < m; i++)
                status[at + i] = PYF__EBUDGET;
            continue;
        }
        f->v.bytes += bytes;
        pyf__readv(f->t, iov + at, m, status + at);
    }
}

static bool plausible(uint64_t addr)
{
    return addr >= 4096 && addr % 8 == 0;
}

/* The type of the object at addr (its header read), or NULL. */
static const pyf__vtype *type_of(fctx *f, uint64_t addr)
{
    uint8_t hdr[64];
    if (!plausible(addr) || pyf__vread(&f->v, addr, hdr, (size_t)f->o->pyobject.size) != PYF_OK)
        return NULL;
    if (!f->o->free_threaded && pyf__ld32(hdr) == 0)
        return NULL; /* freed: a default build's reference count */
    const pyf__vtype *ty = pyf__vtype_get(&f->v, pyf__ld64(hdr + f->o->pyobject.ob_type));
    return ty != NULL && ty->bad == NULL ? ty : NULL;
}

/* ---- dicts with str keys ---------------------------------------------------- */

/* The index of the first key of kv[2n] that is the str name (ASCII), -1
 * when none is, -2 when the keys could not be read.  Every key's header
 * and first characters are read in batches. */
static int64_t find_str_key(fctx *f, const uint64_t *kv, uint64_t n, const char *name)
{
    const pyf__offsets *o = f->o;
    size_t want = strlen(name);
    size_t hlen = (size_t)o->unicode.asciiobject_size + want;
    uint8_t *buf = malloc(BATCH * (hlen + 8));
    pyf_iovec *iov = malloc(BATCH * sizeof *iov);
    int status[BATCH];
    int64_t found = -1;
    bool unread = false;
    if (buf == NULL || iov == NULL || want > KEY_NAME_MAX) {
        f->v.nomem = buf == NULL || iov == NULL;
        found = -2;
    }
    for (uint64_t at = 0; found == -1 && at < n; at += BATCH) {
        uint64_t m = n - at < BATCH ? n - at : BATCH;
        size_t k = 0;
        uint64_t idx[BATCH];
        for (uint64_t i = 0; i < m; i++) {
            uint64_t key = kv[2 * (at + i)];
            if (!plausible(key))
                continue;
            iov[k] = (pyf_iovec){key, buf + k * (hlen + 8), hlen};
            idx[k++] = at + i;
        }
        read_batch(f, iov, k, status);
        for (size_t i = 0; i < k && found == -1; i++) {
            const uint8_t *h = iov[i].dst;
            pyf__str_info si;
            if (status[i] != PYF_OK) {
                unread = true;
                continue;
            }
            if (pyf__str_header(o, h, &si) != PYF_OK || !si.ascii || si.length != want ||
                si.data_off != o->unicode.asciiobject_size ||
                memcmp(h + si.data_off, name, want) != 0)
                continue;
            const pyf__vtype *ty = pyf__vtype_get(&f->v, pyf__ld64(h + o->pyobject.ob_type));
            if (ty != NULL && ty->kind == PYF_VALUE_STR)
                found = (int64_t)idx[i];
        }
    }
    free(buf);
    free(iov);
    return found == -1 && unread ? -2 : found;
}

/* Whether the slot remembered still holds: the same keys object and the
 * entry still the same key and value. */
static bool slot_holds(fctx *f, const pyf__dict_slot *m, uint64_t dict)
{
    const pyf__offsets *o = f->o;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    uint64_t kvw[2];
    if (m->dict == 0 || m->dict != dict ||
        pyf__vread(&f->v, dict, b, (size_t)o->dict.size) != PYF_OK)
        return false;
    const pyf__vtype *ty = pyf__vtype_get(&f->v, pyf__ld64(b + o->pyobject.ob_type));
    return ty != NULL && ty->kind == PYF_VALUE_DICT && pyf__ld64(b + o->dict.ma_keys) == m->keys &&
           pyf__ld64(b + o->dict.ma_values) == 0 &&
           pyf__vread(&f->v, m->entry, kvw, sizeof kvw) == PYF_OK && kvw[0] == m->key &&
           kvw[1] == m->value;
}

/* The value of the str key name in the dict: 1 (*value), 0 absent, -1
 * unreadable.  memo: where it was last time (checked), updated: where a
 * combined table (sys.modules, a module's globals) holds it. */
static int lookup(fctx *f, uint64_t dict, const char *name, uint64_t max, pyf__dict_slot *memo,
                  uint64_t *value)
{
    const pyf__offsets *o = f->o;
    if (slot_holds(f, memo, dict)) {
        *value = memo->value;
        return 1;
    }
    memset(memo, 0, sizeof *memo);
    uint8_t b[PYF__VALUE_HEAD_MAX];
    const pyf__vtype *ty = NULL;
    if (plausible(dict) && pyf__vread(&f->v, dict, b, (size_t)o->dict.size) == PYF_OK)
        ty = pyf__vtype_get(&f->v, pyf__ld64(b + o->pyobject.ob_type));
    if (ty == NULL || ty->kind != PYF_VALUE_DICT)
        return -1;
    uint64_t keys = pyf__ld64(b + o->dict.ma_keys), values = pyf__ld64(b + o->dict.ma_values);
    uint64_t *kv = malloc((size_t)max * 16), *where = malloc((size_t)max * 8);
    int rc = -1;
    const char *why;
    bool budget;
    int64_t n = kv != NULL && where != NULL
                    ? pyf__dict_pairs(&f->v, keys, values, max, kv, where, &why, &budget)
                    : -1;
    f->v.nomem |= kv == NULL || where == NULL;
    int64_t i = n >= 0 ? find_str_key(f, kv, (uint64_t)n, name) : -2;
    if (i != -2)
        rc = i >= 0;
    if (i >= 0) {
        *value = kv[2 * i + 1];
        if (where[i] != 0)
            *memo = (pyf__dict_slot){dict, keys, where[i], kv[2 * i], kv[2 * i + 1]};
    }
    free(kv);
    free(where);
    return rc;
}

/* ---- names ------------------------------------------------------------------ */

/* threading._active of the interpreter: its (ident, Thread) pairs. */
static void read_active(fctx *f, uint64_t interp, interp_facts *in)
{
    const pyf__offsets *o = f->o;
    pyf__facts_memo *memo = &f->t->facts_memo;
    uint64_t modules = 0, module = 0, globals = 0, active = 0;
    in->names = -1;
    if (memo->interp != interp) {
        memset(memo, 0, sizeof *memo);
        memo->interp = interp;
    }
    if (pyf__vread(&f->v, interp + o->interp.imports_modules, &modules, 8) != PYF_OK)
        return;
    if (modules == 0) { /* sys.modules not made yet, or gone */
        in->names = 0;
        return;
    }
    int rc = lookup(f, modules, "threading", MODULES_MAX, &memo->module, &module);
    if (rc <= 0) {
        in->names = rc;
        return;
    }
    const pyf__vtype *ty = type_of(f, module);
    if (ty == NULL || ty->kind != PYF_VALUE_MODULE ||
        pyf__vread(&f->v, module + f->v.vl.module_dict, &globals, 8) != PYF_OK)
        return;
    rc = lookup(f, globals, "_active", GLOBALS_MAX, &memo->active, &active);
    if (rc <= 0) { /* threading being imported has no _active yet */
        in->names = rc;
        return;
    }
    uint64_t *kv = malloc((size_t)ACTIVE_MAX * 16);
    int64_t n = kv != NULL ? pyf__dict_items(&f->v, active, ACTIVE_MAX, kv) : -1;
    in->ids = malloc((size_t)(n > 0 ? n : 1) * 8);
    in->objs = malloc((size_t)(n > 0 ? n : 1) * 8);
    pyf_iovec *iov = malloc((size_t)(n > 0 ? n : 1) * sizeof *iov);
    int *status = malloc((size_t)(n > 0 ? n : 1) * sizeof *status);
    size_t hlen = (size_t)o->lng.ob_digit + 12;
    uint8_t *heads = malloc((size_t)(n > 0 ? n : 1) * (hlen + 4));
    if (n < 0 || in->ids == NULL || in->objs == NULL || iov == NULL || status == NULL ||
        heads == NULL) {
        f->v.nomem |= kv == NULL || heads == NULL;
        goto out;
    }
    /* the keys, ints, in one batch: ident = their 30-bit digits */
    size_t k = 0;
    for (int64_t i = 0; i < n; i++)
        if (plausible(kv[2 * i]))
            iov[k++] = (pyf_iovec){kv[2 * i], heads + i * (hlen + 4), hlen};
    read_batch(f, iov, k, status);
    k = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *h = heads + i * (hlen + 4);
        uint64_t id = 0;
        bool read = plausible(kv[2 * i]) && status[k++] == PYF_OK;
        if (read) {
            const pyf__vtype *kt = pyf__vtype_get(&f->v, pyf__ld64(h + o->pyobject.ob_type));
            /* a pthread_t: at most three digits, within 64 bits */
            if (kt == NULL || kt->kind != PYF_VALUE_INT || !pyf__int_small(o, h, hlen, 3, &id))
                id = 0;
        }
        in->ids[in->n] = id;
        in->objs[in->n++] = kv[2 * i + 1];
    }
    in->names = 1;
out:
    free(kv);
    free(iov);
    free(status);
    free(heads);
}

/* The name of the Thread object at obj into tf. */
static void thread_name(fctx *f, uint64_t obj, pyf_thread_facts *tf)
{
    uint64_t kv[2 * ATTRS_MAX];
    const pyf__vtype *ty = type_of(f, obj);
    int64_t n = ty != NULL ? pyf__instance_items(&f->v, obj, ty, ATTRS_MAX, kv) : -1;
    int64_t i = n >= 0 ? find_str_key(f, kv, (uint64_t)n, "_name") : -2;
    if (i == -1)
        return; /* a Thread without _name: none */
    const pyf__vtype *nt = i >= 0 ? type_of(f, kv[2 * i + 1]) : NULL;
    if (nt != NULL && nt->kind != PYF_VALUE_STR)
        return; /* not a str: no name */
    size_t bytes = 0;
    uint64_t chars;
    bool cut;
    const char *s = nt != NULL ? pyf__vstr(&f->v, kv[2 * i + 1], NAME_CHARS, &bytes, &chars, &cut)
                               : NULL;
    if (s == NULL || (cut && !pyf__vstr_ends(&f->v, kv[2 * i + 1])) ||
        (tf->name = dup_n(f, s, bytes)) == NULL) {
        tf->flags |= PYF_FACT_NAME_UNREADABLE;
        return;
    }
    tf->flags |= PYF_FACT_NAME;
}

/* The common case of every thread at once: a Thread whose attributes are
 * the values of its managed dict not made yet (pyf__managed_dict: inline
 * on 3.13+, pointed at on 3.11 and 3.12) of a type whose shared keys hold
 * "_name" at a slot found once per type, and a compact str there.  Four
 * batches for every thread: the objects' headers and the words before
 * them, the values up to that slot, the strs' headers, their characters.  A thread that leaves
 * the common case anywhere is read the one-by-one way (thread_name). */
#define SLOT_MAX 64u        /* the highest "_name" slot read in a batch */
#define TYPES_SLOTS 8u      /* Thread types whose slot is remembered */

typedef struct name_job {
    uint32_t thread;        /* index into the snapshot's threads */
    uint64_t obj;           /* its Thread */
    uint64_t at;            /* what the next batch reads */
    uint32_t len;
    int64_t slot;
    uint64_t str;
    pyf__str_info si;
    bool slow;              /* left the common case */
    uint8_t buf[SLOT_MAX * 8 + 16];
} name_job;

/* The slot of name in the shared keys of a split table (the entry index:
 * the values' index), -1 when none or unreadable. */
static int64_t keys_slot(fctx *f, uint64_t keys, const char *name)
{
    uint64_t k[SLOT_MAX], kv[2 * SLOT_MAX];
    int64_t n = plausible(keys) ? pyf__dict_keys(&f->v, keys, SLOT_MAX, k) : -1;
    for (int64_t i = 0; i < n; i++) {
        kv[2 * i] = k[i];
        kv[2 * i + 1] = 0;
    }
    int64_t at = n > 0 ? find_str_key(f, kv, (uint64_t)n, name) : -1;
    return at >= 0 ? at : -1;
}

/* The "_name" slot of Thread type ty (remembered per call), -1 when none. */
static int64_t type_slot(fctx *f, const pyf__vtype *ty, uint64_t *types, int64_t *slots,
                         uint32_t *ntypes)
{
    for (uint32_t i = 0; i < *ntypes; i++)
        if (types[i] == ty->addr)
            return slots[i];
    int64_t slot = keys_slot(f, ty->cached_keys, "_name");
    if (*ntypes < TYPES_SLOTS) {
        types[*ntypes] = ty->addr;
        slots[(*ntypes)++] = slot;
    }
    return slot;
}

/* One batch: each job not yet slow reads [at, at+len) into its buf. */
static void job_batch(fctx *f, name_job *jobs, uint32_t n, pyf_iovec *iov, int *status)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!jobs[i].slow)
            iov[k++] = (pyf_iovec){jobs[i].at, jobs[i].buf, jobs[i].len};
    read_batch(f, iov, k, status);
    k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!jobs[i].slow && status[k++] != PYF_OK)
            jobs[i].slow = true;
}

static void names_batched(fctx *f, name_job *jobs, uint32_t n, pyf_thread_facts *tf)
{
    const pyf__offsets *o = f->o;
    const pyf__value_layout *vl = &f->v.vl;
    const uint64_t back = pyf__managed_back(&f->v), h = o->pyobject.size;
    uint64_t types[TYPES_SLOTS];
    int64_t slots[TYPES_SLOTS];
    uint32_t ntypes = 0;
    pyf_iovec *iov = malloc((size_t)n * sizeof *iov + 8);
    int *status = malloc((size_t)n * sizeof *status + 8);
    if (iov == NULL || status == NULL || back == 0 || back + h > sizeof jobs[0].buf ||
        o->unicode.compactunicodeobject_size > sizeof jobs[0].buf) {
        for (uint32_t i = 0; i < n; i++)
            jobs[i].slow = true;
        n = 0;
    }
    /* the objects: the words before them that say where their managed dict
     * is, then the header */
    for (uint32_t i = 0; i < n; i++) {
        jobs[i].at = jobs[i].obj - back;
        jobs[i].len = (uint32_t)(back + h);
        jobs[i].slow = !plausible(jobs[i].obj);
    }
    job_batch(f, jobs, n, iov, status);
    for (uint32_t i = 0; i < n; i++) {
        name_job *j = &jobs[i];
        if (j->slow)
            continue;
        const pyf__vtype *ty = pyf__vtype_get(&f->v, pyf__ld64(j->buf + back + o->pyobject.ob_type));
        uint64_t dict = 0, values = 0;
        if (ty != NULL && ty->bad == NULL && (ty->flags & PYF__TPFLAGS_MANAGED_DICT))
            pyf__managed_dict(&f->v, ty, j->obj, j->buf + back, &dict, &values);
        if (dict != 0 || !plausible(values) ||
            (!o->free_threaded && pyf__ld32(j->buf + back) == 0) ||
            (j->slot = type_slot(f, ty, types, slots, &ntypes)) < 0) {
            j->slow = true;
            continue;
        }
        j->at = values;
        j->len = (uint32_t)(vl->values_values + 8 * ((uint64_t)j->slot + 1));
    }
    /* the values up to the slot: the name's str */
    job_batch(f, jobs, n, iov, status);
    for (uint32_t i = 0; i < n; i++) {
        name_job *j = &jobs[i];
        if (j->slow)
            continue;
        j->str = pyf__values_slot(o, vl, j->buf, (uint64_t)j->slot);
        j->slow = !plausible(j->str);
        j->at = j->str;
        j->len = (uint32_t)o->unicode.compactunicodeobject_size;
    }
    /* the strs' headers, then their characters */
    job_batch(f, jobs, n, iov, status);
    for (uint32_t i = 0; i < n; i++) {
        name_job *j = &jobs[i];
        if (j->slow)
            continue;
        const pyf__vtype *st = pyf__vtype_get(&f->v, pyf__ld64(j->buf + o->pyobject.ob_type));
        if (st == NULL || st->kind != PYF_VALUE_STR || pyf__str_header(o, j->buf, &j->si) != PYF_OK ||
            j->si.length > NAME_CHARS || j->si.length * j->si.kind > sizeof j->buf ||
            (!o->free_threaded && pyf__ld32(j->buf) == 0)) {
            j->slow = true; /* a long name, no str, ...: read one by one */
            continue;
        }
        j->at = j->str + j->si.data_off;
        j->len = (uint32_t)(j->si.length * j->si.kind);
        if (j->len == 0)
            j->len = 1; /* "" reads a byte of its NUL */
    }
    job_batch(f, jobs, n, iov, status);
    for (uint32_t i = 0; i < n; i++) {
        name_job *j = &jobs[i];
        char *utf8 = NULL;
        size_t len = 0;
        bool cut = false;
        if (j->slow || pyf__str_utf8(&j->si, j->buf, j->si.length, NAME_CHARS * 4, true, &utf8,
                                     &len, &cut) != PYF_OK) {
            j->slow = true;
            free(utf8);
            continue;
        }
        pyf_thread_facts *x = &tf[j->thread];
        if ((x->name = dup_n(f, utf8, len)) != NULL)
            x->flags |= PYF_FACT_NAME;
        else
            j->slow = true;
        free(utf8);
    }
    free(iov);
    free(status);
}

/* ---- the GIL ------------------------------------------------------------------ */

/* Where the GIL of the interpreter at interp keeps its locked flag and
 * its last holder (gil_kind): the runtime's one GIL (3.11), or the one
 * the interpreter's ceval_gil points at (3.12+: a legacy subinterpreter
 * shares the main one's), read with read (one word); *enabled the GIL
 * struct's own (free-threaded builds).  False when unreadable. */
typedef int (*word_read)(pyf_target *t, uint64_t addr, void *dst, size_t len, void *arg);
static bool gil_at(pyf_target *t, uint64_t interp, word_read read, void *arg, uint64_t *locked,
                   uint64_t *holder, uint64_t *enabled)
{
    const pyf__offsets *o = &t->off;
    if (o->gil_kind == PYF__GIL_RUNTIME) {
        *locked = t->runtime_addr + o->runtime.gil_locked;
        *holder = t->runtime_addr + o->runtime.gil_holder;
        *enabled = 0;
        return true;
    }
    uint64_t g = o->interp.gil_runtime_state, gil = 0;
    if (read(t, interp + o->interp.ceval_gil, &gil, 8, arg) != PYF_OK)
        return false;
    if (!plausible(gil))
        gil = interp + g; /* its own */
    *locked = gil + (o->interp.gil_locked - g);
    *holder = gil + (o->interp.gil_holder - g);
    *enabled = gil + o->interp.gil_enabled; /* into the struct itself */
    return true;
}

static int facts_read(pyf_target *t, uint64_t addr, void *dst, size_t len, void *arg)
{
    (void)t;
    return pyf__vread(&((fctx *)arg)->v, addr, dst, len);
}

static void read_gil(fctx *f, uint64_t interp, interp_facts *in)
{
    const pyf__offsets *o = f->o;
    uint64_t holder = 0, at[3];
    int32_t locked = 0, enabled = 0;
    int status[3];
    in->gil = -1;
    if (!f->gil_ok || !gil_at(f->t, interp, facts_read, f, &at[0], &at[1], &at[2]))
        return;
    pyf_iovec iov[3] = {
        {at[0], &locked, 4},
        {at[1], &holder, 8},
        {at[2], &enabled, 4},
    };
    read_batch(f, iov, o->free_threaded ? 3 : 2, status);
    if (status[0] != PYF_OK || status[1] != PYF_OK || (o->free_threaded && status[2] != PYF_OK))
        return;
    if (o->free_threaded && enabled == 0) {
        in->gil = 0;
        return;
    }
    in->gil = 1;
    in->locked = locked != 0;
    in->holder = holder;
}

static void gil_facts(const fctx *f, const interp_facts *in, uint64_t tstate, const uint8_t *ts,
                      bool ts_ok, pyf_thread_facts *tf)
{
    const pyf__offsets *o = f->o;
    if (in->gil == 0) {
        tf->flags |= PYF_FACT_NO_GIL;
        return;
    }
    if (in->gil != 1)
        return;
    tf->flags |= PYF_FACT_GIL_KNOWN;
    bool holder = in->locked && in->holder == tstate;
    if (holder)
        tf->flags |= PYF_FACT_GIL_HOLDER;
    bool holds = holder;
    if (o->tstate.holds_gil != PYF__ABSENT) { /* 3.15: the thread's own word */
        if (!ts_ok) {
            tf->flags &= ~PYF_FACT_GIL_KNOWN;
            return;
        }
        holds = pyf__ld32(ts + o->tstate.holds_gil) != 0;
        tf->flags |= PYF_FACT_GIL_REQUEST_KNOWN;
        if (pyf__ld32(ts + o->tstate.gil_requested) != 0)
            tf->flags |= PYF_FACT_GIL_REQUESTED;
    }
    if (holds)
        tf->flags |= PYF_FACT_GIL_HOLDS;
}

static int quiet_read(pyf_target *t, uint64_t addr, void *dst, size_t len, void *arg)
{
    (void)arg;
    return pyf__read_quiet(t, addr, dst, len);
}

/* Which thread holds each interpreter's GIL, without the value decoder:
 * its locked and holder words in one range (within 256 bytes of each
 * other), at the GIL the interpreter's ceval_gil points to (3.12+: the
 * pointer read first), or in _PyRuntime for every interpreter (3.11's one
 * GIL); read during the walk's prefetch, so that from the second snapshot
 * on they come with the walk's one reader call. */
void pyf__thread_gil_mark(pyf_target *t, const pyf_interp *interps, uint32_t ninterps,
                          pyf_thread *threads, uint32_t nthreads)
{
    const pyf__offsets *o = &t->off;
    char why[PYF__ERRBUF];
    if (o->free_threaded || o->tstate.holds_gil != PYF__ABSENT ||
        pyf__offsets_check_gil(o, why, sizeof why) != PYF_OK)
        return; /* 3.15 has the thread's own word; free-threaded no one GIL */
    for (uint32_t i = 0; i < ninterps; i++) {
        uint64_t at[3];
        uint8_t words[256 + 8 + 8];
        if (!gil_at(t, interps[i].addr, quiet_read, NULL, &at[0], &at[1], &at[2]))
            continue;
        /* both words in one read (within 256 bytes of each other) */
        uint64_t lo = at[0] < at[1] ? at[0] : at[1], hi = at[0] < at[1] ? at[1] : at[0];
        if (hi - lo > 256 || pyf__read_quiet(t, lo, words, (size_t)(hi - lo) + 8) != PYF_OK)
            continue;
        bool locked = pyf__ld32(words + (at[0] - lo)) != 0;
        uint64_t holder = pyf__ld64(words + (at[1] - lo));
        const pyf_interp *pi = &interps[i];
        for (uint32_t k = 0; k < pi->nthreads && pi->first_thread + k < nthreads; k++) {
            pyf_thread *th = &threads[pi->first_thread + k];
            th->flags |= PYF_THREAD_GIL_KNOWN;
            if (locked && holder == th->tstate_addr)
                th->flags |= PYF_THREAD_HOLDS_GIL;
        }
    }
}

/* ---- tracebacks ------------------------------------------------------------------- */

/* The innermost entry of the traceback at tb: its file and line. */
static void traceback_facts(fctx *f, uint64_t tb, pyf_thread_facts *tf)
{
    const pyf__offsets *o = f->o;
    const pyf__value_layout *vl = &f->v.vl;
    uint8_t b[PYF__VALUE_HEAD_MAX];
    size_t len = (size_t)vl->tb_lineno + 4;
    pyf__addrset seen = {0};
    uint64_t last = 0, type = 0;
    bool ok = true;
    for (uint32_t k = 0; k < TB_MAX && tb != 0; k++) {
        bool dup = false;
        if (!plausible(tb) || len > sizeof b || pyf__vread(&f->v, tb, b, len) != PYF_OK ||
            !pyf__addrset_add(&seen, tb, &dup) || dup) {
            ok = false;
            break;
        }
        uint64_t ty = pyf__ld64(b + o->pyobject.ob_type);
        if (k == 0) {
            const pyf__vtype *vt = pyf__vtype_get(&f->v, ty);
            if (vt == NULL || vt->bad != NULL || strcmp(vt->name, "traceback") != 0) {
                ok = false;
                break;
            }
            type = ty;
        } else if (ty != type) {
            ok = false;
            break;
        }
        last = tb;
        tb = pyf__ld64(b + vl->tb_next);
    }
    pyf__addrset_free(&seen);
    if (!ok || last == 0 || pyf__vread(&f->v, last, b, len) != PYF_OK)
        return;
    uint64_t frame = pyf__ld64(b + vl->tb_frame), iframe = 0, exe = 0;
    int32_t lasti = (int32_t)pyf__ld32(b + vl->tb_lasti);
    int32_t lineno = (int32_t)pyf__ld32(b + vl->tb_lineno);
    if (!plausible(frame))
        return;
    if (o->frame_model == PYF__FRAMES_HEAP) {
        /* 3.8-3.10: the frame object names its code */
        if (pyf__vread(&f->v, frame + o->heapframe.code, &exe, 8) != PYF_OK)
            return;
    } else if (pyf__vread(&f->v, frame + vl->frameobj_f_frame, &iframe, 8) != PYF_OK ||
               !plausible(iframe) ||
               pyf__vread(&f->v, iframe + o->frame.executable, &exe, 8) != PYF_OK) {
        return;
    }
    int soft = PYF_OK;
    f->cached = true;
    const pyf__code *code = pyf__code_get(f->t, exe & o->tag_mask, 0, &soft);
    if (code == NULL || code->filename == NULL)
        return;
    tf->exc_file = pyf__arena_dup(f->arena, code->filename);
    pyf__location loc;
    if (lineno >= 0)
        tf->exc_line = lineno;
    else if (lasti >= 0 && code->linetable != NULL &&
             pyf__linetable_lookup(code->line_kind, code->linetable, code->linetable_len,
                                   code->firstlineno, lasti / 2, &loc))
        tf->exc_line = loc.line;
}

/* ---- exceptions: their value trees ---------------------------------------------- */

/* Builtins whose __str__ words more than their arguments. */
static bool own_str(const char *name)
{
    static const char *const names[] = {
        "SyntaxError", "IndentationError", "TabError", "_IncompleteInputError",
        "UnicodeEncodeError", "UnicodeDecodeError", "UnicodeTranslateError",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

/* Whether str() of an exception of type ty may say otherwise than what
 * its tree gives (BaseException's, KeyError's or OSError's): a builtin
 * with a __str__ of its own, or a class whose dict defines one. */
static bool worded_otherwise(fctx *f, const pyf__vtype *ty)
{
    if (!(ty->flags & PYF__TPFLAGS_HEAPTYPE))
        return own_str(ty->name);
    return ty->dict != 0 && pyf__dict_lookup(&f->v, ty->dict, "__str__") != 0;
}

/* The object at addr decoded into a tree of its own after every node
 * there is: its node's index, PYF_NO_VALUE when out of memory. */
static uint32_t tree_of(fctx *f, uint64_t addr)
{
    uint32_t i = pyf__vnodes(&f->v, 1);
    if (i != PYF_NO_VALUE)
        pyf__decode_object(&f->v, i, addr, 0);
    return i;
}

/* An exception 3.11 holds apart while it is raised and not made yet
 * (PyErr_SetString and the like leave curexc_value the value the class
 * is to be called with: a tuple of arguments, None or NULL for none, or
 * the one argument).  Its tree is what normalizing it would make: an
 * exception node of the class's name (addr 0) whose args are that tuple,
 * or one made (addr 0) of the one argument.  Its node's index. */
static uint32_t unmade_exception(fctx *f, const char *cls_name, uint64_t value)
{
    pyf__vctx *c = &f->v;
    const pyf__vtype *vt = value != 0 ? type_of(f, value) : NULL;
    uint32_t kind = vt != NULL ? vt->kind : PYF_VALUE_NONE;
    uint32_t e = pyf__vnodes(c, 1), a = e != PYF_NO_VALUE ? pyf__vnodes(c, 1) : PYF_NO_VALUE;
    if (a == PYF_NO_VALUE)
        return PYF_NO_VALUE;
    c->v[e] = (pyf_value){.type_name = cls_name, .kind = PYF_VALUE_EXCEPTION,
                          .first_child = a, .nchildren = 1};
    if (kind == PYF_VALUE_TUPLE) {
        pyf__decode_object(c, a, value, 1);
        return e;
    }
    c->v[a] = (pyf_value){.type_name = "tuple", .kind = PYF_VALUE_TUPLE};
    if (kind == PYF_VALUE_NONE)
        return e;
    uint32_t arg = pyf__vnodes(c, 1);
    if (arg == PYF_NO_VALUE)
        return e;
    c->v[a].length = c->v[a].nchildren = 1;
    c->v[a].first_child = arg;
    pyf__decode_object(c, arg, value, 2);
    return e;
}

/* The exception object at exc (its traceback tb, 0: its __traceback__)
 * into tf: its type, its tree and its innermost traceback entry. */
static void exception_object(fctx *f, uint64_t exc, uint64_t tb, pyf_thread_facts *tf)
{
    const pyf__value_layout *vl = &f->v.vl;
    uint64_t own_tb = 0;
    tf->exc_addr = exc;
    const pyf__vtype *ty = type_of(f, exc);
    if (ty == NULL || !(ty->flags & PYF__TPFLAGS_BASE_EXC_SUBCLASS) || ty->name[0] == '\0' ||
        pyf__vread(&f->v, exc + vl->exc_traceback, &own_tb, 8) != PYF_OK) {
        tf->flags |= PYF_FACT_EXC_UNREADABLE;
        return;
    }
    pyf__vtype copy = *ty; /* the table of types may grow */
    tf->exc_type = pyf__arena_dup(f->arena, copy.name);
    tf->exc_value = tree_of(f, exc);
    if (worded_otherwise(f, &copy))
        tf->flags |= PYF_FACT_MESSAGE_PARTIAL;
    if (tb == 0)
        tb = own_tb;
    if (tb != 0)
        traceback_facts(f, tb, tf);
}

/* The exception 3.11 raises (exc_kind PYF__EXC_TRIPLE): curexc_value
 * made or not yet (the class at curexc_type and the value to call it
 * with), its traceback so far curexc_traceback.  False when none is
 * raised. */
static bool raised_triple(fctx *f, const uint8_t *ts, pyf_thread_facts *tf)
{
    const pyf__offsets *o = f->o;
    uint64_t type = pyf__ld64(ts + o->tstate.curexc_type);
    uint64_t value = pyf__ld64(ts + o->tstate.curexc_value);
    uint64_t tb = pyf__ld64(ts + o->tstate.curexc_traceback);
    if (type == 0)
        return false;
    tf->flags |= PYF_FACT_EXCEPTION;
    const pyf__vtype *vt = value != 0 ? type_of(f, value) : NULL;
    if (vt != NULL && (vt->flags & PYF__TPFLAGS_BASE_EXC_SUBCLASS)) {
        exception_object(f, value, tb, tf);
        return true;
    }
    /* its class: a type whose instances are exceptions */
    const pyf__vtype *ct = type_of(f, type);
    const pyf__vtype *cls = ct != NULL && ct->kind == PYF_VALUE_TYPE && plausible(type)
                                ? pyf__vtype_get(&f->v, type) : NULL;
    if (cls == NULL || cls->bad != NULL || !(cls->flags & PYF__TPFLAGS_BASE_EXC_SUBCLASS) ||
        cls->name[0] == '\0') {
        tf->flags |= PYF_FACT_EXC_UNREADABLE;
        return true;
    }
    pyf__vtype copy = *cls;
    tf->exc_type = pyf__arena_dup(f->arena, copy.name);
    tf->exc_value = unmade_exception(f, copy.name, value);
    if (worded_otherwise(f, &copy))
        tf->flags |= PYF_FACT_MESSAGE_PARTIAL;
    if (tb != 0)
        traceback_facts(f, tb, tf);
    return true;
}

/* The bytes of a _PyErr_StackItem read: up to its exc_value and its
 * previous_item. */
static size_t stackitem_len(const pyf__value_layout *vl)
{
    uint64_t end = vl->stackitem_exc_value > vl->stackitem_previous ? vl->stackitem_exc_value
                                                                      : vl->stackitem_previous;
    return (size_t)end + 8;
}

/* The exception being raised, else the one handled (sys.exception()). */
static void exception_facts(fctx *f, uint64_t tstate, const uint8_t *ts, size_t tslen,
                            pyf_thread_facts *tf)
{
    const pyf__offsets *o = f->o;
    const pyf__value_layout *vl = &f->v.vl;
    uint64_t exc = 0;
    if (o->exc_kind == PYF__EXC_TRIPLE) {
        if (raised_triple(f, ts, tf))
            return;
    } else {
        exc = pyf__ld64(ts + vl->tstate_current_exception);
    }
    /* a layout that does not place exc_info in the state read: unknown */
    if (exc == 0 && (vl->tstate_exc_info == PYF__ABSENT || vl->tstate_exc_info + 8 > tslen)) {
        tf->flags |= PYF_FACT_EXC_UNREADABLE;
        return;
    }
    if (exc == 0) {
        uint64_t item = pyf__ld64(ts + vl->tstate_exc_info), w[2];
        /* {exc_value, previous_item}; 3.8-3.10: {exc_type, exc_value,
         * exc_traceback, previous_item} */
        uint8_t b[32];
        size_t ilen = stackitem_len(vl);
        pyf__addrset seen = {0};
        for (uint32_t k = 0; k < EXC_CHAIN_MAX && item != 0 && exc == 0; k++) {
            bool dup = false;
            bool own = item == tstate + vl->tstate_exc_state && vl->tstate_exc_state + ilen <= tslen;
            if (own) /* the thread's own item: read with its state */
                memcpy(b, ts + vl->tstate_exc_state, ilen);
            if (ilen > sizeof b || !plausible(item) || !pyf__addrset_add(&seen, item, &dup) ||
                dup || (!own && pyf__vread(&f->v, item, b, ilen) != PYF_OK)) {
                tf->flags |= PYF_FACT_EXC_UNREADABLE;
                break;
            }
            w[0] = pyf__ld64(b + vl->stackitem_exc_value);
            w[1] = pyf__ld64(b + vl->stackitem_previous);
            if (w[0] != 0) {
                const pyf__vtype *ty = type_of(f, w[0]);
                if (ty == NULL) {
                    tf->flags |= PYF_FACT_EXC_UNREADABLE;
                    break;
                }
                if (ty->kind != PYF_VALUE_NONE)
                    exc = w[0];
            }
            item = w[1];
        }
        pyf__addrset_free(&seen);
        if (exc == 0)
            return;
        tf->flags |= PYF_FACT_EXC_HANDLED;
    }
    tf->flags |= PYF_FACT_EXCEPTION;
    exception_object(f, exc, 0, tf);
}

/* The facts' trees in the snapshot's arena, as one pyf_values (*out):
 * the nodes copied, the strings they point at moved there with the
 * context's arena. */
static int fact_values(fctx *f, pyf_values **out)
{
    pyf__vctx *c = &f->v;
    pyf_values *pv = pyf__arena_alloc(f->arena, sizeof *pv);
    pyf_value *v = pyf__arena_alloc(f->arena, (size_t)c->n * sizeof *v + 8);
    if (pv == NULL || v == NULL)
        return PYF_ENOMEM;
    if (c->n != 0)
        memcpy(v, c->v, (size_t)c->n * sizeof *v);
    *pv = (pyf_values){.nvalues = c->n, .values = v, .local_size = PYF_LOCAL_SIZE,
                       .value_size = PYF_VALUE_SIZE, .objects_read = c->objects,
                       .bytes_read = c->bytes, .opcode = PYF_NO_VALUE, .oparg = PYF_NO_VALUE};
    pyf__arena_adopt(f->arena, &c->arena);
    *out = pv;
    return PYF_OK;
}

/* ---- the snapshot's facts ------------------------------------------------------------ */

static void interp_facts_free(interp_facts *in, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        free(in[i].ids);
        free(in[i].objs);
    }
    free(in);
}

int pyf__thread_facts_read(pyf_target *t, const pyf_interp *interps, uint32_t ninterps,
                           const pyf_thread *threads, uint32_t nthreads, pyf__arena *arena,
                           pyf_thread_facts **out, pyf_values **trees, bool *pure)
{
    *pure = false;
    const pyf__offsets *o = &t->off;
    pyf_thread_facts *tf = pyf__arena_alloc(arena, (size_t)nthreads * sizeof *tf + 8);
    *out = tf;
    *trees = NULL;
    if (tf == NULL)
        return PYF_ENOMEM;
    memset(tf, 0, (size_t)nthreads * sizeof *tf);
    for (uint32_t i = 0; i < nthreads; i++) {
        tf[i].exc_line = -1;
        tf[i].exc_value = PYF_NO_VALUE;
    }
    pyf_failure saved = t->io.fail;
    fctx *f = calloc(1, sizeof *f);
    interp_facts *in = calloc((size_t)ninterps + 1, sizeof *in);
    uint8_t *tsb = NULL;
    name_job *jobs = NULL;
    pyf_iovec *iov = NULL;
    int *status = NULL;
    int rc = PYF_OK;
    if (f == NULL || in == NULL) {
        rc = PYF_ENOMEM;
        goto out;
    }
    f->t = t;
    f->o = o;
    f->arena = arena;
    pyf_values_request req = {.struct_size = sizeof req, .max_string = PYF_FACT_MESSAGE_MAX,
                              .max_items = 16, .max_depth = 3, .max_objects = 1u << 20,
                              .max_bytes = FACTS_BYTES};
    f->values_ok = pyf__vctx_begin(&f->v, t, &req) == PYF_OK;
    char why[PYF__ERRBUF];
    f->facts_ok = f->values_ok && pyf__offsets_check_facts(o, why, sizeof why) == PYF_OK;
    f->gil_ok = f->facts_ok && pyf__offsets_check_gil(o, why, sizeof why) == PYF_OK;
    f->v.no_attrs = true; /* the exceptions' trees: no attributes */
    if (!f->facts_ok) { /* nothing can be read: every fact unknown */
        for (uint32_t i = 0; i < nthreads; i++)
            tf[i].flags |= PYF_FACT_NAME_UNREADABLE | PYF_FACT_EXC_UNREADABLE;
        goto out;
    }
    for (uint32_t i = 0; i < ninterps; i++) {
        read_gil(f, interps[i].addr, &in[i]);
        read_active(f, interps[i].addr, &in[i]);
    }
    /* every thread state's exception and GIL words, in one batch */
    const pyf__value_layout *vl = &f->v.vl;
    size_t tslen = (size_t)vl->tstate_exc_info + 8;
    if (vl->tstate_exc_state + stackitem_len(vl) > tslen &&
        vl->tstate_exc_state + stackitem_len(vl) <= o->tstate.size)
        tslen = (size_t)vl->tstate_exc_state + stackitem_len(vl);
    if (o->exc_kind == PYF__EXC_TRIPLE && o->tstate.curexc_traceback + 8 > tslen)
        tslen = (size_t)o->tstate.curexc_traceback + 8;
    else if (o->exc_kind == PYF__EXC_SINGLE && vl->tstate_current_exception + 8 > tslen)
        tslen = (size_t)vl->tstate_current_exception + 8;
    if (o->tstate.gil_requested != PYF__ABSENT && o->tstate.gil_requested + 4 > tslen)
        tslen = (size_t)o->tstate.gil_requested + 4;
    if (o->tstate.holds_gil != PYF__ABSENT && o->tstate.holds_gil + 4 > tslen)
        tslen = (size_t)o->tstate.holds_gil + 4;
    tsb = malloc((size_t)nthreads * tslen + 8);
    iov = malloc((size_t)nthreads * sizeof *iov + 8);
    status = malloc((size_t)nthreads * sizeof *status + 8);
    if (tsb == NULL || iov == NULL || status == NULL) {
        rc = PYF_ENOMEM;
        goto out;
    }
    for (uint32_t i = 0; i < nthreads; i++)
        iov[i] = (pyf_iovec){threads[i].tstate_addr, tsb + (size_t)i * tslen, tslen};
    read_batch(f, iov, nthreads, status);
    /* each thread's Thread, named in batches; the rest one by one */
    jobs = malloc((size_t)nthreads * sizeof *jobs + 8);
    if (jobs == NULL) {
        rc = PYF_ENOMEM;
        goto out;
    }
    uint32_t njobs = 0;
    for (uint32_t i = 0; i < nthreads; i++) {
        const pyf_thread *th = &threads[i];
        interp_facts *ii = th->interp_index < ninterps ? &in[th->interp_index] : &in[ninterps];
        if (ii->names < 0)
            tf[i].flags |= PYF_FACT_NAME_UNREADABLE;
        for (uint32_t k = 0; ii->names > 0 && k < ii->n; k++)
            if (ii->ids[k] != 0 && ii->ids[k] == th->thread_id) {
                jobs[njobs] = (name_job){.thread = i, .obj = ii->objs[k]};
                njobs++;
                break;
            }
    }
    names_batched(f, jobs, njobs, tf);
    for (uint32_t k = 0; k < njobs && !f->v.nomem; k++)
        if (jobs[k].slow)
            thread_name(f, jobs[k].obj, &tf[jobs[k].thread]);
    for (uint32_t i = 0; i < nthreads && !f->v.nomem; i++) {
        const pyf_thread *th = &threads[i];
        interp_facts *ii = th->interp_index < ninterps ? &in[th->interp_index] : &in[ninterps];
        const uint8_t *ts = tsb + (size_t)i * tslen;
        bool ts_ok = status[i] == PYF_OK;
        gil_facts(f, ii, th->tstate_addr, ts, ts_ok, &tf[i]);
        if (ts_ok)
            exception_facts(f, th->tstate_addr, ts, tslen, &tf[i]);
        else
            tf[i].flags |= PYF_FACT_EXC_UNREADABLE;
    }
    if (f->v.nomem)
        rc = PYF_ENOMEM;
out:
    if (rc == PYF_OK && f != NULL) /* empty when nothing could be read */
        rc = fact_values(f, trees);
    *pure = rc == PYF_OK && f != NULL && !f->cached;
    if (f != NULL && f->values_ok)
        pyf__vctx_end(&f->v);
    if (in != NULL)
        interp_facts_free(in, ninterps + 1);
    free(f);
    free(tsb);
    free(jobs);
    free(iov);
    free(status);
    t->io.fail = saved; /* the facts' failures are their flags */
    return rc;
}
