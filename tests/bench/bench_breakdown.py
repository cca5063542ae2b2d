"""Benchmark: where the time of a warm py-bt-fast goes, outside the debugger.

Starts `python3.X` on a recursion of the given depth (pipe handshake) and
measures, warm, each layer of what py-bt-fast does with the PID reader:
the library's walk alone (pyf_snapshot_take_copy as Target.snapshot calls
it, with a buffer of its own, + free when the library left a snapshot),
Target.snapshot() (walk + conversion into model objects; also with the
threads' facts, names, GIL and exception, as the stack command asks for
them), and rendering the
main thread's text with source lines (render.format_threads_text, source
files kept between commands as the session keeps them; the text of the
thread's tuple of frames kept from one rendering to the next, as at a
debugger's next command at the same stop, and without it: a stack's first
rendering).  What a debugger command costs beyond these (its parsing, the
thread choice, the write to the debugger's stdout) is the difference to
bench_debuggers.py's figure.

    python3 tests/bench/bench_breakdown.py [--python python3.15] [--depth 1000] [--repeat 300]
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_dump import start  # noqa: E402
import pyframes  # noqa: E402  (bench_dump put it on the path)
from pyframes import _abi, render  # noqa: E402


def median_us(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e6


COLD = r"""
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[2])
import pyframes
from pyframes import _loader, render
t1 = time.perf_counter()
_loader.load()
t2 = time.perf_counter()
target = pyframes.attach(int(sys.argv[1]))
t3 = time.perf_counter()
snap = target.snapshot(native_tid=int(sys.argv[1]))
t4 = time.perf_counter()
text = render.format_threads_text(list(snap.threads()), source=render.SourceReader())
t5 = time.perf_counter()
print("%f %f %f %f %f" % (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4))
"""


def cold(python_exe, pid, runs=7):
    """Median seconds of each cold step, each run in a fresh interpreter."""
    import subprocess
    package = os.path.join(HERE, "..", "..", "native", "python")
    rows = []
    for _ in range(runs):
        out = subprocess.run([python_exe, "-c", COLD, str(pid), package],
                             capture_output=True, text=True, check=True).stdout
        rows.append([float(x) for x in out.split()])
    return [statistics.median(col) for col in zip(*rows)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default="python3.15")
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=300)
    a = ap.parse_args()
    proc = start(a.python, a.depth)
    try:
        with pyframes.attach(proc.pid) as target:
            lib, handle = target._lib, target._handle
            buf = (ctypes.c_uint64 * 512)()
            copy = _abi.pyf_snapshot_copy.from_buffer(buf)
            copy.cap = ctypes.sizeof(buf)
            copy_ref = ctypes.byref(copy)

            def walk():
                lib.pyf_snapshot_take_copy(handle, copy_ref)
                if copy.out:
                    lib.pyf_snapshot_free(copy.out)

            source = render.SourceReader()
            snap = target.snapshot()
            threads = [t for t in snap.threads() if t.native_thread_id == proc.pid]

            def text():
                source.refresh()
                return render.format_threads_text(threads, source=source)

            def first_text():
                render._KEPT.clear()
                return text()

            walk(), text()
            w = median_us(walk, a.repeat)
            s = median_us(lambda: target.snapshot(native_tid=proc.pid), a.repeat)
            sf = median_us(lambda: target.snapshot(native_tid=proc.pid, facts=True), a.repeat)
            r = median_us(text, a.repeat)
            r1 = median_us(first_text, a.repeat)
            print("%s, depth %d (%d frames), warm medians:" % (
                a.python, a.depth, len(threads[0].frames)))
            print("  library walk (take_copy)           %8.1f us" % w)
            print("  Target.snapshot (walk + binding)   %8.1f us  (binding %.1f us)" % (s, s - w))
            print("    with the threads' facts, as the stack command takes it  %8.1f us" % sf)
            print("  rendering with source lines        %8.1f us  (%d bytes of text)" % (
                r, len(text())))
            print("    the thread's frames rendered for the first time (nothing kept)"
                  " %8.1f us" % r1)
        steps = cold(sys.executable, proc.pid)
        print("  cold, in a fresh interpreter (medians of 7):")
        for name, value in zip(("import pyframes", "load libpyframes",
                                "attach (find _PyRuntime, validate offsets)",
                                "first snapshot (code objects decoded)",
                                "first rendering (source files read)"), steps):
            print("    %-44s %8.2f ms" % (name, value * 1e3))
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
