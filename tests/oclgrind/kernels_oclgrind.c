/* Every kernel of both engines in the configurations a GPU takes (the
 * local-memory tiled distance kernel, G = 1 and 32 bubble groups, work-groups
 * of 64 and 256, bitonic and radix builders with and without per-subtree
 * sorts, the tree query), on inputs small enough for Oclgrind, which runs
 * them under run_oclgrind.sh with its data-race, uninitialised-value and
 * bounds checks. PoCL runs a work-group's items one after another, so a
 * missing barrier or a race on local memory cannot show there. Results are
 * also compared with the host oracle. One case per CTest test. */
#include "brute.h"
#include "device.h"
#include "device_cl.h"
#include "kdtree.h"
#include "knn_oracle.h"
#include "lbk_test.h"
#include "radius.h"
#include "tree_query.h"
#include "tree_radius.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NQ 8

typedef struct {
    const char *name;
    lbk_brute_distance distance;
    int groups;
    int work_group_limit;
    int metric;
    int k;
    lbk_brute_prefilter prefilter;
    uint64_t budget;          /* bytes; small: reference chunks streamed */
    const lbk_tuning *tuning; /* NULL: derived from the device */
    uint32_t n;               /* reference rows; 0: 200 */
} brute_case;

typedef struct {
    const char *name;
    lbk_tree_sort sort;
    lbk_tree_split split;
    uint64_t segment_max; /* 0: global sorts for every level but the last */
    int metric;
    int k;
    uint32_t n;   /* points; 0: 1025 (bitonic), 600 (the others) */
    bool bounded; /* also a bounded query (the spatial partition's phase 2) */
} tree_case;

/* Forced blocked-kernel shapes: each lane count, a slice shorter than the
 * dimension (two slices, the second partial) and blocks that leave partial
 * tiles of queries and references. */
static const lbk_tuning lanes4 = {.lanes = 4,
                                  .block_queries = 3,
                                  .block_vectors = 2,
                                  .tile_blocks = 2,
                                  .slice = 16,
                                  .segment_log2 = 16};
static const lbk_tuning lanes8 = {.lanes = 8,
                                  .block_queries = 5,
                                  .block_vectors = 1,
                                  .tile_blocks = 3,
                                  .slice = 24,
                                  .segment_log2 = 16};
static const lbk_tuning lanes16 = {.lanes = 16,
                                   .block_queries = 2,
                                   .block_vectors = 3,
                                   .tile_blocks = 1,
                                   .slice = 8,
                                   .segment_log2 = 16};
/* Blocks of 4 x 3 = 12 rows: 37 rows fill 10 lanes-wide blocks of the 12
 * the padding rounds to. */
static const lbk_tuning lanes4x3 = {.lanes = 4,
                                    .block_queries = 3,
                                    .block_vectors = 3,
                                    .tile_blocks = 2,
                                    .slice = 16,
                                    .segment_log2 = 16};

static const brute_case brute_cases[] = {
    {"brute_tiled_g1_wg64_l2_k5", LBK_DISTANCE_TILED, 1, 64, 0, 5, LBK_PREFILTER_OFF, 0, NULL, 0},
    {"brute_tiled_g32_wg256_l1_k16", LBK_DISTANCE_TILED, 32, 256, 1, 16, LBK_PREFILTER_OFF, 0,
     NULL, 0},
    /* K above the work-group: several bubbles per work-item. */
    {"brute_tiled_g32_wg64_linf_k100", LBK_DISTANCE_TILED, 32, 64, 2, 100, LBK_PREFILTER_OFF, 0,
     NULL, 0},
    {"brute_tiled_chunked_g32_wg256_l2_k5", LBK_DISTANCE_TILED, 32, 256, 0, 5, LBK_PREFILTER_OFF,
     24 << 10, NULL, 0},
    {"brute_blocked_prefilter_g1_wg64_l2_k5", LBK_DISTANCE_BLOCKED, 1, 64, 0, 5, LBK_PREFILTER_ON,
     0, NULL, 0},
    {"brute_blocked_g32_wg256_l1_k16", LBK_DISTANCE_BLOCKED, 32, 256, 1, 16, LBK_PREFILTER_OFF, 0,
     NULL, 0},
    {"brute_blocked_lanes4_g1_wg64_l2_k5", LBK_DISTANCE_BLOCKED, 1, 64, 0, 5, LBK_PREFILTER_OFF,
     0, &lanes4, 0},
    {"brute_blocked_lanes8_prefilter_g1_wg64_l2_k5", LBK_DISTANCE_BLOCKED, 1, 64, 0, 5,
     LBK_PREFILTER_ON, 0, &lanes8, 0},
    {"brute_blocked_lanes16_g32_wg256_linf_k16", LBK_DISTANCE_BLOCKED, 32, 256, 2, 16,
     LBK_PREFILTER_OFF, 0, &lanes16, 0},
    /* The L2 cascade: coarse bounds, K' candidates, then the exact-key
     * kernel with its tails (200 rows, 40 dimensions: neither a multiple of
     * 16). */
    {"brute_blocked_cascade_g1_wg64_l2_k5", LBK_DISTANCE_BLOCKED, 1, 64, 0, 5,
     LBK_PREFILTER_CASCADE, 0, NULL, 0},
    {"brute_blocked_lanes4_cascade_g32_wg64_l2_k16", LBK_DISTANCE_BLOCKED, 32, 64, 0, 16,
     LBK_PREFILTER_CASCADE, 0, &lanes4, 0},
    /* Boundary shapes (tests/boundary has them on the host): 37 rows, a
     * multiple of no block or tile, with K above them (pads in every list,
     * on the bubble and the sort-merge), and one-row shards. */
    {"brute_tiled_n37_g3_wg64_l2_k50", LBK_DISTANCE_TILED, 3, 64, 0, 50, LBK_PREFILTER_OFF, 0,
     NULL, 37},
    {"brute_tiled_n37_g1_wg64_ip_k100", LBK_DISTANCE_TILED, 1, 64, 4, 100, LBK_PREFILTER_OFF, 0,
     NULL, 37},
    {"brute_blocked_lanes4x3_n37_g3_wg64_l1_k50", LBK_DISTANCE_BLOCKED, 3, 64, 1, 50,
     LBK_PREFILTER_OFF, 0, &lanes4x3, 37},
    {"brute_blocked_lanes4x3_cascade_n13_g1_wg64_l2_k16", LBK_DISTANCE_BLOCKED, 1, 64, 0, 16,
     LBK_PREFILTER_CASCADE, 0, &lanes4x3, 13},
    {"brute_blocked_prefilter_n1_g32_wg64_l2_k5", LBK_DISTANCE_BLOCKED, 32, 64, 0, 5,
     LBK_PREFILTER_ON, 0, NULL, 1},
    {"brute_tiled_n1_g32_wg64_linf_k3", LBK_DISTANCE_TILED, 32, 64, 2, 3, LBK_PREFILTER_OFF, 0,
     NULL, 1},
};

static const tree_case tree_cases[] = {
    {"tree_bitonic_round_robin_l2_k5", LBK_SORT_BITONIC, LBK_SPLIT_ROUND_ROBIN, 0, 0, 5, 0,
     false},
    /* Widest (the split dimensions move with the points) in sorts that fit
     * blocks; its global steps, the same compare-exchange as the blocks',
     * run in the _global twin (label slow). */
    {"tree_bitonic_widest_l1_k16", LBK_SORT_BITONIC, LBK_SPLIT_WIDEST, 0, 1, 16, 300, false},
    {"tree_bitonic_widest_global_l1_k16", LBK_SORT_BITONIC, LBK_SPLIT_WIDEST, 0, 1, 16, 0, false},
    {"tree_radix_global_round_robin_l2_k5", LBK_SORT_RADIX, LBK_SPLIT_ROUND_ROBIN, 0, 0, 5, 0,
     false},
    {"tree_radix_segments_widest_linf_k16", LBK_SORT_RADIX, LBK_SPLIT_WIDEST, 4096, 2, 16, 0,
     false},
    /* GPU default: runs of at most 256 points sorted per work-item. */
    {"tree_radix_gpu_default_round_robin_l2_k40", LBK_SORT_RADIX, LBK_SPLIT_ROUND_ROBIN, 256, 0,
     40, 0, false},
    /* The select builder: nodes one per work-item above runs of 64 points,
     * whole subtrees per work-item below. */
    {"tree_select_round_robin_l2_k16", LBK_SORT_SELECT, LBK_SPLIT_ROUND_ROBIN, 64, 0, 16, 0,
     false},
    /* Boundary shapes: 37 points (no power of two, partial bucket tiles)
     * with K above them, and a one-point tree. */
    {"tree_radix_n37_widest_l1_k50", LBK_SORT_RADIX, LBK_SPLIT_WIDEST, 8, 1, 50, 37, false},
    {"tree_select_n1_round_robin_l2_k4", LBK_SORT_SELECT, LBK_SPLIT_ROUND_ROBIN, 64, 0, 4, 1,
     false},
    {"tree_radix_bounded_round_robin_l2_k16", LBK_SORT_RADIX, LBK_SPLIT_ROUND_ROBIN, 0, 0, 16, 0,
     true},
};

/* Uniform values with exact duplicates, so the (key, index) ties matter. */
static float *points(uint32_t rows, int dim, uint64_t seed)
{
    float *x = malloc((size_t)rows * dim * sizeof *x);
    LBK_ASSERT_TRUE(x != NULL);
    lbk_test_rng rng = LBK_TEST_RNG(seed);
    for (size_t i = 0; i < (size_t)rows * dim; i++)
        x[i] = (float)lbk_test_rng_below(&rng, 64) / 8.0f - 4.0f;
    return x;
}

static void compare(const lbk_knn_result *got, const float *ref, uint32_t n, const float *q,
                    int dim, int metric, int k)
{
    float *want_k = malloc((size_t)NQ * k * sizeof *want_k);
    uint32_t *want_i = malloc((size_t)NQ * k * sizeof *want_i);
    LBK_ASSERT_TRUE(want_k && want_i);
    LBK_ASSERT_EQ_INT(oracle_knn(ref, n, q, NQ, dim, metric, k, want_k, want_i), 0);
    size_t bad = 0;
    for (size_t s = 0; s < (size_t)NQ * k; s++)
        if (memcmp(&got->keys[s], &want_k[s], sizeof(float)) != 0 || got->index[s] != want_i[s])
            bad++;
    LBK_EXPECT_EQ_U64(bad, 0, "slots that differ from the oracle, of %d", NQ * k);
    free(want_k);
    free(want_i);
}

/* Oclgrind 21.10 gives a released buffer's id to the next buffer created
 * but keeps the old buffer's size for its record of initialised bytes, so
 * writes past that size stay "uninitialised" (reproduced with two plain
 * buffers, no lbknn code: a 16-byte buffer seen by a kernel, released, then
 * a 24-byte one written and read by the next). The k-d tree build releases
 * its scratch buffers; holding these placeholders while the query runs
 * keeps its buffers on fresh ids, so only real findings remain. */
#define PLACEHOLDERS 64

static void hold_released_ids(lbk_device *dev, cl_mem held[PLACEHOLDERS])
{
    for (int i = 0; i < PLACEHOLDERS; i++)
        LBK_ASSERT_EQ_INT(
            lbk_device_buffer(dev, CL_MEM_READ_WRITE, 1, NULL, "placeholder", &held[i]), LBK_OK);
}

static void release_ids(cl_mem held[PLACEHOLDERS])
{
    for (int i = 0; i < PLACEHOLDERS; i++)
        clReleaseMemObject(held[i]);
}

static lbk_device *open_device(void)
{
    lbk_device *dev = NULL;
    lbk_test_require_opencl();
    const lbk_device_request req = {.type = LBK_DEVICE_ANY, .runtime_buffers = true};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
    return dev;
}

static void run_brute(const void *row)
{
    const brute_case *c = row;
    /* Two tiles of dimensions (DIST_TD = 32): the tile loop's barriers
     * matter only from the second tile on. */
    const uint32_t n = c->n ? c->n : 200;
    const int dim = 40;
    lbk_device *dev = open_device();
    float *ref = points(n, dim, 11), *q = points(NQ, dim, 12);
    lbk_knn_result got = {.queries = NQ, .k = c->k};
    got.keys = malloc((size_t)NQ * c->k * sizeof *got.keys);
    got.index = malloc((size_t)NQ * c->k * sizeof *got.index);
    const lbk_dataset data = {.rows = n, .dim = dim, .points = ref};
    const lbk_brute_params params = {.k = c->k,
                                     .metric = (lbk_metric)c->metric,
                                     .groups = c->groups,
                                     .memory_budget = c->budget,
                                     .distance = c->distance,
                                     .prefilter = c->prefilter,
                                     .work_group_limit = c->work_group_limit,
                                     .tuning = c->tuning,
                                     .copy_shard = true};
    lbk_brute *engine = NULL;
    LBK_ASSERT_EQ_INT(lbk_brute_create(dev, &data, &params, &engine), LBK_OK);
    if (c->budget)
        LBK_EXPECT_U64(lbk_brute_chunk_rows(engine), <, n, "the budget must force chunks");
    const uint64_t batch = lbk_brute_max_batch(engine);
    for (uint64_t off = 0; off < NQ; off += batch) {
        const uint64_t m = NQ - off < batch ? NQ - off : batch;
        lbk_knn_result slice = {.queries = m,
                                .k = c->k,
                                .keys = got.keys + off * c->k,
                                .index = got.index + off * c->k};
        LBK_ASSERT_EQ_INT(lbk_brute_query(engine, q + off * dim, m, &slice), LBK_OK);
    }
    compare(&got, ref, n, q, dim, c->metric, c->k);
    lbk_brute_destroy(engine);
    lbk_device_close(dev);
    free(got.keys);
    free(got.index);
    free(ref);
    free(q);
}

/* The bounded walk under the checker, its answer against the unbounded
 * lists (already checked against the oracle) cut at each bound: the K-th
 * key (ties at the bound) or an earlier one. */
static void check_bounded(lbk_kdtree *tree, const lbk_knn_result *whole, const float *q,
                          int metric)
{
    const int k = whole->k;
    float *bounds = malloc(NQ * sizeof *bounds);
    lbk_knn_result cut = {.queries = NQ, .k = k};
    cut.keys = malloc((size_t)NQ * k * sizeof *cut.keys);
    cut.index = malloc((size_t)NQ * k * sizeof *cut.index);
    LBK_ASSERT_TRUE(bounds && cut.keys && cut.index, "out of memory");
    for (int i = 0; i < NQ; i++)
        bounds[i] = whole->keys[(size_t)i * k + (i % 2 ? k / 2 : k - 1)];
    LBK_EXPECT_EQ_INT(
        lbk_tree_query_bounded(tree, q, bounds, NQ, k, (lbk_metric)metric, &cut, NULL), LBK_OK);
    for (size_t s = 0; s < (size_t)NQ * k; s++) {
        const bool kept = whole->keys[s] <= bounds[s / k];
        LBK_EXPECT_EQ_FLOAT(cut.keys[s], kept ? whole->keys[s] : INFINITY, "slot %zu", s);
        LBK_EXPECT_EQ_U64(cut.index[s], kept ? whole->index[s] : UINT32_MAX, "slot %zu", s);
    }
    free(bounds);
    free(cut.keys);
    free(cut.index);
}

static void run_tree(const void *row)
{
    const tree_case *c = row;
    /* Enough points that the bitonic sort runs global steps besides blocks
     * (of at most 1024 points; one point more is enough: the root's sort
     * then runs them, and every step a simulated work-item's time), and that
     * the radix sort has runs longer than 256 (global sorts) above shorter
     * ones. */
    const uint32_t n = c->n ? c->n : c->sort == LBK_SORT_BITONIC ? 1025 : 600;
    const int dim = 3;
    lbk_device *dev = open_device();
    float *ref = points(n, dim, 21), *q = points(NQ, dim, 22);
    lbk_knn_result got = {.queries = NQ, .k = c->k};
    got.keys = malloc((size_t)NQ * c->k * sizeof *got.keys);
    got.index = malloc((size_t)NQ * c->k * sizeof *got.index);
    const lbk_dataset data = {.rows = n, .dim = dim, .points = ref};
    const lbk_kdtree_params params = {.split = c->split,
                                      .sort = c->sort,
                                      .verify = true,
                                      .segment_max_set = true,
                                      .segment_max = c->segment_max};
    lbk_kdtree *tree = NULL;
    cl_mem held[PLACEHOLDERS];
    LBK_ASSERT_EQ_INT(lbk_kdtree_build(dev, &data, &params, &tree), LBK_OK);
    hold_released_ids(dev, held);
    LBK_EXPECT_EQ_INT(lbk_tree_query(tree, q, NQ, c->k, (lbk_metric)c->metric, &got, NULL),
                      LBK_OK);
    release_ids(held);
    compare(&got, ref, n, q, dim, c->metric, c->k);
    if (c->bounded)
        check_bounded(tree, &got, q, c->metric);
    lbk_kdtree_destroy(tree);
    lbk_device_close(dev);
    free(got.keys);
    free(got.index);
    free(ref);
    free(q);
}

/* ---- radius search: both engines' count and fill kernels in one launch ---- */

typedef struct {
    const char *name;
    int metric;
} radius_case;

static const radius_case radius_cases[] = {
    {"radius_tree_brute_l2", 0},
};

/* Per query: r = 0, the distance to a reference point (ties on the
 * sphere), or a larger radius. */
static void radius_bounds(const float *ref, uint32_t n, const float *q, int dim, int metric,
                          float *radii, float *bounds)
{
    for (int i = 0; i < NQ; i++) {
        const float d = oracle_distance(
            oracle_key(q + (size_t)i * dim, ref + (size_t)(i * 37u % n) * dim, dim, metric),
            metric);
        radii[i] = i % 3 == 0 ? 0.0f : i % 3 == 1 ? d : 2.0f * d;
        bounds[i] = lbk_radius_key_bound((lbk_metric)metric, radii[i]);
    }
}

/* Counts and (sorted) lists against the oracle's. */
static void radius_compare(const uint64_t *counts, float *keys, uint32_t *rows,
                           const uint64_t *want_off, const float *want_k, const uint32_t *want_i)
{
    for (int q = 0; q < NQ; q++) {
        LBK_EXPECT_EQ_U64(counts[q], want_off[q + 1] - want_off[q], "query %d", q);
        for (uint64_t i = want_off[q] + 1; i < want_off[q + 1]; i++)
            for (uint64_t j = i;
                 j > want_off[q] &&
                 (keys[j] < keys[j - 1] || (keys[j] == keys[j - 1] && rows[j] < rows[j - 1]));
                 j--) {
                const float k = keys[j];
                const uint32_t r = rows[j];
                keys[j] = keys[j - 1], rows[j] = rows[j - 1];
                keys[j - 1] = k, rows[j - 1] = r;
            }
    }
    const size_t total = (size_t)want_off[NQ];
    LBK_EXPECT_EQ_MEM(keys, want_k, total * sizeof *keys);
    LBK_EXPECT_EQ_MEM(rows, want_i, total * sizeof *rows);
}

/* The tree's tq_radius and the brute engine's br_radius (row-major, the
 * shard streamed in chunks; blocked, filtered by the prefilter's bounds),
 * count then fill through windows of 5 entries,
 * so that lists are cut across launches. */
static void run_radius(const void *row)
{
    const radius_case *c = row;
    const uint32_t n = 300;
    const int dim = 3;
    lbk_device *dev = open_device();
    float *ref = points(n, dim, 31), *q = points(NQ, dim, 32);
    float radii[NQ], bounds[NQ];
    radius_bounds(ref, n, q, dim, c->metric, radii, bounds);
    uint64_t want_off[NQ + 1], counts[NQ];
    float *want_k = NULL, *keys = NULL;
    uint32_t *want_i = NULL, *rows = NULL;
    LBK_ASSERT_EQ_INT(
        oracle_radius(ref, n, q, NQ, dim, c->metric, radii, want_off, &want_k, &want_i), 0);
    keys = malloc(((size_t)want_off[NQ] + 1) * sizeof *keys);
    rows = malloc(((size_t)want_off[NQ] + 1) * sizeof *rows);
    LBK_ASSERT_TRUE(keys && rows);

    const lbk_dataset data = {.rows = n, .dim = dim, .points = ref};
    const lbk_kdtree_params tp = {.split = LBK_SPLIT_ROUND_ROBIN, .sort = LBK_SORT_RADIX};
    lbk_kdtree *tree = NULL;
    cl_mem held[PLACEHOLDERS];
    LBK_ASSERT_EQ_INT(lbk_kdtree_build(dev, &data, &tp, &tree), LBK_OK);
    /* The query's buckets are laid out after the placeholders (run_tree). */
    hold_released_ids(dev, held);
    const lbk_tree_radius_params rp = {.metric = (lbk_metric)c->metric, .window = 5};
    lbk_tree_query_work work = {0};
    LBK_EXPECT_EQ_INT(lbk_tree_radius_count(tree, &rp, q, bounds, NQ, counts, &work), LBK_OK);
    LBK_EXPECT_EQ_INT(lbk_tree_radius_fill(tree, &rp, q, bounds, NQ, want_off, keys, rows, &work),
                      LBK_OK);
    radius_compare(counts, keys, rows, want_off, want_k, want_i);
    lbk_kdtree_destroy(tree);
    /* Fresh ids for the brute engine's buffers too (the tree's are free). */
    cl_mem held2[PLACEHOLDERS];
    hold_released_ids(dev, held2);

    /* Then blocked with the prefilter: the bound kernel's lower bounds
     * filter br_radius's rows. */
    const lbk_brute_params bps[] = {{.k = 1,
                                     .metric = (lbk_metric)c->metric,
                                     .memory_budget = 8 << 10,
                                     .distance = LBK_DISTANCE_TILED,
                                     .copy_shard = true},
                                    {.k = 1,
                                     .metric = (lbk_metric)c->metric,
                                     .distance = LBK_DISTANCE_BLOCKED,
                                     .prefilter = LBK_PREFILTER_ON,
                                     .copy_shard = true}};
    cl_mem after[sizeof bps / sizeof bps[0]][PLACEHOLDERS];
    for (size_t b = 0; b < sizeof bps / sizeof bps[0]; b++) {
        lbk_brute *engine = NULL;
        uint64_t evals = 0;
        LBK_ASSERT_EQ_INT(lbk_brute_create(dev, &data, &bps[b], &engine), LBK_OK);
        if (bps[b].memory_budget)
            LBK_EXPECT_U64(lbk_brute_chunk_rows(engine), <, n, "the budget must force chunks");
        LBK_EXPECT_EQ_INT(lbk_brute_radius_count(engine, q, bounds, NQ, counts, &evals), LBK_OK);
        LBK_EXPECT_EQ_INT(
            lbk_brute_radius_fill(engine, q, bounds, NQ, want_off, 5, keys, rows, &evals),
            LBK_OK);
        radius_compare(counts, keys, rows, want_off, want_k, want_i);
        lbk_brute_destroy(engine);
        /* The next engine's buffers on fresh ids too (see PLACEHOLDERS). */
        hold_released_ids(dev, after[b]);
    }
    for (size_t b = 0; b < sizeof bps / sizeof bps[0]; b++)
        release_ids(after[b]);
    release_ids(held);
    release_ids(held2);
    lbk_device_close(dev);
    free(ref);
    free(q);
    free(want_k);
    free(want_i);
    free(keys);
    free(rows);
}

LBK_TEST_MAIN(LBK_TEST_ROWS(brute_cases, run_brute), LBK_TEST_ROWS(tree_cases, run_tree),
              LBK_TEST_ROWS(radius_cases, run_radius))
