"""The raw samples of a profile (``--raw FILE``), to render again later
(``python3 -m pyframes render FILE``).

The file is JSON lines, UTF-8, one JSON object per line, in this order:

1. the header: ``{"format": "pyframes-raw", "version": 1, "title": T}``
   (``T`` the name the outputs were given, e.g. ``"pid 1234"``);
2. the frames, numbered from 0 in the order of these lines:
   ``{"frame": [function, filename, line or null]}``;
3. the stacks, numbered from 0 in the order of these lines:
   ``{"stack": [frame numbers, root first]}``;
4. the thread-samples in the order taken: ``{"t": seconds since the first,
   to the microsecond, "thread": label or null, "s": stack number}``;
5. the end: ``{"end": {"samples": N, "failed_samples": N, "thread_errors":
   N, "duration": seconds, "mode": "wall" | "cpu" | "gil", "threads":
   "all" | "main", "errors": {message: count}, "stats": {name: value}}}``
   -- the rounds over the process (``mode``: which thread-samples they
   counted, "wall" when absent; ``threads``: which threads were read,
   when absent "all" if a thread-sample names its thread, else "main"), the
   failures and the target's counters (the thread-samples of step 4 are
   one per thread read).

A reader takes versions it knows (1) and refuses others.  Rendering the
file gives the same outputs, byte for byte, as the sampling run that wrote
it.
"""

import json

from .errors import UsageError
from .sampling import Profile

FORMAT = "pyframes-raw"
VERSION = 1

__all__ = ["FORMAT", "VERSION", "dumps", "load", "numbered"]


def _line(obj):
    return json.dumps(obj, separators=(",", ":")) + "\n"


def dumps(profile, title):
    """The raw file of ``profile`` (which must hold ``raw``) as text."""
    if profile.raw is None:
        raise UsageError("--raw: this profile's samples were not all recorded")
    out = [_line({"format": FORMAT, "version": VERSION, "title": title})]
    frames, stacks, samples = numbered(profile.raw)
    out.extend(_line({"frame": list(frame)}) for frame in frames)
    out.extend(_line({"stack": stack}) for stack in stacks)
    out.extend(_line({"t": round(t, 6), "thread": label, "s": n})
               for t, label, n in samples)
    out.append(_line({"end": {
        "samples": profile.samples, "failed_samples": profile.failed,
        "thread_errors": profile.thread_errors, "duration": profile.duration,
        "mode": profile.mode, "threads": profile.threads,
        "errors": dict(profile.errors), "stats": dict(profile.stats)}}))
    return "".join(out)


def numbered(raw):
    """``(frames, stacks, samples)`` of ``Profile.raw``: the frames and the
    stacks (lists of frame numbers) in the order first seen, and each
    sample as ``(t, label, stack number)``."""
    numbers, stacks, samples = {}, {}, []
    for t, label, stack in raw:
        n = stacks.get(stack)
        if n is None:
            n = stacks[stack] = len(stacks)
            for frame in stack:
                if frame not in numbers:
                    numbers[frame] = len(numbers)
        samples.append((t, label, n))
    return (list(numbers), [[numbers[f] for f in stack] for stack in stacks], samples)


def load(path):
    """``(profile, title)`` of the raw file at ``path``."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return _parse(f, path)
    except OSError as e:
        raise UsageError("cannot read %s: %s" % (path, e.strerror or e))


def _parse(lines, path):
    def bad(number, why):
        return UsageError("%s:%d: not a pyframes raw profile: %s" % (path, number, why))

    profile = Profile()
    profile.raw = []
    frames, stacks, title, ended = [], [], None, False
    for number, text in enumerate(lines, 1):
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise bad(number, str(e))
        if not isinstance(obj, dict):
            raise bad(number, "a line is not an object")
        if number == 1:
            if obj.get("format") != FORMAT:
                raise bad(number, "no pyframes-raw header")
            if obj.get("version") != VERSION:
                raise bad(number, "version %r (this pyframes reads %d)"
                          % (obj.get("version"), VERSION))
            title = str(obj.get("title", "pyframes"))
        elif ended:
            raise bad(number, "a line after the end")
        elif "frame" in obj:
            frame = obj["frame"]
            if not (isinstance(frame, list) and len(frame) == 3):
                raise bad(number, "a frame is [function, filename, line]")
            frames.append((str(frame[0]), str(frame[1]),
                           None if frame[2] is None else int(frame[2])))
        elif "stack" in obj:
            try:
                stacks.append(tuple(frames[i] for i in obj["stack"]))
            except (IndexError, TypeError):
                raise bad(number, "a stack names a frame not defined before it")
        elif "s" in obj:
            try:
                stack = stacks[obj["s"]]
            except (IndexError, TypeError):
                raise bad(number, "a sample names a stack not defined before it")
            label = obj.get("thread")
            profile.raw.append((float(obj.get("t", 0.0)), label, stack))
            key = (label, stack)
            profile.stacks[key] = profile.stacks.get(key, 0) + 1
        elif "end" in obj:
            try:
                _end(profile, obj["end"])
            except (KeyError, TypeError, ValueError) as e:
                raise bad(number, "the end line: %s" % e)
            ended = True
        else:
            raise bad(number, "a line of no known kind")
    if title is None:
        raise bad(1, "the file is empty")
    if not ended:
        raise bad(number, "no end line (the file is cut short)")
    return profile, title


def _end(profile, end):
    profile.samples = int(end["samples"])
    profile.failed = int(end["failed_samples"])
    profile.thread_errors = int(end["thread_errors"])
    profile.duration = float(end["duration"])
    profile.mode = str(end.get("mode", "wall"))
    # written since every thread became the default; before, a profile of
    # every thread labelled them
    threads = end.get("threads")
    if threads is None:
        threads = "all" if any(label is not None for label, _ in profile.stacks) else "main"
    profile.threads = str(threads)
    profile.errors = dict(end.get("errors", {}))
    profile.stats = dict(end.get("stats", {}))
