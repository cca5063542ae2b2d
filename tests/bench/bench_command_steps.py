"""Benchmark: where a warm py-bt-fast command's time goes, inside gdb, and
what a `pyframes dump PID` spends on its text.

Starts `python3.X` on a recursion of the given depth (pipe handshake), then:

- gdb: one session with the plugin of each tree given (``--tree``, the
  repository by default; a copy of an older tree compares a change), the
  stack command repeated printed, each step timed where the command calls
  it (the function wrapped): the argument parsing, the target, the
  snapshot with the threads' facts and its conversion, the threads' /proc
  facts, the rendering, the output guard; the gdb part is the rest (its
  dispatch, the one gdb.write, the flush).  Medians of ``--repeat``.
- the command line (``--cli``): ``python3 -m pyframes dump PID`` in a fresh
  interpreter ``--runs`` times per tree, trees in turn: its time after the
  import, its rendering and its output guard (medians).

    python3 tests/bench/bench_command_steps.py [--python python3.15] [--depth 1000]
        [--tree DIR ...] [--repeat 60] [--cli] [--runs 9]
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
from bench_dump import debugger_results, start, write_script  # noqa: E402

# (module, attribute of it, its name in the table): the steps, in the order
# the command takes them; timed(owner, name, label, note) has note(label,
# seconds) called after each call of owner.name
STEPS = r"""
import time
from pyframes import (_convert, plugin, render, session, stack_command,
                      target as api)

def timed(owner, name, label, note):
    real = getattr(owner, name)

    def step(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            note(label, time.perf_counter() - t0)
    setattr(owner, name, step)

STEPS = [
    (session, "parse_arguments", "parse"),
    (session.Session, "_get_target", "target"),
    (api.Target, "snapshot", "snapshot"),
    (_convert.Converter, "convert_head", "conversion"),
    (_convert.Converter, "convert_facts", "facts_conversion"),
    (stack_command, "described", "proc_facts"),
    (render, "format_threads_text", "rendering"),
    (session.Session, "run", "session_run"),
    (plugin, "escape_lines", "guard"),
]
"""

GDB_SCRIPT = STEPS + r"""
import statistics, sys
import gdb
spent = {{}}
for owner, name, label in STEPS:
    timed(owner, name, label, lambda label, seconds: spent[label].append(seconds))

def command():
    gdb.execute("py-bt-fast")
    gdb.flush()

for _, _, label in STEPS:
    spent[label] = []
for _ in range(5):
    command()
for times in spent.values():
    del times[:]
total = []
for _ in range({repeat}):
    t0 = time.perf_counter()
    command()
    total.append(time.perf_counter() - t0)
us = {{label: statistics.median(v) * 1e6 for label, v in spent.items() if v}}
us["total"] = statistics.median(total) * 1e6
us["gdb"] = us["total"] - us["session_run"] - us["guard"]
sys.stdout.write("RESULT steps " + " ".join("%s=%.1f" % kv for kv in us.items()) + "\n")
sys.stdout.flush()
"""

CLI_SCRIPT = STEPS + r"""
import os, sys
from pyframes import cli
spent = {"rendering": 0.0, "guard": 0.0}

def note(label, seconds):
    spent[label] += seconds

timed(render, "format_threads_text", "rendering", note)
timed(cli, "escape_lines", "guard", note)
out = os.dup(1)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
t0 = time.perf_counter()
cli.main(["dump", sys.argv[1]])
sys.stdout.flush()
spent["dump"] = time.perf_counter() - t0
os.dup2(out, 1)
print("RESULT cli " + " ".join("%s=%f" % kv for kv in spent.items()))
"""

ROWS = [("total", "the whole command, printed"), ("parse", "parsing the arguments"),
        ("target", "the target (checks, /proc/PID/stat)"),
        ("snapshot", "the snapshot with the threads' facts"),
        ("conversion", "  of which its conversion"),
        ("facts_conversion", "    of which the facts' conversion"),
        ("proc_facts", "the threads' /proc facts (described)"),
        ("rendering", "rendering (format_threads_text)"),
        ("guard", "the output guard (escape_lines)"),
        ("gdb", "gdb: dispatch, gdb.write, flush (the rest)")]


def gdb_steps(tree, pid, repeat):
    path = write_script(GDB_SCRIPT.format(repeat=repeat), "steps")
    return debugger_results(["gdb", "--batch", "-nx", "-p", str(pid),
                             "-ex", "source %s/gdb/pyframes_gdb.py" % tree,
                             "-ex", "source " + path])


def cli_steps(tree, pid):
    env = dict(os.environ, PYTHONPATH=os.path.join(tree, "native", "python"))
    out = subprocess.run([sys.executable, "-c", CLI_SCRIPT, str(pid)], env=env,
                         capture_output=True, text=True, check=True).stdout
    line = [l for l in out.splitlines() if l.startswith("RESULT")][0]
    return {k: float(v) for k, v in (item.split("=") for item in line.split()[2:])}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default="python3.15")
    ap.add_argument("--depth", type=int, default=1000)
    ap.add_argument("--tree", action="append", help="a tree whose plugin and package "
                    "are measured (repeatable; default: this repository)")
    ap.add_argument("--repeat", type=int, default=60)
    ap.add_argument("--cli", action="store_true", help="measure the command line too")
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    trees = [os.path.abspath(t) for t in a.tree or [REPO]]
    proc = start(a.python, a.depth)
    try:
        print("%s, depth %d, medians of %d printed py-bt-fast commands (us):" % (
            a.python, a.depth, a.repeat))
        results = [gdb_steps(tree, proc.pid, a.repeat) for tree in trees]
        print("  %-46s" % "" + "".join("%12s" % os.path.basename(t) for t in trees))
        for key, text in ROWS:
            print("  %-46s" % text + "".join(
                "%12s" % ("%.1f" % float(r[key]) if key in r else "-") for r in results))
        if a.cli:
            print("pyframes dump PID, %d runs per tree in turn, medians (ms):" % a.runs)
            runs = {t: [] for t in trees}
            for _ in range(a.runs):
                for tree in trees:
                    runs[tree].append(cli_steps(tree, proc.pid))
            for tree in trees:
                print("  %-12s" % os.path.basename(tree) + "  ".join(
                    "%s %.3f" % (k, statistics.median(r[k] for r in runs[tree]) * 1e3)
                    for k in ("dump", "rendering", "guard")))
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
