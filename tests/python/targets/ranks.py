"""One rank of a hung job (test_multi_process.py): started several times,
each with its rank (argv[2]), so that some stacks are the same in every
rank and one is its own.

* "loader-0" ... "loader-R": R+1 data loader threads, all blocked in
  os.read in ``wait_batch``, the same stack in every rank (of one
  interpreter);
* "rank-R": blocked in os.read in ``step`` R+1 levels deep, a stack only
  this rank has;
* the main thread blocks in the handshake.
"""

import os
import sys

import _common

H = _common.Harness.from_argv()
RANK = int(sys.argv[2])


def wait_batch():
    H.record(); os.read(H.fd(), 1)


def step(depth):
    if depth:
        return step(depth - 1)
    H.record(); os.read(H.fd(), 1)


def main():
    for i in range(RANK + 1):
        H.start(wait_batch, name="loader-%d" % i)
    H.start(step, RANK + 1, name="rank-%d" % RANK)
    H.publish_and_block()


if __name__ == "__main__":
    main()
