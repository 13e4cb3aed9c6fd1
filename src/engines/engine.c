#include "engine.h"

#include "alloc_large.h"
#include "brute.h"
#include "kdtree.h"
#include "kdtree_cl.h"
#include "lbk_shared.h"
#include "log.h"
#include "tree_query.h"
#include "tree_radius.h"
#include "try.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Both engines pass lbk_metric values to their kernels as metric ids. */
_Static_assert(LBK_KERNEL_METRIC_L2 == (int)LBK_METRIC_L2 &&
                   LBK_KERNEL_METRIC_L1 == (int)LBK_METRIC_L1 &&
                   LBK_KERNEL_METRIC_LINF == (int)LBK_METRIC_LINF &&
                   LBK_KERNEL_METRIC_COSINE == (int)LBK_METRIC_COSINE &&
                   LBK_KERNEL_METRIC_IP == (int)LBK_METRIC_IP,
               "kernel metric ids (lbk_shared.h) equal lbk_metric (enums.h)");

struct lbk_engine_state {
    lbk_engine engine;
    int k;
    lbk_metric metric;
    uint64_t memory_budget;
    lbk_brute *brute;
    lbk_kdtree *tree;
    lbk_brute_timing brute_paths;  /* the brute engine's path counts, every call summed */
    lbk_tree_query_work tree_work; /* the tree's, every call summed */
    const lbk_device *dev;
    uint64_t radius_window;      /* lbk_engine_params */
    uint64_t brute_radius_evals; /* the brute engine's radius keys, every call summed */
    lbk_dtype dtype;             /* the reference points' (dataset.h) */
};

lbk_engine lbk_engine_resolve(const lbk_engine_params *params, int dim, uint64_t reference_rows,
                              const char **why)
{
    if (params->engine == LBK_ENGINE_KDTREE) {
        *why = "requested by knn.engine";
        return LBK_ENGINE_KDTREE;
    }
    if (params->engine == LBK_ENGINE_BRUTE) {
        *why = "requested by knn.engine";
        return LBK_ENGINE_BRUTE;
    }
    if (lbk_knn_is_similarity(params->metric)) {
        *why = "cosine and ip have no k-d tree bound: brute force";
        return LBK_ENGINE_BRUTE;
    }
    if (params->k > LBK_TREE_K_MAX) {
        *why = "K above the k-d tree's maximum: brute force";
        return LBK_ENGINE_BRUTE;
    }
    return lbk_tree_query_is_preferred(dim, reference_rows, params->k, why) ? LBK_ENGINE_KDTREE
                                                                            : LBK_ENGINE_BRUTE;
}

/* An engine's state before its engine is made: the search's parameters. */
static lbk_engine_state *state_new(const lbk_device *dev, const lbk_engine_params *params,
                                   lbk_engine engine)
{
    lbk_engine_state *state = calloc(1, sizeof *state);
    if (!state) {
        lbk_error("out of host memory creating the engine");
        return NULL;
    }
    state->engine = engine;
    state->k = params->k;
    state->metric = params->metric;
    state->memory_budget = params->memory_budget;
    state->radius_window = params->radius_window;
    state->dev = dev;
    /* Under an address-space limit the device's memory is what the limit
     * leaves (lbk_device_global_mem), and a budget beyond it would fail
     * inside the OpenCL runtime. */
    if (lbk_device_memory_capped(dev) && state->memory_budget > lbk_device_global_mem(dev))
        state->memory_budget = lbk_device_global_mem(dev);
    return state;
}

/* A made engine to the caller (a tree with its query's buckets laid out),
 * or destroyed where making it failed. */
static lbk_status hand_over(lbk_engine_state *state, lbk_status st, lbk_engine_state **out)
{
    if (st == LBK_OK && state->tree)
        st = lbk_kdtree_prepare_query(state->tree);
    if (st == LBK_OK) {
        *out = state;
        return LBK_OK;
    }
    lbk_engine_destroy(state);
    return st;
}

/* The index widens a shard beyond the limit before (widen_for_plan). */
static bool tree_keys_exact(const lbk_dataset *reference)
{
    if (!lbk_dataset_type_integer(reference->dtype) || reference->dim <= LBK_KDTREE_INT_DIM_MAX)
        return true;
    lbk_error("the k-d tree's keys over %s points are exact up to %d dimensions, not %d; "
              "widen them first",
              lbk_dtype_name(reference->dtype), LBK_KDTREE_INT_DIM_MAX, reference->dim);
    return false;
}

lbk_status lbk_engine_create(lbk_device *dev, const lbk_engine_params *params, lbk_engine engine,
                             const lbk_dataset *reference, lbk_engine_state **out)
{
    lbk_status st = LBK_OK;
    *out = NULL;
    lbk_engine_state *state = state_new(dev, params, engine);
    if (!state)
        return LBK_ERR_NOMEM;
    state->dtype = reference->dtype;
    if (engine == LBK_ENGINE_KDTREE && !tree_keys_exact(reference)) {
        st = LBK_ERR_CONFIG;
    } else if (engine == LBK_ENGINE_BRUTE) {
        const lbk_brute_params brute = {
            .k = params->k,
            .metric = params->metric,
            .groups = params->groups,
            .memory_budget = state->memory_budget,
            .tuning = params->tuning,
        };
        st = lbk_brute_create(dev, reference, &brute, &state->brute);
    } else if (lbk_knn_is_similarity(params->metric) || params->k > LBK_TREE_K_MAX) {
        /* The job's checks reject these; parameters filled by code may not. */
        lbk_error("the k-d tree supports l2, l1 and linf with K <= %d, not %s with K = %d",
                  LBK_TREE_K_MAX, lbk_metric_name(params->metric), params->k);
        st = LBK_ERR_CONFIG;
    } else {
        const lbk_kdtree_params tree = {
            .split = params->split,
            .rotation = params->rotation,
            .sort = params->sort,
            .verify = params->verify,
            .memory_budget = state->memory_budget,
            .tuning = params->tuning,
        };
        st = lbk_kdtree_build(dev, reference, &tree, &state->tree);
    }
    return hand_over(state, st, out);
}

lbk_status lbk_engine_export(const lbk_engine_state *state, lbk_engine_image *image)
{
    memset(image, 0, sizeof *image);
    if (!state->tree)
        return LBK_OK;
    lbk_kdtree_stats stats;
    lbk_kdtree_get_stats(state->tree, &stats);
    image->has_tree = true;
    image->tree.n = lbk_kdtree_size(state->tree);
    image->tree.dim = lbk_kdtree_dim(state->tree);
    image->tree.sort_used = stats.sort_used;
    image->tree.rotation = lbk_kdtree_rotation(state->tree);
    image->tree.dtype = lbk_kdtree_dtype(state->tree);
    return lbk_kdtree_download_raw(state->tree, &image->tree.points, &image->tree.ids,
                                   &image->tree.split_dims);
}

void lbk_engine_image_free(lbk_engine_image *image)
{
    free(image->tree.points);
    free(image->tree.ids);
    free(image->tree.split_dims);
    memset(image, 0, sizeof *image);
}

lbk_status lbk_engine_create_from(lbk_device *dev, const lbk_engine_params *params,
                                  lbk_engine engine, const lbk_dataset *reference,
                                  const lbk_engine_image *image, lbk_engine_state **out)
{
    *out = NULL;
    if (engine == LBK_ENGINE_BRUTE)
        return lbk_engine_create(dev, params, engine, reference, out);
    LBK_FAIL_IF(!image->has_tree || image->tree.n != reference->rows ||
                    image->tree.dim != reference->dim || image->tree.dtype != reference->dtype,
                LBK_ERR_INTERNAL, "internal: a saved k-d tree of %llu points for a shard of %llu",
                (unsigned long long)image->tree.n, (unsigned long long)reference->rows);
    if (!tree_keys_exact(reference))
        return LBK_ERR_CONFIG;
    lbk_engine_state *state = state_new(dev, params, engine);
    if (!state)
        return LBK_ERR_NOMEM;
    state->dtype = reference->dtype;
    lbk_kdtree_image tree = image->tree;
    tree.rotation = params->rotation; /* not saved: the caller knows it */
    return hand_over(state, lbk_kdtree_upload(dev, &tree, &state->tree), out);
}

uint64_t lbk_engine_max_batch(const lbk_engine_state *state)
{
    if (state->brute)
        return lbk_brute_max_batch(state->brute);
    return lbk_tree_query_max_batch(state->tree, state->k, state->memory_budget);
}

lbk_status lbk_engine_query(lbk_engine_state *state, const float *queries, const float *bounds,
                            bool in_order, uint64_t nq, lbk_knn_result *result)
{
    if (state->brute) {
        const lbk_status st = lbk_brute_query(state->brute, queries, nq, result);
        lbk_brute_timing t;
        lbk_brute_last_timing(state->brute, &t);
        lbk_brute_timing_add(&state->brute_paths, &t);
        return st;
    }
    if (in_order)
        return lbk_tree_query_in_order(state->tree, queries, bounds, nq, state->k, state->metric,
                                       result, &state->tree_work);
    return lbk_tree_query_bounded(state->tree, queries, bounds, nq, state->k, state->metric,
                                  result, &state->tree_work);
}

void lbk_engine_work_of(const lbk_engine_state *state, lbk_engine_work *work)
{
    work->distance_evals = state->brute
                               ? state->brute_paths.distance_evals + state->brute_radius_evals
                               : state->tree_work.distance_evals;
    work->nodes_visited = state->brute ? 0 : state->tree_work.nodes_visited;
}

uint64_t lbk_engine_reference_bytes(const lbk_engine_state *state)
{
    if (state && state->brute)
        return lbk_brute_reference_bytes(state->brute);
    return state && state->tree ? lbk_kdtree_bytes(state->tree) : 0;
}

uint64_t lbk_engine_peak_device_bytes(const lbk_engine_state *state, uint64_t largest_query)
{
    if (state && state->brute)
        return lbk_brute_peak_device_bytes(state->brute);
    if (!state || !state->tree || lbk_kdtree_size(state->tree) == 0)
        return 0;
    lbk_kdtree_stats stats;
    lbk_kdtree_get_stats(state->tree, &stats);
    /* lbk_tree_query's buffers: one chunk of queries and their lists. */
    uint64_t chunk = lbk_tree_query_max_batch(state->tree, state->k, 0);
    chunk = largest_query < chunk ? largest_query : chunk;
    const uint64_t query = lbk_tree_query_bytes(state->tree, state->k, chunk);
    const uint64_t resident = lbk_kdtree_bytes(state->tree) + query;
    return stats.peak_device_bytes > resident ? stats.peak_device_bytes : resident;
}

/* Which of the brute engine's exact paths this rank's queries took: the L2
 * cascade, the prefilter (with its re-rank), or the direct distances. */
static void describe_brute(const lbk_brute_timing *t, char *buf, size_t size)
{
    const uint64_t settled = t->cascade_queries - t->cascade_fallback_queries;
    snprintf(buf, size,
             "brute: {cascade_queries: %" PRIu64 ", rows_checked_per_query: %.1f, "
             "cascade_to_prefilter: %" PRIu64 ", prefilter_queries: %" PRIu64
             ", prefilter_to_exact: %" PRIu64 "}",
             t->cascade_queries,
             settled ? (double)t->cascade_checked_rows / (double)settled : 0.0,
             t->cascade_fallback_queries, t->prefiltered_queries, t->fallback_queries);
}

void lbk_engine_describe(const lbk_engine_state *state, char *buf, size_t size)
{
    buf[0] = '\0';
    if (state->brute &&
        (state->brute_paths.cascade_queries || state->brute_paths.prefiltered_queries))
        describe_brute(&state->brute_paths, buf, size);
    if (!state->tree)
        return;
    lbk_kdtree_stats stats;
    lbk_kdtree_get_stats(state->tree, &stats);
    snprintf(buf, size,
             "tree: {levels: %d, sort: %s, build_s: %.6f, peak_device_bytes: %" PRIu64
             ", held_bytes: %" PRIu64 "}",
             stats.levels, lbk_tree_sort_name(stats.sort_used), stats.build_s,
             stats.peak_device_bytes, lbk_kdtree_bytes(state->tree));
}

void lbk_engine_destroy(lbk_engine_state *state)
{
    if (!state)
        return;
    lbk_brute_destroy(state->brute);
    lbk_kdtree_destroy(state->tree);
    free(state);
}

lbk_status lbk_engine_result_alloc(lbk_knn_result *result, uint64_t queries, int k)
{
    const size_t slots = (size_t)queries * (size_t)k;
    result->queries = queries;
    result->k = k;
    result->keys = lbk_alloc_large(slots * sizeof *result->keys);
    result->index = lbk_alloc_large(slots * sizeof *result->index);
    if (!result->keys || !result->index) {
        lbk_engine_result_free(result);
        lbk_error("out of host memory for %" PRIu64 " x %d results", queries, k);
        return LBK_ERR_NOMEM;
    }
    return LBK_OK;
}

void lbk_engine_result_free(lbk_knn_result *result)
{
    lbk_alloc_large_free(result->keys);
    lbk_alloc_large_free(result->index);
    result->keys = NULL;
    result->index = NULL;
}

/* ---- radius search ---- */

static lbk_tree_radius_params tree_radius_params(const lbk_engine_state *state)
{
    const lbk_tree_radius_params p = {.metric = state->metric,
                                      .memory_budget = state->memory_budget,
                                      .window = state->radius_window};
    return p;
}

uint64_t lbk_engine_radius_max_batch(const lbk_engine_state *state)
{
    if (state->brute)
        return lbk_brute_radius_max_batch(state->brute);
    const lbk_tree_radius_params p = tree_radius_params(state);
    return lbk_tree_radius_max_batch(state->tree, &p);
}

/* Brute force's radius search reads float32 points (kernels/brute_radius.cl);
 * the tree's walks read compact ones as its kNN does. */
static lbk_status check_radius_points(const lbk_engine_state *state)
{
    LBK_FAIL_IF(state->brute && state->dtype != LBK_DTYPE_FLOAT32, LBK_ERR_CONFIG,
                "radius search over %s points is not supported yet; give reference.type: "
                "float32",
                lbk_dtype_name(state->dtype));
    return LBK_OK;
}

bool lbk_engine_float32_faster(const lbk_device *dev, lbk_dtype type, lbk_metric metric, int k,
                               int dim)
{
    return lbk_brute_prefilter_auto(dev, metric, k, dim) &&
           !lbk_brute_icascade_auto(dev, type, metric, k, dim);
}

bool lbk_engine_float16_slower(const lbk_device *dev, lbk_metric metric, int k, int dim)
{
    return lbk_brute_cascade_auto(dev, metric, k, dim);
}

bool lbk_engine_int_keys(const lbk_engine_state *state)
{
    return state->brute && lbk_brute_int_keys(state->brute);
}

const char *lbk_engine_compact_why(lbk_engine engine, bool spatial, lbk_dtype type, int dim)
{
    if (!lbk_dataset_type_integer(type) || dim <= LBK_KDTREE_INT_DIM_MAX)
        return NULL;
    if (engine == LBK_ENGINE_KDTREE)
        return "the k-d tree's float32 keys are exact integers up to 258 dimensions";
    return spatial ? "the spatial partition's float32 box keys are exact integers up to 258 "
                     "dimensions"
                   : NULL;
}

void lbk_engine_int_keys_decode(lbk_metric metric, lbk_knn_candidate *list, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        if (!(list[i].key < INFINITY)) /* a pad */
            continue;
        const lbk_i32 k = lbk_int_key_of_code(list[i].key);
        /* IP's zero key is -0, as the float32 path's negated sum (knn.h). */
        list[i].key = k == 0 && lbk_knn_is_similarity(metric) ? -0.0f : (float)k;
    }
}

lbk_status lbk_engine_radius_count(lbk_engine_state *state, const float *queries,
                                   const float *bounds, uint64_t nq, uint64_t *counts)
{
    LBK_TRY(check_radius_points(state));
    if (state->brute)
        return lbk_brute_radius_count(state->brute, queries, bounds, nq, counts,
                                      &state->brute_radius_evals);
    const lbk_tree_radius_params p = tree_radius_params(state);
    return lbk_tree_radius_count(state->tree, &p, queries, bounds, nq, counts, &state->tree_work);
}

/* The brute engine's fill window: an eighth of its budget (what the budget
 * leaves beside the kNN buffers is not known here), in (key, row) entries. */
static uint64_t brute_window(const lbk_engine_state *state)
{
    if (state->radius_window)
        return state->radius_window;
    const lbk_device *dev = state->dev;
    const uint64_t budget =
        state->memory_budget ? state->memory_budget : lbk_device_global_mem(dev) / 2;
    uint64_t w = budget / 8 / 8;
    if (w > lbk_device_max_alloc(dev) / 4)
        w = lbk_device_max_alloc(dev) / 4;
    return w > 0 ? w : 1;
}

static int code_cmp(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* One list sorted by (key, row) unless it is already (the kernels sort the
 * short ones, LBK_RADIUS_SORT_MAX), through `codes` (room for its length):
 * the pairs as lbk_radius_code, whose integer order is (key, row) order. */
static void sort_list(float *keys, uint32_t *rows, uint64_t len, uint64_t *codes,
                      lbk_metric metric)
{
    uint64_t sorted = 1;
    while (sorted < len &&
           (keys[sorted - 1] < keys[sorted] ||
            (keys[sorted - 1] == keys[sorted] && rows[sorted - 1] < rows[sorted])))
        sorted++;
    if (sorted >= len)
        return;
    for (uint64_t i = 0; i < len; i++)
        codes[i] = lbk_radius_code(keys[i], rows[i]);
    qsort(codes, (size_t)len, sizeof *codes, code_cmp);
    for (uint64_t i = 0; i < len; i++) {
        keys[i] = lbk_radius_code_key(codes[i], (int)metric);
        rows[i] = (uint32_t)codes[i];
    }
}

static lbk_status sort_lists(lbk_metric metric, uint64_t nq, const uint64_t *offsets, float *keys,
                             uint32_t *rows)
{
    uint64_t longest = 0;
    for (uint64_t q = 0; q < nq; q++)
        if (offsets[q + 1] - offsets[q] > longest)
            longest = offsets[q + 1] - offsets[q];
    uint64_t *codes = lbk_alloc_large((size_t)(longest ? longest : 1) * sizeof *codes);
    LBK_FAIL_IF(!codes, LBK_ERR_NOMEM, "out of host memory sorting a radius list of %llu",
                (unsigned long long)longest);
    for (uint64_t q = 0; q < nq; q++)
        sort_list(keys + offsets[q], rows + offsets[q], offsets[q + 1] - offsets[q], codes,
                  metric);
    lbk_alloc_large_free(codes);
    return LBK_OK;
}

lbk_status lbk_engine_radius_fill(lbk_engine_state *state, const float *queries,
                                  const float *bounds, uint64_t nq, const uint64_t *offsets,
                                  float *keys, uint32_t *rows)
{
    LBK_TRY(check_radius_points(state));
    if (nq == 0)
        return LBK_OK;
    if (state->brute) {
        LBK_TRY(lbk_brute_radius_fill(state->brute, queries, bounds, nq, offsets,
                                      brute_window(state), keys, rows,
                                      &state->brute_radius_evals));
    } else {
        const lbk_tree_radius_params p = tree_radius_params(state);
        LBK_TRY(lbk_tree_radius_fill(state->tree, &p, queries, bounds, nq, offsets, keys, rows,
                                     &state->tree_work));
    }
    return sort_lists(state->metric, nq, offsets, keys, rows);
}
