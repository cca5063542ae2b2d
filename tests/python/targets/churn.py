"""Target of test_sampling.py: a process that keeps changing.

Each round compiles a new function f<N> in a file named <round-N> (name and
file say the same N, so a frame whose name and file disagree mixes two code
objects), calls it at a depth that varies, and drops it (its code object is
freed and the memory reused by the next round's).  Worker threads start and
end all the time, each doing the same.  Writes "ready" once running; runs
until killed.

With the argument "full" (test_churn.py) it also keeps creating and dropping
generators and coroutines (each round's function runs as a generator and as
a coroutine too, so frames owned by generators come and go), lets the
recursion depth rise and fall over a wider range, and (3.14+) creates and
destroys subinterpreters that run rounds of their own (their files are
named <sub-N>, with N in their function's name: the same pairing rule).
"""
import os
import sys
import threading

FULL = len(sys.argv) > 1 and sys.argv[1] == "full"

SOURCE = """def f{n:06d}(depth, down):
    if depth:
        return f{n:06d}(depth - 1, down)
    return down()
"""


GEN_SOURCE = """def g{n:06d}(depth, down):
    if depth:
        yield from g{n:06d}(depth - 1, down)
    else:
        yield down()


async def c{n:06d}(depth, down):
    if depth:
        return await c{n:06d}(depth - 1, down)
    return down()
"""

def make(n):
    space = {}
    exec(compile(SOURCE.format(n=n), "<round-%06d>" % n, "exec"), space)
    return space["f%06d" % n]


def make_gen(n):
    space = {}
    exec(compile(GEN_SOURCE.format(n=n), "<round-%06d>" % n, "exec"), space)
    return space["g%06d" % n], space["c%06d" % n]


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


def rounds(start, step, count):
    for i in range(count):
        n = start + i * step
        make(n)(n % 17 if not FULL else n % 61, leaf)
        if FULL:
            gen, coro = make_gen(n)
            list(gen(n % 23, leaf))
            drive(coro(n % 19, leaf))


SUB_SOURCE = """
def s{n:06d}(depth):
    if depth:
        return s{n:06d}(depth - 1)
    total = 0
    for i in range(20000):
        total += i
    return total
"""


def subinterpreters():
    """Create a subinterpreter, run a few rounds in it, destroy it; again."""
    try:
        from concurrent import interpreters
    except ImportError:
        return
    n = 0
    while True:
        interp = interpreters.create()
        try:
            for _ in range(5):
                n += 1
                interp.exec("ns = {}\nexec(compile(%r, '<sub-%06d>', 'exec'), ns)\n"
                            "ns['s%06d'](%d)" % (SUB_SOURCE.format(n=n), n, n, n % 13))
        finally:
            interp.close()


def worker(start):
    rounds(start, 2, 200)


def main():
    sys.setrecursionlimit(10000)
    if FULL:
        threading.Thread(target=subinterpreters, daemon=True).start()
    os.write(1, b"ready\n")
    n = 0
    while True:
        t = threading.Thread(target=worker, args=(10000001 + 2 * n * 200,))
        t.start()
        rounds(n * 200, 1, 200)
        t.join()
        n += 1


main()
