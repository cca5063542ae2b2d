"""The README's command lines name commands and options that exist.

Every command line of README.md (its code blocks, and its inline code that
starts with a command) is parsed by the parser that runs it: `pyframes ...`
(the installed command, `build/pyframes`, `build/sandbox/pyframes`) and
`python3 -m pyframes ...` by the command line's own parser, and the latter
only with the PYTHONPATH it needs on the same line; `(gdb) py-bt-fast ...`,
`(lldb) pystack ...` and `py-sample` by the debugger commands' parsers, the
navigation commands by their names; `sandbox.sh SUBCOMMAND` against the
subcommands sandbox.sh dispatches, and the command lines given to
`sandbox.sh run` and to gdb's `-ex` each checked the same way.  The README cannot name an option or a
command that is not there (as `python3 -m pyframes dump PID` after
`cmake --install` once was), and each kind of line is met at least once.
"""

import os
import re
import shlex
import sys

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PKG = os.path.join(_REPO, "native", "python")
if _PKG not in sys.path:
    sys.path.insert(0, _PKG)

from pyframes import cli, navigate, options, sample_command  # noqa: E402
from pyframes.errors import UsageError  # noqa: E402

README = os.path.join(_REPO, "README.md")
SANDBOX = os.path.join(_REPO, "tests", "sandbox", "sandbox.sh")
# What the README writes for the values a reader fills in.
PLACEHOLDERS = {"PID": "1234", "$!": "1234", "EXPR": "x"}


def _readme_commands():
    """[(line number, command line)]: each line of a code block, and each
    inline code span, that is a command line (prompt and comment removed)."""
    with open(README) as f:
        text = f.read()
    found = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        # inline, a single word is a name (`pyframes`), not a command line
        pieces = [line] if fenced else [p for p in re.findall(r"`([^`]+)`", line)
                                         if " " in p.strip()]
        for piece in pieces:
            piece = re.sub(r"^\s*(\$|\(gdb\)|\(lldb\))\s+", "", piece)
            piece = re.sub(r"\s+#\s.*$", "", piece).strip()
            if piece:
                found.append((number, piece))
    return found


def _words(command):
    words = shlex.split(command)
    env = {}
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return env, [PLACEHOLDERS.get(w, w) for w in words]


def _sandbox_subcommands():
    with open(SANDBOX) as f:
        return set(re.findall(r"^\s+([a-z]+)\)", f.read(), re.M))


def _check(command):
    """The kind of command line checked, or None (not one of ours); raises
    UsageError (or AssertionError) when it names what does not exist."""
    env, words = _words(command)
    if not words:
        return None
    head = words[0]
    if head == "pyframes" or head.endswith("/pyframes"):
        cli.build_parser().parse_args(words[1:])
        return "pyframes"
    if words == ["python3", "-m", "pyframes"]:
        return None  # the command's name, in a sentence
    if words[:3] == ["python3", "-m", "pyframes"]:
        assert "PYTHONPATH" in env, "python3 -m pyframes needs PYTHONPATH: %s" % command
        cli.build_parser().parse_args(words[3:])
        return "python3 -m pyframes"
    rest = " ".join(shlex.quote(w) for w in words[1:])
    if head in ("py-bt-fast", "pystack"):
        options.parse_arguments(options.build_parser(head), rest)
        return head
    if head == "py-sample":
        options.parse_arguments(sample_command.build_parser(head), rest)
        return head
    if head in ("py-bt", "py-bt-full"):
        return None  # CPython's own gdb helper's, which the README compares with
    if head.startswith("py-"):
        assert head in navigate.COMMANDS, "no command %s: %s" % (head, command)
        return "navigation"
    if head == "bash" and len(words) > 1 and words[1].endswith("sandbox.sh"):
        assert os.path.join(_REPO, words[1]) == SANDBOX, command
        assert len(words) > 2 and words[2] in _sandbox_subcommands(), command
        if words[2] == "run" and len(words) == 4:  # a shell command line
            for part in re.split(r"\s*(?:;|&&|&)\s*", words[3]):
                _check(part)
        return "sandbox.sh"
    if head in ("gdb", "lldb"):  # the commands it is given
        for option, value in zip(words, words[1:]):
            if option in ("-ex", "-o"):
                _check(value)
        return head
    return None


def test_readme_commands_exist():
    seen = {}
    for number, command in _readme_commands():
        try:
            kind = _check(command)
        except (UsageError, ValueError) as exc:
            pytest.fail("README.md line %d: %s: %s" % (number, command, exc))
        if kind:
            seen.setdefault(kind, []).append(command)
    assert set(seen) == {"pyframes", "python3 -m pyframes", "py-bt-fast", "pystack",
                         "py-sample", "navigation", "sandbox.sh", "gdb"}, seen


@pytest.mark.parametrize("command, wrong", [
    ("python3 -m pyframes dump PID", "PYTHONPATH"),
    ("pyframes dump --no-such-option PID", "unrecognized"),
    ("pyframes dumps PID", "invalid choice"),
    ("py-bt-fast --all --no-such-option", "unrecognized"),
    ("bash tests/sandbox/sandbox.sh no-such-subcommand", ""),
    ("py-nowhere", "no command"),
    ("bash tests/sandbox/sandbox.sh run 'python3.14 p.py & sleep 2; pyframes dumps $!'",
     "invalid choice"),
    ("gdb -p PID -ex 'py-bt-fast --alll'", "unrecognized"),
])
def test_readme_check_refuses(command, wrong):
    """The check fails on each kind of drift."""
    with pytest.raises((UsageError, AssertionError)) as info:
        _check(command)
    assert wrong in str(info.value)
