/*
 * code.h - code objects, their cache, line tables and strings (code.c,
 * strings.c).
 */
#ifndef PYFRAMES_CODE_H
#define PYFRAMES_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "containers.h"
#include "linetable.h"
#include "offsets.h"

/* ==== the code-object cache (code.c) ===================================== */

typedef struct pyf__code {
    uint64_t addr;           /* remote code object; 0 = empty slot */
    uint64_t serial;         /* this decode, unique within the target */
    /* identity: what the entry was decoded from */
    uint64_t qualname_ptr, filename_ptr, linetable_ptr;
    int32_t firstlineno;
    uint32_t version;        /* co_version: which code object it was */
    uint64_t units;          /* bytecode length in code units (ob_size) */
    uint32_t flags;          /* PYF_FRAME_NAME_TRUNCATED | PYF_FRAME_NO_LOCATION */
    int32_t co_flags;        /* CO_*, 0 when the table places none */
    uint32_t nlocalsplus;    /* co_nlocalsplus: the frame's first slots */
    /* _co_firsttraceable (3.11, 3.12; else 0): a frame that has not reached
     * this instruction is setting itself up (incomplete), and CPython
     * shows no such frame */
    uint32_t firsttraceable;
    /* what a generator-owned frame of it carries: PYF_FRAME_GENERATOR and
     * the owner's type from co_flags (pyf__owned_flags) */
    uint32_t owned_flags;
    char *qualname;          /* UTF-8, heap */
    char *filename;          /* UTF-8, heap */
    /* the bytes of the str objects they were decoded from (header and the
     * characters shown), 0 when unknown: a code object without co_version
     * (3.11) is checked by reading them again */
    uint32_t qualname_size, filename_size;
    uint8_t *linetable;      /* heap copy, NULL when unreadable */
    uint32_t linetable_len;
    pyf__line_kind line_kind; /* its format (the target's line_kind) */
    bool no_lines;           /* table read, but no entry has a line: a shim */
    /* free-threaded 3.14+: the co_tlbc array as read in snapshot tlbc_epoch
     * (never trusted across snapshots: it grows and fills without notice) */
    uint64_t tlbc_epoch, tlbc_arr;
    int64_t tlbc_size;       /* entries, 0 when unreadable or implausible */
    uint64_t checked_epoch;  /* snapshot epoch of the last identity check */
} pyf__code;

/* The PYF_FRAME_* flags of a frame owned by a generator object that runs
 * code (NULL: unreadable, its owner's type unknown). */
static inline uint32_t pyf__owned_flags(const pyf__code *code)
{
    return code != NULL ? code->owned_flags : PYF_FRAME_GENERATOR;
}

typedef struct pyf__code_cache {
    pyf__addrmap index;      /* code address -> (uintptr_t) pyf__code *, heap */
    uint32_t count;
    uint64_t bytes;          /* heap bytes held by entries */
    uint64_t clears;         /* times the cache was emptied */
    pyf__code *last;         /* the entry found last (consecutive frames often
                                run the same code) */
} pyf__code_cache;

/* What a target knows of its code objects (pyf_target.code): the cache,
 * the decode that hit read errors, the interpreter's code generation that
 * keeps the cache valid, and which type is PyCode_Type. */
typedef struct pyf__code_state {
    pyf__code_cache cache;
    pyf__code scratch;       /* a decode that hit read errors: not cached */
    uint64_t serial;         /* the last pyf__code.serial given */
    uint64_t generation;     /* last interp code_object_generation seen */
    bool generation_known;
    uint64_t type_addr;      /* address of PyCode_Type once confirmed */
    uint64_t not_type_addr;  /* last type found not to be "code" */
} pyf__code_state;

/* ==== strings (strings.c) ================================================= */

/* Decode the str object at addr into a heap UTF-8 string (*out, NUL
 * terminated) capped at max_bytes.  *truncated is set when capped.  On
 * failure *out is NULL and the code is returned (detail in t->io.fail). */
int pyf__read_str(pyf_target *t, uint64_t addr, uint32_t max_bytes,
                  char **out, bool *truncated, const char *what);
/* A compact str's header: kind (1, 2, 4), ascii, length in code points and
 * where its characters start.  PYF_ECORRUPT when it is no compact str. */
typedef struct pyf__str_info {
    unsigned kind;
    bool ascii;
    uint64_t length;
    uint64_t data_off;
} pyf__str_info;
int pyf__str_header(const pyf__offsets *o, const uint8_t *buf, pyf__str_info *si);
/* A str that is not compact (legacy_strs: CPython 3.11's, made by its
 * deprecated APIs), its characters elsewhere: its kind and length, and
 * in data_off the offset of the pointer to them (unicode.data).
 * PYF_ECORRUPT for any other header: compact, a legacy str never made
 * ready (no characters but wchar_t ones), a version without them. */
int pyf__str_legacy(const pyf__offsets *o, const uint8_t *buf, pyf__str_info *si);
/* nchars characters at d as heap UTF-8 (*out, NUL terminated, *out_len
 * bytes), cut at max_bytes (*truncated set; left alone otherwise).  raw:
 * lone surrogates as "surrogatepass" and U+0000 as a NUL byte (values);
 * otherwise U+FFFD and C0 80 (names). */
int pyf__str_utf8(const pyf__str_info *si, const uint8_t *d, uint64_t nchars,
                  uint32_t max_bytes, bool raw, char **out, size_t *out_len,
                  bool *truncated);
/* Decode a str from an already-read prefix (header + some data) when it
 * holds the whole string; returns PYF__EMORE when more must be read. */
int pyf__decode_str(const pyf__offsets *o, const uint8_t *buf, size_t have,
                    uint32_t max_bytes, char **out, bool *truncated,
                    size_t *need);

/* ==== code objects and line tables (code.c) ============================== */

void pyf__code_cache_clear(pyf__code_cache *c);
void pyf__code_scratch_free(pyf_target *t);
/* Find or decode the code object at addr.  Never fails hard: an unreadable
 * code object yields NULL with *soft_err set (the frame shows "???");
 * PYF__ESTALE: a running process freed or replaced the code object while
 * it was read (the frame is gone: read the thread again).  frame_addr is
 * the frame that runs it (0: none), read again with the code object to
 * check a running process's decode. */
const pyf__code *pyf__code_get(pyf_target *t, uint64_t addr, uint64_t frame_addr,
                               int *soft_err);

/* Index in code units of the instruction at ip, for bytecode at base; -1
 * just before the first instruction, INT64_MAX when ip is nowhere near. */
static inline int64_t pyf__code_index(uint64_t ip, uint64_t base)
{
    if (ip < base)
        return base - ip <= 2 ? -1 : INT64_MAX;
    uint64_t d = (ip - base) / 2;
    return d > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)d;
}

/* The instruction index (code units) of frame fr running decoded code:
 * against the main bytecode (co_code_adaptive), or on free-threaded 3.14+
 * against the thread-local copy its tlbc_index names (read afresh each
 * snapshot; a bad index, NULL slot or failed read falls back to the main
 * copy, and an ip outside the copy used gives INT64_MAX: no location,
 * never a wrong line).  A failed read adds one to *tlbc_failures.
 */
int64_t pyf__frame_instr(pyf_target *t, const uint8_t *f, uint64_t exe, uint64_t ip,
                         const pyf__code *code, uint32_t *tlbc_failures);
#endif /* PYFRAMES_CODE_H */
