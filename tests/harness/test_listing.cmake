# Shared by the checks of the test definitions (check_skip_codes.cmake,
# check_unit_labels.cmake): CTest's own listing of the build's tests.

# lbk_test_listing(LABEL JSON_VAR COUNT_VAR): `ctest --show-only=json-v1 -L
# LABEL` into JSON_VAR and its test count into COUNT_VAR; an empty listing
# stops the check, which would prove nothing.
function(lbk_test_listing label json_var count_var)
  execute_process(COMMAND ${CTEST} --show-only=json-v1 -L ${label}
                  OUTPUT_VARIABLE json RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ctest --show-only failed (${rc})")
  endif()
  string(JSON count LENGTH "${json}" tests)
  if(count EQUAL 0)
    message(FATAL_ERROR "no test is labelled ${label}: the check would prove nothing")
  endif()
  set(${json_var} "${json}" PARENT_SCOPE)
  set(${count_var} ${count} PARENT_SCOPE)
endfunction()

# lbk_test_property(JSON I PROPERTY OUT_VAR): test I's PROPERTY value as
# the listing writes it ("" where the test has none).
function(lbk_test_property json i property out_var)
  string(JSON props GET "${json}" tests ${i} properties)
  string(JSON nprops LENGTH "${props}")
  set(value "")
  math(EXPR plast "${nprops} - 1")
  foreach(j RANGE ${plast})
    string(JSON prop GET "${props}" ${j} name)
    if(prop STREQUAL property)
      string(JSON value GET "${props}" ${j} value)
    endif()
  endforeach()
  set(${out_var} "${value}" PARENT_SCOPE)
endfunction()
