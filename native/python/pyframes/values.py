"""Values of a target's frames as repr() in the target would show them.

:func:`render` turns a :class:`pyframes.model.Value` tree (what
``Target.frame_locals`` and ``Target.value`` read) into the text CPython's
own repr() gives for every builtin type: a float's shortest round-trip
form, str quoting and escaping, an int of any size, ``(x,)``, ``set()``,
``range(0, 10)``, ``<function f at 0x7f...>`` and so on.  An object of any
other class shows as its default repr, ``<module.Class object at 0x...>``
(no code of the target runs, so no ``__repr__`` either).  The whole text
goes through :func:`pyframes.escaping.escape`, as all target text does.

What a limit cut says so, in one format (``...<WHAT>`` where the rest
would be)::

    'abcdef'...<1,234 more chars>        a str past max_string
    b'abc'...<10 more bytes>             bytes, bytearray(b'...'...<N more bytes>)
    [1, 2, ...<12,345 more items>]       a container past max_items
    [...<too deep: 3 items>]             a container at max_depth
    <too deep>                           anything else at max_depth
    [...]  (...)  {...}  set(...)        a cycle, as Python shows it
    <unreadable: why>                    an object that could not be read
                                         (or the call's object/byte budget ran out)

Local variables are shown one ``name = value`` per line, arguments first,
``name = <unbound>`` for an unbound one (:func:`local_lines`); in JSON each
is a dict (:func:`local_dict`, docs/json-schema.md).  :func:`locals_lines`
and :func:`print_lines` are what ``py-locals`` and ``py-print EXPR`` print
for a frame; :func:`resolve` finds EXPR (a name, then any chain of
``.attr``, ``[int]``, ``['key']``) by reading values only.
"""

import ast
import struct
import sys

from . import _abi, errors, model
from .errors import CommandError
from .escaping import escape

__all__ = ["LIMITS", "DEFAULTS", "render", "int_value", "exception_message", "shown_locals",
           "local_lines", "local_dict", "read_locals", "locals_lines", "print_lines",
           "parse_expression", "resolve"]

#: The limit keywords of Target.frame_locals and Target.value, and their
#: defaults (the library's PYF_DEFAULT_VALUE_*; None asks for them).
LIMITS = ("max_string", "max_items", "max_depth", "max_objects", "max_bytes")
DEFAULTS = {"max_string": _abi.PYF_DEFAULT_VALUE_STRING,
            "max_items": _abi.PYF_DEFAULT_VALUE_ITEMS,
            "max_depth": _abi.PYF_DEFAULT_VALUE_DEPTH,
            "max_objects": _abi.PYF_DEFAULT_VALUE_OBJECTS,
            "max_bytes": _abi.PYF_DEFAULT_VALUE_BYTES}

#: Ints of more 30-bit digits than this (about 100,000 decimal digits) are
#: not converted to decimal (quadratic before CPython 3.12): they show as
#: ``<int of about N decimal digits>``.
MAX_INT_DIGITS = 11100
#: Nesting rendered at most (a tree read with a larger max_depth shows
#: ``<too deep>`` below it): Python's own recursion limit is not reached.
MAX_RENDER_DEPTH = 200

_LOG10_2 = 0.30102999566398120
_TRUNCATED = _abi.PYF_VALUE_TRUNCATED


def _count(n, what):
    return "%s %s%s" % (format(n, ","), what, "" if n == 1 else "s")


def _more(n, what):
    return "...<%s more %s>" % (format(n, ","), what + ("" if n == 1 else "s"))


# ---- ints ---------------------------------------------------------------------


def _combine(digits, lo, hi):
    """The value of 30-bit digits[lo:hi] (least significant first), split
    in halves: linear shifts, not a quadratic loop."""
    if hi - lo <= 64:
        v = 0
        for i in range(hi - 1, lo - 1, -1):
            v = (v << 30) + digits[i]
        return v
    mid = (lo + hi) // 2
    return _combine(digits, lo, mid) + (_combine(digits, mid, hi) << (30 * (mid - lo)))


def int_value(value):
    """The int a PYF_VALUE_INT node holds (its digits and sign)."""
    data = value.data or b""
    n = len(data) // 4
    digits = struct.unpack("<%dI" % n, data[:4 * n])
    v = _combine(digits, 0, n)
    return -v if value.number < 0 else v


def _decimal(v):
    """str(v) of any size: the int max str digits limit (3.11+) is lifted
    for the call, never changed for good."""
    try:
        return str(v)
    except ValueError:
        pass
    old = sys.get_int_max_str_digits()  # only 3.11+ raises above
    sys.set_int_max_str_digits(0)
    try:
        return str(v)
    finally:
        sys.set_int_max_str_digits(old)


def _int(v, _depth, ctx):
    data = v.data
    if data is not None and len(data) == 4 and not v.flags & _TRUNCATED:
        # one 30-bit digit: its uint32 is the magnitude
        n = int.from_bytes(data, "little")
        return str(-n if v.number < 0 else n)
    ndigits = len(data or b"") // 4
    if v.truncated or ndigits > MAX_INT_DIGITS:
        about = max(int(max(v.length, ndigits) * 30 * _LOG10_2), 1)
        return "<int of about %s decimal digits>" % format(about, ",")
    return _decimal(int_value(v))


# ---- text ---------------------------------------------------------------------


def _str(v, _depth, ctx):
    text = v.text
    out = repr(text)
    if v.truncated and v.length > len(text):
        out += _more(v.length - len(text), "char")
    return out


def _bytearray_literal(data):
    """bytearray's repr of its bytes before CPython 3.15: the quote chosen
    as bytes' repr does, but every ' escaped."""
    quote = "'" if b'"' in data or b"'" not in data else '"'
    out = ["b", quote]
    for c in data:
        if c in (0x27, 0x5C):
            out.append("\\" + chr(c))
        elif c in _BYTE_ESCAPES:
            out.append(_BYTE_ESCAPES[c])
        elif c < 0x20 or c >= 0x7F:
            out.append("\\x%02x" % c)
        else:
            out.append(chr(c))
    out.append(quote)
    return "".join(out)


_BYTE_ESCAPES = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _bytes_repr(v, old_bytearray=False):
    data = v.data or b""
    out = _bytearray_literal(data) if old_bytearray else repr(data)
    if v.truncated and v.length > len(data):
        out += _more(v.length - len(data), "byte")
    return out


def _bytes(v, _depth, ctx):
    return _bytes_repr(v)


def _bytearray(v, _depth, ctx):
    return "bytearray(%s)" % _bytes_repr(v, ctx.version is not None and ctx.version < (3, 15))


# ---- containers ---------------------------------------------------------------

_CYCLE = {"list": "[...]", "tuple": "(...)", "dict": "{...}", "set": "set(...)",
          "frozenset": "frozenset(...)"}


def _items(v, depth, ctx, per_item=1):
    """The rendered items (dict: "k: v") with the "more items" marker, or
    None when the container was not descended into (cycle, too deep)."""
    children = v.children
    shown = len(children) // per_item
    if per_item == 2:
        parts = ["%s: %s" % (_render(children[i], depth, ctx),
                             _render(children[i + 1], depth, ctx))
                 for i in range(0, 2 * shown, 2)]
    else:
        parts = [_render(c, depth, ctx) for c in children]
    if v.length > shown and (v.truncated or not parts):
        parts.append(_more(v.length - shown, "item"))
    return parts


def _cut_container(v, open_, close):
    """A container not descended into: a cycle as Python shows it, or the
    depth cut."""
    if v.cycle:
        return _CYCLE[v.kind]
    return "%s...<too deep: %s>%s" % (open_, _count(v.length, "item"), close)


def _list(v, depth, ctx):
    if (v.cycle or v.too_deep) and not v.children:
        return _cut_container(v, "[", "]")
    return "[%s]" % ", ".join(_items(v, depth, ctx))


def _tuple_text(v, depth, ctx):
    if (v.cycle or v.too_deep) and not v.children:
        return _cut_container(v, "(", ")")
    parts = _items(v, depth, ctx)
    if len(v.children) == 1 and v.length == 1:
        return "(%s,)" % parts[0]
    return "(%s)" % ", ".join(parts)


def _dict(v, depth, ctx):
    if (v.cycle or v.too_deep) and not v.children:
        return _cut_container(v, "{", "}")
    return "{%s}" % ", ".join(_items(v, depth, ctx, 2))


def _set(v, depth, ctx):
    if (v.cycle or v.too_deep) and not v.children:
        return _cut_container(v, "{", "}")
    if not v.length and not v.children:
        return "set()"
    return "{%s}" % ", ".join(_items(v, depth, ctx))


def _frozenset(v, depth, ctx):
    if (v.cycle or v.too_deep) and not v.children:
        return _CYCLE["frozenset"] if v.cycle else "frozenset(%s)" % _cut_container(v, "{", "}")
    if not v.length and not v.children:
        return "frozenset()"
    return "frozenset({%s})" % ", ".join(_items(v, depth, ctx))


def _range(v, depth, ctx):
    if len(v.children) < 3:
        return "range(%s)" % _cut(v)
    start, stop, step = (_render(c, depth, ctx) for c in v.children[:3])
    if step == "1":
        return "range(%s, %s)" % (start, stop)
    return "range(%s, %s, %s)" % (start, stop, step)


# ---- objects with a fixed form -------------------------------------------------


def _cut(v):
    """What stands for the children a node was not given."""
    if v.cycle:
        return "..."
    return "<too deep>"


def _child(v, i, depth, ctx):
    return _render(v.children[i], depth, ctx) if len(v.children) > i else _cut(v)


def _tp_name(v):
    """The type's tp_name, as C code of CPython prints it (a cell's
    contents, a built-in method's owner): a heap type's is its __name__,
    the part of "module.qualname" after the last dot (a static type of an
    extension module with a dotted tp_name loses its module here)."""
    return v.type_name.rpartition(".")[2]


def _other(v, depth, ctx):
    text = "<%s object at 0x%x>" % (v.type_name, v.addr)
    if ctx.attrs and v.children:
        # its attributes (PYF_VALUES_ATTRS), as vars() would show them
        text += " {%s}" % ", ".join(_items(v, depth, ctx, 2))
    return text


def _type(v, _depth, ctx):
    return "<class '%s'>" % v.text


def _function(v, _depth, ctx):
    return "<function %s at 0x%x>" % (v.text, v.addr)


def _builtin(v, _depth, ctx):
    if v.children:
        owner = v.children[0]
        return "<built-in method %s of %s object at 0x%x>" % (v.text, _tp_name(owner),
                                                              owner.addr)
    return "<built-in function %s>" % v.text


def _method(v, depth, ctx):
    func = v.children[0] if v.children else None
    name = func.text if func is not None and func.kind in ("function", "builtin") else "?"
    return "<bound method %s of %s>" % (name, _child(v, 1, depth, ctx))


def _module(v, _depth, ctx):
    """importlib's _module_repr, from what the library read (pyframes.h,
    PYF_VALUE_MODULE)."""
    kids = v.children or ()
    if v.number == 1 and len(kids) == 2 and kids[0] is not None and kids[0].kind == "str":
        located = kids[1] is not None and kids[1].kind == "bool" and kids[1].number
        if located:
            return "<module %s from %s>" % (repr(v.text), repr(kids[0].text))
        return "<module %s (%s)>" % (repr(v.text), kids[0].text)
    if v.number == 0 and kids and kids[0] is not None and kids[0].kind == "str":
        return "<module %s from %s>" % (repr(v.text), repr(kids[0].text))
    return "<module %s>" % repr(v.text)


def _cell(v, _depth, ctx):
    if v.children:
        content = v.children[0]
        return "<cell at 0x%x: %s object at 0x%x>" % (v.addr, _tp_name(content),
                                                       content.addr)
    if v.too_deep or v.cycle:
        return "<cell at 0x%x: %s>" % (v.addr, _cut(v))
    return "<cell at 0x%x: empty>" % v.addr


def _code(v, _depth, ctx):
    filename = v.children[0] if v.children else None
    where = "???"
    if filename is not None and filename.kind == "str":
        where = '"%s"' % filename.text
        if filename.truncated and filename.length > len(filename.text):
            where += _more(filename.length - len(filename.text), "char")
    return "<code object %s at 0x%x, file %s, line %d>" % (v.text, v.addr, where, v.number)


def _owned(what):
    def render_it(v, _depth, ctx):
        return "<%s object %s at 0x%x>" % (what, v.text, v.addr)
    return render_it


def _exception(v, depth, ctx):
    name = _tp_name(v)  # _PyType_Name(): the part after the last dot
    if not v.children:
        return "%s(%s)" % (name, _cut(v))
    args = v.children[0]
    if args.kind == "tuple" and len(args.children) == 1 and args.length == 1:
        return "%s(%s)" % (name, _render(args.children[0], depth + 1, ctx))
    return name + _render(args, depth, ctx)


def _unreadable(v, _depth, ctx):
    return "<unreadable: %s>" % (v.text or "no reason given")


def _constant(text):
    return lambda v, _depth, ctx: text


_KINDS = {
    "unreadable": _unreadable, "other": _other,
    "none": _constant("None"), "bool": lambda v, _d, ctx: "True" if v.number else "False",
    "int": _int, "float": lambda v, _d, ctx: repr(v.real),
    "complex": lambda v, _d, ctx: repr(complex(v.real, v.imag)),
    "str": _str, "bytes": _bytes, "bytearray": _bytearray, "tuple": _tuple_text,
    "list": _list, "dict": _dict, "set": _set, "frozenset": _frozenset, "range": _range,
    "type": _type, "function": _function, "builtin": _builtin, "method": _method,
    "module": _module, "cell": _cell, "code": _code,
    "generator": _owned("generator"), "coroutine": _owned("coroutine"),
    "async_generator": _owned("async_generator"), "exception": _exception,
    "ellipsis": _constant("Ellipsis"), "notimplemented": _constant("NotImplemented"),
}


def _render(v, depth, ctx):
    depth += 1
    if depth > MAX_RENDER_DEPTH:
        return "<too deep>"
    return _KINDS.get(v.kind, _other)(v, depth, ctx)


class _Context(object):
    """What a rendering needs besides the tree: the target's (major,
    minor) (None: the newest) and whether an object read with its
    attributes shows them."""

    __slots__ = ("version", "attrs")

    def __init__(self, python=None, attrs=False):
        self.version = _python(python)
        self.attrs = attrs


def render(value, python=None, attrs=False):
    """The repr() text of a value tree, escaped (see the module docstring
    for what the limits' cuts look like); ``<unbound>`` for None.
    ``python``: the target's (major, minor) or its PythonInfo, for the few
    reprs that changed (bytearray before 3.15); None: the newest.
    ``attrs``: an instance read with its attributes (PYF_VALUES_ATTRS) is
    its repr() followed by them as vars() shows them,
    ``<mod.Customer object at 0x...> {'name': 'Ann', 'balance': 12}``."""
    if value is None:
        return "<unbound>"
    return escape(_render(value, 0, _Context(python, attrs)))


# ---- str() of an exception ----------------------------------------------------

#: The most UTF-8 bytes of an exception's message (pyframes.h,
#: PYF_FACT_MESSAGE_MAX): "..." follows a longer one.
MESSAGE_MAX = _abi.PYF_FACT_MESSAGE_MAX


def _str_of(v, ctx, cut):
    """str() of a value as far as it was read: a str's text, an
    exception's message, else repr(); cut[0] set when part is missing."""
    if v.kind == "str":
        text = v.text
        if v.truncated and v.length > len(text):
            cut[0] = True
        return text
    if v.kind == "exception":
        text = _message(v, ctx, cut)
        if text is not None:
            return text
    if v.cut():
        cut[0] = True
    return _render(v, 0, ctx)


def _message(v, ctx, cut):
    kids = v.children
    if len(kids) >= 3:  # an OSError's errno and strerror are set (pyframes.h)
        text = "[Errno %s] %s" % (_str_of(kids[1], ctx, cut), _str_of(kids[2], ctx, cut))
        if len(kids) >= 4:
            text += ": " + _render(kids[3], 0, ctx)
        if len(kids) >= 5:
            text += " -> " + _render(kids[4], 0, ctx)
        return text
    args = kids[0] if kids else None
    if args is not None and args.kind == "unreadable":  # say why
        cut[0] = True
        return _render(args, 0, ctx)
    if args is None or args.kind != "tuple":
        return None
    if args.length == 0:
        return ""
    if args.length == 1 and len(args.children) == 1:
        one = args.children[0]
        if v.type_name == "KeyError":  # KeyError.__str__: repr() of its key
            if one.cut():
                cut[0] = True
            return _render(one, 0, ctx)
        return _str_of(one, ctx, cut)
    if args.cut():
        cut[0] = True
    return _render(args, 0, ctx)


def exception_message(value, python=None, limit=MESSAGE_MAX):
    """str() of the exception a thread has in flight, from its value tree
    (the thread facts', pyframes.h): BaseException.__str__ of its args
    (one argument's str(), the args tuple's repr() of several, "" of
    none), KeyError's repr() of its key, OSError's "[Errno N] strerror:
    'filename' -> 'filename2'"; at most ``limit`` UTF-8 bytes, "..." after
    a message cut (here, or by the limits it was read with), ``<unreadable:
    why>`` for args that could not be read; None when there is no tree.
    Not escaped (render's lines escape it)."""
    if value is None or value.kind != "exception":
        return None
    cut = [False]
    text = _message(value, _Context(python), cut)
    if text is None:
        return None
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) > limit:
        text = raw[:limit].decode("utf-8", "ignore")  # a character boundary
        cut[0] = True
    return text + "..." if cut[0] else text


# ---- locals -------------------------------------------------------------------

_HIDDEN = _abi.PYF_LOCAL_HIDDEN  # an inlined comprehension's variable


def shown_locals(frame_values):
    """The locals to show, arguments first: an inlined comprehension's
    variable only while it is bound."""
    rows = [loc for loc in frame_values.locals
            if not (loc.flags & _HIDDEN and loc.value is None)]
    args = [loc for loc in rows if loc.kind == "arg"]
    if len(args) == len(rows) or rows[:len(args)] == args:
        return rows  # the arguments come first already (co_localsplusnames)
    return args + [loc for loc in rows if loc.kind != "arg"]  # a stable sort


def _python(python):
    """render's ``python`` as (major, minor), or None."""
    if python is not None and not isinstance(python, tuple):
        return (python.major, python.minor)
    return python


def local_lines(frame_values, python=None, attrs=False):
    """``name = value`` per local (:func:`shown_locals`; ``python`` and
    ``attrs`` as :func:`render`'s)."""
    ctx = _Context(python, attrs)
    # escape() keeps each printable character and escapes each other one on
    # its own: the line escaped once is its name and value escaped apart
    return [escape("%s = %s" % (loc.name, "<unbound>" if loc.value is None else
                                _render(loc.value, 0, ctx)))
            for loc in shown_locals(frame_values)]


def local_dict(local, python=None, attrs=False):
    """A local in JSON: name, kind, type (null if unbound), value (the
    rendered text, null if unbound: repr()'s), address, truncated; with
    ``attrs`` also "attributes": an instance's attributes, name -> the
    rendered text of its value (null for no instance or none read)."""
    v = local.value
    row = {
        "name": local.name,
        "kind": local.kind,
        "type": None if v is None else v.type_name,
        "value": None if v is None else render(v, python),
        "address": (v.addr or None) if v is not None else None,
        "truncated": bool(v is not None and v.cut()),
    }
    if attrs:
        row["attributes"] = attributes_dict(v, python)
    return row


def attributes_dict(value, python=None):
    """name -> rendered value of an instance read with its attributes
    (PYF_VALUES_ATTRS), None when it has none (or is no instance)."""
    if value is None or value.kind != "other" or not value.children:
        return None
    kids = value.children
    return {kids[i].text: render(kids[i + 1], python) for i in range(0, len(kids) - 1, 2)
            if kids[i] is not None and kids[i].kind == "str" and kids[i + 1] is not None}


def read_locals(target, frame, limits=None):
    """(FrameValues, None) of a frame (a model.Frame or its address), or
    (None, why it could not be read).  ``limits``: the LIMITS keywords,
    and "attrs" (instances read with their attributes)."""
    addr = getattr(frame, "frame_addr", frame)
    try:
        return target.frame_locals(addr, **_limits(limits)), None
    except errors.PyframesError as e:
        return None, str(e)


def _limits(limits):
    return {k: v for k, v in (limits or {}).items()
            if (k in LIMITS and v is not None) or (k == "attrs" and v)}


def locals_lines(target, frame, limits=None):
    """What ``py-locals`` prints for a frame: ``name = value`` lines."""
    fv, why = read_locals(target, frame, limits)
    if fv is None:
        raise CommandError("cannot read the frame's locals: %s" % why)
    return local_lines(fv, target.python, bool((limits or {}).get("attrs")))


def print_lines(target, frame, expression, limits=None):
    """What ``py-print EXPR`` prints for a frame: ``EXPR = value``."""
    value = resolve(target, frame, expression, limits)
    return ["%s = %s" % (escape(expression.strip()),
                         render(value, target.python, bool((limits or {}).get("attrs"))))]


# ---- expressions --------------------------------------------------------------


def parse_expression(text):
    """(name, steps) of ``name.attr[0]['key']...``: steps are ("attr",
    name), ("index", int) and ("key", str, int or bytes).  Raises
    CommandError."""
    s = text.strip()
    pos = _name_end(s, 0)
    if pos == 0:
        raise CommandError("py-print: expected a name at the start of %r" % s)
    name, steps = s[:pos], []
    while pos < len(s):
        c = s[pos]
        if c == ".":
            end = _name_end(s, pos + 1)
            if end == pos + 1:
                raise CommandError("py-print: expected an attribute name after '.' in %r" % s)
            steps.append(("attr", s[pos + 1:end]))
            pos = end
        elif c == "[":
            end = _subscript_end(s, pos + 1)
            try:
                key = ast.literal_eval(s[pos + 1:end].strip())
            except (ValueError, SyntaxError):
                key = None
            if isinstance(key, bool) or not isinstance(key, (int, str, bytes)):
                raise CommandError("py-print: a subscript is an int or a str literal, "
                                   "not %r" % s[pos + 1:end])
            steps.append(("index" if isinstance(key, int) else "key", key))
            pos = end + 1
        else:
            raise CommandError("py-print: unexpected %r in %r (a name, then .attr, "
                               "[int] or ['key'])" % (c, s))
    return name, steps


def _name_end(s, pos):
    end = pos
    while end < len(s) and (s[end].isalnum() or s[end] == "_") and not (
            end == pos and s[end].isdigit()):
        end += 1
    return end


def _subscript_end(s, pos):
    """The index of the ']' closing a subscript that starts at pos (quotes
    skipped)."""
    quote = None
    i = pos
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "]":
            return i
        i += 1
    raise CommandError("py-print: no ']' closes the subscript in %r" % s)


# how wide a container lookup reads (one level down)
_LOOKUP_ITEMS = 1 << 16


def _shallow(target, addr, items, attrs=False):
    return target.value(addr, max_depth=1, max_items=max(items, 1),
                        max_objects=2 * max(items, 1) + 2, attrs=attrs)


def _key_matches(node, key):
    if isinstance(key, str):
        return node.kind == "str" and not node.truncated and node.text == key
    if isinstance(key, bytes):
        return node.kind == "bytes" and not node.truncated and node.data == key
    return node.kind in ("int", "bool") and (
        int_value(node) if node.kind == "int" else node.number) == key


def _lookup_pairs(children, key):
    for i in range(0, len(children) - 1, 2):
        if _key_matches(children[i], key):
            return children[i + 1]
    return None


#: The attribute py-print reads as the instance's attributes (vars()).
DICT = "__dict__"


def _instance_dict(obj, addr=0):
    """The dict vars() would give of an instance read with its attributes:
    made from them (a dict CPython has not made yet, 3.13+ inline values,
    has no address: ``addr`` 0)."""
    return model.Value(kind="dict", type_name="dict", addr=addr, length=obj.length,
                       flags=obj.flags & _TRUNCATED, children=obj.children)


def _step(target, node, step, shown):
    kind, key = step
    if node.kind == "dict" and not node.addr and kind != "attr":
        found = _lookup_pairs(node.children, key)  # an instance's __dict__
        if found is None:
            raise CommandError("py-print: %s has no key %r" % (shown, key))
        return found
    if not node.addr:
        raise CommandError("py-print: %s is %s" % (shown, render(node)))
    if kind == "attr" and key == DICT:
        obj = _shallow(target, node.addr, _LOOKUP_ITEMS, attrs=True)
        if obj.kind != "other":
            raise CommandError("py-print: %s (%s) has no __dict__ that pyframes can read "
                               "(an instance's attributes)" % (shown, obj.type_name))
        return _instance_dict(obj)
    if kind == "attr":
        node = _shallow(target, node.addr, _LOOKUP_ITEMS, attrs=True)
        found = _lookup_pairs(node.children, key) if node.kind == "other" else None
        if found is None:
            raise CommandError("py-print: %s (%s) has no attribute %r that pyframes can "
                               "read (its __dict__ or slots)" % (shown, node.type_name, key))
        return found
    if node.kind == "dict":
        node = _shallow(target, node.addr, max(node.length, 1))
        found = _lookup_pairs(node.children, key)
        if found is None:
            raise CommandError("py-print: %s has no key %r" % (shown, key))
        return found
    if kind == "index" and node.kind in ("list", "tuple"):
        index = key + node.length if key < 0 else key
        if not 0 <= index < node.length:
            raise CommandError("py-print: index %d out of range (%s has %d items)"
                               % (key, shown, node.length))
        node = _shallow(target, node.addr, index + 1)
        if index >= len(node.children):
            raise CommandError("py-print: item %d of %s could not be read" % (key, shown))
        return node.children[index]
    raise CommandError("py-print: %s (%s) cannot be subscripted with %r by reading it"
                       % (shown, node.type_name, key))


def resolve(target, frame, expression, limits=None):
    """The Value EXPR names in a frame (a model.Frame or its address):
    the name among the frame's locals, else in its globals dict; each step
    read from the target (attributes through PYF_VALUES_ATTRS).  No code
    of the target runs.  Raises CommandError."""
    name, steps = parse_expression(expression)
    limits = _limits(limits)
    fv, why = read_locals(target, frame, limits if not steps else {"max_depth": 1})
    if fv is None:
        raise CommandError("py-print: cannot read the frame's locals: %s" % why)
    node = None
    for loc in fv.locals:
        if loc.name == name:
            if loc.value is None:
                raise CommandError("py-print: local %r is unbound" % name)
            node = loc.value
            break
    if node is None:
        if not fv.globals_addr:
            raise CommandError("py-print: no local %r, and the frame's globals are "
                               "unknown" % name)
        globs = _shallow(target, fv.globals_addr, _LOOKUP_ITEMS)
        node = _lookup_pairs(globs.children, name) if globs.kind == "dict" else None
        if node is None:
            raise CommandError("py-print: no local or global %r" % name)
        if not steps:
            return target.value(node.addr, **limits) if node.addr else node
    elif not steps:
        return node
    shown, owner = name, None
    for step in steps:
        owner = node.addr if step == ("attr", DICT) else None
        node = _step(target, node, step, shown)
        shown += ".%s" % step[1] if step[0] == "attr" else "[%r]" % (step[1],)
    if owner:
        # obj.__dict__: the attributes read again with the limits, one level
        # below the object
        read = dict(limits, attrs=True)
        read["max_depth"] = read.get("max_depth", DEFAULTS["max_depth"]) + 1
        return _instance_dict(target.value(owner, **read))
    return target.value(node.addr, **limits) if node.addr else node
