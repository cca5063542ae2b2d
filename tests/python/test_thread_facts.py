"""Live: each thread's name, GIL state and exception in flight
(Target.snapshot(facts=True)), its OS thread id and whether it is the main
thread, against real CPython 3.13/3.14/3.15 and pyenv's 3.12 and 3.11
(Debian's python3.11 too on the host) and 3.10, 3.9, 3.8 (which keep no
native thread id: the library finds it from the pthread handle).

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
import re
import subprocess
import sys

import pytest

import debugger_util as du
from conftest import HEAP_INTERPRETERS, interpreter_params, require_interpreters
from livetarget import LiveTarget, frozen

FROZEN_STATES = 12
# More frozen states, one at a time, until one shows the GIL's holder (the
# spinners pass it every 5 ms; on a loaded machine the one woken may wait
# for a CPU with the GIL free).
MORE_STATES = 400


class Facts:
    def __init__(self, interp, target, truth, snapshots, freeze):
        self.interp, self.target, self.truth = interp, target, truth
        self.snapshots = snapshots  # each of a frozen state, facts=True
        self.freeze = freeze  # (n, until) -> more such snapshots: _frozen

    @property
    def first(self):
        return self.snapshots[0]

    def threads(self, snapshot=None):
        return {t.native_thread_id: t for t in (snapshot or self.first).threads()}


def _frozen(target, pyframes, n, until=None):
    """Up to n snapshots with facts, each of the target frozen (every
    thread seen stopped), in one attach; with until, they end at the first
    one until is true of."""
    out = []
    with pyframes.attach(target.pid) as t:
        for _ in range(n):
            with frozen(target.pid):
                out.append(t.snapshot(facts=True))
            if until is not None and until(out[-1]):
                break
    return out


@pytest.fixture(scope="module", params=interpreter_params(older="all") + [
    pytest.param(i, id=i.name) for i in HEAP_INTERPRETERS])
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
        yield Facts(interp, target, truth, _frozen(target, pyframes, FROZEN_STATES),
                    lambda n, until: _frozen(target, pyframes, n, until))


def test_every_thread_is_there(facts):
    """The snapshot's threads are the target's (its _thread one too)."""
    want = {int(tid) for tid in facts.truth["threads"]} | {facts.truth["bare"]["native_id"]}
    assert set(facts.threads()) == want


def test_main_thread_is_the_targets(facts):
    """The one thread flagged main is threading.main_thread() (3.14+: the
    interpreter's threads.main; before: the main interpreter's thread on
    the process's first thread)."""
    assert [tid for tid, t in facts.threads().items() if t.is_main] == [facts.truth["main"]]


def test_dump_json_is_the_threads_own_view(facts, cli_env):
    """pyframes dump PID --json: every thread under its own
    threading.get_native_id(), its name and the exception it handles; the
    native wait, read through that id from /proc, of a
    thread blocked in os.read is a read."""
    out = subprocess.run([sys.executable, "-m", "pyframes", "dump", str(facts.target.pid),
                          "--json"], capture_output=True, timeout=120, env=cli_env,
                         stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    threads = {t["native_thread_id"]: t for i in doc["interpreters"] for t in i["threads"]}
    want = {int(tid) for tid in facts.truth["threads"]} | {facts.truth["bare"]["native_id"]}
    assert set(threads) == want
    for tid, seen in facts.truth["threads"].items():
        t = threads[int(tid)]
        assert (t["thread_id"], t["name"]) == (seen["ident"], seen["name"]), tid
        exc = t["exception"]
        want_exc = seen["exception"]
        assert (exc and (exc["type"], exc["message"], exc["file"], exc["line"])) == (
            want_exc and (want_exc["type"], want_exc["message"], want_exc["file"],
                          want_exc["line"])), tid
    assert {t["name"]: t["native"] for t in threads.values()}["ledger-writer"].startswith(
        "reading"), threads


@pytest.fixture(scope="module")
def gcore(facts, tmp_path_factory):
    """gdb's gcore of the facts target (the target lives on)."""
    du.require("gdb")
    path = str(tmp_path_factory.mktemp("gcore-%s" % facts.interp.name) / "facts.core")
    du.run_gdb(["gcore " + path], pid=facts.target.pid, plugin=False)
    assert os.path.exists(path), "gcore wrote no core"
    return path


def _headers(text):
    """{native id: header line} of a stack listing's thread headers."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'Thread 0x[0-9a-f]+ .*\(native (\d+),', line)
        if m:
            out[int(m.group(1))] = line
    return out


def _check_headers(facts, headers):
    want = {int(tid) for tid in facts.truth["threads"]} | {facts.truth["bare"]["native_id"]}
    assert set(headers) == want, headers
    for tid, seen in facts.truth["threads"].items():
        assert '"%s"' % seen["name"] in headers[int(tid)], headers[int(tid)]
    assert [tid for tid, line in headers.items() if ", main," in line] == [facts.truth["main"]]


def test_gcore_is_the_threads_own_view(facts, gcore, cli_env):
    """The core read by pyframes dump CORE: every thread under its own
    native id (3.8-3.10: the core's thread whose TLS base is the thread
    state's pthread handle), its name, and the main thread."""
    def dump(*args):
        out = subprocess.run([sys.executable, "-m", "pyframes", "dump", gcore] + list(args),
                             capture_output=True, timeout=120, env=cli_env,
                             stdin=subprocess.DEVNULL)
        assert out.returncode == 0, out.stderr
        return out.stdout.decode()
    threads = {t["native_thread_id"]: t for i in json.loads(dump("--json"))["interpreters"]
               for t in i["threads"]}
    for tid, seen in facts.truth["threads"].items():
        assert threads[int(tid)]["name"] == seen["name"], tid
    _check_headers(facts, _headers(dump()))


def test_gdb_reads_the_core_the_same(facts, gcore):
    """gdb on the same core (the debugger's reads, its threads' fs_base
    handed to the library): py-bt-fast --all heads every thread with its
    own native id, name and the main thread."""
    s = du.run_gdb(["py-bt-fast --all"], executable=facts.target.doc["executable"], core=gcore)
    _check_headers(facts, _headers(s[0]))


def test_lldb_reads_the_core_the_same(facts, gcore):
    """lldb on the same core: pystack --all heads every thread with its own
    native id, name and the main thread."""
    du.require("lldb")
    s = du.run_lldb(["pystack --all"], executable=facts.target.doc["executable"], core=gcore)
    _check_headers(facts, _headers(s[0]))


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
    # the default name, "Thread-N (idle)" (before 3.10: "Thread-N")
    assert any(n and n.startswith("Thread-") and (
        n.endswith("(idle)") or facts.first.python.minor < 10) for n in names)


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
    locked nearly all the time: some state shows a holder (more states are
    taken, each checked the same way, until one does)."""
    spinners = set(facts.truth["spinners"])
    if facts.first.python.free_threaded:
        for snap in facts.snapshots:
            assert all(t.gil is None for t in facts.threads(snap).values())
        return

    def holders_of(snap):
        threads = facts.threads(snap)
        holders = {tid for tid, t in threads.items() if t.gil == "holds"}
        waiting = {tid for tid, t in threads.items() if t.gil == "waits"}
        assert len(holders) <= 1 and holders <= spinners, [
            (tid, threads[tid].name, [f.function for f in threads[tid].frames]) for tid in holders]
        assert [t for t in threads.values() if t.holds_gil != (t.gil == "holds")] == []
        assert [t for t in threads.values() if t.gil not in ("holds", "waits", "no")] == []
        if snap.python.minor < 15:
            assert not waiting
        else:
            assert waiting <= spinners and not (waiting & holders)
        return holders

    seen_holder = any([holders_of(snap) for snap in facts.snapshots])
    more = [] if seen_holder else facts.freeze(MORE_STATES, holders_of)
    if more:
        seen_holder = bool(holders_of(more[-1]))
    assert seen_holder, "no holder in %d frozen states" % (len(facts.snapshots) + len(more))


def test_without_facts_nothing_changes(facts, pyframes):
    """A snapshot that does not ask for them has no names, gil or
    exception; holds_gil stays what it was (3.15 default builds only)."""
    with pyframes.attach(facts.target.pid) as t:
        snap = t.snapshot()
    for th in snap.threads():
        assert (th.name, th.name_source, th.gil, th.exception) == (None, None, None, None)
        if snap.python.minor < 15 or snap.python.free_threaded:
            assert th.holds_gil is None
