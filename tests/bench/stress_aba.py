"""Stress: the command line's sampler against two call chains that reuse
each other's frame addresses (tests/python/targets/aba_chains.py), on a
loaded machine; counts the samples whose stack holds both chains (a stack
the target never had) and the samples that failed.

    python3 tests/bench/stress_aba.py [--seconds 8] [--busy 2] [--runs 1]
                                      [--python python3.13 ...]
                                      [--target aba_chains.py ...]

Each interpreter is sampled uncached; 3.15 also with its frame cache.  The
target aba_cframes.py enters each leaf from C (map): on 3.11 and 3.12 its
_PyCFrame is popped and another made at the same C stack address all the
time.  Run
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
TARGETS = os.path.join(os.path.dirname(HERE), "python", "targets")


# The stacks each target has, outermost first: a sample must be one of
# them or the start of one (a call not made yet).
CHAINS = {
    "aba_chains.py": [["<module>", "main", "a_parent", "a_leaf"],
                      ["<module>", "main", "b_parent", "b_leaf"]],
    "aba_cframes.py": [["<module>", "main", "a_parent", "a_leaf"],
                       ["<module>", "main", "b_parent", "b_mid", "b_leaf"]],
    "aba_heap.py": [["<module>", "main", "a_parent", "a_rec", "a_rec", "a_rec", "a_leaf"],
                    ["<module>", "main", "b_parent", "b_rec", "b_rec", "b_rec", "b_leaf"]],
}


def mixed(names, target_file="aba_chains.py"):
    """Whether a stack (function names, outermost first) is none the target
    has: both chains mixed, or one cut short at its bottom."""
    return not any(chain[:len(names)] == names for chain in CHAINS[target_file])


def one(python, target_file, extra, seconds, busy):
    target = subprocess.Popen([python, os.path.join(TARGETS, target_file)],
                              stdout=subprocess.PIPE)
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
    bad = 0
    for s in doc["stacks"]:
        names = [f["function"] for f in s["frames"]]
        if mixed(names, target_file):
            bad += s["count"]
            print("mixed (%d): %s" % (s["count"], " > ".join(
                "%s:%s" % (f["function"], f.get("line")) for f in s["frames"])), flush=True)
    failed = st["failed_samples"] + st["thread_errors"]
    print("%-22s %-16s %-12s samples %8d  mixed %5d  failed %6d (%.3f %%)" % (
        os.path.basename(python), target_file, " ".join(extra) or "(cache on)" if "3.15" in python
        else " ".join(extra) or "-", st["samples"], bad, failed,
        100.0 * failed / max(1, st["samples"])), flush=True)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--busy", type=int, default=2, help="busy loops beside the target")
    ap.add_argument("--python", action="append",
                    help="interpreters (default: python3.13, 3.14, 3.15)")
    ap.add_argument("--target", action="append",
                    help="target programs of tests/python/targets (default: aba_chains.py; "
                    "aba_cframes.py enters each leaf from C)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each (default 1)")
    args = ap.parse_args()
    bad = 0
    for python in args.python or ["python3.13", "python3.14", "python3.15"]:
        runs = [["--no-cache"], []] if "3.15" in python else [[]]
        for target_file in args.target or ["aba_chains.py"]:
            for extra in runs:
                for _ in range(args.runs):
                    bad += one(python, target_file, extra, args.seconds, args.busy)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
