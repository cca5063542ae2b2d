"""What a stuck asyncio task awaits at its leaf, its coroutine frames'
variables (``--tasks --locals``) and navigation into them (``py-task``),
against live CPython 3.14 and 3.15 (the versions whose tasks pyframes
reads), the command line, gdb and lldb.

The target is targets/stuck_service.py: tasks each waiting on something
else at its leaf (a bare Future, another task, asyncio.sleep, a Queue, an
Event, a Lock, a gather()).  The oracle is the target's own record
(service.json), read inside it through asyncio.all_tasks(): each task's
``_fut_waiter`` (the future it is blocked on, as the task itself says),
its coroutine stack through cr_await with each frame's locals and
``self``; and ``python -m asyncio pstree`` for the frames each task is
suspended in.
"""

import json
import re

import pytest

import conftest
import drivers
import task_oracle
import test_locks as tlocks

VERSIONS = ("3.14", "3.15")

#: What each task awaits (kind), and the name of the object its frames
#: give it (None: no object of asyncio's; the future is checked instead).
EXPECTED = {
    "fetcher": ("future", "self.response"),
    "supervisor": ("task", None),
    "heartbeat": ("sleep", None),
    "holder": ("sleep", None),
    "consumer": ("queue", "jobs"),
    "waiter": ("event", "shutdown"),
    "locker": ("lock", "db_lock"),
    "gatherer": ("gather", None),
}
#: The gather's two unnamed parts: an Event.
PART = ("event", "parts_done")


def _interpreters():
    chosen = [i for i in conftest.INTERPRETERS if i.kind == "release" and i.minor in VERSIONS]
    return [pytest.param(i, id=i.name) for i in chosen] or [pytest.param(None, id="none")]


@pytest.fixture(scope="module", params=_interpreters())
def service(request, tmp_path_factory):
    for target in conftest.recorded_target(request.param, tmp_path_factory,
                                           "stuck_service.py", "service.json"):
        target.by_name = {t["name"]: t for t in target.record["tasks"]}
        yield target


def _expected(service, task):
    kind, name = EXPECTED.get(task["name"], PART)
    return kind, name


def check_awaits(service, doc):
    """Each task's "awaits" against the record."""
    record = service.record
    rows = {t["id"]: t for t in doc["tasks"]}
    objects = record["objects"]
    for task in record["tasks"]:
        row = rows[task["id"]]
        awaits = row["awaits"]
        kind, name = _expected(service, task)
        assert awaits is not None, (task["name"], row)
        assert awaits["kind"] == kind, (task["name"], awaits)
        # the future the frame awaits is the one the task says it waits on
        assert awaits["future"] == task["fut_waiter"], (task["name"], awaits, task)
        if kind == "task":
            assert awaits["task"] == service.by_name["fetcher"]["id"], awaits
            assert awaits["text"] == 'task "fetcher" (0x%x)' % awaits["task"], awaits
        elif kind == "sleep":
            assert awaits["text"] == "asyncio.sleep(3600)", awaits
        elif kind in ("queue", "event", "lock"):
            # asyncio's object: the leaf frame's self, named as the task's
            # own frames name it
            assert awaits["address"] == objects[name] == task["coroutine_stack"][0]["self"], \
                (task["name"], awaits)
            assert awaits["name"] == name, awaits
        else:
            assert awaits["address"] == task["fut_waiter"], awaits
            assert awaits["type"] == task["fut_type"], awaits
            assert awaits["name"] == name, awaits


def test_cli_json(service, cli_env):
    res = tlocks.run_cli(cli_env, "dump", service.pid, "--tasks", "--json")
    assert res.returncode == 0, res.stderr.decode()
    check_awaits(service, json.loads(res.stdout))


def test_cli_text_and_pstree(service, cli_env):
    """The tree's ``awaits`` line of each task, after its innermost frame,
    which ``python -m asyncio pstree`` shows that task suspended in too."""
    res = tlocks.run_cli(cli_env, "dump", service.pid, "--tasks")
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    lines = out.splitlines()
    tree = task_oracle.asyncio_pstree(service.interp.path, service.pid)
    for task in service.record["tasks"]:
        head = next(i for i, x in enumerate(lines) if '"%s" (0x%x)' % (task["name"], task["id"])
                    in x)
        at = next(i for i in range(head + 1, len(lines)) if "awaits " in lines[i])
        leaf = task["coroutine_stack"][0]["function"]
        assert lines[at - 1].split()[-2] == leaf, (lines[at - 1], leaf)
        kind, name = _expected(service, task)
        text = lines[at].split("awaits ", 1)[1]
        if name is not None:
            assert re.search(r"%s <[\w.]+ at 0x%x>" % (re.escape(name), task["fut_waiter"] if
                                                        kind == "future" else
                                                        service.record["objects"][name]),
                             text), text
        if tree.returncode == 0:
            assert _pstree_leaves(tree.stdout)[task["name"]] == leaf, (leaf, tree.stdout)


def _pstree_leaves(text):
    """{task name: the function of its last frame} of pstree's tree: each
    frame line belongs to the nearest task line above it less indented."""
    tasks, leaves = [], {}
    for line in text.splitlines():
        m = re.search(r"\(T\) (.+)$", line)
        indent = len(line) - len(line.lstrip(" │├└─"))
        if m:
            tasks.append((indent, m.group(1).strip()))
            continue
        words = line.lstrip(" │├└─").split()
        owner = next((name for at, name in reversed(tasks) if at < indent), None)
        if owner is not None and len(words) == 2:
            leaves[owner] = words[0]
    return leaves


def test_cli_locals(service, cli_env):
    """--tasks --locals: each coroutine frame's variables under it (JSON
    and text), as the frame's own f_locals in the target."""
    res = tlocks.run_cli(cli_env, "dump", service.pid, "--tasks", "--locals", "--json")
    assert res.returncode == 0, res.stderr.decode()
    rows = {t["id"]: t for t in json.loads(res.stdout)["tasks"]}
    for task in service.record["tasks"]:
        frames = rows[task["id"]]["coroutine_stack"]
        assert [f["function"] for f in frames] == [f["function"] for f in
                                                   task["coroutine_stack"]], task["name"]
        for got, want in zip(frames, task["coroutine_stack"]):
            shown = {row["name"]: row["value"] for row in got["locals"]
                     if row["value"] is not None}
            assert shown == want["locals"], (task["name"], got["function"], shown, want)
    res = tlocks.run_cli(cli_env, "dump", service.pid, "--tasks", "--locals")
    out = res.stdout.decode()
    assert "    restarts = 0" in out and "    reason = 'maintenance'" in out, out


DRIVERS = drivers.selected()


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_debugger_tasks_and_py_task(service, driver):
    """py-bt-fast/pystack --tasks with the awaits lines; py-task lists the
    tasks, selects one's coroutine frames: py-frame, py-locals, py-up,
    py-locals, py-print of a coroutine's variable; py-task --thread goes
    back to the thread's frames."""
    driver.require(service.interp.name)
    consumer = service.by_name["consumer"]
    named = [("tree", "%s --tasks" % driver.command), ("list", "py-task"),
             ("select", "py-task consumer"), ("leaf", "py-locals"), ("up", "py-up"),
             ("outer", "py-locals"), ("print", "py-print handled"),
             ("top", "py-up"), ("by id", "py-task 0x%x" % service.by_name["waiter"]["id"]),
             ("waiter", "py-locals"), ("back", "py-task --thread"), ("thread", "py-frame")]
    s = driver.run(named, pid=service.pid)
    for task in service.record["tasks"]:
        assert '"%s" (0x%x)' % (task["name"], task["id"]) in s["tree"], s.describe("tree")
    assert s["tree"].count("awaits ") == len(service.record["tasks"]), s.describe("tree")
    listed = s["list"]
    for task in service.record["tasks"]:
        line = next(x for x in listed.splitlines() if '"%s" (0x%x)' % (task["name"], task["id"])
                    in x)
        assert ", awaits " in line, line
    assert "#0 " in s["select"] and "Queue.get" in s["select"], s.describe("select")

    def shown(text):
        return {k: v for k, v in re.findall(r"^\s*(\w+) = (.*)$", text, re.M)
                if v != "<unbound>"}
    assert shown(s["leaf"]) == consumer["coroutine_stack"][0]["locals"], s.describe("leaf")
    assert "#1 " in s["up"] and "consume" in s["up"], s.describe("up")
    assert shown(s["outer"]) == {k: v for k, v in consumer["coroutine_stack"][1]["locals"]
                                 .items()}, s.describe("outer")
    assert s["print"].strip() == "handled = []", s.describe("print")
    assert "no older Python frame" in s["top"] and 'task "consumer"' in s["top"], \
        s.describe("top")
    assert shown(s["waiter"]) == service.by_name["waiter"]["coroutine_stack"][0]["locals"], \
        s.describe("waiter")
    assert "#0 " in s["thread"] and "publish_and_block" in s["thread"], s.describe("thread")
