"""Benchmark: ``dump --locals`` against the plain dump on a thread 1,000
frames deep with 10 locals per frame (tests/bench/deep_locals_target.py),
warm (one Target, the command run once before), through the one stack
command the CLI runs, its text written to /dev/null as a terminal would
get it.

    python3 tests/bench/bench_dump_locals.py [--python python3.14] [--depth 1000]
                                             [--runs 5]

Run inside the sandbox with PYFRAMES_LIBRARY set (see docs/benchmarks.md).
Prints the median time of each (and of this process's CPU time) and the
library's reader calls and bytes per frame with --locals; then the same frames' locals read without the
command: ``Target.frame_locals`` of each frame (the library and the
conversion to Python objects, no text), and the library's
``pyf_frame_locals`` alone (through the target's ctypes handle, the
result freed unread); and the text of those locals alone
(``values.local_lines`` of each frame's FrameValues, read before).
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
from pyframes import cli, stack_command, values  # noqa: E402


def _library_call(t):
    """pyf_frame_locals of one frame, its result freed unread."""
    ffi, lib, handle = t._abi, t._lib, t._check_open()
    req = ffi.pyf_values_request()
    req.struct_size = ffi.ctypes.sizeof(req)
    out = ffi.POINTER(ffi.pyf_values)()

    def read(addr):
        if lib.pyf_frame_locals(handle, addr, ffi.ctypes.byref(req), ffi.ctypes.byref(out)) == 0:
            lib.pyf_values_free(out)
    return read


def _timed(t, runs, body):
    """The median time of body(), the reader calls and bytes of one run, and
    the median CPU time of this process (time.process_time: what a loaded
    machine changes least)."""
    body()  # warm
    times, cpu = [], []
    s0 = t.stats()
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        body()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    s1 = t.stats()
    return (statistics.median(times), (s1["read_calls"] - s0["read_calls"]) / runs,
            (s1["bytes_read"] - s0["bytes_read"]) / runs, statistics.median(cpu))


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
                results[name] = _timed(t, args.runs,
                                       lambda: out.write(stack_command.run(t, options, front)))
            addrs = [f.frame_addr for th in t.snapshot().threads() for f in th.frames]
            for name, read in (("frame_locals", lambda a: t.frame_locals(a)),
                               ("pyf_frame_locals", _library_call(t))):
                results[name] = _timed(t, args.runs, lambda: [read(a) for a in addrs])
            fvs = [t.frame_locals(a) for a in addrs]
            results["local_lines"] = _timed(
                t, args.runs, lambda: [values.local_lines(fv, t.python) for fv in fvs])
    finally:
        target.kill()
        target.wait()
    for name, (sec, reads, nbytes, cpu) in results.items():
        print("%-16s %8.1f ms (CPU %6.1f ms)  %8.0f reader calls  %10.0f bytes  (per frame: "
              "%.1f calls, %.0f bytes)" % (name, 1e3 * sec, 1e3 * cpu, reads, nbytes,
                                           reads / args.depth, nbytes / args.depth))


if __name__ == "__main__":
    main()
