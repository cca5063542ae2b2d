"""The stack command, one body for every front end: ``python3 -m pyframes
dump``, gdb's ``py-bt-fast`` and lldb's ``pystack``.

The options (pyframes.options) mean the same in each:

- ``--limit N``: at most N frames shown per thread, innermost first; the
  walk still goes to the end of each chain (so ``complete`` is what a full
  walk says) and the frames past N are counted (``... K more frames``, and
  ``more_frames`` in JSON);
- ``--max-depth N``: the walk itself stops after N frames per thread (a
  deeper chain is shown incomplete);
- ``--all`` / ``--thread N``, ``--json``, ``--no-source``, ``--tasks``,
  ``--table``;
- ``--locks``: the locks each frame holds, what each thread waits for and
  the deadlocks, first (pyframes.locks), read over every thread of the
  target whichever are shown;
- ``--group``: the threads with the same stack once, under one header
  (render.group_header, naming the debugger's labels of its threads), and
  with ``--json`` a "groups" list; with ``--locks`` the lines under the
  frames (held locks, a wait) are part of what must be the same, so a
  deadlock's threads stay apart while a pool's idle workers fold;
- ``--locals`` (and the value limits ``--max-string N``, ``--max-items
  N``, ``--max-value-depth N``, ``--max-objects N``, ``--max-bytes N``):
  each shown frame's variables (pyframes.values), read with
  ``Target.frame_locals`` from the snapshot's frame addresses.

What differs between front ends is a :class:`Front`: the threads shown
without ``--all`` or ``--thread``, how a missing thread is reported, the
label of a thread header, where source lines come from, what a debugger
adds (``--native``, the note on a core file), and what the front end knows
of each thread besides the target's memory (``describe``: its OS or
debugger name, its native wait, on_cpu; pyframes.waits), and how its OS
threads are named (``thread_ids``: pyframes.tids, the ids of a target in
another PID namespace).  :func:`run` returns the text to print and raises
CommandError (or a PyframesError) with the message.
"""

import dataclasses
import json

from . import errors, locks, model, render, taskview, tids, values
from .options import value_limits
from .errors import CommandError, UsageError

__all__ = ["Front", "run", "run_processes", "walk_of", "select_thread", "snapshot_native"]


class Front(object):
    """What a front end supplies to :func:`run`.  The defaults are the
    command line's: every thread by default, no labels, no native stack."""

    #: The debugger named in thread headers ("gdb"), None for none.
    debugger = None
    #: A core file's signal (model.Signal) that ended the process, else None.
    signal = None

    def default_threads(self, target, walk):
        """(snapshot, threads) without --all or --thread."""
        snapshot = target.snapshot(**walk)
        return snapshot, list(snapshot.threads())

    def no_threads(self):
        """--all found no thread: raise, or return to print nothing."""

    def thread_not_found(self, wanted, rows):
        """--thread N matched nothing; rows: every Python thread (read one
        frame deep).  Raises."""
        raise errors.NoSuchThread(
            errors.PYF_ENOTHREAD, "no Python thread has native thread id or "
            "Python thread id %d" % wanted)

    def label(self, native_tid):
        """The front end's own name for a thread (gdb's "thread 2"), or None."""
        return None

    def source(self):
        """The source-line reader, source(filename, line)."""
        return render.SourceReader()

    def before_tasks(self):
        """Called before a snapshot that reads the asyncio tasks."""

    def native(self, snapshot, threads, options):
        """--native: the text of each thread's native stack with its Python
        frames placed in it."""
        raise CommandError("--native needs a debugger")

    def note(self, threads, snapshot):
        """Text after the output (a core file's missing memory), or ""."""
        return ""

    def preface(self):
        """Text before the stacks (a core file's summary line), or ""."""
        return ""

    def json_fields(self):
        """Top-level keys the front end adds to the JSON document (a core
        file's "core"), {} for none."""
        return {}

    def describe(self, snapshot, threads):
        """The threads with what the front end knows of them besides the
        target's memory (pyframes.waits.describe: the OS's or the
        debugger's name when the target gave none, the native wait,
        on_cpu); the same list when it knows nothing.  Their OS ids are
        filled first (thread_ids)."""
        return threads

    def runs_while_read(self):
        """Whether the process runs while it is read (True: values of
        different frames may be of different moments), False when it is
        stopped (a debugger's stop, SIGSTOP, a core file), None unknown."""
        return False

    def process_id(self, target):
        """The process's id (the thread it started with has it as its
        native id), or None when unknown."""
        return target.pid

    def thread_ids(self):
        """The target's threads' ids where the front end sees them
        (pyframes.tids.ThreadIds): every OS thread looked up, and every
        thread id the user gives, goes through it."""
        return tids.SAME


def walk_of(options):
    """Target.snapshot keywords of the options."""
    walk = {}
    if options.limit:
        walk["limit"] = options.limit
    if getattr(options, "max_depth", None):
        walk["max_depth"] = options.max_depth
    if getattr(options, "native", False):
        walk["entries"] = True
    if options.tasks or options.table:
        walk["tasks"] = True
    return walk


def run(target, options, front):
    """The text the options ask for, from ``target``."""
    walk = walk_of(options)
    if not getattr(options, "collapsed", False):
        walk["facts"] = True
    tasks = options.tasks or options.table
    # --tasks alone: the tasks only (the stacks too with --all, --thread or
    # --json)
    stacks = options.json or not tasks or options.all or options.thread is not None
    snapshot, threads = _chosen(target, options, front, walk, stacks)
    # --attrs shows what --locals shows, with the instances' attributes
    show_locals = getattr(options, "locals", False) or getattr(options, "attrs", False)
    native = getattr(options, "native", False)
    collapsed = getattr(options, "collapsed", False)
    group = getattr(options, "group", False)
    if show_locals and (native or collapsed):
        raise UsageError("--locals shows the variables under the frames of the stack "
                         "and JSON outputs (not with --native or --collapsed)")
    show_locks = getattr(options, "locks", False) and stacks
    if show_locks and (native or collapsed):
        raise UsageError("--locks shows the locks under the frames of the stack "
                         "and JSON outputs (not with --native or --collapsed)")
    if group and (native or collapsed or show_locals):
        raise UsageError("--group shows each stack once (not with --native, "
                         "--collapsed or --locals)")
    if stacks and not collapsed and threads:
        snapshot, threads = described(snapshot, threads, front)
        snapshot, threads = main_tagged(target, snapshot, threads, front.process_id(target))
    elif stacks and threads:
        threads = front.thread_ids().fill(threads)
    frame_values = FrameValuesOf(target, value_limits(options)) if show_locals else None
    # values of a process that runs while they are read are of no one moment
    moving = bool(show_locals and front.runs_while_read())
    lock_report = None
    under = frame_values.text_lines if frame_values else None
    if show_locks:
        lock_report = locks.analyze(target, _every_thread(target, options, walk, threads,
                                                          front.thread_ids()),
                                    target.python.minor, source=front.source(), names=True)
        under = _with_locks(lock_report, threads, under)
    if native:
        return front.native(snapshot, threads, options)
    # what each stuck task awaits at its leaf (the tree and JSON)
    awaits = taskview.read_awaits(target, snapshot.tasks) \
        if tasks and not options.table and snapshot.tasks else None
    if options.json:
        return json_text(snapshot, limited=bool(options.limit),
                         frame_values=frame_values, lock_report=lock_report,
                         groups=threads if group else None,
                         lines_of=under if group else None, awaits=awaits,
                         moving=moving if show_locals else None,
                         extra=front.json_fields()) + "\n"
    if tasks and not stacks and taskview.tasks_unavailable(snapshot):
        raise CommandError(taskview.tasks_unavailable(snapshot))
    text = front.preface() if stacks and not collapsed else ""
    if lock_report is not None:
        found = "".join(line + "\n" for line in locks.top_lines(lock_report))
        text += found + ("\n" if found else "")
    if group and stacks and not collapsed:
        text += render.format_threads_text(
            threads, group=True, label_of=front.label, debugger=front.debugger,
            show_source=not options.no_source,
            source=None if options.no_source else front.source(), locals_of=under)
    elif stacks and collapsed:
        text = "".join(line + "\n" for line in render.format_collapsed(threads))
    elif stacks:
        text += render.format_threads_text(
            threads, label_of=front.label, debugger=front.debugger,
            show_source=not options.no_source,
            source=None if options.no_source else front.source(),
            addresses=getattr(options, "addresses", False),
            locals_of=under)
    if tasks:
        text += ("\n" if text else "") + "".join(
            line + "\n" for line in taskview.format_tasks(
                snapshot, table=options.table, awaits=awaits,
                locals_of=frame_values.lines if frame_values else None))
    if moving:
        text += RUNNING_NOTE + "\n"
    return text + front.note(threads, snapshot if tasks else None)


#: Under --locals of a process that ran while it was read.
RUNNING_NOTE = ("note: the process ran while its variables were read: they may be of "
                "different moments (stop it first, kill -STOP PID, for one moment)")


def _chosen(target, options, front, walk, stacks=True):
    """(snapshot, threads) the options choose (no thread without stacks:
    --tasks alone)."""
    if options.tasks or options.table:
        front.before_tasks()
    if not stacks:
        return target.snapshot(limit=1, tasks=True), []
    if options.all:
        snapshot = target.snapshot(**walk)
        threads = list(snapshot.threads())
        if not threads:
            front.no_threads()
        return snapshot, threads
    if options.thread is not None:
        ids = front.thread_ids()
        snapshot, threads, rows = select_thread(target, options.thread, ids=ids, **walk)
        if not threads:
            front.thread_not_found(options.thread, ids.fill(rows))
        return snapshot, threads
    return front.default_threads(target, walk)


def _every_thread(target, options, walk, shown, ids):
    """--locks: every thread of the target, every frame (--limit and
    --thread cut what is shown, not what holds a lock), with what the front
    end said of the shown ones (name, native wait), each with its OS id
    (``ids``)."""
    if options.all and not options.limit:
        return shown
    every = ids.fill(list(target.snapshot(max_depth=walk.get("max_depth"),
                                          facts=True).threads()))
    said = {t.native_thread_id: t for t in shown}
    return [dataclasses.replace(t, name=said[t.native_thread_id].name,
                                name_source=said[t.native_thread_id].name_source,
                                native=said[t.native_thread_id].native,
                                on_cpu=said[t.native_thread_id].on_cpu)
            if t.native_thread_id in said else t for t in every]


def _with_locks(report, threads, under):
    """The lines under a frame: its locks (and a wait), then under(frame)'s."""
    thread_of = {f.frame_addr: t for t in threads for f in t.frames}

    def lines(frame):
        out = locks.frame_lines(report, thread_of.get(frame.frame_addr), frame,
                                FrameValuesOf.INDENT)
        return out + list(under(frame)) if under is not None else out

    return lines


class FrameValuesOf(object):
    """--locals: each frame's variables read from the target with the
    options' limits, as text lines under the frame or as JSON."""

    INDENT = "      "

    def __init__(self, target, limits):
        self.target = target
        self.limits = limits

    def text_lines(self, frame):
        return [self.INDENT + line for line in self.lines(frame)]

    def lines(self, frame):
        """``name = value`` per variable of the frame (not indented)."""
        fv, why = values.read_locals(self.target, frame, self.limits)
        if fv is None:
            return ["<locals unreadable: %s>" % render.escape(why)]
        return values.local_lines(fv, self.target.python, bool(self.limits.get("attrs")))

    def add_json(self, frame, row):
        """Fill a frame's JSON row: "locals" (and "locals_error")."""
        fv, why = values.read_locals(self.target, frame, self.limits)
        python = self.target.python
        attrs = bool(self.limits.get("attrs"))
        row["locals"] = [] if fv is None else [values.local_dict(loc, python, attrs)
                                               for loc in values.shown_locals(fv)]
        row["locals_error"] = why


def described(snapshot, threads, front):
    """(snapshot, threads) with the shown threads' OS ids (front.thread_ids)
    and what front.describe fills, the snapshot holding those (its JSON is
    made from it)."""
    return _replaced(snapshot, threads,
                     front.describe(snapshot, front.thread_ids().fill(threads)))


def _replaced(snapshot, threads, new):
    """(snapshot, new): ``new`` (the threads shown, each as it replaces the
    same one of ``threads``) in a snapshot that holds them."""
    if new is threads or snapshot is None or not dataclasses.is_dataclass(snapshot):
        return snapshot, new
    by_id = {id(old): t for old, t in zip(threads, new)}
    interps = [model._replace(i, threads=model._like(
        i.threads, [by_id.get(id(t), t) for t in i.threads])) for i in snapshot.interpreters]
    return model._replace(snapshot, interpreters=model._like(
        snapshot.interpreters, interps)), list(new)


#: The file of the module whose globals name the main thread
#: (threading.main_thread()).
_THREADING = "/threading.py"


def main_tagged(target, snapshot, threads, pid):
    """(snapshot, threads) with the main thread tagged ``main`` where the
    snapshot could not say so.  CPython 3.14+ flags the interpreter's main
    thread while it runs __main__ (interp->threads.main, PYF_THREAD_MAIN)
    and clears that before the same thread finalizes: in
    threading._shutdown, waiting for the other threads, and in the atexit
    functions.  Then the thread the process started with (native id ==
    ``pid``) of the main interpreter, shown and not flagged, no other
    flagged, is tagged when threading.main_thread() says it is the one:
    ``threading._main_thread._ident``, read from the globals of a frame
    of threading.py (no code of the target runs)."""
    if not pid or target.python.minor < 14:
        return snapshot, threads
    first = [t for t in threads if t.interpreter_id == 0]
    started = [t for t in first if tids.os_tid(t) == pid]
    if not started or any(t.is_main for t in first):
        return snapshot, threads
    thread = started[0]
    frames = [f for t in [thread] + first for f in t.frames if f.filename.endswith(_THREADING)]
    if not frames:
        return snapshot, threads
    try:
        ident = values.resolve(target, frames[0], "_main_thread._ident")
    except (CommandError, errors.PyframesError):
        return snapshot, threads
    if ident.kind != "int" or values.int_value(ident) != thread.thread_id:
        return snapshot, threads
    return _replaced(snapshot, threads, [dataclasses.replace(t, is_main=True)
                                         if t is thread else t for t in threads])


def json_text(snapshot, limited=False, frame_values=None, lock_report=None, groups=None,
              lines_of=None, awaits=None, moving=None, extra=None):
    """The JSON document; with --limit each thread also says how many of its
    frames were left out (``more_frames``); with --locals each frame gains
    its variables (``locals``, ``locals_error``); with --locks the
    deadlocks, waits and held locks (pyframes.locks.to_json); with --group
    (``groups``: the threads shown) the document gains "groups", the
    threads grouped as the text groups them (``lines_of(frame)``: the lines
    under a frame, which must be the same too); with ``awaits`` (--tasks:
    taskview.read_awaits) each task's "awaits", and with --locals its
    coroutine frames' variables; ``moving`` (with --locals): the process
    ran while they were read ("locals_while_running"); ``extra``: the front
    end's own top-level keys (Front.json_fields)."""
    if not limited and frame_values is None and lock_report is None and groups is None \
            and awaits is None and not extra:
        return render.format_json(snapshot)
    doc = snapshot.to_dict()
    doc.update(extra or {})
    if moving is not None:
        doc["locals_while_running"] = moving
    if awaits is not None or (frame_values is not None and doc.get("tasks")):
        for task, row in zip(snapshot.tasks or (), doc.get("tasks") or ()):
            if awaits is not None:
                row["awaits"] = awaits[task.id].to_dict() if task.id in awaits else None
            if frame_values is not None:
                for frame, frame_row in zip(task.coroutine_stack, row["coroutine_stack"]):
                    frame_values.add_json(frame, frame_row)
    if lock_report is not None:
        locks.to_json(lock_report, doc, list(snapshot.threads()))
    if groups is not None:
        doc["groups"] = render.groups_json(groups, lines_of)
    rows = [row for interp in doc["interpreters"] for row in interp["threads"]]
    for thread, row in zip(snapshot.threads(), rows):
        if limited:
            row["more_frames"] = thread.more_frames
        if frame_values is not None:
            for frame, frame_row in zip(thread.frames, row["frames"]):
                frame_values.add_json(frame, frame_row)
    return json.dumps(doc)


def snapshot_native(target, native_tid, walk):
    """(snapshot holding only the Python threads whose native id, as the
    interpreter recorded it, is native_tid, those threads) or None (an OS
    thread's id here is the interpreter's through ThreadIds.recorded).  An
    OS thread running a subinterpreter has a thread state in each
    interpreter it entered: all are shown."""
    if not native_tid:
        return None
    try:
        snap = target.snapshot(native_tid=native_tid, **walk)
    except errors.NoSuchThread:
        return None
    threads = list(snap.threads())
    matching = [t for t in threads if t.native_thread_id == native_tid]
    if not matching:
        return None
    if len(threads) != len(matching):
        snap = model.only_threads(snap, matching)
    return snap, matching


def select_thread(target, wanted, by_python_id=True, ids=tids.SAME, **walk):
    """The Python threads of the OS thread ``wanted`` (its id here: ``ids``,
    pyframes.tids, gives the interpreter's) or, with by_python_id (a number
    the user gave), of the Python thread whose native id in its own PID
    namespace it is when no OS thread here has it, or whose
    threading.get_ident() it is.  ``walk`` (max_depth, limit, ...) goes to
    Target.snapshot.

    Returns (snapshot, threads, []) when found, else (None, [], every
    Python thread, each read one frame deep) for the message."""
    # Fast path: the number is a native thread id (one walk of one thread).
    found = snapshot_native(target, ids.recorded(wanted), walk)
    if found is None and by_python_id and ids.foreign and not ids.is_os_thread(wanted):
        found = snapshot_native(target, wanted, walk)  # "2 in its namespace"
    if found is not None:
        return found + ([],)
    full = target.snapshot(max_depth=1)
    threads = list(full.threads())
    if by_python_id:
        for t in threads:
            if t.thread_id != wanted:
                continue
            if t.native_thread_id:
                found = snapshot_native(target, t.native_thread_id, walk)
                if found is not None:
                    return found + ([],)
            snap = target.snapshot(**walk)
            for t2 in snap.threads():
                if t2.thread_id == wanted:
                    return model.only_threads(snap, [t2]), [t2], []
    return None, [], threads


def run_processes(processes, options, failure, crashes=False):
    """The stack command over several processes (``dump PID PID ...``,
    py-bt-fast --all-inferiors, pystack --all-targets): (text, number of
    processes not read).

    ``processes`` yields (pid, command, label, within) per process:
    command its command line (render.process_command) or None, label the
    debugger's name of it ("inferior 2") or None, and within(body) returns
    body(target, front) with its target open (and selected, in a
    debugger), raising PyframesError or CommandError when it cannot be
    read; ``failure(pid, exc)`` gives the message of such an error.  Each
    process's output follows its header (render.process_header); with
    --json one document, {"processes": [each process's document, with its
    "pid" and "command", or its "error"]}; with --group the threads with
    the same stack in every process once (render.format_process_groups;
    JSON "groups"); with ``crashes`` too (core files: each process's
    front end names the thread that received its signal) the crashes that
    are the same once instead (render.format_crashes; JSON "crashes")."""
    group = getattr(options, "group", False)
    if group and (getattr(options, "native", False) or getattr(options, "collapsed", False)
                  or getattr(options, "locals", False) or getattr(options, "locks", False)
                  or options.tasks or options.table):
        raise UsageError("--group across processes shows each stack once (not with "
                         "--native, --collapsed, --locals, --locks, --tasks or --table)")
    body = _grouped_body if group else run
    crashes = crashes and group
    outputs, failed = [], 0
    for pid, command, label, within in processes:
        try:
            out = within(lambda target, front: body(target, options, front))
            error = None
        except (errors.PyframesError, CommandError) as exc:
            out, error = None, failure(pid, exc)
            failed += 1
        outputs.append((pid, command, label, out, error))
    if crashes:
        return _crashes(outputs, options), failed
    if options.json:
        return _processes_json(outputs, group, bool(options.limit)), failed
    if group:
        return _processes_grouped_text(outputs, options), failed
    chunks = []
    for pid, command, label, text, error in outputs:
        head = render.process_header(pid, command, label) + "\n"
        chunks.append(head + (text if error is None else "  error: %s\n" % render.escape(error)))
    return "\n".join(chunks), failed


def _grouped_body(target, options, front):
    """--group across processes: (snapshot, threads shown, source, the
    front end's signal and JSON keys) of one process, the threads as
    front.describe fills them (the front end's target is closed after)."""
    walk = walk_of(options)
    walk["facts"] = True
    snapshot, threads = _chosen(target, options, front, walk)
    if threads:
        snapshot, threads = described(snapshot, threads, front)
        snapshot, threads = main_tagged(target, snapshot, threads, front.process_id(target))
    return (snapshot, threads, None if options.no_source else front.source(), front.signal,
            front.json_fields())


def _crashes(outputs, options):
    """--group across core files: the crashes that are the same once
    (the signal each core's front end names, the stack of the thread that
    received it), text or JSON ({"processes": [...], "crashes": [...]})."""
    crashes, failed, sources, docs = [], [], {}, []
    for pid, command, label, out, error in outputs:
        doc = {"pid": pid, "command": command, "label": label}
        if error is not None:
            failed.append((label, pid, error))
            doc["error"] = error
            docs.append(doc)
            continue
        snapshot, threads, sources[label], signal, extra = out
        hit = [t for t in threads if getattr(t, "signal", None) is not None]
        crashes.append((label, pid, signal, hit[0] if hit else None))
        if options.json:
            own = json.loads(json_text(snapshot, limited=bool(options.limit), extra=extra))
            own.pop("pid", None)
            doc.update(own)
            docs.append(doc)
    if options.json:
        return json.dumps({"processes": docs, "crashes": render.crashes_json(crashes)}) + "\n"
    return render.format_crashes(crashes, show_source=not options.no_source,
                                 source_of=sources.get, failed=failed)


def _processes_json(outputs, group, limited):
    docs, members = [], []
    for pid, command, label, out, error in outputs:
        doc = {"pid": pid, "command": command}
        if label is not None:
            doc["label"] = label
        if error is not None:
            doc["error"] = error
        else:
            if group:
                snapshot, threads, _source, _signal, extra = out
                out = json_text(snapshot, limited=limited, extra=extra)
                members.extend((pid, t) for t in threads)
            own = json.loads(out)
            own.pop("pid", None)  # null when read through a debugger: its own is known
            doc.update(own)
        docs.append(doc)
    result = {"processes": docs}
    if group:
        result["groups"] = render.process_groups_json(members)
    return json.dumps(result) + "\n"


def _processes_grouped_text(outputs, options):
    members, sources, lines = [], {}, []
    for pid, command, label, out, error in outputs:
        if error is not None:
            lines.append(render.process_header(pid, command, label)
                         + " error: %s" % render.escape(error))
            continue
        _snapshot, threads, sources[pid], _signal, _extra = out
        members.extend((pid, t) for t in threads)
    text = "".join(line + "\n" for line in lines)
    if lines and members:
        text += "\n"
    return text + render.format_process_groups(
        members, show_source=not options.no_source, source_of=sources.get)
