"""Core files read by the command line, no debugger: ``pyframes dump CORE``.

Real cores of real CPython processes (3.13, 3.14, 3.15, pyenv's 3.13 and
its 3.12, 3.11, 3.10 and 3.8; the locks scenario from 3.11): the kernel's
own (the target crashes itself, SIGSEGV or SIGABRT, with no limit on its
core: targets/_common.py's PYFRAMES_CRASH),
gdb's ``gcore`` and lldb's ``process save-core`` (a minidump) of a live
one.  Oracles: the target's own record (each thread's stack at the line
where it blocks or crashes, its name; the values scenario's repr() of
every local, values.json; the locks scenario's record of what each thread
holds and waits for, locks.json), and gdb's reading of the same core
(lldb's of its own minidump).

Then the same core compressed with zstd, xz, lz4 and gzip (each tool's
output, read in place), cut short at several points, its executable
replaced on disk (a mismatch named by build id), read with --sysroot from
a copy of the files it names, and several cores at once with --group
(the crashes that are the same, once).
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys

import pytest

import conftest
import debugger_util as du
from livetarget import LiveTarget
from test_locks import Scenario as LocksScenario
from test_locks import _document as locks_document
from test_locks import _mismatches as locks_mismatches
from test_values import THREADS as VALUE_THREADS
from test_values import _json_frames, mismatches

# the compatibility matrix's reader (tests/python/compat.py)
pytestmark = pytest.mark.readers("CLI cores")

CLI_TIMEOUT = 300
COMPRESSORS = {  # name: (the tool's command writing the compressed file to stdout)
    "zstd": ["zstd", "-q", "-c"],
    "xz": ["xz", "-c", "-T1", "-1"],
    "lz4": ["lz4", "-q", "-c"],
    "gzip": ["gzip", "-c", "-1"],
}


def _interpreters(heap=True):
    """3.13-3.15, pyenv's 3.13, 3.12 and 3.11, and with heap the heap-frame
    versions, 3.10, 3.9 and 3.8."""
    chosen = [i for i in conftest.INTERPRETERS if i.kind in ("release", "pyenv")]
    chosen += conftest.older_interpreters("all")
    if heap:
        chosen += list(conftest.HEAP_INTERPRETERS)
    return [pytest.param(i, id=i.name) for i in chosen] or [pytest.param(None, id="none")]


def _require(interp):
    if interp is None:
        conftest.require_interpreters()


def kernel_core(workdir, pid):
    """Where the kernel wrote the core of process pid that ran in workdir
    (/proc/sys/kernel/core_pattern: a plain name, with core_uses_pid or
    %p); skips (fails in the sandbox) when the kernel hands cores to a
    program (a pattern starting with |: systemd-coredump, apport)."""
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if pattern.startswith("|") or "%" in pattern.replace("%p", ""):
        why = ("kernel cores cannot be collected here: core_pattern is %r (a program "
               "or a name this test does not expand)" % pattern)
        if conftest.in_sandbox():
            pytest.fail(why)
        pytest.skip(why)
    name = pattern.replace("%p", str(pid))
    try:
        with open("/proc/sys/kernel/core_uses_pid") as f:
            if f.read().strip() == "1" and "%p" not in pattern:
                name += ".%d" % pid
    except OSError:
        pass
    path = name if os.path.isabs(name) else os.path.join(workdir, name)
    assert os.path.isfile(path), "no core at %s (core_pattern %r)" % (path, pattern)
    return path


def run_cli(env, *args):
    return subprocess.run([sys.executable, "-m", "pyframes"] + [str(a) for a in args],
                          capture_output=True, timeout=CLI_TIMEOUT, env=env,
                          stdin=subprocess.DEVNULL)


def dump_json(env, *args):
    res = run_cli(env, "dump", *(list(args) + ["--json"]))
    assert res.returncode == 0, res.stderr.decode()
    return json.loads(res.stdout)


def threads_of(doc):
    return {t["native_thread_id"]: t for i in doc["interpreters"] for t in i["threads"]}


def frames_of(thread):
    return [(f["function"], f["filename"], f["line"]) for f in thread["frames"]]


def minor_of(target):
    return int(target.doc["hexversion"]) >> 16 & 0xFF


#: The first version whose thread names pyframes reads: every one it reads
#: (3.8-3.10 too)
NAMES_FROM = 8


def view_mismatches(target, doc, frames=True, unreadable=False):
    """Each thread the target recorded: its stack (unless not ``frames``:
    a program that records its view before the line it blocks on; with
    ``unreadable`` a frame may be "???": its code object's type could not
    be read) and name in the document as the target saw them."""
    problems = []
    got = threads_of(doc)
    names = {int(tid): info["name"] for tid, info in target.doc["thread_info"].items()}
    for tid, want in target.threads.items():
        if tid not in got:
            problems.append("thread %d (%s) missing" % (tid, names.get(tid)))
            continue
        have = frames_of(got[tid])
        if frames and have != want and not (
                unreadable and len(have) == len(want) and
                all(h == w or h[0] == "???" for h, w in zip(have, want))):
            problems.append("thread %d: frames %s\n    expected %s" % (tid, have, want))
        name = got[tid]["name"]
        if name != names.get(tid) and not (name is None and (
                minor_of(target) < NAMES_FROM or unreadable)):
            problems.append("thread %d: name %r, expected %r" % (tid, name, names.get(tid)))
    return problems


def locals_mismatches(c, doc):
    """The values scenario's locals (test_values.mismatches) of both its
    threads; its oracle's kinds of variables (cell, free, local) are
    3.13's, so on 3.11 and 3.12 only the values are compared."""
    problems = []
    for name in VALUE_THREADS:
        problems += mismatches(c.oracle, c.tids[name], _json_frames(doc, c.tids[name]))
    if minor_of(c.target) < 13:
        problems = [p for p in problems if not re.search(r": \S+ is '\w+', expected '\w+'$", p)]
    return problems


class Crash(object):
    pass


def crashed(interp, script, how, workdir, **kw):
    """A Crash: the target that ran script and crashed (how: segv, abort),
    its record and its kernel core."""
    _require(interp)
    c = Crash()
    c.interp = interp
    c.target = LiveTarget(interp.path, script, str(workdir), handshake="file", crash=how,
                          **kw)
    c.target.start()
    c.core = kernel_core(c.target.workdir, c.target.pid)
    c.main = c.target.doc["pid"]
    c.minor = int(c.target.doc["hexversion"]) >> 16 & 0xFF
    return c


@pytest.fixture(scope="module", params=_interpreters())
def values_crash(request, tmp_path_factory):
    """The values scenario's kernel core: SIGSEGV in the main thread."""
    interp = request.param
    _require(interp)
    c = crashed(interp, "values_scenario.py", "segv",
                tmp_path_factory.mktemp("core-values-%s" % interp.name))
    with open(os.path.join(c.target.workdir, "values.json")) as f:
        c.oracle = json.load(f)
    c.tids = {name: c.target.tid_by_name()[name] for name in VALUE_THREADS}
    yield c
    c.target.stop()


# not on 3.8-3.10: what their locks scenario can tell (no value stack of a
# running frame) is test_locks' subject
@pytest.fixture(scope="module", params=_interpreters(heap=False))
def locks_crash(request, tmp_path_factory):
    """The locks scenario's kernel core: SIGABRT in the main thread."""
    interp = request.param
    _require(interp)
    c = crashed(interp, "locks_scenario.py", "abort",
                tmp_path_factory.mktemp("core-locks-%s" % interp.name))
    s = LocksScenario()
    s.interp, s.target, s.minor = interp, c.target, c.minor
    with open(os.path.join(c.target.workdir, "locks.json")) as f:
        s.truth = json.load(f)
    c.scenario = s
    yield c
    c.target.stop()


def _signal_of(doc, tid):
    return threads_of(doc)[tid].get("signal")


# ---- the kernel's cores ---------------------------------------------------------


def test_kernel_segv_core(values_crash, cli_env):
    """Stacks, names, the locals of every frame (the target's repr()) and
    the thread that received SIGSEGV, from the kernel's core."""
    c = values_crash
    doc = dump_json(cli_env, c.core, "--locals")
    problems = view_mismatches(c.target, doc) + locals_mismatches(c, doc)
    assert not problems, "\n".join(problems)
    core = doc["core"]
    assert core["signal"] == {"name": "SIGSEGV", "number": 11, "code": 1,
                              "code_name": "SEGV_MAPERR", "address": 0,
                              "native_thread_id": c.main}, core
    assert core["pid"] == c.target.pid and core["format"] == "elf" and not core["partial"]
    assert core["compression"] is None and core["files"] == [], core
    assert _signal_of(doc, c.main)["name"] == "SIGSEGV"
    assert [tid for tid, t in threads_of(doc).items() if "signal" in t] == [c.main]
    assert doc["pid"] is None  # not a live process's

    res = run_cli(cli_env, "dump", c.core, "--no-source")
    assert res.returncode == 0, res.stderr.decode()
    text = res.stdout.decode()
    first = text.splitlines()[0]
    assert first.startswith("core %s: process %d (" % (c.core, c.target.pid)), first
    assert first.endswith("SIGSEGV (SEGV_MAPERR at 0x0) received by native thread %d"
                          % c.main), first
    head = [line for line in text.splitlines() if "native %d," % c.main in line]
    name = '"MainThread" ' if c.minor >= NAMES_FROM else ""
    assert len(head) == 1 and head[0].startswith('Thread 0x') and \
        '%s(native %d, received SIGSEGV (SEGV_MAPERR at 0x0), interpreter 0' % (
            name, c.main) in head[0], head


def test_kernel_abort_core(locks_crash, cli_env):
    """Stacks, names and the locks each thread holds and waits for (the
    target's record) and the thread that received SIGABRT."""
    c = locks_crash
    doc = dump_json(cli_env, c.core, "--locks")
    problems = view_mismatches(c.target, doc, frames=False)  # it records, then blocks
    problems += locks_mismatches(c.scenario, *locks_document(c.scenario, doc), native=True)
    assert not problems, "\n".join(problems)
    assert doc["core"]["signal"]["name"] == "SIGABRT"
    assert doc["core"]["signal"]["code_name"] == "SI_TKILL"  # abort(): tgkill
    assert doc["core"]["signal"]["address"] is None
    assert _signal_of(doc, c.main)["number"] == 6


def test_gdb_reads_the_same(values_crash, cli_env):
    """gdb on the same core (the plugin's py-bt-fast --all --json) reads
    the same stacks and names; its thread header names the signal too."""
    c = values_crash
    du.require("gdb")
    ours = dump_json(cli_env, c.core)
    s = du.run_gdb(["py-bt-fast --all --json", "py-bt-fast --thread %d" % c.main],
                   executable=c.target.doc["executable"], core=c.core)
    theirs = s.json(0)
    mine, gdbs = threads_of(ours), threads_of(theirs)
    assert sorted(mine) == sorted(gdbs), s.describe(0)
    for tid in mine:
        assert frames_of(mine[tid]) == frames_of(gdbs[tid]), (tid, s.describe(0))
        assert mine[tid]["name"] == gdbs[tid]["name"], tid
    assert gdbs[c.main]["signal"] == _signal_of(ours, c.main), s.describe(0)
    assert "received SIGSEGV (SEGV_MAPERR at 0x0)" in s[1], s.describe(1)


def test_lldb_names_the_signal(values_crash, cli_env):
    """lldb on the kernel's core: the same stacks, and the thread that
    received the signal named in its header and JSON (the library's core
    reader reads the core's signal for it)."""
    c = values_crash
    du.require("lldb")
    ours = threads_of(dump_json(cli_env, c.core))
    s = du.run_lldb(["pystack --all --json", "pystack --thread %d" % c.main],
                    executable=c.target.doc["executable"], core=c.core)
    theirs = threads_of(s.json(0))
    for tid in c.target.threads:
        assert frames_of(theirs[tid]) == frames_of(ours[tid]), (tid, s.describe(0))
    assert theirs[c.main]["signal"] == ours[c.main]["signal"], s.describe(0)
    assert "received SIGSEGV (SEGV_MAPERR at 0x0)" in s[1], s.describe(1)


def _mixed(thread):
    """A --native --json thread as [(native pc, [Python frames above it])],
    the physical native frames only (gdb adds frames for inlined code)."""
    out, above = [], []
    for f in thread["frames"]:
        if f["kind"] == "python":
            above.append((f["function"], f["filename"], f["line"], f.get("placed", True)))
        elif f["sp"] is not None:
            out.append((f["address"], above))
            above = []
        elif above:  # an inlined frame: its Python frames go to its physical one
            continue
    return out, above


def test_native_equals_gdbs(values_crash, cli_env):
    """--native on the kernel's core (libdw's unwind from each thread's
    registers, through the core reader): each thread's native frames and
    the Python frames placed on them, as gdb unwinds and places them on the
    same core (py-bt-fast --native --all --json)."""
    c = values_crash
    du.require("gdb")
    res = run_cli(cli_env, "dump", c.core, "--native", "--json")
    if res.returncode != 0 and b"built without libdw" in res.stderr:
        why = res.stderr.decode().strip()
        if conftest.in_sandbox():
            pytest.fail(why)
        pytest.skip(why)
    assert res.returncode == 0, res.stderr.decode()
    ours = threads_of(json.loads(res.stdout))
    s = du.run_gdb(["py-bt-fast --native --all --json"], executable=c.target.doc["executable"],
                   core=c.core)
    theirs = threads_of(s.json(0))
    assert sorted(ours) == sorted(theirs), s.describe(0)
    for tid in ours:
        mine, theirs_ = _mixed(ours[tid]), _mixed(theirs[tid])
        # gdb adds the frames of tail calls it knows from DWARF's call sites
        # (each with a stack pointer): ours are its others, in order, each
        # with the same Python frames placed above it; its own hold none
        pcs = set(pc for pc, _ in mine[0])
        assert [e for e in theirs_[0] if e[0] in pcs] == mine[0], (tid, s.describe(0))
        assert all(not above for pc, above in theirs_[0] if pc not in pcs), theirs_
        assert mine[1] == theirs_[1] and len(mine[0]) > 3, (tid, mine)
    text = run_cli(cli_env, "dump", c.core, "--native", "--no-source").stdout.decode()
    assert text.startswith("core %s: process %d" % (c.core, c.target.pid)), text
    assert "(native %d, received SIGSEGV (SEGV_MAPERR at 0x0)" % c.main in text, text
    assert "    [python] File " in text and " in _PyEval_EvalFrameDefault" in text, text


# ---- cores a debugger wrote of a live process -------------------------------------


@pytest.fixture(scope="module", params=_interpreters())
def saved(request, tmp_path_factory):
    """The values scenario, alive (no address randomization: what lldb's
    minidump writer leaves out depends on the layout), saved by gdb's
    gcore and by lldb's process save-core; the cores outlive it."""
    interp = request.param
    _require(interp)
    workdir = tmp_path_factory.mktemp("core-saved-%s" % interp.name)
    c = Crash()
    c.interp = interp
    with LiveTarget(interp.path, "values_scenario.py", str(workdir), handshake="file",
                    aslr=False) as target:
        c.target = target
        with open(os.path.join(target.workdir, "values.json")) as f:
            c.oracle = json.load(f)
        c.tids = {name: target.tid_by_name()[name] for name in VALUE_THREADS}
        c.cores = {}
        if du.gdb_usable():
            path = str(workdir / "gdb.core")
            du.run_gdb(["gcore " + path], pid=target.pid, plugin=False)
            c.cores["gcore"] = path
        if du.lldb_usable():
            path = str(workdir / "lldb.dmp")
            du.run_lldb(["process save-core --style full " + path], pid=target.pid,
                        plugin=False)
            c.cores["lldb"] = path
    yield c


@pytest.mark.parametrize("writer", ["gcore", "lldb"])
def test_debugger_written_core(saved, writer, cli_env):
    """gdb's gcore (an ELF core) and lldb's save-core (a minidump) of the
    live values scenario: stacks, names, locals as the target holds them."""
    du.require("gdb" if writer == "gcore" else "lldb")
    path = saved.cores.get(writer)
    assert path and os.path.exists(path), "%s wrote no core" % writer
    res = run_cli(cli_env, "dump", path, "--locals", "--json")
    if res.returncode != 0 and writer == "lldb":
        _xfail_if_lldb_fails_too(saved, path, res.stderr.decode())
    assert res.returncode == 0, res.stderr.decode()
    doc = json.loads(res.stdout)
    if writer == "lldb":
        du.xfail_if_thread_unlisted(doc, [int(t) for t in saved.target.threads])
    problems = view_mismatches(saved.target, doc) + locals_mismatches(saved, doc)
    assert not problems, "\n".join(problems)
    assert doc["core"]["format"] == ("elf" if writer == "gcore" else "minidump")
    assert doc["core"]["pid"] == saved.target.pid


def _xfail_if_lldb_fails_too(saved, path, ours):
    """lldb's minidump writer leaves out memory that depends on the layout
    (docs/debuggers.md, "Core files"): when lldb's own reading of its
    minidump fails the same way, the minidump lacks it (an xfail naming
    both); otherwise the failure is ours."""
    s = du.run_lldb(["pystack --all"], executable=saved.target.doc["executable"], core=path)
    reason = ours.strip().split(path + ": ", 1)[-1]
    if reason and reason.split(" (pyframes")[0] in s[0]:
        pytest.xfail("lldb's minidump lacks what the runtime needs; lldb's own reading "
                     "fails the same way: %s" % reason)


def test_lldb_reads_its_minidump_the_same(saved, cli_env):
    """lldb's own reading of its minidump (the plugin's pystack --all
    --json) and the command line's agree."""
    du.require("lldb")
    path = saved.cores.get("lldb")
    assert path, "lldb wrote no core"
    res = run_cli(cli_env, "dump", path, "--json")
    if res.returncode != 0:
        _xfail_if_lldb_fails_too(saved, path, res.stderr.decode())
    ours = threads_of(json.loads(res.stdout))
    s = du.run_lldb(["pystack --all --json"], executable=saved.target.doc["executable"],
                    core=path)
    du.xfail_if_thread_unlisted(s.json(0), [int(t) for t in saved.target.threads])
    theirs = threads_of(s.json(0))
    for tid in saved.target.threads:
        assert frames_of(ours[tid]) == frames_of(theirs[tid]), (tid, s.describe(0))


# ---- compressed, cut short ------------------------------------------------------


def _without(doc, *keys):
    doc = json.loads(json.dumps(doc))
    for k in keys:
        doc["core"].pop(k)
    return doc


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_compressed_core(values_crash, name, cli_env, tmp_path):
    """The same core compressed by the tool (zstd, xz, lz4, gzip) reads as
    the plain core, locals and all; cut in half, it is read as far as it
    goes and says so."""
    from pyframes import cores
    c = values_crash
    tool = shutil.which(COMPRESSORS[name][0])
    if tool is None:
        why = "%s is not installed (the sandbox root's package list has it)" % name
        if conftest.in_sandbox():
            pytest.fail(why)
        pytest.skip(why)
    if name not in cores.compressions():
        pytest.fail("this libpyframes reads no %s cores (built without its library)" % name)
    packed = str(tmp_path / ("core." + name))
    with open(c.core, "rb") as src, open(packed, "wb") as out:
        subprocess.run(COMPRESSORS[name], stdin=src, stdout=out, check=True, timeout=300)
    plain = dump_json(cli_env, c.core, "--locals")
    doc = dump_json(cli_env, packed, "--locals")
    assert doc["core"]["compression"] == name
    assert _without(doc, "file", "compression") == _without(plain, "file", "compression")

    half = str(tmp_path / ("half." + name))
    with open(packed, "rb") as f, open(half, "wb") as out:
        out.write(f.read(os.path.getsize(packed) // 2))
    res = run_cli(cli_env, "dump", half, "--json")
    assert b"Traceback" not in res.stderr, res.stderr.decode()
    if res.returncode == 0:
        core = json.loads(res.stdout)["core"]
        assert core["partial"] and "stream ends early" in core["problem"], core
    else:
        assert res.returncode == 1 and res.stderr.count(b"\n") == 1, res.stderr.decode()


@pytest.mark.parametrize("fraction", [0.001, 0.02, 0.3, 0.6, 0.95])
def test_cut_short_core(values_crash, fraction, cli_env, tmp_path):
    """The core cut short (inside its notes, then ever later): a named
    error, or the stacks read as far as the core goes, what it lacks
    said (the core partial; a thread whose memory is gone incomplete,
    never a frame that was not there)."""
    c = values_crash
    cut = str(tmp_path / "cut")
    size = os.path.getsize(c.core)
    with open(c.core, "rb") as f, open(cut, "wb") as out:
        out.write(f.read(int(size * fraction)))
    res = run_cli(cli_env, "dump", cut, "--json")
    assert b"Traceback" not in res.stderr, res.stderr.decode()
    if res.returncode != 0:
        err = res.stderr.decode()
        assert res.returncode == 1 and err.count("\n") == 1 and cut in err, err
        return
    doc = json.loads(res.stdout)
    assert doc["core"]["partial"] and "cut short" in doc["core"]["problem"], doc["core"]
    for tid, thread in threads_of(doc).items():
        if tid is None:  # a thread state in what the core lacks: said, never made up
            assert not thread["complete"] and thread["error"] and not thread["frames"], thread
            continue
        want = c.target.threads.get(tid)
        got = frames_of(thread)
        # each frame the real one, or marked unreadable ("???": its code
        # object lies in what the core lacks); a complete chain all of them
        assert want is not None and len(got) <= len(want), (tid, got, want)
        assert all(g == w or g[0] == "???" for g, w in zip(got, want)), (tid, got, want)
        if thread["complete"]:
            assert len(got) == len(want), (tid, got, want)
        else:
            assert thread["error"], thread
    text = run_cli(cli_env, "dump", cut, "--no-source")
    assert b"note: the core is partial" in text.stdout, text.stdout.decode()


def _file_offset(core, addr):
    """Where the ELF core holds addr (a PT_LOAD with its bytes), else None."""
    with open(core, "rb") as f:
        header = f.read(64)
        phoff, = struct.unpack_from("<Q", header, 32)
        phentsize, phnum = struct.unpack_from("<HH", header, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        kind, _flags, offset, vaddr, _paddr, filesz = struct.unpack_from("<IIQQQQ", table,
                                                                       i * phentsize)
        if kind == 1 and vaddr <= addr < vaddr + filesz:
            return offset + addr - vaddr
    return None


def test_core_cut_inside_the_interpreter_state(values_crash, pyframes, cli_env, tmp_path):
    """The core cut where the interpreter state starts (on 3.12+ inside
    _PyRuntime, whose head the core still holds): one line naming the core
    and what it lacks, whichever read finds the end."""
    from pyframes.target import open_core
    c = values_crash
    with open_core(c.core) as t:
        addr = t.snapshot().interpreters[0].addr
    at = _file_offset(c.core, addr)
    assert at is not None, hex(addr)
    cut = str(tmp_path / "cut")
    with open(c.core, "rb") as f, open(cut, "wb") as out:
        out.write(f.read(at))
    res = run_cli(cli_env, "dump", cut)
    err = res.stderr.decode()
    assert res.returncode == 1 and err.count("\n") == 1, err
    assert err.startswith("pyframes: error: core %s: " % cut) and "cut short" in err, err


# ---- files: replaced, and under a sysroot ------------------------------------------


def _private_python(interp, root):
    """A copy of a Debian release interpreter at ROOT/bin (its standard
    library where the copy looks for it), and of the target programs at
    ROOT/targets: files the core names that can be replaced or moved."""
    if interp.kind != "release" or not interp.path.startswith("/usr/bin/"):
        pytest.skip("a Debian release interpreter (a copy of one executable)")
    os.makedirs(os.path.join(root, "bin"))
    os.makedirs(os.path.join(root, "lib"))
    exe = os.path.join(root, "bin", os.path.basename(interp.path))
    shutil.copy2(interp.path, exe)
    os.symlink("/usr/lib/python" + interp.minor, os.path.join(root, "lib",
                                                            "python" + interp.minor))
    shutil.copytree(du.TARGETS, os.path.join(root, "targets"))
    return exe


@pytest.fixture(scope="module")
def private_crash(tmp_path_factory):
    """The values scenario crashed (SIGSEGV) under a private copy of
    python3.13 and of its program: ROOT/bin/python3.13, ROOT/targets."""
    interp = next((i for i in conftest.INTERPRETERS
                   if i.kind == "release" and i.minor == "3.13"), None)
    if interp is None:
        conftest.release_python("3.13")
    base = tmp_path_factory.mktemp("core-private")
    root = str(base / "opt")
    exe = _private_python(interp, root)
    c = crashed(conftest.Interpreter("private-3.13", exe, "3.13", "release"),
                os.path.join(root, "targets", "values_scenario.py"), "segv", base / "work")
    with open(os.path.join(c.target.workdir, "values.json")) as f:
        c.oracle = json.load(f)
    c.tids = {name: c.target.tid_by_name()[name] for name in VALUE_THREADS}
    c.base, c.root, c.exe = str(base), root, exe
    yield c
    c.target.stop()


def test_sysroot(private_crash, cli_env):
    """The files the core names copied, and its program moved, under
    another directory (a copy of the machine it was written on): without
    --sysroot the missing ones are named and what the core leaves to them
    is unreadable; with it every stack, name, local and source line is
    there again, the document the same as with the files in place."""
    from pyframes import cores
    c = private_crash
    full = dump_json(cli_env, c.core, "--locals")  # the files in place
    sysroot = os.path.join(c.base, "sysroot")
    with cores.CoreFile(c.core) as core:
        named = sorted({m[4] for m in core.mappings() if m[4] and m[4].startswith("/")})
    for path in named:
        if not path.startswith(c.root + "/"):
            os.makedirs(os.path.dirname(sysroot + path), exist_ok=True)
            shutil.copy2(path, sysroot + path)
    moved = sysroot + c.root
    os.makedirs(os.path.dirname(moved), exist_ok=True)
    shutil.move(c.root, moved)
    try:
        lost = dump_json(cli_env, c.core)
        missing = {f["path"]: f["status"] for f in lost["core"]["files"]}
        assert missing.get(c.exe) == "missing", lost["core"]
        res = run_cli(cli_env, "dump", c.core)
        assert ("note: %s: not found at %s (give the directory the core's files are "
                "under: --sysroot DIR" % (c.exe, c.exe)) in res.stdout.decode(), \
            res.stdout.decode()

        doc = dump_json(cli_env, c.core, "--locals", "--sysroot", sysroot)
        assert doc == full, "with the sysroot the document differs:\n%s\n%s" % (
            doc["core"], full["core"])
        problems = view_mismatches(c.target, doc) + locals_mismatches(c, doc)
        assert not problems, "\n".join(problems)
        # the program's own source lines, from the sysroot's copy
        text = run_cli(cli_env, "dump", c.core, "--sysroot", sysroot).stdout.decode()
        assert "self.record(); self._write_file(); crash_now()" in text, text
        bare = run_cli(cli_env, "dump", c.core).stdout.decode()
        assert "crash_now()" not in bare
    finally:
        shutil.move(moved, c.root)


def test_replaced_executable(private_crash, cli_env):
    """The executable replaced on disk after the crash: a mismatch named by
    build id, the file never read (what the core leaves to it, such as the
    names of types, is unreadable: frames whose code object cannot be
    confirmed are "???", never another's)."""
    c = private_crash
    saved = c.exe + ".saved"
    os.rename(c.exe, saved)
    other = next((i.path for i in conftest.INTERPRETERS
                  if i.kind == "release" and i.minor != "3.13"), None)
    if other is None:
        os.rename(saved, c.exe)
        pytest.skip("no other Debian interpreter to put in its place")
    shutil.copy2(other, c.exe)
    try:
        doc = dump_json(cli_env, c.core)
        (entry,) = [f for f in doc["core"]["files"] if f["path"] == c.exe]
        assert entry["status"] == "mismatch", entry
        assert entry["build_id"] and entry["file_build_id"] and \
            entry["build_id"] != entry["file_build_id"], entry
        problems = view_mismatches(c.target, doc, unreadable=True)
        assert not problems, "\n".join(problems)
        text = run_cli(cli_env, "dump", c.core).stdout.decode()
        assert ("note: %s: %s is another build than the one the core was written with "
                "(build id %s, the core's %s)" % (c.exe, c.exe, entry["file_build_id"],
                                                  entry["build_id"])) in text, text
    finally:
        os.rename(saved, c.exe)


# ---- several cores ------------------------------------------------------------------


def test_many_cores_grouped(values_crash, cli_env, tmp_path):
    """dump CORE CORE ... --group: the crashes that are the same once.
    Two processes of the same program crashed at the same place are one
    crash; the same program's SIGABRT and the values scenario's SIGSEGV are
    two more; a file that is no core is named, not read."""
    interp = values_crash.interp
    twins = [crashed(interp, "scenario.py", "segv", tmp_path / ("twin%d" % i),
                     args=["3", "0"]) for i in range(2)]
    aborted = crashed(interp, "scenario.py", "abort", tmp_path / "abort", args=["3", "0"])
    junk = tmp_path / "junk"
    junk.write_bytes(b"not a core\n")
    cores = [t.core for t in twins] + [values_crash.core, aborted.core, str(junk)]
    res = run_cli(cli_env, "dump", *cores, "--group", "--no-source")
    text = res.stdout.decode()
    assert res.returncode == 1, res.stderr.decode()  # one was not read
    assert text.splitlines()[0] == "5 cores, 3 distinct crashes, 1 not read", text
    assert ("2 cores, the same crash: SIGSEGV in the same stack (%s, %s; pid:native %d:%d, "
            "%d:%d):" % (twins[0].core, twins[1].core, twins[0].main, twins[0].main,
                         twins[1].main, twins[1].main)) in text, text
    name = '"MainThread" ' if aborted.minor >= NAMES_FROM else ""
    assert '%s (pid %d): SIGABRT in thread %s(native %d):' % (
        aborted.core, aborted.main, name, aborted.main) in text, text
    assert "%s: error: " % junk in text, text

    res = run_cli(cli_env, "dump", *cores, "--group", "--json")
    doc = json.loads(res.stdout)
    crashes = doc["crashes"]
    assert [c["cores"] for c in crashes] == [[t.core for t in twins], [values_crash.core],
                                             [aborted.core]], crashes
    assert frames_of(crashes[0]) == twins[0].target.threads[twins[0].main], crashes[0]
    assert frames_of(crashes[2]) == aborted.target.threads[aborted.main], crashes[2]
    assert [c["signal"] for c in crashes] == ["SIGSEGV", "SIGSEGV", "SIGABRT"]
    assert [c["native_thread_ids"] for c in crashes][0] == [t.main for t in twins]
    assert [p.get("error") is not None for p in doc["processes"]] == [False] * 4 + [True]
    for t in twins + [aborted]:
        t.target.stop()
