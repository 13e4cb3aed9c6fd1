/* A spatial (Morton, Z-order) order of points: points taken in it share the
 * tree nodes they touch with their neighbours in the order, in the same
 * work-group and in cache. Used for the queries of one batch (the tree
 * query) and for the order of a self search's batches (the index). The
 * order only affects speed, never a result. */
#ifndef LBK_MORTON_H
#define LBK_MORTON_H

#include "status.h"

#include <stdint.h>

/* Code of each point: its first three coordinates, each quantised to 10
 * bits over the points' box (a billion cells, far finer than any batch
 * needs). NaN or out-of-range coordinates land at a valid cell. */
void lbk_morton_codes(const float *points, uint64_t n, int dim, uint32_t *codes);

/* 0..n-1 sorted by code, ties in index order: three stable radix passes of
 * 10 bits, each from one array of the pair into the other (codes is
 * overwritten). Returns the array, order or order2, that holds the order. */
const uint32_t *lbk_morton_radix_order(uint32_t *codes, uint32_t *codes2, uint32_t *order,
                                       uint32_t *order2, uint64_t n);

/* The Morton order of n points (n < 2^32) into order[n], with its own
 * scratch. */
lbk_status lbk_morton_order(const float *points, uint64_t n, int dim, uint32_t *order);

#endif
