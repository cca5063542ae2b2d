/*
 * emit_debug_offsets.c - print, as hex, CPython's own _Py_DebugOffsets
 * initializer for the headers it is compiled against: with
 * -DPy_GIL_DISABLED=1 the free-threaded table (the headers carry both
 * branches).  A source of truth for free-threaded layouts on machines with
 * no free-threaded interpreter (tests/python/test_free_threaded.py).
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_runtime.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_debug_offsets.h>
#include <stdio.h>
int main(void)
{
    static const _Py_DebugOffsets o = _Py_DebugOffsets_INIT("xdebugpy");
    const unsigned char *p = (const unsigned char *)&o;
    for (size_t i = 0; i < sizeof o; i++)
        printf("%02x", p[i]);
    printf("\n");
    return 0;
}
