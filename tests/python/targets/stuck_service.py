"""A stuck asyncio service, as a new user's app gets stuck: every task
waits on something different (CPython 3.14+ reads tasks).

``asyncio.run(main())``; the main task ("main", running) starts the tasks
below, waits until each is suspended at its last await, writes the record
and blocks the loop for good in ``H.publish_truth`` (its thread in
os.read).  The tasks, each at its leaf:

* "fetcher": ``await self.response`` in ``Client.fetch``, a bare Future
  (``loop.create_future()``) never set, held by the Client;
* "supervisor": ``await fetch_task``, the task "fetcher";
* "heartbeat": ``await asyncio.sleep(3600)``;
* "consumer": ``await jobs.get()`` on the empty asyncio.Queue ``jobs``;
* "waiter": ``await shutdown.wait()`` on the asyncio.Event ``shutdown``;
* "holder" holds ``db_lock`` (``async with``) and sleeps; "locker" waits
  for it in ``async with db_lock``;
* "gatherer": ``await asyncio.gather(part("a"), part("b"))``, whose two
  unnamed tasks wait on the Event ``parts_done``.

The record (service.json), read from inside the target through
asyncio.all_tasks(): per task (but "main") its id, name, what it awaits
as the task itself says (``_fut_waiter``: its id and type), and its
coroutine stack innermost first (through cr_await), each frame's qualname,
its locals as ``{name: repr}`` (an instance's default repr, as a reader
shows it without running code), and the id of its ``self`` (None without
one); plus the ids of the objects the tasks wait on by name.
"""

import asyncio
import types

import _common

H = _common.Harness.from_argv()

jobs = None
shutdown = None
parts_done = None
db_lock = None
REACHED = set()
EXPECTED = {"fetcher", "supervisor", "heartbeat", "consumer", "waiter", "holder", "locker",
            "part-a", "part-b"}


class Client(object):
    def __init__(self, url):
        self.url = url
        self.response = asyncio.get_running_loop().create_future()

    async def fetch(self):
        attempt = 1
        REACHED.add("fetcher"); return await self.response


async def supervise(fetch_task):
    restarts = 0
    REACHED.add("supervisor"); await fetch_task


async def heartbeat(interval):
    beats = 0
    while True:
        beats += 1
        REACHED.add("heartbeat"); await asyncio.sleep(interval)


async def consume():
    handled = []
    REACHED.add("consumer"); job = await jobs.get()


async def wait_for_shutdown(reason):
    REACHED.add("waiter"); await shutdown.wait()


async def hold():
    async with db_lock:
        REACHED.add("holder"); await asyncio.sleep(3600)


async def use_db(query):
    REACHED.add("locker")
    async with db_lock:
        pass


async def part(label):
    REACHED.add("part-" + label); await parts_done.wait()


async def gather_parts():
    await asyncio.gather(part("a"), part("b"))


def _repr(value):
    """repr() as a reader shows it without running code: builtin values'
    own, an instance's default one."""
    if isinstance(value, (type(None), bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, list):
        return "[%s]" % ", ".join(_repr(v) for v in value)
    if isinstance(value, tuple):
        return "(%s)" % (_repr(value[0]) + "," if len(value) == 1 else
                         ", ".join(_repr(v) for v in value))
    if isinstance(value, dict):
        return "{%s}" % ", ".join("%s: %s" % (_repr(k), _repr(v)) for k, v in value.items())
    if isinstance(value, (types.FunctionType, types.CoroutineType, types.BuiltinMethodType,
                          types.MethodType)):
        return repr(value)
    return object.__repr__(value)


def _type(value):
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else \
        "%s.%s" % (cls.__module__, cls.__qualname__)


def _stack(task):
    out = []
    coro = task.get_coro()
    while isinstance(coro, types.CoroutineType) and coro.cr_frame is not None:
        frame = coro.cr_frame
        f_locals = dict(frame.f_locals)
        out.append({"function": frame.f_code.co_qualname,
                    "locals": {k: _repr(v) for k, v in f_locals.items()},
                    "self": id(f_locals["self"]) if "self" in f_locals else None})
        coro = coro.cr_await
    out.reverse()
    return out


def record():
    current = asyncio.current_task()
    tasks = []
    for task in asyncio.all_tasks():
        if task is current:
            continue
        waiter = task._fut_waiter
        tasks.append({"id": id(task), "name": task.get_name(),
                      "fut_waiter": id(waiter) if waiter is not None else None,
                      "fut_type": _type(waiter) if waiter is not None else None,
                      "coroutine_stack": _stack(task)})
    return {"tasks": tasks, "objects": {"jobs": id(jobs), "shutdown": id(shutdown),
                                        "parts_done": id(parts_done), "db_lock": id(db_lock)}}


async def main():
    global jobs, shutdown, parts_done, db_lock
    jobs, shutdown, parts_done, db_lock = (asyncio.Queue(), asyncio.Event(), asyncio.Event(),
                                           asyncio.Lock())
    client = Client("https://example.org/api")
    fetch_task = asyncio.create_task(client.fetch(), name="fetcher")
    started = [fetch_task,
               asyncio.create_task(supervise(fetch_task), name="supervisor"),
               asyncio.create_task(heartbeat(3600), name="heartbeat"),
               asyncio.create_task(consume(), name="consumer"),
               asyncio.create_task(wait_for_shutdown("maintenance"), name="waiter"),
               asyncio.create_task(hold(), name="holder")]
    while "holder" not in REACHED:
        await asyncio.sleep(0)
    started += [asyncio.create_task(use_db("SELECT 1"), name="locker"),
                asyncio.create_task(gather_parts(), name="gatherer")]
    while REACHED != EXPECTED:
        await asyncio.sleep(0)
    await asyncio.sleep(0)  # the last ones to reach their leaf suspend
    H.publish_truth("service.json", record)


asyncio.run(main(), debug=False)
