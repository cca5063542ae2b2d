"""Finding _PyRuntime through a debugger.

The search itself is the library's (pyf_runtime_locate, the same one the
PID reader runs over /proc/PID/maps): the symbol _PyRuntime, the .PyRuntime
section of the mapped python files, then the runtime cookie in writable
memory, each candidate probed.  This module only gathers what the debugger
knows (the symbol, its objfiles and their load addresses, the writable
ranges) and turns the outcome into a CommandError.  A refused version is
worded by the library ("unsupported CPython 3.11.2 (pyframes reads CPython
3.13, 3.14 and 3.15)", from the table or from the files' Py_Version); only
a version the debugger alone can see (the symbol Py_Version of a file the
library cannot open) is worded here, the same way.
"""

import os
import struct

from . import errors, target
from .adapter import ask
from .errors import CommandError

__all__ = ["RUNTIME_SYMBOL", "locate_asyncio", "locate_runtime", "unsupported_message"]

RUNTIME_SYMBOL = "_PyRuntime"
ASYNCIO_SYMBOL = "_AsyncioDebug"
VERSION_SYMBOL = "Py_Version"


def _read_word(read, addr):
    try:
        data = read(addr, 8)
    except Exception:
        return None
    if len(data) != 8:
        return None
    return struct.unpack("<Q", bytes(data))[0]


def _plausible_hexversion(v):
    return v is not None and 0 < v < (1 << 32) and ((v >> 24) & 0xFF) in (2, 3)


def unsupported_message(read, runtime_addr, adapter):
    """'unsupported CPython X.Y.Z (...)' when the library's probe of the
    runtime's table names a version it refuses (in its words) or, for a
    CPython too old to have a table, the Py_Version symbol holds one; else
    None."""
    if runtime_addr:
        try:
            target.probe_runtime(read, runtime_addr)
        except errors.UnsupportedVersion as e:
            if e.python is not None:
                return str(e)
        except errors.PyframesError:
            pass
    addr = ask(adapter.lookup_symbol, VERSION_SYMBOL) if adapter is not None else None
    if addr:
        v = _read_word(read, addr)
        if v is not None and _plausible_hexversion(v & 0xFFFFFFFF):
            return errors.unsupported_version(v & 0xFFFFFFFF)
    return None


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

    The symbol comes first unless the adapter says symbol lookups are slow
    (gdb with DWARF loaded indexes it first), in which case the ELF sections
    do.  Returns ``(address, PythonInfo, how it was found)``; raises
    CommandError.
    """
    read = read or adapter.read
    mappings = _mappings(adapter)
    cheap = getattr(adapter, "cheap_symbol_lookup", True)
    symbol = ask(adapter.lookup_symbol, RUNTIME_SYMBOL) if cheap else 0
    try:
        if cheap:
            addr, info, how, error = target.locate_runtime(read, mappings, symbol or 0)
        else:
            addr, info, how, error = target.locate_runtime(read, mappings, 0, ("section",))
            if addr is None and isinstance(error, errors.NotPython):
                symbol = ask(adapter.lookup_symbol, RUNTIME_SYMBOL)
                addr, info, how, error = target.locate_runtime(
                    read, mappings, symbol or 0, ("symbol", "scan"))
    except errors.PyframesError as e:  # PermissionDenied, NoSuchProcess
        raise CommandError(str(e))
    if addr is not None:
        return addr, info, how
    if isinstance(error, errors.UnsupportedVersion):
        raise CommandError(str(error))  # the library names the version
    if isinstance(error, errors.NotPython):
        # No table anywhere: a CPython too old to publish one?
        message = unsupported_message(read, 0, adapter)
        raise CommandError(message or errors.NOT_PYTHON)
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
