#include "query.h"

#include "kdtree_cl.h"
#include "lbk_shared.h"
#include "log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ARG(x) sizeof(x), (const void *)&(x)

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

lbk_status lbk_tree_query(lbk_kdtree *tree, const float *queries, uint64_t nq, int k,
                          lbk_metric metric, lbk_knn_result *result)
{
    lbk_status st = LBK_OK;
    lbk_device *dev = lbk_kdtree_device(tree);
    const uint64_t n = lbk_kdtree_size(tree);
    const int dim = lbk_kdtree_dim(tree);
    cl_kernel kernel = NULL;
    cl_mem qbuf = NULL, lbuf = NULL;
    uint64_t *lists = NULL;
    order_item *order = NULL;
    float *sorted = NULL;

    if (k < 1 || k > LBK_K_MAX) {
        lbk_error("tree query: k = %d is outside 1..%d", k, LBK_K_MAX);
        st = LBK_ERR_CONFIG;
        goto cleanup;
    }
    if (nq == 0)
        goto cleanup;
    if (n == 0) {
        fill_pads(result, 0, nq, k);
        goto cleanup;
    }
    uint64_t batch = lbk_tree_max_batch(tree, k, 0);
    if (batch > nq)
        batch = nq;
    cl_program program;
    if ((st = lbk_device_program(dev, "tree_query.cl", "", &program)) != LBK_OK ||
        (st = lbk_device_kernel(program, "tq_knn", &kernel)) != LBK_OK ||
        (st = lbk_device_buffer(dev, CL_MEM_READ_ONLY, (size_t)(batch * (uint64_t)dim * 4), NULL,
                                "tree query batch", &qbuf)) != LBK_OK ||
        (st = lbk_device_buffer(dev, CL_MEM_READ_WRITE, (size_t)(batch * (uint64_t)k * 8), NULL,
                                "tree query candidate lists", &lbuf)) != LBK_OK)
        goto cleanup;
    lists = malloc((size_t)(batch * (uint64_t)k * 8));
    order = malloc((size_t)batch * sizeof *order);
    sorted = malloc((size_t)(batch * (uint64_t)dim) * sizeof *sorted);
    if (!lists || !order || !sorted) {
        lbk_error("out of host memory for %llu tree query lists", (unsigned long long)batch);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    cl_command_queue queue = lbk_device_queue(dev);
    cl_mem points = lbk_kdtree_points(tree), ids = lbk_kdtree_ids(tree);
    cl_mem dims = lbk_kdtree_split_dims(tree);
    const cl_int has_dims = dims != NULL;
    const cl_ulong cn = n;
    const cl_int cdim = dim, ck = k, cmetric = (cl_int)metric;
    for (uint64_t first = 0; first < nq; first += batch) {
        const uint64_t count = nq - first < batch ? nq - first : batch;
        const cl_ulong cnq = count;
        const float *batch_q = queries + first * (uint64_t)dim;
        morton_order(batch_q, count, dim, order);
        for (uint64_t i = 0; i < count; i++)
            memcpy(sorted + i * (uint64_t)dim, batch_q + order[i].index * (uint64_t)dim,
                   (size_t)dim * sizeof *sorted);
        cl_int err = clEnqueueWriteBuffer(queue, qbuf, CL_FALSE, 0,
                                          (size_t)(count * (uint64_t)dim * 4), sorted, 0, NULL,
                                          NULL);
        if ((st = lbk_cl_check(err, "uploading tree queries")) != LBK_OK ||
            (st = lbk_kernel_args(kernel, "tq_knn", 11, ARG(points), ARG(ids), ARG(dims),
                                  ARG(has_dims), ARG(cn), ARG(cdim), ARG(qbuf), ARG(cnq), ARG(ck),
                                  ARG(cmetric), ARG(lbuf))) != LBK_OK)
            goto cleanup;
        size_t global = (size_t)count;
        err = clEnqueueNDRangeKernel(queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
        if ((st = lbk_cl_check(err, "launching the tree query kernel")) != LBK_OK)
            goto cleanup;
        err = clEnqueueReadBuffer(queue, lbuf, CL_TRUE, 0, (size_t)(count * (uint64_t)k * 8),
                                  lists, 0, NULL, NULL);
        if ((st = lbk_cl_check(err, "reading tree query results")) != LBK_OK)
            goto cleanup;
        for (uint64_t i = 0; i < count; i++) {
            const uint64_t out = (first + order[i].index) * (uint64_t)k;
            for (int s = 0; s < k; s++) {
                const uint64_t packed = lists[i * (uint64_t)k + (uint64_t)s];
                const uint32_t bits = (uint32_t)(packed >> 32);
                float key;
                memcpy(&key, &bits, sizeof key);
                result->keys[out + (uint64_t)s] = key;
                result->index[out + (uint64_t)s] = (uint32_t)packed;
            }
        }
    }
cleanup:
    free(lists);
    free(order);
    free(sorted);
    if (qbuf)
        clReleaseMemObject(qbuf);
    if (lbuf)
        clReleaseMemObject(lbuf);
    if (kernel)
        clReleaseKernel(kernel);
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
