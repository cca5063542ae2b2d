"""Finding _PyRuntime through a debugger.

The search itself is the library's (pyf_runtime_locate, the same one the
PID reader runs over /proc/PID/maps): the symbol _PyRuntime the debugger
knows, the .PyRuntime section and the symbol _PyRuntime of each mapped
python file, then the runtime cookie in writable memory, each candidate
probed, and the runtime's size and Py_Version checked against a built-in
layout (CPython 3.11, 3.12).  This module only gathers what the debugger
knows (the symbol, its objfiles and their load addresses, the writable
ranges, the process's PID and name) and turns the outcome into a
NoRuntime.  Every refusal is worded by the library, the same as the
command line prints it: "unsupported CPython 3.7.17 (pyframes reads
CPython 3.8-3.15)", "process 12 (sleep) is not a Python process".  Only
what the debugger alone can see (the symbol Py_Version of a file the
library cannot open, on a remote target) is checked here, and worded by
pyframes.errors the same way.
"""

import os
import struct

from . import errors, target
from .adapter import ask
from .errors import CommandError, NoRuntime

__all__ = ["RUNTIME_SYMBOL", "locate_asyncio", "locate_runtime", "target_name"]

RUNTIME_SYMBOL = "_PyRuntime"
ASYNCIO_SYMBOL = "_AsyncioDebug"
VERSION_SYMBOL = "Py_Version"


def _debugger_version(read, adapter):
    """The PY_VERSION_HEX the symbol Py_Version (CPython 3.11+) holds, as
    the debugger finds it; None when it has none."""
    addr = ask(adapter.lookup_symbol, VERSION_SYMBOL)
    if not addr:
        return None
    try:
        data = read(addr, 8)
    except Exception:
        return None
    if len(data) != 8:
        return None
    v = struct.unpack("<Q", bytes(data))[0] & 0xFFFFFFFF
    return v if (v >> 24) == 3 and ((v >> 4) & 0xF) >= 0xA else None


def target_name(adapter):
    """How failures name the debugger's process: "process 12 (sleep)", by
    its name in /proc for a live local process, else by the debugger's
    executable; None without a PID."""
    pid = ask(adapter.pid)
    if not pid:
        return None
    name = None
    if ask(adapter.is_live_local):
        try:
            with open("/proc/%d/comm" % pid, "rb") as f:
                name = f.read().rstrip(b"\n").decode("utf-8", "replace") or None
        except OSError:
            name = None
    if name is None:
        exe = ask(adapter.executable)
        name = os.path.basename(exe) if exe else None
    return errors.process_label(pid, name)


def _mappings(adapter):
    """The address space as the debugger knows it: each objfile's load
    address (its mapping at file offset 0) and the writable ranges."""
    rows = []
    for path, start in ask(adapter.objfiles) or []:
        if path and start is not None:
            rows.append((start, start + 1, 0, "r", path))
    for start, end in ask(adapter.writable_ranges) or []:
        if end > start:
            rows.append((start, end, 0, "rw", None))
    return rows


def locate_runtime(adapter, read=None):
    """Find and verify ``_PyRuntime`` through the debugger.

    The debugger's symbol comes first unless the adapter says symbol
    lookups are slow (gdb with DWARF loaded indexes it first), in which case
    the ELF files (their sections and their own symbol tables) do.  Returns
    ``(address, PythonInfo, how it was found)``; raises NoRuntime (a
    CommandError) naming the process or the version refused.
    """
    read = read or adapter.read
    mappings = _mappings(adapter)
    name = target_name(adapter)
    cheap = getattr(adapter, "cheap_symbol_lookup", True)
    symbol = ask(adapter.lookup_symbol, RUNTIME_SYMBOL) if cheap else 0
    try:
        if cheap:
            addr, info, how, error = target.locate_runtime(read, mappings, symbol or 0,
                                                           target_name=name)
        else:
            addr, info, how, error = target.locate_runtime(
                read, mappings, 0, ("symbol", "section"), target_name=name)
            if addr is None and isinstance(error, errors.NotPython):
                symbol = ask(adapter.lookup_symbol, RUNTIME_SYMBOL)
                addr, info, how, error = target.locate_runtime(
                    read, mappings, symbol or 0, ("symbol", "scan"), target_name=name)
    except errors.PyframesError as e:  # PermissionDenied, NoSuchProcess
        raise CommandError(str(e))
    if addr is not None:
        if addr == symbol:
            # The debugger's symbol: its file may be one the library could
            # not open (a remote target), so its Py_Version is asked here.
            said = _debugger_version(read, adapter)
            if said is not None and info is not None and said != info.hexversion:
                raise NoRuntime(errors.version_disagrees(said, info.hexversion))
        return addr, info, how
    if isinstance(error, errors.NotPython):
        # No runtime and no version in the files the library could read: a
        # version the debugger alone can see (a remote target's files)?
        said = _debugger_version(read, adapter)
        if said is not None and not 11 <= (said >> 16) & 0xFF <= 15:
            raise NoRuntime(errors.unsupported_version(said))
    if isinstance(error, (errors.NotPython, errors.UnsupportedVersion)):
        raise NoRuntime(str(error))
    raise CommandError(str(error))


def locate_asyncio(adapter):
    """Where the asyncio debug offsets of CPython 3.14+ are, or None: the
    .AsyncioDebug section of a loaded file (the _asyncio module on 3.14,
    python or libpython on 3.15), else the symbol _AsyncioDebug.  The
    library validates the table when it is given."""
    for path, start in ask(adapter.objfiles) or []:
        base = os.path.basename(path or "")
        if not path or start is None or ("_asyncio" not in base and "python" not in base):
            continue
        try:
            addr = target.elf_runtime_address(path, start, section="asyncio")
        except errors.PyframesError:
            addr = None
        if addr:
            return addr
    if getattr(adapter, "cheap_symbol_lookup", True):
        return ask(adapter.lookup_symbol, ASYNCIO_SYMBOL) or None
    return None
