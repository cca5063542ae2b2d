"""Benchmark: pyframes.Target.snapshot() against CPython's own
_remote_debugging.RemoteUnwinder on the same target, side by side.

Run it with the interpreter of the target (RemoteUnwinder reads only its own
version): python3.14 or python3.15.  For each depth it starts that
interpreter on a recursion blocked in a C call at the bottom (a pipe
handshake says when), opens both readers once, then alternates rounds of
`repeat` calls of each (so both see the machine at the same moments) and
reports the median per call.  RemoteUnwinder runs with all_threads=True,
without its frame cache (cache_frames=False), and, for reference, with it.

    python3.15 tests/bench/bench_unwinder.py [--depths 200,1000] [--repeat 200] [--rounds 7]
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_dump import start  # noqa: E402
import pyframes  # noqa: E402  (bench_dump put it on the path)


def per_call(fn, repeat):
    t0 = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - t0) / repeat


def unwinder(pid, cached):
    from _remote_debugging import RemoteUnwinder
    try:
        return RemoteUnwinder(pid, all_threads=True, cache_frames=cached)
    except TypeError:  # a version without cache_frames
        if cached:
            return None
        return RemoteUnwinder(pid, all_threads=True)


def depth_of_unwinder(trace):
    """Frames in RemoteUnwinder's answer (its shape differs by version)."""
    total = 0
    for item in trace:
        threads = getattr(item, "threads", None)
        if threads is None:
            threads = [item]
        for th in threads:
            frames = getattr(th, "frame_info", None)
            if frames is None and isinstance(th, tuple):
                frames = th[1]
            total += len(frames or ())
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--depths", default="200,1000")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    print("python %s, libpyframes %s" % (sys.version.split()[0], pyframes.library_version()))
    print("%6s %14s %14s %8s %16s %16s %8s" % (
        "depth", "pyframes us", "unwinder us", "ratio", "pyframes cached", "unwinder cached",
        "ratio"))
    for depth in [int(d) for d in args.depths.split(",")]:
        proc = start(sys.executable, depth)
        try:
            with pyframes.attach(proc.pid) as target, \
                    pyframes.attach(proc.pid, cache=True) as ctarget:
                plain = unwinder(proc.pid, False)
                cached = unwinder(proc.pid, True)
                ours = sum(len(t.frames) for t in target.snapshot().threads())
                theirs = depth_of_unwinder(plain.get_stack_trace())
                if abs(ours - theirs) > 2:
                    raise SystemExit("frame counts differ: pyframes %d, unwinder %d"
                                     % (ours, theirs))
                a, b, c, d = [], [], [], []
                for _ in range(args.rounds):
                    a.append(per_call(target.snapshot, args.repeat))
                    b.append(per_call(plain.get_stack_trace, args.repeat))
                    # both caches move the same anchor: each is timed on its
                    # own, its first call re-anchoring
                    d.append(per_call(ctarget.snapshot, args.repeat))
                    if cached is not None:
                        c.append(per_call(cached.get_stack_trace, args.repeat))
                ma, mb = statistics.median(a), statistics.median(b)
                md = statistics.median(d)
                if c:
                    mc = statistics.median(c)
                    tail = "%16.1f %7.2fx" % (mc * 1e6, mc / md)
                else:
                    tail = "%16s %8s" % ("-", "-")
                print("%6d %14.1f %14.1f %7.2fx %16.1f %s" % (
                    depth, ma * 1e6, mb * 1e6, mb / ma, md * 1e6, tail))
        finally:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
