"""Finding and loading libpyframes.

:func:`load` finds the library (see :func:`candidate_paths` for the order),
checks its major version and returns the ``ctypes.CDLL`` with every
prototype of :mod:`._abi` applied.
"""

import ctypes
import glob
import os
import re
import threading

from ._abi import _PROTOTYPES, PYF_VERSION_MAJOR, PYF_VERSION_MINOR
from .errors import LibraryForeign, LibraryMismatch, LibraryNotFound

__all__ = ["LIBRARY_ENV", "candidate_paths", "load", "library_path", "library_version"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
LIBRARY_ENV = "PYFRAMES_LIBRARY"


def _up(path, levels):
    for _ in range(levels):
        path = os.path.dirname(path)
    return path


def _by_mtime_newest_first(paths):
    def key(path):
        try:
            return -os.stat(path).st_mtime
        except OSError:
            return 0.0
    return sorted(paths, key=key)


def _soname_first(paths):
    """libpyframes.so.<major>, then libpyframes.so, then the others."""
    def rank(path):
        base = os.path.basename(path)
        if base == "libpyframes.so.%d" % PYF_VERSION_MAJOR:
            return 0
        if base == "libpyframes.so":
            return 1
        return 2
    return sorted(paths, key=lambda p: (rank(p), p))


def _source_tree():
    """The source tree the package runs from, or None (installed)."""
    repo = _up(_PACKAGE_DIR, 3)
    if os.path.exists(os.path.join(repo, "native", "include", "pyframes.h")):
        return repo
    return None


def _search_patterns():
    """The fixed paths and glob patterns searched, in order."""
    repo = _up(_PACKAGE_DIR, 3)
    prefix = _up(_PACKAGE_DIR, 4)
    return [
        (os.path.join(repo, "build", "native", "libpyframes.so"), None),
        (os.path.join(repo, "build", "*", "native", "libpyframes.so"),
         _by_mtime_newest_first),
        (os.path.join(prefix, "lib", "libpyframes.so*"), _soname_first),
        (os.path.join(prefix, "lib64", "libpyframes.so*"), _soname_first),
        (os.path.join(prefix, "lib", "*", "libpyframes.so*"), _soname_first),
    ]


def _search():
    """[(pattern, [existing paths, in order])] for every search pattern."""
    result = []
    for pattern, order in _search_patterns():
        if order is None:
            found = [pattern] if os.path.exists(pattern) else []
        else:
            found = order(glob.glob(pattern))
        result.append((pattern, found))
    return result


def candidate_paths():
    """Existing library files :func:`load` would try, in order (the
    environment variable aside).

    1. the build tree: <repo>/build/native/libpyframes.so, then
       <repo>/build/*/native/libpyframes.so, newest first (<repo> is three
       levels above the package directory);
    2. the install prefix (the package lives in
       <prefix>/share/pyframes/python/pyframes): <prefix>/lib/libpyframes.so*,
       <prefix>/lib64/libpyframes.so*, <prefix>/lib/*/libpyframes.so*.
    """
    seen = set()
    unique = []
    for _, found in _search():
        for path in found:
            real = os.path.realpath(path)
            if real not in seen:
                seen.add(real)
                unique.append(path)
    return unique


def _configure(lib):
    for name, (restype, argtypes) in _PROTOTYPES.items():
        func = getattr(lib, name)  # AttributeError for a missing symbol
        func.restype = restype
        func.argtypes = argtypes
    return lib


_SANITIZERS = (b"libasan.so", b"libtsan.so", b"libhwasan.so")


def _sanitizer_runtime_missing(path):
    """The sanitizer a library needs but this process has not preloaded.

    A library built with AddressSanitizer (or TSan) aborts the whole
    process on dlopen unless its runtime was loaded first; check before.
    """
    try:
        with open(path, "rb") as f:
            data = f.read(64 << 20)
    except OSError:
        return None
    needed = [name for name in _SANITIZERS if name in data]
    if not needed:
        return None
    try:
        with open("/proc/self/maps", "rb") as f:
            maps = f.read()
    except OSError:
        maps = b""
    for name in needed:
        if name not in maps:
            return name.decode()
    return None


def _c_library_version():
    try:
        return os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        return None


def _built_elsewhere(loader_text, path):
    """Why the dynamic linker's refusal of the library at path (its dlopen
    error, loader_text) means that it was built for another system (a newer
    C library, a library this one lacks, another word size), or None when
    it does not (a missing file, a file that is no library)."""
    m = re.search(r"([^\s:]+): version `([^']+)' not found \(required by", loader_text)
    if m:
        needed, by = m.group(2), os.path.basename(m.group(1))
        if needed.startswith("GLIBC_"):
            here = _c_library_version()
            return "its C library is newer: it needs %s%s" % (
                needed, ", this system has %s" % here if here else "")
        return "it needs %s of %s, which this system's %s lacks" % (needed, by, by)
    m = re.match(r"(?:[^:]*: )?([^\s:/]+): cannot open shared object file", loader_text)
    if m and m.group(1) != os.path.basename(path):
        return "it needs %s, which this system lacks" % m.group(1)
    if "wrong ELF class" in loader_text:
        return "it is of another word size: %s" % loader_text.rsplit(": ", 1)[-1]
    return None


def _try_load(path):
    """(lib, None) or (None, (reason, is_mismatch, foreign)); foreign says
    why the library was built for another system, or is None."""
    if os.path.sep in path:
        runtime = _sanitizer_runtime_missing(path)
        if runtime:
            return None, ("built with a sanitizer; needs %s in LD_PRELOAD"
                          % runtime, True, None)
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        text = str(exc) or "cannot be loaded"
        return None, (text, False, _built_elsewhere(text, path))
    try:
        version = lib.pyf_library_version
        version.restype = ctypes.c_int
        version.argtypes = []
        number = version()
    except AttributeError:
        return None, ("not a libpyframes (no pyf_library_version)", True, None)
    major, minor = number // 10000, number // 100 % 100
    # Until 1.0 a minor release may change signatures (pyframes.h's ABI
    # policy): a 0.x binding takes only a library of its own minor.
    if major != PYF_VERSION_MAJOR or (major == 0 and minor != PYF_VERSION_MINOR):
        need = ("%d.%d.x" % (PYF_VERSION_MAJOR, PYF_VERSION_MINOR) if PYF_VERSION_MAJOR == 0
                else "%d.x" % PYF_VERSION_MAJOR)
        return None, ("version %d.%d.%d, need %s" % (major, minor, number % 100, need), True, None)
    try:
        _configure(lib)
    except AttributeError as exc:
        return None, ("missing symbol: %s" % exc, True, None)
    return lib, None


_lock = threading.Lock()
_lib = None
_lib_path = None


def _to_try(candidates, env, tried):
    """The paths load tries, in order: the candidates, then (without
    $PYFRAMES_LIBRARY) the dynamic linker's name for the library, found
    only when every candidate failed.  What is passed over goes to tried."""
    for path in candidates:
        if env and not os.path.exists(path):
            tried.append((path, "missing, from $" + LIBRARY_ENV))
            continue
        yield path
    if not env:
        import ctypes.util
        name = ctypes.util.find_library("pyframes")
        if name:
            yield name
        else:
            tried.append(("libpyframes.so", "not in the linker search path"))


def load():
    """The configured CDLL; raises LibraryNotFound, LibraryMismatch, or
    LibraryForeign when a library found was built for another system (and
    none other loaded).

    $PYFRAMES_LIBRARY, when set, is the only path tried.  Otherwise the
    :func:`candidate_paths`, then the dynamic linker's search path.
    """
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        mismatch = False
        foreign = None  # (path, why): the first library built for another system
        env = os.environ.get(LIBRARY_ENV)
        if env:
            candidates = [env]
        else:
            candidates = []
            seen = set()
            for pattern, found in _search():
                if not found:
                    tried.append((pattern, "missing"))
                for path in found:
                    real = os.path.realpath(path)
                    if real not in seen:
                        seen.add(real)
                        candidates.append(path)
        for path in _to_try(candidates, env, tried):
            lib, failure = _try_load(path)
            if lib is not None:
                _lib, _lib_path = lib, path
                return lib
            tried.append((path, failure[0]))
            mismatch = mismatch or failure[1]
            if failure[2] and not foreign:
                foreign = (path, failure[2])
        if foreign:
            raise LibraryForeign(foreign[0], foreign[1], _source_tree(), tried)
        if mismatch:
            raise LibraryMismatch("", tried)
        raise LibraryNotFound("", tried)


def library_path():
    """Path of the loaded library (loads it if needed)."""
    load()
    return _lib_path


def library_version():
    """(major, minor, patch) of the loaded library."""
    number = load().pyf_library_version()
    return (number // 10000, number // 100 % 100, number % 100)
