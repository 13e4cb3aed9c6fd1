# The exceptions to the naming rule (docs/design.md, "Names"), read by
# cmake/check_names.cmake. The rule: a module's names start with lbk_<module>
# or, for macros, LBK_<MODULE>; the module is the base name of the .c file
# that defines the name (its header has the same name), and a file
# <module>_<part>.c or .h of an existing module <module> is part of it.
#
# lbk_names_except(MODULE-REGEX NAME-REGEX REASON): the modules matching
# MODULE-REGEX may also use the names matching NAME-REGEX (in lower case;
# \\1 stands for MODULE-REGEX's first group).

lbk_names_except("^enums$" "^lbk_(enum_|[a-z0-9_]+_(name|parse|items|list)$)"
  "Each job enumeration is its own module: lbk_<enum>_name, _parse and _items, generated
   from its list LBK_<ENUM>_LIST; lbk_enum_* (the prefix above) act on any of them.")

lbk_names_except("^log$" "^lbk_(error|warn|info)$"
  "The logging verbs, called at every place an error or warning is logged (over a
   hundred): lbk_error(\"...\") reads as what it does.")

lbk_names_except("^try$" "^lbk_fail_if$"
  "LBK_FAIL_IF beside LBK_TRY and LBK_TRY_GOTO: the error-flow verbs of every
   fallible function (almost two hundred uses).")

lbk_names_except("^device(_cl)?$" "^lbk_(arg|kernel_args)$"
  "LBK_KERNEL_ARGS(kernel, LBK_ARG(a), ...): the kernel-argument list of every kernel
   launch of the engines (about a hundred arguments); the function and type behind it
   follow the rule (lbk_device_kernel_set_args, lbk_device_kernel_arg).")

lbk_names_except("^bounds$" "^lbk_[a-z0-9_]+_max$"
  "bounds.h is the table of the project's limits, each LBK_<what>_MAX, kept in one
   header so that they are seen together.")

lbk_names_except("^format_io$" "^lbk_fmt_"
  "The format drivers' shared toolkit is lbk_fmt_: lbk_format_ is the format
   enumeration's (lbk_format_name), and the drivers call it on most lines.")

lbk_names_except("^format_([a-z0-9]+)(_none)?$" "^lbk_\\1_"
  "A format driver format_<fmt>.c is named by its format, as the job file names it:
   lbk_npy_read, lbk_idx_write_labels, LBK_NPY_... ; so is format_<fmt>_none.c, which
   stands in for it in a build without its library (LBKNN_WITH_HDF5=OFF).")

lbk_names_except("^lbknn(_index(_self|_radius_votes)?|_radius(_impl)?|_status|_impl|_typed)?$" "^(lbknn_|lbk_api_)"
  "The public C interface (src/api/lbknn.h) is lbknn_*: the names a caller's program
   links against (only those leave liblbknn.so, cmake/lbknn.map); lbk_api_begin and
   lbk_api_end frame every entry point of the api layer, with its lbk_api_call
   (lbknn_impl.h, the layer's private header; lbknn_radius_impl.h, the radius
   calls' shared checks and queries, is private too).")
