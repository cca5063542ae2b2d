/*
 * pthread_tid.c - the OS thread of a thread state that records only its
 * pthread handle (3.8-3.10): see pthread_tid.h.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "containers.h"
#include "offsets.h"
#include "process.h"
#include "pthread_tid.h"
#include "reads.h"
#include "target.h"

/* a process's tasks read, at most */
#define TASKS_MAX (1u << 16)
/* x86-64 (EM_X86_64): fs_base in NT_PRSTATUS' user_regs_struct */
#define MACHINE_X86_64 62u
#define X86_64_FS_BASE 21u

int64_t pyf__pthread_tid_offset(const uint8_t *buf, size_t len, uint32_t pid)
{
    int64_t at = -1;
    if (pid == 0)
        return -1;
    for (size_t off = 0; off + 4 <= len; off += 4) {
        if (pyf__ld32(buf + off) != pid)
            continue;
        if (at >= 0)
            return -1; /* twice: not the one field */
        at = (int64_t)off;
    }
    return at;
}

/* The ids of the NSpid line of a /proc status file: the last (the
 * process's own view) in *own, how many in *n.  False when unreadable. */
static bool nspid(const char *path, int64_t *own, int *n)
{
    char buf[4096];
    if (!pyf__proc_text(path, buf, sizeof buf))
        return false;
    const char *p = strstr(buf, "\nNSpid:");
    if (p == NULL)
        return false;
    p += 7;
    *n = 0;
    while (*p != '\n' && *p != '\0') {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p)
            break;
        *own = v;
        ++*n;
        p = end;
    }
    return *n > 0;
}

/* A live process's task list, in its own ids. */
static void scan_tasks(pyf__os_threads *o)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", o->proc_pid);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return;
    o->scanned = true;
    struct dirent *e;
    uint32_t n = 0;
    while ((e = readdir(dir)) != NULL && n < TASKS_MAX) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        n++;
        int64_t tid = strtoll(e->d_name, NULL, 10);
        int depth = 0;
        if (o->foreign) {
            char status[96];
            snprintf(status, sizeof status, "/proc/%d/task/%.16s/status", o->proc_pid,
                     e->d_name);
            if (!nspid(status, &tid, &depth))
                continue;
        }
        bool added;
        uint64_t *v = tid > 0 ? pyf__addrmap_put(&o->tids, (uint64_t)tid, &added) : NULL;
        if (v != NULL)
            *v = 1;
    }
    closedir(dir);
}

static void setup(pyf_target *t)
{
    pyf__os_threads *o = &t->os_threads;
    o->ready = true;
    if (t->io.pid <= 0 || o->pid != 0)
        return; /* not a process of this machine, or a core set up */
    o->proc_pid = t->io.pid;
    o->pid = t->io.pid;
    char path[48];
    snprintf(path, sizeof path, "/proc/%d/status", t->io.pid);
    int64_t own;
    int depth = 0;
    if (nspid(path, &own, &depth) && depth > 1) {
        o->pid = own;
        o->foreign = true;
    }
}

/* The main thread's struct pthread, if handle is it, says where the id
 * is: true when it did. */
static bool calibrate(pyf_target *t, uint64_t handle)
{
    pyf__os_threads *o = &t->os_threads;
    uint8_t buf[PYF__PTHREAD_SCAN];
    if (handle == 0 || handle % 8 != 0 || handle > UINT64_MAX - sizeof buf ||
        pyf__read_quiet(t, handle, buf, sizeof buf) != PYF_OK)
        return false;
    int64_t at = pyf__pthread_tid_offset(buf, sizeof buf, (uint32_t)o->pid);
    if (at < 0)
        return false;
    o->tid_at = (uint32_t)at;
    o->calib = PYF__TID_CALIBRATED;
    return true;
}

void pyf__os_threads_begin(pyf_target *t, uint64_t threads_head)
{
    pyf__os_threads *o = &t->os_threads;
    if (!o->ready)
        setup(t);
    o->scanned = false;
    if (o->calib != PYF__TID_UNCALIBRATED || o->by_tls.n != 0 ||
        t->off.tstate.native_thread_id != PYF__ABSENT)
        return;
    if (o->pid <= 0 || o->pid > UINT32_MAX || ++o->tries > PYF__PTHREAD_TRIES) {
        o->calib = PYF__TID_NONE;
        return;
    }
    /* the list's thread states, their pthread handles and next links only
     * (the main thread's is the oldest: the list's last) */
    const pyf__offsets *off = &t->off;
    uint64_t len = off->tstate.thread_id + 8;
    if (off->tstate.next + 8 > len)
        len = off->tstate.next + 8;
    uint8_t *buf = malloc((size_t)len);
    if (buf == NULL)
        return;
    uint64_t addr = threads_head;
    for (uint32_t n = 0; addr != 0 && addr % 8 == 0 && n < t->opts.max_threads; n++) {
        if (pyf__read_quiet(t, addr, buf, (size_t)len) != PYF_OK ||
            calibrate(t, pyf__ld64(buf + off->tstate.thread_id)))
            break;
        addr = pyf__ld64(buf + off->tstate.next);
    }
    free(buf);
}

uint64_t pyf__os_tid(pyf_target *t, uint64_t handle)
{
    pyf__os_threads *o = &t->os_threads;
    if (!o->ready)
        setup(t);
    if (handle == 0)
        return 0;
    if (o->by_tls.n != 0) {
        const uint64_t *tid = pyf__addrmap_get(&o->by_tls, handle);
        return tid != NULL ? *tid : 0;
    }
    if (o->pid <= 0)
        return 0;
    if (o->calib != PYF__TID_CALIBRATED || handle > UINT64_MAX - o->tid_at - 4)
        return 0;
    uint8_t w[4];
    if (pyf__read_quiet(t, handle + o->tid_at, w, 4) != PYF_OK)
        return 0;
    /* a thread that ended has its id cleared (CLONE_CHILD_CLEARTID) */
    uint64_t tid = pyf__ld32(w);
    if (tid == 0 || tid > INT32_MAX)
        return 0;
    if (pyf__addrmap_get(&o->tids, tid) == NULL && o->proc_pid > 0 && !o->scanned)
        scan_tasks(o); /* a thread started since: the list read again, once */
    return pyf__addrmap_get(&o->tids, tid) != NULL ? tid : 0;
}

bool pyf__os_tid_is_main(const pyf_target *t, uint64_t tid)
{
    return tid != 0 && (int64_t)tid == t->os_threads.pid;
}

/* The process's threads as given: its ids and their TLS bases. */
static int set_threads(pyf_target *t, int64_t pid, const pyf_os_thread *threads, uint32_t n)
{
    pyf__os_threads *o = &t->os_threads;
    pyf__addrmap_free(&o->tids);
    pyf__addrmap_free(&o->by_tls);
    memset(&o->tids, 0, sizeof o->tids);
    memset(&o->by_tls, 0, sizeof o->by_tls);
    o->ready = true;
    o->proc_pid = 0;
    o->foreign = false;
    if (pid != o->pid) {
        o->calib = PYF__TID_UNCALIBRATED;
        o->tries = 0;
    }
    o->pid = pid;
    bool added;
    for (uint32_t i = 0; i < n; i++) {
        if (threads[i].tid == 0)
            continue;
        uint64_t *v = pyf__addrmap_put(&o->tids, threads[i].tid, &added);
        if (v == NULL)
            return PYF_ENOMEM;
        *v = 1;
        if (threads[i].tls_base == 0)
            continue;
        uint64_t *tid = pyf__addrmap_put(&o->by_tls, threads[i].tls_base, &added);
        if (tid == NULL)
            return PYF_ENOMEM;
        *tid = added ? threads[i].tid : 0; /* two threads of one TLS base: neither */
    }
    return PYF_OK;
}

int pyf__os_threads_core(pyf_target *t, const pyf_core_thread *threads, uint32_t n,
                         uint32_t machine, int64_t pid)
{
    pyf_os_thread *os = calloc(n != 0 ? n : 1, sizeof *os);
    if (os == NULL)
        return PYF_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const pyf_core_thread *th = &threads[i];
        os[i].tid = th->tid;
        if (machine == MACHINE_X86_64 && (th->flags & PYF_CORE_THREAD_REGS) &&
            th->nregs > X86_64_FS_BASE)
            os[i].tls_base = th->regs[X86_64_FS_BASE];
    }
    int rc = set_threads(t, pid, os, n);
    free(os);
    return rc;
}

int pyf_target_set_os_threads(pyf_target *t, int64_t pid, const pyf_os_thread *threads,
                              uint32_t n)
{
    if (t == NULL || (threads == NULL && n > 0))
        return PYF_EINVAL;
    int rc = set_threads(t, pid, threads, n);
    if (rc != PYF_OK)
        return pyf__fail(t, rc, "out of memory");
    return PYF_OK;
}

void pyf__os_threads_free(pyf__os_threads *o)
{
    pyf__addrmap_free(&o->tids);
    pyf__addrmap_free(&o->by_tls);
}
