"""``python3 -m pyframes dump PID`` against live targets, and its errors."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import scenario_params, start_scenario
from oracle import compare_views, keys

CLI_TIMEOUT = 120


def run_cli(env, *args):
    return subprocess.run([sys.executable, "-m", "pyframes"] + [str(a) for a in args],
                          capture_output=True, timeout=CLI_TIMEOUT, env=env,
                          stdin=subprocess.DEVNULL)


def _text(res):
    return (res.stdout.decode("utf-8", "replace"), res.stderr.decode("utf-8", "replace"))


@pytest.fixture(scope="module", params=scenario_params(("threads", "names")))
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


def test_error_not_python(sleeper, cli_env):
    res = run_cli(cli_env, "dump", sleeper.pid)
    _assert_one_line_error(res, "python")


def test_error_not_python_json(sleeper, cli_env):
    res = run_cli(cli_env, "dump", sleeper.pid, "--json")
    _assert_one_line_error(res, "python")


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


# A CPython whose runtime holds no table pyframes can read.  CPython 3.12
# and older publish none; so does, here, a CPython 3.14 that overwrote the
# cookie of its own table.  The version comes from the exported Py_Version,
# as gdb and lldb name it (pyframes.locate), never "no runtime found".
def _old_pythons():
    """Host interpreters older than 3.13 (outside the sandbox root)."""
    found = [p for p in ("/usr/bin/python3.11", "/usr/bin/python3.12") if os.access(p, os.X_OK)]
    pyenv = os.path.expanduser("~/.pyenv/versions")
    if os.path.isdir(pyenv):
        found += [os.path.join(pyenv, v, "bin", "python3") for v in sorted(os.listdir(pyenv))
                  if re.match(r"3\.1[12]\.", v)]
    return [p for p in found if os.access(p, os.X_OK)]


_VERSION_OF = "import platform, sys; print(platform.python_version(), flush=True); sys.stdin.read()"


def _old_targets(library_path, tmp_path):
    """(argv, version) of processes running a CPython older than 3.13: the
    host's, where there are, and always tests/c/rt_target's "old" mode (a
    program whose Py_Version says 3.11.2 and that has no _Py_DebugOffsets,
    as 3.11 has none), copied as python3.11: only python files are asked."""
    rt = os.path.join(os.path.dirname(os.path.dirname(library_path)), "tests", "c", "rt_target")
    out = []
    if os.access(rt, os.X_OK):
        exe = str(tmp_path / "python3.11")
        shutil.copy(rt, exe)
        out.append((exe, None))
    return out + [([p, "-c", _VERSION_OF], None) for p in _old_pythons()]


def _start_old(argv):
    """A process of an old CPython and the version it says it is (its own
    platform.python_version(); rt_target's is set by the test program)."""
    if isinstance(argv, str):
        rt = argv
        rfd, wfd = os.pipe()
        try:
            proc = subprocess.Popen([rt, str(wfd), "old"], stdin=subprocess.PIPE, pass_fds=(wfd,))
        finally:
            os.close(wfd)
        with os.fdopen(rfd) as ready:
            line = ready.readline()
        return proc, (line.startswith("ready") and "3.11.2")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def test_error_unsupported_version_is_named(cli_env, library_path, tmp_path):
    """An interpreter older than 3.13 is named by its version, in the
    library's words, the same as gdb and lldb print it."""
    targets = _old_targets(library_path, tmp_path)
    if not targets:
        pytest.skip("no build of tests/c/rt_target and no host CPython older than 3.13")
    for argv, _ in targets:
        proc, version = _start_old(argv)
        try:
            assert version, "the target did not start: %s" % (argv,)
            for extra in ((), ("--json",)):
                res = run_cli(cli_env, "dump", proc.pid, *extra)
                _assert_one_line_error(res, "unsupported")
                assert _text(res)[1] == ("pyframes: error: unsupported CPython %s (pyframes "
                                         "reads CPython 3.13, 3.14 and 3.15)\n" % version), \
                    (argv, _text(res))
        finally:
            proc.kill()
            proc.wait()


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
