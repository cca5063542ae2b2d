"""Several interpreters in one process (3.14+: concurrent.interpreters; 3.11
and 3.12: _xxsubinterpreters).

A worker OS thread runs code in a subinterpreter; that code records its own
stack and blocks.  The OS thread then has a thread state in each
interpreter: pyframes must show the subinterpreter's stack exactly as it saw
itself, and the main interpreter's part of the same OS thread ending in the
frames that called Interpreter.exec (recorded by the caller itself; 3.11
and 3.12's run_string is C, with no frame of its own above them).
"""

import os
import sys

import pytest

import debugger_util as du
from livetarget import LiveTarget

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "native", "python"))
import pyframes  # noqa: E402



VERSIONS = ["3.14", "3.15", "pyenv-3.12", "pyenv-3.11"]


def _frames(thread):
    return [[f.function, f.filename, f.line] for f in thread.frames]


@pytest.fixture(params=VERSIONS)
def target(request, tmp_path):
    version = request.param
    du.require(None, version)
    with LiveTarget(du.python_for(version), "subinterp.py", tmp_path) as t:
        t.doc["version"] = version
        yield t.doc


def test_snapshot_shows_every_interpreter(target):
    with pyframes.attach(target["pid"]) as t:
        snap = t.snapshot()
    ids = [i.id for i in snap.interpreters]
    assert len(ids) == 2 and 0 in ids, ids
    mine = [th for th in snap.threads() if th.native_thread_id == target["native_tid"]]
    by_interp = {th.interpreter_id: th for th in mine}
    assert sorted(by_interp) == sorted(ids), mine
    sub = by_interp[[i for i in ids if i != 0][0]]
    assert sub.complete and _frames(sub) == target["sub"], (_frames(sub), target["sub"])
    main_part = by_interp[0]
    got = _frames(main_part)
    # the recorded caller frames, then whatever Interpreter.exec runs above them
    assert got[-len(target["outer"]):][1:] == target["outer"][1:], (got, target["outer"])
    assert got[-len(target["outer"])][:2] == target["outer"][0][:2]
    if target["version"][0].isdigit():
        assert "interpreters" in got[0][1], got  # Interpreter.exec
    else:
        assert len(got) == len(target["outer"]), got


def test_debugger_selected_os_thread_shows_both_interpreters(target):
    du.require("gdb")
    s = du.run_gdb(["py-bt-fast --thread %d --json" % target["native_tid"]],
                   pid=target["pid"])
    doc = s.json(0)
    threads = [(i["id"], th) for i in doc["interpreters"] for th in i["threads"]]
    assert len(threads) == 2, s.describe(0)
    assert all(th["native_thread_id"] == target["native_tid"] for _, th in threads)
    sub = [th for iid, th in threads if iid != 0][0]
    assert [[f["function"], f["filename"], f["line"]] for f in sub["frames"]] == target["sub"]
