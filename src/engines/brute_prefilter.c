/* The prefilter path (brute.h): lower bounds of the keys from dot products
 * select K' > K candidates on the device, and the host re-ranks them by
 * exact keys (rerank.h); a query whose bound cannot prove its candidates
 * complete goes down to the exact path. */
#include "brute_prefilter_impl.h"

#include "brute_core_impl.h"
#include "device_cl.h"
#include "rerank.h"
#include "timer.h"
#include "try.h"

#include <math.h>
#include <stdlib.h>

/* Used up to this K, with K' = K + max(K, 8) candidates: the bound is about
 * 4 n u of the keys (n = dim, u = 2^-24), so the K'-th candidate rarely sits
 * that close to the K-th, and a short K' chain keeps the selection cheap. */
#define PREFILTER_K_MAX 64
#define PREFILTER_MIN_DIM 16
/* Beyond this dimension the rounding-error bound (n u) grows too large for
 * the prefilter to settle anything. */
#define PREFILTER_MAX_DIM 100000

struct lbk_brute_prefilter_state {
    int kp; /* K' candidates by lower bound */
    float bound_c;
    uint32_t w; /* work-items of its bubble kernels (chain K') */
    cl_kernel bound, groups, final;
    cl_mem best_k, best_i; /* batch x K': the candidates */
    float *cand_k;         /* batch x K': the candidates read back */
    uint32_t *cand_i;
    lbk_rerank rerank; /* the host half: settle proofs, exact re-rank */
};

/* c of the lower bound L(r) and the upper bound U(r) = L(r) + 2 (c S), u =
 * 2^-24, n = dim.
 * L2: L = a(r) - c S, S = |q|^2 + |r|^2: the dot product with fused
 * multiply-adds in any order is off by at most gamma_n sum|q_j r_j| <=
 * gamma_n S / 2, the norms by u S, the two final operations of a(r) by about
 * 3 u S, and the exact key (a sequential sum of n non-negative rounded
 * squares, itself <= 2 S) by gamma_(n+1) 2 S; together below (4 n + 20) u S
 * for n u << 1. The extra 44 u and the 5 % cover the roundings of computing
 * L and U themselves.
 * IP and COSINE: L = -a(r) - c S, S = |q| |r| (norms rounded up): a(r) and
 * the exact sum each differ from the true dot product by at most gamma_n
 * sum|q_j r_j| <= gamma_n S, so c = 2 gamma_n would do; the extra 16 u and
 * 1 % leave more than 10 u S for the roundings of L and U (each within
 * about 3 u S, the norms' own double error far below that). */
float lbk_brute_prefilter_bound_c(lbk_metric metric, int dim)
{
    const double u = ldexp(1.0, -24), n = dim;
    if (lbk_knn_is_similarity(metric))
        return (float)((2.0 * n * u / (1.0 - n * u) + 16.0 * u) * 1.01);
    return (float)((4.0 * dim + 64.0) * ldexp(1.0, -24) * 1.05);
}

/* Cosine over float16 (brute_scale.h): the bound kernel sums q_j x_j over
 * the rows as read and multiplies the sum by hi once, where the exact keys
 * use r_j = fl(x_j / n) (the normaliser's). Against sum q_j r_j that adds
 * at most u (each r_j = x_j / n (1 + d_j), |d_j| <= u + 2^-53), u + 2^-53
 * (hi = 1/n (1 + e)) and u (the product's rounding), times sum |q_j r_j|
 * <= S, to a(r)'s error: 4 u more than the constant above covers. */
float lbk_brute_prefilter_scaled_c(int dim)
{
    const double u = ldexp(1.0, -24), n = dim;
    return (float)((2.0 * n * u / (1.0 - n * u) + 20.0 * u) * 1.01);
}

bool lbk_brute_prefilter_auto(const lbk_device *dev, lbk_metric metric, int k, int dim)
{
    return !lbk_device_is_gpu(dev) && metric != LBK_METRIC_L1 && metric != LBK_METRIC_LINF &&
           k <= PREFILTER_K_MAX && dim >= PREFILTER_MIN_DIM && dim <= PREFILTER_MAX_DIM;
}

lbk_status lbk_brute_prefilter_create(const lbk_brute *e, const lbk_brute_params *params,
                                      lbk_brute_prefilter_state **out)
{
    *out = NULL;
    const bool on =
        e->blocked && e->metric != LBK_METRIC_L1 && e->metric != LBK_METRIC_LINF &&
        !e->has_selector && e->k <= PREFILTER_K_MAX && e->dim <= PREFILTER_MAX_DIM &&
        (params->prefilter == LBK_PREFILTER_ON || params->prefilter == LBK_PREFILTER_CASCADE ||
         (params->prefilter == LBK_PREFILTER_AUTO && e->dim >= PREFILTER_MIN_DIM));
    if (!on)
        return LBK_OK;
    lbk_brute_prefilter_state *p = calloc(1, sizeof *p);
    LBK_FAIL_IF(!p, LBK_ERR_NOMEM, "out of host memory creating the brute engine");
    p->kp = e->k + (e->k > 8 ? e->k : 8);
    p->bound_c = e->scaled ? lbk_brute_prefilter_scaled_c(e->dim)
                           : lbk_brute_prefilter_bound_c(e->metric, e->dim);
    *out = p;
    return LBK_OK;
}

/* The query norms and the candidates per query, the norms per row; the
 * survivors hold chains of K'. */
void lbk_brute_prefilter_needs(const lbk_brute_prefilter_state *p, lbk_brute_needs *needs)
{
    needs->query_bytes += 8 + (uint64_t)p->kp * 8;
    needs->row_bytes += 4;
    needs->chain = p->kp;
}

/* The re-rank reads the caller's rows, which outlive the engine (float16:
 * as read, with cosine's row factors). */
lbk_status lbk_brute_prefilter_upload(lbk_brute *e, lbk_brute_prefilter_state *p,
                                      const void *points, bool *ok)
{
    LBK_TRY(lbk_brute_shard_norms(e, points, ok));
    const bool half = e->dtype == LBK_DTYPE_FLOAT16;
    if (*ok)
        p->rerank = (lbk_rerank){.metric = e->metric,
                                 .k = e->k,
                                 .kp = p->kp,
                                 .dim = e->dim,
                                 .bound_c = p->bound_c,
                                 .rows = half ? NULL : points,
                                 .half_rows = half ? points : NULL,
                                 .rscale = e->host_rscale,
                                 .vw = e->vw,
                                 .rnorm = e->host_rnorm};
    return LBK_OK;
}

/* The bound from the main program, and the bubble kernels again for chain
 * length K'. */
lbk_status lbk_brute_prefilter_kernels(lbk_brute *e, lbk_brute_prefilter_state *p,
                                       lbk_brute_fit *fit)
{
    cl_program program;
    uint32_t main_w;
    LBK_TRY(lbk_brute_main_program(e, fit->limit, &main_w, &program));
    LBK_TRY(lbk_brute_kernel(e, program, "lbk_brute_bound_blocked", &p->bound, &fit->dist));
    LBK_TRY(lbk_brute_compile(e, p->kp, fit->limit, &p->w, &program));
    LBK_TRY(lbk_brute_kernel(e, program, "lbk_bubble_groups", &p->groups, &fit->select));
    LBK_TRY(lbk_brute_kernel(e, program, "lbk_bubble_final", &p->final, &fit->select));
    if (p->w > fit->need)
        fit->need = p->w;
    return LBK_OK;
}

lbk_status lbk_brute_prefilter_alloc(lbk_brute *e, lbk_brute_prefilter_state *p)
{
    const size_t b = (size_t)e->batch, kp = (size_t)p->kp;
    const lbk_brute_buffer want[] = {
        {&p->best_k, b * kp * 4, CL_MEM_READ_WRITE, "the prefilter candidates"},
        {&p->best_i, b * kp * 4, CL_MEM_READ_WRITE, "the prefilter candidates"},
    };
    LBK_TRY(lbk_brute_buffers(e, want, sizeof want / sizeof want[0]));
    p->cand_k = malloc(b * kp * sizeof *p->cand_k);
    p->cand_i = malloc(b * kp * sizeof *p->cand_i);
    LBK_FAIL_IF(!p->cand_k || !p->cand_i, LBK_ERR_NOMEM,
                "out of host memory for the prefilter's batch buffers");
    return LBK_OK;
}

void lbk_brute_prefilter_destroy(lbk_brute *e, lbk_brute_prefilter_state *p)
{
    if (!p)
        return;
    cl_kernel kernels[] = {p->bound, p->groups, p->final};
    cl_mem mems[] = {p->best_k, p->best_i};
    lbk_brute_release(e, kernels, sizeof kernels / sizeof kernels[0], mems,
                      sizeof mems / sizeof mems[0]);
    free(p->cand_k);
    free(p->cand_i);
    free(p);
}

lbk_status lbk_brute_prefilter_bound(lbk_brute *e, const lbk_brute_prefilter_state *p,
                                     const lbk_brute_bound_rows *rows, cl_uint nb, cl_uint nr,
                                     cl_ulong block_first, cl_ulong norm_first)
{
    const cl_uint qt = lbk_brute_blocked_tile(e, nb, nr);
    const cl_ulong ldd = e->ldd;
    LBK_TRY(LBK_KERNEL_ARGS(p->bound, LBK_ARG(rows->queries), LBK_ARG(nb), LBK_ARG(rows->refs),
                            LBK_ARG(block_first), LBK_ARG(nr), LBK_ARG(rows->dim),
                            LBK_ARG(e->dist), LBK_ARG(ldd), LBK_ARG(rows->qnorm),
                            LBK_ARG(rows->rnorm), LBK_ARG(norm_first), LBK_ARG(rows->c),
                            LBK_ARG(qt), LBK_ARG(rows->rscale)));
    return lbk_brute_blocked_launch(e, p->bound, nb, nr, qt);
}

/* The K' candidates per query by lower bound, for every chunk, read back
 * into cand_k / cand_i. */
static lbk_status candidates(lbk_brute *e, const lbk_brute_prefilter_state *p,
                             const float *queries, uint64_t nq)
{
    cl_command_queue queue = lbk_device_queue(e->dev);
    const cl_uint nb = (cl_uint)nq;
    const lbk_brute_bound_rows rows = {e->queries,      e->qnorm,   e->refs,  e->rnorm,
                                       (cl_uint)e->dim, p->bound_c, e->rscale};
    LBK_TRY(lbk_device_cl_check(clEnqueueWriteBuffer(queue, e->queries, CL_FALSE, 0,
                                                     nq * (size_t)e->dim * sizeof(float), queries,
                                                     0, NULL, NULL),
                                "uploading a query batch"));
    LBK_TRY(
        lbk_device_cl_check(clEnqueueWriteBuffer(queue, e->qnorm, CL_FALSE, 0, nq * sizeof(float),
                                                 e->host_qnorm, 0, NULL, NULL),
                            "uploading the query norms"));
    const lbk_brute_bubble_set set = {p->groups, p->final,  p->w, p->kp,
                                      p->best_k, p->best_i, false};
    for (uint64_t c0 = 0; c0 < e->n; c0 += e->chunk) {
        const cl_uint nr = (cl_uint)(e->n - c0 < e->chunk ? e->n - c0 : e->chunk);
        const cl_ulong norm_first = c0 / e->vw;
        cl_ulong block_first;
        LBK_TRY(lbk_brute_chunk_refs(e, c0, nr, &block_first));
        LBK_TRY(lbk_brute_prefilter_bound(e, p, &rows, nb, nr, block_first, norm_first));
        LBK_TRY(lbk_brute_select(e, &set, nb, nr, (cl_uint)c0, c0 > 0));
    }
    const size_t bytes = nq * (size_t)p->kp * 4;
    LBK_TRY(lbk_device_cl_check(
        clEnqueueReadBuffer(queue, p->best_k, CL_FALSE, 0, bytes, p->cand_k, 0, NULL, NULL),
        "reading the prefilter candidates"));
    return lbk_device_cl_check(
        clEnqueueReadBuffer(queue, p->best_i, CL_TRUE, 0, bytes, p->cand_i, 0, NULL, NULL),
        "reading the prefilter candidates");
}

/* On the host (rerank.h): each query's exact K best from its candidates, or
 * its flag for the exact path when the bound cannot prove them complete. */
static void rerank(lbk_brute *e, const lbk_brute_prefilter_state *p, const lbk_brute_batch *b,
                   lbk_brute_handoff *down)
{
    const size_t k = (size_t)e->k, kp = (size_t)p->kp, dim = (size_t)e->dim;
    const double t0 = lbk_timer_now();
    for (uint64_t q = 0; q < b->nq; q++) {
        down->flags[q] = !lbk_rerank_query(&p->rerank, b->queries + q * dim, e->host_qnorm[q],
                                           p->cand_k + q * kp, p->cand_i + q * kp,
                                           b->keys + q * k, b->index + q * k);
        down->count += down->flags[q];
    }
    e->timing.final_s += lbk_timer_now() - t0;
}

/* Rows too large for the bound arithmetic: the whole batch declined. */
static lbk_status run(lbk_brute *e, const lbk_brute_batch *b, lbk_brute_handoff *down)
{
    const lbk_brute_prefilter_state *p = e->prefilter;
    if (!lbk_brute_norms(e, b->queries, b->nq, (size_t)e->dim, e->host_qnorm)) {
        down->declined = true;
        return LBK_OK;
    }
    const lbk_status st = candidates(e, p, b->queries, b->nq);
    lbk_brute_finish(e);
    if (st != LBK_OK)
        return st;
    rerank(e, p, b, down);
    e->timing.prefiltered_queries += b->nq;
    e->timing.fallback_queries += down->count;
    return LBK_OK;
}

static bool applies(const lbk_brute *e) { return e->prefilter != NULL; }

const lbk_brute_path lbk_brute_prefilter_path = {"prefilter", applies, NULL, run};
