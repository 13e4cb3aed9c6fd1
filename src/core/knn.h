/* Engine-neutral kNN types and the ordering rule that makes results exact.
 *
 * Every engine compares candidates by (key, id) where key is the metric's
 * monotone form computed in float with a fixed operation order:
 *   L2:   key = sum_j (q_j - r_j)^2      (j ascending, no FMA contraction)
 *   L1:   key = sum_j |q_j - r_j|
 *   Linf: key = max_j |q_j - r_j|
 * The reported distance is lbk_key_to_distance(key) (sqrt for L2), computed
 * once on the host. Ordering by the key rather than the rounded distance
 * keeps the order identical for any sharding (two keys may round to the same
 * sqrt, but never swap). */
#ifndef LBK_KNN_H
#define LBK_KNN_H

#include "bounds.h"
#include "enums.h"

#include <math.h>
#include <stdint.h>

/* One neighbour candidate of a query; the unit of the MPI merge. Padding
 * slots (a shard with fewer than K points) are {+inf, -1, UINT64_MAX}. */
typedef struct {
    float key;
    int32_t label;
    uint64_t id;         /* global reference row */
} lbk_candidate;

/* Per-shard engine output: for nq queries, k slots each, sorted by
 * (key, local index); missing slots key = +inf, index = UINT32_MAX. */
typedef struct {
    uint64_t queries;
    int k;
    float *keys;         /* queries * k */
    uint32_t *index;     /* queries * k, row within the shard */
} lbk_knn_result;

static inline float lbk_key_to_distance(lbk_metric metric, float key)
{
    return metric == LBK_METRIC_L2 ? sqrtf(key) : key;
}

/* (key, id) order: negative, 0 or positive. */
static inline int lbk_candidate_cmp(const lbk_candidate *a, const lbk_candidate *b)
{
    if (a->key < b->key) return -1;
    if (a->key > b->key) return 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Merge two K-lists sorted by (key, id) into the K best (out may not alias
 * either input). Commutative and associative: the MPI merge relies on it. */
void lbk_merge_lists(const lbk_candidate *a, const lbk_candidate *b, lbk_candidate *out, int k);

#endif
