/*
 * test_core.c - the core reader (pyf_core_*) on synthetic cores laid out
 * as the kernel, gdb and lldb write them (core_image.h): memory from the
 * core's segments and from the read-only files it names (found under a
 * sysroot, checked by build id: used, missing, another build, a FIFO),
 * threads and registers, the signal and the thread that received it (from
 * NT_SIGINFO, from pr_cursig, from a minidump's exception), every read's
 * failure named; then the same cores cut short at every point and made
 * hostile (counts past the file, overlapping segments, notes that lie):
 * a named error or a core marked partial, never a read outside the file.
 */
#include "check.h"
#include "core_image.h"

#include <errno.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/pyframes-test-core-XXXXXX";
static char sysroot[512], core_path[512];

static const uint8_t ID_X[20] = {0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
static const uint8_t ID_Y[20] = {0xbb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19};

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + i * 7);
}

/* A file of the sysroot: an ELF with build id id, fill after its header. */
static void sys_file(const char *name, const uint8_t *id, uint8_t fill)
{
    char path[600];
    ci_bytes b;
    snprintf(path, sizeof path, "%s/lib/%s", sysroot, name);
    ci_elf_file(&b, 0x3000, id, 20, fill);
    REQUIRE(ci_write(path, &b) == 0);
    ci_free(&b);
}

static pyf_core *open_core(const char *path, const char *root, const char *exe, int *rc,
                           pyf_failure *f)
{
    pyf_core_request req;
    pyf_core *c = NULL;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.path = path;
    req.sysroot = root;
    req.executable = exe;
    memset(f, 0, sizeof *f);
    f->struct_size = sizeof *f;
    *rc = pyf_core_open(&req, &c, f);
    return c;
}

/* The core every case starts from (see the top of the file). */
static void the_core(core_image *ci)
{
    static uint8_t a[0x2000], b[0x1000], c[0x1000], first[0x1000], other[0x1000];
    ci_bytes f;
    uint64_t regs[27];

    pattern(a, sizeof a, 1);
    pattern(b, sizeof b, 2);
    pattern(c, sizeof c, 3);
    ci_elf_file(&f, 0x1000, ID_X, 20, 0xac); /* the file's first page but its fill */
    memcpy(first, f.p, sizeof first);
    ci_free(&f);
    ci_elf_file(&f, 0x1000, ID_X, 20, 0xcd); /* the core's copy says X */
    memcpy(other, f.p, sizeof other);
    ci_free(&f);
    ci_init(ci);
    ci_load(ci, 0x10000, 0x2000, 6, a, sizeof a);
    ci_load(ci, 0x12000, 0x1000, 6, b, sizeof b);
    ci_load(ci, 0x20000, 0x3000, 6, c, sizeof c);          /* the rest left out */
    ci_load(ci, 0x400000, 0x3000, 5, first, sizeof first);  /* /lib/libx.so, r-x */
    ci_load(ci, 0x500000, 0x1000, 4, NULL, 0);              /* /lib/missing.so */
    ci_load(ci, 0x600000, 0x2000, 4, other, sizeof other);  /* /lib/other.so: Y on disk */
    ci_load(ci, 0x700000, 0x2000, 6, NULL, 0);              /* /lib/libx.so's data, rw */
    ci_load(ci, 0x710000, 0x1000, 6, NULL, 0);              /* /lib/nobid.so's, rw */
    ci_file(ci, 0x400000, 0x403000, 0, "/lib/libx.so");
    ci_file(ci, 0x500000, 0x501000, 0, "/lib/missing.so");
    ci_file(ci, 0x600000, 0x602000, 0, "/lib/other.so");
    ci_file(ci, 0x700000, 0x702000, 1, "/lib/libx.so");
    ci_file(ci, 0x710000, 0x711000, 1, "/lib/nobid.so"); /* no first page: no build id */
    for (int i = 0; i < 27; i++)
        regs[i] = 0x1000 + (uint64_t)i;
    regs[15] = 202; /* orig_rax: futex */
    ci_prpsinfo(ci, 100, "python3 app.py --serve");
    ci_prstatus(ci, 100, 11, NULL);
    ci_prstatus(ci, 101, 11, regs);
    ci_siginfo(ci, 11, 1, 0x10); /* gdb's order: after the thread it is of */
    ci_prstatus(ci, 102, 0, NULL);
    ci_auxv_entry(ci, 0x400100);
}

static void write_the_core(ci_bytes *out)
{
    core_image ci;
    the_core(&ci);
    ci_build(&ci, out);
    ci_release(&ci);
    REQUIRE(ci_write(core_path, out) == 0);
}

static int read_at(pyf_reader *r, uint64_t addr, void *dst, size_t len)
{
    return r->read(r->arg, addr, dst, len);
}

static const char *words(pyf_reader *r)
{
    const char *m = r->message(r->arg);
    return m != NULL ? m : "";
}

static void test_elf_core(void)
{
    ci_bytes img;
    pyf_failure f;
    pyf_reader r;
    pyf_core_info info;
    const pyf_core_thread *th;
    const pyf_mapping *maps;
    const pyf_core_file *files;
    uint32_t n;
    int rc;
    uint8_t buf[0x3000], want[0x3000];

    check_begin("an ELF core: memory, files, threads, signal");
    write_the_core(&img);
    pyf_core *c = open_core(core_path, sysroot, NULL, &rc, &f);
    REQUIRE(rc == PYF_OK && c != NULL);
    info.struct_size = sizeof info;
    CHECK_RC(pyf_core_info_get(c, &info), PYF_OK);
    CHECK_EQ_INT(info.format, PYF_CORE_ELF);
    CHECK_EQ_INT(info.compression, PYF_CORE_PLAIN);
    CHECK_EQ_INT(info.machine, 62);
    CHECK_EQ_INT(info.pid, 100);
    CHECK_EQ_INT(info.signo, 11);
    CHECK_EQ_INT(info.code, 1);
    CHECK_ADDR(info.signal_addr, 0x10);
    CHECK_EQ_INT(info.signal_tid, 101);
    CHECK(info.flags == (PYF_CORE_SIGNAL | PYF_CORE_SIGINFO));
    CHECK_EQ_STR(info.command, "python3 app.py --serve");
    CHECK_EQ_STR(info.executable, "/lib/libx.so");
    CHECK_EQ_INT(info.size, img.len);
    CHECK_EQ_INT(info.missing_bytes, 0);
    CHECK_EQ_STR(info.problem, "");

    CHECK_RC(pyf_core_threads(c, &th, &n), PYF_OK);
    REQUIRE(n == 3);
    CHECK_EQ_INT(th[0].tid, 101); /* the one that received it, first */
    CHECK(th[0].flags == (PYF_CORE_THREAD_SIGNALLED | PYF_CORE_THREAD_REGS |
                          PYF_CORE_THREAD_SYSCALL));
    CHECK_EQ_INT(th[0].nregs, 27);
    CHECK_ADDR(th[0].regs[15], 202);
    CHECK_ADDR(th[0].regs[19], 0x1000 + 19);
    CHECK_EQ_INT(th[1].tid, 100);
    CHECK_EQ_INT(th[2].tid, 102);
    CHECK(!(th[1].flags & PYF_CORE_THREAD_SIGNALLED));
    CHECK_EQ_INT(th[1].signo, 11);

    CHECK_RC(pyf_core_mappings(c, &maps, &n), PYF_OK);
    REQUIRE(n == 8);
    CHECK_ADDR(maps[3].start, 0x400000);
    CHECK(maps[3].flags == (PYF_MAP_READ | PYF_MAP_EXEC));
    CHECK_EQ_STR(maps[3].path, "/lib/libx.so");
    CHECK_ADDR(maps[6].file_offset, 0x1000);
    CHECK(maps[0].path == NULL);

    REQUIRE(pyf_core_reader(c, &r) == PYF_OK);
    CHECK_EQ_INT(r.reads, PYF_READS_CORE);
    CHECK(r.write == NULL);
    /* two segments side by side, read as one range */
    memset(buf, 0, sizeof buf);
    CHECK_RC(read_at(&r, 0x11ff0, buf, 0x20), PYF_OK);
    pattern(want, 0x2000, 1);
    pattern(want + 0x2000, 0x1000, 2);
    CHECK(memcmp(buf, want + 0x1ff0, 0x20) == 0);
    /* a read-only file mapping past the core's first page: the file's */
    CHECK_RC(read_at(&r, 0x400ff8, buf, 0x10), PYF_OK);
    CHECK(buf[7] == 0xac && buf[8] == 0xab && buf[15] == 0xab); /* the core's, the file's */
    CHECK_RC(read_at(&r, 0x402ff0, buf, 0x10), PYF_OK);
    /* the file ends at 0x3000: its last page ends the mapping */
    CHECK_RC(read_at(&r, 0x402ff0, buf, 0x20), PYF_EFAULT);
    /* what the core left out of anonymous (or writable) memory */
    CHECK_RC(read_at(&r, 0x21000, buf, 8), PYF_EFAULT);
    CHECK_MSG(strstr(words(&r), "which the core leaves out") != NULL, "%s", words(&r));
    /* a writable mapping the process never wrote: the file's, the very build */
    CHECK_RC(read_at(&r, 0x700ff8, buf, 16), PYF_OK);
    CHECK(buf[0] == 0xab && buf[15] == 0xab);
    /* of a file that cannot be shown to be the one mapped: not read */
    CHECK_RC(read_at(&r, 0x710000, buf, 8), PYF_EFAULT);
    CHECK_MSG(strstr(words(&r), "holds no build id to show it is the one mapped") != NULL,
              "%s", words(&r));
    CHECK_RC(read_at(&r, 0x800000, buf, 8), PYF_EFAULT);
    CHECK_MSG(strstr(words(&r), "no mapping of the process there") != NULL, "%s", words(&r));
    CHECK_RC(read_at(&r, 0x500010, buf, 8), PYF_EFAULT);
    CHECK_MSG(strstr(words(&r), "no such file at") != NULL, "%s", words(&r));
    CHECK_RC(read_at(&r, 0x601000, buf, 8), PYF_EFAULT);
    CHECK_MSG(strstr(words(&r), "is another build (build id bb0102") != NULL &&
              strstr(words(&r), "the core's aa0102") != NULL, "%s", words(&r));
    /* what the core holds of it is read all the same */
    CHECK_RC(read_at(&r, 0x600000, buf, 4), PYF_OK);
    CHECK(memcmp(buf, "\177ELF", 4) == 0);
    CHECK_RC(read_at(&r, UINT64_MAX - 3, buf, 8), PYF_EFAULT); /* wraps */
    CHECK_MSG(strstr(words(&r), "run past the end of the address space") != NULL, "%s",
              words(&r)); /* fuzz_core's regression-wrapping-read */
    pyf_iovec iov[3] = {{0x10000, buf, 8}, {0x900000, buf + 8, 8}, {0x12000, buf + 16, 8}};
    int status[3];
    CHECK_RC(r.readv(r.arg, iov, 3, status), PYF_EFAULT);
    CHECK(status[0] == PYF_OK && status[1] == PYF_EFAULT && status[2] == PYF_OK);

    CHECK_RC(pyf_core_files(c, &files, &n), PYF_OK);
    REQUIRE(n == 4);
    CHECK_EQ_STR(files[0].path, "/lib/libx.so");
    CHECK_EQ_INT(files[0].status, PYF_CORE_FILE_USED);
    CHECK(files[0].flags & PYF_CORE_FILE_EXECUTABLE);
    CHECK_EQ_INT(files[0].build_id_size, 20);
    CHECK(memcmp(files[0].build_id, ID_X, 20) == 0);
    CHECK(strstr(files[0].open_path, sysroot) == files[0].open_path);
    CHECK_EQ_INT(files[1].status, PYF_CORE_FILE_MISSING);
    CHECK_EQ_INT(files[2].status, PYF_CORE_FILE_MISMATCH);
    CHECK(memcmp(files[2].file_build_id, ID_Y, 20) == 0);
    pyf_core_close(c);

    /* without the sysroot the files are not where the core says */
    c = open_core(core_path, NULL, NULL, &rc, &f);
    REQUIRE(rc == PYF_OK);
    REQUIRE(pyf_core_reader(c, &r) == PYF_OK);
    CHECK_RC(read_at(&r, 0x401000, buf, 8), PYF_EFAULT);
    CHECK_MSG(strstr(words(&r), "no such file at /lib/libx.so") != NULL, "%s", words(&r));
    pyf_core_close(c);

    /* the executable given instead */
    char exe[600];
    snprintf(exe, sizeof exe, "%s/lib/libx.so", sysroot);
    c = open_core(core_path, NULL, exe, &rc, &f);
    REQUIRE(rc == PYF_OK);
    REQUIRE(pyf_core_reader(c, &r) == PYF_OK);
    CHECK_RC(read_at(&r, 0x401000, buf, 8), PYF_OK);
    CHECK(buf[0] == 0xab);
    info.struct_size = sizeof info;
    pyf_core_info_get(c, &info);
    CHECK_EQ_STR(info.executable, exe);
    pyf_core_close(c);

    /* no runtime in it: a target cannot be opened, and says why */
    c = open_core(core_path, sysroot, NULL, &rc, &f);
    pyf_target *t = NULL;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    CHECK_RC(pyf_target_open_core(c, 0, NULL, &t, &f), PYF_ENOTPY);
    CHECK(t == NULL && strstr(f.detail, "is not a Python process") != NULL &&
          strstr(f.detail, "the core") != NULL);
    pyf_core_close(c);
    ci_free(&img);
}

static void test_signal_from_cursig(void)
{
    core_image ci;
    ci_bytes img;
    pyf_failure f;
    pyf_core_info info;
    const pyf_core_thread *th;
    uint32_t n;
    int rc;

    check_begin("no NT_SIGINFO: the first thread with a pending signal received it");
    ci_init(&ci);
    ci_load(&ci, 0x10000, 0x1000, 6, NULL, 0x1000);
    ci_prstatus(&ci, 200, 0, NULL);
    ci_prstatus(&ci, 201, 6, NULL);
    ci_build(&ci, &img);
    ci_release(&ci);
    REQUIRE(ci_write(core_path, &img) == 0);
    pyf_core *c = open_core(core_path, NULL, NULL, &rc, &f);
    REQUIRE(rc == PYF_OK);
    info.struct_size = sizeof info;
    pyf_core_info_get(c, &info);
    CHECK(info.flags == PYF_CORE_SIGNAL);
    CHECK_EQ_INT(info.signo, 6);
    CHECK_EQ_INT(info.signal_tid, 201);
    CHECK_EQ_INT(info.pid, 0); /* no NT_PRPSINFO: unknown, never guessed */
    pyf_core_threads(c, &th, &n);
    REQUIRE(n == 2);
    CHECK(th[0].tid == 201 && (th[0].flags & PYF_CORE_THREAD_SIGNALLED));
    pyf_core_close(c);
    ci_free(&img);
}

/* Open the file of img's first len bytes: a named error, or a core that
 * reads what it holds and fails the rest with a reason. */
static void cut_at(const ci_bytes *img, size_t len, bool elf)
{
    ci_bytes cut = {img->p, len, len};
    pyf_failure f;
    pyf_reader r;
    pyf_core_info info;
    int rc;
    uint8_t buf[64];

    REQUIRE(ci_write(core_path, &cut) == 0);
    pyf_core *c = open_core(core_path, sysroot, NULL, &rc, &f);
    if (rc != PYF_OK) {
        CHECK_MSG(rc == PYF_ECORRUPT, "cut at %zu: %s", len, pyf_error_name(rc));
        CHECK_MSG(c == NULL && strstr(f.detail, core_path) != NULL, "cut at %zu: %s", len,
                  f.detail);
        return;
    }
    info.struct_size = sizeof info;
    pyf_core_info_get(c, &info);
    if (len < img->len)
        CHECK_MSG(info.flags & (PYF_CORE_CUT_SHORT | PYF_CORE_NOTES_PARTIAL),
                  "cut at %zu of %zu: not marked partial", len, img->len);
    CHECK_MSG(info.problem[0] != '\0' || len == img->len, "cut at %zu: no problem said", len);
    pyf_core_reader(c, &r);
    static const uint64_t at[] = {0x10000, 0x11ff8, 0x12ff8, 0x20000, 0x400000, 0x401000};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        rc = read_at(&r, at[i], buf, sizeof buf);
        CHECK_MSG(rc == PYF_OK || rc == PYF_EFAULT, "cut at %zu, read 0x%llx: %s", len,
                  (unsigned long long)at[i], pyf_error_name(rc));
        if (rc == PYF_EFAULT && elf && at[i] < 0x30000 && strstr(words(&r), "cut short") == NULL)
            CHECK_MSG(strstr(words(&r), "holds no memory") != NULL, "cut at %zu: %s", len,
                      words(&r));
    }
    pyf_core_close(c);
}

static void test_cut_everywhere(void)
{
    ci_bytes img;
    check_begin("an ELF core cut short at every point");
    write_the_core(&img);
    size_t notes_end = 0x1000; /* the headers and notes lie in the first page */
    for (size_t len = 0; len <= img.len; len += len < notes_end ? 1 : 509)
        cut_at(&img, len, true);
    cut_at(&img, img.len, true);
    ci_free(&img);
}

static void test_hostile_elf(void)
{
    ci_bytes img;
    pyf_failure f;
    int rc;
    check_begin("hostile ELF cores: named errors, partial cores, no read outside");
    write_the_core(&img);
    ci_bytes bad = {0};
    ci_put(&bad, img.p, img.len);

    bad.p[16] = 2; /* ET_EXEC */
    REQUIRE(ci_write(core_path, &bad) == 0);
    CHECK(open_core(core_path, NULL, NULL, &rc, &f) == NULL);
    CHECK(rc == PYF_ECORRUPT && strstr(f.detail, "not a core") != NULL);
    bad.p[16] = 4;
    bad.p[4] = 1; /* ELFCLASS32 */
    REQUIRE(ci_write(core_path, &bad) == 0);
    open_core(core_path, NULL, NULL, &rc, &f);
    CHECK_RC(rc, PYF_ENOTSUP);
    bad.p[4] = 2;
    bad.p[56] = 0xff; /* PN_XNUM without section headers */
    bad.p[57] = 0xff;
    REQUIRE(ci_write(core_path, &bad) == 0);
    open_core(core_path, NULL, NULL, &rc, &f);
    CHECK_RC(rc, PYF_ECORRUPT);
    memcpy(bad.p, img.p, img.len);

    /* every program header's offset and size made absurd in turn */
    for (int ph = 1; ph < 10; ph++) {
        for (int field = 0; field < 3; field++) {
            static const size_t off[3] = {8, 32, 40};
            memcpy(bad.p, img.p, img.len);
            memset(bad.p + 64 + 56 * ph + off[field], 0xff, 8);
            REQUIRE(ci_write(core_path, &bad) == 0);
            pyf_core *c = open_core(core_path, sysroot, NULL, &rc, &f);
            CHECK_MSG(rc == PYF_OK || rc == PYF_ECORRUPT, "phdr %d field %d: %s", ph, field,
                      pyf_error_name(rc));
            if (c != NULL) {
                pyf_reader r;
                uint8_t buf[16];
                pyf_core_reader(c, &r);
                for (uint64_t a = 0x10000; a < 0x800000; a += 0x7ff8)
                    read_at(&r, a, buf, sizeof buf);
                pyf_core_close(c);
            }
        }
    }
    /* the NT_FILE count and a note's size made absurd: each note's header */
    memcpy(bad.p, img.p, img.len);
    size_t notes = 64 + 56 * 9;
    for (size_t at = notes; at + 12 < notes + 1400 && at < bad.len; at += 4) {
        uint32_t keep;
        memcpy(&keep, bad.p + at, 4);
        memset(bad.p + at, 0xff, 4);
        REQUIRE(ci_write(core_path, &bad) == 0);
        pyf_core *c = open_core(core_path, sysroot, NULL, &rc, &f);
        CHECK_MSG(rc == PYF_OK || rc == PYF_ECORRUPT, "note word at %zu: %s", at,
                  pyf_error_name(rc));
        pyf_core_close(c);
        memcpy(bad.p + at, &keep, 4);
    }
    ci_free(&bad);

    /* overlapping segments: the first read from keeps its bytes */
    core_image ci;
    uint8_t a[0x2000], b[0x2000];
    memset(a, 0x11, sizeof a);
    memset(b, 0x22, sizeof b);
    ci_init(&ci);
    ci_load(&ci, 0x10000, 0x2000, 6, a, sizeof a);
    ci_load(&ci, 0x11000, 0x2000, 6, b, sizeof b);
    ci_build(&ci, &bad);
    ci_release(&ci);
    REQUIRE(ci_write(core_path, &bad) == 0);
    pyf_core *c = open_core(core_path, NULL, NULL, &rc, &f);
    REQUIRE(rc == PYF_OK);
    pyf_reader r;
    uint8_t buf[0x3000];
    pyf_core_reader(c, &r);
    CHECK_RC(read_at(&r, 0x10000, buf, 0x3000), PYF_OK);
    CHECK(buf[0x1fff] == 0x11 && buf[0x2000] == 0x22);
    pyf_core_close(c);
    ci_free(&bad);

    /* not a core at all, empty, a directory */
    ci_bytes junk = {0};
    ci_put(&junk, "#!/bin/sh\necho hello\n", 21);
    REQUIRE(ci_write(core_path, &junk) == 0);
    open_core(core_path, NULL, NULL, &rc, &f);
    CHECK(rc == PYF_ECORRUPT && strstr(f.detail, "is not a core file") != NULL);
    junk.len = 0;
    REQUIRE(ci_write(core_path, &junk) == 0);
    open_core(core_path, NULL, NULL, &rc, &f);
    CHECK_RC(rc, PYF_ECORRUPT);
    ci_free(&junk);
    open_core(dir, NULL, NULL, &rc, &f);
    CHECK(rc == PYF_EIO && strstr(f.detail, "not a regular file") != NULL);
    ci_free(&img);
}

static void test_fifo_file(void)
{
    ci_bytes img;
    pyf_failure f;
    pyf_reader r;
    const pyf_core_file *files;
    uint32_t n;
    int rc;
    char path[600];
    uint8_t buf[8];

    check_begin("a file the core names that is a FIFO: never opened to wait on");
    snprintf(path, sizeof path, "%s/lib/missing.so", sysroot);
    REQUIRE(mkfifo(path, 0600) == 0);
    write_the_core(&img);
    pyf_core *c = open_core(core_path, sysroot, NULL, &rc, &f);
    REQUIRE(rc == PYF_OK);
    pyf_core_reader(c, &r);
    CHECK_RC(read_at(&r, 0x500000, buf, 8), PYF_EFAULT);
    CHECK_MSG(strstr(words(&r), "cannot be read") != NULL, "%s", words(&r));
    pyf_core_files(c, &files, &n);
    REQUIRE(n == 4);
    CHECK_EQ_INT(files[1].status, PYF_CORE_FILE_UNREADABLE);
    pyf_core_close(c);
    unlink(path);
    ci_free(&img);
}

static void test_minidump(void)
{
    md_image m;
    ci_bytes img, f0;
    pyf_failure f;
    pyf_reader r;
    pyf_core_info info;
    const pyf_core_thread *th;
    const pyf_core_file *files;
    uint32_t n;
    int rc;
    uint8_t a[0x1000], buf[64];

    check_begin("a minidump: memory lists, threads, exception, maps");
    pattern(a, sizeof a, 5);
    ci_elf_file(&f0, 0x1000, ID_X, 20, 0xab);
    md_init(&m);
    m.pid = 300;
    md_memory(&m, 0x10000, a, sizeof a);
    md_memory(&m, 0x400000, f0.p, 0x1000); /* libx's first page */
    m.thread[0].tid = 300;
    m.thread[0].rip = 0x400123;
    m.thread[0].rsp = 0x7ffc0000;
    m.thread[1].tid = 301;
    m.nthread = 2;
    m.exc_tid = 301;
    m.exc_code = 6;
    m.exc_flags = 0x4c4c4442; /* lldb's: no si_code, no si_addr */
    m.maps = "00010000-00011000 rw-p 00000000 00:00 0 \n"
             "00400000-00403000 r-xp 00000000 08:01 1234   /lib/libx.so\n"
             "00500000-00501000 rw-p 00003000 08:01 1234   /lib/libx.so\n";
    md_build(&m, &img);
    REQUIRE(ci_write(core_path, &img) == 0);
    pyf_core *c = open_core(core_path, sysroot, NULL, &rc, &f);
    REQUIRE(rc == PYF_OK);
    info.struct_size = sizeof info;
    pyf_core_info_get(c, &info);
    CHECK_EQ_INT(info.format, PYF_CORE_MINIDUMP);
    CHECK_EQ_INT(info.machine, 62);
    CHECK_EQ_INT(info.pid, 300);
    CHECK(info.flags == PYF_CORE_SIGNAL);
    CHECK_EQ_INT(info.signo, 6);
    CHECK_EQ_INT(info.signal_tid, 301);
    pyf_core_threads(c, &th, &n);
    REQUIRE(n == 2);
    CHECK(th[0].tid == 301 && (th[0].flags & PYF_CORE_THREAD_SIGNALLED));
    CHECK(th[1].tid == 300 && th[1].regs[16] == 0x400123 && th[1].regs[19] == 0x7ffc0000);
    CHECK(!(th[1].flags & PYF_CORE_THREAD_SYSCALL)); /* no orig_rax in a minidump */
    pyf_core_reader(c, &r);
    CHECK_RC(read_at(&r, 0x10ff0, buf, 16), PYF_OK);
    CHECK(memcmp(buf, a + 0xff0, 16) == 0);
    CHECK_RC(read_at(&r, 0x402000, buf, 8), PYF_OK); /* libx from the file */
    CHECK(buf[0] == 0xab);
    CHECK_RC(read_at(&r, 0x500000, buf, 8), PYF_EFAULT); /* writable: never the file */
    CHECK_MSG(strstr(words(&r), "a minidump's writer may have left out") != NULL, "%s",
              words(&r));
    pyf_core_files(c, &files, &n);
    REQUIRE(n == 1);
    CHECK_EQ_INT(files[0].status, PYF_CORE_FILE_USED);
    pyf_core_close(c);

    /* Breakpad's exception: si_code and the address */
    m.exc_flags = 2;
    m.exc_code = 11;
    m.exc_addr = 0x20;
    ci_free(&img);
    md_build(&m, &img);
    REQUIRE(ci_write(core_path, &img) == 0);
    c = open_core(core_path, sysroot, NULL, &rc, &f);
    REQUIRE(rc == PYF_OK);
    pyf_core_info_get(c, &info);
    CHECK(info.flags == (PYF_CORE_SIGNAL | PYF_CORE_SIGINFO));
    CHECK(info.signo == 11 && info.code == 2 && info.signal_addr == 0x20);
    pyf_core_close(c);

    check_begin("a minidump cut short at every point");
    for (size_t len = 0; len <= img.len; len += len < 0x800 ? 1 : 97)
        cut_at(&img, len, false);
    md_release(&m);
    ci_free(&img);
    ci_free(&f0);
}

/* A file that starts as a compressed stream of each kind: a build without
 * that kind's library refuses it naming the library's package; one with
 * it finds the stream ends at once (no core in it). */
static void test_compressions(void)
{
    static const struct {
        uint32_t kind;
        const char *magic, *package;
        size_t len;
    } k[] = {
        {PYF_CORE_ZSTD, "\x28\xb5\x2f\xfd", "libzstd-dev", 4},
        {PYF_CORE_XZ, "\xfd" "7zXZ\0", "liblzma-dev", 6},
        {PYF_CORE_LZ4, "\x04\x22\x4d\x18", "liblz4-dev", 4},
        {PYF_CORE_GZIP, "\x1f\x8b", "zlib1g-dev", 2},
    };
    pyf_failure f;
    int rc;

    check_begin("compressed cores: each kind read, or refused naming its package");
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        ci_bytes b = {0};
        ci_put(&b, k[i].magic, k[i].len);
        REQUIRE(ci_write(core_path, &b) == 0);
        ci_free(&b);
        pyf_core *c = open_core(core_path, NULL, NULL, &rc, &f);
        if (pyf_core_compressions() & (1u << k[i].kind)) {
            CHECK_MSG(rc == PYF_ECORRUPT && c == NULL, "%s: %s (%s)", k[i].package,
                      pyf_error_name(rc), f.detail);
        } else {
            CHECK_RC(rc, PYF_ENOTSUP);
            CHECK_MSG(strstr(f.detail, k[i].package) != NULL, "%s", f.detail);
        }
        pyf_core_close(c);
    }
    CHECK(pyf_core_compressions() & (1u << PYF_CORE_PLAIN));
}

int main(void)
{
    char path[600];

    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(sysroot, sizeof sysroot, "%s/root", dir);
    snprintf(core_path, sizeof core_path, "%s/core", dir);
    snprintf(path, sizeof path, "%s/lib", sysroot);
    REQUIRE(mkdir(sysroot, 0700) == 0 && mkdir(path, 0700) == 0);
    sys_file("libx.so", ID_X, 0xab);
    sys_file("other.so", ID_Y, 0xcd);
    sys_file("nobid.so", ID_Y, 0x33);

    test_elf_core();
    test_signal_from_cursig();
    test_cut_everywhere();
    test_hostile_elf();
    test_fifo_file();
    test_minidump();
    test_compressions();

    snprintf(path, sizeof path, "%s/lib/libx.so", sysroot);
    unlink(path);
    snprintf(path, sizeof path, "%s/lib/other.so", sysroot);
    unlink(path);
    snprintf(path, sizeof path, "%s/lib/nobid.so", sysroot);
    unlink(path);
    snprintf(path, sizeof path, "%s/lib", sysroot);
    rmdir(path);
    rmdir(sysroot);
    unlink(core_path);
    rmdir(dir);
    return check_end();
}
