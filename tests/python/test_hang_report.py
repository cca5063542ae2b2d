"""A debugger session or a target past its time limit says where it hung.

Each test starts a process that hangs on purpose in a function named
hang_here, through the same helper the suites use (debugger_util's
run_bounded, run_gdb/run_lldb; livetarget.LiveTarget).  The process writes a
marker file as it enters hang_here; the helper's ``hung`` hook then treats
the time limit as reached (a handshake, not a guessed delay).  The failure
must hold the process's native stacks (gdb's ``thread apply all bt``) and
its Python stacks as pyframes reads them, and nothing it started may
survive.
"""

import os
import re
import signal
import sys

import pytest

import debugger_util as du
import drivers
import livetarget

DRIVERS = drivers.selected()

# Enters hang_here, which writes MARKER (its pid and the pid of a child it
# started, so that descendants are covered too) and sleeps for good.
_HANGING = r"""
import os, subprocess, sys, time

def hang_here(marker):
    child = subprocess.Popen(["sleep", "1000"])
    with open(marker + ".tmp", "w") as f:
        f.write("%d %d\n" % (os.getpid(), child.pid))
    os.rename(marker + ".tmp", marker)
    time.sleep(1000)

hang_here(sys.argv[1])
"""


def _pids(marker):
    with open(marker) as f:
        return [int(w) for w in f.read().split()]


def _gone(pid):
    """True when pid has exited (a zombie not yet reaped by init counts)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def _assert_report(message, pid, script_name):
    """The native and Python stacks of pid are in message."""
    assert "--- native stacks (gdb -p %d -batch -ex \"thread apply all bt\") ---" % pid \
        in message, message
    # gdb's own words for the thread list of pid
    assert re.search(r"^Thread 1 \(.*LWP %d\)" % pid, message, re.M), message
    assert re.search(r"^#0 +", message, re.M), message
    assert "--- Python stacks (python3 -m pyframes dump %d) ---" % pid in message, message
    assert re.search(r'^  File "%s", line \d+, in hang_here$' % re.escape(script_name),
                     message, re.M), message


def test_session_timeout_report(tmp_path):
    """run_bounded: the process and its child are reported, then killed."""
    du.require("gdb")  # the native stacks; the library reads the Python ones
    script = tmp_path / "hanging.py"
    script.write_text(_HANGING)
    marker = str(tmp_path / "marker")
    with pytest.raises(du.SessionTimeout) as info:
        du.run_bounded([sys.executable, str(script), marker],
                       hung=lambda: os.path.exists(marker), what="python")
    message = str(info.value)
    pid, child = _pids(marker)
    assert "python session still running after" in message, message
    _assert_report(message, pid, str(script))
    assert "=== descendant %d (sleep" % child in message, message
    assert _gone(pid) and _gone(child), message


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_debugger_timeout_report(driver, tmp_path):
    """A debugger hung in its own embedded Python: its Python stack is read
    by pyframes, its native stacks by gdb."""
    driver.require()
    du.require("gdb")
    marker = str(tmp_path / "marker")
    code = "exec(%r)" % (_HANGING.replace("hang_here(sys.argv[1])", "hang_here(%r)" % marker))
    with pytest.raises(du.SessionTimeout) as info:
        driver.run([("hang", driver.python(code))], plugin=False,
                   hung=lambda: os.path.exists(marker))
    message = str(info.value)
    pid, child = _pids(marker)
    _assert_report(message, pid, "<string>")
    assert "=== descendant %d (sleep" % child in message, message
    assert _gone(pid) and _gone(child), message


def test_target_handshake_timeout_report(tmp_path):
    """A target that never sends its handshake: the failure says where it is."""
    script = tmp_path / "no_handshake.py"
    script.write_text(_HANGING.replace("hang_here(sys.argv[1])", "hang_here(sys.argv[2])"))
    marker = str(tmp_path / "marker")
    du.require("gdb")
    target = livetarget.LiveTarget(sys.executable, script=str(script),
                                   workdir=str(tmp_path / "run"), args=[marker],
                                   hung=lambda: os.path.exists(marker))
    try:
        with pytest.raises(livetarget.TargetError) as info:
            target.start()
    finally:
        target.stop()
        if os.path.exists(marker):  # LiveTarget kills the target, not its child
            try:
                os.kill(_pids(marker)[1], signal.SIGKILL)
            except OSError:
                pass
    message = str(info.value)
    pid, child = _pids(marker)
    assert "no handshake within" in message, message
    _assert_report(message, pid, str(script))
    assert "=== descendant %d (sleep" % child in message, message
    assert _gone(pid), message
