cmake_minimum_required(VERSION 3.20)
# Run by the build for each program of lbk_test_cases (tests/CMakeLists.txt):
# fails unless `PROGRAM --list` prints exactly the case names CMake read
# from the program's C tables (EXPECTED, one a line), so that no case is
# left without its CTest test; then touches STAMP.
#   cmake -DPROGRAM=... -DEXPECTED=... -DSTAMP=... -P check_cases.cmake
execute_process(COMMAND ${PROGRAM} --list RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} --list failed (${rc}): ${err}")
endif()
string(REPLACE "\n" ";" listed "${out}")
list(REMOVE_ITEM listed "")
file(STRINGS ${EXPECTED} read)
set(missed ${listed})
set(extra ${read})
if(read)
  list(REMOVE_ITEM missed ${read})
endif()
if(listed)
  list(REMOVE_ITEM extra ${listed})
endif()
if(missed OR extra)
  get_filename_component(name ${PROGRAM} NAME)
  list(JOIN missed " " missed)
  list(JOIN extra " " extra)
  message(FATAL_ERROR
    "${name}: its case tables and its tests disagree.\n"
    "  cases --list prints that CMake did not read: ${missed}\n"
    "  names CMake read that --list does not print: ${extra}\n"
    "Every case table the program runs must be given to lbk_test_cases, its "
    "rows written {\"NAME\", ...} (tests/CMakeLists.txt).")
endif()
file(TOUCH ${STAMP})
