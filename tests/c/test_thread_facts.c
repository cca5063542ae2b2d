/*
 * test_thread_facts.c - each thread's name, GIL state and exception
 * (PYF_SNAP_THREAD_FACTS, pyf_snapshot_thread_facts) on synthetic images
 * laid out from CPython's own headers (ft_layout.h), for 3.11 and 3.12, and
 * 3.13, 3.14 and 3.15, default and free-threaded:
 *
 * - names: sys.modules (hundreds of modules: the keys read in batches) ->
 *   threading -> _active; a Thread with a managed dict, one with the
 *   values of a managed dict not made (inline on 3.13+, 3.12's tagged
 *   word, 3.11's values pointer), a name that is no str (none), a name
 *   that cannot be read
 *   (unreadable), a thread in no _active (none); no threading at all
 *   (none), sys.modules unreadable (unreadable); what a snapshot found is
 *   remembered, and a change to sys.modules is seen;
 * - the GIL: locked and its holder (every version: the runtime's on 3.11,
 *   the interpreter's on 3.12+), 3.15's holds_gil and gil_requested, a
 *   free-threaded build with the GIL off (no GIL) and on; PYF_SNAP_GIL
 *   alone: pyf_thread's GIL flags on every default build (none
 *   free-threaded), locked and released, and no facts array;
 * - exceptions, as value trees (pyf_snapshot_fact_values; their str() is
 *   the binding's, tests/python/test_values_render.py): raised
 *   (current_exception; 3.11's curexc triple, also an exception not made
 *   yet: its class and a str, a tuple or no value) with a traceback whose
 *   tb_lineno is still -1 (the line from tb_lasti), handled under an item
 *   of None (a running generator's), KeyError, OSError with its errno,
 *   strerror and file name, several arguments, a str cut at
 *   PYF_FACT_MESSAGE_MAX, garbage and a cycle in the chain (unreadable),
 *   nothing at all;
 * - every reader call of a facts snapshot failed in turn: the snapshot
 *   still succeeds and every fact is well formed;
 * - pyf_snapshot_take_copy's facts given again (PYF_COPY_SAME_FACTS) while
 *   their reads find the same bytes, and never once they moved without
 *   the walk's (the GIL let go, threading's entry in sys.modules), nor
 *   after a failed read, nor for facts a cached code object made.
 * White-box: the facts' offsets checked on every layout.
 */
#include "whitebox.h" /* the library's headers: first */
#include "../../native/src/target.h"
#include "../../native/src/value_layout.h"
#include "fake_target.h"

#define NMODULES 300u
#define NL(a) (sizeof(a) / sizeof((a)[0]))

typedef struct image {
    fake_target *ft;
    const ft_layout *l;
    uint64_t interp;
    fake_thread *th[6];
    uint64_t ts[6];
    uint64_t thread_type, modules_dict, threading;
} image;

enum { T_WRITER, T_AUDITOR, T_INTNAME, T_BADNAME, T_NOTACTIVE, T_MAIN };
static const uint64_t IDENT[6] = {0x7f0000001100, 0x7f0000002200, 0x7f0000003300,
                                  0x7f0000004400, 0x7f0000005500, 0x7f0000006600};

static uint64_t off(const image *im, const char *name)
{
    return fake_off(im->ft, name);
}

static uint64_t exc_type(image *im, const char *name)
{
    uint64_t t = fake_type(im->ft, name);
    fake_type_set_flags(im->ft, t, PYF__TPFLAGS_BASE_EXC_SUBCLASS);
    return t;
}

/* A Thread whose attributes are a managed dict {"_name": name, ...}. */
static uint64_t thread_with_dict(image *im, uint64_t name)
{
    uint64_t kv[6] = {fake_str(im->ft, "_target"), fake_singleton(im->ft, "NoneType"),
                      fake_str(im->ft, "_daemon"), fake_bool(im->ft, 1),
                      fake_str(im->ft, "_name"), name};
    return fake_instance_dict(im->ft, im->thread_type, fake_dict(im->ft, kv, 3, 1));
}

/* sys.modules of NMODULES modules, threading (when with) near the end. */
static uint64_t modules(image *im, bool with)
{
    fake_target *ft = im->ft;
    uint64_t *kv = calloc(2 * NMODULES, 8);
    char name[32];
    REQUIRE(kv != NULL);
    for (unsigned i = 0; i < NMODULES; i++) {
        snprintf(name, sizeof name, i % 3 ? "mod%u" : "threadin%u", i);
        kv[2 * i] = fake_str(ft, name);
        kv[2 * i + 1] = fake_singleton(ft, "NoneType");
    }
    if (with) {
        kv[2 * (NMODULES - 10)] = fake_str(ft, "threading");
        kv[2 * (NMODULES - 10) + 1] = im->threading;
    }
    uint64_t d = fake_dict(ft, kv, NMODULES, 1);
    free(kv);
    return d;
}

/* The image; with readable, the thread whose name cannot be read is
 * named "bad" instead (every read of the facts succeeds). */
static void build_with(image *im, const ft_layout *l, bool readable)
{
    memset(im, 0, sizeof *im);
    fake_target *ft = im->ft = fake_new_layout(l);
    im->l = l;
    im->interp = fake_add_interp(ft, 0);
    for (int i = 5; i >= 0; i--) { /* prepended: T_WRITER first in the list */
        im->th[i] = fake_add_thread(ft, im->interp, IDENT[i], 100 + (uint64_t)i, 0);
        im->ts[i] = fake_thread_addr(im->th[i]);
    }
    im->thread_type = fake_heap_type(ft, "Thread", "threading", "Thread", l->tp_managed_dict,
                                     0, 0);
    /* "auditor": inline values on a type of its own */
    uint64_t kkv[4] = {fake_str(ft, "_name"), 0, fake_str(ft, "_ident"), 0};
    uint64_t keys = fake_dict_keys(ft, kkv, 2, 1);
    uint64_t inline_type = fake_heap_type(ft, "Worker", "app", "Worker",
                                          l->tp_managed_dict | l->tp_inline_values, 0, keys);
    uint64_t vals[2] = {fake_str(ft, "auditor"), fake_int(ft, (int64_t)IDENT[T_AUDITOR])};
    uint8_t order[2] = {0, 1};
    uint64_t objs[6] = {
        thread_with_dict(im, fake_str(ft, "ledger-writer")),
        fake_instance_inline(ft, inline_type, vals, order, 2, 2),
        thread_with_dict(im, fake_int(ft, 7)),
        thread_with_dict(im, readable ? fake_str(ft, "bad") : fake_unmapped_addr(ft)),
        0,
        thread_with_dict(im, fake_str(ft, "MainThread")),
    };
    uint64_t akv[12];
    size_t n = 0;
    for (int i = 0; i < 6; i++)
        if (objs[i] != 0) {
            akv[2 * n] = fake_int(ft, (int64_t)IDENT[i]);
            akv[2 * n + 1] = objs[i];
            n++;
        }
    uint64_t active = fake_dict(ft, akv, n, 0);
    im->threading = fake_module(ft, "threading", "/usr/lib/python3/threading.py");
    uint64_t gkv[4] = {fake_str(ft, "__name__"), fake_str(ft, "threading"),
                       fake_str(ft, "_active"), active};
    fake_w64(ft, im->threading + l->values.module_dict, fake_dict(ft, gkv, 2, 1));
    im->modules_dict = modules(im, true);
    fake_w64(ft, im->interp + off(im, "interpreter_state.imports_modules"), im->modules_dict);
}

static void build(image *im, const ft_layout *l)
{
    build_with(im, l, false);
}

static pyf_snapshot *take(pyf_target *t, const pyf_thread_facts **facts)
{
    pyf_snapshot_request req = {.struct_size = sizeof req, .flags = PYF_SNAP_THREAD_FACTS};
    pyf_snapshot *s = NULL;
    CHECK_RC(pyf_snapshot_take(t, &req, &s), PYF_OK);
    REQUIRE(s != NULL);
    REQUIRE(fake_check_snapshot(s) == NULL);
    CHECK_RC(pyf_snapshot_thread_facts(s, facts), PYF_OK);
    REQUIRE(*facts != NULL);
    return s;
}

/* The facts' value trees of s. */
static const pyf_values *trees(const pyf_snapshot *s)
{
    const pyf_values *v = NULL;
    CHECK_RC(pyf_snapshot_fact_values(s, &v), PYF_OK);
    REQUIRE(v != NULL);
    return v;
}

static const pyf_thread_facts *of(const pyf_snapshot *s, const pyf_thread_facts *f, int i)
{
    int k = fake_find_thread(s, 100 + (uint64_t)i);
    REQUIRE(k >= 0);
    return &f[k];
}

/* Every fact well formed: strings UTF-8, a name only with NAME, an
 * exception's tree (an exception node of its type, or unreadable) only
 * with a type, the trees' nodes in bounds. */
static void well_formed(const pyf_snapshot *s, const pyf_thread_facts *f)
{
    const pyf_values *v = trees(s);
    for (uint32_t i = 0; i < v->nvalues; i++) {
        const pyf_value *x = &v->values[i];
        CHECK(x->type_name != NULL && (x->data != NULL || x->data_size == 0));
        CHECK(x->nchildren == 0 ||
              (x->first_child > i && (uint64_t)x->first_child + x->nchildren <= v->nvalues));
    }
    for (uint32_t i = 0; i < s->nthreads; i++) {
        CHECK((f[i].name != NULL) == !!(f[i].flags & PYF_FACT_NAME));
        CHECK(!(f[i].flags & PYF_FACT_NAME) || !(f[i].flags & PYF_FACT_NAME_UNREADABLE));
        CHECK(f[i].name == NULL || fake_valid_utf8(f[i].name));
        CHECK(f[i].exc_type == NULL || fake_valid_utf8(f[i].exc_type));
        CHECK(f[i].exc_message == NULL); /* worded by the binding, from the tree */
        CHECK(f[i].exc_file == NULL || fake_valid_utf8(f[i].exc_file));
        CHECK(f[i].exc_type == NULL || (f[i].flags & PYF_FACT_EXCEPTION));
        CHECK((f[i].exc_value != PYF_NO_VALUE) == (f[i].exc_type != NULL));
        /* (unreadable: a read failed after its type's) */
        CHECK(f[i].exc_value == PYF_NO_VALUE ||
              (f[i].exc_value < v->nvalues &&
               (v->values[f[i].exc_value].kind == PYF_VALUE_UNREADABLE ||
                (v->values[f[i].exc_value].kind == PYF_VALUE_EXCEPTION &&
                 strcmp(v->values[f[i].exc_value].type_name, f[i].exc_type) == 0))));
        CHECK((f[i].flags & PYF_FACT_NO_GIL) == 0 || (f[i].flags & PYF_FACT_GIL_KNOWN) == 0);
    }
}

#define NAME_IS(s, f, i, want)                                                            \
    do {                                                                                  \
        const pyf_thread_facts *x_ = of(s, f, i);                                         \
        CHECK_MSG(x_->name != NULL && strcmp(x_->name, want) == 0 &&                      \
                      (x_->flags & PYF_FACT_NAME), "%s thread %d: name %s, want %s",      \
                  lname, i, x_->name ? x_->name : "NULL", want);                          \
    } while (0)
#define NO_NAME(s, f, i, unreadable)                                                      \
    do {                                                                                  \
        const pyf_thread_facts *x_ = of(s, f, i);                                         \
        CHECK_MSG(x_->name == NULL && !!(x_->flags & PYF_FACT_NAME_UNREADABLE) ==         \
                      (unreadable), "%s thread %d: name %s flags 0x%x", lname, i,         \
                  x_->name ? x_->name : "NULL", x_->flags);                               \
    } while (0)

static void names(const ft_layout *l)
{
    const char *lname = l->name;
    image im;
    build(&im, l);
    pyf_target *t = fake_open(im.ft, NULL, 1);
    REQUIRE(t != NULL);
    const pyf_thread_facts *f;
    for (int round = 0; round < 2; round++) { /* the second from what the first found */
        pyf_snapshot *s = take(t, &f);
        well_formed(s, f);
        NAME_IS(s, f, T_WRITER, "ledger-writer");
        NAME_IS(s, f, T_AUDITOR, "auditor");
        NAME_IS(s, f, T_MAIN, "MainThread");
        NO_NAME(s, f, T_INTNAME, false);
        NO_NAME(s, f, T_BADNAME, true);
        NO_NAME(s, f, T_NOTACTIVE, false);
        pyf_snapshot_free(s);
    }
    CHECK(t->facts_memo.module.value == im.threading);
    /* the entry remembered now holds another module: searched again */
    uint64_t entry = t->facts_memo.module.entry;
    fake_w64(im.ft, entry + 8, fake_module(im.ft, "other", NULL));
    pyf_snapshot *s = take(t, &f);
    NO_NAME(s, f, T_WRITER, false);
    pyf_snapshot_free(s);
    fake_w64(im.ft, entry + 8, im.threading);
    /* a new sys.modules without threading: no names, none unreadable */
    fake_w64(im.ft, im.interp + off(&im, "interpreter_state.imports_modules"),
             modules(&im, false));
    s = take(t, &f);
    for (int i = 0; i < 6; i++)
        NO_NAME(s, f, i, false);
    pyf_snapshot_free(s);
    /* sys.modules unreadable: every name unreadable */
    fake_w64(im.ft, im.interp + off(&im, "interpreter_state.imports_modules"),
             fake_unmapped_addr(im.ft));
    s = take(t, &f);
    for (int i = 0; i < 6; i++)
        NO_NAME(s, f, i, true);
    pyf_snapshot_free(s);
    /* threading back: found again */
    fake_w64(im.ft, im.interp + off(&im, "interpreter_state.imports_modules"), im.modules_dict);
    s = take(t, &f);
    NAME_IS(s, f, T_WRITER, "ledger-writer");
    pyf_snapshot_free(s);
    /* a str header whose length is past the object (no NUL where it says
     * the characters end): no name, not its first characters */
    uint64_t wname = fake_str(im.ft, "ledger-writer"), len_at = wname + off(&im, "unicode_object.length");
    fake_w64(im.ft, len_at, (uint64_t)1 << 39);
    s = take(t, &f);
    NO_NAME(s, f, T_WRITER, true);
    NAME_IS(s, f, T_AUDITOR, "auditor");
    pyf_snapshot_free(s);
    fake_w64(im.ft, len_at, strlen("ledger-writer"));
    s = take(t, &f);
    NAME_IS(s, f, T_WRITER, "ledger-writer");
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(im.ft);
}

/* The image with its GIL locked by the auditor thread (its last holder);
 * the address of the locked word. */
/* The GIL locked by the auditor; the locked word's address. */
static uint64_t lock_gil(image *im)
{
    uint64_t locked = im->interp + off(im, "interpreter_state.gil_runtime_state_locked");
    uint64_t holder = im->interp + off(im, "interpreter_state.gil_runtime_state_holder");
    if (off(im, "runtime_state.gil_locked") != UINT64_MAX) { /* 3.11: the runtime's one */
        locked = fake_runtime_addr(im->ft) + off(im, "runtime_state.gil_locked");
        holder = fake_runtime_addr(im->ft) + off(im, "runtime_state.gil_holder");
    }
    fake_w32(im->ft, locked, 1);
    fake_w64(im->ft, holder, im->ts[T_AUDITOR]);
    return locked;
}

static uint64_t build_locked(image *im, const ft_layout *l)
{
    build(im, l);
    return lock_gil(im);
}

static void gil(const ft_layout *l)
{
    const char *lname = l->name;
    image im;
    uint64_t locked = build_locked(&im, l);
    fake_target *ft = im.ft;
    uint64_t enabled = im.interp + off(&im, "interpreter_state.gil_runtime_state") +
                       off(&im, "interpreter_state.gil_runtime_state_enabled");
    bool has_requests = l->minor >= 15;
    if (has_requests) { /* the thread's own word says another one */
        fake_thread_set_holds_gil(im.th[T_AUDITOR], 1);
        fake_w32(ft, im.ts[T_WRITER] + off(&im, "thread_state.gil_requested"), 1);
    }
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    const pyf_thread_facts *f;
    pyf_snapshot *s = take(t, &f);
    well_formed(s, f);
    if (l->free_threaded) { /* enabled is 0: no GIL */
        for (int i = 0; i < 6; i++)
            CHECK_MSG(of(s, f, i)->flags & PYF_FACT_NO_GIL, "%s thread %d flags 0x%x", lname,
                      i, of(s, f, i)->flags);
        pyf_snapshot_free(s);
        fake_w32(ft, enabled, 1); /* PYTHON_GIL=1 */
        s = take(t, &f);
    }
    const uint32_t known = PYF_FACT_GIL_KNOWN | (has_requests ? PYF_FACT_GIL_REQUEST_KNOWN : 0);
    const uint32_t mask = PYF_FACT_GIL_KNOWN | PYF_FACT_GIL_HOLDS | PYF_FACT_GIL_HOLDER |
                          PYF_FACT_GIL_REQUEST_KNOWN | PYF_FACT_GIL_REQUESTED | PYF_FACT_NO_GIL;
    for (int i = 0; i < 6; i++) {
        uint32_t want = known;
        if (i == T_AUDITOR)
            want |= PYF_FACT_GIL_HOLDS | PYF_FACT_GIL_HOLDER;
        if (i == T_WRITER && has_requests)
            want |= PYF_FACT_GIL_REQUESTED;
        CHECK_MSG((of(s, f, i)->flags & mask) == want, "%s thread %d: GIL flags 0x%x, want 0x%x",
                  lname, i, of(s, f, i)->flags & mask, want);
    }
    pyf_snapshot_free(s);
    /* unlocked: nobody is the holder (3.15: the thread's word still is) */
    fake_w32(ft, locked, 0);
    s = take(t, &f);
    CHECK(!(of(s, f, T_AUDITOR)->flags & PYF_FACT_GIL_HOLDER));
    CHECK(!!(of(s, f, T_AUDITOR)->flags & PYF_FACT_GIL_HOLDS) == has_requests);
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(ft);
}

/* PYF_SNAP_GIL: pyf_thread's GIL flags on every default build, no facts. */
static void gil_only(const ft_layout *l)
{
    const char *lname = l->name;
    image im;
    uint64_t locked = build_locked(&im, l);
    fake_target *ft = im.ft;
    bool own_word = l->minor >= 15; /* 3.15: holds_gil, as without the flag */
    if (own_word)
        fake_thread_set_holds_gil(im.th[T_AUDITOR], 1);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    pyf_snapshot_request req = {.struct_size = sizeof req, .flags = PYF_SNAP_GIL};
    const uint32_t both = PYF_THREAD_GIL_KNOWN | PYF_THREAD_HOLDS_GIL;
    for (int round = 0; round < 2; round++) {
        pyf_snapshot *s = NULL;
        CHECK_RC(pyf_snapshot_take(t, &req, &s), PYF_OK);
        REQUIRE(s != NULL);
        REQUIRE(fake_check_snapshot(s) == NULL);
        const pyf_thread_facts *f = NULL;
        CHECK_RC(pyf_snapshot_thread_facts(s, &f), PYF_ENOTSUP);
        CHECK(f == NULL);
        for (int i = 0; i < 6; i++) {
            int k = fake_find_thread(s, 100 + (uint64_t)i);
            REQUIRE(k >= 0);
            uint32_t want = l->free_threaded ? 0 : PYF_THREAD_GIL_KNOWN;
            /* the holder while locked; 3.15's own word either way */
            if (!l->free_threaded && i == T_AUDITOR && (round == 0 || own_word))
                want |= PYF_THREAD_HOLDS_GIL;
            CHECK_MSG((s->threads[k].flags & both) == want,
                      "%s round %d thread %d: flags 0x%x, want 0x%x", lname, round, i,
                      s->threads[k].flags & both, want);
        }
        pyf_snapshot_free(s);
        fake_w32(ft, locked, 0); /* released: no holder */
    }
    /* without the flag, 3.13/3.14 say nothing of the GIL */
    pyf_snapshot *s = NULL;
    CHECK_RC(pyf_snapshot_take(t, NULL, &s), PYF_OK);
    REQUIRE(s != NULL);
    for (uint32_t i = 0; i < s->nthreads; i++)
        CHECK(!!(s->threads[i].flags & PYF_THREAD_GIL_KNOWN) == (own_word && !l->free_threaded));
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(ft);
}

/* A traceback of two entries, the innermost in code whose line table puts
 * code unit 3 on line 12, its tb_lineno -1 (not computed yet). */
static uint64_t traceback(image *im, int32_t lineno)
{
    fake_target *ft = im->ft;
    const ft_layout *l = im->l;
    static const fake_loc L[] = {{2, 10, 10, 4, 8}, {3, 12, 12, 4, 20}};
    uint64_t code = fake_code(ft, "/app/ledger.py", "post", 9, L, NL(L));
    uint64_t tbt = fake_type(ft, "traceback"), frt = fake_type(ft, "frame");
    uint64_t tb[2];
    for (int i = 0; i < 2; i++) {
        uint64_t frame = fake_obj(ft, frt, 128);
        fake_w64(ft, frame + l->values.frameobj_f_frame, fake_locals_frame(ft, code, 0, NULL, 0));
        tb[i] = fake_obj(ft, tbt, 64);
        fake_w64(ft, tb[i] + l->values.tb_frame, frame);
        fake_w32(ft, tb[i] + l->values.tb_lasti, 2 * 3);
        fake_w32(ft, tb[i] + l->values.tb_lineno, (uint32_t)(i == 1 ? lineno : 10));
    }
    fake_w64(ft, tb[0] + l->values.tb_next, tb[1]);
    return tb[0];
}

static uint64_t item(image *im, uint64_t exc, uint64_t previous)
{
    uint64_t a = fake_alloc(im->ft, 16);
    fake_w64(im->ft, a + im->l->values.stackitem_exc_value, exc);
    fake_w64(im->ft, a + im->l->values.stackitem_previous, previous);
    return a;
}

/* The exception the thread raises (current_exception; on 3.11 the curexc
 * triple of a made exception: its type, itself, its traceback left to its
 * own __traceback__) and its exc_info chain. */
static void set_exc(image *im, int i, uint64_t raised, uint64_t exc_info)
{
    fake_target *ft = im->ft;
    if (im->l->values.tstate_current_exception != UINT64_MAX) {
        fake_w64(ft, im->ts[i] + im->l->values.tstate_current_exception, raised);
    } else {
        fake_w64(ft, im->ts[i] + off(im, "thread_state.curexc_type"),
                 raised != 0 ? fake_r64(ft, raised + off(im, "pyobject.ob_type")) : 0);
        fake_w64(ft, im->ts[i] + off(im, "thread_state.curexc_value"), raised);
        fake_w64(ft, im->ts[i] + off(im, "thread_state.curexc_traceback"), 0);
    }
    fake_w64(ft, im->ts[i] + im->l->values.tstate_exc_info, exc_info);
}

/* The exception's tree: the exception node (its type name), its args
 * (nargs of them, the first a str of first when not NULL), nkids children
 * in all (an OSError's errno, strerror, ...). */
static const pyf_value *exc_tree(const char *lname, const pyf_snapshot *s,
                                 const pyf_thread_facts *x, int i, const char *type,
                                 uint64_t nargs, const char *first, uint32_t nkids)
{
    const pyf_values *v = trees(s);
    if (x->exc_value >= v->nvalues) {
        CHECK_MSG(false, "%s thread %d: exc_value %u of %u", lname, i, x->exc_value,
                  v->nvalues);
        return NULL;
    }
    const pyf_value *e = &v->values[x->exc_value];
    CHECK_MSG(e->kind == PYF_VALUE_EXCEPTION && strcmp(e->type_name, type) == 0 &&
                  e->nchildren == nkids,
              "%s thread %d: tree %u %s of %u children", lname, i, e->kind, e->type_name,
              e->nchildren);
    if (e->nchildren == 0)
        return e;
    const pyf_value *args = &v->values[e->first_child];
    CHECK_MSG(args->kind == PYF_VALUE_TUPLE && args->length == nargs,
              "%s thread %d: args %u of %llu", lname, i, args->kind,
              (unsigned long long)args->length);
    if (first != NULL && args->nchildren > 0)
        CHECK_MSG(strcmp(v->values[args->first_child].data, first) == 0,
                  "%s thread %d: first argument [%s], want [%s]", lname, i,
                  v->values[args->first_child].data, first);
    return e;
}

static void exc_is(const char *lname, const pyf_snapshot *s, const pyf_thread_facts *f, int i,
                   const char *type, uint64_t nargs, const char *first, uint32_t nkids,
                   bool handled, const char *file, int line)
{
    const pyf_thread_facts *x = of(s, f, i);
    CHECK_MSG((x->flags & PYF_FACT_EXCEPTION) && !(x->flags & PYF_FACT_EXC_UNREADABLE) &&
                  !!(x->flags & PYF_FACT_EXC_HANDLED) == handled,
              "%s thread %d: flags 0x%x", lname, i, x->flags);
    CHECK_MSG(x->exc_type != NULL && strcmp(x->exc_type, type) == 0, "%s thread %d: type %s",
              lname, i, x->exc_type ? x->exc_type : "NULL");
    exc_tree(lname, s, x, i, type, nargs, first, nkids);
    CHECK_MSG(file == NULL ? x->exc_file == NULL
                           : x->exc_file != NULL && strcmp(x->exc_file, file) == 0,
              "%s thread %d: file %s", lname, i, x->exc_file ? x->exc_file : "NULL");
    CHECK_MSG(x->exc_line == line, "%s thread %d: line %d, want %d", lname, i, x->exc_line,
              line);
}

/* 3.11: an exception raised from C and not made yet: its class and the
 * value to call it with (a str, a tuple of arguments, none), held apart in
 * the curexc triple with its traceback so far: its tree is what making it
 * gives, exc_addr 0. */
static void unmade(image *im, pyf_target *t)
{
    const char *lname = im->l->name;
    fake_target *ft = im->ft;
    if (off(im, "thread_state.curexc_type") == UINT64_MAX)
        return; /* 3.12+: one object, always made */
    uint64_t ts = im->ts[T_MAIN], cls = exc_type(im, "OverflowError");
    uint64_t two[2] = {fake_str(ft, "too big"), fake_int(ft, 7)};
    const struct { uint64_t value, nargs; const char *first; } cases[] = {
        {fake_str(ft, "too big"), 1, "too big"},    /* PyErr_SetString */
        {fake_tuple(ft, two, 2), 2, "too big"},     /* PyErr_SetObject with a tuple */
        {0, 0, NULL},                               /* PyErr_SetNone */
        {fake_singleton(ft, "NoneType"), 0, NULL},
    };
    fake_w64(ft, ts + off(im, "thread_state.curexc_type"), cls);
    fake_w64(ft, ts + off(im, "thread_state.curexc_traceback"), traceback(im, 7));
    for (size_t k = 0; k < NL(cases); k++) {
        fake_w64(ft, ts + off(im, "thread_state.curexc_value"), cases[k].value);
        const pyf_thread_facts *f;
        pyf_snapshot *s = take(t, &f);
        well_formed(s, f);
        const pyf_thread_facts *x = of(s, f, T_MAIN);
        exc_is(lname, s, f, T_MAIN, "OverflowError", cases[k].nargs, cases[k].first, 1, false,
               "/app/ledger.py", 7);
        CHECK_MSG(x->exc_addr == 0 && trees(s)->values[x->exc_value].addr == 0,
                  "%s case %zu: exc_addr 0x%llx", lname, k, (unsigned long long)x->exc_addr);
        pyf_snapshot_free(s);
    }
    /* a class that is no exception's: unreadable */
    fake_w64(ft, ts + off(im, "thread_state.curexc_type"), fake_type(ft, "int"));
    const pyf_thread_facts *f;
    pyf_snapshot *s = take(t, &f);
    CHECK(of(s, f, T_MAIN)->flags & PYF_FACT_EXC_UNREADABLE);
    pyf_snapshot_free(s);
    fake_w64(ft, ts + off(im, "thread_state.curexc_type"), 0); /* none raised again */
}

static void exceptions(const ft_layout *l)
{
    const char *lname = l->name;
    image im;
    build(&im, l);
    fake_target *ft = im.ft;
    uint64_t none = fake_singleton(ft, "NoneType");
    /* raised: ValueError("bad entry"), traceback line from tb_lasti */
    uint64_t arg = fake_str(ft, "bad entry: n\xc3\xa9gatif");
    uint64_t ve = fake_exception(ft, exc_type(&im, "ValueError"), fake_tuple(ft, &arg, 1));
    fake_w64(ft, ve + l->values.exc_traceback, traceback(&im, -1));
    set_exc(&im, T_WRITER, ve, 0);
    /* handled under a running generator's empty item: KeyError('k') */
    arg = fake_str(ft, "k");
    uint64_t ke = fake_exception(ft, exc_type(&im, "KeyError"), fake_tuple(ft, &arg, 1));
    fake_w64(ft, ke + l->values.exc_traceback, traceback(&im, 33));
    set_exc(&im, T_AUDITOR, 0, item(&im, none, item(&im, 0, item(&im, ke, 0))));
    /* OSError's words; several arguments; a long message */
    uint64_t oe = fake_exception(ft, exc_type(&im, "FileNotFoundError"), fake_tuple(ft, NULL, 0));
    fake_w64(ft, oe + l->values.oserror_errno, fake_int(ft, 2));
    fake_w64(ft, oe + l->values.oserror_strerror, fake_str(ft, "No such file or directory"));
    fake_w64(ft, oe + l->values.oserror_filename, fake_str(ft, "/x'y"));
    set_exc(&im, T_INTNAME, 0, item(&im, oe, 0));
    uint64_t many[4] = {fake_str(ft, "a\n"), fake_int(ft, -12345678901234), none,
                        fake_float(ft, 2.5)};
    uint64_t me = fake_heap_type(ft, "LedgerError", "app.errors", "LedgerError",
                                 PYF__TPFLAGS_BASE_EXC_SUBCLASS, 0, 0);
    set_exc(&im, T_BADNAME, fake_exception(ft, me, fake_tuple(ft, many, 4)), 0);
    char longtext[400];
    memset(longtext, 'x', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    arg = fake_str(ft, longtext);
    set_exc(&im, T_NOTACTIVE, fake_exception(ft, exc_type(&im, "RuntimeError"),
                                             fake_tuple(ft, &arg, 1)), 0);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    const pyf_thread_facts *f;
    pyf_snapshot *s = take(t, &f);
    well_formed(s, f);
    exc_is(lname, s, f, T_WRITER, "ValueError", 1, "bad entry: n\xc3\xa9gatif", 1, false,
           "/app/ledger.py", 12);
    exc_is(lname, s, f, T_AUDITOR, "KeyError", 1, "k", 1, true, "/app/ledger.py", 33);
    exc_is(lname, s, f, T_INTNAME, "FileNotFoundError", 0, NULL, 4, true, NULL, -1);
    exc_is(lname, s, f, T_BADNAME, "app.errors.LedgerError", 4, "a\n", 1, false, NULL, -1);
    const pyf_thread_facts *x = of(s, f, T_NOTACTIVE);
    const pyf_value *e = exc_tree(lname, s, x, T_NOTACTIVE, "RuntimeError", 1, NULL, 1);
    if (e != NULL && e->nchildren == 1) { /* a str cut where a message ends */
        const pyf_values *v = trees(s);
        const pyf_value *str = &v->values[v->values[e->first_child].first_child];
        CHECK(str->kind == PYF_VALUE_STR && str->length == 399 &&
              strlen(str->data) == PYF_FACT_MESSAGE_MAX && (str->flags & PYF_VALUE_TRUNCATED));
    }
    pyf_snapshot_free(s);
    /* an args tuple whose size is garbage: its items end past memory, so no
     * message made of what follows its one real item */
    uint64_t args = fake_tuple(ft, many, 4);
    fake_w64(ft, args + fake_off(ft, "tuple_object.ob_size"), (uint64_t)1 << 39);
    set_exc(&im, T_BADNAME, fake_exception(ft, me, args), 0);
    /* the same for a str argument whose length is past the object */
    uint64_t len_at = fake_str(ft, longtext) + off(&im, "unicode_object.length");
    fake_w64(ft, len_at, (uint64_t)1 << 39);
    s = take(t, &f);
    for (int i = T_BADNAME; i <= T_NOTACTIVE; i++) {
        /* the args, or the str among them, an unreadable node */
        const pyf_values *v = trees(s);
        x = of(s, f, i);
        REQUIRE(x->exc_value < v->nvalues && v->values[x->exc_value].nchildren == 1);
        const pyf_value *a = &v->values[v->values[x->exc_value].first_child];
        if (a->kind != PYF_VALUE_UNREADABLE && a->nchildren > 0)
            a = &v->values[a->first_child];
        CHECK_MSG(a->kind == PYF_VALUE_UNREADABLE, "%s thread %d: kind %u", lname, i, a->kind);
    }
    fake_w64(ft, len_at, strlen(longtext));
    set_exc(&im, T_BADNAME, fake_exception(ft, me, fake_tuple(ft, many, 4)), 0);
    pyf_snapshot_free(s);
    unmade(&im, t);
    s = take(t, &f);
    CHECK(!(of(s, f, T_MAIN)->flags & (PYF_FACT_EXCEPTION | PYF_FACT_EXC_UNREADABLE)));
    CHECK(of(s, f, T_MAIN)->exc_type == NULL && of(s, f, T_MAIN)->exc_line == -1);
    pyf_snapshot_free(s);
    /* garbage: no exception type; a chain that loops; an item out of memory */
    set_exc(&im, T_WRITER, fake_int(ft, 5), 0);
    uint64_t loop = item(&im, none, 0);
    fake_w64(ft, loop + l->values.stackitem_previous, loop);
    set_exc(&im, T_AUDITOR, 0, loop);
    set_exc(&im, T_INTNAME, 0, item(&im, fake_unmapped_addr(ft), 0));
    set_exc(&im, T_BADNAME, 0, fake_unmapped_addr(ft));
    s = take(t, &f);
    well_formed(s, f);
    for (int i = T_WRITER; i <= T_BADNAME; i++)
        CHECK_MSG(of(s, f, i)->flags & PYF_FACT_EXC_UNREADABLE, "%s thread %d: flags 0x%x",
                  lname, i, of(s, f, i)->flags);
    /* (3.11: a value that is no exception under a class that is none) */
    CHECK(of(s, f, T_WRITER)->exc_type == NULL &&
          (of(s, f, T_WRITER)->exc_addr != 0) == (l->values.tstate_current_exception != UINT64_MAX));
    pyf_snapshot_free(s);
    /* every reader call failed in turn: the snapshot stands, facts well formed */
    for (uint64_t n = 1; n < 400; n++) {
        fake_fail_nth(ft, n, PYF_EFAULT, 0);
        pyf_snapshot_request req = {.struct_size = sizeof req, .flags = PYF_SNAP_THREAD_FACTS};
        s = NULL;
        int rc = pyf_snapshot_take(t, &req, &s);
        fake_fail_nth(ft, 0, 0, 0);
        if (rc != PYF_OK) {
            CHECK(s == NULL && fake_known_error(rc));
            continue;
        }
        CHECK_RC(pyf_snapshot_thread_facts(s, &f), PYF_OK);
        well_formed(s, f);
        pyf_snapshot_free(s);
    }
    pyf_target_close(t);
    fake_free(ft);
}

/* pyf_snapshot_take_copy with PYF_SNAP_THREAD_FACTS, request fixed and the
 * last copy kept, as the binding calls it; the copy (its snapshot, when
 * not freed, the caller's). */
static uint64_t copy_buf[512];

static pyf_snapshot_copy *copy_facts(pyf_target *t, int rc_want)
{
    static pyf_snapshot_request req = {.struct_size = sizeof req,
                                       .flags = PYF_SNAP_THREAD_FACTS};
    pyf_snapshot_copy *c = (pyf_snapshot_copy *)copy_buf;
    c->cap = sizeof copy_buf;
    c->request = &req;
    CHECK_RC(pyf_snapshot_take_copy(t, c), rc_want);
    return c;
}

static uint64_t same_reads(const pyf_target *t)
{
    pyf_stats st;
    pyf_target_stats(t, &st);
    return st.same_reads;
}

/* A facts answer given again (PYF_COPY_SAME_FACTS) once two in a row were
 * the same, and never once what the facts read changed while the walk's
 * bytes did not: the GIL let go, sys.modules' entry of threading pointing
 * elsewhere (the memo searched again) and back; a reader call of the
 * facts' ranges read again that fails; never when a facts read went
 * through the code cache (a traceback's code object). */
#define SAME_FACTS (PYF_COPY_ARRAYS | PYF_COPY_FREED | PYF_COPY_KEPT | PYF_COPY_SAME_FACTS)

static int copies_to_settle(pyf_target *t, const char *lname, const char *what)
{
    for (int i = 0; i < 6; i++) {
        pyf_snapshot_copy *c = copy_facts(t, PYF_OK);
        if ((c->flags & SAME_FACTS) == SAME_FACTS) {
            CHECK(c->out == NULL);
            return i;
        }
        CHECK_MSG(c->out != NULL, "%s %s: flags 0x%x", lname, what, c->flags);
        pyf_snapshot_free(c->out);
    }
    CHECK_MSG(false, "%s %s: never given again", lname, what);
    return -1;
}

/* The next copy's facts: walked again (not given again), the facts of
 * the auditor checked. */
static void facts_read_again(pyf_target *t, const char *lname, const char *what,
                             bool holder, bool named)
{
    uint64_t before = same_reads(t);
    pyf_snapshot_copy *c = copy_facts(t, PYF_OK);
    CHECK_MSG(!(c->flags & PYF_COPY_SAME_FACTS) && c->out != NULL && same_reads(t) == before,
              "%s %s: flags 0x%x", lname, what, c->flags);
    if (c->out == NULL)
        return;
    const pyf_thread_facts *f = NULL;
    CHECK_RC(pyf_snapshot_thread_facts(c->out, &f), PYF_OK);
    if (f != NULL) {
        well_formed(c->out, f);
        /* (free-threaded: the GIL off, no holder) */
        CHECK_MSG(!!(of(c->out, f, T_AUDITOR)->flags & PYF_FACT_GIL_HOLDER) ==
                      (holder && !t->off.free_threaded),
                  "%s %s: flags 0x%x", lname, what, of(c->out, f, T_AUDITOR)->flags);
        CHECK_MSG((of(c->out, f, T_AUDITOR)->name != NULL) == named, "%s %s", lname, what);
    }
    pyf_snapshot_free(c->out);
}

static void given_again(const ft_layout *l)
{
    const char *lname = l->name;
    image im;
    build_with(&im, l, true);
    uint64_t locked = lock_gil(&im);
    fake_target *ft = im.ft;
    /* every thread in a frame (a thread without any is never the same) */
    static const fake_loc L[] = {{2, 10, 10, 4, 8}};
    uint64_t code = fake_code(ft, "/app/ledger.py", "post", 9, L, NL(L));
    for (int i = 0; i < 6; i++)
        fake_push_frame(im.th[i], code, 2);
    pyf_target *t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    memset(copy_buf, 0, sizeof copy_buf);
    CHECK(copies_to_settle(t, lname, "first") >= 2);
    uint64_t before = same_reads(t);
    pyf_snapshot_copy *c = copy_facts(t, PYF_OK);
    CHECK(c->flags == (SAME_FACTS | PYF_COPY_SAME_ARRAYS) && c->out == NULL &&
          same_reads(t) == before + 1);
    CHECK(c->snapshot.threads == NULL && c->table.frame_keys == NULL);
    /* the GIL let go: the walk reads nothing of it, the facts do */
    fake_w32(ft, locked, 0);
    facts_read_again(t, lname, "unlocked", false, true);
    CHECK(copies_to_settle(t, lname, "unlocked") >= 0);
    fake_w32(ft, locked, 1);
    facts_read_again(t, lname, "locked", true, true);
    CHECK(copies_to_settle(t, lname, "locked") >= 0);
    /* threading's entry in sys.modules another module, then threading again */
    uint64_t entry = t->facts_memo.module.entry;
    REQUIRE(entry != 0);
    fake_w64(ft, entry + 8, fake_module(ft, "other", NULL));
    facts_read_again(t, lname, "other module", true, false);
    fake_w64(ft, entry + 8, im.threading);
    facts_read_again(t, lname, "threading again", true, true);
    CHECK(copies_to_settle(t, lname, "threading again") >= 0);
    /* either reader call of a copy given again failing (the walk's
     * prefetch, the facts' ranges read again): walked and read anew */
    for (uint64_t n = 1; n <= 2; n++) {
        fake_fail_nth(ft, n, PYF_EFAULT, 0);
        before = same_reads(t);
        c = copy_facts(t, PYF_OK);
        fake_fail_nth(ft, 0, 0, 0);
        CHECK_MSG(!(c->flags & PYF_COPY_SAME_FACTS) && same_reads(t) == before,
                  "%s call %llu failed: flags 0x%x", lname, (unsigned long long)n, c->flags);
        pyf_snapshot_free(c->out);
        copies_to_settle(t, lname, "after a failure");
    }
    pyf_target_close(t);
    /* an exception with a traceback: its code object came from the cache */
    uint64_t arg = fake_str(ft, "bad entry");
    uint64_t ve = fake_exception(ft, exc_type(&im, "ValueError"), fake_tuple(ft, &arg, 1));
    fake_w64(ft, ve + l->values.exc_traceback, traceback(&im, 12));
    set_exc(&im, T_WRITER, ve, 0);
    t = fake_open(ft, NULL, 1);
    REQUIRE(t != NULL);
    memset(copy_buf, 0, sizeof copy_buf);
    for (int i = 0; i < 6; i++) {
        c = copy_facts(t, PYF_OK);
        CHECK_MSG(c->out != NULL && !(c->flags & PYF_COPY_SAME_FACTS), "%s traceback: 0x%x",
                  lname, c->flags);
        pyf_snapshot_free(c->out);
    }
    CHECK(same_reads(t) == 0);
    pyf_target_close(t);
    fake_free(ft);
}

/* The facts' offsets pass their checks on every layout; without the
 * request the call says so. */
static void offsets(const ft_layout *l)
{
    pyf__offsets o;
    char err[256];
    whitebox_offsets(l, &o);
    CHECK_MSG(pyf__offsets_check_facts(&o, err, sizeof err) == PYF_OK, "%s: %s", l->name, err);
    CHECK_MSG(pyf__offsets_check_gil(&o, err, sizeof err) == PYF_OK, "%s: %s", l->name, err);
    image im;
    build(&im, l);
    pyf_target *t = fake_open(im.ft, NULL, 1);
    REQUIRE(t != NULL);
    pyf_snapshot *s = NULL;
    REQUIRE(pyf_snapshot_take(t, NULL, &s) == PYF_OK);
    const pyf_thread_facts *f = (const pyf_thread_facts *)(uintptr_t)1;
    CHECK_RC(pyf_snapshot_thread_facts(s, &f), PYF_ENOTSUP);
    CHECK(f == NULL);
    pyf_snapshot_free(s);
    pyf_target_close(t);
    fake_free(im.ft);
}

int main(void)
{
    int missing = ft_layouts_missing_exit();
    if (missing != 0)
        return missing;
    fake_watchdog(300, "test_thread_facts");
    for (const ft_layout *l = ft_layouts; l->name != NULL; l++) {
        offsets(l);
        names(l);
        gil(l);
        gil_only(l);
        exceptions(l);
        given_again(l);
    }
    return check_failures ? 1 : 0;
}
