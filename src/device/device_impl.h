/* The device's state, shared by its files (device.c: choosing and opening
 * a device, its buffers and kernels; device_program.c: its programs);
 * private to src/device. */
#ifndef LBK_DEVICE_IMPL_H
#define LBK_DEVICE_IMPL_H

#include "device_cl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LBK_DEVICE_PROGRAMS_MAX 32

typedef struct {
    char file[64];
    char options[256];
    cl_program program;
} lbk_device_cached_program;

struct lbk_device {
    cl_platform_id platform;
    cl_device_id id;
    bool id_is_sub_device; /* released with the device (clReleaseDevice) */
    cl_context context;
    cl_command_queue queue;
    int index;
    bool is_gpu;
    bool is_cpu;
    bool backs_buffers; /* lbk_device_buffer's own memory: a CPU device, unless asked not to */
    uint64_t global_mem, max_alloc, local_mem;
    bool memory_capped; /* global_mem, max_alloc: cut to the address-space room */
    char memory_hint[160];
    int compute_units;
    size_t max_work_group;
    int native_float_width;
    char name[256], driver[128], version[128];
    char description[256 + 256 + 128 + 8];
    char program_cache[4096]; /* directory of built programs ("" = none) */
    lbk_device_cached_program programs[LBK_DEVICE_PROGRAMS_MAX];
    int program_count;
};

#endif
