"""`dump --table`: the table of `python -m asyncio ps`, from the same
process, row for row.

Oracle: `python3.X -m asyncio ps PID` run under the target's interpreter
(CPython's own tool, task_oracle.asyncio_ps).  Each of its rows (a task and
one of its awaiters) must be a row of ours with the same coroutine stack
and awaiter chain, in the same order: innermost first.
"""

import os
import re
import subprocess
import sys

import pytest

import debugger_util as du
import task_oracle as oracle

VERSIONS = ("3.14", "3.15")
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CUT = 60  # our table's widest cell


def _cli(*args):
    env = du.clean_env({"PYTHONPATH": os.path.join(REPO, "native", "python")})
    return subprocess.run([sys.executable, "-m", "pyframes"] + list(args), capture_output=True,
                          text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)


def _cell(text):
    return text if len(text) <= CUT else text[:CUT - 3] + "..."


@pytest.mark.parametrize("version", VERSIONS)
def test_table_rows_match_asyncio_ps(version, tmp_path):
    du.require(None, version)
    python = du.python_for(version)
    if python is None:
        pytest.skip("no python%s" % version)
    with du.LiveTarget(python, "tasks.py", workdir=str(tmp_path)) as target:
        oracle.target_facts(str(tmp_path))  # every task suspended
        ps = oracle.asyncio_ps(python, target.pid)
        table = _cli("dump", "--table", str(target.pid))
    assert ps.returncode == 0 and ps.rows, ps.stderr
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    assert header == ["thread", "task id", "task name", "state", "coroutine stack",
                      "awaiter chain", "awaiter name", "awaiter id"], lines[0]
    problems = []
    for row in ps.rows:
        task = "0x%x" % row["task_id"]
        awaiter = "0x%x" % row["awaiter_id"] if row["awaiter_id"] else None
        # ours: no awaiter id at all for a task nothing awaits (ps: 0x0)
        mine = [line + "  " for line in lines[2:] if line.split()[1] == task and (
            line.split()[-1] == awaiter if awaiter else
            not re.search(r"\s0x[0-9a-f]+$", line))]
        if len(mine) != 1:
            problems.append("%s awaited by %s: %d rows of ours" % (task, awaiter, len(mine)))
            continue
        stack = _cell(" -> ".join(row["coroutine_stack"]))
        chain = _cell(" -> ".join(row["awaiter_chain"]))
        where = mine[0].find("  %s  " % stack) if stack else 0
        if where < 0:
            problems.append("%s: coroutine stack %r not in %r" % (task, stack, mine[0]))
        elif chain and mine[0].find("  %s  " % chain, where + len(stack)) < 0:
            problems.append("%s: awaiter chain %r not after its stack in %r"
                            % (task, chain, mine[0]))
    assert not problems, "\n".join(problems) + "\n--- ours:\n" + table.stdout + \
        "\n--- asyncio ps:\n" + ps.stdout
