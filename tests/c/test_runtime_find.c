/*
 * test_runtime_find.c - locating _PyRuntime (native/src/runtime_find.c,
 * native/src/elf.c).
 *
 * Runs rt_target children (see rt_target.c) and checks that the search finds
 * exactly their table: through the .PyRuntime section of a python-named
 * executable (a decoy table earlier in .data proves the scan was not used),
 * of a deleted one, through the cookie scan for an anonymous mapping or a
 * file without "python" in its name; PYF_ENOTPY with an actionable message
 * when there is no table, "process N (sleep) is not a Python process" for
 * a process without anything of CPython; PYF_EVERSION naming the version of
 * a table that is too new, of a CPython 3.7 by its Py_GetVersion() buffer
 * (and no version from strings that only look like one), and of a 3.12
 * whose runtime is not the size of the layout the library knows;
 * PYF_ENOPROC and PYF_EPERM.  Also scans ranges of
 * this process with pyf_runtime_find_in_range, and feeds the ELF reader
 * truncated and byte-flipped copies of rt_target.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../native/src/api.h"
#include "../../native/src/elf_reader.h"
#include "../../native/src/errors.h"
#include "../../native/src/offsets.h"
#include "../../native/src/process.h"
#include "../../native/src/target.h"
#include "check.h"
#include "children.h"
#include "fake_offsets.h"

#ifndef PYF_RT_TARGET
#error "PYF_RT_TARGET must name the rt_target executable"
#endif

/* ==== children and temporary files ====================================== */

static char tmpdir[4096];
static char tmpfiles[16][4200];
static int ntmpfiles;

static void cleanup(void)
{
    children_kill();
    for (int i = 0; i < ntmpfiles; i++)
        unlink(tmpfiles[i]);
    ntmpfiles = 0;
    if (tmpdir[0] != '\0') {
        rmdir(tmpdir);
        tmpdir[0] = '\0';
    }
}

/* A crash still removes the children and files (all calls here are
 * async-signal-safe), then dies of the same signal. */
static void on_fatal(int sig)
{
    cleanup();
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct rt_child {
    pid_t pid;
    int stdin_w;
    uint64_t runtime, decoy;
} rt_child;

/* Run path (a copy of rt_target) in mode and wait for its ready line. */
static rt_child spawn_rt(const char *path, const char *mode)
{
    int ready[2], in[2];
    rt_child c = {-1, -1, 0, 0};
    char line[256];
    size_t have = 0;

    REQUIRE(pipe2(ready, O_CLOEXEC) == 0 && pipe2(in, O_CLOEXEC) == 0);
    c.pid = fork();
    REQUIRE(c.pid >= 0);
    if (c.pid == 0) {
        char fdstr[16];

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (dup2(in[0], 0) != 0 || fcntl(ready[1], F_SETFD, 0) != 0)
            _exit(126);
        snprintf(fdstr, sizeof fdstr, "%d", ready[1]);
        execl(path, path, fdstr, mode, (char *)NULL);
        _exit(127);
    }
    child_track(c.pid);
    close(ready[1]);
    close(in[0]);
    c.stdin_w = in[1];
    while (have < sizeof line - 1 && memchr(line, '\n', have) == NULL) {
        struct pollfd p = {ready[0], POLLIN, 0};
        ssize_t n;

        REQUIRE(poll(&p, 1, 30000) == 1);
        n = read(ready[0], line + have, sizeof line - 1 - have);
        if (n <= 0) {
            fprintf(stderr, "%s %s: no ready line (exec failed?)\n", path, mode);
            exit(1);
        }
        have += (size_t)n;
    }
    line[have] = '\0';
    close(ready[0]);
    REQUIRE(sscanf(line, "ready %" SCNx64 " %" SCNx64, &c.runtime, &c.decoy) == 2);
    return c;
}

static void stop_rt(rt_child *c)
{
    int status;

    close(c->stdin_w);
    child_reap(c->pid, &status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static const char *tmp_path(const char *name)
{
    REQUIRE(ntmpfiles < 16);
    snprintf(tmpfiles[ntmpfiles], sizeof tmpfiles[0], "%s/%s", tmpdir, name);
    return tmpfiles[ntmpfiles++];
}

static uint8_t *slurp(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    uint8_t *buf;
    size_t done = 0;

    REQUIRE(fd >= 0 && fstat(fd, &st) == 0);
    buf = malloc((size_t)st.st_size + 1);
    REQUIRE(buf != NULL);
    while (done < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + done, (size_t)st.st_size - done);

        REQUIRE(n > 0);
        done += (size_t)n;
    }
    close(fd);
    *len = done;
    return buf;
}

static void spit(const char *path, const uint8_t *buf, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    size_t done = 0;

    REQUIRE(fd >= 0);
    while (done < len) {
        ssize_t n = write(fd, buf + done, len - done);

        REQUIRE(n > 0);
        done += (size_t)n;
    }
    REQUIRE(close(fd) == 0);
}

/* The mapping of path at file offset 0 in pid's maps (0 if none).  With
 * deleted set, the line must carry the " (deleted)" suffix. */
static uint64_t map_start(pid_t pid, const char *path, uint64_t *end, bool deleted)
{
    char maps[64], line[8192], want[4200];
    FILE *fp;
    uint64_t found = 0;

    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
    snprintf(want, sizeof want, "%s%s", path, deleted ? " (deleted)" : "");
    fp = fopen(maps, "re");
    REQUIRE(fp != NULL);
    while (fgets(line, sizeof line, fp) != NULL) {
        uint64_t s, e, off;
        int n = 0;

        line[strcspn(line, "\n")] = '\0';
        if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64 " %*s %*s %n", &s, &e,
                   &off, &n) == 3 && n > 0 && off == 0 && strcmp(line + n, want) == 0) {
            found = s;
            if (end != NULL)
                *end = e;
            break;
        }
    }
    fclose(fp);
    return found;
}

/* The mapping of pid that contains addr. */
static void mapping_of(pid_t pid, uint64_t addr, uint64_t *start, uint64_t *end)
{
    char maps[64], line[8192];
    FILE *fp;

    *start = *end = 0;
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)pid);
    fp = fopen(maps, "re");
    REQUIRE(fp != NULL);
    while (fgets(line, sizeof line, fp) != NULL) {
        uint64_t s, e;

        if (sscanf(line, "%" SCNx64 "-%" SCNx64, &s, &e) == 2 && s <= addr && addr < e) {
            *start = s;
            *end = e;
            break;
        }
    }
    fclose(fp);
}

static int find(pid_t pid, uint64_t *found, char *err, size_t errlen)
{
    pyf_reader r;
    int rc;

    *found = 0;
    err[0] = '\0';
    rc = pyf__pid_reader_create((int)pid, &r, err, errlen);
    if (rc != PYF_OK)
        return rc;
    rc = pyf__pid_find_runtime((int)pid, &r, found, err, errlen);
    pyf__pid_reader_destroy(&r);
    return rc;
}

/* ==== searches in children ============================================== */

static void test_elf_function(void)
{
    rt_child c;
    uint64_t start, found = 0, sh_addr = 0, load = 0;

    fprintf(stderr, "-- ELF function on %s\n", PYF_RT_TARGET);
    c = spawn_rt(PYF_RT_TARGET, "section");
    start = map_start(c.pid, PYF_RT_TARGET, NULL, false);
    CHECK(start != 0);
    CHECK(c.runtime != 0);
    CHECK_RC(pyf_elf_find_runtime(PYF_RT_TARGET, start, &found, NULL), PYF_OK);
    CHECK_ADDR(found, c.runtime);
    CHECK_RC(pyf__elf_find_pyruntime(PYF_RT_TARGET, &sh_addr, &load), PYF_OK);
    CHECK_ADDR(start + sh_addr - load, c.runtime);
    stop_rt(&c);

    /* no section, not there, not a regular file, bad arguments: each
     * failure says which file and what was wrong */
    {
        static const struct {
            const char *path;
            int rc;
            const char *says;
        } bad[] = {
            {"/proc/self/exe", PYF_ENOTPY, "/proc/self/exe has no .PyRuntime section"},
            {"/nonexistent/python3", PYF_EIO,
             "cannot read /nonexistent/python3: No such file or directory"},
            {"/", PYF_EIO, "cannot read /: not a regular file"},
            {NULL, PYF_EINVAL, "path is NULL"},
        };
        pyf_failure f;

        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            memset(&f, 0, sizeof f);
            f.struct_size = sizeof f;
            CHECK_RC(pyf_elf_find_runtime(bad[i].path, 0, &found, &f), bad[i].rc);
            CHECK_EQ_INT(f.code, bad[i].rc);
            CHECK_EQ_STR(f.detail, bad[i].says);
        }
        CHECK_RC(pyf_elf_find_asyncio(PYF_RT_TARGET, 0, &found, &f), PYF_ENOTPY);
        CHECK(strstr(f.detail, "has no .AsyncioDebug section") != NULL);
        CHECK_RC(pyf_elf_find_runtime(PYF_RT_TARGET, 0, NULL, &f), PYF_EINVAL);
        CHECK_EQ_STR(f.detail, "found is NULL");
        CHECK_RC(pyf_elf_find_runtime(PYF_RT_TARGET, start, &found, &f), PYF_OK);
        CHECK(f.code == 0 && f.detail[0] == '\0');
        f.struct_size = PYF_FAILURE_SIZE_V0 - 1; /* too small: refused, untouched */
        CHECK_RC(pyf_elf_find_runtime(PYF_RT_TARGET, start, &found, &f), PYF_EINVAL);
        CHECK(f.code == 0);
    }
    {
        int p[2];

        REQUIRE(pipe(p) == 0);
        CHECK_RC(pyf__elf_find_pyruntime_fd(p[0], &sh_addr, &load), PYF_EIO);
        close(p[0]);
        close(p[1]);
    }
}

static void test_section_in_python_file(const char *pyexe)
{
    rt_child c;
    uint64_t found;
    char err[PYF__ERRBUF];
    pyf_python_info info;
    pyf_reader r;

    fprintf(stderr, "-- .PyRuntime of a python-named executable\n");
    c = spawn_rt(pyexe, "decoy");
    /* The decoy comes first in the same writable mapping: a cookie scan
     * would report it, so finding the section proves the ELF path. */
    CHECK(c.decoy != 0 && c.decoy < c.runtime);
    CHECK_RC(find(c.pid, &found, err, sizeof err), PYF_OK);
    CHECK_ADDR(found, c.runtime);

    memset(&info, 0, sizeof info);
    REQUIRE(pyf__pid_reader_create((int)c.pid, &r, err, sizeof err) == PYF_OK);
    CHECK_RC(pyf_runtime_probe(&r, found, &info, NULL), PYF_OK);
    CHECK(info.major == 3 && info.minor == 15);
    pyf__pid_reader_destroy(&r);

    /* the public entry point, discovering the runtime itself */
    {
        pyf_target *t = NULL;

        pyf_failure f;
        memset(&f, 0, sizeof f);
        f.struct_size = sizeof f;
        CHECK_RC(pyf_target_open_pid((int)c.pid, 0, NULL, &t, &f), PYF_OK);
        snprintf(err, sizeof err, "%s", f.detail);
        if (t != NULL) {
            memset(&info, 0, sizeof info);
            CHECK_RC(pyf_target_python(t, &info), PYF_OK);
            CHECK_ADDR(info.runtime_addr, c.runtime);
            pyf_target_close(t);
        } else {
            fprintf(stderr, "   pyf_target_open_pid: %s\n", err);
        }
    }
    stop_rt(&c);
}

/* Extension modules ("x.cpython-315-x86_64-linux-gnu.so": "python" in the
 * name) never hold the runtime: however many are mapped before libpython
 * (a process that imported a hundred of them), the search reaches it. */
static void test_many_extension_modules(const char *pyexe)
{
    enum { NEXT = 100 };
    static pyf_mapping maps[NEXT + 1];
    static char paths[NEXT][64];
    rt_child c;
    pyf_reader r;
    pyf_locate_request req;
    pyf_runtime_location out;
    pyf_failure f;
    char err[PYF__ERRBUF];

    fprintf(stderr, "-- %d extension modules mapped before the python file\n", NEXT);
    c = spawn_rt(pyexe, "section");
    for (int i = 0; i < NEXT; i++) {
        snprintf(paths[i], sizeof paths[i], "/nonexistent/m%d.cpython-315-x86_64-linux-gnu.so",
                 i);
        maps[i] = (pyf_mapping){0x10000 + (uint64_t)i * 0x1000, 0x10000 + (uint64_t)i * 0x1000
                                + 0x1000, 0, PYF_MAP_READ, 0, paths[i], NULL};
    }
    maps[NEXT] = (pyf_mapping){map_start(c.pid, pyexe, NULL, false), 0, 0, PYF_MAP_READ, 0,
                               pyexe, NULL};
    maps[NEXT].end = maps[NEXT].start + 0x1000;
    REQUIRE(maps[NEXT].start != 0);
    REQUIRE(pyf__pid_reader_create((int)c.pid, &r, err, sizeof err) == PYF_OK);
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.methods = PYF_LOCATE_SECTION; /* no cookie scan to fall back on */
    req.maps = maps;
    req.nmaps = NEXT + 1;
    memset(&out, 0, sizeof out);
    out.struct_size = sizeof out;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    CHECK_RC(pyf_runtime_locate(&r, &req, &out, &f), PYF_OK);
    CHECK_ADDR(out.addr, c.runtime);
    pyf__pid_reader_destroy(&r);
    stop_rt(&c);
}

static void test_scan_file_mapping(void)
{
    rt_child c;
    uint64_t found;
    char err[PYF__ERRBUF];

    fprintf(stderr, "-- cookie scan of a file mapping without \"python\" in its name\n");
    c = spawn_rt(PYF_RT_TARGET, "section");
    CHECK_RC(find(c.pid, &found, err, sizeof err), PYF_OK);
    CHECK_ADDR(found, c.runtime);
    stop_rt(&c);
}

static void test_deleted(const uint8_t *image, size_t len)
{
    const char *path = tmp_path("libpython3.15-rt-deleted");
    rt_child c;
    uint64_t start, end = 0, found, expect;
    char err[PYF__ERRBUF], mf[128];
    int fd;

    fprintf(stderr, "-- deleted executable\n");
    spit(path, image, len, 0755);
    c = spawn_rt(path, "decoy");
    REQUIRE(unlink(path) == 0);
    start = map_start(c.pid, path, &end, true);
    CHECK(start != 0); /* the maps line says " (deleted)" */

    /* /proc/PID/map_files needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE).
     * Without it the section cannot be read and the scan finds the decoy. */
    snprintf(mf, sizeof mf, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)c.pid, start, end);
    fd = open(mf, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        expect = c.runtime;
    } else {
        fprintf(stderr, "   %s not readable (%s): expecting the scan result\n", mf,
                strerror(errno));
        expect = c.decoy;
    }
    CHECK_RC(find(c.pid, &found, err, sizeof err), PYF_OK);
    CHECK_ADDR(found, expect);
    stop_rt(&c);
}

static void test_anon(const char *pyexe)
{
    rt_child c;
    uint64_t found = 0, s, e;
    char err[PYF__ERRBUF];
    pyf_reader r;

    fprintf(stderr, "-- cookie scan of an anonymous mapping\n");
    c = spawn_rt(pyexe, "anon");
    CHECK_RC(find(c.pid, &found, err, sizeof err), PYF_OK);
    CHECK_ADDR(found, c.runtime);

    /* the debugger entry point over the same mapping */
    mapping_of(c.pid, c.runtime, &s, &e);
    REQUIRE(s != 0);
    REQUIRE(pyf__pid_reader_create((int)c.pid, &r, err, sizeof err) == PYF_OK);
    found = 0;
    CHECK_RC(pyf_runtime_find_in_range(&r, s, e, &found, NULL), PYF_OK);
    CHECK_ADDR(found, c.runtime);
    CHECK_RC(pyf_runtime_find_in_range(&r, s, c.runtime, &found, NULL), PYF_ENOTPY);
    CHECK_RC(pyf_runtime_find_in_range(&r, c.runtime + 8, e, &found, NULL), PYF_ENOTPY);
    pyf__pid_reader_destroy(&r);
    stop_rt(&c);
}

static void test_none(const char *pyexe)
{
    const char *exes[2] = {pyexe, PYF_RT_TARGET};

    for (int i = 0; i < 2; i++) {
        rt_child c;
        uint64_t found = 1;
        char err[PYF__ERRBUF], want[96];

        fprintf(stderr, "-- no runtime at all (%s)\n", exes[i]);
        c = spawn_rt(exes[i], "none");
        CHECK_RC(find(c.pid, &found, err, sizeof err), PYF_ENOTPY);
        fprintf(stderr, "   message: %s\n", err);
        /* a file of CPython's (its Py_GetVersion, its .PyRuntime) without a
         * runtime: not "not a Python process", and no version made up */
        snprintf(want, sizeof want, "no CPython runtime found in process %d (", (int)c.pid);
        CHECK_MSG(strstr(err, want) == err, "%s", err);
        CHECK(strstr(err, "\"xdebugpy\" cookie") != NULL);
        CHECK(strstr(err, "unsupported") == NULL && strstr(err, " says it is ") == NULL);
        CHECK(strstr(err, ".PyRuntime section of") != NULL &&
              strstr(err, "holds no valid runtime") != NULL);
        stop_rt(&c);
    }
}

/* A process without anything of CPython, named as every front end names it. */
static void test_not_python(void)
{
    int gate[2];
    pid_t pid;
    char c, err[PYF__ERRBUF], want[96];
    uint64_t found = 1;

    fprintf(stderr, "-- a process that is not Python (sleep)\n");
    REQUIRE(pipe2(gate, O_CLOEXEC) == 0);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        execlp("sleep", "sleep", "600", (char *)NULL);
        _exit(127);
    }
    child_track(pid);
    close(gate[1]);
    /* end of file once the child has exec'd (the pipe is close-on-exec) */
    REQUIRE(read(gate[0], &c, 1) == 0);
    close(gate[0]);
    CHECK_RC(find(pid, &found, err, sizeof err), PYF_ENOTPY);
    snprintf(want, sizeof want, "process %d (sleep) is not a Python process", (int)pid);
    CHECK_EQ_STR(err, want);
    kill(pid, SIGKILL);
    child_reap(pid, NULL);
}

static void test_future_version(const char *pyexe)
{
    rt_child c;
    uint64_t found = 1;
    char err[PYF__ERRBUF];

    fprintf(stderr, "-- a table of an unsupported version\n");
    c = spawn_rt(pyexe, "future");
    CHECK_RC(find(c.pid, &found, err, sizeof err), PYF_EVERSION);
    fprintf(stderr, "   message: %s\n", err);
    /* the library names the version itself, in the words of every front end */
    CHECK_EQ_STR(err, "unsupported CPython 3.16.0 (pyframes reads CPython 3.8-3.15)");
    stop_rt(&c);
}

/* Versions without _Py_DebugOffsets and without Py_Version (2.7-3.10): named
 * from the string Py_GetVersion() keeps in .bss, in the python file and in
 * a program of another name that holds CPython's code; strings that only
 * start like a version name nothing. */
static void test_old_version(const char *pyexe)
{
    const char *exes[2] = {pyexe, PYF_RT_TARGET};

    for (int i = 0; i < 2; i++) {
        rt_child c;
        uint64_t found = 1;
        char err[PYF__ERRBUF];

        fprintf(stderr, "-- a CPython 3.7 by its Py_GetVersion() buffer (%s)\n", exes[i]);
        c = spawn_rt(exes[i], "old");
        CHECK_RC(find(c.pid, &found, err, sizeof err), PYF_EVERSION);
        CHECK_EQ_STR(err, "unsupported CPython 3.7.17 (pyframes reads CPython 3.8-3.15)");
        stop_rt(&c);

        fprintf(stderr, "-- strings like a version that are not Py_GetVersion's (%s)\n",
                exes[i]);
        c = spawn_rt(exes[i], "garbled");
        CHECK_RC(find(c.pid, &found, err, sizeof err), PYF_ENOTPY);
        fprintf(stderr, "   message: %s\n", err);
        CHECK(strstr(err, "no CPython runtime found in process") == err);
        CHECK(strstr(err, "unsupported") == NULL && strstr(err, "3.8") == NULL &&
              strstr(err, "3.9") == NULL && strstr(err, "3.10") == NULL);
        stop_rt(&c);
    }
}

/* A CPython 3.12 whose _PyRuntime is not the size of the 3.12 layout the
 * library carries (a debug build's is 475960 bytes, not 459944): refused by
 * name, never read with the wrong layout. */
static void test_unknown_layout(const char *pyexe)
{
    rt_child c;
    uint64_t found = 1;
    char err[PYF__ERRBUF];
    pyf_reader r;

    fprintf(stderr, "-- a CPython 3.12 of another runtime size\n");
    c = spawn_rt(pyexe, "debug312");
    CHECK_RC(find(c.pid, &found, err, sizeof err), PYF_EVERSION);
    CHECK_EQ_STR(err, "unsupported CPython 3.12.1 build: its _PyRuntime is 4096 bytes, not the "
                 "459944 of the CPython 3.12 layout pyframes knows (a debug or otherwise "
                 "modified build, whose layout it does not guess)");
    CHECK_ADDR(found, 0);
    /* through pyf_runtime_locate, as a debugger asks: the version it refuses */
    {
        pyf_locate_request req;
        pyf_runtime_location out;
        pyf_mapping m;
        uint64_t start = map_start(c.pid, pyexe, NULL, false);
        pyf_failure f;

        REQUIRE(start != 0);
        REQUIRE(pyf__pid_reader_create((int)c.pid, &r, err, sizeof err) == PYF_OK);
        memset(&m, 0, sizeof m);
        m.start = start;
        m.end = start + 1;
        m.flags = PYF_MAP_READ;
        m.path = pyexe;
        memset(&req, 0, sizeof req);
        req.struct_size = sizeof req;
        req.maps = &m;
        req.nmaps = 1;
        req.target_name = "the core";
        memset(&out, 0, sizeof out);
        out.struct_size = sizeof out;
        memset(&f, 0, sizeof f);
        f.struct_size = sizeof f;
        CHECK_RC(pyf_runtime_locate(&r, &req, &out, &f), PYF_EVERSION);
        CHECK_EQ_INT(out.python.hexversion, 0x030c01f0);
        CHECK(strstr(f.detail, "unsupported CPython 3.12.1 build: its _PyRuntime is 4096") ==
              f.detail);
        /* without the section: nothing of the runtime found, named so */
        req.methods = PYF_LOCATE_SCAN;
        CHECK_RC(pyf_runtime_locate(&r, &req, &out, &f), PYF_ENOTPY);
        CHECK_MSG(strstr(f.detail, "no CPython runtime found in the core: ") == f.detail &&
                  strstr(f.detail, " says it is CPython 3.12.1") != NULL, "%s", f.detail);
        pyf__pid_reader_destroy(&r);
    }
    stop_rt(&c);
}

static void test_dead(void)
{
    pid_t pid;
    uint64_t found;
    char err[PYF__ERRBUF];
    pyf_reader r;

    fprintf(stderr, "-- dead process\n");
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        _exit(0);
    child_track(pid);
    /* a reader made while the process lived, used after it is gone */
    REQUIRE(pyf__pid_reader_create((int)pid, &r, err, sizeof err) == PYF_OK);
    child_reap(pid, NULL);
    CHECK_RC(pyf__pid_find_runtime((int)pid, &r, &found, err, sizeof err), PYF_ENOPROC);
    CHECK(strstr(err, "does not exist") != NULL);
    pyf__pid_reader_destroy(&r);
    CHECK_RC(find(pid, &found, err, sizeof err), PYF_ENOPROC);
    CHECK_RC(pyf__pid_find_runtime(0, &r, &found, err, sizeof err), PYF_EINVAL);
}

static void test_eperm(const char *pyexe)
{
    rt_child c;
    pid_t helper;
    int status;

    if (geteuid() != 0) {
        fprintf(stderr, "-- EPERM: not root, cannot drop to another uid; not checked\n");
        return;
    }
    fprintf(stderr, "-- EPERM\n");
    c = spawn_rt(pyexe, "section");
    helper = fork();
    REQUIRE(helper >= 0);
    if (helper == 0) {
        uint64_t found;
        char err[PYF__ERRBUF];
        int rc;

        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
            _exit(10);
        rc = find(c.pid, &found, err, sizeof err);
        fprintf(stderr, "   message: %s\n", err);
        if (rc != PYF_EPERM)
            _exit(11);
        if (strstr(err, "permission denied") == NULL || strstr(err, "as root") == NULL)
            _exit(12);
        _exit(0);
    }
    child_track(helper);
    child_reap(helper, &status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    stop_rt(&c);
}

/* This process, which has no .PyRuntime: the scan finds a table in a small
 * anonymous mapping (run first, before probes leave table copies on the
 * stack). */
static void test_self_search(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t found = 0;
    char err[PYF__ERRBUF];

    fprintf(stderr, "-- search in this process\n");
    REQUIRE(m != MAP_FAILED);
    REQUIRE(pyf_test_fill_offsets(m + 512, pg, 15, 0x030f02f0) != 0);
    CHECK_RC(find(getpid(), &found, err, sizeof err), PYF_OK);
    CHECK_ADDR(found, (uint64_t)(uintptr_t)(m + 512));
    memset(m, 0, 2 * pg);
    munmap(m, 2 * pg);
}

/* ==== pyf_runtime_find_in_range over this process ======================== */

static void test_range_self(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *m = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint64_t base = (uint64_t)(uintptr_t)m, found = 0, table;
    char err[PYF__ERRBUF];
    pyf_reader r;

    fprintf(stderr, "-- pyf_runtime_find_in_range over this process\n");
    REQUIRE(m != MAP_FAILED);
    memset(m, 0, 4 * pg);
    /* a cookie that does not start a valid table, then a hole, then the
     * table in the last page */
    memcpy(m + 64, PYF__COOKIE, 8);
    memcpy(m + 72, &(uint64_t){0x031000F0}, 8); /* CPython 3.16.0: refused */
    /* a valid table at an unaligned address is not a hit */
    REQUIRE(pyf_test_fill_offsets(m + pg + 4, pg - 4, 15, 0x030f02f0) != 0);
    REQUIRE(munmap(m + 2 * pg, pg) == 0);
    REQUIRE(pyf_test_fill_offsets(m + 3 * pg + 16, pg - 16, 15, 0x030f02f0) != 0);
    table = base + 3 * pg + 16;

    REQUIRE(pyf__pid_reader_create((int)getpid(), &r, err, sizeof err) == PYF_OK);
    CHECK_RC(pyf_runtime_find_in_range(&r, base, base + 4 * pg, &found, NULL), PYF_OK);
    CHECK_ADDR(found, table);
    found = 0;
    CHECK_RC(pyf_runtime_find_in_range(&r, base + 3, base + 4 * pg, &found, NULL), PYF_OK);
    CHECK_ADDR(found, table);
    CHECK_RC(pyf_runtime_find_in_range(&r, base, table + 7, &found, NULL), PYF_ENOTPY);
    CHECK_RC(pyf_runtime_find_in_range(&r, base, base, &found, NULL), PYF_ENOTPY);
    /* each failure says why */
    {
        pyf_failure f;
        char want[256];

        memset(&f, 0, sizeof f);
        f.struct_size = sizeof f;
        CHECK_RC(pyf_runtime_find_in_range(&r, base, table, &found, &f), PYF_ENOTPY);
        snprintf(want, sizeof want, "no CPython runtime found in 0x%" PRIx64 "-0x%" PRIx64
                 ": the runtime at 0x%" PRIx64 " (the range scanned) was rejected: "
                 "unsupported CPython version (PYF_EVERSION): unsupported CPython 3.16.0",
                 base, table, base + 64);
        CHECK_MSG(strncmp(f.detail, want, strlen(want)) == 0, "%s", f.detail);
        CHECK_EQ_INT(f.code, PYF_ENOTPY);
        CHECK_RC(pyf_runtime_find_in_range(&r, base + 128, base + 256, &found, &f), PYF_ENOTPY);
        snprintf(want, sizeof want, "no CPython runtime found in 0x%" PRIx64 "-0x%" PRIx64
                 ": no 8-aligned \"xdebugpy\" cookie there", base + 128, base + 256);
        CHECK_EQ_STR(f.detail, want);
        CHECK_RC(pyf_runtime_find_in_range(&r, base + 8, base, &found, &f), PYF_EINVAL);
        CHECK(strstr(f.detail, "ends before it starts") != NULL);
        CHECK_RC(pyf_runtime_find_in_range(NULL, base, base + pg, &found, &f), PYF_EINVAL);
        CHECK_EQ_STR(f.detail, "no reader given");
        CHECK_RC(pyf_runtime_find_in_range(&r, base, base + pg, NULL, &f), PYF_EINVAL);
        CHECK_EQ_STR(f.detail, "found is NULL");
        CHECK_RC(pyf_runtime_find_in_range(&r, base, base + 4 * pg, &found, &f), PYF_OK);
        CHECK(f.code == 0 && f.detail[0] == '\0');
    }

    /* an unreadable range larger than the scan budget: stops, bounded */
    {
        size_t big = (size_t)600 << 20;
        void *none = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                          -1, 0);

        REQUIRE(none != MAP_FAILED);
        pyf_failure f;

        memset(&f, 0, sizeof f);
        f.struct_size = sizeof f;
        CHECK_RC(pyf_runtime_find_in_range(&r, (uint64_t)(uintptr_t)none,
                                           (uint64_t)(uintptr_t)none + big, &found, &f),
                 PYF_EDEPTH);
        CHECK(strstr(f.detail, ": the scan stopped after 512 MiB") != NULL);
        munmap(none, big);
    }
    pyf__pid_reader_destroy(&r);
    munmap(m, 2 * pg);
    munmap(m + 3 * pg, pg);
}

/* ==== ELF robustness ===================================================== */

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static uint16_t rd16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static void wr64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}
static void wr16(uint8_t *p, uint16_t v)
{
    memcpy(p, &v, 2);
}

static bool acceptable(int rc)
{
    return rc == PYF_OK || rc == PYF_ENOTPY || rc == PYF_ECORRUPT || rc == PYF_ENOTSUP;
}

static int elf_on(const char *path, const uint8_t *buf, size_t len, uint64_t *found)
{
    uint64_t sh_addr, load;
    int rc, rc2;

    spit(path, buf, len, 0644);
    *found = 0;
    rc = pyf_elf_find_runtime(path, 0x7f0000000000ull, found, NULL);
    rc2 = pyf__elf_find_pyruntime(path, &sh_addr, &load);
    if (rc2 != rc) {
        fprintf(stderr, "exported and internal ELF readers disagree: %d vs %d\n", rc, rc2);
        check_failures++;
    }
    /* what the search reads of a python file (its symbol tables too):
     * found where the section is, or a named failure */
    {
        pyf__elf_python facts;
        int rc3 = pyf__elf_python_facts(path, true, &facts);

        if (rc3 != PYF_OK && rc3 != PYF_ECORRUPT && rc3 != PYF_ENOTSUP) {
            fprintf(stderr, "python facts: unexpected %s\n", pyf_error_name(rc3));
            check_failures++;
        }
        if (rc == PYF_OK && rc3 == PYF_OK && (facts.section != sh_addr || facts.load != load)) {
            fprintf(stderr, "python facts and the section lookup disagree\n");
            check_failures++;
        }
    }
    return rc;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void test_elf_robust(const uint8_t *image, size_t len)
{
    const char *path = tmp_path("fuzz.elf");
    uint8_t *buf = malloc(len);
    uint64_t found, expect, shoff, phoff, strtab_off, strtab_size;
    uint16_t shentsize, shnum, shstrndx, phnum;
    size_t table_end;
    int rc, counts[4] = {0};
    uint64_t seed = 0x9e3779b97f4a7c15ull;

    fprintf(stderr, "-- ELF robustness (%zu-byte image)\n", len);
    REQUIRE(buf != NULL && len > 64);
    REQUIRE(elf_on(path, image, len, &expect) == PYF_OK);

    phoff = rd64(image + 32);
    shoff = rd64(image + 40);
    phnum = rd16(image + 56);
    shentsize = rd16(image + 58);
    shnum = rd16(image + 60);
    shstrndx = rd16(image + 62);
    REQUIRE(shentsize == 64 && shstrndx < shnum && shoff + (uint64_t)shnum * 64 <= len);
    strtab_off = rd64(image + shoff + shstrndx * 64u + 24);
    strtab_size = rd64(image + shoff + shstrndx * 64u + 32);
    REQUIRE(strtab_off + strtab_size <= len);
    table_end = (size_t)(shoff + (uint64_t)shnum * 64);

    /* truncations at every 1/64 of the file */
    for (int k = 0; k < 64; k++) {
        size_t cut = len * (size_t)k / 64;

        rc = elf_on(path, image, cut, &found);
        if (cut < table_end)
            CHECK_RC(rc, PYF_ECORRUPT);
        else
            CHECK(acceptable(rc));
    }

    /* targeted corruptions */
#define MUTATE(stmt, want)                                                     \
    do {                                                                       \
        memcpy(buf, image, len);                                               \
        stmt;                                                                  \
        CHECK_RC(elf_on(path, buf, len, &found), want);                        \
    } while (0)
    MUTATE(buf[0] = 0, PYF_ECORRUPT);                     /* not ELF */
    MUTATE(buf[4] = 1, PYF_ENOTSUP);                      /* ELFCLASS32 */
    MUTATE(buf[5] = 2, PYF_ENOTSUP);                      /* big-endian */
    MUTATE(wr16(buf + 62, shnum), PYF_ECORRUPT);          /* e_shstrndx == e_shnum */
    MUTATE(wr16(buf + 62, 0xfffe), PYF_ECORRUPT);
    MUTATE(wr16(buf + 58, 32), PYF_ECORRUPT);             /* e_shentsize too small */
    MUTATE(wr64(buf + 40, len), PYF_ECORRUPT);            /* e_shoff at EOF */
    MUTATE(wr64(buf + 40, UINT64_MAX - 16), PYF_ECORRUPT); /* e_shoff + size wraps */
    MUTATE(wr16(buf + 60, 0xffff), PYF_ECORRUPT);         /* e_shnum past EOF */
    MUTATE(wr16(buf + 60, 0), PYF_ECORRUPT);              /* extended count in shdr 0 (0) */
    MUTATE(wr64(buf + 40, 0), PYF_ENOTPY);                /* no section headers */
    MUTATE(wr16(buf + 62, 0), PYF_ENOTPY);                /* no section names */
    MUTATE(wr64(buf + shoff + shstrndx * 64u + 32, UINT64_MAX), PYF_ECORRUPT);
    MUTATE(wr64(buf + shoff + shstrndx * 64u + 32, (uint64_t)2 << 20), PYF_ECORRUPT);
    MUTATE(wr64(buf + shoff + shstrndx * 64u + 24, UINT64_MAX - 4), PYF_ECORRUPT);
    MUTATE(wr64(buf + 32, 0), PYF_ECORRUPT);              /* no program headers */
    MUTATE(wr64(buf + 32, len - 8), PYF_ECORRUPT);        /* phdrs past EOF */
    MUTATE(wr16(buf + 54, 8), PYF_ECORRUPT);              /* e_phentsize too small */
    MUTATE(for (uint16_t i = 0; i < phnum; i++) wr16(buf + phoff + i * 56u, 0x7),
           PYF_ECORRUPT);                                 /* no PT_LOAD */
    MUTATE(
        {
            uint8_t *p = memmem(buf + strtab_off, (size_t)strtab_size, ".PyRuntime", 11);
            REQUIRE(p != NULL);
            p[9] = 'X';
        },
        PYF_ENOTPY);                                      /* renamed section */
    MUTATE(
        {
            uint8_t *p = memmem(buf + strtab_off, (size_t)strtab_size, ".PyRuntime", 11);
            REQUIRE(p != NULL);
            p[10] = 'X'; /* ".PyRuntimeX" unterminated into the next name */
        },
        PYF_ENOTPY);
#undef MUTATE

    /* random byte flips in the parts the reader looks at */
    for (int iter = 0; iter < 400; iter++) {
        int flips = 1 + (int)(xorshift(&seed) % 3);

        memcpy(buf, image, len);
        for (int f = 0; f < flips; f++) {
            uint64_t lo, span, r = xorshift(&seed);

            switch (r % 4) {
            case 0: lo = 0; span = 64; break;
            case 1: lo = phoff; span = (uint64_t)phnum * 56; break;
            case 2: lo = shoff; span = (uint64_t)shnum * 64; break;
            default: lo = strtab_off; span = strtab_size; break;
            }
            buf[lo + (r >> 8) % span] ^= (uint8_t)(1 + (r >> 40) % 255);
        }
        rc = elf_on(path, buf, len, &found);
        if (!acceptable(rc)) {
            fprintf(stderr, "flip iteration %d: unexpected %s\n", iter, pyf_error_name(rc));
            check_failures++;
        }
        counts[rc == PYF_OK ? 0 : rc == PYF_ENOTPY ? 1 : rc == PYF_ECORRUPT ? 2 : 3]++;
    }
    fprintf(stderr, "   flips: %d ok, %d ENOTPY, %d ECORRUPT, %d ENOTSUP\n", counts[0],
            counts[1], counts[2], counts[3]);
    /* the flips reached both outcomes */
    CHECK(counts[0] > 0 && counts[2] > 0);
    free(buf);
}

int main(void)
{
    char pyexe_buf[4200], *slash;
    const char *pyexe;
    uint8_t *image;
    size_t len;

    atexit(cleanup);
    signal(SIGSEGV, on_fatal);
    signal(SIGBUS, on_fatal);
    signal(SIGABRT, on_fatal);
    signal(SIGTERM, on_fatal);
    signal(SIGINT, on_fatal);
    /* Temporary files next to rt_target: the build tree allows exec. */
    snprintf(tmpdir, sizeof tmpdir, "%s", PYF_RT_TARGET);
    slash = strrchr(tmpdir, '/');
    REQUIRE(slash != NULL);
    strcpy(slash + 1, "rt_tmp.XXXXXX");
    REQUIRE(mkdtemp(tmpdir) != NULL);

    image = slurp(PYF_RT_TARGET, &len);
    snprintf(pyexe_buf, sizeof pyexe_buf, "%s", tmp_path("python3.15-rt"));
    pyexe = pyexe_buf;
    spit(pyexe, image, len, 0755);

    test_self_search();
    test_elf_function();
    test_section_in_python_file(pyexe);
    test_many_extension_modules(pyexe);
    test_scan_file_mapping();
    test_deleted(image, len);
    test_anon(pyexe);
    test_none(pyexe);
    test_future_version(pyexe);
    test_old_version(pyexe);
    test_unknown_layout(pyexe);
    test_not_python();
    test_dead();
    test_eperm(pyexe);
    test_range_self();
    test_elf_robust(image, len);

    free(image);
    cleanup();
    return check_end();
}
