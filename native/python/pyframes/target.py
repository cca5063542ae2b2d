"""A target: a process or core opened through libpyframes.

attach() opens a live local process by PID (the library's own reader);
open_reader() opens anything a debugger can read, through a Python read
callable.  Target.snapshot() copies the library's snapshot into the model
(pyframes.model).  probe_runtime, find_runtime_in_range and
elf_runtime_address are the library's runtime-location helpers.
"""

import array
import struct
import sys

from . import _abi
from . import _loader, _readers, errors, model
from .errors import PyframesError, error_from_code
from .model import TASK_STATES, Frame, Interpreter, PythonInfo, Snapshot, Task, Thread

__all__ = [
    "attach",
    "open_reader",
    "probe_runtime",
    "find_runtime_in_range",
    "elf_runtime_address",
    "library_version",
    "Target",
]

_U32_MAX = 0xFFFFFFFF
_U64_MAX = 0xFFFFFFFFFFFFFFFF


def library_version():
    """(major, minor, patch) of the loaded libpyframes."""
    return _loader.library_version()


def _depth(value, what="max_depth"):
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int or None" % what)
    if not 1 <= value <= _U32_MAX:
        raise ValueError("%s must be between 1 and %d" % (what, _U32_MAX))
    return value


def _address(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be an int" % what)
    if not 0 <= value <= _U64_MAX:
        raise ValueError("%s out of range: %r" % (what, value))
    return value


def _options(ffi, max_depth):
    opts = ffi.pyf_options()
    opts.struct_size = ffi.ctypes.sizeof(ffi.pyf_options)
    opts.max_depth = _depth(max_depth)
    return opts


def _python_info(info):
    return PythonInfo(
        version=model.version_string(info.major, info.minor, info.micro,
                                     info.level, info.serial),
        hexversion=info.hexversion,
        major=info.major,
        minor=info.minor,
        micro=info.micro,
        free_threaded=bool(info.free_threaded),
        runtime_addr=info.runtime_addr,
    )


def _new_failure():
    f = _abi.pyf_failure()
    f.struct_size = _abi.ctypes.sizeof(f)
    return f


def _facts(failure):
    """A pyf_failure as keyword arguments of errors (what, addr, length,
    reader_message, detail)."""
    def text(raw):
        return raw.decode("utf-8", "replace")
    return dict(what=text(failure.what), addr=failure.addr, length=failure.len,
                reader_message=text(failure.reader_message), detail=text(failure.detail))


def _failure_error(rc, failure):
    """The exception for a library failure, with its facts (see errors)."""
    return error_from_code(rc, **_facts(failure))


# pyf_record and pyf_frame_key as the struct module sees them (native sizes
# and alignment; the layout test checks them against the C structs).
_RECORD_FORMAT = struct.Struct("@QqPPiiiiII")
_KEY_FORMAT = struct.Struct("@QII")
# pyf_snapshot, pyf_thread and pyf_interp likewise.  The model's frozen
# dataclasses are filled without their __init__ (the same objects, faster).
_SNAPSHOT_FORMAT = struct.Struct("@IIIIPPPIIII")
_THREAD_FORMAT = struct.Struct("@QQQIIIIiIP")
_INTERP_FORMAT = struct.Struct("@QqII")
_TABLE_FORMAT = struct.Struct("@IIQPPPIIII")  # pyf_frame_table, its first layout
# pyf_snapshot_copy: its own fields, then a pyf_snapshot and a pyf_frame_table
_COPY_FORMAT = struct.Struct("@IIPQPIIQQ" + _SNAPSHOT_FORMAT.format[1:] +
                             _TABLE_FORMAT.format[1:])
_COPY_INPUTS = struct.Struct("@IIP")  # cap, flags, request (kept stays)
# the library freed the snapshot (every thread the same as in the last one,
# whose lists are kept here) and the interps and threads it copied are what
# the buffer held
_COPY_UNCHANGED = (_abi.PYF_COPY_ARRAYS | _abi.PYF_COPY_FREED | _abi.PYF_COPY_SAME_ARRAYS |
                   _abi.PYF_COPY_KEPT)
_COPY_KEPT = _abi.PYF_COPY_KEPT
_FLAGS_BYTE = 4 if sys.byteorder == "little" else 7  # the low byte of flags
_KEPT = struct.Struct("@Q")
_KEPT_AT = 16
_COPY_ARRAYS = _abi.PYF_COPY_ARRAYS
_COPY_FREED = _abi.PYF_COPY_FREED
_COPY_CAP = 4096  # the first copy buffer: the interps and threads of most targets
_SNAPSHOT_P = _abi.POINTER(_abi.pyf_snapshot)
_TASK_FORMAT = struct.Struct("@QQQQQqPIIIIIIiIP")  # pyf_task
_TASK_LIST_FORMAT = struct.Struct("@IiPPIIIiP")  # pyf_task_list, its first layout
_COMPLETE = _abi.PYF_THREAD_COMPLETE
_GIL_KNOWN = _abi.PYF_THREAD_GIL_KNOWN
_HOLDS_GIL = _abi.PYF_THREAD_HOLDS_GIL
_MAIN = _abi.PYF_THREAD_MAIN
_SAME_FRAMES = _abi.PYF_THREAD_SAME_FRAMES
_CACHE_NAMES = {_abi.PYF_CACHE_OFF: "off", _abi.PYF_CACHE_ON: "on",
                _abi.PYF_CACHE_READ_ONLY: "read-only"}


class FrameTable:
    """The Python side of a target's frame table (see pyframes.h): one
    :class:`Frame` per key, made once and kept while the library keeps the
    table, so an unchanged frame is the same object in every snapshot.

    Records and keys are only appended and their indexes stay the same
    while the table id does; a new table id drops everything.
    """

    def __init__(self):
        self.table_id = 0
        self.records = []   # per record: the Frame fields except frame_addr
        self.frames = []    # per key: its Frame
        self._strings = {0: ""}
        self._lists = {}    # tstate address -> its frames in the last snapshot

    def update(self, table):
        """Convert what the table has that is new; ``table`` is the
        pyf_frame_table's fields as _TABLE_FORMAT unpacks them."""
        table_id, records_at, keys_at, _, nrecords, nkeys = table[2:8]
        if table_id != self.table_id:
            self.__init__()
            self.table_id = table_id
        string_at = _abi.ctypes.string_at
        records = self.records
        have = len(records)
        if nrecords > have and records_at:
            size = _RECORD_FORMAT.size
            raw = string_at(records_at + have * size, (nrecords - have) * size)
            text = self._text
            for (code_addr, _instr, fn, fname, line, end_line, column, end_column,
                 flags, _) in _RECORD_FORMAT.iter_unpack(raw):
                records.append(dict(
                    function=text(fn),
                    filename=text(fname),
                    line=line if line >= 0 else None,
                    end_line=end_line if end_line >= 0 else None,
                    column=column if column >= 0 else None,
                    end_column=end_column if end_column >= 0 else None,
                    code_addr=code_addr,
                    flags=flags,
                ))
        frames = self.frames
        have = len(frames)
        if nkeys > have and keys_at:
            size = _KEY_FORMAT.size
            raw = string_at(keys_at + have * size, (nkeys - have) * size)
            new = object.__new__
            append = frames.append
            for frame_addr, record, _ in _KEY_FORMAT.iter_unpack(raw):
                f = new(Frame)
                # frozen dataclass: fill its fields without __init__
                f.__dict__.update(records[record], frame_addr=frame_addr)
                append(f)

    def _text(self, ptr):
        s = self._strings.get(ptr)
        if s is None:
            s = self._strings[ptr] = _abi.decode(_abi.ctypes.string_at(ptr))
        return s

    def begin(self):
        """Start a snapshot's lists: the last snapshot's, to reuse."""
        last, self._lists = self._lists, {}
        return last

    def thread_list(self, last, keys_at, first, count, tstate_addr, same):
        """The tuple of the Frame of a thread's frames (keys_at: the
        snapshot's frame_keys array).  A thread the library marks as
        unchanged (``same``: PYF_THREAD_SAME_FRAMES) gets the tuple its
        thread state had in the last snapshot; others are built from their
        keys in one step."""
        frames = last.get(tstate_addr) if same else None
        if frames is None:
            if count == 0:
                frames = ()
            elif not keys_at:
                # a freed snapshot (pyf_snapshot_take_copy) has no keys: only
                # threads with a tuple kept from the last one
                raise _ListsLost()
            else:
                keys = array.array("I")
                keys.frombytes(_abi.ctypes.string_at(keys_at + first * 4, count * 4))
                frames = tuple(map(self.frames.__getitem__, keys))
        self._lists[tstate_addr] = frames
        return frames

    def forget_lists(self):
        """The last snapshot was not converted: no list may be reused."""
        self._lists = {}


class _ListsLost(Exception):
    """A thread's frames were to come from a list this side no longer has."""


class Target:
    """An open target: a process (or core, or remote) with a CPython runtime.

    Use as a context manager or call :meth:`close`.  Not thread-safe: use one
    Target per thread.  Attributes: ``python`` (:class:`PythonInfo`), ``pid``
    (int or None), ``cache`` (the frame-cache mode in force: "off", "on" or
    "read-only"; see :meth:`set_cache`).
    """

    def __init__(self, handle, binding, pid, cache=False):
        # Built by attach() / open_reader(), not directly.
        self._abi = _abi
        self._lib = _loader.load()
        self._handle = handle
        self._binding = binding  # keeps the C trampolines alive
        self.pid = pid
        self.cache = "off"
        self._table = FrameTable()
        self._requests = {}  # (native_tid, max_depth, limit) -> pyf_snapshot_request *
        # pyf_snapshot_take_copy's buffer, made once (a Target is used by one
        # thread at a time); its kept field says which snapshot's thread
        # lists self._table keeps (0: none)
        self._copy_grow(_COPY_CAP)
        self._thread_fields = {}  # see _build
        self._recipe = None  # see _convert_copy
        self._recipe_snapshot = None  # the snapshot the recipe is of
        # pyf_snapshot_take_copy and pyf_snapshot_free without argtypes
        # (each argument a ctypes object already: ctypes converts nothing),
        # the cheapest calls
        take = self._lib._FuncPtr(("pyf_snapshot_take_copy", self._lib))
        take.restype = _abi.ctypes.c_int
        free = self._lib._FuncPtr(("pyf_snapshot_free", self._lib))
        free.restype = None
        self._take_copy = take
        self._free = free
        info = self._abi.pyf_python_info()
        rc = self._lib.pyf_target_python(handle, self._abi.ctypes.byref(info))
        if rc != 0:
            err = self._error(rc)
            self.close()
            raise err
        self.python = _python_info(info)
        if cache:
            try:
                self.set_cache(cache)
            except BaseException:
                self.close()
                raise

    # -- lifetime --
    def close(self):
        """Release the target (idempotent)."""
        handle, self._handle = self._handle, None
        if handle:
            self._lib.pyf_target_close(handle)

    @property
    def closed(self):
        return not self._handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        state = "closed" if self.closed else "python %s" % self.python.version
        where = "pid %d" % self.pid if self.pid is not None else "reader"
        return "<pyframes.Target %s, %s>" % (where, state)

    def _check_open(self):
        if not self._handle:
            raise ValueError("operation on a closed pyframes.Target")
        return self._handle

    def _failure(self):
        f = _new_failure()
        if self._handle:
            self._lib.pyf_target_failure(self._handle, self._abi.ctypes.byref(f))
        return f

    def _error(self, rc):
        return _failure_error(rc, self._failure())

    def _after_call(self):
        if self._binding is not None:
            self._binding.raise_pending()

    @property
    def last_error(self):
        """Detail of the last failure on this target ("" when none)."""
        return self._failure().detail.decode("utf-8", "replace")

    # -- operations --
    def snapshot(self, *, native_tid=None, max_depth=None, limit=None, tasks=False,
                 entries=False):
        """Walk every interpreter, thread and frame; a :class:`Snapshot`.

        ``native_tid`` restricts it to the thread with that OS thread id
        (:class:`NoSuchThread` when the target has none); ``max_depth``
        overrides the frame limit per thread for this call.  ``limit``
        keeps at most that many frames per thread, innermost first: the
        rest of each chain is walked to its end as usual (same errors) but
        only counted, in :attr:`Thread.more_frames`.  ``tasks`` also reads
        every asyncio task (CPython 3.14+) into :attr:`Snapshot.tasks`
        (``tasks_error`` says why when there are none to read), whichever
        threads are walked.  ``entries`` fills each thread's
        :attr:`Thread.entries` (see pyf_snapshot_entries).
        """
        handle = self._handle
        if not handle:
            self._check_open()  # raises
        req = self._requests.get((native_tid, max_depth, limit, tasks, entries))
        if req is None:
            req = self._request(native_tid, max_depth, limit, tasks, entries)
        view = self._copy_view
        if req is not self._copy_req:
            self._copy_req = req
            _COPY_INPUTS.pack_into(view, 0, self._copy_cap, 0,
                                   _abi.ctypes.cast(req, _abi.c_void_p).value)
        rc = self._take_copy(handle, self._copy_ref)
        if (rc == 0 and view[_FLAGS_BYTE] == _COPY_UNCHANGED and self._recipe is not None and
                self._binding is None):
            # what the last snapshot read: the model is immutable (frozen
            # objects, tuples), so the same objects serve again
            snapshot = self._recipe_snapshot
            if snapshot is None:
                snapshot = self._recipe_snapshot = self._rebuild(self._recipe)
            return snapshot
        try:
            return self._convert_head(rc, _COPY_FORMAT.unpack_from(view), tasks, entries)
        except _ListsLost:
            # cannot happen while this Target alone takes its snapshots:
            # again without lists kept (the snapshot is not freed then)
            return self.snapshot(native_tid=native_tid, max_depth=max_depth, limit=limit,
                                 tasks=tasks, entries=entries)

    def _convert_head(self, rc, head, tasks, entries):
        """The model of what pyf_snapshot_take_copy returned (rc) and
        copied (head: the buffer's pyf_snapshot_copy unpacked); the
        snapshot, when the library left one, is freed."""
        view = self._copy_view
        out = head[4]  # NULL on failure and when the library freed it
        try:
            if self._binding is not None:
                self._binding.raise_pending()
            if rc != 0:
                raise self._error(rc)
            flags = head[1]
            if not out and not flags & _COPY_FREED:
                raise PyframesError(errors.PYF_ENOMEM, "no snapshot returned")
            fields = head[20:]  # the pyf_frame_table
            # SAME_FRAMES speaks of the library's last snapshot: the lists
            # kept here must be of that one (kept was, before the call)
            same = _SAME_FRAMES if flags & _COPY_KEPT else 0
            if flags & _COPY_ARRAYS:
                snapshot = self._convert_copy(head, fields, same)
            else:
                snapshot = self._convert(_abi.ctypes.cast(out, _SNAPSHOT_P), fields, same)
            if tasks:
                self._convert_tasks(_abi.ctypes.cast(out, _SNAPSHOT_P), fields[5], snapshot)
            if entries:
                self._convert_entries(_abi.ctypes.cast(out, _SNAPSHOT_P), snapshot)
            # an unchanged snapshot is this one again, unless it holds what
            # only its own request asked for (tasks, entries)
            self._recipe_snapshot = snapshot if not (tasks or entries) else None
            return snapshot  # the library set kept to this one
        except BaseException:
            self._table.forget_lists()
            self._recipe = self._recipe_snapshot = None
            _KEPT.pack_into(view, _KEPT_AT, 0)
            raise
        finally:
            if out:
                self._free(_abi.c_void_p(out))
            if head[5] > self._copy_cap:
                self._copy_grow(head[5])

    def _copy_grow(self, size):
        """A copy buffer of at least size bytes (8-byte aligned)."""
        n = (max(size, _COPY_CAP) + 7) // 8
        buf = (_abi.c_uint64 * n)()
        self._copy_buf = buf
        self._copy_ref = _abi.ctypes.byref(buf)
        self._copy_cap = n * 8
        self._copy_view = memoryview(buf).cast("B")
        self._copy_req = None  # the inputs are written again

    def _request(self, native_tid, max_depth, limit, tasks=False, entries=False):
        """A pyf_snapshot_request (by reference) for these arguments; the
        few in use are kept."""
        cache = self._requests
        key = (native_tid, max_depth, limit, tasks, entries)
        req = cache.get(key)
        if req is not None:
            return req
        ffi = self._abi
        raw = ffi.pyf_snapshot_request()
        raw.struct_size = ffi.ctypes.sizeof(ffi.pyf_snapshot_request)
        if native_tid is not None:
            raw.flags = ffi.PYF_SNAP_ONE_THREAD
            raw.native_tid = _address(native_tid, "native_tid")
        raw.max_depth = _depth(max_depth)
        raw.keep_frames = _depth(limit, "limit")
        if tasks:
            raw.flags |= ffi.PYF_SNAP_TASKS
        if entries:
            raw.flags |= ffi.PYF_SNAP_ENTRIES
        if len(cache) >= 16:
            cache.clear()
        req = cache[key] = ffi.ctypes.pointer(raw)
        return req

    def _convert_entries(self, snap, snapshot):
        """Each thread's entries: per frame, the C-stack entry frame of the
        eval call that runs it (pyf_snapshot_entries), else 0."""
        ffi = self._abi
        ptr = ffi.POINTER(ffi.c_uint64)()
        rc = self._lib.pyf_snapshot_entries(snap, ffi.ctypes.byref(ptr))
        if rc != 0 or not ptr:
            return
        raw = array.array("Q")
        raw.frombytes(ffi.ctypes.string_at(ptr, self._table_frames * 8))
        first = 0
        for thread in snapshot.threads():
            n = len(thread.frames)
            thread.__dict__["entries"] = raw[first:first + n].tolist()
            first += n

    def _convert_tasks(self, snap, keys_at, snapshot):
        """Snapshot.tasks (and each running task into its thread) from the
        snapshot's pyf_task_list."""
        ffi = self._abi
        raw = ffi.pyf_task_list()
        raw.struct_size = ffi.ctypes.sizeof(raw)
        rc = self._lib.pyf_snapshot_tasks(snap, ffi.ctypes.byref(raw))
        if rc != 0:
            raise error_from_code(rc, "pyf_snapshot_tasks")
        (_, status, tasks_at, awaited_at, ntasks, nawaited, _, list_error,
         failure) = _TASK_LIST_FORMAT.unpack(ffi.ctypes.string_at(
             ffi.ctypes.addressof(raw), _TASK_LIST_FORMAT.size))
        code = status or list_error
        error = None
        if code:
            error = (errors.failure_text(code, **_facts(ffi.pyf_failure.from_address(failure)))
                     if failure else errors.error_message(code))
        tasks = []
        if status == 0 and ntasks and tasks_at:
            string_at = ffi.ctypes.string_at
            awaited = array.array("Q")
            if nawaited and awaited_at:
                awaited.frombytes(string_at(awaited_at, nawaited * 8))
            text = self._table._text
            nframes = self._table_frames
            rows = list(_TASK_FORMAT.iter_unpack(string_at(tasks_at, ntasks * _TASK_FORMAT.size)))
            # the tasks' frames follow the threads': their keys in one copy
            base = min(min(r[9] for r in rows), nframes)
            keys = array.array("I")
            if keys_at and nframes > base:
                keys.frombytes(string_at(keys_at + base * 4, (nframes - base) * 4))
            frame_of = self._table.frames.__getitem__
            new = object.__new__
            for (addr, coro, tstate, tid, native, interp, name, state, flags, first, count,
                 first_aw, naw, err, _, tfail) in rows:
                if first > nframes or first + count > nframes:
                    first = count = 0
                terror = None
                if err:
                    terror = (errors.failure_text(err, **_facts(
                        ffi.pyf_failure.from_address(tfail))) if tfail
                        else errors.error_message(err))
                task = new(Task)
                task.__dict__.update(
                    id=addr, name=text(name), state=TASK_STATES[min(state, 3)],
                    thread_id=tid or None, native_thread_id=native or None,
                    interpreter_id=interp, running=bool(flags & ffi.PYF_TASK_RUNNING),
                    coroutine_stack=list(map(frame_of, keys[first - base:first - base + count]))
                    if count else [],
                    awaited_by=list(awaited[first_aw:first_aw + naw]),
                    error=terror, coro_addr=coro, _tstate=tstate)
                tasks.append(task)
            running = {t._tstate: t for t in tasks if t.running}
            if running:
                for thread in snapshot.threads():
                    task = running.get(thread.tstate_addr)
                    if task is not None:
                        thread.__dict__["running_task"] = task
        snapshot.__dict__.update(tasks=tasks, tasks_error=error)

    def set_asyncio(self, addr):
        """Where the target's asyncio debug offsets are (the symbol
        _AsyncioDebug or the .AsyncioDebug section); a PID target finds
        them itself."""
        rc = self._lib.pyf_target_set_asyncio(self._check_open(), _address(addr, "addr"))
        if rc != 0:
            raise self._error(rc)

    def _convert(self, snap, fields, same=_SAME_FRAMES):
        """Copy a pyf_snapshot (by pointer) and its pyf_frame_table (its
        fields, as _TABLE_FORMAT unpacks them) into model objects (the
        snapshot is freed afterwards; the Frame objects stay in the
        target's FrameTable).  ``same``: _SAME_FRAMES when the thread lists
        kept are of the snapshot the library compared with, else 0."""
        string_at = _abi.ctypes.string_at
        # the header's counts and array addresses, in one copy
        (ninterps, nthreads, nframes, _, cinterps_at, cthreads, cframes,
         _, _, _, _) = _SNAPSHOT_FORMAT.unpack(string_at(snap, _SNAPSHOT_FORMAT.size))
        if not cthreads:
            nthreads = 0
        if not cinterps_at:
            ninterps = 0
        if ninterps == 1:
            cinterps = [_INTERP_FORMAT.unpack(string_at(cinterps_at, _INTERP_FORMAT.size))]
        else:
            cinterps = list(_INTERP_FORMAT.iter_unpack(
                string_at(cinterps_at, ninterps * _INTERP_FORMAT.size))) if ninterps else []
        if nthreads == 1:
            rows = [_THREAD_FORMAT.unpack(string_at(cthreads, _THREAD_FORMAT.size))]
        else:
            rows = _THREAD_FORMAT.iter_unpack(
                string_at(cthreads, nthreads * _THREAD_FORMAT.size)) if nthreads else ()
        nframes = min(nframes, fields[1]) if cframes and fields[5] else 0
        snapshot = self._build(fields, cinterps, rows, nthreads, nframes, same)
        self._recipe = self._recipe_snapshot = None
        return snapshot

    def _convert_copy(self, head, fields, same):
        """The model objects from pyf_snapshot_take_copy's buffer (its
        header ``head`` as _COPY_FORMAT unpacks it, the interps and threads
        after it)."""
        view = self._copy_view
        ninterps, nthreads, nframes = head[9:12]
        at = _COPY_FORMAT.size
        if ninterps == 1:
            cinterps = [_INTERP_FORMAT.unpack_from(view, at)]
        else:
            cinterps = list(_INTERP_FORMAT.iter_unpack(
                view[at:at + ninterps * _INTERP_FORMAT.size]))
        at += ninterps * _INTERP_FORMAT.size
        if nthreads == 1:
            rows = [_THREAD_FORMAT.unpack_from(view, at)]
        else:
            rows = _THREAD_FORMAT.iter_unpack(view[at:at + nthreads * _THREAD_FORMAT.size])
        if fields[5]:
            nframes = min(nframes, fields[1])
        snapshot = self._build(fields, cinterps, rows, nthreads, nframes, same)
        # what _rebuild makes the next snapshot from when it reads the same
        # (only threads without errors: a failure's text is of its snapshot)
        threads, interps = self._built
        self._recipe = None
        if all(fields_of["error_code"] == 0 for fields_of, _ in threads):
            # each thread's fields and the list kept of its frames
            lists = self._table._lists
            self._recipe = ([(fields_of, lists[tstate_addr])
                             for fields_of, tstate_addr in threads], interps)
        return snapshot

    def _rebuild(self, recipe):
        """A snapshot like the last one (_convert_copy's recipe): the same
        fields, each thread's frames the tuple kept."""
        new = object.__new__
        threads = []
        for fields_of, frames in recipe[0]:
            t = new(Thread)
            d = t.__dict__
            d.update(fields_of)
            d["frames"] = frames
            threads.append(t)
        threads = tuple(threads)
        interps = []
        for fields_of, first, count in recipe[1]:
            i = new(Interpreter)
            d = i.__dict__
            d.update(fields_of)
            d["threads"] = threads if count < 0 else threads[first:first + count]
            interps.append(i)
        snapshot = new(Snapshot)
        snapshot.__dict__.update(pid=self.pid, python=self.python, interpreters=tuple(interps))
        return snapshot

    def _build(self, fields, cinterps, rows, nthreads, nframes, same):
        """Snapshot, Interpreter and Thread objects from the unpacked
        interps and threads; frames by keys from the frame table."""
        ft = self._table
        if fields[2] != ft.table_id or fields[6] != len(ft.records) or \
                fields[7] != len(ft.frames):
            ft.update(fields)
        keys_at = fields[5]
        self._table_frames = nframes
        ninterps = len(cinterps)
        last = ft.begin()
        # each thread's fields but its frames, by its row: a thread whose
        # row did not change takes them from the last snapshot
        free_threaded = self.python.free_threaded
        known, self._thread_fields = self._thread_fields, {}
        kept = self._thread_fields
        built = []  # (fields, tstate_addr) of each thread
        threads = []
        new = object.__new__
        thread_list = ft.thread_list
        for row in rows:
            (tstate_addr, thread_id, native_id, interp_index, flags, first, count,
             error_code, more, failure) = row
            if first > nframes:
                first = count = 0
            elif first + count > nframes:
                count = nframes - first
            frames = thread_list(last, keys_at, first, count, tstate_addr, flags & same)
            interp_id = cinterps[interp_index][1] if interp_index < ninterps else None
            fields_of = known.get(row)
            if fields_of is None or fields_of["interpreter_id"] != interp_id:
                holds_gil = None
                if flags & _GIL_KNOWN:
                    holds_gil = bool(flags & _HOLDS_GIL)
                error = None
                if error_code != 0:
                    error = (errors.failure_text(error_code, **_facts(
                        _abi.pyf_failure.from_address(failure))) if failure
                        else errors.error_message(error_code))
                fields_of = dict(
                    thread_id=thread_id or None,
                    native_thread_id=native_id or None,
                    interpreter_id=interp_id,
                    complete=bool(flags & _COMPLETE),
                    holds_gil=holds_gil,
                    is_main=bool(flags & _MAIN),
                    frames=None,
                    error=error,
                    error_code=error_code,
                    tstate_addr=tstate_addr,
                    more_frames=more,
                )
                if free_threaded:  # Thread.free_threaded, default False
                    fields_of["free_threaded"] = True
            if error_code == 0:  # a failure's text is of its snapshot only
                kept[row] = fields_of
            t = new(Thread)
            d = t.__dict__
            d.update(fields_of)
            d["frames"] = frames
            threads.append(t)
            built.append((fields_of, tstate_addr))
        threads = tuple(threads)
        interps = []
        built_interps = []  # (fields, first, count; -1: all the threads)
        for addr, interp_id, first, count in cinterps:
            first = min(first, nthreads)
            count = min(count, nthreads - first)
            if count == len(threads) and ninterps == 1:
                count = -1
            i = new(Interpreter)
            i.__dict__.update(id=interp_id, addr=addr,
                              threads=threads if count < 0 else threads[first:first + count])
            interps.append(i)
            built_interps.append(({"id": interp_id, "addr": addr}, first, count))
        self._built = (built, built_interps)
        snapshot = new(Snapshot)
        snapshot.__dict__.update(pid=self.pid, python=self.python, interpreters=tuple(interps))
        return snapshot

    def set_cache(self, mode):
        """Set the frame cache: False or "off"; True or "on" (CPython 3.15:
        the last_profiled_frame protocol, which writes that field of the
        target's thread states; "read-only" elsewhere and when the reader
        cannot write); "read-only" (never writes).  Returns the mode in
        force, also in :attr:`cache`."""
        modes = {False: _abi.PYF_CACHE_OFF, "off": _abi.PYF_CACHE_OFF,
                 True: _abi.PYF_CACHE_ON, "on": _abi.PYF_CACHE_ON,
                 "read-only": _abi.PYF_CACHE_READ_ONLY}
        try:
            wanted = modes[mode]
        except (KeyError, TypeError):
            raise ValueError("cache must be False, True, 'off', 'on' or 'read-only', "
                             "not %r" % (mode,)) from None
        got = self._abi.ctypes.c_uint32()
        rc = self._lib.pyf_target_set_cache(self._check_open(), wanted,
                                            self._abi.ctypes.byref(got))
        if rc != 0:
            raise self._error(rc)
        self.cache = _CACHE_NAMES.get(got.value, "off")
        return self.cache

    def stats(self):
        """Counters since open or :meth:`reset_stats`, as a dict: the
        library's (pyf_stats) and, under the names of the sampling profile,
        ``samples``, ``full_hits``, ``partial_hits``, ``misses``,
        ``frames_from_cache``, ``frames_from_memory``, ``read_calls``,
        ``bytes_read``, ``anchor_writes``."""
        ffi = self._abi
        out = ffi.pyf_stats()
        self._lib.pyf_target_stats(self._check_open(), ffi.ctypes.byref(out))
        stats = {name: getattr(out, name)
                 for name, _ in ffi.pyf_stats._fields_ if name != "reserved"}
        stats.update(samples=out.snapshots, full_hits=out.frame_cache_hits,
                     partial_hits=out.frame_cache_partial_hits,
                     misses=out.frame_cache_misses)
        return stats

    def reset_stats(self):
        self._lib.pyf_target_reset_stats(self._check_open())

    def flush(self):
        """Drop cached decodes; call when the target may have changed."""
        self._lib.pyf_target_flush(self._check_open())


def attach(pid, *, runtime_addr=0, max_depth=None, cache=False):
    """Open the live local process ``pid`` with the built-in reader.

    ``runtime_addr`` 0 finds _PyRuntime from /proc/PID/maps and the ELF files.
    ``max_depth`` caps frames per thread (None: the library default).
    ``cache``: the frame-cache mode (:meth:`Target.set_cache`).
    """
    ffi = _abi
    lib = _loader.load()
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise TypeError("pid must be an int")
    if not 0 < pid <= 0x7FFFFFFF:
        raise ValueError("invalid pid: %r" % (pid,))
    opts = _options(ffi, max_depth)
    handle = ffi.pyf_target_p()
    failure = _new_failure()
    rc = lib.pyf_target_open_pid(pid, _address(runtime_addr, "runtime_addr"),
                                 ffi.ctypes.byref(opts),
                                 ffi.ctypes.byref(handle), ffi.ctypes.byref(failure))
    if rc != 0:
        if handle:
            lib.pyf_target_close(handle)
        raise _failure_error(rc, failure)
    return Target(handle, None, pid, cache)


def open_reader(read, runtime_addr, *, readv=None, write=None, max_depth=None,
                pid=None, cache=False):
    """Open a target over Python callables (a debugger's memory access).

    ``read(addr, size)`` returns exactly ``size`` bytes (any bytes-like
    object) or raises; PermissionError means "access refused", anything else
    "not readable".  ``readv(ranges)`` (optional) takes a list of
    ``(addr, size)`` and returns one bytes-or-None per range.  ``write(addr,
    data)`` is only used by the 3.15 frame-cache mode.  ``runtime_addr`` is
    the address of _PyRuntime.  ``pid`` is only recorded in snapshots.
    ``cache``: the frame-cache mode (:meth:`Target.set_cache`).
    """
    ffi = _abi
    lib = _loader.load()
    binding = _readers.ReaderBinding(read, readv, write)
    opts = _options(ffi, max_depth)
    handle = ffi.pyf_target_p()
    failure = _new_failure()
    rc = lib.pyf_target_open(binding.pointer(),
                             _address(runtime_addr, "runtime_addr"),
                             ffi.ctypes.byref(opts), ffi.ctypes.byref(handle),
                             ffi.ctypes.byref(failure))
    if rc != 0:
        if handle:
            lib.pyf_target_close(handle)
        binding.raise_pending()
        raise _failure_error(rc, failure)
    try:
        binding.raise_pending()
    except BaseException:
        lib.pyf_target_close(handle)
        raise
    return Target(handle, binding, pid, cache)


def probe_runtime(read, addr):
    """PythonInfo of the runtime at ``addr``; raises PyframesError when
    ``_Py_DebugOffsets`` cannot be decoded there (an UnsupportedVersion
    carries the version the table says in ``.python``)."""
    ffi = _abi
    lib = _loader.load()
    binding = _readers.ReaderBinding(read)
    info = ffi.pyf_python_info()
    failure = _new_failure()
    rc = lib.pyf_runtime_probe(binding.pointer(), _address(addr, "addr"),
                               ffi.ctypes.byref(info), ffi.ctypes.byref(failure))
    binding.raise_pending()
    if rc != 0:
        error = _failure_error(rc, failure)
        error.python = _python_info(info) if info.hexversion else None
        raise error
    return _python_info(info)


#: The names of the PYF_LOCATE_* methods.
LOCATE_METHODS = {"symbol": _abi.PYF_LOCATE_SYMBOL, "section": _abi.PYF_LOCATE_SECTION,
                  "scan": _abi.PYF_LOCATE_SCAN}


def locate_runtime(read, mappings=(), symbol_addr=0, methods=("symbol", "section", "scan"),
                   scan_budget=0):
    """Find _PyRuntime from what a debugger knows of the target (see
    pyf_runtime_locate in pyframes.h): ``mappings`` are ``(start, end,
    file_offset, flags, path)`` tuples, flags a string holding "r", "w", "x";
    ``symbol_addr`` the address of the symbol _PyRuntime (0 when unknown).

    Returns ``(address, PythonInfo, how, None)`` when found (how: the
    library's words, e.g. "the .PyRuntime section of /usr/bin/python3.15"),
    else ``(None, PythonInfo or None, None, error)``: the PyframesError the
    library gave (NotPython, UnsupportedVersion with the PythonInfo of the
    refused version, whose str() names it: "unsupported CPython 3.11.2
    (pyframes reads ...)", ...).  Raises PermissionDenied and NoSuchProcess."""
    ffi = _abi
    lib = _loader.load()
    binding = _readers.ReaderBinding(read)
    rows = list(mappings)
    maps = (ffi.pyf_mapping * max(len(rows), 1))()
    keep = []
    for i, (start, end, offset, flags, path) in enumerate(rows):
        m = maps[i]
        m.start, m.end, m.file_offset = start, end, offset
        m.flags = ((ffi.PYF_MAP_READ if "r" in flags else 0)
                   | (ffi.PYF_MAP_WRITE if "w" in flags else 0)
                   | (ffi.PYF_MAP_EXEC if "x" in flags else 0))
        if path:
            raw = path.encode("utf-8", "surrogateescape")
            keep.append(raw)
            m.path = raw
    req = ffi.pyf_locate_request()
    req.struct_size = ffi.ctypes.sizeof(req)
    req.methods = sum(LOCATE_METHODS[m] for m in set(methods))
    req.symbol_addr = _address(symbol_addr or 0, "symbol_addr")
    req.maps = maps
    req.nmaps = len(rows)
    req.scan_budget = scan_budget
    out = ffi.pyf_runtime_location()
    out.struct_size = ffi.ctypes.sizeof(out)
    failure = _new_failure()
    rc = lib.pyf_runtime_locate(binding.pointer(), ffi.ctypes.byref(req),
                                ffi.ctypes.byref(out), ffi.ctypes.byref(failure))
    binding.raise_pending()
    info = _python_info(out.python) if out.python.hexversion else None
    if rc == 0:
        return out.addr, info, out.how.decode("utf-8", "replace"), None
    facts = _facts(failure)
    words = binding.last_words()
    if (words and words not in facts["detail"]
            and rc in (errors.PYF_EFAULT, errors.PYF_EPERM, errors.PYF_ENOPROC)):
        facts["detail"] += " [reader: %s]" % words  # the reader's own words
    error = error_from_code(rc, **facts)
    if rc in (errors.PYF_EPERM, errors.PYF_ENOPROC):
        raise error
    return None, info, None, error


def find_runtime_in_range(read, start, end):
    """Address of a valid _PyRuntime in [start, end), scanned through
    ``read``; None when there is none (or the library's scan budget ran out
    first).  Raises PermissionDenied when the reader refuses access."""
    ffi = _abi
    lib = _loader.load()
    binding = _readers.ReaderBinding(read)
    found = ffi.c_uint64(0)
    failure = _new_failure()
    rc = lib.pyf_runtime_find_in_range(binding.pointer(),
                                       _address(start, "start"),
                                       _address(end, "end"),
                                       ffi.ctypes.byref(found), ffi.ctypes.byref(failure))
    binding.raise_pending()
    if rc in (errors.PYF_ENOTPY, errors.PYF_EDEPTH):
        return None  # none found (EDEPTH: the scan budget ran out first)
    if rc != 0:
        raise _failure_error(rc, failure)
    return found.value


def elf_runtime_address(path, map_start, section="runtime"):
    """Where the .PyRuntime section (``section="asyncio"``: .AsyncioDebug)
    of the ELF file ``path`` lives when the file is mapped at
    ``map_start``; None when the file has no such section, cannot be read,
    or is not an ELF file the library understands."""
    import os
    ffi = _abi
    lib = _loader.load()
    found = ffi.c_uint64(0)
    failure = _new_failure()
    find = lib.pyf_elf_find_asyncio if section == "asyncio" else lib.pyf_elf_find_runtime
    rc = find(os.fsencode(path),
                                     _address(map_start, "map_start"),
                                     ffi.ctypes.byref(found), ffi.ctypes.byref(failure))
    if rc in (errors.PYF_ENOTPY, errors.PYF_EIO, errors.PYF_ECORRUPT,
              errors.PYF_ENOTSUP):
        return None
    if rc != 0:
        raise _failure_error(rc, failure)
    return found.value
