"""lldb plugin of pyframes: the ``pystack`` and ``py-sample`` commands, and
frame navigation (``py-up``, ``py-down``, ``py-frame``, ``py-list``, also
named ``pyf-up`` ...).

Load it with ``command script import /path/to/pyframes_lldb.py`` (from the
source tree or from <prefix>/share/pyframes/lldb/).  Only the lldb adapter
and lldb's side of the commands live here; the commands themselves are
pyframes.session and pyframes.stack_command (reached through
pyframes.plugin), shared with the gdb plugin.  Program state comes only from the SBExecutionContext lldb passes
to the command.
"""

import os
import select
import signal
import sys
import threading
import time

import lldb


# The package beside the plugin (../native/python in the source tree,
# <prefix>/share/pyframes/python installed), else whatever imports.
_dirs = [os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, d))
         for d in ("native/python", "python")]
sys.path[:0] = [d for d in _dirs if os.path.isfile(os.path.join(d, "pyframes", "__init__.py"))
                and d not in sys.path][:1]
try:
    from pyframes import plugin as _pyf
    _IMPORT_ERROR = None
except Exception as e:  # keep lldb usable; the commands report the problem
    _pyf = None
    _IMPORT_ERROR = "pyframes: cannot import the pyframes package: %s: %s" % (
        type(e).__name__, e)

_CORE_PLUGINS = ("elf-core", "minidump", "mach-o-core", "pe-coff-core")
_GONE_STATES = (lldb.eStateInvalid, lldb.eStateUnloaded, lldb.eStateConnected,
                lldb.eStateDetached, lldb.eStateExited)
# the states of a process whose attach or connect (`gdb-remote`) lldb has not
# finished handling: in async mode the command returns first, and a command
# run right after it (a script, commands on lldb's stdin) sees these until
# lldb's event thread takes the first stop
_SETTLING_STATES = (lldb.eStateUnloaded, lldb.eStateConnected, lldb.eStateAttaching,
                    lldb.eStateLaunching)
#: How long a command waits for that first stop.
SETTLE_SECONDS = 5.0


class LldbAdapter(object if _pyf is None else _pyf.adapter.DebuggerAdapter):
    """pyframes.adapter.DebuggerAdapter over an lldb target and process:
    those of the SBExecutionContext a command gets (:meth:`of`), or, in a
    frame provider (``in_provider``), those lldb hands the provider.

    A provider runs while lldb holds the target's locks: an SB call that
    locks deadlocks, or aborts lldb.  So in a provider the adapter asks
    nothing that locks (no process state, no memory reads through lldb:
    only a live local process, read by its PID), and each backtrace reads
    the Python stack afresh."""

    debugger_name = "lldb"

    def __init__(self, target, process, thread=None, in_provider=False):
        self.target = target
        self.process = process
        self.thread = thread
        self.in_provider = in_provider
        # symbol lookups lock the target: sections first in a provider
        self.cheap_symbol_lookup = not in_provider
        self._error = lldb.SBError()
        self._settle_waited = False

    @classmethod
    def of(cls, exe_ctx):
        """The adapter of a command's SBExecutionContext."""
        return cls(exe_ctx.GetTarget(), exe_ctx.GetProcess(), exe_ctx.GetThread())

    # ---- process ---------------------------------------------------------

    def _process_ok(self):
        if self.in_provider:
            return True
        return (self.process is not None and self.process.IsValid()
                and self._settled_state() not in _GONE_STATES)

    def _settled_state(self):
        """The process's state, once lldb has taken the first stop of an
        attach or connect that has a process (a pid) but is not handled
        yet: waited for at most SETTLE_SECONDS, once per command."""
        state = self.process.GetState()
        if state not in _SETTLING_STATES or self._settle_waited:
            return state
        self._settle_waited = True
        pid = self.process.GetProcessID()
        if not pid or pid == lldb.LLDB_INVALID_PROCESS_ID:
            return state
        deadline = time.monotonic() + SETTLE_SECONDS
        while state in _SETTLING_STATES and time.monotonic() < deadline:
            time.sleep(0.01)
            state = self.process.GetState()
        return state

    def _plugin(self):
        try:
            return (self.process.GetPluginName() or "").lower()
        except Exception:
            return ""

    def pid(self):
        if not self._process_ok():
            return None
        pid = self.process.GetProcessID()
        return pid if pid and pid != lldb.LLDB_INVALID_PROCESS_ID else None

    def has_process(self):
        return self._process_ok()

    def is_live(self):
        if not self._process_ok():
            return False
        plugin = self._plugin()
        return not (plugin in _CORE_PLUGINS or "core" in plugin)

    def is_live_local(self):
        # lldb debugs a local process through an lldb-server it starts
        # itself; a gdb-remote connection (even over loopback) is another
        # machine's process as far as lldb can tell: read through lldb.
        return (_pyf.adapter.DebuggerAdapter.is_live_local(self) and
                _pyf.adapter.traced_by_this_debugger(self.pid()))

    def executable(self):
        if not self.target or not self.target.IsValid():
            return None
        spec = self.target.GetExecutable()
        if not spec or not spec.IsValid():
            return None
        return spec.fullpath

    def identity(self):
        unique = None
        if self._process_ok():
            unique = self.process.GetUniqueID()
        return ("lldb", unique, self.pid(), self._plugin(), self.executable())

    def generation(self):
        if self.in_provider:
            return object()  # never the last one: the target is flushed
        if not self._process_ok():
            return None
        return self.process.GetStopID()

    # ---- memory ----------------------------------------------------------

    def read(self, addr, size):
        if self.in_provider:
            raise PermissionError("a frame provider reads only by PID")
        error = self._error
        error.Clear()
        data = self.process.ReadMemory(addr, size, error)
        if not error.Fail() and data is not None and len(data) == size:
            return data
        if not self.is_live():
            # Core files usually leave out read-only file mappings (the
            # kernel's default coredump_filter, gdb's gcore): read those from
            # the module's file, as gdb does.
            data = self._read_from_file(addr, size)
            if data is not None:
                return data
        raise OSError("cannot read %d bytes at 0x%x: %s"
                      % (size, addr, error.GetCString() or "short read"))

    def write(self, addr, data):
        error = lldb.SBError()
        written = self.process.WriteMemory(addr, bytes(data), error)
        if error.Fail() or written != len(data):
            raise OSError("cannot write %d bytes at 0x%x: %s"
                          % (len(data), addr, error.GetCString() or "short write"))

    def resume_while(self, work):
        """Continue synchronously (lldb then waits for the stop itself, and
        prints nothing) while work runs in a thread; when it returns, the
        thread interrupts the process, and again every few milliseconds
        until it has stopped (an interrupt that comes before the process
        runs is lost)."""
        if not self.is_live():
            return False, None
        debugger = self.target.GetDebugger()
        was_async = debugger.GetAsync()
        halt = _Halt(debugger)
        process = self.process
        thread, box = _pyf.adapter.resume_worker(
            work, halt, process.SendAsyncInterrupt, halt.stopped, 0.005)
        selected = process.GetSelectedThread().GetThreadID()
        debugger.SetAsync(False)
        halt.watch_sigint()
        ran = False
        try:
            try:
                thread.start()
                ran = not process.Continue().Fail()
            finally:
                halt.set()
                thread.join()
                debugger.SetAsync(was_async)
                halt.unwatch_sigint()
        except KeyboardInterrupt:
            # lldb's Ctrl-C, raised here once Python ran again: the work
            # ended on it already (see _Halt); its result is kept
            thread.join()
            ran = True
        result = _pyf.adapter.resume_outcome(box)
        ran = ran and process.GetState() == lldb.eStateStopped
        if ran and selected:
            process.SetSelectedThreadByID(selected)
        return ran, result

    def _read_from_file(self, addr, size):
        address = self.target.ResolveLoadAddress(addr)
        section = address.GetSection()
        if not section or not section.IsValid():
            return None
        offset = address.GetOffset()
        if offset + size > section.GetFileByteSize():
            return None
        error = lldb.SBError()
        data = section.GetSectionData(offset, size).ReadRawData(error, 0, size)
        if error.Fail() or data is None or len(data) != size:
            return None
        return data

    def lookup_symbol(self, name):
        contexts = self.target.FindSymbols(name)
        for i in range(contexts.GetSize()):
            symbol = contexts.GetContextAtIndex(i).GetSymbol()
            if not symbol or not symbol.IsValid():
                continue
            addr = symbol.GetStartAddress().GetLoadAddress(self.target)
            if addr and addr != lldb.LLDB_INVALID_ADDRESS:
                return addr
        return None

    def writable_ranges(self):
        """Writable ranges, only the file-backed ones when lldb names them."""
        named, anonymous = [], []
        regions = self.process.GetMemoryRegions()
        info = lldb.SBMemoryRegionInfo()
        for i in range(regions.GetSize()):
            if not regions.GetMemoryRegionAtIndex(i, info):
                continue
            if info.IsReadable() and info.IsWritable():
                name = info.GetName() or ""
                span = (info.GetRegionBase(), info.GetRegionEnd())
                (named if name.startswith("/") else anonymous).append(span)
        return named or anonymous

    def objfiles(self):
        result = []
        for i in range(self.target.GetNumModules()):
            module = self.target.GetModuleAtIndex(i)
            path = module.GetFileSpec().fullpath
            header = module.GetObjectFileHeaderAddress()
            if not path or not header.IsValid():
                continue
            addr = header.GetLoadAddress(self.target)
            if addr and addr != lldb.LLDB_INVALID_ADDRESS:
                result.append((path, addr))
        return result

    # ---- threads ---------------------------------------------------------

    def selected_native_tid(self):
        thread = self.thread
        if thread is None or not thread.IsValid():
            if not self._process_ok():
                return None
            thread = self.process.GetSelectedThread()
        if thread is None or not thread.IsValid():
            return None
        return thread.GetThreadID()

    def os_threads(self):
        if not self._process_ok():
            return []
        return [self.process.GetThreadAtIndex(i).GetThreadID()
                for i in range(self.process.GetNumThreads())]

    def debugger_thread_label(self, native_tid):
        if not self._process_ok():
            return None
        for i in range(self.process.GetNumThreads()):
            thread = self.process.GetThreadAtIndex(i)
            if thread.GetThreadID() == native_tid:
                return "thread #%d" % thread.GetIndexID()
        return None

    def native_frames(self, native_tid):
        if not self._process_ok():
            return None
        thread = self.process.GetThreadByID(native_tid)
        if thread is None or not thread.IsValid():
            return None
        frames = [thread.GetFrameAtIndex(i)
                  for i in range(min(thread.GetNumFrames(), _pyf.MAX_NATIVE))]
        # a frame provider's own (PC-less) frames are not native frames
        return _native_list([f for f in frames if f.GetPC() != lldb.LLDB_INVALID_ADDRESS])

    def thread_name(self, native_tid):
        """lldb's name of the thread (a live process's comm; what the core
        gave lldb)."""
        if not self._process_ok():
            return None
        thread = self.process.GetThreadByID(native_tid)
        if thread is None or not thread.IsValid():
            return None
        return thread.GetName() or None

    def _per_thread(self, native_tids, read):
        """{tid: read(its SBThread)} of each thread of native_tids lldb
        has; a thread read gives nothing for is left out."""
        out = {}
        if not self._process_ok():
            return out
        for tid in native_tids:
            thread = self.process.GetThreadByID(tid)
            if thread is None or not thread.IsValid():
                continue
            got = read(thread)
            if got:
                out[tid] = got
        return out

    def registers(self, native_tids, names):
        """The ``names`` registers of each thread's innermost frame that
        lldb has, as unsigned values."""
        def read(thread):
            f = thread.GetFrameAtIndex(0)
            values = {}
            for name in names if f.IsValid() else ():
                reg = f.FindRegister(name)
                if reg.IsValid():
                    error = lldb.SBError()
                    value = reg.GetValueAsUnsigned(error, 0)
                    if error.Success():
                        values[name] = value
            return values
        return self._per_thread(native_tids, read)

    def core_file(self):
        """The path of the core file lldb reads (lldb shows no orig_rax of
        a core: its notes have it), or None."""
        if not self._process_ok() or self.is_live():
            return None
        try:
            return self.process.GetCoreFile().fullpath or None
        except AttributeError:  # an lldb without SBProcess.GetCoreFile
            return None

    def innermost_functions(self, native_tids, count):
        """Each thread's ``count`` innermost frames as (name, module) (a
        frame provider's own PC-less frames left out)."""
        def read(thread):
            names = []
            for i in range(count + 8):  # GetNumFrames would unwind them all
                f = thread.GetFrameAtIndex(i)
                if not f.IsValid():
                    break
                if f.GetPC() == lldb.LLDB_INVALID_ADDRESS:
                    continue
                name = f.GetFunctionName()
                if not name and f.GetSymbol().IsValid():
                    name = f.GetSymbol().GetName()
                module = f.GetModule()
                spec = module.GetFileSpec() if module.IsValid() else None
                names.append((name, spec.fullpath if spec else None))
                if len(names) >= count:
                    break
            return names
        return self._per_thread(native_tids, read)

    def select_native_frame(self, native_tid, native):
        """Select that thread and its frame ``native`` (a NativeFrame of
        native_frames, found by pc and stack pointer); lldb's name of it
        (``#7 _PyEval_EvalFrameDefault``)."""
        thread = self.process.GetThreadByID(native_tid)
        if thread is None or not thread.IsValid():
            raise RuntimeError("lldb has no thread with tid %d" % native_tid)
        count = min(thread.GetNumFrames(), _pyf.MAX_NATIVE)
        for i in [native.level] + list(range(count)):
            f = thread.GetFrameAtIndex(i)
            if (i < count and f.IsValid() and not f.IsInlined()
                    and f.GetPC() == native.pc and f.GetSP() == native.sp):
                self.process.SetSelectedThread(thread)
                thread.SetSelectedFrame(i)
                return "#%d %s" % (i, f.GetFunctionName() or "??")
        raise RuntimeError("lldb's backtrace has no frame at pc 0x%x" % (native.pc or 0))


def _last_of_physical(frames, level):
    """Whether frames[level] is the outermost frame lldb lists for its
    physical frame (the next one has another CFA)."""
    if level + 1 >= len(frames):
        return False
    cfa, outer = frames[level].GetCFA(), frames[level + 1].GetCFA()
    return cfa not in (0, lldb.LLDB_INVALID_ADDRESS) and outer != cfa


def _native_list(frames, skip_first=False):
    """SBFrames (innermost first) as pyframes.mixed.NativeFrame.  With
    skip_first the innermost is not asked anything (in a frame provider
    every call on it aborts lldb 22): it holds whatever lies below the
    next frame's stack pointer."""
    out = []
    for level, f in enumerate(frames):
        if level == 0 and skip_first:
            out.append(_pyf.mixed.NativeFrame(0, None, 0, None, None, False))
            continue
        inline = f.IsInlined()
        module = f.GetModule()
        spec = module.GetFileSpec() if module.IsValid() else None
        name = f.GetFunctionName()
        if inline and _last_of_physical(frames, level):
            # lldb (21, 22) sometimes lists a physical frame as its inlined
            # callees only, the function they are inlined into left out:
            # the last of them stands for the frame, named by its symbol
            inline = False
            if f.GetSymbol().IsValid():
                name = f.GetSymbol().GetName()
        if not name and f.GetSymbol().IsValid():
            name = f.GetSymbol().GetName()
        out.append(_pyf.mixed.NativeFrame(level, f.GetPC(), None if inline else f.GetSP(),
                                           name, spec.fullpath if spec else None, inline))
    return out


def _thread_placement(thread, frames, adapter=None, skip_first=False):
    """(native frames, placement) of an SBThread whose real frames are
    ``frames``; None when it runs no Python (or pyframes cannot tell)."""
    if _SESSION is None:
        return None
    if adapter is None:
        if not thread.IsValid():
            return None
        adapter = LldbAdapter.of(lldb.SBExecutionContext(thread))
    if not adapter.has_process():
        return None
    runs = _SESSION.thread_runs(adapter, thread.GetThreadID())
    if not runs:
        return None
    native = _native_list(frames, skip_first)
    return native, _pyf.mixed.place(native, runs)


# ---- lldb 22+: a frame provider inserts the Python frames into bt -----------

try:
    from lldb.plugins.scripted_frame_provider import ScriptedFrameProvider as _FrameProvider
    from lldb.plugins.scripted_process import ScriptedFrame as _ScriptedFrame
except Exception:  # lldb 21 and older: no frame providers
    _FrameProvider = _ScriptedFrame = None

if _FrameProvider is not None:
    class PythonFrame(_ScriptedFrame):
        """A Python frame (no pc, no registers) in lldb's backtrace."""

        def __init__(self, thread, index, name, filename, line):
            _ScriptedFrame.__init__(self, thread, lldb.SBStructuredData())
            self._index = index
            self._name = name
            self._filename = filename
            self._line = line

        def get_id(self):
            return self._index

        def get_register_context(self):
            return None

        def get_pc(self):
            return None

        def get_function_name(self):
            return self._name

        def get_display_function_name(self):
            return self._name

        def get_symbol_context(self):
            sc = lldb.SBSymbolContext()
            if self._filename:
                entry = lldb.SBLineEntry()
                entry.SetFileSpec(lldb.SBFileSpec(self._filename, False))
                if self._line is not None:
                    entry.SetLine(self._line)
                sc.SetLineEntry(entry)
            return sc

        def is_artificial(self):
            return False

    class PyframesFrameProvider(_FrameProvider):
        """pyframes: each eval-loop frame followed by the Python frames it
        runs (`target frame-provider list`; remove it to turn it off)."""

        @staticmethod
        def get_description():
            return "pyframes: Python frames under the eval-loop frames that run them"

        def __init__(self, input_frames, args):
            _FrameProvider.__init__(self, input_frames, args)
            self._items = None

        def _build(self):
            items = list(range(self.input_frames.GetSize()))
            try:
                adapter = LldbAdapter(self.target, self.process, in_provider=True)
                got = None
                if adapter.is_live_local():
                    frames = [self.input_frames.GetFrameAtIndex(i) for i in items]
                    got = _thread_placement(self.thread, frames, adapter, skip_first=True)
            except Exception as e:  # never break bt: the native frames alone
                sys.stderr.write("pyframes: Python frames not shown: %s\n" % _pyf.escape(str(e)))
                got = None
            if got is None:
                return items
            _native, placement = got
            out = []
            for group in _pyf.mixed.interleave(len(items), placement):
                if group.native is None:
                    out.append((placement.frame_marker(), None, None))
                else:
                    out.append(items[group.native])
                out.extend((_pyf.mixed.python_name(f), _pyf.escape(f.filename), f.line)
                           for f in group.frames)
            return out

        def get_frame_at_index(self, index):
            try:
                if self._items is None:
                    if _on_event_thread():
                        # lldb's event thread (a stop or selection banner)
                        # waits on a lock the command thread holds: the SB
                        # calls reading the Python stack would deadlock.
                        # The real frames now; bt, on the command thread,
                        # gets the Python frames.
                        return index if index < self.input_frames.GetSize() else None
                    self._items = self._build()
                if index >= len(self._items):
                    return None
                item = self._items[index]
                if isinstance(item, int):
                    return item
                return PythonFrame(self.thread, index, *item)
            except Exception:
                # fall back to the real frames, one for one
                return index if index < self.input_frames.GetSize() else None
else:
    PyframesFrameProvider = None

def _on_event_thread():
    """Whether this is lldb's event-handler thread (named by lldb)."""
    try:
        with open("/proc/self/task/%d/comm" % threading.get_native_id()) as f:
            return f.read().strip().startswith("dbg.evt")
    except (OSError, AttributeError):
        return False


_PROVIDER_CLASS = __name__ + ".PyframesFrameProvider"
_PROVIDER_ON = []  # non-empty after `pyframes-bt on` where lldb has providers
_REGISTERED = []  # [(SBTarget, provider id)]: SBTargets compare equal by target


def _register_provider(target):
    """The frame provider on target (once); False where lldb has none."""
    if PyframesFrameProvider is None or not hasattr(target, "RegisterScriptedFrameProvider"):
        return False
    if target is None or not target.IsValid():
        return False
    if any(t == target for t, _ in _REGISTERED):
        return True
    error = lldb.SBError()
    pid = target.RegisterScriptedFrameProvider(_PROVIDER_CLASS, lldb.SBStructuredData(), error)
    if error.Fail() or not pid:
        return False
    _REGISTERED.append((target, pid))
    return True


def _remove_provider(debugger, target):
    """Remove it as `target frame-provider remove` does (which also drops
    the frames lldb made with it, unlike the bare SB call)."""
    found = [(t, p) for t, p in _REGISTERED if t == target]
    if not found:
        return
    _REGISTERED.remove(found[0])
    pid = found[0][1]
    result = lldb.SBCommandReturnObject()
    debugger.SetSelectedTarget(target)
    debugger.GetCommandInterpreter().HandleCommand(
        "target frame-provider remove %d" % pid, result)
    if not result.Succeeded():
        target.RemoveScriptedFrameProvider(pid)


_WATCHING = []


def _watch_new_targets(debugger):
    """Register the provider on targets created after the plugin loaded
    (lldb 22 broadcasts their creation)."""
    bit = getattr(lldb.SBTarget, "eBroadcastBitNewTargetCreated", None)
    if bit is None or PyframesFrameProvider is None or _WATCHING:
        return
    _WATCHING.append(True)
    listener = lldb.SBListener("pyframes-new-targets")
    listener.StartListeningForEventClass(debugger, lldb.SBTarget.GetBroadcasterClassName(), bit)

    def run():
        event = lldb.SBEvent()
        while True:
            try:
                if listener.WaitForEvent(3600, event) and event.IsValid() and _PROVIDER_ON:
                    _register_provider(lldb.SBTarget.GetTargetFromEvent(event))
            except Exception:
                return

    threading.Thread(target=run, name="pyframes-new-targets", daemon=True).start()


# ---- lldb 21: Python frames through the frame format (opt-in) ------------

_FORMAT_HOOK = "${script.frame:%s.frame_python_lines}" % __name__
_PLACED = {}  # (process, stop id, thread id) -> {native frame index: the lines under it}


def _lines_under(native_count, placement):
    """{native frame index: the text under it}: its Python frames, and
    under the last frame those that could not be placed, after their
    marker (pyframes.mixed.interleave)."""
    at = {}
    for group in _pyf.mixed.interleave(native_count, placement):
        lines = [_pyf.mixed.python_line(f) for f in group.frames]
        if group.native is None:
            where = native_count - 1
            lines.insert(0, "    %s" % placement.frame_marker())
        else:
            where = group.native
        if lines:
            at[where] = at.get(where, "") + "".join(line + "\n" for line in lines)
    return at


def frame_python_lines(frame, unused):
    """frame-format hook: the Python frames the eval frame ``frame`` runs,
    one line each (empty for other frames; the last frame also has those
    that could not be placed)."""
    try:
        thread = frame.GetThread()
        process = thread.GetProcess()
        key = (process.GetUniqueID(), process.GetStopID(), thread.GetThreadID())
        at = _PLACED.get(key)
        if at is None:
            if len(_PLACED) > 256:
                _PLACED.clear()
            frames = [thread.GetFrameAtIndex(i)
                      for i in range(min(thread.GetNumFrames(), _pyf.MAX_NATIVE))]
            got = _thread_placement(thread, frames)
            at = _PLACED[key] = {} if got is None else _lines_under(len(frames), got[1])
        return at.get(frame.GetFrameID(), "")
    except Exception as e:
        return "    %sframes not shown: %s\n" % (_pyf.mixed.PYTHON_MARK, _pyf.escape(str(e)))


class _Halt(threading.Event):
    """Set when the process stopped by itself; is_set() also says yes once
    the user asked lldb to interrupt the command (Ctrl-C: lldb's driver
    leaves the process running then and lets the command see the request
    through SBDebugger.InterruptRequested)."""

    def __init__(self, debugger):
        threading.Event.__init__(self)
        self.interrupted = getattr(debugger, "InterruptRequested", lambda: False)
        self._pipe = self._old_fd = None

    def watch_sigint(self):
        """Ctrl-C during the continue: lldb's own SIGINT handler does not
        reach a continue made from Python (its embedded Python has no
        SIGINT handler, so the KeyboardInterrupt it asks for is dropped),
        so for the continue Python's handler is put in its place, with a
        wakeup fd that is_set() watches; unwatch_sigint() puts lldb's
        handler back (saved and restored whole by sigaction).  Main thread
        only; when anything is refused, nothing changes."""
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            saved = ctypes.create_string_buffer(512)  # > any struct sigaction
            if libc.sigaction(signal.SIGINT, None, saved) != 0:
                return
            r, w = os.pipe()
        except (OSError, AttributeError):
            return
        try:
            os.set_blocking(w, False)
            old_fd = signal.set_wakeup_fd(w)
        except (ValueError, OSError):
            os.close(r)
            os.close(w)
            return
        try:
            signal.signal(signal.SIGINT, lambda signum, frame: None)
        except (ValueError, OSError):
            signal.set_wakeup_fd(old_fd)
            os.close(r)
            os.close(w)
            return
        self._pipe, self._old_fd, self._saved = (r, w), old_fd, (libc, saved)

    def unwatch_sigint(self):
        if self._pipe is None:
            return
        pipe, self._pipe = self._pipe, None
        libc, saved = self._saved
        libc.sigaction(signal.SIGINT, saved, None)
        try:
            signal.set_wakeup_fd(self._old_fd)
        except (ValueError, OSError):
            pass
        for fd in pipe:
            os.close(fd)

    def is_set(self):
        if threading.Event.is_set(self) or self.interrupted():
            return True
        pipe = self._pipe
        return bool(pipe is not None and select.select([pipe[0]], [], [], 0)[0])

    def stopped(self):
        """Whether the process stopped (the event alone)."""
        return threading.Event.is_set(self)


class PyBt(object):
    """pyframes-bt [on|off]: Python frames in lldb's bt (the same command
    as in gdb; without a word: the state)."""

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return ("pyframes-bt [on|off]: show each eval-loop frame's Python frames in bt "
                "(lldb 22+: a frame provider; lldb 21: through frame-format)")

    def get_long_help(self):
        return (self.get_short_help() + "\n\nWith lldb 22 and later `on` registers the frame "
                "provider pyframes_lldb.PyframesFrameProvider on every target, present "
                "and future: the Python frames are frames of their own in bt and thread "
                "backtrace (live local processes). lldb 22.1 aborts when a provider "
                "reads frames the backtrace is still unwinding (llvm-project #194108), "
                "which is why it is not on by default. With lldb 21 `on` appends a "
                "${script.frame:...} hook to frame-format that prints the Python frames "
                "under each eval frame.")

    def __call__(self, debugger, command, exe_ctx, result):
        try:
            on = _pyf.bt_switch(command)
        except _pyf.errors.CommandError as e:
            result.SetError(str(e))
            return
        word = {True: "on", False: "off", None: None}[on]
        if word is None:
            name = debugger.GetInstanceName()
            current = debugger.GetInternalVariableValue("frame-format", name)
            hooked = current and current.GetSize() and _FORMAT_HOOK in current.GetStringAtIndex(0)
            result.AppendMessage(_pyf.bt_state(bool(_PROVIDER_ON) or bool(hooked), "lldb"))
            result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
            return
        if PyframesFrameProvider is not None:
            targets = [debugger.GetTargetAtIndex(i) for i in range(debugger.GetNumTargets())]
            if word == "on":
                _PROVIDER_ON[:] = [True]
                for target in targets:
                    _register_provider(target)
                try:
                    _watch_new_targets(debugger)
                except Exception:
                    pass
            else:
                del _PROVIDER_ON[:]
                selected = debugger.GetSelectedTarget()
                for target in targets:
                    _remove_provider(debugger, target)
                if selected.IsValid():
                    debugger.SetSelectedTarget(selected)
            result.AppendMessage(_pyf.bt_state(on, "frame provider"))
            result.SetStatus(lldb.eReturnStatusSuccessFinishResult)
            return
        name = debugger.GetInstanceName()
        current = debugger.GetInternalVariableValue("frame-format", name)
        value = current.GetStringAtIndex(0) if current and current.GetSize() else ""
        value = value.strip('"')
        if word == "on":
            if _FORMAT_HOOK not in value:
                value += _FORMAT_HOOK
        else:
            value = value.replace(_FORMAT_HOOK, "")
        error = debugger.SetInternalVariable("frame-format", value, name)
        if error.Fail():
            result.SetError("pyframes-bt: %s" % error.GetCString())
            return
        result.AppendMessage(_pyf.bt_state(on, "frame-format hook"))
        result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


if _pyf is not None:
    _DESCRIPTION = _pyf.options.describe("pystack", "lldb")
else:
    _DESCRIPTION = "Print the Python stack of the selected thread (pyframes)."


class PyStack(object):
    """Print the Python stack of the selected thread (pyframes)."""

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return _DESCRIPTION.split("\n")[0]

    def get_long_help(self):
        return _DESCRIPTION

    def __call__(self, debugger, command, exe_ctx, result):
        if _SESSION is None:
            result.SetError(_IMPORT_ERROR)
            return
        _finish(result, "pystack", lambda: _SESSION.run(
            command, LldbAdapter.of(exe_ctx), each_process=lambda: _each_target(debugger)))


def _each_target(debugger):
    """pystack --all-targets: ("lldb target N", its adapter) of each target
    with a live process or a core file (N: its index, as `target list`
    numbers it); an adapter names its target and process, so nothing is
    selected."""
    for i in range(debugger.GetNumTargets()):
        target = debugger.GetTargetAtIndex(i)
        process = target.GetProcess() if target and target.IsValid() else None
        adapter = LldbAdapter(target, process, process.GetSelectedThread()
                              if process is not None and process.IsValid() else None)
        if adapter.has_process():
            yield "lldb target %d" % i, adapter


def _finish(result, name, command):
    """Run command() and put its text, or its one-line failure (never a
    Python traceback), into the command's result."""
    text, error = _pyf.run_command(name, command)
    if error is not None:
        result.SetError(error)
        return
    result.AppendMessage(text.rstrip("\n"))
    result.SetStatus(lldb.eReturnStatusSuccessFinishResult)


class PySample(object):
    """Sample the Python stacks of the inferior (pyframes)."""

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return "Sample the Python stacks of the inferior: run, stop, sample, again."

    def get_long_help(self):
        return _pyf.sample_command.describe("py-sample") if _pyf is not None else ""

    def __call__(self, debugger, command, exe_ctx, result):
        if _SAMPLE is None:
            result.SetError(_IMPORT_ERROR)
            return
        out = sys.stdout
        tty = hasattr(out, "isatty") and out.isatty()
        progress = _pyf.report.count_line(out, "py-sample") if tty else None
        try:
            _finish(result, "py-sample",
                    lambda: _SAMPLE.run(command, LldbAdapter.of(exe_ctx), progress))
        finally:
            if progress is not None:
                progress.done()


class _Navigate(object):
    """A frame navigation command (py-up, pyf-list, ...): its name is the
    class's; pyframes.navigate does the work."""

    name = None

    def __init__(self, debugger, internal_dict):
        pass

    def get_short_help(self):
        return _pyf.navigate.help_text(self.name)[0] if _pyf is not None else ""

    def get_long_help(self):
        return _pyf.navigate.help_text(self.name)[1] if _pyf is not None else ""

    def __call__(self, debugger, command, exe_ctx, result):
        if _SESSION is None:
            result.SetError(_IMPORT_ERROR)
            return
        _finish(result, self.name, lambda: _pyf.navigate.run(
            _SESSION, LldbAdapter.of(exe_ctx), self.name, command))


# one class per name (lldb makes commands of classes): Nav_py_up, ...
_NAV_CLASSES = []
for _name in (_pyf.navigation_names() if _pyf is not None else ()):
    _cls = "Nav_" + _name.replace("-", "_")
    globals()[_cls] = type(_cls, (_Navigate,), {"name": _name})
    _NAV_CLASSES.append((_cls, _name))


_SESSION = (_pyf.new_session("pystack", "lldb", globals().get("_SESSION"))
            if _pyf is not None else None)
if _SESSION is not None:
    _SESSION.enable_processes(*_pyf.options.PROCESSES_OPTION["lldb"])
_SAMPLE = _pyf.sample_command.SampleCommand(_SESSION) if _SESSION is not None else None


def _lldb_major():
    """lldb's major version (21 for "lldb version 21.1.8"), or None."""
    words = (lldb.SBDebugger.GetVersionString() or "").split()
    if len(words) >= 3 and words[0] == "lldb" and words[1] == "version":
        major = words[2].split(".")[0]
        if major.isdigit():
            return int(major)
    return None


def _avoid_parallel_module_load(debugger):
    """lldb 21 loads a new target's shared libraries on a thread pool
    (target.parallel-module-load, on by default), and that can deadlock:
    `target create` or `process attach` then waits forever at 0 % CPU (two
    pool workers each holding a lock the other needs while preloading
    symbols; fixed in lldb 22).  Turn it off for the targets created after
    the plugin is loaded, so every target when it is imported from
    ~/.lldbinit.  See docs/debuggers.md."""
    if _lldb_major() != 21:
        return
    result = lldb.SBCommandReturnObject()
    debugger.GetCommandInterpreter().HandleCommand(
        "settings set target.parallel-module-load false", result)


def __lldb_init_module(debugger, internal_dict):
    _avoid_parallel_module_load(debugger)
    interpreter = debugger.GetCommandInterpreter()
    for cls, name in [("PyStack", "pystack"), ("PySample", "py-sample"),
                      ("PyBt", "pyframes-bt")] + _NAV_CLASSES:
        for flags in ("-o -c", "-c"):  # -o (overwrite) lets a re-import replace it
            result = lldb.SBCommandReturnObject()
            interpreter.HandleCommand(
                "command script add %s %s.%s %s" % (flags, __name__, cls, name), result)
            if result.Succeeded():
                break
        else:
            sys.stderr.write("pyframes: could not register `%s`: %s\n"
                             % (name, result.GetError()))
