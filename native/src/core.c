/*
 * core.c - a core file: opened (compressed or not, ELF or minidump), its
 * memory read, its files found and checked, a target opened on it.
 *
 * Memory: a read is served from the segment that holds its address (the
 * core's own bytes, pread at the segment's offset), else, for a mapping of
 * a file, from that file: the kernel and gdb leave out of a file mapping
 * only what the process did not change (program text, read-only data; a
 * private mapping never written), which is the file's own bytes.  A
 * mapping the process may have written (writable, or of permissions the
 * core does not say: gdb writes no header for what it leaves out) is read
 * from its file only when the file's build id shows it is the one mapped,
 * and never in a minidump (its writers leave out what they choose).
 * Anything else fails with PYF_EFAULT and says why.  A file is used only
 * once it is a regular file whose build id equals the one the core holds
 * in its copy of the file's first page (the kernel and gdb keep every ELF
 * mapping's first page): a file replaced since the core was written is
 * never read.  Every read stays
 * inside the core file and the files it names; nothing is mapped, so a
 * file that shrinks while it is read gives a failed read, not a signal.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "abi.h"
#include "api.h"
#include "core.h"
#include "elf_reader.h"
#include "errors.h"
#include "pthread_tid.h"
#include "reads.h"

_Static_assert(sizeof(pyf_core_thread) == PYF_CORE_THREAD_SIZE, "pyf_core_thread is frozen");
_Static_assert(sizeof(pyf_core_file) == PYF_CORE_FILE_SIZE, "pyf_core_file is frozen");
_Static_assert(sizeof(pyf_core_info) == PYF_CORE_INFO_SIZE_V0, "pyf_core_info");
_Static_assert(sizeof(pyf_core_request) == PYF_CORE_REQUEST_SIZE_V0, "pyf_core_request");

#define DELETED_SUFFIX " (deleted)"
/* Files kept open at once (the rest are opened again when read). */
#define MAX_OPEN_FILES 32u
/* An ELF file's first page: where its headers and build id note are. */
#define HEAD_PAGE 4096u

/* ==== reading the core and its files ===================================== */

int pyf__pread_exact(int fd, void *buf, size_t len, uint64_t off)
{
    uint8_t *p = buf;

    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
        return PYF_ECORRUPT;
    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)off);

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return PYF_EIO;
        }
        if (n == 0)
            return PYF_ECORRUPT;
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return PYF_OK;
}

int pyf__pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
    const uint8_t *p = buf;

    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ENOSPC;
            return -1;
        }
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return 0;
}

int64_t pyf__core_pread(const pyf_core *c, void *buf, size_t len, uint64_t off)
{
    size_t done = 0;

    if (off >= c->size)
        return 0;
    if (len > c->size - off)
        len = (size_t)(c->size - off);
    while (done < len) {
        ssize_t n = pread(c->fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));

        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return (int64_t)done;
}

int pyf__core_read_exact(const pyf_core *c, void *buf, size_t len, uint64_t off)
{
    int64_t n = pyf__core_pread(c, buf, len, off);

    if (n < 0)
        return PYF_EIO;
    return (uint64_t)n == len ? PYF_OK : PYF_ECORRUPT;
}

/* ==== builders =========================================================== */

void pyf__core_partial(pyf_core *c, uint32_t flag, const char *fmt, ...)
{
    c->info.flags |= flag;
    if (c->info.problem[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(c->info.problem, sizeof c->info.problem, fmt, ap) < 0)
        c->info.problem[0] = '\0';
    va_end(ap);
}

/* Room for one more of an array of n elements of size each, at most max. */
static int grow(void **v, uint32_t *cap, uint32_t n, size_t size, uint32_t max)
{
    if (n < *cap)
        return PYF_OK;
    if (n >= max)
        return PYF_EDEPTH;
    uint32_t want = *cap ? *cap * 2 : 64;
    if (want > max)
        want = max;
    void *p = realloc(*v, (size_t)want * size);
    if (p == NULL)
        return PYF_ENOMEM;
    *v = p;
    *cap = want;
    return PYF_OK;
}

int pyf__core_add_seg(pyf_core *c, uint64_t start, uint64_t len, uint64_t off)
{
    if (len == 0 || start + len < start)
        return PYF_OK; /* an empty or wrapping range holds nothing */
    int rc = grow((void **)&c->segs, &c->cap_segs, c->nsegs, sizeof *c->segs,
                  PYF__CORE_MAX_SEGS);
    if (rc == PYF_EDEPTH) {
        pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the core describes more than %u "
                          "memory segments: those past it are not read", PYF__CORE_MAX_SEGS);
        return PYF_OK;
    }
    if (rc != PYF_OK)
        return rc;
    c->segs[c->nsegs++] = (pyf__core_seg){start, start + len, off};
    return PYF_OK;
}

static uint32_t path_hash(const char *path, size_t len)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (uint8_t)path[i]) * 16777619u;
    return h;
}

/* Index the files by path in a table of twice their capacity. */
static int rehash(pyf_core *c)
{
    uint32_t cap = 1;
    while (cap < 2 * c->cap_files)
        cap *= 2;
    uint32_t *t = malloc((size_t)cap * sizeof *t);
    if (t == NULL)
        return PYF_ENOMEM;
    memset(t, 0xff, (size_t)cap * sizeof *t);
    for (uint32_t i = 0; i < c->nfiles; i++) {
        const char *p = c->files[i].path;
        uint32_t k = path_hash(p, strlen(p)) & (cap - 1);
        while (t[k] != PYF__CORE_NO_FILE)
            k = (k + 1) & (cap - 1);
        t[k] = i;
    }
    free(c->fhash);
    c->fhash = t;
    c->fhash_cap = cap;
    return PYF_OK;
}

/* The file called path (len bytes), added once: its index. */
static int file_index(pyf_core *c, const char *path, size_t len, uint32_t *index)
{
    uint32_t h = path_hash(path, len), k = 0;

    if (c->fhash != NULL) {
        for (k = h & (c->fhash_cap - 1); c->fhash[k] != PYF__CORE_NO_FILE;
             k = (k + 1) & (c->fhash_cap - 1)) {
            const char *p = c->files[c->fhash[k]].path;
            if (strncmp(p, path, len) == 0 && p[len] == '\0') {
                *index = c->fhash[k];
                return PYF_OK;
            }
        }
    }
    if (c->nfiles == c->cap_files) {
        if (c->nfiles >= PYF__CORE_MAX_FILES)
            return PYF_EDEPTH;
        uint32_t want = c->cap_files ? c->cap_files * 2 : 64;
        pyf_core_file *nf = realloc(c->files, (size_t)want * sizeof *nf);
        if (nf == NULL)
            return PYF_ENOMEM;
        c->files = nf;
        pyf__core_fstate *ns = realloc(c->fstate, (size_t)want * sizeof *ns);
        if (ns == NULL)
            return PYF_ENOMEM;
        c->fstate = ns;
        c->cap_files = want;
        if (rehash(c) != PYF_OK)
            return PYF_ENOMEM;
        for (k = h & (c->fhash_cap - 1); c->fhash[k] != PYF__CORE_NO_FILE;
             k = (k + 1) & (c->fhash_cap - 1))
            ;
    }
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return PYF_ENOMEM;
    memcpy(copy, path, len);
    copy[len] = '\0';
    pyf_core_file *f = &c->files[c->nfiles];
    memset(f, 0, sizeof *f);
    f->path = copy;
    f->status = PYF_CORE_FILE_UNCHECKED;
    c->fstate[c->nfiles] = (pyf__core_fstate){-1, false, 0};
    c->fhash[k] = c->nfiles;
    *index = c->nfiles++;
    return PYF_OK;
}

int pyf__core_add_map(pyf_core *c, uint64_t start, uint64_t end, uint64_t offset,
                      uint32_t flags, const char *path, size_t len)
{
    uint32_t file = PYF__CORE_NO_FILE;
    int rc;

    if (end <= start)
        return PYF_OK;
    if (path != NULL && len > 0 && len <= PYF__CORE_MAX_PATH && memchr(path, '\0', len) == NULL) {
        rc = file_index(c, path, len, &file);
        if (rc == PYF_EDEPTH) {
            pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the core names more than %u "
                              "files: those past it are not read", PYF__CORE_MAX_FILES);
            file = PYF__CORE_NO_FILE;
        } else if (rc != PYF_OK) {
            return rc;
        }
    }
    rc = grow((void **)&c->maps, &c->cap_maps, c->nmaps, sizeof *c->maps, PYF__CORE_MAX_MAPS);
    if (rc == PYF_EDEPTH) {
        pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the core describes more than %u "
                          "mappings: those past it are not read", PYF__CORE_MAX_MAPS);
        return PYF_OK;
    }
    if (rc != PYF_OK)
        return rc;
    c->maps[c->nmaps++] = (pyf__core_map){start, end, offset, flags, file};
    return PYF_OK;
}

pyf_core_thread *pyf__core_add_thread(pyf_core *c, uint64_t tid)
{
    int rc = grow((void **)&c->threads, &c->cap_threads, c->nthreads, sizeof *c->threads,
                  PYF__CORE_MAX_THREADS);
    if (rc == PYF_EDEPTH)
        pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the core describes more than %u "
                          "threads: those past it are not read", PYF__CORE_MAX_THREADS);
    if (rc != PYF_OK)
        return NULL;
    pyf_core_thread *th = &c->threads[c->nthreads++];
    memset(th, 0, sizeof *th);
    th->tid = tid;
    return th;
}

/* ==== where an address is ================================================ */

/* Segments and mappings both start with their range [start, end) and the
 * offset (in the core, in the file) of start. */
typedef struct range {
    uint64_t start, end, offset;
} range;
_Static_assert(offsetof(pyf__core_seg, end) == offsetof(range, end) &&
                   offsetof(pyf__core_map, end) == offsetof(range, end) &&
                   offsetof(pyf__core_seg, off) == offsetof(range, offset) &&
                   offsetof(pyf__core_map, offset) == offsetof(range, offset),
               "segments and mappings start with their range");

/* The index of the first of n ranges (stride bytes apart, sorted, apart)
 * that ends after addr, or n. */
static uint32_t first_ending_after(const void *v, uint32_t n, size_t stride, uint64_t addr)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (((const range *)((const char *)v + (size_t)mid * stride))->end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The segment holding addr, or NULL (the segments are sorted, apart). */
static const pyf__core_seg *seg_at(pyf_core *c, uint64_t addr)
{
    if (c->last_seg < c->nsegs) {
        const pyf__core_seg *s = &c->segs[c->last_seg];
        if (addr >= s->start && addr < s->end)
            return s;
    }
    uint32_t i = first_ending_after(c->segs, c->nsegs, sizeof *c->segs, addr);
    if (i < c->nsegs && c->segs[i].start <= addr) {
        c->last_seg = i;
        return &c->segs[i];
    }
    return NULL;
}

/* The start of the first segment after addr, which no segment holds
 * (UINT64_MAX: none). */
static uint64_t next_seg_start(const pyf_core *c, uint64_t addr)
{
    uint32_t i = first_ending_after(c->segs, c->nsegs, sizeof *c->segs, addr);
    return i < c->nsegs ? c->segs[i].start : UINT64_MAX;
}

/* The mapping holding addr, or NULL (sorted, apart). */
static const pyf__core_map *map_at(const pyf_core *c, uint64_t addr)
{
    uint32_t i = first_ending_after(c->maps, c->nmaps, sizeof *c->maps, addr);
    return i < c->nmaps && c->maps[i].start <= addr ? &c->maps[i] : NULL;
}

/* ==== the files ========================================================== */

static void file_close(pyf_core *c, uint32_t i)
{
    if (c->fstate[i].fd >= 0) {
        close(c->fstate[i].fd);
        c->fstate[i].fd = -1;
    }
}

/* Where the file of files[i] is opened: the executable given, else its
 * path under the sysroot (without the " (deleted)" of a file deleted
 * since it was mapped: the one at that path now is checked like any). */
static char *open_path_of(const pyf_core *c, uint32_t i)
{
    const pyf_core_file *f = &c->files[i];
    if ((f->flags & PYF_CORE_FILE_EXECUTABLE) && c->executable != NULL)
        return strdup(c->executable);
    size_t len = strlen(f->path);
    size_t n = strlen(DELETED_SUFFIX);
    if (len > n && strcmp(f->path + len - n, DELETED_SUFFIX) == 0)
        len -= n;
    const char *root = c->sysroot != NULL ? c->sysroot : "";
    size_t rlen = strlen(root);
    while (rlen > 0 && root[rlen - 1] == '/')
        rlen--;
    char *p = malloc(rlen + len + 2);
    if (p == NULL)
        return NULL;
    memcpy(p, root, rlen);
    size_t at = rlen;
    if (rlen > 0 && f->path[0] != '/')
        p[at++] = '/';
    memcpy(p + at, f->path, len);
    p[at + len] = '\0';
    return p;
}

/* Open a regular file without waiting on a FIFO or touching a device. */
static int open_regular(const char *path, uint64_t *size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    *size = (uint64_t)st.st_size;
    return fd;
}

/* The build id the core holds for files[i]: from its copy of the file's
 * first page (ELF header, program headers, a PT_NOTE inside that page). */
static uint32_t core_build_id(pyf_core *c, uint32_t i, uint8_t *out, uint32_t cap)
{
    uint8_t page[HEAD_PAGE];
    const pyf__core_seg *s = seg_at(c, c->files[i].start);

    if (s == NULL || c->files[i].start == 0)
        return 0;
    uint64_t have = s->end - c->files[i].start;
    if (have > sizeof page)
        have = sizeof page;
    int64_t got = pyf__core_pread(c, page, (size_t)have, s->off + (c->files[i].start - s->start));
    if (got < 64)
        return 0;
    return pyf__elf_build_id_in(page, (size_t)got, out, cap);
}

/* Find, open and check files[i] (once): its status says what came of it. */
static void file_check(pyf_core *c, uint32_t i)
{
    pyf_core_file *f = &c->files[i];
    pyf__core_fstate *st = &c->fstate[i];

    if (st->checked)
        return;
    st->checked = true;
    char *path = open_path_of(c, i);
    if (path == NULL) {
        f->status = PYF_CORE_FILE_MISSING;
        return;
    }
    f->open_path = path;
    int fd = open_regular(path, &st->size);
    if (fd < 0) {
        f->status = errno == ENOENT || errno == ENOTDIR ? PYF_CORE_FILE_MISSING
                                                         : PYF_CORE_FILE_UNREADABLE;
        return;
    }
    f->build_id_size = core_build_id(c, i, f->build_id, sizeof f->build_id);
    f->file_build_id_size = pyf__elf_build_id_fd(fd, f->file_build_id,
                                                 sizeof f->file_build_id);
    if (f->build_id_size == 0) {
        f->status = PYF_CORE_FILE_UNCHECKED;
    } else if (f->file_build_id_size != f->build_id_size ||
               memcmp(f->file_build_id, f->build_id, f->build_id_size) != 0) {
        f->status = PYF_CORE_FILE_MISMATCH;
        close(fd);
        return;
    } else {
        f->status = PYF_CORE_FILE_USED;
    }
    st->fd = fd;
}

static bool file_usable(const pyf_core_file *f)
{
    return f->status == PYF_CORE_FILE_USED || f->status == PYF_CORE_FILE_UNCHECKED;
}

/* An open descriptor of files[i] (opened again if it was closed to keep
 * at most MAX_OPEN_FILES open), or -1. */
int pyf__core_file_fd(pyf_core *c, uint32_t i)
{
    file_check(c, i);
    if (!file_usable(&c->files[i]))
        return -1;
    if (c->fstate[i].fd >= 0)
        return c->fstate[i].fd;
    uint32_t open_now = 0;
    for (uint32_t k = 0; k < c->nfiles; k++)
        open_now += c->fstate[k].fd >= 0;
    for (uint32_t k = 0; open_now >= MAX_OPEN_FILES && k < c->nfiles; k++)
        if (c->fstate[k].fd >= 0) {
            file_close(c, k);
            open_now--;
        }
    uint64_t size = 0;
    int fd = open_regular(c->files[i].open_path, &size);
    if (fd < 0 || size != c->fstate[i].size) { /* changed since it was checked */
        if (fd >= 0)
            close(fd);
        c->files[i].status = PYF_CORE_FILE_UNREADABLE;
        return -1;
    }
    c->fstate[i].fd = fd;
    return fd;
}

static void build_id_text(char *buf, size_t len, const uint8_t *id, uint32_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (uint32_t k = 0; k < n && at + 3 <= len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%02x", id[k]);
}

/* Why the bytes of mapping m at addr cannot come from its file. */
static void say_file(pyf_core *c, uint64_t addr, const pyf__core_map *m)
{
    const pyf_core_file *f = &c->files[m->file];
    char mine[72], theirs[72];

    c->has_message = true;
    switch (f->status) {
    case PYF_CORE_FILE_MISSING:
        pyf__fmt(c->message, sizeof c->message, "0x%llx is in the mapping of %s, whose bytes "
                 "the core leaves to the file: no such file at %s",
                 (unsigned long long)addr, f->path, f->open_path ? f->open_path : f->path);
        break;
    case PYF_CORE_FILE_MISMATCH:
        build_id_text(mine, sizeof mine, f->build_id, f->build_id_size);
        build_id_text(theirs, sizeof theirs, f->file_build_id, f->file_build_id_size);
        pyf__fmt(c->message, sizeof c->message, "0x%llx is in the mapping of %s, whose bytes "
                 "the core leaves to the file: %s is another build (build id "
                 "%s, the core's %s), not read", (unsigned long long)addr, f->path,
                 f->open_path, theirs[0] ? theirs : "none", mine);
        break;
    default:
        pyf__fmt(c->message, sizeof c->message, "0x%llx is in the mapping of %s, whose bytes "
                 "the core leaves to the file: %s cannot be read",
                 (unsigned long long)addr, f->path, f->open_path ? f->open_path : f->path);
    }
}

/* ==== the reader ========================================================= */

/* Read [addr, addr + len): the core's bytes, else a read-only file's. */
static int core_read(void *arg, uint64_t addr, void *dst, size_t len)
{
    pyf_core *c = arg;
    uint8_t *out = dst;

    if (c == NULL || (dst == NULL && len > 0))
        return PYF_EINVAL;
    c->has_message = false;
    if (len > 0 && addr + (len - 1) < addr) {
        c->has_message = true;
        pyf__fmt(c->message, sizeof c->message, "the %zu bytes at 0x%llx run past the end "
                 "of the address space", len, (unsigned long long)addr);
        return PYF_EFAULT;
    }
    while (len > 0) {
        const pyf__core_seg *s = seg_at(c, addr);
        if (s != NULL) {
            uint64_t n = s->end - addr < len ? s->end - addr : len;
            uint64_t off = s->off + (addr - s->start);
            int64_t got = pyf__core_pread(c, out, (size_t)n, off);
            if (got < 0 || (uint64_t)got != n) {
                c->has_message = true;
                if (got < 0)
                    pyf__fmt(c->message, sizeof c->message, "reading the core at offset "
                             "%llu: %s", (unsigned long long)off, strerror(errno));
                else
                    pyf__fmt(c->message, sizeof c->message, "the core holds 0x%llx at offset "
                             "%llu, past its end (%llu bytes: it is cut short)",
                             (unsigned long long)(addr + (uint64_t)got),
                             (unsigned long long)(off + (uint64_t)got),
                             (unsigned long long)c->size);
                return got < 0 ? PYF_EIO : PYF_EFAULT;
            }
            out += n;
            addr += n;
            len -= (size_t)n;
            continue;
        }
        const pyf__core_map *m = map_at(c, addr);
        if (m == NULL || m->file == PYF__CORE_NO_FILE) {
            c->has_message = true;
            if (m == NULL)
                pyf__fmt(c->message, sizeof c->message, "the core holds no memory at 0x%llx "
                         "(no mapping of the process there)", (unsigned long long)addr);
            else
                pyf__fmt(c->message, sizeof c->message, "the core holds no memory at 0x%llx "
                         "(in the mapping 0x%llx-0x%llx%s%s, which the core leaves out)",
                         (unsigned long long)addr, (unsigned long long)m->start,
                         (unsigned long long)m->end, m->file != PYF__CORE_NO_FILE ? " of " : "",
                         m->file != PYF__CORE_NO_FILE ? c->files[m->file].path : "");
            return PYF_EFAULT;
        }
        int fd = pyf__core_file_fd(c, m->file);
        if (fd < 0) {
            say_file(c, addr, m);
            return PYF_EFAULT;
        }
        /* the kernel and gdb leave out of a private mapping only the pages
         * the process never changed: the file's own, once the file is the
         * very build mapped; a mapping that may be written otherwise (of a
         * file that cannot be told to be the same; any in a minidump, whose
         * writers leave out what they choose) is not read */
        bool read_only = (m->flags & PYF__MAP_KNOWN) && !(m->flags & PYF_MAP_WRITE);
        if (!read_only && (c->info.format != PYF_CORE_ELF ||
                           c->files[m->file].status != PYF_CORE_FILE_USED)) {
            c->has_message = true;
            pyf__fmt(c->message, sizeof c->message, "the core holds no memory at 0x%llx (in "
                     "the mapping 0x%llx-0x%llx of %s, %s, which the core leaves out: %s)",
                     (unsigned long long)addr, (unsigned long long)m->start,
                     (unsigned long long)m->end, c->files[m->file].path,
                     m->flags & PYF__MAP_KNOWN ? "writable" : "of permissions the core does not say",
                     c->info.format != PYF_CORE_ELF
                         ? "a minidump's writer may have left out what the process changed"
                         : "the file holds no build id to show it is the one mapped");
            return PYF_EFAULT;
        }
        uint64_t stop = m->end < next_seg_start(c, addr) ? m->end : next_seg_start(c, addr);
        uint64_t n = stop - addr < len ? stop - addr : len;
        uint64_t foff = m->offset + (addr - m->start);
        uint64_t fsize = c->fstate[m->file].size;
        /* a mapping's last page past the file's end reads as zeros */
        uint64_t page_end = fsize > UINT64_MAX - 4095 ? UINT64_MAX : (fsize + 4095) & ~4095ull;
        if (foff < m->offset || foff >= page_end) {
            c->has_message = true;
            pyf__fmt(c->message, sizeof c->message, "0x%llx is past the end of %s (%llu bytes)",
                     (unsigned long long)addr, c->files[m->file].open_path,
                     (unsigned long long)fsize);
            return PYF_EFAULT;
        }
        if (n > page_end - foff)
            n = page_end - foff;
        uint64_t in_file = foff < fsize ? (fsize - foff < n ? fsize - foff : n) : 0;
        if (in_file > 0 && pyf__pread_exact(fd, out, (size_t)in_file, foff) != PYF_OK) {
            c->has_message = true;
            pyf__fmt(c->message, sizeof c->message, "reading %s at offset %llu failed",
                     c->files[m->file].open_path, (unsigned long long)foff);
            return PYF_EFAULT;
        }
        memset(out + in_file, 0, (size_t)(n - in_file));
        out += n;
        addr += n;
        len -= (size_t)n;
    }
    return PYF_OK;
}

static int core_readv(void *arg, const pyf_iovec *iov, size_t n, int *status)
{
    int first = PYF_OK;

    if (arg == NULL || (iov == NULL && n > 0))
        return PYF_EINVAL;
    for (size_t i = 0; i < n; i++) {
        int rc = core_read(arg, iov[i].addr, iov[i].dst, iov[i].len);
        if (status != NULL)
            status[i] = rc;
        if (rc != PYF_OK && first == PYF_OK)
            first = rc;
    }
    return first;
}

static const char *core_message(void *arg)
{
    pyf_core *c = arg;
    return c != NULL && c->has_message ? c->message : NULL;
}

/* ==== after the parse ==================================================== */

static int range_cmp(const void *pa, const void *pb)
{
    const range *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->end < b->end ? -1 : a->end > b->end;
}

/* Sort n ranges (stride bytes apart) and keep them apart: one that
 * overlaps the range before it keeps only what lies past it (a hostile
 * core's overlaps never make a read ambiguous).  Returns how many are kept. */
static uint32_t sort_apart(void *v, uint32_t n, size_t stride)
{
    uint32_t kept = 0;
    if (n > 1)
        qsort(v, n, stride, range_cmp);
    for (uint32_t i = 0; i < n; i++) {
        range *r = (range *)((char *)v + (size_t)i * stride);
        const range *prev = kept > 0 ? (const range *)((char *)v + (size_t)(kept - 1) * stride)
                                     : NULL;
        if (prev != NULL && r->start < prev->end) {
            if (r->end <= prev->end)
                continue;
            uint64_t cut = prev->end - r->start;
            r->start += cut;
            r->offset += cut;
        }
        if (kept != i)
            memcpy((char *)v + (size_t)kept * stride, r, stride);
        kept++;
    }
    return kept;
}

/* Sorted, and apart (sort_apart). */
void pyf__core_sort(pyf_core *c)
{
    c->nsegs = sort_apart(c->segs, c->nsegs, sizeof *c->segs);
    c->nmaps = c->maps_sorted = sort_apart(c->maps, c->nmaps, sizeof *c->maps);
}

int pyf__core_name_map(pyf_core *c, uint64_t start, uint64_t end, uint64_t offset,
                       const char *path, size_t len)
{
    uint32_t lo = 0, hi = c->maps_sorted;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->maps[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == c->maps_sorted || c->maps[lo].start != start)
        return pyf__core_add_map(c, start, end, offset, 0, path, len);
    uint32_t flags = c->maps[lo].flags;
    uint64_t map_end = c->maps[lo].end;
    /* the same call adds the file; the mapping is then replaced by it */
    uint32_t n = c->nmaps;
    int rc = pyf__core_add_map(c, start, map_end, offset, flags, path, len);
    if (rc == PYF_OK && c->nmaps == n + 1) {
        c->maps[lo].file = c->maps[n].file;
        c->maps[lo].offset = offset;
        c->nmaps = n;
    }
    return rc;
}

static bool python_name(const char *path)
{
    const char *base = strrchr(path, '/');
    return strstr(base != NULL ? base + 1 : path, "python") != NULL;
}

/* Each file's start (its mapping at offset 0), the executable (the file
 * mapped at the entry point, else the first at offset 0), and the
 * executable and python files checked now. */
static void finish_files(pyf_core *c)
{
    uint32_t exe = PYF__CORE_NO_FILE;

    for (uint32_t i = c->nmaps; i-- > 0;) {
        const pyf__core_map *m = &c->maps[i];
        if (m->file != PYF__CORE_NO_FILE && m->offset == 0)
            c->files[m->file].start = m->start;
    }
    if (c->entry != 0) {
        const pyf__core_map *m = map_at(c, c->entry);
        if (m != NULL)
            exe = m->file;
    }
    for (uint32_t i = 0; exe == PYF__CORE_NO_FILE && i < c->nmaps; i++)
        if (c->maps[i].file != PYF__CORE_NO_FILE && c->maps[i].offset == 0)
            exe = c->maps[i].file;
    if (exe != PYF__CORE_NO_FILE) {
        c->files[exe].flags |= PYF_CORE_FILE_EXECUTABLE;
        if (c->executable == NULL)
            pyf__fmt(c->info.executable, sizeof c->info.executable, "%s", c->files[exe].path);
    }
    if (c->executable != NULL)
        pyf__fmt(c->info.executable, sizeof c->info.executable, "%s", c->executable);
    for (uint32_t i = 0; i < c->nfiles; i++)
        if (i == exe || python_name(c->files[i].path))
            file_check(c, i);
}

/* The public view of the mappings (pyf_core_mappings). */
static int make_pub_maps(pyf_core *c)
{
    c->pub_maps = calloc(c->nmaps ? c->nmaps : 1, sizeof *c->pub_maps);
    if (c->pub_maps == NULL)
        return PYF_ENOMEM;
    for (uint32_t i = 0; i < c->nmaps; i++) {
        const pyf__core_map *m = &c->maps[i];
        pyf_mapping *p = &c->pub_maps[i];
        p->start = m->start;
        p->end = m->end;
        p->file_offset = m->offset;
        /* a minidump without the process's maps: its modules, readable */
        p->flags = (m->flags & PYF__MAP_KNOWN) ? (m->flags & 7u) : PYF_MAP_READ;
        if (m->file != PYF__CORE_NO_FILE)
            p->path = c->files[m->file].path;
    }
    return PYF_OK;
}

/* The thread that received the signal first, flagged. */
static void signalled_first(pyf_core *c)
{
    if (!(c->info.flags & PYF_CORE_SIGNAL))
        return;
    for (uint32_t i = 0; i < c->nthreads; i++) {
        if (c->threads[i].tid != c->info.signal_tid)
            continue;
        pyf_core_thread th = c->threads[i];
        memmove(&c->threads[1], &c->threads[0], (size_t)i * sizeof th);
        th.flags |= PYF_CORE_THREAD_SIGNALLED;
        c->threads[0] = th;
        return;
    }
}

/* ==== the public calls =================================================== */

uint32_t pyf_core_compressions(void)
{
    uint32_t bits = 1u << PYF_CORE_PLAIN;
#ifdef PYF_HAVE_ZSTD
    bits |= 1u << PYF_CORE_ZSTD;
#endif
#ifdef PYF_HAVE_LZMA
    bits |= 1u << PYF_CORE_XZ;
#endif
#ifdef PYF_HAVE_LZ4
    bits |= 1u << PYF_CORE_LZ4;
#endif
#ifdef PYF_HAVE_ZLIB
    bits |= 1u << PYF_CORE_GZIP;
#endif
    return bits;
}

void pyf_core_close(pyf_core *c)
{
    if (c == NULL)
        return;
    pyf__core_unwind_free(c); /* it reads the files closed below */
    if (c->fd >= 0)
        close(c->fd);
    for (uint32_t i = 0; i < c->nfiles; i++) {
        file_close(c, i);
        free((char *)c->files[i].path);
        free((char *)c->files[i].open_path);
    }
    free(c->files);
    free(c->fstate);
    free(c->fhash);
    free(c->segs);
    free(c->maps);
    free(c->threads);
    free(c->pub_maps);
    free(c->sysroot);
    free(c->executable);
    free(c);
}

static char *dup_or_null(const char *s, int *rc)
{
    if (s == NULL || *rc != PYF_OK)
        return NULL;
    char *d = strdup(s);
    if (d == NULL)
        *rc = PYF_ENOMEM;
    return d;
}

/* Open path, decompressing it when it is compressed: c->fd and c->size. */
static int open_bytes(pyf_core *c, const pyf_core_request *q, pyf_failure *f)
{
    uint64_t size = 0;
    int fd = open(q->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;

    if (fd < 0)
        return pyf__failure_set(f, PYF_EIO, "cannot open the core %s: %s", q->path,
                                strerror(errno));
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return pyf__failure_set(f, PYF_EIO, "the core %s is not a regular file", q->path);
    }
    size = (uint64_t)st.st_size;
    uint8_t head[8] = {0};
    int64_t got = 0;
    c->fd = fd;
    c->size = size;
    got = pyf__core_pread(c, head, sizeof head, 0);
    if (got < 0)
        return pyf__failure_set(f, PYF_EIO, "cannot read the core %s: %s", q->path,
                                strerror(errno));
    uint32_t kind = pyf__core_compression_of(head, (size_t)got);
    c->info.compression = kind;
    if (kind == PYF_CORE_PLAIN)
        return PYF_OK;
    int out = -1;
    int rc = pyf__core_unpack(c, fd, q->path, kind, q->temp_dir, q->max_size, &out, &size, f);
    close(fd);
    c->fd = out;
    c->size = size;
    return rc;
}

int pyf_core_open(const pyf_core_request *req, pyf_core **out, pyf_failure *failure)
{
    pyf_failure f;
    pyf_core_request q;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (!pyf__failure_begin(failure, &f))
        return PYF_EINVAL;
    if (out == NULL || req == NULL)
        return pyf__failure_out(failure, &f, pyf__failure_set(
            &f, PYF_EINVAL, "%s is NULL", out == NULL ? "out" : "the request"));
    rc = pyf__struct_in(req, PYF_CORE_REQUEST_SIZE_V0, &q, sizeof q, "pyf_core_request",
                        f.detail, sizeof f.detail);
    if (rc == PYF_OK && q.path == NULL)
        rc = pyf__failure_set(&f, PYF_EINVAL, "pyf_core_request.path is NULL");
    if (rc == PYF_OK && q.flags != 0)
        rc = pyf__failure_set(&f, PYF_ENOTSUP, "pyf_core_request.flags 0x%x: no flag "
                              "is defined", q.flags);
    if (rc != PYF_OK)
        return pyf__failure_out(failure, &f, rc);
    pyf_core *c = calloc(1, sizeof *c);
    if (c == NULL)
        return pyf__failure_out(failure, &f, pyf__failure_set(&f, PYF_ENOMEM, "out of memory"));
    c->fd = -1;
    c->info.struct_size = sizeof c->info;
    c->sysroot = dup_or_null(q.sysroot, &rc);
    c->executable = dup_or_null(q.executable, &rc);
    if (rc != PYF_OK) {
        pyf_core_close(c);
        return pyf__failure_out(failure, &f, pyf__failure_set(&f, rc, "out of memory"));
    }
    rc = open_bytes(c, &q, &f);
    if (rc == PYF_OK) {
        c->info.size = c->size;
        uint8_t magic[4] = {0};
        if (pyf__core_pread(c, magic, 4, 0) != 4)
            rc = pyf__failure_set(&f, PYF_ECORRUPT, "%s is not a core file: it holds %llu "
                                  "bytes", q.path, (unsigned long long)c->size);
        else if (memcmp(magic, "\177ELF", 4) == 0)
            rc = pyf__core_parse_elf(c, &f);
        else if (memcmp(magic, "MDMP", 4) == 0)
            rc = pyf__core_parse_minidump(c, &f);
        else
            rc = pyf__failure_set(&f, PYF_ECORRUPT, "%s is not a core file (neither an ELF "
                                  "core nor a minidump%s)", q.path,
                                  c->info.compression ? " once decompressed" : ", nor "
                                  "compressed with zstd, xz, lz4 or gzip");
        if (rc == PYF_ECORRUPT || rc == PYF_ENOTSUP) {
            /* the parser's words name the file */
            char detail[sizeof f.detail];
            pyf__fmt(detail, sizeof detail, "%s", f.detail);
            if (strstr(detail, q.path) == NULL)
                pyf__fmt(f.detail, sizeof f.detail, "%s: %s", q.path, detail);
        }
    }
    if (rc == PYF_OK) {
        pyf__core_sort(c);
        finish_files(c);
        signalled_first(c);
        rc = make_pub_maps(c);
        if (rc != PYF_OK)
            pyf__failure_set(&f, rc, "out of memory");
    }
    if (rc != PYF_OK) {
        pyf_core_close(c);
        return pyf__failure_out(failure, &f, rc);
    }
    c->info.nthreads = c->nthreads;
    c->info.nmappings = c->nmaps;
    c->info.nfiles = c->nfiles;
    *out = c;
    return pyf__failure_out(failure, &f, PYF_OK);
}

int pyf_core_info_get(const pyf_core *c, pyf_core_info *out)
{
    if (c == NULL || out == NULL)
        return PYF_EINVAL;
    pyf_core_info i = c->info;
    return pyf__struct_out(out, PYF_CORE_INFO_SIZE_V0, &i, sizeof i);
}

/* Hand out one of the core's arrays (the pointer and count cleared first). */
static int hand_out(const pyf_core *c, const void *array, uint32_t count, const void **out,
                    uint32_t *n)
{
    if (out != NULL)
        *out = NULL;
    if (n != NULL)
        *n = 0;
    if (c == NULL || out == NULL || n == NULL)
        return PYF_EINVAL;
    *out = array;
    *n = count;
    return PYF_OK;
}

int pyf_core_threads(const pyf_core *c, const pyf_core_thread **out, uint32_t *n)
{
    return hand_out(c, c ? c->threads : NULL, c ? c->nthreads : 0, (const void **)out, n);
}

int pyf_core_mappings(const pyf_core *c, const pyf_mapping **out, uint32_t *n)
{
    return hand_out(c, c ? c->pub_maps : NULL, c ? c->nmaps : 0, (const void **)out, n);
}

int pyf_core_files(const pyf_core *c, const pyf_core_file **out, uint32_t *n)
{
    return hand_out(c, c ? c->files : NULL, c ? c->nfiles : 0, (const void **)out, n);
}

int pyf_core_reader(pyf_core *c, pyf_reader *out)
{
    if (out != NULL)
        memset(out, 0, sizeof *out);
    if (c == NULL || out == NULL)
        return PYF_EINVAL;
    out->struct_size = sizeof *out;
    out->read = core_read;
    out->readv = core_readv;
    out->arg = c;
    out->message = core_message;
    out->reads = PYF_READS_CORE;
    return PYF_OK;
}

/* The mappings as pyf_runtime_locate reads them: each file by the path it
 * is opened at, a file that is missing or another build as memory of no
 * file (its section is never read; its memory is the core's); a writable
 * mapping (where the cookie scan looks) only where the core holds its
 * bytes, each such run on its own (never scanned through what the core
 * left out).  *n gets their count. */
static pyf_mapping *locate_maps(pyf_core *c, uint32_t *n)
{
    uint64_t cap = (uint64_t)c->nmaps + c->nsegs + 1;
    pyf_mapping *v = calloc((size_t)cap, sizeof *v);
    uint32_t k = 0;
    if (v == NULL)
        return NULL;
    for (uint32_t i = 0; i < c->nmaps; i++) {
        const pyf__core_map *m = &c->maps[i];
        const char *path = NULL;
        uint32_t f = m->file;
        if (f != PYF__CORE_NO_FILE) {
            if (m->offset == 0 && python_name(c->files[f].path))
                file_check(c, f);
            if (c->fstate[f].checked && file_usable(&c->files[f]))
                path = c->files[f].open_path;
        }
        if (!(c->pub_maps[i].flags & PYF_MAP_WRITE)) {
            v[k] = c->pub_maps[i];
            v[k].path = path;
            v[k++].open_path = NULL;
            continue;
        }
        /* the segments inside it: the first that ends after its start on */
        uint32_t lo = first_ending_after(c->segs, c->nsegs, sizeof *c->segs, m->start);
        for (uint32_t s = lo; s < c->nsegs && c->segs[s].start < m->end && k < cap; s++) {
            const pyf__core_seg *g = &c->segs[s];
            /* what a core cut short still holds of it */
            uint64_t held = g->off >= c->size ? 0 : c->size - g->off;
            uint64_t end = g->end - g->start > held ? g->start + held : g->end;
            v[k] = c->pub_maps[i];
            v[k].start = g->start > m->start ? g->start : m->start;
            v[k].end = end < m->end ? end : m->end;
            if (v[k].end <= v[k].start)
                continue;
            v[k].file_offset = m->offset + (v[k].start - m->start);
            v[k].path = path;
            v[k++].open_path = NULL;
        }
    }
    *n = k;
    return v;
}

/* A note on the python files the search could not read, for its failure. */
static void note_unread_files(const pyf_core *c, pyf_failure *f)
{
    size_t at = strlen(f->detail);
    bool first = true;

    for (uint32_t i = 0; i < c->nfiles && at + 2 < sizeof f->detail; i++) {
        const pyf_core_file *cf = &c->files[i];
        if (!python_name(cf->path) || file_usable(cf))
            continue;
        pyf__fmt(f->detail + at, sizeof f->detail - at, "%s%s (%s)",
                 first ? "; the core's python files that could not be read: " : ", ",
                 cf->open_path ? cf->open_path : cf->path,
                 cf->status == PYF_CORE_FILE_MISSING ? "not found"
                 : cf->status == PYF_CORE_FILE_MISMATCH ? "another build than the core's"
                                                        : "unreadable");
        at = strlen(f->detail);
        first = false;
    }
}

int pyf_target_open_core(pyf_core *c, uint64_t runtime_addr, const pyf_options *opts,
                         pyf_target **out, pyf_failure *failure)
{
    pyf_failure f;
    pyf_reader r;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (!pyf__failure_begin(failure, &f))
        return PYF_EINVAL;
    if (c == NULL || out == NULL)
        return pyf__failure_out(failure, &f, pyf__failure_set(
            &f, PYF_EINVAL, "%s is NULL", c == NULL ? "the core" : "out"));
    pyf_core_reader(c, &r);
    uint32_t nmaps = 0;
    pyf_mapping *maps = locate_maps(c, &nmaps);
    if (maps == NULL)
        return pyf__failure_out(failure, &f, pyf__failure_set(&f, PYF_ENOMEM, "out of memory"));
    if (runtime_addr == 0) {
        /* "the core of process 12 (sleep) is not a Python process" */
        char who[320];
        const char *base = strrchr(c->info.executable, '/');
        base = base != NULL ? base + 1 : c->info.executable;
        if (c->info.pid > 0)
            pyf__fmt(who, sizeof who, "the core of process %lld%s%s%s", (long long)c->info.pid,
                     *base ? " (" : "", base, *base ? ")" : "");
        else
            pyf__fmt(who, sizeof who, "the core's process");
        pyf_locate_request q = {sizeof q, 0, 0, maps, nmaps, 0, who};
        pyf_runtime_location loc;
        memset(&loc, 0, sizeof loc);
        loc.struct_size = sizeof loc;
        f.struct_size = sizeof f;
        rc = pyf_runtime_locate(&r, &q, &loc, &f);
        if (rc != PYF_OK) {
            note_unread_files(c, &f);
            if (c->info.problem[0] != '\0') {
                size_t at = strlen(f.detail);
                pyf__fmt(f.detail + at, sizeof f.detail - at, "; the core is partial: %s",
                         c->info.problem);
            }
            free(maps);
            return pyf__failure_out(failure, &f, rc);
        }
        runtime_addr = loc.addr;
    }
    rc = pyf_target_open(&r, runtime_addr, opts, out, &f);
    /* its threads, for the thread states that name only their pthread handle */
    if (rc == PYF_OK && pyf__os_threads_core(*out, c->threads, c->nthreads, c->info.machine,
                                             c->info.pid) != PYF_OK) {
        pyf_target_close(*out);
        *out = NULL;
        rc = pyf__failure_set(&f, PYF_ENOMEM, "out of memory");
    }
    if (rc == PYF_OK) {
        uint64_t found = 0;
        if (pyf__maps_find_asyncio(maps, nmaps, &found) == PYF_OK)
            pyf_target_set_asyncio(*out, found); /* a refused table: said by the tasks */
    }
    free(maps);
    return pyf__failure_out(failure, &f, rc);
}
