"""A program whose main thread has finished and waits for its last
worker, as a new user's batch job does: main() hands the results to a
non-daemon "flusher" thread and returns; the interpreter then waits in
threading._shutdown for the flusher, which takes its time.

Once the main thread is there (the flusher sees threading._shutdown as the
main thread's innermost frame in sys._current_frames()), one line of JSON
goes to stdout: the pid and threading.main_thread()'s native id and ident;
then the flusher sleeps until the process is killed.
"""

import json
import os
import sys
import threading
import time


def flush(results):
    main = threading.main_thread()
    while True:
        frame = sys._current_frames().get(main.ident)
        if frame is not None and frame.f_code.co_name == "_shutdown":
            break
        time.sleep(0.005)
    sys.stdout.write(json.dumps({"pid": os.getpid(), "main": main.native_id,
                                 "ident": main.ident, "results": len(results)}) + "\n")
    sys.stdout.flush()
    while True:
        time.sleep(3600)


def main():
    results = [n * n for n in range(1000)]
    threading.Thread(target=flush, args=(results,), name="flusher").start()


if __name__ == "__main__":
    main()
