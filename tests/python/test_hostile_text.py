"""Control characters from the target never reach the terminal raw.

The target (targets/hostile.py) names functions (co_name, co_qualname), files
(co_filename, and a real module file whose name and source line hold escape
sequences), its worker thread, asyncio tasks and coroutines with text full of
ESC sequences, BEL, CR, LF, TAB, DEL, NUL, C1 controls, bidi overrides and
isolates, a zero-width space and ';'.  Every output of the CLI (dump, --all,
--tasks, --table, --json, --collapsed, sample's summary, collapsed and
flame graph files), of gdb (py-bt-fast, --all, --tasks, bt through the frame
filter) and of lldb (pystack, --all, --tasks, bt through the frame-format
hook) must hold no character str.isprintable() rejects besides its own line
ends, and must show each name recognisably: as repr() writes it (the
oracle is the list of names the target itself defined, in hostile.json).
--json keeps the exact strings.
"""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import debugger_util as du
from conftest import PACKAGE_DIR

VERSIONS = ("3.13", "3.14", "3.15") + du.OLDER_REPRESENTATIVE


def shown(name):
    """How a name must appear: repr() without its quotes (the names hold
    no quote or backslash, where repr and pyframes could differ)."""
    assert "\\" not in name and "'" not in name
    return repr(name)[1:-1]


def table_cell(name):
    """The start of a name in a --table cell (long cells end in "...")."""
    return shown(name)[:40]


def assert_clean(text, what):
    """No character outside str.isprintable() except the line ends."""
    bad = sorted({c for c in text if c != "\n" and not c.isprintable()})
    assert not bad, "%s holds raw %s:\n%s" % (what, [hex(ord(c)) for c in bad], text[-3000:])


def assert_clean_bytes(data, what):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError("%s is not UTF-8: %s" % (what, e))
    assert_clean(text, what)
    return text


class Hostile(object):
    pass


@pytest.fixture(scope="module", params=VERSIONS)
def hostile(request, tmp_path_factory, library_path):
    version = request.param
    du.require(version=version)
    workdir = str(tmp_path_factory.mktemp("hostile-%s" % version))
    target = du.LiveTarget(du.python_for(version), "hostile.py", workdir=workdir)
    with target:
        with open(os.path.join(workdir, "hostile.json")) as f:
            h = Hostile()
            h.names = json.load(f)
        h.version, h.target, h.workdir = version, target, workdir
        # asyncio tasks are read from 3.14 on
        h.tasks = du.minor_of(version) not in ("3.11", "3.12", "3.13")
        h.env = dict(os.environ, PYFRAMES_LIBRARY=library_path, PYTHONPATH=PACKAGE_DIR)
        yield h


def _cli(h, *args, ok=True):
    p = subprocess.run([sys.executable, "-m", "pyframes"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=h.env, timeout=120)
    out = assert_clean_bytes(p.stdout, "stdout of %s" % (args,))
    err = assert_clean_bytes(p.stderr, "stderr of %s" % (args,))
    if ok:
        assert p.returncode == 0, (args, err)
    return out, err


def _expect(text, names, what, transform=shown):
    missing = [n for n in names if transform(n) not in text]
    assert not missing, "%s does not show %r:\n%s" % (what, missing, text[-4000:])


def test_cli_text_tasks_table_json(hostile):
    h = hostile
    pid = str(h.target.pid)
    functions, files = h.names["functions"], h.names["filenames"]
    out, _ = _cli(h, "dump", pid)
    _expect(out, functions + files, "dump")
    # the module's own source line, read from the file with the hostile name
    assert shown("# \x1b]0;title\x07 \u202eevil \x1b[2J") in out, out
    # a LF inside a name never makes a line of its own: every line that
    # starts like a frame is one of the target's frames
    frames = [line for line in out.splitlines() if line.startswith("  File ")]
    assert len(frames) == sum(len(v) for v in h.target.threads.values()), out
    out, _ = _cli(h, "dump", "--json", pid)
    assert out.isascii()
    mismatches = du.own_view_mismatches(json.loads(out), h.target)
    assert not mismatches, mismatches
    if not h.tasks:
        return
    tasks = h.names["tasks"]
    out, _ = _cli(h, "dump", "--tasks", "--all", pid)
    _expect(out, [name for pair in tasks for name in pair] + functions, "dump --tasks --all")
    out, _ = _cli(h, "dump", "--table", pid)
    _expect(out, [name for name, _ in tasks], "dump --table", table_cell)
    out, _ = _cli(h, "dump", "--tasks", "--json", pid)
    got = {t["name"]: t for t in json.loads(out)["tasks"]}
    for name, coro in tasks:
        assert name in got, (name, sorted(got))
        assert got[name]["coroutine_stack"][-1]["function"] == coro


def test_cli_collapsed_and_sample_files(hostile, tmp_path):
    h = hostile
    pid = str(h.target.pid)
    functions, files = h.names["functions"], h.names["filenames"]

    def collapsed(name):
        return shown(name).replace(";", "\\x3b")

    out, _ = _cli(h, "dump", "--collapsed", pid)
    lines = out.splitlines()
    assert len(lines) == len(h.target.threads), out
    for line in lines:
        stack, count = line.rsplit(" ", 1)
        tid = int(stack.split(";", 1)[0][len("thread-"):])
        assert count == "1" and len(stack.split(";")) == 1 + len(h.target.threads[tid]), line
    _expect(out, functions + files, "dump --collapsed", collapsed)

    cfile, svg = str(tmp_path / "c.txt"), str(tmp_path / "f.svg")
    out, _ = _cli(h, "sample", "--all", "--duration", "0.3", "--collapsed", cfile,
                  "--flamegraph", svg, pid)
    _expect(out, functions, "sample summary")
    with open(cfile, "rb") as f:
        text = assert_clean_bytes(f.read(), "collapsed file")
    for line in text.splitlines():
        stack, count = line.rsplit(" ", 1)
        assert count.isdigit() and all(stack.split(";")), line
    _expect(text, functions, "collapsed file", collapsed)
    with open(svg, "rb") as f:
        data = f.read()
    ET.fromstring(data)  # well-formed XML
    assert_clean_bytes(data, "flame graph")


def _debugger_checks(h, session, names, bt):
    """Each command's output clean; the bt lines pyframes adds (marked
    [python]) clean, the debugger's own lines aside."""
    for i, cmd in enumerate(names):
        text = session[i]
        if cmd in bt:
            text = "\n".join(line for line in text.splitlines() if "[python]" in line)
            assert text, session.describe(i)
        assert_clean(text, "%s (%s)" % (cmd, session.describe(i)))


def test_gdb(hostile):
    h = hostile
    if h.version != "3.14":
        pytest.skip("the debuggers run against 3.14 (tasks and every name)")
    du.require("gdb", h.version)
    worker = [tid for tid in h.target.threads if tid != h.target.pid][0]
    commands = ["py-bt-fast", "py-bt-fast --all", "py-bt-fast --all --tasks",
                "py-bt-fast --table", "py-bt-fast --thread %d --native" % worker,
                "thread apply all bt", "py-bt-fast --all --json"]
    s = du.run_gdb(commands, pid=h.target.pid)
    _debugger_checks(h, s, commands, {"thread apply all bt"})
    functions, files = h.names["functions"], h.names["filenames"]
    _expect(s[1], functions + files, "py-bt-fast --all")
    _expect(s[2], [n for pair in h.names["tasks"] for n in pair], "py-bt-fast --all --tasks")
    _expect(s[3], [n for n, _ in h.names["tasks"]], "py-bt-fast --table", table_cell)
    _expect(s[4], functions[:2], "py-bt-fast --native")
    _expect(s[5], functions, "bt")
    assert not du.own_view_mismatches(s.json(6), h.target)


def test_lldb(hostile):
    h = hostile
    if h.version != "3.14":
        pytest.skip("the debuggers run against 3.14 (tasks and every name)")
    du.require("lldb", h.version)
    commands = ["pystack", "pystack --all", "pystack --all --tasks", "pystack --table",
                "pyframes-bt on", "thread backtrace all", "pystack --all --json"]
    s = du.run_lldb(commands, pid=h.target.pid)
    _debugger_checks(h, s, commands, {"thread backtrace all"})
    functions, files = h.names["functions"], h.names["filenames"]
    _expect(s[1], functions + files, "pystack --all")
    _expect(s[2], [n for pair in h.names["tasks"] for n in pair], "pystack --all --tasks")
    _expect(s[3], [n for n, _ in h.names["tasks"]], "pystack --table", table_cell)
    _expect(s[5], functions, "bt")
    assert not du.own_view_mismatches(s.json(6), h.target)


# ---------------------------------------------------------------------------
# Failing readers and writers, failing reads, processes that exit: a named
# error or a result marked incomplete, never a crash or a wrong stack.


def _own(h, tid):
    return h.target.threads[tid]


def _check_snapshot_or_error(h, take, words):
    """take() gives a snapshot whose threads are each the target's own view
    (a frame whose code or line table could not be read flagged so, with
    "???" or no line) or marked incomplete with an error quoting the
    reader's words, or it raises a PyframesError with a PYF_ name and those
    words."""
    from pyframes import errors
    try:
        snap = take()
    except errors.PyframesError as e:
        assert e.name in {n for n, _ in errors.ERRORS.values()} and e.name != "PYF_OK", repr(e)
        assert words in str(e) or words in (e.reader_message or ""), repr(e)
        return "error"
    outcome = "complete"
    for t in snap.threads():
        own = _own(h, t.native_thread_id)
        # a frame whose code object could not be read says so (flag, "???")
        got = [own[i] if i < len(own) and (
                   (f.code_unreadable and f.function == f.filename == "???") or
                   (f.no_location and f.line is None and own[i][:2] == (f.function, f.filename)))
               else (f.function, f.filename, f.line) for i, f in enumerate(t.frames)]
        if any(f.code_unreadable or f.no_location for f in t.frames):
            outcome = "marked"
        if t.complete:
            assert got == own, (t.native_thread_id, got)
        else:
            outcome = "incomplete"
            assert t.error and words in t.error, t.error
            # what was read is a true part of the stack
            assert got == own[:len(got)], (got, t.error)
    return outcome


def test_python_reader_and_writer_that_raise(hostile, pyframes):
    """open_reader over callables that raise (or return short data) on
    chosen reads: every outcome is a named error or a marked result, and
    the next snapshot is right again."""
    h = hostile
    with pyframes.attach(h.target.pid) as t0:
        runtime = t0.python.runtime_addr
    mem = open("/proc/%d/mem" % h.target.pid, "rb", buffering=0)
    state = {"n": 0, "fail": None, "how": 0}
    failures = [lambda a, n: (_ for _ in ()).throw(RuntimeError("injected fault at 0x%x" % a)),
                lambda a, n: (_ for _ in ()).throw(ValueError("injected fault, bad value")),
                lambda a, n: b"injected fault"[:max(n - 1, 0)],
                lambda a, n: None]

    def read(addr, size):
        state["n"] += 1
        if state["n"] == state["fail"]:
            return failures[state["how"] % len(failures)](addr, size)
        mem.seek(addr)
        return mem.read(size)

    try:
        outcomes = set()
        with pyframes.open_reader(read, runtime, pid=h.target.pid) as t:
            state["n"] = 0
            snap = t.snapshot()
            reads = state["n"]
            assert _check_snapshot_or_error(h, lambda: snap, "") == "complete"
            for k in range(1, min(reads, 120) + 1):
                t.flush()  # names and code read again: faults land everywhere
                state.update(n=0, fail=k, how=k)
                words = "injected fault" if k % len(failures) < 2 else ""
                outcomes.add(_check_snapshot_or_error(h, t.snapshot, words))
                state.update(n=0, fail=None)
                assert _check_snapshot_or_error(h, t.snapshot, "") == "complete"
        assert {"error", "incomplete"} <= outcomes, outcomes

        if h.version == "3.15":
            writes = []

            def write(addr, data):
                writes.append(addr)
                raise RuntimeError("injected write fault")

            with pyframes.open_reader(read, runtime, write=write, cache=True,
                                      pid=h.target.pid) as t:
                for _ in range(3):
                    outcome = _check_snapshot_or_error(h, t.snapshot, "injected write fault")
                    assert outcome in ("complete", "error"), outcome
                assert writes, "the frame cache never wrote the anchor"
    finally:
        mem.close()


def _saved(driver_python, cls):
    return driver_python("_pyf_saved_read = %s.read" % cls)


def _patched_read(driver_python, cls, condition, message, exc):
    """A command making the adapter's reads raise when condition holds."""
    return driver_python(
        "%s.read = lambda self, addr, size: (_ for _ in ()).throw(%s(%r %% addr)) "
        "if %s else _pyf_saved_read(self, addr, size)" % (cls, exc, message, condition))


_DEBUGGERS = {
    "gdb": ("py-bt-fast", "PyframesGdbAdapter", lambda c: "python " + c, "gdb.MemoryError"),
    "lldb": ("pystack", "pyframes_lldb.LldbAdapter", lambda c: "script " + c, "OSError"),
}


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_debugger_usable_after_failing_reads(hostile, debugger):
    """In one session: reads that raise give a one-line error, and the next
    commands (the debugger's reads again, then the PID reader) are right."""
    h = hostile
    if h.version != "3.14":
        pytest.skip("the debuggers run against 3.14")
    du.require(debugger, h.version)
    cmd, cls, py, _ = _DEBUGGERS[debugger]
    commands = [
        _saved(py, cls),
        _patched_read(py, cls, "True", "injected reader failure at 0x%x", "RuntimeError"),
        cmd + " --all --reader debugger",
        py("%s.read = _pyf_saved_read" % cls),
        cmd + " --all --json --reader debugger",
        cmd + " --all --json",
    ]
    run = du.run_gdb if debugger == "gdb" else du.run_lldb
    s = run(commands, pid=h.target.pid)
    assert "injected reader failure at 0x" in s[2] and "Traceback" not in s[2], s.describe(2)
    assert len([l for l in s[2].splitlines() if l.strip()]) == 1, s.describe(2)
    for i in (4, 5):
        assert not du.own_view_mismatches(s.json(i), h.target), s.describe(i)


@pytest.fixture(scope="module")
def cores(hostile, tmp_path_factory):
    """An lldb-saved core (process save-core) and a gdb core (gcore) of the
    3.14 target, and the range of its main thread's stack."""
    if hostile.version != "3.14":
        pytest.skip("cores of the 3.14 target")
    du.require("gdb", hostile.version)
    du.require("lldb", hostile.version)
    workdir = str(tmp_path_factory.mktemp("hostile-cores"))
    with open("/proc/%d/maps" % hostile.target.pid) as f:
        [stack] = [l.split()[0] for l in f if l.rstrip().endswith("[stack]")]
    result = {"stack": tuple(int(x, 16) for x in stack.split("-"))}
    result["lldb"] = os.path.join(workdir, "lldb.core")
    s = du.run_lldb(["process save-core " + result["lldb"]], pid=hostile.target.pid)
    assert os.path.exists(result["lldb"]), s.describe()
    result["gdb"] = os.path.join(workdir, "gdb.core")
    s = du.run_gdb(["gcore " + result["gdb"]], pid=hostile.target.pid, plugin=False)
    assert os.path.exists(result["gdb"]), s.describe()
    return result


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_core_lacking_memory(hostile, cores, debugger):
    """Reads a core cannot serve (the main thread's stack left out, as lldb
    21's save-core can do; then every read) say that the core lacks the
    memory and how to write a complete core; then the debugger goes on."""
    h = hostile
    cmd, cls, py, exc = _DEBUGGERS[debugger]
    lo, hi = cores["stack"]
    commands = [
        _saved(py, cls),
        _patched_read(py, cls, "%d <= addr < %d" % (lo, hi),
                      "Cannot access memory at address 0x%x", exc),
        cmd + " --all",
        "py-sample --all",
        _patched_read(py, cls, "True", "Cannot access memory at address 0x%x", exc),
        cmd + " --all",
        py("%s.read = _pyf_saved_read" % cls),
        cmd + " --all --json",
    ]
    run = du.run_gdb if debugger == "gdb" else du.run_lldb
    s = run(commands, executable=h.target.view["executable"], core=cores[debugger])
    main = h.target.pid
    assert re.search(r"\(native %d, [^\n]*incomplete: reading [^\n]*not readable" % main,
                     s[2]), s.describe(2)
    for i in (2, 3):
        assert "stopped at memory the core file lacks" in s[i], s.describe(i)
        assert "gdb's gcore" in s[i] and "coredump_filter" in s[i], s.describe(i)
    assert "the core file does not contain this memory" in s[5], s.describe(5)
    assert "gdb's gcore" in s[5] and "Traceback" not in s[5], s.describe(5)
    assert not du.own_view_mismatches(s.json(7), h.target), s.describe(7)


def test_process_exits(hostile, pyframes, tmp_path, library_path):
    """A process that exits under a command: the API names it (PYF_ENOPROC
    or PYF_EFAULT, not a crash), CLI sample stops with a named error."""
    h = hostile
    if h.version != "3.14":
        pytest.skip("one interpreter is enough")
    from pyframes import errors
    import pty
    import select
    # a target of its own: this one is killed
    live = du.LiveTarget(du.python_for(h.version), "hostile.py", workdir=str(tmp_path))
    master = None
    with live:
        target = pyframes.attach(live.pid)
        master, slave = pty.openpty()
        cli = subprocess.Popen([sys.executable, "-m", "pyframes", "sample", "--duration", "60",
                                str(live.pid)], stdout=subprocess.PIPE, stderr=slave, env=h.env)
        os.close(slave)
        try:
            seen = b""
            while b"sampling:" not in seen:  # the progress line: sampling has begun
                ready, _, _ = select.select([master], [], [], 60)
                assert ready, "no progress line from the CLI: %r" % seen
                seen += os.read(master, 4096)
            live.stop()  # killed and reaped
            out, _ = cli.communicate(timeout=60)
            err = seen
            try:
                while True:
                    ready, _, _ = select.select([master], [], [], 0)
                    if not ready:
                        break
                    err += os.read(master, 4096)
            except OSError:
                pass
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait()
            os.close(master)
        text = err.decode("utf-8", "replace")
        assert cli.returncode == 1, (cli.returncode, text)
        assert "pyframes: error: process %d exited while it was being sampled" % live.pid in text, text
        assert b"samples in" in out, out
        with pytest.raises(errors.PyframesError) as info:
            target.snapshot()
        assert info.value.name in ("PYF_ENOPROC", "PYF_EFAULT"), repr(info.value)
        target.close()
