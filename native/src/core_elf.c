/*
 * core_elf.c - an ELF core (the kernel's, gdb's gcore, systemd-coredump's):
 * its program headers and notes, into the core's builders (core.h).
 *
 * PT_LOAD: a mapping of the process with its permissions; the first
 * p_filesz bytes of it are in the core at p_offset (the kernel writes 0,
 * or the first page of an ELF file, for a read-only file mapping).  PT_NOTE:
 * NT_PRSTATUS per thread (its id, pending signal and registers), an
 * NT_SIGINFO after the thread that received the signal (the kernel: the
 * dumping thread, first; gdb: each thread's), NT_PRPSINFO (the process id
 * and command line), NT_AUXV (the entry point, which names the
 * executable's mapping), NT_FILE (the file and offset of each file
 * mapping).  ELF64 little-endian only.  Every count and size is checked
 * against the file; what lies past its end is counted as missing, and the
 * notes before a broken one are kept.
 */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "core.h"
#include "elf_reader.h"
#include "reads.h"

#define ET_CORE 4u
#define PT_LOAD 1u
#define PT_NOTE 4u
#define PN_XNUM 0xffffu
#define PHDR_SIZE 56u
#define PHDR_CHUNK 1024u

#define NT_PRSTATUS 1u
#define NT_PRPSINFO 3u
#define NT_AUXV 6u
#define NT_SIGINFO 0x53494749u
#define NT_FILE 0x46494c45u
#define AT_ENTRY 9u

#define EM_X86_64 62u
#define EM_AARCH64 183u

/* elf_prstatus: pr_cursig at 12, pr_pid at 32, pr_reg at 112 (64-bit Linux) */
#define PR_CURSIG 12u
#define PR_PID 32u
#define PR_REG 112u
/* elf_prpsinfo: pr_pid at 24, pr_psargs[80] at 56 */
#define PS_PID 24u
#define PS_ARGS 56u
#define PS_ARGS_LEN 80u
/* siginfo_t: si_signo 0, si_code 8, si_addr 16 */
#define SI_SIZE 24u

/* Signals whose si_addr is the faulting address. */
static bool fault_signal(int32_t signo)
{
    return signo == 4 || signo == 5 || signo == 7 || signo == 8 || signo == 11;
}

typedef struct parse {
    pyf_core *c;
    uint32_t machine;
    pyf_core_thread *last;   /* the thread of the last NT_PRSTATUS */
    bool siginfo;            /* the signal was taken from an NT_SIGINFO */
    uint64_t notes_left;     /* the budget of note bytes */
} parse;

static uint32_t nregs_of(uint32_t machine)
{
    return machine == EM_X86_64 ? 27u : machine == EM_AARCH64 ? 34u : 0u;
}

static int prstatus(parse *p, const pyf__elf_note *n)
{
    if (n->descsz < PR_REG)
        return PYF_OK;
    pyf_core_thread *th = pyf__core_add_thread(p->c, pyf__le32(n->desc + PR_PID));
    if (th == NULL)
        return p->c->nthreads < PYF__CORE_MAX_THREADS ? PYF_ENOMEM : PYF_OK;
    th->signo = (int16_t)pyf__le16(n->desc + PR_CURSIG);
    uint32_t nregs = nregs_of(p->machine);
    if (nregs > 0 && n->descsz >= PR_REG + 8u * nregs) {
        for (uint32_t i = 0; i < nregs; i++)
            th->regs[i] = pyf__le64(n->desc + PR_REG + 8u * i);
        th->nregs = nregs;
        th->flags |= PYF_CORE_THREAD_REGS;
        if (p->machine == EM_X86_64)
            th->flags |= PYF_CORE_THREAD_SYSCALL;
    }
    p->last = th;
    return PYF_OK;
}

static void prpsinfo(parse *p, const pyf__elf_note *n)
{
    if (n->descsz < PS_ARGS + PS_ARGS_LEN)
        return;
    pyf_core_info *i = &p->c->info;
    i->pid = (int32_t)pyf__le32(n->desc + PS_PID);
    /* the arguments, separated by spaces (the kernel turns NULs into them) */
    size_t len = strnlen((const char *)n->desc + PS_ARGS, PS_ARGS_LEN);
    while (len > 0 && n->desc[PS_ARGS + len - 1] == ' ')
        len--;
    if (len >= sizeof i->command)
        len = sizeof i->command - 1;
    memcpy(i->command, n->desc + PS_ARGS, len);
    i->command[len] = '\0';
}

static void siginfo(parse *p, const pyf__elf_note *n)
{
    pyf_core_info *i = &p->c->info;
    if (n->descsz < SI_SIZE || p->siginfo || p->last == NULL)
        return;
    int32_t signo = (int32_t)pyf__le32(n->desc);
    if (signo <= 0)
        return;
    p->siginfo = true;
    i->signo = signo;
    i->code = (int32_t)pyf__le32(n->desc + 8);
    i->signal_addr = fault_signal(signo) ? pyf__le64(n->desc + 16) : 0;
    i->signal_tid = p->last->tid;
    i->flags |= PYF_CORE_SIGNAL | PYF_CORE_SIGINFO;
}

static void auxv(parse *p, const pyf__elf_note *n)
{
    for (uint32_t at = 0; at + 16 <= n->descsz; at += 16)
        if (pyf__le64(n->desc + at) == AT_ENTRY)
            p->c->entry = pyf__le64(n->desc + at + 8);
}

/* NT_FILE: count, page size, count (start, end, page offset), the names. */
static int file_note(parse *p, const pyf__elf_note *n)
{
    pyf_core *c = p->c;
    if (n->descsz < 16)
        return PYF_OK;
    uint64_t count = pyf__le64(n->desc), page = pyf__le64(n->desc + 8);
    if (count > (n->descsz - 16) / 24 || page == 0 || (page & (page - 1)) != 0) {
        pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the core's NT_FILE note is "
                          "malformed: its files are not read");
        return PYF_OK;
    }
    const char *names = (const char *)n->desc + 16 + count * 24;
    size_t left = n->descsz - 16 - count * 24;
    for (uint64_t k = 0; k < count; k++) {
        const uint8_t *e = n->desc + 16 + k * 24;
        size_t len = strnlen(names, left);
        if (len == left) {
            pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the core's NT_FILE note ends "
                              "inside its names: %llu of its %llu files are read",
                              (unsigned long long)k, (unsigned long long)count);
            break;
        }
        uint64_t off = pyf__le64(e + 16);
        if (off <= UINT64_MAX / page) {
            int rc = pyf__core_name_map(c, pyf__le64(e), pyf__le64(e + 8), off * page, names, len);
            if (rc != PYF_OK)
                return rc;
        }
        names += len + 1;
        left -= len + 1;
    }
    return PYF_OK;
}

static int notes(parse *p, const uint8_t *buf, size_t len)
{
    pyf__elf_note n;
    size_t at = 0;
    int rc = PYF_OK;

    while (rc == PYF_OK && pyf__elf_note_next(buf, len, &at, &n)) {
        bool core = pyf__elf_note_named(&n, "CORE");
        if (n.type == NT_PRSTATUS && core)
            rc = prstatus(p, &n);
        else if (n.type == NT_PRPSINFO && core)
            prpsinfo(p, &n);
        else if (n.type == NT_SIGINFO && core)
            siginfo(p, &n);
        else if (n.type == NT_AUXV && core)
            auxv(p, &n);
        else if (n.type == NT_FILE && core)
            rc = file_note(p, &n);
    }
    if (at < len)
        pyf__core_partial(p->c, PYF_CORE_NOTES_PARTIAL, "a note of the core runs past its "
                          "note segment: the notes after it are not read");
    return rc;
}

/* One PT_NOTE segment, as much of it as the file and the budget hold. */
static int note_segment(parse *p, uint64_t off, uint64_t size)
{
    pyf_core *c = p->c;
    if (size == 0)
        return PYF_OK;
    if (size > p->notes_left) {
        pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the core's notes exceed %llu MiB: "
                          "those past it are not read",
                          (unsigned long long)(PYF__CORE_MAX_NOTES >> 20));
        size = p->notes_left;
    }
    if (off >= c->size || size > c->size - off) {
        pyf__core_partial(c, PYF_CORE_CUT_SHORT | PYF_CORE_NOTES_PARTIAL, "the core is cut "
                          "short inside its notes (at %llu of the %llu bytes they need)",
                          (unsigned long long)c->size, (unsigned long long)(off + size));
        size = off < c->size ? c->size - off : 0;
    }
    if (size == 0)
        return PYF_OK;
    p->notes_left -= size;
    uint8_t *buf = malloc((size_t)size);
    if (buf == NULL)
        return PYF_ENOMEM;
    int rc = pyf__core_read_exact(c, buf, (size_t)size, off);
    if (rc == PYF_OK)
        rc = notes(p, buf, (size_t)size);
    else if (rc != PYF_ENOMEM)
        rc = PYF_EIO;
    free(buf);
    return rc;
}

static uint32_t map_flags(uint32_t pf)
{
    return (pf & 4u ? PYF_MAP_READ : 0) | (pf & 2u ? PYF_MAP_WRITE : 0) |
           (pf & 1u ? PYF_MAP_EXEC : 0) | PYF__MAP_KNOWN;
}

/* A PT_LOAD: the mapping, and the bytes of it the core holds. */
static int load(parse *p, const uint8_t *ph)
{
    pyf_core *c = p->c;
    uint64_t off = pyf__le64(ph + 8), vaddr = pyf__le64(ph + 16), filesz = pyf__le64(ph + 32),
             memsz = pyf__le64(ph + 40);
    if (memsz == 0 || vaddr + memsz < vaddr)
        return PYF_OK;
    if (filesz > memsz)
        filesz = memsz;
    int rc = pyf__core_add_map(c, vaddr, vaddr + memsz, 0, map_flags(pyf__le32(ph + 4)), NULL, 0);
    if (rc == PYF_OK)
        rc = pyf__core_add_seg(c, vaddr, filesz, off);
    uint64_t have = off >= c->size ? 0 : c->size - off;
    if (rc == PYF_OK && filesz > have) {
        c->info.missing_bytes += filesz - have;
        pyf__core_partial(c, PYF_CORE_CUT_SHORT, "the core is cut short: it ends at byte "
                          "%llu, its memory at 0x%llx needs bytes up to %llu",
                          (unsigned long long)c->size,
                          (unsigned long long)(vaddr + have),
                          (unsigned long long)(off + filesz));
    }
    return rc;
}

int pyf__core_parse_elf(pyf_core *c, pyf_failure *f)
{
    uint8_t eh[64];

    c->info.format = PYF_CORE_ELF;
    if (c->size < sizeof eh || pyf__core_read_exact(c, eh, sizeof eh, 0) != PYF_OK)
        return pyf__failure_set(f, PYF_ECORRUPT, "its ELF header is cut short (%llu bytes)",
                                (unsigned long long)c->size);
    if (eh[4] != 2 || eh[5] != 1)
        return pyf__failure_set(f, PYF_ENOTSUP, "a core of a 32-bit or big-endian machine "
                                "(only 64-bit little-endian ones are read)");
    if (pyf__le16(eh + 16) != ET_CORE)
        return pyf__failure_set(f, PYF_ECORRUPT, "an ELF file, but not a core (e_type %u: "
                                "an executable or a library?)", pyf__le16(eh + 16));
    parse p = {c, pyf__le16(eh + 18), NULL, false, PYF__CORE_MAX_NOTES};
    c->info.machine = p.machine;
    uint64_t phoff = pyf__le64(eh + 32), phentsize = pyf__le16(eh + 54), phnum = pyf__le16(eh + 56);
    if (phnum == PN_XNUM) { /* the count is section header 0's sh_info */
        uint8_t sh[64];
        uint64_t shoff = pyf__le64(eh + 40);
        if (shoff == 0 || pyf__core_read_exact(c, sh, sizeof sh, shoff) != PYF_OK)
            return pyf__failure_set(f, PYF_ECORRUPT, "its program header count (PN_XNUM) "
                                    "cannot be read");
        phnum = pyf__le32(sh + 44);
    }
    if (phentsize < PHDR_SIZE || phnum == 0)
        return pyf__failure_set(f, PYF_ECORRUPT, "it has no program headers (%llu of %llu "
                                "bytes each)", (unsigned long long)phnum,
                                (unsigned long long)phentsize);
    if (phnum > PYF__CORE_MAX_SEGS) {
        pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the core has %llu program headers: "
                          "those past %u are not read", (unsigned long long)phnum,
                          PYF__CORE_MAX_SEGS);
        phnum = PYF__CORE_MAX_SEGS;
    }
    uint8_t *table = malloc((size_t)(PHDR_CHUNK * phentsize));
    if (table == NULL)
        return pyf__failure_set(f, PYF_ENOMEM, "out of memory");
    /* the notes are read after every PT_LOAD: NT_FILE names their mappings */
    uint64_t note_off[16], note_size[16];
    uint32_t nnotes = 0;
    uint64_t read_ok = 0;
    int rc = PYF_OK;
    for (uint64_t first = 0; rc == PYF_OK && first < phnum; first += PHDR_CHUNK) {
        uint64_t n = phnum - first < PHDR_CHUNK ? phnum - first : PHDR_CHUNK;
        uint64_t at = phoff + first * phentsize;
        int64_t got = at < phoff ? -1 : pyf__core_pread(c, table, (size_t)(n * phentsize), at);
        if (got < 0) {
            rc = pyf__failure_set(f, PYF_EIO, "its program headers cannot be read");
            break;
        }
        uint64_t whole = (uint64_t)got / phentsize;
        for (uint64_t i = 0; rc == PYF_OK && i < whole; i++) {
            const uint8_t *ph = table + i * phentsize;
            uint32_t type = pyf__le32(ph);
            if (type == PT_LOAD)
                rc = load(&p, ph);
            else if (type == PT_NOTE && nnotes == 16)
                pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the core has more than 16 "
                                  "note segments: those past them are not read");
            else if (type == PT_NOTE) {
                note_off[nnotes] = pyf__le64(ph + 8);
                note_size[nnotes++] = pyf__le64(ph + 32);
            }
        }
        read_ok += whole;
        if (whole < n) {
            pyf__core_partial(c, PYF_CORE_CUT_SHORT | PYF_CORE_NOTES_PARTIAL, "the core is "
                              "cut short inside its program headers (%llu of %llu read)",
                              (unsigned long long)read_ok, (unsigned long long)phnum);
            break;
        }
    }
    free(table);
    if (rc == PYF_OK && read_ok == 0)
        rc = pyf__failure_set(f, PYF_ECORRUPT, "it is cut short before its first program "
                              "header (at byte %llu)", (unsigned long long)phoff);
    if (rc != PYF_OK)
        return rc == PYF_ENOMEM ? pyf__failure_set(f, rc, "out of memory") : rc;
    pyf__core_sort(c);
    for (uint32_t i = 0; rc == PYF_OK && i < nnotes; i++)
        rc = note_segment(&p, note_off[i], note_size[i]);
    if (rc == PYF_ENOMEM)
        return pyf__failure_set(f, rc, "out of memory");
    if (rc != PYF_OK)
        return pyf__failure_set(f, rc, "its notes cannot be read");
    if (!(c->info.flags & PYF_CORE_SIGNAL)) {
        /* no NT_SIGINFO: the first thread with a pending signal got it */
        for (uint32_t i = 0; i < c->nthreads; i++)
            if (c->threads[i].signo > 0) {
                c->info.signo = c->threads[i].signo;
                c->info.signal_tid = c->threads[i].tid;
                c->info.flags |= PYF_CORE_SIGNAL;
                break;
            }
    }
    return PYF_OK;
}
