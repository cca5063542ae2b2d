"""ctypes binding of libpyframes (the only module that uses ctypes).

Structures mirror native/include/pyframes.h field by field; every exported
function gets argtypes and restype.  :func:`load` finds the library (see
:func:`candidate_paths` for the order), checks its major version and returns
the configured ``ctypes.CDLL``.

:class:`ReaderBinding` turns Python callables into a ``pyf_reader`` whose
C trampolines never let an exception escape into the library.
"""

import ctypes
import glob
import os
import threading

from . import errors
from .errors import LibraryMismatch, LibraryNotFound

__all__ = [
    "PYF_VERSION_MAJOR",
    "PYF_VERSION_MINOR",
    "PYF_VERSION_PATCH",
    "pyf_iovec",
    "pyf_reader",
    "pyf_options",
    "pyf_python_info",
    "pyf_stats",
    "pyf_frame",
    "pyf_thread",
    "pyf_interp",
    "pyf_snapshot",
    "pyf_snapshot_request",
    "STRUCTURES",
    "ReaderBinding",
    "candidate_paths",
    "load",
    "library_path",
]

# The library version this package was written against.
PYF_VERSION_MAJOR = 0
PYF_VERSION_MINOR = 1
PYF_VERSION_PATCH = 0

PYF_DEFAULT_MAX_DEPTH = 10000
PYF_DEFAULT_MAX_THREADS = 4096
PYF_DEFAULT_MAX_INTERPRETERS = 256
PYF_DEFAULT_MAX_STRING = 4096

PYF_FRAME_NAME_TRUNCATED = 0x01
PYF_FRAME_NO_LOCATION = 0x02
PYF_FRAME_CODE_UNREADABLE = 0x04
PYF_FRAME_GENERATOR = 0x08
PYF_FRAME_ENTRY_FROM_C = 0x10

PYF_THREAD_COMPLETE = 0x01
PYF_THREAD_HOLDS_GIL = 0x02
PYF_THREAD_GIL_KNOWN = 0x04
PYF_THREAD_MAIN = 0x08

PYF_SNAP_ONE_THREAD = 0x01

c_int = ctypes.c_int
c_int32 = ctypes.c_int32
c_int64 = ctypes.c_int64
c_uint32 = ctypes.c_uint32
c_uint64 = ctypes.c_uint64
c_size_t = ctypes.c_size_t
c_void_p = ctypes.c_void_p
c_char_p = ctypes.c_char_p
POINTER = ctypes.POINTER

# ---- Structures ----------------------------------------------------------


class pyf_iovec(ctypes.Structure):
    _fields_ = [
        ("addr", c_uint64),
        ("dst", c_void_p),
        ("len", c_size_t),
    ]


# int (*)(void *arg, uint64_t addr, void *dst, size_t len)
pyf_read_fn = ctypes.CFUNCTYPE(c_int, c_void_p, c_uint64, c_void_p, c_size_t)
# int (*)(void *arg, const pyf_iovec *iov, size_t n, int *status)
pyf_readv_fn = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(pyf_iovec), c_size_t,
                                POINTER(c_int))
# int (*)(void *arg, uint64_t addr, const void *src, size_t len)
pyf_write_fn = ctypes.CFUNCTYPE(c_int, c_void_p, c_uint64, c_void_p, c_size_t)
# const char *(*)(void *arg); c_void_p so that the returned buffer stays ours
pyf_message_fn = ctypes.CFUNCTYPE(c_void_p, c_void_p)


class pyf_reader(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("read", pyf_read_fn),
        ("readv", pyf_readv_fn),
        ("write", pyf_write_fn),
        ("arg", c_void_p),
        ("message", pyf_message_fn),
    ]


class pyf_options(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("max_depth", c_uint32),
        ("max_threads", c_uint32),
        ("max_string", c_uint32),
    ]


class pyf_python_info(ctypes.Structure):
    _fields_ = [
        ("runtime_addr", c_uint64),
        ("hexversion", c_uint64),
        ("major", c_uint32),
        ("minor", c_uint32),
        ("micro", c_uint32),
        ("level", c_uint32),
        ("serial", c_uint32),
        ("free_threaded", c_uint32),
    ]


class pyf_stats(ctypes.Structure):
    _fields_ = [
        ("read_calls", c_uint64),
        ("read_ranges", c_uint64),
        ("bytes_read", c_uint64),
        ("read_failures", c_uint64),
        ("write_calls", c_uint64),
        ("code_cache_hits", c_uint64),
        ("code_cache_misses", c_uint64),
        ("code_cache_invalidations", c_uint64),
        ("snapshots", c_uint64),
        ("frames", c_uint64),
        ("chunk_frames", c_uint64),
        ("direct_frames", c_uint64),
        ("frame_cache_hits", c_uint64),
        ("frame_cache_partial_hits", c_uint64),
        ("frame_cache_misses", c_uint64),
        ("reserved", c_uint64 * 7),
    ]


class pyf_frame(ctypes.Structure):
    _fields_ = [
        ("frame_addr", c_uint64),
        ("code_addr", c_uint64),
        ("function", c_char_p),
        ("filename", c_char_p),
        ("line", c_int32),
        ("end_line", c_int32),
        ("column", c_int32),
        ("end_column", c_int32),
        ("flags", c_uint32),
        ("reserved", c_uint32),
    ]


class pyf_thread(ctypes.Structure):
    _fields_ = [
        ("tstate_addr", c_uint64),
        ("thread_id", c_uint64),
        ("native_thread_id", c_uint64),
        ("interp_index", c_uint32),
        ("flags", c_uint32),
        ("first_frame", c_uint32),
        ("nframes", c_uint32),
        ("error", c_int32),
        ("reserved", c_uint32),
        ("error_detail", c_char_p),
    ]


class pyf_interp(ctypes.Structure):
    _fields_ = [
        ("addr", c_uint64),
        ("id", c_int64),
        ("first_thread", c_uint32),
        ("nthreads", c_uint32),
    ]


class pyf_snapshot(ctypes.Structure):
    _fields_ = [
        ("ninterps", c_uint32),
        ("nthreads", c_uint32),
        ("nframes", c_uint32),
        ("reserved", c_uint32),
        ("interps", POINTER(pyf_interp)),
        ("threads", POINTER(pyf_thread)),
        ("frames", POINTER(pyf_frame)),
        ("interp_size", c_uint32),
        ("thread_size", c_uint32),
        ("frame_size", c_uint32),
        ("reserved2", c_uint32),
    ]


class pyf_snapshot_request(ctypes.Structure):
    _fields_ = [
        ("struct_size", c_uint32),
        ("flags", c_uint32),
        ("native_tid", c_uint64),
        ("max_depth", c_uint32),
        ("reserved", c_uint32),
    ]


#: Every mirrored structure, by its C name (used by the layout test).
STRUCTURES = {
    cls.__name__: cls
    for cls in (pyf_iovec, pyf_reader, pyf_options, pyf_python_info,
                pyf_stats, pyf_frame, pyf_thread, pyf_interp, pyf_snapshot,
                pyf_snapshot_request)
}

pyf_target_p = c_void_p

# name -> (restype, argtypes)
_PROTOTYPES = {
    "pyf_error_message": (c_char_p, [c_int]),
    "pyf_error_name": (c_char_p, [c_int]),
    "pyf_library_version": (c_int, []),
    "pyf_target_open": (c_int, [POINTER(pyf_reader), c_uint64,
                                POINTER(pyf_options), POINTER(pyf_target_p),
                                POINTER(ctypes.c_char), c_size_t]),
    "pyf_target_open_pid": (c_int, [c_int, c_uint64, POINTER(pyf_options),
                                    POINTER(pyf_target_p),
                                    POINTER(ctypes.c_char), c_size_t]),
    "pyf_target_close": (None, [pyf_target_p]),
    "pyf_target_last_error": (c_char_p, [pyf_target_p]),
    "pyf_target_python": (c_int, [pyf_target_p, POINTER(pyf_python_info)]),
    "pyf_target_flush": (None, [pyf_target_p]),
    "pyf_target_stats": (None, [pyf_target_p, POINTER(pyf_stats)]),
    "pyf_target_reset_stats": (None, [pyf_target_p]),
    "pyf_snapshot_take": (c_int, [pyf_target_p, POINTER(pyf_snapshot_request),
                                  POINTER(POINTER(pyf_snapshot))]),
    "pyf_snapshot_free": (None, [POINTER(pyf_snapshot)]),
    "pyf_runtime_probe": (c_int, [POINTER(pyf_reader), c_uint64,
                                  POINTER(pyf_python_info)]),
    "pyf_runtime_find_in_range": (c_int, [POINTER(pyf_reader), c_uint64,
                                          c_uint64, POINTER(c_uint64)]),
    "pyf_elf_find_runtime": (c_int, [c_char_p, c_uint64,
                                        POINTER(c_uint64)]),
}

# ---- Finding and loading the library -------------------------------------

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
LIBRARY_ENV = "PYFRAMES_LIBRARY"


def _up(path, levels):
    for _ in range(levels):
        path = os.path.dirname(path)
    return path


def _by_mtime_newest_first(paths):
    def key(path):
        try:
            return -os.stat(path).st_mtime
        except OSError:
            return 0.0
    return sorted(paths, key=key)


def _soname_first(paths):
    """libpyframes.so.<major>, then libpyframes.so, then the others."""
    def rank(path):
        base = os.path.basename(path)
        if base == "libpyframes.so.%d" % PYF_VERSION_MAJOR:
            return 0
        if base == "libpyframes.so":
            return 1
        return 2
    return sorted(paths, key=lambda p: (rank(p), p))


def _search_patterns():
    """The fixed paths and glob patterns searched, in order."""
    repo = _up(_PACKAGE_DIR, 3)
    prefix = _up(_PACKAGE_DIR, 4)
    return [
        (os.path.join(repo, "build", "native", "libpyframes.so"), None),
        (os.path.join(repo, "build", "*", "native", "libpyframes.so"),
         _by_mtime_newest_first),
        (os.path.join(prefix, "lib", "libpyframes.so*"), _soname_first),
        (os.path.join(prefix, "lib64", "libpyframes.so*"), _soname_first),
        (os.path.join(prefix, "lib", "*", "libpyframes.so*"), _soname_first),
    ]


def _search():
    """[(pattern, [existing paths, in order])] for every search pattern."""
    result = []
    for pattern, order in _search_patterns():
        if order is None:
            found = [pattern] if os.path.exists(pattern) else []
        else:
            found = order(glob.glob(pattern))
        result.append((pattern, found))
    return result


def candidate_paths():
    """Existing library files :func:`load` would try, in order (the
    environment variable aside).

    1. the build tree: <repo>/build/native/libpyframes.so, then
       <repo>/build/*/native/libpyframes.so, newest first (<repo> is three
       levels above the package directory);
    2. the install prefix (the package lives in
       <prefix>/share/pyframes/python/pyframes): <prefix>/lib/libpyframes.so*,
       <prefix>/lib64/libpyframes.so*, <prefix>/lib/*/libpyframes.so*.
    """
    seen = set()
    unique = []
    for _, found in _search():
        for path in found:
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                unique.append(path)
    return unique


def _configure(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        func = getattr(lib, name)  # AttributeError for a missing symbol
        func.restype = restype
        func.argtypes = argtypes
    return lib


_SANITIZERS = (b"libasan.so", b"libtsan.so", b"libhwasan.so")


def _sanitizer_runtime_missing(path):
    """The sanitizer a library needs but this process has not preloaded.

    A library built with AddressSanitizer (or TSan) aborts the whole
    process on dlopen unless its runtime was loaded first; check before.
    """
    try:
        with open(path, "rb") as f:
            data = f.read(64 << 20)
    except OSError:
        return None
    needed = [name for name in _SANITIZERS if name in data]
    if not needed:
        return None
    try:
        with open("/proc/self/maps", "rb") as f:
            maps = f.read()
    except OSError:
        maps = b""
    for name in needed:
        if name not in maps:
            return name.decode()
    return None


def _try_load(path):
    """(lib, None) or (None, (reason, is_mismatch))."""
    if os.path.sep in path:
        runtime = _sanitizer_runtime_missing(path)
        if runtime:
            return None, ("built with a sanitizer; needs %s in LD_PRELOAD"
                          % runtime, True)
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        return None, (str(exc) or "cannot be loaded", False)
    try:
        version = lib.pyf_library_version
        version.restype = c_int
        version.argtypes = []
        number = version()
    except AttributeError:
        return None, ("not a libpyframes (no pyf_library_version)", True)
    major = number // 10000
    if major != PYF_VERSION_MAJOR:
        return None, ("version %d.%d.%d, need %d.x" % (
            major, number // 100 % 100, number % 100, PYF_VERSION_MAJOR), True)
    try:
        _configure(lib)
    except AttributeError as exc:
        return None, ("missing symbol: %s" % exc, True)
    return lib, None


_lock = threading.Lock()
_lib = None
_lib_path = None


def load():
    """The configured CDLL; raises LibraryNotFound or LibraryMismatch.

    $PYFRAMES_LIBRARY, when set, is the only path tried.  Otherwise the
    :func:`candidate_paths`, then the dynamic linker's search path.
    """
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        mismatch = False
        env = os.environ.get(LIBRARY_ENV)
        if env:
            candidates = [env]
        else:
            candidates = []
            seen = set()
            for pattern, found in _search():
                if not found:
                    tried.append((pattern, "missing"))
                for path in found:
                    real = os.path.realpath(path)
                    if real not in seen:
                        seen.add(real)
                        candidates.append(path)
        for path in candidates:
            if env and not os.path.exists(path):
                tried.append((path, "missing, from $" + LIBRARY_ENV))
                continue
            lib, failure = _try_load(path)
            if lib is not None:
                _lib, _lib_path = lib, path
                return lib
            tried.append((path, failure[0]))
            mismatch = mismatch or failure[1]
        if not env:
            import ctypes.util
            name = ctypes.util.find_library("pyframes")
            if name:
                lib, failure = _try_load(name)
                if lib is not None:
                    _lib, _lib_path = lib, name
                    return lib
                tried.append((name, failure[0]))
                mismatch = mismatch or failure[1]
            else:
                tried.append(("libpyframes.so", "not in the linker search path"))
        if mismatch:
            raise LibraryMismatch("", tried)
        raise LibraryNotFound("", tried)


def library_path():
    """Path of the loaded library (loads it if needed)."""
    load()
    return _lib_path


def library_version():
    """(major, minor, patch) of the loaded library."""
    number = load().pyf_library_version()
    return (number // 10000, number // 100 % 100, number % 100)


def decode(raw):
    """Text from a C string of the target (UTF-8, never raises)."""
    if raw is None:
        return ""
    return raw.decode("utf-8", "replace")


# ---- Python readers -------------------------------------------------------

_EFAULT = errors.PYF_EFAULT
_EPERM = errors.PYF_EPERM


def _code_for(exc):
    """The PYF_E* code a failing reader callable reports."""
    if isinstance(exc, PermissionError):
        return _EPERM
    code = getattr(exc, "code", None)
    if isinstance(exc, errors.PyframesError) and isinstance(code, int) \
            and code < 0 and code in errors.ERRORS:
        return code
    return _EFAULT


def _as_bytes(data, size):
    """``data`` as bytes of exactly ``size``, or None."""
    if type(data) is bytes:
        return data if len(data) == size else None
    if data is None:
        return None
    try:
        view = memoryview(data)
    except TypeError:
        return None
    if view.nbytes != size:
        return None
    return view.tobytes()


class ReaderBinding:
    """A ``pyf_reader`` over Python callables.

    ``read(addr, size) -> bytes`` (exactly ``size`` bytes; any bytes-like
    object works, e.g. gdb's Membuf) is required.  ``readv(ranges)`` takes a
    list of ``(addr, size)`` and returns a list of bytes or None per range.
    ``write(addr, data)`` is only used by the 3.15 frame-cache mode.

    The callables may raise: PermissionError becomes PYF_EPERM, a
    PyframesError its own code, anything else (and a wrong length) PYF_EFAULT.
    KeyboardInterrupt and other BaseExceptions are kept in ``pending`` and
    every further read fails fast; :meth:`raise_pending` re-raises them after
    the library call returned.

    Keep the object alive as long as the library may call it (a Target holds
    it for its whole life).
    """

    def __init__(self, read, readv=None, write=None):
        if not callable(read):
            raise TypeError("read must be callable")
        if readv is not None and not callable(readv):
            raise TypeError("readv must be callable or None")
        if write is not None and not callable(write):
            raise TypeError("write must be callable or None")
        self._read = read
        self._readv = readv
        self._write = write
        self.pending = None
        #: The last exception a callable raised (for debugging a reader).
        self.last_exception = None
        self._c_read = pyf_read_fn(self._read_tramp)
        self._c_readv = pyf_readv_fn(self._readv_tramp) if readv else pyf_readv_fn()
        self._c_write = pyf_write_fn(self._write_tramp) if write else pyf_write_fn()
        self._c_message = pyf_message_fn(self._message_tramp)
        self._message = None  # the bytes buffer handed to C, kept alive here
        self._failed = False  # did the latest call fail with an exception?
        self.struct = pyf_reader(ctypes.sizeof(pyf_reader), self._c_read,
                                 self._c_readv, self._c_write, None,
                                 self._c_message)

    def _fail(self, exc):
        self.last_exception = exc
        self._failed = True
        if not isinstance(exc, Exception):
            if self.pending is None:
                self.pending = exc
            return _EFAULT
        return _code_for(exc)

    def _message_tramp(self, arg):
        """The reader's own words for its latest failure (the debugger's
        memory error), for the library's failure detail."""
        try:
            exc = self.last_exception if self._failed else None
            text = " ".join(str(exc).split()) if exc is not None else ""
            if not text:
                return None
            self._message = ctypes.create_string_buffer(
                text.encode("utf-8", "replace")[:200])
            return ctypes.addressof(self._message)
        except BaseException:
            return None

    def _read_tramp(self, arg, addr, dst, size):
        self._failed = False
        try:
            if self.pending is not None:
                return _EFAULT
            if size == 0:
                return 0
            data = _as_bytes(self._read(addr, size), size)
            if data is None or not dst:
                return _EFAULT
            ctypes.memmove(dst, data, size)
            return 0
        except BaseException as exc:  # never propagate into C
            try:
                return self._fail(exc)
            except BaseException:
                return _EFAULT

    def _readv_tramp(self, arg, iov, n, status):
        self._failed = False
        try:
            if self.pending is not None:
                for i in range(n):
                    status[i] = _EFAULT
                return _EFAULT if n else 0
            ranges = [(iov[i].addr, iov[i].len) for i in range(n)]
            try:
                results = list(self._readv(ranges))
            except BaseException as exc:
                code = self._fail(exc)
                for i in range(n):
                    status[i] = code
                return code if n else 0
            first = 0
            for i in range(n):
                size = ranges[i][1]
                data = _as_bytes(results[i], size) if i < len(results) else None
                if size == 0:
                    code = 0
                elif data is None or not iov[i].dst:
                    code = _EFAULT
                else:
                    ctypes.memmove(iov[i].dst, data, size)
                    code = 0
                status[i] = code
                if code and not first:
                    first = code
            return first
        except BaseException as exc:
            try:
                code = self._fail(exc)
                for i in range(n):
                    status[i] = code
                return code
            except BaseException:
                return _EFAULT

    def _write_tramp(self, arg, addr, src, size):
        try:
            if self.pending is not None:
                return _EFAULT
            data = ctypes.string_at(src, size) if size else b""
            self._write(addr, data)
            return 0
        except BaseException as exc:
            try:
                return self._fail(exc)
            except BaseException:
                return _EFAULT

    def raise_pending(self):
        """Re-raise a KeyboardInterrupt (etc.) caught in a callback."""
        exc, self.pending = self.pending, None
        if exc is not None:
            raise exc

    def pointer(self):
        return ctypes.byref(self.struct)
