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
from . import report, sampling, stack_command, tids, waits

PROG = "pyframes"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser():
    parser = _Parser(prog=PROG, description=(
        "Show the Python stacks of a running CPython 3.11-3.15 "
        "process."))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    dump = sub.add_parser("dump", help="print the Python stack of every thread",
                          description="Print the Python stack of every thread "
                          "of a live process (innermost frame first); of several "
                          "processes, each under a header naming it (with --group: "
                          "the threads with the same stack in any of them once).")
    dump.add_argument("pid", type=positive_int, metavar="PID", nargs="+")
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


def _open(args):
    """The target of PID.  What the library refuses it names, in the words
    of every front end: ``unsupported CPython 3.10.13 (pyframes reads
    CPython 3.11-3.15)``, ``process 12 (sleep) is not a Python process``."""
    return api.attach(args.pid, runtime_addr=args.runtime_addr or 0)


def _dump(args, out):
    if len(args.pid) > 1:
        return _dump_many(args, out)
    args.pid = args.pid[0]
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
    """dump PID PID ...: each process in turn (stack_command.run_processes);
    one that cannot be read has its error in its place, and the exit status
    is 1."""
    if args.runtime_addr:
        return _fail("--runtime-addr is one process's _PyRuntime: give one PID "
                     "(see '%s --help')" % PROG, 2)

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

    text, failed = stack_command.run_processes(
        ((pid, process_command(pid), None, within(pid)) for pid in args.pid), args,
        lambda pid, exc: str(exc))
    out.write(text)
    out.flush()
    if failed:
        return _fail("%d of %d processes could not be read" % (failed, len(args.pid)), 1)
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
