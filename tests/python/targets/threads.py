"""Scenario (b): several threads with distinct stacks and blocking calls.

* "reader": alpha -> beta -> gamma, blocks in os.read.
* "sleeper": sleepy -> snooze, blocks in time.sleep.
* "locker": blocks in Lock.acquire inside a ``with`` block.
* "handler": blocks inside an ``except`` block nested in a ``finally``.
* "worker-3" and "worker-7": the same function at different depths, so the
  threads differ only by the number of frames.
* the main thread blocks in the handshake write.
"""

import os
import threading
import time

import _common

H = _common.Harness.from_argv()


def gamma(x):
    y = x * 2
    H.record(); os.read(H.fd(), 1)
    return y


def beta(x):
    return gamma(x + 1)


def alpha():
    return beta(1)


def snooze():
    H.record(); time.sleep(H.forever())


def sleepy():
    snooze()


class Resource:
    def __init__(self):
        self.guard = threading.Lock()

    def hold(self):
        with self.guard:
            H.record(); H.held_lock().acquire()


def locker():
    Resource().hold()


def handler():
    try:
        pass
    finally:
        try:
            raise ValueError("boom")
        except ValueError:
            H.record(); os.read(H.fd(), 1)


def worker(depth):
    if depth:
        return worker(depth - 1)
    H.record(); os.read(H.fd(), 1)


def main():
    H.start(alpha, name="reader")
    H.start(sleepy, name="sleeper")
    H.start(locker, name="locker")
    H.start(handler, name="handler")
    H.start(worker, 3, name="worker-3")
    H.start(worker, 7, name="worker-7")
    H.publish_and_block()


if __name__ == "__main__":
    main()
