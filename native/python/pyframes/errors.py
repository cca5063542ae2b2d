"""Exceptions raised by pyframes, and the wording of every failure.

Every failure reported by libpyframes becomes a :class:`PyframesError` (or a
subclass picked from the error code).  ``str(error)`` is a single line that
says what failed, the library's detail when it has one, and what to try.
The debugger commands and the CLI report failures as :class:`CommandError`
whose text comes from the functions at the end of this module: what a user
reads about a failure is worded here and nowhere else.

This module does not need the shared library: the error table below mirrors
``PYF_ERRORS`` in ``pyframes.h`` (a unit test keeps them in sync).
"""

__all__ = [
    "PyframesError",
    "CommandError",
    "UsageError",
    "ReadFault",
    "PermissionDenied",
    "NoSuchProcess",
    "NotPython",
    "UnsupportedVersion",
    "NoRuntime",
    "BadOffsets",
    "CorruptTarget",
    "NoSuchThread",
    "LibraryNotFound",
    "LibraryMismatch",
    "LibraryForeign",
    "ERRORS",
    "error_from_code",
    "error_name",
    "error_message",
]

from .escaping import escape

#: The CPython versions pyframes reads, as every message words them (the
#: library's pyf__version_refused says the same).
SUPPORTED_TEXT = "3.8-3.15"

# The codes of PYF_ERRORS in pyframes.h, for the other modules.
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

# Their messages, exactly as in PYF_ERRORS.
_MESSAGES = {
    PYF_OK: "success",
    PYF_EINVAL: "invalid argument",
    PYF_ENOMEM: "out of memory",
    PYF_EFAULT: "target memory not readable",
    PYF_EPERM: "permission denied reading target memory",
    PYF_ENOPROC: "no such process",
    PYF_ENOTPY: "no CPython runtime found in target",
    PYF_EVERSION: "unsupported CPython version",
    PYF_EOFFSETS: "_Py_DebugOffsets failed validation",
    PYF_ECORRUPT: "inconsistent data in target",
    PYF_ECYCLE: "cycle in a linked structure of the target",
    PYF_EDEPTH: "depth or count limit reached",
    PYF_ENOTSUP: "operation not supported by this target or reader",
    PYF_EIO: "I/O error",
    PYF_ENOTHREAD: "no such thread",
}

#: value -> (name such as "PYF_EFAULT", static message)
ERRORS = {value: (name, _MESSAGES[value]) for name, value in list(globals().items())
          if name.startswith("PYF_")}


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
    return escape(text)


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
    #: A detail that mentions one of these is the whole message.
    complete_markers = ()

    #: For a failed read: what was read, where, how much, and the reader's
    #: own words (the library's pyf_failure); None/"" otherwise.
    what = ""
    addr = None
    length = None
    reader_message = ""
    #: For an unsupported version found by a probe: its PythonInfo.
    python = None

    def __init__(self, code=None, detail="", hint=None, what="", addr=None,
                 length=None, reader_message=""):
        if detail is None:
            detail = ""
        elif isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        self.code = code
        self.name = error_name(code) if code is not None else "PYF_UNKNOWN"
        self.detail = detail
        if length:
            self.what, self.addr, self.length = what, addr, length
            self.reader_message = reader_message or ""
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
            complete = lead in lowered or any(m in lowered for m in self.complete_markers)
            text = detail if complete else "%s: %s" % (text, detail)
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
    """The OS refused access to the target (PYF_EPERM).  Inside a container
    (in_container) the message also names what to grant it:
    CONTAINER_PTRACE."""

    hint = ("run as the same user as the target or as root; with "
            "/proc/sys/kernel/yama/ptrace_scope >= 1 you need CAP_SYS_PTRACE")
    hint_markers = ("ptrace",)

    def __str__(self):
        text = PyframesError.__str__(self)
        if in_container():
            text = _one_line("%s; %s" % (text, CONTAINER_PTRACE))
        return text


#: What a reader inside a container needs to be granted to read another
#: process (appended to a PermissionDenied there).
CONTAINER_PTRACE = (
    "pyframes runs in a container: grant it CAP_SYS_PTRACE (docker run --cap-add "
    "SYS_PTRACE, also for docker exec into it; kubectl debug --profile=general; a pod's "
    "securityContext.capabilities.add: [SYS_PTRACE]), and check ptrace_scope "
    "(/proc/sys/kernel/yama/ptrace_scope) on the node")


#: CAP_SYS_PTRACE's bit in a capability set
_CAP_SYS_PTRACE = 19


def in_container():
    """Whether pyframes runs where CAP_SYS_PTRACE can only be granted from
    outside: its capability bounding set lacks it (what Docker and
    Kubernetes give a container unless told otherwise; a process can never
    regain it), or it runs in a PID namespace below the one its /proc
    shows."""
    from .tids import in_pid_namespace
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapBnd:"):
                    if not int(line.split()[1], 16) >> _CAP_SYS_PTRACE & 1:
                        return True
                    break
    except (OSError, ValueError, IndexError):
        pass
    return in_pid_namespace()


class NoSuchProcess(PyframesError):
    """The process does not exist (PYF_ENOPROC)."""

    hint = "check the PID"
    hint_markers = ("does not exist", "no such process")


class NotPython(PyframesError):
    """No CPython runtime was found in the target (PYF_ENOTPY): "process 12
    (sleep) is not a Python process" (the library's sentence alone), or what
    was searched and why nothing was taken."""

    complete_markers = ("is not a python process",)


class UnsupportedVersion(PyframesError):
    """The target's CPython version is not supported (PYF_EVERSION)."""

    hint = "pyframes reads CPython " + SUPPORTED_TEXT
    hint_markers = ("unsupported cpython",)


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


class LibraryForeign(LibraryNotFound):
    """A libpyframes was found that this system cannot load: it was built
    for another one (a newer C library, a library this one lacks, another
    word size), such as a build made inside the sandbox root and found in
    the clone on the host.  ``why`` says what the dynamic linker
    missed; ``source`` is the source tree to build in, when the package
    runs from one."""

    hint = ("build it here with cmake: %scmake -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo && "
            "cmake --build build (or set PYFRAMES_LIBRARY to a libpyframes.so built on "
            "this system)")

    def __init__(self, path, why, source=None, tried=()):
        super().__init__("", tried)
        self.name = "LIBRARY_FOREIGN"
        self.path = path
        self.why = why
        self.source = source

    @property
    def message(self):
        return "this libpyframes (%s) was built for another system (%s)" % (self.path, self.why)

    def __str__(self):
        text = "%s; %s" % (self.message, self.hint % (
            "cd %s && " % self.source if self.source else ""))
        others = ["%s (%s)" % (path, reason) for path, reason in self.tried
                  if path != self.path]
        if others:
            text += "; also tried: " + ", ".join(others)
        return _one_line(text)


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


def error_from_code(code, detail="", **facts):
    """The exception (not raised) for a negative library return code; facts
    (what, addr, length, reader_message) describe a failed read."""
    return _CLASSES.get(code, PyframesError)(code, detail, **facts)


# --------------------------------------------------------------------------
# Failures of a command (debugger commands and the CLI)


class CommandError(Exception):
    """A failure shown to the user as one message, without a traceback."""


class UsageError(CommandError):
    """Bad command-line options; the message includes the usage text."""


class NoRuntime(CommandError):
    """The process runs no CPython pyframes reads: not Python at all, or a
    version (or build) it refuses.  Its message is the library's."""


NO_THREADS = ("the CPython runtime has no threads (the interpreter is "
              "starting or finalizing)")

NO_NATIVE_BACKTRACE = ("--native needs the native backtrace of the thread, which "
                       "%s did not give")

NO_SELECTED_THREAD = ("no thread is selected: select one, or use --all or "
                      "--thread N")

NO_PROCESS = ("no process or core file: start, attach to or load a CPython "
              "process first")

CORE_HINT = ("the core file does not contain this memory: write a complete core "
             "with gdb's gcore, or have the kernel write it (ulimit -c unlimited, "
             "/proc/PID/coredump_filter 0x7f); lldb's process save-core can leave "
             "out parts of thread stacks")

CORE_MAYBE = ("on a core file this can mean that the core lacks the process's "
              "memory: write a complete core with gdb's gcore, or have the kernel "
              "write it (ulimit -c unlimited, /proc/PID/coredump_filter 0x7f)")


def no_core_file(path):
    """dump's argument is no PID (a number) and names no file."""
    return "no core file %s (a number is a PID, anything else a core file's path)" % (
        escape(path))


def core_refused(path, exc):
    """The failure of reading the core file at ``path`` (no target could
    be opened on it, or a read it cannot serve; exc an error or its
    words): the library's words, which name what the core lacks, without a
    live process's hint (a core does not change), after the core's path."""
    detail = " ".join((getattr(exc, "detail", "") or str(exc)).split())
    if path not in detail:
        detail = "core %s: %s" % (path, detail)
    return _one_line(detail)


def core_file_note(entry):
    """The line after a core's stacks for a file it names that could not
    be read (pyframes.cores.CoreFileEntry): what the core leaves to that
    file (its read-only pages: program text, constants such as type names)
    is then unreadable."""
    where = entry.open_path or entry.path
    if entry.status == "missing":
        why = ("not found at %s (give the directory the core's files are under: "
               "--sysroot DIR; the executable: --exe PATH)" % where)
    elif entry.status == "mismatch":
        why = ("%s is another build than the one the core was written with (build id "
               "%s, the core's %s): it is not read" % (where, entry.file_build_id or "none",
                                                        entry.build_id))
    else:
        why = "%s cannot be read" % where
    return "note: %s: %s; what the core leaves to it (its read-only pages) is unreadable" % (
        entry.path, why)


def process_exited(pid, while_doing, error=None):
    """The failure of a CLI command whose process exited under it."""
    text = "process %d exited while %s" % (pid, while_doing)
    return text + (" (%s)" % error if error else "")


def core_note(count):
    """The line after a core file's stacks or tasks when ``count`` of them
    could not be read to the end because a read failed."""
    return "note: %d %s stopped at memory the core file lacks; %s" % (
        count, "stack or task list" if count == 1 else "stacks or task lists",
        CORE_HINT[CORE_HINT.index("write"):])


#: The failures of one thread's stack that a process running while it is
#: read causes by itself: a frame or chunk freed, reused or relinked
#: between two reads (the library reads such a thread again a few times
#: first).
_RACES = (PYF_ECORRUPT, PYF_EFAULT, PYF_ECYCLE)


def thread_sample_failure(code, running):
    """The summary's words for a thread-sample left out because its stack
    could not be read to the end: in a process that runs while it is
    sampled, a stack that changed while it was read is a race of no
    consequence but the sample it costs; anything else is named."""
    if running and code in _RACES:
        return "a stack that changed while it was read (that thread-sample skipped)"
    return "a stack not read to the end (that thread-sample skipped): " + error_message(code)


def is_read_failure(text):
    """Whether a thread's or task's error text is a failed read."""
    return bool(text) and error_message(PYF_EFAULT) in text


def unsupported_version(hexversion):
    """The message for a runtime whose version pyframes does not read (the
    library's pyf__version_refused words it the same)."""
    from .model import version_from_hex
    return ("unsupported CPython %s (pyframes reads CPython %s)"
            % (version_from_hex(hexversion), SUPPORTED_TEXT))


def process_label(pid, name=None):
    """How a failure names a process: "process 12 (sleep)", by its PID and
    its name (/proc/PID/comm, or the debugger's), as the library names the
    process it searched."""
    if pid is None:
        return None
    return "process %d (%s)" % (pid, name) if name else "process %d" % pid


def version_disagrees(said, read):
    """A runtime whose Py_Version symbol names another version than the
    target's own sys.hexversion."""
    from .model import version_from_hex
    return ("the runtime's Py_Version says CPython %s, its sys.hexversion %s: refused"
            % (version_from_hex(said), version_from_hex(read)))


def unusable_runtime(symbol, addr, how, error):
    return ("%s at 0x%x (%s) is not a usable CPython runtime: %s"
            % (symbol, addr, how, error))


def pid_reader_impossible(live, pid):
    """--reader pid on something that is not a live local process."""
    if live:
        return ("--reader pid needs a live process on this machine; process "
                "%s is not one that can be read here (remote target?): use "
                "--reader debugger" % pid)
    return ("--reader pid needs a live process; this is a core file or has "
            "no process: use --reader debugger")


def cannot_stop_again(pid, pgid):
    """A process attached over gdbserver that leads no process group:
    gdbserver stops a running process by signalling its group, so once
    resumed it could not be stopped again."""
    return ("gdbserver stops a running process by signalling its process group, "
            "and process %d leads none (its group is %s): once resumed it could not "
            "be stopped again; sample it where it runs (python3 -m pyframes sample "
            "%d), or start it in a session of its own (setsid)" % (pid, pgid, pid))


def sampling_cut(taken, asked, debugger, other_namespace):
    """py-sample's note when the process stopped before the samples asked
    for were in (Ctrl-C, a breakpoint, or a stop the debugger made up:
    ``other_namespace``, the process runs in another PID namespace)."""
    text = "the process stopped after %d of the %d samples asked for" % (taken, asked)
    if other_namespace:
        text += (" (%s may stop a process of another PID namespace by itself: it cannot "
                 "tell its own stop signals from another's there, whose sender the process "
                 "does not see; python3 -m pyframes sample PID samples it whole)" % debugger)
    return text


def permission_denied(exc):
    return "permission denied reading the target: %s" % (exc,)


def unexpected(exc):
    return "%s: %s" % (type(exc).__name__, exc)


def failure_text(code, what, addr, length, reader_message, detail):
    """One line for a library failure: a failed read as "reading WHAT at
    0xADDR (N bytes): reason [reader: its own words]", anything else as the
    library's detail."""
    if not length:
        return detail or error_message(code)
    text = "reading %s at 0x%x (%d bytes): %s" % (what, addr, length, error_message(code))
    return text + (" [reader: %s]" % reader_message if reader_message else "")


def read_fault(exc, hint=None):
    """'memory unreadable at 0x... while reading ...' for a ReadFault, with
    the reader's own words (the debugger's memory error) when it gave any."""
    if not exc.length:
        return str(exc)
    text = "memory unreadable at 0x%x while reading %s (%d bytes)" % (
        exc.addr, exc.what, exc.length)
    if exc.reader_message:
        text += ": %s" % exc.reader_message
    hint = hint or getattr(exc, "hint", "")
    return _one_line(text + (" (%s)" % hint if hint else ""))


def no_python_thread(wanted, how, label, rows, debugger, command):
    """Why a thread choice found no Python thread; rows are the lines of the
    thread table (render.thread_table)."""
    if how is None:
        head = "the selected thread (%sLWP %d) runs no Python code" % (
            label + ", " if label else "", wanted)
    else:
        head = ("%s: no Python thread has native thread id or Python thread "
                "id %d" % (how, wanted))
    if not rows:
        return head + "; the runtime lists no Python threads"
    lines = [head + ". Python threads:"]
    lines.extend(rows)
    lines.append("Select one of them in %s, or use `%s --thread N` or `%s --all`."
                 % (debugger, command, command))
    return "\n".join(lines)
