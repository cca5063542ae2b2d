"""Plain data objects for a snapshot of a CPython process's Python stacks.

Nothing here touches the shared library: the objects are copied out of a
``pyf_snapshot`` by :meth:`pyframes.Target.snapshot`, and can be built by
hand (tests, other front ends).  ``Snapshot.to_dict()`` is the JSON document
described in docs/json-schema.md.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Tuple

# pyf_frame.flags: the header's PYF_FRAME_* (_abi loads no library)
from ._abi import PYF_FRAME_ASYNC_GENERATOR as FRAME_ASYNC_GENERATOR
from ._abi import PYF_FRAME_CODE_UNREADABLE as FRAME_CODE_UNREADABLE
from ._abi import PYF_FRAME_COROUTINE as FRAME_COROUTINE
from ._abi import PYF_FRAME_ENTRY_FROM_C as FRAME_ENTRY_FROM_C
from ._abi import PYF_FRAME_GENERATOR as FRAME_GENERATOR
from ._abi import PYF_FRAME_NAME_TRUNCATED as FRAME_NAME_TRUNCATED
from ._abi import PYF_FRAME_NO_LOCATION as FRAME_NO_LOCATION
from ._abi import PYF_VALUE_BUDGET, PYF_VALUE_CYCLE, PYF_VALUE_TOO_DEEP, PYF_VALUE_TRUNCATED

__all__ = [
    "PythonInfo",
    "Frame",
    "Thread",
    "ThreadException",
    "Signal",
    "GIL_STATES",
    "NAME_SOURCES",
    "Interpreter",
    "Snapshot",
    "Task",
    "Value",
    "Local",
    "FrameValues",
    "version_string",
    "FRAME_NAME_TRUNCATED",
    "FRAME_NO_LOCATION",
    "FRAME_CODE_UNREADABLE",
    "FRAME_GENERATOR",
    "FRAME_ENTRY_FROM_C",
    "FRAME_COROUTINE",
    "FRAME_ASYNC_GENERATOR",
]

_LEVELS = {0xA: "a", 0xB: "b", 0xC: "rc"}


def version_string(major, minor, micro, level=0xF, serial=0):
    """``"3.15.2"``, or ``"3.15.0a1"``/``"b4"``/``"rc1"`` for pre-releases."""
    text = "%d.%d.%d" % (major, minor, micro)
    suffix = _LEVELS.get(level)
    if suffix:
        text += "%s%d" % (suffix, serial)
    return text


def version_from_hex(hexversion):
    """The version text of a PY_VERSION_HEX value (the one place it is made)."""
    return version_string((hexversion >> 24) & 0xFF, (hexversion >> 16) & 0xFF,
                          (hexversion >> 8) & 0xFF, (hexversion >> 4) & 0xF,
                          hexversion & 0xF)


@dataclass(frozen=True)
class PythonInfo:
    """The CPython runtime of the target."""

    #: "3.15.2"; pre-releases carry their suffix: "3.15.0a1", "3.14.0rc1".
    version: str
    #: PY_VERSION_HEX of the target, e.g. 0x030f02f0.
    hexversion: int
    major: int
    minor: int
    micro: int
    #: True for a free-threaded (Py_GIL_DISABLED) build.
    free_threaded: bool = False
    #: Address of _PyRuntime in the target.
    runtime_addr: int = 0

    def to_dict(self):
        return {
            "version": self.version,
            "hexversion": self.hexversion,
            "free_threaded": bool(self.free_threaded),
        }


@dataclass(frozen=True)
class Frame:
    """One Python frame.  Positions are ``None`` when unknown."""

    #: co_qualname, e.g. "Outer.method" (co_name on CPython 3.8-3.10,
    #: which have no co_qualname); "???" when the code is unreadable.
    function: str
    #: co_filename as the target has it.
    filename: str
    #: 1-based first line of the current instruction.
    line: Optional[int] = None
    #: 1-based last line of the current instruction.
    end_line: Optional[int] = None
    #: 0-based UTF-8 byte offset of the start of the instruction's source.
    column: Optional[int] = None
    #: 0-based UTF-8 byte offset one past its end.
    end_column: Optional[int] = None
    #: Remote address of the _PyInterpreterFrame.
    frame_addr: int = 0
    #: Remote address of the code object.
    code_addr: int = 0
    #: PYF_FRAME_* bits; see the properties below.
    flags: int = 0

    # Not a field: the FrameRecord of a frame made from a record of the
    # target's frame table (_convert.FrameTable); None for a frame made
    # otherwise.
    _record = None

    @property
    def is_generator(self):
        """The frame belongs to a generator, coroutine or async generator."""
        return bool(self.flags & FRAME_GENERATOR)

    @property
    def owner(self):
        """The type of the object that owns the frame: ``"generator"``,
        ``"coroutine"`` or ``"async_generator"`` (as ``type(obj).__name__``
        in the target; a ``@types.coroutine`` generator is a generator);
        None for a frame of a plain call."""
        flags = self.flags
        if not flags & FRAME_GENERATOR:
            return None
        if flags & FRAME_ASYNC_GENERATOR:
            return "async_generator"
        return "coroutine" if flags & FRAME_COROUTINE else "generator"

    @property
    def name_truncated(self):
        """The function or file name was capped at the string limit."""
        return bool(self.flags & FRAME_NAME_TRUNCATED)

    @property
    def no_location(self):
        """The line table was missing, unreadable or corrupt."""
        return bool(self.flags & FRAME_NO_LOCATION)

    @property
    def code_unreadable(self):
        """The code object could not be read: the names are "???"."""
        return bool(self.flags & FRAME_CODE_UNREADABLE)

    @property
    def entry_from_c(self):
        """The first Python frame above a C entry (its caller is C code)."""
        return bool(self.flags & FRAME_ENTRY_FROM_C)

    def to_dict(self):
        d = {
            "function": self.function,
            "filename": self.filename,
            "line": self.line,
            "end_line": self.end_line,
            "column": self.column,
            "end_column": self.end_column,
        }
        if self.flags & FRAME_GENERATOR:
            d["owner"] = self.owner
        return d


class FrameRecord(object):
    """One record of a target's frame table (pyframes.h: a code object and
    instruction, what its frames show), as the frames made from it hold it
    (``Frame._record``): the same object for all of them and for no other
    frame.  They show the same function, file, line and flags (frames that
    differ in any are of another record), so what is made of one (the
    renderer's text) is made once per record; the key is the object itself
    (its identity, never an address of the target, which a freed code object
    leaves to another one)."""

    __slots__ = ("frame",)

    def __init__(self, frame):
        #: The record as a Frame (frame address 0).
        self.frame = frame


@dataclass(frozen=True)
class ThreadException:
    """The exception in flight in a thread: being raised (the thread
    state's current exception) or being handled (the innermost ``except``
    or ``finally`` block's, what ``sys.exception()`` returns there)."""

    #: The exception's type as repr() names it (``ValueError``,
    #: ``mod.Error``).
    type: str
    #: str() of the exception, bounded and escaped; None when unreadable.
    message: Optional[str] = None
    #: True: being handled; False: being raised.
    handled: bool = False
    #: The innermost traceback entry's file and line, None when unknown.
    file: Optional[str] = None
    line: Optional[int] = None

    def to_dict(self):
        return {"type": self.type, "message": self.message, "handled": self.handled,
                "file": self.file, "line": self.line}


@dataclass(frozen=True)
class Signal:
    """The signal that ended a process, as its core file keeps it
    (pyframes.cores)."""

    #: Its number and name ("SIGSEGV").
    number: int
    name: str
    #: si_code and its name ("SEGV_MAPERR", "SI_TKILL"); None when the core
    #: does not keep it (no NT_SIGINFO; lldb's minidump).
    code: Optional[int] = None
    code_name: Optional[str] = None
    #: The faulting address (si_addr) of SIGSEGV, SIGBUS, SIGILL, SIGFPE and
    #: SIGTRAP; None otherwise or when unknown.
    address: Optional[int] = None
    #: The OS thread that received it, None when unknown.
    native_thread_id: Optional[int] = None

    def to_dict(self):
        return {"name": self.name, "number": self.number, "code": self.code,
                "code_name": self.code_name, "address": self.address}

    def words(self):
        """``SIGSEGV (SEGV_MAPERR at 0x0)``, ``SIGABRT (SI_TKILL)``, ``SIGSTOP``."""
        code = self.code_name or (None if self.code is None else "code %d" % self.code)
        if self.address is not None:
            code = ("%s at 0x%x" % (code, self.address)) if code else "at 0x%x" % self.address
        return self.name + (" (%s)" % code if code else "")


#: Thread.gil values
GIL_STATES = ("holds", "waits", "no")
#: Thread.name_source values
NAME_SOURCES = ("python", "os", "debugger")


@dataclass(frozen=True)
class Thread:
    """One Python thread state and its frames."""

    #: pthread_t, as threading.get_ident(); None when unknown.
    thread_id: Optional[int]
    #: OS thread id, as threading.get_native_id() (in the target's own PID
    #: namespace: host_thread_id is the one here where they differ); None
    #: when unknown.
    native_thread_id: Optional[int]
    #: Id of the interpreter the thread belongs to.
    interpreter_id: Optional[int] = None
    #: False when the frame chain could not be read to the end.
    complete: bool = True
    #: Whether the thread holds the GIL; None when the target does not say
    #: (and always for a free-threaded build, which has no GIL).
    holds_gil: Optional[bool] = None
    #: The interpreter's main thread (known on 3.14+; False otherwise).
    is_main: bool = False
    #: Frames, innermost (most recent call) first.
    frames: Tuple[Frame, ...] = ()
    #: Why the walk stopped early (the library's detail), else None.
    error: Optional[str] = None
    #: PYF_E* code of that failure, 0 when none.
    error_code: int = 0
    #: Remote address of the PyThreadState.
    tstate_addr: int = 0
    #: Frames of the chain past a snapshot's ``limit``: walked and counted,
    #: not read (0 without a limit).  Not part of the JSON.
    more_frames: int = 0
    #: The asyncio task the thread is running (snapshots taken with tasks).
    running_task: Optional["Task"] = None
    #: Snapshots taken with entries: per frame, the address of the C-stack
    #: entry frame of the eval call that runs it (frames entered from C),
    #: else 0.  Not part of the JSON.
    entries: Optional[List[int]] = None
    #: The thread belongs to a free-threaded (Py_GIL_DISABLED) build: no
    #: thread holds a GIL.  Not part of the JSON (see python.free_threaded).
    free_threaded: bool = False
    #: The thread's name, and where it came from (NAME_SOURCES): "python"
    #: (its threading.Thread's name, read from the target), "os"
    #: (/proc/PID/task/TID/comm) or "debugger" (the debugger's thread
    #: name); both None when unknown.
    name: Optional[str] = None
    name_source: Optional[str] = None
    #: The GIL as this thread sees it (GIL_STATES): "holds", "waits" (it
    #: asked for it), "no"; None when unknown or for a free-threaded build.
    gil: Optional[str] = None
    #: Where the thread waits in native code when it is not running Python,
    #: worded for people ("waiting for the GIL", "waiting on a lock",
    #: "sleeping", "reading fd 7", "in poll/epoll/select", "in C: symbol",
    #: "on CPU"); None when unknown.
    native: Optional[str] = None
    #: Whether the thread is on a CPU (running or runnable); None when
    #: unknown (a core file).
    on_cpu: Optional[bool] = None
    #: The exception in flight, or None.
    exception: Optional[ThreadException] = None
    #: The thread's OS id where pyframes runs (what ps, gdb's LWP and
    #: /proc/PID/task show there) when the target runs in another PID
    #: namespace (a container read from the node), 0 when its OS thread was
    #: not found; None when the ids are the same (pyframes.tids).
    host_thread_id: Optional[int] = None
    #: In a core file: the signal that ended the process, for the thread
    #: that received it (None for the others, and outside cores).
    signal: Optional[Signal] = None

    def to_dict(self):
        d = {
            "thread_id": self.thread_id,
            "native_thread_id": self.native_thread_id,
        }
        if self.host_thread_id is not None:
            d["host_thread_id"] = self.host_thread_id or None
        d.update({
            "complete": bool(self.complete),
            "holds_gil": self.holds_gil,
            "error": self.error,
            "frames": [f.to_dict() for f in self.frames],
            "name": self.name,
            "name_source": self.name_source,
            "gil": self.gil,
            "native": self.native,
            "on_cpu": self.on_cpu,
            "exception": None if self.exception is None else self.exception.to_dict(),
        })
        if self.running_task is not None:
            d["running_task"] = self.running_task.id
        if self.signal is not None:
            d["signal"] = self.signal.to_dict()
        return d


#: Task.state values, by pyf_task.state
TASK_STATES = ("pending", "cancelled", "finished", "unknown")


@dataclass(frozen=True)
class Task:
    """One asyncio task (CPython 3.14+)."""

    #: The task's id: the address of its Task object.
    id: int
    #: Task.get_name(): "Task-N" for unnamed tasks.
    name: str
    #: "pending", "cancelled", "finished", or "unknown".
    state: str = "unknown"
    #: The thread whose task list holds it (the thread that created it) as
    #: threading.get_ident() and its OS id; None when that thread exited.
    thread_id: Optional[int] = None
    native_thread_id: Optional[int] = None
    interpreter_id: Optional[int] = None
    #: The running task of its thread.
    running: bool = False
    #: Its coroutine stack: the awaited coroutine innermost (first), down
    #: to the task's own coroutine (last).
    coroutine_stack: List[Frame] = field(default_factory=list)
    #: Ids of the tasks awaiting it.
    awaited_by: List[int] = field(default_factory=list)
    #: Why its stack or awaiters are cut short, else None.
    error: Optional[str] = None
    #: Remote address of its coroutine object (0 when none).
    coro_addr: int = 0

    def to_dict(self):
        return {
            "id": self.id,
            "name": self.name,
            "thread_id": self.thread_id,
            "native_thread_id": self.native_thread_id,
            "state": self.state,
            "running": bool(self.running),
            "coroutine_stack": [f.to_dict() for f in self.coroutine_stack],
            "awaited_by": list(self.awaited_by),
            "error": self.error,
        }


@dataclass(frozen=True)
class Interpreter:
    """One interpreter (the main one has id 0) and its threads."""

    id: int
    #: Remote address of the PyInterpreterState.
    addr: int = 0
    threads: Tuple[Thread, ...] = ()

    def to_dict(self):
        return {
            "id": self.id,
            "threads": [t.to_dict() for t in self.threads],
        }


@dataclass(frozen=True)
class Snapshot:
    """Every interpreter, thread and frame read in one walk."""

    #: PID of a live local process, else None (core file, remote, ...).
    pid: Optional[int]
    python: PythonInfo
    interpreters: Tuple[Interpreter, ...] = ()
    #: Every asyncio task, when the snapshot was taken with tasks (else
    #: None); tasks_error says why there are none or why a list was cut.
    tasks: Optional[List[Task]] = None
    tasks_error: Optional[str] = None

    def threads(self) -> Iterator[Thread]:
        """All threads of all interpreters, in order."""
        for interp in self.interpreters:
            yield from interp.threads

    def to_dict(self):
        """The JSON document of docs/json-schema.md (``json.dumps``-ready)."""
        d = {
            "pid": self.pid,
            "python": self.python.to_dict(),
            "interpreters": [i.to_dict() for i in self.interpreters],
        }
        if self.tasks is not None or self.tasks_error is not None:
            d["tasks"] = [t.to_dict() for t in self.tasks or ()]
            d["tasks_error"] = self.tasks_error
        return d


def only_threads(snapshot, threads):
    """A copy of snapshot that holds only ``threads`` (for JSON output)."""
    if not dataclasses.is_dataclass(snapshot):
        return snapshot
    interps = []
    for interp in snapshot.interpreters:
        kept = [t for t in interp.threads if any(t is w for w in threads)]
        if kept:
            interps.append(dataclasses.replace(interp, threads=_like(interp.threads, kept)))
    return dataclasses.replace(snapshot, interpreters=_like(snapshot.interpreters, interps))


def _like(original, items):
    return tuple(items) if isinstance(original, tuple) else list(items)


_FIELDS = {}  # class -> the names of its fields


def _replace(obj, **changes):
    """dataclasses.replace(obj, **changes) for a Thread, Interpreter or
    Snapshot (frozen, every field an argument of __init__, no
    __post_init__), without calling __init__: the object's own attributes
    copied, the changes made (each names a field)."""
    cls = type(obj)
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = frozenset(f.name for f in dataclasses.fields(cls))
    if not names.issuperset(changes):
        raise TypeError("%s has no field %s" % (cls.__name__, ", ".join(
            sorted(set(changes) - names))))
    new = object.__new__(cls)
    d = new.__dict__
    d.update(obj.__dict__)
    d.update(changes)
    return new


# ---- values (Target.frame_locals, Target.value) ---------------------------

#: Value.kind names, by pyf_value.kind (PYF_VALUE_*)
VALUE_KINDS = ("unreadable", "other", "none", "bool", "int", "float", "complex", "str",
               "bytes", "bytearray", "tuple", "list", "dict", "set", "frozenset", "range",
               "type", "function", "builtin", "method", "module", "cell", "code",
               "generator", "coroutine", "async_generator", "exception", "ellipsis",
               "notimplemented")
#: Local.kind names, by pyf_local.kind (PYF_LOCAL_*)
LOCAL_KINDS = {1: "arg", 2: "local", 3: "cell", 4: "free", 5: "stack"}


@dataclass(frozen=True)
class Value:
    """One object of the target as the library decoded it: a node of a
    value tree (pyframes.h, pyf_value).  pyframes.values renders it as
    repr() in the target would."""

    #: VALUE_KINDS: "int", "str", "list", "other", "unreadable", ...
    kind: str
    #: The type's name as repr() of an instance shows it ("" when unreadable).
    type_name: str = ""
    #: Remote address of the object (0 for none).
    addr: int = 0
    #: Kind-specific bytes (str: UTF-8 with surrogatepass; int: 30-bit
    #: digits as little-endian uint32; a name; why it is unreadable), or None.
    data: Optional[bytes] = None
    #: The object's own length (chars, bytes, items, int digits).
    length: int = 0
    real: float = 0.0
    imag: float = 0.0
    number: int = 0
    #: PYF_VALUE_TRUNCATED, _CYCLE, _TOO_DEEP, _BUDGET bits.
    flags: int = 0
    children: Tuple["Value", ...] = ()

    @property
    def text(self):
        """data as text (UTF-8, lone surrogates kept), "" when None."""
        return decode_text(self.data)

    @property
    def truncated(self):
        """data or children cut by a limit (length says how much there was)."""
        return bool(self.flags & PYF_VALUE_TRUNCATED)

    @property
    def cycle(self):
        return bool(self.flags & PYF_VALUE_CYCLE)

    @property
    def too_deep(self):
        return bool(self.flags & PYF_VALUE_TOO_DEEP)

    def cut(self):
        """Whether this value or any below it that its repr() shows was cut
        by a limit (truncated, too deep, out of budget): a built-in
        method's owner and a cell's contents, which repr() names only by
        type and address, do not count."""
        stack = [self]
        while stack:
            v = stack.pop()
            if v.flags & _CUT:
                return True
            if v.kind not in _NAMED_ONLY:
                stack.extend(v.children)
        return False


_CUT = PYF_VALUE_TRUNCATED | PYF_VALUE_TOO_DEEP | PYF_VALUE_BUDGET
# kinds whose children repr() shows by type and address only
_NAMED_ONLY = ("builtin", "cell")


def decode_text(data):
    """UTF-8 text of the target (lone surrogates as "surrogatepass" wrote
    them); never raises."""
    if data is None:
        return ""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


@dataclass(frozen=True)
class Local:
    """One variable of a frame: an argument, a local, a cell or a free
    variable."""

    name: str
    #: "arg", "local", "cell", "free", or "stack" (an entry of the frame's
    #: value stack, Target.frame_locals(stack=True); flags PYF_LOCAL_NO_STACK:
    #: the stack was unreadable, value says why).
    kind: str
    #: PYF_LOCAL_* bits (varargs, varkeywords, kwonly, unbound, hidden;
    #: unsaved: a stack slot of a 3.11 to 3.13 frame whose stack pointer is
    #: not saved, live or left over).
    flags: int = 0
    #: None when unbound.
    value: Optional[Value] = None

    @property
    def unbound(self):
        return self.value is None


@dataclass(frozen=True)
class FrameValues:
    """What Target.frame_locals read of one frame (Target.value: ``value``)."""

    #: co_localsplusnames order: arguments first (then the value stack,
    #: bottom first, with stack=True).
    locals: Tuple[Local, ...] = ()
    #: Target.value: the object read; else None.
    value: Optional[Value] = None
    code_addr: int = 0
    #: The frame's globals dict, 0 when unknown.
    globals_addr: int = 0
    objects_read: int = 0
    bytes_read: int = 0
    #: Target.frame_locals(stack=True): the instruction at the frame's
    #: instr_ptr (its opcode and oparg bytes), None when unread.
    opcode: Optional[int] = None
    oparg: Optional[int] = None
