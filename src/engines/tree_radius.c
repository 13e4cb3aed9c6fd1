#include "tree_radius.h"

#include "kdtree_cl.h"
#include "lbk_shared.h"
#include "log.h"
#include "morton.h"
#include "radius_window.h"
#include "try.h"

#include <stdlib.h>

/* Device bytes per query of a batch: the query, its place in Morton order,
 * its bound, its count, its offset and its work counts. */
static uint64_t bytes_per_query(const lbk_kdtree *tree)
{
    return (uint64_t)lbk_kdtree_dim(tree) * 4u + 4u + 4u + 4u + 8u + LBK_TQ_WORK_FIELDS * 4u;
}

/* What the budget leaves beside the tree: half for the batch, half for the
 * fill's window of (key, row) entries. */
static uint64_t room(const lbk_kdtree *tree, const lbk_tree_radius_params *p)
{
    const lbk_device *dev = lbk_kdtree_device(tree);
    const uint64_t budget = p->memory_budget ? p->memory_budget : lbk_device_global_mem(dev);
    const uint64_t used = lbk_kdtree_bytes(tree);
    return budget > used ? budget - used : 0;
}

uint64_t lbk_tree_radius_max_batch(const lbk_kdtree *tree, const lbk_tree_radius_params *p)
{
    const uint64_t max_alloc = lbk_device_max_alloc(lbk_kdtree_device(tree));
    const uint64_t row = (uint64_t)lbk_kdtree_dim(tree) * 4u;
    uint64_t batch = room(tree, p) / 2 / bytes_per_query(tree);
    if (batch > max_alloc / row)
        batch = max_alloc / row;
    if (batch > UINT32_MAX - 1u) /* offsets of batch + 1 queries, 32-bit order */
        batch = UINT32_MAX - 1u;
    return batch > 0 ? batch : 1;
}

static uint64_t window_entries(const lbk_kdtree *tree, const lbk_tree_radius_params *p)
{
    if (p->window)
        return p->window;
    const uint64_t max_alloc = lbk_device_max_alloc(lbk_kdtree_device(tree));
    uint64_t w = room(tree, p) / 2 / 8u;
    if (w > max_alloc / 4u)
        w = max_alloc / 4u;
    return w > 0 ? w : 1;
}

/* One call's kernel, buffers and host scratch. */
typedef struct {
    lbk_kdtree *tree;
    lbk_metric metric;
    cl_kernel kernel;
    cl_mem qbuf, obuf, bbuf, cbuf, fbuf, kbuf, wbuf;
    uint32_t *codes, *order; /* two arrays each: the radix sort's ping-pong */
    uint32_t *counts, *work;
    uint64_t *offsets;
    uint64_t batch, window;
    size_t local;
} radius_state;

#define TR_LOCAL 256

static lbk_status local_size(lbk_device *dev, cl_kernel kernel, size_t *local)
{
    size_t most = 0;
    LBK_TRY(lbk_device_cl_check(clGetKernelWorkGroupInfo(kernel, lbk_device_id(dev),
                                                         CL_KERNEL_WORK_GROUP_SIZE, sizeof most,
                                                         &most, NULL),
                                "asking the tree radius kernel's work-group size"));
    *local = TR_LOCAL; /* fixed, as the kNN walk's (tree_query.c) */
    while (*local > 1 && *local > most)
        *local /= 2;
    return LBK_OK;
}

static lbk_status state_open(radius_state *rs, uint64_t window)
{
    lbk_device *dev = lbk_kdtree_device(rs->tree);
    const uint64_t dim = (uint64_t)lbk_kdtree_dim(rs->tree), b = rs->batch;
    cl_program program;
    rs->window = window;
    LBK_TRY(lbk_device_program_kept(dev, "tree_query.cl",
                                    lbk_tree_buckets_program_options(lbk_kdtree_dtype(rs->tree)),
                                    &program));
    LBK_TRY(lbk_device_kernel(program, "tq_radius", &rs->kernel));
    LBK_TRY(local_size(dev, rs->kernel, &rs->local));
    const struct {
        cl_mem *mem;
        uint64_t bytes;
        cl_mem_flags flags;
        const char *what;
    } want[] = {
        {&rs->qbuf, b * dim * 4, CL_MEM_READ_ONLY, "radius query batch"},
        {&rs->obuf, b * 4, CL_MEM_READ_ONLY, "radius query order"},
        {&rs->bbuf, b * 4, CL_MEM_READ_ONLY, "radius bounds"},
        {&rs->cbuf, b * 4, CL_MEM_WRITE_ONLY, "radius counts"},
        {&rs->fbuf, (b + 1) * 8, CL_MEM_READ_ONLY, "radius offsets"},
        {&rs->kbuf, window * 8, CL_MEM_WRITE_ONLY, "the radius window"},
        {&rs->wbuf, b * LBK_TQ_WORK_FIELDS * 4, CL_MEM_WRITE_ONLY, "radius work counts"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        LBK_TRY(lbk_device_buffer(dev, want[i].flags, (size_t)want[i].bytes, NULL, want[i].what,
                                  want[i].mem));
    rs->codes = malloc((size_t)b * 2 * sizeof *rs->codes);
    rs->order = malloc((size_t)b * 2 * sizeof *rs->order);
    rs->counts = malloc((size_t)b * sizeof *rs->counts);
    rs->work = malloc((size_t)b * LBK_TQ_WORK_FIELDS * sizeof *rs->work);
    rs->offsets = malloc((size_t)(b + 1) * sizeof *rs->offsets);
    LBK_FAIL_IF(!rs->codes || !rs->order || !rs->counts || !rs->work || !rs->offsets,
                LBK_ERR_NOMEM, "out of host memory for a radius batch of %llu queries",
                (unsigned long long)b);
    return LBK_OK;
}

static void state_close(radius_state *rs)
{
    free(rs->codes);
    free(rs->order);
    free(rs->counts);
    free(rs->work);
    free(rs->offsets);
    const cl_mem mems[] = {rs->qbuf, rs->obuf, rs->bbuf, rs->cbuf, rs->fbuf, rs->kbuf, rs->wbuf};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    if (rs->kernel)
        clReleaseKernel(rs->kernel);
}

/* The batch's queries, Morton order and bounds onto the device. */
static lbk_status upload(radius_state *rs, const float *queries, const float *bounds,
                         uint64_t count)
{
    cl_command_queue queue = lbk_device_queue(lbk_kdtree_device(rs->tree));
    const int dim = lbk_kdtree_dim(rs->tree);
    lbk_morton_codes(queries, count, dim, rs->codes);
    const uint32_t *order = lbk_morton_radix_order(rs->codes, rs->codes + rs->batch, rs->order,
                                                   rs->order + rs->batch, count, true);
    /* Blocking: `order` lives in the ping-pong arrays the next batch reuses. */
    LBK_TRY(lbk_device_cl_check(clEnqueueWriteBuffer(queue, rs->qbuf, CL_FALSE, 0,
                                                     (size_t)(count * (uint64_t)dim * 4), queries,
                                                     0, NULL, NULL),
                                "uploading radius queries"));
    LBK_TRY(lbk_device_cl_check(clEnqueueWriteBuffer(queue, rs->bbuf, CL_FALSE, 0,
                                                     (size_t)(count * 4), bounds, 0, NULL, NULL),
                                "uploading radius bounds"));
    return lbk_device_cl_check(clEnqueueWriteBuffer(queue, rs->obuf, CL_TRUE, 0,
                                                    (size_t)(count * 4), order, 0, NULL, NULL),
                               "uploading the radius queries' order");
}

/* One walk of `count` queries: mode 0 counts, mode 1 writes the entries of
 * flat positions [w0, w1); the work counts are read back. */
static lbk_status launch(radius_state *rs, uint64_t count, cl_int mode, cl_ulong w0, cl_ulong w1)
{
    lbk_kdtree *tree = rs->tree;
    cl_command_queue queue = lbk_device_queue(lbk_kdtree_device(tree));
    const lbk_tree_buckets *buckets = lbk_kdtree_buckets(tree);
    const cl_mem points = lbk_kdtree_points(tree), ids = lbk_kdtree_ids(tree);
    const cl_mem dims = lbk_kdtree_split_dims(tree);
    const cl_int has_dims = dims != NULL, cdim = lbk_kdtree_dim(tree);
    const cl_int cmetric = (cl_int)rs->metric, rotation = lbk_kdtree_rotation(tree);
    const cl_ulong cn = lbk_kdtree_size(tree), cnq = count;
    LBK_TRY(LBK_KERNEL_ARGS(rs->kernel, LBK_ARG(points), LBK_ARG(ids), LBK_ARG(dims),
                            LBK_ARG(has_dims), LBK_ARG(rotation), LBK_ARG(cn), LBK_ARG(cdim),
                            LBK_ARG(rs->qbuf), LBK_ARG(rs->obuf), LBK_ARG(cnq), LBK_ARG(cmetric),
                            LBK_ARG(buckets->level), LBK_ARG(buckets->two_tile_buckets),
                            LBK_ARG(buckets->points), LBK_ARG(buckets->ids), LBK_ARG(rs->bbuf),
                            LBK_ARG(mode), LBK_ARG(rs->cbuf), LBK_ARG(rs->fbuf), LBK_ARG(w0),
                            LBK_ARG(w1), LBK_ARG(rs->kbuf), LBK_ARG(rs->wbuf)));
    const size_t global = lbk_device_round_up((size_t)count, rs->local);
    LBK_TRY(lbk_device_cl_check(
        clEnqueueNDRangeKernel(queue, rs->kernel, 1, NULL, &global, &rs->local, 0, NULL, NULL),
        "launching the tree radius kernel"));
    return lbk_device_cl_check(clEnqueueReadBuffer(queue, rs->wbuf, CL_TRUE, 0,
                                                   (size_t)(count * LBK_TQ_WORK_FIELDS * 4),
                                                   rs->work, 0, NULL, NULL),
                               "reading tree radius work counts");
}

/* Query q's walk added to *work (integer sums: any batching gives the same
 * totals). */
static void add_work(const radius_state *rs, uint64_t q, lbk_tree_query_work *work)
{
    work->nodes_visited += rs->work[q * LBK_TQ_WORK_FIELDS + LBK_TQ_WORK_NODES];
    work->distance_evals += rs->work[q * LBK_TQ_WORK_FIELDS + LBK_TQ_WORK_EVALS];
}

static lbk_status check(const lbk_tree_radius_params *p)
{
    LBK_FAIL_IF(lbk_knn_is_similarity(p->metric), LBK_ERR_CONFIG,
                "tree radius search: the k-d tree supports l2, l1 and linf, not %s",
                lbk_metric_name(p->metric));
    return LBK_OK;
}

static uint64_t batch_for(const lbk_kdtree *tree, const lbk_tree_radius_params *p, uint64_t nq)
{
    const uint64_t most = lbk_tree_radius_max_batch(tree, p);
    return nq < most ? nq : most;
}

lbk_status lbk_tree_radius_count(lbk_kdtree *tree, const lbk_tree_radius_params *p,
                                 const float *queries, const float *bounds, uint64_t nq,
                                 uint64_t *counts, lbk_tree_query_work *work)
{
    LBK_TRY(check(p));
    if (nq == 0 || lbk_kdtree_size(tree) == 0) {
        for (uint64_t q = 0; q < nq; q++)
            counts[q] = 0;
        return LBK_OK;
    }
    LBK_TRY(lbk_kdtree_prepare_query(tree));
    radius_state rs = {.tree = tree, .metric = p->metric, .batch = batch_for(tree, p, nq)};
    lbk_status st = state_open(&rs, 1);
    cl_command_queue queue = lbk_device_queue(lbk_kdtree_device(tree));
    const uint64_t dim = (uint64_t)lbk_kdtree_dim(tree);
    for (uint64_t first = 0; st == LBK_OK && first < nq; first += rs.batch) {
        const uint64_t count = nq - first < rs.batch ? nq - first : rs.batch;
        st = upload(&rs, queries + first * dim, bounds + first, count);
        if (st == LBK_OK)
            st = launch(&rs, count, 0, 0, 0);
        if (st == LBK_OK)
            st = lbk_device_cl_check(clEnqueueReadBuffer(queue, rs.cbuf, CL_TRUE, 0,
                                                         (size_t)(count * 4), rs.counts, 0, NULL,
                                                         NULL),
                                     "reading tree radius counts");
        for (uint64_t q = 0; st == LBK_OK && q < count; q++) {
            counts[first + q] = rs.counts[q];
            add_work(&rs, q, work);
        }
    }
    state_close(&rs);
    return st;
}

/* Batch [first, first + count)'s lists, window by window: its flat output
 * (offsets relative to the batch's first) in pieces of rs->window entries,
 * each walk writing only its piece. A query is counted in the work of the
 * window its list starts in, so the totals do not depend on the window. */
static lbk_status fill_batch(radius_state *rs, const uint64_t *offsets, uint64_t first,
                             uint64_t count, float *keys, uint32_t *rows,
                             lbk_tree_query_work *work)
{
    uint64_t *off = rs->offsets;
    uint64_t total = 0;
    LBK_TRY(lbk_radius_window_offsets(lbk_kdtree_device(rs->tree), rs->fbuf, offsets, first,
                                      count, off, &total));
    float *kdst = keys + offsets[first];
    uint32_t *rdst = rows + offsets[first];
    for (uint64_t w0 = 0; w0 < total; w0 += rs->window) {
        const uint64_t w1 = total - w0 < rs->window ? total : w0 + rs->window;
        LBK_TRY(launch(rs, count, 1, w0, w1));
        LBK_TRY(lbk_radius_window_read(lbk_kdtree_device(rs->tree), rs->kbuf, w1 - w0, rs->metric,
                                       kdst + w0, rdst + w0));
        for (uint64_t q = 0; q < count; q++)
            if (off[q + 1] > off[q] && off[q] >= w0 && off[q] < w1)
                add_work(rs, q, work);
    }
    return LBK_OK;
}

lbk_status lbk_tree_radius_fill(lbk_kdtree *tree, const lbk_tree_radius_params *p,
                                const float *queries, const float *bounds, uint64_t nq,
                                const uint64_t *offsets, float *keys, uint32_t *rows,
                                lbk_tree_query_work *work)
{
    LBK_TRY(check(p));
    const uint64_t total = nq ? offsets[nq] - offsets[0] : 0;
    if (total == 0)
        return LBK_OK;
    LBK_FAIL_IF(lbk_kdtree_size(tree) == 0, LBK_ERR_INTERNAL,
                "internal: %llu radius results to fill from an empty tree",
                (unsigned long long)total);
    LBK_TRY(lbk_kdtree_prepare_query(tree));
    uint64_t window = window_entries(tree, p);
    window = window < total ? window : total;
    radius_state rs = {.tree = tree, .metric = p->metric, .batch = batch_for(tree, p, nq)};
    lbk_status st = state_open(&rs, window);
    const uint64_t dim = (uint64_t)lbk_kdtree_dim(tree);
    for (uint64_t first = 0; st == LBK_OK && first < nq; first += rs.batch) {
        const uint64_t count = nq - first < rs.batch ? nq - first : rs.batch;
        if (offsets[first + count] == offsets[first])
            continue;
        st = upload(&rs, queries + first * dim, bounds + first, count);
        if (st == LBK_OK)
            st = fill_batch(&rs, offsets, first, count, keys, rows, work);
    }
    state_close(&rs);
    return st;
}
