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
"""

import json
import os
import re
import subprocess
import sys

import pytest

import debugger_util as du
from pyframes import render
from pyframes.model import ThreadException
from test_remote import _run_lldb_remote

CLI_TIMEOUT = 120
VERSIONS = list(du.VERSIONS)


class Matrix(object):
    """The target, its own view, and the outputs: name -> (JSON document,
    text) or None when that front end cannot run here (with why)."""

    def __init__(self, version, target, truth):
        self.version, self.target, self.truth = version, target, truth
        self.outputs, self.skipped = {}, {}


def _cli(env, *args):
    res = subprocess.run([sys.executable, "-m", "pyframes", "dump"] + [str(a) for a in args],
                         capture_output=True, timeout=CLI_TIMEOUT, env=env,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr.decode("utf-8", "replace")
    return res.stdout.decode("utf-8")


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
