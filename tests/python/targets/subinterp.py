"""A worker OS thread runs code in a subinterpreter (3.14+:
concurrent.interpreters; 3.11 and 3.12: _xxsubinterpreters, whose
run_string is C); that code records its own stack and blocks.  The
handshake document (through livetarget's FIFO) holds the subinterpreter's
view ("sub"), the calling frames in the main interpreter ("outer") and the
worker's native thread id.

    pythonX.Y subinterp.py HANDSHAKE
"""
import json, os, sys, threading, time
try:
    from concurrent import interpreters
except ImportError:  # 3.11, 3.12
    import _xxsubinterpreters
    interpreters = None

handshake = os.open(sys.argv[1], os.O_WRONLY)  # the FIFO of livetarget.py
r, w = os.pipe()

# The view of a stack, as [function, filename, line] from a frame outwards;
# defined in both interpreters from this one text.
VIEW = """
def view(frame):
    frames = []
    while frame is not None:
        frames.append([frame.f_code.co_qualname, frame.f_code.co_filename, frame.f_lineno])
        frame = frame.f_back
    return frames
"""
exec(VIEW)

SUB = VIEW + """
import json, os, sys, time
class Job:
    def run(self):
        os.write(W, (json.dumps(view(sys._getframe())) + "\\n").encode()); time.sleep(3600)
def start():
    Job().run()
start()
""".replace("W", str(w))

outer = {}

def worker():
    if interpreters is not None:
        interp = interpreters.create()
        outer["frames"] = view(sys._getframe()); interp.exec(SUB)
    else:
        interp = _xxsubinterpreters.create()
        outer["frames"] = view(sys._getframe()); _xxsubinterpreters.run_string(interp, SUB)

t = threading.Thread(target=worker, daemon=True)
t.start()
line = b""
while not line.endswith(b"\n"):
    line += os.read(r, 65536)
doc = {"pid": os.getpid(), "native_tid": t.native_id,
       "sub": json.loads(line), "outer": outer["frames"]}
os.write(handshake, (json.dumps(doc) + "\n").encode())
time.sleep(3600)
