/*
 * fuzz_tasks.c - libFuzzer target: 3.14 and 3.15 images with asyncio tasks: task lists, names, coroutine chains, awaiter sets, running tasks.
 * See fuzz_drive.c for what is called and checked.
 */
#include "fuzz_drive.h"
#include "fuzz_image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_run(data, size, FZ_TASKS);
    return 0;
}
