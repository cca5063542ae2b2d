"""Stress: the command line's sampler against two call chains that reuse
each other's frame addresses (tests/python/targets/aba_chains.py), on a
loaded machine; counts the samples whose stack holds both chains (a stack
the target never had) and the samples that failed.

    python3 tests/bench/stress_aba.py [--seconds 8] [--busy 2]
                                      [--python python3.13 ...]

Each interpreter is sampled uncached; 3.15 also with its frame cache.  Run
inside the sandbox with PYFRAMES_LIBRARY set (see docs/benchmarks.md).  A
correct library shows 0 mixed samples; the figures of the fix of the
returned-frame window (docs/architecture.md, "When is a frame true?") came
from this script: 282 mixed of 170,992 samples on 3.13 before, 0 of
1,299,491 over 3.13-3.15 after.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(os.path.dirname(HERE), "python", "targets", "aba_chains.py")


def mixed(names):
    """Whether a stack's frames below <module> and main hold both chains."""
    return names[:2] != ["<module>", "main"] or len({n[0] for n in names[2:]}) > 1


def one(python, extra, seconds, busy):
    target = subprocess.Popen([python, TARGET], stdout=subprocess.PIPE)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
    try:
        if target.stdout.readline() != b"ready\n":
            raise SystemExit("%s: the target did not start" % python)
        with tempfile.TemporaryDirectory() as tmp:
            out, stats = os.path.join(tmp, "p.json"), os.path.join(tmp, "s.json")
            subprocess.run([sys.executable, "-m", "pyframes", "sample", str(target.pid),
                            "--main", "--duration", str(seconds), "--rate", "0", "--json", out,
                            "--stats-json", stats] + extra,
                           check=True, stdout=subprocess.DEVNULL)
            doc, st = json.load(open(out)), json.load(open(stats))
    finally:
        for p in hogs + [target]:
            p.kill()
            p.wait()
    bad = sum(s["count"] for s in doc["stacks"]
              if mixed([f["function"] for f in s["frames"]]))
    failed = st["failed_samples"] + st["thread_errors"]
    print("%-22s %-12s samples %8d  mixed %5d  failed %6d (%.3f %%)" % (
        os.path.basename(python), " ".join(extra) or "(cache on)" if "3.15" in python
        else " ".join(extra) or "-", st["samples"], bad, failed,
        100.0 * failed / max(1, st["samples"])), flush=True)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--busy", type=int, default=2, help="busy loops beside the target")
    ap.add_argument("--python", action="append",
                    help="interpreters (default: python3.13, 3.14, 3.15)")
    args = ap.parse_args()
    bad = 0
    for python in args.python or ["python3.13", "python3.14", "python3.15"]:
        runs = [["--no-cache"], []] if "3.15" in python else [[]]
        for extra in runs:
            bad += one(python, extra, args.seconds, args.busy)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
