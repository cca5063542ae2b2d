/*
 * fuzz_walk.c - libFuzzer target: CPython 3.13, 3.14 and 3.15 images: threads, frames, generators, entry frames, code objects, strings and line tables.
 * See fuzz_drive.c for what is called and checked.
 */
#include "fuzz_drive.h"
#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run(data, size, FZ_WALK);
    return 0;
}
