#include "brute_layout.h"

#include <stdint.h>
#include <string.h>

/* One element type's copy: writes run in address order; the reads stride
 * over a block's rows. */
#define LAYOUT_BLOCKS(T)                                                                         \
    do {                                                                                         \
        const T *src = rows;                                                                     \
        for (size_t b = 0; b < filled; b++) {                                                    \
            const T *block = src + b * lanes * dim;                                              \
            const size_t real = n - b * lanes < lanes ? n - b * lanes : lanes;                   \
            T *out = (T *)dst + b * dim * lanes;                                                 \
            for (size_t j = 0; j < dim; j++, out += lanes) {                                     \
                size_t l = 0;                                                                    \
                for (; l < real; l++)                                                            \
                    out[l] = block[l * dim + j];                                                 \
                for (; l < lanes; l++)                                                           \
                    out[l] = 0;                                                                  \
            }                                                                                    \
        }                                                                                        \
    } while (0)

/* The blocks wholly past n (padding can add several: rows are rounded up
 * to lanes x register-block vectors) are only zeroed: no row pointer is
 * ever formed beyond the caller's array. */
void lbk_brute_layout_blocked(const void *rows, size_t n, size_t dim, size_t lanes,
                              size_t padded_rows, size_t elem, void *dst)
{
    const size_t blocks = padded_rows / lanes, filled = (n + lanes - 1) / lanes;
    if (elem == 1)
        LAYOUT_BLOCKS(uint8_t);
    else if (elem == 2)
        LAYOUT_BLOCKS(uint16_t);
    else
        LAYOUT_BLOCKS(uint32_t);
    if (blocks > filled)
        memset((unsigned char *)dst + filled * dim * lanes * elem, 0,
               (blocks - filled) * dim * lanes * elem);
}
