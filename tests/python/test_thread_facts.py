"""Live: each thread's name, GIL state and exception in flight
(Target.snapshot(facts=True)) against real CPython 3.13/3.14/3.15.

The target is targets/thread_facts.py: named and unnamed threading
threads, a _thread one (no Python name), threads inside ``except`` blocks
(ValueError with a non-ASCII message, KeyError under a running generator,
FileNotFoundError worded by OSError), and two pure-Python spinners that
pass the GIL between them.  The oracle is the target's own view
(facts.json): each thread's threading name, ident and sys.exception()
with its innermost traceback line.  The GIL moves every few milliseconds,
so it is checked on frozen states (SIGSTOP) for what must hold in every
one: at most one holder, always a spinner, and only spinners waiting.
"""

import json
import os
import signal

import pytest

from conftest import interpreter_params, require_interpreters
from livetarget import LiveTarget

FROZEN_STATES = 12


class Facts:
    def __init__(self, interp, target, truth, snapshots):
        self.interp, self.target, self.truth = interp, target, truth
        self.snapshots = snapshots  # each of a frozen state, facts=True

    @property
    def first(self):
        return self.snapshots[0]

    def threads(self, snapshot=None):
        return {t.native_thread_id: t for t in (snapshot or self.first).threads()}


def _frozen(target, pyframes, n):
    """n snapshots with facts, each of the target stopped."""
    out = []
    with pyframes.attach(target.pid) as t:
        for _ in range(n):
            os.kill(target.pid, signal.SIGSTOP)
            try:
                out.append(t.snapshot(facts=True))
            finally:
                os.kill(target.pid, signal.SIGCONT)
    return out


@pytest.fixture(scope="module", params=interpreter_params())
def facts(request, tmp_path_factory, pyframes):
    interp = request.param
    if interp is None:
        require_interpreters()
    workdir = tmp_path_factory.mktemp("facts-%s" % interp.name)
    # the file handshake: a stop and continue would end the FIFO's pending
    # write (a partial write returns), and the main thread with it
    with LiveTarget(interp.path, "thread_facts.py", workdir, handshake="file") as target:
        with open(os.path.join(target.workdir, "facts.json")) as f:
            truth = json.load(f)
        yield Facts(interp, target, truth, _frozen(target, pyframes, FROZEN_STATES))


def test_every_thread_is_there(facts):
    """The snapshot's threads are the target's (its _thread one too)."""
    want = {int(tid) for tid in facts.truth["threads"]} | {facts.truth["bare"]["native_id"]}
    assert set(facts.threads()) == want


def test_names_are_threadings(facts):
    """Every name is threading's, found in the target; the _thread thread,
    in no threading table, has none (never a guess)."""
    threads = facts.threads()
    for tid, seen in facts.truth["threads"].items():
        t = threads[int(tid)]
        assert t.thread_id == seen["ident"]
        assert (t.name, t.name_source) == (seen["name"], "python"), tid
    bare = threads[facts.truth["bare"]["native_id"]]
    assert (bare.name, bare.name_source) == (None, None)
    names = {t.name for t in threads.values()}
    assert {"ledger-writer", "auditor", "MainThread", "handler"} <= names
    assert any(n and n.startswith("Thread-") and n.endswith("(idle)") for n in names)


def test_exceptions_are_what_the_threads_handle(facts):
    """sys.exception() of every thread: type, str(), the innermost
    traceback line (found from tb_lasti: the target never asked for
    tb_lineno); None where it handles none."""
    threads = facts.threads()
    handled = 0
    for tid, seen in facts.truth["threads"].items():
        exc = threads[int(tid)].exception
        want = seen["exception"]
        if want is None:
            assert exc is None, (tid, exc)
            continue
        handled += 1
        assert exc is not None, tid
        assert (exc.type, exc.message, exc.file, exc.line, exc.handled) == (
            want["type"], want["message"], want["file"], want["line"], True), tid
    assert handled == 3
    assert threads[facts.truth["bare"]["native_id"]].exception is None


def test_gil_in_every_frozen_state(facts):
    """GIL builds: in every frozen state at most one thread holds the GIL,
    always a spinner (every other thread is blocked in a system call
    without it), and holds_gil agrees; on 3.15 only a spinner waits for it
    (3.13/3.14 publish no request: holds or no).  The spinners keep it
    locked nearly all the time: some state shows a holder."""
    spinners = set(facts.truth["spinners"])
    free_threaded = facts.first.python.free_threaded
    seen_holder = False
    for snap in facts.snapshots:
        threads = facts.threads(snap)
        if free_threaded:
            assert all(t.gil is None for t in threads.values())
            continue
        holders = {tid for tid, t in threads.items() if t.gil == "holds"}
        waiting = {tid for tid, t in threads.items() if t.gil == "waits"}
        assert len(holders) <= 1 and holders <= spinners, [
            (tid, threads[tid].name, [f.function for f in threads[tid].frames]) for tid in holders]
        assert all(t.holds_gil == (t.gil == "holds") for t in threads.values())
        assert all(t.gil in ("holds", "waits", "no") for t in threads.values())
        if snap.python.minor < 15:
            assert not waiting
        else:
            assert waiting <= spinners and not (waiting & holders)
        seen_holder |= bool(holders)
    if not free_threaded:
        assert seen_holder


def test_without_facts_nothing_changes(facts, pyframes):
    """A snapshot that does not ask for them has no names, gil or
    exception; holds_gil stays what it was (3.15 default builds only)."""
    with pyframes.attach(facts.target.pid) as t:
        snap = t.snapshot()
    for th in snap.threads():
        assert (th.name, th.name_source, th.gil, th.exception) == (None, None, None, None)
        if snap.python.minor < 15 or snap.python.free_threaded:
            assert th.holds_gil is None
