"""Threads without Python frames.

* "bare": started with _thread.start_new_thread(time.sleep, ...): it has a
  thread state but no Python frame at all (its own view is empty).
* "bare-lock": the same with a held lock's acquire (no Python frame).
* "worker": an ordinary thread next to them.
* the main thread blocks in the handshake write.
"""

import os
import threading
import time

import _common

H = _common.Harness.from_argv()


def worker():
    H.record(); os.read(H.fd(), 1)


def main():
    H.start_bare(time.sleep, 7 * 86400.0, kind="sleep", name="bare")
    lock = threading.Lock()
    lock.acquire()
    H.start_bare(lock.acquire, kind="lock", name="bare-lock")
    H.start(worker, name="worker")
    H.publish_and_block()


if __name__ == "__main__":
    main()
