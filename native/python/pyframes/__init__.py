"""pyframes: the Python stacks of a CPython 3.8-3.15 process.

    import pyframes
    with pyframes.attach(1234) as target:
        snap = target.snapshot()
        for line in pyframes.render.format_text(snap):
            print(line)

A debugger front end opens a target over its own memory reader instead:

    target = pyframes.open_reader(read, runtime_addr)

where ``read(addr, size)`` returns exactly ``size`` bytes or raises.

The package by concern: target (Target and the open functions), _convert
(the library's snapshots made into the model), model (the data), render and
taskview (every line a user reads), errors (exceptions and every failure's
wording), _abi / _loader / _readers (the C library: its ctypes mirror,
finding it, Python readers), sampling and flamegraph (profiles), and the
command layer: stack_command (the one body of the stack command), options,
adapter, locate, session, plugin (what the gdb and lldb plugins share),
mixed (Python frames in a native backtrace).  cli is `python3 -m pyframes`.
"""

from . import errors, model, render, sampling
from .errors import (BadOffsets, CorruptTarget, LibraryForeign, LibraryMismatch, LibraryNotFound,  # noqa: F401
                     NoSuchProcess, NoSuchThread, NotPython, PermissionDenied,
                     PyframesError, ReadFault, UnsupportedVersion, error_from_code)
from .model import Frame, Interpreter, PythonInfo, Snapshot, Thread
from .target import (Target, attach, elf_runtime_address, find_runtime_in_range,  # noqa: F401
                     library_version, open_reader, probe_runtime)

__version__ = "0.6.0"

__all__ = [
    "__version__", "attach", "open_reader", "probe_runtime", "find_runtime_in_range",
    "elf_runtime_address", "library_version", "Target",
    "PythonInfo", "Frame", "Thread", "Interpreter", "Snapshot",
    "PyframesError", "ReadFault", "PermissionDenied", "NoSuchProcess", "NotPython",
    "UnsupportedVersion", "BadOffsets", "CorruptTarget", "NoSuchThread",
    "LibraryNotFound", "LibraryMismatch", "LibraryForeign", "error_from_code",
    "errors", "model", "render",
]
