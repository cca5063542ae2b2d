"""A thread pool that deadlocks, as a new user's service does.

A bank runs its transfers on a ThreadPoolExecutor of 12 workers ("bank_0"
... "bank_11"; a warm-up batch makes the pool start all twelve).  Two
transfers between the same two accounts in opposite directions each take
their source account's lock (``with src.lock:``) and call ``deposit``,
which waits for the other account's lock (``with account.lock:``): each
holds what the other waits for.  The ten other workers are idle, waiting
for work; the main thread waits for the first transfer's result; a
"health" thread checks that everything is where it should be and then
sleeps.

The handshake, one line of JSON on stdout written by the health thread
once every thread is blocked (each transfer recorded what it holds and
waits for before it blocked; the health thread sees every thread in a
futex wait in /proc and its innermost frame in ``sys._current_frames()``
where it blocks)::

    {"pid": ..., "accounts": {"checking": id(lock), "savings": id(lock)},
     "deadlock": {"<native id>": {"holds": id, "waits": id}},
     "idle": [native ids of the idle workers],
     "threads": {"<native id>": {"name": ..., "ident": ...,
                                 "stack": [[function, file, line], ...],
                                 "exception": type name or null}}}

with each stack innermost first, as ``sys._current_frames()`` gives it,
and the exception each thread handles as ``sys._current_exceptions()``
gives it (what ``sys.exception()`` returns in that thread: an idle
worker waits for work inside ``except queue.Empty:``).
"""

import concurrent.futures
import json
import os
import platform
import sys
import threading
import time

# futex(2), where a thread blocked on a lock (or a queue) waits
FUTEX = {"x86_64": 202, "aarch64": 98}.get(platform.machine())

record = {}
record_lock = threading.Lock()
both_hold = threading.Barrier(2)


class Account(object):
    def __init__(self, name, balance):
        self.name = name
        self.balance = balance
        self.lock = threading.Lock()


def note(kind, lock):
    with record_lock:
        record.setdefault(threading.get_native_id(), {})[kind] = id(lock)


def deposit(account, amount):
    note("waits", account.lock)
    with account.lock:
        account.balance += amount


def transfer(src, dst, amount):
    with src.lock:
        note("holds", src.lock)
        src.balance -= amount
        both_hold.wait()
        deposit(dst, amount)
    return amount


def warm_up(start):
    start.wait()


def _blocked(tid):
    try:
        with open("/proc/self/task/%d/syscall" % tid) as f:
            fields = f.read().split()
    except OSError:
        return False
    if not fields or fields[0] in ("running", "-1"):
        return False
    return FUTEX is None or int(fields[0]) == FUTEX


def _stack(frame):
    out = []
    while frame is not None:
        out.append([frame.f_code.co_qualname, frame.f_code.co_filename, frame.f_lineno])
        frame = frame.f_back
    return out


def _type_name(exc):
    """The type of what sys.exception() returns in a thread (as
    sys._current_exceptions() reports it), as repr() names it; None for
    none."""
    if exc is None:
        return None
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else \
        "%s.%s" % (cls.__module__, cls.__qualname__)


def health(pool_threads, main_thread, accounts):
    """Wait until the transfers deadlocked, the idle workers wait for work
    and the main thread for the result, then write the handshake."""
    deadline = time.monotonic() + 120
    while True:
        with record_lock:
            waiting = [tid for tid, r in record.items() if "waits" in r]
        current = sys._current_frames()
        leaf = {t.native_id: current.get(t.ident) for t in pool_threads + [main_thread]}
        ready = (len(waiting) == 2 and
                 all(_blocked(t.native_id) for t in pool_threads + [main_thread]) and
                 all(leaf[tid] is not None and leaf[tid].f_code.co_name == "deposit"
                     for tid in waiting) and
                 leaf[main_thread.native_id] is not None and
                 leaf[main_thread.native_id].f_code.co_name == "wait")
        if ready:
            break
        if time.monotonic() > deadline:
            sys.exit("not deadlocked after 120 s: %r" % record)
        time.sleep(0.005)
    current = sys._current_frames()
    handled = sys._current_exceptions()
    threads = {str(t.native_id): {"name": t.name, "ident": t.ident,
                                  "stack": _stack(current.get(t.ident)),
                                  "exception": _type_name(handled.get(t.ident))}
               for t in pool_threads + [main_thread]}
    doc = {"pid": os.getpid(),
           "accounts": {a.name: id(a.lock) for a in accounts},
           "deadlock": {str(tid): r for tid, r in record.items()},
           "idle": [t.native_id for t in pool_threads if t.native_id not in record],
           "threads": threads}
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()
    while True:
        time.sleep(3600)


def main():
    checking, savings = Account("checking", 100), Account("savings", 500)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=12, thread_name_prefix="bank")
    start = threading.Barrier(12)
    for f in [pool.submit(warm_up, start) for _ in range(12)]:
        f.result()
    pool_threads = list(pool._threads)
    transfers = [pool.submit(transfer, checking, savings, 20),
                 pool.submit(transfer, savings, checking, 50)]
    threading.Thread(target=health, args=(pool_threads, threading.current_thread(),
                                          (checking, savings)),
                     name="health", daemon=True).start()
    print(transfers[0].result())


if __name__ == "__main__":
    main()
