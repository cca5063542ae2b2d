"""Benchmark target: the main thread 1,000 Python frames deep (argv[1]),
each frame holding 10 locals (ints, short strings, small lists); blocked
reading stdin at the bottom.  Writes "ready" when it is there."""
import os
import sys


def level(n):
    a, b, c = n, n * 2, n * 3
    s1, s2, s3 = "name-%d" % n, "key", "v" * (n % 7)
    l1, l2 = [n, n + 1], ["x", "y", n]
    if n:
        return level(n - 1)
    os.write(1, b"ready\n")
    sys.stdin.read()
    return a, b, c, s1, s2, s3, l1, l2


sys.setrecursionlimit(100000)
level(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
