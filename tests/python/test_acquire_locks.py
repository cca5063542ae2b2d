"""Locks taken with acquire() (no ``with``) and locks named by what refers
to them (pyframes.acquired, pyframes.refnames, ``--locks``), against live
CPython 3.13/3.14/3.15 and 3.12, the command line and the debuggers.

The target is targets/acquire_scenario.py: three deadlocks built with
acquire() (module globals; ``self._lock`` and ``locks["accounts"]``; two
RLocks), a fourth that no frame can prove (each first lock taken in a
helper that returned), and a lock the main thread took with acquire()
after another thread had taken and released it.  The oracle is the
target's own record (acquire.json): what each thread took and still holds,
what it waits for, which threads make each cycle, and each expression of
its code that names each lock.

What must hold: every proven cycle reported as a deadlock, each edge's
holder the record's, plain locks' holders known "by acquire" and RLocks'
by their owner; the helper's cycle only as a possible cycle (never a
deadlock) whose candidates are the record's holders; the released lock
never said held; each lock named by one of the program's own expressions
for it (a module global where there is one).  On 3.12 and 3.13 the waits
are inferred from the threads' native states (the command line's /proc,
the debuggers), as for every lock wait there (test_locks.py).

Then the source reading itself (pyframes.acquired) on small functions:
definite, possible, released, rebound, timeouts, branches, loops, a source
that no longer matches the frame.
"""

import ast
import json

import pytest

import conftest
import drivers
import test_locks as tlocks
from pyframes import acquired, locks, model


@pytest.fixture(scope="module", params=conftest.release_params("representative"))
def scenario(request, tmp_path_factory):
    yield from tlocks.live_scenario(request, tmp_path_factory, "acquire")


#: The name each lock must be shown with (the nearest a person would
#: search for: a module global, an item or attribute of one).
NAMES = {"inventory_lock": "inventory_lock", "orders_lock": "orders_lock",
         "accounts": 'locks["accounts"]', "ledger": "ledger._lock",
         "journal_rlock": "journal_rlock", "index_rlock": "index_rlock",
         "left": 'spare["left"]', "right": 'spare["right"]', "report_lock": "report_lock"}


def _holder(truth):
    """lock id -> the native id of the thread the record says holds it."""
    return {lock: int(tid) for tid, held in truth["holds"].items() for lock in held}


def _tids(truth, names):
    return sorted(truth["names"][n] for n in names)


def check_document(s, doc):
    """The deadlocks, possible cycles, waits, holders and names of a
    --locks --json document against the scenario's record."""
    truth = s.truth
    holder = _holder(truth)
    by_id = {v: k for k, v in truth["locks"].items()}
    rows = {t["native_thread_id"]: t for i in doc["interpreters"] for t in i["threads"]}
    proven = [c for c in truth["deadlocks"] if c not in truth["unproven"]]
    got = sorted(sorted(e["native_thread_id"] for e in c) for c in doc["deadlocks"])
    assert got == sorted(_tids(truth, c) for c in proven), doc["deadlocks"]
    inferred = s.minor in locks.RUNNING
    for cycle in doc["deadlocks"]:
        for i, edge in enumerate(cycle):
            tid = edge["native_thread_id"]
            assert edge["waits_for"] == truth["waits"][str(tid)], edge
            assert edge["held_by"] == holder[edge["waits_for"]] == \
                cycle[(i + 1) % len(cycle)]["native_thread_id"], cycle
            rlock = by_id[edge["waits_for"]].endswith("rlock")
            assert edge["held_how"] == ("owner" if rlock else "acquire"), edge
            assert edge["inferred"] is inferred, edge
    # the helper's cycle: possible only, its candidates the record's holders
    (possible,) = doc["possible_deadlocks"]
    assert sorted(e["native_thread_id"] for e in possible) == \
        _tids(truth, truth["unproven"][0]), possible
    for edge in possible:
        assert edge["held_by"] is None and edge["may_be_held_by"] == holder[edge["waits_for"]]
        assert "a local refers to it" in edge["evidence"], edge
    # every wait: its lock, its holder (the main thread's report_lock; the
    # movers' unknown), its name
    for tid, lock in truth["waits"].items():
        wait = rows[int(tid)]["waits_for"]
        assert wait is not None and wait["address"] == lock, (tid, wait)
        unproven = any(int(tid) in _tids(truth, c) for c in truth["unproven"])
        assert wait["held_by"] == (None if unproven else holder[lock]), (tid, wait)
        name = by_id[lock]
        assert wait["name"] == NAMES[name], wait
        assert wait["name"] in truth["refers"][str(lock)]
    assert rows[truth["names"]["reporter"]]["waits_for"]["held_by"] == \
        truth["names"]["MainThread"]
    # the frames that took a lock by acquire(): the record's holds, proven
    # ones only; tidy (took report_lock and released it) holds nothing
    acquired_locks = {}
    for tid, row in rows.items():
        for frame in row["frames"]:
            for lock in frame["acquired"]:
                acquired_locks.setdefault(tid, set()).add(lock["address"])
                # named as the frame holding it names it
                assert lock["name"] in truth["refers"][str(lock["address"])], lock
                assert frame["line"] > lock["line"], (frame, lock)
    unproven = {t for c in truth["unproven"] for t in _tids(truth, c)}
    want = {int(tid): {x for x in held if not by_id[x].endswith("rlock")}
            for tid, held in truth["holds"].items() if int(tid) not in unproven}
    assert acquired_locks == {t: h for t, h in want.items() if h}, acquired_locks
    assert truth["names"]["tidy"] not in acquired_locks


def test_record_is_complete(scenario):
    truth = scenario.truth
    assert len(truth["waits"]) == 9 and len(truth["holds"]) == 9, truth
    assert all(len(c) == 2 for c in truth["deadlocks"])


def test_cli_json(scenario, cli_env):
    res = tlocks.run_cli(cli_env, "dump", scenario.target.pid, "--locks", "--json")
    assert res.returncode == 0, res.stderr.decode()
    check_document(scenario, json.loads(res.stdout))


def test_cli_text(scenario, cli_env):
    res = tlocks.run_cli(cli_env, "dump", scenario.target.pid, "--locks", "--all",
                         "--no-source")
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode("utf-8")
    lines = out.splitlines()
    truth = scenario.truth
    deadlocks = [x for x in lines if x.startswith("deadlock: ")]
    possible = [x for x in lines if x.startswith("possible cycle: ")]
    assert len(deadlocks) == 3 and len(possible) == 1, out
    assert lines[0].startswith("deadlock: "), out
    for line in deadlocks:
        assert "mover" not in line and "held by an unknown thread" not in line, line
    # named, as the program's code names them
    for key in ("inventory_lock", "orders_lock", "accounts", "ledger", "journal_rlock",
                "index_rlock"):
        text = "%s <_thread.%s at 0x%x>" % (NAMES[key], "RLock" if "rlock" in key else
                                            "lock", truth["locks"][key])
        assert any(text in x for x in deadlocks), (text, out)
    for key in ("left", "right"):
        assert "%s <_thread.lock at 0x%x>" % (NAMES[key], truth["locks"][key]) in possible[0]
    # where the holders took them
    assert any(x.endswith("by inventory_lock.acquire() at line %d" % tlocks._lines_of(
        scenario.target.script, "    inventory_lock.acquire()")[0]) for x in lines), out
    assert any(x.endswith("by self._lock.acquire() at line %d" % tlocks._lines_of(
        scenario.target.script, "        self._lock.acquire()")[0]) for x in lines), out
    assert "  (no proof of a deadlock" in out
    # each frame names what it holds as its code does
    assert "holds self._lock <_thread.lock at 0x%x> (self._lock.acquire() at line %d)" % (
        truth["locks"]["ledger"], tlocks._lines_of(scenario.target.script,
                                                   "        self._lock.acquire()")[0]) in out
    inferred = " (%s)" % locks.INFERRED
    assert all(x.endswith(inferred) is (scenario.minor in locks.RUNNING)
               for x in deadlocks + possible), out
    assert out.count(locks.INFERRED) == (5 if scenario.minor in locks.RUNNING else 0), out


DRIVERS = drivers.selected()


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_debugger_locks(scenario, driver):
    """gdb's and lldb's --locks: the same deadlocks, possible cycle, holders
    and names, by the library's reader and the debugger's."""
    s = tlocks.debugger_run(scenario, driver)
    for name in tlocks.READERS:
        try:
            check_document(scenario, s.json(name))
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, s.describe(name)))


# ---- the source reading, without a target --------------------------------------


def _frame(source, marker, function):
    """A Frame of ``function`` suspended in the call on the line holding
    ``marker`` (its span, as the position table gives it)."""
    lines = source.splitlines()
    line = next(i + 1 for i, x in enumerate(lines) if marker in x)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.lineno == line:
            return model.Frame(function=function, filename="m.py", line=line,
                               end_line=node.end_lineno, column=node.col_offset,
                               end_column=node.end_col_offset, frame_addr=1)
    raise AssertionError(marker)


SOURCE = '''
import threading
a = threading.Lock()
locks = {"k": threading.Lock()}

def straight(self):
    a.acquire()
    self._lock.acquire(True)
    got = locks["k"].acquire(blocking=True, timeout=-1)
    block()                                   # STRAIGHT

def released():
    a.acquire()
    a.release()
    b.acquire(timeout=5)
    if ready:
        c.acquire()
    d.acquire()
    block()                                   # RELEASED
    d.release()

def branch():
    if a.acquire(False):
        block()                               # TAKEN
    else:
        block()                               # NOT TAKEN

def loop(items):
    a.acquire()
    for item in items:
        block(item)                           # IN LOOP
        a.release()

def rebound(lock):
    lock.acquire()
    lock = other
    block()                                   # REBOUND

class K:
    def method(self):
        lock = self.locks[0]
        lock.acquire()
        try:
            block()                           # TRY
        finally:
            lock.release()
'''


def _got(marker, function):
    found = acquired.acquires(acquired.parse(SOURCE), _frame(SOURCE, marker, function))
    return [(a.expression, a.definite, a.why) for a in found]


def test_source_definite_and_possible():
    assert _got("# STRAIGHT", "straight") == [
        ("a", True, None), ("self._lock", True, None), ('locks["k"]', True, None)]
    # released since: gone; a timeout, a branch: possible; d: definite
    assert _got("# RELEASED", "released") == [
        ("b", False, "with a timeout"), ("c", False, "not on every path to here"),
        ("d", True, None)]
    # `if a.acquire(False):` taken in its body, never in its else
    assert _got("# TAKEN", "branch") == [("a", True, None)]
    assert _got("# NOT TAKEN", "branch") == []
    # released in the loop around the frame's position: an earlier turn
    # may have released it
    assert _got("# IN LOOP", "loop") == [("a", False, "released in a loop around here")]
    # the name now names another object: nothing
    assert _got("# REBOUND", "rebound") == []
    # try/finally: held in the try; a method's qualname
    assert _got("# TRY", "K.method") == [("lock", True, None)]


def test_source_that_does_not_match():
    """No claim from a source that is not what the frame runs: a position
    that is no call's span (the file edited since), an unknown function,
    a frame without a position, a file that does not parse."""
    frame = _frame(SOURCE, "# STRAIGHT", "straight")
    tree = acquired.parse(SOURCE)
    import dataclasses
    assert acquired.acquires(tree, dataclasses.replace(frame, column=frame.column + 1)) is None
    assert acquired.acquires(tree, dataclasses.replace(frame, function="elsewhere")) is None
    assert acquired.acquires(tree, dataclasses.replace(frame, end_column=None)) is None
    assert acquired.parse("def f(:\n") is None
    assert acquired.acquires(None, frame) is None


def test_expression_text():
    texts = {"a": "a", "self._lock": "self._lock", "locks['k']": 'locks["k"]',
             "x[0].y": "x[0].y", "d['a\"b']": "d['a\"b']", "f().x": None, "d[k]": None,
             "d[True]": None}
    for source, want in texts.items():
        assert acquired.expression_text(ast.parse(source, mode="eval").body) == want, source
