/* A search's ground truth (the job's query.neighbors and query.distances:
 * ann-benchmarks' HDF5 datasets `neighbors` and `distances`, one row per
 * query, K or more columns, the nearest first): how many queries found
 * exactly the file's first K ids, in order, and how many found its first K
 * distances. Ties can swap ids between equally near points, so the
 * distances are the measure of exactness. The file's distances (float64 or
 * float32) are rounded to the nearest float32 and compared with this run's
 * float32 distances as written, two ways:
 *   exact: equal as floats, every one of the K (what integer data such as
 *     Fashion-MNIST gives: every sum is exact in float32);
 *   equal: within the error of a float32 key (knn.h: a sum of D terms,
 *     each rounded): |ours - truth| <= (D + 4) * 2^-24 * s, s = |truth| for
 *     l2, l1, linf and ip (relative), 1 for cosine (its distance is 1 - cos
 *     of unit rows: absolute). An ip dot product that cancels can err more
 *     than that relative bound; its `equal` is then an undercount. */
#ifndef LBK_TRUTH_H
#define LBK_TRUTH_H

#include "job.h"
#include "knn.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    bool ids, distances;      /* which the job gives */
    uint64_t evaluated;       /* queries compared */
    uint64_t ids_equal;       /* of those, with the file's K ids */
    uint64_t distances_equal; /* of those, with the file's K distances, within the bound */
    uint64_t distances_exact; /* of those, with exactly the file's K distances (float32) */
} lbk_truth_counts;

/* Rank 0, before the search: each given dataset has the right kind, one
 * row per query and at least K columns. Errors name the file and dataset. */
lbk_status lbk_truth_check(const lbk_job *job, uint64_t queries);

/* Counts of a job without ground truth, or the start of one. */
void lbk_truth_init(const lbk_job *job, lbk_truth_counts *c);

/* Queries [first, first + count) and their final K-lists (count * K):
 * reads those rows of the truth (a hyperslab each) and adds to c. */
lbk_status lbk_truth_add(const lbk_job *job, int dim, uint64_t first, uint64_t count,
                         const lbk_knn_candidate *lists, lbk_truth_counts *c);

#endif
