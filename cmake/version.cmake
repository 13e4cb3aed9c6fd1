# The version lives in one place: the LBKNN_VERSION_MAJOR, _MINOR and _PATCH
# macros of the public header, the interface's own statement of it
# (docs/development.md, "Releases"). Read here before project(), so that the project, the SONAME,
# lbknn.pc, the CMake package, the Python package and `lbknn --version` all
# take it from there; the Python build backend reads the same lines.
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../src/api/lbknn.h lbk_version_lines
     REGEX "^#define LBKNN_VERSION_(MAJOR|MINOR|PATCH) [0-9]+$")
set(LBK_HEADER_VERSION "")
foreach(part MAJOR MINOR PATCH)
  set(number "")
  foreach(line IN LISTS lbk_version_lines)
    if(line MATCHES "^#define LBKNN_VERSION_${part} ([0-9]+)$")
      set(number ${CMAKE_MATCH_1})
    endif()
  endforeach()
  if(number STREQUAL "")
    message(FATAL_ERROR "src/api/lbknn.h: no '#define LBKNN_VERSION_${part} N' line")
  endif()
  list(APPEND LBK_HEADER_VERSION ${number})
endforeach()
list(JOIN LBK_HEADER_VERSION "." LBK_HEADER_VERSION)
