"""One option vocabulary for every front end.

`python3 -m pyframes dump`, `py-bt-fast` (gdb) and `pystack` (lldb) share
the options defined by :func:`add_stack_options`: the same option means the
same thing, with the same type, everywhere.  The debugger commands add
``--reader``, ``--native``, ``--info`` and ``N`` (``--limit N``, as in
``bt N``); the CLI adds what only a PID needs.  Parsing
never exits or prints: help and errors come back as exceptions.
"""

import argparse
import shlex

from .errors import UsageError
from .values import DEFAULTS

__all__ = [
    "HelpRequested",
    "non_negative_int",
    "positive_int",
    "number_in",
    "new_parser",
    "add_stack_options",
    "build_parser",
    "add_processes_option",
    "add_sample_options",
    "sample_threads",
    "sample_cache",
    "SAMPLE_MODES",
    "completions",
    "parse_arguments",
    "describe",
    "short_description",
]


def add_stack_options(parser, json_group=None):
    """The options every front end shares.  json_group: a mutually exclusive
    group that --json joins (the CLI's output formats), else the parser."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "-a", "--all", action="store_true",
        help="show every Python thread of every interpreter")
    which.add_argument(
        "-t", "--thread", metavar="N", type=positive_int,
        help="show the thread whose native thread id (LWP/tid, as "
             "threading.get_native_id()) or Python thread id (as "
             "threading.get_ident(); decimal or 0x-hex) is N")
    parser.add_argument(
        "--limit", metavar="N", type=positive_int,
        help="show at most N frames per thread, innermost first; the rest "
             "are counted (\"... K more frames\", \"more_frames\" in JSON)")
    parser.add_argument(
        "--max-depth", metavar="N", type=positive_int,
        help="walk at most N frames per thread (a deeper stack is shown "
             "incomplete)")
    (json_group or parser).add_argument(
        "--json", action="store_true",
        help="print one JSON document (see docs/json-schema.md)")
    parser.add_argument(
        "--no-source", action="store_true",
        help="do not print source lines under the frames")
    parser.add_argument(
        "--group", action="store_true",
        help="show the threads with the same stack once, with their count, "
             "names, native ids and the debugger's labels (with --locks the "
             "same locks too; with --json also a \"groups\" list)")
    parser.add_argument(
        "--tasks", action="store_true",
        help="the asyncio tasks (CPython 3.14+) as a tree: each task, its "
             "coroutine stack, what it awaits there and the tasks it awaits (with "
             "--locals each coroutine frame's variables; with --all or --thread "
             "the thread stacks first; with --json a \"tasks\" list)")
    parser.add_argument(
        "--table", action="store_true",
        help="the asyncio tasks as a table, one row per task and awaiter, "
             "with the columns of `python -m asyncio ps` (stacks innermost "
             "first; implies --tasks)")
    parser.add_argument(
        "--locks", action="store_true",
        help="the locks each frame holds (inside `with lock:`, or past an "
             "acquire() still in effect), the lock or object (Condition, Event, "
             "Queue, thread join, Future...) each thread waits for and who holds "
             "it, each named as the code names it (a global, self._lock, "
             "locks[\"k\"]), and every deadlock (cycle of waits), printed first, "
             "then the possible cycles with their evidence (with --json "
             "\"deadlocks\", \"possible_deadlocks\", \"waits_for\" per thread, "
             "\"holds\" and \"acquired\" per frame)")
    add_value_options(parser)
    return parser


#: The value limits: (option, Target.frame_locals keyword, what it bounds);
#: their defaults are the library's (values.DEFAULTS)
VALUE_LIMITS = (
    ("--max-string", "max_string", "characters of a str (bytes of a bytes) shown"),
    ("--max-items", "max_items", "items of a container shown"),
    ("--max-value-depth", "max_depth", "nesting shown below a variable"),
    ("--max-objects", "max_objects", "objects read per frame"),
    ("--max-bytes", "max_bytes", "bytes of memory read per frame"),
)


def add_value_options(parser):
    """--locals and the limits of the values it shows."""
    parser.add_argument(
        "--locals", action="store_true",
        help="under each frame its arguments and local variables, one "
             "\"name = value\" per line, arguments first, as repr() in the "
             "target shows them (with --json a \"locals\" list per frame)")
    add_value_limits(parser, "with --locals: ")


#: --attrs: an instance's attributes after its repr(), one level down.
ATTRS_HELP = ("an instance of a class shows its attributes after its repr(), as "
              "vars() gives them: <mod.Customer object at 0x...> {'name': 'Ann', ...} "
              "(one level down: the instances among them show their repr() only; with "
              "--json an \"attributes\" object per variable)")


def add_value_limits(parser, prefix=""):
    """The limits of the values shown (--max-string N, ...) and --attrs."""
    parser.add_argument("--attrs", action="store_true", help=prefix + ATTRS_HELP)
    for option, key, what in VALUE_LIMITS:
        parser.add_argument(
            option, metavar="N", type=positive_int,
            help="%sat most N %s (default %s); a value cut says so"
                 % (prefix, what, format(DEFAULTS[key], ",")))


def build_values_parser(command_name, expression=False, description=None):
    """The option parser of a debugger command that prints values of the
    selected frame (py-locals; with ``expression``, py-print EXPR): the
    value limits, and EXPR (the rest of the line, as ``expression``)."""
    parser = new_parser(command_name, description)
    add_value_limits(parser)
    if expression:
        parser.add_argument("expression", metavar="EXPR", nargs="?",
                            help="a local or global name, then any chain of .attr, "
                                 "[int] and ['key'] (the rest of the line, as typed)")
    return parser


def parse_values_command(parser, argument_string):
    """parse_arguments for a parser of build_values_parser: the options
    come first; with an EXPR the rest of the line is it, quotes and all
    (``py-print d['k']``), in ``expression`` (UsageError when missing)."""
    text = (argument_string or "").strip()
    wants = "expression" in _positionals(parser)
    if not wants:
        return parse_arguments(parser, text)
    words = []
    flags = {o for a in parser._actions if a.nargs == 0 for o in a.option_strings}
    while text.startswith("-"):
        word, _, text = text.partition(" ")
        words.append(word)
        text = text.lstrip()
        if "=" not in word and word not in flags and text:
            value, _, text = text.partition(" ")
            words.append(value)
            text = text.lstrip()
    ns = parse_arguments(parser, " ".join(shlex.quote(w) for w in words))
    if not text:
        raise UsageError("%s%s: error: the expression to print is missing"
                         % (parser.format_usage(), parser.prog))
    ns.expression = text
    return ns


def value_limits(options):
    """The Target.frame_locals limits the options give (None: default),
    and "attrs" (--attrs)."""
    limits = {key: getattr(options, option[2:].replace("-", "_"), None)
              for option, key, _ in VALUE_LIMITS}
    limits["attrs"] = bool(getattr(options, "attrs", False))
    return limits


class HelpRequested(Exception):
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
            raise HelpRequested(text)
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


def number_in(what, low, high, above_low=False):
    """argparse type: a number (float) from low to high, or above low with
    above_low; what it is not, else, is ``what`` ("a rate in Hz")."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError("%r is not %s" % (text, what))
        if above_low:
            if not low < value <= high:
                raise argparse.ArgumentTypeError(
                    "%r must be more than %s and at most %s" % (text, low, high))
        elif not low <= value <= high:
            raise argparse.ArgumentTypeError(
                "%r must be between %s and %s" % (text, low, high))
        return value
    return parse


def new_parser(command_name, description=None):
    """An empty parser of a debugger command: it never exits or prints,
    and takes no abbreviated option."""
    kwargs = dict(
        prog=command_name,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=True,
    )
    try:
        return _Parser(exit_on_error=False, allow_abbrev=False, **kwargs)
    except TypeError:  # Python < 3.9
        return _Parser(allow_abbrev=False, **kwargs)


def build_parser(command_name, description=None):
    """The option parser of the debugger commands (py-bt-fast, pystack)."""
    parser = new_parser(command_name, description)
    add_stack_options(parser)
    parser.add_argument(
        "count", nargs="?", metavar="N", type=positive_int,
        help="the same as --limit N (as in `bt N`)")
    parser.add_argument(
        "--reader", choices=("auto", "pid", "debugger"), default="auto",
        help="how memory is read: 'pid' reads the live local process "
             "directly, 'debugger' reads through the debugger (needed for "
             "core files and remote targets), 'auto' (default) picks 'pid' "
             "when the process is live and local")
    parser.add_argument(
        "--native", action="store_true",
        help="the debugger's native backtrace with the Python frames placed "
             "under the eval-loop frames that run them (with --json: native "
             "and Python frames in one list, each with its \"kind\")")
    parser.add_argument(
        "--info", action="store_true",
        help="instead of a stack, print what pyframes knows of the target: "
             "CPython version, _PyRuntime and how it was found, the reader")
    return parser


def add_processes_option(parser, option, what):
    """The option (gdb: --all-inferiors, lldb: --all-targets) of the
    command in every process of the debugger, each ``what`` ("inferior")
    in turn; ``all_processes``."""
    parser.add_argument(
        option, dest="all_processes", action="store_true",
        help="every %s with a live process or a core file in turn, each under a "
             "header naming it (--all in each unless --thread; with --json a "
             "\"processes\" list; with --group the threads with the same stack in "
             "any of them once)" % what)


#: What a sample counts (``--mode``), as CPython's profiler names them:
#: every thread read (wall clock), threads on a CPU, the thread holding
#: the GIL.
SAMPLE_MODES = ("wall", "cpu", "gil")


def add_sample_options(parser):
    """The options of a sampling profile that ``pyframes sample`` and the
    debuggers' ``py-sample`` share: which threads are read (every thread
    by default, as py-spy; ``--main``), what a sample counts (``--mode``)
    and the CPython 3.15 frame cache (``--no-cache``, ``--read-only``).
    The outputs and the summary's options are report.add_output_options'."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--main", action="store_true",
        help="read only the main thread (default: every thread, each under "
             "its own root, labelled by its name)")
    which.add_argument(
        "--all", action="store_true",
        help="every thread: the default (kept for the command lines that "
             "give it)")
    parser.add_argument(
        "--mode", choices=SAMPLE_MODES, default="wall",
        help="which threads a sample counts: wall, every thread read (the "
        "default); cpu, threads running on a CPU (a live local process); gil, "
        "the thread holding the GIL (CPython 3.13+ with a GIL)")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--no-cache", action="store_true",
                       help="do not use the CPython 3.15 frame cache")
    cache.add_argument("--read-only", action="store_true",
                       help="never write to the process (the 3.15 frame cache "
                       "writes one word per thread state)")
    return parser


def sample_threads(options):
    """The threads a profile reads (sampling.Sampler's ``threads``):
    "main" with --main, else "all"."""
    return "main" if getattr(options, "main", False) else "all"


def sample_cache(options):
    """The frame cache's mode the options ask for (Target.set_cache):
    False with --no-cache, "read-only" with --read-only, else True."""
    if options.no_cache:
        return False
    return "read-only" if options.read_only else True


def completions(text, extra=()):
    """Completion of the arguments typed so far: (the word being typed, the
    option names or option values that extend it), from the parser itself
    (and the options ``extra``: gdb's --all-inferiors)."""
    parts = text.split()
    token = "" if not parts or text[-1:].isspace() else parts[-1]
    before = parts[:-1] if token else parts
    previous = before[-1] if before else ""
    actions = build_parser("")._actions
    for action in actions:
        if previous in action.option_strings and action.choices:
            return token, [c for c in action.choices if c.startswith(token)]
    words = [o for a in actions for o in a.option_strings if o.startswith("--")]
    words.extend(extra)
    return token, [w for w in words if w.startswith(token)]


#: Command lines parsed, kept per parser (a debugger command repeated with
#: the same arguments is not parsed again).
_PARSED_MAX = 32


def parse_arguments(parser, argument_string):
    """Parse a raw command-line string.

    Returns the namespace (a new one each time: the caller may change it),
    or raises :class:`UsageError`; a help request raises ``HelpRequested``
    whose ``text`` is the help.  Parsing depends on nothing but the parser
    and the string: the namespace of a string parsed before by the same
    parser (with the same options: one may be added later) is copied.
    """
    parsed = parser.__dict__.setdefault("_pyf_parsed", {})
    key = (argument_string or "", len(parser._actions))
    ns = parsed.get(key)
    if ns is None:
        ns = _parse(parser, argument_string)
        if len(parsed) >= _PARSED_MAX:
            parsed.clear()
        parsed[key] = ns
    return argparse.Namespace(**vars(ns))


def _parse(parser, argument_string):
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
    count = getattr(ns, "count", None) if "count" in _positionals(parser) else None
    if count is not None:
        # `py-bt-fast 5`, as `bt 5`: --limit 5
        if ns.limit is not None and ns.limit != count:
            raise UsageError("%s%s: error: N and --limit N name two limits (%d, %d): "
                             "give one" % (parser.format_usage(), parser.prog, count,
                                           ns.limit))
        ns.limit = count
    return ns


def _positionals(parser):
    return [a.dest for a in parser._actions if not a.option_strings]


_LONG_HELP = """\
Print the Python stack of the selected thread, fast and without debug symbols.

Reads CPython 3.8-3.15 (3.13+ through _Py_DebugOffsets, 3.8-3.12 by
built-in layouts): works on live processes, core files and remote targets,
with or without the python -dbg packages.  Without options it shows the
thread selected in {dbg}.

  -a, --all        every Python thread of every interpreter
  -t, --thread N   the thread whose native id (OS tid, as in `{threads}`) or
                   Python thread id (threading.get_ident()) is N
  N, --limit N     at most N frames per thread, innermost first (the rest
                   counted: "... K more frames"); `{cmd} 5` as `bt 5`
  --max-depth N    walk at most N frames per thread (deeper: incomplete)
  --json           one JSON document (same schema as `python3 -m pyframes dump --json`)
  --no-source      no source lines
  --group          threads with the same stack once: their count, names,
                   native ids and {dbg} labels over the one stack (with
                   --locks the same locks too; with --json a "groups" list)
  --tasks          the asyncio tasks (CPython 3.14+) as a tree: each task,
                   its coroutine stack, what it awaits there (asyncio.sleep,
                   an Event, a Queue, a Lock, a task, a future) and the
                   tasks it awaits (with --locals each coroutine frame's
                   variables); with --all or --thread the thread stacks
                   first, each header naming the task its thread runs; with
                   --json a "tasks" list; py-task selects a task's frames
  --table          the asyncio tasks as the table of `python -m asyncio ps`
                   (coroutine stack, awaiter chain: innermost first;
                   implies --tasks)
  --locals         under each frame its arguments and locals, one
                   "name = value" per line, as repr() in the target shows
                   them (user classes: <module.Class object at 0x...>)
  --attrs          with --locals: an instance shows its attributes after
                   its repr(), as vars() gives them (one level down)
  --max-string N, --max-items N, --max-value-depth N, --max-objects N,
  --max-bytes N    the limits of --locals (defaults 200 chars, 100 items,
                   depth 6, 10,000 objects and 4 MiB read per frame); a cut
                   value says so: 'abc'...<1,234 more chars>,
                   [1, 2, ...<12,345 more items>], [...<too deep: 3 items>]
  --locks          under each frame the locks it holds (`with lock:`, an
                   acquire() still in effect), under a blocked thread the
                   lock it waits for and its holder, each lock named as the
                   code names it; the deadlocks (cycles of waits) first:
                   `deadlock: "A" waits for inventory_lock <_thread.lock at
                   0x...> held by "B", which ...`, then the possible cycles
                   (a holder the frames cannot prove), with their evidence
  --native         {dbg}'s own backtrace with the Python frames placed under
                   the eval-loop frames that run them (no debug info needed)
  --reader MODE    auto (default): read a live local process directly, else
                   through {dbg}; pid: force direct reads; debugger: force
                   reads through {dbg} (core files, remote targets)
  --info           what pyframes knows of the target (version, _PyRuntime,
                   how it was found, the reader) instead of a stack
{processes}
Example: {cmd} --all --no-source

`pyframes-bt on|off` switches the Python frames in {dbg}'s own bt.
"""

_THREAD_COMMANDS = {"gdb": "info threads", "lldb": "thread list"}

#: The option of the command in every process, per debugger, and its help.
PROCESSES_OPTION = {"gdb": ("--all-inferiors", "inferior"),
                    "lldb": ("--all-targets", "target")}
_PROCESSES_HELP = """\
  {option:<16} every {what} (live or a core) in turn, each under a
                   header naming it, --all in each (with --json a
                   "processes" list; with --group the same stack in any of
                   them once)
"""


def describe(command_name, debugger_name):
    """The long help text of the command in one debugger."""
    option = PROCESSES_OPTION.get(debugger_name)
    return _LONG_HELP.format(
        cmd=command_name, dbg=debugger_name,
        processes=_PROCESSES_HELP.format(option=option[0], what=option[1]) if option else "",
        threads=_THREAD_COMMANDS.get(debugger_name, "the thread list"))


def short_description(debugger_name):
    return _LONG_HELP.split("\n")[0]
