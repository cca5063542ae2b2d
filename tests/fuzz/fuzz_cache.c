/*
 * fuzz_cache.c - libFuzzer target: 3.15 images with the frame cache ON (a writing reader) or READ_ONLY, changed by calls and returns between snapshots.
 * See fuzz_drive.c for what is called and checked.
 */
#include "fuzz_drive.h"
#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run(data, size, FZ_CACHE);
    return 0;
}
