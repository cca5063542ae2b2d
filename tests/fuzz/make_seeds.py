#!/usr/bin/env python3
"""Write the seed corpus of the fuzzers: tests/fuzz/corpus/<target>/seed-*.

Each seed is a valid image of one version and shape, read exactly as
fuzz_image.c (fz_build) and fuzz_drive.c (fz_run) consume their input, with
no mutation: the fuzzer starts from the structures it should then break.
Regression inputs (crashes found and fixed) sit beside them as
regression-*; this script leaves those alone.

    python3 tests/fuzz/make_seeds.py        # rewrites the seed-* files
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def s_default():
    return [0]                      # a shared ASCII default name


def s_text(cls, codes):
    """A str of len(codes) code points of class cls (see make_str)."""
    assert len(codes) <= 24 and 0 <= cls <= 5
    return [cls * 25 + len(codes)] + list(codes)


def linetable_encoded(runs):
    """runs: (a, b, c) byte triples (see make_linetable)."""
    assert 1 <= len(runs) <= 6
    return [(len(runs) - 1) * 2] + [x for r in runs for x in r]


def linetable_raw(data, ncu_byte):
    assert len(data) < 48
    return [1 + 2 * len(data)] + list(data) + [ncu_byte]


def code(filename, qualname, same_name, firstline, linetable, name=None):
    out = filename + qualname + [1 if same_name else 0]
    if not same_name:
        out += name or s_default()
    return out + [firstline] + linetable


SIMPLE_LT = linetable_encoded([(3, 4, 2), (4, 5, 0x81), (2, 20, 7)])


def codes_plain(n):
    return [x for _ in range(n) for x in code(s_default(), s_default(), True, 10, SIMPLE_LT)]


def codes_mixed():
    return (code(s_text(0, b"app/main.py"), s_text(1, [0xE9, 0x61, 0xFC]), True, 1, SIMPLE_LT)
            + code(s_text(2, [3, 7, 0x40]), s_text(3, [1, 2]), False, 40,
                   linetable_encoded([(1, 0, 0), (245, 0, 0), (11, 150, 0x83), (5, 3, 14)]),
                   name=s_text(4, [0x10]))
            + code(s_default(), s_text(5, [1, 2, 3]), True, 7,
                   linetable_raw([0x80 | 13 << 3, 2, 0xF8, 0x80 | 14 << 3 | 3, 4, 1, 9, 12], 12))
            + code(s_default(), s_default(), True, 200,
                   linetable_encoded([(7, 15, 0x84), (7, 1, 21), (8, 2, 0)])))


def thread(entry, gil, frames, maxframes=16):
    """frames: (op, arg) pairs (see push_some)."""
    assert len(frames) < maxframes
    return [(len(frames) << 2) | (gil << 1) | entry] + [x for f in frames for x in f]


def shape(ncodes, ninterps, nthreads):
    return (ncodes - 1) | (ninterps - 1) << 2 | (nthreads - 1) << 3


def run_part(opt=0, rounds=1, opt_bytes=(), round_bytes=()):
    """opt/flow bytes, no mutation before open, then the rounds."""
    out = [opt, rounds - 1] + list(opt_bytes) + [0]
    for r in round_bytes:
        out += r
    return out


def walk_seeds():
    seeds = {}
    for minor in (13, 14, 15):
        v = minor - 13
        seeds["seed-%d-simple" % minor] = (
            [v, shape(1, 1, 1)] + codes_plain(1) + thread(1, 1, [(0, 0)] * 5)
            + run_part(0, 1, (), [[0, 0]]))
        frames = [(0, 1), (5, 2), (0, 3), (6, 0), (0, 4), (5, 9), (7, 3), (0x87, 1), (0, 0x0e)]
        seeds["seed-%d-mixed" % minor] = (
            [v | 0x80 | 2 << 3, shape(4, 2, 3)] + codes_mixed()
            + thread(1, 0, frames) + thread(0, 1, frames[:4]) + thread(1, 1, [(6, 0), (0, 5)])
            + thread(1, 0, frames[3:]) + thread(0, 0, []) + thread(1, 1, frames)
            + run_part(0x13, 3, (9, 40), [[0, 0x04], [0x10, 0x80 | 0x04, 3], [0, 0x40, 2]]))
        # the reader fails: its 2nd call once, every call from the 3rd
        # (sticky), reads over 64 bytes
        seeds["seed-%d-reader-faults" % minor] = (
            [v, shape(2, 1, 2)] + codes_plain(2) + thread(1, 0, [(0, 1), (5, 2), (0, 3)])
            + thread(0, 0, [(0, 0), (0, 1)])
            + [0x90, 2, 0]
            + [0, 0, 1, 1] + [0, 0, 1 | 1 << 1 | 1 << 3, 2] + [0, 0x04, 0x10 | 3 << 5])
        seeds["seed-%d-one-thread" % minor] = (
            [v, shape(2, 1, 2)] + codes_plain(2) + thread(1, 0, [(0, 1), (0, 2), (5, 3)])
            + thread(1, 0, [(0, 4), (6, 0), (0, 1)])
            + run_part(0x20, 2, (), [[0, 0x01 | 1 << 3], [0x08, 0x01]]))
    return seeds


def tasks_part(nthreads, ninterps, lists, awaiters, running):
    """lists: per list, tasks as (name bytes, coro bytes, state)."""
    out = []
    assert len(lists) == nthreads + ninterps
    for tasks in lists:
        out.append(len(tasks))
        for name, coro, state in tasks:
            out += name + coro + [state]
    out += awaiters
    if any(lists):
        out += running
    return out


def tasks_seeds():
    seeds = {}
    for minor in (14, 15):
        v = minor - 14
        named = [3] + s_text(0, b"server")
        chain3 = [3, 1, 5, 9]
        lists = [[(named, chain3, 0), ([1, 7], [1, 2], 0), ([2], [0], 2)],
                 [([0] + s_default(), [2, 0xC1, 4], 0)]]
        seeds["seed-%d-tasks" % minor] = (
            [v, shape(3, 1, 1)] + codes_plain(3) + thread(1, 0, [(0, 0), (0, 1)])
            + tasks_part(1, 1, lists, [2 | 1 << 2, 1 | 2 << 2, 0, 0], [0x03 | 1 << 2])
            + run_part(0, 2, (), [[0, 0], [0x10, 0x04]]))
        lists2 = [[(named, chain3, 0)], [([1, 9], [2, 2, 3], 1)], [],
                  [([3] + s_text(1, [0xE4, 0x62]), [1, 1], 0), (named, [0], 2)], []]
        seeds["seed-%d-tasks-interps" % minor] = (
            [v, shape(2, 2, 2)] + codes_plain(2)
            + thread(1, 0, [(0, 0)]) + thread(1, 1, [(0, 1), (5, 2)])
            + thread(0, 0, [(0, 0)])
            + thread(1, 0, [])
            + tasks_part(4, 2, [lists2[0], lists2[1], [], lists2[4], lists2[3], []],
                         [1, 2 | 4 << 2, 0, 1 | 1 << 2], [0x03, 0x01 | 1 << 2, 0, 0])
            + run_part(0x01, 3, (12,), [[0, 0x01], [0, 0x04], [0x10, 0x80, 2]]))
    return seeds


def cache_seeds():
    seeds = {}
    deep = [(0, i) for i in range(30)]
    for mode, opt in (("on", 0x10), ("read-only", 0x50)):
        rounds = [[0x00, 0x00 | 2 << 3, 0],                     # returns
                  [0x00, 0x40 | 3 << 3, 0, 2, 5, 3, 0, 1, 0],   # calls (gen frame too)
                  [0x00, 0x80 | 2 << 3, 0, 1, 0, 1, 0],          # returns then calls
                  [0x10, 0xC0, 7, 0]]                            # another profiler
        seeds["seed-15-cache-%s" % mode] = (
            [0, shape(2, 1, 1)] + codes_plain(2) + thread(1, 1, deep, 40)
            + [opt, 3, 0] + [x for r in rounds for x in r])
        seeds["seed-15-cache-%s-threads" % mode] = (
            [0, shape(1, 1, 2)] + codes_plain(1) + thread(1, 1, deep[:20], 40)
            + thread(1, 0, deep[:12], 40)
            + [opt, 1, 0] + rounds[0] + rounds[2])
    return seeds


def main():
    for target, seeds in (("walk", walk_seeds()), ("tasks", tasks_seeds()),
                          ("cache", cache_seeds())):
        d = os.path.join(HERE, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            if name.startswith("seed-"):
                os.unlink(os.path.join(d, name))
        for name, data in sorted(seeds.items()):
            with open(os.path.join(d, name), "wb") as f:
                f.write(bytes(b & 0xFF for b in data))
        print("%s: %d seeds" % (target, len(seeds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
