"""``--diff BASE``: a profile compared with an earlier one by each call
path's (and function's) share of the thread-samples, so that one workload
sampled at different rates compares as unchanged."""

import json
import os
import random
import re
import statistics
import subprocess

from livetarget import TARGETS, target_env
from test_cli import run_cli
from conftest import release_python

from pyframes import report, sampling
from pyframes.flamegraph import diff_color, render_svg


def _profile(stacks, samples):
    prof = sampling.Profile()
    prof.stacks = dict(stacks)
    prof.samples = samples
    prof.duration = 1.0
    return prof


def test_scaled_profile_is_unchanged():
    """Ten times the counts (a ten times higher rate): every share, hence
    every change, is exactly 0 (CPython's differential flame graph compares
    counts and shows -90% here)."""
    frames = {"a": ("a", "m.py", 1), "b": ("b", "m.py", 5), "c": ("c", "m.py", 9)}
    base = {(None, (frames["a"], frames["b"])): 30, (None, (frames["a"], frames["c"])): 10}
    now = {k: 10 * v for k, v in base.items()}
    lines = report.diff_table(_profile(now, 400), _profile(base, 40))
    rows = [line for line in lines[1:]]
    assert len(rows) == 3
    for row in rows:
        assert row.split()[2] == "+0.0", lines
    svg = render_svg([(f, n) for (_, f), n in now.items()],
                     base=[(f, n) for (_, f), n in base.items()])
    assert svg.count("+0.00)") == 4, svg  # all, a, b, c
    assert "rgb(255,255,255)" in svg


def test_diff_colors_growth_red_and_shrink_blue():
    assert diff_color(50.0, 25.0).startswith("rgb(255,")
    assert diff_color(25.0, 50.0).endswith(",255)")
    assert diff_color(10.0, 0.0) == "rgb(255,0,0)"  # new in this profile
    assert diff_color(0.0, 10.0) == "rgb(0,0,255)"  # gone from it


class _Periodic(object):
    """A sampler of a simulated loop of period ``period`` seconds that runs
    light() for its second quarter and heavy() for the rest, on the clock
    ``now`` that run() reads and a patched time.sleep advances."""

    exited = False

    def __init__(self, period, now):
        self.period, self.now, self.taken = period, now, []
        self._profile = sampling.Profile()

    def sample(self):
        self.taken.append(self.now[0])
        self._profile.samples += 1

    def light_share(self):
        quarter = self.period / 4
        light = sum(1 for t in self.taken if quarter <= t % self.period < 2 * quarter)
        return light / len(self.taken)

    def profile(self):
        return self._profile


class _Fixed(object):
    def random(self):
        return 0.5  # the factor 1: every wait exactly 1/rate


def _sampled(monkeypatch, period, jitter, count=2000):
    now = [0.0]
    monkeypatch.setattr(sampling.time, "sleep", lambda s: now.__setitem__(0, now[0] + s))
    sampler = _Periodic(period, now)
    sampling.run(sampler, count=count, rate=100, clock=lambda: now[0], jitter=jitter)
    return sampler


def test_waits_are_drawn_around_the_rate(monkeypatch):
    """At 100 Hz each wait lies between 5 and 15 ms (sampling.JITTER), their
    mean is 10 ms, and they spread (a uniform draw: 2.9 ms standard
    deviation); a source that always draws the middle gives 10 ms each."""
    sampler = _sampled(monkeypatch, 0.002, random.Random(1))
    waits = [b - a for a, b in zip(sampler.taken, sampler.taken[1:])]
    assert all(0.005 - 1e-12 <= w <= 0.015 + 1e-12 for w in waits), (min(waits), max(waits))
    assert abs(statistics.mean(waits) - 0.010) < 0.0003
    assert 0.0025 < statistics.stdev(waits) < 0.0033
    fixed = _sampled(monkeypatch, 0.002, _Fixed())
    waits = [b - a for a, b in zip(fixed.taken, fixed.taken[1:])]
    assert max(abs(w - 0.010) for w in waits) < 1e-9


def test_a_fixed_interval_locks_onto_a_periodic_loop(monkeypatch):
    """Why the waits are drawn: a loop whose turn (2 ms) divides the
    interval (10 ms) is always caught at the same phase at a fixed rate, so
    its light() quarter reads 0 % (or 100 %); drawn waits give its true 25 %
    (2,000 samples: within 3 points, 3 standard deviations)."""
    assert _sampled(monkeypatch, 0.002, _Fixed()).light_share() == 0.0
    for seed in range(5):
        share = _sampled(monkeypatch, 0.002, random.Random(seed)).light_share()
        assert abs(share - 0.25) < 0.03, (seed, share)
    # a turn near, not at, a divisor (2.0005 ms): the phase creeps 2.5 us a
    # sample, 0.75 ms in 3 s, never reaching light()'s quarter at a fixed
    # rate; drawn waits read 25 % (300 samples: within 7.5 points)
    assert _sampled(monkeypatch, 0.0020005, _Fixed(), count=300).light_share() == 0.0
    for seed in range(5):
        share = _sampled(monkeypatch, 0.0020005, random.Random(seed), count=300).light_share()
        assert abs(share - 0.25) < 0.075, (seed, share)


def test_same_workload_at_100hz_and_1khz(cli_env, tmp_path):
    """One workload (light() and heavy() in a 1:3 ratio) sampled at 100 Hz
    for 10 s and at 1 kHz for 2 s: in the comparison every function is
    within 5 percentage points of unchanged (3 standard deviations of the
    sampling error at these counts), and the flame graph's boxes say so.
    The error is that of independent samples because the waits between
    them are drawn (test_a_fixed_interval_locks_onto_a_periodic_loop): at a
    fixed interval this loop's light() read 28.9 % in the base and 23.0 %
    at 1 kHz, a change of 5.9 points, in one clean run."""
    python = release_python("3.14")
    proc = subprocess.Popen([python, os.path.join(TARGETS, "workload.py")],
                            stdout=subprocess.PIPE, env=target_env())
    try:
        pid = json.loads(proc.stdout.readline())["pid"]
        base = tmp_path / "base.raw"
        res = run_cli(cli_env, "sample", "--rate", "100", "--duration", "10", "--raw", base, pid)
        assert res.returncode == 0, res.stderr.decode()
        svg = tmp_path / "diff.svg"
        res = run_cli(cli_env, "sample", "--rate", "1000", "--duration", "2", "--diff", base,
                      "--flamegraph", svg, pid)
        assert res.returncode == 0, res.stderr.decode()
    finally:
        proc.kill()
        proc.wait()
    out = res.stdout.decode()
    print(out)
    table = out[out.index("against the base profile"):].splitlines()[2:]
    rows = [re.match(r"\s*([\d.]+)% +([\d.]+)% +([-+][\d.]+)  (\S+) \((.*)\)$", line)
            for line in table if line.strip()]
    assert rows and all(rows), out
    functions = {m.group(4): float(m.group(3)) for m in rows}
    assert {"light", "heavy", "main", "<module>"} <= set(functions), out
    for name, change in functions.items():
        assert abs(change) <= 5.0, (name, out)
    text = svg.read_text()
    assert "against %s" % base in text
    assert text.count("(base ") >= 4
