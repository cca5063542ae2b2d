"""Readers written in Python, as a ``pyf_reader``.

:class:`ReaderBinding` turns Python callables into a ``pyf_reader`` whose
C trampolines never let an exception escape into the library.
"""

import ctypes

from . import errors
from ._abi import (PYF_READS_CORE, PYF_READS_RUNNING, PYF_READS_STOPPED, pyf_message_fn,
                   pyf_read_fn, pyf_reader, pyf_readv_fn, pyf_write_fn)

__all__ = ["ReaderBinding", "READS"]

#: What a reader reads (pyf_reader.reads), by name: the checks of a walk
#: follow it ("running": every check of a process that runs while read).
READS = {"stopped": PYF_READS_STOPPED, "running": PYF_READS_RUNNING, "core": PYF_READS_CORE}

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
    ``reads``: what they read (:data:`READS`): "stopped" (a process held
    stopped, the default), "running" (a process that runs while it is
    read: the library then checks every read for changes) or "core".

    The callables may raise: PermissionError becomes PYF_EPERM, a
    PyframesError its own code, anything else (and a wrong length) PYF_EFAULT.
    KeyboardInterrupt and other BaseExceptions are kept in ``pending`` and
    every further read fails fast; :meth:`raise_pending` re-raises them after
    the library call returned.

    Keep the object alive as long as the library may call it (a Target holds
    it for its whole life).
    """

    def __init__(self, read, readv=None, write=None, reads="stopped"):
        if reads not in READS:
            raise ValueError("reads must be one of %s, not %r" % (", ".join(READS), reads))
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
                                 self._c_message, READS[reads])

    def _fail(self, exc):
        self.last_exception = exc
        self._failed = True
        if not isinstance(exc, Exception):
            if self.pending is None:
                self.pending = exc
            return _EFAULT
        return _code_for(exc)

    def last_words(self):
        """One line of the last exception a callable raised ("" if none)."""
        exc = self.last_exception
        return " ".join(str(exc).split())[:200] if exc is not None else ""

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
