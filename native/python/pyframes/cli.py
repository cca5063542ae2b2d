"""Command line: ``python3 -m pyframes dump PID``, ``sample PID`` and
``version``."""

import argparse
import os
import sys

from . import __version__, _loader, errors, target as api
from .errors import PyframesError, UsageError
from .escaping import escape_lines
from .options import add_stack_options, positive_int
from .render import format_collapsed, format_json, format_text, process_source
from .session import select_thread
from . import taskview
from . import report, sampling

PROG = "pyframes"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser():
    parser = _Parser(prog=PROG, description=(
        "Show the Python stacks of a running CPython 3.13/3.14/3.15 "
        "process."))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    dump = sub.add_parser("dump", help="print the Python stack of every thread",
                          description="Print the Python stack of every thread "
                          "of a live process (innermost frame first).")
    dump.add_argument("pid", type=positive_int, metavar="PID")
    fmt = dump.add_mutually_exclusive_group()
    add_stack_options(dump, json_group=fmt)
    fmt.add_argument("--collapsed", action="store_true",
                     help="collapsed stacks, one line per thread, for flame "
                     "graph tools")
    dump.add_argument("--max-depth", type=positive_int, metavar="N",
                      help="read at most N frames per thread")
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
                        help="samples per second (default 1000; 0: as fast as "
                        "possible)")
    sample.add_argument("--all", action="store_true",
                        help="every thread, each its own root (default: the "
                        "main thread)")
    cache = sample.add_mutually_exclusive_group()
    cache.add_argument("--no-cache", action="store_true",
                       help="do not use the CPython 3.15 frame cache")
    cache.add_argument("--read-only", action="store_true",
                       help="never write to the process (the 3.15 frame cache "
                       "writes one word per thread state)")
    report.add_output_options(sample)
    sample.add_argument("--runtime-addr", type=positive_int, metavar="ADDR",
                        help="address of _PyRuntime (default: found from the "
                        "process's mappings)")
    sub.add_parser("version", help="print the package and library versions")
    return parser


def _seconds(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number of seconds" % text)
    if not 0 < value <= 86400:
        raise argparse.ArgumentTypeError("%r must be more than 0 and at most 86400" % text)
    return value


def _rate(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a rate in Hz" % text)
    if not 0 <= value <= 1000000:
        raise argparse.ArgumentTypeError("%r must be between 0 and 1000000" % text)
    return value


def _sample(args, out):
    cache = False if args.no_cache else ("read-only" if args.read_only else True)
    with api.attach(args.pid, runtime_addr=args.runtime_addr or 0, cache=cache) as target:
        sampler = sampling.Sampler(target, threads="all" if args.all else "main")
        progress = report.progress_line(sys.stderr) if sys.stderr.isatty() else None
        try:
            profile = sampling.run(sampler, duration=args.duration, rate=args.rate,
                                   progress=progress)
            if progress is not None:
                progress.done()
            report.write_outputs(profile, args, title="pid %d" % args.pid)
            out.write(report.summary(profile, sampler, cache=target.cache,
                                     top=args.top))
        finally:
            sampler.close()
    out.flush()
    if sampler.exited:
        return _fail(errors.process_exited(args.pid, "it was being sampled: the profile "
                                           "holds the %d samples taken before"
                                           % profile.samples), 1)
    return 0


def _dump(args, out):

    with api.attach(args.pid, runtime_addr=args.runtime_addr or 0,
                    max_depth=args.max_depth) as target:
        # text keeps --limit frames per thread and has the rest counted
        walk = {} if args.json or args.collapsed else {"limit": args.limit}
        tasks = args.tasks or args.table
        # --tasks alone: the tasks only (the stacks too with --all, --thread
        # or --json)
        stacks = not tasks or args.all or args.thread is not None or args.json
        if tasks:
            walk["tasks"] = True
            if not stacks:
                walk["limit"] = 1
        try:
            if args.thread is None:
                snap = target.snapshot(**walk)
            else:
                snap, threads, _ = select_thread(target, args.thread, **walk)
        except PyframesError as exc:
            if sampling.process_gone(args.pid):
                return _fail(errors.process_exited(args.pid, "it was being read", exc), 1)
            raise
        if args.thread is not None and not threads:
            raise errors.NoSuchThread(
                errors.PYF_ENOTHREAD, "no Python thread has native thread "
                "id or Python thread id %d" % args.thread)
    if args.json:
        out.write(format_json(snap) + "\n")
        out.flush()
        return 0
    if tasks and not stacks and taskview.tasks_unavailable(snap):
        return _fail(taskview.tasks_unavailable(snap), 1)
    if not stacks:
        pass
    elif args.collapsed:
        for line in format_collapsed(snap):
            out.write(line + "\n")
    else:
        source = None if args.no_source else process_source(args.pid)
        for line in format_text(snap, limit=args.limit,
                                show_source=not args.no_source, source=source,
                                addresses=args.addresses):
            out.write(line + "\n")
    if tasks:
        if stacks:
            out.write("\n")
        for line in taskview.format_tasks(snap, table=args.table):
            out.write(line + "\n")
    out.flush()
    return 0


def _version(out):
    out.write("pyframes %s\n" % __version__)
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
        return _dump(args, out)
    except PyframesError as exc:
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
