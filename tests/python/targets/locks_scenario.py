"""Locks held and waited for, with the program's own record of them.

Threads (named; each records what it holds and waits for around its
acquire calls, in locks.json, before it blocks):

* "ledger-writer" and "auditor": the two-lock opposite-order deadlock with
  threading.Lock: ledger-writer is inside ``with lock_a:`` and calls
  ``take(lock_b)`` (an explicit ``lock_b.acquire()``); auditor is inside
  ``with lock_b:`` and calls ``enter(lock_a)`` (``with lock_a:``).
* "r-one" and "r-two": the same with threading.RLock.
* "cv-one" and "cv-two": the same with a threading.Condition over a Lock
  and a Lock: cv-one is inside ``with cond:`` (holding the Condition's
  lock, which records no owner) and calls ``take(lock_f)``; cv-two is
  inside ``with lock_f:`` and calls ``enter(cond)``, waiting for the
  Condition's lock in Condition.__enter__.
* "ctl-holder" and "ctl-waiter": the no-deadlock control, the locks taken in
  the same order: ctl-holder is inside ``with lock_c: with lock_d:`` (holds
  both) and blocks in os.read; ctl-waiter blocks entering ``with lock_c:``
  (a wait, no cycle).
* "explicit": blocks in ``lock_e.acquire()``; the main thread took lock_e by
  an explicit acquire() (a plain Lock records no owner: its holder is read
  from the main thread's frame, past ``lock_e.acquire()``: pyframes.acquired).

Each lock is taken in the frame of a function that then calls a Python
function to block (so 3.13, which saves a frame's stack pointer only when
it calls a Python function, shows the frame holding it), except
ctl-waiter's, which blocks in the ``with`` itself.

locks.json: {"locks": {name: id()}, "holds": {native id: [lock id, ...]}
(taken with ``with`` and not released; a Condition's: its lock's),
"acquired": {native id: [lock id, ...]} (taken by acquire() and not
released), "waits": {native id: lock id},
"names": {thread name: native id}, "idents": {native id: get_ident()}}.
"""

import os
import threading

import _common

H = _common.Harness.from_argv()

lock_a, lock_b = threading.Lock(), threading.Lock()
rlock_1, rlock_2 = threading.RLock(), threading.RLock()
lock_c, lock_d = threading.Lock(), threading.Lock()
lock_e = threading.Lock()
cond, lock_f = threading.Condition(threading.Lock()), threading.Lock()
LOCKS = {"a": lock_a, "b": lock_b, "r1": rlock_1, "r2": rlock_2, "c": lock_c, "d": lock_d,
         "e": lock_e, "cv": cond._lock, "f": lock_f}
truth = {"holds": {}, "waits": {}, "acquired": {}}
truth_lock = threading.Lock()
pair_ab, pair_r, pair_cv = threading.Barrier(2), threading.Barrier(2), threading.Barrier(2)
holder_in = threading.Event()


def note(kind, lock):
    if isinstance(lock, threading.Condition):
        lock = lock._lock  # what `with cond:` takes
    tid = threading.get_native_id()
    with truth_lock:
        if kind in ("holds", "acquired"):
            truth[kind].setdefault(tid, []).append(id(lock))
        else:
            truth["waits"][tid] = id(lock)


def take(lock):
    note("waits", lock); H._register("lock")
    H.record(); lock.acquire()


def enter(lock):
    note("waits", lock); H._register("lock")
    H.record()
    with lock:
        pass


def first_then(first, second, barrier, then):
    with first:
        note("holds", first)
        barrier.wait()
        then(second)


def ctl_holder():
    with lock_c:
        note("holds", lock_c)
        with lock_d:
            note("holds", lock_d)
            holder_in.set()
            block_in_read()


def block_in_read():
    H.record(); os.read(H.fd(), 1)


def ctl_waiter():
    holder_in.wait()
    note("waits", lock_c); H._register("lock")
    H.record()
    with lock_c:
        pass


def main():
    lock_e.acquire()
    note("acquired", lock_e)
    H.start(first_then, lock_a, lock_b, pair_ab, take, name="ledger-writer")
    H.start(first_then, lock_b, lock_a, pair_ab, enter, name="auditor")
    H.start(first_then, rlock_1, rlock_2, pair_r, take, name="r-one")
    H.start(first_then, rlock_2, rlock_1, pair_r, enter, name="r-two")
    H.start(first_then, cond, lock_f, pair_cv, take, name="cv-one")
    H.start(first_then, lock_f, cond, pair_cv, enter, name="cv-two")
    H.start(ctl_holder, name="ctl-holder")
    H.start(ctl_waiter, name="ctl-waiter")
    H.start(take, lock_e, name="explicit")
    H.publish_truth("locks.json", record)


def record():
    with truth_lock:
        return {"locks": {name: id(lock) for name, lock in LOCKS.items()},
                "holds": {str(k): v for k, v in truth["holds"].items()},
                "waits": {str(k): v for k, v in truth["waits"].items()},
                "acquired": {str(k): v for k, v in truth["acquired"].items()},
                "names": dict({t.name: t.native_id for t in H.threads},
                              MainThread=threading.main_thread().native_id),
                "idents": {str(t.native_id): t.ident for t in H.threads}}


main()
