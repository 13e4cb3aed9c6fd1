# cmake -DCTEST=ctest -DGATE=lbk_opencl_gate -DMPIEXEC=mpiexec
#       -P check_unit_labels.cmake, in the build tree: a test labelled unit
# needs no OpenCL device and launches no MPI job, so `ctest -L unit` runs
# anywhere. What the test definitions show is checked: no unit test runs
# behind the OpenCL gate (which exists for tests that need a device) or is
# started by mpirun. (A script that launches mpirun itself is not seen
# here: label it mpi where it is defined.)
include(${CMAKE_CURRENT_LIST_DIR}/test_listing.cmake)
lbk_test_listing(unit json count)
set(wrong "")
set(units 0)
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" tests ${i} name)
  # -L unit also lists the fixtures those tests need; only unit ones count.
  lbk_test_property("${json}" ${i} LABELS labels)
  set(is_unit FALSE)
  if(labels MATCHES "\"unit\"")
    set(is_unit TRUE)
  endif()
  if(NOT is_unit)
    continue()
  endif()
  math(EXPR units "${units} + 1")
  string(JSON first ERROR_VARIABLE none GET "${json}" tests ${i} command 0)
  if(first STREQUAL GATE)
    list(APPEND wrong "${name} (runs behind the OpenCL gate: label it ocl, or mpi)")
  elseif(first STREQUAL MPIEXEC)
    list(APPEND wrong "${name} (started by mpirun: label it mpi)")
  endif()
endforeach()
if(wrong)
  list(JOIN wrong "\n  " text)
  message(FATAL_ERROR "unit tests that need a device or an MPI launch:\n  ${text}")
endif()
message("${units} unit tests, none behind the OpenCL gate or started by mpirun")
