"""A thread that calls Python from C without end, so that a debugger can
stop it while the eval loop the call from C makes is setting up the
frame it runs (test_frozen_calls.py):

    pythonX.Y set_up_from_c.py HANDSHAKE map|genexpr

* "map": list(map(f, ...)) in a loop: map calls f, whose frame is new;
* "genexpr": " ".join(<genexpr>) in a loop: join resumes the generator,
  whose frame has run before.

The main thread writes the handshake and blocks; the worker thread is not
one of the harness's (it never blocks), and is the newest thread."""

import sys
import threading

import _common

H = _common.Harness.from_argv()
WORDS = ("a", "b", "c")


def f(x):
    return x + 1


def mapper():
    while True:
        list(map(f, range(3)))


def text(n):
    return " ".join(WORDS[i % 3] for i in range(n))


def joiner():
    while True:
        text(3)


worker = {"map": mapper, "genexpr": joiner}[sys.argv[2]]
threading.Thread(target=worker, name=sys.argv[2], daemon=True).start()
H.publish_and_block()
