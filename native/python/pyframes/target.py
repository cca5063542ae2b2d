"""A target: a process or core opened through libpyframes.

attach() opens a live local process by PID (the library's own reader);
open_reader() opens anything a debugger can read, through a Python read
callable.  Target.snapshot() copies the library's snapshot into the model
(pyframes.model).  probe_runtime, find_runtime_in_range and
elf_runtime_address are the library's runtime-location helpers.
"""

from . import _abi
from . import _convert, _loader, _readers, errors, model
from .errors import error_from_code
from .model import PythonInfo

__all__ = [
    "attach",
    "open_reader",
    "open_core",
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


def _int_in(value, what, low, high, kind, out_of_range):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("%s must be %s" % (what, kind))
    if not low <= value <= high:
        raise ValueError(out_of_range.format(what=what, value=value))
    return value


def _depth(value, what="max_depth"):
    if value is None:
        return 0
    return _int_in(value, what, 1, _U32_MAX, "an int or None",
                   "{what} must be between 1 and %d" % _U32_MAX)


def _address(value, what):
    return _int_in(value, what, 0, _U64_MAX, "an int", "{what} out of range: {value!r}")


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


_facts = _convert.facts


def _failure_error(rc, failure):
    """The exception for a library failure, with its facts (see errors)."""
    return error_from_code(rc, **_facts(failure))


_CACHE_NAMES = {_abi.PYF_CACHE_OFF: "off", _abi.PYF_CACHE_ON: "on",
                _abi.PYF_CACHE_READ_ONLY: "read-only"}

# the low byte of pyf_snapshot_copy.flags, and its value when the library
# read what the last snapshot did
_FLAGS_BYTE = _convert.FLAGS_BYTE
_UNCHANGED = _convert.UNCHANGED
_UNCHANGED_FACTS = _convert.UNCHANGED_FACTS

# The conversion's names this module exported before it had its own module.
FrameTable = _convert.FrameTable


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
        #: the pyframes.cores.CoreFile a core's target reads (open_core), else None
        self.core = None
        self.cache = "off"
        self._requests = {}  # (native_tid, max_depth, limit) -> pyf_snapshot_request *
        # (limits, attrs, stack) -> (pyf_values_request, its byref): a
        # command asks the same of every frame
        self._value_requests = {}
        info = self._abi.pyf_python_info()
        rc = self._lib.pyf_target_python(handle, self._abi.ctypes.byref(info))
        if rc != 0:
            err = self._error(rc)
            self.close()
            raise err
        self.python = _python_info(info)
        # the snapshots' conversion (see _convert), with its copy buffer
        self._convert = _convert.Converter(self._lib, pid, self.python, binding)
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
        core, self.core = getattr(self, "core", None), None
        if core is not None:
            core.close()  # after the target that reads it

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
        where = "pid %d" % self.pid if self.pid is not None else (
            "core %s" % self.core.path if self.core is not None else "reader")
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

    @property
    def last_error(self):
        """Detail of the last failure on this target ("" when none)."""
        return self._failure().detail.decode("utf-8", "replace")

    # -- operations --
    def snapshot(self, *, native_tid=None, max_depth=None, limit=None, tasks=False,
                 entries=False, facts=False):
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
        :attr:`Thread.entries` (see pyf_snapshot_entries).  ``facts``
        fills each thread's :attr:`Thread.name` (with ``name_source``
        "python": its threading.Thread's name), :attr:`Thread.gil` (with
        ``holds_gil``, on every version) and :attr:`Thread.exception`
        (see pyf_snapshot_thread_facts).
        """
        handle = self._handle
        if not handle:
            self._check_open()  # raises
        req = self._requests.get((native_tid, max_depth, limit, tasks, entries, facts, False))
        if req is None:
            req = self._request(native_tid, max_depth, limit, tasks, entries, facts)
        conv = self._convert
        if req is not conv.req:
            conv.use_request(req)
        rc = conv.take_copy(handle, conv.ref)
        if rc == 0 and self._binding is None and conv.recipe is not None:
            # what the last snapshot read: the same objects serve again
            flags = conv.view[_FLAGS_BYTE]
            if flags == _UNCHANGED:
                snapshot = conv.recipe_snapshot
                if snapshot is None:
                    snapshot = conv.unchanged()
                return snapshot
            if flags == _UNCHANGED_FACTS and conv.facts_snapshot is not None:
                return conv.facts_snapshot
        try:
            return conv.convert_head(rc, tasks, entries, facts)
        except _convert.TakeFailed as failed:
            raise self._error(failed.rc) from None
        except _convert.ListsLost:
            # cannot happen while this Target alone takes its snapshots:
            # again without lists kept (the snapshot is not freed then)
            return self.snapshot(native_tid=native_tid, max_depth=max_depth, limit=limit,
                                 tasks=tasks, entries=entries, facts=facts)

    def sample_source(self, native_tid=None, gil=False):
        """A :class:`pyframes._convert.SampleSource`: snapshots of every
        thread (``native_tid``: of that OS thread only) to keep unconverted
        and count by frame keys, as pyframes.sampling does.  ``gil``: each
        thread's flags say whether it holds the GIL on 3.13/3.14 too
        (PYF_SNAP_GIL)."""
        return _convert.SampleSource(self._lib, self._check_open, self._binding,
                                     self._request(native_tid, None, None, gil=gil))

    def _request(self, native_tid, max_depth, limit, tasks=False, entries=False, facts=False,
                 gil=False):
        """A pyf_snapshot_request (by reference) for these arguments; the
        few in use are kept."""
        cache = self._requests
        key = (native_tid, max_depth, limit, tasks, entries, facts, gil)
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
        if facts:
            raw.flags |= ffi.PYF_SNAP_THREAD_FACTS
        if gil:
            raw.flags |= ffi.PYF_SNAP_GIL
        if len(cache) >= 16:
            cache.clear()
        req = cache[key] = ffi.ctypes.pointer(raw)
        return req

    def frame_locals(self, frame_addr, *, max_string=None, max_items=None, max_depth=None,
                     max_objects=None, max_bytes=None, attrs=False, stack=False,
                     unsaved=False):
        """The arguments, locals, cells and free variables of the frame at
        ``frame_addr`` (a :class:`Frame`'s ``frame_addr`` in a snapshot of
        the stopped target): a :class:`model.FrameValues` whose ``locals``
        hold each one's :class:`model.Value` tree (None: unbound).  The
        limits (None: the library's default, pyframes.h's
        PYF_DEFAULT_VALUE_*): ``max_string`` chars of a str (bytes of a
        bytes), ``max_items`` of a container, ``max_depth`` nesting below a
        local, ``max_objects`` and ``max_bytes`` read by the call;
        ``attrs``: other objects' attributes, one level down; ``stack``: the
        frame's value stack too, as "stack" locals after the others (pyframes.h,
        PYF_VALUES_STACK), and the instruction at its instr_ptr; ``stack="only"``:
        the stack without the locals (PYF_VALUES_STACK_ONLY); with a stack,
        ``unsaved``: on 3.12 and 3.13, a frame whose stack pointer is not
        saved gives all its co_stacksize slots, each flagged
        PYF_LOCAL_UNSAVED (live or left over: PYF_VALUES_STACK_UNSAVED); on
        3.11 the caller says so of a frame that runs (its stack pointer is
        that of its last Python call)."""
        return self._values(self._lib.pyf_frame_locals, _address(frame_addr, "frame_addr"),
                            max_string, max_items, max_depth, max_objects, max_bytes,
                            attrs, stack, unsaved)

    def value(self, addr, *, max_string=None, max_items=None, max_depth=None,
              max_objects=None, max_bytes=None, attrs=False):
        """The object at ``addr`` as a :class:`model.Value` tree (the limits
        as :meth:`frame_locals`)."""
        return self.values_at(addr, max_string=max_string, max_items=max_items,
                              max_depth=max_depth, max_objects=max_objects,
                              max_bytes=max_bytes, attrs=attrs).value

    def values_at(self, addr, **limits):
        """:meth:`value`'s :class:`model.FrameValues` (its ``value``, and
        what the read cost)."""
        return self._values(self._lib.pyf_value_read, _address(addr, "addr"),
                            limits.get("max_string"), limits.get("max_items"),
                            limits.get("max_depth"), limits.get("max_objects"),
                            limits.get("max_bytes"), limits.get("attrs", False))

    def _values_request(self, max_string, max_items, max_depth, max_objects, max_bytes,
                        attrs, stack, unsaved=False):
        """The pyf_values_request of these limits (checked once), and its
        byref: made once per Target and kept (at most 16)."""
        limits = (max_string, max_items, max_depth, max_objects, max_bytes)
        # only None and ints are kept (True == 1, yet a bool is refused below)
        key = None
        if all(v is None or type(v) is int for v in limits):
            key = limits + (bool(attrs), stack if stack in (False, True, "only") else None,
                            bool(unsaved))
            found = self._value_requests.get(key)
            if found is not None:
                return found[1]
        ffi = self._abi
        req = ffi.pyf_values_request()
        req.struct_size = ffi.ctypes.sizeof(req)
        req.flags = (ffi.PYF_VALUES_ATTRS if attrs else 0) | (
            0 if not stack else ffi.PYF_VALUES_STACK | ffi.PYF_VALUES_STACK_ONLY
            if stack == "only" else ffi.PYF_VALUES_STACK) | (
            ffi.PYF_VALUES_STACK_UNSAVED if stack and unsaved else 0)
        req.max_string = _depth(max_string, "max_string")
        req.max_items = _depth(max_items, "max_items")
        req.max_depth = _depth(max_depth, "max_depth")
        req.max_objects = _depth(max_objects, "max_objects")
        req.max_bytes = 0 if max_bytes is None else _int_in(
            max_bytes, "max_bytes", 1, _U64_MAX, "an int or None",
            "{what} must be at least 1")
        ref = ffi.ctypes.byref(req)
        if key is not None:
            if len(self._value_requests) >= 16:
                self._value_requests.clear()
            self._value_requests[key] = (req, ref)
        return ref

    def _values(self, call, addr, max_string, max_items, max_depth, max_objects, max_bytes,
                attrs, stack=False, unsaved=False):
        ffi = self._abi
        req = self._values_request(max_string, max_items, max_depth, max_objects, max_bytes,
                                   attrs, stack, unsaved)
        out = ffi.POINTER(ffi.pyf_values)()
        rc = call(self._check_open(), addr, req, ffi.ctypes.byref(out))
        if rc != 0:
            if out:
                self._lib.pyf_values_free(out)
            raise self._error(rc)
        try:
            return _convert.values_of(ffi.ctypes.addressof(out.contents))
        finally:
            self._lib.pyf_values_free(out)

    def set_asyncio(self, addr):
        """Where the target's asyncio debug offsets are (the symbol
        _AsyncioDebug or the .AsyncioDebug section); a PID target finds
        them itself."""
        rc = self._lib.pyf_target_set_asyncio(self._check_open(), _address(addr, "addr"))
        if rc != 0:
            raise self._error(rc)

    def set_os_threads(self, pid, threads):
        """The OS threads of the process, as a debugger knows them:
        ``threads`` {OS thread id: its TLS base, the pthread handle (0 when
        unknown)}, ``pid`` the process's (0 unknown).  CPython 3.8-3.10
        keep no native thread id; a target read by PID or on a core finds
        them itself."""
        rows = sorted(threads.items())
        array = (_abi.pyf_os_thread * max(len(rows), 1))()
        for i, (tid, tls) in enumerate(rows):
            array[i].tid, array[i].tls_base = tid, tls or 0
        rc = self._lib.pyf_target_set_os_threads(self._check_open(), int(pid or 0), array,
                                                 len(rows))
        if rc != 0:
            raise self._error(rc)

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
                pid=None, cache=False, reads="stopped"):
    """Open a target over Python callables (a debugger's memory access).

    ``read(addr, size)`` returns exactly ``size`` bytes (any bytes-like
    object) or raises; PermissionError means "access refused", anything else
    "not readable".  ``readv(ranges)`` (optional) takes a list of
    ``(addr, size)`` and returns one bytes-or-None per range.  ``write(addr,
    data)`` is only used by the 3.15 frame-cache mode.  ``runtime_addr`` is
    the address of _PyRuntime.  ``pid`` is only recorded in snapshots.
    ``cache``: the frame-cache mode (:meth:`Target.set_cache`).  ``reads``:
    what ``read`` reads, "stopped" (a process held stopped while it is
    read: a debugger's), "running" (a process that runs meanwhile: every
    read is checked for changes, as the PID reader's are) or "core".
    """
    ffi = _abi
    lib = _loader.load()
    binding = _readers.ReaderBinding(read, readv, write, reads)
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


def open_core(path, *, executable=None, sysroot=None, temp_dir=None, runtime_addr=0,
              max_depth=None):
    """Open the core file ``path`` with the library's core reader (see
    pyframes.cores): an ELF core or lldb's minidump, plain or compressed.
    ``executable``: the program's file when it is not where the core says;
    ``sysroot``: the directory the core's files are under (a copy of the
    machine or container it was written on); ``temp_dir``: where a
    compressed core is decompressed ($TMPDIR, else /var/tmp).  The target's
    :attr:`Target.core` is the :class:`pyframes.cores.CoreFile` (its
    signal, threads, files), closed with the target."""
    from . import cores
    ffi = _abi
    lib = _loader.load()
    core = cores.CoreFile(path, executable=executable, sysroot=sysroot, temp_dir=temp_dir)
    try:
        opts = _options(ffi, max_depth)
        handle = ffi.pyf_target_p()
        failure = _new_failure()
        rc = lib.pyf_target_open_core(core.handle, _address(runtime_addr, "runtime_addr"),
                                      ffi.ctypes.byref(opts), ffi.ctypes.byref(handle),
                                      ffi.ctypes.byref(failure))
        if rc != 0:
            if handle:
                lib.pyf_target_close(handle)
            raise _failure_error(rc, failure)
        target = Target(handle, None, None)
    except BaseException:
        core.close()
        raise
    target.core = core
    return target


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
                   scan_budget=0, target_name=None):
    """Find _PyRuntime from what a debugger knows of the target (see
    pyf_runtime_locate in pyframes.h): ``mappings`` are ``(start, end,
    file_offset, flags, path)`` tuples, flags a string holding "r", "w", "x";
    ``symbol_addr`` the address of the symbol _PyRuntime (0 when unknown);
    ``target_name`` how failures name the target ("process 12 (sleep)",
    errors.process_label).

    Returns ``(address, PythonInfo, how, None)`` when found (how: the
    library's words, e.g. "the .PyRuntime section of /usr/bin/python3.15"),
    else ``(None, PythonInfo or None, None, error)``: the PyframesError the
    library gave (NotPython, UnsupportedVersion with the PythonInfo of the
    refused version, whose str() names it: "unsupported CPython 3.10.13
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
    name = target_name.encode("utf-8", "surrogateescape") if target_name else None
    req.target_name = name
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
