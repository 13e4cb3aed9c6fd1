/* A spatial (Morton, Z-order) order of points: points taken in it share the
 * tree nodes they touch with their neighbours in the order, in the same
 * work-group and in cache. Used for the queries of one batch (the tree
 * query) and for the order of a self search's batches (the index). The
 * order only affects speed, never a result. */
#ifndef LBK_MORTON_H
#define LBK_MORTON_H

#include "status.h"

#include <stdbool.h>
#include <stdint.h>

/* Code of each point: its first three coordinates, each quantised to 10
 * bits over the points' box (a billion cells, far finer than any batch
 * needs). NaN or out-of-range coordinates land at a valid cell. */
void lbk_morton_codes(const float *points, uint64_t n, int dim, uint32_t *codes);

/* order (0..n-1 where `identity`, else as it comes) sorted by code, ties
 * kept in order: stable radix passes of 10 bits up to the codes' highest
 * bit set (three at most), each from one array of the pair into the other
 * (codes is overwritten). Returns the array, order or order2, that holds
 * the order. */
const uint32_t *lbk_morton_radix_order(uint32_t *codes, uint32_t *codes2, uint32_t *order,
                                       uint32_t *order2, uint64_t n, bool identity);

/* The Morton order of n points (n < 2^32) into order[n], with its own
 * scratch of 12 bytes a point of the largest of the 1024 cells of the
 * codes' top 10 bits (a fraction of n but for clumped points). */
lbk_status lbk_morton_order(const float *points, uint64_t n, int dim, uint32_t *order);

#endif
