/*
 * fake_offsets.h - _Py_DebugOffsets tables for synthetic targets, built from
 * the published layouts of CPython 3.13, 3.14 and 3.15 (x86-64, GIL build),
 * with the values observed in Debian's builds.  Test data only.
 */
#ifndef PYF_TEST_FAKE_OFFSETS_H
#define PYF_TEST_FAKE_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

/* Write a complete, valid _Py_DebugOffsets table for 3.<minor> (13, 14, 15)
 * with the given PY_VERSION_HEX into buf.  Returns the table's size in bytes
 * (584, 760 or 888), or 0 when cap is too small or minor is unknown. */
size_t pyf_test_fill_offsets(uint8_t *buf, size_t cap, int minor, uint64_t hexversion);

/* Byte offset inside the table of a field, by "section.field" name, e.g.
 * "thread_state.current_frame"; (size_t)-1 when the version lacks it.  Lets
 * tests corrupt one field. */
size_t pyf_test_offsets_field(int minor, const char *name);

/* Read back the value of a field of a filled table (UINT64_MAX if absent). */
uint64_t pyf_test_offsets_get(const uint8_t *table, int minor, const char *name);

#endif
