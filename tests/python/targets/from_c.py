"""Scenario (h): Python frames entered from C functions.

* "sorted": sorted(data, key=slow_key), blocking on the fourth key call.
* "map": list(map(transform, ...)), blocking on the third element.
* "reduce": functools.reduce(combine, ...), blocking on the third call.
* "min-lambda": min(data, key=<lambda>), the lambda blocking.
* "init": instances created in a loop (so the call site gets specialized on
  versions that inline ``__init__``), the last ``__init__`` blocks.
* "property": a property getter reached through getattr() (C) and through
  attribute access.
"""

import functools
import os

import _common

H = _common.Harness.from_argv()

calls = {"key": 0, "map": 0, "reduce": 0, "init": 0}


def slow_key(item):
    calls["key"] += 1
    if calls["key"] == 4:
        H.record(); os.read(H.fd(), 1)
    return -item


def run_sorted():
    return sorted([5, 3, 9, 1, 7], key=slow_key)


def transform(item):
    calls["map"] += 1
    if calls["map"] == 3:
        H.record(); os.read(H.fd(), 1)
    return item + 1


def run_map():
    return list(map(transform, range(10)))


def combine(acc, item):
    calls["reduce"] += 1
    if calls["reduce"] == 3:
        H.record(); os.read(H.fd(), 1)
    return acc + item


def run_reduce():
    return functools.reduce(combine, range(10), 0)


def run_min_lambda():
    return min(range(4), key=lambda v: (H.record(), os.read(H.fd(), 1)) if v == 2 else v)


class Point:
    def __init__(self, x):
        calls["init"] += 1
        if calls["init"] == 40:
            H.record(); os.read(H.fd(), 1)
        self.x = x


def run_init():
    points = []
    for i in range(40):
        points.append(Point(i))
    return points


class Gauge:
    @property
    def level(self):
        H.record(); os.read(H.fd(), 1)


def read_gauge(g):
    return getattr(g, "level")


def run_property():
    return read_gauge(Gauge())


def main():
    H.start(run_sorted, name="sorted")
    H.start(run_map, name="map")
    H.start(run_reduce, name="reduce")
    H.start(run_min_lambda, name="min-lambda")
    H.start(run_init, name="init")
    H.start(run_property, name="property")
    H.publish_and_block()


if __name__ == "__main__":
    main()
