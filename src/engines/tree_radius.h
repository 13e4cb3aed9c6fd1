/* Radius search on the k-d tree (engine.h, lbk_engine_radius_*): the tree
 * query's stack-free walk with a fixed bound per query instead of the K-th
 * key (kernels/tree_query.cl, tq_radius), counting or writing every point
 * whose key is at or below it. l2, l1 and linf. */
#ifndef LBK_TREE_RADIUS_H
#define LBK_TREE_RADIUS_H

#include "kdtree.h"
#include "status.h"
#include "tree_query.h"

#include <stdint.h>

/* The device memory one call may hold: `memory_budget` bytes (0: the
 * device's), less the tree; `window` (0: from the budget) caps the fill's
 * output entries on the device at once (tests make it small). */
typedef struct {
    lbk_metric metric;
    uint64_t memory_budget;
    uint64_t window;
} lbk_tree_radius_params;

/* Most queries per device batch (calls split larger sets themselves). */
uint64_t lbk_tree_radius_max_batch(const lbk_kdtree *tree, const lbk_tree_radius_params *p);

/* As lbk_engine_radius_count and lbk_engine_radius_fill; the fill's lists
 * come in the walk's order (the engine sorts them). `work` gets the walks'
 * counts added: the fill's, once per query with points. */
lbk_status lbk_tree_radius_count(lbk_kdtree *tree, const lbk_tree_radius_params *p,
                                 const float *queries, const float *bounds, uint64_t nq,
                                 uint64_t *counts, lbk_tree_query_work *work);
lbk_status lbk_tree_radius_fill(lbk_kdtree *tree, const lbk_tree_radius_params *p,
                                const float *queries, const float *bounds, uint64_t nq,
                                const uint64_t *offsets, float *keys, uint32_t *rows,
                                lbk_tree_query_work *work);

#endif
