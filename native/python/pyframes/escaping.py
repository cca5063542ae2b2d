"""The one escaping of text that comes from a target.

Names, file names, task names, source lines and error details are data of
the target process: a hostile or corrupt process can put terminal control
sequences (ESC, BEL, CR, LF, DEL, C1 controls), bidi overrides and isolates
or NUL in them.  Every path that prints such text goes through
:func:`escape` (one field) or :func:`escape_lines` (a finished message or
output, whose own newlines are kept); nothing printed by pyframes holds a
character that ``str.isprintable()`` rejects, except those newlines.
"""

__all__ = ["escape", "escape_lines", "collapsed_name"]

_SIMPLE = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def escape(s):
    """``s`` with control and other non-printable characters escaped as
    ``\\t``, ``\\n``, ``\\r``, ``\\xNN``, ``\\uNNNN`` or ``\\UNNNNNNNN`` (as
    repr() does, without quotes); printable non-ASCII text is kept.  The
    result is printable, and escaping it again changes nothing."""
    if not isinstance(s, str):
        s = str(s)
    if s.isprintable():
        return s
    out = []
    for c in s:
        if c.isprintable():
            out.append(c)
            continue
        simple = _SIMPLE.get(c)
        if simple:
            out.append(simple)
            continue
        n = ord(c)
        if n < 0x100:
            out.append("\\x%02x" % n)
        elif n < 0x10000:
            out.append("\\u%04x" % n)
        else:
            out.append("\\U%08x" % n)
    return "".join(out)


# the ASCII characters str.isprintable() accepts, and the newline
_ASCII_KEPT = bytes(range(0x20, 0x7F)) + b"\n"


def escape_lines(text):
    """A whole message or output: every line escaped, its ``\\n`` kept.
    Fields were escaped where they were put in (a newline inside a name is
    ``\\n`` there); this is the last guard where text leaves pyframes.
    Text that needs nothing is returned as it is after one pass over it
    (ASCII: one deletion of the kept bytes in C; else one isprintable())."""
    if text.isascii():
        if not text.encode("ascii").translate(None, _ASCII_KEPT):
            return text
    elif text.replace("\n", "").isprintable():
        return text
    return "\n".join(escape(line) for line in text.split("\n"))


def collapsed_name(text):
    """A name in the collapsed-stack format: escaped, and ``;`` (which
    separates frames) written ``\\x3b``."""
    return escape(text).replace(";", "\\x3b")
