"""Benchmark target: a CPU-busy process 200 frames deep (argv[1]) whose top
frames keep changing: at the bottom of the recursion a loop calls two small
functions in turn.  Writes "ready" when it is there."""
import os
import sys


def small_a(n):
    return sum(range(n))


def small_b(n):
    total = 0
    for i in range(n):
        total += i
    return total


def descend(depth):
    if depth:
        return descend(depth - 1)
    os.write(1, b"ready\n")
    while True:
        small_a(50)
        small_b(50)


sys.setrecursionlimit(100000)
descend(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
