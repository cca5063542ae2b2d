"""A profile as speedscope's file format (``--speedscope FILE``), for its
timeline ("Time Order") view: https://www.speedscope.app/file-format-schema.json

One ``"sampled"`` profile per thread, its samples in the order taken (stacks
of indexes into ``shared.frames``, root first), each weighed by the seconds
until that thread's next sample (the last one by the profile's mean
interval).  Made from the recorded samples (``Profile.raw``).
"""

import json

from . import __version__, rawprofile
from .errors import UsageError

SCHEMA = "https://www.speedscope.app/file-format-schema.json"

__all__ = ["SCHEMA", "document", "dumps"]


def document(profile, title):
    """The speedscope document of ``profile`` (a dict)."""
    if profile.raw is None:
        raise UsageError("--speedscope: this profile's samples were not all recorded")
    names, stacks, samples = rawprofile.numbered(profile.raw)
    frames = []
    for function, filename, line in names:
        entry = {"name": function, "file": filename}
        if line is not None:
            entry["line"] = line
        frames.append(entry)
    threads = {}
    for t, label, n in samples:
        # to the microsecond, as the raw file keeps it: the same document
        # from the profile and from its raw file
        threads.setdefault(label, []).append((round(t, 6), stacks[n]))
    mean = profile.duration / profile.samples if profile.samples else 0.0
    profiles = []
    for label in sorted(threads, key=lambda k: (k is not None, k or "")):
        taken = threads[label]
        weights = [round(max(0.0, taken[i + 1][0] - taken[i][0]), 9)
                   for i in range(len(taken) - 1)] + [round(mean, 9)]
        start = taken[0][0]
        profiles.append({
            "type": "sampled", "name": label if label is not None else title,
            "unit": "seconds", "startValue": start,
            "endValue": round(start + sum(weights), 9),
            "samples": [idx for _, idx in taken], "weights": weights})
    doc = {"$schema": SCHEMA, "shared": {"frames": frames}, "profiles": profiles,
           "name": title, "exporter": "pyframes %s" % __version__}
    if profiles:  # optional in the schema; an index into an empty list is not
        doc["activeProfileIndex"] = 0
    return doc


def dumps(profile, title):
    return json.dumps(document(profile, title), separators=(",", ":")) + "\n"
