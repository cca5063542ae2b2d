"""Real programs as targets: applications nobody here wrote, frozen at random
moments and read by pyframes and by CPython's own readers.

The applications are Debian's packages and the standard library; the
launchers (targets/real_*.py) only start them on local data and say, by a
line on stdout, when they are at work:

* aiohttp (python3-aiohttp): a server under load from an aiohttp client in
  one event loop on 127.0.0.1: two dozen client tasks, handlers awaiting
  bodies, sleeps, streamed responses and gathered sub-requests;
* sphinx (python3-sphinx): Sphinx building a generated documentation set
  (html, text and xml builders, autodoc of stdlib modules): docutils' and
  Sphinx's deep call stacks;
* pools (standard library): a concurrent.futures ThreadPoolExecutor and
  ProcessPoolExecutor and a multiprocessing.Pool fed by the main thread;
  the worker processes (and multiprocessing's forkserver and resource
  tracker) are frozen and read with it;
* cpython-tests (3.12 and 3.11, pyenv's builds): CPython's own test suite,
  the interpreter's test package, a dozen modules of pure-Python work
  (real_cpython_tests.py) run again and again.

A frozen state: SIGSTOP to the process and its descendants, then a wait
until the kernel shows every thread of each stopped ('T' in
/proc/PID/task/*/stat); everything is read; SIGCONT; a random short wait
before the next one.  Per frozen state and process, every thread (by native
thread id) and every frame (co_qualname, filename, line) pyframes reads
must be the oracle's, and for aiohttp every task (name, thread, coroutine
stack, awaiters):

* test_cli_frozen_states: STATES states per application through the
  command line (``dump --all --json``, ``--tasks`` for aiohttp), against
  ``_remote_debugging.RemoteUnwinder(pid, all_threads=True)`` and
  ``get_all_awaited_by()``, run by the target's interpreter version
  (oracle.py, task_oracle.py);
* test_debugger_frozen_states: DEBUGGER_STATES states per application and
  debugger, the main process read by ``py-bt-fast --all --json`` in gdb and
  ``pystack --all --json`` in lldb (and ``--tasks --json``) in one session
  attached to the frozen process, against the same oracles, the command
  line's reading of the same state and, in gdb, CPython's own ``py-bt``
  (python3.X-dbg's libpython.py, ``thread apply all py-bt``);
* test_cli_frozen_states_against_py_bt: 3.13, 3.12, 3.11, 3.10, 3.9 and
  3.8, which have no RemoteUnwinder: the command line's readings against py-bt, in one gdb
  session kept attached (gdb stops every thread, then lets the process run
  for a random short time between states); PY_BT_STATES states per
  application (3.11: PY_BT_STATES_311), PYFRAMES_REAL_PROGRAMS_313=N for N
  (100 take about six minutes).  On pyenv's builds (pools and
  cpython-tests) py-bt is their own python3.X-gdb.py.

Oracle limits, each taken out of the comparison where it applies and
counted in the summary line:

* CPython 3.14.10's RemoteUnwinder ends a thread's chain at the first frame
  entered from C (a thread pool's worker below Thread.run's call with
  **kwargs, a generator resumed by next(), Sphinx's callbacks run by C
  code, ...; oracle.compare_with_remote): pyframes must show exactly what
  it shows and may show more.  When the thread's current frame is the entry
  frame itself (a call from C that has not pushed its callee yet) the chain
  is empty; 3.15.2's refuses such a thread outright ("Failed to parse
  initial frame in chain": the state is not compared, pyframes must still
  read every thread, and at most a tenth of the states may be refused).
  The further frames are checked against py-bt, which follows
  the native stack through C calls, in the gdb states (where the command
  line's reading of the same state must equal gdb's), and by 3.15's
  RemoteUnwinder, which reads every chain to its end, in the 3.15 states.
* A frame just pushed, at the MAKE_CELL or COPY_FREE_VARS that precede its
  RESUME, is at an instruction without a location: pyframes' line is null,
  as CPython's PyCode_Addr2Line and py-bt ("line ?") have it, while 3.14's
  RemoteUnwinder gives the line table's previous line (co_firstlineno at
  the first instruction), and 3.15's line -1, which oracle.normalize_remote
  would take for the __init__ shim's (oracle_view keeps it).  Seen only on
  the innermost frame.
* On 3.13 py-bt often prints "<optimized out>" for an eval loop whose
  frame variable gdb cannot read, and then sometimes walks a stale chain
  again (a coroutine chain twice, or a frame the eval loop is entering that
  the thread state does not publish yet): a state where that came with a
  difference is not compared (at most a tenth of them).  A Jinja template's code cannot be recompiled from
  its file: py-bt's missing line there is taken for its 1000-byte limit.
* py-bt prints co_name where pyframes prints co_qualname (the name must be
  the qualified name or its last component), and prints the __init__ shim
  frame that CPython, pyframes and RemoteUnwinder's normalized view leave
  out.  libpython.py reads at most 1000 bytes of a line table, so for a
  long function (aiohttp's ClientSession._request) it prints "line ?"
  further on: there the line pyframes gives must be one of that code
  object's, as the target's interpreter compiles its source.  py-bt must not call functions
  in the target (see test_debugger_frozen_states).
* get_all_awaited_by on 3.14 sees the main thread's tasks only: aiohttp's
  loop runs there.
* get_all_awaited_by reads the task lists only: an eager task (aiohttp
  starts its request bodies' write_bytes so) is its thread's running task
  a moment before 3.14's task_eager_start links it into the thread's list;
  caught there (running, pending, its coroutine not started) pyframes lists
  it and the oracle does not: set aside and counted.

A difference these tests found, fixed in native/src/tasks.c: a thread's
running task caught after its coroutine returned (already off its task
list, state finished, until the step ends) was listed by pyframes; like
every done task, and like get_all_awaited_by, it is not listed now.
"""

import contextlib
import io
import json
import os
import random
import select
import signal
import subprocess
import time

import pytest

import debugger_util as du
import drivers
import task_oracle
from conftest import HEAP_INTERPRETERS, INTERPRETERS, OLDER_INTERPRETERS, in_sandbox
from livetarget import TARGETS, frozen, process_tree, target_env
from oracle import (OracleError, RemoteUnwinderServer, compare_with_remote, frames_diff, keys,
                    normalize_remote)

# Frozen states read by the command line per application and interpreter,
# and by each debugger.
STATES = 100
DEBUGGER_STATES = {"gdb": 4, "lldb": 3}
# py-bt takes about a second per thread: the pools' ten threads get fewer.
GDB_POOL_STATES = 3
# The launchers end by themselves after this long (the test kills them
# sooner, in `finally`).
APP_SECONDS = 300
READY_TIMEOUT = 120.0
# A random wait before each freeze, in seconds.
GAP = (0.0, 0.05)

APPS = {
    "aiohttp": {"script": "real_aiohttp.py", "tasks": True, "tree": False,
                "package": "aiohttp"},
    "sphinx": {"script": "real_sphinx.py", "tasks": False, "tree": False,
               "package": "sphinx"},
    "pools": {"script": "real_pools.py", "tasks": False, "tree": True, "package": None},
    "cpython-tests": {"script": "real_cpython_tests.py", "tasks": False, "tree": False,
                      "package": None},
}
RELEASE_APPS = ("aiohttp", "sphinx", "pools")
# The older CPythons (pyenv's 3.12 and 3.11) run CPython's own test suite
# (their test package) and the standard library's pools: Debian's python3-*
# packages are built for 3.14.
OLDER_APPS = ("cpython-tests", "pools")
# Debian's python3-* packages are built for python3, CPython 3.14 in sid;
# sid's python3.15 and python3.13 run the same packages' code (aiohttp and
# its dependencies without their C extensions, built for 3.14 only); 3.15
# has a RemoteUnwinder that reads every chain to its end.  The command line
# reads 3.14 and 3.15 against RemoteUnwinder, the debuggers 3.14, and 3.13
# is read against py-bt (test_cli_frozen_states_against_py_bt).
VERSIONS = ("3.14", "3.15")
DEBUGGER_VERSIONS = ("3.14",)


def _interpreter(version):
    for i in INTERPRETERS:
        if i.minor == version and i.kind == "release":
            return i
    for i in OLDER_INTERPRETERS + HEAP_INTERPRETERS:
        if i.name == version:
            return i
    return None


def _params(versions=VERSIONS):
    out = []
    for version in versions:
        interp = _interpreter(version)
        for app in RELEASE_APPS if version[0].isdigit() else OLDER_APPS:
            out.append(pytest.param(interp or version, app, id="%s-%s" % (version, app)))
    return out


def _require(interp, app):
    if not hasattr(interp, "path"):
        msg = "python%s not found" % interp
        if in_sandbox():
            pytest.fail(msg + " inside the sandbox")
        pytest.skip(msg)
    package = APPS[app]["package"]
    if package:
        probe = subprocess.run([interp.path, "-c", "import " + package],
                               capture_output=True, env=target_env(), timeout=60)
        if probe.returncode != 0:
            msg = "%s cannot import %s (python3-%s)" % (interp.path, package, package)
            if in_sandbox():
                pytest.fail(msg + " inside the sandbox")
            pytest.skip(msg)


# --------------------------------------------------------------------------
# The application


class App(object):
    """A running application (context manager: killed, with its descendants,
    on exit)."""

    def __init__(self, interp, name, workdir):
        self.interp, self.name, self.workdir = interp, name, str(workdir)
        self.spec = APPS[name]
        self.proc = None

    def __enter__(self):
        script = os.path.join(TARGETS, self.spec["script"])
        args = [self.workdir] if self.name == "sphinx" else []
        self.errfile = open(os.path.join(self.workdir, "app-output.txt"), "w+b")
        self.proc = subprocess.Popen([self.interp.path, "-s", script] + args + [str(APP_SECONDS)],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.errfile, cwd=self.workdir, env=target_env(),
                                     start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.__exit__()
            raise
        return self

    def _wait_ready(self):
        """The launcher's "ready" line, bounded by READY_TIMEOUT."""
        deadline = time.monotonic() + READY_TIMEOUT
        buf = b""
        fd = self.proc.stdout.fileno()
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("%s: no handshake within %.0f s\n%s"
                                     % (self.name, READY_TIMEOUT, self.output()))
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise AssertionError("%s exited before its handshake (status %s)\n%s"
                                         % (self.name, self.proc.wait(), self.output()))
                buf += chunk
        assert buf.startswith(b"ready"), buf

    def __exit__(self, *exc):
        if self.proc is not None:
            # Its descendants (worker processes) share its session.
            for pid in reversed(process_tree(self.proc.pid)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.proc.stdout.close()
            self.errfile.close()
        return False

    def output(self):
        self.errfile.flush()
        with open(self.errfile.name, "rb") as f:
            return f.read().decode("utf-8", "replace")[-4000:]

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None


def _comm(pid, tid):
    try:
        with open("/proc/%d/task/%d/comm" % (pid, tid)) as f:
            return f.read().strip()
    except OSError:
        return "?"


# --------------------------------------------------------------------------
# Readings


def cli_json(args):
    """`python3 -m pyframes ARGS` (its code, run in this process: no
    interpreter start-up per state); the JSON document it prints."""
    from pyframes import cli
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main(args)
    assert rc == 0, "pyframes %s: exit %d: %s" % (" ".join(args), rc, err.getvalue())
    return json.loads(out.getvalue())


def document_threads(document):
    """{native tid: [(function, filename, line)]} and the threads pyframes
    marked incomplete ({tid: error}) of a --json document."""
    frames, errors = {}, {}
    for interp in document["interpreters"]:
        for t in interp["threads"]:
            tid = t["native_thread_id"]
            mine = [(f["function"], f["filename"], f["line"]) for f in t["frames"]]
            bad = t.get("error") or t.get("complete") is False
            if tid in frames:
                # one OS thread with two thread states (CPython's own tests
                # make them: PyThreadState_New and Swap, subinterpreters):
                # the one with no frames runs no Python; py-bt and the
                # thread's own view show the other
                if not mine and not bad:
                    continue
                assert not frames[tid] and tid not in errors, \
                    "native thread id %d listed twice, with frames both times" % tid
            frames[tid] = mine
            if bad:
                errors[tid] = t.get("error") or "incomplete"
    return frames, errors


class Tally(object):
    """What was compared, for the summary line and the failure messages."""

    def __init__(self, label):
        self.label = label
        self.states = self.processes = self.threads = self.frames = 0
        self.unchecked = self.tasks = 0
        self.empty_chains = self.unlocated = self.py_bt_frames = self.refused = 0
        self.py_bt_truncated = self.entering = self.incomplete = 0
        self.py_bt_unsigned = self.py_bt_unpushed = self.eager = 0
        self.problems = []

    def add(self, state, pid, problems, evidence=""):
        for p in problems:
            self.problems.append("state %d, pid %d (%s): %s" % (state, pid, _comm(pid, pid), p))
        if problems and evidence:
            self.problems.append(evidence)

    def summary(self):
        return ("%s: %d frozen states, %d process readings, %d threads, %d frames equal "
                "to RemoteUnwinder's (and %d frames past its early end: %d empty chains, "
                "%d innermost frames without a location), %d equal to py-bt's (%d of them "
                "past the part of a line table py-bt reads, %d where 3.8's py-bt reads its "
                "line deltas unsigned; %d threads where py-bt shows an eval call's frame "
                "not (or no longer) the thread's, 3.8-3.10), %d tasks (and %d running eager tasks "
                "not yet on their thread's list); %d process readings "
                "RemoteUnwinder refused; %d threads marked incomplete while entering an "
                "eval loop; %d frames py-bt shows that CPython hides as incomplete"
                % (self.label, self.states, self.processes, self.threads, self.frames,
                   self.unchecked, self.empty_chains, self.unlocated, self.py_bt_frames,
                   self.py_bt_truncated, self.py_bt_unsigned, self.py_bt_unpushed, self.tasks,
                   self.eager, self.refused,
                   self.entering, self.incomplete))

    def entering_loop(self, python, frames, errors):
        """Set aside the threads pyframes marked incomplete because they
        were stopped between the writes of a call from C or a return to it
        (3.11, 3.12): their top frame was an eval loop's entry frame, or a
        frame that has run, does not run now, and whose caller does not
        wait for it (a loop being made names the last loop's current frame
        at that address until it writes its own: the frame may be one that
        returned, its caller the last loop's, so nothing is shown).
        Honest, and not compared.  At most one a reading."""
        if python.version >= (3, 13):
            return errors, []
        entering = [tid for tid, why in errors.items()
                    if "is an entry frame" in why or "its caller does not wait for it" in why]
        if len(entering) > 1:
            return errors, []
        for tid in entering:
            frames.pop(tid, None)
            self.entering += 1
        return {tid: why for tid, why in errors.items() if tid not in entering}, entering

    def check(self):
        print(self.summary())
        if self.refused > self.states // 10:
            self.problems.append("RemoteUnwinder refused %d readings of %d states: the "
                                 "comparison is too thin" % (self.refused, self.states))
        if self.problems:
            pytest.fail("%s\n%d problem(s):\n%s" % (self.summary(), len(self.problems),
                                                   "\n".join(self.problems[:12])),
                        pytrace=False)


def known_3_14_differences(frames, remote):
    """The two ways CPython 3.14.10's RemoteUnwinder differs from pyframes
    (and from CPython's py-bt) on a frozen process that are its own (see the
    module docstring), taken out of copies of the views:

    * an empty chain where pyframes shows frames: the thread's current frame
      is the entry frame a call from C has just pushed (the callee's frame
      not yet pushed), and RemoteUnwinder ends every chain at an entry
      frame;
    * the innermost frame at an instruction without a location (a frame
      just pushed, at MAKE_CELL or COPY_FREE_VARS before its RESUME):
      pyframes' line is null, as CPython's PyCode_Addr2Line and py-bt
      ("line ?") have it; RemoteUnwinder gives the line of the line table's
      previous entry, co_firstlineno at the first instruction.

    Returns (frames, remote, empty, unlocated): the views to compare and the
    counts of each case."""
    frames, remote = dict(frames), dict(remote)
    empty = unlocated = 0
    for tid in set(frames) & set(remote):
        mine, theirs = frames[tid], remote[tid]
        if mine and not theirs:
            empty += 1
            del frames[tid], remote[tid]
        elif (mine and theirs and mine[0][2] is None and theirs[0][2] is not None
              and mine[0][:2] == theirs[0][:2]):
            unlocated += 1
            frames[tid] = [theirs[0]] + mine[1:]
    return frames, remote, empty, unlocated


def oracle_view(raw, frames):
    """RemoteUnwinder's frames ({tid: [frame dicts]}) as {tid: keys},
    normalized by oracle.normalize_remote (the __init__ shim, reported with
    line 0 or -1, left out), except a thread's innermost frame reported with
    line 0 or -1 that pyframes shows as the same function and file without
    a line: a frame at an instruction without a location (3.15; see
    known_3_14_differences), kept, with no line."""
    top = {}
    for tid, fr in raw.items():
        mine = frames.get(tid)
        if (fr and mine and fr[0]["line"] is not None and fr[0]["line"] < 1
                and mine[0] == (fr[0]["function"], fr[0]["filename"], None)):
            top[tid] = [mine[0]]
    return {tid: top.get(tid, []) + keys(f) for tid, f in normalize_remote(raw).items()}, len(top)


def compare_stacks(tally, state, pid, interp, ours, raw, label="pyframes"):
    """ours ({tid: keys}, {tid: error}) against RemoteUnwinder's raw frames."""
    frames, errors = ours
    names = {tid: _comm(pid, tid) for tid in frames}
    problems = ["thread %d (%s) marked incomplete by %s: %s"
                % (tid, names.get(tid), label, err) for tid, err in errors.items()]
    remote, unlocated = oracle_view(raw, frames)
    tally.unlocated += unlocated
    if interp.version == (3, 14):
        frames, remote, empty, unlocated = known_3_14_differences(frames, remote)
        tally.empty_chains += empty
        tally.unlocated += unlocated
    problems += compare_with_remote(frames, remote, interp.version, names, label,
                                    "RemoteUnwinder")
    evidence = ""
    if problems:
        evidence = "\n".join(
            "  thread %d (%s):\n%s" % (tid, names.get(tid), frames_diff(
                remote.get(tid, []), frames.get(tid, []), "RemoteUnwinder", label))
            for tid in sorted(set(frames) | set(remote))
            if remote.get(tid) != frames.get(tid))
    tally.add(state, pid, problems, evidence)
    tally.processes += 1
    for tid, fr in ours[0].items():
        seen = len(remote.get(tid, ()))
        tally.threads += 1
        tally.frames += min(seen, len(fr))
        tally.unchecked += max(0, len(fr) - seen)


def compare_tasks(tally, state, pid, remote, document, label="pyframes"):
    got = task_oracle.document_tasks(document)
    # an eager task (aiohttp's write_bytes: Task(..., eager_start=True)) is
    # its thread's running task before it is linked into the thread's list
    # (3.14's task_eager_start: swap_current_task, then register_task), and
    # get_all_awaited_by reads only the lists: set aside, counted
    eager = [tid for tid, t in got.items()
             if tid not in remote and t["running"] and t["state"] == "pending"]
    tally.eager += len(eager)
    for tid in eager:
        del got[tid]
    problems = task_oracle.compare_tasks(remote, got, "get_all_awaited_by", label)
    evidence = "\n".join(
        "  %s: task %#x %s" % (who, tid, json.dumps(view[tid], default=str))
        for who, view, other in ((label, got, remote), ("get_all_awaited_by", remote, got))
        for tid in sorted(set(view) - set(other)))
    tally.add(state, pid, problems, evidence)
    tally.tasks += len(got)


# CPython 3.15.2's RemoteUnwinder refuses a thread whose current frame is an
# entry frame (a call from C that has not pushed its callee yet: the window
# in which 3.14's gives an empty chain).
REFUSED_315 = "Failed to parse initial frame in chain"


class Oracles(object):
    """RemoteUnwinder and get_all_awaited_by under the target's interpreter,
    each one long-lived subprocess for every state (context manager)."""

    def __init__(self, interp, tasks):
        self.stacks = RemoteUnwinderServer(interp.path)
        self.awaited_by = task_oracle.RemoteTasksServer(interp.path) if tasks else None

    def unwind(self, pid):
        """{tid: [frame dicts]} as RemoteUnwinder gives them (oracle_view
        normalizes them)."""
        return self.stacks.unwind(pid)

    def tasks(self, pid):
        return self.awaited_by.tasks(pid)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stacks.close()
        if self.awaited_by is not None:
            self.awaited_by.close()
        return False


# --------------------------------------------------------------------------
# The command line


@pytest.mark.parametrize("interp,app", _params())
def test_cli_frozen_states(interp, app, pyframes, tmp_path):
    _require(interp, app)
    spec = APPS[app]
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    tally = Tally("%s on %s, CLI (seed %d)" % (app, interp.name, seed))
    with Oracles(interp, spec["tasks"]) as oracles, App(interp, app, tmp_path) as running:
        for state in range(STATES):
            time.sleep(rng.uniform(*GAP))
            assert running.alive(), "%s ended early\n%s" % (app, running.output())
            with frozen(running.pid, spec["tree"]) as pids:
                for pid in pids:
                    tasks = spec["tasks"] and pid == running.pid
                    args = ["dump", "--all", "--json"] + (["--tasks"] if tasks else [])
                    try:
                        remote = oracles.unwind(pid)
                    except OracleError as e:
                        doc = cli_json(args + [str(pid)])
                        if interp.version >= (3, 15) and REFUSED_315 in str(e):
                            # Not compared; pyframes must still read it all.
                            tally.refused += 1
                            errors = document_threads(doc)[1]
                            tally.add(state, pid, ["thread %d marked incomplete: %s" % kv
                                                   for kv in errors.items()])
                        else:
                            tally.add(state, pid, ["RemoteUnwinder failed: %s" % e])
                        continue
                    doc = cli_json(args + [str(pid)])
                    compare_stacks(tally, state, pid, interp, document_threads(doc), remote)
                    if tasks:
                        compare_tasks(tally, state, pid, oracles.tasks(pid), doc)
            tally.states += 1
    tally.check()


# --------------------------------------------------------------------------
# gdb and lldb


def _debugger_params():
    out = []
    for d in drivers.selected():
        if d.name not in DEBUGGER_STATES:
            continue
        for p in _params(DEBUGGER_VERSIONS):
            interp, app = p.values
            out.append(pytest.param(d, interp, app, id="%s-%s" % (d.name, p.id)))
    return out


# The __init__ shim (_Py_InitCleanup: pushed when a specialized call enters
# a Python __init__; code named "__init__" in a file "__init__", without a
# line) as py-bt prints it.  CPython counts its frame as incomplete and
# never shows it, nor do pyframes and oracle.normalize_remote.
PY_BT_SHIM = ("__init__", "__init__", None)


# libpython.py reads at most 1000 items of any object (safety_limit), so
# py-bt decodes only the first 1000 bytes of a line table: past them its
# addr2line fails ("Unreachable") and it prints "line ?".
PY_BT_LIMIT = 1000
_codes = {}
# Run by the target's interpreter: for each code object of a source file,
# [co_qualname, len(co_linetable), its lines].
CODE_LINES_SOURCE = r'''
import json, sys
todo, out = [], []
try:
    with open(sys.argv[1], "rb") as f:
        todo.append(compile(f.read(), sys.argv[1], "exec"))
except (OSError, SyntaxError, ValueError):
    pass
while todo:
    code = todo.pop()
    out.append([code.co_qualname, len(code.co_linetable),
                sorted({ln for _, _, ln in code.co_lines() if ln is not None})])
    todo += [c for c in code.co_consts if hasattr(c, "co_code")]
sys.stdout.write(json.dumps(out))
'''


def long_line_table(python, filename, qualname, line):
    """The source file compiled by the target's interpreter holds a code
    object qualname whose line table is longer than py-bt reads and which
    has code on line."""
    if (python, filename) not in _codes:
        res = subprocess.run([python, "-I", "-c", CODE_LINES_SOURCE, filename],
                             capture_output=True, env=target_env(), timeout=120)
        _codes[python, filename] = json.loads(res.stdout) if res.returncode == 0 else []
    codes = _codes[python, filename]
    if not codes:
        # Not Python source (a Jinja template compiled by Jinja under the
        # template's name): nothing to recompile, py-bt's missing line taken
        # for the same limit.
        return True
    return any(name == qualname and size > PY_BT_LIMIT and line in lines
               for name, size, lines in codes)


def compare_py_bt(tally, state, pid, python, ours, py_bt):
    """pyframes' frames against CPython's py-bt, thread by thread: same
    length, file and line, and py-bt's name the qualified name or its last
    component (py-bt's __init__ shim frames left out; where py-bt has no
    line because it read only part of a long line table, the line pyframes
    gives must be one of that code object's)."""
    py_bt = {tid: [f for f in frames if f != PY_BT_SHIM] for tid, frames in py_bt.items()}
    heap = os.path.basename(python) in ("python3.8", "python3.9", "python3.10")

    def same(mine, theirs):
        (n1, f1, l1), (n2, f2, l2) = mine, theirs
        if f1 != f2 or n2 not in (n1, du.co_name(n1)):
            return False
        if l1 == l2:
            return True
        if l2 is None and l1 is not None and long_line_table(python, f1, n1, l1):
            tally.py_bt_truncated += 1
            return True
        # CPython 3.8's py-bt reads co_lnotab's line deltas unsigned (its
        # python3.8-gdb.py addr2line; 3.9's subtracts 256 from one >= 128):
        # each backward step of a line table puts its line 256 too far.
        # The line pyframes gives is the interpreter's own (test_line_tables)
        if (os.path.basename(python) == "python3.8" and l1 is not None and l2 is not None
                and l2 > l1 and (l2 - l1) % 256 == 0):
            tally.py_bt_unsigned += 1
            return True
        return False

    problems = []
    for tid in sorted(set(ours) | set(py_bt)):
        mine, theirs = ours.get(tid), py_bt.get(tid)
        if mine is None:
            if theirs:
                problems.append("thread %d: py-bt shows %d frames, pyframes no thread"
                                % (tid, len(theirs)))
            continue
        if theirs is None:
            problems.append("thread %d: not in py-bt's output" % tid)
            continue
        # 3.8-3.10: py-bt prints the frame of each eval call on the C stack,
        # CPython's own view starts at the thread state's frame; an eval
        # call that has not yet made its frame the thread's (its first
        # lines) or no longer does (after tstate->frame = f->f_back, while
        # it checks its result) shows in py-bt alone, over the same stack
        if (heap and len(theirs) == len(mine) + 1
                and all(same(a, b) for a, b in zip(mine, theirs[1:]))):
            tally.py_bt_unpushed += 1
            tally.py_bt_frames += len(mine)
            continue
        if len(mine) != len(theirs) or not all(same(a, b) for a, b in zip(mine, theirs)):
            problems.append("thread %d (%s), py-bt:\n%s" % (tid, _comm(pid, tid), frames_diff(
                theirs, [(du.co_name(n), f, l) for n, f, l in mine], "py-bt",
                "pyframes (co_name)")))
        else:
            tally.py_bt_frames += len(mine)
    tally.add(state, pid, problems)


INCOMPLETE_GDB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gdb_incomplete.py")


def hide_incomplete(tally, ours, errors, py_bt, text):
    """3.11, 3.12: CPython hides a frame that has not reached its first
    traceable instruction (_PyFrame_IsIncomplete: pushed, its MAKE_CELL or
    COPY_FREE_VARS not yet done), and pyframes with it; CPython's py-bt
    shows it.  Where gdb, through the interpreter's DWARF
    (gdb_incomplete.py), finds a thread's current frame incomplete and
    py-bt shows one frame more than pyframes, at that code's first line or
    without a line, py-bt's innermost frame is taken out (in place).  A
    thread whose current frame is incomplete and that pyframes marked as
    not read is set aside (counted with the threads entering an eval loop):
    a frame being set up may not have its caller written yet (3.11: a loop
    entered from C writes it after naming its _PyCFrame)."""
    lines = [line.split() for line in text.splitlines() if line.startswith("pyf-incomplete ")]
    assert ["pyf-incomplete", "done"] in lines, "gdb's pyf-incomplete did not run:\n" + text
    for words in lines:
        if len(words) != 3 or not words[1].isdigit():
            continue
        tid, firstlineno = int(words[1]), int(words[2])
        if tid in errors:
            ours.pop(tid, None)
            errors.pop(tid)
            py_bt.pop(tid, None)
            tally.entering += 1
            continue
        theirs, mine = py_bt.get(tid), ours.get(tid)
        if theirs and mine is not None and len(theirs) == len(mine) + 1 \
                and theirs[0][2] in (firstlineno, None):
            del theirs[0]
            tally.incomplete += 1


def _py_bt_blind(ours, py_bt, bt_text):
    """Threads for which py-bt printed no frame while pyframes read some:
    {tid: why}.  py-bt finds Python frames only through gdb: it walks gdb's
    unwinding of the thread to an eval loop (_PyEval_EvalFrameDefault) and
    reads that C frame's `frame` variable through the interpreter's DWARF.
    Either step can fail in a frozen state without pyframes being wrong:
    gdb's unwinding stops before any eval loop (an interrupt inside code its
    unwinder cannot step out of), or the variable's location at that pc
    names a register already reused (optimized code), so py-bt reads a stale
    frame pointer, a shim or nothing, and prints no frame.  For those
    threads py-bt is no oracle in this state; the caller counts the state
    unusable, bounded at a tenth of the states."""
    native = {tid: text for tid, text in _threads_text(bt_text).items()}
    blind = {}
    for tid, mine in ours.items():
        if mine and tid in py_bt and not [f for f in py_bt[tid] if f != PY_BT_SHIM]:
            blind[tid] = ("gdb's bt shows %d eval loop(s)"
                          % native[tid].count("_PyEval_EvalFrameDefault")
                          if tid in native else "no gdb bt")
    return blind


def _py_bt_stale(ours, py_bt):
    """Threads whose py-bt begins with a frame the thread does not run:
    {tid: why}.  The other face of _py_bt_blind's stale frame pointer: the
    eval loop's `frame` variable, read through a location gdb's DWARF gives
    for that pc, still holds a frame that has returned (a callee of the
    innermost frame), and py-bt prints it and stops (seen: one frame,
    docutils' Node.__iadd__, over a thread 62 frames deep).  Only where
    pyframes' reading of the state was compared with RemoteUnwinder's
    first (the debuggers' states): py-bt's innermost function and file are
    none of the thread's frames, and it printed fewer frames."""
    stale = {}
    for tid, mine in ours.items():
        theirs = [f for f in py_bt.get(tid) or () if f != PY_BT_SHIM]
        if not mine or not theirs or len(theirs) >= len(mine):
            continue
        name, filename, _line = theirs[0]
        if (du.co_name(name), filename) not in {(du.co_name(n), f) for n, f, _l in mine}:
            stale[tid] = "py-bt's innermost frame %s (%s) is none of the thread's %d" % (
                name, filename, len(mine))
    return stale


def _threads_text(text):
    headers = list(du._THREAD_HEADER.finditer(text))
    return {int(m.group(1)): text[m.end():headers[i + 1].start() if i + 1 < len(headers)
                                  else len(text)]
            for i, m in enumerate(headers)}


@pytest.mark.parametrize("driver,interp,app", _debugger_params())
def test_debugger_frozen_states(driver, interp, app, pyframes, tmp_path):
    _require(interp, app)
    driver.require(interp.minor)
    spec = APPS[app]
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    tally = Tally("%s on %s, %s (seed %d)" % (app, interp.name, driver.name, seed))
    cmd = driver.command
    named = [("stacks", "%s --all --json" % cmd)]
    if spec["tasks"]:
        named.append(("tasks", "%s --tasks --json" % cmd))
    if driver.debugger == "gdb":
        # py-bt would call pthread_getspecific() in the target to find a
        # thread state (libpython.py's get_thread_state): that runs the
        # stopped process, and a call that fails leaves a thread's registers
        # broken (the target crashed after detach).  Without calls it reads
        # the thread state from memory ($fs_base); -c: an error in one
        # thread does not end the others' py-bt.
        named.insert(0, ("no_calls", "set may-call-functions off"))
        named.append(("py_bt", "thread apply all -c py-bt"))

    with Oracles(interp, spec["tasks"]) as oracles, App(interp, app, tmp_path) as running:
        pid = running.pid
        states = DEBUGGER_STATES[driver.name]
        py_bt_blind = 0
        if driver.debugger == "gdb" and app == "pools":
            states = GDB_POOL_STATES
        for state in range(states):
            time.sleep(rng.uniform(*GAP))
            assert running.alive(), "%s ended early\n%s" % (app, running.output())
            with frozen(pid, False):
                remote = oracles.unwind(pid)
                cli = cli_json(["dump", "--all", "--json"] + (["--tasks"] if spec["tasks"] else [])
                               + [str(pid)])
                remote_tasks = oracles.tasks(pid) if spec["tasks"] else None
                s = driver.run(named, pid=pid,  # py-bt needs DWARF
                               debuginfo=True if driver.debugger == "gdb" else None)
                # gdb leaves the process stopped: still the same state after
                # the session, so its attach let nothing run.  lldb resumes
                # a process it detaches from (on Linux it cannot keep it
                # stopped); that its attach let nothing run before it read
                # shows in its reading equal to the command line's, below.
                if driver.debugger == "gdb" and oracles.unwind(pid) != remote:
                    tally.add(state, pid, ["the process ran during the gdb session"])
                    continue
            stacks = document_threads(s.json("stacks"))
            compare_stacks(tally, state, pid, interp, stacks, remote, driver.name)
            if stacks[0] != document_threads(cli)[0]:
                tally.add(state, pid, ["%s and the command line read the same state "
                                       "differently" % driver.name], s.describe("stacks"))
            if spec["tasks"]:
                compare_tasks(tally, state, pid, remote_tasks, s.json("tasks"), driver.name)
            if driver.debugger == "gdb":
                py_bt = du.parse_py_bt_threads(s["py_bt"])
                no_oracle = py_bt and (_py_bt_blind(stacks[0], py_bt, "") or
                                       _py_bt_stale(stacks[0], py_bt))
                if not py_bt:
                    tally.add(state, pid, ["CPython's py-bt did not run"], s.describe("py_bt"))
                elif no_oracle:
                    # compared with RemoteUnwinder above; py-bt is no oracle
                    # in this state (see _py_bt_blind, _py_bt_stale)
                    print("state %d: py-bt is no oracle for %s:\n%s"
                          % (state, no_oracle, s["py_bt"][-1500:]))
                    py_bt_blind += 1
                else:
                    compare_py_bt(tally, state, pid, interp.path, stacks[0], py_bt)
            tally.states += 1
    if py_bt_blind > 1:
        tally.problems.append("py-bt printed no frame of a thread, or a frame the thread "
                              "does not run, in %d of %d states" % (py_bt_blind, states))
    tally.check()


# --------------------------------------------------------------------------
# 3.13: py-bt as the only oracle

# CPython 3.13, 3.12 and 3.11 have no RemoteUnwinder: there CPython's py-bt
# judges the command line's readings, in one gdb session kept attached (gdb
# stops every thread; `continue` for a random short time between states).
# py-bt takes up to a second and a half per state (the pools' ten threads):
# the suite compares PY_BT_STATES states per application (3.11:
# PY_BT_STATES_311), PYFRAMES_REAL_PROGRAMS_313=N N of them (100: about six
# minutes per application).  3.12 and 3.11 are pyenv's builds, whose
# python3.X-gdb.py (py-bt) the session sources; 3.13's comes with
# python3.13-dbg.
PY_BT_VERSIONS = ("3.13", "pyenv-3.12", "pyenv-3.11", "pyenv-3.10", "pyenv-3.9", "pyenv-3.8")
PY_BT_STATES = 10
PY_BT_STATES_311 = 5  # 3.11, and the heap-frame versions (3.10, 3.9, 3.8)


@pytest.mark.readers("CLI")
@pytest.mark.parametrize("interp,app", _params(PY_BT_VERSIONS))
def test_cli_frozen_states_against_py_bt(interp, app, pyframes, tmp_path):
    states = int(os.environ.get("PYFRAMES_REAL_PROGRAMS_313") or
                 (PY_BT_STATES_311 if getattr(interp, "minor", None) in ("3.11", "3.10", "3.9", "3.8")
                  else PY_BT_STATES))
    _require(interp, app)
    older = interp.kind == "older"
    # 3.11 and 3.12 hide a frame being set up (_PyFrame_IsIncomplete): the
    # gdb oracle says which; 3.8-3.10's frame objects are whole when made
    incomplete = older and interp.minor in ("3.11", "3.12")
    du.require("gdb", interp.name if older else interp.minor)
    from test_write_nothing import Stepper
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    tally = Tally("%s on %s, CLI against py-bt (seed %d)" % (app, interp.name, seed))
    readings = []
    with App(interp, app, tmp_path) as running:
        stepper = Stepper("gdb", running.pid, str(tmp_path))
        try:
            stepper.step("set may-call-functions off")
            if older:  # pyenv's py-bt, beside its python3.X
                stepper.step("source %s-gdb.py" % os.path.realpath(interp.path))
                stepper.step("source %s" % (INCOMPLETE_GDB if incomplete else "/dev/null"))
            for state in range(states):
                readings.append(document_threads(cli_json(
                    ["dump", "--all", "--json", str(running.pid)])))
                stepper.step("thread apply all -c py-bt")
                # gdb's own unwinding of each thread: where py-bt shows a
                # thread without frames, was an eval loop on its stack?
                stepper.step("thread apply all -c bt")
                if older:  # which threads' current frame CPython hides
                    stepper.step("pyf-incomplete" if incomplete else "echo")
                stepper.step(
                    "python import threading as _t; _t.Timer(%.4f, lambda: gdb.post_event("
                    "lambda: gdb.execute('interrupt'))).start(); gdb.execute('continue')"
                    % rng.uniform(0.005, 0.05))
        finally:
            session = stepper.close()
    unusable = 0
    first = 3 if older else 1  # the session's first py-bt
    steps = 4 if older else 3  # the session's commands a state
    for state, (frames, errors) in enumerate(readings):
        out = session[first + steps * state]
        py_bt = du.parse_py_bt_threads(out)
        if incomplete:
            hide_incomplete(tally, frames, errors, py_bt, session[first + 2 + steps * state])
        blind = _py_bt_blind(frames, py_bt, session[first + 1 + steps * state])
        if blind:
            # py-bt read no frame of a thread pyframes read frames of: no
            # oracle for this state (see _py_bt_blind).
            print("state %d: py-bt printed no frame for %s; py-bt:\n%s\ngdb's bt:\n%s"
                  % (state, blind, out[-1500:], session[first + 1 + 3 * state][-3000:]))
            unusable += 1
            continue
        if not py_bt:
            tally.add(state, running.pid, ["CPython's py-bt did not run:\n" + out[-2000:]])
            continue
        errors, entering = tally.entering_loop(interp, frames, errors)
        for tid in entering:
            py_bt.pop(tid, None)
        tally.add(state, running.pid, ["thread %d marked incomplete: %s" % kv
                                       for kv in errors.items()])
        before = len(tally.problems)
        compare_py_bt(tally, state, running.pid, interp.path, frames, py_bt)
        if len(tally.problems) > before:
            print("state %d, py-bt:\n%s\ngdb's bt:\n%s"
                  % (state, out[-3000:], session[first + 1 + steps * state][-6000:]))
        if len(tally.problems) > before and "<optimized out>" in out:
            # py-bt met an eval loop whose frame variable gdb could not read
            # and walked a stale chain again (a coroutine chain listed twice,
            # or a frame the eval loop is entering that the thread state
            # does not publish yet): no oracle for this state.
            del tally.problems[before:]
            unusable += 1
            continue
        tally.states += 1
        tally.processes += 1
        tally.threads += len(frames)
    print("%d states where py-bt, after <optimized out>, walked a stale chain or "
          "printed no frame of a thread: not compared" % unusable)
    if unusable > states // 10:
        tally.problems.append("py-bt unusable in %d of %d states" % (unusable, states))
    tally.check()
