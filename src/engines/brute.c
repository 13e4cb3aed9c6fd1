#include "brute_impl.h"

#include "alloc_large.h"
#include "brute_layout.h"
#include "brute_select.h"
#include "cascade.h"
#include "device_cl.h"
#include "lbk_shared.h"
#include "log.h"
#include "rerank.h"
#include "timer.h"
#include "try.h"
#include "tuning.h"

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
/* A streamed shard is copied to the device once per batch, whatever the
 * chunk, so its batches are made larger (with smaller chunks) until the copy
 * is a small part of the batch's work: 2000 queries over a streamed 400k x
 * 768 shard ran 16-18 % faster in 2048-query batches than in 524-query ones
 * (bench/results/embeddings.md). */
#ifndef BRUTE_STREAM_MIN_BATCH
#define BRUTE_STREAM_MIN_BATCH 2048
#endif
/* Beyond this many bytes of distance matrix a larger batch gains nothing
 * (launches are already amortised) and costs first-touch page faults and
 * cache misses: Fashion-MNIST ran about 10 % faster with 1118-query batches
 * than with 8947. */
#define BRUTE_DIST_TARGET_BYTES (256u << 20)
/* Stream elements the bubble work-group filters per block (all work-items
 * together). */
#ifndef BRUTE_SCAN_BLOCK
#define BRUTE_SCAN_BLOCK 256
#endif
/* Up to this many work-items a block is rounded up to 16 elements per
 * work-item, for the vector filter (lbk_filter_row in kernels/brute.cl). */
#define BRUTE_VECTOR_FILTER_MAX_W 128

/* Distance tile: LX x LY work-items, each RB references x QB queries, TD
 * dimensions staged at a time. LX is the direction PoCL vectorises. */
#define DIST_LX 16
#define DIST_LY 8
#define DIST_RB 2
#define DIST_QB 4
#define DIST_TD 32
#define DIST_TR (DIST_LX * DIST_RB)
#define DIST_TQ (DIST_LY * DIST_QB)
/* The blocked (CPU) distance kernel's lanes, register block, query tile and
 * dimension slice come from the device's tuning (tuning.h). A small batch
 * gets fewer query blocks per work-item (lbk_brute_blocked_launch), so that every
 * compute unit still has work. Work-items of one group share a query tile
 * and run one after another on one core: the tile stays in its L2. */
#define DIST_REF_GROUP 4
/* Prefilter: used up to this K, with K' = K + max(K, 8) candidates: the
 * bound is about 4 n u of the keys (n = dim, u = 2^-24), so the K'-th
 * candidate rarely sits that close to the K-th, and a short K' chain keeps
 * the selection cheap. */
#define PREFILTER_K_MAX 64
#define PREFILTER_MIN_DIM 16
/* Beyond this dimension the rounding-error bound (n u) grows too large for
 * the prefilter to settle anything. */
#define PREFILTER_MAX_DIM 100000
/* The L2 cascade (cascade.h) from this dimension on, on CPU devices: its
 * coarse bounds cost a quarter of the prefilter's and, on Fashion-MNIST,
 * leave under 1 % of the rows to check with the full bound. A query that
 * needs more than max(CASCADE_MIN_CHECKS, n / CASCADE_CHECK_DIVISOR) checks
 * takes the prefilter path instead, and once most queries through the
 * cascade did, it is off for the rest of the run (data whose dimensions are
 * not alike in groups, where group sums prune little). */
#define CASCADE_MIN_DIM 64
/* The first cascade batch is this short, so that data it does not suit costs
 * little: on 100k x 128 Gaussian blobs a first batch of 671 queries cost
 * 0.35 s more than the prefilter would have. */
#define CASCADE_PROBE_QUERIES 64
#define CASCADE_MIN_CHECKS 256
#define CASCADE_CHECK_DIVISOR 16
/* From this K on the selection is the sort-merge of brute_sort.cl instead of
 * the bubble, whose pipeline costs K steps per element that passes the
 * threshold (measured: bench/results/embeddings.md). */
#ifndef BRUTE_SORT_K_MIN
#define BRUTE_SORT_K_MIN 64
#endif
/* Work-items of a sort-merge work-group (at most; a power of two). */
#define SORT_MAX_W 256

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* Bubble survivors per query for a chunk of `rows` references, in
 * (key, index) entries. */
static uint64_t survivor_entries(const lbk_brute *e, uint64_t rows)
{
    return (uint64_t)min_u64(e->groups, rows ? rows : 1) * (uint64_t)(e->prefilter ? e->kp : e->k);
}

/* Sort-merge scratch per query: 2 * kp2 entries for each work-group. */
static uint64_t sort_scratch_entries(const lbk_brute *e, uint64_t rows)
{
    return e->sort_select ? (uint64_t)min_u64(e->groups, rows ? rows : 1) * 2 * e->kp2 : 0;
}

/* Selection scratch per query for a chunk of `rows` references, in bytes. */
static uint64_t select_bytes(const lbk_brute *e, uint64_t rows)
{
    if (e->has_selector)
        return e->selector.scratch_bytes(e->selector.ctx, rows);
    return (survivor_entries(e, rows) + sort_scratch_entries(e, rows)) * 8;
}

static uint64_t query_bytes(const lbk_brute *e, uint64_t rows)
{
    const uint64_t ldd = lbk_round_up(rows ? rows : 1, DIST_TR);
    const uint64_t prefilter = e->prefilter ? 8 + (uint64_t)e->kp * 8 : 0;
    const uint64_t cascade = e->cascade ? (uint64_t)e->dc * 4 + 12 : 0;
    return (uint64_t)e->dim * 4 + ldd * 4 + (uint64_t)e->k * 8 + select_bytes(e, rows) +
           prefilter + cascade;
}

/* Device bytes of the whole shard: its rows; the prefilter adds the norms
 * (its re-rank reads the host's rows), the cascade its coarse rows and their
 * norms, and the row-major shard. */
static uint64_t resident_bytes(const lbk_brute *e)
{
    const uint64_t row_bytes = (uint64_t)e->dim * 4;
    const uint64_t cascade = e->cascade ? (uint64_t)e->dc * 4 + 4 + row_bytes : 0;
    return lbk_round_up(e->n, e->vrows) * (row_bytes + (e->prefilter ? 4 : 0) + cascade);
}

/* Choose residency, chunk and batch from the budget: prefer the whole shard
 * per distance matrix; shrink the chunk while the batch would be too small
 * to amortise launches and the distance rows (not the selection scratch)
 * are what take the room. */
static lbk_status plan_memory(lbk_brute *e, uint64_t budget, uint64_t max_alloc)
{
    const uint64_t row_bytes = (uint64_t)e->dim * 4;
    const uint64_t all = resident_bytes(e);
    e->resident = all <= budget / 2 && all <= max_alloc;
    const uint64_t chunk_limit = min_u64(budget / 4, max_alloc);
    e->chunk = e->resident ? e->n : min_u64(e->n, chunk_limit / row_bytes);
    /* Whole blocks, rounded down to stay within the budget; also where the
     * whole shard fits only without its padding. */
    if (e->chunk < e->n ||
        (!e->resident && lbk_brute_padded_rows(e, e->chunk) * row_bytes > chunk_limit))
        e->chunk = e->chunk > e->vrows ? e->chunk / e->vrows * e->vrows : e->vrows;
    if (e->chunk > e->n)
        e->chunk = e->n;
    uint64_t prev_chunk = e->chunk;
    const uint64_t min_batch = e->resident ? BRUTE_MIN_BATCH : BRUTE_STREAM_MIN_BATCH;
    for (;;) {
        const uint64_t ref_bytes =
            e->resident ? all : lbk_round_up(e->chunk, e->vrows) * row_bytes;
        const uint64_t ldd = lbk_round_up(e->chunk, DIST_TR);
        uint64_t batch = budget > ref_bytes ? (budget - ref_bytes) / query_bytes(e, e->chunk) : 0;
        batch = min_u64(batch, max_alloc / (ldd * 4));
        batch = min_u64(batch, max_alloc / (select_bytes(e, e->chunk) / 2 + 1));
        batch = min_u64(batch, max_alloc / (row_bytes + 1));
        batch = min_u64(batch, BRUTE_MAX_BATCH);
        batch = min_u64(batch, BRUTE_DIST_TARGET_BYTES / (ldd * 4) > min_batch
                                   ? BRUTE_DIST_TARGET_BYTES / (ldd * 4)
                                   : min_batch);
        const bool rows_dominate = ldd * 4 > select_bytes(e, e->chunk);
        if ((batch >= min_batch || e->chunk <= e->vrows || !rows_dominate) && batch > 0) {
            e->batch = batch;
            e->ldd = (size_t)ldd;
            return LBK_OK;
        }
        if (e->chunk <= e->vrows) {
            lbk_error("brute engine: a device memory budget of %llu bytes cannot hold even one "
                      "query of dimension %d with K = %d; %s",
                      (unsigned long long)budget, e->dim, e->k, lbk_device_memory_hint(e->dev));
            return LBK_ERR_NOMEM;
        }
        /* Chunks start on whole reference blocks of the blocked layout. */
        e->chunk = min_u64(e->n, lbk_round_up((e->chunk + 1) / 2, e->vrows));
        if (e->chunk == prev_chunk) {
            lbk_error("brute engine: a device memory budget of %llu bytes is too small for "
                      "dimension %d with K = %d; %s",
                      (unsigned long long)budget, e->dim, e->k, lbk_device_memory_hint(e->dev));
            return LBK_ERR_NOMEM;
        }
        prev_chunk = e->chunk;
    }
}

/* Rows the device copy of `rows` references occupies: the blocked layout is
 * padded with zero rows to whole work-item blocks. */
size_t lbk_brute_padded_rows(const lbk_brute *e, uint64_t rows)
{
    return (size_t)(e->blocked ? lbk_round_up(rows, e->vrows) : rows);
}

/* The shard's rows in the distance kernel's layout at dst: row-major for
 * the tiled kernel, blocked (brute_layout.h) for the blocked one. */
static void fill_layout(const lbk_brute *e, const float *points, size_t dim, float *dst)
{
    const size_t n = (size_t)e->n;
    if (!e->blocked) {
        memcpy(dst, points, n * dim * sizeof *dst);
        return;
    }
    lbk_brute_layout_blocked(points, n, dim, e->vw, lbk_brute_padded_rows(e, e->n), dst);
}

/* Build brute.cl for chain length k with work-groups of at most `limit`
 * work-items. */
static lbk_status compile(lbk_brute *e, int k, size_t limit, uint32_t *w, cl_program *program)
{
    const uint32_t b = (uint32_t)ceil_div((uint64_t)k, limit);
    *w = (uint32_t)ceil_div((uint64_t)k, b);
    uint32_t scan = BRUTE_SCAN_BLOCK / *w;
    if (scan == 0)
        scan = 1;
    /* Short chains filter whole 16-float groups of their distance rows with
     * one vector compare (lbk_filter_row): a multiple of 16 per work-item. */
    if (*w <= BRUTE_VECTOR_FILTER_MAX_W)
        scan = (uint32_t)lbk_round_up(scan, 16);
    char options[256];
    snprintf(options, sizeof options,
             "-DLBK_METRIC=%d -DLBK_K=%d -DLBK_W=%u -DLBK_B=%u -DLBK_SCAN=%u "
             "-DLBK_LX=%d -DLBK_LY=%d -DLBK_RB=%d -DLBK_QB=%d -DLBK_TD=%d -DLBK_VW=%u "
             "-DLBK_VQB=%d -DLBK_VRB=%d -DLBK_QT=%d -DLBK_KC=%d",
             (int)e->metric, k, *w, b, scan, DIST_LX, DIST_LY, DIST_RB, DIST_QB, DIST_TD,
             e->vw, e->tuning.block_queries, e->tuning.block_vectors, e->tuning.tile_blocks,
             e->tuning.slice);
    return lbk_device_program(e->dev, "brute.cl", options, program);
}

/* Build brute_sort.cl (the large-K selection) with work-groups of *w <=
 * limit work-items. */
static lbk_status compile_sort(lbk_brute *e, size_t limit, uint32_t *w, cl_program *program)
{
    uint64_t sw = min_u64(SORT_MAX_W, min_u64(e->kp2 / 2, limit));
    *w = (uint32_t)(sw ? sw : 1);
    const uint32_t scan = e->kp2 / 2 / *w ? e->kp2 / 2 / *w : 1;
    char options[160];
    snprintf(options, sizeof options, "-DLBK_METRIC=%d -DLBK_K=%d -DLBK_KP2=%u -DLBK_SW=%u "
             "-DLBK_SCAN=%u", (int)e->metric, e->k, e->kp2, *w, scan);
    return lbk_device_program(e->dev, "brute_sort.cl", options, program);
}

/* Create (or re-create) a kernel and lower *fit to its work-group limit. */
static lbk_status make_kernel(lbk_brute *e, cl_program program, const char *name,
                              cl_kernel *slot, size_t *fit)
{
    if (*slot) {
        clReleaseKernel(*slot);
        *slot = NULL;
    }
    LBK_TRY(lbk_device_kernel(program, name, slot));
    const size_t wg = lbk_kernel_work_group_limit(e->dev, *slot);
    if (wg > 0 && wg < *fit)
        *fit = wg;
    return LBK_OK;
}

/* The prefilter's kernels: the bound from `program`, and the bubble kernels
 * again for chain length K'. */
static lbk_status build_prefilter_kernels(lbk_brute *e, cl_program program, size_t limit,
                                          size_t *dist_fit, size_t *fit)
{
    LBK_TRY(make_kernel(e, program, "lbk_brute_bound_blocked", &e->k_bound, dist_fit));
    cl_program pp;
    LBK_TRY(compile(e, e->kp, limit, &e->bubble_wp, &pp));
    LBK_TRY(make_kernel(e, pp, "lbk_bubble_groups", &e->k_groups_p, fit));
    return make_kernel(e, pp, "lbk_bubble_final", &e->k_final_p, fit);
}

/* The selection kernels: the bubble from `program`, or the sort-merge. */
static lbk_status build_select_kernels(lbk_brute *e, cl_program program, size_t limit,
                                       size_t *fit)
{
    if (e->sort_select) {
        LBK_TRY(compile_sort(e, limit, &e->bubble_w, &program));
        LBK_TRY(make_kernel(e, program, "lbk_sort_groups", &e->k_groups, fit));
        return make_kernel(e, program, "lbk_sort_final", &e->k_final, fit);
    }
    LBK_TRY(make_kernel(e, program, "lbk_bubble_groups", &e->k_groups, fit));
    return make_kernel(e, program, "lbk_bubble_final", &e->k_final, fit);
}

/* Build every kernel for work-groups of at most `limit`; *fit gets the
 * smallest limit the selection kernels allow. The distance kernels have
 * fixed shapes, so they must fit as they are. */
static lbk_status build_attempt(lbk_brute *e, size_t limit, size_t *fit)
{
    cl_program program;
    /* With the sort-merge, brute.cl is built for its distance kernels only:
     * a chain of length 1 keeps its unused bubble kernels small. */
    uint32_t unused_w;
    LBK_TRY(compile(e, e->sort_select ? 1 : e->k, limit,
                    e->sort_select ? &unused_w : &e->bubble_w, &program));
    size_t dist_fit = SIZE_MAX;
    *fit = limit;
    const char *dist_name = e->blocked ? "lbk_brute_distance_blocked" : "lbk_brute_distance";
    LBK_TRY(make_kernel(e, program, dist_name, &e->k_dist, &dist_fit));
    LBK_TRY(build_select_kernels(e, program, limit, fit));
    if (e->prefilter)
        LBK_TRY(build_prefilter_kernels(e, program, limit, &dist_fit, fit));
    size_t cascade_fit = SIZE_MAX; /* its work-groups are single work-items */
    if (e->cascade)
        LBK_TRY(make_kernel(e, program, "lbk_cascade_exact", &e->k_cascade, &cascade_fit));
    const size_t dist_need = e->blocked ? DIST_REF_GROUP : DIST_LX * DIST_LY;
    LBK_FAIL_IF(dist_fit < dist_need, LBK_ERR_DEVICE,
                "brute engine: the distance kernel needs work-groups of %zu work-items; "
                "%s allows %zu",
                dist_need, lbk_device_description(e->dev), dist_fit);
    return LBK_OK;
}

static lbk_status build_kernels(lbk_brute *e, int work_group_limit)
{
    size_t dev_wg = 0;
    LBK_TRY(lbk_cl_check(clGetDeviceInfo(lbk_device_id(e->dev), CL_DEVICE_MAX_WORK_GROUP_SIZE,
                                         sizeof dev_wg, &dev_wg, NULL),
                         "querying the device's maximum work-group size"));
    /* A kernel's own limit can be lower than the device's (registers, local
     * memory): learn it from the first build and rebuild with it. */
    size_t limit = dev_wg;
    if (work_group_limit > 0 && (size_t)work_group_limit < limit)
        limit = (size_t)work_group_limit;
    for (int attempt = 0; attempt < 4; attempt++) {
        size_t fit;
        LBK_TRY(build_attempt(e, limit, &fit));
        size_t need = e->bubble_w;
        if (e->prefilter && e->bubble_wp > need)
            need = e->bubble_wp;
        if (fit >= need)
            return LBK_OK;
        limit = fit;
    }
    lbk_error("brute engine: no work-group size fits the kernels on %s",
              lbk_device_description(e->dev));
    return LBK_ERR_DEVICE;
}

lbk_status lbk_brute_alloc_slots(lbk_brute *e, lbk_brute_slots *slots, const char *what)
{
    const size_t b = (size_t)e->batch;
    slots->queries = malloc(b * (size_t)e->dim * sizeof *slots->queries);
    slots->keys = malloc(b * (size_t)e->k * sizeof *slots->keys);
    slots->index = malloc(b * (size_t)e->k * sizeof *slots->index);
    LBK_FAIL_IF(!slots->queries || !slots->keys || !slots->index, LBK_ERR_NOMEM,
                "out of host memory for %s", what);
    return LBK_OK;
}

static void free_slots(lbk_brute_slots *slots)
{
    free(slots->queries);
    free(slots->keys);
    free(slots->index);
}

/* Host buffers of the prefilter path, per batch. */
static lbk_status alloc_prefilter_host(lbk_brute *e)
{
    const size_t b = (size_t)e->batch, kp = (size_t)e->kp;
    e->host_qnorm = malloc(b * sizeof *e->host_qnorm);
    e->host_flags = malloc(b * sizeof *e->host_flags);
    e->cand_k = malloc(b * kp * sizeof *e->cand_k);
    e->cand_i = malloc(b * kp * sizeof *e->cand_i);
    LBK_FAIL_IF(!e->host_qnorm || !e->host_flags || !e->cand_k || !e->cand_i,
                LBK_ERR_NOMEM, "out of host memory for the prefilter's batch buffers");
    return lbk_brute_alloc_slots(e, &e->fb, "the prefilter's batch buffers");
}

static lbk_status alloc_buffers(lbk_brute *e)
{
    const size_t row_bytes = (size_t)e->dim * 4;
    const size_t b = (size_t)e->batch;
    /* (key, index) entries of the bubble survivors and the sort-merge
     * scratch; a selector has its own. */
    const size_t surv = e->has_selector ? 0 : (size_t)survivor_entries(e, e->chunk);
    const size_t scr = e->has_selector ? 0 : (size_t)sort_scratch_entries(e, e->chunk);
    const size_t kp = e->prefilter ? (size_t)e->kp : 0, pre = e->prefilter ? 1 : 0;
    const size_t cas = e->cascade ? 1 : 0;
    const struct {
        cl_mem *mem;
        size_t bytes;
        cl_mem_flags flags;
        const char *what;
    } want[] = {
        {&e->queries, b * row_bytes, CL_MEM_READ_ONLY, "a query batch"},
        {&e->dist, b * e->ldd * 4, CL_MEM_READ_WRITE, "the distance matrix"},
        {&e->surv_k, b * surv * 4, CL_MEM_READ_WRITE, "the selection survivors"},
        {&e->surv_i, b * surv * 4, CL_MEM_READ_WRITE, "the selection survivors"},
        {&e->scr_k, b * scr * 4, CL_MEM_READ_WRITE, "the sort-merge scratch"},
        {&e->scr_i, b * scr * 4, CL_MEM_READ_WRITE, "the sort-merge scratch"},
        {&e->best_k, b * (size_t)e->k * 4, CL_MEM_READ_WRITE, "the K best keys"},
        {&e->best_i, b * (size_t)e->k * 4, CL_MEM_READ_WRITE, "the K best indices"},
        {&e->qnorm, b * 4 * pre, CL_MEM_READ_ONLY, "the query norms"},
        {&e->bestp_k, b * kp * 4, CL_MEM_READ_WRITE, "the prefilter candidates"},
        {&e->bestp_i, b * kp * 4, CL_MEM_READ_WRITE, "the prefilter candidates"},
        {&e->queries_c, b * (size_t)e->dc * 4 * cas, CL_MEM_READ_ONLY, "the coarse queries"},
        {&e->qnorm_c, b * 4 * cas, CL_MEM_READ_ONLY, "the coarse query norms"},
        {&e->qeps, b * 4 * cas, CL_MEM_READ_ONLY, "the cascade's thresholds"},
        {&e->checks, b * 4 * cas, CL_MEM_WRITE_ONLY, "the cascade's counts"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        LBK_TRY(lbk_device_buffer(e->dev, want[i].flags, want[i].bytes, NULL, want[i].what,
                                  want[i].mem));
    if (e->cascade)
        LBK_TRY(lbk_brute_cascade_alloc(e));
    return e->prefilter ? alloc_prefilter_host(e) : LBK_OK;
}

/* Rows i .. i + m - 1's sums of squares (m <= 4), each summed in order:
 * four independent chains run at once where one would wait on each add. */
static void sum_squares(const float *x, size_t dim, size_t m, double *sums)
{
    double s[4] = {0.0, 0.0, 0.0, 0.0};
    for (size_t j = 0; j < dim; j++)
        for (size_t r = 0; r < 4; r++)
            if (r < m)
                s[r] += (double)x[r * dim + j] * x[r * dim + j];
    memcpy(sums, s, m * sizeof *sums);
}

/* The norms the prefilter's bound needs, in double, rounded to float: L2
 * squared norms (their error is far inside the bound), IP and COSINE norms
 * rounded up. False when some row is too large for the bound arithmetic to
 * stay finite (then the exact path runs). */
bool lbk_brute_norms(const lbk_brute *e, const float *x, size_t rows, size_t dim, float *out)
{
    const bool plain = lbk_metric_is_similarity(e->metric);
    double largest = 0.0, sums[4];
    for (size_t i = 0; i < rows; i++) {
        if (i % 4 == 0)
            sum_squares(x + i * dim, dim, rows - i < 4 ? rows - i : 4, sums);
        const double s = sums[i % 4];
        const double v = plain ? sqrt(s) : s;
        float f = (float)v;
        if (plain && (double)f < v)
            f = nextafterf(f, INFINITY);
        out[i] = f;
        largest = v > largest ? v : largest;
    }
    /* L2: |q|^2 + |r|^2 < 2e30; IP: |q||r| < 1e36, so every dot product,
     * key and bound is a finite float. */
    return largest < (plain ? 1e18 : 1e30);
}

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
static float prefilter_bound(lbk_metric metric, int dim)
{
    const double u = ldexp(1.0, -24), n = dim;
    if (lbk_metric_is_similarity(metric))
        return (float)((2.0 * n * u / (1.0 - n * u) + 16.0 * u) * 1.01);
    return (float)((4.0 * dim + 64.0) * ldexp(1.0, -24) * 1.05);
}

static lbk_status check_params(const lbk_dataset *reference, const lbk_brute_params *params)
{
    LBK_FAIL_IF(params->k < 1, LBK_ERR_CONFIG, "K = %d: the brute engine needs K >= 1",
                params->k);
    LBK_FAIL_IF(params->k > LBK_BRUTE_K_MAX, LBK_ERR_CONFIG,
                "K = %d exceeds the brute engine's maximum %d", params->k, LBK_BRUTE_K_MAX);
    LBK_FAIL_IF(params->groups < 0, LBK_ERR_CONFIG,
                "brute engine: %d groups per query; must be positive (0 = default)",
                params->groups);
    LBK_FAIL_IF(reference->rows >= LBK_NO_INDEX, LBK_ERR_INPUT,
                "brute engine: a shard of %llu rows exceeds the %u rows a 32-bit local index "
                "can address; use more ranks",
                (unsigned long long)reference->rows, LBK_NO_INDEX - 1);
    LBK_FAIL_IF(reference->dim < 1, LBK_ERR_INPUT,
                "brute engine: reference dimension %d; must be at least 1", reference->dim);
    char why[128];
    LBK_FAIL_IF(params->tuning && !lbk_tuning_valid(params->tuning, why, sizeof why),
                LBK_ERR_CONFIG, "brute engine: kernel parameter %s", why);
    return LBK_OK;
}

/* The engine's settings before any memory planning. */
static void configure(lbk_brute *e, lbk_device *dev, const lbk_dataset *reference,
                      const lbk_brute_params *params)
{
    e->dev = dev;
    e->k = params->k;
    e->metric = params->metric;
    e->dim = reference->dim;
    e->n = reference->rows;
    if (params->tuning)
        e->tuning = *params->tuning;
    else
        lbk_tuning_derive(dev, &e->tuning);
    e->vw = (uint32_t)e->tuning.lanes;
    e->vrows = e->vw * (uint32_t)e->tuning.block_vectors;
    e->auto_groups = params->groups == 0;
    e->groups = params->groups > 0 ? (uint32_t)params->groups : BRUTE_MAX_DEFAULT_GROUPS;
    e->blocked = params->distance == LBK_DISTANCE_BLOCKED ||
                 (params->distance == LBK_DISTANCE_AUTO && !lbk_device_is_gpu(dev));
    e->sort_select = !e->has_selector && (params->selection == LBK_SELECTION_SORT_MERGE ||
                                          (params->selection == LBK_SELECTION_AUTO &&
                                           e->k >= BRUTE_SORT_K_MIN));
    e->kp2 = 2;
    while (e->kp2 < (uint32_t)e->k)
        e->kp2 *= 2;
    e->prefilter = e->blocked && e->metric != LBK_METRIC_L1 && e->metric != LBK_METRIC_LINF &&
                   !e->has_selector && e->k <= PREFILTER_K_MAX && e->dim <= PREFILTER_MAX_DIM &&
                   (params->prefilter == LBK_PREFILTER_ON ||
                    params->prefilter == LBK_PREFILTER_CASCADE ||
                    (params->prefilter == LBK_PREFILTER_AUTO && e->dim >= PREFILTER_MIN_DIM));
    e->kp = e->k + (e->k > 8 ? e->k : 8);
    e->bound_c = prefilter_bound(e->metric, e->dim);
    /* The cascade's K-list is the main program's chain length, which the
     * sort-merge sets to 1. */
    e->cascade = e->prefilter && e->metric == LBK_METRIC_L2 && !e->sort_select &&
                 (params->prefilter == LBK_PREFILTER_CASCADE ||
                  (params->prefilter == LBK_PREFILTER_AUTO && e->dim >= CASCADE_MIN_DIM &&
                   lbk_device_is_cpu(dev)));
    e->cascade_forced = params->prefilter == LBK_PREFILTER_CASCADE;
    e->dc = lbk_cascade_dim(e->dim);
    e->cascade_c = prefilter_bound(LBK_METRIC_L2, e->dc);
    e->cascade_slope = lbk_cascade_slope(e->dim);
    e->max_checks = (uint32_t)(e->n / CASCADE_CHECK_DIVISOR > CASCADE_MIN_CHECKS
                                   ? e->n / CASCADE_CHECK_DIVISOR
                                   : CASCADE_MIN_CHECKS);
}

/* Residency, chunk and batch from the budget. */
/* The cascade only where its extra memory leaves the shard resident in one
 * chunk (its bound rows must cover the whole shard); otherwise the plan
 * without it, so that the cascade never costs the prefilter its residency. */
static lbk_status plan(lbk_brute *e, uint64_t memory_budget)
{
    const uint64_t budget = memory_budget ? memory_budget : lbk_device_global_mem(e->dev) / 2;
    const uint64_t max_alloc = lbk_device_max_alloc(e->dev);
    if (e->cascade) {
        const uint64_t all = resident_bytes(e);
        e->cascade = all <= budget / 2 && all <= max_alloc;
    }
    if (e->cascade) {
        LBK_TRY(plan_memory(e, budget, max_alloc));
        if (e->resident && e->chunk == e->n)
            return LBK_OK;
        e->cascade = false;
    }
    return plan_memory(e, budget, max_alloc);
}

/* The prefilter's reference norms, on the device for the bound and on the
 * host for the settle proofs; far from overflow the bound arithmetic is
 * safe, beyond it the exact path runs instead. The host re-rank reads the
 * caller's rows, which outlive the engine. */
static lbk_status upload_prefilter(lbk_brute *e, const float *points)
{
    const size_t rows = lbk_brute_padded_rows(e, e->n);
    e->host_rnorm = calloc(rows, sizeof *e->host_rnorm);
    LBK_FAIL_IF(!e->host_rnorm, LBK_ERR_NOMEM, "out of host memory for the reference norms");
    if (!lbk_brute_norms(e, points, e->n, (size_t)e->dim, e->host_rnorm)) {
        e->prefilter = false;
        return LBK_OK;
    }
    e->rerank = (lbk_rerank){.metric = e->metric, .k = e->k, .kp = e->kp, .dim = e->dim,
                             .bound_c = e->bound_c, .rows = points, .rnorm = e->host_rnorm};
    return lbk_device_buffer(e->dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                             rows * sizeof *e->host_rnorm, e->host_rnorm, "the reference norms",
                             &e->rnorm);
}

/* The shard onto the device. Resident on a CPU device: laid out once in
 * huge-page host memory that the buffer then uses in place (no copy by the
 * runtime, 188 MB less touched for Fashion-MNIST, whose set-up went from
 * 0.35-0.41 to 0.17-0.26 s); resident elsewhere: copied from a transient
 * layout (from the rows themselves where the layout is row-major); streamed:
 * laid out into a host copy that chunk_refs uploads. copy_shard: copy on a
 * CPU device too (lbk_brute_params). */
static lbk_status place_refs(lbk_brute *e, const float *points, bool copy_shard)
{
    const size_t row_bytes = (size_t)e->dim * sizeof(float);
    const size_t bytes = lbk_brute_padded_rows(e, e->n) * row_bytes;
    const bool in_place = e->resident && lbk_device_is_cpu(e->dev) && !copy_shard;
    if (e->resident && !in_place && !e->blocked)
        return lbk_device_buffer(e->dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                                 (void *)points, "the reference shard", &e->refs);
    float *layout = lbk_alloc_large(bytes);
    LBK_FAIL_IF(!layout, LBK_ERR_NOMEM,
                "out of host memory laying out the reference shard (%.1f MiB)",
                (double)bytes / (1024.0 * 1024.0));
    fill_layout(e, points, (size_t)e->dim, layout);
    if (e->resident && !in_place) {
        const lbk_status st = lbk_device_buffer(e->dev, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                                bytes, layout, "the reference shard", &e->refs);
        lbk_free_large(layout);
        return st;
    }
    e->host_refs = layout;
    if (in_place)
        return lbk_device_buffer(e->dev, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, bytes,
                                 e->host_refs, "the reference shard", &e->refs);
    return lbk_device_buffer(e->dev, CL_MEM_READ_ONLY,
                             lbk_brute_padded_rows(e, e->chunk) * row_bytes, NULL,
                             "a reference chunk", &e->refs);
}

/* Everything a non-empty shard needs on the device. */
static lbk_status set_up_shard(lbk_brute *e, const lbk_dataset *reference,
                               const lbk_brute_params *params)
{
    LBK_TRY(plan(e, params->memory_budget));
    const bool planned_cascade = e->cascade;
    if (e->prefilter)
        LBK_TRY(upload_prefilter(e, reference->points));
    e->cascade = e->cascade && e->prefilter;
    if (e->cascade)
        LBK_TRY(lbk_brute_cascade_upload(e, reference->points, params->copy_shard));
    /* Declined after all (the data, or norms too large): batches sized
     * without its memory. */
    if (planned_cascade && !e->cascade)
        LBK_TRY(plan(e, params->memory_budget));
    LBK_TRY(build_kernels(e, params->work_group_limit));
    LBK_TRY(alloc_buffers(e));
    LBK_TRY(place_refs(e, reference->points, params->copy_shard));
    if (e->has_selector)
        LBK_TRY(e->selector.prepare(e->selector.ctx, e, e->batch, e->chunk));
    return LBK_OK;
}

lbk_status lbk_brute_create(lbk_device *dev, const lbk_dataset *reference,
                            const lbk_brute_params *params, lbk_brute **out)
{
    lbk_status st = LBK_OK;
    *out = NULL;
    lbk_brute *e = calloc(1, sizeof *e);
    if (!e) {
        if (params->selector)
            params->selector->destroy(params->selector->ctx);
        lbk_error("out of host memory creating the brute engine");
        return LBK_ERR_NOMEM;
    }
    /* The engine owns the selector from here on, also when it fails. */
    if (params->selector) {
        e->selector = *params->selector;
        e->has_selector = true;
    }
    LBK_TRY_GOTO(st, check_params(reference, params));
    configure(e, dev, reference, params);
    if (e->n == 0)
        e->batch = BRUTE_MAX_BATCH;
    else
        LBK_TRY_GOTO(st, set_up_shard(e, reference, params));
    *out = e;
    e = NULL;
cleanup:
    lbk_brute_destroy(e);
    return st;
}

uint64_t lbk_brute_max_batch(const lbk_brute *engine) { return engine->batch; }

uint64_t lbk_brute_chunk_rows(const lbk_brute *engine) { return engine->chunk; }

lbk_device *lbk_brute_device(const lbk_brute *engine) { return engine->dev; }

static lbk_status grow_events(lbk_brute *e)
{
    if (e->event_count < e->event_cap)
        return LBK_OK;
    const size_t cap = e->event_cap ? 2 * e->event_cap : 64;
    lbk_brute_timed_event *grown = realloc(e->events, cap * sizeof *grown);
    LBK_FAIL_IF(!grown, LBK_ERR_NOMEM, "out of host memory recording kernel events");
    e->events = grown;
    e->event_cap = cap;
    return LBK_OK;
}

lbk_status lbk_brute_launch(lbk_brute *e, cl_kernel kernel, lbk_brute_event kind, size_t g0,
                            size_t g1, size_t l0, size_t l1)
{
    LBK_TRY(grow_events(e));
    const size_t global[2] = {g0, g1}, local[2] = {l0, l1};
    cl_event ev = NULL;
    const cl_int err = clEnqueueNDRangeKernel(lbk_device_queue(e->dev), kernel, 2, NULL, global,
                                              local, 0, NULL, &ev);
    if (err != CL_SUCCESS) {
        char name[128];
        lbk_kernel_name(kernel, name, sizeof name);
        lbk_error("launching kernel %s (%zu x %zu work-items): OpenCL error %s", name, g0, g1,
                  lbk_cl_error_name(err));
        return LBK_ERR_DEVICE;
    }
    e->events[e->event_count].event = ev;
    e->events[e->event_count].kind = kind;
    e->event_count++;
    return LBK_OK;
}

/* Called once the queue is idle: add each kernel's profiled time to its kind. */
void lbk_brute_collect_events(lbk_brute *e)
{
    for (size_t i = 0; i < e->event_count; i++) {
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(e->events[i].event, CL_PROFILING_COMMAND_START, sizeof t0, &t0,
                                NULL);
        clGetEventProfilingInfo(e->events[i].event, CL_PROFILING_COMMAND_END, sizeof t1, &t1,
                                NULL);
        const double s = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
        if (e->events[i].kind == LBK_BRUTE_EVENT_DISTANCE)
            e->timing.distance_s += s;
        else if (e->events[i].kind == LBK_BRUTE_EVENT_SELECT)
            e->timing.select_s += s;
        else
            e->timing.final_s += s;
        clReleaseEvent(e->events[i].event);
    }
    e->event_count = 0;
}

/* One selection set: kernels built for chain length k (the bubble's, or
 * with `sort` the sort-merge's, which take the scratch too). */
typedef struct {
    cl_kernel groups, final;
    uint32_t w;
    int k;
    cl_mem best_k, best_i;
    bool sort;
} bubble_set;

/* Query blocks per work-item of the blocked kernels for a batch of nb
 * queries: the tuning's, fewer when the batch would leave compute units
 * without work (BRUTE_GROUPS_PER_CU work-items per unit at least). */
cl_uint lbk_brute_blocked_tile(const lbk_brute *e, cl_uint nb, cl_uint nr)
{
    const uint64_t blocks = ceil_div(nb, (uint64_t)e->tuning.block_queries);
    const uint64_t ref_items = ceil_div(nr, e->vrows);
    const uint64_t want = (uint64_t)BRUTE_GROUPS_PER_CU * lbk_device_compute_units(e->dev);
    uint64_t qt = min_u64((uint64_t)e->tuning.tile_blocks, blocks);
    while (qt > 1 && ref_items * ceil_div(blocks, qt) < want)
        qt /= 2;
    return (cl_uint)(qt ? qt : 1);
}

/* Launch a blocked distance or bound kernel over nb queries x nr
 * references, with qt query blocks per work-item (its last argument). */
lbk_status lbk_brute_blocked_launch(lbk_brute *e, cl_kernel kernel, cl_uint nb, cl_uint nr,
                                    cl_uint qt)
{
    const size_t rows = ceil_div(ceil_div(nb, (uint64_t)e->tuning.block_queries), qt);
    const size_t cols = ceil_div(nr, e->vrows);
    const size_t lx = cols < DIST_REF_GROUP ? cols : DIST_REF_GROUP;
    return lbk_brute_launch(e, kernel, LBK_BRUTE_EVENT_DISTANCE, lbk_round_up(cols, lx), rows,
                            lx, 1);
}

lbk_status lbk_brute_bound(lbk_brute *e, const lbk_brute_bound_rows *rows, cl_uint nb,
                           cl_uint nr, cl_ulong block_first, cl_ulong norm_first)
{
    const cl_uint qt = lbk_brute_blocked_tile(e, nb, nr);
    const cl_ulong ldd = e->ldd;
    LBK_TRY(LBK_KERNEL_ARGS(e->k_bound, LBK_ARG(rows->queries), LBK_ARG(nb), LBK_ARG(rows->refs),
                            LBK_ARG(block_first), LBK_ARG(nr), LBK_ARG(rows->dim),
                            LBK_ARG(e->dist), LBK_ARG(ldd), LBK_ARG(rows->qnorm),
                            LBK_ARG(rows->rnorm), LBK_ARG(norm_first), LBK_ARG(rows->c),
                            LBK_ARG(qt)));
    return lbk_brute_blocked_launch(e, e->k_bound, nb, nr, qt);
}

static lbk_status select_bubble(lbk_brute *e, const bubble_set *set, cl_uint nb, cl_uint nr,
                                cl_uint base, cl_uint use_prev)
{
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
    if (set->sort)
        LBK_TRY(LBK_KERNEL_ARGS(set->groups, LBK_ARG(e->dist), LBK_ARG(ldd), LBK_ARG(nr),
                                LBK_ARG(group_len), LBK_ARG(base), LBK_ARG(e->surv_k),
                                LBK_ARG(e->surv_i), LBK_ARG(e->scr_k), LBK_ARG(e->scr_i)));
    else
        LBK_TRY(LBK_KERNEL_ARGS(set->groups, LBK_ARG(e->dist), LBK_ARG(ldd), LBK_ARG(nr),
                                LBK_ARG(group_len), LBK_ARG(base), LBK_ARG(e->surv_k),
                                LBK_ARG(e->surv_i)));
    LBK_TRY(lbk_brute_launch(e, set->groups, LBK_BRUTE_EVENT_SELECT, (size_t)groups * set->w,
                             nb, set->w, 1));
    if (set->sort)
        LBK_TRY(LBK_KERNEL_ARGS(set->final, LBK_ARG(e->surv_k), LBK_ARG(e->surv_i),
                                LBK_ARG(count), LBK_ARG(use_prev), LBK_ARG(set->best_k),
                                LBK_ARG(set->best_i), LBK_ARG(e->scr_k), LBK_ARG(e->scr_i)));
    else
        LBK_TRY(LBK_KERNEL_ARGS(set->final, LBK_ARG(e->surv_k), LBK_ARG(e->surv_i),
                                LBK_ARG(count), LBK_ARG(use_prev), LBK_ARG(set->best_k),
                                LBK_ARG(set->best_i)));
    return lbk_brute_launch(e, set->final, LBK_BRUTE_EVENT_FINAL, set->w, nb, set->w, 1);
}

/* The K best of a chunk's distance rows, merged into best: the bubble, or
 * the selector that replaces it. */
static lbk_status select_chunk(lbk_brute *e, cl_uint nb, cl_uint nr, cl_uint base,
                               cl_uint use_prev)
{
    if (e->has_selector) {
        const lbk_brute_chunk chunk = {.dist = e->dist, .ldd = e->ldd, .nb = nb, .nr = nr,
                                       .base = base, .use_prev = use_prev,
                                       .best_k = e->best_k, .best_i = e->best_i};
        return e->selector.select(e->selector.ctx, e, &chunk);
    }
    const bubble_set set = {e->k_groups, e->k_final, e->bubble_w, e->k,
                            e->best_k,   e->best_i,  e->sort_select};
    return select_bubble(e, &set, nb, nr, base, use_prev);
}

/* References [c0, c0 + nr) where the distance kernels find them: streamed
 * into the chunk buffer when the shard is not resident. *r_first: the
 * chunk's first row in e->refs (in whole vw-row blocks for the blocked
 * layout). */
static lbk_status chunk_refs(lbk_brute *e, uint64_t c0, cl_uint nr, cl_ulong *r_first)
{
    *r_first = c0;
    if (!e->resident) {
        /* Blocking: the previous chunk's kernels must be done with the buffer,
         * which the in-order queue guarantees, and the host copy stays valid. */
        const size_t row_bytes = (size_t)e->dim * sizeof(float);
        LBK_TRY(lbk_cl_check(clEnqueueWriteBuffer(lbk_device_queue(e->dev), e->refs, CL_TRUE, 0,
                                                  lbk_brute_padded_rows(e, nr) * row_bytes,
                                                  e->host_refs + c0 * e->dim, 0, NULL, NULL),
                             "uploading a reference chunk"));
        *r_first = 0;
    }
    if (e->blocked)
        *r_first /= e->vw; /* the kernel counts whole blocks */
    return LBK_OK;
}

/* Distance rows of nb queries against references [c0, c0 + nr), then their
 * selection. */
static lbk_status exact_chunk(lbk_brute *e, cl_uint nb, uint64_t c0, cl_uint nr)
{
    const cl_uint dim = (cl_uint)e->dim;
    const cl_ulong ldd = e->ldd;
    cl_ulong r_first;
    LBK_TRY(chunk_refs(e, c0, nr, &r_first));
    if (e->blocked) {
        const cl_uint qt = lbk_brute_blocked_tile(e, nb, nr);
        LBK_TRY(LBK_KERNEL_ARGS(e->k_dist, LBK_ARG(e->queries), LBK_ARG(nb), LBK_ARG(e->refs),
                                LBK_ARG(r_first), LBK_ARG(nr), LBK_ARG(dim), LBK_ARG(e->dist),
                                LBK_ARG(ldd), LBK_ARG(qt)));
        LBK_TRY(lbk_brute_blocked_launch(e, e->k_dist, nb, nr, qt));
    } else {
        LBK_TRY(LBK_KERNEL_ARGS(e->k_dist, LBK_ARG(e->queries), LBK_ARG(nb), LBK_ARG(e->refs),
                                LBK_ARG(r_first), LBK_ARG(nr), LBK_ARG(dim), LBK_ARG(e->dist),
                                LBK_ARG(ldd)));
        LBK_TRY(lbk_brute_launch(e, e->k_dist, LBK_BRUTE_EVENT_DISTANCE,
                                 ceil_div(nr, DIST_TR) * DIST_LX, ceil_div(nb, DIST_TQ) * DIST_LY,
                                 DIST_LX, DIST_LY));
    }
    return select_chunk(e, nb, nr, (cl_uint)c0, c0 > 0);
}

/* Read nq rows of the K best back; `blocking` waits for the indices. */
lbk_status lbk_brute_read_best(lbk_brute *e, uint64_t nq, float *keys, uint32_t *index,
                               cl_bool blocking)
{
    cl_command_queue queue = lbk_device_queue(e->dev);
    const size_t out_bytes = nq * (size_t)e->k * 4;
    LBK_TRY(lbk_cl_check(clEnqueueReadBuffer(queue, e->best_k, CL_FALSE, 0, out_bytes, keys, 0,
                                             NULL, NULL),
                         "reading the K best keys"));
    return lbk_cl_check(clEnqueueReadBuffer(queue, e->best_i, blocking, 0, out_bytes, index, 0,
                                            NULL, NULL),
                        "reading the K best indices");
}

lbk_status lbk_brute_run_exact(lbk_brute *e, const float *queries, uint64_t nq, float *keys,
                               uint32_t *index)
{
    lbk_status st = LBK_OK;
    cl_command_queue queue = lbk_device_queue(e->dev);
    const size_t row_bytes = (size_t)e->dim * sizeof(float);
    LBK_TRY_GOTO(st, lbk_cl_check(clEnqueueWriteBuffer(queue, e->queries, CL_TRUE, 0,
                                                       nq * row_bytes, queries, 0, NULL, NULL),
                                  "uploading a query batch"));
    for (uint64_t c0 = 0; c0 < e->n; c0 += e->chunk)
        LBK_TRY_GOTO(st, exact_chunk(e, (cl_uint)nq, c0, (cl_uint)min_u64(e->chunk, e->n - c0)));
    st = lbk_brute_read_best(e, nq, keys, index, CL_TRUE);
cleanup:
    clFinish(queue);
    lbk_brute_collect_events(e);
    return st;
}

/* The prefilter's K' candidates per query by lower bound, for every chunk,
 * read back into cand_k / cand_i. */
static lbk_status prefilter_candidates(lbk_brute *e, const float *queries, uint64_t nq)
{
    cl_command_queue queue = lbk_device_queue(e->dev);
    const cl_uint nb = (cl_uint)nq;
    const lbk_brute_bound_rows rows = {e->queries, e->qnorm, e->refs, e->rnorm,
                                       (cl_uint)e->dim, e->bound_c};
    LBK_TRY(lbk_cl_check(clEnqueueWriteBuffer(queue, e->queries, CL_FALSE, 0,
                                              nq * (size_t)e->dim * sizeof(float), queries, 0,
                                              NULL, NULL),
                         "uploading a query batch"));
    LBK_TRY(lbk_cl_check(clEnqueueWriteBuffer(queue, e->qnorm, CL_FALSE, 0, nq * sizeof(float),
                                              e->host_qnorm, 0, NULL, NULL),
                         "uploading the query norms"));
    const bubble_set set = {e->k_groups_p, e->k_final_p, e->bubble_wp, e->kp,
                            e->bestp_k,    e->bestp_i,   false};
    for (uint64_t c0 = 0; c0 < e->n; c0 += e->chunk) {
        const cl_uint nr = (cl_uint)min_u64(e->chunk, e->n - c0);
        const cl_ulong norm_first = c0 / e->vw;
        cl_ulong block_first;
        LBK_TRY(chunk_refs(e, c0, nr, &block_first));
        LBK_TRY(lbk_brute_bound(e, &rows, nb, nr, block_first, norm_first));
        LBK_TRY(select_bubble(e, &set, nb, nr, (cl_uint)c0, c0 > 0));
    }
    const size_t bytes = nq * (size_t)e->kp * 4;
    LBK_TRY(lbk_cl_check(clEnqueueReadBuffer(queue, e->bestp_k, CL_FALSE, 0, bytes, e->cand_k, 0,
                                             NULL, NULL),
                         "reading the prefilter candidates"));
    return lbk_cl_check(clEnqueueReadBuffer(queue, e->bestp_i, CL_TRUE, 0, bytes, e->cand_i, 0,
                                            NULL, NULL),
                        "reading the prefilter candidates");
}

/* On the host (rerank.h): each query's exact K best from its candidates, or
 * its flag for the exact path when the bound cannot prove them complete. */
static void prefilter_rerank(lbk_brute *e, const float *queries, uint64_t nq, float *keys,
                             uint32_t *index)
{
    const size_t k = (size_t)e->k, kp = (size_t)e->kp, dim = (size_t)e->dim;
    const double t0 = lbk_now();
    for (uint64_t q = 0; q < nq; q++)
        e->host_flags[q] = !lbk_rerank_query(&e->rerank, queries + q * dim, e->host_qnorm[q],
                                             e->cand_k + q * kp, e->cand_i + q * kp,
                                             keys + q * k, index + q * k);
    e->timing.final_s += lbk_now() - t0;
}

/* The queries with flags[q] set through `path` (via `slots`), their
 * results put in place; *count: how many. */
lbk_status lbk_brute_rerun_flagged(lbk_brute *e, lbk_brute_path path, const uint8_t *flags,
                                   const lbk_brute_slots *slots, const float *queries,
                                   uint64_t nq, float *keys, uint32_t *index, uint64_t *count)
{
    const size_t k = (size_t)e->k, row_bytes = (size_t)e->dim * sizeof(float);
    uint64_t m = 0;
    for (uint64_t q = 0; q < nq; q++)
        if (flags[q])
            memcpy(slots->queries + m++ * e->dim, queries + q * e->dim, row_bytes);
    *count = m;
    if (m == 0)
        return LBK_OK;
    LBK_TRY(path(e, slots->queries, m, slots->keys, slots->index));
    m = 0;
    for (uint64_t q = 0; q < nq; q++) {
        if (!flags[q])
            continue;
        memcpy(keys + q * k, slots->keys + m * k, k * sizeof *keys);
        memcpy(index + q * k, slots->index + m * k, k * sizeof *index);
        m++;
    }
    return LBK_OK;
}

/* The flagged queries through the exact path, their results put in place. */
static lbk_status prefilter_fallback(lbk_brute *e, const float *queries, uint64_t nq,
                                     float *keys, uint32_t *index)
{
    uint64_t m = 0;
    const lbk_status st = lbk_brute_rerun_flagged(e, lbk_brute_run_exact, e->host_flags, &e->fb,
                                                  queries, nq, keys, index, &m);
    e->timing.prefiltered_queries += nq;
    e->timing.fallback_queries += m;
    return st;
}

/* The prefilter path: bounds and candidates on the device, the re-rank on
 * the host (rerank.h); the queries it cannot settle go through lbk_brute_run_exact. */
lbk_status lbk_brute_run_prefilter(lbk_brute *e, const float *queries, uint64_t nq, float *keys,
                                   uint32_t *index)
{
    if (!lbk_brute_norms(e, queries, nq, (size_t)e->dim, e->host_qnorm))
        return lbk_brute_run_exact(e, queries, nq, keys, index);
    lbk_status st = LBK_OK;
    cl_command_queue queue = lbk_device_queue(e->dev);
    LBK_TRY_GOTO(st, prefilter_candidates(e, queries, nq));
    clFinish(queue);
    lbk_brute_collect_events(e);
    prefilter_rerank(e, queries, nq, keys, index);
    st = prefilter_fallback(e, queries, nq, keys, index);
cleanup:
    clFinish(queue);
    lbk_brute_collect_events(e);
    return st;
}

lbk_status lbk_brute_query(lbk_brute *engine, const float *queries, uint64_t nq,
                           lbk_knn_result *result)
{
    memset(&engine->timing, 0, sizeof engine->timing);
    LBK_FAIL_IF(result->k != engine->k || result->queries < nq, LBK_ERR_INTERNAL,
                "internal: brute query result holds %llu x %d slots, needs %llu x %d",
                (unsigned long long)result->queries, result->k, (unsigned long long)nq,
                engine->k);
    const size_t k = (size_t)engine->k;
    if (engine->n == 0) {
        for (size_t i = 0; i < nq * k; i++) {
            result->keys[i] = INFINITY;
            result->index[i] = LBK_NO_INDEX;
        }
        return LBK_OK;
    }
    for (uint64_t off = 0, n; off < nq; off += n) {
        n = min_u64(engine->batch, nq - off);
        /* The engine's first cascade batch is a short probe of the data. */
        if (engine->cascade && !engine->cascade_probed) {
            n = min_u64(n, CASCADE_PROBE_QUERIES);
            engine->cascade_probed = true;
        }
        const float *q = queries + off * (size_t)engine->dim;
        float *keys = result->keys + off * k;
        uint32_t *index = result->index + off * k;
        if (engine->cascade && !engine->cascade_off)
            LBK_TRY(lbk_brute_cascade_run(engine, q, n, keys, index));
        else
            LBK_TRY(engine->prefilter ? lbk_brute_run_prefilter(engine, q, n, keys, index)
                                      : lbk_brute_run_exact(engine, q, n, keys, index));
    }
    return LBK_OK;
}

void lbk_brute_last_timing(const lbk_brute *engine, lbk_brute_timing *timing)
{
    *timing = engine->timing;
}

void lbk_brute_timing_add(lbk_brute_timing *sum, const lbk_brute_timing *t)
{
    sum->distance_s += t->distance_s;
    sum->select_s += t->select_s;
    sum->final_s += t->final_s;
    sum->fallback_queries += t->fallback_queries;
    sum->prefiltered_queries += t->prefiltered_queries;
    sum->cascade_queries += t->cascade_queries;
    sum->cascade_fallback_queries += t->cascade_fallback_queries;
    sum->cascade_checked_rows += t->cascade_checked_rows;
}

void lbk_brute_destroy(lbk_brute *engine)
{
    if (!engine)
        return;
    /* The shard's buffers may use host memory in place: nothing may still
     * read it. */
    if (engine->refs || engine->refs_c || engine->rows)
        clFinish(lbk_device_queue(engine->dev));
    cl_kernel kernels[] = {engine->k_dist,  engine->k_groups,   engine->k_final,
                           engine->k_bound, engine->k_groups_p, engine->k_final_p,
                           engine->k_cascade};
    for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++)
        if (kernels[i])
            clReleaseKernel(kernels[i]);
    cl_mem mems[] = {engine->refs,   engine->queries, engine->dist,    engine->surv_k,
                     engine->surv_i, engine->best_k,  engine->best_i,  engine->qnorm,
                     engine->rnorm,  engine->bestp_k, engine->bestp_i, engine->scr_k,
                     engine->scr_i,  engine->refs_c,  engine->rnorm_c, engine->queries_c,
                     engine->qnorm_c, engine->qeps,   engine->rows,    engine->checks};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    for (size_t i = 0; i < engine->event_count; i++)
        clReleaseEvent(engine->events[i].event);
    if (engine->has_selector)
        engine->selector.destroy(engine->selector.ctx);
    free(engine->events);
    lbk_free_large(engine->host_refs);
    free(engine->host_qnorm);
    free(engine->host_rnorm);
    free(engine->host_flags);
    free(engine->cand_k);
    free(engine->cand_i);
    free_slots(&engine->fb);
    free_slots(&engine->cas);
    free(engine->cas_flags);
    free(engine->group_of);
    lbk_free_large(engine->host_refs_c);
    free(engine->host_qc);
    free(engine->host_qnorm_c);
    free(engine->host_qeps);
    free(engine->host_checks);
    free(engine);
}
