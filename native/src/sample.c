/*
 * sample.c - pyf_sample_run: many samples in one call, each thread's frame
 * keys counted by stack here, so that a binding pays one call per batch
 * instead of a call and a loop of its own per sample.  A sample is a
 * snapshot without its frames (snapshot.c); the newest snapshot of each
 * frame table is kept for the caller, who names the stacks' keys by it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "reads.h"
#include "snapshot.h"

typedef struct counter {
    pyf_sample_batch *b;
    uint32_t *slots;  /* open addressing: stack index + 1, 0 empty */
    uint32_t mask;
    uint32_t stacks_cap;  /* b->stacks_cap, at most half the slots */
    uint64_t table_ids[PYF_SAMPLE_MAX_TABLES]; /* of b->tables */
} counter;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: the drawn waits (state never 0) */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state ? *state : 0x9e3779b97f4a7c15u;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1du;
}

static uint64_t hash_stack(uint64_t table_id, const pyf_thread *th, const uint32_t *keys,
                           uint32_t n)
{
    /* four lanes, each key of four into its own: a deep stack hashes in a
     * quarter of one multiply chain's latency (a sample's whole stack is
     * hashed, hundreds of keys).  Four variables, not an array: compilers
     * kept the array in memory, each step waiting on a store and a load. */
    const uint64_t k = 0x100000001b3u;
    uint64_t h0 = table_id * 0x9e3779b97f4a7c15u ^ th->thread_id;
    uint64_t h1 = th->native_thread_id * 0xff51afd7ed558ccdu, h2 = n, h3 = 0x2545f4914f6cdd1du;
    uint32_t i = 0;
    for (; n - i >= 4; i += 4) {
        h0 = (h0 ^ keys[i]) * k;
        h1 = (h1 ^ keys[i + 1]) * k;
        h2 = (h2 ^ keys[i + 2]) * k;
        h3 = (h3 ^ keys[i + 3]) * k;
    }
    for (; i < n; i++)
        h0 = (h0 ^ keys[i]) * k;
    uint64_t r = h0;
    r = (r ^ (h1 ^ (h1 >> 31))) * 0xff51afd7ed558ccdu;
    r = (r ^ (h2 ^ (h2 >> 31))) * 0xff51afd7ed558ccdu;
    r = (r ^ (h3 ^ (h3 >> 31))) * 0xff51afd7ed558ccdu;
    return r ^ (r >> 29);
}

/* The index of the stack (table_id, thread, keys), a new one counted 0 if
 * it is not there yet (count_sample made room for it). */
static uint32_t stack_of(counter *c, uint64_t table_id, const pyf_thread *th,
                         const uint32_t *keys, uint32_t n)
{
    pyf_sample_batch *b = c->b;
    uint32_t at = (uint32_t)hash_stack(table_id, th, keys, n) & c->mask;
    for (uint32_t probes = 0; probes <= c->mask; probes++, at = (at + 1) & c->mask) {
        uint32_t slot = c->slots[at];
        if (slot == 0)
            break;
        const pyf_sample_stack *st = &b->stacks[slot - 1];
        if (st->table_id == table_id && st->thread_id == th->thread_id &&
            st->native_thread_id == th->native_thread_id && st->nkeys == n &&
            (n == 0 || memcmp(&b->keys[st->first_key], keys, n * sizeof *keys) == 0))
            return slot - 1;
    }
    uint32_t i = b->nstacks++;
    b->stacks[i] = (pyf_sample_stack){table_id, th->thread_id, th->native_thread_id,
                                      b->nkeys, n, 0, 0};
    if (n > 0)
        memcpy(&b->keys[b->nkeys], keys, n * sizeof *keys);
    b->nkeys += n;
    c->slots[at] = i + 1;
    return i;
}

static bool kept(const pyf_sample_batch *b, const pyf_thread *th)
{
    const uint32_t gil = PYF_THREAD_GIL_KNOWN | PYF_THREAD_HOLDS_GIL;
    return !(b->flags & PYF_SAMPLE_GIL) || (th->flags & gil) == gil;
}

static uint32_t code_slot(int rc)
{
    uint32_t i = rc < 0 ? (uint32_t)-(int64_t)rc : 0;
    return i < PYF_SAMPLE_CODES ? i : PYF_SAMPLE_CODES - 1;
}

/* Count one thread-sample (room for it was checked). */
static void count_thread(counter *c, const pyf_snapshot *s, const pyf_frame_table *ft,
                         const pyf_thread *th, uint64_t started)
{
    pyf_sample_batch *b = c->b;
    if (th->failure != NULL) {
        b->thread_errors++;
        b->thread_errors_by_code[code_slot(th->failure->code)]++;
        return;
    }
    if (th->nframes > 0 && ((uint64_t)th->first_frame + th->nframes > s->nframes ||
                            ft->frame_keys == NULL))
        return; /* past the snapshot's frames: nothing to count */
    /* (a thread without a Python frame is the empty stack, as a snapshot of
     * no frame at all has no keys array) */
    const uint32_t *keys = th->nframes > 0 ? ft->frame_keys + th->first_frame : NULL;
    uint32_t i = stack_of(c, ft->table_id, th, keys, th->nframes);
    b->stacks[i].count++;
    if (b->flags & PYF_SAMPLE_TIMES)
        b->times[b->ntimes++] = (pyf_sample_time){started, i, 0};
}

/* The index of table_id in c->table_ids (a new one if there is room);
 * UINT32_MAX when there is none. */
static uint32_t table_index(counter *c, uint64_t table_id)
{
    pyf_sample_batch *b = c->b;
    for (uint32_t i = 0; i < b->ntables; i++)
        if (c->table_ids[i] == table_id)
            return i;
    return b->ntables < PYF_SAMPLE_MAX_TABLES ? b->ntables : UINT32_MAX;
}

/* Count what sample s shows and keep s as its table's newest snapshot:
 * PYF_OK, PYF_SAMPLE_END_FULL when it might not fit (nothing counted: s
 * stays the caller's), PYF_EDEPTH when it would not fit even in empty
 * arrays. */
static int count_sample(pyf_target *t, counter *c, pyf_snapshot *s, uint64_t started)
{
    pyf_sample_batch *b = c->b;
    pyf_frame_table ft = {.struct_size = sizeof ft};
    pyf_snapshot_table(s, &ft);
    /* room for the worst case: every thread a new stack */
    uint64_t keys = 0;
    uint32_t threads = 0;
    for (uint32_t i = 0; i < s->nthreads; i++)
        if (kept(b, &s->threads[i])) {
            threads++;
            keys += s->threads[i].nframes;
        }
    uint32_t ti = table_index(c, ft.table_id);
    bool times = (b->flags & PYF_SAMPLE_TIMES) != 0;
    if (ti == UINT32_MAX || threads > c->stacks_cap - b->nstacks ||
        keys > b->keys_cap - b->nkeys || (times && threads > b->times_cap - b->ntimes)) {
        bool empty = b->nstacks == 0 && b->ntimes == 0 && b->ntables == 0;
        return empty ? pyf__fail(t, PYF_EDEPTH, "a sample of %u threads and %llu frames "
                                 "does not fit the sampler's arrays", threads,
                                 (unsigned long long)keys)
                     : (int)PYF_SAMPLE_END_FULL;
    }
    for (uint32_t i = 0; i < s->nthreads; i++)
        if (kept(b, &s->threads[i]))
            count_thread(c, s, &ft, &s->threads[i], started);
    if (ti == b->ntables) {
        c->table_ids[b->ntables++] = ft.table_id;
    } else {
        pyf__snapshot_recycle(t, b->tables[ti]);
    }
    b->tables[ti] = s;
    return PYF_OK;
}

/* Wait until when; false when a signal cut the wait short. */
static bool wait_until(uint64_t when)
{
    struct timespec ts = {(time_t)(when / 1000000000u), (long)(when % 1000000000u)};
    return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != EINTR;
}

int pyf_sample_run(pyf_target *t, pyf_sample_batch *b)
{
    if (t == NULL || b == NULL || b->stacks == NULL || b->keys == NULL ||
        b->stacks_cap == 0 || ((b->flags & PYF_SAMPLE_TIMES) && b->times == NULL) ||
        b->jitter_ppm > 1000000u || (b->flags & ~(PYF_SAMPLE_GIL | PYF_SAMPLE_TIMES)) != 0)
        return PYF_EINVAL;
    b->end = PYF_SAMPLE_END_DONE;
    b->samples = b->failed = b->thread_errors = 0;
    b->nstacks = b->nkeys = b->ntimes = b->ntables = 0;
    b->busy_ns = 0;
    memset(b->failed_by_code, 0, sizeof b->failed_by_code);
    memset(b->thread_errors_by_code, 0, sizeof b->thread_errors_by_code);
    memset(b->tables, 0, sizeof b->tables);
    /* slots: a power of two at least twice the stacks */
    uint32_t size = 16;
    while (size < 2 * (uint64_t)b->stacks_cap && size < (1u << 24))
        size <<= 1;
    counter c = {b, calloc(size, sizeof(uint32_t)), size - 1,
                 b->stacks_cap < size / 2 ? b->stacks_cap : size / 2, {0}};
    if (c.slots == NULL)
        return pyf__fail(t, PYF_ENOMEM, "out of memory for the sampler's stacks");
    const double spread = b->jitter_ppm / 1e6;
    for (;;) {
        uint64_t now = now_ns();
        if (now >= b->until_ns || (b->max_samples && b->samples >= b->max_samples))
            break;
        if (b->interval_ns && now < b->next_ns) {
            /* a sample due after until_ns is the next call's: this one
             * waits until then */
            if (!wait_until(b->next_ns < b->until_ns ? b->next_ns : b->until_ns)) {
                b->end = PYF_SAMPLE_END_SIGNAL;
                break;
            }
            if (b->next_ns >= b->until_ns)
                break;
        }
        uint64_t started = now_ns();
        pyf_snapshot *s = NULL;
        int rc = pyf__snapshot_take_bare(t, b->request, &s);
        if (rc != PYF_OK) {
            b->samples++;
            b->failed++;
            b->failed_by_code[code_slot(rc)]++;
        } else if ((rc = count_sample(t, &c, s, started)) != PYF_OK) {
            pyf__snapshot_recycle(t, s); /* not counted: the next call samples anew */
            b->busy_ns += now_ns() - started;
            if (rc != (int)PYF_SAMPLE_END_FULL) {
                free(c.slots);
                for (uint32_t i = 0; i < b->ntables; i++)
                    pyf_snapshot_free(b->tables[i]);
                memset(b->tables, 0, sizeof b->tables);
                b->ntables = 0;
                return rc;
            }
            b->end = PYF_SAMPLE_END_FULL;
            break;
        } else {
            b->samples++;
        }
        uint64_t done = now_ns();
        b->busy_ns += done - started;
        if (b->interval_ns) {
            double u = (double)(next_random(&b->rng) >> 11) * (1.0 / 9007199254740992.0);
            double factor = 1.0 - spread + 2.0 * spread * u;
            b->next_ns = (b->next_ns ? b->next_ns : started) +
                         (uint64_t)((double)b->interval_ns * factor);
            if (b->next_ns + b->interval_ns < done)
                b->next_ns = done; /* fell behind: do not burst to catch up */
        }
        if (rc == PYF_ENOPROC || rc == PYF_EFAULT) {
            b->end = PYF_SAMPLE_END_GONE;
            break;
        }
    }
    free(c.slots);
    for (uint32_t i = 0; i < b->ntables; i++)
        if (pyf__snapshot_make_frames(t, b->tables[i]) != PYF_OK) {
            /* a table the caller cannot name by is no use to it */
            for (uint32_t j = 0; j < b->ntables; j++)
                pyf_snapshot_free(b->tables[j]);
            memset(b->tables, 0, sizeof b->tables);
            b->ntables = 0;
            return PYF_ENOMEM;
        }
    return PYF_OK;
}
