"""What a hung test process was doing, for the failure message of a test
whose debugger session or target ran past its time limit.

:func:`report` lists the process and its descendants (from /proc), and for
each one, while it still runs:

* its native stacks, every thread: ``gdb -p PID -batch -ex "thread apply
  all bt"`` (gdb attaches, prints and detaches);
* its Python stacks, read by pyframes itself (``python3 -m pyframes dump
  PID``, the package of this clone and $PYFRAMES_LIBRARY): gdb and lldb
  embed CPython, and the targets are CPython.

Only then may the caller kill it.  Each step is bounded, and a step that
fails says so in the report instead of hiding the rest.
"""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "native", "python")
STEP_TIMEOUT = 60
_LIMIT = 40000  # characters of one step's output kept in the report


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def _stat(pid):
    """(comm, state, ppid) of a process, or None when it is gone."""
    text = _read("/proc/%d/stat" % pid)
    if not text:
        return None
    # comm is in parentheses and may hold spaces and parentheses itself.
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text[text.rindex(")") + 2:].split()
    return comm, fields[0], int(fields[1])


def descendants(pid):
    """pid, then every live descendant of it, parents before children."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st is not None:
                children.setdefault(st[2], []).append(int(name))
    order, todo = [], [pid]
    while todo:
        p = todo.pop(0)
        if p in order:
            continue
        order.append(p)
        todo.extend(sorted(children.get(p, ())))
    return order


def _step(argv, env=None, timeout=STEP_TIMEOUT):
    """The output of one bounded diagnostic command, or why there is none."""
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
    except OSError as e:
        return "(could not run %s: %s)" % (argv[0], e)
    try:
        out, _ = proc.communicate(timeout=timeout)
        text = out.decode("utf-8", "replace")
        if proc.returncode:
            text += "\n(exit status %d)" % proc.returncode
    except subprocess.TimeoutExpired:
        text = "(%s did not finish within %d s)" % (argv[0], timeout)
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, 9)
            except OSError:
                pass
            proc.wait()
    if len(text) > _LIMIT:
        text = text[:_LIMIT // 2] + "\n[... %d characters left out ...]\n" % (
            len(text) - _LIMIT) + text[-_LIMIT // 2:]
    return text.rstrip("\n")


def native_stacks(pid):
    gdb = shutil.which("gdb")
    if gdb is None:
        return "(no gdb on PATH: native stacks not taken)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return _step([gdb, "-nx", "-p", str(pid), "-batch",
                  "-iex", "set debuginfod enabled off", "-iex", "set pagination off",
                  "-ex", "thread apply all bt"], env=env)


def _runs_python(pid):
    maps = _read("/proc/%d/maps" % pid)
    return maps is None or "python" in os.path.basename(_read_link("/proc/%d/exe" % pid)) \
        or "libpython" in maps


def _read_link(path):
    try:
        return os.readlink(path)
    except OSError:
        return ""


def python_stacks(pid):
    if not _runs_python(pid):
        return "(no python executable or libpython mapped: not a Python process)"
    env = dict(os.environ)
    env["PYTHONPATH"] = PACKAGE_DIR
    return _step([sys.executable, "-m", "pyframes", "dump", str(pid)], env=env)


def report(pid, what="process"):
    """The report for pid and its descendants, as text."""
    parts = []
    for p in descendants(pid):
        st = _stat(p)
        if st is None:
            continue
        comm, state, ppid = st
        cmdline = (_read("/proc/%d/cmdline" % p) or "").replace("\0", " ").strip()
        wchan = (_read("/proc/%d/wchan" % p) or "?").strip() or "?"
        head = "%s %d (%s, state %s, parent %d, kernel wait %s): %s" % (
            what if p == pid else "descendant", p, comm, state, ppid, wchan, cmdline[:500])
        parts.append("=== " + head)
        parts.append("--- Python stacks (python3 -m pyframes dump %d) ---" % p)
        parts.append(python_stacks(p))
        parts.append("--- native stacks (gdb -p %d -batch -ex \"thread apply all bt\") ---" % p)
        parts.append(native_stacks(p))
    if not parts:
        return "(%s %d was gone before its stacks could be taken)" % (what, pid)
    return "\n".join(parts)
