"""Containers (issue 35): a service in PID and mount namespaces of its own,
as Docker and Kubernetes start one, read from the node, from a sidecar and
with ``docker exec``, against its own view.

The target (targets/container_service.py) reports each thread's stack,
threading name, comm, what it blocks in and the locals of its two
innermost frames, under its id as its PID namespace sees it; the node's
/proc ties that id to the thread's id here (NSpid: namespaces.host_tids).
No container engine runs here: the namespaces are made as the engines make
them (namespaces.py): ``none`` (the control: every check holds outside
any namespace), ``pid`` (unshare --pid --fork --mount-proc), ``mnt``
(unshare --mount, pivot_root into a root where the target's files are not
the reader's), ``pid+mnt`` (both).  Readers: the node (outside every
namespace; the ids differ where there is a PID namespace: JSON's
native_thread_id stays the target's, host_thread_id is the node's, and a
header names both), a sidecar (in the target's PID namespace only, with
its own root and /proc: nsenter --pid), docker exec (in both, in the
target's root: nsenter --pid --mount --root).

The command line: stacks, names (the unnamed thread's OS name from /proc),
native waits, the GIL on frozen states, --locks, --thread by either id,
sample (the main thread; --mode cpu; --all's labels).  gdb and lldb: every
OS thread selected in turn shows its own stack, py-locals and py-up work
on it, gdb's bt shows its Python frames; --all; py-sample (the main
thread, --mode cpu); a core written from the node (gdb's gcore) and one the
kernel wrote inside the namespace, each read by gdb and lldb; gdbserver
and lldb-server from the node.  A reader inside a container refused
ptrace names what to grant.
"""

import json
import os
import re
import signal
import subprocess
import sys

import pytest

import debugger_util as du
import drivers
import namespaces
from conftest import PACKAGE_DIR
from livetarget import frozen

CLI_TIMEOUT = 120
# the interpreters of the sandbox root (/usr, which a container's root
# here holds; pyenv's lives elsewhere)
VERSIONS = [v for v in du.VERSIONS if v != du.PYENV]
SETUPS = list(namespaces.SETUPS)
# the debuggers' setups: a container's (both namespaces) on every version,
# each namespace alone on the first
DEBUGGER_SETUPS = [("pid+mnt", v) for v in VERSIONS] + [(s, VERSIONS[0]) for s in ("pid", "mnt")]
DRIVERS = [d for d in drivers.selected() if d.name in ("gdb", "lldb")]
LIBRARY = os.environ.get("PYFRAMES_LIBRARY", "")
# where docker exec finds the package inside the container's root
INSIDE_PACKAGE = "/opt/pyframes"


class Service(object):
    """A running container_service.py and its own account: ``info``
    (native tid as it sees it -> its facts: ident, name, comm, doing, fd,
    locals), ``views`` (tid -> frames), ``host`` (tid -> its id here)."""

    def __init__(self, target, container, version):
        self.target, self.container, self.version = target, container, version
        info = {int(tid): dict(facts) for tid, facts in target.doc["thread_info"].items()}
        with open(os.path.join(target.workdir, "main.json")) as f:
            main = json.load(f)
        info[main["tid"]].update(main)
        self.info = info
        self.views = target.threads
        self.host = target.host_tids
        assert set(self.host) == set(info), (self.host, sorted(info))

    @property
    def pid(self):
        """Its PID here (the node's)."""
        return self.target.pid

    @property
    def own_pid(self):
        """Its PID in its own namespace."""
        return self.target.main_tid

    def tid_of(self, doing):
        return [tid for tid, f in self.info.items() if f.get("doing") == doing]

    def named(self, name):
        return [tid for tid, f in self.info.items() if f.get("name") == name][0]

    def functions(self, tid):
        """The innermost functions its stack must start with: the view's,
        or a spinner's own two."""
        if tid in self.views:
            return [f[0] for f in self.views[tid]]
        return ["spinner", "serve"]


def _start(setup, version, workdir, init=False, binds=()):
    du.require(None, version)
    container = namespaces.Container(setup, init=init, binds=binds)
    target = du.LiveTarget(du.python_for(version), "container_service.py", workdir=workdir,
                           container=container)
    try:
        target.start()
        return Service(target, container, version)
    except BaseException:
        target.stop()
        raise


def _binds():
    """docker exec's reader: the clone (package, plugins, built library)
    inside the target's root."""
    return [(du.REPO, INSIDE_PACKAGE)]


@pytest.fixture(scope="module", params=[(s, v) for s in SETUPS for v in VERSIONS],
                ids=["%s-%s" % (s, v) for s in SETUPS for v in VERSIONS])
def service(request, tmp_path_factory):
    setup, version = request.param
    workdir = str(tmp_path_factory.mktemp("svc-%s-%s" % (setup.replace("+", "-"), version)))
    svc = _start(setup, version, workdir, binds=_binds() if "mnt" in setup else ())
    try:
        yield svc
    finally:
        svc.target.stop()


# ---- checks ------------------------------------------------------------------

def _rows(doc):
    return {t["native_thread_id"]: t for i in doc["interpreters"] for t in i["threads"]}


_WAITS = {"sleep": "sleeping", "lock": "waiting on a lock", "main": r"reading fd \d+",
          "busy": "on CPU|waiting on a lock or for the GIL|waiting for the GIL|"
                  "in take_gil/drop_gil, holding the GIL|"}


def check_document(svc, doc, host_ids, unnamed=("os",), waits="all", context=""):
    """Every Python thread of the service in doc (a --json document) under
    its own id, with its stack; host_thread_id its id here when host_ids
    (else no such key); its threading name, the unnamed thread's name from
    a source of ``unnamed`` ("os", "debugger"; None: no name); with waits,
    its native wait as its /proc facts give it: "all", or "blocked" (not
    the spinners', which a debugger words from its own unwind)."""
    rows = _rows(doc)
    problems = []
    if set(rows) != set(svc.info):
        problems.append("threads %s, the service has %s" % (sorted(rows), sorted(svc.info)))
    for tid, facts in sorted(svc.info.items()):
        row = rows.get(tid)
        if row is None:
            continue
        what = "thread %d (%s)" % (tid, facts.get("name") or facts.get("comm"))
        if host_ids:
            if row.get("host_thread_id", "absent") != svc.host[tid]:
                problems.append("%s: host_thread_id %r, the node's /proc says %d"
                                % (what, row.get("host_thread_id", "absent"), svc.host[tid]))
        elif "host_thread_id" in row:
            problems.append("%s: host_thread_id %r where the ids are the same"
                            % (what, row["host_thread_id"]))
        frames = [(f["function"], f["filename"], f["line"]) for f in row["frames"]]
        if tid in svc.views:
            if frames != svc.views[tid]:
                problems.append("%s: frames %s, it says %s" % (what, frames, svc.views[tid]))
        elif [f[0] for f in frames[:2]] != svc.functions(tid):
            problems.append("%s: frames %s" % (what, frames))
        if facts.get("name") is not None:
            if (row["name"], row["name_source"]) != (facts["name"], "python"):
                problems.append("%s: name %r from %r" % (what, row["name"], row["name_source"]))
        elif row["name_source"] not in unnamed or (
                row["name_source"] is not None and row["name"] != facts["comm"]):
            problems.append("%s: name %r from %r, its comm is %r (sources %s)"
                            % (what, row["name"], row["name_source"], facts["comm"], unnamed))
        if waits and not (waits == "blocked" and facts["doing"] == "busy"):
            doing = facts["doing"]
            want = ("reading fd %d" % facts["fd"]) if doing == "read" else _WAITS[doing]
            if not re.fullmatch(want, row["native"] or ""):
                problems.append("%s: native %r, it is doing %r (%r)"
                                % (what, row["native"], doing, want))
    assert not problems, "\n".join(problems) + "\n" + context


def check_headers(svc, text, host_ids):
    """Each thread's header names its id here first and, where it differs,
    its own (``native 30290, 2 in its namespace``)."""
    for tid, facts in svc.info.items():
        ids = "%d, %d in its namespace" % (svc.host[tid], tid) if host_ids else "%d" % tid
        pattern = r"^Thread 0x%x .*\(native %s, interpreter 0\b" % (facts["ident"], ids)
        assert re.search(pattern, text, re.M), (pattern, text)


def _view_lines(text):
    """The sleeper's source line shows (its file read as the process sees
    it: through /proc/PID/root, the target's root not being the
    reader's in the mnt setups)."""
    assert "time.sleep(H.forever())" in text, text


# ---- the command line ----------------------------------------------------------

def _cli_env(inside=False):
    env = du.clean_env()
    if inside:
        env["PYFRAMES_LIBRARY"] = INSIDE_PACKAGE + "/" + os.path.relpath(LIBRARY, du.REPO)
        env["PYTHONPATH"] = INSIDE_PACKAGE + "/native/python"
    else:
        env["PYFRAMES_LIBRARY"] = LIBRARY
        env["PYTHONPATH"] = PACKAGE_DIR
    return env


def _pyframes(*args):
    return [sys.executable, "-m", "pyframes"] + [str(a) for a in args]


def run_cli(argv, inside=False, ok=True):
    """(stdout, stderr) of a command line (argv: the whole of it, wrapped
    by a reader's placement or not)."""
    if not LIBRARY or not os.path.isfile(LIBRARY):
        if du.in_sandbox():
            pytest.fail("PYFRAMES_LIBRARY is not set")
        pytest.skip("PYFRAMES_LIBRARY is not set")
    res = subprocess.run(argv, capture_output=True, timeout=CLI_TIMEOUT, env=_cli_env(inside),
                         stdin=subprocess.DEVNULL)
    out, err = res.stdout.decode("utf-8", "replace"), res.stderr.decode("utf-8", "replace")
    if ok:
        assert res.returncode == 0, "%s\n%s\n%s" % (" ".join(argv), out, err)
    return out, err, res.returncode


def test_dump_from_the_node(service):
    """dump PID (the node's PID): every thread's stack, name, native wait
    (its /proc files under its id here), both ids in JSON and headers, the
    source lines as the process sees its files."""
    svc = service
    differ = svc.container.pid_ns
    out, _, _ = run_cli(_pyframes("dump", svc.pid, "--json"))
    check_document(svc, json.loads(out), differ, context=out)
    text, _, _ = run_cli(_pyframes("dump", svc.pid))
    check_headers(svc, text, differ)
    _view_lines(text)


def test_locks_from_the_node(service):
    """--locks: the waiter waits for the lock the holder holds (JSON: the
    target's own ids), worded with their names."""
    svc = service
    out, _, _ = run_cli(_pyframes("dump", svc.pid, "--locks", "--json"))
    rows = _rows(json.loads(out))
    waiter, holder = svc.named("waiter"), svc.named("holder")
    wait = rows[waiter]["waits_for"]
    assert wait and wait["kind"] == "lock" and wait["held_by"] == holder, rows[waiter]
    text, _, _ = run_cli(_pyframes("dump", svc.pid, "--locks", "--no-source"))
    assert re.search(r'^"waiter" waits for .* held by "holder"', text, re.M), text


def test_thread_option_takes_either_id(service):
    """--thread N: N the thread's id here, or (when no thread here has it)
    its id in its namespace."""
    svc = service
    reader = svc.named("reader")
    numbers = [svc.host[reader]]
    if reader not in svc.host.values():  # (a thread here with that number is that one)
        numbers.append(reader)
    assert len(numbers) == (2 if svc.container.pid_ns else 1), (numbers, svc.host)
    for n in numbers:
        out, _, _ = run_cli(_pyframes("dump", svc.pid, "--thread", n, "--json"))
        assert list(_rows(json.loads(out))) == [reader], (n, out)


def _profile(svc, *args):
    path = os.path.join(svc.target.workdir, "profile-%d.json" % len(os.listdir(
        svc.target.workdir)))
    run_cli(_pyframes("sample", svc.pid, "--json", path, *args))
    with open(path) as f:
        return json.load(f)


def test_sample_from_the_node(service):
    """sample --main: the main thread (the one whose OS id is the
    process's); --mode cpu --all: only the spinners, on a CPU (their
    /proc stat under their ids here); --all: every thread labelled by its
    name, the unnamed one by its OS name."""
    svc = service
    main = _profile(svc, "--duration", "0.5", "--main")
    want = list(reversed(svc.functions(svc.own_pid)))
    assert main["samples"] and main["thread_samples"] and main["failed_samples"] == 0, main
    assert all([f["function"] for f in s["frames"]] == want for s in main["stacks"]), main
    cpu = _profile(svc, "--duration", "1", "--mode", "cpu", "--all")
    labels = {s["thread"] for s in cpu["stacks"]}
    assert cpu["thread_samples"] and labels <= {"spinner", "spinner-2"}, cpu["stacks"]
    assert all(s["frames"][-1]["function"] == "spinner" for s in cpu["stacks"]), cpu
    every = _profile(svc, "--duration", "0.3", "--all")
    labels = {s["thread"] for s in every["stacks"]}
    want = {f.get("name") or f["comm"] for f in svc.info.values()}
    assert labels == want, (labels, want)


def test_gil_on_frozen_states(service):
    """The GIL: in each frozen state at most one thread holds it, a
    spinner; some state shows a holder; the blocked threads' waits stay
    theirs."""
    svc = service
    spinners = set(svc.tid_of("busy"))
    for _ in range(40):
        with frozen(svc.pid):
            out, _, _ = run_cli(_pyframes("dump", svc.pid, "--json"))
        rows = _rows(json.loads(out))
        holders = {tid for tid, t in rows.items() if t["gil"] == "holds"}
        assert len(holders) <= 1 and holders <= spinners, (holders, out)
        for tid in svc.tid_of("sleep") + svc.tid_of("lock"):
            assert rows[tid]["native"] == _WAITS[svc.info[tid]["doing"]], rows[tid]
        if holders:
            return
    pytest.fail("no frozen state showed the GIL's holder")


# ---- other readers' places -----------------------------------------------------

def _in_containers(service):
    if not service.container.pid_ns:
        pytest.skip("a sidecar or docker exec shares a PID namespace: the %s setup has "
                    "none of its own" % service.container.setup)


def test_dump_from_a_sidecar(service):
    """A sidecar (kubectl debug --target, docker run --pid=container:ID): in
    the target's PID namespace with its own root and /proc; the ids are the
    target's own, the files read through /proc/PID/root."""
    svc = service
    _in_containers(svc)
    out, _, _ = run_cli(svc.container.sidecar(svc.pid, _pyframes("dump", svc.own_pid, "--json")))
    check_document(svc, json.loads(out), False, context=out)
    text, _, _ = run_cli(svc.container.sidecar(svc.pid, _pyframes("dump", svc.own_pid)))
    check_headers(svc, text, False)
    _view_lines(text)


def test_dump_with_docker_exec(service):
    """docker exec CONTAINER python3 -m pyframes dump 1: in both
    namespaces and the target's root (the package bound into it)."""
    svc = service
    _in_containers(svc)
    if not svc.container.mount_ns:
        pytest.skip("docker exec runs in the container's root: the pid setup has none")
    argv = [sys.executable, "-s", "-m", "pyframes", "dump", str(svc.own_pid), "--json"]
    out, _, _ = run_cli(svc.container.exec(svc.pid, argv), inside=True)
    check_document(svc, json.loads(out), False, context=out)


def test_ptrace_refused_in_a_container_names_what_to_grant(service):
    """A reader without CAP_SYS_PTRACE (as docker and kubectl start one)
    reading a process that has it: inside a container the message names
    --cap-add SYS_PTRACE and kubectl debug's profile, and ptrace_scope; on
    the node it names ptrace_scope only."""
    svc = service
    _in_containers(svc)
    drop = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace"]
    _, err, rc = run_cli(svc.container.sidecar(svc.pid, drop + _pyframes("dump", svc.own_pid)),
                         ok=False)
    assert rc == 1 and "permission denied" in err, err
    for words in ("--cap-add SYS_PTRACE", "kubectl debug --profile=general", "ptrace_scope"):
        assert words in err, (words, err)
    # the node: another user, the capabilities' bounding set whole
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    _, err, rc = run_cli(nobody + _pyframes("dump", svc.pid), ok=False)
    assert rc == 1 and "ptrace_scope" in err and "kubectl" not in err, err


# ---- the debuggers -------------------------------------------------------------

def _names(driver):
    """The navigation commands' names in this debugger (gdb: pyf-, which
    CPython's gdb helper never takes)."""
    if driver.debugger == "gdb":
        return "pyf-up", "pyf-locals"
    return "py-up", "py-locals"


def per_thread_commands(driver, tids):
    """Each thread of ``tids`` (its id in the debugger) selected in turn:
    the stack command, py-locals, py-up, py-locals (gdb: and bt)."""
    up, local = _names(driver)
    out = []
    for tid in tids:
        out += [("sel%d" % tid, driver.select(tid)), ("bt%d" % tid, driver.command + " --json"),
                ("loc%d" % tid, local), ("up%d" % tid, up), ("uploc%d" % tid, local)]
        if driver.debugger == "gdb":
            out.append(("nbt%d" % tid, "bt"))
    return out


def check_per_thread(svc, s, tids, host_ids):
    """Each OS thread selected in turn: its own stack under its own id,
    its innermost frame's locals, py-up to its caller and that one's
    locals, and in gdb its Python frames in bt.  ``tids``: {id in the
    debugger: the target's own id}."""
    problems = []
    for here, own in sorted(tids.items()):
        facts = svc.info[own]
        try:
            doc = s.json("bt%d" % here)
        except AssertionError as e:
            problems.append("thread %d (%d): %s" % (here, own, str(e).splitlines()[0:3]))
            continue
        rows = _rows(doc)
        if list(rows) != [own]:
            problems.append("thread %d: the stack command showed %s, not %d"
                            % (here, sorted(rows), own))
            continue
        functions = [f["function"] for f in rows[own]["frames"]]
        if functions[:len(svc.functions(own))] != svc.functions(own)[:len(functions)] or \
                not functions:
            problems.append("thread %d: %s, it says %s" % (here, functions, svc.functions(own)))
        if host_ids and rows[own].get("host_thread_id") != here:
            problems.append("thread %d: host_thread_id %r" % (here, rows[own].get(
                "host_thread_id")))
        for n, (key, frame_locals) in enumerate((("loc", facts["locals"][0]),
                                                 ("uploc", facts["locals"][1]))):
            text = s["%s%d" % (key, here)]
            if n == 1 and len(functions) < 2:
                if "no older Python frame" not in s["up%d" % here]:
                    problems.append("thread %d: py-up at its outermost frame: %r"
                                    % (here, s["up%d" % here]))
                continue
            if n == 1 and not re.search(r"^#1 File .*, in %s$" % re.escape(functions[1]),
                                        s["up%d" % here], re.M):
                problems.append("thread %d: py-up: %r" % (here, s["up%d" % here]))
            for name, value in sorted((frame_locals or {}).items()):
                if "%s = %s" % (name, value) not in text.splitlines():
                    problems.append("thread %d frame #%d: no line %r in %r"
                                    % (here, n, "%s = %s" % (name, value), text))
        if "nbt%d" % here in s.index and "[python] %s" % functions[0] not in s["nbt%d" % here]:
            problems.append("thread %d: bt shows no [python] %s:\n%s"
                            % (here, functions[0], s["nbt%d" % here]))
    assert not problems, "\n".join(problems) + "\n" + s.describe()


def _py_sample(s, name, path):
    text = s[name]
    assert os.path.exists(path), text
    with open(path) as f:
        return json.load(f), text


@pytest.fixture(scope="module", params=[(d, s, v) for d in DRIVERS for s, v in DEBUGGER_SETUPS],
                ids=["%s-%s-%s" % (d.name, s, v) for d in DRIVERS for s, v in DEBUGGER_SETUPS])
def debugged(request, tmp_path_factory):
    """One session attached from the node: --all, each thread in turn,
    py-sample (main; --mode cpu --all)."""
    driver, setup, version = request.param
    driver.require(version)
    workdir = str(tmp_path_factory.mktemp("dbg-%s-%s-%s" % (driver.name, setup.replace(
        "+", "-"), version)))
    svc = _start(setup, version, workdir)
    try:
        tids = {here: own for own, here in svc.host.items()}
        named = [("all", "%s --all --json" % driver.command)] + per_thread_commands(
            driver, sorted(tids))
        named += [("sample", "py-sample -n 200 --main --json %s" % os.path.join(workdir,
                                                                                "main.prof")),
                  ("cpu", "py-sample -n 300 --reset --mode cpu --all --json %s"
                   % os.path.join(workdir, "cpu.prof"))]
        yield driver, svc, driver.run(named, pid=svc.pid), tids
    finally:
        svc.target.stop()


@pytest.fixture(scope="module", params=DEBUGGER_SETUPS, ids=["%s-%s" % p for p in DEBUGGER_SETUPS])
def gcored(request, tmp_path_factory):
    """gdb's gcore of the service, written from the node (gdb -p PID)."""
    setup, version = request.param
    du.require("gdb", version)
    workdir = str(tmp_path_factory.mktemp("gcore-%s-%s" % (setup.replace("+", "-"), version)))
    svc = _start(setup, version, workdir)
    try:
        core = os.path.join(workdir, "gcore")
        s = du.run_gdb(["gcore " + core], pid=svc.pid, plugin=False)
        assert os.path.exists(core), s.describe()
        yield svc, core
    finally:
        svc.target.stop()


def test_debugger_from_the_node(debugged):
    """--all: every thread, both ids, a blocked thread's native wait (/proc
    under its id here; gdb's unwind of a spinner is not checked: see
    docs/containers.md); each OS thread selected in turn shows its own
    stack, py-locals and py-up work on it (gdb: bt has its Python frames)."""
    driver, svc, s, tids = debugged
    check_document(svc, s.json("all"), svc.container.pid_ns, waits="blocked",
                   context=s.describe("all"))
    check_per_thread(svc, s, tids, svc.container.pid_ns)


def test_py_sample_from_the_node(debugged):
    """py-sample --main: the main thread (its OS id is the process's); --mode cpu
    --all: the spinners, their /proc stat under their ids here.  A
    debugger may stop a process of another PID namespace early (it takes
    its own stop signal for someone else's there: lldb-server often, gdb
    now and then): the summary says so."""
    driver, svc, s, _ = debugged
    main, text = _py_sample(s, "sample", os.path.join(svc.target.workdir, "main.prof"))
    _whole_or_said(driver, svc, main, 200, text)
    want = list(reversed(svc.functions(svc.own_pid)))
    assert main["thread_samples"] and main["failed_samples"] == 0, text
    assert all([f["function"] for f in st["frames"]] == want for st in main["stacks"]), main
    cpu, text = _py_sample(s, "cpu", os.path.join(svc.target.workdir, "cpu.prof"))
    _whole_or_said(driver, svc, cpu, 300, text)
    # (the blocked threads run for a moment after the debugger's continue:
    # their system calls, interrupted by the stop, start again)
    spinning = sum(st["count"] for st in cpu["stacks"] if st["thread"] in ("spinner",
                                                                           "spinner-2"))
    if cpu["samples"] >= 100:
        assert spinning >= 0.5 * cpu["thread_samples"], (text, cpu["stacks"])


def _whole_or_said(driver, svc, profile, asked, text):
    if profile["samples"] == asked:
        return
    assert svc.container.pid_ns, text
    assert "stopped after %d of the %d samples asked for (%s may stop" % (
        profile["samples"], asked, driver.debugger) in text, text


@pytest.mark.parametrize("reader", DRIVERS, ids=[d.name for d in DRIVERS])
def test_gcore_from_the_node(gcored, reader):
    """gdb's gcore of the process, written from the node: gdb and lldb read
    it, every thread under both ids, each selected in turn by its id in
    the core (the node's: its LWPs) showing its own stack."""
    svc, core = gcored
    reader.require(svc.version)
    tids = {here: own for own, here in svc.host.items()}
    c = reader.run([("all", "%s --all --json" % reader.command)]
                   + per_thread_commands(reader, sorted(tids)),
                   executable=svc.target.view["executable"], core=core)
    check_document(svc, c.json("all"), svc.container.pid_ns, unnamed=(None, "debugger"),
                   waits=False, context=c.describe("all"))
    check_per_thread(svc, c, tids, svc.container.pid_ns)


@pytest.fixture(scope="module", params=VERSIONS)
def kernel_core(request, tmp_path_factory):
    """A core the kernel wrote inside the namespace: the service under an
    init (PID 2, as docker run --init starts it), SIGABRT from the node,
    the core in its working directory (core_pattern "core")."""
    version = request.param
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if pattern.startswith("|") or "/" in pattern or "%" in pattern:
        pytest.skip("kernel.core_pattern is %r: the kernel does not write the core in the "
                    "process's working directory" % pattern)
    workdir = str(tmp_path_factory.mktemp("kcore-%s" % version))
    svc = _start("pid+mnt", version, workdir, init=True)
    try:
        os.kill(svc.pid, signal.SIGABRT)
        svc.target.proc.wait(timeout=60)
    finally:
        svc.target.stop()
    names = [n for n in os.listdir(workdir) if n == pattern or n.startswith(pattern + ".")]
    assert names, "no core in %s: %s" % (workdir, os.listdir(workdir))
    yield svc, os.path.join(workdir, names[0])


@pytest.mark.parametrize("reader", DRIVERS, ids=[d.name for d in DRIVERS])
def test_kernel_core_written_in_the_namespace(kernel_core, reader):
    """gdb and lldb read a core the kernel wrote inside the namespace: its
    threads have the ids the namespace gave them (the kernel writes them
    so), each selected in turn showing its own stack."""
    svc, core = kernel_core
    reader.require(svc.version)
    tids = {own: own for own in svc.info}
    c = reader.run([("all", "%s --all --json" % reader.command)]
                   + per_thread_commands(reader, sorted(tids)),
                   executable=svc.target.view["executable"], core=core)
    check_document(svc, c.json("all"), False, unnamed=(None, "debugger"), waits=False,
                   context=c.describe("all"))
    check_per_thread(svc, c, tids, False)


SIDECAR_VERSIONS = VERSIONS[1:2] or VERSIONS


@pytest.mark.parametrize("version", SIDECAR_VERSIONS)
@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_debugger_in_a_sidecar(driver, version, tmp_path):
    """gdb and lldb in a sidecar (the target's PID namespace, their own
    root and /proc): the ids are the target's; each thread in turn."""
    driver.require(version)
    svc = _start("pid+mnt", version, str(tmp_path))
    try:
        tids = {own: own for own in svc.info}
        s = driver.run([("all", "%s --all --json" % driver.command)]
                       + per_thread_commands(driver, sorted(tids)),
                       pid=svc.own_pid, prefix=svc.container.sidecar(svc.pid, []))
        check_document(svc, s.json("all"), False, waits="blocked", context=s.describe("all"))
        check_per_thread(svc, s, tids, False)
    finally:
        svc.target.stop()


def _from_a_remote(name, version, tmp_path, session):
    """A session over a remote stub attached from the node (``session(driver,
    service, named commands)``: a NamedSession): /proc is not the
    debugger's to read, the threads are matched by their TLS base (fs_base:
    the pthread handle)."""
    found = [d for d in DRIVERS if d.name == name]
    if not found:
        pytest.skip("%s is not among the drivers" % name)
    driver = found[0]
    driver.require(version)
    svc = _start("pid+mnt", version, str(tmp_path))
    try:
        tids = {here: own for own, here in svc.host.items()}
        named = [("all", "%s --all --json" % driver.command)] + per_thread_commands(
            driver, sorted(tids))
        s = session(driver, svc, named)
        check_document(svc, s.json("all"), True, unnamed=("debugger",), waits=False,
                       context=s.describe("all"))
        check_per_thread(svc, s, tids, True)
    finally:
        svc.target.stop()


@pytest.mark.parametrize("version", VERSIONS[:1])
def test_gdbserver_from_the_node(version, tmp_path):
    """gdb over a gdbserver attached from the node."""
    _from_a_remote("gdb", version, tmp_path, lambda driver, svc, named: driver.run(
        named, executable=svc.target.view["executable"], remote=svc.pid))


@pytest.mark.parametrize("version", VERSIONS[:1])
def test_lldb_server_from_the_node(version, tmp_path):
    """lldb over an lldb-server attached from the node."""
    from test_remote import _run_lldb_remote
    _from_a_remote("lldb", version, tmp_path, lambda driver, svc, named: drivers.NamedSession(
        _run_lldb_remote(svc.target, [c for _, c in named], tmp_path),
        ["connect"] + [n for n, _ in named]))


# ---- the mapping itself (no target) ---------------------------------------------

sys.path.insert(0, PACKAGE_DIR)
from pyframes import errors, model, render, stack_command, tids as pyf_tids  # noqa: E402


def _thread(native, ident, **kw):
    return model.Thread(thread_id=ident, native_thread_id=native, **kw)


class _FakeTarget(object):
    """Target.snapshot over a fixed list of threads (PYF_SNAP_ONE_THREAD:
    the threads whose native id is native_tid, NoSuchThread without)."""

    def __init__(self, threads):
        self.threads = threads
        self.asked = []

    def snapshot(self, native_tid=None, **walk):
        self.asked.append(native_tid)
        chosen = [t for t in self.threads if native_tid is None or t.native_thread_id == native_tid]
        if native_tid is not None and not chosen:
            raise errors.NoSuchThread(errors.PYF_ENOTHREAD, "none")
        return model.Snapshot(pid=None, python=model.PythonInfo("3.14.0", 0x030E00F0, 3, 14, 0),
                              interpreters=(model.Interpreter(0, threads=tuple(chosen)),))


def test_pointer_ids_match_by_the_pthread_handle():
    """A debugger's threads (their ids here and TLS bases) against the
    Python threads (their own ids and thread_id): the ids here differ,
    each is matched by its handle, a thread without a handle is no one's,
    and the interpreter's id is asked for."""
    threads = [_thread(1, 0x7000), _thread(2, 0x7100), _thread(3, 0x7200)]
    ids = pyf_tids.of_pointers({30290: 0x7000, 30291: 0x7100, 30299: 0x7200, 30300: 0x9999},
                               lambda: threads)
    assert ids.recorded(30291) == 2 and ids.recorded(30300) is None
    assert ids.recorded(5) is None and not ids.is_os_thread(5) and ids.is_os_thread(30290)
    assert ids.foreign
    filled = ids.fill(threads)
    assert [t.host_thread_id for t in filled] == [30290, 30291, 30299]
    target = _FakeTarget(threads)
    snap, shown, _ = stack_command.select_thread(target, 30291, by_python_id=False, ids=ids)
    assert [t.native_thread_id for t in shown] == [2] and target.asked == [2]
    # a number no thread here has: the thread's own id in its namespace
    snap, shown, _ = stack_command.select_thread(target, 3, ids=ids)
    assert [t.native_thread_id for t in shown] == [3]
    # the debugger's selected thread is never taken for another's own id
    assert stack_command.select_thread(target, 3, by_python_id=False, ids=ids)[1] == []


def test_pointer_ids_of_the_same_namespace_change_nothing():
    """Handles that match threads with the same ids (outside any
    namespace, a core the kernel wrote inside one): nothing filled, ids
    as they are; without any handle (no TLS base: another machine) the
    identity."""
    threads = [_thread(41, 0x7000), _thread(42, 0x7100)]
    ids = pyf_tids.of_pointers({41: 0x7000, 42: 0x7100}, lambda: threads)
    assert ids.recorded(42) == 42 and not ids.foreign
    assert ids.fill(threads) == threads
    assert pyf_tids.of_pointers({}, lambda: threads) is pyf_tids.SAME
    assert pyf_tids.SAME.recorded(7) == 7 and pyf_tids.SAME.fill(threads) is threads


def test_headers_and_json_name_both_ids():
    """The header: the id here first, the target's beside it; JSON keeps
    native_thread_id and adds host_thread_id only where they differ (null
    for an OS thread not found)."""
    t = _thread(2, 0x7f10, interpreter_id=0, host_thread_id=30290)
    assert render.thread_header(t) == "Thread 0x7f10 (native 30290, 2 in its namespace, " \
        "interpreter 0):"
    assert pyf_tids.os_tid(t) == 30290
    d = t.to_dict()
    assert (d["native_thread_id"], d["host_thread_id"]) == (2, 30290)
    assert list(d)[:3] == ["thread_id", "native_thread_id", "host_thread_id"]
    gone = _thread(2, 0x7f10, interpreter_id=0, host_thread_id=0)
    assert "(native ?, 2 in its namespace" in render.thread_header(gone)
    assert gone.to_dict()["host_thread_id"] is None and pyf_tids.os_tid(gone) is None
    plain = _thread(12345, 0x7f10, interpreter_id=0)
    assert render.thread_header(plain) == "Thread 0x7f10 (native 12345, interpreter 0):"
    assert "host_thread_id" not in plain.to_dict()


def test_permission_denied_in_a_container(monkeypatch):
    """Inside a container a refused read names what to grant, besides
    ptrace_scope; outside one the words stay as they were."""
    e = errors.PermissionDenied(errors.PYF_EPERM, "cannot read /proc/1/maps: permission "
                                "denied; ptrace access to the target is required: check "
                                "/proc/sys/kernel/yama/ptrace_scope and CAP_SYS_PTRACE")
    monkeypatch.setattr(errors, "in_container", lambda: False)
    assert "kubectl" not in str(e)
    monkeypatch.setattr(errors, "in_container", lambda: True)
    assert "--cap-add SYS_PTRACE" in str(e) and "kubectl debug --profile=general" in str(e)
    assert "ptrace_scope" in str(e)
