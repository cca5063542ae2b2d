/*
 * frames.c - walk one thread's chain of _PyInterpreterFrame.
 *
 * The thread's data-stack chunks are copied first, one read per chunk, and
 * frames are resolved inside those copies; frames outside them (generator
 * and coroutine frames live in their objects, 3.13/3.14 entry frames on the
 * C stack, the 3.15 base frame in the thread state) are read one by one.
 * Entry frames are skipped; tagged pointers (3.14+) are masked.  A visited
 * set and limits end cycles and runaway chains with a named error.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define CHUNK_SPECULATIVE (16u * 1024u) /* CPython's DATA_STACK_CHUNK_SIZE */
#define CHUNK_MAX_BYTES (16u << 20)
#define CHUNKS_MAX_TOTAL (64u << 20)
#define CHUNKS_MAX_COUNT 4096u
#define CHUNK_DATA_OFFSET 24 /* offsetof(_PyStackChunk, data) */

typedef struct chunk {
    uint64_t addr, size;
    uint8_t *data;
} chunk;

typedef struct chunk_list {
    chunk *v;
    uint32_t n, cap;
} chunk_list;

static void chunks_free(chunk_list *cl)
{
    for (uint32_t i = 0; i < cl->n; i++)
        free(cl->v[i].data);
    free(cl->v);
}

/* Copy what we can; a failure only means frames are read directly. */
static void copy_chunks(pyf_target *t, uint64_t addr, chunk_list *cl)
{
    uint64_t total = 0;
    while (addr != 0 && cl->n < CHUNKS_MAX_COUNT && addr % 8 == 0) {
        for (uint32_t i = 0; i < cl->n; i++)
            if (cl->v[i].addr == addr)
                return; /* cycle */
        uint8_t *buf = malloc(CHUNK_SPECULATIVE);
        if (buf == NULL)
            return;
        uint64_t have = CHUNK_SPECULATIVE;
        int rc = pyf__raw_read(&t->reader, &t->stats, addr, buf, have);
        if (rc != PYF_OK) {
            have = CHUNK_DATA_OFFSET;
            rc = pyf__raw_read(&t->reader, &t->stats, addr, buf, have);
        }
        uint64_t size = rc == PYF_OK ? pyf__ld64(buf + 8) : 0;
        if (rc != PYF_OK || size < CHUNK_DATA_OFFSET || size > CHUNK_MAX_BYTES ||
            total + size > CHUNKS_MAX_TOTAL) {
            free(buf);
            return;
        }
        if (size > have) {
            uint8_t *nb = realloc(buf, size);
            if (nb == NULL) {
                free(buf);
                return;
            }
            buf = nb;
            if (pyf__raw_read(&t->reader, &t->stats, addr + have, buf + have,
                              size - have) != PYF_OK) {
                free(buf);
                return;
            }
        }
        if (cl->n == cl->cap) {
            uint32_t ncap = cl->cap ? cl->cap * 2 : 8;
            chunk *nv = realloc(cl->v, ncap * sizeof *nv);
            if (nv == NULL) {
                free(buf);
                return;
            }
            cl->v = nv;
            cl->cap = ncap;
        }
        cl->v[cl->n++] = (chunk){addr, size, buf};
        total += size;
        addr = pyf__ld64(buf); /* previous */
    }
}

static const uint8_t *find_in_chunks(const chunk_list *cl, uint64_t addr,
                                     uint64_t len)
{
    for (uint32_t i = 0; i < cl->n; i++) {
        const chunk *c = &cl->v[i];
        if (addr >= c->addr + CHUNK_DATA_OFFSET && addr - c->addr <= c->size &&
            len <= c->size - (addr - c->addr))
            return c->data + (addr - c->addr);
    }
    return NULL;
}

/* ---- the walk ------------------------------------------------------------- */

/* Index in code units of the instruction at ip, for bytecode at base; -1
 * just before the first instruction, INT64_MAX when ip is nowhere near. */
static int64_t code_index(uint64_t ip, uint64_t base)
{
    if (ip < base)
        return base - ip <= 2 ? -1 : INT64_MAX;
    uint64_t d = (ip - base) / 2;
    return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

int pyf__walk_frames(pyf_target *t, const pyf__thread_walk *w,
                     const pyf__sink *sink)
{
    const pyf__offsets *o = &t->off;
    size_t fsize = (size_t)o->frame.size;
    uint8_t direct[4096];
    if (fsize > sizeof direct)
        return pyf__fail(t, PYF_EOFFSETS, "frame size %zu is too large", fsize);

    chunk_list cl = {0};
    pyf__addrset seen = {0};
    copy_chunks(t, w->datastack_chunk, &cl);

    uint64_t max_depth = w->max_depth;
    uint64_t visit_limit = max_depth * 2 + 64;
    uint64_t emitted = 0, visits = 0;
    uint64_t addr = w->current_frame, last = 0;
    int rc = PYF_OK;

    while (addr != 0) {
        if (addr % 8 != 0) {
            rc = pyf__fail(t, PYF_ECORRUPT, "frame pointer 0x%llx is not "
                           "aligned (after frame 0x%llx)",
                           (unsigned long long)addr, (unsigned long long)last);
            break;
        }
        bool dup;
        if (!pyf__addrset_add(&seen, addr, &dup)) {
            rc = PYF_ENOMEM;
            break;
        }
        if (dup) {
            rc = pyf__fail(t, PYF_ECYCLE, "frame chain loops back to frame "
                           "0x%llx (from frame 0x%llx)",
                           (unsigned long long)addr, (unsigned long long)last);
            break;
        }
        if (++visits > visit_limit) {
            rc = pyf__fail(t, PYF_EDEPTH, "frame chain has more than %llu "
                           "entries", (unsigned long long)visit_limit);
            break;
        }
        const uint8_t *f = find_in_chunks(&cl, addr, fsize);
        if (f == NULL && w->extra != NULL && addr >= w->extra_addr &&
            addr - w->extra_addr <= w->extra_len &&
            fsize <= w->extra_len - (addr - w->extra_addr))
            f = w->extra + (addr - w->extra_addr);
        if (f != NULL) {
            t->stats.chunk_frames++;
        } else {
            rc = pyf__read(t, addr, direct, fsize, "interpreter frame");
            if (rc != PYF_OK)
                break;
            f = direct;
            t->stats.direct_frames++;
        }
        uint64_t prev = pyf__ld64(f + o->frame.previous);
        uint64_t exe = pyf__ld64(f + o->frame.executable) & o->tag_mask;
        uint64_t ip = pyf__ld64(f + o->frame.instr_ptr);
        int owner = (int8_t)f[o->frame.owner];
        last = addr;

        if (owner == o->owner_cstack || owner == o->owner_interpreter) {
            if (sink->mark_entry && emitted > 0) {
                rc = sink->mark_entry(sink->ctx);
                if (rc != PYF_OK)
                    break;
            }
        } else if (owner == o->owner_thread || owner == o->owner_generator ||
                   owner == o->owner_frame_object) {
            if (exe != 0) {
                int soft = PYF_OK;
                const pyf__code *code = NULL;
                if (exe % 8 == 0)
                    code = pyf__code_get(t, exe, &soft);
                else
                    soft = PYF_ECORRUPT;
                if (soft == PYF_ENOMEM) {
                    rc = soft;
                    break;
                }
                /* Code whose line table locates nothing is an
                 * interpreter-made shim (_Py_InitCleanup, pushed by
                 * specialized calls of __init__): it has no first traceable
                 * instruction, so CPython counts its frames as incomplete
                 * and never shows them. */
                bool shim = code != NULL && code->no_lines &&
                            owner != o->owner_generator;
                if (!shim && (code != NULL || soft != PYF_ENOTSUP)) {
                    if (emitted >= max_depth) {
                        rc = pyf__fail(t, PYF_EDEPTH, "more than %llu Python "
                                       "frames (raise the depth limit to see "
                                       "more)", (unsigned long long)max_depth);
                        break;
                    }
                    int64_t instr = INT64_MIN;
                    if (code != NULL)
                        instr = code_index(ip, exe + o->code.co_code_adaptive);
                    uint32_t flags = 0;
                    if (owner == o->owner_generator)
                        flags |= PYF_FRAME_GENERATOR;
                    rc = sink->frame(sink->ctx, addr, exe, code, instr, flags);
                    if (rc != PYF_OK)
                        break;
                    emitted++;
                }
            }
        } else {
            rc = pyf__fail(t, PYF_ECORRUPT, "frame 0x%llx has an invalid "
                           "owner %d", (unsigned long long)addr, owner);
            break;
        }
        addr = prev;
    }

    if (rc == PYF_OK && w->base_frame != 0 && w->current_frame != 0 &&
        last != w->base_frame)
        rc = pyf__fail(t, PYF_ECORRUPT, "frame chain ended at 0x%llx, not at "
                       "the thread's base frame 0x%llx (the thread was "
                       "changing its stack, or the chain is corrupt)",
                       (unsigned long long)last,
                       (unsigned long long)w->base_frame);
    pyf__addrset_free(&seen);
    chunks_free(&cl);
    return rc;
}
