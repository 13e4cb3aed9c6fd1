#include "truth.h"

#include "alloc_large.h"
#include "dataset.h"
#include "log.h"
#include "try.h"

#include <inttypes.h>
#include <math.h>

static lbk_status check_one(const char *path, const char *name, bool distances, uint64_t queries,
                            int k)
{
    uint64_t rows = 0, cols = 0;
    LBK_TRY(lbk_hdf5_truth_probe(path, name, distances, &rows, &cols));
    LBK_FAIL_IF(rows != queries, LBK_ERR_INPUT,
                "%s: dataset '%s' has %" PRIu64 " rows, but there are %" PRIu64 " queries", path,
                name, rows, queries);
    LBK_FAIL_IF(cols < (uint64_t)k, LBK_ERR_INPUT,
                "%s: dataset '%s' holds %" PRIu64 " %s per query, fewer than knn.k = %d", path,
                name, cols, distances ? "distances" : "neighbours", k);
    return LBK_OK;
}

lbk_status lbk_truth_check(const lbk_job *job, uint64_t queries)
{
    const lbk_job_truth_spec *t = &job->truth;
    if (t->neighbors[0])
        LBK_TRY(check_one(t->neighbors, t->neighbors_dataset, false, queries, job->knn.k));
    if (t->distances[0])
        LBK_TRY(check_one(t->distances, t->distances_dataset, true, queries, job->knn.k));
    return LBK_OK;
}

void lbk_truth_init(const lbk_job *job, lbk_truth_counts *c)
{
    *c = (lbk_truth_counts){0};
    c->ids = job->truth.neighbors[0] != '\0';
    c->distances = job->truth.distances[0] != '\0';
}

/* Whether every one of the query's K ids is the file's, in order (a padding
 * slot, id UINT64_MAX, equals no id). */
static bool ids_equal(const lbk_knn_candidate *list, const int64_t *ids, int k)
{
    for (int j = 0; j < k; j++)
        if (list[j].id == UINT64_MAX || ids[j] < 0 || list[j].id != (uint64_t)ids[j])
            return false;
    return true;
}

/* The same for the distances, compared as float32 (truth.h): *exact when
 * every one is equal, and the return value: every one within the bound. */
static bool distances_equal(const lbk_knn_candidate *list, const double *d, int k,
                            lbk_metric metric, int dim, bool *exact)
{
    const double bound = (dim + 4) * ldexp(1.0, -24);
    bool within = true;
    *exact = true;
    for (int j = 0; j < k; j++) {
        const float ours =
            list[j].id == UINT64_MAX ? INFINITY : lbk_knn_key_to_distance(metric, list[j].key);
        const float truth = (float)d[j];
        if (ours == truth)
            continue;
        *exact = false;
        const double scale = metric == LBK_METRIC_COSINE ? 1.0 : fabs((double)truth);
        if (!(fabs((double)ours - (double)truth) <= bound * scale))
            within = false;
    }
    return within;
}

lbk_status lbk_truth_add(const lbk_job *job, int dim, uint64_t first, uint64_t count,
                         const lbk_knn_candidate *lists, lbk_truth_counts *c)
{
    const lbk_job_truth_spec *t = &job->truth;
    const int k = job->knn.k;
    const uint64_t n = count * (uint64_t)k;
    lbk_status st = LBK_OK;
    int64_t *ids = NULL;
    double *d = NULL;
    if (count == 0 || (!c->ids && !c->distances))
        return LBK_OK;
    if (c->ids)
        ids = lbk_alloc_large_logged(n, sizeof *ids, "ground-truth ids", &st);
    if (st == LBK_OK && c->distances)
        d = lbk_alloc_large_logged(n, sizeof *d, "ground-truth distances", &st);
    if (st == LBK_OK && ids)
        st = lbk_hdf5_truth_read_ids(t->neighbors, t->neighbors_dataset, first, first + count,
                                     (uint64_t)k, ids);
    if (st == LBK_OK && d)
        st = lbk_hdf5_truth_read_distances(t->distances, t->distances_dataset, first,
                                           first + count, (uint64_t)k, d);
    for (uint64_t q = 0; q < count && st == LBK_OK; q++) {
        const lbk_knn_candidate *list = lists + q * (uint64_t)k;
        c->ids_equal += ids && ids_equal(list, ids + q * (uint64_t)k, k);
        bool exact = false;
        if (d && distances_equal(list, d + q * (uint64_t)k, k, job->knn.metric, dim, &exact))
            c->distances_equal++;
        c->distances_exact += d && exact;
    }
    if (st == LBK_OK)
        c->evaluated += count;
    lbk_alloc_large_free(ids);
    lbk_alloc_large_free(d);
    return st;
}
