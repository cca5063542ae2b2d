"""Text views of a snapshot's asyncio tasks: a tree (who awaits whom, as
``python -m asyncio pstree`` draws it) and a table (as ``python -m asyncio
ps``).  Each keeps the order of CPython's tool: the tree goes from a task
down to the call it is suspended in (outermost first), the table lists a
stack innermost first (so does the JSON document: every frame list of
pyframes is innermost first).

Pure functions over model objects, like render.py.  The await graph comes
from each task's ``awaited_by``; a task awaited by several is drawn under
each of them (its subtree once, later as a reference), and an await cycle
is named, never followed.
"""

from .render import escape

__all__ = ["format_tasks", "format_task_tree", "format_task_table", "await_cycles",
           "task_label", "tasks_unavailable"]


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


def format_tasks(snapshot, *, table=False):
    """The lines of --tasks (a tree) or --table; a snapshot without tasks
    gives the one line saying why."""
    why = tasks_unavailable(snapshot)
    if why:
        return [why]
    tasks = snapshot.tasks or []
    if table:
        lines = format_task_table(tasks)
        if snapshot.tasks_error:
            lines.append("(task list incomplete: %s)" % escape(snapshot.tasks_error))
        return lines
    return format_task_tree(tasks, error=snapshot.tasks_error)

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


def format_task_tree(tasks, *, error=None):
    """Lines of the task tree, as pstree draws it: the tasks nothing awaits
    at the top; under each task its coroutine stack (its own coroutine
    first, the call it is suspended in last), then the tasks it awaits.
    ``error``: why the task list is incomplete, shown on top."""
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
        lines.extend(lead + frame_text(frame) for frame in frames)
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
