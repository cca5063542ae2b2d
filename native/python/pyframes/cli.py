"""Command line: ``python3 -m pyframes dump PID``, ``sample PID``,
``render FILE`` and ``version``."""

import argparse
import os
import sys

from . import __version__, _loader, errors, target as api
from .errors import CommandError, PyframesError, UsageError
from .escaping import escape_lines
from .options import (add_sample_options, add_stack_options, number_in, positive_int,
                      sample_cache, sample_threads)
from .render import process_command, process_source
from . import cores, render, report, sampling, stack_command, tids, waits

PROG = "pyframes"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser():
    parser = _Parser(prog=PROG, description=(
        "Show the Python stacks of a running CPython 3.8-3.15 "
        "process."))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    dump = sub.add_parser("dump", help="print the Python stack of every thread",
                          description="Print the Python stack of every thread "
                          "of a live process or a core file (innermost frame first); "
                          "of several, each under a header naming it (with --group: "
                          "the threads with the same stack in any of them once; "
                          "across core files, the crashes that are the same once). "
                          "A number is a PID, anything else a core file (./1234 "
                          "for a core file called 1234): an ELF core or lldb's "
                          "minidump, plain or compressed with zstd, xz, lz4 or gzip.")
    dump.add_argument("target", type=_pid_or_core, metavar="PID|CORE", nargs="+")
    fmt = dump.add_mutually_exclusive_group()
    add_stack_options(dump, json_group=fmt)
    fmt.add_argument("--collapsed", action="store_true",
                     help="collapsed stacks, one line per thread, for flame "
                     "graph tools")
    dump.add_argument("--runtime-addr", type=positive_int, metavar="ADDR",
                      help="address of _PyRuntime (default: found from the "
                      "process's mappings)")
    dump.add_argument("--addresses", action="store_true",
                      help="show frame and code object addresses")
    dump.add_argument("--exe", metavar="PATH",
                      help="a core's executable, when it is not where the core "
                      "says (default: the file the core names)")
    dump.add_argument("--sysroot", metavar="DIR",
                      help="the directory a core's files are under: a copy of the "
                      "machine or container it was written on (its executable, "
                      "libraries and source files)")
    dump.add_argument("--native", action="store_true",
                      help="on a core: each thread's native stack with its Python "
                      "frames placed in it (needs a libpyframes built with libdw)")
    sample = sub.add_parser(
        "sample", help="sample the Python stacks of a running process",
        description="Sample a running process without stopping it and print "
        "the functions it spends its time in; write the profile as collapsed "
        "stacks, JSON or a flame graph.")
    sample.add_argument("pid", type=positive_int, metavar="PID")
    sample.add_argument("--duration", type=_seconds, default=10.0, metavar="S",
                        help="sample for S seconds (default 10; Ctrl-C stops "
                        "early and keeps the profile)")
    sample.add_argument("--rate", type=_rate, default=1000.0, metavar="HZ",
                        help="samples per second on average, each wait drawn "
                        "between half and one and a half times 1/HZ (default "
                        "1000; 0: as fast as possible)")
    add_sample_options(sample)
    report.add_output_options(sample)
    sample.add_argument("--runtime-addr", type=positive_int, metavar="ADDR",
                        help="address of _PyRuntime (default: found from the "
                        "process's mappings)")
    render = sub.add_parser(
        "render", help="write the outputs of a profile kept with 'sample --raw'",
        description="Read a profile kept with 'sample --raw FILE' and write "
        "any of sample's outputs from it (the same bytes as sampling straight "
        "to them), then print its summary.")
    render.add_argument("raw_file", metavar="FILE",
                        help="a raw profile written by 'sample --raw' or py-sample --raw")
    report.add_output_options(render)
    sub.add_parser("version", help="print the package and library versions")
    return parser


def _pid_or_core(text):
    """argparse type of dump's targets: a number is a PID (decimal or
    0x-hex), anything else a core file's path."""
    word = text.strip()
    if word.isdigit() or word.lower().startswith("0x"):
        return positive_int(word)
    return Core(text)


class Core(str):
    """A core file's path among dump's targets (a PID is an int)."""


_seconds = number_in("a number of seconds", 0, 86400, above_low=True)
_rate = number_in("a rate in Hz", 0, 1000000)


def _sample(args, out):
    report.base_profile(args)  # a --diff file that cannot be read fails first
    with api.attach(args.pid, runtime_addr=args.runtime_addr or 0,
                    cache=sample_cache(args)) as target:
        sampler = sampling.Sampler(target, threads=sample_threads(args),
                                   record=report.wants_raw(args), mode=args.mode,
                                   running=True)
        progress = report.progress_line(sys.stderr) if sys.stderr.isatty() else None
        try:
            profile = sampling.run(sampler, duration=args.duration, rate=args.rate,
                                   progress=progress)
            if progress is not None:
                progress.done()
            report.write_outputs(profile, args, title=report.process_title(
        args.pid, process_command(args.pid)))
            out.write(report.summary(profile, sampler, cache=target.cache,
                                     top=args.top, base=report.base_profile(args),
                                     stats=args.stats))
        finally:
            sampler.close()
    out.flush()
    if sampler.exited:
        return _fail(errors.process_exited(args.pid, "it was being sampled: the profile "
                                           "holds the %d samples taken before"
                                           % profile.samples), 1)
    return 0


def _render(args, out):
    from . import rawprofile
    profile, title = rawprofile.load(args.raw_file)
    report.write_outputs(profile, args, title=title)
    if args.by == "function":
        profile = profile.by_function()
    out.write(report.summary(profile, None, top=args.top, base=report.base_profile(args),
                             stats=args.stats))
    out.flush()
    return 0


class _CommandLineFront(stack_command.Front):
    """The stack command on the command line: every thread by default, the
    source files as the process sees them."""

    def __init__(self, pid):
        self.pid = pid
        self._ids = None

    def source(self):
        return process_source(self.pid)

    def thread_ids(self):
        """The threads' ids in our /proc (NSpid: the process may run in a
        PID namespace of its own, a container's)."""
        if self._ids is None:
            self._ids = tids.of_process(self.pid)
        return self._ids

    def runs_while_read(self):
        """A live process runs while it is read, unless it is stopped
        (SIGSTOP, a debugger's stop)."""
        return waits.process_runs(self.pid) is not False

    def describe(self, snapshot, threads):
        """Each thread's OS name (when the target gave none), native wait
        and on_cpu from /proc/PID/task/TID (TID: its OS id here)."""
        gils = waits.gil_ranges(snapshot)
        return [waits.describe(t, waits.proc_facts(self.pid, tids.os_tid(t)), gils=gils)
                if tids.os_tid(t) else t for t in threads]


class _CoreFront(stack_command.Front):
    """The stack command on a core file: every thread by default, the
    source files under the sysroot first; each thread's native wait from its
    registers (the system call it was in), the thread that received the
    signal named in its header, a summary line first and, after the stacks,
    what the core lacks (cut short, files missing or of another build)."""

    def __init__(self, target, path, sysroot=None):
        self.core = target.core
        self.path = path
        self.sysroot = sysroot
        self.signal = self.core.signal

    def source(self):
        return render.root_source(self.sysroot)

    def describe(self, snapshot, threads):
        return cores.describe_threads(self.core, snapshot, threads)

    def native(self, snapshot, threads, options):
        return cores.native_text(self.core, self.path, snapshot, threads, options,
                                 None if options.no_source else self.source())

    def preface(self):
        return cores.summary_line(self.core, self.path) + "\n\n"

    def note(self, threads, snapshot):
        return cores.notes(self.core, threads, snapshot)

    def json_fields(self):
        return {"core": cores.core_json(self.core, self.path)}


def _open(args):
    """The target of PID.  What the library refuses it names, in the words
    of every front end: ``unsupported CPython 3.7.17 (pyframes reads
    CPython 3.8-3.15)``, ``process 12 (sleep) is not a Python process``."""
    return api.attach(args.pid, runtime_addr=args.runtime_addr or 0)


def _open_core(path, args):
    """The target of the core file at path, and its front end; a
    CommandError in the library's words when none can be opened."""
    if not os.path.lexists(path):
        raise CommandError(errors.no_core_file(path))
    try:
        target = api.open_core(path, executable=args.exe, sysroot=args.sysroot,
                               runtime_addr=args.runtime_addr or 0)
    except PyframesError as exc:
        raise CommandError(errors.core_refused(path, exc))
    return target, _CoreFront(target, path, args.sysroot)


def _in_core(target, front, fn):
    """fn(target, front) on a core's target, closed after: a read the core
    cannot serve fails naming the core, with its hint (how to write a
    whole one)."""
    with target:
        try:
            return fn(target, front)
        except errors.ReadFault as exc:
            raise CommandError(errors.core_refused(
                front.path, errors.read_fault(exc, errors.CORE_HINT)))


def _dump_core(args, out, path):
    target, front = _open_core(path, args)
    out.write(_in_core(target, front, lambda t, f: stack_command.run(t, args, f)))
    out.flush()
    return 0


def _dump(args, out):
    cores_given = [t for t in args.target if isinstance(t, Core)]
    if (args.exe or args.sysroot) and not cores_given:
        return _fail("--exe and --sysroot are for core files: give one (see '%s --help')"
                     % PROG, 2)
    if args.native and len(cores_given) != len(args.target):
        return _fail("--native needs a debugger on a live process (gdb -p PID, then "
                     "py-bt-fast --native); on a core file the library unwinds it", 2)
    if len(args.target) > 1:
        return _dump_many(args, out)
    if cores_given:
        return _dump_core(args, out, cores_given[0])
    args.pid = args.target[0]
    with _open(args) as target:
        try:
            text = stack_command.run(target, args, _CommandLineFront(args.pid))
        except PyframesError as exc:
            if sampling.process_gone(args.pid):
                return _fail(errors.process_exited(args.pid, "it was being read", exc), 1)
            raise
    out.write(text)
    out.flush()
    return 0


def _dump_many(args, out):
    """dump PID|CORE PID|CORE ...: each process or core in turn
    (stack_command.run_processes); one that cannot be read has its error in
    its place, and the exit status is 1.  With --group across core files
    only: the crashes that are the same once."""
    if args.runtime_addr:
        return _fail("--runtime-addr is one process's _PyRuntime: give one PID or core "
                     "(see '%s --help')" % PROG, 2)
    all_cores = all(isinstance(t, Core) for t in args.target)
    if args.group and not all_cores and any(isinstance(t, Core) for t in args.target):
        return _fail("--group folds the threads of processes or the crashes of core "
                     "files: give PIDs only or core files only (see '%s --help')" % PROG, 2)

    def within(pid):
        def body(fn):
            with api.attach(pid) as target:
                try:
                    return fn(target, _CommandLineFront(pid))
                except PyframesError as exc:
                    if sampling.process_gone(pid):
                        raise CommandError(errors.process_exited(pid, "it was being read", exc))
                    raise
        return body

    def within_core(target, front):
        return lambda fn: _in_core(target, front, fn)

    def refused(exc):
        def body(fn):
            raise exc
        return body

    def each():
        for t in args.target:
            if not isinstance(t, Core):
                yield t, process_command(t), None, within(t)
                continue
            try:  # opened here: the header names the core's process and command
                target, front = _open_core(t, args)
            except CommandError as exc:
                yield None, None, str(t), refused(exc)
                continue
            core = target.core
            yield (core.pid, core.command and render.escape(core.command), str(t),
                   within_core(target, front))

    text, failed = stack_command.run_processes(each(), args, lambda pid, exc: str(exc),
                                               crashes=all_cores)
    out.write(text)
    out.flush()
    if failed:
        what = "core files" if all_cores else "processes" if not any(
            isinstance(t, Core) for t in args.target) else "processes and core files"
        return _fail("%d of %d %s could not be read" % (failed, len(args.target), what), 1)
    return 0


def _version(out):
    out.write("pyframes %s (%s)\n" % (__version__, os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    major, minor, patch = _loader.library_version()
    out.write("libpyframes %d.%d.%d (%s)\n" % (major, minor, patch,
                                              _loader.library_path()))
    out.flush()
    return 0


class _Guarded(object):
    """stdout as the commands write it, each write escaped line by line
    (escaping.escape_lines): the last guard against target text."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        return self.stream.write(escape_lines(text))

    def flush(self):
        self.stream.flush()


def _fail(message, code):
    sys.stderr.write("%s: error: %s\n" % (PROG, escape_lines(message)))
    sys.stderr.flush()
    return code


def main(argv=None):
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as exc:
        return _fail("%s (see '%s --help')" % (exc, PROG), 2)
    out = sys.stdout
    try:
        out.reconfigure(errors="backslashreplace")
    except (AttributeError, ValueError):
        pass
    out = _Guarded(out)
    try:
        if args.command == "version":
            return _version(out)
        if args.command == "sample":
            return _sample(args, out)
        if args.command == "render":
            return _render(args, out)
        return _dump(args, out)
    except UsageError as exc:
        # options that cannot go together, a mode this target cannot give
        return _fail(str(exc), 2)
    except (PyframesError, CommandError) as exc:
        return _fail(str(exc), 1)
    except BrokenPipeError:
        # The reader went away (e.g. "| head"): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 1
    except KeyboardInterrupt:
        return _fail("interrupted", 130)


if __name__ == "__main__":
    sys.exit(main())
