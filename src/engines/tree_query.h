/* Tree kNN: Wald's stack-free traversal (arXiv 2210.12859) of a left-balanced
 * k-d tree on the device, with a K-slot bubble list of packed (key, index)
 * 64-bit keys per query. */
#ifndef LBK_TREE_QUERY_H
#define LBK_TREE_QUERY_H

#include "kdtree.h"
#include "knn.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>

/* Largest query batch that fits the memory budget for this K. */
uint64_t lbk_tree_query_max_batch(const lbk_kdtree *tree, int k, uint64_t memory_budget);
/* Device bytes lbk_tree_query holds for a batch of this many queries. */
uint64_t lbk_tree_query_bytes(const lbk_kdtree *tree, int k, uint64_t queries);

/* The work of a tree query call, counted per query by the kernel
 * (LBK_TQ_WORK_* in lbk_shared.h) and summed here: the same for the same
 * tree and queries whatever the work-group size, thread count or batch. */
typedef struct {
    uint64_t nodes_visited;  /* nodes the walks entered from their parent, a bucket as one */
    uint64_t distance_evals; /* query-point keys computed */
} lbk_tree_query_work;

/* The buffers lbk_tree_query keeps with a tree (lbk_kdtree_destroy frees them). */
void lbk_tree_query_buffers_free(lbk_kdtree_query_buffers *buffers);

/* Results carry the original shard row (not the tree slot) in index.
 * `work` (may be NULL) gets this call's counts added. */
lbk_status lbk_tree_query(lbk_kdtree *tree, const float *queries, uint64_t nq, int k,
                          lbk_metric metric, lbk_knn_result *result, lbk_tree_query_work *work);
/* The same with a bound per query (`bounds[q]`, NULL: none): query q's list
 * holds only the rows whose key is <= bounds[q] (ties included), the rest of
 * it pads, and its walk prunes at the bound from the start. Where the K best
 * are known to be within the bound (the spatial partition's phase 2) the
 * list is the unbounded one cut at the bound. */
lbk_status lbk_tree_query_bounded(lbk_kdtree *tree, const float *queries, const float *bounds,
                                  uint64_t nq, int k, lbk_metric metric, lbk_knn_result *result,
                                  lbk_tree_query_work *work);
/* The same for queries that already come in spatial order (a self search's
 * points in Morton order): walked in the order given, not sorted again.
 * The answers are the same either way; only the time differs. */
lbk_status lbk_tree_query_in_order(lbk_kdtree *tree, const float *queries, const float *bounds,
                                   uint64_t nq, int k, lbk_metric metric, lbk_knn_result *result,
                                   lbk_tree_query_work *work);

/* The `auto` engine rule: true when the tree is expected to beat brute force
 * for this shape, from the crossover measured in bench/results/kdtree.md.
 * `why` (may be NULL) gets a static sentence saying which way and why. */
bool lbk_tree_query_is_preferred(int dim, uint64_t rows, int k, const char **why);

#endif
