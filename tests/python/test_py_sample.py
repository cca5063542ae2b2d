"""py-sample in gdb and lldb (pyframes.sample_command), one suite for every
debugger driver (tests/python/drivers.py).

The target, targets/aba_chains.py, alternates two call chains; each sample
lets it run, stops it and reads its main thread.  Through the debugger's
command, on 3.15 with the frame cache: at least 200 samples in one profile
built over several invocations, no stack mixing the chains, the counters
showing the cache was used, the read-only mode writing nothing, the session
still usable afterwards.  On 3.13 the cache falls back to read-only.
"""
import json
import os
from xml.etree import ElementTree
import re
import select
import signal
import subprocess
import time

import pytest

import debugger_util as du
import drivers

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "targets", "aba_chains.py")
DRIVERS = drivers.selected()
# 3.15 with its frame cache, 3.13 without; the older CPythons'
# representative (3.12) and the heap-frame one (3.10) in gdb and lldb 21
PAIRS = [(d, v) for d in DRIVERS for v in ("3.15", "3.13") if v in d.versions()] + \
    [(d, v) for d in DRIVERS if d.name in ("gdb", "lldb")
     for v in du.OLDER_REPRESENTATIVE + tuple(h for h in du.heap_versions()
                                              if du.minor_of(h) == "3.10")]
IDS = ["%s-%s" % (d.name, v) for d, v in PAIRS]


def _stacks(path):
    doc = json.load(open(path))
    return doc, [([f["function"] for f in s["frames"]], s["count"]) for s in doc["stacks"]]


@pytest.mark.parametrize("driver,version", PAIRS, ids=IDS)
def test_py_sample_profile(driver, version, tmp_path):
    driver.require(version)
    proc = subprocess.Popen([du.python_for(version), TARGET], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        f = {k: str(tmp_path / k) for k in ("p1.json", "p2.json", "s2.json", "c2.txt",
                                            "s3.json", "g.svg", "all.raw", "c3.txt")}
        n = 100 if version == "3.15" else 30
        named = [
            ("first", "py-sample -n %d --interval 1 --json %s" % (n, f["p1.json"])),
            ("second", "py-sample -n %d --interval 1 --json %s --stats-json %s "
             "--collapsed %s --flamegraph %s --stats" % (n, f["p2.json"], f["s2.json"],
                                                         f["c2.txt"], f["g.svg"])),
            ("bare", "py-sample --top 3 --by function --raw %s --collapsed %s"
             % (f["all.raw"], f["c3.txt"])),
            ("readonly", "py-sample --reset -n 5 --interval 1 --read-only "
             "--stats-json %s" % f["s3.json"]),
            ("stack", "%s --all --json" % driver.command),
            ("after", driver.echo(7)[0]),
            ("save_core", driver.save_core(str(tmp_path / "core"))),
        ]
        s = driver.run(named, pid=proc.pid)
    finally:
        proc.kill()
        proc.wait()
    # a core file: one sample, said so, nothing written
    core = driver.run([("sample", "py-sample -n 5 --stats-json %s" % (tmp_path / "core.json"))],
                      executable=du.python_for(version), core=str(tmp_path / "core"))
    assert "a core file holds one moment: 1 sample taken" in core["sample"], \
        core.describe("sample")
    core_stats = json.load(open(str(tmp_path / "core.json")))
    assert core_stats["samples"] == 1 and core_stats["anchor_writes"] == 0
    assert re.search(r"^%d samples in " % n, s["first"], re.M), s.describe("first")
    assert re.search(r"^%d samples in " % (2 * n), s["second"], re.M), s.describe("second")
    assert re.search(r"^%d samples in " % (2 * n + 1), s["bare"], re.M), s.describe("bare")
    assert re.search(r"^the process ran while it was sampled by PID \(%s stopped it once\)$"
                     % driver.debugger, s["second"], re.M), s.describe("second")
    # the sampler's own counters only with --stats
    assert re.search(r"^per sample: library [\d.]+ us$", s["second"], re.M), \
        s.describe("second")
    assert not re.search(r"^(per sample|frame cache|library)", s["first"], re.M), \
        s.describe("first")

    doc, stacks = _stacks(f["p2.json"])
    total = 0
    for names, count in stacks:
        assert names[:2] == ["<module>", "main"], names
        assert len({name[0] for name in names[2:]}) <= 1, names  # one chain
        total += count
    assert total == doc["counters"]["samples"] - doc["counters"]["failed_samples"] - \
        doc["counters"]["thread_errors"]
    # the process runs while it is read (a live local one): a sample whose
    # stack changed under every retry is counted as failed, not shown.  This
    # target swaps two call chains at the same addresses all the time: where
    # it runs on one CPU while the debugger reads it from the other, most
    # uncached samples find copies that differ eight times in a row (15 to
    # 29 of 60 read on 3.13 and 3.12 here, test_frame_cache's pinned loop
    # about a third); copies that differ in the top frame are read again
    # on 3.14+ too (benchmarks.md).  Each is a failed sample, never a mixed
    # stack (above)
    # 3.8-3.10: the leaves return all the time, and a running process's
    # top frame read after its return is read again (frames_heap.c): most
    # samples fail there, and only some stacks are required
    heap = du.minor_of(version) in ("3.8", "3.9", "3.10")
    assert total >= (1 if heap else 0.15 * 2 * n), doc["counters"]
    assert sum(int(line.rsplit(" ", 1)[1]) for line in open(f["c2.txt"])) == total

    # the raw file holds every sample of the three invocations; rendered
    # by function it gives py-sample's own collapsed file
    from pyframes import rawprofile, report
    kept, title = rawprofile.load(f["all.raw"])
    # the profile's title: the command and the process's command line
    command = "%s %s" % (du.python_for(version), TARGET)
    assert kept.samples == 2 * n + 1 and title == "py-sample of pid %d (%s)" % (
        proc.pid, command), title
    assert len(kept.raw) == kept.total == sum(kept.stacks.values())
    options = type("Options", (), {"by": "function", "collapsed": str(tmp_path / "r.txt")})
    report.write_outputs(kept, options, title=title)
    assert open(options.collapsed).read() == open(f["c3.txt"]).read()
    assert all(re.search(r"main \([^:]*aba_chains\.py\)", line) for line in open(f["c3.txt"]))

    svg = ElementTree.parse(f["g.svg"]).getroot()
    titles = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t.startswith("main (") for t in titles), titles[:5]
    assert [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")
            if t.get("id") == "title"] == ["pyframes: py-sample of pid %d (%s)" % (
                proc.pid, command)]

    stats = json.load(open(f["s2.json"]))
    readonly = json.load(open(f["s3.json"]))
    assert readonly["anchor_writes"] == 0 and readonly["samples"] == 5
    if version == "3.15":
        assert stats["full_hits"] + stats["partial_hits"] > 0, stats
        assert stats["anchor_writes"] > 0, stats
        assert re.search(r"^frame cache \(on\): ", s["second"], re.M), s.describe("second")
    else:
        assert stats["anchor_writes"] == 0, stats
        assert re.search(r"^frame cache \(read-only\): ", s["second"], re.M)
    assert s.json("stack")["python"]["version"].startswith(du.minor_of(version))
    assert re.search(driver.echo(7)[1], s["after"]), s.describe("after")


@pytest.mark.parametrize("driver", [d for d in DRIVERS if "3.15" in d.versions()],
                         ids=lambda d: d.name)
def test_py_sample_process_exits(driver, tmp_path):
    """The process ends while py-sample runs it: the profile so far is
    reported, and the session goes on."""
    driver.require("3.15")
    script = tmp_path / "brief.py"
    script.write_text("import os, time\nos.write(1, b'ready\\n')\nend = time.monotonic() + 2\n"
                      "while time.monotonic() < end:\n    sum(range(100))\n")
    proc = subprocess.Popen([du.python_for("3.15"), str(script)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        s = driver.run([("sample", "py-sample -n 100000 --interval 5"),
                        ("after", driver.echo(3)[0])], pid=proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert re.search(r"^the process stopped running after \d+ samples$", s["sample"], re.M), \
        s.describe("sample")
    assert re.search(r"^\d+ samples in ", s["sample"], re.M), s.describe("sample")
    assert re.search(driver.echo(3)[1], s["after"]), s.describe("after")


LIVE = [d for d in DRIVERS if d.name in ("gdb", "lldb")]


def _state(pid):
    with open("/proc/%d/stat" % pid) as f:
        data = f.read()
    return data[data.rfind(")") + 2]


@pytest.mark.parametrize("driver", LIVE, ids=lambda d: d.name)
def test_py_sample_live(driver, tmp_path):
    """A live local process runs while py-sample reads it by PID: 500 samples
    at 1 kHz, no stop report in the output, the process stopped
    again with the selected thread still selected and the next commands
    right; Ctrl-C (SIGINT to the debugger) mid-sampling ends it with the
    partial profile, and the session goes on."""
    from test_write_nothing import Stepper
    driver.require("3.14")
    proc = subprocess.Popen([du.python_for("3.14"), os.path.join(HERE, "targets", "modes.py"),
                             "cpu"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    profile = str(tmp_path / "live.json")
    try:
        hello = json.loads(proc.stdout.readline())
        roles = hello["roles"]
        stepper = Stepper(driver.debugger, proc.pid, str(tmp_path))
        try:
            gdb = driver.debugger == "gdb"
            stepper.step("thread 3" if gdb else "thread select 3")
            stepper.step("thread" if gdb else "thread info")
            stepper.step("py-sample -n 500 --interval 1 --all --mode cpu --json %s" % profile)
            stepper.step("thread" if gdb else "thread info")
            stepper.step("%s --json" % driver.command)
            stepper.step("bt 3")
            # Ctrl-C: once the process runs again (py-sample resumed it), the
            # debugger gets SIGINT; the run would take 1,000 s
            stepper.send("py-sample --reset -n 1000000 --interval 1")
            deadline = time.monotonic() + 60
            while _state(proc.pid) == "t" and time.monotonic() < deadline:
                select.select([], [], [], 0.01)
            assert _state(proc.pid) != "t", "py-sample did not resume the process"
            os.kill(stepper.proc.pid, signal.SIGINT)
            stepper.wait("the interrupted py-sample")
            stepper.step(driver.echo(5)[0])
        finally:
            session = stepper.close()
    finally:
        proc.kill()
        proc.wait()
    before, sample, after, stack, bt, interrupted, echo = (session[i] for i in range(1, 8))
    assert re.search(r"^500 samples in ", sample, re.M), session.describe(2)
    assert "ran while it was sampled by PID" in sample, session.describe(2)
    for noise in ("received signal", "SIGINT", "stop reason", "Interrupt."):
        assert noise not in sample, session.describe(2)
    # the same thread selected (its number and id; lldb's stop reason may differ)
    ident = r"(?:Current thread is|thread #)\s*(\d+)\D.*?(?:LWP |tid = )(\d+)"
    assert re.search(ident, before) and \
        re.search(ident, before).groups() == re.search(ident, after or "").groups(), \
        (before, after)
    doc = json.load(open(profile))
    # each thread labelled by its name, the native id added where names repeat
    labels = set("%s (%d)" % (name, native) if name == "idle" else name
                 for name, native in hello["threads"])
    assert set(st["thread"] for st in doc["stacks"]) <= labels, doc["stacks"]
    busy = sum(st["count"] for st in doc["stacks"] if st["thread"] == "spinner")
    # (threads the stop left are runnable for a moment after the resume)
    assert doc["samples"] == 500 and busy >= 0.8 * doc["thread_samples"], doc["thread_samples"]
    # the plugin's command shows the selected thread: the one selected before
    selected = int(re.search(r"(?:LWP |tid = )(\d+)", before).group(1))
    threads = [t for interp in json.JSONDecoder().raw_decode(stack[stack.index("{"):])[0]["interpreters"]
               for t in interp["threads"]]
    assert [t["native_thread_id"] for t in threads] == [selected], stack
    assert "#0" in bt or "frame #0" in bt, bt
    m = re.search(r"^(\d+) samples in ", interrupted, re.M)
    assert m and 0 < int(m.group(1)) < 1000000, interrupted
    assert re.search(driver.echo(5)[1], echo, re.M), echo


GIL_PAIRS = [(d, v) for d in LIVE for v in ("3.13", "3.14") if v in d.versions()] + \
    [(d, v) for d in LIVE if d.name == "gdb" for v in ("pyenv-3.12", "pyenv-3.11")]


@pytest.mark.parametrize("driver,version", GIL_PAIRS,
                         ids=["%s-%s" % (d.name, v) for d, v in GIL_PAIRS])
def test_py_sample_live_gil_mode(driver, version, tmp_path):
    """py-sample --mode gil on a live 3.11-3.14 process, where only the
    interpreter's GIL (3.11: the runtime's) says who holds it: the thread
    spinning in Python gets at least 80% of the thread-samples, the one
    hashing with the GIL released at most 15%, the threads blocked in C (an
    Event's lock, a raw _thread, stdin) none; the labels are the target's
    thread names (3.13+; 3.11 and 3.12 counted by native id)."""
    from test_sample_modes import _labels, tid_of
    driver.require(version)
    proc = subprocess.Popen([du.python_for(version), os.path.join(HERE, "targets", "modes.py"),
                             "gil"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    profile = str(tmp_path / "gil.json")
    try:
        hello = json.loads(proc.stdout.readline())  # the handshake: every thread runs
        labels = _labels(proc.pid, hello["threads"])
        s = driver.run([("sample", "py-sample -n 300 --interval 1 --all --mode gil --json %s"
                         % profile)], pid=proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert re.search(r"^300 samples in ", s["sample"], re.M), s.describe("sample")
    doc = json.load(open(profile))
    counts = {}
    for st in doc["stacks"]:
        counts[st["thread"]] = counts.get(st["thread"], 0) + st["count"]
    total = float(sum(counts.values()))
    roles = hello["roles"]
    if version[0].isdigit():
        assert total > 0 and set(counts) <= set(labels.values()), (counts, labels)
    by_tid = {}
    for label, n in counts.items():
        by_tid[tid_of(labels, label)] = by_tid.get(tid_of(labels, label), 0) + n
    assert total > 0 and None not in by_tid, (counts, labels)
    assert by_tid.get(roles["busy"], 0) >= 0.8 * total, counts
    assert by_tid.get(roles["hashing"], 0) <= 0.15 * total, counts
    blocked = roles["idle"] + [roles["raw"], proc.pid]
    assert not [n for n in blocked if by_tid.get(n)], counts


DEFAULT_PAIRS = [(d, v) for d in LIVE for v in ("3.13", "3.14", "3.15") if v in d.versions()]


@pytest.mark.parametrize("driver,version", DEFAULT_PAIRS,
                         ids=["%s-%s" % (d.name, v) for d, v in DEFAULT_PAIRS])
def test_py_sample_defaults_hot_leaf_first(driver, version, tmp_path):
    """py-sample with no option on a service whose workers do the work
    (targets/busy_service.py), as `pyframes sample`: every thread read,
    the function the workers spend their time in (their own record) first
    in the table, no counter in the summary; --main the main thread's own
    stack alone (the options of options.py, the same words)."""
    from test_sampling import BusyService, function_rows
    driver.require(version)
    service = BusyService(du.python_for(version))
    main = str(tmp_path / "main.json")
    try:
        s = driver.run([("every", "py-sample -n 300 --interval 1"),
                        ("main", "py-sample --main -n 100 --interval 1 --json %s" % main)],
                       pid=service.pid)
    finally:
        service.close()
    rows = function_rows(s["every"])
    assert rows and rows[0][2:] == service.hot and rows[0][0] >= 40.0, s.describe("every")
    assert "mode wall (every thread, running or waiting)" in s["every"], s.describe("every")
    assert not re.search(r"^(frame cache|library:|per sample)", s["every"], re.M), \
        s.describe("every")
    assert "mode wall (the main thread only: --main)" in s["main"], s.describe("main")
    doc = json.load(open(main))
    own = [(f["function"], f["filename"]) for f in reversed(service.doc["main"])]
    assert doc["samples"] == 100 and doc["stacks"], doc
    for stack in doc["stacks"]:
        frames = [(f["function"], f["filename"]) for f in stack["frames"]]
        assert stack["thread"] is None and frames[:len(own)] == own, stack
