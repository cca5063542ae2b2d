/*
 * snapshot.c - pyf_snapshot_take: collect the walk into flat arrays.  Each
 * frame is interned in the target's frame table (table.c), whose strings
 * the frames point to; the snapshot holds a reference to the table, so it
 * stays valid until pyf_snapshot_free whatever the target does.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "api.h"
#include "cache.h"
#include "code.h"
#include "containers.h"
#include "reads.h"
#include "replay.h"
#include "snapshot.h"
#include "table.h"
#include "target.h"
#include "tasks.h"
#include "thread_facts.h"
#include "walk.h"

/* Past these, the next snapshot starts a new table (the old one lives on
 * while snapshots hold it). */
#define TABLE_MAX_RECORDS (1u << 17)
#define TABLE_MAX_KEYS (1u << 18)
#define TABLE_MAX_STRING_BYTES (32u << 20)

typedef struct snap {
    pyf_snapshot pub; /* first: the public pointer is the snap pointer */
    pyf_interp *interps;
    pyf_thread *threads;
    pyf_frame *frames;        /* made from frame_keys once the walk is done */
    uint32_t *frame_keys;     /* per frame: its key in the table */
    uint32_t cap_i, cap_t, cap_f, cap_k;
    uint32_t last_record;     /* the record of the most recent frame */
    pyf__arena arena;         /* failure copies */
    pyf__table *table;        /* referenced once the snapshot is made */
    uint32_t nrecords, nkeys; /* the table's counts when it was made */
    const uint32_t *guess;    /* the last snapshot's keys, when of this table */
    /* the current thread: its first frame, and where its frames' keys were
     * in the last snapshot (guess[g_first, g_first + g_n)) */
    uint32_t t_first, g_first, g_n;
    bool g_found;             /* the thread state was in the last snapshot */
    bool in_tasks;            /* frames of asyncio tasks, not of a thread */
    bool tasks_asked;         /* PYF_SNAP_TASKS */
    uint64_t *entries;        /* PYF_SNAP_ENTRIES: per frame, its entry frame or 0 */
    uint32_t cap_e;
    bool want_entries;
    bool want_facts;          /* PYF_SNAP_THREAD_FACTS */
    pyf_thread_facts *facts;  /* per thread, in the arena */
    pyf_values *fact_values;  /* their exceptions' trees, in the arena */
    pyf__tasks tasks;
    pyf_target *t;
} snap;

/* The target's table, a new one when the old no longer serves: flushed,
 * the code cache was emptied since it was made (its records name decodes
 * that are gone), or it has grown past its bounds. */
static pyf__table *current_table(pyf_target *t)
{
    pyf__table *tb = t->walk.table;
    if (tb != NULL && (tb->code_clears != t->code.cache.clears ||
                       tb->nrecords > TABLE_MAX_RECORDS ||
                       tb->nkeys > TABLE_MAX_KEYS ||
                       tb->strings.bytes > TABLE_MAX_STRING_BYTES)) {
        pyf__table_unref(tb);
        t->walk.table = tb = NULL;
    }
    if (tb == NULL)
        t->walk.table = tb = pyf__table_new(++t->walk.table_ids, t->code.cache.clears);
    return tb;
}

static int on_interp(void *ctx, uint64_t addr, int64_t id)
{
    snap *s = ctx;
    /* the walk has just checked the code objects' generation */
    if (s->pub.nframes == 0) {
        pyf_target *t = s->t;
        if ((s->table = current_table(t)) == NULL)
            return PYF_ENOMEM;
        bool same = t->walk.prev_table == s->table->id;
        s->guess = same ? t->walk.prev_keys : NULL;
        /* room for as many frames as last time */
        if (same && !pyf__grow((void **)&s->frame_keys, &s->cap_k, t->walk.prev_n,
                               sizeof *s->frame_keys))
            return PYF_ENOMEM;
    }
    if (!pyf__grow((void **)&s->interps, &s->cap_i, s->pub.ninterps + 1,
              sizeof *s->interps))
        return PYF_ENOMEM;
    s->interps[s->pub.ninterps++] =
        (pyf_interp){addr, id, s->pub.nthreads, 0};
    return PYF_OK;
}

/* Where the thread state at tstate_addr, the index-th thread of this
 * snapshot, had its frames last time: the same index first (threads come
 * in the same order while none starts or ends), else a short search. */
#define GUESS_SEARCH_MAX 256u
static void find_guesses(snap *s, uint64_t tstate_addr, uint32_t index)
{
    const pyf_target *t = s->t;
    s->t_first = s->pub.nframes;
    s->g_first = s->g_n = 0;
    s->g_found = false;
    if (s->guess == NULL)
        return;
    const pyf__prev_thread *p = t->walk.prev_threads;
    uint32_t n = t->walk.prev_nthreads, i = index;
    if (i >= n || p[i].tstate_addr != tstate_addr) {
        for (i = 0; i < n && i < GUESS_SEARCH_MAX; i++)
            if (p[i].tstate_addr == tstate_addr)
                break;
        if (i == n || i == GUESS_SEARCH_MAX)
            return;
    }
    if (p[i].first > t->walk.prev_n || p[i].n > t->walk.prev_n - p[i].first)
        return; /* cannot happen: remember_keys wrote both */
    s->g_first = p[i].first;
    s->g_n = p[i].n;
    s->g_found = true;
}

static int on_thread(void *ctx, const pyf_thread *th)
{
    snap *s = ctx;
    if (!pyf__grow((void **)&s->threads, &s->cap_t, s->pub.nthreads + 1,
              sizeof *s->threads))
        return PYF_ENOMEM;
    pyf_thread *nt = &s->threads[s->pub.nthreads];
    *nt = *th;
    nt->first_frame = s->pub.nframes;
    nt->nframes = 0;
    nt->failure = NULL;
    nt->flags &= ~PYF_THREAD_SAME_FRAMES;
    find_guesses(s, th->tstate_addr, s->pub.nthreads);
    s->pub.nthreads++;
    if (s->pub.ninterps > 0)
        s->interps[s->pub.ninterps - 1].nthreads++;
    return PYF_OK;
}

static int on_thread_end(void *ctx, int rc, const pyf_failure *f, uint32_t more)
{
    snap *s = ctx;
    pyf_thread *th = &s->threads[s->pub.nthreads - 1];
    th->error = rc;
    th->more_frames = more;
    if (s->g_found && th->nframes == s->g_n &&
        (th->nframes == 0 || memcmp(s->frame_keys + th->first_frame, s->guess + s->g_first,
                                    th->nframes * sizeof *s->frame_keys) == 0))
        th->flags |= PYF_THREAD_SAME_FRAMES;
    if (rc == PYF_OK) {
        th->flags |= PYF_THREAD_COMPLETE;
        return PYF_OK;
    }
    pyf_failure *copy = pyf__arena_alloc(&s->arena, sizeof *copy);
    if (copy == NULL)
        return PYF_ENOMEM;
    *copy = *f;
    copy->struct_size = 0; /* the library's copy, not a caller's */
    copy->code = rc;
    th->failure = copy;
    return PYF_OK;
}

static int on_frame(void *ctx, uint64_t frame_addr, uint64_t code_addr,
                    const pyf__code *code, int64_t instr, uint32_t flags)
{
    snap *s = ctx;
    uint32_t n = s->pub.nframes;
    if (!pyf__grow((void **)&s->frame_keys, &s->cap_k, n + 1, sizeof *s->frame_keys))
        return PYF_ENOMEM;
    uint32_t rec, key, depth = n - s->t_first;
    if (depth < s->g_n &&
        pyf__table_key_is(s->table, s->guess[s->g_first + depth], frame_addr, code_addr,
                          code, instr, flags)) {
        key = s->guess[s->g_first + depth]; /* the same frame as last time */
        rec = s->table->keys[key].record;
    } else {
        int rc = pyf__table_record(s->table, code_addr, code, instr, flags, &rec);
        if (rc == PYF_OK)
            rc = pyf__table_key(s->table, frame_addr, rec, &key);
        if (rc != PYF_OK)
            return rc;
    }
    s->frame_keys[n] = key;
    s->last_record = rec;
    if (s->want_entries) {
        if (!pyf__grow((void **)&s->entries, &s->cap_e, n + 1, sizeof *s->entries))
            return PYF_ENOMEM;
        s->entries[n] = 0;
    }
    s->pub.nframes = n + 1;
    if (!s->in_tasks)
        s->threads[s->pub.nthreads - 1].nframes++;
    s->t->io.stats.frames++;
    s->t->io.stats.frames_from_memory++;
    return PYF_OK;
}

/* Frames known by their keys (from the frame cache), appended at once. */
static int append_cached(snap *s, const uint32_t *keys, uint32_t k)
{
    uint32_t n = s->pub.nframes;
    if (k == 0)
        return PYF_OK;
    if (k > UINT32_MAX - n ||
        !pyf__grow((void **)&s->frame_keys, &s->cap_k, n + k, sizeof *s->frame_keys))
        return PYF_ENOMEM;
    memcpy(s->frame_keys + n, keys, k * sizeof *keys);
    if (s->want_entries) { /* not kept by the cache: unknown */
        if (!pyf__grow((void **)&s->entries, &s->cap_e, n + k, sizeof *s->entries))
            return PYF_ENOMEM;
        memset(s->entries + n, 0, k * sizeof *s->entries);
    }
    s->last_record = s->table->keys[keys[k - 1]].record;
    s->pub.nframes = n + k;
    s->threads[s->pub.nthreads - 1].nframes += k;
    s->t->io.stats.frames += k;
    return PYF_OK;
}

static int on_mark_entry(void *ctx, uint64_t entry_addr);

static void on_reverse(void *ctx, uint32_t first)
{
    snap *s = ctx;
    for (uint32_t i = first, j = s->pub.nframes - 1; i < j; i++, j--) {
        uint32_t k = s->frame_keys[i];
        s->frame_keys[i] = s->frame_keys[j];
        s->frame_keys[j] = k;
    }
}

static void on_rollback(void *ctx)
{
    snap *s = ctx;
    pyf_thread *th = &s->threads[s->pub.nthreads - 1];
    s->t->io.stats.frames -= th->nframes;
    s->pub.nframes = th->first_frame;
    th->nframes = 0;
}

static bool on_located(void *ctx)
{
    const snap *s = ctx;
    return !(s->table->records[s->last_record].info.flags & PYF_FRAME_NO_LOCATION);
}

/* The rest of the thread's stack from the frame cache. */
static int on_keys(void *ctx, const uint32_t *keys, uint32_t n, bool entry_from_c)
{
    int rc = entry_from_c ? on_mark_entry(ctx, 0) : PYF_OK;
    return rc == PYF_OK ? append_cached(ctx, keys, n) : rc;
}

/* Past keep_frames: the entry of the eval call running the thread's last
 * frame kept, whose run goes on among the frames only counted.  Only its
 * entry is known: the frame itself was not entered from C. */
static int on_cut_entry(void *ctx, uint64_t entry_addr)
{
    snap *s = ctx;
    const pyf_thread *th = &s->threads[s->pub.nthreads - 1];
    if (s->want_entries && th->nframes > 0 && s->entries[s->pub.nframes - 1] == 0)
        s->entries[s->pub.nframes - 1] = entry_addr;
    return PYF_OK;
}

static int on_mark_entry(void *ctx, uint64_t entry_addr)
{
    snap *s = ctx;
    if (s->pub.nframes == 0)
        return PYF_OK;
    uint32_t n = s->pub.nframes - 1;
    const pyf_frame_key *f = &s->table->keys[s->frame_keys[n]];
    /* the first entry under the frame: the one its eval call pushed (3.15
     * then has the thread's base frame, in no C frame) */
    if (s->want_entries && s->entries[n] == 0)
        s->entries[n] = entry_addr;
    if (s->table->records[f->record].info.flags & PYF_FRAME_ENTRY_FROM_C)
        return PYF_OK; /* marked already */
    uint64_t frame_addr = f->frame_addr; /* f moves when the table grows */
    uint32_t rec, key, depth = n - s->t_first;
    if (depth < s->g_n &&
        pyf__table_key_is_with(s->table, s->guess[s->g_first + depth], frame_addr,
                               s->last_record, PYF_FRAME_ENTRY_FROM_C)) {
        key = s->guess[s->g_first + depth];
        rec = s->table->keys[key].record;
    } else {
        int rc = pyf__table_record_with(s->table, s->last_record,
                                        PYF_FRAME_ENTRY_FROM_C, &rec);
        if (rc == PYF_OK)
            rc = pyf__table_key(s->table, frame_addr, rec, &key);
        if (rc != PYF_OK)
            return rc;
    }
    s->frame_keys[n] = key;
    s->last_record = rec;
    return PYF_OK;
}

/* Keep this snapshot's keys as the guesses of the next one. */
static void remember_keys(pyf_target *t, const snap *s)
{
    uint32_t n = s->pub.nframes, nt = s->pub.nthreads;
    t->walk.prev_table = 0;
    if (!pyf__grow((void **)&t->walk.prev_keys, &t->walk.prev_cap, n, sizeof *t->walk.prev_keys) ||
        !pyf__grow((void **)&t->walk.prev_threads, &t->walk.prev_cap_threads, nt,
                   sizeof *t->walk.prev_threads))
        return; /* no guesses next time */
    if (n > 0)
        memcpy(t->walk.prev_keys, s->frame_keys, n * sizeof *t->walk.prev_keys);
    for (uint32_t i = 0; i < nt; i++)
        t->walk.prev_threads[i] = (pyf__prev_thread){s->threads[i].tstate_addr,
                                                s->threads[i].first_frame,
                                                s->threads[i].nframes};
    t->walk.prev_n = n;
    t->walk.prev_nthreads = nt;
    t->walk.prev_table = s->table->id;
    t->walk.prev_epoch = t->walk.epoch;
}

void pyf_snapshot_free(pyf_snapshot *pub)
{
    if (pub == NULL)
        return;
    snap *s = (snap *)pub;
    free(s->interps);
    free(s->threads);
    free(s->frames);
    free(s->frame_keys);
    free(s->entries);
    pyf__arena_free(&s->arena);
    pyf__tasks_free(&s->tasks);
    pyf__table_unref(s->table);
    free(s);
}

/* The frames of the snapshot, from its keys. */
static int make_frames(snap *s)
{
    uint32_t n = s->pub.nframes;
    if (n > 0 && !pyf__grow((void **)&s->frames, &s->cap_f, n, sizeof *s->frames))
        return PYF_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        s->frames[i] = pyf__table_frame(s->table, s->frame_keys[i]);
    s->pub.frames = s->frames;
    return PYF_OK;
}

/* A snapshot freed by pyf_snapshot_take_copy, which had no failure and no
 * task: its arrays are kept for the next snapshot of the target (one
 * spare at most), the rest is released. */
static void recycle(pyf_target *t, snap *s)
{
    pyf__table_unref(s->table);
    pyf__arena_free(&s->arena);
    pyf__tasks_free(&s->tasks);
    pyf__snapshot_spare_free(t);
    snap keep = *s;
    memset(s, 0, sizeof *s);
    s->interps = keep.interps;
    s->threads = keep.threads;
    s->frames = keep.frames;
    s->frame_keys = keep.frame_keys;
    s->entries = keep.entries;
    s->cap_i = keep.cap_i;
    s->cap_t = keep.cap_t;
    s->cap_f = keep.cap_f;
    s->cap_k = keep.cap_k;
    s->cap_e = keep.cap_e;
    t->walk.spare_snap = s;
}

void pyf__snapshot_spare_free(pyf_target *t)
{
    if (t->walk.spare_snap != NULL) {
        snap *s = t->walk.spare_snap;
        t->walk.spare_snap = NULL;
        pyf_snapshot_free(&s->pub);
    }
}

/* The caller's request normalised into *local (pyf__struct_in); *out is
 * local, or NULL when the caller gave none. */
static int request_in(pyf_target *t, const pyf_snapshot_request *req,
                      pyf_snapshot_request *local, const pyf_snapshot_request **out)
{
    *out = NULL;
    if (req == NULL)
        return PYF_OK;
    int rc = pyf__struct_in(req, PYF_SNAPSHOT_REQUEST_SIZE_V0, local, sizeof *local,
                            "pyf_snapshot_request", t->io.fail.detail, sizeof t->io.fail.detail);
    if (rc != PYF_OK)
        return pyf__fail(t, rc, "%s", t->io.fail.detail);
    *out = local;
    return PYF_OK;
}

/* pyf_snapshot_take but the frames (make_frames), of a request
 * request_in made (or NULL). */
static int take_in(pyf_target *t, const pyf_snapshot_request *req, snap **out)
{
    *out = NULL;
    snap *s = t->walk.spare_snap;
    t->walk.spare_snap = NULL;
    if (s == NULL && (s = calloc(1, sizeof *s)) == NULL)
        return PYF_ENOMEM;
    s->t = t;
    s->want_entries = req != NULL && (req->flags & PYF_SNAP_ENTRIES);
    s->want_facts = req != NULL && (req->flags & PYF_SNAP_THREAD_FACTS);
    s->facts = NULL;
    s->fact_values = NULL;
    t->walk.epoch++;
    t->io.stats.snapshots++;
    pyf__failure_clear(&t->io.fail);
    pyf__sink sink = {s, on_frame, on_mark_entry, on_keys, on_rollback,
                      on_located, on_thread, on_thread_end, on_interp, on_reverse,
                      on_cut_entry};
    if (!t->walk.prefetch.active) /* else begun by pyf__replay_try */
        pyf__prefetch_begin(t);
    int rc = pyf__walk_all(t, req, &sink);
    if (rc == PYF_OK && req != NULL && (req->flags & PYF_SNAP_GIL)) /* with the walk's reads */
        pyf__thread_gil_mark(t, s->interps, s->pub.ninterps, s->threads, s->pub.nthreads);
    pyf__prefetch_end(t);
    if (rc == PYF_OK && s->table == NULL && (s->table = current_table(t)) == NULL)
        rc = PYF_ENOMEM;
    if (rc == PYF_OK && req != NULL && (req->flags & PYF_SNAP_TASKS)) {
        /* after the threads (and outside their prefetch): every task */
        s->tasks_asked = true;
        s->in_tasks = true;
        s->g_n = 0;
        s->t_first = s->pub.nframes;
        rc = pyf__tasks_read(t, &sink, &s->pub.nframes, &s->arena, &s->tasks);
        if (rc != PYF_OK)
            pyf__fail(t, rc, "out of memory while reading the asyncio tasks");
    }
    if (rc == PYF_OK && s->want_facts) {
        /* after the threads (and outside their prefetch): each one's name,
         * GIL state and exception */
        bool pure = false;
        pyf__readlog_begin(t);
        rc = pyf__thread_facts_read(t, s->interps, s->pub.ninterps, s->threads,
                                    s->pub.nthreads, &s->arena, &s->facts, &s->fact_values,
                                    &pure);
        pyf__readlog_end(t, pure);
        if (rc != PYF_OK)
            pyf__fail(t, rc, "out of memory while reading the threads' facts");
    }
    if (rc != PYF_OK) {
        s->table = NULL; /* not referenced yet */
        pyf_snapshot_free(&s->pub);
        if (rc == PYF_ENOMEM)
            pyf__fail(t, rc, "out of memory while building the snapshot");
        return rc;
    }
    pyf__table_ref(s->table);
    s->nrecords = s->table->nrecords;
    s->nkeys = s->table->nkeys;
    remember_keys(t, s);
    if (t->frame_cache.n > 0 && (req == NULL || !(req->flags & PYF_SNAP_ONE_THREAD)))
        pyf__cache_sweep(t);
    s->pub.interps = s->interps;
    s->pub.threads = s->threads;
    s->pub.interp_size = sizeof(pyf_interp);
    s->pub.thread_size = sizeof(pyf_thread);
    s->pub.frame_size = sizeof(pyf_frame);
    /* a broken thread's failure is its own (pyf_thread.failure): the call
     * succeeded, and pyf_target_failure says so */
    pyf__failure_clear(&t->io.fail);
    *out = s;
    return PYF_OK;
}

static int take(pyf_target *t, const pyf_snapshot_request *req, snap **out)
{
    pyf_snapshot_request local;
    *out = NULL;
    int rc = request_in(t, req, &local, &req);
    return rc == PYF_OK ? take_in(t, req, out) : rc;
}

static int finish(pyf_target *t, snap *s, pyf_snapshot **out)
{
    if (make_frames(s) != PYF_OK) {
        pyf_snapshot_free(&s->pub);
        return pyf__fail(t, PYF_ENOMEM, "out of memory while building the snapshot");
    }
    *out = &s->pub;
    return PYF_OK;
}

int pyf_snapshot_take(pyf_target *t, const pyf_snapshot_request *req,
                      pyf_snapshot **out)
{
    if (out != NULL)
        *out = NULL;
    if (t == NULL || out == NULL)
        return PYF_EINVAL;
    snap *s;
    int rc = take(t, req, &s);
    return rc == PYF_OK ? finish(t, s, out) : rc;
}

/* ---- for the sampler (sample.c) ------------------------------------------ */

int pyf__snapshot_take_bare(pyf_target *t, const pyf_snapshot_request *req,
                            pyf_snapshot **out)
{
    snap *s;
    int rc = take(t, req, &s);
    *out = rc == PYF_OK ? &s->pub : NULL;
    return rc;
}

int pyf__snapshot_make_frames(pyf_target *t, pyf_snapshot *pub)
{
    if (make_frames((snap *)pub) != PYF_OK)
        return pyf__fail(t, PYF_ENOMEM, "out of memory while building the snapshot");
    return PYF_OK;
}

void pyf__snapshot_recycle(pyf_target *t, pyf_snapshot *pub)
{
    recycle(t, (snap *)pub);
}

int pyf_snapshot_table(const pyf_snapshot *pub, pyf_frame_table *out)
{
    if (pub == NULL || out == NULL)
        return PYF_EINVAL;
    const snap *s = (const snap *)pub;
    const pyf__table *tb = s->table;
    /* the counts as of this snapshot: the table may have grown since */
    pyf_frame_table ft = {
        .struct_size = sizeof ft,
        .nframes = pub->nframes,
        .table_id = tb->id,
        .records = tb->records,
        .keys = tb->keys,
        .frame_keys = s->frame_keys,
        .nrecords = s->nrecords,
        .nkeys = s->nkeys,
        .record_size = sizeof(pyf_record),
        .key_size = sizeof(pyf_frame_key),
    };
    return pyf__struct_out(out, PYF_FRAME_TABLE_SIZE_V0, &ft, sizeof ft);
}

int pyf_snapshot_tasks(const pyf_snapshot *pub, pyf_task_list *out)
{
    if (pub == NULL || out == NULL)
        return PYF_EINVAL;
    const snap *s = (const snap *)pub;
    static const pyf_failure not_asked = {
        .code = PYF_ENOTSUP,
        .detail = "the snapshot was taken without PYF_SNAP_TASKS",
    };
    pyf_task_list tl = {
        .struct_size = sizeof tl,
        .status = s->tasks_asked ? s->tasks.status : PYF_ENOTSUP,
        .tasks = s->tasks.v,
        .awaited_by = s->tasks.awaited,
        .ntasks = s->tasks.n,
        .nawaited_by = s->tasks.nawaited,
        .task_size = sizeof(pyf_task),
        .list_error = s->tasks.list_error,
        .failure = s->tasks_asked ? s->tasks.failure : &not_asked,
    };
    return pyf__struct_out(out, PYF_TASK_LIST_SIZE_V0, &tl, sizeof tl);
}

/* A per-frame or per-thread array the request asked for (asked), or
 * PYF_ENOTSUP with *out NULL. */
static int asked_array(const pyf_snapshot *pub, void *out, bool asked, const void *array)
{
    if (out == NULL)
        return PYF_EINVAL;
    const void *p = pub != NULL && asked ? array : NULL;
    memcpy(out, &p, sizeof p); /* *out, a pointer to const data */
    return pub == NULL ? PYF_EINVAL : asked ? PYF_OK : PYF_ENOTSUP;
}

int pyf_snapshot_entries(const pyf_snapshot *pub, const uint64_t **out)
{
    const snap *s = (const snap *)pub;
    return asked_array(pub, out, s != NULL && s->want_entries, s != NULL ? s->entries : NULL);
}

int pyf_snapshot_thread_facts(const pyf_snapshot *pub, const pyf_thread_facts **out)
{
    const snap *s = (const snap *)pub;
    return asked_array(pub, out, s != NULL && s->want_facts, s != NULL ? s->facts : NULL);
}

int pyf_snapshot_fact_values(const pyf_snapshot *pub, const pyf_values **out)
{
    const snap *s = (const snap *)pub;
    return asked_array(pub, out, s != NULL && s->want_facts,
                       s != NULL ? s->fact_values : NULL);
}

/* ---- one call for a binding ---------------------------------------------- */

int pyf_snapshot_take_copy(pyf_target *t, pyf_snapshot_copy *c)
{
    if (c == NULL || ((uintptr_t)c & 7u) != 0)
        return PYF_EINVAL;
    c->out = NULL;
    if (t == NULL || c->cap < sizeof *c)
        return PYF_EINVAL;
    pyf_snapshot_request local;
    const pyf_snapshot_request *req;
    int rc = request_in(t, c->request, &local, &req);
    if (rc != PYF_OK)
        return rc;
    pyf_stats before = t->io.stats;
    uint64_t calls_before = t->io.calls;
    if (pyf__replay_try(t, c, req))
        return PYF_OK;
    uint64_t same_as = t->walk.prev_table != 0 ? t->walk.prev_epoch : 0;
    snap *s;
    rc = take_in(t, req, &s);
    if (rc != PYF_OK) {
        pyf__prefetch_end(t);
        pyf__replay_forget(t);
        return rc;
    }
    uint32_t ni = s->pub.ninterps, nt = s->pub.nthreads;
    size_t ai = (size_t)ni * sizeof(pyf_interp), at = (size_t)nt * sizeof(pyf_thread);
    size_t size = sizeof *c + ai + at;
    bool arrays = size <= c->cap;
    /* nothing left in the snapshot for the caller (but its facts)? */
    bool settled = arrays && c->kept != 0 && c->kept == same_as && !s->tasks_asked &&
                   !s->want_entries;
    for (uint32_t i = 0; i < nt && settled; i++)
        settled = (s->threads[i].flags & PYF_THREAD_SAME_FRAMES) &&
                  s->threads[i].failure == NULL;
    bool done = settled && !s->want_facts;
    pyf_snapshot *out = NULL;
    if (!done && (rc = finish(t, s, &out)) != PYF_OK)
        return rc; /* s is freed */
    uint8_t *dst = (uint8_t *)c;
    /* the size field still says how much the buffer held */
    bool same = arrays && c->size == size &&
                (ai == 0 || memcmp(dst + sizeof *c, s->interps, ai) == 0) &&
                (at == 0 || memcmp(dst + sizeof *c + ai, s->threads, at) == 0);
    if (arrays && !same && ai > 0)
        memcpy(dst + sizeof *c, s->interps, ai);
    if (arrays && !same && at > 0)
        memcpy(dst + sizeof *c + ai, s->threads, at);
    c->flags = (arrays ? PYF_COPY_ARRAYS : 0u) | (done ? PYF_COPY_FREED : 0u) |
               (same ? PYF_COPY_SAME_ARRAYS : 0u) |
               (c->kept != 0 && c->kept == same_as ? PYF_COPY_KEPT : 0u);
    c->size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    c->reserved = 0;
    c->serial = t->walk.epoch;
    c->same_as = same_as;
    c->kept = t->walk.epoch;
    c->snapshot = s->pub;
    c->table.struct_size = sizeof c->table;
    pyf_snapshot_table(&s->pub, &c->table);
    if (done) {
        c->snapshot.interps = NULL;
        c->snapshot.threads = NULL;
        c->table.frame_keys = NULL;
        recycle(t, s); /* its frames never made */
    }
    c->out = out;
    pyf__replay_note(t, c, req, &before, calls_before, settled);
    return PYF_OK;
}
