"""Launcher of test_real_programs.py: Debian's Sphinx building a
documentation set, again and again, in this process (main thread).

    python3 real_sphinx.py WORKDIR SECONDS

Writes a small documentation set under WORKDIR/src (DOCS documents with
nested sections, lists, tables, cross-references, highlighted code blocks,
and autodoc pages of stdlib modules), then runs Sphinx's own command line
(sphinx.cmd.build.build_main) over it with the html, text and xml
builders in turn, from scratch each time (-E, -a), until SECONDS have
passed or MAX_BUILDS builds.  When Sphinx reads its first document, the
launcher writes "ready" and a newline on stdout (the handshake).  No
network: no intersphinx, nothing fetched.
"""
import os
import sys
import time

from sphinx.cmd.build import build_main

DOCS = 24
MAX_BUILDS = 1000
AUTODOC = ("textwrap", "json", "fractions", "difflib")
_ready = False

CONF = '''
project = "real-program docs"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.todo", "sphinx.ext.napoleon",
              "sphinx.ext.viewcode"]
todo_include_todos = True
html_theme = "basic"


def setup(app):
    import __main__
    app.connect("source-read", __main__.source_read)
'''


def source_read(app, docname, source):
    global _ready
    if not _ready:
        _ready = True
        sys.stdout.write("ready\n")
        sys.stdout.flush()


def document(i):
    parts = ["doc-%d" % i, "=" * 20, "", ".. _doc-%d-top:" % i, ""]
    for s in range(4):
        title = "Section %d.%d" % (i, s)
        parts += [title, "-" * len(title), "",
                  "Text with *emphasis*, **strong**, ``literal`` and a reference to "
                  ":ref:`doc-%d-top` and :doc:`doc-%d`." % ((i + 1) % DOCS, (i + 2) % DOCS), ""]
        for sub in range(3):
            head = "Part %d.%d.%d" % (i, s, sub)
            parts += [head, "~" * len(head), "",
                      "* item one of %s" % head, "* item two", "",
                      "  * nested item", "",
                      ".. code-block:: python", "",
                      "   def f%d_%d(x):" % (s, sub),
                      "       return [y * %d for y in range(x) if y %% 3]" % sub, "",
                      ".. note:: A note in %s." % head, "",
                      ".. todo:: Something left in %s." % head, "",
                      "+-------+-------+", "| a     | b     |", "+=======+=======+",
                      "| %-5d | %-5d |" % (s, sub), "+-------+-------+", ""]
    if i < len(AUTODOC):
        parts += [".. automodule:: %s" % AUTODOC[i], "   :members:", ""]
    return "\n".join(parts) + "\n"


def write_docs(src):
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "conf.py"), "w") as f:
        f.write(CONF)
    index = ["Real program", "============", "", ".. toctree::", "   :maxdepth: 3", ""]
    index += ["   doc-%d" % i for i in range(DOCS)]
    with open(os.path.join(src, "index.rst"), "w") as f:
        f.write("\n".join(index) + "\n")
    for i in range(DOCS):
        with open(os.path.join(src, "doc-%d.rst" % i), "w") as f:
            f.write(document(i))


def main():
    workdir, seconds = sys.argv[1], float(sys.argv[2])
    src = os.path.join(workdir, "src")
    write_docs(src)
    deadline = time.monotonic() + seconds
    builders = ("html", "text", "xml")
    for n in range(MAX_BUILDS):
        if time.monotonic() >= deadline:
            break
        builder = builders[n % len(builders)]
        out = os.path.join(workdir, "out", builder)
        rc = build_main(["-b", builder, "-E", "-a", "-q", "-d",
                         os.path.join(workdir, "doctrees"), src, out])
        if rc != 0:
            sys.exit("sphinx-build -b %s failed: %d" % (builder, rc))


if __name__ == "__main__":
    main()
