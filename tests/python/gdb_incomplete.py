"""A gdb command for CPython 3.11 and 3.12, sourced beside CPython's own
python3.X-gdb.py: `pyf-incomplete` prints one line per thread whose current
frame has not reached its first traceable instruction (CPython's
_PyFrame_IsIncomplete: not a generator's frame, prev_instr before
co_code_adaptive + _co_firsttraceable), read through the interpreter's own
DWARF, so the struct layouts are CPython's and not pyframes':

    pyf-incomplete <native thread id> <co_firstlineno>

CPython hides such a frame (sys._getframe, tracebacks); CPython's py-bt
shows it.  No function of the target is called."""

import gdb

FRAME_OWNED_BY_GENERATOR = 1
MAX_THREADS = 10000


class PyfIncomplete(gdb.Command):
    def __init__(self):
        super(PyfIncomplete, self).__init__("pyf-incomplete", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        unit = gdb.lookup_type("_Py_CODEUNIT").pointer()
        interp = gdb.parse_and_eval("_PyRuntime.interpreters.head")
        seen = 0
        while int(interp) and seen < MAX_THREADS:
            ts = interp["threads"]["head"]
            while int(ts) and seen < MAX_THREADS:
                seen += 1
                try:
                    frame = ts["cframe"]["current_frame"]
                    if int(frame) and int(frame["owner"]) != FRAME_OWNED_BY_GENERATOR:
                        code = frame["f_code"]
                        first = code["co_code_adaptive"].address.cast(unit)
                        index = int(frame["prev_instr"] - first)
                        if index < int(code["_co_firsttraceable"]):
                            print("pyf-incomplete %d %d" % (int(ts["native_thread_id"]),
                                                            int(code["co_firstlineno"])))
                except gdb.MemoryError:
                    # a thread state being made or torn down (its _PyCFrame
                    # or frame not there): nothing said of it
                    print("pyf-incomplete unreadable %d" % int(ts["native_thread_id"]))
                ts = ts["next"]
            interp = interp["next"]
        print("pyf-incomplete done")


PyfIncomplete()
