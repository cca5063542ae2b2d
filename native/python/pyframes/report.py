"""What a sampling profile becomes: files (collapsed stacks, JSON, counters,
a flame graph), the top-functions table and the summary, and the progress
line.  Shared by ``python3 -m pyframes sample`` and the debuggers'
``py-sample``."""

import argparse
import json
import time

from .errors import UsageError
from .escaping import escape


def add_output_options(parser):
    parser.add_argument("--collapsed", metavar="FILE",
                        help="write the stacks in flamegraph.pl's collapsed format")
    parser.add_argument("--json", metavar="FILE",
                        help="write the profile as JSON")
    parser.add_argument("--stats-json", metavar="FILE",
                        help="write the sampling counters as JSON")
    parser.add_argument("--flamegraph", metavar="FILE.svg",
                        help="write an interactive flame graph (SVG)")
    parser.add_argument("--raw", metavar="FILE",
                        help="keep every sample (JSON lines) to render later with "
                        "'python3 -m pyframes render FILE'")
    parser.add_argument("--speedscope", metavar="FILE",
                        help="write a timeline for speedscope (speedscope.app)")
    parser.add_argument("--by", choices=("line", "function"), default="line",
                        help="a box per function and line (default), or per "
                        "function (lines merged)")
    parser.add_argument("--diff", metavar="BASE",
                        help="compare with an earlier profile kept with --raw: the "
                        "flame graph colored by each call path's change in share, the "
                        "summary's table by each function's")
    parser.add_argument("--top", type=_top, default=15, metavar="K",
                        help="functions in the summary table, the most time "
                        "spent in them as the innermost frame first (default 15; "
                        "0: none)")
    parser.add_argument("--stats", action="store_true",
                        help="also the sampler's own counters in the summary: the "
                        "frame cache's hits, the library's time, reads and bytes per "
                        "sample (--stats-json FILE writes them)")


def _top(text):
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError("%r must be a whole number" % text)
    return value


def counters(profile):
    """The sampling counters, under their documented names."""
    stats = profile.stats
    names = ("samples", "full_hits", "partial_hits", "misses", "frames_from_cache",
             "frames_from_memory", "read_calls", "bytes_read", "anchor_writes")
    out = {name: stats.get(name, 0) for name in names}
    out["samples"] = profile.samples
    out["failed_samples"] = profile.failed
    out["thread_errors"] = profile.thread_errors
    out["thread_samples"] = profile.total
    return out


def _write(path, text):
    try:
        with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
    except OSError as e:
        raise UsageError("cannot write %s: %s" % (path, e.strerror or e))


def wants_raw(args):
    """Whether the options need every sample kept (Sampler(record=...))."""
    return bool(getattr(args, "raw", None) or getattr(args, "speedscope", None))


def counts(profile):
    """``N samples in S s; M thread-samples``: the rounds over the process
    and the stacks they read (one per thread read)."""
    return "%d samples in %.2f s; %d thread-samples" % (
        profile.samples, profile.duration, profile.total)


def base_profile(args):
    """The profile ``--diff BASE`` names (by ``--by``, loaded once), or
    None."""
    path = getattr(args, "diff", None)
    if not path:
        return None
    cached = getattr(args, "_diff_base", None)
    if cached is None or cached[0] != path:
        from . import rawprofile
        base = rawprofile.load(path)[0]
        if getattr(args, "by", "line") == "function":
            base = base.by_function()
        cached = args._diff_base = (path, base)
    return cached[1]


def _stacks(profile):
    """``([(frames, count)], labelled)``: the profile's stacks for a flame
    graph, a thread's label (when kept) as their root frame."""
    stacks = []
    labelled = False
    for (label, frames), count in profile.stacks.items():
        if label is not None:
            labelled = True
            frames = ((label, "", None),) + tuple(frames)
        stacks.append((frames, count))
    return stacks, labelled


def process_title(pid, command=None):
    """A profile's title: ``pid 1234 (python3 app.py --workers 4)``, the
    process's command line as render.process_command gives it (escaped)
    when known."""
    return "pid %d (%s)" % (pid, command) if command else "pid %d" % pid


def write_outputs(profile, args, title="pyframes"):
    """The files the options ask for."""
    if getattr(args, "raw", None):
        from . import rawprofile
        _write(args.raw, rawprofile.dumps(profile, title))
    base = base_profile(args)
    if getattr(args, "by", "line") == "function":
        profile = profile.by_function()
    if getattr(args, "speedscope", None):
        from . import speedscope
        _write(args.speedscope, speedscope.dumps(profile, title))
    if getattr(args, "collapsed", None):
        _write(args.collapsed, "".join(line + "\n" for line in profile.collapsed()))
    if getattr(args, "json", None):
        doc = profile.to_dict()
        doc["counters"] = counters(profile)
        _write(args.json, json.dumps(doc, indent=1) + "\n")
    if getattr(args, "stats_json", None):
        _write(args.stats_json, json.dumps(counters(profile), indent=1, sort_keys=True) + "\n")
    if getattr(args, "flamegraph", None):
        from . import flamegraph
        stacks, labelled = _stacks(profile)
        subtitle = counts(profile)
        if base is not None:
            subtitle += "; against %s (%s)" % (escape(args.diff), counts(base))
        _write(args.flamegraph, flamegraph.render_svg(
            stacks, title="pyframes: %s" % title, subtitle=subtitle,
            unit="thread-samples" if labelled else "samples",
            base=None if base is None else _stacks(base)[0]))


def diff_table(profile, base, top=15):
    """Lines of the functions whose share of the thread-samples (total:
    counted once per stack they are in) changed most from ``base`` to
    ``profile``, in percentage points."""
    now = _shares(profile)
    was = _shares(base)
    rows = sorted(set(now) | set(was), key=lambda name: (
        -abs(now.get(name, 0.0) - was.get(name, 0.0)), name))
    lines = ["%7s %7s %7s  %s" % ("base%", "now%", "change", "function (file)")]
    for name in rows[:top]:
        a, b = was.get(name, 0.0), now.get(name, 0.0)
        lines.append("%6.1f%% %6.1f%% %+7.1f  %s (%s)" % (
            a, b, b - a, escape(name[0]), escape(name[1])))
    return lines


def _shares(profile):
    total = profile.total
    return {(f, n): 100.0 * whole / total
            for f, n, _, whole in profile.top(None)} if total else {}


def summary(profile, sampler=None, cache="off", top=15, extra=(), base=None,
            stats=False, costs=()):
    """The text printed at the end of a profile: what was sampled, the
    failures, which threads counted and the notes (``extra``), then the
    functions by their self share (the hot leaf first) and the lines.
    With ``stats`` also the sampler's own counters (the frame cache, the
    library's time, reads and bytes per sample; ``costs``: the front
    end's own lines of that kind)."""
    lines = []
    total = profile.total
    rate = profile.samples / profile.duration if profile.duration > 0 else 0.0
    failed = profile.failed + profile.thread_errors
    lines.append("%d samples in %.2f s (%.0f/s); %d failed (%.1f%%); %d thread-samples" % (
        profile.samples, profile.duration, rate, failed,
        100.0 * failed / max(profile.samples, 1), total))
    for message, count in sorted(profile.errors.items(), key=lambda kv: -kv[1])[:3]:
        lines.append("  %d x %s" % (count, escape(message)))
    lines.append(_mode_line(profile))
    if stats:
        lines.extend(_stats_lines(profile, sampler, cache))
        lines.extend(costs)
    lines.extend(extra)
    rows = profile.top(top) if top else []
    if rows and total:
        lines.append("")
        lines.append("%7s %7s  %s" % ("self%", "total%", "function (file)"))
        for function, filename, own, whole in rows:
            lines.append("%6.1f%% %6.1f%%  %s (%s)" % (
                100.0 * own / total, 100.0 * whole / total, escape(function),
                escape(filename)))
        lines_by_self = [r for r in profile.top_lines(top) if r[3]]
        if lines_by_self:
            lines.append("")
            lines.append("%7s %7s  %s" % ("self%", "total%", "line (file)"))
            for function, filename, line, own, whole in lines_by_self:
                lines.append("%6.1f%% %6.1f%%  %s:%d (%s)" % (
                    100.0 * own / total, 100.0 * whole / total, escape(function), line,
                    escape(filename)))
    elif not total:
        lines.append("no Python stacks were sampled")
    if base is not None and top:
        lines.append("")
        lines.append("against the base profile (%s):" % counts(base))
        lines.extend(diff_table(profile, base, top))
    return "\n".join(lines) + "\n"


def _stats_lines(profile, sampler, cache):
    """--stats: the frame cache's counters and the library's cost per
    sample."""
    c = counters(profile)
    lines = []
    if cache != "off":
        lines.append("frame cache (%s): %d full hits, %d partial hits, %d misses; "
                     "%d frames from the cache, %d read; %d anchor writes" % (
                         cache, c["full_hits"], c["partial_hits"], c["misses"],
                         c["frames_from_cache"], c["frames_from_memory"],
                         c["anchor_writes"]))
    if sampler is not None and profile.samples:
        lines.append("library: %.1f us per sample; %.1f reads, %.0f bytes per sample" % (
            1e6 * sampler.library_time / profile.samples,
            c["read_calls"] / profile.samples, c["bytes_read"] / profile.samples))
    return lines


#: What each mode counts, of every thread and of the main thread only
#: (--main).
_MODE_WORDS = {
    ("wall", "all"): "every thread, running or waiting",
    ("cpu", "all"): "threads on a CPU",
    ("gil", "all"): "the thread holding the GIL",
    ("wall", "main"): "the main thread only: --main",
    ("cpu", "main"): "the main thread while on a CPU: --main",
    ("gil", "main"): "the main thread while it holds the GIL: --main",
}


def _mode_line(profile):
    """Which thread-samples the mode counted, and how many each thread gave
    (most first; at most 8 named)."""
    words = _MODE_WORDS.get((profile.mode, profile.threads), profile.mode)
    line = "mode %s (%s)" % (profile.mode, words)
    per = sorted(((n, label) for label, n in profile.by_thread().items() if label is not None),
                 key=lambda nl: (-nl[0], nl[1]))
    if per:
        shown = ", ".join("%s %d" % (escape(label), n) for n, label in per[:8])
        more = len(per) - 8
        line += "; thread-samples per thread: " + shown + (
            ", %d more threads" % more if more > 0 else "")
    return line


class _Line(object):
    """One line of a terminal rewritten in place; :meth:`done` clears it."""

    def __init__(self, stream):
        self.stream = stream
        self.width = 0

    def show(self, text):
        self.stream.write("\r" + text.ljust(self.width))
        self.stream.flush()
        self.width = max(self.width, len(text))

    def done(self):
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()


class count_line(_Line):
    """``label: i/n samples``, at most four times a second (py-sample)."""

    def __init__(self, stream, label):
        _Line.__init__(self, stream)
        self.label = label
        self.shown = 0.0

    def __call__(self, done, total):
        now = time.monotonic()
        if total > 1 and (now - self.shown > 0.25 or done == total):
            self.shown = now
            self.show("%s: %d/%d samples" % (escape(self.label), done, total))


class progress_line(_Line):
    """``sampling: N samples, R/s, F failed`` (python3 -m pyframes sample;
    sampling.run calls it about four times a second)."""

    def __call__(self, samples, failed, elapsed):
        rate = samples / elapsed if elapsed > 0 else 0.0
        self.show("sampling: %d samples, %.0f/s, %d failed" % (samples, rate, failed))
