"""The gdb plugin (gdb/pyframes_gdb.py, command ``py-bt-fast``) against live
CPython 3.13/3.14/3.15 processes and their core files.

Each version runs one gdb session on a live scenario process (see
debugger_util.SCENARIO) with many commands; the tests below check the
outputs of that session, then open the core file it saved.
"""

import os
import re

import pytest

import debugger_util as du

VERSIONS = list(du.VERSIONS)


@pytest.fixture(autouse=True)
def _requirements(request):
    version = request.node.callspec.params.get("version") if hasattr(
        request.node, "callspec") else None
    du.require("gdb", version)


# Indexes of the commands of the live session.
AUTO, READERS_AFTER_AUTO, PID, DEBUGGER, SELECTED, BY_NATIVE, BY_IDENT, TEXT, \
    LIMIT, PY_BT, NO_SUCH, SELECT_FOREIGN, FOREIGN, AFTER_FOREIGN, BOGUS, \
    AFTER_BOGUS, HELP, GCORE, READERS = range(19)

_READERS = ("python print('READERS', sorted(set(k[2] for k in "
            "_pyframes_gdb_state['session']._targets)))")


class Live(object):
    pass


@pytest.fixture(scope="module", params=VERSIONS)
def live(request, tmp_path_factory):
    version = request.param
    du.require("gdb", version)
    workdir = str(tmp_path_factory.mktemp("gdb-%s" % version))
    target = du.LiveTarget(du.python_for(version), depth=5, foreign_thread=True,
                           workdir=workdir)
    target.start()
    try:
        assert target.foreign_tids, "the scenario's foreign thread did not start"
        workers = sorted(set(target.threads) - {target.main_tid})
        worker = workers[0]
        core = os.path.join(workdir, "gdb.core")
        commands = [None] * 19
        commands[AUTO] = "py-bt-fast --all --json"
        commands[READERS_AFTER_AUTO] = _READERS
        commands[PID] = "py-bt-fast --all --json --reader pid"
        commands[DEBUGGER] = "py-bt-fast --all --json --reader debugger"
        commands[SELECTED] = "py-bt-fast --json"
        commands[BY_NATIVE] = "py-bt-fast --thread %d --json --reader debugger" % worker
        commands[BY_IDENT] = "py-bt-fast --thread 0x%x --json" % target.idents[worker]
        commands[TEXT] = "py-bt-fast"
        commands[LIMIT] = "py-bt-fast --all --limit 2 --no-source"
        commands[PY_BT] = "py-bt"
        commands[NO_SUCH] = "py-bt-fast --thread 1"
        commands[SELECT_FOREIGN] = (
            "python [t.switch() for t in gdb.selected_inferior().threads() "
            "if t.ptid[1] == %d]" % target.foreign_tids[0])
        commands[FOREIGN] = "py-bt-fast"
        commands[AFTER_FOREIGN] = "print 1+1"
        commands[BOGUS] = "py-bt-fast --bogus"
        commands[AFTER_BOGUS] = "print 2+2"
        commands[HELP] = "help py-bt-fast"
        commands[GCORE] = "gcore " + core
        commands[READERS] = _READERS
        session = du.run_gdb(commands, pid=target.pid)
        live = Live()
        live.version, live.target, live.session = version, target, session
        live.worker, live.core = worker, core
        yield live
    finally:
        target.stop()


def _assert_own_view(document, target, context, tids=None):
    problems = du.own_view_mismatches(document, target, tids)
    assert not problems, "\n".join(problems) + "\n" + context


@pytest.mark.parametrize("index", [AUTO, PID, DEBUGGER], ids=["auto", "pid", "debugger"])
def test_all_threads_match_own_view(live, index):
    s = live.session
    doc = s.json(index)
    assert doc["python"]["version"].startswith(du.minor_of(live.version) + ".")
    _assert_own_view(doc, live.target, s.describe(index))


def test_reader_choice(live):
    s = live.session
    assert "READERS ['pid']" in s[READERS_AFTER_AUTO], s.describe(READERS_AFTER_AUTO)
    assert "READERS ['debugger', 'pid']" in s[READERS], s.describe(READERS)


def test_selected_thread_is_default(live):
    s = live.session
    doc = s.json(SELECTED)
    assert list(du.frames_of(doc)) == [live.target.main_tid], s.describe(SELECTED)
    _assert_own_view(doc, live.target, s.describe(SELECTED), [live.target.main_tid])


@pytest.mark.parametrize("index", [BY_NATIVE, BY_IDENT], ids=["native-id", "python-id"])
def test_thread_option(live, index):
    s = live.session
    doc = s.json(index)
    assert list(du.frames_of(doc)) == [live.worker], s.describe(index)
    _assert_own_view(doc, live.target, s.describe(index), [live.worker])


def test_text_output(live):
    s = live.session
    text = s[TEXT]
    main = live.target.main_tid
    assert re.search(r"^Thread 0x[0-9a-f]+ \(native %d\b.*\[gdb thread 1\]:$" % main,
                     text, re.M), s.describe(TEXT)
    assert "Traceback (most recent call first):" in text
    for function, filename, line in live.target.threads[main]:
        assert '  File "%s", line %d, in %s' % (filename, line, function) in text, \
            s.describe(TEXT)
    # Source lines are shown by default, under their frame.
    assert "\n    return self.step(n - 1)\n" in text, s.describe(TEXT)


def test_limit(live):
    s = live.session
    text = s[LIMIT]
    blocks = text.split("\n\n")
    assert len(blocks) == len(live.target.threads), s.describe(LIMIT)
    for block in blocks:
        assert block.count('  File "') <= 2, s.describe(LIMIT)
        assert "    return" not in block  # --no-source
    assert "more frame" in text


def test_same_as_cpython_py_bt(live):
    s = live.session
    out = s[PY_BT]
    # Without CPython's py-bt, gdb takes "py-bt" as an abbreviation of py-bt-fast.
    if "Undefined command" in out or "[gdb thread" in out or not du.parse_py_bt(out):
        if du.in_sandbox() and live.version != du.PYENV:  # the sandbox has -dbg
            pytest.fail("CPython's py-bt did not run:\n" + s.describe(PY_BT))
        pytest.skip("CPython's py-bt is not available (python%s-dbg missing?)" % live.version)
    theirs = du.parse_py_bt(out)
    ours = live.target.threads[live.target.main_tid]
    # py-bt prints co_name (co_qualname in some versions of libpython.py).
    assert len(theirs) == len(ours), s.describe(PY_BT)
    for (f1, fn1, ln1), (f2, fn2, ln2) in zip(theirs, ours):
        assert (fn1, ln1) == (fn2, ln2) and f1 in (f2, du.co_name(f2)), s.describe(PY_BT)


def test_unknown_thread_number(live):
    s = live.session
    assert "--thread 1: no Python thread has native thread id or Python thread id 1" \
        in s[NO_SUCH], s.describe(NO_SUCH)


def test_selected_thread_without_python(live):
    s = live.session
    out = s[FOREIGN]
    foreign = live.target.foreign_tids[0]
    assert "the selected thread (thread " in out and "LWP %d) runs no Python code" % foreign \
        in out, s.describe(FOREIGN)
    # The error lists the Python threads with their innermost function.
    for tid, frames in live.target.threads.items():
        assert re.search(r"native id %d\s.*in %s \(" % (tid, re.escape(frames[0][0])), out), \
            s.describe(FOREIGN)
    assert "Traceback" not in out
    assert "$1 = 2" in s[AFTER_FOREIGN], s.describe(AFTER_FOREIGN)


def test_usage_error_keeps_session(live):
    s = live.session
    assert "unrecognized arguments: --bogus" in s[BOGUS], s.describe(BOGUS)
    assert "usage: py-bt-fast" in s[BOGUS]
    assert "Traceback" not in s[BOGUS]
    assert "$2 = 4" in s[AFTER_BOGUS], s.describe(AFTER_BOGUS)


def test_help(live):
    s = live.session
    assert "--reader" in s[HELP] and "--thread" in s[HELP], s.describe(HELP)


def _switch_to(tid):
    return ("python [t.switch() for t in gdb.selected_inferior().threads() "
            "if t.ptid[1] == %d]" % tid)


def test_core_file(live):
    """gdb EXECUTABLE CORE.  gcore saved the foreign thread (selected at the
    time) first, so gdb selects it when it opens the core."""
    assert os.path.exists(live.core), live.session.describe(GCORE)
    exe = live.target.view["executable"]
    foreign = live.target.foreign_tids[0]
    commands = ["py-bt-fast --all --json", "py-bt-fast --reader pid",
                "py-bt-fast --json", _switch_to(live.target.main_tid), "py-bt-fast --json",
                "py-bt-fast --all --json --reader debugger", _READERS,
                "py-bt-fast --thread %d --no-source" % live.worker]
    s = du.run_gdb(commands, executable=exe, core=live.core)
    _assert_own_view(s.json(0), live.target, s.describe(0))
    assert "--reader pid needs a live process" in s[1], s.describe(1)
    assert "LWP %d) runs no Python code" % foreign in s[2], s.describe(2)
    assert list(du.frames_of(s.json(4))) == [live.target.main_tid], s.describe(4)
    _assert_own_view(s.json(4), live.target, s.describe(4), [live.target.main_tid])
    _assert_own_view(s.json(5), live.target, s.describe(5))
    assert "READERS ['debugger']" in s[6], s.describe(6)
    function, filename, line = live.target.threads[live.worker][0]
    assert '  File "%s", line %d, in %s' % (filename, line, function) in s[7], s.describe(7)


@pytest.mark.parametrize("version", VERSIONS)
def test_without_debug_symbols(version, tmp_path):
    """No DWARF at all: the exported _PyRuntime symbol is enough."""
    with du.LiveTarget(du.python_for(version), depth=3, workdir=str(tmp_path)) as target:
        s = du.run_gdb(["py-bt-fast --all --json --reader debugger", "py-bt-fast --all --json",
                        "ptype _PyRuntime"], pid=target.pid, debuginfo=False)
        _assert_own_view(s.json(0), target, s.describe(0))
        _assert_own_view(s.json(1), target, s.describe(1))


def test_not_python():
    proc = du.sleeper()
    try:
        s = du.run_gdb(["py-bt-fast", "print 1+1", "py-bt-fast --all --reader debugger",
                        "py-bt-fast --reader pid --json", "print 3+3"], pid=proc.pid)
    finally:
        proc.kill()
        proc.wait()
    message = ("not a Python process (no _PyRuntime symbol, no .PyRuntime section, "
               "no runtime cookie in writable memory)")
    for i in (0, 2, 3):
        assert message in s[i], s.describe(i)
        assert "Traceback" not in s[i]
    assert "$1 = 2" in s[1] and "$2 = 6" in s[4], s.describe()


def test_no_process():
    s = du.run_gdb(["py-bt-fast", "print 5", "complete py-bt-fast --j",
                    "complete py-bt-fast --reader d"])
    assert "no process or core file" in s[0], s.describe(0)
    assert "$1 = 5" in s[1]
    assert "py-bt-fast --json" in s[2].splitlines(), s.describe(2)
    assert "py-bt-fast --reader debugger" in s[3].splitlines(), s.describe(3)


@pytest.mark.parametrize("version", VERSIONS)
def test_deep_stack(version, tmp_path):
    """Depth 1000, with both readers: every frame matches the target's view.
    (Timings are a benchmark: tests/bench/bench_debuggers.py.)"""
    with du.LiveTarget(du.python_for(version), depth=1000, workdir=str(tmp_path)) as target:
        commands = ["py-bt-fast --all --json", "py-bt-fast --all --json --reader debugger"]
        s = du.run_gdb(commands, pid=target.pid)
        assert len(target.threads[target.main_tid]) > 1000
        for i in range(len(commands)):
            _assert_own_view(s.json(i), target, s.describe(i))


_ONLY = {
    "symbol": "python PyframesGdbAdapter.objfiles = lambda self: []",
    "section": "python PyframesGdbAdapter.lookup_symbol = lambda self, name: None",
    "scan": ("python PyframesGdbAdapter.objfiles = lambda self: []; "
             "PyframesGdbAdapter.lookup_symbol = lambda self, name: None"),
}


@pytest.mark.parametrize("way", sorted(_ONLY))
def test_runtime_location_fallbacks(live, way):
    """Each way of finding _PyRuntime works alone (on the core file)."""
    exe = live.target.view["executable"]
    s = du.run_gdb([_ONLY[way], "py-bt-fast --all --json"], executable=exe, core=live.core)
    _assert_own_view(s.json(1), live.target, s.describe(1))


def test_unreadable_memory_message(live):
    """A read failure that leaves nothing to show is one actionable line."""
    exe = live.target.view["executable"]
    s = du.run_gdb(["py-bt-fast --all --json",
                    "python PyframesGdbAdapter.read = lambda self, addr, size: 1 / 0",
                    "py-bt-fast --all", "print 7"], executable=exe, core=live.core)
    _assert_own_view(s.json(0), live.target, s.describe(0))
    assert re.search(r"memory unreadable at 0x[0-9a-f]+ while reading \S", s[2]), s.describe(2)
    assert "the core file may not contain this memory" in s[2], s.describe(2)
    assert "Traceback" not in s[2]
    assert "$1 = 7" in s[3], s.describe(3)
