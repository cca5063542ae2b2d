"""Several processes at once: ``python3 -m pyframes dump PID PID ...`` (text,
--json, --group across them, a dead PID among live ones) and gdb's
``py-bt-fast --all-inferiors`` with one inferior per process.

The targets: targets/ranks.py started three times as the ranks 0, 1 and 2
of a hung job, the first two under one interpreter and the third under
another (3.13 and 3.14; then 3.12, read without _Py_DebugOffsets, and
3.13), each reporting its threads' own stacks at its handshake.  The
loaders of the first two ranks share one stack, the main threads of all
three another (they run only the target's own code); each rank's "rank-R"
thread has its own.
"""

import json
import os
import re
import subprocess
import sys

import pytest

import debugger_util as du

CLI_TIMEOUT = 120
_FRAME = re.compile(r'^\s*File "(.*)", line (\d+), in (.+)$')


class Rank(object):
    def __init__(self, rank, version, target):
        self.rank, self.version, self.target = rank, version, target
        self.pid = target.pid
        self.names = {int(tid): info["name"] for tid, info in target.doc["thread_info"].items()}

    def tids_named(self, prefix):
        return sorted(tid for tid, name in self.names.items() if name.startswith(prefix))


def _pairs():
    """(the first two ranks' interpreter, the third's): two of 3.13-3.15,
    and the representative older one (3.12) beside the first of those."""
    return [pytest.param("main", id="main")] + [
        pytest.param(v, id=v) for v in du.older_versions("representative")]


@pytest.fixture(scope="module", params=_pairs())
def ranks(request, tmp_path_factory):
    found = [v for v in du.VERSIONS if v != du.PYENV and du.python_for(v)]
    if len(found) < 2:
        du.require(None, du.VERSIONS[len(found)])  # fails in the sandbox, skips elsewhere
    du.require(None, found[0])
    pair = (found[0], found[1]) if request.param == "main" else (request.param, found[0])
    started = []
    try:
        for rank, version in enumerate((pair[0], pair[0], pair[1])):
            workdir = str(tmp_path_factory.mktemp("rank%d" % rank))
            target = du.LiveTarget(du.python_for(version), "ranks.py", workdir=workdir,
                                   args=[str(rank)])
            started.append(target)
            target.start()
        yield [Rank(i, v, t) for i, (v, t) in enumerate(
            zip((pair[0], pair[0], pair[1]), started))]
    finally:
        for target in started:
            target.stop()


def _dump(cli_env, *args):
    res = subprocess.run([sys.executable, "-m", "pyframes", "dump"] + [str(a) for a in args],
                         capture_output=True, timeout=CLI_TIMEOUT, env=cli_env,
                         stdin=subprocess.DEVNULL)
    return res.returncode, res.stdout.decode("utf-8", "replace"), \
        res.stderr.decode("utf-8", "replace")


def _sections(text):
    """{pid: (header line, the lines under it)} of the text output."""
    sections, pid = {}, None
    for line in text.splitlines():
        m = re.match(r"^Process (\d+)\b.*:$", line)
        if m:
            pid = int(m.group(1))
            sections[pid] = (line, [])
        elif pid is not None:
            sections[pid][1].append(line)
    return sections


def _text_threads(lines):
    """{native tid: [(function, filename, line)]} of one process's text."""
    threads, tid = {}, None
    for line in lines:
        m = re.match(r"^Thread .*\(native (\d+)\b", line)
        if m:
            tid = int(m.group(1))
            threads[tid] = []
            continue
        m = _FRAME.match(line)
        if m and tid is not None:
            threads[tid].append((m.group(3), m.group(1), int(m.group(2))))
    return threads


def _check_header(rank, header):
    assert "ranks.py" in header and re.search(r"ranks\.py \S+ %d\b" % rank.rank, header), header


def check_text(ranks, text, skip=()):
    sections = _sections(text)
    for r in ranks:
        if r.pid in skip:
            continue
        assert r.pid in sections, (r.pid, text)
        header, lines = sections[r.pid]
        _check_header(r, header)
        assert _text_threads(lines) == r.target.threads, (r.rank, "\n".join(lines))


def check_documents(ranks, docs):
    by_pid = {d["pid"]: d for d in docs}
    for r in ranks:
        doc = by_pid[r.pid]
        _check_header(r, doc["command"])
        problems = du.own_view_mismatches(doc, r.target)
        assert not problems, (r.rank, problems)


def check_groups(ranks, groups):
    """Every thread of every rank in exactly one group; the loaders of the
    ranks of one interpreter in one group, the third rank's in another; the
    main threads of all (no stdlib frame) in one; each rank-R thread alone;
    a group's frames its members' own."""
    frames = {}
    for r in ranks:
        for tid, fr in r.target.views.items():
            frames["%d:%d" % (r.pid, tid)] = [(f["function"], f["filename"], f["line"])
                                              for f in fr]
    seen = [m for g in groups for m in g["members"]]
    assert sorted(seen) == sorted(frames), (seen, sorted(frames))
    member_sets = [sorted(g["members"]) for g in groups]
    for g in groups:
        assert g["pids"] == [int(m.split(":")[0]) for m in g["members"]], g
        assert g["native_thread_ids"] == [int(m.split(":")[1]) for m in g["members"]], g
        got = [(f["function"], f["filename"], f["line"]) for f in g["frames"]]
        for m in g["members"]:
            assert frames[m] == got, (m, g)
    same = ranks[:2]
    loaders = sorted("%d:%d" % (r.pid, t) for r in same for t in r.tids_named("loader-"))
    # the main threads run only the target's code: the same in every rank
    mains = sorted("%d:%d" % (r.pid, r.target.main_tid) for r in ranks)
    assert loaders in member_sets, member_sets
    assert mains in member_sets, member_sets
    assert sorted("%d:%d" % (ranks[2].pid, t) for t in ranks[2].tids_named("loader-")) \
        in member_sets, member_sets
    for r in ranks:
        only = ["%d:%d" % (r.pid, t) for t in r.tids_named("rank-")]
        assert only in member_sets, (only, member_sets)


def test_cli_text(ranks, cli_env):
    """Each process under its header (its command line), every thread's
    stack as the process itself reported it."""
    code, out, err = _dump(cli_env, *[r.pid for r in ranks] + ["--no-source"])
    assert code == 0, err
    assert [int(p) for p in re.findall(r"^Process (\d+)", out, re.M)] == [r.pid for r in ranks]
    check_text(ranks, out)


def test_cli_json(ranks, cli_env):
    code, out, err = _dump(cli_env, *[r.pid for r in ranks] + ["--json"])
    assert code == 0, err
    doc = json.loads(out)
    assert [d["pid"] for d in doc["processes"]] == [r.pid for r in ranks]
    check_documents(ranks, doc["processes"])
    # one PID: the document of today, no "processes"
    code, out, err = _dump(cli_env, ranks[0].pid, "--json")
    assert code == 0, err
    single = json.loads(out)
    assert "processes" not in single and not du.own_view_mismatches(single, ranks[0].target)


def test_cli_group(ranks, cli_env):
    """--group across processes: the same stack in any process once."""
    code, out, err = _dump(cli_env, *[r.pid for r in ranks] + ["--group", "--json"])
    assert code == 0, err
    doc = json.loads(out)
    check_documents(ranks, doc["processes"])
    check_groups(ranks, doc["groups"])
    code, out, err = _dump(cli_env, *[r.pid for r in ranks] + ["--group", "--no-source"])
    assert code == 0, err
    same = ranks[:2]
    loaders = sorted((r.pid, t) for r in same for t in r.tids_named("loader-"))
    headers = [l for l in out.splitlines() if "with the same stack" in l]
    listed = [sorted((int(a), int(b)) for a, b in re.findall(r"(\d+):(\d+)", h)) for h in headers]
    assert loaders in listed, out
    head = headers[listed.index(loaders)]
    assert head.startswith("3 threads in 2 processes with the same stack: "), head
    assert '"loader-0" x2' in head and '"loader-1"' in head, head
    for r in ranks:
        tid = r.tids_named("rank-")[0]
        assert re.search(r"^Thread 0x[0-9a-f]+ \"rank-%d\" \(native %d\b.*\[process %d\]:$"
                         % (r.rank, tid, r.pid), out, re.M), out


def _dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_cli_dead_pid(ranks, cli_env):
    """A PID that cannot be read: its error in its place, the others shown,
    exit status 1."""
    dead = _dead_pid()
    pids = [ranks[0].pid, dead, ranks[2].pid]
    code, out, err = _dump(cli_env, *pids + ["--no-source"])
    assert code == 1, (out, err)
    assert "1 of 3 processes could not be read" in err, err
    sections = _sections(out)
    assert sections[dead][0] == "Process %d:" % dead, out
    assert sections[dead][1][0].startswith("  error: process %d " % dead), out
    check_text([ranks[0], ranks[2]], out)
    code, out, err = _dump(cli_env, *pids + ["--json"])
    assert code == 1, err
    docs = json.loads(out)["processes"]
    assert [d["pid"] for d in docs] == pids
    assert docs[1]["error"] and "interpreters" not in docs[1], docs[1]
    check_documents([ranks[0], ranks[2]], [docs[0], docs[2]])


def test_gdb_all_inferiors(ranks):
    """One gdb, one inferior per rank (attach, add-inferior, attach):
    --all-inferiors shows each (--all in each), as JSON, and --group across
    them; the user's inferior and thread are selected again afterwards."""
    du.require("gdb")
    setup = []
    for n, r in enumerate(ranks[1:], 2):
        setup += ["add-inferior", "inferior %d" % n, "attach %d" % r.pid]
    setup += ["inferior 2", "thread 2"]
    commands = setup + ["thread", "py-bt-fast --all-inferiors --json",
                        "py-bt-fast --all-inferiors --group --json",
                        "py-bt-fast --all-inferiors --no-source", "thread",
                        "complete py-bt-fast --all-i",
                        "py-bt-fast --all-inferiors --json --reader debugger"]
    session = du.run_gdb(commands, pid=ranks[0].pid)
    base = len(setup)
    before, after = session[base], session[base + 4]
    assert "Current thread is 2." in before and after.strip() == before.strip(), \
        session.describe(base + 4)
    doc = session.json(base + 1)
    assert [d["pid"] for d in doc["processes"]] == [r.pid for r in ranks], doc
    assert [d["label"] for d in doc["processes"]] == [
        "gdb inferior %d" % n for n in (1, 2, 3)]
    check_documents(ranks, doc["processes"])
    grouped = session.json(base + 2)
    check_groups(ranks, grouped["groups"])
    text = session[base + 3]
    check_text(ranks, text)
    for n, r in enumerate(ranks, 1):
        assert "[gdb inferior %d]:" % n in _sections(text)[r.pid][0], text
    assert re.search(r"\[gdb thread 3\.\d+\]:$", text, re.M), text
    assert "py-bt-fast --all-inferiors" in session[base + 5].splitlines(), \
        session.describe(base + 5)
    # read through gdb: each entry still has its inferior's pid
    doc = session.json(base + 6)
    assert [d["pid"] for d in doc["processes"]] == [r.pid for r in ranks], doc
    check_documents(ranks, doc["processes"])


def test_gdb_not_python(ranks):
    """An inferior that runs no Python: its error under its header, the
    other inferior still shown."""
    du.require("gdb")
    sleeper = du.sleeper()
    try:
        session = du.run_gdb(["add-inferior", "inferior 2", "attach %d" % sleeper.pid,
                              "py-bt-fast --all-inferiors --no-source",
                              "py-bt-fast --all-inferiors --json"], pid=ranks[2].pid)
    finally:
        sleeper.kill()
        sleeper.wait()
    text = session[3]
    sections = _sections(text)
    assert sections[sleeper.pid][0].endswith("[gdb inferior 2]:"), text
    not_python = "process %d (sleep) is not a Python process" % sleeper.pid
    assert sections[sleeper.pid][1][0] == "  error: " + not_python, text
    check_text([ranks[2]], text)
    docs = session.json(4)["processes"]
    assert docs[1]["pid"] == sleeper.pid and docs[1]["error"] == not_python, docs
    check_documents([ranks[2]], docs[:1])


def test_gdb_no_process():
    """No inferior with a process: the message of one inferior without."""
    du.require("gdb")
    session = du.run_gdb(["py-bt-fast --all-inferiors", "py-bt-fast --all-inferiors --info"])
    assert "no process or core file" in session[0], session.describe(0)
    assert "--info describes one process" in session[1], session.describe(1)


def test_lldb_all_targets(ranks):
    """One lldb, one target per rank (target create, process attach):
    pystack --all-targets shows each, as JSON, and --group across them."""
    du.require("lldb")
    setup = []
    for r in ranks[1:]:
        setup += ["target create %s" % os.readlink("/proc/%d/exe" % r.pid),
                  "process attach -p %d" % r.pid]
    setup.append("target select 0")
    commands = setup + ["pystack --all-targets --json", "pystack --all-targets --group --json",
                        "pystack --all-targets --no-source"]
    for n in (1, 2):
        commands += ["target select %d" % n, "process detach"]
    commands.append("target select 0")
    session = du.run_lldb(commands, pid=ranks[0].pid)
    base = len(setup)
    doc = session.json(base)
    assert [d["pid"] for d in doc["processes"]] == [r.pid for r in ranks], doc
    assert [d["label"] for d in doc["processes"]] == ["lldb target %d" % n for n in (0, 1, 2)]
    check_documents(ranks, doc["processes"])
    check_groups(ranks, session.json(base + 1)["groups"])
    text = session[base + 2]
    check_text(ranks, text)
    for n, r in enumerate(ranks):
        assert "[lldb target %d]:" % n in _sections(text)[r.pid][0], text


def test_cli_usage(cli_env):
    """What several PIDs do not take: a usage error (status 2) for one
    process's _PyRuntime; --group across them refuses what it cannot group."""
    code, _out, err = _dump(cli_env, 1, 2, "--runtime-addr", "0x1000")
    assert code == 2 and "give one PID" in err, err
    code, _out, err = _dump(cli_env, 1, 2, "--group", "--tasks")
    assert code == 2 and "--group across processes" in err, err
