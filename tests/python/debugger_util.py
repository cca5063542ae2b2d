"""Helpers for the debugger suite (test_debuggers.py, drivers.py).

* :func:`LiveTarget` starts a target program (by default targets/scenario.py)
  through the one harness, livetarget.LiveTarget, with the handshake that
  suits debuggers.
* :func:`run_gdb` / :func:`run_lldb` run one debugger session over a list of
  commands and return each command's output separately (markers are echoed
  between commands).  Debuggers run with stdin=PIPE and a cleaned environment
  (no PYTHON* variables), gdb with ``-nx``.
* :func:`run_bounded` is the one place where debugger processes start: in a
  session of their own, killed with everything they started when they end
  or fail; past their time limit, :class:`SessionTimeout` carries their
  native and Python stacks (hang_report), taken before the kill.
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
import time

import conftest
import hang_report
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


def older_versions(which="representative"):
    """The names of the older CPythons read without _Py_DebugOffsets a
    suite runs on (conftest.OLDER_INTERPRETERS: "pyenv-3.12",
    "pyenv-3.11", on the host also "debian-3.11"), as
    conftest.older_interpreters(which): "representative" (3.12) or "all"."""
    return tuple(i.name for i in conftest.older_interpreters(which))


# every one of them, and 3.12's
OLDER = older_versions("all")
OLDER_REPRESENTATIVE = older_versions()

# The heap-frame CPythons (conftest.HEAP_INTERPRETERS) the suites that are
# expensive per interpreter run on: 3.10 (its eval calls' CFrames are the
# entries of mixed stacks) and 3.8 (no entry: mixed stacks placed by the
# eval loop's name).
HEAP_REPRESENTATIVE = ("3.10", "3.8")


def heap_versions(which="representative"):
    """The names of the heap-frame CPythons a suite runs on ("pyenv-3.10",
    "pyenv-3.9", "pyenv-3.8"): "representative" (HEAP_REPRESENTATIVE) or
    "all"."""
    return tuple(i.name for i in conftest.HEAP_INTERPRETERS
                 if which == "all" or i.minor in HEAP_REPRESENTATIVE)


HEAP = heap_versions("all")


SESSION_TIMEOUT = 240
# Whether sessions load the interpreters' separate debug info (the -dbg
# packages' DWARF under /usr/lib/debug) unless a test says: no, as on most
# machines pyframes serves, and gdb starts in about a third of the time
# (0.4 s against 1.1 s here) without reading it.  What needs it asks for
# it: CPython's own py-bt and py-locals as oracles (debuginfo=True), and
# the modules whose subject is told by the names of the interpreter's
# static functions in the debugger's own unwind (native waits, lock waits
# inferred from them, mixed stacks, gdb's frames beside ours:
# sessions_with_debuginfo).  PYFRAMES_TEST_DEBUGINFO=1 gives it to every
# session; =0 only to those of the oracles (the modules run without it).
_DEBUGINFO_ENV = os.environ.get("PYFRAMES_TEST_DEBUGINFO")
DEBUGINFO = _DEBUGINFO_ENV == "1"


def _with_debuginfo(asked):
    """Whether a session loads the separate debug info: as asked, else
    DEBUGINFO."""
    return DEBUGINFO if asked is None else asked


def sessions_with_debuginfo():
    """A module's sessions load the separate debug info: as a module-scoped
    autouse fixture, ``_debuginfo = pytest.fixture(scope="module",
    autouse=True)(du.sessions_with_debuginfo)``."""
    global DEBUGINFO
    saved = DEBUGINFO
    if _DEBUGINFO_ENV != "0":
        DEBUGINFO = True
    try:
        yield
    finally:
        DEBUGINFO = saved

_MARK = "@@PYF-%s@@"
_MARK_RE = re.compile(r"^@@PYF-(\w+)@@\s*$")


# ---------------------------------------------------------------- discovery


def python_for(version):
    """Path of pythonX.Y (of $PYFRAMES_PYENV_PYTHON for PYENV, of an older
    interpreter by its name: older_versions), or None."""
    if version == PYENV:
        path = os.environ.get("PYFRAMES_PYENV_PYTHON")
        return path if path and os.access(path, os.X_OK) else None
    for interp in (conftest.OLDER_INTERPRETERS + conftest.HEAP_INTERPRETERS +
                   conftest.REFUSED_INTERPRETERS):
        if interp.name == version:
            return interp.path
    if "-" in version:
        return None
    return shutil.which("python" + version)


def minor_of(version):
    """'3.13' for '3.13' and 'pyenv-3.13'."""
    return version.rsplit("-", 1)[-1]


def cpython_gdb_script(version):
    """Whether the interpreter of version ships CPython's own gdb helper
    beside it (bin/python3.X-gdb.py: py-bt, py-locals; pyenv's builds),
    which gdb loads once auto-load allows it (run_gdb's cpython_helper)."""
    python = python_for(version)
    if python is None:
        return False
    real = os.path.realpath(python)
    return os.path.exists(real + "-gdb.py")


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
            try:  # a probe that hangs fails with its stacks (SessionTimeout)
                ok = expect in run_bounded(argv, timeout=60, what=argv[0])[1]
            except OSError:
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



def stripped_older(version, workdir):
    """(python, debug_dir) for the older interpreter ``version`` (a name of
    older_versions: pyenv's build, whose libpython carries its DWARF):
    ``python`` runs it with a copy of its libpython stripped to its
    .dynsym (strip --strip-all, as distributions ship it; LD_LIBRARY_PATH
    before its RUNPATH), the rest of its installation its own, in the same
    process (exec); ``debug_dir`` holds the unstripped libpython as that
    copy's separate debug info (.build-id/xx/yyyy.debug), for the sessions
    that load debug info (run_gdb's and run_lldb's debug_dir).  An
    interpreter without a libpython of its own (Debian's static, stripped
    python3.11): itself, and None."""
    real = python_for(version)
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(real)))
    name = "libpython%s.so.1.0" % minor_of(version)
    lib = os.path.join(prefix, "lib", name)
    if not os.path.isfile(lib):
        return real, None
    libdir = os.path.join(workdir, "stripped-lib")
    debug_dir = os.path.join(workdir, "debug")
    os.makedirs(libdir, exist_ok=True)
    subprocess.run(["strip", "--strip-all", "-o", os.path.join(libdir, name), lib],
                   check=True, timeout=120)
    notes = subprocess.run(["readelf", "-n", lib], capture_output=True, text=True,
                           check=True, timeout=60).stdout
    build_id = re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    linked = os.path.join(debug_dir, ".build-id", build_id[:2], build_id[2:] + ".debug")
    os.makedirs(os.path.dirname(linked), exist_ok=True)
    if not os.path.lexists(linked):
        os.symlink(lib, linked)
    python = os.path.join(workdir, "python-stripped-lib")
    with open(python, "w") as f:
        f.write("#!/bin/sh\nLD_LIBRARY_PATH=%s\nexport LD_LIBRARY_PATH\nexec %s \"$@\"\n"
                % (libdir, real))
    os.chmod(python, 0o755)
    return python, debug_dir


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
            debuginfo=None, timeout=SESSION_TIMEOUT, remote=None, hung=None,
            cpython_helper=False, debug_dir=None, prefix=None):
    """gdb --batch -nx over commands; a Session.  remote: a PID that gdb
    reaches through gdbserver (target extended-remote over a pipe).
    debuginfo: load separate debug info (None: DEBUGINFO), from debug_dir
    when given (stripped_older), else gdb's own directory.  timeout, hung:
    as run_bounded.  cpython_helper: CPython's gdb helper auto-loads from
    wherever it is (pyenv's builds ship it beside python as
    bin/python3.X-gdb.py, outside gdb's default safe path; the -dbg
    packages' loads anyway).  prefix: the command line gdb's runs under
    (e.g. nsenter ...: gdb in a container's namespaces)."""
    argv = ["gdb", "--batch", "-nx", "-iex", "set pagination off",
            "-iex", "set width 0", "-iex", "set confirm off"]
    if cpython_helper:
        argv += ["-iex", "set auto-load safe-path /"]
    if not _with_debuginfo(debuginfo):
        argv += ["-iex", "set debug-file-directory /nonexistent"]
    elif debug_dir:
        argv += ["-iex", "set debug-file-directory " + debug_dir]
    if executable:
        argv.append(executable)
    if core:
        argv.append(core)
    if pid:
        argv += ["-p", str(pid)]
    if remote:
        # the target's files are this machine's: read them here rather
        # than through the remote protocol (gdb's default "target:"
        # sysroot copies pyenv's 30 MB libpython over the pipe: 45 s)
        argv += ["-iex", "set sysroot /",
                 "-ex", "target extended-remote | gdbserver - --attach %d" % remote]
    if plugin:
        argv += ["-ex", "source " + GDB_PLUGIN]
    for i, cmd in enumerate(commands):
        argv += ["-ex", "echo " + (_MARK % i) + "\\n", "-ex", cmd]
    argv += ["-ex", "echo " + (_MARK % "END") + "\\n"]
    return _run(argv, None, commands, timeout, hung, prefix)


def lldb_major(lldb="lldb"):
    """The major version of an lldb binary (21 for lldb 21.1.8), or None."""
    key = "major:" + lldb
    if key not in _cache:
        major = None
        try:
            out = run_bounded([lldb, "--version"], timeout=60, what=lldb)[1]
            m = re.search(r"lldb version (\d+)\.", out)
            major = int(m.group(1)) if m else None
        except OSError:
            pass
        _cache[key] = major
    return _cache[key]


# lldb 21 loads a target's modules on a thread pool and can deadlock doing
# so: `target create EXE --core CORE` then never returns, at 0 % CPU.  Seen
# on gdb's ELF core of pyenv's shared-libpython 3.13 (test_core_file,
# test_lldb_core_opens_every_time).  Fixed in lldb 22; see docs/debuggers.md.
AVOID_PARALLEL_LOAD = "settings set target.parallel-module-load false"


def run_lldb(commands, pid=None, executable=None, core=None, plugin=True,
             debuginfo=None, timeout=SESSION_TIMEOUT, lldb="lldb", before=None,
             parallel_load_workaround=True, hung=None, debug_dir=None, prefix=None):
    """lldb (``lldb``: the binary, e.g. "lldb-22") reading commands from
    stdin (so a failing command does not end the session, as --batch
    would); a Session.  before: commands run before the target is created
    (-O).  On lldb 21, target.parallel-module-load is turned off first
    (AVOID_PARALLEL_LOAD) unless parallel_load_workaround is false.
    debuginfo, debug_dir, prefix: as run_gdb.  timeout, hung: as run_bounded."""
    argv = [lldb, "-x"]  # -x: no ~/.lldbinit
    if parallel_load_workaround and lldb_major(lldb) == 21:
        argv += ["-O", AVOID_PARALLEL_LOAD]
    for command in before or ():
        argv += ["-O", command]
    if not _with_debuginfo(debuginfo):  # no /usr/lib/debug, no debuginfod
        argv += ["-O", "settings set symbols.enable-external-lookup false"]
    elif debug_dir:
        argv += ["-O", "settings append target.debug-file-search-paths " + debug_dir]
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
    return _run(argv, "\n".join(script) + "\n", commands, timeout, hung, prefix)


class SessionTimeout(AssertionError):
    """A debugger session ran past its time limit.  The message holds its
    output so far and, taken before it was killed, the native and Python
    stacks of the debugger and of every process it started
    (hang_report)."""


def run_bounded(argv, stdin_text=None, timeout=SESSION_TIMEOUT, cwd=None, what="debugger",
                hung=None):
    """(returncode, output) of argv run with stdin_text on its stdin and
    stdout+stderr captured, in a session of its own.  Past timeout, the
    stacks of the process and of its descendants are taken, then they are
    all killed and SessionTimeout is raised.  Whatever happens, nothing it
    started outlives the call.  hung: a callable; when it returns true the
    session counts as past its time limit at once (the tests of the report
    itself, test_hang_report.py)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=clean_env(), cwd=cwd,
                            start_new_session=True)
    deadline = time.monotonic() + timeout
    data = (stdin_text or "").encode()
    try:
        try:
            while True:
                # communicate() may be called again after a timeout; it
                # goes on writing the input and collecting the output.
                slice_ = timeout if hung is None else min(0.1, timeout)
                try:
                    out, _ = proc.communicate(data, timeout=slice_)
                    break
                except subprocess.TimeoutExpired:
                    data = None  # given once: a second call may not pass it again
                    if time.monotonic() >= deadline or (hung is not None and hung()):
                        raise
        except subprocess.TimeoutExpired:
            waited = time.monotonic() - deadline + timeout
            stacks = hang_report.report(proc.pid, what)
            _kill_group(proc)
            try:
                out, _ = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:  # a pipe held by an escaped process
                out = b"(output not collected: its pipe stayed open after the kill)"
            raise SessionTimeout(
                "%s session still running after %.0f s (time limit %s s), killed: %s\n"
                "--- its output so far ---\n%s\n"
                "--- where it was (taken before it was killed) ---\n%s"
                % (what, waited, timeout, " ".join(argv),
                   out.decode("utf-8", "replace")[-6000:] or "<none>", stacks))
        return proc.returncode, out.decode("utf-8", "replace")
    finally:
        _kill_group(proc)


def _kill_group(proc):
    """SIGKILL to proc, its descendants and its process group (its own
    session), then reap it."""
    pids = hang_report.descendants(proc.pid) if proc.poll() is None else []
    for pid in reversed(pids[1:]):  # descendants that left the group, too
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # the group is empty: everything in it has exited
        pass
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def _run(argv, stdin_text, commands, timeout, hung=None, prefix=None):
    start = time.monotonic()
    what = os.path.basename(argv[0])
    argv = list(prefix or ()) + argv
    returncode, raw = run_bounded(argv, stdin_text, timeout, what=what, hung=hung)
    elapsed = time.monotonic() - start
    return Session(argv, raw, returncode, commands, elapsed)


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
        # a thread whose native id the debugger could not tell is None
        problems.append("threads differ: debugger %s, target %s"
                        % (sorted(got, key=lambda t: t or 0), sorted(want)))
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


UNLISTED_THREAD = ("lldb's minidump (lldb 21 and 22) leaves a thread of the process out of its "
                   "thread list, and 3.8-3.10 keep no OS id in the thread state (only lldb's "
                   "list, or the thread's own struct pthread, which the minidump leaves out "
                   "too, tells it): that thread's native id is unknown (null), never guessed")


def xfail_if_thread_unlisted(doc, tids):
    """A 3.8-3.10 core read from lldb's minidump: when a thread of the
    target (tids: its native ids) is shown without one (null) because the
    minidump does not list it, the test is an expected failure
    (UNLISTED_THREAD); otherwise it goes on, and can fail."""
    import pytest
    ids = [t["native_thread_id"] for i in doc["interpreters"] for t in i["threads"]]
    if None in ids and set(tids) - set(ids):
        pytest.xfail(UNLISTED_THREAD)

