/*
 * test_free_threaded.c - free-threaded CPython 3.13t, 3.14t and 3.15t read
 * from synthetic images laid out from CPython's own headers.
 *
 * No free-threaded interpreter exists where these tests run; the installed
 * -dev headers carry both Py_GIL_DISABLED branches, and the build compiles
 * ft/emit_layout.c against them (tests/c/CMakeLists.txt): the
 * _Py_DebugOffsets table each build initializes, and the facts the table
 * lacks (str state bits read back from a real PyASCIIObject, generator and
 * _PyCodeArray layouts, frame owners).  The images use those values only
 * (fake_new_layout); what a frame must show comes from the test's own line
 * tables (fake_loc_at), never from the library.
 *
 * Checked per free-threaded build (and, for contrast, per default build):
 * several threads and interpreters, deep stacks over several chunks,
 * generators, names and file names of every str kind; on 3.14t/3.15t frames
 * running thread-local bytecode (index 0, > 0, out of range, negative, a
 * NULL slot, a copy the array does not list), an array grown and a slot
 * filled between two snapshots without tlbc_generation moving (CPython
 * gh-157660), the 3.15 frame cache; then test_faults' sweeps over each
 * image.  asyncio tasks are not laid out for free-threaded builds: their
 * layout (_AsyncioDebug) is defined in Modules/_asynciomodule.c, which the
 * -dev headers do not carry, so no honest free-threaded task image exists.
 */
#include "fault_sweeps.h"

#include <string.h>

/* ---- what the images hold -------------------------------------------------- */

/* one code unit per run, a distinct line each: any wrong instruction index
 * shows as a wrong line or as no location */
static const fake_loc L_DISTINCT[] = {
    {1, 10, 10, 0, 4},  {1, 13, 13, 2, 9},  {1, 16, 16, 4, 30}, {1, 19, 19, 0, 1},
    {1, 22, 22, 8, 12}, {1, 25, 25, 1, 2},  {1, 28, 28, 0, 90}, {1, 31, 33, 4, 5},
    {1, 34, 34, 6, 7},  {1, 37, 37, -1, -1}, {1, 40, 40, 3, 4}, {1, 43, 43, 0, 2},
};
#define N_DISTINCT (sizeof L_DISTINCT / sizeof L_DISTINCT[0])

typedef struct code_desc {
    const char *file, *qual;
} code_desc;

/* ASCII, latin-1, UCS-2 and UCS-4 names and file names */
static const code_desc CODES[] = {
    {"/srv/app/main.py", "<module>"},
    {"/srv/app/café.py", "Café.crème"},
    {"/srv/app/Δοκιμή.py", "日本.helper"},
    {"/srv/app/😀.py", "𝔣𝔲𝔫𝔠.run"},
    {"/srv/app/main.py", "worker"},
    {"/srv/app/ünïcode.py", "stream"},
};
#define N_CODES (sizeof CODES / sizeof CODES[0])

typedef struct exp_frame {
    const char *func, *file;
    int line;       /* -1: no location, and the frame must say so */
} exp_frame;

typedef struct exp_thread {
    uint64_t tid;
    exp_frame v[512]; /* outermost first */
    size_t n;
} exp_thread;

typedef struct image {
    const ft_layout *l;
    fake_target *ft;
    uint64_t code[N_CODES];
    exp_thread th[4];
    size_t nth;
    /* TLBC scenario: the thread of the grow/fill step and its frames */
    fake_thread *t_grow;
    uint64_t grow_code, grow_frame, fill_frame;
    uint64_t interp0;
} image;

static int line_at(int instr)
{
    fake_loc loc;
    REQUIRE(fake_loc_at(L_DISTINCT, N_DISTINCT, instr, &loc) == 0);
    return loc.line;
}

static void expect(exp_thread *et, size_t ci, int line)
{
    REQUIRE(et->n < sizeof et->v / sizeof et->v[0]);
    et->v[et->n++] = (exp_frame){CODES[ci].qual, CODES[ci].file, line};
}

static uint64_t push(image *im, fake_thread *th, exp_thread *et, size_t ci, int instr)
{
    uint64_t f = fake_push_frame(th, im->code[ci], instr);
    expect(et, ci, line_at(instr));
    return f;
}

/* A frame running slot idx's copy (or ip_base's) at instr. */
static uint64_t push_tlbc(image *im, fake_thread *th, exp_thread *et, size_t ci, int32_t idx,
                          uint64_t ip_base, int instr, int line)
{
    uint64_t f = fake_push_frame(th, im->code[ci], 0);
    fake_frame_set_tlbc(im->ft, f, idx, ip_base + 2u * (uint64_t)instr);
    expect(et, ci, line);
    return f;
}

/* clean: without the frames meant to show no location (the fault sweeps
 * compare against a snapshot that shows no error at all) */
static fake_target *build(image *im, const ft_layout *l, int clean)
{
    memset(im, 0, sizeof *im);
    im->l = l;
    fake_target *ft = im->ft = fake_new_layout(l);
    for (size_t i = 0; i < N_CODES; i++)
        im->code[i] = fake_code(ft, CODES[i].file, CODES[i].qual, 10, L_DISTINCT, N_DISTINCT);
    uint64_t in0 = im->interp0 = fake_add_interp(ft, 0);
    uint64_t in1 = fake_add_interp(ft, 3);
    if (l->has_tlbc) /* some threads came and went */
        fake_w32(ft, in0 + fake_off(ft, "interpreter_state.tlbc_generation"), 5);

    /* thread 1: a short stack over an entry frame, names of every kind */
    exp_thread *e1 = &im->th[im->nth++];
    e1->tid = 201;
    fake_thread *t1 = fake_add_thread(ft, in0, 0x7f0000011000ull, e1->tid, 1);
    push(im, t1, e1, 0, 3);
    push(im, t1, e1, 1, 5);
    fake_push_entry(t1, -1);
    push(im, t1, e1, 2, 11);
    push(im, t1, e1, 3, 0);

    /* thread 2: deep (several chunks), with a running generator */
    exp_thread *e2 = &im->th[im->nth++];
    e2->tid = 202;
    fake_thread *t2 = fake_add_thread(ft, in0, 0x7f0000012000ull, e2->tid, 1);
    push(im, t2, e2, 0, 1);
    fake_gen_frame(t2, im->code[5], 4, NULL);
    expect(e2, 5, line_at(4));
    for (int i = 0; i < 300; i++)
        push(im, t2, e2, (size_t)(i % 4), i % (int)N_DISTINCT);
    REQUIRE(fake_thread_nchunks(t2) >= 2);

    /* thread 3, in a second interpreter */
    exp_thread *e3 = &im->th[im->nth++];
    e3->tid = 203;
    fake_thread *t3 = fake_add_thread(ft, in1, 0x7f0000013000ull, e3->tid, 1);
    push(im, t3, e3, 4, 7);

    if (!l->has_tlbc)
        return ft;

    /* thread 4: frames running thread-local bytecode of "worker" */
    exp_thread *e4 = &im->th[im->nth++];
    e4->tid = 204;
    fake_thread *t4 = fake_add_thread(ft, in0, 0x7f0000014000ull, e4->tid, 1);
    uint64_t w = im->code[4];
    fake_code_tlbc(ft, w, 4); /* slots: main, copy 1, copy 2, NULL */
    uint64_t c1 = fake_code_tlbc_fill(ft, w, 1);
    uint64_t c2 = fake_code_tlbc_fill(ft, w, 2);
    uint64_t main_copy = fake_code_tlbc_entry(ft, w, 0);
    REQUIRE(main_copy == w + fake_off(ft, "code_object.co_code_adaptive"));
    uint64_t stray = fake_alloc(ft, 2 * N_DISTINCT); /* a copy the array does not list */
    push_tlbc(im, t4, e4, 4, 0, main_copy, 2, line_at(2));   /* index 0: the main copy */
    push_tlbc(im, t4, e4, 4, 1, c1, 6, line_at(6));          /* index 1 */
    push_tlbc(im, t4, e4, 4, 2, c2, 9, line_at(9));          /* index 2 */
    push_tlbc(im, t4, e4, 4, 7, main_copy, 5, line_at(5));   /* out of range: main copy */
    push_tlbc(im, t4, e4, 4, 3, main_copy, 8, line_at(8));   /* NULL slot: main copy */
    if (!clean) { /* never a line of some other instruction */
        push_tlbc(im, t4, e4, 4, 3, stray, 4, -1);           /* NULL slot, ip elsewhere */
        push_tlbc(im, t4, e4, 4, 9, c2, 4, -1);              /* out of range, ip in a copy */
        push_tlbc(im, t4, e4, 4, -5, c1, 1, -1);             /* negative */
        push_tlbc(im, t4, e4, 4, 1, c2, 3, -1);              /* index 1, ip in copy 2 */
    }
    /* a generator frame carries its index along */
    uint64_t g = fake_gen_frame(t4, w, 0, NULL);
    fake_frame_set_tlbc(ft, g, 2, c2 + 2u * 11);
    expect(e4, 4, line_at(11));

    /* thread 5's stack changes between two snapshots (grow_and_fill):
     * "stream" has an array of 2 (main, copy 1) and a frame on copy 1 */
    im->grow_code = im->code[5];
    fake_code_tlbc(ft, im->grow_code, 2);
    uint64_t s1 = fake_code_tlbc_fill(ft, im->grow_code, 1);
    im->t_grow = fake_add_thread(ft, in0, 0x7f0000015000ull, 205, 1);
    fake_push_frame(im->t_grow, im->code[0], 2);
    im->fill_frame = fake_push_frame(im->t_grow, im->grow_code, 0);
    fake_frame_set_tlbc(ft, im->fill_frame, 1, s1 + 2u * 7);
    im->grow_frame = fake_push_frame(im->t_grow, im->grow_code, 0);
    fake_frame_set_tlbc(ft, im->grow_frame, 0, im->grow_code +
                        fake_off(ft, "code_object.co_code_adaptive") + 2u * 3);
    return ft;
}

/* ---- comparing a snapshot with what the image holds ------------------------ */

static void check_thread(const pyf_snapshot *s, const exp_thread *et, int free_threaded,
                         const char *what)
{
    int ti = fake_find_thread(s, et->tid);
    CHECK_MSG(ti >= 0, "%s: thread %llu missing", what, (unsigned long long)et->tid);
    if (ti < 0)
        return;
    const pyf_thread *th = &s->threads[ti];
    CHECK_MSG(th->error == 0 && (th->flags & PYF_THREAD_COMPLETE), "%s: thread %llu: %s", what,
              (unsigned long long)et->tid, fake_thread_detail(th));
    /* no GIL holder in a free-threaded build */
    CHECK_MSG(!free_threaded || !(th->flags & (PYF_THREAD_GIL_KNOWN | PYF_THREAD_HOLDS_GIL)),
              "%s: a GIL state reported for a free-threaded thread", what);
    CHECK_MSG(th->nframes == et->n, "%s: thread %llu has %u frames, expected %zu", what,
              (unsigned long long)et->tid, th->nframes, et->n);
    for (uint32_t k = 0; k < th->nframes && k < et->n; k++) {
        const pyf_frame *f = &s->frames[th->first_frame + k];
        const exp_frame *e = &et->v[et->n - 1 - k];
        int ok = strcmp(f->info.function, e->func) == 0 && strcmp(f->info.filename, e->file) == 0 &&
                 f->info.line == e->line && !(f->info.flags & PYF_FRAME_CODE_UNREADABLE) &&
                 (e->line >= 0 ? !(f->info.flags & PYF_FRAME_NO_LOCATION)
                               : (f->info.flags & PYF_FRAME_NO_LOCATION) != 0);
        CHECK_MSG(ok, "%s: thread %llu frame %u: got %s (%s) line %d flags 0x%x, expected %s "
                  "(%s) line %d", what, (unsigned long long)et->tid, k, f->info.function,
                  f->info.filename, f->info.line, f->info.flags, e->func, e->file, e->line);
    }
}

static void check_image(const pyf_snapshot *s, const image *im, const char *what)
{
    const char *why = fake_check_snapshot(s);
    CHECK_MSG(why == NULL, "%s: %s", what, why);
    for (size_t i = 0; i < im->nth; i++)
        check_thread(s, &im->th[i], im->l->free_threaded, what);
}

/* The frames of the thread with native id tid: (line, flags) innermost first. */
static int frame_line(const pyf_snapshot *s, uint64_t tid, uint32_t k, uint32_t *flags)
{
    int ti = fake_find_thread(s, tid);
    if (ti < 0 || k >= s->threads[ti].nframes)
        return -2;
    const pyf_frame *f = &s->frames[s->threads[ti].first_frame + k];
    *flags = f->info.flags;
    return f->info.line;
}

/* ---- the checks ------------------------------------------------------------ */

/* The table and facts each build gave agree with what the library and the
 * default images assume of them: a default table names its fields where
 * fake_offsets does (so the names the builders use mean the same slots in a
 * free-threaded one), and the flavour is the header's. */
static void check_layouts(void)
{
    static const char *const names[] = {
        "runtime_state.interpreters_head", "interpreter_state.threads_head",
        "interpreter_state.next", "interpreter_state.id", "thread_state.current_frame",
        "thread_state.next", "thread_state.native_thread_id", "thread_state.datastack_chunk",
        "interpreter_frame.previous", "interpreter_frame.executable",
        "interpreter_frame.instr_ptr", "interpreter_frame.owner", "interpreter_frame.size",
        "code_object.filename", "code_object.qualname", "code_object.linetable",
        "code_object.firstlineno", "code_object.co_code_adaptive", "pyobject.size",
        "pyobject.ob_type", "type_object.tp_name", "bytes_object.ob_size",
        "bytes_object.ob_sval", "unicode_object.state", "unicode_object.length",
        "unicode_object.asciiobject_size", "thread_state.thread_id", "code_object.size",
    };
    for (const ft_layout *l = ft_layouts; l->name != NULL; l++) {
        if (l->table == NULL)
            continue; /* 3.11, 3.12: no _Py_DebugOffsets (test_values checks them) */
        char what[64];
        snprintf(what, sizeof what, "layout %s", l->name);
        check_begin(what);
        uint64_t ft_word;
        memcpy(&ft_word, l->table + 16, 8);
        CHECK_EQ_INT(ft_word, (uint64_t)l->free_threaded);
        uint8_t def[1024];
        size_t n = pyf_test_fill_offsets(def, sizeof def, l->minor, 0);
        CHECK_MSG(n == l->table_len, "%s: fake_offsets' table is %zu bytes, CPython's %zu",
                  l->name, n, l->table_len);
        CHECK_EQ_INT(pyf_test_offsets_get(l->table, l->minor, "pyobject.size"), l->pyobject_size);
        CHECK_EQ_INT(l->pyobject_size, l->free_threaded ? 32 : 16);
        if (!l->free_threaded && n == l->table_len)
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
                CHECK_MSG(pyf_test_offsets_get(def, l->minor, names[i]) ==
                              pyf_test_offsets_get(l->table, l->minor, names[i]),
                          "%s: %s is %llu in fake_offsets, %llu in CPython's table", l->name,
                          names[i],
                          (unsigned long long)pyf_test_offsets_get(def, l->minor, names[i]),
                          (unsigned long long)pyf_test_offsets_get(l->table, l->minor, names[i]));
        /* co_version, which the table lacks: the library takes it 24 bytes
         * after co_firstlineno (offsets.c) in every layout */
        CHECK_EQ_INT(pyf_test_offsets_get(l->table, l->minor, "code_object.firstlineno") + 24,
                     l->co_version);
        /* co_flags too, 20 bytes before co_firstlineno (offsets.c), and
         * the CO_* bits the library and the fake images use */
        CHECK_EQ_INT(pyf_test_offsets_get(l->table, l->minor, "code_object.firstlineno") - 20,
                     l->co_flags);
        CHECK_EQ_INT(l->co_generator, FAKE_CO_GENERATOR);
        CHECK_EQ_INT(l->co_coroutine, FAKE_CO_COROUTINE);
        CHECK_EQ_INT(l->co_iterable_coroutine, FAKE_CO_ITERABLE_COROUTINE);
        CHECK_EQ_INT(l->co_async_generator, FAKE_CO_ASYNC_GENERATOR);
        /* the layouts the reference describes (free-threaded.md section 1) */
        if (l->free_threaded) {
            CHECK_EQ_INT(pyf_test_offsets_get(l->table, l->minor, "pyobject.ob_type"), 24);
            CHECK_EQ_INT(l->has_tlbc, l->minor >= 14);
            if (l->has_tlbc) {
                CHECK_EQ_INT(pyf_test_offsets_get(l->table, l->minor, "code_object.co_tlbc"),
                             l->co_tlbc);
                CHECK_EQ_INT(pyf_test_offsets_get(l->table, l->minor,
                                                  "interpreter_frame.tlbc_index"),
                             l->frame_tlbc_index);
                CHECK_EQ_INT(l->frame_tlbc_index_size, 4);
                CHECK_EQ_INT(l->codearray_size, 0);
                CHECK_EQ_INT(l->codearray_entries, 8);
                CHECK_EQ_INT(l->tag_bits, l->minor == 14 ? 1 : 3);
            }
            /* 3.13t keeps the default str bits; 3.14t+ widen "interned" */
            CHECK_EQ_INT(l->str_compact, l->minor == 13 ? 1u << 5 : 1u << 11);
        }
    }
}

static pyf_snapshot *take(pyf_target *t, const char *what)
{
    pyf_snapshot *s = NULL;
    int rc = pyf_snapshot_take(t, NULL, &s);
    CHECK_MSG(rc == 0, "%s: %s: %s", what, pyf_error_name(rc), fake_last_detail(t));
    return rc == 0 ? s : NULL;
}

static void check_flavour(const ft_layout *l)
{
    char what[96];
    snprintf(what, sizeof what, "%s: threads, generators, names%s", l->name,
             l->has_tlbc ? ", thread-local bytecode" : "");
    check_begin(what);
    image im;
    fake_target *ft = build(&im, l, 0);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    pyf_python_info info;
    CHECK_EQ_INT(pyf_target_python(t, &info), 0);
    CHECK_EQ_INT(info.free_threaded, (uint32_t)l->free_threaded);
    for (int rep = 0; rep < 3; rep++) { /* cold, then warm caches */
        if (rep == 2)
            pyf_target_reset_stats(t);
        pyf_snapshot *s = take(t, what);
        if (s == NULL)
            break;
        check_image(s, &im, what);
        pyf_snapshot_free(s);
    }
    /* warm: everything the last snapshot read (thread-local bytecode
     * arrays and entries included) in one readv call */
    pyf_stats st;
    pyf_target_stats(t, &st);
    CHECK_MSG(st.read_calls == 1, "warm snapshot: %llu reader calls",
              (unsigned long long)st.read_calls);
    pyf_target_close(t);
    fake_free(ft);
}

/* gh-157660: between two snapshots of one target, an array grows (a new
 * _PyCodeArray) and a NULL slot fills, and neither moves tlbc_generation.
 * The second snapshot must show the lines of the new copies. */
static void grow_and_fill(const ft_layout *l, int cache)
{
    char what[96];
    snprintf(what, sizeof what, "%s: array grown, slot filled, same generation%s", l->name,
             cache ? " (frame cache)" : "");
    check_begin(what);
    image im;
    fake_target *ft = build(&im, l, 0);
    fake_set_writable(ft, cache);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    if (cache)
        CHECK_EQ_INT(pyf_target_set_cache(t, PYF_CACHE_ON, NULL), 0);
    uint64_t gen_at = im.interp0 + fake_off(ft, "interpreter_state.tlbc_generation");
    uint32_t gen = fake_r32(ft, gen_at);
    pyf_snapshot *s = take(t, what);
    uint32_t fl = 0;
    if (s != NULL) {
        CHECK_EQ_INT(frame_line(s, 205, 0, &fl), line_at(3)); /* index 0 */
        CHECK_EQ_INT(frame_line(s, 205, 1, &fl), line_at(7)); /* copy 1 */
        pyf_snapshot_free(s);
    }
    /* the array grows to 4, slot 3 fills: the top frame moves onto it */
    fake_code_tlbc_grow(ft, im.grow_code, 4);
    uint64_t s3 = fake_code_tlbc_fill(ft, im.grow_code, 3);
    fake_frame_set_tlbc(ft, im.grow_frame, 3, s3 + 2u * 10);
    s = take(t, what);
    if (s != NULL) {
        CHECK_EQ_INT(frame_line(s, 205, 0, &fl), line_at(10));
        CHECK_MSG(!(fl & PYF_FRAME_NO_LOCATION), "flags 0x%x", fl);
        CHECK_EQ_INT(frame_line(s, 205, 1, &fl), line_at(7));
        check_image(s, &im, what);
        pyf_snapshot_free(s);
    }
    /* slot 2 (NULL so far) fills; the top frame runs it */
    uint64_t s2 = fake_code_tlbc_fill(ft, im.grow_code, 2);
    fake_frame_set_tlbc(ft, im.grow_frame, 2, s2 + 2u * 5);
    s = take(t, what);
    if (s != NULL) {
        CHECK_EQ_INT(frame_line(s, 205, 0, &fl), line_at(5));
        CHECK_EQ_INT(frame_line(s, 205, 1, &fl), line_at(7));
        pyf_snapshot_free(s);
    }
    /* and a frame back on a slot that is gone from a replaced array: the
     * old array is still readable (CPython frees it later), the new one is
     * what counts */
    fake_code_tlbc_grow(ft, im.grow_code, 6);
    uint64_t s5 = fake_code_tlbc_fill(ft, im.grow_code, 5);
    fake_frame_set_tlbc(ft, im.grow_frame, 5, s5 + 2u * 1);
    s = take(t, what);
    if (s != NULL) {
        CHECK_EQ_INT(frame_line(s, 205, 0, &fl), line_at(1));
        pyf_snapshot_free(s);
    }
    CHECK_EQ_INT(fake_r32(ft, gen_at), gen); /* never moved */
    CHECK_EQ_INT(gen, 5);
    pyf_target_close(t);
    fake_free(ft);
}

/* The 3.15 frame cache stores complete stacks and replays them: over a
 * free-threaded image it must give what a walk gives. */
static void frame_cache(const ft_layout *l)
{
    char what[96];
    snprintf(what, sizeof what, "%s: frame cache", l->name);
    check_begin(what);
    image im;
    fake_target *ft = build(&im, l, 0);
    fake_set_writable(ft, 1);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    uint32_t mode = 0;
    CHECK(pyf_target_set_cache(t, PYF_CACHE_ON, &mode) == 0 && mode == PYF_CACHE_ON);
    for (int rep = 0; rep < 3; rep++) {
        pyf_snapshot *s = take(t, what);
        if (s == NULL)
            break;
        check_image(s, &im, what);
        pyf_snapshot_free(s);
    }
    pyf_stats st;
    pyf_target_stats(t, &st);
    fprintf(stderr, "   frame cache: %llu hits\n", (unsigned long long)st.frame_cache_hits);
    CHECK(st.frame_cache_hits > 0);
    pyf_target_close(t);
    fake_free(ft);
}

/* A generator's frame is named by its code's co_flags, at the offset and
 * with the bits of CPython's own headers. */
static void owners(const ft_layout *l)
{
    char what[64];
    snprintf(what, sizeof what, "%s generator owners", l->name);
    check_begin(what);
    fake_target *ft = fake_new_layout(l);
    uint64_t in0 = fake_add_interp(ft, 0);
    fake_thread *th = fake_add_thread(ft, in0, 0x7f0000021000ull, 301, 1);
    const uint32_t co[3] = {l->co_coroutine, l->co_async_generator,
                            l->co_generator | l->co_iterable_coroutine};
    const uint32_t want[3] = {PYF_FRAME_GENERATOR | PYF_FRAME_COROUTINE,
                              PYF_FRAME_GENERATOR | PYF_FRAME_ASYNC_GENERATOR,
                              PYF_FRAME_GENERATOR};
    fake_push_frame(th, fake_code(ft, CODES[0].file, CODES[0].qual, 10, L_DISTINCT, N_DISTINCT),
                    0);
    for (int i = 0; i < 3; i++) {
        uint64_t c = fake_code(ft, CODES[i + 1].file, CODES[i + 1].qual, 10, L_DISTINCT,
                               N_DISTINCT);
        fake_w32(ft, c + l->co_flags, co[i]);
        fake_gen_frame(th, c, 1, NULL);
    }
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    pyf_snapshot *s = take(t, what);
    int ti = s != NULL ? fake_find_thread(s, 301) : -1;
    if (ti >= 0 && s->threads[ti].nframes == 4) {
        for (int i = 0; i < 3; i++) /* innermost first */
            CHECK_EQ_INT(s->frames[s->threads[ti].first_frame + 2 - (uint32_t)i].info.flags &
                             ~PYF_FRAME_ENTRY_FROM_C, want[i]);
        CHECK_EQ_INT(s->frames[s->threads[ti].first_frame + 3].info.flags & ~PYF_FRAME_ENTRY_FROM_C,
                     0);
    } else {
        CHECK_MSG(0, "%s: thread 301 not read with its 4 frames", what);
    }
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(ft);
}

static fake_target *sweep_build(const sweep_image *si)
{
    image *im = malloc(sizeof *im);
    REQUIRE(im != NULL);
    fake_target *ft = build(im, si->arg, 1);
    free(im);
    return ft;
}

int main(void)
{
    int missing = ft_layouts_missing_exit();
    if (missing != 0)
        return missing;
    check_layouts();
    for (int minor = 13; minor <= 15; minor++) {
        const ft_layout *ftl = ft_layout_find(minor, 1), *def = ft_layout_find(minor, 0);
        REQUIRE(ftl != NULL && def != NULL);
        check_flavour(ftl);
        check_flavour(def);
        owners(ftl);
        owners(def);
        if (ftl->has_tlbc) {
            grow_and_fill(ftl, 0);
            if (minor >= 15)
                grow_and_fill(ftl, 1);
        }
        if (minor >= 15)
            frame_cache(ftl);
        fprintf(stderr, "   %s: asyncio tasks not laid out: _AsyncioDebug is defined in "
                "Modules/_asynciomodule.c, not in the installed headers\n", ftl->name);
    }
    static const char *const labels[] = {"3.13t", "3.14t", "3.15t"};
    for (int minor = 13; minor <= 15; minor++) {
        sweep_image si = {labels[minor - 13], minor, sweep_build, ft_layout_find(minor, 1), 202,
                          1};
        sweep_all(&si, 3000, 15.0);
    }
    return check_end();
}
