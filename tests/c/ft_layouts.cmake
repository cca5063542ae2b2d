# ft_layouts.cmake - layouts of CPython builds from their own -dev headers
# (ft_layout.h), for tests/c and tests/fuzz: PYF_FT_DIR (the generated
# files, to add to a target's includes), PYF_FT_SOURCES (ft_layouts.c) and
# the target pyf_ft_layouts (a dependency of whoever includes them).
# For 3.13, 3.14 and 3.15, default and free-threaded (Py_GIL_DISABLED):
# ft/emit_layout.c compiled against /usr/include/python3.X prints the
# _Py_DebugOffsets table CPython initializes and the layout facts the table
# lacks; ft_layouts.c lists them.  A version whose headers are missing is
# named in ft_layouts_missing (test_free_threaded skips, or fails inside the
# sandbox).  The emitter is a host tool: plain compiler, no sanitizers; 3.13
# only initializes its table inside _PyRuntimeState_INIT, whose other
# members name functions it never calls (hence the ignored symbols).
set(PYF_FT_DIR ${CMAKE_CURRENT_BINARY_DIR}/ft)
set(PYF_FT_SOURCES ${CMAKE_CURRENT_LIST_DIR}/ft_layouts.c)
file(MAKE_DIRECTORY ${PYF_FT_DIR})
set(PYF_FT_LIST "")
set(PYF_FT_MISSING "")
set(PYF_FT_OUTPUTS "")
foreach(minor 13 14 15)
  set(inc /usr/include/python3.${minor})
  if(NOT EXISTS ${inc}/internal/pycore_runtime.h)
    string(APPEND PYF_FT_MISSING "${inc} ")
    continue()
  endif()
  foreach(flavour "" t)
    set(def "")
    if(flavour STREQUAL "t")
      set(def -DPy_GIL_DISABLED=1)
    endif()
    set(exe ${PYF_FT_DIR}/emit_layout_3${minor}${flavour})
    set(out ${PYF_FT_DIR}/layout_3${minor}${flavour}.inc)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_C_COMPILER} -O1 -w ${def} -no-pie
              -Wl,--unresolved-symbols=ignore-all -I${inc} -o ${exe}
              ${CMAKE_CURRENT_LIST_DIR}/ft/emit_layout.c
      COMMAND ${exe} 3.${minor}${flavour} ${inc} ${out}
      DEPENDS ${CMAKE_CURRENT_LIST_DIR}/ft/emit_layout.c
              ${CMAKE_CURRENT_LIST_DIR}/../../native/src/value_fields.h ${inc}/patchlevel.h
      COMMENT "CPython 3.${minor}${flavour} layout from ${inc}"
      VERBATIM)
    list(APPEND PYF_FT_OUTPUTS ${out})
    string(APPEND PYF_FT_LIST "#include \"layout_3${minor}${flavour}.inc\"\n")
  endforeach()
endforeach()
string(STRIP "${PYF_FT_MISSING}" PYF_FT_MISSING)
file(CONFIGURE OUTPUT ${PYF_FT_DIR}/ft_layouts_list.inc CONTENT "${PYF_FT_LIST}")
file(CONFIGURE OUTPUT ${PYF_FT_DIR}/ft_layouts_missing.inc CONTENT "\"${PYF_FT_MISSING}\"\n")
add_custom_target(pyf_ft_layouts DEPENDS ${PYF_FT_OUTPUTS})
