"""One driver per debugger for the debugger suite (test_debuggers.py).

A driver knows how to start its debugger on a live process or a core file,
load the plugin, run NAMED commands and hand back each command's output by
name, and how its debugger spells the few things the suite needs besides
the plugin's command (a plain command that proves the session still works,
selecting a thread, writing a core, restricting or breaking the plugin's
adapter for fault injection).

Drivers:
  gdb       the sandbox's gdb (18), against python3.13/3.14/3.15 (and the
            host's CPython when PYFRAMES_PYENV_PYTHON names one), and pyenv's
            3.12 and 3.11 (debugger_util.OLDER)
  lldb      the sandbox's lldb (21), against the same interpreters
  lldb22    lldb 22 (frame providers), unpacked beside it in the root
            (lldb-22), against the same interpreters
  host-gdb  the host's own gdb (Debian 12: gdb 13 embedding Python 3.11),
            outside the sandbox, against the host CPython named by
            PYFRAMES_PYENV_PYTHON (a PIE with a shared libpython), pyenv's
            3.12 and 3.11, and Debian's own python3.11 (static, non-PIE,
            stripped)

PYFRAMES_DEBUGGERS (comma list) chooses them; by default gdb, lldb and
lldb22 inside the sandbox root and host-gdb outside it.  With PYFRAMES_REQUIRE_HOST_GDB=1 a
host-gdb driver that cannot run fails instead of skipping.
"""

import os
import re

import pytest

import debugger_util as du

__all__ = ["Driver", "selected", "NamedSession"]


class NamedSession(object):
    """A debugger run whose commands have names: ``s["auto"]`` is the output
    of the command named "auto", ``s.json("auto")`` its JSON document."""

    def __init__(self, session, names):
        self.session = session
        self.index = {name: i for i, name in enumerate(names)}

    def __getitem__(self, name):
        return self.session[self.index[name]]

    def json(self, name):
        return self.session.json(self.index[name])

    def describe(self, name=None):
        return self.session.describe(None if name is None else self.index[name])


class Driver(object):
    name = None
    debugger = None        # "gdb" or "lldb": the plugin under test
    command = None         # the plugin's command
    adapter_class = None   # the plugin's adapter class, as the debugger's Python sees it
    native_core = None     # what the debugger's own core writer produces: "elf", "minidump"

    def __repr__(self):
        return self.name

    # ---- what runs -----------------------------------------------------

    def versions(self):
        """The target interpreters of this driver (debugger_util names)."""
        return list(du.VERSIONS)

    def older_versions(self):
        """The older interpreters it reads without _Py_DebugOffsets
        (debugger_util.OLDER: pyenv's 3.12 and 3.11; on the host also
        Debian's python3.11), for the suites that run on them."""
        return list(du.OLDER)

    def require(self, version=None):
        du.require(self.debugger, version)

    # ---- sessions ------------------------------------------------------

    def run(self, named, **kw):
        """Run [(name, command)] in one session; kw as du.run_gdb/run_lldb
        (pid, executable, core, plugin, debuginfo)."""
        names = [n for n, _ in named]
        assert len(set(names)) == len(names), "command names must be unique"
        session = self._run([c for _, c in named], **kw)
        return NamedSession(session, names)

    def _run(self, commands, **kw):
        raise NotImplementedError

    # ---- spellings -------------------------------------------------------

    def echo(self, n):
        """(a plain debugger command, a regex its output matches) that proves
        the debugger still runs commands."""
        raise NotImplementedError

    def select(self, tid):
        raise NotImplementedError

    def save_core(self, path):
        raise NotImplementedError

    def attach(self, pid):
        """The command that attaches to pid within a session."""
        raise NotImplementedError

    def detach(self):
        raise NotImplementedError

    def python(self, code):
        """A command running one line of Python in the debugger."""
        raise NotImplementedError

    def thread_label(self, num):
        """How the plugin names the debugger's thread number num in a header."""
        raise NotImplementedError

    def no_python_selected(self):
        """How the plugin's error for a selected thread without Python starts."""
        raise NotImplementedError

    def patch_adapter(self, assignment):
        """A command that changes the plugin's adapter class for the rest of
        the session (fault injection): assignment like "read = lambda ...". """
        return self.python("%s.%s" % (self.adapter_class, assignment))

    def completions(self):
        """[(completion command, a line its output holds)] when the debugger
        completes the plugin's options, else []."""
        return []

    def plain_argv(self, pid):
        """The command line as a user types it, from the root of the clone:
        attach, load the plugin by its relative path, print every thread."""
        raise NotImplementedError


class Gdb(Driver):
    name = "gdb"
    debugger = "gdb"
    command = "py-bt-fast"
    adapter_class = "PyframesGdbAdapter"
    native_core = "elf"

    def _run(self, commands, **kw):
        return du.run_gdb(commands, **kw)

    def echo(self, n):
        return "print %d+%d" % (n, n), r"^\$\d+ = %d$" % (2 * n)

    def select(self, tid):
        return self.python("[t.switch() for t in gdb.selected_inferior().threads() "
                           "if t.ptid[1] == %d]" % tid)

    def save_core(self, path):
        return "gcore " + path

    def attach(self, pid):
        return "attach %d" % pid

    def detach(self):
        return "detach"

    def python(self, code):
        return "python " + code

    def thread_label(self, num):
        return "[gdb thread %d]" % num

    def no_python_selected(self):
        return "the selected thread (thread "

    def completions(self):
        return [("complete py-bt-fast --j", "py-bt-fast --json"),
                ("complete py-bt-fast --reader d", "py-bt-fast --reader debugger")]

    def plain_argv(self, pid):
        return ["gdb", "--batch", "-nx", "-p", str(pid),
                "-ex", "source gdb/pyframes_gdb.py", "-ex", "py-bt-fast --all --json"]


class Lldb(Driver):
    name = "lldb"
    debugger = "lldb"
    command = "pystack"
    adapter_class = "pyframes_lldb.LldbAdapter"
    native_core = "minidump"
    binary = "lldb"        # the executable run (lldb 21 in the sandbox)

    def _run(self, commands, **kw):
        return du.run_lldb(commands, lldb=self.binary, **kw)

    def echo(self, n):
        return "script print('ok-%d' % (40 + " + str(n) + "))", r"^ok-%d$" % (40 + n)

    def select(self, tid):
        return "script lldb.process.SetSelectedThreadByID(%d)" % tid

    def save_core(self, path):
        return "process save-core --style full " + path

    def attach(self, pid):
        return "process attach --pid %d" % pid

    def detach(self):
        return "process detach"

    def python(self, code):
        return "script " + code

    def thread_label(self, num):
        return "[lldb thread #%d]" % num

    def no_python_selected(self):
        return "error: the selected thread (thread #"

    def plain_argv(self, pid):
        # On lldb 21 with the setting docs/debuggers.md has users put in
        # ~/.lldbinit (its parallel module loading can deadlock the attach).
        early = ["-O", du.AVOID_PARALLEL_LOAD] if du.lldb_major(self.binary) == 21 else []
        return [self.binary, "--batch", "-x"] + early + ["-p", str(pid),
                "-o", "command script import lldb/pyframes_lldb.py",
                "-o", "pystack --all --json", "-o", "process detach"]


class Lldb22(Lldb):
    """lldb 22 (frame providers), unpacked beside lldb 21 in the sandbox
    root and run as lldb-22."""

    name = "lldb22"
    binary = "lldb-22"

    def require(self, version=None):
        du.require(None, version)
        if not du.lldb22_usable():
            if du.in_sandbox():
                pytest.fail("lldb-22 is not usable in the sandbox root")
            pytest.skip("lldb 22 not found (lldb-22)")


class HostGdb(Gdb):
    """The host's gdb, run outside the sandbox root (tests/sandbox/host_gdb.sh)."""

    name = "host-gdb"

    def versions(self):
        return [du.PYENV]

    def require(self, version=None):
        problems = []
        if du.in_sandbox():
            problems.append("host-gdb runs on the host, not inside the sandbox root")
        if not du.gdb_usable():
            problems.append("gdb with Python 3 not found")
        if du.python_for(version or du.PYENV) is None:
            problems.append("no host CPython %s (set PYFRAMES_PYENV_PYTHON)"
                            % ("3.13+" if version in (None, du.PYENV) else version))
        if du.library_problem() is not None:
            problems.append("pyframes not loadable: %s" % du.library_problem())
        if problems:
            if os.environ.get("PYFRAMES_REQUIRE_HOST_GDB") == "1" and not du.in_sandbox():
                pytest.fail("; ".join(problems) + " (PYFRAMES_REQUIRE_HOST_GDB=1)")
            pytest.skip("; ".join(problems))


_DRIVERS = {d.name: d for d in (Gdb(), Lldb(), Lldb22(), HostGdb())}


def selected():
    """The drivers PYFRAMES_DEBUGGERS names (see the module docstring)."""
    names = os.environ.get("PYFRAMES_DEBUGGERS")
    if not names:
        names = "gdb,lldb,lldb22" if du.in_sandbox() else "host-gdb"
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in _DRIVERS]
    if unknown:
        raise ValueError("PYFRAMES_DEBUGGERS: unknown driver(s) %s (known: %s)"
                         % (", ".join(unknown), ", ".join(sorted(_DRIVERS))))
    return [_DRIVERS[n] for n in wanted]


def matches(regex, text):
    return re.search(regex, text, re.M) is not None
