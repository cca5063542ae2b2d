/*
 * test_reader_pid.c - the built-in PID reader (native/src/reader_pid.c).
 *
 * Reads this process and forked children through process_vm_readv and,
 * with PYFRAMES_FORCE_PROC_MEM=1, through /proc/PID/mem: exact copies,
 * multi-megabyte reads, EFAULT on unmapped and straddling ranges, readv
 * statuses (also past IOV_MAX ranges), writes, ENOPROC for dead processes,
 * and EPERM for a process of another user (when run as root).
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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../native/src/api.h"
#include "../../native/src/errors.h"
#include "../../native/src/process.h"
#include "check.h"
#include "children.h"


/* Written by a holder child after fork, so it differs from our copy. */
static char child_buf[256];

typedef struct holder {
    pid_t pid;
    int stdin_w; /* closing it ends the child */
} holder;

/* Fork a child that fills child_buf with its own marker, reports ready on a
 * pipe and blocks until its stdin pipe is closed. */
static holder spawn_holder(void)
{
    int ready[2], in[2];
    holder h = {-1, -1};
    char c;

    REQUIRE(pipe2(ready, O_CLOEXEC) == 0 && pipe2(in, O_CLOEXEC) == 0);
    h.pid = fork();
    REQUIRE(h.pid >= 0);
    if (h.pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        close(ready[0]);
        close(in[1]);
        for (size_t i = 0; i < sizeof child_buf; i++)
            child_buf[i] = (char)('A' + i % 26);
        if (write(ready[1], "r", 1) != 1)
            _exit(3);
        while (read(in[0], &c, 1) > 0)
            ;
        _exit(0);
    }
    child_track(h.pid);
    close(ready[1]);
    close(in[0]);
    h.stdin_w = in[1];
    REQUIRE(read(ready[0], &c, 1) == 1 && c == 'r');
    close(ready[0]);
    return h;
}

/* ==== helpers =========================================================== */

static size_t page_size(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* An address with nothing mapped: a page mapped then unmapped. */
static uint64_t unmapped_page(void)
{
    void *p = mmap(NULL, page_size(), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    REQUIRE(p != MAP_FAILED);
    REQUIRE(munmap(p, page_size()) == 0);
    return (uint64_t)(uintptr_t)p;
}

/* Does this process hold an fd on /proc/<pid>/mem? */
static bool has_mem_fd(int pid)
{
    char want[64], link[256], path[300];
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    bool found = false;

    REQUIRE(d != NULL);
    snprintf(want, sizeof want, "/proc/%d/mem", pid);
    while ((e = readdir(d)) != NULL) {
        ssize_t n;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        n = readlink(path, link, sizeof link - 1);
        if (n <= 0)
            continue;
        link[n] = '\0';
        if (strcmp(link, want) == 0)
            found = true;
    }
    closedir(d);
    return found;
}

static bool vm_readv_works(void)
{
    char src[8] = "abcdefg", dst[8] = {0};
    struct iovec l = {dst, sizeof dst}, r = {src, sizeof src};

    return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)sizeof dst &&
           memcmp(src, dst, sizeof dst) == 0;
}

static void make_reader(int pid, bool force, pyf_reader *r)
{
    char err[PYF__ERRBUF] = "";
    int rc;

    if (force)
        REQUIRE(setenv("PYFRAMES_FORCE_PROC_MEM", "1", 1) == 0);
    else
        REQUIRE(unsetenv("PYFRAMES_FORCE_PROC_MEM") == 0);
    rc = pyf__pid_reader_create(pid, r, err, sizeof err);
    if (rc != PYF_OK)
        fprintf(stderr, "create(%d): %s\n", pid, err);
    REQUIRE(rc == PYF_OK);
    REQUIRE(r->struct_size == sizeof *r && r->read && r->readv && r->write && r->arg);
    unsetenv("PYFRAMES_FORCE_PROC_MEM");
}

/* ==== tests on this process ============================================== */

static char known[4096];

static void test_self(bool force)
{
    pyf_reader r;
    int self = (int)getpid();
    size_t pg = page_size();
    char dst[4096];
    uint64_t hole = unmapped_page();

    fprintf(stderr, "-- self, %s\n", force ? "/proc/PID/mem" : "process_vm_readv");
    for (size_t i = 0; i < sizeof known; i++)
        known[i] = (char)(i * 7 + 3);
    make_reader(self, force, &r);

    /* a known buffer, whole and at odd offsets */
    memset(dst, 0, sizeof dst);
    CHECK_RC(r.read(r.arg, (uint64_t)(uintptr_t)known, dst, sizeof known), PYF_OK);
    CHECK(memcmp(dst, known, sizeof known) == 0);
    memset(dst, 0, sizeof dst);
    CHECK_RC(r.read(r.arg, (uint64_t)(uintptr_t)(known + 13), dst, 101), PYF_OK);
    CHECK(memcmp(dst, known + 13, 101) == 0);
    CHECK(dst[101] == 0); /* no overrun */

    /* several megabytes in one call */
    {
        size_t big = (3u << 20) + 123;
        uint8_t *src = malloc(big), *out = malloc(big);

        REQUIRE(src && out);
        for (size_t i = 0; i < big; i++)
            src[i] = (uint8_t)(i ^ (i >> 11));
        memset(out, 0, big);
        CHECK_RC(r.read(r.arg, (uint64_t)(uintptr_t)src, out, big), PYF_OK);
        CHECK(memcmp(src, out, big) == 0);
        free(src);
        free(out);
    }

    /* zero length succeeds anywhere */
    CHECK_RC(r.read(r.arg, hole, dst, 0), PYF_OK);
    CHECK_RC(r.read(r.arg, 0, NULL, 0), PYF_OK);

    /* unmapped, kernel and wrapping addresses */
    CHECK_RC(r.read(r.arg, hole, dst, 8), PYF_EFAULT);
    CHECK_RC(r.read(r.arg, 0, dst, 8), PYF_EFAULT);
    CHECK_RC(r.read(r.arg, 0xffffffffff600000ull - 0x1000000ull, dst, 8), PYF_EFAULT);
    CHECK_RC(r.read(r.arg, UINT64_MAX - 3, dst, 8), PYF_EFAULT);

    /* a range that runs from a mapped page into an unmapped one */
    {
        uint8_t *two = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uint64_t edge;

        REQUIRE(two != MAP_FAILED);
        memset(two, 0x5a, 2 * pg);
        REQUIRE(munmap(two + pg, pg) == 0);
        edge = (uint64_t)(uintptr_t)(two + pg);
        CHECK_RC(r.read(r.arg, edge - 16, dst, 32), PYF_EFAULT);
        CHECK_RC(r.read(r.arg, edge - pg, dst, pg + 1), PYF_EFAULT);
        memset(dst, 0, 16);
        CHECK_RC(r.read(r.arg, edge - 16, dst, 16), PYF_OK);
        CHECK(dst[0] == 0x5a && dst[15] == 0x5a);

        /* readv: good, unmapped, good, empty at a hole, straddling, good */
        {
            char a[16], b[8], c[32], d[64], e[1];
            pyf_iovec iov[6] = {
                {(uint64_t)(uintptr_t)known, a, sizeof a},
                {hole, b, sizeof b},
                {(uint64_t)(uintptr_t)(known + 100), c, sizeof c},
                {hole + 8, e, 0},
                {edge - 8, d, 16},
                {(uint64_t)(uintptr_t)(known + 1000), d + 16, 48},
            };
            int st[6] = {99, 99, 99, 99, 99, 99};

            CHECK_RC(r.readv(r.arg, iov, 6, st), PYF_EFAULT);
            CHECK_RC(st[0], PYF_OK);
            CHECK_RC(st[1], PYF_EFAULT);
            CHECK_RC(st[2], PYF_OK);
            CHECK_RC(st[3], PYF_OK);
            CHECK_RC(st[4], PYF_EFAULT);
            CHECK_RC(st[5], PYF_OK);
            CHECK(memcmp(a, known, sizeof a) == 0);
            CHECK(memcmp(c, known + 100, sizeof c) == 0);
            CHECK(memcmp(d + 16, known + 1000, 48) == 0);
        }
        munmap(two, pg);
    }

    /* readv where every range is good, and n == 0 */
    {
        char a[10], b[20];
        pyf_iovec iov[2] = {{(uint64_t)(uintptr_t)(known + 1), a, sizeof a},
                            {(uint64_t)(uintptr_t)(known + 2000), b, sizeof b}};
        int st[2] = {99, 99};

        CHECK_RC(r.readv(r.arg, iov, 2, st), PYF_OK);
        CHECK(st[0] == PYF_OK && st[1] == PYF_OK);
        CHECK(memcmp(a, known + 1, sizeof a) == 0 && memcmp(b, known + 2000, sizeof b) == 0);
        CHECK_RC(r.readv(r.arg, iov, 0, st), PYF_OK);
    }

    /* more ranges than IOV_MAX, every seventh unmapped */
    {
        enum { N = 2600 };
        pyf_iovec *iov = calloc(N, sizeof *iov);
        int *st = malloc(N * sizeof *st);
        uint32_t *out = calloc(N, sizeof *out);
        bool ok = true;

        REQUIRE(iov && st && out);
        for (size_t i = 0; i < N; i++) {
            iov[i].addr = i % 7 == 3 ? hole + 4 * (i % 64)
                                     : (uint64_t)(uintptr_t)(known + (i * 4) % 4000);
            iov[i].dst = &out[i];
            iov[i].len = sizeof out[i];
            st[i] = 99;
        }
        CHECK_RC(r.readv(r.arg, iov, N, st), PYF_EFAULT);
        for (size_t i = 0; i < N; i++) {
            if (i % 7 == 3)
                ok = ok && st[i] == PYF_EFAULT;
            else
                ok = ok && st[i] == PYF_OK &&
                     memcmp(&out[i], known + (i * 4) % 4000, 4) == 0;
        }
        CHECK(ok);
        free(iov);
        free(st);
        free(out);
    }

    /* write, then an unmapped write */
    {
        static char target[64];
        const char msg[] = "written through the reader";

        memset(target, 0, sizeof target);
        CHECK_RC(r.write(r.arg, (uint64_t)(uintptr_t)target, msg, sizeof msg), PYF_OK);
        CHECK(memcmp(target, msg, sizeof msg) == 0);
        CHECK_RC(r.write(r.arg, hole, msg, 4), PYF_EFAULT);
        CHECK_RC(r.write(r.arg, hole, msg, 0), PYF_OK);
    }

    /* Which path served the reads: only the fallback opens /proc/PID/mem. */
    if (force)
        CHECK(has_mem_fd(self));
    else if (vm_readv_works())
        CHECK(!has_mem_fd(self));

    pyf__pid_reader_destroy(&r);
    CHECK(r.arg == NULL);
    CHECK(!has_mem_fd(self));
    pyf__pid_reader_destroy(&r); /* harmless twice */
}

/* ==== tests on other processes ========================================== */

static void test_child(bool force)
{
    holder h = spawn_holder();
    pyf_reader r;
    char got[sizeof child_buf];
    int status;

    fprintf(stderr, "-- child, %s\n", force ? "/proc/PID/mem" : "process_vm_readv");
    memset(child_buf, 0, sizeof child_buf); /* our copy stays zero */
    make_reader(h.pid, force, &r);
    memset(got, 0, sizeof got);
    CHECK_RC(r.read(r.arg, (uint64_t)(uintptr_t)child_buf, got, sizeof got), PYF_OK);
    CHECK(got[0] == 'A' && got[25] == 'Z' && got[26] == 'A');
    {
        char a[4], b[4];
        pyf_iovec iov[2] = {{(uint64_t)(uintptr_t)(child_buf + 1), a, 4},
                            {(uint64_t)(uintptr_t)(child_buf + 30), b, 4}};
        int st[2] = {99, 99};

        CHECK_RC(r.readv(r.arg, iov, 2, st), PYF_OK);
        CHECK(memcmp(a, "BCDE", 4) == 0 && memcmp(b, "EFGH", 4) == 0);
    }

    /* the child dies under an existing reader */
    close(h.stdin_w);
    child_reap(h.pid, &status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_RC(r.read(r.arg, (uint64_t)(uintptr_t)child_buf, got, 8), PYF_ENOPROC);
    {
        pyf_iovec iov[1] = {{(uint64_t)(uintptr_t)child_buf, got, 8}};
        int st[1] = {99};

        CHECK_RC(r.readv(r.arg, iov, 1, st), PYF_ENOPROC);
        CHECK_RC(st[0], PYF_ENOPROC);
    }
    pyf__pid_reader_destroy(&r);
}

static void test_dead_pid(void)
{
    char err[PYF__ERRBUF] = "", pidstr[32];
    pyf_reader r;
    pid_t pid;
    int rc;

    fprintf(stderr, "-- dead pid\n");
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        _exit(0);
    child_track(pid);
    child_reap(pid, NULL);
    rc = pyf__pid_reader_create(pid, &r, err, sizeof err);
    CHECK_RC(rc, PYF_ENOPROC);
    snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
    CHECK(strstr(err, pidstr) != NULL);
    CHECK(r.arg == NULL);

    CHECK_RC(pyf__pid_reader_create(0, &r, err, sizeof err), PYF_EINVAL);
    CHECK_RC(pyf__pid_reader_create(-4, &r, err, sizeof err), PYF_EINVAL);
    CHECK_RC(pyf__pid_reader_create(1, NULL, err, sizeof err), PYF_EINVAL);
}

/* A process of another user: EPERM from both paths.  Needs root to switch
 * to an unprivileged uid in a helper child. */
static void test_eperm(void)
{
    holder h;
    pid_t helper;
    int status;

    if (geteuid() != 0) {
        fprintf(stderr, "-- EPERM: not root, cannot drop to another uid; not checked\n");
        return;
    }
    fprintf(stderr, "-- EPERM\n");
    h = spawn_holder();
    helper = fork();
    REQUIRE(helper >= 0);
    if (helper == 0) {
        int bad = 0;

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
            _exit(10);
        for (int force = 0; force < 2; force++) {
            pyf_reader r;
            char buf[8], err[PYF__ERRBUF];
            pyf_iovec iov[1] = {{(uint64_t)(uintptr_t)child_buf, buf, 8}};
            int st[1] = {99};

            if (force)
                setenv("PYFRAMES_FORCE_PROC_MEM", "1", 1);
            else
                unsetenv("PYFRAMES_FORCE_PROC_MEM");
            if (pyf__pid_reader_create(h.pid, &r, err, sizeof err) != PYF_OK)
                _exit(11);
            if (r.read(r.arg, (uint64_t)(uintptr_t)child_buf, buf, 8) != PYF_EPERM)
                bad |= 1 << (2 * force);
            if (r.readv(r.arg, iov, 1, st) != PYF_EPERM || st[0] != PYF_EPERM)
                bad |= 2 << (2 * force);
            pyf__pid_reader_destroy(&r);
        }
        _exit(bad);
    }
    child_track(helper);
    child_reap(helper, &status);
    CHECK(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        fprintf(stderr, "EPERM helper exit status %d\n", WEXITSTATUS(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(h.stdin_w);
    child_reap(h.pid, NULL);
}

int main(void)
{
    atexit(children_kill);
    test_self(false);
    test_self(true);
    test_child(false);
    test_child(true);
    test_dead_pid();
    test_eperm();
    children_kill();
    return check_end();
}
