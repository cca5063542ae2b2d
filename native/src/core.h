/*
 * core.h - core files (core.c: the core, its memory and files; core_elf.c
 * and core_minidump.c: the two formats; core_unpack.c: compressed cores).
 *
 * A format's parser fills the core through the builders below: the ranges
 * whose bytes the core holds (segments), the process's mappings with the
 * files they map, its threads and the signal, and the partial flags with
 * their first cause.  core.c then sorts and checks what was built (no two
 * segments overlap; the executable and the python files are checked
 * against the build ids the core holds) and serves reads from it.
 */
#ifndef PYFRAMES_CORE_H
#define PYFRAMES_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "errors.h"

/* Bounds on what a core may describe (a hostile one asks for more). */
#define PYF__CORE_MAX_SEGS (1u << 20)
#define PYF__CORE_MAX_MAPS (1u << 20)
#define PYF__CORE_MAX_THREADS (1u << 16)
#define PYF__CORE_MAX_FILES (1u << 16)
#define PYF__CORE_MAX_NOTES ((uint64_t)64 << 20) /* bytes of notes read in all */
#define PYF__CORE_MAX_PATH 4096u
#define PYF__CORE_NO_FILE UINT32_MAX

typedef struct pyf__core_seg {
    uint64_t start, end; /* [start, end) of the process, held by the core */
    uint64_t off;        /* where start's byte is in the core */
} pyf__core_seg;

typedef struct pyf__core_map {
    uint64_t start, end; /* [start, end) of the process */
    uint64_t offset;     /* in the file of start */
    uint32_t flags;      /* PYF_MAP_*; PYF__MAP_KNOWN once the permissions are */
    uint32_t file;       /* index into files, PYF__CORE_NO_FILE for none */
} pyf__core_map;
#define PYF__MAP_KNOWN 0x100u

/* A file's state beside its public pyf_core_file. */
typedef struct pyf__core_fstate {
    int fd;          /* -1 until opened (and when it cannot be) */
    bool checked;    /* its status is final */
    uint64_t size;   /* its size once open */
} pyf__core_fstate;

typedef struct pyf__core_unwind pyf__core_unwind;

struct pyf_core {
    int fd;                     /* the core's bytes (a compressed core's temp file) */
    uint64_t size;
    pyf_core_info info;
    pyf__core_seg *segs;
    uint32_t nsegs, cap_segs;
    pyf__core_map *maps;
    uint32_t nmaps, cap_maps;
    uint32_t maps_sorted;       /* maps[0, maps_sorted) are sorted */
    pyf_core_file *files;       /* public, with fstate beside each */
    pyf__core_fstate *fstate;
    uint32_t nfiles, cap_files;
    uint32_t *fhash;            /* files by path: open addressing, fhash_cap slots */
    uint32_t fhash_cap;
    pyf_core_thread *threads;
    uint32_t nthreads, cap_threads;
    pyf_mapping *pub_maps;      /* maps as pyf_core_mappings hands them out */
    char *sysroot;              /* NULL: none */
    char *executable;           /* the executable given, NULL: none */
    uint64_t entry;             /* the program's entry point (AT_ENTRY), 0 unknown */
    uint32_t last_seg;          /* the segment the last read used */
    pyf__core_unwind *unwind;   /* libdw's session (core_unwind.c), NULL until used */
    bool has_message;
    char message[PYF__ERRBUF];  /* the last failed read's words */
};

/* ==== builders (core.c), for the parsers =================================
 * Each returns PYF_OK or PYF_ENOMEM; past a bound the item is dropped and
 * the core marked PYF_CORE_NOTES_PARTIAL. */
int pyf__core_add_seg(pyf_core *c, uint64_t start, uint64_t len, uint64_t off);
/* A mapping of the file path (len bytes, not NUL-terminated; NULL for
 * memory of no file), flags PYF_MAP_* | PYF__MAP_KNOWN or 0 (unknown). */
int pyf__core_add_map(pyf_core *c, uint64_t start, uint64_t end, uint64_t offset,
                      uint32_t flags, const char *path, size_t len);
/* The file path (len bytes) of the mapping that starts at start (the
 * mappings sorted by pyf__core_sort), at offset: named, else added with
 * its permissions unknown. */
int pyf__core_name_map(pyf_core *c, uint64_t start, uint64_t end, uint64_t offset,
                       const char *path, size_t len);
/* Sort the segments and the mappings by address, apart (what overlaps the
 * range before it keeps only what lies past it). */
void pyf__core_sort(pyf_core *c);
/* A new thread, zeroed (NULL: out of memory or past the bound). */
pyf_core_thread *pyf__core_add_thread(pyf_core *c, uint64_t tid);
/* Mark the core partial (a PYF_CORE_* flag), with the first cause. */
void pyf__core_partial(pyf_core *c, uint32_t flag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Read up to len bytes of the core at off; returns the bytes read (fewer
 * at its end), or -1 with errno. */
int64_t pyf__core_pread(const pyf_core *c, void *buf, size_t len, uint64_t off);
/* Exactly len bytes at off: PYF_OK, PYF_EIO (errno), PYF_ECORRUPT (past the end). */
int pyf__core_read_exact(const pyf_core *c, void *buf, size_t len, uint64_t off);
/* Exactly len bytes of the file open as fd at off: PYF_OK, PYF_EIO (errno),
 * PYF_ECORRUPT (the file ends first: shorter than it said, or cut short
 * underneath us).  Every read of an ELF file and of a core. */
int pyf__pread_exact(int fd, void *buf, size_t len, uint64_t off);
/* Write all of buf at off: 0, or -1 with errno. */
int pyf__pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* An open descriptor of files[i], found and checked (-1: not usable). */
int pyf__core_file_fd(pyf_core *c, uint32_t i);
/* The native stacks' session (core_unwind.c), freed with the core. */
void pyf__core_unwind_free(pyf_core *c);

/* ==== the formats ======================================================== */
/* Parse an ELF core (core_elf.c) or a minidump (core_minidump.c) whose
 * bytes are c->fd: PYF_OK (maybe partial), or a failure in f. */
int pyf__core_parse_elf(pyf_core *c, pyf_failure *f);
int pyf__core_parse_minidump(pyf_core *c, pyf_failure *f);

/* ==== compressed cores (core_unpack.c) ==================================
 * The compression the first bytes of a file say (PYF_CORE_*, PLAIN for
 * none known). */
uint32_t pyf__core_compression_of(const uint8_t *head, size_t len);
/* Decompress in_fd (path names it in messages) into a temporary file
 * deleted from the start: *out_fd and *size.  A stream that ends early or
 * is corrupt past its start keeps what came before (c marked
 * PYF_CORE_STREAM_ENDED). */
int pyf__core_unpack(pyf_core *c, int in_fd, const char *path, uint32_t kind,
                     const char *temp_dir, uint64_t max_size, int *out_fd,
                     uint64_t *size, pyf_failure *f);
/* The name of a compression, and the Debian package of its library. */
const char *pyf__core_compression_name(uint32_t kind);

/* ==== runtime discovery over mappings (runtime_find.c) ================== */
/* The .AsyncioDebug section of the first file of maps (at file offset 0,
 * basename containing "python", opened through open_path) that has one:
 * PYF_OK with *found, PYF_ENOTSUP when none has. */
int pyf__maps_find_asyncio(const pyf_mapping *v, size_t n, uint64_t *found);

#endif /* PYFRAMES_CORE_H */
