/*
 * reads.h - reads of target memory and the prefetch (read.c).
 */
#ifndef PYFRAMES_READS_H
#define PYFRAMES_READS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"

/* ==== how the target is read ============================================ */
/* pyf_target.io: the reader and its bookkeeping: who made it, the calls
 * made through it, the counts the caller sees and the last failure. */
typedef struct pyf__target_io {
    pyf_reader reader;
    bool owns_pid_reader;    /* the PID reader, made by the open: closed with it */
    int pid;                 /* -1 for a caller-supplied reader */
    /* reader calls made, never reset (stats.read_calls counts the same for
     * the caller, who may reset it): whether a walk read anything itself */
    uint64_t calls;
    /* A running target's reader call that took longer than stall_ns, plus
     * a nanosecond a byte, was stalled (pyf__read_stalled): copies it made
     * may hold memory of two moments.  0: calls are not timed. */
    uint64_t stall_ns;
    uint64_t call_ns, call_bytes; /* the last timed call: its time and bytes */
    pyf_stats stats;
    pyf_failure fail;        /* the last failure (pyf_target_failure) */
} pyf__target_io;

/* ==== prefetch (read.c) ================================================== */
typedef struct pyf__prefetch {
    /* the ranges read at the start of this snapshot, and their results */
    pyf_iovec *iov;
    int *status;             /* 0: not served yet */
    uint32_t n, cap_iov, cap_status;
    uint8_t *buf;
    uint64_t buf_cap;
    /* the ranges this snapshot reads: the next one's prefetch */
    struct pyf__range { uint64_t addr, len; } *plan;
    uint32_t nplan, cap_plan;
    uint64_t plan_bytes;
    bool active;             /* within a snapshot */
    bool stalled;            /* its call was stalled (pyf__read_stalled) */
    /* the last read of the ranges (kept after pyf__prefetch_end): how
     * many, and whether each was read whole */
    uint32_t nread;
    bool read_ok;
} pyf__prefetch;
void pyf__prefetch_begin(pyf_target *t);
void pyf__prefetch_end(pyf_target *t);
/* Reads from now on bypass the prefetched copies (they are of the start of
 * the snapshot) until pyf__prefetch_resume with what this returned. */
uint32_t pyf__prefetch_pause(pyf_target *t);
void pyf__prefetch_resume(pyf_target *t, uint32_t n);
void pyf__prefetch_free(pyf__prefetch *p);
/* The plan so far, and back to it: a walk made again plans its own reads
 * in place of the try it replaces (the next prefetch makes one try's). */
uint32_t pyf__plan_mark(const pyf_target *t);
void pyf__plan_truncate(pyf_target *t, uint32_t mark);
/* The bytes of [addr, addr+len) where the prefetch already holds them, without
 * copying (the range then counts as read, and is planned for the next
 * snapshot); NULL otherwise.  Valid until the snapshot ends. */
const uint8_t *pyf__read_view(pyf_target *t, uint64_t addr, size_t len);

/* ==== reads (read.c) ======================================================
 * All target reads go through these: they count, and on failure write a
 * detail "reading WHAT at 0xADDR (N bytes): reason" into t->io.fail. */
int pyf__read(pyf_target *t, uint64_t addr, void *dst, size_t len,
              const char *what);
/* Several ranges at once (one reader call when the reader has readv).
 * status[i] receives each range's result.  No detail is written. */
int pyf__readv(pyf_target *t, const pyf_iovec *iov, size_t n, int *status);
/* Record a failed read in f: its facts (what, address, length, the reader's
 * own message) and, for C callers, one line "reading WHAT at 0xADDR (N
 * bytes): reason [reader: its own message]".  Returns rc. */
int pyf__read_failed(pyf_failure *f, const pyf_reader *r, int rc,
                     const char *what, uint64_t addr, size_t len);
/* Record a failure that is not a read (detail formatted).  Returns code. */
int pyf__failure_set(pyf_failure *f, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Record a failure that is not a read in t->io.fail and return code. */
int pyf__fail(pyf_target *t, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* f says success, every field empty: what a call that succeeded leaves
 * (nothing formatted: a snapshot clears t->io.fail twice). */
void pyf__failure_clear(pyf_failure *f);
/* A read without failure detail, served from the prefetch when it holds
 * the range (the walk's speculative reads). */
int pyf__read_quiet(pyf_target *t, uint64_t addr, void *dst, size_t len);
/* A read made now, never served from the prefetch (planned for the next
 * one like any other). */
int pyf__read_fresh(pyf_target *t, uint64_t addr, void *dst, size_t len);
/* The most ranges read right after copies (pyf__read_copies), or
 * together (pyf__read_after). */
#define PYF__THEN_MAX 4
/* [addr, addr+len) copied PYF__COPIES times, back to back in one reader
 * call when the reader batches, into dst[0], dst[1], ..., then the nthen
 * ranges of then[] in order (planned in that order for the next snapshot:
 * its prefetch makes every copy in its one call).  A failed then-read
 * fails the call. */
int pyf__read_copies(pyf_target *t, uint64_t addr, void *const *dst, size_t len,
                     const pyf_iovec *then, size_t nthen);
/* The n ranges of iov (at most PYF__THEN_MAX), read after what was read
 * before in this snapshot: from the prefetch when it holds every one of
 * them (read in its one call, in that order), else all in one reader call
 * now.  PYF_OK, or the first failure. */
int pyf__read_after(pyf_target *t, const pyf_iovec *iov, size_t n);
/* A running target's reader call stalled: it took longer than
 * PYF__STALL_NS plus a nanosecond a byte read.  The copies of a stack are
 * made back to back in one call so that a change while they are made shows
 * as a difference between them; a reader stopped for milliseconds in the
 * middle of a copy (its vCPU or thread preempted) lets a target that swaps
 * between two call chains at the same addresses run through both, and
 * each copy can then hold one chain's callers under the other's callee the
 * same way (seen: 1 sample in 10^5-10^6 of targets/aba_chains.py on a
 * loaded 2-core machine, every one in a call stalled 28 ms).  No call takes
 * that long unstalled: a stalled call's copies are made again.  Only timed
 * while t->stall_ns is not 0. */
#define PYF__STALL_NS 500000u
bool pyf__read_stalled(const pyf_target *t);
/* The target's reader called now: no prefetch, no plan, no detail (counted
 * in stats and in t->io.calls). */
int pyf__read_now(pyf_target *t, uint64_t addr, void *dst, size_t len);
/* A reader's raw call with counting only (stats may be NULL): for reads
 * without a target (pyf__offsets_load). */
int pyf__raw_read(const pyf_reader *r, pyf_stats *stats, uint64_t addr,
                  void *dst, size_t len);

static inline uint64_t pyf__ld64(const uint8_t *p)
{
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return v;
}
static inline uint32_t pyf__ld32(const uint8_t *p)
{
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}

#endif /* PYFRAMES_READS_H */
