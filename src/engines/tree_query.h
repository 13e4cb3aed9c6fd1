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

/* Results carry the original shard row (not the tree slot) in index. */
lbk_status lbk_tree_query(lbk_kdtree *tree, const float *queries, uint64_t nq, int k,
                          lbk_metric metric, lbk_knn_result *result);

/* The `auto` engine rule: true when the tree is expected to beat brute force
 * for this shape, from the crossover measured in bench/results/kdtree.md.
 * `why` (may be NULL) gets a static sentence saying which way and why. */
bool lbk_tree_query_is_preferred(int dim, uint64_t rows, int k, const char **why);

#endif
