"""Harness shared by the live-test target programs.

A target is started as ``pythonX.Y TARGET.py HANDSHAKE`` where HANDSHAKE is
a FIFO created (and already opened for reading) by the test, or a path for a
regular file.  The protocol:

* Every thread runs to its blocking point.  There it calls ``H.record()`` and
  the blocking C call on the SAME source line, e.g.::

      H.record(); os.read(H.fd(), 1)

  ``record()`` stores the thread's own view of its stack (walking
  ``sys._getframe(1)`` and ``f_back``), so the innermost frame's line at
  recording equals the line on which the thread stays blocked.
* Blocking calls are C calls that never return: ``os.read`` on a pipe that
  never gets data (``H.fd()``), ``time.sleep(H.forever())``, or
  ``H.held_lock().acquire()``.
* A thread started with ``H.start_bare(c_function, ...)`` runs no Python
  code at all; its view is empty.
* The main thread waits until every worker has recorded its view AND is
  inside its blocking system call (checked through
  ``/proc/self/task/TID/syscall``), then records its own view and writes the
  handshake document.

The handshake document is one line of JSON::

    {"pid": ..., "hexversion": ..., "version": ..., "free_threaded": ...,
     "threads": {"<native_thread_id>": [{"function", "filename", "line",
                                         "position"}, ...]},
     "thread_info": {"<native_thread_id>": {"ident": ..., "name": ...}}}

with frames innermost first.  On a FIFO the document is followed by a newline
and by more padding than a pipe can hold, written by a single ``os.write``:
once the reader has the newline, the main thread is necessarily inside that
``write`` system call, blocked for good on the same line where it recorded
its view.  On a regular file the document is written atomically (rename) and
the main thread then blocks in ``os.read`` on the same line; when the
environment names a PYFRAMES_READY_FD, one byte written there after the rename
tells the test the document is in place (no polling for the file).

With PYFRAMES_CRASH=segv or abort (a regular file handshake), the main
thread crashes on that line instead of blocking (a core file's tests):
the document is its view at the crash.
"""

import json
import os
import platform
import stat
import sys
import sysconfig
import threading
import time

# System call numbers used to check that a thread is inside its blocking call
# (time.sleep: nanosleep or clock_nanosleep, 3.11+; select or pselect6 before).
_SYSCALLS = {
    "x86_64": {"read": {0}, "sleep": {35, 230, 23, 270}, "lock": {202}, "write": {1},
               "poll": {7, 23, 232, 270, 271, 281, 441}},
    "aarch64": {"read": {63}, "sleep": {101, 115, 72}, "lock": {98}, "write": {64},
                "poll": {22, 72, 73, 441}},
}

_PADDING = 4 * 1024 * 1024  # > the largest pipe buffer (/proc/sys/fs/pipe-max-size)
_READY_TIMEOUT = 120.0

_current = None


def current():
    """The Harness of this process (for modules imported by a target)."""
    return _current


def _frames_from(frame):
    frames = []
    positions = {}
    while frame is not None:
        code = frame.f_code
        if code not in positions:
            # 3.8-3.10 have no co_positions (lines only: position None)
            positions[code] = list(code.co_positions()) if hasattr(code, "co_positions") else []
        table = positions[code]
        index = frame.f_lasti // 2
        position = list(table[index]) if 0 <= index < len(table) else None
        frames.append({
            # 3.8-3.10 have no co_qualname: a frame is named by its co_name
            "function": getattr(code, "co_qualname", code.co_name),
            "filename": code.co_filename,
            "line": frame.f_lineno,
            # co_positions() of the instruction in progress: exact for every
            # frame but the innermost, which records during H.record() and
            # then blocks in the next call on the same line.
            "position": position,
        })
        frame = frame.f_back
    return frames


def _crash_call(kind):
    """A callable that crashes the process without a Python frame of its
    own (a C call): "segv" writes to address 0 (SIGSEGV, SEGV_MAPERR at
    0x0), "abort" calls abort() (SIGABRT, SI_TKILL)."""
    if kind == "segv":
        import ctypes
        import functools
        return functools.partial(ctypes.memmove, 0, b"x", 1)
    if kind == "abort":
        return os.abort
    raise ValueError("PYFRAMES_CRASH=%r: not segv or abort" % kind)


class Harness:
    def __init__(self, path):
        global _current
        self.path = path
        self.workdir = os.path.dirname(os.path.abspath(path))
        self.cond = threading.Condition()
        self.views = {}       # native tid -> frames
        self.info = {}        # native tid -> {"ident", "name"}
        self.blockers = {}    # native tid -> (kind, fd or None)
        self.threads = []
        self.bare = []        # native tids of threads without Python frames
        self._keep = []       # objects that must stay alive (pipe ends, locks)
        self.fifo = stat.S_ISFIFO(os.stat(path).st_mode) if os.path.exists(path) else False
        # Open the FIFO now: the test holds the read end open, so this does not block.
        self.out = os.open(path, os.O_WRONLY) if self.fifo else None
        _current = self

    @classmethod
    def from_argv(cls):
        if len(sys.argv) < 2:
            sys.exit("usage: %s HANDSHAKE" % sys.argv[0])
        return cls(sys.argv[1])

    # -- recording ---------------------------------------------------------
    def record(self):
        """Record the calling frame's stack as this thread's own view."""
        frames = _frames_from(sys._getframe(1))
        tid = threading.get_native_id()
        with self.cond:
            if tid in self.views:
                raise RuntimeError("thread %d recorded twice" % tid)
            self.views[tid] = frames
            self.info[tid] = {"ident": threading.get_ident(),
                              "name": threading.current_thread().name}
            self.cond.notify_all()

    # -- blocking helpers (each registers how the thread will block) -------
    def _register(self, kind, fd=None):
        with self.cond:
            self.blockers[threading.get_native_id()] = (kind, fd)
            self.cond.notify_all()

    def fd(self):
        """Read end of a pipe that never gets data; os.read on it blocks."""
        r, w = os.pipe()
        self._keep.append(w)
        self._register("read", r)
        return r

    def forever(self):
        """A time.sleep() argument that outlives any test."""
        self._register("sleep")
        return 7 * 86400.0

    def held_lock(self):
        """A lock that is already held: acquire() blocks."""
        lock = threading.Lock()
        lock.acquire()
        self._keep.append(lock)
        self._register("lock")
        return lock

    # -- threads -----------------------------------------------------------
    def start(self, target, *args, name=None):
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        t.start()
        self.threads.append(t)
        return t

    def start_bare(self, func, *args, kind, name="bare"):
        """Start a thread that has no Python frame at all: _thread calls func
        (a C function that blocks, e.g. time.sleep) directly.  Its own view
        is empty.  Call it before any other thread is started."""
        import _thread
        before = set(os.listdir("/proc/self/task"))
        ident = _thread.start_new_thread(func, args)
        new = set(os.listdir("/proc/self/task")) - before
        if len(new) != 1:
            raise RuntimeError("cannot tell the new thread apart: %s" % sorted(new))
        tid = int(new.pop())
        with self.cond:
            self.views[tid] = []
            self.info[tid] = {"ident": ident, "name": name}
            self.blockers[tid] = (kind, None)
            self.bare.append(tid)
        return tid

    def _blocked(self, tid, kind, fd):
        try:
            with open("/proc/self/task/%d/syscall" % tid) as f:
                fields = f.read().split()
        except FileNotFoundError:
            fields = None
        if fields is None:
            # No syscall file: fall back to the scheduler state.
            try:
                with open("/proc/self/task/%d/stat" % tid) as f:
                    data = f.read()
            except FileNotFoundError:
                return False
            return data[data.rindex(")") + 2] in "SD"
        if not fields or fields[0] == "running" or fields[0] == "-1":
            return False
        nrs = _SYSCALLS.get(platform.machine(), {}).get(kind)
        if nrs is not None and int(fields[0]) not in nrs:
            return False
        if kind == "read" and fd is not None and int(fields[1], 16) != fd:
            return False
        return True

    def _wait_ready(self):
        deadline = time.monotonic() + _READY_TIMEOUT
        with self.cond:
            while True:
                dead = [t.name for t in self.threads if not t.is_alive()]
                if dead:
                    raise RuntimeError("threads died before blocking: %s" % dead)
                tids = [t.native_id for t in self.threads] + self.bare
                missing = [tid for tid in tids
                           if tid not in self.views or tid not in self.blockers]
                if not missing:
                    unblocked = [tid for tid in tids
                                 if not self._blocked(tid, *self.blockers[tid])]
                    if not unblocked:
                        return
                    missing = unblocked
                if time.monotonic() > deadline:
                    raise RuntimeError("threads not blocked after %.0fs: %s"
                                       % (_READY_TIMEOUT, missing))
                # Waiting on the condition releases the GIL so the workers run.
                self.cond.wait(0.002)

    def _document(self):
        return json.dumps({
            "pid": os.getpid(),
            "hexversion": sys.hexversion,
            "version": sys.version,
            "executable": sys.executable,
            "free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
            "threads": {str(tid): frames for tid, frames in self.views.items()},
            "thread_info": {str(tid): info for tid, info in self.info.items()},
        })

    def _payload(self):
        return (self._document() + "\n").encode("ascii") + b" " * _PADDING

    def _write_file(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="ascii") as f:
            f.write(self._document() + "\n")
        os.replace(tmp, self.path)
        ready = int(os.environ.get("PYFRAMES_READY_FD", "-1"))
        if ready >= 0:
            os.write(ready, b"\n")
            os.close(ready)

    def publish_truth(self, name, truth):
        """Called from the main thread once every worker has been started:
        once each has recorded its view, write ``truth()`` (the program's
        own record, a JSON document) to NAME in the work directory, then
        publish_and_block()."""
        with self.cond:
            while len(self.views) < len(self.threads):
                self.cond.wait(0.01)
        path = os.path.join(self.workdir, name)
        with open(path + ".tmp", "w") as f:
            json.dump(truth(), f)
        os.replace(path + ".tmp", path)
        self.publish_and_block()

    def publish_and_block(self):
        """Called from the main thread once every worker has been started.
        With PYFRAMES_CRASH in the environment (a file handshake) the main
        thread crashes instead of blocking, in _crash (_crash_call)."""
        self._wait_ready()
        if os.environ.get("PYFRAMES_CRASH") and not self.fifo:
            self._crash()  # in a frame of its own: this one's only local is self
        if self.fifo:
            self.record(); os.write(self.out, self._payload()); sys.exit("handshake write returned")
        else:
            self.record(); self._write_file(); os.read(self.fd(), 1)

    def _crash(self):
        """PYFRAMES_CRASH: the record, then the crash on the same line."""
        crash_now = _crash_call(os.environ["PYFRAMES_CRASH"])
        self.record(); self._write_file(); crash_now()
        sys.exit("the crash returned")
