# The man page and the bash completion, made at build time from the
# program's own --help and `lbknn keys` (cmake/docs_generate.cmake), and
# installed to share/man/man1/lbknn.1 and
# share/bash-completion/completions/lbknn. Included from install.cmake.
set(LBK_MAN ${PROJECT_BINARY_DIR}/lbknn.1)
set(LBK_COMPLETION ${PROJECT_BINARY_DIR}/lbknn.bash)
add_custom_command(OUTPUT ${LBK_MAN} ${LBK_COMPLETION}
  COMMAND ${CMAKE_COMMAND} -DLBKNN=$<TARGET_FILE:lbknn> -DVERSION=${PROJECT_VERSION}
          -DMAN=${LBK_MAN} -DCOMPLETION=${LBK_COMPLETION}
          -DTEMPLATE=${CMAKE_CURRENT_LIST_DIR}/lbknn.bash.in
          -P ${CMAKE_CURRENT_LIST_DIR}/docs_generate.cmake
  DEPENDS lbknn ${CMAKE_CURRENT_LIST_DIR}/docs_generate.cmake
          ${CMAKE_CURRENT_LIST_DIR}/lbknn.bash.in
  COMMENT "Writing lbknn.1 and the bash completion from lbknn --help"
  VERBATIM)
add_custom_target(lbknn_docs ALL DEPENDS ${LBK_MAN} ${LBK_COMPLETION})
install(FILES ${LBK_MAN} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${LBK_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME lbknn)
