"""Target of test_frame_cache.py: two disjoint call chains alternating in a
tight loop, main -> a_parent -> a_leaf and main -> b_parent -> b_leaf, so
that the frames of one chain take the addresses the other's just left.
Writes "ready" once running; runs until killed.
"""
import os


def a_leaf(n):
    x = 0
    for i in range(n):
        x += i
    return x


def a_parent(n):
    return a_leaf(n)


def b_leaf(n):
    y = 1
    for i in range(n):
        y += i
    return y


def b_parent(n):
    return b_leaf(n)


def main():
    os.write(1, b"ready\n")
    while True:
        a_parent(4)
        b_parent(4)


main()
