"""Tests of pyframes.flamegraph.render_svg (no shared library, no process).

The document is checked against the stacks it was made from, parsed with
xml.etree.ElementTree: one box per node of the merged call tree, widths
proportional to the counts, the root at the bottom, escaping, colors,
determinism and the bounds on size.  Then Debian's chromium opens it
headless: its screenshot (decoded here with zlib and struct) must show the
frames in their colors, and the DOM it dumps after the load event must show
what the script did (its hint line; a search and zooms, one into a frame
0.35 px wide, asked for in the query string).  The browser tests skip where chromium is not on PATH and
fail inside the sandbox, whose root installs it.
"""

import bisect
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PKG = os.path.join(_REPO, "native", "python")
if _PKG not in sys.path:
    sys.path.insert(0, _PKG)

from pyframes import flamegraph  # noqa: E402
from pyframes.flamegraph import render_svg  # noqa: E402

from conftest import in_sandbox  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
DASH = "\u2014"


def f(function, filename="/app/x.py", line=1):
    return (function, filename, line)


MAIN = f("main", "/app/main.py", 10)
WALK = f("walk", "/app/x.py", 12)
LEAF_A = f("leaf_a", "/app/x.py", 20)
LEAF_B = f("leaf_b", "/app/y.py", 30)

SIMPLE = [((MAIN, WALK, LEAF_A), 3), ((MAIN, WALK, LEAF_B), 1)]


class Box(object):
    """One drawn frame: its title, rect geometry, fill and label."""

    def __init__(self, g):
        rect = g.find(SVG + "rect")
        text = g.find(SVG + "text")
        self.title = g.find(SVG + "title").text
        self.label = self.title.rsplit(" %s " % DASH, 1)[0]
        self.x = float(rect.get("x"))
        self.y = float(rect.get("y"))
        self.width = float(rect.get("width"))
        self.fill = rect.get("fill")
        self.text = text.text if text is not None else None
        self.full_name = g.get("data-f")

    def __repr__(self):
        return "Box(%r, x=%s, y=%s, w=%s)" % (self.label, self.x, self.y, self.width)


def parse(svg):
    return ET.fromstring(svg)


def boxes(svg):
    root = parse(svg)
    frames = [e for e in root.iter(SVG + "g") if e.get("id") == "frames"]
    assert len(frames) == 1
    return [Box(g) for g in frames[0].findall(SVG + "g")]


def by_label(svg):
    out = {}
    for box in boxes(svg):
        assert box.label not in out, "two boxes labelled %r" % box.label
        out[box.label] = box
    return out


def samples_of(box):
    m = re.search(r" %s ([\d,]+) " % DASH, box.title)
    return int(m.group(1).replace(",", ""))


# ---- structure ---------------------------------------------------------------


def test_document_parses_with_one_box_per_node():
    svg = render_svg(SIMPLE, title="demo", subtitle="4 samples")
    root = parse(svg)
    assert root.tag == SVG + "svg"
    assert root.get("width") == "1200"
    labels = sorted(by_label(svg))
    assert labels == sorted(["all", "main (/app/main.py:10)", "walk (/app/x.py:12)",
                             "leaf_a (/app/x.py:20)", "leaf_b (/app/y.py:30)"])
    texts = {e.get("id"): e.text for e in root.iter(SVG + "text") if e.get("id")}
    assert texts["title"] == "demo"
    assert texts["subtitle"] == "4 samples"
    assert texts["search"] == "Search"
    assert texts["unzoom"] == "Reset Zoom"


def test_tooltip_names_frame_samples_and_percent():
    stacks = [((WALK,), 1234), ((f("other"),), 10000 - 1234)]
    box = by_label(render_svg(stacks))["walk (/app/x.py:12)"]
    assert box.title == "walk (/app/x.py:12) %s 1,234 samples, 12.34%%" % DASH
    assert box.text == "walk"
    other = by_label(render_svg(stacks, unit="ms"))["other (/app/x.py:1)"]
    assert other.title == "other (/app/x.py:1) %s 8,766 ms, 87.66%%" % DASH


def test_labels_without_line_or_file():
    stacks = [((("thread-7", "", None), ("run", "/app/t.py", None)), 2)]
    labels = set(by_label(render_svg(stacks)))
    assert labels == {"all", "thread-7", "run (/app/t.py)"}
    assert flamegraph.frame_label(("f", "", 3)) == "f (:3)"


def test_target_text_is_escaped_and_round_trips():
    odd = [
        ("<lambda>", "/app/a&b.py", 5),
        ('say "hi" & <bye>', "/app/q'uote.py", 6),
        ("naïve_λ_函数", "/app/ünï.py", 7),
        ("]]>", "<frozen importlib._bootstrap>", None),
    ]
    svg = render_svg([(tuple(odd), 2)], title="<t&>", subtitle='"s"')
    labels = set(by_label(svg))
    for frame in odd:
        assert flamegraph.frame_label(frame) in labels
    assert "<lambda> (/app/a&b.py:5)" in labels
    texts = [b.text for b in boxes(svg)]
    assert "<lambda>" in texts and "naïve_λ_函数" in texts
    titles = {e.get("id"): e.text for e in parse(svg).iter(SVG + "text") if e.get("id")}
    assert titles["title"] == "<t&>" and titles["subtitle"] == '"s"'
    assert "<lambda>" not in svg and "&lt;lambda&gt;" in svg


def test_characters_xml_cannot_hold_are_written_as_escapes():
    stacks = [(((" bad\x01\x1b[31m", "/app/\udcff.py", 1),), 1)]
    labels = set(by_label(render_svg(stacks)))
    assert " bad\\x01\\x1b[31m (/app/\\udcff.py:1)" in labels


def test_self_contained():
    svg = render_svg(SIMPLE)
    without_ns = svg.replace('xmlns="http://www.w3.org/2000/svg"', "")
    without_ns = without_ns.replace('"http://www.w3.org/2000/svg"', "")  # createElementNS
    assert "http" not in without_ns
    assert "href" not in svg
    assert re.findall(r"url\(([^)]*)\)", svg) == ["#background"]
    root = parse(svg)
    scripts = list(root.iter(SVG + "script"))
    styles = list(root.iter(SVG + "style"))
    assert len(scripts) == 1 and "function zoom(" in scripts[0].text
    assert len(styles) == 1 and ".hide" in styles[0].text
    assert "<![CDATA[" in svg
    assert root.get("onload") == "init(evt)"


# ---- geometry ----------------------------------------------------------------


def test_widths_proportional_to_counts():
    b = by_label(render_svg(SIMPLE))
    a, c = b["leaf_a (/app/x.py:20)"], b["leaf_b (/app/y.py:30)"]
    assert abs(a.width / c.width - 3.0) < 0.03
    assert abs(a.width + c.width - b["walk (/app/x.py:12)"].width) < 0.02
    assert abs(b["all"].width - 1180) < 0.01
    assert a.x + a.width == pytest.approx(c.x, abs=0.01)  # siblings side by side


def test_identical_stacks_are_summed():
    repeated = [((MAIN, WALK, LEAF_A), 1), ((MAIN, WALK, LEAF_B), 1),
                ((MAIN, WALK, LEAF_A), 2)]
    svg = render_svg(repeated)
    assert svg == render_svg(SIMPLE)
    b = by_label(svg)
    assert samples_of(b["leaf_a (/app/x.py:20)"]) == 3
    assert samples_of(b["all"]) == 4


def test_frames_merge_by_function_file_and_line():
    stacks = [((MAIN, f("walk", "/app/x.py", 12)), 1),
              ((MAIN, f("walk", "/app/x.py", 13)), 1),
              ((MAIN, f("walk", "/app/z.py", 12)), 1)]
    labels = set(by_label(render_svg(stacks)))
    assert {"walk (/app/x.py:12)", "walk (/app/x.py:13)", "walk (/app/z.py:12)"} <= labels


def test_root_at_the_bottom_callees_above():
    b = by_label(render_svg(SIMPLE))
    ys = [b[k].y for k in ("all", "main (/app/main.py:10)", "walk (/app/x.py:12)",
                           "leaf_a (/app/x.py:20)")]
    assert ys == sorted(ys, reverse=True)
    assert [ys[i] - ys[i + 1] for i in range(3)] == [16, 16, 16]
    assert max(box.y for box in b.values()) == b["all"].y
    assert b["leaf_a (/app/x.py:20)"].y == b["leaf_b (/app/y.py:30)"].y


def test_self_time_leaves_a_gap_and_children_sorted_by_name():
    stacks = [((MAIN, f("zeta")), 1), ((MAIN,), 2), ((MAIN, f("alpha")), 1)]
    b = by_label(render_svg(stacks))
    alpha, zeta = b["alpha (/app/x.py:1)"], b["zeta (/app/x.py:1)"]
    assert alpha.x == 10 and alpha.x < zeta.x
    assert zeta.x + zeta.width == pytest.approx(10 + 1180 / 2, abs=0.01)
    assert render_svg(stacks) == render_svg(list(reversed(stacks)))


def test_labels_fit_their_frames():
    long_name = "a_rather_long_function_name_" * 4
    stacks = [((f(long_name),), 10), ((f("tiny_one"),), 1), ((f("rest"),), 1989)]
    b = by_label(render_svg(stacks))
    small = b[long_name + " (/app/x.py:1)"]      # 5.9 px: room for no character
    assert small.text is None and small.full_name == long_name
    narrow = b["tiny_one (/app/x.py:1)"]
    assert narrow.text is None and narrow.full_name == "tiny_one"
    stacks = [((f(long_name),), 1), ((f("rest"),), 9)]
    box = by_label(render_svg(stacks))[long_name + " (/app/x.py:1)"]   # 118 px
    assert box.text.endswith("..") and long_name.startswith(box.text[:-2])
    assert len(box.text) * 7.08 <= box.width - 6
    assert box.full_name == long_name
    assert by_label(render_svg(stacks))["rest (/app/x.py:1)"].full_name is None


# ---- determinism and colors --------------------------------------------------


def rgb(fill):
    return tuple(int(v) for v in re.match(r"rgb\((\d+),(\d+),(\d+)\)$", fill).groups())


def test_output_is_deterministic():
    assert render_svg(SIMPLE, title="t") == render_svg(list(SIMPLE), title="t")
    # Color hashes must not depend on PYTHONHASHSEED.
    code = ("import sys; sys.path.insert(0, %r); from pyframes.flamegraph import render_svg;"
            "sys.stdout.write(render_svg(%r))" % (_PKG, SIMPLE))
    outs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                capture_output=True).stdout)
    assert len(outs) == 1
    assert outs.pop().decode("utf-8") == render_svg(SIMPLE)


def test_colors_follow_the_file():
    one = by_label(render_svg(SIMPLE))
    other = by_label(render_svg([((f("elsewhere", "/lib/q.py", 1), LEAF_A), 9),
                                 ((f("walk", "/app/x.py", 99),), 1)]))
    assert one["leaf_a (/app/x.py:20)"].fill == other["leaf_a (/app/x.py:20)"].fill
    walk, leaf = rgb(one["walk (/app/x.py:12)"].fill), rgb(one["leaf_a (/app/x.py:20)"].fill)
    assert walk[0] == leaf[0] and walk[2] == leaf[2] and abs(walk[1] - leaf[1]) <= 40
    assert walk == rgb(other["walk (/app/x.py:99)"].fill)   # the line plays no part
    for fill in (one[k].fill for k in one if k != "all"):
        r, g, b = rgb(fill)
        assert r >= 205 and g <= 230 and b <= 55, fill    # warm
    files = ["/app/mod%d.py" % i for i in range(20)]
    assert len({flamegraph.frame_color("f", name) for name in files}) >= 15


def test_frames_without_a_file_are_grey():
    stacks = [((("thread-1", "", None), ("<module>", "<string>", 1),
                ("_find", "<frozen importlib._bootstrap>", 2)), 1)]
    for box in boxes(render_svg(stacks)):
        r, g, b = rgb(box.fill)
        assert r == g == b, box


# ---- bounds ------------------------------------------------------------------


def test_empty_input_says_no_samples():
    for stacks in ([], iter(()), [((MAIN,), 0)]):
        svg = render_svg(stacks)
        root = parse(svg)
        assert boxes(svg) == []
        texts = {e.get("id"): e.text for e in root.iter(SVG + "text") if e.get("id")}
        assert texts["empty"] == "no samples"


def test_thousand_deep_stack():
    frames = tuple(f("level%d" % i, "/app/deep.py", i + 1) for i in range(1000))
    svg = render_svg([(frames, 1), (frames[:500], 1)])
    drawn = boxes(svg)
    assert len(drawn) == 1001
    assert len(list(parse(svg).iter(SVG + "rect"))) >= 1001
    assert int(parse(svg).get("height")) >= 1001 * 16
    b = {box.label: box for box in drawn}
    assert b["level999 (/app/deep.py:1000)"].y == b["all"].y - 1000 * 16
    assert samples_of(b["level499 (/app/deep.py:500)"]) == 2
    assert samples_of(b["level500 (/app/deep.py:501)"]) == 1


def test_too_narrow_frames_are_left_out_but_counted():
    stacks = [((MAIN, f("big")), 99999), ((MAIN, f("speck"), f("speck_child")), 1)]
    b = by_label(render_svg(stacks))         # speck: 0.0118 px
    assert "speck (/app/x.py:1)" not in b and "speck_child (/app/x.py:1)" not in b
    assert samples_of(b["main (/app/main.py:10)"]) == 100000
    assert samples_of(b["all"]) == 100000
    stacks = [((MAIN, f("big")), 10999), ((MAIN, f("speck")), 1)]   # 0.107 px: kept
    speck = by_label(render_svg(stacks))["speck (/app/x.py:1)"]
    # Narrow frames are placed finely enough to be zoomed into.
    assert speck.width == pytest.approx(1180 / 11000, rel=1e-4)
    assert speck.x + speck.width == pytest.approx(1190, abs=1e-5)
    stacks = [((MAIN, f("big")), 11999), ((MAIN, f("speck")), 1)]   # 0.098 px
    assert "speck (/app/x.py:1)" not in by_label(render_svg(stacks))


def test_frame_count_is_bounded_and_callers_kept():
    # 500 chains 50 deep of 1, 2 or 3 samples: 25,002 nodes, all over 1 px.
    stacks = [((MAIN,) + tuple(f("c%d_%d" % (i, d)) for d in range(50)), 1 + (i % 3))
              for i in range(500)]
    drawn = boxes(render_svg(stacks))
    assert len(drawn) == flamegraph.MAX_FRAMES
    levels = {}
    for box in drawn:
        levels.setdefault(box.y, []).append(box)
    for row in levels.values():
        row.sort(key=lambda box: box.x)
    for box in drawn:
        if box.label == "all":
            continue
        row = levels.get(box.y + 16, [])
        i = bisect.bisect_right([c.x for c in row], box.x + 0.005) - 1
        assert i >= 0, box
        caller = row[i]
        assert caller.x + caller.width >= box.x + box.width - 0.005, box
    # The narrowest went first: every frame of 2 or 3 samples is kept, and
    # of the 1-sample chains only their outer levels.
    counts = [samples_of(box) for box in drawn]
    wider = 2 + 50 * sum(1 for _, c in stacks if c >= 2)
    assert sum(1 for c in counts if c >= 2) == wider
    ones = [sum(1 for b in levels[y] if samples_of(b) == 1)
            for y in sorted(levels, reverse=True)[2:]]      # above all and main
    assert sum(ones) == flamegraph.MAX_FRAMES - wider
    assert ones == sorted(ones, reverse=True)
    assert len([n for n in ones if n not in (0, 167)]) <= 1
    assert samples_of([b for b in drawn if b.label == "all"][0]) == sum(c for _, c in stacks)


def split_stacks():
    """main split over two lines under the root, each calling on; other
    once."""
    return [((f("main", "/app/main.py", 30), f("a")), 30),
            ((f("main", "/app/main.py", 31), f("b")), 10),
            ((f("other", "/app/o.py", 3), f("main", "/app/main.py", 99)), 20)]


def test_split_boxes_carry_their_line():
    svg = render_svg(split_stacks())
    shown = {b.label: (b.text or b.full_name) for b in boxes(svg)}
    assert shown["main (/app/main.py:30)"] == "main:30"
    assert shown["main (/app/main.py:31)"] == "main:31"
    # alone under its caller: just the function
    assert shown["main (/app/main.py:99)"] == "main"
    assert shown["other (/app/o.py:3)"] == "other"
    root = parse(svg)
    fns = [g.get("data-fn") for g in root.iter(SVG + "g") if g.get("data-fn")]
    assert fns == ["main", "main"]
    assert flamegraph.box_name(("main", "/app/main.py", None), True) == "main"


# ---- a real browser ----------------------------------------------------------


@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium")
    if path is None:
        msg = "chromium is not on PATH"
        if in_sandbox():
            pytest.fail(msg + " inside the sandbox (tests/sandbox/root.sh installs it)")
        pytest.skip(msg)
    return path


def run_chromium(chromium, tmp_path, *args):
    """chromium's stdout for one headless run, killed after 120 s."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = dict(os.environ, HOME=str(home))
    argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-dev-shm-usage",
            "--user-data-dir=%s" % (tmp_path / "profile")] + list(args)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, err.decode("utf-8", "replace")[-2000:]
    return out.decode("utf-8")


def read_png(path):
    """(width, height, [row of (r, g, b)]) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as fh:
        data = fh.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    width, height, depth, color_type, _, _, interlace = header
    assert depth == 8 and color_type in (2, 6) and interlace == 0, header
    bpp = 3 if color_type == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        assert kind <= 4, "filter type %d" % kind
        for i in range(stride if kind else 0):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + b) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def test_png_decoder_filters(tmp_path):
    """The decoder against PNGs written here with each filter type."""
    pixels = [[((x * 37 + y * 11) % 256, (x * y) % 256, (200 - x - y) % 256)
               for x in range(7)] for y in range(5)]

    def encode(kind, bpp):
        out, prev = bytearray(), bytearray(7 * bpp)
        for row in pixels:
            line = bytearray()
            for px in row:
                line.extend(px + ((255,) if bpp == 4 else ()))
            enc = bytearray(len(line))
            for i in range(len(line)):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = {0: 0, 1: a, 2: b, 3: (a + b) // 2,
                        4: a if pa <= pb and pa <= pc else (b if pb <= pc else c)}[kind]
                enc[i] = (line[i] - pred) & 0xFF
            out.append(kind)
            out.extend(enc)
            prev = line
        return out

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    for bpp, color_type in ((3, 2), (4, 6)):
        for kind in range(5):
            png = (b"\x89PNG\r\n\x1a\n"
                   + chunk(b"IHDR", struct.pack(">IIBBBBB", 7, 5, 8, color_type, 0, 0, 0))
                   + chunk(b"IDAT", zlib.compress(bytes(encode(kind, bpp))))
                   + chunk(b"IEND", b""))
            path = tmp_path / ("%d-%d.png" % (bpp, kind))
            path.write_bytes(png)
            assert read_png(str(path)) == (7, 5, pixels)


def browser_stacks():
    """Stacks 45 levels deep over several files: the image fills the window."""
    stacks = []
    for i, name in enumerate(("parse", "render", "compute", "store")):
        frames = (MAIN, f("dispatch_%s" % name, "/app/mod%d.py" % i, 5))
        frames += tuple(f("%s_%d" % (name, d), "/app/%s.py" % name, d) for d in range(43 - 3 * i))
        stacks.append((frames, 10 * (i + 1)))
    stacks.append(((MAIN, WALK, LEAF_A), 30))
    stacks.append(((MAIN, WALK, LEAF_B), 10))
    return stacks


@pytest.fixture
def graph(tmp_path):
    path = tmp_path / "graph.svg"
    svg = render_svg(browser_stacks(), title="browser test", subtitle="140 samples")
    path.write_text(svg, encoding="utf-8")
    return path, svg


def test_chromium_screenshot_shows_the_frames(chromium, graph, tmp_path):
    path, svg = graph
    png = tmp_path / "out.png"
    run_chromium(chromium, tmp_path, "--screenshot=%s" % png, "--window-size=1200,800",
                 path.as_uri())
    assert png.is_file()
    width, height, rows = read_png(str(png))
    assert (width, height) == (1200, 800)
    counts = {}
    for row in rows:
        for px in row:
            counts[px] = counts.get(px, 0) + 1
    white = counts.get((255, 255, 255), 0)
    assert len(counts) >= 5
    assert white < 0.3 * width * height, "%d of %d pixels white" % (white, width * height)
    # The widest frames are drawn in their own colors.
    wide = [b for b in boxes(svg) if b.width > 100 and b.y + 16 < 800]
    assert len(wide) >= 20
    seen = sum(1 for b in wide if rgb(b.fill) in counts)
    assert seen >= 0.9 * len(wide), [b.fill for b in wide if rgb(b.fill) not in counts]


def test_chromium_runs_the_script_on_load(chromium, graph, tmp_path):
    path, svg = graph
    dom = run_chromium(chromium, tmp_path, "--dump-dom", path.as_uri())
    n = len(boxes(svg))
    assert "%d frames: click one to zoom, Ctrl-F or / to search" % n in dom
    assert "%d frames:" % n not in svg
    for name in ("dispatch_parse", "compute_0", "leaf_a (/app/x.py:20)", "walk"):
        assert name in dom
    assert len(re.findall(r"<rect\b", dom)) == len(re.findall(r"<rect\b", svg))


def test_chromium_search_and_zoom_from_the_query(chromium, graph, tmp_path):
    path, svg = graph
    dom = run_chromium(chromium, tmp_path, "--dump-dom", path.as_uri() + "?s=leaf_&z=^walk")
    groups = re.findall(r'<g((?: [\w-]+="[^"]*")*)><title>([^<]*)</title><rect ([^>]*)>', dom)
    assert len(groups) == len(boxes(svg))
    state = {}
    for g_attrs, title, rect in groups:
        cls = dict(re.findall(r'([\w-]+)="([^"]*)"', g_attrs)).get("class", "")
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', rect))
        state[title.rsplit(" %s " % DASH, 1)[0]] = (cls, attrs)
    assert "Matched: 28.6%" in dom           # leaf_a and leaf_b: 40 of 140
    assert ">Reset Search<" in dom
    cls, walk = state["walk (/app/x.py:12)"]
    assert "hide" not in cls and walk["width"] == "1180.00" and walk["x"] == "10.00"
    cls, leaf_a = state["leaf_a (/app/x.py:20)"]
    assert leaf_a["fill"] == flamegraph.HIGHLIGHT
    assert float(leaf_a["x"]) == pytest.approx(10, abs=0.05)
    assert float(leaf_a["width"]) == pytest.approx(885, abs=0.05)
    assert state["leaf_b (/app/y.py:30)"][1]["fill"] == flamegraph.HIGHLIGHT
    assert "parent" in state["main (/app/main.py:10)"][0]
    assert "hide" in state["dispatch_parse (/app/mod0.py:5)"][0]
    assert re.search(r'<text id="unzoom" class=""', dom)


def test_chromium_zooms_into_a_narrow_frame(chromium, tmp_path):
    stacks = [((MAIN, f("big")), 9997), ((MAIN, f("narrow"), f("kid_a")), 2),
              ((MAIN, f("narrow"), f("kid_b")), 1)]                  # narrow: 0.35 px
    path = tmp_path / "narrow.svg"
    path.write_text(render_svg(stacks), encoding="utf-8")
    dom = run_chromium(chromium, tmp_path, "--dump-dom", path.as_uri() + "?z=^narrow")
    rects = {}
    for title, rect in re.findall(r"<title>(\w+) [^<]*</title><rect ([^>]*)>", dom):
        rects[title] = {k: float(v) for k, v in re.findall(r'(x|width)="([^"]*)"', rect)}
    assert rects["narrow"] == {"x": 10, "width": 1180}
    assert rects["kid_a"]["x"] == pytest.approx(10, abs=0.5)
    assert rects["kid_a"]["width"] == pytest.approx(1180 * 2 / 3, abs=0.5)
    assert rects["kid_b"]["x"] == pytest.approx(10 + 1180 * 2 / 3, abs=0.5)
    assert rects["kid_b"]["width"] == pytest.approx(1180 / 3, abs=0.5)


def chromium_state(dom):
    """{box label: (class, rect attributes)} of the DOM chromium dumped."""
    groups = re.findall(r'<g((?: [\w-]+="[^"]*")*)><title>([^<]*)</title><rect ([^>]*)>', dom)
    state = {}
    for g_attrs, title, rect in groups:
        cls = dict(re.findall(r'([\w-]+)="([^"]*)"', g_attrs)).get("class", "")
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', rect))
        state[title.rsplit(" %s " % DASH, 1)[0]] = (cls, attrs)
    return state


def test_chromium_search_marks_every_box_of_a_function(chromium, tmp_path):
    path = tmp_path / "split.svg"
    path.write_text(render_svg(split_stacks()), encoding="utf-8")
    dom = run_chromium(chromium, tmp_path, "--dump-dom", path.as_uri() + "?s=^main$")
    state = chromium_state(dom)
    for line in (30, 31, 99):
        assert state["main (/app/main.py:%d)" % line][1]["fill"] == flamegraph.HIGHLIGHT
    assert state["other (/app/o.py:3)"][1]["fill"] != flamegraph.HIGHLIGHT
    assert "Matched: 100.0%" in dom        # main everywhere (under other too)
    # a box's own label finds just that box
    dom = run_chromium(chromium, tmp_path, "--dump-dom", path.as_uri() + "?s=^main:31$")
    state = chromium_state(dom)
    assert state["main (/app/main.py:31)"][1]["fill"] == flamegraph.HIGHLIGHT
    assert state["main (/app/main.py:30)"][1]["fill"] != flamegraph.HIGHLIGHT
    assert "Matched: 16.7%" in dom


def test_chromium_zooms_into_a_split_function_whole(chromium, tmp_path):
    path = tmp_path / "split.svg"
    path.write_text(render_svg(split_stacks()), encoding="utf-8")
    dom = run_chromium(chromium, tmp_path, "--dump-dom", path.as_uri() + "?z=^main$")
    state = chromium_state(dom)
    cls, m30 = state["main (/app/main.py:30)"]
    assert "hide" not in cls
    assert float(m30["x"]) == pytest.approx(10, abs=0.05)
    assert float(m30["width"]) == pytest.approx(1180 * 30 / 40, abs=0.05)
    cls, m31 = state["main (/app/main.py:31)"]
    assert "hide" not in cls
    assert float(m31["x"]) == pytest.approx(10 + 1180 * 30 / 40, abs=0.05)
    assert float(m31["width"]) == pytest.approx(1180 * 10 / 40, abs=0.05)
    assert "hide" in state["other (/app/o.py:3)"][0]
    assert "parent" in state["all"][0]
