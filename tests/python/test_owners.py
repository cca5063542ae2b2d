"""Live: each generator-owned frame named by its owner (generator,
coroutine, async generator) against real CPython 3.13/3.14/3.15.

The target is targets/owners.py: threads blocked inside a generator, a
coroutine, an async generator and a ``@types.coroutine`` generator, and (on
3.14+, where tasks are read) a task suspended inside an async generator.
The oracle is the target's own: ``inspect.isgenerator`` /
``iscoroutine`` / ``isasyncgen`` of every such object it made, by its code's
qualified name (owners.json); every other frame must name no owner.
"""

import json
import os

import pytest

from conftest import scenario_params, start_scenario
from pyframes import render

TAGS = {None: "", "generator": " [generator]", "coroutine": " [coroutine]",
        "async_generator": " [async generator]"}
# what each thread blocks in, innermost first: (function, owner)
EXPECTED = {
    "generator": [("produce", "generator"), ("drive_generator", None)],
    "coroutine": [("handle", "coroutine"), ("serve", "coroutine"),
                  ("drive_coroutine", None)],
    "async-generator": [("ticks", "async_generator"), ("consume_ticks", "coroutine"),
                        ("drive_async_generator", None)],
    "types-coroutine": [("legacy_wait", "generator"), ("use_legacy", "coroutine"),
                        ("drive_types_coroutine", None)],
}


class Owners:
    def __init__(self, interp, target, facts, snapshot):
        self.interp, self.target, self.facts, self.snapshot = interp, target, facts, snapshot


@pytest.fixture(scope="module", params=scenario_params(["owners"], older="representative"))
def owners(request, tmp_path_factory, pyframes):
    with start_scenario(request.param, tmp_path_factory, "owners-") as target:
        with open(os.path.join(target.workdir, "owners.json")) as f:
            facts = json.load(f)
        tasks = target.version_info[:2] >= (3, 14)
        with pyframes.attach(target.pid) as t:
            snap = t.snapshot(tasks=tasks)
        yield Owners(request.param[0], target, facts, snap)


def _thread(o, name):
    tid = o.target.tid_by_name()[name]
    threads = [t for t in o.snapshot.threads() if t.native_thread_id == tid]
    assert len(threads) == 1, (name, tid)
    return threads[0]


def test_the_target_made_each_kind(owners):
    """The oracle itself: inspect's verdict on the objects made."""
    got = owners.facts["owners"]
    want = {f: kind for frames in EXPECTED.values() for f, kind in frames if kind}
    want.update(stream="async_generator", read_stream="coroutine", loop_main="coroutine")
    assert got == want


def test_every_frame_names_its_owner(owners):
    """Every frame of every thread: the owner the target's objects say,
    none for a frame of a plain call; the flags keep PYF_FRAME_GENERATOR."""
    known = owners.facts["owners"]
    problems = []
    for thread in owners.snapshot.threads():
        for f in thread.frames:
            want = known.get(f.function)
            if f.owner != want or f.is_generator != (want is not None):
                problems.append("thread %s: %s owner %r (flags 0x%x), expected %r"
                                % (thread.native_thread_id, f.function, f.owner, f.flags,
                                   want))
    assert not problems, "\n".join(problems)
    for name, frames in EXPECTED.items():
        got = [(f.function, f.owner) for f in _thread(owners, name).frames]
        assert got[:len(frames)] == frames, name


def test_text_and_json_name_the_owner(owners):
    for name, frames in EXPECTED.items():
        thread = _thread(owners, name)
        lines = [line for line in render.format_thread(thread, show_source=False)
                 if line.startswith("  File ")]
        for (function, owner), line in zip(frames, lines):
            assert line.endswith(", in %s%s" % (function, TAGS[owner])), line
        doc = thread.to_dict()["frames"]
        assert [f.get("owner") for f in doc[:len(frames)]] == [k for _, k in frames]
        assert all(("owner" in f) == (f.get("owner") is not None) for f in doc)


def test_suspended_task_stack_names_its_owners(owners):
    """A task suspended in ``async for`` over an async generator (3.14+):
    its coroutine stack is the async generator's frame, then the task's
    coroutine."""
    if owners.target.version_info[:2] < (3, 14):
        pytest.skip("asyncio tasks are read on CPython 3.14+")
    assert owners.snapshot.tasks_error is None
    tasks = {t.name: t for t in owners.snapshot.tasks}
    stack = [(f.function, f.owner) for f in tasks["reader"].coroutine_stack]
    assert stack == [("stream", "async_generator"), ("read_stream", "coroutine")]
    running = [(f.function, f.owner) for f in _thread(owners, "loop").frames[:1]]
    assert running == [("loop_main", "coroutine")]
