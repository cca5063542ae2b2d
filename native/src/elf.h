/*
 * elf.h - the ELF reader behind runtime discovery (elf.c).  Private.
 */
#ifndef PYFRAMES_ELF_H
#define PYFRAMES_ELF_H

#include <stdbool.h>
#include <stdint.h>

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

#endif /* PYFRAMES_ELF_H */
