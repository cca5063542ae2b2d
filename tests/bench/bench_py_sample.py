"""Benchmark: ``py-sample`` in gdb and lldb on a live local process (it runs
while sampled by PID: one stop) beside ``python3 -m pyframes sample`` and
CPython's own profiler, on the same CPU-busy process 200 frames deep whose
top frames keep changing (tests/bench/busy_deep.py), in alternating rounds.

    python3 tests/bench/bench_py_sample.py [--python python3.15] [--depth 200]
                                           [--samples 5000] [--rounds 3]

Run inside the sandbox with PYFRAMES_LIBRARY set (see docs/benchmarks.md).
Each debugger attaches, loads its plugin and runs ``py-sample -n SAMPLES
--interval 0`` (as fast as it can); the rate is the one py-sample prints
(samples over the time from its start to the process stopped again, the
resume and the stop included).  The command line samples for 2 s with
``--rate 0``; CPython's profiler for 2 s at ``-r 1000khz``.
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
sys.path.insert(0, HERE)
from bench_sampling import cpython, pyframes, run  # noqa: E402

_RATE = re.compile(r"^(\d+) samples in ([\d.]+) s \((\d+)/s\); (\d+) failed", re.M)


def debugger(name, pid, samples):
    command = "py-sample -n %d --interval 0 --top 0 --main" % samples
    if name == "gdb":
        argv = ["gdb", "--batch", "-nx", "-iex", "set pagination off", "-p", str(pid),
                "-ex", "source " + os.path.join(ROOT, "gdb", "pyframes_gdb.py"), "-ex", command]
    else:
        argv = ["lldb", "--batch", "-x", "-O", "settings set target.parallel-module-load false",
                "-p", str(pid), "-o", "command script import " +
                os.path.join(ROOT, "lldb", "pyframes_lldb.py"), "-o", command,
                "-o", "process detach"]
    text = run(argv)
    m = _RATE.search(text)
    if not m or "ran while sampled by PID" not in text:
        raise SystemExit("%s said:\n%s" % (name, text[-3000:]))
    if "received signal" in text[m.start():] or "stop reason" in text[m.start():]:
        raise SystemExit("%s printed a stop report:\n%s" % (name, text[-3000:]))
    return float(m.group(3)), 100.0 * int(m.group(4)) / int(m.group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default="python3.15")
    parser.add_argument("--depth", type=int, default=200)
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    target = subprocess.Popen([args.python, os.path.join(HERE, "busy_deep.py"),
                               str(args.depth)], stdout=subprocess.PIPE)
    results = {}
    try:
        if target.stdout.readline() != b"ready\n":
            raise SystemExit("the target did not start")
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                row = [("CPython profiling.sampling", cpython(args.python, target.pid, 2, tmp)),
                       ("pyframes sample", pyframes(target.pid, 2, [])),
                       ("gdb py-sample", debugger("gdb", target.pid, args.samples)),
                       ("lldb py-sample", debugger("lldb", target.pid, args.samples))]
                for name, (rate, failed) in row:
                    results.setdefault(name, []).append((rate, failed))
                print("round %d: %s" % (r + 1, "; ".join(
                    "%s %.0f/s (%.2f%% failed)" % (n, rate, f) for n, (rate, f) in row)))
    finally:
        target.kill()
        target.wait()
    base = statistics.median(rate for rate, _ in results["CPython profiling.sampling"])
    print("\n| tool (median of %d rounds) | samples/s | failed | vs CPython |" % args.rounds)
    print("|---|---|---|---|")
    for name, values in results.items():
        rate = statistics.median(v[0] for v in values)
        failed = statistics.median(v[1] for v in values)
        print("| %s | %s | %.2f %% | %.2fx |" % (name, "{:,.0f}".format(rate), failed,
                                                rate / base))


if __name__ == "__main__":
    main()
