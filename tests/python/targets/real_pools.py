"""Launcher of test_real_programs.py: the standard library's pools at work,
a concurrent.futures ThreadPoolExecutor and ProcessPoolExecutor and a
multiprocessing.Pool, fed by the main thread.

    pythonX.Y real_pools.py SECONDS

Round after round the main thread submits pure-Python work of the standard
library (difflib, fractions, json, re, textwrap, statistics) to the three
pools and collects it (as_completed, wait, imap_unordered), until SECONDS
have passed or MAX_ROUNDS rounds.  Worker processes come from
multiprocessing's default start method.  After the first round's results
of every pool it writes "ready" and a newline on stdout (the handshake).
"""
import concurrent.futures as cf
import difflib
import fractions
import json
import multiprocessing
import re
import statistics
import sys
import textwrap
import time

MAX_ROUNDS = 100_000
WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
         "nu xi omicron pi rho sigma tau upsilon phi chi psi omega").split()


def text(seed, n):
    return " ".join(WORDS[(seed * 7 + i * i) % len(WORDS)] for i in range(n))


def diff(seed):
    a, b = text(seed, 120).split(), text(seed + 1, 120).split()
    return round(difflib.SequenceMatcher(None, a, b).ratio(), 3)


def harmonic(n):
    return str(sum(fractions.Fraction(1, k) for k in range(1, n)))[:20]


def roundtrip(seed):
    doc = {"k%d" % i: [text(seed + i, 5), i, {"x": i / 3}] for i in range(60)}
    return len(json.loads(json.dumps(doc, sort_keys=True)))


def words(seed):
    found = re.findall(r"\b(\w)(\w*)\1\b", text(seed, 300))
    return len(textwrap.wrap(text(seed, 200), 30)) + len(found)


def stats(seed):
    data = [((seed + i) * 37) % 101 for i in range(400)]
    return statistics.pstdev(data) + statistics.median(data)


JOBS = (diff, harmonic, roundtrip, words, stats)


def job(args):
    kind, seed = args
    return JOBS[kind](seed if kind != 1 else 60 + seed % 40)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 240.0
    deadline = time.monotonic() + seconds
    with cf.ThreadPoolExecutor(max_workers=4, thread_name_prefix="tpool") as threads, \
            cf.ProcessPoolExecutor(max_workers=2) as processes, \
            multiprocessing.Pool(2) as pool:
        for r in range(MAX_ROUNDS):
            if time.monotonic() >= deadline:
                break
            work = [(i % len(JOBS), r * 10 + i) for i in range(10)]
            tfuts = [threads.submit(job, w) for w in work]
            pfuts = [processes.submit(job, w) for w in work[:4]]
            mp = pool.imap_unordered(job, work[:4])
            got = [f.result() for f in cf.as_completed(tfuts)]
            done, _ = cf.wait(pfuts)
            got += [f.result() for f in done] + list(mp)
            if r == 0:
                sys.stdout.write("ready\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
