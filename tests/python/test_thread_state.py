"""Each thread's name, native wait and on_cpu, and --group, in every front
end (the command line, gdb, lldb; live, a core file, gdbserver), against
the target's own view: targets/thread_state.py reports each thread's
threading name, its /proc comm, what it blocks in (and the fd of a read),
and which threads form its idle pool.

A name is the target's ("python", once the library reads it) or else the
OS's comm ("os", a live local process) or the debugger's ("debugger":
remote; a core file's threads have none in gdb).  One debugger session per
debugger and interpreter (live, then its core), one for gdb's remote.
"""

import json
import os
import re
import subprocess
import sys

import pytest

import debugger_util as du
import drivers

# Its sessions run without the -dbg packages' DWARF, as most users' do: the
# waits come from the names gdb and lldb still have (exported functions) and
# from the registers of a thread in a system call.  test_locks and
# test_thread_state_matrix read the same waits with DWARF
# (du.sessions_with_debuginfo); PYFRAMES_TEST_DEBUGINFO=1 gives it here too.

POOL = 6
CLI_TIMEOUT = 120

DRIVERS = [d for d in drivers.selected() if d.debugger in ("gdb", "lldb")]
VERSIONS = list(du.VERSIONS) + list(du.OLDER_REPRESENTATIVE)
PAIRS = [(d, v) for d in DRIVERS for v in d.versions() + list(du.OLDER_REPRESENTATIVE)]
IDS = ["%s-%s" % (d.name, v) for d, v in PAIRS]


class State(object):
    """The target and its own truth: ``doing`` (native tid -> "read",
    "sleep", "lock", "busy", "idle", "main"), ``fds`` (tid -> the fd it
    reads), ``names`` (tid -> threading name), ``comms`` (tid -> /proc
    comm), ``pool`` (the idle workers' tids)."""

    def __init__(self, target):
        self.target = target
        info = {int(tid): facts for tid, facts in target.doc["thread_info"].items()}
        self.info = info
        self.doing = {tid: facts.get("doing", "main") for tid, facts in info.items()}
        self.doing[target.main_tid] = "main"
        self.fds = {tid: facts["fd"] for tid, facts in info.items() if "fd" in facts}
        self.names = {tid: facts["name"] for tid, facts in info.items()}
        self.comms = {tid: facts.get("comm") for tid, facts in info.items()}
        with open("/proc/%d/task/%d/comm" % (target.pid, target.main_tid)) as f:
            self.comms[target.main_tid] = f.read().rstrip("\n")
        self.pool = sorted(tid for tid, what in self.doing.items() if what == "idle")
        assert len(self.pool) == POOL, target.doc


def _start(version, workdir):
    du.require(None, version)
    target = du.LiveTarget(du.python_for(version), "thread_state.py", workdir=workdir,
                           args=[str(POOL)])
    target.start()
    return target


@pytest.fixture(scope="module", params=VERSIONS)
def state(request, tmp_path_factory):
    target = _start(request.param, str(tmp_path_factory.mktemp("state-" + request.param)))
    try:
        yield State(target)
    finally:
        target.stop()


def _threads(doc):
    return {t["native_thread_id"]: t for interp in doc["interpreters"] for t in interp["threads"]}


def _expected_native(state, tid, fds, cli):
    """(what "native" must be, what "on_cpu" must be) by the thread's own
    account; a regex for the native text.  fds: whether the fd of a read is
    known (/proc of a live local process, or the registers of a thread in
    a system call)."""
    what = state.doing[tid]
    if what == "read":
        text = ("reading fd %d" % state.fds[tid]) if fds else "reading"
    elif what == "main":
        text = r"reading fd \d+" if fds else "reading"
    elif what == "sleep":
        text = "sleeping"
    elif what in ("lock", "idle"):
        text = "waiting on a lock"
    elif cli:  # busy: on a CPU, or waiting for the GIL the other spinner holds
        text = "on CPU|waiting on a lock or for the GIL|waiting for the GIL"
    else:  # stopped in Python, or in take_gil or drop_gil (holding the GIL or not)
        text = "(waiting for the GIL|in take_gil/drop_gil, holding the GIL)?"
    if cli:
        on_cpu = (True, False) if what == "busy" else False
    else:
        on_cpu = None  # a debugger stopped every thread
    return text, on_cpu


def _check_name(state, tid, row, sources, problems):
    name, source = row["name"], row["name_source"]
    if source == "python":
        ok = name == state.names[tid]
    elif source == "os":
        ok = "os" in sources and name == state.comms[tid]
    elif source == "debugger":
        ok = "debugger" in sources and name == state.comms[tid]
    else:
        ok = name is None and None in sources
    if not ok:
        problems.append("thread %d (%s): name %r from %r; the target says threading "
                        "name %r, comm %r" % (tid, state.doing[tid], name, source,
                                              state.names[tid], state.comms[tid]))


def check_document(state, doc, live=True, cli=False, sources=("python", "os"), fds=None):
    """Every thread of the target in doc, with its name, native wait and
    on_cpu as the target tells them; the pool in one group when doc has
    groups.  fds: whether reads show their fd (default: live)."""
    fds = live if fds is None else fds
    rows = _threads(doc)
    problems = []
    for tid in state.doing:
        row = rows.get(tid)
        if row is None:
            problems.append("thread %d (%s) missing" % (tid, state.doing[tid]))
            continue
        for key in ("name", "name_source", "gil", "native", "on_cpu", "exception",
                    "holds_gil"):
            if key not in row:
                problems.append("thread %d: no %r key" % (tid, key))
        _check_name(state, tid, row, sources, problems)
        text, on_cpu = _expected_native(state, tid, fds, cli)
        native = row.get("native")
        if not re.fullmatch(text, native or ""):
            problems.append("thread %d (%s): native %r, expected %r"
                            % (tid, state.doing[tid], native, text))
        # 3.13 and 3.14 record no GIL waiter: the unwind says it; 3.15's
        # library does
        if not cli and native == "waiting for the GIL" and row["gil"] not in (
                ("waits",) if doc["python"]["version"][:4] in ("3.13", "3.14")
                else ("waits", None)):
            problems.append("thread %d (%s): in take_gil, gil %r"
                            % (tid, state.doing[tid], row["gil"]))
        # stopped in take_gil just after it took the GIL: it holds it
        if native == "in take_gil/drop_gil, holding the GIL" and row["gil"] != "holds":
            problems.append("thread %d (%s): %s, gil %r"
                            % (tid, state.doing[tid], native, row["gil"]))
        if row.get("on_cpu") not in (on_cpu if isinstance(on_cpu, tuple) else (on_cpu,)):
            problems.append("thread %d (%s): on_cpu %r, expected %r"
                            % (tid, state.doing[tid], row.get("on_cpu"), on_cpu))
    busy = [rows[tid].get("native") for tid, what in state.doing.items()
            if what == "busy" and tid in rows]
    if not cli and "waiting for the GIL" not in busy:
        # one spinner holds the GIL, the other waits for it or hands it over
        problems.append("neither spinner waits for the GIL: %s" % busy)
    if "groups" in doc:
        check_groups(state, doc, rows, problems)
    assert not problems, "\n".join(problems)


def check_groups(state, doc, rows, problems):
    seen = []
    pool_group = None
    for group in doc["groups"]:
        tids = group["native_thread_ids"]
        seen.extend(tids)
        if set(tids) & set(state.pool):
            pool_group = group
        if len(group["names"]) != len(tids):
            problems.append("group %s: %d names" % (tids, len(group["names"])))
        for tid, name in zip(tids, group["names"]):
            if tid in rows and rows[tid]["name"] != name:
                problems.append("group %s: name %r of %d, its thread says %r"
                                % (tids, name, tid, rows[tid]["name"]))
    if sorted(seen) != sorted(rows):
        problems.append("the groups hold %s, the threads are %s" % (sorted(seen), sorted(rows)))
    if pool_group is None or sorted(pool_group["native_thread_ids"]) != state.pool:
        problems.append("the idle pool %s is not one group: %s" % (state.pool, pool_group))
    elif pool_group["frames"] != rows[state.pool[0]]["frames"]:
        problems.append("the pool's group frames differ from its threads'")


def check_group_text(state, text):
    """The text of --group: the pool under one header with its count and
    native ids, every other thread under its own header."""
    groups = [[int(n) for n in re.findall(r"\d+", re.search(r"\(native ([\d, ]+)", l).group(1))]
              for l in text.splitlines() if re.match(r"\d+ threads with the same stack", l)]
    assert sorted(state.pool) in [sorted(g) for g in groups], text
    grouped = [tid for g in groups for tid in g]
    for tid in state.doing:
        if tid not in grouped:
            assert re.search(r"^Thread 0x[0-9a-f]+ .*\(native %d\b" % tid, text, re.M), (tid, text)
        else:
            # only the pool, and the spinners when they stopped on one line
            assert tid in state.pool or state.doing[tid] == "busy", (tid, text)


# ---- the command line ------------------------------------------------------

def _cli(cli_env, *args):
    res = subprocess.run([sys.executable, "-m", "pyframes", "dump"] + [str(a) for a in args],
                         capture_output=True, timeout=CLI_TIMEOUT, env=cli_env,
                         stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stderr.decode("utf-8", "replace")
    return res.stdout.decode("utf-8", "replace")


def test_cli(state, cli_env):
    """dump --json and --group --json: /proc's names and waits; the text
    header of the reader names it, quoted, and its fd."""
    pid = state.target.pid
    check_document(state, json.loads(_cli(cli_env, pid, "--json")), cli=True)
    check_document(state, json.loads(_cli(cli_env, pid, "--group", "--json")), cli=True)
    text = _cli(cli_env, pid, "--no-source")
    reader = [tid for tid, what in state.doing.items() if what == "read"][0]
    header = [l for l in text.splitlines() if re.search(r"\(native %d\b" % reader, l)]
    assert len(header) == 1, text
    assert re.search(r'^Thread 0x[0-9a-f]+ "[^"]+" \(native %d, interpreter 0, .*reading fd %d'
                     % (reader, state.fds[reader]), header[0]), header[0]
    check_group_text(state, _cli(cli_env, pid, "--group", "--no-source"))


# ---- the debuggers ---------------------------------------------------------

@pytest.fixture(scope="module", params=PAIRS, ids=IDS)
def debugged(request, tmp_path_factory):
    """One session on the live target (JSON, --group JSON and text, a core
    written), then one on that core."""
    driver, version = request.param
    driver.require(version)
    workdir = str(tmp_path_factory.mktemp("%s-%s" % (driver.name, version)))
    target = _start(version, workdir)
    try:
        st = State(target)
        cmd = driver.command
        core = os.path.join(workdir, "core")
        live = driver.run([
            ("json", "%s --all --json" % cmd),
            ("group", "%s --all --group --json" % cmd),
            ("group_text", "%s --all --group --no-source" % cmd),
            ("save_core", driver.save_core(core)),
        ], pid=target.pid)
        cored = None
        if driver.debugger == "gdb" and os.path.exists(core):
            cored = driver.run([("json", "%s --all --json" % cmd)],
                               executable=target.view["executable"], core=core)
        yield driver, st, live, cored
    finally:
        target.stop()


def test_debugger_live(debugged):
    """Names from /proc (a live local process), waits from the debugger's
    unwind, the fd of a read from /proc; the pool as one group."""
    driver, st, live, _ = debugged
    for name in ("json", "group"):
        try:
            check_document(st, live.json(name))
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, live.describe(name)))
    check_group_text(st, live["group_text"])


def test_gdb_core(debugged):
    """A core file: no /proc, so no on_cpu; the fd of a read from the
    thread's registers (orig_rax and the arguments, which gdb reads from
    the core); waits from gdb's unwind; gdb names no thread of an ELF core
    (its only name, NT_PRPSINFO's, is the process's), so names are the
    target's or none."""
    driver, st, _, cored = debugged
    if cored is None:
        pytest.skip("a core file is read by gdb here")
    try:
        check_document(st, cored.json("json"), live=False, sources=("python", None), fds=True)
    except AssertionError as e:
        raise AssertionError("%s\n%s" % (e, cored.describe("json")))


@pytest.mark.parametrize("version", VERSIONS[:1])
def test_gdb_remote(version, tmp_path):
    """gdbserver: the names are gdb's (which gdbserver reads from the
    remote's /proc), the waits gdb's unwind, the fd of a read from the
    thread's registers (its /proc is not ours); no on_cpu."""
    gdb = [d for d in DRIVERS if d.name == "gdb"]
    if not gdb:
        pytest.skip("gdb is not among the drivers")
    gdb[0].require(version)
    target = _start(version, str(tmp_path))
    try:
        st = State(target)
        s = du.run_gdb(["py-bt-fast --all --json"], remote=target.pid)
        try:
            check_document(st, s.json(0), live=False, sources=("python", "debugger"), fds=True)
        except AssertionError as e:
            raise AssertionError("%s\n%s" % (e, s.describe(0)))
    finally:
        target.stop()


# ---- the classification itself (no target) -------------------------------

sys.path.insert(0, os.path.join(du.REPO, "native", "python"))
from pyframes import waits  # noqa: E402


@pytest.mark.parametrize("names, words, gil", [
    # glibc 2.41's cancellable system calls under CPython 3.13's Lock.acquire
    (["__syscall_cancel_arch", "__internal_syscall_cancel", "__futex_abstimed_wait_common",
      "__new_sem_wait_slow64", "_PySemaphore_PlatformWait", "_PySemaphore_Wait",
      "_PyParkingLot_Park", "_PyMutex_LockTimed", "PyThread_acquire_lock_timed"],
     "waiting on a lock", False),
    # take_gil anywhere in the window: the GIL, whatever waits under it
    (["__syscall_cancel_arch", "__futex_abstimed_wait_common", "__pthread_cond_wait_common",
      "___pthread_cond_timedwait64", "take_gil", "PyEval_RestoreThread"],
     "waiting for the GIL", True),
    # take_gil inlined, no DWARF: the condition wait right under its caller
    (["__futex_abstimed_wait_common", "___pthread_cond_timedwait64", "PyEval_RestoreThread"],
     "waiting for the GIL", True),
    # handing the GIL over (3.13: a compiler's clone of drop_gil)
    (["__GI___lll_lock_wake", "lll_mutex_unlock_optimized", "___pthread_mutex_unlock",
      "drop_gil_impl", "drop_gil.constprop.0", "_PyEval_ReleaseLock"],
     "waiting for the GIL", True),
    (["__lll_lock_wait", "___pthread_mutex_lock", "take_gil.isra.0"], "waiting for the GIL", True),
    (["lll_lock_wait", "my_function.cold"], "waiting on a lock", False),
    (["some_helper.part.0", "PyObject_Call"], "in C: some_helper", False),
    (["__syscall_cancel_arch", "__internal_syscall_cancel", "__GI___clock_nanosleep",
      "__GI___nanosleep", "pysleep", "time_sleep"], "sleeping", False),
    (["__syscall_cancel_arch", "__internal_syscall_cancel", "__GI___libc_read", "_Py_read"],
     "reading fd 7", False),
    (["__GI___poll", "select_poll_poll"], "in poll/epoll/select", False),
    (["epoll_wait", "select_epoll_poll_impl"], "in poll/epoll/select", False),
    (["_PyEval_EvalFrameDefault", "PyEval_EvalCode"], None, False),
    (["PyObject_GetAttr", "_PyEval_EvalFrameDefault"], None, False),
    (["my_extension_spin(int)", "PyObject_Call"], "in C: my_extension_spin", False),
    # the eval loop's own helpers, in the executable or libpython: running Python
    ([("check_periodics", "/usr/bin/python3.15"), ("_PyEval_EvalFrameDefault", None)],
     None, False),
    ([("long_add", "/usr/lib/libpython3.13.so.1.0")], None, False),
    ([("sre_match", "/usr/bin/python3.14t")], None, False),
    ([("spin", "/usr/lib/python3/dist-packages/ext.cpython-313-x86_64-linux-gnu.so")],
     "in C: spin", False),
    ([("__GI___libc_read", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
      ("_Py_read", "/usr/bin/python3.13")], "reading fd 7", False),
    ([], None, False),
    ([None, "PyObject_Call"], None, False),
    # without debug info: glibc's internals and CPython's static functions
    # unnamed (lldb: ___lldb_unnamed_symbol_N, gdb: None), the exported
    # functions around them named
    ([("___lldb_unnamed_symbol_9ced0", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
      ("___lldb_unnamed_symbol_9cf10", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
      ("read", "/usr/lib/x86_64-linux-gnu/libc.so.6"), ("_Py_read", "/usr/bin/python3.14")],
     "reading fd 7", False),
    ([None, None, "clock_nanosleep", None, None, "_PyEval_EvalFrameDefault"], "sleeping", False),
    ([None, None, "sem_clockwait", "_PySemaphore_Wait", "_PyParkingLot_Park", None, None],
     "waiting on a lock", False),
    ([None, None, "pthread_cond_timedwait", None, "PyEval_RestoreThread"],
     "waiting for the GIL", True),
    ([None, "pthread_cond_timedwait", None, "PyObject_Vectorcall"], "waiting on a lock", False),
    # gdb on python3.14 without DWARF: a spinner asked to hand the GIL over
    ([None, None, None, "pthread_cond_timedwait", None, None, "_Py_HandlePending", None],
     "waiting for the GIL", True),
    ([None, None, "my_exported_helper", "PyObject_Call"], "in C: my_exported_helper", False),
    # on CPU in take_gil or drop_gil without DWARF (gdb on python3.13 and
    # 3.14): only a caller of take_gil named; a GIL wait unless it holds it
    ([None, None, None, "_Py_HandlePending", None, None], "waiting for the GIL",
     waits.GIL_UNLESS_HELD),
    (["___lldb_unnamed_symbol_1f2a0", "___lldb_unnamed_symbol_1f3b0", "PyEval_RestoreThread"],
     "waiting for the GIL", waits.GIL_UNLESS_HELD),
    # a named function first: not this case
    (["PyObject_Free", None, "_Py_HandlePending"], None, False),
    # a shared libpython reading its thread state (lldb stopped a spinner
    # in the loader's TLS lookup): its caller says what the thread does
    ([("__tls_get_addr", "/lib64/ld-linux-x86-64.so.2"),
      ("_PyEval_EvalFrameDefault", "/root/.pyenv/versions/3.13.0/lib/libpython3.13.so.1.0")],
     None, False),
    ([("__tls_get_addr", "/lib64/ld-linux-x86-64.so.2"),
      ("spin", "/usr/lib/python3/dist-packages/ext.cpython-313-x86_64-linux-gnu.so")],
     "in C: spin", False),
])
def test_classify_functions(names, words, gil):
    assert waits.classify_functions(names, io_fd=7) == (words, gil)


SP = 0x7F0000100000


def _facts(syscall, args=(), state="S", wchan=None):
    return waits.ProcFacts("python3.13", state, syscall, tuple(args), wchan, SP)


@pytest.mark.parametrize("facts, gil, words, on_cpu", [
    (_facts("running", state="R"), None, "on CPU", True),
    (_facts("read", (5, 0, 1)), None, "reading fd 5", False),
    (_facts("clock_nanosleep", (0, 0, 0)), None, "sleeping", False),
    (_facts("epoll_wait", (3, 0, 1, 0)), None, "in poll/epoll/select", False),
    # a futex word on the thread's own stack: CPython's parking lot, a lock
    (_facts("futex", (SP + 0x2a0, 0x189, 0, 0, 0, 0xffffffff)), None, "waiting on a lock", False),
    (_facts("futex", (SP + 0x2a0, 0x189, 0, 0x7ff0, 0, 0xffffffff)), "waits",
     "waiting on a lock", False),
    # elsewhere (the GIL's condition variables are in the interpreter state)
    (_facts("futex", (0xb2ee90, 0x189, 0, 0x7ff0, 0, 0xffffffff)), None,
     "waiting on a lock or for the GIL", False),
    (_facts("futex", (0xb2ee90, 0x80, 2, 0, 0, 0)), None,
     "waiting on a lock or for the GIL", False),
    (_facts("futex", (SP - 8, 0x80, 2, 0, 0, 0)), None,
     "waiting on a lock or for the GIL", False),
    (_facts("futex", (0xb2ee90, 0x189, 0, 0x7ff0, 0, 0xffffffff)), "waits",
     "waiting for the GIL", False),
    (_facts("wait4", (1, 2, 3, 4)), None, "in syscall wait4", False),
    (_facts("", state="t"), None, None, None),
    (_facts(None, wchan="do_nanosleep"), None, "sleeping", False),
    (_facts(None, wchan="some_driver_wait"), None, "in the kernel: some_driver_wait", False),
])
def test_classify_proc(facts, gil, words, on_cpu):
    assert waits.classify_proc(facts, gil) == (words, on_cpu)


def test_a_futex_far_from_every_interpreter_is_no_gil():
    gils = [(0xb00000, 0xb00000 + waits.INTERP_REACH)]
    heap = _facts("futex", (0x55a36b9c0c40, 0x189, 0, 0, 0, 0xffffffff))
    assert waits.classify_proc(heap, None, gils=gils)[0] == "waiting on a lock"
    near = _facts("futex", (0xb2ee90, 0x189, 0, 0x7ff0, 0, 0xffffffff))
    assert waits.classify_proc(near, None, gils=gils)[0] == "waiting on a lock or for the GIL"
    assert waits.classify_proc(near, "waits", gils=gils)[0] == "waiting for the GIL"
    assert waits.classify_proc(near, None, free_threaded=True)[0] == "waiting on a lock"


def test_describe_keeps_the_targets_name_and_fills_the_gil_wait():
    from pyframes.model import Thread
    named = Thread(thread_id=1, native_thread_id=2, name="ledger-writer", name_source="python")
    got = waits.describe(named, _facts("read", (9,)), None, "from-debugger")
    assert (got.name, got.name_source, got.native, got.on_cpu) == \
        ("ledger-writer", "python", "reading fd 9", False)
    bare = Thread(thread_id=1, native_thread_id=2, gil="no")
    got = waits.describe(bare, None, ["take_gil"], "worker")
    assert (got.name, got.name_source, got.gil, got.native, got.on_cpu) == \
        ("worker", "debugger", "waits", "waiting for the GIL", None)
    # the target's "holds" stands (take_gil's last steps after the GIL is
    # taken), and the thread is not said to wait for it
    got = waits.describe(Thread(thread_id=1, native_thread_id=2, gil="holds"), None,
                         ["take_gil"], None)
    assert (got.gil, got.native) == ("holds", "in take_gil/drop_gil, holding the GIL")
    # unnamed code under _Py_HandlePending: the GIL wait of a thread that
    # does not hold it; GC or a pending call (no wait) of one that does
    unnamed = [None, None, "_Py_HandlePending"]
    running = _facts("running", state="R")
    got = waits.describe(Thread(thread_id=1, native_thread_id=2, gil="no"), running, unnamed)
    assert (got.gil, got.native, got.on_cpu) == ("waits", "waiting for the GIL", True)
    got = waits.describe(Thread(thread_id=1, native_thread_id=2, gil="holds"), running, unnamed)
    assert (got.gil, got.native, got.on_cpu) == ("holds", "on CPU", True)
    # 3.15 says it asked for the GIL (gil_requested)
    got = waits.describe(Thread(thread_id=1, native_thread_id=2, gil="waits"), running, unnamed)
    assert (got.gil, got.native) == ("waits", "waiting for the GIL")
    # the target does not say (unknown): no claim
    got = waits.describe(Thread(thread_id=1, native_thread_id=2), running, unnamed)
    assert got.native == "on CPU"
    got = waits.describe(Thread(thread_id=1, native_thread_id=2, gil="no", free_threaded=True),
                         running, unnamed)
    assert got.native == "on CPU"
    assert waits.describe(Thread(thread_id=1, native_thread_id=2), None, None) == \
        Thread(thread_id=1, native_thread_id=2)


def test_proc_facts_names_a_thread_as_its_comm_does():
    """The name proc_facts gives (from the thread's stat, between its first
    "(" and its last ")") is the thread's comm file, whatever the name
    holds: spaces and parentheses too.  A thread of this process names
    itself (PR_SET_NAME) and blocks; its own comm file is the oracle."""
    import ctypes
    import threading
    libc = ctypes.CDLL(None, use_errno=True)
    named, done = threading.Event(), threading.Event()
    tid = []

    def worker():
        tid.append(threading.get_native_id())
        libc.prctl(15, b"a) (b c)", 0, 0, 0)  # PR_SET_NAME, 15 bytes at most
        named.set()
        done.wait()

    t = threading.Thread(target=worker)
    t.start()
    try:
        assert named.wait(60)
        with open("/proc/self/task/%d/comm" % tid[0]) as f:
            comm = f.read()[:-1]  # its newline
        facts = waits.proc_facts(os.getpid(), tid[0])
        assert comm == "a) (b c)" and facts.comm == comm
        assert facts.state in ("S", "R")
    finally:
        done.set()
        t.join()
