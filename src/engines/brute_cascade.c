/* The brute-force engine's L2 cascade (cascade.h): the coarse shard and
 * its norms at set-up, and a batch through the coarse bounds, the checks
 * and exact keys on the device (lbk_cascade_exact), with the queries it
 * caps handed to the prefilter path. */
#include "brute_impl.h"

#include "alloc_large.h"
#include "cascade.h"
#include "log.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

/* The data must keep at least this share of the squared distances in its
 * coarse rows (lbk_cascade_capture: 0.86 on Fashion-MNIST, 0.25 for
 * independent dimensions, where the coarse bound prunes little). */
#define CASCADE_MIN_CAPTURE 0.5

/* A host array for a buffer: used in place on a CPU device (no copy by the
 * runtime), copied elsewhere or with copy_shard. */
static lbk_status host_buffer(lbk_brute *e, const void *host, size_t bytes, bool copy,
                              const char *what, cl_mem *out)
{
    const bool in_place = lbk_device_is_cpu(e->dev) && !copy;
    return lbk_device_buffer(e->dev,
                             CL_MEM_READ_ONLY | (in_place ? CL_MEM_USE_HOST_PTR
                                                          : CL_MEM_COPY_HOST_PTR),
                             bytes, (void *)host, what, out);
}

/* Host buffers of the cascade, per batch. */
lbk_status lbk_brute_cascade_alloc(lbk_brute *e)
{
    const size_t b = (size_t)e->batch;
    e->host_qc = malloc(b * (size_t)e->dc * sizeof *e->host_qc);
    e->host_qnorm_c = malloc(b * sizeof *e->host_qnorm_c);
    e->host_qeps = malloc(b * sizeof *e->host_qeps);
    e->host_checks = malloc(b * sizeof *e->host_checks);
    e->cas_flags = malloc(b * sizeof *e->cas_flags);
    LBK_FAIL_IF(!e->host_qc || !e->host_qnorm_c || !e->host_qeps || !e->host_checks ||
                    !e->cas_flags,
                LBK_ERR_NOMEM, "out of host memory for the cascade's batch buffers");
    return lbk_brute_alloc_slots(e, &e->cas, "the cascade's batch buffers");
}

/* The coarse rows of the shard, straight into the blocked layout (zero
 * padding included); row_c: dc floats of scratch. */
static void fill_coarse_layout(lbk_brute *e, const float *points, float *row_c)
{
    const size_t dim = (size_t)e->dim, dc = (size_t)e->dc, vw = e->vw;
    const size_t blocks = lbk_brute_padded_rows(e, e->n) / vw;
    memset(e->host_refs_c, 0, blocks * vw * dc * sizeof *e->host_refs_c);
    for (size_t i = 0; i < (size_t)e->n; i++) {
        lbk_cascade_coarsen(points + i * dim, e->dim, e->group_of, row_c);
        float *out = e->host_refs_c + (i / vw) * dc * vw + i % vw;
        for (size_t g = 0; g < dc; g++)
            out[g * vw] = row_c[g];
    }
}

/* The coarse rows' squared norms, in double rounded to float as
 * lbk_brute_norms makes them (the bound allows any order of the double
 * sum), read lane by lane from the blocked layout. */
static void coarse_norms(const lbk_brute *e, float *out)
{
    const size_t dc = (size_t)e->dc, vw = e->vw, blocks = lbk_brute_padded_rows(e, e->n) / vw;
    for (size_t b = 0; b < blocks; b++) {
        double sums[16] = {0.0}; /* lanes: 4, 8 or 16 (tuning.h) */
        const float *block = e->host_refs_c + b * dc * vw;
        for (size_t g = 0; g < dc; g++)
            for (size_t l = 0; l < vw; l++)
                sums[l] += (double)block[g * vw + l] * block[g * vw + l];
        for (size_t l = 0; l < vw; l++)
            out[b * vw + l] = (float)sums[l];
    }
}

/* The cascade's groups (group_of), and whether the data suits it: unless
 * forced, its coarse rows must keep CASCADE_MIN_CAPTURE of the distances. */
static lbk_status choose_groups(lbk_brute *e, const float *points)
{
    const size_t dc = (size_t)e->dc;
    e->group_of = malloc((size_t)e->dim * sizeof *e->group_of);
    int *perm = malloc(dc * LBK_CASCADE_GROUP * sizeof *perm);
    float *scratch = malloc(2 * dc * sizeof *scratch);
    const bool ok = e->group_of && perm && scratch;
    const lbk_status st = ok ? lbk_cascade_grouping(points, e->n, e->dim, perm) : LBK_OK;
    if (ok && st == LBK_OK) {
        lbk_cascade_group_of(perm, e->dim, e->group_of);
        e->cascade = e->cascade_forced || lbk_cascade_capture(points, e->n, e->dim,
                                                              e->group_of, scratch) >=
                                              CASCADE_MIN_CAPTURE;
    }
    free(perm);
    free(scratch);
    LBK_FAIL_IF(!ok, LBK_ERR_NOMEM, "out of host memory grouping dimensions for the cascade");
    return st;
}

/* The cascade's coarse shard in the blocked layout with its norms, and the
 * row-major shard its kernel reads; nothing when the data does not suit it. */
lbk_status lbk_brute_cascade_upload(lbk_brute *e, const float *points, bool copy_shard)
{
    LBK_TRY(choose_groups(e, points));
    if (!e->cascade)
        return LBK_OK;
    const size_t rows = lbk_brute_padded_rows(e, e->n), dc = (size_t)e->dc;
    e->host_refs_c = lbk_alloc_large(rows * dc * sizeof *e->host_refs_c);
    float *norms = calloc(rows, sizeof *norms), *row_c = malloc(dc * sizeof *row_c);
    const bool ok = e->host_refs_c && norms && row_c;
    if (ok) {
        fill_coarse_layout(e, points, row_c);
        coarse_norms(e, norms);
    }
    free(row_c);
    if (!ok) {
        free(norms);
        lbk_error("out of host memory for the cascade's coarse rows (%.1f MiB)",
                  (double)(rows * dc * 4) / (1024.0 * 1024.0));
        return LBK_ERR_NOMEM;
    }
    for (uint64_t i = 0; i < e->n; i++)
        if (e->host_rnorm[i] > e->largest_rnorm)
            e->largest_rnorm = e->host_rnorm[i];
    const lbk_status st = lbk_device_buffer(e->dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                            rows * sizeof(float), norms, "the coarse norms",
                                            &e->rnorm_c);
    free(norms);
    LBK_TRY(st);
    LBK_TRY(host_buffer(e, e->host_refs_c, rows * dc * sizeof(float), copy_shard,
                        "the coarse shard", &e->refs_c));
    if (!lbk_device_is_cpu(e->dev) || copy_shard) { /* the buffer holds a copy */
        lbk_free_large(e->host_refs_c);
        e->host_refs_c = NULL;
    }
    return host_buffer(e, points, (size_t)e->n * (size_t)e->dim * sizeof(float), copy_shard,
                       "the row-major shard", &e->rows);
}

/* The cascade's kernels for a batch: coarse bounds, then the checks and
 * exact keys (cascade.h); the K best and each query's count of checks read
 * back. */
static lbk_status cascade_device(lbk_brute *e, const float *queries, uint64_t nq, float *keys,
                                 uint32_t *index)
{
    cl_command_queue queue = lbk_device_queue(e->dev);
    const cl_uint nb = (cl_uint)nq, nr = (cl_uint)e->n, dc = (cl_uint)e->dc;
    const cl_uint dim = (cl_uint)e->dim, max_checks = e->max_checks;
    const cl_ulong ldd = e->ldd;
    const cl_float slope = e->cascade_slope, c_full = e->bound_c;
    const struct {
        cl_mem mem;
        const void *host;
        size_t bytes;
    } up[] = {
        {e->queries, queries, nq * (size_t)e->dim * sizeof(float)},
        {e->queries_c, e->host_qc, nq * (size_t)e->dc * sizeof(float)},
        {e->qnorm_c, e->host_qnorm_c, nq * sizeof(float)},
        {e->qeps, e->host_qeps, nq * sizeof(float)},
        {e->qnorm, e->host_qnorm, nq * sizeof(float)},
    };
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++)
        LBK_TRY(lbk_cl_check(clEnqueueWriteBuffer(queue, up[i].mem, CL_FALSE, 0, up[i].bytes,
                                                  up[i].host, 0, NULL, NULL),
                             "uploading a cascade batch"));
    const lbk_brute_bound_rows coarse = {e->queries_c, e->qnorm_c, e->refs_c, e->rnorm_c, dc,
                                         e->cascade_c};
    LBK_TRY(lbk_brute_bound(e, &coarse, nb, nr, 0, 0));
    LBK_TRY(LBK_KERNEL_ARGS(e->k_cascade, LBK_ARG(e->queries), LBK_ARG(dim), LBK_ARG(e->rows),
                            LBK_ARG(nr), LBK_ARG(e->dist), LBK_ARG(ldd), LBK_ARG(e->qeps),
                            LBK_ARG(slope), LBK_ARG(e->qnorm),
                            LBK_ARG(e->rnorm), LBK_ARG(c_full), LBK_ARG(max_checks),
                            LBK_ARG(e->best_k), LBK_ARG(e->best_i), LBK_ARG(e->checks)));
    LBK_TRY(lbk_brute_launch(e, e->k_cascade, LBK_BRUTE_EVENT_FINAL, nb, 1, 1, 1));
    LBK_TRY(lbk_brute_read_best(e, nq, keys, index, CL_FALSE));
    return lbk_cl_check(clEnqueueReadBuffer(queue, e->checks, CL_TRUE, 0,
                                            nq * sizeof(uint32_t), e->host_checks, 0, NULL, NULL),
                        "reading the cascade's counts");
}

/* The queries that hit the cascade's cap, through the prefilter path; when
 * they were most of the batch, the rest of the run skips the cascade. */
static lbk_status cascade_fallback(lbk_brute *e, const float *queries, uint64_t nq,
                                   float *keys, uint32_t *index)
{
    uint64_t m = 0;
    for (uint64_t q = 0; q < nq; q++) {
        e->cas_flags[q] = e->host_checks[q] > e->max_checks;
        m += e->cas_flags[q];
        if (!e->cas_flags[q])
            e->timing.cascade_checked_rows += e->host_checks[q];
    }
    e->timing.cascade_queries += nq;
    e->timing.cascade_fallback_queries += m;
    /* Over every cascade batch so far, so that one short batch (the last
     * of a job) cannot decide alone. */
    e->cascade_seen += nq;
    e->cascade_capped += m;
    if (2 * e->cascade_capped > e->cascade_seen)
        e->cascade_off = true;
    return lbk_brute_rerun_flagged(e, lbk_brute_run_prefilter, e->cas_flags, &e->cas, queries, nq,
                                   keys, index, &m);
}

/* The cascade path (cascade.h); rows too large for the bound arithmetic go
 * through lbk_brute_run_exact as on the prefilter path. */
lbk_status lbk_brute_cascade_run(lbk_brute *e, const float *queries, uint64_t nq, float *keys,
                                 uint32_t *index)
{
    if (!lbk_brute_norms(e, queries, nq, (size_t)e->dim, e->host_qnorm))
        return lbk_brute_run_exact(e, queries, nq, keys, index);
    for (uint64_t q = 0; q < nq; q++)
        lbk_cascade_coarsen(queries + q * e->dim, e->dim, e->group_of,
                            e->host_qc + q * e->dc);
    lbk_brute_norms(e, e->host_qc, nq, (size_t)e->dc, e->host_qnorm_c);
    for (uint64_t q = 0; q < nq; q++)
        e->host_qeps[q] = lbk_cascade_eps(e->host_qnorm[q], e->largest_rnorm);
    lbk_status st = cascade_device(e, queries, nq, keys, index);
    clFinish(lbk_device_queue(e->dev));
    lbk_brute_collect_events(e);
    return st == LBK_OK ? cascade_fallback(e, queries, nq, keys, index) : st;
}
