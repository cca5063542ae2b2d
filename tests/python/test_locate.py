"""Finding and trusting _PyRuntime without _Py_DebugOffsets (CPython 3.11,
3.12), on pyenv's builds (a PIE with a shared libpython) run over modified
copies of their libpython (LD_LIBRARY_PATH: their RUNPATH gives way):

* stripped (``strip --strip-all``: .symtab gone, .dynsym and the section
  headers kept, as distributions ship it): found by its .PyRuntime section,
  and by its symbol _PyRuntime alone (a locate request without the
  section);
* its .PyRuntime section renamed (the runtime's bytes where they were):
  found by the symbol alone; a request without the symbol finds nothing,
  and says which CPython the file is;
* the size of _PyRuntime changed in .dynsym and in the section header to
  a debug build's (the layout pyframes does not know): refused by name,
  with both sizes, never read.

Oracles: the target's own view of its stacks (targets/threads.py), its own
platform.python_version(), and sizeof(_PyRuntimeState) as the unmodified
libpython's symbol table gives it.
"""

import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

from conftest import in_sandbox, older_interpreters, own_version
from livetarget import LiveTarget
from oracle import compare_views, keys

CLI_TIMEOUT = 120


def _params():
    chosen = [i for i in older_interpreters("all") if i.name.startswith("pyenv-")]
    if chosen:
        return [pytest.param(i, id=i.name) for i in chosen]
    return [pytest.param(None, id="no-older-interpreter")]


def _ask(python, code):
    return subprocess.run([python, "-E", "-s", "-c", code], capture_output=True, text=True,
                          timeout=60, check=True).stdout.strip()


def _require(tool):
    path = shutil.which(tool)
    if path is None:
        if in_sandbox():
            pytest.fail("%s is missing" % tool)
        pytest.skip("no %s" % tool)
    return path


# ---- ELF: the symbol _PyRuntime and the .PyRuntime section header -------

def _sections(data):
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    heads = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
             for i in range(shnum)]
    names = heads[shstrndx][4]

    def name(off, at):
        return bytes(data[off + at:data.index(b"\0", off + at)])
    return [(shoff + i * shentsize, name(names, h[0]), h) for i, h in enumerate(heads)], name


def _runtime_entries(data):
    """[(offset of the 8-byte size field, its value)] of the symbol
    _PyRuntime in .dynsym and .symtab and of the .PyRuntime section header."""
    sections, name = _sections(data)
    found = []
    for at, sname, h in sections:
        if sname == b".PyRuntime":
            found.append((at + 32, h[5]))
        if h[1] in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            strtab = sections[h[6]][2]
            for k in range(h[5] // 24):
                entry = h[4] + k * 24
                st_name, = struct.unpack_from("<I", data, entry)
                if name(strtab[4], st_name) == b"_PyRuntime":
                    found.append((entry + 16, struct.unpack_from("<Q", data, entry + 16)[0]))
    return found


# ---- the copies ------------------------------------------------------------

class Copies(object):
    pass


@pytest.fixture(scope="module", params=_params())
def copies(request, tmp_path_factory):
    interp = request.param
    if interp is None:
        if in_sandbox():
            pytest.fail("no pyenv CPython 3.11/3.12 (PYFRAMES_OLDER_PYTHONS)")
        pytest.skip("no pyenv CPython 3.11/3.12")
    strip, objcopy = _require("strip"), _require("objcopy")
    libdir, soname = _ask(interp.path, "import sysconfig; print(sysconfig.get_config_var("
                          "'LIBDIR'), sysconfig.get_config_var('INSTSONAME'))").split()
    original = os.path.join(libdir, soname)
    assert os.path.isfile(original), original
    base = tmp_path_factory.mktemp("locate-%s" % interp.name)
    c = Copies()
    c.interp, c.soname = interp, soname
    c.version = own_version(interp.path)
    with open(original, "rb") as f:
        sizes = set(v for _, v in _runtime_entries(f.read()))
    assert len(sizes) == 1, sizes  # the symbol and the section agree
    c.runtime_size = sizes.pop()
    c.dirs = {}
    stripped = base / "stripped"
    stripped.mkdir()
    subprocess.run([strip, "--strip-all", "-o", str(stripped / soname), original], check=True)
    c.dirs["stripped"] = str(stripped)
    renamed = base / "renamed"
    renamed.mkdir()
    subprocess.run([objcopy, "--rename-section", ".PyRuntime=.PyRuntimX",
                    str(stripped / soname), str(renamed / soname)], check=True)
    c.dirs["renamed"] = str(renamed)
    # a debug build's _PyRuntime is larger (3.12: 475960 bytes, not 459944)
    c.debug_size = c.runtime_size + 16016
    resized = base / "resized"
    resized.mkdir()
    data = bytearray((stripped / soname).read_bytes())
    entries = _runtime_entries(data)
    assert len(entries) == 2, entries  # .dynsym and the section header
    for at, _ in entries:
        struct.pack_into("<Q", data, at, c.debug_size)
    (resized / soname).write_bytes(bytes(data))
    c.dirs["resized"] = str(resized)
    with open(str(stripped / soname), "rb") as f:
        data = f.read()
    assert not any(s[1] == b".symtab" for s in _sections(data)[0]), "strip kept .symtab"
    return c


def _target(copies, which, tmp_path):
    """The threads scenario over a copy of libpython (not started)."""
    return LiveTarget(copies.interp.path, "threads.py", str(tmp_path / which),
                      env={"LD_LIBRARY_PATH": copies.dirs[which]})


def _loaded(pid, soname):
    """The path of the libpython process pid has mapped."""
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            if line.rstrip().endswith("/" + soname):
                return line.split(None, 5)[5].strip()
    return None


def _cli(cli_env, *args):
    return subprocess.run([sys.executable, "-m", "pyframes"] + [str(a) for a in args],
                          capture_output=True, text=True, timeout=CLI_TIMEOUT, env=cli_env,
                          stdin=subprocess.DEVNULL)


def _assert_read(target, copies, cli_env):
    res = _cli(cli_env, "dump", target.pid, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["python"]["version"] == copies.version
    got = {th["native_thread_id"]: [(f["function"], f["filename"], f["line"])
                                    for f in th["frames"]]
           for interp in doc["interpreters"] for th in interp["threads"]}
    expected = {tid: keys(frames) for tid, frames in target.views.items()}
    problems = compare_views(expected, got, "target's view", "pyframes dump --json")
    assert not problems, "\n".join(problems)


def _locate(pid, methods):
    """pyframes.target.locate_runtime over /proc/PID/maps, as a debugger
    hands its address space in, with only these methods."""
    from pyframes import target as api
    rows = []
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split(None, 5)
            start, end = (int(x, 16) for x in parts[0].split("-"))
            rows.append((start, end, int(parts[2], 16), parts[1],
                         parts[5].strip() if len(parts) > 5 else None))
    mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
    try:
        def read(addr, size):
            data = os.pread(mem.fileno(), size, addr)
            if len(data) != size:
                raise OSError("short read at 0x%x" % addr)
            return data
        return api.locate_runtime(read, rows, 0, methods, target_name="process %d" % pid)
    finally:
        mem.close()


def test_stripped_libpython(copies, cli_env, pyframes, tmp_path):
    """.dynsym and the section headers survive strip --strip-all: found by
    the section, and by the symbol alone."""
    with _target(copies, "stripped", tmp_path) as target:
        path = _loaded(target.pid, copies.soname)
        assert path == os.path.join(copies.dirs["stripped"], copies.soname), path
        _assert_read(target, copies, cli_env)
        for methods, how in ((("section",), "the .PyRuntime section of " + path),
                             (("symbol",), "the symbol _PyRuntime of " + path)):
            addr, info, found_how, error = _locate(target.pid, methods)
            assert error is None, (methods, error)
            assert found_how == how
            assert info.version == copies.version


def test_symbol_alone(copies, cli_env, pyframes, tmp_path):
    """Without the .PyRuntime section, the symbol _PyRuntime of .dynsym
    finds it; a request without the symbol finds nothing, and names the
    version the file says."""
    with _target(copies, "renamed", tmp_path) as target:
        path = _loaded(target.pid, copies.soname)
        _assert_read(target, copies, cli_env)
        addr, info, how, error = _locate(target.pid, ("symbol",))
        assert error is None and how == "the symbol _PyRuntime of " + path, error
        addr, info, how, error = _locate(target.pid, ("section", "scan"))
        assert addr is None and isinstance(error, pyframes.NotPython), error
        assert str(error).startswith("no CPython runtime found in process %d: " % target.pid)
        assert "%s says it is CPython %s" % (path, copies.version) in str(error), str(error)


def test_unknown_layout_is_refused(copies, cli_env, pyframes, tmp_path):
    """A runtime of another size than the layout pyframes carries for its
    version (a debug build's) is refused by name, through the PID reader
    and a debugger's request alike."""
    with _target(copies, "resized", tmp_path) as target:
        minor = ".".join(copies.version.split(".")[:2])
        want = ("unsupported CPython %s build: its _PyRuntime is %d bytes, not the %d of the "
                "CPython %s layout pyframes knows (a debug or otherwise modified build, whose "
                "layout it does not guess)" % (copies.version, copies.debug_size,
                                               copies.runtime_size, minor))
        res = _cli(cli_env, "dump", target.pid)
        assert res.returncode == 1 and res.stdout == "", res
        assert res.stderr == "pyframes: error: %s\n" % want, res.stderr
        addr, info, how, error = _locate(target.pid, ("symbol", "section", "scan"))
        assert addr is None and isinstance(error, pyframes.UnsupportedVersion), error
        assert str(error) == want
        assert info.version == copies.version
