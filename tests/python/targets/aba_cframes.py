"""Target of tests/bench/stress_aba.py and stress_chains.py on CPython 3.11
and 3.12, whose current frame is reached through the _PyCFrame of the eval
loop running it, on the C stack: two disjoint call chains alternating in a
tight loop, main -> a_parent -> (map, in C) -> a_leaf and main -> b_parent
-> b_mid -> (map) -> b_leaf.  Each leaf runs in an eval loop of its own,
entered from C, whose _PyCFrame (and 3.12's entry frame) takes the C stack
address the last one left; a_leaf's frame takes the data-stack address
b_mid's left, and the entry frame there names a_parent or b_mid as its
caller by turns.
Writes "ready" once running; runs until killed.
"""
import os

ONE = (3,)


def a_leaf(n):
    x = 0
    for i in range(n):
        x += i
    return x


def a_parent():
    return sum(map(a_leaf, ONE))


def b_leaf(n):
    y = 1
    for i in range(n):
        y += i
    return y


def b_mid():
    return sum(map(b_leaf, ONE))


def b_parent():
    return b_mid()


def main():
    os.write(1, b"ready\n")
    while True:
        a_parent()
        b_parent()


main()
