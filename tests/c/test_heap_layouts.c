/*
 * test_heap_layouts.c - the built-in layouts of CPython 3.8, 3.9 and 3.10
 * (layout_tables.h, generated from their headers) and what offsets.c
 * decides of them: heap frames (PyFrameObject chained by f_back from the
 * thread state), their instruction and running-state fields, the line
 * table's format; used only behind PYFRAMES_HEAP_FRAMES=1 (until their
 * stacks are read end to end these versions stay refused by name, which
 * is checked first).  The offsets expected are the ones measured on
 * pyenv's 3.8.18, 3.9.18 and 3.10.13 and read in two peers' independent
 * mirrors of the same structs.
 */
#include <stdlib.h>

#include "../../native/src/internal.h"
#include "check.h"

typedef struct heap_version {
    uint64_t hex;
    const char *text;
    uint64_t runtime_size, gil_holder, gil_locked, tstate_current;
    uint64_t frame_size, lasti, running, localsplus;
    int line_kind, lasti_kind, running_kind, executing;
} heap_version;

static const heap_version versions[] = {
    {0x030812f0, "3.8.18", 1464, 1160, 1168, 1368, 368, 104, 116, 360,
     PYF__LINES_LNOTAB, PYF__LASTI_BYTES, PYF__RUNNING_FLAG, 1},
    {0x030912f0, "3.9.18", 656, 360, 368, 568, 368, 104, 116, 360,
     PYF__LINES_LNOTAB, PYF__LASTI_BYTES, PYF__RUNNING_FLAG, 1},
    {0x030a0df0, "3.10.13", 672, 360, 368, 568, 360, 96, 108, 352,
     PYF__LINES_PEP626, PYF__LASTI_UNITS, PYF__RUNNING_STATE, 0},
};

static void refused_while_gated(void)
{
    check_begin("3.8-3.10 refused by name while the gate is closed");
    unsetenv("PYFRAMES_HEAP_FRAMES");
    CHECK(!pyf__offsets_heap_frames_enabled());
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        const heap_version *v = &versions[i];
        pyf__offsets o;
        char err[256], want[128];
        CHECK_EQ_INT(pyf__offsets_builtin(v->hex, &o, err, sizeof err), PYF_EVERSION);
        snprintf(want, sizeof want, "unsupported CPython %s (pyframes reads CPython 3.11-3.15)",
                 v->text);
        CHECK_EQ_STR(err, want);
        CHECK_EQ_INT(pyf__offsets_builtin_runtime_size(v->hex), 0);
    }
    setenv("PYFRAMES_HEAP_FRAMES", "0", 1);
    CHECK(!pyf__offsets_heap_frames_enabled());
    unsetenv("PYFRAMES_HEAP_FRAMES");
}

static void layouts_behind_the_gate(void)
{
    check_begin("3.8-3.10 layouts behind the gate");
    setenv("PYFRAMES_HEAP_FRAMES", "1", 1);
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        const heap_version *v = &versions[i];
        pyf__offsets o;
        char err[256] = "";
        int rc = pyf__offsets_builtin(v->hex, &o, err, sizeof err);
        CHECK_MSG(rc == PYF_OK, "%s: %s", v->text, err);
        if (rc != PYF_OK)
            continue;
        CHECK_EQ_INT(pyf__offsets_builtin_runtime_size(v->hex), v->runtime_size);
        CHECK_EQ_INT(o.runtime.size, v->runtime_size);
        CHECK_EQ_INT(o.runtime.interpreters_head, 32);
        CHECK_EQ_INT(o.runtime.gil_holder, v->gil_holder);
        CHECK_EQ_INT(o.runtime.gil_locked, v->gil_locked);
        CHECK_EQ_INT(o.runtime.tstate_current, v->tstate_current);
        CHECK_EQ_INT(o.interp.threads_head, 8);
        CHECK_EQ_INT(o.tstate.frame, 24);
        CHECK_EQ_INT(o.tstate.thread_id, 176);
        CHECK_EQ_INT(o.tstate.native_thread_id, PYF__ABSENT);
        CHECK_EQ_INT(o.tstate.datastack_chunk, PYF__ABSENT);
        CHECK_EQ_INT(o.frame.size, PYF__ABSENT);
        CHECK_EQ_INT(o.heapframe.size, v->frame_size);
        CHECK_EQ_INT(o.heapframe.back, 24);
        CHECK_EQ_INT(o.heapframe.code, 32);
        CHECK_EQ_INT(o.heapframe.lasti, v->lasti);
        CHECK_EQ_INT(o.heapframe.localsplus, v->localsplus);
        CHECK_EQ_INT(v->running_kind == PYF__RUNNING_FLAG ? o.heapframe.executing
                                                          : o.heapframe.state,
                     v->running);
        CHECK_EQ_INT(o.code.qualname, PYF__ABSENT);
        CHECK_EQ_INT(o.code.filename, 104);
        CHECK_EQ_INT(o.code.name, 112);
        CHECK_EQ_INT(o.code.linetable, 120);
        CHECK_EQ_INT(o.code.firstlineno, 40);
        CHECK_EQ_INT(o.code.code, 48);
        CHECK_EQ_INT(o.code.co_flags, 36);
        CHECK_EQ_INT(o.gen.gi_frame, 16);
        CHECK_EQ_INT(o.unicode.asciiobject_size, 48);
        CHECK_EQ_INT(o.unicode.compactunicodeobject_size, 72);
        CHECK_EQ_INT(o.frame_model, PYF__FRAMES_HEAP);
        CHECK_EQ_INT(o.line_kind, v->line_kind);
        CHECK_EQ_INT(o.lasti_kind, v->lasti_kind);
        CHECK_EQ_INT(o.running_kind, v->running_kind);
        CHECK_EQ_INT(o.frame_executing, v->executing);
        CHECK_EQ_INT(o.gil_kind, PYF__GIL_RUNTIME);
        CHECK_EQ_INT(o.exc_kind, PYF__EXC_TRIPLE);
        CHECK_EQ_INT(o.int_kind, PYF__INT_OB_SIZE);
    }
    /* the data-stack versions are not touched by the gate */
    pyf__offsets o;
    char err[256];
    REQUIRE(pyf__offsets_builtin(0x030b07f0, &o, err, sizeof err) == PYF_OK);
    CHECK_EQ_INT(o.frame_model, PYF__FRAMES_DATASTACK);
    CHECK_EQ_INT(o.line_kind, PYF__LINES_LOCATIONS);
    unsetenv("PYFRAMES_HEAP_FRAMES");
}

int main(void)
{
    refused_while_gated();
    layouts_behind_the_gate();
    return check_end();
}
