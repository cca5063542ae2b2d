"""Benchmark: ``dump --locals`` against the plain dump on a thread 1,000
frames deep with 10 locals per frame (tests/bench/deep_locals_target.py),
warm (one Target, the command run once before), through the one stack
command the CLI runs, its text written to /dev/null as a terminal would
get it.

    python3 tests/bench/bench_dump_locals.py [--python python3.14] [--depth 1000]
                                             [--runs 5]

Run inside the sandbox with PYFRAMES_LIBRARY set (see docs/benchmarks.md).
Prints the median time of each and the library's reader calls and bytes
per frame with --locals.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "native", "python"))

import pyframes  # noqa: E402
from pyframes import cli, stack_command  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default="python3.14")
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    target = subprocess.Popen([args.python, os.path.join(HERE, "deep_locals_target.py"),
                               str(args.depth)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        if target.stdout.readline() != b"ready\n":
            raise SystemExit("the target did not start")
        parse = cli.build_parser()
        results = {}
        with pyframes.attach(target.pid) as t, open(os.devnull, "w") as out:
            front = cli._CommandLineFront(target.pid)
            for name, extra in (("dump", []), ("dump --locals", ["--locals"])):
                options = parse.parse_args(["dump", str(target.pid), "--no-source"] + extra)
                out.write(stack_command.run(t, options, front))  # warm
                times = []
                s0 = t.stats()
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    out.write(stack_command.run(t, options, front))
                    times.append(time.perf_counter() - t0)
                s1 = t.stats()
                results[name] = (statistics.median(times),
                                 (s1["read_calls"] - s0["read_calls"]) / args.runs,
                                 (s1["bytes_read"] - s0["bytes_read"]) / args.runs)
    finally:
        target.kill()
        target.wait()
    for name, (sec, reads, nbytes) in results.items():
        print("%-14s %8.1f ms  %8.0f reader calls  %10.0f bytes  (per frame: %.1f calls, %.0f bytes)"
              % (name, 1e3 * sec, reads, nbytes, reads / args.depth, nbytes / args.depth))


if __name__ == "__main__":
    main()
