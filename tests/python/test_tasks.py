"""asyncio task trees (CPython 3.14+): `dump --tasks`, `py-bt-fast --tasks`
(gdb) and `pystack --tasks` (lldb), live through both readers, from core
files and in a gdb session stopped again after `continue`.

The target is targets/tasks.py: TaskGroup children, gather, nested awaits,
shield, named and unnamed tasks, names given as an int and as an object,
async generators (async for, asend, athrow), a second thread's loop, a task
whose thread exited, finished and cancelled tasks kept alive, an await
cycle between two tasks, and, for the large case, 1,000 idle tasks.

Oracles, never our own output: the target's own record of every task
(walked in-process: names, creating thread, coroutine stacks through
cr_await/ag_await, awaiters), CPython's _remote_debugging
RemoteUnwinder.get_all_awaited_by() run under the target's interpreter
(CPython 3.14.10 sees only its main thread's tasks: its other threads' are
compared with the target's record only) and `python3.X -m asyncio ps`.
"""

import json
import os
import re
import subprocess
import sys

import pytest

import debugger_util as du
import task_oracle as oracle

VERSIONS = ("3.14", "3.15")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _cli(*args):
    env = du.clean_env({"PYTHONPATH": os.path.join(REPO, "native", "python")})
    return subprocess.run([sys.executable, "-m", "pyframes"] + list(args), capture_output=True,
                          text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)


ours = oracle.document_tasks


def _problems(expected, actual, label):
    return oracle.compare_tasks(expected, actual, "oracle", label)


class Scenario(object):
    pass


def _require(version):
    du.require(None, version)
    if du.python_for(version) is None:
        pytest.skip("no python%s" % version)


@pytest.fixture(scope="module", params=VERSIONS)
def scenario(request, tmp_path_factory):
    """One target with every kind of task: the CLI's view, CPython's, `ps`,
    and a gdb and an lldb session on it (the gdb one writes a core, lets the
    process run and stops it again)."""
    version = request.param
    _require(version)
    du.require("gdb", version)
    workdir = str(tmp_path_factory.mktemp("tasks-%s" % version))
    python = du.python_for(version)
    target = du.LiveTarget(python, "tasks.py", workdir=workdir, args=["--cycle"])
    target.start()
    try:
        sc = Scenario()
        sc.version, sc.python, sc.target = version, python, target
        sc.facts = oracle.target_facts(workdir)
        sc.expected = oracle.facts_as_tasks(sc.facts)
        sc.remote = oracle.remote_tasks(python, target.pid)
        sc.ps = oracle.asyncio_ps(python, target.pid)
        cli = _cli("dump", "--tasks", "--json", str(target.pid))
        assert cli.returncode == 0, cli.stderr
        sc.cli = json.loads(cli.stdout)
        sc.cli_tree = _cli("dump", "--tasks", str(target.pid))
        sc.cli_table = _cli("dump", "--table", str(target.pid))
        sc.core = os.path.join(workdir, "gdb.core")
        sc.gdb = du.run_gdb([
            "py-bt-fast --tasks --json",
            "py-bt-fast --tasks --json --reader debugger",
            "py-bt-fast --tasks",
            "py-bt-fast --table --reader debugger",
            "py-bt-fast --all --tasks --no-source",
            "gcore " + sc.core,
            "python print('resumed', PyframesGdbAdapter().resume_for(0.3))",
            "py-bt-fast --tasks --json --reader debugger",
            "py-bt-fast --tasks --json",
        ], pid=target.pid)
        sc.lldb = None
        sc.lldb_core = os.path.join(workdir, "lldb.minidump")
        if du.lldb_usable():
            sc.lldb = du.run_lldb([
                "pystack --tasks --json",
                "pystack --tasks --json --reader debugger",
                "pystack --tasks --reader debugger",
                "process save-core " + sc.lldb_core,
            ], pid=target.pid)
        yield sc
    finally:
        target.stop()


def test_cli_matches_the_targets_own_record(scenario):
    """Every pending task, its name, thread, coroutine stack and awaiters as
    the target itself recorded them."""
    got = ours(scenario.cli)
    problems = _problems(scenario.expected, got, "pyframes")
    assert not problems, "\n".join(problems)


def test_cli_matches_remote_unwinder(scenario):
    """The same against CPython's own reader (all of it on 3.15; on 3.14.10
    what it sees: the main thread's tasks and the exited thread's)."""
    got = ours(scenario.cli)
    remote = scenario.remote
    problems = _problems(remote, {k: v for k, v in got.items() if k in remote}, "pyframes")
    assert not problems, "\n".join(problems)
    missing = set(got) - set(remote)
    if scenario.version == "3.15":
        assert not missing, "tasks CPython does not list: %s" % sorted(missing)
    else:
        loop_thread = scenario.facts["threads"]["loop-thread"]
        assert missing and all(got[t]["thread_id"] == loop_thread for t in missing), (
            oracle.remote_task_limitation((3, 14)), missing)


def test_ps_lists_the_same_tasks(scenario):
    """`python -m asyncio ps`: the same (task id, name) pairs."""
    assert scenario.ps.returncode == 0, scenario.ps.stderr
    theirs = {(r["task_id"], r["task_name"]) for r in scenario.ps.rows}
    got = {(k, v["name"]) for k, v in ours(scenario.cli).items()}
    assert theirs <= got, sorted(theirs - got)
    if scenario.version == "3.15":
        assert theirs == got, sorted(got - theirs)


def test_names_states_and_running_tasks(scenario):
    got = ours(scenario.cli)
    by_role = {t["role"]: t for t in scenario.facts["tasks"]}
    assert got[by_role["name-int"]["id"]]["name"] == "12345"
    assert got[by_role["name-object"]["id"]]["name"] == "some-object-str"
    # unnamed tasks, whether the name is still the int or already a str
    for role in ("unnamed-0", "unnamed-1", "gather-a", "gather-b"):
        assert re.match(r"^Task-\d+$", got[by_role[role]["id"]]["name"]), role
    assert all(t["state"] == "pending" for t in got.values())
    # done tasks are unlinked from the task lists: not shown, as by CPython
    for role in ("finished", "cancelled"):
        assert by_role[role]["id"] not in got, role
    running = {t for t, v in got.items() if v["running"]}
    assert running == {int(i) for i in scenario.facts["running"].values()}, running
    exited = scenario.facts["exited_threads"]
    orphan = by_role["orphan"]["id"]
    assert got[orphan]["thread_id"] == 0 and exited, got[orphan]


def test_debugger_readers_and_lldb_agree(scenario):
    """gdb (PID reader, gdb's reads) and lldb (both) give the CLI's tasks."""
    want = ours(scenario.cli)
    for i in (0, 1):
        assert ours(scenario.gdb.json(i)) == want, scenario.gdb.describe(i)
    if scenario.lldb is not None:
        for i in (0, 1):
            assert ours(scenario.lldb.json(i)) == want, scenario.lldb.describe(i)
        assert '"runner"' in scenario.lldb[2], scenario.lldb.describe(2)


def test_stopped_session_after_continue(scenario):
    """continue, interrupt: the same tasks again, through both readers."""
    s = scenario.gdb
    assert "resumed True" in s[6], s.describe(6)
    want = ours(scenario.cli)
    assert ours(s.json(7)) == want, s.describe(7)
    assert ours(s.json(8)) == want, s.describe(8)


@pytest.mark.parametrize("debugger,core", [("gdb", "gdb"), ("lldb", "gdb"), ("lldb", "lldb")])
def test_core_file_equals_live(scenario, debugger, core):
    """gdb's core (gcore) in gdb and lldb, lldb's own (a minidump) in lldb."""
    path = scenario.core if core == "gdb" else scenario.lldb_core
    exe = scenario.target.view["executable"]
    if debugger == "lldb" and scenario.lldb is None:
        pytest.skip("no lldb")
    assert os.path.exists(path), (scenario.gdb if core == "gdb" else scenario.lldb).describe()
    if debugger == "gdb":
        s = du.run_gdb(["py-bt-fast --tasks --json", "py-bt-fast --table"],
                       executable=exe, core=path)
    else:
        s = du.run_lldb(["pystack --tasks --json", "pystack --table"],
                        executable=exe, core=path)
    assert ours(s.json(0)) == ours(scenario.cli), s.describe(0)
    assert "12345" in s[1] and "tg-child-0" in s[1], s.describe(1)


@pytest.mark.readers("CLI cores")
@pytest.mark.parametrize("core", ["gdb", "lldb"])
def test_cli_core_equals_live(scenario, core):
    """dump CORE --tasks, the library's own core reader (no debugger): gdb's
    core and lldb's minidump of the target give the tasks the live process
    gave (the .AsyncioDebug section found among the core's files)."""
    path = scenario.core if core == "gdb" else scenario.lldb_core
    if core == "lldb" and scenario.lldb is None:
        pytest.skip("no lldb")
    assert os.path.exists(path), (scenario.gdb if core == "gdb" else scenario.lldb).describe()
    res = _cli("dump", path, "--tasks", "--json")
    assert res.returncode == 0, res.stderr
    assert ours(json.loads(res.stdout)) == ours(scenario.cli)
    res = _cli("dump", path, "--table")
    assert res.returncode == 0 and "tg-child-0" in res.stdout, res.stderr


def test_tree_and_table_text(scenario):
    """The tree names every task once (a task awaited by several is drawn
    once, later referred to), states the await cycle, and the table has a
    row per task and awaiter."""
    got = ours(scenario.cli)
    for text in (scenario.cli_tree.stdout, scenario.gdb[2]):
        for tid, t in got.items():
            assert '"%s" (0x%x)' % (t["name"], tid) in text, (t["name"], text[:3000])
        by_role = {t["role"]: t["id"] for t in scenario.facts["tasks"]}
        cycle = re.search(r"^await cycle: (.*)$", text, re.M)
        assert cycle, text[:2000]
        for role in ("cycle-a", "cycle-b"):
            assert "0x%x" % by_role[role] in cycle.group(1)
        # every task drawn in full exactly once
        drawn = re.findall(r"\(T\) \"[^\"]*\" \((0x[0-9a-f]+)\) (pending|cancelled|finished)",
                           text)
        assert sorted(int(a, 16) for a, _ in drawn) == sorted(got), text[:3000]
    rows = [line for line in scenario.cli_table.stdout.splitlines()[2:] if line.strip()]
    assert len(rows) == sum(max(1, len(t["awaited_by"])) for t in got.values()), \
        scenario.cli_table.stdout
    # the thread header names the task its thread runs
    assert re.search(r'^Thread .*running task "runner" \(0x[0-9a-f]+\)', scenario.gdb[4],
                     re.M), scenario.gdb.describe(4)
    assert 'running task "worker-runner"' in scenario.gdb[4], scenario.gdb.describe(4)


@pytest.mark.parametrize("version", VERSIONS)
def test_thousand_idle_tasks(version, tmp_path):
    _require(version)
    with du.LiveTarget(du.python_for(version), "tasks.py", workdir=str(tmp_path),
                       args=["--idle", "1000"]) as target:
        facts = oracle.target_facts(str(tmp_path))
        cli = _cli("dump", "--tasks", "--json", str(target.pid))
        assert cli.returncode == 0, cli.stderr
        got = ours(json.loads(cli.stdout))
        expected = oracle.facts_as_tasks(facts)
        assert len(expected) > 1000
        problems = _problems(expected, got, "pyframes")
        assert not problems, "\n".join(problems[:20])


def test_no_tasks_to_read(tmp_path):
    """CPython 3.13 has no task layout, a 3.14 process that never imported
    asyncio has none mapped: a clear message, and the stacks still work."""
    cases = []
    if du.python_for("3.13"):
        cases.append(("3.13", "tasks.py", ["--idle", "0"], r"3\.13 publishes no asyncio"))
    if du.python_for("3.14"):
        cases.append(("3.14", None, [], r"has not imported asyncio"))
    if not cases:
        pytest.skip("no python3.13 or python3.14")
    for version, script, args, message in cases:
        kw = {"args": args} if script else {"depth": 3}
        workdir = tmp_path / version
        workdir.mkdir()
        with du.LiveTarget(du.python_for(version), script, workdir=str(workdir),
                           **kw) as target:
            alone = _cli("dump", "--tasks", str(target.pid))
            assert alone.returncode == 1 and re.search(message, alone.stderr), alone.stderr
            both = _cli("dump", "--tasks", "--all", "--no-source", str(target.pid))
            assert both.returncode == 0, both.stderr
            assert "Traceback (most recent call first):" in both.stdout
            assert re.search(message, both.stdout), both.stdout
            doc = json.loads(_cli("dump", "--tasks", "--json", str(target.pid)).stdout)
            assert doc["tasks"] == [] and re.search(message, doc["tasks_error"])
            assert doc["interpreters"][0]["threads"]
