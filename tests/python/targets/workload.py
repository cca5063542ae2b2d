"""A steady workload for profile comparisons: the main thread calls light()
and heavy() in turn, heavy() doing three times light()'s work, forever.
One line of JSON ({"pid": ...}) on stdout once it runs (the handshake)."""

import json
import os
import sys


def light():
    n = 0
    for i in range(20000):
        n += i
    return n


def heavy():
    n = 0
    for i in range(60000):
        n += i
    return n


def main():
    light()
    heavy()
    sys.stdout.write(json.dumps({"pid": os.getpid()}) + "\n")
    sys.stdout.flush()
    while True:
        light()
        heavy()


if __name__ == "__main__":
    main()
