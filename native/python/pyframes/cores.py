"""Core files, read by the library (pyframes.h, "Core files"): an ELF core
(the kernel's, gdb's gcore, systemd-coredump's) or lldb's minidump, plain
or compressed with zstd, xz, lz4 or gzip.

:class:`CoreFile` is one open core: what it says of itself (the process,
its executable and command line, the signal that ended it and the thread
that received it, whether it is cut short), its threads with their
registers, the files it names and what became of each.
:func:`pyframes.target.open_core` opens a target on one.  :func:`facts_of`
gives the debuggers a core's registers by thread (lldb shows no orig_rax of
a core: waits.register_facts needs it) and its signal (their thread
headers name it).
"""

import dataclasses
import json
import os
from typing import Dict, Optional, Tuple

from . import _abi, _loader, errors, waits
from .errors import error_from_code
from .escaping import escape
from .model import Signal

__all__ = ["CoreFile", "Signal", "CoreThread", "CoreFileEntry", "registers", "facts_of",
           "signal_name", "compressions", "describe_threads", "summary_line", "notes",
           "core_json"]

#: user_regs_struct of x86-64, in order (27 words)
X86_64_REGISTERS = ("r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
                    "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags",
                    "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs")
#: user_pt_regs of aarch64 (34 words)
AARCH64_REGISTERS = tuple("x%d" % i for i in range(31)) + ("sp", "pc", "pstate")
_REGISTERS = {62: X86_64_REGISTERS, 183: AARCH64_REGISTERS}

_FORMATS = {_abi.PYF_CORE_ELF: "elf", _abi.PYF_CORE_MINIDUMP: "minidump"}
_COMPRESSIONS = {_abi.PYF_CORE_PLAIN: None, _abi.PYF_CORE_ZSTD: "zstd",
                 _abi.PYF_CORE_XZ: "xz", _abi.PYF_CORE_LZ4: "lz4", _abi.PYF_CORE_GZIP: "gzip"}
_STATUSES = {_abi.PYF_CORE_FILE_USED: "used", _abi.PYF_CORE_FILE_UNCHECKED: "unchecked",
             _abi.PYF_CORE_FILE_MISSING: "missing", _abi.PYF_CORE_FILE_MISMATCH: "mismatch",
             _abi.PYF_CORE_FILE_UNREADABLE: "unreadable"}

#: Linux's signal numbers (x86-64 and aarch64 share them)
_SIGNALS = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT",
            7: "SIGBUS", 8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV",
            12: "SIGUSR2", 13: "SIGPIPE", 14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT",
            17: "SIGCHLD", 18: "SIGCONT", 19: "SIGSTOP", 20: "SIGTSTP", 21: "SIGTTIN",
            22: "SIGTTOU", 23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ", 26: "SIGVTALRM",
            27: "SIGPROF", 28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS"}
#: si_code names of the signals a crash raises (asm-generic/siginfo.h)
_CODES = {
    11: {1: "SEGV_MAPERR", 2: "SEGV_ACCERR", 3: "SEGV_BNDERR", 4: "SEGV_PKUERR"},
    7: {1: "BUS_ADRALN", 2: "BUS_ADRERR", 3: "BUS_OBJERR", 4: "BUS_MCEERR_AR",
        5: "BUS_MCEERR_AO"},
    4: {1: "ILL_ILLOPC", 2: "ILL_ILLOPN", 3: "ILL_ILLADR", 4: "ILL_ILLTRP",
        5: "ILL_PRVOPC", 6: "ILL_PRVREG", 7: "ILL_COPROC", 8: "ILL_BADSTK"},
    8: {1: "FPE_INTDIV", 2: "FPE_INTOVF", 3: "FPE_FLTDIV", 4: "FPE_FLTOVF",
        5: "FPE_FLTUND", 6: "FPE_FLTRES", 7: "FPE_FLTINV", 8: "FPE_FLTSUB"},
    5: {1: "TRAP_BRKPT", 2: "TRAP_TRACE", 3: "TRAP_BRANCH", 4: "TRAP_HWBKPT"},
}
#: si_code values every signal shares
_ANY_CODES = {0: "SI_USER", 0x80: "SI_KERNEL", -1: "SI_QUEUE", -2: "SI_TIMER",
              -3: "SI_MESGQ", -4: "SI_ASYNCIO", -5: "SI_SIGIO", -6: "SI_TKILL"}


def signal_name(signo):
    """``SIGSEGV`` for 11; ``signal 64`` for one without a name."""
    return _SIGNALS.get(signo, "signal %d" % signo)


def compressions():
    """The compressions the loaded library reads (besides plain cores)."""
    bits = _loader.load().pyf_core_compressions()
    return sorted(name for kind, name in _COMPRESSIONS.items() if name and bits & (1 << kind))


@dataclasses.dataclass(frozen=True)
class CoreThread:
    """A thread of a core: its OS id, pending signal, registers by name
    (the machine's user_regs_struct; no orig_rax where the core keeps none:
    a minidump), and whether it received the core's signal."""

    tid: int
    signo: int
    registers: Dict[str, int]
    signalled: bool = False


@dataclasses.dataclass(frozen=True)
class CoreFileEntry:
    """A file a core names: as it names it, the file read for it
    (``open_path``, None when none), and ``status``: "used" (found, the
    build id the core holds), "unchecked" (found and used: the core holds no
    build id for it, or it was not needed yet), "missing", "mismatch"
    (another build: never read), "unreadable"."""

    path: str
    open_path: Optional[str]
    status: str
    executable: bool
    build_id: Optional[str]
    file_build_id: Optional[str]


def _text(raw):
    return os.fsdecode(raw) if raw is not None else None


def _hex(array, size):
    return bytes(array[:size]).hex() if size else None


class CoreFile(object):
    """One open core file (pyf_core).  Use as a context manager or call
    :meth:`close` (after every target opened on it)."""

    def __init__(self, path, *, executable=None, sysroot=None, temp_dir=None):
        self._lib = _loader.load()
        self.path = path
        req = _abi.pyf_core_request()
        req.struct_size = _abi.ctypes.sizeof(req)
        self._keep = [os.fsencode(p) if p is not None else None
                      for p in (path, executable, sysroot, temp_dir)]
        req.path, req.executable, req.sysroot, req.temp_dir = self._keep
        handle = _abi.pyf_core_p()
        failure = _abi.pyf_failure()
        failure.struct_size = _abi.ctypes.sizeof(failure)
        rc = self._lib.pyf_core_open(_abi.ctypes.byref(req), _abi.ctypes.byref(handle),
                                     _abi.ctypes.byref(failure))
        if rc != 0:
            raise error_from_code(rc, **_facts(failure))
        self._handle = handle
        info = _abi.pyf_core_info()
        info.struct_size = _abi.ctypes.sizeof(info)
        self._lib.pyf_core_info_get(handle, _abi.ctypes.byref(info))
        self.format = _FORMATS.get(info.format, "elf")
        self.compression = _COMPRESSIONS.get(info.compression)
        self.pid = info.pid or None
        self.machine = info.machine
        self.executable = _text(info.executable) or None
        self.command = info.command.decode("utf-8", "backslashreplace") or None
        self.size = info.size
        self.missing_bytes = info.missing_bytes
        #: the first of the partial flags' causes, None when whole
        self.problem = info.problem.decode("utf-8", "backslashreplace") or None
        self.cut_short = bool(info.flags & (_abi.PYF_CORE_CUT_SHORT
                                            | _abi.PYF_CORE_STREAM_ENDED))
        self.signal = None
        if info.flags & _abi.PYF_CORE_SIGNAL:
            siginfo = bool(info.flags & _abi.PYF_CORE_SIGINFO)
            code = info.code if siginfo else None
            self.signal = Signal(
                info.signo, signal_name(info.signo), code,
                None if code is None else (_CODES.get(info.signo, {}).get(code)
                                           or _ANY_CODES.get(code)),
                info.signal_addr if siginfo and info.signo in _CODES else None,
                info.signal_tid or None)
        self.threads = self._threads()

    def _threads(self):
        out = _abi.POINTER(_abi.pyf_core_thread)()
        n = _abi.ctypes.c_uint32()
        self._lib.pyf_core_threads(self._handle, _abi.ctypes.byref(out), _abi.ctypes.byref(n))
        names = _REGISTERS.get(self.machine, ())
        threads = []
        for i in range(n.value):
            t = out[i]
            regs = {}
            if t.flags & _abi.PYF_CORE_THREAD_REGS:
                regs = dict(zip(names, t.regs[:t.nregs]))
                if not t.flags & _abi.PYF_CORE_THREAD_SYSCALL:
                    regs.pop("orig_rax", None)  # a minidump keeps none
            threads.append(CoreThread(t.tid, t.signo, regs,
                                      bool(t.flags & _abi.PYF_CORE_THREAD_SIGNALLED)))
        return tuple(threads)

    def files(self):
        """The files the core names, as :class:`CoreFileEntry` (what became
        of each so far: call after the reads)."""
        out = _abi.POINTER(_abi.pyf_core_file)()
        n = _abi.ctypes.c_uint32()
        self._lib.pyf_core_files(self._check(), _abi.ctypes.byref(out), _abi.ctypes.byref(n))
        return [CoreFileEntry(_text(f.path), _text(f.open_path),
                              _STATUSES.get(f.status, "unreadable"),
                              bool(f.flags & _abi.PYF_CORE_FILE_EXECUTABLE),
                              _hex(f.build_id, f.build_id_size),
                              _hex(f.file_build_id, f.file_build_id_size))
                for f in (out[i] for i in range(n.value))]

    def mappings(self):
        """(start, end, file offset, flags "rwx", path or None) of each
        mapping of the process."""
        out = _abi.POINTER(_abi.pyf_mapping)()
        n = _abi.ctypes.c_uint32()
        self._lib.pyf_core_mappings(self._check(), _abi.ctypes.byref(out),
                                    _abi.ctypes.byref(n))
        rows = []
        for i in range(n.value):
            m = out[i]
            flags = "".join(c if m.flags & bit else "-" for c, bit in (
                ("r", _abi.PYF_MAP_READ), ("w", _abi.PYF_MAP_WRITE), ("x", _abi.PYF_MAP_EXEC)))
            rows.append((m.start, m.end, m.file_offset, flags, _text(m.path)))
        return rows

    def native_frames(self, tid):
        """The native stack of OS thread ``tid`` (pyf_core_native_frames:
        libdw's unwind from its registers), innermost first, as
        :class:`pyframes.mixed.NativeFrame`; raises the library's error
        (PYF_ENOTSUP: a build without libdw, named)."""
        from .mixed import NativeFrame
        out = _abi.POINTER(_abi.pyf_native_frame)()
        n = _abi.ctypes.c_uint32()
        failure = _abi.pyf_failure()
        failure.struct_size = _abi.ctypes.sizeof(failure)
        rc = self._lib.pyf_core_native_frames(self._check(), tid, _abi.ctypes.byref(out),
                                              _abi.ctypes.byref(n), _abi.ctypes.byref(failure))
        if rc != 0:
            raise error_from_code(rc, **_facts(failure))
        frames = []
        for i in range(n.value):
            f = out[i]
            frames.append(NativeFrame(i, f.pc, f.sp or None,
                                      f.function.decode("utf-8", "replace") if f.function
                                      else None, _text(f.module), False))
        return frames

    def thread(self, tid):
        """The CoreThread of OS thread ``tid``, or None."""
        for t in self.threads:
            if t.tid == tid:
                return t
        return None

    @property
    def handle(self):
        return self._check()

    def _check(self):
        if not self._handle:
            raise ValueError("operation on a closed pyframes.cores.CoreFile")
        return self._handle

    def close(self):
        handle, self._handle = getattr(self, "_handle", None), None
        if handle:
            self._lib.pyf_core_close(handle)

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


def _facts(failure):
    from ._convert import facts
    return facts(failure)


_cache = {}


def facts_of(path) -> Tuple[Dict[int, Dict[str, int]], Optional[Signal]]:
    """({thread id: {register name: value}}, its Signal or None) of the
    core file at ``path``, read by the library's core reader: what a
    debugger reading the same core does not show of it (lldb: no orig_rax)
    and its thread headers name.  ({}, None) when it is no core or cannot
    be read.  Kept per file (path, size and modification time)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError, TypeError):
        return {}, None
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _cache:
        try:
            with CoreFile(path) as core:
                found = ({t.tid: t.registers for t in core.threads if t.registers},
                         core.signal)
        except (errors.PyframesError, OSError, ValueError):
            found = {}, None
        _cache.clear()
        _cache[key] = found
    return _cache[key]


def registers(path) -> Dict[int, Dict[str, int]]:
    """{thread id: {register name: value}} of the core file at ``path``
    (facts_of); {} when it is no core or cannot be read."""
    return facts_of(path)[0]


# ---- what the command line shows of a core (cli._CoreFront) ---------------

def describe_threads(core, snapshot, threads):
    """Front.describe of a core: each thread's native wait from its
    registers (waits.register_facts: the system call it was in), and the
    thread that received the signal given it (Thread.signal)."""
    gils = waits.gil_ranges(snapshot)
    signal = core.signal
    out = []
    for t in threads:
        own = core.thread(t.native_thread_id) if t.native_thread_id else None
        facts = waits.register_facts(own.registers) if own is not None else None
        t = waits.describe(t, facts, gils=gils)
        if (signal is not None and signal.native_thread_id is not None
                and signal.native_thread_id == t.native_thread_id):
            t = dataclasses.replace(t, signal=signal)
        out.append(t)
    return out


def summary_line(core, path):
    """``core core.1234: process 1234 (python3 app.py), SIGSEGV
    (SEGV_MAPERR at 0x0) received by native thread 1234``."""
    head = "core %s: " % escape(path)
    head += "process %d" % core.pid if core.pid else "process ?"
    if core.command:
        head += " (%s)" % escape(core.command)
    signal = core.signal
    if signal is None:
        head += ", no signal recorded"
    else:
        head += ", %s received by %s" % (escape(signal.words()), (
            "native thread %d" % signal.native_thread_id) if signal.native_thread_id
            else "a thread it does not name")
    if core.cut_short:
        head += " (the core is partial)"
    return head


def problem_files(core):
    """The files the core names whose bytes could not be read: missing,
    of another build, unreadable (of those needed so far)."""
    return [f for f in core.files() if f.status in ("missing", "mismatch", "unreadable")]


def notes(core, threads, snapshot=None):
    """The lines after a core's stacks: why it is partial, the files it
    names that were needed and could not be read, and how many stacks
    stopped at memory the core lacks (errors.core_note)."""
    lines = []
    if core.problem:
        lines.append("note: the core is partial: %s" % escape(core.problem))
    lines.extend(errors.core_file_note(f) for f in problem_files(core))
    failed = sum(1 for t in threads if not t.complete and errors.is_read_failure(t.error))
    if snapshot is not None:
        failed += errors.is_read_failure(getattr(snapshot, "tasks_error", None))
        failed += sum(1 for task in getattr(snapshot, "tasks", None) or ()
                      if errors.is_read_failure(task.error))
    if failed:
        lines.append(errors.core_note(failed))
    return "".join(line + "\n" for line in lines)


def core_json(core, path):
    """The "core" key of a core's JSON document (docs/json-schema.md)."""
    signal = None
    if core.signal is not None:
        signal = core.signal.to_dict()
        signal["native_thread_id"] = core.signal.native_thread_id
    return {"file": path, "format": core.format, "compression": core.compression,
            "pid": core.pid, "executable": core.executable, "command": core.command,
            "signal": signal, "partial": core.problem is not None, "problem": core.problem,
            "files": [{"path": f.path, "open_path": f.open_path, "status": f.status,
                       "build_id": f.build_id, "file_build_id": f.file_build_id}
                      for f in problem_files(core)]}


def native_text(core, path, snapshot, threads, options, source):
    """--native on a core: each thread's native stack (libdw's unwind,
    CoreFile.native_frames) with its Python frames placed in it (the one
    placement of every front end, mixed.native_output); the summary line
    first and the notes after, or the JSON document with "core"."""
    from . import mixed, render

    def native_of(thread):
        if not thread.native_thread_id:
            return []
        try:
            return core.native_frames(thread.native_thread_id)
        except errors.PyframesError as exc:
            if exc.code in (errors.PYF_EFAULT, errors.PYF_ENOTHREAD):
                return []  # its Python frames are then shown unplaced, and why
            raise errors.CommandError(str(exc))

    out = mixed.native_output(snapshot, threads, native_of, render.thread_header,
                              options.json, source, options.limit)
    if options.json:
        out["core"] = core_json(core, path)
        return json.dumps(out) + "\n"
    return summary_line(core, path) + "\n\n" + out + notes(core, threads)
