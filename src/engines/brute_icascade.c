/* The integer cascade path, the first row of the path table for uint8 and
 * int8 shards with L2 (docs/design.md "Compact reference points"): the
 * float32 cascade's plan (brute_cascade.c) with exact integers throughout.
 * At set-up the dimension groups (lbk_cascade_grouping, on a widened
 * sample), the shard's coarse rows (integer group sums, as floats) and their
 * int32 squared norms; per batch the coarse bounds C4 <= 4 D
 * (lbk_icasc_coarse), then the exact keys of the rows with C4 <= 4 kth
 * (lbk_icasc_exact). The queries it caps go down to the dot path. */
#include "brute_icascade_impl.h"

#include "alloc_large.h"
#include "brute_cascade_impl.h"
#include "brute_exact_impl.h"
#include "cascade.h"
#include "log.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

/* As the float32 cascade's (brute_cascade.c): from dimension 64 on CPU
 * devices; the data check, the probe and the cap are the control they
 * share (lbk_brute_cascade_cap). The data check reads a widened sample of
 * the rows lbk_cascade_grouping and lbk_cascade_capture would take. */
#define ICASCADE_MIN_DIM 64
#define ICASCADE_SAMPLE 256

/* K from which the selection is the sort-merge (brute_core.c), which the
 * cascade does not run with. */
#define ICASCADE_K_LIMIT 64

struct lbk_brute_icascade_state {
    lbk_brute_cascade_cap cap;
    int dc;
    cl_kernel coarse, exact;
    cl_mem refs_c, rnorm_c, rows; /* coarse shard, its norms, the row-major shard */
    cl_mem queries_c, qnorm_c, checks;
    int *group_of;
    float *host_refs_c; /* blocked layout (CPU: in use) */
    float *host_qc;
    int32_t *host_qnorm_c;
    uint32_t *host_checks;
};

lbk_status lbk_brute_icascade_create(const lbk_brute *e, const lbk_brute_params *params,
                                     lbk_brute_icascade_state **out)
{
    *out = NULL;
    const bool dot =
        lbk_brute_exact_dot(e->dev, e->dtype, e->metric, params->distance, params->prefilter);
    const bool on = dot && e->int_keys && e->metric == LBK_METRIC_L2 && !e->sort_select &&
                    e->dim <= LBK_BRUTE_ICASCADE_DIM_MAX &&
                    (params->prefilter == LBK_PREFILTER_CASCADE ||
                     (params->prefilter == LBK_PREFILTER_AUTO && e->dim >= ICASCADE_MIN_DIM &&
                      lbk_device_is_cpu(e->dev)));
    if (!on)
        return LBK_OK;
    lbk_brute_icascade_state *c = calloc(1, sizeof *c);
    LBK_FAIL_IF(!c, LBK_ERR_NOMEM, "out of host memory creating the brute engine");
    c->dc = lbk_cascade_dim(e->dim);
    c->cap = lbk_brute_cascade_cap_for(e->n, params);
    *out = c;
    return LBK_OK;
}

bool lbk_brute_icascade_auto(const lbk_device *dev, lbk_dtype type, lbk_metric metric, int k,
                             int dim)
{
    return lbk_device_is_cpu(dev) && lbk_dataset_type_integer(type) && metric == LBK_METRIC_L2 &&
           k < ICASCADE_K_LIMIT && dim >= ICASCADE_MIN_DIM && dim <= LBK_BRUTE_ICASCADE_DIM_MAX;
}

/* Per query the coarse row, its norm and count; per row the coarse row,
 * its norm and the row-major row. */
void lbk_brute_icascade_needs(const lbk_brute *e, const lbk_brute_icascade_state *c,
                              lbk_brute_needs *needs)
{
    needs->query_bytes += (uint64_t)c->dc * 4 + 8;
    needs->row_bytes += (uint64_t)c->dc * 4 + 4 + (uint64_t)e->dim * e->ref_bytes;
}

static int value_at(const lbk_brute *e, const void *raw, size_t i)
{
    return e->dtype == LBK_DTYPE_UINT8 ? ((const uint8_t *)raw)[i] : ((const int8_t *)raw)[i];
}

/* The groups and the data check from a widened sample of the rows. */
static lbk_status choose_groups(const lbk_brute *e, lbk_brute_icascade_state *c, const void *raw,
                                bool *ok)
{
    const size_t n = (size_t)e->n, d = (size_t)e->dim;
    const size_t m = n < ICASCADE_SAMPLE ? n : ICASCADE_SAMPLE;
    float *sample = malloc(m * d * sizeof *sample);
    *ok = false;
    LBK_FAIL_IF(!sample, LBK_ERR_NOMEM, "out of host memory grouping dimensions for the cascade");
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < d; j++)
            sample[i * d + j] = (float)value_at(e, raw, (i * n / m) * d + j);
    const lbk_status st = lbk_brute_cascade_groups(e, &c->cap, sample, m, &c->group_of, ok);
    free(sample);
    return st;
}

/* A row's coarse values (integer group sums of the centred values: uint8
 * less 128, so every value in -128..127 and every sum in -512..508) into
 * out[g * stride], and their squared norm: at most dc x 512^2 <= 2^29 up to
 * LBK_BRUTE_ICASCADE_DIM_MAX. The same shift for queries and rows cancels in
 * every difference Q_g - R_g. */
static int32_t coarsen(const lbk_brute *e, const lbk_brute_icascade_state *c, const float *qrow,
                       const void *raw, size_t row, int32_t *sums, float *out, size_t stride)
{
    const size_t d = (size_t)e->dim;
    const int32_t shift = e->dtype == LBK_DTYPE_UINT8 ? 128 : 0;
    memset(sums, 0, (size_t)c->dc * sizeof *sums);
    for (size_t j = 0; j < d; j++)
        sums[c->group_of[j]] += (qrow ? (int32_t)qrow[j] : value_at(e, raw, row * d + j)) - shift;
    int64_t norm = 0;
    for (size_t g = 0; g < (size_t)c->dc; g++) {
        out[g * stride] = (float)sums[g];
        norm += (int64_t)sums[g] * sums[g];
    }
    return (int32_t)norm;
}

/* The coarse shard in the blocked layout (zero padding rows, norm 0) and
 * its norms. */
static lbk_status coarse_shard(const lbk_brute *e, lbk_brute_icascade_state *c, const void *raw,
                               int32_t **norms)
{
    const size_t rows = lbk_brute_padded_rows(e, e->n), dc = (size_t)c->dc, vw = e->vw;
    c->host_refs_c = lbk_alloc_large(rows * dc * sizeof *c->host_refs_c);
    *norms = calloc(rows, sizeof **norms);
    int32_t *sums = malloc(dc * sizeof *sums);
    const bool have = c->host_refs_c && *norms && sums;
    if (have) {
        memset(c->host_refs_c, 0, rows * dc * sizeof *c->host_refs_c);
        for (size_t i = 0; i < (size_t)e->n; i++)
            (*norms)[i] = coarsen(e, c, NULL, raw, i, sums,
                                  c->host_refs_c + (i / vw) * dc * vw + i % vw, vw);
    }
    free(sums);
    LBK_FAIL_IF(!have, LBK_ERR_NOMEM,
                "out of host memory for the cascade's coarse rows (%.1f MiB)",
                (double)(rows * dc * 4) / (1024.0 * 1024.0));
    return LBK_OK;
}

lbk_status lbk_brute_icascade_upload(lbk_brute *e, lbk_brute_icascade_state *c, const void *raw,
                                     bool copy_shard, bool *ok)
{
    LBK_TRY(choose_groups(e, c, raw, ok));
    if (!*ok)
        return LBK_OK;
    const size_t rows = lbk_brute_padded_rows(e, e->n), dc = (size_t)c->dc;
    int32_t *norms = NULL;
    lbk_status st = coarse_shard(e, c, raw, &norms);
    if (st == LBK_OK)
        st =
            lbk_brute_device_buffer(e, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                    rows * sizeof *norms, norms, "the coarse norms", &c->rnorm_c);
    free(norms);
    LBK_TRY(st);
    LBK_TRY(lbk_brute_cascade_host_buffer(e, c->host_refs_c, rows * dc * sizeof(float),
                                          copy_shard, "the coarse shard", &c->refs_c));
    if (!lbk_device_is_cpu(e->dev) || copy_shard) {
        lbk_alloc_large_free(c->host_refs_c);
        c->host_refs_c = NULL;
    }
    return lbk_brute_cascade_host_buffer(e, raw, (size_t)e->n * (size_t)e->dim * e->ref_bytes,
                                         copy_shard, "the row-major shard", &c->rows);
}

lbk_status lbk_brute_icascade_kernels(lbk_brute *e, lbk_brute_icascade_state *c,
                                      lbk_brute_fit *fit)
{
    cl_program program;
    uint32_t main_w;
    size_t unused = SIZE_MAX; /* the exact kernel's work-groups are single work-items */
    LBK_TRY(lbk_brute_main_program(e, fit->limit, &main_w, &program));
    LBK_TRY(lbk_brute_kernel(e, program, "lbk_icasc_coarse", &c->coarse, &fit->dist));
    return lbk_brute_kernel(e, program, "lbk_icasc_exact", &c->exact, &unused);
}

lbk_status lbk_brute_icascade_alloc(lbk_brute *e, lbk_brute_icascade_state *c)
{
    const size_t b = (size_t)e->batch;
    const lbk_brute_buffer want[] = {
        {&c->queries_c, b * (size_t)c->dc * 4, CL_MEM_READ_ONLY, "the coarse queries"},
        {&c->qnorm_c, b * 4, CL_MEM_READ_ONLY, "the coarse query norms"},
        {&c->checks, b * 4, CL_MEM_WRITE_ONLY, "the cascade's counts"},
    };
    LBK_TRY(lbk_brute_buffers(e, want, sizeof want / sizeof want[0]));
    c->host_qc = malloc(b * (size_t)c->dc * sizeof *c->host_qc);
    c->host_qnorm_c = malloc(b * sizeof *c->host_qnorm_c);
    c->host_checks = malloc(b * sizeof *c->host_checks);
    LBK_FAIL_IF(!c->host_qc || !c->host_qnorm_c || !c->host_checks, LBK_ERR_NOMEM,
                "out of host memory for the cascade's batch buffers");
    return LBK_OK;
}

void lbk_brute_icascade_destroy(lbk_brute *e, lbk_brute_icascade_state *c)
{
    if (!c)
        return;
    if (c->refs_c || c->rows) /* buffers may use host memory in place */
        clFinish(lbk_device_queue(e->dev));
    cl_kernel kernels[] = {c->coarse, c->exact};
    cl_mem mems[] = {c->refs_c, c->rnorm_c, c->rows, c->queries_c, c->qnorm_c, c->checks};
    lbk_brute_release(e, kernels, 2, mems, sizeof mems / sizeof mems[0]);
    void *host[] = {c->group_of, c->host_qc, c->host_qnorm_c, c->host_checks};
    for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
        free(host[i]);
    lbk_alloc_large_free(c->host_refs_c);
    free(c);
}

/* Coarse bounds, then checks and exact keys; the K best and the counts read
 * back. */
static lbk_status icascade_device(lbk_brute *e, const lbk_brute_icascade_state *c,
                                  const lbk_brute_batch *b)
{
    cl_command_queue queue = lbk_device_queue(e->dev);
    const uint64_t nq = b->nq;
    const cl_uint nb = (cl_uint)nq, nr = (cl_uint)e->n, dc = (cl_uint)c->dc;
    const cl_uint dim = (cl_uint)e->dim, max_checks = c->cap.max_checks;
    const cl_ulong ldd = e->ldd;
    const struct {
        cl_mem mem;
        const void *host;
        size_t bytes;
    } up[] = {
        {e->queries, b->queries, nq * (size_t)e->dim * sizeof(float)},
        {c->queries_c, c->host_qc, nq * (size_t)c->dc * sizeof(float)},
        {c->qnorm_c, c->host_qnorm_c, nq * sizeof(int32_t)},
    };
    for (size_t i = 0; i < sizeof up / sizeof up[0]; i++)
        LBK_TRY(lbk_device_cl_check(clEnqueueWriteBuffer(queue, up[i].mem, CL_FALSE, 0,
                                                         up[i].bytes, up[i].host, 0, NULL, NULL),
                                    "uploading a cascade batch"));
    const cl_uint qt = lbk_brute_blocked_tile(e, nb, nr);
    LBK_TRY(LBK_KERNEL_ARGS(c->coarse, LBK_ARG(c->queries_c), LBK_ARG(nb), LBK_ARG(c->refs_c),
                            LBK_ARG(nr), LBK_ARG(dc), LBK_ARG(e->dist), LBK_ARG(ldd),
                            LBK_ARG(c->qnorm_c), LBK_ARG(c->rnorm_c), LBK_ARG(qt)));
    LBK_TRY(lbk_brute_blocked_launch(e, c->coarse, nb, nr, qt));
    LBK_TRY(LBK_KERNEL_ARGS(c->exact, LBK_ARG(e->queries), LBK_ARG(dim), LBK_ARG(c->rows),
                            LBK_ARG(nr), LBK_ARG(e->dist), LBK_ARG(ldd), LBK_ARG(max_checks),
                            LBK_ARG(e->best_k), LBK_ARG(e->best_i), LBK_ARG(c->checks)));
    LBK_TRY(lbk_brute_launch(e, c->exact, LBK_BRUTE_EVENT_FINAL, nb, 1, 1, 1));
    LBK_TRY(lbk_brute_read_best(e, nq, b->keys, b->index, CL_FALSE));
    return lbk_device_cl_check(clEnqueueReadBuffer(queue, c->checks, CL_TRUE, 0,
                                                   nq * sizeof(uint32_t), c->host_checks, 0, NULL,
                                                   NULL),
                               "reading the cascade's counts");
}

/* The queries are integers within the points' range (checked before any
 * path runs), so their (int32_t) values are exact. */
static lbk_status run(lbk_brute *e, const lbk_brute_batch *b, lbk_brute_handoff *down)
{
    lbk_brute_icascade_state *c = e->icascade;
    int32_t *sums = malloc((size_t)c->dc * sizeof *sums);
    LBK_FAIL_IF(!sums, LBK_ERR_NOMEM, "out of host memory for a cascade batch");
    for (uint64_t q = 0; q < b->nq; q++)
        c->host_qnorm_c[q] = coarsen(e, c, b->queries + q * (size_t)e->dim, NULL, 0, sums,
                                     c->host_qc + q * (size_t)c->dc, 1);
    free(sums);
    const lbk_status st = icascade_device(e, c, b);
    lbk_brute_finish(e);
    if (st != LBK_OK)
        return st;
    lbk_brute_cascade_hand_down(e, &c->cap, c->host_checks, b->nq, down);
    return LBK_OK;
}

static bool applies(const lbk_brute *e) { return e->icascade && !e->icascade->cap.off; }

static uint64_t batch_limit(lbk_brute *e, uint64_t n)
{
    return lbk_brute_cascade_probe(&e->icascade->cap, n);
}

const lbk_brute_path lbk_brute_icascade_path = {"icascade", applies, batch_limit, run};
