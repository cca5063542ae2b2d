"""Scenario (a): stacks deeper than 3,000 frames.

* "deep-recursion": 4,000 frames of mutual recursion between two functions,
  each calling the other from two different lines depending on parity, so
  every frame's line matters.
* "deep-generators": a chain of 1,200 generators linked by ``yield from``,
  resumed once after being suspended, blocking in the innermost one.

Both run in threads with a 256 MiB C stack: on 3.13/3.14 the generator chain
recurses on the C stack.
"""

import os
import sys
import threading

import _common

H = _common.Harness.from_argv()

DEPTH = 4000
GEN_DEPTH = 1200


def ping(n):
    if n == 0:
        H.record(); os.read(H.fd(), 1)
    elif n % 4 == 0:
        pong(n - 1)
    else:
        pong(n - 1)


def pong(n):
    if n == 0:
        H.record(); os.read(H.fd(), 1)
    elif n % 4 == 1:
        ping(n - 1)
    else:
        ping(n - 1)


def deep_recursion():
    ping(DEPTH)


def chain(n):
    if n == 0:
        yield "bottom"
        H.record(); os.read(H.fd(), 1)
        yield "never"
    else:
        got = yield from chain(n - 1)
        yield got


def deep_generators():
    g = chain(GEN_DEPTH)
    first = next(g)
    assert first == "bottom", first
    next(g)


def main():
    sys.setrecursionlimit(DEPTH * 3 + 1000)
    threading.stack_size(256 * 1024 * 1024)
    H.start(deep_recursion, name="deep-recursion")
    H.start(deep_generators, name="deep-generators")
    H.publish_and_block()


if __name__ == "__main__":
    main()
