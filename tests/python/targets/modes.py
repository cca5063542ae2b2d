"""A target for the sampler's modes (``--mode cpu|gil``).

``python modes.py cpu``: one thread spinning in Python code ("busy") and
eight threads blocked on an Event ("idle").
``python modes.py gil``: one thread spinning in Python code ("busy"), one
hashing large buffers, which releases the GIL while it hashes ("hashing"),
and four idle ones.

When every thread is running (each worker has signalled that it reached its
loop), one line of JSON goes to stdout -- the handshake -- with the pid and
the native thread id of each role; then the main thread blocks reading
stdin until the test kills the process.
"""

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


def main():
    kind = sys.argv[1]
    workers = [busy] + ([hashing] + [idle] * 4 if kind == "gil" else [idle] * 8)
    for fn in workers:
        threading.Thread(target=fn, daemon=True).start()
    for _ in workers:
        started.acquire()
    sys.stdout.write(json.dumps({"pid": os.getpid(), "roles": roles}) + "\n")
    sys.stdout.flush()
    sys.stdin.read()


if __name__ == "__main__":
    main()
