"""A stopped target's writable memory, byte for byte, and where CPython 3.15
keeps each thread state's frame-cache anchor.

* :func:`writable_memory` reads every writable mapping of a process through
  /proc/PID/mem (root may read it while a debugger traces the process).
* :func:`changed_words` lists the 8-byte words that differ between two reads.
* :func:`anchor_words` finds ``last_profiled_frame`` of every thread state
  without pyframes: the ``_Py_DebugOffsets`` layout comes from CPython's own
  header (pycore_debug_offsets.h of the target's include directory), the
  runtime from its cookie in the memory read, the thread states by following
  the interpreter and thread lists with those offsets.
"""

import os
import re
import subprocess

COOKIE = b"xdebugpy"


def writable_memory(pid):
    """{start: bytes} of the process's writable mappings ([vvar] and
    [vsyscall] aside: the kernel's, not the process's)."""
    out = {}
    with open("/proc/%d/maps" % pid) as maps, \
            open("/proc/%d/mem" % pid, "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if "w" not in fields[1] or (len(fields) > 5 and fields[5] in ("[vvar]", "[vsyscall]")):
                continue
            try:
                mem.seek(lo)
                out[lo] = mem.read(hi - lo)
            except OSError:
                pass
    return out


def word(memory, addr):
    """The 8-byte little-endian word at addr, or None when not read."""
    for lo, data in memory.items():
        if lo <= addr and addr + 8 <= lo + len(data):
            return int.from_bytes(data[addr - lo:addr - lo + 8], "little")
    return None


def changed_words(before, after):
    """Addresses of the 8-byte words that differ; a mapping that appeared or
    disappeared counts as changed at its start."""
    changed = set()
    for lo in set(before) ^ set(after):
        changed.add(lo)
    for lo, old in before.items():
        new = after.get(lo)
        if new is None or new == old:
            continue
        if len(old) != len(new):
            changed.add(lo)
        for i in range(0, min(len(old), len(new)), 8):
            if old[i:i + 8] != new[i:i + 8]:
                changed.add(lo + i)
    return changed


def debug_offsets_layout(python):
    """{"struct.field": byte offset inside _Py_DebugOffsets} from the
    target's CPython header (every field up to thread_state is a uint64_t
    after the 8-byte cookie)."""
    include = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('include'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(include, "internal", "pycore_debug_offsets.h")) as f:
        text = f.read()
    body = text[text.index("typedef struct _Py_DebugOffsets {"):]
    body = body[:body.index("} thread_state;") + len("} thread_state;")]
    layout, offset, group = {}, 8, ""
    for line in body.splitlines()[1:]:
        line = line.strip()
        m = re.match(r"struct _(\w+)\s*\{", line)
        if m:
            group = m.group(1)
            continue
        m = re.match(r"uint64_t (\w+);", line)
        if m:
            layout["%s.%s" % (group, m.group(1)) if group else m.group(1)] = offset
            offset += 8
        elif line.startswith("char cookie"):
            continue
        elif line and not line.startswith(("//", "}", "/*", "*")):
            raise AssertionError("unexpected field in _Py_DebugOffsets: %r" % line)
    return layout


def anchor_words(python, memory, hexversion, limit=10000):
    """Addresses of last_profiled_frame in every thread state of every
    interpreter of a 3.15 target whose writable memory is ``memory``."""
    layout = debug_offsets_layout(python)
    runtimes = []
    for lo, data in memory.items():
        at = data.find(COOKIE)
        while at >= 0:
            addr = lo + at
            if addr % 8 == 0 and word(memory, addr + layout["version"]) == hexversion:
                runtimes.append(addr)
            at = data.find(COOKIE, at + 1)
    assert len(runtimes) == 1, "runtimes found: %s" % [hex(a) for a in runtimes]
    runtime = runtimes[0]

    def off(name):
        return word(memory, runtime + layout[name])

    anchors = []
    interp = word(memory, runtime + off("runtime_state.interpreters_head"))
    while interp and len(anchors) < limit:
        tstate = word(memory, interp + off("interpreter_state.threads_head"))
        while tstate and len(anchors) < limit:
            anchors.append(tstate + off("thread_state.last_profiled_frame"))
            tstate = word(memory, tstate + off("thread_state.next"))
        interp = word(memory, interp + off("interpreter_state.next"))
    assert anchors, "no thread state found from the runtime at 0x%x" % runtime
    return set(anchors)
