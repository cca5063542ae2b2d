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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

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
#define INT_TEXT_MAX 120u   /* decimal digits of an int in a message */

typedef struct fctx {
    pyf__vctx v;
    pyf_target *t;
    const pyf__offsets *o;
    pyf__arena *arena;  /* the snapshot's: every string handed out */
    bool values_ok;     /* the value layout passed its checks */
    bool facts_ok;      /* and the facts' offsets theirs */
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

/* The pairs of a dict with a combined table (sys.modules, a module's
 * globals) and where each entry's key is: -1 when it is no such dict (a
 * split table: pyf__dict_items reads it), -2 when unreadable. */
static int64_t combined_pairs(fctx *f, uint64_t dict, uint64_t max, uint64_t *kv,
                              uint64_t *where, uint64_t *keys_out)
{
    const pyf__offsets *o = f->o;
    const pyf__value_layout *vl = &f->v.vl;
    uint8_t b[PYF__VALUE_HEAD_MAX], hdr[64];
    if (!plausible(dict) || pyf__vread(&f->v, dict, b, (size_t)o->dict.size) != PYF_OK)
        return -2;
    const pyf__vtype *ty = pyf__vtype_get(&f->v, pyf__ld64(b + o->pyobject.ob_type));
    if (ty == NULL || ty->kind != PYF_VALUE_DICT)
        return -2;
    uint64_t keys = pyf__ld64(b + o->dict.ma_keys);
    if (pyf__ld64(b + o->dict.ma_values) != 0)
        return -1;
    if (!plausible(keys) || vl->keys_indices > sizeof hdr ||
        pyf__vread(&f->v, keys, hdr, (size_t)vl->keys_indices) != PYF_OK)
        return -2;
    unsigned log2 = hdr[vl->keys_log2_size], log2ib = hdr[vl->keys_log2_index_bytes];
    unsigned kind = hdr[vl->keys_kind];
    int64_t nentries = (int64_t)pyf__ld64(hdr + vl->keys_nentries);
    if (log2 > 30 || log2ib < log2 || log2ib > log2 + 3 || kind > 1 || nentries < 0 ||
        nentries > ((int64_t)1 << log2))
        return -2;
    uint64_t esize = kind == PYF__DICT_KEYS_GENERAL ? 24 : 16;
    uint64_t koff = kind == PYF__DICT_KEYS_GENERAL ? 8 : 0;
    uint64_t entries = keys + vl->keys_indices + ((uint64_t)1 << log2ib);
    uint8_t buf[BATCH * 24];
    uint64_t got = 0;
    for (int64_t at = 0; at < nentries && got < max; at += BATCH) {
        int64_t m = nentries - at < BATCH ? nentries - at : BATCH;
        uint64_t base = entries + (uint64_t)at * esize;
        if (pyf__vread(&f->v, base, buf, (size_t)((uint64_t)m * esize)) != PYF_OK)
            return -2;
        for (int64_t e = 0; e < m && got < max; e++) {
            uint64_t k = pyf__ld64(buf + e * esize + koff);
            uint64_t v = pyf__ld64(buf + e * esize + koff + 8);
            if (k != 0 && v != 0) {
                kv[2 * got] = k;
                kv[2 * got + 1] = v;
                where[got] = base + (uint64_t)e * esize + koff;
                got++;
            }
        }
    }
    *keys_out = keys;
    return (int64_t)got;
}

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
 * unreadable.  memo: where it was last time (checked), updated. */
static int lookup(fctx *f, uint64_t dict, const char *name, uint64_t max, pyf__dict_slot *memo,
                  uint64_t *value)
{
    if (slot_holds(f, memo, dict)) {
        *value = memo->value;
        return 1;
    }
    memset(memo, 0, sizeof *memo);
    uint64_t *kv = malloc((size_t)max * 16), *where = malloc((size_t)max * 8), keys = 0;
    int rc = -1;
    if (kv == NULL || where == NULL) {
        f->v.nomem = true;
        goto out;
    }
    int64_t n = combined_pairs(f, dict, max, kv, where, &keys);
    bool located = n >= 0;
    if (n == -1)
        n = pyf__dict_items(&f->v, dict, max, kv);
    if (n < 0)
        goto out;
    int64_t i = find_str_key(f, kv, (uint64_t)n, name);
    if (i == -2)
        goto out;
    rc = i >= 0;
    if (i >= 0) {
        *value = kv[2 * i + 1];
        if (located)
            *memo = (pyf__dict_slot){dict, keys, where[i], kv[2 * i], kv[2 * i + 1]};
    }
out:
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
 * inline values (3.13+) of a type whose shared keys hold "_name" at a slot
 * found once per type, and a compact str there.  Four batches for every
 * thread: the objects' headers and managed dict pointers, the values up to
 * that slot, the strs' headers, their characters.  A thread that leaves
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
    const pyf__value_layout *vl = &f->v.vl;
    uint8_t hdr[64], ents[SLOT_MAX * 16];
    uint64_t kv[2 * SLOT_MAX];
    if (!plausible(keys) || vl->keys_indices > sizeof hdr ||
        pyf__vread(&f->v, keys, hdr, (size_t)vl->keys_indices) != PYF_OK)
        return -1;
    unsigned log2 = hdr[vl->keys_log2_size], log2ib = hdr[vl->keys_log2_index_bytes];
    int64_t n = (int64_t)pyf__ld64(hdr + vl->keys_nentries);
    if (hdr[vl->keys_kind] == PYF__DICT_KEYS_GENERAL || log2 > 30 || log2ib < log2 ||
        log2ib > log2 + 3 || n < 0 || n > ((int64_t)1 << log2))
        return -1;
    if (n > (int64_t)SLOT_MAX)
        n = SLOT_MAX;
    uint64_t entries = keys + vl->keys_indices + ((uint64_t)1 << log2ib);
    if (n == 0 || pyf__vread(&f->v, entries, ents, (size_t)n * 16) != PYF_OK)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        kv[2 * i] = pyf__ld64(ents + i * 16);
        kv[2 * i + 1] = 0;
    }
    int64_t at = find_str_key(f, kv, (uint64_t)n, name);
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
    const uint64_t back = vl->managed_dict_back, h = o->pyobject.size;
    uint64_t types[TYPES_SLOTS];
    int64_t slots[TYPES_SLOTS];
    uint32_t ntypes = 0;
    pyf_iovec *iov = malloc((size_t)n * sizeof *iov + 8);
    int *status = malloc((size_t)n * sizeof *status + 8);
    if (iov == NULL || status == NULL || back + h > sizeof jobs[0].buf ||
        o->unicode.compactunicodeobject_size > sizeof jobs[0].buf) {
        for (uint32_t i = 0; i < n; i++)
            jobs[i].slow = true;
        n = 0;
    }
    /* the objects: the managed dict pointer, then the header */
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
        const uint64_t want = PYF__TPFLAGS_MANAGED_DICT | PYF__TPFLAGS_INLINE_VALUES;
        if (ty == NULL || ty->bad != NULL || (ty->flags & want) != want ||
            pyf__ld64(j->buf) != 0 || ty->basicsize < 16 || ty->basicsize > (1u << 20) ||
            (!o->free_threaded && pyf__ld32(j->buf + back) == 0) ||
            (j->slot = type_slot(f, ty, types, slots, &ntypes)) < 0) {
            j->slow = true;
            continue;
        }
        j->at = j->obj + ty->basicsize;
        j->len = (uint32_t)(vl->values_values + 8 * ((uint64_t)j->slot + 1));
    }
    /* the values up to the slot: the name's str */
    job_batch(f, jobs, n, iov, status);
    for (uint32_t i = 0; i < n; i++) {
        name_job *j = &jobs[i];
        if (j->slow)
            continue;
        j->str = pyf__ld64(j->buf + vl->values_values + 8 * (uint64_t)j->slot);
        j->slow = !j->buf[vl->values_valid] || j->buf[vl->values_capacity] <= j->slot ||
                  !plausible(j->str);
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

static void read_gil(fctx *f, uint64_t interp, interp_facts *in)
{
    const pyf__offsets *o = f->o;
    uint64_t g = o->interp.gil_runtime_state, gil = 0, holder = 0;
    int32_t locked = 0, enabled = 0;
    int status[3];
    in->gil = -1;
    /* the GIL in use (a legacy subinterpreter shares the main one's) */
    if (pyf__vread(&f->v, interp + o->interp.ceval_gil, &gil, 8) != PYF_OK)
        return;
    if (!plausible(gil))
        gil = interp + g;
    pyf_iovec iov[3] = {
        {gil + (o->interp.gil_locked - g), &locked, 4},
        {gil + (o->interp.gil_holder - g), &holder, 8},
        {gil + o->interp.gil_enabled, &enabled, 4}, /* into the struct itself */
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
    bool in_runtime = o->gil_kind == PYF__GIL_RUNTIME;
    /* the words' offsets from the GIL's start (3.11: _PyRuntime's) */
    const uint64_t g = in_runtime ? 0 : o->interp.gil_runtime_state;
    const uint64_t locked_off = in_runtime ? o->runtime.gil_locked : o->interp.gil_locked;
    const uint64_t holder_off = in_runtime ? o->runtime.gil_holder : o->interp.gil_holder;
    if (o->free_threaded || o->tstate.holds_gil != PYF__ABSENT || g == PYF__ABSENT ||
        (!in_runtime && o->interp.ceval_gil == PYF__ABSENT) || locked_off == PYF__ABSENT ||
        holder_off == PYF__ABSENT || locked_off < g || holder_off < g)
        return; /* 3.15 has the thread's own word; free-threaded no one GIL */
    uint64_t lo = locked_off - g, hi = holder_off - g;
    if (lo > hi) {
        uint64_t x = lo;
        lo = hi;
        hi = x;
    }
    if (hi - lo > 256 || (in_runtime && hi > UINT64_MAX - t->runtime_addr - 8))
        return;
    uint64_t locked_at = locked_off - g - lo, holder_at = holder_off - g - lo;
    uint8_t words[256 + 8 + 8];
    size_t len = (size_t)(hi - lo) + 8;
    bool have = false; /* 3.11: the runtime's words, read for the first interpreter */
    for (uint32_t i = 0; i < ninterps; i++) {
        uint64_t interp = interps[i].addr, gil = 0;
        if (in_runtime) {
            if (!have && pyf__read_quiet(t, t->runtime_addr + lo, words, len) != PYF_OK)
                return;
            have = true;
        } else {
            if (pyf__read_quiet(t, interp + o->interp.ceval_gil, &gil, 8) != PYF_OK)
                continue;
            if (!plausible(gil))
                gil = interp + g; /* its own */
            if (pyf__read_quiet(t, gil + lo, words, len) != PYF_OK)
                continue;
        }
        bool locked = pyf__ld32(words + locked_at) != 0;
        uint64_t holder = pyf__ld64(words + holder_at);
        const pyf_interp *pi = &interps[i];
        for (uint32_t k = 0; k < pi->nthreads && pi->first_thread + k < nthreads; k++) {
            pyf_thread *th = &threads[pi->first_thread + k];
            th->flags |= PYF_THREAD_GIL_KNOWN;
            if (locked && holder == th->tstate_addr)
                th->flags |= PYF_THREAD_HOLDS_GIL;
        }
    }
}

/* ---- messages ------------------------------------------------------------------ */

/* A bounded UTF-8 text: cut at PYF_FACT_MESSAGE_MAX bytes, on a character
 * boundary. */
typedef struct sbuf {
    char b[PYF_FACT_MESSAGE_MAX + 8];
    size_t n;
    bool cut, partial;
} sbuf;

static void put(sbuf *s, const char *p, size_t len)
{
    if (s->cut)
        return;
    if (len > PYF_FACT_MESSAGE_MAX - s->n) {
        len = PYF_FACT_MESSAGE_MAX - s->n;
        while (len > 0 && ((unsigned char)p[len] & 0xC0) == 0x80)
            len--;
        s->cut = true;
    }
    memcpy(s->b + s->n, p, len);
    s->n += len;
    s->b[s->n] = '\0';
}

static void puts_(sbuf *s, const char *p)
{
    put(s, p, strlen(p));
}

/* repr() of a str whose UTF-8 (lone surrogates as "surrogatepass") is
 * d[n]: CPython's quotes and escapes (non-ASCII kept, as a UTF-8
 * terminal shows it; C1 controls and surrogates escaped). */
static void put_str_repr(sbuf *s, const char *d, size_t n)
{
    char q = memchr(d, '\'', n) != NULL && memchr(d, '"', n) == NULL ? '"' : '\'';
    char e[16];
    put(s, &q, 1);
    for (size_t i = 0; i < n && !s->cut;) {
        unsigned char c = (unsigned char)d[i];
        if (c == (unsigned char)q || c == '\\') {
            e[0] = '\\';
            e[1] = (char)c;
            put(s, e, 2);
        } else if (c == '\n' || c == '\r' || c == '\t') {
            put(s, c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t", 2);
        } else if (c < 0x20 || c == 0x7f) {
            snprintf(e, sizeof e, "\\x%02x", c);
            puts_(s, e);
        } else if (c == 0xC2 && i + 1 < n && (unsigned char)d[i + 1] < 0xA0) {
            snprintf(e, sizeof e, "\\x%02x", (unsigned char)d[i + 1]);
            puts_(s, e);
            i += 2;
            continue;
        } else if (c == 0xED && i + 2 < n && (unsigned char)d[i + 1] >= 0xA0) {
            unsigned cp = ((c & 0x0Fu) << 12) | (((unsigned char)d[i + 1] & 0x3Fu) << 6) |
                          ((unsigned char)d[i + 2] & 0x3Fu);
            snprintf(e, sizeof e, "\\u%04x", cp);
            puts_(s, e);
            i += 3;
            continue;
        } else {
            put(s, d + i, 1);
        }
        i++;
    }
    put(s, &q, 1);
}

/* str() of an int from its 30-bit digits. */
static void put_int(sbuf *s, const pyf_value *v)
{
    uint32_t d[INT_TEXT_MAX / 9 + 2];
    size_t nd = (size_t)(v->data_size / 4);
    char out[INT_TEXT_MAX + 16];
    size_t len = 0;
    if (nd * 30 > INT_TEXT_MAX * 3 || (v->flags & PYF_VALUE_TRUNCATED) || v->data == NULL) {
        puts_(s, "<int too large>");
        s->partial = true;
        return;
    }
    memcpy(d, v->data, nd * 4);
    /* repeated division by 10^9: base 2^30 digits, most significant last */
    char groups[INT_TEXT_MAX / 9 + 4][10];
    size_t ng = 0;
    while (nd > 0) {
        uint64_t rem = 0;
        for (size_t i = nd; i-- > 0;) {
            uint64_t cur = (rem << 30) | d[i];
            d[i] = (uint32_t)(cur / 1000000000u);
            rem = cur % 1000000000u;
        }
        snprintf(groups[ng++], sizeof groups[0], "%09u", (unsigned)rem);
        while (nd > 0 && d[nd - 1] == 0)
            nd--;
    }
    if (v->number < 0)
        out[len++] = '-';
    if (ng == 0)
        out[len++] = '0';
    for (size_t g = ng; g-- > 0;) {
        const char *p = groups[g];
        if (g == ng - 1)
            while (*p == '0' && p[1] != '\0')
                p++;
        size_t l = strlen(p);
        memcpy(out + len, p, l);
        len += l;
    }
    put(s, out, len);
}

/* repr() of a float: the shortest digits that read back, placed as
 * CPython's float_repr does (exponent form below 1e-4 and from 1e16). */
static void put_float(sbuf *s, double x)
{
    char b[64], m[32];
    if (isnan(x)) {
        puts_(s, "nan");
        return;
    }
    if (isinf(x)) {
        puts_(s, x < 0 ? "-inf" : "inf");
        return;
    }
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(b, sizeof b, "%.*e", prec - 1, x);
        if (strtod(b, NULL) == x)
            break;
    }
    snprintf(b, sizeof b, "%.*e", prec - 1, x);
    /* b: [-]d[.ddd]e[+-]XX */
    char *e = strchr(b, 'e');
    int exp = atoi(e + 1);
    size_t nm = 0;
    bool neg = b[0] == '-';
    for (char *p = b + neg; p < e; p++)
        if (*p != '.')
            m[nm++] = *p;
    while (nm > 1 && m[nm - 1] == '0')
        nm--;
    m[nm] = '\0';
    char out[64];
    size_t len = 0;
    if (neg)
        out[len++] = '-';
    if (exp >= -5 && exp < 16) {
        if (exp < 0) {
            len += (size_t)snprintf(out + len, sizeof out - len, "0.");
            for (int z = -1; z > exp; z--)
                out[len++] = '0';
            len += (size_t)snprintf(out + len, sizeof out - len, "%s", m);
        } else {
            for (int i = 0; i <= exp; i++)
                out[len++] = (size_t)i < nm ? m[i] : '0';
            out[len++] = '.';
            if ((size_t)exp + 1 < nm)
                len += (size_t)snprintf(out + len, sizeof out - len, "%s", m + exp + 1);
            else
                out[len++] = '0';
        }
    } else {
        out[len++] = m[0];
        if (nm > 1)
            len += (size_t)snprintf(out + len, sizeof out - len, ".%s", m + 1);
        len += (size_t)snprintf(out + len, sizeof out - len, "e%c%02d", exp < 0 ? '-' : '+',
                                exp < 0 ? -exp : exp);
    }
    put(s, out, len);
}

static void put_value(fctx *f, sbuf *s, uint32_t i, bool as_str, int depth);

/* The children of node p, between open and close (a 1-tuple's comma). */
static void put_items(fctx *f, sbuf *s, const pyf_value *p, const char *open, const char *close,
                      bool pairs, int depth)
{
    puts_(s, open);
    for (uint32_t k = 0; k < p->nchildren && !s->cut; k++) {
        if (k > 0)
            puts_(s, pairs && k % 2 == 1 ? ": " : ", ");
        put_value(f, s, p->first_child + k, false, depth + 1);
    }
    if ((p->flags & (PYF_VALUE_TRUNCATED | PYF_VALUE_TOO_DEEP)) && p->length > 0) {
        puts_(s, p->nchildren ? ", ..." : "...");
        s->partial = true;
    }
    if (p->kind == PYF_VALUE_TUPLE && p->length == 1 && p->nchildren == 1)
        puts_(s, ",");
    puts_(s, close);
}

/* str() (as_str) or repr() of node i, as far as the decoder read it. */
static void put_value(fctx *f, sbuf *s, uint32_t i, bool as_str, int depth)
{
    const pyf_value *v = &f->v.v[i];
    char b[128];
    if (depth > 8) {
        puts_(s, "...");
        s->partial = true;
        return;
    }
    if (v->flags & PYF_VALUE_CYCLE) {
        puts_(s, v->kind == PYF_VALUE_LIST ? "[...]" : v->kind == PYF_VALUE_DICT ? "{...}" : "...");
        return;
    }
    switch (v->kind) {
    case PYF_VALUE_STR:
        if ((v->flags & PYF_VALUE_TRUNCATED) && !pyf__vstr_ends(&f->v, v->addr)) {
            puts_(s, "<unreadable>"); /* a length past the object: garbage */
            s->partial = true;
            return;
        }
        if (as_str)
            put(s, v->data != NULL ? v->data : "", (size_t)v->data_size);
        else
            put_str_repr(s, v->data != NULL ? v->data : "", (size_t)v->data_size);
        if (v->flags & PYF_VALUE_TRUNCATED) /* longer than a message holds */
            s->cut = true;
        return;
    case PYF_VALUE_INT:
        put_int(s, v);
        return;
    case PYF_VALUE_BOOL:
        puts_(s, v->number ? "True" : "False");
        return;
    case PYF_VALUE_NONE:
        puts_(s, "None");
        return;
    case PYF_VALUE_FLOAT:
        put_float(s, v->real);
        return;
    case PYF_VALUE_TUPLE:
        put_items(f, s, v, "(", ")", false, depth);
        return;
    case PYF_VALUE_LIST:
        put_items(f, s, v, "[", "]", false, depth);
        return;
    case PYF_VALUE_DICT:
        put_items(f, s, v, "{", "}", true, depth);
        return;
    case PYF_VALUE_ELLIPSIS:
        puts_(s, "Ellipsis");
        return;
    case PYF_VALUE_TYPE:
        snprintf(b, sizeof b, "<class '%.80s'>", v->data != NULL ? v->data : "?");
        puts_(s, b);
        return;
    case PYF_VALUE_EXCEPTION: /* BaseException.__repr__: Name(arg) or Name(args) */
        if (as_str) /* str() of an exception argument: its own message */
            s->partial = true;
        puts_(s, v->type_name);
        if (v->nchildren == 1 && f->v.v[v->first_child].kind == PYF_VALUE_TUPLE) {
            const pyf_value *args = &f->v.v[v->first_child];
            if (args->length == 1 && args->nchildren == 1) {
                puts_(s, "(");
                put_value(f, s, args->first_child, false, depth + 1);
                puts_(s, ")");
            } else {
                put_value(f, s, v->first_child, false, depth + 1);
            }
        } else {
            puts_(s, "()");
            s->partial = true;
        }
        return;
    case PYF_VALUE_UNREADABLE:
        puts_(s, "<unreadable>");
        s->partial = true;
        return;
    default:
        snprintf(b, sizeof b, "<%.80s object at 0x%llx>", v->type_name,
                 (unsigned long long)v->addr);
        puts_(s, b);
        /* repr() may say more: a class's own __repr__ is not run */
        if (v->kind == PYF_VALUE_OTHER || v->kind == PYF_VALUE_BYTES ||
            v->kind == PYF_VALUE_SET || v->kind == PYF_VALUE_FROZENSET)
            s->partial = true;
        return;
    }
}

/* The object at addr decoded into a fresh tree (node 0), or false. */
static bool decode(fctx *f, uint64_t addr)
{
    f->v.n = 0;
    f->v.no_attrs = true;
    uint32_t i = pyf__vnodes(&f->v, 1);
    if (i == PYF_NO_VALUE)
        return false;
    pyf__decode_object(&f->v, i, addr, 0);
    return !f->v.nomem;
}

/* The builtin exceptions whose str() is OSError's. */
static bool is_oserror(const char *name)
{
    static const char *const names[] = {
        "OSError", "BlockingIOError", "ChildProcessError", "ConnectionError",
        "BrokenPipeError", "ConnectionAbortedError", "ConnectionRefusedError",
        "ConnectionResetError", "FileExistsError", "FileNotFoundError", "InterruptedError",
        "IsADirectoryError", "NotADirectoryError", "PermissionError", "ProcessLookupError",
        "TimeoutError",
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

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

/* str() of node 0 (str_of) or repr() into s: the object at addr. */
static void put_object(fctx *f, sbuf *s, uint64_t addr, bool as_str)
{
    if (!decode(f, addr)) {
        puts_(s, "<unreadable>");
        s->partial = true;
        return;
    }
    put_value(f, s, 0, as_str, 0);
}

/* OSError.__str__ (Objects/exceptions.c, OSError_str): "[Errno N] text",
 * with ": 'file'" and " -> 'file2'" when they are set; false when errno or
 * strerror is not set (then BaseException's). */
static bool oserror_str(fctx *f, uint64_t exc, sbuf *s)
{
    const pyf__value_layout *vl = &f->v.vl;
    uint64_t w[4];
    if (pyf__vread(&f->v, exc + vl->oserror_errno, w, sizeof w) != PYF_OK)
        return false;
    if (w[0] == 0 || w[1] == 0)
        return false;
    puts_(s, "[Errno ");
    put_object(f, s, w[0], true);
    puts_(s, "] ");
    put_object(f, s, w[1], true);
    if (w[2] != 0) {
        puts_(s, ": ");
        put_object(f, s, w[2], false);
        if (w[3] != 0) {
            puts_(s, " -> ");
            put_object(f, s, w[3], false);
        }
    }
    return true;
}

/* str(exc) into s (BaseException.__str__, KeyError's and OSError's). */
static void exc_message(fctx *f, uint64_t exc, const pyf__vtype *ty, sbuf *s)
{
    bool builtin = !(ty->flags & PYF__TPFLAGS_HEAPTYPE);
    if (builtin && is_oserror(ty->name) && oserror_str(f, exc, s))
        return;
    if (!decode(f, exc) || f->v.v[0].kind != PYF_VALUE_EXCEPTION || f->v.v[0].nchildren != 1 ||
        f->v.v[f->v.v[0].first_child].kind != PYF_VALUE_TUPLE) {
        s->partial = true;
        puts_(s, "<unreadable>");
        return;
    }
    const pyf_value *a = &f->v.v[f->v.v[0].first_child];
    uint64_t last = 0;
    if (a->length > a->nchildren && /* cut: its items end where its size says */
        pyf__vread(&f->v, a->addr + f->o->tuple.ob_item + 8 * (a->length - 1), &last, 8) != PYF_OK) {
        s->partial = true;
        puts_(s, "<unreadable>");
        return;
    }
    if (a->length == 0) {
        /* "" */
    } else if (a->length == 1 && a->nchildren == 1) {
        bool key_error = builtin && strcmp(ty->name, "KeyError") == 0;
        put_value(f, s, a->first_child, !key_error, 1);
    } else {
        put_value(f, s, f->v.v[0].first_child, false, 1);
    }
    /* what BaseException.__str__ says unless the class words it itself */
    if ((builtin && own_str(ty->name)) ||
        (!builtin && ty->dict != 0 && pyf__dict_lookup(&f->v, ty->dict, "__str__") != 0))
        s->partial = true;
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
    if (!plausible(frame) || pyf__vread(&f->v, frame + vl->frameobj_f_frame, &iframe, 8) != PYF_OK ||
        !plausible(iframe) || pyf__vread(&f->v, iframe + o->frame.executable, &exe, 8) != PYF_OK)
        return;
    int soft = PYF_OK;
    const pyf__code *code = pyf__code_get(f->t, exe & o->tag_mask, 0, &soft);
    if (code == NULL || code->filename == NULL)
        return;
    tf->exc_file = pyf__arena_dup(f->arena, code->filename);
    pyf__location loc;
    if (lineno >= 0)
        tf->exc_line = lineno;
    else if (lasti >= 0 && code->linetable != NULL &&
             pyf__linetable_lookup(code->linetable, code->linetable_len, code->firstlineno,
                                   lasti / 2, &loc))
        tf->exc_line = loc.line;
}

/* ---- exceptions ------------------------------------------------------------------- */

/* The exception object at exc into tf. */
static void exception_object(fctx *f, uint64_t exc, pyf_thread_facts *tf)
{
    const pyf__value_layout *vl = &f->v.vl;
    uint64_t tb = 0;
    tf->exc_addr = exc;
    const pyf__vtype *ty = type_of(f, exc);
    if (ty == NULL || !(ty->flags & PYF__TPFLAGS_BASE_EXC_SUBCLASS) || ty->name[0] == '\0' ||
        pyf__vread(&f->v, exc + vl->exc_traceback, &tb, 8) != PYF_OK) {
        tf->flags |= PYF_FACT_EXC_UNREADABLE;
        return;
    }
    pyf__vtype copy = *ty; /* the table of types may grow */
    tf->exc_type = pyf__arena_dup(f->arena, copy.name);
    sbuf *s = calloc(1, sizeof *s);
    if (s == NULL) {
        f->v.nomem = true;
        return;
    }
    exc_message(f, exc, &copy, s);
    tf->exc_message = dup_n(f, s->b, s->n);
    if (s->cut)
        tf->flags |= PYF_FACT_MESSAGE_TRUNCATED;
    if (s->partial)
        tf->flags |= PYF_FACT_MESSAGE_PARTIAL;
    free(s);
    if (tb != 0)
        traceback_facts(f, tb, tf);
}

/* The exception being raised, else the one handled (sys.exception()). */
static void exception_facts(fctx *f, uint64_t tstate, const uint8_t *ts, size_t tslen,
                            pyf_thread_facts *tf)
{
    const pyf__value_layout *vl = &f->v.vl;
    uint64_t exc = pyf__ld64(ts + vl->tstate_current_exception);
    if (exc == 0) {
        uint64_t item = pyf__ld64(ts + vl->tstate_exc_info), w[2];
        uint8_t b[16];
        pyf__addrset seen = {0};
        for (uint32_t k = 0; k < EXC_CHAIN_MAX && item != 0 && exc == 0; k++) {
            bool dup = false;
            bool own = item == tstate + vl->tstate_exc_state && vl->tstate_exc_state + 16 <= tslen;
            if (own) /* the thread's own item: read with its state */
                memcpy(b, ts + vl->tstate_exc_state, 16);
            if (!plausible(item) || !pyf__addrset_add(&seen, item, &dup) || dup ||
                (!own && pyf__vread(&f->v, item, b, 16) != PYF_OK)) {
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
    exception_object(f, exc, tf);
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
                           pyf_thread_facts **out)
{
    const pyf__offsets *o = &t->off;
    pyf_thread_facts *tf = pyf__arena_alloc(arena, (size_t)nthreads * sizeof *tf + 8);
    *out = tf;
    if (tf == NULL)
        return PYF_ENOMEM;
    memset(tf, 0, (size_t)nthreads * sizeof *tf);
    for (uint32_t i = 0; i < nthreads; i++)
        tf[i].exc_line = -1;
    pyf_failure saved = t->fail;
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
    if (vl->tstate_exc_state + 16 > tslen && vl->tstate_exc_state + 16 <= o->tstate.size)
        tslen = (size_t)vl->tstate_exc_state + 16;
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
    if (f != NULL && f->values_ok)
        pyf__vctx_end(&f->v);
    if (in != NULL)
        interp_facts_free(in, ninterps + 1);
    free(f);
    free(tsb);
    free(jobs);
    free(iov);
    free(status);
    t->fail = saved; /* the facts' failures are their flags */
    return rc;
}
