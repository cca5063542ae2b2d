"""Unit tests of the ctypes binding: structure layouts against the header
(compiled with gcc), the struct layouts derived from them (_abi.Layout), the
error table, library lookup, the reader trampolines (exceptions must never
escape into C), and the conversion of a snapshot into the model."""

import ctypes
import os
import re
import shutil
import subprocess
import sys

import pytest

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_PKG = os.path.join(_REPO, "native", "python")
if _PKG not in sys.path:
    sys.path.insert(0, _PKG)

import pyframes  # noqa: E402
from pyframes import _abi, _convert, _loader, _readers, errors  # noqa: E402
from pyframes import target as target_module  # noqa: E402

HEADER = os.path.join(_REPO, "native", "include", "pyframes.h")

with open(HEADER) as _f:
    HEADER_TEXT = _f.read()

CONSTANTS = [
    "PYF_VERSION_MAJOR", "PYF_VERSION_MINOR", "PYF_VERSION_PATCH",
    "PYF_DEFAULT_MAX_DEPTH", "PYF_DEFAULT_MAX_THREADS",
    "PYF_DEFAULT_MAX_INTERPRETERS", "PYF_MAX_INTERPRETERS", "PYF_DEFAULT_MAX_STRING",
    "PYF_FRAME_NAME_TRUNCATED", "PYF_FRAME_NO_LOCATION",
    "PYF_FRAME_CODE_UNREADABLE", "PYF_FRAME_GENERATOR",
    "PYF_FRAME_ENTRY_FROM_C", "PYF_FRAME_COROUTINE", "PYF_FRAME_ASYNC_GENERATOR",
    "PYF_THREAD_COMPLETE", "PYF_THREAD_HOLDS_GIL",
    "PYF_THREAD_GIL_KNOWN", "PYF_THREAD_MAIN", "PYF_SNAP_ONE_THREAD",
    "PYF_THREAD_SAME_FRAMES", "PYF_COPY_ARRAYS", "PYF_COPY_FREED", "PYF_COPY_SAME_ARRAYS",
    "PYF_COPY_KEPT", "PYF_COPY_SAME_FACTS",
    "PYF_SNAPSHOT_COPY_SIZE",
    "PYF_SAMPLE_GIL", "PYF_SAMPLE_TIMES", "PYF_SAMPLE_END_DONE",
    "PYF_SAMPLE_END_FULL", "PYF_SAMPLE_END_GONE", "PYF_SAMPLE_END_SIGNAL",
    "PYF_SAMPLE_MAX_TABLES", "PYF_SAMPLE_CODES", "PYF_SAMPLE_BATCH_SIZE",
    "PYF_SNAP_THREAD_FACTS", "PYF_SNAP_GIL", "PYF_THREAD_FACTS_SIZE", "PYF_FACT_NAME",
    "PYF_FACT_NAME_UNREADABLE", "PYF_FACT_GIL_KNOWN", "PYF_FACT_GIL_HOLDS",
    "PYF_FACT_GIL_HOLDER", "PYF_FACT_GIL_REQUEST_KNOWN", "PYF_FACT_GIL_REQUESTED",
    "PYF_FACT_NO_GIL", "PYF_FACT_EXCEPTION", "PYF_FACT_EXC_HANDLED",
    "PYF_FACT_EXC_UNREADABLE", "PYF_FACT_MESSAGE_TRUNCATED", "PYF_FACT_MESSAGE_PARTIAL",
    "PYF_FACT_MESSAGE_MAX",
    "PYF_READS_STOPPED", "PYF_READS_RUNNING", "PYF_READS_CORE",
    "PYF_CORE_ELF", "PYF_CORE_MINIDUMP", "PYF_CORE_PLAIN", "PYF_CORE_ZSTD", "PYF_CORE_XZ",
    "PYF_CORE_LZ4", "PYF_CORE_GZIP", "PYF_CORE_SIGNAL", "PYF_CORE_SIGINFO",
    "PYF_CORE_CUT_SHORT", "PYF_CORE_NOTES_PARTIAL", "PYF_CORE_STREAM_ENDED",
    "PYF_CORE_THREAD_SIGNALLED", "PYF_CORE_THREAD_REGS", "PYF_CORE_THREAD_SYSCALL",
    "PYF_CORE_REGS_MAX", "PYF_CORE_THREAD_SIZE", "PYF_CORE_FILE_USED",
    "PYF_CORE_FILE_UNCHECKED", "PYF_CORE_FILE_MISSING", "PYF_CORE_FILE_MISMATCH",
    "PYF_CORE_FILE_UNREADABLE", "PYF_CORE_FILE_EXECUTABLE", "PYF_CORE_FILE_SIZE",
    "PYF_NATIVE_ACTIVATION", "PYF_NATIVE_MAX_FRAMES", "PYF_NATIVE_FRAME_SIZE",
]


def _c_layout_program():
    lines = ["#include <stdio.h>", "#include <stddef.h>",
             "#include <stdalign.h>",
             "#define PYF_STATIC_API",  # pyf_snapshot_copy: the binding's own call
             '#include "pyframes.h"',
             "int main(void) {"]
    for name, cls in _abi.STRUCTURES.items():
        lines.append('printf("size %s %%zu %%zu\\n", sizeof(%s), alignof(%s));'
                     % (name, name, name))
        for field, _ in cls._fields_:
            lines.append(
                'printf("field %s.%s %%zu %%zu\\n", offsetof(%s, %s), '
                'sizeof(((%s *)0)->%s));' % (name, field, name, field, name, field))
    for const in CONSTANTS:
        lines.append('printf("const %s %%llu\\n", (unsigned long long)(%s));'
                     % (const, const))
    lines.append("return 0; }")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def c_layout(tmp_path_factory):
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("no C compiler")
    tmp = tmp_path_factory.mktemp("layout")
    src = tmp / "layout.c"
    exe = tmp / "layout"
    src.write_text(_c_layout_program())
    subprocess.run([gcc, "-std=c11", "-Wall", "-Werror", "-I",
                    os.path.dirname(HEADER), "-o", str(exe), str(src)],
                   check=True)
    out = subprocess.run([str(exe)], check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    sizes, fields, consts = {}, {}, {}
    for line in out.splitlines():
        kind, name, *nums = line.split()
        nums = [int(n) for n in nums]
        if kind == "size":
            sizes[name] = tuple(nums)
        elif kind == "field":
            fields[name] = tuple(nums)
        else:
            consts[name] = nums[0]
    return sizes, fields, consts


# ---- layout ------------------------------------------------------------------


def test_every_header_struct_is_mirrored():
    declared = set(re.findall(r"typedef struct (pyf_\w+) \{", HEADER_TEXT))
    assert declared == set(_abi.STRUCTURES)


@pytest.mark.parametrize("name", sorted(_abi.STRUCTURES))
def test_struct_fields_match_header(name):
    # every field of the C struct body appears in _fields_, in order
    body = re.search(r"typedef struct %s \{(.*?)\} %s;" % (name, name),
                     HEADER_TEXT, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    c_fields = []
    for decl in body.split(";"):
        decl = decl.strip()
        if not decl:
            continue
        m = re.match(r"[\w\s\*]*?\(\*\s*(\w+)\)", decl)  # function pointer
        if m:
            c_fields.append(m.group(1))
            continue
        # "uint32_t major, minor, micro" or "const char *const *x" or "a[7]"
        tail = re.split(r"\s", decl, maxsplit=1)[1] if " " in decl else decl
        for part in tail.split(","):
            part = re.sub(r"\[.*\]", "", part)
            c_fields.append(re.findall(r"\w+", part)[-1])
    assert [f for f, _ in _abi.STRUCTURES[name]._fields_] == c_fields


def test_struct_sizes_and_offsets_match_gcc(c_layout):
    sizes, fields, _ = c_layout
    for name, cls in _abi.STRUCTURES.items():
        assert (ctypes.sizeof(cls), ctypes.alignment(cls)) == sizes[name], name
        for field, _ in cls._fields_:
            desc = getattr(cls, field)
            assert (desc.offset, desc.size) == fields["%s.%s" % (name, field)], \
                "%s.%s" % (name, field)


def test_constants_match_header(c_layout):
    _, _, consts = c_layout
    for const in CONSTANTS:
        assert getattr(_abi, const) == consts[const], const
    assert pyframes.__version__ == "%d.%d.%d" % (
        consts["PYF_VERSION_MAJOR"], consts["PYF_VERSION_MINOR"],
        consts["PYF_VERSION_PATCH"])


def test_model_flag_constants_match_ffi():
    from pyframes import model
    assert model.FRAME_NAME_TRUNCATED == _abi.PYF_FRAME_NAME_TRUNCATED
    assert model.FRAME_NO_LOCATION == _abi.PYF_FRAME_NO_LOCATION
    assert model.FRAME_CODE_UNREADABLE == _abi.PYF_FRAME_CODE_UNREADABLE
    assert model.FRAME_GENERATOR == _abi.PYF_FRAME_GENERATOR
    assert model.FRAME_ENTRY_FROM_C == _abi.PYF_FRAME_ENTRY_FROM_C
    assert model.FRAME_COROUTINE == _abi.PYF_FRAME_COROUTINE
    assert model.FRAME_ASYNC_GENERATOR == _abi.PYF_FRAME_ASYNC_GENERATOR


def test_frame_and_record_share_one_view(c_layout):
    """pyf_frame and pyf_record hold one pyf_frame_info at the offset 0.5
    put their fields: 56 bytes each, the info at 16 (the C side asserts the
    same at build time)."""
    sizes, fields, _ = c_layout
    assert sizes["pyf_frame"][0] == sizes["pyf_record"][0] == 56
    assert sizes["pyf_frame_info"][0] == 40
    assert fields["pyf_frame.info"] == fields["pyf_record.info"] == (16, 40)
    frame, record = _abi.Layout(_abi.pyf_frame), _abi.Layout(_abi.pyf_record)
    info = _abi.Layout(_abi.pyf_frame_info)
    for name in info.names:
        assert frame.offset["info." + name] == record.offset["info." + name] == \
            16 + info.offset[name], name
    assert record.spans["info"] == slice(2, 2 + len(info.names))


def test_every_api_function_has_a_prototype():
    declared = set(re.findall(r"PYF_API[^;(]*?\b(pyf_\w+)\s*\(", HEADER_TEXT))
    assert declared
    assert declared == set(_abi._PROTOTYPES)
    for name, (restype, argtypes) in _abi._PROTOTYPES.items():
        decl = re.search(r"PYF_API([^;]*?\b%s\s*\(([^)]*)\))" % name,
                         HEADER_TEXT, re.S)
        params = decl.group(2).strip()
        nparams = 0 if params == "void" else params.count(",") + 1
        assert len(argtypes) == nparams, name
        returns_void = re.match(r"\s*void\s+%s" % name, decl.group(1))
        assert (restype is None) == bool(returns_void), name


# ---- errors ------------------------------------------------------------------


def test_error_table_matches_header():
    rows = re.findall(r'X\((\w+), (-?\d+), "([^"]*)"\)', HEADER_TEXT)
    assert len(rows) == len(errors.ERRORS)
    for name, value, msg in rows:
        assert errors.ERRORS[int(value)] == ("PYF_" + name, msg)
        assert getattr(errors, "PYF_" + name) == int(value)


@pytest.mark.parametrize("code,cls", [
    (errors.PYF_EFAULT, errors.ReadFault),
    (errors.PYF_EPERM, errors.PermissionDenied),
    (errors.PYF_ENOPROC, errors.NoSuchProcess),
    (errors.PYF_ENOTPY, errors.NotPython),
    (errors.PYF_EVERSION, errors.UnsupportedVersion),
    (errors.PYF_EOFFSETS, errors.BadOffsets),
    (errors.PYF_ECORRUPT, errors.CorruptTarget),
    (errors.PYF_ECYCLE, errors.CorruptTarget),
    (errors.PYF_EDEPTH, errors.CorruptTarget),
    (errors.PYF_ENOTHREAD, errors.NoSuchThread),
    (errors.PYF_EINVAL, errors.PyframesError),
    (errors.PYF_ENOMEM, errors.PyframesError),
    (errors.PYF_ENOTSUP, errors.PyframesError),
    (errors.PYF_EIO, errors.PyframesError),
])
def test_error_from_code(code, cls):
    exc = errors.error_from_code(code, "reading PyThreadState at 0x1000")
    assert type(exc) is cls
    assert isinstance(exc, errors.PyframesError)
    assert exc.code == code
    assert exc.name == errors.ERRORS[code][0]
    assert exc.detail == "reading PyThreadState at 0x1000"
    text = str(exc)
    assert "\n" not in text
    assert text.startswith(errors.ERRORS[code][1])
    assert "reading PyThreadState at 0x1000" in text


def test_error_messages_are_actionable():
    perm = errors.error_from_code(errors.PYF_EPERM, "process_vm_readv: EPERM")
    assert "ptrace" in str(perm) and "root" in str(perm)
    assert "3.8-3.15" in str(errors.error_from_code(errors.PYF_EVERSION, "3.7"))
    assert str(errors.error_from_code(errors.PYF_ENOTPY, "process 12 (sleep) is not a Python "
                                      "process")) == "process 12 (sleep) is not a Python process"
    assert "PID" in str(errors.error_from_code(errors.PYF_ENOPROC, ""))
    unknown = errors.error_from_code(-999, "")
    assert type(unknown) is errors.PyframesError
    assert unknown.name == "PYF_UNKNOWN"
    assert str(unknown) == "unknown error"
    assert str(errors.error_from_code(errors.PYF_EINVAL, None)) == \
        "invalid argument"
    evil = errors.error_from_code(errors.PYF_ECORRUPT, "name '\x1b[2J'\n")
    assert str(evil).isprintable()


def test_library_not_found_lists_paths(tmp_path, monkeypatch):
    missing = str(tmp_path / "nope" / "libpyframes.so")
    monkeypatch.setattr(_loader, "_lib", None)
    monkeypatch.setenv("PYFRAMES_LIBRARY", missing)
    with pytest.raises(errors.LibraryNotFound) as info:
        _loader.load()
    assert missing in str(info.value)
    assert "PYFRAMES_LIBRARY" in str(info.value)
    assert "\n" not in str(info.value)
    assert info.value.tried and info.value.tried[0][0] == missing


def test_library_mismatch_for_a_foreign_library(tmp_path, monkeypatch):
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("no C compiler")
    src = tmp_path / "fake.c"
    src.write_text("int pyf_library_version(void) { return 990000; }\n")
    lib = tmp_path / "libpyframes.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(src)],
                   check=True)
    monkeypatch.setattr(_loader, "_lib", None)
    monkeypatch.setenv("PYFRAMES_LIBRARY", str(lib))
    with pytest.raises(errors.LibraryMismatch) as info:
        _loader.load()
    assert "99.0.0" in str(info.value)
    assert isinstance(info.value, errors.LibraryNotFound)


def test_library_of_another_minor_is_refused(tmp_path, monkeypatch):
    """Until 1.0 a minor release may change signatures: the binding of 0.N
    refuses a library of 0.(N-1) (and of 0.(N+1)), naming both."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("no C compiler")
    for minor in (_abi.PYF_VERSION_MINOR - 1, _abi.PYF_VERSION_MINOR + 1):
        src = tmp_path / ("fake%d.c" % minor)
        src.write_text("int pyf_library_version(void) { return %d; }\n" % (minor * 100 + 3))
        lib = tmp_path / ("libpyframes%d.so" % minor)
        subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
        monkeypatch.setattr(_loader, "_lib", None)
        monkeypatch.setenv("PYFRAMES_LIBRARY", str(lib))
        with pytest.raises(errors.LibraryMismatch) as info:
            _loader.load()
        assert "version 0.%d.3, need 0.%d.x" % (minor, _abi.PYF_VERSION_MINOR) in str(info.value)


def test_sanitized_library_is_refused_before_loading(tmp_path, monkeypatch):
    lib = tmp_path / "libpyframes.so"
    lib.write_bytes(b"\x7fELF" + b"\0" * 60 + b"libasan.so.8\0")
    with open("/proc/self/maps", "rb") as f:
        if b"libasan.so" in f.read():
            pytest.skip("AddressSanitizer is loaded in this process")
    monkeypatch.setattr(_loader, "_lib", None)
    monkeypatch.setenv("PYFRAMES_LIBRARY", str(lib))
    with pytest.raises(errors.LibraryMismatch) as info:
        _loader.load()
    assert "sanitizer" in str(info.value)
    assert "LD_PRELOAD" in str(info.value)


def _compile(gcc, directory, name, code, *flags):
    """directory/name, a shared library compiled from code with flags."""
    src = directory / (name + ".c")
    src.write_text(code)
    out = str(directory / name)
    subprocess.run([gcc, "-shared", "-fPIC", "-o", out, str(src)] + list(flags), check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return out


def _foreign_libraries(tmp_path):
    """{kind: (a libpyframes.so that this system's dynamic linker refuses
    because it was built for another system, what the error must say)}."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("no C compiler")
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    found = {}

    def library(kind, code, *flags):
        (tmp_path / kind).mkdir()
        return _compile(gcc, tmp_path / kind, "libpyframes.so", code, *flags)

    # A newer C library: linked against a stand-in libc.so.6 whose symbol
    # has the version GLIBC_2.99, as a library built with glibc 2.99 would.
    (stubs / "glibc.map").write_text("GLIBC_2.99 { global: pyf_glibc_future; };\n")
    _compile(gcc, stubs, "libc.so.6", "void pyf_glibc_future(void) {}\n", "-nostdlib",
             "-Wl,-soname,libc.so.6", "-Wl,--version-script=" + str(stubs / "glibc.map"))
    found["glibc"] = (library(
        "glibc", "void pyf_glibc_future(void);\n"
        "int pyf_library_version(void) { pyf_glibc_future(); return 0; }\n",
        "-nostdlib", "-L" + str(stubs), "-l:libc.so.6"), "needs GLIBC_2.99")
    # A library this system lacks: built against, then gone.
    _compile(gcc, stubs, "libpyfabsent.so", "int pyf_absent(void) { return 0; }\n")
    found["dependency"] = (library(
        "dependency", "int pyf_absent(void);\n"
        "int pyf_library_version(void) { return pyf_absent(); }\n",
        "-L" + str(stubs), "-lpyfabsent"), "needs libpyfabsent.so")
    os.unlink(str(stubs / "libpyfabsent.so"))
    # Another word size: this machine's library with the other ELF class.
    data = bytearray(open(found["dependency"][0], "rb").read())
    data[4] = 1 if data[4] == 2 else 2  # EI_CLASS: ELFCLASS32 <-> ELFCLASS64
    (tmp_path / "word").mkdir()
    (tmp_path / "word" / "libpyframes.so").write_bytes(bytes(data))
    found["word size"] = (str(tmp_path / "word" / "libpyframes.so"), "another word size")
    return found


@pytest.mark.parametrize("kind", ["glibc", "dependency", "word size"])
def test_library_built_for_another_system(tmp_path, monkeypatch, kind):
    """A libpyframes the dynamic linker refuses because it was built on
    another system (a newer glibc: "version `GLIBC_2.99' not found", a
    library this one lacks, another ELF class) is named as such, with the
    commands building it here; the linker's own words are kept in tried."""
    path, says = _foreign_libraries(tmp_path)[kind]
    with pytest.raises(OSError) as refused:
        ctypes.CDLL(path)
    monkeypatch.setattr(_loader, "_lib", None)
    monkeypatch.setenv("PYFRAMES_LIBRARY", path)
    with pytest.raises(errors.LibraryForeign) as info:
        _loader.load()
    text = str(info.value)
    assert isinstance(info.value, errors.LibraryNotFound)
    assert "(%s) was built for another system" % path in text, text
    assert says in text, text
    assert "build it here with cmake: cd %s && cmake -B build " % _REPO in text, text
    assert "&& cmake --build build" in text and "\n" not in text, text
    assert info.value.tried == [(path, str(refused.value))]


def test_foreign_library_left_in_the_clone(tmp_path, monkeypatch):
    """A build made on another system (a newer glibc) left in the clone's
    build/ is named, with the other paths tried; once a library built here
    is there too, that one is loaded."""
    foreign_lib = _foreign_libraries(tmp_path)["glibc"][0]
    here_lib = _loader.library_path()  # built on this system
    repo = tmp_path / "repo"
    pkg = repo / "native" / "python" / "pyframes"
    pkg.mkdir(parents=True)
    (repo / "native" / "include").mkdir()
    (repo / "native" / "include" / "pyframes.h").write_text("")
    foreign = repo / "build" / "sandbox" / "native" / "libpyframes.so"
    foreign.parent.mkdir(parents=True)
    shutil.copy(foreign_lib, str(foreign))
    monkeypatch.setattr(_loader, "_PACKAGE_DIR", str(pkg))
    monkeypatch.setattr(_loader, "_lib_path", _loader._lib_path)  # restored after
    monkeypatch.delenv("PYFRAMES_LIBRARY", raising=False)
    # the linker's search path left out: this is about the clone's build/
    import ctypes.util
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    monkeypatch.setattr(_loader, "_lib", None)
    with pytest.raises(errors.LibraryForeign) as info:
        _loader.load()
    text = str(info.value)
    assert info.value.path == str(foreign), text
    assert "needs GLIBC_2.99" in text and "cd %s && cmake -B build " % repo in text, text
    assert "also tried: %s (missing)" % (repo / "build" / "native" / "libpyframes.so") in text
    built_here = repo / "build" / "native" / "libpyframes.so"
    built_here.parent.mkdir()
    shutil.copy(here_lib, str(built_here))
    monkeypatch.setattr(_loader, "_lib", None)
    assert _loader.library_path() == str(built_here)

def test_candidate_paths_order(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    pkg = repo / "native" / "python" / "pyframes"
    pkg.mkdir(parents=True)
    for sub in ("build/native", "build/a/native", "build/b/native"):
        (repo / sub).mkdir(parents=True)
        (repo / sub / "libpyframes.so").write_bytes(b"")
    os.utime(str(repo / "build/a/native/libpyframes.so"), (1, 1))
    monkeypatch.setattr(_loader, "_PACKAGE_DIR", str(pkg))
    assert _loader.candidate_paths() == [
        str(repo / "build/native/libpyframes.so"),
        str(repo / "build/b/native/libpyframes.so"),
        str(repo / "build/a/native/libpyframes.so"),
    ]
    prefix = tmp_path / "prefix"
    pkg = prefix / "share" / "pyframes" / "python" / "pyframes"
    pkg.mkdir(parents=True)
    (prefix / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
    (prefix / "lib64").mkdir()
    for rel in ("lib/libpyframes.so.0.1.0", "lib/libpyframes.so",
                "lib/libpyframes.so.0", "lib64/libpyframes.so",
                "lib/x86_64-linux-gnu/libpyframes.so.0"):
        (prefix / rel).write_bytes(rel.encode())
    monkeypatch.setattr(_loader, "_PACKAGE_DIR", str(pkg))
    assert _loader.candidate_paths() == [
        str(prefix / "lib/libpyframes.so.0"),
        str(prefix / "lib/libpyframes.so"),
        str(prefix / "lib/libpyframes.so.0.1.0"),
        str(prefix / "lib64/libpyframes.so"),
        str(prefix / "lib/x86_64-linux-gnu/libpyframes.so.0"),
    ]


# ---- reader trampolines (called through their C function pointers) ----------


def _call_read(binding, addr, size):
    buf = ctypes.create_string_buffer(size)
    rc = binding.struct.read(None, addr, ctypes.cast(buf, ctypes.c_void_p), size)
    return rc, buf.raw


def test_read_trampoline_copies_bytes():
    binding = _readers.ReaderBinding(lambda addr, size: bytes(range(size)))
    assert _call_read(binding, 0x1000, 4) == (0, b"\x00\x01\x02\x03")
    binding = _readers.ReaderBinding(lambda addr, size: memoryview(b"abcd"))
    assert _call_read(binding, 0x1000, 4) == (0, b"abcd")
    binding = _readers.ReaderBinding(lambda addr, size: bytearray(b"xy"))
    assert _call_read(binding, 0x1000, 2) == (0, b"xy")


@pytest.mark.parametrize("behaviour,code", [
    (lambda a, n: b"short", errors.PYF_EFAULT),
    (lambda a, n: None, errors.PYF_EFAULT),
    (lambda a, n: 42, errors.PYF_EFAULT),
    (lambda a, n: 1 / 0, errors.PYF_EFAULT),
    (lambda a, n: [][1], errors.PYF_EFAULT),
])
def test_read_trampoline_failures_become_codes(behaviour, code, capfd):
    binding = _readers.ReaderBinding(behaviour)
    rc, _ = _call_read(binding, 0x1000, 8)
    assert rc == code
    assert capfd.readouterr().err == ""  # nothing escaped to ctypes


def test_read_trampoline_permission_and_library_errors(capfd):
    def denied(addr, size):
        raise PermissionError("ptrace")

    def eio(addr, size):
        raise errors.error_from_code(errors.PYF_EIO, "disk")

    def fault(addr, size):
        raise errors.ReadFault(errors.PYF_EFAULT, "unmapped")

    assert _call_read(_readers.ReaderBinding(denied), 0, 8)[0] == errors.PYF_EPERM
    assert _call_read(_readers.ReaderBinding(eio), 0, 8)[0] == errors.PYF_EIO
    assert _call_read(_readers.ReaderBinding(fault), 0, 8)[0] == errors.PYF_EFAULT
    assert capfd.readouterr().err == ""


def test_keyboard_interrupt_is_deferred():
    calls = []

    def read(addr, size):
        calls.append(addr)
        raise KeyboardInterrupt

    binding = _readers.ReaderBinding(read)
    assert _call_read(binding, 1, 8)[0] == errors.PYF_EFAULT
    assert _call_read(binding, 2, 8)[0] == errors.PYF_EFAULT  # fails fast
    assert calls == [1]
    with pytest.raises(KeyboardInterrupt):
        binding.raise_pending()
    binding.raise_pending()  # cleared


def test_readv_trampoline():
    memory = {0x10: b"AAAA", 0x20: b"BBBBBBBB"}

    def readv(ranges):
        return [memory.get(addr) for addr, size in ranges]

    binding = _readers.ReaderBinding(lambda a, n: b"\0" * n, readv=readv)
    bufs = [ctypes.create_string_buffer(n) for n in (4, 8, 4)]
    iov = (_abi.pyf_iovec * 3)()
    for i, (addr, buf) in enumerate(zip((0x10, 0x20, 0x30), bufs)):
        iov[i].addr = addr
        iov[i].dst = ctypes.cast(buf, ctypes.c_void_p)
        iov[i].len = len(buf.raw)
    status = (ctypes.c_int * 3)(99, 99, 99)
    rc = binding.struct.readv(None, iov, 3, status)
    assert rc == errors.PYF_EFAULT
    assert list(status) == [0, 0, errors.PYF_EFAULT]
    assert bufs[0].raw == b"AAAA" and bufs[1].raw == b"BBBBBBBB"

    def raising(ranges):
        raise PermissionError

    binding = _readers.ReaderBinding(lambda a, n: b"", readv=raising)
    status = (ctypes.c_int * 3)()
    assert binding.struct.readv(None, iov, 3, status) == errors.PYF_EPERM
    assert list(status) == [errors.PYF_EPERM] * 3


def test_write_trampoline_and_optional_pointers():
    written = []
    binding = _readers.ReaderBinding(lambda a, n: b"", write=lambda a, d:
                                 written.append((a, d)))
    data = ctypes.create_string_buffer(b"xyz", 3)
    assert binding.struct.write(None, 0x40, ctypes.cast(data, ctypes.c_void_p),
                                3) == 0
    assert written == [(0x40, b"xyz")]
    plain = _readers.ReaderBinding(lambda a, n: b"")
    assert not plain.struct.readv and not plain.struct.write
    assert plain.struct.struct_size == ctypes.sizeof(_abi.pyf_reader)
    with pytest.raises(TypeError):
        _readers.ReaderBinding(None)


def test_reader_says_what_it_reads():
    """pyf_reader.reads: a stopped process unless said otherwise."""
    read = lambda a, n: b""  # noqa: E731
    assert _readers.ReaderBinding(read).struct.reads == _abi.PYF_READS_STOPPED
    assert _readers.ReaderBinding(read, reads="running").struct.reads == _abi.PYF_READS_RUNNING
    assert _readers.ReaderBinding(read, reads="core").struct.reads == _abi.PYF_READS_CORE
    with pytest.raises(ValueError):
        _readers.ReaderBinding(read, reads="live")


# ---- with the library ------------------------------------------------------------


@pytest.fixture
def lib():
    try:
        return _loader.load()
    except errors.LibraryNotFound as exc:
        pytest.skip(str(exc))


def test_library_error_names_match(lib):
    for code, (name, msg) in errors.ERRORS.items():
        assert lib.pyf_error_name(code).decode() == name
        assert lib.pyf_error_message(code).decode() == msg
    assert lib.pyf_error_name(-999).decode() == "PYF_UNKNOWN"
    assert lib.pyf_library_version() // 10000 == _abi.PYF_VERSION_MAJOR


def test_raising_reader_does_not_propagate(lib, capfd):
    calls = []

    def read(addr, size):
        calls.append((addr, size))
        raise ValueError("reader bug")

    with pytest.raises(errors.PyframesError) as info:
        pyframes.open_reader(read, 0x10000)
    assert calls, "the library never called the reader"
    assert info.value.code < 0
    assert "Traceback" not in capfd.readouterr().err
    with pytest.raises(errors.PyframesError):
        pyframes.probe_runtime(read, 0x10000)
    assert pyframes.find_runtime_in_range(read, 0x10000, 0x14000) is None
    assert "Traceback" not in capfd.readouterr().err


def test_permission_error_from_reader(lib):
    def read(addr, size):
        raise PermissionError("no")

    with pytest.raises(errors.PermissionDenied):
        pyframes.open_reader(read, 0x10000)


def test_keyboard_interrupt_from_reader_is_reraised(lib):
    def read(addr, size):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pyframes.open_reader(read, 0x10000)


def test_reader_reading_nothing_known_is_refused(lib):
    """A pyf_reader whose reads is no PYF_READS_* value: PYF_EINVAL, named."""
    binding = _readers.ReaderBinding(lambda a, n: b"\0" * n)
    binding.struct.reads = 7
    handle = _abi.pyf_target_p()
    failure = _abi.pyf_failure()
    failure.struct_size = ctypes.sizeof(failure)
    rc = lib.pyf_target_open(binding.pointer(), 0x10000, None, ctypes.byref(handle),
                             ctypes.byref(failure))
    assert rc == errors.PYF_EINVAL and not handle
    assert b"pyf_reader.reads is 7" in failure.detail


def test_zero_runtime_address_is_invalid(lib):
    with pytest.raises(errors.PyframesError) as info:
        pyframes.open_reader(lambda a, n: b"\0" * n, 0)
    assert info.value.code == errors.PYF_EINVAL


def _table_of_version(hexversion):
    """A reader of one page at 0x10000 that starts with the head of a
    _Py_DebugOffsets table saying hexversion."""
    import struct
    page = (b"xdebugpy" + struct.pack("<QQ", hexversion, 0)).ljust(4096, b"\0")

    def read(addr, size):
        if not 0 <= addr - 0x10000 <= len(page) - size:
            raise OSError("unmapped")
        return page[addr - 0x10000:addr - 0x10000 + size]
    return read


def test_refused_version_is_named_by_the_library(lib):
    read = _table_of_version(0x031000F0)
    text = "unsupported CPython 3.16.0 (pyframes reads CPython 3.8-3.15)"
    with pytest.raises(errors.UnsupportedVersion) as info:
        pyframes.probe_runtime(read, 0x10000)
    assert str(info.value) == text
    assert info.value.python.hexversion == 0x031000F0
    addr, python, how, error = target_module.locate_runtime(read, (), 0x10000)
    assert (addr, how) == (None, None)
    assert isinstance(error, errors.UnsupportedVersion) and str(error) == text
    assert python.version == "3.16.0" and python.minor == 16


def test_runtime_helpers_report_the_library_failure(lib):
    def refused(addr, size):
        raise PermissionError("no")

    with pytest.raises(errors.PermissionDenied) as info:
        pyframes.probe_runtime(refused, 0x10000)
    assert info.value.addr == 0x10000 and info.value.what == "_Py_DebugOffsets"
    with pytest.raises(errors.PermissionDenied) as info:
        pyframes.find_runtime_in_range(refused, 0x10000, 0x20000)
    assert "permission denied" in str(info.value)
    # memory without a runtime and no file: what was searched
    addr, python, how, error = target_module.locate_runtime(
        lambda a, n: b"\0" * n, [(0x10000, 0x11000, 0, "rw", None)], 0)
    assert addr is None and isinstance(error, errors.NotPython)
    assert str(error).startswith("no CPython runtime found in the target: ")
    # and a program without anything of CPython: not Python, named as the
    # caller names it (the debuggers: errors.process_label)
    program = (0x400000, 0x401000, 0, "r", os.path.realpath(shutil.which("true")))
    error = target_module.locate_runtime(
        lambda a, n: b"\0" * n, [program, (0x10000, 0x11000, 0, "rw", None)], 0,
        target_name=errors.process_label(12, "sleep"))[3]
    assert str(error) == "process 12 (sleep) is not a Python process"


def test_elf_runtime_address_of_non_python_file(lib, tmp_path):
    assert pyframes.elf_runtime_address(str(tmp_path / "missing"), 0) is None
    assert pyframes.elf_runtime_address("/bin/true", 0x400000) is None
    not_elf = tmp_path / "not-elf"
    not_elf.write_bytes(b"\x7fELF" + b"\xff" * 60)
    assert pyframes.elf_runtime_address(str(not_elf), 0x400000) is None


def test_attach_errors(lib):
    with pytest.raises(ValueError):
        pyframes.attach(0)
    with pytest.raises(TypeError):
        pyframes.attach("1")
    # a PID that cannot exist (above pid_max)
    with pytest.raises(errors.NoSuchProcess):
        pyframes.attach(0x7FFFFFF0)


# ---- copying a C snapshot into model objects (no library needed) -------------


def _c_snapshot():
    """A pyf_snapshot built in ctypes memory: two interpreters, three
    threads, four frames.  Returns (snapshot, keepalive)."""
    keep = []

    def cstr(text):
        buf = ctypes.create_string_buffer(text)
        keep.append(buf)
        return ctypes.cast(buf, ctypes.c_char_p)

    frames = (_abi.pyf_frame * 4)()
    rows = [
        (0x10, 0x20, b"inner", b"/a.py", 3, 4, 5, 9, _abi.PYF_FRAME_GENERATOR),
        (0x11, 0x21, b"Outer.method", b"/a.py", 7, 7, 0, 12, 0),
        (0x12, 0x22, b"???", b"???", -1, -1, -1, -1,
         _abi.PYF_FRAME_CODE_UNREADABLE | _abi.PYF_FRAME_NO_LOCATION),
        (0x13, 0x23, b"caf\xc3\xa9 \xff", b"/b.py", 1, 1, -1, -1, 0),
    ]
    for f, (fa, ca, fn, fname, line, eline, col, ecol, flags) in zip(frames, rows):
        f.frame_addr, f.code_addr = fa, ca
        f.info = _abi.pyf_frame_info(cstr(fn), cstr(fname), line, eline, col, ecol, flags)
    threads = (_abi.pyf_thread * 3)()
    t = threads[0]
    t.tstate_addr, t.thread_id, t.native_thread_id = 0x100, 0x7F00, 11
    t.interp_index, t.first_frame, t.nframes = 0, 0, 2
    t.flags = (_abi.PYF_THREAD_COMPLETE | _abi.PYF_THREAD_MAIN
               | _abi.PYF_THREAD_GIL_KNOWN | _abi.PYF_THREAD_HOLDS_GIL)
    t = threads[1]
    t.tstate_addr, t.thread_id, t.native_thread_id = 0x200, 0x7F01, 12
    t.interp_index, t.first_frame, t.nframes = 0, 2, 1
    t.flags = _abi.PYF_THREAD_GIL_KNOWN
    t.error = errors.PYF_ECYCLE
    t = threads[2]
    t.tstate_addr, t.thread_id, t.native_thread_id = 0x300, 0, 0
    t.interp_index, t.first_frame, t.nframes = 1, 3, 1
    t.flags = _abi.PYF_THREAD_COMPLETE
    interps = (_abi.pyf_interp * 2)()
    interps[0].addr, interps[0].id = 0xA000, 0
    interps[0].first_thread, interps[0].nthreads = 0, 2
    interps[1].addr, interps[1].id = 0xB000, 3
    interps[1].first_thread, interps[1].nthreads = 2, 1
    cycle = _abi.pyf_failure(code=errors.PYF_ECYCLE, detail=b"cycle at 0x200")
    threads[1].failure = ctypes.pointer(cycle)
    errs = [cycle]
    snap = _abi.pyf_snapshot()
    snap.ninterps, snap.nthreads, snap.nframes = 2, 3, 4
    snap.interps = ctypes.cast(interps, ctypes.POINTER(_abi.pyf_interp))
    snap.threads = ctypes.cast(threads, ctypes.POINTER(_abi.pyf_thread))
    snap.frames = ctypes.cast(frames, ctypes.POINTER(_abi.pyf_frame))
    # its frame table: a record and a key per frame
    records = (_abi.pyf_record * 4)()
    keys = (_abi.pyf_frame_key * 4)()
    frame_keys = (ctypes.c_uint32 * 4)(0, 1, 2, 3)
    for i, f in enumerate(frames):
        r = records[i]
        r.code_addr, r.info = f.code_addr, f.info  # the one view, copied whole
        keys[i].frame_addr, keys[i].record = f.frame_addr, i
    table = _abi.pyf_frame_table(struct_size=ctypes.sizeof(_abi.pyf_frame_table),
                                 nframes=4, table_id=1, nrecords=4, nkeys=4)
    table.records = ctypes.cast(records, ctypes.POINTER(_abi.pyf_record))
    table.keys = ctypes.cast(keys, ctypes.POINTER(_abi.pyf_frame_key))
    table.frame_keys = ctypes.cast(frame_keys, ctypes.POINTER(ctypes.c_uint32))
    keep.extend([frames, threads, interps, errs, records, keys, frame_keys])
    return snap, table, keep


def _table_fields(table):
    return _convert.TABLE.struct.unpack_from(memoryview(table).cast("B"))


def _bare_converter(pid):
    """A Converter without a library: only its conversion is used."""
    return _convert.Converter(None, pid, pyframes.PythonInfo("3.14.0", 0x030E00F0, 3, 14, 0))


def test_convert_c_snapshot_to_model():
    snap, table, keep = _c_snapshot()
    converter = _bare_converter(77)  # no library: only convert
    result = converter.convert(ctypes.pointer(snap), _table_fields(table))
    assert result.pid == 77 and result.python.minor == 14
    assert [i.id for i in result.interpreters] == [0, 3]
    assert [i.addr for i in result.interpreters] == [0xA000, 0xB000]
    main, broken, other = list(result.threads())
    assert (main.thread_id, main.native_thread_id, main.interpreter_id) == \
        (0x7F00, 11, 0)
    assert main.complete and main.is_main and main.holds_gil is True
    assert main.error is None and main.error_code == 0
    assert main.tstate_addr == 0x100
    assert [f.function for f in main.frames] == ["inner", "Outer.method"]
    inner = main.frames[0]
    assert (inner.line, inner.end_line, inner.column, inner.end_column) == \
        (3, 4, 5, 9)
    assert inner.is_generator and inner.frame_addr == 0x10
    assert inner.code_addr == 0x20 and inner.filename == "/a.py"
    assert not broken.complete and broken.holds_gil is False
    assert not broken.is_main
    assert broken.error == "cycle at 0x200"
    assert broken.error_code == errors.PYF_ECYCLE
    unknown = broken.frames[0]
    assert (unknown.line, unknown.end_line, unknown.column,
            unknown.end_column) == (None, None, None, None)
    assert unknown.code_unreadable and unknown.no_location
    assert other.thread_id is None and other.native_thread_id is None
    assert other.interpreter_id == 3 and other.holds_gil is None
    assert other.frames[0].function == "caf\u00e9 \ufffd"
    assert other.frames[0].column is None and other.frames[0].line == 1
    # the fast path builds objects equal to normally constructed ones
    assert inner == pyframes.Frame("inner", "/a.py", 3, 4, 5, 9, 0x10, 0x20,
                                   _abi.PYF_FRAME_GENERATOR)
    assert hash(inner) == hash(pyframes.Frame(
        "inner", "/a.py", 3, 4, 5, 9, 0x10, 0x20, _abi.PYF_FRAME_GENERATOR))
    with pytest.raises(Exception):
        inner.line = 1
    del keep


def test_model_replace_is_dataclasses_replace():
    """model._replace (the stack command's, without __init__) makes what
    dataclasses.replace makes of the converter's objects, leaves the
    original alone, and refuses a name that is no field."""
    import dataclasses
    from pyframes import model
    snap, table, keep = _c_snapshot()
    result = _bare_converter(77).convert(ctypes.pointer(snap), _table_fields(table))
    main = next(result.threads())
    for obj, changes in [(main, dict(native="reading fd 0", on_cpu=False, name="w")),
                         (result.interpreters[0], dict(threads=(main,))),
                         (result, dict(interpreters=()))]:
        got = model._replace(obj, **changes)
        assert got == dataclasses.replace(obj, **changes) and got is not obj
        assert type(got) is type(obj) and hash(got) == hash(dataclasses.replace(obj, **changes))
        assert all(getattr(got, k) == v for k, v in changes.items())
        assert obj != got
    with pytest.raises(TypeError):
        model._replace(main, nativ="x")
    del keep


def test_convert_reads_only_the_failure():
    """A thread's error comes from its one failure: the int error beside
    it (an alias of failure->code kept for the layout) is not read."""
    snap, table, keep = _c_snapshot()
    snap.threads[1].error = errors.PYF_EFAULT  # a stale alias: ignored
    snap.threads[2].error = errors.PYF_EDEPTH  # no failure: no error
    _, broken, other = _bare_converter(1).convert(ctypes.pointer(snap),
                                                  _table_fields(table)).threads()
    assert (broken.error_code, broken.error) == (errors.PYF_ECYCLE, "cycle at 0x200")
    assert (other.error_code, other.error) == (0, None)
    del keep


def test_convert_tasks_reads_only_the_failures():
    """Tasks and the task list: their failures say what failed; the codes
    beside them (error, status, list_error) are not read."""
    snap, table, keep = _c_snapshot()
    converter = _bare_converter(1)
    snapshot = converter.convert(ctypes.pointer(snap), _table_fields(table))
    broken = _abi.pyf_failure(code=errors.PYF_EFAULT, what=b"coroutine", addr=0x90,
                              len=8, detail=b"reading coroutine at 0x90")
    cut = _abi.pyf_failure(code=errors.PYF_ECYCLE, detail=b"task list loops at 0x70")
    tasks = (_abi.pyf_task * 2)()
    names = [ctypes.create_string_buffer(b"ok"), ctypes.create_string_buffer(b"cut")]
    for task, addr, name in zip(tasks, (0x50, 0x60), names):
        task.task_addr, task.name, task.first_frame = addr, ctypes.cast(name, ctypes.c_char_p), 4
    tasks[0].error = errors.PYF_EDEPTH  # stale aliases: ignored
    tasks[1].failure = ctypes.pointer(broken)
    raw = _abi.pyf_task_list(struct_size=ctypes.sizeof(_abi.pyf_task_list), ntasks=2,
                             task_size=ctypes.sizeof(_abi.pyf_task), list_error=0,
                             status=errors.PYF_ENOTSUP)
    raw.tasks = ctypes.cast(tasks, ctypes.POINTER(_abi.pyf_task))
    raw.failure = ctypes.pointer(cut)

    class FakeLib:
        @staticmethod
        def pyf_snapshot_tasks(s, out):
            ctypes.memmove(out, ctypes.addressof(raw), ctypes.sizeof(raw))
            return 0

    converter._lib = FakeLib
    converter.convert_tasks(None, table.frame_keys, snapshot)
    assert [(t.name, t.error) for t in snapshot.tasks] == [
        ("ok", None), ("cut", errors.failure_text(errors.PYF_EFAULT, **_convert.facts(broken)))]
    assert snapshot.tasks_error == errors.failure_text(errors.PYF_ECYCLE,
                                                       **_convert.facts(cut))
    del keep


def test_convert_tolerates_out_of_range_indices():
    snap, table, keep = _c_snapshot()
    snap.threads[2].first_frame = 9   # beyond nframes
    snap.threads[0].nframes = 100     # runs past the end
    snap.interps[1].nthreads = 50
    for i in range(3):
        snap.threads[i].failure = None
    converter = _bare_converter(None)
    result = converter.convert(ctypes.pointer(snap), _table_fields(table))
    threads = list(result.threads())
    assert len(threads) == 3
    assert len(threads[0].frames) == 4
    assert threads[2].frames == ()
    # no failure, no error (the int error beside it is an alias, not read)
    assert threads[1].error is None and threads[1].error_code == 0
    del keep


# ---- the layouts the conversion unpacks (derived from the mirror) ------------


def _ctypes_value(ctype, raw, offset):
    """What ctypes reads of a field of type ctype at offset in raw."""
    if issubclass(ctype, ctypes.Array):
        if ctype._type_ is ctypes.c_char:
            return raw[offset:offset + ctype._length_]
        step = ctypes.sizeof(ctype._type_)
        return tuple(_ctypes_value(ctype._type_, raw, offset + i * step)
                     for i in range(ctype._length_))
    if issubclass(ctype, (ctypes._Pointer, ctypes._CFuncPtr, ctypes.c_char_p)):
        return ctypes.c_void_p.from_buffer_copy(raw, offset).value or 0
    return ctype.from_buffer_copy(raw, offset).value


def _flat_fields(cls, prefix="", base=0):
    for name, ctype in cls._fields_:
        offset = base + getattr(cls, name).offset
        if issubclass(ctype, ctypes.Structure):
            yield from _flat_fields(ctype, prefix + name + ".", offset)
        else:
            yield prefix + name, ctype, offset


@pytest.mark.parametrize("name", sorted(_abi.STRUCTURES))
def test_layout_reads_what_ctypes_reads(name):
    cls = _abi.STRUCTURES[name]
    layout = _abi.Layout(cls)
    assert layout.size == layout.struct.size == ctypes.sizeof(cls)
    raw = bytes((i * 7 + 3) % 251 for i in range(ctypes.sizeof(cls)))
    values = layout.struct.unpack(raw)
    flat = list(_flat_fields(cls))
    assert list(layout.names) == [n for n, _, _ in flat]
    for field, ctype, offset in flat:
        assert layout.offset[field] == offset, field
        got = values[layout.index[field]]
        if issubclass(ctype, ctypes.Array) and ctype._type_ is not ctypes.c_char:
            got = values[layout.index[field]:layout.index[field] + ctype._length_]
        assert got == _ctypes_value(ctype, raw, offset), field
    # each value belongs to a field: arrays but char ones are several
    assert len(values) == sum(
        ctype._length_ if issubclass(ctype, ctypes.Array) and ctype._type_ is not ctypes.c_char
        else 1 for _, ctype, _ in flat)


def test_copy_layout_parts():
    copy = _convert.COPY
    assert copy.size == _abi.PYF_SNAPSHOT_COPY_SIZE
    table = copy.spans["table"]
    assert copy.names[table] == tuple("table." + n for n in _convert.TABLE.names)
    snapshot = copy.spans["snapshot"]
    assert copy.names[snapshot] == tuple("snapshot." + n for n in _convert.SNAPSHOT.names)
    inputs = copy.struct_upto("request")
    assert inputs.size == copy.offset["request"] + ctypes.sizeof(ctypes.c_void_p)
    buf = _abi.pyf_snapshot_copy()
    inputs.pack_into(memoryview(buf).cast("B"), 0, 4096, 5, 0x1234)
    assert (buf.cap, buf.flags, ctypes.cast(buf.request, ctypes.c_void_p).value) == \
        (4096, 5, 0x1234)
    buf.flags = 0xA5
    assert bytes(buf)[_convert.FLAGS_BYTE] == 0xA5
    _convert.KEPT.pack_into(memoryview(buf).cast("B"), _convert.KEPT_AT, 0x77)
    assert buf.kept == 0x77


def test_sample_source_reads_threads_and_keys():
    snap, table, keep = _c_snapshot()

    class FakeLib:
        @staticmethod
        def pyf_snapshot_table(out, ref):
            ctypes.memmove(ref, ctypes.addressof(table), ctypes.sizeof(table))
            return 0

        @staticmethod
        def pyf_snapshot_take(handle, request, out_ref):
            ctypes.memmove(out_ref, ctypes.addressof(snap_p), ctypes.sizeof(snap_p))
            return 0

        pyf_snapshot_free = None

    snap_p = ctypes.pointer(snap)
    source = _convert.SampleSource(FakeLib, lambda: 1, None, None)
    out, out_ref = source.holder()
    rc, (table_id, rows) = source.take(out, out_ref)
    assert rc == 0 and table_id == 1
    index = _convert.THREAD.index
    assert [(t[index["thread_id"]], t[index["native_thread_id"]]) for t, _ in rows] == \
        [(0x7F00, 11), (0x7F01, 12), (0, 0)]
    assert rows[0][0][index["flags"]] & _abi.PYF_THREAD_MAIN
    assert [_convert.failure_code(t[index["failure"]]) for t, _ in rows] == \
        [0, errors.PYF_ECYCLE, 0]
    assert [t[index["interp_index"]] for t, _ in rows] == [0, 0, 1]
    assert [keys for _, keys in rows] == [bytes((ctypes.c_uint32 * 2)(0, 1)),
                                          bytes((ctypes.c_uint32 * 1)(2)),
                                          bytes((ctypes.c_uint32 * 1)(3))]
    snap.threads[2].nframes = 2  # past the snapshot's frames
    snap.threads[1].nframes = 0
    _, (_, rows) = source.take(out, out_ref)
    assert [keys for _, keys in rows][1:] == [b"", None]
    names = source.names(ctypes.pointer(snap))
    assert [f.function for f in names.frames][:2] == ["inner", "Outer.method"]
    del keep


def test_sampler_uses_no_private_name_of_target():
    import ast
    with open(os.path.join(_PKG, "pyframes", "sampling.py")) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and \
                isinstance(node.value, ast.Name) and node.value.id in ("t", "target"):
            raise AssertionError("sampling.py uses %s.%s" % (node.value.id, node.attr))
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and \
                isinstance(node.value, ast.Attribute) and node.value.attr == "target":
            raise AssertionError("sampling.py uses target.%s" % node.attr)
        if isinstance(node, ast.ImportFrom) and node.module == "target":
            raise AssertionError("sampling.py imports from target")
