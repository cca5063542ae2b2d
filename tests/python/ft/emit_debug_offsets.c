/*
 * emit_debug_offsets.c - print, as hex, CPython's own _Py_DebugOffsets
 * initializer for the headers it is compiled against: with
 * -DPy_GIL_DISABLED=1 the free-threaded table (the headers carry both
 * branches).  A source of truth for free-threaded layouts on machines with
 * no free-threaded interpreter (tests/python/test_free_threaded.py).  The
 * C tests lay out whole images the same way (tests/c/ft/emit_layout.c).
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#include <stdio.h>
#if PY_MINOR_VERSION == 13
/* 3.13 initializes the table only inside _PyRuntimeState_INIT, whose other
 * members name functions this program never calls: link it with
 * -no-pie -Wl,--unresolved-symbols=ignore-all */
#include <internal/pycore_ceval.h>
#include <internal/pycore_runtime_init.h>
static const _PyRuntimeState rt = _PyRuntimeState_INIT(rt, "xdebugpy");
#define TABLE (rt.debug_offsets)
#else
#include <internal/pycore_debug_offsets.h>
static const _Py_DebugOffsets table = _Py_DebugOffsets_INIT("xdebugpy");
#define TABLE table
#endif
int main(void)
{
    const _Py_DebugOffsets o = TABLE;
    const unsigned char *p = (const unsigned char *)&o;
    for (size_t i = 0; i < sizeof o; i++)
        printf("%02x", p[i]);
    printf("\n");
    return 0;
}
