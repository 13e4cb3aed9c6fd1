/* OpenCL device selection and program building. The public interface has no
 * OpenCL types; engines that launch kernels include device_cl.h. */
#ifndef LBK_DEVICE_H
#define LBK_DEVICE_H

#include "enums.h"
#include "status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct lbk_device lbk_device;

typedef struct {
    lbk_device_type type;
    int local_rank;  /* node-local rank: picks device local_rank % count */
    const int *list; /* explicit device indices (into the matching list), or NULL */
    int list_len;
    /* Buffers the runtime's own even on a CPU device, never over host
     * memory (lbk_device_buffer): Oclgrind's checker does not see the
     * contents of a buffer over host memory as written. */
    bool runtime_buffers;
    /* A CPU device's compute units (its worker threads): 0 = all of them,
     * n > 0 = min(n, all), n < 0 = all + 1 + n, at least 1 (joblib's
     * n_jobs rule). Fewer than all opens a sub-device of that many. Other
     * devices ignore it. */
    int threads;
} lbk_device_request;

/* Pick and open a device: GPUs first for LBK_DEVICE_GPU/ANY (ANY falls back to
 * any type; GPU falls back to nothing and fails). With no usable platform,
 * says how to install PoCL. */
lbk_status lbk_device_open(const lbk_device_request *req, lbk_device **out);
void lbk_device_close(lbk_device *dev);

/* "NVIDIA H200 (NVIDIA CUDA, OpenCL 3.0)" */
const char *lbk_device_description(const lbk_device *dev);
/* index among the devices matching the request type, as `lbknn devices` lists them */
int lbk_device_index(const lbk_device *dev);
/* "<description> [index i, node rank r]": which device a rank runs on, as
 * the summary, the report and the library name it; a CPU device limited by
 * lbk_device_request.threads adds ", n compute units". */
void lbk_device_label(const lbk_device *dev, int node_rank, char *buf, size_t size);
bool lbk_device_is_gpu(const lbk_device *dev);
/* CL_DEVICE_TYPE_CPU: its buffers are host memory, and one made over the
 * caller's memory (CL_MEM_USE_HOST_PTR) is used in place. */
bool lbk_device_is_cpu(const lbk_device *dev);
/* Global memory and the largest buffer; under an address-space limit at
 * most half of what the process has left once the device is open and the
 * runtime's reserve (compiling kernels) is set aside (then
 * lbk_device_memory_capped; too little left fails lbk_device_open). */
uint64_t lbk_device_global_mem(const lbk_device *dev);
uint64_t lbk_device_max_alloc(const lbk_device *dev);
bool lbk_device_memory_capped(const lbk_device *dev);
/* What to do when a memory budget is too small, for the engines' messages:
 * "raise device.memory_mb", or the address-space limit when that is what
 * set the device's memory. */
const char *lbk_device_memory_hint(const lbk_device *dev);
uint64_t lbk_device_local_mem(const lbk_device *dev);
int lbk_device_compute_units(const lbk_device *dev);
size_t lbk_device_max_work_group(const lbk_device *dev);
/* CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT (PoCL reports the host CPU's, even
 * when it compiles for a narrower variant: see src/engines/tuning.c). */
int lbk_device_native_float_width(const lbk_device *dev);
/* CL_DEVICE_NAME, CL_DRIVER_VERSION and CL_DEVICE_VERSION as reported
 * (PoCL: "pthread-haswell-AMD EPYC ...", "3.1+debian", "OpenCL 3.0 PoCL HSTR:
 * pthread-x86_64-pc-linux-gnu-haswell"); they key the tuning cache. */
const char *lbk_device_name(const lbk_device *dev);
const char *lbk_device_driver(const lbk_device *dev);
const char *lbk_device_version(const lbk_device *dev);

/* Keep built programs in `dir` (created when missing) and build from them
 * in later processes: PoCL compiles from source in every process, 30-50 ms
 * a program (program_cache.h). NULL or "" = no such cache (the default). */
void lbk_device_set_program_cache(lbk_device *dev, const char *dir);

/* Kernel compiler warnings: off by default (built with -w, so none reach
 * the terminal); on, each build's log is shown as a warning. main.c turns
 * it on from the environment (LBKNN_KERNEL_WARNINGS=1). */
void lbk_device_show_compiler_warnings(bool show);

/* The OpenCL ICD loader and every platform this process finds, as one line
 * ("loader OpenCL ICD Loader 2.3.1 (OpenCL 3.0); Portable Computing
 * Language: OpenCL 3.0 PoCL 3.1+debian ..."), for --version. */
void lbk_device_runtime_versions(char *buf, size_t size);

/* Print every platform and device and which one a request would pick. */
lbk_status lbk_device_list(FILE *out, const lbk_device_request *req);

#endif
