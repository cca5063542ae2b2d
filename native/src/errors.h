/*
 * errors.h - the library's private results and its message formatter
 * (error.c): what the decoders return besides the codes of pyframes.h, and
 * the one way every error message is written.
 */
#ifndef PYFRAMES_ERRORS_H
#define PYFRAMES_ERRORS_H

#include <stddef.h>

#define PYF__ERRBUF 512

/* Private result of the decoders: "the prefix read so far is too short,
 * read more".  Never returned through the public API. */
#define PYF__EMORE (-1000)
/* Private result of the code decoder: a running process freed or replaced
 * the code object while it was read (code.c). */
#define PYF__ESTALE (-1001)

/* Format a message into buf (always NUL-terminated, truncated to fit). */
void pyf__fmt(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* PYFRAMES_ERRORS_H */
