#include "query.h"

#include "kdtree_cl.h"
#include "lbk_shared.h"
#include "log.h"
#include "try.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Subtrees of this many levels at the bottom of the tree are walked as
 * buckets (kernels/tree_query.cl): 4 (15 points) was the fastest of 2..6
 * for 1e5 queries over 1e6 uniform 3-D points with K = 16. */
#define TREE_BUCKET_LEVELS 4

uint64_t lbk_tree_max_batch(const lbk_kdtree *tree, int k, uint64_t memory_budget)
{
    const lbk_device *dev = lbk_kdtree_device(tree);
    const uint64_t budget = memory_budget ? memory_budget : lbk_device_global_mem(dev);
    const uint64_t used = lbk_kdtree_bytes(tree);
    const uint64_t kk = k > 0 ? (uint64_t)k : 1;
    const uint64_t per_query = (uint64_t)lbk_kdtree_dim(tree) * sizeof(float) + kk * 8;
    const uint64_t max_alloc = lbk_device_max_alloc(dev);
    uint64_t batch = budget > used ? (budget - used) / per_query : 0;
    /* Each of the two batch buffers must be one allocation. */
    if (batch > max_alloc / (kk * 8))
        batch = max_alloc / (kk * 8);
    if (batch > max_alloc / ((uint64_t)lbk_kdtree_dim(tree) * sizeof(float)))
        batch = max_alloc / ((uint64_t)lbk_kdtree_dim(tree) * sizeof(float));
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
 * with their neighbours in the same work-group and cache. Key: the first
 * three coordinates, each quantised to 21 bits over the batch's box. */
typedef struct {
    uint64_t key;
    uint64_t index;
} order_item;

static int order_cmp(const void *a, const void *b)
{
    const order_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static uint64_t spread21(uint64_t v)
{
    v &= 0x1fffff;
    v = (v | v << 32) & 0x1f00000000ffffull;
    v = (v | v << 16) & 0x1f0000ff0000ffull;
    v = (v | v << 8) & 0x100f00f00f00f00full;
    v = (v | v << 4) & 0x10c30c30c30c30c3ull;
    v = (v | v << 2) & 0x1249249249249249ull;
    return v;
}

static void morton_order(const float *q, uint64_t nq, int dim, order_item *items)
{
    const int used = dim < 3 ? dim : 3;
    float lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int j = 0; j < used; j++) {
        lo[j] = hi[j] = q[j];
        for (uint64_t i = 1; i < nq; i++) {
            const float v = q[i * (uint64_t)dim + (uint64_t)j];
            lo[j] = v < lo[j] ? v : lo[j];
            hi[j] = v > hi[j] ? v : hi[j];
        }
    }
    for (uint64_t i = 0; i < nq; i++) {
        uint64_t key = 0;
        for (int j = 0; j < used; j++) {
            const float span = hi[j] - lo[j];
            const float t = span > 0 && isfinite(span)
                                ? (q[i * (uint64_t)dim + (uint64_t)j] - lo[j]) / span
                                : 0.0f;
            /* NaN or out-of-range t lands at a valid cell: the order only
             * affects speed. */
            const uint64_t cell = t > 0 ? (t < 1 ? (uint64_t)(t * 2097151.0f) : 2097151) : 0;
            key |= spread21(cell) << j;
        }
        items[i].key = key;
        items[i].index = i;
    }
    qsort(items, (size_t)nq, sizeof *items, order_cmp);
}

/* What one tree query call holds on the device and the host. */
typedef struct {
    cl_kernel kernel;
    cl_mem qbuf, lbuf;
    uint64_t *lists;
    order_item *order;
    float *sorted;
    uint64_t batch;
} query_state;

static lbk_status query_open(lbk_kdtree *tree, int k, uint64_t batch, query_state *qs)
{
    lbk_device *dev = lbk_kdtree_device(tree);
    const uint64_t dim = (uint64_t)lbk_kdtree_dim(tree);
    cl_program program;
    qs->batch = batch;
    LBK_TRY(lbk_device_program_kept(dev, "tree_query.cl", "", &program));
    LBK_TRY(lbk_device_kernel(program, "tq_knn", &qs->kernel));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_READ_ONLY, (size_t)(batch * dim * 4), NULL,
                              "tree query batch", &qs->qbuf));
    LBK_TRY(lbk_device_buffer(dev, CL_MEM_READ_WRITE, (size_t)(batch * (uint64_t)k * 8), NULL,
                              "tree query candidate lists", &qs->lbuf));
    qs->lists = malloc((size_t)(batch * (uint64_t)k * 8));
    qs->order = malloc((size_t)batch * sizeof *qs->order);
    qs->sorted = malloc((size_t)(batch * dim) * sizeof *qs->sorted);
    LBK_FAIL_IF(!qs->lists || !qs->order || !qs->sorted, LBK_ERR_NOMEM,
                "out of host memory for %llu tree query lists", (unsigned long long)batch);
    return LBK_OK;
}

static void query_close(query_state *qs)
{
    free(qs->lists);
    free(qs->order);
    free(qs->sorted);
    const cl_mem mems[2] = {qs->qbuf, qs->lbuf};
    for (int i = 0; i < 2; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    if (qs->kernel)
        clReleaseKernel(qs->kernel);
}

/* Queries [first, first + count) in Morton order through the kernel; the
 * results go back to the callers' order. */
static lbk_status query_batch(lbk_kdtree *tree, query_state *qs, const float *queries,
                              uint64_t first, uint64_t count, int k, lbk_metric metric,
                              lbk_knn_result *result)
{
    cl_command_queue queue = lbk_device_queue(lbk_kdtree_device(tree));
    const int dim = lbk_kdtree_dim(tree);
    const float *batch_q = queries + first * (uint64_t)dim;
    morton_order(batch_q, count, dim, qs->order);
    for (uint64_t i = 0; i < count; i++)
        memcpy(qs->sorted + i * (uint64_t)dim, batch_q + qs->order[i].index * (uint64_t)dim,
               (size_t)dim * sizeof *qs->sorted);
    cl_int err = clEnqueueWriteBuffer(queue, qs->qbuf, CL_FALSE, 0,
                                      (size_t)(count * (uint64_t)dim * 4), qs->sorted, 0, NULL,
                                      NULL);
    LBK_TRY(lbk_cl_check(err, "uploading tree queries"));
    const cl_mem points = lbk_kdtree_points(tree), ids = lbk_kdtree_ids(tree);
    const cl_mem dims = lbk_kdtree_split_dims(tree);
    const cl_int has_dims = dims != NULL, cdim = dim, ck = k, cmetric = (cl_int)metric;
    const cl_ulong cn = lbk_kdtree_size(tree), cnq = count;
    /* The bottom TREE_BUCKET_LEVELS levels are buckets (tree_query.cl). */
    const cl_uint levels = (cl_uint)lbk_kd_levels(cn);
    const cl_uint bucket_level = levels > TREE_BUCKET_LEVELS ? levels - TREE_BUCKET_LEVELS : 0;
    LBK_TRY(LBK_KERNEL_ARGS(qs->kernel, LBK_ARG(points), LBK_ARG(ids), LBK_ARG(dims),
                            LBK_ARG(has_dims), LBK_ARG(cn), LBK_ARG(cdim), LBK_ARG(qs->qbuf),
                            LBK_ARG(cnq), LBK_ARG(ck), LBK_ARG(cmetric), LBK_ARG(bucket_level),
                            LBK_ARG(qs->lbuf)));
    size_t global = (size_t)count;
    err = clEnqueueNDRangeKernel(queue, qs->kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    LBK_TRY(lbk_cl_check(err, "launching the tree query kernel"));
    err = clEnqueueReadBuffer(queue, qs->lbuf, CL_TRUE, 0, (size_t)(count * (uint64_t)k * 8),
                              qs->lists, 0, NULL, NULL);
    LBK_TRY(lbk_cl_check(err, "reading tree query results"));
    for (uint64_t i = 0; i < count; i++) {
        const uint64_t out = (first + qs->order[i].index) * (uint64_t)k;
        for (int s = 0; s < k; s++) {
            const uint64_t packed = qs->lists[i * (uint64_t)k + (uint64_t)s];
            result->keys[out + (uint64_t)s] = lbk_packed_key(packed);
            result->index[out + (uint64_t)s] = lbk_packed_index(packed);
        }
    }
    return LBK_OK;
}

lbk_status lbk_tree_query(lbk_kdtree *tree, const float *queries, uint64_t nq, int k,
                          lbk_metric metric, lbk_knn_result *result)
{
    lbk_status st = LBK_OK;
    LBK_FAIL_IF(k < 1 || k > LBK_TREE_K_MAX, LBK_ERR_CONFIG,
                "tree query: k = %d is outside 1..%d", k, LBK_TREE_K_MAX);
    LBK_FAIL_IF(lbk_metric_is_similarity(metric), LBK_ERR_CONFIG,
                "tree query: the k-d tree supports l2, l1 and linf, not %s",
                lbk_metric_name(metric));
    if (nq == 0)
        return LBK_OK;
    if (lbk_kdtree_size(tree) == 0) {
        fill_pads(result, 0, nq, k);
        return LBK_OK;
    }
    uint64_t batch = lbk_tree_max_batch(tree, k, 0);
    if (batch > nq)
        batch = nq;
    query_state qs = {0};
    LBK_TRY_GOTO(st, query_open(tree, k, batch, &qs));
    for (uint64_t first = 0; first < nq; first += batch) {
        const uint64_t count = nq - first < batch ? nq - first : batch;
        LBK_TRY_GOTO(st, query_batch(tree, &qs, queries, first, count, k, metric, result));
    }
cleanup:
    query_close(&qs);
    return st;
}

/* Measured crossover (bench/results/kdtree.md, uniform data, the worst case
 * for a tree): tree build + query beat brute force up to 8 dimensions at
 * N = 1e5 (8-D: 0.33x of brute's time, 10-D: 1.7x) and up to 10 at N = 1e6
 * (10-D: 0.55x, 12-D: 3.3x); K = 100 instead of 16 did not move it (8-D at
 * N = 1e5: 0.32x). */
bool lbk_tree_is_preferred(int dim, uint64_t rows, int k, const char **why)
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
