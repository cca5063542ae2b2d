"""A live process of this machine seen as a debugger sees it.

:class:`ProcessView` is a DebuggerAdapter over /proc/PID (its memory, its
mappings, the dynamic symbols of its mapped ELF files), so that the command
line runs the runtime search of the debugger commands (pyframes.locate)
when the library's own search over the process fails, and reports what
they report: ``unsupported CPython 3.11.2 (pyframes reads CPython 3.13,
3.14 and 3.15)`` for a CPython too old to publish a runtime table, from its
exported ``Py_Version``.
"""

import os
import struct

from .adapter import DebuggerAdapter

__all__ = ["ProcessView", "elf_dynamic_symbol"]

_MAX_SYMBOLS = 1 << 20      # dynamic symbols looked at per file, at most
_MAX_SECTIONS = 1 << 16


def _maps(pid):
    """[(start, end, perms, offset, path)] of /proc/PID/maps."""
    rows = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 5:
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5].strip() if len(parts) > 5 else ""
            rows.append((start, end, parts[1], int(parts[2], 16), path))
    return rows


def elf_dynamic_symbol(path, name, map_start):
    """The address of the dynamic symbol ``name`` of the ELF file ``path``
    (64-bit, little-endian) whose offset-0 segment is mapped at
    ``map_start``; None when it has no such symbol or is not such a file."""
    try:
        with open(path, "rb") as f:
            return _dynsym(f, name.encode(), map_start)
    except (OSError, struct.error, ValueError):
        return None


def _dynsym(f, name, map_start):
    head = f.read(64)
    if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return None
    phoff, shoff = struct.unpack_from("<QQ", head, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 54)
    # the load bias: the first PT_LOAD is the mapping at file offset 0
    base = None
    f.seek(phoff)
    table = f.read(phentsize * min(phnum, _MAX_SECTIONS))
    for i in range(min(phnum, _MAX_SECTIONS)):
        p_type, _flags, p_offset, p_vaddr = struct.unpack_from("<IIQQ", table, i * phentsize)
        if p_type == 1:  # PT_LOAD
            base = (p_vaddr - p_offset) & ~0xFFF
            break
    if base is None or not shoff or shentsize < 64:
        return None
    f.seek(shoff)
    count = min(shnum, _MAX_SECTIONS)
    sections = f.read(shentsize * count)
    headers = [struct.unpack_from("<IIQQQQIIQQ", sections, i * shentsize)
               for i in range(count)]
    for sh in headers:
        if sh[1] != 11 or sh[6] >= count:  # SHT_DYNSYM, with its string table
            continue
        strtab = headers[sh[6]]
        f.seek(strtab[4])
        strings = f.read(min(strtab[5], 64 << 20))
        entsize = sh[9] or 24
        f.seek(sh[4])
        symbols = f.read(min(sh[5], entsize * _MAX_SYMBOLS))
        for off in range(0, len(symbols) - entsize + 1, entsize):
            st_name, _info, _other, st_shndx, st_value = struct.unpack_from(
                "<IBBHQ", symbols, off)
            if st_shndx == 0 or not st_value:
                continue
            if strings[st_name:st_name + len(name) + 1] == name + b"\0":
                return st_value - base + map_start
    return None


class ProcessView(DebuggerAdapter):
    """A DebuggerAdapter over the live local process ``pid``."""

    debugger_name = "pyframes"
    cheap_symbol_lookup = False  # symbols come from parsing files: sections first

    def __init__(self, pid):
        self._pid = pid
        self._mem = None
        self._rows = None

    def close(self):
        if self._mem is not None:
            self._mem.close()
            self._mem = None

    def _mappings(self):
        if self._rows is None:
            try:
                self._rows = _maps(self._pid)
            except OSError:
                self._rows = []
        return self._rows

    def pid(self):
        return self._pid

    def is_live(self):
        return True

    def executable(self):
        try:
            return os.readlink("/proc/%d/exe" % self._pid)
        except OSError:
            return None

    def read(self, addr, size):
        if self._mem is None:
            self._mem = open("/proc/%d/mem" % self._pid, "rb", buffering=0)
        data = os.pread(self._mem.fileno(), size, addr)
        if len(data) != size:
            raise OSError("short read of %d bytes at 0x%x" % (size, addr))
        return data

    def objfiles(self):
        starts = {}
        for start, _end, _perms, offset, path in self._mappings():
            if path.startswith("/") and offset == 0 and path not in starts:
                starts[path] = start
        return sorted(starts.items(), key=lambda item: "python" not in item[0])

    def writable_ranges(self):
        return [(start, end) for start, end, perms, _off, path in self._mappings()
                if "w" in perms and path.startswith("/")]

    def lookup_symbol(self, name):
        for path, start in self.objfiles():
            addr = elf_dynamic_symbol("/proc/%d/root%s" % (self._pid, path), name, start)
            if addr is None:
                addr = elf_dynamic_symbol(path, name, start)
            if addr:
                return addr
        return None
