# lbk_layer(NAME [EXCLUDE file...] [EXTRA_SOURCES file...])
# A static library lbk_NAME from src/NAME/*.c. Its headers are visible only to
# targets that link it, and it sees only the layers that cmake/layer_table.cmake
# lets it use.
include(${CMAKE_CURRENT_LIST_DIR}/layer_table.cmake)
get_filename_component(LBK_LAYER_ROOT ${CMAKE_CURRENT_LIST_DIR}/../src ABSOLUTE)

function(lbk_layer_flags target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  target_compile_definitions(${target} PRIVATE _POSIX_C_SOURCE=200809L
                             LBK_VERSION="${PROJECT_VERSION}")
endfunction()

function(lbk_layer name)
  cmake_parse_arguments(L "" "" "EXCLUDE;EXTRA_SOURCES" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${LBK_LAYER_ROOT}/${name}/*.c)
  foreach(skip IN LISTS L_EXCLUDE)
    list(REMOVE_ITEM sources ${LBK_LAYER_ROOT}/${name}/${skip})
  endforeach()
  add_library(lbk_${name} STATIC ${sources} ${L_EXTRA_SOURCES})
  lbk_layer_flags(lbk_${name})
  target_include_directories(lbk_${name} PRIVATE ${LBK_LAYER_ROOT}/${name})
  foreach(dep IN LISTS LBK_DEPS_${name})
    target_include_directories(lbk_${name} PRIVATE ${LBK_LAYER_ROOT}/${dep})
    target_link_libraries(lbk_${name} PRIVATE lbk_${dep})
  endforeach()
  add_dependencies(lbk_${name} lbk_check_layers)
endfunction()

# The include rules, checked before anything compiles (see check_layers.cmake).
add_custom_target(lbk_check_layers ALL
  COMMAND ${CMAKE_COMMAND} -DROOT=${LBK_LAYER_ROOT}
          -P ${CMAKE_CURRENT_LIST_DIR}/check_layers.cmake
  COMMENT "Checking the layer rules of src/"
  VERBATIM)

# lbk_use_layers(TARGET layer...): a test or benchmark links these layers and
# sees their headers (and the kernels' shared header with device/engines).
function(lbk_use_layers target)
  get_filename_component(root ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../src ABSOLUTE)
  foreach(layer IN LISTS ARGN)
    target_link_libraries(${target} PRIVATE lbk_${layer})
    target_include_directories(${target} PRIVATE ${root}/${layer})
    if(layer STREQUAL "device" OR layer STREQUAL "engines")
      target_include_directories(${target} PRIVATE ${root}/../kernels)
    endif()
  endforeach()
  target_compile_definitions(${target} PRIVATE _POSIX_C_SOURCE=200809L)
endfunction()
