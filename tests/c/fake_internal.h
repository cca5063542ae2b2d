/*
 * fake_internal.h - the inside of a fake_target, shared by the files of the
 * kit that build or read images (fake_image.c, fake_objects.c,
 * fake_linetable.c, fake_code.c, fake_heap.c, fake_tlbc.c, fake_threads.c,
 * fake_reader.c); tests include fake_target.h only.
 *
 * The address map the builders lay images out on, the image's state, and
 * the few helpers every builder uses (fake_image.c defines them).
 */
#ifndef PYF_TEST_FAKE_INTERNAL_H
#define PYF_TEST_FAKE_INTERNAL_H

#include "fake_target.h"

/* Where the builders put things in the target's address space. */
#define RUNTIME_BASE 0x555555600000ull
#define HEAP_BASE 0x7f3a00000000ull
#define CHUNK_BASE 0x7f5000000000ull
#define CSTACK_BASE 0x7ffd00000000ull
#define UNMAPPED_ADDR 0x6e0000001000ull
#define ARENA_SIZE (1u << 20)
#define REGION_GAP 0x10000ull
#define CHUNK_MIN (16u * 1024u)
#define CSTACK_SIZE (64u * 1024u)
#define FRAME_SLOTS 4

typedef struct ft_region {
    uint64_t base;
    size_t size;
    uint8_t *mem;
    uint8_t *saved;
} ft_region;

typedef struct ft_fault {
    uint64_t addr, len;
    int code;
} ft_fault;

typedef struct ft_obj {
    uint64_t addr;
    size_t size;
} ft_obj;

typedef struct ft_named {
    char *text;
    uint64_t addr;
} ft_named;

/* Offsets the builders use, resolved once. */
typedef struct ft_offs {
    uint64_t rt_size, rt_interps_head;
    uint64_t in_size, in_id, in_next, in_threads_head, in_threads_main,
        in_code_gen;
    uint64_t ts_size, ts_prev, ts_next, ts_interp, ts_current_frame,
        ts_base_frame, ts_thread_id, ts_native_thread_id, ts_datastack_chunk,
        ts_anchor, ts_anchor_seq,
        ts_status, ts_holds_gil;
    uint64_t fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_localsplus,
        fr_owner, fr_stackpointer;
    /* 3.11, 3.12 (UINT64_MAX elsewhere): the runtime's main interpreter,
     * its sys module's dict, the thread's _PyCFrame (the one it embeds)
     * holding the current frame, an interpreter frame's stacktop */
    uint64_t rt_interps_main, rt_main_interp, in_sysdict, ts_cframe, ts_root_cframe,
        cf_current_frame, fr_stacktop;
    /* 3.8-3.10 (UINT64_MAX elsewhere): the thread state's frame object */
    uint64_t ts_frame;
    uint64_t co_size, co_filename, co_name, co_qualname, co_linetable,
        co_firstlineno, co_code_adaptive;
    uint64_t co_flags; /* not in the table: CPython's headers (ft_layout) */
    uint64_t ob_type;
    uint64_t ty_size, ty_tp_name;
    uint64_t by_ob_size, by_ob_sval;
    uint64_t un_state, un_length, un_ascii_size, un_compact_size;
    uint64_t gen_size, gen_gi_name, gen_gi_iframe, gen_gi_frame_state;
    /* the object header, free-threaded layouts (0 when absent) */
    uint64_t ob_size, str_hash, bytes_shash;
    uint64_t fr_tlbc_index, co_tlbc;
    uint32_t str_kind_shift_mul[5], str_compact, str_ascii, str_interned;
    uint8_t owner_entry, gen_executing;
} ft_offs;

struct fake_target {
    int minor;
    const ft_layout *layout; /* NULL: fake_offsets' default table */
    uint64_t hexversion;
    uint8_t table[1024];
    size_t table_size;
    ft_offs o;

    ft_region *regions;
    size_t nregions, capregions;
    size_t last_hit;

    uint64_t heap_next_region;
    uint64_t arena_base, arena_used, arena_size;
    uint64_t chunk_next;
    uint64_t cstack_next;

    ft_obj *objs;
    size_t nobjs, capobjs;

    ft_named *types;
    size_t ntypes, captypes;
    ft_named *strs;
    size_t nstrs, capstrs;

    fake_thread **threads;
    size_t nthreads, capthreads;

    uint64_t none_obj;
    uint64_t trampoline;
    unsigned exec_tag;
    size_t ninterps;
    uint64_t main_interp;     /* 3.11, 3.12: made with the image, not yet handed out */

    ft_fault *faults;
    size_t nfaults, capfaults;
    uint64_t fail_at;  /* absolute call number, 0 = none */
    int fail_code;
    int fail_sticky;
    size_t short_over;
    /* fake_on_read: run once before a read that starts at watch_addr
     * (fake_on_read_within: before the watch_left-th range that holds it) */
    uint64_t watch_addr;
    int watch_within;
    unsigned watch_left;
    void (*watch_fn)(fake_target *, void *);
    void *watch_arg;
    /* fake_on_write: run once before a write to write_watch_addr lands */
    uint64_t write_watch_addr;
    void (*write_watch_fn)(fake_target *, void *);
    void *write_watch_arg;
    fake_counters cnt;
    int writable;             /* readers from fake_reader() can write */
};

/* Abort with "fake_target: <message>" (a test bug, never library output). */
void ft_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void *ft_xcalloc(size_t n, size_t size);
void *ft_xrealloc(void *p, size_t size);

#define GROW(arr, n, cap)                                                      \
    do {                                                                       \
        if ((n) == (cap)) {                                                    \
            (cap) = (cap) ? (cap) * 2 : 16;                                    \
            (arr) = ft_xrealloc((arr), (cap) * sizeof(*(arr)));                \
        }                                                                      \
    } while (0)

static inline uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) & ~(a - 1);
}

/* A 3.8-3.10 image: frames are heap objects (fake_heap.c), the main
 * interpreter is on the heap. */
static inline int ft_heap_frames(const fake_target *ft)
{
    return ft->minor <= 10;
}

/* Remember [addr, addr+size) as an object (fake_nobjects / fake_object). */
void ft_record_obj(fake_target *ft, uint64_t addr, size_t size);
/* The region holding all of [addr, addr+len), else NULL. */
ft_region *ft_find_region(const fake_target *ft, uint64_t addr, size_t len);
/* fake_alloc without recording an object. */
uint64_t ft_alloc_norec(fake_target *ft, size_t size);

#endif
