/*
 * test_table.c - the frame table of synthetic 3.13/3.14/3.15 images: every
 * level of a recursion shares one record; an unchanged stack keeps its keys
 * and makes no new record, key or string; a moved top frame changes only
 * its own key; a code object freed and replaced at the same address never
 * yields the old record; snapshots outlive a flush, a close and the table's
 * growth (run under ASan); warm read counts; pyf_snapshot_take_copy.
 */
#define PYF_STATIC_API /* pyf_snapshot_take_copy: the bundled binding's call */
#include "fake_target.h"

#include <string.h>

#define DEPTH 300
/* reader calls of a warm snapshot besides one per data-stack chunk (the
 * runtime, interpreter and thread state reads of each version, as the
 * walk has them; 3.13 also rechecks the header of each of the 2 code
 * objects): the frame table adds none */
#define WARM_READS(minor) ((minor) == 13 ? 6u : (minor) == 14 ? 4u : 5u)
#define NL(a) (sizeof(a) / sizeof((a)[0]))

static const fake_loc L_REC[] = {{3, 20, 20, 4, 18}, {5, 21, 22, 8, 1}, {2, 23, 23, 0, 6}};
static const fake_loc L_TOP[] = {{2, 40, 40, 2, 9}, {2, 41, 41, 4, 12}, {2, 42, 42, 6, 15}};

static pyf_frame_table table_of(const pyf_snapshot *s)
{
    pyf_frame_table tab;
    memset(&tab, 0, sizeof tab);
    tab.struct_size = sizeof tab;
    int rc = pyf_snapshot_table(s, &tab);
    CHECK_EQ_INT(rc, 0);
    return tab;
}

static pyf_snapshot *take(pyf_target *t)
{
    return fake_take(t);
}

typedef struct scene {
    fake_target *ft;
    uint64_t interp, rec_code, top_code, top_frame;
    uint64_t frames[DEPTH + 1];
    fake_thread *th;
} scene;

/* DEPTH levels of one recursion (all at instruction 3), a top frame. */
static void build(scene *sc, int minor)
{
    sc->ft = fake_new(minor);
    sc->rec_code = fake_code(sc->ft, "/app/rec.py", "walk", 20, L_REC, NL(L_REC));
    sc->top_code = fake_code(sc->ft, "/app/top.py", "Top.leaf", 40, L_TOP, NL(L_TOP));
    sc->interp = fake_add_interp(sc->ft, 0);
    sc->th = fake_add_thread(sc->ft, sc->interp, 0x51, 7001, 1);
    for (int i = 0; i < DEPTH; i++)
        sc->frames[i] = fake_push_frame(sc->th, sc->rec_code, 3);
    sc->top_frame = sc->frames[DEPTH] = fake_push_frame(sc->th, sc->top_code, 0);
}

static void move_top(scene *sc, int instr)
{
    fake_w64(sc->ft, sc->top_frame + fake_off(sc->ft, "interpreter_frame.instr_ptr"),
             sc->top_code + fake_off(sc->ft, "code_object.co_code_adaptive") +
                 2u * (uint64_t)instr);
}

static uint32_t record_of(const pyf_frame_table *tab, uint32_t frame)
{
    return tab->keys[tab->frame_keys[frame]].record;
}

static void test_unchanged(int minor, int with_readv)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d unchanged stack keeps its keys%s", minor,
             with_readv ? " (readv)" : "");
    check_begin(name);
    scene sc;
    build(&sc, minor);
    pyf_target *t = fake_open(sc.ft, NULL, with_readv);
    REQUIRE(t != NULL);
    pyf_snapshot *s1 = take(t);
    REQUIRE(s1 != NULL && s1->nframes == DEPTH + 1);
    pyf_frame_table a = table_of(s1);
    /* the recursion: one record, a key per level (the outermost frame may
     * be marked as entered from C: a record of its own) */
    CHECK_MSG(a.nrecords == 2 || a.nrecords == 3, "%u records", a.nrecords);
    CHECK_MSG(a.nkeys == DEPTH + 1 || a.nkeys == DEPTH + 2, "%u keys", a.nkeys);
    for (uint32_t i = 2; i < DEPTH; i++) {
        CHECK(record_of(&a, i) == record_of(&a, 1));
        CHECK(a.frame_keys[i] != a.frame_keys[i - 1]);
    }
    CHECK_EQ_STR(a.records[record_of(&a, 1)].info.function, "walk");
    CHECK_EQ_INT(a.records[record_of(&a, 1)].info.line, 21);
    CHECK_EQ_INT(a.records[record_of(&a, 1)].instr, 3);

    pyf_target_reset_stats(t);
    pyf_snapshot *s2 = take(t);
    pyf_stats st2;
    pyf_target_stats(t, &st2);
    REQUIRE(s2 != NULL && s2->nframes == DEPTH + 1);
    pyf_frame_table b = table_of(s2);
    CHECK(b.table_id == a.table_id);
    CHECK_EQ_INT(b.nrecords, a.nrecords);
    CHECK_EQ_INT(b.nkeys, a.nkeys);
    CHECK(memcmp(a.frame_keys, b.frame_keys, (DEPTH + 1) * sizeof(uint32_t)) == 0);
    for (uint32_t i = 0; i <= DEPTH; i++) /* no string made again */
        CHECK(s1->frames[i].info.function == s2->frames[i].info.function &&
              s1->frames[i].info.filename == s2->frames[i].info.filename);

    /* warm snapshots read the same, and few: with readv, everything the
     * last one read in one call (prefetch); without, the thread's chunks
     * and a constant */
    pyf_target_reset_stats(t);
    pyf_snapshot *s3 = take(t);
    pyf_stats st3;
    pyf_target_stats(t, &st3);
    CHECK_EQ_INT(st3.read_calls, st2.read_calls);
    uint64_t bound = with_readv ? 1 : fake_thread_nchunks(sc.th) + WARM_READS(minor);
    fprintf(stderr, "   warm: %llu reader calls, %zu chunks\n",
            (unsigned long long)st3.read_calls, fake_thread_nchunks(sc.th));
    CHECK_MSG(st3.read_calls == bound, "warm snapshot: %llu reader calls (bound %llu)",
              (unsigned long long)st3.read_calls, (unsigned long long)bound);
    CHECK_EQ_INT(st3.frames, DEPTH + 1);
    CHECK_EQ_INT(st3.code_cache_misses, 0);
    pyf_snapshot_free(s3);
    pyf_snapshot_free(s2);
    pyf_snapshot_free(s1);
    pyf_target_close(t);
    fake_free(sc.ft);
}

static void test_top_moves(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d top frame moves", minor);
    check_begin(name);
    scene sc;
    build(&sc, minor);
    pyf_target *t = fake_open(sc.ft, NULL, 0);
    REQUIRE(t != NULL);
    pyf_snapshot *s1 = take(t);
    REQUIRE(s1 != NULL && s1->nframes == DEPTH + 1);
    pyf_frame_table a = table_of(s1);
    move_top(&sc, 2);
    pyf_snapshot *s2 = take(t);
    REQUIRE(s2 != NULL && s2->nframes == DEPTH + 1);
    pyf_frame_table b = table_of(s2);
    CHECK(b.table_id == a.table_id);
    CHECK(b.frame_keys[0] != a.frame_keys[0]);
    CHECK(memcmp(a.frame_keys + 1, b.frame_keys + 1, DEPTH * sizeof(uint32_t)) == 0);
    CHECK_EQ_INT(b.nrecords, a.nrecords + 1);
    CHECK_EQ_INT(b.nkeys, a.nkeys + 1);
    CHECK_EQ_INT(s2->frames[0].info.line, 41);
    CHECK_EQ_INT(s1->frames[0].info.line, 40); /* the older snapshot is unchanged */
    /* back where it was: the old key again */
    move_top(&sc, 0);
    pyf_snapshot *s3 = take(t);
    REQUIRE(s3 != NULL);
    pyf_frame_table c = table_of(s3);
    CHECK(memcmp(a.frame_keys, c.frame_keys, (DEPTH + 1) * sizeof(uint32_t)) == 0);
    CHECK_EQ_INT(c.nkeys, b.nkeys);
    pyf_snapshot_free(s1);
    pyf_snapshot_free(s2);
    pyf_snapshot_free(s3);
    pyf_target_close(t);
    fake_free(sc.ft);
}

static int same_frames(const pyf_snapshot *s, uint64_t native_tid)
{
    int i = fake_find_thread(s, native_tid);
    CHECK_MSG(i >= 0, "thread %llu missing", (unsigned long long)native_tid);
    return i >= 0 && (s->threads[i].flags & PYF_THREAD_SAME_FRAMES) != 0;
}

/* PYF_THREAD_SAME_FRAMES: set on a thread whose keys are those it had in
 * the previous snapshot, found by its thread state when the thread list
 * changed; never on the first snapshot of a table. */
static void test_same_frames(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d threads with the same frames", minor);
    check_begin(name);
    scene sc;
    build(&sc, minor);
    fake_thread *other = fake_add_thread(sc.ft, sc.interp, 0x52, 7002, 1);
    for (int i = 0; i < 5; i++)
        fake_push_frame(other, sc.rec_code, 3);
    pyf_target *t = fake_open(sc.ft, NULL, 0);
    REQUIRE(t != NULL);
    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    CHECK(!same_frames(s, 7001) && !same_frames(s, 7002));
    pyf_snapshot_free(s);
    s = take(t);
    REQUIRE(s != NULL);
    CHECK(same_frames(s, 7001) && same_frames(s, 7002));
    pyf_snapshot_free(s);
    /* the top frame of one thread moves: only that thread changed */
    move_top(&sc, 2);
    s = take(t);
    REQUIRE(s != NULL);
    CHECK(!same_frames(s, 7001) && same_frames(s, 7002));
    pyf_snapshot_free(s);
    /* one more frame on the other thread: it changed, the first did not */
    fake_push_frame(other, sc.top_code, 1);
    s = take(t);
    REQUIRE(s != NULL);
    CHECK(same_frames(s, 7001) && !same_frames(s, 7002));
    pyf_snapshot_free(s);
    /* a new thread: the others are found again where they were */
    fake_thread *third = fake_add_thread(sc.ft, sc.interp, 0x53, 7003, 1);
    fake_push_frame(third, sc.top_code, 0);
    s = take(t);
    REQUIRE(s != NULL && s->nthreads == 3);
    CHECK(same_frames(s, 7001) && same_frames(s, 7002) && !same_frames(s, 7003));
    pyf_snapshot_free(s);
    /* a flush starts a new table: nothing is the same as before it */
    pyf_target_flush(t);
    s = take(t);
    REQUIRE(s != NULL);
    CHECK(!same_frames(s, 7001) && !same_frames(s, 7002) && !same_frames(s, 7003));
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(sc.ft);
}

/* A code object freed and another made at its address, at the same
 * instruction: a new record with the new names, never the old one. */
static void test_code_replaced(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d code object replaced at its address", minor);
    check_begin(name);
    scene sc;
    build(&sc, minor);
    pyf_target *t = fake_open(sc.ft, NULL, 0);
    REQUIRE(t != NULL);
    pyf_snapshot *s1 = take(t);
    REQUIRE(s1 != NULL);
    pyf_frame_table a = table_of(s1);
    fake_target *ft = sc.ft;
    static const fake_loc L_NEW[] = {{2, 90, 90, 1, 2}, {2, 91, 91, 3, 4}, {2, 92, 92, 5, 6}};
    uint8_t lt[64];
    size_t n = fake_encode_linetable(90, L_NEW, NL(L_NEW), lt, sizeof lt);
    uint64_t c = sc.top_code;
    fake_w64(ft, c + fake_off(ft, "code_object.qualname"), fake_str(ft, "other"));
    fake_w64(ft, c + fake_off(ft, "code_object.name"), fake_str(ft, "other"));
    fake_w64(ft, c + fake_off(ft, "code_object.filename"), fake_str(ft, "/app/other.py"));
    fake_w64(ft, c + fake_off(ft, "code_object.linetable"), fake_bytes(ft, lt, n));
    fake_w32(ft, c + fake_off(ft, "code_object.firstlineno"), 90);
    if (minor >= 14) { /* code_dealloc moves the interpreter's generation */
        uint64_t gen_at = sc.interp + fake_off(ft, "interpreter_state.code_object_generation");
        fake_w64(ft, gen_at, fake_r64(ft, gen_at) + 1);
    }
    pyf_snapshot *s2 = take(t);
    REQUIRE(s2 != NULL && s2->nframes == DEPTH + 1);
    pyf_frame_table b = table_of(s2);
    CHECK_EQ_STR(s2->frames[0].info.function, "other");
    CHECK_EQ_STR(s2->frames[0].info.filename, "/app/other.py");
    CHECK_EQ_INT(s2->frames[0].info.line, 90);
    CHECK_EQ_STR(s1->frames[0].info.function, "Top.leaf"); /* kept as it was */
    if (b.table_id == a.table_id) /* 3.13: the same table, a new record */
        CHECK(record_of(&b, 0) != record_of(&a, 0) && record_of(&b, 0) >= a.nrecords);
    else /* 3.14+: the cache was emptied, a new table */
        CHECK(minor >= 14);
    /* the unchanged code objects below keep their names */
    CHECK_EQ_STR(s2->frames[1].info.function, "walk");
    pyf_snapshot_free(s1);
    pyf_snapshot_free(s2);
    pyf_target_close(t);
    fake_free(sc.ft);
}

/* A snapshot stays valid after a flush, after its table grows and after
 * the target is closed (ASan reports any use after free). */
static void test_lifetime(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d snapshot outlives flush, growth, close", minor);
    check_begin(name);
    fake_target *ft = fake_new(minor);
    uint64_t in = fake_add_interp(ft, 0);
    fake_thread *th = fake_add_thread(ft, in, 0x61, 7101, 1);
    uint64_t codes[40];
    for (int i = 0; i < 40; i++) {
        char fn[32];
        snprintf(fn, sizeof fn, "f%d", i);
        codes[i] = fake_code(ft, "/app/many.py", fn, 20, L_REC, NL(L_REC));
    }
    for (int i = 0; i < 10; i++)
        fake_push_frame(th, codes[i], i % 3);
    pyf_target *t = fake_open(ft, NULL, 0);
    REQUIRE(t != NULL);
    pyf_snapshot *s1 = take(t);
    REQUIRE(s1 != NULL && s1->nframes == 10);
    pyf_frame_table a = table_of(s1);
    /* grow the table past its first arrays while s1 holds them */
    for (int i = 0; i < 600; i++)
        fake_push_frame(th, codes[i % 40], i % 3);
    pyf_snapshot *s2 = take(t);
    REQUIRE(s2 != NULL && s2->nframes == 610);
    pyf_frame_table b = table_of(s2);
    CHECK(b.table_id == a.table_id);
    CHECK(b.nkeys >= 610 && b.nrecords >= 120 && b.nrecords <= 121);
    pyf_target_flush(t);
    pyf_snapshot *s3 = take(t);
    REQUIRE(s3 != NULL);
    pyf_frame_table c = table_of(s3);
    CHECK(c.table_id != a.table_id);
    pyf_target_close(t);
    /* every snapshot, and what pyf_snapshot_table gave before, still reads */
    for (uint32_t i = 0; i < 10; i++) {
        const pyf_record *r = &a.records[a.keys[a.frame_keys[i]].record];
        char fn[32];
        snprintf(fn, sizeof fn, "f%u", 9 - i);
        CHECK_EQ_STR(r->info.function, fn);
        CHECK_EQ_STR(s1->frames[i].info.function, fn);
        CHECK_EQ_STR(r->info.filename, "/app/many.py");
    }
    CHECK(fake_check_snapshot(s1) == NULL);
    CHECK(fake_check_snapshot(s2) == NULL);
    CHECK(fake_check_snapshot(s3) == NULL);
    pyf_snapshot_free(s2);
    pyf_snapshot_free(s1);
    CHECK(fake_check_snapshot(s3) == NULL);
    CHECK_EQ_STR(s3->frames[609].info.function, "f0");
    pyf_snapshot_free(s3);
    fake_free(ft);
}

static void test_api_edges(void)
{
    check_begin("pyf_snapshot_table arguments");
    pyf_frame_table tab;
    tab.struct_size = sizeof tab;
    CHECK_EQ_INT(pyf_snapshot_table(NULL, &tab), PYF_EINVAL);
    fake_target *ft = fake_new(15);
    uint64_t in = fake_add_interp(ft, 0);
    fake_add_thread(ft, in, 0x71, 7201, 1);
    pyf_target *t = fake_open(ft, NULL, 0);
    REQUIRE(t != NULL);
    pyf_snapshot *s = take(t);
    REQUIRE(s != NULL);
    CHECK_EQ_INT(pyf_snapshot_table(s, NULL), PYF_EINVAL);
    tab.struct_size = PYF_FRAME_TABLE_SIZE_V0 - 1;
    CHECK_EQ_INT(pyf_snapshot_table(s, &tab), PYF_EINVAL);
    tab.struct_size = sizeof tab;
    CHECK_EQ_INT(pyf_snapshot_table(s, &tab), 0);
    CHECK_EQ_INT(tab.nframes, 0); /* a thread without frames */
    CHECK(tab.table_id != 0);
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(ft);
}

/* pyf_snapshot_take_copy: the header, table, interps and threads of the
 * snapshot in the caller's buffer; the snapshot freed at once only when the
 * caller keeps the frames of the snapshot its threads are the same as. */
static uint64_t copy_buf[512];

static pyf_snapshot_copy *take_copy(pyf_target *t, uint32_t cap, uint64_t kept)
{
    pyf_snapshot_copy *c = (pyf_snapshot_copy *)copy_buf;
    memset(copy_buf, 0xA5, sizeof copy_buf);
    c->cap = cap;
    c->request = NULL;
    c->kept = kept;
    int rc = pyf_snapshot_take_copy(t, c);
    CHECK_MSG(rc == 0, "pyf_snapshot_take_copy: %s (%s)", pyf_error_name(rc),
              fake_last_detail(t));
    return rc == 0 ? c : NULL;
}

/* The copy says what the snapshot says. */
static void check_copy(const pyf_snapshot_copy *c)
{
    const pyf_snapshot *s = c->out;
    REQUIRE(s != NULL);
    const char *why = fake_check_snapshot(s);
    CHECK_MSG(why == NULL, "inconsistent snapshot: %s", why);
    CHECK(c->snapshot.ninterps == s->ninterps && c->snapshot.nthreads == s->nthreads &&
          c->snapshot.nframes == s->nframes && c->snapshot.frames == s->frames &&
          c->snapshot.threads == s->threads);
    pyf_frame_table tab = table_of(s);
    CHECK(memcmp(&tab, &c->table, sizeof tab) == 0);
    if (c->flags & PYF_COPY_ARRAYS) {
        const uint8_t *at = (const uint8_t *)c + sizeof *c;
        CHECK(memcmp(at, s->interps, s->ninterps * sizeof *s->interps) == 0);
        at += s->ninterps * sizeof *s->interps;
        CHECK(memcmp(at, s->threads, s->nthreads * sizeof *s->threads) == 0);
    }
}

static void test_take_copy(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d pyf_snapshot_take_copy", minor);
    check_begin(name);
    scene sc;
    build(&sc, minor);
    fake_thread *other = fake_add_thread(sc.ft, sc.interp, 0x52, 7002, 1);
    fake_push_frame(other, sc.rec_code, 3);
    pyf_target *t = fake_open(sc.ft, NULL, 0);
    REQUIRE(t != NULL);
    pyf_snapshot_copy *c = (pyf_snapshot_copy *)copy_buf;
    /* refused arguments */
    CHECK_RC(pyf_snapshot_take_copy(t, NULL), PYF_EINVAL);
    CHECK_RC(pyf_snapshot_take_copy(t, (pyf_snapshot_copy *)((char *)copy_buf + 4)),
             PYF_EINVAL);
    c->cap = sizeof *c - 8;
    CHECK_RC(pyf_snapshot_take_copy(t, c), PYF_EINVAL);
    c->cap = sizeof copy_buf;
    CHECK_RC(pyf_snapshot_take_copy(NULL, c), PYF_EINVAL);
    CHECK(c->out == NULL);

    /* the first: kept nothing, so the snapshot is the caller's */
    c = take_copy(t, sizeof copy_buf, 0);
    REQUIRE(c != NULL);
    CHECK(c->flags == PYF_COPY_ARRAYS && c->same_as == 0 && c->serial > 0);
    CHECK(c->kept == c->serial);
    CHECK_EQ_INT(c->size, sizeof *c + 1 * sizeof(pyf_interp) + 2 * sizeof(pyf_thread));
    check_copy(c);
    CHECK(c->snapshot.nframes == DEPTH + 2);
    uint64_t first = c->serial;
    pyf_snapshot_free(c->out);

    /* nothing moved and the caller keeps the first: freed at once */
    c = take_copy(t, sizeof copy_buf, first);
    REQUIRE(c != NULL);
    CHECK(c->flags == (PYF_COPY_ARRAYS | PYF_COPY_FREED | PYF_COPY_KEPT) && c->out == NULL);
    CHECK(c->serial == first + 1 && c->same_as == first && c->kept == first + 1);
    CHECK(c->snapshot.interps == NULL && c->snapshot.threads == NULL &&
          c->snapshot.frames == NULL && c->table.frame_keys == NULL);
    CHECK(c->snapshot.nthreads == 2 && c->snapshot.nframes == DEPTH + 2);
    const pyf_thread *th = (const pyf_thread *)((const uint8_t *)c + sizeof *c +
                                                sizeof(pyf_interp));
    CHECK(th[0].flags & th[1].flags & PYF_THREAD_SAME_FRAMES);
    CHECK(c->table.records != NULL && c->table.nkeys >= DEPTH + 2);

    /* the caller keeps another snapshot than the last: not freed */
    c = take_copy(t, sizeof copy_buf, first);
    REQUIRE(c != NULL);
    CHECK(c->flags == PYF_COPY_ARRAYS && c->same_as == first + 1);
    check_copy(c);
    pyf_snapshot_free(c->out);
    uint64_t kept = c->kept;

    /* a plain snapshot between: the next copy compares with it */
    pyf_snapshot *s = take(t);
    pyf_snapshot_free(s);
    c = take_copy(t, sizeof copy_buf, kept);
    REQUIRE(c != NULL);
    CHECK(c->flags == PYF_COPY_ARRAYS && c->same_as == kept + 1 && c->out != NULL);
    check_copy(c);
    pyf_snapshot_free(c->out);
    kept = c->kept;

    /* a thread moved: its frames are needed */
    move_top(&sc, 2);
    c = take_copy(t, sizeof copy_buf, kept);
    REQUIRE(c != NULL);
    CHECK(c->flags == (PYF_COPY_ARRAYS | PYF_COPY_KEPT) && c->out != NULL);
    check_copy(c);
    pyf_snapshot_free(c->out);
    kept = c->kept;

    /* the arrays do not fit: the snapshot is the caller's */
    c = take_copy(t, sizeof *c, kept);
    REQUIRE(c != NULL);
    CHECK(c->flags == PYF_COPY_KEPT && c->out != NULL && c->size > sizeof *c);
    check_copy(c);
    pyf_snapshot_free(c->out);
    kept = c->kept;

    /* the same buffer again: the arrays it holds are the same */
    c->cap = sizeof copy_buf;
    c->kept = kept;
    CHECK_RC(pyf_snapshot_take_copy(t, c), 0);
    CHECK(c->flags == (PYF_COPY_ARRAYS | PYF_COPY_FREED | PYF_COPY_KEPT) && c->out == NULL);
    kept = c->kept;
    CHECK_RC(pyf_snapshot_take_copy(t, c), 0);
    CHECK(c->flags ==
          (PYF_COPY_ARRAYS | PYF_COPY_FREED | PYF_COPY_SAME_ARRAYS | PYF_COPY_KEPT));
    CHECK(c->same_as == kept && c->out == NULL);
    kept = c->kept;
    /* one byte of a thread's row changed in the buffer: copied again */
    th = (const pyf_thread *)((const uint8_t *)c + sizeof *c + sizeof(pyf_interp));
    ((pyf_thread *)th)[1].more_frames = 99;
    CHECK_RC(pyf_snapshot_take_copy(t, c), 0);
    CHECK(c->flags == (PYF_COPY_ARRAYS | PYF_COPY_FREED | PYF_COPY_KEPT) &&
          th[1].more_frames == 0);
    kept = c->kept;
    /* a thread moved: its row (SAME_FRAMES) is not the same */
    move_top(&sc, 0);
    CHECK_RC(pyf_snapshot_take_copy(t, c), 0);
    CHECK(c->flags == (PYF_COPY_ARRAYS | PYF_COPY_KEPT) && c->out != NULL);
    check_copy(c);
    pyf_snapshot_free(c->out);
    kept = c->kept;

    /* entries asked: the snapshot is the caller's even when nothing moved */
    pyf_snapshot_request req = {.struct_size = sizeof req, .flags = PYF_SNAP_ENTRIES};
    c->cap = sizeof copy_buf;
    c->request = &req;
    c->kept = kept;
    CHECK_RC(pyf_snapshot_take_copy(t, c), 0);
    CHECK(c->flags == (PYF_COPY_ARRAYS | PYF_COPY_KEPT) && c->out != NULL);
    pyf_snapshot_free(c->out);
    pyf_target_close(t);
    fake_free(sc.ft);
}

/* A take_copy that read nothing but its prefetch, and found the stack the
 * same, is given again without a walk while the next prefetch reads the
 * same bytes (replay.c): the same answer and counters as a walk, and a
 * walk again once a byte it read moves. */
static pyf_stats stats_delta(const pyf_stats *a, const pyf_stats *b)
{
    pyf_stats d;
    const uint64_t *x = (const uint64_t *)a, *y = (const uint64_t *)b;
    uint64_t *z = (uint64_t *)&d;
    for (size_t i = 0; i < sizeof d / sizeof *z; i++)
        z[i] = y[i] - x[i];
    return d;
}

/* n take_copy calls of req, each keeping the last one's frames (*kept);
 * how many were given again. */
static uint64_t copies_given_again(pyf_target *t, uint64_t *kept, int n,
                                   const pyf_snapshot_request *req)
{
    pyf_stats a, b;
    pyf_target_stats(t, &a);
    pyf_snapshot_copy *c = (pyf_snapshot_copy *)copy_buf;
    for (int i = 0; i < n; i++) {
        c->cap = sizeof copy_buf;
        c->request = req;
        c->kept = *kept;
        REQUIRE(pyf_snapshot_take_copy(t, c) == PYF_OK);
        if (c->out != NULL)
            pyf_snapshot_free(c->out);
        *kept = c->kept;
    }
    pyf_target_stats(t, &b);
    return b.same_reads - a.same_reads;
}

static void test_replay(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d take_copy given again", minor);
    check_begin(name);
    scene sc;
    build(&sc, minor);
    pyf_target *t = fake_open(sc.ft, NULL, 1); /* readv: a prefetch */
    REQUIRE(t != NULL);
    static uint64_t walked[512];
    pyf_snapshot_copy *c = take_copy(t, sizeof copy_buf, 0);
    REQUIRE(c != NULL);
    pyf_snapshot_free(c->out);
    uint64_t kept = c->kept;
    pyf_stats d_walk = {0}, d_again = {0}, s0, s1;
    int replayed = 0;
    for (int i = 0; i < 6; i++) {
        pyf_target_stats(t, &s0);
        c = take_copy(t, sizeof copy_buf, kept);
        REQUIRE(c != NULL);
        pyf_target_stats(t, &s1);
        /* (take_copy fills the buffer with 0xA5 first: never SAME_ARRAYS) */
        CHECK(c->flags == (PYF_COPY_ARRAYS | PYF_COPY_FREED | PYF_COPY_KEPT));
        CHECK(c->serial == kept + 1 && c->same_as == kept && c->kept == kept + 1);
        kept = c->kept;
        pyf_stats d = stats_delta(&s0, &s1);
        CHECK_EQ_INT(d.read_calls, 1);
        if (d.same_reads == 0) {
            d_walk = d;
            memcpy(walked, copy_buf, sizeof walked);
        } else {
            replayed++;
            d_again = d;
            /* the header and arrays a walk gave, but the serials */
            pyf_snapshot_copy *w = (pyf_snapshot_copy *)walked;
            CHECK(memcmp(&w->snapshot, &c->snapshot, sizeof c->snapshot) == 0);
            CHECK(memcmp(&w->table, &c->table, sizeof c->table) == 0);
            CHECK(w->size == c->size &&
                  memcmp(w + 1, c + 1, c->size - sizeof *c) == 0);
        }
    }
    CHECK_MSG(replayed >= 4, "given again %d times of 6", replayed);
    d_again.same_reads = 0;
    CHECK(memcmp(&d_walk, &d_again, sizeof d_walk) == 0);

    /* the top moves: walked, and seen */
    move_top(&sc, 2);
    pyf_target_stats(t, &s0);
    c = take_copy(t, sizeof copy_buf, kept);
    REQUIRE(c != NULL);
    pyf_target_stats(t, &s1);
    CHECK(s1.same_reads == s0.same_reads);
    CHECK(!(c->flags & PYF_COPY_FREED) && c->out != NULL);
    if (c->out != NULL) {
        CHECK_EQ_INT(c->out->frames[0].info.line, 41);
        pyf_snapshot_free(c->out);
    }
    kept = c->kept;
    /* still again: given again after a walk or two */
    CHECK(copies_given_again(t, &kept, 3, NULL) > 0);
    /* a snapshot of another call between: walked; then given again */
    pyf_snapshot *plain = take(t);
    REQUIRE(plain != NULL);
    pyf_snapshot_free(plain);
    CHECK_EQ_INT(copies_given_again(t, &kept, 1, NULL), 0);
    CHECK_EQ_INT(copies_given_again(t, &kept, 2, NULL), 1);
    /* a flush: walked */
    pyf_target_flush(t);
    CHECK_EQ_INT(copies_given_again(t, &kept, 1, NULL), 0);
    /* another request: walked */
    pyf_snapshot_request one = {.struct_size = sizeof one, .max_depth = 3};
    copies_given_again(t, &kept, 2, NULL);
    CHECK_EQ_INT(copies_given_again(t, &kept, 1, &one), 0);
    pyf_target_close(t);
    fake_free(sc.ft);
}

int main(void)
{
    static const int minors[] = {13, 14, 15};
    for (int i = 0; i < 3; i++) {
        test_unchanged(minors[i], 0);
        test_unchanged(minors[i], 1);
        test_top_moves(minors[i]);
        test_same_frames(minors[i]);
        test_code_replaced(minors[i]);
        test_lifetime(minors[i]);
        test_take_copy(minors[i]);
        test_replay(minors[i]);
    }
    test_api_edges();
    return check_end();
}
