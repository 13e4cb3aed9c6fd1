# Run by `cmake --install` (cmake/install.cmake passes the variables below):
# the Environment Modules / Lmod modulefile lbknn/VERSION, installed as
# DATADIR/lbknn/modulefiles/lbknn/VERSION from cmake/lbknn.modulefile.in.
# Written now, not at build time, because the Python package's directory
# depends on the prefix installed to (cmake/python_site.cmake).
#
#   LBK_MOD_TEMPLATE   cmake/lbknn.modulefile.in
#   LBK_MOD_OUT        the file written in the build tree first
#   LBK_MOD_VERSION    PROJECT_VERSION
#   LBK_MOD_DATADIR, LBK_MOD_BINDIR, LBK_MOD_LIBDIR, LBK_MOD_MANDIR
#                      CMAKE_INSTALL_*DIR, relative to the prefix
#   and LBK_PYTHON, LBK_PY_DIR, LBK_PY_SITE_SCRIPT (python_site.cmake)
include(${CMAKE_CURRENT_LIST_DIR}/python_site.cmake)

set(LBK_MOD_DIR "${LBK_MOD_DATADIR}/lbknn/modulefiles")
foreach(dir LBK_MOD_DATADIR LBK_MOD_BINDIR LBK_MOD_LIBDIR LBK_MOD_MANDIR)
  if(IS_ABSOLUTE "${${dir}}")
    message(FATAL_ERROR "lbknn: the modulefile finds the prefix from its own place, so it "
                        "needs relative install directories, not ${dir}=${${dir}}")
  endif()
endforeach()
# From the modulefile's directory (DATADIR/lbknn/modulefiles/lbknn) up to the prefix.
file(RELATIVE_PATH LBK_MOD_UP "/prefix/${LBK_MOD_DIR}/lbknn" "/prefix")
set(LBK_MOD_PYTHON "")
lbk_python_site_dir(site "${CMAKE_INSTALL_PREFIX}")
if(site)
  file(RELATIVE_PATH rel "${CMAKE_INSTALL_PREFIX}" "${site}")
  if(NOT rel MATCHES "^\\.\\./")
    set(LBK_MOD_PYTHON "prepend-path PYTHONPATH        [file join $prefix ${rel}]")
  else()
    set(LBK_MOD_PYTHON "prepend-path PYTHONPATH        ${site}")
  endif()
endif()
# configure_file rewrites only what changed: a second install is up to date.
configure_file(${LBK_MOD_TEMPLATE} ${LBK_MOD_OUT} @ONLY)
file(INSTALL ${LBK_MOD_OUT} DESTINATION "${CMAKE_INSTALL_PREFIX}/${LBK_MOD_DIR}/lbknn")
