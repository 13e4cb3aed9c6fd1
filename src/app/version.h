/* `lbknn --version` and the report's `build:` line: the same fields as
 * lbknn_build_info() (core/build_info.h), gathered from the layers that may
 * ask the OpenCL, MPI and HDF5 libraries. */
#ifndef LBK_VERSION_H
#define LBK_VERSION_H

#include <stdio.h>

/* "lbknn 0.2.0", then one "key: value" line per field after the version. */
void lbk_version_print(FILE *out);
/* `build: {commit: "...", build_type: "...", ...}` and a newline: YAML. */
void lbk_version_print_yaml(FILE *out);

#endif
