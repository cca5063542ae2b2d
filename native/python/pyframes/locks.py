"""Held locks, lock waits and waits-for cycles (deadlocks) of a snapshot's
threads, read from the frames' value stacks (Target.frame_locals with
``stack=True``; pyframes.h, PYF_VALUES_STACK).

- A frame **holds** a lock while it is inside ``with lock:``: BEFORE_WITH
  (3.11 to 3.13) leaves the bound ``__exit__`` of the lock (a builtin
  method whose ``__self__`` is the lock) on the frame's value stack; 3.14
  and 3.15 leave the unbound ``__exit__`` (a method_descriptor) followed by
  the lock.  A lock taken by an explicit ``acquire()`` leaves nothing on
  the stack.  ``with cond:`` (a threading.Condition) leaves the Python
  ``__exit__`` of the Condition: 3.11 to 3.13 a bound method whose
  ``__self__`` is the Condition, 3.14+ the function Condition.__exit__
  followed by the Condition.  The frame holds the Condition's lock (its
  ``_lock``, read from the object; a Condition whose ``_lock`` cannot be
  read is shown held as itself); not while the frame is still calling the
  Condition's ``__enter__``, which 3.14+ call with the ``__exit__`` already
  pushed, nor while a frame inside it blocks in that Condition's
  ``wait()``/``wait_for()``, which release the lock until they return (an
  idle ``Queue.get`` holds nothing).
- A thread **waits** for a lock when its innermost frame is at a CALL
  instruction (the opcode at its instr_ptr, of that CPython's own CALL
  family; 3.11's PRECALL too, which makes the call of a specialized form)
  whose callable, as the stack lays it out for CALL (3.13+: ``callable,
  self_or_null, args...`` below the top, and the names of the keywords
  above them for CALL_KW; 3.11 and 3.12: ``method, self, args...`` or
  ``NULL, callable, args...``, the keywords' names kept off the stack), is
  the ``acquire`` or ``__enter__`` of a lock: the unbound method_descriptor
  with the lock as self, or the lock's bound builtin method.  A frame is
  not said to hold the lock it is waiting for.  The thread's native state,
  when a front end read it (Thread.native), confirms the wait ("waiting on
  a lock") or rules it out (on CPU); without it the wait is "by its Python
  frame" only (a thread that has just got the lock shows the same frame
  for an instant).
- The **holder** of a lock: an RLock's owner (the thread whose
  threading.get_ident() the lock records), whatever the stacks say;
  otherwise the one thread one of whose frames holds it.  Nobody, or more
  than one thread: unknown, never guessed.
- The **graph**: thread T waits for lock L held by thread U.  Each thread
  waits for at most one lock and each lock has at most one holder, so every
  cycle is found by following the edges from each thread; cycles are
  reported in the order of their first thread in the snapshot, each
  starting at that thread.

- A thread **waits on an object** of the standard library when its Python
  frames say so, read from the frames' locals (``self``, its attributes one
  level down; readable on 3.11 to 3.13 too): its innermost frame is a
  blocking leaf (``Condition.wait`` in waiter.acquire(), ``Thread.join``
  (3.11 and 3.12: ``Thread._wait_for_tstate_lock`` under it), a selector's
  ``select``) and the frames out from it that are waits of threading.py,
  queue.py, concurrent/futures/_base.py or asyncio/base_events.py (see
  WAIT_FRAMES) name the object: the outermost one's ``self`` (a Queue.get
  waits on the Queue, not on its Condition).  3.8 to 3.10 name a frame by
  its co_name alone: a frame of those files is one of WAIT_FRAMES by its
  method's name, and where two share one (threading's ``wait``) by the
  class of its ``self``.  A join waits for the thread
  whose ident the Thread object records (``_ident``): an edge of the graph,
  so a join cycle is a deadlock.  The other objects record no holder: a
  Condition's lock is shown (``_lock``), its holder never guessed.  A lock
  wait whose holder is known (an RLock's ``_acquire_restore`` after a
  notify) is kept; an object wait replaces one whose holder is unknown (the
  waiter lock of Condition.wait).

Where the value stack cannot be read, nothing is said: 3.11 to 3.13 save
a frame's stack pointer only when the frame calls a Python function, so
there a frame that runs (a thread's innermost, blocked in C, acquire()
included; the last frame of an eval call that called C code which entered
another) has no readable stack (LockReport.unreadable says why): 3.12 and
3.13 mark the pointer unsaved (the library says so), 3.11 leaves it as it
was at the frame's last Python call (RUNNING: such frames are not read).
3.14+ save it on every call that may escape, so the innermost frame's
stack is readable while it is blocked in acquire().

- **3.11 to 3.13, inferred.** When the thread's native state says it waits
  on a lock, the innermost frame's stack slots are read all the same, every
  one of its co_stacksize (PYF_VALUES_STACK_UNSAVED): the live stack is a
  bottom part of them, the rest is left from earlier instructions.  At a
  CALL, the lowest slots that make the call of a lock's acquire/__enter__
  (the lock's method and the lock, then oparg arguments) end the live
  stack; at BEFORE_WITH (the ``with`` of 3.11 to 3.13, which calls
  ``__enter__`` with the manager still on top), the lowest slot holding a
  lock.  Slots left over can only lie above the live top, so the lowest
  match is the live call when the call is a lock's; when it is not (a C
  call that waits on a lock of its own), a match left over above it would
  name the wrong lock.  So the wait, the holds read below it, and any
  cycle through them are marked inferred (Wait.inferred,
  LockReport.inferred).
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import acquired, errors, refnames, values
from ._abi import PYF_LOCAL_NO_STACK, PYF_LOCAL_UNSAVED
from .errors import CommandError
from .escaping import escape
from .tids import os_tid
from .values import int_value

__all__ = ["LOCK_TYPES", "CALL_OPCODES", "WAIT_FRAMES", "Lock", "Wait", "LockReport", "analyze",
           "waited_frame", "object_of",
           "thread_label", "deadlock_lines", "wait_lines", "frame_lines", "to_json"]

#: The lock types whose holder the graph follows (type names as the value
#: decoder gives them: "module.qualname" of the heap types of _thread).
LOCK_TYPES = ("_thread.lock", "_thread.RLock")
RLOCK = "_thread.RLock"
#: Methods whose call blocks until the lock is free.
ACQUIRE = ("acquire", "__enter__", "acquire_lock", "_acquire_restore")
EXIT = "__exit__"
CONDITION = "threading.Condition"
CONDITION_EXIT = "Condition.__exit__"
THREADING = "/threading.py"

#: The CALL instructions of each minor version, from each interpreter's own
#: opcode module (opcode.opmap and opcode._specialized_opmap of 3.13.18,
#: 3.14.10 and 3.15.2; 3.11.7's and 3.12.1's opcode.opmap and the
#: specialized forms dis._all_opmap numbers; the numbers do not change
#: within a minor version; test_locks checks them against every interpreter
#: it runs): (positional calls, whose stack ends with the callable, its self
#: and oparg arguments (CALL_STACK); keyword calls, which add the tuple of
#: keyword names on top: 3.14+'s CALL_KW, 3.13's, none before).  3.11's
#: PRECALL family makes the specialized calls of builtins and method
#: descriptors itself (the plain PRECALL leaves the call to CALL), with the
#: same oparg and stack.  CALL_FUNCTION_EX (arguments in a tuple) and
#: CALL_INTRINSIC_* are left out.
CALL_OPCODES = {
    11: (frozenset([22, 23, 24, 64, 65, 66, 67, 72, 73, 76, 77, 78, 79, 80, 81, 113, 121,
                    127, 141, 143, 166, 171]), frozenset()),
    12: (frozenset([23, 24, 28, 29, 34] + list(range(38, 49)) + [56, 171, 241]),
         frozenset()),
    13: (frozenset([53, 244] + list(range(162, 182))), frozenset([57, 245])),
    14: (frozenset([52, 250] + list(range(143, 151)) + list(range(154, 166))),
         frozenset([55, 151, 152, 153, 251])),
    15: (frozenset([50, 153, 249] + list(range(144, 151)) + list(range(157, 169))),
         frozenset([53, 154, 155, 156, 250])),
}

#: The order of a call's callable and self on the stack: 3.11 and 3.12
#: "method" (LOAD_METHOD / LOAD_ATTR push ``method, self`` or ``NULL,
#: callable``), 3.13+ "callable" (``callable, self_or_null``).
CALL_STACK = {11: "method", 12: "method"}
#: BEFORE_WITH, the `with` of 3.11 to 3.13 (__enter__ is called from the
#: instruction, the manager still on top of the stack); 3.14+ call
#: __enter__ with CALL.
BEFORE_WITH = {11: 53, 12: 53, 13: 2}
#: How a frame that runs keeps its stack pointer, where it does not save it
#: (3.14+ save it on every call that may escape): "unset" (3.12, 3.13: -1,
#: the library says it is not saved), "stale" (3.11: left as the frame's
#: last Python call set it, which the library cannot tell from a saved one:
#: such a frame is read here as unsaved).  The frames that run: a thread's
#: innermost, and the caller of each frame entered from C.
RUNNING = {11: "stale", 12: "unset", 13: "unset"}
#: Why such a frame's holds and wait are inferred.
INFERRED = "inferred: CPython 3.11 to 3.13 save no stack pointer while a frame runs C code"
#: The versions whose running frames keep no value stack at all (3.8 to
#: 3.10: a frame object's f_stacktop is NULL, 3.10's f_stackdepth stale,
#: while it runs, and every frame of a thread's stack runs): what a frame
#: holds by a ``with`` and the lock a thread waits for in C are unknown
#: (LockReport.unknown); only the waits its frames' locals name are read.
STACKLESS = frozenset([8, 9, 10])
UNKNOWN = ("unknown: CPython 3.8 to 3.10 keep no value stack while a frame runs: the "
           "locks held by a with and the locks waited for in C are not read")
#: Why such a frame's stack is not read on 3.11 (RUNNING "stale").
STALE = ("stack pointer not saved: the frame runs (CPython 3.11 saves it on a call of a "
         "Python function only)")

#: The standard library's waits by (code filename ending, qualname): the
#: kind of object ``self`` is (threading.py, queue.py, concurrent/futures/
#: _base.py and asyncio/base_events.py of 3.11 to 3.15 alike; 3.11's and
#: 3.12's Thread.join blocks in Thread._wait_for_tstate_lock).
WAIT_FRAMES = {
    ("threading.py", "Condition.wait"): "condition",
    ("threading.py", "Condition.wait_for"): "condition",
    ("threading.py", "Event.wait"): "event",
    ("threading.py", "Semaphore.acquire"): "semaphore",   # BoundedSemaphore's too
    ("threading.py", "Thread.join"): "join",
    ("threading.py", "Thread._wait_for_tstate_lock"): "join",  # 3.11, 3.12, under join
    ("queue.py", "Queue.get"): "queue",
    ("queue.py", "Queue.put"): "queue",
    ("concurrent/futures/_base.py", "Future.result"): "future",
    ("concurrent/futures/_base.py", "Future.exception"): "future",
    ("asyncio/base_events.py", "BaseEventLoop._run_once"): "event_loop",
    ("asyncio/base_events.py", "BaseEventLoop.run_forever"): "event_loop",
    ("asyncio/base_events.py", "BaseEventLoop.run_until_complete"): "event_loop",
}
#: The frames a thread blocks in (its innermost Python frame): Condition.wait
#: (waiter.acquire()), Thread.join (the thread handle's join; 3.11 and
#: 3.12: Thread._wait_for_tstate_lock, the thread's lock's acquire()), and
#: any ``*.select`` of selectors.py (the event loop's poll; its self is no
#: object of WAIT_FRAMES: the loop is named by the frames out from it).
WAIT_LEAVES = (("threading.py", "Condition.wait"), ("threading.py", "Thread.join"),
               ("threading.py", "Thread._wait_for_tstate_lock"))
SELECTORS = "selectors.py"
#: What the thread's native state says while each kind blocks.
_NATIVE_WORD = {"event_loop": "poll"}

#: Frame reads: the value stack only (its entries are read one level deep).
_READ = dict(stack="only", max_objects=4096, max_bytes=1 << 20)


@dataclass(frozen=True)
class Lock:
    """A lock object of the target, or (``kind`` other than "lock") an
    object of the standard library a thread waits on."""

    address: int
    type_name: str
    #: An RLock's owner as it records it (threading.get_ident() of the
    #: owning thread; 0: not held); None for other locks.
    owner_ident: Optional[int] = None

    #: "lock" (a _thread lock), else the WAIT_FRAMES kind of the object.
    kind: str = "lock"
    #: A Condition's lock (its ``_lock``; address and type).
    lock: Optional["Lock"] = None
    #: A Thread being joined: the ident it records (``_ident``).
    thread_ident: Optional[int] = None
    #: A lock held by ``with cond:``: the Condition's address.
    condition: Optional[int] = None

    def text(self, names=None):
        """``<_thread.lock at 0x...>``, after its name where ``names``
        (address -> the name a frame gives it, pyframes.refnames) has one."""
        names = names or {}
        text = "<%s at 0x%x>" % (escape(self.type_name), self.address)
        if names.get(self.address):
            text = "%s %s" % (escape(names[self.address]), text)
        if self.lock is not None:
            text += " (its lock %s)" % self.lock.text(names)
        if self.condition is not None:
            cond = "<%s at 0x%x>" % (CONDITION, self.condition)
            if names.get(self.condition):
                cond = "%s %s" % (escape(names[self.condition]), cond)
            text += " (the lock of %s)" % cond
        return text


@dataclass(frozen=True)
class Wait:
    """Thread ``native_thread_id`` waits for ``lock`` (a lock, or an object
    of the standard library) in its innermost frames."""

    native_thread_id: int
    lock: Lock
    #: The native id of the thread holding it, None when unknown.
    held_by: Optional[int]
    #: True: the thread's native state says it waits on a lock; None: only
    #: its Python frame says so.
    confirmed: Optional[bool] = None
    #: True: inferred from a 3.11 to 3.13 frame's stack slots without a saved stack
    #: pointer (see the module's docstring): probable, not read.
    inferred: bool = False
    #: How the holder is known: "owner" (an RLock's record), "with" (a
    #: frame inside ``with``), "acquire" (the one thread with a frame past
    #: an acquire() of it still held: pyframes.acquired), "join" (the
    #: thread a join waits for); None when unknown.
    how: Optional[str] = None


@dataclass(frozen=True)
class MayHold:
    """A thread that may hold a lock whose holder is unknown: evidence, not
    proof (a possible cycle)."""

    native_thread_id: int
    frame: object
    #: What the frame shows: "first.acquire() at line 12 (with a timeout)",
    #: "a local refers to it (first)".
    evidence: str


@dataclass
class LockReport:
    """What :func:`analyze` found."""

    #: frame address -> the locks the frame holds (None: its stack is unreadable).
    holds: Dict[int, Optional[Tuple[Lock, ...]]] = field(default_factory=dict)
    #: native thread id -> its wait.
    waits: Dict[int, Wait] = field(default_factory=dict)
    #: Each cycle: its waits, each held by the next thread.
    cycles: List[Tuple[Wait, ...]] = field(default_factory=list)
    #: frame address -> why its stack could not be read.
    unreadable: Dict[int, str] = field(default_factory=dict)
    #: lock address -> (native thread id, frame) where it is held (frames
    #: holding it in a `with`, innermost first).
    taken: Dict[int, List[Tuple[int, object]]] = field(default_factory=dict)
    #: native thread id -> (thread, its innermost frame) of each waiting thread.
    waiting: Dict[int, Tuple[object, object]] = field(default_factory=dict)
    #: native thread id -> thread, in snapshot order.
    threads: Dict[int, object] = field(default_factory=dict)
    #: frame address -> why its holds (and its thread's wait) are inferred.
    inferred: Dict[int, str] = field(default_factory=dict)
    #: Why no frame's holds and no lock wait can be read at all (UNKNOWN:
    #: the version keeps no value stack), else None.
    unknown: Optional[str] = None
    #: lock address -> [(native thread id, frame, pyframes.acquired.Acquire)]:
    #: the frames past an acquire() of a lock whose holder no stack shows.
    acquired: Dict[int, List[Tuple[int, object, object]]] = field(default_factory=dict)
    #: The possible cycles: each a tuple of (Wait, MayHold or None: the
    #: wait's holder is known), each wait possibly held by the next thread.
    possible: List[Tuple[Tuple[Wait, Optional[MayHold]], ...]] = field(default_factory=list)
    #: object address -> the name the frames of a thread waiting for it
    #: give it (pyframes.refnames).
    names: Dict[int, str] = field(default_factory=dict)
    #: (frame address, object address) -> the name the frame holding it
    #: gives it.
    held_names: Dict[Tuple[int, int], str] = field(default_factory=dict)


def _lock_of(value):
    """The Lock a stack value is, else None."""
    if value is None or value.type_name not in LOCK_TYPES:
        return None
    owner = None
    if value.type_name == RLOCK:
        owner = value.number & 0xFFFFFFFFFFFFFFFF
    return Lock(address=value.addr, type_name=value.type_name, owner_ident=owner)


def _bound_lock(value, names):
    """The lock whose bound builtin method named one of ``names`` value is."""
    if value is not None and value.kind == "builtin" and value.text in names and \
            value.children:
        return _lock_of(value.children[0])
    return None


def _method_of(value, names):
    return value is not None and value.kind == "other" and \
        value.type_name == "method_descriptor" and value.text in names


def _condition_exit(value, following):
    """The Condition whose ``__exit__`` a ``with cond:`` left in value (and
    following, the entry after it), else None."""
    if value is None:
        return None
    if value.kind == "method" and len(value.children) == 2:  # 3.11 to 3.13: bound
        func, self_ = value.children
    elif value.kind == "function":                            # 3.14+
        func, self_ = value, following
    else:
        return None
    if func is None or func.kind != "function" or func.text != CONDITION_EXIT or \
            self_ is None or self_.type_name != CONDITION or not self_.addr:
        return None
    return Lock(address=self_.addr, type_name=CONDITION, kind="condition")


def held_in(stack):
    """The locks a frame's stack entries show held by a `with`, in order
    (a Condition's as the Condition, kind "condition": see held_lock)."""
    found = []
    for i, value in enumerate(stack):
        following = stack[i + 1] if i + 1 < len(stack) else None
        lock = _bound_lock(value, (EXIT,))
        if lock is None and _method_of(value, (EXIT,)) and following is not None:
            lock = _lock_of(following)
        if lock is None:
            lock = _condition_exit(value, following)
        if lock is not None and all(lock.address != f.address for f in found):
            found.append(lock)
    return found


def held_lock(target, held, known):
    """What a frame holding ``held`` (from held_in) holds: a Condition's
    lock (its ``_lock``, read from the target; ``known``: Condition address
    -> the lock, filled here), else ``held`` itself."""
    if held.kind != "condition":
        return held
    if held.address not in known:
        lock = None
        try:
            value = target.value(held.address, **_SELF_READ)
        except errors.PyframesError:
            value = None
        if value is not None and value.kind != "unreadable":
            inner = _lock_of(_attributes(value).get("_lock"))
            if inner is not None:
                lock = Lock(address=inner.address, type_name=inner.type_name,
                            owner_ident=inner.owner_ident, condition=held.address)
        known[held.address] = lock if lock is not None else held
    return known[held.address]


def _called(stack, opcode, oparg, minor):
    """(callable, self_or_null) of the CALL the frame is at, else None."""
    calls = CALL_OPCODES.get(minor)
    if calls is None or opcode is None or oparg is None:
        return None
    positional, keyword = calls
    if opcode in positional:
        at = len(stack) - 2 - oparg
    elif opcode in keyword:
        at = len(stack) - 3 - oparg
    else:
        return None
    if at < 0:
        return None
    below, above = stack[at], stack[at + 1]
    if CALL_STACK.get(minor) == "method":
        # (method, self) or (NULL, callable)
        return (below, above) if below is not None else (above, None)
    return below, above


def called_lock(stack, opcode, oparg, minor):
    """The lock whose acquire/__enter__ the frame is calling, else None."""
    called = _called(stack, opcode, oparg, minor)
    if called is None:
        return None
    callable_, self_ = called
    if _method_of(callable_, ACQUIRE):
        return _lock_of(self_)
    return _bound_lock(callable_, ACQUIRE)


def entered_condition(stack, callee):
    """The address of the Condition a frame is entering: its callee (the
    frame above it, None for the innermost) runs threading's
    Condition.__enter__, and the frame's stack ends with the Condition's
    __exit__ and the Condition (3.14+ push a `with`'s __exit__ before they
    call __enter__; the call took __enter__ and its self off the stack).
    None when not."""
    if callee is None or callee.function != "Condition.__enter__" or \
            not (callee.filename or "").replace("\\", "/").endswith(THREADING) or \
            len(stack) < 2:
        return None
    cond = _condition_exit(stack[-2], stack[-1])
    return cond.address if cond is not None else None


def _native_says(thread, word="lock"):
    """True / False / None: what the thread's native state says of a wait
    (``word``: what it says while blocked in one)."""
    native = getattr(thread, "native", None)
    if native is None:
        return None
    if word in native:
        return True
    if getattr(thread, "on_cpu", None):
        return False
    return None


def _frame_stack(target, frame):
    """(stack values, opcode, oparg) of a frame, or (None, reason)."""
    try:
        fv = target.frame_locals(frame.frame_addr, **_READ)
    except errors.PyframesError as e:
        return None, str(e)
    stack = [loc for loc in fv.locals if loc.kind == "stack"]
    if len(stack) == 1 and stack[0].flags & PYF_LOCAL_NO_STACK:
        return None, stack[0].value.text if stack[0].value is not None else "no stack"
    return ([loc.value for loc in stack], fv.opcode, fv.oparg), None


def unsaved_wait(slots, opcode, oparg, minor):
    """(the live stack, the lock waited for) of a 3.11 to 3.13 frame whose stack
    pointer is not saved, from all its stack slots (bottom first): the
    lowest top at which the instruction is a lock's acquire/__enter__,
    else None."""
    if opcode is not None and opcode == BEFORE_WITH.get(minor):
        for top in range(1, len(slots) + 1):
            lock = _lock_of(slots[top - 1])
            if lock is not None:
                return slots[:top], lock
        return None
    for top in range(2, len(slots) + 1):
        lock = called_lock(slots[:top], opcode, oparg, minor)
        if lock is not None:
            return slots[:top], lock
    return None


def _inferred_stack(target, frame, minor):
    """unsaved_wait of the frame's slots read with PYF_VALUES_STACK_UNSAVED,
    else None."""
    try:
        fv = target.frame_locals(frame.frame_addr, unsaved=True, **_READ)
    except errors.PyframesError:
        return None
    slots = [loc for loc in fv.locals if loc.kind == "stack"]
    if not slots or not all(loc.flags & PYF_LOCAL_UNSAVED for loc in slots):
        return None
    return unsaved_wait([loc.value for loc in slots], fv.opcode, fv.oparg, minor)


def _wait_keys(frame):
    """The keys (file ending, qualname) of WAIT_FRAMES a frame may be: the
    one of its qualified name; on 3.8-3.10, which name a frame by its
    co_name alone (no dot), every key of its file whose method has that
    name (threading's ``wait``: Condition.wait or Event.wait, told apart by
    ``self``'s type: object_of)."""
    filename = (frame.filename or "").replace("\\", "/")
    function = frame.function or ""
    found = []
    for key in WAIT_FRAMES:
        end = key[0]
        if not (filename == end or filename.endswith("/" + end)):
            continue
        if key[1] == function:
            return (key,)
        if "." not in function and key[1].rsplit(".", 1)[-1] == function:
            found.append(key)
    return tuple(found)


def _wait_kind(keys):
    """The kind of wait of a frame that may be ``keys``: a WAIT_FRAMES
    kind, else the keys themselves (object_of chooses by ``self``)."""
    return WAIT_FRAMES[keys[0]] if len(keys) == 1 else keys


def _blocks(frame):
    """Whether a thread's innermost frame is one the thread blocks in (a
    co_name that may be one of WAIT_LEAVES: on 3.8-3.10 the innermost
    ``wait`` of threading.py is Condition.wait, which Event.wait calls)."""
    filename = (frame.filename or "").replace("\\", "/")
    if (filename == SELECTORS or filename.endswith("/" + SELECTORS)) and \
            (frame.function or "").split(".")[-1] == "select":
        return True
    return any(key in WAIT_LEAVES for key in _wait_keys(frame))


def waited_frame(frames):
    """(frame, kind) naming the object a thread whose Python frames are
    ``frames`` (innermost first) waits on, else None: the outermost of the
    WAIT_FRAMES out from a blocking innermost frame.  ``kind``: a
    WAIT_FRAMES kind, or (3.8-3.10) the keys a co_name leaves open."""
    if not frames or not _blocks(frames[0]):
        return None
    found = None
    for index, frame in enumerate(frames):
        keys = _wait_keys(frame)
        if not keys and index > 0:
            break
        if keys:
            found = (frame, _wait_kind(keys))
    return found


#: Reads of a wait's frame: its locals, ``self``'s attributes one level down.
_SELF_READ = dict(attrs=True, max_depth=1, max_items=64, max_string=64, max_objects=512,
                  max_bytes=1 << 18)


def _attributes(value):
    """name -> Value of an object read with its attributes."""
    pairs = value.children if value.kind == "other" else ()
    return {pairs[i].text: pairs[i + 1] for i in range(0, len(pairs) - 1, 2)
            if pairs[i] is not None and pairs[i].kind == "str" and pairs[i + 1] is not None}


def object_of(target, frame, kind):
    """The Lock (the object: address, type, kind and what it records) that
    ``self`` of a wait's frame is, else None (unreadable, no self)."""
    try:
        fv = target.frame_locals(frame.frame_addr, **_SELF_READ)
    except errors.PyframesError:
        return None
    self_ = next((loc.value for loc in fv.locals if loc.name == "self" and
                  loc.kind == "arg"), None)
    if self_ is None or not self_.addr or self_.kind == "unreadable":
        return None
    if isinstance(kind, tuple):
        # a co_name that names several: the one of self's class
        cls = (self_.type_name or "").rsplit(".", 1)[-1]
        kind = next((WAIT_FRAMES[key] for key in kind if key[1].split(".")[0] == cls), None)
        if kind is None:
            return None
    attrs = _attributes(self_)
    lock = ident = None
    if kind == "condition":
        inner = attrs.get("_lock")
        if inner is not None and inner.addr and inner.kind != "unreadable":
            lock = Lock(address=inner.addr, type_name=inner.type_name)
    elif kind == "join":
        value = attrs.get("_ident")
        if value is not None and value.kind == "int":
            ident = int_value(value)
    return Lock(address=self_.addr, type_name=self_.type_name, kind=kind, lock=lock,
                thread_ident=ident)


def _object(target, frame, kind, selves):
    """object_of, read once per frame (``selves``: frame address -> it)."""
    if frame.frame_addr not in selves:
        selves[frame.frame_addr] = object_of(target, frame, kind)
    return selves[frame.frame_addr]


def _released(target, thread, selves):
    """[(index of the frame, Condition address)] of the thread's frames in
    threading's Condition.wait/wait_for: the Condition's lock is released
    while they block (and taken back before they return), so no frame out
    from them holds it by a `with cond:`."""
    found = []
    for index, frame in enumerate(thread.frames):
        keys = _wait_keys(frame)
        if any(WAIT_FRAMES[key] == "condition" for key in keys):
            obj = _object(target, frame, _wait_kind(keys), selves)
            if obj is not None and obj.kind == "condition":
                found.append((index, obj.address))
    return found


def _object_waits(target, threads, by_ident, selves):
    """native id -> (Wait, frame) of each thread waiting on an object."""
    found = {}
    for tid, thread in threads.items():
        at = waited_frame(thread.frames)
        if at is None:
            continue
        frame, kind = at
        says = _native_says(thread, _NATIVE_WORD.get(kind, "lock"))
        obj = _object(target, frame, kind, selves) if says is not False else None
        if obj is None:
            continue
        held_by = by_ident.get(obj.thread_ident) if obj.thread_ident else None
        found[tid] = (Wait(native_thread_id=tid, lock=obj, held_by=held_by,
                           confirmed=says, how="join" if held_by is not None else None),
                      frame)
    return found


def analyze(target, threads, minor, source=None, names=False):
    """The LockReport of ``threads`` (a snapshot's threads of ``target``;
    ``minor``: its CPython minor version).  ``source``: a source-line
    reader (render.SourceReader): the holders of plain locks taken by
    acquire() are read from the frames' functions (pyframes.acquired), and
    the possible cycles; ``names``: each lock named as a frame refers to
    it (pyframes.refnames)."""
    report = LockReport(unknown=UNKNOWN if minor in STACKLESS else None)
    called = {}
    owners = {}   # RLock address -> owner ident (as last read)
    locks = {}
    conditions = {}  # Condition address -> its lock (held_lock)
    selves = {}      # frame address -> object_of its self
    for thread in threads:
        tid = thread.native_thread_id
        if tid is None:
            continue
        report.threads[tid] = thread
        released = _released(target, thread, selves)
        for index, frame in enumerate(thread.frames):
            running = index == 0 or thread.frames[index - 1].entry_from_c
            if report.unknown is not None:
                read, why = None, report.unknown
            elif running and RUNNING.get(minor) == "stale":
                read, why = None, STALE
            else:
                read, why = _frame_stack(target, frame)
            guess = None
            if read is None and index == 0 and minor in RUNNING and \
                    _native_says(thread) is True:
                guess = _inferred_stack(target, frame, minor)
            if read is None and guess is None:
                report.holds[frame.frame_addr] = None
                report.unreadable[frame.frame_addr] = why
                continue
            if guess is not None:
                stack, waiting = guess
                report.inferred[frame.frame_addr] = INFERRED
            else:
                stack, opcode, oparg = read
                waiting = called_lock(stack, opcode, oparg, minor) if index == 0 else None
            entering = entered_condition(stack, thread.frames[index - 1] if index else None)
            held = [lock for lock in (held_lock(target, h, conditions) for h in held_in(stack)
                                      if h.address != entering and
                                      not any(index > at and h.address == cond
                                              for at, cond in released))
                    if waiting is None or lock.address != waiting.address]
            for lock in held + ([waiting] if waiting else []):
                locks.setdefault(lock.address, lock)
                if lock.owner_ident is not None:
                    owners[lock.address] = lock.owner_ident
            report.holds[frame.frame_addr] = tuple(held)
            for lock in held:
                report.taken.setdefault(lock.address, []).append((tid, frame))
            if waiting is not None:
                called[tid] = (waiting, thread, frame, guess is not None)
    by_ident = {t.thread_id: tid for tid, t in report.threads.items()
                if t.thread_id is not None}
    for tid, (lock, thread, frame, inferred) in called.items():
        says = _native_says(thread)
        if says is False:
            continue
        held_by, how = _holder(lock.address, owners, report.taken, by_ident)
        report.waits[tid] = Wait(native_thread_id=tid, lock=locks[lock.address],
                                 held_by=held_by, confirmed=says, inferred=inferred, how=how)
        report.waiting[tid] = (thread, frame)
    for tid, (wait, frame) in _object_waits(target, report.threads, by_ident,
                                            selves).items():
        kept = report.waits.get(tid)
        if kept is None or kept.held_by is None:
            report.waits[tid] = wait
            report.waiting[tid] = (report.threads[tid], frame)
    if source is not None:
        _acquire_holders(target, report, source)
    report.cycles = _cycles(report.waits, list(report.threads))
    namer = refnames.Namer(target) if names else None
    if source is not None:
        report.possible = _possible_cycles(report, namer)
    if namer is not None:
        _name_locks(report, namer)
    return report


def _holder(address, owners, taken, by_ident):
    """(holder's native id, how it is known) of a lock, or (None, None)."""
    if address in owners:  # an RLock: its own record
        held_by = by_ident.get(owners[address]) if owners[address] else None
        return held_by, "owner" if held_by is not None else None
    holders = {tid for tid, _ in taken.get(address, ())}
    return (holders.pop(), "with") if len(holders) == 1 else (None, None)


# ---- locks taken by acquire() (pyframes.acquired) -----------------------------------

#: The most lines of one source file read.
MAX_SOURCE_LINES = 200000


def source_text(source, filename):
    """The text of a file through a source-line reader, else None."""
    lines = []
    for n in range(1, MAX_SOURCE_LINES + 1):
        line = source(filename, n)
        if line is None:
            break
        lines.append(line)
    return "\n".join(lines) + "\n" if lines else None


def _frame_acquires(target, frame, source, trees):
    """[(lock address, Acquire)] of the frame's acquire() calls before its
    position whose expression reads as an object now.  Frames of the
    program's own code only: the standard library's locks taken by
    acquire() are mostly signals another thread releases (Condition.wait's
    waiter, a Thread's state lock), and its files are large to parse."""
    if not frame.filename or not frame.frame_addr or refnames.is_library(frame.filename):
        return []
    if frame.filename not in trees:
        text = source_text(source, frame.filename)
        trees[frame.filename] = acquired.parse(text) if text and ".acquire(" in text \
            else None
    found = acquired.acquires(trees[frame.filename], frame)
    out = []
    for acq in found or ():
        try:
            value = values.resolve(target, frame, acq.expression, {"max_depth": 1})
        except (CommandError, errors.PyframesError):
            continue
        if value.addr:
            out.append((value.addr, acq))
    return out


def _acquire_holders(target, report, source):
    """The holders of the plain locks waited for whose holder no stack and
    no record shows: the one thread with a frame past a definite acquire()
    of it (report.acquired), never the waiting thread itself (a lock that
    one thread takes and another releases is a signal, no deadlock)."""
    unknown = {w.lock.address for w in report.waits.values()
               if w.held_by is None and w.lock.kind == "lock" and w.lock.owner_ident is None}
    if not unknown:
        return
    trees = {}
    for tid, thread in report.threads.items():
        for frame in thread.frames:
            for addr, acq in _frame_acquires(target, frame, source, trees):
                if addr in unknown:
                    report.acquired.setdefault(addr, []).append((tid, frame, acq))
    for tid, wait in list(report.waits.items()):
        found = report.acquired.get(wait.lock.address) if wait.held_by is None else None
        if not found or wait.lock.owner_ident is not None:
            continue
        holders = {t for t, _, _ in found}
        if len(holders) == 1 and all(a.definite for _, _, a in found) and tid not in holders:
            report.waits[tid] = dataclasses.replace(wait, held_by=holders.pop(), how="acquire")


#: The most possible cycles reported, and the search's steps.
MAX_POSSIBLE = 16
MAX_SEARCH = 20000


def _may_hold(report, wait, namer):
    """[MayHold] of the lock a wait is for whose holder is unknown: the
    threads past an acquire() of it; else (with a Namer) the threads other
    than those waiting for it one of whose frames of the program's own code
    refers to it in a local."""
    addr = wait.lock.address
    found = [MayHold(tid, frame, "%s.acquire() at line %d%s" % (
        escape(acq.expression), acq.line, " (%s)" % acq.why if acq.why else ""))
        for tid, frame, acq in report.acquired.get(addr, ())]
    if found or namer is None or wait.lock.kind != "lock":
        return found
    waiting = {t for t, w in report.waits.items() if w.lock.address == addr}
    for tid, thread in report.threads.items():
        if tid in waiting:
            continue
        for frame in thread.frames[:refnames.MAX_FRAMES]:
            if refnames.is_library(frame.filename):
                continue
            name = namer.local_name(frame, addr)
            if name is not None:
                found.append(MayHold(tid, frame, "a local refers to it (%s)" % escape(name)))
                break
    return found


def _possible_cycles(report, namer):
    """The cycles of waits through at least one lock whose holder is
    unknown but that a thread may hold (_may_hold): each once, from its
    first thread in the snapshot's order."""
    edges, maybes = {}, {}  # maybes: lock address -> its [MayHold] (the same for each wait)
    for tid, wait in report.waits.items():
        if wait.held_by is not None:
            edges[tid] = [(wait.held_by, None)]
        elif wait.lock.kind == "lock":
            if wait.lock.address not in maybes:
                maybes[wait.lock.address] = _may_hold(report, wait, namer)
            edges[tid] = [(m.native_thread_id, m) for m in maybes[wait.lock.address]]
    order = list(report.threads)
    rank = {tid: i for i, tid in enumerate(order)}
    found, seen, steps = [], set(), [0]

    def search(path, maybes):
        steps[0] += 1
        if steps[0] > MAX_SEARCH or len(found) >= MAX_POSSIBLE:
            return
        for nxt, maybe in edges.get(path[-1], ()):
            chain = maybes + [maybe]
            if nxt == path[0]:
                key = frozenset(path)
                if any(m is not None for m in chain) and key not in seen:
                    seen.add(key)
                    found.append(tuple((report.waits[t], m) for t, m in zip(path, chain)))
            elif nxt not in path and rank.get(nxt, -1) > rank.get(path[0], -1):
                search(path + [nxt], chain)

    for start in order:
        if start in edges:
            search([start], [])
    return found


def _name_locks(report, namer):
    """report.names: each lock (and object) waited for or in a possible
    cycle, named from the frames of a thread that waits for it (the
    waiting frame and out from it); report.held_names: each lock a frame
    holds, named from that frame and out from it (a lock two frames call
    by two names, ``account.lock`` and ``src.lock``, is shown by each)."""
    def named(lock, frames, into, key=lambda a: a):
        for addr in (lock.address, lock.lock.address if lock.lock else None, lock.condition):
            if addr is not None and key(addr) not in into:
                into[key(addr)] = namer.name(frames, addr)

    for tid, wait in report.waits.items():
        thread, frame = report.waiting[tid]
        frames = list(thread.frames)
        at = next((i for i, f in enumerate(frames) if f is frame), 0)
        named(wait.lock, frames[at:], report.names)
    for tid, thread in report.threads.items():
        for i, frame in enumerate(thread.frames):
            held = list(report.holds.get(frame.frame_addr) or ()) + \
                [lock for lock, _ in _acquired_in(report, frame)]
            for lock in held:
                named(lock, thread.frames[i:], report.held_names,
                      lambda a, f=frame.frame_addr: (f, a))
    report.names = {a: n for a, n in report.names.items() if n}
    report.held_names = {k: n for k, n in report.held_names.items() if n}


def _cycles(waits, order):
    """Every cycle of the waits-for graph, each from its first thread in
    ``order``, in that order."""
    rank = {tid: i for i, tid in enumerate(order)}
    done = set()
    cycles = []
    for start in order:
        path, seen = [], {}
        tid = start
        while tid in waits and tid not in done and tid not in seen:
            seen[tid] = len(path)
            path.append(tid)
            tid = waits[tid].held_by
        if tid in seen:
            ring = path[seen[tid]:]
            first = min(range(len(ring)), key=lambda i: rank.get(ring[i], len(rank)))
            ring = ring[first:] + ring[:first]
            cycles.append(tuple(waits[t] for t in ring))
        done.update(path)
    cycles.sort(key=lambda c: rank.get(c[0].native_thread_id, len(rank)))
    return cycles


# ---- text and JSON ---------------------------------------------------------------


def thread_label(thread, tid):
    """``"name"`` of a named thread, else ``thread <native id>`` (its OS id
    here: pyframes.tids)."""
    name = getattr(thread, "name", None) if thread is not None else None
    if name:
        return '"%s"' % escape(name)
    return "thread %d" % ((os_tid(thread) if thread is not None else None) or tid)


def _where(frame):
    line = "?" if frame.line is None else frame.line
    return "%s (%s:%s)" % (escape(frame.function), escape(frame.filename), line)


def _label(report, tid):
    return thread_label(report.threads.get(tid), tid)


def _held_text(report, wait):
    """`` held by ...`` after a wait's object: nothing for an object that
    records no holder (an Event, a Queue...)."""
    if wait.held_by is not None:
        return " held by %s" % _label(report, wait.held_by)
    if wait.lock.kind in ("lock", "join"):
        return " held by an unknown thread"
    return ""


def lock_text(report, lock, holder=None):
    """A lock as the report shows it: its name and repr; the name a frame
    holding it gives it with ``holder`` (that frame), else the name of a
    frame waiting for it."""
    if holder is None:
        return lock.text(report.names)
    return lock.text(_names_in(report, holder))


def _names_in(report, frame):
    """The names the frame holding locks gives them, over report.names."""
    names = dict(report.names)
    for (at, addr), name in report.held_names.items():
        if at == frame.frame_addr:
            names[addr] = name
    return names


def deadlock_lines(report):
    """``deadlock: "A" waits for <lock> held by "B", which waits for ...``,
    then where each wait is and where each lock was taken; then each
    possible cycle (``possible cycle: ...``, possible_lines)."""
    lines = []
    for cycle in report.cycles:
        first = cycle[0]
        head = "%s waits for %s%s" % (_label(report, first.native_thread_id),
                                       lock_text(report, first.lock),
                                       _held_text(report, first))
        for wait in cycle[1:]:
            head += ", which waits for %s%s" % (lock_text(report, wait.lock),
                                                _held_text(report, wait))
        if any(w.inferred for w in cycle):
            head += " (%s)" % INFERRED
        lines.append("deadlock: " + head)
        lines.extend(_detail_lines(report, cycle, inferred_said=True))
    return lines + possible_lines(report)


def possible_lines(report):
    """``possible cycle: "A" waits for <lock>, which "B" may hold, ...``,
    then the evidence of each edge: what may close a cycle that the frames
    cannot prove (never called a deadlock)."""
    lines = []
    for cycle in report.possible:
        parts = []
        for i, (wait, maybe) in enumerate(cycle):
            lead = _label(report, wait.native_thread_id) if i == 0 else "which"
            if maybe is None:
                parts.append("%s waits for %s%s" % (lead, lock_text(report, wait.lock),
                                                    _held_text(report, wait)))
            elif maybe.native_thread_id == wait.native_thread_id:
                parts.append("%s waits for %s, which it may hold itself" % (
                    lead, lock_text(report, wait.lock)))
            else:
                parts.append("%s waits for %s, which %s may hold" % (
                    lead, lock_text(report, wait.lock),
                    _label(report, maybe.native_thread_id)))
        head = ", ".join(parts)
        if any(w.inferred for w, _ in cycle):
            head += " (%s)" % INFERRED
        lines.append("possible cycle: " + head)
        lines.extend(_detail_lines(report, [w for w, _ in cycle], inferred_said=True))
        for wait, maybe in cycle:
            if maybe is not None:
                lines.append("  %s may hold %s: in %s, %s" % (
                    _label(report, maybe.native_thread_id), lock_text(report, wait.lock),
                    _where(maybe.frame), maybe.evidence))
        lines.append("  (no proof of a deadlock: a threading.Lock records no owner, and "
                     "no frame shows it taken by an acquire() still in effect)")
    return lines


def _detail_lines(report, waits, inferred_said=False):
    lines = []
    for wait in waits:
        tid = wait.native_thread_id
        _, frame = report.waiting[tid]
        lines.append("  %s waits in %s%s" % (_label(report, tid), _where(frame),
                                             _confirmation(wait, inferred_said)))
        for holder, taken in report.taken.get(wait.lock.address, ()):
            if holder == wait.held_by:
                lines.append("  %s took %s in %s" % (_label(report, holder),
                                                     lock_text(report, wait.lock, taken),
                                                     _where(taken)))
        if wait.how == "acquire":
            for holder, taken, acq in report.acquired.get(wait.lock.address, ()):
                lines.append("  %s took %s in %s by %s.acquire() at line %d" % (
                    _label(report, holder), lock_text(report, wait.lock, taken),
                    _where(taken), escape(acq.expression), acq.line))
    return lines


def _confirmation(wait, inferred_said=False):
    """What says a wait is one: the thread's native state, else its Python
    frame only; on 3.11 to 3.13 inferred (nothing where the line above
    said so, inferred_said; "(inferred)" under a frame: top_lines says
    why once)."""
    if wait.inferred:
        return "" if inferred_said else " (inferred)"
    return "" if wait.confirmed else " (by its Python frame)"


def top_lines(report):
    """What --locks prints before the stacks: the deadlocks, the possible
    cycles, the waits whose holder is known (deadlock_lines, wait_lines),
    why "(inferred)" under the frames where no line above says it, and why
    nothing of the stacks is read where the version keeps none."""
    lines = deadlock_lines(report) + wait_lines(report)
    inferred = report.inferred or any(w.inferred for w in report.waits.values())
    if inferred and not any(INFERRED in line for line in lines):
        lines.append("(%s)" % INFERRED)
    if report.unknown is not None:
        lines.append("(%s)" % report.unknown)
    return lines


def wait_lines(report):
    """The waits outside any cycle whose holder is known: ``"A" waits for
    <lock> held by "B"`` (the others, e.g. the waiter lock of every idle
    Condition.wait of a pool, only under their frames)."""
    in_cycle = {w.native_thread_id for c in report.cycles for w in c}
    lines = []
    for tid, wait in report.waits.items():
        if tid in in_cycle or wait.held_by is None:
            continue
        lines.append("%s waits for %s%s%s" % (_label(report, tid), lock_text(report, wait.lock),
                                               _held_text(report, wait),
                                               " (%s)" % INFERRED if wait.inferred else ""))
        lines.extend(_detail_lines(report, (wait,), inferred_said=True))
    return lines


def frame_lines(report, thread, frame, indent):
    """The lines under a frame: ``holds <lock>`` (by a ``with``, or by an
    acquire() the frame made: the lock's holder), and ``waits for <lock>
    held by ...`` under a waiting thread's innermost frame."""
    held = report.holds.get(frame.frame_addr) or ()
    note = " (inferred)" if frame.frame_addr in report.inferred else ""
    lines = [indent + "holds " + lock_text(report, lock, frame) + note for lock in held]
    lines += [indent + "holds %s (%s.acquire() at line %d)" % (
        lock_text(report, lock, frame), escape(acq.expression), acq.line)
        for lock, acq in _acquired_in(report, frame)]
    wait = report.waits.get(thread.native_thread_id) if thread is not None else None
    if wait is not None and thread.frames and thread.frames[0].frame_addr == frame.frame_addr:
        lines.append(indent + "waits for %s%s%s" % (lock_text(report, wait.lock),
                                                    _held_text(report, wait),
                                                    _confirmation(wait)))
    return lines


def _acquired_in(report, frame):
    """[(Lock, Acquire)]: the locks this frame holds by an acquire(), as
    the holders of waits (Wait.how "acquire") found them."""
    out = []
    for wait in report.waits.values():
        if wait.how != "acquire" or any(wait.lock is lock for lock, _ in out):
            continue
        for _, taken, acq in report.acquired.get(wait.lock.address, ()):
            if taken.frame_addr == frame.frame_addr:
                out.append((wait.lock, acq))
    return out


def _lock_dict(lock, names=None):
    row = {"address": lock.address, "type": lock.type_name}
    if names is not None:
        row["name"] = names.get(lock.address)
    if lock.owner_ident is not None:
        row["owner_ident"] = lock.owner_ident
    if lock.condition is not None:
        row["condition"] = lock.condition
    return row


def _wait_dict(wait, names):
    """A thread's "waits_for": the object, its kind, and what it records."""
    row = dict(_lock_dict(wait.lock, names), kind=wait.lock.kind, held_by=wait.held_by,
               held_how=wait.how, confirmed=wait.confirmed, inferred=wait.inferred)
    if wait.lock.lock is not None:
        row["lock"] = _lock_dict(wait.lock.lock, names)
    if wait.lock.kind == "join":
        row["thread_ident"] = wait.lock.thread_ident
    return row


def to_json(report, doc, threads):
    """Add the keys to a snapshot's JSON document ``doc`` whose thread rows
    are those of ``threads``: top-level "deadlocks" (each cycle a list of
    {"native_thread_id", "waits_for", "held_by", "held_how", "inferred"})
    and "possible_deadlocks" (each a list of {"native_thread_id",
    "waits_for", "held_by", "may_be_held_by", "evidence", "inferred"}), per
    thread "waits_for" ({"address", "type", "name", "kind", "held_by",
    "held_how", "confirmed", "inferred"}, a Condition's "lock", a join's
    "thread_ident"; or null), per frame "holds" (a list of {"address",
    "type", "name"}, each with "inferred": true when read from a 3.11 to
    3.13 frame without a saved stack pointer; or null when its stack is
    unreadable) and "acquired" (the locks it holds by an acquire(): each
    {"address", "type", "name", "expression", "line"}); top-level
    "locks_unknown": LockReport.unknown."""
    names = report.names
    doc["locks_unknown"] = report.unknown
    doc["deadlocks"] = [[{"native_thread_id": w.native_thread_id,
                          "waits_for": w.lock.address, "held_by": w.held_by,
                          "held_how": w.how, "inferred": w.inferred}
                         for w in cycle] for cycle in report.cycles]
    doc["possible_deadlocks"] = [[{
        "native_thread_id": w.native_thread_id, "waits_for": w.lock.address,
        "held_by": w.held_by,
        "may_be_held_by": m.native_thread_id if m is not None else None,
        "evidence": m.evidence if m is not None else None, "inferred": w.inferred}
        for w, m in cycle] for cycle in report.possible]
    rows = [row for interp in doc["interpreters"] for row in interp["threads"]]
    for thread, row in zip(threads, rows):
        wait = report.waits.get(thread.native_thread_id)
        row["waits_for"] = None if wait is None else _wait_dict(wait, names)
        for frame, frame_row in zip(thread.frames, row["frames"]):
            held = report.holds.get(frame.frame_addr)
            extra = {"inferred": True} if frame.frame_addr in report.inferred else {}
            own = _names_in(report, frame)
            frame_row["holds"] = None if held is None else [
                dict(_lock_dict(x, own), **extra) for x in held]
            frame_row["acquired"] = [dict(_lock_dict(lock, own), expression=acq.expression,
                                          line=acq.line)
                                     for lock, acq in _acquired_in(report, frame)]
    return doc
