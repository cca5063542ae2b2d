"""``--diff BASE``: a profile compared with an earlier one by each call
path's (and function's) share of the thread-samples, so that one workload
sampled at different rates compares as unchanged."""

import json
import os
import re
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


def test_same_workload_at_100hz_and_1khz(cli_env, tmp_path):
    """One workload (light() and heavy() in a 1:3 ratio) sampled at 100 Hz
    for 10 s and at 1 kHz for 2 s: in the comparison every function is
    within 5 percentage points of unchanged (3 standard deviations of the
    sampling error at these counts), and the flame graph's boxes say so."""
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
