"""The debugger-command layer (pyframes.session, locate, options, errors)
without a debugger: a fake adapter over a live target, and over bytes
recorded from it and replayed as if they were a core file.

Oracle: the target's own view of its stacks (debugger_util.LiveTarget).
"""

import os
import re
import shutil
import struct
import subprocess
import sys

import pytest

import conftest
import debugger_util as du

sys.path.insert(0, du.PACKAGE_DIR)

VERSIONS = list(du.VERSIONS)


def _session():
    from pyframes.session import Session
    return Session("py-bt-fast", "test")


def _maps(pid):
    rows = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split(None, 5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            rows.append((start, end, parts[1], int(parts[2], 16),
                         parts[5].strip() if len(parts) > 5 else ""))
    return rows


def _comm(pid, tid=None):
    with open("/proc/%d/task/%d/comm" % (pid, tid or pid)) as f:
        return f.read().rstrip("\n")


class FakeAdapter(object):
    """A DebuggerAdapter over a live process of this machine, as a plugin
    would write one: memory through /proc/PID/mem, thread ids from
    /proc/PID/task, objfiles and writable ranges from /proc/PID/maps."""

    debugger_name = "fakedbg"
    cheap_symbol_lookup = True

    def __init__(self, pid, selected=None):
        self._pid = pid
        self.selected = selected
        self.gen = 0
        self.reads = 0
        self.bytes = 0
        self.ident = ("fake", pid)
        self._mem = open("/proc/%d/mem" % pid, "rb", buffering=0)

    def close(self):
        self._mem.close()

    # the adapter protocol
    def pid(self):
        return self._pid

    def has_process(self):
        return True

    def is_live(self):
        return True

    def executable(self):
        return os.readlink("/proc/%d/exe" % self._pid)

    def is_live_local(self):
        from pyframes.adapter import local_process_matches
        return local_process_matches(self._pid, self.executable())

    def read(self, addr, size):
        self.reads += 1
        self.bytes += size
        try:
            data = os.pread(self._mem.fileno(), size, addr)
        except OSError:
            data = b""
        if len(data) != size:
            raise MemoryError("Cannot access memory at address 0x%x" % addr)
        return data

    def lookup_symbol(self, name):
        return None

    def writable_ranges(self):
        return [(s, e) for s, e, perms, _off, path in _maps(self._pid)
                if "w" in perms and path.startswith("/")]

    def objfiles(self):
        return [(path, s) for s, e, perms, off, path in _maps(self._pid)
                if off == 0 and path.startswith("/")]

    def selected_native_tid(self):
        return self.selected

    def debugger_thread_label(self, native_tid):
        tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % self._pid))
        return "thread %d" % (tids.index(native_tid) + 1) if native_tid in tids else None

    def identity(self):
        return self.ident

    def generation(self):
        return self.gen


class Recording(FakeAdapter):
    """Records every range read, to replay later."""

    def __init__(self, pid, selected=None):
        FakeAdapter.__init__(self, pid, selected)
        self.recorded = {}

    def read(self, addr, size):
        data = FakeAdapter.read(self, addr, size)
        self.recorded[(addr, size)] = data
        return data


class Replay(FakeAdapter):
    """The recorded bytes of a process that is gone, as a core file: not
    live, not local; reads outside the recording fail as the debugger's
    would."""

    def __init__(self, recording, pid, executable, objfiles, writable, selected=None):
        self._pid = pid
        self._exe = executable
        self._objfiles = objfiles
        self._writable = writable
        self.selected = selected
        self.gen = 0
        self.reads = 0
        self.bytes = 0
        self.ident = ("replay", pid)
        self.regions = dict(recording)
        self.holes = []

    def close(self):
        pass

    def is_live(self):
        return False

    def is_live_local(self):
        return False

    def executable(self):
        return self._exe

    def read(self, addr, size):
        self.reads += 1
        self.bytes += size
        if not any(a <= addr < b for a, b in self.holes):
            data = self.regions.get((addr, size))
            if data is None:
                for (a, n), d in self.regions.items():
                    if a <= addr and addr + size <= a + n:
                        data = d[addr - a:addr - a + size]
                        break
            if data is not None:
                return data
        raise MemoryError("Cannot access memory at address 0x%x" % addr)

    def writable_ranges(self):
        return self._writable

    def objfiles(self):
        return self._objfiles

    def debugger_thread_label(self, native_tid):
        return None


class Live(object):
    pass


@pytest.fixture(scope="module", params=VERSIONS)
def live(request, tmp_path_factory):
    version = request.param
    du.require(None, version)
    workdir = str(tmp_path_factory.mktemp("command-%s" % version))
    target = du.LiveTarget(du.python_for(version), depth=5, foreign_thread=True,
                           workdir=workdir)
    target.start()
    try:
        result = Live()
        result.version, result.target = version, target
        result.worker = sorted(set(target.threads) - {target.main_tid})[0]
        rec = Recording(target.pid, selected=target.main_tid)
        session = _session()
        result.recorded_all = session.run("--all --json --reader debugger", rec)
        result.recorded_main = session.run("--json --reader debugger", rec)
        session.close()
        rec.close()
        result.recording = rec.recorded
        result.executable = rec.executable()
        result.objfiles = rec.objfiles()
        result.writable = rec.writable_ranges()
        yield result
    finally:
        target.stop()


def _replay(live, **kw):
    return Replay(live.recording, live.target.pid, live.executable, live.objfiles,
                  live.writable, **kw)


def _doc(text):
    return du.extract_json(text)


def _check(doc, target, tids=None):
    problems = du.own_view_mismatches(doc, target, tids)
    assert not problems, "\n".join(problems)


def _info(text, name):
    m = re.search(r"^%s: (.*)$" % re.escape(name), text, re.M)
    assert m, text
    return m.group(1)


# ---- thread choice -------------------------------------------------------


def test_selected_thread_is_default(live):
    adapter = FakeAdapter(live.target.pid, selected=live.target.main_tid)
    try:
        doc = _doc(_session().run("--json", adapter))
    finally:
        adapter.close()
    assert list(du.frames_of(doc)) == [live.target.main_tid]
    _check(doc, live.target, [live.target.main_tid])


@pytest.mark.parametrize("how", ["native", "python"])
def test_thread_by_id(live, how):
    wanted = live.worker if how == "native" else live.target.idents[live.worker]
    adapter = FakeAdapter(live.target.pid)
    try:
        doc = _doc(_session().run("--thread %d --json" % wanted, adapter))
    finally:
        adapter.close()
    assert list(du.frames_of(doc)) == [live.worker]
    _check(doc, live.target, [live.worker])


def test_every_thread(live):
    adapter = FakeAdapter(live.target.pid)
    try:
        doc = _doc(_session().run("--all --json", adapter))
    finally:
        adapter.close()
    _check(doc, live.target)


@pytest.mark.parametrize("args", ["--all --json --limit 2", "--all --json 2",
                                  "--all --json --max-depth 2"])
def test_limit_and_max_depth(live, args):
    """--limit N (or N alone, as `bt N`) keeps the N innermost frames of each
    thread and counts the rest; --max-depth N stops the walk there (the
    thread is then incomplete).  Oracle: the target's own view."""
    adapter = FakeAdapter(live.target.pid)
    try:
        doc = _doc(_session().run(args, adapter))
    finally:
        adapter.close()
    bounded = "--max-depth" in args
    for interp in doc["interpreters"]:
        for row in interp["threads"]:
            own = live.target.threads[row["native_thread_id"]]
            assert [(f["function"], f["filename"], f["line"]) for f in row["frames"]] == \
                own[:2], row
            if len(own) > 2:
                assert row["complete"] is not bounded, row
                assert row.get("more_frames") == (None if bounded else len(own) - 2), row


def test_unknown_thread(live):
    from pyframes.errors import CommandError
    adapter = FakeAdapter(live.target.pid)
    try:
        with pytest.raises(CommandError) as e:
            _session().run("--thread 1", adapter)
    finally:
        adapter.close()
    text = str(e.value)
    assert text.startswith("--thread 1: no Python thread has native thread id or "
                           "Python thread id 1. Python threads:"), text
    assert "`py-bt-fast --thread N` or `py-bt-fast --all`" in text


def test_selected_thread_without_python(live):
    from pyframes.errors import CommandError
    foreign = live.target.foreign_tids[0]
    adapter = FakeAdapter(live.target.pid, selected=foreign)
    try:
        label = adapter.debugger_thread_label(foreign)
        with pytest.raises(CommandError) as e:
            _session().run("", adapter)
    finally:
        adapter.close()
    text = str(e.value)
    assert text.startswith("the selected thread (%s, LWP %d) runs no Python code. "
                           "Python threads:" % (label, foreign)), text
    for tid, frames in live.target.threads.items():
        assert re.search(r"native id %d\s.*in %s \(" % (tid, re.escape(frames[0][0])), text)
    assert "Select one of them in fakedbg" in text


def test_no_selected_thread(live):
    from pyframes.errors import NO_SELECTED_THREAD, CommandError
    adapter = FakeAdapter(live.target.pid, selected=None)
    try:
        with pytest.raises(CommandError) as e:
            _session().run("", adapter)
    finally:
        adapter.close()
    assert str(e.value) == NO_SELECTED_THREAD


def test_text_names_the_debugger_thread(live):
    adapter = FakeAdapter(live.target.pid, selected=live.target.main_tid)
    try:
        text = _session().run("--no-source", adapter)
    finally:
        adapter.close()
    # the OS's name of the thread (a live local process) while the target
    # names none
    assert re.search(r'^Thread 0x[0-9a-f]+ "(?:MainThread|%s)" \(native %d\b.*'
                     r'\[fakedbg thread 1\]:$' % (re.escape(_comm(live.target.pid)),
                                                  live.target.main_tid), text, re.M), text
    for function, filename, line in live.target.threads[live.target.main_tid]:
        assert '  File "%s", line %d, in %s' % (filename, line, function) in text


# ---- reader choice and fallback --------------------------------------------


def test_reader_choice(live):
    adapter = FakeAdapter(live.target.pid)
    session = _session()
    try:
        auto = session.run("--info", adapter)
        assert _info(auto, "reader") == "pid"
        assert _info(auto, "cached targets") == "pid"
        assert _info(auto, "python").startswith("CPython %s." % du.minor_of(live.version))
        debugger = session.run("--info --reader debugger", adapter)
        assert _info(debugger, "reader") == "debugger"
        assert _info(debugger, "cached targets") == "debugger, pid"
        # the debugger's reads find the runtime through the ELF section
        # (the fake adapter has no symbols)
        assert re.match(r"_PyRuntime at 0x[0-9a-f]+, found by the \.PyRuntime section of /",
                        _info(debugger, "runtime")), debugger
        assert _info(session.run("--info --reader pid", adapter), "reader") == "pid"
    finally:
        session.close()
        adapter.close()


def test_reader_falls_back_when_pid_reads_are_refused(live, monkeypatch):
    """process_vm_readv refused while the debugger can read (ptrace rights
    without PID-reader rights): auto uses the debugger; --reader pid says why."""
    from pyframes import errors, target
    from pyframes.errors import CommandError

    def refused(pid, **kw):
        raise errors.PermissionDenied(errors.PYF_EPERM, "process_vm_readv: Operation not permitted")
    monkeypatch.setattr(target, "attach", refused)
    adapter = FakeAdapter(live.target.pid)
    session = _session()
    try:
        assert _info(session.run("--info", adapter), "reader") == "debugger"
        _check(_doc(session.run("--all --json", adapter)), live.target)
        with pytest.raises(CommandError) as e:
            _session().run("--info --reader pid", adapter)
        assert "permission denied" in str(e.value).lower()
    finally:
        session.close()
        adapter.close()


def test_replayed_core(live):
    """Recorded bytes, the process gone: auto reads through the debugger and
    the stacks equal the live ones; --reader pid is refused."""
    from pyframes.errors import CommandError
    live_doc = _doc(live.recorded_all)
    _check(live_doc, live.target)
    adapter = _replay(live, selected=live.target.main_tid)
    session = _session()
    assert _info(session.run("--info", adapter), "reader") == "debugger"
    assert du.frames_of(_doc(session.run("--all --json", adapter))) == du.frames_of(live_doc)
    assert du.frames_of(_doc(session.run("--json", adapter))) == \
        du.frames_of(_doc(live.recorded_main))
    with pytest.raises(CommandError) as e:
        session.run("--reader pid", adapter)
    assert str(e.value).startswith("--reader pid needs a live process; this is a core file")


# ---- cache invalidation ----------------------------------------------------


def test_cache_follows_generation_and_identity(live):
    adapter = FakeAdapter(live.target.pid)
    session = _session()
    try:
        def cost(command="--all --json --reader debugger"):
            before = adapter.bytes
            _check(_doc(session.run(command, adapter)), live.target)
            return adapter.bytes - before
        cold = cost()
        warm = cost()
        assert warm < cold, (warm, cold)            # code objects cached
        adapter.gen += 1                            # the inferior ran
        flushed = cost()
        assert flushed > warm, (flushed, warm)      # decoded data forgotten
        assert cost() == warm                       # and cached again
        adapter.ident = ("fake", live.target.pid, "another inferior")
        reopened = cost()
        assert reopened >= flushed, (reopened, flushed)  # a new target: located again
    finally:
        session.close()
        adapter.close()


# ---- every message of the command layer -----------------------------------


def test_usage_errors():
    from pyframes.errors import UsageError
    session = _session()
    for args, text in (("--bogus", "unrecognized arguments: --bogus"),
                       ("--limit 0", "argument --limit: '0' must be at least 1"),
                       ("0", "argument N: '0' must be at least 1"),
                       ("5 --limit 3", "N and --limit N name two limits (5, 3): give one"),
                       ("--max-depth x", "argument --max-depth: 'x' is not an integer"),
                       ("--thread x", "argument -t/--thread: 'x' is not an integer"),
                       ("--all --thread 3", "not allowed with argument -a/--all"),
                       ("--reader other", "argument --reader: invalid choice: 'other'"),
                       ("'unbalanced", "No closing quotation")):
        with pytest.raises(UsageError) as e:
            session.run(args, FakeAdapter.__new__(FakeAdapter))
        assert str(e.value).startswith("usage: py-bt-fast"), (args, str(e.value))
        assert text in str(e.value), (args, str(e.value))
    assert "--info" in session.run("--help", None)


def test_no_process():
    from pyframes.errors import NO_PROCESS, CommandError

    class Nothing(FakeAdapter):
        def __init__(self):
            pass

        def has_process(self):
            return False
    with pytest.raises(CommandError) as e:
        _session().run("--all", Nothing())
    assert str(e.value) == NO_PROCESS


def test_not_python():
    """A process without Python, through either reader: named by its PID
    and name, as the command line names it."""
    from pyframes.errors import CommandError
    du.require()
    proc = du.sleeper()
    try:
        adapter = FakeAdapter(proc.pid)
        for args in ("", "--all --reader debugger", "--reader pid --json"):
            with pytest.raises(CommandError) as e:
                _session().run(args, adapter)
            assert str(e.value) == "process %d (sleep) is not a Python process" % proc.pid, args
        adapter.close()
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("interp", [pytest.param(i, id=i.name) for i in
                                    conftest.REFUSED_INTERPRETERS]
                         or [pytest.param(None, id="none")])
def test_refused_version_is_named(interp):
    """A CPython outside 3.8-3.15, through either reader: named by its
    version (its own platform.python_version()), as the command line names
    it."""
    from pyframes.errors import NoRuntime
    du.require()
    if interp is None:
        pytest.skip("no refused interpreter (pyenv's 3.8-3.10) on this machine")
    proc, version = conftest.start_saying_version(interp.path)
    try:
        assert version.startswith(interp.minor + "."), version
        adapter = FakeAdapter(proc.pid)
        for args in ("", "--all --reader debugger", "--reader pid --json"):
            with pytest.raises(NoRuntime) as e:
                _session().run(args, adapter)
            assert str(e.value) == ("unsupported CPython %s (pyframes reads CPython 3.8-3.15)"
                                    % version), args
        adapter.close()
    finally:
        proc.kill()
        proc.wait()


class RemoteAdapter(FakeAdapter):
    """A remote target whose files this machine cannot open (the paths the
    debugger names are another machine's): the debugger's symbols are all
    there is.  ``symbols`` name -> address; a symbol Py_Version may be
    given a word of its own (``version``), read at a fake address."""

    FAKE = 0x10

    def __init__(self, pid, symbols, version=None):
        FakeAdapter.__init__(self, pid)
        self.symbols = symbols
        self.version = version

    def is_live_local(self):
        return False

    def objfiles(self):
        return [("/elsewhere" + path, start) for path, start in FakeAdapter.objfiles(self)]

    def lookup_symbol(self, name):
        if name == "Py_Version" and self.version is not None:
            return self.FAKE
        return self.symbols.get(name)

    def read(self, addr, size):
        if addr == self.FAKE and self.version is not None:
            return struct.pack("<Q", self.version)[:size]
        return FakeAdapter.read(self, addr, size)


def _symbols(pid):
    """The addresses of _PyRuntime and Py_Version in process pid, from its
    libpython's own symbol table (readelf), as a debugger resolves them."""
    out = {}
    for start, _end, _perms, off, path in _maps(pid):
        if off != 0 or "libpython" not in os.path.basename(path):
            continue
        text = subprocess.run(["readelf", "-W", "--dyn-syms", path], capture_output=True,
                              text=True, check=True).stdout
        for line in text.splitlines():
            fields = line.split()
            if len(fields) >= 8 and fields[7] in ("_PyRuntime", "Py_Version"):
                out[fields[7]] = start + int(fields[1], 16)
    return out


@pytest.mark.parametrize("interp", [pytest.param(i, id=i.name) for i in
                                    conftest.older_interpreters()]
                         or [pytest.param(None, id="none")])
def test_remote_files_unopened(interp, tmp_path):
    """A 3.11/3.12 runtime found by the debugger's symbol alone (its files
    cannot be opened here: no size to check it by), its version confirmed
    by the debugger's Py_Version against the target's sys.hexversion:
    another word there refuses it; and a version only the debugger's
    Py_Version names, outside 3.8-3.15, is named."""
    from pyframes.errors import NoRuntime
    du.require()
    if interp is None:
        pytest.skip("no pyenv CPython 3.12 on this machine")
    if shutil.which("readelf") is None:
        pytest.fail("readelf is missing") if du.in_sandbox() else pytest.skip("no readelf")
    with du.LiveTarget(interp.path, depth=3, workdir=str(tmp_path)) as target:
        symbols = _symbols(target.pid)
        assert set(symbols) == {"_PyRuntime", "Py_Version"}, symbols
        adapter = RemoteAdapter(target.pid, symbols)
        session = _session()
        _check(_doc(session.run("--all --json --reader debugger", adapter)), target)
        assert "found by the symbol _PyRuntime\n" in session.run("--info", adapter) + "\n"
        session.close()
        said = struct.unpack("<Q", adapter.read(symbols["Py_Version"], 8))[0] & 0xFFFFFFFF
        other = RemoteAdapter(target.pid, symbols, version=said + 0x100)  # the next micro
        with pytest.raises(NoRuntime) as e:
            _session().run("--all --reader debugger", other)
        mine = conftest.own_version(interp.path)
        assert str(e.value) == ("the runtime's Py_Version says CPython %s, its sys.hexversion "
                                "%s: refused" % (_next_micro(mine), mine)), str(e.value)
        adapter.close()
        other.close()
    proc = du.sleeper()
    try:
        future = RemoteAdapter(proc.pid, {}, version=0x031000F0)
        with pytest.raises(NoRuntime) as e:
            _session().run("--all --reader debugger", future)
        assert str(e.value) == "unsupported CPython 3.16.0 (pyframes reads CPython 3.8-3.15)"
        future.close()
    finally:
        proc.kill()
        proc.wait()


def _next_micro(version):
    major, minor, micro = version.split(".")
    return "%s.%s.%d" % (major, minor, int(micro) + 1)


def test_unreadable_memory_names_the_debuggers_words(live):
    from pyframes.errors import CORE_HINT, CommandError
    adapter = _replay(live)
    session = _session()
    session.run("--all --json", adapter)     # opened, runtime located
    adapter.holes = [(0, 1 << 64)]            # now nothing can be read
    with pytest.raises(CommandError) as e:
        session.run("--all", adapter)
    text = str(e.value)
    assert re.match(r"memory unreadable at 0x[0-9a-f]+ while reading \S.* \(\d+ bytes\): "
                    r"Cannot access memory at address 0x[0-9a-f]+ \(%s\)$"
                    % re.escape(CORE_HINT), text), text


def test_unsupported_version(live):
    """A runtime whose version word says 3.16: the version is named."""
    from pyframes.errors import CommandError
    adapter = _replay(live)
    runtimes = set(addr for (addr, size), data in adapter.regions.items()
                   if data[:8] == b"xdebugpy")
    assert len(runtimes) == 1, runtimes
    runtime = runtimes.pop()
    new = struct.pack("<Q", 0x031000F0)
    for (addr, size), data in list(adapter.regions.items()):
        off = runtime + 8 - addr
        if 0 <= off and off + 8 <= size:
            adapter.regions[(addr, size)] = data[:off] + new + data[off + 8:]
    with pytest.raises(CommandError) as e:
        _session().run("--all", adapter)
    assert str(e.value) == "unsupported CPython 3.16.0 (pyframes reads CPython 3.8-3.15)", \
        str(e.value)


def test_a_command_line_parsed_again_is_a_new_namespace():
    """The same arguments parsed again (a debugger command repeated) give
    a namespace of their own each time, which the caller may change; an
    option added to the parser afterwards (enable_processes) is there."""
    from pyframes import options
    parser = options.build_parser("py-bt-fast")
    first = options.parse_arguments(parser, "--limit 3")
    first.all, first.limit = True, 9
    again = options.parse_arguments(parser, "--limit 3")
    assert (again.all, again.limit) == (False, 3) and again is not first
    assert not hasattr(again, "all_processes")
    options.add_processes_option(parser, "--all-inferiors", "inferior")
    after = options.parse_arguments(parser, "--limit 3")
    assert (after.all_processes, after.limit) == (False, 3)


def test_a_live_local_process_is_checked_again_once_it_exited(tmp_path):
    """The session asks whether the inferior is a live local process (and
    its start time) once per process: while the process lives the answer
    stands, its exit is seen at the next command (its pidfd, ProcessWatch),
    and the next process of the same identity is asked about anew."""
    from pyframes.adapter import ProcessWatch, process_start_time
    if not ProcessWatch(os.getpid()).watching:
        pytest.skip("no pidfd here (Linux 5.3+)")
    session = _session()
    asked = []

    class Counting(FakeAdapter):
        def is_live_local(self):
            asked.append(self._pid)
            return FakeAdapter.is_live_local(self)

    for _ in range(2):  # a process, then another with the same identity
        proc = subprocess.Popen([sys.executable, "-c", "import os; os.read(0, 1)"],
                                stdin=subprocess.PIPE)
        adapter = Counting(proc.pid)
        adapter.ident = ("fake", "the same identity")
        try:
            start = process_start_time(proc.pid)
            del asked[:]
            for _ in range(3):
                assert session._local_process(adapter) == (True, start)
            assert asked == [proc.pid]  # asked once, while it lives
        finally:
            proc.kill()
            proc.wait()
            adapter.close()
        # gone: asked again, and no longer live and local
        assert session._local_process(adapter) == (False, None)
        assert asked == [proc.pid, proc.pid]
    session.close()
