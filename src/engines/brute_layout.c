#include "brute_layout.h"

#include <string.h>

/* Writes run in address order; the reads stride over a block's rows. The
 * blocks wholly past n (padding can add several: rows are rounded up to
 * lanes x register-block vectors) are only zeroed: no row pointer is ever
 * formed beyond the caller's array. */
void lbk_brute_layout_blocked(const float *rows, size_t n, size_t dim, size_t lanes,
                              size_t padded_rows, float *dst)
{
    const size_t blocks = padded_rows / lanes, filled = (n + lanes - 1) / lanes;
    for (size_t b = 0; b < filled; b++) {
        const float *block = rows + b * lanes * dim;
        const size_t real = n - b * lanes < lanes ? n - b * lanes : lanes;
        float *out = dst + b * dim * lanes;
        for (size_t j = 0; j < dim; j++, out += lanes) {
            size_t l = 0;
            for (; l < real; l++)
                out[l] = block[l * dim + j];
            for (; l < lanes; l++)
                out[l] = 0.0f;
        }
    }
    if (blocks > filled)
        memset(dst + filled * dim * lanes, 0, (blocks - filled) * dim * lanes * sizeof *dst);
}
