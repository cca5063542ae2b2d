/* sample_time.c - the library's sampling loop alone (pyf_sample_run, the
 * main thread, as fast as it can) on a live PID for 3 s: samples per
 * second, the library's time per sample, and its counters per sample
 * (reader calls, ranges, bytes, retried walks, threads not read to the
 * end).  With "cache" the target uses the 3.15 frame cache (PYF_CACHE_ON).
 *   gcc -O2 -Inative/include tests/bench/sample_time.c -Lbuild/bench/native -lpyframes \
 *       -Wl,-rpath,$PWD/build/bench/native -o /tmp/sample_time && \
 *       /tmp/sample_time PID [cache] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PYF_STATIC_API /* pyf_sample_run, as the bundled binding */
#include "pyframes.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pyf_sample_stack stacks[4096];
static uint32_t keys[1u << 20];

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PID [cache]\n", argv[0]);
        return 2;
    }
    pyf_target *t;
    pyf_failure f = {.struct_size = sizeof f};
    if (pyf_target_open_pid(atoi(argv[1]), 0, NULL, &t, &f) != PYF_OK) {
        fprintf(stderr, "open: %s\n", f.detail);
        return 1;
    }
    uint32_t effective;
    if (argc > 2 && strcmp(argv[2], "cache") == 0)
        pyf_target_set_cache(t, PYF_CACHE_ON, &effective);
    /* the main thread, as the command line samples it */
    pyf_snapshot_request req = {.struct_size = sizeof req, .flags = PYF_SNAP_ONE_THREAD,
                                .native_tid = (uint64_t)atoi(argv[1])};
    pyf_sample_batch b;
    memset(&b, 0, sizeof b);
    b.request = &req;
    b.stacks = stacks;
    b.stacks_cap = sizeof stacks / sizeof stacks[0];
    b.keys = keys;
    b.keys_cap = sizeof keys / sizeof keys[0];
    uint64_t samples = 0, failed = 0, thread_errors = 0, busy = 0, start = now_ns();
    while (now_ns() - start < 3000000000u) {
        b.until_ns = now_ns() + 50000000u;
        if (pyf_sample_run(t, &b) != PYF_OK)
            break;
        samples += b.samples;
        failed += b.failed;
        thread_errors += b.thread_errors;
        busy += b.busy_ns;
        for (uint32_t i = 0; i < b.ntables; i++)
            pyf_snapshot_free(b.tables[i]);
    }
    double n = samples ? (double)samples : 1;
    pyf_stats s;
    pyf_target_stats(t, &s);
    printf("%llu samples, %.0f/s, %.2f us of library each; %llu failed, %llu threads not "
           "read to the end\n", (unsigned long long)samples, samples / 3.0, busy / 1e3 / n,
           (unsigned long long)failed, (unsigned long long)thread_errors);
    printf("per sample: %.2f reader calls, %.2f ranges, %.0f bytes, %.3f retried walks\n",
           s.read_calls / n, s.read_ranges / n, s.bytes_read / n, s.retried_walks / n);
    printf("per sample: %.3f cache hits, %.3f partial, %.3f misses, %.3f anchor writes, "
           "%.3f tops from the last copy, %.3f same reads\n",
           s.frame_cache_hits / n, s.frame_cache_partial_hits / n, s.frame_cache_misses / n,
           s.anchor_writes / n, s.top_replaced / n, s.same_reads / n);
    pyf_target_close(t);
    return 0;
}
