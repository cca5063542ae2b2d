/*
 * test_null_args.c - every exported function given NULL for its handle and
 * for each pointer it needs: PYF_EINVAL (a function returning void does
 * nothing), never a crash, and the failure out-parameter of the calls
 * without a target says which argument was missing ("NULL" in pyframes.h's
 * ABI policy).  The list of functions called is checked against the
 * header's PYF_API declarations, so a new function cannot go untested.
 */
#define PYF_STATIC_API /* pyf_snapshot_take_copy is exported too */
#include "fake_target.h"

#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#ifndef PYF_HEADER
#error "PYF_HEADER must name native/include/pyframes.h"
#endif

/* Every function this test calls with NULLs (keep in header order). */
static const char *const k_called[] = {
    "pyf_error_message", "pyf_error_name", "pyf_library_version",
    "pyf_target_open", "pyf_target_open_pid", "pyf_target_close",
    "pyf_target_failure", "pyf_target_python", "pyf_target_flush",
    "pyf_target_stats", "pyf_target_set_cache", "pyf_target_reset_stats",
    "pyf_snapshot_take", "pyf_snapshot_free", "pyf_snapshot_entries",
    "pyf_snapshot_thread_facts", "pyf_snapshot_fact_values", "pyf_snapshot_table",
    "pyf_snapshot_take_copy", "pyf_sample_run",
    "pyf_snapshot_tasks",
    "pyf_target_set_asyncio", "pyf_target_set_os_threads", "pyf_runtime_probe", "pyf_runtime_locate",
    "pyf_runtime_find_in_range", "pyf_elf_find_runtime", "pyf_elf_find_asyncio",
    "pyf_core_compressions", "pyf_core_open", "pyf_core_close", "pyf_core_info_get",
    "pyf_core_threads", "pyf_core_mappings", "pyf_core_files", "pyf_core_reader",
    "pyf_core_native_frames", "pyf_target_open_core",
    "pyf_frame_locals", "pyf_value_read", "pyf_values_free",
};
#define NCALLED (sizeof k_called / sizeof k_called[0])

static bool called(const char *name, size_t len)
{
    for (size_t i = 0; i < NCALLED; i++)
        if (strlen(k_called[i]) == len && strncmp(k_called[i], name, len) == 0)
            return true;
    return false;
}

/* Each "PYF_API <type> pyf_name(" of the header is in k_called. */
static void test_every_function_listed(void)
{
    static char text[1 << 17];
    FILE *fp = fopen(PYF_HEADER, "r");
    size_t n, found = 0;

    check_begin("every exported function is called");
    REQUIRE(fp != NULL);
    n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    REQUIRE(n > 0 && n < sizeof text - 1);
    text[n] = '\0';
    for (const char *p = strstr(text, "\nPYF_API "); p != NULL; p = strstr(p + 1, "\nPYF_API ")) {
        const char *paren = strchr(p, '('), *name = paren;

        REQUIRE(paren != NULL);
        while (name > p && (name[-1] == '_' || (name[-1] >= 'a' && name[-1] <= 'z') ||
                            (name[-1] >= '0' && name[-1] <= '9')))
            name--;
        CHECK_MSG(called(name, (size_t)(paren - name)), "%.*s is not called with NULLs",
                  (int)(paren - name), name);
        found++;
    }
    CHECK_EQ_INT(found, NCALLED);
}

/* A failure struct ready for a call, its code and detail poisoned. */
static pyf_failure *fresh(pyf_failure *f)
{
    memset(f, 0x5A, sizeof *f);
    f->struct_size = sizeof *f;
    return f;
}

/* The call failed with PYF_EINVAL and said something about it. */
#define CHECK_EINVAL_SAID(call, f)                                             \
    do {                                                                       \
        CHECK_RC(call, PYF_EINVAL);                                            \
        CHECK_EQ_INT((f).code, PYF_EINVAL);                                    \
        CHECK_MSG((f).detail[0] != '\0' && memchr((f).detail, 0, sizeof (f).detail), \
                  "%s", #call);                                                \
    } while (0)

static void test_calls_without_target(fake_target *ft)
{
    pyf_reader r = fake_reader(ft, 0);
    uint64_t rt = fake_runtime_addr(ft), found = 0;
    pyf_failure f;
    pyf_python_info info;
    pyf_runtime_location loc;
    pyf_locate_request req;
    pyf_target *t = (pyf_target *)(uintptr_t)1;

    check_begin("calls without a target");
    CHECK(pyf_error_message(0) != NULL && pyf_error_name(0) != NULL);
    CHECK_EQ_INT(pyf_library_version(), PYF_VERSION_NUMBER);

    CHECK_EINVAL_SAID(pyf_target_open(NULL, rt, NULL, &t, fresh(&f)), f);
    CHECK(t == NULL);
    CHECK_EINVAL_SAID(pyf_target_open(&r, rt, NULL, NULL, fresh(&f)), f);
    CHECK_EINVAL_SAID(pyf_target_open_pid((int)getpid(), 0, NULL, NULL, fresh(&f)), f);
    t = (pyf_target *)(uintptr_t)1;
    CHECK_RC(pyf_target_open_pid(0, 0, NULL, &t, NULL), PYF_EINVAL); /* failure optional */
    CHECK(t == NULL);

    CHECK_EINVAL_SAID(pyf_runtime_probe(NULL, rt, &info, fresh(&f)), f);
    CHECK_RC(pyf_runtime_probe(&r, rt, NULL, NULL), PYF_OK); /* out, failure optional */

    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    req.symbol_addr = rt;
    memset(&loc, 0, sizeof loc);
    loc.struct_size = sizeof loc;
    CHECK_EINVAL_SAID(pyf_runtime_locate(NULL, &req, &loc, fresh(&f)), f);
    CHECK_EINVAL_SAID(pyf_runtime_locate(&r, NULL, &loc, fresh(&f)), f);
    CHECK_RC(pyf_runtime_locate(&r, &req, NULL, NULL), PYF_OK); /* out optional */

    CHECK_EINVAL_SAID(pyf_runtime_find_in_range(NULL, rt, rt + 4096, &found, fresh(&f)), f);
    CHECK_EINVAL_SAID(pyf_runtime_find_in_range(&r, rt, rt + 4096, NULL, fresh(&f)), f);

    CHECK_EINVAL_SAID(pyf_elf_find_runtime(NULL, 0, &found, fresh(&f)), f);
    CHECK_EINVAL_SAID(pyf_elf_find_runtime("/proc/self/exe", 0, NULL, fresh(&f)), f);
    CHECK_EINVAL_SAID(pyf_elf_find_asyncio(NULL, 0, &found, fresh(&f)), f);
    CHECK_EINVAL_SAID(pyf_elf_find_asyncio("/proc/self/exe", 0, NULL, fresh(&f)), f);
    CHECK_RC(pyf_elf_find_runtime(NULL, 0, NULL, NULL), PYF_EINVAL);
}

static void test_target_handle(fake_target *ft)
{
    pyf_reader r = fake_reader(ft, 0);
    pyf_target *t = NULL;
    pyf_snapshot *s = (pyf_snapshot *)(uintptr_t)1;
    pyf_failure f;
    pyf_python_info info;
    pyf_stats st;
    pyf_frame_table tab;
    pyf_task_list tl;
    const uint64_t *entries = (const uint64_t *)(uintptr_t)1;
    uint32_t effective = 7;
    uint64_t buf[(sizeof(pyf_snapshot_copy) + 7) / 8 + 64];
    pyf_snapshot_copy *c = (pyf_snapshot_copy *)buf;

    check_begin("a NULL target, and NULL pointers with a real one");
    /* NULL handle */
    pyf_target_close(NULL);
    pyf_target_flush(NULL);
    pyf_target_reset_stats(NULL);
    memset(&st, 0x5A, sizeof st);
    pyf_target_stats(NULL, &st); /* zeroed: nothing was counted */
    CHECK(st.read_calls == 0 && st.snapshots == 0);
    pyf_target_stats(NULL, NULL);
    CHECK_RC(pyf_target_failure(NULL, fresh(&f)), PYF_EINVAL);
    CHECK_RC(pyf_target_python(NULL, &info), PYF_EINVAL);
    CHECK_RC(pyf_target_set_cache(NULL, PYF_CACHE_OFF, &effective), PYF_EINVAL);
    CHECK_RC(pyf_snapshot_take(NULL, NULL, &s), PYF_EINVAL);
    CHECK(s == NULL);
    memset(buf, 0, sizeof buf);
    c->cap = sizeof buf;
    c->out = (pyf_snapshot *)(uintptr_t)1;
    CHECK_RC(pyf_snapshot_take_copy(NULL, c), PYF_EINVAL);
    CHECK(c->out == NULL);
    pyf_sample_batch batch;
    memset(&batch, 0, sizeof batch);
    CHECK_RC(pyf_sample_run(NULL, &batch), PYF_EINVAL);
    CHECK_RC(pyf_target_set_asyncio(NULL, 0), PYF_EINVAL);
    CHECK_RC(pyf_target_set_os_threads(NULL, 0, NULL, 0), PYF_EINVAL);
    pyf_snapshot_free(NULL);
    CHECK_RC(pyf_snapshot_entries(NULL, &entries), PYF_EINVAL);
    const pyf_thread_facts *facts = (const pyf_thread_facts *)(uintptr_t)1;
    CHECK_RC(pyf_snapshot_thread_facts(NULL, &facts), PYF_EINVAL);
    CHECK(facts == NULL);
    const pyf_values *fact_values = (const pyf_values *)(uintptr_t)1;
    CHECK_RC(pyf_snapshot_fact_values(NULL, &fact_values), PYF_EINVAL);
    CHECK(fact_values == NULL);
    tab.struct_size = sizeof tab;
    CHECK_RC(pyf_snapshot_table(NULL, &tab), PYF_EINVAL);
    tl.struct_size = sizeof tl;
    CHECK_RC(pyf_snapshot_tasks(NULL, &tl), PYF_EINVAL);
    pyf_values *vals = (pyf_values *)(uintptr_t)1;
    CHECK_RC(pyf_frame_locals(NULL, 0x1000, NULL, &vals), PYF_EINVAL);
    CHECK(vals == NULL);
    vals = (pyf_values *)(uintptr_t)1;
    CHECK_RC(pyf_value_read(NULL, 0x1000, NULL, &vals), PYF_EINVAL);
    CHECK(vals == NULL);
    pyf_values_free(NULL);

    /* a real target, NULL for what it needs */
    REQUIRE(pyf_target_open(&r, fake_runtime_addr(ft), NULL, &t, NULL) == PYF_OK);
    CHECK_RC(pyf_target_failure(t, NULL), PYF_EINVAL);
    CHECK_RC(pyf_target_python(t, NULL), PYF_EINVAL);
    pyf_target_stats(t, NULL);
    CHECK_RC(pyf_target_set_cache(t, PYF_CACHE_OFF, NULL), PYF_OK); /* optional */
    CHECK_RC(pyf_snapshot_take(t, NULL, NULL), PYF_EINVAL);
    CHECK_RC(pyf_snapshot_take_copy(t, NULL), PYF_EINVAL);
    CHECK_RC(pyf_sample_run(t, NULL), PYF_EINVAL);
    CHECK_RC(pyf_sample_run(t, &batch), PYF_EINVAL); /* no arrays */
    s = NULL;
    REQUIRE(pyf_snapshot_take(t, NULL, &s) == PYF_OK);
    CHECK_RC(pyf_snapshot_entries(s, NULL), PYF_EINVAL);
    CHECK_RC(pyf_snapshot_thread_facts(s, NULL), PYF_EINVAL);
    facts = (const pyf_thread_facts *)(uintptr_t)1;
    CHECK_RC(pyf_snapshot_thread_facts(s, &facts), PYF_ENOTSUP);
    CHECK(facts == NULL);
    CHECK_RC(pyf_snapshot_fact_values(s, NULL), PYF_EINVAL);
    fact_values = (const pyf_values *)(uintptr_t)1;
    CHECK_RC(pyf_snapshot_fact_values(s, &fact_values), PYF_ENOTSUP);
    CHECK(fact_values == NULL);
    CHECK_RC(pyf_snapshot_table(s, NULL), PYF_EINVAL);
    CHECK_RC(pyf_snapshot_tasks(s, NULL), PYF_EINVAL);
    CHECK_RC(pyf_frame_locals(t, 0x1000, NULL, NULL), PYF_EINVAL);
    CHECK_RC(pyf_value_read(t, 0x1000, NULL, NULL), PYF_EINVAL);
    pyf_snapshot_free(s);
    pyf_target_close(t);
}

/* The smallest core: an ELF header and one PT_LOAD of 8 bytes. */
static void write_core(const char *path)
{
    uint8_t img[64 + 56 + 8];
    FILE *fp = fopen(path, "wb");

    memset(img, 0, sizeof img);
    memcpy(img, "\177ELF\2\1\1", 7);
    img[16] = 4;   /* ET_CORE */
    img[18] = 62;  /* EM_X86_64 */
    img[32] = 64;  /* e_phoff */
    img[54] = 56;  /* e_phentsize */
    img[56] = 1;   /* e_phnum */
    img[64] = 1;   /* PT_LOAD */
    img[68] = 6;   /* PF_R | PF_W */
    img[64 + 8] = 120;          /* p_offset */
    img[64 + 17] = 0x10;        /* p_vaddr 0x1000 */
    img[64 + 32] = 8;           /* p_filesz */
    img[64 + 40] = 8;           /* p_memsz */
    REQUIRE(fp != NULL && fwrite(img, 1, sizeof img, fp) == sizeof img);
    fclose(fp);
}

static void test_core_handle(void)
{
    char path[] = "/tmp/pyframes-null-args-XXXXXX";
    int fd = mkstemp(path);
    pyf_core *c = (pyf_core *)(uintptr_t)1;
    pyf_core_request req;
    pyf_core_info info;
    pyf_failure f;
    pyf_reader r;
    pyf_target *t = (pyf_target *)(uintptr_t)1;
    const pyf_core_thread *threads = (const pyf_core_thread *)(uintptr_t)1;
    const pyf_mapping *maps = (const pyf_mapping *)(uintptr_t)1;
    const pyf_core_file *files = (const pyf_core_file *)(uintptr_t)1;
    uint32_t n = 7;

    check_begin("a NULL core, and NULL pointers with a real one");
    REQUIRE(fd >= 0);
    close(fd);
    write_core(path);
    CHECK(pyf_core_compressions() & (1u << PYF_CORE_PLAIN));
    memset(&req, 0, sizeof req);
    req.struct_size = sizeof req;
    CHECK_EINVAL_SAID(pyf_core_open(NULL, &c, fresh(&f)), f);
    CHECK(c == NULL);
    CHECK_EINVAL_SAID(pyf_core_open(&req, &c, fresh(&f)), f); /* no path */
    req.path = path;
    CHECK_EINVAL_SAID(pyf_core_open(&req, NULL, fresh(&f)), f);
    pyf_core_close(NULL);
    info.struct_size = sizeof info;
    CHECK_RC(pyf_core_info_get(NULL, &info), PYF_EINVAL);
    CHECK_RC(pyf_core_threads(NULL, &threads, &n), PYF_EINVAL);
    CHECK(threads == NULL && n == 0);
    CHECK_RC(pyf_core_mappings(NULL, &maps, &n), PYF_EINVAL);
    CHECK(maps == NULL);
    CHECK_RC(pyf_core_files(NULL, &files, &n), PYF_EINVAL);
    CHECK(files == NULL);
    CHECK_RC(pyf_core_reader(NULL, &r), PYF_EINVAL);
    const pyf_native_frame *frames = (const pyf_native_frame *)(uintptr_t)1;
    n = 7;
    CHECK_EINVAL_SAID(pyf_core_native_frames(NULL, 1, &frames, &n, fresh(&f)), f);
    CHECK(frames == NULL && n == 0);
    CHECK_EINVAL_SAID(pyf_target_open_core(NULL, 0, NULL, &t, fresh(&f)), f);
    CHECK(t == NULL);

    /* a real core, NULL for what each call needs */
    REQUIRE(pyf_core_open(&req, &c, NULL) == PYF_OK);
    CHECK_RC(pyf_core_info_get(c, NULL), PYF_EINVAL);
    CHECK_RC(pyf_core_threads(c, NULL, &n), PYF_EINVAL);
    CHECK_RC(pyf_core_threads(c, &threads, NULL), PYF_EINVAL);
    CHECK_RC(pyf_core_mappings(c, NULL, &n), PYF_EINVAL);
    CHECK_RC(pyf_core_files(c, &files, NULL), PYF_EINVAL);
    CHECK_RC(pyf_core_reader(c, NULL), PYF_EINVAL);
    CHECK_EINVAL_SAID(pyf_core_native_frames(c, 1, NULL, &n, fresh(&f)), f);
    CHECK_EINVAL_SAID(pyf_core_native_frames(c, 1, &frames, NULL, fresh(&f)), f);
    CHECK_EINVAL_SAID(pyf_target_open_core(c, 0, NULL, NULL, fresh(&f)), f);
    CHECK_RC(pyf_core_mappings(c, &maps, &n), PYF_OK);
    CHECK(n == 1 && maps[0].start == 0x1000 && maps[0].end == 0x1008);
    pyf_core_close(c);
    unlink(path);
}

int main(void)
{
    fake_target *ft;
    uint64_t interp, code;
    fake_thread *th;

    fake_watchdog(60, "test_null_args");
    test_every_function_listed();
    ft = fake_new(15);
    interp = fake_add_interp(ft, 0);
    code = fake_code(ft, "/app/a.py", "f", 1, NULL, 0);
    th = fake_add_thread(ft, interp, 0x51, 7001, 1);
    fake_push_frame(th, code, 0);
    test_calls_without_target(ft);
    test_target_handle(ft);
    test_core_handle();
    fake_free(ft);
    return check_end();
}
