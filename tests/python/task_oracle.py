"""Oracles for asyncio task trees (CPython 3.14+): CPython's own view.

* ``remote_tasks(python, pid)``: ``_remote_debugging.RemoteUnwinder(pid)
  .get_all_awaited_by()`` run in a subprocess of ``python`` (the SAME
  version as the target), normalized to
  ``{task_id: {"name", "thread_id", "coroutine_stack", "awaited_by",
  "awaiter_stacks"}}``.
* ``RemoteTasksServer(python).tasks(pid)``: remote_tasks from one
  long-lived subprocess, for many readings.
* ``remote_running_tasks(python, pid)``: ``get_async_stack_trace()``, the
  running task of each thread and the tasks awaiting it.
* ``remote_awaited_by_raw(python, pid, method)``: either method's result as
  plain JSON-able data, unnormalized.
* ``asyncio_ps(python, pid)`` / ``asyncio_pstree(python, pid)``: ``python -m
  asyncio ps|pstree PID`` (stdout, stderr, exit status, wall time; ps also
  parsed into rows).
* ``target_facts(workdir)`` / ``facts_as_tasks(facts)``: the task facts that
  ``targets/tasks.py`` writes about itself, in the shape of remote_tasks.
* ``compare_tasks(expected, actual)``: problems between two such views.
* ``document_tasks(document)``: the tasks of a pyframes ``--tasks --json``
  document in that shape (the output under test, not an oracle).

What get_all_awaited_by returns (3.14.10 and 3.15.2; struct sequences,
field names as listed):

    [AwaitedInfo(thread_id, awaited_by=[TaskInfo(task_id, task_name,
        coroutine_stack=[CoroInfo(call_stack=[FrameInfo...], task_name)],
        awaited_by=[CoroInfo(call_stack=[FrameInfo...], task_name)])])]

* one AwaitedInfo per thread state (thread_id = the NATIVE thread id,
  tstate->native_thread_id), then a last one with thread_id 0: the
  interpreter's list, where CPython moves the pending tasks of threads that
  have exited;
* task_id = the Task object's address (id(task));
* CoroInfo.task_name is NOT a name: it is the id of a task (the task itself
  in coroutine_stack, the awaiting task in awaited_by);
* coroutine_stack holds one CoroInfo whose call_stack is the coroutine
  chain, innermost first, function names are co_qualname; an awaiter's
  call_stack is the awaiting task's coroutine chain;
* FrameInfo: 3.14 (filename, lineno, funcname); 3.15 (filename, location:
  LocationInfo(lineno, end_lineno, col_offset, end_col_offset) or None,
  funcname, opcode).
* 3.14.10 walks the threads from interp->threads.main along tstate->next,
  i.e. towards OLDER thread states: it reports the main thread's tasks and
  the interpreter's list only; tasks of every other live thread are
  missing.  3.15.2 walks all threads (newest first).
* done tasks (finished or cancelled) are not listed: a task leaves the
  list when it completes.
"""

import collections
import json
import os
import subprocess
import time

from livetarget import target_env
from livetarget import TargetError as OracleError
from oracle import SERVE, OracleServer

REMOTE_TIMEOUT = 120.0

# Runs inside an interpreter of the same version as the target; prints the
# result of get_all_awaited_by() or get_async_stack_trace() as JSON (with
# oracle.SERVE: read([pid, method]), once or as a server).
REMOTE_TASKS_SOURCE = r'''
import json, sys
import _remote_debugging

def frame(fi):
    loc = getattr(fi, "location", None)
    if loc is not None:
        line = loc.lineno
        location = [loc.lineno, loc.end_lineno, loc.col_offset, loc.end_col_offset]
    else:
        line = getattr(fi, "lineno", None)
        location = None
    return {"function": fi.funcname, "filename": fi.filename, "line": line,
            "location": location}

def coro(ci):
    return {"task": ci.task_name, "call_stack": [frame(f) for f in ci.call_stack]}

def task(ti):
    return {"task_id": ti.task_id, "task_name": ti.task_name,
            "coroutine_stack": [coro(c) for c in ti.coroutine_stack],
            "awaited_by": [coro(c) for c in ti.awaited_by]}

def read(args):
    pid, method = int(args[0]), args[1]
    unwinder = _remote_debugging.RemoteUnwinder(pid)
    result = getattr(unwinder, method)()
    return {"version": list(sys.version_info[:3]), "method": method,
            "threads": [{"thread_id": ai.thread_id,
                         "tasks": [task(t) for t in ai.awaited_by]} for ai in result]}
'''

METHODS = ("get_all_awaited_by", "get_async_stack_trace")


def remote_awaited_by_raw(python, pid, method="get_all_awaited_by", timeout=REMOTE_TIMEOUT):
    """The raw result of RemoteUnwinder(pid).<method>() as JSON data:

    {"version": [3, 14, 10], "method": ...,
     "threads": [{"thread_id": int,
                  "tasks": [{"task_id", "task_name",
                             "coroutine_stack": [{"task", "call_stack": [frame]}],
                             "awaited_by": [{"task", "call_stack": [frame]}]}]}]}

    frame = {"function", "filename", "line", "location" ([lineno,
    end_lineno, col, end_col] on 3.15, else None)}; lists innermost first,
    in CPython's order."""
    if method not in METHODS:
        raise ValueError("method must be one of %s" % (METHODS,))
    try:
        res = subprocess.run([python, "-I", "-c", REMOTE_TASKS_SOURCE + SERVE, str(pid), method],
                             capture_output=True, timeout=timeout, env=target_env())
    except subprocess.TimeoutExpired:
        raise OracleError("RemoteUnwinder.%s did not finish within %.0f s" % (method, timeout))
    if res.returncode != 0:
        raise OracleError("RemoteUnwinder.%s failed (exit %d):\n%s"
                          % (method, res.returncode, res.stderr.decode("utf-8", "replace")))
    return json.loads(res.stdout)


def _keys(call_stack):
    return [(f["function"], f["filename"], f["line"]) for f in call_stack]


def _normalize_task(t, thread_id):
    stack = []
    for ci in t["coroutine_stack"]:
        stack.extend(_keys(ci["call_stack"]))
    awaiter_stacks = {}
    for ci in t["awaited_by"]:
        awaiter_stacks[ci["task"]] = _keys(ci["call_stack"])
    return {
        "name": t["task_name"],
        "thread_id": thread_id,
        "coroutine_stack": stack,
        "awaited_by": sorted(awaiter_stacks),
        "awaiter_stacks": awaiter_stacks,
    }


def normalize_awaited_by(raw):
    """task_id -> {"name": str, "thread_id": int (native id, 0 = the
    interpreter's list of tasks of exited threads), "coroutine_stack":
    [(function, filename, line)] innermost first (all CoroInfo call stacks
    concatenated; CPython gives one), "awaited_by": sorted awaiting task ids,
    "awaiter_stacks": {awaiting task id: its coroutine chain, innermost
    first}}.  A task listed twice raises OracleError."""
    tasks = {}
    for th in raw["threads"]:
        for t in th["tasks"]:
            if t["task_id"] in tasks:
                raise OracleError("task %#x listed twice (threads %s and %s)"
                                  % (t["task_id"], tasks[t["task_id"]]["thread_id"],
                                     th["thread_id"]))
            tasks[t["task_id"]] = _normalize_task(t, th["thread_id"])
    return tasks


def remote_tasks(python, pid, timeout=REMOTE_TIMEOUT):
    """CPython's view of every pending task of process pid (see
    normalize_awaited_by for the shape), read by get_all_awaited_by() under
    `python`.  On 3.14 only the main thread's and exited threads' tasks."""
    return normalize_awaited_by(remote_awaited_by_raw(python, pid, "get_all_awaited_by",
                                                      timeout))


class RemoteTasksServer(OracleServer):
    """remote_tasks(python, pid) as tasks(pid), from one long-lived
    subprocess of `python` (for many frozen states)."""

    def __init__(self, python):
        OracleServer.__init__(self, python, REMOTE_TASKS_SOURCE, "get_all_awaited_by")

    def tasks(self, pid, timeout=REMOTE_TIMEOUT):
        return normalize_awaited_by(self.ask(pid, "get_all_awaited_by", timeout=timeout))


def remote_running_tasks(python, pid, timeout=REMOTE_TIMEOUT):
    """get_async_stack_trace(): thread_id -> [task dicts as in remote_tasks,
    plus "task_id"], the thread's running task first, then the tasks
    awaiting it (transitively).  The running task's coroutine_stack starts
    with the plain functions it called (e.g. Harness.publish_and_block).
    3.14.10 reports the main thread only, 3.15 every thread with a running
    task."""
    raw = remote_awaited_by_raw(python, pid, "get_async_stack_trace", timeout)
    out = collections.OrderedDict()
    for th in raw["threads"]:
        lst = out.setdefault(th["thread_id"], [])
        for t in th["tasks"]:
            d = _normalize_task(t, th["thread_id"])
            d["task_id"] = t["task_id"]
            lst.append(d)
    return out


# --------------------------------------------------------------------------
# pyframes' own output, in the same shape


def document_tasks(document):
    """The tasks of a JSON document in the oracle's shape: id -> {name,
    thread_id (native id, 0 for a thread that exited), coroutine_stack
    [(function, filename, line)] innermost first, awaited_by sorted}."""
    assert document.get("tasks_error") is None, document.get("tasks_error")
    out = {}
    for t in document["tasks"]:
        assert t["id"] not in out, "task 0x%x listed twice" % t["id"]
        out[t["id"]] = {
            "name": t["name"],
            "thread_id": t["native_thread_id"] or 0,
            "coroutine_stack": [(f["function"], f["filename"], f["line"])
                                for f in t["coroutine_stack"]],
            "awaited_by": sorted(t["awaited_by"]),
            "state": t["state"],
            "running": t["running"],
        }
    return out


# --------------------------------------------------------------------------
# python -m asyncio ps / pstree

ToolResult = collections.namedtuple("ToolResult", "returncode stdout stderr seconds rows")

PS_FIELDS = ("tid", "task_id", "task_name", "coroutine_stack", "awaiter_chain",
             "awaiter_name", "awaiter_id")
# Column widths of asyncio/tools.py display_awaited_by_tasks_table (3.14, 3.15):
# each value is left-justified to its width and followed by one space; a
# longer value pushes the next columns right.
PS_WIDTHS = (10, 20, 20, 50, 50, 15, 15)
_CHAINS = (3, 4)   # "a -> b -> c" columns


def _run_tool(python, args, timeout):
    t0 = time.monotonic()
    try:
        res = subprocess.run([python, "-I", "-m", "asyncio"] + args, capture_output=True,
                             timeout=timeout, env=target_env())
    except subprocess.TimeoutExpired:
        raise OracleError("%s -m asyncio %s did not finish within %.0f s"
                          % (python, " ".join(args), timeout))
    return (res.returncode, res.stdout.decode("utf-8", "replace"),
            res.stderr.decode("utf-8", "replace"), time.monotonic() - t0)


def _take(line, pos, width, chain):
    """One ps column starting at pos: (value, position of the next column)."""
    end = pos + width
    if end >= len(line) or line[end] == " ":
        return line[pos:end].rstrip(), end + 1
    # Overflow: the value runs on to the next single space (for a chain,
    # over " -> " joints).
    while True:
        sp = line.find(" ", end)
        if sp < 0:
            return line[pos:], len(line)
        if chain and line.startswith(" -> ", sp):
            end = sp + 4
            continue
        return line[pos:sp], sp + 1


def parse_ps(stdout):
    """Rows of `python -m asyncio ps` as dicts with PS_FIELDS: tid and
    task_id/awaiter_id as ints, coroutine_stack and awaiter_chain as lists
    of function names (outermost LAST, as printed: innermost first),
    awaiter_name "" when none (awaiter_id 0).  Best effort: a task or
    awaiter name longer than its column (20/15) that contains spaces is
    ambiguous."""
    rows = []
    lines = stdout.splitlines()
    for line in lines[2:]:
        if not line.strip():
            continue
        pos, values = 0, []
        for i, width in enumerate(PS_WIDTHS):
            value, pos = _take(line, pos, width, i in _CHAINS)
            values.append(value)
        row = dict(zip(PS_FIELDS, values))
        row["tid"] = int(row["tid"])
        row["task_id"] = int(row["task_id"], 16)
        row["awaiter_id"] = int(row["awaiter_id"], 16) if row["awaiter_id"].startswith("0x") \
            else row["awaiter_id"]
        for k in ("coroutine_stack", "awaiter_chain"):
            row[k] = row[k].split(" -> ") if row[k] else []
        rows.append(row)
    return rows


def asyncio_ps(python, pid, timeout=REMOTE_TIMEOUT):
    """`python -m asyncio ps PID`: ToolResult(returncode, stdout, stderr,
    seconds, rows=parse_ps(stdout) or None if it failed).  One row per
    (task, awaiter) pair; a task without awaiters has one row with
    awaiter_id 0."""
    rc, out, err, secs = _run_tool(python, ["ps", str(pid)], timeout)
    rows = parse_ps(out) if rc == 0 else None
    return ToolResult(rc, out, err, secs, rows)


def asyncio_pstree(python, pid, timeout=REMOTE_TIMEOUT):
    """`python -m asyncio pstree PID`: ToolResult(returncode, stdout, stderr,
    seconds, rows=None).  With an await cycle it exits 1 and prints
    "ERROR: await-graph contains cycles - cannot print a tree!" and
    "cycle: a → b → a" lines on stderr."""
    rc, out, err, secs = _run_tool(python, ["pstree", str(pid)], timeout)
    return ToolResult(rc, out, err, secs, None)


# --------------------------------------------------------------------------
# The target's own facts (targets/tasks.py)


def target_facts(workdir_or_path):
    """The JSON that targets/tasks.py writes ($PYFRAMES_TASKS_OUT, default
    <workdir>/tasks.json)."""
    path = workdir_or_path
    if os.path.isdir(path):
        path = os.path.join(path, "tasks.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def facts_as_tasks(facts, exited_to_zero=True):
    """The target's pending tasks in remote_tasks' shape (without
    awaiter_stacks): thread_id = the creating thread's native id, or 0 for
    the threads that exited (facts["exited_threads"]) when exited_to_zero."""
    exited = set(facts.get("exited_threads", ())) if exited_to_zero else set()
    out = {}
    for t in facts["tasks"]:
        if t["done"]:
            continue
        out[t["id"]] = {
            "name": t["name"],
            "thread_id": 0 if t["thread"] in exited else t["thread"],
            "coroutine_stack": [tuple(f) for f in t["coroutine_stack"]],
            "awaited_by": sorted(t["awaited_by"]),
        }
    return out


def compare_tasks(expected, actual, label_expected="target", label_actual="RemoteUnwinder",
                  fields=("name", "thread_id", "coroutine_stack", "awaited_by")):
    """Problems (list of str) between two {task_id: task dict} views."""
    problems = []

    def tname(tid, view):
        return "%#x (%s)" % (tid, view[tid].get("name"))

    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    if missing:
        problems.append("tasks missing from %s: %s"
                        % (label_actual, ", ".join(tname(t, expected) for t in missing)))
    if extra:
        problems.append("tasks in %s but not in %s: %s"
                        % (label_actual, label_expected, ", ".join(tname(t, actual) for t in extra)))
    for tid in sorted(set(expected) & set(actual)):
        for field in fields:
            e, a = expected[tid].get(field), actual[tid].get(field)
            if field == "coroutine_stack":
                e = [tuple(x) for x in e] if e is not None else e
                a = [tuple(x) for x in a] if a is not None else a
            if e != a:
                problems.append("task %s %s: %s %r, %s %r"
                                % (tname(tid, expected), field, label_expected, e,
                                   label_actual, a))
    return problems


def remote_task_limitation(version):
    """Which tasks get_all_awaited_by cannot see, as a string (None: all)."""
    if tuple(version[:2]) < (3, 14):
        return "no AsyncioDebug section before 3.14"
    if tuple(version[:2]) == (3, 14):
        return ("3.14's get_all_awaited_by walks from the main thread state to older "
                "ones: only the main thread's tasks and the interpreter's list")
    return None
