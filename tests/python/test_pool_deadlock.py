"""``--locks --group`` on a thread pool that deadlocks (targets/pool_deadlock.py):
two transfers of a ThreadPoolExecutor of twelve each hold one account's
lock and wait for the other's, ten workers are idle, the main thread waits
for a result.  With --group the deadlock is still printed first, its two
threads each under their own header with the locks they hold and wait for,
while the ten idle workers fold into one group; in a debugger every header
keeps the debugger's labels (a group's lists all of its threads').

Oracles, never pyframes' own output: the target's own record (each transfer
notes the id() of the lock it holds and of the one it waits for before it
blocks; its health thread sees every thread blocked and gives each one's
stack as sys._current_frames() has it and its exception as
sys._current_exceptions() has it: what sys.exception() returns there), and
the debugger's own thread list (`info threads`, `thread list`) for the
labels.  On CPython 3.13 the waits are inferred (the innermost frame keeps
no stack pointer), and said so.
"""

import json
import re

import pytest

import conftest
import debugger_util as du
from livetarget import kill_json, start_json
from test_cli import run_cli


def _interpreters():
    chosen = [i for i in conftest.INTERPRETERS if i.kind in ("release", "pyenv")]
    return [pytest.param(i, id=i.name) for i in chosen] or [pytest.param(None, id="none")]


class Pool(object):
    def __init__(self, interp):
        self.interp = interp
        self.proc, self.doc = start_json(interp.path, "pool_deadlock.py")
        self.pid = self.doc["pid"]
        self.deadlock = {int(tid): r for tid, r in self.doc["deadlock"].items()}
        self.idle = set(self.doc["idle"])
        self.threads = {int(tid): t for tid, t in self.doc["threads"].items()}
        self.minor = interp.minor

    def name(self, tid):
        return self.threads[tid]["name"]

    def holder(self, lock):
        return [tid for tid, r in self.deadlock.items() if r["holds"] == lock][0]

    def close(self):
        kill_json(self.proc)


@pytest.fixture(scope="module", params=_interpreters())
def pool(request):
    if request.param is None:
        conftest.require_interpreters()
    p = Pool(request.param)
    try:
        yield p
    finally:
        p.close()


def _blocks(text):
    """The text's blocks (separated by empty lines), each as its lines."""
    return [b.splitlines() for b in text.strip("\n").split("\n\n")]


def _frames(lines):
    """[(function, line)] of a block's frames, innermost first."""
    out = []
    for line in lines:
        m = re.match(r'^  File "(.*)", line (\d+), in (\S+)', line)
        if m:
            out.append((m.group(3), int(m.group(2))))
    return out


def _own(thread):
    return [(f, line) for f, _file, line in thread["stack"]]


def _check_text(pool, text, context, labels=None, debugger=None):
    """The deadlock line first, each deadlocked thread under its own header
    with its hold and its wait, the idle workers in one group (their own
    stack, the exception their threads handle); with ``labels`` (native id
    -> the debugger's number) every header's label."""
    blocks = _blocks(text)
    inferred = " \\(inferred: [^)]*\\)" if pool.minor == "3.13" else ""
    a, b = sorted(pool.deadlock)
    # each lock named as the waiting frame names it: deposit(account, ...)
    cycle = [r'^deadlock: "%s" waits for account\.lock <_thread.lock at 0x%x> held by "%s", '
             r'which waits for account\.lock <_thread.lock at 0x%x> held by "%s"%s$'
             % (pool.name(x), pool.deadlock[x]["waits"], pool.name(y),
                pool.deadlock[y]["waits"], pool.name(x), inferred) for x, y in ((a, b), (b, a))]
    assert any(re.match(c, blocks[0][0]) for c in cycle), (blocks[0], context)
    headers = {}
    for block in blocks[1:]:
        m = re.search(r"\(native (\d+)", block[0])
        if block[0].startswith("Thread ") and m:
            headers[int(m.group(1))] = block
    for tid, record in pool.deadlock.items():
        block = headers[tid]
        assert _frames(block) == _own(pool.threads[tid]), (block, context)
        under = "\n".join(block)
        assert "waits for account.lock <_thread.lock at 0x%x> held by \"%s\"" % (
            record["waits"], pool.name(pool.holder(record["waits"]))) in under, (block, context)
        # and as the frame holding it names it: transfer(src, ...)
        assert "holds src.lock <_thread.lock at 0x%x>" % record["holds"] in under, \
            (block, context)
        _check_exception(block, pool.threads[tid]["exception"], context)
        if labels is not None:
            assert block[0].endswith(" [%s thread %s]:" % (debugger, labels[tid])), \
                (block[0], labels[tid], context)
    groups = [block for block in blocks if re.match(r"^\d+ threads with the same stack", block[0])]
    assert len(groups) == 1 and groups[0][0].startswith("10 threads with the same stack: "), \
        (groups, context)
    group = groups[0]
    (one,) = set(tuple(_own(pool.threads[tid])) for tid in pool.idle)
    assert tuple(_frames(group)) == one, (group, context)
    # the exception each idle worker handles, as sys.exception() there says
    (handled,) = set(pool.threads[tid]["exception"] for tid in pool.idle)
    _check_exception(group, handled, context)
    for tid in pool.idle:
        assert tid not in headers, context
    if labels is not None:
        m = re.search(r" \[%s threads ([^\]]+)\]:$" % debugger, group[0])
        assert m, (group[0], context)
        listed = set()
        for part in m.group(1).split(", "):
            lo, _, hi = part.replace("#", "").partition("-")
            listed.update(range(int(lo), int(hi or lo) + 1))
        assert listed == set(int(labels[tid].lstrip("#")) for tid in pool.idle), \
            (group[0], labels, context)


def _check_exception(block, handled, context):
    """The line under a header says the exception the thread handles, as
    sys.exception() in it does (an idle ThreadPoolExecutor worker waits for
    work inside `except queue.Empty:`), and nothing when it says None."""
    if handled is None:
        assert not re.match(r"^  (handling|raising) ", block[1]), (block, context)
    else:
        assert block[1].startswith("  handling %s (" % handled), (block, handled, context)


def test_cli_locks_group(pool, cli_env):
    """`dump --locks --group` (text and JSON): the deadlock and its two
    threads as the target recorded them, the idle workers folded (one
    "groups" entry holding exactly them)."""
    res = run_cli(cli_env, "dump", pool.pid, "--locks", "--group", "--no-source")
    text = res.stdout.decode()
    assert res.returncode == 0, res.stderr.decode()
    _check_text(pool, text, text)
    res = run_cli(cli_env, "dump", pool.pid, "--locks", "--group", "--json")
    assert res.returncode == 0, res.stderr.decode()
    doc = json.loads(res.stdout)
    members = [set(g["native_thread_ids"]) for g in doc["groups"]]
    assert pool.idle in members, members
    for tid in pool.deadlock:
        assert {tid} in members, members
    (cycle,) = doc["deadlocks"]
    assert {w["native_thread_id"]: (w["waits_for"], w["held_by"]) for w in cycle} == {
        tid: (r["waits"], pool.holder(r["waits"])) for tid, r in pool.deadlock.items()}, cycle
    # the hex of the text is the JSON number (docs/json-schema.md, "Numbers"):
    # each header's thread id, as the target's own threading.get_ident()
    rows = {t["native_thread_id"]: t for i in doc["interpreters"] for t in i["threads"]}
    for m in re.finditer(r"^Thread (0x[0-9a-f]+) .*\(native (\d+),", text, re.M):
        tid = int(m.group(2))
        assert int(m.group(1), 16) == rows[tid]["thread_id"], (m.group(0), rows[tid])
        if tid in pool.threads:
            assert rows[tid]["thread_id"] == pool.threads[tid]["ident"], rows[tid]


def test_usage_errors_exit_2(pool, cli_env):
    """Options that do not go together are usage errors: status 2, as
    documented (they were 1)."""
    for args in (("--group", "--locals"), ("--collapsed", "--locks"), ("--collapsed", "--group")):
        res = run_cli(cli_env, "dump", pool.pid, *args)
        err = res.stderr.decode()
        assert res.returncode == 2 and err.startswith("pyframes: error: --"), (args, err)
        assert res.stdout == b"", args


_GDB_THREAD = re.compile(r"^\*?\s*(\d+)\s+Thread 0x[0-9a-f]+ \(LWP (\d+)\)", re.M)
_LLDB_THREAD = re.compile(r"thread #(\d+): tid = (\d+)")


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_debugger_locks_group_keeps_labels(pool, debugger):
    """py-bt-fast / pystack --all --locks --group: the same report, each
    deadlocked thread's header with the debugger's label for it, the idle
    group's header listing every one of its threads' labels, by the
    debugger's own thread list."""
    du.require(debugger)
    if debugger == "gdb":
        s = du.run_gdb(["info threads", "py-bt-fast --all --locks --group --no-source"],
                       pid=pool.pid)
        found = _GDB_THREAD.findall(s[0])
    else:
        s = du.run_lldb(["thread list", "pystack --all --locks --group --no-source"],
                        pid=pool.pid)
        found = _LLDB_THREAD.findall(s[0])
    labels = {int(lwp): ("#" if debugger == "lldb" else "") + num for num, lwp in found}
    assert set(pool.threads) <= set(labels), (labels, s.describe(0))
    _check_text(pool, s[1], s.describe(1), labels, debugger)
