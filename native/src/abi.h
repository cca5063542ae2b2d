/*
 * abi.h - the caller's structs copied in and out of the library (abi.c): an
 * older or newer caller's struct normalised, a result handed back as far as
 * the caller's struct goes, and failures reported through the caller's
 * pyf_failure.  Nothing here is exported; cross-file names start with pyf__.
 */
#ifndef PYFRAMES_ABI_H
#define PYFRAMES_ABI_H

#include <stdbool.h>
#include <stddef.h>

#include "api.h"

/* Copy the caller's struct at in (whose first field is its struct_size)
 * into local (local_size = the library's sizeof), zero-filling what an
 * older caller lacks; see "ABI policy" in pyframes.h.  PYF_EINVAL below
 * v0_size, PYF_ENOTSUP for a newer struct with non-zero unknown bytes. */
int pyf__struct_in(const void *in, size_t v0_size, void *local,
                   size_t local_size, const char *name, char *err,
                   size_t errlen);
/* Copy the library's result (local, whose first field is struct_size) into
 * the caller's struct out, whose struct_size says how much it holds;
 * PYF_EINVAL below v0_size. */
int pyf__struct_out(void *out, size_t v0_size, void *local, size_t local_size);
/* The start of a call that reports through a failure out-parameter: f (the
 * call's own) cleared, and whether the caller's is usable: NULL (no detail
 * wanted) or a struct_size of at least PYF_FAILURE_SIZE_V0. */
bool pyf__failure_begin(const pyf_failure *caller, pyf_failure *f);
/* Set f->code = rc (an empty detail on success, the code's message when
 * none was written) and hand f to the caller's struct, when given, as far
 * as its struct_size goes.  Returns rc. */
int pyf__failure_out(pyf_failure *caller, pyf_failure *f, int rc);

/* A caller's reader, normalised (pyf__struct_in) and checked. */
int pyf__reader_in(const pyf_reader *in, pyf_reader *out, char *err,
                   size_t errlen);

#endif /* PYFRAMES_ABI_H */
