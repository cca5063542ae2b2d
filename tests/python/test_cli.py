"""``python3 -m pyframes dump PID`` against live targets, and its errors."""

import json
import os
import re
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
    res = run_cli(cli_env, "dump", "not-a-pid")
    out, err = _text(res)
    assert res.returncode not in (0, 1), (res.returncode, err)
    assert out == ""
    assert err.startswith("pyframes: error: ") or "usage" in err.lower(), err
