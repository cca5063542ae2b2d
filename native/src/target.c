/*
 * target.c - opening and closing targets, their options, and the small
 * accessors of the public API (failure, Python version, flush,
 * statistics).  The runtime probe is in offsets.c, the asyncio table's
 * setter in tasks.c, the frame cache's in cache.c.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "api.h"
#include "cache.h"
#include "code.h"
#include "errors.h"
#include "offsets.h"
#include "process.h"
#include "pthread_tid.h"
#include "reads.h"
#include "replay.h"
#include "snapshot.h"
#include "table.h"
#include "target.h"
#include "tasks.h"
#include "values.h"
#include "walk.h"

static int apply_options(const pyf_options *in, pyf_options *out, char *err,
                         size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (in != NULL) {
        int rc = pyf__struct_in(in, PYF_OPTIONS_SIZE_V0, out, sizeof *out,
                                "pyf_options", err, errlen);
        if (rc != PYF_OK)
            return rc;
    }
    out->struct_size = sizeof *out;
    if (out->max_depth == 0)
        out->max_depth = PYF_DEFAULT_MAX_DEPTH;
    if (out->max_threads == 0)
        out->max_threads = PYF_DEFAULT_MAX_THREADS;
    if (out->max_string == 0)
        out->max_string = PYF_DEFAULT_MAX_STRING;
    if (out->max_depth > 10000000u || out->max_threads > 1000000u ||
        out->max_string > (16u << 20)) {
        pyf__fmt(err, errlen, "pyf_options limits are out of range (depth "
                 "<= 10000000, threads <= 1000000, string <= 16 MiB)");
        return PYF_EINVAL;
    }
    return PYF_OK;
}

/* The version of a runtime that does not say it (3.8-3.12, version_pending):
 * read by the table its shape chose, else by the next whose shape it has
 * (3.8-3.10, newest first).  A failure names the first table's.  The
 * shape of 3.8-3.10's runtime says little: memory none of them can read
 * is no runtime (PYF_ENOTPY). */
static int read_version(pyf_target *t, pyf_failure *f)
{
    uint32_t size = f->struct_size, others = t->off.version_others;
    bool heap = t->off.frame_model == PYF__FRAMES_HEAP;
    int rc = pyf__offsets_version_read(t);
    if (rc == PYF_OK)
        return rc;
    bool shaped = t->off.version_pending; /* not refused by its version */
    *f = t->io.fail;
    f->struct_size = size;
    while (shaped && rc != PYF_EPERM && rc != PYF_ENOPROC && others != 0) {
        uint32_t minor = 31 - (uint32_t)__builtin_clz(others);
        others &= ~(1u << minor);
        char err[PYF__ERRBUF];
        if (pyf__offsets_builtin(0x030000F0u | (uint64_t)minor << 16, &t->off, err,
                                 sizeof err) != PYF_OK)
            continue;
        t->off.version_pending = true;
        if (pyf__offsets_version_read(t) == PYF_OK) {
            pyf__failure_clear(f);
            f->struct_size = size;
            return PYF_OK;
        }
        if (!t->off.version_pending) { /* its version read, and refused */
            *f = t->io.fail;
            f->struct_size = size;
            return f->code;
        }
    }
    if (heap && shaped && (rc == PYF_EFAULT || rc == PYF_EIO || rc == PYF_ECORRUPT)) {
        char why[sizeof f->detail];
        pyf__fmt(why, sizeof why, "%s", f->detail);
        pyf__failure_set(f, PYF_ENOTPY, "no \"xdebugpy\" cookie at the start of _PyRuntime at "
                         "0x%llx, nor a CPython 3.8-3.12 runtime there (%s)",
                         (unsigned long long)t->runtime_addr, why);
        f->struct_size = size;
        return PYF_ENOTPY;
    }
    return rc;
}

static int open_common(const pyf_reader *reader, bool owns_pid, int pid,
                       uint64_t runtime_addr, const pyf_options *opts,
                       pyf_target **out, pyf_failure *f)
{
    pyf_target *t = calloc(1, sizeof *t);
    if (t == NULL)
        return pyf__failure_set(f, PYF_ENOMEM, "out of memory");
    t->io.reader = *reader;
    t->io.owns_pid_reader = owns_pid;
    t->io.pid = pid;
    t->runtime_addr = runtime_addr;
    t->io.stall_ns = PYF__STALL_NS;
    int rc = apply_options(opts, &t->opts, f->detail, sizeof f->detail);
    if (rc != PYF_OK)
        f->code = rc;
    else
        rc = pyf__offsets_load(&t->io.reader, runtime_addr, &t->off, &t->io.stats, f);
    if (rc == PYF_OK && t->off.version_pending)
        rc = read_version(t, f);
    if (rc != PYF_OK) {
        /* the reader belongs to the caller until open succeeds */
        t->io.owns_pid_reader = false;
        free(t);
        return rc;
    }
    *out = t;
    return PYF_OK;
}

/* The arguments every open checks first: the caller's failure struct and
 * out.  False with *rc when the call ends here. */
static bool open_begin(pyf_failure *failure, pyf_target **out, pyf_failure *f, int *rc)
{
    if (!pyf__failure_begin(failure, f)) {
        *rc = PYF_EINVAL;
        return false;
    }
    if (out == NULL) {
        *rc = pyf__failure_out(failure, f, pyf__failure_set(f, PYF_EINVAL,
                                                            "no place for the target (out is NULL)"));
        return false;
    }
    *out = NULL;
    return true;
}

int pyf_target_open(const pyf_reader *reader, uint64_t runtime_addr,
                    const pyf_options *opts, pyf_target **out,
                    pyf_failure *failure)
{
    pyf_failure f;
    pyf_reader r;
    int rc;

    if (!open_begin(failure, out, &f, &rc))
        return rc;
    rc = pyf__reader_in(reader, &r, f.detail, sizeof f.detail);
    if (rc == PYF_OK && runtime_addr == 0)
        rc = pyf__failure_set(&f, PYF_EINVAL, "the address of _PyRuntime is required "
                              "with a caller-supplied reader");
    if (rc == PYF_OK)
        rc = open_common(&r, false, -1, runtime_addr, opts, out, &f);
    return pyf__failure_out(failure, &f, rc);
}

int pyf_target_open_pid(int pid, uint64_t runtime_addr, const pyf_options *opts,
                        pyf_target **out, pyf_failure *failure)
{
    pyf_failure f;
    pyf_reader r;
    int rc;

    if (!open_begin(failure, out, &f, &rc))
        return rc;
    if (pid <= 0)
        return pyf__failure_out(failure, &f, pyf__failure_set(&f, PYF_EINVAL,
                                                         "invalid process id %d", pid));
    rc = pyf__pid_reader_create(pid, &r, f.detail, sizeof f.detail);
    if (rc != PYF_OK)
        return pyf__failure_out(failure, &f, rc);
    if (runtime_addr == 0)
        rc = pyf__pid_find_runtime(pid, &r, &runtime_addr, f.detail, sizeof f.detail);
    if (rc == PYF_OK)
        rc = open_common(&r, true, pid, runtime_addr, opts, out, &f);
    if (rc != PYF_OK)
        pyf__pid_reader_destroy(&r);
    return pyf__failure_out(failure, &f, rc);
}

void pyf_target_close(pyf_target *t)
{
    if (t == NULL)
        return;
    pyf__code_cache_clear(&t->code.cache);
    pyf__code_scratch_free(t);
    pyf__table_unref(t->walk.table); /* snapshots keep their references */
    free(t->walk.prev_keys);
    free(t->walk.prev_threads);
    pyf__snapshot_spare_free(t);
    pyf__replay_free(t);
    pyf__cache_clear(&t->frame_cache);
    pyf__chunks_free(&t->walk.chunks);
    pyf__walk_heap_free(&t->walk);
    pyf__prefetch_free(&t->walk.prefetch);
    pyf__asyncio_free(&t->asyncio);
    pyf__vhints_free(t);
    pyf__os_threads_free(&t->os_threads);
    if (t->io.owns_pid_reader)
        pyf__pid_reader_destroy(&t->io.reader);
    free(t);
}

int pyf_target_failure(const pyf_target *t, pyf_failure *out)
{
    if (t == NULL || out == NULL)
        return PYF_EINVAL;
    pyf_failure f = t->io.fail;
    return pyf__struct_out(out, PYF_FAILURE_SIZE_V0, &f, sizeof f);
}

int pyf_target_python(const pyf_target *t, pyf_python_info *out)
{
    if (t == NULL || out == NULL)
        return PYF_EINVAL;
    pyf__python_info_fill(&t->off, t->runtime_addr, out);
    return PYF_OK;
}

void pyf_target_flush(pyf_target *t)
{
    if (t == NULL)
        return;
    pyf__replay_forget(t);
    pyf__code_cache_clear(&t->code.cache);
    pyf__table_unref(t->walk.table);
    t->walk.table = NULL;
    pyf__cache_clear(&t->frame_cache);
    t->walk.prefetch.nplan = 0;
    t->walk.prefetch.plan_bytes = 0;
    t->code.generation_known = false;
    t->code.type_addr = 0;
    t->code.not_type_addr = 0;
    pyf__vhints_free(t);
}

void pyf_target_stats(const pyf_target *t, pyf_stats *out)
{
    if (out == NULL)
        return;
    if (t == NULL) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = t->io.stats;
}

void pyf_target_reset_stats(pyf_target *t)
{
    if (t != NULL)
        memset(&t->io.stats, 0, sizeof t->io.stats);
}

