/*
 * core_seeds.c - write the seed corpus of fuzz_core: small cores of every
 * shape the reader knows (core_image.h), valid and whole, for the fuzzer
 * to break.  The compressed seeds are these compressed (see
 * docs/fuzzing.md):
 *
 *     build/fuzz/tests/fuzz/core_seeds tests/fuzz/corpus/core
 */
#include <stdio.h>
#include <string.h>

#include "core_image.h"

static const uint8_t ID_X[20] = {0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                 11, 12, 13, 14, 15, 16, 17, 18, 19};

static int write_seed(const char *dir, const char *name, const ci_bytes *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (ci_write(path, b) != 0) {
        fprintf(stderr, "core_seeds: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    core_image ci;
    md_image m;
    ci_bytes img, lib;
    uint8_t data[0x1000], regs_data[8 * 27];
    uint64_t regs[27];
    int bad = 0;

    if (argc != 2) {
        fprintf(stderr, "usage: core_seeds DIR\n");
        return 2;
    }
    memset(data, 0, sizeof data);
    memcpy(data + 0x100, "xdebugpy", 8); /* a runtime cookie the search probes */
    for (int i = 0; i < 27; i++)
        regs[i] = 0x7ffc0000 + (uint64_t)i * 8;
    regs[15] = 202;
    memcpy(regs_data, regs, sizeof regs_data);
    ci_elf_file(&lib, 0x1000, ID_X, sizeof ID_X, 0xab);

    ci_init(&ci);
    ci_load(&ci, 0x10000, 0x2000, 6, data, sizeof data);
    ci_load(&ci, 0x400000, 0x3000, 5, lib.p, lib.len);
    ci_load(&ci, 0x403000, 0x1000, 6, NULL, 0);
    ci_load(&ci, 0x500000, 0x1000, 4, NULL, 0);
    ci_file(&ci, 0x400000, 0x403000, 0, "/lib/libx.so");
    ci_file(&ci, 0x403000, 0x404000, 3, "/lib/libx.so");
    ci_file(&ci, 0x500000, 0x501000, 0, "/lib/fifo.so");
    ci_prpsinfo(&ci, 100, "python3 app.py");
    ci_prstatus(&ci, 100, 11, regs);
    ci_siginfo(&ci, 11, 1, 0x10);
    ci_prstatus(&ci, 101, 0, NULL);
    ci_auxv_entry(&ci, 0x400100);
    ci_build(&ci, &img);
    ci_release(&ci);
    bad |= write_seed(argv[1], "seed-elf", &img);
    ci_free(&img);

    md_init(&m);
    m.pid = 300;
    md_memory(&m, 0x10000, data, sizeof data);
    md_memory(&m, 0x400000, lib.p, lib.len);
    m.thread[0].tid = 300;
    m.thread[0].rip = 0x400123;
    m.thread[0].rsp = 0x7ffc0000;
    m.thread[1].tid = 301;
    m.nthread = 2;
    m.exc_tid = 301;
    m.exc_code = 6;
    m.exc_flags = 0x4c4c4442;
    m.maps = "00010000-00012000 rw-p 00000000 00:00 0 \n"
             "00400000-00403000 r-xp 00000000 08:01 1234   /lib/libx.so\n"
             "00500000-00501000 r--p 00000000 08:01 99   /lib/fifo.so\n";
    md_build(&m, &img);
    md_release(&m);
    bad |= write_seed(argv[1], "seed-minidump", &img);
    ci_free(&img);
    ci_free(&lib);
    return bad;
}
