"""The outputs of a sampling profile made from profiles built here (no
shared library, no process): the raw file (pyframes.rawprofile) read back
into the same profile, ``--by function``, the counts the files name
(samples and thread-samples), speedscope's format against the required
fields of its published schema (checked by hand, no network), and
``python3 -m pyframes render`` writing the same bytes as the profile did.
"""

import argparse
import json
import os
import subprocess
import sys

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PKG = os.path.join(_REPO, "native", "python")
if _PKG not in sys.path:
    sys.path.insert(0, _PKG)

from pyframes import rawprofile, report, speedscope  # noqa: E402
from pyframes.errors import UsageError  # noqa: E402
from pyframes.sampling import Profile  # noqa: E402

MAIN30 = ("main", "/app/main.py", 30)
MAIN31 = ("main", "/app/main.py", 31)
WORK = ("work", "/app/w.py", 5)
ODD = ("say \"hi\" \udcff <\u03bb>", "<frozen odd>", None)


def make_profile():
    """3 samples over 2 threads: 5 thread-samples, 1 thread error."""
    prof = Profile()
    prof.raw = [
        (0.0, "thread-1", (MAIN30, WORK)), (0.0, "thread-2", (ODD,)),
        (0.001, "thread-1", (MAIN31, WORK)), (0.001, "thread-2", (ODD,)),
        (0.0025, "thread-1", (MAIN30, WORK)),
    ]
    for _, label, frames in prof.raw:
        key = (label, frames)
        prof.stacks[key] = prof.stacks.get(key, 0) + 1
    prof.samples, prof.failed, prof.thread_errors = 3, 0, 1
    prof.duration = 0.003125
    prof.errors = {"stack not read to the end: bad": 1}
    prof.stats = {"full_hits": 2, "read_calls": 40}
    return prof


def outputs(tmp_path, tag, **extra):
    names = ("collapsed", "json", "stats_json", "flamegraph", "speedscope")
    args = argparse.Namespace(raw=None, by="line", top=5, **extra)
    for name in names:
        setattr(args, name, str(tmp_path / ("%s.%s" % (tag, name))))
    return args, names


def test_raw_round_trip(tmp_path):
    prof = make_profile()
    text = rawprofile.dumps(prof, "pid 7")
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0] == {"format": "pyframes-raw", "version": 1, "title": "pid 7"}
    assert lines[-1]["end"]["samples"] == 3
    assert sum(1 for line in lines if "s" in line) == 5
    assert sum(1 for line in lines if "stack" in line) == 3
    assert sum(1 for line in lines if "frame" in line) == 4
    path = tmp_path / "p.raw"
    path.write_text(text, encoding="utf-8")
    back, title = rawprofile.load(str(path))
    assert title == "pid 7"
    assert back.stacks == prof.stacks and back.raw == prof.raw
    for name in ("samples", "failed", "thread_errors", "duration", "errors", "stats",
                 "threads"):
        assert getattr(back, name) == getattr(prof, name), name
    # a file of a profile of the main thread says so (--main)
    prof.threads = "main"
    path.write_text(rawprofile.dumps(prof, "pid 7"), encoding="utf-8")
    assert rawprofile.load(str(path))[0].threads == "main"


@pytest.mark.parametrize("text,why", [
    ("", "empty"),
    ('{"format": "pyframes-raw", "version": 2}\n', "version 2"),
    ('{"format": "other"}\n', "header"),
    ('{"format": "pyframes-raw", "version": 1}\n{"t": 0, "stack": [0]}\n', "not defined"),
    ('{"format": "pyframes-raw", "version": 1}\n{"t": 0, "s": 0}\n', "not defined"),
    ('{"format": "pyframes-raw", "version": 1}\n', "no end line"),
])
def test_raw_refuses_what_it_cannot_read(tmp_path, text, why):
    path = tmp_path / "bad.raw"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=why):
        rawprofile.load(str(path))


def test_files_name_samples_and_thread_samples(tmp_path):
    prof = make_profile()
    args, _ = outputs(tmp_path, "a")
    report.write_outputs(prof, args, title="t")
    doc = json.load(open(args.json))
    assert (doc["samples"], doc["thread_samples"]) == (3, 5)
    assert doc["counters"]["thread_samples"] == 5
    stats = json.load(open(args.stats_json))
    assert (stats["samples"], stats["thread_samples"]) == (3, 5)
    svg = open(args.flamegraph, encoding="utf-8").read()
    assert ">3 samples in 0.00 s; 5 thread-samples</text>" in svg
    assert "thread-samples, " in svg   # the boxes count thread-samples
    text = report.summary(prof)
    assert text.startswith("3 samples in 0.00 s (960/s); 1 failed (33.3%); 5 thread-samples\n")


def test_summary_gives_self_and_total_per_function_and_per_line():
    """5 thread-samples: work:5 is the innermost of 3 (60 %), ODD of 2
    (a frame without a line is in no line row); main:30 is in 2 stacks and
    innermost in none, main:31 in 1; the mode line counts per thread."""
    text = report.summary(make_profile(), top=5)
    lines = text.splitlines()
    assert "mode wall (every thread, running or waiting); thread-samples per thread: " \
        "thread-1 3, thread-2 2" in lines
    by_line = lines[lines.index("  self%  total%  line (file)") + 1:]
    assert by_line[:1] == ["  60.0%   60.0%  work:5 (/app/w.py)"], text
    functions = lines[lines.index("  self%  total%  function (file)") + 1:]
    assert "   0.0%   60.0%  main (/app/main.py)" in functions, text
    rows = make_profile().top_lines(None)
    assert ("main", "/app/main.py", 30, 0, 2) in rows and ("main", "/app/main.py", 31, 0, 1) in rows


def service_profile():
    """A service's profile (busy_service.py's shape): three workers each in
    their hot leaf, the main thread joining them, a reporter sleeping.  By
    total share the threads' common frames (Thread._bootstrap, Thread.run,
    the worker loop) come first; by self share the leaf does."""
    boot = ("Thread._bootstrap", "/lib/threading.py", 1000)
    run = ("Thread.run", "/lib/threading.py", 990)
    loop = ("worker", "/app/service.py", 20)
    leaf = ("score", "/app/service.py", 9)
    prof = Profile()
    for n in range(3):
        prof.stacks[("worker-%d" % n, (boot, run, loop, leaf))] = 100
    prof.stacks[("reporter", (boot, run, ("reporter", "/app/service.py", 30)))] = 100
    prof.stacks[("MainThread", (("<module>", "/app/service.py", 50),
                                ("main", "/app/service.py", 45),
                                ("Thread.join", "/lib/threading.py", 1100)))] = 100
    prof.samples, prof.duration = 100, 1.0
    prof.stats = {"full_hits": 2, "read_calls": 40, "bytes_read": 4000}
    return prof


def test_summary_lists_the_hot_leaf_first():
    """The function table is sorted by self share, as py-spy's top: the
    hot leaf, then each blocked thread's leaf, then the frames every
    thread shares (their total share still in the second column)."""
    lines = report.summary(service_profile(), top=15).splitlines()
    functions = lines[lines.index("  self%  total%  function (file)") + 1:]
    assert functions[0] == "  60.0%   60.0%  score (/app/service.py)", lines
    assert [row.split()[2] for row in functions[1:3]] == ["Thread.join", "reporter"], lines
    assert "   0.0%   80.0%  Thread._bootstrap (/lib/threading.py)" in functions, lines


def test_summary_counters_only_with_stats():
    """What the user cannot act on (the frame cache's counters, reads and
    bytes per sample, the front end's costs) only with --stats."""
    class Sampler(object):
        library_time = 0.002

    prof = service_profile()
    plain = report.summary(prof, Sampler(), cache="on", costs=["per sample: x"])
    assert not [line for line in plain.splitlines()
                if line.startswith(("frame cache", "library:", "per sample"))], plain
    full = report.summary(prof, Sampler(), cache="on", stats=True, costs=["per sample: x"])
    assert "frame cache (on): 2 full hits" in full and "\nper sample: x\n" in full, full
    assert "library: 20.0 us per sample; 0.4 reads, 40 bytes per sample" in full, full


def test_thread_failures_worded_as_what_they_are():
    """A running process's stack that changed while it was read is a
    skipped thread-sample, not an inconsistency of the target; the same
    codes in a stopped process, and other codes, are named."""
    from pyframes import errors
    for code in (errors.PYF_ECORRUPT, errors.PYF_EFAULT, errors.PYF_ECYCLE):
        assert errors.thread_sample_failure(code, True) == \
            "a stack that changed while it was read (that thread-sample skipped)"
        stopped = errors.thread_sample_failure(code, False)
        assert stopped.endswith(": " + errors.error_message(code)), stopped
    assert "depth or count limit" in errors.thread_sample_failure(errors.PYF_EDEPTH, True)


def test_mode_line_says_which_threads():
    """--main reads one thread: the mode line says so (it said "every
    thread read" of a profile of the main thread)."""
    prof = Profile()
    prof.stacks[(None, (MAIN30,))] = 4
    prof.samples, prof.threads = 4, "main"
    assert "mode wall (the main thread only: --main)" in report.summary(prof)
    prof.mode = "cpu"
    assert "mode cpu (the main thread while on a CPU: --main)" in report.summary(prof)


def test_by_function_merges_the_lines(tmp_path):
    prof = make_profile()
    by = prof.by_function()
    assert by.stacks == {
        ("thread-1", (("main", "/app/main.py", None), ("work", "/app/w.py", None))): 3,
        ("thread-2", ((ODD[0], ODD[1], None),)): 2}
    assert by.samples == 3 and by.total == prof.total == 5
    args, _ = outputs(tmp_path, "f", )
    args.by = "function"
    report.write_outputs(prof, args, title="t")
    assert open(args.collapsed).read().splitlines()[0] == (
        "thread-1;main (/app/main.py);work (/app/w.py) 3")
    svg = open(args.flamegraph, encoding="utf-8").read()
    assert "main:30" not in svg and "main:31" not in svg


def test_speedscope_has_the_schemas_required_fields():
    doc = speedscope.document(make_profile(), "pid 7")
    # file-format-schema.json: SpeedscopeFile requires $schema, shared
    # (frames), profiles; SampledProfile requires type, name, unit,
    # startValue, endValue, samples, weights; a frame requires name
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert all(isinstance(fr["name"], str) for fr in frames)
    assert all(isinstance(fr.get("line", 1), int) and isinstance(fr.get("file", ""), str)
               for fr in frames)
    assert [p["name"] for p in doc["profiles"]] == ["thread-1", "thread-2"]
    for p in doc["profiles"]:
        assert {"type", "name", "unit", "startValue", "endValue", "samples",
                "weights"} <= set(p)
        assert p["type"] == "sampled"
        assert p["unit"] in ("none", "nanoseconds", "microseconds", "milliseconds",
                             "seconds", "bytes")
        assert len(p["samples"]) == len(p["weights"])
        assert all(0 <= i < len(frames) for s in p["samples"] for i in s)
        assert all(isinstance(w, (int, float)) and w >= 0 for w in p["weights"])
        assert p["endValue"] >= p["startValue"]
        assert isinstance(doc["activeProfileIndex"], int)
    one = doc["profiles"][0]
    assert [[frames[i]["name"] for i in s] for s in one["samples"]] == [["main", "work"]] * 3
    assert one["weights"][:2] == [0.001, 0.0015]
    assert frames[one["samples"][1][0]]["line"] == 31
    json.dumps(doc)   # plain JSON


def test_speedscope_of_an_empty_profile_names_no_profile():
    """No sample: no profile, and no activeProfileIndex pointing into the
    empty list (the schema makes the index optional)."""
    prof = Profile()
    prof.raw = []
    doc = speedscope.document(prof, "empty")
    assert doc["profiles"] == [] and "activeProfileIndex" not in doc
    assert {"$schema", "shared", "profiles"} <= set(doc)


def test_render_writes_the_same_bytes(tmp_path):
    prof = make_profile()
    args, names = outputs(tmp_path, "direct")
    args.raw = str(tmp_path / "kept.raw")
    report.write_outputs(prof, args, title="pid 7")
    cmd = [sys.executable, "-m", "pyframes", "render", args.raw]
    again = {}
    for name in names:
        again[name] = str(tmp_path / ("render." + name))
        cmd += ["--" + name.replace("_", "-"), again[name]]
    env = dict(os.environ, PYTHONPATH=_PKG)
    run = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         timeout=60)
    assert run.returncode == 0, run.stderr.decode()
    assert run.stdout.decode().startswith("3 samples in 0.00 s")
    for name in names:
        with open(getattr(args, name), "rb") as a, open(again[name], "rb") as b:
            assert a.read() == b.read(), name
