/*
 * test_strings_lines.c - decoding of str objects (every compact kind,
 * truncation, absurd lengths) and of co_linetable (every entry form,
 * independently encoded; corrupt tables degrade to "no location").
 */
#include "fake_target.h"

#include <string.h>

#define MAXF 128

/* One thread, frames pushed outermost first. */
typedef struct mini {
    fake_target *ft;
    fake_thread *th;
    uint64_t frames[MAXF];
    int n;
    pyf_target *t;
    pyf_snapshot *s;
    int ti;
} mini;

static void mini_new(mini *m, int minor)
{
    memset(m, 0, sizeof *m);
    m->ft = fake_new(minor);
    uint64_t in = fake_add_interp(m->ft, 0);
    m->th = fake_add_thread(m->ft, in, 0xabc, 7001, 1);
    m->ti = -1;
}

static int mini_push(mini *m, uint64_t code, int idx)
{
    if (m->n >= MAXF)
        abort();
    m->frames[m->n] = fake_push_frame(m->th, code, idx);
    return m->n++;
}

/* Snapshot; returns 0 when the thread with all its frames is there. */
static int mini_run(mini *m, const pyf_options *opts)
{
    m->t = fake_open(m->ft, opts, 0);
    CHECK(m->t != NULL);
    if (m->t == NULL)
        return -1;
    fake_watchdog(30, "snapshot");
    int rc = pyf_snapshot_take(m->t, NULL, &m->s);
    fake_watchdog(0, NULL);
    CHECK_MSG(rc == 0, "snapshot: %s (%s)", pyf_error_name(rc), fake_last_detail(m->t));
    if (rc != 0)
        return -1;
    const char *why = fake_check_snapshot(m->s);
    CHECK_MSG(why == NULL, "inconsistent snapshot: %s", why);
    m->ti = fake_find_thread(m->s, 7001);
    CHECK(m->ti >= 0);
    if (m->ti < 0)
        return -1;
    CHECK_EQ_INT(m->s->threads[m->ti].nframes, m->n);
    if ((int)m->s->threads[m->ti].nframes != m->n) {
        fake_dump_snapshot(m->s, stderr);
        return -1;
    }
    return 0;
}

/* The frame pushed i-th (0 = outermost). */
static const pyf_frame *mini_frame(const mini *m, int i)
{
    const pyf_thread *t = &m->s->threads[m->ti];
    return &m->s->frames[t->first_frame + (uint32_t)(m->n - 1 - i)];
}

static void mini_free(mini *m)
{
    pyf_snapshot_free(m->s);
    pyf_target_close(m->t);
    fake_free(m->ft);
    memset(m, 0, sizeof *m);
}

static const fake_loc L1[] = {{4, 1, 1, 0, 1}};

static uint64_t code_named(fake_target *ft, uint64_t qualname, uint64_t filename)
{
    uint8_t lt[16];
    size_t n = fake_encode_linetable(1, L1, 1, lt, sizeof lt);
    return fake_code_raw(ft, filename, qualname, qualname, fake_bytes(ft, lt, n), 1, 4);
}

/* ==== strings ============================================================ */

static const char *const k_names[] = {
    "plain_ascii",
    "café",                              /* UCS1, not ASCII */
    "naïve_ÿ_end",                       /* UCS1 up to U+00FF */
    "Δοκιμή",                            /* UCS2 */
    "日本語の関数",                      /* UCS2 CJK */
    "ℌello_\xef\xbf\xbd",                /* UCS2 with U+FFFD */
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",                           /* UCS4 */
    "emoji_😀_f",                        /* UCS4 mixed with ASCII */
    "a",
    "",                                  /* empty name */
};
#define NNAMES (sizeof k_names / sizeof k_names[0])

static void test_kinds(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d string kinds", minor);
    check_begin(name);
    mini m;
    mini_new(&m, minor);
    const char *file = "/home/usér/プロジェクト/main_😀.py";
    uint64_t fname = fake_str(m.ft, file);
    for (size_t i = 0; i < NNAMES; i++)
        mini_push(&m, code_named(m.ft, fake_str(m.ft, k_names[i]), fname), 1);
    /* same texts with other interned states and the static bit */
    for (unsigned st = 0; st < 4; st++)
        mini_push(&m, code_named(m.ft, fake_str_ex(m.ft, k_names[st + 1], 0, st, st & 1),
                                 fname), 1);
    if (mini_run(&m, NULL) == 0) {
        for (size_t i = 0; i < NNAMES; i++) {
            const pyf_frame *f = mini_frame(&m, (int)i);
            CHECK_EQ_STR(f->info.function, k_names[i]);
            CHECK_EQ_STR(f->info.filename, file);
            CHECK_EQ_INT(f->info.flags & (PYF_FRAME_NAME_TRUNCATED | PYF_FRAME_CODE_UNREADABLE), 0);
            CHECK_EQ_INT(f->info.line, 1);
        }
        for (unsigned st = 0; st < 4; st++)
            CHECK_EQ_STR(mini_frame(&m, (int)(NNAMES + st))->info.function, k_names[st + 1]);
    }
    mini_free(&m);
}

/* A str whose length field is absurd, followed by plenty of valid data. */
static uint64_t absurd_str(fake_target *ft, int kind, uint64_t length, uint32_t ch)
{
    enum { N = 20000 };
    static uint32_t cp[N];
    for (size_t i = 0; i < N; i++)
        cp[i] = ch;
    uint64_t s = fake_str_cp(ft, cp, N, kind);
    fake_w64(ft, s + fake_off(ft, "unicode_object.length"), length);
    return s;
}

static size_t count_prefix(const char *s, const char *unit)
{
    size_t n = 0, ul = strlen(unit);
    while (strncmp(s, unit, ul) == 0) {
        s += ul;
        n++;
    }
    return n;
}

static void test_truncation(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d string truncation", minor);
    check_begin(name);

    /* default cap: absurd lengths and a genuinely long name */
    mini m;
    mini_new(&m, minor);
    uint64_t fname = fake_str(m.ft, "/t.py");
    mini_push(&m, code_named(m.ft, absurd_str(m.ft, 1, (uint64_t)1 << 40, 'a'), fname), 0);
    mini_push(&m, code_named(m.ft, absurd_str(m.ft, 2, (uint64_t)1 << 40, 0x394), fname), 0);
    mini_push(&m, code_named(m.ft, absurd_str(m.ft, 4, ((uint64_t)1 << 62) + 1, 0x1F600),
                             fname), 0);
    mini_push(&m, code_named(m.ft, absurd_str(m.ft, 1, (uint64_t)-1, 'b'), fname), 0);
    mini_push(&m, code_named(m.ft, absurd_str(m.ft, 4, (uint64_t)1 << 63, 0x1F600), fname), 0);
    char *longname = malloc(5001);
    memset(longname, 'q', 5000);
    longname[5000] = '\0';
    mini_push(&m, code_named(m.ft, fake_str(m.ft, longname), fname), 0);
    /* a long file name */
    mini_push(&m, code_named(m.ft, fake_str(m.ft, "ok"), fake_str(m.ft, longname)), 0);
    if (mini_run(&m, NULL) == 0) {
        static const char *const unit[] = {"a", "Δ", "😀"};
        for (int i = 0; i < 3; i++) {
            const pyf_frame *f = mini_frame(&m, i);
            size_t len = strlen(f->info.function);
            CHECK_MSG(f->info.flags & PYF_FRAME_NAME_TRUNCATED, "absurd length %d not flagged", i);
            CHECK_MSG(len <= PYF_DEFAULT_MAX_STRING, "absurd length %d: %zu bytes kept", i, len);
            CHECK_MSG(len > 0 && count_prefix(f->info.function, unit[i]) * strlen(unit[i]) == len,
                      "absurd length %d: unexpected content", i);
        }
        /* negative lengths: never a crash, a valid string */
        CHECK(fake_valid_utf8(mini_frame(&m, 3)->info.function));
        CHECK(fake_valid_utf8(mini_frame(&m, 4)->info.function));
        const pyf_frame *f = mini_frame(&m, 5);
        CHECK(f->info.flags & PYF_FRAME_NAME_TRUNCATED);
        CHECK(strlen(f->info.function) <= PYF_DEFAULT_MAX_STRING);
        CHECK(strlen(f->info.function) >= 1024);
        CHECK(strncmp(f->info.function, longname, strlen(f->info.function)) == 0);
        f = mini_frame(&m, 6);
        CHECK_EQ_STR(f->info.function, "ok");
        CHECK(f->info.flags & PYF_FRAME_NAME_TRUNCATED);
        CHECK(strlen(f->info.filename) <= PYF_DEFAULT_MAX_STRING);
        CHECK(strncmp(f->info.filename, longname, strlen(f->info.filename)) == 0);
    }
    mini_free(&m);

    /* a small max_string: byte cap, whole characters only */
    mini_new(&m, minor);
    fname = fake_str(m.ft, "/t.py");
    static const char *const texts[] = {
        "abcdefghijklmnopqrstuvwxyz", /* ASCII, cut */
        "abcdefghijklmnop",           /* exactly 16 bytes: not cut */
        "éééééééééééééééé",           /* 2-byte chars */
        "日本語日本語日本語",         /* 3-byte chars */
        "😀😀😀😀😀😀",               /* 4-byte chars */
        "x😀😀😀😀😀",                /* 4-byte chars, unaligned */
    };
    for (size_t i = 0; i < 6; i++)
        mini_push(&m, code_named(m.ft, fake_str(m.ft, texts[i]), fname), 0);
    pyf_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.max_string = 16;
    if (mini_run(&m, &o) == 0) {
        for (size_t i = 0; i < 6; i++) {
            const pyf_frame *f = mini_frame(&m, (int)i);
            size_t len = strlen(f->info.function);
            int fits = strlen(texts[i]) <= 16;
            CHECK_MSG(len <= 16, "'%s': %zu bytes kept", texts[i], len);
            CHECK_MSG(fake_valid_utf8(f->info.function), "'%s' cut inside a character", texts[i]);
            CHECK_MSG(strncmp(f->info.function, texts[i], len) == 0, "'%s' -> '%s'", texts[i],
                      f->info.function);
            CHECK_MSG(!!(f->info.flags & PYF_FRAME_NAME_TRUNCATED) == !fits,
                      "'%s': truncated flag %u", texts[i], f->info.flags);
            if (fits)
                CHECK_EQ_STR(f->info.function, texts[i]);
            else
                CHECK_MSG(len >= 12, "'%s': only %zu bytes kept", texts[i], len);
        }
    }
    mini_free(&m);
    free(longname);
}

/* Strings CPython can hold but that are not UTF-8 (lone surrogates from
 * surrogateescape'd file names), unreadable strings, odd states. */
static void test_odd_strings(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d odd strings", minor);
    check_begin(name);
    mini m;
    mini_new(&m, minor);
    const uint32_t sur[] = {'/', 'x', 0xDCFF, '.', 'p', 'y'};
    uint64_t s_sur = fake_str_cp(m.ft, sur, 6, 0);
    uint64_t ok = fake_str(m.ft, "fine");
    mini_push(&m, code_named(m.ft, ok, s_sur), 0);                       /* 0 */
    mini_push(&m, code_named(m.ft, fake_unmapped_addr(m.ft), ok), 0);    /* 1 */
    uint64_t noncompact = fake_str_ex(m.ft, "legacy", 0, 0, 0);
    fake_w32(m.ft, noncompact + fake_off(m.ft, "unicode_object.state"), 1u << 2);
    mini_push(&m, code_named(m.ft, noncompact, ok), 0);                  /* 2 */
    uint64_t badkind = fake_str_ex(m.ft, "kind3", 0, 0, 0);
    fake_w32(m.ft, badkind + fake_off(m.ft, "unicode_object.state"), 3u << 2 | 1u << 5);
    mini_push(&m, code_named(m.ft, badkind, ok), 0);                     /* 3 */
    const uint32_t big[] = {'z', 0x7FFFFFFF, 0x110000};
    mini_push(&m, code_named(m.ft, fake_str_cp(m.ft, big, 3, 4), ok), 0); /* 4 */
    mini_push(&m, code_named(m.ft, ok, ok), 0);                          /* 5 */
    const uint32_t nul[] = {'a', 0, 'b', 0x1B, 0};                      /* U+0000 inside */
    mini_push(&m, code_named(m.ft, fake_str_cp(m.ft, nul, 5, 0), ok), 0); /* 6 */
    if (mini_run(&m, NULL) == 0) {
        const pyf_frame *f = mini_frame(&m, 0);
        CHECK_EQ_STR(f->info.function, "fine");
        CHECK(strncmp(f->info.filename, "/x", 2) == 0);
        size_t flen = strlen(f->info.filename);
        CHECK(flen >= 5 && strcmp(f->info.filename + flen - 3, ".py") == 0);
        f = mini_frame(&m, 1);
        CHECK_EQ_INT(f->code_addr, m.frames[1] ? fake_r64(m.ft, m.frames[1]) & ~3ull : 0);
        CHECK_EQ_STR(f->info.filename, "fine"); /* the rest of the frame is intact */
        CHECK_EQ_INT(f->info.line, 1);
        CHECK_EQ_STR(mini_frame(&m, 5)->info.function, "fine");
        CHECK_EQ_INT(mini_frame(&m, 5)->info.line, 1);
        /* U+0000 written C0 80: the name is not cut short at it */
        f = mini_frame(&m, 6);
        CHECK_EQ_STR(f->info.function, "a\xC0\x80" "b\x1B\xC0\x80");
        CHECK_EQ_INT(f->info.flags & PYF_FRAME_NAME_TRUNCATED, 0);
    }
    mini_free(&m);
}

/* ==== line tables ========================================================= */

static void test_encoder(void)
{
    check_begin("line table encoder (known bytes)");
    uint8_t b[64];
    /* def f():\n    return 1   as compiled by CPython 3.12+ */
    static const fake_loc f1[] = {{1, 1, 1, 0, 0}, {1, 2, 2, 11, 12}};
    static const uint8_t e1[] = {0x80, 0x00, 0xd8, 0x0b, 0x0c};
    size_t n = fake_encode_linetable(1, f1, 2, b, sizeof b);
    CHECK(n == sizeof e1 && memcmp(b, e1, n) == 0);
    static const fake_loc f2[] = {{1, 3, 5, 4, 9}, {1, 0, 0, -1, -1}, {9, FAKE_NOLINE, 0, 0, 0}};
    static const uint8_t e2[] = {0xf0, 0x04, 0x02, 0x05, 0x0a, 0xe8, 0x07, 0xff, 0xf8};
    n = fake_encode_linetable(1, f2, 3, b, sizeof b);
    CHECK(n == sizeof e2 && memcmp(b, e2, n) == 0);
    /* 6-bit varint chunks: delta 1000 -> svarint 2000 = 0x7d0 */
    static const fake_loc f3[] = {{1, 1001, 1001, -1, -1}};
    static const uint8_t e3[] = {0xe8, 0x50, 0x1f};
    n = fake_encode_linetable(1, f3, 1, b, sizeof b);
    CHECK(n == sizeof e3 && memcmp(b, e3, n) == 0);
}

/* Every entry form, with the running line moving up and down. */
static const fake_loc L_ALL[] = {
    {1, 100, 100, 0, 0},          /* short, code 0 */
    {2, 100, 100, 20, 35},        /* short, code 2, width 15 */
    {1, 100, 100, 79, 79},        /* short, code 9 */
    {1, 101, 101, 5, 90},         /* one-line +1 (code 11) */
    {1, 103, 103, 127, 127},      /* one-line +2 (code 12) */
    {1, 103, 103, 0, 200},        /* long: end column >= 128 */
    {1, 103, 103, 10, 20},        /* short again */
    {3, 100, 100, -1, -1},        /* no column, delta -3 (code 13) */
    {2, FAKE_NOLINE, 0, 0, 0},    /* no location (code 15) */
    {1, 100, 100, 2, 3},          /* after 15 the running line is unchanged */
    {12, 250, 260, 300, 5},       /* long, multi-line, split 8 + 4 */
    {1, 90, 92, 1, 2},            /* long, negative delta */
    {1, 95, 95, -1, -1},          /* no column, positive delta */
    {1, 95, 95, 80, 95},          /* one-line +0 (column too big for short) */
    {1, 1000000, 1000000, 0, 1},  /* long, multi-byte varints */
    {1, 1000000, 1000000, 4000, 5000},
    {1, 7, 7, 0, 0},              /* far back */
};
#define NALL (sizeof L_ALL / sizeof L_ALL[0])

static void test_line_forms(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d line table forms", minor);
    check_begin(name);
    mini m;
    mini_new(&m, minor);
    uint64_t code = fake_code(m.ft, "/lines.py", "every_form", 100, L_ALL, NALL);
    int total = 0;
    for (size_t i = 0; i < NALL; i++)
        total += L_ALL[i].ncu;
    /* one frame per code unit, plus two past the end */
    for (int idx = 0; idx < total + 2; idx++)
        mini_push(&m, code, idx < total ? idx : total + (idx - total) * 9);
    /* the same code object at firstlineno 1: a second code with other data */
    static const fake_loc L_SMALL[] = {{2, 1, 1, 0, 4}, {2, 2, 2, 4, 8}};
    uint64_t small = fake_code(m.ft, "/lines.py", "small", 1, L_SMALL, 2);
    int si = mini_push(&m, small, 3);
    if (mini_run(&m, NULL) == 0) {
        for (int idx = 0; idx < total + 2; idx++) {
            const pyf_frame *f = mini_frame(&m, idx);
            fake_loc l;
            int real_idx = idx < total ? idx : total + (idx - total) * 9;
            int found = fake_loc_at(L_ALL, NALL, real_idx, &l) == 0;
            if (!found)
                l.line = l.end_line = l.col = l.end_col = -1;
            const pyf_frame_info *fi = &f->info;
            CHECK_MSG(fi->line == l.line && fi->end_line == l.end_line && fi->column == l.col &&
                          fi->end_column == l.end_col,
                      "index %d: %d-%d:%d-%d, expected %d-%d:%d-%d", real_idx, fi->line,
                      fi->end_line, fi->column, fi->end_column, l.line, l.end_line, l.col,
                      l.end_col);
            if (found && l.line >= 0)
                CHECK_MSG(!(f->info.flags & PYF_FRAME_NO_LOCATION), "index %d flagged NO_LOCATION",
                          real_idx);
            CHECK_EQ_STR(f->info.function, "every_form");
        }
        const pyf_frame *f = mini_frame(&m, si);
        CHECK(f->info.line == 2 && f->info.end_line == 2 && f->info.column == 4 &&
              f->info.end_column == 8);
    }
    mini_free(&m);
}

static uint64_t raw_code(fake_target *ft, const char *qual, const uint8_t *lt, size_t len,
                         int ncu)
{
    return fake_code_raw(ft, fake_str(ft, "/bad.py"), fake_str(ft, qual), fake_str(ft, qual),
                         fake_bytes(ft, lt, len), 10, ncu);
}

static void test_corrupt_tables(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d corrupt line tables", minor);
    check_begin(name);
    mini m;
    mini_new(&m, minor);
    /* frames expected to have no location */
    static const uint8_t trunc_varint[] = {0xf0, 0x41};            /* long form, cut */
    static const uint8_t garbage[] = {0x05, 0x77, 0x13, 0x00};     /* no entry start */
    static const uint8_t oneline_cut[] = {0xd0};                   /* code 10, no bytes */
    static const uint8_t short_cut[] = {0x80};                     /* short form, no byte */
    static const uint8_t second_cut[] = {0x81, 0x03, 0xf0, 0x02};  /* ok for 0-1, then cut */
    static const uint8_t zeros[] = {0, 0, 0, 0};
    int nl[16], n_nl = 0;
    nl[n_nl++] = mini_push(&m, raw_code(m.ft, "trunc_varint", trunc_varint, 2, 4), 0);
    nl[n_nl++] = mini_push(&m, raw_code(m.ft, "garbage", garbage, 4, 4), 0);
    nl[n_nl++] = mini_push(&m, raw_code(m.ft, "oneline_cut", oneline_cut, 1, 4), 0);
    nl[n_nl++] = mini_push(&m, raw_code(m.ft, "short_cut", short_cut, 1, 4), 0);
    nl[n_nl++] = mini_push(&m, raw_code(m.ft, "second_cut", second_cut, 4, 4), 2);
    nl[n_nl++] = mini_push(&m, raw_code(m.ft, "zeros", zeros, 4, 4), 1);
    nl[n_nl++] = mini_push(&m, raw_code(m.ft, "empty", zeros, 0, 4), 0);
    /* linetable pointer unreadable */
    uint64_t c = fake_code_raw(m.ft, fake_str(m.ft, "/bad.py"), fake_str(m.ft, "lt_unmapped"),
                               fake_str(m.ft, "lt_unmapped"), fake_unmapped_addr(m.ft), 10, 4);
    nl[n_nl++] = mini_push(&m, c, 0);
    /* negative ob_size */
    uint64_t negc = raw_code(m.ft, "negative_size", second_cut, 4, 4);
    uint64_t lt = fake_r64(m.ft, negc + fake_off(m.ft, "code_object.linetable"));
    fake_w64(m.ft, lt + fake_off(m.ft, "bytes_object.ob_size"), (uint64_t)-1);
    nl[n_nl++] = mini_push(&m, negc, 0);

    /* the valid start of a table whose later part is cut */
    int ok_before_cut = mini_push(&m, raw_code(m.ft, "second_cut", second_cut, 4, 4), 1);
    /* an absurd ob_size in front of a valid table */
    uint64_t hugec = raw_code(m.ft, "huge_size", second_cut, 4, 4);
    lt = fake_r64(m.ft, hugec + fake_off(m.ft, "code_object.linetable"));
    fake_w64(m.ft, lt + fake_off(m.ft, "bytes_object.ob_size"), (uint64_t)1 << 40);
    int huge = mini_push(&m, hugec, 0);
    /* varints that never end / overflow any integer */
    uint8_t endless[64];
    endless[0] = 0xf0;
    memset(endless + 1, 0x7f, sizeof endless - 1);
    int endless_i = mini_push(&m, raw_code(m.ft, "endless", endless, sizeof endless, 4), 0);
    uint8_t bigvar[] = {0xe8, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f,
                        0x7f, 0x7f, 0x03, 0x80, 0x00};
    int bigvar_i = mini_push(&m, raw_code(m.ft, "bigvar", bigvar, sizeof bigvar, 4), 1);
    /* instr_ptr outside the bytecode */
    uint64_t goodc = raw_code(m.ft, "outside", second_cut, 2, 2);
    int before_i = mini_push(&m, goodc, 0);
    uint64_t ip_off = fake_off(m.ft, "interpreter_frame.instr_ptr");
    fake_w64(m.ft, m.frames[before_i] + ip_off, goodc); /* before co_code_adaptive */
    int odd_i = mini_push(&m, goodc, 0);
    fake_w64(m.ft, m.frames[odd_i] + ip_off, fake_r64(m.ft, m.frames[odd_i] + ip_off) + 1);
    int far_i = mini_push(&m, goodc, 0);
    fake_w64(m.ft, m.frames[far_i] + ip_off, goodc + ((uint64_t)1 << 50));
    int zero_i = mini_push(&m, goodc, 0);
    fake_w64(m.ft, m.frames[zero_i] + ip_off, 0);
    int last = mini_push(&m, fake_code(m.ft, "/good.py", "good", 5, L1, 1), 2);

    if (mini_run(&m, NULL) == 0) {
        for (int i = 0; i < n_nl; i++) {
            const pyf_frame *f = mini_frame(&m, nl[i]);
            CHECK_MSG(f->info.line == -1 && (f->info.flags & PYF_FRAME_NO_LOCATION),
                      "%s: line %d flags 0x%x", f->info.function, f->info.line, f->info.flags);
            CHECK_MSG(f->info.column == -1 && f->info.end_column == -1 && f->info.end_line == -1,
                      "%s: %d-%d:%d-%d", f->info.function, f->info.line, f->info.end_line,
                      f->info.column, f->info.end_column);
            CHECK(!(f->info.flags & PYF_FRAME_CODE_UNREADABLE));
        }
        CHECK_EQ_STR(mini_frame(&m, nl[n_nl - 2])->info.function, "lt_unmapped");
        /* entry 0: short form code 0, 2 units, col 0..3 at line 10 */
        const pyf_frame *f = mini_frame(&m, ok_before_cut);
        CHECK_MSG(f->info.line == 10 && f->info.column == 0 && f->info.end_column == 3 &&
                      !(f->info.flags & PYF_FRAME_NO_LOCATION),
                  "valid prefix: %d:%d-%d flags 0x%x", f->info.line, f->info.column,
                  f->info.end_column, f->info.flags);
        f = mini_frame(&m, huge);
        CHECK_MSG((f->info.line == -1 && (f->info.flags & PYF_FRAME_NO_LOCATION)) ||
                      (f->info.line == 10 && f->info.column == 0 && f->info.end_column == 3),
                  "huge ob_size: line %d", f->info.line);
        /* never a crash, a location that is either unknown or plausible */
        CHECK(mini_frame(&m, endless_i)->info.line == -1);
        CHECK_EQ_STR(mini_frame(&m, bigvar_i)->info.function, "bigvar");
        CHECK_EQ_STR(mini_frame(&m, zero_i)->info.function, "outside");
        CHECK_EQ_STR(mini_frame(&m, far_i)->info.function, "outside");
        CHECK_EQ_INT(mini_frame(&m, far_i)->info.line, -1);
        f = mini_frame(&m, last);
        CHECK_EQ_STR(f->info.function, "good");
        /* long form (line 1 below firstlineno 5), index 2 of 4 units */
        CHECK(f->info.line == 1 && f->info.end_line == 1 && f->info.column == 0 &&
              f->info.end_column == 1);
    }
    mini_free(&m);
}

/* instr_ptr values far from the code object (corrupt frames): no integer
 * overflow while turning them into an instruction index. */
static void test_instr_ptr_extremes(int minor)
{
    char name[64];
    snprintf(name, sizeof name, "3.%d extreme instr_ptr", minor);
    check_begin(name);
    mini m;
    mini_new(&m, minor);
    static const uint8_t lt[] = {0x81, 0x03};
    uint64_t code = raw_code(m.ft, "extreme", lt, sizeof lt, 2);
    uint64_t ip_off = fake_off(m.ft, "interpreter_frame.instr_ptr");
    static const uint64_t ips[] = {0x8000000000000000ull, UINT64_MAX, 0x7fffffffffffffffull,
                                   1};
    for (int i = 0; i < 4; i++) {
        int k = mini_push(&m, code, 0);
        fake_w64(m.ft, m.frames[k] + ip_off, ips[i]);
    }
    if (mini_run(&m, NULL) == 0) {
        for (int i = 0; i < 4; i++)
            CHECK_EQ_STR(mini_frame(&m, i)->info.function, "extreme");
        /* far above the bytecode: past the end of the table */
        CHECK_EQ_INT(mini_frame(&m, 0)->info.line, -1);
        CHECK_EQ_INT(mini_frame(&m, 2)->info.line, -1);
    }
    mini_free(&m);
}

int main(void)
{
    fake_watchdog(110, "test_strings_lines");
    test_encoder();
    static const int minors[] = {13, 14, 15};
    for (int i = 0; i < 3; i++) {
        test_kinds(minors[i]);
        test_truncation(minors[i]);
        test_odd_strings(minors[i]);
        test_line_forms(minors[i]);
        test_corrupt_tables(minors[i]);
    }
    /* last: a library overflow here aborts the process under UBSan */
    for (int i = 0; i < 3; i++)
        test_instr_ptr_extremes(minors[i]);
    return check_end();
}
