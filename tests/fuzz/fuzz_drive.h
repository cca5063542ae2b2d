/*
 * fuzz_drive.h - run one fuzz input of a profile (fuzz_image.h) through the
 * public pyf_ calls, aborting with a message when an invariant breaks.
 */
#ifndef PYF_FUZZ_DRIVE_H
#define PYF_FUZZ_DRIVE_H

#include <stddef.h>
#include <stdint.h>

void fz_run(const uint8_t *data, size_t size, int profile);

/* The checks every fuzzer shares (a broken one aborts with "fuzz
 * invariant violated: ..."): rc is a PYF_E* code; s is NUL-terminated
 * within cap bytes, each of them read (its length returned); a failure
 * struct agrees with rc and says why it failed. */
void fz_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fz_check_rc(int rc, const char *call);
size_t fz_touch(const char *s, size_t cap, const char *what);
struct pyf_failure;
void fz_check_failure(const struct pyf_failure *f, int rc, const char *what);

#endif
