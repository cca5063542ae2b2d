/*
 * fault_sweeps.h - the fault-injection sweeps of test_faults, over any
 * image a builder makes (fault_sweeps.c).
 */
#ifndef PYF_TEST_FAULT_SWEEPS_H
#define PYF_TEST_FAULT_SWEEPS_H

#include "fake_target.h"

typedef struct sweep_image {
    const char *label;          /* names the checks: "3.14", "3.14t" */
    int minor;                  /* 15: the frame cache is swept too */
    fake_target *(*build)(const struct sweep_image *im); /* a fresh image */
    const void *arg;            /* the builder's own */
    uint64_t one_tid;           /* a thread's native id, for one-thread snapshots */
    unsigned seed;              /* varies the random corruption */
} sweep_image;

void sweep_snapshot(const sweep_image *im, int with_readv, int code, int sticky, int cache);
void sweep_open(const sweep_image *im);
void short_reads(const sweep_image *im);
void random_corruption(const sweep_image *im, unsigned iterations, double max_seconds);
/* All of the above, as test_faults runs them (iterations 0: no random
 * corruption). */
void sweep_all(const sweep_image *im, unsigned iterations, double max_seconds);

#endif
