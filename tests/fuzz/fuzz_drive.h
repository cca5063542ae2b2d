/*
 * fuzz_drive.h - run one fuzz input of a profile (fuzz_image.h) through the
 * public pyf_ calls, aborting with a message when an invariant breaks.
 */
#ifndef PYF_FUZZ_DRIVE_H
#define PYF_FUZZ_DRIVE_H

#include <stddef.h>
#include <stdint.h>

void fz_run(const uint8_t *data, size_t size, int profile);

#endif
