"""Debugger-independent logic of the debugger commands.

The gdb plugin (``py-bt-fast``) and the lldb plugin (``pystack``) are thin
wrappers: each implements a :class:`DebuggerAdapter` over its debugger's API
and hands the command line to :meth:`Session.run`.  Everything else lives
here: option parsing, locating ``_PyRuntime``, choosing a memory reader,
caching targets between commands, choosing threads, rendering and turning
failures into one actionable :class:`CommandError` message.

Nothing in this module imports gdb or lldb.
"""

import argparse
import collections
import dataclasses
import importlib
import io
import os
import re
import shlex
import struct

__all__ = [
    "CommandError",
    "UsageError",
    "DebuggerAdapter",
    "Session",
    "build_parser",
    "parse_arguments",
    "local_process_matches",
    "describe",
    "short_description",
]

RUNTIME_SYMBOL = "_PyRuntime"
VERSION_SYMBOL = "Py_Version"
SUPPORTED_MINORS = (13, 14, 15)
SUPPORTED_TEXT = "3.13, 3.14 and 3.15"

_PYTHON_NAME_HINTS = ("python", "libpython")
_MAX_CACHED_TARGETS = 8


class CommandError(Exception):
    """A failure shown to the user as one message, without a traceback."""


class UsageError(CommandError):
    """Bad command-line options; the message includes the usage text."""


def _api():
    """The pyframes package (imported lazily so parsing never needs the library)."""
    return importlib.import_module(__package__ or "pyframes")


def _render():
    return importlib.import_module((__package__ or "pyframes") + ".render")


# --------------------------------------------------------------------------
# Options


class _HelpRequested(Exception):
    def __init__(self, text):
        Exception.__init__(self, text)
        self.text = text


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that never exits and never prints."""

    def __init__(self, *args, **kwargs):
        argparse.ArgumentParser.__init__(self, *args, **kwargs)
        self._messages = []

    def _print_message(self, message, file=None):
        if message:
            self._messages.append(message)

    def exit(self, status=0, message=None):
        if message:
            self._messages.append(message)
        text = "".join(self._messages)
        self._messages = []
        if status == 0:
            raise _HelpRequested(text)
        raise UsageError(text.strip() or self.format_usage().strip())

    def error(self, message):
        self._messages = []
        raise UsageError("%s%s: error: %s" % (self.format_usage(), self.prog, message))


def non_negative_int(text):
    """argparse type: an integer >= 0, decimal or 0x-hex."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not an integer" % text)
    if value < 0:
        raise argparse.ArgumentTypeError("%r is negative" % text)
    return value


def positive_int(text):
    """argparse type: an integer >= 1, decimal or 0x-hex."""
    value = non_negative_int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("%r must be at least 1" % text)
    return value


def build_parser(command_name, description=None):
    """The option parser shared by both debuggers."""
    kwargs = dict(
        prog=command_name,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=True,
    )
    try:
        parser = _Parser(exit_on_error=False, allow_abbrev=False, **kwargs)
    except TypeError:  # Python < 3.9
        parser = _Parser(allow_abbrev=False, **kwargs)
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "-a", "--all", action="store_true",
        help="show every Python thread of every interpreter")
    which.add_argument(
        "-t", "--thread", metavar="N", type=non_negative_int,
        help="show the thread whose native thread id (LWP/tid, as "
             "threading.get_native_id()) or Python thread id (as "
             "threading.get_ident(); decimal or 0x-hex) is N")
    parser.add_argument(
        "--limit", metavar="N", type=positive_int,
        help="show at most N frames per thread, innermost first")
    parser.add_argument(
        "--json", action="store_true",
        help="print one JSON document (the schema of "
             "`python3 -m pyframes dump --json`)")
    parser.add_argument(
        "--no-source", action="store_true",
        help="do not print source lines under the frames")
    parser.add_argument(
        "--reader", choices=("auto", "pid", "debugger"), default="auto",
        help="how memory is read: 'pid' reads the live local process "
             "directly, 'debugger' reads through the debugger (needed for "
             "core files and remote targets), 'auto' (default) picks 'pid' "
             "when the process is live and local")
    return parser


def completions(text):
    """Completion of the arguments typed so far: (the word being typed, the
    option names or option values that extend it), from the parser itself."""
    parts = text.split()
    token = "" if not parts or text[-1:].isspace() else parts[-1]
    before = parts[:-1] if token else parts
    previous = before[-1] if before else ""
    actions = build_parser("")._actions
    for action in actions:
        if previous in action.option_strings and action.choices:
            return token, [c for c in action.choices if c.startswith(token)]
    words = [o for a in actions for o in a.option_strings if o.startswith("--")]
    return token, [w for w in words if w.startswith(token)]


def parse_arguments(parser, argument_string):
    """Parse a raw command-line string.

    Returns the namespace, or raises :class:`UsageError`; a help request
    raises ``_HelpRequested`` whose ``text`` is the help.
    """
    try:
        argv = shlex.split(argument_string or "")
    except ValueError as e:
        raise UsageError("%s%s: error: %s" % (parser.format_usage(), parser.prog, e))
    try:
        ns, extra = parser.parse_known_args(argv)
    except argparse.ArgumentError as e:
        raise UsageError("%s%s: error: %s" % (parser.format_usage(), parser.prog, e))
    if extra:
        raise UsageError("%s%s: error: unrecognized arguments: %s"
                         % (parser.format_usage(), parser.prog, " ".join(extra)))
    return ns


_LONG_HELP = """\
Print the Python stack of the selected thread, fast and without debug symbols.

Reads CPython 3.13, 3.14 and 3.15 through _Py_DebugOffsets: works on live
processes, core files and remote targets, with or without the python -dbg
packages.  Without options it shows the thread selected in {dbg}.

  -a, --all        every Python thread of every interpreter
  -t, --thread N   the thread whose native id (OS tid, as in `{threads}`) or
                   Python thread id (threading.get_ident()) is N
  --limit N        at most N frames per thread, innermost first
  --json           one JSON document (same schema as `python3 -m pyframes dump --json`)
  --no-source      no source lines
  --reader MODE    auto (default): read a live local process directly, else
                   through {dbg}; pid: force direct reads; debugger: force
                   reads through {dbg} (core files, remote targets)

Example: {cmd} --all --no-source
"""

_THREAD_COMMANDS = {"gdb": "info threads", "lldb": "thread list"}


def describe(command_name, debugger_name):
    """The long help text of the command in one debugger."""
    return _LONG_HELP.format(
        cmd=command_name, dbg=debugger_name,
        threads=_THREAD_COMMANDS.get(debugger_name, "the thread list"))


def short_description(debugger_name):
    return _LONG_HELP.split("\n")[0]


# --------------------------------------------------------------------------
# Debugger side


class DebuggerAdapter(object):
    """What a debugger must provide.  Only :meth:`read` is mandatory.

    ``read(addr, size)`` returns exactly ``size`` bytes; it raises
    ``PermissionError`` when access is refused and any other exception when
    the range is unreadable.
    """

    #: Name shown in messages ("gdb", "lldb").
    debugger_name = "debugger"

    def pid(self):
        """PID of the inferior (the dumped PID for a core), or None."""
        return None

    def has_process(self):
        """True when the debugger has memory to read (live or core)."""
        return self.pid() is not None

    def is_live(self):
        """True when the debugger reports a running/stopped live process
        (not a core file), local or remote."""
        return False

    def executable(self):
        """Path of the main executable as the debugger knows it, or None."""
        return None

    def is_live_local(self):
        """True when the inferior is a live process of this machine that the
        built-in PID reader can read."""
        if not self.is_live():
            return False
        return local_process_matches(self.pid(), self.executable())

    def read(self, addr, size):
        raise NotImplementedError

    def lookup_symbol(self, name):
        """Load address of an (exported) symbol, or None.  No DWARF needed."""
        return None

    #: False when lookup_symbol may be slow (then ELF sections are tried first).
    cheap_symbol_lookup = True

    def writable_ranges(self):
        """[(start, end)] of writable memory where _PyRuntime may live
        (file-backed mappings when the debugger can tell), else []."""
        return []

    def objfiles(self):
        """[(path, address where the first PT_LOAD is mapped)]."""
        return []

    def selected_native_tid(self):
        """OS thread id of the thread selected in the debugger, or None."""
        return None

    def debugger_thread_label(self, native_tid):
        """How the debugger names the thread with this OS thread id, e.g.
        'thread 2' (gdb) or 'thread #2' (lldb); None when it has no such
        thread."""
        return None

    def identity(self):
        """Hashable identity of the inferior (process or core) for caching."""
        return (self.debugger_name, self.pid(), self.executable())

    def generation(self):
        """A value that changes whenever the inferior may have changed
        (e.g. lldb's stop id), or None when the plugin flushes on events."""
        return None


def _proc_start_time(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            data = f.read()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    rest = data[data.rfind(b")") + 2:].split()
    try:
        return int(rest[19])
    except (IndexError, ValueError):
        return None


def local_process_matches(pid, executable):
    """True when /proc/PID exists here and runs the same executable file."""
    if not pid or pid <= 0:
        return False
    proc = "/proc/%d" % pid
    if not os.path.isdir(proc):
        return False
    if not executable:
        return True
    try:
        mine = os.stat(proc + "/exe")
    except OSError:
        return False
    try:
        theirs = os.stat(executable)
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


class _DebuggerRead(object):
    """The read callable handed to the library; retargeted at each command
    so a cached Target always reads through the current debugger state."""

    __slots__ = ("adapter",)

    def __init__(self, adapter):
        self.adapter = adapter

    def __call__(self, addr, size):
        return self.adapter.read(addr, size)


# --------------------------------------------------------------------------
# Locating the runtime


def _format_hexversion(hexversion):
    major = (hexversion >> 24) & 0xFF
    minor = (hexversion >> 16) & 0xFF
    micro = (hexversion >> 8) & 0xFF
    level = (hexversion >> 4) & 0xF
    serial = hexversion & 0xF
    text = "%d.%d.%d" % (major, minor, micro)
    if level in (0xA, 0xB, 0xC):
        text += {0xA: "a", 0xB: "b", 0xC: "rc"}[level] + str(serial)
    return text


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


def _unsupported_message(read, runtime_addr, adapter, error=None):
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
        addr = _safe(adapter.lookup_symbol, VERSION_SYMBOL)
        if addr:
            v = _read_word(read, addr)
            if v is not None:
                v &= 0xFFFFFFFF
                if _plausible_hexversion(v):
                    version = v
    if version is None:
        return None
    return ("unsupported CPython %s (pyframes reads CPython %s)"
            % (_format_hexversion(version), SUPPORTED_TEXT))


def _safe(fn, *args):
    try:
        return fn(*args)
    except Exception:
        return None


NOT_PYTHON = ("not a Python process (no _PyRuntime symbol, no .PyRuntime "
              "section, no runtime cookie in writable memory)")


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
    Returns ``(address, PythonInfo)``; raises CommandError.
    """
    api = _api()
    read = read or adapter.read
    probe_errors = []
    seen = set()

    def probe(addr, how):
        if addr in seen:
            return None
        seen.add(addr)
        try:
            return api.probe_runtime(read, addr)
        except api.UnsupportedVersion as e:
            raise CommandError(_unsupported_message(read, addr, adapter) or str(e))
        except api.PermissionDenied as e:
            raise CommandError(str(e))
        except api.PyframesError as e:
            probe_errors.append((how, addr, e))
            return None

    def by_symbol():
        addr = _safe(adapter.lookup_symbol, RUNTIME_SYMBOL)
        if not addr:
            return None
        info = probe(addr, "symbol _PyRuntime")
        if info is not None:
            return addr, info
        # The symbol exists but holds no debug offsets: an older CPython?
        message = _unsupported_message(read, 0, adapter)
        if message:
            raise CommandError(message)
        return None

    def by_section():
        for path, map_start in _python_first(_safe(adapter.objfiles) or []):
            if not path or map_start is None:
                continue
            try:
                found = api.elf_runtime_address(path, map_start)
            except Exception:
                continue
            if found:
                info = probe(found, ".PyRuntime section of %s" % path)
                if info is not None:
                    return found, info
        return None

    def by_scan():
        budget = _SCAN_LIMIT
        for start, end in _safe(adapter.writable_ranges) or []:
            if end <= start or budget <= 0:
                continue
            end = min(end, start + budget)
            budget -= end - start
            try:
                found = api.find_runtime_in_range(read, start, end)
            except api.PermissionDenied as e:
                raise CommandError(str(e))
            except Exception:
                continue
            if found:
                info = probe(found, "runtime cookie at 0x%x" % found)
                if info is not None:
                    return found, info
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
        message = _unsupported_message(read, where, adapter)
        if message:
            raise CommandError(message)
        raise CommandError("%s at 0x%x (%s) is not a usable CPython runtime: %s"
                           % (RUNTIME_SYMBOL, where, how, err))
    message = _unsupported_message(read, 0, adapter)
    if message:
        raise CommandError(message)
    raise CommandError(NOT_PYTHON)


# --------------------------------------------------------------------------
# Sessions


@dataclasses.dataclass
class _Cached(object):
    target: object
    reader: object  # _DebuggerRead or None
    generation: object


class Session(object):
    """Per-debugger state: cached targets and the command implementation."""

    def __init__(self, command_name, description=None):
        self.command_name = command_name
        self.description = description
        self.parser = build_parser(command_name, description)
        self._targets = collections.OrderedDict()
        self._runtimes = {}

    # ---- cache management ------------------------------------------------

    def flush(self):
        """Forget decoded target data (call whenever the inferior ran or
        its memory changed).  Keeps the targets open."""
        for cached in self._targets.values():
            try:
                cached.target.flush()
            except Exception:
                pass

    def reset(self):
        """Close every cached target (inferior exited, files changed)."""
        targets, self._targets = self._targets, collections.OrderedDict()
        self._runtimes = {}
        for cached in targets.values():
            try:
                cached.target.close()
            except Exception:
                pass

    def close(self):
        self.reset()

    def _remember(self, key, cached):
        self._targets[key] = cached
        self._targets.move_to_end(key)
        while len(self._targets) > _MAX_CACHED_TARGETS:
            _, old = self._targets.popitem(last=False)
            try:
                old.target.close()
            except Exception:
                pass

    # ---- target selection --------------------------------------------------

    def _get_target(self, adapter, reader_mode):
        """Return (Target, reader kind) for the adapter, cached."""
        api = _api()
        if not adapter.has_process():
            raise CommandError("no process or core file: start, attach to or "
                               "load a CPython process first")
        live_local = False
        if reader_mode in ("auto", "pid"):
            live_local = bool(_safe(adapter.is_live_local))
        if reader_mode == "pid" and not live_local:
            if adapter.is_live():
                raise CommandError(
                    "--reader pid needs a live process on this machine; "
                    "process %s is not one that can be read here (remote "
                    "target?): use --reader debugger" % adapter.pid())
            raise CommandError(
                "--reader pid needs a live process; this is a core file or "
                "has no process: use --reader debugger")
        generation = _safe(adapter.generation)

        if live_local:
            try:
                return self._pid_target(api, adapter, generation), "pid"
            except CommandError:
                raise
            except api.PyframesError as e:
                if reader_mode == "pid" or isinstance(
                        e, (api.NotPython, api.UnsupportedVersion)):
                    raise CommandError(self._describe_open_error(e, adapter))
                # e.g. process_vm_readv refused while ptrace works: fall back.
        return self._debugger_target(api, adapter, generation), "debugger"

    def _refresh(self, key, cached, generation):
        if cached.generation != generation:
            try:
                cached.target.flush()
            except Exception:
                pass
            cached.generation = generation
        self._targets.move_to_end(key)
        return cached.target

    def _pid_target(self, api, adapter, generation):
        pid = adapter.pid()
        ident = ("pid", pid, _proc_start_time(pid))
        for key, cached in list(self._targets.items()):
            if key[0] == ident:
                return self._refresh(key, cached, generation)
        runtime = self._runtimes.get(ident)
        if runtime is None and getattr(adapter, "cheap_symbol_lookup", True):
            runtime = _safe(adapter.lookup_symbol, RUNTIME_SYMBOL)
        try:
            # 0: the library finds it from /proc/PID/maps and the ELF files.
            target = api.attach(pid, runtime_addr=runtime or 0)
        except (api.NotPython, api.UnsupportedVersion):
            if runtime:
                target = api.attach(pid, runtime_addr=0)
            else:
                # Not found from the mappings: ask the debugger (symbols).
                runtime, _info = locate_runtime(adapter)
                target = api.attach(pid, runtime_addr=runtime)
        runtime = target.python.runtime_addr
        self._runtimes[ident] = runtime
        self._remember((ident, runtime, "pid"), _Cached(target, None, generation))
        return target

    def _debugger_target(self, api, adapter, generation):
        ident = ("debugger",) + tuple(_as_tuple(adapter.identity()))
        for key, cached in list(self._targets.items()):
            if key[0] == ident:
                cached.reader.adapter = adapter
                return self._refresh(key, cached, generation)
        reader = _DebuggerRead(adapter)
        runtime = self._runtimes.get(ident)
        if runtime is None:
            runtime, _info = locate_runtime(adapter, reader)
        try:
            target = api.open_reader(
                reader, runtime, pid=adapter.pid() if adapter.is_live() else None)
        except api.PyframesError as e:
            raise CommandError(self._describe_open_error(e, adapter, reader, runtime))
        self._runtimes[ident] = runtime
        self._remember((ident, runtime, "debugger"), _Cached(target, reader, generation))
        return target

    def _describe_open_error(self, e, adapter, read=None, runtime=0):
        api = _api()
        if isinstance(e, api.NotPython):
            return NOT_PYTHON
        if isinstance(e, api.UnsupportedVersion):
            read = read or adapter.read
            return _unsupported_message(read, runtime, adapter) or str(e)
        return str(e)

    # ---- the command ---------------------------------------------------

    def help_text(self):
        return self.parser.format_help()

    def run(self, argument_string, adapter):
        """Run one command; return the text to print (ending in a newline).

        Raises CommandError (or UsageError) with the message to show.
        """
        try:
            options = parse_arguments(self.parser, argument_string)
        except _HelpRequested as h:
            return h.text if h.text.endswith("\n") else h.text + "\n"
        try:
            return self._run(options, adapter)
        except CommandError:
            raise
        except Exception as e:
            raise CommandError(self._translate(e, adapter))

    def _translate(self, e, adapter=None):
        try:
            api = _api()
        except Exception as ie:  # the package/library itself failed to load
            return "pyframes is unusable here: %s" % (ie,)
        if isinstance(e, api.ReadFault):
            live = adapter is None or _safe(adapter.is_live)
            return _read_fault_message(e, None if live else (
                "the core file may not contain this memory; a core written "
                "with all mappings (gdb gcore, coredump_filter) helps"))
        if isinstance(e, api.PyframesError):
            return str(e)
        if isinstance(e, PermissionError):
            return "permission denied reading the target: %s" % (e,)
        return "%s: %s" % (type(e).__name__, e)

    def _run(self, options, adapter):
        api = _api()
        api.library_version()  # LibraryNotFound here, not as "not Python" later
        target, kind = self._get_target(adapter, options.reader)
        # JSON carries every frame read, so --limit bounds the walk; text
        # output walks everything and lets the renderer say how many more.
        max_depth = options.limit if options.json else None

        if options.all:
            snapshot = target.snapshot(max_depth=max_depth)
            threads = list(snapshot.threads())
            if not threads:
                raise CommandError("the CPython runtime has no threads (the "
                                   "interpreter is starting or finalizing)")
        else:
            snapshot, threads = self._one_thread(api, target, adapter, options, max_depth)

        if options.json:
            return _render().format_json(snapshot).rstrip("\n") + "\n"
        source = None
        if not options.no_source and kind == "pid":
            source = _process_source(adapter.pid())
        return self._format_text(threads, adapter, options, source)

    def _one_thread(self, api, target, adapter, options, max_depth):
        if options.thread is not None:
            wanted, how = options.thread, "--thread %d" % options.thread
        else:
            wanted = _safe(adapter.selected_native_tid)
            if wanted is None:
                raise CommandError("no thread is selected: select one, or use "
                                   "--all or --thread N")
            how = None
        # Fast path: the number is a native thread id (one walk of one thread).
        found = self._snapshot_native(api, target, wanted, max_depth)
        if found is not None:
            return found
        full = target.snapshot(max_depth=1)
        threads = list(full.threads())
        if options.thread is not None:
            for t in threads:
                if t.thread_id != wanted:
                    continue
                if t.native_thread_id:
                    found = self._snapshot_native(api, target, t.native_thread_id, max_depth)
                    if found is not None:
                        return found
                snap = target.snapshot(max_depth=max_depth)
                for t2 in snap.threads():
                    if t2.thread_id == wanted:
                        return _only_threads(snap, [t2]), [t2]
        raise CommandError(self._no_python_thread_message(adapter, wanted, how, threads))

    @staticmethod
    def _snapshot_native(api, target, native_tid, max_depth):
        """(snapshot holding only that OS thread's Python threads, those
        threads) or None.  An OS thread running a subinterpreter has a
        thread state in each interpreter it entered: all are shown."""
        if not native_tid:
            return None
        try:
            snap = target.snapshot(native_tid=native_tid, max_depth=max_depth)
        except api.NoSuchThread:
            return None
        threads = list(snap.threads())
        matching = [t for t in threads if t.native_thread_id == native_tid]
        if not matching:
            return None
        if len(threads) != len(matching):
            snap = _only_threads(snap, matching)
        return snap, matching

    def _no_python_thread_message(self, adapter, wanted, how, threads):
        if how is None:
            label = _safe(adapter.debugger_thread_label, wanted)
            head = "the selected thread (%sLWP %d) runs no Python code" % (
                label + ", " if label else "", wanted)
        else:
            head = ("%s: no Python thread has native thread id or Python "
                    "thread id %d" % (how, wanted))
        if not threads:
            return head + "; the runtime lists no Python threads"
        lines = [head + ". Python threads:"]
        for t in threads:
            label = None
            if t.native_thread_id:
                label = _safe(adapter.debugger_thread_label, t.native_thread_id)
            where = "no Python frame"
            if t.frames:
                f = t.frames[0]
                where = "in %s (%s:%s)" % (
                    _escape(f.function), _escape(f.filename),
                    f.line if f.line is not None else "?")
            lines.append("  %-10s native id %-8s Python thread id %-16s %s" % (
                label or "-", _num(t.native_thread_id, "%d"),
                _num(t.thread_id, "0x%x"), where))
        lines.append("Select one of them in %s, or use `%s --thread N` or `%s --all`."
                     % (adapter.debugger_name, self.command_name, self.command_name))
        return "\n".join(lines)

    # ---- text ------------------------------------------------------------

    def _format_text(self, threads, adapter, options, source):
        render = _render()
        out = io.StringIO()
        for i, t in enumerate(threads):
            if i:
                out.write("\n")
            header = render.thread_header(t)
            label = None
            if t.native_thread_id:
                label = _safe(adapter.debugger_thread_label, t.native_thread_id)
            lines = render.format_text([t], limit=options.limit,
                                       show_source=not options.no_source,
                                       source=source)
            for n, line in enumerate(lines):
                if n == 0 and label and line == header and header.endswith(":"):
                    line = "%s [%s %s]:" % (header[:-1], adapter.debugger_name, label)
                out.write(line)
                out.write("\n")
        return out.getvalue()


_READING = re.compile(r"reading (?P<what>.+?) at (?P<addr>0x[0-9a-fA-F]+)(?: \((?P<size>\d+) bytes\))?")


def _read_fault_message(e, hint=None):
    """'memory unreadable at 0x... while reading ...' from a ReadFault."""
    m = None
    for m in _READING.finditer(e.detail or ""):
        pass  # the innermost (last) "reading X at ADDR" is what failed
    if m is None:
        return str(e)
    text = "memory unreadable at %s while reading %s" % (m.group("addr"), m.group("what"))
    if m.group("size"):
        text += " (%s bytes)" % m.group("size")
    hint = hint or getattr(e, "hint", "")
    return text + (" (%s)" % hint if hint else "")


def _num(value, fmt):
    return "?" if value is None else fmt % value


def _escape(text):
    try:
        return _render().escape(text)
    except Exception:
        return repr(text)


def _process_source(pid):
    try:
        cli = importlib.import_module((__package__ or "pyframes") + ".cli")
        return cli.process_source(pid)
    except Exception:
        return None


def _as_tuple(value):
    if isinstance(value, tuple):
        return value
    return (value,)


def _only_threads(snapshot, threads):
    """A copy of snapshot that holds only ``threads`` (for JSON output)."""
    if not dataclasses.is_dataclass(snapshot):
        return snapshot
    interps = []
    for interp in snapshot.interpreters:
        kept = [t for t in interp.threads if any(t is w for w in threads)]
        if kept:
            interps.append(dataclasses.replace(interp, threads=_like(interp.threads, kept)))
    return dataclasses.replace(snapshot, interpreters=_like(snapshot.interpreters, interps))


def _like(original, items):
    return tuple(items) if isinstance(original, tuple) else list(items)
