/* Radius search on the brute engine's shard (brute.h, lbk_brute_radius_*):
 * kernels/brute_radius.cl over the chunks the kNN paths use, resident or
 * streamed, filtered by the prefilter's lower bounds where the engine has
 * them. */
#include "brute.h"

#include "brute_core_impl.h"
#include "brute_prefilter_impl.h"
#include "device_cl.h"
#include "log.h"
#include "radius_window.h"
#include "try.h"

#include <stdlib.h>

/* Work-groups of a fixed size, as the tree's (a runtime choice per batch
 * size would compile the kernel again for each new size). */
#define BR_LOCAL 64

uint64_t lbk_brute_radius_max_batch(const lbk_brute *engine) { return engine->batch; }

/* One call's kernel and buffers. */
typedef struct {
    lbk_brute *e;
    cl_kernel kernel;
    cl_mem qbuf, bbuf, nbuf, fbuf, kbuf;
    uint64_t batch, window;
    size_t local;
    cl_int filtered; /* this batch's lower bounds are in e->dist */
} radius_state;

static lbk_status state_open(radius_state *rs, uint64_t window)
{
    lbk_brute *e = rs->e;
    const uint64_t b = rs->batch;
    cl_program program;
    rs->window = window;
    LBK_TRY(lbk_device_program_kept(e->dev, "brute_radius.cl", "", &program));
    LBK_TRY(lbk_device_kernel(program, "br_radius", &rs->kernel));
    rs->local = BR_LOCAL;
    const size_t most = lbk_device_kernel_work_group_limit(e->dev, rs->kernel);
    while (rs->local > 1 && most > 0 && rs->local > most)
        rs->local /= 2;
    const struct {
        cl_mem *mem;
        uint64_t bytes;
        cl_mem_flags flags;
        const char *what;
    } want[] = {
        {&rs->qbuf, b * (uint64_t)e->dim * 4, CL_MEM_READ_ONLY, "radius query batch"},
        {&rs->bbuf, b * 4, CL_MEM_READ_ONLY, "radius bounds"},
        {&rs->nbuf, b * 4, CL_MEM_READ_WRITE, "radius counts"},
        {&rs->fbuf, (b + 1) * 8, CL_MEM_READ_ONLY, "radius offsets"},
        {&rs->kbuf, window * 8, CL_MEM_WRITE_ONLY, "the radius window"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        LBK_TRY(lbk_device_buffer(e->dev, want[i].flags, (size_t)want[i].bytes, NULL,
                                  want[i].what, want[i].mem));
    return LBK_OK;
}

static void state_close(radius_state *rs)
{
    const cl_mem mems[] = {rs->qbuf, rs->bbuf, rs->nbuf, rs->fbuf, rs->kbuf};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    if (rs->kernel)
        clReleaseKernel(rs->kernel);
}

/* The prefilter's lower bounds of the chunk's keys into e->dist (queries
 * and norms uploaded by `upload`); the in-order queue runs them before the
 * radius kernel reads them. */
static lbk_status lower_bounds(radius_state *rs, cl_uint nb, cl_uint nr, cl_ulong block_first,
                               cl_ulong norm_first)
{
    lbk_brute *e = rs->e;
    const lbk_brute_bound_rows rows = {
        e->queries, e->qnorm,        e->refs,
        e->rnorm,   (cl_uint)e->dim, lbk_brute_prefilter_bound_c(e->metric, e->dim),
        e->rscale};
    return lbk_brute_prefilter_bound(e, e->prefilter, &rows, nb, nr, block_first, norm_first);
}

/* Every chunk of the shard through the kernel for `count` queries, their
 * running counts starting from zero at the first chunk: mode 0 counts, mode 1 writes the flat
 * positions [w0, w1). */
static lbk_status walk_chunks(radius_state *rs, uint64_t count, cl_int mode, cl_ulong w0,
                              cl_ulong w1)
{
    lbk_brute *e = rs->e;
    cl_command_queue queue = lbk_device_queue(e->dev);
    const cl_uint vw = e->blocked ? e->vw : 0;
    const cl_int dim = e->dim, metric = (cl_int)e->metric;
    const cl_ulong nq = count;
    const size_t global = lbk_device_round_up((size_t)count, rs->local);
    /* Without bounds the kernel reads no `lower`: any buffer will do. */
    const cl_mem lower = rs->filtered ? e->dist : rs->bbuf;
    const cl_ulong ldd = rs->filtered ? e->ldd : 0;
    for (uint64_t c0 = 0; c0 < e->n; c0 += e->chunk) {
        const cl_uint nr = (cl_uint)(e->n - c0 < e->chunk ? e->n - c0 : e->chunk);
        const cl_uint row0 = (cl_uint)c0;
        const cl_int first_chunk = c0 == 0, last_chunk = c0 + nr == e->n;
        cl_ulong first;
        LBK_TRY(lbk_brute_chunk_refs(e, c0, nr, &first));
        if (rs->filtered)
            LBK_TRY(lower_bounds(rs, (cl_uint)count, nr, first, c0 / e->vw));
        if (e->blocked)
            first *= e->vw; /* chunk_refs counts blocks for the blocked kernels */
        LBK_TRY(LBK_KERNEL_ARGS(rs->kernel, LBK_ARG(e->refs), LBK_ARG(vw), LBK_ARG(first),
                                LBK_ARG(nr), LBK_ARG(row0), LBK_ARG(dim), LBK_ARG(rs->qbuf),
                                LBK_ARG(nq), LBK_ARG(rs->bbuf), LBK_ARG(metric), LBK_ARG(mode),
                                LBK_ARG(first_chunk), LBK_ARG(last_chunk), LBK_ARG(rs->nbuf),
                                LBK_ARG(rs->fbuf), LBK_ARG(w0), LBK_ARG(w1), LBK_ARG(rs->kbuf),
                                LBK_ARG(rs->filtered), LBK_ARG(lower), LBK_ARG(ldd)));
        LBK_TRY(lbk_device_cl_check(clEnqueueNDRangeKernel(queue, rs->kernel, 1, NULL, &global,
                                                           &rs->local, 0, NULL, NULL),
                                    "launching the brute radius kernel"));
    }
    if (rs->filtered) /* the bound kernels' events, released with their times */
        lbk_brute_finish(e);
    return LBK_OK;
}

/* The batch's queries and bounds; where the engine has the prefilter and
 * the batch's norms suit its bound arithmetic, the queries and their norms
 * for the lower bounds too (else the batch goes unfiltered, as the kNN
 * prefilter declines it). */
static lbk_status upload(radius_state *rs, const float *queries, const float *bounds,
                         uint64_t count)
{
    lbk_brute *e = rs->e;
    cl_command_queue queue = lbk_device_queue(e->dev);
    rs->filtered =
        e->prefilter && lbk_brute_norms(e, queries, (size_t)count, (size_t)e->dim, e->host_qnorm);
    if (rs->filtered) {
        LBK_TRY(lbk_device_cl_check(clEnqueueWriteBuffer(queue, e->queries, CL_FALSE, 0,
                                                         (size_t)count * (size_t)e->dim * 4,
                                                         queries, 0, NULL, NULL),
                                    "uploading radius queries for their bounds"));
        LBK_TRY(lbk_device_cl_check(clEnqueueWriteBuffer(queue, e->qnorm, CL_FALSE, 0,
                                                         (size_t)count * 4, e->host_qnorm, 0,
                                                         NULL, NULL),
                                    "uploading radius query norms"));
    }
    LBK_TRY(lbk_device_cl_check(clEnqueueWriteBuffer(queue, rs->qbuf, CL_FALSE, 0,
                                                     (size_t)(count * (uint64_t)rs->e->dim * 4),
                                                     queries, 0, NULL, NULL),
                                "uploading radius queries"));
    return lbk_device_cl_check(clEnqueueWriteBuffer(queue, rs->bbuf, CL_TRUE, 0,
                                                    (size_t)(count * 4), bounds, 0, NULL, NULL),
                               "uploading radius bounds");
}

static uint64_t batch_for(const lbk_brute *e, uint64_t nq)
{
    return nq < e->batch ? nq : e->batch;
}

lbk_status lbk_brute_radius_count(lbk_brute *engine, const float *queries, const float *bounds,
                                  uint64_t nq, uint64_t *counts, uint64_t *evals)
{
    for (uint64_t q = 0; q < nq; q++)
        counts[q] = 0;
    if (nq == 0 || engine->n == 0)
        return LBK_OK;
    radius_state rs = {.e = engine, .batch = batch_for(engine, nq)};
    lbk_status st = state_open(&rs, 1);
    uint32_t *found = malloc((size_t)rs.batch * sizeof *found);
    if (st == LBK_OK && !found) {
        lbk_error("out of host memory for %llu radius counts", (unsigned long long)rs.batch);
        st = LBK_ERR_NOMEM;
    }
    cl_command_queue queue = lbk_device_queue(engine->dev);
    for (uint64_t first = 0; st == LBK_OK && first < nq; first += rs.batch) {
        const uint64_t count = nq - first < rs.batch ? nq - first : rs.batch;
        st = upload(&rs, queries + first * (uint64_t)engine->dim, bounds + first, count);
        if (st == LBK_OK)
            st = walk_chunks(&rs, count, 0, 0, 0);
        if (st == LBK_OK)
            st = lbk_device_cl_check(clEnqueueReadBuffer(queue, rs.nbuf, CL_TRUE, 0,
                                                         (size_t)(count * 4), found, 0, NULL,
                                                         NULL),
                                     "reading brute radius counts");
        for (uint64_t q = 0; st == LBK_OK && q < count; q++)
            counts[first + q] = found[q];
    }
    if (st == LBK_OK)
        *evals += nq * engine->n;
    free(found);
    state_close(&rs);
    return st;
}

/* Batch [first, first + count)'s lists through windows of rs->window
 * entries (offsets relative to the batch's first). */
static lbk_status fill_batch(radius_state *rs, const uint64_t *offsets, uint64_t *off,
                             uint64_t first, uint64_t count, float *keys, uint32_t *rows)
{
    uint64_t total = 0;
    LBK_TRY(lbk_radius_window_offsets(rs->e->dev, rs->fbuf, offsets, first, count, off, &total));
    float *kdst = keys + offsets[first];
    uint32_t *rdst = rows + offsets[first];
    for (uint64_t w0 = 0; w0 < total; w0 += rs->window) {
        const uint64_t w1 = total - w0 < rs->window ? total : w0 + rs->window;
        LBK_TRY(walk_chunks(rs, count, 1, w0, w1));
        LBK_TRY(lbk_radius_window_read(rs->e->dev, rs->kbuf, w1 - w0, rs->e->metric, kdst + w0,
                                       rdst + w0));
    }
    return LBK_OK;
}

lbk_status lbk_brute_radius_fill(lbk_brute *engine, const float *queries, const float *bounds,
                                 uint64_t nq, const uint64_t *offsets, uint64_t window,
                                 float *keys, uint32_t *rows, uint64_t *evals)
{
    const uint64_t total = nq ? offsets[nq] - offsets[0] : 0;
    if (total == 0)
        return LBK_OK;
    LBK_FAIL_IF(engine->n == 0, LBK_ERR_INTERNAL,
                "internal: %llu radius results to fill from an empty shard",
                (unsigned long long)total);
    radius_state rs = {.e = engine, .batch = batch_for(engine, nq)};
    lbk_status st = state_open(&rs, window < total ? window : total);
    uint64_t *off = malloc((size_t)(rs.batch + 1) * sizeof *off);
    if (st == LBK_OK && !off) {
        lbk_error("out of host memory for %llu radius offsets", (unsigned long long)rs.batch);
        st = LBK_ERR_NOMEM;
    }
    for (uint64_t first = 0; st == LBK_OK && first < nq; first += rs.batch) {
        const uint64_t count = nq - first < rs.batch ? nq - first : rs.batch;
        if (offsets[first + count] == offsets[first])
            continue;
        st = upload(&rs, queries + first * (uint64_t)engine->dim, bounds + first, count);
        if (st == LBK_OK)
            st = fill_batch(&rs, offsets, off, first, count, keys, rows);
    }
    /* Every query with rows walked the shard once, whatever the windows. */
    for (uint64_t q = 0; st == LBK_OK && q < nq; q++)
        if (offsets[q + 1] > offsets[q])
            *evals += engine->n;
    free(off);
    state_close(&rs);
    return st;
}
