"""`cmake --install` output: the installed plugins and the installed command
`<prefix>/bin/pyframes` find the installed package and library by themselves
(no PYFRAMES_LIBRARY, no PYTHONPATH); `python3 -m pyframes` runs with the
package directory that `pyframes version` names on PYTHONPATH.

The build tree is the one the suite runs against (the directory holding
$PYFRAMES_LIBRARY); it is installed into a temporary prefix, then gdb and
lldb load the plugins from <prefix>/share/pyframes and must print the same
frames as the target's own view.
"""

import json
import os
import subprocess

import pytest

import debugger_util as du

VERSION = "3.15"


def _build_dir():
    lib = os.environ.get("PYFRAMES_LIBRARY", "")
    build = os.path.dirname(os.path.dirname(lib)) if lib else ""
    if not build or not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        pytest.skip("PYFRAMES_LIBRARY does not point into a CMake build tree")
    return build


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    build = _build_dir()
    dest = str(tmp_path_factory.mktemp("prefix"))
    subprocess.run(["cmake", "--install", build, "--prefix", dest], check=True,
                   stdout=subprocess.DEVNULL)
    return dest


def _env():
    env = du.clean_env()
    env.pop("PYFRAMES_LIBRARY", None)
    return env


def _session(argv, stdin_text, commands):
    proc = subprocess.run(argv, input=stdin_text.encode(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=_env(),
                          timeout=du.SESSION_TIMEOUT)
    return du.Session(argv, proc.stdout.decode("utf-8", "replace"),
                      proc.returncode, commands, 0.0)


def test_installed_files(prefix):
    share = os.path.join(prefix, "share", "pyframes")
    for rel in ("gdb/pyframes_gdb.py", "lldb/pyframes_lldb.py",
                "python/pyframes/__init__.py", "python/pyframes/session.py",
                "python/pyframes/plugin.py"):
        assert os.path.isfile(os.path.join(share, rel)), rel
    assert os.access(os.path.join(prefix, "bin", "pyframes"), os.X_OK)
    libs = [n for d in ("lib", "lib64") if os.path.isdir(os.path.join(prefix, d))
            for n in os.listdir(os.path.join(prefix, d)) if n.startswith("libpyframes.so")]
    assert libs, "no libpyframes.so installed under %s" % prefix
    assert os.path.isfile(os.path.join(prefix, "include", "pyframes.h"))


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_installed_plugin_matches_own_view(prefix, debugger, tmp_path):
    du.require(debugger, VERSION)
    share = os.path.join(prefix, "share", "pyframes")
    commands = ["py-bt-fast --all --json" if debugger == "gdb"
                else "pystack --all --json"]
    with du.LiveTarget(du.python_for(VERSION), depth=4,
                       workdir=str(tmp_path)) as target:
        if debugger == "gdb":
            argv = ["gdb", "--batch", "-nx", "-iex", "set pagination off",
                    "-p", str(target.pid),
                    "-ex", "source " + os.path.join(share, "gdb", "pyframes_gdb.py"),
                    "-ex", "echo @@PYF-0@@\\n", "-ex", commands[0],
                    "-ex", "echo @@PYF-END@@\\n"]
            session = _session(argv, "", commands)
        else:
            script = "\n".join([
                "command script import " + os.path.join(share, "lldb", "pyframes_lldb.py"),
                "script print('@@PYF-' + '0@@')", commands[0],
                "script print('@@PYF-' + 'END@@')", "process detach", "quit"]) + "\n"
            session = _session(["lldb", "-x", "-p", str(target.pid)], script, commands)
        document = session.json(0)
        assert du.own_view_mismatches(document, target) == [], session.describe(0)


def _command(argv, env, cwd):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                          cwd=cwd, timeout=du.SESSION_TIMEOUT, stdin=subprocess.DEVNULL)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 0, (argv, proc.returncode, out, err)
    return out


def test_installed_command_matches_own_view(prefix, tmp_path):
    """<prefix>/bin/pyframes runs from anywhere with a clean environment;
    `pyframes version` names the installed package directory and library,
    and python3 -m pyframes works with that directory on PYTHONPATH."""
    du.require(None, VERSION)
    command = os.path.join(prefix, "bin", "pyframes")
    env, cwd = _env(), str(tmp_path)
    version = _command([command, "version"], env, cwd).splitlines()
    package = os.path.join(prefix, "share", "pyframes", "python")
    assert version[0].endswith("(%s)" % os.path.realpath(package)), version
    assert version[1].startswith("libpyframes ") and \
        os.path.realpath(prefix) in version[1], version
    with du.LiveTarget(du.python_for(VERSION), depth=4, workdir=cwd) as target:
        for argv, run_env in (
                ([command, "dump", str(target.pid), "--json"], env),
                (["python3", "-m", "pyframes", "dump", str(target.pid), "--json"],
                 dict(env, PYTHONPATH=version[0].rsplit(" (", 1)[1][:-1]))):
            document = json.loads(_command(argv, run_env, cwd))
            assert du.own_view_mismatches(document, target) == [], argv


def test_build_tree_command_matches_own_view(tmp_path):
    """<build>/pyframes (made by the build, not installed) runs the source
    tree's package with that build's library, from anywhere, without
    PYFRAMES_LIBRARY or PYTHONPATH."""
    du.require(None, VERSION)
    build = _build_dir()
    command = os.path.join(build, "pyframes")
    env, cwd = _env(), str(tmp_path)
    version = _command([command, "version"], env, cwd).splitlines()
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    package, library = (line.rsplit(" (", 1)[1][:-1] for line in version)
    assert os.path.realpath(package) == os.path.realpath(os.path.join(repo, "native", "python"))
    assert os.path.realpath(library) == \
        os.path.realpath(os.path.join(build, "native", "libpyframes.so")), version
    with du.LiveTarget(du.python_for(VERSION), depth=4, workdir=cwd) as target:
        document = json.loads(_command([command, "dump", str(target.pid), "--json"], env, cwd))
        assert du.own_view_mismatches(document, target) == []
