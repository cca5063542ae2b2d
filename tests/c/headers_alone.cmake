# Every private header of the library compiles alone: a translation unit
# per header holds only `#include "x.h"` (twice: the include guard too),
# built with the project's warnings and -Werror.  A header that leans on
# what another file included before it fails here.  The test builds the
# target pyf_headers_alone, which is not part of the default build.
file(GLOB _pyf_private_headers RELATIVE ${PROJECT_SOURCE_DIR}/native/src
     ${PROJECT_SOURCE_DIR}/native/src/*.h)
set(_pyf_header_tus)
foreach(h ${_pyf_private_headers})
  string(REPLACE "." "_" stem ${h})
  set(tu ${CMAKE_CURRENT_BINARY_DIR}/headers_alone/${stem}.c)
  file(CONFIGURE OUTPUT ${tu}
       CONTENT "#include \"${h}\"\n#include \"${h}\"\n/* ISO C: not an empty unit */\ntypedef int pyf_header_alone_${stem};\n"
       @ONLY)
  list(APPEND _pyf_header_tus ${tu})
endforeach()
add_library(pyf_headers_alone OBJECT EXCLUDE_FROM_ALL ${_pyf_header_tus})
target_include_directories(pyf_headers_alone PRIVATE
  ${PROJECT_SOURCE_DIR}/native/src ${PROJECT_SOURCE_DIR}/native/include)
target_compile_definitions(pyf_headers_alone PRIVATE PYF_BUILDING_LIBRARY)
target_compile_options(pyf_headers_alone PRIVATE ${PYFRAMES_WARNINGS} -Werror)
add_test(NAME headers_alone
         COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target pyf_headers_alone)
set_tests_properties(headers_alone PROPERTIES LABELS c TIMEOUT 300)

# And every file of native/src includes the private headers whose names it
# uses, and no other (check_includes.py: an include left over, or a name
# that arrives only through another header).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME includes_used
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/check_includes.py
                   ${PROJECT_SOURCE_DIR}/native/src ${PROJECT_SOURCE_DIR}/native/include/pyframes.h)
  set_tests_properties(includes_used PROPERTIES LABELS c TIMEOUT 60)
endif()
