"""Launcher of test_real_programs.py: CPython's own test suite, the test
package of the interpreter running it (lib/pythonX.Y/test), a few modules
of pure-Python work that run long enough (json, typing, dataclasses, enum,
functools, pickle, ast, inspect, re, statistics, difflib, decimal: the
last runs _pydecimal too), one after the other, again and again, in this
process (unittest's runner: a failing test does not end the run).

    pythonX.Y real_cpython_tests.py SECONDS

Writes "ready" and a newline on stdout once the first module is loaded,
right before its tests start (the handshake); ends after SECONDS.
"""
import io
import sys
import time
import unittest

MODULES = ("test_json", "test_typing", "test_dataclasses", "test_enum", "test_functools",
           "test_pickle", "test_ast", "test_inspect", "test_re", "test_statistics",
           "test_difflib", "test_decimal")


def main():
    deadline = time.monotonic() + float(sys.argv[1])
    ready = False
    while time.monotonic() < deadline:
        for name in MODULES:
            suite = unittest.defaultTestLoader.loadTestsFromName("test." + name)
            if not ready:
                sys.stdout.write("ready\n")
                sys.stdout.flush()
                ready = True
            unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
            if time.monotonic() >= deadline:
                break


main()
