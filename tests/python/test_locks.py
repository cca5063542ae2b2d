"""Held locks, lock waits and deadlock cycles (pyframes.locks, ``--locks``)
against live CPython 3.13/3.14/3.15 (and pyenv's 3.13 when present), 3.12
and 3.11; and pyenv's 3.10, 3.9 and 3.8, which keep no value stack while a
frame runs: nothing is claimed there but what is true, and the output says
what is unknown (test_heap_versions_claim_nothing_false).

The target is targets/locks_scenario.py: the two-lock opposite-order
deadlock with Lock, with RLock and through a Condition's lock, a no-deadlock control (a thread inside
``with c: with d:`` and one waiting for c), and a thread waiting in an
explicit ``acquire()`` for a lock the main thread took explicitly.  The
oracle is the target's own record (locks.json): which locks each thread
took with ``with`` and still holds, which lock each thread then waits for.

On 3.14+ every hold, wait and cycle must be found, and no other.  On 3.11
to 3.13 the innermost frame of a thread blocked in C has no saved stack
pointer (3.12, 3.13: unset; 3.11: stale): read by the library alone (no
native state), its stack is unreadable (``holds`` null) and no wait (so no
cycle) is claimed; where the thread's native state says it waits on a lock
(the command line, gdb, lldb, cores), every wait and cycle must be found
from the frame's stack slots and marked inferred (pyframes.locks, "3.11 to
3.13, inferred").  The holds of the frames that called Python functions
must be found on every version, and nothing else claimed.
"""

import dataclasses
import json
import os
import re
import subprocess
import sys

import pytest

import conftest
import debugger_util as du
import drivers
from livetarget import LiveTarget
from pyframes import locks, model, render
from pyframes._abi import PYF_LOCAL_NO_STACK, PYF_LOCAL_UNSAVED

# What this module checks is told by the names of the interpreter's static
# functions in the debugger's unwind: its sessions load the -dbg packages'
# DWARF (debugger_util.DEBUGINFO).
_debuginfo = pytest.fixture(scope="module", autouse=True)(du.sessions_with_debuginfo)

CLI_TIMEOUT = 120
CYCLES = ({"ledger-writer", "auditor"}, {"r-one", "r-two"}, {"cv-one", "cv-two"})


def _interpreters():
    chosen = [i for i in conftest.INTERPRETERS if i.kind in ("release", "pyenv")]
    chosen += conftest.older_interpreters("all")
    return [pytest.param(i, id=i.name) for i in chosen] or [pytest.param(None, id="none")]


class Scenario(object):
    def expected_waits(self, native=False):
        """native id -> (lock address, holder native id or None); on 3.11
        to 3.13 only when the threads' native states were read
        (``native``)."""
        if self.minor < 14 and not native:
            return {}
        holder = {lock: int(tid) for tid, held in list(self.truth["holds"].items()) +
                  list(self.truth["acquired"].items()) for lock in held}
        return {int(tid): (lock, holder.get(lock))
                for tid, lock in self.truth["waits"].items()}

    def expected_holds(self):
        return {int(tid): set(held) for tid, held in self.truth["holds"].items()}

    def name_of(self, tid):
        return {v: k for k, v in self.truth["names"].items()}.get(tid)


@pytest.fixture(scope="module", params=_interpreters())
def scenario(request, tmp_path_factory):
    yield from live_scenario(request, tmp_path_factory, "locks")


def live_scenario(request, tmp_path_factory, name):
    """The Scenario of targets/NAME_scenario.py run by the fixture's
    interpreter, with its record (NAME.json) as ``truth``."""
    s = Scenario()
    s.interp = request.param
    if s.interp is None:
        conftest.require_interpreters()
    # the file handshake: a debugger's attach would interrupt a FIFO write
    with LiveTarget(s.interp.path, "%s_scenario.py" % name,
                    tmp_path_factory.mktemp("%s-%s" % (name, s.interp.name)),
                    handshake="file") as s.target:
        with open(os.path.join(s.target.workdir, "%s.json" % name)) as f:
            s.truth = json.load(f)
        s.minor = int(s.target.doc["hexversion"]) >> 16 & 0xFF
        yield s


def _mismatches(s, waits, cycles, holds, native=False):
    """What differs from the target's record: waits (native id -> (address,
    holder)), cycles (each a list of (native id, address, holder)), holds
    (native id -> set of addresses, over all its readable frames);
    ``native``: the threads' native states were read (3.11 to 3.13 infer
    waits)."""
    problems = []
    want = s.expected_waits(native)
    if waits != want:
        problems.append("waits %s, expected %s" % (waits, want))
    want_cycles = sorted(sorted(s.truth["names"][n] for n in c) for c in CYCLES) \
        if s.minor >= 14 or native else []
    got_cycles = sorted(sorted(tid for tid, _, _ in c) for c in cycles)
    if got_cycles != want_cycles:
        problems.append("cycles %s, expected %s" % (cycles, want_cycles))
    for cycle in cycles:
        for i, (tid, addr, held_by) in enumerate(cycle):
            if (addr, held_by) != want.get(tid) or \
                    held_by != cycle[(i + 1) % len(cycle)][0]:
                problems.append("cycle %s: %d's edge is not the record's" % (cycle, tid))
    for tid, held in s.expected_holds().items():
        if holds.get(tid, set()) != held:
            problems.append("thread %s (%d) holds %s, expected %s" % (
                s.name_of(tid), tid, holds.get(tid), held))
    for tid, held in holds.items():
        if held and tid not in s.expected_holds():
            problems.append("thread %d holds %s, expected nothing" % (tid, held))
    return problems


# ---- the library -------------------------------------------------------------------


def test_record_is_complete(scenario):
    names = scenario.truth["names"]
    assert set(scenario.truth["waits"]) == {str(names[n]) for n in (
        "ledger-writer", "auditor", "r-one", "r-two", "cv-one", "cv-two", "ctl-waiter",
        "explicit")}
    assert {int(k): len(v) for k, v in scenario.truth["holds"].items()} == {
        names["ledger-writer"]: 1, names["auditor"]: 1, names["r-one"]: 1,
        names["r-two"]: 1, names["cv-one"]: 1, names["cv-two"]: 1, names["ctl-holder"]: 2}


def test_library(scenario, pyframes):
    with pyframes.attach(scenario.target.pid) as t:
        snap = t.snapshot()
        threads = list(snap.threads())
        report = locks.analyze(t, threads, t.python.minor, source=render.SourceReader())
    waits = {tid: (w.lock.address, w.held_by) for tid, w in report.waits.items()}
    cycles = [[(w.native_thread_id, w.lock.address, w.held_by) for w in c]
              for c in report.cycles]
    holds = {}
    for thread in threads:
        for frame in thread.frames:
            for lock in report.holds.get(frame.frame_addr) or ():
                holds.setdefault(thread.native_thread_id, set()).add(lock.address)
    problems = _mismatches(scenario, waits, cycles, holds)
    assert not problems, "\n".join(problems)
    names = scenario.truth["names"]
    # an RLock's owner is the thread the lock records
    for name, other in (("r-one", "r-two"), ("r-two", "r-one")):
        wait = report.waits.get(names[name])
        if wait is not None:
            assert wait.lock.type_name == "_thread.RLock"
            assert wait.lock.owner_ident == scenario.truth["idents"][str(names[other])]
    # no native state read here: every wait is by the Python frame only
    assert all(w.confirmed is None for w in report.waits.values())
    # 3.11 to 3.13: the innermost frame of each blocked worker is
    # unreadable, and says why
    for name in names:
        thread = next(t for t in threads if t.native_thread_id == names[name])
        inner = thread.frames[0].frame_addr
        if scenario.minor in locks.RUNNING:
            assert report.holds[inner] is None and \
                "stack pointer not saved" in report.unreadable[inner], report.unreadable
        else:
            assert report.holds[inner] is not None, report.unreadable.get(inner)


def test_rlock_owner_layout(scenario, pyframes):
    """The RLock owner read from the object (value_layout.c: rlock_owner)
    is the ident its owner thread records, on every version."""
    names = scenario.truth["names"]
    with pyframes.attach(scenario.target.pid) as t:
        for lock, owner in (("r1", "r-one"), ("r2", "r-two")):
            addr = scenario.truth["locks"][lock]
            fv = t.frame_locals(_frame_holding(t, names[owner]), stack=True)
            found = [loc.value for loc in fv.locals if loc.kind == "stack" and
                     loc.value is not None and loc.value.addr == addr]
            found += [c for loc in fv.locals if loc.kind == "stack" and loc.value is not None
                      for c in loc.value.children if c.addr == addr]
            assert found, "RLock %s not on its holder's stack" % lock
            assert found[0].number == scenario.truth["idents"][str(names[owner])]
            assert found[0].type_name == "_thread.RLock"


def _frame_holding(t, tid):
    snap = t.snapshot(native_tid=tid)
    (thread,) = [th for th in snap.threads() if th.native_thread_id == tid]
    return next(f.frame_addr for f in thread.frames if f.function == "first_then")


def test_call_opcodes_are_the_interpreters(scenario):
    """locks.CALL_OPCODES and BEFORE_WITH equal the interpreter's own opcode
    numbers (3.11 and 3.12 number their specialized forms in dis._all_opmap;
    3.11's PRECALL family makes calls too)."""
    code = ("import dis, opcode, json; m = dict(opcode.opmap); "
            "m.update(getattr(opcode, '_specialized_opmap', {})); "
            "m.update(getattr(dis, '_all_opmap', {})); "
            "print(json.dumps(m))")
    res = subprocess.run([scenario.interp.path, "-c", code], capture_output=True,
                         timeout=60, check=True)
    opmap = json.loads(res.stdout)
    calls = {o for n, o in opmap.items() if (n == "CALL" or n.startswith("CALL_") or
                                             n.startswith("PRECALL") or
                                             n.startswith("INSTRUMENTED_CALL")) and
             "INTRINSIC" not in n and "FUNCTION_EX" not in n and not n.startswith("CALL_EX")}
    keyword = {o for n, o in opmap.items() if "CALL_KW" in n}
    assert locks.CALL_OPCODES[scenario.minor] == (frozenset(calls - keyword),
                                                  frozenset(keyword))
    assert locks.BEFORE_WITH.get(scenario.minor) == opmap.get("BEFORE_WITH")


# ---- the command line and the debuggers --------------------------------------------


def run_cli(env, *args):
    return subprocess.run([sys.executable, "-m", "pyframes"] + [str(a) for a in args],
                          capture_output=True, timeout=CLI_TIMEOUT, env=env,
                          stdin=subprocess.DEVNULL)


def _document(scenario, doc):
    """(waits, cycles, holds) of a JSON document (its waits and cycles
    inferred on 3.11 to 3.13 and only there)."""
    waits, holds = {}, {}
    inferred = scenario.minor in locks.RUNNING
    for interp in doc["interpreters"]:
        for thread in interp["threads"]:
            tid = thread["native_thread_id"]
            if thread["waits_for"] is not None:
                assert thread["waits_for"]["inferred"] is inferred, thread["waits_for"]
                waits[tid] = (thread["waits_for"]["address"], thread["waits_for"]["held_by"])
            for frame in thread["frames"]:
                for lock in frame["holds"] or ():
                    holds.setdefault(tid, set()).add(lock["address"])
    cycles = [[(e["native_thread_id"], e["waits_for"], e["held_by"]) for e in c]
              for c in doc["deadlocks"]]
    assert all(e["inferred"] is inferred for c in doc["deadlocks"] for e in c), doc["deadlocks"]
    return waits, cycles, holds


def test_cli_json(scenario, cli_env):
    res = run_cli(cli_env, "dump", scenario.target.pid, "--locks", "--json")
    assert res.returncode == 0, res.stderr.decode()
    doc = json.loads(res.stdout)
    problems = _mismatches(scenario, *_document(scenario, doc), native=True)
    assert not problems, "\n".join(problems)
    # the Condition's lock, held through the Condition
    cv = [lock for interp in doc["interpreters"] for thread in interp["threads"]
          for frame in thread["frames"] for lock in frame["holds"] or ()
          if lock["address"] == scenario.truth["locks"]["cv"]]
    assert len(cv) == 1 and cv[0]["type"] == "_thread.lock" and cv[0]["condition"], cv
    for interp in doc["interpreters"]:
        for thread in interp["threads"]:
            wait = thread["waits_for"]
            if wait is not None:
                assert set(wait) >= {"address", "type", "held_by", "confirmed", "inferred"}
                assert wait["type"] in locks.LOCK_TYPES


def test_cli_text(scenario, cli_env):
    res = run_cli(cli_env, "dump", scenario.target.pid, "--locks", "--all", "--no-source")
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode("utf-8")
    lines = out.splitlines()
    deadlocks = [line for line in lines if line.startswith("deadlock: ")]
    names = scenario.truth["names"]
    assert len(deadlocks) == len(CYCLES), out
    assert lines[0].startswith("deadlock: "), out  # the cycles first
    for line in deadlocks:
        # 3.11 to 3.13's are inferred and say so (their running frames keep
        # no stack pointer)
        assert line.endswith(" (%s)" % locks.INFERRED) is (scenario.minor in locks.RUNNING), \
            line
        line = line.replace(" (%s)" % locks.INFERRED, "")
        assert line.count(" waits for ") == 2 and ", which waits for " in line, line
        assert " held by an unknown thread" not in line, line
        kind = "_thread.RLock" if "RLock" in line else "_thread.lock"
        assert line.count("<%s at 0x" % kind) == 2, line
    # each lock named by the module global that holds it
    truth = scenario.truth["locks"]
    for cycle in (("a", "b"), ("r1", "r2"), ("cv", "f")):
        for key in cycle:
            assert "%s <_thread.%s at 0x%x>" % (GLOBALS[key], "RLock" if "r" in key else
                                                "lock", truth[key]) in out, (key, out)
    # the control: a wait, no cycle; the explicit one: held by the main
    # thread, past its lock_e.acquire() (threads by their threading names,
    # which the library reads)
    assert '"ctl-waiter" waits for lock_c <_thread.lock at 0x%x> held by "ctl-holder"' % (
        truth["c"]) in out, out
    explicit = 'waits for lock_e <_thread.lock at 0x%x> held by "MainThread"' % truth["e"]
    assert '"explicit" %s' % explicit in lines or '"explicit" %s (%s)' % (
        explicit, locks.INFERRED) in lines, out
    assert '  "MainThread" took lock_e <_thread.lock at 0x%x> in main (%s:%d) by ' \
        'lock_e.acquire() at line %d' % (truth["e"], scenario.target.script, *_lines_of(
            scenario.target.script, "    H.publish_truth(", "    lock_e.acquire()")) in lines, out
    # under its frame; confirmed by /proc's futex wait, or only by its frame;
    # on 3.11 to 3.13 inferred (the note said once, on top)
    note = r" \(inferred\)" if scenario.minor in locks.RUNNING else \
        r"( \(by its Python frame\))?"
    assert re.search(r"(?m)^      %s%s$" % (re.escape(explicit), note), out), out
    assert "      holds lock_e <_thread.lock at 0x%x> (lock_e.acquire() at line %d)" % (
        truth["e"], _lines_of(scenario.target.script, "    lock_e.acquire()")[0]) in lines, out
    assert "      holds lock_d <_thread.lock at 0x%x>" % truth["d"] in out
    # `with cond:` holds the Condition's lock, named with the Condition
    assert re.search(r"(?m)^      holds cond\._lock <_thread\.lock at 0x%x> \(the lock of "
                     r"cond <threading\.Condition at 0x[0-9a-f]+>\)$" % truth["cv"], out), out
    assert out.count(locks.INFERRED) == (len(CYCLES) + 2 if scenario.minor in locks.RUNNING
                                         else 0), out


@pytest.fixture(scope="module", params=[pytest.param(i, id=i.name)
                                        for i in conftest.HEAP_INTERPRETERS]
                or [pytest.param(None, id="none")])
def heap_scenario(request, tmp_path_factory):
    yield from live_scenario(request, tmp_path_factory, "locks")


def test_heap_versions_claim_nothing_false(heap_scenario, cli_env):
    """3.8 to 3.10 (no value stack while a frame runs): --locks says the
    holds and lock waits are unknown, every frame's holds null, and
    whatever wait or cycle it shows is the target's own (its record: which
    lock each thread holds and waits for), never a false one: the two-Lock
    deadlock is the true cycle or none."""
    s = heap_scenario
    res = run_cli(cli_env, "dump", s.target.pid, "--locks", "--json")
    assert res.returncode == 0, res.stderr.decode()
    doc = json.loads(res.stdout)
    assert doc["locks_unknown"] == locks.UNKNOWN
    want = s.expected_waits(native=True)
    rows = [t for i in doc["interpreters"] for t in i["threads"]]
    assert len(rows) >= 10, rows
    for thread in rows:
        assert all(f["holds"] is None for f in thread["frames"]), thread
        wait = thread["waits_for"]
        if wait is not None:
            address, holder = want[thread["native_thread_id"]]
            assert wait["address"] == address and wait["held_by"] in (None, holder), wait
    for cycle in doc["deadlocks"]:
        for i, edge in enumerate(cycle):
            assert (edge["waits_for"], edge["held_by"]) == want[edge["native_thread_id"]], cycle
            assert edge["held_by"] == cycle[(i + 1) % len(cycle)]["native_thread_id"], cycle
    text = run_cli(cli_env, "dump", s.target.pid, "--locks", "--no-source").stdout.decode()
    assert "(%s)\n" % locks.UNKNOWN in text, text
    assert text.count("deadlock: ") == len(doc["deadlocks"]), text


#: The module global of locks_scenario.py that holds each lock of its record.
GLOBALS = {"a": "lock_a", "b": "lock_b", "r1": "rlock_1", "r2": "rlock_2", "c": "lock_c",
           "d": "lock_d", "e": "lock_e", "cv": "cond._lock", "f": "lock_f"}


def _lines_of(path, *starts):
    """The line numbers of the first line starting with each of ``starts``."""
    with open(path) as f:
        lines = f.read().splitlines()
    return tuple(next(i + 1 for i, line in enumerate(lines) if line.startswith(start))
                 for start in starts)


DRIVERS = drivers.selected()


READERS = ("json", "debugger")


def debugger_run(scenario, driver):
    """The driver's session of ``--all --locks --json`` on the scenario's
    process, by the library's reader ("json") and the debugger's ("debugger")."""
    driver.require(scenario.interp.name)
    cmd = driver.command
    return driver.run([("json", "%s --all --locks --json" % cmd),
                       ("debugger", "%s --all --locks --json --reader debugger" % cmd)],
                      pid=scenario.target.pid)


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_debugger_locks(scenario, driver):
    s = debugger_run(scenario, driver)
    for name in READERS:
        problems = _mismatches(scenario, *_document(scenario, s.json(name)), native=True)
        assert not problems, "\n".join(problems) + "\n" + s.describe(name)


_CORE_DRIVERS = [d for d in DRIVERS if d.name != "lldb22"]  # lldb 21 reads cores as 22 does


def _core(scenario):
    """gdb's ELF core of the scenario's process (written once)."""
    if getattr(scenario, "core", None) is None:
        path = os.path.join(scenario.target.workdir, "locks.core")
        du.run_gdb(["gcore " + path], pid=scenario.target.pid, plugin=False)
        scenario.core = path if os.path.exists(path) else pytest.fail("gdb wrote no core")
    return scenario.core


@pytest.mark.parametrize("driver", _CORE_DRIVERS, ids=[d.name for d in _CORE_DRIVERS])
def test_core_locks(scenario, driver):
    """The core read by each debugger with --locks: the same holds, waits
    and cycles as the live process."""
    driver.require(scenario.interp.name)
    if not du.gdb_usable():
        pytest.skip("no gdb to write an ELF core")
    s = driver.run([("json", "%s --all --locks --json" % driver.command)],
                   executable=scenario.target.view["executable"], core=_core(scenario))
    problems = _mismatches(scenario, *_document(scenario, s.json("json")), native=True)
    assert not problems, "\n".join(problems) + "\n" + s.describe("json")


# ---- the graph, without a target ----------------------------------------------------


def _wait(tid, addr, held_by):
    return locks.Wait(native_thread_id=tid, lock=locks.Lock(addr, "_thread.lock"),
                      held_by=held_by)


def test_cycles_every_one_once_in_order():
    waits = {5: _wait(5, 0x10, 7), 7: _wait(7, 0x20, 9), 9: _wait(9, 0x30, 5),
             1: _wait(1, 0x40, 5),          # waits into a cycle: not in it
             2: _wait(2, 0x50, None),       # holder unknown
             3: _wait(3, 0x60, 4), 4: _wait(4, 0x70, 3),
             6: _wait(6, 0x80, 6)}          # waits for a lock it holds itself
    order = [1, 2, 4, 3, 9, 7, 5, 6]
    cycles = locks._cycles(waits, order)
    assert [[w.native_thread_id for w in c] for c in cycles] == [[4, 3], [9, 5, 7], [6]]


def test_text_of_a_cycle():
    report = locks.LockReport()
    a, b = model.Frame(function="f", filename="x.py", line=3, frame_addr=0x100), \
        model.Frame(function="g", filename="y.py", line=4, frame_addr=0x200)
    ta = model.Thread(thread_id=1, native_thread_id=11, frames=(a,), name="ledger-writer")
    tb = model.Thread(thread_id=2, native_thread_id=22, frames=(b,))
    report.threads = {11: ta, 22: tb}
    report.waits = {11: _wait(11, 0xA0, 22), 22: _wait(22, 0xB0, 11)}
    report.waiting = {11: (ta, a), 22: (tb, b)}
    report.taken = {0xA0: [(22, b)], 0xB0: [(11, a)]}
    report.holds = {0x100: (locks.Lock(0xB0, "_thread.lock"),), 0x200: ()}
    report.cycles = locks._cycles(report.waits, [11, 22])
    lines = locks.deadlock_lines(report)
    assert lines[0] == ('deadlock: "ledger-writer" waits for <_thread.lock at 0xa0> held by '
                        'thread 22, which waits for <_thread.lock at 0xb0> held by '
                        '"ledger-writer"')
    assert '  "ledger-writer" waits in f (x.py:3) (by its Python frame)' in lines
    assert "  thread 22 took <_thread.lock at 0xa0> in g (y.py:4)" in lines
    assert locks.frame_lines(report, ta, a, "  ") == [
        "  holds <_thread.lock at 0xb0>",
        "  waits for <_thread.lock at 0xa0> held by thread 22 (by its Python frame)"]
    doc = {"interpreters": [{"threads": [{"frames": [{}]}, {"frames": [{}]}]}]}
    locks.to_json(report, doc, [ta, tb])
    assert doc["deadlocks"] == [[{"native_thread_id": 11, "waits_for": 0xA0, "held_by": 22,
                                  "held_how": None, "inferred": False},
                                 {"native_thread_id": 22, "waits_for": 0xB0, "held_by": 11,
                                  "held_how": None, "inferred": False}]]
    assert doc["possible_deadlocks"] == []
    assert doc["interpreters"][0]["threads"][0]["frames"][0]["holds"] == [
        {"address": 0xB0, "type": "_thread.lock", "name": None}]
    assert doc["interpreters"][0]["threads"][0]["frames"][0]["acquired"] == []


def test_cli_one_thread_sees_every_holder(scenario, cli_env):
    """--thread N --limit 1 shows one thread, one frame; the holders and
    cycles are still read from every thread's every frame."""
    names = scenario.truth["names"]
    res = run_cli(cli_env, "dump", scenario.target.pid, "--locks", "--json", "--thread",
                  names["ctl-waiter"], "--limit", "1")
    assert res.returncode == 0, res.stderr.decode()
    doc = json.loads(res.stdout)
    (thread,) = [t for i in doc["interpreters"] for t in i["threads"]]
    assert len(thread["frames"]) == 1
    # 3.11 to 3.13's waits are inferred where a thread's native state is
    # read: the thread shown only, so its own wait and no cycle
    assert len(doc["deadlocks"]) == (len(CYCLES) if scenario.minor >= 14 else 0)
    assert thread["waits_for"]["held_by"] == names["ctl-holder"]
    assert thread["waits_for"]["address"] == scenario.truth["locks"]["c"]
    assert thread["waits_for"]["inferred"] is (scenario.minor in locks.RUNNING)


# ---- analyze() over a fake target: hostile and ambiguous stacks ------------------

CALL14 = 52  # 3.14's CALL (test_call_opcodes_are_the_interpreters checks the table)


def _v(kind, type_name, addr=0, data=None, number=0, children=()):
    return model.Value(kind=kind, type_name=type_name, addr=addr, data=data, number=number,
                       children=tuple(children))


def _lock(addr, rlock_owner=None):
    return _v("other", "_thread.RLock" if rlock_owner is not None else "_thread.lock", addr,
              number=rlock_owner or 0)


def _desc(name):
    return _v("other", "method_descriptor", 0x5000, data=name.encode())


class FakeTarget(object):
    """frame_locals(stack="only") over stacks given per frame address."""

    def __init__(self, stacks):
        self.stacks = stacks  # frame address -> ([values], opcode, oparg) or an exception

    def frame_locals(self, addr, **kw):
        assert kw["stack"] == "only"
        found = self.stacks[addr]
        if isinstance(found, Exception):
            raise found
        values, opcode, oparg = found
        return model.FrameValues(
            locals=tuple(model.Local(name="", kind="stack", value=v) for v in values),
            opcode=opcode, oparg=oparg)


def _thread(tid, ident, *addrs, entered=(), **facts):
    """A thread of frames at addrs, innermost first; those of ``entered``
    entered from C."""
    frames = tuple(model.Frame(function="f%x" % a, filename="m.py", line=1, frame_addr=a,
                               flags=model.FRAME_ENTRY_FROM_C if a in entered else 0)
                   for a in addrs)
    return model.Thread(thread_id=ident, native_thread_id=tid, frames=frames, **facts)


def test_analyze_hostile_and_ambiguous():
    from pyframes.errors import error_from_code, PYF_EFAULT
    stacks = {
        # thread 1: holds 0xA0 (3.14's __exit__ descriptor, lock), waits for 0xB0
        0x11: ([_desc("acquire"), _lock(0xB0)], CALL14, 0),
        0x12: ([_desc("__exit__"), _lock(0xA0)], CALL14, 0),
        # thread 2: holds 0xB0, waits for 0xA0 through the bound __enter__ (with)
        0x21: ([_desc("__exit__"), _lock(0xB0),
                _v("builtin", "builtin_function_or_method", 0x6000, b"__enter__",
                   children=[_lock(0xA0)]), None], CALL14, 0),
        # thread 3: waits for an RLock whose owner ident is garbage: no holder
        0x31: ([_desc("acquire"), _lock(0xC0, rlock_owner=0xDEAD)], CALL14, 0),
        # thread 4: at acquire but on CPU (native state): no wait
        0x41: ([_desc("acquire"), _lock(0xA0)], CALL14, 0),
        # thread 5: confirmed by its native state; 0xD0 held by two threads: unknown
        0x51: ([_desc("acquire"), _lock(0xD0)], CALL14, 0),
        0x61: ([_desc("__exit__"), _lock(0xD0)], None, None),
        0x71: ([_desc("__exit__"), _lock(0xD0)], None, None),
        # thread 8: the same pair but not at a CALL (opcode 1), a lock as a
        # plain argument (not a `with`), an unreadable frame
        0x81: ([_desc("acquire"), _lock(0xA0)], 1, 0),
        0x82: ([_v("builtin", "builtin_function_or_method", 0x7000, b"print"), None,
                _lock(0xE0)], CALL14, 1),
        0x83: error_from_code(PYF_EFAULT, "unreadable frame"),
        # thread 9: the callable position given by CALL's oparg: acquire(True, 5)
        0x91: ([_desc("acquire"), _lock(0xF0), _v("bool", "bool"), _v("int", "int")],
               CALL14, 2),
        # an empty stack
        0x92: ([], CALL14, 0),
    }
    threads = [_thread(1, 0x100, 0x11, 0x12), _thread(2, 0x200, 0x21),
               _thread(3, 0x300, 0x31), _thread(4, 0x400, 0x41, native="on CPU", on_cpu=True),
               _thread(5, 0x500, 0x51, native="waiting on a lock"), _thread(6, 0x600, 0x61),
               _thread(7, 0x700, 0x71), _thread(8, 0x800, 0x81, 0x82, 0x83),
               _thread(9, 0x900, 0x91, 0x92)]
    report = locks.analyze(FakeTarget(stacks), threads, 14)
    got = {tid: (w.lock.address, w.held_by, w.confirmed) for tid, w in report.waits.items()}
    assert got == {1: (0xB0, 2, None), 2: (0xA0, 1, None), 3: (0xC0, None, None),
                   5: (0xD0, None, True), 9: (0xF0, None, None)}
    assert [[w.native_thread_id for w in c] for c in report.cycles] == [[1, 2]]
    held = {a: [x.address for x in h] if h is not None else None
            for a, h in report.holds.items()}
    assert held[0x12] == [0xA0] and held[0x21] == [0xB0] and held[0x11] == []
    assert held[0x82] == [] and held[0x83] is None and "unreadable frame" in \
        report.unreadable[0x83]
    # no version's CALL table: no wait at all (never guessed)
    assert locks.analyze(FakeTarget(stacks), threads, 99).waits == {}


# ---- 3.13: waits inferred from the stack slots of a frame without a stack pointer ---

CALL13, BEFORE_WITH13 = 53, 2  # 3.13's CALL and BEFORE_WITH


def _bound(name, lock):
    return _v("builtin", "builtin_function_or_method", 0x6000, name.encode(),
              children=[lock])


class FakeTarget13(object):
    """frame_locals over 3.11 to 3.13 frames: ``saved`` stacks read as
    usual, the ``unsaved`` ones only with unsaved=True (every slot
    flagged), else one PYF_LOCAL_NO_STACK entry (a 3.11 frame that runs has
    both: its stale stack read as usual, its slots with unsaved=True)."""

    def __init__(self, saved, unsaved):
        self.saved, self.unsaved = saved, unsaved

    def frame_locals(self, addr, unsaved=False, **kw):
        assert kw["stack"] == "only"
        if unsaved and addr in self.unsaved:
            values, opcode, oparg = self.unsaved[addr]
            flags = PYF_LOCAL_UNSAVED
        elif addr in self.saved:
            values, opcode, oparg = self.saved[addr]
            flags = 0
        else:
            why = _v("unreadable", "", data=b"stack pointer not saved")
            return model.FrameValues(locals=(model.Local(name="", kind="stack",
                                                         flags=PYF_LOCAL_NO_STACK,
                                                         value=why),))
        return model.FrameValues(
            locals=tuple(model.Local(name="", kind="stack", flags=flags, value=v)
                         for v in values), opcode=opcode, oparg=oparg)


def test_analyze_313_inferred():
    """The lowest lock call in a 3.13 frame's slots is its wait when the
    thread's native state says it waits on a lock; what lies above is left
    over and never read as live; the wait, the holds below it and the cycle
    say they are inferred; nothing is inferred without that native state,
    for an outer frame, or from a saved stack."""
    lock_native = dict(native="waiting on a lock")
    unsaved = {
        # thread 1: `with a:` (3.13's bound __exit__, its result) then
        # b.acquire(); a left-over acquire of 0xC0 above
        0x11: ([_bound("__exit__", _lock(0xA0)), _v("bool", "bool"), _desc("acquire"),
                _lock(0xB0), _desc("acquire"), _lock(0xC0)], CALL13, 0),
        0x12: ([_bound("__exit__", _lock(0xC0)), None], CALL13, 0),  # outer: not inferred
        # thread 2: `with b:` then `with a:` (BEFORE_WITH, a on top); 0xD0 left over
        0x21: ([_bound("__exit__", _lock(0xB0)), _v("bool", "bool"), _lock(0xA0),
                _lock(0xD0)], BEFORE_WITH13, 0),
        # thread 3: the same as thread 1 but on CPU; thread 4: no native state
        0x31: ([_desc("acquire"), _lock(0xB0)], CALL13, 0),
        0x41: ([_desc("acquire"), _lock(0xB0)], CALL13, 0),
        # thread 5: a call that is no lock's (print(lock)): nothing inferred
        0x51: ([_v("builtin", "builtin_function_or_method", 0x7000, b"print"), None,
                _lock(0xE0)], CALL13, 1),
        # thread 6: acquire(True, 5): the call's arguments are live too
        0x61: ([_desc("acquire"), _lock(0xF0), _v("bool", "bool"), _v("int", "int")],
               CALL13, 2),
        # thread 7: the arguments do not fit under the slots: no call there
        0x71: ([_desc("acquire"), _lock(0xF0)], CALL13, 2),
    }
    saved = {0x81: ([_desc("acquire"), _lock(0x90)], CALL13, 0)}  # thread 8: read, not inferred
    threads = [_thread(1, 0x100, 0x11, 0x12, **lock_native),
               _thread(2, 0x200, 0x21, **lock_native),
               _thread(3, 0x300, 0x31, native="on CPU", on_cpu=True),
               _thread(4, 0x400, 0x41),
               _thread(5, 0x500, 0x51, **lock_native),
               _thread(6, 0x600, 0x61, **lock_native),
               _thread(7, 0x700, 0x71, **lock_native),
               _thread(8, 0x800, 0x81, **lock_native)]
    report = locks.analyze(FakeTarget13(saved, unsaved), threads, 13)
    got = {tid: (w.lock.address, w.held_by, w.inferred) for tid, w in report.waits.items()}
    assert got == {1: (0xB0, 2, True), 2: (0xA0, 1, True), 6: (0xF0, None, True),
                   8: (0x90, None, False)}, got
    held = {a: [x.address for x in h] if h is not None else None
            for a, h in report.holds.items()}
    assert held[0x11] == [0xA0] and held[0x21] == [0xB0], held
    assert held[0x12] is None and held[0x31] is None and held[0x41] is None and \
        held[0x51] is None and held[0x71] is None, held
    assert set(report.inferred) == {0x11, 0x21, 0x61}
    assert [[w.native_thread_id for w in c] for c in report.cycles] == [[1, 2]]
    (line,) = [x for x in locks.deadlock_lines(report) if x.startswith("deadlock: ")]
    assert line.endswith(" (%s)" % locks.INFERRED), line
    # said once, on top; "(inferred)" under the frames
    assert locks.frame_lines(report, threads[0], threads[0].frames[0], "  ") == [
        "  holds <_thread.lock at 0xa0> (inferred)",
        "  waits for <_thread.lock at 0xb0> held by thread 2 (inferred)"]
    top = locks.top_lines(report)
    assert sum(locks.INFERRED in x for x in top) == 1, top
    doc = {"interpreters": [{"threads": [{"frames": [{} for _ in t.frames]}
                                         for t in threads]}]}
    locks.to_json(report, doc, threads)
    row = doc["interpreters"][0]["threads"][0]
    assert row["waits_for"]["inferred"] is True
    assert row["frames"][0]["holds"] == [{"address": 0xA0, "type": "_thread.lock",
                                          "name": None, "inferred": True}]
    assert all(e["inferred"] for e in doc["deadlocks"][0])
    # the library alone (no native state): nothing inferred, as before
    plain = [dataclasses.replace(t, native=None) for t in threads]
    report = locks.analyze(FakeTarget13(saved, unsaved), plain, 13)
    assert set(report.waits) == {8} and report.inferred == {}


CALL12, CALL11, PRECALL11, BEFORE_WITH11 = 171, 171, 166, 53  # 3.12's and 3.11's


def test_analyze_311_312():
    """3.11 and 3.12 lay out a call as (method, self) or (NULL, callable),
    3.13's order the other way round is no call of a lock there; a 3.12
    running frame's stack is unset (the library says so), a 3.11 one's is
    stale: never read as it is, its slots inferred from for the innermost
    only (by its PRECALL too), a running frame further out (the caller of a
    frame entered from C) holds nothing."""
    lock_native = dict(native="waiting on a lock")
    unsaved = {
        # thread 1: b.acquire(): (the descriptor, the lock)
        0x11: ([_desc("acquire"), _lock(0xB0), _desc("acquire"), _lock(0xC0)], CALL12, 0),
        # thread 2: a bound acquire of a: (NULL, the bound method)
        0x21: ([None, _bound("acquire", _lock(0xA0))], CALL12, 0),
        # thread 3: 3.13's order: (the lock, the descriptor): no call of a lock
        0x31: ([_lock(0xA0), _desc("acquire")], CALL12, 0),
    }
    saved = {0x12: ([_bound("__exit__", _lock(0xA0)), _v("bool", "bool")], CALL12, 0),
             0x22: ([_bound("__exit__", _lock(0xB0)), _v("bool", "bool")], CALL12, 0)}
    threads = [_thread(1, 0x100, 0x11, 0x12, **lock_native),
               _thread(2, 0x200, 0x21, 0x22, **lock_native),
               _thread(3, 0x300, 0x31, **lock_native)]
    report = locks.analyze(FakeTarget13(saved, unsaved), threads, 12)
    got = {tid: (w.lock.address, w.held_by, w.inferred) for tid, w in report.waits.items()}
    assert got == {1: (0xB0, 2, True), 2: (0xA0, 1, True)}, got
    assert [[w.native_thread_id for w in c] for c in report.cycles] == [[1, 2]]

    # 3.11: every running frame's stack is stale (its last Python call's)
    stale = [_bound("__exit__", _lock(0xD0)), _v("bool", "bool"), _desc("acquire"),
             _lock(0xD0)]
    unsaved = {0x11: ([_desc("acquire"), _lock(0xB0)], PRECALL11, 0),
               0x21: ([_bound("__exit__", _lock(0xE0)), _v("bool", "bool"), _lock(0xA0)],
                      BEFORE_WITH11, 0),
               0x31: ([_desc("acquire"), _lock(0xB0)], CALL11, 0)}
    saved = {0x11: (stale, CALL11, 0), 0x21: (stale, CALL11, 0), 0x31: (stale, CALL11, 0),
             # thread 1's outer frames: the caller of a frame entered from C
             # (0x13, running: stale) and one that called Python (0x14)
             0x12: ([], CALL11, 0), 0x13: (stale, CALL11, 0),
             0x14: ([_bound("__exit__", _lock(0xA0)), _v("bool", "bool")], CALL11, 0),
             0x22: ([_bound("__exit__", _lock(0xB0)), _v("bool", "bool")], CALL11, 0)}
    threads = [_thread(1, 0x100, 0x11, 0x12, 0x13, 0x14, entered=(0x12,), **lock_native),
               _thread(2, 0x200, 0x21, 0x22, **lock_native),
               _thread(3, 0x300, 0x31)]  # no native state: nothing inferred
    report = locks.analyze(FakeTarget13(saved, unsaved), threads, 11)
    got = {tid: (w.lock.address, w.held_by, w.inferred) for tid, w in report.waits.items()}
    assert got == {1: (0xB0, 2, True), 2: (0xA0, 1, True)}, got
    held = {a: [x.address for x in h] if h is not None else None
            for a, h in report.holds.items()}
    assert held == {0x11: [], 0x12: [], 0x13: None, 0x14: [0xA0], 0x21: [0xE0],
                    0x22: [0xB0], 0x31: None}, held
    assert report.unreadable[0x13] == report.unreadable[0x31] == locks.STALE
    assert set(report.inferred) == {0x11, 0x21}
    assert [[w.native_thread_id for w in c] for c in report.cycles] == [[1, 2]]
