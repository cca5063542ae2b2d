"""Which cell of the compatibility matrix (docs/compatibility.md) a test
exercises, and the record of a run that tests/compat_table.py turns into
that table.

A cell is (target, reader).  Targets are the interpreters the tests run:
"3.13", "3.14", "3.15" (Debian's static binaries), "3.13d".. (their debug
builds), "pyenv-3.13" (a PIE with a shared libpython), "pyenv-3.12" and
"pyenv-3.11" (the same, read without _Py_DebugOffsets), "pyenv-3.10",
"pyenv-3.9", "pyenv-3.8" (the same, heap frames), "debian-3.11"
(Debian 12's own python3.11: static, non-PIE, stripped; the host's),
"3.13t".. (the free-threaded layouts, as synthetic images built from
CPython's own headers).  Readers are the ways a user reaches a target:
"CLI" (the command line and the Python API, reading by PID), "gdb 18",
"gdb 13" (the host's), "lldb 21", "lldb 22", "gdbserver", "lldb-server",
"gdb cores", "lldb cores", "CLI cores" (the command line's own core reader,
no debugger: test_cores.py).

The reader comes from, in order: a ``readers`` mark on the test
(``@pytest.mark.readers("gdb 18", "lldb 21")``), the remote tests' names,
a debugger driver among the test's parameters (a core file when the test or
one of its fixtures is about cores), otherwise the test's module: the
modules that read without a debugger count as "CLI".  The target comes
from the interpreter or version among the parameters.  A test that names no
target or no reader is not part of the matrix.

With PYFRAMES_COMPAT_JSON set, the session writes one record per test run:
its cells, its outcome (passed, failed, skipped, xfailed) and, for a skip,
the reason.
"""

import json
import os
import re

_VERSION_RE = re.compile(r"^(?:pyenv-|debian-)?3\.(?:[89]|1[0-9])[dt]?$")

DRIVER_READERS = {
    "gdb": "gdb 18",
    "host-gdb": "gdb 13",
    "lldb": "lldb 21",
    "lldb22": "lldb 22",
}
CORE_READERS = {"gdb 18": "gdb cores", "gdb 13": "gdb cores",
                "lldb 21": "lldb cores", "lldb 22": "lldb cores"}
CLI_MODULES = {"test_cli", "test_live_stacks", "test_sampling", "test_frame_cache",
               "test_real_programs", "test_locate",
               "test_frame_reuse", "test_subinterpreters", "test_free_threaded",
               "test_churn"}
REMOTE_TESTS = {"test_gdbserver": "gdbserver", "test_lldb_server": "lldb-server",
                "test_gdbserver_scenario": "gdbserver",
                "test_lldb_server_scenario": "lldb-server"}


def _walk(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _walk(v)
    else:
        yield value


def _target_of(value):
    name = getattr(value, "name", None)
    if type(value).__name__ == "Interpreter" and isinstance(name, str):
        return name
    if isinstance(value, str) and _VERSION_RE.match(value):
        return value
    return None


def cells(item):
    """The (target, reader) cells ``item`` exercises (a list, maybe empty)."""
    params = dict(getattr(getattr(item, "callspec", None), "params", {}) or {})
    module = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
    base = item.originalname or item.name

    targets, drivers = [], []
    for value in _walk(list(params.values())):
        t = _target_of(value)
        if t and t not in targets:
            targets.append(t)
        dname = getattr(value, "name", None)
        if type(value).__name__ != "Interpreter" and dname in DRIVER_READERS:
            drivers.append(DRIVER_READERS[dname])
    if module == "test_free_threaded":
        flavour = params.get("free_threaded", True)
        targets = [t + "t" if flavour and not t.endswith("t") else t for t in targets]

    mark = item.get_closest_marker("readers")
    if mark is not None:
        readers = list(mark.args)
    elif base in REMOTE_TESTS and module == "test_remote":
        readers = [REMOTE_TESTS[base]]
    elif drivers:
        about_cores = "core" in base or any("core" in f for f in item.fixturenames)
        readers = [CORE_READERS[d] if about_cores else d for d in drivers]
    elif module in CLI_MODULES:
        readers = ["CLI"]
    else:
        readers = []
    return [(t, r) for t in targets for r in readers]


class Recorder:
    """pytest plugin: one record per test (its cells and outcome)."""

    def __init__(self, path):
        self.path = path
        self.records = []

    def pytest_runtest_logreport(self, report):
        cell_list = getattr(report, "compat_cells", None)
        if not cell_list:
            return
        outcome = None
        if report.when == "call":
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "passed"
            else:
                outcome = report.outcome
        elif report.outcome == "skipped" and report.when == "setup":
            outcome = "skipped"
        elif report.outcome == "failed":
            outcome = "failed"
        if outcome is None:
            return
        reason = ""
        if outcome in ("skipped", "xfailed"):
            longrepr = report.longrepr
            if isinstance(longrepr, tuple) and len(longrepr) == 3:
                reason = str(longrepr[2])
            else:
                reason = str(getattr(report, "wasxfail", "") or longrepr)
            reason = reason.replace("Skipped: ", "", 1)
        self.records.append({"test": report.nodeid, "outcome": outcome, "reason": reason,
                             "cells": [list(c) for c in cell_list]})

    def pytest_sessionfinish(self, session):
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        with open(self.path, "w") as f:
            json.dump({"records": self.records}, f, indent=0)
