"""Benchmark: ``python3 -m pyframes sample PID --rate 0`` against CPython's
own profiler (``python3.15 -m profiling.sampling attach -r 1000khz``) on the
same CPU-busy process 200 frames deep whose top frames keep changing
(tests/bench/busy_deep.py), in alternating rounds of the same length.

    python3 tests/bench/bench_sampling.py [--python python3.15] [--depth 200]
                                          [--seconds 2] [--rounds 3] [--gil]

--gil: what ``--mode gil`` costs instead (any CPython 3.13+ with a GIL):
``pyframes sample`` against ``pyframes sample --mode gil`` (PYF_SNAP_GIL on
3.13/3.14), in alternating rounds; no CPython profiler.

Run inside the sandbox with PYFRAMES_LIBRARY set (see docs/benchmarks.md).
Prints samples per second and the failed share of each tool, per round and
the medians.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(argv, env=None):
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=env, timeout=600)
    return out.stdout.decode("utf-8", "replace")


def cpython(python, pid, seconds, tmp):
    text = run([python, "-m", "profiling.sampling", "attach", "-r", "1000khz", "-d",
                str(seconds), "--collapsed", "-o", os.path.join(tmp, "cpython.txt"), str(pid)])
    rate = re.search(r"Sample rate: ([\d.]+)", text)
    err = re.search(r"Error rate: ([\d.]+)", text)
    if not rate:
        raise SystemExit("profiling.sampling said:\n" + text)
    return float(rate.group(1)), float(err.group(1)) if err else float("nan")


def pyframes(pid, seconds, extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "native", "python")
    # the main thread, as CPython's profiler samples it by default
    text = run([sys.executable, "-m", "pyframes", "sample", str(pid), "--main", "--rate", "0",
                "--duration", str(seconds), "--top", "0"] + extra, env)
    m = re.search(r"^(\d+) samples in ([\d.]+) s \((\d+)/s\); (\d+) failed \(([\d.]+)%\)",
                  text, re.M)
    if not m:
        raise SystemExit("pyframes said:\n" + text)
    return float(m.group(3)), float(m.group(5))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default="python3.15")
    parser.add_argument("--depth", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--gil", action="store_true",
                        help="pyframes sample against pyframes sample --mode gil")
    args = parser.parse_args()
    target = subprocess.Popen([args.python, os.path.join(HERE, "busy_deep.py"),
                               str(args.depth)], stdout=subprocess.PIPE)
    if args.gil:
        tools = {"pyframes sample": [], "pyframes sample --mode gil": ["--mode", "gil"]}
    else:
        tools = {"pyframes sample": [], "pyframes sample --no-cache": ["--no-cache"]}
    first = "pyframes sample" if args.gil else "CPython profiling.sampling"
    results = dict([(first, [])] + [(name, []) for name in tools])
    try:
        if target.stdout.readline() != b"ready\n":
            raise SystemExit("the target did not start")
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                if not args.gil:
                    results[first].append(cpython(args.python, target.pid, args.seconds, tmp))
                for name, extra in tools.items():
                    results[name].append(pyframes(target.pid, args.seconds, extra))
                print("round %d: " % (r + 1) + "; ".join(
                    "%s %.0f/s (%.2f%% failed)" % (k, v[-1][0], v[-1][1])
                    for k, v in results.items()))
    finally:
        target.kill()
        target.wait()
    base = statistics.median(v[0] for v in results[first])
    print("\n%-30s %12s %10s %8s" % ("tool (median of %d)" % args.rounds, "samples/s",
                                     "failed %", "ratio"))
    for name, vals in results.items():
        rate = statistics.median(v[0] for v in vals)
        print("%-30s %12.0f %10.2f %7.2fx" % (name, rate,
                                              statistics.median(v[1] for v in vals),
                                              rate / base))


if __name__ == "__main__":
    main()
