"""Oracles for the live tests: what the Python stacks of a target really are.

Two independent sources:

* the target's own view (``LiveTarget.views``): each thread walks
  ``sys._getframe()``/``f_back`` at the exact line where it then blocks and
  the program sends the result through the handshake (see
  ``targets/_common.py``);
* on CPython 3.14+, ``_remote_debugging.RemoteUnwinder`` run in a
  subprocess of the SAME interpreter version as the target
  (``remote_unwind``; ``RemoteUnwinderServer`` keeps one such subprocess
  for many readings).

Frames are compared in a common form: ``(function, filename, line)`` tuples,
innermost first, keyed by native thread id.  ``function`` is co_qualname.
"""

import contextlib
import json
import select
import subprocess
import tempfile

from livetarget import LiveTarget, target_env
from livetarget import TargetError as OracleError

REMOTE_TIMEOUT = 60.0


def frame_key(frame):
    """(function, filename, line) of a frame dict."""
    return (frame["function"], frame["filename"], frame["line"])


def keys(frames):
    return [frame_key(f) for f in frames]


# --------------------------------------------------------------------------
# _remote_debugging.RemoteUnwinder (CPython 3.14+)

# Runs inside an interpreter of the same version as the target.  Prints
# {"threads": {tid: [{"function","filename","line","location"}]}, ...}.
# Its work is read(pid); SERVE (oracle_main) runs it once for argv[1] or,
# with "-", for each line of stdin.
REMOTE_UNWIND_SOURCE = r'''
import json, sys
import _remote_debugging

def frame(fi):
    loc = getattr(fi, "location", None)
    if loc is not None:
        line = loc.lineno
        location = [loc.lineno, loc.end_lineno, loc.col_offset, loc.end_col_offset]
    else:
        line = getattr(fi, "lineno", None)
        location = None
    return {"function": fi.funcname, "filename": fi.filename, "line": line,
            "location": location}

def read(args):
    pid = int(args[0])
    unwinder = _remote_debugging.RemoteUnwinder(pid, all_threads=True)
    result = unwinder.get_stack_trace()
    interpreters = []
    for item in result:
        if hasattr(item, "interpreter_id"):
            interpreters.append((item.interpreter_id, item.threads))
        else:  # 3.14: a flat list of ThreadInfo
            if not interpreters:
                interpreters.append((0, []))
            interpreters[0][1].append(item)
    out = {"version": list(sys.version_info[:3]), "interpreters": []}
    for interp_id, threads in interpreters:
        out["interpreters"].append({
            "id": interp_id,
            "threads": {str(t.thread_id): [frame(f) for f in t.frame_info] for t in threads},
        })
    return out
'''

# The end of every oracle source: read(argv[1:]) printed as JSON, or with
# argv[1] == "-" a server: one request a line on stdin (its words are
# read()'s arguments), one JSON document a line on stdout, {"error": ...}
# when read() raised.
SERVE = r'''
if sys.argv[1] != "-":
    sys.stdout.write(json.dumps(read(sys.argv[1:]), default=repr))
else:
    for _line in sys.stdin:
        try:
            _doc = read(_line.split())
        except Exception as _e:
            _doc = {"error": "%s: %s" % (type(_e).__name__, _e)}
        sys.stdout.write(json.dumps(_doc, default=repr) + "\n")
        sys.stdout.flush()
'''


def has_remote_unwinder(version_info):
    return tuple(version_info[:2]) >= (3, 14)


def _threads_of(doc):
    threads = {}
    for interp in doc["interpreters"]:
        for tid, frames in interp["threads"].items():
            threads[int(tid)] = frames
    return threads


def remote_unwind(python, pid, timeout=REMOTE_TIMEOUT):
    """RemoteUnwinder's view of process pid, read by interpreter `python`.

    Returns {native thread id: [frame dicts]} over all interpreters (frame
    dicts carry "location": [lineno, end_lineno, col, end_col] or None)."""
    try:
        res = subprocess.run([python, "-I", "-c", REMOTE_UNWIND_SOURCE + SERVE, str(pid)],
                             capture_output=True, timeout=timeout, env=target_env())
    except subprocess.TimeoutExpired:
        raise OracleError("RemoteUnwinder did not finish within %.0f s" % timeout)
    if res.returncode != 0:
        raise OracleError("RemoteUnwinder failed (exit %d):\n%s"
                          % (res.returncode, res.stderr.decode("utf-8", "replace")))
    return _threads_of(json.loads(res.stdout))


class OracleServer(object):
    """An oracle source (REMOTE_UNWIND_SOURCE, task_oracle's) kept running
    in one subprocess of `python` for many readings, without an interpreter
    start-up each (context manager).  ask(*args) returns read(args)'s
    document, or raises OracleError."""

    def __init__(self, python, source, what="RemoteUnwinder"):
        self.what = what
        self.errors = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([python, "-I", "-c", source + SERVE, "-"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errors, env=target_env())

    def ask(self, *args, timeout=REMOTE_TIMEOUT):
        try:
            self.proc.stdin.write((" ".join(str(a) for a in args) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as e:
            raise OracleError("%s server gone (%s): %s" % (self.what, e, self._stderr()))
        fd = self.proc.stdout.fileno()
        if not select.select([fd], [], [], timeout)[0]:
            raise OracleError("%s did not answer within %.0f s" % (self.what, timeout))
        line = self.proc.stdout.readline()
        if not line:
            raise OracleError("%s server exited (%s): %s"
                              % (self.what, self.proc.poll(), self._stderr()))
        doc = json.loads(line)
        if "error" in doc:
            raise OracleError("%s failed: %s" % (self.what, doc["error"]))
        return doc

    def _stderr(self):
        self.errors.seek(0)
        return self.errors.read().decode("utf-8", "replace")[-3000:]

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.errors):
            with contextlib.suppress(OSError):
                f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


class RemoteUnwinderServer(OracleServer):
    """remote_unwind(python, pid) as unwind(pid), from one long-lived
    subprocess of `python` (for many frozen states)."""

    def __init__(self, python):
        OracleServer.__init__(self, python, REMOTE_UNWIND_SOURCE)

    def unwind(self, pid, timeout=REMOTE_TIMEOUT):
        return _threads_of(self.ask(pid, timeout=timeout))


def normalize_remote(raw):
    """Drop the frames CPython itself does not show.

    RemoteUnwinder lists the ``__init__`` shim frame (_Py_InitCleanup, pushed
    when a specialized call enters a Python ``__init__``), which CPython
    treats as incomplete: frame.f_back and tracebacks skip it.  It reports it
    with line 0 (3.14) or -1 (3.15)."""
    return {tid: [f for f in frames if f["line"] is None or f["line"] >= 1]
            for tid, frames in raw.items()}


def remote_limitation(scenario, version):
    """Why RemoteUnwinder cannot read a scenario at all (None if it can)."""
    if not has_remote_unwinder(version):
        return "_remote_debugging.RemoteUnwinder exists from 3.14 on"
    if scenario == "deep":
        return "RemoteUnwinder aborts above ~1,000 frames ('Too many stack frames')"
    if scenario == "bare" and tuple(version[:2]) >= (3, 15):
        # The chain of a thread without Python frames starts at the base
        # frame sentinel, which RemoteUnwinder takes for a broken chain.
        return ("3.15's RemoteUnwinder fails on a thread without Python frames "
                "('Failed to parse initial frame in chain')")
    return None


def _ascii(key):
    return all(ord(c) < 0x80 for c in key[0] + key[1])


def compare_with_remote(full, remote, version, names=None,
                        label_full="self view", label_remote="RemoteUnwinder"):
    """Problems between complete views ({tid: [keys]}) and RemoteUnwinder's.

    3.15: the views must be equal.  3.14.10's RemoteUnwinder (as observed)
    stops at the first frame entered from C -- a thread's view ends with the
    frame that made the C call (next(), sorted(), Thread.run's call with
    **kwargs, the import system...) -- and misdecodes non-ASCII strings
    (gh-149214; such frames may also come out as "<unknown function>"
    without a line).  There each of its views must be a prefix of the full
    one (non-empty when the full one is), comparing only the line for frames
    with non-ASCII names."""
    names = names or {}
    if tuple(version[:2]) >= (3, 15):
        return compare_views(full, remote, label_full, label_remote, names)
    problems = []
    if set(full) != set(remote):
        problems.append("thread ids differ: %s %s, %s %s"
                        % (label_full, sorted(full), label_remote, sorted(remote)))
    for tid in sorted(set(full) & set(remote)):
        exp, got = full[tid], remote[tid]
        if (not got and exp) or len(got) > len(exp):
            problems.append("thread %d (%s): %d frames from %s, %d from %s"
                            % (tid, names.get(tid), len(got), label_remote,
                               len(exp), label_full))
            continue
        for i, (e, g) in enumerate(zip(exp, got)):
            same = e == g if _ascii(e) else g[2] is None or e[2] == g[2]
            if not same:
                problems.append("thread %d (%s) frame %d: %s %s, %s %s"
                                % (tid, names.get(tid), i, label_full, _fmt(e),
                                   label_remote, _fmt(g)))
                break
    return problems


# --------------------------------------------------------------------------
# Comparison helpers


def snapshot_threads(snap):
    """native_thread_id -> thread dict, from a Snapshot.to_dict()."""
    out = {}
    for interp in snap["interpreters"]:
        for th in interp["threads"]:
            tid = th["native_thread_id"]
            if tid in out:
                raise AssertionError("native_thread_id %r listed twice" % tid)
            out[tid] = th
    return out


def _fmt(key):
    return "%s (%s:%s)" % key


def frames_diff(expected, actual, label_expected="expected", label_actual="actual"):
    """None when the two lists of (function, filename, line) are equal, else
    a readable description of the first difference."""
    if expected == actual:
        return None
    n = min(len(expected), len(actual))
    first = next((i for i in range(n) if expected[i] != actual[i]), n)
    lines = ["%d frames %s, %d frames %s; first difference at index %d (0 = innermost)"
             % (len(expected), label_expected, len(actual), label_actual, first)]
    lo, hi = max(0, first - 2), first + 3
    for i in range(lo, hi):
        e = _fmt(expected[i]) if i < len(expected) else "-"
        a = _fmt(actual[i]) if i < len(actual) else "-"
        mark = "  " if e == a else "!!"
        lines.append("  %s [%d] %s: %s\n        %s: %s" % (mark, i, label_expected, e, label_actual, a))
    if len(expected) <= 12 and len(actual) <= 12:
        lines.append("  full %s: %s" % (label_expected, [_fmt(k) for k in expected]))
        lines.append("  full %s: %s" % (label_actual, [_fmt(k) for k in actual]))
    return "\n".join(lines)


def compare_views(expected, actual, label_expected, label_actual, names=None):
    """Compare {tid: [keys]} maps; returns a list of problems (empty = equal)."""
    problems = []
    names = names or {}

    def tname(tid):
        return "thread %s (%s)" % (tid, names.get(tid, "?"))

    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    if missing:
        problems.append("threads missing from %s: %s" % (label_actual, [tname(t) for t in missing]))
    if extra:
        problems.append("threads in %s but not in %s: %s"
                        % (label_actual, label_expected,
                           ["%s: %s" % (tname(t), [_fmt(k) for k in actual[t][:3]]) for t in extra]))
    for tid in sorted(set(expected) & set(actual)):
        d = frames_diff(expected[tid], actual[tid], label_expected, label_actual)
        if d:
            problems.append("%s:\n%s" % (tname(tid), d))
    return problems


# --------------------------------------------------------------------------
# Self-check: `python3 oracle.py [PYTHON...]` runs every target under each
# interpreter and compares the targets' own views with RemoteUnwinder's
# (3.14+).  It needs no pyframes; it validates the targets and this oracle.

SCENARIOS = ("deep", "threads", "generators", "names", "from_c", "bare")


def _self_check(pythons):
    import shutil
    import tempfile
    failures = 0
    for python in pythons:
        exe = shutil.which(python) or python
        for scenario in SCENARIOS:
            with tempfile.TemporaryDirectory(prefix="pyframes-oracle-") as tmp:
                try:
                    with LiveTarget(exe, scenario + ".py", tmp) as t:
                        views = {tid: keys(f) for tid, f in t.views.items()}
                        names = {tid: t.thread_name(tid) for tid in views}
                        nframes = sum(len(v) for v in views.values())
                        why = remote_limitation(scenario, t.version_info)
                        if why:
                            print("ok   %-12s %-10s %d threads, %d frames (self view only: %s)"
                                  % (python, scenario, len(views), nframes, why))
                            continue
                        remote = normalize_remote(remote_unwind(exe, t.pid))
                        remote = {tid: keys(f) for tid, f in remote.items()}
                        problems = compare_with_remote(views, remote, t.version_info, names)
                except OracleError as e:
                    problems = [str(e)]
                if problems:
                    failures += 1
                    print("FAIL %-12s %-10s" % (python, scenario))
                    for p in problems:
                        print("    " + p.replace("\n", "\n    "))
                else:
                    print("ok   %-12s %-10s %d threads, %d frames agree with RemoteUnwinder"
                          % (python, scenario, len(views), nframes))
    return failures


if __name__ == "__main__":
    import sys
    pythons = sys.argv[1:] or ["python3.13", "python3.14", "python3.15"]
    sys.exit(1 if _self_check(pythons) else 0)
