"""Which OS thread runs each Python thread, whatever PID namespaces lie
between the target and pyframes: the one mapping every front end uses.

The interpreter records each thread's id as its own PID namespace sees it
(``native_thread_id``, what ``threading.get_native_id()`` returns there).
A service in a container (Docker, Kubernetes: a PID namespace of its own)
read from the node has other ids where pyframes runs: the ones ``ps``,
gdb's LWP, lldb's tid and ``/proc/PID/task/TID`` show.  Every lookup of an
OS thread (``/proc`` paths, the debugger's threads) takes the OS id
(:func:`os_tid`), and every request for one interpreter thread
(``PYF_SNAP_ONE_THREAD``) the interpreter's own id
(:meth:`ThreadIds.recorded`).  Two facts tie them, neither of which a
namespace changes:

* ``/proc/PID/task/TID/status``, line ``NSpid``: the thread's id in each
  PID namespace from the one of that ``/proc`` down to its own (a live
  process of this machine: :func:`of_process`);
* the thread's pthread handle, the thread state's ``thread_id``
  (``pthread_self()``), which on x86-64 (glibc and musl) is the thread's
  TLS base, the register ``fs_base`` a debugger reads per thread in a live
  process, a core file or a remote target (:func:`of_pointers`).

A thread's ids differ only when the target's PID namespace is not the one
pyframes sees it from; then :attr:`model.Thread.host_thread_id` holds its
OS id (0 when its OS thread was not found), else it stays None and the OS
id is ``native_thread_id`` (:func:`os_tid`).
"""

import dataclasses
import os

__all__ = ["ThreadIds", "SAME", "of_process", "of_pointers", "os_tid", "in_pid_namespace",
           "TLS_REGISTER"]

#: The register that holds a thread's pthread handle: x86-64's TLS base,
#: where glibc and musl keep their struct pthread, which pthread_self()
#: returns (the Python thread state's thread_id).  Other machines keep
#: their TLS elsewhere, at an offset from the handle: no such register.
TLS_REGISTER = "fs_base"


def os_tid(thread):
    """The id of ``thread`` (a model.Thread) where pyframes runs: what
    ``ps``, gdb's LWP, lldb's tid and ``/proc/PID/task/TID`` name; None
    when unknown."""
    host = getattr(thread, "host_thread_id", None)
    if host is None:
        return thread.native_thread_id
    return host or None


class ThreadIds(object):
    """The ids of one target's threads where pyframes runs.  This one is
    the identity (the target shares pyframes' PID namespace, or nothing
    tells otherwise)."""

    #: True when the target's ids are not the ones pyframes sees.
    foreign = False

    def recorded(self, tid):
        """The interpreter's own id (``native_thread_id``) of the OS thread
        ``tid``, or None when the target has no such thread."""
        return tid

    def is_os_thread(self, tid):
        """Whether ``tid`` names one of the target's OS threads here."""
        return True

    def host(self, native, ident):
        """The OS id of the interpreter thread (``native_thread_id``,
        ``thread_id``): None when the ids are the same, 0 when its OS
        thread is not found."""
        return None

    def fill(self, threads):
        """``threads`` (model.Thread) with ``host_thread_id`` set where the
        ids differ; the same list when they never do."""
        if not self.foreign:
            return threads
        return [t if t.native_thread_id is None else dataclasses.replace(
                    t, host_thread_id=self.host(t.native_thread_id, t.thread_id))
                for t in threads]


#: The identity: one PID namespace.
SAME = ThreadIds()


def _nspid(path):
    """The ids of the NSpid line of a /proc status file, outermost first;
    None when it cannot be read (a thread gone, a kernel before 4.1)."""
    try:
        with open(path, "rb") as f:
            data = f.read(4096)
    except OSError:
        return None
    start = data.find(b"\nNSpid:")
    if start < 0:
        return None
    end = data.find(b"\n", start + 1)
    try:
        return [int(x) for x in data[start + 7:end if end > 0 else None].split()]
    except ValueError:
        return None


def in_pid_namespace():
    """Whether pyframes itself runs in a PID namespace below the first one
    its /proc shows (a container, or a sidecar sharing one)."""
    ids = _nspid("/proc/self/status")
    return ids is not None and len(ids) > 1


class _ProcIds(ThreadIds):
    """A live process of this machine in a PID namespace of its own: the
    NSpid line of each thread's /proc status file.  Read again (once) when
    asked for an id it has not seen: a new thread."""

    foreign = True

    def __init__(self, pid):
        self.pid = pid
        self.by_native = {}   # the interpreter's id -> the OS id
        self.by_os = {}       # the OS id -> the interpreter's id
        self._missed = set()  # asked for and not found, since the last scan
        self._scan()

    def _scan(self):
        self._missed = set()
        base = "/proc/%d/task" % self.pid
        try:
            tasks = os.listdir(base)
        except OSError:
            return
        for name in tasks:
            ids = _nspid("%s/%s/status" % (base, name))
            if ids and len(ids) > 1:
                self.by_native[ids[-1]] = ids[0]
                self.by_os[ids[0]] = ids[-1]

    def _find(self, table, key):
        value = table.get(key)
        if value is None and key not in self._missed:
            self._scan()
            value = table.get(key)
            if value is None:
                self._missed.add(key)
        return value

    def recorded(self, tid):
        return self._find(self.by_os, tid)

    def is_os_thread(self, tid):
        return self.recorded(tid) is not None

    def host(self, native, ident):
        return self._find(self.by_native, native) or 0


def of_process(pid):
    """The ThreadIds of the live process ``pid`` of this machine (SAME
    when it shares the PID namespace of our /proc)."""
    ids = _nspid("/proc/%d/status" % pid) if pid else None
    if ids is None or len(ids) < 2:
        return SAME
    return _ProcIds(pid)


class _PointerIds(ThreadIds):
    """A debugger's threads and their pthread handles: the Python thread
    whose ``thread_id`` is an OS thread's handle runs on it.  The Python
    threads are read (one frame deep) the first time an id is asked for."""

    def __init__(self, pointers, threads):
        self.pointers = dict(pointers)  # the OS id -> its pthread handle
        self._threads = threads
        self._native_of = None          # pthread handle -> the interpreter's id
        self._host_of = None            # pthread handle -> the OS id

    def _resolve(self):
        if self._native_of is not None:
            return
        self._native_of, self._host_of = {}, {}
        try:
            threads = list(self._threads())
        except Exception:  # unreadable: nothing is matched, nothing differs
            threads = []
        known = {}
        for tid, handle in self.pointers.items():
            known.setdefault(handle, []).append(tid)
        for t in threads:
            hosts = known.get(t.thread_id)
            if t.thread_id and t.native_thread_id and hosts and len(hosts) == 1:
                self._native_of[t.thread_id] = t.native_thread_id
                self._host_of[t.thread_id] = hosts[0]
        self.foreign = any(self._host_of[h] != n for h, n in self._native_of.items())

    def recorded(self, tid):
        self._resolve()
        handle = self.pointers.get(tid)
        if handle is None:
            return None if self.foreign else tid
        return self._native_of.get(handle, None if self.foreign else tid)

    def is_os_thread(self, tid):
        return tid in self.pointers or not self.foreign

    def host(self, native, ident):
        self._resolve()
        if not self.foreign:
            return None
        return self._host_of.get(ident) or 0

    def fill(self, threads):
        self._resolve()
        return ThreadIds.fill(self, threads)


def of_pointers(pointers, threads):
    """The ThreadIds of a debugger's target: ``pointers`` {OS id: the
    thread's pthread handle} (its TLS base), ``threads()`` the Python
    threads (read once, when first needed).  SAME without pointers (no
    TLS base known: another machine than x86-64)."""
    if not pointers:
        return SAME
    return _PointerIds(pointers, threads)
