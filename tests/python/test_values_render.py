"""The value renderer (pyframes.values) against repr() of real objects in
this process, through hand-built trees (no library, no target): each tree
is what pyframes.h says the library makes of the object, built here by
``tree()``, an encoder of its own written from the header's comments.
Also: the truncation, depth and cycle formats, the locals' text and JSON,
py-print's expression parser, and the ctypes mirror of the values part of
the header (constants and struct sizes)."""

import array
import math
import os
import re
import struct
import sys
import types

import pytest

import conftest  # noqa: F401  (the package on sys.path)
from pyframes import _abi, _convert, model, values
from pyframes.errors import CommandError
from pyframes.escaping import escape
from pyframes.model import Local, FrameValues, Value

HEADER = os.path.join(conftest.REPO, "native", "include", "pyframes.h")

TRUNC, CYCLE, DEEP, BUDGET = (_abi.PYF_VALUE_TRUNCATED, _abi.PYF_VALUE_CYCLE,
                              _abi.PYF_VALUE_TOO_DEEP, _abi.PYF_VALUE_BUDGET)


def _type_name(obj):
    t = type(obj)
    if t.__module__ == "builtins":
        return t.__qualname__
    return "%s.%s" % (t.__module__, t.__qualname__)


def _digits(n):
    n = abs(n)
    out = []
    while n:
        out.append(n & ((1 << 30) - 1))
        n >>= 30
    return out


def tree(obj, max_string=200, max_items=100, max_depth=6, _depth=0, _path=()):
    """The Value the library makes of obj, by the header's rules."""
    name = _type_name(obj)
    addr = id(obj)

    def node(kind, **kw):
        kw.setdefault("type_name", name)
        kw.setdefault("addr", addr)
        return Value(kind=kind, **kw)

    def below(child):
        return tree(child, max_string, max_items, max_depth, _depth + 1, _path + (addr,))

    def items(kind, seq, per=1):
        seq = list(seq)
        length = len(seq) // per
        if addr in _path:
            return node(kind, length=length, flags=CYCLE)
        if _depth >= max_depth and seq:
            return node(kind, length=length, flags=DEEP)
        shown = seq[:max_items * per]
        return node(kind, length=length, flags=TRUNC if len(shown) < len(seq) else 0,
                    children=tuple(below(c) for c in shown))

    t = type(obj)
    if obj is None:
        return node("none")
    if obj is Ellipsis:
        return node("ellipsis")
    if obj is NotImplemented:
        return node("notimplemented")
    if t is bool:
        return node("bool", number=int(obj))
    if t is int:
        d = _digits(obj)
        return node("int", data=struct.pack("<%dI" % len(d), *d), length=len(d),
                    number=(obj > 0) - (obj < 0))
    if t is float:
        return node("float", real=obj)
    if t is complex:
        return node("complex", real=obj.real, imag=obj.imag)
    if t is str:
        cut = obj[:max_string]
        return node("str", data=cut.encode("utf-8", "surrogatepass"), length=len(obj),
                    flags=TRUNC if len(cut) < len(obj) else 0)
    if t in (bytes, bytearray):
        cut = bytes(obj[:max_string])
        return node(t.__name__, data=cut, length=len(obj),
                    flags=TRUNC if len(cut) < len(obj) else 0)
    if t in (tuple, list, set, frozenset):
        return items(t.__name__, obj)
    if t is dict:
        return items("dict", [x for kv in obj.items() for x in kv], per=2)
    if t is range:
        return node("range", children=tuple(below(x) for x in (obj.start, obj.stop, obj.step)))
    if t is type:
        shown = obj.__qualname__ if obj.__module__ == "builtins" else "%s.%s" % (
            obj.__module__, obj.__qualname__)
        return node("type", data=shown.encode())
    if t is types.FunctionType:
        return node("function", data=obj.__qualname__.encode())
    if t is types.BuiltinFunctionType:
        owner = obj.__self__
        kids = () if owner is None or isinstance(owner, types.ModuleType) else (below(owner),)
        return node("builtin", data=obj.__name__.encode(), children=kids)
    if t is types.MethodType:
        return node("method", children=(below(obj.__func__), below(obj.__self__)))
    if t is types.ModuleType:
        # as the library reads it (pyframes.h, PYF_VALUE_MODULE)
        spec = getattr(obj, "__spec__", None)
        if spec is not None and isinstance(spec.origin, str):
            return node("module", data=spec.name.encode(), number=1,
                        children=(below(spec.origin), below(bool(spec.has_location))))
        file = getattr(obj, "__file__", None)
        return node("module", data=obj.__name__.encode(),
                    children=(below(file),) if isinstance(file, str) else ())
    if t is types.CellType:
        try:
            kids = (below(obj.cell_contents),)
        except ValueError:
            kids = ()
        return node("cell", children=kids)
    if t is types.CodeType:
        return node("code", data=obj.co_name.encode(), number=obj.co_firstlineno,
                    children=(below(obj.co_filename),))
    if t in (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType):
        kind = {types.GeneratorType: "generator", types.CoroutineType: "coroutine",
                types.AsyncGeneratorType: "async_generator"}[t]
        return node(kind, data=obj.__qualname__.encode())
    if isinstance(obj, BaseException) and t.__module__ == "builtins":
        kids = (below(obj.args),)
        # an OSError whose errno and strerror are set: those and its file
        # names after its args (pyframes.h, PYF_VALUE_EXCEPTION)
        if isinstance(obj, OSError) and obj.errno is not None and obj.strerror is not None:
            kids += (below(obj.errno), below(obj.strerror))
            if obj.filename is not None:
                kids += (below(obj.filename),)
                if obj.filename2 is not None:
                    kids += (below(obj.filename2),)
        return node("exception", children=kids)
    return node("other")


def check(obj, **limits):
    """render() as repr() of the Python running the test (its version's
    reprs: bytearray's changed in 3.15)."""
    assert values.render(tree(obj, **limits), sys.version_info[:2]) == escape(repr(obj))


class Plain:
    pass


class Outer:
    class Inner:
        pass

    def method(self):
        pass


def _cell(x):
    return (lambda: x).__closure__[0]


def _empty_cell():
    if False:
        y = 1  # noqa: F841

    def inner():
        return y  # noqa: F821
    return inner.__closure__[0]


def _gen():
    yield 1


async def _coro():
    pass


async def _agen():
    yield 1


EVERY_TYPE = [
    None, True, False, Ellipsis, NotImplemented,
    0, 1, -1, 2 ** 30 - 1, 2 ** 30, -2 ** 60, 10 ** 40, -(10 ** 100 + 7), 2 ** 64 - 1,
    0.0, -0.0, 1.0, 0.1, 1e300, -1e-300, 1e16, 123456789.125, float("inf"), float("-inf"),
    float("nan"), 5e-324, 1.7976931348623157e308,
    1j, complex(1, -2), complex(-0.0, 0.0), complex(float("nan"), float("inf")), complex(0, -0.0),
    "", "a", "it's", 'say "hi"', "both ' and \"", "tab\tnl\ncr\rbell\x07esc\x1b",
    "\x00\x7f\x80\x9f\xa0", "é ü 中文 🐍", "\u200e\u202e\u2066bidi", "\ud800 lone", "\udfff",
    "\\backslash", "\U0010ffff", "\ufeff", "latin1 \xff",
    b"", b"abc", b"'\"", b"\x00\xff\n\t", bytearray(), bytearray(b"x\x00'"),
    (), (1,), (1, 2), ((),), ([],), [], [1], [1, [2, [3]]], {}, {"a": 1, 2: [3]},
    {(1, 2): {"x": None}}, set(), {1}, frozenset(), frozenset({"a"}), [set(), frozenset()],
    range(0), range(5), range(1, 10), range(10, 0, -3), range(-5, 5, 2),
    int, str, type, Plain, Outer.Inner, ValueError, types.FunctionType,
    _gen, Outer.method, Outer().method, check, len, print, [].append, {}.get,
    dict.fromkeys, "x".join, os, sys, types, _cell(1), _cell(Plain()), _empty_cell(),
    _gen.__code__, check.__code__, _gen(), Plain(), Outer.Inner(), object(),
    ValueError(), ValueError("x"), ValueError("x", 2), KeyError("k"), OSError(2, "nope"),
    StopIteration(None), SystemExit(3), BaseException([1, (2,)]),
    [None, True, 1.5, "s", b"b", (1,), {1: 2}], {"nested": {"deeper": [1, (2, {3})]}},
]


@pytest.mark.parametrize("obj", EVERY_TYPE, ids=lambda o: type(o).__name__)
def test_every_builtin_type_as_repr(obj):
    check(obj)


@pytest.mark.parametrize("data,old", [
    (b"", "b''"), (b"'", 'b"\\\'"'), (b'"', "b'\"'"), (b"'\"", "b'\\'\"'"),
    (b"x'y", 'b"x\\\'y"'), (b"\\'\x7f\x80\t\n\r\x00 ~", 'b"\\\\\\\'\\x7f\\x80\\t\\n\\r\\x00 ~"'),
])
def test_bytearray_before_and_after_315(data, old):
    """Before 3.15 bytearray's repr escapes every ' (even inside double
    quotes; what python3.13 and 3.14 print); 3.15 writes its bytes as
    bytes' repr does."""
    v = tree(bytearray(data))
    assert values.render(v, (3, 15)) == "bytearray(%r)" % (data,)
    assert values.render(v, (3, 13)) == values.render(v, (3, 14)) == "bytearray(%s)" % old


def test_generator_coroutine_async_generator():
    g, c, a = _gen(), _coro(), _agen()
    try:
        for obj in (g, c, a):
            check(obj)
    finally:
        c.close()


def test_huge_int_past_the_str_digits_limit():
    for n in (10 ** 999 + 12345, -(10 ** 5000) - 1, 7 ** 20000):
        text = values.render(tree(n))
        get = getattr(sys, "get_int_max_str_digits", None)
        if get is not None:
            old = get()
            sys.set_int_max_str_digits(0)
            try:
                assert text == repr(n)
            finally:
                sys.set_int_max_str_digits(old)
        else:
            assert text == repr(n)
    if hasattr(sys, "get_int_max_str_digits"):
        assert sys.get_int_max_str_digits() == old  # left as it was


def test_int_too_big_to_convert():
    n = 1 << (30 * (values.MAX_INT_DIGITS + 1))
    assert re.fullmatch(r"<int of about [\d,]+ decimal digits>", values.render(tree(n)))


def test_int_value_of_every_digit_count():
    for bits in range(0, 400, 7):
        for n in ((1 << bits) - 1, -(1 << bits) + 3):
            assert values.int_value(tree(n)) == n


def test_float_and_complex_round_trip():
    for x in (0.1 + 0.2, 1 / 3, 2.0 ** -1074, 1e22, 1e23, 9007199254740993.0):
        check(x)
        check(complex(x, -x))
    assert values.render(tree(math.nan)) == "nan"


def test_self_referencing_containers():
    lst = [1]
    lst.append(lst)
    check(lst)
    d = {"k": 1}
    d["self"] = d
    check(d)
    both = [d, lst]
    check(both)
    t = ([],)
    t[0].append(t)
    check(t)


def test_truncated_str_bytes_and_containers():
    s = "x" * 1500 + "tail"
    assert values.render(tree(s, max_string=10)) == "'xxxxxxxxxx'...<1,494 more chars>"
    assert values.render(tree("ab", max_string=1)) == "'a'...<1 more char>"
    assert values.render(tree(b"abcdef", max_string=2)) == "b'ab'...<4 more bytes>"
    assert values.render(tree(bytearray(b"abc"), max_string=1)) == \
        "bytearray(b'a'...<2 more bytes>)"
    big = list(range(12347))
    assert values.render(tree(big, max_items=2)) == "[0, 1, ...<12,345 more items>]"
    assert values.render(tree(tuple(big[:2]), max_items=1)) == "(0, ...<1 more item>)"
    assert values.render(tree({i: i for i in range(5)}, max_items=2)) == \
        "{0: 0, 1: 1, ...<3 more items>}"
    assert values.render(tree({1, 2, 3}, max_items=1)) == "{1, ...<2 more items>}"
    assert values.render(tree(frozenset({1, 2}), max_items=1)) == \
        "frozenset({1, ...<1 more item>})"
    # a cut value says so in JSON too
    assert tree(big, max_items=2).cut() and not tree(big[:100]).cut()


def test_depth_cut_is_not_a_cycle():
    nested = [[[1, 2], (3,)], {"k": {4}}]
    assert values.render(tree(nested, max_depth=1)) == \
        "[[...<too deep: 2 items>], {...<too deep: 1 item>}]"
    assert values.render(tree(nested, max_depth=2)) == \
        "[[[...<too deep: 2 items>], (...<too deep: 1 item>)], {'k': {...<too deep: 1 item>}}]"
    lst = []
    lst.append(lst)
    assert values.render(tree(lst, max_depth=1)) == "[[...]]"
    assert values.render(tree([[]], max_depth=1)) == "[[]]"  # empty: nothing cut
    assert values.render(Value(kind="frozenset", length=2, flags=DEEP)) == \
        "frozenset({...<too deep: 2 items>})"
    assert values.render(Value(kind="set", length=1, flags=CYCLE)) == "set(...)"
    assert values.render(Value(kind="method", flags=DEEP)) == "<bound method ? of <too deep>>"


def test_unreadable_and_budget():
    bad = Value(kind="unreadable", data=b"bad type pointer 0x10")
    assert values.render(bad) == "<unreadable: bad type pointer 0x10>"
    out = Value(kind="unreadable", data=b"object budget exhausted", flags=BUDGET)
    lst = Value(kind="list", length=3, children=(tree(1), bad, out), addr=1)
    assert values.render(lst) == \
        "[1, <unreadable: bad type pointer 0x10>, <unreadable: object budget exhausted>]"
    assert lst.cut()  # the budget's cut


def test_target_text_is_escaped():
    hostile = Value(kind="other", type_name="evil\x1b[2J.Cls\u202e", addr=0x10)
    assert values.render(hostile) == "<evil\\x1b[2J.Cls\\u202e object at 0x10>"
    assert values.render(Value(kind="function", data=b"f\n", addr=1)) == \
        "<function f\\n at 0x1>"
    assert values.render(Value(kind="unreadable", data=b"\x07")) == "<unreadable: \\x07>"
    assert values.render(tree("\x1b\u202e")).isprintable()


def test_exception_of_a_heap_type_uses_its_name():
    e = Value(kind="exception", type_name="mod.MyError", addr=1,
              children=(tree(("x",)),))
    assert values.render(e) == "MyError('x')"


# ---- str() of an exception (the thread facts' message) -------------------------


def _message_of(exc):
    """str(exc) as a thread's facts word it: at most PYF_FACT_MESSAGE_MAX
    UTF-8 bytes, "..." after a longer one."""
    text = str(exc)
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= values.MESSAGE_MAX:
        return text
    return raw[:values.MESSAGE_MAX].decode("utf-8", "ignore") + "..."


@pytest.mark.parametrize("exc", [
    ValueError("bad v\u00e4lue"), ValueError(), ValueError(""), KeyError("k'ey"), KeyError(3),
    KeyError(), KeyError("a", "b"), RuntimeError(1, "two", [3], None, 2.5),
    FileNotFoundError(2, "No such file or directory", "/x'y"),
    OSError(2, "No such file", "a", "b"), PermissionError(13, "denied"), OSError("only text"),
    OSError(5, "io", None), ValueError("x" * 500), ValueError("\u20ac" * 150),
    ValueError(ValueError("inner")), ValueError(KeyError("k")), ValueError(b"bytes\n"),
    ValueError(("nested", 1)), ValueError("a\nb\x1b"),
], ids=lambda e: ("%s%r" % (type(e).__name__, e.args[:2]))[:40])
def test_exception_message_is_str(exc):
    """exception_message of the tree the library makes of an exception (its
    args; an OSError's errno, strerror and file names) is str() of it."""
    assert values.exception_message(tree(exc)) == _message_of(exc)


class _Token(object):
    """An instance of a class of the program's own (pygments' tokens are
    such): repr() is ``<module.Class object at 0x...>``."""


_TOKEN = _Token()


@pytest.mark.parametrize("exc", [ValueError(_TOKEN), KeyError(_TOKEN), ValueError(1, _TOKEN),
                                 ValueError([_TOKEN])],
                         ids=["one", "key", "several", "nested"])
def test_exception_message_of_an_instance(exc):
    """An exception whose args hold an instance of the program's own class
    (an exception raised in Sphinx holding a pygments token): str() of it,
    the instance as its repr()."""
    assert values.exception_message(tree(exc)) == str(exc)
    assert values.exception_message(tree(exc), python=(3, 11)) == str(exc)


def test_exception_message_of_one_not_made_yet():
    """3.11 raises an exception from C without making it: the library's
    tree is what making it gives (pyframes.h, Thread facts), an exception
    node at address 0 whose args are made of the value."""
    made = Value(kind="exception", type_name="OverflowError", addr=0,
                 children=(Value(kind="tuple", type_name="tuple", length=1,
                                 children=(tree("too big"),)),))
    assert values.exception_message(made) == "too big"
    empty = Value(kind="exception", type_name="OverflowError",
                  children=(Value(kind="tuple", type_name="tuple"),))
    assert values.exception_message(empty) == ""


def test_exception_message_unknown():
    """No tree, or no args in it: None (no message); unreadable args or
    parts of them say so."""
    assert values.exception_message(None) is None
    assert values.exception_message(tree(1)) is None
    assert values.exception_message(Value(kind="exception", type_name="E")) is None
    bad = Value(kind="exception", type_name="E",
                children=(Value(kind="unreadable", data=b"unreadable memory at 0x10"),))
    assert values.exception_message(bad) == "<unreadable: unreadable memory at 0x10>..."
    part = Value(kind="exception", type_name="E", children=(Value(
        kind="tuple", type_name="tuple", length=2,
        children=(tree("a"), Value(kind="unreadable", data=b"NULL"))),))
    assert values.exception_message(part) == "('a', <unreadable: NULL>)"


def test_facts_fields_render_the_tree():
    """A pyf_thread_facts whose exc_value names its exception's node: the
    Thread's exception message rendered from it."""
    f = _abi.pyf_thread_facts(exc_type=b"KeyError", exc_line=-1,
                              flags=_abi.PYF_FACT_EXCEPTION | _abi.PYF_FACT_EXC_HANDLED,
                              exc_value=1)
    nodes = [tree(0), tree(KeyError("k"))]
    exc = _convert.facts_fields(f, nodes)["exception"]
    assert (exc.type, exc.message, exc.handled, exc.line) == ("KeyError", "'k'", True, None)
    f.exc_value = _abi.PYF_NO_VALUE
    assert _convert.facts_fields(f, nodes)["exception"].message is None


def test_unknown_kind_of_a_newer_library_is_an_object():
    assert values.render(Value(kind="something new", type_name="T", addr=0xAB)) == \
        "<T object at 0xab>"


# ---- locals -------------------------------------------------------------------


def _locals():
    return FrameValues(locals=(
        Local("x", "local", value=tree([1, "a"])),
        Local("self", "arg", value=tree(Plain())),
        Local("later", "local", flags=_abi.PYF_LOCAL_UNBOUND),
        Local("captured", "cell", value=tree(1.5)),
        Local("hidden", "local", flags=_abi.PYF_LOCAL_HIDDEN | _abi.PYF_LOCAL_UNBOUND),
        Local("args", "arg", flags=_abi.PYF_LOCAL_VARARGS, value=tree(())),
        Local("outer", "free", value=tree(list(range(300)))),
    ))


def test_local_lines_arguments_first():
    lines = values.local_lines(_locals())
    plain = repr(Plain()).split(" at ")[0]
    assert lines[0].startswith("self = %s at 0x" % plain)
    assert lines[1:5] == ["args = ()", "x = [1, 'a']", "later = <unbound>", "captured = 1.5"]
    assert lines[5].startswith("outer = [0, 1, 2,") and lines[5].endswith(
        ", 99, ...<200 more items>]")
    assert len(lines) == 6  # the hidden unbound one is not shown


def test_local_dict():
    fv = _locals()
    rows = {loc.name: values.local_dict(loc) for loc in fv.locals}
    assert rows["x"] == {"name": "x", "kind": "local", "type": "list",
                         "value": "[1, 'a']", "address": fv.locals[0].value.addr,
                         "truncated": False}
    assert rows["later"] == {"name": "later", "kind": "local", "type": None, "value": None,
                             "address": None, "truncated": False}
    assert rows["outer"]["truncated"] is True and rows["outer"]["kind"] == "free"
    assert rows["self"]["type"] == "%s.Plain" % __name__


# ---- py-print expressions -----------------------------------------------------


@pytest.mark.parametrize("text,want", [
    ("x", ("x", [])),
    (" x.y ", ("x", [("attr", "y")])),
    ("_a1[0]['k'][\"q]\"][-2].z", ("_a1", [("index", 0), ("key", "k"), ("key", "q]"),
                                           ("index", -2), ("attr", "z")])),
    ("d[b'k']", ("d", [("key", b"k")])),
    ("é.ü", ("é", [("attr", "ü")])),
])
def test_parse_expression(text, want):
    assert values.parse_expression(text) == want


@pytest.mark.parametrize("text", ["", "1x", "x.", "x[", "x[1", "x[f()]", "x[True]",
                                  "x+1", "x()", "x.1", "x[[1]]"])
def test_parse_expression_refuses(text):
    with pytest.raises(CommandError):
        values.parse_expression(text)


# ---- the mirror of the header's values part ------------------------------------


def test_value_constants_match_header():
    with open(HEADER) as f:
        header = f.read()
    defined = dict(re.findall(r"^#define (PYF_(?:VALUE|LOCAL|VALUES|DEFAULT_VALUE|NO_VALUE)"
                              r"\w*)\s+(\(?[0-9a-fx]+u?(?:\s*<<\s*\d+)?\)?)", header, re.M))
    assert len(defined) > 40
    for name, text in defined.items():
        assert getattr(_abi, name) == eval(text.replace("u", "")), name  # noqa: S307
    assert len(model.VALUE_KINDS) == _abi.PYF_VALUE_NOTIMPLEMENTED + 1
    for i, kind in enumerate(model.VALUE_KINDS):
        assert getattr(_abi, "PYF_VALUE_" + kind.upper()) == i
    for number, kind in model.LOCAL_KINDS.items():
        assert getattr(_abi, "PYF_LOCAL_" + kind.upper()) == number
    assert values.DEFAULTS == {"max_string": _abi.PYF_DEFAULT_VALUE_STRING,
                               "max_items": _abi.PYF_DEFAULT_VALUE_ITEMS,
                               "max_depth": _abi.PYF_DEFAULT_VALUE_DEPTH,
                               "max_objects": _abi.PYF_DEFAULT_VALUE_OBJECTS,
                               "max_bytes": _abi.PYF_DEFAULT_VALUE_BYTES}
    import ctypes
    assert ctypes.sizeof(_abi.pyf_value) == _abi.PYF_VALUE_SIZE
    assert ctypes.sizeof(_abi.pyf_local) == _abi.PYF_LOCAL_SIZE
    assert ctypes.sizeof(_abi.pyf_values_request) == _abi.PYF_VALUES_REQUEST_SIZE_V0


def test_values_of_decodes_the_arrays():
    """_convert.values_of over a pyf_values built with ctypes: children
    after their parent, the locals pointing into the tree, a longer stride."""
    import ctypes
    keep = []

    def cstr(b):
        buf = ctypes.create_string_buffer(b)
        keep.append(buf)
        return ctypes.addressof(buf)

    for extra in (0, 16):
        stride = ctypes.sizeof(_abi.pyf_value) + extra
        raw = ctypes.create_string_buffer(stride * 4)
        nodes = [_abi.pyf_value.from_buffer(raw, i * stride) for i in range(4)]
        lst, one, s, none = nodes
        lst.kind, lst.type_name, lst.addr, lst.length = _abi.PYF_VALUE_LIST, b"list", 0x100, 2
        lst.first_child, lst.nchildren = 1, 2
        digits = array.array("I", [1])
        one.kind, one.type_name, one.number, one.length = _abi.PYF_VALUE_INT, b"int", 1, 1
        one.data, one.data_size = cstr(digits.tobytes()), 4
        s.kind, s.type_name, s.data, s.data_size, s.length = (
            _abi.PYF_VALUE_STR, b"str", cstr(b"a\x00\xed\xa0\x80"), 5, 3)
        none.kind, none.type_name = _abi.PYF_VALUE_NONE, b"NoneType"
        locs = (_abi.pyf_local * 3)()
        for loc, name, kind, index in zip(locs, (b"a", b"b", b"c"), (1, 2, 4),
                                          (0, _abi.PYF_NO_VALUE, 3)):
            loc.name, loc.kind, loc.value = name, kind, index
        out = _abi.pyf_values(nlocals=3, nvalues=4, local_size=ctypes.sizeof(_abi.pyf_local),
                              value_size=stride, globals_addr=0x42)
        out.locals = locs
        out.values = ctypes.cast(raw, ctypes.POINTER(_abi.pyf_value))
        fv = _convert.values_of(ctypes.addressof(out))
        assert [(loc.name, loc.kind) for loc in fv.locals] == \
            [("a", "arg"), ("b", "local"), ("c", "free")]
        assert values.render(fv.locals[0].value) == "[1, 'a\\x00\\ud800']"
        assert fv.locals[1].value is None and values.render(fv.locals[2].value) == "None"
        assert fv.globals_addr == 0x42 and fv.value is None
