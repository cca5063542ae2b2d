/*
 * runtime_find.c - locate _PyRuntime in a live process, or in a range.
 *
 * For a PID: parse /proc/PID/maps, compute the address of the .PyRuntime
 * section of each mapped file whose basename contains "python" (in maps
 * order; a " (deleted)" file is reopened through /proc/PID/map_files), and
 * confirm it with pyf_runtime_probe.  Failing that, scan the writable
 * mappings (python files, other files, then anonymous memory, smallest
 * first) for the "xdebugpy" cookie at 8-aligned addresses, confirming each
 * hit the same way.  All work is
 * bounded: line length and count of the maps file, bytes scanned.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include "elf.h"
#include "internal.h"

#define MAPS_LINE_MAX 8192          /* longer lines are skipped */
#define MAPS_LINES_MAX (1u << 20)   /* lines read from /proc/PID/maps */
#define MAX_CANDIDATES 64           /* distinct python files tried */
#define MAX_REGIONS (1u << 18)      /* writable mappings remembered */
#define SCAN_BLOCK ((size_t)1 << 20) /* bytes per reader call while scanning */
#define SCAN_PAGE ((uint64_t)4096)  /* granularity after a failed block */
#define SCAN_BUDGET ((uint64_t)512 << 20) /* bytes examined per search */

#define DELETED_SUFFIX " (deleted)"

#define PERM_HINT                                                             \
    "ptrace access to the target is required: run as the same user as the " \
    "target or as root, and check /proc/sys/kernel/yama/ptrace_scope and "  \
    "CAP_SYS_PTRACE"

/* ==== the cookie scan ===================================================== */

typedef struct rejected {
    uint64_t addr;  /* 0 when nothing was rejected */
    int code;       /* what pyf_runtime_probe said */
    char where[160];
} rejected;

typedef struct scan_state {
    const pyf_reader *reader;
    uint8_t *buf;       /* SCAN_BLOCK bytes */
    uint64_t budget;    /* bytes still allowed to be examined */
    uint64_t skip_lo, skip_hi; /* never report a hit in [lo, hi) */
    rejected rej;       /* first cookie hit that did not probe valid */
} scan_state;

static void note_rejection(rejected *rej, uint64_t addr, int code, const char *what)
{
    /* Keep the most telling rejection: a table with the cookie but an
     * unsupported version or bad offsets beats one without a cookie. */
    bool better = rej->addr == 0 ||
                  (rej->code == PYF_ENOTPY && code != PYF_ENOTPY);

    if (!better)
        return;
    rej->addr = addr;
    rej->code = code;
    pyf__fmt(rej->where, sizeof rej->where, "%s", what);
}

/* Probe every 8-aligned cookie in buf (which holds [base, base + len)). */
static int search_block(scan_state *s, uint64_t base, size_t len, uint64_t *found)
{
    for (size_t off = 0; off + 8 <= len; off += 8) {
        int rc;

        if (memcmp(s->buf + off, PYF__COOKIE, 8) != 0)
            continue;
        if (base + off >= s->skip_lo && base + off < s->skip_hi)
            continue;
        rc = pyf_runtime_probe(s->reader, base + off, NULL);
        if (rc == PYF_OK) {
            *found = base + off;
            return PYF_OK;
        }
        if (rc == PYF_EPERM || rc == PYF_ENOPROC)
            return rc;
        note_rejection(&s->rej, base + off, rc, "a writable mapping");
    }
    return PYF_ENOTPY;
}

/* Scan [start, end).  Returns PYF_OK with *found, PYF_ENOTPY when the range
 * holds no valid table, PYF_EDEPTH when the budget ran out first, PYF_EPERM
 * or PYF_ENOPROC when reading cannot go on at all. */
static int scan_range(scan_state *s, uint64_t start, uint64_t end, uint64_t *found)
{
    uint64_t cur;

    if (start > UINT64_MAX - 7)
        return PYF_ENOTPY;
    cur = (start + 7) & ~(uint64_t)7;
    while (cur < end && end - cur >= 8) {
        size_t n = (size_t)(end - cur < SCAN_BLOCK ? end - cur : SCAN_BLOCK);
        int rc;

        if (s->budget < 8)
            return PYF_EDEPTH;
        if (n > s->budget)
            n = (size_t)s->budget;
        rc = s->reader->read(s->reader->arg, cur, s->buf, n);
        if (rc == PYF_EPERM || rc == PYF_ENOPROC)
            return rc;
        if (rc == PYF_OK) {
            s->budget -= n;
            rc = search_block(s, cur, n, found);
            if (rc != PYF_ENOTPY)
                return rc;
        } else {
            /* Part of the block is unreadable: go page by page. */
            uint64_t p = cur, stop = cur + n;

            while (p < stop) {
                uint64_t next = (p | (SCAN_PAGE - 1)) + 1;
                size_t pn = (size_t)((next < stop && next > p ? next : stop) - p);

                rc = s->reader->read(s->reader->arg, p, s->buf, pn);
                if (rc == PYF_EPERM || rc == PYF_ENOPROC)
                    return rc;
                if (rc == PYF_OK) {
                    rc = search_block(s, p, pn, found);
                    if (rc != PYF_ENOTPY)
                        return rc;
                }
                p += pn;
            }
            s->budget -= n;
        }
        cur += n;
    }
    return PYF_ENOTPY;
}

PYF_API int pyf_runtime_find_in_range(const pyf_reader *reader, uint64_t start,
                                      uint64_t end, uint64_t *found)
{
    scan_state s;
    pyf_reader r;
    char err[PYF__ERRBUF];
    int rc;

    if (found == NULL || start > end ||
        pyf__reader_in(reader, &r, err, sizeof err) != PYF_OK)
        return PYF_EINVAL;
    memset(&s, 0, sizeof s);
    s.reader = &r;
    s.budget = SCAN_BUDGET;
    s.buf = malloc(SCAN_BLOCK);
    if (s.buf == NULL)
        return PYF_ENOMEM;
    rc = scan_range(&s, start, end, found);
    free(s.buf);
    return rc;
}

/* ==== /proc/PID/maps ====================================================== */

typedef struct candidate {
    char *path;        /* as printed in maps, " (deleted)" included */
    uint64_t start, end; /* the mapping at file offset 0 */
    bool have_start;
    bool deleted;
} candidate;

/* Scan order of writable mappings: python files, other files (an embedded
 * interpreter, a deleted file), then memory that is not a file, smallest
 * first so that huge reservations (sanitizer shadow, arenas) come last. */
enum { REGION_PYTHON_FILE, REGION_FILE, REGION_MEMORY };

typedef struct region {
    uint64_t start, end;
    int kind;          /* REGION_* */
    size_t order;      /* position in maps */
} region;

typedef struct maps {
    candidate cand[MAX_CANDIDATES];
    size_t ncand;
    region *reg;
    size_t nreg, capreg;
    size_t nlines;
} maps;

static void maps_free(maps *m)
{
    for (size_t i = 0; i < m->ncand; i++)
        free(m->cand[i].path);
    free(m->reg);
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);

    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* Basename (without " (deleted)") contains "python". */
static bool is_python_path(const char *path, size_t len)
{
    const char *base = path, *p;
    size_t blen;

    if (ends_with(path, len, DELETED_SUFFIX))
        len -= strlen(DELETED_SUFFIX);
    for (p = path; p < path + len; p++)
        if (*p == '/')
            base = p + 1;
    blen = (size_t)(path + len - base);
    for (size_t i = 0; i + 6 <= blen; i++)
        if (memcmp(base + i, "python", 6) == 0)
            return true;
    return false;
}

static int add_region(maps *m, uint64_t start, uint64_t end, int kind)
{
    if (m->nreg == m->capreg) {
        size_t cap = m->capreg ? m->capreg * 2 : 256;
        region *r;

        if (cap > MAX_REGIONS)
            return PYF_OK; /* keep what we have: the scan is bounded anyway */
        r = realloc(m->reg, cap * sizeof *r);
        if (r == NULL)
            return PYF_ENOMEM;
        m->reg = r;
        m->capreg = cap;
    }
    m->reg[m->nreg].start = start;
    m->reg[m->nreg].end = end;
    m->reg[m->nreg].kind = kind;
    m->reg[m->nreg].order = m->nreg;
    m->nreg++;
    return PYF_OK;
}

static int add_candidate(maps *m, const char *path, size_t len, uint64_t start,
                         uint64_t end, uint64_t offset)
{
    candidate *c = NULL;

    for (size_t i = 0; i < m->ncand; i++) {
        if (strcmp(m->cand[i].path, path) == 0) {
            c = &m->cand[i];
            break;
        }
    }
    if (c == NULL) {
        if (m->ncand == MAX_CANDIDATES)
            return PYF_OK;
        c = &m->cand[m->ncand];
        c->path = strdup(path);
        if (c->path == NULL)
            return PYF_ENOMEM;
        c->have_start = false;
        c->deleted = ends_with(path, len, DELETED_SUFFIX);
        m->ncand++;
    }
    if (offset == 0 && !c->have_start) {
        c->start = start;
        c->end = end;
        c->have_start = true;
    }
    return PYF_OK;
}

/* One maps line: "start-end perms offset dev inode   path". */
static int parse_line(maps *m, char *line, bool complete)
{
    uint64_t start, end, offset;
    char perms[8];
    int n = 0, rc;
    char *path;
    size_t len;
    bool python;

    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
               &start, &end, perms, &offset, &n) < 4 || end <= start)
        return PYF_OK;
    path = line + n;
    len = strlen(path);
    if (len > 0 && path[len - 1] == '\n')
        path[--len] = '\0';
    /* A path cut short by the line limit is not trusted as a file name. */
    python = complete && path[0] == '/' && is_python_path(path, len);
    if (python) {
        rc = add_candidate(m, path, len, start, end, offset);
        if (rc != PYF_OK)
            return rc;
    }
    if (perms[0] != 'r' || perms[1] != 'w')
        return PYF_OK;
    /* Device memory cannot hold the runtime and may not be safe to touch. */
    if (strncmp(path, "/dev/", 5) == 0 && strncmp(path, "/dev/shm/", 9) != 0)
        return PYF_OK;
    return add_region(m, start, end,
                      python ? REGION_PYTHON_FILE
                      : path[0] == '/' ? REGION_FILE : REGION_MEMORY);
}

static int read_maps(int pid, maps *m, char *err, size_t errlen)
{
    char path[64];
    char *line;
    FILE *fp;
    int rc = PYF_OK;

    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    fp = fopen(path, "re");
    if (fp == NULL) {
        int e = errno;

        if (e == ENOENT || e == ESRCH) {
            pyf__fmt(err, errlen, "process %d does not exist (no %s)", pid, path);
            return PYF_ENOPROC;
        }
        if (e == EACCES || e == EPERM) {
            pyf__fmt(err, errlen, "cannot read %s: permission denied; %s", path, PERM_HINT);
            return PYF_EPERM;
        }
        pyf__fmt(err, errlen, "cannot open %s: %s", path, strerror(e));
        return PYF_EIO;
    }
    line = malloc(MAPS_LINE_MAX);
    if (line == NULL) {
        fclose(fp);
        pyf__fmt(err, errlen, "out of memory reading %s", path);
        return PYF_ENOMEM;
    }
    errno = 0;
    while (m->nlines < MAPS_LINES_MAX && fgets(line, MAPS_LINE_MAX, fp) != NULL) {
        size_t len = strlen(line);
        bool complete = (len > 0 && line[len - 1] == '\n') || feof(fp);

        m->nlines++;
        if (!complete) {
            /* Overlong line: keep its addresses, drop the rest of it. */
            int ch;

            while ((ch = getc(fp)) != EOF && ch != '\n')
                ;
        }
        rc = parse_line(m, line, complete);
        if (rc != PYF_OK) {
            pyf__fmt(err, errlen, "out of memory reading %s", path);
            break;
        }
    }
    if (rc == PYF_OK && ferror(fp)) {
        int e = errno;

        if (e == EACCES || e == EPERM) {
            pyf__fmt(err, errlen, "cannot read %s: permission denied; %s", path, PERM_HINT);
            rc = PYF_EPERM;
        } else if (e == ESRCH) {
            pyf__fmt(err, errlen, "process %d exited while %s was read", pid, path);
            rc = PYF_ENOPROC;
        } else {
            pyf__fmt(err, errlen, "error reading %s: %s", path, strerror(e));
            rc = PYF_EIO;
        }
    }
    free(line);
    fclose(fp);
    return rc;
}

static int region_cmp(const void *pa, const void *pb)
{
    const region *a = pa, *b = pb;
    uint64_t sa = a->kind == REGION_MEMORY ? a->end - a->start : 0;
    uint64_t sb = b->kind == REGION_MEMORY ? b->end - b->start : 0;

    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (sa != sb)
        return sa < sb ? -1 : 1;
    return a->order < b->order ? -1 : a->order > b->order;
}

/* ==== the ELF path ======================================================== */

/* .PyRuntime of a candidate file, mapped at c->start.  A file that cannot be
 * opened by its path is tried through /proc/PID/root (another mount
 * namespace) and /proc/PID/map_files (which also opens deleted files). */
static int candidate_address(int pid, const candidate *c, uint64_t *addr,
                             bool *map_files_failed)
{
    char alt[64 + 4096];
    uint64_t sh_addr = 0, load = 0, delta;
    int rc = PYF_EIO;

    if (!c->deleted) {
        rc = pyf__elf_find_pyruntime(c->path, &sh_addr, &load);
        if (rc == PYF_EIO && strlen(c->path) < 4096) {
            snprintf(alt, sizeof alt, "/proc/%d/root%s", pid, c->path);
            rc = pyf__elf_find_pyruntime(alt, &sh_addr, &load);
        }
    }
    if (rc == PYF_EIO) {
        snprintf(alt, sizeof alt, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
                 pid, c->start, c->end);
        rc = pyf__elf_find_pyruntime(alt, &sh_addr, &load);
        if (rc == PYF_EIO)
            *map_files_failed = true;
    }
    if (rc != PYF_OK)
        return rc;
    delta = sh_addr - load; /* sh_addr >= load is checked by the ELF reader */
    if (delta > UINT64_MAX - c->start)
        return PYF_ECORRUPT;
    *addr = c->start + delta;
    return PYF_OK;
}

/* ==== discovery for a PID ================================================= */

static int fail_read(int pid, int rc, char *err, size_t errlen)
{
    if (rc == PYF_EPERM)
        pyf__fmt(err, errlen, "permission denied reading the memory of process %d; %s",
                 pid, PERM_HINT);
    else
        pyf__fmt(err, errlen, "process %d exited while its runtime was searched", pid);
    return rc;
}

int pyf__pid_find_runtime(int pid, const pyf_reader *r, uint64_t *found,
                          char *err, size_t errlen)
{
    maps m;
    scan_state s;
    char deleted_note[256] = "", rej_note[256] = "", budget_note[64] = "";
    int rc;

    if (pid <= 0 || r == NULL || r->read == NULL || found == NULL) {
        pyf__fmt(err, errlen, "invalid argument to the runtime search");
        return PYF_EINVAL;
    }
    memset(&m, 0, sizeof m);
    memset(&s, 0, sizeof s);
    rc = read_maps(pid, &m, err, errlen);
    if (rc != PYF_OK)
        goto out;
    if (m.nlines == 0) {
        if (kill(pid, 0) < 0 && errno == ESRCH) {
            pyf__fmt(err, errlen, "process %d does not exist", pid);
            rc = PYF_ENOPROC;
        } else {
            pyf__fmt(err, errlen,
                     "process %d has no memory mappings (a kernel thread or a zombie?)", pid);
            rc = PYF_ENOTPY;
        }
        goto out;
    }

    /* 1. The .PyRuntime section of each python file, in maps order. */
    for (size_t i = 0; i < m.ncand; i++) {
        const candidate *c = &m.cand[i];
        bool mf_failed = false;
        uint64_t addr = 0;
        int prc;

        if (!c->have_start)
            continue;
        if (candidate_address(pid, c, &addr, &mf_failed) != PYF_OK) {
            if (c->deleted && mf_failed && deleted_note[0] == '\0')
                pyf__fmt(deleted_note, sizeof deleted_note,
                         "; %s could not be reopened through /proc/%d/map_files "
                         "(needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE)",
                         c->path, pid);
            continue;
        }
        prc = pyf_runtime_probe(r, addr, NULL);
        if (prc == PYF_OK) {
            *found = addr;
            rc = PYF_OK;
            goto out;
        }
        if (prc == PYF_EPERM || prc == PYF_ENOPROC) {
            rc = fail_read(pid, prc, err, errlen);
            goto out;
        }
        {
            char what[160];

            pyf__fmt(what, sizeof what, "the .PyRuntime section of %s", c->path);
            note_rejection(&s.rej, addr, prc, what);
        }
    }

    /* 2. The cookie in writable mappings, in scan order. */
    s.reader = r;
    s.budget = SCAN_BUDGET;
    s.buf = malloc(SCAN_BLOCK);
    if (s.buf == NULL) {
        pyf__fmt(err, errlen, "out of memory scanning process %d", pid);
        rc = PYF_ENOMEM;
        goto out;
    }
    if (pid == (int)getpid()) {
        /* Searching ourselves: the scan buffer holds copies of what it read. */
        s.skip_lo = (uint64_t)(uintptr_t)s.buf;
        s.skip_hi = s.skip_lo + SCAN_BLOCK;
    }
    if (m.nreg > 1)
        qsort(m.reg, m.nreg, sizeof *m.reg, region_cmp);
    rc = PYF_ENOTPY;
    for (size_t i = 0; i < m.nreg && rc == PYF_ENOTPY; i++)
        rc = scan_range(&s, m.reg[i].start, m.reg[i].end, found);
    if (rc == PYF_OK)
        goto out;
    if (rc == PYF_EPERM || rc == PYF_ENOPROC) {
        rc = fail_read(pid, rc, err, errlen);
        goto out;
    }

    /* 3. Nothing valid.  A table that has the cookie but was refused is the
     * most useful thing to report. */
    if (s.rej.addr != 0 && s.rej.code != PYF_ENOTPY) {
        char version[96] = "";
        uint8_t raw[8];

        if (s.rej.code == PYF_EVERSION &&
            r->read(r->arg, s.rej.addr + 8, raw, sizeof raw) == PYF_OK) {
            uint64_t v = pyf__ld64(raw);
            unsigned level = (unsigned)(v >> 4 & 0xf), serial = (unsigned)(v & 0xf);
            char pre[16] = "";

            if (level == 0xa || level == 0xb || level == 0xc)
                pyf__fmt(pre, sizeof pre, "%s%u",
                         level == 0xa ? "a" : level == 0xb ? "b" : "rc", serial);
            pyf__fmt(version, sizeof version,
                     "; the table says CPython %u.%u.%u%s (PY_VERSION_HEX 0x%08" PRIx64 ")",
                     (unsigned)(v >> 24 & 0xff), (unsigned)(v >> 16 & 0xff),
                     (unsigned)(v >> 8 & 0xff), pre, v);
        }
        pyf__fmt(err, errlen,
                 "process %d: the _Py_DebugOffsets table at 0x%" PRIx64 " (%s) was "
                 "rejected: %s (%s)%s",
                 pid, s.rej.addr, s.rej.where, pyf_error_message(s.rej.code),
                 pyf_error_name(s.rej.code), version);
        rc = s.rej.code;
        goto out;
    }
    if (s.rej.addr != 0)
        pyf__fmt(rej_note, sizeof rej_note, "; %s holds no valid table at 0x%" PRIx64 " (%s)",
                 s.rej.where, s.rej.addr,
                 s.rej.code == PYF_ENOTPY ? "no \"xdebugpy\" cookie there"
                                          : pyf_error_message(s.rej.code));
    if (rc == PYF_EDEPTH)
        pyf__fmt(budget_note, sizeof budget_note, "; the scan stopped after %" PRIu64 " MiB",
                 SCAN_BUDGET >> 20);
    pyf__fmt(err, errlen,
             "no CPython runtime found in process %d: no mapped python or libpython "
             "file has a valid .PyRuntime section and no writable mapping holds the "
             "\"xdebugpy\" cookie (is this a CPython 3.13+ process?)%s%s%s",
             pid, rej_note, deleted_note, budget_note);
    rc = PYF_ENOTPY;
out:
    free(s.buf);
    maps_free(&m);
    return rc;
}
