"""The locks a frame took with ``acquire()`` (no ``with``) and has not
released, read from its source.

A plain ``threading.Lock`` records no owner and a lock taken by
``acquire()`` leaves nothing on the frame's value stack, so what a frame
holds this way is read from where it stands in its function: the frame's
position (the span of the call it is suspended in, from the code object's
own position table) in the function's source, parsed with :mod:`ast`.
An ``E.acquire()`` taken by the frame is one of:

- **definite**: a statement ``E.acquire()`` (or ``x = E.acquire()``)
  without a timeout or non-blocking flag (such a call returns only with
  the lock), before the frame's position in a statement list that leads to
  it (so it ran, and returned, before the frame got where it is), or the
  ``if E.acquire(...):`` whose body the frame is in; with no
  ``E.release()`` between it and the position (nor in a loop around the
  position that the acquire is outside of), and ``E``'s first name not
  bound again there (``E`` read now is what was acquired);
- **possible**: any other ``E.acquire(...)`` of the function before the
  position: in a branch, a loop, with a timeout, released somewhere after.

locks.py reads the frames of the program's own code only (the standard
library's locks taken by acquire() are mostly signals another thread
releases).  ``E`` is a name followed by attributes and constant subscripts
(``inventory_lock``, ``self._lock``, ``locks["accounts"]``), which
:func:`pyframes.values.resolve` reads in the frame.

Nothing is claimed when the source cannot be read or parsed, the
function is not found, or the source does not match the frame: the
frame's position must be the exact span of a call of the function's
source (a file edited since the process started fails this).  The
helper a lock was acquired in and returned from leaves nothing here:
only the frames still running are read.
"""

import ast
from dataclasses import dataclass
from typing import Optional

__all__ = ["Acquire", "Parsed", "acquires", "parse", "expression_text"]

#: Source files parsed at most (bytes), as the source reader's limit.
MAX_SOURCE = 8 << 20


@dataclass(frozen=True)
class Acquire:
    """``expression.acquire()`` at ``line`` of a frame's function."""

    #: The locked object's expression as py-print reads it: name, then
    #: ``.attr``, ``[int]``, ``["key"]``.
    expression: str
    line: int
    #: True: taken and not released (see the module's docstring).
    definite: bool
    #: Why it is not definite ("in a branch", "with a timeout"...); None.
    why: Optional[str] = None


class Parsed(object):
    """A module's ast, its function definitions by name (looked up once per
    frame), what each function's own code holds (_Facts, made at its first
    frame) and the answer of each position asked (many threads stand at
    the same line of the same function)."""

    __slots__ = ("tree", "defs", "facts", "answers")

    def __init__(self, tree):
        self.tree = tree
        self.defs = {}
        for node in ast.walk(tree):
            if isinstance(node, _FUNCTIONS):
                self.defs.setdefault(node.name, []).append(node)
        self.facts = {}
        self.answers = {}


class _Facts(object):
    """A function's own calls' spans, acquire() calls, release() calls and
    the names it binds (one walk of it)."""

    __slots__ = ("spans", "calls", "releases", "stores")

    def __init__(self, func):
        self.spans, self.calls, self.releases, self.stores = set(), [], [], []
        for n in _walk(func):
            if isinstance(n, ast.Call):
                self.spans.add(_span(n))
                found = _acquire_call(n)
                if found is not None:
                    self.calls.append((n, found))
                elif isinstance(n.func, ast.Attribute) and n.func.attr == "release":
                    self.releases.append(n)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                self.stores.append(n)
        self.calls.sort(key=lambda c: _span(c[0]))


def parse(text):
    """The module's Parsed source, or None."""
    if text is None or len(text) > MAX_SOURCE:
        return None
    try:
        return Parsed(ast.parse(text))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def expression_text(node):
    """``name.attr[0]["key"]`` of a Name/Attribute/Subscript chain with
    constant subscripts, else None."""
    steps = []
    while True:
        if isinstance(node, ast.Name):
            steps.append(node.id)
            return "".join(reversed(steps))
        if isinstance(node, ast.Attribute):
            steps.append("." + node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            key = node.slice
            if not isinstance(key, ast.Constant) or isinstance(key.value, bool) or \
                    not isinstance(key.value, (int, str)):
                return None
            if isinstance(key.value, str) and ('"' in key.value or "\\" in key.value or
                                               not key.value.isprintable()):
                steps.append("[%r]" % key.value)
            elif isinstance(key.value, str):
                steps.append('["%s"]' % key.value)
            else:
                steps.append("[%d]" % key.value)
            node = node.value
        else:
            return None


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NESTED = _FUNCTIONS + (ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _walk(node):
    """ast.walk of a function's own code (no nested function or class)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, _NESTED))


def _function(parsed, frame):
    """The innermost def of the frame's qualname's last name around its
    line (the module for ``<module>``), else None."""
    name = frame.function.rpartition(".")[2]
    if name == "<module>":
        return parsed.tree
    found = None
    for node in parsed.defs.get(name, ()):
        if node.lineno <= frame.line <= (node.end_lineno or node.lineno):
            if found is None or node.lineno > found.lineno:
                found = node
    return found


def _span(node):
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def _before(node, position):
    """The node ends at or before ``position`` (line, column)."""
    return (node.end_lineno, node.end_col_offset) <= position


def _contains(node, position):
    start = (node.lineno, node.col_offset)
    return start <= position <= (node.end_lineno, node.end_col_offset)


_BODIES = ("body", "orelse", "finalbody")


def _path(body, position):
    """The statements from the function's body down to the one holding
    ``position``: [(statement list, index)], outermost first."""
    path = []
    stmts = body
    while stmts:
        index = next((i for i, s in enumerate(stmts) if _contains(s, position)), None)
        if index is None:
            break
        path.append((stmts, index))
        stmt = stmts[index]
        if isinstance(stmt, _NESTED):
            break
        inner = None
        for field in _BODIES:
            sub = getattr(stmt, field, None)
            if isinstance(sub, list) and any(_contains(s, position) for s in sub):
                inner = sub
        for handler in getattr(stmt, "handlers", None) or ():
            if _contains(handler, position):
                inner = handler.body
        for case in getattr(stmt, "cases", None) or ():
            if any(_contains(s, position) for s in case.body):
                inner = case.body
        stmts = inner
    return path


def _acquire_call(node):
    """(expression node, call) when node is a call of ``E.acquire``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr == "acquire":
        return node.func.value, node
    return None


def _blocking(call):
    """Whether the acquire() call returns only with the lock: no arguments,
    or blocking true and no timeout (or timeout -1)."""
    args = list(call.args)
    kw = {k.arg: k.value for k in call.keywords}
    if None in kw or any(isinstance(a, ast.Starred) for a in args) or len(args) > 2:
        return False
    blocking = args[0] if args else kw.get("blocking")
    timeout = args[1] if len(args) > 1 else kw.get("timeout")
    if blocking is not None and not (isinstance(blocking, ast.Constant) and
                                     blocking.value in (True, 1)):
        return False
    if timeout is not None:
        value = timeout
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and \
                isinstance(value.operand, ast.Constant):
            return value.operand.value == 1
        return isinstance(value, ast.Constant) and value.value is None
    return True


def _statement_acquire(stmt):
    """(expression node, call) of ``E.acquire()`` or ``x = E.acquire()``."""
    if isinstance(stmt, ast.Expr):
        return _acquire_call(stmt.value)
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
        return _acquire_call(stmt.value)
    return None


def acquires(parsed, frame):
    """The acquire() calls of the frame's function before its position, as
    Acquire (definite or not); None when the source does not match the
    frame (see the module's docstring).  ``parsed``: the frame's file as
    parse() gives it."""
    if parsed is None or frame.line is None or frame.column is None or \
            frame.end_line is None or frame.end_column is None:
        return None
    func = _function(parsed, frame)
    if func is None:
        return None
    span = (frame.line, frame.column, frame.end_line, frame.end_column)
    key = (id(func),) + span
    if key not in parsed.answers:
        facts = parsed.facts.get(id(func))
        if facts is None:
            facts = parsed.facts[id(func)] = _Facts(func)
        parsed.answers[key] = _acquires(func, facts, span)
    return parsed.answers[key]


def _acquires(func, facts, span):
    """acquires() of a frame standing at the call ``span`` of ``func``."""
    if span not in facts.spans:
        return None  # the source is not what the frame runs
    position = span[:2]
    if not any(_before(n, position) for n, _ in facts.calls):
        return []
    body = func.body
    path = _path(body, position)
    # the definite acquires: statements before the path's, the if-tests it entered
    definite, failed = {}, set()
    for stmts, index in path:
        for stmt in stmts[:index]:
            found = _statement_acquire(stmt)
            if found is not None and _blocking(found[1]):
                definite[id(found[1])] = stmt
        stmt = stmts[index]
        if isinstance(stmt, ast.If) and any(_contains(s, position) for s in stmt.body):
            found = _acquire_call(stmt.test)
            if found is not None:
                definite[id(found[1])] = stmt
        elif isinstance(stmt, ast.If) and _acquire_call(stmt.test) is not None and \
                any(_contains(s, position) for s in stmt.orelse):
            failed.add(id(stmt.test))  # the else of `if E.acquire(...):`
    loops = [stmts[index] for stmts, index in path if isinstance(stmts[index], _LOOPS)]
    calls = [(n, found) for n, found in facts.calls if _before(n, position)]
    stores, releases = facts.stores, facts.releases
    out = []
    for node, (target, call) in calls:
        text = expression_text(target)
        if text is None or id(call) in failed:
            continue
        shape = ast.dump(target)
        after = (call.end_lineno, call.end_col_offset)
        why = None
        if id(call) not in definite:
            why = "with a timeout" if not _blocking(call) else "not on every path to here"
        released = [r for r in releases if ast.dump(r.func.value) == shape]
        if any(after <= (r.lineno, r.col_offset) and _before(r, position) for r in released):
            continue  # released since
        outside = [loop for loop in loops if not _contains(loop, (call.lineno, call.col_offset))]
        if why is None and any(_contains(loop, (r.lineno, r.col_offset))
                               for loop in outside for r in released):
            why = "released in a loop around here"
        root = _root(target)
        if any(n.id == root and (after <= (n.lineno, n.col_offset) < position or
                                 any(_contains(loop, (n.lineno, n.col_offset))
                                     for loop in outside)) for n in stores):
            continue  # the name now may be another object
        out.append(Acquire(expression=text, line=call.lineno, definite=why is None, why=why))
    return out
