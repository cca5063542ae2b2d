"""``python3 -m pyframes dump PID`` against live targets, and its errors."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import (HEAP_INTERPRETERS, REFUSED_INTERPRETERS, in_sandbox, scenario_params, start_saying_version,
                      start_scenario)
from oracle import compare_views, keys

CLI_TIMEOUT = 120


def run_cli(env, *args):
    return subprocess.run([sys.executable, "-m", "pyframes"] + [str(a) for a in args],
                          capture_output=True, timeout=CLI_TIMEOUT, env=env,
                          stdin=subprocess.DEVNULL)


def _text(res):
    return (res.stdout.decode("utf-8", "replace"), res.stderr.decode("utf-8", "replace"))


@pytest.fixture(scope="module", params=scenario_params(("threads", "names"), older="all", heap=True))
def target(request, tmp_path_factory):
    with start_scenario(request.param, tmp_path_factory, "cli-") as t:
        yield t


def test_dump_text(target, cli_env):
    """The text output has a header per thread (with its native id) followed
    by its innermost frame: file, line and function."""
    res = run_cli(cli_env, "dump", target.pid)
    out, err = _text(res)
    assert res.returncode == 0, err
    lines = out.splitlines()
    problems = []
    for tid, frames in target.views.items():
        name = target.thread_name(tid)
        header = [i for i, l in enumerate(lines) if re.search(r"\bnative %d\b" % tid, l)]
        if len(header) != 1:
            problems.append("%s: %d header lines name native id %d" % (name, len(header), tid))
            continue
        if not frames:
            continue  # a thread without Python frames: its header is enough
        frame_lines = [l for l in lines[header[0] + 1:] if l.lstrip().startswith("File ")]
        if not frame_lines:
            problems.append("%s: no frame line after its header" % name)
            continue
        first = frame_lines[0]
        inner = frames[0]
        want = ', line %d, in %s' % (inner["line"], inner["function"])
        if want not in first or inner["filename"] not in first:
            problems.append("%s: innermost frame line %r; expected file %r and %r"
                            % (name, first, inner["filename"], want))
    assert out.count("Traceback") >= 1
    if problems:
        pytest.fail("text output problems:\n" + "\n".join(problems) + "\n--- output:\n" + out,
                    pytrace=False)


def test_dump_json(target, cli_env):
    """--json prints exactly one JSON document matching the target's view."""
    res = run_cli(cli_env, "dump", target.pid, "--json")
    out, err = _text(res)
    assert res.returncode == 0, err
    doc = json.loads(out)  # the whole of stdout is one document
    assert out.endswith("\n") and out.count("\n") == 1
    assert doc["pid"] == target.pid
    assert doc["python"]["hexversion"] == target.hexversion
    got = {}
    for interp in doc["interpreters"]:
        for th in interp["threads"]:
            assert th["complete"] is True, th.get("error")
            got[th["native_thread_id"]] = [(f["function"], f["filename"], f["line"])
                                           for f in th["frames"]]
    expected = {tid: keys(frames) for tid, frames in target.views.items()}
    names = {tid: target.thread_name(tid) for tid in expected}
    problems = compare_views(expected, got, "target's view", "pyframes --json", names)
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.mark.parametrize("how", ["native", "python"])
def test_dump_one_thread(target, cli_env, how):
    """--thread N keeps the thread whose native or Python thread id is N, as
    in the debugger commands (the same option, pyframes.options)."""
    tid = sorted(t for t, frames in target.views.items() if frames)[-1]
    wanted = tid if how == "native" else target.thread_ident(tid)
    res = run_cli(cli_env, "dump", target.pid, "--json", "--thread", "0x%x" % wanted)
    out, err = _text(res)
    assert res.returncode == 0, err
    doc = json.loads(out)
    threads = [th for interp in doc["interpreters"] for th in interp["threads"]]
    assert [th["native_thread_id"] for th in threads] == [tid], threads
    assert [(f["function"], f["filename"], f["line"]) for f in threads[0]["frames"]] == \
        keys(target.views[tid])


def test_dump_unknown_thread(target, cli_env):
    res = run_cli(cli_env, "dump", target.pid, "--thread", "1")
    _assert_one_line_error(res, "no Python thread has native thread id or Python thread id 1")


def _assert_one_line_error(res, *needles):
    out, err = _text(res)
    assert res.returncode == 1, (res.returncode, out, err)
    assert out == "", out
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("pyframes: error: "), err
    assert "Traceback" not in err
    low = lines[0].lower()
    assert any(n.lower() in low for n in needles), (
        "error message %r names none of %r" % (lines[0], needles))


@pytest.fixture
def sleeper():
    proc = subprocess.Popen(["sleep", "100"], stdin=subprocess.DEVNULL)
    try:
        # Popen returns once the child has exec'd (its error pipe is
        # close-on-exec), so the process already is sleep, not Python.
        assert os.path.basename(os.readlink("/proc/%d/exe" % proc.pid)) == "sleep"
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("extra", [(), ("--json",)], ids=["text", "json"])
def test_error_not_python(sleeper, cli_env, extra):
    """A process without Python, named by its PID and its name, in the words
    of gdb and lldb."""
    res = run_cli(cli_env, "dump", sleeper.pid, *extra)
    _assert_one_line_error(res, "python")
    assert _text(res)[1] == ("pyframes: error: process %d (sleep) is not a Python process\n"
                             % sleeper.pid)


def test_error_dead_pid(cli_env):
    proc = subprocess.Popen(["true"])
    proc.wait()
    pid = proc.pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    res = run_cli(cli_env, "dump", pid)
    _assert_one_line_error(res, "no such process", str(pid))


def test_error_bad_pid_argument(cli_env):
    res = run_cli(cli_env, "dump", "0")
    out, err = _text(res)
    assert res.returncode not in (0, 1), (res.returncode, err)
    assert out == ""
    assert err.startswith("pyframes: error: ") or "usage" in err.lower(), err
    # not a number: a core file's path, which this one is not
    res = run_cli(cli_env, "dump", "not-a-pid")
    out, err = _text(res)
    assert (res.returncode, out) == (1, ""), (res.returncode, err)
    assert err == ("pyframes: error: no core file not-a-pid (a number is a PID, anything "
                   "else a core file's path)\n"), err


# CPythons pyframes refuses, each named by its version, never "no runtime
# found": pyenv's 3.7, 3.6 and 2.7 where the machine has them, which have
# no Py_Version: the library reads the version from the string
# Py_GetVersion() keeps in the .bss of libpython; and tests/c/rt_target's
# "old" mode, a program holding that string for 3.7.17 beside a
# Py_GetVersion function, copied as python3.7.  Oracle: the target's own
# platform.python_version().


def _refused_params():
    return [pytest.param(i.path, id=i.name) for i in REFUSED_INTERPRETERS] + \
        [pytest.param("rt_target", id="rt_target-old")]


def _start_refused(which, library_path, tmp_path):
    """(process, the version it says it is)."""
    if which == "rt_target":
        rt = os.path.join(os.path.dirname(os.path.dirname(library_path)), "tests", "c",
                          "rt_target")
        if not os.access(rt, os.X_OK):
            pytest.skip("no build of tests/c/rt_target")
        exe = str(tmp_path / "python3.7")
        shutil.copy(rt, exe)
        rfd, wfd = os.pipe()
        try:
            proc = subprocess.Popen([exe, str(wfd), "old"], stdin=subprocess.PIPE,
                                    pass_fds=(wfd,))
        finally:
            os.close(wfd)
        with os.fdopen(rfd) as ready:
            line = ready.readline()
        return proc, line.startswith("ready") and "3.7.17"
    return start_saying_version(which)


@pytest.mark.parametrize("which", _refused_params())
def test_error_unsupported_version_is_named(which, cli_env, library_path, tmp_path):
    """An interpreter outside 3.8-3.15 is named by its version, in the
    library's words, the same as gdb and lldb print it."""
    proc, version = _start_refused(which, library_path, tmp_path)
    try:
        assert version, "the target did not start: %s" % which
        for extra in ((), ("--json",)):
            res = run_cli(cli_env, "dump", proc.pid, *extra)
            _assert_one_line_error(res, "unsupported")
            assert _text(res)[1] == ("pyframes: error: unsupported CPython %s (pyframes "
                                     "reads CPython 3.8-3.15)\n" % version), \
                (which, _text(res))
    finally:
        proc.kill()
        proc.wait()


def test_older_interpreters_present():
    """The versions the suites name are there: pyenv's 3.8-3.10 (read) and
    3.7, 3.6, 2.7 (refused) are on every machine of this kind (bind-mounted
    into the sandbox root)."""
    heap = sorted(i.minor for i in HEAP_INTERPRETERS)
    refused = sorted(i.minor for i in REFUSED_INTERPRETERS)
    if not ({"3.8", "3.9", "3.10"} <= set(heap) and {"3.7", "3.6", "2.7"} <= set(refused)):
        message = "pyenv's CPython 3.8-3.10 and 3.7, 3.6, 2.7 not all found (found: %s, %s)" % (
            heap or "none", refused or "none")
        if in_sandbox():
            pytest.fail(message)
        pytest.skip(message)


def test_limit_keeps_frames_and_counts_the_rest(target, cli_env):
    """--limit N shows the N innermost frames of each thread and counts the
    others, in text and JSON alike; --max-depth N bounds the walk (the
    thread is then incomplete).  Oracle: the target's own view."""
    deep = {tid: frames for tid, frames in target.views.items() if len(frames) > 2}
    assert deep, target.views
    doc = json.loads(run_cli(cli_env, "dump", target.pid, "--json", "--limit", 2).stdout)
    bounded = json.loads(run_cli(cli_env, "dump", target.pid, "--json", "--max-depth", 2).stdout)
    text = _text(run_cli(cli_env, "dump", target.pid, "--limit", 2, "--no-source"))[0]
    for document, complete in ((doc, True), (bounded, False)):
        rows = {th["native_thread_id"]: th for i in document["interpreters"]
                for th in i["threads"]}
        for tid, frames in deep.items():
            row = rows[tid]
            assert [(f["function"], f["filename"], f["line"]) for f in row["frames"]] == \
                keys(frames)[:2], row
            assert row["complete"] is complete, row
            if complete:
                assert row["more_frames"] == len(frames) - 2, row
            else:
                assert "more_frames" not in row, row
    blocks = {int(re.search(r"\(native (\d+)", b).group(1)): b for b in text.split("\n\n")}
    for tid, frames in deep.items():
        assert blocks[tid].count('  File "') == 2, blocks[tid]
        assert "  ... %d more frame%s" % (len(frames) - 2, "s" if len(frames) > 3 else "") \
            in blocks[tid], blocks[tid]
