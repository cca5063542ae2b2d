"""Benchmark: core files read by the command line, no debugger.

speed: a target with N threads (default 200; a third each in time.sleep,
on a held Lock, in os.read, each a few frames deep) crashes itself
(SIGSEGV, no limit on its core: the kernel writes it); then, end to end,
each a new process, alternately, median of --repeat runs:
  - `python3 -m pyframes dump CORE --all` (the command line; also with
    --locals and with --locks);
  - `gdb -batch -nx -ex 'source gdb/pyframes_gdb.py' -ex 'py-bt-fast --all'
    EXE CORE` (the same plugin in gdb: gdb's start-up, its loading of the
    core and of the executable's and libraries' symbols, then the command).
Both print to a pipe the benchmark reads and throws away.

memory: a target holding --gib GiB of data that is not zeros (a random
MiB repeated) crashes the same way; then the peak resident memory
(getrusage of the child) and the time of `dump CORE` on the plain core and
on the core compressed with zstd (decompressed once into a temporary file
by the library: --temp-dir, default $TMPDIR or /var/tmp).

    python3 tests/bench/bench_cores.py speed [--python python3.13] [--threads 200] [--repeat 5]
    python3 tests/bench/bench_cores.py memory [--python python3.13] [--gib 4]
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
PACKAGE = os.path.join(REPO, "native", "python")
GDB_PLUGIN = os.path.join(REPO, "gdb", "pyframes_gdb.py")

# argv: threads, GiB to hold; "ready" on stdout once in place, then the
# crash (SIGSEGV at address 0) when stdin closes
TARGET = r"""
import ctypes, os, resource, sys, threading, time
resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
n, gib = int(sys.argv[1]), int(sys.argv[2])
block = os.urandom(1 << 20)
held = [bytearray(block * 1024) for _ in range(gib)]
lock = threading.Lock(); lock.acquire()
r, w = os.pipe()
def sleeper(): time.sleep(1e6)
def locker(): lock.acquire()
def reader(): os.read(r, 1)
def deeper(k, f):
    if k: return deeper(k - 1, f)
    f()
kinds = (sleeper, locker, reader)
for i in range(n):
    threading.Thread(target=deeper, args=(i % 5, kinds[i % 3]), name="worker-%d" % i,
                     daemon=True).start()
time.sleep(0.5)
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.read()
ctypes.memmove(0, b"x", 1)
"""


def kernel_core(workdir, pid):
    with open("/proc/sys/kernel/core_pattern") as f:
        pattern = f.read().strip()
    if pattern.startswith("|"):
        raise SystemExit("the kernel hands cores to %s: this benchmark needs a core_pattern "
                         "that is a file name" % pattern)
    name = pattern.replace("%p", str(pid))
    with open("/proc/sys/kernel/core_uses_pid") as f:
        if f.read().strip() == "1" and "%p" not in pattern:
            name += ".%d" % pid
    return name if os.path.isabs(name) else os.path.join(workdir, name)


def crash(python, threads, gib, workdir):
    """Run the target in workdir until it is in place, crash it; its core."""
    proc = subprocess.Popen([python, "-c", TARGET, str(threads), str(gib)], cwd=workdir,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    if proc.stdout.readline() != b"ready\n":
        proc.kill()
        raise SystemExit("target did not start")
    proc.stdin.close()
    proc.wait(600)
    core = kernel_core(workdir, proc.pid)
    if not os.path.isfile(core):
        raise SystemExit("no core at %s (exit status %d)" % (core, proc.returncode))
    return core


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = PACKAGE + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


def timed(argv):
    """Wall time of argv, its output read and thrown away; and the peak
    resident memory of that child (getrusage of a wrapper)."""
    wrapper = ("import resource, subprocess, sys, time\n"
               "t = time.perf_counter()\n"
               "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
               "t = time.perf_counter() - t\n"
               "print(t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)\n")
    out = subprocess.run([sys.executable, "-c", wrapper] + argv, env=env(),
                         stdout=subprocess.PIPE, check=True).stdout.split()
    seconds, kib, rc = float(out[0]), int(out[1]), int(out[2])
    if rc != 0:
        raise SystemExit("%s: exit status %d" % (" ".join(argv), rc))
    return seconds, kib


def speed(args):
    work = tempfile.mkdtemp(prefix="pyframes-bench-cores-")
    try:
        core = crash(args.python, args.threads, 0, work)
        exe = shutil.which(args.python) or args.python
        size = os.path.getsize(core)
        cli = [sys.executable, "-m", "pyframes", "dump", core, "--all", "--no-source"]
        gdb = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off", "-ex",
               "source " + GDB_PLUGIN, "-ex", "py-bt-fast --all --no-source", exe, core]
        runs = {"cli": [], "cli --locals": [], "cli --locks": [], "gdb": []}
        for _ in range(args.repeat):
            runs["cli"].append(timed(cli)[0])
            runs["gdb"].append(timed(gdb)[0])
            runs["cli --locals"].append(timed(cli + ["--locals"])[0])
            runs["cli --locks"].append(timed(cli + ["--locks"])[0])
        med = {k: statistics.median(v) for k, v in runs.items()}
        print("core of %d threads (%s), %.1f MiB" % (args.threads, args.python, size / 2**20))
        for k, v in runs.items():
            print("  %-14s median %7.1f ms  (runs: %s)" % (
                k, med[k] * 1e3, ", ".join("%.0f" % (x * 1e3) for x in v)))
        print("  gdb / cli: %.1fx" % (med["gdb"] / med["cli"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def memory(args):
    work = tempfile.mkdtemp(prefix="pyframes-bench-cores-", dir=args.work_dir)
    try:
        core = crash(args.python, 3, args.gib, work)
        size = os.path.getsize(core)
        print("core of %s holding %d GiB: %.2f GiB" % (args.python, args.gib, size / 2**30))
        cli = [sys.executable, "-m", "pyframes", "dump", "--no-source"]
        seconds, kib = timed(cli + [core])
        print("  plain: %.2f s, peak RSS %.1f MiB" % (seconds, kib / 1024))
        packed = core + ".zst"
        t = time.perf_counter()
        subprocess.run(["zstd", "-q", "-T0", "-3", core, "-o", packed], check=True)
        print("  zstd -T0 -3: %.1f s, %.2f GiB -> %.1f MiB" % (
            time.perf_counter() - t, size / 2**30, os.path.getsize(packed) / 2**20))
        t = time.perf_counter()
        subprocess.run(["zstd", "-q", "-d", "-c", packed], stdout=subprocess.DEVNULL, check=True)
        print("  zstd -d -c > /dev/null: %.1f s (the decompression alone)" % (
            time.perf_counter() - t))
        os.unlink(core)
        if args.temp_dir:
            os.environ["TMPDIR"] = args.temp_dir
        seconds, kib = timed(cli + [packed])
        print("  zstd: %.2f s (the decompression once, then the dump), peak RSS %.1f MiB"
              % (seconds, kib / 1024))
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print("  (this script's own peak RSS %.1f MiB; memory free now: %s)" % (
            own / 1024, _free()))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _free():
    with open("/proc/meminfo") as f:
        info = dict(line.split(":", 1) for line in f)
    return "MemAvailable %s" % info["MemAvailable"].strip()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=("speed", "memory"))
    p.add_argument("--python", default="python3.13")
    p.add_argument("--threads", type=int, default=200)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--gib", type=int, default=4)
    p.add_argument("--work-dir", default=None, help="where the cores are written")
    p.add_argument("--temp-dir", default=None, help="TMPDIR of the decompression")
    args = p.parse_args()
    (speed if args.what == "speed" else memory)(args)


if __name__ == "__main__":
    main()
