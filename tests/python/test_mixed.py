"""Python frames on the debuggers' own backtraces: gdb's frame filter,
lldb 22's frame provider, lldb 21's frame-format hook, and `--native`.

The target (targets/mixed.py) has a thread whose Python stack is entered
from C six times (map, sorted's key, a class's __init__, a generator's
send, a ctypes callback through qsort) and blocks at a known line.  On
CPython 3.12 and 3.11 (pyenv's builds) it runs with a copy of its
libpython stripped to its .dynsym (debugger_util.stripped_older): the
sessions "without debug info" have none, those with it find the unstripped
file as its separate debug info.  3.12's entries are entry frames on the C
stack, as 3.13's; 3.11's, the _PyCFrames of its eval calls.  The
heap-frame CPythons 3.10 and 3.8 run the same way: every Python frame is
an eval call of its own; 3.10's entries are its eval calls' CFrames, 3.8
has none (its frames go by the eval loop's exported name).

Oracles, never our own output:
* the target's own view of that thread's Python stack: every Python frame
  appears once, in order;
* with debug info, the debugger's own name of the native frame that runs
  each run of Python frames: the eval loop, `_PyEval_EvalFrameDefault`;
* without debug info, the placement (which native frame, by address) is the
  one found with it, on the same stopped process;
* the native frames with the Python frames removed are exactly the
  debugger's unfiltered backtrace (`bt -no-filters`, or the backtrace with
  the provider cleared or the hook off).
"""

import os
import re
import shutil
import subprocess

import pytest

import debugger_util as du

# What this module checks is told by the names of the interpreter's static
# functions in the debugger's unwind: its sessions load the -dbg packages'
# DWARF (debugger_util.DEBUGINFO).
_debuginfo = pytest.fixture(scope="module", autouse=True)(du.sessions_with_debuginfo)

# outside the sandbox (tests/sandbox/host_gdb.sh: the host's gdb 13), the
# host's CPython only; 3.12 and 3.11 everywhere (3.12's entry frames are on
# the C stack as 3.13's, 3.11's run entries are its eval calls' _PyCFrames),
# and 3.10, 3.9 and 3.8 (3.10's CFrame markers; 3.9's and 3.8's eval calls
# counted)
VERSIONS = ((list(du.VERSIONS) if du.in_sandbox() else [v for v in du.VERSIONS if v == du.PYENV])
            + list(du.older_versions("all")) + list(du.heap_versions("all")))
EVAL = "_PyEval_EvalFrameDefault"


def _own(target, name):
    tid = int([k for k, v in target.view["thread_info"].items() if v["name"] == name][0])
    return tid, [tuple(f) for f in target.threads[tid]]


def _mixed_thread(doc, tid):
    for interp in doc["interpreters"]:
        for th in interp["threads"]:
            if th["native_thread_id"] == tid:
                return th["frames"]
    raise AssertionError("thread %d not in the document" % tid)


def _python_of(frames):
    return [(f["function"], f["filename"], f["line"]) for f in frames if f["kind"] == "python"]


def _placement(frames):
    """For each Python frame, the stack pointer of the native frame after
    it (the eval frame that runs it: its physical frame, which lldb shows
    with another pc when debug info splits it into inlined frames), None
    for frames not placed."""
    out, pending = [], 0
    for f in frames:
        if f["kind"] == "python":
            if f.get("placed", True):
                pending += 1
            else:
                out.append(None)
        else:
            out.extend([f["sp"]] * pending)
            pending = 0
    return out + [None] * pending


def _eval_names(frames):
    """The debugger's names of the native frames that run Python frames."""
    names, after_python = [], False
    for f in frames:
        if f["kind"] == "python":
            after_python = True
        elif after_python:
            names.append(f["function"])
            after_python = False
    return names


def _check_mixed(doc, tid, own, debuginfo, context):
    frames = _mixed_thread(doc, tid)
    assert _python_of(frames) == own, context
    assert all(f.get("placed", True) for f in frames if f["kind"] == "python"), context
    if debuginfo:
        assert _eval_names(frames) and set(_eval_names(frames)) == {EVAL}, (
            _eval_names(frames), context)
    return frames


_GDB_NATIVE = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)")
_GDB_PYTHON = re.compile(r"^\s+\[python\] (\S+) \(\) at (.*):(\d+)$")


def _gdb_bt(text):
    """(native frames as (level, function), Python frames) of a bt.  A frame
    without a symbol is "??" in gdb's own bt and "???" (gdb 18) or its
    address (gdb 13) once any frame filter runs (gdb's FrameDecorator): the
    same here."""
    native, python = [], []
    for line in text.splitlines():
        m = _GDB_NATIVE.match(line)
        if m:
            name = m.group(2)
            # gdb 13 with a filter names it by its address
            unnamed = name in ("???", "()") or re.match(r"^0x[0-9a-f]+$", name)
            native.append((int(m.group(1)), "??" if unnamed else name))
            continue
        m = _GDB_PYTHON.match(line)
        if m:
            python.append((m.group(1), m.group(2), int(m.group(3))))
    return native, python


@pytest.fixture(scope="module", params=VERSIONS)
def stopped(request, tmp_path_factory):
    version = request.param
    du.require("gdb", version)
    workdir = str(tmp_path_factory.mktemp("mixed-%s" % version))
    python, debug_dir = du.python_for(version), None
    if version in du.older_versions("all") + du.HEAP:
        python, debug_dir = du.stripped_older(version, workdir)
    target = du.LiveTarget(python, "mixed.py", workdir=workdir)
    target.start()
    try:
        target.tid, target.own = _own(target, "through-c")
        target.version = version
        target.core = os.path.join(workdir, "gdb.core")
        # where the sessions with debug info find it (None: the -dbg packages')
        target.debug_dir = debug_dir
        yield target
    finally:
        target.stop()


def test_heap_frames_entered_from_c(stopped):
    """3.8-3.10: every Python frame runs in an eval call of its own, so each
    is entered from C; 3.10's entry is the CFrame its call pushed on the C
    stack (each outer than the last), 3.8's unknown (0: bt places them by
    the eval loop's name).  The gdb sessions check the placement itself."""
    if stopped.version not in du.HEAP:
        pytest.skip("not a heap-frame CPython")
    import pyframes
    with pyframes.attach(stopped.pid) as target:
        (thread,) = target.snapshot(native_tid=stopped.tid, entries=True).threads()
    assert [(f.function, f.filename, f.line) for f in thread.frames] == stopped.own
    assert all(f.entry_from_c for f in thread.frames), thread.frames
    if du.minor_of(stopped.version) == "3.10":
        assert all(thread.entries) and thread.entries == sorted(set(thread.entries)), \
            [hex(e) for e in thread.entries]
    else:
        assert not any(thread.entries), [hex(e) for e in thread.entries]


def _core_file_offset(path, addr):
    """The offset in the ELF core at path of the byte at address addr (its
    PT_LOAD segment with file contents), or None."""
    import struct
    with open(path, "rb") as f:
        head = f.read(64)
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        kind, _flags, offset, vaddr, _paddr, filesz = struct.unpack_from(
            "<IIQQQQ", table, i * phentsize)
        if kind == 1 and vaddr <= addr < vaddr + filesz:
            return offset + addr - vaddr
    return None


def _through_c(core, target):
    """The thread of the through-c stack in the core (frames and entries)."""
    from pyframes.target import open_core
    with open_core(core, executable=target.view["executable"]) as t:
        for thread in t.snapshot(entries=True).threads():
            if [(f.function, f.filename, f.line) for f in thread.frames] == target.own:
                return thread
    raise AssertionError("no thread with the through-c stack in %s" % core)


def test_cframe_chain_mismatch_gives_no_entry(stopped, tmp_path):
    """3.10, gdb's core of the stopped target: each frame's entry is its
    eval call's CFrame; with one CFrame's link bent past the next (the chain
    one short of the frames), no entry is given at all, never a wrong one."""
    if du.minor_of(stopped.version) != "3.10":
        pytest.skip("3.10's CFrames")
    if not os.path.exists(stopped.core):
        _gdb_session(stopped, True)
    entries = _through_c(stopped.core, stopped).entries
    assert len(entries) > 3 and all(entries), [hex(e) for e in entries]
    bent = str(tmp_path / "bent.core")
    shutil.copyfile(stopped.core, bent)
    at = _core_file_offset(bent, entries[1] + 8)  # CFrame.previous
    assert at is not None
    with open(bent, "r+b") as f:
        f.seek(at)
        f.write(entries[3].to_bytes(8, "little"))
    thread = _through_c(bent, stopped)
    assert all(f.entry_from_c for f in thread.frames)
    assert not any(thread.entries), [hex(e) for e in thread.entries]


def _gdb_session(target, debuginfo, core=None):
    select = ("python [t.switch() for t in gdb.selected_inferior().threads() "
              "if t.ptid[1] == %d]" % target.tid)
    commands = [select, "bt", "bt -no-filters", "py-bt-fast --native --json",
                "bt -hide", "info frame-filter"]
    if core is None:
        commands.append("gcore " + target.core)
        return du.run_gdb(commands, pid=target.pid, debuginfo=debuginfo,
                          debug_dir=target.debug_dir)
    return du.run_gdb(commands, executable=target.view["executable"], core=core,
                      debuginfo=debuginfo, debug_dir=target.debug_dir)


def test_gdb_bt_places_python_frames(stopped):
    """bt with the filter: each run of Python frames under the eval frame
    that runs it, in order; the native frames are bt -no-filters's."""
    with_info = _gdb_session(stopped, True)
    frames = _check_mixed(with_info.json(3), stopped.tid, stopped.own, True,
                          with_info.describe(3))
    native, python = _gdb_bt(with_info[1])
    assert python == stopped.own, with_info.describe(1)
    plain_native, plain_python = _gdb_bt(with_info[2])
    assert not plain_python and [n for n, _ in native] == [n for n, _ in plain_native], \
        with_info.describe(2)
    assert native == plain_native, with_info.describe(1)
    hidden_native, hidden_python = _gdb_bt(with_info[4])
    assert not hidden_python and hidden_native == native, with_info.describe(4)
    assert "pyframes" in with_info[5], with_info.describe(5)
    # without debug info: the same native frames hold the same Python frames
    without = _gdb_session(stopped, False)
    bare = _check_mixed(without.json(3), stopped.tid, stopped.own, False, without.describe(3))
    assert _placement(bare) == _placement(frames), without.describe(3)


def test_gdb_core_file(stopped):
    """The same from the core gdb wrote, through gdb's reads."""
    if not os.path.exists(stopped.core):
        _gdb_session(stopped, True)
    s = _gdb_session(stopped, True, core=stopped.core)
    _check_mixed(s.json(3), stopped.tid, stopped.own, True, s.describe(3))
    _native, python = _gdb_bt(s[1])
    assert python == stopped.own, s.describe(1)


def test_gdb_filter_off_and_failure(stopped):
    """set pyframes frame-filter off: plain bt; a filter that fails (the
    inferior unreadable) still prints every native frame, and says why."""
    if not os.path.exists(stopped.core):
        _gdb_session(stopped, True)
    select = ("python [t.switch() for t in gdb.selected_inferior().threads() "
              "if t.ptid[1] == %d]" % stopped.tid)
    s = du.run_gdb([
        select, "set pyframes frame-filter off", "bt", "set pyframes frame-filter on",
        "python PyframesGdbAdapter.read = lambda self, addr, size: 1 / 0",
        "bt", "bt -no-filters", "print 1+1",
    ], executable=stopped.view["executable"], core=stopped.core, debug_dir=stopped.debug_dir)
    native, python = _gdb_bt(s[2])
    assert native and not python, s.describe(2)
    failed_native, failed_python = _gdb_bt(s[5])
    plain_native, _ = _gdb_bt(s[6])
    assert not failed_python and [n for n, _ in failed_native] == [n for n, _ in plain_native], \
        s.describe(5)
    assert "pyframes: Python frames not shown" in s[5], s.describe(5)
    assert "$1 = 2" in s[7], s.describe(7)


_LLDB_HOOK = re.compile(r'^\s+\[python\] File "(.*)", line (\d+), in (\S+)$')
_LLDB_FRAME = re.compile(r"^\s*\*?\s*frame #(\d+): 0x[0-9a-f]+ ([^`\s]+`[^(\s]+)")
_LLDB_SYNTHETIC = re.compile(r"^\s*\*?\s*frame #\d+: \[python\] (\S+) at (\S+):(\d+)")


def _lldb_bt(text):
    """(native frames as module`function, hook lines, synthetic frames) of
    the selected thread's backtrace ("* thread #N" up to the next thread:
    lldb's event thread may print another thread's stop banner into the
    output meanwhile)."""
    native, hook, synthetic = [], [], []
    lines, inside = [], False
    for line in text.splitlines():
        if re.match(r"^\s*\*?\s*thread #\d+", line):
            inside = line.startswith("* thread #")
            continue
        if inside:
            lines.append(line)
    for line in lines:
        m = _LLDB_FRAME.match(line)
        if m:
            native.append(m.group(2))  # module`function (inline frames' pcs may differ)
            continue
        m = _LLDB_HOOK.match(line)
        if m:
            hook.append((m.group(3), m.group(1), int(m.group(2))))
            continue
        m = _LLDB_SYNTHETIC.match(line)
        if m:
            synthetic.append((m.group(1), os.path.basename(m.group(2)), int(m.group(3))))
    return native, hook, synthetic


def _unrepeated(frames):
    """frames without a frame repeating the one before it."""
    return [f for i, f in enumerate(frames) if i == 0 or frames[i - 1] != f]


def test_lldb21_native_and_frame_format(stopped):
    if not du.lldb_usable():
        pytest.skip("no lldb")
    s = du.run_lldb([
        "script lldb.process.SetSelectedThreadByID(%d)" % stopped.tid,
        "pystack --native --json", "pyframes-bt on", "bt", "pyframes-bt off", "bt",
    ], pid=stopped.pid, debug_dir=stopped.debug_dir)
    _check_mixed(s.json(1), stopped.tid, stopped.own, True, s.describe(1))
    native_on, hook, _ = _lldb_bt(s[3])
    native_off, hook_off, _ = _lldb_bt(s[5])
    assert hook == stopped.own, s.describe(3)
    assert not hook_off and native_on == native_off, s.describe(5)


def test_lldb22_frame_provider(stopped):
    """pyframes-bt on registers the frame provider: the Python frames are
    frames of their own in bt; off removes it."""
    if not du.lldb22_usable():
        pytest.skip("no lldb 22")
    # the thread is selected first: selecting it with the provider on
    # makes lldb 22.1's event thread (the stop banner) ask the provider
    # while the command thread holds lldb's locks (docs/debuggers.md)
    commands = [
        "script lldb.process.SetSelectedThreadByID(%d)" % stopped.tid,
        "pyframes-bt on", "target frame-provider list",
        "bt", "pystack --native --json", "pyframes-bt off", "target frame-provider list",
        "target frame-provider clear", "bt",
    ]
    own = [(f, os.path.basename(path), line) for f, path, line in stopped.own]

    def problems(s):
        """What is wrong with session s (empty: nothing)."""
        if "pyframes" not in s[2]:
            return ["provider not listed: " + s.describe(2)]
        if "PyframesFrameProvider" in s[6]:
            return ["provider still listed: " + s.describe(6)]
        native, _hook, synthetic = _lldb_bt(s[3])
        if synthetic != own:
            return ["bt with the provider: %r != %r\n%s" % (synthetic, own, s.describe(3))]
        plain, _, plain_synthetic = _lldb_bt(s[8])
        # lldb 22.1 under load has listed a frame twice in a row after the
        # clear (libc's __syscall_cancel_arch_end at the top): its own
        # unwinding, compared without such repeats
        if plain_synthetic or _unrepeated(native) != _unrepeated(plain):
            return ["bt after clear: %r, %r (with the provider: %r)\n%s" % (
                plain_synthetic, plain, native, s.describe(8))]
        return []

    # lldb 22.1 sometimes keeps the frames its event thread made for the
    # selection banner (without the provider, or with it after a clear), or
    # deadlocks there (docs/debuggers.md): up to three sessions, one of
    # which must be right in every respect
    found = []
    for _ in range(3):
        try:
            s = du.run_lldb(commands, pid=stopped.pid, lldb="lldb-22", timeout=90,
                            debug_dir=stopped.debug_dir)
        except subprocess.TimeoutExpired:
            found.append("lldb 22.1 deadlocked between its event and command threads")
            continue
        found = problems(s)
        if not found:
            break
    assert not found, "\n".join(found)
    _check_mixed(s.json(4), stopped.tid, stopped.own, True, s.describe(4))


LIMITS = (1, 2, 3, 5, 8)


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_native_limit_places_every_frame_shown(stopped, debugger):
    """--native --limit N: the N innermost Python frames, each placed under
    the eval frame that runs it, as without --limit (where the last run
    shown goes on past N, the library hands over its eval call's entry,
    found among the frames only counted); the rest counted.  Every N from
    a cut inside a run to one past several entries from C."""
    du.require(debugger)
    if debugger == "gdb":
        select = ("python [t.switch() for t in gdb.selected_inferior().threads() "
                  "if t.ptid[1] == %d]" % stopped.tid)
        command = "py-bt-fast"
        run = du.run_gdb
    else:
        select = "script lldb.process.SetSelectedThreadByID(%d)" % stopped.tid
        command = "pystack"
        run = du.run_lldb
    commands = [select, "%s --native --json" % command]
    commands += ["%s --native --json --limit %d" % (command, n) for n in LIMITS]
    commands.append("%s --native --limit 3 --no-source" % command)
    s = run(commands, pid=stopped.pid)
    whole = _check_mixed(s.json(1), stopped.tid, stopped.own, True, s.describe(1))
    for at, n in enumerate(LIMITS, 2):
        doc = s.json(at)
        frames = _check_mixed(doc, stopped.tid, stopped.own[:n], True, s.describe(at))
        assert _placement(frames) == _placement(whole)[:n], s.describe(at)
        native = [f for f in frames if f["kind"] == "native"]
        assert native == [f for f in whole if f["kind"] == "native"], s.describe(at)
        (row,) = [t for i in doc["interpreters"] for t in i["threads"]
                  if t["native_thread_id"] == stopped.tid]
        assert row["more_frames"] == len(stopped.own) - n, s.describe(at)
    text = s[len(commands) - 1]
    assert "not placed" not in text, s.describe(len(commands) - 1)
    assert "[%d more Python frames not shown: --limit 3]" % (len(stopped.own) - 3) in text, \
        s.describe(len(commands) - 1)


@pytest.mark.parametrize("version", ["3.14", "3.15"] if du.in_sandbox() else [])
def test_jit_loses_no_frame(version, tmp_path):
    """With the JIT on, blocked in a call made from JIT code: every Python
    frame is shown, placed where the native unwind reaches, the rest under
    a marker."""
    du.require("gdb", version)
    with du.LiveTarget(du.python_for(version), "mixed.py", workdir=str(tmp_path),
                       args=["--jit-loop", "60000"]) as target:
        tid, own = _own(target, "through-c")
        select = ("python [t.switch() for t in gdb.selected_inferior().threads() "
                  "if t.ptid[1] == %d]" % tid)
        s = du.run_gdb([select, "py-bt-fast --native --json", "py-bt-fast --native --no-source",
                        "bt"], pid=target.pid)
        frames = _mixed_thread(s.json(1), tid)
        assert _python_of(frames) == own, s.describe(1)
        unplaced = [f for f in frames if f["kind"] == "python" and not f.get("placed", True)]
        if version == "3.14":
            # 3.14's JIT code stops native unwinding: the outer runs cannot
            # be placed, and are shown after the marker
            assert unplaced, s.describe(2)
            assert re.search(r"^\[%d Python frames? not placed: " % len(unplaced), s[2], re.M), \
                s.describe(2)
            assert re.search(r"\[python\] %d frames? not placed" % len(unplaced), s[3]), \
                s.describe(3)
        else:
            # 3.15 registers its JIT code with the debugger: all placed
            assert "py::jit" in s[2] and not unplaced, s.describe(2)


def test_lldb_core_without_debug_info_and_failing(stopped):
    """lldb on gdb's core: --native with and without debug info (the same
    placement), the frame-format hook, and reads that fail: pystack says
    why and bt still prints every native frame."""
    if not du.lldb_usable():
        pytest.skip("no lldb")
    if not os.path.exists(stopped.core):
        _gdb_session(stopped, True)
    exe = stopped.view["executable"]
    select = "script lldb.process.SetSelectedThreadByID(%d)" % stopped.tid
    s = du.run_lldb([select, "pystack --native --json", "pyframes-bt on", "bt"],
                    executable=exe, core=stopped.core, debug_dir=stopped.debug_dir)
    frames = _check_mixed(s.json(1), stopped.tid, stopped.own, True, s.describe(1))
    _native, hook, _ = _lldb_bt(s[3])
    assert hook == stopped.own, s.describe(3)
    bare = du.run_lldb([select, "pystack --native --json"], executable=exe,
                       core=stopped.core, debuginfo=False)
    assert _placement(_check_mixed(bare.json(1), stopped.tid, stopped.own, False,
                                   bare.describe(1))) == _placement(frames), bare.describe(1)
    failing = du.run_lldb([
        select, "bt", "script pyframes_lldb.LldbAdapter.read = lambda self, addr, size: 1 / 0",
        "pystack --native", "pyframes-bt on", "bt", "script print(2 + 2)",
    ], executable=exe, core=stopped.core)
    plain, _, _ = _lldb_bt(failing[1])
    native, hook, _ = _lldb_bt(failing[5])
    assert "error:" in failing[3], failing.describe(3)
    assert plain and native == plain and not hook, failing.describe(5)
    assert "frames not shown" in failing[5], failing.describe(5)
    assert "4" in failing[6], failing.describe(6)


def test_bt_of_a_process_without_python():
    """With the plugin loaded, bt of a process that runs no Python is gdb's
    own, without a word from pyframes, every time."""
    du.require("gdb")
    proc = du.sleeper()
    try:
        s = du.run_gdb(["bt", "bt", "bt -no-filters"], pid=proc.pid)
        native, python = _gdb_bt(s[0])
        plain, _ = _gdb_bt(s[2])
        assert native and not python and native == plain, s.describe(0)
        assert "pyframes" not in s[0] and "pyframes" not in s[1], s.describe(1)
    finally:
        proc.kill()
        proc.wait()


def test_runs_without_entries_go_by_the_eval_loops_name():
    """3.8 and 3.9 (no entry known): the n-th physical frame named
    _PyEval_EvalFrameDefault (its split-off .cold part too; inlined frames
    never) runs the n-th run; with the frames past --limit counted among
    the eval calls; and none placed, with the counts said, when the
    backtrace does not hold one such frame per eval call."""
    from pyframes import mixed
    names = ["read", "leaf_c", EVAL, "call", EVAL + ".cold", EVAL, "start"]
    native = [mixed.NativeFrame(i, 0x1000 + i, 0x100 * (i + 1), name, None, False)
              for i, name in enumerate(names)]
    native.insert(3, mixed.NativeFrame(9, 0x1009, None, EVAL, None, True))  # inlined
    runs = [mixed.Run([name], 0) for name in ("a", "b", "c")]
    placement = mixed.place(native, runs)
    assert not placement.unplaced
    assert {i: placement.frames_at(i) for i in placement.at} == {
        2: ["a"], 5: ["b"], 6: ["c"]}
    cut = mixed.place(native, runs[:2], more=1)
    assert not cut.unplaced and sorted(cut.at) == [2, 5]
    for wrong in (mixed.place(native, runs[:2]), mixed.place(native, runs, more=1)):
        assert wrong.unplaced and not wrong.at
        assert "native frames are named %s for" % EVAL in wrong.reason
