/*
 * fuzz_core.c - libFuzzer target: the core reader.  The input is a core
 * file (an ELF core, a minidump, either compressed when this build reads
 * the compression: the seeds are all of them), written to a memfd and
 * opened with pyf_core_open under a sysroot that holds two files a core
 * may name (/lib/libx.so, whose build id the seeds hold, and /lib/fifo.so,
 * a FIFO).  Then everything the core says is read and checked, every
 * mapping read at its edges and across them (one readv too), and a
 * target opened on the core (the runtime search over its mappings) and
 * walked when one is found.
 *
 * Checked beyond "no crash": every call returns a PYF_E* code; a failure
 * agrees with its code and says why; the info's strings and the files'
 * paths are NUL-terminated where they should be; the threads' register
 * counts and the mappings' order hold; reads give PYF_OK, PYF_EFAULT or
 * PYF_EIO, each failure with the reader's words; no leak.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core_image.h"
#include "fuzz_drive.h"
#include "pyframes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int g_fd = -1;
static char g_path[64], g_root[64] = "/tmp/pyframes-fuzz-core-XXXXXX";
static volatile uint64_t g_sink;

static void setup(void)
{
    static const uint8_t id[20] = {0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                   11, 12, 13, 14, 15, 16, 17, 18, 19};
    char path[128];
    ci_bytes f;

    g_fd = memfd_create("pyframes-fuzz-core", MFD_CLOEXEC);
    if (g_fd < 0 || mkdtemp(g_root) == NULL)
        fz_die("cannot set up: %s", "memfd_create or mkdtemp failed");
    snprintf(g_path, sizeof g_path, "/proc/self/fd/%d", g_fd);
    snprintf(path, sizeof path, "%s/lib", g_root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/lib/libx.so", g_root);
    ci_elf_file(&f, 0x3000, id, sizeof id, 0xab);
    if (ci_write(path, &f) != 0)
        fz_die("cannot write %s", path);
    ci_free(&f);
    snprintf(path, sizeof path, "%s/lib/fifo.so", g_root);
    mkfifo(path, 0600);
}

static void read_range(const pyf_reader *r, uint64_t addr, size_t len)
{
    uint8_t buf[256];
    if (len > sizeof buf)
        len = sizeof buf;
    int rc = r->read(r->arg, addr, buf, len);
    if (rc != PYF_OK && rc != PYF_EFAULT && rc != PYF_EIO)
        fz_die("read of 0x%llx: %d", (unsigned long long)addr, rc);
    if (rc != PYF_OK) {
        const char *m = r->message(r->arg);
        if (m == NULL || fz_touch(m, 1024, "reader message") == 0)
            fz_die("a read of 0x%llx failed without the reader's words",
                   (unsigned long long)addr);
    } else {
        for (size_t i = 0; i < len; i++)
            g_sink += buf[i];
    }
}

static void read_core(pyf_core *c)
{
    pyf_core_info info;
    const pyf_core_thread *th;
    const pyf_mapping *maps;
    const pyf_core_file *files;
    uint32_t n, nmaps;
    pyf_reader r;

    memset(&info, 0xA5, sizeof info);
    info.struct_size = sizeof info;
    fz_check_rc(pyf_core_info_get(c, &info), "pyf_core_info_get");
    fz_touch(info.executable, sizeof info.executable, "info.executable");
    fz_touch(info.command, sizeof info.command, "info.command");
    size_t problem = fz_touch(info.problem, sizeof info.problem, "info.problem");
    uint32_t partial = PYF_CORE_CUT_SHORT | PYF_CORE_NOTES_PARTIAL | PYF_CORE_STREAM_ENDED;
    if ((info.flags & partial) && problem == 0)
        fz_die("a partial core (flags 0x%x) says no problem", info.flags);
    if (pyf_core_threads(c, &th, &n) != PYF_OK || n != info.nthreads)
        fz_die("pyf_core_threads: %u threads, the info says %u", n, info.nthreads);
    for (uint32_t i = 0; i < n; i++) {
        if (th[i].nregs > PYF_CORE_REGS_MAX)
            fz_die("thread %u: %u registers", i, th[i].nregs);
        if ((th[i].flags & PYF_CORE_THREAD_SIGNALLED) && (i != 0 || th[i].tid != info.signal_tid))
            fz_die("thread %u flagged signalled, not first or not the signal's", i);
        for (uint32_t k = 0; k < th[i].nregs; k++)
            g_sink += th[i].regs[k];
    }
    if (pyf_core_mappings(c, &maps, &nmaps) != PYF_OK || nmaps != info.nmappings)
        fz_die("pyf_core_mappings: %u mappings, the info says %u", nmaps, info.nmappings);
    for (uint32_t i = 0; i < nmaps; i++) {
        if (maps[i].start >= maps[i].end || (i > 0 && maps[i].start < maps[i - 1].end))
            fz_die("mapping %u: 0x%llx-0x%llx out of order", i,
                   (unsigned long long)maps[i].start, (unsigned long long)maps[i].end);
        if (maps[i].path != NULL)
            fz_touch(maps[i].path, 8192, "mapping path");
    }
    if (pyf_core_reader(c, &r) != PYF_OK || r.reads != PYF_READS_CORE)
        fz_die("pyf_core_reader");
    for (uint32_t i = 0; i < nmaps && i < 64; i++) {
        uint64_t len = maps[i].end - maps[i].start;
        read_range(&r, maps[i].start, 64);
        read_range(&r, maps[i].start + len / 2, 64);
        read_range(&r, maps[i].end - (len < 8 ? len : 8), 16); /* across the end */
    }
    uint8_t buf[4][32];
    pyf_iovec iov[4];
    int status[4];
    for (int i = 0; i < 4; i++)
        iov[i] = (pyf_iovec){nmaps ? maps[(uint32_t)i % nmaps].start + (uint64_t)i * 8 : 0,
                             buf[i], sizeof buf[i]};
    int rc = r.readv(r.arg, iov, 4, status);
    fz_check_rc(rc, "readv");
    if (pyf_core_files(c, &files, &n) != PYF_OK)
        fz_die("pyf_core_files");
    for (uint32_t i = 0; i < n; i++) {
        fz_touch(files[i].path, 8192, "file path");
        if (files[i].open_path != NULL)
            fz_touch(files[i].open_path, 8300, "file open_path");
        if (files[i].status > PYF_CORE_FILE_UNREADABLE || files[i].build_id_size > 32)
            fz_die("file %u: status %u, build id of %u bytes", i, files[i].status,
                   files[i].build_id_size);
    }
}

static void open_target(pyf_core *c)
{
    pyf_failure f;
    pyf_target *t = NULL;
    memset(&f, 0xA5, sizeof f);
    f.struct_size = sizeof f;
    int rc = pyf_target_open_core(c, 0, NULL, &t, &f);
    fz_check_failure(&f, rc, "pyf_target_open_core");
    if (rc != PYF_OK)
        return;
    pyf_snapshot *s = NULL;
    fz_check_rc(pyf_snapshot_take(t, NULL, &s), "pyf_snapshot_take");
    pyf_snapshot_free(s);
    pyf_target_close(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (g_fd < 0)
        setup();
    if (ftruncate(g_fd, 0) != 0 || (size > 0 && pwrite(g_fd, data, size, 0) != (ssize_t)size))
        fz_die("cannot write the input to the memfd");
    pyf_core_request req;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.path = g_path;
    req.sysroot = g_root;
    req.temp_dir = "/tmp";
    req.max_size = 64u << 20; /* a compressed input decompresses to at most this */
    pyf_failure f;
    memset(&f, 0xA5, sizeof f);
    f.struct_size = sizeof f;
    pyf_core *c = NULL;
    int rc = pyf_core_open(&req, &c, &f);
    fz_check_failure(&f, rc, "pyf_core_open");
    if ((rc == PYF_OK) != (c != NULL))
        fz_die("pyf_core_open returned %d with core %p", rc, (void *)c);
    if (c != NULL) {
        read_core(c);
        open_target(c);
        pyf_core_close(c);
    }
    return 0;
}
