"""Stress target for the heap-frame versions (CPython 3.8-3.10): two call
chains alternating in a tight loop, main -> a_parent -> a_rec x3 -> a_leaf
and main -> b_parent -> b_rec x3 -> b_leaf.  A function's first frame is
its code object's zombie frame, the frames of its recursive calls come
from the interpreter's free list (last freed, first reused): so one
chain's nested frames take the addresses the other's just left, with
another code object, as different functions' frames do in any program.
Writes "ready" once running; runs until killed.
"""
import os


def a_leaf(n):
    x = 0
    for i in range(n):
        x += i
    return x


def a_rec(k, n):
    return a_rec(k - 1, n) if k else a_leaf(n)


def a_parent(n):
    return a_rec(2, n)


def b_leaf(n):
    y = 1
    for i in range(n):
        y += i
    return y


def b_rec(k, n):
    return b_rec(k - 1, n) if k else b_leaf(n)


def b_parent(n):
    return b_rec(2, n)


def main():
    os.write(1, b"ready\n")
    while True:
        a_parent(4)
        b_parent(4)


main()
