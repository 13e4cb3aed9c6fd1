/* What this build is and what it runs with, for `lbknn --version`, the
 * report's header and lbknn_build_info(): what a bug report needs. The
 * build's part is fixed when it is compiled (the commit by
 * cmake/build_stamp.cmake, at every build); the libraries' part is asked of
 * the OpenCL, MPI and HDF5 libraries this process loaded, by the layers that
 * may call them, and passed in. */
#ifndef LBK_BUILD_INFO_H
#define LBK_BUILD_INFO_H

/* "96985a6f1c2e", "96985a6f1c2e-dirty", or "release" (not built from a git
 * work tree). */
extern const char lbk_build_info_commit[];

/* The run-time part, each a line of text. */
typedef struct {
    char opencl[640]; /* lbk_device_runtime_versions */
    char mpi[256];    /* lbk_comm_library_version */
    char hdf5[64];    /* lbk_hdf5_version */
} lbk_build_info_runtime;

typedef struct {
    const char *name, *value;
} lbk_build_info_field;

/* version, commit, build_type, compiler, opencl, mpi, hdf5: the names are
 * the keys of the report's `build:` and of Python's lbknn.build_info(). */
enum { LBK_BUILD_INFO_FIELDS = 7 };

/* The fields in that order; the last three point into *rt. */
void lbk_build_info_fields(const lbk_build_info_runtime *rt,
                           lbk_build_info_field out[LBK_BUILD_INFO_FIELDS]);

#endif
