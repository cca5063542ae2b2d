"""Garbage where the thread facts and --locks read, end to end: the target
(targets/hostile_threads.py) corrupts its own Thread objects (a _name that
is an int, a wild pointer, bytes of no object, a str header claiming 2**40
characters, a Thread whose __dict__ has a garbage keys pointer, a real 10 MB
name), its threading._active (20,000 impostors around the real threads, one
thread mapped to the table itself), an RLock's owner ident, and the
exceptions threads handle (a 10 MB message, an args tuple holding itself, a
traceback whose last entry leads back to its first, an args tuple saying
2**40 items, a garbage type pointer).

Through the command line (``dump --locks``, JSON and text), gdb and lldb
(``--all --locks``, JSON and text, then a plain command; live, and gdb's
core of the process read by each): every output
complete and bounded, no name taken from garbage (never "impostor"), the
untouched threads still named, the RLock's wait with no holder, no cycle
anywhere, and the debugger answers the next command.
"""

import json
import os
import re

import pytest

import conftest
import debugger_util as du
import drivers
from test_thread_state import _cli

MODES = ("objects", "active")
NAMED = {  # mode -> threads whose own name must still be read
    "objects": ("control", "rl-holder", "rl-waiter", "big-message", "self-args", "tb-cycle",
                "huge-args", "bad-type", "huge-message-str"),
    "active": (),  # the real threads past the first 8,192 entries read: no name, or theirs
}
GARBAGE_NAMES = {"objects": ("int-name", "wild-name", "junk-name", "huge-str", "bad-dict"),
                 "active": ("cyclic",)}
MESSAGE_MAX = 200  # PYF_FACT_MESSAGE_MAX
NAME_CHARS = 256
LINE_MAX = 1000    # a header or an exception line, bounded whatever the target holds
DRIVERS = [d for d in drivers.selected() if d.name in ("gdb", "lldb")]


class Hostile(object):
    pass


# the debuggers' versions, and the older CPythons (3.12, and 3.11 where
# present) through the command line
OLDER = {i.name: i.path for i in conftest.older_interpreters("all")}
VERSIONS = tuple(du.VERSIONS) + tuple(OLDER)


@pytest.fixture(scope="module", params=[(v, m) for v in VERSIONS for m in MODES],
                ids=["%s-%s" % (v, m) for v in VERSIONS for m in MODES])
def hostile(request, tmp_path_factory, cli_env):
    version, mode = request.param
    if version not in OLDER:
        du.require(None, version)
    workdir = str(tmp_path_factory.mktemp("hostile-threads-%s-%s" % (version, mode)))
    with du.LiveTarget(OLDER.get(version) or du.python_for(version), "hostile_threads.py",
                       workdir=workdir, args=[mode]) as target:
        h = Hostile()
        h.version, h.mode, h.target = version, mode, target
        with open(os.path.join(workdir, "hostile.json")) as f:
            h.truth = json.load(f)
        h.minor = int(target.doc["hexversion"]) >> 16 & 0xFF
        h.cli_env = cli_env
        yield h


def _rows(doc):
    return {t["native_thread_id"]: t for i in doc["interpreters"] for t in i["threads"]}


def check_json(h, doc, locks=True):
    rows = _rows(doc)
    names = h.truth["names"]
    problems = []
    for name, tid in names.items():
        if tid not in rows:
            problems.append("thread %s (%d) missing" % (name, tid))
    rows_named = {n: rows.get(tid) or {} for n, tid in names.items()}
    for name in NAMED[h.mode]:
        row = rows_named[name]
        if (row.get("name"), row.get("name_source")) != (name, "python"):
            problems.append("%s: name %r from %r" % (name, row.get("name"),
                                                     row.get("name_source")))
    for name in GARBAGE_NAMES[h.mode]:
        if rows_named[name].get("name_source") == "python":
            problems.append("%s: a name from garbage: %r" % (name, rows_named[name]["name"]))
    own = {tid: name for name, tid in names.items()}
    own[h.target.main_tid] = "MainThread"
    for tid, row in rows.items():
        if row["name_source"] == "python" and row["name"] != own.get(tid) and \
                own.get(tid) != "long-name":
            problems.append("thread %d named %r from Python, its name is %r"
                            % (tid, row["name"], own.get(tid)))
    if doc.get("deadlocks"):
        problems.append("cycles where there is none: %s" % doc["deadlocks"])
    if h.mode == "objects":
        problems += _check_objects(h, rows_named, locks)
    else:
        problems += ["%s: an exception %r" % (n, r.get("exception"))
                     for n, r in rows_named.items() if r.get("exception") is not None]
    return problems


def _check_objects(h, rows, locks):
    problems = []
    long_name = rows["long-name"].get("name") or ""
    if rows["long-name"].get("name_source") != "python" or set(long_name) != {"n"} or \
            len(long_name) > NAME_CHARS:
        problems.append("long-name: %r" % long_name[:300])
    excs = {n: r.get("exception") for n, r in rows.items()}
    for name in ("big-message", "self-args", "tb-cycle", "huge-args", "huge-message-str"):
        exc = excs.pop(name)
        if exc is None or exc["type"] != "ValueError" or exc["handled"] is not True or \
                len(exc["message"] or "") > MESSAGE_MAX + 3 or \
                exc["file"] not in (None, h.truth["file"]):
            problems.append("%s: exception %r" % (name, exc))
    for name in ("huge-args", "huge-message-str"):
        huge = (rows[name].get("exception") or {}).get("message")
        if huge is not None and not huge.startswith("<unreadable"):
            problems.append("%s: a message from past its object: %r" % (name, huge))
    big = (rows["big-message"].get("exception") or {}).get("message") or ""
    if big and (set(big.rstrip(".")) != {"m"}):
        problems.append("big-message: %r" % big)
    bad = excs.pop("bad-type")
    if bad is not None and bad["type"] != "<unreadable>":
        problems.append("bad-type: a type from garbage: %r" % bad)
    problems += ["%s: an exception %r" % (n, e) for n, e in excs.items() if e is not None]
    wait = rows["rl-waiter"].get("waits_for")
    if locks and h.minor >= 14 and (wait is None or wait["address"] != h.truth["locks"]["rlock"]):
        problems.append("rl-waiter: waits for %r" % (wait,))
    if wait is not None and wait["held_by"] is not None:
        problems.append("rl-waiter: held by %r from a garbage owner" % (wait["held_by"],))
    return problems


def check_text(h, text):
    problems = []
    for name, tid in h.truth["names"].items():
        if "(native %d," % tid not in text:
            problems.append("no header of %s (%d)" % (name, tid))
    for line in text.splitlines():
        if len(line) > LINE_MAX:
            problems.append("a line of %d characters: %r..." % (len(line), line[:200]))
    for word in ("impostor", "deadlock:"):
        if word in text:
            problems.append("%r in the text" % word)
    return problems


def _assert(problems, context):
    assert not problems, "\n".join(problems) + "\n" + context[-8000:]


def test_cli(hostile):
    h = hostile
    text = _cli(h.cli_env, h.target.pid, "--locks", "--all", "--no-source")
    _assert(check_json(h, json.loads(_cli(h.cli_env, h.target.pid, "--locks", "--json"))) +
            check_text(h, text), text)
    # again, grouped (no --locks): nothing of the first reads kept it from working
    grouped = json.loads(_cli(h.cli_env, h.target.pid, "--json", "--group"))
    _assert(check_json(h, grouped, locks=False), "")


def _debuggers_read(h):
    if h.version in OLDER:
        pytest.skip("the gdb and lldb drivers do not run CPython %s targets" % h.version)


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_debugger(hostile, driver):
    h = hostile
    _debuggers_read(h)
    driver.require(h.version)
    cmd = driver.command
    echo, answer = driver.echo(7)
    s = driver.run([("json", "%s --all --locks --json" % cmd),
                    ("text", "%s --all --locks --no-source" % cmd),
                    ("echo", echo),
                    ("again", "%s --all --json" % cmd)], pid=h.target.pid)
    _assert(check_json(h, s.json("json")) + check_text(h, s["text"]), s.describe("json"))
    assert any(re.match(answer, line) for line in s["echo"].splitlines()), \
        s.describe("echo")
    again = _rows(s.json("again"))
    assert set(h.truth["names"].values()) <= set(again), s.describe("again")


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_core(hostile, driver):
    """gdb's core of the same process, read by each debugger: what the live
    process gave (the garbage is in the core as it was in memory)."""
    h = hostile
    _debuggers_read(h)
    driver.require(h.version)
    if not du.gdb_usable():
        pytest.skip("no gdb to write an ELF core")
    if getattr(h, "core", None) is None:
        h.core = os.path.join(h.target.workdir, "hostile.core")
        du.run_gdb(["gcore " + h.core], pid=h.target.pid, plugin=False)
    if not os.path.exists(h.core):
        pytest.fail("gdb wrote no core")
    cmd = driver.command
    s = driver.run([("json", "%s --all --locks --json" % cmd),
                    ("text", "%s --all --locks --no-source" % cmd)],
                   executable=h.target.view["executable"], core=h.core)
    _assert(check_json(h, s.json("json")) + check_text(h, s["text"]), s.describe("json"))
