/* The brute-force engine's core (brute_core_impl.h): what every path
 * shares, from the memory plan to the selection. */
#include "brute_core_impl.h"

#include "alloc_large.h"
#include "brute_layout.h"
#include "brute_scale.h"
#include "brute_select.h"
#include "device_cl.h"
#include "log.h"
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
/* The blocked (CPU) distance kernel's lanes, register block, query tile and
 * dimension slice come from the device's tuning (tuning.h). A small batch
 * gets fewer query blocks per work-item (lbk_brute_blocked_tile), so that
 * every compute unit still has work. Work-items of one group share a query
 * tile and run one after another on one core: the tile stays in its L2. */
#define DIST_REF_GROUP 4
/* From this K on the selection is the sort-merge of brute_sort.cl instead of
 * the bubble, whose pipeline costs K steps per element that passes the
 * threshold (measured: bench/results/embeddings.md). */
#ifndef BRUTE_SORT_K_MIN
#define BRUTE_SORT_K_MIN 64
#endif

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

void lbk_brute_configure(lbk_brute *e, lbk_device *dev, const lbk_dataset *reference,
                         const lbk_brute_params *params)
{
    e->dev = dev;
    e->k = params->k;
    e->metric = params->metric;
    e->dim = reference->dim;
    e->n = reference->rows;
    e->dtype = reference->dtype;
    e->ref_bytes = lbk_dataset_type_bytes(reference->dtype);
    e->int_keys = lbk_dataset_type_integer(reference->dtype);
    e->scaled = reference->dtype == LBK_DTYPE_FLOAT16 && params->metric == LBK_METRIC_COSINE;
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
    e->sort_select = !e->has_selector &&
                     (params->selection == LBK_SELECTION_SORT_MERGE ||
                      (params->selection == LBK_SELECTION_AUTO && e->k >= BRUTE_SORT_K_MIN));
    e->kp2 = 2;
    while (e->kp2 < (uint32_t)e->k)
        e->kp2 *= 2;
    e->batch = BRUTE_MAX_BATCH; /* an empty shard's; lbk_brute_plan sets the others' */
}

/* Bubble survivors per query for a chunk of `rows` references, in
 * (key, index) entries. */
static uint64_t survivor_entries(const lbk_brute *e, uint64_t rows, int chain)
{
    return (uint64_t)min_u64(e->groups, rows ? rows : 1) * (uint64_t)chain;
}

/* Sort-merge scratch per query: 2 * kp2 entries for each work-group. */
static uint64_t sort_scratch_entries(const lbk_brute *e, uint64_t rows)
{
    return e->sort_select ? (uint64_t)min_u64(e->groups, rows ? rows : 1) * 2 * e->kp2 : 0;
}

/* Selection scratch per query for a chunk of `rows` references, in bytes. */
static uint64_t select_bytes(const lbk_brute *e, uint64_t rows, int chain)
{
    if (e->has_selector)
        return e->selector.scratch_bytes(e->selector.ctx, rows);
    return (survivor_entries(e, rows, chain) + sort_scratch_entries(e, rows)) * 8;
}

static uint64_t query_bytes(const lbk_brute *e, uint64_t rows, const lbk_brute_needs *needs)
{
    const uint64_t ldd = lbk_device_round_up(rows ? rows : 1, LBK_BRUTE_DIST_TR);
    return (uint64_t)e->dim * 4 + ldd * 4 + (uint64_t)e->k * 8 +
           select_bytes(e, rows, needs->chain) + needs->query_bytes;
}

/* The shard's rows and what the paths keep per row (norms, coarse rows). */
uint64_t lbk_brute_resident_bytes(const lbk_brute *e, const lbk_brute_needs *needs)
{
    const uint64_t row_bytes = (uint64_t)e->dim * e->ref_bytes;
    return lbk_device_round_up(e->n, e->vrows) * (row_bytes + needs->row_bytes);
}

/* The largest batch that fits beside `ref_bytes` of shard at the current
 * chunk. */
static uint64_t fit_batch(const lbk_brute *e, uint64_t budget, uint64_t max_alloc,
                          uint64_t ref_bytes, const lbk_brute_needs *needs)
{
    const uint64_t row_bytes = (uint64_t)e->dim * 4;
    const uint64_t ldd = lbk_device_round_up(e->chunk, LBK_BRUTE_DIST_TR);
    const uint64_t min_batch = e->resident ? BRUTE_MIN_BATCH : BRUTE_STREAM_MIN_BATCH;
    uint64_t batch =
        budget > ref_bytes ? (budget - ref_bytes) / query_bytes(e, e->chunk, needs) : 0;
    batch = min_u64(batch, max_alloc / (ldd * 4));
    batch = min_u64(batch, max_alloc / (select_bytes(e, e->chunk, needs->chain) / 2 + 1));
    batch = min_u64(batch, max_alloc / (row_bytes + 1));
    batch = min_u64(batch, BRUTE_MAX_BATCH);
    return min_u64(batch, BRUTE_DIST_TARGET_BYTES / (ldd * 4) > min_batch
                              ? BRUTE_DIST_TARGET_BYTES / (ldd * 4)
                              : min_batch);
}

static lbk_status plan_error(const lbk_brute *e, uint64_t budget, const char *what)
{
    lbk_error("brute engine: a device memory budget of %llu bytes %s dimension %d with K = %d; "
              "%s",
              (unsigned long long)budget, what, e->dim, e->k, lbk_device_memory_hint(e->dev));
    return LBK_ERR_NOMEM;
}

/* Prefer the whole shard per distance matrix; shrink the chunk while the
 * batch would be too small to amortise launches and the distance rows (not
 * the selection scratch) are what take the room. */
lbk_status lbk_brute_plan(lbk_brute *e, uint64_t budget, uint64_t max_alloc,
                          const lbk_brute_needs *needs)
{
    const uint64_t row_bytes = (uint64_t)e->dim * e->ref_bytes;
    const uint64_t all = lbk_brute_resident_bytes(e, needs);
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
            e->resident ? all : lbk_device_round_up(e->chunk, e->vrows) * row_bytes;
        const uint64_t ldd = lbk_device_round_up(e->chunk, LBK_BRUTE_DIST_TR);
        const uint64_t batch = fit_batch(e, budget, max_alloc, ref_bytes, needs);
        const bool rows_dominate = ldd * 4 > select_bytes(e, e->chunk, needs->chain);
        if ((batch >= min_batch || e->chunk <= e->vrows || !rows_dominate) && batch > 0) {
            e->batch = batch;
            e->ldd = (size_t)ldd;
            return LBK_OK;
        }
        if (e->chunk <= e->vrows)
            return plan_error(e, budget, "cannot hold even one query of");
        /* Chunks start on whole reference blocks of the blocked layout. */
        e->chunk = min_u64(e->n, lbk_device_round_up((e->chunk + 1) / 2, e->vrows));
        if (e->chunk == prev_chunk)
            return plan_error(e, budget, "is too small for");
        prev_chunk = e->chunk;
    }
}

/* The blocked layout is padded with zero rows to whole work-item blocks. */
size_t lbk_brute_padded_rows(const lbk_brute *e, uint64_t rows)
{
    return (size_t)(e->blocked ? lbk_device_round_up(rows, e->vrows) : rows);
}

/* The shard's rows in the distance kernel's layout at dst: row-major for
 * the tiled kernel, blocked (brute_layout.h) for the blocked one. */
static void fill_layout(const lbk_brute *e, const void *points, size_t dim, void *dst)
{
    const size_t n = (size_t)e->n;
    if (!e->blocked) {
        memcpy(dst, points, n * dim * e->ref_bytes);
        return;
    }
    lbk_brute_layout_blocked(points, n, dim, e->vw, lbk_brute_padded_rows(e, e->n), e->ref_bytes,
                             dst);
}

/* Resident on a CPU device: laid out once in huge-page host memory that the
 * buffer then uses in place (no copy by the runtime, 188 MB less touched
 * for Fashion-MNIST, whose set-up went from 0.35-0.41 to 0.17-0.26 s);
 * resident elsewhere: copied from a transient layout (from the rows
 * themselves where the layout is row-major); streamed: laid out into a host
 * copy that lbk_brute_chunk_refs uploads. copy_shard: copy on a CPU device
 * too (lbk_brute_params). */
lbk_status lbk_brute_place_refs(lbk_brute *e, const void *points, bool copy_shard)
{
    const size_t row_bytes = (size_t)e->dim * e->ref_bytes;
    const size_t bytes = lbk_brute_padded_rows(e, e->n) * row_bytes;
    const bool in_place = e->resident && lbk_device_is_cpu(e->dev) && !copy_shard;
    e->refs_bytes = e->resident ? bytes : lbk_brute_padded_rows(e, e->chunk) * row_bytes;
    if (e->resident && !in_place && !e->blocked)
        return lbk_brute_device_buffer(e, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                                       (void *)points, "the reference shard", &e->refs);
    void *layout = lbk_alloc_large(bytes);
    LBK_FAIL_IF(!layout, LBK_ERR_NOMEM,
                "out of host memory laying out the reference shard (%.1f MiB)",
                (double)bytes / (1024.0 * 1024.0));
    fill_layout(e, points, (size_t)e->dim, layout);
    if (e->resident && !in_place) {
        const lbk_status st =
            lbk_brute_device_buffer(e, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, layout,
                                    "the reference shard", &e->refs);
        lbk_alloc_large_free(layout);
        return st;
    }
    e->host_refs = layout;
    if (in_place)
        return lbk_brute_device_buffer(e, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR, bytes,
                                       e->host_refs, "the reference shard", &e->refs);
    return lbk_brute_device_buffer(e, CL_MEM_READ_ONLY,
                                   lbk_brute_padded_rows(e, e->chunk) * row_bytes, NULL,
                                   "a reference chunk", &e->refs);
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

/* In double, rounded to float: L2 squared norms (their error is far inside
 * the bound), IP and COSINE norms rounded up. False when some row is too
 * large for the bound arithmetic to stay finite (then the exact path runs). */
bool lbk_brute_norms(const lbk_brute *e, const float *x, size_t rows, size_t dim, float *out)
{
    const bool plain = lbk_knn_is_similarity(e->metric);
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

/* On the device for the bound and on the host for the settle proofs; far
 * from overflow the bound arithmetic is safe, beyond it the exact path runs
 * instead. */
lbk_status lbk_brute_shard_norms(lbk_brute *e, const void *points, bool *ok)
{
    const size_t rows = lbk_brute_padded_rows(e, e->n);
    bool nomem = false;
    e->host_rnorm = calloc(rows, sizeof *e->host_rnorm);
    LBK_FAIL_IF(!e->host_rnorm, LBK_ERR_NOMEM, "out of host memory for the reference norms");
    /* float16: the norms of the rows as float32 (brute_scale.h). */
    *ok = e->dtype == LBK_DTYPE_FLOAT16
              ? lbk_brute_scale_norms(e, points, e->host_rnorm, &nomem)
              : lbk_brute_norms(e, points, e->n, (size_t)e->dim, e->host_rnorm);
    LBK_FAIL_IF(nomem, LBK_ERR_NOMEM, "out of host memory for the reference norms");
    if (!*ok) {
        free(e->host_rnorm);
        e->host_rnorm = NULL;
        return LBK_OK;
    }
    return lbk_brute_device_buffer(e, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                   rows * sizeof *e->host_rnorm, e->host_rnorm,
                                   "the reference norms", &e->rnorm);
}

void lbk_brute_count_device(lbk_brute *e, uint64_t bytes)
{
    e->device_bytes += bytes;
    if (e->device_bytes > e->device_peak)
        e->device_peak = e->device_bytes;
}

lbk_status lbk_brute_device_buffer(lbk_brute *e, cl_mem_flags flags, size_t bytes, void *host,
                                   const char *what, cl_mem *mem)
{
    LBK_TRY(lbk_device_buffer(e->dev, flags, bytes, host, what, mem));
    lbk_brute_count_device(e, bytes);
    return LBK_OK;
}

lbk_status lbk_brute_buffers(lbk_brute *e, const lbk_brute_buffer *want, size_t count)
{
    for (size_t i = 0; i < count; i++)
        LBK_TRY(lbk_brute_device_buffer(e, want[i].flags, want[i].bytes, NULL, want[i].what,
                                        want[i].mem));
    return LBK_OK;
}

lbk_status lbk_brute_alloc(lbk_brute *e, const lbk_brute_needs *needs, bool norms)
{
    const size_t row_bytes = (size_t)e->dim * 4;
    const size_t b = (size_t)e->batch;
    /* (key, index) entries of the bubble survivors and the sort-merge
     * scratch; a selector has its own. */
    const size_t surv = e->has_selector ? 0 : (size_t)survivor_entries(e, e->chunk, needs->chain);
    const size_t scr = e->has_selector ? 0 : (size_t)sort_scratch_entries(e, e->chunk);
    const lbk_brute_buffer want[] = {
        {&e->queries, b * row_bytes, CL_MEM_READ_ONLY, "a query batch"},
        {&e->dist, b * e->ldd * 4, CL_MEM_READ_WRITE, "the distance matrix"},
        {&e->surv_k, b * surv * 4, CL_MEM_READ_WRITE, "the selection survivors"},
        {&e->surv_i, b * surv * 4, CL_MEM_READ_WRITE, "the selection survivors"},
        {&e->scr_k, b * scr * 4, CL_MEM_READ_WRITE, "the sort-merge scratch"},
        {&e->scr_i, b * scr * 4, CL_MEM_READ_WRITE, "the sort-merge scratch"},
        {&e->best_k, b * (size_t)e->k * 4, CL_MEM_READ_WRITE, "the K best keys"},
        {&e->best_i, b * (size_t)e->k * 4, CL_MEM_READ_WRITE, "the K best indices"},
        {&e->qnorm, b * 4, CL_MEM_READ_ONLY, "the query norms"}, /* last: only with norms */
    };
    const size_t count = sizeof want / sizeof want[0];
    LBK_TRY(lbk_brute_buffers(e, want, norms ? count : count - 1));
    if (!norms)
        return LBK_OK;
    e->host_qnorm = malloc(b * sizeof *e->host_qnorm);
    LBK_FAIL_IF(!e->host_qnorm, LBK_ERR_NOMEM, "out of host memory for the query norms");
    return LBK_OK;
}

/* kernels/brute.cl's LBK_REF for the shard's type. */
static int ref_kind(lbk_dtype type)
{
    switch (type) {
    case LBK_DTYPE_UINT8: return 1;
    case LBK_DTYPE_INT8: return 2;
    case LBK_DTYPE_FLOAT16: return 3;
    default: return 0;
    }
}

lbk_status lbk_brute_compile(lbk_brute *e, int k, size_t limit, uint32_t *w, cl_program *program)
{
    const uint32_t b = (uint32_t)ceil_div((uint64_t)k, limit);
    *w = (uint32_t)ceil_div((uint64_t)k, b);
    uint32_t scan = BRUTE_SCAN_BLOCK / *w;
    if (scan == 0)
        scan = 1;
    /* Short chains filter whole 16-float groups of their distance rows with
     * one vector compare (lbk_filter_row): a multiple of 16 per work-item. */
    if (*w <= BRUTE_VECTOR_FILTER_MAX_W)
        scan = (uint32_t)lbk_device_round_up(scan, 16);
    char options[320];
    snprintf(options, sizeof options,
             "-DLBK_METRIC=%d -DLBK_K=%d -DLBK_W=%u -DLBK_B=%u -DLBK_SCAN=%u "
             "-DLBK_LX=%d -DLBK_LY=%d -DLBK_RB=%d -DLBK_QB=%d -DLBK_TD=%d -DLBK_VW=%u "
             "-DLBK_VQB=%d -DLBK_VRB=%d -DLBK_QT=%d -DLBK_KC=%d -DLBK_REF=%d",
             (int)e->metric, k, *w, b, scan, LBK_BRUTE_DIST_LX, LBK_BRUTE_DIST_LY,
             LBK_BRUTE_DIST_RB, LBK_BRUTE_DIST_QB, LBK_BRUTE_DIST_TD, e->vw,
             e->tuning.block_queries, e->tuning.block_vectors, e->tuning.tile_blocks,
             e->tuning.slice, ref_kind(e->dtype));
    return lbk_device_program(e->dev, "brute.cl", options, program);
}

/* With the sort-merge, brute.cl is built for its distance kernels only: a
 * chain of length 1 keeps its unused bubble kernels small. The device
 * caches the program, so each path asking for it costs one build. */
lbk_status lbk_brute_main_program(lbk_brute *e, size_t limit, uint32_t *w, cl_program *program)
{
    return lbk_brute_compile(e, e->sort_select ? 1 : e->k, limit, w, program);
}

lbk_status lbk_brute_kernel(lbk_brute *e, cl_program program, const char *name, cl_kernel *slot,
                            size_t *fit)
{
    if (*slot) {
        clReleaseKernel(*slot);
        *slot = NULL;
    }
    LBK_TRY(lbk_device_kernel(program, name, slot));
    const size_t wg = lbk_device_kernel_work_group_limit(e->dev, *slot);
    if (wg > 0 && wg < *fit)
        *fit = wg;
    return LBK_OK;
}

/* The distance kernels have fixed shapes, so they must fit as they are. */
lbk_status lbk_brute_dist_fits(const lbk_brute *e, size_t dist_fit)
{
    const size_t dist_need = e->blocked ? DIST_REF_GROUP : LBK_BRUTE_DIST_LX * LBK_BRUTE_DIST_LY;
    LBK_FAIL_IF(dist_fit < dist_need, LBK_ERR_DEVICE,
                "brute engine: the distance kernel needs work-groups of %zu work-items; "
                "%s allows %zu",
                dist_need, lbk_device_description(e->dev), dist_fit);
    return LBK_OK;
}

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
        lbk_device_kernel_name(kernel, name, sizeof name);
        lbk_error("launching kernel %s (%zu x %zu work-items): OpenCL error %s", name, g0, g1,
                  lbk_device_cl_error_name(err));
        return LBK_ERR_DEVICE;
    }
    e->events[e->event_count].event = ev;
    e->events[e->event_count].kind = kind;
    e->event_count++;
    return LBK_OK;
}

/* Once the queue is idle: each kernel's profiled time added to its kind. */
void lbk_brute_finish(lbk_brute *e)
{
    clFinish(lbk_device_queue(e->dev));
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

/* Query blocks per work-item: the tuning's, fewer when the batch would
 * leave compute units without work (BRUTE_GROUPS_PER_CU work-items per unit
 * at least). */
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

/* A blocked distance or bound kernel over nb queries x nr references, with
 * qt query blocks per work-item (its last argument). */
lbk_status lbk_brute_blocked_launch(lbk_brute *e, cl_kernel kernel, cl_uint nb, cl_uint nr,
                                    cl_uint qt)
{
    const size_t rows = ceil_div(ceil_div(nb, (uint64_t)e->tuning.block_queries), qt);
    const size_t cols = ceil_div(nr, e->vrows);
    const size_t lx = cols < DIST_REF_GROUP ? cols : DIST_REF_GROUP;
    return lbk_brute_launch(e, kernel, LBK_BRUTE_EVENT_DISTANCE, lbk_device_round_up(cols, lx),
                            rows, lx, 1);
}

lbk_status lbk_brute_chunk_refs(lbk_brute *e, uint64_t c0, cl_uint nr, cl_ulong *r_first)
{
    *r_first = c0;
    if (!e->resident) {
        /* Blocking: the previous chunk's kernels must be done with the buffer,
         * which the in-order queue guarantees, and the host copy stays valid. */
        const size_t row_bytes = (size_t)e->dim * e->ref_bytes;
        LBK_TRY(lbk_device_cl_check(
            clEnqueueWriteBuffer(lbk_device_queue(e->dev), e->refs, CL_TRUE, 0,
                                 lbk_brute_padded_rows(e, nr) * row_bytes,
                                 (const unsigned char *)e->host_refs + c0 * row_bytes, 0, NULL,
                                 NULL),
            "uploading a reference chunk"));
        *r_first = 0;
    }
    if (e->blocked)
        *r_first /= e->vw; /* the kernel counts whole blocks */
    return LBK_OK;
}

/* The grouped kernel over the chunk's distance rows (groups from the
 * compute units unless set), then the final K of G x K into set->best. */
lbk_status lbk_brute_select(lbk_brute *e, const lbk_brute_bubble_set *set, cl_uint nb, cl_uint nr,
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
    LBK_TRY(lbk_brute_launch(e, set->groups, LBK_BRUTE_EVENT_SELECT, (size_t)groups * set->w, nb,
                             set->w, 1));
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

lbk_status lbk_brute_read_best(lbk_brute *e, uint64_t nq, float *keys, uint32_t *index,
                               cl_bool blocking)
{
    cl_command_queue queue = lbk_device_queue(e->dev);
    const size_t out_bytes = nq * (size_t)e->k * 4;
    LBK_TRY(lbk_device_cl_check(
        clEnqueueReadBuffer(queue, e->best_k, CL_FALSE, 0, out_bytes, keys, 0, NULL, NULL),
        "reading the K best keys"));
    return lbk_device_cl_check(
        clEnqueueReadBuffer(queue, e->best_i, blocking, 0, out_bytes, index, 0, NULL, NULL),
        "reading the K best indices");
}

void lbk_brute_release(lbk_brute *e, cl_kernel *kernels, size_t nk, cl_mem *mems, size_t nm)
{
    for (size_t i = 0; i < nk; i++)
        if (kernels[i])
            clReleaseKernel(kernels[i]);
    for (size_t i = 0; i < nm; i++) {
        if (!mems[i])
            continue;
        size_t bytes = 0;
        /* The size the buffer was made with; unknown, the count stays. */
        if (clGetMemObjectInfo(mems[i], CL_MEM_SIZE, sizeof bytes, &bytes, NULL) == CL_SUCCESS)
            e->device_bytes -= bytes < e->device_bytes ? bytes : e->device_bytes;
        clReleaseMemObject(mems[i]);
    }
}

void lbk_brute_core_release(lbk_brute *e)
{
    /* The shard's buffer may use host memory in place: nothing may still
     * read it. */
    if (e->refs)
        clFinish(lbk_device_queue(e->dev));
    cl_mem mems[] = {e->refs,  e->queries, e->dist,   e->surv_k, e->surv_i, e->scr_k,
                     e->scr_i, e->best_k,  e->best_i, e->rnorm,  e->qnorm,  e->rscale};
    lbk_brute_release(e, NULL, 0, mems, sizeof mems / sizeof mems[0]);
    for (size_t i = 0; i < e->event_count; i++)
        clReleaseEvent(e->events[i].event);
    if (e->has_selector)
        e->selector.destroy(e->selector.ctx);
    free(e->events);
    lbk_alloc_large_free(e->host_refs);
    free(e->host_rnorm);
    free(e->host_qnorm);
    lbk_alloc_large_free(e->host_rscale);
}
