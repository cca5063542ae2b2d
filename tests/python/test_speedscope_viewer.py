"""``sample --speedscope`` against speedscope itself: the file written from a
live target (targets/modes.py gil: threads named by threading, a name four
threads share, a thread Python does not name) validates against the file
schema speedscope's package publishes (dist/release/file-format-schema.json),
and speedscope's own viewer, served on 127.0.0.1 and opened in headless
chromium with the file as its ``profileURL``, imports it and shows it: the
page's title becomes "<name> - speedscope" (set when it read the file), the
toolbar names the first of N profiles "(1/N)", one per thread, the list of
profiles labels each as the target names its threads, and no error shows.
(A file whose profiles have a type the viewer does not know still sets the
title, and shows the welcome page instead: the toolbar check catches it.)

The viewer is speedscope's npm package, fetched by ``sandbox.sh test`` with
the host's npm (tests/sandbox/speedscope.sh) and named by
PYFRAMES_SPEEDSCOPE; without it these tests skip, saying why."""

import functools
import html.parser
import http.server
import json
import os
import shutil
import threading
import types
import urllib.parse

import pytest

import conftest
from test_cli import run_cli
from test_flamegraph import chromium, run_chromium  # noqa: F401  (a fixture)
from test_sample_modes import Modes


@pytest.fixture(scope="module")
def viewer():
    path = os.environ.get("PYFRAMES_SPEEDSCOPE")
    if not path:
        pytest.skip("PYFRAMES_SPEEDSCOPE is not set: `sandbox.sh test` sets it when the "
                    "host's npm fetched speedscope's package (tests/sandbox/speedscope.sh)")
    if not os.path.isfile(os.path.join(path, "index.html")):
        pytest.fail("PYFRAMES_SPEEDSCOPE=%s holds no index.html" % path)
    return path


@pytest.fixture(scope="module")
def sampled(tmp_path_factory, cli_env):
    """(the speedscope file, {native id: the label the target's thread
    should get}, the target's pid): 0.5 s of every thread of modes.py gil
    under python3.15."""
    tmp = tmp_path_factory.mktemp("speedscope")
    target = Modes(types.SimpleNamespace(path=conftest.release_python("3.15")), "gil")
    try:
        out = tmp / "profile.json"
        res = run_cli(cli_env, "sample", "--all", "--duration", "0.5", "--rate", "200",
                      "--speedscope", out, target.pid)
        assert res.returncode == 0, res.stderr.decode()
        return out, dict(target.labels), target.pid
    finally:
        target.close()


# ---- the published schema ------------------------------------------------------


def _check(schema, value, root, where="$"):
    """The errors of value against a draft-07 schema, for the keywords
    speedscope's schema uses ($ref, anyOf, const, enum, items, properties,
    required, type); a keyword it does not use fails the check."""
    known = {"$ref", "$schema", "anyOf", "const", "enum", "items", "properties", "required",
             "type", "title", "definitions"}
    unknown = set(schema) - known
    if unknown:
        return ["%s: schema keyword(s) this check does not know: %s" % (where, sorted(unknown))]
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/definitions/"), ref
        return _check(root["definitions"][ref[len("#/definitions/"):]], value, root, where)
    errors = []
    if "anyOf" in schema:
        if all(_check(s, value, root, where) for s in schema["anyOf"]):
            errors.append("%s: matches none of anyOf" % where)
    if "type" in schema:
        kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        ok = {
            "string": lambda v: isinstance(v, str),
            "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "object": lambda v: isinstance(v, dict),
            "array": lambda v: isinstance(v, list),
            "boolean": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
        }
        if not any(ok[k](value) for k in kinds):
            return errors + ["%s: %r is not %s" % (where, value, "/".join(kinds))]
    if "const" in schema and value != schema["const"]:
        errors.append("%s: %r is not %r" % (where, value, schema["const"]))
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r not in %r" % (where, value, schema["enum"]))
    if isinstance(value, dict):
        for name in schema.get("required", ()):
            if name not in value:
                errors.append("%s: %s is required" % (where, name))
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                errors += _check(sub, value[name], root, "%s.%s" % (where, name))
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += _check(schema["items"], item, root, "%s[%d]" % (where, i))
            if len(errors) > 20:
                break
    return errors


def test_the_file_validates_against_speedscopes_schema(viewer, sampled):
    path, labels, _ = sampled
    schema = json.load(open(os.path.join(viewer, "file-format-schema.json")))
    doc = json.load(open(path))
    assert _check(schema, doc, schema) == []
    # and the check is one: a required field dropped, a wrong type, a
    # constant changed each give an error
    broken = dict(doc, profiles=[dict(doc["profiles"][0], type="evented")])
    assert _check(schema, broken, schema)
    assert _check(schema, dict(doc, shared={"frames": [{"name": 7}]}), schema)
    assert _check(schema, {k: v for k, v in doc.items() if k != "profiles"}, schema)
    assert sorted(p["name"] for p in doc["profiles"]) == sorted(labels.values())


# ---- the viewer ----------------------------------------------------------------


class _Text(html.parser.HTMLParser):
    """The title and the text of every element of a page."""

    def __init__(self):
        super().__init__()
        self.title, self.texts, self._in_title = None, [], False

    def handle_starttag(self, tag, attrs):
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title = (self.title or "") + data
        elif data.strip():
            self.texts.append(data.strip())


def _served(directory):
    """An HTTP server on 127.0.0.1 (a free port) serving directory, in a
    thread; shut down by the caller."""
    handler = functools.partial(_QuietHandler, directory=directory)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_speedscopes_viewer_imports_it(viewer, sampled, chromium, tmp_path):  # noqa: F811
    path, labels, pid = sampled
    site = tmp_path / "site"
    shutil.copytree(viewer, site)
    shutil.copy(path, site / "profile.json")
    server = _served(str(site))
    try:
        base = "http://127.0.0.1:%d/" % server.server_address[1]
        url = base + "index.html#profileURL=" + urllib.parse.quote(base + "profile.json",
                                                                   safe="")
        dom = run_chromium(chromium, tmp_path, "--disable-background-networking",
                           "--disable-component-update", "--disable-sync",
                           "--virtual-time-budget=15000", "--dump-dom", url)
    finally:
        server.shutdown()
        server.server_close()
    page = _Text()
    page.feed(dom)
    name = json.load(open(path))["name"]
    # the profile's title: the process and its command line (modes.py's)
    assert name.startswith("pid %d (" % pid) and "modes.py" in name, name
    assert page.title == "%s - speedscope" % name, (page.title, dom[-3000:])
    assert "Something went wrong." not in page.texts, dom[-3000:]
    # the toolbar names the active profile, "(1/N)" beside it; the list of
    # profiles names each thread as the target does
    count = len(labels)
    assert "(1/%d)" % count in page.texts, page.texts[:40]
    for label in labels.values():
        assert label in page.texts, (label, page.texts[:60])
