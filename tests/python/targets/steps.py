"""Target of test_frame_reuse.py: a deep recursion whose innermost function
is compiled anew each round, stops at two lines in turn, and says where.

    pythonX.Y steps.py DEPTH

Each round i compiles a function named f<i> (fixed-length names, so the code
objects are the same size and a freed one's memory is soon reused), calls it
DEPTH frames deep, and inside it twice: writes one line to stdout,
"<name> <id(code)> <line>", where line is the line of the os.read it then
blocks in on stdin; one byte on stdin moves it on.  After the second stop
the function returns, the round's code object is dropped (freed) and the
next round starts.  EOF on stdin ends the program.
"""
import gc
import os
import sys

SOURCE = '''def {name}():
    where()
    os.read(0, 1)
    where()
    os.read(0, 1)
'''


def where():
    caller = sys._getframe(1)
    line = "%s %d %d\n" % (caller.f_code.co_name, id(caller.f_code), caller.f_lineno + 1)
    os.write(1, line.encode())


def descend(n, fn):
    if n == 0:
        return fn()
    return descend(n - 1, fn)


def main():
    sys.setrecursionlimit(100000)
    depth = int(sys.argv[1])
    i = 0
    while True:
        name = "f%05d" % i
        space = {"os": os, "where": where}
        exec(compile(SOURCE.format(name=name), "<round-%05d>" % i, "exec"), space)
        descend(depth, space[name])
        del space
        gc.collect()
        i += 1


main()
