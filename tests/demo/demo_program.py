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

  * ledger-writer and auditor: a deadlock, two locks taken in opposite
    order (each takes its first lock in one function and the second in
    another, so every CPython shows which frame holds which lock).
  * request-handler: inside ``except ValueError``, in time.sleep().
  * pool_0..pool_2: three idle workers of a thread pool (identical stacks).
  * cruncher: pure-Python arithmetic, always running (it mostly holds the
    GIL, and is what a sampling profile finds).
  * event-loop: an asyncio loop whose two tasks wait on an Event
    (asyncio task trees are read on 3.14+).

When every thread has reached its blocking call, "<pid> ready\\n" is written
to READY_PATH (a FIFO is written in place; a regular file is replaced
atomically).  The program exits when its stdin reaches EOF or on SIGTERM.
Runs on CPython 3.13, 3.14 and 3.15.
"""

import asyncio
import concurrent.futures
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


# ---------------------------------------------------------------- the deadlock

accounts_lock = threading.Lock()
audit_lock = threading.Lock()


def take_second(lock):
    with lock:  # blocking point of the deadlock: the other thread holds it
        pass


def post_entries(both_hold):
    with accounts_lock:
        both_hold.wait()
        take_second(audit_lock)


def audit_books(both_hold):
    with audit_lock:
        both_hold.wait()
        take_second(accounts_lock)


def futex_wait(tid):
    """Whether thread tid is in a futex wait (what a blocked acquire is)."""
    try:
        with open("/proc/self/task/%d/syscall" % tid) as f:
            return f.read().split()[0] == "202"  # futex on x86-64
    except (OSError, IndexError):
        return False


# ---------------------------------------------------------------- the others

def crunch_numbers(ready):
    ready.set()
    while True:
        total = 0
        for i in range(10000):
            total += i * i


def handle_request(ready):
    try:
        raise ValueError("order 1042: negative quantity")
    except ValueError:
        ready.set()
        time.sleep(3600)  # blocking point of request-handler


async def wait_for(event, started):
    started.append(1)
    await event.wait()


async def serve(ready):
    event = asyncio.Event()
    started = []
    tasks = [asyncio.create_task(wait_for(event, started), name=name)
             for name in ("fetch-prices", "push-updates")]
    while len(started) < len(tasks):
        await asyncio.sleep(0)
    ready.set()
    await asyncio.gather(*tasks)


def event_loop(ready):
    asyncio.run(serve(ready))


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
    both_hold = threading.Barrier(2)
    handler_ready = threading.Event()
    loop_ready = threading.Event()
    cruncher_ready = threading.Event()
    deadlocked = [
        threading.Thread(target=post_entries, args=(both_hold,), name="ledger-writer",
                         daemon=True),
        threading.Thread(target=audit_books, args=(both_hold,), name="auditor", daemon=True),
    ]
    threads += deadlocked + [
        threading.Thread(target=handle_request, args=(handler_ready,),
                         name="request-handler", daemon=True),
        threading.Thread(target=event_loop, args=(loop_ready,), name="event-loop",
                         daemon=True),
        threading.Thread(target=crunch_numbers, args=(cruncher_ready,), name="cruncher",
                         daemon=True),
    ]
    for t in threads:
        t.start()
    pool = concurrent.futures.ThreadPoolExecutor(3, thread_name_prefix="pool")
    # three workers busy at once (so three threads), then back to waiting
    all_busy = threading.Barrier(4)
    started = [pool.submit(all_busy.wait) for _ in range(3)]
    all_busy.wait()
    concurrent.futures.wait(started)

    def bottom():
        # Each worker sets its event immediately before its blocking call and
        # holds the GIL until that call releases it, so once both events are
        # set and this thread runs again, both workers are parked.
        pipeline_ready.wait()
        closure_ready.wait()
        handler_ready.wait()
        loop_ready.wait()
        cruncher_ready.wait()
        # the deadlock: both threads in their second acquire
        while not all(futex_wait(t.native_id) for t in deadlocked):
            time.sleep(0.001)
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
