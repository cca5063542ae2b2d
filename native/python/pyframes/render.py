"""Text, JSON and collapsed-stack renderings of a snapshot.

Pure functions: they take model objects and yield lines (without newlines)
or return the text.  The only I/O is reading source lines, through an
injectable callable ``source(filename, line) -> Optional[str]``;
:class:`SourceReader` is the default.  Everything that comes from the
target (names, file names, error details, source text) goes through
:func:`escape` (pyframes.escaping), so a hostile process cannot send
control sequences to the terminal.

The text of a stack is made per distinct frame, not per frame: the frames
of one record of the target's frame table (every level of a recursion)
share one text, made and escaped once per rendering (_FrameTexts), and a
thread's frames are one join of those; the join of a thread's tuple of
frames is kept for the next rendering of the same tuple (_KEPT), which
checks only the text of each distinct record.
"""

import io
import json
import operator
import os
import re
import stat
import tokenize
from typing import Callable, Iterable, Iterator, Optional, Union

from .escaping import collapsed_name as _collapsed_name, escape
from .model import Snapshot, Thread
from .tids import os_tid

__all__ = [
    "escape",
    "format_text",
    "format_thread",
    "format_frame",
    "format_json",
    "format_collapsed",
    "thread_header",
    "exception_line",
    "group_threads",
    "group_header",
    "groups_json",
    "process_command",
    "process_header",
    "format_process_groups",
    "process_groups_json",
    "labelled_header",
    "thread_table",
    "format_threads_text",
    "format_target_info",
    "SourceReader",
    "process_source",
]

SourceFn = Callable[[str, int], Optional[str]]


class SourceReader:
    """``source(filename, line)`` over local files, with a small cache.

    Returns the line (without its newline) or None: for pseudo file names
    such as ``<string>``, files that are not regular, larger than
    ``max_bytes`` or unreadable, and lines out of range.  Never raises.
    The encoding follows PEP 263 (coding cookie, else UTF-8), with
    undecodable bytes replaced.

    A file is read once and kept with its size and modification time; after
    :meth:`refresh` (a debugger command calls it once per command) each file
    is checked again by one ``stat`` at its next use and re-read when it
    changed.
    """

    def __init__(self, max_files=32, max_bytes=8 << 20):
        self.max_files = max_files
        self.max_bytes = max_bytes
        self._cache = {}   # filename -> [lines or None, (size, mtime_ns) or None, epoch]
        self._epoch = 0

    def refresh(self):
        """Check each cached file again at its next use."""
        self._epoch += 1

    def __call__(self, filename, line):
        try:
            if not filename or line is None or line < 1:
                return None
            lines = self._lines(filename)
            if lines is None or line > len(lines):
                return None
            return lines[line - 1]
        except Exception:
            return None

    @staticmethod
    def _identity(filename):
        try:
            st = os.stat(filename)
        except (OSError, ValueError):
            return None
        return (st.st_size, st.st_mtime_ns, stat.S_ISREG(st.st_mode))

    def _lines(self, filename):
        entry = self._cache.get(filename)
        if entry is not None:
            if entry[2] == self._epoch:
                return entry[0]
            if self._identity(filename) == entry[1]:
                entry[2] = self._epoch
                return entry[0]
            del self._cache[filename]
        ident = self._identity(filename)
        lines = self._load(filename, ident)
        if len(self._cache) >= self.max_files:
            self._cache.pop(next(iter(self._cache)))
        self._cache[filename] = [lines, ident, self._epoch]
        return lines

    def _load(self, filename, ident):
        if filename.startswith("<") and filename.endswith(">"):
            return None
        if ident is None or not ident[2] or ident[0] > self.max_bytes:
            return None
        try:
            with open(filename, "rb") as f:
                data = f.read(self.max_bytes + 1)
        except (OSError, ValueError):
            return None
        if len(data) > self.max_bytes:
            return None
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except (SyntaxError, LookupError):
            encoding = "utf-8"
        try:
            text = data.decode(encoding, "replace")
        except LookupError:
            text = data.decode("utf-8", "replace")
        return text.splitlines()


#: The longest thread name, exception type and message a header shows.
MAX_NAME = 100
MAX_MESSAGE = 200

_GIL_WORDS = {"holds": "holds the GIL", "waits": "waiting for the GIL",
              "no": "does not hold the GIL"}


def bounded(text, limit):
    """``text`` escaped and cut at ``limit`` characters (``...`` after)."""
    text = escape(text)
    return text if len(text) <= limit else text[:limit] + "..."


def quoted_name(name):
    """A thread name as headers show it: escaped, bounded, in double
    quotes (a quote inside written ``\\"``)."""
    return '"%s"' % bounded(name, MAX_NAME).replace('"', '\\"')


def _gil_words(thread):
    gil = getattr(thread, "gil", None)
    if gil in _GIL_WORDS:
        return _GIL_WORDS[gil]
    if thread.holds_gil is True:
        return "holds the GIL"
    if thread.holds_gil is False:
        return "does not hold the GIL"
    if getattr(thread, "free_threaded", False):
        return "free-threaded: no GIL"
    return None


def native_ids(thread):
    """``12345``: the thread's OS id; ``30290, 2 in its namespace`` for a
    thread of another PID namespace (a container read from the node): its
    OS id here first (what ps, gdb and lldb show), then the interpreter's
    (``?`` for an OS thread not found); None when unknown."""
    native = thread.native_thread_id
    if native is None:
        return None
    host = getattr(thread, "host_thread_id", None)
    if host is None:
        return "%d" % native
    return "%s, %d in its namespace" % ("%d" % host if host else "?", native)


def thread_header(thread):
    """``Thread 0x7f12... "name" (native 12345, interpreter 0, main, holds
    the GIL, waiting on a lock):``, leaving out what is unknown (a core's
    thread that received the signal says so after its native ids:
    ``received SIGSEGV (SEGV_MAPERR at 0x0)``): the name (the target's
    threading name, else the OS's or the debugger's), the native ids
    (native_ids: both where a PID namespace makes them differ), the GIL
    state (Thread.gil, else holds_gil, known on 3.15 default builds; a
    free-threaded build has no GIL holder: "free-threaded: no GIL"), where
    it waits in native code (Thread.native)."""
    parts = []
    ids = native_ids(thread)
    if ids is not None:
        parts.append("native " + ids)
    signal = getattr(thread, "signal", None)
    if signal is not None:
        parts.append("received " + escape(signal.words()))
    if thread.interpreter_id is not None:
        parts.append("interpreter %d" % thread.interpreter_id)
    if thread.is_main:
        parts.append("main")
    gil = _gil_words(thread)
    if gil:
        parts.append(gil)
    native = getattr(thread, "native", None)
    if native and native != gil:
        parts.append(escape(native))
    task = getattr(thread, "running_task", None)
    if task is not None:
        parts.append('running task "%s" (0x%x)' % (escape(task.name), task.id))
    if not thread.complete:
        reason = thread.error or "frame chain not read to the end"
        parts.append("incomplete: " + escape(reason))
    head = "Thread"
    if thread.thread_id is not None:
        head += " 0x%x" % thread.thread_id
    name = getattr(thread, "name", None)
    if name is not None:
        head += " " + quoted_name(name)
    if parts:
        head += " (%s)" % ", ".join(parts)
    return head + ":"


def exception_line(exc):
    """``  handling ValueError: bad value (app.py:12)`` (or ``raising``):
    the exception in flight in a thread, escaped and bounded; None for
    none."""
    if exc is None:
        return None
    text = "  %s %s" % ("handling" if exc.handled else "raising", bounded(exc.type, MAX_NAME))
    if exc.message:
        text += ": " + bounded(exc.message, MAX_MESSAGE)
    if exc.file:
        where = escape(exc.file)
        if exc.line is not None:
            where += ":%d" % exc.line
        text += " (%s)" % where
    return text


# the tag of a frame owned by a generator object (Frame.owner)
_OWNER_TAGS = {"generator": " [generator]", "coroutine": " [coroutine]",
               "async_generator": " [async generator]"}


def format_frame(frame, *, show_source=True, source=None, addresses=False):
    """Lines of one frame: ``  File "f.py", line 3, in func`` and, when
    available, its source line indented by 4 spaces."""
    text = '  File "%s"' % escape(frame.filename)
    if frame.line is not None:
        text += ", line %d" % frame.line
    text += ", in %s" % escape(frame.function)
    owner = frame.owner
    if owner is not None:
        text += _OWNER_TAGS[owner]
    if addresses:
        text += " (frame 0x%x, code 0x%x)" % (frame.frame_addr, frame.code_addr)
    yield text
    if show_source and source is not None and frame.line is not None:
        try:
            line = source(frame.filename, frame.line)
        except Exception:
            line = None
        if line:
            line = line.strip()
            if line:
                yield "    " + escape(line)


_record_of = operator.attrgetter("_record")


class _KeptTexts:
    """The text of threads' frame tuples kept from one rendering to the
    next.  A debugger's next command at the same stop renders the same
    tuple again (the binding hands a thread the tuple of the last snapshot
    again when the library marks its frames unchanged): its text serves
    again when the text of each of its distinct records, made anew (the
    source file may have changed), is what it was.  Each entry holds its
    tuple (so no other tuple takes its id while it is kept); at most
    ``max_entries`` entries and ``max_chars`` characters of text are kept,
    the oldest entries go first."""

    def __init__(self, max_entries, max_chars):
        self.max_entries = max_entries
        self.max_chars = max_chars
        self._by_id = {}  # id(tuple) -> (tuple, ((record, its text), ...), text)
        self._chars = 0

    def clear(self):
        """Forget every entry."""
        self._by_id.clear()
        self._chars = 0

    def get(self, frames):
        """(the records and their texts, the text) kept of ``frames``, or None."""
        entry = self._by_id.get(id(frames))
        if entry is None or entry[0] is not frames:
            return None
        return entry[1:]

    def put(self, frames, made, text):
        by_id = self._by_id
        old = by_id.pop(id(frames), None)
        if old is not None:
            self._chars -= len(old[2])
        if len(text) > self.max_chars:
            return
        while by_id and (self._chars + len(text) > self.max_chars or
                         len(by_id) >= self.max_entries):
            self._chars -= len(by_id.pop(next(iter(by_id)))[2])
        by_id[id(frames)] = (frames, made, text)
        self._chars += len(text)


_KEPT = _KeptTexts(1024, 4 << 20)


class _FrameTexts:
    """The text of frames (format_frame's lines, each ending in a newline)
    in one rendering, each distinct frame made and escaped once: frames of
    one frame-table record (Frame._record, the same function, file, line
    and owner) share it, other frames by what they show.  A frame's source
    line is looked up once per rendering, so the text of a file edited
    between two commands is the new one."""

    def __init__(self, show_source, source):
        self.show_source = show_source
        self.source = source
        self._texts = {}  # record or (filename, line, function, owner) -> text
        self._heads = {}  # the same keys -> (the frame's first line, the rest)

    def _parts(self, frame, key):
        parts = self._heads.get(key)
        if parts is None:
            lines = list(format_frame(frame, show_source=self.show_source, source=self.source))
            parts = self._heads[key] = (lines[0], "".join(line + "\n" for line in lines[1:]))
        return parts

    def _text(self, frame, key):
        text = self._texts.get(key)
        if text is None:
            head, rest = self._parts(frame, key)
            text = self._texts[key] = head + "\n" + rest
        return text

    @staticmethod
    def _key(frame):
        record = frame._record
        if record is None:
            return (frame.filename, frame.line, frame.function, frame.owner)
        return record

    def one(self, frame):
        """The text of one frame."""
        return self._text(frame, self._key(frame))

    def many(self, frames, keep=False):
        """The text of a sequence of frames: each distinct one made once,
        one lookup per frame; none when the tuple ``frames`` (``keep``: a
        thread's own) is the one the last rendering of it had, with the
        same text for each of its records."""
        kept = _KEPT.get(frames) if keep else None
        if kept is not None and all(self._text(record.frame, record) == text
                                    for record, text in kept[0]):
            return kept[1]
        keys = list(map(_record_of, frames))
        distinct = set(keys)
        if None in distinct:  # frames without a record: each looked at
            return "".join(map(self.one, frames))
        made = tuple((record, self._text(record.frame, record)) for record in distinct)
        text = "".join(map(self._texts.__getitem__, keys))
        if keep and type(frames) is tuple:
            _KEPT.put(frames, made, text)
        return text

    def addressed(self, frame):
        """The text of one frame with its frame and code object addresses."""
        head, rest = self._parts(frame, self._key(frame))
        return "%s (frame 0x%x, code 0x%x)\n%s" % (head, frame.frame_addr, frame.code_addr,
                                                   rest)


def _thread_text(thread, header, texts, limit=None, addresses=False, locals_of=None):
    """format_thread's lines, each ending in a newline, under ``header``
    (texts: a _FrameTexts)."""
    out = [header, "\n"]
    exc = exception_line(getattr(thread, "exception", None))
    if exc is not None:
        out += (exc, "\n")
    frames = thread.frames
    if not frames:
        out.append("  (no Python frames)\n")
        return "".join(out)
    out.append("Traceback (most recent call first):\n")
    shown = frames if limit is None else frames[:max(limit, 0)]
    if addresses or locals_of is not None:
        text_of = texts.addressed if addresses else texts.one
        for frame in shown:
            out.append(text_of(frame))
            if locals_of is not None:
                out.extend(line + "\n" for line in locals_of(frame))
    else:
        out.append(texts.many(shown, keep=shown is frames))
    rest = len(frames) - len(shown) + thread.more_frames
    if rest > 0:
        out.append("  ... %d more frame%s\n" % (rest, "" if rest == 1 else "s"))
    return "".join(out)


def format_thread(thread, *, limit=None, show_source=True, source=None,
                  addresses=False, locals_of=None):
    """Lines of one thread: header, ``Traceback (most recent call first):``
    and the frames, innermost first; ``locals_of(frame)``, when given, the
    lines under each frame (its variables).  Frames that show the same
    (every level of a recursion) are formatted once."""
    text = _thread_text(thread, thread_header(thread), _FrameTexts(show_source, source),
                        limit, addresses, locals_of)
    yield from text.split("\n")[:-1]


def _threads(snapshot_or_threads):
    if isinstance(snapshot_or_threads, Snapshot):
        return snapshot_or_threads.threads()
    if isinstance(snapshot_or_threads, Thread):
        return iter((snapshot_or_threads,))
    return iter(snapshot_or_threads)


def format_text(snapshot_or_threads: Union[Snapshot, Thread, Iterable[Thread]],
                *, limit: Optional[int] = None, show_source: bool = True,
                source: Optional[SourceFn] = None,
                addresses: bool = False, locals_of=None) -> Iterator[str]:
    """py-bt style lines for every thread, a blank line between threads.

    ``limit`` caps the frames shown per thread (innermost kept); the rest
    is summarised as ``  ... N more frames``.  ``source`` defaults to a
    fresh :class:`SourceReader`; ``addresses`` appends frame and code
    object addresses; ``locals_of`` as :func:`format_thread`'s.
    """
    if show_source and source is None:
        source = SourceReader()
    texts = _FrameTexts(show_source, source)
    first = True
    for thread in _threads(snapshot_or_threads):
        if not first:
            yield ""
        first = False
        yield from _thread_text(thread, thread_header(thread), texts, limit, addresses,
                                locals_of).split("\n")[:-1]


def format_json(snapshot: Snapshot, *, indent: Optional[int] = None) -> str:
    """Exactly one JSON document: ``json.dumps(snapshot.to_dict())``
    (ASCII-only; see docs/json-schema.md)."""
    return json.dumps(snapshot.to_dict(), indent=indent)


def format_collapsed(snapshot_or_threads) -> Iterator[str]:
    """One line per thread in the collapsed-stack format of flame graph
    tools: ``thread-<native id>;outermost;...;innermost 1``, each frame
    ``function (filename:line)``."""
    for thread in _threads(snapshot_or_threads):
        if os_tid(thread) is not None:
            parts = ["thread-%d" % os_tid(thread)]
        elif thread.thread_id is not None:
            parts = ["thread-0x%x" % thread.thread_id]
        else:
            parts = ["thread-unknown"]
        for frame in reversed(thread.frames):
            where = _collapsed_name(frame.filename)
            if frame.line is not None:
                where += ":%d" % frame.line
            parts.append("%s (%s)" % (_collapsed_name(frame.function), where))
        yield ";".join(parts) + " 1"


def process_source(pid, fallback=None):
    """A source reader that looks at files as the process sees them:
    /proc/PID/root for absolute names, /proc/PID/cwd for relative ones,
    then the name itself."""
    reader = fallback or SourceReader()

    def source(filename, line):
        if not filename or filename.startswith("<"):
            return None
        if os.path.isabs(filename):
            candidates = ("/proc/%d/root%s" % (pid, filename), filename)
        else:
            candidates = (os.path.join("/proc/%d/cwd" % pid, filename),
                          filename)
        for path in candidates:
            text = reader(path, line)
            if text is not None:
                return text
        return None

    return source


def root_source(root, fallback=None):
    """A source reader that looks at files under ``root`` first (a core's
    sysroot: the files of the machine or container it was written on),
    then at the name itself."""
    reader = fallback or SourceReader()
    if not root:
        return reader

    def source(filename, line):
        if not filename or filename.startswith("<"):
            return None
        if os.path.isabs(filename):
            text = reader(os.path.join(root, filename.lstrip("/")), line)
            if text is not None:
                return text
        return reader(filename, line)

    return source


def _num(value, fmt):
    return "?" if value is None else fmt % value


def thread_table(threads, label_of):
    """One line per thread: the debugger's label (label_of(its OS id) or
    None), native id (native_ids), Python thread id and where it is."""
    rows = []
    for t in threads:
        label = label_of(os_tid(t)) if os_tid(t) else None
        where = "no Python frame"
        if t.frames:
            f = t.frames[0]
            where = "in %s (%s:%s)" % (
                escape(f.function), escape(f.filename),
                f.line if f.line is not None else "?")
        rows.append("  %-10s native id %-8s Python thread id %-16s %s" % (
            label or "-", native_ids(t) or "?",
            _num(t.thread_id, "0x%x"), where))
    return rows


def labelled_header(thread, label=None, debugger=None):
    """thread_header, naming the debugger's own label for the thread
    (``Thread 0x7f... (native 12345) [gdb thread 2]:``) when there is one."""
    header = thread_header(thread)
    if label and header.endswith(":"):
        header = "%s [%s %s]:" % (header[:-1], debugger, label)
    return header


#: How many names and native ids a group's header lists.
GROUP_SHOWN = 8


def _stack_key(thread, lines_of=None):
    exc = getattr(thread, "exception", None)
    key = (tuple((f.function, f.filename, f.line) for f in thread.frames),
           thread.complete, thread.more_frames,
           None if exc is None else (exc.type, exc.message, exc.handled, exc.file, exc.line),
           getattr(thread, "signal", None))
    if lines_of is not None:
        key += (tuple(tuple(lines_of(f)) for f in thread.frames),)
    return key


def group_threads(threads, lines_of=None):
    """--group: the threads as lists of those with the same stack (the same
    frames: function, file and line; the same completeness and exception
    in flight; with ``lines_of(frame)``, the lines shown under each frame,
    --locks' held locks and waits, the same too), in the order of each
    list's first thread."""
    groups = {}
    for t in threads:
        groups.setdefault(_stack_key(t, lines_of), []).append(t)
    return list(groups.values())


def _listed(items):
    shown = ", ".join(items[:GROUP_SHOWN])
    if len(items) > GROUP_SHOWN:
        shown += ", ... %d more" % (len(items) - GROUP_SHOWN)
    return shown


_THREAD_LABEL = re.compile(r"^thread (#?)(\d+)$")


def labels_text(labels, debugger):
    """The debugger's labels of a group's threads, all of them, as one
    text: ``gdb threads 3-12, 15`` (``thread 3`` ... ``thread 12`` and
    ``thread 15``), ``lldb threads #3-#12``; labels of another form as
    they are (``gdb thread 2.3, thread 2.4``).  None without a label."""
    labels = [label for label in labels if label]
    if not labels:
        return None
    found = [_THREAD_LABEL.match(label) for label in labels]
    if not all(found) or len(set(m.group(1) for m in found)) != 1:
        return "%s %s" % (debugger, ", ".join(labels))
    mark = found[0].group(1)
    numbers = sorted(set(int(m.group(2)) for m in found))
    runs = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    parts = ["%s%d" % (mark, a) if a == b else "%s%d-%s%d" % (mark, a, mark, b)
             for a, b in runs]
    return "%s thread%s %s" % (debugger, "s" if len(numbers) > 1 else "", ", ".join(parts))


def group_header(group, pids=None, labels=None, debugger=None):
    """``12 threads with the same stack: "pool-0", "pool-1", ... (native
    1, 2, ..., waiting on a lock) [gdb threads 3-14]:``: the count, the
    names (at most GROUP_SHOWN; a name several threads share once, with
    their count: ``"python3.13" x12``), the native ids, the native wait
    when every thread of the group has the same, and the debugger's labels
    of every thread (``labels``, each thread's or None; labels_text).  With
    ``pids`` (each thread's process, --group across processes): ``8
    threads in 8 processes with the same stack: ... (pid:native 1234:1234,
    1235:1235, ...)``."""
    counts = {}
    for t in group:
        if getattr(t, "name", None) is not None:
            counts[t.name] = counts.get(t.name, 0) + 1
    names = [quoted_name(n) + (" x%d" % k if k > 1 else "") for n, k in counts.items()]
    head = "%d threads" % len(group)
    if pids is not None:
        head += " in %d process%s" % (len(set(pids)), "" if len(set(pids)) == 1 else "es")
    head += " with the same stack"
    if names:
        head += ": " + _listed(names)
    parts = []
    if pids is not None:
        parts.append("pid:native " + _listed(_members(group, pids)))
    else:
        tids = ["%d" % os_tid(t) for t in group if os_tid(t) is not None]
        if tids:
            parts.append("native " + _listed(tids))
    natives = set(getattr(t, "native", None) for t in group)
    if len(natives) == 1 and None not in natives:
        parts.append(escape(natives.pop()))
    if parts:
        head += " (%s)" % ", ".join(parts)
    listed = labels_text(labels or (), debugger) if debugger else None
    if listed:
        head += " [%s]" % escape(listed)
    return head + ":"


def groups_json(threads, lines_of=None):
    """The "groups" list of --group --json: one entry per distinct stack
    (group_threads), with every thread's native id, Python thread id and
    name (null when unknown) in the same order, and the frames once; the
    threads' OS ids here too ("host_thread_ids") when they run in another
    PID namespace."""
    return [_group_json(group) for group in group_threads(threads, lines_of)]


def _group_json(group):
    entry = {"native_thread_ids": [t.native_thread_id for t in group]}
    if any(getattr(t, "host_thread_id", None) is not None for t in group):
        entry["host_thread_ids"] = [getattr(t, "host_thread_id", None) or None for t in group]
    entry.update({"thread_ids": [t.thread_id for t in group],
                  "names": [getattr(t, "name", None) for t in group],
                  "frames": [f.to_dict() for f in group[0].frames]})
    return entry


def _members(threads, pids):
    """``pid:native_tid`` of each thread (``pid:?`` without a native id)."""
    return ["%d:%s" % (pid, "?" if t.native_thread_id is None else t.native_thread_id)
            for t, pid in zip(threads, pids)]


#: The longest command line a process header shows.
MAX_COMMAND = 200


def process_command(pid):
    """The command line of a live local process (/proc/PID/cmdline, its
    arguments joined by spaces), escaped and bounded; None when unreadable."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            data = f.read(4 * MAX_COMMAND)
    except (OSError, ValueError):
        return None
    words = [w.decode("utf-8", "backslashreplace") for w in data.split(b"\0") if w]
    return bounded(" ".join(words), MAX_COMMAND) if words else None


def process_header(pid, command=None, label=None):
    """``Process 1234 (python3.14 train.py --rank 3) [gdb inferior 2]:``,
    leaving out what is unknown (the command is already escaped)."""
    head = "Process %d" % pid if pid is not None else "Process ?"
    if command:
        head += " (%s)" % command
    if label:
        head += " [%s]" % escape(label)
    return head + ":"


def format_process_groups(members, *, show_source=True, source_of=None):
    """--group across processes: members, (pid, thread) of every process,
    as lists of the threads with the same stack, each once under one header
    (group_header with the pids); a thread alone under its own header
    naming its process (``Thread 0x... (native 5678, ...) [process 1234]:``).
    source_of(pid): the source reader of that process, or None."""
    by_thread = {id(t): pid for pid, t in members}
    blocks = []
    for unit in group_threads([t for _, t in members]):
        pids = [by_thread[id(t)] for t in unit]
        source = source_of(pids[0]) if show_source and source_of is not None else None
        if len(unit) > 1:
            header = group_header(unit, pids)
        else:
            header = labelled_header(unit[0], "%d" % pids[0], "process")
        blocks.append(_thread_text(unit[0], header, _FrameTexts(source is not None, source)))
    return "\n".join(blocks)


def process_groups_json(members):
    """The "groups" list of --group --json across processes: groups_json's
    entries, each with its threads' "pids" and "members" (``pid:native_tid``)."""
    by_thread = {id(t): pid for pid, t in members}
    groups = []
    for unit in group_threads([t for _, t in members]):
        pids = [by_thread[id(t)] for t in unit]
        entry = {"members": _members(unit, pids), "pids": pids}
        entry.update(_group_json(unit))
        groups.append(entry)
    return groups


def _crash_key(crash):
    """Crashes are the same when the same signal was received by a thread
    with the same stack (or by threads that run no Python code)."""
    signal, thread = crash
    return (None if signal is None else signal.name,
            None if thread is None else _stack_key(thread)[:4])


def group_crashes(crashes):
    """The crashes (core label, pid, Signal or None, the thread that
    received it or None) as lists of those that are the same, in the order
    of each list's first."""
    groups = {}
    for c in crashes:
        groups.setdefault(_crash_key(c[2:]), []).append(c)
    return list(groups.values())


def _crash_words(signal, thread):
    what = "no signal recorded" if signal is None else signal.name
    if thread is None:
        return what + (" in a thread that runs no Python code" if signal is not None else "")
    return what + " in thread " + (quoted_name(thread.name) + " "
                                   if getattr(thread, "name", None) else "") + (
        "(native %d)" % thread.native_thread_id if thread.native_thread_id else "")


def crash_header(group):
    """``5 cores, the same crash: SIGSEGV in the same stack (core.11,
    core.12, ...; pid:native 11:11, 12:12, ...):`` of a group of crashes
    (one: ``core.7 (pid 17): SIGABRT in thread "MainThread" (native
    17):``)."""
    label, pid, signal, thread = group[0]
    if len(group) == 1:
        head = "%s%s: " % (escape(label), " (pid %d)" % pid if pid is not None else "")
        return head + _crash_words(signal, thread).strip() + ":"
    members = ["%s:%s" % ("?" if p is None else p,
                          "?" if t is None or t.native_thread_id is None else t.native_thread_id)
               for _, p, _, t in group]
    if thread is None:
        words = _crash_words(signal, thread)
    else:  # each core's thread has its own name and id: the members say them
        words = ("no signal recorded" if signal is None else signal.name) + " in the same stack"
    return "%d cores, the same crash: %s (%s; pid:native %s):" % (
        len(group), words, _listed([escape(c[0]) for c in group]), _listed(members))


def format_crashes(crashes, *, show_source=True, source_of=None, failed=()):
    """--group across cores: ``7 cores, 2 distinct crashes``, then each
    distinct crash once under its header (crash_header), the stack of its
    first core; ``failed``: (label, pid, error) of the cores not read.
    source_of(label): the source reader of that core, or None."""
    groups = group_crashes(crashes)
    total = len(crashes) + len(failed)
    out = io.StringIO()
    out.write("%d core%s, %d distinct crash%s" % (
        total, "" if total == 1 else "s", len(groups), "" if len(groups) == 1 else "es"))
    if failed:
        out.write(", %d not read" % len(failed))
    out.write("\n")
    for label, pid, error in failed:
        out.write("%s%s: error: %s\n" % (escape(label), " (pid %d)" % pid if pid else "",
                                           escape(error)))
    for group in groups:
        out.write("\n" + crash_header(group) + "\n")
        thread = group[0][3]
        if thread is None:
            continue
        source = source_of(group[0][0]) if show_source and source_of is not None else None
        lines = format_text([thread], show_source=show_source and source is not None,
                            source=source)
        next(lines)  # the thread's own header: the group's says it
        for line in lines:
            out.write(line + "\n")
    return out.getvalue()


def crashes_json(crashes):
    """The "crashes" list of --group --json across cores: one entry per
    distinct crash, its cores ("cores": their files), "pids",
    "native_thread_ids", "names" in the same order, the signal's name and
    the frames once."""
    out = []
    for group in group_crashes(crashes):
        signal, thread = group[0][2], group[0][3]
        out.append({"signal": None if signal is None else signal.name,
                    "cores": [c[0] for c in group],
                    "pids": [c[1] for c in group],
                    "native_thread_ids": [None if c[3] is None else c[3].native_thread_id
                                          for c in group],
                    "names": [None if c[3] is None else getattr(c[3], "name", None)
                              for c in group],
                    "frames": [] if thread is None else [f.to_dict() for f in thread.frames]})
    return out


def format_threads_text(threads, *, label_of=None, debugger=None, limit=None,
                        show_source=True, source=None, addresses=False, locals_of=None,
                        group=False):
    """The text of the stack command: each thread as format_text shows it,
    its header naming the debugger's own label for the thread
    (``[gdb thread 2]``) when label_of gives one, threads separated by an
    empty line.  With ``group`` the threads with the same stack (and the
    same lines under its frames, ``locals_of``) are shown once, under one
    header (group_header, naming every thread's label)."""
    if show_source and source is None:
        source = SourceReader()
    texts = _FrameTexts(show_source, source)
    blocks = []
    for unit in group_threads(threads, locals_of) if group else [[t] for t in threads]:
        t = unit[0]
        if len(unit) > 1:
            labels = ([label_of(os_tid(m)) if os_tid(m) else None for m in unit]
                      if label_of else None)
            blocks.append(_thread_text(t, group_header(unit, labels=labels, debugger=debugger),
                                       texts, limit, locals_of=locals_of))
            continue
        label = label_of(os_tid(t)) if label_of and os_tid(t) else None
        blocks.append(_thread_text(t, labelled_header(t, label, debugger), texts, limit,
                                   addresses, locals_of))
    return "\n".join(blocks)


def format_target_info(facts):
    """``--info``: one "name: value" line per (name, value) fact."""
    return "".join("%s: %s\n" % (name, escape(str(value))) for name, value in facts)
