/*
 * test_pthread_tid.c - the OS thread of a thread state that keeps only its
 * pthread handle (3.8-3.10; pthread_tid.c): where a main thread's struct
 * pthread holds the pid (one aligned word, else not known), and a core's
 * threads matched by their TLS base (x86-64's fs_base), a base two
 * threads share matching neither.
 */
#include <stdlib.h>
#include <string.h>

#include "../../native/src/pthread_tid.h"
#include "../../native/src/target.h"
#include "check.h"

static void put32(uint8_t *b, size_t at, uint32_t v)
{
    memcpy(b + at, &v, 4);
}

static void calibration_offset(void)
{
    check_begin("the one aligned word holding the pid");
    uint8_t b[PYF__PTHREAD_SCAN];
    memset(b, 0, sizeof b);
    /* glibc 2.36 keeps tid at 720; other words hold other numbers */
    put32(b, 720, 4242);
    put32(b, 16, 4243);
    put32(b, 1000, 17);
    CHECK_EQ_INT(pyf__pthread_tid_offset(b, sizeof b, 4242), 720);
    /* a pid in an unaligned place is no field */
    memcpy(b + 802, &(uint32_t){4244}, 4);
    CHECK_EQ_INT(pyf__pthread_tid_offset(b, sizeof b, 4244), -1);
    /* nowhere, twice, or a pid of 0: not known */
    CHECK_EQ_INT(pyf__pthread_tid_offset(b, sizeof b, 999), -1);
    put32(b, 1504, 4242);
    CHECK_EQ_INT(pyf__pthread_tid_offset(b, sizeof b, 4242), -1);
    CHECK_EQ_INT(pyf__pthread_tid_offset(b, sizeof b, 0), -1);
    /* the last word of the range counts, none past it */
    memset(b, 0, sizeof b);
    put32(b, sizeof b - 4, 77);
    CHECK_EQ_INT(pyf__pthread_tid_offset(b, sizeof b, 77), (int64_t)sizeof b - 4);
    CHECK_EQ_INT(pyf__pthread_tid_offset(b, sizeof b - 1, 77), -1);
}

static pyf_core_thread core_thread(uint64_t tid, uint64_t fs_base)
{
    pyf_core_thread th;
    memset(&th, 0, sizeof th);
    th.tid = tid;
    th.flags = PYF_CORE_THREAD_REGS;
    th.nregs = 27;
    th.regs[21] = fs_base; /* user_regs_struct's fs_base */
    return th;
}

static void core_tls(void)
{
    check_begin("a core's threads by their TLS base");
    pyf_core_thread threads[] = {core_thread(100, 0x7f0000001000), core_thread(101, 0x7f0000002000),
                                 core_thread(102, 0x7f0000003000), core_thread(103, 0x7f0000003000)};
    pyf_target *t = calloc(1, sizeof *t);
    REQUIRE(t != NULL);
    t->io.pid = -1;
    REQUIRE(pyf__os_threads_core(t, threads, 4, 62, 100) == PYF_OK);
    CHECK_EQ_INT(pyf__os_tid(t, 0x7f0000001000), 100);
    CHECK_EQ_INT(pyf__os_tid(t, 0x7f0000002000), 101);
    CHECK_EQ_INT(pyf__os_tid(t, 0x7f0000003000), 0); /* two threads: neither */
    CHECK_EQ_INT(pyf__os_tid(t, 0x7f0000004000), 0);
    CHECK_EQ_INT(pyf__os_tid(t, 0), 0);
    CHECK(pyf__os_tid_is_main(t, 100));
    CHECK(!pyf__os_tid_is_main(t, 101) && !pyf__os_tid_is_main(t, 0));
    pyf__os_threads_free(&t->os_threads);
    free(t);

    /* another machine keeps its TLS base elsewhere: no match by fs_base's
     * place (and no reader to calibrate with: not known) */
    t = calloc(1, sizeof *t);
    REQUIRE(t != NULL);
    t->io.pid = -1;
    REQUIRE(pyf__os_threads_core(t, threads, 4, 183, 100) == PYF_OK);
    CHECK_EQ_INT(pyf__os_tid(t, 0x7f0000001000), 0);
    pyf__os_threads_free(&t->os_threads);
    free(t);
}

int main(void)
{
    calibration_offset();
    core_tls();
    return check_end();
}
