"""A stock service whose locks are taken with acquire(), not ``with``, as a
new user's code often does; every lock lives where a person would look for
it: module globals, an attribute, a dict.

Threads (named; each records what it holds and waits for, in
acquire.json, before it blocks):

* "restock" and "ship": ``inventory_lock.acquire()`` then
  ``orders_lock.acquire()``, and the other way round (module globals, in
  straight-line code): a deadlock.
* "poster" and "auditor": ``Ledger.post`` takes ``self._lock`` and then, in
  ``Ledger._flush``, waits for ``locks["accounts"]``; ``audit`` takes
  ``acct = locks["accounts"]`` and then waits for ``book._lock`` (the
  ledger, a module global ``ledger``): a deadlock.
* "r-left" and "r-right": the same with two RLocks (which record their
  owner): a deadlock.
* "mover-1" and "mover-2": each takes its first lock in a helper
  (``grab(first)``, which returns) and then waits for the second, crosswise
  (``spare["left"]``, ``spare["right"]``): a deadlock the frames cannot
  prove (the acquire() that took the first lock has returned; only a local
  still refers to it): at most a possible one.
* "reporter" waits for ``report_lock``, which the main thread took with
  ``report_lock.acquire()`` after "tidy" had taken and released it (tidy
  then blocks in os.read): held by the main thread, not by tidy.

acquire.json: {"locks": {name: id()}, "holds": {native id: [lock
id, ...]} (taken and not released, every way), "waits": {native id: lock
id}, "names": {thread name: native id}, "idents": {native id: get_ident()},
"deadlocks": [[thread name, ...], ...] (each cycle of the program's own
making; "unproven": those whose frames cannot show it), "refers": {lock id:
[each expression that names it in the code that takes or waits for it]}}.
"""

import os
import threading

import _common

H = _common.Harness.from_argv()

inventory_lock = threading.Lock()
orders_lock = threading.Lock()
locks = {"accounts": threading.Lock()}
journal_rlock, index_rlock = threading.RLock(), threading.RLock()
spare = {"left": threading.Lock(), "right": threading.Lock()}
report_lock = threading.Lock()

truth = {"holds": {}, "waits": {}}
truth_lock = threading.Lock()
pair_stock, pair_ledger, pair_r, pair_move = (threading.Barrier(2) for _ in range(4))
tidied = threading.Event()


def note(kind, lock):
    tid = threading.get_native_id()
    with truth_lock:
        if kind == "holds":
            truth["holds"].setdefault(tid, []).append(id(lock))
        else:
            truth["waits"][tid] = id(lock)


def restock():
    inventory_lock.acquire()
    note("holds", inventory_lock)
    pair_stock.wait()
    note("waits", orders_lock); H._register("lock")
    H.record(); orders_lock.acquire()


def ship():
    orders_lock.acquire()
    note("holds", orders_lock)
    pair_stock.wait()
    note("waits", inventory_lock); H._register("lock")
    H.record(); inventory_lock.acquire()


class Ledger(object):
    def __init__(self):
        self._lock = threading.Lock()
        self.entries = []

    def post(self, entry):
        self._lock.acquire()
        note("holds", self._lock)
        self.entries.append(entry)
        pair_ledger.wait()
        self._flush()

    def _flush(self):
        note("waits", locks["accounts"]); H._register("lock")
        H.record(); locks["accounts"].acquire()


ledger = Ledger()


def audit(book):
    acct = locks["accounts"]
    acct.acquire()
    note("holds", acct)
    pair_ledger.wait()
    note("waits", book._lock); H._register("lock")
    H.record(); book._lock.acquire()


def journal(first, second):
    first.acquire()
    note("holds", first)
    pair_r.wait()
    note("waits", second); H._register("lock")
    H.record(); second.acquire()


def grab(lock):
    lock.acquire()


def move(first, second):
    grab(first)
    note("holds", first)
    pair_move.wait()
    note("waits", second); H._register("lock")
    H.record(); second.acquire()


def tidy():
    report_lock.acquire()
    report_lock.release()
    tidied.set()
    block_in_read()


def block_in_read():
    H.record(); os.read(H.fd(), 1)


def report():
    note("waits", report_lock); H._register("lock")
    H.record(); report_lock.acquire()


def main():
    H.start(restock, name="restock")
    H.start(ship, name="ship")
    H.start(ledger.post, "rent", name="poster")
    H.start(audit, ledger, name="auditor")
    H.start(journal, journal_rlock, index_rlock, name="r-left")
    H.start(journal, index_rlock, journal_rlock, name="r-right")
    H.start(move, spare["left"], spare["right"], name="mover-1")
    H.start(move, spare["right"], spare["left"], name="mover-2")
    H.start(tidy, name="tidy")
    tidied.wait()
    report_lock.acquire()
    note("holds", report_lock)
    H.start(report, name="reporter")
    H.publish_truth("acquire.json", record)


def record():
    lock_names = {"inventory_lock": inventory_lock, "orders_lock": orders_lock,
                  "accounts": locks["accounts"], "ledger": ledger._lock,
                  "journal_rlock": journal_rlock, "index_rlock": index_rlock,
                  "left": spare["left"], "right": spare["right"], "report_lock": report_lock}
    refers = {inventory_lock: ["inventory_lock"], orders_lock: ["orders_lock"],
              locks["accounts"]: ['locks["accounts"]', "acct"],
              ledger._lock: ["ledger._lock", "self._lock", "book._lock"],
              journal_rlock: ["journal_rlock", "first", "second"],
              index_rlock: ["index_rlock", "first", "second"],
              spare["left"]: ['spare["left"]', "first", "second"],
              spare["right"]: ['spare["right"]', "first", "second"],
              report_lock: ["report_lock"]}
    threads = {t.name: t.native_id for t in H.threads}
    threads["MainThread"] = threading.main_thread().native_id
    with truth_lock:
        return {"locks": {name: id(lock) for name, lock in lock_names.items()},
                "holds": {str(k): v for k, v in truth["holds"].items()},
                "waits": {str(k): v for k, v in truth["waits"].items()},
                "names": threads,
                "idents": {str(t.native_id): t.ident for t in H.threads},
                "deadlocks": [["restock", "ship"], ["poster", "auditor"],
                              ["r-left", "r-right"], ["mover-1", "mover-2"]],
                "unproven": [["mover-1", "mover-2"]],
                "refers": {str(id(lock)): names for lock, names in refers.items()}}


main()
