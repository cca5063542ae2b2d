/*
 * fuzz_image.h - a synthetic CPython image built and mutated as a fuzz
 * input dictates.
 *
 * The input is read front to back (fz_in); bytes past its end read as 0, so
 * every input, even an empty one, builds a valid image.  fz_build lays out
 * code objects (names of any kind of str, encoded or raw line tables),
 * interpreters, thread states, frames (data stack, generators, entry
 * frames) and, for the asyncio profiles, the .AsyncioDebug table with tasks,
 * coroutine chains and awaiter sets (tests/c/fake_target builders).  Every
 * object it makes is filed by kind so that fz_mutate can aim a write at "the
 * previous pointer of frame 3" or "the length of a str" and can write the
 * address of another object (chains that loop, point sideways or at
 * garbage).  Nothing here aborts on what the input says: writes go only to
 * mapped memory, builders get only arguments they accept.
 */
#ifndef PYF_FUZZ_IMAGE_H
#define PYF_FUZZ_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "fake_target.h"

typedef struct fz_in {
    const uint8_t *p;
    size_t n;
} fz_in;

uint8_t fz_u8(fz_in *in);
uint16_t fz_u16(fz_in *in);
uint64_t fz_u64(fz_in *in);

/* What an input builds: the profile is the fuzz target's. */
enum fz_profile {
    FZ_WALK,  /* 3.13 / 3.14 / 3.15: threads, frames, generators, code */
    FZ_TASKS, /* 3.14 / 3.15 with asyncio tasks */
    FZ_CACHE  /* 3.15, the frame cache ON (with a writer) or READ_ONLY */
};

/* Kinds of objects a mutation aims at. */
enum fz_kind {
    K_ANY,       /* any object a builder recorded (fake_object) */
    K_FRAME,
    K_CODE,
    K_STR,
    K_LINETABLE, /* the bytes objects of co_linetable */
    K_TSTATE,
    K_INTERP,
    K_OFFSETS,   /* the _Py_DebugOffsets table at the start of _PyRuntime */
    K_TASK,
    K_CORO,
    K_ATABLE,    /* the .AsyncioDebug table */
    K_SET,
    K_NKINDS
};

#define FZ_MAX_OBJS 96
#define FZ_MAX_THREADS 6

typedef struct fz_obj {
    uint64_t addr;
    size_t size;
} fz_obj;

typedef struct fz_image {
    fake_target *ft;
    int minor;
    fz_obj objs[K_NKINDS][FZ_MAX_OBJS];
    size_t nobjs[K_NKINDS];
    fake_thread *threads[FZ_MAX_THREADS];
    uint64_t native_tids[FZ_MAX_THREADS];
    size_t nthreads;
    uint64_t codes[4];
    int code_ncu[4];
    size_t ncodes;
    uint64_t asyncio_table; /* 0 when none */
    int corrupted;          /* a mutation (not a CPython-like change) was made */
} fz_image;

/* Build the image for profile (the version and everything else from in). */
void fz_build(fz_image *im, int profile, fz_in *in);
void fz_image_free(fz_image *im);

/* Up to max mutations as in says (each one a write of 1/2/4/8 bytes into an
 * object of some kind); returns how many were made. */
unsigned fz_mutate(fz_image *im, fz_in *in, unsigned max);

/* Changes CPython itself makes between two snapshots (3.15 cache
 * profile): calls, returns (moving the anchor like CPython), a generator
 * frame on top, another profiler moving the anchor. */
void fz_evolve(fz_image *im, fz_in *in);

#endif
