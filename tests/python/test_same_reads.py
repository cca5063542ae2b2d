"""A snapshot given again without a walk (replay.c, pyf_stats.same_reads)
is never a stale one: targets/cache_steps.py, driven one command at a
time, reports its own stack before each and blocks; several snapshots are
taken at each stop (from the third or fourth on, each is given again
while the target holds still), and every one of them must equal the
target's own view, on every interpreter, with the 3.15 frame cache on and
off.  The
moves between stops are the smallest a walk can see: the top frame's line
alone, a call, a return, a thread started."""

import pytest

import conftest
from test_frame_cache import Steps, _blocked_in_read, _by_tid

MOVES = ["s", "a", "s", "b", "r", "a" * 6, "s", "r", "t", "s", "r"]
PER_STOP = 5


@pytest.mark.parametrize("cache", [False, True], ids=["cache-off", "cache-on"])
def test_given_again_never_stale(pyframes, interp, cache):
    if cache and interp.minor != "3.15":
        pytest.skip("the frame cache is 3.15's")
    steps = Steps(interp.path)
    try:
        with pyframes.attach(steps.pid, cache=cache) as target:
            stops = 0
            for move in [""] + MOVES:
                if move:
                    steps.do(move)
                stops += 1
                for i in range(PER_STOP):
                    main = _by_tid(target.snapshot())[steps.pid]
                    got = [(f.function, f.line) for f in main.frames]
                    assert got == steps.view, "after %r, snapshot %d" % (move, i)
            stats = target.stats()
        # each stop's first snapshot walks (the bytes moved), the second
        # too (the first read more than its prefetch: what moved), a third
        # when the second did (a new code object, a thread's first frames);
        # the rest are given again
        assert stats["same_reads"] >= stops * (PER_STOP - 3), stats
        assert stats["snapshots"] == stops * PER_STOP
    finally:
        steps.close()


# ---- the threads' facts ------------------------------------------------------

facts_interp = conftest.interp_fixture("all", name="facts_interp")

# each a command of targets/facts_steps.py: the main thread or the worker
# renamed (back, too), while neither runs
RENAMES = ["m renamed-main", "w renamed-worker", "m MainThread", "w second-name",
           "m renamed-main"]


class FactsSteps(Steps):
    """targets/facts_steps.py, one command at a time: after each, every
    thread of it is blocked in read(2) again and ``view`` is its report."""

    script = "facts_steps.py"

    def _blocked(self, view):
        for which in ("main", "worker", "commander"):
            _blocked_in_read(self.pid, view[which], self.proc)
        return view

    def do(self, command):
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()
        self.view = self._stop()


@pytest.mark.parametrize("one", [False, True], ids=["every-thread", "main-thread"])
def test_facts_given_again_never_stale(pyframes, facts_interp, one):
    """A snapshot with the threads' facts given again without a walk
    (PYF_COPY_SAME_FACTS) never names a thread as it was named before:
    targets/facts_steps.py renames its main thread and a worker between
    stops while neither runs, so the walk of the main thread reads the same
    bytes at every stop; several snapshots with facts are taken at each stop
    (every thread, or the main thread's alone as py-bt-fast asks), and every
    name must be the one threading has at that stop.  A second target on
    the same process takes the same snapshots without facts: for the main
    thread's alone, its first one after each rename is given again (the
    walk saw nothing move: only the facts tell the rename, so a facts
    answer given again without reading them again would be stale)."""
    steps = FactsSteps(facts_interp.path)
    try:
        steps.do("w worker")  # what the first command moves, moved before
        main = steps.view["main"]
        walk = {"native_tid": main} if one else {}
        with pyframes.attach(steps.pid) as target, pyframes.attach(steps.pid) as plain:
            walk_again = []
            for move in [None] + RENAMES:
                if move:
                    steps.do(move)
                names = {int(tid): name for tid, name in steps.view["names"].items()}
                if one:
                    names = {main: names[main]}
                before = plain.stats()["same_reads"]
                for i in range(PER_STOP):
                    snap = target.snapshot(facts=True, **walk)
                    got = {t.native_thread_id: t.name for t in snap.threads()}
                    assert got == names, "after %r, snapshot %d" % (move, i)
                    plain.snapshot(**walk)
                    if i == 0:
                        walk_again.append(plain.stats()["same_reads"] - before)
            stats = target.stats()
        stops = 1 + len(RENAMES)
        # from the third or fourth snapshot of a stop on, each is given again
        assert stats["same_reads"] >= stops * (PER_STOP - 3), stats
        if one:
            # (3.14's walk reads its incremental GC's state with the
            # interpreter's, which every collection moves)
            if facts_interp.minor != "3.14":
                assert walk_again[1:] == [1] * len(RENAMES), walk_again
    finally:
        steps.close()
