"""Python frame navigation in gdb and lldb: py-up, py-down, py-frame and
py-list (and their pyf- names), on a thread 50 Python frames deep that is
entered from C 16 times (targets/nav_deep.py).

Oracles, never pyframes' own output:
* the target's own view of its stack (function, file, line of each frame,
  innermost first) and its own source file: at every step the selected
  frame is the view's frame of that number, and py-list marks its line,
  with that line's text;
* which frames are entered from C (by construction: the callees of map,
  sorted's key, functools.reduce, a class called through
  functools.partial, a property read through getattr, and <module>; the
  target's FROM_C) and the debugger's own backtrace: the k-th run of
  Python frames (innermost first, each ending at a frame entered from C)
  is run by the k-th _PyEval_EvalFrameDefault of the backtrace, so after
  each step the debugger's own selected frame (`frame`, `frame info`) is
  that one;
* in gdb, CPython's own py-up (python3.X-gdb.py, auto-loaded with the -dbg
  package) beside ours: its help is its own, and it moves on from the
  eval frame ours selected.
"""

import os
import re

import pytest

import debugger_util as du

# What this module checks is told by the names of the interpreter's static
# functions in the debugger's unwind: its sessions load the -dbg packages'
# DWARF (debugger_util.DEBUGINFO).
_debuginfo = pytest.fixture(scope="module", autouse=True)(du.sessions_with_debuginfo)

VERSIONS = list(du.VERSIONS) if du.in_sandbox() else [v for v in du.VERSIONS if v == du.PYENV]
EVAL = "_PyEval_EvalFrameDefault"
FROM_C = ("<module>", "mapped", "keyed", "reduced", "Node.__init__", "Holder.descend")
DEPTH = 50

_MOVED = re.compile(r'^#(\d+) File "(.*)", line (\d+), in (.+)$', re.M)
_MARKED = re.compile(r"^\s*>(\d+)    (.*)$", re.M)
_GDB_FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?([A-Za-z_][\w.$]*)", re.M)
_LLDB_FRAME = re.compile(r"^[\s*]*frame #(\d+): 0x[0-9a-f]+ [^`\s]+`([A-Za-z_][\w.$]*)", re.M)


class Debugger(object):
    """How one debugger is driven and read."""

    def __init__(self, name):
        self.name = name
        gdb = name == "gdb"
        self.frame = "frame" if gdb else "frame info"
        self.bt = "bt -no-filters" if gdb else "bt"
        self.native = _GDB_FRAME if gdb else _LLDB_FRAME

    def run(self, commands, **kw):
        return (du.run_gdb if self.name == "gdb" else du.run_lldb)(commands, **kw)

    def frames(self, text):
        """[(level, function)] of a backtrace or of `frame`'s line."""
        return [(int(m.group(1)), m.group(2)) for m in self.native.finditer(text)]


GDB, LLDB = Debugger("gdb"), Debugger("lldb")


@pytest.fixture(scope="module", params=VERSIONS)
def nav(request, tmp_path_factory):
    version = request.param
    du.require("gdb", version)
    workdir = str(tmp_path_factory.mktemp("nav-%s" % version))
    target = du.LiveTarget(du.python_for(version), "nav_deep.py", workdir=workdir, aslr=False)
    target.start()
    try:
        target.own = target.threads[target.main_tid]
        assert len(target.own) == DEPTH, target.own
        target.version = version
        target.core = os.path.join(workdir, "gdb.core")
        yield target
    finally:
        target.stop()


def _runs_of(own):
    """Per frame of the own view, the number of its run (innermost 0)."""
    out, run = [], 0
    for function, _file, _line in own:
        out.append(run)
        if function in FROM_C:
            run += 1
    return out


def _source_line(filename, line):
    with open(filename, encoding="utf-8") as f:
        return f.read().splitlines()[line - 1]


class Walk(object):
    """A session's commands, each step's checks named with it."""

    def __init__(self, debugger, prefix):
        self.debugger = debugger
        self.prefix = prefix
        self.commands = [debugger.bt]
        self.steps = []  # (command index, expected frame number or message)

    def step(self, command, expect):
        """command (py-up 2, ...) then `frame` and py-list; expect: the
        frame number selected, or (message regex, frame number kept)."""
        self.steps.append((len(self.commands), expect))
        self.commands += [self.prefix + command, self.debugger.frame, self.prefix + "list"]

    def check(self, s, target):
        own = target.own
        runs = _runs_of(own)
        evals = [level for level, name in self.debugger.frames(s[0]) if name == EVAL]
        assert len(evals) == runs[-1] + 1, (evals, s.describe(0))
        for at, expect in self.steps:
            context = s.describe(at)
            out = s[at]
            if isinstance(expect, tuple):
                message, index = expect
                assert re.search(message, out), context
                assert not _MOVED.search(out), context
            else:
                index = expect
                moved = _MOVED.search(out)
                assert moved, context
                function, filename, line = own[index]
                assert (int(moved.group(1)), moved.group(4), moved.group(2),
                        int(moved.group(3))) == (index, function, filename, line), context
            # the debugger's selected native frame: the eval frame of the run
            selected = self.debugger.frames(s[at + 1])
            assert selected and selected[0] == (evals[runs[index]], EVAL), \
                (selected, evals[runs[index]], s.describe(at + 1))
            marked = _MARKED.findall(s[at + 2])
            line = own[index][2]
            assert [(int(n), text.rstrip()) for n, text in marked] == \
                [(line, _source_line(own[index][1], line).rstrip())], s.describe(at + 2)


def _walk(debugger, prefix):
    """Up by one to the outermost, past it, down by three to the
    innermost, past it, then by number and up by more than there are."""
    w = Walk(debugger, prefix)
    w.step("frame", 0)
    for i in range(1, DEPTH):
        w.step("up", i)
    w.step("up", (r"no older Python frame: #%d \(<module>\) is the outermost" % (DEPTH - 1),
                  DEPTH - 1))
    w.step("frame", DEPTH - 1)
    i = DEPTH - 1
    while i > 0:
        i = max(i - 3, 0)
        w.step("down 3", i)
    w.step("down", (r"no newer Python frame: #0 \(Harness.publish_and_block\) is the "
                    r"innermost", 0))
    w.step("frame 17", 17)
    w.step("frame %d" % DEPTH, (r"no Python frame #%d: this thread's frames are #0 to #%d"
                                % (DEPTH, DEPTH - 1), 17))
    w.step("up 1000", DEPTH - 1)
    w.step("up x", (r"usage: %sup \[N\]" % prefix, DEPTH - 1))
    return w


def _up_walk(debugger):
    """From #0 up by one to the outermost (a core file's walk)."""
    w = Walk(debugger, "pyf-")
    w.step("frame", 0)
    for i in range(1, DEPTH):
        w.step("up", i)
    return w


def test_gdb_walk_beside_cpython_helper(nav):
    """gdb with CPython's helper loaded (it has py-up, py-down, py-list):
    ours as pyf-*, every step against the target's own view and gdb's
    own frames; then a core file gdb wrote, through gdb's reads."""
    w = _walk(GDB, "pyf-")
    s = GDB.run(w.commands + ["gcore " + nav.core], pid=nav.pid)
    w.check(s, nav)
    core = _up_walk(GDB)
    core.check(GDB.run(core.commands, executable=nav.view["executable"], core=nav.core), nav)


def test_lldb_walk(nav):
    if not du.lldb_usable():
        pytest.skip("no lldb")
    w = _walk(LLDB, "py-")
    w.check(LLDB.run(w.commands, pid=nav.pid), nav)


def test_lldb_walk_on_gdb_core(nav):
    if not du.lldb_usable():
        pytest.skip("no lldb")
    if not os.path.exists(nav.core):
        GDB.run(["gcore " + nav.core], pid=nav.pid)
    w = _up_walk(LLDB)
    w.check(LLDB.run(w.commands, executable=nav.view["executable"], core=nav.core), nav)


def _require_helper(nav, s, at):
    """Skip where python has no CPython gdb helper (no -dbg package: the
    host's or pyenv's python); the sandbox's Debian pythons have it."""
    if "(pyframes)" in s[at] or "Undefined" in s[at]:
        if du.in_sandbox() and nav.version != du.PYENV:
            pytest.fail("CPython's gdb helper was not loaded:\n" + s.describe(at))
        pytest.skip("CPython's gdb helper is not available for %s" % nav.version)


def test_gdb_cpython_helper_and_ours(nav):
    """CPython's py-up, py-down and py-list keep their names; ours are
    pyf-* (and py-frame, which CPython's helper has not).  CPython's py-up
    moves on from the eval frame ours selected, at most to the next one;
    ours keeps its selection."""
    runs = _runs_of(nav.own)
    index = 4
    s = du.run_gdb([GDB.bt, "help py-up", "help py-down", "help py-list", "help pyf-up",
                    "help py-frame", "pyf-frame %d" % index, "py-up", GDB.frame,
                    "pyf-frame", GDB.frame], pid=nav.pid)
    _require_helper(nav, s, 1)
    evals = [level for level, name in GDB.frames(s[0]) if name == EVAL]
    for i in (1, 2, 3):
        assert "(pyframes)" not in s[i] and "Undefined" not in s[i], s.describe(i)
    assert "stack frame" in s[1], s.describe(1)
    assert "(pyframes)" in s[4] and "(pyframes)" in s[5], s.describe(4)
    assert _MOVED.search(s[6]), s.describe(6)
    assert not _MOVED.search(s[7]), s.describe(7)
    # the next frame CPython's helper counts as Python's: an eval frame
    # or a call of a built-in (reduce's) on the way to it
    level = GDB.frames(s[8])[0][0]
    assert evals[runs[index]] < level <= evals[runs[index] + 1], (level, s.describe(8))
    moved = _MOVED.search(s[9])
    assert moved and int(moved.group(1)) == index, s.describe(9)
    assert GDB.frames(s[10])[0] == (evals[runs[index]], EVAL), s.describe(10)


def test_gdb_plugin_first_then_cpython_helper(nav):
    """The plugin loaded before the process: py-up is ours until CPython's
    helper comes with python's objfile and takes it; pyf-up stays ours."""
    s = du.run_gdb(["source " + du.GDB_PLUGIN, "help py-up", "attach %d" % nav.pid,
                    "help py-up", "pyf-up 2", "pyf-list", "detach"], plugin=False)
    assert "(pyframes)" in s[1], s.describe(1)
    _require_helper(nav, s, 3)
    assert "(pyframes)" not in s[3] and "stack frame" in s[3], s.describe(3)
    # said when it happened
    assert ("pyframes: py-up, py-down, py-list, py-locals, py-print are now another "
            "extension's (CPython's gdb helper, loaded with python); pyframes' are pyf-up, "
            "pyf-down, pyf-list, pyf-locals, pyf-print"
            in s[2]), s.describe(2)
    moved = _MOVED.search(s[4])
    assert moved and int(moved.group(1)) == 2, s.describe(4)
    assert _MARKED.search(s[5]), s.describe(5)


def test_gdb_without_cpython_helper(nav):
    """Without CPython's helper the plain names are ours; py-list's
    ranges."""
    line = nav.own[2][2]
    s = du.run_gdb(["set auto-load python-scripts off", "attach %d" % nav.pid,
                    "source " + du.GDB_PLUGIN, "help py-up", "py-up 3", "py-down",
                    "py-frame", "py-list", "help py-list", "py-list 1 3", "py-list %d, %d"
                    % (line - 1, line), "py-list %d" % line, "py-list 3 1", "detach"],
                   plugin=False)
    assert "(pyframes)" in s[3] and "(pyframes)" in s[8], s.describe(3)
    for at, index in ((4, 3), (5, 2), (6, 2)):
        moved = _MOVED.search(s[at])
        assert moved and int(moved.group(1)) == index, s.describe(at)
    assert [int(n) for n, _ in _MARKED.findall(s[7])] == [line], s.describe(7)
    # START END, START, END (CPython's spelling), START: START and 10 more
    # (to the end of the file)
    with open(nav.own[2][1], encoding="utf-8") as f:
        last = len(f.read().splitlines())
    numbered = re.compile(r"^\s*>?(\d+)    ", re.M)
    for at, lines in ((9, [1, 2, 3]), (10, [line - 1, line]),
                      (11, list(range(line, min(line + 10, last) + 1)))):
        assert [int(n) for n in numbered.findall(s[at])] == lines, s.describe(at)
    assert "usage: py-list [START [END]]" in s[12], s.describe(12)


@pytest.mark.parametrize("debugger", [GDB, LLDB], ids=["gdb", "lldb"])
def test_selection_forgotten_at_a_new_stop(nav, debugger):
    """A new stop (py-sample runs the process and stops it) starts again
    at #0; the selection is not lost before."""
    if debugger is LLDB and not du.lldb_usable():
        pytest.skip("no lldb")
    s = debugger.run(["pyf-up 5", "pyf-frame", "py-sample -n 1", "pyf-frame"], pid=nav.pid)
    for at, index in ((1, 5), (3, 0)):
        moved = _MOVED.search(s[at])
        assert moved and int(moved.group(1)) == index, s.describe(at)


@pytest.mark.parametrize("debugger", [GDB, LLDB], ids=["gdb", "lldb"])
def test_each_thread_its_own_selection(debugger, tmp_path):
    """The selection belongs to the selected thread: another thread starts
    at #0, and the first keeps its own (targets/mixed.py: two threads)."""
    if debugger is LLDB and not du.lldb_usable():
        pytest.skip("no lldb")
    du.require("gdb", "3.14")
    with du.LiveTarget(du.python_for("3.14"), "mixed.py", workdir=str(tmp_path)) as target:
        tids = {v["name"]: int(k) for k, v in target.view["thread_info"].items()}
        select = {name: (("python [t.switch() for t in gdb.selected_inferior().threads() "
                          "if t.ptid[1] == %d]" if debugger is GDB else
                          "script lldb.process.SetSelectedThreadByID(%d)") % tid)
                  for name, tid in tids.items()}
        s = debugger.run([select["through-c"], "pyf-up 2", select["plain"], "pyf-frame",
                          "pyf-up", select["through-c"], "pyf-frame"], pid=target.pid)
        for at, name, index in ((1, "through-c", 2), (3, "plain", 0), (4, "plain", 1),
                                (6, "through-c", 2)):
            moved = _MOVED.search(s[at])
            function, filename, line = target.threads[tids[name]][index]
            assert moved and (int(moved.group(1)), moved.group(4), int(moved.group(3))) == \
                (index, function, line), s.describe(at)


@pytest.mark.parametrize("debugger", [GDB, LLDB], ids=["gdb", "lldb"])
def test_no_process_and_no_python(debugger):
    """Without a process, and in a process without Python: one message,
    and the session goes on."""
    if debugger is LLDB and not du.lldb_usable():
        pytest.skip("no lldb")
    du.require(debugger.name)
    s = debugger.run(["pyf-up", "pyf-list"])
    assert "no process or core file" in s[0] and "no process or core file" in s[1], \
        s.describe(0)
    proc = du.sleeper()
    try:
        s = debugger.run(["pyf-frame", "pyf-up"], pid=proc.pid)
        # the stack command's words (test_debuggers.py: test_not_python)
        not_python = "process %d (sleep) is not a Python process" % proc.pid
        assert not_python in s[0] and not_python in s[1], s.describe(0)
    finally:
        proc.kill()
        proc.wait()
