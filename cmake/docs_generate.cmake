cmake_minimum_required(VERSION 3.20)
# cmake -DLBKNN=EXE -DVERSION=X.Y.Z -DMAN=lbknn.1 -DCOMPLETION=lbknn.bash
#       -DTEMPLATE=cmake/lbknn.bash.in -P docs_generate.cmake
# Run by the build after the executable is linked (cmake/docs.cmake): the
# man page lbknn(1) and the bash completion, both made from the program's
# own `--help` and `lbknn keys`, so that neither can list a command, an
# option, a job key or a value the program does not have, or miss one.
#
# The help's shape, which this reads (src/app/usage.c):
#   Usage: ...                          the synopsis
#   a paragraph                         the description
#   Commands:                           "  NAME ARGS" (continued by lines
#     ...                               indented 9+ and starting with '['),
#                                       each described by lines indented 8
#   Options:                            "  SPEC  description" (two spaces)
#   Name: text ...                      a section per "Name:" paragraph
foreach(var LBKNN VERSION MAN COMPLETION TEMPLATE)
  if(NOT ${var})
    message(FATAL_ERROR "docs_generate: pass -D${var}=...")
  endif()
endforeach()

# lbk_lines(VAR TEXT): TEXT as a list of lines; the characters a CMake list
# would take for its own (; [ ]) are kept as markers until written out.
function(lbk_lines var text)
  string(REPLACE ";" "@SC@" text "${text}")
  string(REPLACE "[" "@LB@" text "${text}")
  string(REPLACE "]" "@RB@" text "${text}")
  string(REGEX REPLACE "\n$" "" text "${text}")
  string(REPLACE "\n" ";" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()
function(lbk_unmark var text)
  string(REPLACE "@SC@" ";" text "${text}")
  string(REPLACE "@LB@" "[" text "${text}")
  string(REPLACE "@RB@" "]" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()
# lbk_roff(VAR TEXT): TEXT safe in roff: backslashes and hyphens escaped
# (\- is what a reader copies as the '-' of an option), and a line that
# would start with a control character guarded.
function(lbk_roff var text)
  lbk_unmark(text "${text}")
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "^([.'])" "\\\\&\\1" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

foreach(what help keys)
  if(what STREQUAL "help")
    set(args --help)
  else()
    set(args keys)
  endif()
  execute_process(COMMAND ${LBKNN} ${args} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0 OR out STREQUAL "")
    message(FATAL_ERROR "docs_generate: ${LBKNN} ${args} failed (${rc})")
  endif()
  lbk_lines(${what}_lines "${out}")
endforeach()

# --- Reading the help ------------------------------------------------------
set(part head)
set(synopsis "")
set(description "")
set(commands "")       # names in order; cmd_spec_<name>, cmd_text_<name>
set(options "")        # specs in order; opt_text_<i>
set(sections "")       # "Exit status", ...; sec_text_<i>
set(current "")
foreach(line IN LISTS help_lines)
  if(line MATCHES "^Usage: (.*)$")
    set(synopsis "${CMAKE_MATCH_1}")
    set(part description)
  elseif(line STREQUAL "Commands:")
    set(part commands)
  elseif(line STREQUAL "Options:")
    set(part options)
  elseif(line STREQUAL "")
    if(part STREQUAL "options")
      set(part sections)
    endif()
  elseif(part STREQUAL "description")
    string(APPEND description "${line}\n")
  elseif(part STREQUAL "commands")
    if(line MATCHES "^  ([a-z]+)( (.*))?$")
      set(current ${CMAKE_MATCH_1})
      list(APPEND commands ${current})
      set(cmd_spec_${current} "${CMAKE_MATCH_3}")
      set(cmd_text_${current} "")
    elseif(line MATCHES "^         +(@LB@.*)$")
      string(APPEND cmd_spec_${current} " ${CMAKE_MATCH_1}")
    elseif(line MATCHES "^        ([^ ].*)$")
      string(APPEND cmd_text_${current} "${CMAKE_MATCH_1}\n")
    else()
      message(FATAL_ERROR "docs_generate: a Commands line of unknown shape: '${line}'")
    endif()
  elseif(part STREQUAL "options")
    if(NOT line MATCHES "^  (-[^ ]*( [^ ]+)*)  +(.*)$")
      message(FATAL_ERROR "docs_generate: an Options line of unknown shape: '${line}'")
    endif()
    list(LENGTH options i)
    list(APPEND options "${CMAKE_MATCH_1}")
    set(opt_text_${i} "${CMAKE_MATCH_3}")
  elseif(part STREQUAL "sections")
    if(line MATCHES "^([A-Z][a-z]+( [a-z]+)?): (.*)$")
      list(LENGTH sections i)
      list(APPEND sections "${CMAKE_MATCH_1}")
      set(sec_text_${i} "${CMAKE_MATCH_3}\n")
    else()
      list(LENGTH sections n)
      math(EXPR i "${n} - 1")
      string(APPEND sec_text_${i} "${line}\n")
    endif()
  endif()
endforeach()
if(NOT commands OR NOT options OR NOT synopsis)
  message(FATAL_ERROR "docs_generate: read no synopsis, commands or options from --help")
endif()

# --- The man page ----------------------------------------------------------
string(REGEX REPLACE "\\.\n$" "" summary "${description}")
string(REPLACE "\n" " " summary "${summary}")
string(REGEX REPLACE "^Exact" "exact" summary "${summary}")
lbk_roff(summary "${summary}")
lbk_roff(version_roff "${VERSION}")
set(man ".\\\" Generated by cmake/docs_generate.cmake from `lbknn --help` and `lbknn keys`.
.TH LBKNN 1 \"\" \"lbknn ${version_roff}\" \"User Commands\"
.SH NAME
lbknn \\- ${summary}
.SH SYNOPSIS
")
foreach(name IN LISTS commands)
  lbk_roff(spec "${cmd_spec_${name}}")
  if(spec STREQUAL "")
    string(APPEND man ".B lbknn ${name}\n.br\n")
  else()
    string(APPEND man ".B lbknn ${name}\n${spec}\n.br\n")
  endif()
endforeach()
string(APPEND man ".B lbknn \\-\\-help\n.br\n.B lbknn \\-\\-version\n.SH DESCRIPTION\n")
lbk_roff(text "${description}")
string(APPEND man "${text}.SH COMMANDS\n")
foreach(name IN LISTS commands)
  lbk_roff(spec "${cmd_spec_${name}}")
  lbk_roff(text "${cmd_text_${name}}")
  if(spec STREQUAL "")
    string(APPEND man ".TP\n.B ${name}\n${text}")
  else()
    string(APPEND man ".TP\n.B ${name}\n.I ${spec}\n.br\n${text}")
  endif()
endforeach()
string(APPEND man ".SH OPTIONS\n")
set(i 0)
foreach(spec IN LISTS options)
  lbk_roff(spec "${spec}")
  lbk_roff(text "${opt_text_${i}}")
  string(APPEND man ".TP\n.B ${spec}\n${text}\n")
  math(EXPR i "${i} + 1")
endforeach()
# The keys' table goes under the help's own "Job keys" paragraph (or a
# section of that name at the end, should the help lose it).
set(keys_table ".PP\nWhat \\-\\-set KEY=VALUE and a job file take; an enumeration's values \
are joined by |.\n")
foreach(line IN LISTS keys_lines)
  if(line MATCHES "^([^ ]+) +([^ ]+)$")
    lbk_roff(key "${CMAKE_MATCH_1}")
    lbk_roff(values "${CMAKE_MATCH_2}")
    string(APPEND keys_table ".TP\n.B ${key}\n${values}\n")
  endif()
endforeach()
set(i 0)
foreach(title IN LISTS sections)
  string(TOUPPER "${title}" title)
  lbk_roff(text "${sec_text_${i}}")
  string(APPEND man ".SH ${title}\n${text}")
  if(title STREQUAL "JOB KEYS")
    string(APPEND man "${keys_table}")
    set(keys_table "")
  endif()
  math(EXPR i "${i} + 1")
endforeach()
if(keys_table)
  string(APPEND man ".SH JOB KEYS\n${keys_table}")
endif()
string(APPEND man ".SH FILES
.TP
.I share/lbknn/configs/README.md
every job key and what it does, under the installation prefix
.TP
.I share/lbknn/configs, share/lbknn/jobs
example jobs and SLURM batch scripts
.TP
.I $XDG_CACHE_HOME/lbknn \\fR(else \\fI~/.cache/lbknn\\fR)
tuned kernel parameters and built kernels
.SH SEE ALSO
.BR mpirun (1),
.BR srun (1);
the README and docs/ of lbknn's sources (installed under share/doc/lbknn).
.SH LICENSE
BSD 3\\-Clause; see share/doc/lbknn/LICENSE.
")
file(WRITE ${MAN}.new "${man}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${MAN}.new ${MAN})

# --- The completion --------------------------------------------------------
# Each command's options (from its spec line), which of them take an
# argument ("--points N") and which enumerate its values ("--type a|b|c").
set(LBK_COMMANDS "${commands}")
list(JOIN LBK_COMMANDS " " LBK_COMMANDS)
set(LBK_COMMAND_OPTIONS "")
set(LBK_OPTION_VALUES "")
set(LBK_ALL_OPTIONS "")
foreach(name IN LISTS commands)
  # The spec's words, brackets dropped: an option, then its argument if any.
  string(REGEX REPLACE "@LB@|@RB@" " " spec "${cmd_spec_${name}}")
  string(REGEX MATCHALL "[^ ]+" words "${spec}")
  set(opts "")
  set(opt "")
  foreach(word IN LISTS words)
    if(word MATCHES "^--?[A-Za-z][A-Za-z-]*$")
      set(opt ${word})
      list(APPEND opts ${opt})
      continue()
    endif()
    if(opt AND word MATCHES "^[a-z0-9_]+(\\|[a-z0-9_]+)+$")
      string(REPLACE "|" " " values "${word}")
      string(APPEND LBK_OPTION_VALUES "    ${name}:${opt}) echo '${values}' ;;\n")
    elseif(opt AND word MATCHES "^[A-Z]")
      string(APPEND LBK_OPTION_VALUES "    ${name}:${opt}) echo '' ;;\n")
    endif()
    set(opt "")
  endforeach()
  if("--quiet" IN_LIST opts)
    list(APPEND opts -q)
  endif()
  list(REMOVE_DUPLICATES opts)
  list(APPEND LBK_ALL_OPTIONS ${opts})
  list(JOIN opts " " opts)
  string(APPEND LBK_COMMAND_OPTIONS "    ${name}) echo '${opts}' ;;\n")
endforeach()
# Every option of the help, the commands' and the Options section's, for the
# test that checks each is here (the lists above hold them where they apply).
foreach(spec IN LISTS options)
  string(REGEX MATCHALL "--?[A-Za-z][A-Za-z-]*" found "${spec}")
  list(APPEND LBK_ALL_OPTIONS ${found})
endforeach()
list(REMOVE_DUPLICATES LBK_ALL_OPTIONS)
list(JOIN LBK_ALL_OPTIONS " " LBK_ALL_OPTIONS)
# The job keys; the values of those that enumerate them, and the paths.
set(LBK_KEYS "")
set(LBK_KEY_VALUES "")
set(LBK_PATH_KEYS "")
foreach(line IN LISTS keys_lines)
  if(line MATCHES "^([^ ]+) +([^ ]+)$")
    set(key ${CMAKE_MATCH_1})
    set(values ${CMAKE_MATCH_2})
    list(APPEND LBK_KEYS ${key})
    if(values STREQUAL "PATH")
      list(APPEND LBK_PATH_KEYS ${key})
    elseif(values MATCHES "^[a-z0-9_]+(\\|[a-z0-9_]+)+$")
      string(REPLACE "|" " " values "${values}")
      string(APPEND LBK_KEY_VALUES "    ${key}) echo '${values}' ;;\n")
    endif()
  endif()
endforeach()
list(JOIN LBK_KEYS " " LBK_KEYS)
list(JOIN LBK_PATH_KEYS " " LBK_PATH_KEYS)
configure_file(${TEMPLATE} ${COMPLETION}.new @ONLY)
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${COMPLETION}.new ${COMPLETION})
