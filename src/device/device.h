/* OpenCL device selection and program building. The public interface has no
 * OpenCL types; engines that launch kernels include device_cl.h. */
#ifndef LBK_DEVICE_H
#define LBK_DEVICE_H

#include "enums.h"
#include "status.h"

#include <stdint.h>
#include <stdio.h>

typedef struct lbk_device lbk_device;

typedef struct {
    lbk_device_type type;
    int local_rank;          /* node-local rank: picks device local_rank % count */
    const int *list;         /* explicit device indices (into the matching list), or NULL */
    int list_len;
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
bool lbk_device_is_gpu(const lbk_device *dev);
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

/* Kernel compiler warnings: off by default (built with -w, so none reach
 * the terminal); on, each build's log is shown as a warning. main.c turns
 * it on from the environment (LBKNN_KERNEL_WARNINGS=1). */
void lbk_device_show_compiler_warnings(bool show);

/* Print every platform and device and which one a request would pick. */
lbk_status lbk_device_list(FILE *out, const lbk_device_request *req);

#endif
