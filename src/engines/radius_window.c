#include "radius_window.h"

#include "lbk_shared.h"
#include "log.h"
#include "try.h"

#include <stdlib.h>

/* Codes read per piece: 8 MiB of host memory, whatever the window. */
#define WINDOW_PIECE ((uint64_t)1 << 20)

lbk_status lbk_radius_window_offsets(lbk_device *dev, cl_mem dst, const uint64_t *offsets,
                                     uint64_t first, uint64_t count, uint64_t *off,
                                     uint64_t *total)
{
    for (uint64_t q = 0; q <= count; q++)
        off[q] = offsets[first + q] - offsets[first];
    *total = off[count];
    return lbk_device_cl_check(clEnqueueWriteBuffer(lbk_device_queue(dev), dst, CL_TRUE, 0,
                                                    (size_t)((count + 1) * 8), off, 0, NULL,
                                                    NULL),
                               "uploading radius offsets");
}

lbk_status lbk_radius_window_read(lbk_device *dev, cl_mem codes, uint64_t count,
                                  lbk_metric metric, float *keys, uint32_t *rows)
{
    const uint64_t piece = count < WINDOW_PIECE ? count : WINDOW_PIECE;
    uint64_t *host = malloc((size_t)(piece ? piece : 1) * sizeof *host);
    LBK_FAIL_IF(!host, LBK_ERR_NOMEM, "out of host memory reading the radius window");
    lbk_status st = LBK_OK;
    for (uint64_t p = 0; st == LBK_OK && p < count; p += piece) {
        const uint64_t m = count - p < piece ? count - p : piece;
        st = lbk_device_cl_check(clEnqueueReadBuffer(lbk_device_queue(dev), codes, CL_TRUE,
                                                     (size_t)(p * 8), (size_t)(m * 8), host, 0,
                                                     NULL, NULL),
                                 "reading the radius window");
        for (uint64_t i = 0; st == LBK_OK && i < m; i++) {
            keys[p + i] = lbk_radius_code_key(host[i], (int)metric);
            rows[p + i] = (uint32_t)host[i];
        }
    }
    free(host);
    return st;
}
