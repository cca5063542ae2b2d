"""An interactive flame graph as one self-contained SVG document.

:func:`render_svg` merges stacks (root first) into a call tree and draws it
the classic way: the total ("all") at the bottom, callees above their
callers, widths proportional to samples, children ordered by name.  The
document has no external references: an inline ``<style>`` and an inline
``<script>`` give hover details, click-to-zoom, "Reset Zoom" and a search
(the "Search" control, Ctrl-F or "/") that highlights matching frames (by
``function (filename:line)``, the box's label or its function, so that a
function split by line is found in all its boxes) and shows the share of
samples they cover.  A function with several boxes under one caller (one
per line) labels each ``function:line``.  Without scripts (an image viewer)
it is still a complete picture with native ``<title>`` tooltips.

Standard library only, Python 3.9+ (it runs inside gdb's and lldb's
embedded interpreters).
"""

import zlib

from .escaping import escape

__all__ = ["render_svg", "frame_label", "frame_color", "diff_color", "box_name"]

WIDTH = 1200              # px, the whole image
XPAD = 10                 # px left and right of the frames
FULL = WIDTH - 2 * XPAD   # px spanned by the "all" frame
FRAME_HEIGHT = 16         # px per stack level (the rect is 1 px less)
FONT_SIZE = 12
CHAR_WIDTH = 7.08         # px per character of a label, estimated (0.59 em)
MIN_WIDTH = 0.1           # px: narrower frames are left out
MAX_FRAMES = 20000        # frames drawn at most (the widest are kept)
TOP = 3 * FONT_SIZE       # px above the frames, without a subtitle
BOTTOM = 2 * FONT_SIZE + 10   # px below the frames (the details line)
NEUTRAL = "rgb(200,200,200)"
HIGHLIGHT = "rgb(230,0,230)"

def _clean(text):
    """``text`` with characters XML cannot hold, and every other control
    or bidi character, written as escapes (pyframes.escaping)."""
    return escape(text)


def _xml(text):
    """Cleaned ``text`` escaped for element content and attribute values."""
    return (_clean(text).replace("&", "&amp;").replace("<", "&lt;")
            .replace(">", "&gt;").replace('"', "&quot;"))


def frame_label(frame):
    """``function (filename:line)``, as in the collapsed format; without
    ``:line`` when the line is None, and just ``function`` when there is
    neither a file name nor a line (a thread label)."""
    function, filename, line = frame
    if not filename and line is None:
        return function
    return "%s (%s%s)" % (function, filename, "" if line is None else ":%d" % line)


def _crc(text):
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def frame_color(function, filename):
    """The fill of a frame: a warm color whose family (red to yellow) comes
    from a stable hash of the file name, varied slightly by the function;
    grey for frames without a real file (empty, or ``<...>``)."""
    jitter = (_crc(function) & 0xFF) / 255.0 - 0.5
    if not filename or filename.startswith("<"):
        grey = 200 + int(24 * jitter)
        return "rgb(%d,%d,%d)" % (grey, grey, grey)
    h = _crc(filename)
    red = 205 + int(50 * (h & 0xFF) / 255.0)
    green = 30 + int(170 * ((h >> 8) & 0xFF) / 255.0) + int(40 * jitter)
    blue = int(55 * ((h >> 16) & 0xFF) / 255.0)
    return "rgb(%d,%d,%d)" % (red, max(0, min(230, green)), blue)


def fit_label(name, width):
    """What fits of ``name`` in a frame ``width`` px wide: all of it, its
    start and "..", or nothing (under three characters)."""
    chars = int((width - 6) // CHAR_WIDTH)
    if chars < 3:
        return ""
    return name if len(name) <= chars else name[:chars - 2] + ".."


def _digits(width):
    """Decimals for the geometry of a frame ``width`` px wide: enough to
    place it within 1/10,000 of its width, so that zooming into a narrow
    frame still lays its callees out to the pixel."""
    digits = 2
    while digits < 6 and 0.5 * 10.0 ** -digits > width * 1e-4:
        digits += 1
    return digits


def _merge(stacks):
    """The call tree of ``stacks``: a node is ``[count, {frame: node}]``."""
    root = [0, {}]
    for frames, count in stacks:
        if count <= 0:
            continue
        node = root
        node[0] += count
        for frame in frames:
            line = frame[2]
            key = (str(frame[0]), str(frame[1] or ""), None if line is None else int(line))
            child = node[1].get(key)
            if child is None:
                child = node[1][key] = [0, {}]
            child[0] += count
            node = child
    return root


def _order(item):
    function, filename, line = item[0]
    return (function, filename, -1 if line is None else line)


_NO_NODE = [0, {}]


def _layout(root, base=None):
    """``[(frame or None for "all", count, depth, first sample, split,
    base count)]`` in depth-first order, children left to right by name,
    without frames narrower than MIN_WIDTH and, past MAX_FRAMES, without the
    narrowest; ``split``: the function has more than one box under this
    parent; ``base count``: the same call path's count in the tree ``base``
    (0 when absent or without a base)."""
    least = MIN_WIDTH * root[0]    # a frame is drawn when count * FULL >= least
    out = []
    todo = [(None, root, 0, 0, False, base or _NO_NODE)]
    while todo:
        key, node, depth, start, split, was = todo.pop()
        out.append((key, node[0], depth, start, split, was[0]))
        placed = []
        pos = start
        functions = {}
        for child_key in node[1]:
            functions[child_key[0]] = functions.get(child_key[0], 0) + 1
        for child_key, child in sorted(node[1].items(), key=_order):
            if child[0] * FULL >= least:
                placed.append((child_key, child, depth + 1, pos,
                               functions[child_key[0]] > 1, was[1].get(child_key, _NO_NODE)))
            pos += child[0]
        placed.reverse()
        todo.extend(placed)
    if len(out) > MAX_FRAMES:
        # A caller is at least as wide as its callees and shallower, so it
        # sorts first: whatever is kept keeps its callers.
        widest = sorted(range(len(out)), key=lambda i: (-out[i][1], out[i][2], i))
        out = [out[i] for i in sorted(widest[:MAX_FRAMES])]
    return out


def box_name(frame, split):
    """The text in a frame's box: the function, and ``:line`` when the
    function is split (more than one box, one per line, under one
    parent)."""
    function, _, line = frame
    return "%s:%d" % (function, line) if split and line is not None else function


def diff_color(share, base_share):
    """The fill of a box of a differential flame graph: red where the call
    path's share of the samples grew since the base profile, blue where it
    shrank, white where it is the same; the stronger, the larger the change
    against the larger of the two shares (a path new in this profile is full
    red)."""
    larger = max(share, base_share)
    change = (share - base_share) / larger if larger > 0 else 0.0
    fade = int(round(255 * (1.0 - min(1.0, abs(change)))))
    if change >= 0:
        return "rgb(255,%d,%d)" % (fade, fade)
    return "rgb(%d,%d,255)" % (fade, fade)


def render_svg(stacks, *, title="pyframes", subtitle="", unit="samples", base=None):
    """The flame graph of ``stacks`` as an SVG document (text).

    ``stacks``: ``(frames, count)`` pairs, ``frames`` root first, each frame
    ``(function, filename, line or None)``, ``count`` samples (pairs with
    equal frames are summed; counts of 0 or less are ignored).  Frames merge when
    the whole ``(function, filename, line)`` is equal, so each box is one
    ``function (filename:line)`` of the collapsed format; a box shows its
    function, and ``function:line`` when the function has several boxes under
    one caller (one per line: it is split by line).  ``title`` and
    ``subtitle`` head the image; ``unit`` names the counts in tooltips.

    ``base``: stacks of an earlier profile, for a differential flame graph:
    the boxes are this profile's, each colored by how its call path's share
    of all samples changed from the base's (:func:`diff_color`), its tooltip
    giving both shares.  Shares, not counts, are compared, so profiles of
    one workload taken at different rates or for different times compare as
    unchanged.
    """
    root = _merge(stacks)
    total = root[0]
    base_root = _merge(base) if base is not None else None
    base_total = base_root[0] if base_root is not None else 0
    nodes = _layout(root, base_root) if total else []
    depth = max(n[2] for n in nodes) + 1 if nodes else 4
    top = TOP + (2 * FONT_SIZE if subtitle else 0)
    height = top + depth * FRAME_HEIGHT + BOTTOM
    base = height - BOTTOM
    scale = FULL / total if total else 0.0

    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
        '<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
        'viewBox="0 0 %d %d" onload="init(evt)">\n' % (WIDTH, height, WIDTH, height),
        '<defs><linearGradient id="background" y1="0" y2="1" x1="0" x2="0">'
        '<stop stop-color="#eeeeee" offset="5%"/><stop stop-color="#eeeeb0" offset="95%"/>'
        '</linearGradient></defs>\n',
        _STYLE,
        _SCRIPT % {"xpad": XPAD, "full": FULL, "charw": CHAR_WIDTH, "fh": FRAME_HEIGHT,
                   "highlight": HIGHLIGHT},
        '<rect x="0" y="0" width="%d" height="%d" fill="url(#background)"/>\n' % (WIDTH, height),
        '<text id="title" x="%d" y="24">%s</text>\n' % (WIDTH // 2, _xml(title)),
    ]
    if subtitle:
        out.append('<text id="subtitle" x="%d" y="%d">%s</text>\n'
                   % (WIDTH // 2, 24 + 2 * FONT_SIZE, _xml(subtitle)))
    out.append('<text id="unzoom" class="hide" x="%d" y="24">Reset Zoom</text>\n'
               '<text id="search" x="%d" y="24">Search</text>\n'
               '<text id="details" x="%d" y="%d">&#160;</text>\n'
               '<text id="matched" class="hide" x="%d" y="%d">&#160;</text>\n'
               % (XPAD, WIDTH - XPAD, XPAD, height - 17, WIDTH - XPAD, height - 17))
    if not nodes:
        out.append('<text id="empty" x="%d" y="%d">no samples</text>\n'
                   % (WIDTH // 2, top + 2 * FRAME_HEIGHT))
    out.append('<g id="frames">\n')
    for key, count, level, start, split, was in nodes:
        function = None
        change = ""
        if base_root is not None:
            share = 100.0 * count / total
            was_share = 100.0 * was / base_total if base_total else 0.0
            change = " (base %.2f%%, %+.2f)" % (was_share, share - was_share)
        if key is None:
            name, label, fill = "all", "all", NEUTRAL
        else:
            name, label = _clean(box_name(key, split)), _clean(frame_label(key))
            if base_root is not None:
                fill = diff_color(share, was_share)
            else:
                fill = frame_color(key[0], key[1])
            if name != key[0]:
                function = _clean(key[0])
        digits = _digits(count * scale)
        x1 = round(XPAD + start * scale, digits)
        x2 = round(XPAD + (start + count) * scale, digits)
        y = base - (level + 1) * FRAME_HEIGHT
        text = fit_label(name, x2 - x1)
        out.append('<g%s%s><title>%s \u2014 %s %s, %.2f%%%s</title>'
                   '<rect x="%.*f" y="%d" width="%.*f" height="%d" fill="%s"/>' % (
                       "" if text == name else ' data-f="%s"' % _xml(name),
                       "" if function is None else ' data-fn="%s"' % _xml(function),
                       _xml(label), "{:,}".format(count), _xml(unit), 100.0 * count / total,
                       change,
                       digits, x1, y, digits, x2 - x1, FRAME_HEIGHT - 1, fill))
        if text:
            out.append('<text x="%.2f" y="%d">%s</text>' % (x1 + 3, y + 11, _xml(text)))
        out.append('</g>\n')
    out.append('</g>\n</svg>\n')
    return "".join(out)


_STYLE = """<style type="text/css"><![CDATA[
text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: #000; }
#title { text-anchor: middle; font-size: 17px; }
#subtitle { text-anchor: middle; fill: #a0a0a0; }
#empty { text-anchor: middle; font-size: 17px; fill: #a0a0a0; }
#search, #matched { text-anchor: end; }
#search, #unzoom { cursor: pointer; }
#search:hover, #unzoom:hover { fill: #c00; }
#frames > g { cursor: pointer; }
#frames > g:hover > rect { stroke: #000; stroke-width: 0.5; }
.hide { display: none; }
.parent { opacity: 0.5; }
]]></style>
"""

_SCRIPT = """<script type="text/ecmascript"><![CDATA[
"use strict";
var XPAD = %(xpad)d, FULL = %(full)d, CHARW = %(charw)r, FH = %(fh)d, EPS = 0.005;
var HIGHLIGHT = "%(highlight)s", SVGNS = "http://www.w3.org/2000/svg";
var nodes = [], hint = "", term = null, details, unzoomButton, searchButton, matched;

function byId(id) { return document.getElementById(id); }

function init() {
    details = byId("details"); unzoomButton = byId("unzoom");
    searchButton = byId("search"); matched = byId("matched");
    var frames = byId("frames"), groups = frames.children;
    for (var i = 0; i < groups.length; i++) {
        var g = groups[i], rect = g.getElementsByTagName("rect")[0];
        var text = g.getElementsByTagName("text")[0] || null;
        var title = g.getElementsByTagName("title")[0].textContent;
        var cut = title.lastIndexOf(" \\u2014 ");
        g.pfIndex = i;
        var name = g.hasAttribute("data-f") ? g.getAttribute("data-f")
                                            : (text ? text.textContent : "");
        nodes.push({g: g, rect: rect, text: text, title: title,
                    label: cut < 0 ? title : title.slice(0, cut), name: name,
                    fn: g.hasAttribute("data-fn") ? g.getAttribute("data-fn") : name,
                    xs: rect.getAttribute("x"), ws: rect.getAttribute("width"),
                    x: +rect.getAttribute("x"), w: +rect.getAttribute("width"),
                    y: +rect.getAttribute("y"), fill: rect.getAttribute("fill")});
    }
    hint = nodes.length + " frames: click one to zoom, Ctrl-F or / to search";
    details.textContent = hint;
    frames.addEventListener("click", function (e) {
        var n = nodeOf(e.target);
        if (n) zoom(n);
    });
    frames.addEventListener("mouseover", function (e) {
        var n = nodeOf(e.target);
        if (n) details.textContent = n.title;
    });
    frames.addEventListener("mouseout", function () { details.textContent = hint; });
    unzoomButton.addEventListener("click", unzoom);
    searchButton.addEventListener("click", function () {
        if (term === null) promptSearch(); else resetSearch();
    });
    document.addEventListener("keydown", onKey);
    applyQuery();
}

function nodeOf(el) {
    while (el && el.pfIndex === undefined) el = el.parentNode;
    return el ? nodes[el.pfIndex] : null;
}

function fit(name, w) {
    var chars = Math.floor((w - 6) / CHARW);
    if (chars < 3) return "";
    return name.length <= chars ? name : name.slice(0, chars - 2) + "..";
}

function place(n, x, w, xs, ws) {
    n.rect.setAttribute("x", xs || x.toFixed(2));
    n.rect.setAttribute("width", ws || w.toFixed(2));
    var s = fit(n.name, w);
    if (!n.text) {
        if (!s) return;
        n.text = document.createElementNS(SVGNS, "text");
        n.text.setAttribute("y", String(n.y + 11));
        n.g.appendChild(n.text);
    }
    n.text.setAttribute("x", (x + 3).toFixed(2));
    n.text.textContent = s;
}

function zoom(n, x0, x1) {
    if (n === nodes[0]) { unzoom(); return; }
    if (x0 === undefined) { x0 = n.x; x1 = n.x + n.w; }
    var ratio = FULL / (x1 - x0);
    for (var i = 0; i < nodes.length; i++) {
        var m = nodes[i], cls = m.g.classList;
        if (m.y <= n.y && m.x >= x0 - EPS && m.x + m.w <= x1 + EPS) {
            cls.remove("hide", "parent");
            place(m, XPAD + (m.x - x0) * ratio, m.w * ratio);
        } else if (m.y > n.y && m.x <= x0 + EPS && m.x + m.w >= x1 - EPS) {
            cls.remove("hide");
            cls.add("parent");
            place(m, XPAD, FULL);
        } else {
            cls.add("hide");
        }
    }
    unzoomButton.classList.remove("hide");
}

function unzoom() {
    for (var i = 0; i < nodes.length; i++) {
        var m = nodes[i];
        m.g.classList.remove("hide", "parent");
        place(m, m.x, m.w, m.xs, m.ws);
    }
    unzoomButton.classList.add("hide");
}

function matches(re, m) {
    return re.test(m.label) || re.test(m.name) || re.test(m.fn);
}

function zoomFunction(n) {
    // every box of n's function under n's caller: a function split by line
    // is zoomed as a whole
    var parent = null, x0 = n.x, x1 = n.x + n.w;
    for (var i = 0; i < nodes.length; i++) {
        var p = nodes[i];
        if (p.y === n.y + FH && p.x <= n.x + EPS && p.x + p.w >= n.x + n.w - EPS) parent = p;
    }
    for (var j = 0; parent && j < nodes.length; j++) {
        var m = nodes[j];
        if (m.y === n.y && m.fn === n.fn && m.x >= parent.x - EPS &&
                m.x + m.w <= parent.x + parent.w + EPS) {
            x0 = Math.min(x0, m.x);
            x1 = Math.max(x1, m.x + m.w);
        }
    }
    zoom(n, x0, x1);
}

function matcher(s) {
    try { return new RegExp(s); }
    catch (e) { return new RegExp(s.replace(/[.*+?^${}()|[\\]\\\\]/g, "\\\\$&")); }
}

function search(s) {
    var re = matcher(s), hits = [], covered = 0, end = -Infinity;
    for (var i = 1; i < nodes.length; i++) {
        var m = nodes[i];
        if (matches(re, m)) {
            m.rect.setAttribute("fill", HIGHLIGHT);
            hits.push(m);
        } else {
            m.rect.setAttribute("fill", m.fill);
        }
    }
    hits.sort(function (a, b) { return a.x - b.x || b.w - a.w; });
    for (var j = 0; j < hits.length; j++) {
        var h = hits[j], stop = h.x + h.w;
        if (stop > end) { covered += stop - Math.max(h.x, end); end = stop; }
    }
    term = s;
    matched.textContent = "Matched: " + (100 * covered / FULL).toFixed(1) + "%%";
    matched.classList.remove("hide");
    searchButton.textContent = "Reset Search";
}

function resetSearch() {
    for (var i = 0; i < nodes.length; i++) nodes[i].rect.setAttribute("fill", nodes[i].fill);
    term = null;
    matched.classList.add("hide");
    searchButton.textContent = "Search";
}

function promptSearch() {
    var s = prompt("Search function and file names, function:line (regular expression or text):",
                   term === null ? "" : term);
    if (s) search(s);
}

function onKey(e) {
    var plain = !e.ctrlKey && !e.metaKey && !e.altKey;
    if (((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) || (e.key === "/" && plain)) {
        e.preventDefault();
        promptSearch();
    } else if (e.key === "Escape") {
        resetSearch();
        unzoom();
    }
}

function applyQuery() {
    if (typeof URLSearchParams === "undefined" || !location.search) return;
    var q = new URLSearchParams(location.search), s = q.get("s"), z = q.get("z");
    if (s) search(s);
    if (z) {
        var re = matcher(z);
        for (var i = 1; i < nodes.length; i++) {
            if (matches(re, nodes[i])) { zoomFunction(nodes[i]); break; }
        }
    }
}
]]></script>
"""
