"""Benchmark: ``python3 -m pyframes sample PID --rate 0`` against austin 3.7
(``austin -i 0``) on the same CPU-busy process 200 frames deep whose top
frames keep changing (tests/bench/busy_deep.py), under CPython 3.12, in
alternating rounds of the same length, each tool as fast as it goes.

    python3 tests/bench/bench_austin.py --austin build/austin/usr/bin/austin
        [--python /root/.pyenv/versions/3.12.1/bin/python3.12] [--depth 200]
        [--seconds 2] [--rounds 3]

austin is Debian's package (sid's 3.7), its binary run where it was
unpacked (docs/benchmarks.md says how).  Every sample of both is checked
against the stacks the target has: <module>, then depth + 1 frames of
descend, then at most one of small_a and small_b; any other stack is a
wrong sample.  Prints samples per second, the failed (pyframes) or invalid
(austin's error rate) share and the wrong samples of each tool per round,
then the medians and their ratio.  Run inside the sandbox with
PYFRAMES_LIBRARY set.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOPS = ((), ("small_a",), ("small_b",))


def run(argv, env=None):
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         env=env, timeout=600)
    return re.sub(r"\x1b\[[0-9;]*m", "", out.stdout.decode("utf-8", "replace"))


def wrong(names, depth):
    """Whether a stack (function names, root first) is none the target has."""
    want = ["<module>"] + ["descend"] * (depth + 1)
    return names[:len(want)] != want or tuple(names[len(want):]) not in TOPS


def austin(binary, pid, seconds, depth, tmp):
    out = os.path.join(tmp, "austin.txt")
    text = run([binary, "-i", "0", "-x", str(seconds), "-p", str(pid), "-o", out])
    duration = re.search(r"Sampling duration : ([\d.]+) s", text)
    errors = re.search(r"Error rate : (\d+)/(\d+)", text)
    if not duration or not errors:
        raise SystemExit("austin said:\n" + text)
    samples, bad = 0, 0
    with open(out) as f:
        for line in f:
            if not line.startswith("P"):
                continue
            # one line a sample: P<pid>;T<thread>;file:function:line;... MICROSECONDS
            stack = line.rsplit(" ", 1)[0]
            names = [frame.rsplit(":", 2)[1] for frame in stack.split(";")[2:]]
            samples += 1
            bad += wrong(names, depth)
    total = int(errors.group(2))
    return (total / float(duration.group(1)), 100.0 * int(errors.group(1)) / max(1, total),
            bad, samples)


def pyframes(pid, seconds, depth, tmp):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "native", "python")
    out = os.path.join(tmp, "pyframes.txt")
    text = run([sys.executable, "-m", "pyframes", "sample", str(pid), "--rate", "0",
                "--duration", str(seconds), "--top", "0", "--collapsed", out], env)
    m = re.search(r"^(\d+) samples in ([\d.]+) s \((\d+)/s\); (\d+) failed \(([\d.]+)%\)",
                  text, re.M)
    if not m:
        raise SystemExit("pyframes said:\n" + text)
    samples, bad = 0, 0
    with open(out) as f:
        for line in f:
            stack, count = line.rsplit(" ", 1)
            # thread;function (file:line);...
            names = [frame.split(" (", 1)[0] for frame in stack.split(";")[1:]]
            samples += int(count)
            bad += int(count) if wrong(names, depth) else 0
    return float(m.group(3)), float(m.group(5)), bad, samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--austin", required=True, help="austin's binary")
    parser.add_argument("--python", default="/root/.pyenv/versions/3.12.1/bin/python3.12")
    parser.add_argument("--depth", type=int, default=200)
    parser.add_argument("--seconds", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    target = subprocess.Popen([args.python, os.path.join(HERE, "busy_deep.py"),
                               str(args.depth)], stdout=subprocess.PIPE)
    results = {"austin 3.7 -i 0": [], "pyframes sample": []}
    try:
        if target.stdout.readline() != b"ready\n":
            raise SystemExit("the target did not start")
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                results["austin 3.7 -i 0"].append(
                    austin(args.austin, target.pid, args.seconds, args.depth, tmp))
                results["pyframes sample"].append(
                    pyframes(target.pid, args.seconds, args.depth, tmp))
                print("round %d: " % (r + 1) + "; ".join(
                    "%s %.0f/s (%.2f%% failed, %d wrong of %d)" % ((k,) + v[-1])
                    for k, v in results.items()), flush=True)
    finally:
        target.kill()
        target.wait()
    base = statistics.median(v[0] for v in results["austin 3.7 -i 0"])
    print("\n%-30s %12s %10s %8s %8s" % ("tool (median of %d)" % args.rounds, "samples/s",
                                         "failed %", "wrong", "ratio"))
    for name, vals in results.items():
        rate = statistics.median(v[0] for v in vals)
        print("%-30s %12.0f %10.2f %8d %7.2fx" % (
            name, rate, statistics.median(v[1] for v in vals), sum(v[2] for v in vals),
            rate / base))


if __name__ == "__main__":
    main()
