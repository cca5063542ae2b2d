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

#include "abi.h"
#include "api.h"
#include "core.h"
#include "elf_reader.h"
#include "errors.h"
#include "offsets.h"
#include "process.h"
#include "reads.h"

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
    char why[PYF__ERRBUF];  /* the probe's failure detail */
    pyf_python_info python; /* the version a refused table says */
} rejected;

typedef struct scan_state {
    const pyf_reader *reader;
    uint8_t *buf;       /* SCAN_BLOCK bytes */
    uint64_t budget;    /* bytes still allowed to be examined */
    uint64_t skip_lo, skip_hi; /* never report a hit in [lo, hi) */
    rejected rej;       /* first cookie hit that did not probe valid */
    pyf_python_info *info; /* the runtime found, when wanted */
    const char *where;  /* what is scanned, for rej */
} scan_state;

/* pyf_runtime_probe with its failure in f. */
static int probe(const pyf_reader *r, uint64_t addr, pyf_python_info *info, pyf_failure *f)
{
    f->struct_size = sizeof *f;
    return pyf_runtime_probe(r, addr, info, f);
}

static void note_rejection(rejected *rej, uint64_t addr, const pyf_failure *f,
                           const pyf_python_info *python, const char *what)
{
    /* Keep the most telling rejection: a table with the cookie but an
     * unsupported version or bad offsets beats one without a cookie. */
    bool better = rej->addr == 0 ||
                  (rej->code == PYF_ENOTPY && f->code != PYF_ENOTPY);

    if (!better)
        return;
    rej->addr = addr;
    rej->code = f->code;
    rej->python = *python;
    pyf__fmt(rej->where, sizeof rej->where, "%s", what);
    pyf__fmt(rej->why, sizeof rej->why, "%s", f->detail);
}

/* Probe every 8-aligned cookie in buf (which holds [base, base + len)). */
static int search_block(scan_state *s, uint64_t base, size_t len, uint64_t *found)
{
    for (size_t off = 0; off + 8 <= len; off += 8) {
        pyf_python_info info;
        pyf_failure f;
        int rc;

        if (memcmp(s->buf + off, PYF__COOKIE, 8) != 0)
            continue;
        if (base + off >= s->skip_lo && base + off < s->skip_hi)
            continue;
        memset(&info, 0, sizeof info);
        rc = probe(s->reader, base + off, &info, &f);
        if (rc == PYF_OK) {
            if (s->info != NULL)
                *s->info = info;
            *found = base + off;
            return PYF_OK;
        }
        if (rc == PYF_EPERM || rc == PYF_ENOPROC)
            return rc;
        note_rejection(&s->rej, base + off, &f, &info, s->where);
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

/* ==== locating from a list of mappings ==================================== */

/* Scan order of writable mappings: python files, other files (an embedded
 * interpreter, a deleted file), then memory that is not a file, smallest
 * first so that huge reservations (sanitizer shadow, arenas) come last. */
enum { REGION_PYTHON_FILE, REGION_FILE, REGION_MEMORY };

typedef struct region {
    uint64_t start, end;
    int kind;          /* REGION_* */
    size_t order;      /* position in the list */
} region;

static bool ends_with(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);

    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* Basename (without " (deleted)") contains "python".  (The search leaves
 * out an extension module, "x.cpython-312-x86_64-linux-gnu.so": files_read.) */
static bool is_python_path(const char *path)
{
    size_t len = strlen(path);
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

typedef struct locate_ctx {
    const pyf_reader *r;
    const char *who;        /* "process 123 (python3)", "the target" */
    const char *unopened_hint; /* appended to the note about an unopened file */
    uint64_t skip_lo, skip_hi;
    char *err;
    size_t errlen;
} locate_ctx;

static int fail_read(const locate_ctx *c, int rc)
{
    if (rc == PYF_EPERM)
        pyf__fmt(c->err, c->errlen, "permission denied reading the memory of %s; %s",
                 c->who, PERM_HINT);
    else
        pyf__fmt(c->err, c->errlen, "%s exited while its runtime was searched", c->who);
    return rc;
}

/* The runtime at addr, found by method (its version already in out). */
static void fill_found(pyf_runtime_location *out, uint64_t addr, uint32_t method,
                       const char *how)
{
    out->addr = addr;
    out->method = method;
    pyf__fmt(out->how, sizeof out->how, "%s", how);
}

/* Whether maps[i] is the first mapping at file offset 0 of its file (the
 * mapping that says where the file is loaded). */
static bool first_of_file(const pyf_mapping *maps, size_t i)
{
    const pyf_mapping *m = &maps[i];

    if (m->path == NULL || m->path[0] != '/' || m->file_offset != 0)
        return false;
    for (size_t j = 0; j < i; j++)
        if (maps[j].file_offset == 0 && maps[j].path != NULL &&
            strcmp(maps[j].path, m->path) == 0)
            return false;
    return true;
}

/* ---- the files that may hold CPython ------------------------------------ */

/* A mapped file that may hold CPython: each python or libpython file, and
 * the program (the first file mapped: an interpreter linked into a program
 * of another name), with what its ELF headers say (elf.h): its sections
 * first, its symbols once they are needed (file_symbols). */
typedef struct pyfile {
    const pyf_mapping *m;
    const char *path;  /* where it was opened: m->path or m->open_path */
    pyf__elf_python elf;
    bool named;        /* its name contains "python" */
    bool unopened;     /* it could not be read */
} pyfile;

typedef struct pyfiles {
    pyfile v[MAX_CANDIDATES];
    size_t n;
    char unopened_note[256]; /* a deleted python file that could not be reopened */
} pyfiles;

static void files_read(const locate_ctx *c, const pyf_mapping *maps, size_t nmaps,
                       pyfiles *pfs)
{
    bool program = true; /* the first file is the program */

    pfs->n = 0;
    pfs->unopened_note[0] = '\0';
    for (size_t i = 0; i < nmaps && pfs->n < MAX_CANDIDATES; i++) {
        const pyf_mapping *m = &maps[i];
        pyfile *pf = &pfs->v[pfs->n];
        bool deleted;
        int rc = PYF_EIO;

        if (!first_of_file(maps, i))
            continue;
        pf->named = is_python_path(m->path);
        if (!program && !(pf->named && strstr(m->path, ".cpython-") == NULL))
            continue; /* an extension module never holds the runtime */
        program = false;
        pf->m = m;
        deleted = ends_with(m->path, strlen(m->path), DELETED_SUFFIX);
        pf->path = m->path;
        if (!deleted)
            rc = pyf__elf_python_facts(pf->path, false, &pf->elf);
        if (rc == PYF_EIO && m->open_path != NULL)
            rc = pyf__elf_python_facts(pf->path = m->open_path, false, &pf->elf);
        pf->unopened = rc == PYF_EIO;
        if (rc != PYF_OK) {
            memset(&pf->elf, 0, sizeof pf->elf);
            pf->elf.symbols = true; /* nothing more to read */
        }
        if (pf->unopened && deleted && pf->named && pfs->unopened_note[0] == '\0')
            pyf__fmt(pfs->unopened_note, sizeof pfs->unopened_note,
                     "; %s could not be reopened%s", m->path,
                     c->unopened_hint ? c->unopened_hint : "");
        pfs->n++;
    }
}

/* Where value (an address of pf's file, as elf.h gives them) lives in the
 * target; 0 for none. */
static uint64_t file_addr(const pyfile *pf, uint64_t value)
{
    uint64_t delta;

    if (value == 0 || value < pf->elf.load)
        return 0;
    delta = value - pf->elf.load;
    return delta > UINT64_MAX - pf->m->start ? 0 : pf->m->start + delta;
}

/* pf's symbols, read once they are needed: the section headers find
 * 3.10+ runtimes; the symbols (some 40 us of a libpython's tables) are for
 * 3.8/3.9's, for the checks of a runtime without _Py_DebugOffsets, and for
 * what a file without a runtime says. */
static void file_symbols(pyfile *pf)
{
    pyf__elf_python e;

    if (pf->elf.symbols)
        return;
    if (pyf__elf_python_facts(pf->path, true, &e) == PYF_OK)
        pf->elf = e;
    pf->elf.symbols = true;
}

/* Whether pf is a file of CPython by its ELF headers. */
static bool cpython_file(pyfile *pf)
{
    file_symbols(pf);
    return pf->elf.runtime || pf->elf.section || pf->elf.version || pf->elf.getversion;
}

/* The version pf's Py_Version (CPython 3.11+: an unsigned long holding
 * PY_VERSION_HEX) says, read in the target; 0 when it has none. */
static uint64_t file_version(const locate_ctx *c, pyfile *pf)
{
    uint64_t addr, word = 0;

    file_symbols(pf);
    addr = file_addr(pf, pf->elf.version);
    if (addr == 0 || c->r->read(c->r->arg, addr, &word, sizeof word) != PYF_OK)
        return 0;
    word &= 0xffffffffu;
    return (word >> 24) == 3 && ((word >> 4) & 0xf) >= 0xA ? word : 0;
}

/* ---- the version a CPython's .bss keeps ---------------------------------
 * Py_GetVersion() fills a static char[250] with "%.80s (%.80s) %.80s":
 * PY_VERSION, the build ("main, Jan  1 2024, 10:00:00") and the compiler
 * ("[GCC 12.2.0]", "\n[GCC ...]" before 3.10), and sys.version is made
 * from it at start-up, so every CPython 2.7-3.12 has it in the .bss of the
 * file that holds its code.  Only there is it looked for, only at 16-byte
 * aligned addresses (a global array of 16 bytes or more is, on x86-64), and
 * only in that exact shape: a scan of more memory, or for less, finds other
 * strings that start like a version (py-spy #731). */
#define BSS_SCAN_MAX ((uint64_t)16 << 20) /* bytes of one file's .bss read */
#define VERSION_BUF 250

static size_t digits(const uint8_t *p, size_t n, size_t max, unsigned *value)
{
    size_t i = 0;

    *value = 0;
    while (i < n && i < max && p[i] >= '0' && p[i] <= '9')
        *value = *value * 10 + (unsigned)(p[i++] - '0');
    return i;
}

/* The PY_VERSION_HEX of a Py_GetVersion() string at p (n bytes readable),
 * 0 when p does not hold one in that exact shape. */
static uint64_t version_string(const uint8_t *p, size_t n)
{
    unsigned major, minor, micro, serial = 0, level = 0xF;
    size_t i = 0, k, start;

    if (n > VERSION_BUF)
        n = VERSION_BUF;
    if ((k = digits(p, n, 1, &major)) != 1 || (major != 2 && major != 3))
        return 0;
    i = k;
    if (i >= n || p[i++] != '.' || (k = digits(p + i, n - i, 2, &minor)) == 0)
        return 0;
    i += k;
    if (i >= n || p[i++] != '.' || (k = digits(p + i, n - i, 2, &micro)) == 0)
        return 0;
    i += k;
    if (i + 1 < n && (p[i] == 'a' || p[i] == 'b')) {
        level = p[i] == 'a' ? 0xA : 0xB;
        i++;
    } else if (i + 2 < n && p[i] == 'r' && p[i + 1] == 'c') {
        level = 0xC;
        i += 2;
    }
    if (level != 0xF) {
        if ((k = digits(p + i, n - i, 2, &serial)) == 0 || serial > 15)
            return 0;
        i += k;
    }
    if (i < n && p[i] == '+') /* a build after the release */
        i++;
    if (i + 2 > n || p[i] != ' ' || p[i + 1] != '(')
        return 0;
    i += 2;
    /* the build: 1..80 printable characters without parentheses */
    for (start = i; i < n && p[i] >= 0x20 && p[i] < 0x7f && p[i] != '(' && p[i] != ')'; i++)
        ;
    if (i == start || i - start > 80 || i + 2 > n || p[i] != ')' || p[i + 1] != ' ')
        return 0;
    i += 2;
    /* the compiler: "[...]" (after a newline before 3.10), then the end */
    if (i < n && p[i] == '\n')
        i++;
    if (i >= n || p[i] != '[')
        return 0;
    for (start = i; i < n && p[i] >= 0x20 && p[i] < 0x7f; i++)
        ;
    if (i - start < 3 || i - start > 81 || i >= n || p[i] != '\0' || p[i - 1] != ']')
        return 0;
    if (minor > 255 || micro > 255)
        return 0;
    return (uint64_t)major << 24 | (uint64_t)minor << 16 | (uint64_t)micro << 8 |
           (uint64_t)level << 4 | serial;
}

/* The version Py_GetVersion's buffer in pf's .bss holds: 0 when none,
 * or when it holds two that differ. */
static uint64_t bss_version(const locate_ctx *c, pyfile *pf)
{
    uint64_t start = file_addr(pf, pf->elf.bss), len = pf->elf.bss_size, found = 0;
    uint8_t *buf;

    file_symbols(pf);
    if (start == 0 || len == 0 || pf->elf.getversion == 0)
        return 0;
    if (len > BSS_SCAN_MAX)
        len = BSS_SCAN_MAX;
    if (len > UINT64_MAX - start)
        return 0;
    buf = calloc(1, (size_t)len + 1); /* a NUL after the end */
    if (buf == NULL)
        return 0;
    /* page by page: a page that cannot be read stays zero */
    for (uint64_t p = start; p < start + len;) {
        uint64_t next = (p | (SCAN_PAGE - 1)) + 1;
        size_t n = (size_t)((next < start + len ? next : start + len) - p);

        if (c->r->read(c->r->arg, p, buf + (p - start), n) != PYF_OK)
            memset(buf + (p - start), 0, n);
        p += n;
    }
    for (uint64_t off = (16 - start % 16) % 16; off < len; off += 16) {
        uint64_t v;

        if (buf[off] != '2' && buf[off] != '3')
            continue;
        v = version_string(buf + off, (size_t)(len + 1 - off));
        if (v == 0)
            continue;
        if (found != 0 && found != v) {
            found = 0;
            break;
        }
        found = v;
    }
    free(buf);
    return found;
}

/* Whether pf's name names version hex: "python3.10", "libpython3.10..."
 * (a tie-breaker only). */
static bool named_for(const pyfile *pf, uint64_t hex)
{
    const char *base = strrchr(pf->m->path, '/'), *at;
    char want[24];

    pyf__fmt(want, sizeof want, "python%u.%u", (unsigned)((hex >> 24) & 0xff),
             (unsigned)((hex >> 16) & 0xff));
    at = base ? strstr(base, want) : NULL;
    /* not the start of a longer number: python3.1 in python3.10 */
    return at != NULL && !(at[strlen(want)] >= '0' && at[strlen(want)] <= '9');
}

/* The version the files say when no runtime was accepted, and which file
 * says it (in *from): the Py_Version of CPython 3.11+, else the string
 * Py_GetVersion keeps in the .bss (2.7-3.10; where two files say different
 * versions, the one whose name names its version).  0 when none says one. */
static uint64_t files_version(const locate_ctx *c, pyfiles *pfs, const pyfile **from)
{
    uint64_t chosen = 0;
    int ties = 0;

    *from = NULL;
    for (size_t i = 0; i < pfs->n; i++) {
        uint64_t v = file_version(c, &pfs->v[i]);

        if (v != 0) {
            *from = &pfs->v[i];
            return v;
        }
    }
    for (size_t i = 0; i < pfs->n; i++) {
        uint64_t v = bss_version(c, &pfs->v[i]);

        if (v == 0 || v == chosen)
            continue;
        if (chosen == 0) {
            chosen = v;
            *from = &pfs->v[i];
        } else if (named_for(&pfs->v[i], v) && !named_for(*from, chosen)) {
            chosen = v; /* the file name breaks the tie */
            *from = &pfs->v[i];
            ties = 0;
        } else if (named_for(&pfs->v[i], v) == named_for(*from, chosen)) {
            ties++;
        }
    }
    if (ties > 0)
        *from = NULL;
    return ties > 0 ? 0 : chosen;
}

/* ---- candidates ---------------------------------------------------------- */

/* A refusal made here (not by the probe), as note_rejection keeps them. */
static void refuse(rejected *rej, uint64_t addr, int code, uint64_t hexversion,
                   const char *how, const char *why)
{
    pyf_failure f;
    pyf_python_info info;

    memset(&f, 0, sizeof f);
    memset(&info, 0, sizeof info);
    f.code = code;
    pyf__fmt(f.detail, sizeof f.detail, "%s", why);
    if (hexversion != 0)
        pyf__python_info_version(hexversion, addr, &info);
    note_rejection(rej, addr, &f, &info, how);
}

/* Try the runtime at addr, found as how (by method), size its size when
 * known (the symbol's or the section's), pf its file when known.  A
 * runtime without the "xdebugpy" cookie, read by a built-in layout (3.11,
 * 3.12), is trusted only when its size is that layout's (a different size
 * is an unknown layout: refused, never read, when the file's Py_Version
 * says the version first) and when that Py_Version agrees with what the
 * target reads from sys.hexversion.  PYF_OK with out filled; PYF_EPERM or
 * PYF_ENOPROC (c's detail set); else PYF_ENOTPY with the refusal kept in
 * rej. */
static int try_runtime(const locate_ctx *c, rejected *rej, uint64_t addr, uint64_t size,
                       pyfile *pf, uint32_t method, const char *how,
                       pyf_runtime_location *out)
{
    char why[PYF__ERRBUF], head[8];
    pyf_python_info info;
    pyf_failure f;
    uint64_t version = 0, known = 0;
    int rc;

    /* a table says its own version: Py_Version is only asked without one */
    if (pf != NULL && (c->r->read(c->r->arg, addr, head, sizeof head) != PYF_OK ||
                       memcmp(head, PYF__COOKIE, 8) != 0)) {
        version = file_version(c, pf);
        known = version ? pyf__offsets_builtin_runtime_size(version) : 0;
    }
    if (known != 0 && size != 0 && size != known) {
        pyf__layout_refused(version, size, known, why, sizeof why);
        refuse(rej, addr, PYF_EVERSION, version, how, why);
        return PYF_ENOTPY;
    }
    memset(&info, 0, sizeof info);
    rc = probe(c->r, addr, &info, &f);
    if (rc == PYF_OK) {
        known = pyf__offsets_builtin_runtime_size(info.hexversion);
        if (known != 0 && size != 0 && size != known) {
            pyf__layout_refused(info.hexversion, size, known, why, sizeof why);
            refuse(rej, addr, PYF_EVERSION, info.hexversion, how, why);
            return PYF_ENOTPY;
        }
        if (known != 0 && version != 0 && version != info.hexversion) {
            char said[40], read[40];

            pyf__version_text(version, said, sizeof said);
            pyf__version_text(info.hexversion, read, sizeof read);
            pyf__fmt(why, sizeof why, "its Py_Version says CPython %s, its sys.hexversion "
                     "%s", said, read);
            refuse(rej, addr, PYF_ECORRUPT, 0, how, why);
            return PYF_ENOTPY;
        }
        out->python = info;
        fill_found(out, addr, method, how);
        return PYF_OK;
    }
    if (rc == PYF_EPERM || rc == PYF_ENOPROC)
        return fail_read(c, rc);
    note_rejection(rej, addr, &f, &info, how);
    return PYF_ENOTPY;
}

/* The table a search found refused, or none at all (what: the search, e.g.
 * "the target"), as c's detail: with version_alone, the refused
 * table's version alone when that was the reason (the probe's words), else
 * where it was and why it was refused; the code to return. */
static int no_table(const locate_ctx *c, const rejected *rej, const char *what,
                    bool version_alone)
{
    if (rej->addr != 0 && rej->code == PYF_EVERSION && version_alone) {
        pyf__fmt(c->err, c->errlen, "%s", rej->why);
        return PYF_EVERSION;
    }
    if (rej->addr != 0 && rej->code != PYF_ENOTPY) {
        pyf__fmt(c->err, c->errlen,
                 "%s: the runtime at 0x%" PRIx64 " (%s) was rejected: %s (%s): %s",
                 what, rej->addr, rej->where, pyf_error_message(rej->code),
                 pyf_error_name(rej->code), rej->why);
        return rej->code;
    }
    pyf__fmt(c->err, c->errlen, "%s: no 8-aligned \"xdebugpy\" cookie there", what);
    return PYF_ENOTPY;
}

/* Nothing accepted (rc: the scan's outcome, PYF_EDEPTH when its budget ran
 * out): the most telling refusal, else the version the files say, else
 * "not a Python process" when the files were searched (methods) and
 * nothing of CPython was seen at all. */
static int nothing_found(const locate_ctx *c, pyfiles *pfs, const rejected *rej,
                         uint64_t symbol, uint32_t methods, int rc, uint64_t budget,
                         pyf_runtime_location *out)
{
    char rej_note[PYF__ERRBUF] = "", budget_note[64] = "", said[PYF__ERRBUF] = "";
    const pyfile *from = NULL;
    /* anything of CPython seen, a search cut short, or no file searched
     * (none given, or not asked for): not "not Python" */
    bool cpython = symbol != 0 || pfs->unopened_note[0] != '\0' || rc == PYF_EDEPTH ||
                   pfs->n == 0 || !(methods & (PYF_LOCATE_SYMBOL | PYF_LOCATE_SECTION));
    uint64_t hex;

    out->addr = 0;
    memset(&out->python, 0, sizeof out->python); /* what a refused probe left */
    if (rej->addr != 0 && rej->code != PYF_ENOTPY) {
        if (rej->code == PYF_EVERSION)
            out->python = rej->python;
        return no_table(c, rej, c->who, true);
    }
    for (size_t i = 0; i < pfs->n; i++)
        cpython = cpython || cpython_file(&pfs->v[i]) || (pfs->v[i].named && pfs->v[i].unopened);
    hex = cpython ? files_version(c, pfs, &from) : 0;
    if (hex != 0) {
        uint32_t minor = (hex >> 16) & 0xff;
        char vtext[40];

        if ((hex >> 24) != 3 || minor < 8 || minor > 15) {
            pyf__python_info_version(hex, 0, &out->python);
            return pyf__version_refused(hex, c->err, c->errlen);
        }
        pyf__version_text(hex, vtext, sizeof vtext);
        pyf__fmt(said, sizeof said, "; %s says it is CPython %s", from->m->path, vtext);
    }
    if (!cpython) {
        pyf__fmt(c->err, c->errlen, "%s is not a Python process", c->who);
        return PYF_ENOTPY;
    }
    if (rej->addr != 0)
        pyf__fmt(rej_note, sizeof rej_note, "; %s holds no valid runtime at 0x%" PRIx64,
                 rej->where, rej->addr);
    if (rc == PYF_EDEPTH)
        pyf__fmt(budget_note, sizeof budget_note, "; the scan stopped after %" PRIu64 " MiB",
                 (budget ? budget : SCAN_BUDGET) >> 20);
    pyf__fmt(c->err, c->errlen,
             "no CPython runtime found in %s: no mapped file has a _PyRuntime symbol or "
             ".PyRuntime section that holds a runtime pyframes reads, and no writable "
             "mapping holds the \"xdebugpy\" cookie%s%s%s%s",
             c->who, said, rej_note, pfs->unopened_note, budget_note);
    return PYF_ENOTPY;
}

static int locate(const locate_ctx *c, const pyf_mapping *maps, size_t nmaps,
                  uint64_t symbol, uint32_t methods, uint64_t budget,
                  pyf_runtime_location *out)
{
    const pyf_reader *r = c->r;
    scan_state s;
    region *reg = NULL;
    size_t nreg = 0;
    pyfiles *pfs;
    char how[sizeof out->how];
    int rc;

    memset(&s, 0, sizeof s);
    if (methods == 0)
        methods = PYF_LOCATE_SYMBOL | PYF_LOCATE_SECTION | PYF_LOCATE_SCAN;
    pfs = malloc(sizeof *pfs);
    if (pfs == NULL) {
        pyf__fmt(c->err, c->errlen, "out of memory searching %s", c->who);
        return PYF_ENOMEM;
    }
    files_read(c, maps, nmaps, pfs);

    /* 1. The address the caller's symbol table gives: its size and version
     * from the file whose own symbol or section is there. */
    if ((methods & PYF_LOCATE_SYMBOL) && symbol != 0) {
        pyfile *at = NULL;
        uint64_t size = 0;

        /* by the files' sections, then (only if none is there) their symbols */
        for (size_t i = 0; i < pfs->n && at == NULL; i++)
            if (file_addr(&pfs->v[i], pfs->v[i].elf.section) == symbol) {
                at = &pfs->v[i];
                size = at->elf.section_size;
            }
        for (size_t i = 0; i < pfs->n && at == NULL; i++) {
            file_symbols(&pfs->v[i]);
            if (file_addr(&pfs->v[i], pfs->v[i].elf.runtime) == symbol) {
                at = &pfs->v[i];
                size = at->elf.runtime_size;
            }
        }
        rc = try_runtime(c, &s.rej, symbol, size, at, PYF_LOCATE_SYMBOL,
                         "the symbol _PyRuntime", out);
        if (rc != PYF_ENOTPY)
            goto done;
    }

    /* 2. Each file's .PyRuntime section (3.10+), then its own symbol
     * _PyRuntime where that is elsewhere (or the section is not there). */
    for (size_t i = 0; i < pfs->n; i++) {
        pyfile *pf = &pfs->v[i];
        uint64_t section = file_addr(pf, pf->elf.section), sym;

        if ((methods & PYF_LOCATE_SECTION) && section != 0) {
            pyf__fmt(how, sizeof how, "the .PyRuntime section of %s", pf->m->path);
            rc = try_runtime(c, &s.rej, section, pf->elf.section_size, pf,
                             PYF_LOCATE_SECTION, how, out);
            if (rc != PYF_ENOTPY)
                goto done;
        }
        if (!(methods & PYF_LOCATE_SYMBOL))
            continue;
        file_symbols(pf);
        sym = file_addr(pf, pf->elf.runtime);
        if (sym != 0 && sym != symbol && !((methods & PYF_LOCATE_SECTION) && sym == section)) {
            pyf__fmt(how, sizeof how, "the symbol _PyRuntime of %s", pf->m->path);
            rc = try_runtime(c, &s.rej, sym, pf->elf.runtime_size, pf, PYF_LOCATE_SYMBOL,
                             how, out);
            if (rc != PYF_ENOTPY)
                goto done;
        }
    }

    /* 3. The cookie in writable mappings, in scan order. */
    rc = PYF_ENOTPY;
    if (methods & PYF_LOCATE_SCAN) {
        s.reader = r;
        s.info = &out->python;
        s.where = "a writable mapping";
        s.budget = budget ? budget : SCAN_BUDGET;
        s.skip_lo = c->skip_lo;
        s.skip_hi = c->skip_hi;
        s.buf = malloc(SCAN_BLOCK);
        for (size_t i = 0; i < nmaps && nreg < MAX_REGIONS; i++)
            if (maps[i].flags & PYF_MAP_WRITE && maps[i].end > maps[i].start)
                nreg++;
        reg = nreg ? calloc(nreg, sizeof *reg) : NULL;
        if (s.buf == NULL || (nreg && reg == NULL)) {
            free(s.buf);
            free(reg);
            pyf__fmt(c->err, c->errlen, "out of memory scanning %s", c->who);
            rc = PYF_ENOMEM;
            goto done;
        }
        if (c->skip_hi == 0 && c->skip_lo == 0) {
            /* Searching ourselves: the scan buffer holds copies of what it read. */
            s.skip_lo = (uint64_t)(uintptr_t)s.buf;
            s.skip_hi = s.skip_lo + SCAN_BLOCK;
        }
        nreg = 0;
        for (size_t i = 0; i < nmaps && nreg < MAX_REGIONS; i++) {
            const pyf_mapping *m = &maps[i];

            if (!(m->flags & PYF_MAP_WRITE) || m->end <= m->start)
                continue;
            /* Device memory cannot hold the runtime and may not be safe to touch. */
            if (m->path && strncmp(m->path, "/dev/", 5) == 0 &&
                strncmp(m->path, "/dev/shm/", 9) != 0)
                continue;
            reg[nreg] = (region){m->start, m->end,
                                 m->path && m->path[0] == '/'
                                     ? (is_python_path(m->path) ? REGION_PYTHON_FILE : REGION_FILE)
                                     : REGION_MEMORY,
                                 nreg};
            nreg++;
        }
        if (nreg > 1)
            qsort(reg, nreg, sizeof *reg, region_cmp);
        for (size_t i = 0; i < nreg && rc == PYF_ENOTPY; i++)
            rc = scan_range(&s, reg[i].start, reg[i].end, &out->addr);
        free(reg);
        free(s.buf);
        if (rc == PYF_OK) {
            pyf__fmt(how, sizeof how, "the runtime cookie at 0x%" PRIx64 " in writable memory",
                     out->addr);
            fill_found(out, out->addr, PYF_LOCATE_SCAN, how);
            goto done;
        }
        if (rc == PYF_EPERM || rc == PYF_ENOPROC) {
            rc = fail_read(c, rc);
            goto done;
        }
    }

    /* 4. Nothing valid. */
    rc = nothing_found(c, pfs, &s.rej, symbol, methods, rc, budget, out);
done:
    free(pfs);
    return rc;
}

PYF_API int pyf_runtime_locate(const pyf_reader *reader, const pyf_locate_request *req,
                               pyf_runtime_location *out, pyf_failure *failure)
{
    pyf_reader r;
    pyf_locate_request q;
    pyf_runtime_location res;
    pyf_failure f;
    int rc;

    memset(&res, 0, sizeof res);
    if (!pyf__failure_begin(failure, &f) ||
        (out != NULL && out->struct_size < PYF_RUNTIME_LOCATION_SIZE_V0))
        return PYF_EINVAL;
    rc = pyf__reader_in(reader, &r, f.detail, sizeof f.detail);
    if (rc == PYF_OK && req == NULL)
        rc = pyf__failure_set(&f, PYF_EINVAL, "no request given");
    if (rc == PYF_OK)
        rc = pyf__struct_in(req, PYF_LOCATE_REQUEST_SIZE_V0, &q, sizeof q,
                            "pyf_locate_request", f.detail, sizeof f.detail);
    if (rc == PYF_OK && q.nmaps > 0 && q.maps == NULL)
        rc = pyf__failure_set(&f, PYF_EINVAL, "pyf_locate_request.maps is NULL with %zu "
                              "mappings", q.nmaps);
    if (rc == PYF_OK) {
        char who[128];
        locate_ctx c = {&r, who, NULL, 0, 0, f.detail, sizeof f.detail};

        pyf__fmt(who, sizeof who, "%s", q.target_name ? q.target_name : "the target");
        rc = locate(&c, q.maps, q.nmaps, q.symbol_addr, q.methods, q.scan_budget, &res);
    }
    if (out != NULL)
        pyf__struct_out(out, PYF_RUNTIME_LOCATION_SIZE_V0, &res, sizeof res);
    return pyf__failure_out(failure, &f, rc);
}

PYF_API int pyf_runtime_find_in_range(const pyf_reader *reader, uint64_t start,
                                      uint64_t end, uint64_t *found, pyf_failure *failure)
{
    scan_state s;
    pyf_reader r;
    pyf_failure f;
    int rc;

    if (!pyf__failure_begin(failure, &f))
        return PYF_EINVAL;
    rc = pyf__reader_in(reader, &r, f.detail, sizeof f.detail);
    if (rc == PYF_OK && (found == NULL || start > end))
        rc = pyf__failure_set(&f, PYF_EINVAL, found == NULL ? "found is NULL"
                              : "the range 0x%llx-0x%llx ends before it starts",
                              (unsigned long long)start, (unsigned long long)end);
    if (rc != PYF_OK)
        return pyf__failure_out(failure, &f, rc);
    memset(&s, 0, sizeof s);
    s.reader = &r;
    s.budget = SCAN_BUDGET;
    s.where = "the range scanned";
    s.buf = malloc(SCAN_BLOCK);
    if (s.buf == NULL)
        return pyf__failure_out(failure, &f, pyf__failure_set(&f, PYF_ENOMEM,
                                                              "out of memory"));
    rc = scan_range(&s, start, end, found);
    free(s.buf);
    if (rc != PYF_OK) {
        locate_ctx c = {&r, "the target", NULL, 0, 0, f.detail, sizeof f.detail};
        char range[96];

        pyf__fmt(range, sizeof range, "no CPython runtime found in 0x%" PRIx64 "-0x%" PRIx64,
                 start, end);
        if (rc == PYF_EPERM || rc == PYF_ENOPROC)
            fail_read(&c, rc);
        else if (rc == PYF_EDEPTH)
            pyf__fmt(f.detail, sizeof f.detail, "%s: the scan stopped after %" PRIu64 " MiB",
                     range, SCAN_BUDGET >> 20);
        else
            no_table(&c, &s.rej, range, false);
    }
    return pyf__failure_out(failure, &f, rc);
}

/* ==== a live process: /proc/PID/maps ====================================== */

typedef struct maps {
    pyf_mapping *v;
    size_t n, cap;
    size_t nlines;
    int pid;
} maps;

static void maps_free(maps *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free((char *)m->v[i].path);
        free((char *)m->v[i].open_path);
    }
    free(m->v);
}

/* One maps line: "start-end perms offset dev inode   path".  Every mapping
 * is kept (bounded); the files get the paths the library can open: through
 * /proc/PID/root (another mount namespace), and for a deleted file through
 * /proc/PID/map_files. */
static int parse_line(maps *m, char *line, bool complete)
{
    uint64_t start, end, offset;
    char perms[8];
    int n = 0;
    char *path;
    size_t len;
    pyf_mapping *e;

    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %n",
               &start, &end, perms, &offset, &n) < 4 || end <= start)
        return PYF_OK;
    path = line + n;
    len = strlen(path);
    if (len > 0 && path[len - 1] == '\n')
        path[--len] = '\0';
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        pyf_mapping *v;

        if (cap > MAX_REGIONS)
            return PYF_OK; /* keep what we have: the search is bounded anyway */
        v = realloc(m->v, cap * sizeof *v);
        if (v == NULL)
            return PYF_ENOMEM;
        m->v = v;
        m->cap = cap;
    }
    e = &m->v[m->n];
    memset(e, 0, sizeof *e);
    e->start = start;
    e->end = end;
    e->file_offset = offset;
    e->flags = (perms[0] == 'r' ? PYF_MAP_READ : 0) | (perms[1] == 'w' ? PYF_MAP_WRITE : 0) |
               (perms[2] == 'x' ? PYF_MAP_EXEC : 0);
    /* A path cut short by the line limit is not trusted as a file name. */
    if (complete && len > 0) {
        char alt[64 + 4096];

        e->path = strdup(path);
        if (e->path == NULL)
            return PYF_ENOMEM;
        if (path[0] == '/' && offset == 0 && is_python_path(path)) {
            if (ends_with(path, len, DELETED_SUFFIX))
                snprintf(alt, sizeof alt, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
                         m->pid, start, end);
            else
                snprintf(alt, sizeof alt, "/proc/%d/root%s", m->pid, path);
            e->open_path = strdup(alt);
            if (e->open_path == NULL) {
                free((char *)e->path);
                return PYF_ENOMEM;
            }
        }
    } else if (!complete) {
        e->path = strdup("?");
        if (e->path == NULL)
            return PYF_ENOMEM;
    }
    m->n++;
    return PYF_OK;
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

/* ==== discovery for a PID ================================================= */

/* "process 123 (python3)": the PID and its name (/proc/PID/comm), as every
 * front end names a process; "process 123" when it has no name to read. */
static void process_name(int pid, char *buf, size_t len)
{
    char path[64], comm[64] = "";
    FILE *fp;

    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    fp = fopen(path, "re");
    if (fp != NULL) {
        if (fgets(comm, sizeof comm, fp) == NULL)
            comm[0] = '\0';
        fclose(fp);
    }
    comm[strcspn(comm, "\n")] = '\0';
    if (comm[0] != '\0')
        pyf__fmt(buf, len, "process %d (%s)", pid, comm);
    else
        pyf__fmt(buf, len, "process %d", pid);
}

int pyf__pid_find_runtime(int pid, const pyf_reader *r, uint64_t *found,
                          char *err, size_t errlen)
{
    maps m;
    char who[96];
    pyf_runtime_location res;
    int rc;

    if (pid <= 0 || r == NULL || r->read == NULL || found == NULL) {
        pyf__fmt(err, errlen, "invalid argument to the runtime search");
        return PYF_EINVAL;
    }
    memset(&m, 0, sizeof m);
    m.pid = pid;
    rc = read_maps(pid, &m, err, errlen);
    if (rc == PYF_OK && m.nlines == 0) {
        if (kill(pid, 0) < 0 && errno == ESRCH) {
            pyf__fmt(err, errlen, "process %d does not exist", pid);
            rc = PYF_ENOPROC;
        } else {
            pyf__fmt(err, errlen,
                     "process %d has no memory mappings (a kernel thread or a zombie?)", pid);
            rc = PYF_ENOTPY;
        }
    }
    if (rc == PYF_OK) {
        locate_ctx c = {r, who, " through /proc/PID/map_files (needs CAP_SYS_ADMIN or "
                        "CAP_CHECKPOINT_RESTORE)", 0, 0, err, errlen};
        process_name(pid, who, sizeof who);
        memset(&res, 0, sizeof res);
        rc = locate(&c, m.v, m.n, 0, PYF_LOCATE_SYMBOL | PYF_LOCATE_SECTION | PYF_LOCATE_SCAN,
                    0, &res);
        if (rc == PYF_OK)
            *found = res.addr;
    }
    maps_free(&m);
    return rc;
}

/* ==== the asyncio debug offsets ============================================ */

int pyf__maps_find_asyncio(const pyf_mapping *v, size_t n, uint64_t *found)
{
    for (size_t i = 0; i < n; i++) {
        const pyf_mapping *e = &v[i];
        uint64_t sh_addr = 0, load = 0;
        int r = PYF_EIO;

        if (e->path == NULL || e->path[0] != '/' || e->file_offset != 0 ||
            !is_python_path(e->path))
            continue;
        if (!ends_with(e->path, strlen(e->path), DELETED_SUFFIX))
            r = pyf__elf_find_section(e->path, PYF__SECTION_ASYNCIO, &sh_addr, NULL, &load);
        if (r == PYF_EIO && e->open_path != NULL)
            r = pyf__elf_find_section(e->open_path, PYF__SECTION_ASYNCIO, &sh_addr, NULL,
                                      &load);
        if (r == PYF_OK && sh_addr - load <= UINT64_MAX - e->start) {
            *found = e->start + (sh_addr - load);
            return PYF_OK;
        }
    }
    return PYF_ENOTSUP;
}

int pyf__pid_find_asyncio(int pid, uint64_t *found, char *err, size_t errlen)
{
    maps m;
    int rc;

    memset(&m, 0, sizeof m);
    m.pid = pid;
    rc = read_maps(pid, &m, err, errlen);
    if (rc == PYF_OK) {
        rc = pyf__maps_find_asyncio(m.v, m.n, found);
        if (rc != PYF_OK)
            pyf__fmt(err, errlen, "no file mapped by process %d has an .AsyncioDebug "
                     "section: the process has not imported asyncio", pid);
    }
    maps_free(&m);
    return rc;
}
