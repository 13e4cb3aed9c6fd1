#include "build_info.h"

/* From the build (src/CMakeLists.txt), on this file only, so that another
 * build type or compiler recompiles nothing else. */
#ifndef LBK_BUILD_TYPE
#define LBK_BUILD_TYPE "unknown"
#endif
#ifndef LBK_BUILD_COMPILER
#define LBK_BUILD_COMPILER "unknown"
#endif

void lbk_build_info_fields(const lbk_build_info_runtime *rt,
                           lbk_build_info_field out[LBK_BUILD_INFO_FIELDS])
{
    out[0] = (lbk_build_info_field){"version", LBK_VERSION};
    out[1] = (lbk_build_info_field){"commit", lbk_build_info_commit};
    out[2] = (lbk_build_info_field){"build_type", LBK_BUILD_TYPE};
    out[3] = (lbk_build_info_field){"compiler", LBK_BUILD_COMPILER};
    out[4] = (lbk_build_info_field){"opencl", rt->opencl};
    out[5] = (lbk_build_info_field){"mpi", rt->mpi};
    out[6] = (lbk_build_info_field){"hdf5", rt->hdf5};
}
