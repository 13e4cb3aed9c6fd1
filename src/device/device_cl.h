/* OpenCL-level access to an opened device, for the modules that launch
 * kernels (brute, kdtree, query). Keep OpenCL types out of everything else. */
#ifndef LBK_DEVICE_CL_H
#define LBK_DEVICE_CL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

/* From cl_ext.h (the ICD loader returns it when no platform is installed). */
#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

#include "device.h"

cl_context lbk_device_context(const lbk_device *dev);
cl_command_queue lbk_device_queue(const lbk_device *dev);
cl_device_id lbk_device_id(const lbk_device *dev);

/* Build (once per device, kernel file and options; later calls return the
 * cached program) the embedded kernel file `file` ("brute.cl"), with the
 * shared header lbk_shared.h prepended, -cl-std=CL1.2 and `options` (e.g.
 * "-DLBK_K=16"). On a build failure the build log is printed. The program is
 * owned by the device. */
lbk_status lbk_device_program(lbk_device *dev, const char *file, const char *options,
                              cl_program *out);

/* lbk_device_program, kept on disk between processes when the device has
 * a program cache (device.h: lbk_device_set_program_cache). Only for
 * programs whose every kernel a build launches: a kept binary holds all its
 * kernels compiled, so keeping brute.cl would compile its unused kernels
 * too (seconds, once per K). */
lbk_status lbk_device_program_kept(lbk_device *dev, const char *file, const char *options,
                                   cl_program *out);

/* The same for kernel source that is not embedded in the library (the
 * benchmarks' baselines): `name` labels it in messages and in the cache. */
lbk_status lbk_device_program_source(lbk_device *dev, const char *name, const char *source,
                                     const char *options, cl_program *out);

/* clCreateKernel with an error message naming the kernel. Caller releases. */
lbk_status lbk_device_kernel(cl_program program, const char *name, cl_kernel *out);

/* clCreateBuffer with a readable error (names `what` and the size). On a
 * CPU device (unless opened with runtime_buffers) a buffer of at least
 * LBK_ALLOC_LARGE_BYTES (of any size in guard mode) that the runtime would
 * allocate (no host pointer, or CL_MEM_COPY_HOST_PTR) is made over
 * lbk_alloc_large memory instead, freed with the buffer: huge pages, and
 * guard mode's fault past its end. */
lbk_status lbk_device_buffer(lbk_device *dev, cl_mem_flags flags, size_t bytes, void *host,
                             const char *what, cl_mem *out);

/* Logs "what: OpenCL error CL_XXX (-n)" and returns LBK_ERR_DEVICE when err
 * is not CL_SUCCESS; LBK_OK otherwise. */
lbk_status lbk_device_cl_check(cl_int err, const char *what);
const char *lbk_device_cl_error_name(cl_int err);

/* The largest work-group `kernel` runs with on `dev`
 * (CL_KERNEL_WORK_GROUP_SIZE; registers or local memory may make it smaller
 * than the device's); 0 when it cannot be read. */
size_t lbk_device_kernel_work_group_limit(const lbk_device *dev, cl_kernel kernel);

/* The kernel's function name, for messages ("?" if it cannot be read). */
void lbk_device_kernel_name(cl_kernel kernel, char *buf, size_t size);

/* One kernel argument: its size and the address of its value. */
typedef struct {
    size_t size;
    const void *value;
} lbk_device_kernel_arg;

/* The argument holding the value of the lvalue x (a variable, not an
 * expression: its address is taken). */
#define LBK_ARG(x) ((lbk_device_kernel_arg){sizeof(x), (const void *)&(x)})

/* Set every argument of a kernel, in order:
 *     LBK_KERNEL_ARGS(kernel, LBK_ARG(buffer), LBK_ARG(n));
 * The count is the length of the array the macro builds, and must equal the
 * kernel's own argument count. Errors name the kernel (read from the
 * cl_kernel) and the argument's index. */
#define LBK_KERNEL_ARGS(kernel, ...)                                                             \
    lbk_device_kernel_set_args((kernel), (const lbk_device_kernel_arg[]){__VA_ARGS__},           \
                               sizeof((const lbk_device_kernel_arg[]){__VA_ARGS__}) /            \
                                   sizeof(lbk_device_kernel_arg))
lbk_status lbk_device_kernel_set_args(cl_kernel kernel, const lbk_device_kernel_arg *args,
                                      size_t count);

/* Round `n` up to a multiple of `m`. */
static inline size_t lbk_device_round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

#endif
