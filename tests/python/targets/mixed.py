"""Scenario: Python calls that pass through C several times, for native +
Python backtraces.

The thread "through-c" runs, innermost last:

    chain -> list(map(mapped, ...))          map calls back from C
          -> sorted(..., key=keyfunc)        sorted calls back from C
          -> Widget(...)                     type.__call__ runs __init__
          -> driver: gen.send(None)          a generator resumed from C
          -> ctypes callback                 a CFUNCTYPE called by qsort
          -> leaf: blocks in os.read

so its Python stack is entered from C about six times, each by an eval-loop
call of its own.  The thread "plain" blocks in a pure Python recursion (one
eval call).  The main thread blocks in the handshake.

``--jit-loop N``: the "through-c" leaf runs a hot loop N times (the target
restarts itself with PYTHON_JIT=1) and blocks in its last iteration, called
from sorted() in JIT-compiled code.
"""

import ctypes
import ctypes.util
import os
import sys

JIT_LOOP = int(sys.argv[sys.argv.index("--jit-loop") + 1]) if "--jit-loop" in sys.argv else 0
if JIT_LOOP and os.environ.get("PYTHON_JIT") != "1":
    # the JIT is chosen at startup: start again with it (same process)
    os.execve(sys.executable, [sys.executable] + sys.argv,
              dict(os.environ, PYTHON_JIT="1"))

import _common  # noqa: E402

H = _common.Harness.from_argv()

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
_CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))


_calls = [0, 0]  # key calls so far, the one that blocks


def _key(v):
    _calls[0] += 1
    if _calls[0] == _calls[1]:
        H.record(); os.read(H.fd(), 1)
    return -v


def hot(n):
    """A loop hot enough for the JIT, which blocks in its last iteration
    inside the same call as every other (so JIT code is on the native
    stack when the process is read)."""
    _calls[1] = 3 * n
    total = 0
    for i in range(n):
        total += sorted((i, 2, 1), key=_key)[0]
    return total


def leaf():
    if JIT_LOOP:
        hot(JIT_LOOP)
    H.record(); os.read(H.fd(), 1)


_blocked = [False]


def compare(a, b):
    if not _blocked[0]:
        _blocked[0] = True
        leaf()
    return a[0] - b[0]


_compare = _CMP(compare)


def call_qsort():
    values = (ctypes.c_int * 2)(2, 1)
    _libc.qsort(values, 2, ctypes.sizeof(ctypes.c_int), _compare)


def generator():
    yield "started"
    call_qsort()
    yield "done"


def driver():
    g = generator()
    next(g)
    g.send(None)


class Widget(object):
    def __init__(self, value):
        self.value = value
        driver()


def keyfunc(value):
    if value == 1:
        Widget(value)
    return value


def mapped(value):
    return sorted([value, 1], key=keyfunc)


def chain():
    return list(map(mapped, [0]))


def recurse(n):
    if n:
        return recurse(n - 1)
    H.record(); os.read(H.fd(), 1)


def main():
    H.start(chain, name="through-c")
    H.start(recurse, 5, name="plain")
    H.publish_and_block()


if __name__ == "__main__":
    main()
