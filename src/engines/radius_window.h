/* The radius fill's windows, shared by the brute and tree engines: the batch's
 * list offsets going up, and the (key, row) codes a kernel wrote
 * (lbk_radius_code in kernels/lbk_shared.h) coming back into the caller's key
 * and row arrays, through a host buffer of bounded size whatever the window. */
#ifndef LBK_RADIUS_WINDOW_H
#define LBK_RADIUS_WINDOW_H

#include "device_cl.h"
#include "enums.h"
#include "status.h"

#include <stdint.h>

/* Batch [first, first + count)'s list offsets, relative to its first list,
 * into `off` (count + 1 entries) and the device buffer `dst`; `*total` is the
 * batch's entry count. */
lbk_status lbk_radius_window_offsets(lbk_device *dev, cl_mem dst, const uint64_t *offsets,
                                     uint64_t first, uint64_t count, uint64_t *off,
                                     uint64_t *total);

/* The first `count` codes of `codes` as keys and rows. */
lbk_status lbk_radius_window_read(lbk_device *dev, cl_mem codes, uint64_t count,
                                  lbk_metric metric, float *keys, uint32_t *rows);

#endif
