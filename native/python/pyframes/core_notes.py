"""The registers an ELF core file keeps for each thread (its NT_PRSTATUS
notes), for a debugger that does not show all of them: lldb shows no
orig_rax of a core, which tells the system call a thread was in
(waits.register_facts).  Linux x86-64 cores only; bounded reads, and any
file it cannot read gives no registers, never an error."""

import os
import struct

__all__ = ["prstatus_registers"]

_EM_X86_64 = 62
_PT_NOTE = 4
_NT_PRSTATUS = 1
#: user_regs_struct of x86-64, in order (27 words).
_X86_64_REGS = ("r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax",
                "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss",
                "fs_base", "gs_base", "ds", "es", "fs", "gs")
#: elf_prstatus of x86-64: pr_pid at 32, pr_reg at 112.
_PR_PID = 32
_PR_REG = 112
_MAX_PHDRS = 1 << 16
_MAX_NOTES = 64 << 20  # bytes of notes read in all

_cache = {}


def prstatus_registers(path):
    """{thread id: {register name: value}} of the NT_PRSTATUS notes of the
    core file at ``path``; {} when it is no x86-64 ELF core or cannot be
    read.  Kept per file (path, size and modification time)."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            key = (path, st.st_size, st.st_mtime_ns)
            if key not in _cache:
                _cache.clear()
                _cache[key] = _read(f, st.st_size)
            return _cache[key]
    except (OSError, ValueError, struct.error):
        return {}


def _read(f, size):
    head = f.read(64)
    if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return {}  # 64-bit little-endian only
    e_type, e_machine = struct.unpack_from("<HH", head, 16)
    if e_type != 4 or e_machine != _EM_X86_64:  # ET_CORE
        return {}
    e_phoff, = struct.unpack_from("<Q", head, 32)
    e_phentsize, e_phnum = struct.unpack_from("<HH", head, 54)
    if e_phentsize < 56 or e_phnum > _MAX_PHDRS or e_phoff + e_phnum * e_phentsize > size:
        return {}
    f.seek(e_phoff)
    table = f.read(e_phnum * e_phentsize)
    out = {}
    budget = _MAX_NOTES
    for i in range(e_phnum):
        p_type, _flags, p_offset, _va, _pa, p_filesz = struct.unpack_from(
            "<IIQQQQ", table, i * e_phentsize)
        if p_type != _PT_NOTE or p_filesz > budget or p_offset + p_filesz > size:
            continue
        budget -= p_filesz
        f.seek(p_offset)
        _notes(f.read(p_filesz), out)
    return out


def _notes(data, out):
    at = 0
    while at + 12 <= len(data):
        namesz, descsz, kind = struct.unpack_from("<III", data, at)
        desc = at + 12 + (namesz + 3 & ~3)
        end = desc + (descsz + 3 & ~3)
        if end > len(data) or end <= at:
            return
        if kind == _NT_PRSTATUS and descsz >= _PR_REG + 8 * len(_X86_64_REGS):
            tid, = struct.unpack_from("<i", data, desc + _PR_PID)
            words = struct.unpack_from("<%dQ" % len(_X86_64_REGS), data, desc + _PR_REG)
            out[tid] = dict(zip(_X86_64_REGS, words))
        at = end
