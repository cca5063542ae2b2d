"""Scenario: frames owned by a generator, a coroutine and an async generator
(and a generator made a coroutine by ``@types.coroutine``), running and
suspended.

Threads, each blocked inside the object's own frame:

* "generator": ``produce``, a generator resumed by next().
* "coroutine": ``serve`` awaiting ``handle`` (both coroutines), driven by
  send(None).
* "async-generator": ``ticks``, an async generator driven by
  asend(None).send(None) from the coroutine ``consume_ticks``.
* "types-coroutine": ``legacy_wait``, a ``@types.coroutine`` generator
  awaited by the coroutine ``use_legacy``.
* "loop" (CPython 3.14+ reads its tasks): ``run_loop`` runs an event loop
  whose running task ``loop_main`` (a coroutine) blocks the thread; the
  task "reader" (``read_stream``, a coroutine) is suspended in
  ``async for`` over ``stream``, an async generator, which awaits a future
  that is never set.

Facts (the target's own, for the test's oracle), written to
``owners.json`` next to the handshake before it: ``{"owners": {qualname:
type name}}`` of every generator, coroutine and async generator object the
target made, as ``inspect`` classifies it (``"generator"``,
``"coroutine"``, ``"async_generator"``), and ``{"co_flags": {qualname:
co_flags}}`` of each one's code.
"""

import asyncio
import inspect
import json
import os
import types

import _common

H = _common.Harness.from_argv()
MADE = []  # every generator-like object made, kept alive
KEEP = []


def made(obj):
    MADE.append(obj)
    return obj


def produce():
    yield 1
    H.record(); os.read(H.fd(), 1)
    yield 2


def drive_generator():
    g = made(produce())
    assert next(g) == 1
    next(g)


async def handle():
    H.record(); os.read(H.fd(), 1)


async def serve():
    await made(handle())


def drive_coroutine():
    made(serve()).send(None)


async def ticks():
    H.record(); os.read(H.fd(), 1)
    yield "tick"


async def consume_ticks():
    await made(ticks()).asend(None)


def drive_async_generator():
    made(consume_ticks()).send(None)


@types.coroutine
def legacy_wait():
    H.record(); os.read(H.fd(), 1)
    yield


async def use_legacy():
    await made(legacy_wait())


def drive_types_coroutine():
    made(use_legacy()).send(None)


async def stream(never):
    await never
    yield "never"


async def read_stream(never):
    async for _ in made(stream(never)):
        pass


async def loop_main():
    loop = asyncio.get_running_loop()
    never = loop.create_future()
    KEEP.append(never)
    reader = asyncio.create_task(made(read_stream(never)), name="reader")
    KEEP.append(reader)
    await asyncio.sleep(0)  # the reader runs to its suspension
    await asyncio.sleep(0)
    H.record(); os.read(H.fd(), 1)


def run_loop():
    loop = asyncio.new_event_loop()
    KEEP.append(loop)
    loop.run_until_complete(made(loop_main()))


def kind(obj):
    """The type of a generator-like object, as inspect tells it."""
    found = [name for name, test in (("generator", inspect.isgenerator),
                                     ("coroutine", inspect.iscoroutine),
                                     ("async_generator", inspect.isasyncgen))
             if test(obj)]
    assert len(found) == 1, (obj, found)
    return found[0]


def code_of(obj):
    for attr in ("gi_code", "cr_code", "ag_code"):
        code = getattr(obj, attr, None)
        if code is not None:
            return code
    raise AssertionError(obj)


def main():
    H.start(drive_generator, name="generator")
    H.start(drive_coroutine, name="coroutine")
    H.start(drive_async_generator, name="async-generator")
    H.start(drive_types_coroutine, name="types-coroutine")
    H.start(run_loop, name="loop")
    H._wait_ready()
    facts = {"owners": {}, "co_flags": {}}
    for obj in MADE:
        code = code_of(obj)
        facts["owners"][code.co_qualname] = kind(obj)
        facts["co_flags"][code.co_qualname] = code.co_flags
    path = os.path.join(H.workdir, "owners.json")
    with open(path + ".tmp", "w") as f:
        json.dump(facts, f)
    os.replace(path + ".tmp", path)
    H.publish_and_block()


if __name__ == "__main__":
    main()
