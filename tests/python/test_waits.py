"""What a thread blocked in the standard library waits on (pyframes.locks'
object waits, ``--locks``) against live CPython 3.13/3.14/3.15 (and pyenv's
when present), 3.12 and 3.11 (whose Thread.join blocks in
Thread._wait_for_tstate_lock).

3.10, 3.9 and 3.8 (pyenv's) name a frame by co_name alone: the same waits
are found by the method names of the same files, Condition.wait and
Event.wait (both ``wait``) told apart by ``self``'s type.

The target is targets/waits_scenario.py: a join cycle (two threads joining
each other), and threads blocked in Condition.wait, Event.wait,
Semaphore.acquire (and a BoundedSemaphore's), Queue.get on an empty queue,
Queue.put on a full one, Future.result of a pending future, an event
loop's run_until_complete, and a notified Condition.wait taking back an
RLock the main thread holds.  The oracle is the target's own record
(waits.json): the id() of the object each thread waits on (a Condition's
lock's too) and the native id of the thread each join waits for.  Every
version must find each of them (they are read from the frames' locals,
which 3.11 to 3.13 keep readable), the join cycle as the one deadlock, and
no other wait.
"""

import json

import pytest

import debugger_util as du
import test_locks as tl
from pyframes import locks, model

# Its sessions run without the -dbg packages' DWARF, as most users' do: the
# waits come from the names gdb and lldb still have (exported functions) and
# from the registers of a thread in a system call.  test_locks and
# test_thread_state_matrix read the same waits with DWARF
# (du.sessions_with_debuginfo); PYFRAMES_TEST_DEBUGINFO=1 gives it here too.


@pytest.fixture(scope="module", params=tl._interpreters() + [
    pytest.param(i, id=i.name) for i in tl.conftest.HEAP_INTERPRETERS])
def scenario(request, tmp_path_factory):
    yield from tl.live_scenario(request, tmp_path_factory, "waits")


def _expected(s, native=False):
    """native id -> (kind, address, held_by, Condition lock or None).  The
    thread taking a Condition's RLock back waits for the RLock's owner where
    its innermost stack is readable (3.14+) or inferred (3.11 to 3.13, the
    threads' native states read: ``native``), else (3.8 to 3.10 too, which
    keep no value stack while a frame runs) on the Condition."""
    want = {}
    for tid, w in s.truth["waits"].items():
        if w["kind"] != "reacquire":
            want[int(tid)] = (w["kind"], w["address"], w.get("joins"), w.get("lock"))
        elif s.minor >= 14 or (native and s.minor >= 11):
            want[int(tid)] = ("lock", w["lock"], w["holder"], None)
        else:
            want[int(tid)] = ("condition", w["address"], None, w["lock"])
    return want


def _check(s, waits, cycles, native=False):
    """waits: native id -> (kind, address, held_by, lock); cycles: lists of
    native ids; ``native``: as _expected."""
    want = _expected(s, native)
    problems = []
    if waits != want:
        problems.append("waits %s, expected %s" % (
            {k: v for k, v in waits.items() if want.get(k) != v},
            {k: v for k, v in want.items() if waits.get(k) != v}))
    names = s.truth["names"]
    if sorted(sorted(c) for c in cycles) != [sorted([names["join-a"], names["join-b"]])]:
        problems.append("cycles %s, expected the join cycle only" % cycles)
    return problems


def test_record_is_complete(scenario):
    assert len(scenario.truth["waits"]) == len(scenario.truth["names"]) == 11


def test_library(scenario, pyframes):
    with pyframes.attach(scenario.target.pid) as t:
        threads = list(t.snapshot().threads())
        report = locks.analyze(t, threads, t.python.minor)
    waits = {tid: (w.lock.kind, w.lock.address, w.held_by,
                   w.lock.lock.address if w.lock.lock else None)
             for tid, w in report.waits.items()}
    cycles = [[w.native_thread_id for w in c] for c in report.cycles]
    problems = _check(scenario, waits, cycles)
    assert not problems, "\n".join(problems)
    names = scenario.truth["names"]
    for name, other in (("join-a", "join-b"), ("join-b", "join-a")):
        wait = report.waits[names[name]]
        joined = next(th for th in threads if th.native_thread_id == names[other])
        assert wait.lock.thread_ident == joined.thread_id
        assert wait.lock.type_name == "threading.Thread"
    cond = report.waits[names["cond-waiter"]].lock
    assert cond.type_name == "threading.Condition" and cond.lock.type_name == "_thread.RLock"


def test_cli_json(scenario, cli_env):
    res = tl.run_cli(cli_env, "dump", scenario.target.pid, "--locks", "--json")
    assert res.returncode == 0, res.stderr.decode()
    doc = json.loads(res.stdout)
    for interp in doc["interpreters"]:
        for thread in interp["threads"]:
            w = thread["waits_for"]
            if w is not None:
                assert ("thread_ident" in w) == (w["kind"] == "join")
    problems = _check(scenario, *_document_waits(doc), native=True)
    assert not problems, "\n".join(problems)


def test_cli_text(scenario, cli_env):
    res = tl.run_cli(cli_env, "dump", scenario.target.pid, "--locks", "--all", "--no-source")
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode("utf-8")
    lines = out.splitlines()
    waits = {int(k): v for k, v in scenario.truth["waits"].items()}
    names = scenario.truth["names"]
    a, b = (waits[names[n]]["address"] for n in ("join-a", "join-b"))
    text = 'deadlock: "%s" waits for peers["%s"] <threading.Thread at 0x%x> held by "%s", ' \
        'which waits for peers["%s"] <threading.Thread at 0x%x> held by "%s"'
    # the cycle starts at its first thread in the snapshot, either one; each
    # Thread named by the module global that holds it (pyframes.refnames)
    cycles = (text % ("join-a", "join-b", a, "join-b", "join-a", b, "join-a"),
              text % ("join-b", "join-a", b, "join-a", "join-b", a, "join-b"))
    assert lines[0] in cycles, out
    assert [line for line in lines if line.startswith("deadlock: ")] == [lines[0]], out
    # each object named by the local its thread's code passed it in
    cond = waits[names["cond-waiter"]]
    assert "waits for cond <threading.Condition at 0x%x> (its lock cond._lock " \
        "<_thread.RLock at 0x%x>)" % (cond["address"], cond["lock"]) in out, out
    for name, kind in (("event-waiter", "threading.Event"),
                       ("sem-waiter", "threading.Semaphore"),
                       ("bsem-waiter", "threading.BoundedSemaphore"),
                       ("queue-getter", "queue.Queue"), ("queue-putter", "queue.Queue"),
                       ("future-waiter", "concurrent.futures._base.Future")):
        text = "waits for obj <%s at 0x%x>" % (kind, waits[names[name]]["address"])
        assert any(line.strip() in (text, text + " (by its Python frame)") for line in lines), \
            (name, out)
    assert "held by an unknown thread" not in out, out
    again = waits[names["cond-reacquirer"]]
    if scenario.minor <= 10:
        # no value stack while a frame runs: it waits on its Condition
        text = "waits for cond <threading.Condition at 0x%x> (its lock cond._lock " \
            "<_thread.RLock at 0x%x>)" % (again["address"], again["lock"])
        assert any(line.strip() == text for line in lines), out
        return
    text = '"cond-reacquirer" waits for cond._lock <_thread.RLock at 0x%x> held by ' \
        '"MainThread"' % again["lock"]
    if scenario.minor <= 13:  # inferred from the frame's stack slots (pyframes.locks)
        text += " (%s)" % locks.INFERRED
    assert text in lines, out


# ---- without a target ------------------------------------------------------------


def _frame(function, filename, addr):
    return model.Frame(function=function, filename=filename, line=1, frame_addr=addr)


def test_waited_frame_co_names():
    """3.8-3.10 frames (co_name only): the same waits by their method
    names, Condition.wait and Event.wait left to self's type."""
    lib = "/root/.pyenv/versions/3.8.18/lib/python3.8/"
    cond = _frame("wait", lib + "threading.py", 1)
    event = _frame("wait", lib + "threading.py", 2)
    get = _frame("get", lib + "queue.py", 3)
    join = _frame("join", lib + "threading.py", 4)
    tstate_lock = _frame("_wait_for_tstate_lock", lib + "threading.py", 5)
    user = _frame("work", "/app/main.py", 6)
    assert locks.waited_frame((cond, get, user)) == (get, "queue")
    assert locks.waited_frame((tstate_lock, join, user)) == (join, "join")
    frame, kind = locks.waited_frame((cond, event, user))
    assert frame is event and set(kind) == {("threading.py", "Condition.wait"),
                                            ("threading.py", "Event.wait")}
    assert locks.waited_frame((_frame("wait", "/app/mythreading.py", 7),)) is None
    assert locks.waited_frame((get, user)) is None
    sel = _frame("select", lib + "selectors.py", 8)
    until = _frame("run_until_complete", lib + "asyncio/base_events.py", 9)
    assert locks.waited_frame((sel, until, user)) == (until, "event_loop")
    rlock = tl._v("other", "_thread.RLock", 0x5000)
    target = _SelfTarget({2: _obj("threading.Event", 0x6000),
                          1: _obj("threading.Condition", 0x7000, _lock=rlock),
                          7: _obj("threading.Barrier", 0x8000)})
    assert locks.object_of(target, event, kind).kind == "event"
    got = locks.object_of(target, cond, kind)
    assert got.kind == "condition" and got.lock.address == 0x5000
    assert locks.object_of(target, _frame("wait", lib + "threading.py", 7), kind) is None


def test_waited_frame():
    lib = "/usr/lib/python3.14/"
    cond = _frame("Condition.wait", lib + "threading.py", 1)
    get = _frame("Queue.get", lib + "queue.py", 2)
    user = _frame("work", "/app/threading.py", 3)
    assert locks.waited_frame((cond, get, user)) == (get, "queue")
    assert locks.waited_frame((cond, user, get)) == (cond, "condition")
    # not blocked in a leaf: a Queue.get running Python, a user's own Condition
    assert locks.waited_frame((get, user)) is None
    assert locks.waited_frame((_frame("Condition.wait", "/app/mythreading.py", 4),)) is None
    assert locks.waited_frame(()) is None
    sel = _frame("EpollSelector.select", lib + "selectors.py", 5)
    once = _frame("BaseEventLoop._run_once", lib + "asyncio/base_events.py", 6)
    until = _frame("BaseEventLoop.run_until_complete", lib + "asyncio/base_events.py", 7)
    assert locks.waited_frame((sel, once, until, user)) == (until, "event_loop")
    assert locks.waited_frame((sel, user)) is None


class _SelfTarget(object):
    """frame_locals: ``self`` given per frame address."""

    def __init__(self, selves):
        self.selves = selves

    def frame_locals(self, addr, **kw):
        if "stack" in kw:
            raise tl.locks.errors.PyframesError("no stack here")
        return model.FrameValues(locals=(model.Local(name="self", kind="arg",
                                                     value=self.selves.get(addr)),))


def _obj(type_name, addr, **attrs):
    children = []
    for name, value in attrs.items():
        children += [tl._v("str", "str", data=name.encode()), value]
    return tl._v("other", type_name, addr, children=children)


def _ident(n):
    return tl._v("int", "int", data=n.to_bytes(4, "little"), number=1)


def test_object_waits_over_fakes():
    lib = "/usr/lib/python3.13/threading.py"
    join = lambda a: _frame("Thread.join", lib, a)  # noqa: E731
    selves = {0x10: _obj("Thread", 0xA0, _ident=_ident(0x200)),
              0x20: _obj("Thread", 0xB0, _ident=_ident(0x100)),
              0x30: _obj("Thread", 0xC0, _ident=_ident(0x999)),   # no such thread
              0x40: _obj("Condition", 0xD0, _lock=tl._lock(0xE0)),
              0x50: tl._v("unreadable", "", 0, data=b"bad"),       # nothing said
              0x60: _obj("Thread", 0xF0, _ident=_ident(0x100))}    # on CPU
    threads = [tl._thread(1, 0x100, 0x10), tl._thread(2, 0x200, 0x20),
               tl._thread(3, 0x300, 0x30), tl._thread(4, 0x400, 0x40),
               tl._thread(5, 0x500, 0x50), tl._thread(6, 0x600, 0x60, native="on CPU",
                                                      on_cpu=True)]
    frames = {1: join(0x10), 2: join(0x20), 3: join(0x30),
              4: _frame("Condition.wait", lib, 0x40), 5: join(0x50), 6: join(0x60)}
    threads = [model.Thread(thread_id=t.thread_id, native_thread_id=t.native_thread_id,
                            frames=(frames[t.native_thread_id],), native=t.native,
                            on_cpu=t.on_cpu) for t in threads]
    report = locks.analyze(_SelfTarget(selves), threads, 13)
    got = {tid: (w.lock.kind, w.lock.address, w.held_by) for tid, w in report.waits.items()}
    assert got == {1: ("join", 0xA0, 2), 2: ("join", 0xB0, 1), 3: ("join", 0xC0, None),
                   4: ("condition", 0xD0, None)}
    assert [[w.native_thread_id for w in c] for c in report.cycles] == [[1, 2]]
    assert report.waits[4].lock.text() == \
        "<Condition at 0xd0> (its lock <_thread.lock at 0xe0>)"
    assert locks.frame_lines(report, threads[3], threads[3].frames[0], "") == [
        "waits for <Condition at 0xd0> (its lock <_thread.lock at 0xe0>) "
        "(by its Python frame)"]
    assert locks.deadlock_lines(report)[0] == (
        "deadlock: thread 1 waits for <Thread at 0xa0> held by thread 2, which waits "
        "for <Thread at 0xb0> held by thread 1")


def _document_waits(doc):
    """(waits, cycles) of a JSON document, as _check takes them."""
    waits = {}
    for interp in doc["interpreters"]:
        for thread in interp["threads"]:
            w = thread["waits_for"]
            if w is not None:
                waits[thread["native_thread_id"]] = (
                    w["kind"], w["address"], w["held_by"],
                    w["lock"]["address"] if "lock" in w else None)
    return waits, [[e["native_thread_id"] for e in c] for c in doc["deadlocks"]]


@pytest.mark.parametrize("driver", tl.DRIVERS, ids=[d.name for d in tl.DRIVERS])
def test_debugger_waits(scenario, driver):
    """The debuggers' commands (the library's reader and the debugger's)."""
    s = tl.debugger_run(scenario, driver)
    for name in tl.READERS:
        problems = _check(scenario, *_document_waits(s.json(name)), native=True)
        assert not problems, "\n".join(problems) + "\n" + s.describe(name)


@pytest.mark.parametrize("driver", tl._CORE_DRIVERS, ids=[d.name for d in tl._CORE_DRIVERS])
def test_core_waits(scenario, driver):
    """gdb's core of the process read by each debugger: the same waits and
    the join cycle (all read from memory the core keeps)."""
    driver.require(scenario.interp.name)
    if not tl.du.gdb_usable():
        pytest.skip("no gdb to write an ELF core")
    s = driver.run([("json", "%s --all --locks --json" % driver.command)],
                   executable=scenario.target.view["executable"], core=tl._core(scenario))
    problems = _check(scenario, *_document_waits(s.json("json")), native=True)
    assert not problems, "\n".join(problems) + "\n" + s.describe("json")
