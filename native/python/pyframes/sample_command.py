"""``py-sample`` in gdb and lldb: a sampling profile over a stopped session.

A live process on this machine (the PID reader) runs while it is sampled
through its memory, as the command line samples it, and is stopped again
when the N samples are in; elsewhere (a remote target) each sample lets the
inferior run for the interval, stops it and samples every thread (or, with
--main, the main one).  The inferior is left stopped, its selected thread selected.  The profile
lives in the session until ``--reset``, so the command typed again and again
keeps building one profile; without ``-n`` on a stopped process it adds one
sample where the process stands.  On a core file there is one sample to take,
and the summary says so.  The frame cache is on while sampling (off with
--no-cache, never writing with --read-only) and off again afterwards, so
that other commands never write to the process.
"""

import time

from . import errors, render, report, sampling
from .adapter import ask
from .options import (add_sample_options, new_parser, number_in, positive_int,
                      sample_cache, sample_threads)

__all__ = ["SampleCommand", "describe"]

_HELP = """\
Sample the Python stacks of the inferior while it runs.

A live process on this machine runs while its memory is sampled (by PID,
every interval) until N samples are in, and is stopped again; a remote
process is stopped for each sample instead (it runs for the interval
before each).  Each sample reads the Python stack of every thread, each
under its own root (--main: the main thread only); the process is left
stopped, the selected thread selected.  Samples add up across invocations
until --reset; without -n on a stopped process one sample is taken where it
stands.  A core file gives one sample.  The summary lists the functions the
time was spent in as the innermost frame first (the hot leaf first), with
their total share.

  -n N             take N samples, letting the process run
  --interval MS    milliseconds between samples (default 1 on a live local
                   process, 0: as fast as possible; 10 on a remote one)
  --main           only the main thread (--all, every thread, is the default)
  --mode M         wall (every thread), cpu (threads on a CPU: a live local
                   process) or gil (the thread holding the GIL: CPython 3.13+,
                   not free-threaded)
  --collapsed FILE write the profile in flamegraph.pl's collapsed format
  --json FILE      write the profile as JSON
  --stats-json FILE  write the sampling counters as JSON
  --flamegraph FILE.svg  write an interactive flame graph
  --raw FILE       keep every sample (JSON lines; python3 -m pyframes render
                   FILE writes any output from it later)
  --speedscope FILE  write a timeline for speedscope (speedscope.app)
  --by function    one box per function (default: --by line, one per line)
  --top K          functions in the summary (default 15; 0: none)
  --stats          also the sampler's counters in the summary (frame cache,
                   time per sample, the debugger's stop/resume time)
  --reset          start a new profile
  --no-cache       do not use the CPython 3.15 frame cache
  --read-only      never write to the process (the 3.15 frame cache writes one
                   word per thread state)

Example: {cmd} -n 5000 --flamegraph /tmp/profile.svg
"""


def describe(command_name):
    return _HELP.format(cmd=command_name)


_interval = number_in("a number of milliseconds", 0, 60000)


def build_parser(command_name):
    parser = new_parser(command_name, describe(command_name))
    parser.add_argument("-n", type=positive_int, metavar="N", dest="count",
                        help="number of samples")
    parser.add_argument("--interval", type=_interval, default=None, metavar="MS",
                        help="milliseconds between samples (default 1 on a live local "
                        "process, 10 on a remote one)")
    add_sample_options(parser)
    report.add_output_options(parser)
    parser.add_argument("--reset", action="store_true", help="start a new profile")
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
        threads = sample_threads(options)
        if options.reset or (self.threads is not None and self.threads != threads) \
                or (self.profile.samples and self.profile.mode != options.mode):
            self.profile = sampling.Profile()
            self.library_time = self.debugger_time = 0.0
        self.threads = threads
        cached, reader = self.session._get_target(adapter, "auto")
        target = cached.target
        live = bool(ask(adapter.is_live))
        # a live process on this machine runs for the whole profile and is
        # sampled through its memory, as the command line samples it
        running = live and reader == "pid" and options.count is not None
        mode = sample_cache(options)
        count = options.count if live else 1
        notes = []
        if not live:
            notes.append("a core file holds one moment: 1 sample taken")
        elif options.count is None:
            count = 1
        report.base_profile(options)  # a --diff file that cannot be read fails first
        if live and options.count is not None and not running:
            refused = ask(adapter.resume_refused)
            if refused:
                raise errors.CommandError("py-sample -n: " + refused)
        if options.mode == "cpu" and not running:
            raise errors.UsageError(
                "--mode cpu: this process is stopped for each sample (it is not a live "
                "process on this machine, or -n was not given), so no thread is ever on a "
                "CPU then; use --mode wall or gil here")
        # every sample is kept (one append each), so that --raw and
        # --speedscope hold the whole profile
        ids = self.session.thread_ids(adapter, cached)
        sampler = sampling.Sampler(target, threads=threads, label_threads=threads == "all",
                                   record=True, mode=options.mode, running=running, ids=ids)
        try:
            effective = target.set_cache(mode)
        except BaseException:
            sampler.close()
            raise
        # the process is expected to run between samples: its changes are
        # checked by the library, the session does not flush for them
        self.session.begin_sampling()
        before = target.stats()
        started = time.monotonic()
        try:
            if running:
                interval = 1.0 if options.interval is None else options.interval
                rate = 1000.0 / interval if interval else 0.0
                ran, _ = adapter.resume_while(lambda halt: sampling.run(
                    sampler, count=count, rate=rate, stop=halt.is_set))
                taken = sampler.profile().samples
                if not ran:
                    notes.append("the process stopped running after %d samples" % taken)
                elif taken < count:
                    notes.append(errors.sampling_cut(taken, count, adapter.debugger_name,
                                                     ids.foreign))
                count = 0
            for i in range(count):
                if live and options.count is not None:
                    t0 = time.perf_counter()
                    ms = 10.0 if options.interval is None else options.interval
                    ran = adapter.resume_for(ms / 1000.0)
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
        title = self.command_name
        if ask(adapter.is_live_local):
            title += " of " + report.process_title(adapter.pid(),
                                                   render.process_command(adapter.pid()))
        report.write_outputs(whole, options, title=title)
        costs = []
        if running and profile.samples:
            notes.insert(0, "the process ran while it was sampled by PID (%s stopped it "
                         "once)" % adapter.debugger_name)
            costs.append("per sample: library %.1f us" % (
                1e6 * sampler.library_time / profile.samples))
        elif whole.samples:
            costs.append("per sample: library %.1f us, %s stop/resume %.1f ms" % (
                1e6 * self.library_time / whole.samples, adapter.debugger_name,
                1e3 * self.debugger_time / whole.samples))
        if not live:
            failed = sum(n for m, n in whole.errors.items() if errors.is_read_failure(m))
            if failed:
                notes.append(errors.core_note(failed))
        return report.summary(whole, None, cache=effective, top=options.top, extra=notes,
                              base=report.base_profile(options), stats=options.stats,
                              costs=costs)
