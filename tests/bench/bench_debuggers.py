"""Benchmark: py-bt-fast (gdb) and pystack (lldb) against CPython's py-bt.

For each depth, starts a target whose main thread sits in a recursion of
that depth (readiness by a pipe handshake), then in ONE gdb session:
  - py-bt-fast cold: the first command after attaching (opens the target);
  - py-bt-fast warm: median of repeated commands;
  - py-bt warm: CPython's own command (from the -dbg package), run once to
    warm gdb's caches, then timed;
and in one lldb session: pystack cold and warm.  Times are measured inside
the debugger around the command, with its output printed to the debugger's
stdout (a pipe, as `gdb --batch` writes it: what a user waits for), or with
--captured, taken into a string instead.

CPython's py-bt comes from the -dbg packages (Debian's python3.X, auto-loaded
from gdb's own directories) or, for an interpreter that ships CPython's gdb
helper beside itself (pyenv's builds: bin/python3.X-gdb.py, e.g. --python
~/.pyenv/versions/3.12.1/bin/python3.12), from that file, which gdb then
auto-loads (`set auto-load safe-path /`).

    python3 tests/bench/bench_debuggers.py [--python python3.15] [--depths 10,100,1000,3000]
        [--reader auto] [--no-py-bt] [--captured]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from bench_dump import start  # noqa: E402

GDB_SCRIPT = r"""
import gdb, time, statistics
import sys
def timed(cmd, captured={captured}):
    t0 = time.perf_counter()
    out = gdb.execute(cmd, to_string=captured)
    gdb.flush()
    return time.perf_counter() - t0, out
def count(cmd):
    return gdb.execute(cmd, to_string=True).count('  File "')
cold = timed("py-bt-fast --reader {reader}")[0]
frames = count("py-bt-fast --reader {reader}")
warm = statistics.median(timed("py-bt-fast --reader {reader}")[0] for _ in range({repeat}))
sys.stdout.write("RESULT py-bt-fast frames=%d cold=%.6f warm=%.6f\n" % (frames, cold, warm))
if {py_bt}:
    timed("py-bt")
    t = timed("py-bt")[0]
    sys.stdout.write("RESULT py-bt frames=%d warm=%.6f\n" % (count("py-bt"), t))
sys.stdout.flush()
"""

LLDB_SCRIPT = r"""
import lldb, time, statistics
def captured(cmd):
    ro = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(cmd, ro)
    return ro.GetOutput() or ""
def timed(cmd):
    t0 = time.perf_counter()
    if {captured}:
        captured(cmd)
    else:
        lldb.debugger.HandleCommand(cmd)  # printed to lldb's stdout
    return time.perf_counter() - t0
cold = timed("pystack --reader {reader}")
frames = captured("pystack --reader {reader}").count('  File "')
warm = statistics.median(timed("pystack --reader {reader}") for _ in range({repeat}))
print("RESULT pystack frames=%d cold=%.6f warm=%.6f" % (frames, cold, warm))
"""


def cpython_helper(python):
    """Whether the interpreter ships CPython's gdb helper beside itself
    (bin/python3.X-gdb.py), as pyenv's builds do."""
    path = shutil.which(python)
    return bool(path) and os.path.exists(os.path.realpath(path) + "-gdb.py")


def run_gdb(pid, reader, repeat, py_bt, captured, helper=False):
    script = GDB_SCRIPT.format(reader=reader, repeat=repeat, py_bt=py_bt, captured=captured)
    path = f"/tmp/pyframes_bench_gdb_{os.getpid()}.py"
    with open(path, "w") as f:
        f.write(script)
    # helper: gdb auto-loads the interpreter's own py-bt from beside it
    cmd = ["gdb", "--batch", "-nx"] + (["-iex", "set auto-load safe-path /"] if helper else []) + [
           "-p", str(pid), "-ex", f"source {REPO}/gdb/pyframes_gdb.py", "-ex", f"source {path}"]
    out = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=600).stdout
    return [l for l in out.splitlines() if l.startswith("RESULT")]


def run_lldb(pid, reader, repeat, captured):
    script = LLDB_SCRIPT.format(reader=reader, repeat=repeat, captured=captured)
    path = f"/tmp/pyframes_bench_lldb_{os.getpid()}.py"
    with open(path, "w") as f:
        f.write(script)
    cmd = ["lldb", "--batch", "-p", str(pid),
           "-o", f"command script import {REPO}/lldb/pyframes_lldb.py",
           "-o", f"command script import {path}", "-o", "detach"]
    env = dict(os.environ)
    env.setdefault("LLDB_DEBUGSERVER_PATH", "/usr/bin/lldb-server")
    out = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                         text=True, timeout=600, env=env).stdout
    return [l for l in out.splitlines() if l.startswith("RESULT")]


def fmt(line):
    d = dict(re.findall(r"(\w+)=([\d.]+)", line))
    name = line.split()[1]
    parts = [f"{name}: {d['frames']} frames"]
    for k in ("cold", "warm"):
        if k in d:
            parts.append(f"{k} {float(d[k]) * 1e3:.2f} ms")
    return ", ".join(parts), d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="python3.15")
    ap.add_argument("--depths", default="10,100,1000,3000")
    ap.add_argument("--reader", default="auto")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--no-py-bt", action="store_true")
    ap.add_argument("--no-lldb", action="store_true")
    ap.add_argument("--captured", action="store_true",
                    help="take the output into a string instead of printing it")
    a = ap.parse_args()
    for depth in (int(x) for x in a.depths.split(",")):
        proc = start(a.python, depth)
        try:
            how = "captured" if a.captured else "printed"
            print(f"{a.python}, depth {depth}, reader {a.reader}, output {how}:")
            res = {}
            for line in run_gdb(proc.pid, a.reader, a.repeat, not a.no_py_bt, a.captured,
                                cpython_helper(a.python)):
                text, d = fmt(line)
                res[line.split()[1]] = d
                print("  gdb  " + text)
            if "py-bt" in res and "py-bt-fast" in res:
                ratio = float(res["py-bt"]["warm"]) / float(res["py-bt-fast"]["warm"])
                print(f"  gdb  py-bt warm / py-bt-fast warm: {ratio:.0f}x")
            if not a.no_lldb:
                for line in run_lldb(proc.pid, a.reader, a.repeat, a.captured):
                    print("  lldb " + fmt(line)[0])
        finally:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
