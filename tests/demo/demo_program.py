#!/usr/bin/env python3
"""A target process with recognisable Python stacks, for demos and tests.

    python3 demo_program.py READY_PATH [DEPTH]

Three threads, each parked in a blocking C call:

  * MainThread: recurse() DEPTH levels deep (default 25), then os.read() on
    stdin.
  * pipeline-worker: a generator pipeline driven by next() (stage_upper ->
    stage_relay, which uses ``yield from`` -> source), blocked in os.read() on
    a private pipe.
  * closure-worker: Outer.Inner.method() -> a nested closure, blocked in
    time.sleep().

When every thread has reached its blocking call, "<pid> ready\\n" is written
to READY_PATH (a FIFO is written in place; a regular file is replaced
atomically).  The program exits when its stdin reaches EOF or on SIGTERM.
Runs on CPython 3.13, 3.14 and 3.15.
"""

import os
import signal
import stat
import sys
import threading
import time

DEFAULT_DEPTH = 25


class Shutdown(Exception):
    pass


def on_sigterm(signum, frame):
    raise Shutdown()


# ---------------------------------------------------------------- worker 1

def source(fd, ready):
    """Yields bytes read from fd; blocks in os.read until shutdown."""
    ready.set()
    while True:
        chunk = os.read(fd, 1)  # blocking point of pipeline-worker
        if not chunk:
            return
        yield chunk


def stage_relay(it):
    yield from it


def stage_upper(it):
    for chunk in it:
        yield chunk.upper()


def pipeline_worker(fd, ready):
    pipeline = stage_upper(stage_relay(source(fd, ready)))
    while True:
        try:
            next(pipeline)
        except StopIteration:
            return


# ---------------------------------------------------------------- worker 2

class Outer:
    class Inner:
        def __init__(self, ready):
            self.ready = ready

        def method(self):
            ready = self.ready

            def closure():
                ready.set()
                while True:
                    time.sleep(3600)  # blocking point of closure-worker

            return closure()


def closure_worker(ready):
    Outer.Inner(ready).method()


# ---------------------------------------------------------------- main thread

def announce(path):
    line = f"{os.getpid()} ready\n".encode()
    try:
        is_fifo = stat.S_ISFIFO(os.stat(path).st_mode)
    except FileNotFoundError:
        is_fifo = False
    if is_fifo:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    else:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(line)
        os.replace(tmp, path)


def wait_for_stdin_eof():
    while os.read(0, 4096):  # blocking point of MainThread
        pass


def recurse(depth, on_bottom):
    if depth <= 1:
        return on_bottom()
    return recurse(depth - 1, on_bottom)


def main(argv):
    if len(argv) not in (2, 3):
        print("usage: demo_program.py READY_PATH [DEPTH]", file=sys.stderr)
        return 2
    ready_path = argv[1]
    depth = int(argv[2]) if len(argv) == 3 else DEFAULT_DEPTH

    signal.signal(signal.SIGTERM, on_sigterm)
    stop_r, stop_w = os.pipe()
    pipeline_ready = threading.Event()
    closure_ready = threading.Event()
    threads = [
        threading.Thread(target=pipeline_worker, args=(stop_r, pipeline_ready),
                         name="pipeline-worker", daemon=True),
        threading.Thread(target=closure_worker, args=(closure_ready,),
                         name="closure-worker", daemon=True),
    ]
    for t in threads:
        t.start()

    def bottom():
        # Each worker sets its event immediately before its blocking call and
        # holds the GIL until that call releases it, so once both events are
        # set and this thread runs again, both workers are parked.
        pipeline_ready.wait()
        closure_ready.wait()
        announce(ready_path)
        wait_for_stdin_eof()

    try:
        recurse(depth, bottom)
    except Shutdown:
        pass
    os.close(stop_w)  # ends the pipeline; closure-worker is a daemon
    threads[0].join(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
