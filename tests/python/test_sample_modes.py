"""``sample --mode cpu|gil``: which thread-samples a profile counts, against
what the target's threads are known to do (targets/modes.py: one thread
spinning in Python, one hashing with the GIL released, idle ones)."""

import json
import os
import subprocess
import sys

import pytest

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

    def close(self):
        self.proc.kill()
        self.proc.wait()


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


def _share(counts, total, native):
    return counts.get("thread-%d" % native, 0) / float(total)


def test_cpu_mode_counts_the_thread_on_a_cpu(interp, cli_env, tmp_path):
    """One thread spinning, eight waiting: at least 95% of the thread-samples
    are the spinning thread's (every thread would give 1/10 in wall mode)."""
    target = Modes(interp, "cpu")
    try:
        counts, total, out = _per_thread(cli_env, tmp_path, target.pid, "cpu")
        busy = _share(counts, total, target.roles["busy"])
        assert busy >= 0.95, (busy, counts, out)
        wall, wall_total, _ = _per_thread(cli_env, tmp_path, target.pid, "wall")
        assert _share(wall, wall_total, target.roles["busy"]) < 0.2, wall
    finally:
        target.close()


def test_gil_mode_counts_the_holder(interp, cli_env, tmp_path):
    """A thread spinning in Python holds the GIL nearly always; a thread
    hashing with the GIL released is on a CPU but holds it rarely.  On
    3.13/3.14 (no holder in the thread states) and free-threaded builds,
    --mode gil is refused with the reason."""
    target = Modes(interp, "gil")
    try:
        if interp.version < (3, 15) or interp.kind == "free-threaded":
            res = run_cli(cli_env, "sample", "--mode", "gil", "--duration", "0.2", target.pid)
            err = res.stderr.decode()
            assert res.returncode != 0, err
            assert "--mode gil" in err and ("3.15" in err or "free-threaded" in err), err
            return
        gil, total, out = _per_thread(cli_env, tmp_path, target.pid, "gil")
        assert _share(gil, total, target.roles["busy"]) >= 0.8, (gil, out)
        assert _share(gil, total, target.roles["hashing"]) <= 0.15, (gil, out)
        cpu, cpu_total, out = _per_thread(cli_env, tmp_path, target.pid, "cpu")
        assert cpu.get("thread-%d" % target.roles["hashing"], 0) >= 0.05 * cpu_total, (cpu, out)
    finally:
        target.close()
