/* The radius fill's window read back: the (key, row) codes a kernel wrote
 * (lbk_radius_code in kernels/lbk_shared.h) into the caller's key and row
 * arrays, through a host buffer of bounded size whatever the window. */
#ifndef LBK_RADIUS_WINDOW_H
#define LBK_RADIUS_WINDOW_H

#include "device_cl.h"
#include "enums.h"
#include "status.h"

#include <stdint.h>

/* The first `count` codes of `codes` as keys and rows. */
lbk_status lbk_radius_window_read(lbk_device *dev, cl_mem codes, uint64_t count,
                                  lbk_metric metric, float *keys, uint32_t *rows);

#endif
