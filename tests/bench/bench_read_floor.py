"""Benchmark: what half of RemoteUnwinder(cache_frames=True)'s time would
take.  A cached Target.snapshot() of a stack that did not move makes one
process_vm_readv (the runtime's interpreter list, the interpreter, the
thread state, the top frame, the thread state's top again: 5 ranges);
CPython's RemoteUnwinder with its frame cache makes two (interpreter,
thread state and top frame; then its anchor).  Side by side on one target,
in alternating rounds: both, and from the same Python process through
ctypes, one process_vm_readv of 5, 3 and 1 of those ranges and nothing
else (tests/bench/read_floor.c), and a ctypes call that makes no system
call.  "unwinder/this" is how many times faster than RemoteUnwinder each
line is: no reader that reads those ranges once per call can beat its line.

    python3.15 tests/bench/bench_read_floor.py [--depth 200] [--rounds 15]
"""
import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_dump import start  # noqa: E402
import pyframes  # noqa: E402  (bench_dump put it on the path)

# What the library's one read of a cached, unmoved 3.15 snapshot holds
# (Debian's 3.15.2: strace of Target.snapshot()): bytes per range.
RUNTIME_HEAD, INTERP, TSTATE, FRAME, CHECK = 8, 688, 976, 88, 16


def build_helper():
    so = os.path.join(tempfile.mkdtemp(prefix="pyframes_floor_"), "read_floor.so")
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", os.path.join(HERE, "read_floor.c"),
                    "-o", so], check=True)
    lib = ctypes.CDLL(so)
    lib.configure.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64),
                              ctypes.POINTER(ctypes.c_uint64))
    return lib


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depth", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    from _remote_debugging import RemoteUnwinder
    lib = build_helper()
    proc = start(sys.executable, args.depth)
    try:
        pid = proc.pid
        with pyframes.attach(pid, cache=True) as target:
            snap = target.snapshot()
            interp = snap.interpreters[0]
            thread = interp.threads[0]
            ranges = [(snap.python.runtime_addr, RUNTIME_HEAD), (interp.addr, INTERP),
                      (thread.tstate_addr, TSTATE), (thread.frames[0].frame_addr, FRAME),
                      (thread.tstate_addr, CHECK)]
            sets = {"one read, 5 ranges (the snapshot's)": ranges,
                    "one read, 3 ranges (interp, thread, frame)": ranges[1:4],
                    "one read, 1 range (16 bytes)": ranges[4:]}

            def reader(rs):
                addrs = (ctypes.c_uint64 * len(rs))(*[a for a, _ in rs])
                lens = (ctypes.c_uint64 * len(rs))(*[n for _, n in rs])

                def setup():
                    if lib.configure(pid, len(rs), addrs, lens) != 0 or lib.read_ranges() != 0:
                        raise SystemExit("the helper could not read the target")
                return setup

            unwinder = RemoteUnwinder(pid, all_threads=True, cache_frames=True)
            rows = [("RemoteUnwinder(cache_frames=True)", None, unwinder.get_stack_trace),
                    ("Target.snapshot(), attach(cache=True)", None, target.snapshot)]
            rows += [(name, reader(rs), lib.read_ranges) for name, rs in sets.items()]
            rows.append(("ctypes call, no system call", None, lib.nothing))
            times = {name: [] for name, _, _ in rows}
            for _ in range(args.rounds):
                for name, setup, fn in rows:
                    if setup is not None:
                        setup()
                    fn()
                    t0 = time.perf_counter()
                    for _ in range(args.repeat):
                        fn()
                    times[name].append((time.perf_counter() - t0) / args.repeat * 1e6)
            same = target.stats()["same_reads"]
        base = statistics.median(times[rows[0][0]])
        print("depth %d, %s, median of %d rounds of %d calls (%d snapshots given again)"
              % (args.depth, sys.version.split()[0], args.rounds, args.repeat, same))
        print("| call | µs | unwinder/this |")
        print("|---|---|---|")
        for name, _, _ in rows:
            m = statistics.median(times[name])
            print("| %s | %.2f | %.2f× |" % (name, m, base / m))
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
