"""Sampling profiles: many snapshots of a target aggregated into stacks.

For a target the library reads, the samples are taken a batch at a time
by the library (pyf_sample_run, up to 50 ms a call), which counts each
thread's frame keys by stack; each distinct stack of a batch is then one
dict entry here.  Otherwise (a Python reader, ``--mode cpu``) a sample
costs one library snapshot and, per thread, one slice of its frame-key
array counted in a dict.  Either way no frame, record or string is looked
at while sampling.  Names are resolved once, when the profile is made, from
the frame table the keys belong to (the latest snapshot of each table is
kept for that, which keeps the table alive).  A sampler that records (for
``--raw`` and ``--speedscope``) also keeps each thread-sample's time and
counted key.
"""

import array
import os
import random
import time

from . import _abi, errors, tids
from ._convert import THREAD, failure_code
from .escaping import collapsed_name
from .options import SAMPLE_MODES as MODES

_MAX_TABLES = 16
# a thread's values in Target.sample_source()'s rows
_TID = THREAD.index["thread_id"]
_NATIVE = THREAD.index["native_thread_id"]
_INTERP_INDEX = THREAD.index["interp_index"]
_FLAGS = THREAD.index["flags"]
_FAILURE = THREAD.index["failure"]  # the thread's one failure (NULL: none)


class Profile(object):
    """Aggregated samples.

    ``stacks``: {(thread label or None, frames root first): count}, each frame
    ``(function, filename, line)``; ``samples`` taken, ``failed`` samples
    (the snapshot failed), ``thread_errors`` (a thread whose stack could not
    be read to the end: not counted in ``stacks``), ``duration`` in seconds,
    ``stats`` the target's counters.  ``raw``: None, or (when the sampler
    records) every thread-sample as ``(seconds since the start, thread
    label or None, frames root first)``, in the order taken.

    ``samples`` counts rounds over the process; ``total`` (also
    ``thread_samples``) counts the stacks those rounds read, one per thread
    read (``threads``: "all", several per sample, or "main") that the
    ``mode`` counts: every thread ("wall"), a thread running on a CPU
    ("cpu"), the thread holding the GIL ("gil").
    """

    def __init__(self):
        self.mode = "wall"
        self.threads = "all"
        self.raw = None
        self.stacks = {}
        self.samples = 0
        self.failed = 0
        self.thread_errors = 0
        self.duration = 0.0
        self.stats = {}
        self.errors = {}  # message -> count, for the summary

    @property
    def total(self):
        return sum(self.stacks.values())

    thread_samples = total

    def by_function(self):
        """This profile with every frame's line dropped: one
        ``(function, filename, None)`` per function (``--by function``)."""
        out = Profile()
        out.__dict__.update(self.__dict__)
        out.stacks = {}
        for (label, frames), count in self.stacks.items():
            key = (label, tuple((f[0], f[1], None) for f in frames))
            out.stacks[key] = out.stacks.get(key, 0) + count
        if self.raw is not None:
            out.raw = [(t, label, tuple((f[0], f[1], None) for f in frames))
                       for t, label, frames in self.raw]
        return out

    def by_thread(self):
        """{thread label or None: thread-samples}."""
        out = {}
        for (label, _), count in self.stacks.items():
            out[label] = out.get(label, 0) + count
        return out

    def merge(self, other):
        self.mode = other.mode
        self.threads = other.threads
        if other.raw is None or (self.raw is None and self.samples):
            self.raw = None  # some samples were not recorded
        else:
            # the other profile's times follow this one's
            offset = self.duration
            self.raw = (self.raw or []) + [(t + offset, label, frames)
                                           for t, label, frames in other.raw]
        for key, count in other.stacks.items():
            self.stacks[key] = self.stacks.get(key, 0) + count
        self.samples += other.samples
        self.failed += other.failed
        self.thread_errors += other.thread_errors
        self.duration += other.duration
        for message, count in other.errors.items():
            self.errors[message] = self.errors.get(message, 0) + count
        for name, value in other.stats.items():
            self.stats[name] = self.stats.get(name, 0) + value

    def collapsed(self):
        """Lines of flamegraph.pl's collapsed format, root first, frames
        ``function (filename:line)``; a thread label, when kept, is the root."""
        totals = {}
        for (label, frames), count in self.stacks.items():
            parts = [] if label is None else [collapsed_name(label)]
            for function, filename, line in frames:
                where = collapsed_name(filename) + (":%d" % line if line is not None else "")
                parts.append("%s (%s)" % (collapsed_name(function), where))
            key = ";".join(parts)
            totals[key] = totals.get(key, 0) + count
        return ["%s %d" % (key, count) for key, count in sorted(totals.items())]

    def top(self, limit=20):
        """[(function, filename, self count, total count)] by self (the
        samples a function was the innermost frame of: the hot leaf
        first, as py-spy's top sorts), then total; total counts a
        function once per stack it is in."""
        own, total = {}, {}
        for (_, frames), count in self.stacks.items():
            if not frames:
                continue
            leaf = frames[-1][:2]
            own[leaf] = own.get(leaf, 0) + count
            for name in set(f[:2] for f in frames):
                total[name] = total.get(name, 0) + count
        rows = [(name[0], name[1], own.get(name, 0), n) for name, n in total.items()]
        rows.sort(key=lambda r: (-r[2], -r[3], r[0], r[1]))
        return rows if limit is None else rows[:limit]

    def top_lines(self, limit=20):
        """[(function, filename, line, self count, total count)] by self,
        then total: the lines a function was at when sampled (self: the
        innermost frame; total: counted once per stack it is in)."""
        own, total = {}, {}
        for (_, frames), count in self.stacks.items():
            if not frames:
                continue
            leaf = frames[-1]
            own[leaf] = own.get(leaf, 0) + count
            for frame in set(frames):
                total[frame] = total.get(frame, 0) + count
        rows = [(f[0], f[1], f[2], own.get(f, 0), n) for f, n in total.items()
                if f[2] is not None]
        rows.sort(key=lambda r: (-r[3], -r[4], r[0], r[1], r[2]))
        return rows if limit is None else rows[:limit]

    def to_dict(self):
        return {
            "samples": self.samples,
            "failed_samples": self.failed,
            "thread_errors": self.thread_errors,
            "thread_samples": self.total,
            "duration": round(self.duration, 6),
            "mode": self.mode,
            "threads": self.threads,
            "stacks": [
                {"thread": label,
                 "frames": [{"function": f, "filename": n, "line": l} for f, n, l in frames],
                 "count": count}
                for (label, frames), count in sorted(
                    self.stacks.items(), key=lambda kv: (-kv[1], repr(kv[0])))],
            "stats": dict(self.stats),
        }




class Sampler(object):
    """Takes samples of a :class:`pyframes.Target`.

    ``threads``: "main" (the main thread: the one whose OS id is the
    process id, else the interpreter's main thread), or "all".
    ``running``: whether the process runs while it is sampled (default:
    a target read by PID does), which words the failure of a thread whose
    stack changed while it was read (errors.thread_sample_failure).
    ``label_threads`` keeps each thread apart in the profile, labelled by
    its name (:class:`ThreadNames`).  ``record``
    keeps every thread-sample in order as well (``Profile.raw``, what
    ``--raw`` writes): one list append per thread-sample.  ``mode`` (one of
    :data:`MODES`) says which of the threads read a sample counts: "cpu"
    needs a live local process (``target.pid``: the state of each thread in
    ``/proc/PID/task/TID/stat``), "gil" a CPython with a GIL (3.13+, not
    free-threaded: the snapshots are asked which thread holds it,
    PYF_SNAP_GIL); else ``UsageError``.  ``ids``: the target's threads'
    ids where pyframes runs (pyframes.tids; default: from /proc for a
    target with a pid), for ``/proc/PID/task/TID`` and the main thread.
    """

    def __init__(self, target, threads="main", label_threads=None, record=False,
                 mode="wall", running=None, ids=None):
        if threads not in ("main", "all"):
            raise ValueError("threads must be 'main' or 'all'")
        if ids is None:
            ids = tids.of_process(target.pid) if target.pid else tids.SAME
        self._keep = _mode_filter(target, mode, ids)
        self.mode = mode
        self.target = target
        self.threads = threads
        self.running = bool(target.pid) if running is None else running
        self.label_threads = threads == "all" if label_threads is None else label_threads
        # the main thread of a process is the one whose OS id is its pid
        # (the interpreter's id of it asked for); without a pid it is
        # picked from every thread's flags
        native = ids.recorded(target.pid) if threads == "main" and target.pid else None
        self._source = target.sample_source(native, gil=mode == "gil")
        self._pick_main = threads == "main" and not native
        # threads are counted by (thread id, native id), labelled when the
        # profile is made
        self._names = ThreadNames(target, ids=ids) if self.label_threads else None
        self._stacks = {}      # (thread key or None, frames) -> count
        self._counts = {}      # (table id, thread key, key bytes) -> count
        self._holders = {}     # table id -> (pointer, byref) of its latest snapshot
        self._spare = []       # (pointer, byref) pairs not holding a snapshot
        self._profile = Profile()
        self._profile.mode = mode
        self._profile.threads = threads
        # recording: (seconds, counted key) per thread-sample, each key
        # one shared object (_canon) until its table is resolved, then
        # looked up in _resolved: key -> (label, frames)
        self._raw = [] if record else None
        self._canon = {}
        self._resolved = {}
        self._started = None
        self._elapsed = 0.0
        # a _convert.SampleBatch (None: one sample at a time), used once
        # use_batches() says so
        self._batch = self._batches()
        #: True once a sample failed because the process exited.
        self.exited = False

    def sample(self):
        """One sample; False when it failed (counted, nothing added)."""
        t = self.target
        source = self._source
        spare = self._spare
        if not spare:
            spare.append(source.holder())
        out, out_ref = spare[-1]
        started = time.perf_counter()
        rc, read = source.take(out, out_ref)
        prof = self._profile
        prof.samples += 1
        if rc != 0 or not out:
            prof.failed += 1
            if rc in (errors.PYF_ENOPROC, errors.PYF_EFAULT) and t.pid and process_gone(t.pid):
                self.exited = True
            message = errors.error_message(rc) if rc else "no snapshot"
            prof.errors[message] = prof.errors.get(message, 0) + 1
            self._elapsed += time.perf_counter() - started
            return False
        keep = False
        try:
            if read is None:
                prof.failed += 1
                return False
            table_id, rows = read
            counts = self._counts
            names = self._names
            record = self._raw is not None
            if self._pick_main:
                rows = _main_thread(rows)
            if self._keep is not None:
                rows = self._keep(rows)
            for thread, keys in rows:
                failure = thread[_FAILURE]
                if failure:
                    prof.thread_errors += 1
                    message = errors.thread_sample_failure(failure_code(failure),
                                                           self.running)
                    prof.errors[message] = prof.errors.get(message, 0) + 1
                    continue
                if keys is None:  # past the snapshot's frames
                    continue
                who = (thread[_TID], thread[_NATIVE]) if names is not None else None
                k = (table_id, who, keys)
                n = counts.get(k)
                if n is not None:
                    counts[k] = n + 1
                else:
                    counts[k] = 1
                    if names is not None and who not in names.known:
                        names.saw(who)
                if record:
                    if self._started is None:
                        self._started = started
                    self._raw.append((started - self._started, self._canon.setdefault(k, k)))
            spare.pop()
            keep = True
            self._hold(table_id, (out, out_ref))
            return True
        finally:
            if not keep:
                source.free(out)
            self._elapsed += time.perf_counter() - started

    def _hold(self, table_id, holder):
        """The newest snapshot of each table is kept (with the table, for
        the names): ``holder``'s for table_id; the one it replaces goes."""
        old = self._holders.get(table_id)
        self._holders[table_id] = holder
        if old is not None:
            self._source.free(old[0])
            self._spare.append(old)
        elif len(self._holders) > _MAX_TABLES:
            self._resolve(min(self._holders))

    def _batches(self):
        """A _convert.SampleBatch for this sampler (made before sampling
        starts: a debugger resumes the process right after), or None when
        the library cannot take its samples (a Python reader, "cpu", the
        main thread of a target without a pid, which _main_thread picks)."""
        if self._pick_main or (self._keep is not None and
                               not isinstance(self._keep, _HoldsGil)):
            return None
        flags = ((_abi.PYF_SAMPLE_GIL if self._keep is not None else 0) |
                 (_abi.PYF_SAMPLE_TIMES if self._raw is not None else 0))
        return self._source.batch(flags)

    def use_batches(self, interval, seed):
        """Take samples many at a time in the library from now on
        (:meth:`sample_batch`), each wait drawn around ``interval`` seconds
        (JITTER) from the generator state ``seed``: True when this sampler
        can (a target read by the library, a mode other than "cpu")."""
        if self._batch is None:
            return False
        self._batch.schedule(interval, JITTER, seed)
        return True

    def sample_batch(self, until, count=0):
        """Samples until the time.monotonic() time ``until``, at most
        ``count`` (0: no bound), counted by the library
        (:meth:`use_batches` first); the number taken."""
        batch = self._batch
        prof = self._profile
        rc = batch.run(until, count)
        if rc != 0:  # the call failed as a whole: one failed sample
            prof.samples += 1
            prof.failed += 1
            message = errors.error_message(rc)
            prof.errors[message] = prof.errors.get(message, 0) + 1
            return 1
        tables = batch.tables()  # held below, whatever interrupts the counting
        try:
            return self._count_batch(batch, prof)
        finally:
            for table_id, holder in tables:
                self._hold(table_id, holder)

    def _count_batch(self, batch, prof):
        samples, failed, thread_errors, by_code, threads, end, busy = batch.counts()
        prof.samples += samples
        prof.failed += failed
        prof.thread_errors += thread_errors
        for code, n in by_code.items():
            message = errors.error_message(code)
            prof.errors[message] = prof.errors.get(message, 0) + n
        for code, n in threads.items():
            message = errors.thread_sample_failure(code, self.running)
            prof.errors[message] = prof.errors.get(message, 0) + n
        t = self.target
        if end == _abi.PYF_SAMPLE_END_GONE and t.pid and process_gone(t.pid):
            self.exited = True
        counts = self._counts
        names = self._names
        keys_of = []
        for table_id, tid, native, keys, n in batch.stacks():
            who = (tid, native) if names is not None else None
            k = (table_id, who, keys)
            old = counts.get(k)
            if old is None:
                counts[k] = n
                if names is not None and who not in names.known:
                    names.saw(who)
            else:
                counts[k] = old + n
            keys_of.append(k)
        if self._raw is not None:
            canon = self._canon
            raw = self._raw
            for at, i in batch.times():
                if self._started is None:
                    self._started = at
                k = keys_of[i]
                raw.append((at - self._started, canon.setdefault(k, k)))
        self._elapsed += busy
        return samples

    @property
    def library_time(self):
        """Seconds spent in sample() (the library and the counting)."""
        return self._elapsed

    def _resolve(self, table_id):
        """Names for the stacks counted against table_id; the table is
        then let go."""
        holder, holder_ref = self._holders.pop(table_id)
        try:
            names = self._source.names(holder)
            frames = [(f.function, f.filename, f.line) for f in names.frames]
            stacks = self._stacks
            record = self._raw is not None
            for key in [k for k in self._counts if k[0] == table_id]:
                count = self._counts.pop(key)
                skey = (key[1], _stack(frames, key[2]))
                stacks[skey] = stacks.get(skey, 0) + count
                if record:
                    self._canon.pop(key, None)
                    self._resolved[key] = skey
        finally:
            self._source.free(holder)
            self._spare.append((holder, holder_ref))

    def profile(self):
        """The profile so far (names resolved); sampling may go on."""
        for table_id in sorted(self._holders):
            self._resolve(table_id)
        self._counts = {k: v for k, v in self._counts.items() if k[0] in self._holders}
        prof = self._profile
        label = {None: None}
        if self._names is not None:
            label = self._names.labels(set(who for who, _ in self._stacks))
        prof.stacks = {}
        for (who, frames), count in self._stacks.items():
            key = (label[who], frames)
            prof.stacks[key] = prof.stacks.get(key, 0) + count
        prof.stats = self.target.stats()
        if self._raw is not None:
            resolved = self._resolved
            prof.raw = [(t, label[resolved[key][0]], resolved[key][1]) for t, key in self._raw]
        return prof

    def close(self):
        for table_id in list(self._holders):
            self._source.free(self._holders.pop(table_id)[0])
        if self._batch is not None:
            self._batch.close()
        if self._keep is not None:
            self._keep.close()


class ThreadNames(object):
    """The labels of a profile's threads: each thread's name, read with a
    snapshot that asks for the thread facts (``Target.snapshot(facts=True)``,
    about 1-3 ms for 200 threads, so never per sample): once when sampling
    starts, then when a sample shows a thread not seen before, at most
    once a second (:data:`REFRESH`), and once more when the profile is made
    if a thread seen since is still unknown.  A thread that Python does
    not name (no threading.Thread) has its OS name on a live local process
    (``/proc/PID/task/TID/comm``).

    A label is the name (``worker``); ``name (native id)`` when threads
    with other native ids share that name (``worker (4242)``): any thread
    the names were read of, sampled or not, so that a label does not hang
    on which threads a mode counted;
    ``thread-NATIVE`` for a thread without a name (``thread-0xIDENT``
    without a native id, ``thread-unknown`` without either).  A native id
    is the thread's OS id where pyframes runs (``ids``, pyframes.tids: a
    target in a container read from the node)."""

    REFRESH = 1.0  # seconds between two reads of the names, at least

    def __init__(self, target, clock=time.monotonic, ids=tids.SAME):
        self.target = target
        self.clock = clock
        self.ids = ids
        self.names = {}      # (thread id, native id) -> name or None
        self.known = set()   # the keys looked up (named or not)
        self._pending = set()  # seen since the last read, not in it
        self._last = None
        self.reads = 0
        self.refresh()

    def saw(self, who):
        """A sample shows thread ``who`` for the first time."""
        self._pending.add(who)
        if self._last is None or self.clock() - self._last >= self.REFRESH:
            self.refresh()

    def refresh(self):
        """Read every thread's name now (a failed read names none)."""
        self._last = self.clock()
        self.reads += 1
        pending, self._pending = self._pending, set()
        try:
            snap = self.target.snapshot(limit=1, facts=True)
        except errors.PyframesError:
            threads = ()
        else:
            threads = list(snap.threads())
        pid = self.target.pid
        for t in threads:
            who = (t.thread_id or 0, t.native_thread_id or 0)
            name = t.name
            if not name and pid and who[1]:
                name = self._os_name(pid, who)
            self.names[who] = name or None
            self.known.add(who)
        # a thread gone before it was read stays unnamed, and is not read for again
        for who in pending:
            if who not in self.known:
                name = self._os_name(pid, who) if pid and who[1] else None
                self.names[who] = name
                self.known.add(who)

    def _os_tid(self, who):
        """The OS id of thread ``who`` (thread id, native id), or None."""
        host = self.ids.host(who[1], who[0]) if who[1] else None
        if host is None:
            return who[1] or None
        return host or None

    def _os_name(self, pid, who):
        tid = self._os_tid(who)
        return _os_name(pid, tid) if tid else None

    def labels(self, threads):
        """{thread key: label} of ``threads`` (the keys of a profile's
        threads), and None: None.  Whether a name repeats is decided among
        every thread whose name was read."""
        if self._pending:
            self.refresh()
        by_name = {}
        for who, name in self.names.items():
            if name:
                by_name.setdefault(name, set()).add(who[1] or who[0])
        out = {None: None}
        for who in threads:
            if who is None:
                continue
            tid, native = who[0], self._os_tid(who)
            name = self.names.get(who)
            if not name:
                out[who] = _fallback_label(tid, native)
            elif len(by_name[name]) > 1:
                out[who] = "%s (%d)" % (name, native) if native else "%s (0x%x)" % (name, tid)
            else:
                out[who] = name
        return out


def _fallback_label(tid, native):
    if native:
        return "thread-%d" % native
    return "thread-0x%x" % tid if tid else "thread-unknown"


def _os_name(pid, native):
    """The OS's name of thread ``native`` of process ``pid``, or None."""
    try:
        with open("/proc/%d/task/%d/comm" % (pid, native), "rb") as f:
            name = f.read(64).rstrip(b"\n").decode("utf-8", "replace")
    except OSError:
        return None
    return name or None


def _mode_filter(target, mode, ids):
    """None for "wall" (every thread counts), else a callable keeping the
    rows of the threads the mode counts (with a ``close()``); ``ids``
    (pyframes.tids) gives a thread's OS id for /proc."""
    if mode == "wall":
        return None
    if mode == "cpu":
        if not target.pid:
            raise errors.UsageError(
                "--mode cpu reads each thread's state from /proc/PID/task/TID/stat: it "
                "needs a live process on this machine (use --mode wall or gil here)")
        return _OnCpu(target.pid, ids)
    if mode == "gil":
        python = target.python
        if python.free_threaded:
            raise errors.UsageError("--mode gil: this CPython %s is free-threaded and has "
                                    "no GIL (use --mode cpu or wall)" % python.version)
        return _HoldsGil()
    raise errors.UsageError("--mode: one of %s, not %r" % (", ".join(MODES), mode))


class _HoldsGil(object):
    """The thread holding the GIL: its flags say so (3.15: its thread
    state's holds_gil; 3.11-3.14: the GIL is locked and it is the last
    holder, PYF_SNAP_GIL; 3.11's GIL is in _PyRuntime)."""

    _BOTH = _abi.PYF_THREAD_GIL_KNOWN | _abi.PYF_THREAD_HOLDS_GIL

    def __call__(self, rows):
        both = self._BOTH
        return [row for row in rows if row[0][_FLAGS] & both == both]

    def close(self):
        pass


class _OnCpu(object):
    """Threads running or runnable (state R in /proc/PID/task/TID/stat, TID
    the thread's OS id here: ``ids``), as CPython's profiler counts them in
    its cpu mode.  Each thread's stat file stays open between samples (one
    pread per thread-sample)."""

    def __init__(self, pid, ids=tids.SAME):
        self.pid = pid
        self.ids = ids
        self._fds = {}

    def __call__(self, rows):
        return [row for row in rows if self._running(row[0][_NATIVE], row[0][_TID])]

    def _running(self, native, ident=0):
        fd = self._fds.get(native)
        try:
            if fd is None:
                host = self.ids.host(native, ident)
                fd = self._fds[native] = os.open(
                    "/proc/%d/task/%d/stat" % (self.pid, native if host is None else host),
                    os.O_RDONLY)
            data = os.pread(fd, 512, 0)
        except OSError:  # the thread is gone (or its id was not an OS one)
            self._drop(native)
            return False
        end = data.rfind(b")")
        return end >= 0 and data[end + 2:end + 3] == b"R"

    def _drop(self, native):
        fd = self._fds.pop(native, None)
        if fd is not None:
            os.close(fd)

    def close(self):
        for native in list(self._fds):
            self._drop(native)


def _stack(frames, keys):
    """The frames, root first, of a thread's frame-key bytes."""
    idx = array.array("I")
    idx.frombytes(keys)
    return tuple(frames[i] for i in reversed(idx) if i < len(frames))


def process_gone(pid):
    """Whether process ``pid`` has exited (no longer there, or a zombie
    whose memory is gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    state = data[data.rfind(")") + 2:][:1]
    return state in ("Z", "X")


def _main_thread(rows):
    """The interpreter's main thread (flagged on 3.14+; on 3.13 the oldest
    thread of the first interpreter, last in its list)."""
    flagged = [(thread, keys) for thread, keys in rows if thread[_FLAGS] & _abi.PYF_THREAD_MAIN]
    if flagged:
        return flagged[:1]
    first_interp = [(thread, keys) for thread, keys in rows if thread[_INTERP_INDEX] == 0]
    return first_interp[-1:]


#: Each wait between samples is 1/rate times a factor drawn uniformly from
#: [1 - JITTER, 1 + JITTER] (the mean rate is the rate asked for).  At a
#: fixed interval the samples lock onto the phase of a periodic workload
#: (a loop whose turn is near a divisor or a multiple of the interval) and
#: its profile is skewed by where that phase happens to be: light()'s share
#: of tests/python/targets/workload.py read 12.5-25 % in five 3 s runs at
#: 100 Hz (about 300 samples each: 2.4 points of sampling error).
JITTER = 0.5


def run(sampler, *, duration=None, rate=1000.0, count=None, progress=None,
        clock=time.monotonic, stop=None, jitter=None):
    """Sample until ``duration`` seconds or ``count`` samples (at least one
    of them), Ctrl-C, the process exits (``sampler.exited``) or ``stop()``
    says so (asked from the second sample on: a debugger's Ctrl-C right
    after it resumed the process still leaves a profile); ``rate``
    samples per second on average (0: as fast as
    possible), each wait drawn around 1/rate (JITTER; ``jitter`` a
    ``random.Random``-like source, default a new one).  ``progress(samples,
    failed, elapsed)`` is called about 4 times a second.  A sampler that
    can (:meth:`Sampler.use_batches`, with the real clock) takes its samples
    a batch at a time in the library, on the same schedule."""
    start = clock()
    interval = 1.0 / rate if rate else 0.0
    draw = (jitter or random.Random()).random
    if clock is time.monotonic and hasattr(sampler, "use_batches") and \
            sampler.use_batches(interval, int(draw() * 2.0 ** 53) | 1):
        end = start + duration if duration is not None else float("inf")

        def take(now, left):
            return sampler.sample_batch(min(now + BATCH, end), left or 0)
    else:
        take = _one_at_a_time(sampler, start, interval, draw, clock, stop)
    last_report = start
    n = 0
    try:
        while True:
            now = clock()
            if duration is not None and now - start >= duration:
                break
            if count is not None and n >= count:
                break
            if n and stop is not None and stop():
                break  # (after the first sample: a stop right away keeps one)
            taken = take(now, None if count is None else count - n)
            if taken is None:
                break  # stop() said so while it waited
            n += taken
            if getattr(sampler, "exited", False):
                break  # nothing more to sample
            if progress is not None and clock() - last_report >= 0.25:
                last_report = clock()
                progress(sampler._profile.samples, sampler._profile.failed,
                         last_report - start)
    except KeyboardInterrupt:
        pass  # Ctrl-C ends the sampling; the profile so far is kept
    prof = sampler.profile()
    prof.duration = clock() - start
    return prof


#: the longest a library call samples before the loop looks again (Ctrl-C,
#: ``stop()``, progress)
BATCH = 0.05


def _one_at_a_time(sampler, start, interval, draw, clock, stop):
    """run()'s step for a sampler the library cannot batch: wait for the
    next sample's time, take it (1), or None when ``stop()`` says so."""
    spread = 2.0 * JITTER
    low = 1.0 - JITTER
    next_at = [start]

    def take(now, left):
        if interval and now < next_at[0]:
            time.sleep(next_at[0] - now)
            if stop is not None and stop():
                return None
        sampler.sample()
        if interval:
            next_at[0] += interval * (low + spread * draw())
            if next_at[0] < clock() - interval:
                next_at[0] = clock()  # fell behind: do not burst to catch up
        return 1
    return take
