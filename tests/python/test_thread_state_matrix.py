"""Issue 20's matrix where the other suites leave it open: each thread's
Python name and the exception it handles, through every front end, live,
from a core file and remote, on 3.13, 3.14, 3.15 and pyenv's build.

The target is targets/thread_facts.py; its own view (facts.json) gives
every thread's threading name and what sys.exception() is there (type,
str(), the innermost traceback line).  Per interpreter, one target and:

* the command line: ``dump --json`` and the text (each exception line
  under its thread's header);
* gdb on the live process (JSON and text; writes the core), gdb on that
  core, lldb on the live process and on gdb's core, lldb through
  lldb-server, gdb through gdbserver: one session each.

Names come from the target's memory, so a core shows "ledger-writer" as
the live process does (name_source "python"); the thread started by
_thread (in no threading table) is never given a Python name.

Then what test_thread_state.py and test_locks.py check locally, where
they do not go: native waits and names (targets/thread_state.py) from
gdb's core read by lldb and through lldb-server; held locks, waits and
cycles (targets/locks_scenario.py) through gdbserver and lldb-server.
"""

import json
import os
import re

import pytest

import debugger_util as du
from pyframes import render
from pyframes.model import ThreadException
import test_locks as tlocks
import test_thread_state as tstate
from test_thread_state import _cli
from test_remote import _run_lldb_remote

# What this module checks is told by the names of the interpreter's static
# functions in the debugger's unwind: its sessions load the -dbg packages'
# DWARF (debugger_util.DEBUGINFO).
_debuginfo = pytest.fixture(scope="module", autouse=True)(du.sessions_with_debuginfo)

VERSIONS = list(du.VERSIONS) + list(du.OLDER_REPRESENTATIVE)


class Matrix(object):
    """The target, its own view, and the outputs: name -> (JSON document,
    text) or None when that front end cannot run here (with why)."""

    def __init__(self, version, target, truth):
        self.version, self.target, self.truth = version, target, truth
        self.outputs, self.skipped = {}, {}


def _usable(debugger, version):
    try:
        du.require(debugger, version)
    except pytest.skip.Exception as e:
        return str(e)
    return None


def _sessions(m, workdir):
    """Every debugger session on the target and its core."""
    pid, exe = m.target.pid, m.target.view["executable"]
    core = os.path.join(workdir, "facts.core")
    gdb_why, lldb_why = _usable("gdb", m.version), _usable("lldb", m.version)
    pair = ["%s --all --json", "%s --all --no-source"]
    if gdb_why is None:
        s = du.run_gdb([c % "py-bt-fast" for c in pair] + ["gcore " + core], pid=pid)
        m.outputs["gdb-live"] = (s, 0)
        if os.path.exists(core):
            m.outputs["gdb-core"] = (du.run_gdb([c % "py-bt-fast" for c in pair],
                                                executable=exe, core=core), 0)
        m.outputs["gdb-remote"] = (du.run_gdb([c % "py-bt-fast" for c in pair],
                                              executable=exe, remote=pid), 0)
    else:
        for name in ("gdb-live", "gdb-core", "gdb-remote"):
            m.skipped[name] = gdb_why
    if lldb_why is None:
        m.outputs["lldb-live"] = (du.run_lldb([c % "pystack" for c in pair], pid=pid), 0)
        if os.path.exists(core):
            m.outputs["lldb-core"] = (du.run_lldb([c % "pystack" for c in pair],
                                                  executable=exe, core=core), 0)
        # the session's first output is gdb-remote's
        m.outputs["lldb-remote"] = (_run_lldb_remote(m.target, [c % "pystack" for c in pair],
                                                     _Dir(workdir)), 1)
    else:
        for name in ("lldb-live", "lldb-core", "lldb-remote"):
            m.skipped[name] = lldb_why
    if "gdb-core" not in m.outputs and "gdb-live" in m.outputs:
        m.skipped["gdb-core"] = m.skipped["lldb-core"] = "gdb wrote no core"


class _Dir(str):
    """A workdir as test_remote's helper takes it (path / name)."""

    def __truediv__(self, name):
        return os.path.join(self, name)


@pytest.fixture(scope="module", params=VERSIONS)
def matrix(request, tmp_path_factory, cli_env):
    version = request.param
    du.require(None, version)
    workdir = str(tmp_path_factory.mktemp("matrix-" + version))
    with du.LiveTarget(du.python_for(version), "thread_facts.py", workdir=workdir) as target:
        with open(os.path.join(workdir, "facts.json")) as f:
            m = Matrix(version, target, json.load(f))
        m.cli_json = json.loads(_cli(cli_env, target.pid, "--json"))
        m.cli_text = _cli(cli_env, target.pid, "--all", "--no-source")
        _sessions(m, workdir)
        yield m


def _expected_line(seen):
    return render.exception_line(ThreadException(
        type=seen["type"], message=seen["message"], handled=True, file=seen["file"],
        line=seen["line"]))


def check_json(m, doc):
    """Every thread of the target: its Python name (the _thread one none
    from Python) and its exception exactly as the target sees them."""
    rows = {t["native_thread_id"]: t for i in doc["interpreters"] for t in i["threads"]}
    problems = []
    for tid, seen in m.truth["threads"].items():
        row = rows.get(int(tid))
        if row is None:
            problems.append("thread %s (%s) missing" % (tid, seen["name"]))
            continue
        if (row["name"], row["name_source"]) != (seen["name"], "python"):
            problems.append("thread %s: name %r from %r, the target says %r"
                            % (tid, row["name"], row["name_source"], seen["name"]))
        want = seen["exception"]
        if want is not None:
            want = dict(want, handled=True)
        if row["exception"] != want:
            problems.append("thread %s (%s): exception %r, the target handles %r"
                            % (tid, seen["name"], row["exception"], want))
    bare = rows.get(m.truth["bare"]["native_id"])
    if bare is None or bare["name_source"] == "python" or bare["exception"] is not None:
        problems.append("the _thread thread: %r" % (bare,))
    return problems


def check_text(m, text):
    """Each exception line right under its thread's header, which names the
    thread; no other thread has one."""
    lines = text.splitlines()
    problems = []
    for tid, seen in m.truth["threads"].items():
        at = [i for i, line in enumerate(lines)
              if re.match(r"Thread 0x[0-9a-f]+ .*\(native %s\b" % tid, line)]
        if len(at) != 1:
            problems.append("thread %s: %d headers" % (tid, len(at)))
            continue
        header, after = lines[at[0]], lines[at[0] + 1] if at[0] + 1 < len(lines) else ""
        if render.quoted_name(seen["name"]) not in header:
            problems.append("thread %s: header %r without %r" % (tid, header, seen["name"]))
        want = _expected_line(seen["exception"]) if seen["exception"] else None
        if want is not None and after != want:
            problems.append("thread %s: %r under its header, expected %r" % (tid, after, want))
        if want is None and after.startswith(("  handling ", "  raising ")):
            problems.append("thread %s handles nothing, shown %r" % (tid, after))
    if sum(1 for line in lines if line.startswith("  handling ")) != 3:
        problems.append("not 3 exception lines")
    return problems


def test_cli(matrix):
    problems = check_json(matrix, matrix.cli_json) + check_text(matrix, matrix.cli_text)
    assert not problems, "\n".join(problems) + "\n" + matrix.cli_text


@pytest.mark.parametrize("front", ["gdb-live", "gdb-core", "gdb-remote", "lldb-live",
                                   "lldb-core", "lldb-remote"])
def test_debugger(matrix, front):
    if front in matrix.skipped:
        pytest.skip(matrix.skipped[front])
    session, first = matrix.outputs[front]
    problems = check_json(matrix, session.json(first))
    problems += check_text(matrix, session[first + 1])
    assert not problems, "\n".join(problems) + "\n" + session.describe(first + 1)


# ---- native waits and locks: lldb from a core and remote, locks remote ------

@pytest.fixture(scope="module", params=VERSIONS)
def waits_and_locks(request, tmp_path_factory):
    """targets/thread_state.py (its core written by gdb, read by lldb; lldb
    through lldb-server) and targets/locks_scenario.py (gdb through
    gdbserver, lldb through lldb-server): one session each."""
    version = request.param
    du.require("lldb", version)
    if _usable("gdb", version) is not None:
        pytest.skip("gdb writes the core and reaches gdbserver")
    workdir = str(tmp_path_factory.mktemp("waits-" + version))
    out = {}
    target = tstate._start(version, workdir)
    try:
        out["state"] = tstate.State(target)
        core = os.path.join(workdir, "state.core")
        du.run_gdb(["gcore " + core], pid=target.pid, plugin=False)
        exe = target.view["executable"]
        out["state-core"] = (du.run_lldb(["pystack --all --json"], executable=exe, core=core)
                             if os.path.exists(core) else None)
        out["state-remote"] = _run_lldb_remote(target, ["pystack --all --json"],
                                               _Dir(workdir))
    finally:
        target.stop()
    ldir = os.path.join(workdir, "locks")
    os.mkdir(ldir)
    with du.LiveTarget(du.python_for(version), "locks_scenario.py", workdir=ldir) as target:
        s = tlocks.Scenario()
        s.target = target
        with open(os.path.join(ldir, "locks.json")) as f:
            s.truth = json.load(f)
        s.minor = int(target.doc["hexversion"]) >> 16 & 0xFF
        out["locks"] = s
        out["locks-gdb-remote"] = du.run_gdb(["py-bt-fast --all --locks --json"],
                                             executable=target.view["executable"],
                                             remote=target.pid)
        out["locks-lldb-remote"] = _run_lldb_remote(target, ["pystack --all --locks --json"],
                                                    _Dir(ldir))
    yield out


def test_lldb_core_waits(waits_and_locks):
    """gdb's core read by lldb: names from memory (or none: lldb names no
    thread of an ELF core), waits from lldb's unwind, the fd of a read from
    the core's registers (its NT_PRSTATUS notes: lldb shows no orig_rax)."""
    s = waits_and_locks["state-core"]
    if s is None:
        pytest.skip("gdb wrote no core")
    try:
        tstate.check_document(waits_and_locks["state"], s.json(0), live=False,
                              sources=("python", "debugger", None), fds=True)
    except AssertionError as e:
        raise AssertionError("%s\n%s" % (e, s.describe(0)))


def test_lldb_remote_waits(waits_and_locks):
    """lldb-server: names from memory or lldb's, waits from its unwind."""
    s = waits_and_locks["state-remote"]
    try:
        tstate.check_document(waits_and_locks["state"], s.json(1), live=False,
                              sources=("python", "debugger"))
    except AssertionError as e:
        raise AssertionError("%s\n%s" % (e, s.describe(1)))


@pytest.mark.parametrize("front, first", [("locks-gdb-remote", 0), ("locks-lldb-remote", 1)])
def test_remote_locks(waits_and_locks, front, first):
    """Held locks, waits and cycles through gdbserver and lldb-server: the
    scenario's own record, as in test_locks for local sessions."""
    s = waits_and_locks[front]
    sc = waits_and_locks["locks"]
    problems = tlocks._mismatches(sc, *tlocks._document(sc, s.json(first)), native=True)
    assert not problems, "\n".join(problems) + "\n" + s.describe(first)
