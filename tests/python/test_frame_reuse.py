"""Frame objects kept across snapshots (the frame table, pyframes.h).

Against live CPython 3.11-3.15 processes (targets/steps.py): two
snapshots of an unchanged 1,000-deep stack return the same Frame objects;
when the top frame moves to another line only its object changes; a code
object freed and another made at the same address never shows the old
function, in the snapshot and in the stack command's text.  The expected
names and lines come from the target itself (it reports the line it blocks
on and its code object's address).
"""
import os
import subprocess
import time

import pytest

import conftest
from livetarget import target_env

interp = conftest.interp_fixture("all")

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = os.path.join(HERE, "targets", "steps.py")
READ_NR = {"x86_64": "0", "aarch64": "63"}.get(os.uname().machine)


class Steps(object):
    """targets/steps.py, stepped through its stops."""

    def __init__(self, python, depth):
        self.proc = subprocess.Popen([python, STEPS, str(depth)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=target_env())

    def stop(self):
        """Wait for the next stop: (function, code address, line), once the
        target is blocked in its read(2)."""
        line = self.proc.stdout.readline()
        if not line:
            raise AssertionError("steps.py ended: exit %r" % self.proc.poll())
        name, code, lineno = line.split()
        deadline = time.monotonic() + 60
        path = "/proc/%d/task/%d/syscall" % (self.proc.pid, self.proc.pid)
        while time.monotonic() < deadline:
            with open(path) as f:
                fields = f.read().split()
            if fields and (fields[0] == READ_NR or (READ_NR is None and fields[0] != "running")):
                return name.decode(), int(code), int(lineno)
            time.sleep(0.001)  # a condition of the kernel's, not a guessed delay
        raise AssertionError("steps.py did not block in read(2)")

    def step(self):
        self.proc.stdin.write(b"x")
        self.proc.stdin.flush()

    def close(self):
        self.proc.kill()
        self.proc.wait()


def main_frames(snapshot, pid):
    [thread] = [t for t in snapshot.threads() if t.native_thread_id == pid]
    return thread.frames


def test_unchanged_stack_same_objects_and_moved_top(interp, pyframes):
    steps = Steps(interp.path, 1000)
    try:
        name, code, line = steps.stop()
        with pyframes.attach(steps.proc.pid) as target:
            a = main_frames(target.snapshot(), steps.proc.pid)
            b = main_frames(target.snapshot(), steps.proc.pid)
            assert len(a) >= 1000
            assert (a[0].function, a[0].line, a[0].code_addr) == (name, line, code)
            assert a == b
            assert all(x is y for x, y in zip(a, b)), "an unchanged frame was rebuilt"
            assert isinstance(a, tuple)  # immutable: shared between snapshots
            # every level of the recursion is its own frame (its address)
            assert len({f.frame_addr for f in a}) == len(a)
            # limit: the innermost frames (the same objects), the rest counted
            [t10] = [t for t in target.snapshot(limit=10).threads()
                     if t.native_thread_id == steps.proc.pid]
            assert t10.complete and t10.error is None
            assert len(t10.frames) == 10 and t10.more_frames == len(a) - 10
            assert all(x is y for x, y in zip(a, t10.frames))

            steps.step()
            name2, code2, line2 = steps.stop()
            assert (name2, code2) == (name, code) and line2 == line + 2
            c = main_frames(target.snapshot(), steps.proc.pid)
            assert len(c) == len(a)
            assert (c[0].function, c[0].line) == (name, line2)
            assert c[0] is not a[0]
            assert all(x is y for x, y in zip(a[1:], c[1:])), \
                "frames below the moved one were rebuilt"
    finally:
        steps.close()


def test_code_object_reused_address(interp, pyframes):
    """Rounds until a new code object takes a freed one's address (it
    usually does at once); the snapshot must name the new function, and so
    must the stack command's text (render.format_threads_text, made twice
    at each of a round's two stops as two commands of a debugger make it,
    one source reader kept between them: the renderer keeps a frame's text
    by its frame-table record, never by an address), which names the top
    frame's new line at the second stop."""
    from pyframes import render
    depth = 20
    steps = Steps(interp.path, depth)
    reader = render.SourceReader()
    seen = {}
    reused = 0
    try:
        stop = steps.stop()  # the runtime is up: attach now
        with pyframes.attach(steps.proc.pid) as target:
            for _ in range(200):
                name, code, line = stop
                for second in (False, True):  # the round's two stops
                    if second:
                        steps.step()
                        name, code, line = steps.stop()
                    for _command in range(2):
                        reader.refresh()
                        [thread] = [t for t in target.snapshot().threads()
                                    if t.native_thread_id == steps.proc.pid]
                        top = thread.frames[0]
                        assert (top.function, top.filename, top.line, top.code_addr) == \
                            (name, "<round-%s>" % name[1:], line, code)
                        text = render.format_threads_text([thread], source=reader)
                        assert text.split("\n")[2] == '  File "<round-%s>", line %d, in %s' % (
                            name[1:], line, name), text[:500]
                        assert text.count(", in descend\n") == depth + 1
                if code in seen and seen[code] != name:
                    reused += 1
                    if reused >= 3:
                        break
                seen[code] = name
                steps.step()
                stop = steps.stop()
        assert reused >= 3, "no code object address was reused in 200 rounds"
    finally:
        steps.close()


@pytest.mark.parametrize("cache", [False, True], ids=["uncached", "cached"])
def test_unchanged_snapshots_are_the_same_object(interp, pyframes, cache):
    """Snapshots of an unchanged stack (pyf_snapshot_take_copy freed the
    snapshot: nothing changed) are the last Snapshot again, immutable
    (tuples all the way down); a snapshot that asked for more (tasks) or
    that the library compared with one taken on the same target outside
    Target.snapshot (as the sampler does) is not served from stale
    objects."""
    from pyframes import _abi
    steps = Steps(interp.path, 200)
    try:
        name, code, line = steps.stop()
        with pyframes.attach(steps.proc.pid, cache=cache) as target:
            snaps = [target.snapshot() for _ in range(4)]
            firsts = [main_frames(s, steps.proc.pid) for s in snaps]
            for s, frames in zip(snaps, firsts):
                assert (frames[0].function, frames[0].line, frames[0].code_addr) == \
                    (name, line, code)
                assert s == snaps[0] and frames == firsts[0]
            # the first is converted; from the second on nothing changed
            assert all(s is snaps[1] for s in snaps[2:])
            assert isinstance(snaps[1].interpreters, tuple)
            assert isinstance(snaps[1].interpreters[0].threads, tuple)
            assert isinstance(firsts[1], tuple)
            with pytest.raises(AttributeError):
                firsts[1].clear()
            # a request with tasks is its own snapshot, and the next plain
            # one is not that one
            if interp.version >= (3, 14):
                with_tasks = target.snapshot(tasks=True)
                assert with_tasks is not snaps[1]
                plain = target.snapshot()
                assert plain is not with_tasks and plain.tasks is None
                assert main_frames(plain, steps.proc.pid) == firsts[0]

            # the stack moves; a snapshot is taken on the same handle
            # outside Target.snapshot; then Target.snapshot again
            steps.step()
            name2, code2, line2 = steps.stop()
            assert line2 == line + 2
            out = _abi.POINTER(_abi.pyf_snapshot)()
            assert target._lib.pyf_snapshot_take(target._handle, None,
                                                 _abi.ctypes.byref(out)) == 0
            target._lib.pyf_snapshot_free(out)
            for _ in range(3):
                top = main_frames(target.snapshot(), steps.proc.pid)[0]
                assert (top.function, top.line, top.code_addr) == (name2, line2, code2)
    finally:
        steps.close()
