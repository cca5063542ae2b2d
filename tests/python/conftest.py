"""Shared fixtures of the pyframes Python tests.

Live tests (test_live_stacks.py, test_cli.py) run real CPython processes.
Interpreters are taken from PATH (python3.13, python3.14, python3.15 and
their debug builds python3.13d/3.14d/3.15d, and free-threaded builds
python3.13t/3.14t/3.15t or PYFRAMES_FT_PYTHON where present) and from PYFRAMES_PYENV_PYTHON
(a PIE with a shared libpython: a different memory layout).  Absent ones are
skipped, but inside the sandbox (PYFRAMES_IN_SANDBOX=1, or /src present) the
live tests fail when none of python3.13/3.14/3.15 exists, and when
PYFRAMES_LIBRARY is missing: they never pass with nothing run.
"""

import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PACKAGE_DIR = os.path.join(REPO, "native", "python")

if HERE not in sys.path:
    sys.path.insert(0, HERE)
if PACKAGE_DIR not in sys.path:
    sys.path.insert(0, PACKAGE_DIR)

MAIN_VERSIONS = ("3.13", "3.14", "3.15")


def _sanitizer_plumbing():
    """Under tests/run_all.sh's pytest-asan step (PYFRAMES_SANITIZER_PRELOAD
    set, this process started with the ASan/UBSan runtimes in LD_PRELOAD and
    PYFRAMES_LIBRARY the instrumented library) only the readers run under
    the sanitizers: this process and every ``python -m pyframes`` it starts.
    LD_PRELOAD is taken out of the environment the targets and debuggers
    inherit, and sys.executable becomes a wrapper that puts it back for
    ``-m pyframes`` only (a target started with sys.executable runs without
    it)."""
    preload = os.environ.get("PYFRAMES_SANITIZER_PRELOAD")
    if not preload:
        return
    os.environ.pop("LD_PRELOAD", None)
    import atexit
    import tempfile
    real = sys.executable
    wrapdir = tempfile.mkdtemp(prefix="pyframes-asan-")
    atexit.register(shutil.rmtree, wrapdir, True)
    wrapper = os.path.join(wrapdir, "python3")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\n'
                'if [ "$1" = -m ] && [ "$2" = pyframes ]; then\n'
                '    LD_PRELOAD=%s; export LD_PRELOAD\n'
                'fi\n'
                'exec %s "$@"\n' % (_sh_quote(preload), _sh_quote(real)))
    os.chmod(wrapper, 0o755)
    sys.executable = wrapper


def _sh_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


_sanitizer_plumbing()


def in_sandbox():
    return os.environ.get("PYFRAMES_IN_SANDBOX") == "1" or os.path.isdir("/src/native")


class Interpreter:
    """A CPython executable usable as a target."""

    def __init__(self, name, path, minor, kind):
        self.name = name          # test id: "3.13", "3.14d", "pyenv-3.13"
        self.path = path
        self.minor = minor        # "3.13"
        self.kind = kind          # "release", "debug", "free-threaded" or "pyenv"

    @property
    def version(self):
        return tuple(int(x) for x in self.minor.split("."))

    def __repr__(self):
        return "Interpreter(%s, %s)" % (self.name, self.path)


def _ask(path, code):
    """What path prints running code (-E -s), or None when it fails."""
    try:
        out = subprocess.run([path, "-E", "-s", "-c", code],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def _probe(path):
    """'3.X' if path runs as CPython 3.X ('2.7' for 2.7), else None."""
    out = _ask(path, "import platform, sys; sys.stdout.write('%d.%d %s\\n' % ("
                     "sys.version_info[0], sys.version_info[1], "
                     "platform.python_implementation().lower()))")
    if out is None:
        return None
    fields = out.split()
    if len(fields) != 2 or fields[1] != "cpython":
        return None
    return fields[0]


def _free_threaded(path):
    """True when path is a Py_GIL_DISABLED build."""
    out = _ask(path, "import sysconfig; "
                     "print(bool(sysconfig.get_config_var('Py_GIL_DISABLED')))")
    return out is not None and out.strip() == "True"


def discover_interpreters():
    found = []
    for minor in MAIN_VERSIONS:
        for suffix, kind in (("", "release"), ("d", "debug"), ("t", "free-threaded")):
            path = shutil.which("python%s%s" % (minor, suffix))
            if path and _probe(path) == minor and (suffix != "t" or _free_threaded(path)):
                found.append(Interpreter(minor + suffix, path, minor, kind))
    # A free-threaded build named by path (none can be installed on the
    # machines this project is tested on; see test_free_threaded.py).
    ft = os.environ.get("PYFRAMES_FT_PYTHON")
    if ft:
        minor = _probe(ft)
        if (minor in MAIN_VERSIONS and _free_threaded(ft)
                and not any(i.path == ft for i in found)):
            found.append(Interpreter(minor + "t", ft, minor, "free-threaded"))
    pyenv = os.environ.get("PYFRAMES_PYENV_PYTHON")
    if pyenv:
        minor = _probe(pyenv)
        if minor in MAIN_VERSIONS:
            found.append(Interpreter("pyenv-" + minor, pyenv, minor, "pyenv"))
    return found


INTERPRETERS = discover_interpreters()

# The older CPythons pyframes reads without _Py_DebugOffsets: pyenv's builds
# (PIEs with a shared libpython and full symbols, on every machine of this
# kind), named "pyenv-3.12", "pyenv-3.11"; inside the sandbox the root has
# them bind-mounted (PYFRAMES_OLDER_PYTHONS, colon-separated).  Outside it,
# also Debian 12's own python3.11 ("debian-3.11": static, non-PIE,
# stripped).  3.12 is the representative every suite that reads older
# versions runs on; 3.11 where a suite asks for every older version.
OLDER_VERSIONS = ("3.12", "3.11")
OLDER_REPRESENTATIVE = "3.12"
# The heap-frame versions (PyFrameObjects chained by f_back), pyenv's
# builds named "pyenv-3.10", "pyenv-3.9", "pyenv-3.8": read by the suites
# that name them (HEAP_INTERPRETERS).
HEAP_VERSIONS = ("3.10", "3.9", "3.8")
# Versions refused by name (3.7, 3.6 and 2.7 where the machine has them).
REFUSED_VERSIONS = ("3.7", "3.6", "2.7")


def _pyenv_versions():
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    return os.path.join(root, "versions")


def _older_paths():
    listed = os.environ.get("PYFRAMES_OLDER_PYTHONS")
    if listed is not None:
        return [p for p in listed.split(":") if p]
    found = []
    versions = _pyenv_versions()
    if os.path.isdir(versions):
        for minor in OLDER_VERSIONS + HEAP_VERSIONS + REFUSED_VERSIONS:
            patches = sorted((v for v in os.listdir(versions)
                              if v.startswith(minor + ".") and v[len(minor) + 1:].isdigit()),
                             key=lambda v: int(v.split(".")[2]), reverse=True)
            for v in patches:
                path = os.path.join(versions, v, "bin", "python" + minor)
                if os.access(path, os.X_OK):
                    found.append(path)
                    break
    return found


def discover_older():
    """(read, heap, refused): the older interpreters present, as
    Interpreters (kind "older"): 3.12 and 3.11, the heap-frame versions
    (3.10-3.8), and those pyframes refuses by name."""
    read, heap, refused = [], [], []
    for path in _older_paths():
        minor = _probe(path)
        if minor in OLDER_VERSIONS:
            read.append(Interpreter("pyenv-" + minor, path, minor, "older"))
        elif minor in HEAP_VERSIONS:
            heap.append(Interpreter("pyenv-" + minor, path, minor, "older"))
        elif minor in REFUSED_VERSIONS:
            refused.append(Interpreter("pyenv-" + minor, path, minor, "older"))
    debian = "/usr/bin/python3.11"
    if not in_sandbox() and os.access(debian, os.X_OK) and _probe(debian) == "3.11":
        read.append(Interpreter("debian-3.11", debian, "3.11", "older"))
    return read, heap, refused


OLDER_INTERPRETERS, HEAP_INTERPRETERS, REFUSED_INTERPRETERS = discover_older()


def start_saying_version(path, env=None):
    """A process of the interpreter at path (any CPython, 2.7 too) that
    writes its own platform.python_version() and then waits on its stdin:
    (process, the version it says).  The caller kills it."""
    code = ("import platform, sys; sys.stdout.write(platform.python_version() + '\\n'); "
            "sys.stdout.flush(); sys.stdin.read()")
    proc = subprocess.Popen([path, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env=env)
    return proc, proc.stdout.readline().decode("ascii", "replace").strip()


def own_version(path):
    """The platform.python_version() of the interpreter at path."""
    proc, version = start_saying_version(path)
    proc.kill()
    proc.wait()
    return version


def older_interpreters(which="representative"):
    """The older interpreters a suite runs on: "representative" (3.12's),
    or "all"."""
    if which == "all":
        return list(OLDER_INTERPRETERS)
    return [i for i in OLDER_INTERPRETERS if i.minor == OLDER_REPRESENTATIVE]


def interpreter_params(older=None, heap=False):
    """pytest params over INTERPRETERS, and with older ("representative" or
    "all") the older interpreters too, with heap the heap-frame ones (3.10,
    3.9, 3.8) as well (a single failing/skipping param when there are
    none, so an empty run is never silently green)."""
    chosen = list(INTERPRETERS) + (older_interpreters(older) if older else [])
    chosen += list(HEAP_INTERPRETERS) if heap else []
    if chosen:
        return [pytest.param(i, id=i.name) for i in chosen]
    return [pytest.param(None, id="no-interpreter")]


def release_params(older=None):
    """interpreter_params over the release builds of 3.13-3.15 only (no
    debug, free-threaded or pyenv build), and with older the older ones."""
    chosen = [i for i in INTERPRETERS if i.kind == "release"]
    chosen += older_interpreters(older) if older else []
    return [pytest.param(i, id=i.name) for i in chosen] or \
        [pytest.param(None, id="no-interpreter")]


def scenario_params(scenarios, older=None, heap=False):
    """pytest params over (interpreter, scenario program of targets/);
    older and heap as interpreter_params'."""
    return [pytest.param((p.values[0], s), id="%s-%s" % (p.id, s))
            for p in interpreter_params(older, heap) for s in scenarios]


def start_scenario(param, tmp_path_factory, prefix=""):
    """A LiveTarget for a scenario_params value (not started)."""
    from livetarget import LiveTarget
    interp, scenario = param
    if interp is None:
        require_interpreters()
    workdir = tmp_path_factory.mktemp("%s%s-%s" % (prefix, interp.name, scenario))
    return LiveTarget(interp.path, scenario + ".py", workdir)


def recorded_target(interp, tmp_path_factory, script, record):
    """A generator for a module-scoped fixture: a LiveTarget of
    targets/SCRIPT run by ``interp`` (the file handshake), with the
    interpreter as ``interp`` and the program's own record (the JSON file
    RECORD it wrote beside the handshake) as ``record``."""
    if interp is None:
        require_interpreters()
    import json
    from livetarget import LiveTarget
    workdir = tmp_path_factory.mktemp("%s-%s" % (os.path.splitext(script)[0], interp.name))
    with LiveTarget(interp.path, script, workdir, handshake="file") as target:
        with open(os.path.join(target.workdir, record)) as f:
            target.record = json.load(f)
        target.interp = interp
        yield target


def release_python(minor):
    """Path of the release python<minor>; fails inside the sandbox, skips
    elsewhere, when there is none."""
    for i in INTERPRETERS:
        if i.minor == minor and i.kind == "release":
            return i.path
    if in_sandbox():
        pytest.fail("python%s not found inside the sandbox" % minor)
    pytest.skip("python%s not found" % minor)


def python_of(version):
    """The interpreter of a suite's version parameter: a release's
    (release_python), or an older one's by its name ("pyenv-3.12")."""
    if version[0].isdigit():
        return release_python(version)
    for i in OLDER_INTERPRETERS:
        if i.name == version:
            return i.path
    if in_sandbox():
        pytest.fail("%s not found inside the sandbox" % version)
    pytest.skip("%s not found" % version)


def require_interpreters():
    """Fail inside the sandbox, skip elsewhere, when no 3.13/3.14/3.15."""
    release = [i for i in INTERPRETERS if i.kind == "release"]
    if release:
        return
    msg = "none of python%s found on PATH" % "/".join(MAIN_VERSIONS)
    if in_sandbox():
        pytest.fail(msg + " inside the sandbox")
    pytest.skip(msg)


def interp_fixture(older=None, name="interp", heap=False):
    """The interp fixture over interpreter_params(older, heap): a suite
    that reads the older interpreters too says so with ``interp =
    conftest.interp_fixture("representative")`` (or "all"; heap=True adds
    3.10-3.8); with a name of its own for some of its tests only."""
    @pytest.fixture(params=interpreter_params(older, heap), name=name)
    def interp(request):
        """Each interpreter in turn (fails inside the sandbox, skips
        elsewhere, when there is none)."""
        if request.param is None:
            require_interpreters()
        return request.param
    return interp


interp = interp_fixture()


@pytest.fixture(scope="session")
def library_path():
    path = os.environ.get("PYFRAMES_LIBRARY")
    if not path or not os.path.isfile(path):
        msg = "PYFRAMES_LIBRARY is %s" % ("not set" if not path else "not a file: %r" % path)
        if in_sandbox():
            pytest.fail(msg)
        pytest.skip(msg)
    return path


@pytest.fixture(scope="session")
def pyframes(library_path):
    import pyframes as mod
    return mod


@pytest.fixture(scope="session")
def cli_env(library_path):
    env = dict(os.environ)
    env["PYFRAMES_LIBRARY"] = library_path
    env["PYTHONPATH"] = PACKAGE_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# ---- the compatibility matrix (tests/python/compat.py) ----

import compat  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "readers(*names): the readers of the compatibility matrix a test "
        "exercises, when its parameters do not tell (tests/python/compat.py)")
    path = os.environ.get("PYFRAMES_COMPAT_JSON")
    if path:
        config.pluginmanager.register(compat.Recorder(path), "pyframes-compat")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().compat_cells = compat.cells(item)


from livetarget import target_env  # noqa: E402


@pytest.fixture
def busy():
    """One process spinning on each core for the test's duration: a loaded
    machine, where a reader is often interrupted mid-read."""
    hogs = []
    try:
        for _ in range(os.cpu_count() or 2):
            hogs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"],
                                         env=target_env()))
        yield len(hogs)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
