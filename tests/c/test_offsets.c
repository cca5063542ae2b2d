/*
 * test_offsets.c - opening targets: _Py_DebugOffsets validation, versions,
 * unreadable runtimes, probing and scanning, error helpers.
 */
#include "fake_target.h"

#include <string.h>

static const int k_minors[] = {13, 14, 15};

static int open_rc(fake_target *ft, uint64_t addr, pyf_target **t, char *err,
                   size_t errlen)
{
    pyf_reader r = fake_reader(ft, 0);
    *t = (pyf_target *)(uintptr_t)1; /* must be reset to NULL on failure */
    err[0] = '\0';
    return fake_open_detail(&r, addr, NULL, t, err, errlen);
}

/* ---- the fake tables themselves follow the published layouts ---------- */
static void test_table_layouts(void)
{
    check_begin("table layouts");
    uint8_t buf[1024];
    CHECK_EQ_INT(pyf_test_fill_offsets(buf, sizeof buf, 13, 0x030d12f0), 584);
    CHECK_EQ_INT(pyf_test_fill_offsets(buf, sizeof buf, 14, 0x030e0af0), 760);
    CHECK_EQ_INT(pyf_test_fill_offsets(buf, sizeof buf, 15, 0x030f02f0), 888);
    CHECK(memcmp(buf, "xdebugpy", 8) == 0);
    CHECK_EQ_INT(pyf_test_offsets_get(buf, 15, "version"), 0x030f02f0);
    CHECK_EQ_INT(pyf_test_offsets_get(buf, 15, "free_threaded"), 0);
    CHECK_EQ_INT(pyf_test_fill_offsets(buf, 100, 15, 0x030f02f0), 0);
    CHECK_EQ_INT(pyf_test_fill_offsets(buf, sizeof buf, 12, 0x030c00f0), 0);

    static const struct { int minor; const char *name; size_t off; } pos[] = {
        {13, "runtime_state.size", 24}, {13, "interpreter_state.size", 48},
        {13, "thread_state.size", 152}, {13, "interpreter_frame.size", 224},
        {13, "code_object.size", 272}, {13, "pyobject.size", 352},
        {13, "type_object.size", 368}, {13, "tuple_object.size", 400},
        {13, "list_object.size", 424}, {13, "dict_object.size", 448},
        {13, "float_object.size", 472}, {13, "long_object.size", 488},
        {13, "bytes_object.size", 512}, {13, "unicode_object.size", 536},
        {13, "gc.size", 568}, {13, "gc.collecting", 576},
        {14, "thread_state.size", 176}, {14, "interpreter_frame.size", 248},
        {14, "code_object.size", 312}, {14, "pyobject.size", 400},
        {14, "type_object.size", 416}, {14, "tuple_object.size", 448},
        {14, "list_object.size", 472}, {14, "set_object.size", 496},
        {14, "dict_object.size", 528}, {14, "float_object.size", 552},
        {14, "long_object.size", 568}, {14, "bytes_object.size", 592},
        {14, "unicode_object.size", 616}, {14, "gc.size", 648},
        {14, "gen_object.size", 664}, {14, "llist_node.next", 696},
        {14, "debugger_support.eval_breaker", 712},
        {14, "debugger_support.debugger_script_path_size", 752},
        {15, "thread_state.size", 176}, {15, "err_stackitem.exc_value", 304},
        {15, "interpreter_frame.size", 312}, {15, "code_object.size", 376},
        {15, "pyobject.size", 464}, {15, "type_object.size", 480},
        {15, "heap_type_object.size", 528}, {15, "tuple_object.size", 544},
        {15, "list_object.size", 568}, {15, "set_object.size", 592},
        {15, "dict_object.size", 624}, {15, "float_object.size", 648},
        {15, "long_object.size", 664}, {15, "bytes_object.size", 688},
        {15, "unicode_object.size", 712}, {15, "gc.size", 752},
        {15, "gen_object.size", 792}, {15, "llist_node.next", 824},
        {15, "debugger_support.eval_breaker", 840},
        {15, "debugger_support.debugger_script_path_size", 880},
        {15, "thread_state.base_frame", 216},
        {15, "thread_state.last_profiled_frame_seq", 232},
    };
    for (size_t i = 0; i < sizeof pos / sizeof pos[0]; i++)
        CHECK_MSG(pyf_test_offsets_field(pos[i].minor, pos[i].name) == pos[i].off,
                  "3.%d %s", pos[i].minor, pos[i].name);
    CHECK(pyf_test_offsets_field(13, "thread_state.base_frame") == (size_t)-1);
    CHECK(pyf_test_offsets_field(13, "gen_object.size") == (size_t)-1);
    CHECK(pyf_test_offsets_field(14, "thread_state.base_frame") == (size_t)-1);
    CHECK(pyf_test_offsets_field(14, "no_such.field") == (size_t)-1);

    pyf_test_fill_offsets(buf, sizeof buf, 15, 0x030f02f0);
    CHECK_EQ_INT(pyf_test_offsets_get(buf, 15, "thread_state.native_thread_id"), 184);
    CHECK_EQ_INT(pyf_test_offsets_get(buf, 15, "interpreter_frame.owner"), 74);
    CHECK_EQ_INT(pyf_test_offsets_get(buf, 15, "runtime_state.interpreters_head"), 936);
    CHECK(pyf_test_offsets_get(buf, 15, "nope.nope") == UINT64_MAX);
}

/* ---- error helpers ----------------------------------------------------- */
static void test_error_helpers(void)
{
    check_begin("error helpers");
    CHECK_EQ_STR(pyf_error_name(PYF_OK), "PYF_OK");
    CHECK_EQ_STR(pyf_error_name(PYF_EFAULT), "PYF_EFAULT");
    CHECK_EQ_STR(pyf_error_name(PYF_ECYCLE), "PYF_ECYCLE");
    CHECK_EQ_STR(pyf_error_name(PYF_ENOTHREAD), "PYF_ENOTHREAD");
    CHECK_EQ_STR(pyf_error_name(-999), "PYF_UNKNOWN");
    CHECK_EQ_STR(pyf_error_name(5), "PYF_UNKNOWN");
    CHECK_EQ_STR(pyf_error_message(PYF_EFAULT), "target memory not readable");
    CHECK_EQ_STR(pyf_error_message(PYF_EVERSION), "unsupported CPython version");
    CHECK_EQ_STR(pyf_error_message(-999), "unknown error");
    CHECK_EQ_INT(pyf_library_version(), PYF_VERSION_NUMBER);
    pyf_target_close(NULL);
    pyf_snapshot_free(NULL);
}

/* ---- valid tables open, for every version and several patch levels ---- */
static void check_open_ok(int minor, uint64_t hex, int with_readv)
{
    fake_target *ft = fake_new_hex(minor, hex);
    pyf_reader r = fake_reader(ft, with_readv);
    pyf_options opts;
    memset(&opts, 0, sizeof opts);
    opts.struct_size = sizeof opts;
    pyf_target *t = NULL;
    char err[256] = "";
    int rc = fake_open_detail(&r, fake_runtime_addr(ft), &opts, &t, err, sizeof err);
    CHECK_MSG(rc == 0, "3.%d hex 0x%llx: %s: %s", minor, (unsigned long long)hex,
              pyf_error_name(rc), err);
    if (rc == 0) {
        CHECK(t != NULL);
        pyf_python_info info;
        memset(&info, 0xff, sizeof info);
        CHECK_EQ_INT(pyf_target_python(t, &info), 0);
        CHECK_EQ_INT(info.runtime_addr, fake_runtime_addr(ft));
        CHECK_EQ_INT(info.hexversion, hex);
        CHECK_EQ_INT(info.major, 3);
        CHECK_EQ_INT(info.minor, minor);
        CHECK_EQ_INT(info.micro, (hex >> 8) & 0xff);
        CHECK_EQ_INT(info.level, (hex >> 4) & 0xf);
        CHECK_EQ_INT(info.serial, hex & 0xf);
        CHECK_EQ_INT(info.free_threaded, 0);
        pyf_failure f = {.struct_size = sizeof f};
        CHECK_RC(pyf_target_failure(t, &f), PYF_OK);
        CHECK_EQ_INT(f.code, 0);
        CHECK_EQ_STR(f.detail, "");
        pyf_target_close(t);
    }
    pyf_python_info pi;
    memset(&pi, 0, sizeof pi);
    CHECK_EQ_INT(pyf_runtime_probe(&r, fake_runtime_addr(ft), &pi, NULL), 0);
    CHECK_EQ_INT(pi.minor, minor);
    CHECK_EQ_INT(pi.hexversion, hex);
    fake_free(ft);
}

static void test_open_valid(void)
{
    check_begin("open valid tables");
    check_open_ok(13, 0x030d12f0, 0);
    check_open_ok(13, 0x030d00f0, 1);
    check_open_ok(13, 0x030d05f0, 0);
    check_open_ok(14, 0x030e0af0, 0);
    check_open_ok(14, 0x030e00f0, 1);
    check_open_ok(15, 0x030f02f0, 0);
    check_open_ok(15, 0x030f00f0, 1);
    check_open_ok(15, 0x030f01f0, 0);
}

/* ---- argument errors --------------------------------------------------- */
static void test_open_args(void)
{
    check_begin("open argument errors");
    fake_target *ft = fake_new(15);
    pyf_target *t;
    char err[256];
    CHECK_EQ_INT(open_rc(ft, 0, &t, err, sizeof err), PYF_EINVAL);
    CHECK(t == NULL);

    pyf_reader r = fake_reader(ft, 0);
    t = (pyf_target *)(uintptr_t)1;
    CHECK_EQ_INT(fake_open_detail(NULL, fake_runtime_addr(ft), NULL, &t, err, sizeof err),
                 PYF_EINVAL);
    CHECK(t == NULL);
    pyf_reader noread = r;
    noread.read = NULL;
    t = (pyf_target *)(uintptr_t)1;
    CHECK_EQ_INT(fake_open_detail(&noread, fake_runtime_addr(ft), NULL, &t, err, sizeof err),
                 PYF_EINVAL);
    CHECK(t == NULL);
    CHECK_EQ_INT(fake_open_detail(&r, fake_runtime_addr(ft), NULL, NULL, err, sizeof err),
                 PYF_EINVAL);
    /* err may be omitted */
    t = (pyf_target *)(uintptr_t)1;
    CHECK_EQ_INT(fake_open_detail(&r, 0, NULL, &t, NULL, 0), PYF_EINVAL);
    CHECK(t == NULL);
    fake_free(ft);
}

/* ---- cookie ------------------------------------------------------------ */
static void test_wrong_cookie(void)
{
    check_begin("wrong cookie");
    for (size_t i = 0; i < 3; i++) {
        fake_target *ft = fake_new(k_minors[i]);
        pyf_target *t;
        char err[256];
        fake_write(ft, fake_runtime_addr(ft), "xdebugpz", 8);
        CHECK_EQ_INT(open_rc(ft, fake_runtime_addr(ft), &t, err, sizeof err), PYF_ENOTPY);
        CHECK(t == NULL);
        pyf_reader r = fake_reader(ft, 0);
        CHECK_EQ_INT(pyf_runtime_probe(&r, fake_runtime_addr(ft), NULL, NULL), PYF_ENOTPY);
        /* zeroed memory: no runtime here */
        uint64_t zeros = fake_alloc(ft, 4096);
        CHECK_EQ_INT(open_rc(ft, zeros, &t, err, sizeof err), PYF_ENOTPY);
        CHECK(t == NULL);
        /* the cookie quoted in a text (a shell's memory): the word after it
         * is no version, so no "unsupported CPython 84.79.7812" is made up */
        uint64_t text = fake_alloc(ft, 4096);
        fake_write(ft, text, "xdebugpy\" cookie there; and more", 32);
        pyf_python_info info;
        memset(&info, 0, sizeof info);
        CHECK_EQ_INT(open_rc(ft, text, &t, err, sizeof err), PYF_ENOTPY);
        CHECK_MSG(strstr(err, "is no CPython version") != NULL, "%s", err);
        CHECK_EQ_INT(pyf_runtime_probe(&r, text, &info, NULL), PYF_ENOTPY);
        CHECK_EQ_INT(info.hexversion, 0);
        fake_free(ft);
    }
}

/* ---- versions ---------------------------------------------------------- */
static void check_version_refused(int layout_minor, uint64_t hex, const char *text)
{
    fake_target *ft = fake_new(layout_minor);
    fake_set_offset(ft, "version", hex);
    pyf_target *t;
    char err[256];
    int rc = open_rc(ft, fake_runtime_addr(ft), &t, err, sizeof err);
    CHECK_MSG(rc == PYF_EVERSION, "hex 0x%llx: got %s (%s)", (unsigned long long)hex,
              pyf_error_name(rc), err);
    CHECK(t == NULL);
    if (text) { /* a final release: named in the one wording of every front end */
        char want[128];
        snprintf(want, sizeof want, "unsupported CPython %s (pyframes reads CPython 3.8-3.15)",
                 text);
        CHECK_EQ_STR(err, want);
    }
    /* the probe fails the same way, and says the version as numbers */
    pyf_reader r = fake_reader(ft, 0);
    pyf_failure f;
    pyf_python_info info;
    memset(&f, 0, sizeof f);
    memset(&info, 0, sizeof info);
    f.struct_size = sizeof f;
    CHECK_EQ_INT(pyf_runtime_probe(&r, fake_runtime_addr(ft), &info, &f), PYF_EVERSION);
    CHECK_EQ_INT(f.code, PYF_EVERSION);
    CHECK_EQ_STR(f.detail, err);
    CHECK_EQ_INT(info.hexversion, hex);
    CHECK(strncmp(err, "unsupported CPython ", 20) == 0);
    fake_free(ft);
}

static void test_versions(void)
{
    check_begin("unsupported versions");
    check_version_refused(13, 0x030c0af0, "3.12.10");
    check_version_refused(13, 0x030c00f0, "3.12.0");
    check_version_refused(15, 0x031000f0, "3.16.0");
    check_version_refused(15, 0x031002f0, "3.16.2");
    check_version_refused(15, 0x040f02f0, NULL);     /* 4.15 */
    check_version_refused(15, 0x020702f0, NULL);     /* 2.7 */
    check_version_refused(15, 0x030f00b2, NULL);     /* 3.15.0b2: lacks seq */
    check_version_refused(15, 0x030f00b1, NULL);
    check_version_refused(15, 0x030f00a5, NULL);     /* 3.15.0a5 */
    check_version_refused(14, 0x030e00a7, NULL);     /* 3.14.0a7: other layout */
    check_version_refused(13, 0x030d00b1, NULL);     /* 3.13.0b1 */
}

/* ---- section sizes and field offsets ---------------------------------- */
static void check_offsets_refused(int minor, const char *field, uint64_t value,
                                  const char *expect_in_err)
{
    fake_target *ft = fake_new(minor);
    fake_set_offset(ft, field, value);
    pyf_target *t;
    char err[512];
    int rc = open_rc(ft, fake_runtime_addr(ft), &t, err, sizeof err);
    CHECK_MSG(rc == PYF_EOFFSETS, "3.%d %s=%llu: got %s (%s)", minor, field,
              (unsigned long long)value, pyf_error_name(rc), err);
    CHECK(t == NULL);
    CHECK_MSG(strstr(err, expect_in_err) != NULL, "3.%d %s: err '%s' does not name '%s'",
              minor, field, err, expect_in_err);
    pyf_reader r = fake_reader(ft, 0);
    CHECK_EQ_INT(pyf_runtime_probe(&r, fake_runtime_addr(ft), NULL, NULL), PYF_EOFFSETS);
    if (rc == 0)
        pyf_target_close(t);
    fake_free(ft);
}

static void test_bad_offsets(void)
{
    check_begin("bad sizes and offsets");
    for (size_t i = 0; i < 3; i++) {
        int m = k_minors[i];
        uint64_t ts_size = 0, fr_size = 0, co_size = 0, in_size = 0, rt_size = 0,
                 un_size = 0;
        {
            fake_target *ft = fake_new(m);
            ts_size = fake_off(ft, "thread_state.size");
            fr_size = fake_off(ft, "interpreter_frame.size");
            co_size = fake_off(ft, "code_object.size");
            in_size = fake_off(ft, "interpreter_state.size");
            rt_size = fake_off(ft, "runtime_state.size");
            un_size = fake_off(ft, "unicode_object.size");
            fake_free(ft);
        }
        /* sizes: zero or absurd */
        check_offsets_refused(m, "thread_state.size", 0, "thread_state");
        check_offsets_refused(m, "interpreter_frame.size", 2u << 20, "interpreter_frame");
        check_offsets_refused(m, "code_object.size", UINT64_MAX, "code_object");
        check_offsets_refused(m, "interpreter_state.size", 0, "interpreter_state");
        check_offsets_refused(m, "runtime_state.size", (uint64_t)1 << 40, "runtime_state");
        check_offsets_refused(m, "unicode_object.size", 0, "unicode_object");
        /* offsets outside their section */
        check_offsets_refused(m, "thread_state.current_frame", ts_size, "current_frame");
        check_offsets_refused(m, "thread_state.native_thread_id", ts_size + 4096,
                              "native_thread_id");
        check_offsets_refused(m, "interpreter_frame.owner", fr_size + 100, "owner");
        check_offsets_refused(m, "interpreter_frame.previous", fr_size, "previous");
        check_offsets_refused(m, "code_object.qualname", (uint64_t)1 << 40, "qualname");
        check_offsets_refused(m, "code_object.linetable", co_size, "linetable");
        check_offsets_refused(m, "interpreter_state.threads_head", in_size, "threads_head");
        check_offsets_refused(m, "runtime_state.interpreters_head", rt_size,
                              "interpreters_head");
        check_offsets_refused(m, "unicode_object.state", un_size, "state");
        if (m == 15)
            check_offsets_refused(m, "thread_state.base_frame", ts_size + 8, "base_frame");
        /* all ones is no "field this version lacks" (those are unchecked) */
        check_offsets_refused(m, "interpreter_frame.previous", UINT64_MAX, "previous");
        check_offsets_refused(m, "interpreter_frame.owner", UINT64_MAX, "owner");
        check_offsets_refused(m, "code_object.filename", UINT64_MAX, "filename");
        if (m >= 14)
            check_offsets_refused(m, "interpreter_frame.tlbc_index", UINT64_MAX, "tlbc_index");
        if (m >= 14)
            check_offsets_refused(m, "code_object.co_tlbc", co_size, "co_tlbc");
    }
}

/* ---- unreadable runtime ------------------------------------------------ */
static void test_unreadable_runtime(void)
{
    check_begin("unreadable runtime");
    for (size_t i = 0; i < 3; i++) {
        fake_target *ft = fake_new(k_minors[i]);
        pyf_target *t;
        char err[256];
        uint64_t rt = fake_runtime_addr(ft);

        CHECK_EQ_INT(open_rc(ft, fake_unmapped_addr(ft), &t, err, sizeof err), PYF_EFAULT);
        CHECK(t == NULL);

        fake_add_fault(ft, rt, 4096, PYF_EFAULT);
        CHECK_EQ_INT(open_rc(ft, rt, &t, err, sizeof err), PYF_EFAULT);
        CHECK(t == NULL);
        pyf_reader r = fake_reader(ft, 0);
        pyf_failure f;
        memset(&f, 0, sizeof f);
        f.struct_size = sizeof f;
        CHECK_EQ_INT(pyf_runtime_probe(&r, rt, NULL, &f), PYF_EFAULT);
        /* a failed read: what, where, how much */
        CHECK_EQ_STR(f.what, "_Py_DebugOffsets");
        CHECK_ADDR(f.addr, rt);
        CHECK(f.len > 0 && strstr(f.detail, "reading _Py_DebugOffsets at 0x") == f.detail);
        fake_clear_faults(ft);

        fake_add_fault(ft, rt, 4096, PYF_EPERM);
        CHECK_EQ_INT(open_rc(ft, rt, &t, err, sizeof err), PYF_EPERM);
        CHECK(t == NULL);
        CHECK_EQ_INT(pyf_runtime_probe(&r, rt, NULL, NULL), PYF_EPERM);
        fake_clear_faults(ft);

        /* a reader that only ever returns short reads */
        fake_short_reads_over(ft, 4);
        int rc = open_rc(ft, rt, &t, err, sizeof err);
        CHECK_MSG(rc < 0 && fake_known_error(rc), "short reads: %d", rc);
        CHECK(t == NULL);
        fake_short_reads_over(ft, 0);

        /* and then it opens */
        rc = open_rc(ft, rt, &t, err, sizeof err);
        CHECK_EQ_INT(rc, 0);
        if (rc == 0)
            pyf_target_close(t);
        fake_free(ft);
    }
}

/* ---- finding the runtime in a range ------------------------------------ */
static void test_find_in_range(void)
{
    check_begin("find runtime in range");
    for (size_t i = 0; i < 3; i++) {
        fake_target *ft = fake_new(k_minors[i]);
        uint64_t rt = fake_runtime_addr(ft);
        /* a decoy cookie with a bad version in an earlier mapping */
        uint64_t decoy = fake_region(ft, rt - 0x100000, 0x10000);
        fake_write(ft, decoy + 0x2000, "xdebugpy", 8);
        fake_w64(ft, decoy + 0x2008, 0x020700F0);
        pyf_reader r = fake_reader(ft, 0);
        uint64_t found = 0;
        int rc = pyf_runtime_find_in_range(&r, decoy, rt + 0x20000, &found, NULL);
        CHECK_MSG(rc == 0, "3.%d: %s", k_minors[i], pyf_error_name(rc));
        CHECK_EQ_INT(found, rt);

        found = 0;
        pyf_failure f;
        memset(&f, 0, sizeof f);
        f.struct_size = sizeof f;
        rc = pyf_runtime_find_in_range(&r, decoy, decoy + 0x10000, &found, &f);
        CHECK_MSG(rc < 0, "3.%d: found a runtime in the decoy range: 0x%llx",
                  k_minors[i], (unsigned long long)found);
        /* the failure names the table refused and why */
        CHECK_MSG(strstr(f.detail, "was rejected: unsupported CPython version (PYF_EVERSION): "
                         "unsupported CPython 2.7.0") != NULL, "%s", f.detail);
        /* an empty range finds nothing */
        rc = pyf_runtime_find_in_range(&r, rt, rt, &found, NULL);
        CHECK(rc < 0);
        fake_free(ft);
    }
}

/* ---- the struct_size contract (pyframes.h, "ABI policy") --------------- */

/* The first published layouts, as a caller built against pyframes 0.1 has
 * them: no pyf_reader.message. */
typedef struct reader_v0 {
    uint32_t struct_size;
    pyf_read_fn read;
    pyf_readv_fn readv;
    pyf_write_fn write;
    void *arg;
} reader_v0;

typedef struct options_v0 {
    uint32_t struct_size;
    uint32_t max_depth, max_threads, max_string;
} options_v0;

typedef struct request_v0 {
    uint32_t struct_size;
    uint32_t flags;
    uint64_t native_tid;
    uint32_t max_depth;
    uint32_t reserved;
} request_v0;

/* A caller built against a newer header: one field more. */
typedef struct options_next {
    pyf_options base;
    uint32_t future;
    uint32_t pad;
} options_next;

static const char *fake_own_words(void *arg)
{
    (void)arg;
    return "the reader's own words";
}

static void test_struct_sizes(void)
{
    check_begin("struct_size contract");
    CHECK_EQ_INT(sizeof(reader_v0), PYF_READER_SIZE_V0);
    CHECK_EQ_INT(sizeof(options_v0), PYF_OPTIONS_SIZE_V0);
    CHECK_EQ_INT(sizeof(request_v0), PYF_SNAPSHOT_REQUEST_SIZE_V0);
    CHECK(sizeof(reader_v0) < sizeof(pyf_reader));
    CHECK_EQ_INT(sizeof(pyf_frame), PYF_FRAME_SIZE);
    CHECK_EQ_INT(sizeof(pyf_thread), PYF_THREAD_SIZE);
    CHECK_EQ_INT(sizeof(pyf_interp), PYF_INTERP_SIZE);
    for (size_t i = 0; i < 3; i++) {
        fake_target *ft = fake_new(k_minors[i]);
        uint64_t rt = fake_runtime_addr(ft);
        pyf_reader cur = fake_reader(ft, 1);
        char err[256];
        /* one thread, five frames deep */
        fake_loc loc = {1, 7, 7, 0, 4};
        uint64_t code = fake_code(ft, "abi.py", "f", 7, &loc, 1);
        fake_thread *th = fake_add_thread(ft, fake_add_interp(ft, 0), 0x7f0011, 11, 1);
        for (int k = 0; k < 5; k++)
            fake_push_frame(th, code, 0);

        /* an older caller: smaller reader, options and request */
        reader_v0 old;
        memset(&old, 0xA5, sizeof old); /* padding of an old caller is not ours */
        old.struct_size = sizeof old;
        old.read = cur.read;
        old.readv = cur.readv;
        old.write = NULL;
        old.arg = cur.arg;
        options_v0 oopts = {sizeof oopts, 3, 0, 0};
        pyf_target *t = NULL;
        int rc = fake_open_detail((const pyf_reader *)&old, rt,
                                 (const pyf_options *)&oopts, &t, err, sizeof err);
        CHECK_MSG(rc == 0, "3.%d old layout: %s (%s)", k_minors[i], pyf_error_name(rc), err);
        if (rc == 0) {
            request_v0 oreq = {sizeof oreq, 0, 0, 0, 0};
            pyf_snapshot *s = NULL;
            rc = pyf_snapshot_take(t, (const pyf_snapshot_request *)&oreq, &s);
            CHECK_MSG(rc == 0, "3.%d snapshot, old request: %s", k_minors[i], pyf_error_name(rc));
            if (rc == 0) {
                const char *why = fake_check_snapshot(s);
                CHECK_MSG(why == NULL, "%s", why ? why : "");
                CHECK_EQ_INT(s->nthreads, 1);
                if (s->nthreads == 1) /* cut at the old options' max_depth */
                    CHECK_EQ_INT(s->threads[0].nframes, 3);
            }
            pyf_snapshot_free(s);
            CHECK_EQ_INT(pyf_runtime_probe((const pyf_reader *)&old, rt, NULL, NULL), 0);
            pyf_target_close(t);
        }

        /* smaller than the first layout: refused */
        old.struct_size = PYF_READER_SIZE_V0 - 8;
        t = (pyf_target *)(uintptr_t)1;
        CHECK_EQ_INT(fake_open_detail((const pyf_reader *)&old, rt, NULL, &t, err, sizeof err),
                     PYF_EINVAL);
        CHECK(t == NULL);
        CHECK(strstr(err, "pyf_reader.struct_size") != NULL);
        oopts.struct_size = 12;
        CHECK_EQ_INT(fake_open_detail(&cur, rt, (const pyf_options *)&oopts, &t, err, sizeof err),
                     PYF_EINVAL);

        /* a newer caller: accepted while it asks for nothing new */
        options_next next;
        memset(&next, 0, sizeof next);
        next.base.struct_size = sizeof next;
        next.base.max_depth = 2;
        rc = fake_open_detail(&cur, rt, &next.base, &t, err, sizeof err);
        CHECK_MSG(rc == 0, "newer options, zero tail: %s (%s)", pyf_error_name(rc), err);
        if (rc == 0)
            pyf_target_close(t);
        next.future = 1;
        t = (pyf_target *)(uintptr_t)1;
        CHECK_EQ_INT(fake_open_detail(&cur, rt, &next.base, &t, err, sizeof err), PYF_ENOTSUP);
        CHECK(t == NULL);
        CHECK(strstr(err, "pyf_options") != NULL);

        /* the reader's own message reaches the failure detail */
        cur.message = fake_own_words;
        rc = fake_open_detail(&cur, rt, NULL, &t, err, sizeof err);
        CHECK_EQ_INT(rc, 0);
        if (rc == 0) {
            fake_add_fault(ft, rt, 8, PYF_EFAULT);
            pyf_target_flush(t);
            uint64_t unmapped = fake_unmapped_addr(ft);
            pyf_target *t2 = NULL;
            CHECK_EQ_INT(fake_open_detail(&cur, unmapped, NULL, &t2, err, sizeof err), PYF_EFAULT);
            CHECK_MSG(strstr(err, "the reader's own words") != NULL, "detail: %s", err);
            /* the same failure as data */
            pyf_failure f;
            memset(&f, 0, sizeof f);
            f.struct_size = sizeof f;
            CHECK_RC(pyf_target_open(&cur, unmapped, NULL, &t2, &f), PYF_EFAULT);
            CHECK_EQ_INT(f.code, PYF_EFAULT);
            CHECK_EQ_STR(f.what, "_Py_DebugOffsets");
            CHECK_ADDR(f.addr, unmapped);
            CHECK_EQ_INT(f.len, 24);
            CHECK_EQ_STR(f.reader_message, "the reader's own words");
            /* a failure struct from before its first layout is refused */
            f.struct_size = 16;
            CHECK_RC(pyf_target_open(&cur, unmapped, NULL, &t2, &f), PYF_EINVAL);
            fake_clear_faults(ft);
            pyf_target_close(t);
        }
        fake_free(ft);
    }
}

/* ---- pyf_runtime_locate over a list of mappings ------------------------- */
static int locate(fake_target *ft, uint64_t symbol, uint32_t methods, const pyf_mapping *maps,
                  size_t n, uint64_t budget, pyf_runtime_location *out, pyf_failure *f)
{
    pyf_reader r = fake_reader(ft, 0);
    pyf_locate_request req;
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.methods = methods;
    req.symbol_addr = symbol;
    req.maps = maps;
    req.nmaps = n;
    req.scan_budget = budget;
    memset(out, 0xA5, sizeof *out);
    out->struct_size = sizeof *out;
    memset(f, 0xA5, sizeof *f);
    f->struct_size = sizeof *f;
    return pyf_runtime_locate(&r, &req, out, f);
}

static void test_locate(void)
{
    check_begin("runtime location from mappings");
    for (size_t i = 0; i < 3; i++) {
        fake_target *ft = fake_new(k_minors[i]);
        uint64_t rt = fake_runtime_addr(ft);
        uint64_t lo = rt & ~(uint64_t)0xFFF;
        pyf_runtime_location out;
        pyf_failure f;
        /* a writable mapping of a python file (scanned first) holding a
         * decoy cookie with a 2.7 version, then the runtime's, anonymous */
        uint64_t decoy = fake_region(ft, lo - 0x100000, 0x10000);
        fake_write(ft, decoy + 0x2000, "xdebugpy", 8);
        fake_w64(ft, decoy + 0x2008, 0x020700F0);
        pyf_mapping maps[2] = {
            {decoy, decoy + 0x10000, 0x1000, PYF_MAP_READ | PYF_MAP_WRITE, 0,
             "/nonexistent/libpython-decoy.so", NULL},
            {lo, lo + 0x1000, 0, PYF_MAP_READ | PYF_MAP_WRITE, 0, NULL, NULL},
        };

        /* the symbol */
        CHECK_RC(locate(ft, rt, 0, NULL, 0, 0, &out, &f), PYF_OK);
        CHECK_ADDR(out.addr, rt);
        CHECK_EQ_INT(out.method, PYF_LOCATE_SYMBOL);
        CHECK_EQ_INT(out.python.minor, (uint32_t)k_minors[i]);
        CHECK_EQ_STR(out.how, "the symbol _PyRuntime");
        CHECK(f.code == 0 && f.detail[0] == '\0');
        /* the scan, past the decoy */
        CHECK_RC(locate(ft, 0, 0, maps, 2, 0, &out, &f), PYF_OK);
        CHECK_ADDR(out.addr, rt);
        CHECK_EQ_INT(out.method, PYF_LOCATE_SCAN);
        CHECK(strstr(out.how, "runtime cookie at 0x") != NULL);
        /* methods restrict the search */
        CHECK_RC(locate(ft, rt, PYF_LOCATE_SECTION, maps, 2, 0, &out, &f), PYF_ENOTPY);
        CHECK_EQ_INT(out.addr, 0);
        CHECK_EQ_STR(out.how, "");
        CHECK_EQ_INT(f.code, PYF_ENOTPY);
        CHECK(strstr(f.detail, "no CPython runtime found in the target") == f.detail);
        /* a budget smaller than the decoy mapping stops before the runtime */
        CHECK_RC(locate(ft, 0, PYF_LOCATE_SCAN, maps, 2, 4096, &out, &f), PYF_ENOTPY);
        CHECK(strstr(f.detail, "the scan stopped after") != NULL);
        /* only the decoy: refused, and its version reported as numbers and
         * in the words of every front end */
        CHECK_RC(locate(ft, 0, 0, maps, 1, 0, &out, &f), PYF_EVERSION);
        CHECK_EQ_INT(out.python.hexversion, 0x020700F0);
        CHECK_EQ_INT(out.python.major, 2);
        CHECK_EQ_INT(out.python.minor, 7);
        CHECK_EQ_STR(f.detail, "unsupported CPython 2.7.0 (pyframes reads CPython 3.8-3.15)");
        /* a program (this test, an ELF file without anything of CPython)
         * and memory without a runtime: the target named as the request
         * names it ("the target" for a caller of the first layout) */
        {
            uint64_t empty = fake_region(ft, lo - 0x200000, 0x1000);
            pyf_mapping none[2] = {
                {0x400000, 0x401000, 0, PYF_MAP_READ, 0, "/proc/self/exe", NULL},
                {empty, empty + 0x1000, 0, PYF_MAP_READ | PYF_MAP_WRITE, 0, NULL, NULL},
            };
            pyf_reader r0 = fake_reader(ft, 0);
            pyf_locate_request req;
            memset(&req, 0, sizeof req);
            req.struct_size = sizeof req;
            req.maps = none;
            req.nmaps = 2;
            req.target_name = "process 7 (sleep)";
            CHECK_RC(pyf_runtime_locate(&r0, &req, &out, &f), PYF_ENOTPY);
            CHECK_EQ_STR(f.detail, "process 7 (sleep) is not a Python process");
            req.struct_size = PYF_LOCATE_REQUEST_SIZE_V0;
            CHECK_RC(pyf_runtime_locate(&r0, &req, &out, &f), PYF_ENOTPY);
            CHECK_EQ_STR(f.detail, "the target is not a Python process");
            /* without a file to search (none given, or not asked for) it
             * cannot say so: what was searched instead */
            req.struct_size = sizeof req;
            req.maps = &none[1];
            req.nmaps = 1;
            CHECK_RC(pyf_runtime_locate(&r0, &req, &out, &f), PYF_ENOTPY);
            CHECK_MSG(strstr(f.detail, "no CPython runtime found in process 7 (sleep): ") ==
                      f.detail, "%s", f.detail);
            req.maps = none;
            req.nmaps = 2;
            req.methods = PYF_LOCATE_SCAN;
            CHECK_RC(pyf_runtime_locate(&r0, &req, &out, &f), PYF_ENOTPY);
            CHECK_MSG(strstr(f.detail, "no CPython runtime found in process 7 (sleep): ") ==
                      f.detail, "%s", f.detail);
        }
        /* a bad symbol address falls back to the mappings */
        CHECK_RC(locate(ft, decoy + 0x2000, 0, maps, 2, 0, &out, &f), PYF_OK);
        CHECK_ADDR(out.addr, rt);
        /* argument errors, each named */
        pyf_reader r = fake_reader(ft, 0);
        pyf_locate_request req;
        memset(&req, 0, sizeof req);
        req.struct_size = sizeof req;
        req.nmaps = 2;
        CHECK_RC(pyf_runtime_locate(&r, &req, &out, &f), PYF_EINVAL);  /* maps NULL */
        CHECK(strstr(f.detail, "maps is NULL") != NULL);
        CHECK_RC(pyf_runtime_locate(&r, NULL, &out, &f), PYF_EINVAL);
        CHECK_EQ_STR(f.detail, "no request given");
        req.struct_size = 8;
        req.nmaps = 0;
        CHECK_RC(pyf_runtime_locate(&r, &req, &out, &f), PYF_EINVAL);  /* too small */
        CHECK(strstr(f.detail, "pyf_locate_request.struct_size is 8") == f.detail);
        /* an output struct of an older caller gets only its bytes */
        req.struct_size = sizeof req;
        req.symbol_addr = rt;
        struct { uint32_t struct_size; uint32_t method; uint64_t addr; pyf_python_info python;
                 char how[256]; uint64_t guard; } small;
        memset(&small, 0x5A, sizeof small);
        small.struct_size = PYF_RUNTIME_LOCATION_SIZE_V0;
        CHECK_RC(pyf_runtime_locate(&r, &req, (pyf_runtime_location *)&small, NULL), PYF_OK);
        CHECK_ADDR(small.addr, rt);
        CHECK(small.guard == 0x5A5A5A5A5A5A5A5Aull);
        /* too small an output struct or failure: refused, nothing searched */
        small.struct_size = PYF_RUNTIME_LOCATION_SIZE_V0 - 8;
        CHECK_RC(pyf_runtime_locate(&r, &req, (pyf_runtime_location *)&small, &f), PYF_EINVAL);
        f.struct_size = 16;
        CHECK_RC(pyf_runtime_locate(&r, &req, &out, &f), PYF_EINVAL);
        fake_free(ft);
    }
}

int main(void)
{
    fake_watchdog(100, "test_offsets");
    test_table_layouts();
    test_error_helpers();
    test_open_valid();
    test_open_args();
    test_wrong_cookie();
    test_versions();
    test_bad_offsets();
    test_unreadable_runtime();
    test_find_in_range();
    test_struct_sizes();
    test_locate();
    return check_end();
}
