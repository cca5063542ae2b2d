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

from test_frame_cache import Steps, _by_tid

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
