/*
 * elf_reader.h - the ELF reader (elf.c): sections, symbols, notes, build ids.
 * Private; not elf.h, which would hide the system header of that name.
 */
#ifndef PYFRAMES_ELF_READER_H
#define PYFRAMES_ELF_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Little-endian fields of an ELF file or a minidump, byte by byte (any
 * alignment, any host). */
static inline uint16_t pyf__le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t pyf__le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static inline uint64_t pyf__le64(const uint8_t *p)
{
    return (uint64_t)pyf__le32(p) | ((uint64_t)pyf__le32(p + 4) << 32);
}

/* Largest section-header table and section-name table read from a file. */
#define PYF__ELF_MAX_TABLE (1u << 20)

/* Find the section ".PyRuntime" in the ELF64 little-endian file at path (or
 * open as fd; the fd is neither moved nor closed).  On success *sh_addr is
 * the section's virtual address and *load_vaddr the first PT_LOAD's p_vaddr
 * aligned down to its p_align, so the section lives at
 * map_start + *sh_addr - *load_vaddr when the file is mapped at map_start.
 * Returns PYF_OK, PYF_ENOTPY (no such section, or no section headers),
 * PYF_ENOTSUP (an ELF that is not 64-bit little-endian), PYF_ECORRUPT
 * (not ELF, truncated or inconsistent headers), PYF_EIO (cannot open or
 * read), PYF_ENOMEM.  Reads only bounded pieces with pread; never crashes on
 * malformed input. */
#define PYF__SECTION_RUNTIME ".PyRuntime"
#define PYF__SECTION_ASYNCIO ".AsyncioDebug"

/* The section called name (see above; *sh_size, which may be NULL, gets
 * its size). */
int pyf__elf_find_section(const char *path, const char *name, uint64_t *sh_addr,
                          uint64_t *sh_size, uint64_t *load_vaddr);
int pyf__elf_find_section_fd(int fd, const char *name, uint64_t *sh_addr,
                             uint64_t *sh_size, uint64_t *load_vaddr);
/* What a file of CPython (python, libpython, or a program embedding CPython)
 * says of its runtime and version, in the file's own addresses: each lives
 * at map_start + value - load when the file is mapped at map_start.  0
 * where the file has none (also every field but load when it has no
 * section headers).  The sections come from the section headers alone; the
 * symbols (the defined ones of .dynsym, else of .symtab) only when asked
 * for: reading a libpython's symbol tables costs some 40 us. */
typedef struct pyf__elf_python {
    uint64_t load;                   /* as *load_vaddr above */
    uint64_t section, section_size;  /* the section .PyRuntime */
    uint64_t bss, bss_size;          /* the section .bss */
    bool symbols;                    /* the symbols below were read */
    uint64_t runtime, runtime_size;  /* the symbol _PyRuntime (st_value, st_size) */
    uint64_t version;                /* the symbol Py_Version (CPython 3.11+) */
    uint64_t getversion;             /* the function Py_GetVersion: CPython's code is here */
} pyf__elf_python;
/* PYF_OK, or as pyf__elf_find_section (never PYF_ENOTPY). */
int pyf__elf_python_facts(const char *path, bool symbols, pyf__elf_python *out);
int pyf__elf_find_pyruntime(const char *path, uint64_t *sh_addr,
                            uint64_t *load_vaddr);
int pyf__elf_find_pyruntime_fd(int fd, uint64_t *sh_addr, uint64_t *load_vaddr);

/* ==== notes (ELF cores and files' PT_NOTE segments) ======================
 * One note: its type, name (namesz bytes, the NUL included) and desc. */
typedef struct pyf__elf_note {
    uint32_t type;
    const char *name;
    uint32_t namesz;
    const uint8_t *desc;
    uint32_t descsz;
} pyf__elf_note;
/* The note at *at of notes[0, len) (4-byte aligned, as ELF64 cores and
 * files have them), *at moved past it: false at the end, or at a note
 * whose sizes run past len (then *at is len). */
bool pyf__elf_note_next(const uint8_t *notes, size_t len, size_t *at, pyf__elf_note *n);
/* Whether the note's name is name (NUL included in namesz). */
bool pyf__elf_note_named(const pyf__elf_note *n, const char *name);

/* The GNU build id (NT_GNU_BUILD_ID) of an ELF64 little-endian image: of
 * the first len bytes of one in memory (its first page: headers and a
 * note segment inside them), or of the file open as fd.  Copies at most
 * cap bytes to out; returns how many, 0 when it has none that can be
 * read. */
uint32_t pyf__elf_build_id_in(const uint8_t *image, size_t len, uint8_t *out, uint32_t cap);
uint32_t pyf__elf_build_id_fd(int fd, uint8_t *out, uint32_t cap);
/* The first PT_LOAD's p_vaddr aligned down to its p_align, of the ELF file
 * open as fd: the file is loaded at map_start - *load_vaddr of bias. */
int pyf__elf_first_load_fd(int fd, uint64_t *load_vaddr);

#endif /* PYFRAMES_ELF_READER_H */
