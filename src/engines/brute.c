#include "brute.h"

#include "device_cl.h"
#include "lbk_shared.h"
#include "log.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Default groups: enough work-groups to keep every compute unit busy
 * (BRUTE_GROUPS_PER_CU each), at most the paper's G = 32. On the 2-core PoCL
 * device a small batch wants G = 1, where G = 32 was 10x slower
 * (bench/results/brute.md). */
#define BRUTE_MAX_DEFAULT_GROUPS 32
#define BRUTE_GROUPS_PER_CU 8
/* Batches below this many queries make kernel launches dominate, so the
 * reference chunk shrinks before the batch does. */
#define BRUTE_MIN_BATCH 256
#define BRUTE_MAX_BATCH 65536
/* Beyond this many bytes of distance matrix a larger batch gains nothing
 * (launches are already amortised) and costs first-touch page faults and
 * cache misses: Fashion-MNIST ran about 10 % faster with 1118-query batches
 * than with 8947. */
#define BRUTE_DIST_TARGET_BYTES (256u << 20)
/* Stream elements the bubble work-group filters per block (all work-items together). */
#define BRUTE_SCAN_BLOCK 256

/* Distance tile: LX x LY work-items, each RB references x QB queries, TD
 * dimensions staged at a time. LX is the direction PoCL vectorises. */
#define DIST_LX 16
#define DIST_LY 8
#define DIST_RB 2
#define DIST_QB 4
#define DIST_TD 32
#define DIST_TR (DIST_LX * DIST_RB)
#define DIST_TQ (DIST_LY * DIST_QB)
/* Blocked (CPU) distance kernel: VQB queries x VRB blocks of 16 references
 * per work-item, up to VLY work-items per group. Groups of 8 sharing a block
 * of references ran Fashion-MNIST 1.5x faster than groups of 4, but with a
 * 32-query batch half of them would compute clamped copies of the last
 * query, so small batches get smaller groups (blocked_launch). */
#ifndef DIST_VQB
#define DIST_VQB 8
#endif
#ifndef DIST_VRB
#define DIST_VRB 2
#endif
#ifndef DIST_VLY
#define DIST_VLY 8
#endif
#define DIST_VROWS (16 * DIST_VRB)
/* Prefilter: used up to this K, with K' = K + max(K, 8) candidates: the
 * bound is about 4 n u of the keys (n = dim, u = 2^-24), so the K'-th
 * candidate rarely sits that close to the K-th, and a short K' chain keeps
 * the selection cheap. */
#define PREFILTER_K_MAX 64
#define PREFILTER_MIN_DIM 16

enum { EV_DISTANCE, EV_SELECT, EV_FINAL };

typedef struct {
    cl_event event;
    int kind;
} timed_event;

struct lbk_brute {
    lbk_device *dev;
    int k;
    lbk_metric metric;
    lbk_brute_select select;
    int dim;
    uint64_t n;
    bool resident;           /* whole shard on the device; else chunks uploaded per batch */
    bool blocked;            /* blocked distance kernel and [block][dim][16] layout */
    float *host_refs;        /* device-layout copy of the shard when not resident */
    uint64_t chunk;          /* reference rows per distance matrix */
    size_t ldd;              /* distance matrix row stride */
    uint32_t groups;         /* bubble groups per query (before clamping to a chunk) */
    bool auto_groups;        /* groups chosen per batch from the compute units */
    uint32_t bubble_w;       /* work-items of the bubble kernels */
    uint32_t sort_s, sort_w;
    uint64_t batch;
    cl_kernel k_dist, k_groups, k_final, k_sort_matrix, k_sort_lists;
    cl_mem refs, queries, dist, surv_k, surv_i, surv2_k, surv2_i, best_k, best_i;
    /* L2 prefilter (see brute.h): K' = kp candidates by lower bound. */
    bool prefilter;
    int kp;
    uint32_t bubble_wp;
    float bound_c;
    cl_kernel k_bound, k_groups_p, k_final_p, k_rerank;
    cl_mem qnorm, rnorm, bestp_k, bestp_i, flags, refs_rows;
    float *host_qnorm;       /* batch */
    uint32_t *host_flags;    /* batch */
    float *fb_queries;       /* batch x dim: queries sent back to the exact path */
    float *fb_keys;          /* batch x K */
    uint32_t *fb_index;
    timed_event *events;
    size_t event_count, event_cap;
    lbk_brute_timing timing;
};

static uint32_t next_pow2(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Selection scratch per query for a chunk of `rows` references, in bytes. */
static uint64_t select_bytes(const lbk_brute *e, uint64_t rows)
{
    if (e->select == LBK_SELECT_BUBBLE)
        return (uint64_t)min_u64(e->groups, rows ? rows : 1) *
               (uint64_t)(e->prefilter ? e->kp : e->k) * 8;
    /* Two ping-pong buffers of the first pass's survivors. */
    return 2 * ceil_div(rows ? rows : 1, e->sort_s) * (uint64_t)e->k * 8;
}

static uint64_t query_bytes(const lbk_brute *e, uint64_t rows)
{
    const uint64_t ldd = lbk_round_up(rows ? rows : 1, DIST_TR);
    const uint64_t prefilter = e->prefilter ? 8 + (uint64_t)e->kp * 8 : 0;
    return (uint64_t)e->dim * 4 + ldd * 4 + (uint64_t)e->k * 8 + select_bytes(e, rows) +
           prefilter;
}

/* Choose residency, chunk and batch from the budget: prefer the whole shard
 * per distance matrix; shrink the chunk while the batch would be too small
 * to amortise launches and the distance rows (not the selection scratch)
 * are what take the room. */
static lbk_status plan_memory(lbk_brute *e, uint64_t budget, uint64_t max_alloc)
{
    const uint64_t row_bytes = (uint64_t)e->dim * 4;
    /* The prefilter adds the norms and a row-major copy for the re-rank,
     * whose scattered rows the blocked layout would serve one cache line per
     * coordinate. */
    const uint64_t all = lbk_round_up(e->n, DIST_VROWS) * (row_bytes + (e->prefilter ? 4 : 0)) +
                         (e->prefilter ? e->n * row_bytes : 0);
    e->resident = all <= budget / 2 && all <= max_alloc;
    e->chunk = e->resident ? e->n : min_u64(e->n, min_u64(budget / 4, max_alloc) / row_bytes);
    if (e->chunk < e->n) /* whole blocks, rounded down to stay within the budget */
        e->chunk = e->chunk > DIST_VROWS ? e->chunk / DIST_VROWS * DIST_VROWS : DIST_VROWS;
    if (e->chunk > e->n)
        e->chunk = e->n;
    uint64_t prev_chunk = e->chunk;
    for (;;) {
        const uint64_t ref_bytes =
            e->resident ? all : lbk_round_up(e->chunk, DIST_VROWS) * row_bytes;
        const uint64_t ldd = lbk_round_up(e->chunk, DIST_TR);
        uint64_t batch = budget > ref_bytes ? (budget - ref_bytes) / query_bytes(e, e->chunk) : 0;
        batch = min_u64(batch, max_alloc / (ldd * 4));
        batch = min_u64(batch, max_alloc / (select_bytes(e, e->chunk) / 2 + 1));
        batch = min_u64(batch, max_alloc / (row_bytes + 1));
        batch = min_u64(batch, BRUTE_MAX_BATCH);
        batch = min_u64(batch, BRUTE_DIST_TARGET_BYTES / (ldd * 4) > BRUTE_MIN_BATCH
                                   ? BRUTE_DIST_TARGET_BYTES / (ldd * 4)
                                   : BRUTE_MIN_BATCH);
        const bool rows_dominate = ldd * 4 > select_bytes(e, e->chunk);
        if ((batch >= BRUTE_MIN_BATCH || e->chunk <= DIST_VROWS || !rows_dominate) && batch > 0) {
            e->batch = batch;
            e->ldd = (size_t)ldd;
            return LBK_OK;
        }
        if (e->chunk <= DIST_VROWS) {
            lbk_error("brute engine: a device memory budget of %llu bytes cannot hold even one "
                      "query of dimension %d with K = %d; raise device.memory_mb",
                      (unsigned long long)budget, e->dim, e->k);
            return LBK_ERR_CONFIG;
        }
        /* Chunks start on whole reference blocks of the blocked layout. */
        e->chunk = min_u64(e->n, lbk_round_up((e->chunk + 1) / 2, DIST_VROWS));
        if (e->chunk == prev_chunk) {
            lbk_error("brute engine: a device memory budget of %llu bytes is too small for "
                      "dimension %d with K = %d; raise device.memory_mb",
                      (unsigned long long)budget, e->dim, e->k);
            return LBK_ERR_CONFIG;
        }
        prev_chunk = e->chunk;
    }
}

/* Rows the device copy of `rows` references occupies: the blocked layout is
 * padded with zero rows to whole work-item blocks. */
static size_t padded_rows(const lbk_brute *e, uint64_t rows)
{
    return (size_t)(e->blocked ? lbk_round_up(rows, DIST_VROWS) : rows);
}

/* The shard in the distance kernel's layout: row-major for the tiled kernel
 * (then `points` itself), [block][dim][16] for the blocked one. */
static lbk_status device_layout(const lbk_brute *e, const float *points, float **out,
                                bool *owned)
{
    *owned = false;
    *out = (float *)points;
    if (!e->blocked)
        return LBK_OK;
    const size_t rows = padded_rows(e, e->n), dim = (size_t)e->dim;
    float *x = calloc(rows * dim, sizeof *x);
    if (!x) {
        lbk_error("out of host memory arranging the reference shard (%.1f MiB)",
                  (double)(rows * dim * sizeof *x) / (1024.0 * 1024.0));
        return LBK_ERR_NOMEM;
    }
    for (size_t i = 0; i < e->n; i++)
        for (size_t j = 0; j < dim; j++)
            x[(i / 16 * dim + j) * 16 + i % 16] = points[i * dim + j];
    *out = x;
    *owned = true;
    return LBK_OK;
}

/* Build brute.cl for chain length k (kp > 0 adds the prefilter re-rank for
 * K = k, K' = kp) with work-groups of at most `limit` work-items. */
static lbk_status compile(lbk_brute *e, int k, int kp, size_t limit, uint32_t *w,
                          cl_program *program)
{
    const uint32_t b = (uint32_t)ceil_div((uint64_t)k, limit);
    *w = (uint32_t)ceil_div((uint64_t)k, b);
    uint32_t scan = BRUTE_SCAN_BLOCK / *w;
    if (scan == 0)
        scan = 1;
    char kp_option[32] = "";
    if (kp > 0)
        snprintf(kp_option, sizeof kp_option, " -DLBK_KP=%d", kp);
    char options[256];
    snprintf(options, sizeof options,
             "-DLBK_METRIC=%d -DLBK_K=%d -DLBK_W=%u -DLBK_B=%u -DLBK_SCAN=%u "
             "-DLBK_SORT_S=%u -DLBK_SORT_W=%u -DLBK_LX=%d -DLBK_LY=%d -DLBK_RB=%d "
             "-DLBK_QB=%d -DLBK_TD=%d -DLBK_VQB=%d -DLBK_VRB=%d%s",
             (int)e->metric, k, *w, b, scan, e->sort_s, e->sort_w, DIST_LX, DIST_LY, DIST_RB,
             DIST_QB, DIST_TD, DIST_VQB, DIST_VRB, kp_option);
    return lbk_device_program(e->dev, "brute.cl", options, program);
}

/* Create (or re-create) a kernel and lower *fit to its work-group limit. */
static lbk_status make_kernel(lbk_brute *e, cl_program program, const char *name,
                              cl_kernel *slot, size_t *fit)
{
    if (*slot) {
        clReleaseKernel(*slot);
        *slot = NULL;
    }
    lbk_status st = lbk_device_kernel(program, name, slot);
    if (st != LBK_OK)
        return st;
    size_t wg = 0;
    clGetKernelWorkGroupInfo(*slot, lbk_device_id(e->dev), CL_KERNEL_WORK_GROUP_SIZE, sizeof wg,
                             &wg, NULL);
    if (wg > 0 && wg < *fit)
        *fit = wg;
    return LBK_OK;
}

static lbk_status build_kernels(lbk_brute *e, int work_group_limit)
{
    lbk_status st = LBK_OK;
    size_t dev_wg = 0;
    st = lbk_cl_check(clGetDeviceInfo(lbk_device_id(e->dev), CL_DEVICE_MAX_WORK_GROUP_SIZE,
                                      sizeof dev_wg, &dev_wg, NULL),
                      "querying the device's maximum work-group size");
    if (st != LBK_OK)
        goto cleanup;
    /* A kernel's own limit can be lower than the device's (registers, local
     * memory): learn it from the first build and rebuild with it. */
    size_t limit = dev_wg;
    if (work_group_limit > 0 && (size_t)work_group_limit < limit)
        limit = (size_t)work_group_limit;
    for (int attempt = 0; attempt < 4; attempt++) {
        e->sort_w = (uint32_t)min_u64(e->sort_s / 2, limit);
        cl_program program;
        if ((st = compile(e, e->k, e->prefilter ? e->kp : 0, limit, &e->bubble_w, &program)) !=
            LBK_OK)
            goto cleanup;
        /* The distance kernels have fixed shapes; only the selection kernels adapt. */
        size_t dist_fit = SIZE_MAX, fit = limit;
        const char *dist_name = e->blocked ? "lbk_brute_distance_blocked" : "lbk_brute_distance";
        if ((st = make_kernel(e, program, dist_name, &e->k_dist, &dist_fit)) != LBK_OK ||
            (st = make_kernel(e, program, "lbk_bubble_groups", &e->k_groups, &fit)) != LBK_OK ||
            (st = make_kernel(e, program, "lbk_bubble_final", &e->k_final, &fit)) != LBK_OK ||
            (st = make_kernel(e, program, "lbk_sort_matrix", &e->k_sort_matrix, &fit)) !=
                LBK_OK ||
            (st = make_kernel(e, program, "lbk_sort_lists", &e->k_sort_lists, &fit)) != LBK_OK)
            goto cleanup;
        size_t need = e->bubble_w > e->sort_w ? e->bubble_w : e->sort_w;
        if (e->prefilter) {
            if ((st = make_kernel(e, program, "lbk_brute_bound_blocked", &e->k_bound,
                                  &dist_fit)) != LBK_OK ||
                (st = make_kernel(e, program, "lbk_brute_rerank", &e->k_rerank, &fit)) != LBK_OK)
                goto cleanup;
            cl_program pp;
            if ((st = compile(e, e->kp, 0, limit, &e->bubble_wp, &pp)) != LBK_OK)
                goto cleanup;
            if ((st = make_kernel(e, pp, "lbk_bubble_groups", &e->k_groups_p, &fit)) != LBK_OK ||
                (st = make_kernel(e, pp, "lbk_bubble_final", &e->k_final_p, &fit)) != LBK_OK)
                goto cleanup;
            if (e->bubble_wp > need)
                need = e->bubble_wp;
        }
        const size_t dist_need = e->blocked ? DIST_VLY : DIST_LX * DIST_LY;
        if (dist_fit < dist_need) {
            lbk_error("brute engine: the distance kernel needs work-groups of %zu work-items; "
                      "%s allows %zu",
                      dist_need, lbk_device_description(e->dev), dist_fit);
            st = LBK_ERR_DEVICE;
            goto cleanup;
        }
        if (fit >= need)
            goto cleanup;
        limit = fit;
    }
    lbk_error("brute engine: no work-group size fits the kernels on %s",
              lbk_device_description(e->dev));
    st = LBK_ERR_DEVICE;
cleanup:
    return st;
}

static lbk_status alloc_buffers(lbk_brute *e, const float *device_layout)
{
    lbk_status st = LBK_OK;
    const size_t row_bytes = (size_t)e->dim * 4;
    const size_t b = (size_t)e->batch;
    const size_t sel = (size_t)select_bytes(e, e->chunk) / 8; /* (key, index) entries */
    if (e->resident)
        st = lbk_device_buffer(e->dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               padded_rows(e, e->n) * row_bytes, (void *)device_layout,
                               "the reference shard", &e->refs);
    else
        st = lbk_device_buffer(e->dev, CL_MEM_READ_ONLY, padded_rows(e, e->chunk) * row_bytes,
                               NULL, "a reference chunk", &e->refs);
    if (st != LBK_OK)
        goto cleanup;
    const size_t surv = e->select == LBK_SELECT_BUBBLE ? sel : sel / 2;
    struct {
        cl_mem *mem;
        size_t bytes;
        cl_mem_flags flags;
        const char *what;
    } want[] = {
        {&e->queries, b * row_bytes, CL_MEM_READ_ONLY, "a query batch"},
        {&e->dist, b * e->ldd * 4, CL_MEM_READ_WRITE, "the distance matrix"},
        {&e->surv_k, b * surv * 4, CL_MEM_READ_WRITE, "the selection survivors"},
        {&e->surv_i, b * surv * 4, CL_MEM_READ_WRITE, "the selection survivors"},
        {&e->surv2_k, e->select == LBK_SELECT_BUBBLE ? 0 : b * surv * 4, CL_MEM_READ_WRITE,
         "the sort survivors"},
        {&e->surv2_i, e->select == LBK_SELECT_BUBBLE ? 0 : b * surv * 4, CL_MEM_READ_WRITE,
         "the sort survivors"},
        {&e->best_k, b * (size_t)e->k * 4, CL_MEM_READ_WRITE, "the K best keys"},
        {&e->best_i, b * (size_t)e->k * 4, CL_MEM_READ_WRITE, "the K best indices"},
        {&e->qnorm, e->prefilter ? b * 4 : 0, CL_MEM_READ_ONLY, "the query norms"},
        {&e->bestp_k, e->prefilter ? b * (size_t)e->kp * 4 : 0, CL_MEM_READ_WRITE,
         "the prefilter candidates"},
        {&e->bestp_i, e->prefilter ? b * (size_t)e->kp * 4 : 0, CL_MEM_READ_WRITE,
         "the prefilter candidates"},
        {&e->flags, e->prefilter ? b * 4 : 0, CL_MEM_READ_WRITE, "the prefilter flags"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        st = lbk_device_buffer(e->dev, want[i].flags, want[i].bytes, NULL, want[i].what,
                               want[i].mem);
        if (st != LBK_OK)
            goto cleanup;
    }
    if (e->prefilter) {
        e->host_qnorm = malloc(b * sizeof *e->host_qnorm);
        e->host_flags = malloc(b * sizeof *e->host_flags);
        e->fb_queries = malloc(b * row_bytes);
        e->fb_keys = malloc(b * (size_t)e->k * sizeof *e->fb_keys);
        e->fb_index = malloc(b * (size_t)e->k * sizeof *e->fb_index);
        if (!e->host_qnorm || !e->host_flags || !e->fb_queries || !e->fb_keys || !e->fb_index) {
            lbk_error("out of host memory for the prefilter's batch buffers");
            st = LBK_ERR_NOMEM;
            goto cleanup;
        }
    }
cleanup:
    return st;
}

/* Squared norms in double, rounded to float: their error is far inside the
 * bound. Returns the largest. */
static double squared_norms(const float *x, size_t rows, int dim, float *out)
{
    double largest = 0.0;
    for (size_t i = 0; i < rows; i++) {
        double s = 0.0;
        for (int j = 0; j < dim; j++)
            s += (double)x[i * dim + j] * x[i * dim + j];
        out[i] = (float)s;
        if (s > largest)
            largest = s;
    }
    return largest;
}

/* c in L(r) = a(r) - c S and U(r) = L(r) + 2 c S, S = |q|^2 + |r|^2, with u =
 * 2^-24 and n = dim: the dot product with fused multiply-adds in any order is
 * off by at most gamma_n sum|q_j r_j| <= gamma_n S / 2, the norms by u S, the
 * two final operations of a(r) by about 3 u S, and the exact key (a
 * sequential sum of n non-negative rounded squares, itself <= 2 S) by
 * gamma_(n+1) 2 S; together below (4 n + 20) u S for n u << 1. The extra 44 u
 * and the 5 % cover the roundings of computing L and U themselves. */
static float prefilter_bound(int dim)
{
    return (float)((4.0 * dim + 64.0) * ldexp(1.0, -24) * 1.05);
}

lbk_status lbk_brute_create(lbk_device *dev, const lbk_dataset *reference,
                            const lbk_brute_params *params, lbk_brute **out)
{
    lbk_status st = LBK_OK;
    lbk_brute *e = NULL;
    float *layout = NULL;
    bool layout_owned = false;

    *out = NULL;
    if (params->k < 1) {
        lbk_error("K = %d: the brute engine needs K >= 1", params->k);
        st = LBK_ERR_CONFIG;
        goto cleanup;
    }
    if (params->k > LBK_BRUTE_K_MAX) {
        lbk_error("K = %d exceeds the brute engine's maximum %d", params->k, LBK_BRUTE_K_MAX);
        st = LBK_ERR_CONFIG;
        goto cleanup;
    }
    if (params->groups < 0) {
        lbk_error("brute engine: %d groups per query; must be positive (0 = default)",
                  params->groups);
        st = LBK_ERR_CONFIG;
        goto cleanup;
    }
    if (reference->rows >= LBK_NO_INDEX) {
        lbk_error("brute engine: a shard of %llu rows exceeds the %u rows a 32-bit local index "
                  "can address; use more ranks",
                  (unsigned long long)reference->rows, LBK_NO_INDEX - 1);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    if (reference->dim < 1) {
        lbk_error("brute engine: reference dimension %d; must be at least 1", reference->dim);
        st = LBK_ERR_INPUT;
        goto cleanup;
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        lbk_error("out of host memory creating the brute engine");
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    e->dev = dev;
    e->k = params->k;
    e->metric = params->metric;
    e->select = params->select;
    e->dim = reference->dim;
    e->n = reference->rows;
    e->auto_groups = params->groups == 0;
    e->groups = params->groups > 0 ? (uint32_t)params->groups : BRUTE_MAX_DEFAULT_GROUPS;
    e->blocked = params->distance == LBK_DISTANCE_BLOCKED ||
                 (params->distance == LBK_DISTANCE_AUTO && !lbk_device_is_gpu(dev));
    e->prefilter = e->blocked && e->metric == LBK_METRIC_L2 && e->select == LBK_SELECT_BUBBLE &&
                   e->k <= PREFILTER_K_MAX &&
                   (params->prefilter == LBK_PREFILTER_ON ||
                    (params->prefilter == LBK_PREFILTER_AUTO && e->dim >= PREFILTER_MIN_DIM));
    e->kp = e->k + (e->k > 8 ? e->k : 8);
    e->bound_c = prefilter_bound(e->dim);
    e->sort_s = next_pow2((uint32_t)(2 * e->k));
    if (e->sort_s < 256)
        e->sort_s = 256;
    if (e->n == 0) {
        e->batch = BRUTE_MAX_BATCH;
        *out = e;
        e = NULL;
        goto cleanup;
    }
    uint64_t budget = params->memory_budget;
    if (budget == 0)
        budget = lbk_device_global_mem(dev) / 2;
    if ((st = plan_memory(e, budget, lbk_device_max_alloc(dev))) != LBK_OK)
        goto cleanup;
    /* The re-rank reads any candidate's row, so the prefilter needs a resident
     * shard; without its extra copies the shard may still fit. */
    if (e->prefilter && !e->resident) {
        e->prefilter = false;
        if ((st = plan_memory(e, budget, lbk_device_max_alloc(dev))) != LBK_OK)
            goto cleanup;
    }
    if (e->prefilter) {
        const size_t rows = padded_rows(e, e->n);
        float *norms = calloc(rows, sizeof *norms);
        if (!norms) {
            lbk_error("out of host memory for the reference norms");
            st = LBK_ERR_NOMEM;
            goto cleanup;
        }
        const double largest = squared_norms(reference->points, e->n, e->dim, norms);
        /* Far from overflow the bound arithmetic is safe; beyond, use the exact path. */
        if (largest < 1e30)
            st = lbk_device_buffer(dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   rows * sizeof *norms, norms, "the reference norms", &e->rnorm);
        else
            e->prefilter = false;
        free(norms);
        if (st == LBK_OK && e->prefilter)
            st = lbk_device_buffer(dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   (size_t)e->n * (size_t)e->dim * sizeof(float),
                                   reference->points, "the reference rows", &e->refs_rows);
        if (st != LBK_OK)
            goto cleanup;
    }
    if ((st = device_layout(e, reference->points, &layout, &layout_owned)) != LBK_OK)
        goto cleanup;
    if (!e->resident) {
        const size_t bytes = padded_rows(e, e->n) * (size_t)e->dim * sizeof(float);
        if (layout_owned) {
            e->host_refs = layout;
            layout_owned = false;
        } else if ((e->host_refs = malloc(bytes)) != NULL) {
            memcpy(e->host_refs, layout, bytes);
        } else {
            lbk_error("out of host memory keeping the reference shard (%.1f MiB) for chunked "
                      "upload",
                      (double)bytes / (1024.0 * 1024.0));
            st = LBK_ERR_NOMEM;
            goto cleanup;
        }
    }
    if ((st = build_kernels(e, params->work_group_limit)) != LBK_OK)
        goto cleanup;
    if ((st = alloc_buffers(e, layout)) != LBK_OK)
        goto cleanup;
    *out = e;
    e = NULL;
cleanup:
    if (layout_owned)
        free(layout);
    lbk_brute_destroy(e);
    return st;
}

uint64_t lbk_brute_max_batch(const lbk_brute *engine) { return engine->batch; }

uint64_t lbk_brute_chunk_rows(const lbk_brute *engine) { return engine->chunk; }

static lbk_status launch(lbk_brute *e, cl_kernel kernel, const char *name, int kind, size_t g0,
                         size_t g1, size_t l0, size_t l1)
{
    lbk_status st = LBK_OK;
    if (e->event_count == e->event_cap) {
        const size_t cap = e->event_cap ? 2 * e->event_cap : 64;
        timed_event *grown = realloc(e->events, cap * sizeof *grown);
        if (!grown) {
            lbk_error("out of host memory recording kernel events");
            st = LBK_ERR_NOMEM;
            goto cleanup;
        }
        e->events = grown;
        e->event_cap = cap;
    }
    const size_t global[2] = {g0, g1}, local[2] = {l0, l1};
    cl_event ev = NULL;
    cl_int err = clEnqueueNDRangeKernel(lbk_device_queue(e->dev), kernel, 2, NULL, global, local,
                                        0, NULL, &ev);
    if (err != CL_SUCCESS) {
        lbk_error("launching kernel %s (%zu x %zu work-items): OpenCL error %s", name, g0, g1,
                  lbk_cl_error_name(err));
        st = LBK_ERR_DEVICE;
        goto cleanup;
    }
    e->events[e->event_count].event = ev;
    e->events[e->event_count].kind = kind;
    e->event_count++;
cleanup:
    return st;
}

/* Called once the queue is idle: add each kernel's profiled time to its kind. */
static void collect_events(lbk_brute *e)
{
    for (size_t i = 0; i < e->event_count; i++) {
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(e->events[i].event, CL_PROFILING_COMMAND_START, sizeof t0, &t0,
                                NULL);
        clGetEventProfilingInfo(e->events[i].event, CL_PROFILING_COMMAND_END, sizeof t1, &t1,
                                NULL);
        const double s = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
        if (e->events[i].kind == EV_DISTANCE)
            e->timing.distance_s += s;
        else if (e->events[i].kind == EV_SELECT)
            e->timing.select_s += s;
        else
            e->timing.final_s += s;
        clReleaseEvent(e->events[i].event);
    }
    e->event_count = 0;
}

/* One bubble selection set: kernels built for chain length k. */
typedef struct {
    cl_kernel groups, final;
    uint32_t w;
    int k;
    cl_mem best_k, best_i;
} bubble_set;

/* Launch a blocked distance or bound kernel over nb queries x nr references. */
static lbk_status blocked_launch(lbk_brute *e, cl_kernel kernel, const char *name, cl_uint nb,
                                 cl_uint nr)
{
    const size_t items = ceil_div(nb, DIST_VQB);
    const size_t ly = items < DIST_VLY ? items : DIST_VLY;
    return launch(e, kernel, name, EV_DISTANCE, ceil_div(nr, DIST_VROWS),
                  lbk_round_up(items, ly), 1, ly);
}

static lbk_status select_bubble(lbk_brute *e, const bubble_set *set, cl_uint nb, cl_uint nr,
                                cl_uint base, cl_uint use_prev)
{
    lbk_status st = LBK_OK;
    const cl_ulong ldd = e->ldd;
    uint64_t want = e->groups;
    if (e->auto_groups) {
        const uint64_t target = (uint64_t)BRUTE_GROUPS_PER_CU * lbk_device_compute_units(e->dev);
        want = min_u64(BRUTE_MAX_DEFAULT_GROUPS, ceil_div(target, nb));
    }
    /* No empty groups: they would only feed pads to the final kernel. */
    const cl_uint groups0 = (cl_uint)min_u64(want, nr);
    const cl_uint group_len = (cl_uint)ceil_div(nr, groups0);
    const cl_uint groups = (cl_uint)ceil_div(nr, group_len);
    const cl_uint count = groups * (cl_uint)set->k;
    st = lbk_kernel_args(set->groups, "lbk_bubble_groups", 7, sizeof(cl_mem), &e->dist,
                         sizeof ldd, &ldd, sizeof nr, &nr, sizeof group_len, &group_len,
                         sizeof base, &base, sizeof(cl_mem), &e->surv_k, sizeof(cl_mem),
                         &e->surv_i);
    if (st != LBK_OK)
        goto cleanup;
    st = launch(e, set->groups, "lbk_bubble_groups", EV_SELECT, (size_t)groups * set->w, nb,
                set->w, 1);
    if (st != LBK_OK)
        goto cleanup;
    st = lbk_kernel_args(set->final, "lbk_bubble_final", 6, sizeof(cl_mem), &e->surv_k,
                         sizeof(cl_mem), &e->surv_i, sizeof count, &count, sizeof use_prev,
                         &use_prev, sizeof(cl_mem), &set->best_k, sizeof(cl_mem), &set->best_i);
    if (st != LBK_OK)
        goto cleanup;
    st = launch(e, set->final, "lbk_bubble_final", EV_FINAL, set->w, nb, set->w, 1);
cleanup:
    return st;
}

/* CUKNN-style: sort S-blocks of the distance row, keep each block's K
 * smallest, repeat on the survivors until one block holds them and the
 * previous chunks' best. */
static lbk_status select_sort(lbk_brute *e, cl_uint nb, cl_uint nr, cl_uint base,
                              cl_uint use_prev)
{
    lbk_status st = LBK_OK;
    const cl_ulong ldd = e->ldd;
    const cl_uint k = (cl_uint)e->k;
    cl_uint blocks = (cl_uint)ceil_div(nr, e->sort_s);
    st = lbk_kernel_args(e->k_sort_matrix, "lbk_sort_matrix", 6, sizeof(cl_mem), &e->dist,
                         sizeof ldd, &ldd, sizeof nr, &nr, sizeof base, &base, sizeof(cl_mem),
                         &e->surv_k, sizeof(cl_mem), &e->surv_i);
    if (st != LBK_OK)
        goto cleanup;
    st = launch(e, e->k_sort_matrix, "lbk_sort_matrix", EV_SELECT, (size_t)blocks * e->sort_w,
                nb, e->sort_w, 1);
    if (st != LBK_OK)
        goto cleanup;
    cl_uint count = blocks * k;
    cl_mem in_k = e->surv_k, in_i = e->surv_i, out_k = e->surv2_k, out_i = e->surv2_i;
    const cl_uint no_prev = 0;
    while (count + k > e->sort_s) {
        blocks = (cl_uint)ceil_div(count, e->sort_s);
        st = lbk_kernel_args(e->k_sort_lists, "lbk_sort_lists", 8, sizeof(cl_mem), &in_k,
                             sizeof(cl_mem), &in_i, sizeof count, &count, sizeof no_prev,
                             &no_prev, sizeof(cl_mem), &e->best_k, sizeof(cl_mem), &e->best_i,
                             sizeof(cl_mem), &out_k, sizeof(cl_mem), &out_i);
        if (st != LBK_OK)
            goto cleanup;
        st = launch(e, e->k_sort_lists, "lbk_sort_lists", EV_SELECT,
                    (size_t)blocks * e->sort_w, nb, e->sort_w, 1);
        if (st != LBK_OK)
            goto cleanup;
        count = blocks * k;
        cl_mem tk = in_k, ti = in_i;
        in_k = out_k;
        in_i = out_i;
        out_k = tk;
        out_i = ti;
    }
    st = lbk_kernel_args(e->k_sort_lists, "lbk_sort_lists", 8, sizeof(cl_mem), &in_k,
                         sizeof(cl_mem), &in_i, sizeof count, &count, sizeof use_prev, &use_prev,
                         sizeof(cl_mem), &e->best_k, sizeof(cl_mem), &e->best_i, sizeof(cl_mem),
                         &e->best_k, sizeof(cl_mem), &e->best_i);
    if (st != LBK_OK)
        goto cleanup;
    st = launch(e, e->k_sort_lists, "lbk_sort_lists", EV_FINAL, e->sort_w, nb, e->sort_w, 1);
cleanup:
    return st;
}

static lbk_status run_exact(lbk_brute *e, const float *queries, uint64_t nq, float *keys,
                            uint32_t *index)
{
    lbk_status st = LBK_OK;
    cl_command_queue queue = lbk_device_queue(e->dev);
    const size_t row_bytes = (size_t)e->dim * sizeof(float);
    const cl_uint nb = (cl_uint)nq, dim = (cl_uint)e->dim;

    st = lbk_cl_check(clEnqueueWriteBuffer(queue, e->queries, CL_TRUE, 0, nq * row_bytes,
                                           queries, 0, NULL, NULL),
                      "uploading a query batch");
    if (st != LBK_OK)
        goto cleanup;
    for (uint64_t c0 = 0; c0 < e->n; c0 += e->chunk) {
        const cl_uint nr = (cl_uint)min_u64(e->chunk, e->n - c0);
        cl_ulong r_first = c0;
        if (!e->resident) {
            /* Blocking: the previous chunk's kernels must be done with the buffer,
             * which the in-order queue guarantees, and the host copy stays valid. */
            st = lbk_cl_check(clEnqueueWriteBuffer(queue, e->refs, CL_TRUE, 0,
                                                   padded_rows(e, nr) * row_bytes,
                                                   e->host_refs + c0 * e->dim, 0, NULL, NULL),
                              "uploading a reference chunk");
            if (st != LBK_OK)
                goto cleanup;
            r_first = 0;
        }
        const cl_ulong ldd = e->ldd;
        if (e->blocked)
            r_first /= 16; /* the kernel counts whole blocks */
        st = lbk_kernel_args(e->k_dist, "lbk_brute_distance", 8, sizeof(cl_mem), &e->queries,
                             sizeof nb, &nb, sizeof(cl_mem), &e->refs, sizeof r_first, &r_first,
                             sizeof nr, &nr, sizeof dim, &dim, sizeof(cl_mem), &e->dist,
                             sizeof ldd, &ldd);
        if (st != LBK_OK)
            goto cleanup;
        if (e->blocked)
            st = blocked_launch(e, e->k_dist, "lbk_brute_distance_blocked", nb, nr);
        else
            st = launch(e, e->k_dist, "lbk_brute_distance", EV_DISTANCE,
                        ceil_div(nr, DIST_TR) * DIST_LX, ceil_div(nb, DIST_TQ) * DIST_LY,
                        DIST_LX, DIST_LY);
        if (st != LBK_OK)
            goto cleanup;
        const cl_uint base = (cl_uint)c0, use_prev = c0 > 0;
        const bubble_set set = {e->k_groups, e->k_final, e->bubble_w, e->k, e->best_k, e->best_i};
        st = e->select == LBK_SELECT_BUBBLE ? select_bubble(e, &set, nb, nr, base, use_prev)
                                            : select_sort(e, nb, nr, base, use_prev);
        if (st != LBK_OK)
            goto cleanup;
    }
    const size_t out_bytes = nq * (size_t)e->k * 4;
    st = lbk_cl_check(clEnqueueReadBuffer(queue, e->best_k, CL_FALSE, 0, out_bytes, keys, 0,
                                          NULL, NULL),
                      "reading the K best keys");
    if (st != LBK_OK)
        goto cleanup;
    st = lbk_cl_check(clEnqueueReadBuffer(queue, e->best_i, CL_TRUE, 0, out_bytes, index, 0,
                                          NULL, NULL),
                      "reading the K best indices");
cleanup:
    clFinish(queue);
    collect_events(e);
    return st;
}

/* The L2 prefilter path (see lbk_brute_rerank in kernels/brute.cl); the
 * queries it cannot settle go through run_exact. */
static lbk_status run_prefilter(lbk_brute *e, const float *queries, uint64_t nq, float *keys,
                                uint32_t *index)
{
    lbk_status st = LBK_OK;
    cl_command_queue queue = lbk_device_queue(e->dev);
    const size_t row_bytes = (size_t)e->dim * sizeof(float);
    const cl_uint nb = (cl_uint)nq, dim = (cl_uint)e->dim;
    const size_t k = (size_t)e->k;

    if (squared_norms(queries, nq, e->dim, e->host_qnorm) >= 1e30)
        return run_exact(e, queries, nq, keys, index);
    st = lbk_cl_check(clEnqueueWriteBuffer(queue, e->queries, CL_FALSE, 0, nq * row_bytes,
                                           queries, 0, NULL, NULL),
                      "uploading a query batch");
    if (st != LBK_OK)
        goto cleanup;
    st = lbk_cl_check(clEnqueueWriteBuffer(queue, e->qnorm, CL_FALSE, 0, nq * sizeof(float),
                                           e->host_qnorm, 0, NULL, NULL),
                      "uploading the query norms");
    if (st != LBK_OK)
        goto cleanup;
    const cl_ulong ldd = e->ldd;
    const cl_float c = e->bound_c;
    for (uint64_t c0 = 0; c0 < e->n; c0 += e->chunk) {
        const cl_uint nr = (cl_uint)min_u64(e->chunk, e->n - c0);
        const cl_ulong block_first = c0 / 16;
        st = lbk_kernel_args(e->k_bound, "lbk_brute_bound_blocked", 11, sizeof(cl_mem),
                             &e->queries, sizeof nb, &nb, sizeof(cl_mem), &e->refs,
                             sizeof block_first, &block_first, sizeof nr, &nr, sizeof dim, &dim,
                             sizeof(cl_mem), &e->dist, sizeof ldd, &ldd, sizeof(cl_mem),
                             &e->qnorm, sizeof(cl_mem), &e->rnorm, sizeof c, &c);
        if (st != LBK_OK)
            goto cleanup;
        st = blocked_launch(e, e->k_bound, "lbk_brute_bound_blocked", nb, nr);
        if (st != LBK_OK)
            goto cleanup;
        const bubble_set set = {e->k_groups_p, e->k_final_p, e->bubble_wp,
                                e->kp,         e->bestp_k,   e->bestp_i};
        st = select_bubble(e, &set, nb, nr, (cl_uint)c0, c0 > 0);
        if (st != LBK_OK)
            goto cleanup;
    }
    st = lbk_kernel_args(e->k_rerank, "lbk_brute_rerank", 12, sizeof(cl_mem), &e->queries,
                         sizeof nb, &nb, sizeof dim, &dim, sizeof(cl_mem), &e->refs_rows,
                         sizeof(cl_mem), &e->qnorm, sizeof(cl_mem), &e->rnorm, sizeof c, &c,
                         sizeof(cl_mem), &e->bestp_k, sizeof(cl_mem), &e->bestp_i,
                         sizeof(cl_mem), &e->best_k, sizeof(cl_mem), &e->best_i, sizeof(cl_mem),
                         &e->flags);
    if (st != LBK_OK)
        goto cleanup;
    st = launch(e, e->k_rerank, "lbk_brute_rerank", EV_FINAL, lbk_round_up(nb, 8), 1, 8, 1);
    if (st != LBK_OK)
        goto cleanup;
    const size_t out_bytes = nq * k * 4;
    if ((st = lbk_cl_check(clEnqueueReadBuffer(queue, e->best_k, CL_FALSE, 0, out_bytes, keys,
                                               0, NULL, NULL),
                           "reading the K best keys")) != LBK_OK ||
        (st = lbk_cl_check(clEnqueueReadBuffer(queue, e->best_i, CL_FALSE, 0, out_bytes, index,
                                               0, NULL, NULL),
                           "reading the K best indices")) != LBK_OK ||
        (st = lbk_cl_check(clEnqueueReadBuffer(queue, e->flags, CL_TRUE, 0, nq * 4,
                                               e->host_flags, 0, NULL, NULL),
                           "reading the prefilter flags")) != LBK_OK)
        goto cleanup;
    clFinish(queue);
    collect_events(e);
    uint64_t m = 0;
    for (uint64_t q = 0; q < nq; q++)
        if (e->host_flags[q])
            memcpy(e->fb_queries + m++ * e->dim, queries + q * e->dim, row_bytes);
    e->timing.prefiltered_queries += nq;
    e->timing.fallback_queries += m;
    if (m == 0)
        goto cleanup;
    if ((st = run_exact(e, e->fb_queries, m, e->fb_keys, e->fb_index)) != LBK_OK)
        goto cleanup;
    m = 0;
    for (uint64_t q = 0; q < nq; q++) {
        if (!e->host_flags[q])
            continue;
        memcpy(keys + q * k, e->fb_keys + m * k, k * sizeof *keys);
        memcpy(index + q * k, e->fb_index + m * k, k * sizeof *index);
        m++;
    }
cleanup:
    clFinish(queue);
    collect_events(e);
    return st;
}

lbk_status lbk_brute_query(lbk_brute *engine, const float *queries, uint64_t nq,
                           lbk_knn_result *result)
{
    lbk_status st = LBK_OK;
    memset(&engine->timing, 0, sizeof engine->timing);
    if (result->k != engine->k || result->queries < nq) {
        lbk_error("internal: brute query result holds %llu x %d slots, needs %llu x %d",
                  (unsigned long long)result->queries, result->k, (unsigned long long)nq,
                  engine->k);
        st = LBK_ERR_INTERNAL;
        goto cleanup;
    }
    const size_t k = (size_t)engine->k;
    if (engine->n == 0) {
        for (size_t i = 0; i < nq * k; i++) {
            result->keys[i] = INFINITY;
            result->index[i] = LBK_NO_INDEX;
        }
        goto cleanup;
    }
    for (uint64_t off = 0; off < nq; off += engine->batch) {
        const uint64_t n = min_u64(engine->batch, nq - off);
        const float *q = queries + off * (size_t)engine->dim;
        st = engine->prefilter ? run_prefilter(engine, q, n, result->keys + off * k,
                                               result->index + off * k)
                               : run_exact(engine, q, n, result->keys + off * k,
                                           result->index + off * k);
        if (st != LBK_OK)
            goto cleanup;
    }
cleanup:
    return st;
}

void lbk_brute_last_timing(const lbk_brute *engine, lbk_brute_timing *timing)
{
    *timing = engine->timing;
}

void lbk_brute_destroy(lbk_brute *engine)
{
    if (!engine)
        return;
    cl_kernel kernels[] = {engine->k_dist,         engine->k_groups,    engine->k_final,
                           engine->k_sort_matrix,  engine->k_sort_lists, engine->k_bound,
                           engine->k_groups_p,     engine->k_final_p,   engine->k_rerank};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if (kernels[i])
            clReleaseKernel(kernels[i]);
    cl_mem mems[] = {engine->refs,    engine->queries, engine->dist,    engine->surv_k,
                     engine->surv_i,  engine->surv2_k, engine->surv2_i, engine->best_k,
                     engine->best_i,  engine->qnorm,   engine->rnorm,   engine->bestp_k,
                     engine->bestp_i, engine->flags,   engine->refs_rows};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    for (size_t i = 0; i < engine->event_count; i++)
        clReleaseEvent(engine->events[i].event);
    free(engine->events);
    free(engine->host_refs);
    free(engine->host_qnorm);
    free(engine->host_flags);
    free(engine->fb_queries);
    free(engine->fb_keys);
    free(engine->fb_index);
    free(engine);
}
