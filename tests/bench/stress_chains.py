"""Stress: snapshots and the library's sampling loop against two call
chains that take each other's frame addresses
(tests/python/targets/aba_chains.py, or aba_cframes.py, whose leaves run in
eval loops entered from C); counts the stacks that are none the target has
(one chain's leaf over the other's caller, or a chain cut short at its
bottom: stress_aba.py's CHAINS), with the checks of
test_frame_cache.py::test_chains_never_mix.

    python3 tests/bench/stress_chains.py 3.15|PYTHON [RUNS] [TARGET]

Each run starts the target under python3.X (or the interpreter PYTHON, a
path), takes 20,000 snapshots, then samples it for 1 s (sampling.run, rate
0), with the 3.15 frame cache on and off on 3.15.  Prints the totals:
samples, mixed, failed, the library's top_replaced and retried_walks.
PYFRAMES_PIN=1: the target on one CPU and this process on another, so that
the target changes its stack while each copy is made.  Run
inside the sandbox with PYFRAMES_LIBRARY set (see docs/benchmarks.md).  A
correct library shows 0 mixed.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "native", "python"))
import pyframes  # noqa: E402
from pyframes import sampling  # noqa: E402

sys.path.insert(0, HERE)
from stress_aba import TARGETS, mixed as mixed_root_first  # noqa: E402


def one(python, target_file, cache, tot):
    cpus = sorted(os.sched_getaffinity(0))
    pin = os.environ.get("PYFRAMES_PIN") == "1" and len(cpus) >= 2
    proc = subprocess.Popen([python, os.path.join(TARGETS, target_file)],
                            stdout=subprocess.PIPE,
                            preexec_fn=(lambda: os.sched_setaffinity(0, {cpus[1]})) if pin else None)
    if pin:
        os.sched_setaffinity(0, {cpus[0]})

    def mixed(names):  # innermost first
        return mixed_root_first(names[::-1], target_file)

    try:
        if proc.stdout.readline() != b"ready\n":
            raise SystemExit("the target did not start")
        with pyframes.attach(proc.pid, cache=cache) as target:
            for _ in range(20000):
                [thread] = list(target.snapshot().threads())
                tot["samples"] += 1
                if not thread.complete:
                    tot["failed"] += 1
                    continue
                names = [f.function for f in thread.frames]
                if mixed(names):
                    tot["mixed"] += 1
                    print("mixed:", names)
            prof = sampling.run(sampling.Sampler(target), duration=1.0, rate=0)
            for (_, frames), n in prof.stacks.items():
                names = [f[0] for f in frames][::-1]
                tot["samples"] += n
                if mixed(names):
                    tot["mixed"] += n
                    print("mixed sample:", names, n)
            stats = target.stats()
            tot["top_replaced"] += stats["top_replaced"]
            tot["retried_walks"] += stats["retried_walks"]
    finally:
        proc.kill()
        proc.wait()


def main():
    version = sys.argv[1] if len(sys.argv) > 1 else "3.15"
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    target_file = sys.argv[3] if len(sys.argv) > 3 else "aba_chains.py"
    python = version if os.sep in version else "python" + version
    tot = {"samples": 0, "mixed": 0, "failed": 0, "top_replaced": 0, "retried_walks": 0}
    for _ in range(runs):
        for cache in ((True, False) if version == "3.15" else (False,)):
            one(python, target_file, cache, tot)
    print(version, target_file, " ".join("%s %d" % kv for kv in tot.items()))


if __name__ == "__main__":
    main()
