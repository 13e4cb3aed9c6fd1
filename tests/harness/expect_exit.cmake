# cmake [-DCODE=N] [-DENV=VAR=VALUE] [-DMATCH=REGEX...] [-DNOMATCH=REGEX]
#       -P expect_exit.cmake -- COMMAND [ARG...]
# Runs COMMAND: passes when it exits N (default 0) and its output (stdout and
# stderr together) matches every MATCH and not NOMATCH. For what CTest's own
# properties cannot say: an exact exit code such as 77 or 2, several
# patterns at once.
if(NOT DEFINED CODE)
  set(CODE 0)
endif()
set(command "")
set(seen_dashes FALSE)
foreach(i RANGE 1 ${CMAKE_ARGC})
  if(seen_dashes AND DEFINED CMAKE_ARGV${i})
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(seen_dashes TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "expect_exit.cmake: no command after --")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${ENV} ${command}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT "${rc}" STREQUAL "${CODE}")
  message(FATAL_ERROR "exit ${rc}, expected ${CODE}")
endif()
foreach(re IN LISTS MATCH)
  if(NOT out MATCHES "${re}")
    message(FATAL_ERROR "the output does not match '${re}'")
  endif()
endforeach()
if(DEFINED NOMATCH AND out MATCHES "${NOMATCH}")
  message(FATAL_ERROR "the output matches '${NOMATCH}'")
endif()
