"""What the gdb and lldb plugins share besides their adapter.

A plugin (gdb/pyframes_gdb.py, lldb/pyframes_lldb.py) puts the package on
sys.path (it sits beside the plugin: ``../native/python`` in the source
tree, ``../python`` when installed) and imports this module; everything
else it needs is here: the modules of the command layer, the session of
its commands, running a command into its text or its one-line failure,
and the ``pyframes-bt`` switch of the Python frames in the debugger's own
backtrace.
"""

from . import adapter, errors, mixed, navigate, options, report, sample_command, session  # noqa: F401
from .escaping import escape, escape_lines  # noqa: F401

__all__ = ["adapter", "errors", "mixed", "navigate", "options", "report", "sample_command",
           "session", "escape", "escape_lines", "new_session", "run_command",
           "BT_COMMAND", "bt_switch", "bt_state", "MAX_NATIVE", "navigation_names"]

#: The command that switches the Python frames in the debugger's ``bt``
#: (gdb also keeps its setting ``set pyframes frame-filter on|off``).
BT_COMMAND = "pyframes-bt"

#: Native frames of one backtrace looked at, at most.
MAX_NATIVE = 65536


def new_session(command_name, debugger_name, old=None):
    """The session of the stack command ``command_name`` in one debugger;
    ``old`` (a plugin loaded again) releases its targets first."""
    if old is not None:
        try:
            old.close()
        except Exception:
            pass
    return session.Session(command_name, options.short_description(debugger_name))


def run_command(name, command):
    """command() -> the text to print.  Returns (text, None), or (None, the
    one-line failure to show: never a Python traceback), both escaped."""
    try:
        return escape_lines(command()), None
    except errors.CommandError as e:
        return None, escape_lines(str(e))
    except KeyboardInterrupt:
        raise
    except Exception as e:
        return None, escape_lines("%s: %s: %s" % (name, type(e).__name__, e))


def bt_switch(argument):
    """The word of ``pyframes-bt [on|off]``: True, False, or None (no word:
    show the state).  Raises CommandError for anything else."""
    word = (argument or "").strip()
    if word in ("on", "off"):
        return word == "on"
    if word:
        raise errors.CommandError("usage: %s [on|off]" % BT_COMMAND)
    return None


def bt_state(on, how):
    """The line ``pyframes-bt`` prints: whether bt shows Python frames."""
    return "Python frames in bt (%s): %s" % (how, "on" if on else "off")


def navigation_names():
    """The names to register the frame navigation commands under: each
    plain one (py-up, ...) and its ``pyf-`` name (pyf-up, ...).  In gdb a
    plain name CPython's gdb helper took back is taken again
    (gdb/pyframes_gdb.py, navigate.HELPER_NAMES)."""
    names = []
    for plain in navigate.COMMANDS:
        names.append(plain)
        names.append(navigate.PYF_NAMES[plain])
    return names

