"""The debugger suite's scenario: a main thread DEPTH frames deep in class
methods (Walker.step), a worker in a nested function, a worker inside a
generator, and optionally (FOREIGN = 1) a pthread the interpreter never
sees, running libc pause().

    pythonX.Y scenario.py HANDSHAKE DEPTH FOREIGN
"""
import ctypes
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common  # noqa: E402

H = _common.Harness(sys.argv[1])
DEPTH = int(sys.argv[2])
C_THREAD = sys.argv[3] == "1"
sys.setrecursionlimit(DEPTH + 1000)


class Walker:
    def step(self, n):
        if n:
            return self.step(n - 1)
        return H.publish_and_block()


def outer():
    def inner(k):
        H.record(); os.read(H.fd(), 1)
    return inner(1)


def produce():
    yield 1
    H.record(); os.read(H.fd(), 1)
    yield 2


def consume():
    return list(produce())


def start_foreign_thread():
    """A pthread running libc pause(): never registered with Python."""
    libc = ctypes.CDLL(None, use_errno=True)
    handle = ctypes.c_ulong()
    start = ctypes.cast(libc.pause, ctypes.c_void_p)
    rc = libc.pthread_create(ctypes.byref(handle), None, start, None)
    if rc:
        raise OSError(rc, "pthread_create")


def main():
    if C_THREAD:
        start_foreign_thread()
    H.start(outer, name="nested")
    H.start(consume, name="generator")
    Walker().step(DEPTH)


main()
