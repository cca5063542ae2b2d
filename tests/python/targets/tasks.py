"""Scenario: asyncio task trees (CPython 3.14+; runs on 3.13 too).

``pythonX.Y tasks.py HANDSHAKE [--idle N] [--cycle]``

Thread "MainThread" runs ``asyncio.run(main())``; the main task is named
"main" and awaits the task "runner", the running task of the main thread,
which blocks the loop for good inside ``H.publish_and_block()``.  Every other
task of the loop is suspended first (each leaf notes its name in REACHED just
before its final await; the runner waits for all of them):

* "tg-parent" (tg_parent, suspended in ``TaskGroup.__aexit__``) with three
  children "tg-child-0".."tg-child-2" (tg_child -> Event.wait).
* "gather-parent" (gather_parent) awaiting ``asyncio.gather`` of
  gather_leaf_a and gather_leaf_b: two UNNAMED tasks ("Task-4", "Task-5").
* "nested": nest_a -> nest_b -> nest_c awaiting NEVER, a Future never set.
* "shielded" (shielded_leaf -> Event.wait) and "shield-waiter"
  (shield_waiter, ``await asyncio.shield(shielded task)``).
* two unnamed tasks, "Task-2" and "Task-3" (unnamed_leaf -> Event.wait);
  asyncio.run's main task was "Task-1" before it was renamed "main".
* tasks created with ``name=12345`` and ``name=SomeObject()``
  (str(): "some-object-str", repr(): "SomeObject()"), both name_leaf.
* "agen-for": agen_for iterating ``async for`` over ticker_agen, suspended
  inside the generator (Event.wait).
* "agen-asend": agen_asend driving echo_agen with ``await ag.asend(x)``,
  suspended inside the generator.
* "agen-athrow": agen_athrow driving catcher_agen with ``await ag.athrow()``,
  suspended inside the generator's except block.
* "sleeper": ``asyncio.sleep(3600)``.
* "finished" (done, result 42) and "cancelled" (cancelled): done tasks kept
  alive by the globals FINISHED and CANCELLED.
* ``--idle N``: N tasks "idle-0".."idle-<N-1>" (idle_leaf -> Event.wait).
* ``--cycle``: "cycle-a" (cycle_a) awaits the task "cycle-b" (cycle_b),
  which awaits "cycle-a": an await cycle between two real tasks (asyncio
  only refuses a task awaiting itself).

Thread "loop-thread" runs its own loop (``new_event_loop`` +
``run_until_complete``): "worker-main" (worker_main) awaits
"worker-runner" (worker_runner, the running task of that thread, blocked in
``os.read``); "worker-a" (worker_a_leaf -> Event.wait); "worker-b"
(worker_b_outer -> worker_b_inner awaiting a Future never set).

Thread "exited-loop" ran a loop, created "orphan" (orphan_outer ->
orphan_leaf -> Event.wait), stopped the loop once the orphan was suspended
and EXITED (it is not a harness thread and has no view).  The orphan task
and its loop stay alive through ORPHAN; CPython 3.14+ then keeps the task
in the interpreter's list of tasks.

Task facts: before the handshake completes, the program writes a JSON file
to $PYFRAMES_TASKS_OUT (default: ``tasks.json`` next to the handshake, i.e.
in LiveTarget's workdir):

    {"pid", "version": [maj, min, micro],
     "threads": {"main" | "loop-thread" | "exited-loop": native tid},
     "exited_threads": [native tid of "exited-loop"],
     "running": {"<native tid>": task id},
     "tasks": [{"id", "name", "name_stored", "role", "coro", "done",
                "cancelled", "thread", "thread_name", "coroutine_stack",
                "awaited_by"}, ...]}

``id`` is id(task) (its address); ``name`` what task.get_name() gives;
``name_stored`` "int" or "str": the C Task keeps the name of an unnamed task
as an int N (shown as "Task-N") until get_name()/repr() first stores the
str for good, so unnamed-0 and gather-a keep the int (their "Task-N" is
predicted from the creation order, checked on unnamed-1 and gather-b, which
are materialized); ``coro`` the __qualname__ of the task's coroutine;
``thread`` the native id of the thread that created it (its loop's thread);
``role`` this program's label (the name for named tasks; "gather-a",
"gather-b", "unnamed-0", "unnamed-1", "name-int", "name-object" for the
others; "idle" for idle tasks); ``coroutine_stack`` [[qualname, filename,
line], ...] innermost first, walked in-process (cr_await / ag_await /
gi_yieldfrom, through async_generator_asend/athrow to their generator;
the running tasks "runner" and "worker-runner" are seen on the line where
they block); ``awaited_by`` sorted ids from the task's
``_asyncio_awaited_by``.  Every task of asyncio.all_tasks() is listed, plus
the done tasks ("name": None for a task the program did not create itself).
"""

import asyncio
import gc
import json
import os
import sys
import threading
import types

import _common

H = _common.Harness.from_argv()


def _options(argv):
    idle, cycle = 0, False
    i = 0
    while i < len(argv):
        if argv[i] == "--idle":
            idle = int(argv[i + 1])
            i += 2
        elif argv[i] == "--cycle":
            cycle = True
            i += 1
        else:
            sys.exit("unknown option %r" % argv[i])
    return idle, cycle


IDLE, CYCLE = _options(sys.argv[2:])

REACHED = set()            # names of the leaves suspended (main loop)
FACTS = []                 # task facts from the other threads
FACTS_LOCK = threading.Lock()
WORKER_FACTS = threading.Event()
THREADS = {}               # label -> native tid
RUNNING = {}               # native tid -> id(running task)
KEEP = []                  # async generators and other objects kept alive
ROLES = {}                 # id(task) -> (task, role, creator tid, lazy name)
UNNAMED = [1]              # unnamed tasks so far: asyncio.run's main task is Task-1

FINISHED = None
CANCELLED = None
ORPHAN = None              # (loop, task, event) of the exited thread


def note(task, role):
    """Remember a task created with a name (or renamed)."""
    ROLES[id(task)] = (task, role, threading.get_native_id(), None)
    return task


def note_unnamed(task, role, materialize=False):
    """Remember a task created WITHOUT a name.  Its name stays an int
    (rendered "Task-N" by get_name()) until get_name() or repr() turns it
    into a str for good: never call them unless materialize, which checks
    the expected name against get_name()."""
    UNNAMED[0] += 1
    expected = "Task-%d" % UNNAMED[0]
    if materialize:
        got = task.get_name()
        if got != expected:
            raise RuntimeError("unnamed task is %r, expected %r" % (got, expected))
        ROLES[id(task)] = (task, role, threading.get_native_id(), None)
    else:
        ROLES[id(task)] = (task, role, threading.get_native_id(), expected)
    return task


def _asend_target(obj):
    for ref in gc.get_referents(obj):
        if isinstance(ref, types.AsyncGeneratorType):
            return ref
    return None


def coroutine_stack(task):
    """The task's coroutine chain as (qualname, filename, line), innermost
    first: coroutine -> cr_await, async generator -> ag_await, generator ->
    gi_yieldfrom, async_generator_asend/athrow -> its async generator; stops
    at anything else (a Future, a Task)."""
    out = []
    obj = task.get_coro()
    for _ in range(1000):
        if isinstance(obj, types.CoroutineType):
            frame, nxt = obj.cr_frame, obj.cr_await
        elif isinstance(obj, types.AsyncGeneratorType):
            frame, nxt = obj.ag_frame, obj.ag_await
        elif isinstance(obj, types.GeneratorType):
            frame, nxt = obj.gi_frame, obj.gi_yieldfrom
        elif type(obj).__name__ in ("async_generator_asend", "async_generator_athrow"):
            frame, nxt = None, _asend_target(obj)
        else:
            break
        if frame is not None:
            out.append([frame.f_code.co_qualname, frame.f_code.co_filename, frame.f_lineno])
        obj = nxt
    out.reverse()
    return out


def fact(task, role, tid, lazy):
    coro = task.get_coro()
    awaited_by = getattr(task, "_asyncio_awaited_by", None) or ()
    return {
        "id": id(task),
        "name": lazy if lazy is not None else task.get_name(),
        "name_stored": "int" if lazy is not None else "str",
        "role": role,
        "coro": getattr(coro, "__qualname__", None) if coro is not None else None,
        "done": task.done(),
        "cancelled": task.cancelled(),
        "thread": tid,
        "thread_name": threading.current_thread().name if tid == threading.get_native_id() else None,
        "coroutine_stack": coroutine_stack(task),
        "awaited_by": sorted(id(t) for t in awaited_by),
    }


def facts_of_this_thread(loop):
    """Facts of every task noted by this thread, plus all_tasks(loop) (those
    with "name": None: not noted, their name is left alone)."""
    me = threading.get_native_id()
    out, seen = [], set()
    for task, role, tid, lazy in list(ROLES.values()):
        if tid == me:
            out.append(fact(task, role, tid, lazy))
            seen.add(id(task))
    for task in asyncio.all_tasks(loop):
        if id(task) not in seen:
            out.append(fact(task, None, me, "?"))
            out[-1]["name"] = None
    return out


# -- main loop: leaves and parents -----------------------------------------

class SomeObject:
    def __str__(self):
        return "some-object-str"

    def __repr__(self):
        return "SomeObject()"


async def tg_child(ev, i):
    REACHED.add("tg-child-%d" % i); await ev.wait()


async def tg_parent(ev):
    async with asyncio.TaskGroup() as tg:
        for i in range(3):
            note(tg.create_task(tg_child(ev, i), name="tg-child-%d" % i), "tg-child-%d" % i)


async def gather_leaf_a(ev):
    REACHED.add("gather-a"); await ev.wait()


async def gather_leaf_b(ev):
    REACHED.add("gather-b"); await ev.wait()


async def gather_parent(ev):
    fut = asyncio.gather(gather_leaf_a(ev), gather_leaf_b(ev))
    a, b = fut._children
    note_unnamed(a, "gather-a")
    note_unnamed(b, "gather-b", materialize=True)
    await fut


NEVER = None


async def nest_c():
    REACHED.add("nested"); await NEVER


async def nest_b():
    await nest_c()


async def nest_a():
    await nest_b()


async def shielded_leaf(ev):
    REACHED.add("shielded"); await ev.wait()


async def shield_waiter(task):
    REACHED.add("shield-waiter"); await asyncio.shield(task)


async def unnamed_leaf(ev, i):
    REACHED.add("unnamed-%d" % i); await ev.wait()


async def name_leaf(ev, role):
    REACHED.add(role); await ev.wait()


async def ticker_agen(ev):
    yield 1
    REACHED.add("agen-for"); await ev.wait()
    yield 2


async def agen_for(ev):
    async for _ in ticker_agen(ev):
        pass


async def echo_agen(ev):
    value = yield "ready"
    while True:
        if value == "block":
            REACHED.add("agen-asend"); await ev.wait()
        value = yield value


async def agen_asend(ev):
    ag = echo_agen(ev)
    KEEP.append(ag)
    assert await ag.asend(None) == "ready"
    assert await ag.asend(7) == 7
    await ag.asend("block")


async def catcher_agen(ev):
    try:
        yield "ready"
    except ValueError:
        REACHED.add("agen-athrow"); await ev.wait()
        yield "caught"


async def agen_athrow(ev):
    ag = catcher_agen(ev)
    KEEP.append(ag)
    assert await ag.asend(None) == "ready"
    await ag.athrow(ValueError("thrown"))


async def sleeper():
    REACHED.add("sleeper"); await asyncio.sleep(3600)


async def idle_leaf(ev, i):
    REACHED.add("idle-%d" % i); await ev.wait()


CYCLE_TASKS = {}


async def cycle_a():
    while "b" not in CYCLE_TASKS:
        await asyncio.sleep(0)
    REACHED.add("cycle-a"); await CYCLE_TASKS["b"]


async def cycle_b():
    while "a" not in CYCLE_TASKS:
        await asyncio.sleep(0)
    REACHED.add("cycle-b"); await CYCLE_TASKS["a"]


async def finishes():
    return 42


async def gets_cancelled(ev):
    await ev.wait()


# -- thread "loop-thread" -----------------------------------------------------

WORKER_REACHED = set()


async def worker_a_leaf(ev):
    WORKER_REACHED.add("worker-a"); await ev.wait()


async def worker_b_inner(fut):
    WORKER_REACHED.add("worker-b"); await fut


async def worker_b_outer(fut):
    await worker_b_inner(fut)


def worker_facts(loop):
    RUNNING[threading.get_native_id()] = id(asyncio.current_task())
    with FACTS_LOCK:
        FACTS.extend(facts_of_this_thread(loop))
    WORKER_FACTS.set()


async def worker_runner(loop):
    while not {"worker-a", "worker-b"} <= WORKER_REACHED:
        await asyncio.sleep(0)
    for _ in range(3):
        await asyncio.sleep(0)
    # The facts, the view and the block on one line: the facts see the
    # runner at the line where it stays.
    worker_facts(loop); H.record(); os.read(H.fd(), 1)


async def worker_main(loop):
    ev = asyncio.Event()
    note(loop.create_task(worker_a_leaf(ev), name="worker-a"), "worker-a")
    note(loop.create_task(worker_b_outer(loop.create_future()), name="worker-b"), "worker-b")
    runner = note(loop.create_task(worker_runner(loop), name="worker-runner"), "worker-runner")
    await runner


def loop_thread():
    THREADS["loop-thread"] = threading.get_native_id()
    loop = asyncio.new_event_loop()
    KEEP.append(loop)
    main_task = note(loop.create_task(worker_main(loop), name="worker-main"), "worker-main")
    loop.run_until_complete(main_task)


# -- thread "exited-loop" -----------------------------------------------------

async def orphan_leaf(ev, ready):
    ready.set_result(None); await ev.wait()


async def orphan_outer(ev, ready):
    await orphan_leaf(ev, ready)


def exited_thread():
    global ORPHAN
    THREADS["exited-loop"] = threading.get_native_id()
    loop = asyncio.new_event_loop()
    ev = asyncio.Event()
    ready = loop.create_future()
    task = note(loop.create_task(orphan_outer(ev, ready), name="orphan"), "orphan")
    loop.run_until_complete(ready)   # stops once the orphan is suspended
    ORPHAN = (loop, task, ev)
    with FACTS_LOCK:
        FACTS.extend(facts_of_this_thread(loop))


# -- main thread --------------------------------------------------------------

def write_facts(loop):
    data = {
        "pid": os.getpid(),
        "version": list(sys.version_info[:3]),
        "threads": THREADS,
        "exited_threads": [THREADS["exited-loop"]],
        "running": {str(tid): task_id for tid, task_id in RUNNING.items()},
        "tasks": FACTS + facts_of_this_thread(loop),
    }
    path = os.environ.get("PYFRAMES_TASKS_OUT") or os.path.join(H.workdir, "tasks.json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


async def runner(expected):
    while not expected <= REACHED:
        await asyncio.sleep(0)
    for _ in range(3):
        await asyncio.sleep(0)
    RUNNING[threading.get_native_id()] = id(asyncio.current_task())
    # The other threads: the worker has noted its facts and is about to
    # block (the harness waits for that); the exited thread is gone.
    WORKER_FACTS.wait()
    loop = asyncio.get_running_loop()
    # One line, so that the facts see the runner where it blocks.
    write_facts(loop); H.publish_and_block()


async def main():
    global NEVER, FINISHED, CANCELLED
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    me.set_name("main")
    note(me, "main")
    ev = asyncio.Event()           # never set
    NEVER = loop.create_future()

    FINISHED = note(asyncio.create_task(finishes(), name="finished"), "finished")
    CANCELLED = note(asyncio.create_task(gets_cancelled(ev), name="cancelled"), "cancelled")
    await asyncio.sleep(0)
    CANCELLED.cancel()
    assert await FINISHED == 42
    try:
        await CANCELLED
    except asyncio.CancelledError:
        pass
    assert FINISHED.done() and CANCELLED.cancelled()

    expected = set()
    note(asyncio.create_task(tg_parent(ev), name="tg-parent"), "tg-parent")
    expected |= {"tg-child-0", "tg-child-1", "tg-child-2"}
    note(asyncio.create_task(gather_parent(ev), name="gather-parent"), "gather-parent")
    expected |= {"gather-a", "gather-b"}
    note(asyncio.create_task(nest_a(), name="nested"), "nested")
    expected.add("nested")
    shielded = note(asyncio.create_task(shielded_leaf(ev), name="shielded"), "shielded")
    note(asyncio.create_task(shield_waiter(shielded), name="shield-waiter"), "shield-waiter")
    expected |= {"shielded", "shield-waiter"}
    # unnamed-0 keeps its int name, unnamed-1's becomes a str.
    for i in range(2):
        note_unnamed(asyncio.create_task(unnamed_leaf(ev, i)), "unnamed-%d" % i,
                     materialize=(i == 1))
        expected.add("unnamed-%d" % i)
    note(asyncio.create_task(name_leaf(ev, "name-int"), name=12345), "name-int")
    note(asyncio.create_task(name_leaf(ev, "name-object"), name=SomeObject()), "name-object")
    expected |= {"name-int", "name-object"}
    for role, func in (("agen-for", agen_for), ("agen-asend", agen_asend),
                       ("agen-athrow", agen_athrow)):
        note(asyncio.create_task(func(ev), name=role), role)
        expected.add(role)
    note(asyncio.create_task(sleeper(), name="sleeper"), "sleeper")
    expected.add("sleeper")
    for i in range(IDLE):
        note(asyncio.create_task(idle_leaf(ev, i), name="idle-%d" % i), "idle")
        expected.add("idle-%d" % i)
    if CYCLE:
        CYCLE_TASKS["a"] = note(asyncio.create_task(cycle_a(), name="cycle-a"), "cycle-a")
        CYCLE_TASKS["b"] = note(asyncio.create_task(cycle_b(), name="cycle-b"), "cycle-b")
        expected |= {"cycle-a", "cycle-b"}

    task = note(asyncio.create_task(runner(expected), name="runner"), "runner")
    await task


def start_exited_thread():
    t = threading.Thread(target=exited_thread, name="exited-loop")
    t.start()
    t.join()
    if ORPHAN is None:
        sys.exit("the exited-loop thread failed")


if __name__ == "__main__":
    THREADS["main"] = threading.get_native_id()
    start_exited_thread()
    H.start(loop_thread, name="loop-thread")
    asyncio.run(main())
