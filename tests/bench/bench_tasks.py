"""Benchmark: the asyncio task tree of a process with N tasks, side by side:
py-bt-fast --tasks (gdb), pystack --tasks (lldb) and CPython's own
``python3.X -m asyncio pstree PID``, on the same process in one run.

The target (readiness by a pipe handshake) runs one event loop whose main
task gathers N tasks, each suspended three coroutines deep in an Event
wait.  In one gdb session: the first command after attaching (cold) and the
median of repeated ones (warm), output printed to gdb's stdout (a pipe);
likewise in one lldb session; then pstree, a new process per run (that is
how it is used), median wall time, output to a pipe.

    python3 tests/bench/bench_tasks.py [--python python3.14] [--tasks 1000,10000]
        [--repeat 5] [--reader auto]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from bench_dump import debugger_results, start_source, write_script  # noqa: E402

TARGET = r"""
import asyncio, os, sys
n, fd = int(sys.argv[1]), int(sys.argv[2])

async def leaf(ev):
    await ev.wait()

async def middle(ev):
    await leaf(ev)

async def worker(ev):
    await middle(ev)

async def main():
    ev = asyncio.Event()
    tasks = [asyncio.create_task(worker(ev), name="idle-%d" % i) for i in range(n)]
    await asyncio.sleep(0)
    os.write(fd, b"ready\n")
    os.read(0, 1)  # blocks: the loop's task stays running here

asyncio.run(main())
"""

GDB_SCRIPT = r"""
import gdb, time, statistics, sys
def timed(cmd):
    t0 = time.perf_counter()
    gdb.execute(cmd)
    gdb.flush()
    return time.perf_counter() - t0
cmd = "py-bt-fast --tasks --reader {reader}"
cold = timed(cmd)
lines = gdb.execute(cmd, to_string=True).count("(T) ")
warm = statistics.median(timed(cmd) for _ in range({repeat}))
sys.stdout.write("RESULT gdb tasks=%d cold=%.6f warm=%.6f\n" % (lines, cold, warm))
sys.stdout.flush()
"""

LLDB_SCRIPT = r"""
import lldb, time, statistics
def timed(cmd):
    t0 = time.perf_counter()
    lldb.debugger.HandleCommand(cmd)  # printed to lldb's stdout
    return time.perf_counter() - t0
def captured(cmd):
    ro = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(cmd, ro)
    return ro.GetOutput() or ""
cmd = "pystack --tasks --reader {reader}"
cold = timed(cmd)
lines = captured(cmd).count("(T) ")
warm = statistics.median(timed(cmd) for _ in range({repeat}))
print("RESULT lldb tasks=%d cold=%.6f warm=%.6f" % (lines, cold, warm))
"""


def run_gdb(pid, reader, repeat):
    path = write_script(GDB_SCRIPT.format(reader=reader, repeat=repeat), "tasks_gdb")
    return debugger_results(["gdb", "--batch", "-nx", "-p", str(pid),
                     "-ex", "source %s/gdb/pyframes_gdb.py" % REPO, "-ex", "source " + path])


def run_lldb(pid, reader, repeat):
    path = write_script(LLDB_SCRIPT.format(reader=reader, repeat=repeat), "tasks_lldb")
    return debugger_results(["lldb", "--batch", "-x", "-p", str(pid),
                     "-o", "command script import %s/lldb/pyframes_lldb.py" % REPO,
                     "-o", "command script import " + path, "-o", "process detach"])


def run_pstree(python, pid, repeat):
    times, lines = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run([python, "-m", "asyncio", "pstree", str(pid)],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=1800)
        times.append(time.perf_counter() - t0)
        lines = out.stdout.count("(T) ")
        if out.returncode != 0:
            raise SystemExit("pstree failed: " + out.stderr[-500:])
    return lines, statistics.median(times)


def _field(row, name):
    return float(row[name]) if name in row else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="python3.14")
    ap.add_argument("--tasks", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--reader", default="auto", choices=("auto", "pid", "debugger"))
    a = ap.parse_args()
    print("| tasks | gdb py-bt-fast --tasks warm (cold) | lldb pystack --tasks warm (cold) "
          "| %s -m asyncio pstree | pstree / gdb |" % a.python)
    print("|---|---|---|---|---|")
    for n in [int(x) for x in a.tasks.split(",")]:
        proc = start_source(a.python, TARGET, n)
        try:
            gdb = run_gdb(proc.pid, a.reader, a.repeat)
            lldb = run_lldb(proc.pid, a.reader, a.repeat)
            shown, pstree = run_pstree(a.python, proc.pid, max(1, min(a.repeat, 3)))
        finally:
            proc.kill()
            proc.wait()
        g, ll = gdb, lldb
        gw, gc = _field(g, "warm"), _field(g, "cold")
        lw, lc = _field(ll, "warm"), _field(ll, "cold")
        sys.stderr.write("tasks shown: gdb %s, lldb %s, pstree %d\n"
                         % (_field(g, "tasks"), _field(ll, "tasks"), shown))

        def ms(v):
            return "?" if v is None else "%.1f ms" % (v * 1e3)
        print("| %d | %s (%s) | %s (%s) | %s | %s |" % (
            n, ms(gw), ms(gc), ms(lw), ms(lc), ms(pstree),
            "%.1fx" % (pstree / gw) if gw else "?"))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
