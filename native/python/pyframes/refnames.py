"""The name a person would search for of an object the frames refer to: a
lock, a Condition, a Queue, an Event.

Read from the target's memory only (no code of the target runs): each
frame's locals with their attributes and items one level down
(Target.frame_locals with ``attrs``), and the frame's module globals two
levels down (Target.value of its globals dict).  The names, best first:

    inventory_lock          a module global
    self._lock              an attribute of the frame's ``self``
    locks["accounts"]       an item or attribute of a module global
    book._lock, jobs[0]     an item or attribute of a local
    lock                    a local (an argument, a cell)

Frames are searched from the nearest outward, and a frame of the
program's own code comes before one of the standard library (a name in
threading.py, ``self._lock``, is not one the user wrote; of its frames
only the locals are read, not its modules' globals); the first frame that
names the object gives its best name there.  An object no frame
names has no name (None), never a guess.
"""

from . import errors

__all__ = ["Namer", "is_library", "part_name"]

#: How each frame and each globals dict is read: enough for the names of a
#: module's globals and what they hold, bounded (a cut read names less).
_LOCALS_READ = dict(attrs=True, max_depth=1, max_items=64, max_string=80, max_objects=2048,
                    max_bytes=1 << 20)
_GLOBALS_READ = dict(attrs=True, max_depth=2, max_items=1024, max_string=80,
                     max_objects=16384, max_bytes=4 << 20)
#: Frames searched outward from the nearest.
MAX_FRAMES = 8

# the ranks of a name, best first
_GLOBAL, _SELF_PART, _GLOBAL_PART, _LOCAL_PART, _LOCAL = range(5)


def is_library(filename):
    """Whether a frame's file is the standard library's (or frozen)."""
    name = (filename or "").replace("\\", "/")
    if name.startswith("<"):
        return True
    return ("/lib/python3" in name or "/lib64/python3" in name) and "-packages/" not in name


def part_name(parent, key_node=None, attr=None, index=None):
    """``parent.attr``, ``parent["key"]``, ``parent[3]``; None when the key
    cannot be written back (a cut str, a key of another type)."""
    if attr is not None:
        return "%s.%s" % (parent, attr) if attr.isidentifier() else None
    if index is not None:
        return "%s[%d]" % (parent, index)
    if key_node is None or key_node.truncated:
        return None
    if key_node.kind == "str":
        key = key_node.text
        if key.isprintable() and '"' not in key and "\\" not in key:
            return '%s["%s"]' % (parent, key)
        return "%s[%r]" % (parent, key)
    if key_node.kind == "int" and len(key_node.data or b"") == 4:
        value = int.from_bytes(key_node.data, "little")
        return "%s[%d]" % (parent, -value if key_node.number < 0 else value)
    return None


def _parts(node):
    """(name suffix maker args, child) pairs of a node read one level down:
    an object's attributes, a dict's items, a list's or tuple's items."""
    kids = node.children
    if node.kind == "other":
        for i in range(0, len(kids) - 1, 2):
            key, value = kids[i], kids[i + 1]
            if key is not None and key.kind == "str" and not key.truncated and value is not None:
                yield dict(attr=key.text), value
    elif node.kind == "dict":
        for i in range(0, len(kids) - 1, 2):
            if kids[i] is not None and kids[i + 1] is not None:
                yield dict(key_node=kids[i]), kids[i + 1]
    elif node.kind in ("list", "tuple"):
        for i, value in enumerate(kids):
            if value is not None:
                yield dict(index=i), value


def _best(found, rank, name):
    if name is not None and (found is None or rank < found[0]):
        return (rank, name)
    return found


class Namer(object):
    """Names of objects in one target's frames, each frame and globals
    dict read once (one Namer per command)."""

    def __init__(self, target):
        self.target = target
        self._frames = {}    # frame address -> (locals, globals address) or None
        self._globals = {}   # globals address -> dict Value or None
        self._names = {}     # (frame, object address, globals_too) -> (rank, name) or None

    def _frame(self, frame):
        addr = frame.frame_addr
        if addr not in self._frames:
            try:
                fv = self.target.frame_locals(addr, **_LOCALS_READ)
                self._frames[addr] = (fv.locals, fv.globals_addr)
            except errors.PyframesError:
                self._frames[addr] = None
        return self._frames[addr]

    def _globals_of(self, addr):
        if not addr:
            return None
        if addr not in self._globals:
            try:
                value = self.target.value(addr, **_GLOBALS_READ)
            except errors.PyframesError:
                value = None
            self._globals[addr] = value if value is not None and value.kind == "dict" else None
        return self._globals[addr]

    def local_name(self, frame, addr):
        """The best name of the object at ``addr`` among the frame's
        locals (one level down), else None."""
        found = self._local(frame, addr)
        return found[1] if found is not None else None

    def _local(self, frame, addr):
        read = self._frame(frame) if addr else None
        found = None
        for loc in read[0] if read is not None else ():
            value = loc.value
            if value is None or not loc.name or loc.kind == "stack":
                continue
            if value.addr == addr:
                found = _best(found, _LOCAL, loc.name)
            rank = _SELF_PART if loc.name == "self" else _LOCAL_PART
            for how, child in _parts(value):
                if child.addr == addr:
                    found = _best(found, rank, part_name(loc.name, **how))
        return found

    def in_frame(self, frame, addr, globals_too=True):
        """(rank, name): the best name of the object at ``addr`` in one
        frame (its locals, and with ``globals_too`` its module's globals),
        else None."""
        key = (frame.frame_addr, addr, globals_too)
        if key in self._names:
            return self._names[key]
        found = None
        read = self._frame(frame) if addr else None
        if read is not None:
            found = self._local(frame, addr)
            globs = self._globals_of(read[1]) if globals_too else None
            kids = globs.children if globs is not None else ()
            for i in range(0, len(kids) - 1, 2):
                name, value = kids[i], kids[i + 1]
                if name is None or name.kind != "str" or name.truncated or value is None \
                        or not name.text.isidentifier():
                    continue
                if value.addr == addr:
                    found = _best(found, _GLOBAL, name.text)
                    break
                for how, child in _parts(value):
                    if child.addr == addr:
                        found = _best(found, _GLOBAL_PART, part_name(name.text, **how))
        self._names[key] = found
        return found

    def name(self, frames, addr):
        """The name of the object at ``addr`` from the nearest of
        ``frames`` (innermost first) that names it, a frame of the
        program's own code before one of the standard library; else None."""
        library = None
        for frame in list(frames)[:MAX_FRAMES]:
            lib = is_library(frame.filename)
            if lib and library is not None:
                continue
            # the standard library's module globals are large and name its
            # own objects: its frames' locals only
            found = self.in_frame(frame, addr, globals_too=not lib)
            if found is None:
                continue
            if not lib:
                return found[1]
            library = found[1]
        return library
