"""Instances of the program's own classes (issue 36's "opaque instances"):
``--attrs`` (``dump``, ``py-bt-fast``, ``pystack``, ``py-locals``,
``py-print``) shows an instance's attributes after its repr(), one level
down; ``py-print customer.__dict__`` and nested attributes
(``order.customer.name``), against live CPython 3.13/3.14/3.15 and 3.12,
the command line, gdb and lldb.

The target is targets/customer_desk.py, whose record (customers.json)
holds each frame's locals as the target sees them: repr() (an instance's
default one), and what vars() gives (or its __slots__), and the text of
each py-print expression (``customer.__dict__`` as repr(vars(customer))).
"""

import json
import re

import pytest

import conftest
import drivers
import test_locks as tlocks
from pyframes import options, values


@pytest.fixture(scope="module", params=conftest.release_params("representative"))
def desk(request, tmp_path_factory):
    for target in conftest.recorded_target(request.param, tmp_path_factory,
                                           "customer_desk.py", "customers.json"):
        own = [f[0] for f in target.threads[target.main_tid]]
        target.number = {r["function"]: own.index(r["function"])
                         for r in target.record["frames"]}
        yield target


def _with_attrs(spec):
    """The text --attrs shows of a recorded value: repr() and the
    attributes as vars() gives them; a list's instances each so."""
    def one(text, attrs):
        if not attrs:
            return text
        return "%s {%s}" % (text, ", ".join("%r: %s" % kv for kv in attrs.items()))
    if spec["items"] is not None:
        return "[%s]" % ", ".join(one(text, attrs) for text, attrs in spec["items"])
    return one(spec["repr"], spec["attrs"])


def _recorded(desk):
    """[(function, {name: spec})] innermost first."""
    return [(f["function"], f["locals"]) for f in desk.record["frames"]]


def test_cli_json(desk, cli_env):
    res = tlocks.run_cli(cli_env, "dump", desk.pid, "--locals", "--attrs", "--json",
                         "--thread", desk.main_tid)
    assert res.returncode == 0, res.stderr.decode()
    doc = json.loads(res.stdout)
    (thread,) = [t for i in doc["interpreters"] for t in i["threads"]]
    frames = {f["function"]: f for f in thread["frames"]}
    for function, want in _recorded(desk):
        got = {row["name"]: row for row in frames[function]["locals"]}
        assert set(got) == set(want), (function, got)
        for name, spec in want.items():
            row = got[name]
            # "value" stays repr()'s; "attributes" what the instance holds
            assert row["value"] == spec["repr"], (function, name, row)
            assert row["attributes"] == spec["attrs"], (function, name, row)


def test_cli_text(desk, cli_env):
    res = tlocks.run_cli(cli_env, "dump", desk.pid, "--locals", "--attrs", "--no-source",
                         "--thread", desk.main_tid)
    assert res.returncode == 0, res.stderr.decode()
    out = res.stdout.decode("utf-8")
    for function, want in _recorded(desk):
        block = out.split(", in %s\n" % function, 1)[1].split("  File ", 1)[0]
        got = dict(re.findall(r"^      (\w+) = (.*)$", block, re.M))
        assert got == {name: _with_attrs(spec) for name, spec in want.items()}, \
            (function, block)
    # without --attrs: repr() alone, as before
    res = tlocks.run_cli(cli_env, "dump", desk.pid, "--locals", "--no-source",
                         "--thread", desk.main_tid)
    plain = res.stdout.decode("utf-8")
    assert "      customer = %s\n" % _recorded(desk)[1][1]["customer"]["repr"] in plain, plain


def test_cli_note_when_the_process_runs(desk, cli_env):
    """--locals of a process that runs while it is read says once that its
    variables may be of different moments (text and JSON); stopped
    (SIGSTOP) it says nothing, and JSON says false."""
    from livetarget import frozen
    from pyframes.stack_command import RUNNING_NOTE
    args = ("dump", desk.pid, "--locals", "--thread", desk.main_tid)
    text = tlocks.run_cli(cli_env, *args).stdout.decode()
    assert text.count(RUNNING_NOTE) == 1 and text.endswith(RUNNING_NOTE + "\n"), text
    doc = json.loads(tlocks.run_cli(cli_env, *args + ("--json",)).stdout)
    assert doc["locals_while_running"] is True
    with frozen(desk.pid):
        text = tlocks.run_cli(cli_env, *args).stdout.decode()
        doc = json.loads(tlocks.run_cli(cli_env, *args + ("--json",)).stdout)
    assert RUNNING_NOTE not in text and doc["locals_while_running"] is False, text
    # without --locals: no note, no key
    text = tlocks.run_cli(cli_env, "dump", desk.pid).stdout.decode()
    doc = json.loads(tlocks.run_cli(cli_env, "dump", desk.pid, "--json").stdout)
    assert RUNNING_NOTE not in text and "locals_while_running" not in doc


DRIVERS = drivers.selected()


@pytest.mark.parametrize("driver", DRIVERS, ids=[d.name for d in DRIVERS])
def test_debugger_attrs_and_py_print(desk, driver):
    """py-bt-fast/pystack --locals --attrs, py-locals --attrs and py-print
    of attributes, nested ones and an instance's __dict__ in the frame of
    ``bill``; py-print --attrs of an instance."""
    version = desk.interp.name
    driver.require(version)
    bill = desk.number["bill"]
    _, bill_locals = _recorded(desk)[1]
    prints = desk.record["print"]
    named = [("bt", "%s --locals --attrs --no-source" % driver.command),
             ("up", "py-up %d" % bill), ("locals", "py-locals --attrs"),
             ("plain", "py-locals"), ("attrs", "py-print --attrs customer")]
    named += [("print %d" % i, "py-print %s" % expr) for i, expr in enumerate(prints)]
    s = driver.run(named, pid=desk.pid)
    got = dict(re.findall(r"^\s*(\w+) = (.*)$", s["locals"], re.M))
    assert got == {name: _with_attrs(spec) for name, spec in bill_locals.items()}, \
        s.describe("locals")
    got = dict(re.findall(r"^\s*(\w+) = (.*)$", s["plain"], re.M))
    assert got == {name: spec["repr"] for name, spec in bill_locals.items()}, \
        s.describe("plain")
    assert s["attrs"].strip() == "customer = %s" % _with_attrs(bill_locals["customer"]), \
        s.describe("attrs")
    for i, (expr, want) in enumerate(prints.items()):
        assert s["print %d" % i].strip() == "%s = %s" % (expr, want), s.describe("print %d" % i)
    # the debugger stopped the process: its variables are of one moment
    from pyframes.stack_command import RUNNING_NOTE
    assert RUNNING_NOTE not in s["bt"], s.describe("bt")
    for function, want in _recorded(desk):
        block = s["bt"].split(", in %s\n" % function, 1)[1].split("  File ", 1)[0]
        got = dict(re.findall(r"^\s+(\w+) = (.*)$", block, re.M))
        assert got == {name: _with_attrs(spec) for name, spec in want.items()}, \
            (function, s.describe("bt"))


# ---- without a target --------------------------------------------------------------


def test_attrs_is_one_option_everywhere():
    """--attrs is the same option of dump, py-bt-fast/pystack, py-locals and
    py-print (options.add_value_limits), a flag that takes no value: the
    expression after it is py-print's."""
    from pyframes import cli
    assert cli.build_parser().parse_args(["dump", "1", "--locals", "--attrs"]).attrs
    assert options.parse_arguments(options.build_parser("py-bt-fast"), "--attrs").attrs
    assert options.parse_values_command(options.build_values_parser("py-locals"),
                                        "--attrs").attrs
    ns = options.parse_values_command(options.build_values_parser("py-print", True),
                                      "--attrs --max-items 3 order.customer")
    assert ns.attrs and ns.max_items == 3 and ns.expression == "order.customer"
    assert options.value_limits(ns)["attrs"] is True


def test_render_attrs():
    """An instance read with its attributes: repr() then vars()'s text,
    cut as a dict is; without attrs (or none read) repr() alone; the
    attributes' own instances by repr() only (one level down)."""
    from pyframes import model
    name, city = (model.Value(kind="str", type_name="str", data=t.encode(), length=len(t))
                  for t in ("name", "London"))
    inner = model.Value(kind="other", type_name="m.Address", addr=0x20)
    obj = model.Value(kind="other", type_name="m.Customer", addr=0x10, length=3,
                      flags=model.PYF_VALUE_TRUNCATED,
                      children=(name, city, model.Value(kind="str", type_name="str",
                                                        data=b"home", length=4), inner))
    assert values.render(obj) == "<m.Customer object at 0x10>"
    assert values.render(obj, attrs=True) == (
        "<m.Customer object at 0x10> {'name': 'London', 'home': <m.Address object at 0x20>, "
        "...<1 more item>}")
    assert values.attributes_dict(obj) == {"name": "'London'",
                                           "home": "<m.Address object at 0x20>"}
    assert values.attributes_dict(inner) is None
