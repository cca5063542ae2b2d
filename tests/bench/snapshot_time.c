/* snapshot_time.c - minimum time of a warm snapshot on a live PID (library only):
 * pyf_snapshot_take + free, and pyf_snapshot_take_copy as the Python binding
 * calls it (+ free when the library left a snapshot).  With "cache" the
 * target uses the 3.15 frame cache (PYF_CACHE_ON); with "gil" each snapshot
 * asks for PYF_SNAP_GIL (what py-sample --mode gil asks on 3.13/3.14).
 *   gcc -O2 -Inative/include tests/bench/snapshot_time.c -Lbuild/bench/native -lpyframes \
 *       -Wl,-rpath,$PWD/build/bench/native -o /tmp/snapshot_time && \
 *       /tmp/snapshot_time PID [cache] [gil] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PYF_STATIC_API /* pyf_snapshot_take_copy, as the bundled binding */
#include "pyframes.h"

#define ROUNDS 50
#define PER_ROUND 200

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t buf[1024]; /* the copy's buffer, 8-byte aligned */
static pyf_snapshot_request request = {.struct_size = sizeof request};

static void take_plain(pyf_target *t)
{
    pyf_snapshot *s;
    if (pyf_snapshot_take(t, &request, &s) == PYF_OK)
        pyf_snapshot_free(s);
}

static void take_copy(pyf_target *t)
{
    pyf_snapshot_copy *c = (pyf_snapshot_copy *)buf;
    if (pyf_snapshot_take_copy(t, c) == PYF_OK && c->out != NULL)
        pyf_snapshot_free(c->out);
}

/* The best round's time per call, in microseconds. */
static double best_of(pyf_target *t, void (*take)(pyf_target *))
{
    double best = 1e9;
    take(t);
    for (int r = 0; r < ROUNDS; r++) {
        double a = now();
        for (int i = 0; i < PER_ROUND; i++)
            take(t);
        double b = (now() - a) / PER_ROUND;
        if (b < best)
            best = b;
    }
    return best * 1e6;
}

int main(int argc, char **argv)
{
    pyf_target *t;
    pyf_failure f = {.struct_size = sizeof f};

    int cache = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "cache") == 0)
            cache = 1;
        else if (strcmp(argv[i], "gil") == 0)
            request.flags |= PYF_SNAP_GIL;
        else
            argc = 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s PID [cache] [gil]\n", argv[0]);
        return 2;
    }
    if (pyf_target_open_pid(atoi(argv[1]), 0, NULL, &t, &f) != PYF_OK) {
        puts(f.detail);
        return 1;
    }
    uint32_t mode = PYF_CACHE_OFF;
    if (cache)
        pyf_target_set_cache(t, PYF_CACHE_ON, &mode);
    pyf_snapshot_copy *c = (pyf_snapshot_copy *)buf;
    c->cap = sizeof buf;
    c->request = &request;
    c->kept = 0;
    printf("cache %s%s: min warm pyf_snapshot_take %.2f us, pyf_snapshot_take_copy %.2f us\n",
           mode == PYF_CACHE_ON ? "on" : "off", request.flags ? ", PYF_SNAP_GIL" : "", best_of(t, take_plain), best_of(t, take_copy));
    pyf_target_close(t);
    return 0;
}
