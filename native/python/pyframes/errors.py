"""Exceptions raised by pyframes.

Every failure reported by libpyframes becomes a :class:`PyframesError` (or a
subclass picked from the error code).  ``str(error)`` is a single line that
says what failed, the library's detail when it has one, and what to try.

This module does not need the shared library: the error table below mirrors
``PYF_ERRORS`` in ``pyframes.h`` (a unit test keeps them in sync).
"""

__all__ = [
    "PyframesError",
    "ReadFault",
    "PermissionDenied",
    "NoSuchProcess",
    "NotPython",
    "UnsupportedVersion",
    "BadOffsets",
    "CorruptTarget",
    "NoSuchThread",
    "LibraryNotFound",
    "LibraryMismatch",
    "ERRORS",
    "error_from_code",
    "error_name",
    "error_message",
]

# (name without the PYF_ prefix, value, message) exactly as in PYF_ERRORS.
_ERROR_TABLE = (
    ("OK", 0, "success"),
    ("EINVAL", -1, "invalid argument"),
    ("ENOMEM", -2, "out of memory"),
    ("EFAULT", -3, "target memory not readable"),
    ("EPERM", -4, "permission denied reading target memory"),
    ("ENOPROC", -5, "no such process"),
    ("ENOTPY", -6, "no CPython runtime found in target"),
    ("EVERSION", -7, "unsupported CPython version"),
    ("EOFFSETS", -8, "_Py_DebugOffsets failed validation"),
    ("ECORRUPT", -9, "inconsistent data in target"),
    ("ECYCLE", -10, "cycle in a linked structure of the target"),
    ("EDEPTH", -11, "depth or count limit reached"),
    ("ENOTSUP", -12, "operation not supported by this target or reader"),
    ("EIO", -13, "I/O error"),
    ("ENOTHREAD", -15, "no such thread"),
)

#: value -> (name such as "PYF_EFAULT", static message)
ERRORS = {value: ("PYF_" + name, msg) for name, value, msg in _ERROR_TABLE}

# The codes as constants, for the other modules.
PYF_OK = 0
PYF_EINVAL = -1
PYF_ENOMEM = -2
PYF_EFAULT = -3
PYF_EPERM = -4
PYF_ENOPROC = -5
PYF_ENOTPY = -6
PYF_EVERSION = -7
PYF_EOFFSETS = -8
PYF_ECORRUPT = -9
PYF_ECYCLE = -10
PYF_EDEPTH = -11
PYF_ENOTSUP = -12
PYF_EIO = -13
PYF_ENOTHREAD = -15


def error_name(code):
    """``"PYF_EFAULT"`` for -3; ``"PYF_UNKNOWN"`` for values not in the list."""
    entry = ERRORS.get(code)
    return entry[0] if entry else "PYF_UNKNOWN"


def error_message(code):
    """The library's static message for ``code`` ("unknown error" otherwise)."""
    entry = ERRORS.get(code)
    return entry[1] if entry else "unknown error"


def _one_line(text):
    """Make ``text`` a single printable line (details can quote the target)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


class PyframesError(Exception):
    """A libpyframes failure.

    Attributes:
        code:   the negative ``PYF_E*`` value (``None`` for errors that do not
                come from the library, such as :class:`LibraryNotFound`).
        name:   ``"PYF_EFAULT"`` and so on.
        detail: the library's detail message (what was read, where, why);
                may be empty.
    """

    #: What to try, appended to the message; subclasses override it.
    hint = ""
    #: The hint is left out when the detail already mentions one of these.
    hint_markers = ()

    def __init__(self, code=None, detail="", hint=None):
        if detail is None:
            detail = ""
        elif isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        self.code = code
        self.name = error_name(code) if code is not None else "PYF_UNKNOWN"
        self.detail = detail
        if hint is not None:
            self.hint = hint
        super().__init__(code, detail)

    @property
    def message(self):
        """The static message of the code."""
        return error_message(self.code) if self.code is not None else "error"

    def __str__(self):
        text = self.message
        detail = self.detail.strip()
        lowered = detail.lower()
        if detail:
            # Details are often complete sentences ("process 12 does not
            # exist (no such process)"): do not repeat the message then.
            lead = " ".join(text.lower().split()[:2])
            text = detail if lead in lowered else "%s: %s" % (text, detail)
        if self.hint and not any(m in lowered for m in self.hint_markers):
            text = "%s (%s)" % (text, self.hint)
        return _one_line(text)

    def __repr__(self):
        return "%s(%s, %r)" % (type(self).__name__, self.name, self.detail)


class ReadFault(PyframesError):
    """Target memory could not be read (PYF_EFAULT)."""

    hint = ("the process may have exited or changed while being read; "
            "retry, or stop it first")


class PermissionDenied(PyframesError):
    """The OS refused access to the target (PYF_EPERM)."""

    hint = ("run as the same user as the target or as root; with "
            "/proc/sys/kernel/yama/ptrace_scope >= 1 you need CAP_SYS_PTRACE; "
            "in a container, --cap-add=SYS_PTRACE")
    hint_markers = ("ptrace",)


class NoSuchProcess(PyframesError):
    """The process does not exist (PYF_ENOPROC)."""

    hint = "check the PID"
    hint_markers = ("does not exist", "no such process")


class NotPython(PyframesError):
    """No CPython runtime was found in the target (PYF_ENOTPY)."""

    hint = ("is it a CPython 3.13+ process? If python is statically linked "
            "and stripped, pass the address of _PyRuntime")
    hint_markers = ("3.13",)


class UnsupportedVersion(PyframesError):
    """The target's CPython version is not supported (PYF_EVERSION)."""

    hint = "pyframes supports CPython 3.13, 3.14 and 3.15"
    hint_markers = ("3.13",)


class BadOffsets(PyframesError):
    """``_Py_DebugOffsets`` failed validation (PYF_EOFFSETS)."""

    hint = ("the interpreter's debug offsets look wrong: an unsupported or "
            "modified build, or a wrong runtime address")


class CorruptTarget(PyframesError):
    """Inconsistent data: corrupt, or changing while read (PYF_ECORRUPT,
    PYF_ECYCLE, PYF_EDEPTH)."""

    hint = "the process may be running; retry, or stop it first"


class NoSuchThread(PyframesError):
    """No Python thread has the requested native id (PYF_ENOTHREAD)."""

    hint = "check the native thread id: the OS tid, as gdb's 'info threads' shows"


class LibraryNotFound(PyframesError):
    """libpyframes could not be found or loaded.

    ``tried`` lists ``(path, reason)`` pairs, in lookup order.
    """

    hint = ("build it with cmake, or set PYFRAMES_LIBRARY to the path of "
            "libpyframes.so")

    def __init__(self, detail="", tried=()):
        self.tried = list(tried)
        super().__init__(None, detail)
        self.name = "LIBRARY_NOT_FOUND"

    @property
    def message(self):
        return "libpyframes not found"

    def __str__(self):
        text = self.message
        if self.detail:
            text = "%s: %s" % (text, self.detail)
        if self.tried:
            text = "%s; tried: %s" % (text, ", ".join(
                "%s (%s)" % (path, reason) for path, reason in self.tried))
        else:
            text += "; no candidate path"
        return _one_line("%s (%s)" % (text, self.hint))


class LibraryMismatch(LibraryNotFound):
    """A libpyframes was found but its version or symbols do not match."""

    hint = ("rebuild libpyframes from the same source as this package, or set "
            "PYFRAMES_LIBRARY to a matching libpyframes.so")

    def __init__(self, detail="", tried=()):
        super().__init__(detail, tried)
        self.name = "LIBRARY_MISMATCH"

    @property
    def message(self):
        return "no matching libpyframes"


_CLASSES = {
    PYF_EFAULT: ReadFault,
    PYF_EPERM: PermissionDenied,
    PYF_ENOPROC: NoSuchProcess,
    PYF_ENOTPY: NotPython,
    PYF_EVERSION: UnsupportedVersion,
    PYF_EOFFSETS: BadOffsets,
    PYF_ECORRUPT: CorruptTarget,
    PYF_ECYCLE: CorruptTarget,
    PYF_EDEPTH: CorruptTarget,
    PYF_ENOTHREAD: NoSuchThread,
}


def error_from_code(code, detail=""):
    """The exception (not raised) for a negative library return code."""
    return _CLASSES.get(code, PyframesError)(code, detail)
