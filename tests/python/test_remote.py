"""Remote targets as users reach them: gdb over gdbserver (`target
extended-remote | gdbserver - --attach PID`, loopback).  Memory is read
through gdb (the PID reader is never chosen for a remote target, and
refused when asked for); the stacks are the target's own view.
"""

import shutil

import pytest

import debugger_util as du

VERSIONS = list(du.VERSIONS) if du.in_sandbox() else []


def _assert_own_view(document, target, context):
    problems = du.own_view_mismatches(document, target)
    assert not problems, "\n".join(problems) + "\n" + context


@pytest.mark.parametrize("version", VERSIONS)
def test_gdbserver(version, tmp_path):
    du.require("gdb", version)
    if shutil.which("gdbserver") is None:
        if du.in_sandbox():
            pytest.fail("gdbserver is missing from the sandbox root")
        pytest.skip("no gdbserver")
    with du.LiveTarget(du.python_for(version), depth=5, workdir=str(tmp_path)) as target:
        s = du.run_gdb([
            "py-bt-fast --all --json",
            "py-bt-fast --info",
            "py-bt-fast --reader pid",
            "py-bt-fast --all --tasks --no-source" if version != "3.13" else "print 1",
            "print 2+2",
        ], executable=target.view["executable"], remote=target.pid)
        _assert_own_view(s.json(0), target, s.describe(0))
        assert "reader: debugger" in s[1], s.describe(1)
        assert "needs a live process" in s[2] or "live local" in s[2], s.describe(2)
        assert "$" in s[4] and "= 4" in s[4], s.describe(4)


@pytest.mark.parametrize("version", VERSIONS)
def test_lldb_server(version, tmp_path):
    """lldb over `gdb-remote` to an lldb-server attached to the target
    (loopback; the port comes through a named pipe): read through lldb."""
    import os
    import subprocess
    du.require("lldb", version)
    server = shutil.which("lldb-server")
    if server is None:
        if du.in_sandbox():
            pytest.fail("lldb-server is missing from the sandbox root")
        pytest.skip("no lldb-server")
    with du.LiveTarget(du.python_for(version), depth=5, workdir=str(tmp_path)) as target:
        fifo = str(tmp_path / "port")
        os.mkfifo(fifo)
        proc = subprocess.Popen([server, "gdbserver", "--named-pipe", fifo, "127.0.0.1:0",
                                 "--attach", str(target.pid)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with open(fifo) as f:  # lldb-server writes its port once it listens
                port = f.read().strip("\0\n ")
            assert port.isdigit(), port
            s = du.run_lldb([
                "gdb-remote 127.0.0.1:%s" % port,
                "pystack --all --json",
                "pystack --info",
                "pystack --reader pid",
            ], executable=target.view["executable"])
            _assert_own_view(s.json(1), target, s.describe(1))
            assert "reader: debugger" in s[2], s.describe(2)
            assert "needs a live process" in s[3], s.describe(3)
        finally:
            proc.kill()
            proc.wait()
