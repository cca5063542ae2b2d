"""The heap-frame versions (CPython 3.10, 3.9, 3.8: PyFrameObjects chained
by f_back) read while they change.

targets/aba_heap.py alternates two call chains whose nested frames come
from the interpreter's free list, so one chain's frames take the addresses
the other's just left, with other code objects: a walk that took one frame
from before a switch and its caller from after it would show one chain's
leaf over the other's callers, or a chain cut short.  The library reads a
running process's chain twice and shows it only when both reads agree
(native/src/frames_heap.c; docs/architecture.md, "When is a frame true?"):
without that second read, 10 of 20,000 snapshots of pyenv's 3.10 mixed
the chains on this kind of machine, without any check 1,465
(docs/benchmarks.md).  Oracle: the target's own two chains (their
function names, from its source), and that both are seen.
"""
import os
import subprocess

import pytest

from conftest import HEAP_INTERPRETERS, HEAP_VERSIONS, in_sandbox
from livetarget import target_env
from test_frame_cache import _cpus_apart

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(HERE, "targets")

# targets/aba_heap.py's two chains, outermost first
CHAINS = (("<module>", "main", "a_parent", "a_rec", "a_rec", "a_rec", "a_leaf"),
          ("<module>", "main", "b_parent", "b_rec", "b_rec", "b_rec", "b_leaf"))
SNAPSHOTS = 30000


def _params():
    found = {i.minor: i for i in HEAP_INTERPRETERS}
    return [pytest.param(found.get(v), v, id="pyenv-" + v) for v in HEAP_VERSIONS]


def _require(interp, version):
    if interp is None:
        message = "pyenv's CPython %s not found" % version
        if in_sandbox():
            pytest.fail(message)
        pytest.skip(message)


@pytest.mark.parametrize("interp,version", _params())
def test_heap_chains_never_mix(pyframes, interp, version):
    """30,000 snapshots of a target whose two chains take each other's
    frame addresses, the target on a CPU of its own beside the reader
    (where there are two): every stack shown is a whole chain the target
    has, top to bottom; a walk that cannot be read whole says so."""
    _require(interp, version)
    apart = _cpus_apart()
    proc = subprocess.Popen([interp.path, os.path.join(TARGETS, "aba_heap.py")],
                            stdout=subprocess.PIPE, env=target_env(),
                            preexec_fn=apart and (lambda: os.sched_setaffinity(0, apart[1])))
    mine = os.sched_getaffinity(0)
    try:
        assert proc.stdout.readline() == b"ready\n"
        if apart:
            os.sched_setaffinity(0, apart[0])
        with pyframes.attach(proc.pid) as target:
            assert target.python.minor == int(version.split(".")[1]), target.python
            mixed, failed, seen = [], 0, set()
            for _ in range(SNAPSHOTS):
                [thread] = list(target.snapshot().threads())
                if not thread.complete:
                    failed += 1
                    continue
                names = tuple(f.function for f in reversed(thread.frames))
                if not any(chain[:len(names)] == names for chain in CHAINS):
                    mixed.append(names)
                seen.add(names)
        assert not mixed, mixed[:5]
        # a stack read twice that differs is read again, up to eight times,
        # and a running process's top frame that has returned is read
        # again: on this target, whose leaves return every microsecond or
        # so, most snapshots end unread (counted, never shown); some must
        # be read whole
        assert failed < SNAPSHOTS - 100, failed
        for chain in CHAINS:
            assert any(s[-1] == chain[-1] and s == chain[:len(s)] for s in seen), (chain, seen)
    finally:
        os.sched_setaffinity(0, mine)
        proc.kill()
        proc.wait()
