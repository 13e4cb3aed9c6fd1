cmake_minimum_required(VERSION 3.20)
# cmake -DROOT=<src dir> [-DTABLE=<layer table>] -P check_layers.cmake
# Fails when a file of src/ reaches, by #include directly or through a chain
# of project headers, a header its layer may not see (cmake/layer_table.cmake,
# or TABLE for a test tree):
#   - a header of a layer it may not use;
#   - a header another layer declares private (NAME_impl.h, or listed);
#   - a guarded header (OpenCL and NAME_cl.h, MPI, libyaml, zlib, libdeflate,
#     libhdf5, lbk_shared.h) outside the layers allowed it;
#   - from a header, a layer its layer's headers must not reach
#     (LBK_HEADERS_AVOID_<layer>), although its .c files may.
# Each violation is one line: the file, the rule, and the chain of includes
# that reaches the header (app/run.c -> engines/a.h -> CL/cl.h). A chain is
# not followed past its first violation.
if(NOT ROOT)
  message(FATAL_ERROR "check_layers: pass -DROOT=<src directory>")
endif()
get_filename_component(ROOT ${ROOT} REALPATH)
# The table of src/ unless a test tree brings its own.
get_filename_component(real_src ${CMAKE_CURRENT_LIST_DIR}/../src REALPATH)
set(own_table FALSE)
if(TABLE)
  set(own_table TRUE)
  get_filename_component(TABLE ${TABLE} REALPATH)
else()
  set(TABLE ${CMAKE_CURRENT_LIST_DIR}/layer_table.cmake)
endif()
include(${TABLE})
set(errors 0)

# One line, from pieces (so the source lines stay short).
macro(lbk_violation)
  string(CONCAT lbk_line ${ARGN})
  message(NOTICE "${lbk_line}")
  math(EXPR errors "${errors} + 1")
endmacro()

# The table itself: what a layer's headers reach, its users reach too.
foreach(layer IN LISTS LBK_LAYERS)
  foreach(dep IN LISTS LBK_DEPS_${layer})
    foreach(dd IN LISTS LBK_DEPS_${dep})
      if(NOT dd IN_LIST LBK_DEPS_${layer})
        lbk_violation("${TABLE}: layer '${layer}' uses '${dep}', which uses '${dd}', "
                      "but may not use '${dd}'")
      endif()
    endforeach()
  endforeach()
endforeach()

# Which layer owns each project header; names must be unique across layers,
# or an include would depend on the include path's order.
foreach(layer IN LISTS LBK_LAYERS)
  file(GLOB headers RELATIVE ${ROOT}/${layer} ${ROOT}/${layer}/*.h)
  foreach(h IN LISTS headers)
    if(DEFINED owner_${h})
      lbk_violation("${ROOT}/${layer}/${h}: header name also used in layer ${owner_${h}}")
    endif()
    set(owner_${h} ${layer})
  endforeach()
endforeach()

# The private lists name headers of the tree their table describes (not of
# the fixtures of tests/layers that borrow the real table): a listed name
# that is gone is an error.
if(ROOT STREQUAL real_src OR own_table)
  foreach(layer IN LISTS LBK_LAYERS)
    foreach(h IN LISTS LBK_PRIVATE_${layer})
      if(NOT owner_${h} STREQUAL layer)
        lbk_violation("${TABLE}: LBK_PRIVATE_${layer} lists ${h}, "
                      "which is not a header of layer '${layer}'")
      endif()
    endforeach()
  endforeach()
endif()

# The direct includes of every file, as written ("x.h" and <x.h> alike).
set(files "")
foreach(layer IN LISTS LBK_LAYERS)
  file(GLOB layer_files RELATIVE ${ROOT} ${ROOT}/${layer}/*.c ${ROOT}/${layer}/*.h)
  list(APPEND files ${layer_files})
endforeach()
foreach(file IN LISTS files)
  file(STRINGS ${ROOT}/${file} lines REGEX "^[ \t]*#[ \t]*include")
  set(incs_${file} "")
  foreach(line IN LISTS lines)
    if(line MATCHES "#[ \t]*include[ \t]*[<\"]([^>\"]+)[>\"]")
      list(APPEND incs_${file} ${CMAKE_MATCH_1})
    endif()
  endforeach()
endforeach()

# The rules a file of `layer` breaks by reaching header `inc`, into `out`;
# `is_header`: the file is a header.
function(lbk_broken_rules layer is_header inc out)
  set(why "")
  if(DEFINED owner_${inc})
    set(m ${owner_${inc}})
    if(NOT m STREQUAL layer)
      if(NOT m IN_LIST LBK_DEPS_${layer})
        list(APPEND why "layer '${layer}' may not use layer '${m}' (${inc})")
      elseif(is_header AND m IN_LIST LBK_HEADERS_AVOID_${layer})
        list(APPEND why "a header of layer '${layer}' may not reach layer '${m}' (${inc})")
      endif()
      if((LBK_PRIVATE_REGEX AND inc MATCHES "${LBK_PRIVATE_REGEX}") OR inc IN_LIST LBK_PRIVATE_${m})
        list(APPEND why "layer '${layer}' may not include ${inc} (private to layer '${m}')")
      endif()
    endif()
  endif()
  set(name "<${inc}>")
  if(DEFINED owner_${inc})
    set(name "${inc}")
  endif()
  foreach(g IN LISTS LBK_GUARDED)
    if(inc MATCHES "${LBK_GUARDED_REGEX_${g}}" AND NOT layer IN_LIST LBK_GUARDED_LAYERS_${g})
      string(JOIN ", " allowed ${LBK_GUARDED_LAYERS_${g}})
      list(APPEND why "layer '${layer}' may not include ${name} (only: ${allowed})")
    endif()
  endforeach()
  set(${out} "${why}" PARENT_SCOPE)
endfunction()

# The includes of FROM not met yet join the caller's queue, each remembering
# CHAIN, the way it was reached (a macro: queue and chain_* are the caller's).
macro(lbk_enqueue_includes from chain_so_far)
  foreach(next IN LISTS incs_${from})
    if(NOT DEFINED chain_${next})
      set(chain_${next} "${chain_so_far}")
      list(APPEND queue ${next})
    endif()
  endforeach()
endmacro()

# Breadth first over the headers `file` reaches, so each header is reported
# with its shortest chain. Outside headers are leaves; so are the headers of
# the file's own layer, which are checked as files of their own under the
# same rules: what one reaches is reported once, at the last file of the
# layer on the chain, whose include is the step to change. Returns the count.
function(lbk_check_file file out)
  string(REGEX REPLACE "/.*" "" layer ${file})
  set(is_header FALSE)
  if(file MATCHES "\\.h$")
    set(is_header TRUE)
  endif()
  set(count 0)
  set(queue "")
  lbk_enqueue_includes(${file} "${file}")
  while(NOT queue STREQUAL "")
    list(POP_FRONT queue inc)
    if(DEFINED owner_${inc})
      set(path ${owner_${inc}}/${inc})
    else()
      set(path ${inc})
    endif()
    set(chain "${chain_${inc}} -> ${path}")
    lbk_broken_rules(${layer} ${is_header} ${inc} why)
    foreach(rule IN LISTS why)
      message(NOTICE "${ROOT}/${file}: ${rule}: ${chain}")
      math(EXPR count "${count} + 1")
    endforeach()
    if(why OR NOT DEFINED owner_${inc} OR owner_${inc} STREQUAL layer)
      continue()
    endif()
    lbk_enqueue_includes(${path} "${chain}")
  endwhile()
  set(${out} ${count} PARENT_SCOPE)
endfunction()

foreach(file IN LISTS files)
  lbk_check_file(${file} count)
  math(EXPR errors "${errors} + ${count}")
endforeach()
if(errors GREATER 0)
  message(FATAL_ERROR "check_layers: ${errors} layering violation(s); see ${TABLE}")
endif()
