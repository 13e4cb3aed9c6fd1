/* Whether an OpenCL device exists, asked of the ICD loader directly rather
 * than through src/device: a test must not skip because of the code it
 * tests. */
#include "lbk_test.h"

#include <CL/cl.h>
#include <stdio.h>

int lbk_test_opencl_found(char *why, size_t n)
{
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
        if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 0, NULL, &devices) == CL_SUCCESS &&
            devices > 0)
            return 1;
    }
    snprintf(why, n, "%u OpenCL platform(s), none with a device", (unsigned)count);
    return 0;
}

void lbk_test_require_opencl(void)
{
    char why[160];
    if (!lbk_test_opencl_found(why, sizeof why))
        lbk_test_skip("%s", why);
}
