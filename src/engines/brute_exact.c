/* The exact path, the last row of the path table: each chunk's distance
 * rows and their selection - the bubble, the sort-merge for large K, or a
 * baseline's selector (brute_select.h). It settles every query it gets.
 * uint8 and int8 shards with L2 or IP on the blocked kernel get their exact
 * integer keys from exact dot products and squared norms (the dot path:
 * lbk_brute_dot_blocked, docs/design.md "Compact reference points"). */
#include "brute_exact_impl.h"

#include "brute_core_impl.h"
#include "device_cl.h"
#include "try.h"

#include <stdio.h>
#include <stdlib.h>

/* Work-items of a sort-merge work-group (at most; a power of two). */
#define SORT_MAX_W 256

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

struct lbk_brute_exact_state {
    cl_kernel dist, groups, final;
    uint32_t w; /* work-items of the selection kernels */
    /* The dot path: the exact int32 squared norms of the shard's rows
     * (padded rows: zero) and of a batch's queries. */
    bool dot;
    cl_mem rnorm, qnorm;
    int32_t *host_qnorm;
};

bool lbk_brute_exact_dot(const lbk_device *dev, lbk_dtype type, lbk_metric metric,
                         lbk_brute_distance distance, lbk_brute_prefilter prefilter)
{
    const bool blocked = distance == LBK_DISTANCE_BLOCKED ||
                         (distance == LBK_DISTANCE_AUTO && !lbk_device_is_gpu(dev));
    return blocked && lbk_dataset_type_integer(type) && prefilter != LBK_PREFILTER_OFF &&
           (metric == LBK_METRIC_L2 || metric == LBK_METRIC_IP);
}

lbk_status lbk_brute_exact_create(const lbk_brute *e, const lbk_brute_params *params,
                                  lbk_brute_exact_state **out)
{
    *out = calloc(1, sizeof **out);
    LBK_FAIL_IF(!*out, LBK_ERR_NOMEM, "out of host memory creating the brute engine");
    (*out)->dot =
        lbk_brute_exact_dot(e->dev, e->dtype, e->metric, params->distance, params->prefilter);
    return LBK_OK;
}

void lbk_brute_exact_needs(const lbk_brute_exact_state *x, lbk_brute_needs *needs)
{
    if (!x->dot)
        return;
    needs->query_bytes += 4;
    needs->row_bytes += 4;
}

/* Sum of squares of integers bounded by 255 in magnitude over at most
 * LBK_INT_KEY_DIM_MAX dimensions: at most 2,130,674,175, an int32. */
static int32_t int_norm(const void *row, lbk_dtype type, size_t dim)
{
    int64_t s = 0;
    for (size_t j = 0; j < dim; j++) {
        const int v =
            type == LBK_DTYPE_UINT8 ? ((const uint8_t *)row)[j] : ((const int8_t *)row)[j];
        s += v * v;
    }
    return (int32_t)s;
}

/* The shard's squared norms, once, onto the device. */
lbk_status lbk_brute_exact_upload(lbk_brute *e, lbk_brute_exact_state *x, const void *raw)
{
    if (!x->dot)
        return LBK_OK;
    const size_t rows = lbk_brute_padded_rows(e, e->n), dim = (size_t)e->dim;
    int32_t *norms = calloc(rows, sizeof *norms);
    LBK_FAIL_IF(!norms, LBK_ERR_NOMEM, "out of host memory for the reference norms");
    for (size_t i = 0; i < (size_t)e->n; i++)
        norms[i] = int_norm((const uint8_t *)raw + i * dim, e->dtype, dim);
    const lbk_status st =
        lbk_brute_device_buffer(e, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, rows * sizeof *norms,
                                norms, "the reference norms", &x->rnorm);
    free(norms);
    return st;
}

lbk_status lbk_brute_exact_alloc(lbk_brute *e, lbk_brute_exact_state *x)
{
    if (!x->dot)
        return LBK_OK;
    const size_t b = (size_t)e->batch;
    LBK_TRY(lbk_brute_device_buffer(e, CL_MEM_READ_ONLY, b * sizeof *x->host_qnorm, NULL,
                                    "the query norms", &x->qnorm));
    x->host_qnorm = malloc(b * sizeof *x->host_qnorm);
    LBK_FAIL_IF(!x->host_qnorm, LBK_ERR_NOMEM, "out of host memory for the query norms");
    return LBK_OK;
}

void lbk_brute_exact_destroy(lbk_brute *e, lbk_brute_exact_state *x)
{
    if (!x)
        return;
    cl_kernel kernels[] = {x->dist, x->groups, x->final};
    cl_mem mems[] = {x->rnorm, x->qnorm};
    lbk_brute_release(e, kernels, sizeof kernels / sizeof kernels[0], mems,
                      sizeof mems / sizeof mems[0]);
    free(x->host_qnorm);
    free(x);
}

/* Build brute_sort.cl (the large-K selection) with work-groups of *w <=
 * limit work-items. */
static lbk_status compile_sort(lbk_brute *e, size_t limit, uint32_t *w, cl_program *program)
{
    uint64_t sw = e->kp2 / 2 < limit ? e->kp2 / 2 : limit;
    if (sw > SORT_MAX_W)
        sw = SORT_MAX_W;
    *w = (uint32_t)(sw ? sw : 1);
    const uint32_t scan = e->kp2 / 2 / *w ? e->kp2 / 2 / *w : 1;
    char options[160];
    snprintf(options, sizeof options,
             "-DLBK_METRIC=%d -DLBK_K=%d -DLBK_KP2=%u -DLBK_SW=%u "
             "-DLBK_SCAN=%u",
             (int)e->metric, e->k, e->kp2, *w, scan);
    return lbk_device_program(e->dev, "brute_sort.cl", options, program);
}

/* The distance kernel, then the selection's: the bubble from the main
 * program, or the sort-merge. */
lbk_status lbk_brute_exact_kernels(lbk_brute *e, lbk_brute_exact_state *x, lbk_brute_fit *fit)
{
    cl_program program;
    uint32_t main_w;
    LBK_TRY(lbk_brute_main_program(e, fit->limit, &main_w, &program));
    const char *dist_name = x->dot       ? "lbk_brute_dot_blocked"
                            : e->blocked ? "lbk_brute_distance_blocked"
                                         : "lbk_brute_distance";
    LBK_TRY(lbk_brute_kernel(e, program, dist_name, &x->dist, &fit->dist));
    const char *groups = "lbk_bubble_groups", *final = "lbk_bubble_final";
    x->w = main_w;
    if (e->sort_select) {
        LBK_TRY(compile_sort(e, fit->limit, &x->w, &program));
        groups = "lbk_sort_groups";
        final = "lbk_sort_final";
    }
    LBK_TRY(lbk_brute_kernel(e, program, groups, &x->groups, &fit->select));
    LBK_TRY(lbk_brute_kernel(e, program, final, &x->final, &fit->select));
    if (x->w > fit->need)
        fit->need = x->w;
    return LBK_OK;
}

/* The K best of a chunk's distance rows, merged into best: the bubble, or
 * the selector that replaces it. */
static lbk_status select_chunk(lbk_brute *e, const lbk_brute_exact_state *x, cl_uint nb,
                               cl_uint nr, cl_uint base, cl_uint use_prev)
{
    if (e->has_selector) {
        const lbk_brute_chunk chunk = {.dist = e->dist,
                                       .ldd = e->ldd,
                                       .nb = nb,
                                       .nr = nr,
                                       .base = base,
                                       .use_prev = use_prev,
                                       .best_k = e->best_k,
                                       .best_i = e->best_i};
        return e->selector.select(e->selector.ctx, e, &chunk);
    }
    const lbk_brute_bubble_set set = {x->groups, x->final,  x->w,          e->k,
                                      e->best_k, e->best_i, e->sort_select};
    return lbk_brute_select(e, &set, nb, nr, base, use_prev);
}

/* Distance rows of nb queries against references [c0, c0 + nr), then their
 * selection. */
static lbk_status exact_chunk(lbk_brute *e, const lbk_brute_exact_state *x, cl_uint nb,
                              uint64_t c0, cl_uint nr)
{
    const cl_uint dim = (cl_uint)e->dim;
    const cl_ulong ldd = e->ldd;
    cl_ulong r_first;
    LBK_TRY(lbk_brute_chunk_refs(e, c0, nr, &r_first));
    if (x->dot) {
        const cl_uint qt = lbk_brute_blocked_tile(e, nb, nr);
        const cl_ulong norm_first = c0 / e->vw;
        LBK_TRY(LBK_KERNEL_ARGS(x->dist, LBK_ARG(e->queries), LBK_ARG(nb), LBK_ARG(e->refs),
                                LBK_ARG(r_first), LBK_ARG(nr), LBK_ARG(dim), LBK_ARG(e->dist),
                                LBK_ARG(ldd), LBK_ARG(x->qnorm), LBK_ARG(x->rnorm),
                                LBK_ARG(norm_first), LBK_ARG(qt)));
        LBK_TRY(lbk_brute_blocked_launch(e, x->dist, nb, nr, qt));
    } else if (e->blocked) {
        const cl_uint qt = lbk_brute_blocked_tile(e, nb, nr);
        const cl_ulong norm_first = c0 / e->vw;
        LBK_TRY(LBK_KERNEL_ARGS(x->dist, LBK_ARG(e->queries), LBK_ARG(nb), LBK_ARG(e->refs),
                                LBK_ARG(r_first), LBK_ARG(nr), LBK_ARG(dim), LBK_ARG(e->dist),
                                LBK_ARG(ldd), LBK_ARG(qt), LBK_ARG(e->rscale),
                                LBK_ARG(norm_first)));
        LBK_TRY(lbk_brute_blocked_launch(e, x->dist, nb, nr, qt));
    } else {
        const cl_ulong scale_first = c0;
        LBK_TRY(LBK_KERNEL_ARGS(x->dist, LBK_ARG(e->queries), LBK_ARG(nb), LBK_ARG(e->refs),
                                LBK_ARG(r_first), LBK_ARG(nr), LBK_ARG(dim), LBK_ARG(e->dist),
                                LBK_ARG(ldd), LBK_ARG(e->rscale), LBK_ARG(scale_first)));
        LBK_TRY(lbk_brute_launch(e, x->dist, LBK_BRUTE_EVENT_DISTANCE,
                                 ceil_div(nr, LBK_BRUTE_DIST_TR) * LBK_BRUTE_DIST_LX,
                                 ceil_div(nb, LBK_BRUTE_DIST_TQ) * LBK_BRUTE_DIST_LY,
                                 LBK_BRUTE_DIST_LX, LBK_BRUTE_DIST_LY));
    }
    return select_chunk(e, x, nb, nr, (cl_uint)c0, c0 > 0);
}

static lbk_status run(lbk_brute *e, const lbk_brute_batch *b, lbk_brute_handoff *down)
{
    (void)down; /* nothing to hand down */
    lbk_status st = LBK_OK;
    const size_t row_bytes = (size_t)e->dim * sizeof(float);
    const lbk_brute_exact_state *x = e->exact;
    if (x->dot) {
        /* The queries are integers within the points' range (checked by
         * lbk_brute_query), so (int) is exact. */
        for (uint64_t q = 0; q < b->nq; q++) {
            int64_t s = 0;
            for (size_t j = 0; j < (size_t)e->dim; j++) {
                const int v = (int)b->queries[q * (size_t)e->dim + j];
                s += v * v;
            }
            x->host_qnorm[q] = (int32_t)s;
        }
        LBK_TRY_GOTO(st, lbk_device_cl_check(clEnqueueWriteBuffer(lbk_device_queue(e->dev),
                                                                  x->qnorm, CL_FALSE, 0,
                                                                  b->nq * sizeof *x->host_qnorm,
                                                                  x->host_qnorm, 0, NULL, NULL),
                                             "uploading the query norms"));
    }
    LBK_TRY_GOTO(st, lbk_device_cl_check(
                         clEnqueueWriteBuffer(lbk_device_queue(e->dev), e->queries, CL_TRUE, 0,
                                              b->nq * row_bytes, b->queries, 0, NULL, NULL),
                         "uploading a query batch"));
    for (uint64_t c0 = 0; c0 < e->n; c0 += e->chunk) {
        const uint64_t nr = e->n - c0 < e->chunk ? e->n - c0 : e->chunk;
        LBK_TRY_GOTO(st, exact_chunk(e, x, (cl_uint)b->nq, c0, (cl_uint)nr));
    }
    st = lbk_brute_read_best(e, b->nq, b->keys, b->index, CL_TRUE);
cleanup:
    lbk_brute_finish(e);
    return st;
}

static bool applies(const lbk_brute *e)
{
    (void)e;
    return true;
}

const lbk_brute_path lbk_brute_exact_path = {"exact", applies, NULL, run};
