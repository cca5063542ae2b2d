"""From the library's snapshots to the model: the one place on the Python
side that reads the C layout of a snapshot.

Every struct format and field position used here is derived from the ctypes
mirror (:class:`pyframes._abi.Layout`) when the module is imported; the fast
paths then unpack raw bytes with struct and never touch ctypes attributes
per frame.  :class:`Converter` takes and converts a target's snapshots
(:meth:`pyframes.Target.snapshot`), :class:`FrameTable` keeps the Frame
objects of a target's frame table, :class:`SampleSource` hands a sampler
the frame keys of snapshots it keeps unconverted, :class:`SampleBatch`
the stacks the library counted over many samples in one call.
"""

import array
import struct
import sys

from . import _abi, errors, values
from .errors import PyframesError, error_from_code
from .model import (LOCAL_KINDS, TASK_STATES, VALUE_KINDS, Frame, FrameRecord, FrameValues,
                    Interpreter, Local, Snapshot, Task, Thread, ThreadException, Value)

ctypes = _abi.ctypes
Layout = _abi.Layout

# ---- the layouts, derived from the mirror ---------------------------------

RECORD = Layout(_abi.pyf_record)
KEY = Layout(_abi.pyf_frame_key)
SNAPSHOT = Layout(_abi.pyf_snapshot)
THREAD = Layout(_abi.pyf_thread)
INTERP = Layout(_abi.pyf_interp)
TABLE = Layout(_abi.pyf_frame_table)  # its first layout
COPY = Layout(_abi.pyf_snapshot_copy)  # its fields, a pyf_snapshot, a pyf_frame_table
TASK = Layout(_abi.pyf_task)
TASK_LIST = Layout(_abi.pyf_task_list)  # its first layout
VALUE = Layout(_abi.pyf_value)
LOCAL = Layout(_abi.pyf_local)
VALUES = Layout(_abi.pyf_values)
SAMPLE_STACK = Layout(_abi.pyf_sample_stack)
SAMPLE_TIME = Layout(_abi.pyf_sample_time)

# pyf_frame_table's values (also as COPY_TABLE slices them out of a copy)
T_NFRAMES = TABLE.index["nframes"]
T_TABLE_ID = TABLE.index["table_id"]
T_RECORDS = TABLE.index["records"]
T_KEYS = TABLE.index["keys"]
T_FRAME_KEYS = TABLE.index["frame_keys"]
T_NRECORDS = TABLE.index["nrecords"]
T_NKEYS = TABLE.index["nkeys"]
# pyf_snapshot_copy's values
COPY_FLAGS = COPY.index["flags"]
COPY_OUT = COPY.index["out"]
COPY_SIZE = COPY.index["size"]
COPY_COUNTS = COPY.getter("snapshot.ninterps", "snapshot.nthreads", "snapshot.nframes")
COPY_TABLE = COPY.spans["table"]
# the request's inputs, written once per request (kept stays as it is)
COPY_INPUTS = COPY.struct_upto("request")
KEPT = COPY.field_struct("kept")
KEPT_AT = COPY.offset["kept"]
# the low byte of flags, all that the unchanged test reads
FLAGS_BYTE = COPY.offset["flags"] + (0 if sys.byteorder == "little" else
                                     COPY.field_struct("flags").size - 1)
# pyf_snapshot's counts and arrays
SNAPSHOT_ARRAYS = SNAPSHOT.getter("ninterps", "nthreads", "nframes", "interps", "threads",
                                  "frames")
SNAPSHOT_SAMPLE = SNAPSHOT.getter("nthreads", "nframes", "threads")
# the values read of each record, key, thread, interpreter, task
# a record's code object and its pyf_frame_info (the view a pyf_frame holds too)
RECORD_ROW = RECORD.getter("code_addr", "info.function", "info.filename", "info.line",
                           "info.end_line", "info.column", "info.end_column", "info.flags")
KEY_ROW = KEY.getter("frame_addr", "record")
# a thread's, a task's and the task list's one failure is their failure
# pointer (its code within it): their error codes beside it are not read
THREAD_ROW = THREAD.getter("tstate_addr", "thread_id", "native_thread_id", "interp_index",
                           "flags", "first_frame", "nframes", "more_frames", "failure")
INTERP_ID = INTERP.index["id"]
INTERP_ROW = INTERP.getter("addr", "id", "first_thread", "nthreads")
TASK_ROW = TASK.getter("task_addr", "coro_addr", "tstate_addr", "thread_id",
                       "native_thread_id", "interp_id", "name", "state", "flags",
                       "first_frame", "nframes", "first_awaiter", "nawaiters", "failure")
TASK_FIRST = TASK.index["first_frame"]
TASK_LIST_ROW = TASK_LIST.getter("tasks", "awaited_by", "ntasks", "nawaited_by", "failure")
THREAD_FIRST = THREAD.index["first_frame"]
THREAD_COUNT = THREAD.index["nframes"]

VALUE_ROW = VALUE.getter("addr", "type_name", "data", "data_size", "length", "real", "imag",
                         "number", "kind", "flags", "first_child", "nchildren")
LOCAL_ROW = LOCAL.getter("name", "kind", "flags", "value")
VALUES_ROW = VALUES.getter("nlocals", "nvalues", "locals", "values", "local_size",
                           "value_size", "code_addr", "globals_addr", "objects_read",
                           "bytes_read", "opcode", "oparg")

KEY_INDEX_SIZE = ctypes.sizeof(ctypes.c_uint32)  # an entry of frame_keys
ENTRY_SIZE = ctypes.sizeof(ctypes.c_uint64)  # an entry of pyf_snapshot_entries

# the library freed the snapshot (every thread the same as in the last one,
# whose lists are kept here) and the interps and threads it copied are what
# the buffer held
UNCHANGED = (_abi.PYF_COPY_ARRAYS | _abi.PYF_COPY_FREED | _abi.PYF_COPY_SAME_ARRAYS |
             _abi.PYF_COPY_KEPT)
# the same, and the threads' facts are those of the last snapshot too (a
# request with facts)
UNCHANGED_FACTS = UNCHANGED | _abi.PYF_COPY_SAME_FACTS
COPY_CAP = 4096  # the first copy buffer: the interps and threads of most targets
_SNAPSHOT_P = _abi.POINTER(_abi.pyf_snapshot)
_COPY_ARRAYS = _abi.PYF_COPY_ARRAYS
_COPY_FREED = _abi.PYF_COPY_FREED
_COPY_KEPT = _abi.PYF_COPY_KEPT
_COPY_SAME_FACTS = _abi.PYF_COPY_SAME_FACTS
_COMPLETE = _abi.PYF_THREAD_COMPLETE
_GIL_KNOWN = _abi.PYF_THREAD_GIL_KNOWN
_HOLDS_GIL = _abi.PYF_THREAD_HOLDS_GIL
_MAIN = _abi.PYF_THREAD_MAIN
_SAME_FRAMES = _abi.PYF_THREAD_SAME_FRAMES


def facts(failure):
    """A pyf_failure as keyword arguments of errors (what, addr, length,
    reader_message, detail)."""
    def text(raw):
        return raw.decode("utf-8", "replace")
    return dict(what=text(failure.what), addr=failure.addr, length=failure.len,
                reader_message=text(failure.reader_message), detail=text(failure.detail))


def failure_of(failure):
    """``(code, text)`` of a thread's, task's or task list's failure
    (``failure``: the address of its pyf_failure, which the snapshot owns);
    ``(0, None)`` for 0 (none)."""
    if not failure:
        return 0, None
    f = _abi.pyf_failure.from_address(failure)
    return f.code, errors.failure_text(f.code, **facts(f))


def failure_code(failure):
    """The code of a failure (its address; 0 for none)."""
    return _abi.pyf_failure.from_address(failure).code if failure else 0


def _elements(layout, at, first, end):
    """The values of elements first..end-1 of the C array at ``at`` whose
    elements are ``layout``'s, in one copy."""
    size = layout.size
    return layout.struct.iter_unpack(ctypes.string_at(at + first * size, (end - first) * size))


class FrameTable:
    """The Python side of a target's frame table (see pyframes.h): one
    :class:`Frame` per key, made once and kept while the library keeps the
    table, so an unchanged frame is the same object in every snapshot.

    Records and keys are only appended and their indexes stay the same
    while the table id does; a new table id drops everything.
    """

    def __init__(self):
        self.table_id = 0
        self.records = []   # per record: the Frame fields except frame_addr, and _record
        self.frames = []    # per key: its Frame
        self._strings = {0: ""}
        self._lists = {}    # tstate address -> its frames in the last snapshot

    def update(self, table):
        """Convert what the table has that is new; ``table`` is the
        pyf_frame_table's values as TABLE unpacks them."""
        table_id = table[T_TABLE_ID]
        records_at, keys_at = table[T_RECORDS], table[T_KEYS]
        nrecords, nkeys = table[T_NRECORDS], table[T_NKEYS]
        if table_id != self.table_id:
            self.__init__()
            self.table_id = table_id
        records = self.records
        have = len(records)
        if nrecords > have and records_at:
            text = self._text
            new = object.__new__
            for (code_addr, fn, fname, line, end_line, column, end_column,
                 flags) in map(RECORD_ROW, _elements(RECORD, records_at, have, nrecords)):
                fields = dict(
                    function=text(fn),
                    filename=text(fname),
                    line=line if line >= 0 else None,
                    end_line=end_line if end_line >= 0 else None,
                    column=column if column >= 0 else None,
                    end_column=end_column if end_column >= 0 else None,
                    code_addr=code_addr,
                    flags=flags,
                )
                record = new(Frame)
                record.__dict__.update(fields, frame_addr=0)
                fields["_record"] = FrameRecord(record)
                records.append(fields)
        frames = self.frames
        have = len(frames)
        if nkeys > have and keys_at:
            new = object.__new__
            append = frames.append
            for frame_addr, record in map(KEY_ROW, _elements(KEY, keys_at, have, nkeys)):
                f = new(Frame)
                # frozen dataclass: fill its fields without __init__
                f.__dict__.update(records[record], frame_addr=frame_addr)
                append(f)

    def _text(self, ptr):
        s = self._strings.get(ptr)
        if s is None:
            s = self._strings[ptr] = _abi.decode(ctypes.string_at(ptr))
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
                raise ListsLost()
            else:
                keys = array.array("I")
                keys.frombytes(ctypes.string_at(keys_at + first * KEY_INDEX_SIZE,
                                                count * KEY_INDEX_SIZE))
                frames = tuple(map(self.frames.__getitem__, keys))
        self._lists[tstate_addr] = frames
        return frames

    def forget_lists(self):
        """The last snapshot was not converted: no list may be reused."""
        self._lists = {}


class ListsLost(Exception):
    """A thread's frames were to come from a list this side no longer has."""


class TakeFailed(Exception):
    """pyf_snapshot_take_copy returned ``rc`` (the target says why)."""

    def __init__(self, rc):
        super().__init__(rc)
        self.rc = rc


def _text(raw):
    """A string of the library (UTF-8, lone surrogates as surrogatepass
    would write them), or None."""
    if raw is None:
        return None
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")


def facts_fields(f, nodes=(), python=None):
    """The Thread fields a pyf_thread_facts gives: name and name_source,
    gil and holds_gil, exception (its message rendered from its tree,
    ``nodes[f.exc_value]`` of the snapshot's pyf_snapshot_fact_values)."""
    flags = f.flags
    d = {}
    if flags & _abi.PYF_FACT_NAME:
        d["name"] = _text(f.name)
        d["name_source"] = "python"
    if flags & _abi.PYF_FACT_GIL_KNOWN:
        holds = bool(flags & _abi.PYF_FACT_GIL_HOLDS)
        d["holds_gil"] = holds
        d["gil"] = ("holds" if holds else
                    "waits" if flags & _abi.PYF_FACT_GIL_REQUESTED else "no")
    if flags & _abi.PYF_FACT_EXCEPTION:
        tree = nodes[f.exc_value] if f.exc_value < len(nodes) else None
        message = values.exception_message(tree, python)
        d["exception"] = ThreadException(
            type=_text(f.exc_type) or "<unreadable>",
            message=message,
            handled=bool(flags & _abi.PYF_FACT_EXC_HANDLED),
            file=_text(f.exc_file),
            line=f.exc_line if f.exc_line >= 0 and f.exc_file is not None else None)
    return d


class Converter:
    """A target's snapshots taken with pyf_snapshot_take_copy and made into
    model objects.

    It owns the copy buffer (made once: a target is used by one thread at a
    time), the target's :class:`FrameTable` and what the last snapshot was
    made of.  Target.snapshot makes the call (``take_copy(handle, ref)``)
    and serves an unchanged snapshot itself (the hot path); the rest is
    here.  ``lib``: the loaded library (None: only :meth:`convert` is
    used); ``binding``: a Python reader's, whose pending exception
    :meth:`convert_head` raises.
    """

    def __init__(self, lib, pid, python, binding=None):
        self.pid = pid
        self.python = python
        self._binding = binding
        self.req = None
        self.table = FrameTable()
        self.table_frames = 0  # the frames of the last snapshot converted
        self._thread_fields = {}  # see build
        self._built = ((), ())  # see build
        self.recipe = None  # see convert_copy
        self.recipe_snapshot = None  # the snapshot the recipe is of
        # the last snapshot, when converted with its threads' facts (and
        # neither tasks nor entries), and each thread's facts fields
        self.facts_snapshot = None
        self._facts = []
        self._lib = lib
        if lib is None:
            return
        # the buffer's kept field says which snapshot's thread lists
        # self.table keeps (0: none)
        self._grow(COPY_CAP)
        # pyf_snapshot_take_copy and pyf_snapshot_free without argtypes
        # (each argument a ctypes object already: ctypes converts nothing),
        # the cheapest calls
        take = lib._FuncPtr(("pyf_snapshot_take_copy", lib))
        take.restype = ctypes.c_int
        free = lib._FuncPtr(("pyf_snapshot_free", lib))
        free.restype = None
        self.take_copy = take  # take_copy(handle, ref)
        self._free = free

    def _grow(self, size):
        """A copy buffer of at least size bytes (8-byte aligned)."""
        n = (max(size, COPY_CAP) + 7) // 8
        buf = (_abi.c_uint64 * n)()
        self._buf = buf
        self.ref = ctypes.byref(buf)  # what pyf_snapshot_take_copy is given
        self._cap = n * 8
        self.view = memoryview(buf).cast("B")
        self.req = None  # the inputs are written again

    def use_request(self, req):
        """Write the inputs of the pyf_snapshot_request ``req`` (a pointer)
        into the buffer."""
        self.req = req
        COPY_INPUTS.pack_into(self.view, 0, self._cap, 0, ctypes.cast(req, _abi.c_void_p).value)

    def unchanged(self):
        """The last snapshot again (``recipe_snapshot``, made from
        ``recipe`` when None), when the library says it read the same
        (rc 0, view[FLAGS_BYTE] == UNCHANGED) and ``recipe`` is not None:
        the model is immutable (frozen objects, tuples), so the same
        objects serve again."""
        snapshot = self.recipe_snapshot
        if snapshot is None:
            snapshot = self.recipe_snapshot = self.rebuild(self.recipe)
        return snapshot

    def convert_head(self, rc, tasks, entries, facts=False):
        """The model of what pyf_snapshot_take_copy returned (rc) and
        copied into the buffer (tasks and entries: what its request asked
        for); the snapshot, when the library left one, is freed.  Raises
        :class:`TakeFailed` when the library failed, :class:`ListsLost`
        when the snapshot must be taken again."""
        head = COPY.struct.unpack_from(self.view)
        out = head[COPY_OUT]  # NULL on failure and when the library freed it
        try:
            if self._binding is not None:
                self._binding.raise_pending()
            if rc != 0:
                raise TakeFailed(rc)
            flags = head[COPY_FLAGS]
            if not out and not flags & _COPY_FREED:
                raise PyframesError(errors.PYF_ENOMEM, "no snapshot returned")
            table = head[COPY_TABLE]
            # SAME_FRAMES speaks of the library's last snapshot: the lists
            # kept here must be of that one (kept was, before the call)
            same = _SAME_FRAMES if flags & _COPY_KEPT else 0
            if flags & _COPY_ARRAYS:
                snapshot = self.convert_copy(head, table, same)
            else:
                snapshot = self.convert(ctypes.cast(out, _SNAPSHOT_P), table, same)
            if tasks:
                self.convert_tasks(ctypes.cast(out, _SNAPSHOT_P), table[T_FRAME_KEYS], snapshot)
            if entries:
                self.convert_entries(ctypes.cast(out, _SNAPSHOT_P), snapshot)
            if facts and flags & _COPY_SAME_FACTS:
                self.same_facts(snapshot)
            elif facts:
                self.convert_facts(ctypes.cast(out, _SNAPSHOT_P), snapshot)
            # an unchanged snapshot is this one again, unless it holds what
            # only its own request asked for (tasks, entries, facts); with
            # facts, when the library says they are the same too
            self.recipe_snapshot = snapshot if not (tasks or entries or facts) else None
            self.facts_snapshot = snapshot if facts and not (tasks or entries) else None
            return snapshot  # the library set kept to this one
        except BaseException:
            self.table.forget_lists()
            self.recipe = self.recipe_snapshot = self.facts_snapshot = None
            KEPT.pack_into(self.view, KEPT_AT, 0)
            raise
        finally:
            if out:
                self._free(_abi.c_void_p(out))
            if head[COPY_SIZE] > self._cap:
                self._grow(head[COPY_SIZE])

    def convert(self, snap, table, same=_SAME_FRAMES):
        """Copy a pyf_snapshot (by pointer) and its pyf_frame_table (its
        values, as TABLE unpacks them) into model objects (the snapshot is
        freed afterwards; the Frame objects stay in the FrameTable).
        ``same``: PYF_THREAD_SAME_FRAMES when the thread lists kept are of
        the snapshot the library compared with, else 0."""
        string_at = ctypes.string_at
        # the header's counts and array addresses, in one copy
        ninterps, nthreads, nframes, cinterps_at, cthreads, cframes = SNAPSHOT_ARRAYS(
            SNAPSHOT.struct.unpack(string_at(snap, SNAPSHOT.size)))
        if not cthreads:
            nthreads = 0
        if not cinterps_at:
            ninterps = 0
        if ninterps == 1:
            cinterps = [INTERP.struct.unpack(string_at(cinterps_at, INTERP.size))]
        else:
            cinterps = list(INTERP.struct.iter_unpack(
                string_at(cinterps_at, ninterps * INTERP.size))) if ninterps else []
        if nthreads == 1:
            rows = [THREAD.struct.unpack(string_at(cthreads, THREAD.size))]
        else:
            rows = THREAD.struct.iter_unpack(
                string_at(cthreads, nthreads * THREAD.size)) if nthreads else ()
        nframes = min(nframes, table[T_NFRAMES]) if cframes and table[T_FRAME_KEYS] else 0
        snapshot = self.build(table, cinterps, rows, nthreads, nframes, same)
        self.recipe = self.recipe_snapshot = self.facts_snapshot = None
        return snapshot

    def convert_copy(self, head, table, same):
        """The model objects from pyf_snapshot_take_copy's buffer (its
        header ``head`` as COPY unpacks it, the interps and threads after
        it)."""
        view = self.view
        ninterps, nthreads, nframes = COPY_COUNTS(head)
        at = COPY.size
        if ninterps == 1:
            cinterps = [INTERP.struct.unpack_from(view, at)]
        else:
            cinterps = list(INTERP.struct.iter_unpack(view[at:at + ninterps * INTERP.size]))
        at += ninterps * INTERP.size
        if nthreads == 1:
            rows = [THREAD.struct.unpack_from(view, at)]
        else:
            rows = THREAD.struct.iter_unpack(view[at:at + nthreads * THREAD.size])
        if table[T_FRAME_KEYS]:
            nframes = min(nframes, table[T_NFRAMES])
        snapshot = self.build(table, cinterps, rows, nthreads, nframes, same)
        # what rebuild makes the next snapshot from when it reads the same
        # (only threads without errors: a failure's text is of its snapshot)
        threads, interps = self._built
        self.recipe = None
        if all(fields_of["error_code"] == 0 for fields_of, _ in threads):
            # each thread's fields and the list kept of its frames
            lists = self.table._lists
            self.recipe = ([(fields_of, lists[tstate_addr])
                            for fields_of, tstate_addr in threads], interps)
        return snapshot

    def rebuild(self, recipe):
        """A snapshot like the last one (convert_copy's recipe): the same
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

    def build(self, table, cinterps, rows, nthreads, nframes, same):
        """Snapshot, Interpreter and Thread objects from the unpacked
        interps and threads; frames by keys from the frame table."""
        ft = self.table
        if table[T_TABLE_ID] != ft.table_id or table[T_NRECORDS] != len(ft.records) or \
                table[T_NKEYS] != len(ft.frames):
            ft.update(table)
        keys_at = table[T_FRAME_KEYS]
        self.table_frames = nframes
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
             more, failure) = THREAD_ROW(row)
            if first > nframes:
                first = count = 0
            elif first + count > nframes:
                count = nframes - first
            frames = thread_list(last, keys_at, first, count, tstate_addr, flags & same)
            interp_id = cinterps[interp_index][INTERP_ID] if interp_index < ninterps else None
            fields_of = known.get(row)
            if fields_of is None or fields_of["interpreter_id"] != interp_id:
                holds_gil = None
                if flags & _GIL_KNOWN:
                    holds_gil = bool(flags & _HOLDS_GIL)
                error_code, error = failure_of(failure)
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
            if not failure:  # a failure's text is of its snapshot only
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
        for addr, interp_id, first, count in map(INTERP_ROW, cinterps):
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

    def convert_entries(self, snap, snapshot):
        """Each thread's entries: per frame, the C-stack entry frame of the
        eval call that runs it (pyf_snapshot_entries), else 0."""
        ptr = _abi.POINTER(_abi.c_uint64)()
        rc = self._lib.pyf_snapshot_entries(snap, ctypes.byref(ptr))
        if rc != 0 or not ptr:
            return
        raw = array.array("Q")
        raw.frombytes(ctypes.string_at(ptr, self.table_frames * ENTRY_SIZE))
        first = 0
        for thread in snapshot.threads():
            n = len(thread.frames)
            thread.__dict__["entries"] = raw[first:first + n].tolist()
            first += n

    def convert_facts(self, snap, snapshot):
        """Each thread's name, GIL state and exception
        (pyf_snapshot_thread_facts), into its fields."""
        ptr = _abi.POINTER(_abi.pyf_thread_facts)()
        rc = self._lib.pyf_snapshot_thread_facts(snap, ctypes.byref(ptr))
        if rc != 0 or not ptr:
            return
        trees = _abi.POINTER(_abi.pyf_values)()
        nodes = ()
        if self._lib.pyf_snapshot_fact_values(snap, ctypes.byref(trees)) == 0 and trees:
            nodes = value_nodes_of(ctypes.addressof(trees.contents))
        threads = list(snapshot.threads())
        self._facts = [facts_fields(ptr[i], nodes, self.python) for i in range(len(threads))]
        for thread, fields in zip(threads, self._facts):
            thread.__dict__.update(fields)

    def same_facts(self, snapshot):
        """The threads' facts of the last snapshot converted with them,
        thread by thread, into ``snapshot``'s threads (the library says
        they are the same: PYF_COPY_SAME_FACTS).  Raises
        :class:`ListsLost` when that snapshot is not the last one."""
        if self.facts_snapshot is None:
            raise ListsLost()
        for thread, fields in zip(snapshot.threads(), self._facts):
            thread.__dict__.update(fields)

    def convert_tasks(self, snap, keys_at, snapshot):
        """Snapshot.tasks (and each running task into its thread) from the
        snapshot's pyf_task_list."""
        raw = _abi.pyf_task_list()
        raw.struct_size = ctypes.sizeof(raw)
        rc = self._lib.pyf_snapshot_tasks(snap, ctypes.byref(raw))
        if rc != 0:
            raise error_from_code(rc, "pyf_snapshot_tasks")
        tasks_at, awaited_at, ntasks, nawaited, failure = TASK_LIST_ROW(
            TASK_LIST.struct.unpack(ctypes.string_at(ctypes.addressof(raw), TASK_LIST.size)))
        error = failure_of(failure)[1]
        tasks = []
        if ntasks and tasks_at:  # none when no task could be read
            string_at = ctypes.string_at
            awaited = array.array("Q")
            if nawaited and awaited_at:
                awaited.frombytes(string_at(awaited_at, nawaited * awaited.itemsize))
            text = self.table._text
            nframes = self.table_frames
            rows = list(TASK.struct.iter_unpack(string_at(tasks_at, ntasks * TASK.size)))
            # the tasks' frames follow the threads': their keys in one copy
            base = min(min(r[TASK_FIRST] for r in rows), nframes)
            keys = array.array("I")
            if keys_at and nframes > base:
                keys.frombytes(string_at(keys_at + base * KEY_INDEX_SIZE,
                                         (nframes - base) * KEY_INDEX_SIZE))
            frame_of = self.table.frames.__getitem__
            new = object.__new__
            for (addr, coro, tstate, tid, native, interp, name, state, flags, first, count,
                 first_aw, naw, tfail) in map(TASK_ROW, rows):
                if first > nframes or first + count > nframes:
                    first = count = 0
                terror = failure_of(tfail)[1]
                task = new(Task)
                task.__dict__.update(
                    id=addr, name=text(name),
                    state=TASK_STATES[min(state, _abi.PYF_TASK_STATE_UNKNOWN)],
                    thread_id=tid or None, native_thread_id=native or None,
                    interpreter_id=interp, running=bool(flags & _abi.PYF_TASK_RUNNING),
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


class SampleSource:
    """Snapshots a sampler keeps unconverted and counts by frame keys: all
    taken with one request, each held by a (pointer, byref) pair of its own
    (:meth:`holder`) until :meth:`free`.  Made by
    :meth:`pyframes.Target.sample_source`."""

    def __init__(self, lib, handle_of, binding, request):
        self._handle_of = handle_of  # raises on a closed target
        self._binding = binding  # a Python reader's, else None
        self._lib = lib
        self._request = request
        self._take = lib.pyf_snapshot_take
        self._table_of = lib.pyf_snapshot_table
        self.free = lib.pyf_snapshot_free  # free(pointer): let a snapshot go
        self._table = _abi.pyf_frame_table()
        self._table.struct_size = ctypes.sizeof(self._table)
        self._table_ref = ctypes.byref(self._table)
        self._table_view = memoryview(self._table).cast("B")

    @staticmethod
    def holder():
        """A new (pointer, byref) pair to take a snapshot into."""
        ptr = _abi.POINTER(_abi.pyf_snapshot)()
        return ptr, ctypes.byref(ptr)

    def take(self, out, out_ref):
        """Take a snapshot into a holder (``out``, by its byref
        ``out_ref``): ``(rc, read)``, rc the library's return code, read
        None when rc is not 0, no snapshot came or its frame table cannot be
        had, else ``(table_id, rows)``.  A row per thread: ``(values,
        keys)``, values its pyf_thread's as THREAD unpacks them (read them by
        THREAD.index), keys the bytes of its frame-key indexes (uint32,
        innermost first; None when they run past the snapshot's frames).  A
        Python reader's pending exception is raised."""
        rc = self._take(self._handle_of(), self._request, out_ref)
        if self._binding is not None:
            self._binding.raise_pending()
        if rc != 0 or not out:
            return rc, None
        try:
            if self._table_of(out, self._table_ref) != 0:
                return rc, None
            # the library's arrays read where they are (_MEMORY), sizes as
            # it gives them: no ctypes call per array
            memory = _MEMORY
            snap = _pointer_at(memory, ctypes.addressof(out))[0]
            nthreads, nframes, cthreads = SNAPSHOT_SAMPLE(SNAPSHOT.struct.unpack_from(memory, snap))
            table = TABLE.struct.unpack_from(self._table_view)
            keys_at = table[T_FRAME_KEYS]
            if not keys_at:
                nframes = 0
            if nthreads == 1 and cthreads:
                threads = (THREAD.struct.unpack_from(memory, cthreads),)
            else:
                threads = THREAD.struct.iter_unpack(
                    memory[cthreads:cthreads + nthreads * THREAD.size]) \
                    if nthreads and cthreads else ()
            rows = []
            for row in threads:
                first, count = row[THREAD_FIRST], row[THREAD_COUNT]
                at = keys_at + first * KEY_INDEX_SIZE
                keys = (None if first + count > nframes else
                        memory[at:at + count * KEY_INDEX_SIZE].tobytes() if count else b"")
                rows.append((row, keys))
            return rc, (table[T_TABLE_ID], rows)
        except BaseException:
            self.free(out)
            raise

    def batch(self, flags):
        """A :class:`SampleBatch` with this source's request (its schedule
        set by :meth:`SampleBatch.schedule`): only for a target read by the
        library (a Python reader's exceptions are raised per call,
        pyf_sample_run makes many); None for another."""
        if self._binding is not None:
            return None
        return SampleBatch(self._lib, self._handle_of, self._request, flags)

    def names(self, out):
        """The FrameTable of a held snapshot's frame table."""
        if self._table_of(out, self._table_ref) != 0:
            raise PyframesError(errors.PYF_EINVAL, "pyf_snapshot_table failed")
        names = FrameTable()
        names.update(TABLE.struct.unpack_from(self._table_view))
        return names


_STACK_ROW = SAMPLE_STACK.getter("table_id", "thread_id", "native_thread_id", "first_key",
                                  "nkeys", "count")
_TIME_ROW = SAMPLE_TIME.getter("ns", "stack")


class SampleBatch:
    """Many samples in one library call (pyf_sample_run), counted by stack
    there: the arrays and the schedule (next sample due, drawn waits) are
    kept from one call to the next.  Made by :meth:`SampleSource.batch`."""

    # what a call may count at first: distinct stacks, their frame keys,
    # recorded thread-samples (a call ends when one is full; a sample that
    # fits none makes them all bigger, up to _GROWTH times)
    STACKS = 256
    KEYS = 1 << 14
    TIMES = 1 << 12
    _GROWTH = 1 << 12

    def __init__(self, lib, handle_of, request, flags):
        self._run = lib.pyf_sample_run
        self._handle_of = handle_of
        self._table_of = lib.pyf_snapshot_table
        self._free = lib.pyf_snapshot_free
        b = self._b = _abi.pyf_sample_batch()
        self._ref = ctypes.byref(b)
        b.request = request
        b.flags = flags
        b.rng = 1
        self._table = _abi.pyf_frame_table()
        self._table.struct_size = ctypes.sizeof(self._table)
        self._arrays(self.STACKS, self.KEYS,
                     self.TIMES if flags & _abi.PYF_SAMPLE_TIMES else 0)

    def _arrays(self, stacks, keys, times):
        b = self._b
        self._stacks = (_abi.pyf_sample_stack * stacks)()
        self._keys = (ctypes.c_uint32 * keys)()
        self._times = (_abi.pyf_sample_time * max(times, 1))()
        b.stacks, b.stacks_cap = self._stacks, stacks
        b.keys, b.keys_cap = self._keys, keys
        b.times, b.times_cap = self._times, times
        self._stack_view = memoryview(self._stacks).cast("B")
        self._key_view = memoryview(self._keys).cast("B")
        self._time_view = memoryview(self._times).cast("B")

    def schedule(self, interval, jitter, seed):
        """Samples ``interval`` seconds apart on average (0: back to back),
        each wait drawn within ``jitter`` of it from generator state
        ``seed``; the first at once."""
        b = self._b
        b.interval_ns = int(interval * 1e9)
        b.jitter_ppm = int(jitter * 1e6)
        b.rng = seed or 1
        b.next_ns = 0

    def run(self, until, count):
        """Sample until CLOCK_MONOTONIC ``until`` (seconds) or ``count``
        samples (0: no bound): the library's return code.  A sample too
        big for the arrays makes them bigger (bounded)."""
        self.close()  # what an interrupted call left
        b = self._b
        b.until_ns = max(0, int(until * 1e9))
        b.max_samples = count
        while True:
            rc = self._run(self._handle_of(), self._ref)
            if rc != errors.PYF_EDEPTH or b.keys_cap >= self.KEYS * self._GROWTH:
                return rc
            self._arrays(b.stacks_cap * 4, b.keys_cap * 4, b.times_cap * 4)

    def counts(self):
        """What the last call counted: samples, failed samples, threads not
        read to the end, {code: failed samples}, {code: threads not read to
        the end}, why it ended (PYF_SAMPLE_END_*), seconds spent sampling."""
        b = self._b
        by_code = {-i: n for i, n in enumerate(b.failed_by_code) if n}
        threads = {-i: n for i, n in enumerate(b.thread_errors_by_code) if n}
        return (b.samples, b.failed, b.thread_errors, by_code, threads, b.end,
                b.busy_ns / 1e9)

    def stacks(self):
        """[(table id, thread id, native thread id, frame-key bytes, count)]
        (the keys innermost first, as SampleSource.take gives them)."""
        b = self._b
        out = []
        keys = self._key_view
        size = KEY_INDEX_SIZE
        for row in SAMPLE_STACK.struct.iter_unpack(
                self._stack_view[:b.nstacks * SAMPLE_STACK.size]):
            table_id, tid, native, first, n, count = _STACK_ROW(row)
            out.append((table_id, tid, native,
                        keys[first * size:(first + n) * size].tobytes(), count))
        return out

    def times(self):
        """[(seconds, stack index)] of every thread-sample, in order."""
        view = self._time_view[:self._b.ntimes * SAMPLE_TIME.size]
        return [(ns / 1e9, i) for ns, i in map(_TIME_ROW, SAMPLE_TIME.struct.iter_unpack(view))]

    def tables(self):
        """[(table id, (pointer, byref))]: the newest snapshot of each table
        the stacks count against, now the caller's to free (until then the
        batch's: :meth:`close`)."""
        out = []
        b = self._b
        for i in range(b.ntables):
            # a pointer of its own (not a view of the batch's array)
            ptr = ctypes.cast(ctypes.c_void_p(self._address(i)), _SNAPSHOT_P)
            if ptr and self._table_of(ptr, ctypes.byref(self._table)) == 0:
                out.append((self._table.table_id, (ptr, ctypes.byref(ptr))))
        # handed over all at once (an interrupt before leaves them to close())
        b.ntables = 0
        return out

    def _address(self, i):
        return ctypes.cast(self._b.tables[i], ctypes.c_void_p).value

    def close(self):
        """Free the snapshots a call left and nobody took (a KeyboardInterrupt
        between the call and :meth:`tables`)."""
        b = self._b
        for i in range(b.ntables):
            address = self._address(i)
            if address:
                self._free(ctypes.cast(ctypes.c_void_p(address), _SNAPSHOT_P))
        b.ntables = 0


# ---- values ----------------------------------------------------------------


# this process's own memory, a slice of which is bytes where they are:
# what the library's result points at (its arrays, a node's data, whose
# sizes it gives) read without a ctypes call per read; never read past a
# size the library gave (its NUL-terminated strings go through _c_string)
_MEMORY = memoryview((ctypes.c_ubyte * sys.maxsize).from_address(0)).cast("B")
# a pointer's value where it is stored (a ctypes pointer object's address)
_pointer_at = struct.Struct("P").unpack_from


def _rows(layout, at, count, stride):
    """The values of count elements of a C array whose elements are
    ``layout``'s first bytes, ``stride`` bytes apart (a newer library's
    elements may be longer)."""
    if not at or not count:
        return []
    size = layout.size
    if stride < size:
        raise PyframesError(errors.PYF_EINVAL, "array stride %d below %d" % (stride, size))
    raw = _MEMORY[at:at + count * stride]
    if stride == size:
        return list(layout.struct.iter_unpack(raw))
    unpack = layout.struct.unpack_from
    return [unpack(raw, i * stride) for i in range(count)]


def _names_cache():
    """Decoded C strings by their bytes (type and local names repeat in
    every call), bounded."""
    cache = {}

    def text(raw):
        s = cache.get(raw)
        if s is None:
            if len(cache) >= 4096:
                cache.clear()
            s = cache[raw] = _abi.decode(raw)
        return s
    return text


_name_text = _names_cache()
# a C string read where its pointer is (a node's type name, a local's
# name): a ctypes.c_char_p there, cheaper than a ctypes.string_at call
_c_string = ctypes.c_char_p.from_address
TYPE_NAME_AT = VALUE.offset["type_name"]
LOCAL_NAME_AT = LOCAL.offset["name"]


# the rows of the values array hold a node's fields in VALUE_ROW's order
# as they are when that is the struct's whole order (no getter per node)
_NODE_ROW = None if VALUE_ROW(tuple(range(len(VALUE.names)))) == tuple(
    range(len(VALUE.names))) else VALUE_ROW
_LOCAL_KIND = [LOCAL_KINDS.get(k, "local") for k in range(max(LOCAL_KINDS) + 1)]


def values_of(at):
    """A :class:`FrameValues` of the pyf_values at address ``at`` (which
    the caller frees): its locals (pyf_frame_locals) or its one value
    (pyf_value_read).  The values and locals arrays are unpacked where
    they are (no copy), a node's data is one slice of _MEMORY, a type name
    is read once a call, and a name decoded once while _name_text keeps
    it."""
    c_string, memory, text = _c_string, _MEMORY, _name_text
    (nlocals, nvalues, locals_at, values_at, local_size, value_size, code_addr,
     globals_addr, objects_read, bytes_read, opcode, oparg) = VALUES_ROW(
        VALUES.struct.unpack_from(memory, at))
    nodes = _value_nodes(values_at, nvalues, value_size)
    local_list = []
    if nlocals:
        local_kind, nkinds = _LOCAL_KIND, len(_LOCAL_KIND)
        append = local_list.append
        new = object.__new__
        for j, row in enumerate(_rows(LOCAL, locals_at, nlocals, local_size)):
            name, kind, flags, index = LOCAL_ROW(row)
            loc = new(Local)
            d = loc.__dict__
            d["name"] = text(c_string(locals_at + j * local_size + LOCAL_NAME_AT).value) \
                if name else ""
            d["kind"] = local_kind[kind] if kind < nkinds else "local"
            d["flags"] = flags
            d["value"] = nodes[index] if index < nvalues else None
            append(loc)
    fv = object.__new__(FrameValues)
    fv.__dict__.update(locals=tuple(local_list), value=nodes[0] if nvalues and not nlocals
                       else None, code_addr=code_addr, globals_addr=globals_addr,
                       objects_read=objects_read, bytes_read=bytes_read,
                       opcode=None if opcode == _abi.PYF_NO_VALUE else opcode,
                       oparg=None if oparg == _abi.PYF_NO_VALUE else oparg)
    return fv


def value_nodes_of(at):
    """Every node of the pyf_values at address ``at`` as a :class:`Value`
    (a node's children among them), by index: the thread facts' trees."""
    (_nlocals, nvalues, _locals_at, values_at, _local_size, value_size) = VALUES_ROW(
        VALUES.struct.unpack_from(_MEMORY, at))[:6]
    return _value_nodes(values_at, nvalues, value_size)


def _value_nodes(values_at, nvalues, value_size):
    """The nodes of a values array, each a :class:`Value`."""
    c_string, memory, text = _c_string, _MEMORY, _name_text
    nodes = [None] * nvalues
    names = {0: ""}
    kinds, nkinds = VALUE_KINDS, len(VALUE_KINDS)
    new = object.__new__
    rows = _rows(VALUE, values_at, nvalues, value_size)
    if _NODE_ROW is not None:
        rows = list(map(_NODE_ROW, rows))
    # children come after their parent (each node's children are one run
    # of the array, decoded after it): built from the last node back
    i = nvalues
    for (addr, type_name, data, data_size, length, real, imag, number, kind, flags,
         first, count) in reversed(rows):
        i -= 1
        name = names.get(type_name)
        if name is None:
            name = names[type_name] = text(c_string(values_at + i * value_size +
                                                    TYPE_NAME_AT).value)
        # frozen dataclass: its fields filled without __init__ (a tree
        # may hold a million nodes)
        node = nodes[i] = new(Value)
        d = node.__dict__
        d["kind"] = kinds[kind] if kind < nkinds else "other"
        d["type_name"] = name
        d["addr"] = addr
        d["data"] = memory[data:data + data_size].tobytes() if data else None
        d["length"] = length
        d["real"] = real
        d["imag"] = imag
        d["number"] = number
        d["flags"] = flags
        # not a tree (a child before its parent, past the end): no children
        d["children"] = tuple(nodes[first:first + count]) if count and i < first and \
            first + count <= nvalues else ()
    return nodes
