/*
 * fake_target.h - a synthetic CPython address space for tests: 3.13-3.15,
 * 3.11/3.12 and the heap-frame 3.8-3.10 (fake_new_heap).
 *
 * A fake_target is a sparse image made of regions (base address, bytes).
 * Builders lay out _PyRuntime, interpreters, thread states, data-stack
 * chunks, frames, code objects, strings and line tables the way CPython
 * does, using the offsets of the table written at the start of _PyRuntime
 * (tests/c/fake_offsets.h), or of a layout CPython's headers gave
 * (fake_new_layout): 3.11 and 3.12 ones have no table, their runtime
 * holds the main interpreter (made with the image), whose sys module's
 * dict names the version (sys.hexversion), and a thread's current frame
 * is its _PyCFrame's.  fake_reader() exposes the image through a
 * pyf_reader with fault injection and read counters.
 *
 * Everything here aborts on misuse (a test bug), never on library output.
 *
 * This is the one header tests include.  The kit is one file a concern,
 * named at each section below: fake_image.c, fake_objects.c,
 * fake_linetable.c, fake_code.c, fake_threads.c, fake_heap.c, fake_tlbc.c,
 * fake_reader.c, fake_checks.c (their shared insides: fake_internal.h);
 * fake_target.cmake lists them for the builds.
 */
#ifndef PYF_TEST_FAKE_TARGET_H
#define PYF_TEST_FAKE_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fake_offsets.h"
#include "ft_layout.h"
#include "pyframes.h"

/* ==== test assertions: check.h; the watchdog: fake_checks.c =============== */

/* Abort the process with a message when a step takes longer than seconds
 * (hang detection); 0 disarms. */
void fake_watchdog(unsigned seconds, const char *what);

/* ==== the image: fake_image.c ============================================= */

typedef struct fake_target fake_target;
typedef struct fake_thread fake_thread;

/* Final releases used by default: 3.13.18, 3.14.10, 3.15.2 (and 3.8.18,
 * 3.9.18, 3.10.13: fake_new_heap). */
uint64_t fake_default_hexversion(int minor);

/* New image for 3.<minor> (13, 14, 15) with _PyRuntime (offsets table
 * included) and nothing else.  Aborts on unknown minor. */
fake_target *fake_new(int minor);
fake_target *fake_new_hex(int minor, uint64_t hexversion);
void fake_free(fake_target *ft);
/* New image laid out from a layout CPython's own headers gave (ft_layout.h,
 * e.g. a free-threaded build): its _Py_DebugOffsets table, and for what the
 * table lacks its facts (str state bits, hash slots, 3.13's generator
 * layout, frame owners, the _PyCodeArray).  Its code objects carry ob_size
 * and, free-threaded 3.14+, a co_tlbc array holding the main copy. */
fake_target *fake_new_layout(const ft_layout *l);
/* The layout of an image made by fake_new_layout, else NULL. */
const ft_layout *fake_layout(const fake_target *ft);
/* An offset of a layout by the name offsets.c gives it (its table's, or
 * its pairs' on 3.11, 3.12); UINT64_MAX when the version has none. */
uint64_t fake_layout_off(const ft_layout *l, const char *name);

int fake_minor(const fake_target *ft);
uint64_t fake_runtime_addr(const fake_target *ft);
/* Offset value from the pristine table (what the builders use). */
uint64_t fake_off(const fake_target *ft, const char *name);
/* Overwrite one field of the table inside the image (not what builders
 * use): for corrupting the offsets the library sees. */
void fake_set_offset(fake_target *ft, const char *name, uint64_t value);
/* Address of a table field inside the image. */
uint64_t fake_offset_addr(const fake_target *ft, const char *name);

/* Raw memory.  Allocations are zeroed, 16-aligned, in contiguous heap
 * arenas; fake_region creates a separate region at a fixed address. */
uint64_t fake_alloc(fake_target *ft, size_t size);
uint64_t fake_region(fake_target *ft, uint64_t base, size_t size);
void fake_write(fake_target *ft, uint64_t addr, const void *src, size_t len);
void fake_read_raw(const fake_target *ft, uint64_t addr, void *dst, size_t len);
void fake_w8(fake_target *ft, uint64_t addr, uint8_t v);
void fake_w16(fake_target *ft, uint64_t addr, uint16_t v);
void fake_w32(fake_target *ft, uint64_t addr, uint32_t v);
void fake_w64(fake_target *ft, uint64_t addr, uint64_t v);
uint64_t fake_r64(const fake_target *ft, uint64_t addr);
uint32_t fake_r32(const fake_target *ft, uint64_t addr);
/* Host pointer to len bytes at addr (NULL when not mapped). */
uint8_t *fake_host(fake_target *ft, uint64_t addr, size_t len);
/* An address that is never mapped (a hole between regions). */
uint64_t fake_unmapped_addr(const fake_target *ft);

/* ==== objects: fake_objects.c ============================================= */

/* Type object (type_object.size bytes) whose tp_name is the C string name. */
uint64_t fake_type(fake_target *ft, const char *name);

/* Compact str from UTF-8 (must be valid).  The kind is the smallest that
 * fits: ASCII (data at asciiobject_size), UCS1 / UCS2 / UCS4 (data at the
 * compact size, 56).  Equal ASCII texts share one object (like interning). */
uint64_t fake_str(fake_target *ft, const char *utf8);
/* Same with explicit state extras: interned (0..3) and statically_allocated
 * bits; force_kind 0 = smallest, else 1/2/4 (must fit); never shared. */
uint64_t fake_str_ex(fake_target *ft, const char *utf8, int force_kind,
                     unsigned interned, int statically_allocated);
/* Compact str from raw code points (any values, e.g. lone surrogates);
 * kind 0 = smallest that fits. */
uint64_t fake_str_cp(fake_target *ft, const uint32_t *cp, size_t n, int kind);
/* Number of code points of a UTF-8 text. */
size_t fake_utf8_len(const char *utf8);

/* bytes object with ob_size = len. */
uint64_t fake_bytes(fake_target *ft, const void *data, size_t len);

/* ==== objects a frame holds: fake_values.c ================================
 * Only on images made by fake_new_layout (laid out from CPython's headers).
 * Items, keys and values are object addresses. */
uint64_t fake_obj(fake_target *ft, uint64_t type, size_t size); /* refcount 1 */
uint64_t fake_singleton(fake_target *ft, const char *type);     /* None, ... */
uint64_t fake_int(fake_target *ft, int64_t v);
/* |v| as 30-bit digits, sign -1, 0, 1 */
uint64_t fake_int_digits(fake_target *ft, int sign, const uint32_t *digits, size_t n);
uint64_t fake_bool(fake_target *ft, int v);
uint64_t fake_float(fake_target *ft, double v);
uint64_t fake_complex(fake_target *ft, double re, double im);
uint64_t fake_bytearray(fake_target *ft, const void *data, size_t len);
uint64_t fake_tuple(fake_target *ft, const uint64_t *items, size_t n);
uint64_t fake_list(fake_target *ft, const uint64_t *items, size_t n);
/* A keys object of n entries kv[2n] (key, value): unicode (PyDictUnicodeEntry)
 * or general (PyDictKeyEntry); values NULL in a split table's keys.  On
 * 3.8-3.10 (fake_new_heap) general always, dk_size slots. */
uint64_t fake_dict_keys(fake_target *ft, const uint64_t *kv, size_t n, int unicode);
uint64_t fake_dict_of(fake_target *ft, uint64_t keys, uint64_t values, size_t used);
uint64_t fake_dict(fake_target *ft, const uint64_t *kv, size_t n, int unicode);
/* PyDictValues of capacity slots: values[capacity] by slot, order[n] the
 * insertion order (slot numbers). */
uint64_t fake_dict_values(fake_target *ft, const uint64_t *values, const uint8_t *order,
                          size_t n, size_t capacity);
/* type "set" or "frozenset" */
uint64_t fake_set(fake_target *ft, const char *type, const uint64_t *items, size_t n);
uint64_t fake_range(fake_target *ft, int64_t start, int64_t stop, int64_t step);
/* A heap type: tp_name, __module__ in its dict (NULL: no dict), ht_qualname,
 * more tp_flags, tp_basicsize, ht_cached_keys. */
uint64_t fake_heap_type(fake_target *ft, const char *tp_name, const char *module,
                        const char *qualname, uint64_t flags, uint64_t basicsize,
                        uint64_t cached_keys);
void fake_type_set_base(fake_target *ft, uint64_t type, uint64_t base); /* tp_base */
void fake_type_set_flags(fake_target *ft, uint64_t type, uint64_t flags);
/* An instance of type whose managed dict pointer is dict. */
uint64_t fake_instance_dict(fake_target *ft, uint64_t type, uint64_t dict);
/* An instance whose attributes are values of its type's shared keys, no
 * dict made: inline after it (3.13+; sets the type's tp_basicsize), or
 * pointed at from before it (3.11: the values pointer; 3.12: the tagged
 * word), the insertion order as the version keeps it. */
uint64_t fake_instance_inline(fake_target *ft, uint64_t type, const uint64_t *values,
                              const uint8_t *order, size_t n, size_t capacity);
/* A heap type "app.<qualname>" with __slots__ names[n] (object members,
 * one word each after the header), and an instance holding values[n]
 * (0: unset). */
/* A class with __slots__ names deriving from base_type (a slots type, or
 * 0): its slots after the base's. */
uint64_t fake_slots_subtype(fake_target *ft, const char *qualname, const char *const *names,
                            size_t n, uint64_t base_type);
uint64_t fake_slots_type(fake_target *ft, const char *qualname, const char *const *names,
                         size_t n);
uint64_t fake_slots_instance(fake_target *ft, uint64_t type, const uint64_t *values, size_t n);
uint64_t fake_function(fake_target *ft, const char *qualname);
uint64_t fake_builtin(fake_target *ft, const char *name, uint64_t self);
uint64_t fake_method(fake_target *ft, uint64_t func, uint64_t self);
uint64_t fake_module(fake_target *ft, const char *name, const char *file);
uint64_t fake_cell(fake_target *ft, uint64_t contents);
/* type "generator", "coroutine", "async_generator" */
uint64_t fake_genobj(fake_target *ft, const char *type, const char *qualname);
uint64_t fake_exception(fake_target *ft, uint64_t type, uint64_t args);
/* A code object's locals: names and CO_FAST_* kinds of n slots, arguments. */
void fake_code_locals(fake_target *ft, uint64_t code, const char *const *names,
                      const uint8_t *kinds, size_t n, int argcount, int kwonly,
                      uint32_t co_flags);
/* An interpreter frame running code with f_globals and n slots (raw words). */
uint64_t fake_locals_frame(fake_target *ft, uint64_t code, uint64_t globals,
                           const uint64_t *slots, size_t n);
/* A frame of def f(a, b, *args, k, **kw) whose locals hold every kind of
 * value (fake_values.c lists them): x unbound, c a cell, r a cell slot
 * before MAKE_CELL, e an empty cell, h hidden, n a tagged int on 3.14+, fv
 * free, then lists, dicts, sets, instances ..., a list holding itself. */
uint64_t fake_values_frame(fake_target *ft, uint64_t *code_out, uint64_t *globals_out);

/* ==== line tables: fake_linetable.c ======================================= */

#define FAKE_NOLINE (-1)

/* One run of code units with the same location (CPython 3.11+ semantics):
 * line FAKE_NOLINE = no location (form 15); col < 0 = no columns (form 13,
 * end_line must equal line); otherwise the encoder picks short (0-9),
 * one-line (10-12) or long (14) exactly like CPython's assembler.  Runs
 * longer than 8 code units are split. */
typedef struct fake_loc {
    int ncu; /* code units, >= 1 */
    int line, end_line, col, end_col;
} fake_loc;

/* Encode into out; returns the length in bytes (aborts if cap is short). */
size_t fake_encode_linetable(int firstlineno, const fake_loc *locs, size_t n,
                             uint8_t *out, size_t cap);

/* Expected location of code unit index idx (what CPython's addr2line
 * returns); returns 0 and sets *found = loc, or -1 past the end. */
int fake_loc_at(const fake_loc *locs, size_t n, int idx, fake_loc *found);

/* ==== code objects: fake_code.c =========================================== */

/* co_flags of CPython 3.13-3.15 (Include/cpython/code.h): the bits that
 * make a function's generator object a generator, coroutine or async
 * generator (test_free_threaded checks them against CPython's headers). */
#define FAKE_CO_GENERATOR 0x0020u
#define FAKE_CO_COROUTINE 0x0080u
#define FAKE_CO_ITERABLE_COROUTINE 0x0100u
#define FAKE_CO_ASYNC_GENERATOR 0x0200u
/* Set a code object's co_flags (fake_code leaves them 0). */
void fake_code_set_flags(fake_target *ft, uint64_t code, uint32_t co_flags);

/* Code object with ob_type -> type "code", co_filename / co_qualname /
 * co_name (last dotted part of qualname) -> str, co_linetable -> bytes from
 * the encoder, co_firstlineno, and sum(ncu) code units of bytecode at
 * co_code_adaptive. */
uint64_t fake_code(fake_target *ft, const char *filename, const char *qualname,
                   int firstlineno, const fake_loc *locs, size_t nlocs);
/* Code object from explicit object addresses (any may be arbitrary values)
 * and a bytecode length in code units. */
uint64_t fake_code_raw(fake_target *ft, uint64_t filename, uint64_t qualname,
                       uint64_t name, uint64_t linetable, int firstlineno,
                       int ncu);

/* ==== interpreters, threads, frames: fake_threads.c ======================= */

/* Add an interpreter.  Like CPython, new interpreters are prepended to the
 * runtime's list; the first one lives inside _PyRuntime (the main
 * interpreter is embedded there), later ones on the heap.  On a 3.11 or
 * 3.12 image the first call returns the main interpreter the image was
 * made with (id set). */
uint64_t fake_add_interp(fake_target *ft, int64_t id);

/* Add a thread state (prepended to the interpreter's list, like CPython).
 * The first thread of an interpreter is its threads_main (3.14+).  On 3.15
 * base_frame points at a sentinel frame (owner INTERPRETER, previous NULL)
 * inside the thread-state allocation and current_frame starts there.  When
 * entry is nonzero an entry frame (as pushed by _PyEval_EvalFrameDefault)
 * is pushed first. */
fake_thread *fake_add_thread(fake_target *ft, uint64_t interp,
                             uint64_t thread_id, uint64_t native_tid, int entry);
uint64_t fake_thread_addr(const fake_thread *th);
uint64_t fake_thread_base_frame(const fake_thread *th); /* 0 before 3.15 */
uint64_t fake_thread_current(const fake_thread *th);
void fake_thread_set_current(fake_thread *th, uint64_t frame);
/* 3.15: thread_state.holds_gil. */
void fake_thread_set_holds_gil(fake_thread *th, int v);
/* Chunk bookkeeping of the thread's data stack. */
size_t fake_thread_nchunks(const fake_thread *th);

/* Entry frame on the thread's C stack region: owner CSTACK (3.13) or
 * INTERPRETER (3.14/3.15); owner_override >= 0 replaces it (e.g. 4 =
 * CSTACK on 3.14).  Returns its address. */
uint64_t fake_push_entry(fake_thread *th, int owner_override);

/* CPython 3.11/3.12's _PyCFrame (the library told so by the test): the
 * thread's current frame is kept in the _PyCFrame of the eval loop running
 * it, on the thread's C stack region, which the thread state's cframe
 * field (at ts_cframe) names; size, current and previous lay it out.  The
 * first one is pushed now (current_frame the thread's).  From then on
 * every change of the current frame is written there too (and to the
 * thread state's current_frame, which the library then does not read). */
void fake_thread_use_cframes(fake_thread *th, uint64_t ts_cframe, uint64_t size,
                             uint64_t current, uint64_t previous);
/* An eval loop starts: a new _PyCFrame on the C stack (previous: the
 * last), named by the thread state, holding the current frame.  Returns
 * its address. */
uint64_t fake_cframe_push(fake_thread *th);
/* The eval loop returns: the thread state names the previous _PyCFrame
 * again (returned); the popped one's memory is left as it was, and the
 * next C stack allocation (fake_cframe_push, fake_push_entry) takes it. */
uint64_t fake_cframe_pop(fake_thread *th);
uint64_t fake_thread_cframe(const fake_thread *th);

/* Python frame in the thread's data stack (new chunks of >= 16 KiB as
 * needed): f_executable = code | exec tag, instr_ptr = code +
 * co_code_adaptive + 2*instr_index, owner THREAD, previous = current.
 * Becomes the current frame.  Returns its address. */
uint64_t fake_push_frame(fake_thread *th, uint64_t code, int instr_index);
/* Pop the top frame as CPython does, moving a 3.15 anchor that was on it
 * to the caller (seq + 1); returns the new top.  The memory of a frame on
 * top of the data stack or the C stack is taken by the next push there. */
uint64_t fake_pop_frame(fake_thread *th);
/* The thread state's last_profiled_frame (and seq); 0 before 3.15. */
uint64_t fake_thread_anchor(const fake_thread *th, uint64_t *seq);
/* What another profiler would do: the anchor moved, the seq not. */
void fake_thread_set_anchor(fake_thread *th, uint64_t frame);

/* Running generator: a gen object (outside the data stack) whose embedded
 * frame (owner GENERATOR, gi_frame_state EXECUTING) becomes the current
 * frame.  Returns the frame address; *gen_out (optional) the object. */
uint64_t fake_gen_frame(fake_thread *th, uint64_t code, int instr_index,
                        uint64_t *gen_out);

/* Tag OR-ed into f_executable by later pushes (3.14+ only; default 1,
 * Py_TAG_REFCNT).  Ignored (always 0) on 3.13. */
void fake_set_exec_tag(fake_target *ft, unsigned tag);

/* Frame field helpers (by offsets table). */
void fake_frame_set_previous(fake_target *ft, uint64_t frame, uint64_t prev);
uint64_t fake_frame_previous(const fake_target *ft, uint64_t frame);
void fake_frame_set_executable(fake_target *ft, uint64_t frame, uint64_t v);
void fake_frame_set_owner(fake_target *ft, uint64_t frame, uint8_t owner);

/* The image a thread is in. */
fake_target *fake_thread_target(const fake_thread *th);

/* ==== heap-frame images (3.8, 3.9, 3.10): fake_heap.c ====================== */

/* The layout of 3.<minor> (8, 9, 10) from the library's built-in table of
 * the version (native/src/layout_tables.h, made from its headers; the
 * builtin_tables test checks it against them), with the facts the table
 * does not carry (str state bits, hash slots) from those headers. */
const ft_layout *fake_heap_layout(int minor);
/* New 3.8, 3.9 or 3.10 image (3.8.18, 3.9.18, 3.10.13) on that layout:
 * a runtime whose interpreters.head and .main name a main interpreter on
 * the heap, made with the image (the first fake_add_interp returns it),
 * whose sys module's dict (3.8-3.10's dict keys) names the version. */
fake_target *fake_new_heap(int minor);

/* Code object: co_filename, co_name -> str, co_firstlineno, sum(ncu) code
 * units of bytecode in a bytes object (co_code), and the line table the
 * version keeps (co_lnotab, 3.10's co_linetable) of locs' lines (their
 * columns unused; 3.8/3.9 have no FAKE_NOLINE), as CPython's assembler
 * writes it. */
uint64_t fake_heap_code(fake_target *ft, const char *filename, const char *name,
                        int firstlineno, const fake_loc *locs, size_t nlocs);

/* A frame's state: f_executing (and f_stacktop) on 3.8/3.9, f_state on
 * 3.10. */
enum {
    FAKE_HFRAME_RUNNING,   /* executing */
    FAKE_HFRAME_CREATED,   /* made, not started (f_lasti -1) */
    FAKE_HFRAME_SUSPENDED, /* a generator's at a yield */
    FAKE_HFRAME_UNWINDING, /* 3.10: running, unwinding an exception */
    FAKE_HFRAME_RETURNED,  /* returned: it runs no more */
};
void fake_heap_set_state(fake_target *ft, uint64_t frame, int state);
/* f_lasti of the code unit lasti (-1: none yet), in the version's unit
 * (bytes before 3.10). */
void fake_heap_set_lasti(fake_target *ft, uint64_t frame, int lasti);
/* A PyFrameObject (refcount 1, type "frame") running code at lasti
 * (-1: created, not started), f_back back.  Returns its address. */
uint64_t fake_heap_frame(fake_target *ft, uint64_t code, int lasti, uint64_t back);
/* The same over the thread's current frame, which it becomes. */
uint64_t fake_heap_push(fake_thread *th, uint64_t code, int lasti);
/* The same, the frame of a generator object (f_gen; gi_frame, gi_code);
 * *gen_out (optional) the generator. */
uint64_t fake_heap_gen_push(fake_thread *th, uint64_t code, int lasti, uint64_t *gen_out);

/* ==== thread-local bytecode (free-threaded 3.14+ only): fake_tlbc.c ======= */

/* A new co_tlbc array of size slots for code (entries[0] = the main copy,
 * the rest NULL), installed; returns it. */
uint64_t fake_code_tlbc(fake_target *ft, uint64_t code, int size);
uint64_t fake_code_tlbc_array(const fake_target *ft, uint64_t code);
uint64_t fake_code_tlbc_entry(const fake_target *ft, uint64_t code, int idx);
/* A thread's copy of the bytecode in slot idx (>= 1); returns the copy. */
uint64_t fake_code_tlbc_fill(fake_target *ft, uint64_t code, int idx);
/* Replace the array by a larger one holding the same entries (CPython's
 * resize_array); returns it. */
uint64_t fake_code_tlbc_grow(fake_target *ft, uint64_t code, int size);
/* A frame's tlbc_index and instruction pointer. */
void fake_frame_set_tlbc(fake_target *ft, uint64_t frame, int32_t idx, uint64_t instr_ptr);

/* ==== the reader: fake_reader.c =========================================== */

/* with_readv: also provide the optional readv callback. */
pyf_reader fake_reader(fake_target *ft, int with_readv);
/* Readers made after this can write (the frame cache's anchor). */
void fake_set_writable(fake_target *ft, int writable);
/* Open a target over the image (opts may be NULL); on failure prints the
 * error and returns NULL. */
pyf_target *fake_open(fake_target *ft, const pyf_options *opts, int with_readv);
/* pyf_target_open with the failure's detail copied into err (err may be
 * NULL: no failure struct is passed then). */
int fake_open_detail(const pyf_reader *r, uint64_t runtime_addr, const pyf_options *opts,
                     pyf_target **out, char *err, size_t errlen);
/* pyf_target_failure's detail (a buffer reused by the next call). */
const char *fake_last_detail(const pyf_target *t);
/* The detail of a thread's failure, "" when it has none. */
const char *fake_thread_detail(const pyf_thread *th);

/* Fault ranges: any read overlapping [addr, addr+len) returns code
 * (PYF_EFAULT, PYF_EPERM, ...). */
void fake_add_fault(fake_target *ft, uint64_t addr, uint64_t len, int code);
void fake_clear_faults(fake_target *ft);
/* Fail the n-th reader call from now (1-based; 0 disables) with code; when
 * sticky, every later call fails too. */
void fake_fail_nth(fake_target *ft, uint64_t n, int code, int sticky);
/* Reads longer than max bytes fail with PYF_EIO, as a reader that cannot read that much at once (0 disables). */
void fake_short_reads_over(fake_target *ft, size_t max);
/* A running process: fn(ft, arg) runs once, just before the first read
 * that starts at addr (later ranges of the same readv see what it
 * changed, earlier ones do not). */
void fake_on_read(fake_target *ft, uint64_t addr, void (*fn)(fake_target *, void *), void *arg);
/* The same, just before the nth range read that holds addr (a range read
 * whole with others: the reads of a heap-frame walk's spans). */
void fake_on_read_within(fake_target *ft, uint64_t addr, unsigned nth,
                         void (*fn)(fake_target *, void *), void *arg);
/* The same, once, just before a write to addr lands. */
void fake_on_write(fake_target *ft, uint64_t addr, void (*fn)(fake_target *, void *), void *arg);

typedef struct fake_counters {
    uint64_t calls;  /* reader invocations (a readv batch counts once) */
    uint64_t ranges;
    uint64_t bytes;  /* bytes successfully copied */
    uint64_t failures;
    uint64_t writes; /* successful writes through the reader */
} fake_counters;
fake_counters fake_get_counters(const fake_target *ft);
void fake_reset_counters(fake_target *ft);

/* ==== image snapshots / corruption: fake_image.c ========================== */

/* Remember the current bytes of every region; fake_restore puts them back. */
void fake_save(fake_target *ft);
void fake_restore(fake_target *ft);
/* Number of objects allocated by builders (for targeted corruption). */
size_t fake_nobjects(const fake_target *ft);
void fake_object(const fake_target *ft, size_t i, uint64_t *addr, size_t *size);

/* ==== snapshot checks: fake_checks.c ====================================== */

/* Structural consistency of a snapshot: index ranges, non-NULL strings,
 * valid UTF-8, known error codes.  Returns NULL when fine, else a static
 * description. */
const char *fake_check_snapshot(const pyf_snapshot *s);
/* Whether code is one of the library's PYF_E* values (or 0). */
int fake_known_error(int code);
/* Whether s is valid UTF-8. */
int fake_valid_utf8(const char *s);
/* Index of the thread with this native id in s, or -1. */
int fake_find_thread(const pyf_snapshot *s, uint64_t native_tid);
/* pyf_snapshot_take (no request) under a 30 s watchdog: a failure and an
 * inconsistent snapshot (fake_check_snapshot) fail the case. */
pyf_snapshot *fake_take(pyf_target *t);
/* Print a snapshot (for failure diagnosis). */
void fake_dump_snapshot(const pyf_snapshot *s, FILE *out);

#endif
