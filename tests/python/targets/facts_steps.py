"""Target of test_same_reads.py: threads that hold still while another one
renames them.

    pythonX.Y facts_steps.py

The main thread and a worker block for good in os.read on a pipe that never
gets data, the main thread a few frames deep.  A third thread, the
commander, writes one JSON line on stdout (the process's id, the three
threads' native ids and every thread's name as threading has it), then
blocks in os.read(0, ...) for one command line:
  m NAME   the main thread is named NAME (threading.main_thread().name)
  w NAME   the worker is named NAME
and reports again.  EOF on stdin ends the program.  Between commands only
the commander ran: the other two threads' frames are as they were.
"""
import gc
import json
import os
import threading

NEVER, _ = os.pipe()  # never written: a read of it blocks for good
worker_started = threading.Event()


def hold(n):
    if n == 0:
        os.read(NEVER, 1)
    return hold(n - 1)


def work():
    worker_started.set()
    os.read(NEVER, 1)


def report():
    doc = {"pid": os.getpid(), "main": threading.main_thread().native_id,
           "worker": worker.native_id, "commander": threading.get_native_id(),
           "names": {str(t.native_id): t.name for t in threading.enumerate()}}
    os.write(1, (json.dumps(doc) + "\n").encode())


def apply(line):
    if not line:
        os._exit(0)
    which, name = line.decode().split(None, 1)
    (threading.main_thread() if which == "m" else worker).name = name.strip()


def command():
    while True:
        report()
        gc.collect()  # what the command allocated, counted no more
        gc.collect()
        apply(os.read(0, 256))


if __name__ == "__main__":
    worker = threading.Thread(target=work, name="worker", daemon=True)
    worker.start()
    worker_started.wait()
    threading.Thread(target=command, name="commander", daemon=True).start()
    hold(20)
