"""Values of frames: ``Target.frame_locals``, ``dump --locals`` (CLI),
``py-bt-fast --locals`` (gdb), ``pystack --locals`` (lldb), and what
py-locals and py-print print (pyframes.values), against live CPython
3.13/3.14/3.15 (and pyenv's 3.13 when present), pyenv's 3.12 and 3.11, and
the heap-frame versions 3.10, 3.9 and 3.8 (conftest.HEAP_INTERPRETERS).

The target is targets/values_scenario.py: two threads whose frames hold
every builtin type as arguments, locals, cells and free variables, one of
them through a generator and a coroutine frame.  The oracle is the
target's own: repr() of every bound local of every frame (its f_locals),
written at its handshake (values.json); for the values the default limits
cut, the documented truncation of it (``'...'...<N more chars>``,
``[..., ...<N more items>]``).  A name the frame has but f_locals
lacks must be shown unbound.  A second oracle, in gdb: CPython's own
py-locals (its -dbg helper, reading the frames through DWARF; beside the
plugin it is cpython-py-locals) on the same frames, for every value it
renders as repr() does.

Without a library or a target, the command layer (text and JSON of
--locals, the options) runs over a fake target whose values are built
from objects of this process (test_values_render.tree).
"""

import json
import os
import re
import subprocess
import sys

import pytest

import conftest
import debugger_util as du
import drivers
from livetarget import LiveTarget
from pyframes import cli, model, stack_command, values
from pyframes._abi import PYF_LOCAL_NO_STACK
from pyframes.errors import PYF_ECORRUPT, CommandError, error_from_code
from pyframes.escaping import escape
from test_values_render import tree

CLI_TIMEOUT = 120
THREADS = ("values-a", "values-b")
CHAINS = {
    "values-a": ["leaf", "outer.<locals>.inner", "outer", "chain"],
    "values-b": ["leaf", "coro_body", "gen_body", "outer.<locals>.inner", "outer", "chain"],
}
# 3.11 runs a comprehension in a frame of its own (3.12 inlines it, PEP 709):
# values-a's leaf is called from inner's <listcomp>
LISTCOMP = "outer.<locals>.inner.<locals>.<listcomp>"


def chains(minor):
    """CHAINS as the target's version runs them: 3.8 to 3.11 run the
    comprehension in a frame of its own, and 3.8 to 3.10 name a function
    by its co_name (they have no co_qualname)."""
    if minor not in ("3.11",) + conftest.HEAP_VERSIONS:
        return CHAINS
    runs = dict(CHAINS, **{"values-a": ["leaf", LISTCOMP] + CHAINS["values-a"][1:]})
    if minor not in conftest.HEAP_VERSIONS:
        return runs
    return {thread: [name.rsplit(".", 1)[-1] for name in names]
            for thread, names in runs.items()}


def shown_name(minor, qualname):
    """A function's name as the version's frames give it (chains)."""
    return qualname.rsplit(".", 1)[-1] if minor in conftest.HEAP_VERSIONS else qualname


# ---- the oracle ------------------------------------------------------------------


def expected_text(spec):
    """The text pyframes shows for a value the target described."""
    if "repr" in spec:
        return escape(spec["repr"])
    if "cut" in spec:
        return escape(spec["cut"])
    if "unreadable" in spec:
        return "<unreadable: %s>" % spec["unreadable"]
    more = "...<%s more %s>" % (format(spec["more"], ","), "chars" if "str" in spec else "items")
    if "str" in spec:
        return escape(spec["str"]) + more
    if "items" in spec:
        return "[%s, %s]" % (", ".join(spec["items"]), more)
    return "{%s, %s}" % (", ".join("%s: %s" % tuple(p) for p in spec["pairs"]), more)


def mismatches(oracle, tid, frames):
    """What differs between the oracle's frames of a thread and the frames
    pyframes read ([{"function", "locals": [JSON local]}], innermost first)."""
    problems = []
    want_frames = oracle["threads"][str(tid)]
    got_names = [f["function"] for f in frames[:len(want_frames)]]
    if got_names != [f["function"] for f in want_frames]:
        return ["thread %d: frames %s, expected %s" % (tid, got_names,
                                                        [f["function"] for f in want_frames])]
    for want, got in zip(want_frames, frames):
        where = "thread %d, %s" % (tid, want["function"])
        rows = got["locals"]
        names = [row["name"] for row in rows]
        if names[:len(want["args"])] != want["args"]:
            problems.append("%s: arguments first %s, expected %s" % (where, names, want["args"]))
        for row in rows:
            name, spec = row["name"], want["locals"].get(row["name"])
            if spec is None:
                if row["value"] is not None or row["type"] is not None:
                    problems.append("%s: %s = %r, expected unbound" % (where, name, row["value"]))
                continue
            text = expected_text(spec)
            if row["value"] != text:
                problems.append("%s: %s = %r\n    expected %r" % (where, name, row["value"], text))
            if row["truncated"] != ("repr" not in spec and "unreadable" not in spec):
                problems.append("%s: %s truncated %r" % (where, name, row["truncated"]))
            # the kinds the target's code objects give (co_cellvars, co_freevars)
            kind = ("arg" if name in want["args"] else "cell" if name in want["cells"] else
                    "free" if name in want["frees"] else "local")
            if row["kind"] != kind:
                problems.append("%s: %s is %r, expected %r" % (where, name, row["kind"], kind))
        missing = set(want["locals"]) - set(names)
        if missing:
            problems.append("%s: not shown: %s" % (where, sorted(missing)))
    return problems


def _interpreters():
    chosen = [i for i in conftest.INTERPRETERS if i.kind in ("release", "pyenv")]
    chosen += conftest.older_interpreters("all") + list(conftest.HEAP_INTERPRETERS)
    return [pytest.param(i, id=i.name) for i in chosen] or [pytest.param(None, id="none")]


class Scenario(object):
    pass


@pytest.fixture(scope="module", params=_interpreters())
def scenario(request, tmp_path_factory):
    interp = request.param
    if interp is None:
        conftest.require_interpreters()
    workdir = tmp_path_factory.mktemp("values-%s" % interp.name)
    # the file handshake: a debugger's attach would interrupt a FIFO write
    with LiveTarget(interp.path, "values_scenario.py", workdir, handshake="file") as target:
        with open(os.path.join(target.workdir, "values.json")) as f:
            oracle = json.load(f)
        s = Scenario()
        s.interp, s.target, s.oracle = interp, target, oracle
        s.tids = {name: target.tid_by_name()[name] for name in THREADS}
        yield s


def _is_thread(idents, tid, native_thread_id, thread_id):
    """Whether a thread read (its native id, its Python thread id) is the
    target's thread of native id tid: by the native id, or where the
    version's thread states keep none (3.8 to 3.10), by the
    threading.get_ident() the target reported for it."""
    return native_thread_id == tid or (
        not native_thread_id and idents is not None and thread_id == idents.get(tid))


def _thread(scenario, t, tid):
    """The snapshot's thread of native id tid (_is_thread)."""
    (thread,) = [th for th in t.snapshot().threads()
                 if _is_thread(scenario.target.idents, tid, th.native_thread_id,
                               th.thread_id)]
    return thread


def _library_frames(scenario, t, tid, **limits):
    thread = _thread(scenario, t, tid)
    out = []
    for frame in thread.frames:
        fv = t.frame_locals(frame.frame_addr, **limits)
        out.append({"function": frame.function, "frame": frame, "values": fv,
                    "locals": [values.local_dict(loc, t.python)
                               for loc in values.shown_locals(fv)]})
    return out


def _document_mismatches(scenario, doc):
    """mismatches() of both threads of a JSON document."""
    problems = []
    for name in THREADS:
        tid = scenario.tids[name]
        problems += mismatches(scenario.oracle, tid,
                               _json_frames(doc, tid, scenario.target.idents))
    return problems


def _json_frames(doc, tid, idents=None):
    """The frames of the thread of native id tid in a JSON document
    (idents: the target's threading.get_ident() of each: _is_thread)."""
    for interp in doc["interpreters"]:
        for thread in interp["threads"]:
            if _is_thread(idents, tid, thread["native_thread_id"], thread["thread_id"]):
                return thread["frames"]
    raise AssertionError("no thread %d in the document" % tid)


# ---- live: the library -----------------------------------------------------------


def test_oracle_is_what_the_target_holds(scenario):
    """The target made what the scenario says (the oracle itself)."""
    for name, chain in chains(scenario.interp.minor).items():
        frames = scenario.oracle["threads"][str(scenario.tids[name])]
        assert [f["function"] for f in frames] == chain
    leaf = scenario.oracle["threads"][str(scenario.tids["values-a"])][0]["locals"]
    assert leaf["v_big_str"]["more"] == 2 * 1024 * 1024 - 200
    assert leaf["v_big_list"]["more"] == 100000 - 100
    assert leaf["v_big_dict"]["more"] == 1000 - 100
    assert len(leaf["v_bigint"]["repr"]) == 1000 and leaf["v_nan"]["repr"] == "nan"
    assert "later" not in leaf
    inner = scenario.oracle["threads"][str(scenario.tids["values-a"])][1]["locals"]
    assert inner["comp_step"] == {"repr": "1"}  # the comprehension's, bound
    assert "tag" not in scenario.oracle["threads"][str(scenario.tids["values-a"])][3]["locals"]


@pytest.mark.parametrize("thread", THREADS)
def test_library_values_equal_the_targets_repr(scenario, pyframes, thread):
    tid = scenario.tids[thread]
    with pyframes.attach(scenario.target.pid) as t:
        frames = _library_frames(scenario, t, tid)
    problems = mismatches(scenario.oracle, tid, frames)
    assert not problems, "\n".join(problems)
    leaf = {loc.name: loc for loc in frames[0]["values"].locals}
    assert leaf["later"].unbound and leaf["later"].kind == "local"
    # an inlined comprehension's variable is a plain local of a function
    # (hidden only at module or class level): unbound once it is done
    at = {name: frames[i] for i, name in enumerate(chains(scenario.interp.minor)[thread])}
    assert {row["name"]: row["value"] for row in at["chain"]["locals"]}.get("tag") is None
    minor = scenario.interp.minor
    # where the comprehension runs
    comp = at.get(shown_name(minor, LISTCOMP), at[shown_name(minor, "outer.<locals>.inner")])
    inner = {row["name"]: row["value"] for row in comp["locals"]}
    assert inner.get("comp_step") == ("1" if thread == "values-a" else None)
    assert [f["frame"].owner for f in frames[:3]] == (
        [None, "coroutine", "generator"] if thread == "values-b" else [None, None, None])


def test_heap_frames_say_their_stack_is_not_kept(scenario, pyframes):
    """3.8 to 3.10: a frame's value stack asked with its locals is one
    entry saying why it is not read (no stack while a frame runs), and the
    locals are all there; "only" the stack: the same entry."""
    if scenario.interp.minor not in conftest.HEAP_VERSIONS:
        pytest.skip("3.8 to 3.10 only (the value stack of 3.11+: test_locks)")
    with pyframes.attach(scenario.target.pid) as t:
        frame = _thread(scenario, t, scenario.tids["values-a"]).frames[0]
        both = t.frame_locals(frame.frame_addr, stack=True)
        only = t.frame_locals(frame.frame_addr, stack="only")
    for fv in (both, only):
        (entry,) = [loc for loc in fv.locals if loc.kind == "stack"]
        assert entry.flags & PYF_LOCAL_NO_STACK and \
            "CPython 3.8-3.10 keep none while a frame runs" in entry.value.text, entry
    names = {loc.name for loc in both.locals if loc.kind != "stack"}
    assert set(scenario.oracle["threads"][str(scenario.tids["values-a"])][0]["locals"]) <= names


def test_limits(scenario, pyframes):
    tid = scenario.tids["values-a"]
    with pyframes.attach(scenario.target.pid) as t:
        (leaf, *_rest) = _library_frames(scenario, t, tid, max_string=5, max_items=3, max_depth=2)
    shown = {row["name"]: row["value"] for row in leaf["locals"]}
    assert shown["v_big_str"] == "'01234'...<2,097,147 more chars>"
    assert shown["v_big_list"] == "[0, 1, 2, ...<99,997 more items>]"
    assert shown["v_ascii"] == "'plain'...<6 more chars>"
    assert shown["v_nested"] == "{'a': [1, {...<too deep: 1 item>}]}"
    assert shown["v_self_list"] == "[1, 'two', [...]]"
    assert shown["v_self_dict"] == "{'name': 'self', 'me': {...}}"


def test_budget_cuts_values_not_the_frame(scenario, pyframes):
    """An object budget too small for the frame: some values say so, every
    local is still listed."""
    tid = scenario.tids["values-a"]
    with pyframes.attach(scenario.target.pid) as t:
        (leaf, *_rest) = _library_frames(scenario, t, tid, max_objects=20)
    rows = leaf["locals"]
    assert len(rows) == len(scenario.oracle["threads"][str(tid)][0]["locals"]) + 1  # later
    assert any(row["value"] and row["value"].startswith("<unreadable: ") for row in rows)
    assert leaf["values"].objects_read <= 20 + len(rows)


def _leaf_frame(scenario, t, tid):
    return _thread(scenario, t, tid).frames[0]


@pytest.mark.parametrize("expr,want", [
    ("v_nested['a'][1]['b'][0]", "2"),
    ("v_nested['a'][-1]", "{'b': (2, [3, {'c': 'deep'}])}"),
    ("v_instance.x", "3"),
    ("v_instance.y", "-3"),
    ("v_flagged.x", "'flagged'"),  # 3.8-3.10: flag bit 4 set, dict at tp_dictoffset
    ("POINTS[3].x", "3"),
    ("GLOBAL_NUMBER", "4242"),
    ("v_big_dict['k999']", "998001"),
    ("BIG_DICT['k10']", "100"),
    ("v_big_list[-1]", "99999"),
    ("v_big_list[54321]", "54321"),
    ("v_slotted.a", "'slot a'"),
    ("v_slotted_child.c", "'slot c'"),
    ("v_slotted_child.a", "'slot a'"),  # a slot of the class it derives from
    ("v_slotted_child.b", Exception("has no attribute 'b'")),  # declared, never set
    ("v_dict[2]", "[3]"),
    ("number", "2"),
    # refused (CommandError): its message holds the text
    ("nosuch", Exception("no local or global 'nosuch'")),
    ("later", Exception("local 'later' is unbound")),
    ("v_instance.nope", Exception("has no attribute 'nope'")),
    ("v_big_list[100000]", Exception("index 100000 out of range")),
    ("v_dict['missing']", Exception("has no key 'missing'")),
    ("v_int[0]", Exception("cannot be subscripted")),
])
def test_py_print(scenario, pyframes, expr, want):
    """py-print EXPR in the leaf frame of values-a: locals, then globals,
    attributes of a split-table instance and of slots, items and keys."""
    with pyframes.attach(scenario.target.pid) as t:
        frame = _leaf_frame(scenario, t, scenario.tids["values-a"])
        if not isinstance(want, Exception):
            assert values.print_lines(t, frame, expr) == ["%s = %s" % (expr, want)]
            return
        with pytest.raises(CommandError) as e:
            values.print_lines(t, frame, expr)
    assert str(want) in str(e.value)


def test_py_locals(scenario, pyframes):
    tid = scenario.tids["values-b"]
    with pyframes.attach(scenario.target.pid) as t:
        coro = _thread(scenario, t, tid).frames[1]
        lines = values.locals_lines(t, coro)
    want = scenario.oracle["threads"][str(tid)][1]["locals"]
    assert lines == ["%s = %s" % (name, expected_text(spec)) for name, spec in want.items()]


# ---- live: the command line and the debuggers --------------------------------------


def run_cli(env, *args):
    return subprocess.run([sys.executable, "-m", "pyframes"] + [str(a) for a in args],
                          capture_output=True, timeout=CLI_TIMEOUT, env=env,
                          stdin=subprocess.DEVNULL)


def test_cli_json(scenario, cli_env):
    res = run_cli(cli_env, "dump", scenario.target.pid, "--locals", "--json")
    assert res.returncode == 0, res.stderr.decode()
    doc = json.loads(res.stdout)
    problems = _document_mismatches(scenario, doc)
    assert not problems, "\n".join(problems)
    frames = _json_frames(doc, scenario.tids["values-a"], scenario.target.idents)
    for row in frames[0]["locals"]:
        assert set(row) == {"name", "kind", "type", "value", "address", "truncated"}
        assert (row["address"] is None) == (row["value"] is None)
    assert all(f["locals_error"] is None
               for f in frames)


def test_cli_text(scenario, cli_env):
    tid = scenario.tids["values-b"]
    # (3.8 to 3.10's thread states keep no native id: the thread by its ident)
    res = run_cli(cli_env, "dump", scenario.target.pid, "--locals", "--thread",
                  scenario.target.idents[tid] if scenario.interp.minor in conftest.HEAP_VERSIONS
                  else tid,
                  "--no-source", "--max-items", "2", "--max-string", "4")
    out = res.stdout.decode("utf-8")
    assert res.returncode == 0, res.stderr.decode()
    assert "      v_big_list = [0, 1, ...<99,998 more items>]\n" in out
    assert "      v_big_str = '0123'...<2,097,148 more chars>\n" in out
    assert "      later = <unbound>\n" in out
    assert "      v_controls = 'tab\\t'...<" in out  # escaped as repr() does
    assert "\x1b" not in out and "\x85" not in out
    # each frame's variables under it, arguments first
    lines = out.splitlines()
    leaf = next(i for i, line in enumerate(lines) if line.endswith(", in leaf"))
    assert lines[leaf + 1:leaf + 5] == [
        "      number = 4", "      text = 'from'...<12 more chars>", "      flag = True",
        "      rest = ({'valu'...<1 more char>: 4, 'shar'...<2 more chars>: [2, 'gen']}, 2.5)"]
    coro = next(i for i, line in enumerate(lines) if line.endswith("in coro_body [coroutine]"))
    assert lines[coro + 1] == "      value = 4"


DRIVERS = drivers.selected()


def _debuggers_read(scenario):
    """The debugger front ends' tests run on the interpreters their
    drivers know: 3.11/3.12 values are read here through the library and
    the command line, beside CPython's own py-locals."""
    if scenario.interp.kind == "older":
        pytest.skip("the gdb and lldb drivers do not run CPython %s targets"
                    % scenario.interp.minor)


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_debugger_locals(scenario, driver):
    _debuggers_read(scenario)
    version = scenario.interp.name
    driver.require(version)
    cmd = driver.command
    tid = scenario.tids["values-a"]
    s = driver.run([
        ("json", "%s --all --locals --json" % cmd),
        ("text", "%s --thread %d --locals --no-source --max-items 2" % (cmd, tid)),
        ("debugger", "%s --thread %d --locals --json --reader debugger" % (cmd, tid)),
        ("native", "%s --locals --native" % cmd),
    ], pid=scenario.target.pid)
    problems = _document_mismatches(scenario, s.json("json"))
    problems += mismatches(scenario.oracle, tid,
                           _json_frames(s.json("debugger"), tid, scenario.target.idents))
    assert not problems, "\n".join(problems) + "\n" + s.describe("json")
    assert "      v_big_list = [0, 1, ...<99,998 more items>]" in s["text"], s.describe("text")
    assert "--locals shows the variables" in s["native"], s.describe("native")


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_debugger_py_locals_and_py_print(scenario, driver):
    """pyf-locals / pyf-print (also named py-locals / py-print) on the
    selected Python frame of the
    selected thread, moved with pyf-up and pyf-down: each frame's locals
    equal the target's repr() of them, py-print reads through locals and
    globals, a refusal keeps the session."""
    _debuggers_read(scenario)
    driver.require(scenario.interp.name)
    b, a = scenario.tids["values-b"], scenario.tids["values-a"]
    s = driver.run([
        ("select_b", driver.select(b)),
        ("locals0", "pyf-locals"),
        ("up", "pyf-up"),
        ("locals1", "pyf-locals"),
        ("select_a", driver.select(a)),
        ("print", "pyf-print v_nested['a'][1]['b'][0]"),
        ("global", "pyf-print GLOBAL_NUMBER"),
        ("refused", "pyf-print nosuch"),
        ("limits", "pyf-locals --max-items 2"),
        ("after", driver.echo(4)[0]),
    ], pid=scenario.target.pid)
    frames = scenario.oracle["threads"]
    for name, index in (("locals0", 0), ("locals1", 1)):
        want = ["%s = %s" % (n, expected_text(spec))
                for n, spec in frames[str(b)][index]["locals"].items()]
        # (the target's locals() has no unbound variable)
        got = [line for line in s[name].splitlines()
               if " = " in line and not line.endswith(" = <unbound>")]
        assert sorted(got) == sorted(want), s.describe(name)  # (the order: test_py_locals)
    assert "v_nested['a'][1]['b'][0] = 2" in s["print"], s.describe("print")
    assert "GLOBAL_NUMBER = 4242" in s["global"], s.describe("global")
    assert "no local or global 'nosuch'" in s["refused"], s.describe("refused")
    assert "v_big_list = [0, 1, ...<99,998 more items>]" in s["limits"], s.describe("limits")
    assert drivers.matches(driver.echo(4)[1], s["after"]), s.describe("after")


# ---- the command layer over a fake target ------------------------------------------


class FakeTarget(object):
    """snapshot() and frame_locals() over objects of this process."""

    python = model.PythonInfo(version="3.14.0", hexversion=0x030E00F0, major=3, minor=14,
                              micro=0)
    pid = None  # no process: the main tag is the snapshot's (stack_command.main_tagged)

    def __init__(self):
        self.calls = []
        self.frames = {
            0x100: FrameValuesOfObjects([("a", "arg", 1), ("s", "arg", "x" * 300),
                                         ("later", "local", None), ("lst", "cell", [1, [2]])]),
            0x200: None,  # pyf_frame_locals fails
        }

    def snapshot(self, **kw):
        frames = (model.Frame("f", "/x.py", 3, frame_addr=0x100),
                  model.Frame("<module>", "/x.py", 9, frame_addr=0x200))
        thread = model.Thread(thread_id=1, native_thread_id=11, frames=frames)
        return model.Snapshot(pid=5, python=self.python,
                              interpreters=(model.Interpreter(0, threads=(thread,)),))

    def frame_locals(self, addr, **limits):
        self.calls.append((addr, limits))
        fv = self.frames[addr]
        if fv is None:
            raise error_from_code(PYF_ECORRUPT, "frame 0x200 runs no code object")
        return fv.read(**limits)


class FrameValuesOfObjects(object):
    def __init__(self, rows):
        self.rows = rows

    def read(self, max_string=None, max_items=None, max_depth=None, **_):
        kw = dict(max_string=max_string or 200, max_items=max_items or 100,
                  max_depth=max_depth or 6)
        return model.FrameValues(locals=tuple(
            model.Local(name, kind, value=None if obj is None else tree(obj, **kw))
            for name, kind, obj in self.rows))


def _dump(*args):
    options = cli.build_parser().parse_args(["dump", "5"] + list(args))
    target = FakeTarget()
    return stack_command.run(target, options, stack_command.Front()), target


def test_command_text_with_locals():
    text, target = _dump("--locals", "--no-source", "--max-string", "3", "--max-items", "1")
    lines = text.splitlines()
    assert lines[2:-1] == [
        '  File "/x.py", line 3, in f',
        "      a = 1",
        "      s = 'xxx'...<297 more chars>",
        "      later = <unbound>",
        "      lst = [1, ...<1 more item>]",
        '  File "/x.py", line 9, in <module>',
    ]
    assert re.fullmatch(r"      <locals unreadable: .*runs no code object.*>", lines[-1])
    assert target.calls[0] == (0x100, {"max_string": 3, "max_items": 1})


def test_command_json_with_locals():
    text, target = _dump("--locals", "--json", "--max-value-depth", "1")
    frames = json.loads(text)["interpreters"][0]["threads"][0]["frames"]
    assert frames[0]["locals_error"] is None
    rows = {row["name"]: row for row in frames[0]["locals"]}
    assert rows["lst"] == {"name": "lst", "kind": "cell", "type": "list",
                           "value": "[1, [...<too deep: 1 item>]]",
                           "address": rows["lst"]["address"], "truncated": True}
    assert rows["later"] == {"name": "later", "kind": "local", "type": None, "value": None,
                             "address": None, "truncated": False}
    assert rows["s"]["truncated"] and not rows["a"]["truncated"]
    assert frames[1]["locals"] == [] and "runs no code object" in frames[1]["locals_error"]
    assert target.calls[0] == (0x100, {"max_depth": 1})


def test_command_without_locals_reads_no_values():
    text, target = _dump("--json")
    assert "locals" not in text and target.calls == []
    text, target = _dump("--no-source")
    assert " = " not in text and target.calls == []


def test_locals_refuses_collapsed():
    with pytest.raises(CommandError):
        _dump("--locals", "--collapsed")


def test_value_options_everywhere():
    """The same options in the debuggers' parser, their help naming the
    library's defaults."""
    from pyframes import options
    parser = options.build_parser("py-bt-fast")
    ns = options.parse_arguments(parser, "--locals --max-string 7 --max-items 0x10 "
                                         "--max-value-depth 2 --max-objects 9 --max-bytes 100")
    assert options.value_limits(ns) == {"max_string": 7, "max_items": 16, "max_depth": 2,
                                        "max_objects": 9, "max_bytes": 100, "attrs": False}
    assert ns.locals and ns.max_depth is None
    helptext = parser.format_help()
    for option, key, _ in options.VALUE_LIMITS:
        assert option in helptext
    assert "(default 10,000)" in helptext and "(default 4,194,304)" in helptext
    assert "--locals" in options.describe("py-bt-fast", "gdb")
    with pytest.raises(Exception):
        options.parse_arguments(parser, "--max-items 0")
    assert re.search(r"--max-value-depth", " ".join(options.completions("--max-v")[1]))


_CORE_DRIVERS = [d for d in DRIVERS if d.name != "lldb22"]  # lldb 21 reads cores as 22 does


@pytest.mark.parametrize("driver", _CORE_DRIVERS, ids=[d.name for d in _CORE_DRIVERS])
def test_core_locals(scenario, driver):
    """gdb's ELF core of the scenario (one per interpreter), read by each
    debugger with --locals: the same values as the live process (the
    debugger's reads)."""
    _debuggers_read(scenario)
    driver.require(scenario.interp.name)
    if not du.gdb_usable():
        pytest.skip("no gdb to write an ELF core")
    core = getattr(scenario, "core", None)
    if core is None:
        core = os.path.join(scenario.target.workdir, "values.core")
        du.run_gdb(["gcore " + core], pid=scenario.target.pid, plugin=False)
        assert os.path.exists(core), "gdb wrote no core"
        scenario.core = core
    s = driver.run([("json", "%s --all --locals --json" % driver.command)],
                   executable=scenario.target.view["executable"], core=core)
    problems = _document_mismatches(scenario, s.json("json"))
    assert not problems, "\n".join(problems) + "\n" + s.describe("json")


def test_values_parser_of_py_locals_and_py_print():
    """The parser a py-locals or py-print command will use: the same limits,
    EXPR as the rest of the line, as typed."""
    from pyframes import options
    from pyframes.errors import UsageError
    printer = options.build_values_parser("py-print", expression=True)
    ns = options.parse_values_command(printer, " --max-items 3 --max-string=9 d['a b'][0].x ")
    assert options.value_limits(ns)["max_items"] == 3
    assert options.value_limits(ns)["max_string"] == 9
    assert ns.expression == "d['a b'][0].x"
    assert values.parse_expression(ns.expression) == ("d", [("key", "a b"), ("index", 0),
                                                            ("attr", "x")])
    ns = options.parse_values_command(options.build_values_parser("py-locals"), "")
    assert options.value_limits(ns) == dict(dict.fromkeys(values.LIMITS), attrs=False)
    for bad in ("", "--max-items 3", "--max-items x y", "--bogus 1 y"):
        with pytest.raises(UsageError):
            options.parse_values_command(printer, bad)


# ---- a second oracle: CPython's own py-locals ------------------------------------

# CPython's py-locals (python3.X-gdb.py, auto-loaded with the -dbg package;
# cpython-py-locals beside the plugin) renders what it recognizes like
# repr() and anything else as
# "<type at remote 0x...>" (proxyval), and cuts at 1,024 characters
_CPYTHON_OPAQUE = re.compile(r"at remote 0x|\(truncated\)")
_LOCAL_LINE = re.compile(r"^(\w+) = (.*)$", re.M)
GDB = drivers.Gdb()
_PY_LOCALS_LEVELS = 10
_CPYTHON_EXC_ARGS = re.compile(r"^([A-Za-z_]\w*\(.*),\)$")
_CPYTHON_SEEN = re.compile(r"\[\.\.\.\]|\{\.\.\.\}")
_PYF_MOVED = re.compile(r'^#\d+ File ".*", line \d+, in (.+)$', re.M)


def _cpython_sections(text):
    """[(co_name, {name: text})] of CPython's py-locals: one "Locals for
    NAME" section per frame, from the frame its eval loop runs out to the
    loop's entry."""
    parts = re.split(r"(?m)^Locals for (.+)$", text)
    return [(parts[i].strip(), dict(_LOCAL_LINE.findall(parts[i + 1])))
            for i in range(1, len(parts) - 1, 2)]


def _compare_py_locals(thread, sections, ours, context):
    """CPython's py-locals sections [(co_name, {name: text})] against our
    frames of the same thread (the same form, innermost first): the
    sections are a run of our frames, each binding names ours bind too,
    and every local CPython's helper renders as repr() would reads the
    same.  How many locals were compared."""
    compared = 0
    names = [n for n, _ in sections]
    start = [i for i in range(len(ours)) if [n for n, _ in ours[i:i + len(names)]] == names]
    assert start, "%s: CPython's py-locals read frames %s, pyframes' frames are %s\n%s" % (
        thread, names, [n for n, _ in ours], context)
    for (frame, theirs), (_, mine) in zip(sections, ours[start[0]:]):
        # (py-locals reads co_nlocals slots: no cell or free variable)
        assert set(theirs) <= set(mine), "%s, %s: py-locals binds %s, pyframes %s" % (
            thread, frame, sorted(theirs), sorted(mine))
        for local, text in sorted(theirs.items()):
            if _CPYTHON_OPAQUE.search(text) or "more items>" in mine[local] or \
                    "more chars>" in mine[local]:
                continue
            # a str never made ready: the helper reads its wchar_t buffer,
            # which pyframes does not decode (values_scenario.UNREADY)
            if local == "v_unready_str":
                continue
            # 3.8 to 3.10's helper writes some characters raw that repr()
            # escapes (U+0085): such a text is not repr()'s
            if not text.isprintable():
                continue
            # CPython's helper writes an exception's args as a tuple
            # (KeyError('k',)), and marks any object met twice as [...] /
            # {...}, where repr() marks only recursion
            text = _CPYTHON_EXC_ARGS.sub(r"\1)", text)
            if _CPYTHON_SEEN.search(text) and not _CPYTHON_SEEN.search(mine[local]):
                continue
            assert mine[local] == text, "%s, %s: %s = %s in pyframes, %s in py-locals" % (
                thread, frame, local, mine[local], text)
            compared += 1
    return compared


def _gdb_helper(interp):
    """CPython's own gdb helper of an older interpreter (python3.X-gdb.py,
    which pyenv's builds install beside the interpreter), else None."""
    prefix = os.path.dirname(os.path.dirname(os.path.realpath(interp.path)))
    path = os.path.join(prefix, "bin", "python%s-gdb.py" % interp.minor)
    return path if os.path.isfile(path) else None


# Each thread's py-locals from its innermost eval loop: CPython's helper
# looks for the loop from the selected frame and, where it waits in C
# code, often misses it; the loop's frame is selected first.
_PY_LOCALS_EACH_THREAD = """
import gdb
for thread in gdb.selected_inferior().threads():
    thread.switch()
    frame = gdb.newest_frame()
    while frame is not None and frame.name() != "_PyEval_EvalFrameDefault":
        frame = frame.older()
    print("@@ LWP %d" % thread.ptid[1])
    if frame is not None:
        frame.select()
        gdb.execute("py-locals")
"""

# 3.8 to 3.10: an eval loop per Python frame, and py-locals prints the
# selected one's only, without a header: each loop's frame selected in
# turn, its "Locals for NAME" header (3.11+'s) printed from the helper's
# own reading of the frame (its Frame class: co_name of the frame object)
_PY_LOCALS_EACH_FRAME = """
import gdb
for thread in gdb.selected_inferior().threads():
    thread.switch()
    print("@@ LWP %d" % thread.ptid[1])
    frame = gdb.newest_frame()
    while frame is not None:
        if frame.name() == "_PyEval_EvalFrameDefault":
            frame.select()
            pyop = Frame(frame).get_pyop()
            if pyop is not None and not pyop.is_optimized_out():
                print("Locals for %s" % pyop.co_name.proxyval(set()))
                gdb.execute("py-locals")
        frame = frame.older()
"""


def test_library_locals_equal_cpython_py_locals(scenario, pyframes, tmp_path):
    """3.8 to 3.12 (pyenv's builds: DWARF, and CPython's gdb helper beside
    them): CPython's own py-locals on every thread, in gdb (the eval loop's
    frames read through DWARF), against what the library reads of the same
    frames by PID once gdb has let go: a second oracle of the values, not
    the target's report."""
    if scenario.interp.kind != "older":
        pytest.skip("the releases' py-locals: test_gdb_locals_equal_cpython_py_locals")
    helper = _gdb_helper(scenario.interp)
    if helper is None or not du.gdb_usable():
        (pytest.fail if du.in_sandbox() else pytest.skip)(
            "needs gdb and CPython's gdb helper (%s)" % (helper or "python3.X-gdb.py"))
    script = tmp_path / "py_locals_each_thread.py"
    script.write_text(_PY_LOCALS_EACH_FRAME if scenario.interp.minor in conftest.HEAP_VERSIONS
                      else _PY_LOCALS_EACH_THREAD)
    res = subprocess.run(
        ["gdb", "-nx", "-batch", "-iex", "set auto-load safe-path /", "-p",
         str(scenario.target.pid), "-ex", "source " + helper, "-x", str(script)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=CLI_TIMEOUT,
        env=du.clean_env())
    out = res.stdout.decode("utf-8", "replace")
    parts = re.split(r"(?m)^@@ LWP (\d+)$", out)
    by_tid = {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
    compared = 0
    with pyframes.attach(scenario.target.pid) as t:
        for name in THREADS:
            tid = scenario.tids[name]
            sections = _cpython_sections(by_tid.get(str(tid), ""))
            assert sections, "%s: py-locals printed nothing for it:\n%s" % (name, out[-3000:])
            ours = [(du.co_name(f["function"]),
                     {row["name"]: row["value"] for row in f["locals"] if row["value"] is not None})
                    for f in _library_frames(scenario, t, tid)]
            compared += _compare_py_locals(name, sections, ours, out[-3000:])
    assert compared >= 20, "only %d locals compared" % compared


def test_gdb_locals_equal_cpython_py_locals(scenario):
    """In one gdb session, on each thread: CPython's py-locals (as the
    plugin names it beside its own, cpython-py-locals; it reads
    frames through the interpreter's DWARF, from the eval loop's `frame`
    variable out to the loop's entry, a section per frame) against
    pyf-locals of the thread's frames (pyf-up between them).  CPython's
    sections must be a run of our frames (same names, in order), each
    binding names pyf-locals binds too, and every local CPython's helper renders as
    repr() would (ints, floats, str of every kind, bytes, containers of
    them) must read the same.  An oracle that is not the target's report."""
    if scenario.interp.kind != "release":
        pytest.skip("CPython's gdb helper comes with the sandbox's -dbg packages")
    du.require("gdb", scenario.interp.minor)
    named = []
    for name in THREADS:
        named += [("select_" + name, GDB.select(scenario.tids[name])),
                  ("cpython_" + name, "cpython-py-locals")]
        for level in range(_PY_LOCALS_LEVELS):
            if level:
                named.append(("up_%s_%d" % (name, level), "pyf-up"))
            named.append(("ours_%s_%d" % (name, level), "pyf-locals"))
    s = GDB.run(named, pid=scenario.target.pid, debuginfo=True)  # py-locals needs DWARF
    compared, unreadable = 0, []
    for name in THREADS:
        sections = _cpython_sections(s["cpython_" + name])
        if not sections:
            unreadable.append("%s: py-locals printed %r\n" % (name, s["cpython_" + name][:1500]))
            continue
        ours = []
        for level in range(_PY_LOCALS_LEVELS):
            if level:
                moved = _PYF_MOVED.search(s["up_%s_%d" % (name, level)])
                if not moved:
                    break  # the outermost frame
                frame = moved.group(1).split(" [")[0]  # (the [coroutine] tag)
            else:
                frame = chains(scenario.interp.minor)[name][0]
            ours.append((du.co_name(frame), dict(
                (k, v) for k, v in _LOCAL_LINE.findall(
                    re.sub(r"(?m)^\s+", "", s["ours_%s_%d" % (name, level)]))
                if v != "<unbound>")))
        compared += _compare_py_locals(name, sections, ours, s.describe("cpython_" + name))
    if len(unreadable) == len(THREADS) and scenario.interp.minor == "3.14" and all(
            "Unable to read information on python frame" in u for u in unreadable):
        # Debian's 3.14 leaves the eval loop's `frame` variable without a
        # location where these threads wait, and py-locals (unlike py-bt)
        # has no fallback to the thread state: no oracle here
        pytest.skip("CPython's py-locals cannot read these frames on 3.14: " + unreadable[0])
    # elsewhere CPython's helper reads at least one of the two threads
    assert len(unreadable) < len(THREADS), "".join(unreadable)
    assert compared >= 20, "only %d locals compared" % compared


@pytest.mark.parametrize("debugger", ["gdb", "lldb"])
def test_remote_locals(scenario, debugger, tmp_path):
    """Through gdbserver and lldb-server (loopback; the debugger's reads over
    the remote protocol, never the PID reader): every local of both threads
    equals the target's repr(), as live and from cores."""
    _debuggers_read(scenario)
    from test_remote import _lldb_server, _require_gdbserver, _run_lldb_remote
    du.require(debugger, scenario.interp.name)
    command = "--all --locals --json"
    if debugger == "gdb":
        _require_gdbserver()
        s = du.run_gdb(["py-bt-fast " + command], executable=scenario.target.view["executable"],
                       remote=scenario.target.pid)
        doc, context = s.json(0), s.describe(0)
    else:
        _lldb_server()
        s = _run_lldb_remote(scenario.target, ["pystack " + command], tmp_path)
        doc, context = s.json(1), s.describe(1)
    problems = _document_mismatches(scenario, doc)
    assert not problems, "\n".join(problems) + "\n" + context


@pytest.mark.parametrize("version", du.VERSIONS)
def test_lldb_minidump_locals(version, tmp_path):
    """lldb's own core of the scenario (`process save-core --style full`: a
    minidump on Linux) read by lldb with --locals: every local of both
    threads equals the target's repr().  The target runs without address
    randomization, since what lldb's minidump writer leaves out depends on
    the layout (docs/debuggers.md, "Core files")."""
    du.require("lldb", version)
    core = str(tmp_path / "values.dmp")
    with LiveTarget(du.python_for(version), "values_scenario.py", str(tmp_path),
                    handshake="file", aslr=False) as target:
        with open(os.path.join(target.workdir, "values.json")) as f:
            oracle = json.load(f)
        tids = {name: target.tid_by_name()[name] for name in THREADS}
        saved = du.run_lldb(["process save-core --style full " + core], pid=target.pid,
                            plugin=False)
    assert os.path.exists(core), saved.describe(0)
    s = du.run_lldb(["pystack --all --locals --json"], executable=target.view["executable"],
                    core=core)
    doc = s.json(0)
    problems = []
    for name in THREADS:
        problems += mismatches(oracle, tids[name], _json_frames(doc, tids[name]))
    assert not problems, "\n".join(problems) + "\n" + s.describe(0)
