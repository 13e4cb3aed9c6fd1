# Run by `cmake --install` (src/python/CMakeLists.txt passes the variables
# below): installs the Python package lbknn where the target interpreter
# looks for packages under the prefix actually installed to, which is
# known only now (--prefix may differ from the configured one).
#
#   LBK_PYTHON           the interpreter (LBK_PYTHON, /usr/bin/python3)
#   LBK_PY_DIR           LBKNN_PYTHON_INSTALL_DIR: the directory, relative to
#                        the prefix or absolute; empty: ask LBK_PYTHON
#   LBK_PY_FILES         the package's files
#   LBK_PY_SITE_SCRIPT   cmake/python_site_dir.py
#   LBK_PY_LIBDIR        CMAKE_INSTALL_LIBDIR, where liblbknn.so.MAJOR goes
#   LBK_PY_PATHS         a scratch file in the build tree for _install_paths.py
#
# _install_paths.py records where the library is relative to the package, so
# that the package finds it however the two directories differ (Debian:
# /usr/lib/python3/dist-packages and /usr/lib/x86_64-linux-gnu); relative,
# so that a tree staged with DESTDIR and moved still finds it.
include(${CMAKE_CURRENT_LIST_DIR}/python_site.cmake)

if(LBK_PY_FILES)
  lbk_python_site_dir(lbk_py_site "${CMAKE_INSTALL_PREFIX}")
  if(lbk_py_site)
    set(libdir "${LBK_PY_LIBDIR}")
    if(NOT IS_ABSOLUTE "${libdir}")
      set(libdir "${CMAKE_INSTALL_PREFIX}/${libdir}")
    endif()
    file(RELATIVE_PATH rel "${lbk_py_site}/lbknn" "${libdir}")
    file(WRITE "${LBK_PY_PATHS}.new"
         "# Written by cmake --install (cmake/install_python.cmake): where the library\n"
         "# is, relative to this package's directory.\nLIBDIR = \"${rel}\"\n")
    # The same bytes as last time keep the file's date: a second install
    # then finds it up to date.
    execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${LBK_PY_PATHS}.new"
                            "${LBK_PY_PATHS}")
    file(INSTALL ${LBK_PY_FILES} "${LBK_PY_PATHS}" DESTINATION "${lbk_py_site}/lbknn")
  endif()
endif()
