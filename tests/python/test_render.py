"""Unit tests of pyframes.render and pyframes.model on hand-built snapshots
(no shared library, no process)."""

import json
import os
import sys

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PKG = os.path.join(_REPO, "native", "python")
if _PKG not in sys.path:
    sys.path.insert(0, _PKG)

from pyframes import render  # noqa: E402
from pyframes.model import (  # noqa: E402
    FRAME_ASYNC_GENERATOR,
    FRAME_COROUTINE,
    FRAME_ENTRY_FROM_C,
    FRAME_GENERATOR,
    Frame,
    FrameRecord,
    Interpreter,
    PythonInfo,
    Snapshot,
    Thread,
    version_string,
)

PY = PythonInfo(version="3.15.2", hexversion=0x030F02F0, major=3, minor=15,
                micro=2, free_threaded=False, runtime_addr=0x7F0000001000)


def frame(function, filename="/app/x.py", line=1, **kw):
    kw.setdefault("end_line", line)
    kw.setdefault("column", 4)
    kw.setdefault("end_column", 10)
    return Frame(function=function, filename=filename, line=line, **kw)


def make_snapshot():
    main = Thread(
        thread_id=0x7F1200001000, native_thread_id=12345, interpreter_id=0,
        complete=True, holds_gil=True, is_main=True,
        frames=[frame("inner", line=3), frame("Outer.method", line=7),
                frame("<module>", line=10, flags=FRAME_ENTRY_FROM_C)],
        tstate_addr=0x5000)
    worker = Thread(
        thread_id=0x7F1200002000, native_thread_id=12346, interpreter_id=0,
        complete=False, holds_gil=False, is_main=False,
        frames=[frame("gen", "/app/g.py", 2, flags=FRAME_GENERATOR)],
        error="cycle in frame chain at 0x1234", error_code=-10)
    idle = Thread(thread_id=None, native_thread_id=None, interpreter_id=1,
                  complete=True, holds_gil=None, frames=[])
    return Snapshot(pid=4242, python=PY, interpreters=[
        Interpreter(id=0, addr=0x100, threads=[main, worker]),
        Interpreter(id=1, addr=0x200, threads=[idle]),
    ])


SOURCES = {
    ("/app/x.py", 3): "        return compute()   \n",
    ("/app/x.py", 7): "    inner()",
    ("/app/x.py", 10): "Outer().method()",
    ("/app/g.py", 2): "    yield 1",
}


def fake_source(filename, line):
    return SOURCES.get((filename, line))


# ---- model -----------------------------------------------------------------


def test_version_string_final_and_prereleases():
    assert version_string(3, 15, 2, 0xF, 0) == "3.15.2"
    assert version_string(3, 15, 0, 0xA, 1) == "3.15.0a1"
    assert version_string(3, 14, 0, 0xB, 4) == "3.14.0b4"
    assert version_string(3, 13, 0, 0xC, 1) == "3.13.0rc1"


def test_snapshot_threads_iterates_all_interpreters_in_order():
    snap = make_snapshot()
    ids = [t.native_thread_id for t in snap.threads()]
    assert ids == [12345, 12346, None]


def test_frame_flag_properties():
    f = Frame("f", "x.py", flags=FRAME_GENERATOR | FRAME_ENTRY_FROM_C)
    assert f.is_generator and f.entry_from_c
    assert not (f.name_truncated or f.no_location or f.code_unreadable)
    assert Frame("g", "y.py", flags=0x07).name_truncated
    assert Frame("g", "y.py", flags=0x07).no_location
    assert Frame("g", "y.py", flags=0x07).code_unreadable
    assert Frame("g", "y.py").line is None


def test_frame_owner_names_the_generator_object():
    def owner(flags):
        return Frame("f", "x.py", flags=flags).owner
    assert owner(0) is None
    assert owner(FRAME_ENTRY_FROM_C) is None
    assert owner(FRAME_GENERATOR) == "generator"
    assert owner(FRAME_GENERATOR | FRAME_COROUTINE) == "coroutine"
    assert owner(FRAME_GENERATOR | FRAME_ASYNC_GENERATOR | FRAME_ENTRY_FROM_C) \
        == "async_generator"
    # the kind bits mean nothing without GENERATOR (the library never sets them so)
    assert owner(FRAME_COROUTINE) is None
    f = Frame("f", "x.py", flags=FRAME_GENERATOR | FRAME_COROUTINE)
    assert f.is_generator


def test_model_objects_are_frozen():
    with pytest.raises(Exception):
        PY.version = "3.14.0"
    with pytest.raises(Exception):
        frame("f").line = 3


# ---- text ------------------------------------------------------------------


def test_text_full_output():
    lines = list(render.format_text(make_snapshot(), source=fake_source))
    assert lines == [
        "Thread 0x7f1200001000 (native 12345, interpreter 0, main, "
        "holds the GIL):",
        "Traceback (most recent call first):",
        '  File "/app/x.py", line 3, in inner',
        "    return compute()",
        '  File "/app/x.py", line 7, in Outer.method',
        "    inner()",
        '  File "/app/x.py", line 10, in <module>',
        "    Outer().method()",
        "",
        "Thread 0x7f1200002000 (native 12346, interpreter 0, does not hold "
        "the GIL, incomplete: cycle in frame chain at 0x1234):",
        "Traceback (most recent call first):",
        '  File "/app/g.py", line 2, in gen [generator]',
        "    yield 1",
        "",
        "Thread (interpreter 1):",
        "  (no Python frames)",
    ]


def test_text_tags_each_owner():
    frames = [frame("agen", line=3, flags=FRAME_GENERATOR | FRAME_ASYNC_GENERATOR),
              frame("coro", line=2, flags=FRAME_GENERATOR | FRAME_COROUTINE),
              frame("gen", line=1, flags=FRAME_GENERATOR),
              frame("plain", line=1, flags=FRAME_ENTRY_FROM_C)]
    lines = list(render.format_thread(Thread(thread_id=1, native_thread_id=2, frames=frames), show_source=False))
    assert lines[2:] == [
        '  File "/app/x.py", line 3, in agen [async generator]',
        '  File "/app/x.py", line 2, in coro [coroutine]',
        '  File "/app/x.py", line 1, in gen [generator]',
        '  File "/app/x.py", line 1, in plain',
    ]


def test_header_leaves_out_unknowns():
    t = Thread(thread_id=None, native_thread_id=None, interpreter_id=None)
    assert render.thread_header(t) == "Thread:"
    t = Thread(thread_id=0x10, native_thread_id=7, interpreter_id=None,
               holds_gil=None)
    assert render.thread_header(t) == "Thread 0x10 (native 7):"
    t = Thread(thread_id=0x10, native_thread_id=7, complete=False)
    assert "incomplete: frame chain not read to the end" in \
        render.thread_header(t)


def test_header_of_a_free_threaded_thread_names_no_gil_holder():
    t = Thread(thread_id=0x10, native_thread_id=7, interpreter_id=None, free_threaded=True)
    assert render.thread_header(t) == "Thread 0x10 (native 7, free-threaded: no GIL):"
    assert "GIL" not in json.dumps(t.to_dict()).replace("holds_gil", "")


def _stateful(**kw):
    kw.setdefault("frames", [frame("work", "/app/app.py", 12)])
    kw.setdefault("native_thread_id", 15998)
    return Thread(thread_id=0x7F10, interpreter_id=0, **kw)


def test_header_names_the_thread_its_gil_and_native_wait():
    t = _stateful(name="ledger-writer", name_source="python", gil="holds",
                  native="waiting on a lock", on_cpu=False)
    assert render.thread_header(t) == ('Thread 0x7f10 "ledger-writer" (native 15998, '
                                       'interpreter 0, holds the GIL, waiting on a lock):')
    # Thread.gil wins over holds_gil; the same words are not said twice
    t = _stateful(gil="waits", holds_gil=False, native="waiting for the GIL")
    assert render.thread_header(t) == ("Thread 0x7f10 (native 15998, interpreter 0, "
                                       "waiting for the GIL):")
    t = _stateful(gil="no", holds_gil=True, native="on CPU")
    assert render.thread_header(t) == ("Thread 0x7f10 (native 15998, interpreter 0, "
                                       "does not hold the GIL, on CPU):")
    t = _stateful(holds_gil=True, name="python3.13", name_source="os")
    assert render.thread_header(t) == ('Thread 0x7f10 "python3.13" (native 15998, '
                                       'interpreter 0, holds the GIL):')


def test_header_escapes_and_bounds_the_name():
    t = _stateful(name='a"b\x1b[31m\n' + "x" * 300, name_source="python",
                  native="in C: \x07bell")
    header = render.thread_header(t)
    assert header.isprintable()
    assert header.startswith('Thread 0x7f10 "a\\"b\\x1b[31m\\n' + "x" * 80)
    assert 'x..." (native 15998' in header
    assert "in C: \\x07bell" in header


def test_exception_line_under_the_header():
    from pyframes.model import ThreadException
    handled = _stateful(exception=ThreadException("ValueError", "bad value", True,
                                                  "app.py", 12))
    lines = list(render.format_thread(handled, show_source=False))
    assert lines[:3] == ["Thread 0x7f10 (native 15998, interpreter 0):",
                         "  handling ValueError: bad value (app.py:12)",
                         "Traceback (most recent call first):"]
    raising = ThreadException("KeyError", "'k'", False, "app.py", 30)
    assert render.exception_line(raising) == "  raising KeyError: 'k' (app.py:30)"
    bare = ThreadException("mod.Error\x1b", None, False, None, None)
    assert render.exception_line(bare) == "  raising mod.Error\\x1b"
    long = ThreadException("E", "m\n" * 500, True, "f.py", None)
    line = render.exception_line(long)
    assert line.isprintable() and len(line) < 260 and line.endswith("... (f.py)")
    assert render.exception_line(None) is None
    doc = json.loads(json.dumps(handled.to_dict()))
    assert doc["exception"] == {"type": "ValueError", "message": "bad value",
                                "handled": True, "file": "app.py", "line": 12}


def test_group_prints_each_stack_once():
    pool = [_stateful(native_thread_id=100 + i, name="pool_%d" % i, name_source="python",
                      native="waiting on a lock", frames=[frame("_worker", "/t.py", 90)])
            for i in range(12)]
    other = _stateful(name="reader", native="reading fd 5")
    text = render.format_threads_text(pool[:6] + [other] + pool[6:], group=True,
                                      show_source=False)
    blocks = text.split("\n\n")
    assert len(blocks) == 2
    assert blocks[0].splitlines() == [
        '12 threads with the same stack: "pool_0", "pool_1", "pool_2", "pool_3", '
        '"pool_4", "pool_5", "pool_6", "pool_7", ... 4 more (native 100, 101, 102, 103, '
        '104, 105, 106, 107, ... 4 more, waiting on a lock):',
        "Traceback (most recent call first):",
        '  File "/t.py", line 90, in _worker']
    assert blocks[1].startswith('Thread 0x7f10 "reader" (native 15998')
    groups = render.groups_json(pool + [other])
    assert [len(g["native_thread_ids"]) for g in groups] == [12, 1]
    assert groups[0]["names"] == ["pool_%d" % i for i in range(12)]
    assert groups[0]["frames"] == [pool[0].frames[0].to_dict()]
    same = [_stateful(native_thread_id=7 + i, name="python3.13") for i in range(3)]
    assert render.group_header(same) == ('3 threads with the same stack: "python3.13" x3 '
                                         '(native 7, 8, 9):')


def test_no_source_prints_no_source_lines():
    calls = []

    def source(filename, line):
        calls.append((filename, line))
        return "x = 1"

    lines = list(render.format_text(make_snapshot(), show_source=False,
                                    source=source))
    assert calls == []
    assert "    x = 1" not in lines
    assert '  File "/app/x.py", line 3, in inner' in lines
    assert not any(line.startswith("    ") for line in lines)


def test_source_callable_errors_are_ignored():
    def source(filename, line):
        raise RuntimeError("boom")

    lines = list(render.format_text(make_snapshot(), source=source))
    assert '  File "/app/x.py", line 3, in inner' in lines
    assert not any(line.startswith("    ") for line in lines)


def test_unknown_line_has_no_line_number_and_no_source():
    t = Thread(thread_id=1, native_thread_id=2,
               frames=[Frame("???", "???")])
    lines = list(render.format_text([t], source=lambda f, n: "never"))
    assert lines[-1] == '  File "???", in ???'


def test_limit_caps_frames_and_counts_the_rest():
    snap = make_snapshot()
    lines = list(render.format_text(snap, limit=1, show_source=False))
    assert lines[:4] == [
        lines[0],
        "Traceback (most recent call first):",
        '  File "/app/x.py", line 3, in inner',
        "  ... 2 more frames",
    ]
    # the one-frame thread is not cut
    assert '  File "/app/g.py", line 2, in gen [generator]' in lines
    assert "  ... 1 more frame" not in lines
    lines = list(render.format_text(snap.interpreters[0].threads[0], limit=2,
                                    show_source=False))
    assert lines[-1] == "  ... 1 more frame"
    lines = list(render.format_text(snap, limit=0, show_source=False))
    assert "  ... 3 more frames" in lines


def test_limit_larger_than_stack_prints_everything():
    lines = list(render.format_text(make_snapshot(), limit=100,
                                    show_source=False))
    assert not any("more frame" in line for line in lines)
    assert sum(1 for line in lines if line.startswith("  File ")) == 4


def test_addresses_option():
    t = Thread(thread_id=1, native_thread_id=2, frames=[
        Frame("f", "a.py", 1, frame_addr=0xABC, code_addr=0xDEF)])
    lines = list(render.format_text(t, show_source=False, addresses=True))
    assert lines[-1] == '  File "a.py", line 1, in f (frame 0xabc, code 0xdef)'


def test_escape():
    assert render.escape("plain") == "plain"
    assert render.escape("a\nb\tc\rd") == "a\\nb\\tc\\rd"
    assert render.escape("\x1b[31mred") == "\\x1b[31mred"
    assert render.escape("\x7f\x85") == "\\x7f\\x85"
    assert render.escape("caf\u00e9 \u4e2d") == "caf\u00e9 \u4e2d"
    assert render.escape("\u202e") == "\\u202e"
    assert render.escape("\U000e0001") == "\\U000e0001"
    assert render.escape("\udcff") == "\\udcff"
    for s in ("\x00\x01\x1f", "a\u2028b", "\ufeff"):
        assert render.escape(s).isprintable()


def test_target_controlled_text_is_escaped_everywhere():
    evil = "\x1b]0;pwned\x07"
    t = Thread(thread_id=1, native_thread_id=2, complete=False,
               error="bad\nthing",
               frames=[Frame(evil, "/tmp/\x1b[2J.py", 1)])
    lines = list(render.format_text(t, source=lambda f, n: "x = '\x1b[0m'"))
    text = "\n".join(lines)
    assert "\x1b" not in text and "\x07" not in text
    assert all(line.isprintable() for line in lines)
    assert lines[0].endswith("incomplete: bad\\nthing):")
    assert '  File "/tmp/\\x1b[2J.py", line 1, in \\x1b]0;pwned\\x07' in lines
    assert "    x = '\\x1b[0m'" in lines
    collapsed = list(render.format_collapsed([t]))
    assert all(line.isprintable() for line in collapsed)


def test_source_reader_reads_files(tmp_path):
    path = tmp_path / "mod.py"
    path.write_bytes(b"# -*- coding: latin-1 -*-\nx = '\xe9'\n\n  y()\n")
    reader = render.SourceReader()
    assert reader(str(path), 2) == "x = '\u00e9'"
    assert reader(str(path), 4) == "  y()"
    assert reader(str(path), 5) is None
    assert reader(str(path), 0) is None
    assert reader(str(tmp_path / "missing.py"), 1) is None
    assert reader("<string>", 1) is None
    assert reader(str(tmp_path), 1) is None  # a directory
    assert reader("/dev/zero", 1) is None  # not a regular file
    # read once, then served from the cache
    path.write_text("changed\n")
    assert reader(str(path), 2) == "x = '\u00e9'"


def test_default_source_reader_used_by_format_text(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("def f():\n    return 1 / 0\n")
    t = Thread(thread_id=1, native_thread_id=2,
               frames=[Frame("f", str(path), 2)])
    lines = list(render.format_text(t))
    assert lines[-1] == "    return 1 / 0"


def test_source_reader_rereads_an_edited_file_after_refresh(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text("a = 1\nb = 2\n")
    reader = render.SourceReader()
    assert reader(str(path), 2) == "b = 2"
    path.write_text("a = 1\nb = 3  # edited, same length? no: longer\n")
    # until refresh() (one per debugger command) the cached text is used
    assert reader(str(path), 2) == "b = 2"
    reader.refresh()
    assert reader(str(path), 2) == "b = 3  # edited, same length? no: longer"
    # a same-size edit is caught by the modification time
    before = os.stat(path).st_mtime_ns
    path.write_text("a = 1\nb = 4  # edited, same length? no: longer\n")
    os.utime(path, ns=(before + 10**9, before + 10**9))
    reader.refresh()
    assert reader(str(path), 2) == "b = 4  # edited, same length? no: longer"
    path.unlink()
    reader.refresh()
    assert reader(str(path), 2) is None


def counted_source(calls):
    """A source reader that appends each (filename, line) asked to calls."""
    def source(filename, line):
        calls.append((filename, line))
        return render.SourceReader()(filename, line)
    return source


def test_recursion_formats_each_distinct_frame_once(tmp_path):
    """A 1,000-deep recursion: the same lines as frame-by-frame formatting,
    with one source lookup per distinct frame."""
    path = tmp_path / "rec.py"
    path.write_text("def f(n):\n    return f(n - 1)\n")
    calls = []
    source = counted_source(calls)
    frames = [Frame(function="f", filename=str(path), line=2, frame_addr=0x1000 + i,
                    code_addr=0x50) for i in range(1000)]
    thread = Thread(thread_id=1, native_thread_id=2, interpreter_id=0, complete=True,
                    frames=frames)
    lines = list(render.format_thread(thread, source=source))
    expected = [line for fr in frames for line in render.format_frame(fr, source=render.SourceReader())]
    assert lines[2:] == expected
    assert calls == [(str(path), 2)]


def recorded(frames):
    """The frames as the frame table makes them: those that show the same
    (function, file, line, flags, code object) share one FrameRecord."""
    records = {}
    for f in frames:
        key = (f.function, f.filename, f.line, f.flags, f.code_addr)
        f.__dict__["_record"] = records.setdefault(
            key, FrameRecord(Frame(f.function, f.filename, f.line, flags=f.flags,
                                   code_addr=f.code_addr)))
    return tuple(frames)


def rec_thread(frames):
    return Thread(thread_id=1, native_thread_id=2, interpreter_id=0, frames=frames)


def test_frames_of_one_record_share_their_text(tmp_path):
    """Frames with their frame-table record (a recursion, a generator): the
    lines of frame-by-frame formatting, each record's source line looked up
    once, the addresses of each frame its own."""
    path = tmp_path / "rec.py"
    path.write_text("def f(n):\n    return f(n - 1)\ndef g():\n    yield\n")
    calls = []
    source = counted_source(calls)
    frames = recorded(
        [Frame("g", str(path), 4, frame_addr=0x900, code_addr=0x60, flags=FRAME_GENERATOR)] +
        [Frame("f", str(path), 2, frame_addr=0x1000 + i, code_addr=0x50) for i in range(500)] +
        [Frame("<module>", str(path), None, frame_addr=0x800, code_addr=0x40)])
    plain = [Frame(f.function, f.filename, f.line, frame_addr=f.frame_addr,
                   code_addr=f.code_addr, flags=f.flags) for f in frames]
    for addresses in (False, True):
        expected = [line for f in plain for line in render.format_frame(
            f, source=render.SourceReader(), addresses=addresses)]
        calls.clear()
        text = render.format_threads_text([rec_thread(frames)], source=source,
                                          addresses=addresses)
        assert text.split("\n")[2:-1] == expected
        assert sorted(calls) == [(str(path), 2), (str(path), 4)]
        assert list(render.format_thread(rec_thread(frames), source=source,
                                         addresses=addresses))[2:] == expected


def test_kept_text_follows_an_edited_source_file(tmp_path):
    """The same tuple of frames rendered again (a debugger's next command at
    the same stop) after its file was edited shows the new source line."""
    path = tmp_path / "mod.py"
    path.write_text("def f(n):\n    return f(n - 1)\n")
    frames = recorded([Frame("f", str(path), 2, frame_addr=0x1000 + i, code_addr=0x50)
                       for i in range(100)])
    reader = render.SourceReader()
    first = render.format_threads_text([rec_thread(frames)], source=reader)
    assert first.count("    return f(n - 1)\n") == 100
    assert render.format_threads_text([rec_thread(frames)], source=reader) == first
    path.write_text("def f(n):\n    return f(n - 2)  # edited\n")
    reader.refresh()
    again = render.format_threads_text([rec_thread(frames)], source=reader)
    assert again.count("    return f(n - 2)  # edited\n") == 100
    assert "f(n - 1)" not in again
    # and without source lines, none
    assert "return" not in render.format_threads_text([rec_thread(frames)], show_source=False)


def test_kept_text_is_of_its_own_tuple():
    """Tuples made and dropped in turn (a new one may take a dropped one's
    address): each shows its own frames."""
    for i in range(200):
        frames = recorded([Frame("f%d" % (i % 7), "/app/m%d.py" % (i % 3), 1 + i % 11,
                                 frame_addr=0x1000 + k, code_addr=0x50 + i % 5)
                           for k in range(1 + i % 4)])
        text = render.format_threads_text([rec_thread(frames)], show_source=False)
        line = '  File "/app/m%d.py", line %d, in f%d\n' % (i % 3, 1 + i % 11, i % 7)
        assert text == (render.thread_header(rec_thread(frames)) + "\n" +
                        "Traceback (most recent call first):\n" + line * (1 + i % 4))
        del frames


def test_process_source_prefers_proc_root(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("a = 1\n")
    source = render.process_source(os.getpid())
    assert source(str(path), 1) == "a = 1"
    assert source("<frozen importlib._bootstrap>", 1) is None
    rel = os.path.relpath(str(path), os.getcwd())
    assert source(rel, 1) == "a = 1"


# ---- JSON ------------------------------------------------------------------


def test_json_schema_is_exact():
    doc = json.loads(render.format_json(make_snapshot()))
    assert set(doc) == {"pid", "python", "interpreters"}
    assert doc["pid"] == 4242
    assert doc["python"] == {"version": "3.15.2", "hexversion": 0x030F02F0,
                             "free_threaded": False}
    assert [i["id"] for i in doc["interpreters"]] == [0, 1]
    for interp in doc["interpreters"]:
        assert set(interp) == {"id", "threads"}
        for thread in interp["threads"]:
            assert set(thread) == {"thread_id", "native_thread_id", "complete",
                                   "holds_gil", "error", "frames", "name", "name_source",
                                   "gil", "native", "on_cpu", "exception"}
            for f in thread["frames"]:
                # "owner" only for a frame a generator object owns
                assert set(f) - {"owner"} == {"function", "filename", "line", "end_line",
                                              "column", "end_column"}
    main = doc["interpreters"][0]["threads"][0]
    assert main == {
        "thread_id": 0x7F1200001000,
        "native_thread_id": 12345,
        "complete": True,
        "holds_gil": True,
        "error": None,
        "frames": [
            {"function": "inner", "filename": "/app/x.py", "line": 3,
             "end_line": 3, "column": 4, "end_column": 10},
            {"function": "Outer.method", "filename": "/app/x.py", "line": 7,
             "end_line": 7, "column": 4, "end_column": 10},
            {"function": "<module>", "filename": "/app/x.py", "line": 10,
             "end_line": 10, "column": 4, "end_column": 10},
        ],
        "name": None, "name_source": None, "gil": None, "native": None, "on_cpu": None,
        "exception": None,
    }
    worker = doc["interpreters"][0]["threads"][1]
    assert worker["complete"] is False
    assert worker["holds_gil"] is False
    assert worker["error"] == "cycle in frame chain at 0x1234"
    assert worker["frames"] == [
        {"function": "gen", "filename": "/app/g.py", "line": 2, "end_line": 2,
         "column": 4, "end_column": 10, "owner": "generator"}]
    idle = doc["interpreters"][1]["threads"][0]
    assert idle == {"thread_id": None, "native_thread_id": None,
                    "complete": True, "holds_gil": None, "error": None,
                    "frames": [], "name": None, "name_source": None, "gil": None,
                    "native": None, "on_cpu": None, "exception": None}


def test_json_nulls_for_unknown_numbers_and_pid():
    snap = Snapshot(pid=None, python=PY, interpreters=[Interpreter(id=0, threads=[
        Thread(thread_id=1, native_thread_id=2, frames=[Frame("f", "a.py")])])])
    text = render.format_json(snap)
    doc = json.loads(text)
    assert doc["pid"] is None
    assert doc["interpreters"][0]["threads"][0]["frames"] == [
        {"function": "f", "filename": "a.py", "line": None, "end_line": None,
         "column": None, "end_column": None}]
    assert '"line": null' in text


def test_json_owner_of_coroutine_and_async_generator_frames():
    frames = [Frame("a", "a.py", flags=FRAME_GENERATOR | FRAME_ASYNC_GENERATOR),
              Frame("c", "a.py", flags=FRAME_GENERATOR | FRAME_COROUTINE),
              Frame("p", "a.py", flags=FRAME_ENTRY_FROM_C)]
    snap = Snapshot(pid=1, python=PY, interpreters=[Interpreter(id=0, threads=[
        Thread(thread_id=1, native_thread_id=2, frames=frames)])])
    got = json.loads(render.format_json(snap))["interpreters"][0]["threads"][0]["frames"]
    assert [f.get("owner", "-") for f in got] == ["async_generator", "coroutine", "-"]


def test_json_is_one_ascii_document():
    t = Thread(thread_id=1, native_thread_id=2,
               frames=[Frame("caf\u00e9\n", "\x1b.py", 1)])
    snap = Snapshot(pid=1, python=PY,
                    interpreters=[Interpreter(id=0, threads=[t])])
    text = render.format_json(snap)
    assert "\n" not in text and text.isascii()
    doc = json.JSONDecoder().raw_decode(text)
    assert doc[1] == len(text)
    assert doc[0]["interpreters"][0]["threads"][0]["frames"][0]["function"] \
        == "caf\u00e9\n"
    assert json.loads(render.format_json(snap, indent=2)) == doc[0]


def test_json_round_trips_to_dict():
    snap = make_snapshot()
    assert json.loads(render.format_json(snap)) == snap.to_dict()


# ---- collapsed -------------------------------------------------------------


def test_collapsed_is_outermost_first():
    lines = list(render.format_collapsed(make_snapshot()))
    assert lines == [
        "thread-12345;<module> (/app/x.py:10);Outer.method (/app/x.py:7);"
        "inner (/app/x.py:3) 1",
        "thread-12346;gen (/app/g.py:2) 1",
        "thread-unknown 1",
    ]


def test_collapsed_separators_in_names_are_escaped():
    t = Thread(thread_id=0xAB, native_thread_id=None, frames=[
        Frame("a;b", "/x;y.py", None), Frame("outer", "o.py", 5)])
    (line,) = render.format_collapsed([t])
    assert line == ("thread-0xab;outer (o.py:5);a\\x3bb (/x\\x3by.py) 1")
    stack, count = line.rsplit(" ", 1)
    assert count == "1"
    assert len(stack.split(";")) == 3


def test_interleave_is_each_native_frame_then_its_python_frames():
    """pyframes.mixed.interleave, the one order of bt, the frame provider,
    the frame-format hook and --native: native frame, the Python frames
    its eval call runs, ..., then the unplaced ones under their marker."""
    from pyframes import mixed
    native = [mixed.NativeFrame(i, 0x1000 + i, 0x100 * (i + 1), "f%d" % i, None, False)
              for i in range(4)]
    a, b, c = frame("a"), frame("b"), frame("c")
    runs = [mixed.Run([a], 0x180), mixed.Run([b], 0x380), mixed.Run([c], 0x9000)]
    placement = mixed.place(native, runs)
    groups = list(mixed.interleave(len(native), placement))
    assert [(g.native, [f.function for f in g.frames]) for g in groups] == [
        (0, ["a"]), (1, []), (2, ["b"]), (3, []), (None, ["c"])]
    assert groups[-1].marker.startswith("1 Python frame not placed: ")
    text = mixed.format_mixed(native, placement)
    assert [line.split()[0] for line in text] == [
        "#0", "[python]", "#1", "#2", "[python]", "#3", "[1", "[python]"]
    kinds = [(f["kind"], f["function"]) for f in mixed.mixed_json_frames(native, placement)]
    assert kinds == [("python", "a"), ("native", "f0"), ("native", "f1"), ("python", "b"),
                     ("native", "f2"), ("native", "f3"), ("python", "c")]


def test_a_native_frame_out_of_stack_order_holds_no_run():
    """A frame the debugger lists with a stack pointer below an inner
    frame's (lldb gives an inner frame again at an outer index when it
    cannot compute a function's CFA): the runs go by the frames in stack
    order, never under that one."""
    from pyframes import mixed
    sps = [0x100, 0x200, 0x300, 0x150, 0x400, 0x500]
    native = [mixed.NativeFrame(i, 0x1000 + i, sp, "f%d" % i, None, False)
              for i, sp in enumerate(sps)]
    runs = [mixed.Run([frame("a")], 0x180), mixed.Run([frame("b")], 0x350),
            mixed.Run([frame("c")], 0x420)]
    placement = mixed.place(native, runs)
    assert not placement.unplaced
    assert {i: [f.function for f in placement.frames_at(i)] for i in placement.at} == {
        0: ["a"], 2: ["b"], 4: ["c"]}
