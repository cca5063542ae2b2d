"""Sampling profiles (pyframes.sampling, ``python3 -m pyframes sample``)
against live processes that keep changing.

- targets/churn.py compiles a new function each round in a file named
  after it (f0000123 in <round-0000123>), calls it at varying depths, frees
  it, and starts and ends threads all the time: sampled for a while, cached
  and uncached, on every interpreter, on a busy machine, every frame must
  be true by the target's own record (rounds.py: name, file and line of one
  round's code, a round alive during the run), and at most 5% of the
  samples may fail.
- targets/aba_chains.py alternates two call chains: the command line's
  profile may only hold stacks of one chain each, its files must agree with
  each other, and the counters come under their documented names.  On
  3.11 and 3.12 also targets/aba_cframes.py, whose leaves run in eval
  loops entered from C (the current frame read through the loop's
  _PyCFrame, on the C stack).
- targets/busy_service.py, a service whose workers do the work: sampled
  with no option, every thread is read and the function the workers
  spend their time in (their own record) heads the table.
"""
import json
import os
from xml.etree import ElementTree
import re
import subprocess
import sys

import pytest

import conftest
from conftest import release_python
import rounds
from livetarget import kill_json, start_json, target_env
from pyframes import flamegraph
from test_cli import run_cli

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(HERE, "targets")
COUNTERS = {"samples", "full_hits", "partial_hits", "misses", "frames_from_cache",
            "frames_from_memory", "read_calls", "bytes_read", "anchor_writes"}


def _start(python, script):
    proc = subprocess.Popen([python, os.path.join(TARGETS, script)],
                            stdout=subprocess.PIPE, env=target_env())
    if proc.stdout.readline() != b"ready\n":
        proc.kill()
        proc.wait()
        raise AssertionError("%s did not start" % script)
    return proc


# the churn on every interpreter, the older ones included
interp_older = conftest.interp_fixture("all", name="interp_older")


@pytest.mark.parametrize("cache", [True, False], ids=["cached", "uncached"])
def test_churn_never_mixes_code_objects(pyframes, interp_older, cache, busy, tmp_path):
    interp = interp_older
    with rounds.churning(interp.path, tmp_path, mode="plain") as (proc, record):
        e0 = record.event()
        with pyframes.attach(proc.pid, cache=cache) as target:
            sampler = pyframes.sampling.Sampler(target, threads="all")
            try:
                profile = pyframes.sampling.run(sampler, duration=1.5, rate=0)
            finally:
                sampler.close()
        e1 = record.event()
        # the profile sums the samples: each frame is judged against the
        # whole run (name, file and line of one round; that round alive
        # at some moment of it)
        bad, seen = [], 0
        for (_, frames), count in profile.stacks.items():
            b, n = rounds.false_frames(record, frames, e0, e1)
            bad += b
            seen += n * count
    assert not bad, bad[:5]
    assert seen > 0, "no sample caught a round's function"
    # a loaded machine (busy): at most 5 % of the samples dropped or
    # marked incomplete; the sanitized library walks several times slower
    share = 0.5 if os.environ.get("PYFRAMES_SANITIZER_PRELOAD") else 0.05
    failed = profile.failed + profile.thread_errors
    assert failed <= share * profile.samples, (failed, profile.samples, profile.errors)


# The stacks of each target, outermost first: a sample holds one of them
# or the start of one (stress_aba.py's CHAINS).
CHAINS = {
    "aba_chains.py": [["<module>", "main", "a_parent", "a_leaf"],
                      ["<module>", "main", "b_parent", "b_leaf"]],
    "aba_cframes.py": [["<module>", "main", "a_parent", "a_leaf"],
                       ["<module>", "main", "b_parent", "b_mid", "b_leaf"]],
}
PROFILE_PARAMS = [(v, "aba_chains.py") for v in ("3.15", "3.14", "3.13")] + \
    [(v, script) for v in ("pyenv-3.12", "pyenv-3.11")
     for script in ("aba_chains.py", "aba_cframes.py")]
@pytest.mark.parametrize("version,script", PROFILE_PARAMS,
                         ids=["%s-%s" % (v, s[:-3]) for v, s in PROFILE_PARAMS])
def test_command_line_profile(cli_env, tmp_path, version, script):
    """On 3.13 and 3.14 (no frame cache) the stack is copied while the
    thread runs: a copy made after a_leaf and a_parent returned and
    b_parent was called in a_parent's place once showed a_leaf over
    b_parent.  3.11 and 3.12 reach the current frame through the eval
    loop's _PyCFrame, and mark no frame that returned."""
    proc = _start(conftest.python_of(version), script)
    files = {k: str(tmp_path / ("out." + k)) for k in ("collapsed", "json", "stats", "svg")}
    with open("/proc/%d/comm" % proc.pid) as f:
        comm = f.read().rstrip("\n")
    # the thread's own name: threading's when the interpreter's start-up
    # imported it (pyenv's 3.11 site does; the script never does), else
    # the OS name
    started = subprocess.run([conftest.python_of(version), "-c",
                              "import sys; print('threading' in sys.modules)"],
                             env=target_env(), stdout=subprocess.PIPE, timeout=60)
    label = "MainThread" if started.stdout.strip() == b"True" else comm
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pyframes", "sample", str(proc.pid), "--duration", "1",
             "--rate", "0", "--collapsed", files["collapsed"], "--json", files["json"],
             "--stats-json", files["stats"], "--flamegraph", files["svg"], "--top", "10",
             "--stats"],
            env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert run.returncode == 0, run.stderr.decode()
    out = run.stdout.decode()
    assert re.search(r"^\d+ samples in [\d.]+ s \(\d+/s\); \d+ failed", out, re.M), out
    if version == "3.15":
        assert re.search(r"^frame cache \(on\): \d+ full hits, \d+ partial hits", out, re.M), out
    assert re.search(r"^ *[\d.]+% +100\.0%  main \(.*" + re.escape(script) + r"\)$", out,
                     re.M), out
    assert run.stderr == b""  # no progress line when stderr is not a terminal

    stats = json.load(open(files["stats"]))
    assert COUNTERS <= set(stats), stats
    doc = json.load(open(files["json"]))
    total = 0
    path = os.path.join(TARGETS, script)
    for stack in doc["stacks"]:
        names = [f["function"] for f in stack["frames"]]
        assert names[:2] == ["<module>", "main"], names
        # every thread, under its name
        assert stack["thread"] == label, stack
        # one chain per stack, whole from its bottom
        assert any(chain[:len(names)] == names for chain in CHAINS[script]), names
        assert all(f["filename"].endswith(script) for f in stack["frames"])
        total += stack["count"]
    assert total == stats["samples"] - stats["failed_samples"] - stats["thread_errors"]
    # (see below: most samples of aba_cframes.py's leaves on 3.11 and 3.12
    # fail, counted; under the sanitizers even more)
    cframe_leaves = script == "aba_cframes.py" and version in ("pyenv-3.11", "pyenv-3.12")
    slowed = cframe_leaves and bool(cli_env.get("PYFRAMES_SANITIZER_PRELOAD"))
    assert total > (100 if slowed else 1000), (total, out)

    lines = open(files["collapsed"]).read().splitlines()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in lines) == total
    for line in lines:
        stack, _ = line.rsplit(" ", 1)
        frames = stack.split(";")
        assert frames[0] == label, line
        assert frames[1].startswith("<module> (%s:" % path), line
    # Both leaves sampled.  Not asked of aba_cframes.py on 3.11 and 3.12:
    # its leaves live a few microseconds each, in an eval loop entered from
    # C whose _PyCFrame the walk must find twice the same, and with the
    # target on a CPU of its own beside the reader few reads find one whole
    # (1-10 of 12,000 snapshots on this two-core machine, with the library
    # of 542c958 and this one alike; thousands when the target shares a
    # CPU): every such sample failed, counted, never shown
    shown = "\n".join(sorted(lines, key=lambda line: -int(line.rsplit(" ", 1)[1]))[:12])
    if not cframe_leaves:
        assert any(";a_parent (" in line and ";a_leaf (" in line for line in lines), (out, shown)
        assert any(";b_parent (" in line and ";b_leaf (" in line for line in lines), (out, shown)

    # the flame graph holds the same frames (the browser side is
    # test_flamegraph.py's)
    # (the flame graph leaves out a frame narrower than MIN_WIDTH px: one
    # whose samples are fewer than that share of the whole)
    svg = ElementTree.parse(files["svg"]).getroot()
    titles = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    for name in ("main (", "a_leaf (", "b_leaf ("):
        count = sum(int(line.rsplit(" ", 1)[1]) for line in lines if ";" + name in line)
        if count * flamegraph.FULL >= flamegraph.MIN_WIDTH * total:
            assert any(t.startswith(name) for t in titles), (name, count, total)


@pytest.mark.parametrize("version", ["3.14", "3.13"])
def test_flame_graph_title_names_the_command_line(cli_env, tmp_path, version):
    """The flame graph's title (and the raw file's, speedscope's name) holds
    the process's command line as /proc has it, escaped: a newline as
    ``\\n``, and <, & and " as XML writes them (the parsed title is the
    text)."""
    python = release_python(version)
    argv = [python, "-c", "import sys\nprint('ready', flush=True)\nsys.stdin.read()",
            '<tag&"x">']
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=target_env())
    svg, raw = str(tmp_path / "g.svg"), str(tmp_path / "p.raw")
    try:
        assert proc.stdout.readline() == b"ready\n"
        run = subprocess.run(
            [sys.executable, "-m", "pyframes", "sample", str(proc.pid), "--duration", "0.2",
             "--flamegraph", svg, "--raw", raw], env=cli_env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert run.returncode == 0, run.stderr.decode()
    from pyframes.escaping import escape
    want = "pyframes: pid %d (%s)" % (proc.pid, escape(" ".join(argv)))
    assert "\\n" in want and "\n" not in want
    root = ElementTree.parse(svg).getroot()
    (title,) = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")
                if t.get("id") == "title"]
    assert title == want
    assert "&lt;tag&amp;&quot;x&quot;&gt;" in open(svg, encoding="utf-8").read()
    from pyframes import rawprofile
    assert "pyframes: " + rawprofile.load(raw)[1] == want


def test_command_line_raw_renders_the_same_outputs(cli_env, tmp_path):
    """One run with --all writes every output and --raw; the counts agree
    across them (samples: rounds; thread-samples: stacks), and ``render``
    of the raw file writes the same bytes."""
    proc = _start(release_python("3.15"), "aba_chains.py")
    names = ("collapsed", "json", "stats-json", "flamegraph", "speedscope")
    direct = {k: str(tmp_path / ("direct." + k)) for k in names}
    raw = str(tmp_path / "kept.raw")
    try:
        cmd = [sys.executable, "-m", "pyframes", "sample", str(proc.pid), "--duration", "0.5",
               "--rate", "200", "--all", "--raw", raw]
        for k in names:
            cmd += ["--" + k, direct[k]]
        run = subprocess.run(cmd, env=cli_env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, timeout=120)
    finally:
        proc.kill()
        proc.wait()
    assert run.returncode == 0, run.stderr.decode()
    out = run.stdout.decode()
    m = re.search(r"^(\d+) samples in ([\d.]+) s \(\d+/s\); \d+ failed \([\d.]+%\); "
                  r"(\d+) thread-samples$", out, re.M)
    assert m, out
    samples, threads = int(m.group(1)), int(m.group(3))
    doc = json.load(open(direct["json"]))
    assert (doc["samples"], doc["thread_samples"]) == (samples, threads)
    assert sum(s["count"] for s in doc["stacks"]) == threads
    lines = open(direct["collapsed"]).read().splitlines()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in lines) == threads
    svg = ElementTree.parse(direct["flamegraph"]).getroot()
    sub = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")
           if t.get("id") == "subtitle"]
    assert sub == ["%d samples in %s s; %d thread-samples" % (samples, m.group(2), threads)]
    scope = json.load(open(direct["speedscope"]))
    assert sum(len(p["samples"]) for p in scope["profiles"]) == threads
    with open(raw) as f:
        assert sum(1 for line in f if line.startswith('{"t":')) == threads

    again = {k: str(tmp_path / ("render." + k)) for k in names}
    cmd = [sys.executable, "-m", "pyframes", "render", raw]
    for k in names:
        cmd += ["--" + k, again[k]]
    run = subprocess.run(cmd, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=120)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout.decode().splitlines()[0] == m.group(0)
    for k in names:
        with open(direct[k], "rb") as a, open(again[k], "rb") as b:
            assert a.read() == b.read(), k


def test_command_line_errors(cli_env):
    run = subprocess.run([sys.executable, "-m", "pyframes", "sample", "1", "--rate", "-1"],
                         env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=60)
    assert run.returncode == 2 and b"--rate" in run.stderr
    run = subprocess.run([sys.executable, "-m", "pyframes", "sample", "1", "--no-cache",
                          "--read-only"], env=cli_env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=60)
    assert run.returncode == 2 and b"not allowed with" in run.stderr
    run = subprocess.run([sys.executable, "-m", "pyframes", "sample", "1", "--by", "file"],
                         env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=60)
    assert run.returncode == 2 and b"--by" in run.stderr


@pytest.mark.parametrize("threads", ["all", "main"])
def test_batches_count_the_targets_own_stacks(pyframes, interp, tmp_path, threads):
    """The library's batches (pyf_sample_run, what run() uses for a target
    it reads) on a process whose threads are all blocked: every thread-sample
    is the stack the target reports for that thread, labelled with its
    name, counted once per sample; the recorded samples are those counts;
    the per-sample loop counts the same."""
    from livetarget import LiveTarget
    with LiveTarget(interp.path, "threads.py", str(tmp_path)) as t:
        own = {t.thread_name(tid): tuple(reversed(frames))
               for tid, frames in t.threads.items() if str(tid) in t.doc["thread_info"]}
        main_name = t.thread_name(t.main_tid)
        with pyframes.attach(t.pid) as target:
            profiles = []
            for batches in (True, False):
                sampler = pyframes.sampling.Sampler(target, threads=threads,
                                                    label_threads=True, record=True)
                if not batches:
                    sampler.use_batches = lambda *args: False
                single = []  # the per-sample loop's samples
                sample = sampler.sample
                sampler.sample = lambda: single.append(1) or sample()
                try:
                    profile = pyframes.sampling.run(sampler, count=300, rate=0)
                finally:
                    sampler.close()
                assert len(single) == (0 if batches else 300)
                profiles.append(profile)
    for profile in profiles:
        assert profile.samples == 300 and profile.failed == 0, profile.errors
        want = own if threads == "all" else {main_name: own[main_name]}
        got = {label: tuple(f for f in frames) for label, frames in profile.stacks}
        assert set(got) == set(want), (sorted(got), sorted(want))
        for label, frames in got.items():
            assert [(f[0], os.path.basename(f[1]), f[2]) for f in frames] == \
                [(f[0], os.path.basename(f[1]), f[2]) for f in want[label]], label
        assert all(count == 300 for count in profile.stacks.values()), profile.stacks
        assert len(profile.raw) == profile.total
        assert [t for t, _, _ in profile.raw] == sorted(t for t, _, _ in profile.raw)
    assert profiles[0].stacks == profiles[1].stacks


def test_command_line_ctrl_c_keeps_the_profile(cli_env, tmp_path):
    """`sample` on a terminal shows one progress line; Ctrl-C (SIGINT) once
    it shows ends the sampling, the profile so far written and summed up,
    exit status 0.  The progress line is the handshake: it appears once
    samples were taken."""
    import pty
    import select
    import signal
    import time
    proc = _start(release_python("3.15"), "aba_chains.py")
    out = str(tmp_path / "p.json")
    master, slave = pty.openpty()
    try:
        run = subprocess.Popen(
            [sys.executable, "-m", "pyframes", "sample", str(proc.pid), "--duration", "600",
             "--rate", "1000", "--json", out, "--top", "3"],
            env=cli_env, stdout=subprocess.PIPE, stderr=slave)
        os.close(slave)
        seen, deadline = b"", time.monotonic() + 60
        try:
            while b"sampling: " not in seen and time.monotonic() < deadline:
                if select.select([master], [], [], 1.0)[0]:
                    seen += os.read(master, 4096)
            assert b"sampling: " in seen, seen
            run.send_signal(signal.SIGINT)
            stdout, _ = run.communicate(timeout=60)
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
    finally:
        os.close(master)
        proc.kill()
        proc.wait()
    assert run.returncode == 0, stdout
    text = stdout.decode()
    m = re.search(r"^(\d+) samples in ([\d.]+) s", text, re.M)
    assert m and int(m.group(1)) > 0 and float(m.group(2)) < 600, text
    doc = json.load(open(out))
    assert doc["samples"] == int(m.group(1)) and doc["stacks"], doc["samples"]
    assert all(st["frames"][1]["function"] == "main" for st in doc["stacks"])


class BusyService(object):
    """targets/busy_service.py: three workers in their hot leaf, the main
    thread joining them, a reporter sleeping; its handshake says which
    function the workers spend their time in (their own sys._getframe()),
    the main thread's stack and each thread's name."""

    def __init__(self, python):
        self.proc, self.doc = start_json(python, "busy_service.py")
        self.pid = self.doc["pid"]
        self.hot = (self.doc["hot"]["function"], self.doc["hot"]["filename"])

    def close(self):
        kill_json(self.proc)


def function_rows(text):
    """[(self %, total %, function, file)] of a summary's function table."""
    lines = text.splitlines()
    rows = []
    for line in lines[lines.index("  self%  total%  function (file)") + 1:]:
        m = re.match(r"^ *([\d.]+)% +([\d.]+)%  (.+) \((.*)\)$", line)
        if not m:
            break
        rows.append((float(m.group(1)), float(m.group(2)), m.group(3), m.group(4)))
    return rows


def test_defaults_sample_every_thread_hot_leaf_first(interp, cli_env, tmp_path):
    """`pyframes sample PID` with no option on a service whose workers do
    the work: every thread is read (each under its name), the function the
    workers spend their time in comes first in the table (the target's own
    record of it), the counters nobody acts on stay out of the summary;
    --main is the main thread alone (its own stack), --all is still
    accepted, --stats shows the counters."""
    service = BusyService(interp.path)
    try:
        default, main = tmp_path / "default.json", tmp_path / "main.json"
        res = run_cli(cli_env, "sample", service.pid, "--duration", "1", "--rate", "500",
                      "--json", default)
        out = res.stdout.decode()
        assert res.returncode == 0, res.stderr.decode()
        rows = function_rows(out)
        assert rows and rows[0][2:] == service.hot, out
        # three of the five threads are in it all the time
        assert rows[0][0] >= 40.0, out
        assert "mode wall (every thread, running or waiting)" in out, out
        assert not re.search(r"^(frame cache|library:)", out, re.M), out
        doc = json.load(open(str(default)))
        assert doc["threads"] == "all"
        assert {s["thread"] for s in doc["stacks"]} == set(service.doc["threads"].values()), doc
        res = run_cli(cli_env, "sample", service.pid, "--duration", "0.5", "--rate", "500",
                      "--main", "--json", main)
        assert res.returncode == 0, res.stderr.decode()
        assert "mode wall (the main thread only: --main)" in res.stdout.decode()
        doc = json.load(open(str(main)))
        own = [(f["function"], f["filename"]) for f in reversed(service.doc["main"])]
        assert doc["stacks"] and doc["threads"] == "main"
        for stack in doc["stacks"]:
            assert stack["thread"] is None
            frames = [(f["function"], f["filename"]) for f in stack["frames"]]
            assert frames[:len(own)] == own, frames
            assert "Thread.join" in [f[0] for f in frames[len(own):]], frames
        res = run_cli(cli_env, "sample", service.pid, "--duration", "0.3", "--all", "--stats")
        out = res.stdout.decode()
        assert res.returncode == 0, res.stderr.decode()
        assert function_rows(out)[0][2:] == service.hot, out
        assert re.search(r"^library: [\d.]+ us per sample; ", out, re.M), out
        res = run_cli(cli_env, "sample", service.pid, "--all", "--main")
        assert res.returncode == 2 and b"not allowed with" in res.stderr, res.stderr
    finally:
        service.close()
