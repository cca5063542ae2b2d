"""Free-threaded tables from CPython's own headers.

No free-threaded interpreter can be installed here, but the -dev headers
of CPython 3.13, 3.14 and 3.15 carry both flavours of `_Py_DebugOffsets`:
ft/emit_debug_offsets.c, compiled against them with and without
`Py_GIL_DISABLED`, prints the exact table a default and a free-threaded
build of that version hold at `_PyRuntime`.  The library must read each
flavour from the table itself (the `free_threaded` field, cross-checked by
the object header size, and every offset) and refuse nothing it should
read: probed through a reader over that memory.
"""

import os
import shutil
import struct
import subprocess

import pytest

import debugger_util as du

HERE = os.path.dirname(os.path.abspath(__file__))
EMITTER = os.path.join(HERE, "ft", "emit_debug_offsets.c")
VERSIONS = ("3.13", "3.14", "3.15")
BASE = 0x7f0000001000


def _table(version, free_threaded, tmp_path):
    include = "/usr/include/python%s" % version
    # 3.13 keeps the table in pycore_runtime.h, later versions in their own header
    header = "pycore_runtime.h" if version == "3.13" else "pycore_debug_offsets.h"
    if not os.path.isfile(os.path.join(include, "internal", header)):
        if du.in_sandbox():
            pytest.fail("python%s-dev headers missing from the sandbox root" % version)
        pytest.skip("no python%s-dev headers" % version)
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler")
    exe = str(tmp_path / ("emit-%s-%s" % (version, "ft" if free_threaded else "default")))
    argv = [cc, "-w", "-o", exe, "-I" + include, EMITTER]
    if version == "3.13":  # see the emitter
        argv[1:1] = ["-no-pie", "-Wl,--unresolved-symbols=ignore-all"]
    if free_threaded:
        argv.insert(1, "-DPy_GIL_DISABLED=1")
    subprocess.run(argv, check=True, capture_output=True, timeout=120)
    out = subprocess.run([exe], check=True, capture_output=True, timeout=60).stdout
    return bytes.fromhex(out.decode().strip())


@pytest.mark.parametrize("free_threaded", [False, True], ids=["default", "free-threaded"])
@pytest.mark.parametrize("version", VERSIONS)
def test_probe_reads_either_flavour(version, free_threaded, tmp_path):
    du.require(None, None)
    import pyframes
    from pyframes import target as api

    raw = _table(version, free_threaded, tmp_path)
    assert raw[:8] == b"xdebugpy"
    hexversion, flag = struct.unpack_from("<QQ", raw, 8)
    assert flag == (1 if free_threaded else 0)
    memory = raw + bytes(4096)

    def read(addr, size):
        off = addr - BASE
        if off < 0 or off + size > len(memory):
            raise OSError("unmapped")
        return memory[off:off + size]

    info = api.probe_runtime(read, BASE)
    assert info.free_threaded == free_threaded
    assert info.hexversion == hexversion
    assert "%d.%d" % (info.major, info.minor) == version
    assert pyframes  # the package imported from the tree under test


@pytest.mark.parametrize("version", VERSIONS)
def test_flavour_must_match_the_object_header(version, tmp_path):
    """A table whose free_threaded word disagrees with its object header
    size (a corrupt or hostile table) is refused, by name."""
    du.require(None, None)
    from pyframes import errors
    from pyframes import target as api

    for free_threaded in (False, True):
        raw = bytearray(_table(version, free_threaded, tmp_path))
        struct.pack_into("<Q", raw, 16, 0 if free_threaded else 1)
        memory = bytes(raw) + bytes(4096)

        def read(addr, size, memory=memory):
            off = addr - BASE
            if off < 0 or off + size > len(memory):
                raise OSError("unmapped")
            return memory[off:off + size]

        with pytest.raises(errors.PyframesError) as e:
            api.probe_runtime(read, BASE)
        assert e.value.code == errors.PYF_EOFFSETS, str(e.value)
        with pytest.raises(errors.PyframesError) as e:  # the open says why
            api.open_reader(read, BASE).close()
        assert e.value.code == errors.PYF_EOFFSETS and "byte header" in str(e.value), \
            str(e.value)


# ---- a real free-threaded interpreter, where the machine has one ----

def _free_threaded_interpreters():
    from conftest import INTERPRETERS
    found = [i for i in INTERPRETERS if i.kind == "free-threaded"]
    if found:
        return [pytest.param(i, id=i.name) for i in found]
    return [pytest.param(None, id="none")]


@pytest.mark.parametrize("interp", _free_threaded_interpreters())
def test_live_free_threaded_interpreter(interp, cli_env, tmp_path):
    """`python3 -m pyframes dump --all --json` of a free-threaded process
    (several threads) equals its own view of its stacks; the header says no
    thread holds a GIL."""
    import json
    import subprocess
    import sys
    if interp is None:
        pytest.skip("no free-threaded CPython here (python3.13t/3.14t/3.15t on PATH, or "
                    "PYFRAMES_FT_PYTHON): Debian has no such package and no source package "
                    "to build one; the synthetic images of tests/c/test_free_threaded.c "
                    "stand in")
    with du.LiveTarget(interp.path, depth=7, workdir=str(tmp_path)) as target:
        out = subprocess.run([sys.executable, "-m", "pyframes", "dump", "--all", "--json",
                              str(target.pid)], env=cli_env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        document = json.loads(out.stdout)
        assert document["python"]["free_threaded"] is True, document["python"]
        problems = du.own_view_mismatches(document, target)
        assert not problems, "\n".join(problems)
        for interp_doc in document["interpreters"]:
            for thread in interp_doc["threads"]:
                assert thread["holds_gil"] is None, thread
        text = subprocess.run([sys.executable, "-m", "pyframes", "dump", "--all",
                               str(target.pid)], env=cli_env, capture_output=True, text=True,
                              timeout=120).stdout
        assert "free-threaded: no GIL" in text, text
