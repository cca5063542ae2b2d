"""Finding _PyRuntime through a debugger.

Three ways, each verified by the library's probe: the exported symbol
``_PyRuntime`` (no DWARF needed), the ``.PyRuntime`` ELF section of the
loaded objects (python/libpython first), and a scan of writable memory for
the runtime cookie, within one budget.  The PID reader finds the runtime
by itself, in the library, from /proc/PID/maps.
"""

import os
import struct

from . import errors, target
from .adapter import ask
from .errors import CommandError

__all__ = ["RUNTIME_SYMBOL", "locate_runtime", "unsupported_message"]

RUNTIME_SYMBOL = "_PyRuntime"
VERSION_SYMBOL = "Py_Version"
_PYTHON_NAME_HINTS = ("python", "libpython")


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


def unsupported_message(read, runtime_addr, adapter, error=None):
    """'unsupported CPython X.Y.Z' when the version can be read, else None."""
    version = None
    if runtime_addr:
        v = _read_word(read, runtime_addr + 8)
        try:
            cookie = bytes(read(runtime_addr, 8))
        except Exception:
            cookie = b""
        if cookie == b"xdebugpy" and _plausible_hexversion(v):
            version = v
    if version is None and adapter is not None:
        addr = ask(adapter.lookup_symbol, VERSION_SYMBOL)
        if addr:
            v = _read_word(read, addr)
            if v is not None:
                v &= 0xFFFFFFFF
                if _plausible_hexversion(v):
                    version = v
    if version is None:
        return None
    return errors.unsupported_version(version)


def _python_first(paths_and_more):
    def key(item):
        base = os.path.basename(item[0] or "").lower()
        return 0 if any(h in base for h in _PYTHON_NAME_HINTS) else 1
    return sorted(paths_and_more, key=key)


_SCAN_LIMIT = 512 << 20  # bytes of writable memory scanned for the cookie at most


def locate_runtime(adapter, read=None):
    """Find and verify ``_PyRuntime`` through the debugger.

    Three ways, each verified with probe_runtime: the exported symbol
    ``_PyRuntime`` (no DWARF needed); the ``.PyRuntime`` ELF section of the
    loaded objfiles (python/libpython first); a scan of the writable
    file-backed ranges for the ``xdebugpy`` cookie.  The symbol comes first
    unless the adapter says symbol lookups are slow (gdb with DWARF loaded
    indexes it first), in which case the ELF sections do.
    Returns ``(address, PythonInfo, how it was found)``; raises CommandError.
    """
    read = read or adapter.read
    probe_errors = []
    seen = set()

    def probe(addr, how):
        if addr in seen:
            return None
        seen.add(addr)
        try:
            return target.probe_runtime(read, addr)
        except errors.UnsupportedVersion as e:
            raise CommandError(unsupported_message(read, addr, adapter) or str(e))
        except errors.PermissionDenied as e:
            raise CommandError(str(e))
        except errors.PyframesError as e:
            probe_errors.append((how, addr, e))
            return None

    def by_symbol():
        addr = ask(adapter.lookup_symbol, RUNTIME_SYMBOL)
        if not addr:
            return None
        how = "symbol _PyRuntime"
        info = probe(addr, how)
        if info is not None:
            return addr, info, how
        # The symbol exists but holds no debug offsets: an older CPython?
        message = unsupported_message(read, 0, adapter)
        if message:
            raise CommandError(message)
        return None

    def by_section():
        for path, map_start in _python_first(ask(adapter.objfiles) or []):
            if not path or map_start is None:
                continue
            try:
                found = target.elf_runtime_address(path, map_start)
            except Exception:
                continue
            if found:
                how = ".PyRuntime section of %s" % path
                info = probe(found, how)
                if info is not None:
                    return found, info, how
        return None

    def by_scan():
        budget = _SCAN_LIMIT
        for start, end in ask(adapter.writable_ranges) or []:
            if end <= start or budget <= 0:
                continue
            end = min(end, start + budget)
            budget -= end - start
            try:
                found = target.find_runtime_in_range(read, start, end)
            except errors.PermissionDenied as e:
                raise CommandError(str(e))
            except Exception:
                continue
            if found:
                how = "runtime cookie at 0x%x" % found
                info = probe(found, how)
                if info is not None:
                    return found, info, how
        return None

    if getattr(adapter, "cheap_symbol_lookup", True):
        ways = (by_symbol, by_section, by_scan)
    else:
        ways = (by_section, by_symbol, by_scan)
    for way in ways:
        result = way()
        if result is not None:
            return result

    if probe_errors:
        how, where, err = probe_errors[0]
        message = unsupported_message(read, where, adapter)
        if message:
            raise CommandError(message)
        raise CommandError(errors.unusable_runtime(RUNTIME_SYMBOL, where, how, err))
    message = unsupported_message(read, 0, adapter)
    if message:
        raise CommandError(message)
    raise CommandError(errors.NOT_PYTHON)
