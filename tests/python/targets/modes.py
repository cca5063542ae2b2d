"""A target for the sampler's modes (``--mode cpu|gil``) and its thread
labels.

``python modes.py cpu``: one thread spinning in Python code ("busy", named
"spinner") and eight threads blocked on an Event ("idle", all named "idle").
``python modes.py gil``: one thread spinning in Python code ("busy"), one
hashing large buffers, which releases the GIL while it hashes ("hashing",
named "hasher"), four idle ones and one blocked on an Event that
``_thread.start_new_thread`` started ("raw": no threading.Thread, so no
Python name).

When every thread is running (each worker has signalled that it reached its
loop), one line of JSON goes to stdout -- the handshake -- with the pid, the
native thread id of each role, and every thread's name and native id
("threads": [[name or null, native id]], the main thread's included); then
the main thread blocks reading stdin until the test kills the process.
"""

import _thread
import hashlib
import json
import os
import sys
import threading

roles = {}
started = threading.Semaphore(0)
stop = threading.Event()


def busy():
    roles["busy"] = threading.get_native_id()
    started.release()
    n = 0
    while True:
        n += 1


def hashing():
    roles["hashing"] = threading.get_native_id()
    data = b"x" * (4 << 20)
    started.release()
    while True:
        hashlib.sha256(data).digest()


def idle():
    roles.setdefault("idle", []).append(threading.get_native_id())
    started.release()
    stop.wait()


def raw():
    roles["raw"] = threading.get_native_id()
    started.release()
    stop.wait()


NAMES = {busy: "spinner", hashing: "hasher", idle: "idle"}


def main():
    kind = sys.argv[1]
    workers = [busy] + ([hashing] + [idle] * 4 if kind == "gil" else [idle] * 8)
    for fn in workers:
        threading.Thread(target=fn, name=NAMES[fn], daemon=True).start()
    n = len(workers)
    if kind == "gil":
        _thread.start_new_thread(raw, ())
        n += 1
    for _ in range(n):
        started.acquire()
    threads = [[t.name, t.native_id] for t in threading.enumerate()]
    if "raw" in roles:
        threads.append([None, roles["raw"]])
    sys.stdout.write(json.dumps({"pid": os.getpid(), "roles": roles,
                                 "threads": threads}) + "\n")
    sys.stdout.flush()
    sys.stdin.read()


if __name__ == "__main__":
    main()
