"""pyframes.core_notes against cores written by gdb of real CPython
processes: each thread's registers as the core's NT_PRSTATUS notes keep
them, compared with gdb's own reading of the same core (the oracle: gdb
shows orig_rax of a core), and files that are no core."""
import os
import re
import sys

import pytest

import debugger_util as du

sys.path.insert(0, os.path.join(du.REPO, "native", "python"))
from pyframes import core_notes, waits  # noqa: E402


def _gdb_registers(executable, core):
    """{tid: {name: value}} of every thread, as gdb reads the core."""
    names = ", ".join(repr(n) for n in waits.SYSCALL_REGISTERS)
    s = du.run_gdb(["thread apply all -q python print('@@', gdb.selected_thread().ptid[1], "
                    "*[int(gdb.newest_frame().read_register(n)) & (2**64 - 1) "
                    "for n in (%s)])" % names],
                   executable=executable, core=core, plugin=False)
    out = {}
    for line in s[0].splitlines():
        m = re.match(r"@@ (\d+) ([\d ]+)$", line.strip())
        if m:
            values = [int(v) for v in m.group(2).split()]
            out[int(m.group(1))] = dict(zip(waits.SYSCALL_REGISTERS, values))
    return out


@pytest.mark.parametrize("version", du.VERSIONS[:1])
def test_notes_equal_gdbs_registers(version, tmp_path):
    du.require("gdb", version)
    with du.LiveTarget(du.python_for(version), depth=3, workdir=str(tmp_path),
                       foreign_thread=True) as target:
        core = str(tmp_path / "core")
        du.run_gdb(["gcore " + core], pid=target.pid, plugin=False)
        expected = _gdb_registers(target.view["executable"], core)
    got = core_notes.prstatus_registers(core)
    assert len(expected) >= 2, expected
    assert sorted(got) == sorted(expected)
    for tid, regs in expected.items():
        assert {n: got[tid][n] for n in waits.SYSCALL_REGISTERS} == regs, tid
    # threads blocked in the target's handshake read or waits: in a call
    assert any(waits.register_facts(r) is not None for r in got.values())


def test_no_core_gives_nothing(tmp_path):
    assert core_notes.prstatus_registers(str(tmp_path / "missing")) == {}
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF\x02\x01" + b"\xff" * 200)
    assert core_notes.prstatus_registers(str(junk)) == {}
    assert core_notes.prstatus_registers(sys.executable) == {}  # ET_EXEC/ET_DYN
