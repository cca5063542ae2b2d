"""Benchmark: ``py-sample`` over a remote connection, gdb through gdbserver
against lldb through lldb-server, on the same CPU-busy process 200 frames
deep (tests/bench/busy_deep.py), in alternating rounds.

    python3 tests/bench/bench_remote_sample.py [--python python3.15] [--depth 200]
                                               [--samples 200] [--rounds 3] [--lldb 22]

Run inside the sandbox with PYFRAMES_LIBRARY set (see docs/benchmarks.md).
Remote, the process is not the debugger's to read by PID: each sample
resumes it, stops it and reads it through the remote protocol, so the rate
is that of the debugger's stop/resume.  Each debugger connects over
loopback (gdb: ``target extended-remote | gdbserver - --attach PID``; lldb:
``gdb-remote`` to an ``lldb-server gdbserver`` whose port comes through a
named pipe), loads its plugin and runs ``py-sample -n SAMPLES --interval
0``; the rate is the one py-sample prints.  The target runs in a session
of its own (gdbserver stops a running process by signalling its process
group).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
from bench_sampling import run  # noqa: E402

_RATE = re.compile(r"^(\d+) samples in ([\d.]+) s \((\d+)/s\); (\d+) failed", re.M)


def _rate(name, text):
    m = _RATE.search(text)
    if not m or "stop/resume" not in text:
        raise SystemExit("%s said:\n%s" % (name, text[-3000:]))
    return float(m.group(3)), 100.0 * int(m.group(4)) / int(m.group(1))


def gdb(pid, samples):
    argv = ["gdb", "--batch", "-nx", "-iex", "set pagination off", "-iex", "set sysroot /",
            "-ex", "target extended-remote | gdbserver - --attach %d" % pid,
            "-ex", "source " + os.path.join(ROOT, "gdb", "pyframes_gdb.py"),
            "-ex", "py-sample -n %d --interval 0 --top 0 --main" % samples, "-ex", "detach"]
    return _rate("gdb", run(argv))


# lldb 21 is the sandbox's lldb; lldb 22's wrapper runs its own lldb-server
LLDB = {"21": ("lldb", ["lldb-server"]),
        "22": ("lldb-22", ["/opt/lldb-22/usr/lib/llvm-22/bin/lldb-server"])}


def lldb(pid, samples, tmp, version="21"):
    debugger, server_argv = LLDB[version]
    fifo = os.path.join(tmp, "port")
    if os.path.exists(fifo):
        os.unlink(fifo)
    os.mkfifo(fifo)
    env = dict(os.environ)
    if version == "22":
        env["LD_LIBRARY_PATH"] = "/opt/lldb-22/usr/lib/llvm-22/lib"
    server = subprocess.Popen(server_argv + ["gdbserver", "--named-pipe", fifo, "127.0.0.1:0",
                                             "--attach", str(pid)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with open(fifo) as f:  # lldb-server writes its port once it listens
            port = f.read().strip("\0\n ")
        argv = [debugger, "--batch", "-x", "-O", "settings set target.parallel-module-load false",
                "-o", "gdb-remote 127.0.0.1:%s" % port,
                "-o", "command script import " + os.path.join(ROOT, "lldb", "pyframes_lldb.py"),
                "-o", "py-sample -n %d --interval 0 --top 0 --main" % samples, "-o", "process detach"]
        return _rate("lldb", run(argv))
    finally:
        server.kill()
        server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default="python3.15")
    parser.add_argument("--depth", type=int, default=200)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lldb", choices=sorted(LLDB), default="21")
    args = parser.parse_args()
    # in a session of its own: gdbserver stops a running process by
    # signalling its process group
    target = subprocess.Popen([args.python, os.path.join(HERE, "busy_deep.py"),
                               str(args.depth)], stdout=subprocess.PIPE, start_new_session=True)
    results = {"gdb": [], "lldb": []}
    try:
        if target.stdout.readline() != b"ready\n":
            raise SystemExit("the target did not start")
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                g = gdb(target.pid, args.samples)
                l = lldb(target.pid, args.samples, tmp, args.lldb)
                results["gdb"].append(g)
                results["lldb"].append(l)
                print("round %d: gdb %.0f/s (%.2f%% failed); lldb %.0f/s (%.2f%% failed)"
                      % (r + 1, g[0], g[1], l[0], l[1]))
    finally:
        target.kill()
        target.wait()
    g = statistics.median(rate for rate, _ in results["gdb"])
    l = statistics.median(rate for rate, _ in results["lldb"])
    print("\n| remote py-sample (median of %d rounds) | samples/s | stop/resume per sample |"
          % args.rounds)
    print("|---|---|---|")
    print("| gdb + gdbserver | %.0f | %.2f ms |" % (g, 1000.0 / g))
    print("| lldb %s + lldb-server | %.0f | %.2f ms |" % (args.lldb, l, 1000.0 / l))
    print("\nlldb's time per sample over gdb's: %.2fx" % (g / l))


if __name__ == "__main__":
    main()
