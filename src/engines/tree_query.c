#include "tree_query.h"

#include "kdtree_cl.h"
#include "lbk_shared.h"
#include "log.h"
#include "morton.h"
#include "try.h"

#include <math.h>
#include <stdlib.h>

/* Device bytes per query of a batch: the query, its place in Morton order,
 * its bound, the walk's packed list, the keys and rows written back and its
 * work counts. */
static uint64_t bytes_per_query(const lbk_kdtree *tree, int k)
{
    const uint64_t kk = k > 0 ? (uint64_t)k : 1;
    return (uint64_t)lbk_kdtree_dim(tree) * sizeof(float) + 4u + 4u + kk * (8u + 4u + 4u) +
           LBK_TQ_WORK_FIELDS * 4u;
}

uint64_t lbk_tree_query_bytes(const lbk_kdtree *tree, int k, uint64_t queries)
{
    return queries * bytes_per_query(tree, k);
}

uint64_t lbk_tree_query_max_batch(const lbk_kdtree *tree, int k, uint64_t memory_budget)
{
    const lbk_device *dev = lbk_kdtree_device(tree);
    const uint64_t budget = memory_budget ? memory_budget : lbk_device_global_mem(dev);
    const uint64_t used = lbk_kdtree_bytes(tree);
    const uint64_t kk = k > 0 ? (uint64_t)k : 1;
    const uint64_t max_alloc = lbk_device_max_alloc(dev);
    uint64_t batch = budget > used ? (budget - used) / bytes_per_query(tree, k) : 0;
    /* Each batch buffer must be one allocation, and a batch index fits the
     * kernel's 32-bit order. */
    if (batch > max_alloc / (kk * 8))
        batch = max_alloc / (kk * 8);
    if (batch > max_alloc / ((uint64_t)lbk_kdtree_dim(tree) * sizeof(float)))
        batch = max_alloc / ((uint64_t)lbk_kdtree_dim(tree) * sizeof(float));
    if (batch > UINT32_MAX)
        batch = UINT32_MAX;
    return batch > 0 ? batch : 1;
}

static void fill_pads(lbk_knn_result *result, uint64_t first, uint64_t count, int k)
{
    for (uint64_t i = first * (uint64_t)k; i < (first + count) * (uint64_t)k; i++) {
        result->keys[i] = INFINITY;
        result->index[i] = LBK_NO_INDEX;
    }
}

/* Queries walked in spatial (Morton) order share the tree nodes they touch
 * with their neighbours in the same work-group and cache (lbk_morton's
 * stable radix sort: the comparison sort of 63-bit codes was a tenth of the
 * query phase, 1e5 queries over 1e6 points). */

/* What one tree query call holds on the device and the host. */
typedef struct {
    cl_kernel kernel;
    cl_mem qbuf, obuf, lbuf, kbuf, ibuf, wbuf, bbuf;
    uint32_t *codes, *order; /* two arrays each: the radix sort's ping-pong */
    uint32_t *work;          /* batch x LBK_TQ_WORK_FIELDS, read back */
    uint64_t batch;
    size_t local; /* the work-group size of every launch */
} query_state;

/* A fixed work-group size, the global size rounded up to it (the kernel
 * skips items past nq). Left to the runtime, PoCL picks a divisor of each
 * launch's query count and compiles the kernel again for every new one:
 * under the spatial partition every batch of every rank has another count,
 * and 32 ranks on 2 cores spent tens of seconds (and 16 MiB a rank) in
 * LLVM on a fresh kernel cache; a prime count ran in groups of one. */
#define TQ_LOCAL 256

static lbk_status query_local_size(lbk_device *dev, cl_kernel kernel, size_t *local)
{
    size_t most = 0;
    LBK_TRY(lbk_device_cl_check(clGetKernelWorkGroupInfo(kernel, lbk_device_id(dev),
                                                         CL_KERNEL_WORK_GROUP_SIZE, sizeof most,
                                                         &most, NULL),
                                "asking the tree query kernel's work-group size"));
    *local = TQ_LOCAL;
    while (*local > 1 && *local > most)
        *local /= 2;
    return LBK_OK;
}

static lbk_status query_open(lbk_kdtree *tree, int k, uint64_t batch, query_state *qs)
{
    lbk_device *dev = lbk_kdtree_device(tree);
    const uint64_t dim = (uint64_t)lbk_kdtree_dim(tree), kk = (uint64_t)k;
    cl_program program;
    qs->batch = batch;
    LBK_TRY(lbk_device_program_kept(dev, "tree_query.cl",
                                    lbk_tree_buckets_program_options(lbk_kdtree_dtype(tree)),
                                    &program));
    LBK_TRY(lbk_device_kernel(program, "tq_knn", &qs->kernel));
    LBK_TRY(query_local_size(dev, qs->kernel, &qs->local));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_READ_ONLY, (size_t)(batch * dim * 4), NULL,
                              "tree query batch", &qs->qbuf));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_READ_ONLY, (size_t)(batch * 4), NULL,
                              "tree query order", &qs->obuf));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_READ_WRITE, (size_t)(batch * kk * 8), NULL,
                              "tree query candidate lists", &qs->lbuf));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_WRITE_ONLY, (size_t)(batch * kk * 4), NULL,
                              "tree query keys", &qs->kbuf));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_WRITE_ONLY, (size_t)(batch * kk * 4), NULL,
                              "tree query rows", &qs->ibuf));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_WRITE_ONLY, (size_t)(batch * LBK_TQ_WORK_FIELDS * 4),
                              NULL, "tree query work counts", &qs->wbuf));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_READ_ONLY, (size_t)(batch * 4), NULL,
                              "tree query bounds", &qs->bbuf));
    qs->codes = malloc((size_t)batch * 2 * sizeof *qs->codes);
    qs->order = malloc((size_t)batch * 2 * sizeof *qs->order);
    qs->work = malloc((size_t)batch * LBK_TQ_WORK_FIELDS * sizeof *qs->work);
    LBK_FAIL_IF(!qs->codes || !qs->order || !qs->work, LBK_ERR_NOMEM,
                "out of host memory for the Morton order of %llu tree queries",
                (unsigned long long)batch);
    return LBK_OK;
}

static void query_close(query_state *qs)
{
    if (!qs)
        return;
    free(qs->codes);
    free(qs->order);
    free(qs->work);
    const cl_mem mems[7] = {qs->qbuf, qs->obuf, qs->lbuf, qs->kbuf, qs->ibuf, qs->wbuf, qs->bbuf};
    for (int i = 0; i < 7; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    if (qs->kernel)
        clReleaseKernel(qs->kernel);
}

struct lbk_kdtree_query_buffers {
    query_state qs;
    int k;
};

void lbk_tree_query_buffers_free(lbk_kdtree_query_buffers *cache)
{
    if (!cache)
        return;
    query_close(&cache->qs);
    free(cache);
}

/* The tree's kept buffers, made again only when this call needs a larger
 * batch or another K than they were made for. */
static lbk_status kept_state(lbk_kdtree *tree, int k, uint64_t batch, query_state **out)
{
    lbk_kdtree_query_buffers **slot = lbk_kdtree_query_buffers_slot(tree);
    if (*slot && (*slot)->k == k && (*slot)->qs.batch >= batch) {
        *out = &(*slot)->qs;
        return LBK_OK;
    }
    lbk_tree_query_buffers_free(*slot);
    *slot = calloc(1, sizeof **slot);
    LBK_FAIL_IF(!*slot, LBK_ERR_NOMEM, "out of host memory for the tree query's state");
    (*slot)->k = k;
    const lbk_status st = query_open(tree, k, batch, &(*slot)->qs);
    if (st != LBK_OK) {
        lbk_tree_query_buffers_free(*slot);
        *slot = NULL;
        return st;
    }
    *out = &(*slot)->qs;
    return LBK_OK;
}

/* The batch's per-query counts summed into *work (may be NULL): integer
 * sums, so the total does not depend on how the queries were batched. */
static void add_work(const uint32_t *counts, uint64_t count, lbk_tree_query_work *work)
{
    if (!work)
        return;
    uint64_t nodes = 0, evals = 0;
    for (uint64_t q = 0; q < count; q++) {
        nodes += counts[q * LBK_TQ_WORK_FIELDS + LBK_TQ_WORK_NODES];
        evals += counts[q * LBK_TQ_WORK_FIELDS + LBK_TQ_WORK_EVALS];
    }
    work->nodes_visited += nodes;
    work->distance_evals += evals;
}

/* The order the work-items walk the batch's queries in: Morton order, or
 * (in_order: they come in spatial order already) as given. */
static const uint32_t *walk_order(query_state *qs, const float *batch_q, uint64_t count, int dim,
                                  bool in_order)
{
    if (in_order) {
        for (uint64_t q = 0; q < count; q++)
            qs->order[q] = (uint32_t)q;
        return qs->order;
    }
    lbk_morton_codes(batch_q, count, dim, qs->codes);
    return lbk_morton_radix_order(qs->codes, qs->codes + qs->batch, qs->order,
                                  qs->order + qs->batch, count, true);
}

/* Queries [first, first + count) through the kernel in Morton order; it
 * writes each query's keys and rows at the query's own place, so they are
 * read straight into the result. */
static lbk_status query_batch(lbk_kdtree *tree, query_state *qs, const float *queries,
                              const float *bounds, bool in_order, uint64_t first, uint64_t count,
                              int k, lbk_metric metric, lbk_knn_result *result,
                              lbk_tree_query_work *work)
{
    cl_command_queue queue = lbk_device_queue(lbk_kdtree_device(tree));
    const int dim = lbk_kdtree_dim(tree);
    const float *batch_q = queries + first * (uint64_t)dim;
    const uint32_t *order = walk_order(qs, batch_q, count, dim, in_order);
    cl_int err =
        clEnqueueWriteBuffer(queue, qs->qbuf, CL_FALSE, 0, (size_t)(count * (uint64_t)dim * 4),
                             batch_q, 0, NULL, NULL);
    LBK_TRY(lbk_device_cl_check(err, "uploading tree queries"));
    err = clEnqueueWriteBuffer(queue, qs->obuf, CL_FALSE, 0, (size_t)(count * 4), order, 0, NULL,
                               NULL);
    LBK_TRY(lbk_device_cl_check(err, "uploading the tree queries' order"));
    if (bounds) {
        err = clEnqueueWriteBuffer(queue, qs->bbuf, CL_FALSE, 0, (size_t)(count * 4),
                                   bounds + first, 0, NULL, NULL);
        LBK_TRY(lbk_device_cl_check(err, "uploading the tree queries' bounds"));
    }
    const lbk_tree_buckets *buckets = lbk_kdtree_buckets(tree);
    const cl_mem points = lbk_kdtree_points(tree), ids = lbk_kdtree_ids(tree);
    const cl_mem dims = lbk_kdtree_split_dims(tree);
    const cl_int has_dims = dims != NULL, cdim = dim, ck = k, cmetric = (cl_int)metric;
    const cl_int has_bounds = bounds != NULL;
    const cl_int rotation = lbk_kdtree_rotation(tree);
    const cl_ulong cn = lbk_kdtree_size(tree), cnq = count;
    LBK_TRY(LBK_KERNEL_ARGS(
        qs->kernel, LBK_ARG(points), LBK_ARG(ids), LBK_ARG(dims), LBK_ARG(has_dims),
        LBK_ARG(rotation), LBK_ARG(cn), LBK_ARG(cdim), LBK_ARG(qs->qbuf), LBK_ARG(qs->obuf),
        LBK_ARG(cnq), LBK_ARG(ck), LBK_ARG(cmetric), LBK_ARG(buckets->level),
        LBK_ARG(buckets->two_tile_buckets), LBK_ARG(buckets->points), LBK_ARG(buckets->ids),
        LBK_ARG(qs->lbuf), LBK_ARG(qs->kbuf), LBK_ARG(qs->ibuf), LBK_ARG(qs->wbuf),
        LBK_ARG(qs->bbuf), LBK_ARG(has_bounds)));
    const size_t global = lbk_device_round_up((size_t)count, qs->local);
    err = clEnqueueNDRangeKernel(queue, qs->kernel, 1, NULL, &global, &qs->local, 0, NULL, NULL);
    LBK_TRY(lbk_device_cl_check(err, "launching the tree query kernel"));
    const size_t out_bytes = (size_t)(count * (uint64_t)k * 4);
    const uint64_t out = first * (uint64_t)k;
    err = clEnqueueReadBuffer(queue, qs->kbuf, CL_FALSE, 0, out_bytes, result->keys + out, 0,
                              NULL, NULL);
    LBK_TRY(lbk_device_cl_check(err, "reading tree query keys"));
    err = clEnqueueReadBuffer(queue, qs->ibuf, CL_FALSE, 0, out_bytes, result->index + out, 0,
                              NULL, NULL);
    LBK_TRY(lbk_device_cl_check(err, "reading tree query rows"));
    err = clEnqueueReadBuffer(queue, qs->wbuf, CL_TRUE, 0,
                              (size_t)(count * LBK_TQ_WORK_FIELDS * 4), qs->work, 0, NULL, NULL);
    LBK_TRY(lbk_device_cl_check(err, "reading tree query work counts"));
    add_work(qs->work, count, work);
    return LBK_OK;
}

lbk_status lbk_tree_query(lbk_kdtree *tree, const float *queries, uint64_t nq, int k,
                          lbk_metric metric, lbk_knn_result *result, lbk_tree_query_work *work)
{
    return lbk_tree_query_bounded(tree, queries, NULL, nq, k, metric, result, work);
}

static lbk_status run_query(lbk_kdtree *tree, const float *queries, const float *bounds,
                            bool in_order, uint64_t nq, int k, lbk_metric metric,
                            lbk_knn_result *result, lbk_tree_query_work *work)
{
    LBK_FAIL_IF(k < 1 || k > LBK_TREE_K_MAX, LBK_ERR_CONFIG,
                "tree query: k = %d is outside 1..%d", k, LBK_TREE_K_MAX);
    LBK_FAIL_IF(lbk_knn_is_similarity(metric), LBK_ERR_CONFIG,
                "tree query: the k-d tree supports l2, l1 and linf, not %s",
                lbk_metric_name(metric));
    if (nq == 0)
        return LBK_OK;
    if (lbk_kdtree_size(tree) == 0) {
        fill_pads(result, 0, nq, k);
        return LBK_OK;
    }
    LBK_TRY(lbk_kdtree_prepare_query(tree));
    uint64_t batch = lbk_tree_query_max_batch(tree, k, 0);
    if (batch > nq)
        batch = nq;
    query_state *qs = NULL;
    LBK_TRY(kept_state(tree, k, batch, &qs));
    for (uint64_t first = 0; first < nq; first += batch) {
        const uint64_t count = nq - first < batch ? nq - first : batch;
        LBK_TRY(query_batch(tree, qs, queries, bounds, in_order, first, count, k, metric, result,
                            work));
    }
    return LBK_OK;
}

lbk_status lbk_tree_query_bounded(lbk_kdtree *tree, const float *queries, const float *bounds,
                                  uint64_t nq, int k, lbk_metric metric, lbk_knn_result *result,
                                  lbk_tree_query_work *work)
{
    return run_query(tree, queries, bounds, false, nq, k, metric, result, work);
}

/* A self search's batch is a run of its points in Morton order over the
 * whole set: sorting it again by the batch's own codes cost 1.4 % of the
 * CPU samples of the graph of 1e6 points, on the host while the device
 * waited. */
lbk_status lbk_tree_query_in_order(lbk_kdtree *tree, const float *queries, const float *bounds,
                                   uint64_t nq, int k, lbk_metric metric, lbk_knn_result *result,
                                   lbk_tree_query_work *work)
{
    return run_query(tree, queries, bounds, true, nq, k, metric, result, work);
}

/* Measured crossover (bench/results/kdtree.md, uniform data, the worst case
 * for a tree): tree build + query beat brute force up to 8 dimensions at
 * N = 1e5 (8-D: 0.33x of brute's time, 10-D: 1.7x) and up to 10 at N = 1e6
 * (10-D: 0.55x, 12-D: 3.3x); K = 100 instead of 16 did not move it (8-D at
 * N = 1e5: 0.32x). */
bool lbk_tree_query_is_preferred(int dim, uint64_t rows, int k, const char **why)
{
    (void)k;
    const int limit = rows >= 1000000 ? 10 : 8;
    const bool tree = dim <= limit;
    if (why)
        *why = tree ? (rows >= 1000000
                           ? "at most 10 dimensions with 1e6+ reference rows: the k-d tree "
                             "prunes most of the shard"
                           : "at most 8 dimensions: the k-d tree prunes most of the shard")
                    : (rows >= 1000000
                           ? "more than 10 dimensions: a k-d tree visits most of the shard, "
                             "brute force is faster"
                           : "more than 8 dimensions (below 1e6 reference rows): a k-d tree "
                             "visits most of the shard, brute force is faster");
    return tree;
}
