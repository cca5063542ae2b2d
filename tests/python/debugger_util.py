"""Helpers for the debugger suite (test_debuggers.py, drivers.py).

* :class:`LiveTarget` starts a CPython process from a scenario program that
  records its own view of every thread's stack (tests/python/targets/
  _common.py protocol) and blocks; it can also start a thread that never
  registers with the interpreter (a pthread running libc ``pause``).
* :func:`run_gdb` / :func:`run_lldb` run one debugger session over a list of
  commands and return each command's output separately (markers are echoed
  between commands).  Debuggers run with stdin=PIPE and a cleaned environment
  (no PYTHON* variables), gdb with ``-nx``.
* :func:`own_view_mismatches` compares a ``--json`` document with the
  target's own view, frame by frame (function, filename, line).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TARGETS = os.path.join(HERE, "targets")
GDB_PLUGIN = os.path.join(REPO, "gdb", "pyframes_gdb.py")
LLDB_PLUGIN = os.path.join(REPO, "lldb", "pyframes_lldb.py")
PACKAGE_DIR = os.path.join(REPO, "native", "python")

VERSIONS = ("3.13", "3.14", "3.15")
# A PIE python with a shared libpython (another memory layout), when given.
PYENV = "pyenv-3.13"
if os.environ.get("PYFRAMES_PYENV_PYTHON"):
    VERSIONS += (PYENV,)
SESSION_TIMEOUT = 240

_MARK = "@@PYF-%s@@"
_MARK_RE = re.compile(r"^@@PYF-(\w+)@@\s*$")


# ---------------------------------------------------------------- discovery


def python_for(version):
    """Path of pythonX.Y (or of $PYFRAMES_PYENV_PYTHON for PYENV), or None."""
    if version == PYENV:
        path = os.environ.get("PYFRAMES_PYENV_PYTHON")
        return path if path and os.access(path, os.X_OK) else None
    return shutil.which("python" + version)


def minor_of(version):
    """'3.13' for '3.13' and 'pyenv-3.13'."""
    return version.rsplit("-", 1)[-1]


def clean_env(extra=None):
    """os.environ without PYTHON* (as CPython's test_gdb does), keeping
    PYFRAMES_* and LLDB_DEBUGSERVER_PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.setdefault("LC_ALL", "C.UTF-8")
    if "LLDB_DEBUGSERVER_PATH" not in env:
        for name in ("lldb-server", "lldb-server-21", "lldb-server-20", "lldb-server-19"):
            path = shutil.which(name)
            if path:
                env["LLDB_DEBUGSERVER_PATH"] = os.path.realpath(path)
                break
    if extra:
        env.update(extra)
    return env


_cache = {}


def _probe(key, argv, expect):
    if key not in _cache:
        ok = False
        if shutil.which(argv[0]):
            try:
                out = subprocess.run(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=clean_env(),
                                     timeout=60).stdout.decode("utf-8", "replace")
                ok = expect in out
            except (OSError, subprocess.TimeoutExpired):
                ok = False
        _cache[key] = ok
    return _cache[key]


def gdb_usable():
    """gdb exists and embeds Python 3."""
    return _probe("gdb", ["gdb", "--batch", "-nx", "-ex",
                          "python import sys; print('py%d' % sys.version_info[0])"], "py3")


def lldb_usable():
    return _probe("lldb", ["lldb", "--batch", "-o",
                           "script import sys; print('py%d' % sys.version_info[0])"], "py3")


def library_problem():
    """None when the pyframes package and libpyframes load, else why not."""
    if "library" not in _cache:
        sys.path.insert(0, PACKAGE_DIR)
        try:
            import pyframes
            pyframes.library_version()
            _cache["library"] = None
        except Exception as e:  # LibraryNotFound, ImportError
            _cache["library"] = "%s: %s" % (type(e).__name__, e)
    return _cache["library"]


def in_sandbox():
    """Inside the project's sandbox everything must be there: a missing
    debugger, interpreter or library fails the tests instead of skipping."""
    return os.environ.get("PYFRAMES_IN_SANDBOX") == "1" or os.path.isdir("/src/native")


def require(debugger=None, version=None):
    """Skip (fail inside the sandbox) unless the debugger ("gdb"/"lldb"),
    pythonX.Y and the pyframes library are usable."""
    import pytest
    problems = []
    if debugger == "gdb" and not gdb_usable():
        problems.append("gdb with Python 3 not found")
    if debugger == "lldb" and not lldb_usable():
        problems.append("lldb with Python 3 not found")
    if version is not None and python_for(version) is None:
        problems.append("python%s not found" % version)
    if library_problem() is not None:
        problems.append("pyframes not loadable: %s" % library_problem())
    if problems:
        if in_sandbox():
            pytest.fail("; ".join(problems))
        pytest.skip("; ".join(problems))


# ---------------------------------------------------------------- targets

# A scenario with a main thread of configurable depth (class methods), a
# worker with a nested function, a generator-driven worker, and optionally a
# thread the interpreter never sees.
SCENARIO = r'''
import ctypes
import os
import sys

sys.path.insert(0, {targets!r})
import _common

H = _common.Harness(sys.argv[1])
DEPTH = int(sys.argv[2])
C_THREAD = sys.argv[3] == "1"
sys.setrecursionlimit(DEPTH + 1000)


class Walker:
    def step(self, n):
        if n:
            return self.step(n - 1)
        return H.publish_and_block()


def outer():
    def inner(k):
        H.record(); os.read(H.fd(), 1)
    return inner(1)


def produce():
    yield 1
    H.record(); os.read(H.fd(), 1)
    yield 2


def consume():
    return list(produce())


def start_foreign_thread():
    """A pthread running libc pause(): never registered with Python."""
    libc = ctypes.CDLL(None, use_errno=True)
    handle = ctypes.c_ulong()
    start = ctypes.cast(libc.pause, ctypes.c_void_p)
    rc = libc.pthread_create(ctypes.byref(handle), None, start, None)
    if rc:
        raise OSError(rc, "pthread_create")


def main():
    if C_THREAD:
        start_foreign_thread()
    H.start(outer, name="nested")
    H.start(consume, name="generator")
    Walker().step(DEPTH)


main()
'''


class LiveTarget(object):
    """A running scenario process; use as a context manager.

    Attributes: ``pid``, ``python``, ``view`` (the handshake document),
    ``threads`` ({native tid: [(function, filename, line)]}),
    ``idents`` ({native tid: threading.get_ident()}), ``main_tid``,
    ``foreign_tids`` (OS threads Python does not know), ``workdir``.
    """

    def __init__(self, python, script=None, args=(), depth=5, foreign_thread=False,
                 workdir=None):
        self.python = python
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="pyf-dbg-")
        self.handshake = os.path.join(self.workdir, "handshake.json")
        if script is None:
            script = os.path.join(self.workdir, "scenario.py")
            with open(script, "w") as f:
                f.write(SCENARIO.format(targets=TARGETS))
            args = [str(depth), "1" if foreign_thread else "0"]
        self.script = script
        self.args = list(args)
        self.proc = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        if self._own_workdir:
            self.cleanup()
        else:
            self.stop()
        return False

    def start(self, timeout=120):
        if os.path.exists(self.handshake):
            os.unlink(self.handshake)
        self.log = open(os.path.join(self.workdir, "target.log"), "wb")
        self.proc = subprocess.Popen(
            [self.python, self.script, self.handshake] + self.args,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
            cwd=self.workdir, env=clean_env())
        deadline = time.monotonic() + timeout
        while not os.path.exists(self.handshake):
            if self.proc.poll() is not None:
                raise RuntimeError("target exited with %s: %s" % (
                    self.proc.returncode, self._log_text()))
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("no handshake after %ss" % timeout)
            time.sleep(0.02)
        with open(self.handshake) as f:
            self.view = json.load(f)
        self.pid = self.proc.pid
        self.threads = {
            int(tid): [(fr["function"], fr["filename"], fr["line"]) for fr in frames]
            for tid, frames in self.view["threads"].items()}
        self.idents = {int(tid): info["ident"]
                       for tid, info in self.view["thread_info"].items()}
        self.main_tid = self.pid
        tasks = set(int(t) for t in os.listdir("/proc/%d/task" % self.pid))
        self.foreign_tids = sorted(tasks - set(self.threads))
        return self

    def _log_text(self):
        try:
            with open(os.path.join(self.workdir, "target.log"), "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        if getattr(self, "log", None):
            self.log.close()
            self.log = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def sleeper(seconds=600):
    """A non-Python process (coreutils sleep)."""
    return subprocess.Popen(["sleep", str(seconds)], stdin=subprocess.DEVNULL,
                            env=clean_env())


# ---------------------------------------------------------------- sessions


class Session(object):
    """Output of one debugger run: ``outputs[i]`` is command i's output."""

    def __init__(self, argv, raw, returncode, commands, elapsed):
        self.argv = argv
        self.raw = raw
        self.returncode = returncode
        self.commands = commands
        self.elapsed = elapsed
        self.outputs = _split(raw, len(commands))

    def __getitem__(self, i):
        return self.outputs[i]

    def json(self, i):
        """The JSON document printed by command i."""
        return extract_json(self.outputs[i], self.describe(i))

    def describe(self, i=None):
        head = "command %r" % (self.commands[i],) if i is not None else "session"
        return "%s in %s\n--- raw output ---\n%s" % (head, " ".join(self.argv), self.raw[-6000:])


def _split(raw, n):
    outputs = [""] * n
    current = None
    lines = []
    for line in raw.splitlines():
        m = _MARK_RE.match(line)
        if m:
            if current is not None and current != "END":
                outputs[int(current)] = "\n".join(lines)
            current = m.group(1)
            lines = []
            continue
        if current is not None and not line.startswith("(lldb) "):
            lines.append(line)
    if current is not None and current != "END":
        outputs[int(current)] = "\n".join(lines)
    return outputs


def extract_json(text, context=""):
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError as e:
                raise AssertionError("bad JSON (%s): %s\n%s" % (e, line[:500], context))
    raise AssertionError("no JSON document in output:\n%s\n%s" % (text, context))


def run_gdb(commands, pid=None, executable=None, core=None, plugin=True,
            debuginfo=True, timeout=SESSION_TIMEOUT):
    """gdb --batch -nx over commands; a Session."""
    argv = ["gdb", "--batch", "-nx", "-iex", "set pagination off",
            "-iex", "set width 0", "-iex", "set confirm off"]
    if not debuginfo:
        argv += ["-iex", "set debug-file-directory /nonexistent"]
    if executable:
        argv.append(executable)
    if core:
        argv.append(core)
    if pid:
        argv += ["-p", str(pid)]
    if plugin:
        argv += ["-ex", "source " + GDB_PLUGIN]
    for i, cmd in enumerate(commands):
        argv += ["-ex", "echo " + (_MARK % i) + "\\n", "-ex", cmd]
    argv += ["-ex", "echo " + (_MARK % "END") + "\\n"]
    return _run(argv, None, commands, timeout)


def run_lldb(commands, pid=None, executable=None, core=None, plugin=True,
             debuginfo=True, timeout=SESSION_TIMEOUT):
    """lldb reading commands from stdin (so a failing command does not end
    the session, as --batch would); a Session."""
    argv = ["lldb", "-x"]  # -x: no ~/.lldbinit
    if not debuginfo:  # no /usr/lib/debug, no debuginfod
        argv += ["-O", "settings set symbols.enable-external-lookup false"]
    if executable:
        argv.append(executable)
    if core:
        argv += ["-c", core]
    if pid:
        argv += ["-p", str(pid)]
    script = []
    if plugin:
        script.append("command script import " + LLDB_PLUGIN)
    for i, cmd in enumerate(commands):
        script.append("script print('@@PYF-' + '%s@@')" % i)
        script.append(cmd)
    script.append("script print('@@PYF-' + 'END@@')")
    if pid:
        script.append("process detach")
    script.append("quit")
    return _run(argv, "\n".join(script) + "\n", commands, timeout)


def _run(argv, stdin_text, commands, timeout):
    start = time.monotonic()
    proc = subprocess.run(argv, input=(stdin_text or "").encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=clean_env(), timeout=timeout)
    elapsed = time.monotonic() - start
    raw = proc.stdout.decode("utf-8", "replace")
    return Session(argv, raw, proc.returncode, commands, elapsed)


# ---------------------------------------------------------------- checks


def frames_of(document):
    """{native tid: [(function, filename, line)]} from a --json document."""
    result = {}
    for interp in document["interpreters"]:
        for t in interp["threads"]:
            result[t["native_thread_id"]] = [
                (f["function"], f["filename"], f["line"]) for f in t["frames"]]
    return result


def own_view_mismatches(document, target, tids=None):
    """Differences between a --json document and the target's own view, as
    a list of messages (empty when they agree)."""
    got = frames_of(document)
    want = target.threads if tids is None else {t: target.threads[t] for t in tids}
    problems = []
    if tids is None and set(got) != set(want):
        problems.append("threads differ: debugger %s, target %s"
                        % (sorted(got), sorted(want)))
    for tid in sorted(set(got) & set(want)):
        g, w = got[tid], want[tid]
        if g != w:
            for i in range(max(len(g), len(w))):
                gi = g[i] if i < len(g) else None
                wi = w[i] if i < len(w) else None
                if gi != wi:
                    problems.append("thread %d frame %d: debugger %r, target %r "
                                    "(%d vs %d frames)" % (tid, i, gi, wi, len(g), len(w)))
                    break
    for tid in sorted(set(want) - set(got)):
        problems.append("thread %d missing from the debugger's output" % tid)
    return problems


_PY_BT_FRAME = re.compile(r'^\s*File "(.*)", line (\d+), in (.+)$')


def parse_py_bt(text):
    """[(function, filename, line)] from CPython's py-bt output."""
    frames = []
    for line in text.splitlines():
        m = _PY_BT_FRAME.match(line)
        if m:
            frames.append((m.group(3).strip(), m.group(1), int(m.group(2))))
    return frames


def co_name(qualname):
    """The last component of a qualified name (what py-bt prints)."""
    return qualname.rsplit(".", 1)[-1]
