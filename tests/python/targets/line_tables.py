"""Write, for every code object of this interpreter's standard library
(each .py file under its lib directory compiled, code objects found
recursively in co_consts), its line table and the interpreter's own line of
every instruction: one line each,

    KIND FIRSTLINENO TABLE_HEX UNITS LINE... | LINE...

KIND "lnotab" (3.8, 3.9: co_lnotab) or "pep626" (3.10: co_linetable);
UNITS the bytecode's length in 2-byte code units.  The first lines are
PyCode_Addr2Line's for each unit's byte offset (what a frame's f_lineno
is while it is not traced), the second the dis module's: 3.10's
co_lines() ranges, 3.8/3.9's dis.findlinestarts (the last start at or
before the offset); -1 for none.  A summary line "files N skipped M" comes
last.  Usage: python3.X line_tables.py OUT (CPython 3.8-3.10 only)."""

import ctypes
import dis
import os
import sys
import sysconfig
import warnings

assert sys.version_info[:2] in ((3, 8), (3, 9), (3, 10)), sys.version

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int
PEP626 = sys.version_info >= (3, 10)


def codes(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            for inner in codes(c):
                yield inner


def dis_lines(code, units):
    lines = [-1] * units
    if PEP626:
        for start, end, line in code.co_lines():
            for b in range(start, min(end, units * 2), 2):
                lines[b // 2] = -1 if line is None else line
        return lines
    starts = sorted(dis.findlinestarts(code))
    k, line = 0, -1
    for u in range(units):
        while k < len(starts) and starts[k][0] <= u * 2:
            line = starts[k][1]
            k += 1
        lines[u] = line
    return lines


def main(out_path):
    warnings.simplefilter("ignore")  # the SyntaxWarnings of test data
    root = sysconfig.get_paths()["stdlib"]
    files = skipped = 0
    with open(out_path, "w") as out:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "site-packages")
            for name in sorted(filenames):
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    with open(path, "rb") as f:
                        top = compile(f.read(), path, "exec", dont_inherit=True)
                except (SyntaxError, ValueError, UnicodeDecodeError):
                    skipped += 1  # Python 2 test data, bad encodings on purpose
                    continue
                files += 1
                for code in codes(top):
                    table = code.co_linetable if PEP626 else code.co_lnotab
                    units = len(code.co_code) // 2
                    own = [addr2line(code, u * 2) for u in range(units)]
                    out.write("%s %d %s %d %s | %s\n" % (
                        "pep626" if PEP626 else "lnotab", code.co_firstlineno,
                        table.hex() or "-", units, " ".join(map(str, own)),
                        " ".join(map(str, dis_lines(code, units)))))
        out.write("files %d skipped %d\n" % (files, skipped))


if __name__ == "__main__":
    main(sys.argv[1])
