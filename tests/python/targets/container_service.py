"""A service as a container runs it (test_containers.py): threads in the
states the tests read, each reporting its own view.

* "sleeper": blocks in time.sleep;
* "reader": blocks in os.read on a pipe (its fd reported);
* "holder": holds LOCK and blocks in os.read; "waiter": blocks acquiring
  LOCK (for --locks);
* "spinner", "spinner-2": run Python for good, passing the GIL between
  them (the GIL; --mode cpu);
* one thread started by _thread, which Python does not name: its OS name
  ("svc-bare", set by itself with prctl) is its only name; blocks in os.read;
* the main thread blocks in the handshake.

Each thread reports, in the handshake's thread_info under its id as its
PID namespace sees it: "ident", "name" (threading's; None for the _thread
one), "comm" (its /proc comm, read by itself), "doing" ("sleep", "read",
"lock", "busy", "main"), "fd" of a read, and "locals": the repr() of each
local of its two innermost frames (innermost first; None for no frame) as
they are while it blocks.  The main thread's are in main.json beside the
handshake (H.record() writes its thread_info).  The innermost frame of
every worker holds ``token`` naming the thread, and ``serve``, the caller
of most, ``outer``.
"""

import _thread
import ctypes
import os
import sys
import threading
import time

import _common

H = _common.Harness.from_argv()
LOCK = threading.Lock()
HELD = threading.Event()
SPINNING = threading.Semaphore(0)
BARE_READY = threading.Event()
EXTRA = {}  # native tid -> facts besides ident and name


def _reprs(frame):
    if frame is None:
        return None
    return {name: repr(value) for name, value in frame.f_locals.items()}


def note(doing, fd=None):
    """The calling thread's facts: what it does, its comm, the locals of
    its caller (the blocking frame) and of that one's caller."""
    tid = _thread.get_native_id()
    with open("/proc/self/task/%d/comm" % tid) as f:
        comm = f.read().rstrip("\n")
    frame = sys._getframe(1)
    facts = {"doing": doing, "comm": comm, "locals": [_reprs(frame), _reprs(frame.f_back)]}
    if fd is not None:
        facts["fd"] = fd
    with H.cond:
        EXTRA[tid] = facts


def serve(role, blocker):
    outer = "%s-outer" % role
    blocker(role)
    return outer


def sleeper(role):
    token = "%s-inner" % role
    note("sleep"); H.record(); time.sleep(H.forever())  # noqa: E702
    return token


def reader(role):
    token = "%s-inner" % role
    fd = H.fd()
    note("read", fd); H.record(); os.read(fd, 1)  # noqa: E702
    return token


def holder(role):
    with LOCK:
        HELD.set()
        reader(role)  # a Python call: 3.13 keeps this frame's stack (the lock on it)


def waiter(role):
    token = "%s-inner" % role
    HELD.wait()
    H._register("lock")
    note("lock"); H.record(); LOCK.acquire()  # noqa: E702
    return token


def spinner(role):
    token = "%s-inner" % role
    note("busy")
    SPINNING.release()
    while token:
        pass


def unnamed():
    """A _thread thread: no threading.Thread, so no Python name (nothing
    here may call threading.current_thread(), which would make one up)."""
    token = "bare-inner"
    ctypes.CDLL(None).prctl(15, b"svc-bare", 0, 0, 0)  # PR_SET_NAME
    fd = H.fd()
    note("read", fd); own_record(); os.read(fd, 1)  # noqa: E702
    return token


def own_record():
    """H.record() for a thread threading does not know."""
    frames = _common._frames_from(sys._getframe(1))
    tid = _thread.get_native_id()
    with H.cond:
        H.views[tid] = frames
        H.info[tid] = {"ident": _thread.get_ident(), "name": None}
        H.bare.append(tid)
        H.cond.notify_all()
    BARE_READY.set()


def start():
    """Every thread started and blocked, their facts in thread_info; the
    number of threads."""
    _thread.start_new_thread(unnamed, ())
    BARE_READY.wait()
    for role, blocker in (("sleeper", sleeper), ("reader", reader), ("holder", holder),
                          ("waiter", waiter)):
        H.start(serve, role, blocker, name=role)
    spinners = [threading.Thread(target=serve, args=(name, spinner), name=name, daemon=True)
                for name in ("spinner", "spinner-2")]
    for spin in spinners:
        spin.start()
        SPINNING.acquire()
    H._wait_ready()
    for spin in spinners:
        H.info[spin.native_id] = {"ident": spin.ident, "name": spin.name}
    for tid, facts in EXTRA.items():
        H.info.setdefault(tid, {}).update(facts)
    return len(H.info) + 1


def own_comm():
    with open("/proc/self/task/%d/comm" % _thread.get_native_id()) as f:
        return f.read().rstrip("\n")


def write_main_facts(started, comm):
    """The main thread's facts, in main.json beside the handshake (the
    handshake's thread_info of the main thread is what H.record() puts
    there)."""
    import json
    facts = {"tid": _thread.get_native_id(), "doing": "main", "comm": comm,
             "locals": [{"self": repr(H)}, {"started": repr(started), "comm": repr(comm)}]}
    with open(os.path.join(H.workdir, "main.json"), "w") as f:
        json.dump(facts, f)


def main():
    started = start()
    comm = own_comm()
    write_main_facts(started, comm)
    H.publish_and_block()


if __name__ == "__main__":
    main()
