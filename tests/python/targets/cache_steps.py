"""Target of test_frame_cache.py: a stack driven one command at a time.

    pythonX.Y cache_steps.py

Before each command it writes its own view of the main thread's stack, one
JSON line [[function, line], ...] innermost first (from sys._getframe), then
blocks in os.read(0, 1) for the command:
  a / b  call fa / fb, which run the same loop one level deeper
  r      return from the current level
  s      block at the other of the loop's two read lines next time
  t      start a thread that sits 30 frames deep in its own recursion
EOF on stdin ends the program.
"""
import json
import os
import sys
import threading


def own_view():
    frame, stack = sys._getframe(2), []  # the caller of report()
    while frame is not None:
        stack.append([frame.f_code.co_qualname, frame.f_lineno])
        frame = frame.f_back
    return stack


def report(line):
    stack = own_view()
    stack[0][1] = line  # the read the loop is about to block in
    os.write(1, (json.dumps(stack) + "\n").encode())


def sit(n, ready):
    if n == 0:
        ready.set()
        threading.Event().wait()
    return sit(n - 1, ready)


def loop(depth):
    other = False
    while True:
        if other:
            report(sys._getframe().f_lineno + 1)
            cmd = os.read(0, 1)
        else:
            report(sys._getframe().f_lineno + 1)
            cmd = os.read(0, 1)
        if not cmd:
            sys.exit(0)
        if cmd == b"a":
            fa(depth + 1)
        elif cmd == b"b":
            fb(depth + 1)
        elif cmd == b"r":
            return
        elif cmd == b"s":
            other = not other
        elif cmd == b"t":
            ready = threading.Event()
            threading.Thread(target=sit, args=(30, ready), daemon=True).start()
            ready.wait()


def fa(depth):
    return loop(depth)


def fb(depth):
    return loop(depth)


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    loop(0)
