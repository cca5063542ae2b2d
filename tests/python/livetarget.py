"""The one live-target harness of the Python suites.

:class:`LiveTarget` starts a target program of ``tests/python/targets/``
under a given interpreter, waits for its handshake (never by sleeping: the
program tells when it is ready), keeps the target's own view of every
thread's stack, and kills the process when the test is done (context
manager, or ``stop()`` in a ``finally``).

Two handshakes, as ``targets/_common.py`` describes:

* ``"fifo"`` (the default for the library's own readers): the document
  arrives through a FIFO; once its newline is read, the main thread is
  necessarily blocked in that very ``write``.
* ``"file"`` (for debuggers, whose attach and detach interrupt a pending
  FIFO write): the document is renamed into place, the program writes one
  byte to a pipe the test holds, and blocks in ``os.read``.

The view: ``doc`` (the whole document, also ``view``), ``views`` (native
tid -> frame dicts), ``threads`` (native tid -> [(function, filename,
line)]), ``idents`` (native tid -> threading.get_ident()), ``main_tid``,
``foreign_tids`` (OS threads Python does not know), all innermost first.

A target started in namespaces of its own (``container``: a
namespaces.Container) reports its ids as its PID namespace sees them:
those are the view's; ``pid`` is its PID here and ``host_tids`` (its
native tid -> its id here, from our /proc) ties them.

A target that does not complete its handshake in time fails with its
native and Python stacks in the message (hang_report), taken before it is
killed.

:func:`frozen` stops a process (and, if asked, its descendants) for a
reading and waits until the kernel shows every thread stopped: kill()
returns before the signal has reached the threads, so a test that reads
right after SIGSTOP reads a process that may still be running.
"""

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

import hang_report

HERE = os.path.dirname(os.path.abspath(__file__))
TARGETS = os.path.join(HERE, "targets")
SCENARIO = os.path.join(TARGETS, "scenario.py")
HANDSHAKE_TIMEOUT = 90.0


class TargetError(AssertionError):
    """A target did not deliver its handshake; the message says why."""


def target_env(extra=None):
    """Environment for target and debugger processes: no PYTHON* variables
    (as CPython's own test_gdb does); PYFRAMES_* and LLDB_* kept."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.setdefault("LC_ALL", "C.UTF-8")
    if extra:
        env.update(extra)
    return env


def start_json(python, script, args=(), timeout=HANDSHAKE_TIMEOUT):
    """(process, document) of a program of targets/ whose handshake is one
    line of JSON on its stdout, written once it is ready (busy_service.py,
    pool_deadlock.py, shutdown_wait.py): the line read within ``timeout``
    seconds, else TargetError with its native and Python stacks (taken
    before it is killed).  The caller kills the process (kill_json)."""
    proc = subprocess.Popen([python, os.path.join(TARGETS, script)] + list(args),
                            stdout=subprocess.PIPE, env=target_env())
    try:
        if not select.select([proc.stdout], [], [], timeout)[0]:
            raise TargetError("%s: no handshake after %.0f s:\n%s" % (
                script, timeout, hang_report.report(proc.pid, "target")))
        line = proc.stdout.readline()
        if not line:
            raise TargetError("%s exited before its handshake (status %s)"
                              % (script, proc.wait(timeout=30)))
        return proc, json.loads(line)
    except BaseException:
        kill_json(proc)
        raise


def kill_json(proc):
    """Kill a start_json process and reap it."""
    proc.kill()
    proc.wait()


# -- frozen states -----------------------------------------------------------
# A signal is delivered when each thread next runs: kill(SIGSTOP) returns
# before the threads stop.  A frozen state is one where every thread is
# seen stopped (state T) in /proc, not one where SIGSTOP was sent.

FREEZE_TIMEOUT = 10.0


def _task_files(pid, name):
    """(tid, text) of /proc/PID/task/TID/NAME, for each thread of pid that
    still has it."""
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/%s" % (pid, tid, name)) as f:
                text = f.read()
        except OSError:
            continue
        yield int(tid), text


def children(pid):
    """The child processes of pid (of any of its threads)."""
    return [int(x) for _, text in _task_files(pid, "children") for x in text.split()]


def process_tree(pid):
    """pid and its descendants, parents first."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        if p not in seen:
            seen.append(p)
            todo += children(p)
    return seen


def thread_states(pid):
    """{tid: state letter} of the threads of pid."""
    states = {}
    for tid, text in _task_files(pid, "stat"):
        fields = text.rsplit(")", 1)[-1].split()
        if fields:
            states[tid] = fields[0]
    return states


@contextlib.contextmanager
def frozen(root, tree=False):
    """SIGSTOP to root (and, with tree, every descendant, until no new one
    appears), then wait until every thread of each is stopped; SIGCONT to
    all of them on exit.  Yields the stopped pids, root first."""
    stopped = []
    try:
        while True:
            new = [p for p in (process_tree(root) if tree else [root]) if p not in stopped]
            if not new:
                break
            for p in new:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGSTOP)
                stopped.append(p)
        deadline = time.monotonic() + FREEZE_TIMEOUT
        for p in stopped:
            while any(s not in "TZX" for s in thread_states(p).values()):
                if time.monotonic() > deadline:
                    raise AssertionError("process %d: threads not stopped after %.0f s: %s"
                                         % (p, FREEZE_TIMEOUT, thread_states(p)))
                time.sleep(0.0005)  # a condition of the kernel's, not a guessed delay
        yield stopped
    finally:
        for p in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGCONT)


def _no_core_limit():
    """In a crashing target before it runs: its core may be of any size."""
    import resource
    _soft, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


class LiveTarget(object):
    """A running target program; see the module docstring.

    script: a file of targets/ (relative) or a path; None runs the debugger
    suite's scenario.py with ``depth`` and ``foreign_thread``.
    """

    def __init__(self, python, script=None, workdir=None, timeout=HANDSHAKE_TIMEOUT,
                 args=(), depth=5, foreign_thread=False, handshake="fifo", hung=None,
                 aslr=True, new_session=False, container=None, env=None, crash=None):
        if handshake not in ("fifo", "file"):
            raise ValueError("handshake must be 'fifo' or 'file'")
        self.python = python
        if script is None:
            script = SCENARIO
            args = [str(depth), "1" if foreign_thread else "0"]
        self.script = script if os.path.isabs(script) else os.path.join(TARGETS, script)
        self._own_workdir = workdir is None
        self.workdir = str(workdir) if workdir is not None else tempfile.mkdtemp(prefix="pyf-t-")
        self.timeout = timeout
        self.args = list(args)
        self.handshake = handshake
        self.new_session = new_session
        # hung: a callable; when it returns true the handshake counts as
        # late at once (the tests of the timeout report, test_hang_report.py).
        self.hung = hung
        # aslr=False: the same memory layout in every run (setarch -R), so
        # that what a layout-dependent core writer leaves out is the same
        # every time (test_debuggers.py's core files).
        self.aslr = aslr
        self.container = container
        self.target_pid = None  # its PID here, when started in a container
        # env: variables added to the target's environment (LD_LIBRARY_PATH
        # to a modified copy of libpython, say)
        self.env = dict(env or {})
        # crash: "segv" or "abort" (a file handshake): the main thread crashes
        # where it would block, after the handshake (targets/_common.py),
        # with no limit on the size of its core; start() returns once it died
        self.crash = crash
        if crash is not None and handshake != "file":
            raise ValueError("crash needs the file handshake")
        self.proc = None
        self.rfd = None
        self.errfile = None
        self.doc = None

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        if self._own_workdir:
            self.cleanup()
        else:
            self.stop()
        return False

    def start(self):
        os.makedirs(self.workdir, exist_ok=True)
        path = os.path.join(self.workdir, "handshake")
        for stale in (path, path + ".tmp"):
            if os.path.lexists(stale):
                os.unlink(stale)
        env = target_env(self.env)
        pass_fds = ()
        wfd = None
        if self.handshake == "fifo":
            os.mkfifo(path, 0o600)
            # Non-blocking open of the read end succeeds without a writer;
            # the target's blocking open for writing then succeeds at once.
            self.rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        else:
            self.rfd, wfd = os.pipe()
            os.set_blocking(self.rfd, False)
            env["PYFRAMES_READY_FD"] = str(wfd)
            pass_fds = (wfd,)
        self.errfile = open(os.path.join(self.workdir, "target-output.txt"), "w+b")
        argv = self._no_aslr() + [self.python, "-E", "-s", self.script, path] + self.args
        if self.container is not None:
            argv = self.container.wrap(argv, self.workdir)
        if self.crash is not None:
            env["PYFRAMES_CRASH"] = self.crash
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=self.errfile, stderr=subprocess.STDOUT,
                cwd=self.workdir, env=env, pass_fds=pass_fds, start_new_session=self.new_session,
                preexec_fn=_no_core_limit if self.crash is not None else None)
        finally:
            if wfd is not None:
                os.close(wfd)  # the child holds it: EOF here means it died
        line = self._read_line()
        if self.handshake == "file":
            with open(path, "rb") as f:
                line = f.readline().rstrip(b"\n")
        try:
            self.doc = json.loads(line.decode("ascii"))
        except ValueError as e:
            self._fail("malformed handshake (%s): %r" % (e, line[:200]))
        if self.container is not None:
            self.target_pid = self.container.find_target(self.proc.pid, self.doc.get("pid"))
        elif self.doc.get("pid") != self.proc.pid:
            raise TargetError("handshake pid %r is not the child's pid %d"
                              % (self.doc.get("pid"), self.proc.pid))
        if self.crash is not None:
            self._wait_crashed()
        elif self.handshake == "file":
            self._wait_blocked_in_read(self.pid)
        self.views = {int(tid): frames for tid, frames in self.doc.get("threads", {}).items()}
        self.threads = {tid: [(f["function"], f["filename"], f["line"]) for f in frames]
                        for tid, frames in self.views.items()}
        self.idents = {int(tid): info["ident"]
                       for tid, info in self.doc.get("thread_info", {}).items()}
        if self.crash is None:
            self.host_tids = self._host_tids()
            self.foreign_tids = sorted(set(self.host_tids) - set(self.views))
        else:
            self.host_tids, self.foreign_tids = {}, []
        return self

    def _host_tids(self):
        """{native tid as the target sees it: its id here} (NSpid of each
        /proc/PID/task/TID/status: the innermost id, the first)."""
        if self.container is None:
            return {int(t): int(t) for t in os.listdir("/proc/%d/task" % self.pid)}
        import namespaces
        return namespaces.host_tids(self.pid)

    def _wait_crashed(self):
        """The crash follows the handshake: wait for the process to die of
        it, bounded."""
        try:
            self.proc.wait(self.timeout)
        except subprocess.TimeoutExpired:
            self._fail("PYFRAMES_CRASH=%s: still running %.0fs after the handshake"
                       % (self.crash, self.timeout))
        want = {"segv": -signal.SIGSEGV, "abort": -signal.SIGABRT}[self.crash]
        if self.proc.returncode != want:
            self._fail("PYFRAMES_CRASH=%s: exit status %d, not %d"
                       % (self.crash, self.proc.returncode, want))

    def _no_aslr(self):
        """The setarch prefix that turns address randomization off for the
        target (it execs the interpreter: same pid), or [] with aslr."""
        if self.aslr:
            return []
        setarch = shutil.which("setarch")
        if setarch is None:
            raise TargetError("aslr=False needs setarch (util-linux)")
        return [setarch, os.uname().machine, "--addr-no-randomize"]

    def stop(self):
        if self.target_pid is not None:
            try:  # the namespace ends with the unshare below; no wait for it
                os.kill(self.target_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    self.proc.send_signal(signal.SIGKILL)
                except ProcessLookupError:
                    pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        # The read end stays open until the child is dead: closing it earlier
        # would make the child's pending write fail and its stack unwind.
        if self.rfd is not None:
            os.close(self.rfd)
            self.rfd = None
        if self.errfile is not None:
            self.errfile.close()
            self.errfile = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def output(self):
        """The child's stdout+stderr so far (for failure messages)."""
        if self.errfile is None:
            return ""
        self.errfile.flush()
        with open(self.errfile.name, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def _late(self, deadline):
        return time.monotonic() >= deadline or (self.hung is not None and self.hung())

    def _fail_late(self, why):
        """_fail for a target past its time limit: its native and Python
        stacks (and those of anything it started) go into the message,
        taken before stop() kills it."""
        self._fail("%s\n--- where the target was (taken before it was killed) ---\n%s"
                   % (why, hang_report.report(self.proc.pid, "target")))

    def _fail(self, why):
        rc = self.proc.poll() if self.proc else None
        if rc is not None and rc < 0:
            try:
                rc = "%d (%s)" % (rc, signal.Signals(-rc).name)
            except ValueError:
                pass
        raise TargetError("%s: %s %s (exit status %s); target output:\n%s"
                          % (why, self.python, os.path.basename(self.script), rc,
                             self.output() or "<empty>"))

    def _wait_blocked_in_read(self, tid):
        """The ready byte comes just before the main thread enters its last
        os.read (same line, but still inside the function that wrote the
        document): wait until the kernel shows it in read(2), bounded."""
        read_nrs = {"x86_64": "0", "aarch64": "63"}.get(os.uname().machine)
        deadline = time.monotonic() + self.timeout
        while not self._late(deadline):
            try:
                with open("/proc/%d/task/%d/syscall" % (self.pid, tid)) as f:
                    fields = f.read().split()
            except OSError:
                self._fail("the target's main thread is gone")
            if fields and (fields[0] == read_nrs or (read_nrs is None and fields[0] != "running")):
                return
            if self.proc.poll() is not None:
                self._fail("target exited after the handshake")
            time.sleep(0.001)  # a condition of the kernel's, not a guessed delay
        self._fail_late("the main thread did not block within %.0f s" % self.timeout)

    def _read_line(self):
        """The first line from rfd, bounded by self.timeout.

        poll() waits in short slices so a child that dies before writing is
        noticed (a FIFO never opened by a writer does not report hang-up)."""
        deadline = time.monotonic() + self.timeout
        poller = select.poll()
        poller.register(self.rfd, select.POLLIN | select.POLLHUP)
        buf = bytearray()
        while True:
            nl = buf.find(b"\n")
            if nl >= 0:
                return bytes(buf[:nl])
            remaining = deadline - time.monotonic()
            if self._late(deadline):
                self._fail_late("no handshake within %.0f s" % self.timeout)
            events = poller.poll(min(remaining, 0.25) * 1000)
            if events:
                try:
                    chunk = os.read(self.rfd, 1 << 16)
                except BlockingIOError:
                    chunk = None
                if chunk:
                    buf += chunk
                    continue
                if chunk == b"":
                    # End of file: every writer has closed it.
                    if buf or self.proc.poll() is not None or self.handshake == "file":
                        self._fail("handshake closed before a complete document")
                    # Hang-up reported before any writer opened the FIFO:
                    # wait (bounded) for the child rather than spin.
                    try:
                        self.proc.wait(timeout=0.05)
                    except subprocess.TimeoutExpired:
                        pass
            if self.proc.poll() is not None and buf.find(b"\n") < 0:
                # Drain what a dying child may have written, then give up.
                try:
                    buf += os.read(self.rfd, 1 << 20)
                except BlockingIOError:
                    pass
                if buf.find(b"\n") < 0:
                    self._fail("target exited before completing the handshake")

    # -- views -------------------------------------------------------------
    @property
    def pid(self):
        return self.target_pid if self.target_pid is not None else self.proc.pid

    @property
    def view(self):
        return self.doc

    @property
    def main_tid(self):
        """The main thread's native tid, as the target sees it."""
        return self.doc["pid"] if self.container is not None else self.proc.pid

    @property
    def hexversion(self):
        return self.doc["hexversion"]

    @property
    def version_info(self):
        h = self.doc["hexversion"]
        return (h >> 24, (h >> 16) & 0xFF, (h >> 8) & 0xFF)

    def thread_name(self, tid):
        return self.doc["thread_info"][str(tid)]["name"]

    def thread_ident(self, tid):
        return self.doc["thread_info"][str(tid)]["ident"]

    def tid_by_name(self):
        return {info["name"]: int(tid) for tid, info in self.doc["thread_info"].items()}
