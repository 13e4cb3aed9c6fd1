#include "version.h"

#include "build_info.h"
#include "comm.h"
#include "dataset.h"
#include "device.h"
#include "job.h"

static void gather(lbk_build_info_runtime *rt, lbk_build_info_field fields[])
{
    lbk_device_runtime_versions(rt->opencl, sizeof rt->opencl);
    lbk_comm_library_version(rt->mpi, sizeof rt->mpi);
    lbk_hdf5_version(rt->hdf5, sizeof rt->hdf5);
    lbk_build_info_fields(rt, fields);
}

void lbk_version_print(FILE *out)
{
    lbk_build_info_runtime rt;
    lbk_build_info_field fields[LBK_BUILD_INFO_FIELDS];
    gather(&rt, fields);
    /* The first line as it always was: scripts read the version from it. */
    fprintf(out, "lbknn %s\n", fields[0].value);
    for (int i = 1; i < LBK_BUILD_INFO_FIELDS; i++)
        fprintf(out, "%s: %s\n", fields[i].name, fields[i].value);
}

void lbk_version_print_yaml(FILE *out)
{
    lbk_build_info_runtime rt;
    lbk_build_info_field fields[LBK_BUILD_INFO_FIELDS];
    gather(&rt, fields);
    /* The version has its own key (lbknn_version) above this line. */
    fputs("build: {", out);
    for (int i = 1; i < LBK_BUILD_INFO_FIELDS; i++) {
        fprintf(out, "%s%s: ", i > 1 ? ", " : "", fields[i].name);
        lbk_job_print_string(out, fields[i].value);
    }
    fputs("}\n", out);
}
