"""Scenarios (d)-(g): qualified names, lambdas, non-ASCII names, synthetic files.

* "nested": ``Outer.Inner.method.<locals>.inner``.
* "local-class": ``factory.<locals>.Local.run.<locals>.deeper`` (a class
  defined in a function, a closure in its method).
* "lambdas": a module-level ``<lambda>`` called by a recursive
  ``use_lambdas.<locals>.<lambda>`` and by a lambda in a class body
  (``Holder.<lambda>``).
* "non-ascii": modules written at run time to files whose names hold each
  string kind -- Latin-1 (UCS1), BMP (UCS2), astral (UCS4) -- defining
  identifiers of the same kinds; the stack crosses all three files.  The
  innermost line has non-ASCII text before the blocking call (columns are
  UTF-8 byte offsets).
* "import-time": a thread blocked at module level of a module it imports
  (``<module>`` under the frozen importlib frames).
* "synthetic": functions compiled with the file name ``<synthetic-Ω>``.
* "synthetic-exec": module-level code compiled as ``<synthetic-é-exec>`` and
  run by exec().
"""

import os
import sys
import unicodedata

import _common

H = _common.Harness.from_argv()


class Outer:
    class Inner:
        def method(self):
            def inner():
                H.record(); os.read(H.fd(), 1)
            return inner()


def run_nested():
    Outer.Inner().method()


def factory():
    class Local:
        def run(self):
            marker = "closure"
            def deeper():
                assert marker == "closure"
                H.record(); os.read(H.fd(), 1)
            deeper()
    return Local


def run_local_class():
    factory()().run()


blocking_lambda = lambda: (H.record(), os.read(H.fd(), 1))


class Holder:
    call = lambda self, f: f()


def use_lambdas():
    descend = lambda n: Holder().call(blocking_lambda) if n == 0 else descend(n - 1)
    descend(2)


# Identifiers of each string kind.  Python normalizes identifiers with NFKC,
# so use letters that NFKC leaves alone (Fraktur capitals would become ASCII).
LATIN1_MODULE = "latin_é_mod"          # UCS1 file name
BMP_MODULE = "bmp_Ωμεγα_中文"           # UCS2 file name
ASTRAL_MODULE = "astral_𐌰𐌱"           # UCS4 file name
IMPORT_MODULE = "import_blocker_ü"

SOURCES = {
    LATIN1_MODULE: '''\
class Café:
    def déjà_vu(self, then):
        return then()
''',
    BMP_MODULE: '''\
class Ωμεγα:
    class 内部:
        def 方法(self, then):
            return then()
''',
    ASTRAL_MODULE: '''\
import os
import _common

H = _common.current()


def 𐌰𐌲𐌰():
    def 𠀋():
        𐌷 = H; 𐌷.record(); os.read(𐌷.fd(), 1)
    return 𠀋()
''',
    IMPORT_MODULE: '''\
import os
import _common

H = _common.current()
ready = True
H.record(); os.read(H.fd(), 1)
''',
}

for _name in ("Café", "déjà_vu", "Ωμεγα", "内部", "方法", "𐌰𐌲𐌰", "𠀋", "𐌷"):
    assert _name.isidentifier() and unicodedata.normalize("NFKC", _name) == _name, _name
assert max(map(ord, "Café.déjà_vu")) < 0x100
assert 0x100 <= max(map(ord, "Ωμεγα.内部.方法")) < 0x10000
assert max(map(ord, "𐌰𐌲𐌰.<locals>.𠀋")) >= 0x10000


def write_modules():
    moddir = os.path.join(H.workdir, "mods")
    os.makedirs(moddir, exist_ok=True)
    for name, src in SOURCES.items():
        with open(os.path.join(moddir, name + ".py"), "w", encoding="utf-8") as f:
            f.write(src)
    sys.path.insert(0, moddir)


def naïve_entry():
    latin = __import__(LATIN1_MODULE)
    bmp = __import__(BMP_MODULE)
    astral = __import__(ASTRAL_MODULE)
    ucs4 = getattr(astral, "𐌰𐌲𐌰")
    ucs2 = getattr(getattr(bmp, "Ωμεγα"), "内部")()
    ucs1 = getattr(latin, "Café")()
    getattr(ucs1, "déjà_vu")(lambda: getattr(ucs2, "方法")(ucs4))


def run_import_time():
    __import__(IMPORT_MODULE)


SYNTH_SRC = '''\
def synthetic_entry():
    return synthetic_leaf(3)

def synthetic_leaf(n):
    if n:
        return synthetic_leaf(n - 1)
    H.record(); os.read(H.fd(), 1)
'''

SYNTH_EXEC_SRC = '''\
counter = 0
for counter in range(3):
    pass
H.record(); os.read(H.fd(), 1)
'''


def run_synthetic():
    ns = {"H": H, "os": os}
    exec(compile(SYNTH_SRC, "<synthetic-Ω>", "exec"), ns)
    ns["synthetic_entry"]()


def run_synthetic_exec():
    ns = {"H": H, "os": os}
    exec(compile(SYNTH_EXEC_SRC, "<synthetic-é-exec>", "exec"), ns)


def main():
    write_modules()
    H.start(run_nested, name="nested")
    H.start(run_local_class, name="local-class")
    H.start(use_lambdas, name="lambdas")
    H.start(naïve_entry, name="non-ascii")
    H.start(run_import_time, name="import-time")
    H.start(run_synthetic, name="synthetic")
    H.start(run_synthetic_exec, name="synthetic-exec")
    H.publish_and_block()


if __name__ == "__main__":
    main()
