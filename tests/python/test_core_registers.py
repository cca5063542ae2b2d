"""The registers a core file keeps for each thread (its NT_PRSTATUS notes),
read by the library's core reader (pyframes.cores, what lldb's sessions use
where lldb shows no orig_rax of a core), against cores written by gdb of
real CPython processes: gdb's own reading of the same core is the oracle
(gdb shows orig_rax of a core); files that are no core give none."""
import os
import re
import sys

import pytest

import debugger_util as du

sys.path.insert(0, os.path.join(du.REPO, "native", "python"))
from pyframes import cores, waits  # noqa: E402


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


@pytest.fixture
def lib():
    problem = du.library_problem()
    if problem:
        pytest.skip(problem)


@pytest.mark.parametrize("version", du.VERSIONS[:1])
def test_registers_equal_gdbs(version, tmp_path, lib):
    du.require("gdb", version)
    with du.LiveTarget(du.python_for(version), depth=3, workdir=str(tmp_path),
                       foreign_thread=True) as target:
        core = str(tmp_path / "core")
        du.run_gdb(["gcore " + core], pid=target.pid, plugin=False)
        expected = _gdb_registers(target.view["executable"], core)
    got = cores.registers(core)
    assert len(expected) >= 2, expected
    assert sorted(got) == sorted(expected)
    for tid, regs in expected.items():
        assert {n: got[tid][n] for n in waits.SYSCALL_REGISTERS} == regs, tid
    # threads blocked in the target's handshake read or waits: in a call
    assert any(waits.register_facts(r) is not None for r in got.values())


def test_no_core_gives_nothing(tmp_path, lib):
    assert cores.registers(str(tmp_path / "missing")) == {}
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x7fELF\x02\x01" + b"\xff" * 200)
    assert cores.registers(str(junk)) == {}
    assert cores.registers(sys.executable) == {}  # ET_EXEC/ET_DYN


def _core(notes, phoff=64):
    """An x86-64 ELF core header with one PT_NOTE segment holding notes."""
    import struct
    head = bytearray(64)
    head[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<HH", head, 16, 4, 62)           # ET_CORE, EM_X86_64
    struct.pack_into("<Q", head, 32, phoff)             # e_phoff
    struct.pack_into("<HH", head, 54, 56, 1)            # e_phentsize, e_phnum
    phdr = struct.pack("<IIQQQQQQ", 4, 0, phoff + 56, 0, 0, len(notes), len(notes), 4)
    return bytes(head) + phdr + notes


def test_hostile_notes_give_what_is_whole(tmp_path, lib):
    """Notes cut short, absurd sizes, a prstatus too small: no exception,
    only the whole NT_PRSTATUS notes read."""
    import struct
    regs = struct.pack("<27Q", *range(100, 127))      # orig_rax is the 16th: 115
    desc = bytearray(112) + regs
    struct.pack_into("<i", desc, 32, 4242)             # pr_pid
    good = struct.pack("<III", 5, len(desc), 1) + b"CORE\0\0\0\0" + bytes(desc)
    cases = {
        "whole": (good, {4242: 115}),
        "cut": (good[:-8], {}),
        "absurd": (struct.pack("<III", 5, 0xFFFFFFF0, 1) + b"CORE\0\0\0\0", {}),
        "small": (struct.pack("<III", 5, 16, 1) + b"CORE\0\0\0\0" + bytes(16) + good,
                  {4242: 115}),
        "garbage": (bytes(range(256)) * 4, {}),
    }
    for name, (notes, want) in cases.items():
        path = tmp_path / name
        path.write_bytes(_core(notes))
        got = cores.registers(str(path))
        assert {tid: r["orig_rax"] for tid, r in got.items()} == want, name
    # a program header table past the end of the file
    path = tmp_path / "phoff"
    path.write_bytes(_core(good, phoff=1 << 40)[:200])
    assert cores.registers(str(path)) == {}
