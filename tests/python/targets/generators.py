"""Scenario (c): generators and coroutines driven by hand (no event loop).

* "next": a generator resumed by next() after an earlier suspension.
* "send": a generator resumed by gen.send(x).
* "yield-from": outer -> middle -> inner linked by ``yield from``, driven by
  next() then send().
* "genexpr": a generator expression consumed by sum() (entered from C).
* "coroutine": outer_coro -> middle_coro -> leaf_coro linked by ``await``,
  driven by coro.send(None) twice: the first send suspends the whole chain in
  a custom awaitable, the second resumes it and the leaf blocks.
* "async-generator": an async generator driven through asend(None).send(None).
"""

import os

import _common

H = _common.Harness.from_argv()


def counter():
    yield 1
    H.record(); os.read(H.fd(), 1)
    yield 2


def drive_next():
    g = counter()
    assert next(g) == 1
    next(g)


def echo():
    received = yield "ready"
    while True:
        if received == "block":
            H.record(); os.read(H.fd(), 1)
        received = yield received


def drive_send():
    g = echo()
    assert g.send(None) == "ready"
    assert g.send(42) == 42
    g.send("block")


def inner():
    value = yield "inner-ready"
    H.record(); os.read(H.fd(), 1)
    yield value


def middle():
    result = yield from inner()
    return result


def outer():
    result = yield from middle()
    yield result


def drive_yield_from():
    g = outer()
    assert next(g) == "inner-ready"
    g.send("go")


def slow_square(x):
    if x == 2:
        H.record(); os.read(H.fd(), 1)
    return x * x


def drive_genexpr():
    return sum(slow_square(x) for x in range(5))


class Suspend:
    def __await__(self):
        yield "suspended"


async def leaf_coro():
    await Suspend()
    H.record(); os.read(H.fd(), 1)


async def middle_coro():
    await leaf_coro()


async def outer_coro():
    await middle_coro()


def drive_coroutine():
    c = outer_coro()
    assert c.send(None) == "suspended"
    c.send(None)


async def ticker():
    yield "tick"
    H.record(); os.read(H.fd(), 1)
    yield "tock"


def drive_async_generator():
    ag = ticker()
    try:
        ag.asend(None).send(None)
    except StopIteration as stop:
        assert stop.value == "tick"
    ag.asend(None).send(None)


def main():
    H.start(drive_next, name="next")
    H.start(drive_send, name="send")
    H.start(drive_yield_from, name="yield-from")
    H.start(drive_genexpr, name="genexpr")
    H.start(drive_coroutine, name="coroutine")
    H.start(drive_async_generator, name="async-generator")
    H.publish_and_block()


if __name__ == "__main__":
    main()
