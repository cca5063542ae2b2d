/*
 * rt_target.c - a stand-in process for test_runtime_find.
 *
 *   rt_target READY_FD MODE
 *
 * MODE picks where a valid 3.15 _Py_DebugOffsets table is written:
 *   section  in the ".PyRuntime" ELF section (like _PyRuntime)
 *   decoy    in the section, plus a second valid table in .data at a lower
 *            address, so only the ELF path (not a scan) finds the section
 *   anon     only in an anonymous mapping; the section stays zero
 *   none     nowhere
 *   future   in the section, but claiming CPython 3.16.0 (unsupported)
 *   old      nowhere; a CPython 3.7 as its Py_GetVersion() buffer in .bss
 *            says it is ("3.7.17 (main, ...) [GCC ...]")
 *   garbled  nowhere; .bss holds strings that start like a version but are
 *            not Py_GetVersion's ("3.8.3 or higher ...", py-spy #731)
 *   debug312 a CPython 3.12.1 by its Py_Version, whose .PyRuntime section is
 *            not the size of 3.12's _PyRuntime (a debug build's layout)
 * Then it writes "ready 0xRUNTIME 0xDECOY\n" to READY_FD (0 for what is
 * absent; RUNTIME is the table the search must report) and blocks reading
 * stdin until EOF, so it dies with its parent's end of the pipe.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake_offsets.h"

#define RT_TABLE_CAP 2048

__attribute__((section(".PyRuntime"), used, aligned(8)))
uint8_t rt_pyruntime[4096];

/* CPython 3.11+'s Py_Version (an unsigned long holding PY_VERSION_HEX): set
 * by the mode "debug312". */
__attribute__((used)) volatile unsigned long Py_Version;

/* CPython's Py_GetVersion() and its static buffer in .bss, as
 * Python/getversion.c has them ("%.80s (%.80s) %.80s"), and other strings
 * in .bss beside it. */
static char version[250];
static char other[2][64];

__attribute__((used, noinline)) const char *Py_GetVersion(void)
{
    return version;
}

/* Initialised, so it lands in .data, ahead of the orphan .PyRuntime. */
__attribute__((used, aligned(8)))
uint8_t rt_decoy[RT_TABLE_CAP] = {1};

static int fill(uint8_t *buf)
{
    return pyf_test_fill_offsets(buf, RT_TABLE_CAP, 15, 0x030f02f0) != 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    uintptr_t runtime = 0, decoy = 0;
    const char *mode;
    char line[128], c;
    int fd, len;

    if (argc != 3) {
        fprintf(stderr, "usage: rt_target READY_FD "
                "section|decoy|anon|none|future|old|garbled|debug312\n");
        return 2;
    }
    fd = atoi(argv[1]);
    mode = argv[2];
    if (strcmp(mode, "section") == 0 || strcmp(mode, "decoy") == 0) {
        if (fill(rt_pyruntime) != 0)
            return 3;
        runtime = (uintptr_t)rt_pyruntime;
        if (strcmp(mode, "decoy") == 0) {
            if (fill(rt_decoy) != 0)
                return 3;
            decoy = (uintptr_t)rt_decoy;
        }
    } else if (strcmp(mode, "anon") == 0) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        uint8_t *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

        if (m == MAP_FAILED)
            return 4;
        /* Not at the start of the mapping or of a page. */
        if (fill(m + page + 40) != 0)
            return 3;
        runtime = (uintptr_t)(m + page + 40);
    } else if (strcmp(mode, "future") == 0) {
        if (pyf_test_fill_offsets(rt_pyruntime, RT_TABLE_CAP, 15, 0x031000f0) == 0)
            return 3;
        runtime = (uintptr_t)rt_pyruntime;
    } else if (strcmp(mode, "old") == 0) {
        snprintf(version, sizeof version, "%.80s (%.80s) %.80s", "3.7.17",
                 "main, Jan  1 2024, 00:00:00", "[GCC 12.2.0]");
        snprintf(other[0], sizeof other[0], "3.9 (a comment)");
    } else if (strcmp(mode, "garbled") == 0) {
        snprintf(version, sizeof version, "3.8.3 or higher is required (for %s)", "this");
        snprintf(other[0], sizeof other[0], "3.9.1 (main) [GCC 12] and more");
        snprintf(other[1], sizeof other[1], "x3.10.13 (main) [GCC 12.2.0]");
    } else if (strcmp(mode, "debug312") == 0) {
        Py_Version = 0x030c01f0; /* 3.12.1 */
    } else if (strcmp(mode, "none") != 0) {
        fprintf(stderr, "rt_target: unknown mode %s\n", mode);
        return 2;
    }

    len = snprintf(line, sizeof line, "ready 0x%jx 0x%jx\n", (uintmax_t)runtime,
                   (uintmax_t)decoy);
    if (write(fd, line, (size_t)len) != len)
        return 5;
    close(fd);
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}
