# ft_layouts.cmake - layouts of CPython builds from their own -dev headers
# (ft_layout.h), for tests/c and tests/fuzz: PYF_FT_DIR (the generated
# files, to add to a target's includes), PYF_FT_SOURCES (ft_layouts.c) and
# the target pyf_ft_layouts (a dependency of whoever includes them).
# For 3.13, 3.14 and 3.15, default and free-threaded (Py_GIL_DISABLED):
# ft/emit_layout.c compiled against /usr/include/python3.X prints the
# _Py_DebugOffsets table CPython initializes and the layout facts the table
# lacks; ft_layouts.c lists them.  A version whose headers are missing is
# named in ft_layouts_missing (test_free_threaded skips, or fails inside the
# sandbox).  For 3.11 and 3.12 (no _Py_DebugOffsets: the emitter lists
# their offsets by name), default builds: the first copy of their headers
# found, in the prefixes of $PYFRAMES_OLDER_PYTHONS, pyenv's builds
# ($PYENV_ROOT, else ~/.pyenv) or Debian's /usr/include; without any they
# are left out (named missing inside the sandbox, which has pyenv's).
# The emitter is a host tool: plain compiler, no sanitizers, NDEBUG (3.11's
# and 3.12's accessors measured on an address assert what it points at);
# 3.13 only initializes its table inside _PyRuntimeState_INIT, whose other
# members name functions it never calls (hence the ignored symbols).
set(PYF_FT_DIR ${CMAKE_CURRENT_BINARY_DIR}/ft)
set(PYF_FT_SOURCES ${CMAKE_CURRENT_LIST_DIR}/ft_layouts.c)
file(MAKE_DIRECTORY ${PYF_FT_DIR})
set(PYF_FT_LIST "")
set(PYF_FT_MISSING "")
set(PYF_FT_OUTPUTS "")
# the include directories of 3.11 and 3.12 found here, first ones first
set(pyf_older_roots "")
string(REPLACE ":" ";" pyf_older_pythons "$ENV{PYFRAMES_OLDER_PYTHONS}")
foreach(py IN LISTS pyf_older_pythons)
  if(py)
    get_filename_component(py_real "${py}" REALPATH)
    get_filename_component(py_prefix "${py_real}" DIRECTORY)
    get_filename_component(py_prefix "${py_prefix}" DIRECTORY)
    list(APPEND pyf_older_roots "${py_prefix}/include")
  endif()
endforeach()
if(DEFINED ENV{PYENV_ROOT})
  set(pyf_pyenv "$ENV{PYENV_ROOT}")
else()
  set(pyf_pyenv "$ENV{HOME}/.pyenv")
endif()
file(GLOB pyf_pyenv_includes LIST_DIRECTORIES true "${pyf_pyenv}/versions/3.1[12].*/include")
list(SORT pyf_pyenv_includes)
list(APPEND pyf_older_roots ${pyf_pyenv_includes} /usr/include)
foreach(minor 11 12 13 14 15)
  set(inc /usr/include/python3.${minor})
  if(minor LESS 13)
    set(inc "")
    foreach(root IN LISTS pyf_older_roots)
      if(NOT inc AND EXISTS ${root}/python3.${minor}/internal/pycore_frame.h)
        set(inc ${root}/python3.${minor})
      endif()
    endforeach()
    if(NOT inc)
      if("$ENV{PYFRAMES_IN_SANDBOX}" STREQUAL "1")
        string(APPEND PYF_FT_MISSING "python3.${minor}'s (pyenv's) ")
      else()
        message(STATUS "no CPython 3.${minor} headers: the synthetic-image tests leave it out")
      endif()
      continue()
    endif()
  elseif(NOT EXISTS ${inc}/internal/pycore_runtime.h)
    string(APPEND PYF_FT_MISSING "${inc} ")
    continue()
  endif()
  set(flavours default t)
  if(minor LESS 13)
    set(flavours default) # no free-threaded build before 3.13
  endif()
  foreach(flavour IN LISTS flavours)
    set(def "")
    if(flavour STREQUAL "t")
      set(def -DPy_GIL_DISABLED=1)
    else()
      set(flavour "")
    endif()
    set(exe ${PYF_FT_DIR}/emit_layout_3${minor}${flavour})
    set(out ${PYF_FT_DIR}/layout_3${minor}${flavour}.inc)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_C_COMPILER} -O1 -w -DNDEBUG ${def} -no-pie
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
