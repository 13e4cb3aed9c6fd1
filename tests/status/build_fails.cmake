cmake_minimum_required(VERSION 3.20)
# cmake -DCC=<compiler> -DSRC=<src dir> -DWORK=<scratch dir> -DCASE=<case> -P build_fails.cmake
# A copy of src/core and src/api with one change to the status list
# (src/core/status.h) or to lbknn.h, then the library's status file
# (api/lbknn_status.c), the status module (core/status.c) and Python's
# generator (src/python/status_constants.c) compiled against it, without
# -Werror: CASE "unchanged_list" must compile; every other case must fail, with
# the compiler saying what the case is about (MATCH), so that it fails for
# its own reason and not for a broken copy.
foreach(var CC SRC WORK CASE)
  if(NOT ${var})
    message(FATAL_ERROR "build_fails: pass -D${var}=...")
  endif()
endforeach()

# Each case: the file edited, the line the edit goes before, the line put
# there, what the compiler's error must say, and what else must fail beside
# api/lbknn_status.c.
set(must "")
set(anchor_public "    STATUS(LBK_OK,")
set(anchor_status "    STATUS(LBK_STOPPED,")
if(CASE STREQUAL "unchanged_list")
  set(file "")
elseif(CASE STREQUAL "status_without_public_code")
  set(file core/status.h)
  set(anchor ${anchor_status})
  set(line "    STATUS(LBK_ERR_EXTRA, \"extra\", 1) \\")
  set(match "argument")
  # The row breaks the list itself: everything that reads it stops.
  set(must core/status.c python/status_constants.c)
elseif(CASE STREQUAL "status_with_empty_public_code")
  set(file core/status.h)
  set(anchor ${anchor_status})
  set(line "    STATUS(LBK_ERR_EXTRA, \"extra\", 1, ) \\")
  set(match "expected expression")
elseif(CASE STREQUAL "public_code_not_in_lbknn_h")
  set(file core/status.h)
  set(anchor ${anchor_public})
  set(line "    PUBLIC(LBKNN_ERR_EXTRA, \"extra\") \\")
  set(match "LBKNN_ERR_EXTRA")
elseif(CASE STREQUAL "public_code_twice")
  set(file core/status.h)
  set(anchor ${anchor_public})
  set(line "    PUBLIC(LBKNN_ERR_IO, \"I/O error again\") \\")
  set(match "duplicate case")
elseif(CASE STREQUAL "lbknn_h_code_without_row")
  set(file api/lbknn.h)
  set(anchor "} lbknn_status;")
  set(line "    LBKNN_ERR_EXTRA = 10,")
  set(match "LBKNN_ERR_EXTRA")
else()
  message(FATAL_ERROR "build_fails: no case ${CASE}")
endif()

# The copy: core and api whole (their headers include each other by name,
# and a header found beside the file that includes it would bypass -I).
set(tree ${WORK}/${CASE})
file(REMOVE_RECURSE ${tree})
foreach(layer core api python)
  file(COPY ${SRC}/${layer}/ DESTINATION ${tree}/${layer} FILES_MATCHING PATTERN "*.[ch]")
endforeach()
if(file)
  file(READ ${tree}/${file} text)
  string(FIND "${text}" "${anchor}" at)
  if(at LESS 0)
    message(FATAL_ERROR "build_fails: no line '${anchor}' in ${SRC}/${file}")
  endif()
  string(REPLACE "${anchor}" "${line}\n${anchor}" text "${text}")
  file(WRITE ${tree}/${file} "${text}")
endif()

set(includes -I${tree}/core -I${tree}/api)
foreach(layer job io device engines comm index task)
  list(APPEND includes -I${SRC}/${layer})
endforeach()
set(failed "")
set(said "")
foreach(source api/lbknn_status.c core/status.c python/status_constants.c)
  execute_process(COMMAND ${CC} -std=c11 -Wall -Wextra -Wpedantic -D_POSIX_C_SOURCE=200809L
                          ${includes} -fsyntax-only ${tree}/${source}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message(STATUS "${source}: exit ${rc}\n${out}")
  if(NOT rc EQUAL 0)
    list(APPEND failed ${source})
    string(APPEND said "${out}")
  endif()
endforeach()

if(CASE STREQUAL "unchanged_list")
  if(failed)
    message(FATAL_ERROR "build_fails: the unchanged copy does not compile (${failed})")
  endif()
  message(STATUS "build_fails: the unchanged copy compiles")
  return()
endif()
# The library's mapping always among them: it is what a caller sees.
foreach(source api/lbknn_status.c ${must})
  if(NOT source IN_LIST failed)
    message(FATAL_ERROR "build_fails: ${CASE}: ${source} compiled")
  endif()
endforeach()
if(NOT said MATCHES "${match}")
  message(FATAL_ERROR "build_fails: ${CASE}: the errors do not say '${match}'")
endif()
message(STATUS "build_fails: ${CASE}: ${failed} did not compile, as they must not")
