"""Thread facts: names, the exception each thread handles, the GIL.

Threads, each blocked in a C call once it has recorded its view:

* "ledger-writer" and "auditor": named threading.Threads (os.read, sleep);
* an unnamed threading.Thread (its default name "Thread-N (idle)");
* a thread of _thread.start_new_thread running only time.sleep: in no
  threading table, so it has no Python name;
* "handler": inside ``except ValueError`` of an exception raised two calls
  deeper (the innermost traceback entry is the raise);
* "keyholder": inside ``except KeyError`` (str() is the repr of its key),
  blocked inside a generator it runs there (the generator's own exception
  state is empty: sys.exception() is the KeyError further down the chain);
* "opener": inside ``except FileNotFoundError`` of a failed os.open
  (OSError's own str(): "[Errno 2] ...: 'path'");
* "spinner-1", "spinner-2": pure-Python loops that never block (the GIL
  passes between them, and nobody else asks for it).

Facts (the target's own, for the test's oracle), written to ``facts.json``
next to the handshake before it: ``{"threads": {native_tid: {"ident",
"name", "exception"}}, "spinners": [native_tid, ...], "main": native_tid}`` where name is
threading's name of the thread (None for the _thread one) and exception
what sys.exception() is there: {"type", "message", "file", "line"}, the
line from the traceback's tb_lasti through co_lines() (tb_lineno is not
asked: CPython computes and stores it when it is, and the library must
find it from tb_lasti itself), or None.
"""

import json
import os
import sys
import threading
import time

import _common

H = _common.Harness.from_argv()
FACTS = {}
LOCK = threading.Lock()


def type_name(exc):
    t = type(exc)
    return t.__qualname__ if t.__module__ == "builtins" else t.__module__ + "." + t.__qualname__


def line_of(tb):
    """The line of a traceback entry from its tb_lasti (co_lines()); before
    3.10 (no co_lines) its tb_lineno, which 3.8-3.10 set as they make it."""
    if not hasattr(tb.tb_frame.f_code, "co_lines"):
        return tb.tb_lineno
    for start, end, line in tb.tb_frame.f_code.co_lines():
        if start <= tb.tb_lasti < end:
            return line
    return None


def truth():
    """This thread's facts, as it sees them."""
    exc = sys.exception() if hasattr(sys, "exception") else sys.exc_info()[1]
    seen = None
    if exc is not None:
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        seen = {"type": type_name(exc), "message": str(exc),
                "file": tb.tb_frame.f_code.co_filename if tb is not None else None,
                "line": line_of(tb) if tb is not None else None}
    me = threading.current_thread()
    with LOCK:
        FACTS[threading.get_native_id()] = {"ident": threading.get_ident(), "name": me.name,
                                            "exception": seen}


def idle_read():
    truth()
    H.record(); os.read(H.fd(), 1)


def idle_sleep():
    truth()
    H.record(); time.sleep(H.forever())


def idle():
    truth()
    H.record(); os.read(H.fd(), 1)


def check_entry(entry):
    if entry < 0:
        raise ValueError("bad ledger entry %d: négatif" % entry)


def post(entry):
    check_entry(entry)


def handler():
    try:
        post(-42)
    except ValueError:
        truth()
        H.record(); os.read(H.fd(), 1)


def waiting_generator():
    truth()
    H.record(); os.read(H.fd(), 1)
    yield


def keyholder():
    try:
        {}["missing"]
    except KeyError:
        next(waiting_generator())


def opener():
    try:
        os.open("/nonexistent/ledger.db", os.O_RDONLY)
    except FileNotFoundError:
        truth()
        H.record(); os.read(H.fd(), 1)


def spin():
    truth()
    n = 0
    while True:
        n += 1


def main():
    # the bare thread first (Harness.start_bare's rule): no Python name
    bare = H.start_bare(time.sleep, 7 * 86400.0, kind="sleep")
    H.start(idle_read, name="ledger-writer")
    H.start(idle_sleep, name="auditor")
    H.start(idle)
    H.start(handler, name="handler")
    H.start(keyholder, name="keyholder")
    H.start(opener, name="opener")
    spinners = [threading.Thread(target=spin, name="spinner-%d" % i, daemon=True)
                for i in (1, 2)]
    for s in spinners:
        s.start()
    truth()
    H._wait_ready()
    while True:  # the spinners say who they are
        with LOCK:
            if all(s.native_id in FACTS for s in spinners):
                break
        time.sleep(0.001)
    with LOCK:
        doc = {"threads": {str(tid): f for tid, f in FACTS.items()},
               "bare": {"native_id": bare, "ident": H.info[bare]["ident"]},
               "spinners": [s.native_id for s in spinners],
               "main": threading.main_thread().native_id}
    # complete before the handshake, which the test waits for
    with open(os.path.join(H.workdir, "facts.json"), "w") as f:
        json.dump(doc, f)
    H.publish_and_block()


if __name__ == "__main__":
    main()
