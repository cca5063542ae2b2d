#!/usr/bin/env python3
"""Write docs/compatibility.md from the records of a test run.

    python3 tests/compat_table.py [-o OUT] RECORD.json... [--ctest-junit XML]

Each RECORD.json is what a pytest run writes with PYFRAMES_COMPAT_JSON set
(tests/python/compat.py): the sandbox's run and the host phase's.  The
optional JUnit file of ctest adds the C tests of the free-threaded images
(tests whose name holds "free_threaded") to the free-threaded rows.
tests/sandbox/sandbox.sh test runs this after both phases.
"""

import argparse
import datetime
import json
import os
import sys
import xml.etree.ElementTree as ET

TARGETS = [
    ("3.13", "3.13, Debian (static binary)"),
    ("3.14", "3.14, Debian (static binary)"),
    ("3.15", "3.15, Debian (static binary)"),
    ("3.13d", "3.13, Debian debug build"),
    ("3.14d", "3.14, Debian debug build"),
    ("3.15d", "3.15, Debian debug build"),
    ("pyenv-3.13", "3.13, PIE + shared libpython (pyenv)"),
    ("pyenv-3.12", "3.12, PIE + shared libpython (pyenv)"),
    ("pyenv-3.11", "3.11, PIE + shared libpython (pyenv)"),
    ("debian-3.11", "3.11, Debian 12's own (static, non-PIE, stripped)"),
    ("pyenv-3.10", "3.10, PIE + shared libpython (pyenv)"),
    ("pyenv-3.9", "3.9, PIE + shared libpython (pyenv)"),
    ("pyenv-3.8", "3.8, PIE + shared libpython (pyenv)"),
    ("3.13t", "3.13t free-threaded"),
    ("3.14t", "3.14t free-threaded"),
    ("3.15t", "3.15t free-threaded"),
]
READERS = ["CLI", "gdb 13", "gdb 18", "lldb 21", "lldb 22", "gdbserver", "lldb-server",
           "gdb cores", "lldb cores", "CLI cores"]

NO_FT = ("no free-threaded interpreter can be installed on these machines (no Debian "
         "package, no source package); read only as synthetic images")


def why_untested(target, reader, seen_targets):
    """Why no test ran in a cell (the run's layout, not a failure)."""
    if target.endswith("t"):
        return NO_FT
    if reader == "gdb 13":
        if target == "pyenv-3.13":
            return "no host CPython 3.13+ on this machine (the host phase needs one)"
        if target in ("pyenv-3.12", "pyenv-3.11", "debian-3.11", "pyenv-3.10", "pyenv-3.9",
                      "pyenv-3.8"):
            return "interpreter not found on the host"
        return ("the host phase runs the host's gdb 13 against the host's CPythons only "
                "(pyenv's, Debian 12's own python3.11)")
    if target == "debian-3.11":
        return ("Debian 12's own python3.11 is the host's: the host phase reads it (the "
                "command line, gdb 13); the sandbox root is Debian sid, which has none")
    if target not in seen_targets:
        if target == "pyenv-3.13":
            return "no pyenv CPython on this machine (PYFRAMES_PYENV_PYTHON)"
        return "interpreter not found in this run"
    if target.endswith("d"):
        return "debug builds run in the CLI and Python API tests only"
    return "no test in this run"


def load(paths):
    cells = {}
    for path in paths:
        if not os.path.isfile(path):
            print("compat_table: %s: missing, its phase did not run" % path, file=sys.stderr)
            continue
        with open(path) as f:
            for rec in json.load(f)["records"]:
                for target, reader in rec["cells"]:
                    cells.setdefault((target, reader), []).append(rec)
    return cells


def load_ctest(path, cells):
    """C tests of the free-threaded images count for every FT row's CLI cell
    (they read through the library's own API, as the CLI does)."""
    if not path or not os.path.isfile(path):
        return
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        if "free_threaded" not in name:
            continue
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "failed"
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            outcome = "skipped"
        else:
            outcome = "passed"
        rec = {"test": "ctest " + name, "outcome": outcome, "reason": "C test skipped"}
        for target in ("3.13t", "3.14t", "3.15t"):
            cells.setdefault((target, "CLI"), []).append(rec)


def verdict(records, target, reader, seen_targets):
    """(cell text, reason or None): the reason goes to a footnote."""
    if not records:
        return "untestable", why_untested(target, reader, seen_targets)
    count = {}
    for r in records:
        count[r["outcome"]] = count.get(r["outcome"], 0) + 1
    ran = count.get("passed", 0) + count.get("failed", 0) + count.get("xfailed", 0)
    if count.get("failed"):
        return "**FAIL** (%d of %d)" % (count["failed"], ran), None
    if count.get("passed"):
        text = "pass (%d)" % count["passed"]
        if count.get("xfailed"):
            return text + " + limitation", _first_reason(records, "xfailed")
        return text, None
    if count.get("xfailed"):
        return "limitation", _first_reason(records, "xfailed")
    return "untestable", _first_reason(records, "skipped")


def _first_reason(records, outcome):
    for r in records:
        if r["outcome"] == outcome and r.get("reason"):
            return " ".join(r["reason"].split())[:200]
    return "skipped"


REAL_PROGRAMS = "test_real_programs.py::"


def render_real(cells):
    """The real-program tests (tests/python/test_real_programs.py), a row
    each: their cells count in the table too; this says which application
    ran where."""
    records = {}
    for recs in cells.values():
        for r in recs:
            if REAL_PROGRAMS in r["test"]:
                records[r["test"]] = r
    if not records:
        return []
    out = ["## Real programs", "",
           "Applications nobody here wrote, from Debian's packages (an aiohttp server under "
           "load from an aiohttp client; Sphinx building a documentation set) and the "
           "standard library's pools (`concurrent.futures` thread and process pools, "
           "`multiprocessing.Pool`), frozen at random moments with SIGSTOP and read through "
           "each reader; every thread's frames and every asyncio task compared with "
           "`_remote_debugging.RemoteUnwinder`, `get_all_awaited_by()` and, in gdb, `py-bt` "
           "(`tests/python/test_real_programs.py`: the command line reads 100 frozen states "
           "per application on 3.14 and 3.15, and on 3.13, against py-bt, 10 unless "
           "PYFRAMES_REAL_PROGRAMS_313 asks for more; gdb and lldb 3 or 4 each).", "",
           "| test | target | reader | outcome |", "|---|---|---|---|"]
    for test in sorted(records):
        r = records[test]
        target, reader = r["cells"][0] if r["cells"] else ("", "")
        outcome = r["outcome"]
        if r.get("reason") and outcome in ("skipped", "xfailed"):
            outcome += ": " + " ".join(r["reason"].split())[:200]
        out.append("| `%s` | %s | %s | %s |" % (test.split("::", 1)[1], target, reader,
                                                outcome.replace("|", "/")))
    return out + [""]


def render(cells, when):
    out = ["# Compatibility", "",
           "Generated by `tests/compat_table.py` from the run of `bash tests/sandbox/sandbox.sh test` "
           "of %s (do not edit by hand; the test command writes a fresh copy to "
           "`build/compatibility.md` on every run)." % when, "",
           "A cell is **pass (N)** when N tests read that target through that reader and "
           "matched their oracle (the target's own view of its stacks, CPython's "
           "`_remote_debugging`, `py-bt`, or, for the free-threaded layouts, CPython's own "
           "headers), **FAIL** when one did not, *untestable* when none could run here, and "
           "*limitation* for a known limitation (a test expected to fail); the notes say why.",
           ""]
    seen_targets = {t for (t, _r) in cells}
    notes = []

    def note(reason):
        if reason not in notes:
            notes.append(reason)
        return notes.index(reason) + 1

    out.append("| target | " + " | ".join(READERS) + " |")
    out.append("|---" * (len(READERS) + 1) + "|")
    for target, label in TARGETS:
        row = []
        for reader in READERS:
            text, reason = verdict(cells.get((target, reader), []), target, reader, seen_targets)
            if reason:
                text += " [%d]" % note(reason)
            row.append(text)
        out.append("| %s | %s |" % (label, " | ".join(row)))
    out += [""] + ["[%d] %s" % (i + 1, n.replace("|", "/")) + "  " for i, n in enumerate(notes)]
    out += ["", "Free-threaded rows: the C tests lay out free-threaded images with the "
            "`_Py_DebugOffsets` and structure layouts that CPython's own -dev headers give "
            "with `Py_GIL_DISABLED` (tests/c, tests/python/ft), and read them through the "
            "library's API as the command line does.", ""]
    out += render_real(cells)
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--ctest-junit")
    ap.add_argument("-o", "--output")
    args = ap.parse_args(argv)
    cells = load(args.records)
    load_ctest(args.ctest_junit, cells)
    text = render(cells, datetime.date.today().isoformat())
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    failed = any(r["outcome"] == "failed" for recs in cells.values() for r in recs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
