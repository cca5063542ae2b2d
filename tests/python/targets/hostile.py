"""Scenario: names that hold terminal control characters.

``pythonX.Y hostile.py HANDSHAKE``

Every name the target hands to pyframes holds characters that must never
reach a terminal raw: ESC sequences, BEL, CR, LF, TAB, DEL, NUL, C1 controls
(U+0085, U+009B), bidi overrides and isolates (U+202E, U+2066, U+2069), a
zero-width character, and ';' (the collapsed format's separator).

* thread "worker" (named HOSTILE_THREAD): ``outer`` -> ``leaf`` whose code
  objects are renamed with ``code.replace`` (co_name, co_qualname, and
  co_filename for ``leaf``) to hostile text; ``outer`` keeps its real file,
  a module written at run time under a file name with ESC and LF in it, whose
  source line holds an OSC sequence and a bidi override in a comment.
* main thread: ``asyncio.run`` of a coroutine function whose code and
  __qualname__ are hostile; on 3.14+ it creates tasks named with hostile
  text (coroutines with hostile qualnames), waits until they are suspended,
  then blocks in ``H.publish_and_block()``, inside its hostile coroutine.

Before the handshake the program writes ``hostile.json`` next to the
handshake file: {"thread_name", "tasks": [[task name, coroutine qualname]],
"functions": [qualname], "filenames": [co_filename]}: the exact strings it
defined (the oracle; json escapes them, so the file is ASCII).
"""

import asyncio
import json
import os
import sys

import _common

H = _common.Harness.from_argv()

# Each string mixes printable text (to recognise it) with the hostile ones.
BAD = "\x1b[31m\x07\r\n\t\x7f\x00\x85\x9b\u202e\u2066\u2069\u200b;"
HOSTILE_THREAD = "thr\x1b]0;pwned\x07" + BAD + "end"
LEAF_NAME = "leaf\x1b[2J" + BAD + "fn"
LEAF_QUALNAME = "Evil\x1b[1m.leaf\x1b[2J" + BAD + "fn"
LEAF_FILE = "/tmp/evil\x1b[41m" + BAD + "file.py"
OUTER_NAME = "outer\r\n  File \"fake.py\", line 1, in spoof" + BAD
MAIN_CORO = "main_coro\x1b[5m" + BAD + "co"
TASKS = [
    ("task\x1b[31mred" + BAD + "one", "task_coro\x1b]8;;x\x07" + BAD + "A"),
    ("task\u202eowt" + BAD + "two", "coro\u2066two" + BAD + "B"),
]
MODULE_FILE = "mod\x1b[7m\nline" + BAD.replace("\x00", "").replace("/", "") + ".py"


def renamed(func, name, qualname, filename=None):
    changes = {"co_name": name, "co_qualname": qualname}
    if filename is not None:
        changes["co_filename"] = filename
    func.__code__ = func.__code__.replace(**changes)
    func.__name__ = name
    func.__qualname__ = qualname
    return func


def leaf():
    H.record(); os.read(H.fd(), 1)


renamed(leaf, LEAF_NAME, LEAF_QUALNAME, LEAF_FILE)

OUTER_SRC = (
    "def outer(leaf):\n"
    "    return leaf()  # \x1b]0;title\x07 \u202eevil \x1b[2J\n"
)


def load_outer():
    moddir = os.path.join(H.workdir, "mods")
    os.makedirs(moddir, exist_ok=True)
    path = os.path.join(moddir, MODULE_FILE)
    with open(path, "w", encoding="utf-8") as f:
        f.write(OUTER_SRC)
    ns = {}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), ns)
    return renamed(ns["outer"], OUTER_NAME, OUTER_NAME), path


async def task_body(event):
    await event.wait()


async def main_coro(outer_file):
    tasks = []
    if sys.version_info >= (3, 14):
        event = asyncio.Event()
        for name, coro_name in TASKS:
            body = renamed(_clone(task_body), coro_name, coro_name)
            tasks.append(asyncio.get_running_loop().create_task(body(event), name=name))
        await asyncio.sleep(0)  # every task runs to its await
    _oracle(outer_file)
    H.publish_and_block()


def _clone(func):
    import types
    return types.FunctionType(func.__code__, func.__globals__, func.__name__)


renamed(main_coro, MAIN_CORO, MAIN_CORO)


def _oracle(outer_file):
    doc = {
        "thread_name": HOSTILE_THREAD,
        "tasks": TASKS if sys.version_info >= (3, 14) else [],
        "functions": [LEAF_QUALNAME, OUTER_NAME, MAIN_CORO],
        "filenames": [LEAF_FILE, outer_file],
    }
    path = os.path.join(H.workdir, "hostile.json")
    with open(path + ".tmp", "w", encoding="ascii") as f:
        json.dump(doc, f)
    os.replace(path + ".tmp", path)


def main():
    outer, outer_file = load_outer()
    H.start(outer, leaf, name=HOSTILE_THREAD)
    asyncio.run(main_coro(outer_file))


if __name__ == "__main__":
    main()
