"""Python frames placed on a debugger's native backtrace.

Every eval-loop call pushes an entry frame on the C stack, inside its own
native stack frame; the Python frames it runs are those from the frame
entered from C (whose entry it is) up to the next entry.  So a run of Python
frames belongs to the physical native frame ``p`` with
``sp(p) <= entry < sp(p + 1)`` (the stack grows down): no symbol is needed,
and names only serve as a cross-check.  Where the native unwind stops short
(JIT code, a core missing stack memory) the runs whose entries lie beyond
its last frame are not placed: they are reported after it, with the reason,
never dropped.

CPython 3.8 and 3.9 push no entry frame: every Python frame runs in an eval
call of its own, entered from C, and the library knows no entry.  There the
runs go by name: the n-th native frame named ``_PyEval_EvalFrameDefault``
(innermost first; the symbol is exported, so even a stripped libpython
names it) runs the n-th run, when as many such frames as runs are found
(else none is placed, and the reason says so).

Pure functions over plain data: the debugger plugins turn their frames
into :class:`NativeFrame` and print what :func:`place` returns.
"""

import bisect
import collections

from .render import escape

__all__ = ["NativeFrame", "Run", "Placement", "Group", "python_runs", "place", "interleave",
           "needs_names", "EVAL_FUNCTION", "python_name", "python_line", "format_mixed",
           "mixed_json_frames", "native_output"]

#: One frame of the debugger's backtrace.  ``sp`` is its stack pointer
#: (None when the debugger has none); ``inline``: a frame the debugger made
#: for inlined code, sharing the registers of the next physical frame.
NativeFrame = collections.namedtuple(
    "NativeFrame", "level pc sp function module inline")

#: A run of Python frames (innermost first) run by one eval call, whose
#: entry frame is at ``entry`` (0: not known).
Run = collections.namedtuple("Run", "frames entry")


class Placement(object):
    """Where the runs go: ``at[i]`` lists the runs placed under native
    frame ``i`` (an index into the native list, the physical frame of its
    inline group); ``unplaced`` the runs that no native frame holds, and
    ``reason`` why."""

    def __init__(self):
        self.at = {}
        self.unplaced = []
        self.reason = None

    def frames_at(self, i):
        """The Python frames placed under native frame i, most recent first."""
        return [f for run in self.at.get(i, ()) for f in run.frames]

    def unplaced_frames(self):
        return [f for run in self.unplaced for f in run.frames]

    def marker(self, what="Python frame"):
        """``N Python frames not placed: why``, or None when all are placed."""
        count = sum(len(r.frames) for r in self.unplaced)
        if not count:
            return None
        return "%d %s%s not placed: %s" % (count, what, "" if count == 1 else "s", self.reason)

    def frame_marker(self):
        """The marker as a frame's name among native ones
        (``[python] N frames not placed: why``), or None."""
        marker = self.marker("frame")
        return None if marker is None else PYTHON_MARK + marker


#: One step of the interleaved backtrace (:func:`interleave`): the native
#: frame ``native`` (an index into the native list) and the Python frames
#: placed under it, or (``native`` None) the frames no native frame holds,
#: under ``marker``.
Group = collections.namedtuple("Group", "native frames marker")


def interleave(count, placement):
    """The backtrace with its Python frames, in the order every front end
    shows it (gdb's frame filter, lldb's frame provider and frame-format
    hook, --native): each of the ``count`` native frames, innermost first,
    with the Python frames its eval call runs (most recent first), then
    the frames that could not be placed under their marker (only when
    there are any).  Yields :class:`Group`."""
    for i in range(count):
        yield Group(i, placement.frames_at(i), None)
    if placement.unplaced:
        yield Group(None, placement.unplaced_frames(), placement.marker())


#: How a Python frame is named among native ones (bt, lldb's frames).
PYTHON_MARK = "[python] "


def python_name(frame):
    return PYTHON_MARK + escape(frame.function)


def python_runs(thread):
    """The thread's frames cut into runs, innermost first: each ends at a
    frame entered from C (its entry from ``thread.entries``).  A last run
    that ends at no such frame is one that ``--limit`` (the library's
    keep_frames) cut: its last frame has the entry of the eval call that
    runs it when the walk found it past the cut (pyf_snapshot_entries),
    else 0 (unknown)."""
    runs, current = [], []
    entries = thread.entries or [0] * len(thread.frames)
    for frame, entry in zip(thread.frames, entries):
        current.append(frame)
        if frame.entry_from_c:
            runs.append(Run(current, entry))
            current = []
    if current:
        runs.append(Run(current, entries[len(thread.frames) - 1]))
    return runs


#: The eval loop's function: each call runs one run of Python frames.
EVAL_FUNCTION = "_PyEval_EvalFrameDefault"


def needs_names(runs):
    """Whether placing ``runs`` needs the native frames' function names:
    no run's entry is known (CPython 3.8, 3.9), so they go by name."""
    return bool(runs) and not any(run.entry for run in runs)


def _is_eval(function):
    # a part gcc split off (".cold") is the same call
    return bool(function) and (function == EVAL_FUNCTION or
                               function.startswith(EVAL_FUNCTION + "."))


def _place_by_name(native, physical, runs, more, result):
    """Runs without entries: the n-th physical frame named as the eval loop
    runs the n-th run, innermost first, when the native frames hold one such
    frame per run (``more``: the thread's runs past --limit, each its own
    eval call too, further out)."""
    evals = [i for i in physical if _is_eval(native[i].function)]
    if len(evals) != len(runs) + more:
        result.unplaced = list(runs)
        result.reason = ("the walk did not find where they were entered from C, and %d "
                         "native frames are named %s for %d eval calls"
                         % (len(evals), EVAL_FUNCTION, len(runs) + more))
        return result
    for i, run in zip(evals, runs):
        result.at.setdefault(i, []).append(run)
    return result


def place(native, runs, more=0):
    """A :class:`Placement` of ``runs`` (innermost first) on ``native``
    (the debugger's frames, innermost first); ``more``: the eval calls of
    the thread's frames left out by --limit (only counted), for the
    placement by name (:func:`needs_names`)."""
    result = Placement()
    # the physical frames, with the stack pointer of each, outward: a frame
    # whose stack pointer lies below an inner one's is not where the
    # debugger lists it (lldb, at a function whose CFA it cannot compute,
    # hands out an inner frame again at an outer index) and holds no run
    physical, sps = [], []
    for i, f in enumerate(native):
        if not f.inline and f.sp is not None and (not sps or f.sp >= sps[-1]):
            physical.append(i)
            sps.append(f.sp)
    if needs_names(runs):
        return _place_by_name(native, physical, runs, more, result)
    floor = 0  # runs go outward: never above the last one placed
    for n, run in enumerate(runs):
        owner = None
        if run.entry:
            k = bisect.bisect_right(sps, run.entry) - 1
            # inside a physical frame that has a caller in the backtrace
            if 0 <= k < len(sps) - 1 and sps[k] <= run.entry < sps[k + 1] and k >= floor:
                owner = k
        if owner is None:
            result.unplaced = list(runs[n:])
            if not run.entry:
                result.reason = "the walk did not find where they were entered from C"
            elif sps and run.entry >= sps[-1]:
                result.reason = ("their eval frames are beyond the end of the native "
                                 "backtrace (its unwinding stopped at frame #%d)"
                                 % native[physical[-1]].level)
            else:
                result.reason = "their entry frame 0x%x is in no native frame" % run.entry
            break
        floor = owner
        result.at.setdefault(physical[owner], []).append(run)
    return result


def _native_line(f, first_of_group):
    """As bt prints it: the address only on the first (innermost) frame of
    an inline group, the frames inlined into a physical one sharing it."""
    text = "#%-3d" % f.level
    if f.pc is not None and first_of_group:
        text += " 0x%016x in" % f.pc
    text += " %s ()" % escape(f.function or "??")
    if f.module:
        text += " from %s" % escape(f.module)
    return text


def python_line(frame):
    """``    [python] File "f.py", line 3, in func``: a Python frame under its
    eval frame."""
    text = '    %sFile "%s"' % (PYTHON_MARK, escape(frame.filename))
    if frame.line is not None:
        text += ", line %d" % frame.line
    return text + ", in %s" % escape(frame.function)


def format_mixed(native, placement, *, source=None):
    """Lines of the interleaved stack: each native frame as ``bt`` shows it,
    the Python frames its eval call runs under it (most recent first), the
    frames that could not be placed at the end under a marker."""
    lines = []

    def python(frames):
        for frame in frames:
            lines.append(python_line(frame))
            if source is not None and frame.line is not None:
                try:
                    text = source(frame.filename, frame.line)
                except Exception:
                    text = None
                if text and text.strip():
                    lines.append("        " + escape(text.strip()))

    for group in interleave(len(native), placement):
        i = group.native
        if i is None:
            lines.append("[%s]" % group.marker)
        else:
            lines.append(_native_line(native[i], i == 0 or not native[i - 1].inline))
        python(group.frames)
    return lines


def mixed_json_frames(native, placement):
    """The thread's frames for --native --json: native and Python frames
    innermost first, each Python frame just before (above) the native eval
    frame that runs it; unplaced ones at the end."""
    out = []
    for group in interleave(len(native), placement):
        if group.native is None:
            out.extend(dict(frame.to_dict(), kind="python", placed=False)
                       for frame in group.frames)
            continue
        f = native[group.native]
        out.extend(dict(frame.to_dict(), kind="python") for frame in group.frames)
        out.append({"kind": "native", "function": f.function, "address": f.pc,
                    "module": f.module, "sp": f.sp})
    return out


def native_output(snapshot, threads, native_of, header_of, json_out, source=None, limit=None):
    """--native of every front end (a debugger's, the command line's on a
    core file): each thread's native frames (``native_of(thread)``, a list
    of NativeFrame innermost first) with its Python frames placed in them;
    the JSON document (``json_out``: the snapshot's, each thread's
    "frames" its mixed list) or the text, each thread under
    ``header_of(thread)``, source lines from ``source``.  With --limit
    (``limit``) each thread says how many Python frames it left out."""
    import json
    placed = [(t, native_of(t)) for t in threads]
    placed = [(t, native, place(native, python_runs(t), t.more_frames or 0))
              for t, native in placed]
    if json_out:
        doc = snapshot.to_dict()
        by_tstate = {t.tstate_addr: (n, p) for t, n, p in placed}
        rows = [th for i in doc["interpreters"] for th in i["threads"]]
        for thread, row in zip(snapshot.threads(), rows):
            if thread.tstate_addr in by_tstate:
                row["frames"] = mixed_json_frames(*by_tstate[thread.tstate_addr])
            if limit:
                row["more_frames"] = thread.more_frames
        return doc
    out = []
    for i, (t, native, placement) in enumerate(placed):
        if i:
            out.append("")
        out.append(header_of(t))
        out.extend(format_mixed(native, placement, source=source))
        if limit and t.more_frames:
            out.append("[%d more Python frame%s not shown: --limit %d]" % (
                t.more_frames, "" if t.more_frames == 1 else "s", limit))
    return "".join(line + "\n" for line in out)
