/* The OpenCL libraries this process runs with, for --version: the ICD
 * loader's own name and version (the cl_khr_icd loader-info extension,
 * which the Khronos loader and ocl-icd >= 2.3 answer; older ones do not) and
 * each installed platform's name and CL_PLATFORM_VERSION, which names its
 * driver ("OpenCL 3.0 PoCL 3.1+debian ..."). */
#include "device.h"
#include "device_cl.h"

#include <stdio.h>
#include <string.h>

/* From the loader-info extension (cl_ext.h has them only from 2021 on). */
#define ICDL_OCL_VERSION 1
#define ICDL_VERSION 2
#define ICDL_NAME 3
typedef cl_int (*loader_info_fn)(cl_uint name, size_t size, void *value, size_t *size_ret);

/* Appends to buf[*used..size), never past its end. */
static void append(char *buf, size_t size, size_t *used, const char *text)
{
    if (*used >= size)
        return;
    const int n = snprintf(buf + *used, size - *used, "%s", text);
    *used = n < 0 ? size : *used + (size_t)n;
}

static void loader(char *buf, size_t size, size_t *used)
{
    /* By name at run time: a loader without the extension gives NULL, where
     * calling it directly would not even link. The function is deprecated in
     * OpenCL 1.2 headers, but its _ForPlatform successor needs a platform,
     * which a loader-wide query does not have. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    void *address = clGetExtensionFunctionAddress("clGetICDLoaderInfoOCLICD");
#pragma GCC diagnostic pop
    loader_info_fn info;
    char name[128] = "", version[64] = "", ocl[64] = "";
    if (address) {
        /* ISO C has no conversion from an object pointer to a function
         * pointer; POSIX (dlsym) guarantees the representation is the same. */
        memcpy(&info, &address, sizeof info);
        if (info(ICDL_NAME, sizeof name - 1, name, NULL) != CL_SUCCESS ||
            info(ICDL_VERSION, sizeof version - 1, version, NULL) != CL_SUCCESS)
            name[0] = version[0] = '\0';
        if (info(ICDL_OCL_VERSION, sizeof ocl - 1, ocl, NULL) != CL_SUCCESS)
            ocl[0] = '\0';
    }
    char text[320];
    if (name[0])
        snprintf(text, sizeof text, "loader %s %s%s%s%s", name, version, ocl[0] ? " (" : "", ocl,
                 ocl[0] ? ")" : "");
    else
        snprintf(text, sizeof text, "loader unknown");
    append(buf, size, used, text);
}

void lbk_device_runtime_versions(char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    loader(buf, size, &used);
    cl_platform_id platforms[16];
    cl_uint count = 0;
    const cl_int err = clGetPlatformIDs(16, platforms, &count);
    if (err != CL_SUCCESS || count == 0) {
        append(buf, size, &used, "; no platform");
        return;
    }
    if (count > 16)
        count = 16;
    for (cl_uint i = 0; i < count; i++) {
        char name[128] = "", version[384] = "", text[560];
        if (clGetPlatformInfo(platforms[i], CL_PLATFORM_NAME, sizeof name - 1, name, NULL) !=
            CL_SUCCESS)
            snprintf(name, sizeof name, "platform %u", i);
        if (clGetPlatformInfo(platforms[i], CL_PLATFORM_VERSION, sizeof version - 1, version,
                              NULL) != CL_SUCCESS)
            snprintf(version, sizeof version, "version unknown");
        snprintf(text, sizeof text, "; %s: %s", name, version);
        append(buf, size, &used, text);
    }
}
