/* The blocked distance kernel's layout of a shard (kernels/brute.cl,
 * lbk_brute_distance_blocked): blocks of `lanes` rows, each stored
 * dimension by dimension, [block][dim][lanes], padded with zero rows to a
 * whole number of register blocks. Kept apart from the engine so that its
 * edges can be tested without a device. */
#ifndef LBK_BRUTE_LAYOUT_H
#define LBK_BRUTE_LAYOUT_H

#include <stddef.h>

/* Writes `padded_rows` rows (padded_rows >= n, a multiple of lanes) of dim
 * values of `elem` bytes (4: float32, 2: float16, 1: uint8 and int8) at
 * dst: the n row-major rows at `rows`, then zeros (all bits zero: 0 in each
 * type). Reads nothing of `rows` beyond its n * dim values. */
void lbk_brute_layout_blocked(const void *rows, size_t n, size_t dim, size_t lanes,
                              size_t padded_rows, size_t elem, void *dst);

#endif
