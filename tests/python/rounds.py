"""The truth about targets/churn.py's frames, from the target's own record.

churn.py numbers its rounds; round N's functions fN, gN, cN live in the
file <round-N> (sN in <sub-N> in a subinterpreter) and run only between two
events of its event counter: made, then freed.  A reader notes the counter
before (e0) and after (e1) a read; a frame of round N it shows is true only
when N's code was made before the read ended (made <= e1) and not yet freed
when it began (freed == 0 or freed > e0), its name and file name the same
round and kind, and its line is one of its function's lines.  churn.py's
own functions must sit in churn.py.  Anything else is a false frame.
"""
import contextlib
import mmap
import os
import re
import struct
import subprocess

from livetarget import target_env

HERE = os.path.dirname(os.path.abspath(__file__))
CHURN = os.path.join(HERE, "targets", "churn.py")

HEADER = struct.Struct("<QQQ")
SLOT = struct.Struct("<QQQ")
NAME = re.compile(r"^([fgcs])(\d{7})$")
FILE = re.compile(r"^<(round|sub)-(\d{7})>$")
# the lines each kind's code has (churn.py's SOURCE, GEN_SOURCE and
# SUB_SOURCE: the def line, where a frame starts, through the last)
LINES = {"f": range(1, 5), "g": range(1, 6), "c": range(8, 12), "s": range(2, 9)}
# churn.py's own functions (threading's and the interpreter's are elsewhere)
OWN = {"begin", "end", "open_record", "thread_started", "_header", "_put", "drive", "leaf",
       "one_round", "rounds",
       "subinterpreters", "worker", "main", "<module>"}


def _stable(m, at, st):
    """st's fields at m[at:], as the target last wrote them: the bytes are
    copied at once (each u64 in one load) and again until two copies agree
    (a copy taken while the target wrote a field over two stores)."""
    data = m[at:at + st.size]
    for _ in range(100):
        again = m[at:at + st.size]
        if again == data:
            break
        data = again
    return st.unpack(data)


class Record(object):
    """churn.py's record file, mapped read-only."""

    def __init__(self, path):
        self.path = path
        self._f = open(path, "rb")
        self._map = None

    def _mapped(self):
        if self._map is None:
            size = os.fstat(self._f.fileno()).st_size
            if size < HEADER.size:
                raise AssertionError("churn.py wrote no record to %s" % self.path)
            self._map = mmap.mmap(self._f.fileno(), size, access=mmap.ACCESS_READ)
            self.ring = HEADER.unpack_from(self._map, 0)[1]
        return self._map

    def threads(self):
        """The native ids of the threads the target has started."""
        return _threads(self._mapped(), self.ring)

    def event(self):
        """The target's event counter now."""
        return _stable(self._mapped(), 0, HEADER)[0]

    def slot(self, n):
        """(made, freed) of round n; None when the ring has moved past it."""
        m = self._mapped()
        got, made, freed = _stable(m, HEADER.size + (n % self.ring) * SLOT.size, SLOT)
        return (made, freed) if got == n else None

    def close(self):
        if self._map is not None:
            self._map.close()
        self._f.close()


def _threads(data, ring):
    count = HEADER.unpack_from(data, 0)[2]
    at = HEADER.size + ring * SLOT.size
    room = (len(data) - at) // 8
    return {struct.unpack_from("<Q", data, at + 8 * k)[0] for k in range(min(count, room))}


def false_threads(record, pid, tids):
    """The native thread ids among tids that are none of the target's
    (process pid): a thread state read after it was freed leads into freed
    memory.  A thread records itself when it starts (record.threads());
    one read before it did is still among the process's tasks."""
    known = record.threads()
    return [tid for tid in tids if tid not in (None, 0) and tid not in known and
            not os.path.exists("/proc/%d/task/%d" % (pid, tid))]


@contextlib.contextmanager
def churning(python, tmp_path, mode="full"):
    """churn.py running (mode "full" or "plain") and its Record."""
    path = str(tmp_path / "rounds.record")
    argv = [python, CHURN, mode, path]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, env=target_env())
    record = None
    try:
        if proc.stdout.readline() != b"ready\n":
            raise AssertionError("churn.py did not start under %s" % python)
        record = Record(path)
        yield proc, record
        # a target that ended by itself (it runs until killed) crashed: say
        # so, with how, rather than as reads of a process that is gone
        status = proc.poll()
        if status is not None:
            raise AssertionError(
                "churn.py under %s ended by itself during the test: %s" % (
                    python, "signal %d" % -status if status < 0 else "exit status %d" % status))
    finally:
        proc.kill()
        proc.wait()
        if record is not None:
            record.close()


class Frozen(object):
    """A copy of the record made while the target was stopped (the record
    file copied by the debugger between commands): its one moment."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self._data = f.read()
        self._event, self.ring, _ = HEADER.unpack_from(self._data, 0)

    def threads(self):
        return _threads(self._data, self.ring)

    def event(self):
        return self._event

    def slot(self, n):
        got, made, freed = SLOT.unpack_from(self._data, HEADER.size + (n % self.ring) * SLOT.size)
        return (made, freed) if got == n else None


def false_frames(record, frames, e0, e1):
    """The false frames among frames [(function, filename, line)] read
    between events e0 and e1, each with the reason; and how many frames of
    rounds were checked."""
    bad, rounds = [], 0
    for function, filename, line in frames:
        function, filename = function or "", filename or ""
        in_churn = os.path.basename(filename) == "churn.py"
        if in_churn or function in OWN - {"main", "<module>"}:
            if not in_churn or function not in OWN:
                bad.append((function, filename, line, "churn.py's function out of place"))
            continue
        name, file_ = NAME.match(function), FILE.match(filename)
        if file_ is not None and function == "<module>":
            number = file_.group(2)  # a round's module code, defining it
        elif name is None and file_ is None:
            continue
        elif name is None or file_ is None or name.group(2) != file_.group(2) or \
                (name.group(1) == "s") != (file_.group(1) == "sub"):
            bad.append((function, filename, line, "name and file of different code"))
            continue
        elif line is not None and line not in LINES[name.group(1)]:
            bad.append((function, filename, line, "not a line of %s" % function))
            continue
        else:
            number = name.group(2)
        rounds += 1
        when = record.slot(int(number))
        if when is None:
            continue  # the ring moved past it: a very old round, not judged
        made, freed = when
        if made == 0 or made > e1:
            bad.append((function, filename, line, "made after the read (%d > %d)" % (made, e1)))
        elif freed != 0 and freed <= e0:
            bad.append((function, filename, line, "freed before the read (%d <= %d)"
                        % (freed, e0)))
    return bad, rounds


def document_frames(document):
    """Per thread of a --json document: (error or None, native thread id,
    [(function, file, line)])."""
    for interp in document["interpreters"]:
        for t in interp["threads"]:
            yield t.get("error"), t.get("native_thread_id"), \
                [(f["function"], f["filename"], f.get("line")) for f in t["frames"]]


def snapshot_frames(snapshot):
    """The same for a Target.snapshot()."""
    for interp in snapshot.interpreters:
        for t in interp.threads:
            yield t.error, t.native_thread_id, [(f.function, f.filename, f.line)
                                                for f in t.frames]
