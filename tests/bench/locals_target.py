"""Benchmark target: the main thread blocked in a frame holding 10 locals
of mixed types (ints, floats, short strings, a small list, a dict, a tuple,
None, a bool).  Writes "ready" when it is there."""
import os
import sys


def hold(count, name):
    ratio = 2.5
    label = "request-%d" % count
    items = [1, 2, 3, "four"]
    table = {"id": count, "name": name}
    pair = (count, name)
    nothing = None
    flag = True
    big = 10 ** 30
    os.write(1, b"ready\n")
    sys.stdin.read()  # blocking point
    return ratio, label, items, table, pair, nothing, flag, big


hold(42, "alpha")
