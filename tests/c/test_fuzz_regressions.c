/*
 * test_fuzz_regressions.c - one named case per finding of the fuzzers
 * (tests/fuzz), on images built like the fuzz input that found it.  The
 * input itself is in tests/fuzz/corpus/<target>/ as a regression input.
 */
#include "fake_target.h"

#include <string.h>

#define NL(a) (sizeof(a) / sizeof((a)[0]))

static const fake_loc L[] = {{4, 10, 10, 0, 5}, {4, 12, 12, 4, 9}};

static int failure_code(const pyf_target *t)
{
    pyf_failure f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    REQUIRE(pyf_target_failure(t, &f) == PYF_OK);
    return f.code;
}

/* pyf_target_failure after a successful snapshot whose thread walk broke:
 * the thread's failure stayed the target's, so the call that succeeded
 * read as failed (fuzz_walk, crash-23eda49a). */
static void test_failure_cleared_after_success(void)
{
    for (int minor = 13; minor <= 15; minor++) {
        static char name[80];
        snprintf(name, sizeof name, "3.%d: a snapshot with a broken thread succeeds, failure 0",
                 minor);
        check_begin(name);
        fake_target *ft = fake_new(minor);
        uint64_t code = fake_code(ft, "/app/a.py", "walk", 10, L, NL(L));
        uint64_t in = fake_add_interp(ft, 0);
        fake_thread *th = fake_add_thread(ft, in, 0x77, 4242, 0);
        fake_push_frame(th, code, 1);
        uint64_t top = fake_push_frame(th, code, 2);
        fake_frame_set_previous(ft, top, fake_unmapped_addr(ft));
        pyf_target *t = fake_open(ft, NULL, 1);
        REQUIRE(t != NULL);
        pyf_snapshot *s = NULL;
        CHECK_RC(pyf_snapshot_take(t, NULL, &s), PYF_OK);
        REQUIRE(s != NULL && s->nthreads == 1);
        CHECK_RC(s->threads[0].error, PYF_EFAULT);
        CHECK(s->threads[0].failure != NULL && s->threads[0].failure->code == PYF_EFAULT);
        CHECK_RC(failure_code(t), PYF_OK);
        CHECK_EQ_STR(fake_last_detail(t), "");
        pyf_snapshot_free(s);
        pyf_target_close(t);
        fake_free(ft);
    }
}

/* A _Py_DebugOffsets field of 2^64-1 read as "a field this version lacks"
 * (the same value): its checks were skipped and the walk added it to its
 * buffers' addresses (fuzz_walk crash-d977fc58: interpreter_state.id;
 * fuzz_cache crash-0fb7db3c: interpreter_frame.previous). */
static void test_all_ones_offset(void)
{
    static const char *const fields[] = {"interpreter_state.id", "interpreter_frame.previous",
                                         "thread_state.native_thread_id", "code_object.qualname",
                                         "unicode_object.asciiobject_size", "llist_node.next"};
    for (int minor = 13; minor <= 15; minor++) {
        static char name[80];
        snprintf(name, sizeof name, "3.%d: a _Py_DebugOffsets field of 2^64-1 is refused", minor);
        check_begin(name);
        for (size_t i = 0; i < NL(fields); i++) {
            if (minor == 13 && strcmp(fields[i], "llist_node.next") == 0)
                continue;
            fake_target *ft = fake_new(minor);
            fake_set_offset(ft, fields[i], UINT64_MAX);
            pyf_reader r = fake_reader(ft, 1);
            pyf_target *t = NULL;
            char err[512] = "";
            int rc = fake_open_detail(&r, fake_runtime_addr(ft), NULL, &t, err, sizeof err);
            CHECK_MSG(rc == PYF_EOFFSETS, "%s: %s (%s)", fields[i], pyf_error_name(rc), err);
            CHECK_MSG(strstr(err, fields[i]) != NULL, "detail does not name %s: %s", fields[i],
                      err);
            CHECK_RC(pyf_runtime_probe(&r, fake_runtime_addr(ft), NULL, NULL), PYF_EOFFSETS);
            pyf_target_close(t);
            fake_free(ft);
        }
    }
}

/* llist_node.next (the only field of a section without a size) was not
 * checked: a task list's next link was read from anywhere past the thread
 * state's copy (fuzz_tasks crash-802ea80d). */
static void test_list_node_offset(void)
{
    static const uint64_t V[2][13] = {
        {168, 136, 96, 108, 109, 128, 152, 225864, 10880, 936, 864, 872, 880},
        {168, 136, 96, 108, 109, 128, 152, 226240, 10856, 1104, 1024, 1032, 1048}};
    static const uint64_t bad[] = {16, 4, 1ull << 40};
    for (int minor = 14; minor <= 15; minor++) {
        static char name[80];
        snprintf(name, sizeof name, "3.%d: llist_node.next outside a list node is refused",
                 minor);
        check_begin(name);
        for (size_t i = 0; i < NL(bad); i++) {
            fake_target *ft = fake_new(minor);
            uint64_t table = fake_alloc(ft, sizeof V[0]);
            fake_write(ft, table, V[minor - 14], sizeof V[0]);
            uint64_t in = fake_add_interp(ft, 0);
            fake_add_thread(ft, in, 0x77, 4242, 1);
            fake_set_offset(ft, "llist_node.next", bad[i]);
            pyf_target *t = fake_open(ft, NULL, 1);
            REQUIRE(t != NULL);
            CHECK_RC(pyf_target_set_asyncio(t, table), PYF_EOFFSETS);
            CHECK_MSG(strstr(fake_last_detail(t), "list node") != NULL, "detail: %s",
                      fake_last_detail(t));
            pyf_snapshot *s = NULL;
            pyf_snapshot_request req = {sizeof req, PYF_SNAP_TASKS, 0, 0, 0};
            CHECK_RC(pyf_snapshot_take(t, &req, &s), PYF_OK);
            pyf_task_list tl = {.struct_size = sizeof tl};
            CHECK_RC(pyf_snapshot_tasks(s, &tl), PYF_OK);
            CHECK_RC(tl.status, PYF_EOFFSETS);
            CHECK_EQ_INT(tl.ntasks, 0);
            pyf_snapshot_free(s);
            pyf_target_close(t);
            fake_free(ft);
        }
        /* the real value is still accepted */
        fake_target *ft = fake_new(minor);
        uint64_t table = fake_alloc(ft, sizeof V[0]);
        fake_write(ft, table, V[minor - 14], sizeof V[0]);
        pyf_target *t = fake_open(ft, NULL, 1);
        REQUIRE(t != NULL);
        CHECK_RC(pyf_target_set_asyncio(t, table), PYF_OK);
        pyf_target_close(t);
        fake_free(ft);
    }
}

/* The 3.15 frame cache took an entry's frames below the anchor without the
 * depth limit: a stack that grew above a stored one came back deeper than
 * max_depth, where an uncached walk stops with PYF_EDEPTH (fuzz_cache
 * crash-65e63574). */
static void test_cache_depth_limit(void)
{
    check_begin("3.15 frame cache: the depth limit holds for frames from the cache");
    static const uint32_t modes[] = {PYF_CACHE_ON, PYF_CACHE_READ_ONLY};
    for (size_t m = 0; m < NL(modes); m++) {
        fake_target *ft = fake_new(15);
        uint64_t code = fake_code(ft, "/app/a.py", "walk", 10, L, NL(L));
        uint64_t in = fake_add_interp(ft, 0);
        fake_thread *th = fake_add_thread(ft, in, 0x77, 4242, 1);
        for (int i = 0; i < 3; i++)
            fake_push_frame(th, code, 1);
        fake_set_writable(ft, 1);
        pyf_options o = {sizeof o, 4, 0, 0};
        pyf_target *cached = fake_open(ft, &o, 1), *plain = fake_open(ft, &o, 1);
        REQUIRE(cached != NULL && plain != NULL);
        uint32_t mode = 0;
        CHECK_RC(pyf_target_set_cache(cached, modes[m], &mode), PYF_OK);
        for (int round = 0; round < 4; round++) {
            pyf_snapshot *a = NULL, *b = NULL;
            CHECK_RC(pyf_snapshot_take(cached, NULL, &a), PYF_OK);
            CHECK_RC(pyf_snapshot_take(plain, NULL, &b), PYF_OK);
            REQUIRE(a != NULL && b != NULL && a->nthreads == 1 && b->nthreads == 1);
            CHECK_MSG(a->threads[0].nframes <= 4, "mode %u round %d: %u frames, max_depth 4",
                      modes[m], round, a->threads[0].nframes);
            CHECK_MSG(a->threads[0].nframes == b->threads[0].nframes &&
                          a->threads[0].error == b->threads[0].error,
                      "mode %u round %d: cached %u frames (%s), uncached %u (%s)", modes[m],
                      round, a->threads[0].nframes, pyf_error_name(a->threads[0].error),
                      b->threads[0].nframes, pyf_error_name(b->threads[0].error));
            pyf_snapshot_free(a);
            pyf_snapshot_free(b);
            fake_push_frame(th, code, 1); /* 4, 5, 6 frames: past the limit */
        }
        pyf_target_close(cached);
        pyf_target_close(plain);
        fake_free(ft);
    }
}

/* A free-threaded table whose object header is 64 KiB (open accepts any
 * header of 24 bytes or more there): the value decoder copied one into a
 * 64-byte buffer.  It refuses such layouts now, saying which (fuzz_values,
 * regression-huge-object-header). */
static void test_values_huge_header(void)
{
    const ft_layout *l = ft_layout_find(15, 1);
    if (l == NULL)
        return; /* no headers: test_values says so */
    check_begin("values: a 64 KiB object header is refused, not copied");
    fake_target *ft = fake_new_layout(l);
    uint64_t obj = fake_int(ft, 5);
    fake_set_offset(ft, "pyobject.size", 65568);
    pyf_target *t = fake_open(ft, NULL, 1);
    if (t != NULL) { /* open may refuse it too */
        pyf_values *v = NULL;
        CHECK_RC(pyf_value_read(t, obj, NULL, &v), PYF_EOFFSETS);
        CHECK(v == NULL);
        CHECK(strstr(fake_last_detail(t), "value layout") != NULL);
        pyf_target_close(t);
    }
    fake_free(ft);
}

int main(void)
{
    test_values_huge_header();
    test_cache_depth_limit();
    test_failure_cleared_after_success();
    test_all_ones_offset();
    test_list_node_offset();
    return check_end();
}
