/* snapshot_time.c - minimum time of pyf_snapshot_take on a live PID (library only).
 *   gcc -O2 -Inative/include tests/bench/snapshot_time.c -Lbuild/bench/native -lpyframes \
 *       -Wl,-rpath,$PWD/build/bench/native -o /tmp/snapshot_time && /tmp/snapshot_time PID */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "pyframes.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    pyf_target *t;
    pyf_snapshot *s;
    pyf_failure f = {.struct_size = sizeof f};
    double best = 1e9;

    if (argc != 2) {
        fprintf(stderr, "usage: %s PID\n", argv[0]);
        return 2;
    }
    if (pyf_target_open_pid(atoi(argv[1]), 0, NULL, &t, &f) != PYF_OK) {
        puts(f.detail);
        return 1;
    }
    pyf_snapshot_take(t, NULL, &s);
    pyf_snapshot_free(s);
    for (int i = 0; i < 200; i++) {
        double a = now();
        pyf_snapshot_take(t, NULL, &s);
        double b = now() - a;
        if (b < best)
            best = b;
        pyf_snapshot_free(s);
    }
    printf("min warm snapshot %.3f ms\n", best * 1e3);
    pyf_target_close(t);
    return 0;
}
