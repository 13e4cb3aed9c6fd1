# Every library lbknn builds against, each found or not with one configure
# line that says which (and what to install when it is missing), so that a
# packager reads in one place what this build has. Included from the
# top-level CMakeLists.txt after the switches (LBKNN_WITH_HDF5).
#
# lbk_config_line(NAME TEXT...): "lbknn: NAME:       TEXT", aligned.
# lbk_found(NAME WHAT...): the line for a dependency that was found.
# lbk_missing(NAME WHY...): stop with the line for one that is required.
function(lbk_config_line name)
  string(JOIN " " text ${ARGN})
  string(SUBSTRING "${name}:            " 0 12 label)
  message(STATUS "lbknn: ${label}${text}")
endfunction()
function(lbk_found name)
  lbk_config_line(${name} found ${ARGN})
endfunction()
function(lbk_missing name)
  string(JOIN " " why ${ARGN})
  message(FATAL_ERROR "lbknn: ${name}: missing. ${why}")
endfunction()

# MPI_C_LIBRARY_VERSION_STRING, for the line below (FindMPI runs a program).
set(MPI_DETERMINE_LIBRARY_VERSION TRUE)
find_package(MPI COMPONENTS C QUIET)
if(MPI_C_FOUND)
  # The first part of the library's own version line (Open MPI's runs on
  # with its package and repository revision).
  string(REGEX REPLACE ",.*" "" lbk_mpi_what "${MPI_C_LIBRARY_VERSION_STRING}")
  if(lbk_mpi_what)
    string(APPEND lbk_mpi_what ", ")
  endif()
  lbk_found(MPI "${lbk_mpi_what}MPI ${MPI_C_VERSION} (${MPI_C_LIB_NAMES})")
else()
  lbk_missing(MPI "lbknn needs an MPI library with its C headers and compiler wrapper"
              "(Debian: apt-get install libopenmpi-dev openmpi-bin, or elsewhere MPI_HOME=DIR).")
endif()

find_package(OpenCL QUIET)
if(OpenCL_FOUND)
  lbk_found(OpenCL "headers ${OpenCL_VERSION_STRING}, ${OpenCL_LIBRARY}")
else()
  lbk_missing(OpenCL "lbknn needs the OpenCL headers and ICD loader"
              "(Debian: apt-get install ocl-icd-opencl-dev opencl-headers, and for a device at"
              "run time: pocl-opencl-icd or a GPU's driver).")
endif()

find_package(PkgConfig QUIET)
if(NOT PKG_CONFIG_FOUND)
  lbk_missing(pkg-config "lbknn finds libyaml, libdeflate and HDF5 with it"
              "(Debian: apt-get install pkg-config).")
endif()
pkg_check_modules(YAML QUIET IMPORTED_TARGET yaml-0.1)
if(YAML_FOUND)
  lbk_found(libyaml ${YAML_VERSION})
else()
  lbk_missing(libyaml "job files are YAML (Debian: apt-get install libyaml-dev).")
endif()

find_package(ZLIB QUIET)
if(ZLIB_FOUND)
  lbk_found(zlib ${ZLIB_VERSION_STRING})
else()
  lbk_missing(zlib "gzip'd IDX files and .npz graphs (Debian: apt-get install zlib1g-dev).")
endif()

pkg_check_modules(DEFLATE QUIET IMPORTED_TARGET libdeflate)
if(DEFLATE_FOUND)
  lbk_found(libdeflate ${DEFLATE_VERSION})
else()
  lbk_missing(libdeflate "whole-file gzip and CRC-32 (Debian: apt-get install libdeflate-dev).")
endif()

find_package(Threads REQUIRED)

# Serial HDF5 (ann-benchmarks files). Debian's libhdf5-dev names its
# pkg-config module hdf5-serial (hdf5 is the same, by alternatives); other
# systems call it hdf5.
if(LBKNN_WITH_HDF5)
  pkg_search_module(HDF5 QUIET IMPORTED_TARGET hdf5-serial hdf5)
  if(HDF5_FOUND)
    lbk_found(HDF5 "${HDF5_VERSION} (${HDF5_MODULE_NAME})")
  else()
    lbk_missing(HDF5 "serial HDF5 reads .hdf5/.h5 inputs (Debian: apt-get install"
                "libhdf5-dev), or configure with -DLBKNN_WITH_HDF5=OFF to build without it.")
  endif()
else()
  lbk_config_line(HDF5 "off (LBKNN_WITH_HDF5=OFF): .hdf5/.h5 files are refused")
endif()
