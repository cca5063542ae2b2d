"""Helpers for the debugger suite (test_debuggers.py, drivers.py).

* :func:`LiveTarget` starts a target program (by default targets/scenario.py)
  through the one harness, livetarget.LiveTarget, with the handshake that
  suits debuggers.
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
import subprocess
import sys
import time

import livetarget

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TARGETS = livetarget.TARGETS
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
    """livetarget.target_env(), with LLDB_DEBUGSERVER_PATH found when unset."""
    env = livetarget.target_env()
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


def lldb22_usable():
    """lldb 22 (frame providers), beside lldb 21 in the sandbox root."""
    return shutil.which("lldb-22") is not None and _probe(
        "lldb-22", ["lldb-22", "-x", "-b", "-o",
                    "script print(hasattr(lldb.SBTarget, 'RegisterScriptedFrameProvider'))"],
        "True")


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

def LiveTarget(python, script=None, workdir=None, **kw):
    """A live target for the debuggers (livetarget.LiveTarget with the file
    handshake: attach and detach would interrupt a pending FIFO write)."""
    kw.setdefault("handshake", "file")
    return livetarget.LiveTarget(python, script, workdir, **kw)


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
            debuginfo=True, timeout=SESSION_TIMEOUT, remote=None):
    """gdb --batch -nx over commands; a Session.  remote: a PID that gdb
    reaches through gdbserver (target extended-remote over a pipe)."""
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
    if remote:
        argv += ["-ex", "target extended-remote | gdbserver - --attach %d" % remote]
    if plugin:
        argv += ["-ex", "source " + GDB_PLUGIN]
    for i, cmd in enumerate(commands):
        argv += ["-ex", "echo " + (_MARK % i) + "\\n", "-ex", cmd]
    argv += ["-ex", "echo " + (_MARK % "END") + "\\n"]
    return _run(argv, None, commands, timeout)


def run_lldb(commands, pid=None, executable=None, core=None, plugin=True,
             debuginfo=True, timeout=SESSION_TIMEOUT, lldb="lldb"):
    """lldb (``lldb``: the binary, e.g. "lldb-22") reading commands from
    stdin (so a failing command does not end the session, as --batch
    would); a Session."""
    argv = [lldb, "-x"]  # -x: no ~/.lldbinit
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


_PY_BT_FRAME = re.compile(r'^\s*File "(.*)", line (\d+|\?), in (.+)$')


def parse_py_bt(text):
    """[(function, filename, line)] from CPython's py-bt output (line None
    where py-bt prints "line ?": an instruction without a location)."""
    frames = []
    for line in text.splitlines():
        m = _PY_BT_FRAME.match(line)
        if m:
            number = None if m.group(2) == "?" else int(m.group(2))
            frames.append((m.group(3).strip(), m.group(1), number))
    return frames


_THREAD_HEADER = re.compile(r"^Thread \d+ \(.*\bLWP (\d+)\b", re.M)


def parse_py_bt_threads(text):
    """{native tid: [(function, filename, line)]} from the output of gdb's
    ``thread apply all py-bt`` (one "Thread N (... LWP tid ...)" header per
    thread, then that thread's py-bt)."""
    headers = list(_THREAD_HEADER.finditer(text))
    threads = {}
    for i, m in enumerate(headers):
        end = headers[i + 1].start() if i + 1 < len(headers) else len(text)
        threads[int(m.group(1))] = parse_py_bt(text[m.end():end])
    return threads


def co_name(qualname):
    """The last component of a qualified name (what py-bt prints)."""
    return qualname.rsplit(".", 1)[-1]
