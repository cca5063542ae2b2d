"""Benchmark: what the thread state (names, native waits: pyframes.waits)
adds to a stack command over every thread of a process with many threads.

Starts a target with N threads (a third blocked in time.sleep, a third on a
Lock, a third in os.read; default 200), then times, warm (medians):
  - gdb: py-bt-fast --all --no-source, with the thread state (/proc, and
    the debugger's unwind of the threads /proc says too little of) and
    without it (the Front's describe switched off in the session); then the
    same on a core of the target (gcore), where every thread is unwound;
  - lldb: pystack --all --no-source, the same two;
  - the command line: dump PID --no-source, the same two (in-process);
and each with everything on: the thread state and --locks (held locks,
waits and cycles; on 3.13 the waits inferred from frames' stacks).

    python3 tests/bench/bench_thread_state.py [--python python3.13] [--threads 200]
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
PACKAGE = os.path.join(REPO, "native", "python")

TARGET = r"""
import os, sys, threading, time
n = int(sys.argv[1])
lock = threading.Lock(); lock.acquire()
r, w = os.pipe()
def sleeper(): time.sleep(1e6)
def locker(): lock.acquire()
def reader(): os.read(r, 1)
kinds = (sleeper, locker, reader)
for i in range(n):
    threading.Thread(target=kinds[i % 3], name="worker-%d" % i, daemon=True).start()
time.sleep(0.5)
sys.stdout.write("ready\n"); sys.stdout.flush()
time.sleep(1e6)
"""

OFF = "pyframes.session._DebuggerFront.describe = lambda self, snapshot, threads: threads"

# timed(cmd) in each debugger, then the one measurement
GDB_TIMED = r"""
import gdb
def timed(cmd):
    t0 = time.perf_counter()
    gdb.execute(cmd, to_string=True)
    return time.perf_counter() - t0
"""

LLDB_TIMED = r"""
import lldb
def timed(cmd):
    ro = lldb.SBCommandReturnObject()
    t0 = time.perf_counter()
    lldb.debugger.GetCommandInterpreter().HandleCommand(cmd, ro)
    return time.perf_counter() - t0
"""

MEASURE = r"""
import time, statistics, sys
import pyframes.session
{timed}
cmd = "{cmd} --all --no-source"
timed(cmd)
on = statistics.median(timed(cmd) for _ in range({repeat}))
timed(cmd + " --locks")
locks = statistics.median(timed(cmd + " --locks") for _ in range({repeat}))
{off}
timed(cmd)
off = statistics.median(timed(cmd) for _ in range({repeat}))
sys.stdout.write("RESULT {what} on=%.4f locks=%.4f off=%.4f\n" % (on, locks, off))
sys.stdout.flush()
{after}
"""

CLI_SCRIPT = r"""
import io, statistics, sys, time
from pyframes import cli
def timed(argv):
    out = sys.stdout
    sys.stdout = io.StringIO()
    try:
        t0 = time.perf_counter()
        cli.main(argv)
        return time.perf_counter() - t0
    finally:
        sys.stdout = out
argv = ["dump", "{pid}", "--no-source"]
timed(argv)
on = statistics.median(timed(argv) for _ in range({repeat}))
timed(argv + ["--locks"])
locks = statistics.median(timed(argv + ["--locks"]) for _ in range({repeat}))
cli._CommandLineFront.describe = lambda self, snapshot, threads: threads
off = statistics.median(timed(argv) for _ in range({repeat}))
sys.stdout.write("RESULT cli on=%.4f locks=%.4f off=%.4f\n" % (on, locks, off))
"""


def run(argv):
    env = dict(os.environ, PYTHONPATH=PACKAGE)
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900).stdout
    m = re.search(r"^RESULT .*$", out, re.M)
    return m.group(0) if m else "no result:\n" + out[-2000:]


def _which(name):
    import shutil
    return shutil.which(name) or name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="python3.13")
    ap.add_argument("--threads", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    target = subprocess.Popen([args.python, "-c", TARGET, str(args.threads)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "ready"
        tmp = "/tmp/pyf-bench-thread-state-%d" % os.getpid()
        core = tmp + ".core"
        scripts = {
            ".gdb.py": (GDB_TIMED, "py-bt-fast", "gdb live",
                        "gdb.execute('gcore %s', to_string=True)" % core),
            ".core.py": (GDB_TIMED, "py-bt-fast", "gdb core", ""),
            ".lldb.py": (LLDB_TIMED, "pystack", "lldb", ""),
        }
        for suffix, (timed, cmd, what, after) in scripts.items():
            with open(tmp + suffix, "w") as f:
                f.write(MEASURE.format(timed=timed, cmd=cmd, repeat=args.repeat, off=OFF,
                                       what=what, after=after))
        print("%s, %d threads" % (args.python, args.threads + 1))
        print(run(["gdb", "--batch", "-nx", "-p", str(target.pid),
                   "-ex", "source " + os.path.join(REPO, "gdb", "pyframes_gdb.py"),
                   "-ex", "source " + tmp + ".gdb.py"]))
        print(run(["gdb", "--batch", "-nx", os.path.realpath(_which(args.python)), core,
                   "-ex", "source " + os.path.join(REPO, "gdb", "pyframes_gdb.py"),
                   "-ex", "source " + tmp + ".core.py"]))
        print(run(["lldb", "--batch", "-x", "-O",
                   "settings set target.parallel-module-load false",
                   "-p", str(target.pid),
                   "-o", "command script import " + os.path.join(REPO, "lldb", "pyframes_lldb.py"),
                   "-o", "script exec(open(%r).read())" % (tmp + ".lldb.py"),
                   "-o", "process detach"]))
        print(run([sys.executable, "-c", CLI_SCRIPT.format(pid=target.pid,
                                                            repeat=args.repeat)]))
        for suffix in (".gdb.py", ".core.py", ".lldb.py", ".core"):
            if os.path.exists(tmp + suffix):
                os.unlink(tmp + suffix)
    finally:
        target.kill()
        target.wait()


if __name__ == "__main__":
    main()
