"""The `main` tag of a thread header while the main thread finalizes
(targets/shutdown_wait.py: main() returned, the interpreter waits in
threading._shutdown for a non-daemon thread).  CPython 3.14+ clears the
interpreter's record of its main thread before that (interp->threads.main,
which the header reads otherwise); the tag still names the thread that
threading.main_thread() names, by the target's own record of it (the
oracle), and no other: the command line, gdb and lldb."""

import re

import pytest

import conftest
import debugger_util as du
from livetarget import kill_json, start_json
from test_cli import run_cli

_HEADER = re.compile(r"^Thread 0x[0-9a-f]+ .*\(native (\d+), ([^)]*)\)", re.M)


def _interpreters():
    chosen = [i for i in conftest.INTERPRETERS
              if i.kind in ("release", "pyenv") and i.version >= (3, 14)]
    return [pytest.param(i, id=i.name) for i in chosen] or [pytest.param(None, id="none")]


@pytest.fixture(scope="module", params=_interpreters())
def finishing(request):
    if request.param is None:
        conftest.require_interpreters()
        pytest.skip("no CPython 3.14 or later")
    proc, doc = start_json(request.param.path, "shutdown_wait.py")
    try:
        yield doc
    finally:
        kill_json(proc)


def _tagged(text):
    """{native id: whether its header says main} of every thread header."""
    return {int(m.group(1)): "main" in m.group(2).split(", ") for m in _HEADER.finditer(text)}


def _check(doc, text, context):
    tagged = _tagged(text)
    assert len(tagged) == 2 and tagged.get(doc["main"]) is True, (tagged, doc, context)
    assert sum(tagged.values()) == 1, (tagged, context)


def test_cli_main_tag_in_shutdown(finishing, cli_env):
    res = run_cli(cli_env, "dump", finishing["pid"], "--no-source")
    text = res.stdout.decode()
    assert res.returncode == 0, res.stderr.decode()
    assert "in _shutdown" in text, text  # where the oracle saw it
    _check(finishing, text, text)


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_debugger_main_tag_in_shutdown(finishing, debugger):
    du.require(debugger)
    if debugger == "gdb":
        s = du.run_gdb(["py-bt-fast --all --no-source",
                        "py-bt-fast --all --no-source --reader debugger"], pid=finishing["pid"])
    else:
        s = du.run_lldb(["pystack --all --no-source",
                         "pystack --all --no-source --reader debugger"], pid=finishing["pid"])
    for at in (0, 1):
        _check(finishing, s[at], s.describe(at))
