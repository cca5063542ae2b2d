"""Scenario: one thread 50 Python frames deep, entered from C 16 times, for
frame navigation (py-up, py-down, py-frame, py-list) and the selected
frame's values (py-locals, py-print).

The main thread runs, outermost first:

    <module> -> main -> step(15) -> by_X(15) -> callee(15) -> step(14) ...
             -> step(0) -> leaf -> Harness.publish_and_block

where each level goes through C a different way, the callee being the
first Python frame of an eval call of its own:

    by_map       list(map(mapped, ...))                 mapped
    by_sorted    sorted(..., key=keyed)                 keyed
    by_reduce    functools.reduce(reduced, ...)         reduced
    by_init      functools.partial(Node, n)()           Node.__init__
    by_property  getattr(holder, "descend")             Holder.descend

(each through a C function, so no call site is specialized into the
caller's eval loop however often it runs).  FROM_C names those callees and
<module>: the frames entered from C.  The thread blocks in the handshake,
whose record is the target's own view of the stack, innermost first.

Before it, ``locals.json`` in the work directory holds the target's own
view of the values: ``frames``, per frame of that stack (innermost first)
the repr() of each of its locals (``{}`` for <module>, whose locals are
its globals), and ``WAYS``, the repr() of that global.
"""

import functools
import json
import os
import sys

import _common

H = _common.Harness.from_argv()

LEVELS = 15  # 2 + 3 * LEVELS + 3 = 50 frames

#: qualnames of the frames whose caller is C code
FROM_C = ("<module>", "mapped", "keyed", "reduced", "Node.__init__", "Holder.descend")


def mapped(n):
    return step(n - 1)


def by_map(n):
    return list(map(mapped, [n]))[0]


def keyed(n):
    if n < 0:
        return n
    return step(n - 1)


def by_sorted(n):
    return sorted([n, -1], key=keyed)[0]


def reduced(total, n):
    return total + step(n - 1)


def by_reduce(n):
    return functools.reduce(reduced, [n], 0)


class Node(object):
    def __init__(self, n):
        self.value = step(n - 1)


def by_init(n):
    return functools.partial(Node, n)().value


class Holder(object):
    n = 0

    @property
    def descend(self):
        return step(self.n - 1)


def by_property(n):
    holder = Holder()
    holder.n = n
    return getattr(holder, "descend")


WAYS = (by_map, by_sorted, by_reduce, by_init, by_property)


def record_locals():
    """locals.json: the frames' locals as repr() shows them, from
    publish_and_block (called next, its one local self) out to <module>."""
    frames = [{"self": repr(H)}]
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_code.co_name == "<module>"
        frames.append({} if module else {k: repr(v) for k, v in frame.f_locals.items()})
        frame = frame.f_back
    path = os.path.join(H.workdir, "locals.json")
    with open(path + ".tmp", "w") as f:
        json.dump({"frames": frames, "WAYS": repr(WAYS)}, f)
    os.replace(path + ".tmp", path)


def leaf():
    record_locals()
    return H.publish_and_block()


def step(n):
    if n == 0:
        return leaf()
    return WAYS[n % len(WAYS)](n)


def main():
    return step(LEVELS)


main()
