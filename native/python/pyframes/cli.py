"""Command line: ``python3 -m pyframes dump PID`` and ``version``."""

import argparse
import os
import sys

from . import __version__
from .command import non_negative_int, positive_int
from .errors import PyframesError
from .render import SourceReader, format_collapsed, format_json, format_text

PROG = "pyframes"


class UsageError(Exception):
    pass


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
    fmt.add_argument("--json", action="store_true",
                     help="one JSON document (see docs/json-schema.md)")
    fmt.add_argument("--collapsed", action="store_true",
                     help="collapsed stacks, one line per thread, for flame "
                     "graph tools")
    dump.add_argument("--all", action="store_true",
                      help="all threads (the default)")
    dump.add_argument("--thread", type=positive_int, metavar="TID",
                      help="only the thread with this native (OS) thread id")
    dump.add_argument("--limit", type=non_negative_int, metavar="N",
                      help="show at most N frames per thread (text output)")
    dump.add_argument("--no-source", action="store_true",
                      help="do not print source lines")
    dump.add_argument("--max-depth", type=positive_int, metavar="N",
                      help="read at most N frames per thread")
    dump.add_argument("--runtime-addr", type=positive_int, metavar="ADDR",
                      help="address of _PyRuntime (default: found from the "
                      "process's mappings)")
    dump.add_argument("--addresses", action="store_true",
                      help="show frame and code object addresses")
    sub.add_parser("version", help="print the package and library versions")
    return parser


def process_source(pid, fallback=None):
    """A source reader that looks at files as the process sees them:
    /proc/PID/root for absolute names, /proc/PID/cwd for relative ones,
    then the name itself."""
    reader = fallback or SourceReader()

    def source(filename, line):
        if not filename or filename.startswith("<"):
            return None
        if os.path.isabs(filename):
            candidates = ("/proc/%d/root%s" % (pid, filename), filename)
        else:
            candidates = (os.path.join("/proc/%d/cwd" % pid, filename),
                          filename)
        for path in candidates:
            text = reader(path, line)
            if text is not None:
                return text
        return None

    return source


def _dump(args, out):
    import pyframes
    with pyframes.attach(args.pid, runtime_addr=args.runtime_addr or 0,
                         max_depth=args.max_depth) as target:
        snap = target.snapshot(native_tid=args.thread)
    if args.json:
        out.write(format_json(snap) + "\n")
    elif args.collapsed:
        for line in format_collapsed(snap):
            out.write(line + "\n")
    else:
        source = None if args.no_source else process_source(args.pid)
        for line in format_text(snap, limit=args.limit,
                                show_source=not args.no_source, source=source,
                                addresses=args.addresses):
            out.write(line + "\n")
    out.flush()
    return 0


def _version(out):
    out.write("pyframes %s\n" % __version__)
    from . import _ffi
    major, minor, patch = _ffi.library_version()
    out.write("libpyframes %d.%d.%d (%s)\n" % (major, minor, patch,
                                              _ffi.library_path()))
    out.flush()
    return 0


def _fail(message, code):
    sys.stderr.write("%s: error: %s\n" % (PROG, message))
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
    try:
        if args.command == "version":
            return _version(out)
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
