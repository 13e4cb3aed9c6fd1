# What `cmake --install` puts in place (included from the top-level
# CMakeLists.txt, after src/ defined its targets):
#
#   bin/lbknn                                  the command line
#   share/lbknn/{configs,jobs}                 example jobs, SLURM scripts
#   LIBDIR/liblbknn.so.X.Y.Z, .so.X, .so       the library (SONAME liblbknn.so.X)
#   INCLUDEDIR/lbknn.h                         its one header
#   LIBDIR/pkgconfig/lbknn.pc                  pkg-config lbknn
#   LIBDIR/cmake/lbknn/lbknnConfig*.cmake,     find_package(lbknn), the imported
#     lbknnTargets*.cmake                      target lbknn::lbknn
#   share/doc/lbknn/                           LICENSE, README, CHANGELOG, CITATION,
#                                              docs/ (the pages the README links)
#   share/man/man1/lbknn.1                     the man page     (cmake/docs.cmake)
#   share/bash-completion/completions/lbknn    bash completion  (cmake/docs.cmake)
#   share/lbknn/modulefiles/lbknn/VERSION      Environment Modules / Lmod modulefile
#   PYTHON_SITE/lbknn                          the Python package (src/python)
#
# Both the .pc file and the CMake files find the prefix from where they lie,
# so a tree installed with --prefix at install time, or staged with DESTDIR
# and moved, is right wherever it ends up.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS lbknn RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/lbknn/configs)
install(DIRECTORY jobs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/lbknn/jobs USE_SOURCE_PERMISSIONS)
install(FILES LICENSE README.md CHANGELOG.md CITATION.cff DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs FILES_MATCHING PATTERN "*.md")
include(${CMAKE_CURRENT_LIST_DIR}/docs.cmake)

set(LBK_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lbknn)

# Consumers say lbknn::lbknn, not the build's own name for the target.
set_target_properties(lbknn_shared PROPERTIES EXPORT_NAME lbknn)
install(TARGETS lbknn_shared EXPORT lbknnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        PUBLIC_HEADER DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT lbknnTargets NAMESPACE lbknn:: FILE lbknnTargets.cmake
        DESTINATION ${LBK_CMAKE_PACKAGE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/lbknnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/lbknnConfig.cmake INSTALL_DESTINATION ${LBK_CMAKE_PACKAGE_DIR}
  NO_SET_AND_CHECK_MACRO)
# The SONAME changes with the major version only (lbknn.h), so any 0.x.y
# asked for is met by any 0.x'.y' at least as new.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lbknnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lbknnConfig.cmake ${PROJECT_BINARY_DIR}/lbknnConfigVersion.cmake
        DESTINATION ${LBK_CMAKE_PACKAGE_DIR})

# lbknn.pc: the prefix relative to the file (${pcfiledir}), unless LIBDIR
# was given as an absolute path, which pins the file's place anyway.
# Libs.private lists what liblbknn.so itself links, for a static link only;
# not Requires.private, since pkg-config then wants every one of those .pc
# files present (and their -I flags) even for `--cflags`, while a program
# built against the shared library needs nothing but -llbknn.
function(lbk_pc_dir var dir)
  if(IS_ABSOLUTE "${dir}")
    set(${var} "${dir}" PARENT_SCOPE)
  else()
    set(${var} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(LBK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH LBK_PC_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
  string(REGEX REPLACE "/$" "" LBK_PC_PREFIX "\${pcfiledir}/${LBK_PC_PREFIX}")
endif()
lbk_pc_dir(LBK_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
lbk_pc_dir(LBK_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
# MPI's own link line, as FindMPI found it (Open MPI: -lmpi and its
# directory), then the libraries that have plain names.
set(LBK_PC_LIBS_PRIVATE "")
foreach(lib IN LISTS MPI_C_LIBRARIES OpenCL_LIBRARIES)
  if(lib MATCHES "^(.*)/lib([^/]+)\\.so$")
    list(APPEND LBK_PC_LIBS_PRIVATE "-L${CMAKE_MATCH_1}" "-l${CMAKE_MATCH_2}")
  elseif(lib MATCHES "^-")
    list(APPEND LBK_PC_LIBS_PRIVATE "${lib}")
  endif()
endforeach()
list(APPEND LBK_PC_LIBS_PRIVATE ${YAML_LDFLAGS} ${DEFLATE_LDFLAGS} ${HDF5_LDFLAGS} -lz -lm
     ${CMAKE_THREAD_LIBS_INIT})
list(REMOVE_DUPLICATES LBK_PC_LIBS_PRIVATE)
list(REMOVE_ITEM LBK_PC_LIBS_PRIVATE -L/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} -L/usr/lib)
list(JOIN LBK_PC_LIBS_PRIVATE " " LBK_PC_LIBS_PRIVATE)
configure_file(${CMAKE_CURRENT_LIST_DIR}/lbknn.pc.in ${PROJECT_BINARY_DIR}/lbknn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/lbknn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The modulefile, written at install time with the Python package's place
# for the prefix installed to (cmake/install_modulefile.cmake).
install(CODE "
  set(LBK_MOD_TEMPLATE \"${CMAKE_CURRENT_LIST_DIR}/lbknn.modulefile.in\")
  set(LBK_MOD_OUT \"${PROJECT_BINARY_DIR}/modulefile/${PROJECT_VERSION}\")
  set(LBK_MOD_VERSION \"${PROJECT_VERSION}\")
  set(LBK_MOD_DATADIR \"${CMAKE_INSTALL_DATADIR}\")
  set(LBK_MOD_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(LBK_MOD_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(LBK_MOD_MANDIR \"${CMAKE_INSTALL_MANDIR}\")
  set(LBK_PYTHON \"${LBK_PYTHON}\")
  set(LBK_PY_DIR \"${LBKNN_PYTHON_INSTALL_DIR}\")
  set(LBK_PY_SITE_SCRIPT \"${PROJECT_SOURCE_DIR}/cmake/python_site_dir.py\")
  include(\"${CMAKE_CURRENT_LIST_DIR}/install_modulefile.cmake\")
")
