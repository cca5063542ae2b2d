"""Benchmark: the debuggers' own `bt` with and without the Python frames
(gdb's frame filter, lldb 22's frame provider), against CPython's `py-bt`
on the same stop.

The target's main thread is 1,000 Python frames deep, entered from C every
20 frames (each 20th call goes through `sorted(key=...)`): 50 eval-loop
calls.  In one gdb session: `bt -no-filters` (native only), `bt` (the
filter: native + Python frames), the first `bt` after the stop (cold: it
reads the Python stack) and the next ones (warm), and `py-bt`; in one lldb
22 session: `bt` with the provider, then without it (`target frame-provider
clear`).  Output printed to the debugger's stdout (a pipe); medians.

    python3 tests/bench/bench_bt.py [--python python3.14] [--repeat 5]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from bench_dump import debugger_results, start_source, write_script  # noqa: E402

TARGET = r"""
import os, sys
sys.setrecursionlimit(10000)
fd = int(sys.argv[1])

def level(n):
    if n == 0:
        os.write(fd, b"ready\n")
        os.read(0, 1)
        return 0
    if n % 20 == 0:
        return sorted([n], key=lambda v: level(v - 1))[0]
    return level(n - 1)

level(999)
"""

GDB_SCRIPT = r"""
import gdb, time, statistics, sys
def timed(cmd):
    t0 = time.perf_counter()
    gdb.execute(cmd)
    gdb.flush()
    return time.perf_counter() - t0
def count(cmd, marker):
    return gdb.execute(cmd, to_string=True).count(marker)
cold = timed("bt")
warm = statistics.median(timed("bt") for _ in range({repeat}))
plain = statistics.median(timed("bt -no-filters") for _ in range({repeat}))
hide = statistics.median(timed("bt -hide") for _ in range({repeat}))
python_frames = count("bt", "[python]")
native_frames = count("bt -no-filters", "\n#")
gdb.execute("py-bt", to_string=True)
pybt = timed("py-bt")
sys.stdout.write("RESULT gdb python=%d native=%d cold=%.6f warm=%.6f plain=%.6f pybt=%.6f "
                 "hide=%.6f\n" % (python_frames, native_frames + 1, cold, warm, plain, pybt, hide))
sys.stdout.flush()
"""

LLDB_SCRIPT = r"""
import lldb, time, statistics
def timed(cmd):
    t0 = time.perf_counter()
    lldb.debugger.HandleCommand(cmd)
    return time.perf_counter() - t0
def captured(cmd):
    ro = lldb.SBCommandReturnObject()
    lldb.debugger.GetCommandInterpreter().HandleCommand(cmd, ro)
    return ro.GetOutput() or ""
process = lldb.debugger.GetSelectedTarget().GetProcess()
process.SetSelectedThread(process.GetThreadAtIndex(0))
cold = timed("bt")
warm = statistics.median(timed("bt") for _ in range({repeat}))
python_frames = captured("bt").count("[python]")
captured("target frame-provider clear")
plain = statistics.median(timed("bt") for _ in range({repeat}))
print("RESULT lldb python=%d cold=%.6f warm=%.6f plain=%.6f" % (python_frames, cold, warm, plain))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="python3.14")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    proc = start_source(a.python, TARGET)
    try:
        g = debugger_results(["gdb", "--batch", "-nx", "-p", str(proc.pid),
                      "-ex", "source %s/gdb/pyframes_gdb.py" % REPO,
                      "-ex", "source " + write_script(GDB_SCRIPT.format(repeat=a.repeat), "bt_gdb")])
        ll = debugger_results(["lldb-22", "--batch", "-x", "-p", str(proc.pid),
                       "-o", "command script import %s/lldb/pyframes_lldb.py" % REPO,
                       "-o", "pyframes-bt on",
                       "-o", "command script import " + write_script(
                           LLDB_SCRIPT.format(repeat=a.repeat), "bt_lldb"),
                       "-o", "process detach"])
    finally:
        proc.kill()
        proc.wait()

    def ms(d, k):
        return "%.1f ms" % (float(d[k]) * 1e3) if k in d else "?"

    print("| debugger | Python frames shown | bt, native only | bt with Python frames, warm (cold) "
          "| added | bt -hide (placed, not printed) | CPython py-bt |")
    print("|---|---|---|---|---|---|---|")
    if g:
        print("| gdb 18 | %s | %s | %s (%s) | %.1f ms | %s | %s |" % (
            g["python"], ms(g, "plain"), ms(g, "warm"), ms(g, "cold"),
            (float(g["warm"]) - float(g["plain"])) * 1e3, ms(g, "hide"), ms(g, "pybt")))
    if not ll:
        print("| lldb 22 | - | - | lldb aborted (see docs/debuggers.md) | - | - | - |")
    else:
        print("| lldb 22 | %s | %s | %s (%s) | %.1f ms | - | - |" % (
            ll["python"], ms(ll, "plain"), ms(ll, "warm"), ms(ll, "cold"),
            (float(ll["warm"]) - float(ll["plain"])) * 1e3))


if __name__ == "__main__":
    main()
