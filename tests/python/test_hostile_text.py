"""Control characters from the target never reach the terminal raw.

The target (targets/hostile.py) names functions (co_name, co_qualname), files
(co_filename, and a real module file whose name and source line hold escape
sequences), its worker thread, asyncio tasks and coroutines with text full of
ESC sequences, BEL, CR, LF, TAB, DEL, NUL, C1 controls, bidi overrides and
isolates, a zero-width space and ';'.  Every output of the CLI (dump, --all,
--tasks, --table, --json, --collapsed, sample's summary, collapsed and
flame graph files), of gdb (py-bt-fast, --all, --tasks, bt through the frame
filter) and of lldb (pystack, --all, --tasks, bt through the frame-format
hook) must hold no character str.isprintable() rejects besides its own line
ends, and must show each name recognisably: as repr() writes it (the
oracle is the list of names the target itself defined, in hostile.json).
--json keeps the exact strings.
"""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import debugger_util as du
from conftest import PACKAGE_DIR

VERSIONS = ("3.13", "3.14", "3.15")


def shown(name):
    """How a name must appear: repr() without its quotes (the names hold
    no quote or backslash, where repr and pyframes could differ)."""
    assert "\\" not in name and "'" not in name
    return repr(name)[1:-1]


def table_cell(name):
    """The start of a name in a --table cell (long cells end in "...")."""
    return shown(name)[:40]


def assert_clean(text, what):
    """No character outside str.isprintable() except the line ends."""
    bad = sorted({c for c in text if c != "\n" and not c.isprintable()})
    assert not bad, "%s holds raw %s:\n%s" % (what, [hex(ord(c)) for c in bad], text[-3000:])


def assert_clean_bytes(data, what):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise AssertionError("%s is not UTF-8: %s" % (what, e))
    assert_clean(text, what)
    return text


class Hostile(object):
    pass


@pytest.fixture(scope="module", params=VERSIONS)
def hostile(request, tmp_path_factory, library_path):
    version = request.param
    du.require(version=version)
    workdir = str(tmp_path_factory.mktemp("hostile-%s" % version))
    target = du.LiveTarget(du.python_for(version), "hostile.py", workdir=workdir)
    with target:
        with open(os.path.join(workdir, "hostile.json")) as f:
            h = Hostile()
            h.names = json.load(f)
        h.version, h.target, h.workdir = version, target, workdir
        h.tasks = version != "3.13"
        h.env = dict(os.environ, PYFRAMES_LIBRARY=library_path, PYTHONPATH=PACKAGE_DIR)
        yield h


def _cli(h, *args, ok=True):
    p = subprocess.run([sys.executable, "-m", "pyframes"] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=h.env, timeout=120)
    out = assert_clean_bytes(p.stdout, "stdout of %s" % (args,))
    err = assert_clean_bytes(p.stderr, "stderr of %s" % (args,))
    if ok:
        assert p.returncode == 0, (args, err)
    return out, err


def _expect(text, names, what, transform=shown):
    missing = [n for n in names if transform(n) not in text]
    assert not missing, "%s does not show %r:\n%s" % (what, missing, text[-4000:])


def test_cli_text_tasks_table_json(hostile):
    h = hostile
    pid = str(h.target.pid)
    functions, files = h.names["functions"], h.names["filenames"]
    out, _ = _cli(h, "dump", pid)
    _expect(out, functions + files, "dump")
    # the module's own source line, read from the file with the hostile name
    assert shown("# \x1b]0;title\x07 \u202eevil \x1b[2J") in out, out
    # a LF inside a name never makes a line of its own: every line that
    # starts like a frame is one of the target's frames
    frames = [line for line in out.splitlines() if line.startswith("  File ")]
    assert len(frames) == sum(len(v) for v in h.target.threads.values()), out
    out, _ = _cli(h, "dump", "--json", pid)
    assert out.isascii()
    mismatches = du.own_view_mismatches(json.loads(out), h.target)
    assert not mismatches, mismatches
    if not h.tasks:
        return
    tasks = h.names["tasks"]
    out, _ = _cli(h, "dump", "--tasks", "--all", pid)
    _expect(out, [name for pair in tasks for name in pair] + functions, "dump --tasks --all")
    out, _ = _cli(h, "dump", "--table", pid)
    _expect(out, [name for name, _ in tasks], "dump --table", table_cell)
    out, _ = _cli(h, "dump", "--tasks", "--json", pid)
    got = {t["name"]: t for t in json.loads(out)["tasks"]}
    for name, coro in tasks:
        assert name in got, (name, sorted(got))
        assert got[name]["coroutine_stack"][-1]["function"] == coro


def test_cli_collapsed_and_sample_files(hostile, tmp_path):
    h = hostile
    pid = str(h.target.pid)
    functions, files = h.names["functions"], h.names["filenames"]

    def collapsed(name):
        return shown(name).replace(";", "\\x3b")

    out, _ = _cli(h, "dump", "--collapsed", pid)
    lines = out.splitlines()
    assert len(lines) == len(h.target.threads), out
    for line in lines:
        stack, count = line.rsplit(" ", 1)
        tid = int(stack.split(";", 1)[0][len("thread-"):])
        assert count == "1" and len(stack.split(";")) == 1 + len(h.target.threads[tid]), line
    _expect(out, functions + files, "dump --collapsed", collapsed)

    cfile, svg = str(tmp_path / "c.txt"), str(tmp_path / "f.svg")
    out, _ = _cli(h, "sample", "--all", "--duration", "0.3", "--collapsed", cfile,
                  "--flamegraph", svg, pid)
    _expect(out, functions, "sample summary")
    with open(cfile, "rb") as f:
        text = assert_clean_bytes(f.read(), "collapsed file")
    for line in text.splitlines():
        stack, count = line.rsplit(" ", 1)
        assert count.isdigit() and all(stack.split(";")), line
    _expect(text, functions, "collapsed file", collapsed)
    with open(svg, "rb") as f:
        data = f.read()
    ET.fromstring(data)  # well-formed XML
    assert_clean_bytes(data, "flame graph")


def _debugger_checks(h, session, names, bt):
    """Each command's output clean; the bt lines pyframes adds (marked
    [python]) clean, the debugger's own lines aside."""
    for i, cmd in enumerate(names):
        text = session[i]
        if cmd in bt:
            text = "\n".join(line for line in text.splitlines() if "[python]" in line)
            assert text, session.describe(i)
        assert_clean(text, "%s (%s)" % (cmd, session.describe(i)))


def test_gdb(hostile):
    h = hostile
    if h.version != "3.14":
        pytest.skip("the debuggers run against 3.14 (tasks and every name)")
    du.require("gdb", h.version)
    worker = [tid for tid in h.target.threads if tid != h.target.pid][0]
    commands = ["py-bt-fast", "py-bt-fast --all", "py-bt-fast --all --tasks",
                "py-bt-fast --table", "py-bt-fast --thread %d --native" % worker,
                "thread apply all bt", "py-bt-fast --all --json"]
    s = du.run_gdb(commands, pid=h.target.pid)
    _debugger_checks(h, s, commands, {"thread apply all bt"})
    functions, files = h.names["functions"], h.names["filenames"]
    _expect(s[1], functions + files, "py-bt-fast --all")
    _expect(s[2], [n for pair in h.names["tasks"] for n in pair], "py-bt-fast --all --tasks")
    _expect(s[3], [n for n, _ in h.names["tasks"]], "py-bt-fast --table", table_cell)
    _expect(s[4], functions[:2], "py-bt-fast --native")
    _expect(s[5], functions, "bt")
    assert not du.own_view_mismatches(s.json(6), h.target)


def test_lldb(hostile):
    h = hostile
    if h.version != "3.14":
        pytest.skip("the debuggers run against 3.14 (tasks and every name)")
    du.require("lldb", h.version)
    commands = ["pystack", "pystack --all", "pystack --all --tasks", "pystack --table",
                "pyframes-bt on", "thread backtrace all", "pystack --all --json"]
    s = du.run_lldb(commands, pid=h.target.pid)
    _debugger_checks(h, s, commands, {"thread backtrace all"})
    functions, files = h.names["functions"], h.names["filenames"]
    _expect(s[1], functions + files, "pystack --all")
    _expect(s[2], [n for pair in h.names["tasks"] for n in pair], "pystack --all --tasks")
    _expect(s[3], [n for n, _ in h.names["tasks"]], "pystack --table", table_cell)
    _expect(s[5], functions, "bt")
    assert not du.own_view_mismatches(s.json(6), h.target)
