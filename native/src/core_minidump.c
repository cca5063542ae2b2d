/*
 * core_minidump.c - a minidump (lldb's process save-core on Linux, and
 * Breakpad's and Crashpad's): its streams into the core's builders
 * (core.h).
 *
 * Memory: Memory64List (one run of bytes from BaseRva, range after range:
 * lldb's full style) and MemoryList (each range at its own Rva).  Mappings:
 * the LinuxMaps stream (the text of /proc/PID/maps) with permissions and
 * files, else the ModuleList's modules (files, permissions unknown: their
 * left-out bytes are never read from the files).  Threads: ThreadList, each
 * context (x86-64's CONTEXT layout) put in user_regs_struct order; a
 * minidump keeps no orig_rax.  The signal: the Exception stream (its code;
 * Breakpad's and Crashpad's flags are si_code and its address si_addr,
 * lldb's flags are 'LLDB' and its address the pc).  LinuxAuxv gives the
 * entry point, LinuxCmdLine the command line, MiscInfo the process id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "core.h"
#include "elf_reader.h"
#include "reads.h"

#define MD_SIGNATURE 0x504d444du
#define MD_MAX_STREAMS 4096u

#define ST_THREAD_LIST 3u
#define ST_MODULE_LIST 4u
#define ST_MEMORY_LIST 5u
#define ST_EXCEPTION 6u
#define ST_SYSTEM_INFO 7u
#define ST_MEMORY64_LIST 9u
#define ST_MISC_INFO 15u
#define ST_LINUX_CMDLINE 0x47670006u
#define ST_LINUX_AUXV 0x47670008u
#define ST_LINUX_MAPS 0x47670009u

#define LLDB_FLAG 0x4c4c4442u /* 'LLDB' */
#define AT_ENTRY 9u
#define THREAD_SIZE 48u
#define MODULE_SIZE 108u
/* MinidumpContext_x86_64: the general registers, rax first, from 120 */
#define CTX_RAX 120u
#define CTX_MIN 256u

typedef struct stream {
    uint32_t size, rva;
    bool present;
} stream;

typedef struct md {
    pyf_core *c;
    stream thread_list, module_list, memory_list, memory64_list, exception, system_info,
        misc_info, cmdline, auxv, maps;
} md;

/* A stream's bytes (at most max), malloc'd; NULL when absent, or cut short
 * (then the core is marked so). */
static uint8_t *stream_bytes(md *m, const stream *s, uint32_t max, const char *what)
{
    pyf_core *c = m->c;
    if (!s->present || s->size == 0)
        return NULL;
    if (s->size > max) {
        pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the minidump's %s stream is %u bytes, "
                          "more than the %u read: it is not read", what, s->size, max);
        return NULL;
    }
    uint8_t *buf = malloc(s->size);
    if (buf == NULL)
        return NULL;
    if (pyf__core_read_exact(c, buf, s->size, s->rva) != PYF_OK) {
        free(buf);
        pyf__core_partial(c, PYF_CORE_CUT_SHORT | PYF_CORE_NOTES_PARTIAL, "the minidump is "
                          "cut short inside its %s stream", what);
        return NULL;
    }
    return buf;
}

/* A list stream of size bytes at b: its count (u32 first, bounded by what
 * the stream holds) and where its first entry is (*first: some writers pad
 * the count to 8 bytes). */
static uint32_t list_count(const uint8_t *b, uint32_t size, uint32_t entry, uint32_t *first)
{
    uint32_t count = size >= 4 ? pyf__le32(b) : 0;
    *first = (uint64_t)size == 8 + (uint64_t)count * entry ? 8u : 4u;
    if (size < *first)
        return 0;
    return count > (size - *first) / entry ? (size - *first) / entry : count;
}

static int memory64(md *m)
{
    pyf_core *c = m->c;
    uint8_t *b = stream_bytes(m, &m->memory64_list, 16u + 16u * PYF__CORE_MAX_SEGS, "Memory64List");
    if (b == NULL)
        return PYF_OK;
    uint32_t size = m->memory64_list.size;
    uint64_t count = size >= 16 ? pyf__le64(b) : 0, at = size >= 16 ? pyf__le64(b + 8) : 0;
    if (count > (size - 16u) / 16u) {
        pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the minidump's Memory64List says %llu "
                          "ranges and holds %u", (unsigned long long)count, (size - 16u) / 16u);
        count = (size - 16u) / 16u;
    }
    int rc = PYF_OK;
    for (uint64_t i = 0; rc == PYF_OK && i < count; i++) {
        uint64_t start = pyf__le64(b + 16 + 16 * i), len = pyf__le64(b + 24 + 16 * i);
        if (at + len < at)
            break;
        rc = pyf__core_add_seg(c, start, len, at);
        uint64_t have = at >= c->size ? 0 : c->size - at;
        if (len > have) {
            c->info.missing_bytes += len - have;
            pyf__core_partial(c, PYF_CORE_CUT_SHORT, "the minidump is cut short: it ends at "
                              "byte %llu, its memory at 0x%llx needs bytes up to %llu",
                              (unsigned long long)c->size, (unsigned long long)(start + have),
                              (unsigned long long)(at + len));
        }
        at += len;
    }
    free(b);
    return rc;
}

static int memory32(md *m)
{
    pyf_core *c = m->c;
    uint8_t *b = stream_bytes(m, &m->memory_list, 8u + 16u * PYF__CORE_MAX_SEGS, "MemoryList");
    if (b == NULL)
        return PYF_OK;
    uint32_t first, count = list_count(b, m->memory_list.size, 16, &first);
    int rc = PYF_OK;
    for (uint32_t i = 0; rc == PYF_OK && i < count; i++) {
        const uint8_t *d = b + first + 16u * i;
        uint64_t start = pyf__le64(d), len = pyf__le32(d + 8), at = pyf__le32(d + 12);
        rc = pyf__core_add_seg(c, start, len, at);
        if (at + len > c->size) {
            c->info.missing_bytes += at >= c->size ? len : at + len - c->size;
            pyf__core_partial(c, PYF_CORE_CUT_SHORT, "the minidump is cut short: it ends at "
                              "byte %llu, its memory at 0x%llx needs bytes up to %llu",
                              (unsigned long long)c->size, (unsigned long long)start,
                              (unsigned long long)(at + len));
        }
    }
    free(b);
    return rc;
}

/* x86-64 CONTEXT's general registers into user_regs_struct's order. */
static void x86_64_context(pyf_core_thread *th, const uint8_t *ctx)
{
    /* CONTEXT: rax rcx rdx rbx rsp rbp rsi rdi r8-r15 rip, from CTX_RAX */
    static const uint8_t to_user[17] = {10, 11, 12, 5, 19, 4, 13, 14,
                                        9, 8, 7, 6, 3, 2, 1, 0, 16};
    for (uint32_t i = 0; i < 17; i++)
        th->regs[to_user[i]] = pyf__le64(ctx + CTX_RAX + 8 * i);
    th->regs[17] = ctx[56] | (ctx[57] << 8);                  /* cs */
    th->regs[18] = pyf__le32(ctx + 68);                            /* eflags */
    th->regs[20] = ctx[66] | (ctx[67] << 8);                  /* ss */
    th->regs[23] = ctx[58] | (ctx[59] << 8);                  /* ds */
    th->regs[24] = ctx[60] | (ctx[61] << 8);                  /* es */
    th->regs[25] = ctx[62] | (ctx[63] << 8);                  /* fs */
    th->regs[26] = ctx[64] | (ctx[65] << 8);                  /* gs */
    th->nregs = 27;
    th->flags |= PYF_CORE_THREAD_REGS;
}

static int threads(md *m)
{
    pyf_core *c = m->c;
    uint8_t *b = stream_bytes(m, &m->thread_list, 8u + THREAD_SIZE * PYF__CORE_MAX_THREADS,
                              "ThreadList");
    if (b == NULL)
        return PYF_OK;
    uint32_t first, count = list_count(b, m->thread_list.size, THREAD_SIZE, &first);
    int rc = PYF_OK;
    uint8_t ctx[CTX_MIN];
    for (uint32_t i = 0; i < count; i++) {
        const uint8_t *t = b + first + THREAD_SIZE * i;
        pyf_core_thread *th = pyf__core_add_thread(c, pyf__le32(t));
        if (th == NULL) {
            rc = c->nthreads < PYF__CORE_MAX_THREADS ? PYF_ENOMEM : PYF_OK;
            break;
        }
        uint32_t ctx_size = pyf__le32(t + 40), ctx_at = pyf__le32(t + 44);
        if (c->info.machine == 62 && ctx_size >= CTX_MIN &&
            pyf__core_read_exact(c, ctx, CTX_MIN, ctx_at) == PYF_OK)
            x86_64_context(th, ctx);
    }
    free(b);
    return rc;
}

static void exception(md *m)
{
    pyf_core *c = m->c;
    uint8_t *b = stream_bytes(m, &m->exception, 4096, "Exception");
    if (b == NULL || m->exception.size < 32) {
        free(b);
        return;
    }
    uint32_t code = pyf__le32(b + 8), flags = pyf__le32(b + 12);
    if (code > 0 && code < 128) {
        c->info.signo = (int32_t)code;
        c->info.signal_tid = pyf__le32(b);
        c->info.flags |= PYF_CORE_SIGNAL;
        if (flags != LLDB_FLAG) { /* Breakpad, Crashpad: si_code and si_addr */
            c->info.code = (int32_t)flags;
            c->info.signal_addr = pyf__le64(b + 24);
            c->info.flags |= PYF_CORE_SIGINFO;
        }
    }
    free(b);
}

/* One line of /proc/PID/maps: "start-end perms offset dev inode   path". */
static int maps_line(md *m, const char *line, size_t len)
{
    char buf[PYF__CORE_MAX_PATH + 128];
    unsigned long long start, end, off;
    char perms[8];
    int n = 0;

    if (len >= sizeof buf)
        return PYF_OK;
    memcpy(buf, line, len);
    buf[len] = '\0';
    if (sscanf(buf, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &off, &n) < 4 ||
        n <= 0)
        return PYF_OK;
    uint32_t flags = (perms[0] == 'r' ? PYF_MAP_READ : 0) | (perms[1] == 'w' ? PYF_MAP_WRITE : 0) |
                     (perms[2] == 'x' ? PYF_MAP_EXEC : 0) | PYF__MAP_KNOWN;
    const char *path = buf + n;
    size_t plen = strlen(path);
    return pyf__core_add_map(m->c, start, end, off, flags, path[0] == '/' ? path : NULL,
                             path[0] == '/' ? plen : 0);
}

static int maps(md *m)
{
    uint8_t *b = stream_bytes(m, &m->maps, 64u << 20, "LinuxMaps");
    if (b == NULL)
        return PYF_OK;
    int rc = PYF_OK;
    size_t at = 0, size = m->maps.size;
    while (rc == PYF_OK && at < size) {
        const uint8_t *nl = memchr(b + at, '\n', size - at);
        size_t len = nl != NULL ? (size_t)(nl - (b + at)) : size - at;
        rc = maps_line(m, (const char *)b + at, len);
        at += len + 1;
    }
    free(b);
    return rc;
}

/* A MINIDUMP_STRING (UTF-16LE) at rva as UTF-8 into out. */
static size_t md_string(md *m, uint32_t rva, char *out, size_t cap)
{
    uint8_t head[4];
    if (pyf__core_read_exact(m->c, head, 4, rva) != PYF_OK)
        return 0;
    uint32_t bytes = pyf__le32(head);
    if (bytes > 2 * PYF__CORE_MAX_PATH || (bytes & 1))
        return 0;
    uint8_t raw[2 * PYF__CORE_MAX_PATH];
    if (pyf__core_read_exact(m->c, raw, bytes, (uint64_t)rva + 4) != PYF_OK)
        return 0;
    size_t at = 0;
    for (uint32_t i = 0; i + 1 < bytes; i += 2) {
        uint32_t u = raw[i] | (raw[i + 1] << 8);
        if (u >= 0xd800 && u < 0xdc00 && i + 3 < bytes) {
            uint32_t lo = raw[i + 2] | (raw[i + 3] << 8);
            if (lo >= 0xdc00 && lo < 0xe000) {
                u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
                i += 2;
            }
        }
        if (u == 0 || at + 4 >= cap)
            return 0;
        if (u < 0x80) {
            out[at++] = (char)u;
        } else if (u < 0x800) {
            out[at++] = (char)(0xc0 | (u >> 6));
            out[at++] = (char)(0x80 | (u & 0x3f));
        } else if (u < 0x10000) {
            out[at++] = (char)(0xe0 | (u >> 12));
            out[at++] = (char)(0x80 | ((u >> 6) & 0x3f));
            out[at++] = (char)(0x80 | (u & 0x3f));
        } else {
            out[at++] = (char)(0xf0 | (u >> 18));
            out[at++] = (char)(0x80 | ((u >> 12) & 0x3f));
            out[at++] = (char)(0x80 | ((u >> 6) & 0x3f));
            out[at++] = (char)(0x80 | (u & 0x3f));
        }
    }
    return at;
}

/* Without LinuxMaps: each module a mapping of its file, permissions unknown. */
static int modules(md *m)
{
    uint8_t *b = stream_bytes(m, &m->module_list, 8u + MODULE_SIZE * PYF__CORE_MAX_FILES,
                              "ModuleList");
    if (b == NULL)
        return PYF_OK;
    uint32_t first, count = list_count(b, m->module_list.size, MODULE_SIZE, &first);
    int rc = PYF_OK;
    char name[PYF__CORE_MAX_PATH + 1];
    for (uint32_t i = 0; rc == PYF_OK && i < count; i++) {
        const uint8_t *d = b + first + MODULE_SIZE * i;
        uint64_t base = pyf__le64(d), len = pyf__le32(d + 8);
        size_t n = md_string(m, pyf__le32(d + 20), name, sizeof name);
        if (base + len > base)
            rc = pyf__core_add_map(m->c, base, base + len, 0, 0, n > 0 ? name : NULL, n);
    }
    free(b);
    return rc;
}

static void small_streams(md *m)
{
    pyf_core *c = m->c;
    uint8_t *b = stream_bytes(m, &m->system_info, 4096, "SystemInfo");
    if (b != NULL && m->system_info.size >= 2) {
        uint32_t arch = b[0] | (b[1] << 8);
        c->info.machine = arch == 9 ? 62u : (arch == 12 || arch == 0x8003) ? 183u : 0u;
    }
    free(b);
    b = stream_bytes(m, &m->misc_info, 4096, "MiscInfo");
    if (b != NULL && m->misc_info.size >= 12 && (pyf__le32(b + 4) & 1u))
        c->info.pid = pyf__le32(b + 8);
    free(b);
    b = stream_bytes(m, &m->auxv, 1u << 20, "LinuxAuxv");
    for (uint32_t at = 0; b != NULL && at + 16 <= m->auxv.size; at += 16)
        if (pyf__le64(b + at) == AT_ENTRY)
            c->entry = pyf__le64(b + at + 8);
    free(b);
    b = stream_bytes(m, &m->cmdline, 1u << 20, "LinuxCmdLine");
    if (b != NULL) {
        size_t n = m->cmdline.size < sizeof c->info.command - 1 ? m->cmdline.size
                                                                 : sizeof c->info.command - 1;
        for (size_t i = 0; i < n; i++)
            c->info.command[i] = b[i] == '\0' ? ' ' : (char)b[i];
        while (n > 0 && c->info.command[n - 1] == ' ')
            n--;
        c->info.command[n] = '\0';
    }
    free(b);
}

int pyf__core_parse_minidump(pyf_core *c, pyf_failure *f)
{
    uint8_t h[32];
    md m;

    memset(&m, 0, sizeof m);
    m.c = c;
    c->info.format = PYF_CORE_MINIDUMP;
    if (pyf__core_read_exact(c, h, sizeof h, 0) != PYF_OK || pyf__le32(h) != MD_SIGNATURE)
        return pyf__failure_set(f, PYF_ECORRUPT, "its minidump header is cut short (%llu "
                                "bytes)", (unsigned long long)c->size);
    uint32_t nstreams = pyf__le32(h + 8), dir = pyf__le32(h + 12);
    if (nstreams > MD_MAX_STREAMS) {
        pyf__core_partial(c, PYF_CORE_NOTES_PARTIAL, "the minidump lists %u streams: "
                          "those past %u are not read", nstreams, MD_MAX_STREAMS);
        nstreams = MD_MAX_STREAMS;
    }
    uint8_t e[12];
    uint32_t read_ok = 0;
    for (uint32_t i = 0; i < nstreams; i++) {
        if (pyf__core_read_exact(c, e, sizeof e, (uint64_t)dir + 12u * i) != PYF_OK) {
            pyf__core_partial(c, PYF_CORE_CUT_SHORT | PYF_CORE_NOTES_PARTIAL, "the minidump "
                              "is cut short inside its stream directory (%u of %u read)",
                              i, nstreams);
            break;
        }
        read_ok++;
        stream s = {pyf__le32(e + 4), pyf__le32(e + 8), true};
        switch (pyf__le32(e)) {
        case ST_THREAD_LIST: m.thread_list = s; break;
        case ST_MODULE_LIST: m.module_list = s; break;
        case ST_MEMORY_LIST: m.memory_list = s; break;
        case ST_EXCEPTION: m.exception = s; break;
        case ST_SYSTEM_INFO: m.system_info = s; break;
        case ST_MEMORY64_LIST: m.memory64_list = s; break;
        case ST_MISC_INFO: m.misc_info = s; break;
        case ST_LINUX_CMDLINE: m.cmdline = s; break;
        case ST_LINUX_AUXV: m.auxv = s; break;
        case ST_LINUX_MAPS: m.maps = s; break;
        default: break;
        }
    }
    if (read_ok == 0)
        return pyf__failure_set(f, PYF_ECORRUPT, "its stream directory cannot be read (%u "
                                "streams at byte %u)", nstreams, dir);
    small_streams(&m);
    int rc = memory64(&m);
    if (rc == PYF_OK)
        rc = memory32(&m);
    if (rc == PYF_OK)
        rc = m.maps.present ? maps(&m) : modules(&m);
    if (rc == PYF_OK)
        rc = threads(&m);
    if (rc != PYF_OK)
        return pyf__failure_set(f, rc, "out of memory");
    exception(&m);
    return PYF_OK;
}
