"""Target of test_sampling.py: a process that keeps changing.

Each round compiles a new function f<N> in a file named <round-N> (name and
file say the same N, so a frame whose name and file disagree mixes two code
objects), calls it at a depth that varies, and drops it (its code object is
freed and the memory reused by the next round's).  Worker threads start and
end all the time, each doing the same.  Writes "ready" once running; runs
until killed.
"""
import os
import sys
import threading

SOURCE = """def f{n:06d}(depth, down):
    if depth:
        return f{n:06d}(depth - 1, down)
    return down()
"""


def make(n):
    space = {}
    exec(compile(SOURCE.format(n=n), "<round-%06d>" % n, "exec"), space)
    return space["f%06d" % n]


def leaf():
    total = 0
    for i in range(3000):
        total += i
    return total


def rounds(start, step, count):
    for i in range(count):
        n = start + i * step
        make(n)(n % 17, leaf)


def worker(start):
    rounds(start, 2, 200)


def main():
    sys.setrecursionlimit(10000)
    os.write(1, b"ready\n")
    n = 0
    while True:
        t = threading.Thread(target=worker, args=(10000001 + 2 * n * 200,))
        t.start()
        rounds(n * 200, 1, 200)
        t.join()
        n += 1


main()
