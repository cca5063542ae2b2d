/*
 * reader_pid.c - the built-in pyf_reader over a live local process.
 *
 * read copies one range with process_vm_readv; readv batches up to IOV_MAX
 * ranges into a single system call and only falls back to one call per range
 * for the range a short transfer stopped in.  When process_vm_readv is
 * missing (ENOSYS) or refused (EPERM) the reader switches to pread on
 * /proc/PID/mem, opened on first use.  Nothing is allocated per read.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "errors.h"
#include "process.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

/* Ranges per process_vm_readv call in readv. */
#define BATCH_MAX IOV_MAX

/* Test hook: when the environment holds PYFRAMES_FORCE_PROC_MEM=1 at create
 * time, the reader skips process_vm_readv and reads through /proc/PID/mem
 * from the first read, so the fallback path can be exercised on hosts where
 * process_vm_readv works.  Writes are unaffected. */
#define FORCE_PROC_MEM_ENV "PYFRAMES_FORCE_PROC_MEM"

/* The threads pyf__pid_reader_frozen looks at before it gives up. */
#define FROZEN_TASKS_MAX 65536u
/* How long it takes a process found running to be running still (a
 * sampler's walks that find stacks changing ask again and again). */
#define FROZEN_RECHECK_NS 1000000u

/* Internal result of vm_read: process_vm_readv is unusable, use the file. */
#define NEED_FALLBACK 1

typedef struct pid_reader {
    pid_t pid;
    int mem_fd;            /* /proc/PID/mem, -1 until first needed */
    bool use_mem_fallback; /* every read goes through mem_fd */
    struct iovec local[BATCH_MAX];
    struct iovec remote[BATCH_MAX];
    /* pyf__pid_reader_frozen found a thread not stopped: until this time
     * (CLOCK_MONOTONIC, ns) it answers so without looking again */
    uint64_t running_until;
    const char *last_call; /* the system call that failed last, and how */
    int last_errno;        /* 0: it stopped short at an unreadable page */
    char message[96];
} pid_reader;

static const char *pid_message(void *arg);

static int map_errno(int e)
{
    switch (e) {
    case EFAULT:
    case EIO:
        return PYF_EFAULT;
    case EPERM:
    case EACCES:
        return PYF_EPERM;
    case ESRCH:
        return PYF_ENOPROC;
    default:
        return PYF_EIO;
    }
}

static bool process_gone(pid_t pid)
{
    return kill(pid, 0) < 0 && errno == ESRCH;
}

/* True when [addr, addr + len) wraps or cannot be expressed as a pointer. */
static bool range_invalid(uint64_t addr, size_t len)
{
    if (len == 0)
        return false;
    if ((uint64_t)len - 1 > UINT64_MAX - addr)
        return true;
#if UINTPTR_MAX < UINT64_MAX
    if (addr + ((uint64_t)len - 1) > UINTPTR_MAX)
        return true;
#endif
    return false;
}

static int mem_open(pid_reader *pr)
{
    char path[64];
    int fd;

    if (pr->mem_fd >= 0)
        return PYF_OK;
    snprintf(path, sizeof path, "/proc/%d/mem", (int)pr->pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        pr->last_call = "open /proc/PID/mem";
        pr->last_errno = errno;
        if (errno == ENOENT || errno == ESRCH)
            return PYF_ENOPROC;
        return map_errno(errno);
    }
    pr->mem_fd = fd;
    return PYF_OK;
}

/* pread loop on /proc/PID/mem, where the file offset is the address.
 * Offsets above INT64_MAX are refused (EINVAL) by pread; no user mapping
 * lives there, so such ranges are unreadable. */
static int mem_read(pid_reader *pr, uint64_t addr, uint8_t *dst, size_t len)
{
    int rc;

    if (len == 0)
        return PYF_OK;
    if (addr > (uint64_t)INT64_MAX || (uint64_t)len - 1 > (uint64_t)INT64_MAX - addr)
        return PYF_EFAULT;
    rc = mem_open(pr);
    if (rc != PYF_OK)
        return rc;
    while (len > 0) {
        size_t chunk = len > (size_t)SSIZE_MAX ? (size_t)SSIZE_MAX : len;
        ssize_t n = pread(pr->mem_fd, dst, chunk, (off_t)addr);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            pr->last_call = "pread /proc/PID/mem";
            pr->last_errno = errno;
            return map_errno(errno);
        }
        if (n == 0) { /* the address space is gone, or nothing readable there */
            pr->last_call = "pread /proc/PID/mem";
            pr->last_errno = 0;
            return process_gone(pr->pid) ? PYF_ENOPROC : PYF_EFAULT;
        }
        dst += n;
        addr += (uint64_t)n;
        len -= (size_t)n;
    }
    return PYF_OK;
}

/* process_vm_readv loop over one range.  *done counts the bytes copied so
 * that a switch to the fallback can resume. */
static int vm_read(pid_reader *pr, uint64_t addr, uint8_t *dst, size_t len,
                   size_t *done)
{
    *done = 0;
    while (*done < len) {
        size_t left = len - *done;
        size_t chunk = left > (size_t)SSIZE_MAX ? (size_t)SSIZE_MAX : left;
        struct iovec l = {dst + *done, chunk};
        struct iovec r = {(void *)(uintptr_t)(addr + *done), chunk};
        ssize_t n = process_vm_readv(pr->pid, &l, 1, &r, 1, 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOSYS || errno == EPERM)
                return NEED_FALLBACK;
            pr->last_call = "process_vm_readv";
            pr->last_errno = errno;
            return map_errno(errno);
        }
        if (n == 0) { /* stopped at an unmapped page */
            pr->last_call = "process_vm_readv";
            pr->last_errno = 0;
            return PYF_EFAULT;
        }
        *done += (size_t)n;
    }
    return PYF_OK;
}

/* Switch to /proc/PID/mem for good.  Returns the error of opening it. */
static int enable_fallback(pid_reader *pr)
{
    int rc = mem_open(pr);

    if (rc == PYF_OK)
        pr->use_mem_fallback = true;
    return rc;
}

static int read_range(pid_reader *pr, uint64_t addr, void *dst, size_t len)
{
    size_t done = 0;
    int rc;

    if (len == 0)
        return PYF_OK;
    if (dst == NULL)
        return PYF_EINVAL;
    if (range_invalid(addr, len))
        return PYF_EFAULT;
    if (!pr->use_mem_fallback) {
        rc = vm_read(pr, addr, dst, len, &done);
        if (rc != NEED_FALLBACK)
            return rc;
        rc = enable_fallback(pr);
        if (rc != PYF_OK)
            return rc;
    }
    return mem_read(pr, addr + done, (uint8_t *)dst + done, len - done);
}

static int pid_read(void *arg, uint64_t addr, void *dst, size_t len)
{
    if (arg == NULL)
        return PYF_EINVAL;
    ((pid_reader *)arg)->last_call = NULL;
    return read_range(arg, addr, dst, len);
}

typedef struct readv_result {
    int *status;
    int first;
} readv_result;

static void record(readv_result *res, size_t i, int rc)
{
    if (res->status != NULL)
        res->status[i] = rc;
    if (rc != PYF_OK && res->first == PYF_OK)
        res->first = rc;
}

static void record_rest(readv_result *res, size_t from, size_t n, int rc)
{
    for (size_t k = from; k < n; k++)
        record(res, k, rc);
}

static int pid_readv(void *arg, const pyf_iovec *iov, size_t n, int *status)
{
    pid_reader *pr = arg;
    readv_result res = {status, PYF_OK};
    size_t i = 0;

    if (pr != NULL)
        pr->last_call = NULL;

    if (pr == NULL || (iov == NULL && n > 0))
        return PYF_EINVAL;

    while (i < n) {
        size_t j = i, cnt = 0, total = 0, left, k;
        ssize_t got;

        if (pr->use_mem_fallback) {
            record(&res, i, read_range(pr, iov[i].addr, iov[i].dst, iov[i].len));
            i++;
            continue;
        }

        /* Gather consecutive ranges into one call.  Empty ranges are
         * satisfied on the walk below; a range that cannot be batched ends
         * the batch and is read on its own. */
        while (j < n && cnt < BATCH_MAX) {
            const pyf_iovec *v = &iov[j];

            if (v->len == 0) {
                j++;
                continue;
            }
            if (v->dst == NULL || range_invalid(v->addr, v->len) ||
                v->len > (size_t)SSIZE_MAX - total)
                break;
            pr->local[cnt].iov_base = v->dst;
            pr->local[cnt].iov_len = v->len;
            pr->remote[cnt].iov_base = (void *)(uintptr_t)v->addr;
            pr->remote[cnt].iov_len = v->len;
            total += v->len;
            cnt++;
            j++;
        }
        if (cnt == 0) {
            if (j > i) { /* only empty ranges */
                record_rest(&res, i, j, PYF_OK);
                i = j;
            } else {
                record(&res, i, read_range(pr, iov[i].addr, iov[i].dst, iov[i].len));
                i++;
            }
            continue;
        }

        got = process_vm_readv(pr->pid, pr->local, cnt, pr->remote, cnt, 0);
        if (got < 0) {
            int e = errno;

            if (e == ENOSYS || e == EPERM) {
                int rc = enable_fallback(pr);

                if (rc != PYF_OK) {
                    record_rest(&res, i, n, rc);
                    return res.first;
                }
                continue; /* redo from i through the file */
            }
            if (e == ESRCH) {
                record_rest(&res, i, n, PYF_ENOPROC);
                return res.first;
            }
            if (e == EFAULT) {
                got = 0; /* nothing copied: the first range failed */
            } else {
                /* EINVAL, ENOMEM, EINTR...: read this batch one by one. */
                for (k = i; k < j; k++)
                    record(&res, k, read_range(pr, iov[k].addr, iov[k].dst, iov[k].len));
                i = j;
                continue;
            }
        }

        /* Ranges fully covered by the transfer are done.  The transfer
         * stopped inside range k: read it alone, which either completes it
         * (the stop was a transient condition) or reports why it fails,
         * then start the next batch after it. */
        left = (size_t)got;
        for (k = i; k < j; k++) {
            if (iov[k].len > left)
                break;
            left -= iov[k].len;
            record(&res, k, PYF_OK);
        }
        if (k == j) {
            i = j;
            continue;
        }
        record(&res, k, read_range(pr, iov[k].addr, iov[k].dst, iov[k].len));
        i = k + 1;
    }
    return res.first;
}

static int pid_write(void *arg, uint64_t addr, const void *src, size_t len)
{
    pid_reader *pr = arg;
    size_t done = 0;

    if (pr == NULL)
        return PYF_EINVAL;
    if (len == 0)
        return PYF_OK;
    if (src == NULL)
        return PYF_EINVAL;
    if (range_invalid(addr, len))
        return PYF_EFAULT;
    while (done < len) {
        size_t left = len - done;
        size_t chunk = left > (size_t)SSIZE_MAX ? (size_t)SSIZE_MAX : left;
        struct iovec l = {(uint8_t *)src + done, chunk};
        struct iovec r = {(void *)(uintptr_t)(addr + done), chunk};
        ssize_t n = process_vm_writev(pr->pid, &l, 1, &r, 1, 0);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ENOSYS)
                return PYF_ENOTSUP;
            return map_errno(errno);
        }
        if (n == 0)
            return PYF_EFAULT;
        done += (size_t)n;
    }
    return PYF_OK;
}

int pyf__pid_reader_create(int pid, pyf_reader *out, char *err, size_t errlen)
{
    pid_reader *pr;
    const char *force;

    if (out == NULL) {
        pyf__fmt(err, errlen, "no reader to fill");
        return PYF_EINVAL;
    }
    memset(out, 0, sizeof *out);
    if (pid <= 0) {
        pyf__fmt(err, errlen, "invalid process id %d", pid);
        return PYF_EINVAL;
    }
    if (process_gone(pid)) {
        pyf__fmt(err, errlen, "process %d does not exist (no such process)", pid);
        return PYF_ENOPROC;
    }
    pr = calloc(1, sizeof *pr);
    if (pr == NULL) {
        pyf__fmt(err, errlen, "out of memory creating the reader for process %d", pid);
        return PYF_ENOMEM;
    }
    pr->pid = pid;
    pr->mem_fd = -1;
    force = getenv(FORCE_PROC_MEM_ENV);
    if (force != NULL && strcmp(force, "1") == 0)
        pr->use_mem_fallback = true;

    out->struct_size = sizeof *out;
    out->read = pid_read;
    out->readv = pid_readv;
    out->write = pid_write;
    out->arg = pr;
    out->message = pid_message;
    out->reads = PYF_READS_RUNNING;
    return PYF_OK;
}

bool pyf__proc_text(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    return true;
}

/* One thread's /proc/PID/task/TID/status: whether it is stopped (State
 * T, a job-control stop, or t, a tracer's) and how often it was switched
 * out (voluntary plus involuntary context switches). */
static bool task_stopped(pid_t pid, const char *tid, uint64_t *switches)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/task/%.16s/status", (int)pid, tid);
    if (!pyf__proc_text(path, buf, sizeof buf))
        return false;
    const char *state = strstr(buf, "\nState:\t");
    if (state == NULL || (state[8] != 'T' && state[8] != 't'))
        return false;
    const char *vol = strstr(buf, "\nvoluntary_ctxt_switches:");
    const char *invol = strstr(buf, "\nnonvoluntary_ctxt_switches:");
    if (vol == NULL || invol == NULL)
        return false;
    *switches = strtoull(vol + 26, NULL, 10) + strtoull(invol + 29, NULL, 10);
    return true;
}

bool pyf__pid_reader_frozen(const pyf_reader *r, uint64_t *token)
{
    if (r == NULL || r->read != pid_read || r->arg == NULL)
        return false;
    pid_reader *pr = r->arg;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    if (now < pr->running_until)
        return false;
    pid_t pid = pr->pid;
    char path[32];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return false;
    bool frozen = true;
    uint64_t h = 1469598103934665603ull, tasks = 0;
    struct dirent *e;
    while (frozen && (e = readdir(dir)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        uint64_t switches;
        if (++tasks > FROZEN_TASKS_MAX || !task_stopped(pid, e->d_name, &switches)) {
            frozen = false;
            break;
        }
        uint64_t tid = strtoull(e->d_name, NULL, 10);
        h = (h ^ tid) * 1099511628211ull;
        h = (h ^ switches) * 1099511628211ull;
    }
    closedir(dir);
    *token = (h ^ tasks) * 1099511628211ull;
    if (!frozen || tasks == 0) {
        pr->running_until = now + FROZEN_RECHECK_NS;
        return false;
    }
    return true;
}

static const char *pid_message(void *arg)
{
    pid_reader *pr = arg;

    if (pr->last_call == NULL)
        return NULL;
    snprintf(pr->message, sizeof pr->message, "%s: %s", pr->last_call,
             pr->last_errno ? strerror(pr->last_errno) : "stopped short of the range");
    return pr->message;
}

void pyf__pid_reader_destroy(pyf_reader *r)
{
    pid_reader *pr;

    if (r == NULL || r->arg == NULL)
        return;
    pr = r->arg;
    if (pr->mem_fd >= 0)
        close(pr->mem_fd);
    free(pr);
    r->arg = NULL;
}
