/* Whether an OpenCL device exists, asked of the ICD loader directly rather
 * than through src/device: a test must not skip because of the code it
 * tests. */
#include "lbk_test.h"

#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int lbk_test_opencl_found_type(lbk_test_device_type type, char *why, size_t n)
{
    static const struct {
        cl_device_type cl;
        const char *name;
    } types[] = {{CL_DEVICE_TYPE_ALL, "OpenCL"},
                 {CL_DEVICE_TYPE_CPU, "OpenCL CPU"},
                 {CL_DEVICE_TYPE_GPU, "OpenCL GPU"}};
    const unsigned t = (unsigned)type < 3 ? (unsigned)type : 0;
    cl_platform_id platforms[16];
    cl_uint count = 0;
    cl_int err = clGetPlatformIDs(16, platforms, &count);
    if (err != CL_SUCCESS || count == 0) {
        snprintf(why, n, "no OpenCL platform (clGetPlatformIDs: %d, %u platforms)", (int)err,
                 (unsigned)count);
        return 0;
    }
    if (count > 16)
        count = 16;
    for (cl_uint i = 0; i < count; i++) {
        cl_uint devices = 0;
        if (clGetDeviceIDs(platforms[i], types[t].cl, 0, NULL, &devices) == CL_SUCCESS &&
            devices > 0)
            return 1;
    }
    snprintf(why, n, "%u OpenCL platform(s), none with an %s device", (unsigned)count,
             types[t].name);
    return 0;
}

int lbk_test_opencl_found(char *why, size_t n)
{
    return lbk_test_opencl_found_type(LBK_TEST_DEVICE_ANY, why, n);
}

int lbk_test_opencl_required(void)
{
    const char *v = getenv("LBK_TEST_REQUIRE_OPENCL");
    return v && strcmp(v, "1") == 0;
}

void lbk_test_require_opencl(void)
{
    char why[160];
    if (lbk_test_opencl_found(why, sizeof why))
        return;
    if (lbk_test_opencl_required())
        lbk_test_fail("%s, " LBK_TEST_REQUIRE_OPENCL_HINT, why);
    lbk_test_skip("%s", why);
}
