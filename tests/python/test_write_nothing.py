"""Looking writes nothing: a stopped target's writable memory is byte-identical
before and after each command of the CLI, gdb and lldb.

The target is targets/tasks.py (several threads, on 3.14+ asyncio tasks of
every kind) on 3.13-3.15, targets/threads.py (several threads) on 3.12 and
3.11 (pyenv's builds).  The test reads every writable mapping through /proc/PID/mem
(target_memory.py) before and after each command -- the CLI's while the
target is SIGSTOPped, the debuggers' inside one session each, driven one
command at a time (the debugger reports each command done through a FIFO).
Commands: py-bt-fast / pystack (selected thread, --all, --locals, --tasks on 3.14+,
--reader debugger), pyf-up, pyf-locals, pyf-print, py-sample --read-only, ``dump``,
``dump --locals``, ``dump --tasks``,
``dump --json`` and ``sample --read-only``.  With the 3.15 frame cache on
(``sample`` and ``py-sample`` without --read-only) the only words allowed to
change are the anchors (last_profiled_frame of each thread state), whose
addresses the test finds from CPython's own _Py_DebugOffsets layout; the
test clears them first, so the cache's writes are seen.
"""

import os
import re
import select
import subprocess
import sys

import pytest

import debugger_util as du
import target_memory as tm
from conftest import PACKAGE_DIR
from livetarget import frozen

VERSIONS = ("3.13", "3.14", "3.15", "pyenv-3.12", "pyenv-3.11")
STEP_TIMEOUT = 120


class Target(object):
    pass


@pytest.fixture(scope="module", params=VERSIONS)
def target(request, tmp_path_factory, library_path):
    version = request.param
    du.require(version=version)
    workdir = str(tmp_path_factory.mktemp("write-nothing-%s" % version))
    older = not version[0].isdigit()  # 3.11, 3.12: no asyncio tasks to read
    live = du.LiveTarget(du.python_for(version), "threads.py" if older else "tasks.py",
                         workdir=workdir)
    with live:
        t = Target()
        t.version, t.live, t.pid, t.workdir = version, live, live.pid, workdir
        t.python = du.python_for(version)
        t.tasks = tuple(int(n) for n in du.minor_of(version).split(".")) >= (3, 14)
        t.hexversion = live.doc["hexversion"]
        t.env = dict(os.environ, PYFRAMES_LIBRARY=library_path, PYTHONPATH=PACKAGE_DIR)
        yield t


def _clear_anchors(t, memory):
    """Zero every thread state's anchor (the test's own write) and return
    their addresses; None before 3.15 (no anchor: nothing may change)."""
    if t.version != "3.15":
        return None
    anchors = tm.anchor_words(t.python, memory, t.hexversion)
    with open("/proc/%d/mem" % t.pid, "r+b", buffering=0) as mem:
        for addr in anchors:
            mem.seek(addr)
            mem.write(bytes(8))
    return anchors


def _check(t, what, before, after, anchors):
    changed = tm.changed_words(before, after)
    if anchors is None:
        assert not changed, "%s wrote to the target at %s" % (
            what, sorted(hex(a) for a in changed)[:20])
        return
    assert changed, "%s with the frame cache on wrote no anchor" % what
    assert changed <= anchors, "%s wrote outside the anchors: %s" % (
        what, sorted(hex(a) for a in changed - anchors)[:20])
    for addr in changed:
        assert tm.word(after, addr) != 0


def _measure(t, what, run, cache=False):
    """Run one command between two reads of the stopped target's memory."""
    before = tm.writable_memory(t.pid)
    anchors = _clear_anchors(t, before) if cache else None
    if anchors is not None:
        before = tm.writable_memory(t.pid)
    result = run()
    after = tm.writable_memory(t.pid)
    _check(t, what, before, after, anchors)
    return result


def _looked(output, what):
    """The command did look: it printed a stack, tasks, a profile, a
    selected frame (File "...", or that it has no locals) or values (name =
    value)."""
    assert any(m in output for m in ("Traceback (most recent call first)", "asyncio tasks:",
                                     '"interpreters"', "samples in", 'File "', " = ",
                                     ") has no locals")), \
        "%s printed no stack:\n%s" % (what, output[-3000:])


def test_cli(target):
    t = target
    commands = [["dump"], ["dump", "--json"], ["dump", "--all", "--locals"],
                ["sample", "--read-only", "--duration", "0.2"]]
    if t.tasks:
        commands += [["dump", "--tasks"], ["dump", "--tasks", "--json"]]
    with frozen(t.pid):
        for args in commands + [["sample", "--duration", "0.2", "--all"]]:
            argv = [sys.executable, "-m", "pyframes"] + args + [str(t.pid)]
            cache = args[0] == "sample" and "--read-only" not in args
            p = _measure(t, " ".join(args), lambda: subprocess.run(
                argv, capture_output=True, text=True, env=t.env, timeout=STEP_TIMEOUT), cache)
            assert p.returncode == 0, (args, p.stderr)
            _looked(p.stdout, args)


class Stepper(object):
    """A debugger reading its commands from a pipe, one at a time: after
    each, a command of its own writes a line to a FIFO the test waits on."""

    def __init__(self, debugger, pid, workdir):
        self.debugger = debugger
        self.fifo = os.path.join(workdir, "%s-sync" % debugger)
        if not os.path.exists(self.fifo):
            os.mkfifo(self.fifo)
        self.rfd = os.open(self.fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.keep = os.open(self.fifo, os.O_WRONLY)  # no EOF between writers
        self.log = os.path.join(workdir, "%s.out" % debugger)
        self.commands = []
        if debugger == "gdb":
            argv = ["gdb", "-q", "-nx", "-iex", "set pagination off", "-iex", "set width 0",
                    "-iex", "set confirm off", "-p", str(pid), "-ex", "source " + du.GDB_PLUGIN]
        else:
            argv = ["lldb", "-x", "-p", str(pid), "-o", "command script import " + du.LLDB_PLUGIN]
        self.argv = argv
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out,
                                         stderr=subprocess.STDOUT, env=du.clean_env())
        self.step(None)  # attached, plugin loaded

    def _python(self, code):
        return ("python " if self.debugger == "gdb" else "script ") + code

    def step(self, command):
        self.send(command)
        self.wait(command)

    def send(self, command):
        """Write a command (and the line that says it is done) without
        waiting for it; :meth:`wait` then waits."""
        lines = []
        if command is not None:
            mark = "@@PYF-%d@@" % len(self.commands)
            lines.append("echo %s\\n" % mark if self.debugger == "gdb"
                         else self._python("print('%s')" % mark))
            lines.append(command)
            self.commands.append(command)
        lines.append(self._python(
            "import os; _pyf_fd = os.open(%r, os.O_WRONLY); os.write(_pyf_fd, b'x'); "
            "os.close(_pyf_fd)" % self.fifo))
        self.proc.stdin.write(("\n".join(lines) + "\n").encode())
        self.proc.stdin.flush()

    def wait(self, command):
        ready, _, _ = select.select([self.rfd], [], [], STEP_TIMEOUT)
        assert ready, "%s did not finish %r:\n%s" % (self.debugger, command, self.output()[-3000:])
        os.read(self.rfd, 64)

    def output(self):
        with open(self.log, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def close(self):
        """End the session; the outputs of the commands, split by marker."""
        try:
            end = ("echo @@PYF-END@@\\n" if self.debugger == "gdb"
                   else self._python("print('@@PYF-END@@')"))
            tail = [end] + (["detach", "quit"] if self.debugger == "gdb"
                            else ["process detach", "quit"])
            self.proc.stdin.write(("\n".join(tail) + "\n").encode())
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            os.close(self.rfd)
            os.close(self.keep)
        raw = re.sub(r"(?m)^(\(gdb\) )+", "", self.output())  # gdb's prompts
        return du.Session(self.argv, raw, self.proc.returncode, self.commands, 0)


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_debugger(target, debugger):
    t = target
    du.require(debugger, t.version)
    cmd = "py-bt-fast" if debugger == "gdb" else "pystack"
    commands = [cmd, cmd + " --all", cmd + " --all --reader debugger",
                cmd + " --all --locals", cmd + " --all --locals --reader debugger",
                "pyf-up", "pyf-locals", "pyf-print __name__",
                "py-sample --read-only --all"]
    if t.tasks:
        commands += [cmd + " --tasks", cmd + " --all --tasks"]
    commands.append("py-sample --all --reset")  # the cache (3.15) last
    stepper = Stepper(debugger, t.pid, t.workdir)
    try:
        for command in commands:
            cache = command.startswith("py-sample") and "--read-only" not in command
            _measure(t, "%s: %s" % (debugger, command), lambda: stepper.step(command), cache)
    finally:
        session = stepper.close()
    for i, command in enumerate(commands):
        _looked(session[i], "%s: %s\n%s" % (debugger, command, session.describe(i)))
