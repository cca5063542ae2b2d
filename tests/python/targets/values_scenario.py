"""Scenario: frames holding values of every builtin type, for --locals,
Target.frame_locals and py-print (tests/python/test_values.py).

Two threads run the same chain of calls with different values, each frame
holding arguments, locals, cells and free variables:

* "values-a": ``chain`` -> ``outer`` -> ``inner`` (a closure: free
  variables of ``outer``; it calls ``leaf`` inside an inlined list
  comprehension, whose variable is a local of ``inner``) ->
  ``leaf``;
* "values-b": the same down to ``inner``, which resumes the generator
  ``gen_body``, which sends into the coroutine ``coro_body``, which calls
  ``leaf``: a generator frame and a coroutine frame on the stack.

``leaf`` holds every type as a local (and some as cells: captured by a
closure), among them a 2 MB str, a 100,000-item list, a dict of 1,000 keys,
a self-referencing list and dict, an instance whose __dict__ is a split
table (its class has several instances), an int of 1,000 digits, NaN, -0.0,
1e300, str of every kind with control characters, and ``later``, unbound
while the thread is blocked.

The oracle, written to ``values.json`` beside the handshake before it:
``{"threads": {"<native tid>": [frame, ...]}}`` innermost first, each frame
``{"function": co_qualname (co_name before 3.11, which has none), "args": [argument names], "cells":
co_cellvars, "frees": co_freevars, "locals": {name: spec}}`` over the
frame's own ``f_locals`` (bound names only), where spec
is how the test builds the text it expects: ``{"repr": repr(value)}``; a
module whose repr() is its loader's (3.8's sys) ``{"cut": the text shown,
marked cut}``; a str never made ready (3.8 to 3.11) ``{"unreadable": why}``;
or
for a value the default limits cut (200 chars, 100 items), ``{"str":
repr(first 200 chars), "more": N}``, ``{"items": [repr(item), ...],
"more": N}`` or ``{"pairs": [[repr(key), repr(value)], ...], "more": N}``;
an instance of any class of this file
(builtin subclasses too, but not exceptions) ``{"repr":
object.__repr__(value)}`` (no code runs in the target when pyframes reads
it).  ``"globals"``: specs of a few module globals for py-print.
"""

import json
import os
import sys
import threading

import _common

H = _common.Harness.from_argv()
RECORDS = {}
LOCK = threading.Lock()
MAX_STRING, MAX_ITEMS = 200, 100


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm(self):
        return abs(self.x) + abs(self.y)


class Slotted:
    __slots__ = ("a", "b")

    def __init__(self):
        self.a = "slot a"


class SlottedChild(Slotted):
    __slots__ = ("c",)

    def __init__(self):
        super().__init__()
        self.c = "slot c"


class Flagged:
    """Before 3.11, its type's flags carry bit 1 << 4 (set below), which
    3.11+ name Py_TPFLAGS_MANAGED_DICT and older versions leave unused: its
    instances' __dict__ is still at tp_dictoffset."""

    def __init__(self):
        self.x = "flagged"


def _set_flag_bit_4(cls):
    """cls.__flags__ | 1 << 4, written into its type object's tp_flags (the
    word holding __flags__)."""
    import ctypes
    for off in range(0, 512, 8):
        word = ctypes.c_ulong.from_address(id(cls) + off)
        if word.value == cls.__flags__:
            word.value |= 1 << 4
            if cls.__flags__ & (1 << 4):
                return
            word.value &= ~(1 << 4)
    raise RuntimeError("no tp_flags found in %r" % cls)


if sys.version_info < (3, 11):
    _set_flag_bit_4(Flagged)


def _legacy_str(text, ready):
    """A str of 3.8 to 3.11's legacy layout (not compact: its characters in
    a buffer of their own), made through their C API:
    PyUnicode_FromUnicode(NULL, n) (not ready: only a wchar_t buffer),
    filled, and with ready made ready (_PyUnicode_Ready: a data pointer);
    None where the API is gone (3.12+), where ctypes is not loaded at all
    (lldb 21 then reads its own minidump of pyenv's 3.13: with ctypes
    loaded, it "could not parse memory info" of the frames)."""
    if sys.version_info >= (3, 12):
        return None
    import ctypes
    import warnings
    api = ctypes.pythonapi
    new, chars = api.PyUnicode_FromUnicode, api.PyUnicode_AsUnicode
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_ssize_t]
    chars.restype, chars.argtypes = ctypes.c_void_p, [ctypes.py_object]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = new(None, len(text))
    data = text.encode("utf-32-le")
    ctypes.memmove(chars(s), data, len(data))
    if ready:
        api._PyUnicode_Ready.argtypes = [ctypes.py_object]
        api._PyUnicode_Ready(s)
    return s


class WithRepr:
    def __repr__(self):
        return "WithRepr() -- never shown by pyframes"


class MyError(Exception):
    pass


class MyList(list):
    pass


class MyInt(int):
    pass


POINTS = [Point(i, -i) for i in range(5)]  # several instances: split-table dicts
BIG_STR = "0123456789abcdef" * (2 * 1024 * 1024 // 16)
BIG_LIST = list(range(100000))
BIG_DICT = {"k%d" % i: i * i for i in range(1000)}
BIG_INT = int("7" * 999 + "1")
SELF_LIST = [1, "two"]
SELF_LIST.append(SELF_LIST)
SELF_DICT = {"name": "self"}
SELF_DICT["me"] = SELF_DICT
NESTED = {"a": [1, {"b": (2, [3, {"c": "deep"}])}]}
GLOBAL_NUMBER = 4242
# the spec of a str never made ready (3.8 to 3.11): not decoded
UNREADY = {"unreadable": "a str never made ready (its characters only in its wchar_t buffer): "
                         "not decoded"}


def spec(value):
    t = type(value)
    if t is str and len(value) > MAX_STRING:
        return {"str": repr(value[:MAX_STRING]), "more": len(value) - MAX_STRING}
    if t in (list, tuple) and len(value) > MAX_ITEMS:
        return {"items": [repr(x) for x in value[:MAX_ITEMS]], "more": len(value) - MAX_ITEMS}
    if t is dict and len(value) > MAX_ITEMS:
        pairs = list(value.items())[:MAX_ITEMS]
        return {"pairs": [[repr(k), repr(v)] for k, v in pairs], "more": len(value) - MAX_ITEMS}
    if t is type(sys) and getattr(value.__spec__, "origin", "") is None and \
            hasattr(value.__loader__, "module_repr"):
        # 3.8's sys: a spec without origin, whose repr() is its loader's
        # module_repr (asked first before 3.10), which pyframes does not
        # run: shown cut (PYF_VALUE_TRUNCATED), by its name
        return {"cut": "<module %r>" % value.__name__}
    if t.__module__ == __name__ and not isinstance(value, BaseException):
        # a class of this file, a builtin's subclass too: its default repr
        # (an exception's repr is BaseException's, its args)
        return {"repr": object.__repr__(value)}
    return {"repr": repr(value)}


def record_values():
    """The oracle of this thread: every frame of this file from the
    caller outwards."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        code = frame.f_code
        nargs = (code.co_argcount + code.co_kwonlyargcount
                 + bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08))
        frames.append({"function": getattr(code, "co_qualname", code.co_name),
                       "args": list(code.co_varnames[:nargs]),
                       "cells": list(code.co_cellvars), "frees": list(code.co_freevars),
                       "locals": {name: UNREADY if name == "v_unready_str" and v is not None
                                  else spec(v) for name, v in frame.f_locals.items()}})
        frame = frame.f_back
    with LOCK:
        RECORDS[str(threading.get_native_id())] = frames


async def agen():
    yield 1


async def never():
    pass


def leaf(number, text, *rest, flag=False, **options):
    # every v_* is assigned for the reader to find, never used
    v_none = None
    v_true = True
    v_int = 12345 if flag else -7
    v_bigint = BIG_INT
    v_neg_bigint = -BIG_INT
    v_float = 0.1
    v_nan = float("nan")
    v_negzero = -0.0
    v_huge = 1e300
    v_inf = float("-inf")
    v_complex = complex(1.5, -0.0)
    v_ascii = "plain ascii"
    v_controls = "tab\t nl\n cr\r nul\x00 esc\x1b[2J bell\x07 del\x7f c1\x85 \\ end"
    v_latin1 = "caf\xe9 \xff \xa0"
    v_ucs2 = "\u4e2d\u6587 \u202e bidi \u2028 \ufeff"
    v_ucs4 = "snake \U0001f40d \U0010ffff"
    v_surrogate = "lone \ud800 \udfff"
    # 3.8 to 3.11: a legacy str made ready (read through its data pointer),
    # and one never made ready (not decoded; record_values does not call
    # its repr(), which would make it ready)
    v_legacy_str = _legacy_str("legacy \u4e2d str", True)
    v_unready_str = _legacy_str("never ready", False)
    v_quotes = "it's \"quoted\""
    v_bytes = b"\x00\xff'\"bytes\n"
    v_bytearray = bytearray(b"ba'\x01")
    v_empty_tuple = ()
    v_one_tuple = (number,)
    v_tuple = (1, "a", (2,), [])
    v_list = [1, "two", 3.0, None, [True]]
    v_empty_list = []
    v_dict = {"a": 1, 2: [3], (4,): {5}, None: frozenset({6})}
    v_empty_dict = {}
    v_set = {1, 2, 3}
    v_empty_set = set()
    v_frozenset = frozenset({"x"})
    v_empty_frozenset = frozenset()
    v_range = range(3, 30, 3)
    v_range1 = range(5)
    v_class = Point
    v_builtin_type = int
    v_function = outer
    v_lambda = lambda: number  # noqa: E731
    v_builtin = len
    v_builtin_method = BIG_LIST.append
    v_bound = POINTS[0].norm
    v_module = os
    v_builtin_module = sys
    v_file_module = json
    v_code = outer.__code__
    v_gen = (i for i in range(2))
    v_coro = never()
    v_agen = agen()
    v_exc = ValueError("bad", 3)
    v_exc1 = KeyError("k")
    v_exc0 = RuntimeError()
    v_user_exc = MyError("mine", [1])
    v_sub_list = MyList([1, 2])
    v_sub_int = MyInt(5)
    v_ellipsis = ...
    v_notimpl = NotImplemented
    v_cell = (lambda: text).__closure__[0]
    v_instance = POINTS[3]
    v_slotted = Slotted()
    v_slotted_child = SlottedChild()
    v_with_repr = WithRepr()
    v_flagged = Flagged()
    v_object = object()
    v_big_str = BIG_STR
    v_big_list = BIG_LIST
    v_big_dict = BIG_DICT
    v_self_list = SELF_LIST
    v_self_dict = SELF_DICT
    v_nested = NESTED

    def uses():  # makes these cells
        return v_list, number, v_instance

    record_values(); H.record(); os.read(H.fd(), 1)
    later = uses  # unbound while blocked
    return later


def gen_body(seed, label="gen"):
    g_local = [seed, label]
    yield coro_body(seed * 2, g_local).send(None)


async def coro_body(value, shared):
    c_local = {"value": value, "shared": shared}
    leaf(value, "from a coroutine", c_local, 2.5, flag=True, extra=shared)


def outer(n, text, *args, kw="default", **kwargs):
    captured = [n, text]
    counter = n * 10

    def inner(step):
        local_here = (step, captured, counter)
        if text == "b":
            g = gen_body(n)
            next(g)
        # an inlined comprehension: comp_step, bound while leaf runs (in
        # values-b, unbound: the generator above blocks first)
        return [leaf(n + comp_step, text, captured, local_here, flag=bool(n), key=kw)
                for comp_step in (step,)]

    return inner(1)


def chain(variant):
    tags = [tag for tag in (variant,)]  # tag: unbound again after it
    if variant == "a":
        outer(1, "a", 3.5, None, kw="ka", extra={"x": 1})
    else:
        outer(2, "b", kw=b"kb")


def main():
    H.start(chain, "a", name="values-a")
    H.start(chain, "b", name="values-b")
    H._wait_ready()
    doc = {"threads": RECORDS,
           "globals": {name: spec(globals()[name])
                       for name in ("GLOBAL_NUMBER", "POINTS", "NESTED", "BIG_DICT")}}
    # read by the test once the handshake has come, after this
    with open(os.path.join(H.workdir, "values.json"), "w") as f:
        json.dump(doc, f)
    H.publish_and_block()


if __name__ == "__main__":
    main()
