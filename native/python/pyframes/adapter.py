"""What a debugger plugin provides: the adapter protocol.

A plugin (gdb/pyframes_gdb.py, lldb/pyframes_lldb.py) implements
:class:`DebuggerAdapter` over its debugger's API and hands command lines to
:class:`pyframes.session.Session`.  Only :meth:`DebuggerAdapter.read` is
mandatory; every other method has a safe default.
"""

import dataclasses
import os
import select
import threading

from . import cores, tids as _tids, waits

__all__ = ["DebuggerAdapter", "DebuggerRead", "DebuggerWrite", "local_process_matches",
           "ProcessWatch", "process_start_time", "ask", "describe_threads"]


def ask(fn, *args):
    """Call an adapter method; a debugger that fails to answer means "not
    known" (None), never a failed command."""
    try:
        return fn(*args)
    except Exception:
        return None


class DebuggerAdapter(object):
    """What a debugger must provide.  Only :meth:`read` is mandatory.

    ``read(addr, size)`` returns exactly ``size`` bytes; it raises
    ``PermissionError`` when access is refused and any other exception when
    the range is unreadable.
    """

    #: Name shown in messages ("gdb", "lldb").
    debugger_name = "debugger"

    def pid(self):
        """PID of the inferior (the dumped PID for a core), or None."""
        return None

    def has_process(self):
        """True when the debugger has memory to read (live or core)."""
        return self.pid() is not None

    def is_live(self):
        """True when the debugger reports a running/stopped live process
        (not a core file), local or remote."""
        return False

    def executable(self):
        """Path of the main executable as the debugger knows it, or None."""
        return None

    def is_live_local(self):
        """True when the inferior is a live process of this machine that the
        built-in PID reader can read."""
        if not self.is_live():
            return False
        return local_process_matches(self.pid(), self.executable())

    def read(self, addr, size):
        raise NotImplementedError

    #: write(addr, data): write the inferior's memory (the 3.15 frame cache's
    #: one word per thread state); None when the debugger cannot.
    write = None

    def lookup_symbol(self, name):
        """Load address of an (exported) symbol, or None.  No DWARF needed."""
        return None

    #: False when lookup_symbol may be slow (then ELF sections are tried first).
    cheap_symbol_lookup = True

    def writable_ranges(self):
        """[(start, end)] of writable memory where _PyRuntime may live
        (file-backed mappings when the debugger can tell), else []."""
        return []

    def objfiles(self):
        """[(path, address where the first PT_LOAD is mapped)]."""
        return []

    def selected_native_tid(self):
        """OS thread id of the thread selected in the debugger, or None."""
        return None

    def os_threads(self):
        """The OS thread ids of every thread the debugger has (gdb's LWPs,
        lldb's tids), or []."""
        return []

    def thread_pointers(self):
        """{OS thread id: its pthread handle} of each thread whose TLS base
        the debugger reads (pyframes.tids.TLS_REGISTER); {} where there is
        none.  pyframes.tids matches Python threads to OS threads with it
        where /proc is not ours (a core, a remote target) and their ids may
        differ (a container's)."""
        regs = self.registers(self.os_threads(), (_tids.TLS_REGISTER,))
        return {tid: r[_tids.TLS_REGISTER] for tid, r in regs.items()
                if r.get(_tids.TLS_REGISTER)}

    def debugger_thread_label(self, native_tid):
        """How the debugger names the thread with this OS thread id, e.g.
        'thread 2' (gdb) or 'thread #2' (lldb); None when it has no such
        thread."""
        return None

    def identity(self):
        """Hashable identity of the inferior (process or core) for caching."""
        return (self.debugger_name, self.pid(), self.executable())

    def resume_for(self, seconds):
        """Let the stopped inferior run for about ``seconds`` and stop it
        again (every thread); False when it cannot run (a core file) or did
        not stop (it exited)."""
        return self.resume_while(lambda halt: halt.wait(seconds))[0]

    def resume_refused(self):
        """Why the inferior must not be resumed by the plugin (it could not
        be stopped again), or None."""
        return None

    def resume_while(self, work):
        """Let the stopped inferior run while ``work(halt)`` runs in a
        thread of its own, and stop it again (every thread, the selected
        one selected again, nothing printed) when work returns.  ``halt``
        (a threading.Event) is set when the inferior stopped by itself
        (a breakpoint, Ctrl-C, its exit): work should then return soon.
        Returns ``(ran, result)``: ran False when it could not run (a core
        file) or did not stop (it exited); result what work returned (an
        exception it raised is raised here).  Work must not call the
        debugger: it runs while the debugger waits for the stop."""
        return False, None

    def generation(self):
        """A value that changes whenever the inferior may have changed
        (e.g. lldb's stop id), or None when the plugin flushes on events."""
        return None

    def native_frames(self, native_tid):
        """The debugger's own backtrace of that thread, innermost first, as
        pyframes.mixed.NativeFrame; None when it cannot give one."""
        return None

    def thread_name(self, native_tid):
        """The debugger's name of that thread (gdb's ``info threads``
        name, lldb's thread name), or None."""
        return None

    def registers(self, native_tids, names):
        """{native tid: {register name: unsigned value}} of the innermost
        frame of each thread, for the ``names`` it has (a core's or a remote
        target's threads; waits.register_facts)."""
        return {}

    def core_file(self):
        """The path of the core file the debugger reads (the library reads
        its signal, and the registers the debugger does not show:
        pyframes.cores), or None."""
        return None

    def innermost_functions(self, native_tids, count):
        """{native tid: its ``count`` innermost native frames, innermost
        first, as (function name or None, module path or None)} for the
        threads the debugger can unwind.  The default cuts native_frames;
        a plugin unwinds only ``count`` frames."""
        out = {}
        for tid in native_tids:
            frames = ask(self.native_frames, tid)
            if frames:
                out[tid] = [(f.function, f.module) for f in frames[:count]]
        return out


def describe_threads(adapter, snapshot, threads, live_local=None):
    """The debuggers' Front.describe: each thread's name when the target
    gave none (/proc's comm for a live local process, else the debugger's
    name), its native wait from /proc on a live local process (from the
    registers of a thread in a system call where /proc is not ours: cores,
    remote targets), and from the debugger's unwind of its innermost frames
    (waits.WINDOW of them) where these say too little (a thread outside any
    system call, a futex wait that may be the GIL's) or are not known.
    ``live_local``: whether the adapter's process is a live local one, when
    the command knows it already (None: asked)."""
    def method(name):  # an adapter written without this base class lacks some
        return getattr(adapter, name, None) or (lambda *args: None)

    if live_local is None:
        live_local = ask(method("is_live_local"))
    pid = adapter.pid() if live_local else None
    os_tid = _tids.os_tid
    tids = [os_tid(t) for t in threads if os_tid(t)]
    signal = None
    if pid:
        facts_of = {tid: waits.proc_facts(pid, tid) for tid in tids}
    else:  # a core or a remote target: the system call from the registers
        regs = ask(method("registers"), tids, waits.SYSCALL_REGISTERS) or {}
        core = ask(method("core_file"))
        # a core's own words (the library's core reader): its signal, and
        # the registers a debugger does not show of it (lldb: orig_rax)
        notes, signal = cores.facts_of(core) if core else ({}, None)
        if any("orig_rax" not in regs.get(tid, ()) for tid in tids):
            regs = {tid: regs[tid] if "orig_rax" in regs.get(tid, ()) else notes.get(tid, {})
                    for tid in tids}
        facts_of = {tid: waits.register_facts(r) for tid, r in regs.items()}
    # the unwind costs about a millisecond a thread in gdb: only where /proc
    # or the registers leave the wait unknown or ambiguous
    gils = waits.gil_ranges(snapshot)
    unwind = [os_tid(t) for t in threads if os_tid(t) and
              waits.needs_unwind(facts_of.get(os_tid(t)), t, gils)]
    functions = ask(method("innermost_functions"), unwind, waits.WINDOW) or {} \
        if unwind else {}
    out = []
    for t in threads:
        tid = os_tid(t)
        if not tid:
            out.append(t)
            continue
        facts = facts_of.get(tid)
        name = None
        if t.name is None and not (facts and facts.comm):
            name = ask(method("thread_name"), tid)
        t = waits.describe(t, facts, functions.get(tid), name, gils)
        if signal is not None and signal.native_thread_id == tid:
            t = dataclasses.replace(t, signal=signal)
        out.append(t)
    return out


def resume_worker(work, halt, request_stop, stopped, period):
    """The thread of a resume_while: it runs ``work(halt)`` while the
    debugger's continue waits, then calls ``request_stop()`` every
    ``period`` seconds until ``stopped()`` (a stop asked for before the
    process runs is lost).  Returns (thread, box): box gets "result" or
    "error" (see :func:`resume_outcome`)."""
    box = {}

    def worker():
        try:
            box["result"] = work(halt)
        except BaseException as e:
            box["error"] = e
        finally:
            while not stopped():
                request_stop()
                halt.wait(period)
    return threading.Thread(target=worker, name="pyframes-resume", daemon=True), box


def resume_outcome(box):
    """What work returned; what it raised is raised here."""
    if "error" in box:
        raise box["error"]
    return box.get("result")


class ProcessWatch(object):
    """Whether the process PID is still the one it was when the watch began
    (a pidfd, os.pidfd_open: it becomes readable once that process has
    exited, and a PID names another process only after that).  Where there
    is no pidfd (another system, Linux before 5.3), never known."""

    def __init__(self, pid):
        self._fd = self._poll = None
        try:
            self._fd = os.pidfd_open(pid)
            self._poll = select.poll()
            self._poll.register(self._fd, select.POLLIN)
        except (AttributeError, OSError, ValueError):
            self.close()

    @property
    def watching(self):
        return self._fd is not None

    def alive(self):
        """True while the process has not exited (False when not known)."""
        return self._fd is not None and not self._poll.poll(0)

    def close(self):
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def process_start_time(pid):
    """Start time of /proc/PID in clock ticks (tells a reused PID apart), or None."""
    data = waits.proc_read("/proc/%d/stat" % pid)
    if data is None:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    rest = data[data.rfind(b")") + 2:].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def local_process_matches(pid, executable):
    """True when /proc/PID exists here and runs the same executable file.
    A process of another mount namespace (a container's) may have an
    executable whose path does not resolve here (gdb names it
    ``target:PATH``): it is this machine's when this debugger traces it."""
    if not pid or pid <= 0:
        return False
    proc = "/proc/%d" % pid
    if not os.path.isdir(proc):
        return False
    if not executable:
        return True
    try:
        mine = os.stat(proc + "/exe")
    except OSError:
        return False
    if executable.startswith("target:/"):  # the path as the process sees it
        executable = proc + "/root" + executable[len("target:"):]
    try:
        theirs = os.stat(executable)
    except OSError:
        return traced_by_this_debugger(pid)
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


class DebuggerWrite(object):
    """The write callable handed to the library, retargeted like
    :class:`DebuggerRead`."""

    __slots__ = ("adapter",)

    def __init__(self, adapter):
        self.adapter = adapter

    def __call__(self, addr, data):
        return self.adapter.write(addr, data)


class DebuggerRead(object):
    """The read callable handed to the library; retargeted at each command
    so a cached Target always reads through the current debugger state."""

    __slots__ = ("adapter",)

    def __init__(self, adapter):
        self.adapter = adapter

    def __call__(self, addr, size):
        return self.adapter.read(addr, size)


def _status_field(pid, name):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def traced_by_this_debugger(pid):
    """True when /proc/PID here is traced by this process (the debugger) or
    by one of its children (lldb's own lldb-server): the debugger's
    inferior is this machine's process PID, not a remote one that happens
    to have the same number and executable."""
    tracer = _status_field(pid, "TracerPid")
    if not tracer:
        return False
    me = os.getpid()
    return tracer == me or _status_field(tracer, "PPid") == me
