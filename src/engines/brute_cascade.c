/* The cascade path, the first row of the path table: the L2 cascade
 * (cascade.h) - the coarse shard and its norms at set-up; per batch the
 * coarse bounds (the prefilter's bound kernel on the coarse rows), then
 * the checks and exact keys on the device (lbk_cascade_exact). The queries
 * it caps go down to the prefilter path. */
#include "brute_cascade_impl.h"

#include "alloc_large.h"
#include "brute_core_impl.h"
#include "brute_prefilter_impl.h"
#include "cascade.h"
#include "log.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

/* From this dimension on, on CPU devices: its coarse bounds cost a quarter
 * of the prefilter's and, on Fashion-MNIST, leave under 1 % of the rows to
 * check with the full bound. A query that needs more than
 * max(CASCADE_MIN_CHECKS, n / CASCADE_CHECK_DIVISOR) checks takes the
 * prefilter path instead, and once most queries through the cascade did, it
 * is off for the rest of the run (data whose dimensions are not alike in
 * groups, where group sums prune little). */
#define CASCADE_MIN_DIM 64
/* The first cascade batch is this short, so that data it does not suit costs
 * little: on 100k x 128 Gaussian blobs a first batch of 671 queries cost
 * 0.35 s more than the prefilter would have. */
#define CASCADE_PROBE_QUERIES 64
#define CASCADE_MIN_CHECKS 256
#define CASCADE_CHECK_DIVISOR 16
/* The data must keep at least this share of the squared distances in its
 * coarse rows (lbk_cascade_capture: 0.86 on Fashion-MNIST, 0.25 for
 * independent dimensions, where the coarse bound prunes little). */
#define CASCADE_MIN_CAPTURE 0.5

struct lbk_brute_cascade_state {
    int dc;          /* dimensions of the coarse rows */
    float c, c_full; /* the bound's constants for dc and all dimensions */
    float slope;
    double largest_rnorm; /* max |r|^2 over the shard */
    lbk_brute_cascade_cap cap;
    cl_kernel kernel;
    cl_mem refs_c, rnorm_c, rows; /* the coarse shard, its norms, the row-major shard */
    cl_mem queries_c, qnorm_c, qeps, checks; /* batch */
    int *group_of;                           /* each dimension's group (lbk_cascade_grouping) */
    float *host_refs_c; /* the coarse shard in the blocked layout (CPU: in use) */
    float *host_qc, *host_qnorm_c, *host_qeps; /* batch */
    uint32_t *host_checks;                     /* batch: exact keys each query needed */
};

bool lbk_brute_cascade_auto(const lbk_device *dev, lbk_metric metric, int k, int dim)
{
    /* From K = 64 the sort-merge selects (brute_core.c), which has no cascade. */
    return metric == LBK_METRIC_L2 && dim >= CASCADE_MIN_DIM && k < 64 &&
           lbk_brute_prefilter_auto(dev, metric, k, dim);
}

/* Its K-list is the main program's chain length, which the sort-merge sets
 * to 1. */
lbk_status lbk_brute_cascade_create(const lbk_brute *e, const lbk_brute_params *params,
                                    lbk_brute_cascade_state **out)
{
    *out = NULL;
    const bool on = e->prefilter && e->metric == LBK_METRIC_L2 && !e->sort_select &&
                    (params->prefilter == LBK_PREFILTER_CASCADE ||
                     (params->prefilter == LBK_PREFILTER_AUTO && e->dim >= CASCADE_MIN_DIM &&
                      lbk_device_is_cpu(e->dev)));
    if (!on)
        return LBK_OK;
    lbk_brute_cascade_state *c = calloc(1, sizeof *c);
    LBK_FAIL_IF(!c, LBK_ERR_NOMEM, "out of host memory creating the brute engine");
    c->dc = lbk_cascade_dim(e->dim);
    c->c = lbk_brute_prefilter_bound_c(LBK_METRIC_L2, c->dc);
    c->c_full = lbk_brute_prefilter_bound_c(LBK_METRIC_L2, e->dim);
    c->slope = lbk_cascade_slope(e->dim);
    c->cap = lbk_brute_cascade_cap_for(e->n, params);
    *out = c;
    return LBK_OK;
}

/* Per query the coarse row, its norm, threshold and count; per row the
 * coarse row, its norm and the row-major row. */
void lbk_brute_cascade_needs(const lbk_brute *e, const lbk_brute_cascade_state *c,
                             lbk_brute_needs *needs)
{
    needs->query_bytes += (uint64_t)c->dc * 4 + 12;
    needs->row_bytes += (uint64_t)c->dc * 4 + 4 + (uint64_t)e->dim * 4;
}

lbk_status lbk_brute_cascade_host_buffer(lbk_brute *e, const void *host, size_t bytes, bool copy,
                                         const char *what, cl_mem *out)
{
    const bool in_place = lbk_device_is_cpu(e->dev) && !copy;
    return lbk_brute_device_buffer(
        e, CL_MEM_READ_ONLY | (in_place ? CL_MEM_USE_HOST_PTR : CL_MEM_COPY_HOST_PTR), bytes,
        (void *)host, what, out);
}

/* The coarse rows of the shard, straight into the blocked layout (zero
 * padding included); row_c: dc floats of scratch. */
static void fill_coarse_layout(const lbk_brute *e, lbk_brute_cascade_state *c,
                               const float *points, float *row_c)
{
    const size_t dim = (size_t)e->dim, dc = (size_t)c->dc, vw = e->vw;
    const size_t blocks = lbk_brute_padded_rows(e, e->n) / vw;
    memset(c->host_refs_c, 0, blocks * vw * dc * sizeof *c->host_refs_c);
    for (size_t i = 0; i < (size_t)e->n; i++) {
        lbk_cascade_coarsen(points + i * dim, e->dim, c->group_of, row_c);
        float *out = c->host_refs_c + (i / vw) * dc * vw + i % vw;
        for (size_t g = 0; g < dc; g++)
            out[g * vw] = row_c[g];
    }
}

/* The coarse rows' squared norms, in double rounded to float as
 * lbk_brute_norms makes them (the bound allows any order of the double
 * sum), read lane by lane from the blocked layout. */
static void coarse_norms(const lbk_brute *e, const lbk_brute_cascade_state *c, float *out)
{
    const size_t dc = (size_t)c->dc, vw = e->vw, blocks = lbk_brute_padded_rows(e, e->n) / vw;
    for (size_t b = 0; b < blocks; b++) {
        double sums[16] = {0.0}; /* lanes: 4, 8 or 16 (tuning.h) */
        const float *block = c->host_refs_c + b * dc * vw;
        for (size_t g = 0; g < dc; g++)
            for (size_t l = 0; l < vw; l++)
                sums[l] += (double)block[g * vw + l] * block[g * vw + l];
        for (size_t l = 0; l < vw; l++)
            out[b * vw + l] = (float)sums[l];
    }
}

lbk_status lbk_brute_cascade_groups(const lbk_brute *e, const lbk_brute_cascade_cap *cap,
                                    const float *rows, size_t m, int **group_of, bool *ok)
{
    const size_t dc = (size_t)lbk_cascade_dim(e->dim);
    *group_of = malloc((size_t)e->dim * sizeof **group_of);
    int *perm = malloc(dc * LBK_CASCADE_GROUP * sizeof *perm);
    float *scratch = malloc(2 * dc * sizeof *scratch);
    const bool have = *group_of && perm && scratch;
    const lbk_status st = have ? lbk_cascade_grouping(rows, m, e->dim, perm) : LBK_OK;
    *ok = false;
    if (have && st == LBK_OK) {
        lbk_cascade_group_of(perm, e->dim, *group_of);
        *ok = cap->forced ||
              lbk_cascade_capture(rows, m, e->dim, *group_of, scratch) >= CASCADE_MIN_CAPTURE;
    }
    free(perm);
    free(scratch);
    LBK_FAIL_IF(!have, LBK_ERR_NOMEM, "out of host memory grouping dimensions for the cascade");
    return st;
}

/* The coarse shard in the blocked layout and its norms, on the host. */
static lbk_status coarse_shard(const lbk_brute *e, lbk_brute_cascade_state *c,
                               const float *points, float **norms)
{
    const size_t rows = lbk_brute_padded_rows(e, e->n), dc = (size_t)c->dc;
    c->host_refs_c = lbk_alloc_large(rows * dc * sizeof *c->host_refs_c);
    *norms = calloc(rows, sizeof **norms);
    float *row_c = malloc(dc * sizeof *row_c);
    const bool have = c->host_refs_c && *norms && row_c;
    if (have) {
        fill_coarse_layout(e, c, points, row_c);
        coarse_norms(e, c, *norms);
    }
    free(row_c);
    LBK_FAIL_IF(!have, LBK_ERR_NOMEM,
                "out of host memory for the cascade's coarse rows (%.1f MiB)",
                (double)(rows * dc * 4) / (1024.0 * 1024.0));
    return LBK_OK;
}

/* The coarse shard with its norms on the device, and the row-major shard
 * its kernel reads; *ok false (nothing uploaded) when the data does not
 * suit it. The shard's norms are the prefilter's, made before. */
lbk_status lbk_brute_cascade_upload(lbk_brute *e, lbk_brute_cascade_state *c, const float *points,
                                    bool copy_shard, bool *ok)
{
    LBK_TRY(lbk_brute_cascade_groups(e, &c->cap, points, e->n, &c->group_of, ok));
    if (!*ok)
        return LBK_OK;
    const size_t rows = lbk_brute_padded_rows(e, e->n), dc = (size_t)c->dc;
    float *norms = NULL;
    lbk_status st = coarse_shard(e, c, points, &norms);
    if (st == LBK_OK)
        st =
            lbk_brute_device_buffer(e, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                    rows * sizeof(float), norms, "the coarse norms", &c->rnorm_c);
    free(norms);
    LBK_TRY(st);
    for (uint64_t i = 0; i < e->n; i++)
        if (e->host_rnorm[i] > c->largest_rnorm)
            c->largest_rnorm = e->host_rnorm[i];
    LBK_TRY(lbk_brute_cascade_host_buffer(e, c->host_refs_c, rows * dc * sizeof(float),
                                          copy_shard, "the coarse shard", &c->refs_c));
    if (!lbk_device_is_cpu(e->dev) || copy_shard) { /* the buffer holds a copy */
        lbk_alloc_large_free(c->host_refs_c);
        c->host_refs_c = NULL;
    }
    return lbk_brute_cascade_host_buffer(e, points, (size_t)e->n * (size_t)e->dim * sizeof(float),
                                         copy_shard, "the row-major shard", &c->rows);
}

/* From the main program: its K-list is the chain K. */
lbk_status lbk_brute_cascade_kernels(lbk_brute *e, lbk_brute_cascade_state *c, lbk_brute_fit *fit)
{
    cl_program program;
    uint32_t main_w;
    size_t unused = SIZE_MAX; /* its work-groups are single work-items */
    LBK_TRY(lbk_brute_main_program(e, fit->limit, &main_w, &program));
    return lbk_brute_kernel(e, program, "lbk_cascade_exact", &c->kernel, &unused);
}

lbk_status lbk_brute_cascade_alloc(lbk_brute *e, lbk_brute_cascade_state *c)
{
    const size_t b = (size_t)e->batch;
    const lbk_brute_buffer want[] = {
        {&c->queries_c, b * (size_t)c->dc * 4, CL_MEM_READ_ONLY, "the coarse queries"},
        {&c->qnorm_c, b * 4, CL_MEM_READ_ONLY, "the coarse query norms"},
        {&c->qeps, b * 4, CL_MEM_READ_ONLY, "the cascade's thresholds"},
        {&c->checks, b * 4, CL_MEM_WRITE_ONLY, "the cascade's counts"},
    };
    LBK_TRY(lbk_brute_buffers(e, want, sizeof want / sizeof want[0]));
    c->host_qc = malloc(b * (size_t)c->dc * sizeof *c->host_qc);
    c->host_qnorm_c = malloc(b * sizeof *c->host_qnorm_c);
    c->host_qeps = malloc(b * sizeof *c->host_qeps);
    c->host_checks = malloc(b * sizeof *c->host_checks);
    LBK_FAIL_IF(!c->host_qc || !c->host_qnorm_c || !c->host_qeps || !c->host_checks,
                LBK_ERR_NOMEM, "out of host memory for the cascade's batch buffers");
    return LBK_OK;
}

void lbk_brute_cascade_destroy(lbk_brute *e, lbk_brute_cascade_state *c)
{
    if (!c)
        return;
    /* Its shards' buffers may use host memory in place: nothing may still
     * read it. */
    if (c->refs_c || c->rows)
        clFinish(lbk_device_queue(e->dev));
    cl_mem mems[] = {c->refs_c,  c->rnorm_c, c->rows,  c->queries_c,
                     c->qnorm_c, c->qeps,    c->checks};
    lbk_brute_release(e, &c->kernel, 1, mems, sizeof mems / sizeof mems[0]);
    void *host[] = {c->group_of, c->host_qc, c->host_qnorm_c, c->host_qeps, c->host_checks};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
    lbk_alloc_large_free(c->host_refs_c);
    free(c);
}

/* The kernels for a batch: coarse bounds, then the checks and exact keys
 * (cascade.h); the K best and each query's count of checks read back. */
static lbk_status cascade_device(lbk_brute *e, const lbk_brute_cascade_state *c,
                                 const lbk_brute_batch *b)
{
    cl_command_queue queue = lbk_device_queue(e->dev);
    const uint64_t nq = b->nq;
    const cl_uint nb = (cl_uint)nq, nr = (cl_uint)e->n, dc = (cl_uint)c->dc;
    const cl_uint dim = (cl_uint)e->dim, max_checks = c->cap.max_checks;
    const cl_ulong ldd = e->ldd;
    const cl_float slope = c->slope, c_full = c->c_full;
    const struct {
        cl_mem mem;
        const void *host;
        size_t bytes;
    } up[] = {
        {e->queries, b->queries, nq * (size_t)e->dim * sizeof(float)},
        {c->queries_c, c->host_qc, nq * (size_t)c->dc * sizeof(float)},
        {c->qnorm_c, c->host_qnorm_c, nq * sizeof(float)},
        {c->qeps, c->host_qeps, nq * sizeof(float)},
        {e->qnorm, e->host_qnorm, nq * sizeof(float)},
    };
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++)
        LBK_TRY(lbk_device_cl_check(clEnqueueWriteBuffer(queue, up[i].mem, CL_FALSE, 0,
                                                         up[i].bytes, up[i].host, 0, NULL, NULL),
                                    "uploading a cascade batch"));
    const lbk_brute_bound_rows coarse = {c->queries_c, c->qnorm_c, c->refs_c, c->rnorm_c,
                                         dc,           c->c,       NULL};
    LBK_TRY(lbk_brute_prefilter_bound(e, e->prefilter, &coarse, nb, nr, 0, 0));
    LBK_TRY(LBK_KERNEL_ARGS(c->kernel, LBK_ARG(e->queries), LBK_ARG(dim), LBK_ARG(c->rows),
                            LBK_ARG(nr), LBK_ARG(e->dist), LBK_ARG(ldd), LBK_ARG(c->qeps),
                            LBK_ARG(slope), LBK_ARG(e->qnorm), LBK_ARG(e->rnorm), LBK_ARG(c_full),
                            LBK_ARG(max_checks), LBK_ARG(e->best_k), LBK_ARG(e->best_i),
                            LBK_ARG(c->checks)));
    LBK_TRY(lbk_brute_launch(e, c->kernel, LBK_BRUTE_EVENT_FINAL, nb, 1, 1, 1));
    LBK_TRY(lbk_brute_read_best(e, nq, b->keys, b->index, CL_FALSE));
    return lbk_device_cl_check(clEnqueueReadBuffer(queue, c->checks, CL_TRUE, 0,
                                                   nq * sizeof(uint32_t), c->host_checks, 0, NULL,
                                                   NULL),
                               "reading the cascade's counts");
}

lbk_brute_cascade_cap lbk_brute_cascade_cap_for(uint64_t n, const lbk_brute_params *params)
{
    const uint64_t most = n / CASCADE_CHECK_DIVISOR;
    return (lbk_brute_cascade_cap){
        .forced = params->prefilter == LBK_PREFILTER_CASCADE,
        .max_checks = (uint32_t)(most > CASCADE_MIN_CHECKS ? most : CASCADE_MIN_CHECKS)};
}

uint64_t lbk_brute_cascade_probe(lbk_brute_cascade_cap *cap, uint64_t n)
{
    if (cap->probed)
        return n;
    cap->probed = true;
    return n < CASCADE_PROBE_QUERIES ? n : CASCADE_PROBE_QUERIES;
}

void lbk_brute_cascade_hand_down(lbk_brute *e, lbk_brute_cascade_cap *cap, const uint32_t *checks,
                                 uint64_t nq, lbk_brute_handoff *down)
{
    for (uint64_t q = 0; q < nq; q++) {
        down->flags[q] = checks[q] > cap->max_checks;
        down->count += down->flags[q];
        if (!down->flags[q])
            e->timing.cascade_checked_rows += checks[q];
    }
    e->timing.cascade_queries += nq;
    e->timing.cascade_fallback_queries += down->count;
    cap->seen += nq;
    cap->capped += down->count;
    if (2 * cap->capped > cap->seen)
        cap->off = true;
}

/* Rows too large for the bound arithmetic: the whole batch declined, as on
 * the prefilter path. */
static lbk_status run(lbk_brute *e, const lbk_brute_batch *b, lbk_brute_handoff *down)
{
    lbk_brute_cascade_state *c = e->cascade;
    const uint64_t nq = b->nq;
    if (!lbk_brute_norms(e, b->queries, nq, (size_t)e->dim, e->host_qnorm)) {
        down->declined = true;
        return LBK_OK;
    }
    for (uint64_t q = 0; q < nq; q++)
        lbk_cascade_coarsen(b->queries + q * e->dim, e->dim, c->group_of, c->host_qc + q * c->dc);
    lbk_brute_norms(e, c->host_qc, nq, (size_t)c->dc, c->host_qnorm_c);
    for (uint64_t q = 0; q < nq; q++)
        c->host_qeps[q] = lbk_cascade_eps(e->host_qnorm[q], c->largest_rnorm);
    const lbk_status st = cascade_device(e, c, b);
    lbk_brute_finish(e);
    if (st != LBK_OK)
        return st;
    lbk_brute_cascade_hand_down(e, &c->cap, c->host_checks, nq, down);
    return LBK_OK;
}

static bool applies(const lbk_brute *e) { return e->cascade && !e->cascade->cap.off; }

/* The engine's first cascade batch is a short probe of the data. */
static uint64_t batch_limit(lbk_brute *e, uint64_t n)
{
    return lbk_brute_cascade_probe(&e->cascade->cap, n);
}

const lbk_brute_path lbk_brute_cascade_path = {"cascade", applies, batch_limit, run};
