/*
 * core_image.c - synthetic core files (core_image.h).
 */
#include "core_image.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ci_put(ci_bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (q == NULL)
            abort(); /* a test's own allocation */
        b->p = q;
        b->cap = cap;
    }
    if (n > 0)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

void ci_u16(ci_bytes *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    ci_put(b, x, 2);
}

void ci_u32(ci_bytes *b, uint32_t v)
{
    ci_u16(b, (uint16_t)v);
    ci_u16(b, (uint16_t)(v >> 16));
}

void ci_u64(ci_bytes *b, uint64_t v)
{
    ci_u32(b, (uint32_t)v);
    ci_u32(b, (uint32_t)(v >> 32));
}

void ci_zero(ci_bytes *b, size_t n)
{
    static const uint8_t zeros[256];
    while (n > 0) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        ci_put(b, zeros, k);
        n -= k;
    }
}

void ci_free(ci_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static void pad4(ci_bytes *b)
{
    while (b->len % 4)
        ci_zero(b, 1);
}

static void put_at(ci_bytes *b, size_t at, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        b->p[at + i] = (uint8_t)(v >> (8 * i));
}

/* ==== ELF cores ========================================================== */

void ci_init(core_image *c)
{
    memset(c, 0, sizeof *c);
}

void ci_release(core_image *c)
{
    ci_free(&c->notes);
    ci_free(&c->files);
    ci_free(&c->names);
    for (int i = 0; i < c->nseg; i++)
        ci_free(&c->seg[i].data);
}

void ci_load(core_image *c, uint64_t vaddr, uint64_t memsz, uint32_t flags,
             const void *data, size_t len)
{
    if (c->nseg == CI_MAX_SEGS)
        abort();
    c->seg[c->nseg].vaddr = vaddr;
    c->seg[c->nseg].memsz = memsz;
    c->seg[c->nseg].flags = flags;
    memset(&c->seg[c->nseg].data, 0, sizeof c->seg[c->nseg].data);
    if (data != NULL)
        ci_put(&c->seg[c->nseg].data, data, len);
    else
        ci_zero(&c->seg[c->nseg].data, len);
    c->nseg++;
}

static void note(ci_bytes *b, const char *name, uint32_t type, const ci_bytes *desc)
{
    uint32_t namesz = (uint32_t)strlen(name) + 1;
    ci_u32(b, namesz);
    ci_u32(b, (uint32_t)desc->len);
    ci_u32(b, type);
    ci_put(b, name, namesz);
    pad4(b);
    ci_put(b, desc->p, desc->len);
    pad4(b);
}

void ci_prstatus(core_image *c, uint32_t tid, int16_t cursig, const uint64_t *regs)
{
    ci_bytes d = {0};
    ci_zero(&d, 336);
    put_at(&d, 12, (uint16_t)cursig, 2);
    put_at(&d, 32, tid, 4);
    for (int i = 0; i < 27; i++)
        put_at(&d, 112 + 8 * (size_t)i, regs != NULL ? regs[i] : (i == 15 ? UINT64_MAX : 0), 8);
    note(&c->notes, "CORE", 1, &d);
    ci_free(&d);
}

void ci_siginfo(core_image *c, int32_t signo, int32_t code, uint64_t addr)
{
    ci_bytes d = {0};
    ci_zero(&d, 128);
    put_at(&d, 0, (uint32_t)signo, 4);
    put_at(&d, 8, (uint32_t)code, 4);
    put_at(&d, 16, addr, 8);
    note(&c->notes, "CORE", 0x53494749u, &d);
    ci_free(&d);
}

void ci_prpsinfo(core_image *c, int32_t pid, const char *args)
{
    ci_bytes d = {0};
    ci_zero(&d, 136);
    put_at(&d, 24, (uint32_t)pid, 4);
    memcpy(d.p + 40, "python3", 7);
    memcpy(d.p + 56, args, strlen(args) < 80 ? strlen(args) : 80);
    note(&c->notes, "CORE", 3, &d);
    ci_free(&d);
}

void ci_auxv_entry(core_image *c, uint64_t entry)
{
    ci_bytes d = {0};
    ci_u64(&d, 9); /* AT_ENTRY */
    ci_u64(&d, entry);
    ci_u64(&d, 0);
    ci_u64(&d, 0);
    note(&c->notes, "CORE", 6, &d);
    ci_free(&d);
}

void ci_file(core_image *c, uint64_t start, uint64_t end, uint64_t pgoff, const char *path)
{
    ci_u64(&c->files, start);
    ci_u64(&c->files, end);
    ci_u64(&c->files, pgoff);
    ci_put(&c->names, path, strlen(path) + 1);
    c->nfiles++;
}

/* An x86-64 ELF64 header of type (4 ET_CORE, 3 ET_DYN) whose phnum
 * program headers follow it. */
static void elf_header(ci_bytes *out, uint16_t type, uint16_t phnum)
{
    ci_put(out, "\177ELF\2\1\1", 7);
    ci_zero(out, 9);
    ci_u16(out, type);
    ci_u16(out, 62); /* EM_X86_64 */
    ci_u32(out, 1);
    ci_u64(out, 0);
    ci_u64(out, 64); /* e_phoff */
    ci_u64(out, 0);
    ci_u32(out, 0);
    ci_u16(out, 64);
    ci_u16(out, 56);
    ci_u16(out, phnum);
    ci_u16(out, 64);
    ci_u16(out, 0);
    ci_u16(out, 0);
}

void ci_build(core_image *c, ci_bytes *out)
{
    ci_bytes notes = {0};
    ci_put(&notes, c->notes.p, c->notes.len);
    if (c->nfiles > 0) {
        ci_bytes d = {0};
        ci_u64(&d, c->nfiles);
        ci_u64(&d, 4096);
        ci_put(&d, c->files.p, c->files.len);
        ci_put(&d, c->names.p, c->names.len);
        note(&notes, "CORE", 0x46494c45u, &d);
        ci_free(&d);
    }
    uint16_t phnum = (uint16_t)(1 + c->nseg);
    size_t notes_at = 64 + 56u * phnum;
    size_t data_at = (notes_at + notes.len + 4095) & ~(size_t)4095;
    memset(out, 0, sizeof *out);
    elf_header(out, 4, phnum); /* ET_CORE */
    /* PT_NOTE */
    ci_u32(out, 4);
    ci_u32(out, 0);
    ci_u64(out, notes_at);
    ci_u64(out, 0);
    ci_u64(out, 0);
    ci_u64(out, notes.len);
    ci_u64(out, 0);
    ci_u64(out, 4);
    size_t at = data_at;
    for (int i = 0; i < c->nseg; i++) {
        ci_u32(out, 1);
        ci_u32(out, c->seg[i].flags);
        ci_u64(out, at);
        ci_u64(out, c->seg[i].vaddr);
        ci_u64(out, 0);
        ci_u64(out, c->seg[i].data.len);
        ci_u64(out, c->seg[i].memsz);
        ci_u64(out, 4096);
        at = (at + c->seg[i].data.len + 4095) & ~(size_t)4095;
    }
    ci_put(out, notes.p, notes.len);
    ci_zero(out, data_at - out->len);
    for (int i = 0; i < c->nseg; i++) {
        ci_put(out, c->seg[i].data.p, c->seg[i].data.len);
        ci_zero(out, ((out->len + 4095) & ~(size_t)4095) - out->len);
    }
    ci_free(&notes);
}

/* ==== minidumps ========================================================== */

void md_init(md_image *m)
{
    memset(m, 0, sizeof *m);
}

void md_release(md_image *m)
{
    for (int i = 0; i < m->nmem; i++)
        ci_free(&m->mem[i].data);
}

void md_memory(md_image *m, uint64_t start, const void *data, size_t len)
{
    if (m->nmem == CI_MAX_SEGS)
        abort();
    m->mem[m->nmem].start = start;
    memset(&m->mem[m->nmem].data, 0, sizeof m->mem[m->nmem].data);
    ci_put(&m->mem[m->nmem].data, data, len);
    m->nmem++;
}

#define CTX_SIZE 1232u
#define MAX_STREAMS 8

void md_build(md_image *m, ci_bytes *out)
{
    uint32_t type[MAX_STREAMS];
    ci_bytes s[MAX_STREAMS];
    size_t n = 0;
    memset(s, 0, sizeof s);

    /* the streams' sizes first: the contexts and memory follow them */
    size_t maps_len = m->maps ? strlen(m->maps) : 0;
    size_t streams_len = 56 + 24 + (4 + 48u * (size_t)m->nthread) +
                         (16 + 16u * (size_t)m->nmem) + (m->exc_code ? 168 : 0) + maps_len;
    size_t nstreams = 4 + (m->exc_code != 0) + (m->maps != NULL);
    size_t ctx_at = 32 + 12 * nstreams + streams_len;
    size_t data_at = ctx_at + CTX_SIZE * (size_t)m->nthread;

    type[n] = 7; /* SystemInfo: AMD64 on Linux */
    ci_u16(&s[n], 9);
    ci_zero(&s[n], 18);
    ci_u32(&s[n], 0x8201);
    ci_zero(&s[n++], 32);
    type[n] = 15; /* MiscInfo: the process id */
    ci_u32(&s[n], 24);
    ci_u32(&s[n], 1);
    ci_u32(&s[n], m->pid);
    ci_zero(&s[n++], 12);
    type[n] = 3; /* ThreadList */
    ci_u32(&s[n], (uint32_t)m->nthread);
    for (int i = 0; i < m->nthread; i++) {
        ci_u32(&s[n], m->thread[i].tid);
        ci_zero(&s[n], 12);
        ci_u64(&s[n], 0); /* teb */
        ci_u64(&s[n], m->thread[i].rsp);
        ci_u32(&s[n], 0);
        ci_u32(&s[n], 0);
        ci_u32(&s[n], CTX_SIZE);
        ci_u32(&s[n], (uint32_t)(ctx_at + CTX_SIZE * (size_t)i));
    }
    n++;
    type[n] = 9; /* Memory64List */
    ci_u64(&s[n], (uint64_t)m->nmem);
    ci_u64(&s[n], data_at);
    for (int i = 0; i < m->nmem; i++) {
        ci_u64(&s[n], m->mem[i].start);
        ci_u64(&s[n], m->mem[i].data.len);
    }
    n++;
    if (m->exc_code) {
        type[n] = 6; /* Exception */
        ci_u32(&s[n], m->exc_tid);
        ci_u32(&s[n], 0);
        ci_u32(&s[n], m->exc_code);
        ci_u32(&s[n], m->exc_flags);
        ci_u64(&s[n], 0);
        ci_u64(&s[n], m->exc_addr);
        ci_zero(&s[n++], 168 - 32);
    }
    if (m->maps) {
        type[n] = 0x47670009u; /* LinuxMaps */
        ci_put(&s[n++], m->maps, maps_len);
    }

    memset(out, 0, sizeof *out);
    ci_put(out, "MDMP", 4);
    ci_u32(out, 0xa793);
    ci_u32(out, (uint32_t)n);
    ci_u32(out, 32);
    ci_zero(out, 16);
    size_t at = 32 + 12 * n;
    for (size_t i = 0; i < n; i++) {
        ci_u32(out, type[i]);
        ci_u32(out, (uint32_t)s[i].len);
        ci_u32(out, (uint32_t)at);
        at += s[i].len;
    }
    for (size_t i = 0; i < n; i++) {
        ci_put(out, s[i].p, s[i].len);
        ci_free(&s[i]);
    }
    for (int i = 0; i < m->nthread; i++) {
        ci_bytes ctx = {0};
        ci_zero(&ctx, CTX_SIZE);
        put_at(&ctx, 152, m->thread[i].rsp, 8);
        put_at(&ctx, 248, m->thread[i].rip, 8);
        ci_put(out, ctx.p, ctx.len);
        ci_free(&ctx);
    }
    for (int i = 0; i < m->nmem; i++)
        ci_put(out, m->mem[i].data.p, m->mem[i].data.len);
}

/* ==== files a core names ================================================= */

void ci_elf_file(ci_bytes *out, size_t len, const uint8_t *id, size_t idlen, uint8_t fill)
{
    memset(out, 0, sizeof *out);
    elf_header(out, 3, 1); /* ET_DYN */
    ci_u32(out, 4);         /* PT_NOTE */
    ci_u32(out, 4);
    ci_u64(out, 120);
    ci_u64(out, 120);
    ci_u64(out, 120);
    ci_u64(out, 16 + ((idlen + 3) & ~(size_t)3));
    ci_u64(out, 16 + ((idlen + 3) & ~(size_t)3));
    ci_u64(out, 4);
    ci_u32(out, 4);
    ci_u32(out, (uint32_t)idlen);
    ci_u32(out, 3); /* NT_GNU_BUILD_ID */
    ci_put(out, "GNU", 4);
    ci_put(out, id, idlen);
    pad4(out);
    while (out->len < len) {
        uint8_t b = fill;
        ci_put(out, &b, 1);
    }
}

int ci_write(const char *path, const ci_bytes *b)
{
    FILE *fp = fopen(path, "wb");
    if (fp == NULL)
        return -1;
    size_t n = fwrite(b->p, 1, b->len, fp);
    return fclose(fp) == 0 && n == b->len ? 0 : -1;
}
