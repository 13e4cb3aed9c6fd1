# Included by the install scripts (install_python.cmake, install_modulefile.cmake)
# with LBK_PYTHON, LBK_PY_DIR and LBK_PY_SITE_SCRIPT set (install_python.cmake
# says what each is).
#
# lbk_python_site_dir(VAR PREFIX): the package's directory for PREFIX,
# absolute; empty when there is no interpreter to ask (then a warning).
function(lbk_python_site_dir var prefix)
  set(dir "${LBK_PY_DIR}")
  if(dir STREQUAL "")
    execute_process(COMMAND ${LBK_PYTHON} ${LBK_PY_SITE_SCRIPT} ${prefix}
                    OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0 OR dir STREQUAL "")
      message(WARNING "lbknn: ${LBK_PYTHON} cannot say where its packages go under ${prefix}; "
                      "the Python package lbknn is not installed (set LBKNN_PYTHON_INSTALL_DIR)")
      set(${var} "" PARENT_SCOPE)
      return()
    endif()
  endif()
  if(NOT IS_ABSOLUTE "${dir}")
    set(dir "${prefix}/${dir}")
  endif()
  set(${var} "${dir}" PARENT_SCOPE)
endfunction()

