"""Python frame navigation in gdb and lldb: py-up, py-down, py-frame,
py-list, py-locals and py-print (and their pyf- names), on a thread 50
Python frames deep that is entered from C 16 times (targets/nav_deep.py),
on CPython 3.13-3.15 and 3.12, 3.11.

Oracles, never pyframes' own output:
* the target's own view of its stack (function, file, line of each frame,
  innermost first) and its own source file: at every step the selected
  frame is the view's frame of that number, and py-list marks its line,
  with that line's text;
* the target's own repr() of each frame's locals and of a global
  (locals.json): py-locals at every step shows the selected frame's, and
  py-print an attribute of a local and the global as repr() does;
* which frames are entered from C (by construction: the callees of map,
  sorted's key, functools.reduce, a class called through
  functools.partial, a property read through getattr, and <module>; the
  target's FROM_C) and the debugger's own backtrace: the k-th run of
  Python frames (innermost first, each ending at a frame entered from C)
  is run by the k-th _PyEval_EvalFrameDefault of the backtrace, so after
  each step the debugger's own selected frame (`frame`, `frame info`) is
  that one;
* in gdb, CPython's own py-up (python3.X-gdb.py, auto-loaded with the -dbg
  package) beside ours, under the name cpython-py-up: its help is its own,
  and it moves on from the eval frame ours selected;
* for py-locals and py-print under the plain names with CPython's helper
  loaded before and after the plugin (targets/order_desk.py), the
  target's own repr() of each local of the frames it records.
"""

import ast
import json
import os
import re

import pytest

import debugger_util as du

# What this module checks is told by the names of the interpreter's static
# functions in the debugger's unwind: its sessions load the -dbg packages'
# DWARF (debugger_util.DEBUGINFO).
_debuginfo = pytest.fixture(scope="module", autouse=True)(du.sessions_with_debuginfo)

VERSIONS = ((list(du.VERSIONS) if du.in_sandbox() else [v for v in du.VERSIONS if v == du.PYENV])
            + list(du.older_versions("all")))
EVAL = "_PyEval_EvalFrameDefault"
FROM_C = ("<module>", "mapped", "keyed", "reduced", "Node.__init__", "Holder.descend")
DEPTH = 50

_MOVED = re.compile(r'^#(\d+) File "(.*)", line (\d+), in (.+)$', re.M)
_MARKED = re.compile(r"^\s*>(\d+)    (.*)$", re.M)
_LOCAL = re.compile(r"^(\w+) = (.*)$", re.M)
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
        if self.name == "gdb":
            return du.run_gdb(commands, cpython_helper=True, **kw)
        return du.run_lldb(commands, **kw)

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
        with open(os.path.join(workdir, "locals.json")) as f:
            target.values = json.load(f)
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
        self.printed = []  # (command index of the py-frame, expression, value of values)

    def step(self, command, expect):
        """command (py-up 2, ...) then `frame`, py-list and py-locals;
        expect: the frame number selected, or (message regex, frame number
        kept)."""
        self.steps.append((len(self.commands), expect))
        self.commands += [self.prefix + command, self.debugger.frame, self.prefix + "list",
                          self.prefix + "locals"]

    def prints(self, index, expression, value):
        """py-frame index, then py-print expression, which must show
        ``expression = value(target.values)``."""
        self.printed.append((len(self.commands), expression, value))
        self.commands += [self.prefix + "frame %d" % index, self.prefix + "print " + expression]

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
            # py-locals: the frame's locals as the target's repr() shows them
            want = target.values["frames"][index]
            if want:
                assert dict(_LOCAL.findall(s[at + 3])) == want, s.describe(at + 3)
            else:
                assert re.search(r"^#%d \(.*\) has no locals$" % index, s[at + 3], re.M), \
                    s.describe(at + 3)
        for at, expression, value in self.printed:
            assert _MOVED.search(s[at]), s.describe(at)
            assert s[at + 1].strip() == "%s = %s" % (expression, value(target.values)), \
                s.describe(at + 1)


def _walk(debugger, prefix, nav):
    """Up by one to the outermost, past it, down by three to the
    innermost, past it, then by number and up by more than there are;
    then py-print."""
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
    _prints(w, nav.own)
    return w


def _prints(w, own):
    """py-print: an attribute of a local (by_property's holder.n, set to
    its n), a global (WAYS, a tuple of functions), an attribute of a local
    of the frame it entered from C (Holder.descend's self.n)."""
    by_property = [function for function, _file, _line in own].index("by_property")
    assert own[by_property - 1][0] == "Holder.descend", own
    w.prints(by_property, "holder.n", lambda v: v["frames"][by_property]["n"])
    w.prints(by_property, "WAYS", lambda v: v["WAYS"])
    w.prints(by_property - 1, "self.n", lambda v: v["frames"][by_property]["n"])


def _up_walk(debugger, nav):
    """From #0 up by one to the outermost (a core file's walk), then
    py-print."""
    w = Walk(debugger, "pyf-")
    w.step("frame", 0)
    for i in range(1, DEPTH):
        w.step("up", i)
    _prints(w, nav.own)
    return w


def test_gdb_walk_beside_cpython_helper(nav):
    """gdb with CPython's helper loaded (it has py-up, py-down, py-list):
    ours as pyf-*, every step against the target's own view and gdb's
    own frames; then a core file gdb wrote, through gdb's reads."""
    w = _walk(GDB, "pyf-", nav)
    s = GDB.run(w.commands + ["gcore " + nav.core], pid=nav.pid)
    w.check(s, nav)
    core = _up_walk(GDB, nav)
    core.check(GDB.run(core.commands, executable=nav.view["executable"], core=nav.core), nav)


def test_lldb_walk(nav):
    if not du.lldb_usable():
        pytest.skip("no lldb")
    w = _walk(LLDB, "py-", nav)
    w.check(LLDB.run(w.commands, pid=nav.pid), nav)


def test_lldb_walk_on_gdb_core(nav):
    if not du.lldb_usable():
        pytest.skip("no lldb")
    if not os.path.exists(nav.core):
        GDB.run(["gcore " + nav.core], pid=nav.pid)
    w = _up_walk(LLDB, nav)
    w.check(LLDB.run(w.commands, executable=nav.view["executable"], core=nav.core), nav)


def _require_helper(version, s, at):
    """Skip where python has no CPython gdb helper (no -dbg package: the
    host's python); the sandbox's Debian pythons have it, and pyenv's
    builds beside python (bin/python3.X-gdb.py, which the sessions load:
    Debugger.run's cpython_helper).  s[at]: the help of one of its
    commands (cpython-py-up)."""
    if "(pyframes)" in s[at] or "Undefined" in s[at]:
        if du.in_sandbox() and version != du.PYENV:
            pytest.fail("CPython's gdb helper was not loaded:\n" + s.describe(at))
        pytest.skip("CPython's gdb helper is not available for %s" % version)


#: What the plugin says once when CPython's helper had the plain names.
NOTICE = ("pyframes: py-up, py-down, py-list, py-locals, py-print are pyframes' (also pyf-up, "
          "pyf-down, pyf-list, pyf-locals, pyf-print); CPython's gdb helper's are "
          "cpython-py-up, cpython-py-down, cpython-py-list, cpython-py-locals, "
          "cpython-py-print")


def test_gdb_cpython_helper_and_ours(nav):
    """CPython's helper loaded first (at the attach): the plain names are
    ours (py-frame too, which CPython's helper has not), CPython's py-up,
    py-down and py-list are cpython-py-up ...  CPython's py-up moves on
    from the eval frame ours selected, at most to the next one; ours keeps
    its selection."""
    runs = _runs_of(nav.own)
    index = 4
    s = du.run_gdb([GDB.bt, "help cpython-py-up", "help cpython-py-down",
                    "help cpython-py-list", "help py-up", "help py-frame",
                    "py-frame %d" % index, "cpython-py-up", GDB.frame,
                    "py-frame", GDB.frame], pid=nav.pid, cpython_helper=True)
    _require_helper(nav.version, s, 1)
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
    assert s.raw.count(NOTICE) == 1, s.describe()


def test_gdb_plugin_first_then_cpython_helper(nav):
    """The plugin loaded before the process (as from ~/.gdbinit): CPython's
    helper comes with python's objfile and takes py-up; the plugin takes it
    back at once and says so (once), CPython's as cpython-py-up."""
    s = du.run_gdb(["source " + du.GDB_PLUGIN, "help py-up", "attach %d" % nav.pid,
                    "help py-up", "py-up 2", "py-list", "help cpython-py-up", "detach"],
                   plugin=False, cpython_helper=True)
    assert "(pyframes)" in s[1], s.describe(1)
    _require_helper(nav.version, s, 6)
    assert "(pyframes)" in s[3], s.describe(3)
    assert "(pyframes)" not in s[6] and "stack frame" in s[6], s.describe(6)
    # said when it happened, once
    assert NOTICE in s[2] and s.raw.count(NOTICE) == 1, s.describe(2)
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


@pytest.fixture(scope="module", params=VERSIONS)
def desk(request, tmp_path_factory):
    """targets/order_desk.py: an order handled three calls deep, blocked;
    its record (desk.json) holds repr() of each recorded frame's locals."""
    version = request.param
    du.require("gdb", version)
    workdir = str(tmp_path_factory.mktemp("desk-%s" % version))
    target = du.LiveTarget(du.python_for(version), "order_desk.py", workdir=workdir)
    target.start()
    try:
        own = target.threads[target.main_tid]
        with open(os.path.join(workdir, "desk.json")) as f:
            recorded = json.load(f)["frames"]
        target.version = version
        # frame number (as the target's own view numbers them) -> its locals
        target.number = {r["function"]: [f[0] for f in own].index(r["function"])
                         for r in recorded}
        target.locals = {target.number[r["function"]]: r["locals"] for r in recorded}
        yield target
    finally:
        target.stop()


def _locals_of(text):
    """{name: value} of py-locals' lines."""
    return dict(re.findall(r"^(\w+) = (.*)$", text, re.M))


@pytest.mark.parametrize("order", ["helper first", "plugin first"])
def test_gdb_plain_names_are_ours_beside_cpython_helper(desk, order):
    """The README's py-up, py-locals and py-print are pyframes' whichever of
    CPython's helper (auto-loaded at the attach) and the plugin comes first:
    every local of the frames selected as the target's own repr() gives it,
    an item of one; the helper's commands stay under cpython-py-*; the
    load says which is which once.  (Without this, CPython's commands ran
    and answered "Unable to read information on python frame" without
    python's debug symbols.)"""
    price, wait = desk.number["price_order"], desk.number["wait_for_warehouse"]
    commands = ["help py-up", "help py-locals", "help py-print", "py-up %d" % price,
                "py-locals", "py-print order['customer']", "py-print first",
                "py-down", "py-locals", "help cpython-py-locals", "help cpython-py-print",
                "detach"]
    if order == "helper first":
        s = du.run_gdb(commands, pid=desk.pid, debuginfo=False, cpython_helper=True)
        base = 0
    else:
        s = du.run_gdb(["source " + du.GDB_PLUGIN, "attach %d" % desk.pid] + commands,
                       plugin=False, debuginfo=False, cpython_helper=True)
        base = 2
    _require_helper(desk.version, s, base + 9)
    for at in (0, 1, 2):
        assert "(pyframes)" in s[base + at], s.describe(base + at)
    moved = _MOVED.search(s[base + 3])
    assert moved and (int(moved.group(1)), moved.group(4)) == (price, "price_order"), \
        s.describe(base + 3)
    assert _locals_of(s[base + 4]) == desk.locals[price], s.describe(base + 4)
    order_value = ast.literal_eval(desk.locals[price]["order"])
    assert s[base + 5].strip() == "order['customer'] = %r" % order_value["customer"], \
        s.describe(base + 5)
    assert s[base + 6].strip() == "first = %s" % desk.locals[price]["first"], \
        s.describe(base + 6)
    assert _MOVED.search(s[base + 7]).group(1) == str(wait), s.describe(base + 7)
    assert _locals_of(s[base + 8]) == desk.locals[wait], s.describe(base + 8)
    for at in (9, 10):
        assert "(pyframes)" not in s[base + at] and "Undefined" not in s[base + at], \
            s.describe(base + at)
    assert s.raw.count(NOTICE) == 1, s.describe()


def test_lldb_plain_names_are_ours(desk):
    """lldb loads no helper of CPython's (nothing is auto-loaded with
    python's module): the README's py-up, py-locals and py-print are
    pyframes', against the same record."""
    if not du.lldb_usable():
        pytest.skip("no lldb")
    price = desk.number["price_order"]
    s = du.run_lldb(["help py-up", "help py-locals", "py-up %d" % price, "py-locals",
                     "py-print order['customer']"], pid=desk.pid)
    for at in (0, 1):
        assert "(pyframes)" in s[at], s.describe(at)
    moved = _MOVED.search(s[2])
    assert moved and (int(moved.group(1)), moved.group(4)) == (price, "price_order"), \
        s.describe(2)
    assert _locals_of(s[3]) == desk.locals[price], s.describe(3)
    order_value = ast.literal_eval(desk.locals[price]["order"])
    assert s[4].strip() == "order['customer'] = %r" % order_value["customer"], s.describe(4)
