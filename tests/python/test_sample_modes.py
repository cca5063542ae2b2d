"""``sample --mode cpu|gil``: which thread-samples a profile counts, against
what the target's threads are known to do (targets/modes.py: one thread
spinning in Python, one hashing with the GIL released, idle ones); and the
profile's thread labels against the names the target gives its threads."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

import conftest
from livetarget import TARGETS, target_env
from test_cli import run_cli

from pyframes import rawprofile


class Modes(object):
    def __init__(self, interp, kind):
        self.proc = subprocess.Popen([interp.path, os.path.join(TARGETS, "modes.py"), kind],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     env=target_env())
        line = self.proc.stdout.readline()  # the handshake: every thread runs
        if not line:
            raise AssertionError("modes.py exited before its handshake (%s)"
                                 % self.proc.wait(timeout=30))
        doc = json.loads(line)
        self.pid = doc["pid"]
        self.roles = doc["roles"]
        self.labels = _labels(self.pid, doc["threads"])  # native id -> label

    def tid_of(self, label):
        return tid_of(self.labels, label)

    def share(self, counts, total, native):
        """The share of the thread-samples of thread native."""
        return sum(n for label, n in counts.items() if self.tid_of(label) == native) / float(total)

    def close(self):
        self.proc.kill()
        self.proc.wait()


def tid_of(labels, label):
    """The native id of a profile's thread label: "name (native id)", or a
    name one thread has (labels: {native id: the target's own label}; or
    its OS name where pyframes does not read thread names)."""
    m = re.search(r" \((\d+)\)$", label)
    if m:
        return int(m.group(1))
    ids = [native for native, own in labels.items() if own == label]
    return ids[0] if len(ids) == 1 else None


def _labels(pid, threads):
    """{native id: the label a profile gives the thread}: its name, with
    "(native id)" where threads share it; the OS name (comm) for a thread
    Python does not name (sampling.ThreadNames)."""
    names = {}
    for name, native in threads:
        if name is None:
            with open("/proc/%d/task/%d/comm" % (pid, native)) as f:
                name = f.read().rstrip("\n")
        names[native] = name
    out = {}
    for native, name in names.items():
        shared = sum(1 for other in names.values() if other == name) > 1
        out[native] = "%s (%d)" % (name, native) if shared else name
    return out


def _per_thread(cli_env, tmp_path, pid, mode):
    raw = tmp_path / ("%s.raw" % mode)
    res = run_cli(cli_env, "sample", "--mode", mode, "--all", "--duration", "1.5",
                  "--rate", "500", "--raw", raw, pid)
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode()
    assert "mode %s (" % mode in out, out
    profile, _ = rawprofile.load(str(raw))
    assert profile.mode == mode
    counts = profile.by_thread()
    assert sum(counts.values()) > 0, out
    return counts, sum(counts.values()), out


def _cpu_seconds(pid, tid):
    """The thread's user and system CPU time so far, in seconds, as the
    kernel counts it (/proc/PID/task/TID/stat: utime, stime)."""
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


# the modes on every interpreter, the older ones included (their threads
# counted by native id: how their labels read does not matter here)
interp_older = conftest.interp_fixture("all", name="interp_older")


def test_cpu_mode_counts_the_thread_on_a_cpu(interp_older, cli_env, tmp_path):
    """One thread spinning, eight waiting: at least 95% of the thread-samples
    are the spinning thread's (every thread would give 1/10 in wall mode)."""
    target = Modes(interp_older, "cpu")
    try:
        counts, total, out = _per_thread(cli_env, tmp_path, target.pid, "cpu")
        busy = target.share(counts, total, target.roles["busy"])
        assert busy >= 0.95, (busy, counts, out)
        wall, wall_total, _ = _per_thread(cli_env, tmp_path, target.pid, "wall")
        assert target.share(wall, wall_total, target.roles["busy"]) < 0.2, wall
    finally:
        target.close()


def test_gil_mode_counts_the_holder(interp_older, cli_env, tmp_path):
    """A thread spinning in Python holds the GIL nearly always; a thread
    hashing with the GIL released is on a CPU but holds it rarely; threads
    blocked in C (an Event's lock, stdin) never do: they are absent.  On
    3.12-3.14 the interpreter's GIL says who holds it (PYF_SNAP_GIL), on
    3.11 the one in _PyRuntime, on 3.15 each thread state too.  On
    free-threaded builds --mode gil is refused with the reason."""
    interp = interp_older
    target = Modes(interp, "gil")
    try:
        if interp.kind == "free-threaded":
            res = run_cli(cli_env, "sample", "--mode", "gil", "--duration", "0.2", target.pid)
            err = res.stderr.decode()
            assert res.returncode != 0, err
            assert "--mode gil" in err and "free-threaded" in err, err
            return
        gil, total, out = _per_thread(cli_env, tmp_path, target.pid, "gil")
        assert target.share(gil, total, target.roles["busy"]) >= 0.8, (gil, out)
        assert target.share(gil, total, target.roles["hashing"]) <= 0.15, (gil, out)
        blocked = target.roles["idle"] + [target.roles["raw"]]
        blocked.append(target.pid)  # the main thread reads stdin
        assert not [label for label in gil if target.tid_of(label) in blocked], (gil, out)
        # cpu mode counts the hasher when it is on a CPU, by its own CPU
        # time over the run.  How much it gets depends on the machine's
        # load, and a sample finds it runnable less often than its CPU time
        # says (34 % CPU time, 9 % of the samples, on a loaded 2-core
        # machine): at least a tenth of its CPU share
        hasher = target.roles["hashing"]
        used, start = _cpu_seconds(target.pid, hasher), time.monotonic()
        cpu, cpu_total, out = _per_thread(cli_env, tmp_path, target.pid, "cpu")
        used = _cpu_seconds(target.pid, hasher) - used
        wall = time.monotonic() - start
        samples = int(re.search(r"^(\d+) samples in ", out, re.M).group(1))
        want = 0.1 * samples * used / wall
        assert target.share(cpu, cpu_total, hasher) * cpu_total >= want, (cpu, used, wall, out)
    finally:
        target.close()


def test_thread_labels_are_the_targets_names(interp, cli_env, tmp_path):
    """Every thread's root in the collapsed output, the raw profile and the
    summary is its name (threading.Thread's, the OS's for a thread Python
    does not name), with its native id where names repeat."""
    target = Modes(interp, "gil")
    try:
        collapsed, raw = tmp_path / "p.collapsed", tmp_path / "p.raw"
        svg = tmp_path / "p.svg"
        res = run_cli(cli_env, "sample", "--all", "--duration", "0.5", "--rate", "200",
                      "--collapsed", collapsed, "--raw", raw, "--flamegraph", svg, target.pid)
        out = res.stdout.decode()
        assert res.returncode == 0, res.stderr.decode()
        want = set(target.labels.values())
        assert "idle (%d)" % target.roles["idle"][0] in want and "spinner" in want
        roots = set(line.rsplit(" ", 1)[0].split(";")[0]
                    for line in collapsed.read_text().splitlines())
        assert roots == want, (roots, want)
        profile, _ = rawprofile.load(str(raw))
        assert set(profile.by_thread()) == want, profile.by_thread()
        assert "spinner" in out, out
        text = svg.read_text()
        for label in want:  # each a root box of the flame graph
            assert ">%s<" % label in text or '"%s"' % label in text, label
    finally:
        target.close()


class _FakeTarget(object):
    """What ThreadNames asks of a target: snapshots with facts (counted)."""

    pid = None

    def __init__(self, threads):
        self.threads = threads  # [(thread id, native id, name)]
        self.snapshots = 0

    def snapshot(self, limit=None, facts=False):
        from pyframes import model
        assert facts and limit == 1
        self.snapshots += 1
        threads = tuple(model.Thread(thread_id=tid, native_thread_id=native, name=name)
                        for tid, native, name in self.threads)
        interp = model.Interpreter(id=0, threads=threads)
        return model.Snapshot(pid=None, python=None, interpreters=(interp,))


def test_thread_names_are_read_rarely_and_label_repeats():
    """One facts snapshot when sampling starts; a new thread reads them
    again at most once a second (else when the profile is made); a name
    that repeats gets the native id, a thread without one its native id."""
    from pyframes.sampling import ThreadNames
    now = [100.0]
    target = _FakeTarget([(1, 11, "MainThread"), (2, 12, "worker"), (3, 13, "worker")])
    names = ThreadNames(target, clock=lambda: now[0])
    assert target.snapshots == 1
    assert names.labels({(1, 11), (2, 12), (3, 13), None}) == {
        None: None, (1, 11): "MainThread", (2, 12): "worker (12)", (3, 13): "worker (13)"}
    # among every thread read, sampled or not
    assert names.labels({(2, 12)})[(2, 12)] == "worker (12)"
    target.threads.append((4, 14, None))
    target.threads.append((5, 15, "late"))
    now[0] += 0.5
    names.saw((5, 15))  # within the second: not read yet
    assert target.snapshots == 1 and (5, 15) not in names.known
    assert names.labels({(4, 14), (5, 15)}) == {None: None, (4, 14): "thread-14",
                                                (5, 15): "late"}
    assert target.snapshots == 2
    now[0] += 2.0
    target.threads.append((6, 16, "later"))
    names.saw((6, 16))
    assert target.snapshots == 3 and names.names[(6, 16)] == "later"
    names.saw((7, 0))  # gone before it was read: its thread id
    now[0] += 2.0
    assert names.labels({(7, 0)})[(7, 0)] == "thread-0x7"
