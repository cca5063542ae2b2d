/*
 * core_image.h - synthetic core files for the tests of the core reader
 * (test_core.c) and the seeds of its fuzzer (tests/fuzz/core_seeds.c): an
 * x86-64 ELF core (PT_LOAD segments, NT_PRSTATUS, NT_SIGINFO, NT_PRPSINFO,
 * NT_AUXV, NT_FILE) or a minidump (Memory64List, ThreadList with x86-64
 * contexts, Exception, LinuxMaps, SystemInfo), laid out as the kernel,
 * gdb and lldb write them; and small ELF files with a build id to stand
 * for the files a core names.
 */
#ifndef PYFRAMES_TEST_CORE_IMAGE_H
#define PYFRAMES_TEST_CORE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ci_bytes {
    uint8_t *p;
    size_t len, cap;
} ci_bytes;

void ci_put(ci_bytes *b, const void *p, size_t n);
void ci_u16(ci_bytes *b, uint16_t v);
void ci_u32(ci_bytes *b, uint32_t v);
void ci_u64(ci_bytes *b, uint64_t v);
void ci_zero(ci_bytes *b, size_t n);
void ci_free(ci_bytes *b);

#define CI_MAX_SEGS 32

typedef struct core_image {
    ci_bytes notes;
    struct {
        uint64_t vaddr, memsz;
        uint32_t flags; /* PF_R 4, PF_W 2, PF_X 1 */
        ci_bytes data;  /* its first filesz bytes */
    } seg[CI_MAX_SEGS];
    int nseg;
    ci_bytes files; /* NT_FILE entries and names, gathered */
    ci_bytes names;
    uint64_t nfiles;
} core_image;

void ci_init(core_image *c);
void ci_release(core_image *c);
/* A PT_LOAD at vaddr of memsz bytes whose first len bytes are data. */
void ci_load(core_image *c, uint64_t vaddr, uint64_t memsz, uint32_t flags,
             const void *data, size_t len);
/* An NT_PRSTATUS: thread tid, its pending signal, regs[27] (NULL: zeros;
 * orig_rax, regs[15], then -1). */
void ci_prstatus(core_image *c, uint32_t tid, int16_t cursig, const uint64_t *regs);
void ci_siginfo(core_image *c, int32_t signo, int32_t code, uint64_t addr);
void ci_prpsinfo(core_image *c, int32_t pid, const char *args);
void ci_auxv_entry(core_image *c, uint64_t entry);
/* An NT_FILE entry: [start, end) maps path at page offset pgoff. */
void ci_file(core_image *c, uint64_t start, uint64_t end, uint64_t pgoff, const char *path);
/* The core's bytes: ELF header, program headers (PT_NOTE first), the
 * notes, then each segment's data page-aligned. */
void ci_build(core_image *c, ci_bytes *out);

/* A minidump: memory ranges, threads with rip/rsp, an exception, maps. */
typedef struct md_image {
    struct {
        uint64_t start;
        ci_bytes data;
    } mem[CI_MAX_SEGS];
    int nmem;
    struct {
        uint32_t tid;
        uint64_t rip, rsp;
    } thread[8];
    int nthread;
    uint32_t exc_tid, exc_code, exc_flags;
    uint64_t exc_addr;
    const char *maps;  /* the text of /proc/PID/maps, or NULL */
    uint32_t pid;
} md_image;

void md_init(md_image *m);
void md_release(md_image *m);
void md_memory(md_image *m, uint64_t start, const void *data, size_t len);
void md_build(md_image *m, ci_bytes *out);

/* An ELF64 shared object of len bytes whose first page holds a PT_NOTE
 * with the GNU build id id[0, idlen), the rest filled with byte fill. */
void ci_elf_file(ci_bytes *out, size_t len, const uint8_t *id, size_t idlen, uint8_t fill);

/* Write bytes to path; 0 on success. */
int ci_write(const char *path, const ci_bytes *b);

#endif /* PYFRAMES_TEST_CORE_IMAGE_H */
