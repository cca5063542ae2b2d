"""Threads in every state a header words (test_thread_state.py).

* "reader": blocks in os.read on a pipe (its fd reported);
* "sleeper": blocks in time.sleep;
* "holder": takes a Lock, then blocks in os.read (fd reported);
* "waiter": blocks acquiring the Lock "holder" holds;
* "spinner" and "spinner-2": run Python for good (a bare loop, no call),
  so at any time one of them holds the GIL and the other mostly waits for
  it (in take_gil, or handing it over in drop_gil);
* "pool_0" ... "pool_N-1": the idle workers of a ThreadPoolExecutor
  (argv[2]: N, default 8), all with the same stack;
* the main thread blocks in the handshake.

Each thread's own truth goes into the handshake's thread_info: "name"
(threading's), "comm" (its /proc comm, read by itself), "doing" ("read",
"sleep", "lock", "busy", "idle", "main") and "fd" for a read.
"""

import concurrent.futures
import os
import sys
import threading
import time

import _common

H = _common.Harness.from_argv()
POOL = int(sys.argv[2]) if len(sys.argv) > 2 else 8
EXTRA = {}      # native tid -> what the thread reports besides ident and name
LOCK = threading.Lock()
HELD = threading.Event()
SPINNING = threading.Semaphore(0)


def note(**facts):
    tid = threading.get_native_id()
    with open("/proc/self/task/%d/comm" % tid) as f:
        facts["comm"] = f.read().rstrip("\n")
    EXTRA[tid] = facts


def reader():
    fd = H.fd()
    note(doing="read", fd=fd)
    H.record(); os.read(fd, 1)


def sleeper():
    note(doing="sleep")
    H.record(); time.sleep(H.forever())


def holder():
    with LOCK:
        fd = H.fd()
        note(doing="read", fd=fd, holds="LOCK")
        HELD.set()
        H.record(); os.read(fd, 1)


def waiter():
    HELD.wait()
    note(doing="lock")
    H._register("lock")
    H.record(); LOCK.acquire()


def spinner():
    note(doing="busy")
    SPINNING.release()
    while True:
        pass


def ready(pool_tids):
    """The pool's workers idle in their queue's wait (a futex)."""
    futex = _common._SYSCALLS.get(os.uname().machine, {}).get("lock", set())
    for tid in pool_tids:
        try:
            with open("/proc/self/task/%d/syscall" % tid) as f:
                fields = f.read().split()
        except OSError:
            return False
        if not fields or fields[0] in ("running", "-1") or int(fields[0]) not in futex:
            return False
    return True


def main():
    H.start(reader, name="reader")
    H.start(sleeper, name="sleeper")
    H.start(holder, name="holder")
    H.start(waiter, name="waiter")
    spinners = [threading.Thread(target=spinner, name=name, daemon=True)
                for name in ("spinner", "spinner-2")]
    for spin in spinners:
        spin.start()
        SPINNING.acquire()
    barrier = threading.Barrier(POOL + 1)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=POOL, thread_name_prefix="pool")
    for _ in range(POOL):
        pool.submit(barrier.wait)
    barrier.wait()
    workers = list(pool._threads)
    deadline = time.monotonic() + 60
    while not ready([t.native_id for t in workers]):
        if time.monotonic() > deadline:
            raise RuntimeError("the pool's workers did not go idle")
        time.sleep(0.002)
    H._wait_ready()
    for t in workers:
        H.info[t.native_id] = {"ident": t.ident, "name": t.name}
        EXTRA[t.native_id] = {"doing": "idle"}
    for spin in spinners:
        H.info[spin.native_id] = {"ident": spin.ident, "name": spin.name}
    note(doing="main")
    for tid, facts in EXTRA.items():
        if "comm" not in facts:
            with open("/proc/self/task/%d/comm" % tid) as f:
                facts["comm"] = f.read().rstrip("\n")
        H.info.setdefault(tid, {}).update(facts)
    H.publish_and_block()


if __name__ == "__main__":
    main()
