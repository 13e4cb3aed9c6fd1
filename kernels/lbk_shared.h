/* Definitions shared by host C code and OpenCL C kernels. Prepended to every
 * kernel source at build time; included by host modules that launch kernels.
 * Keep it to plain scalar types that have the same layout on both sides. */
#ifndef LBK_SHARED_H
#define LBK_SHARED_H

#ifdef __OPENCL_C_VERSION__
/* Host and device must round identically: no fused multiply-adds. */
#pragma OPENCL FP_CONTRACT OFF
typedef uint lbk_u32;
typedef ulong lbk_u64;
typedef int lbk_i32;
#else
#include <stdint.h>
typedef uint32_t lbk_u32;
typedef uint64_t lbk_u64;
typedef int32_t lbk_i32;
#endif

/* Metric ids passed to kernels; equal to lbk_metric in config.h. */
#define LBK_KERNEL_METRIC_L2 0
#define LBK_KERNEL_METRIC_L1 1
#define LBK_KERNEL_METRIC_LINF 2

/* Missing candidate: key +inf, index all ones. */
#define LBK_NO_INDEX 0xffffffffu

#endif
