/*
 * code.c - code objects: decode names, file names and line tables once per
 * code object and keep them in a cache keyed by remote address (the line
 * table's decoder is linetable.c).
 *
 * Cache validity: on 3.14+ the interpreter's code_object_generation (read
 * with every snapshot) flushes the cache when it moves.  3.11-3.13 have no
 * such counter, so the first use of an entry in a snapshot re-reads the
 * code object header and compares what the entry was decoded from; 3.11's
 * code objects carry no co_version either, so there the names, file name
 * and line table are read again with the header and compared too (a code
 * object made where a freed one was, its strings and table where the freed
 * one's were, has the freed one's header).
 *
 * A running process (the PID reader) can free the code object between the
 * read of its header and the reads of its strings, and give their memory
 * to other objects: a decode would then pair one code object's name with
 * another's file.  So a decode there is verified: the header is read again
 * after the strings, in the same reader call, with the frame that named
 * the code object; the object must still be alive (its first word a
 * reference count, not an allocator's free-list link), be the same one
 * (co_version, unique per code object created), hold the same pointers,
 * and the frame must still run it.  A decode that fails this is never
 * kept or shown: the walk reads the thread again (PYF__ESTALE).
 * docs/architecture.md, "When is a frame true?", says what this leaves.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "code.h"
#include "containers.h"
#include "errors.h"
#include "linetable.h"
#include "offsets.h"
#include "reads.h"
#include "target.h"

#define CODE_CACHE_MAX 16384u       /* entries before the cache is reset */
#define CODE_CACHE_MAX_BYTES (64u << 20)
#define LINETABLE_MAX (1u << 20)    /* bytes; larger tables give no location */
#define LINETABLE_SPECULATIVE 256
#define STR_SPECULATIVE 192
#define CODE_STRUCT_MAX 4096

/* ---- cache ----------------------------------------------------------------
 * Entries are heap-allocated one by one (a pointer to one stays valid until
 * it is removed or the cache cleared); the address map indexes them. */

static void entry_free(pyf__code *e)
{
    free(e->qualname);
    free(e->filename);
    free(e->linetable);
    memset(e, 0, sizeof *e);
}

static pyf__code *entry_at(const uint64_t *v)
{
    return v ? (pyf__code *)(uintptr_t)*v : NULL;
}

static uint64_t entry_bytes(const pyf__code *e)
{
    return (e->qualname ? strlen(e->qualname) : 0) +
           (e->filename ? strlen(e->filename) : 0) + e->linetable_len;
}

void pyf__code_cache_clear(pyf__code_cache *c)
{
    for (uint32_t i = 0; i < c->index.cap; i++) {
        if (c->index.slots[i].key == 0)
            continue;
        pyf__code *e = entry_at(&c->index.slots[i].value);
        entry_free(e);
        free(e);
    }
    pyf__addrmap_free(&c->index);
    uint64_t clears = c->clears;
    memset(c, 0, sizeof *c);
    c->clears = clears + 1;
}

void pyf__code_scratch_free(pyf_target *t)
{
    entry_free(&t->code.scratch);
}

static pyf__code *cache_find(pyf__code_cache *c, uint64_t addr)
{
    return entry_at(pyf__addrmap_get(&c->index, addr));
}

static void cache_remove(pyf__code_cache *c, pyf__code *e)
{
    c->last = NULL;
    c->bytes -= entry_bytes(e);
    c->count--;
    pyf__addrmap_remove(&c->index, e->addr);
    entry_free(e);
    free(e);
}

static pyf__code *cache_insert(pyf__code_cache *c, const pyf__code *src)
{
    if (c->count >= CODE_CACHE_MAX || c->bytes >= CODE_CACHE_MAX_BYTES)
        pyf__code_cache_clear(c);
    pyf__code *e = malloc(sizeof *e);
    bool added;
    uint64_t *v = e ? pyf__addrmap_put(&c->index, src->addr, &added) : NULL;
    if (v == NULL) {
        free(e);
        return NULL;
    }
    *e = *src;
    *v = (uint64_t)(uintptr_t)e;
    c->count++;
    c->bytes += entry_bytes(e);
    return e;
}

/* ---- type check ----------------------------------------------------------- */

/* Is type_addr PyCode_Type?  Confirmed once by its tp_name, then by address. */
static int check_code_type(pyf_target *t, uint64_t type_addr)
{
    if (type_addr != 0 && type_addr == t->code.type_addr)
        return PYF_OK;
    if (type_addr == 0 || type_addr % 8 != 0 ||
        type_addr == t->code.not_type_addr)
        return PYF_ECORRUPT;
    uint8_t p[8];
    int rc = pyf__read(t, type_addr + t->off.type.tp_name, p, 8,
                       "type name pointer of an executable object");
    if (rc != PYF_OK)
        return rc;
    char name[8];
    rc = pyf__read(t, pyf__ld64(p), name, 5, "type name of an executable object");
    if (rc != PYF_OK)
        return rc;
    if (memcmp(name, "code", 5) != 0) {
        t->code.not_type_addr = type_addr;
        return PYF_ECORRUPT;
    }
    t->code.type_addr = type_addr;
    return PYF_OK;
}

/* ---- decoding ------------------------------------------------------------- */

typedef struct code_head {
    uint64_t first;          /* the object's first word: see head_alive */
    uint64_t type, qualname, filename, linetable;
    uint64_t units;          /* ob_size: the bytecode's length in code units */
    int32_t firstlineno;
    uint32_t version;        /* co_version */
    int32_t co_flags;        /* 0 when the table places none */
    int32_t nlocalsplus;     /* co_nlocalsplus */
    int32_t firsttraceable;  /* _co_firsttraceable (3.11, 3.12), else 0 */
} code_head;

/* Bytes of a code object read as its header: every field used lies inside
 * code.size (validated) and inside this; 0 with a failure when not. */
static size_t head_len(pyf_target *t)
{
    const pyf__offsets *o = &t->off;
    size_t len = (size_t)o->code.size;
    if (len > CODE_STRUCT_MAX)
        len = CODE_STRUCT_MAX;
    uint64_t maxoff = o->code.linetable;
    if (o->code.qualname > maxoff) maxoff = o->code.qualname;
    if (o->code.filename > maxoff) maxoff = o->code.filename;
    if (o->code.firstlineno > maxoff) maxoff = o->code.firstlineno;
    const uint64_t optional[] = {o->code.co_version, o->code.co_flags, o->code.nlocalsplus,
                                 o->code.firsttraceable};
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
        if (optional[i] != PYF__ABSENT && optional[i] > maxoff)
            maxoff = optional[i];
    if (o->pyobject.ob_type > maxoff) maxoff = o->pyobject.ob_type;
    if (o->bytes.ob_size > maxoff) maxoff = o->bytes.ob_size; /* any var object's */
    if (maxoff + 8 > len) {
        pyf__fail(t, PYF_EOFFSETS, "code object fields lie beyond %zu bytes", len);
        return 0;
    }
    return (size_t)maxoff + 8;
}

static void parse_head(const pyf__offsets *o, const uint8_t *buf, code_head *h)
{
    h->first = pyf__ld64(buf);
    h->type = pyf__ld64(buf + o->pyobject.ob_type);
    h->qualname = pyf__ld64(buf + o->code.qualname);
    h->filename = pyf__ld64(buf + o->code.filename);
    h->linetable = pyf__ld64(buf + o->code.linetable);
    h->firstlineno = (int32_t)pyf__ld32(buf + o->code.firstlineno);
    /* the bytecode inline (3.11+: ob_size code units), or in a bytes
     * object of its own (3.8-3.10: not counted, 0) */
    h->units = o->code.co_code_adaptive != PYF__ABSENT ? pyf__ld64(buf + o->bytes.ob_size) : 0;
    /* 3.11 has no co_version: the other fields say which object it is */
    h->version = o->code.co_version != PYF__ABSENT ? pyf__ld32(buf + o->code.co_version) : 0;
    h->co_flags = o->code.co_flags != PYF__ABSENT
                      ? (int32_t)pyf__ld32(buf + o->code.co_flags) : 0;
    h->nlocalsplus = o->code.nlocalsplus != PYF__ABSENT
                         ? (int32_t)pyf__ld32(buf + o->code.nlocalsplus) : 0;
    h->firsttraceable = o->code.firsttraceable != PYF__ABSENT
                            ? (int32_t)pyf__ld32(buf + o->code.firsttraceable) : 0;
}

/* co_flags bits (Include/cpython/code.h, the same in 3.13-3.15) */
#define CO_GENERATOR 0x0020
#define CO_COROUTINE 0x0080
#define CO_ITERABLE_COROUTINE 0x0100
#define CO_ASYNC_GENERATOR 0x0200

/* What a generator-owned frame running code with these co_flags carries.
 * CPython makes the owner by the same bits (Objects/genobject.c,
 * _Py_MakeCoro): CO_GENERATOR alone a generator, CO_ASYNC_GENERATOR alone
 * an async generator, otherwise a coroutine; CO_ITERABLE_COROUTINE
 * (@types.coroutine) leaves a generator a generator.  Flags that no code
 * CPython runs in a generator has (none of the three: unknown, or a table
 * without co_flags) name no owner. */
static uint32_t owned_flags(int32_t co_flags)
{
    switch (co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) {
    case CO_GENERATOR:
    case 0:
        return PYF_FRAME_GENERATOR;
    case CO_ASYNC_GENERATOR:
        return PYF_FRAME_GENERATOR | PYF_FRAME_ASYNC_GENERATOR;
    default:
        return PYF_FRAME_GENERATOR | PYF_FRAME_COROUTINE;
    }
}

static int read_head(pyf_target *t, uint64_t addr, code_head *h)
{
    uint8_t buf[CODE_STRUCT_MAX];
    size_t len = head_len(t);
    if (len == 0)
        return PYF_EOFFSETS;
    int rc = pyf__read(t, addr, buf, len, "code object");
    if (rc != PYF_OK)
        return rc;
    parse_head(&t->off, buf, h);
    return PYF_OK;
}

/* Is the object whose header this is alive?  In a default (GIL) build its
 * first word is the reference count: a live object's low 32 bits are not
 * 0, and the 16 bits above them (3.13: the count's upper half; 3.14+:
 * ob_overflow, never set) are 0.  A freed object's first word is its
 * allocator's free-list link: pymalloc's next free block (an address above
 * 4 GiB in its mmapped arenas, or NULL), glibc's (mangled) tcache link,
 * whose key also overwrites ob_type.  Free-threaded builds keep the owning
 * thread there (ob_tid): no such check. */
static bool word_alive(const pyf__offsets *o, uint64_t first)
{
    if (o->free_threaded)
        return true;
    return (uint32_t)first != 0 && ((first >> 32) & 0xffff) == 0;
}

static bool head_alive(const pyf__offsets *o, const code_head *h)
{
    return word_alive(o, h->first);
}

static bool same_head(const pyf__code *e, const code_head *h)
{
    return e->qualname_ptr == h->qualname && e->filename_ptr == h->filename &&
           e->linetable_ptr == h->linetable && e->firstlineno == h->firstlineno &&
           e->version == h->version && e->units == h->units && e->co_flags == h->co_flags;
}

/* The bytes of a str object up to the last character a decode shows (at
 * most max characters), from its header in buf (have bytes read); 0 when
 * they do not tell (no compact str, or its header not read). */
static uint32_t str_size(const pyf__offsets *o, const uint8_t *buf, size_t have,
                         uint32_t max)
{
    pyf__str_info si;
    if (have < o->unicode.compactunicodeobject_size || pyf__str_header(o, buf, &si) != PYF_OK)
        return 0;
    uint64_t n = si.length < max ? si.length : max;
    uint64_t size = si.data_off + n * si.kind;
    return size <= UINT32_MAX ? (uint32_t)size : 0;
}

/* Whether the str in buf (have bytes) decodes to text. */
static bool str_is(pyf_target *t, const uint8_t *buf, size_t have, const char *text)
{
    char *got = NULL;
    bool trunc = false;
    size_t need = 0;
    bool same = pyf__decode_str(&t->off, buf, have, t->opts.max_string, &got, &trunc,
                                &need) == PYF_OK && strcmp(got, text) == 0;
    free(got);
    return same;
}

/* A code object without co_version (3.11): its header (into *h) and, in
 * the same reader call, the objects e was decoded from: true when they
 * still hold what e shows (its name, file name and line table), whatever
 * object now holds them.  A read that fails, or an entry whose strings'
 * sizes are unknown, is false (decoded again). */
static bool head_and_content(pyf_target *t, const pyf__code *e, uint64_t addr,
                             code_head *h, int *rc)
{
    const pyf__offsets *o = &t->off;
    uint8_t hbuf[CODE_STRUCT_MAX];
    size_t hlen = head_len(t), bhdr = (size_t)o->bytes.ob_sval;
    *rc = hlen == 0 ? PYF_EOFFSETS : PYF_OK;
    if (*rc != PYF_OK)
        return false;
    bool table = e->linetable != NULL;
    size_t qsize = e->qualname_size, fsize = e->filename_size;
    size_t lsize = table ? bhdr + e->linetable_len : 0;
    uint8_t *content = NULL;
    if (qsize != 0 && fsize != 0)
        content = malloc(qsize + fsize + (lsize ? lsize : 1));
    if (content == NULL) {
        *rc = read_head(t, addr, h);
        return false;
    }
    pyf_iovec iov[4] = {{addr, hbuf, hlen},
                        {e->qualname_ptr, content, qsize},
                        {e->filename_ptr, content + qsize, fsize},
                        {e->linetable_ptr, content + qsize + fsize, lsize}};
    *rc = pyf__read_after(t, iov, table ? 4 : 3);
    bool same = false;
    if (*rc == PYF_OK) {
        parse_head(o, hbuf, h);
        const uint8_t *lt = content + qsize + fsize;
        same = str_is(t, content, qsize, e->qualname) &&
               str_is(t, content + qsize, fsize, e->filename) &&
               (!table || ((int64_t)pyf__ld64(lt + o->bytes.ob_size) == e->linetable_len &&
                           memcmp(lt + bhdr, e->linetable, e->linetable_len) == 0));
    } else {
        *rc = read_head(t, addr, h); /* a range could not be read: decode again */
    }
    free(content);
    return same;
}

static int decode_bytes(const pyf__offsets *o, const uint8_t *buf, size_t have,
                        uint8_t **out, uint32_t *outlen, size_t *need)
{
    if (have < o->bytes.ob_sval) {
        *need = (size_t)o->bytes.ob_sval;
        return PYF__EMORE;
    }
    int64_t n = (int64_t)pyf__ld64(buf + o->bytes.ob_size);
    if (n < 0 || n > (int64_t)LINETABLE_MAX)
        return PYF_EDEPTH;
    if (have < o->bytes.ob_sval + (size_t)n) {
        *need = (size_t)o->bytes.ob_sval + (size_t)n;
        return PYF__EMORE;
    }
    uint8_t *p = malloc(n ? (size_t)n : 1);
    if (p == NULL)
        return PYF_ENOMEM;
    memcpy(p, buf + o->bytes.ob_sval, (size_t)n);
    *out = p;
    *outlen = (uint32_t)n;
    return PYF_OK;
}

/* Finish one speculative read: decode, or read exactly what is needed
 * (*again: a read was made after the batch). */
static int finish_str(pyf_target *t, uint64_t addr, const uint8_t *buf,
                      size_t have, int status, char **out, bool *trunc,
                      const char *what, bool *again)
{
    size_t need = 0;
    int rc = PYF__EMORE;
    if (status == PYF_OK)
        rc = pyf__decode_str(&t->off, buf, have, t->opts.max_string, out,
                             trunc, &need);
    if (rc == PYF__EMORE) {
        *again = true;
        rc = pyf__read_str(t, addr, t->opts.max_string, out, trunc, what);
    }
    return rc;
}

static int finish_bytes(pyf_target *t, uint64_t addr, const uint8_t *buf,
                        size_t have, int status, uint8_t **out, uint32_t *len,
                        bool *again)
{
    size_t need = 0;
    int rc = PYF__EMORE;
    if (status == PYF_OK)
        rc = decode_bytes(&t->off, buf, have, out, len, &need);
    if (rc == PYF__EMORE) {
        *again = true;
        if (status != PYF_OK) {
            /* the speculative read may have run off a mapping */
            uint8_t hdr[256];
            size_t hl = (size_t)t->off.bytes.ob_sval;
            if (hl > sizeof hdr)
                return PYF_EOFFSETS;
            rc = pyf__read(t, addr, hdr, hl, "line table");
            if (rc != PYF_OK)
                return rc;
            rc = decode_bytes(&t->off, hdr, hl, out, len, &need);
            if (rc != PYF__EMORE)
                return rc;
        }
        uint8_t *big = malloc(need);
        if (big == NULL)
            return PYF_ENOMEM;
        rc = pyf__read(t, addr, big, need, "line table");
        if (rc == PYF_OK)
            rc = decode_bytes(&t->off, big, need, out, len, &need);
        if (rc == PYF__EMORE)
            rc = PYF_ECORRUPT;
        free(big);
    }
    return rc;
}

/* Is rc a failure to read (worth retrying next time) rather than data
 * that decodes badly? */
static bool transient(int rc)
{
    return rc == PYF_EFAULT || rc == PYF_EPERM || rc == PYF__EMORE ||
           rc == PYF_EIO || rc == PYF_ENOPROC;
}

/* In a running process: is the decode made from h (read first) the code
 * object's whole?  h2 is its header read after the strings; f2 (fsize
 * bytes, NULL when there is no frame to check) the frame that named it,
 * read with h2. */
static bool decode_held(const pyf__offsets *o, const code_head *h, const code_head *h2,
                        uint64_t addr, const uint8_t *f2)
{
    if (!head_alive(o, h) || !head_alive(o, h2) || h2->type != h->type ||
        h2->qualname != h->qualname || h2->filename != h->filename ||
        h2->linetable != h->linetable || h2->firstlineno != h->firstlineno ||
        h2->units != h->units || h2->version != h->version || h2->co_flags != h->co_flags)
        return false;
    return f2 == NULL || (pyf__ld64(f2 + pyf__frame_code_at(o)) & o->tag_mask) == addr;
}

static int decode_body(pyf_target *t, uint64_t addr, uint64_t frame_addr,
                       const code_head *h, pyf__code *e, bool *retry)
{
    *retry = false;
    const pyf__offsets *o = &t->off;
    memset(e, 0, sizeof *e);
    e->addr = addr;
    e->qualname_ptr = h->qualname;
    e->filename_ptr = h->filename;
    e->linetable_ptr = h->linetable;
    e->firstlineno = h->firstlineno;
    e->line_kind = o->line_kind;
    e->version = h->version;
    e->units = h->units;
    e->co_flags = h->co_flags;
    e->nlocalsplus = h->nlocalsplus >= 0 ? (uint32_t)h->nlocalsplus : 0;
    e->firsttraceable = h->firsttraceable >= 0 ? (uint32_t)h->firsttraceable : 0;
    e->owned_flags = owned_flags(h->co_flags);

    size_t shdr = (size_t)o->unicode.compactunicodeobject_size;
    size_t bhdr = (size_t)o->bytes.ob_sval;
    size_t hlen = head_len(t), fsize = (size_t)pyf__frame_size(o);
    if (shdr > 256 || bhdr > 256)
        return pyf__fail(t, PYF_EOFFSETS, "object headers are implausibly large");
    if (hlen == 0 || fsize > 4096)
        return PYF_EOFFSETS;
    /* A running process is checked after the strings are read (see the top
     * of this file): its header and frame again, in the same call. */
    bool verify = pyf__target_live(t);
    uint8_t qbuf[256 + STR_SPECULATIVE], fbuf[256 + STR_SPECULATIVE],
        lbuf[256 + LINETABLE_SPECULATIVE], hbuf[CODE_STRUCT_MAX], frbuf[4096];
    pyf_iovec iov[5] = {
        {h->qualname, qbuf, shdr + STR_SPECULATIVE},
        {h->filename, fbuf, shdr + STR_SPECULATIVE},
        {h->linetable, lbuf, bhdr + LINETABLE_SPECULATIVE},
        {addr, hbuf, hlen},
        {frame_addr, frbuf, fsize},
    };
    size_t niov = !verify ? 3 : frame_addr != 0 ? 5 : 4;
    int st[5];
    bool ok_ptr[3];
    for (int i = 0; i < 3; i++)
        ok_ptr[i] = iov[i].addr != 0 && iov[i].addr % 8 == 0;
    if (ok_ptr[0] && ok_ptr[1] && ok_ptr[2]) {
        pyf__readv(t, iov, niov, st);
    } else {
        for (size_t i = 0; i < niov; i++)
            st[i] = i >= 3 || ok_ptr[i] ? pyf__read_now(t, iov[i].addr, iov[i].dst,
                                                        iov[i].len)
                                        : PYF_ECORRUPT;
    }

    bool trunc = false, again = false;
    int rc = PYF_ECORRUPT;
    if (st[0] == PYF_OK)
        e->qualname_size = str_size(o, qbuf, iov[0].len, t->opts.max_string);
    if (st[1] == PYF_OK)
        e->filename_size = str_size(o, fbuf, iov[1].len, t->opts.max_string);
    if (ok_ptr[0])
        rc = finish_str(t, h->qualname, qbuf, iov[0].len, st[0], &e->qualname,
                        &trunc, "code object qualified name", &again);
    if (rc == PYF_ENOMEM)
        return rc;
    *retry |= transient(rc);
    if (rc != PYF_OK || e->qualname == NULL) {
        e->qualname = strdup("???");
        e->flags |= PYF_FRAME_CODE_UNREADABLE;
    }
    if (trunc)
        e->flags |= PYF_FRAME_NAME_TRUNCATED;

    trunc = false;
    rc = PYF_ECORRUPT;
    if (ok_ptr[1])
        rc = finish_str(t, h->filename, fbuf, iov[1].len, st[1], &e->filename,
                        &trunc, "code object file name", &again);
    if (rc == PYF_ENOMEM)
        return rc;
    *retry |= transient(rc);
    if (rc != PYF_OK || e->filename == NULL) {
        e->filename = strdup("???");
        e->flags |= PYF_FRAME_CODE_UNREADABLE;
    }
    if (trunc)
        e->flags |= PYF_FRAME_NAME_TRUNCATED;

    rc = PYF_ECORRUPT;
    if (ok_ptr[2])
        rc = finish_bytes(t, h->linetable, lbuf, iov[2].len, st[2],
                          &e->linetable, &e->linetable_len, &again);
    if (rc == PYF_ENOMEM)
        return rc;
    *retry |= transient(rc);
    if (rc == PYF_OK)
        e->no_lines = !pyf__linetable_has_lines(e->line_kind, e->linetable, e->linetable_len);
    if (rc != PYF_OK) {
        e->linetable = NULL;
        e->linetable_len = 0;
        e->flags |= PYF_FRAME_NO_LOCATION;
    }
    if (e->qualname == NULL || e->filename == NULL) {
        entry_free(e);
        return PYF_ENOMEM;
    }
    if (verify) {
        /* a string read after the batch: the header and frame after it */
        if (again)
            pyf__readv(t, iov + 3, niov - 3, st + 3);
        code_head h2;
        bool held = st[3] == PYF_OK && (niov < 5 || st[4] == PYF_OK);
        if (held) {
            parse_head(o, hbuf, &h2);
            held = decode_held(o, h, &h2, addr, niov == 5 ? frbuf : NULL);
        }
        /* A code object being made where a freed one was (CPython fills
         * its fields one by one) has the same header before and after,
         * and names the old one's freed strings: each string and table
         * read must have been alive too. */
        const uint8_t *objs[3] = {qbuf, fbuf, lbuf};
        for (int i = 0; i < 3 && held; i++)
            if (ok_ptr[i] && st[i] == PYF_OK)
                held = word_alive(o, pyf__ld64(objs[i]));
        if (!held) {
            t->io.stats.code_changed++;
            entry_free(e);
            return PYF__ESTALE;
        }
    }
    /* In a running process, a name read from a code object whose other
     * name could not be read may be a freed object's, or another's at the
     * same address: the code is shown as unreadable as a whole, never half
     * of it.  (A stopped process or a core keeps the part that reads.) */
    if (verify && (e->flags & PYF_FRAME_CODE_UNREADABLE) &&
        (strcmp(e->qualname, "???") != 0 || strcmp(e->filename, "???") != 0)) {
        free(e->qualname);
        free(e->filename);
        e->qualname = strdup("???");
        e->filename = strdup("???");
        if (e->qualname == NULL || e->filename == NULL) {
            entry_free(e);
            return PYF_ENOMEM;
        }
    }
    return PYF_OK;
}

/* In a running process a string or line table read again (past the
 * speculative reads) must be of now, not of the snapshot's start (the
 * prefetch): another object may have held that memory then, and the check
 * after the reads would not see it.  So nothing is served from the
 * prefetch while a code object is decoded there. */
static int decode_code(pyf_target *t, uint64_t addr, uint64_t frame_addr,
                       const code_head *h, pyf__code *e, bool *retry)
{
    if (!pyf__target_live(t))
        return decode_body(t, addr, frame_addr, h, e, retry);
    uint32_t paused = pyf__prefetch_pause(t);
    int rc = decode_body(t, addr, frame_addr, h, e, retry);
    pyf__prefetch_resume(t, paused);
    return rc;
}

const pyf__code *pyf__code_get(pyf_target *t, uint64_t addr, uint64_t frame_addr,
                               int *soft_err)
{
    *soft_err = PYF_OK;
    pyf__code *e = t->code.cache.last != NULL && t->code.cache.last->addr == addr
                       ? t->code.cache.last : cache_find(&t->code.cache, addr);
    bool need_check = !t->off.has_code_generation || !t->code.generation_known;
    if (e != NULL && (!need_check || e->checked_epoch == t->walk.epoch)) {
        t->io.stats.code_cache_hits++;
        t->code.cache.last = e;
        return e;
    }
    code_head h;
    int rc;
    /* without co_version (3.11), what the entry shows is read again too */
    bool held = e != NULL && t->off.code.co_version == PYF__ABSENT
                    ? head_and_content(t, e, addr, &h, &rc)
                    : (rc = read_head(t, addr, &h)) == PYF_OK;
    if (rc != PYF_OK) {
        *soft_err = rc;
        return NULL;
    }
    /* a running process's frame that names a freed code object is gone */
    if (pyf__target_live(t) && !head_alive(&t->off, &h)) {
        t->io.stats.code_changed++;
        *soft_err = PYF__ESTALE;
        return NULL;
    }
    if (e != NULL) {
        if (held && same_head(e, &h)) {
            e->checked_epoch = t->walk.epoch;
            t->io.stats.code_cache_hits++;
            return e;
        }
        t->io.stats.code_cache_invalidations++;
        cache_remove(&t->code.cache, e);
    }
    rc = check_code_type(t, h.type);
    if (rc != PYF_OK) {
        *soft_err = rc == PYF_ECORRUPT ? PYF_ENOTSUP : rc;
        if (rc == PYF_ECORRUPT)
            pyf__fail(t, PYF_ECORRUPT, "object at 0x%llx is not a code object",
                      (unsigned long long)addr);
        return NULL;
    }
    t->io.stats.code_cache_misses++;
    pyf__code fresh;
    bool retry;
    rc = decode_code(t, addr, frame_addr, &h, &fresh, &retry);
    if (rc != PYF_OK) {
        *soft_err = rc;
        return NULL;
    }
    fresh.serial = ++t->code.serial;
    if (retry) {
        /* Part of it could not be read this time: use it for this frame
         * only, so a later snapshot reads it again. */
        entry_free(&t->code.scratch);
        t->code.scratch = fresh;
        return &t->code.scratch;
    }
    fresh.checked_epoch = t->walk.epoch;
    e = cache_insert(&t->code.cache, &fresh);
    if (e == NULL) {
        entry_free(&fresh);
        *soft_err = PYF_ENOMEM;
        return NULL;
    }
    return e;
}

/* ---- thread-local bytecode (free-threaded 3.14+) ---------------------------
 * co_tlbc points at a _PyCodeArray { Py_ssize_t size; char *entries[]; }
 * whose entries[0] is the main copy (co_code_adaptive).  The array is
 * replaced when it grows and its slots fill, neither of which moves
 * tlbc_generation (CPython gh-157660), so it is read afresh in every
 * snapshot: the pointer and size once per code object, an entry per use. */

#define TLBC_MAX_ENTRIES 2048 /* as CPython's _remote_debugging */
#define TLBC_ENTRIES_OFFSET 8 /* offsetof(_PyCodeArray, entries) */

/* The array of code e (at exe) in this snapshot: *arr and its size, false
 * when unreadable or implausible. */
static bool tlbc_array(pyf_target *t, pyf__code *e, uint64_t exe, uint64_t *arr,
                       int64_t *size, uint32_t *failures)
{
    if (e->tlbc_epoch != t->walk.epoch || e->tlbc_epoch == 0) {
        /* what was read is kept for this snapshot; a failed read is not
         * (a later walk in it, e.g. the frame cache's, reads again) */
        uint64_t a = 0, n = 0;
        e->tlbc_arr = 0;
        e->tlbc_size = 0;
        if (pyf__read_quiet(t, exe + t->off.code.co_tlbc, &a, 8) != PYF_OK) {
            ++*failures;
            return false;
        }
        if (a != 0 && a % 8 == 0) {
            if (pyf__read_quiet(t, a, &n, 8) != PYF_OK) {
                ++*failures;
                return false;
            }
            if ((int64_t)n > 0 && n <= TLBC_MAX_ENTRIES) {
                e->tlbc_arr = a;
                e->tlbc_size = (int64_t)n;
            }
        }
        e->tlbc_epoch = t->walk.epoch;
    }
    *arr = e->tlbc_arr;
    *size = e->tlbc_size;
    return *arr != 0;
}

int64_t pyf__frame_instr(pyf_target *t, const uint8_t *f, uint64_t exe, uint64_t ip,
                         const pyf__code *code, uint32_t *failures)
{
    const pyf__offsets *o = &t->off;
    uint64_t base = exe + o->code.co_code_adaptive;
    if (!o->has_tlbc)
        return pyf__code_index(ip, base);
    int32_t idx = (int32_t)pyf__ld32(f + o->frame.tlbc_index);
    if (idx != 0) { /* entries[0] is the main copy: no reads */
        uint64_t arr, entry = 0;
        int64_t size;
        /* code entries are the target's own (the cache's or its scratch) */
        if (tlbc_array(t, (pyf__code *)(uintptr_t)code, exe, &arr, &size, failures) &&
            idx > 0 && idx < size) {
            if (pyf__read_quiet(t, arr + TLBC_ENTRIES_OFFSET + 8 * (uint64_t)idx, &entry, 8) !=
                PYF_OK) {
                ++*failures;
                entry = 0;
            }
            if (entry != 0)
                base = entry;
        }
    }
    int64_t instr = pyf__code_index(ip, base);
    /* outside the copy taken (a copy we could not name, or corruption):
     * no location rather than a line of some other instruction */
    if (code->units != 0 && instr >= (int64_t)code->units)
        return INT64_MAX;
    return instr;
}
