/*
 * test_heap_layouts.c - the built-in layouts of CPython 3.8, 3.9 and 3.10
 * (layout_tables.h, generated from their headers) and what offsets.c
 * decides of them: heap frames (PyFrameObject chained by f_back from the
 * thread state), their instruction and running-state fields, the line
 * table's format; 3.7 and older refused by name.  The offsets expected are the ones measured on
 * pyenv's 3.8.18, 3.9.18 and 3.10.13 and read in two peers' independent
 * mirrors of the same structs.  A PyFrameObject decoded as each version
 * keeps it (pyf__hframe_decode): its instruction in code units, and
 * whether it runs, by f_executing and f_stacktop (3.8, 3.9) or by
 * f_state (3.10).
 */
#include <stdlib.h>

#include "../../native/src/offsets.h"
#include "../../native/src/walk.h"
#include "check.h"

typedef struct heap_version {
    uint64_t hex;
    const char *text;
    uint64_t runtime_size, gil_holder, gil_locked, tstate_current;
    uint64_t frame_size, lasti, running, localsplus;
    int line_kind, lasti_kind, running_kind;
} heap_version;

static const heap_version versions[] = {
    {0x030812f0, "3.8.18", 1464, 1160, 1168, 1368, 368, 104, 116, 360,
     PYF__LINES_LNOTAB, PYF__LASTI_BYTES, PYF__RUNNING_FLAG},
    {0x030912f0, "3.9.18", 656, 360, 368, 568, 368, 104, 116, 360,
     PYF__LINES_LNOTAB, PYF__LASTI_BYTES, PYF__RUNNING_FLAG},
    {0x030a0df0, "3.10.13", 672, 360, 368, 568, 360, 96, 108, 352,
     PYF__LINES_PEP626, PYF__LASTI_UNITS, PYF__RUNNING_STATE},
};

/* 3.7 and older stay refused by name, with the range read */
static void older_refused(void)
{
    check_begin("3.7 and older refused by name");
    const uint64_t old[] = {0x030711f0, 0x030610f0, 0x020712f0};
    const char *text[] = {"3.7.17", "3.6.16", "2.7.18"};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
        pyf__offsets o;
        char err[256], want[128];
        CHECK_EQ_INT(pyf__offsets_builtin(old[i], &o, err, sizeof err), PYF_EVERSION);
        snprintf(want, sizeof want, "unsupported CPython %s (pyframes reads CPython 3.8-3.15)",
                 text[i]);
        CHECK_EQ_STR(err, want);
        CHECK_EQ_INT(pyf__offsets_builtin_runtime_size(old[i]), 0);
    }
}

static void heap_layouts(void)
{
    check_begin("3.8-3.10 layouts");
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
        CHECK_EQ_INT(o.code.qualname, o.code.name); /* no co_qualname: co_name names a frame */
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
        if (v->running_kind == PYF__RUNNING_STATE) {
            /* Include/cpython/frameobject.h's enum _framestate */
            CHECK_EQ_INT(o.frame_state.created, -2);
            CHECK_EQ_INT(o.frame_state.suspended, -1);
            CHECK_EQ_INT(o.frame_state.executing, 0);
            CHECK_EQ_INT(o.frame_state.unwinding, 2);
        }
        CHECK_EQ_INT(o.gil_kind, PYF__GIL_RUNTIME);
        CHECK_EQ_INT(o.exc_kind, PYF__EXC_TRIPLE);
        CHECK_EQ_INT(o.int_kind, PYF__INT_OB_SIZE);
    }
    /* the data-stack versions keep theirs */
    pyf__offsets o;
    char err[256];
    REQUIRE(pyf__offsets_builtin(0x030b07f0, &o, err, sizeof err) == PYF_OK);
    CHECK_EQ_INT(o.frame_model, PYF__FRAMES_DATASTACK);
    CHECK_EQ_INT(o.line_kind, PYF__LINES_LOCATIONS);
}

/* a word of a target's (x86-64: little-endian, as this host) */
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, sizeof v); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, sizeof v); }

/* A PyFrameObject of version v laid out in buf, decoded: lasti as the
 * version counts it, running as f_executing (3.8, 3.9) or f_state (3.10)
 * holds it, stacktop (3.8, 3.9) set or not. */
static pyf__hframe frame_of(const pyf__offsets *o, int32_t lasti, int running, bool stacktop)
{
    uint8_t buf[512];
    memset(buf, 0, sizeof buf);
    put64(buf, 1);
    put64(buf + o->heapframe.back, 0x7f0000001000ull);
    put64(buf + o->heapframe.code, 0x7f0000002000ull);
    put64(buf + o->heapframe.gen, 0x7f0000003000ull);
    put32(buf + o->heapframe.lasti, (uint32_t)lasti);
    if (o->running_kind == PYF__RUNNING_FLAG) {
        buf[o->heapframe.executing] = (uint8_t)running;
        if (stacktop)
            put64(buf + o->heapframe.stacktop, 0x7f0000004000ull);
    } else {
        buf[o->heapframe.state] = (uint8_t)(int8_t)running;
    }
    pyf__hframe fr;
    pyf__hframe_decode(o, buf, 0x7f0000005000ull, &fr);
    CHECK(fr.addr == 0x7f0000005000ull && fr.refcnt == 1 && fr.back == 0x7f0000001000ull &&
          fr.code == 0x7f0000002000ull && fr.gen == 0x7f0000003000ull);
    return fr;
}

static void heap_frames_decoded(void)
{
    check_begin("a PyFrameObject decoded: its instruction and whether it runs");
    pyf__offsets o;
    char err[256];
    for (uint64_t hex = 0x030812f0; hex <= 0x030912f0; hex += 0x10000) {
        /* 3.8, 3.9: f_lasti in bytes, f_executing, f_stacktop */
        REQUIRE(pyf__offsets_builtin(hex, &o, err, sizeof err) == PYF_OK);
        pyf__hframe fr = frame_of(&o, 14, 1, false);
        CHECK(fr.state == PYF__HFRAME_RUNNING && fr.instr == 7);
        fr = frame_of(&o, -1, 0, true); /* made: f_stacktop its value stack */
        CHECK(fr.state == PYF__HFRAME_NOT_STARTED && fr.instr == -1);
        fr = frame_of(&o, 10, 0, true); /* a generator's, at a yield */
        CHECK(fr.state == PYF__HFRAME_SUSPENDED && fr.instr == 5);
        fr = frame_of(&o, 10, 0, false);
        CHECK(fr.state == PYF__HFRAME_DONE && fr.instr == 5);
    }
    /* 3.10: f_lasti in code units, f_state */
    REQUIRE(pyf__offsets_builtin(0x030a0df0, &o, err, sizeof err) == PYF_OK);
    static const struct { int state; pyf__hframe_state want; } states[] = {
        {-2, PYF__HFRAME_NOT_STARTED}, {-1, PYF__HFRAME_SUSPENDED}, {0, PYF__HFRAME_RUNNING},
        {1, PYF__HFRAME_DONE}, {2, PYF__HFRAME_RUNNING}, {3, PYF__HFRAME_DONE},
        {4, PYF__HFRAME_DONE},
    };
    for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
        pyf__hframe fr = frame_of(&o, 7, states[i].state, false);
        CHECK_MSG(fr.state == states[i].want && fr.instr == 7, "f_state %d", states[i].state);
    }
    CHECK(frame_of(&o, -1, -2, false).instr == -1);
}

int main(void)
{
    older_refused();
    heap_layouts();
    heap_frames_decoded();
    return check_end();
}
