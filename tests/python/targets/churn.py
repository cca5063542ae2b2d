"""Target of test_sampling.py and test_churn.py: a process that keeps changing.

Each round takes a new number N, compiles a function fN in a file named
<round-N> (name and file say the same N, so a frame whose name and file
disagree mixes two code objects), calls it at a depth that varies, and
drops it: its namespace is cleared, so its code object is freed at once and
the memory reused by a later round's.  Worker threads start and end all the
time, each doing the same.  Writes "ready" once running; runs until killed.

With the argument "full" (test_churn.py) it also keeps creating and dropping
generators and coroutines (each round's function runs as a generator and as
a coroutine too, so frames owned by generators come and go), lets the
recursion depth rise and fall over a wider range, and (3.14+) creates and
destroys subinterpreters that run rounds of their own (their files are
named <sub-N>, with N in their function's name: the same pairing rule).

With a second argument, a file path, it keeps there its own record of
which rounds were alive when (rounds.py reads it): round numbers come from
one counter, and an event counter moves when a round is about to make its
code objects and again once they are freed, so a reader that notes the
event counter before and after a read knows which rounds could have been on
a stack during it.
"""
import ctypes
import mmap
import os
import struct
import sys
import threading

FULL = len(sys.argv) > 1 and sys.argv[1] == "full"
RECORD = sys.argv[2] if len(sys.argv) > 2 else None

# The record (rounds.py reads the same layout): a header of little-endian
# u64 (the event counter, the ring's slot count, threads started), a slot
# per round number modulo the ring: (N, event when made, event when freed
# or 0), then the native id of every thread started (THREADS of them, the
# last ones).
RING = 1 << 17
THREADS = 4096
HEADER = struct.Struct("<QQQ")
SLOT = struct.Struct("<QQQ")
_page = None
_words = None
_lock = threading.Lock()
_state = {"event": 0, "next": 1, "threads": 0}


def open_record():
    """Make the record; False when it exists (this is a second run)."""
    global _page
    if RECORD is None:
        return True
    size = HEADER.size + RING * SLOT.size + THREADS * 8
    try:
        f = open(RECORD, "x+b")  # exclusive: never truncate a record in use
    except FileExistsError:
        return False
    with f:
        f.truncate(size)
        _page = mmap.mmap(f.fileno(), size)
    global _words
    # every field a u64 written in one store (struct.pack_into writes a
    # byte at a time: a reader could see a counter half written, 255 -> 256
    # read as 0)
    _words = (ctypes.c_uint64 * (size // 8)).from_buffer(_page)
    _put(0, 0, RING, 0)
    return True


def _put(offset, *values):
    for i, v in enumerate(values):
        _words[offset // 8 + i] = v


def _header():
    _put(0, _state["event"], RING, _state["threads"])


def thread_started():
    """Record the calling thread's native id (before it runs any round)."""
    with _lock:
        if _page is not None:
            k = _state["threads"]
            _put(HEADER.size + RING * SLOT.size + (k % THREADS) * 8, threading.get_native_id())
            _state["threads"] = k + 1
            _header()


def begin():
    """A new round number, recorded as made now (before its code exists)."""
    with _lock:
        n = _state["next"]
        _state["next"] = n + 1
        _state["event"] += 1
        if _page is not None:
            at = HEADER.size + (n % RING) * SLOT.size
            _put(at + 8, _state["event"], 0)  # when made, not freed; then whose
            _put(at, n)
            _header()
        return n


def end(n):
    """Round n's code objects are gone (recorded after they were freed)."""
    with _lock:
        _state["event"] += 1
        if _page is not None:
            _put(HEADER.size + (n % RING) * SLOT.size + 16, _state["event"])
            _header()


SOURCE = """def f{n:07d}(depth, down):
    if depth:
        return f{n:07d}(depth - 1, down)
    return down()
"""


GEN_SOURCE = """def g{n:07d}(depth, down):
    if depth:
        yield from g{n:07d}(depth - 1, down)
    else:
        yield down()


async def c{n:07d}(depth, down):
    if depth:
        return await c{n:07d}(depth - 1, down)
    return down()
"""


def drive(coro):
    try:
        coro.send(None)
    except StopIteration as e:
        return e.value
    raise RuntimeError("the coroutine awaited something")


def leaf():
    total = 0
    for i in range(3000 if not FULL else 30000):
        total += i
    return total


def one_round(k):
    n = begin()
    space = {}
    exec(compile(SOURCE.format(n=n), "<round-%07d>" % n, "exec"), space)
    space["f%07d" % n](k % 17 if not FULL else k % 61, leaf)
    if FULL:
        exec(compile(GEN_SOURCE.format(n=n), "<round-%07d>" % n, "exec"), space)
        list(space["g%07d" % n](k % 23, leaf))
        drive(space["c%07d" % n](k % 19, leaf))
    # the functions' globals are space: clearing it breaks the cycle, and
    # the code objects go now, not at the next collection
    space.clear()
    end(n)


def rounds(count):
    for k in range(count):
        one_round(k)


SUB_SOURCE = """
def s{n:07d}(depth):
    if depth:
        return s{n:07d}(depth - 1)
    total = 0
    for i in range(20000):
        total += i
    return total
"""


def subinterpreters():
    """Create a subinterpreter, run a few rounds in it, destroy it; again."""
    thread_started()
    try:
        from concurrent import interpreters
    except ImportError:
        return
    while True:
        interp = interpreters.create()
        try:
            for _ in range(5):
                n = begin()
                interp.exec("ns = {}\nexec(compile(%r, '<sub-%07d>', 'exec'), ns)\n"
                            "ns['s%07d'](%d)\nns.clear()\n"
                            % (SUB_SOURCE.format(n=n), n, n, n % 13))
                end(n)
        finally:
            interp.close()


def worker():
    thread_started()
    rounds(200)


def main():
    # A subinterpreter may run this file again as its __main__ (CPython
    # 3.15 does now and then): the process's own run marks the environment,
    # which later interpreters inherit, and makes the record exclusively; a
    # second run does nothing.
    mark = "PYFRAMES_CHURN_PID"
    if os.environ.get(mark) == str(os.getpid()):
        return
    os.environ[mark] = str(os.getpid())
    if not open_record():
        return
    sys.setrecursionlimit(10000)
    thread_started()
    if FULL:
        threading.Thread(target=subinterpreters, daemon=True).start()
    os.write(1, b"ready\n")
    while True:
        t = threading.Thread(target=worker)
        t.start()
        rounds(200)
        t.join()


if __name__ == "__main__":
    main()
