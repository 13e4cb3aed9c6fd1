#include "kdtree.h"

#include "kdtree_build_impl.h"
#include "kdtree_cl.h"
#include "kdtree_select.h"
#include "lbk_shared.h"
#include "log.h"
#include "timer.h"
#include "tree_buckets.h"
#include "tree_query.h"
#include "try.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lbk_kdtree {
    lbk_device *dev;
    uint64_t n;
    int dim;
    lbk_tree_split split;
    int rotation;             /* round robin: the root's dimension */
    lbk_dtype dtype;          /* of the points: the shard's own (kdtree.h) */
    cl_mem points;            /* tree order, at the dtype's width */
    cl_mem ids;               /* original shard row per node */
    cl_mem dims;              /* split dimension per node; NULL for round robin */
    lbk_tree_buckets buckets; /* the query's copy of the bottom levels */
    lbk_kdtree_query_buffers *query_buffers;
    uint64_t bytes;
    lbk_kdtree_stats stats;
};

/* A device buffer and its size, so that the builder can report its peak. */
static const char *const kernel_names[K_COUNT] = {
    "kd_init",        "kd_make_keys",  "kd_radix_hist",   "kd_radix_scan",    "kd_radix_scatter",
    "kd_radix_apply", "kd_copy_range", "kd_bitonic_step", "kd_bitonic_block", "kd_update",
    "kd_child_dims",  "kd_seg_sort",   "kd_seg_pivots"};

/* ---- shape formulas: lbk_shared.h's, with the levels computed from n ---- */

int lbk_kdtree_levels(uint64_t n) { return (int)lbk_kd_levels(n); }

uint64_t lbk_kdtree_subtree_size(uint64_t s, uint64_t n)
{
    return lbk_kd_subtree_size(s, n, lbk_kd_levels(n));
}

uint64_t lbk_kdtree_segment_begin(uint64_t s, uint64_t n)
{
    return lbk_kd_segment_begin(s, n, lbk_kd_levels(n));
}

uint64_t lbk_kdtree_pivot(uint64_t s, uint64_t n) { return lbk_kd_pivot(s, n, lbk_kd_levels(n)); }

static uint64_t scratch_bytes(uint64_t n, int dim, lbk_tree_split split, lbk_tree_sort sort)
{
    const uint64_t pts = n * (uint64_t)dim * sizeof(float);
    const uint64_t dims = split == LBK_SPLIT_WIDEST ? n : 0;
    /* Small buffers: the box, and placeholders for unused arguments. */
    const uint64_t small = 4096 + 8 * (uint64_t)dim;
    if (sort == LBK_SORT_BITONIC)
        return pts + n * 8 + dims + (dims ? n : 0) + small;
    if (sort == LBK_SORT_SELECT)
        return lbk_kdtree_select_bytes(n, dim);
    /* Radix: points, rows and dims twice (ping-pong), tags, keys x2, perm
     * x2, child dims, the histogram table. */
    return 2 * pts + n * (8 + 4 + 16 + 8) + 3 * dims + (1u << 20) + small;
}

/* The lbk_kdtree_builder's scratch, or the built tree (points, ids, split dims) with
 * the query's buckets laid out next to it, whichever is more. */
uint64_t lbk_kdtree_build_bytes(uint64_t n, int dim, lbk_tree_split split, lbk_tree_sort sort)
{
    const uint64_t scratch = scratch_bytes(n, dim, split, sort);
    const uint64_t built = n * ((uint64_t)dim * sizeof(float) + 4u) +
                           (split == LBK_SPLIT_WIDEST ? n : 0) +
                           lbk_tree_buckets_bytes(n, dim, LBK_DTYPE_FLOAT32);
    return scratch > built ? scratch : built;
}

/* ---- buffers and launches ---- */

static lbk_status buf_alloc(lbk_kdtree_builder *b, lbk_kdtree_tracked *t, size_t bytes,
                            void *host, const char *what)
{
    cl_mem_flags flags = CL_MEM_READ_WRITE | (host ? CL_MEM_COPY_HOST_PTR : 0);
    lbk_status st = lbk_device_buffer(b->dev, flags, bytes, host, what, &t->mem);
    if (st != LBK_OK)
        return st;
    t->bytes = bytes ? bytes : 16;
    b->current_bytes += t->bytes;
    if (b->current_bytes > b->peak_bytes)
        b->peak_bytes = b->current_bytes;
    return LBK_OK;
}

static void buf_free(lbk_kdtree_builder *b, lbk_kdtree_tracked *t)
{
    if (t->mem) {
        clReleaseMemObject(t->mem);
        b->current_bytes -= t->bytes;
    }
    t->mem = NULL;
    t->bytes = 0;
}

lbk_status lbk_kdtree_launch(lbk_kdtree_builder *b, int k, uint64_t global, size_t local)
{
    if (global == 0)
        return LBK_OK;
    size_t g = (size_t)global;
    /* Element-wise kernels get explicit work-groups of 256, so that the
     * per-group cost stays small whatever size the runtime would pick. */
    if (!local && g >= b->elementwise_local)
        local = b->elementwise_local;
    if (local)
        g = lbk_device_round_up(g, local);
    const double t0 = b->profile ? lbk_timer_now() : 0.0;
    cl_int err = clEnqueueNDRangeKernel(b->queue, b->kernels[k], 1, NULL, &g,
                                        local ? &local : NULL, 0, NULL, NULL);
    if (b->profile && err == CL_SUCCESS) {
        err = clFinish(b->queue);
        b->kernel_s[k] += lbk_timer_now() - t0;
    }
    if (err != CL_SUCCESS) {
        lbk_error("k-d tree build: launching %s over %zu work-items: OpenCL error %s",
                  kernel_names[k], g, lbk_device_cl_error_name(err));
        return err == CL_OUT_OF_RESOURCES || err == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                       err == CL_OUT_OF_HOST_MEMORY
                   ? LBK_ERR_NOMEM
                   : LBK_ERR_DEVICE;
    }
    return LBK_OK;
}

/* Value `at` of the shard's row-major points as a float (exact for every
 * type). */
static float point_value(const lbk_dataset *ref, uint64_t at)
{
    switch (ref->dtype) {
    case LBK_DTYPE_UINT8: return (float)((const uint8_t *)ref->raw)[at];
    case LBK_DTYPE_INT8: return (float)((const int8_t *)ref->raw)[at];
    case LBK_DTYPE_FLOAT16: return lbk_dataset_half_to_float(((const uint16_t *)ref->raw)[at]);
    default: return ref->points[at];
    }
}

/* The world box and its widest side (ties to the highest dimension), as the
 * widest rule's starting split. */
static lbk_status world_box(const lbk_dataset *ref, float **lo_out, float **hi_out, int *widest)
{
    const int dim = ref->dim;
    float *lo = malloc((size_t)dim * sizeof *lo);
    float *hi = malloc((size_t)dim * sizeof *hi);
    if (!lo || !hi) {
        free(lo);
        free(hi);
        lbk_error("out of host memory for the k-d tree's bounding box");
        return LBK_ERR_NOMEM;
    }
    for (int j = 0; j < dim; j++)
        lo[j] = hi[j] = point_value(ref, (uint64_t)j);
    for (uint64_t i = 1; i < ref->rows; i++) {
        for (int j = 0; j < dim; j++) {
            const float v = point_value(ref, i * (uint64_t)dim + (uint64_t)j);
            lo[j] = v < lo[j] ? v : lo[j];
            hi[j] = v > hi[j] ? v : hi[j];
        }
    }
    float best = -INFINITY;
    *widest = 0;
    for (int j = 0; j < dim; j++) {
        const float w = hi[j] - lo[j];
        if (w >= best) {
            best = w;
            *widest = j;
        }
    }
    *lo_out = lo;
    *hi_out = hi;
    return LBK_OK;
}

static void builder_release(lbk_kdtree_builder *b)
{
    lbk_kdtree_tracked *all[] = {&b->points,   &b->rows,       &b->tags,   &b->dims,
                                 &b->rows2,    &b->dims2,      &b->keys,   &b->keys2,
                                 &b->perm,     &b->perm2,      &b->hist,   &b->world_lo,
                                 &b->world_hi, &b->child_dims, &b->points2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        buf_free(b, all[i]);
    for (int k = 0; k < K_COUNT; k++)
        if (b->kernels[k])
            clReleaseKernel(b->kernels[k]);
}

/* Compact points: the upload beside its float32 copy while widening, and
 * the compact tree beside the float32 one while narrowing (build_compact). */
static uint64_t compact_bytes(uint64_t n, int dim, lbk_dtype type)
{
    return type == LBK_DTYPE_FLOAT32 ? 0 : n * (uint64_t)dim * lbk_dataset_type_bytes(type);
}

static lbk_status choose_sort(const lbk_device *dev, const lbk_kdtree_params *params, uint64_t n,
                              int dim, lbk_dtype type, lbk_tree_sort *out)
{
    const uint64_t budget =
        params->memory_budget ? params->memory_budget : lbk_device_global_mem(dev);
    const uint64_t max_alloc = lbk_device_max_alloc(dev);
    const uint64_t largest =
        n * (uint64_t)dim * sizeof(float) > n * 8 ? n * (uint64_t)dim * sizeof(float) : n * 8;
    const uint64_t extra = compact_bytes(n, dim, type);
    const uint64_t radix = lbk_kdtree_build_bytes(n, dim, params->split, LBK_SORT_RADIX) + extra;
    const uint64_t bitonic =
        lbk_kdtree_build_bytes(n, dim, params->split, LBK_SORT_BITONIC) + extra;
    const uint64_t select = lbk_kdtree_select_bytes(n, dim) + extra;
    const bool radix_fits = radix <= budget && largest <= max_alloc;
    const bool bitonic_fits = bitonic <= budget && n * (uint64_t)dim * 4 <= max_alloc;
    const bool select_fits = select <= budget && n * (uint64_t)dim * 4 <= max_alloc;
    const bool rr = params->split == LBK_SPLIT_ROUND_ROBIN;
    lbk_tree_sort sort = params->sort;
    LBK_FAIL_IF(sort == LBK_SORT_SELECT && !rr, LBK_ERR_CONFIG,
                "k-d tree: the select lbk_kdtree_builder supports the round_robin split only");
    /* A CPU runs the select lbk_kdtree_builder fastest (bench/results/cpu.md); a GPU
     * wants the many short runs of the radix sort. */
    if (sort == LBK_SORT_AUTO && rr && !lbk_device_is_gpu(dev) && select_fits)
        sort = LBK_SORT_SELECT;
    if (sort == LBK_SORT_AUTO)
        sort = radix_fits ? LBK_SORT_RADIX : LBK_SORT_BITONIC;
    const bool fits = sort == LBK_SORT_RADIX    ? radix_fits
                      : sort == LBK_SORT_SELECT ? select_fits
                                                : bitonic_fits;
    if (!fits) {
        /* Bytes beside the MiB: near a small budget both round alike. */
        const uint64_t need = sort == LBK_SORT_RADIX    ? radix
                              : sort == LBK_SORT_SELECT ? select
                                                        : bitonic;
        lbk_error("k-d tree of %llu points x %d dimensions with the %s sort needs %.1f MiB "
                  "(%llu bytes) of device memory (largest buffer %.1f MiB); the budget is "
                  "%.1f MiB (%llu bytes) and the device's largest allocation %.1f MiB; %s",
                  (unsigned long long)n, dim, lbk_tree_sort_name(sort), (double)need / 1048576.0,
                  (unsigned long long)need, (double)largest / 1048576.0,
                  (double)budget / 1048576.0, (unsigned long long)budget,
                  (double)max_alloc / 1048576.0, lbk_device_memory_hint(dev));
        return LBK_ERR_NOMEM;
    }
    *out = sort;
    return LBK_OK;
}

static lbk_status check_shape(const lbk_kdtree_params *params, uint64_t n, int dim)
{
    LBK_FAIL_IF(dim < 1 || (params->split == LBK_SPLIT_WIDEST && dim > 256), LBK_ERR_INPUT,
                "k-d tree: %d dimensions not supported (1..%d with the %s split)", dim,
                params->split == LBK_SPLIT_WIDEST ? 256 : 1 << 30,
                lbk_tree_split_name(params->split));
    LBK_FAIL_IF(n >= UINT32_MAX, LBK_ERR_INPUT,
                "k-d tree: a shard of %llu points is too large (row ids are 32-bit; use "
                "more ranks)",
                (unsigned long long)n);
    return LBK_OK;
}

/* Runs (subtrees) of at most this many points are sorted (built) one per
 * work-item: the tuning's 2^segment_log2 (tuning.c: 64 Ki points on CPUs,
 * 256 on GPUs) unless the parameters force it. The tests force either
 * path. */
static uint64_t segment_max_for(const lbk_device *dev, const lbk_kdtree_params *params)
{
    if (params->segment_max_set)
        return params->segment_max;
    lbk_tuning derived;
    if (!params->tuning)
        lbk_tuning_derive(dev, &derived);
    const lbk_tuning *tuning = params->tuning ? params->tuning : &derived;
    return (uint64_t)1 << tuning->segment_log2;
}

/* The lbk_kdtree_builder's sizes and launch limits for this device and shard. */
static void builder_plan(lbk_kdtree_builder *b, lbk_device *dev, const lbk_kdtree_params *params,
                         uint64_t n, int dim)
{
    b->dev = dev;
    b->queue = lbk_device_queue(dev);
    b->n = n;
    b->dim = dim;
    b->levels = lbk_kdtree_levels(n);
    b->has_dims = params->split == LBK_SPLIT_WIDEST;
    b->rotation = params->rotation;
    b->profile = params->profile;
    b->segment_max = segment_max_for(dev, params);
    b->compute_units = lbk_device_compute_units(dev) > 0 ? lbk_device_compute_units(dev) : 1;
    b->radix_blocks_max = lbk_device_is_gpu(dev) ? 4096 : 16 * (uint64_t)b->compute_units;
    b->elementwise_local = 256;
}

static lbk_status builder_kernels(lbk_kdtree_builder *b)
{
    cl_program program;
    LBK_TRY(lbk_device_program(b->dev, "kdtree.cl", "", &program));
    for (int k = 0; k < K_COUNT; k++)
        LBK_TRY(lbk_device_kernel(program, kernel_names[k], &b->kernels[k]));
    size_t wg = 0;
    const cl_int err = clGetKernelWorkGroupInfo(b->kernels[K_BLOCK], lbk_device_id(b->dev),
                                                CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL);
    LBK_TRY(lbk_device_cl_check(err, "querying the bitonic kernel's work-group size"));
    b->block_local = 1;
    while (b->block_local * 2 <= wg && b->block_local < 512)
        b->block_local *= 2;
    return LBK_OK;
}

/* The radix sort's second copy of the state and its keys. */
static lbk_status alloc_radix(lbk_kdtree_builder *b, size_t pts_bytes)
{
    const size_t n = (size_t)b->n;
    LBK_TRY(buf_alloc(b, &b->points2, pts_bytes, NULL, "k-d tree points (sorted)"));
    LBK_TRY(buf_alloc(b, &b->rows2, n * 4, NULL, "k-d tree row ids (sorted)"));
    LBK_TRY(buf_alloc(b, &b->dims2, b->has_dims ? n : 0, NULL, "k-d tree dims (sorted)"));
    LBK_TRY(buf_alloc(b, &b->keys, n * 8, NULL, "k-d tree sort keys"));
    LBK_TRY(buf_alloc(b, &b->keys2, n * 8, NULL, "k-d tree sort keys"));
    LBK_TRY(buf_alloc(b, &b->perm, n * 4, NULL, "k-d tree permutation"));
    LBK_TRY(buf_alloc(b, &b->perm2, n * 4, NULL, "k-d tree permutation"));
    return buf_alloc(b, &b->hist, 256 * 4 * b->radix_blocks_max, NULL,
                     "k-d tree radix histogram");
}

static lbk_status builder_alloc(lbk_kdtree_builder *b, const lbk_dataset *reference,
                                float *box_lo, float *box_hi)
{
    const size_t n = (size_t)b->n;
    const size_t pts_bytes = n * (size_t)b->dim * sizeof(float);
    if (b->points.mem) { /* compact points widened on the device (build_compact) */
        b->points.bytes = pts_bytes ? pts_bytes : 16;
        b->current_bytes += b->points.bytes;
        b->peak_bytes = b->current_bytes > b->peak_bytes ? b->current_bytes : b->peak_bytes;
    } else {
        LBK_TRY(buf_alloc(b, &b->points, pts_bytes, reference->points, "k-d tree points"));
    }
    LBK_TRY(buf_alloc(b, &b->rows, n * 4, NULL, "k-d tree row ids"));
    LBK_TRY(buf_alloc(b, &b->tags, n * 4, NULL, "k-d tree tags"));
    LBK_TRY(buf_alloc(b, &b->dims, b->has_dims ? n : 0, NULL, "k-d tree split dims"));
    if (b->has_dims) {
        LBK_TRY(buf_alloc(b, &b->world_lo, (size_t)b->dim * 4, box_lo, "k-d tree box"));
        LBK_TRY(buf_alloc(b, &b->world_hi, (size_t)b->dim * 4, box_hi, "k-d tree box"));
        LBK_TRY(buf_alloc(b, &b->child_dims, n, NULL, "k-d tree child dims"));
    }
    return b->sort == LBK_SORT_RADIX ? alloc_radix(b, pts_bytes) : LBK_OK;
}

/* Widest rule: the split dimensions of level l's children. */
static lbk_status child_dims(lbk_kdtree_builder *b, int l)
{
    const cl_ulong cn = b->n;
    const cl_uint clevels = (cl_uint)b->levels, clevel = (cl_uint)l;
    LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_CHILD], LBK_ARG(b->points.mem), LBK_ARG(b->dim),
                            LBK_ARG(b->dims.mem), LBK_ARG(b->world_lo.mem),
                            LBK_ARG(b->world_hi.mem), LBK_ARG(cn), LBK_ARG(clevels),
                            LBK_ARG(clevel), LBK_ARG(b->child_dims.mem)));
    LBK_TRY(lbk_kdtree_launch(b, K_CHILD, (uint64_t)1 << l, 0));
    b->moved += ((uint64_t)1 << l) * (uint64_t)(b->dim * (l + 1)) * 5;
    return LBK_OK;
}

/* Every unsettled point after level l learns which child it went to. */
static lbk_status update_tags(lbk_kdtree_builder *b, int l)
{
    const cl_ulong cn = b->n, lo_upd = ((uint64_t)1 << l) - 1;
    const cl_uint clevels = (cl_uint)b->levels, clevel = (cl_uint)l;
    LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_UPDATE], LBK_ARG(b->tags.mem), LBK_ARG(b->dims.mem),
                            LBK_ARG(b->has_dims), LBK_ARG(b->child_dims.mem), LBK_ARG(lo_upd),
                            LBK_ARG(cn), LBK_ARG(clevels), LBK_ARG(clevel)));
    LBK_TRY(lbk_kdtree_launch(b, K_UPDATE, b->n - lo_upd, 0));
    b->moved += (b->n - lo_upd) * (8 + (b->has_dims ? 2 : 0));
    return LBK_OK;
}

/* Split level l: sort by (tag, coordinate), then pass the tags down. */
static lbk_status split_level(lbk_kdtree_builder *b, int l)
{
    /* Level l-1's pivots still sit inside their segments; the sort moves
     * them to their final slots in front. */
    const uint64_t lo_sort = l == 0 ? 0 : ((uint64_t)1 << (l - 1)) - 1;
    const uint32_t tag_hi = (uint32_t)(((uint64_t)1 << (l + 1)) - 2);
    LBK_TRY(lbk_kdtree_sort_range(b, lo_sort, (uint32_t)lo_sort, tag_hi, 0, l));
    if (b->has_dims)
        LBK_TRY(child_dims(b, l));
    /* A segmented sort reads the structure, not the tags: the update
     * before it would only write tags nobody reads. */
    if (b->sort == LBK_SORT_RADIX &&
        (l + 2 == b->levels ||
         lbk_kdtree_subtree_size(((uint64_t)1 << (l + 1)) - 1, b->n) <= b->segment_max))
        return LBK_OK;
    return update_tags(b, l);
}

static lbk_status build_levels(lbk_kdtree_builder *b, int first_dim)
{
    const cl_uint cfirst = (cl_uint)first_dim;
    const cl_ulong cn = b->n;
    LBK_TRY(LBK_KERNEL_ARGS(b->kernels[K_INIT], LBK_ARG(b->tags.mem), LBK_ARG(b->rows.mem),
                            LBK_ARG(b->dims.mem), LBK_ARG(b->has_dims), LBK_ARG(cfirst),
                            LBK_ARG(cn)));
    LBK_TRY(lbk_kdtree_launch(b, K_INIT, b->n, 0));
    for (int l = 0; l + 2 <= b->levels; l++)
        LBK_TRY(split_level(b, l));
    const uint64_t lo_final = b->levels >= 2 ? ((uint64_t)1 << (b->levels - 2)) - 1 : 0;
    LBK_TRY(lbk_kdtree_sort_range(b, lo_final, (uint32_t)lo_final, (uint32_t)(b->n - 1), 1, 0));
    return lbk_device_cl_check(clFinish(b->queue), "finishing the k-d tree build");
}

static void print_profile(const lbk_kdtree_builder *b)
{
    for (int k = 0; k < K_COUNT; k++)
        if (b->kernel_s[k] > 0)
            fprintf(stderr, "kdtree profile: %-18s %.4f s\n", kernel_names[k], b->kernel_s[k]);
}

/* Build a non-empty tree's buffers; the tree keeps only what queries need. */
static lbk_status build_on_device(lbk_device *dev, const lbk_dataset *reference, cl_mem wide,
                                  const lbk_kdtree_params *params, lbk_tree_sort sort,
                                  lbk_kdtree *tree)
{
    lbk_status st = LBK_OK;
    lbk_kdtree_builder b;
    memset(&b, 0, sizeof b);
    b.points.mem = wide; /* taken over: released with the builder's on failure */
    b.sort = sort;
    float *box_lo = NULL, *box_hi = NULL;
    int first_dim = 0;
    builder_plan(&b, dev, params, reference->rows, reference->dim);
    LBK_TRY_GOTO(st, builder_kernels(&b));
    if (b.has_dims)
        LBK_TRY_GOTO(st, world_box(reference, &box_lo, &box_hi, &first_dim));
    LBK_TRY_GOTO(st, builder_alloc(&b, reference, box_lo, box_hi));
    LBK_TRY_GOTO(st, build_levels(&b, first_dim));
    if (b.profile)
        print_profile(&b);
    tree->points = b.points.mem;
    tree->ids = b.rows.mem;
    tree->dims = b.has_dims ? b.dims.mem : NULL;
    tree->bytes = b.points.bytes + b.rows.bytes + (b.has_dims ? b.dims.bytes : 0);
    b.points.mem = b.rows.mem = NULL;
    if (b.has_dims)
        b.dims.mem = NULL;
    tree->stats.peak_device_bytes = b.peak_bytes;
    tree->stats.bytes_moved = b.moved;
cleanup:
    builder_release(&b);
    free(box_lo);
    free(box_hi);
    return st;
}

/* The select lbk_kdtree_builder (kdtree_select.h). */
static lbk_status build_select(lbk_device *dev, const lbk_dataset *reference, cl_mem wide,
                               const lbk_kdtree_params *params, lbk_kdtree *tree)
{
    lbk_kdtree_select_tree out;
    LBK_TRY(lbk_kdtree_select_build(dev, reference, wide, segment_max_for(dev, params),
                                    params->rotation, params->profile, &out));
    tree->points = out.points;
    tree->ids = out.ids;
    tree->bytes = (uint64_t)reference->rows * ((uint64_t)reference->dim * 4 + 4);
    tree->stats.peak_device_bytes = out.peak_bytes;
    tree->stats.bytes_moved = out.moved;
    return LBK_OK;
}

static lbk_status verify(const lbk_kdtree *tree)
{
    float *pts = NULL;
    uint32_t *ids = NULL;
    uint8_t *sd = NULL;
    lbk_status st = lbk_kdtree_download(tree, &pts, &ids, &sd);
    if (st == LBK_OK)
        st = lbk_kdtree_check(pts, tree->n, tree->dim, sd, tree->rotation);
    free(pts);
    free(ids);
    free(sd);
    return st;
}

/* The query program, compiled now (the device caches it): built on the
 * first query instead, it cost every rank about 23 ms of its query phase
 * even from PoCL's kernel cache, 10% of a half-size MPI slice. The query's
 * buckets are laid out by lbk_kdtree_prepare_query, but counted here. */
static lbk_status finish_tree(lbk_kdtree *tree)
{
    cl_program query_program;
    LBK_TRY(lbk_device_program_kept(tree->dev, "tree_query.cl",
                                    lbk_tree_buckets_program_options(tree->dtype),
                                    &query_program));
    tree->bytes += lbk_tree_buckets_bytes(tree->n, tree->dim, tree->dtype);
    if (tree->stats.peak_device_bytes < tree->bytes)
        tree->stats.peak_device_bytes = tree->bytes;
    return LBK_OK;
}

/* The built tree's float32 points back to the shard's type, exactly. */
static lbk_status narrow_on_device(lbk_kdtree *tree)
{
    const uint64_t count = tree->n * (uint64_t)tree->dim;
    const uint64_t value = lbk_dataset_type_bytes(tree->dtype);
    cl_mem narrow = NULL;
    LBK_TRY(lbk_kdtree_compact_narrow(tree->dev, tree->dtype, tree->points, count, &narrow));
    if (tree->stats.peak_device_bytes < tree->bytes + count * value)
        tree->stats.peak_device_bytes = tree->bytes + count * value;
    clReleaseMemObject(tree->points);
    tree->points = narrow;
    tree->bytes -= count * (sizeof(float) - value);
    return LBK_OK;
}

/* A non-empty tree by the chosen builder; compact points through a float32
 * copy on the device (build peak: that copy, as a float32 shard's, beside
 * the compact upload while widening), the tree then held compact. */
static lbk_status build_any(lbk_device *dev, const lbk_dataset *reference,
                            const lbk_kdtree_params *params, lbk_kdtree *tree)
{
    cl_mem wide = NULL;
    uint64_t widen_peak = 0;
    if (reference->dtype != LBK_DTYPE_FLOAT32)
        LBK_TRY(lbk_kdtree_compact_widen(dev, reference, &wide, &widen_peak));
    if (tree->stats.sort_used == LBK_SORT_SELECT)
        LBK_TRY(build_select(dev, reference, wide, params, tree));
    else
        LBK_TRY(build_on_device(dev, reference, wide, params, tree->stats.sort_used, tree));
    if (tree->stats.peak_device_bytes < widen_peak)
        tree->stats.peak_device_bytes = widen_peak;
    return reference->dtype == LBK_DTYPE_FLOAT32 ? LBK_OK : narrow_on_device(tree);
}

lbk_status lbk_kdtree_build(lbk_device *dev, const lbk_dataset *reference,
                            const lbk_kdtree_params *params, lbk_kdtree **out)
{
    lbk_status st = LBK_OK;
    const double t0 = lbk_timer_now();
    const uint64_t n = reference->rows;

    *out = NULL;
    LBK_TRY(check_shape(params, n, reference->dim));
    lbk_kdtree *tree = calloc(1, sizeof *tree);
    LBK_FAIL_IF(!tree, LBK_ERR_NOMEM, "out of host memory for the k-d tree");
    tree->dev = dev;
    tree->n = n;
    tree->dim = reference->dim;
    tree->split = params->split;
    tree->rotation = params->split == LBK_SPLIT_ROUND_ROBIN ? params->rotation : 0;
    tree->dtype = reference->dtype;
    LBK_TRY_GOTO(st, choose_sort(dev, params, n, reference->dim, reference->dtype,
                                 &tree->stats.sort_used));
    tree->stats.levels = lbk_kdtree_levels(n);
    if (n > 0)
        LBK_TRY_GOTO(st, build_any(dev, reference, params, tree));
    tree->stats.build_s = lbk_timer_now() - t0;
    LBK_TRY_GOTO(st, finish_tree(tree));
    if (params->verify && n > 0)
        LBK_TRY_GOTO(st, verify(tree));
    *out = tree;
    tree = NULL;
cleanup:
    lbk_kdtree_destroy(tree);
    return st;
}

lbk_status lbk_kdtree_upload(lbk_device *dev, const lbk_kdtree_image *image, lbk_kdtree **out)
{
    lbk_status st = LBK_OK;
    const double t0 = lbk_timer_now();
    const uint64_t n = image->n;
    *out = NULL;
    lbk_kdtree *tree = calloc(1, sizeof *tree);
    LBK_FAIL_IF(!tree, LBK_ERR_NOMEM, "out of host memory for the k-d tree");
    tree->dev = dev;
    tree->n = n;
    tree->dim = image->dim;
    tree->split = image->split_dims ? LBK_SPLIT_WIDEST : LBK_SPLIT_ROUND_ROBIN;
    tree->rotation = image->split_dims ? 0 : image->rotation;
    tree->dtype = image->dtype;
    tree->stats.sort_used = image->sort_used;
    tree->stats.levels = lbk_kdtree_levels(n);
    const cl_mem_flags flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
    const size_t pts = (size_t)n * (size_t)image->dim * lbk_dataset_type_bytes(image->dtype);
    if (n > 0) {
        LBK_TRY_GOTO(st, lbk_device_buffer(dev, flags, pts, image->points, "k-d tree points",
                                           &tree->points));
        LBK_TRY_GOTO(st, lbk_device_buffer(dev, flags, (size_t)n * 4, image->ids, "k-d tree ids",
                                           &tree->ids));
        if (image->split_dims)
            LBK_TRY_GOTO(st, lbk_device_buffer(dev, flags, (size_t)n, image->split_dims,
                                               "k-d tree split dims", &tree->dims));
        tree->bytes = pts + (size_t)n * 4 + (image->split_dims ? (size_t)n : 0);
    }
    LBK_TRY_GOTO(st, finish_tree(tree));
    tree->stats.build_s = lbk_timer_now() - t0;
    *out = tree;
    tree = NULL;
cleanup:
    lbk_kdtree_destroy(tree);
    return st;
}

void lbk_kdtree_get_stats(const lbk_kdtree *tree, lbk_kdtree_stats *stats)
{
    *stats = tree->stats;
}

/* Compact values read into the front of a float array, widened in place
 * from the back (each float lies at or after its compact value). */
static void widen_downloaded(lbk_dtype type, float *p, size_t count)
{
    const void *raw = p;
    for (size_t i = count; i-- > 0;) {
        switch (type) {
        case LBK_DTYPE_UINT8: p[i] = (float)((const uint8_t *)raw)[i]; break;
        case LBK_DTYPE_INT8: p[i] = (float)((const int8_t *)raw)[i]; break;
        case LBK_DTYPE_FLOAT16:
            p[i] = lbk_dataset_half_to_float(((const uint16_t *)raw)[i]);
            break;
        default: return;
        }
    }
}

/* The tree's arrays on the host; `widen`: the points as float32 (room for
 * n * dim floats, the compact values read into its front). */
static lbk_status download(const lbk_kdtree *tree, bool widen, void **points, uint32_t **ids,
                           uint8_t **split_dims)
{
    lbk_status st = LBK_OK;
    const uint64_t n = tree->n;
    void *p = NULL;
    uint32_t *r = NULL;
    uint8_t *d = NULL;
    *points = NULL;
    *ids = NULL;
    *split_dims = NULL;
    if (n == 0)
        return LBK_OK;
    const size_t count = (size_t)n * (size_t)tree->dim;
    const size_t pts_bytes = count * lbk_dataset_type_bytes(tree->dtype);
    p = malloc(widen ? count * sizeof(float) : pts_bytes);
    r = malloc((size_t)n * sizeof *r);
    if (tree->dims)
        d = malloc((size_t)n);
    if (!p || !r || (tree->dims && !d)) {
        lbk_error("out of host memory downloading a k-d tree of %llu points",
                  (unsigned long long)n);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    cl_command_queue q = lbk_device_queue(tree->dev);
    LBK_TRY_GOTO(st, lbk_device_cl_check(clEnqueueReadBuffer(q, tree->points, CL_TRUE, 0,
                                                             pts_bytes, p, 0, NULL, NULL),
                                         "downloading k-d tree points"));
    if (widen)
        widen_downloaded(tree->dtype, p, count);
    LBK_TRY_GOTO(st, lbk_device_cl_check(clEnqueueReadBuffer(q, tree->ids, CL_TRUE, 0,
                                                             (size_t)n * 4, r, 0, NULL, NULL),
                                         "downloading k-d tree ids"));
    if (d)
        LBK_TRY_GOTO(st, lbk_device_cl_check(clEnqueueReadBuffer(q, tree->dims, CL_TRUE, 0,
                                                                 (size_t)n, d, 0, NULL, NULL),
                                             "downloading k-d tree split dims"));
    *points = p;
    *ids = r;
    *split_dims = d;
    p = NULL;
    r = NULL;
    d = NULL;
cleanup:
    free(p);
    free(r);
    free(d);
    return st;
}

lbk_status lbk_kdtree_download(const lbk_kdtree *tree, float **points, uint32_t **ids,
                               uint8_t **split_dims)
{
    void *p = NULL;
    const lbk_status st = download(tree, true, &p, ids, split_dims);
    *points = p;
    return st;
}

lbk_status lbk_kdtree_download_raw(const lbk_kdtree *tree, void **points, uint32_t **ids,
                                   uint8_t **split_dims)
{
    return download(tree, false, points, ids, split_dims);
}

/* Checking every node against each of its ancestors is the same as checking
 * every node against the bounds of its whole subtree, in O(n log n). NaN
 * coordinates fail the comparisons and are reported as violations. */
lbk_status lbk_kdtree_check(const float *points, uint64_t n, int dim, const uint8_t *split_dims,
                            int rotation)
{
    for (uint64_t i = 0; i < n; i++) {
        if (split_dims && split_dims[i] >= dim) {
            lbk_error("internal: k-d tree node %llu has split dimension %d of %d",
                      (unsigned long long)i, split_dims[i], dim);
            return LBK_ERR_INTERNAL;
        }
    }
    for (uint64_t i = 1; i < n; i++) {
        const float *p = points + i * (uint64_t)dim;
        for (uint64_t x = i; x > 0;) {
            const uint64_t a = (x - 1) / 2;
            const int d = split_dims
                              ? split_dims[a]
                              : (int)(((lbk_u32)rotation + lbk_kd_level(a)) % (lbk_u32)dim);
            const float plane = points[a * (uint64_t)dim + (uint64_t)d];
            const bool left = x == 2 * a + 1;
            if (left ? !(p[d] <= plane) : !(p[d] >= plane)) {
                lbk_error("internal: k-d invariant violated: node %llu (split dimension %d, "
                          "plane %.9g) has node %llu in its %s subtree with coordinate %.9g",
                          (unsigned long long)a, d, (double)plane, (unsigned long long)i,
                          left ? "left" : "right", (double)p[d]);
                return LBK_ERR_INTERNAL;
            }
            x = a;
        }
    }
    return LBK_OK;
}

void lbk_kdtree_destroy(lbk_kdtree *tree)
{
    if (!tree)
        return;
    if (tree->points)
        clReleaseMemObject(tree->points);
    if (tree->ids)
        clReleaseMemObject(tree->ids);
    if (tree->dims)
        clReleaseMemObject(tree->dims);
    lbk_tree_buckets_release(&tree->buckets);
    lbk_tree_query_buffers_free(tree->query_buffers);
    free(tree);
}

lbk_kdtree_query_buffers **lbk_kdtree_query_buffers_slot(lbk_kdtree *tree)
{
    return &tree->query_buffers;
}

lbk_device *lbk_kdtree_device(const lbk_kdtree *tree) { return tree->dev; }
uint64_t lbk_kdtree_size(const lbk_kdtree *tree) { return tree->n; }
int lbk_kdtree_dim(const lbk_kdtree *tree) { return tree->dim; }
cl_mem lbk_kdtree_points(const lbk_kdtree *tree) { return tree->points; }
cl_mem lbk_kdtree_ids(const lbk_kdtree *tree) { return tree->ids; }
cl_mem lbk_kdtree_split_dims(const lbk_kdtree *tree) { return tree->dims; }
int lbk_kdtree_rotation(const lbk_kdtree *tree) { return tree->rotation; }
lbk_dtype lbk_kdtree_dtype(const lbk_kdtree *tree) { return tree->dtype; }
uint64_t lbk_kdtree_bytes(const lbk_kdtree *tree) { return tree->bytes; }
const lbk_tree_buckets *lbk_kdtree_buckets(const lbk_kdtree *tree) { return &tree->buckets; }

lbk_status lbk_kdtree_prepare_query(lbk_kdtree *tree)
{
    if (tree->n == 0 || tree->buckets.points)
        return LBK_OK;
    return lbk_tree_buckets_make(tree->dev, tree->points, tree->ids, tree->n, tree->dim,
                                 tree->dtype, &tree->buckets);
}
