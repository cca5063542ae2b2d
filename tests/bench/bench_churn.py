"""Benchmark: snapshots of a target that never stops changing
(tests/python/targets/churn.py full: code objects made and freed at once,
threads starting and ending), pyframes.Target.snapshot() uncached and
cached against CPython's _remote_debugging.RemoteUnwinder, side by side.

Run it with the interpreter of the target (RemoteUnwinder reads only its own
version): python3.14 or python3.15.  Both readers are opened once; rounds of
`repeat` calls of each alternate and the median per call is reported, with
the share of calls that failed (pyframes: an exception or a thread marked
incomplete; RemoteUnwinder: an exception) and pyframes' count of code
objects found freed or replaced while they were read (code_changed).

    python3.15 tests/bench/bench_churn.py [--repeat 200] [--rounds 7]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_dump import start_source  # noqa: E402,F401  (puts pyframes on the path)
import pyframes  # noqa: E402

CHURN = os.path.join(HERE, "..", "python", "targets", "churn.py")


def timed(fn, repeat):
    """(seconds per call, failed calls) of repeat calls of fn, which
    returns how many threads it could not read (0: a complete read) or
    raises."""
    failed = 0
    t0 = time.perf_counter()
    for _ in range(repeat):
        try:
            failed += 1 if fn() else 0
        except Exception:  # noqa: BLE001 - a failed read is counted, not fatal
            failed += 1
    return (time.perf_counter() - t0) / repeat, failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    from _remote_debugging import RemoteUnwinder
    proc = subprocess.Popen([sys.executable, CHURN, "full"], stdout=subprocess.PIPE)
    try:
        if proc.stdout.readline() != b"ready\n":
            raise SystemExit("churn.py did not start")
        with pyframes.attach(proc.pid) as target, \
                pyframes.attach(proc.pid, cache=True) as ctarget:
            unwinder = RemoteUnwinder(proc.pid, all_threads=True)

            def ours(t):
                snap = t.snapshot()
                return sum(1 for i in snap.interpreters for th in i.threads if th.error)

            runs = {"uncached": [], "cached": [], "unwinder": []}
            fails = dict.fromkeys(runs, 0)
            for _ in range(args.rounds):
                for name, fn in (("uncached", lambda: ours(target)),
                                 ("cached", lambda: ours(ctarget)),
                                 ("unwinder", lambda: unwinder.get_stack_trace() and 0)):
                    per, failed = timed(fn, args.repeat)
                    runs[name].append(per)
                    fails[name] += failed
            changed = target.stats()["code_changed"] + ctarget.stats()["code_changed"]
    finally:
        proc.kill()
        proc.wait()
    calls = args.rounds * args.repeat
    print("python %s, libpyframes %s, %d calls each"
          % (sys.version.split()[0], pyframes.library_version(), calls))
    base = statistics.median(runs["unwinder"])
    for name in ("uncached", "cached", "unwinder"):
        m = statistics.median(runs[name])
        print("%-9s %9.1f us  %5.2fx of RemoteUnwinder's speed  failed %5.2f %%"
              % (name, m * 1e6, base / m, 100.0 * fails[name] / calls))
    print("code objects freed or replaced while read (pyframes): %d" % changed)


if __name__ == "__main__":
    main()
