"""Target: a loop that calls two short functions in turn, each from a
line of its own, so that the caller's instruction moves with every call
(a microsecond or so each on these machines).  A walk that reads the caller
at another moment than the top can show one function under the other's
call.  Writes "ready" once running; runs until killed."""
import os


def small_a(n):
    return sum(range(n))


def small_b(n):
    total = 0
    for i in range(n):
        total += i
    return total


def loop():
    os.write(1, b"ready\n")
    while True:
        small_a(50)  # calls small_a
        small_b(50)  # calls small_b


loop()
