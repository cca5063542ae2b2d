"""A debugger session: the targets it keeps open, and one command's run.

A plugin keeps one :class:`Session` per debugger and calls :meth:`run` with
each command line and a fresh adapter.  The session decides which reader a
command uses (``--reader``), keeps the opened targets between commands and
forgets what may have changed, chooses the threads to show, and returns the
text to print.  It raises :class:`~pyframes.errors.CommandError` with the
message to show; the wording itself lives in :mod:`pyframes.errors` and
:mod:`pyframes.render`.

Reader choice (``--reader auto``): the PID reader (process_vm_readv) when
the inferior is a live process of this machine that runs the executable the
debugger knows; otherwise, or when the PID reader is refused while the
debugger can read (ptrace rights without process_vm_readv rights), the
debugger's own memory reads.  Cores and remote targets always use the
debugger's reads.
"""

import collections
import dataclasses
import json

from . import _loader, errors, mixed, render, stack_command, target as api, taskview, tids
from .adapter import (DebuggerRead, DebuggerWrite, ProcessWatch, ask, describe_threads,
                      process_start_time)
from .errors import CommandError, UsageError
from .locate import locate_asyncio, locate_runtime
from .options import HelpRequested, add_processes_option, build_parser, parse_arguments

__all__ = ["Session"]

_MAX_CACHED_TARGETS = 8
# How the PID reader found _PyRuntime when it searched itself (--info).
_BY_MAPPINGS = ("the process's mappings (the .PyRuntime section or symbol _PyRuntime of its "
                "files, or the runtime cookie)")


@dataclasses.dataclass
class _Cached(object):
    target: object
    reader: object  # DebuggerRead, or None for the PID reader
    generation: object
    how: str        # how _PyRuntime was found
    writer: object = None  # DebuggerWrite of a live process the debugger can write
    asyncio: int = 0       # where its asyncio debug offsets are, once known
    # (the generation its OS threads were given at,) once given
    os_threads: tuple = ()


class Session(object):
    """Per-debugger state: cached targets and the command implementation."""

    def __init__(self, command_name, description=None):
        self.command_name = command_name
        self.description = description
        self.parser = build_parser(command_name, description)
        self._targets = collections.OrderedDict()
        self._runtimes = {}
        # Source files, kept across commands and checked once per command.
        self._source = render.SourceReader()
        # True while py-sample runs the process between its samples: the
        # library checks what changed, nothing is flushed for it, and a reset
        # (the process exited) waits for the command to finish
        self.sampling = False
        self._reset_pending = False
        # per (inferior, OS thread): its Python frames in runs, until flush()
        self._runs = {}
        # inferiors found to run no (supported) Python, until reset()
        self._not_python = set()
        # (stop, _Cached) of the last stop_target
        self._stop_target = None
        # (stop, [model.Task]) of the last stop_tasks
        self._stop_tasks = None
        # per (inferior, stop): its threads' ids (pyframes.tids), until flush()
        self._ids = {}
        # per inferior (its identity) found to be a live local process: (its
        # ProcessWatch, its start time), until that process exits or reset()
        self._local = {}

    # ---- cache management ------------------------------------------------

    def flush(self):
        """Forget decoded target data (call whenever the inferior ran or
        its memory changed).  Keeps the targets open."""
        self._runs = {}
        self._ids = {}
        if self.sampling:
            return
        for cached in self._targets.values():
            try:
                cached.target.flush()
            except Exception:
                pass

    def reset(self):
        """Close every cached target (inferior exited, files changed)."""
        if self.sampling:
            self._reset_pending = True
            return
        targets, self._targets = self._targets, collections.OrderedDict()
        self._runtimes = {}
        self._runs = {}
        self._ids = {}
        self._not_python = set()
        self._forget_local()
        for cached in targets.values():
            try:
                cached.target.close()
            except Exception:
                pass

    def begin_sampling(self):
        """py-sample starts running the process between its samples."""
        self.sampling = True

    def end_sampling(self):
        """py-sample is done with its target: a reset asked for meanwhile
        happens now."""
        self.sampling = False
        if self._reset_pending:
            self._reset_pending = False
            self.reset()

    def close(self):
        self.sampling = False
        self.reset()

    def cached_readers(self):
        """The reader kinds ("debugger", "pid") of the open targets, sorted."""
        return sorted(set(key[2] for key in self._targets))

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

    def _local_process(self, adapter):
        """(whether the adapter's inferior is a live local process, as
        adapter.is_live_local says, and then its start time): asked once
        per process, while it lives.  What is_live_local checks (the
        debugger's connection, /proc/PID, its executable) stays what it was
        while the inferior (adapter.identity: its PID, executable and
        connection) is the same process, which its ProcessWatch tells."""
        key = ask(adapter.identity)
        known = self._local.get(key)
        if known is not None and known[0].alive():
            return True, known[1]
        if not ask(adapter.is_live_local):
            return False, None
        pid = adapter.pid()
        start = process_start_time(pid)
        watch = ProcessWatch(pid)
        # the watch is of the process whose start time was read
        if start is not None and watch.watching and process_start_time(pid) == start:
            if known is not None or len(self._local) >= _MAX_CACHED_TARGETS:
                self._forget_local()
            self._local[key] = (watch, start)
        else:
            watch.close()
        return True, start

    def _forget_local(self):
        local, self._local = self._local, {}
        for watch, _start in local.values():
            watch.close()

    def _get_target(self, adapter, reader_mode):
        """Return (_Cached, reader kind) for the adapter."""
        if not adapter.has_process():
            raise CommandError(errors.NO_PROCESS)
        live_local, start = False, None
        if reader_mode in ("auto", "pid"):
            live_local, start = self._local_process(adapter)
        if reader_mode == "pid" and not live_local:
            raise CommandError(errors.pid_reader_impossible(adapter.is_live(), adapter.pid()))
        generation = ask(adapter.generation)

        if live_local:
            try:
                return self._pid_target(adapter, generation, start), "pid"
            except CommandError:
                raise
            except errors.PyframesError as e:
                if isinstance(e, (errors.NotPython, errors.UnsupportedVersion)):
                    raise errors.NoRuntime(str(e))
                if reader_mode == "pid":
                    raise CommandError(str(e))
                # e.g. process_vm_readv refused while ptrace works: fall back.
        return self._debugger_target(adapter, generation), "debugger"

    def stop_target(self, adapter, stop):
        """The target ``_get_target(adapter, "auto")`` gives, looked up once
        per ``stop`` (the inferior's identity and generation, as the caller
        asked the adapter): the commands of one stop (py-locals, py-print)
        use it while the session keeps it open."""
        kept = self._stop_target
        if kept is not None and kept[0] == stop and any(
                cached is kept[1] for cached in self._targets.values()):
            self._rebind(kept[1], adapter)
            return kept[1].target
        cached = self._get_target(adapter, "auto")[0]
        self._stop_target = (stop, cached)
        return cached.target

    def stop_tasks(self, adapter, stop):
        """The asyncio tasks of the stopped inferior (model.Task, CPython
        3.14+), read once per ``stop`` as stop_target's target; raises
        CommandError saying why there are none."""
        kept = self._stop_tasks
        if kept is not None and kept[0] == stop:
            return kept[1]
        target = self.stop_target(adapter, stop)
        cached = self._stop_target[1]
        if cached.reader is not None:
            self.locate_asyncio(cached, adapter)
        snapshot = target.snapshot(limit=1, tasks=True)
        why = taskview.tasks_unavailable(snapshot)
        if why:
            raise CommandError(why)
        self._stop_tasks = (stop, list(snapshot.tasks))
        return self._stop_tasks[1]

    @staticmethod
    def _rebind(cached, adapter):
        """A debugger-read target reads through this command's adapter."""
        if cached.reader is not None:
            cached.reader.adapter = adapter
            if cached.writer is not None:
                cached.writer.adapter = adapter

    def _refresh(self, key, cached, generation):
        if cached.generation != generation:
            try:
                cached.target.flush()
            except Exception:
                pass
            cached.generation = generation
        self._targets.move_to_end(key)
        return cached

    def _pid_target(self, adapter, generation, start):
        pid = adapter.pid()
        ident = ("pid", pid, start)
        for key, cached in list(self._targets.items()):
            if key[0] == ident:
                return self._refresh(key, cached, generation)
        runtime, how = self._runtimes.get(ident, (None, _BY_MAPPINGS))
        try:
            # 0: the library finds it from /proc/PID/maps and the ELF files
            # (and checks what it finds: the runtime's size, Py_Version).
            target = api.attach(pid, runtime_addr=runtime or 0)
        except errors.NotPython:
            if runtime:
                raise
            # Not found from the mappings: ask the debugger (its symbols),
            # through the same search and checks.
            runtime, _info, how = locate_runtime(adapter)
            target = api.attach(pid, runtime_addr=runtime)
        runtime = target.python.runtime_addr
        self._runtimes[ident] = (runtime, how)
        cached = _Cached(target, None, generation, how)
        self._remember((ident, runtime, "pid"), cached)
        return cached

    def _debugger_target(self, adapter, generation):
        ident = ("debugger",) + tuple(_as_tuple(adapter.identity()))
        for key, cached in list(self._targets.items()):
            if key[0] == ident:
                self._rebind(cached, adapter)
                return self._give_os_threads(self._refresh(key, cached, generation), adapter)
        reader = DebuggerRead(adapter)
        runtime, how = self._runtimes.get(ident, (None, None))
        if runtime is None:
            runtime, _info, how = locate_runtime(adapter, reader)
        live = bool(ask(adapter.is_live))
        writer = DebuggerWrite(adapter) if live and getattr(adapter, "write", None) else None
        try:
            target = api.open_reader(reader, runtime, write=writer,
                                     pid=adapter.pid() if live else None,
                                     reads="stopped" if live else "core")
        except (errors.NotPython, errors.UnsupportedVersion) as e:
            raise errors.NoRuntime(str(e))
        except errors.PyframesError as e:
            raise CommandError(str(e))
        self._runtimes[ident] = (runtime, how)
        cached = _Cached(target, reader, generation, how, writer)
        self._remember((ident, runtime, "debugger"), cached)
        return self._give_os_threads(cached, adapter)

    @staticmethod
    def _give_os_threads(cached, adapter):
        """A debugger-read target is told once per stop the process's pid
        (before 3.14, no threads_main: the main thread is the one on the
        process's first thread) and, on 3.8-3.10, which keep no native
        thread id, the debugger's threads and their TLS bases (the pthread
        handles the thread states keep)."""
        minor = cached.target.python.minor
        if cached.os_threads == (cached.generation,) or minor > 13:
            return cached
        threads = {}
        if minor <= 10:
            threads = dict.fromkeys(ask(adapter.os_threads) or (), 0)
            threads.update(ask(getattr(adapter, "thread_pointers", dict)) or {})
        try:
            cached.target.set_os_threads(adapter.pid() or 0, threads)
        except errors.PyframesError:
            pass  # the threads stay without native ids
        cached.os_threads = (cached.generation,)
        return cached

    # ---- the command ---------------------------------------------------

    def help_text(self):
        return self.parser.format_help()

    def run(self, argument_string, adapter, each_process=None):
        """Run one command; return the text to print (ending in a newline).
        each_process: for the option of enable_processes, a generator of
        (label, adapter) per process of the debugger, each selected in turn
        (the user's selection back once it is closed).

        Raises CommandError (or UsageError) with the message to show.
        """
        return self.run_parsed(self.parser, argument_string, adapter,
                               lambda options: self._run(options, adapter, each_process))

    def enable_processes(self, option, what):
        """Add ``option`` (gdb: --all-inferiors, lldb: --all-targets): the
        command in every process of the debugger (``what``: "inferior")."""
        add_processes_option(self.parser, option, what)
        self.processes_option = option

    def run_parsed(self, parser, argument_string, adapter, body):
        """Parse argument_string with parser and return body(options), the
        text to print; help is that text, and every failure a CommandError
        (or UsageError) with the message to show (py-sample uses it too)."""
        try:
            options = parse_arguments(parser, argument_string)
        except HelpRequested as h:
            return h.text if h.text.endswith("\n") else h.text + "\n"
        try:
            return body(options)
        except CommandError:
            raise
        except Exception as e:
            raise CommandError(self._translate(e, adapter))

    @staticmethod
    def _translate(e, adapter=None):
        live = adapter is None or ask(adapter.is_live)
        if isinstance(e, errors.ReadFault):
            return errors.read_fault(e, None if live else errors.CORE_HINT)
        if isinstance(e, (errors.NotPython, errors.CorruptTarget)) and not live:
            return "%s; %s" % (e, errors.CORE_MAYBE)
        if isinstance(e, errors.PyframesError):
            return str(e)
        if isinstance(e, PermissionError):
            return errors.permission_denied(e)
        return errors.unexpected(e)

    def _run(self, options, adapter, each_process=None):
        api.library_version()  # LibraryNotFound here, not as "not Python" later
        if getattr(options, "all_processes", False):
            return self._run_processes(options, each_process)
        cached, kind = self._get_target(adapter, options.reader)
        if options.info:
            return self._info(cached, kind)
        return stack_command.run(cached.target, options,
                                 _DebuggerFront(self, adapter, cached, kind))

    def _run_processes(self, options, each_process):
        """--all-inferiors (--all-targets): the command in each process
        each_process() selects (--all unless --thread), under a header naming it
        (stack_command.run_processes); one that cannot be read has its
        error in its place."""
        if options.info:
            raise UsageError("--info describes one process (not with %s)"
                             % self.processes_option)
        if options.thread is None:
            options.all = True
        found = []

        def processes():
            walk = each_process()
            try:
                for label, adapter in walk:
                    found.append(label)
                    live_local = ask(adapter.is_live_local)
                    pid = adapter.pid()
                    command = render.process_command(pid) if live_local and pid else None
                    if command is None and adapter.executable():
                        command = render.escape(adapter.executable())
                    yield pid, command, label, lambda fn, a=adapter: self._within(a, options, fn)
            finally:
                walk.close()

        text, _failed = stack_command.run_processes(processes(), options,
                                                    lambda pid, exc: str(exc))
        if not found:
            raise CommandError(errors.NO_PROCESS)
        return text

    def _within(self, adapter, options, body):
        """body(target, front) on the adapter's process; every failure a
        CommandError with the message to show."""
        try:
            cached, kind = self._get_target(adapter, options.reader)
            return body(cached.target, _DebuggerFront(self, adapter, cached, kind))
        except CommandError:
            raise
        except Exception as e:
            raise CommandError(self._translate(e, adapter))

    @staticmethod
    def core_note(adapter, threads, snapshot=None):
        """On a core file, a note naming what to do when stacks or task
        lists stopped at a failed read (the core lacks that memory)."""
        if ask(adapter.is_live):
            return ""
        failed = sum(1 for t in threads if not t.complete and errors.is_read_failure(t.error))
        if snapshot is not None:
            failed += errors.is_read_failure(getattr(snapshot, "tasks_error", None))
            failed += sum(1 for task in getattr(snapshot, "tasks", None) or ()
                          if errors.is_read_failure(task.error))
        return errors.core_note(failed) + "\n" if failed else ""

    def native(self, snapshot, threads, adapter, options, kind):
        """--native: each thread's native backtrace with its Python frames
        placed in it (text, or the JSON document with mixed frame lists)."""
        def native_of(t):
            native = ask(adapter.native_frames, tids.os_tid(t)) \
                if tids.os_tid(t) else None
            if native is None:
                raise CommandError(errors.NO_NATIVE_BACKTRACE % adapter.debugger_name)
            return native

        def header_of(t):
            return render.labelled_header(t, ask(adapter.debugger_thread_label,
                                                 tids.os_tid(t)), adapter.debugger_name)

        out = mixed.native_output(snapshot, threads, native_of, header_of, options.json,
                                  None if options.no_source else self.source_for(adapter, kind),
                                  options.limit)
        if options.json:
            return json.dumps(out) + "\n"
        return out + self.core_note(adapter, threads)

    def source_for(self, adapter, kind):
        """The source-line reader of this command: the files as the process
        sees them when it is read by PID."""
        self._source.refresh()
        if kind == "pid":
            return render.process_source(adapter.pid(), fallback=self._source)
        return self._source

    def thread_ids(self, adapter, cached):
        """The ids of the threads of the adapter's process (pyframes.tids),
        once per stop (kept until flush()): from /proc for a live local
        process, else from the debugger's threads' TLS bases (a core, a
        remote target), matched with the Python threads of ``cached``'s
        target."""
        key = (ask(adapter.identity), ask(adapter.generation))
        ids = self._ids.get(key)
        if ids is None:
            if ask(adapter.is_live_local):
                ids = tids.of_process(adapter.pid())
            else:
                pointers = ask(getattr(adapter, "thread_pointers", dict)) or {}
                ids = tids.of_pointers(pointers, lambda: cached.target.snapshot(
                    max_depth=1).threads())
            if len(self._ids) > 8:
                self._ids.clear()
            self._ids[key] = ids
        return ids

    def thread_runs(self, adapter, native_tid):
        """The Python frames of an OS thread (``native_tid``: its id here)
        cut into runs by their eval calls (pyframes.mixed.python_runs), for
        a frame filter or provider: read once per stop (kept until
        flush()), [] for a thread without Python."""
        identity = ask(adapter.identity)
        if identity in self._not_python:
            return []
        key = (identity, ask(adapter.generation), native_tid)
        runs = self._runs.get(key)
        if runs is None:
            try:
                cached, _kind = self._get_target(adapter, "auto")
            except errors.NoRuntime:
                # not a Python process (or an unsupported one): bt stays
                # native, quietly, and the search is not made again until
                # the inferior's files change (reset)
                self._not_python.add(identity)
                return []
            found = stack_command.snapshot_native(
                cached.target, self.thread_ids(adapter, cached).recorded(native_tid),
                {"entries": True})
            runs = []
            if found is not None:
                for thread in found[1]:
                    runs.extend(mixed.python_runs(thread))
            if len(self._runs) > 64:
                self._runs.clear()
            self._runs[key] = runs
        return runs

    @staticmethod
    def locate_asyncio(cached, adapter):
        """Tell a debugger-read target where its asyncio debug offsets are
        (once found; until then each command looks again: 3.14 maps them
        when asyncio is imported)."""
        if getattr(cached, "asyncio", None):
            return
        addr = locate_asyncio(adapter)
        if addr:
            try:
                cached.target.set_asyncio(addr)
                cached.asyncio = addr
            except errors.PyframesError:
                pass

    def _info(self, cached, kind):
        py = cached.target.python
        version = py.version + (" (free-threaded build)" if py.free_threaded else "")
        major, minor, patch = api.library_version()
        return render.format_target_info([
            ("python", "CPython %s" % version),
            ("runtime", "_PyRuntime at 0x%x, found by %s" % (py.runtime_addr, cached.how)),
            ("reader", kind),
            ("cached targets", ", ".join(self.cached_readers()) or "none"),
            ("library", "libpyframes %d.%d.%d (%s)" % (
                major, minor, patch, _loader.library_path())),
        ])


class _DebuggerFront(stack_command.Front):
    """The stack command in a debugger: the selected thread by default,
    the debugger's thread labels, --native, the core-file note."""

    def __init__(self, session, adapter, cached, kind):
        self.session, self.adapter, self.cached, self.kind = session, adapter, cached, kind
        self.debugger = adapter.debugger_name

    def label(self, native_tid):
        return ask(self.adapter.debugger_thread_label, native_tid)

    def process_id(self, target):
        return target.pid or ask(self.adapter.pid)

    def _rows(self, threads):
        return render.thread_table(threads, self.label)

    def thread_ids(self):
        return self.session.thread_ids(self.adapter, self.cached)

    def default_threads(self, target, walk):
        wanted = ask(self.adapter.selected_native_tid)
        if wanted is None:
            raise CommandError(errors.NO_SELECTED_THREAD)
        ids = self.thread_ids()
        found = stack_command.select_thread(target, wanted, by_python_id=False, ids=ids, **walk)
        if not found[1]:
            raise CommandError(errors.no_python_thread(
                wanted, None, self.label(wanted), self._rows(ids.fill(found[2])),
                self.debugger, self.session.command_name))
        return found[0], found[1]

    def no_threads(self):
        raise CommandError(errors.NO_THREADS)

    def thread_not_found(self, wanted, rows):
        raise CommandError(errors.no_python_thread(
            wanted, "--thread %d" % wanted, None, self._rows(rows), self.debugger,
            self.session.command_name))

    def source(self):
        return self.session.source_for(self.adapter, self.kind)

    def before_tasks(self):
        if self.kind == "debugger":
            self.session.locate_asyncio(self.cached, self.adapter)

    def native(self, snapshot, threads, options):
        return self.session.native(snapshot, threads, self.adapter, options, self.kind)

    def note(self, threads, snapshot):
        return self.session.core_note(self.adapter, threads, snapshot)

    def describe(self, snapshot, threads):
        # the PID reader was chosen for this command: a live local process
        return describe_threads(self.adapter, snapshot, threads,
                                live_local=True if self.kind == "pid" else None)


def _as_tuple(value):
    if isinstance(value, tuple):
        return value
    return (value,)
