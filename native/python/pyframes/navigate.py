"""Python frame navigation in a debugger: ``py-up``, ``py-down``,
``py-frame`` and ``py-list``, and the selected frame's values: ``py-locals``
and ``py-print EXPR`` (also named ``pyf-up`` ... in both debuggers); and
``py-task``, which lists the asyncio tasks (CPython 3.14+) and selects one:
the commands then walk its coroutine frames (a suspended task runs on no
thread) until ``py-task --thread`` or the next stop.

One selected Python frame per thread of a stopped inferior, numbered as
``py-bt-fast`` and ``pystack`` list the thread's frames: #0 is the
innermost (most recent call).  The selection starts at #0 and is forgotten
when the inferior stops again or runs (gdb: its stop and continue events
call :func:`reset`; lldb: the process's stop id, ``adapter.generation()``,
is part of what the selection is kept under).

Selecting a Python frame also selects, in the debugger, the native
eval-loop frame that runs it, where :mod:`pyframes.mixed` places the
frame's run (the frames an eval call runs, up to the one entered from C)
on the native backtrace: the adapter's optional
``select_native_frame(native_tid, native_frame)`` does it and returns how
the debugger names that frame (``#7 _PyEval_EvalFrameDefault``).

The plugins only register the commands and print what :func:`run`
returns; every failure is a CommandError with its one message.
:func:`selected_frame` gives other commands the selected frame.
"""

import re

from . import errors, mixed, options, render, taskview, values
from .adapter import ask
from .errors import CommandError
from .escaping import escape

__all__ = ["Navigation", "navigation", "reset", "selected_frame", "selected_index",
           "run", "COMMANDS", "PYF_NAMES", "HELPER_CLASSES", "HELPER_NAMES",
           "helper_notice", "help_text", "LIST_CONTEXT"]

#: Lines py-list shows before and after the selected frame's line.
LIST_CONTEXT = 5
#: Lines ``py-list START`` shows (START and the 10 after it, as CPython's).
LIST_FROM_START = 10

#: The commands: name -> what it does.  Each is also registered as
#: ``pyf-<what>`` (PYF_NAMES), which CPython's gdb helper never takes.
COMMANDS = ("py-up", "py-down", "py-frame", "py-list", "py-locals", "py-print", "py-task")
PYF_NAMES = {name: "pyf-" + name[3:] for name in COMMANDS}

#: CPython's gdb helper (Tools/gdb/libpython.py, installed as
#: python3.X-gdb.py by the -dbg package and auto-loaded with python's
#: objfile) defines these names too, each by a gdb.Command subclass of
#: this name.  The plain names stay pyframes' whichever is loaded first;
#: the helper's commands are kept under HELPER_NAMES.
HELPER_CLASSES = {"py-up": "PyUp", "py-down": "PyDown", "py-list": "PyList",
                  "py-locals": "PyLocals", "py-print": "PyPrint"}
HELPER_NAMES = {name: "cpython-" + name for name in HELPER_CLASSES}


def helper_notice(moved, lost=()):
    """The one line said when another extension had plain names: they are
    pyframes' commands (also pyf-...); CPython's helper's commands
    (``moved``) have their cpython- names, another's (``lost``) are
    replaced."""
    names = list(moved) + [n for n in lost if n not in moved]
    text = ("pyframes: %s %s pyframes' (also %s)" % (
        ", ".join(names), "is" if len(names) == 1 else "are",
        ", ".join(PYF_NAMES[n] for n in names)))
    if moved:
        text += "; CPython's gdb helper's %s %s" % (
            "is" if len(moved) == 1 else "are", ", ".join(HELPER_NAMES[n] for n in moved))
    if lost:
        text += "; another extension's %s replaced" % ", ".join(lost)
    return text

_USAGE = {
    "up": "%s [N]",
    "down": "%s [N]",
    "frame": "%s [N]",
    "list": "%s [START [END]]",
    "locals": "%s [--attrs] [--max-string N] [--max-items N] [--max-value-depth N] "
              "[--max-objects N] [--max-bytes N]",
    "print": "%s [limits] EXPR",
    "task": "%s [NAME | 0xID | --thread]",
}

_HELP = {
    "up": ("Select the Python frame N calls older than the selected one "
           "(default 1: its caller)",
           "Frames are numbered as py-bt-fast and pystack list them, #0 the innermost. "
           "Past the outermost frame it stops there; at the outermost already it says "
           "so and nothing moves."),
    "down": ("Select the Python frame N calls newer than the selected one "
             "(default 1: the frame it called)",
             "Past the innermost frame it stops there; at the innermost already it says "
             "so and nothing moves."),
    "frame": ("Show the selected Python frame, or select frame #N",
              "#N as py-bt-fast and pystack list the thread's frames, #0 the innermost."),
    "list": ("List the source around the selected Python frame's line "
             "(marked with '>')",
             "Without arguments the %d lines before and after it; `START`: START and "
             "the %d lines after it; `START END` (or `START, END`): those lines. The "
             "file is read from disk, as the process sees it when it is live and local."
             % (LIST_CONTEXT, LIST_FROM_START)),
    "locals": ("Show the selected Python frame's locals, one `name = value` per line, "
               "arguments first",
               "Values as repr() in the process would show them, read from its memory (no "
               "code runs in it), cut where a limit says so (`...<N more items>`); a "
               "variable not yet bound shows `<unbound>`. --attrs: an instance of a class "
               "shows its attributes after its repr(), as vars() gives them."),
    "print": ("Show one value of the selected Python frame: a local or global name, then "
              "any chain of .attr, [int] and ['key']",
              "E.g. `py-print request.headers['Host']`, `py-print order.customer.name`, "
              "`py-print customer.__dict__` (its attributes, as vars() gives them). "
              "Nothing runs in the process: attributes are read from the object's "
              "__dict__ or slots, items from the list, tuple or dict; the value limits "
              "and --attrs as for py-locals."),
    "task": ("List the asyncio tasks, or select one's coroutine frames for py-up, py-down, "
             "py-frame, py-list, py-locals and py-print",
             "Without an argument: each task (CPython 3.14+) on one line, its name and id "
             "as py-bt-fast --tasks and pystack --tasks show them, what it awaits, and "
             "which is selected. `py-task NAME` (or its id, 0x...) selects its coroutine "
             "stack: #0 the coroutine it is suspended in, up to the task's own coroutine "
             "(a suspended task runs on no thread: no native frame is selected). "
             "`py-task --thread` goes back to the selected thread's own frames; so does "
             "the next stop."),
}

_COMMON_HELP = (
    "The selection is per thread (the debugger's selected thread) and starts at "
    "#0 at each stop. Selecting a Python frame also selects the native eval-loop "
    "frame that runs it (_PyEval_EvalFrameDefault), where pyframes can place it "
    "on the native backtrace, so the debugger's own `info locals` / `frame "
    "variable` are about the same call. In gdb, CPython's own gdb helper "
    "(python3.X-gdb.py, auto-loaded with the -dbg package) defines py-up, "
    "py-down, py-list, py-locals and py-print too: whichever is loaded first, "
    "these names stay pyframes' and the helper's commands are cpython-py-up, "
    "cpython-py-down, cpython-py-list, cpython-py-locals, cpython-py-print (they "
    "walk the native frames from the selected one and need python's debug "
    "symbols); pyf-frame, pyf-up, ... always name pyframes' commands "
    "(docs/debuggers.md, \"Navigation\").")


def _what(name):
    """"up" for py-up and pyf-up."""
    return name.split("-", 1)[1]


def help_text(name):
    """(one-line summary, long help) of the command ``name``."""
    summary, detail = _HELP[_what(name)]
    summary += " (pyframes)."
    usage = _USAGE[_what(name)] % name
    return summary, "%s\n\nUsage: %s\n\n%s\n\n%s" % (summary, usage, detail, _COMMON_HELP)


class _ThreadState(object):
    """One OS thread at one stop: its Python frames (innermost first, as
    py-bt-fast lists them), their runs, the selection and, once asked
    for, which native frame runs each frame."""

    def __init__(self, tid, runs, task=None):
        self.tid = tid
        self.runs = runs
        self.frames = [f for run in runs for f in run.frames]
        self.selected = 0
        #: py-task's task (model.Task): its coroutine frames, on no thread
        self.task = task
        if task is not None:
            self.frames = list(task.coroutine_stack)
        self.native = None      # the debugger's frames (mixed.NativeFrame)
        self.owner = None       # per frame: index into native, or None
        self.unplaced = None    # why a frame has no native frame

    def place(self, adapter):
        """Which native frame runs each Python frame (once per stop)."""
        if self.owner is not None:
            return
        self.owner = [None] * len(self.frames)
        native = ask(adapter.native_frames, self.tid)
        if not native:
            self.unplaced = "%s gave no native backtrace" % adapter.debugger_name
            return
        self.native = native
        placement = mixed.place(native, self.runs)
        start, offset = {}, 0
        for run in self.runs:
            start[id(run)] = offset
            offset += len(run.frames)
        for i, placed in placement.at.items():
            for run in placed:
                first = start[id(run)]
                for k in range(len(run.frames)):
                    self.owner[first + k] = i
        self.unplaced = placement.marker()


class Navigation(object):
    """The selected Python frame of each thread of one stop, and the asyncio
    task selected (py-task), whose frames the commands walk instead."""

    def __init__(self):
        self.key = None
        self.threads = {}
        self.task = None

    def reset(self):
        self.key = None
        self.threads = {}
        self.task = None

    def check(self, adapter):
        """Forget the selections made at another stop."""
        key = (ask(adapter.identity), ask(adapter.generation))
        if key != self.key:
            self.reset()
            self.key = key

    def thread(self, session, adapter):
        """The _ThreadState of the debugger's selected thread (of the task
        py-task selected)."""
        self.check(adapter)
        if self.task is not None:
            return self.task
        tid = ask(adapter.selected_native_tid)
        if tid is None:
            if not adapter.has_process():
                raise CommandError(errors.NO_PROCESS)
            raise CommandError("no thread is selected: select one in %s"
                               % adapter.debugger_name)
        state = self.threads.get(tid)
        if state is None:
            runs = session.thread_runs(adapter, tid)
            if not runs:
                # the stack command's own words: not Python, no Python in
                # this thread (with the list of those that have some)
                session.run("--limit 1 --no-source", adapter)
                raise CommandError("the selected thread runs no Python code")
            state = self.threads[tid] = _ThreadState(tid, runs)
        return state


def navigation(session):
    """The Navigation kept with a debugger session."""
    nav = getattr(session, "navigation", None)
    if nav is None:
        nav = session.navigation = Navigation()
    return nav


def reset(session):
    """Forget every selection (the inferior stopped again or ran)."""
    navigation(session).reset()


def selected_index(session, adapter):
    """The number (#N, as py-bt-fast lists them) of the selected Python
    frame of the debugger's selected thread."""
    return navigation(session).thread(session, adapter).selected


def selected_frame(session, adapter):
    """The selected Python frame (a pyframes.model.Frame, with its
    frame_addr and code_addr) of the debugger's selected thread; #0 until
    py-up, py-down or py-frame selects another.  Raises CommandError."""
    state = navigation(session).thread(session, adapter)
    return state.frames[state.selected]


# ---- the commands ---------------------------------------------------------

def _usage(name):
    return "usage: " + _USAGE[_what(name)] % name


def _number(text, name, minimum):
    if not re.match(r"^\d+$", text) or int(text) < minimum:
        raise CommandError(_usage(name))
    return int(text)


def _whose(state):
    """"this thread", or the task py-task selected."""
    if state.task is not None:
        return "task %s" % taskview.task_label(state.task)
    return "this thread"


def _frame_name(state, index):
    return "#%d (%s)" % (index, escape(state.frames[index].function))


def _select(state, index, adapter):
    """Select frame #index, and its native frame where it is placed; the
    note on the native frame (or None)."""
    state.selected = index
    select = getattr(adapter, "select_native_frame", None)
    if select is None or state.task is not None:
        return None
    state.place(adapter)
    owner = state.owner[index]
    if owner is None:
        return "native frame not selected: %s" % (state.unplaced or "not placed")
    try:
        name = select(state.tid, state.native[owner])
    except Exception as e:
        return "native frame not selected: %s" % e
    return None if name is None else "native frame %s selected" % name


def _show(session, adapter, state, note):
    frame = state.frames[state.selected]
    lines = list(render.format_frame(frame, source=_source(session, adapter)))
    out = ["#%d %s" % (state.selected, lines[0].strip())] + lines[1:]
    if note:
        out.append("    (%s)" % note)
    return "".join(line + "\n" for line in out)


def _source(session, adapter):
    kind = "pid" if ask(adapter.is_live_local) else "debugger"
    return session.source_for(adapter, kind)


def _move(session, adapter, name, argument, older):
    words = argument.split()
    if len(words) > 1:
        raise CommandError(_usage(name))
    count = _number(words[0], name, 1) if words else 1
    state = navigation(session).thread(session, adapter)
    last = len(state.frames) - 1
    if older:
        if state.selected >= last:
            raise CommandError("no older Python frame: %s is the outermost of %s"
                               % (_frame_name(state, last), _whose(state)))
        index = min(state.selected + count, last)
    else:
        if state.selected <= 0:
            raise CommandError("no newer Python frame: %s is the innermost of %s"
                               % (_frame_name(state, 0), _whose(state)))
        index = max(state.selected - count, 0)
    return _show(session, adapter, state, _select(state, index, adapter))


def _frame(session, adapter, name, argument):
    words = argument.split()
    if len(words) > 1:
        raise CommandError(_usage(name))
    state = navigation(session).thread(session, adapter)
    index = state.selected
    if words:
        index = _number(words[0], name, 0)
        if index >= len(state.frames):
            raise CommandError("no Python frame #%d: %s's frames are #0 to #%d"
                               % (index, _whose(state), len(state.frames) - 1))
    return _show(session, adapter, state, _select(state, index, adapter))


def _list(session, adapter, name, argument):
    words = argument.replace(",", " ").split()
    if len(words) > 2:
        raise CommandError(_usage(name))
    numbers = [_number(w, name, 1) for w in words]
    if len(numbers) == 2 and numbers[1] < numbers[0]:
        raise CommandError(_usage(name))
    state = navigation(session).thread(session, adapter)
    frame = state.frames[state.selected]
    if frame.line is None and len(numbers) < 1:
        raise CommandError("%s has no line number" % _frame_name(state, state.selected))
    if not numbers:
        start, end = max(1, frame.line - LIST_CONTEXT), frame.line + LIST_CONTEXT
    elif len(numbers) == 1:
        start, end = numbers[0], numbers[0] + LIST_FROM_START
    else:
        start, end = numbers
    source = _source(session, adapter)
    out = []
    for n in range(start, end + 1):
        text = source(frame.filename, n)
        if text is None:
            break
        mark = (">%d" if n == frame.line else "%d") % n
        out.append("%4s    %s" % (mark, escape(text.expandtabs())))
    if not out:
        if source(frame.filename, 1) is None:
            raise CommandError("cannot read the source of %s: %s"
                               % (_frame_name(state, state.selected), escape(frame.filename)))
        raise CommandError("line %d is past the end of %s" % (start, escape(frame.filename)))
    return "".join(line + "\n" for line in out)


_PARSERS = {}
# per command name: the limits of no options (py-locals alone)
_NO_OPTIONS = {}


def _values(session, adapter, name, argument):
    """py-locals and py-print: pyframes.values on the selected frame."""
    expression = _what(name) == "print"
    limits = None if argument else _NO_OPTIONS.get(name)
    if limits is None:
        parser = _PARSERS.get(name)
        if parser is None:  # made once per name: argparse takes longer than the read
            parser = _PARSERS[name] = options.build_values_parser(
                name, expression=expression, description=help_text(name)[1])
        try:
            opts = options.parse_values_command(parser, argument)
        except options.HelpRequested as h:
            return h.text if h.text.endswith("\n") else h.text + "\n"
        limits = options.value_limits(opts)
        if not argument:
            _NO_OPTIONS[name] = limits
    nav = navigation(session)
    state = nav.thread(session, adapter)
    frame = state.frames[state.selected]
    target = session.stop_target(adapter, nav.key)
    if expression:
        lines = values.print_lines(target, frame, opts.expression, limits)
    else:
        lines = values.locals_lines(target, frame, limits) or [
            "%s has no locals" % _frame_name(state, state.selected)]
    return "".join(line + "\n" for line in lines)


def _task(session, adapter, name, argument):
    """py-task: the tasks, or one selected (its coroutine frames)."""
    words = argument.split()
    if len(words) > 1:
        raise CommandError(_usage(name))
    nav = navigation(session)
    nav.check(adapter)
    if words == ["--thread"]:
        nav.task = None
        state = nav.thread(session, adapter)
        return _show(session, adapter, state, None)
    tasks = session.stop_tasks(adapter, nav.key)
    if not words:
        return _task_list(session, adapter, nav, tasks)
    wanted = words[0]
    found = [t for t in tasks if t.name == wanted]
    if not found and re.match(r"^0[xX][0-9a-fA-F]+$", wanted):
        found = [t for t in tasks if t.id == int(wanted, 16)]
    if not found:
        raise CommandError("no asyncio task is named %s (py-task lists them)" % escape(wanted))
    if len(found) > 1:
        raise CommandError("%d tasks are named %s: give one's id (%s)" % (
            len(found), escape(wanted), ", ".join("0x%x" % t.id for t in found)))
    task = found[0]
    if not task.coroutine_stack:
        raise CommandError("task %s has no coroutine frame to select" % taskview.task_label(task))
    nav.task = _ThreadState(None, [], task)
    return "task %s selected\n%s" % (taskview.task_label(task),
                                       _show(session, adapter, nav.task, None))


def _task_list(session, adapter, nav, tasks):
    target = session.stop_target(adapter, nav.key)
    awaits = taskview.read_awaits(target, tasks)
    lines = []
    for task in tasks:
        mark = "*" if nav.task is not None and nav.task.task.id == task.id else " "
        text = "%s %s %s" % (mark, taskview.task_label(task), task.state)
        if task.running:
            text += ", running"
        if task.coroutine_stack:
            text += ", in %s" % escape(task.coroutine_stack[0].function)
        if task.id in awaits:
            text += ", awaits %s" % awaits[task.id].text
        lines.append(text)
    return "".join(line + "\n" for line in lines) or "no asyncio task\n"


_RUN = {
    "task": _task,
    "up": lambda s, a, n, arg: _move(s, a, n, arg, True),
    "down": lambda s, a, n, arg: _move(s, a, n, arg, False),
    "frame": _frame,
    "list": _list,
    "locals": _values,
    "print": _values,
}


def run(session, adapter, name, argument):
    """The text command ``name`` (py-up, pyf-up, ...) prints with
    ``argument``; raises CommandError with the message to show."""
    try:
        return _RUN[_what(name)](session, adapter, name, (argument or "").strip())
    except CommandError:
        raise
    except Exception as e:
        raise CommandError(session._translate(e, adapter))
