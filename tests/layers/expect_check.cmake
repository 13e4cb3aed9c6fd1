# cmake -DCHECKER=<check_layers.cmake> -DROOT=<tree> [-DTABLE=<layer table>]
#       [-DEXPECT=<line> -DCOUNT=<n>] -P expect_check.cmake
# Runs the layer checker on one tree. Without EXPECT the checker must pass;
# with it, the checker must fail, print EXPECT (the violation's line after
# the tree's path: file, rule and chain) and count exactly COUNT violations.
set(table "")
if(TABLE)
  set(table -DTABLE=${TABLE})
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${ROOT} ${table} -P ${CHECKER}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT EXPECT)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expect_check: the checker refused a tree it should accept")
  endif()
  return()
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "expect_check: the checker accepted a tree it should refuse")
endif()
get_filename_component(root ${ROOT} REALPATH)
string(FIND "${out}" "${root}/${EXPECT}\n" at)
if(at EQUAL -1)
  message(FATAL_ERROR "expect_check: no line\n  ${root}/${EXPECT}")
endif()
if(NOT out MATCHES "check_layers: ${COUNT} layering violation")
  message(FATAL_ERROR "expect_check: expected ${COUNT} violation(s)")
endif()
