"""How long one reader call of a heap-frame moment takes beside the loop it
reads (docs/architecture.md, "What remains probabilistic").

    python3 tests/bench/moment_time.py PYTHON [BYTES ...]

Starts tests/python/targets/call_pair.py under PYTHON on the second CPU,
this process on the first, and times 20,000 process_vm_readv calls shaped
as the moment's: an 8-byte word, the ranges (BYTES each; default 1536,
1536, 512) read twice, the word again; from Python (ctypes), so the figures
include the call's own cost.  Prints the median, 90th and 99th percentile
in microseconds.  Compare with `PYTHON -m timeit` of the target's loop.
"""
import ctypes
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(os.path.dirname(HERE), "python", "targets", "call_pair.py")
CALLS = 20000


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    libc = ctypes.CDLL(None, use_errno=True)
    cpus = sorted(os.sched_getaffinity(0))
    pin = len(cpus) >= 2
    proc = subprocess.Popen([sys.argv[1], TARGET], stdout=subprocess.PIPE,
                            preexec_fn=(lambda: os.sched_setaffinity(0, {cpus[1]})) if pin
                            else None)
    try:
        if pin:
            os.sched_setaffinity(0, {cpus[0]})
        if proc.stdout.readline() != b"ready\n":
            sys.exit("the target did not start")
        with open("/proc/%d/maps" % proc.pid) as f:
            heap = next(int(line.split("-")[0], 16) for line in f if "[heap]" in line)
        sizes = [int(x) for x in sys.argv[2:]] or [1536, 1536, 512]
        ranges = [ctypes.create_string_buffer(s) for s in sizes * 2]
        bufs = [ctypes.create_string_buffer(8)] + ranges + [ctypes.create_string_buffer(8)]
        addrs = [heap] + [heap + 4096 * (i % len(sizes)) for i in range(len(ranges))] + [heap]
        n = len(bufs)
        local = (Iovec * n)(*[Iovec(ctypes.addressof(b), len(b)) for b in bufs])
        remote = (Iovec * n)(*[Iovec(a, len(b)) for a, b in zip(addrs, bufs)])
        times = []
        for _ in range(CALLS):
            t0 = time.perf_counter_ns()
            if libc.process_vm_readv(proc.pid, local, n, remote, n, 0) < 0:
                sys.exit("process_vm_readv: %s" % os.strerror(ctypes.get_errno()))
            times.append(time.perf_counter_ns() - t0)
        times.sort()
        print("%d ranges, %d calls: median %.2f us, p90 %.2f us, p99 %.2f us" % (
            n, CALLS, times[CALLS // 2] / 1e3, times[CALLS * 9 // 10] / 1e3,
            times[CALLS * 99 // 100] / 1e3))
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    main()
