"""Garbage where the thread facts and --locks read: thread objects, the
threading table, an RLock's owner, exception objects.

``hostile_threads.py HANDSHAKE MODE``; the garbage is written by the
target into its own objects (ctypes), once every thread is blocked and
before the handshake; nothing of the target touches those objects again
(the cyclic garbage collector is off, no thread ever ends).

MODE "objects" (threads named by what is done to them, each blocked in
os.read once it is):

* "control": untouched (its name must still be read);
* "int-name": ``_name`` is an int;
* "wild-name": ``_name`` points to unmapped memory;
* "junk-name": ``_name`` points to bytes of 0x41 (no object);
* "huge-str": ``_name`` points to a copy of a str's header whose length
  says 2**40 characters;
* "bad-dict": the Thread's materialized ``__dict__`` has its keys pointer
  overwritten;
* "long-name": ``_name`` is a real str of 10,000,000 characters;
* "rl-holder": took ``rlock`` by an explicit acquire() in a call that
  returned (no frame holds it); the RLock's owner ident is then
  overwritten with garbage; "rl-waiter" blocks entering ``with rlock:``;
* "big-message": handles a ValueError of a 10 MB message;
* "self-args": handles a ValueError whose args tuple holds itself;
* "tb-cycle": handles a ValueError whose traceback's last entry's tb_next
  points back to its first;
* "huge-args": handles a ValueError whose args tuple says 2**40 items;
* "bad-type": handles a ValueError whose type pointer is then garbage;
* "huge-message-str": handles a ValueError whose one argument is then the
  str header of "huge-str".

MODE "active": threading._active replaced by a dict of 10,000 made-up
idents mapped to objects of a class whose _name is "impostor", then the
real threads ("control", the main thread) with the thread "cyclic" mapped
to the dict itself, then 10,000 more impostors.

hostile.json (written before the handshake): {"names": {name: native id},
"locks": {"rlock": id()}, "idents": {name: get_ident()}, "long_name_len",
"message_len", "file"}.
"""

import ctypes
import gc
import json
import os
import sys
import threading
import time

import _common

H = _common.Harness.from_argv()
MODE = sys.argv[2]
WORD = ctypes.c_uint64
KEEP = []
READY = threading.Condition()
STARTED = {}
rlock = threading.RLock()
IMPOSTORS = 20000


def word_at(addr):
    return WORD.from_address(addr)


def find_word(base, value, span=512):
    """The address of the first 8-byte word equal to value in
    [base, base + span)."""
    for off in range(0, span, 8):
        if word_at(base + off).value == value:
            return base + off
    raise RuntimeError("word 0x%x not found near 0x%x" % (value, base))


def block(pre=None):
    """Note this thread ready, then block for good in os.read."""
    r, w = os.pipe()
    KEEP.append(w)
    with READY:
        STARTED[threading.current_thread().name] = (threading.get_native_id(),
                                                    threading.get_ident())
        READY.notify_all()
    os.read(r, 1)


def raising(message):
    raise ValueError(message)


def call_raising(message):
    raising(message)


def handler(make):
    """Handle the exception make() raises, blocked inside the except."""
    try:
        make()
    except ValueError:
        block()


def take_rlock():
    rlock.acquire()


def rl_holder():
    take_rlock()
    block()


def rl_waiter():
    with READY:
        READY.wait_for(lambda: "rl-holder" in STARTED)
    with READY:
        STARTED["rl-waiter"] = (threading.get_native_id(), threading.get_ident())
        READY.notify_all()
    with rlock:
        pass


EXC = {}


def make_self_args():
    e = ValueError(None)
    EXC["self-args"] = e
    raise e


def make_tb_cycle():
    try:
        call_raising("traceback loop")
    except ValueError as e:
        EXC["tb-cycle"] = e
        raise


def make_huge_args():
    e = ValueError("huge args")
    EXC["huge-args"] = e
    raise e


def make_huge_str():
    e = ValueError("placeholder")
    EXC["huge-message-str"] = e
    raise e


def make_bad_type():
    e = ValueError("bad type")
    EXC["bad-type"] = e
    raise e


THREADS = {
    "objects": {
        "control": block, "int-name": block, "wild-name": block, "junk-name": block,
        "huge-str": block, "bad-dict": block, "long-name": block,
        "rl-holder": rl_holder, "rl-waiter": rl_waiter,
        "big-message": lambda: handler(lambda: raising("m" * 10_000_000)),
        "self-args": lambda: handler(make_self_args),
        "tb-cycle": lambda: handler(make_tb_cycle),
        "huge-args": lambda: handler(make_huge_args),
        "bad-type": lambda: handler(make_bad_type),
        "huge-message-str": lambda: handler(make_huge_str),
    },
    "active": {"control": block, "cyclic": block},
}


def wait_blocked(threads):
    """Until every thread has said it is ready and is in a system call
    (read, or the futex of the RLock)."""
    with READY:
        READY.wait_for(lambda: len(STARTED) == len(threads), timeout=60)
    for tid, _ in STARTED.values():
        for _ in range(6000):
            with open("/proc/self/task/%d/syscall" % tid) as f:
                call = f.read().split()[0]
            if call not in ("running", "-1"):
                break
            time.sleep(0.005)


def values_of(obj):
    """Where the values of obj's managed dict (none made yet) are: right
    after it (3.13+); 3.12's word three before it (bit 0 set: their
    address - 1); 3.11's pointer four before it."""
    if sys.version_info >= (3, 13):
        return id(obj)
    if sys.version_info >= (3, 12):
        tagged = word_at(id(obj) - 24).value
        assert tagged & 1, "a dict, not values"
        return tagged + 1
    return word_at(id(obj) - 32).value


def point_name_at(thread, addr):
    """Overwrite the word of thread's _name (in its values) with addr."""
    marker = object()
    KEEP.append(marker)
    thread._name = marker
    word_at(find_word(values_of(thread), id(marker))).value = addr


def corrupt_objects(threads):
    t = threads
    t["int-name"]._name = 12345
    point_name_at(t["wild-name"], 0x7FF0DEAD0000)
    junk = ctypes.create_string_buffer(b"\x41" * 256)
    KEEP.append(junk)
    point_name_at(t["junk-name"], ctypes.addressof(junk) + 8)
    real = "ghost-name-" * 4
    head = ctypes.string_at(id(real), 128)
    fake = ctypes.create_string_buffer(head, 256)
    KEEP.append(fake)
    assert word_at(id(real) + 16).value == len(real)  # PyASCIIObject.length
    word_at(ctypes.addressof(fake) + 16).value = 1 << 40
    point_name_at(t["huge-str"], ctypes.addressof(fake))
    args = EXC["huge-message-str"].args
    word_at(find_word(id(args) + 24, id(args[0]), 16)).value = ctypes.addressof(fake)
    d = t["bad-dict"].__dict__  # materialized: the object now points to it
    KEEP.append(d)
    keys = word_at(id(d) + 32).value
    assert keys and keys % 8 == 0
    word_at(id(d) + 32).value = 0x4141414141414140
    t["long-name"]._name = "n" * 10_000_000
    owner = STARTED["rl-holder"][1]
    word_at(find_word(id(rlock), owner, 64)).value = 0x4141414141414141
    args = EXC["self-args"].args
    # ob_item[0], after ob_size (and 3.14's ob_hash)
    word_at(find_word(id(args) + 24, id(None), 16)).value = id(args)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(args))
    tb = EXC["tb-cycle"].__traceback__
    last = tb
    while last.tb_next is not None:
        last = last.tb_next
    nxt = find_word(id(tb), id(tb.tb_next), 64) - id(tb)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(tb))
    word_at(id(last) + nxt).value = id(tb)
    args = EXC["huge-args"].args
    assert word_at(id(args) + 16).value == 1  # ob_size
    word_at(id(args) + 16).value = 1 << 40
    exc = EXC["bad-type"]
    assert word_at(id(exc) + 8).value == id(ValueError)  # ob_type
    word_at(id(exc) + 8).value = 0x4141414141414140


class Impostor(object):
    def __init__(self):
        self._name = "impostor"


def replace_active(threads):
    new = {}
    for i in range(IMPOSTORS // 2):  # past what is read, before and after the real ones
        new[1000 + i] = Impostor()
    for ident, thread in list(threading._active.items()):
        new[ident] = thread
    new[STARTED["cyclic"][1]] = new
    for i in range(IMPOSTORS // 2, IMPOSTORS):
        new[1000 + i] = Impostor()
    threading._active = new


def main():
    gc.disable()
    threads = {}
    for name, func in THREADS[MODE].items():
        threads[name] = threading.Thread(target=func, name=name, daemon=True)
        threads[name].start()
    wait_blocked(threads)
    doc = {"names": {n: tid for n, (tid, _) in STARTED.items()},
           "idents": {n: ident for n, (_, ident) in STARTED.items()},
           "locks": {"rlock": id(rlock)}, "long_name_len": 10_000_000,
           "message_len": 10_000_000, "file": os.path.abspath(__file__)}
    if MODE == "objects":
        corrupt_objects(threads)
    else:
        replace_active(threads)
    with open(os.path.join(H.workdir, "hostile.json"), "w") as f:
        json.dump(doc, f)
    H.publish_and_block()


if __name__ == "__main__":
    main()
