"""Where a thread waits in native code, worded for people, and the names
the OS or the debugger gives a thread: one classification for every front
end.

The front ends only gather the inputs:

* the command line (a live local process): :func:`proc_facts`, what
  ``/proc/PID/task/TID/`` says of the thread (its ``comm``, its scheduler
  state, the system call it is blocked in and its arguments; ``wchan`` when
  the system call cannot be read);
* gdb and lldb: the names of the thread's innermost native frames, from
  their own unwind (at most :data:`WINDOW` frames), the debugger's name
  of the thread, and for a live local process the same ``/proc`` facts.

:func:`describe` fills a :class:`~pyframes.model.Thread`'s ``name`` and
``name_source`` (only when the target named none: the "python" name read
from the target wins), ``native``, ``on_cpu`` and, for a thread the unwind
shows inside ``take_gil`` while the target left its GIL state unknown or
"no" (3.13 and 3.14 record no waiter; 3.15 flags a waiter only once inside
``take_gil``), ``gil = "waits"``.

Nothing is guessed: a futex wait that may be a lock or the GIL, with nothing
to tell them apart, says so ("waiting on a lock or for the GIL"); a thread
the debugger stopped is neither on a CPU nor off it (``on_cpu`` None).
"""

import collections
import os
import platform
import re

from . import model

__all__ = ["WINDOW", "ProcFacts", "proc_read", "proc_facts", "SYSCALL_REGISTERS", "register_facts",
           "classify_proc", "classify_functions", "needs_unwind", "gil_ranges", "describe",
           "GIL_WAIT", "GIL_SWITCH", "GIL_UNLESS_HELD", "LOCK_WAIT", "LOCK_OR_GIL", "ON_CPU",
           "SLEEPING", "POLLING"]

#: How many innermost native frames the debuggers unwind per thread.
WINDOW = 12

GIL_WAIT = "waiting for the GIL"
#: In take_gil or drop_gil while the interpreter records the thread as the
#: GIL's holder: take_gil's last steps after it took the GIL, or drop_gil's
#: first before it let go.
GIL_SWITCH = "in take_gil/drop_gil, holding the GIL"
#: classify_functions' second answer for a thread on CPU in unnamed code
#: called from one of take_gil's callers (take_gil or drop_gil without
#: DWARF, but GC or a pending call under _Py_HandlePending look the same):
#: a GIL wait only when the target says the thread does not hold the GIL
GIL_UNLESS_HELD = "unless held"
LOCK_WAIT = "waiting on a lock"
LOCK_OR_GIL = "waiting on a lock or for the GIL"
ON_CPU = "on CPU"
SLEEPING = "sleeping"
POLLING = "in poll/epoll/select"

# ---- /proc --------------------------------------------------------------

#: System call numbers by machine: the ones worded, and a few common others
#: named ("in syscall wait4").
_SYSCALL_NAMES = {
    "x86_64": {0: "read", 1: "write", 7: "poll", 17: "pread64", 19: "readv",
               20: "writev", 23: "select", 34: "pause", 35: "nanosleep",
               42: "connect", 43: "accept", 45: "recvfrom", 47: "recvmsg",
               61: "wait4", 128: "rt_sigtimedwait", 202: "futex", 230: "clock_nanosleep",
               232: "epoll_wait", 247: "waitid", 270: "pselect6", 271: "ppoll",
               281: "epoll_pwait", 288: "accept4", 441: "epoll_pwait2", 449: "futex_waitv"},
    "aarch64": {22: "epoll_pwait", 63: "read", 64: "write", 65: "readv", 66: "writev",
                67: "pread64", 72: "pselect6", 73: "ppoll", 98: "futex",
                101: "nanosleep", 115: "clock_nanosleep", 137: "rt_sigtimedwait",
                202: "accept", 203: "connect", 207: "recvfrom", 212: "recvmsg",
                242: "accept4", 260: "wait4", 95: "waitid", 441: "epoll_pwait2",
                449: "futex_waitv"},
}
_READS = ("read", "readv", "pread64", "recvfrom", "recvmsg")
_WRITES = ("write", "writev")
_SLEEPS = ("nanosleep", "clock_nanosleep", "pause")
_POLLS = ("poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2")
_FUTEX = ("futex", "futex_waitv")

#: What /proc says of one thread.  state: the scheduler's letter (R, S, D,
#: t, ...) or None; syscall: the system call's name (a number as text when
#: unnamed), "running" (in user space, on a CPU), "" (stopped outside any
#: system call) or None (unreadable); args: its six arguments; wchan: the
#: kernel function it sleeps in, or None; sp: its user stack pointer in the
#: system call, or None.
ProcFacts = collections.namedtuple("ProcFacts", "comm state syscall args wchan sp",
                                   defaults=(None,))

#: How far above the stack pointer a futex word counts as the thread's own
#: stack: CPython's parking lot (every PyMutex, threading.Lock and RLock,
#: queue, Event, Thread.join on 3.13+) waits on a semaphore in the waiting
#: thread's stack frame, a few frames up; the GIL's condition variables and
#: mutexes live in the interpreter state, on no stack.
STACK_REACH = 64 << 10
#: How far past an interpreter state's address its GIL may lie (the
#: condition variables and mutexes of ``interp->_gil``; the main
#: interpreter's are inside _PyRuntime).  A futex word farther from every
#: interpreter state is no GIL's.
INTERP_REACH = 1 << 20


def gil_ranges(snapshot):
    """The address ranges where the snapshot's interpreters may keep their
    GIL (see INTERP_REACH), for classify_proc; None when unknown."""
    interps = getattr(snapshot, "interpreters", None)
    if not interps:
        return None
    ranges = [(i.addr, i.addr + INTERP_REACH) for i in interps if i.addr]
    return ranges or None


def proc_read(path):
    """The first 4 KiB of a file of /proc (one read: what the kernel made
    of it at that moment), or None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def proc_facts(pid, tid, machine=None):
    """The /proc facts of thread ``tid`` of process ``pid`` (see
    :class:`ProcFacts`), or None when the thread is gone or /proc is not
    readable.  Three small reads at most (its ``stat``, which names it as
    its ``comm`` does, and ``syscall``; ``wchan`` when that says nothing),
    never raises."""
    base = "/proc/%d/task/%d/" % (pid, tid)
    stat = proc_read(base + "stat")
    if stat is None:
        return None
    # "tid (comm) state ...": the name may hold spaces and parentheses
    comm = state = None
    open_, close = stat.find(b"("), stat.rfind(b")")
    if 0 <= open_ < close:
        comm = stat[open_ + 1:close].decode("utf-8", "replace")
    if close >= 0 and len(stat) > close + 2:
        state = stat[close + 2:close + 3].decode("ascii", "replace")
    syscall, args, sp = _syscall(proc_read(base + "syscall"), machine)
    wchan = None
    if syscall is None:
        raw = proc_read(base + "wchan")
        if raw:
            wchan = raw.decode("ascii", "replace").strip() or None
            if wchan == "0":
                wchan = None
    return ProcFacts(comm, state, syscall, args, wchan, sp)


def process_runs(pid):
    """Whether process ``pid`` runs: a thread of it in another state than
    stopped (``T``, SIGSTOP), traced (``t``, a debugger's stop) or dead
    (``Z``, ``X``), from /proc/PID/task/*/stat; None when /proc says
    nothing."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    states = []
    for tid in tasks[:100000]:
        stat = proc_read("/proc/%d/task/%s/stat" % (pid, tid))
        close = stat.rfind(b")") if stat else -1
        if close >= 0 and len(stat) > close + 2:
            states.append(stat[close + 2:close + 3])
    if not states:
        return None
    return any(state not in (b"T", b"t", b"Z", b"X") for state in states)


def _syscall(raw, machine):
    """(name, args, sp) of a /proc/.../syscall line: "nr a1 .. a6 sp pc",
    "-1 sp pc" or "running"."""
    if raw is None:
        return None, (), None
    fields = raw.split()
    if not fields:
        return None, (), None
    if fields[0] == b"running":
        return "running", (), None
    try:
        number = int(fields[0])
        args = tuple(int(f, 16) for f in fields[1:7])
        sp = int(fields[7], 16) if len(fields) > 7 else None
    except ValueError:
        return None, (), None
    if number < 0:
        return "", (), None
    names = _SYSCALL_NAMES.get(machine or platform.machine(), {})
    return names.get(number, str(number)), args, sp


#: The registers that tell, on x86-64, what /proc's syscall file tells: the
#: kernel keeps the number of the system call a thread is in in orig_rax
#: (-1 outside one) and its arguments in the argument registers; cores and
#: remote targets have them where /proc is not readable.
SYSCALL_REGISTERS = ("orig_rax", "rdi", "rsi", "rdx", "r10", "r8", "r9", "rsp")


def register_facts(registers):
    """The ProcFacts of a thread stopped in a system call, from its
    registers (SYSCALL_REGISTERS: name -> unsigned value, as a debugger
    reads them from a core or a remote target): syscall, args and sp, the
    rest None.  None outside a system call or without orig_rax (another
    machine)."""
    number = registers.get("orig_rax")
    if number is None or number >= 1 << 63:  # -1: in user space
        return None
    if any(registers.get(name) is None for name in SYSCALL_REGISTERS):
        return None
    args = tuple(registers[name] for name in SYSCALL_REGISTERS[1:7])
    syscall = _SYSCALL_NAMES["x86_64"].get(number, str(number))
    return ProcFacts(None, None, syscall, args, None, registers["rsp"])


_WCHAN_WORDS = (
    (re.compile(r"futex"), LOCK_OR_GIL),
    (re.compile(r"nanosleep|hrtimer"), SLEEPING),
    (re.compile(r"poll|select"), POLLING),
    (re.compile(r"pipe_read|pipe_wait|tty_read|n_tty_read|sk_wait|wait_woken|unix_stream_read"),
     "reading"),
)


def classify_proc(facts, gil=None, free_threaded=False, gils=None):
    """(native text or None, on_cpu or None) of a thread's /proc facts.
    A futex wait is on a lock when its word lies on the thread's own stack
    (CPython's parking lot: see STACK_REACH), or outside every range of
    ``gils`` (gil_ranges: where the interpreters keep their GIL), or the
    build has no GIL; else it may be the GIL's (taking it, or handing it
    over in drop_gil: both timed and untimed waits), which it is said to be
    when the target says the thread waits for the GIL (``gil``), and
    otherwise "waiting on a lock or for the GIL"."""
    if facts is None:
        return None, None
    state = facts.state
    on_cpu = None
    if state == "R":
        on_cpu = True
    elif state in ("S", "D", "I", "W", "P", "K"):
        on_cpu = False
    name, args = facts.syscall, facts.args
    if name == "running" or (name is None and state == "R"):
        return ON_CPU, on_cpu
    if name is None:
        for pattern, text in _WCHAN_WORDS:
            if facts.wchan and pattern.search(facts.wchan):
                if text == LOCK_OR_GIL:
                    text = _futex_words(gil, free_threaded, False)
                return text, on_cpu
        return (("in the kernel: %s" % facts.wchan) if facts.wchan else None), on_cpu
    if name == "":
        return None, on_cpu
    if name in _READS:
        return ("reading fd %d" % args[0]) if args else "reading", on_cpu
    if name in _WRITES:
        return ("writing fd %d" % args[0]) if args else "writing", on_cpu
    if name in _SLEEPS:
        return SLEEPING, on_cpu
    if name in _POLLS:
        return POLLING, on_cpu
    if name in _FUTEX:
        word = args[0] if name == "futex" and args else None
        no_gil = word is not None and (
            (facts.sp is not None and 0 <= word - facts.sp < STACK_REACH) or
            (gils is not None and not any(lo <= word < hi for lo, hi in gils)))
        return _futex_words(gil, free_threaded, no_gil), on_cpu
    return "in syscall %s" % name, on_cpu


def _futex_words(gil, free_threaded, no_gil):
    if free_threaded or no_gil:
        return LOCK_WAIT
    if gil == "waits":
        return GIL_WAIT
    return LOCK_OR_GIL


# ---- the debuggers' unwind ---------------------------------------------

def _names(*words):
    return re.compile(r"^(?:%s)$" % "|".join(words))


# glibc's and the kernel interface's own frames under a wait: they say how
# it waits, not what for
# glibc's and the dynamic loader's plumbing (a thread-local variable's
# lookup, __tls_get_addr, where a shared libpython reads its thread state):
# the first caller outward says what the thread does
_PLUMBING = re.compile(r"syscall_cancel|^syscall$|^__internal_syscall|^__syscall|"
                       r"^_?_?restore_rt$|^__kernel_vsyscall$|^_{2,3}tls_get_addr(?:_slow)?$")
_GIL = _names("take_gil", "drop_gil", "drop_gil_impl")
# the callers of take_gil, where it is inlined or unnamed without DWARF
# (the eval loop asked to hand the GIL over: _Py_HandlePending, with
# _PyThreadState_Attach and take_gil unnamed between it and the wait)
_GIL_CALLERS = _names("PyEval_RestoreThread", "PyEval_AcquireThread", "_PyEval_AcquireLock",
                      "PyEval_AcquireLock", "_PyThreadState_Attach", "PyGILState_Ensure",
                      "_PyEval_ReInitThreads", "_Py_HandlePending")
_LOCK = re.compile(r"futex|^(?:__new_|__|_)?sem_(?:clock|timed)?wait|sem_wait_slow|"
                   r"pthread_cond_|cond_(?:timed|clock)?wait|lll_lock_wait|"
                   r"pthread_mutex_(?:clock|timed)?lock|^_PyMutex_Lock|^PyMutex_Lock|"
                   r"^_PySemaphore_|^_PyParkingLot_Park|PyThread_acquire_lock|"
                   r"^lock_PyThread_acquire_lock|^rlock_acquire|^_PyEvent_Wait|^PyEvent_Wait|"
                   r"^_PyRecursiveMutex_Lock|^lock_acquire|^_thread_lock_acquire|"
                   r"pthread_(?:clock|timed)?join|^__pthread_clockjoin|^do_futex_wait")
_SLEEP = re.compile(r"nanosleep|^pysleep$|^time_sleep$|^(?:__)?u?sleep$")
_READ = re.compile(r"^(?:__libc_|__GI___libc_|__GI_|__)?(?:read|readv|pread64|pread|"
                   r"recv|recvfrom|recvmsg)$|^__read_nocancel$|^_Py_read$|^os_read(?:_impl)?$|"
                   r"^sock_recv|^_io_FileIO_read|^_bufferedreader_raw_read")
_WRITE = re.compile(r"^(?:__libc_|__GI___libc_|__GI_|__)?(?:write|writev|pwrite64|pwrite|"
                    r"send|sendto|sendmsg)$|^__write_nocancel$|^_Py_write(?:_noraise)?$|"
                    r"^os_write(?:_impl)?$")
_POLL = re.compile(r"^(?:__libc_|__GI___|__GI_|__|___)?(?:poll|ppoll|epoll_wait|epoll_pwait2?|"
                   r"select|pselect|pselect6)(?:64)?$|^select_(?:select|poll|epoll)|"
                   r"^(?:select_)?(?:poll|devpoll)_poll|^pyepoll_|^select_epoll_poll")
_PYTHON = re.compile(r"^_?Py|^_PyEval_EvalFrame")
# CPython's own files: the executable and libpython (pythonX.Y, python3.14t,
# libpython3.13.so.1.0, python3.13d)
_PYTHON_FILE = re.compile(r"^(?:lib)?python3\.\d+t?d?(?:\.so(?:\.[\d.]+)?)?$")


# lldb's name for a frame no symbol names
_UNNAMED = "___lldb_unnamed_symbol"

# the suffixes of a compiler's clones of a function (drop_gil.constprop.0)
_CLONE = re.compile(r"(?:\.(?:constprop|isra|part|cold|lto_priv|localalias)(?:\.\d+)?)+$")


def _clean(name):
    if not name:
        return None
    name = name.split("@", 1)[0]
    # lldb names inlined functions with their arguments' types
    paren = name.find("(")
    if paren > 0:
        name = name[:paren]
    return _CLONE.sub("", name.strip()) or None


def _in_python(module):
    return bool(module) and bool(_PYTHON_FILE.match(os.path.basename(module)))


def classify_functions(frames, io_fd=None):
    """(native text or None, waits for the GIL) of a thread whose
    innermost native frames (innermost first, at most :data:`WINDOW` used)
    are ``frames``: each a function name (None for a frame without one) or
    a (name, module path or None) pair.  ``io_fd``: the fd of its read or
    write system call when /proc tells it.

    None: the thread runs Python (its innermost frame is CPython's own
    code: a Py-named function, or any function of the python executable or
    libpython that is no wait) or the names say nothing (no frames).  The
    second answer may be :data:`GIL_UNLESS_HELD` instead of True: a GIL
    wait only if the thread does not hold the GIL."""
    frames = [f if isinstance(f, tuple) else (f, None) for f in list(frames or ())[:WINDOW]]
    # a frame without a name (None) is skipped like glibc's plumbing: the
    # first named frame outward tells the wait.  Without debug info gdb and
    # lldb name none of glibc's internals under a system call or a futex
    # wait, nor CPython's static functions (take_gil), while the exported
    # functions around them (read, clock_nanosleep, sem_clockwait,
    # pthread_cond_timedwait, PyEval_RestoreThread) keep their names.
    window = [None if not name or name.startswith(_UNNAMED) else _clean(name)
              for name, _module in frames]
    if not window:
        return None, False
    if any(n and _GIL.match(n) for n in window):
        return GIL_WAIT, True
    i = 0
    while i < len(window) and (window[i] is None or _PLUMBING.search(window[i])):
        i += 1
    if i == len(window):
        return None, False
    first = window[i]
    if i > 0 and window[0] is None and _GIL_CALLERS.match(first):
        # on CPU in unnamed code under a caller of take_gil (no wait
        # function named): take_gil or drop_gil, or the caller's other
        # work, which holds the GIL (describe tells them apart)
        return GIL_WAIT, GIL_UNLESS_HELD
    if _LOCK.search(first):
        # the first caller past the lock's own frames: take_gil's callers
        # (take_gil inlined and unnamed) make it the GIL
        j = i
        while j < len(window) and (window[j] is None or _LOCK.search(window[j]) or
                                   _PLUMBING.search(window[j])):
            j += 1
        if j < len(window) and _GIL_CALLERS.match(window[j]):
            return GIL_WAIT, True
        return LOCK_WAIT, False
    if _SLEEP.search(first):
        return SLEEPING, False
    if _READ.search(first):
        return ("reading fd %d" % io_fd) if io_fd is not None else "reading", False
    if _WRITE.search(first):
        return ("writing fd %d" % io_fd) if io_fd is not None else "writing", False
    if _POLL.search(first):
        return POLLING, False
    if _PYTHON.search(first) or _in_python(frames[i][1]):
        return None, False
    return "in C: %s" % first, False


# ---- one thread ---------------------------------------------------------

def needs_unwind(facts, thread, gils=None):
    """Whether a debugger should unwind the thread for its wait: /proc is
    not readable (a core, a remote target), or it shows the thread outside
    any system call (running Python or C code), or in a futex wait that
    may be the GIL's, or in a system call it does not word."""
    if facts is None or facts.syscall in (None, "", "running"):
        return True
    words, _ = classify_proc(facts, thread.gil, bool(getattr(thread, "free_threaded", False)),
                             gils)
    return words is None or words == LOCK_OR_GIL or words.startswith("in syscall")

def describe(thread, facts=None, functions=None, debugger_name=None, gils=None):
    """``thread`` with what the OS and the debugger tell of it: its name
    when the target gave none (``comm`` of ``facts``, source "os"; else
    ``debugger_name``, source "debugger"), ``native`` and ``on_cpu``, and
    the GIL wait the unwind shows (``functions``: the innermost native
    frames' names, None when the debugger gave none).  ``gils``:
    gil_ranges of the snapshot."""
    changes = {}
    if thread.name is None:
        if facts is not None and facts.comm:
            changes.update(name=facts.comm, name_source="os")
        elif debugger_name:
            changes.update(name=debugger_name, name_source="debugger")
    gil = thread.gil
    free = bool(getattr(thread, "free_threaded", False))
    native, on_cpu = classify_proc(facts, gil, free, gils)
    if functions:
        io_fd = None
        if facts is not None and facts.syscall in _READS + _WRITES and facts.args:
            io_fd = facts.args[0]
        words, gil_wait = classify_functions(functions, io_fd)
        # (3.15's gil_requested is set inside take_gil, not on entry: a
        # thread stopped in between is in the GIL's functions, unflagged)
        if gil_wait == GIL_UNLESS_HELD and (free or thread.gil not in ("no", "waits")):
            words = None  # its unnamed code may be anything that holds the GIL
        elif gil_wait and not free and thread.gil in (None, "no"):
            changes["gil"] = "waits"
        elif gil_wait and thread.gil == "holds":
            words = GIL_SWITCH  # it has the GIL: not waiting for it
        if words is None and native == ON_CPU:
            words = ON_CPU
        elif words is None and native is not None and facts.syscall:
            # in a system call: the names (none, without DWARF) say less
            words = native
        native = words
    if native is not None:
        changes["native"] = native
    if on_cpu is not None:
        changes["on_cpu"] = on_cpu
    if not changes:
        return thread
    return model._replace(thread, **changes)
