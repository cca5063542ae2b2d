"""``py-sample`` in gdb and lldb: a sampling profile over a stopped session.

Each sample lets the inferior run for the interval, stops it and samples
every thread (or the main one); the inferior is left stopped.  The profile
lives in the session until ``--reset``, so the command typed again and again
keeps building one profile; without ``-n`` on a stopped process it adds one
sample where the process stands.  On a core file there is one sample to take,
and the summary says so.  The frame cache is on while sampling (off with
--no-cache, never writing with --read-only) and off again afterwards, so
that other commands never write to the process.
"""

import time

from . import errors, report, sampling
from .adapter import ask
from .options import new_parser, number_in, positive_int

__all__ = ["SampleCommand", "describe"]

_HELP = """\
Sample the Python stacks of the inferior: let it run, stop it, sample, again.

Each sample lets the process run for the interval, stops it and reads the
Python stack of its main thread (--all: every thread); the process is left
stopped.  Samples add up across invocations until --reset; without -n on a
stopped process one sample is taken where it stands.  A core file gives one
sample.

  -n N             take N samples (letting the process run before each)
  --interval MS    how long the process runs before each sample (default 10)
  --all            every thread, each its own root
  --collapsed FILE write the profile in flamegraph.pl's collapsed format
  --json FILE      write the profile as JSON
  --stats-json FILE  write the sampling counters as JSON
  --flamegraph FILE.svg  write an interactive flame graph
  --raw FILE       keep every sample (JSON lines; python3 -m pyframes render
                   FILE writes any output from it later)
  --speedscope FILE  write a timeline for speedscope (speedscope.app)
  --by function    one box per function (default: --by line, one per line)
  --top K          functions in the summary (default 15; 0: none)
  --reset          start a new profile
  --no-cache       do not use the CPython 3.15 frame cache
  --read-only      never write to the process (the 3.15 frame cache writes one
                   word per thread state)

Example: {cmd} -n 200 --interval 5 --flamegraph /tmp/profile.svg
"""


def describe(command_name):
    return _HELP.format(cmd=command_name)


_interval = number_in("a number of milliseconds", 0, 60000)


def build_parser(command_name):
    parser = new_parser(command_name, describe(command_name))
    parser.add_argument("-n", type=positive_int, metavar="N", dest="count",
                        help="number of samples")
    parser.add_argument("--interval", type=_interval, default=10.0, metavar="MS",
                        help="milliseconds the process runs before each sample")
    parser.add_argument("--all", action="store_true", help="every thread")
    sampling.add_mode_option(parser)
    report.add_output_options(parser)
    parser.add_argument("--reset", action="store_true", help="start a new profile")
    cache = parser.add_mutually_exclusive_group()
    cache.add_argument("--no-cache", action="store_true",
                       help="do not use the CPython 3.15 frame cache")
    cache.add_argument("--read-only", action="store_true",
                       help="never write to the process")
    return parser


class SampleCommand(object):
    """The state of ``py-sample`` in one debugger session."""

    def __init__(self, session, command_name="py-sample"):
        self.session = session
        self.command_name = command_name
        self.parser = build_parser(command_name)
        self.profile = sampling.Profile()
        self.library_time = 0.0
        self.debugger_time = 0.0
        self.threads = None

    def help_text(self):
        return self.parser.format_help()

    def run(self, argument_string, adapter, progress=None):
        """One invocation; returns the summary text."""
        return self.session.run_parsed(self.parser, argument_string, adapter,
                                       lambda options: self._run(options, adapter, progress))

    def _run(self, options, adapter, progress):
        threads = "all" if options.all else "main"
        if options.reset or (self.threads is not None and self.threads != threads) \
                or (self.profile.samples and self.profile.mode != options.mode):
            self.profile = sampling.Profile()
            self.library_time = self.debugger_time = 0.0
        self.threads = threads
        cached, _ = self.session._get_target(adapter, "auto")
        target = cached.target
        live = bool(ask(adapter.is_live))
        mode = False if options.no_cache else ("read-only" if options.read_only else True)
        count = options.count if live else 1
        notes = []
        if not live:
            notes.append("a core file holds one moment: 1 sample taken")
        elif options.count is None:
            count = 1
        effective = target.set_cache(mode)
        # every sample is kept (one append each: the stop/resume costs
        # milliseconds), so that --raw and --speedscope hold the whole profile
        report.base_profile(options)  # a --diff file that cannot be read fails first
        if options.mode == "cpu":
            raise errors.UsageError(
                "--mode cpu: the debugger stops every thread for each sample, so none is "
                "ever on a CPU then; sample the live process with 'python3 -m pyframes "
                "sample --mode cpu PID' (or use --mode wall or gil here)")
        sampler = sampling.Sampler(target, threads=threads, label_threads=threads == "all",
                                   record=True, mode=options.mode)
        # the process is expected to run between samples: its changes are
        # checked by the library, the session does not flush for them
        self.session.begin_sampling()
        before = target.stats()
        started = time.monotonic()
        try:
            for i in range(count):
                if live and options.count is not None:
                    t0 = time.perf_counter()
                    ran = adapter.resume_for(options.interval / 1000.0)
                    self.debugger_time += time.perf_counter() - t0
                    if not ran:
                        notes.append("the process stopped running after %d samples" % i)
                        break
                sampler.sample()
                if progress is not None:
                    progress(i + 1, count)
            profile = sampler.profile()
        finally:
            sampler.close()
            target.set_cache(False)
            self.session.end_sampling()
        profile.duration = time.monotonic() - started
        after = profile.stats
        profile.stats = {k: after[k] - before.get(k, 0) for k in after}
        self.library_time += sampler.library_time
        self.profile.merge(profile)
        whole = self.profile
        report.write_outputs(whole, options, title=self.command_name)
        extra = []
        if whole.samples:
            extra.append("per sample: library %.1f us, %s stop/resume %.1f ms" % (
                1e6 * self.library_time / whole.samples, adapter.debugger_name,
                1e3 * self.debugger_time / whole.samples))
        extra.extend(notes)
        if not live:
            failed = sum(n for m, n in whole.errors.items() if errors.is_read_failure(m))
            if failed:
                extra.append(errors.core_note(failed))
        return report.summary(whole, None, cache=effective, top=options.top, extra=extra,
                              base=report.base_profile(options))
