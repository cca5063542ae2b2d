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


def wait_on(kind, obj, method, *args):
    """obj.method(*args), which blocks on obj."""
    note(kind, obj)
    H.record(); getattr(obj, method)(*args)


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
    H.start(wait_on, "event", threading.Event(), "wait", name="event-waiter")
    H.start(wait_on, "semaphore", threading.Semaphore(0), "acquire", name="sem-waiter")
    bsem = threading.BoundedSemaphore(1)
    bsem.acquire()
    H.start(wait_on, "semaphore", bsem, "acquire", name="bsem-waiter")
    H.start(wait_on, "queue", queue.Queue(), "get", name="queue-getter")
    full = queue.Queue(maxsize=1)
    full.put(1)
    H.start(wait_on, "queue", full, "put", 2, name="queue-putter")
    H.start(wait_on, "future", concurrent.futures.Future(), "result", name="future-waiter")
    H.start(loop_run, name="loop-runner")
    reacquired, ready = threading.Condition(), threading.Event()
    H.start(cond_reacquire, reacquired, ready, name="cond-reacquirer")
    ready.wait()
    reacquired.acquire()   # only once the waiter is in wait(): it released it there
    reacquired.notify()    # and kept: the waiter blocks taking it back
    H.publish_truth("waits.json", record)


def record():
    with truth_lock:
        return {"waits": {str(k): v for k, v in truth.items()},
                "names": {t.name: t.native_id for t in H.threads},
                "main": threading.get_native_id()}


main()
