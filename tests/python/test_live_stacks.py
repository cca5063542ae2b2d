"""Live tests: pyframes against real CPython 3.13/3.14/3.15 processes.

For every interpreter x scenario (targets/*.py) a target is started and
waited for by handshake; its threads are blocked for good at known lines.
pyframes' snapshot is compared frame for frame with

* the target's own view of every thread (sys._getframe/f_back at the line
  where the thread blocks), and
* on 3.14+, _remote_debugging.RemoteUnwinder run by the same interpreter
  version (see oracle.py for its known limits).
"""

import os
import re
import sys
import unicodedata

import pytest

from conftest import INTERPRETERS, require_interpreters, scenario_params, start_scenario
from livetarget import LiveTarget
from oracle import (OracleError, compare_views, compare_with_remote,
                    frames_diff, keys, normalize_remote, remote_limitation,
                    remote_unwind, snapshot_threads)

THREADING = ("Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap")


def _co_name(qualname):
    """The co_name of a function by its qualified name ("Thread.run": "run")."""
    return qualname.rsplit(".", 1)[-1]
MAIN = ["Harness.publish_and_block", "main", "<module>"]

# Per scenario: thread name -> the innermost functions of its own view (a
# prefix), and for worker threads the view must end with THREADING.
EXPECTED = {
    "deep": {
        "deep-recursion": ["ping", "pong", "ping", "pong"],
        "deep-generators": ["chain", "chain", "chain"],
    },
    "threads": {
        "reader": ["gamma", "beta", "alpha"] + list(THREADING),
        "sleeper": ["snooze", "sleepy"] + list(THREADING),
        "locker": ["Resource.hold", "locker"] + list(THREADING),
        "handler": ["handler"] + list(THREADING),
        "worker-3": ["worker"] * 4 + list(THREADING),
        "worker-7": ["worker"] * 8 + list(THREADING),
    },
    "bare": {
        "bare": [],  # no Python frame at all
        "bare-lock": [],
        "worker": ["worker"] + list(THREADING),
    },
    "generators": {
        "next": ["counter", "drive_next"] + list(THREADING),
        "send": ["echo", "drive_send"] + list(THREADING),
        "yield-from": ["inner", "middle", "outer", "drive_yield_from"] + list(THREADING),
        "genexpr": ["slow_square", "drive_genexpr.<locals>.<genexpr>", "drive_genexpr"]
                   + list(THREADING),
        "coroutine": ["leaf_coro", "middle_coro", "outer_coro", "drive_coroutine"]
                     + list(THREADING),
        "async-generator": ["ticker", "drive_async_generator"] + list(THREADING),
    },
    "names": {
        "nested": ["Outer.Inner.method.<locals>.inner", "Outer.Inner.method", "run_nested"]
                  + list(THREADING),
        "local-class": ["factory.<locals>.Local.run.<locals>.deeper",
                        "factory.<locals>.Local.run", "run_local_class"] + list(THREADING),
        "lambdas": ["<lambda>", "Holder.<lambda>"] + ["use_lambdas.<locals>.<lambda>"] * 3
                   + ["use_lambdas"] + list(THREADING),
        "non-ascii": ["𐌰𐌲𐌰.<locals>.𠀋", "𐌰𐌲𐌰", "Ωμεγα.内部.方法",
                      "naïve_entry.<locals>.<lambda>", "Café.déjà_vu", "naïve_entry"]
                     + list(THREADING),
        "import-time": ["<module>"],
        "synthetic": ["synthetic_leaf"] * 4 + ["synthetic_entry", "run_synthetic"]
                     + list(THREADING),
        "synthetic-exec": ["<module>", "run_synthetic_exec"] + list(THREADING),
    },
    "from_c": {
        "sorted": ["slow_key", "run_sorted"] + list(THREADING),
        "map": ["transform", "run_map"] + list(THREADING),
        "reduce": ["combine", "run_reduce"] + list(THREADING),
        "min-lambda": ["run_min_lambda.<locals>.<lambda>", "run_min_lambda"] + list(THREADING),
        "init": ["Point.__init__", "run_init"] + list(THREADING),
        "property": ["Gauge.level", "read_gauge", "run_property"] + list(THREADING),
    },
}
SCENARIOS = list(EXPECTED)

# What the innermost frame of each thread is blocked in: the source text of
# the instruction in progress (CPython positions, UTF-8 byte columns).
BLOCKING_CALL = re.compile(r"(os\.read|os\.write|time\.sleep|\w+\.held_lock\(\)\.acquire)\(.*\)\Z")


class Live:
    """A running target plus lazily taken views of it."""

    def __init__(self, interp, scenario, target):
        self.interp = interp
        self.scenario = scenario
        self.target = target
        self._snap = None
        self._remote = None

    @property
    def views(self):
        return {tid: keys(frames) for tid, frames in self.target.views.items()}

    @property
    def names(self):
        return {tid: self.target.thread_name(tid) for tid in self.target.views}

    def snapshot(self, pyframes):
        if self._snap is None:
            with pyframes.attach(self.target.pid) as t:
                self._snap = t.snapshot().to_dict()
        return self._snap

    def remote(self):
        if self._remote is None:
            self._remote = normalize_remote(remote_unwind(self.interp.path, self.target.pid))
        return self._remote


@pytest.fixture(scope="module", params=scenario_params(SCENARIOS, older="all", heap=True))
def live(request, tmp_path_factory):
    with start_scenario(request.param, tmp_path_factory) as target:
        yield Live(request.param[0], request.param[1], target)


def _source_line(filename, line):
    try:
        with open(filename, "rb") as f:
            data = f.read().splitlines()
    except OSError:
        return None
    if 1 <= line <= len(data):
        return data[line - 1]
    return None


def _snap_keys(thread):
    return [(f["function"], f["filename"], f["line"]) for f in thread["frames"]]


def _fail(problems, header):
    if problems:
        pytest.fail(header + "\n" + "\n".join(problems), pytrace=False)


# --------------------------------------------------------------------------
# The interpreters themselves


def test_interpreters_available():
    require_interpreters()
    minors = sorted({i.minor for i in INTERPRETERS if i.kind == "release"})
    assert minors, INTERPRETERS


# --------------------------------------------------------------------------
# The oracles (no pyframes involved)


def test_target_self_view(live):
    """The target did what the scenario says: expected threads, functions,
    and each innermost frame's line is the line holding record() and the
    blocking call."""
    t = live.target
    assert t.version_info[:2] == live.interp.version
    by_name = t.tid_by_name()
    expected = dict(EXPECTED[live.scenario], MainThread=MAIN)
    threading_names = THREADING
    if t.version_info < (3, 11):
        # 3.8-3.10 have no co_qualname: their frames name the co_name
        expected = {k: v and [_co_name(n) for n in v] for k, v in expected.items()}
        threading_names = tuple(_co_name(n) for n in THREADING)
    assert set(by_name) == set(expected), by_name
    problems = []
    for name, prefix in expected.items():
        frames = t.views[by_name[name]]
        funcs = [f["function"] for f in frames]
        if not prefix:
            if frames:
                problems.append("%s: expected no Python frame, got %s" % (name, funcs))
            continue
        if funcs[:len(prefix)] != prefix:
            problems.append("%s: innermost functions %s, expected %s"
                            % (name, funcs[:len(prefix) + 2], prefix))
        if name != "MainThread" and tuple(funcs[-3:]) != threading_names:
            problems.append("%s: outermost functions %s" % (name, funcs[-3:]))
        inner = frames[0]
        text = _source_line(inner["filename"], inner["line"])
        if os.path.isfile(inner["filename"]):
            if text is None or b"record()" not in text:
                problems.append("%s: innermost line %s:%d is %r, not the record() line"
                                % (name, inner["filename"], inner["line"], text))
    if live.scenario == "deep":
        rec = t.views[by_name["deep-recursion"]]
        assert len(rec) > 4000
        assert [f["function"] for f in rec[:4001]] == ["ping", "pong"] * 2000 + ["ping"]
        # The callers alternate between two call sites of each function.
        assert len({(f["function"], f["line"]) for f in rec[1:4001]}) == 4
        gen = t.views[by_name["deep-generators"]]
        assert [f["function"] for f in gen[:1201]] == ["chain"] * 1201
        assert gen[1201]["function"] == "deep_generators"
    if live.scenario == "names":
        inner = t.views[by_name["non-ascii"]]
        kinds = {max(map(ord, f["function"])) for f in inner}
        assert any(0x80 <= k < 0x100 for k in kinds)
        assert any(0x100 <= k < 0x10000 for k in kinds)
        assert any(k >= 0x10000 for k in kinds)
        names = {os.path.basename(f["filename"]) for f in inner}
        assert {"latin_é_mod.py", "bmp_Ωμεγα_中文.py", "astral_𐌰𐌱.py"} <= names
        for f in inner:
            assert unicodedata.normalize("NFKC", f["function"]) == f["function"]
        synth = t.views[by_name["synthetic"]]
        assert {f["filename"] for f in synth[:5]} == {"<synthetic-Ω>"}
        assert [f["line"] for f in synth[:5]] == [7, 6, 6, 6, 2]
        ex = t.views[by_name["synthetic-exec"]][0]
        assert (ex["filename"], ex["line"]) == ("<synthetic-é-exec>", 4)
        imp = t.views[by_name["import-time"]]
        assert os.path.basename(imp[0]["filename"]) == "import_blocker_ü.py"
        assert any(f["filename"].startswith("<frozen importlib") for f in imp)
        assert "run_import_time" in [f["function"] for f in imp]
    _fail(problems, "target %s (%s) did not behave as the scenario says"
          % (live.scenario, live.interp.name))


def test_remote_unwinder_agrees_with_self_view(live):
    """Second oracle against the first (validates both; no pyframes).  See
    oracle.compare_with_remote for what RemoteUnwinder 3.14 can show."""
    why = remote_limitation(live.scenario, live.interp.version)
    if why:
        pytest.skip(why)
    remote = {tid: keys(frames) for tid, frames in live.remote().items()}
    _fail(compare_with_remote(live.views, remote, live.interp.version, live.names),
          "RemoteUnwinder disagrees with the target's own view (%s, %s)"
          % (live.interp.name, live.scenario))


# --------------------------------------------------------------------------
# pyframes


def test_snapshot_process(live, pyframes):
    snap = live.snapshot(pyframes)
    t = live.target
    assert snap["pid"] == t.pid
    py = snap["python"]
    assert py["hexversion"] == t.hexversion
    major, minor, micro = t.version_info
    assert py["version"] == "%d.%d.%d" % (major, minor, micro) or \
        py["version"].startswith("%d.%d.%d" % (major, minor, micro))
    assert py["free_threaded"] is t.doc["free_threaded"]
    assert [i["id"] for i in snap["interpreters"]] == [0]


def test_snapshot_threads(live, pyframes):
    """Exactly the target's threads, complete, with the right ids."""
    threads = snapshot_threads(live.snapshot(pyframes))
    assert set(threads) == set(live.views), (
        "native thread ids: snapshot %s, target %s" % (sorted(threads), live.names))
    problems = []
    for tid, th in threads.items():
        name = live.names[tid]
        if th["complete"] is not True:
            problems.append("%s: complete=%r error=%r" % (name, th["complete"], th.get("error")))
        if th["thread_id"] != live.target.thread_ident(tid):
            problems.append("%s: thread_id %r, threading.get_ident() %r"
                            % (name, th["thread_id"], live.target.thread_ident(tid)))
        if not th["frames"] and live.views[tid]:
            problems.append("%s: no frames" % name)
    _fail(problems, "thread problems")


def test_snapshot_frames_match_self_view(live, pyframes):
    """function, filename, line of every frame equal the target's own view."""
    threads = snapshot_threads(live.snapshot(pyframes))
    got = {tid: _snap_keys(th) for tid, th in threads.items()}
    _fail(compare_views(live.views, got, "target's view", "pyframes", live.names),
          "pyframes disagrees with the target's own view (%s, %s)"
          % (live.interp.name, live.scenario))


def test_snapshot_positions(live, pyframes):
    """end_line/column/end_column: sane, equal to co_positions() of the
    instruction in progress for callers, and covering the blocking call for
    the innermost frame."""
    threads = snapshot_threads(live.snapshot(pyframes))
    problems = []
    seen_columns = 0
    heap = live.target.version_info < (3, 11)
    for tid, th in threads.items():
        name = live.names[tid]
        own = live.target.views.get(tid, [])
        for i, f in enumerate(th["frames"]):
            where = "%s frame %d %s:%s" % (name, i, f["function"], f["line"])
            line, end_line, col, end_col = f["line"], f["end_line"], f["column"], f["end_column"]
            if not isinstance(line, int) or line < 1:
                problems.append("%s: line %r" % (where, line))
                continue
            if end_line is not None and end_line < line:
                problems.append("%s: end_line %r < line %r" % (where, end_line, line))
            for k in ("column", "end_column"):
                if f[k] is not None and (not isinstance(f[k], int) or f[k] < 0):
                    problems.append("%s: %s %r" % (where, k, f[k]))
            if (col is not None and end_col is not None and end_line == line
                    and end_col < col):
                problems.append("%s: end_column %r < column %r" % (where, end_col, col))
            if col is not None:
                seen_columns += 1
            # Only where the frame itself matches (mismatches are reported by
            # test_snapshot_frames_match_self_view).
            if (0 < i < len(own) and own[i].get("position")
                    and (own[i]["function"], own[i]["filename"], own[i]["line"])
                    == (f["function"], f["filename"], line)):
                want = tuple(own[i]["position"])
                if (line, end_line, col, end_col) != want:
                    problems.append("%s: position %s, co_positions() says %s"
                                    % (where, (line, end_line, col, end_col), want))
            text = _source_line(f["filename"], line) if i == 0 else None
            if heap:
                # 3.8-3.10 record lines, not columns
                if (end_line, col, end_col) not in ((line, None, None), (None, None, None)):
                    problems.append("%s: position %s, expected the line alone"
                                    % (where, (line, end_line, col, end_col)))
            elif text is not None and b"record()" in text:
                # Innermost frame of a real file: blocked in the call after
                # record() on this line.
                if None in (end_line, col, end_col) or end_line != line:
                    problems.append("%s: position %s, expected one line with columns"
                                    % (where, (line, end_line, col, end_col)))
                else:
                    try:
                        covered = text[col:end_col].decode("utf-8")
                    except UnicodeDecodeError:
                        covered = None
                    if covered is None or not BLOCKING_CALL.match(covered):
                        problems.append("%s: columns %d-%d cover %r, not the blocking call"
                                        % (where, col, end_col, text[col:end_col]))
    if not seen_columns and not heap:
        problems.append("no frame has a column, although CPython records them")
    _fail(problems, "position problems (%s, %s)" % (live.interp.name, live.scenario))


def test_snapshot_matches_remote_unwinder(live, pyframes):
    """pyframes against RemoteUnwinder: same frames (3.15; prefix on 3.14)
    and, on 3.15, the same source positions where both know them."""
    why = remote_limitation(live.scenario, live.interp.version)
    if why:
        pytest.skip(why)
    threads = snapshot_threads(live.snapshot(pyframes))
    raw = live.remote()
    remote = {tid: keys(frames) for tid, frames in raw.items()}
    got = {tid: _snap_keys(th) for tid, th in threads.items()}
    problems = compare_with_remote(got, remote, live.interp.version, live.names,
                                   "pyframes", "RemoteUnwinder")
    for tid in set(raw) & set(threads):
        for i, (r, f) in enumerate(zip(raw[tid], threads[tid]["frames"])):
            loc = r.get("location")  # 3.15 only
            if not loc or (r["function"], r["filename"], r["line"]) != (
                    f["function"], f["filename"], f["line"]):
                continue
            mine = (f["line"], f["end_line"], f["column"], f["end_column"])
            if any(a is not None and a >= 0 and b is not None and a != b
                   for a, b in zip(loc, mine)):
                problems.append("thread %d (%s) frame %d %s: position %s, RemoteUnwinder %s"
                                % (tid, live.names.get(tid), i, f["function"], mine, loc))
    _fail(problems, "pyframes disagrees with RemoteUnwinder (%s, %s)"
          % (live.interp.name, live.scenario))


def test_oracle_frames_diff_reports_first_difference():
    """The comparison helper itself: equal lists pass, a change is located."""
    a = [("f", "x.py", 1), ("g", "x.py", 2)]
    assert frames_diff(a, list(a)) is None
    d = frames_diff(a, [("f", "x.py", 1), ("g", "x.py", 3)])
    assert d and "index 1" in d
    assert compare_views({1: a}, {1: a, 2: a}, "e", "a")
    assert not compare_views({1: a}, {1: list(a)}, "e", "a")


def test_handshake_reports_dead_target(tmp_path):
    """A target that dies before the handshake fails fast, with its output,
    and is reaped."""
    script = tmp_path / "dies.py"
    script.write_text("import sys\nsys.exit('target gave up on purpose')\n")
    t = LiveTarget(sys.executable, str(script), tmp_path / "work")
    with pytest.raises(OracleError) as info:
        with t:
            pass
    assert "target gave up on purpose" in str(info.value)
    assert t.proc.returncode == 1


def test_handshake_timeout_kills_target(tmp_path):
    """A target that never completes the handshake fails after the timeout
    and is killed."""
    script = tmp_path / "silent.py"
    script.write_text("import os, sys, time\n"
                      "fd = os.open(sys.argv[1], os.O_WRONLY)\n"
                      "os.write(fd, b'{\"partial\": ')\n"
                      "time.sleep(3600)\n")
    t = LiveTarget(sys.executable, str(script), tmp_path / "work", timeout=0.5)
    with pytest.raises(OracleError) as info:
        with t:
            pass
    assert "no handshake within" in str(info.value)
    assert t.proc.returncode is not None and t.proc.returncode < 0
