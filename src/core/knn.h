/* Engine-neutral kNN types and the ordering rule that makes results exact.
 *
 * Every engine compares candidates by (key, id) where key is the metric's
 * monotone form computed in float with a fixed operation order (j ascending
 * from s = 0, every product rounded on its own: no FMA contraction):
 *   L2:     key = sum_j (q_j - r_j)^2
 *   L1:     key = sum_j |q_j - r_j|
 *   Linf:   key = max_j |q_j - r_j|
 *   IP:     key = -(sum_j q_j r_j): ascending keys are descending dot
 *           products; a sum that is not a number (products overflowing to
 *           both infinities) is key +inf, after every real dot product
 *   COSINE: IP's key on rows normalised once on the host (normalize.h)
 * The reported distance is lbk_knn_key_to_distance(key), computed once on the
 * host. Ordering by the key rather than the rounded distance keeps the order
 * identical for any sharding (two keys may round to the same sqrt, but never
 * swap). Zero keys of IP and COSINE are -0 (the sum never is), of the others
 * +0: within a metric they compare and print alike. */
#ifndef LBK_KNN_H
#define LBK_KNN_H

#include "bounds.h"
#include "enums.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* One neighbour candidate of a query; the unit of the MPI merge. Padding
 * slots (a shard with fewer than K points) are {+inf, -1, UINT64_MAX}. */
typedef struct {
    float key;
    int32_t label;
    uint64_t id; /* global reference row */
} lbk_knn_candidate;

/* Per-shard engine output: for nq queries, k slots each, sorted by
 * (key, local index); missing slots key = +inf, index = UINT32_MAX. */
typedef struct {
    uint64_t queries;
    int k;
    float *keys;     /* queries * k */
    uint32_t *index; /* queries * k, row within the shard */
} lbk_knn_result;

/* L2: the Euclidean distance; L1, Linf: the key; IP: the dot product;
 * COSINE: 1 - cos, clipped to [0, 2] as scikit-learn's cosine_distances
 * (normalised rows may give a cos a rounding above 1). */
static inline float lbk_knn_key_to_distance(lbk_metric metric, float key)
{
    switch (metric) {
    case LBK_METRIC_L2: return sqrtf(key);
    case LBK_METRIC_IP: return -key;
    case LBK_METRIC_COSINE: {
        const float d = 1.0f + key;
        return d < 0.0f ? 0.0f : d > 2.0f ? 2.0f : d;
    }
    default: return key;
    }
}

/* Metrics whose key is a negated similarity (no k-d tree, no 1/d weights
 * for IP). */
static inline bool lbk_knn_is_similarity(lbk_metric metric)
{
    return metric == LBK_METRIC_COSINE || metric == LBK_METRIC_IP;
}

/* (key, id) order: negative, 0 or positive. */
static inline int lbk_knn_candidate_cmp(const lbk_knn_candidate *a, const lbk_knn_candidate *b)
{
    if (a->key < b->key)
        return -1;
    if (a->key > b->key)
        return 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Merge two K-lists sorted by (key, id) into the K best (out may not alias
 * either input). Commutative and associative: the MPI merge relies on it. */
void lbk_knn_merge(const lbk_knn_candidate *a, const lbk_knn_candidate *b, lbk_knn_candidate *out,
                   int k);

/* The same merge written over b, with no buffer: the MPI operator's inout
 * list, whatever K (no K-list on the stack). The same bytes as
 * lbk_knn_merge(a, b, out, k). */
void lbk_knn_merge_into(const lbk_knn_candidate *a, lbk_knn_candidate *b, int k);

#endif
