"""The gdb plugin in the host's own gdb, outside the sandbox.

On a Debian 12 host, gdb 13 embeds Python 3.11: an older gdb and an older
embedded Python than the sandbox's.  These tests attach that gdb to pyenv's
CPython 3.13.0 (a PIE with a shared libpython) running the scenario programs
of tests/python/targets/, and compare every thread, frame for frame
(function, filename, line), with the target's own view, for the ``pid`` and
``debugger`` readers (and ``auto``).  They also check that a bad option is a
plain gdb error after which the session goes on.

``sandbox.sh test`` runs this file on the host, after the suites inside the
root, with ``PYFRAMES_LIBRARY`` pointing to a host build and
``PYFRAMES_REQUIRE_HOST_GDB=1``.  Without that variable, a host lacking gdb,
the pyenv interpreter or the library skips the tests; with it, they fail.
Inside the sandbox root they always skip: there, gdb is the sandbox's.

    PYFRAMES_LIBRARY=build/host/native/libpyframes.so \\
        /usr/bin/python3 -m pytest -v tests/python/test_host_gdb.py

``PYFRAMES_HOST_TARGET_PYTHON`` overrides the target interpreter.
"""

import os
import re
import subprocess

import pytest

import debugger_util as du
from oracle import compare_views

TARGET_PYTHON = os.environ.get("PYFRAMES_HOST_TARGET_PYTHON",
                               "/root/.pyenv/versions/3.13.0/bin/python3.13")
REQUIRED = os.environ.get("PYFRAMES_REQUIRE_HOST_GDB") == "1"
SCENARIOS = ("threads", "generators", "names")

if os.environ.get("PYFRAMES_IN_SANDBOX") == "1" or os.path.isdir("/src/native"):
    pytest.skip("host-only test: inside the sandbox root, gdb is the sandbox's "
                "(sandbox.sh test runs this file on the host afterwards)",
                allow_module_level=True)


def _problems():
    problems = []
    if not os.access(TARGET_PYTHON, os.X_OK):
        problems.append("%s not found" % TARGET_PYTHON)
    if not du.gdb_usable():
        problems.append("gdb with Python 3 not found")
    path = os.environ.get("PYFRAMES_LIBRARY")
    if not path or not os.path.isfile(path):
        problems.append("PYFRAMES_LIBRARY is %s" % (
            "not set" if not path else "not a file: %r" % path))
    elif du.library_problem() is not None:
        problems.append("pyframes not loadable: %s" % du.library_problem())
    return problems


@pytest.fixture(scope="module", autouse=True)
def _requirements():
    problems = _problems()
    if problems:
        if REQUIRED:
            pytest.fail("; ".join(problems) + " (PYFRAMES_REQUIRE_HOST_GDB=1)")
        pytest.skip("; ".join(problems))


# Commands of the session that uses markers (du.run_gdb).
AUTO, READERS_AFTER_AUTO, PID, DEBUGGER, READERS, BOGUS, AFTER_BOGUS, EMBEDDED = range(8)
_READERS = ("python print('READERS', sorted(set(k[2] for k in "
            "_pyframes_gdb_state['session']._targets)))")
COMMANDS = [None] * 8
COMMANDS[AUTO] = "py-bt-fast --all --json"
COMMANDS[READERS_AFTER_AUTO] = _READERS
COMMANDS[PID] = "py-bt-fast --all --json --reader pid"
COMMANDS[DEBUGGER] = "py-bt-fast --all --json --reader debugger"
COMMANDS[READERS] = _READERS
COMMANDS[BOGUS] = "py-bt-fast --bogus"
COMMANDS[AFTER_BOGUS] = "print 1+1"
COMMANDS[EMBEDDED] = "python import sys; print('EMBEDDED %d.%d.%d' % sys.version_info[:3])"


class Live(object):
    pass


@pytest.fixture(scope="module", params=SCENARIOS)
def live(request, tmp_path_factory, _requirements):
    scenario = request.param
    workdir = str(tmp_path_factory.mktemp("host-gdb-%s" % scenario))
    # A regular-file handshake: the main thread then blocks in os.read, which
    # gdb's attach and detach restart, where a FIFO write would return early.
    target = du.LiveTarget(TARGET_PYTHON, script=os.path.join(du.TARGETS, scenario + ".py"),
                           workdir=workdir)
    try:
        try:
            target.start()
        except RuntimeError as e:
            pytest.fail("%s under %s: %s" % (scenario, TARGET_PYTHON, e))
        live = Live()
        live.scenario = scenario
        live.target = target
        live.names = {int(tid): info["name"]
                      for tid, info in target.view["thread_info"].items()}
        # The command line as a user types it, relative to the clone.
        argv = ["gdb", "--batch", "-nx", "-p", str(target.pid),
                "-ex", "source gdb/pyframes_gdb.py", "-ex", "py-bt-fast --all --json"]
        proc = subprocess.run(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, cwd=du.REPO, env=du.clean_env(),
                              timeout=du.SESSION_TIMEOUT)
        live.plain_argv = argv
        live.plain_rc = proc.returncode
        live.plain = proc.stdout.decode("utf-8", "replace")
        live.session = du.run_gdb(COMMANDS, pid=target.pid)
        yield live
    finally:
        target.stop()


def _assert_own_view(live, document, label, context):
    assert document["python"]["version"].startswith("3.13."), context
    got = du.frames_of(document)
    problems = compare_views(live.target.threads, got, "target's view", label, live.names)
    assert not problems, "\n".join(problems) + "\n" + context


def test_plain_command_matches_own_view(live):
    context = "%s\n--- exit status %d, output ---\n%s" % (
        " ".join(live.plain_argv), live.plain_rc, live.plain[-6000:])
    assert live.plain_rc == 0, context
    document = du.extract_json(live.plain, context)
    _assert_own_view(live, document, "gdb py-bt-fast --all --json", context)


@pytest.mark.parametrize("index", [PID, DEBUGGER, AUTO], ids=["pid", "debugger", "auto"])
def test_readers_match_own_view(live, index):
    s = live.session
    _assert_own_view(live, s.json(index), "gdb %s" % COMMANDS[index], s.describe(index))


def test_reader_choice(live):
    """auto reads a live local process directly."""
    s = live.session
    assert "READERS ['pid']" in s[READERS_AFTER_AUTO], s.describe(READERS_AFTER_AUTO)
    assert "READERS ['debugger', 'pid']" in s[READERS], s.describe(READERS)


def test_bad_option_is_a_gdb_error(live):
    s = live.session
    assert "unrecognized arguments: --bogus" in s[BOGUS], s.describe(BOGUS)
    assert "Traceback" not in s[BOGUS], s.describe(BOGUS)
    assert re.search(r"^\$1 = 2$", s[AFTER_BOGUS], re.M), s.describe(AFTER_BOGUS)


def test_embedded_python(live):
    """The plugin supports gdb built with Python 3.9 or later."""
    s = live.session
    m = re.search(r"^EMBEDDED (\d+)\.(\d+)\.(\d+)$", s[EMBEDDED], re.M)
    assert m, s.describe(EMBEDDED)
    assert (int(m.group(1)), int(m.group(2))) >= (3, 9), s.describe(EMBEDDED)
