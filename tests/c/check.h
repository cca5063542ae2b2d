/*
 * check.h - the assertions of the C unit tests, shared by all of them.
 *
 * A failed CHECK* prints where and why and counts; the test goes on.
 * REQUIRE stops the test (later steps depend on it).  check_begin() names
 * the case in progress; check_end() prints the summary and returns the exit
 * status.
 */
#ifndef PYFRAMES_TEST_CHECK_H
#define PYFRAMES_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pyframes.h"

extern int check_failures;

void check_begin(const char *name);
const char *check_case(void); /* the name given to check_begin */
int check_end(void);

#define CHECK_FAIL_(...)                                                       \
    do {                                                                       \
        fprintf(stderr, "%s:%d: CHECK failed: ", __FILE__, __LINE__);          \
        fprintf(stderr, __VA_ARGS__);                                          \
        fputc('\n', stderr);                                                   \
        check_failures++;                                                      \
    } while (0)

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond))                                                           \
            CHECK_FAIL_("%s", #cond);                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__,   \
                    #cond);                                                    \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            check_failures++;                                                  \
        }                                                                      \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                     \
    do {                                                                       \
        long long ce_a_ = (long long)(a), ce_b_ = (long long)(b);              \
        if (ce_a_ != ce_b_)                                                    \
            CHECK_FAIL_("%s == %s (%lld != %lld)", #a, #b, ce_a_, ce_b_);      \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                     \
    do {                                                                       \
        const char *cs_a_ = (a), *cs_b_ = (b);                                 \
        if (cs_a_ == NULL || cs_b_ == NULL || strcmp(cs_a_, cs_b_) != 0)       \
            CHECK_FAIL_("%s == %s (\"%s\" != \"%s\")", #a, #b,                 \
                        cs_a_ ? cs_a_ : "(null)", cs_b_ ? cs_b_ : "(null)");   \
    } while (0)

/* A PYF_E* result, named in the message. */
#define CHECK_RC(got, want)                                                    \
    do {                                                                       \
        int got_ = (got), want_ = (want);                                      \
        if (got_ != want_)                                                     \
            CHECK_FAIL_("%s = %s (%d), expected %s (%d)", #got,                \
                        pyf_error_name(got_), got_, pyf_error_name(want_),     \
                        want_);                                                \
    } while (0)

#define CHECK_ADDR(got, want)                                                  \
    do {                                                                       \
        uint64_t got_ = (got), want_ = (want);                                 \
        if (got_ != want_)                                                     \
            CHECK_FAIL_("%s = 0x%" PRIx64 ", expected 0x%" PRIx64, #got,       \
                        got_, want_);                                          \
    } while (0)

#define REQUIRE(cond)                                                          \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                    \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

#endif /* PYFRAMES_TEST_CHECK_H */
