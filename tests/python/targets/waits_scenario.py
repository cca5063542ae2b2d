"""Threads blocked on the standard library's objects, with the program's own
record of what each waits on.

Threads (named; each records its wait in waits.json's truth before it
blocks):

* "join-a" and "join-b": a join cycle: each joins the other (both started
  and past a barrier with the main thread, which hands each the other's
  Thread object, so neither join can fail or return).
* "cond-waiter": ``cond.wait()`` on a Condition nobody notifies.
* "event-waiter": ``event.wait()`` on an Event never set.
* "sem-waiter": ``acquire()`` of a Semaphore(0); "bsem-waiter": of a
  BoundedSemaphore(1) the main thread took.
* "queue-getter": ``get()`` of an empty queue.Queue; "queue-putter":
  ``put()`` on a full one (maxsize 1).
* "future-waiter": ``result()`` of a pending concurrent.futures.Future.
* "loop-runner": ``run_until_complete()`` of a future nobody completes (the
  loop blocks in its selector).
* "cond-reacquirer": notified in ``cond.wait()`` while the main thread holds
  the Condition's RLock (and keeps it): it blocks taking the RLock back (the
  RLock's ``_acquire_restore``), a wait for the main thread that the RLock
  records.

waits.json: {"waits": {native id: {"kind", "address" (id() of the object),
"lock" (a Condition's lock's id()), "joins" (the joined thread's native
id), "holder" (the native id of the thread holding the Condition's lock)}},
"names": {thread name: native id}, "main": the main thread's native id}.
"""

import asyncio
import concurrent.futures
import json
import os
import queue
import threading

import _common

H = _common.Harness.from_argv()

truth = {}
truth_lock = threading.Lock()
peers = {}
joined = threading.Barrier(3)


def note(kind, obj, blocker="lock", **extra):
    with truth_lock:
        truth[threading.get_native_id()] = dict(kind=kind, address=id(obj), **extra)
    H._register(blocker)


def join_peer(name):
    joined.wait()
    peer = peers[name]
    note("join", peer, joins=peer.native_id)
    H.record(); peer.join()


def cond_wait(cond):
    with cond:
        note("condition", cond, lock=id(cond._lock))
        H.record(); cond.wait()


def event_wait(event):
    note("event", event)
    H.record(); event.wait()


def sem_acquire(sem):
    note("semaphore", sem)
    H.record(); sem.acquire()


def queue_get(q):
    note("queue", q)
    H.record(); q.get()


def queue_put(q):
    note("queue", q)
    H.record(); q.put(2)


def future_result(future):
    note("future", future)
    H.record(); future.result()


def loop_run():
    loop = asyncio.new_event_loop()
    pending = loop.create_future()
    note("event_loop", loop, blocker="poll")
    H.record(); loop.run_until_complete(pending)


def cond_reacquire(cond, ready):
    note("reacquire", cond, lock=id(cond._lock), holder=threading.main_thread().native_id)
    H.record()
    with cond:
        ready.set()
        cond.wait()


def main():
    a = H.start(join_peer, "join-b", name="join-a")
    b = H.start(join_peer, "join-a", name="join-b")
    peers.update({"join-a": a, "join-b": b})
    joined.wait()
    H.start(cond_wait, threading.Condition(), name="cond-waiter")
    H.start(event_wait, threading.Event(), name="event-waiter")
    H.start(sem_acquire, threading.Semaphore(0), name="sem-waiter")
    bsem = threading.BoundedSemaphore(1)
    bsem.acquire()
    H.start(sem_acquire, bsem, name="bsem-waiter")
    H.start(queue_get, queue.Queue(), name="queue-getter")
    full = queue.Queue(maxsize=1)
    full.put(1)
    H.start(queue_put, full, name="queue-putter")
    H.start(future_result, concurrent.futures.Future(), name="future-waiter")
    H.start(loop_run, name="loop-runner")
    reacquired, ready = threading.Condition(), threading.Event()
    H.start(cond_reacquire, reacquired, ready, name="cond-reacquirer")
    ready.wait()
    reacquired.acquire()   # only once the waiter is in wait(): it released it there
    reacquired.notify()    # and kept: the waiter blocks taking it back
    with H.cond:  # every worker has recorded (after noting its wait)
        while len(H.views) < len(H.threads):
            H.cond.wait(0.01)
    with truth_lock:
        doc = {"waits": {str(k): v for k, v in truth.items()},
               "names": {t.name: t.native_id for t in H.threads},
               "main": threading.get_native_id()}
    path = os.path.join(H.workdir, "waits.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f)
    os.replace(path + ".tmp", path)
    H.publish_and_block()


main()
