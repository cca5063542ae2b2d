"""Stress: the 3.15 frame cache's one write (the anchor, last_profiled_frame)
against a target whose thread states are freed and their memory reused all
the time; counts the targets that crashed.

    python3 tests/bench/stress_anchor.py [--seconds 5] [--rounds 20]
                                         [--busy 2] [--python python3.15]

The target starts short-lived threads one after another (each calls a few
Python functions and ends: its thread state is freed) while another thread
allocates and frees blocks of the sizes around a thread state's, so the
freed states' memory goes to other objects at once.  The command line's
sampler reads every thread with the cache on (`--rate 0 --all`) for --seconds, --rounds
times, with --busy loops beside it (a reader often preempted between the
check that precedes the write and the write).  A write into a freed state
whose memory another object took corrupts that object: the target dies.
Run inside the sandbox with PYFRAMES_LIBRARY set (docs/benchmarks.md).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

TARGET = r'''
import os, sys, threading

def leaf(n):
    total = 0
    for i in range(n):
        total += i
    return total

def mid(d, n):
    return mid(d - 1, n) if d else leaf(n)

def short():
    mid(4, 200)

def allocate():
    keep = []
    sizes = [64, 120, 200, 512, 700, 880, 900, 960, 1024, 2048]
    k = 0
    while True:
        for s in sizes:
            keep.append(bytearray(s))
            keep.append({i: i for i in range(s // 64)})
        k += 1
        if len(keep) > 400:
            del keep[: len(keep) // 2]

def subinterpreters():
    try:
        from concurrent import interpreters
    except ImportError:
        return
    code = "def f(d):\n    return f(d - 1) if d else sum(range(3000))\nf(5)\n"
    while True:
        interp = interpreters.create()
        try:
            for _ in range(3):
                interp.exec(code)
        finally:
            interp.close()

threading.Thread(target=allocate, daemon=True).start()
if "--subinterpreters" in sys.argv:
    threading.Thread(target=subinterpreters, daemon=True).start()
os.write(1, b"ready\n")
while True:
    ts = [threading.Thread(target=short) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
'''


def one(python, seconds, busy, extra, sample_options):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "target.py")
        with open(src, "w") as f:
            f.write(TARGET)
        target = subprocess.Popen([python, src] + extra, stdout=subprocess.PIPE)
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(busy)]
        try:
            if target.stdout.readline() != b"ready\n":
                raise SystemExit("%s: the target did not start" % python)
            stats = os.path.join(tmp, "s.json")
            subprocess.run([sys.executable, "-m", "pyframes", "sample", str(target.pid),
                            "--duration", str(seconds), "--rate", "0", "--all",
                            "--stats-json", stats] + sample_options,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            status = target.poll()
            try:
                with open(stats) as f:
                    st = json.load(f)
            except (OSError, ValueError):
                st = {}
        finally:
            for p in hogs + [target]:
                p.kill()
                p.wait()
    return status, st


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--busy", type=int, default=2, help="busy loops beside the target")
    ap.add_argument("--python", default="python3.15")
    ap.add_argument("--sample-option", action="append", metavar="OPT",
                    help="an option for the sampler (e.g. --read-only: the control)")
    ap.add_argument("--subinterpreters", action="store_true",
                    help="a thread also creates, runs and closes subinterpreters "
                    "(each with thread states of its own)")
    args = ap.parse_args()
    crashed = 0
    for r in range(args.rounds):
        status, st = one(args.python, args.seconds, args.busy,
                         ["--subinterpreters"] if args.subinterpreters else [],
                         args.sample_option or [])
        if status is not None:
            crashed += 1
        print("round %3d: %s (%s samples, %s anchor writes)" % (
            r, "target alive" if status is None else
            "target died: %s" % ("signal %d" % -status if status < 0 else "exit %d" % status),
            st.get("samples", "?"), st.get("anchor_writes", "?")), flush=True)
    print("%d of %d targets died" % (crashed, args.rounds))
    sys.exit(1 if crashed else 0)


if __name__ == "__main__":
    main()
