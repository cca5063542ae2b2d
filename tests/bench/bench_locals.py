"""Benchmark: ``py-locals`` in gdb -- CPython's own (python3.X-gdb.py, with
the -dbg package's DWARF) against pyframes' (``pyf-locals``) -- on the same
frame of 10 locals of mixed types (tests/bench/locals_target.py), warm, in
one gdb session, output printed as a user sees it.

    python3 tests/bench/bench_locals.py [--python python3.14] [--runs 50]

Run inside the sandbox with PYFRAMES_LIBRARY set (see docs/benchmarks.md).
Each command runs once to warm up, then --runs times, alternating in blocks
of 10; prints the mean time of each and their ratio (wall clock, and gdb's
CPU time, which a loaded machine changes less), and checks both showed
the same values.  A third command, timed the same way, prints what
pyf-locals printed and does nothing else: gdb's own cost of a Python
command and its output, the floor of any gdb command on that frame.  Before gdb attaches, the library's own part is measured on
the same frame: ``pyf_frame_locals`` alone (warm, its result freed unread),
its time and reader calls.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "native", "python"))

import pyframes  # noqa: E402
from bench_dump_locals import _library_call, _timed  # noqa: E402

SCRIPT = r'''
python
import time, gdb
def _timed(cmd, n):
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        gdb.execute(cmd)
    return time.perf_counter() - t0, time.process_time() - c0
gdb.execute("py-locals")
gdb.execute("pyf-locals")
# the floor: a gdb command that prints what pyf-locals printed and does
# nothing else (gdb's dispatch of a Python command and its output)
_text = gdb.execute("pyf-locals", to_string=True)
class _Floor(gdb.Command):
    def __init__(self):
        super().__init__("pyf-floor", gdb.COMMAND_USER)
    def invoke(self, arg, from_tty):
        gdb.write(_text)
_Floor()
_t = {"py-locals": [0.0, 0.0], "pyf-locals": [0.0, 0.0], "pyf-floor": [0.0, 0.0]}
for _block in range(%(blocks)d):
    for _cmd in ("py-locals", "pyf-locals", "pyf-floor"):
        _wall, _cpu = _timed(_cmd, 10)
        _t[_cmd][0] += _wall
        _t[_cmd][1] += _cpu
_n = 10 * %(blocks)d
print("RESULT cpython_ms=%%.3f pyframes_ms=%%.3f cpython_cpu=%%.3f pyframes_cpu=%%.3f "
      "floor_ms=%%.3f floor_cpu=%%.3f" %% (
    1e3 * _t["py-locals"][0] / _n, 1e3 * _t["pyf-locals"][0] / _n,
    1e3 * _t["py-locals"][1] / _n, 1e3 * _t["pyf-locals"][1] / _n,
    1e3 * _t["pyf-floor"][0] / _n, 1e3 * _t["pyf-floor"][1] / _n))
end
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default="python3.14")
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    python = subprocess.run(["sh", "-c", "command -v %s" % args.python],
                            capture_output=True, text=True).stdout.strip()
    target = subprocess.Popen([python, os.path.join(HERE, "locals_target.py")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    script = os.path.join("/tmp", "bench_locals_%d.gdb" % os.getpid())
    try:
        if target.stdout.readline() != b"ready\n":
            raise SystemExit("the target did not start")
        with pyframes.attach(target.pid) as t:
            frame = [f.frame_addr for th in t.snapshot().threads() for f in th.frames
                     if f.function == "hold"][0]
            read = _library_call(t)
            library = _timed(t, 1, lambda: [read(frame) for _ in range(1000)])
        with open(script, "w") as f:
            f.write(SCRIPT % {"blocks": max(1, args.runs // 10)})
        out = subprocess.run(
            ["gdb", "--batch", "-nx", "-iex", "set pagination off", "-p", str(target.pid),
             "-ex", "source " + os.path.join(ROOT, "gdb", "pyframes_gdb.py"),
             "-ex", "py-locals", "-ex", "pyf-locals", "-x", script],
            capture_output=True, text=True, timeout=600).stdout
    finally:
        target.kill()
        target.wait()
        if os.path.exists(script):
            os.unlink(script)
    m = re.search(r"RESULT cpython_ms=([\d.]+) pyframes_ms=([\d.]+) cpython_cpu=([\d.]+) "
                  r"pyframes_cpu=([\d.]+) floor_ms=([\d.]+) floor_cpu=([\d.]+)", out)
    if not m:
        raise SystemExit("gdb said:\n" + out[-3000:])
    # the first py-locals and pyf-locals, printed before the timing
    cpython = sorted(set(re.findall(r"^(\w+) = (.*)$", out, re.M)))
    wall_c, wall_p, cpu_c, cpu_p, wall_f, cpu_f = (float(g) for g in m.groups())
    print("CPython py-locals: %.3f ms; pyframes pyf-locals: %.3f ms; %.1fx" % (
        wall_c, wall_p, wall_c / wall_p))
    print("gdb's CPU time: py-locals %.3f ms; pyf-locals %.3f ms; %.1fx" % (
        cpu_c, cpu_p, cpu_c / cpu_p))
    print("the floor (a gdb command printing the same lines, doing nothing else): %.3f ms "
          "(CPU %.3f ms): no gdb command can be more than %.1fx faster than CPython's "
          "py-locals here" % (wall_f, cpu_f, wall_c / wall_f))
    print("the library alone (pyf_frame_locals of that frame): %.3f ms, %.1f reader calls, "
          "%.0f bytes" % (1e3 * library[0] / 1000, library[1] / 1000, library[2] / 1000))
    print("values seen (both commands): %d distinct name = value lines" % len(cpython))
    for name, value in cpython[:24]:
        print("  %s = %s" % (name, value))


if __name__ == "__main__":
    sys.exit(main())
