/* read_floor.c - one process_vm_readv of a set of ranges of another
 * process, nothing else: the floor under any reader that looks at those
 * ranges once per call.  Built and loaded by bench_read_floor.py:
 *   gcc -O2 -shared -fPIC tests/bench/read_floor.c -o /tmp/read_floor.so */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>

#define MAX_RANGES 8

static int pid;
static int n;
static size_t total;
static struct iovec local[MAX_RANGES], remote[MAX_RANGES];
static char buf[1 << 16];

/* The ranges the next calls of read_ranges read (addrs[i], lens[i]);
 * -1 when they do not fit. */
int configure(int target, int count, const uint64_t *addrs, const uint64_t *lens)
{
    if (count < 1 || count > MAX_RANGES)
        return -1;
    size_t off = 0;
    for (int i = 0; i < count; i++) {
        if (lens[i] > sizeof buf - off)
            return -1;
        local[i].iov_base = buf + off;
        local[i].iov_len = (size_t)lens[i];
        remote[i].iov_base = (void *)(uintptr_t)addrs[i];
        remote[i].iov_len = (size_t)lens[i];
        off += (size_t)lens[i];
    }
    pid = target;
    n = count;
    total = off;
    return 0;
}

/* One read of them all: 0 when every byte came. */
int read_ranges(void)
{
    return process_vm_readv(pid, local, (unsigned long)n, remote, (unsigned long)n, 0) ==
                   (ssize_t)total
               ? 0
               : -1;
}

/* A call that makes no system call: what calling through ctypes costs. */
int nothing(void)
{
    return 0;
}
