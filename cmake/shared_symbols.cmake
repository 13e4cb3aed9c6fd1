# lbk_export_api_only(TARGET): the shared library TARGET exports the names
# of lbknn.h (lbknn_*) and hides every other symbol it defines, through the
# version script cmake/lbknn.map. The layers' internal lbk_* functions are
# extern across the static layer libraries linked into it, so
# -fvisibility=hidden alone would hide the API too unless lbknn.h marked
# each declaration; a version script needs no change to the header or the
# layers. tests/install (install.soname) checks the result.
set(LBK_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/lbknn.map)
function(lbk_export_api_only target)
  target_link_options(${target} PRIVATE "LINKER:--version-script=${LBK_VERSION_SCRIPT}")
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${LBK_VERSION_SCRIPT})
endfunction()
