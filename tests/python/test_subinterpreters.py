"""Several interpreters in one process (3.14+: concurrent.interpreters).

A worker OS thread runs code in a subinterpreter; that code records its own
stack and blocks.  The OS thread then has a thread state in each
interpreter: pyframes must show the subinterpreter's stack exactly as it saw
itself, and the main interpreter's part of the same OS thread ending in the
frames that called Interpreter.exec (recorded by the caller itself).
"""

import json
import os
import subprocess
import sys

import pytest

import debugger_util as du

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "native", "python"))
import pyframes  # noqa: E402

TARGET = r'''
import json, os, sys, threading, time
from concurrent import interpreters

handshake_fd = int(sys.argv[1])
r, w = os.pipe()

def view(frame):
    frames = []
    while frame is not None:
        frames.append([frame.f_code.co_qualname, frame.f_code.co_filename, frame.f_lineno])
        frame = frame.f_back
    return frames

SUB = """
import json, os, sys, time
def view(frame):
    frames = []
    while frame is not None:
        frames.append([frame.f_code.co_qualname, frame.f_code.co_filename, frame.f_lineno])
        frame = frame.f_back
    return frames
class Job:
    def run(self):
        os.write(W, (json.dumps(view(sys._getframe())) + "\\n").encode()); time.sleep(3600)
def start():
    Job().run()
start()
""".replace("W", str(w))

outer = {}

def worker():
    interp = interpreters.create()
    outer["frames"] = view(sys._getframe()); interp.exec(SUB)

t = threading.Thread(target=worker, daemon=True)
t.start()
line = b""
while not line.endswith(b"\n"):
    line += os.read(r, 65536)
doc = {"pid": os.getpid(), "native_tid": t.native_id,
       "sub": json.loads(line), "outer": outer["frames"]}
os.write(handshake_fd, (json.dumps(doc) + "\n").encode())
time.sleep(3600)
'''

VERSIONS = ["3.14", "3.15"]


def _frames(thread):
    return [[f.function, f.filename, f.line] for f in thread.frames]


@pytest.fixture(params=VERSIONS)
def target(request, tmp_path):
    version = request.param
    du.require(None, version)
    python = du.python_for(version)
    script = tmp_path / "subinterp.py"
    script.write_text(TARGET)
    r, w = os.pipe()
    proc = subprocess.Popen([python, str(script), str(w)], stdin=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, pass_fds=(w,))
    os.close(w)
    try:
        # Handshake: one JSON line, written once the subinterpreter's thread
        # has recorded its stack and is about to block on that same line.
        with os.fdopen(r, "rb") as f:
            line = f.readline()
        if not line.endswith(b"\n"):
            proc.kill()
            pytest.fail("target gave no handshake: %s" % proc.stderr.read().decode())
        yield json.loads(line)
    finally:
        proc.kill()
        proc.wait()


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
    assert "interpreters" in got[0][1], got


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
