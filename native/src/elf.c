/*
 * elf.c - find a section (.PyRuntime, .AsyncioDebug) of a python
 * executable, libpython or extension module.
 *
 * The file is untrusted: every header field is checked against the file size
 * with overflow-safe arithmetic, tables are read with pread into buffers of
 * bounded size, and multi-byte fields are decoded byte by byte (ELF64
 * little-endian only), so a truncated or corrupted file yields an error code.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "abi.h"
#include "api.h"
#include "core.h"
#include "elf_reader.h"
#include "reads.h"

#define EHDR_SIZE 64u
#define SHDR_SIZE 64u
#define PHDR_SIZE 56u

#define ELFCLASS64 2u
#define ELFDATA2LSB 1u
#define PT_LOAD 1u
#define PT_NOTE 4u
#define NT_GNU_BUILD_ID 3u
#define SHT_SYMTAB 2u
#define SHT_NOBITS 8u
#define SHT_DYNSYM 11u
#define SHN_UNDEF 0u
#define SHN_XINDEX 0xffffu
#define PN_XNUM 0xffffu

/* Cap on program headers walked when e_phnum is extended (PN_XNUM). */
#define MAX_PHNUM 65536u
/* Symbol tables: Elf64_Sym entries, read in chunks; a table or its string
 * table larger than this is not searched. */
#define SYM_SIZE 24u
#define SYM_CHUNK 4096u
#define MAX_SYMBOL_TABLE ((uint64_t)64 << 20)

/* [off, off + len) lies inside a file of size bytes. */
static bool in_file(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

typedef struct shdr {
    uint32_t name, type;
    uint64_t addr, offset, size;
    uint32_t link, info;
} shdr;

static void decode_shdr(const uint8_t *p, shdr *s)
{
    s->name = pyf__le32(p + 0);
    s->type = pyf__le32(p + 4);
    s->addr = pyf__le64(p + 16);
    s->offset = pyf__le64(p + 24);
    s->size = pyf__le64(p + 32);
    s->link = pyf__le32(p + 40);
    s->info = pyf__le32(p + 44);
}

typedef struct elf_file {
    int fd;
    uint64_t size;
    uint64_t phoff, shoff;
    uint32_t phentsize, shentsize;
    uint64_t phnum, shnum, shstrndx;
} elf_file;

static int read_header(elf_file *f)
{
    uint8_t eh[EHDR_SIZE];
    int rc;

    if (f->size < 16)
        return PYF_ECORRUPT;
    rc = pyf__pread_exact(f->fd, eh, f->size < EHDR_SIZE ? 16 : EHDR_SIZE, 0);
    if (rc != PYF_OK)
        return rc;
    if (memcmp(eh, "\177ELF", 4) != 0)
        return PYF_ECORRUPT;
    if (eh[4] != ELFCLASS64 || eh[5] != ELFDATA2LSB)
        return PYF_ENOTSUP;
    if (f->size < EHDR_SIZE)
        return PYF_ECORRUPT;
    f->phoff = pyf__le64(eh + 32);
    f->shoff = pyf__le64(eh + 40);
    f->phentsize = pyf__le16(eh + 54);
    f->phnum = pyf__le16(eh + 56);
    f->shentsize = pyf__le16(eh + 58);
    f->shnum = pyf__le16(eh + 60);
    f->shstrndx = pyf__le16(eh + 62);
    return PYF_OK;
}

/* Section header 0, which holds the extended e_shnum/e_shstrndx/e_phnum. */
static int read_shdr0(const elf_file *f, shdr *s0)
{
    uint8_t buf[SHDR_SIZE];
    int rc;

    if (f->shoff == 0 || f->shentsize < SHDR_SIZE || !in_file(f->shoff, SHDR_SIZE, f->size))
        return PYF_ECORRUPT;
    rc = pyf__pread_exact(f->fd, buf, SHDR_SIZE, f->shoff);
    if (rc == PYF_OK)
        decode_shdr(buf, s0);
    return rc;
}

/* The section headers and the section-name table of a file. */
typedef struct sections {
    uint8_t *table, *names;
    uint64_t names_size;
} sections;

static void sections_free(sections *sec)
{
    free(sec->names);
    free(sec->table);
}

static int sections_read(elf_file *f, sections *sec)
{
    uint64_t bytes;
    shdr strtab;
    int rc;

    memset(sec, 0, sizeof *sec);
    if (f->shoff == 0)
        return PYF_ENOTPY; /* section headers stripped */
    if (f->shentsize < SHDR_SIZE)
        return PYF_ECORRUPT;
    if (f->shnum == 0 || f->shstrndx == SHN_XINDEX) {
        shdr s0;

        rc = read_shdr0(f, &s0);
        if (rc != PYF_OK)
            return rc;
        if (f->shnum == 0)
            f->shnum = s0.size;
        if (f->shstrndx == SHN_XINDEX)
            f->shstrndx = s0.link;
    }
    if (f->shnum == 0 || f->shstrndx >= f->shnum)
        return PYF_ECORRUPT;
    if (f->shstrndx == SHN_UNDEF)
        return PYF_ENOTPY; /* no section names at all */
    if (f->shnum > PYF__ELF_MAX_TABLE / f->shentsize)
        return PYF_ECORRUPT;
    bytes = f->shnum * f->shentsize;
    if (!in_file(f->shoff, bytes, f->size))
        return PYF_ECORRUPT;

    sec->table = malloc((size_t)bytes);
    if (sec->table == NULL)
        return PYF_ENOMEM;
    rc = pyf__pread_exact(f->fd, sec->table, (size_t)bytes, f->shoff);
    if (rc != PYF_OK)
        goto fail;

    decode_shdr(sec->table + f->shstrndx * f->shentsize, &strtab);
    if (strtab.type == SHT_NOBITS || strtab.size == 0 ||
        strtab.size > PYF__ELF_MAX_TABLE || !in_file(strtab.offset, strtab.size, f->size)) {
        rc = PYF_ECORRUPT;
        goto fail;
    }
    sec->names = malloc((size_t)strtab.size);
    if (sec->names == NULL) {
        rc = PYF_ENOMEM;
        goto fail;
    }
    sec->names_size = strtab.size;
    rc = pyf__pread_exact(f->fd, sec->names, (size_t)strtab.size, strtab.offset);
    if (rc == PYF_OK)
        return PYF_OK;
fail:
    sections_free(sec);
    return rc;
}

/* The section called name among sec: PYF_OK with its address and size, or
 * PYF_ENOTPY. */
static int section_in(const elf_file *f, const sections *sec, const char *name,
                      uint64_t *sh_addr, uint64_t *sh_size)
{
    const size_t want = strlen(name) + 1; /* includes the NUL */
    shdr s;

    for (uint64_t i = 0; i < f->shnum; i++) {
        decode_shdr(sec->table + i * f->shentsize, &s);
        if (s.name >= sec->names_size || sec->names_size - s.name < want)
            continue;
        if (memcmp(sec->names + s.name, name, want) == 0) {
            *sh_addr = s.addr;
            *sh_size = s.size;
            return PYF_OK;
        }
    }
    return PYF_ENOTPY;
}

static int find_section(elf_file *f, const char *name, uint64_t *sh_addr, uint64_t *sh_size)
{
    sections sec;
    int rc = sections_read(f, &sec);

    if (rc != PYF_OK)
        return rc;
    rc = section_in(f, &sec, name, sh_addr, sh_size);
    sections_free(&sec);
    return rc;
}

/* The defined symbols names[0..n) of the symbol table sym (whose string
 * table is section sym.link), read SYM_CHUNK symbols at a time: each one
 * found (bit i of *found clear before) gets values[i] and sizes[i] and its
 * bit set.  PYF_OK (whether or not any was found) or the failure. */
static int table_symbols(elf_file *f, const sections *sec, const shdr *sym,
                         const char *const *names, size_t n, uint64_t *values,
                         uint64_t *sizes, uint32_t *found)
{
    const uint32_t all = (1u << n) - 1;
    uint8_t *chunk = NULL, *strs = NULL;
    uint64_t nsyms;
    shdr strtab;
    int rc = PYF_OK;

    if (sym->link >= f->shnum || sym->type == SHT_NOBITS)
        return PYF_ECORRUPT;
    decode_shdr(sec->table + (uint64_t)sym->link * f->shentsize, &strtab);
    if (strtab.type == SHT_NOBITS || strtab.size == 0 || strtab.size > MAX_SYMBOL_TABLE ||
        !in_file(strtab.offset, strtab.size, f->size) || sym->size > MAX_SYMBOL_TABLE ||
        !in_file(sym->offset, sym->size, f->size))
        return PYF_ECORRUPT;
    strs = malloc((size_t)strtab.size);
    chunk = malloc(SYM_CHUNK * SYM_SIZE);
    if (strs == NULL || chunk == NULL) {
        rc = PYF_ENOMEM;
        goto out;
    }
    if ((rc = pyf__pread_exact(f->fd, strs, (size_t)strtab.size, strtab.offset)) != PYF_OK)
        goto out;
    nsyms = sym->size / SYM_SIZE;
    for (uint64_t first = 0; first < nsyms && (*found & all) != all; first += SYM_CHUNK) {
        uint64_t count = nsyms - first < SYM_CHUNK ? nsyms - first : SYM_CHUNK;

        rc = pyf__pread_exact(f->fd, chunk, (size_t)(count * SYM_SIZE), sym->offset + first * SYM_SIZE);
        if (rc != PYF_OK)
            break;
        for (uint64_t i = 0; i < count; i++) {
            const uint8_t *e = chunk + i * SYM_SIZE;
            uint32_t st_name = pyf__le32(e);

            if (pyf__le16(e + 6) == SHN_UNDEF || st_name >= strtab.size)
                continue;
            for (size_t k = 0; k < n; k++) {
                size_t want = strlen(names[k]) + 1;

                if ((*found & (1u << k)) || strtab.size - st_name < want ||
                    memcmp(strs + st_name, names[k], want) != 0)
                    continue;
                values[k] = pyf__le64(e + 8);
                sizes[k] = pyf__le64(e + 16);
                *found |= 1u << k;
            }
        }
    }
out:
    free(chunk);
    free(strs);
    return rc;
}

/* The symbols names[0..n) (n <= 8) of .dynsym, then those still missing
 * of .symtab (see table_symbols).  PYF_ENOTPY when none is defined. */
static int find_symbols(elf_file *f, const sections *sec, const char *const *names, size_t n,
                        uint64_t *values, uint64_t *sizes, uint32_t *found)
{
    const uint32_t all = (1u << n) - 1;
    int rc = PYF_OK;

    *found = 0;
    for (int pass = 0; pass < 2 && rc == PYF_OK && (*found & all) != all; pass++) {
        uint32_t type = pass == 0 ? SHT_DYNSYM : SHT_SYMTAB;

        for (uint64_t i = 0; i < f->shnum && rc == PYF_OK && (*found & all) != all; i++) {
            shdr s;

            decode_shdr(sec->table + i * f->shentsize, &s);
            if (s.type == type)
                rc = table_symbols(f, sec, &s, names, n, values, sizes, found);
        }
    }
    if (rc == PYF_OK && *found == 0)
        rc = PYF_ENOTPY;
    return rc;
}

static int first_load(elf_file *f, uint64_t *load_vaddr)
{
    uint8_t ph[PHDR_SIZE];
    uint64_t phnum = f->phnum;
    int rc;

    if (f->phoff == 0 || phnum == 0)
        return PYF_ECORRUPT; /* nothing is loadable */
    if (f->phentsize < PHDR_SIZE)
        return PYF_ECORRUPT;
    if (phnum == PN_XNUM) {
        shdr s0;

        rc = read_shdr0(f, &s0);
        if (rc != PYF_OK)
            return rc;
        phnum = s0.info;
        if (phnum == 0 || phnum > MAX_PHNUM)
            return PYF_ECORRUPT;
    }
    /* phnum <= 2^32 and phentsize < 2^16: the product cannot overflow. */
    if (!in_file(f->phoff, phnum * f->phentsize, f->size))
        return PYF_ECORRUPT;
    for (uint64_t i = 0; i < phnum; i++) {
        rc = pyf__pread_exact(f->fd, ph, PHDR_SIZE, f->phoff + i * f->phentsize);
        if (rc != PYF_OK)
            return rc;
        if (pyf__le32(ph) == PT_LOAD) {
            uint64_t vaddr = pyf__le64(ph + 16), align = pyf__le64(ph + 48);

            *load_vaddr = align > 1 ? vaddr - vaddr % align : vaddr;
            return PYF_OK;
        }
    }
    return PYF_ECORRUPT;
}

/* The section called name of the file open as fd, and the image's load
 * address (see elf.h). */
static int lookup_fd(int fd, const char *name, uint64_t *addr_out, uint64_t *size_out,
                     uint64_t *load_vaddr)
{
    elf_file f;
    struct stat st;
    uint64_t addr = 0, size = 0, load = 0;
    int rc;

    if (fd < 0 || name == NULL || addr_out == NULL || load_vaddr == NULL)
        return PYF_EINVAL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0)
        return PYF_EIO;
    memset(&f, 0, sizeof f);
    f.fd = fd;
    f.size = (uint64_t)st.st_size;
    rc = read_header(&f);
    if (rc != PYF_OK)
        return rc;
    rc = find_section(&f, name, &addr, &size);
    if (rc != PYF_OK)
        return rc;
    rc = first_load(&f, &load);
    if (rc != PYF_OK)
        return rc;
    if (addr < load)
        return PYF_ECORRUPT; /* the section lies below the image */
    *addr_out = addr;
    if (size_out != NULL)
        *size_out = size;
    *load_vaddr = load;
    return PYF_OK;
}

int pyf__elf_first_load_fd(int fd, uint64_t *load_vaddr)
{
    elf_file f;
    struct stat st;
    int rc;

    if (fd < 0 || load_vaddr == NULL)
        return PYF_EINVAL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0)
        return PYF_EIO;
    memset(&f, 0, sizeof f);
    f.fd = fd;
    f.size = (uint64_t)st.st_size;
    rc = read_header(&f);
    return rc == PYF_OK ? first_load(&f, load_vaddr) : rc;
}

/* lookup_fd on the file at path. */
static int lookup(const char *path, const char *name, uint64_t *addr, uint64_t *size,
                  uint64_t *load_vaddr)
{
    int fd, rc;

    if (path == NULL || addr == NULL || load_vaddr == NULL)
        return PYF_EINVAL;
    /* O_NONBLOCK: never hang on a FIFO passed by mistake (rejected below). */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return PYF_EIO;
    rc = lookup_fd(fd, name, addr, size, load_vaddr);
    close(fd);
    return rc;
}

/* A value of the file's own address space that lies below its image (or
 * is none): 0, as if absent. */
static uint64_t in_image(uint64_t addr, uint64_t load)
{
    return addr >= load ? addr : 0;
}

static int python_facts_fd(int fd, bool symbols, pyf__elf_python *out)
{
    static const char *const names[] = {"_PyRuntime", "Py_Version", "Py_GetVersion"};
    uint64_t values[3] = {0}, sizes[3] = {0}, addr = 0, size = 0;
    uint32_t found = 0;
    elf_file f;
    sections sec;
    struct stat st;
    int rc;

    memset(out, 0, sizeof *out);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0)
        return PYF_EIO;
    memset(&f, 0, sizeof f);
    f.fd = fd;
    f.size = (uint64_t)st.st_size;
    if ((rc = read_header(&f)) != PYF_OK || (rc = first_load(&f, &out->load)) != PYF_OK)
        return rc;
    rc = sections_read(&f, &sec);
    if (rc == PYF_ENOTPY) /* no section headers: nothing to say */
        return PYF_OK;
    if (rc != PYF_OK)
        return rc;
    rc = symbols ? find_symbols(&f, &sec, names, 3, values, sizes, &found) : PYF_OK;
    if (rc == PYF_OK || rc == PYF_ENOTPY) {
        rc = PYF_OK;
        out->symbols = symbols;
        if (found & 1) {
            out->runtime = in_image(values[0], out->load);
            out->runtime_size = out->runtime ? sizes[0] : 0;
        }
        if (found & 2)
            out->version = in_image(values[1], out->load);
        if (found & 4)
            out->getversion = in_image(values[2], out->load);
        if (section_in(&f, &sec, PYF__SECTION_RUNTIME, &addr, &size) == PYF_OK &&
            in_image(addr, out->load)) {
            out->section = addr;
            out->section_size = size;
        }
        if (section_in(&f, &sec, ".bss", &addr, &size) == PYF_OK && in_image(addr, out->load)) {
            out->bss = addr;
            out->bss_size = size;
        }
    }
    sections_free(&sec);
    return rc;
}

int pyf__elf_python_facts(const char *path, bool symbols, pyf__elf_python *out)
{
    int fd, rc;

    memset(out, 0, sizeof *out);
    if (path == NULL)
        return PYF_EINVAL;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return PYF_EIO;
    rc = python_facts_fd(fd, symbols, out);
    close(fd);
    return rc;
}

int pyf__elf_find_section_fd(int fd, const char *name, uint64_t *sh_addr,
                             uint64_t *sh_size, uint64_t *load_vaddr)
{
    return lookup_fd(fd, name, sh_addr, sh_size, load_vaddr);
}

int pyf__elf_find_section(const char *path, const char *name, uint64_t *sh_addr,
                          uint64_t *sh_size, uint64_t *load_vaddr)
{
    return lookup(path, name, sh_addr, sh_size, load_vaddr);
}

int pyf__elf_find_pyruntime_fd(int fd, uint64_t *sh_addr, uint64_t *load_vaddr)
{
    return pyf__elf_find_section_fd(fd, PYF__SECTION_RUNTIME, sh_addr, NULL, load_vaddr);
}

int pyf__elf_find_pyruntime(const char *path, uint64_t *sh_addr, uint64_t *load_vaddr)
{
    return pyf__elf_find_section(path, PYF__SECTION_RUNTIME, sh_addr, NULL, load_vaddr);
}

/* ==== notes and build ids ================================================ */

bool pyf__elf_note_next(const uint8_t *notes, size_t len, size_t *at, pyf__elf_note *n)
{
    size_t p = *at;

    if (p > len || len - p < 12)
        return false;
    uint64_t namesz = pyf__le32(notes + p), descsz = pyf__le32(notes + p + 4);
    uint64_t name_at = p + 12, desc_at = name_at + ((namesz + 3) & ~(uint64_t)3);
    uint64_t end = desc_at + ((descsz + 3) & ~(uint64_t)3);
    if (desc_at > len || descsz > len - desc_at) {
        *at = len;
        return false;
    }
    n->type = pyf__le32(notes + p + 8);
    n->name = (const char *)notes + name_at;
    n->namesz = (uint32_t)namesz;
    n->desc = notes + desc_at;
    n->descsz = (uint32_t)descsz;
    *at = end < len ? (size_t)end : len;
    return true;
}

bool pyf__elf_note_named(const pyf__elf_note *n, const char *name)
{
    size_t want = strlen(name) + 1;
    return n->namesz == want && memcmp(n->name, name, want) == 0;
}

static uint32_t build_id_of_notes(const uint8_t *notes, size_t len, uint8_t *out, uint32_t cap)
{
    pyf__elf_note n;
    size_t at = 0;

    while (pyf__elf_note_next(notes, len, &at, &n)) {
        if (n.type != NT_GNU_BUILD_ID || !pyf__elf_note_named(&n, "GNU") || n.descsz == 0)
            continue;
        uint32_t k = n.descsz < cap ? n.descsz : cap;
        memcpy(out, n.desc, k);
        return k;
    }
    return 0;
}

/* Bounds on a file's notes read for its build id. */
#define NOTE_PHNUM_MAX 4096u
#define NOTE_SEGMENT_MAX 65536u

uint32_t pyf__elf_build_id_in(const uint8_t *image, size_t len, uint8_t *out, uint32_t cap)
{
    if (len < EHDR_SIZE || memcmp(image, "\177ELF", 4) != 0 || image[4] != ELFCLASS64 ||
        image[5] != ELFDATA2LSB)
        return 0;
    uint64_t phoff = pyf__le64(image + 32), phentsize = pyf__le16(image + 54), phnum = pyf__le16(image + 56);
    if (phentsize < PHDR_SIZE || phnum > NOTE_PHNUM_MAX)
        return 0;
    for (uint64_t i = 0; i < phnum; i++) {
        uint64_t at = phoff + i * phentsize;
        if (!in_file(at, PHDR_SIZE, len))
            break;
        const uint8_t *ph = image + at;
        uint64_t off = pyf__le64(ph + 8), size = pyf__le64(ph + 32);
        if (pyf__le32(ph) != PT_NOTE || !in_file(off, size, len))
            continue;
        uint32_t k = build_id_of_notes(image + off, (size_t)size, out, cap);
        if (k != 0)
            return k;
    }
    return 0;
}

uint32_t pyf__elf_build_id_fd(int fd, uint8_t *out, uint32_t cap)
{
    struct stat st;
    uint8_t eh[EHDR_SIZE], ph[PHDR_SIZE];

    if (fstat(fd, &st) < 0 || st.st_size < EHDR_SIZE || pyf__pread_exact(fd, eh, EHDR_SIZE, 0) != PYF_OK ||
        memcmp(eh, "\177ELF", 4) != 0 || eh[4] != ELFCLASS64 || eh[5] != ELFDATA2LSB)
        return 0;
    uint64_t size = (uint64_t)st.st_size;
    uint64_t phoff = pyf__le64(eh + 32), phentsize = pyf__le16(eh + 54), phnum = pyf__le16(eh + 56);
    if (phentsize < PHDR_SIZE || phnum > NOTE_PHNUM_MAX)
        return 0;
    for (uint64_t i = 0; i < phnum; i++) {
        uint64_t at = phoff + i * phentsize;
        if (!in_file(at, PHDR_SIZE, size) || pyf__pread_exact(fd, ph, PHDR_SIZE, at) != PYF_OK)
            break;
        uint64_t off = pyf__le64(ph + 8), nsize = pyf__le64(ph + 32);
        if (pyf__le32(ph) != PT_NOTE || nsize > NOTE_SEGMENT_MAX || !in_file(off, nsize, size))
            continue;
        uint8_t *notes = malloc(nsize ? (size_t)nsize : 1);
        uint32_t k = 0;
        if (notes != NULL && pyf__pread_exact(fd, notes, (size_t)nsize, off) == PYF_OK)
            k = build_id_of_notes(notes, (size_t)nsize, out, cap);
        free(notes);
        if (k != 0)
            return k;
    }
    return 0;
}

/* Why a lookup of name in path failed, in f (errno is the failed call's
 * when rc is PYF_EIO). */
static int elf_failure(pyf_failure *f, int rc, const char *path, const char *name)
{
    int e = errno;

    switch (rc) {
    case PYF_EIO:
        return pyf__failure_set(f, rc, "cannot read %s: %s", path,
                                e != 0 ? strerror(e) : "not a regular file");
    case PYF_ENOTPY:
        return pyf__failure_set(f, rc, "%s has no %s section", path, name);
    case PYF_ENOTSUP:
        return pyf__failure_set(f, rc, "%s is not a 64-bit little-endian ELF file", path);
    case PYF_ECORRUPT:
        return pyf__failure_set(f, rc, "%s is not an ELF file or its headers are "
                                "truncated or inconsistent", path);
    case PYF_ENOMEM:
        return pyf__failure_set(f, rc, "out of memory reading %s", path);
    default:
        return pyf__failure_set(f, rc, "%s: %s", path, pyf_error_message(rc));
    }
}

/* map_start + the section's offset from the image's first PT_LOAD. */
static int section_in_map(const char *path, const char *name, uint64_t map_start,
                          uint64_t *found, pyf_failure *failure)
{
    uint64_t sh_addr, load, delta;
    pyf_failure f;
    int rc;

    if (!pyf__failure_begin(failure, &f))
        return PYF_EINVAL;
    if (path == NULL || found == NULL)
        return pyf__failure_out(failure, &f, pyf__failure_set(&f, PYF_EINVAL, "%s is NULL",
                                                              path == NULL ? "path" : "found"));
    errno = 0;
    rc = pyf__elf_find_section(path, name, &sh_addr, NULL, &load);
    if (rc != PYF_OK)
        return pyf__failure_out(failure, &f, elf_failure(&f, rc, path, name));
    delta = sh_addr - load;
    if (delta > UINT64_MAX - map_start)
        return pyf__failure_out(failure, &f, pyf__failure_set(
            &f, PYF_ECORRUPT, "the %s section of %s lies past the end of the address "
            "space when the file is mapped at 0x%llx", name, path,
            (unsigned long long)map_start));
    *found = map_start + delta;
    return pyf__failure_out(failure, &f, PYF_OK);
}

PYF_API int pyf_elf_find_runtime(const char *path, uint64_t map_start, uint64_t *found,
                                 pyf_failure *failure)
{
    return section_in_map(path, PYF__SECTION_RUNTIME, map_start, found, failure);
}

PYF_API int pyf_elf_find_asyncio(const char *path, uint64_t map_start, uint64_t *found,
                                 pyf_failure *failure)
{
    return section_in_map(path, PYF__SECTION_ASYNCIO, map_start, found, failure);
}
