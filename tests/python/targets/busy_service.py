"""A CPU-busy service, as a new user writes one: three worker threads
score the requests of a queue in a tight loop (the hot leaf: ``score``), a
reporter thread sleeps between its reports, and the main thread waits for
the workers (``Thread.join``): the process's main thread does none of the
work.

Once each worker has scored a request (and so runs its loop), one line of
JSON goes to stdout, the handshake: the pid, the hot leaf as the workers
see themselves (``sys._getframe()`` inside ``score``: its qualified name
and file), the workers' native ids, the main thread's own stack below the
join (innermost first: ``main``, ``<module>``) and every thread's name by
its native id; then it runs until killed.
"""

import json
import os
import queue
import sys
import threading
import time

WORKERS = 3
requests = queue.Queue()
started = threading.Semaphore(0)
seen = {}


def score(request):
    """The hot leaf: all arithmetic, no call of a Python function."""
    if not seen:
        code = sys._getframe().f_code
        seen.update(function=code.co_qualname, filename=code.co_filename)
    total = 0
    for ch in request:
        total = (total * 31 + ord(ch)) % 1000003
    for i in range(2000):
        total = (total * 17 + i) % 1000003
    return total


def worker(results):
    request = requests.get()
    results.append(score(request))
    seen.setdefault("workers", []).append(threading.get_native_id())
    started.release()
    while True:
        results.append(score(request))
        if len(results) > 1000:
            del results[:]


def reporter():
    while True:
        time.sleep(0.2)


def main_view():
    frames, frame = [], sys._getframe(1)
    while frame is not None:
        frames.append({"function": frame.f_code.co_qualname,
                       "filename": frame.f_code.co_filename})
        frame = frame.f_back
    return frames


def main():
    for i in range(WORKERS):
        requests.put("GET /orders/%d?expand=items,customer" % i)
    workers = [threading.Thread(target=worker, args=([],), name="worker-%d" % i, daemon=True)
               for i in range(WORKERS)]
    for w in workers:
        w.start()
    threading.Thread(target=reporter, name="reporter", daemon=True).start()
    for _ in workers:
        started.acquire()
    doc = {"pid": os.getpid(), "hot": {"function": seen["function"],
                                       "filename": seen["filename"]},
           "workers": seen["workers"], "main": main_view(),
           "threads": {str(t.native_id): t.name for t in threading.enumerate()}}
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()
    for w in workers:
        w.join()


if __name__ == "__main__":
    main()
