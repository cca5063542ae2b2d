"""The line tables of CPython 3.10 (PEP 626 co_linetable) and 3.8/3.9
(co_lnotab), as the library decodes them (native/src/linetable.c,
pyf__linetable_lookup), against each interpreter's own mapping: every code
object reachable by compiling each .py file of its standard library
(targets/line_tables.py, run by that interpreter, writes each object's
table and the line CPython gives every instruction, by PyCode_Addr2Line
(a frame's f_lineno) and by the dis module), every instruction asked of
the decoder by a small driver built from the library's own source
(tests/c/linetable_check.c, with ASan and UBSan).  Zero differences, over
every instruction: a decoder that, like a widely used peer's, does not
advance the address past a "no line" range gets tens of thousands wrong.

These versions are still refused by name (their stacks are not read end to
end yet); the decoders are tested here directly."""

import os
import re
import shutil
import subprocess

import pytest

import conftest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
NATIVE = os.path.join(REPO, "native")
DUMP = os.path.join(HERE, "targets", "line_tables.py")
DRIVER = os.path.join(REPO, "tests", "c", "linetable_check.c")
# every version's standard library holds millions of instructions; far
# fewer means the dump lost its way
MIN_UNITS = 1000000
HEAP_VERSIONS = conftest.HEAP_VERSIONS


def _params():
    found = {i.minor: i for i in conftest.HEAP_INTERPRETERS}
    return [pytest.param(found.get(v), v, id="pyenv-" + v) for v in HEAP_VERSIONS]


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc:
        pytest.skip("no C compiler")
    exe = str(tmp_path_factory.mktemp("linetable") / "linetable_check")
    base = [cc, "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-O1", "-g",
            "-I", os.path.join(NATIVE, "src"), "-I", os.path.join(NATIVE, "include"),
            "-o", exe, DRIVER, os.path.join(NATIVE, "src", "linetable.c")]
    sanitized = base + ["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]
    if subprocess.run(sanitized, stderr=subprocess.DEVNULL).returncode != 0:
        subprocess.run(base, check=True)
    return exe


@pytest.mark.parametrize("interp,version", _params())
def test_line_tables_match_the_interpreter(interp, version, driver, tmp_path):
    if interp is None:
        if conftest.in_sandbox():
            pytest.fail("pyenv's CPython %s not found inside the sandbox" % version)
        pytest.skip("pyenv's CPython %s not found" % version)
    dump = str(tmp_path / "lines.txt")
    subprocess.run([interp.path, DUMP, dump], check=True, timeout=600)
    with open(dump) as f:
        last = f.read().splitlines()[-1]
    files = re.fullmatch(r"files (\d+) skipped (\d+)", last)
    assert files and int(files.group(1)) > 1000, last
    out = subprocess.run([driver, dump], check=True, timeout=600, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    counts = re.search(r"^objects (\d+) units (\d+) differences (\d+) dis_differences (\d+)$",
                       out, re.M)
    assert counts, out
    objects, units, diffs, dis_diffs = (int(n) for n in counts.groups())
    print("CPython %s: %s files (%s skipped), %d code objects, %d instructions, "
          "%d differences (PyCode_Addr2Line), %d between the interpreter's two mappings"
          % (version, files.group(1), files.group(2), objects, units, diffs, dis_diffs))
    assert units >= MIN_UNITS, out
    # the oracle agrees with itself: PyCode_Addr2Line and the dis module
    assert dis_diffs == 0, out
    assert diffs == 0, out
