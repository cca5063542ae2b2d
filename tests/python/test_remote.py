"""Remote targets as users reach them: gdb over gdbserver (`target
extended-remote | gdbserver - --attach PID`, loopback) and lldb over
lldb-server (gdbserver mode, loopback).  Memory is read through the
debugger (the PID reader is never chosen for a remote target, and refused
when asked for); the stacks are the target's own view, for a plain deep
stack and for the scenario programs of tests/python/targets/ (threads,
generators and coroutines, names of every kind).
"""

import os
import shutil
import subprocess

import pytest

import debugger_util as du
from oracle import compare_views

SCENARIOS = ("threads", "generators", "names")
# 3.13-3.15 and the older CPythons read without _Py_DebugOffsets (pyenv's
# 3.12 and 3.11: found over the remote protocol by their .PyRuntime
# section or symbol, checked by their size and Py_Version; 3.10, 3.9 and
# 3.8, the heap-frame versions, by their shape and sys.hexversion, their
# threads' OS ids from the debugger's threads)
VERSIONS = list(du.VERSIONS) + list(du.OLDER) + list(du.heap_versions("all")) \
    if du.in_sandbox() else []


def _assert_own_view(document, target, context):
    problems = du.own_view_mismatches(document, target)
    assert not problems, "\n".join(problems) + "\n" + context


@pytest.mark.parametrize("version", VERSIONS)
def test_gdbserver(version, tmp_path):
    du.require("gdb", version)
    _require_gdbserver()
    with du.LiveTarget(du.python_for(version), depth=5, workdir=str(tmp_path)) as target:
        s = du.run_gdb([
            "py-bt-fast --all --json",
            "py-bt-fast --info",
            "py-bt-fast --reader pid",
            "py-bt-fast --all --tasks --no-source" if version != "3.13" else "print 1",
            "print 2+2",
            "py-sample -n 10 --interval 1 --all --stats",
            "py-bt-fast --all --json",
        ], executable=target.view["executable"], remote=target.pid)
        _assert_own_view(s.json(0), target, s.describe(0))
        assert "reader: debugger" in s[1], s.describe(1)
        assert "needs a live process" in s[2] or "live local" in s[2], s.describe(2)
        assert "$" in s[4] and "= 4" in s[4], s.describe(4)
        # gdbserver could not stop the process again (it leads no process group)
        assert "leads none" in s[5] and "setsid" in s[5], s.describe(5)
        _assert_own_view(s.json(6), target, s.describe(6))


@pytest.mark.parametrize("version", VERSIONS)
def test_gdbserver_py_sample(version, tmp_path):
    """py-sample over gdbserver, the process leading its own process group
    (gdbserver stops a process by signalling its group): stopped for each
    sample, nothing of the stops printed, the stacks right afterwards."""
    du.require("gdb", version)
    _require_gdbserver()
    with du.LiveTarget(du.python_for(version), depth=5, workdir=str(tmp_path),
                       new_session=True) as target:
        s = du.run_gdb(["py-sample -n 10 --interval 1 --all --stats", "py-bt-fast --all --json"],
                       executable=target.view["executable"], remote=target.pid)
        _assert_remote_sample(s[0], "gdb", s.describe(0))
        _assert_own_view(s.json(1), target, s.describe(1))


def _assert_remote_sample(text, debugger, context):
    """py-sample over a remote connection: stopped for each sample (no PID
    reader there: --stats names the debugger's stop/resume time), and
    nothing of the stops printed."""
    assert text.startswith("10 samples in "), context
    assert "%s stop/resume" % debugger in text, context
    for noise in ("received signal", "SIGINT", "stop reason", "Interrupt."):
        assert noise not in text, context


def _require_gdbserver():
    if shutil.which("gdbserver") is None:
        if du.in_sandbox():
            pytest.fail("gdbserver is missing from the sandbox root")
        pytest.skip("no gdbserver")


def _lldb_server():
    server = shutil.which("lldb-server")
    if server is None:
        if du.in_sandbox():
            pytest.fail("lldb-server is missing from the sandbox root")
        pytest.skip("no lldb-server")
    return server


def _run_lldb_remote(target, commands, tmp_path):
    """lldb connected with `gdb-remote` to an lldb-server attached to the
    target (loopback; the port comes through a named pipe); the session's
    outputs, `gdb-remote` first."""
    fifo = str(tmp_path / "port")
    os.mkfifo(fifo)
    proc = subprocess.Popen([_lldb_server(), "gdbserver", "--named-pipe", fifo, "127.0.0.1:0",
                             "--attach", str(target.pid)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with open(fifo) as f:  # lldb-server writes its port once it listens
            port = f.read().strip("\0\n ")
        assert port.isdigit(), port
        return du.run_lldb(["gdb-remote 127.0.0.1:%s" % port] + commands,
                           executable=target.view["executable"])
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("version", VERSIONS)
def test_lldb_server(version, tmp_path):
    du.require("lldb", version)
    _lldb_server()
    with du.LiveTarget(du.python_for(version), depth=5, workdir=str(tmp_path)) as target:
        s = _run_lldb_remote(target, [
            "pystack --all --json",
            "pystack --info",
            "pystack --reader pid",
            "py-sample -n 10 --interval 1 --all --stats",
            "pystack --all --json",
        ], tmp_path)
        _assert_own_view(s.json(1), target, s.describe(1))
        assert "reader: debugger" in s[2], s.describe(2)
        assert "needs a live process" in s[3], s.describe(3)
        _assert_remote_sample(s[4], "lldb", s.describe(4))
        _assert_own_view(s.json(5), target, s.describe(5))


def _scenario_target(version, name, tmp_path):
    return du.LiveTarget(du.python_for(version), script=os.path.join(du.TARGETS, name + ".py"),
                         workdir=str(tmp_path))


def _assert_scenario(document, target, version, context):
    assert document["python"]["version"].startswith(du.minor_of(version) + "."), context
    names = {int(tid): info["name"] for tid, info in target.view["thread_info"].items()}
    problems = compare_views(target.threads, du.frames_of(document), "target's view",
                             "remote", names)
    assert not problems, "\n".join(problems) + "\n" + context


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("version", VERSIONS)
def test_gdbserver_scenario(version, name, tmp_path):
    du.require("gdb", version)
    _require_gdbserver()
    with _scenario_target(version, name, tmp_path) as target:
        s = du.run_gdb(["py-bt-fast --all --json"], executable=target.view["executable"],
                       remote=target.pid)
        _assert_scenario(s.json(0), target, version, s.describe(0))


@pytest.mark.parametrize("name", SCENARIOS)
@pytest.mark.parametrize("version", VERSIONS)
def test_lldb_server_scenario(version, name, tmp_path):
    du.require("lldb", version)
    with _scenario_target(version, name, tmp_path) as target:
        s = _run_lldb_remote(target, ["pystack --all --json"], tmp_path)
        _assert_scenario(s.json(1), target, version, s.describe(1))
