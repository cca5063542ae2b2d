# The sources of the fake-target kit (fake_target.h): synthetic CPython
# images, their reader and the snapshot checks, one file a concern, with
# the offsets tables they are laid out on.  Included by tests/c and
# tests/fuzz, which compile them into their executables.
set(PYF_FAKE_TARGET_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/fake_image.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_objects.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_values.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_linetable.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_code.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_heap.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_tlbc.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_threads.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_reader.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_checks.c
  ${CMAKE_CURRENT_LIST_DIR}/fake_offsets.c)
