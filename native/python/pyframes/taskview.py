"""Text views of a snapshot's asyncio tasks: a tree (who awaits whom, as
``python -m asyncio pstree`` draws it) and a table (as ``python -m asyncio
ps``).  Each keeps the order of CPython's tool: the tree goes from a task
down to the call it is suspended in (outermost first), the table lists a
stack innermost first (so does the JSON document: every frame list of
pyframes is innermost first).

Pure functions over model objects, like render.py, but for
:func:`read_awaits`, which reads what each task awaits at its leaf from
the target.  The await graph comes from each task's ``awaited_by``; a task
awaited by several is drawn under each of them (its subtree once, later as
a reference), and an await cycle is named, never followed.

What a stuck task awaits (:func:`read_awaits`): the object its innermost
coroutine frame is suspended on (the library flags it on the frame's value
stack, PYF_LOCAL_AWAITED: what ``cr_await`` gives; for ``await fut`` an
``_asyncio.FutureIter``, whose future the library reads), worded by what
asyncio's own leaf frames are (LEAF_FRAMES: ``asyncio.sleep``,
``Event.wait``, ``Queue.get``, ``Lock.acquire``...: the object is their
``self``), else by the future: another task, a ``gather()``, a bare
Future.  Each object is named as the task's frames refer to it
(pyframes.refnames).
"""

from dataclasses import dataclass
from typing import Optional

from . import errors, refnames
from ._abi import PYF_LOCAL_AWAITED
from .render import escape
from .values import render

__all__ = ["format_tasks", "format_task_tree", "format_task_table", "await_cycles",
           "task_label", "tasks_unavailable", "Awaited", "read_awaits", "LEAF_FRAMES"]

#: asyncio's coroutines a task is suspended in when it waits on one of
#: asyncio's objects, by (file ending, qualname): what the object (their
#: ``self``; asyncio.sleep: its ``delay``) is.  The same in 3.14 and 3.15.
LEAF_FRAMES = {
    ("asyncio/tasks.py", "sleep"): "sleep",
    ("asyncio/locks.py", "Event.wait"): "event",
    ("asyncio/locks.py", "Lock.acquire"): "lock",
    ("asyncio/locks.py", "Condition.wait"): "condition",
    ("asyncio/locks.py", "Semaphore.acquire"): "semaphore",
    ("asyncio/locks.py", "Barrier.wait"): "barrier",
    ("asyncio/queues.py", "Queue.get"): "queue",
    ("asyncio/queues.py", "Queue.put"): "queue",
}
#: The types of asyncio's futures a task may await (heap types of _asyncio,
#: asyncio.tasks' gather future).
TASK_TYPES = ("_asyncio.Task",)
GATHER_TYPE = "asyncio.tasks._GatheringFuture"
FUTURE_ITER = "_asyncio.FutureIter"


@dataclass(frozen=True)
class Awaited:
    """What a task's innermost coroutine frame awaits."""

    #: "sleep", "event", "lock", "condition", "semaphore", "barrier",
    #: "queue" (asyncio's object: ``address``), "task" (another task:
    #: ``task``), "gather", "future", "coroutine" or "other".
    kind: str
    #: The object (the Event, the Queue..., the future or task), 0 unknown.
    address: int = 0
    type_name: str = ""
    #: The name the task's frames give it (pyframes.refnames), else None.
    name: Optional[str] = None
    #: The future the frame awaits (``await fut``: what the task's
    #: ``_fut_waiter`` is), 0 when it awaits no future.
    future: int = 0
    #: The awaited task's id ("task").
    task: Optional[int] = None
    #: How the tree says it ("asyncio.sleep(3600)", 'task "fetch" (0x...)').
    text: str = ""

    def to_dict(self):
        return {"kind": self.kind, "address": self.address or None,
                "type": self.type_name or None, "name": self.name,
                "future": self.future or None, "task": self.task, "text": self.text}


def _leaf_kind(frame):
    filename = (frame.filename or "").replace("\\", "/")
    for (end, qualname), kind in LEAF_FRAMES.items():
        if frame.function == qualname and filename.endswith("/" + end):
            return kind
    return None


_LEAF_READ = dict(stack=True, max_depth=1, max_items=8, max_string=80, max_objects=256,
                  max_bytes=1 << 18)


def _object_text(addr, type_name, name):
    text = "<%s at 0x%x>" % (escape(type_name), addr)
    return "%s %s" % (escape(name), text) if name else text


def read_awaits(target, tasks, namer=None):
    """{task id: Awaited} of the tasks suspended in an await (a running
    task, or a frame that cannot be read, has none)."""
    namer = namer or refnames.Namer(target)
    by_id = {t.id: t for t in tasks}
    found = {}
    for task in tasks:
        if not task.coroutine_stack or task.running:
            continue
        leaf = task.coroutine_stack[0]
        try:
            fv = target.frame_locals(leaf.frame_addr, **_LEAF_READ)
        except errors.PyframesError:
            continue
        node = next((loc.value for loc in fv.locals if loc.kind == "stack" and
                     loc.flags & PYF_LOCAL_AWAITED and loc.value is not None), None)
        if node is None:
            continue
        local = {loc.name: loc.value for loc in fv.locals if loc.kind != "stack"}
        future = node.number if node.type_name == FUTURE_ITER and node.number > 0 else 0
        kind = _leaf_kind(leaf)
        frames = task.coroutine_stack
        if kind == "sleep":
            delay = local.get("delay")
            text = "asyncio.sleep(%s)" % (render(delay, target.python)
                                          if delay is not None else "?")
            awaited = Awaited(kind, future, "", None, future, None, text)
        elif kind is not None and local.get("self") is not None and local["self"].addr:
            obj = local["self"]
            name = namer.name(frames, obj.addr)
            awaited = Awaited(kind, obj.addr, obj.type_name, name, future, None, "%s() of %s" % (
                escape(leaf.function), _object_text(obj.addr, obj.type_name, name)))
        elif future:
            if future in by_id:
                other = by_id[future]
                awaited = Awaited("task", future, TASK_TYPES[0], None, future, future,
                                  "task %s" % task_label(other))
            else:
                try:
                    type_name = target.value(future, max_depth=1, max_items=1).type_name
                except errors.PyframesError:
                    type_name = ""
                name = namer.name(frames, future)
                kind = "gather" if type_name == GATHER_TYPE else "future"
                awaited = Awaited(kind, future, type_name, name, future, None, "%s %s" % (
                    "gather()" if kind == "gather" else "future",
                    _object_text(future, type_name, name)))
        else:
            kind = "coroutine" if node.kind in ("coroutine", "generator") else "other"
            name = namer.name(frames, node.addr)
            awaited = Awaited(kind, node.addr, node.type_name, name, 0, None,
                              _object_text(node.addr, node.type_name, name))
        found[task.id] = awaited
    return found


def tasks_unavailable(snapshot):
    """Why the snapshot holds no task at all (CPython 3.13, asyncio never
    imported, ...), as the message to show; None when tasks were read."""
    if snapshot.tasks:
        return None
    if snapshot.tasks is None and snapshot.tasks_error is None:
        return "asyncio tasks were not read"
    if snapshot.tasks_error:
        return "asyncio tasks are not available: %s" % escape(snapshot.tasks_error)
    return None


def format_tasks(snapshot, *, table=False, awaits=None, locals_of=None):
    """The lines of --tasks (a tree) or --table; a snapshot without tasks
    gives the one line saying why.  ``awaits`` and ``locals_of``: as
    format_task_tree's."""
    why = tasks_unavailable(snapshot)
    if why:
        return [why]
    tasks = snapshot.tasks or []
    if table:
        lines = format_task_table(tasks)
        if snapshot.tasks_error:
            lines.append("(task list incomplete: %s)" % escape(snapshot.tasks_error))
        return lines
    return format_task_tree(tasks, error=snapshot.tasks_error, awaits=awaits,
                            locals_of=locals_of)

_BRANCH, _LAST, _PIPE, _SPACE = "├── ", "└── ", "│   ", "    "


def task_label(task):
    """``"name" (0xID)``."""
    return '"%s" (0x%x)' % (escape(task.name), task.id)


def _where(frame):
    text = escape(frame.filename)
    if frame.line is not None:
        text += ":%d" % frame.line
    return "%s %s" % (escape(frame.function), text)


def _details(task):
    parts = [task.state]
    if task.running:
        parts.append("running")
    if task.native_thread_id is not None:
        parts.append("thread %d" % task.native_thread_id)
    elif task.thread_id is None:
        parts.append("thread exited")
    if task.error:
        parts.append("incomplete: " + escape(task.error))
    return ", ".join(parts)


def _children(tasks):
    """Task id -> the ids of the tasks it awaits (those listing it in
    their awaited_by), in the snapshot's order."""
    children = {t.id: [] for t in tasks}
    for t in tasks:
        for waiter in t.awaited_by:
            if waiter in children and t.id not in children[waiter]:
                children[waiter].append(t.id)
    return children


def await_cycles(tasks):
    """Each await cycle once, as a list of task ids (A awaits B awaits ...
    awaits A), in the order found."""
    children = _children(tasks)
    state, cycles, seen_sets = {}, [], set()
    for root in children:
        if state.get(root):
            continue
        # iterative DFS: (node, iterator over its children)
        path, index = [root], {root: 0}
        stack = [iter(children[root])]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                stack.pop()
                state[path.pop()] = 2
                continue
            if state.get(nxt) == 1 and nxt in index and index[nxt] < len(path) \
                    and path[index[nxt]] == nxt:
                cycle = path[index[nxt]:]
                key = frozenset(cycle)
                if key not in seen_sets:
                    seen_sets.add(key)
                    cycles.append(list(cycle))
                continue
            if state.get(nxt):
                continue
            state[nxt] = 1
            index[nxt] = len(path)
            path.append(nxt)
            stack.append(iter(children[nxt]))
    return cycles


def format_task_tree(tasks, *, error=None, awaits=None, locals_of=None):
    """Lines of the task tree, as pstree draws it: the tasks nothing awaits
    at the top; under each task its coroutine stack (its own coroutine
    first, the call it is suspended in last), then the tasks it awaits.
    ``error``: why the task list is incomplete, shown on top; ``awaits``:
    {task id: Awaited} (read_awaits), an ``awaits ...`` line after the
    innermost frame; ``locals_of(frame)``: lines under each coroutine
    frame (--locals)."""
    awaits = awaits or {}
    tasks = list(tasks)
    by_id = {t.id: t for t in tasks}
    children = _children(tasks)
    awaited = {c for kids in children.values() for c in kids}
    lines = []
    threads = {t.native_thread_id for t in tasks if t.native_thread_id is not None}
    lines.append("asyncio tasks: %d in %d thread%s%s" % (
        len(tasks), len(threads), "" if len(threads) == 1 else "s",
        "" if all(t.thread_id is not None for t in tasks) else
        " (and tasks of exited threads)"))
    if error:
        lines.append("  (task list incomplete: %s)" % escape(error))
    cycles = await_cycles(tasks)
    for cycle in cycles:
        names = [task_label(by_id[i]) for i in cycle] + [task_label(by_id[cycle[0]])]
        lines.append("await cycle: " + " awaits ".join(names))
    drawn = set()
    where = {}  # (function, filename, line) -> its text: tasks share frames

    def frame_text(frame):
        key = (frame.function, frame.filename, frame.line)
        text = where.get(key)
        if text is None:
            text = where[key] = _where(frame)
        return text

    def draw(task_id, prefix, last, path):
        task = by_id[task_id]
        lead = prefix + (_LAST if last else _BRANCH)
        inner = prefix + (_SPACE if last else _PIPE)
        if task_id in path:
            lines.append("%s(T) %s [await cycle: not followed]" % (lead, task_label(task)))
            return
        if task_id in drawn:
            lines.append("%s(T) %s [shown above]" % (lead, task_label(task)))
            return
        drawn.add(task_id)
        lines.append("%s(T) %s %s" % (lead, task_label(task), _details(task)))
        kids = children[task_id]
        frames = list(reversed(task.coroutine_stack))
        lead = inner + (_PIPE if kids else _SPACE)
        for frame in frames:
            lines.append(lead + frame_text(frame))
            if locals_of is not None:
                lines.extend(lead + "    " + line for line in locals_of(frame))
        if task_id in awaits:
            lines.append(lead + "awaits " + awaits[task_id].text)
        for i, kid in enumerate(kids):
            draw(kid, inner, i == len(kids) - 1, path | {task_id})

    roots = [t.id for t in tasks if t.id not in awaited]
    for i, root in enumerate(roots):
        draw(root, "", i == len(roots) - 1 and all(
            t.id in drawn or t.id in roots for t in tasks), frozenset())
    # what no root leads to: tasks in a cycle (and what they await)
    for t in tasks:
        if t.id not in drawn:
            draw(t.id, "", True, frozenset())
    return lines


def _chain(frames):
    """A coroutine stack as ``asyncio ps`` writes it: the function names,
    innermost first, joined by " -> "."""
    return " -> ".join(escape(f.function) for f in frames)


def format_task_table(tasks):
    """Lines of the table: one row per task and awaiter, with the columns
    of ``python -m asyncio ps`` (thread, task id, name, coroutine stack,
    awaiter chain, awaiter name and id) and the task's state after its
    name.  Stacks and chains are innermost first, as ``asyncio ps`` prints
    them: the coroutine the task is suspended in, ..., its own coroutine;
    the awaiter chain is the awaiting task's coroutine stack."""
    tasks = list(tasks)
    by_id = {t.id: t for t in tasks}
    header = ("thread", "task id", "task name", "state", "coroutine stack",
              "awaiter chain", "awaiter name", "awaiter id")
    rows = []
    for t in tasks:
        thread = ("%d" % t.native_thread_id if t.native_thread_id is not None
                  else "exited")
        base = (thread, "0x%x" % t.id, escape(t.name), t.state + (" running" if t.running else ""),
                _chain(t.coroutine_stack) or "-")
        if not t.awaited_by:
            rows.append(base + ("", "", ""))
        for waiter in t.awaited_by:
            w = by_id.get(waiter)
            rows.append(base + ((_chain(w.coroutine_stack) or "-") if w else "?",
                                escape(w.name) if w else "?", "0x%x" % waiter))
    widths = [len(h) for h in header]
    for row in rows:
        for i, cell in enumerate(row[:-1]):
            widths[i] = min(max(widths[i], len(cell)), 60)
    fmt = "  ".join("%%-%ds" % w for w in widths[:-1]) + "  %s"
    lines = [(fmt % header).rstrip(), "  ".join("-" * w for w in widths[:-1]) + "  " + "-" * 10]
    for row in rows:
        lines.append((fmt % tuple(c if len(c) <= 60 else c[:57] + "..." for c in row)).rstrip())
    return lines
