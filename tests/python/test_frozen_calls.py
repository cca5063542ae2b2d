"""A process stopped in the middle of a call from C, read by the command
line while a debugger holds it (CPython 3.11, 3.12).

A call from C makes an eval loop that names the frame it runs as the
thread's current frame before that frame has run anything there: its
stack pointer is saved and its caller waits in C.  A running process
shows that only in passing, and a frame like it may be one that returned
(pyframes reads such a thread again); a process whose every thread is
stopped (a debugger's stop, SIGSTOP) shows it for as long as it is
stopped, and the command line reads it as it is, when memory says which
it is:

* "map": map calls f, whose frame has not run its first instruction:
  f's caller and everything under it are shown, f itself hidden as
  CPython hides it (_PyFrame_IsIncomplete);
* "genexpr": join resumes a generator (its state executing): the
  generator's frame over its caller, and everything under it.

gdb (with the interpreter's DWARF) stops the thread at the eval loop's
start_frame label when its current frame is such a frame; the oracle is
CPython's own py-bt in that stop, less the frame gdb_incomplete.py finds
incomplete, read through CPython's own struct definitions."""

import os

import pytest

import debugger_util as du
from conftest import OLDER_INTERPRETERS
from test_real_programs import INCOMPLETE_GDB, cli_json, document_threads
from test_write_nothing import Stepper

PYENV = [i for i in OLDER_INTERPRETERS
         if i.minor in ("3.11", "3.12") and os.path.exists(os.path.realpath(i.path) + "-gdb.py")]

# the newest thread (the head of the interpreter's list): the worker
_TOP = "_PyRuntime.interpreters.head->threads.head->cframe->current_frame"
# its current frame was entered from C (3.11: is_entry; 3.12: over an
# entry frame, FRAME_OWNED_BY_CSTACK) and has not resumed (stack pointer
# saved)
_FROM_C = {"3.11": "%s->is_entry" % _TOP, "3.12": "%s->previous->owner == 3" % _TOP}
_SAVED = "%s->stacktop >= 0" % _TOP
# map: f, owned by the thread; genexpr: a generator's (FRAME_OWNED_BY_GENERATOR)
_OWNER = {"map": "%s->owner == 0" % _TOP, "genexpr": "%s->owner == 1" % _TOP}
# (the innermost frame py-bt shows, its caller)
_SHOWN = {"map": ("f", "mapper"), "genexpr": ("<genexpr>", "text")}


@pytest.mark.parametrize("mode", ["map", "genexpr"])
@pytest.mark.parametrize("interp", [pytest.param(i, id=i.name) for i in PYENV]
                         or [pytest.param(None, id="no-pyenv")])
def test_stopped_while_a_call_from_c_sets_up(interp, mode, tmp_path):
    if interp is None:
        pytest.skip("no pyenv CPython 3.11 or 3.12 with its python3.X-gdb.py")
    du.require("gdb", interp.name)
    with du.LiveTarget(interp.path, "set_up_from_c.py", tmp_path, args=[mode]) as target:
        stepper = Stepper("gdb", target.pid, str(tmp_path))
        try:
            stepper.step("set may-call-functions off")
            stepper.step("source %s-gdb.py" % os.path.realpath(interp.path))
            stepper.step("source %s" % INCOMPLETE_GDB)
            stepper.step("break -function _PyEval_EvalFrameDefault -label start_frame if "
                         "%s && %s && %s" % (_FROM_C[interp.minor], _SAVED, _OWNER[mode]))
            stepper.step("continue")
            stepper.step("delete")
            frames, errors = document_threads(cli_json(["dump", "--all", "--json",
                                                        str(target.pid)]))
            stepper.step("thread apply all -c py-bt")
            stepper.step("pyf-incomplete")
        finally:
            session = stepper.close()
    stop, py_bt_text, incomplete = session[4], session[6], session[7]
    assert "Breakpoint 1," in stop, stop
    py_bt = du.parse_py_bt_threads(py_bt_text)
    top, caller = _SHOWN[mode]
    worker = [tid for tid, theirs in py_bt.items()
              if len(theirs) > 1 and theirs[0][0] == top and theirs[1][0] == caller]
    assert len(worker) == 1, "py-bt shows no thread in %s over %s:\n%s" % (top, caller,
                                                                         py_bt_text)
    tid = worker[0]
    theirs = py_bt[tid]
    if mode == "map":
        assert "pyf-incomplete %d " % tid in incomplete, (
            "gdb does not find the worker's f incomplete:\n" + incomplete)
        theirs = theirs[1:]
    else:
        assert "pyf-incomplete %d " % tid not in incomplete, incomplete
    assert tid not in errors, "pyframes marked the worker incomplete: %s" % errors[tid]
    mine = [(du.co_name(n), f, line) for n, f, line in frames[tid]]
    assert mine == theirs, "pyframes %s\npy-bt %s" % (mine, theirs)
