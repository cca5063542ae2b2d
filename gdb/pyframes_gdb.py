"""gdb plugin of pyframes: the ``py-bt-fast`` and ``py-sample`` commands.

Load it with ``source /path/to/pyframes_gdb.py`` (from the source tree or
from <prefix>/share/pyframes/gdb/).  Only the gdb adapter lives here; the
command itself is pyframes.session, shared with the lldb plugin.
"""

import os
import re
import sys
import threading

import gdb


# The package sits beside the plugin: native/python in the source tree,
# <prefix>/share/pyframes/python when installed.
_here = os.path.dirname(os.path.abspath(globals().get("__file__") or "."))
for _path in (os.path.join(_here, os.pardir, "native", "python"),
              os.path.join(_here, os.pardir, "python")):
    _path = os.path.normpath(_path)
    if os.path.isfile(os.path.join(_path, "pyframes", "__init__.py")):
        if _path not in sys.path:
            sys.path.insert(0, _path)
        break

try:
    from pyframes import adapter as _pyf_adapter, errors as _pyf_errors
    from pyframes import options as _pyf_options, session as _pyf_session
    from pyframes import report as _pyf_report, sample_command as _pyf_sample
    _PYF_IMPORT_ERROR = None
except Exception as _e:  # keep gdb usable; the command reports the problem
    _pyf_adapter = _pyf_errors = _pyf_options = _pyf_session = None
    _pyf_report = _pyf_sample = None
    _PYF_IMPORT_ERROR = "pyframes: cannot import the pyframes package: %s: %s" % (
        type(_e).__name__, _e)

_PYF_HEX = re.compile(r"0x[0-9a-fA-F]+")
_PYF_PERMS = re.compile(r"^[r-][w-][x-][ps]$")


class PyframesGdbAdapter(object if _pyf_session is None else _pyf_adapter.DebuggerAdapter):
    """pyframes.adapter.DebuggerAdapter over gdb's selected inferior."""

    debugger_name = "gdb"
    # With DWARF loaded, the first symbol lookup waits for gdb to index it
    # (about a second for python3.X-dbg): try the ELF sections first.
    cheap_symbol_lookup = False

    def __init__(self):
        self.inferior = gdb.selected_inferior()
        self._threads = None

    # ---- process ---------------------------------------------------------

    def _connection_type(self):
        conn = getattr(self.inferior, "connection", None)
        if conn is not None:
            return getattr(conn, "type", None)
        return None

    def pid(self):
        pid = self.inferior.pid
        return pid if pid > 0 else None

    def is_live(self):
        if self.pid() is None:
            return False
        kind = self._connection_type()
        if kind is not None:
            return kind != "core"
        try:
            target = gdb.execute("info target", to_string=True)
        except gdb.error:
            return False
        target = target.lower()
        return "core file" not in target and "core dump" not in target

    def executable(self):
        try:
            name = self.inferior.progspace.filename
        except Exception:
            name = None
        return name or None

    def identity(self):
        return ("gdb", self.inferior.num, self.pid(), self._connection_type(),
                self.executable())

    # ---- memory ----------------------------------------------------------

    def read(self, addr, size):
        try:
            return self.inferior.read_memory(addr, size).tobytes()
        except gdb.MemoryError as e:
            raise OSError(str(e))

    def write(self, addr, data):
        try:
            self.inferior.write_memory(addr, data)
        except gdb.MemoryError as e:
            raise OSError(str(e))

    def resume_for(self, seconds):
        """continue; an interrupt posted to gdb's event loop after
        ``seconds`` stops it again."""
        if not self.is_live():
            return False

        def stop():
            try:
                gdb.execute("interrupt", to_string=True)
            except gdb.error:
                pass
        timer = threading.Timer(seconds, lambda: gdb.post_event(stop))
        timer.start()
        try:
            gdb.execute("continue", to_string=True)
        except gdb.error:
            return False
        finally:
            timer.cancel()
        return self.pid() is not None and any(
            t.is_stopped() for t in self.inferior.threads())

    def lookup_symbol(self, name):
        try:
            value = gdb.parse_and_eval("(unsigned long)&'%s'" % name)
            return int(value) or None
        except gdb.error:
            pass
        try:
            text = gdb.execute("info address %s" % name, to_string=True)
        except gdb.error:
            return None
        m = _PYF_HEX.search(text)
        return int(m.group(0), 16) if m else None

    def _mappings(self):
        """Rows (start, end, offset, perms or None, path) of `info proc mappings`."""
        try:
            text = gdb.execute("info proc mappings", to_string=True)
        except gdb.error:
            return []
        rows = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) < 4 or not all(p.startswith("0x") for p in parts[:4]):
                continue
            try:
                start, end, _size, offset = (int(p, 16) for p in parts[:4])
            except ValueError:
                continue
            rest = parts[4:]
            perms = None
            if rest and _PYF_PERMS.match(rest[0]):
                perms = rest.pop(0)
            rows.append((start, end, offset, perms, " ".join(rest)))
        return rows

    def writable_ranges(self):
        """Writable file-backed ranges (where _PyRuntime lives)."""
        files = [(lo, hi, perms) for lo, hi, _off, perms, path in self._mappings()
                 if path.startswith("/")]
        if self.is_live():
            return [(lo, hi) for lo, hi, perms in files if perms is None or "w" in perms]
        # A core file: its writable load segments, within file mappings.
        try:
            text = gdb.execute("maintenance info sections", to_string=True)
        except gdb.error:
            text = ""
        segments = []
        in_core = False
        for line in text.splitlines():
            if line.startswith("Core file"):
                in_core = True
                continue
            if not in_core or " load" not in line or "READONLY" in line:
                continue
            m = re.search(r"(0x[0-9a-fA-F]+)->(0x[0-9a-fA-F]+)", line)
            if m:
                segments.append((int(m.group(1), 16), int(m.group(2), 16)))
        if not files:
            return segments
        ranges = []
        for lo, hi in segments:
            for flo, fhi, _perms in files:
                a, b = max(lo, flo), min(hi, fhi)
                if a < b:
                    ranges.append((a, b))
        return ranges

    def objfiles(self):
        starts = {}
        for start, _end, offset, _perms, path in self._mappings():
            if path and offset == 0 and (path not in starts or start < starts[path]):
                starts[path] = start
        result = []
        for objfile in gdb.objfiles():
            path = objfile.filename
            if path and path in starts:
                result.append((path, starts.pop(path)))
        # Mappings gdb did not load as objfiles (e.g. opened without symbols).
        for path, start in starts.items():
            if path.startswith("/"):
                result.append((path, start))
        return result

    # ---- threads ---------------------------------------------------------

    def _thread_list(self):
        if self._threads is None:
            try:
                self._threads = list(self.inferior.threads())
            except gdb.error:
                self._threads = []
        return self._threads

    def selected_native_tid(self):
        thread = gdb.selected_thread()
        if thread is None:
            return None
        pid, lwp, _tid = thread.ptid
        return lwp or pid or None

    def debugger_thread_label(self, native_tid):
        for thread in self._thread_list():
            pid, lwp, _tid = thread.ptid
            if (lwp or pid) == native_tid:
                return "thread %d" % thread.num
        return None


if _pyf_session is not None:
    _PYF_DESCRIPTION = _pyf_options.describe("py-bt-fast", "gdb")
else:
    _PYF_DESCRIPTION = "Print the Python stack of the selected thread (pyframes)."


class PyBtFastCommand(gdb.Command):
    __doc__ = _PYF_DESCRIPTION

    def __init__(self, session):
        # No completer class: gdb then calls complete() for the options.
        gdb.Command.__init__(self, "py-bt-fast", gdb.COMMAND_STACK)
        self.session = session

    def complete(self, text, word):
        if _pyf_session is None:
            return []
        token, words = _pyf_options.completions(text)
        # gdb replaces only `word` (it breaks words at '-'): return suffixes.
        cut = len(token) - len(word or "")
        return [w[cut:] for w in words]

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        if self.session is None:
            raise gdb.GdbError(_PYF_IMPORT_ERROR)
        gdb.write(_pyframes_run("py-bt-fast",
                                lambda: self.session.run(argument, PyframesGdbAdapter())))


def _pyframes_run(name, command):
    """command() -> the text to print; every failure becomes one gdb error,
    never a Python traceback."""
    try:
        return command()
    except _pyf_errors.CommandError as e:
        raise gdb.GdbError(str(e))
    except (gdb.GdbError, KeyboardInterrupt):
        raise
    except Exception as e:
        raise gdb.GdbError("%s: %s: %s" % (name, type(e).__name__, e))


class _GdbStream(object):
    write = staticmethod(gdb.write)
    flush = staticmethod(gdb.flush)


class PySampleCommand(gdb.Command):
    __doc__ = (_pyf_sample.describe("py-sample") if _pyf_sample is not None else
               "Sample the Python stacks of the inferior (pyframes).")

    def __init__(self, session):
        gdb.Command.__init__(self, "py-sample", gdb.COMMAND_STACK)
        self.command = _pyf_sample.SampleCommand(session) if session is not None else None

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        if self.command is None:
            raise gdb.GdbError(_PYF_IMPORT_ERROR)
        progress = _pyf_report.count_line(_GdbStream, "py-sample") if from_tty else None
        try:
            text = _pyframes_run("py-sample", lambda: self.command.run(
                argument, PyframesGdbAdapter(), progress))
        finally:
            if progress is not None:
                progress.done()
        gdb.write(text)


def _pyframes_connect(session):
    """Flush caches when the inferior runs or changes; returns disconnectors."""
    if session is None:
        return []

    def flush(_event=None):
        session.flush()

    def reset(_event=None):
        session.reset()

    handlers = []
    for name, fn in (("cont", flush), ("stop", flush), ("memory_changed", flush),
                     ("exited", reset), ("new_objfile", reset),
                     ("clear_objfiles", reset), ("inferior_deleted", reset)):
        registry = getattr(gdb.events, name, None)
        if registry is None:
            continue
        registry.connect(fn)
        handlers.append((registry, fn))
    return handlers


def _pyframes_install():
    state = globals().get("_pyframes_gdb_state")
    if state:  # sourced again: drop the previous instance's hooks and targets
        for registry, fn in state.get("handlers", ()):
            try:
                registry.disconnect(fn)
            except Exception:
                pass
        if state.get("session") is not None:
            state["session"].close()
    session = (_pyf_session.Session("py-bt-fast", _pyf_options.short_description("gdb"))
               if _pyf_session else None)
    PyBtFastCommand(session)
    PySampleCommand(session)
    return {"session": session, "handlers": _pyframes_connect(session)}


_pyframes_gdb_state = _pyframes_install()
