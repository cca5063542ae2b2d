"""gdb plugin of pyframes: the ``py-bt-fast`` and ``py-sample`` commands,
and frame navigation (``py-up``, ``py-down``, ``py-frame``, ``py-list``,
``py-locals``, ``py-print``, also named ``pyf-up`` ...; CPython's gdb
helper's commands of the same names, when it is loaded, are kept as
``cpython-py-up`` ...).

Load it with ``source /path/to/pyframes_gdb.py`` (from the source tree or
from <prefix>/share/pyframes/gdb/).  Only the gdb adapter and gdb's side
of the commands live here; the commands themselves are pyframes.session and
pyframes.stack_command (reached through pyframes.plugin), shared with the
lldb plugin.
"""

import os
import re
import sys
import threading

import gdb


# The package beside the plugin: ../native/python in the source tree,
# <prefix>/share/pyframes/python when installed; else whatever imports.
_here = os.path.dirname(os.path.abspath(globals().get("__file__") or "."))
_dirs = [os.path.normpath(os.path.join(_here, os.pardir, d)) for d in ("native/python", "python")]
sys.path[:0] = [d for d in _dirs if os.path.isfile(os.path.join(d, "pyframes", "__init__.py"))
                and d not in sys.path][:1]
try:
    from pyframes import plugin as _pyf
    _PYF_IMPORT_ERROR = None
except Exception as _e:  # keep gdb usable; the commands report the problem
    _pyf = None
    _PYF_IMPORT_ERROR = "pyframes: cannot import the pyframes package: %s: %s" % (
        type(_e).__name__, _e)

_PYF_HEX = re.compile(r"0x[0-9a-fA-F]+")
_PYF_PERMS = re.compile(r"^[r-][w-][x-][ps]$")


class PyframesGdbAdapter(object if _pyf is None else _pyf.adapter.DebuggerAdapter):
    """pyframes.adapter.DebuggerAdapter over gdb's selected inferior."""

    debugger_name = "gdb"
    # With DWARF loaded, the first symbol lookup waits for gdb to index it
    # (about a second for python3.X-dbg): try the ELF sections first.
    cheap_symbol_lookup = False
    # threads named as gdb does with several inferiors ("thread 2.3"):
    # py-bt-fast --all-inferiors
    qualified_labels = False

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

    def is_live_local(self):
        # A remote target (gdbserver) is another machine's process as far
        # as gdb can tell, even over loopback: its reads go through gdb.
        if self._connection_type() in ("remote", "extended-remote"):
            return False
        return _pyf.adapter.DebuggerAdapter.is_live_local(self)

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

    def resume_refused(self):
        """gdbserver stops a running process by signalling its process
        group (SIGINT to -pgid): a process attached over gdbserver that
        leads no process group can be resumed but never stopped again, and
        gdb would wait for it for good.  The reason, when that is so."""
        if self._connection_type() not in ("remote", "extended-remote"):
            return None
        try:
            text = gdb.execute("info proc stat", to_string=True)
        except gdb.error:
            return None
        m = re.search(r"^Process group: (\d+)", text, re.M)
        pid = self.pid()
        if m and pid and int(m.group(1)) != pid:
            return _pyf.errors.cannot_stop_again(pid, m.group(1))
        return None

    def resume_while(self, work):
        """continue while work runs in a thread; when it returns, an
        interrupt posted to gdb's event loop stops the inferior, posted
        again every 20 ms until the continue has returned (one that runs
        before the inferior is running, as over a remote connection, is
        lost; one still queued afterwards does nothing).  gdb's stop report
        (the signal, the location) goes to /dev/null through gdb's logging
        redirect unless the user logs already."""
        if not self.is_live():
            return False, None
        halt = threading.Event()

        def stop():
            if halt.is_set():
                return
            try:
                gdb.execute("interrupt", to_string=True)
            except gdb.error:
                pass
        thread, box = _pyf.adapter.resume_worker(
            work, halt, lambda: gdb.post_event(stop), halt.is_set, 0.02)
        selected = gdb.selected_thread()
        quiet = _QuietStops()
        ran = True
        try:
            thread.start()
            gdb.execute("continue", to_string=True)
        except gdb.error:
            ran = False
        finally:
            halt.set()
            thread.join()
            quiet.restore()
        result = _pyf.adapter.resume_outcome(box)
        ran = ran and self.pid() is not None and any(
            t.is_stopped() for t in self.inferior.threads())
        if ran and selected is not None and selected.is_valid():
            try:
                selected.switch()
            except gdb.error:
                pass
        return ran, result

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

    def os_threads(self):
        return [lwp or pid for pid, lwp, _tid in (t.ptid for t in self._thread_list())]

    def debugger_thread_label(self, native_tid):
        for thread in self._thread_list():
            pid, lwp, _tid = thread.ptid
            if (lwp or pid) == native_tid:
                if self.qualified_labels:
                    return "thread %d.%d" % (self.inferior.num, thread.num)
                return "thread %d" % thread.num
        return None

    def _thread_of(self, native_tid):
        thread = None
        for t in self._thread_list():
            pid, lwp, _tid = t.ptid
            if (lwp or pid) == native_tid:
                thread = t
        return thread

    def select_native_frame(self, native_tid, native):
        """Select that thread and its frame ``native`` (a NativeFrame of
        native_frames); gdb's name of it (``#7 _PyEval_EvalFrameDefault``)."""
        thread = self._thread_of(native_tid)
        if thread is None:
            raise RuntimeError("gdb has no thread with LWP %d" % native_tid)
        thread.switch()
        frame = gdb.newest_frame()
        while frame is not None and frame.level() < native.level:
            frame = frame.older()
        if frame is None or frame.level() != native.level or (
                native.pc is not None and frame.pc() != native.pc):
            raise RuntimeError("gdb's frame #%d is not the one placed" % native.level)
        frame.select()
        return "#%d %s" % (native.level, frame.name() or "??")

    def thread_name(self, native_tid):
        """gdb's name of the thread, as ``info threads`` shows it (a live
        process's comm; what the target or the core gave gdb)."""
        thread = self._thread_of(native_tid)
        return thread.name if thread is not None and thread.is_valid() else None

    def _per_thread(self, native_tids, read):
        """{tid: read(its newest frame)} of each thread of native_tids gdb
        has, each selected in turn (the user's thread and frame selected
        again once, at the end); a thread read gives nothing for is left
        out."""
        selected = _pyframes_selection()
        out = {}
        try:
            for tid in native_tids:
                thread = self._thread_of(tid)
                if thread is None or not thread.is_valid():
                    continue
                try:
                    thread.switch()
                    got = read(gdb.newest_frame())
                except gdb.error:
                    continue
                if got:
                    out[tid] = got
        finally:
            _pyframes_select(*selected)
        return out

    def registers(self, native_tids, names):
        """The ``names`` registers of each thread's innermost frame that
        gdb has, as unsigned values."""
        def read(f):
            values = {}
            for name in names:
                try:
                    values[name] = int(f.read_register(name)) & 0xFFFFFFFFFFFFFFFF
                except (gdb.error, ValueError):
                    break  # a register this machine does not have: the rest
            return values
        return self._per_thread(native_tids, read)

    def core_file(self):
        """The path of the core file gdb reads (its signal: pyframes.cores),
        or None."""
        if self.is_live():
            return None
        try:
            core = gdb.selected_inferior().corefile  # gdb 16+
        except (AttributeError, gdb.error):
            return None
        return core.filename if core is not None else None

    def innermost_functions(self, native_tids, count):
        """Each thread's ``count`` innermost frames as (name, module)."""
        def read(f):
            names = []
            try:
                while f is not None and len(names) < count:
                    names.append((f.name(), _pyframes_module(f.pc())))
                    f = f.older()
            except gdb.error:
                pass  # the frames unwound so far
            return names
        return self._per_thread(native_tids, read)

    def native_frames(self, native_tid):
        """gdb's backtrace of the thread (selected for the walk, then the
        user's thread and frame selected again)."""
        thread = self._thread_of(native_tid)
        if thread is None:
            return None
        selected = _pyframes_selection()
        try:
            thread.switch()
            return _pyframes_native(gdb.newest_frame())
        finally:
            _pyframes_select(*selected)


def _pyframes_selection():
    """The user's selected thread and frame (None for none), to select
    again with _pyframes_select once a walk has switched threads."""
    try:
        frame = gdb.selected_frame()
    except gdb.error:
        frame = None
    return gdb.selected_thread(), frame


def _pyframes_select(thread, frame):
    """Select that thread (and its inferior) and frame again, when still valid."""
    if thread is not None and thread.is_valid():
        thread.switch()
        if frame is not None and frame.is_valid():
            frame.select()


if _pyf is not None:
    _PYF_DESCRIPTION = _pyf.options.describe("py-bt-fast", "gdb")
else:
    _PYF_DESCRIPTION = "Print the Python stack of the selected thread (pyframes)."


def _pyframes_sp_frame(frame):
    """A gdb.Frame as pyframes.mixed.NativeFrame with only what placing
    Python frames needs (bt prints names and modules itself)."""
    inline = frame.type() == gdb.INLINE_FRAME
    sp = None
    if not inline:
        try:
            sp = int(frame.read_register("sp")) & 0xFFFFFFFFFFFFFFFF
        except (gdb.error, ValueError):
            sp = None
    return _pyf.mixed.NativeFrame(frame.level(), None, sp, None, None, inline)


def _pyframes_module(pc):
    """The path of the file (executable or shared library) holding pc, or None."""
    try:
        module = gdb.solib_name(pc)
        if module is None:
            objfile = gdb.current_progspace().objfile_for_address(pc)
            module = objfile.filename if objfile is not None else None
        return module
    except (gdb.error, AttributeError):
        return None


def _pyframes_native_frame(frame):
    """A gdb.Frame as pyframes.mixed.NativeFrame, with its name and module."""
    pc = frame.pc()
    return _pyframes_sp_frame(frame)._replace(pc=pc, function=frame.name(),
                                              module=_pyframes_module(pc))


def _pyframes_native(frame):
    out = []
    while frame is not None and len(out) < _pyf.MAX_NATIVE:
        out.append(_pyframes_native_frame(frame))
        try:
            frame = frame.older()
        except gdb.error:
            break
    return out


class _PyframesPythonFrame(object):
    """A Python frame shown under the eval-loop frame that runs it (an
    elided frame of its decorator: gdb takes arch and level from it)."""

    def __init__(self, eval_frame, frame, function=None):
        self._eval = eval_frame
        self._frame = frame
        self._function = function

    def function(self):
        if self._function is not None:
            return self._function
        return _pyf.mixed.python_name(self._frame)

    def filename(self):
        return _pyf.escape(self._frame.filename) if self._frame is not None else None

    def line(self):
        return self._frame.line if self._frame is not None else None

    def address(self):
        return None

    def frame_args(self):
        return None

    def frame_locals(self):
        return None

    def elided(self):
        return None

    def inferior_frame(self):
        return self._eval


class _PyframesEvalFrame(object):
    """A native frame's decorator with the Python frames it runs as elided
    frames (after any it already had); everything else is the original's."""

    def __init__(self, base, extra):
        self._base = base
        self._extra = extra

    def __getattr__(self, name):
        return getattr(self._base, name)

    def elided(self):
        had = self._base.elided()
        return list(had or ()) + self._extra


class PyframesFrameFilter(object):
    """The frame filter "pyframes": in `bt`, each eval-loop frame is
    followed by the Python frames it runs (`bt -hide` leaves them out,
    `bt -no-filters` or `set pyframes frame-filter off` turns it off)."""

    name = "pyframes"
    priority = 100
    enabled = True

    def __init__(self, session):
        self.session = session

    def filter(self, frame_iter):
        if self.session is None or not _PYF_FILTER_ON[0]:
            return frame_iter
        frames = []
        try:
            for d in frame_iter:
                frames.append(d)
                if len(frames) >= _pyf.MAX_NATIVE:
                    break
            return iter(self._decorate(frames))
        except Exception as e:  # never break bt: the native frames alone
            gdb.write("pyframes: Python frames not shown: %s\n" % _pyf.escape(
                str(e) if isinstance(e, _pyf.errors.CommandError) else
                "%s: %s" % (type(e).__name__, e)))
            return iter(frames)

    def _decorate(self, frames):
        if not frames:
            return frames
        thread = gdb.selected_thread()
        if thread is None:
            return frames
        pid, lwp, _tid = thread.ptid
        adapter = PyframesGdbAdapter()
        if not adapter.has_process():
            return frames
        runs = self.session.thread_runs(adapter, lwp or pid)
        if not runs:
            return frames
        native = [_pyframes_sp_frame(d.inferior_frame()) for d in frames]
        if _pyf.mixed.needs_names(runs):
            native = [f._replace(function=d.inferior_frame().name())
                      for f, d in zip(native, frames)]
        placement = _pyf.mixed.place(native, runs)
        out = []
        for group in _pyf.mixed.interleave(len(frames), placement):
            if group.native is None:
                last = frames[-1].inferior_frame()
                out.append(_PyframesEvalFrame(
                    _PyframesPythonFrame(last, None, placement.frame_marker()),
                    [_PyframesPythonFrame(last, f) for f in group.frames]))
                continue
            d = frames[group.native]
            if group.frames:
                eval_frame = d.inferior_frame()
                d = _PyframesEvalFrame(d, [_PyframesPythonFrame(eval_frame, f)
                                           for f in group.frames])
            out.append(d)
        return out


_PYF_FILTER_ON = [True]


class _PyframesPrefix(gdb.Command):
    """pyframes settings."""

    def __init__(self, name):
        gdb.Command.__init__(self, name, gdb.COMMAND_DATA, gdb.COMPLETE_NONE, True)


class PyframesFilterParameter(gdb.Parameter):
    """Whether `bt` shows the Python frames under the eval-loop frames
    that run them (the frame filter "pyframes"; also `disable frame-filter
    global pyframes`, or `bt -no-filters` for one backtrace)."""

    set_doc = "Set whether bt shows Python frames (pyframes frame filter)."
    show_doc = "Show whether bt shows Python frames (pyframes frame filter)."

    def __init__(self):
        gdb.Parameter.__init__(self, "pyframes frame-filter", gdb.COMMAND_DATA,
                               gdb.PARAM_BOOLEAN)
        self.value = True

    def get_set_string(self):
        _PYF_FILTER_ON[0] = bool(self.value)
        return ""

    def get_show_string(self, svalue):
        return _pyf.bt_state(svalue == "on", "pyframes frame filter")


class PyframesBtCommand(gdb.Command):
    """pyframes-bt [on|off]: whether bt shows each eval-loop frame's Python
    frames (the frame filter "pyframes"; without a word: the state).  The
    same command as in lldb; `set pyframes frame-filter on|off` is the
    same switch."""

    def __init__(self):
        gdb.Command.__init__(self, _pyf.BT_COMMAND, gdb.COMMAND_STACK)

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        try:
            on = _pyf.bt_switch(argument)
        except _pyf.errors.CommandError as e:
            raise gdb.GdbError(str(e))
        if on is not None:
            gdb.execute("set pyframes frame-filter %s" % ("on" if on else "off"),
                        to_string=True)
        gdb.write(_pyf.bt_state(_PYF_FILTER_ON[0], "frame filter") + "\n")


class PyBtFastCommand(gdb.Command):
    __doc__ = _PYF_DESCRIPTION

    def __init__(self, session):
        # No completer class: gdb then calls complete() for the options.
        gdb.Command.__init__(self, "py-bt-fast", gdb.COMMAND_STACK)
        self.session = session

    def complete(self, text, word):
        if _pyf is None:
            return []
        token, words = _pyf.options.completions(
            text, extra=(_pyf.options.PROCESSES_OPTION["gdb"][0],))
        # gdb replaces only `word` (it breaks words at '-'): return suffixes.
        cut = len(token) - len(word or "")
        return [w[cut:] for w in words]

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        if self.session is None:
            raise gdb.GdbError(_PYF_IMPORT_ERROR)
        gdb.write(_pyframes_run("py-bt-fast", lambda: self.session.run(
            argument, PyframesGdbAdapter(), each_process=_pyframes_each_inferior)))


def _pyframes_each_inferior():
    """py-bt-fast --all-inferiors: ("gdb inferior N", its adapter) of each
    inferior with a live process or a core file, each selected in turn; the
    user's inferior, thread and frame selected again at the end."""
    inferior = gdb.selected_inferior()
    selected = _pyframes_selection()
    try:
        for inf in gdb.inferiors():
            if not inf.is_valid() or inf.pid <= 0:
                continue
            if gdb.selected_inferior().num != inf.num:
                # a thread's switch selects its inferior, and prints
                # nothing (the command `inferior N` shows the frame)
                threads = sorted(inf.threads(), key=lambda t: t.num)
                if not threads:
                    continue
                threads[0].switch()
            adapter = PyframesGdbAdapter()
            adapter.qualified_labels = True
            yield "gdb inferior %d" % inf.num, adapter
    finally:
        try:
            if selected[0] is None and inferior.is_valid() \
                    and gdb.selected_inferior().num != inferior.num:
                gdb.execute("inferior %d" % inferior.num, to_string=True)
            _pyframes_select(*selected)
        except gdb.error:
            pass


def _pyframes_help(name):
    """What ``help NAME`` prints, or None when gdb has no such command."""
    try:
        return gdb.execute("help " + name, to_string=True)
    except gdb.error:
        return None


def _pyframes_helper_class(name, text):
    """The class of CPython's gdb helper's command that has ``name`` now
    (its help ``text``): the newest gdb.Command subclass of the helper's
    class name (navigate.HELPER_CLASSES) defined in gdb's __main__, where
    gdb runs auto-loaded scripts, whose doc is that help; None for none."""
    wanted = _pyf.navigate.HELPER_CLASSES.get(name)
    first = (text or "").strip().splitlines()[:1]
    for cls in reversed(gdb.Command.__subclasses__()):
        if cls.__name__ == wanted and cls.__module__ == "__main__" and \
                (cls.__doc__ or "").strip().splitlines()[:1] == first:
            return cls
    return None


def _pyframes_claim(session, said, ours_too=False):
    """The plain navigation names (py-up, ...) pyframes' commands: each one
    another command has is registered anew (the later gdb.Command of a name
    replaces the earlier).  CPython's gdb helper (python3.X-gdb.py,
    auto-loaded with python's objfile, before or after this plugin) has
    py-up, py-down, py-list, py-locals and py-print: its commands are
    registered again under cpython-py-up, ... first.  The first time a name
    was taken, one line says which is which (``said``: [bool], shared by
    the calls).  ``ours_too``: pyframes' own are registered anew as well
    (the plugin sourced again: its new session)."""
    moved, lost = [], []
    for name in _pyf.navigate.COMMANDS:
        text = _pyframes_help(name)
        if text is not None and "(pyframes)" in text:
            if ours_too:
                _pyframes_nav_command(name, session)
            continue
        helper = _pyframes_helper_class(name, text) if text is not None else None
        if helper is not None:
            command = helper.__new__(helper)
            gdb.Command.__init__(command, _pyf.navigate.HELPER_NAMES[name],
                                 gdb.COMMAND_STACK, gdb.COMPLETE_NONE)
            moved.append(name)
        elif text is not None:
            lost.append(name)
        _pyframes_nav_command(name, session)
    if (moved or lost) and not said[0]:
        said[0] = True
        gdb.write(_pyf.navigate.helper_notice(moved, lost) + "\n")


def _pyframes_nav_command(name, session):
    """The navigation command ``name`` (py-up, pyf-list, ...):
    pyframes.navigate's, printed here."""
    detail = _pyf.navigate.help_text(name)[1]

    def invoke(self, argument, from_tty):
        if name.endswith(("-frame", "-list", "-locals", "-print", "-task")):
            self.dont_repeat()
        gdb.write(_pyframes_run(name, lambda: _pyf.navigate.run(
            session, PyframesGdbAdapter(), name, argument)))

    cls = type("PyframesNav_" + name.replace("-", "_"), (gdb.Command,),
               {"__doc__": detail, "invoke": invoke})
    return cls(name, gdb.COMMAND_STACK)


def _pyframes_run(name, command):
    """command() -> the text to print; every failure becomes one gdb error,
    never a Python traceback."""
    text, error = _pyf.run_command(name, command)
    if error is not None:
        raise gdb.GdbError(error)
    return text


class _QuietStops(object):
    """While it lives, gdb's output goes to /dev/null (its logging
    redirect), so that a stop the plugin asked for prints no "Program
    received signal SIGINT" and location; restore() puts the user's logging
    settings back.  Nothing is changed when the user logs already."""

    _NAMES = ("logging file", "logging redirect", "logging debugredirect")

    def __init__(self):
        self.saved = None
        try:
            if gdb.parameter("logging enabled"):
                return
            self.saved = [(name, gdb.parameter(name)) for name in self._NAMES]
            for command in ("set logging file /dev/null", "set logging redirect on",
                            "set logging debugredirect on", "set logging enabled on"):
                gdb.execute(command, to_string=True)
        except (gdb.error, RuntimeError):
            self.restore()

    def restore(self):
        if self.saved is None:
            return
        saved, self.saved = self.saved, None
        for command in ["set logging enabled off"] + [
                "set %s %s" % (name, ("on" if value else "off") if isinstance(value, bool)
                               else value) for name, value in saved if value is not None]:
            try:
                gdb.execute(command, to_string=True)
            except gdb.error:
                pass


class _GdbStream(object):
    write = staticmethod(gdb.write)
    flush = staticmethod(gdb.flush)


class PySampleCommand(gdb.Command):
    __doc__ = (_pyf.sample_command.describe("py-sample") if _pyf is not None else
               "Sample the Python stacks of the inferior (pyframes).")

    def __init__(self, session):
        gdb.Command.__init__(self, "py-sample", gdb.COMMAND_STACK)
        self.command = _pyf.sample_command.SampleCommand(session) if session is not None else None

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        if self.command is None:
            raise gdb.GdbError(_PYF_IMPORT_ERROR)
        progress = _pyf.report.count_line(_GdbStream, "py-sample") if from_tty else None
        try:
            text = _pyframes_run("py-sample", lambda: self.command.run(
                argument, PyframesGdbAdapter(), progress))
        finally:
            if progress is not None:
                progress.done()
        gdb.write(text)


def _pyframes_connect(session, said):
    """Flush caches when the inferior runs or changes, and keep the plain
    navigation names pyframes' when an objfile's scripts take them
    (_pyframes_claim); returns disconnectors."""
    if session is None:
        return []

    def flush(_event=None):
        session.flush()

    def stopped_or_ran(_event=None):
        session.flush()
        _pyf.navigate.reset(session)

    def reset(_event=None):
        session.reset()
        _pyf.navigate.reset(session)

    loaded = []

    def objfile(_event=None):
        reset()
        # an objfile's auto-loaded scripts (CPython's gdb helper) run before
        # or after its event, by gdb's version: this event, the next
        # objfile's or the next prompt sees what they took
        loaded[:] = [True]
        _pyframes_claim(session, said)

    def prompt():
        if loaded:
            del loaded[:]
            _pyframes_claim(session, said)

    handlers = []
    for name, fn in (("cont", stopped_or_ran), ("stop", stopped_or_ran),
                     ("memory_changed", flush),
                     ("exited", reset), ("new_objfile", objfile),
                     ("clear_objfiles", reset), ("inferior_deleted", reset),
                     ("before_prompt", prompt)):
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
    session = _pyf.new_session("py-bt-fast", "gdb") if _pyf is not None else None
    if session is not None:
        session.enable_processes(*_pyf.options.PROCESSES_OPTION["gdb"])
    PyBtFastCommand(session)
    PySampleCommand(session)
    if session is not None:
        try:
            _PyframesPrefix("set pyframes")
            _PyframesPrefix("show pyframes")
            PyframesFilterParameter()
        except RuntimeError:
            pass  # sourced again: the settings exist
        PyframesBtCommand()
        for name in _pyf.navigation_names():
            if name not in _pyf.navigate.COMMANDS:
                _pyframes_nav_command(name, session)
        said = [False]
        _pyframes_claim(session, said, ours_too=True)  # CPython's helper loaded or not
        gdb.frame_filters["pyframes"] = PyframesFrameFilter(session)
    return {"session": session,
            "handlers": _pyframes_connect(session, said) if session is not None else []}


_pyframes_gdb_state = _pyframes_install()
