#!/usr/bin/env python3
"""Small programs caught in recognisable states, for the demo (run_demo.sh).

    python3 demo_program.py READY_PATH [SCENARIO]

Each scenario sets up its threads, writes "<pid> ready\\n" to READY_PATH
once every thread is where it will stay (a FIFO is written in place; a
regular file is replaced atomically), then the main thread blocks reading
its stdin: the program exits when stdin reaches EOF, or on SIGTERM.

  threads   (the default) besides the main thread: "request-handler",
            inside ``except ValueError``, asleep; "pipeline-worker", a
            generator pipeline blocked reading a pipe; "cruncher", pure-Python
            arithmetic, always running (what a sampling profile finds).
  values    the main thread inside checkout(customer, cart): an instance
            of a class of its own, a list of dicts, numbers and strings.
  deadlock  "ledger-writer" and "auditor" take accounts_lock and audit_lock
            in opposite order (one with ``with``, one with ``acquire()``)
            and wait for each other forever.
  pool      six idle workers of a thread pool (the same stack six times).
  tasks     an asyncio loop on thread "event-loop" whose tasks each await
            something else: a Future, another task, a sleep, an Event.

Runs on CPython 3.11 to 3.15 (asyncio task trees are read on 3.14+).
"""

import asyncio
import concurrent.futures
import os
import platform
import signal
import stat
import sys
import threading
import time


class Shutdown(Exception):
    pass


def on_sigterm(signum, frame):
    raise Shutdown()


def announce(path):
    """Write "<pid> ready" to path (a FIFO in place, a file atomically)."""
    line = f"{os.getpid()} ready\n".encode()
    try:
        is_fifo = stat.S_ISFIFO(os.stat(path).st_mode)
    except FileNotFoundError:
        is_fifo = False
    if is_fifo:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    else:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(line)
        os.replace(tmp, path)


def wait_for_stdin_eof():
    while os.read(0, 4096):  # where the main thread waits
        pass


# The system calls a blocked thread sits in, by machine.
_SYSCALLS = {"x86_64": {"futex": {202}, "epoll": {232, 281, 441}},
             "aarch64": {"futex": {98}, "epoll": {22, 441}}}.get(platform.machine(), {})


def in_syscall(tid, call):
    """Whether thread tid of this process is blocked in system call call
    ("futex": a lock, a condition; "epoll": an event loop's selector)."""
    try:
        with open("/proc/self/task/%d/syscall" % tid) as f:
            return int(f.read().split()[0]) in _SYSCALLS.get(call, ())
    except (OSError, IndexError, ValueError):
        return False


def wait_until_blocked(threads, call, also=lambda: True):
    """Return once also() holds and each thread is blocked in call."""
    while not (also() and all(in_syscall(t.native_id, call) for t in threads)):
        time.sleep(0.001)


def start(target, name, *args):
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.start()
    return thread


# ---------------------------------------------------------------- threads

def handle_request(ready):
    try:
        raise ValueError("order 1042: negative quantity")
    except ValueError:
        ready.set()
        time.sleep(3600)


def read_chunks(fd, ready):
    ready.set()
    while chunk := os.read(fd, 1):
        yield chunk


def upper(chunks):
    for chunk in chunks:
        yield chunk.upper()


def pipeline_worker(fd, ready):
    for _ in upper(read_chunks(fd, ready)):
        pass


def crunch_numbers(ready):
    ready.set()
    while True:
        total = 0
        for i in range(10000):
            total += i * i


def threads():
    stop_r, stop_w = os.pipe()  # never written: the pipeline waits
    events = [threading.Event() for _ in range(3)]
    start(handle_request, "request-handler", events[0])
    start(pipeline_worker, "pipeline-worker", stop_r, events[1])
    start(crunch_numbers, "cruncher", events[2])
    # Each thread sets its event just before its blocking call and holds
    # the GIL until that call releases it.
    for event in events:
        event.wait()


# ---------------------------------------------------------------- values

class Customer:
    def __init__(self, name, tier, balance):
        self.name = name
        self.tier = tier
        self.balance = balance


def checkout(customer, cart, ready_path):
    total = sum(item["price"] * item["qty"] for item in cart)
    discount = 0.1 if customer.tier == "gold" else 0.0
    announce(ready_path)
    wait_for_stdin_eof()
    return total * (1 - discount)


# ---------------------------------------------------------------- deadlock

accounts_lock = threading.Lock()
audit_lock = threading.Lock()

def post_entries(both_hold, second):
    with accounts_lock:
        both_hold.wait()
        second.append("ledger-writer")
        with audit_lock:
            pass


def audit_books(both_hold, second):
    audit_lock.acquire()
    both_hold.wait()
    second.append("auditor")
    accounts_lock.acquire()
    accounts_lock.release()
    audit_lock.release()


def deadlock():
    both_hold = threading.Barrier(2)
    second = []  # who is past the barrier, at its second lock
    pair = [start(post_entries, "ledger-writer", both_hold, second),
            start(audit_books, "auditor", both_hold, second)]
    wait_until_blocked(pair, "futex", lambda: len(second) == 2)


# ---------------------------------------------------------------- pool

def pool():
    global executor  # kept: a pool no longer referred to lets its workers go
    workers = 6
    executor = concurrent.futures.ThreadPoolExecutor(workers, thread_name_prefix="pool")
    all_busy = threading.Barrier(workers + 1)  # every worker started
    jobs = [executor.submit(all_busy.wait) for _ in range(workers)]
    all_busy.wait()
    concurrent.futures.wait(jobs)
    wait_until_blocked(list(executor._threads), "futex")  # back in work_queue.get()


# ---------------------------------------------------------------- tasks

async def fetch_prices(quote):
    return await quote  # a Future nobody completes


async def push_updates():
    await asyncio.sleep(3600)


async def report(prices):
    await prices  # another task


async def watchdog(stop):
    await stop.wait()  # an Event


async def serve(ready):
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    prices = asyncio.create_task(fetch_prices(loop.create_future()), name="fetch-prices")
    others = [asyncio.create_task(push_updates(), name="push-updates"),
              asyncio.create_task(report(prices), name="report"),
              asyncio.create_task(watchdog(stop), name="watchdog")]
    for _ in range(3):  # every task to its first await
        await asyncio.sleep(0)
    loop.call_soon(ready.set)
    await asyncio.gather(prices, *others)


def tasks():
    ready = threading.Event()
    loop_thread = start(lambda: asyncio.run(serve(ready)), "event-loop")
    ready.wait()
    wait_until_blocked([loop_thread], "epoll")  # back in its selector


# ---------------------------------------------------------------- main

SCENARIOS = {"threads": threads, "values": None, "deadlock": deadlock, "pool": pool,
             "tasks": tasks}


def main(argv):
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] not in SCENARIOS):
        print("usage: demo_program.py READY_PATH [%s]" % "|".join(SCENARIOS), file=sys.stderr)
        return 2
    ready_path, scenario = argv[1], argv[2] if len(argv) == 3 else "threads"
    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        if scenario == "values":
            customer = Customer("Ann Lee", "gold", 1250.75)
            cart = [{"sku": "A-100", "qty": 2, "price": 9.5},
                    {"sku": "B-220", "qty": 1, "price": 120.0}]
            checkout(customer, cart, ready_path)
        else:
            SCENARIOS[scenario]()
            announce(ready_path)
            wait_for_stdin_eof()
    except Shutdown:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
