"""Benchmark: a full dump of a deep stack by PID.

Starts `python3.X` running a recursion of the given depth that blocks in a C
call at the bottom (readiness by a pipe handshake), then measures
pyframes.attach(pid).snapshot(): the first snapshot on a fresh target (cold)
and repeated snapshots on the same target (warm), with the reader counters.

    python3 tests/bench/bench_dump.py [--python python3.15] [--depth 1000] [--repeat 200]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "native", "python"))
import pyframes  # noqa: E402

TARGET = r"""
import os, sys
sys.setrecursionlimit(100000)
fd = int(sys.argv[2])
def rec(n):
    if n == 0:
        os.write(fd, b"ready\n"); os.read(0, 1)
        return
    rec(n - 1)
rec(int(sys.argv[1]) - 1)
"""


def start_source(python, source, *args):
    """`python -c source ARGS... FD`: a target that writes "ready" to the
    pipe FD once it is in place (the handshake); the process."""
    r, w = os.pipe()
    proc = subprocess.Popen([python, "-c", source] + [str(a) for a in args] + [str(w)],
                            stdin=subprocess.PIPE, pass_fds=(w,))
    os.close(w)
    with os.fdopen(r, "rb") as f:
        if f.readline() != b"ready\n":
            proc.kill()
            raise SystemExit("target did not start")
    return proc


def start(python, depth):
    return start_source(python, TARGET, depth)


def write_script(text, name):
    """A debugger script of the benchmark in /tmp; its path."""
    path = "/tmp/pyframes_bench_%d_%s.py" % (os.getpid(), name)
    with open(path, "w") as f:
        f.write(text)
    return path


def debugger_results(argv):
    """Run a debugger; the fields of the line "RESULT <who> key=value ..."
    it printed, as a dict of strings ({} when none, with its output shown)."""
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=1800)
    for line in done.stdout.splitlines():
        if line.startswith("RESULT"):
            return dict(item.split("=", 1) for item in line.split()[2:])
    sys.stderr.write("%s gave no result:\n%s\n%s\n" % (argv[0], done.stdout[-2000:],
                                                      done.stderr[-2000:]))
    return {}


def measure(pid, repeat):
    t0 = time.perf_counter()
    with pyframes.attach(pid) as t:
        snap = t.snapshot()
        cold = time.perf_counter() - t0
        cold_stats = t.stats()
        frames = sum(len(th.frames) for th in snap.threads())
        times = []
        t.reset_stats()
        for _ in range(repeat):
            t0 = time.perf_counter()
            t.snapshot()
            times.append(time.perf_counter() - t0)
        warm_stats = t.stats()
    return cold, cold_stats, statistics.median(times), warm_stats, frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="python3.15")
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=200)
    a = ap.parse_args()
    proc = start(a.python, a.depth)
    try:
        cold, cs, warm, ws, frames = measure(proc.pid, a.repeat)
    finally:
        proc.kill()
        proc.wait()
    n = a.repeat
    print(f"{a.python} depth {a.depth}: {frames} frames")
    print(f"  cold (open + first snapshot): {cold * 1e3:.2f} ms, "
          f"{cs['read_calls']} read calls, {cs['bytes_read']} bytes, "
          f"{cs['code_cache_misses']} distinct code objects")
    print(f"  warm snapshot (median of {n}): {warm * 1e3:.3f} ms, "
          f"{ws['read_calls'] / n:.1f} read calls, "
          f"{ws['bytes_read'] / n:.0f} bytes per snapshot")


if __name__ == "__main__":
    main()
