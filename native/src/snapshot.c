/*
 * snapshot.c - pyf_snapshot_take: collect the walk into flat arrays whose
 * strings live in an arena owned by the snapshot, so a snapshot outlives
 * every cache and stays valid until pyf_snapshot_free.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ARENA_BLOCK (64u * 1024u)

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    char data[];
} arena_block;

typedef struct snap {
    pyf_snapshot pub; /* first: the public pointer is the snap pointer */
    pyf_interp *interps;
    pyf_thread *threads;
    pyf_frame *frames;
    uint32_t cap_i, cap_t, cap_f;
    arena_block *arena;
    /* per-snapshot strings of each code object: code_addr -> index in names */
    pyf__addrmap name_index;
    struct named { uint64_t code; const char *fn, *file; } *names;
    uint32_t cap_n, nnames;
    pyf_target *t;
} snap;

/* len bytes owned by the snapshot, 8-aligned. */
static void *arena_alloc(snap *s, size_t len)
{
    len = (len + 7) & ~(size_t)7;
    arena_block *b = s->arena;
    if (b == NULL || b->cap - b->used < len) {
        size_t cap = len > ARENA_BLOCK ? len : ARENA_BLOCK;
        arena_block *nb = malloc(sizeof *nb + cap);
        if (nb == NULL)
            return NULL;
        nb->next = b;
        nb->used = 0;
        nb->cap = cap;
        s->arena = nb;
        b = nb;
    }
    char *p = b->data + b->used;
    b->used += len;
    return p;
}

static char *arena_dup(snap *s, const char *str)
{
    size_t len = strlen(str) + 1;
    char *p = arena_alloc(s, len);
    if (p != NULL)
        memcpy(p, str, len);
    return p;
}

static bool grow(void **v, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    uint32_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > UINT32_MAX / 2)
            return false;
        ncap *= 2;
    }
    void *nv = realloc(*v, (size_t)ncap * elem);
    if (nv == NULL)
        return false;
    *v = nv;
    *cap = ncap;
    return true;
}

static struct named *names_get(snap *s, uint64_t code, const pyf__code *c)
{
    bool added;
    uint64_t *slot = pyf__addrmap_put(&s->name_index, code, &added);
    if (slot == NULL)
        return NULL;
    if (!added)
        return &s->names[*slot];
    const char *fn = arena_dup(s, c->qualname);
    const char *file = arena_dup(s, c->filename);
    if (fn == NULL || file == NULL ||
        !grow((void **)&s->names, &s->cap_n, s->nnames + 1, sizeof *s->names)) {
        pyf__addrmap_remove(&s->name_index, code);
        return NULL;
    }
    *slot = s->nnames;
    s->names[s->nnames] = (struct named){code, fn, file};
    return &s->names[s->nnames++];
}

static int on_interp(void *ctx, uint64_t addr, int64_t id)
{
    snap *s = ctx;
    if (!grow((void **)&s->interps, &s->cap_i, s->pub.ninterps + 1,
              sizeof *s->interps))
        return PYF_ENOMEM;
    s->interps[s->pub.ninterps++] =
        (pyf_interp){addr, id, s->pub.nthreads, 0};
    return PYF_OK;
}

static int on_thread(void *ctx, const pyf_thread *th)
{
    snap *s = ctx;
    if (!grow((void **)&s->threads, &s->cap_t, s->pub.nthreads + 1,
              sizeof *s->threads))
        return PYF_ENOMEM;
    pyf_thread *nt = &s->threads[s->pub.nthreads];
    *nt = *th;
    nt->first_frame = s->pub.nframes;
    nt->nframes = 0;
    nt->failure = NULL;
    s->pub.nthreads++;
    if (s->pub.ninterps > 0)
        s->interps[s->pub.ninterps - 1].nthreads++;
    return PYF_OK;
}

static int on_thread_end(void *ctx, int rc, const pyf_failure *f)
{
    snap *s = ctx;
    pyf_thread *th = &s->threads[s->pub.nthreads - 1];
    th->error = rc;
    if (rc == PYF_OK) {
        th->flags |= PYF_THREAD_COMPLETE;
        return PYF_OK;
    }
    pyf_failure *copy = arena_alloc(s, sizeof *copy);
    if (copy == NULL)
        return PYF_ENOMEM;
    *copy = *f;
    copy->struct_size = 0; /* the library's copy, not a caller's */
    copy->code = rc;
    th->failure = copy;
    return PYF_OK;
}

static int on_frame(void *ctx, uint64_t frame_addr, uint64_t code_addr,
                    const pyf__code *code, const pyf__location *loc,
                    uint32_t flags)
{
    snap *s = ctx;
    if (!grow((void **)&s->frames, &s->cap_f, s->pub.nframes + 1,
              sizeof *s->frames))
        return PYF_ENOMEM;
    pyf_frame *f = &s->frames[s->pub.nframes];
    memset(f, 0, sizeof *f);
    f->frame_addr = frame_addr;
    f->code_addr = code_addr;
    if (code != NULL) {
        struct named *nm = names_get(s, code_addr, code);
        if (nm == NULL)
            return PYF_ENOMEM;
        f->function = nm->fn;
        f->filename = nm->file;
    } else {
        f->function = "???";
        f->filename = "???";
    }
    f->line = loc->line;
    f->end_line = loc->end_line;
    f->column = loc->column;
    f->end_column = loc->end_column;
    f->flags = flags;
    s->pub.nframes++;
    s->threads[s->pub.nthreads - 1].nframes++;
    s->t->stats.frames++;
    return PYF_OK;
}

static void on_mark_entry(void *ctx)
{
    snap *s = ctx;
    if (s->pub.nframes > 0)
        s->frames[s->pub.nframes - 1].flags |= PYF_FRAME_ENTRY_FROM_C;
}

void pyf_snapshot_free(pyf_snapshot *pub)
{
    if (pub == NULL)
        return;
    snap *s = (snap *)pub;
    free(s->interps);
    free(s->threads);
    free(s->frames);
    free(s->names);
    pyf__addrmap_free(&s->name_index);
    for (arena_block *b = s->arena; b != NULL;) {
        arena_block *n = b->next;
        free(b);
        b = n;
    }
    free(s);
}

int pyf_snapshot_take(pyf_target *t, const pyf_snapshot_request *req,
                      pyf_snapshot **out)
{
    if (out != NULL)
        *out = NULL;
    if (t == NULL || out == NULL)
        return PYF_EINVAL;
    pyf_snapshot_request local;
    if (req != NULL) {
        int rc = pyf__struct_in(req, PYF_SNAPSHOT_REQUEST_SIZE_V0, &local,
                                sizeof local, "pyf_snapshot_request", t->fail.detail,
                                sizeof t->fail.detail);
        if (rc != PYF_OK)
            return pyf__fail(t, rc, "%s", t->fail.detail);
        req = &local;
    }
    snap *s = calloc(1, sizeof *s);
    if (s == NULL)
        return PYF_ENOMEM;
    s->t = t;
    t->epoch++;
    t->stats.snapshots++;
    pyf__fail(t, PYF_OK, "%s", "");
    pyf__sink sink = {s, on_frame, on_mark_entry, on_thread, on_thread_end,
                      on_interp};
    int rc = pyf__walk_all(t, req, &sink);
    if (rc != PYF_OK) {
        pyf_snapshot_free(&s->pub);
        if (rc == PYF_ENOMEM)
            pyf__fail(t, rc, "out of memory while building the snapshot");
        return rc;
    }
    free(s->names);
    s->names = NULL;
    s->cap_n = s->nnames = 0;
    pyf__addrmap_free(&s->name_index);
    s->pub.interps = s->interps;
    s->pub.threads = s->threads;
    s->pub.frames = s->frames;
    s->pub.interp_size = sizeof(pyf_interp);
    s->pub.thread_size = sizeof(pyf_thread);
    s->pub.frame_size = sizeof(pyf_frame);
    *out = &s->pub;
    return PYF_OK;
}
