/* Tests of the tag-sort k-d tree builder and the tree kNN engine. One
 * executable, one CTest test per case: `test_kdtree CASE`. Oracles: the host
 * reference builder in ref_tagsort.c and oracle_knn, neither of which shares
 * code with src/. */
#include "bounds.h"
#include "device.h"
#include "kdtree.h"
#include "knn_oracle.h"
#include "lbk_shared.h"
#include "lbk_test.h"
#include "log.h"
#include "ref_tagsort.h"
#include "tree_buckets.h"
#include "tree_query.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- data ---- */

/* One stream per case: the data of a case depends only on its own calls. */
static lbk_test_rng rng = LBK_TEST_RNG(0x9e3779b97f4a7c15ull);

static uint64_t rng_next(void) { return lbk_test_rng_next(&rng); }

static float rng_unit(void) { return lbk_test_rng_unit(&rng); }

static float rng_normal(void)
{
    float u = rng_unit(), v = rng_unit();
    if (u < 1e-7f)
        u = 1e-7f;
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

typedef enum {
    DATA_UNIQUE,
    DATA_UNIFORM,
    DATA_CLUSTERED,
    DATA_DUPLICATES,
    DATA_IDENTICAL,
    DATA_GRID
} data_kind;

static const char *const data_names[] = {"unique",     "uniform",   "clustered",
                                         "duplicates", "identical", "grid"};

/* DATA_UNIQUE: every dimension a permutation of distinct values, so no two
 * points tie in any coordinate and the tree is fully determined. */
static float *make_points(uint32_t n, int dim, data_kind kind)
{
    float *p = malloc(((size_t)n * dim + 1) * sizeof *p);
    if (!p)
        abort();
    uint32_t *perm = malloc(((size_t)n + 1) * sizeof *perm);
    if (!perm)
        abort();
    float centres[8][16];
    for (int c = 0; c < 8; c++)
        for (int j = 0; j < 16; j++)
            centres[c][j] = 100.0f * rng_unit();
    for (int j = 0; j < dim; j++) {
        if (kind == DATA_UNIQUE) {
            for (uint32_t i = 0; i < n; i++)
                perm[i] = i;
            for (uint32_t i = n; i > 1; i--) {
                const uint32_t r = (uint32_t)(rng_next() % i);
                const uint32_t t = perm[i - 1];
                perm[i - 1] = perm[r];
                perm[r] = t;
            }
        }
        for (uint32_t i = 0; i < n; i++) {
            float v;
            switch (kind) {
            case DATA_UNIQUE: v = (float)perm[i] * 0.25f - 7.0f * (float)j; break;
            case DATA_UNIFORM: v = rng_unit() * 2.0f - 1.0f; break;
            case DATA_CLUSTERED: v = centres[i % 8][j % 16] + 0.5f * rng_normal(); break;
            case DATA_DUPLICATES: v = (float)(rng_next() % 3); break;
            case DATA_IDENTICAL: v = 1.5f; break;
            default: v = (float)(rng_next() % 8); break;
            }
            p[(size_t)i * dim + j] = v;
        }
    }
    free(perm);
    return p;
}

/* ---- device and build helpers ---- */

static lbk_device *dev;
/* `--segment-max N`: the radix builder's segment_max for build() (both sort
 * paths everywhere); unset: the device's default. */
static bool segment_max_set;
static uint64_t segment_max;

/* Skipped without an OpenCL device; one that exists must open. Device cases
 * take an optional `--segment-max N`. */
static void open_device(void)
{
    lbk_test_args(0, 2, "[--segment-max N]");
    if (lbk_test_arg_count() == 2) {
        LBK_ASSERT_EQ_STR(lbk_test_arg(0), "--segment-max");
        segment_max_set = true;
        segment_max = strtoull(lbk_test_arg(1), NULL, 10);
    }
    lbk_test_require_opencl();
    const lbk_device_request req = {
        .type = LBK_DEVICE_ANY, .local_rank = 0, .list = NULL, .list_len = 0};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
}

static lbk_kdtree *build_rotated(float *points, uint32_t n, int dim, lbk_tree_split split,
                                 int rotation, lbk_tree_sort sort, bool verify)
{
    const lbk_dataset ds = {
        .rows = n, .dim = dim, .first_row = 0, .points = points, .labels = NULL};
    const lbk_kdtree_params params = {.split = split,
                                      .rotation = rotation,
                                      .sort = sort,
                                      .verify = verify,
                                      .memory_budget = 0,
                                      .segment_max_set = segment_max_set,
                                      .segment_max = segment_max};
    lbk_kdtree *tree = NULL;
    const lbk_status st = lbk_kdtree_build(dev, &ds, &params, &tree);
    LBK_EXPECT_EQ_INT(st, LBK_OK, "build n=%u dim=%d split=%d rotation=%d sort=%d: %s", n, dim,
                      split, rotation, sort, lbk_status_name(st));
    return tree;
}

static lbk_kdtree *build(float *points, uint32_t n, int dim, lbk_tree_split split,
                         lbk_tree_sort sort, bool verify)
{
    return build_rotated(points, n, dim, split, 0, sort, verify);
}

static const char *sort_name(lbk_tree_sort s)
{
    return s == LBK_SORT_RADIX ? "radix" : s == LBK_SORT_SELECT ? "select" : "bitonic";
}

/* ---- unit: shape formulas ---- */

static void test_formulas_hand10(void)
{
    /* DESIGN.md: N = 10 gives pivots 6 (root), 4 and 8, then 4, 7, 8, 9. */
    const uint64_t want[7] = {6, 4, 8, 4, 7, 8, 9};
    for (uint64_t s = 0; s < 7; s++)
        LBK_EXPECT_EQ_U64(lbk_kdtree_pivot(s, 10), want[s], "s = %llu", (unsigned long long)s);
    LBK_EXPECT_EQ_INT(lbk_kdtree_levels(10), 4);
    LBK_EXPECT_EQ_INT(lbk_kdtree_levels(1), 1);
    LBK_EXPECT_EQ_INT(lbk_kdtree_levels(0), 0);
}

static void test_formulas_vs_count(void)
{
    uint64_t *size = malloc(5000 * sizeof *size);
    LBK_ASSERT_TRUE(size != NULL, "out of memory");
    for (uint64_t n = 1; n <= 4100 && lbk_test_failures() < 10; n++) {
        ref_subtree_sizes(n, size);
        for (uint64_t s = 0; s < n; s++) {
            LBK_EXPECT_EQ_U64(lbk_kdtree_subtree_size(s, n), size[s], "s = %llu, n = %llu",
                              (unsigned long long)s, (unsigned long long)n);
        }
        LBK_EXPECT_EQ_U64(lbk_kdtree_subtree_size(n, n), 0, "n = %llu", (unsigned long long)n);
        /* Segment begins: settled nodes, then the level's subtrees in order. */
        for (int l = 0; ((uint64_t)1 << (l + 1)) <= n; l++) {
            const uint64_t first = ((uint64_t)1 << l) - 1;
            uint64_t pos = first;
            for (uint64_t s = first; s < 2 * first + 1 && s < n; s++) {
                LBK_EXPECT_EQ_U64(lbk_kdtree_segment_begin(s, n), pos, "s = %llu, n = %llu",
                                  (unsigned long long)s, (unsigned long long)n);
                pos += size[s];
            }
        }
    }
    free(size);
    /* 64-bit intermediates: near 2^31 and 2^32 the root's children still add up. */
    const uint64_t big[] = {(1ull << 31) - 1, 1ull << 31, (1ull << 31) + 1, (1ull << 32) - 2,
                            3000000017ull};
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        const uint64_t n = big[i];
        LBK_EXPECT_EQ_U64(lbk_kdtree_subtree_size(0, n), n);
        LBK_EXPECT_EQ_U64(lbk_kdtree_subtree_size(1, n) + lbk_kdtree_subtree_size(2, n) + 1, n,
                          "children of the root");
        LBK_EXPECT_EQ_U64(lbk_kdtree_pivot(0, n), lbk_kdtree_subtree_size(1, n), "root pivot");
        const uint64_t last_first = (1ull << (lbk_kdtree_levels(n) - 2)) - 1;
        const uint64_t s = n / 2 - 1 > last_first ? last_first + 12345 : last_first;
        LBK_EXPECT_EQ_U64(lbk_kdtree_segment_begin(s + 1, n),
                          lbk_kdtree_segment_begin(s, n) + lbk_kdtree_subtree_size(s, n),
                          "consecutive segments, s = %llu, n = %llu", (unsigned long long)s,
                          (unsigned long long)n);
    }
}

/* ---- ocl: builder ---- */

static void in_order(const float *tree, uint64_t n, uint64_t s, float *out, uint64_t *pos)
{
    if (s >= n)
        return;
    in_order(tree, n, 2 * s + 1, out, pos);
    out[(*pos)++] = tree[s];
    in_order(tree, n, 2 * s + 2, out, pos);
}

static void test_hand10_device(void)
{
    float pts[10] = {3, 9, 0, 7, 1, 8, 5, 2, 6, 4};
    const lbk_tree_sort sorts[2] = {LBK_SORT_BITONIC, LBK_SORT_RADIX};
    for (int si = 0; si < 2; si++) {
        lbk_kdtree *tree = build(pts, 10, 1, LBK_SPLIT_ROUND_ROBIN, sorts[si], true);
        if (!tree)
            continue;
        float *tp;
        uint32_t *ids;
        uint8_t *sd;
        LBK_ASSERT_EQ_INT(lbk_kdtree_download(tree, &tp, &ids, &sd), LBK_OK);
        float seq[10];
        uint64_t pos = 0;
        in_order(tp, 10, 0, seq, &pos);
        for (int i = 0; i < 10; i++)
            LBK_EXPECT_EQ_FLOAT(seq[i], (float)i, "%s: in-order position %d",
                                sort_name(sorts[si]), i);
        /* Sorted 0..9: the root holds the value at pivot 6 of the whole. */
        LBK_EXPECT_EQ_FLOAT(tp[0], 6.0f, "%s: root", sort_name(sorts[si]));
        for (int i = 0; i < 10; i++)
            if (LBK_EXPECT_U64(ids[i], <, 10, "%s: id of node %d", sort_name(sorts[si]), i))
                LBK_EXPECT_EQ_FLOAT(pts[ids[i]], tp[i], "%s: id of node %d", sort_name(sorts[si]),
                                    i);
        free(tp);
        free(ids);
        free(sd);
        lbk_kdtree_destroy(tree);
    }
}

static void compare_with_reference(uint32_t n, int dim, lbk_tree_split split, lbk_tree_sort sort)
{
    float *pts = make_points(n, dim, DATA_UNIQUE);
    float *rt = malloc(((size_t)n * dim + 1) * sizeof *rt);
    uint32_t *rr = malloc(((size_t)n + 1) * sizeof *rr);
    uint8_t *rd = malloc((size_t)n + 1);
    LBK_ASSERT_TRUE(pts && rt && rr && rd, "out of memory");
    LBK_EXPECT_EQ_INT(ref_tagsort_build(pts, n, dim, split == LBK_SPLIT_WIDEST, rt, rr, rd), 0,
                      "reference n=%u", n);
    lbk_kdtree *tree = build(pts, n, dim, split, sort, true);
    if (tree) {
        float *tp;
        uint32_t *ids;
        uint8_t *sd;
        LBK_ASSERT_EQ_INT(lbk_kdtree_download(tree, &tp, &ids, &sd), LBK_OK);
        LBK_EXPECT_EQ_INT(sd != NULL, split == LBK_SPLIT_WIDEST, "split dims present iff widest");
        int bad = 0;
        for (uint32_t i = 0; i < n && bad < 3; i++) {
            const size_t row = (size_t)i * dim;
            if (ids[i] == rr[i] && memcmp(tp + row, rt + row, (size_t)dim * sizeof(float)) == 0 &&
                (!sd || sd[i] == rd[i]))
                continue;
            bad++;
            char where[128];
            snprintf(where, sizeof where, "n=%u dim=%d %s %s: node %u", n, dim,
                     split == LBK_SPLIT_WIDEST ? "widest" : "round-robin", sort_name(sort), i);
            LBK_EXPECT_EQ_U64(ids[i], rr[i], "%s: device row vs reference row", where);
            LBK_EXPECT_EQ_MEM(tp + row, rt + row, (size_t)dim * sizeof(float), "%s: point",
                              where);
            if (sd)
                LBK_EXPECT_EQ_INT(sd[i], rd[i], "%s: split dimension", where);
        }
        free(tp);
        free(ids);
        free(sd);
        lbk_kdtree_destroy(tree);
    }
    free(pts);
    free(rt);
    free(rr);
    free(rd);
}

static void test_reference(lbk_tree_split split, lbk_tree_sort sort)
{
    const uint32_t ns[] = {1, 2, 3, 7, 8, 9, 31, 1023, 1024, 1025, 5000};
    const int dims[] = {1, 2, 3, 5};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (size_t b = 0; b < sizeof dims / sizeof dims[0]; b++)
            compare_with_reference(ns[a], dims[b], split, sort);
    compare_with_reference(90167, 3, split, sort);
}

static void invariant_case(uint32_t n, int dim, data_kind kind, lbk_tree_split split,
                           lbk_tree_sort sort)
{
    float *pts = make_points(n, dim, kind);
    lbk_kdtree *tree = build(pts, n, dim, split, sort, false);
    if (tree) {
        float *tp;
        uint32_t *ids;
        uint8_t *sd;
        LBK_ASSERT_EQ_INT(lbk_kdtree_download(tree, &tp, &ids, &sd), LBK_OK);
        char what[128];
        snprintf(what, sizeof what, "invariant n=%u dim=%d %s split=%d %s", n, dim,
                 data_names[kind], split, sort_name(sort));
        LBK_EXPECT_EQ_INT(lbk_kdtree_check(tp, n, dim, sd, 0), LBK_OK, "%s", what);
        /* The ids are a permutation and name the point each node holds. */
        uint8_t *seen = calloc((size_t)n + 1, 1);
        LBK_ASSERT_TRUE(seen != NULL, "out of memory");
        for (uint32_t i = 0; i < n; i++) {
            if (!LBK_EXPECT_U64(ids[i], <, n, "%s: node %u", what, i))
                continue;
            LBK_EXPECT_FALSE(seen[ids[i]], "%s: ids not a permutation: row %u again at node %u",
                             what, ids[i], i);
            seen[ids[i]] = 1;
            LBK_EXPECT_EQ_MEM(tp + (size_t)i * dim, pts + (size_t)ids[i] * dim,
                              (size_t)dim * sizeof(float), "%s: node %u holds row %u?", what, i,
                              ids[i]);
        }
        free(seen);
        free(tp);
        free(ids);
        free(sd);
        lbk_kdtree_stats stats;
        lbk_kdtree_get_stats(tree, &stats);
        LBK_EXPECT_EQ_INT(stats.sort_used, sort, "%s", what);
        LBK_EXPECT_EQ_INT(stats.levels, lbk_kdtree_levels(n), "%s", what);
        LBK_EXPECT_U64(stats.peak_device_bytes, <=, lbk_kdtree_build_bytes(n, dim, split, sort),
                       "%s: peak over the estimate", what);
        lbk_kdtree_destroy(tree);
    }
    free(pts);
}

static const uint32_t inv_ns[] = {1, 2, 3, 7, 8, 9, 1023, 1024, 1025, 90167};
static const int inv_dims[] = {1, 2, 3, 5, 8, 16};
#define NN (sizeof inv_ns / sizeof inv_ns[0])
#define ND (sizeof inv_dims / sizeof inv_dims[0])

/* A covering subset: every N, every D, every distribution, both rules and
 * both sorts appear, without the full product. */
static void test_invariant_default(void)
{
    const data_kind kinds[] = {DATA_UNIFORM, DATA_CLUSTERED, DATA_DUPLICATES, DATA_IDENTICAL};
    int c = 0;
    for (size_t a = 0; a < NN; a++) {
        for (size_t k = 0; k < 4; k++, c++) {
            const int dim = inv_dims[(a + k) % ND];
            const lbk_tree_split split = (c & 1) ? LBK_SPLIT_WIDEST : LBK_SPLIT_ROUND_ROBIN;
            lbk_tree_sort sort = (c & 2) ? LBK_SORT_RADIX : LBK_SORT_BITONIC;
            /* The select builder takes the round-robin rows of every third. */
            if (split == LBK_SPLIT_ROUND_ROBIN && a % 3 == 0)
                sort = LBK_SORT_SELECT;
            if (inv_ns[a] > 50000 && dim > 8)
                continue;
            invariant_case(inv_ns[a], dim, kinds[k], split, sort);
        }
    }
}

static void test_invariant_full(void)
{
    const data_kind kinds[] = {DATA_UNIFORM, DATA_CLUSTERED, DATA_DUPLICATES, DATA_IDENTICAL};
    for (size_t a = 0; a < NN; a++)
        for (size_t b = 0; b < ND; b++)
            for (size_t k = 0; k < 4; k++)
                for (int split = 0; split < 2; split++)
                    for (int s = 0; s < 2; s++)
                        invariant_case(inv_ns[a], inv_dims[b], kinds[k], (lbk_tree_split)split,
                                       s ? LBK_SORT_RADIX : LBK_SORT_BITONIC);
}

static void test_corrupt(void)
{
    const uint32_t n = 1000;
    const int dim = 3;
    float *pts = make_points(n, dim, DATA_UNIFORM);
    lbk_kdtree *tree = build(pts, n, dim, LBK_SPLIT_ROUND_ROBIN, LBK_SORT_AUTO, true);
    if (tree) {
        float *tp;
        uint32_t *ids;
        uint8_t *sd;
        LBK_ASSERT_EQ_INT(lbk_kdtree_download(tree, &tp, &ids, &sd), LBK_OK);
        LBK_EXPECT_EQ_INT(lbk_kdtree_check(tp, n, dim, sd, 0), LBK_OK, "intact tree");
        /* Swap the root with a leaf: the leaf's value breaks the root plane. */
        for (int j = 0; j < dim; j++) {
            const float t = tp[j];
            tp[j] = tp[(size_t)(n - 1) * dim + j];
            tp[(size_t)(n - 1) * dim + j] = t;
        }
        lbk_log_set_quiet(true);
        LBK_EXPECT_EQ_INT(lbk_kdtree_check(tp, n, dim, sd, 0), LBK_ERR_INTERNAL, "swapped nodes");
        /* Deep corruption: one coordinate of a leaf pushed past an ancestor. */
        for (int j = 0; j < dim; j++) {
            const float t = tp[j];
            tp[j] = tp[(size_t)(n - 1) * dim + j];
            tp[(size_t)(n - 1) * dim + j] = t;
        }
        tp[(size_t)(n - 1) * dim + 0] = tp[0] < 0 ? 1e30f : -1e30f;
        LBK_EXPECT_EQ_INT(lbk_kdtree_check(tp, n, dim, sd, 0), LBK_ERR_INTERNAL,
                          "leaf past the root");
        uint8_t bad[3] = {7, 0, 0};
        LBK_EXPECT_EQ_INT(lbk_kdtree_check(tp, 3, dim, bad, 0), LBK_ERR_INTERNAL,
                          "split dim out of range");
        free(tp);
        free(ids);
        free(sd);
        lbk_kdtree_destroy(tree);
    }
    free(pts);
}

static void test_empty_and_auto(void)
{
    lbk_kdtree *tree = build(NULL, 0, 3, LBK_SPLIT_WIDEST, LBK_SORT_AUTO, true);
    if (tree) {
        lbk_kdtree_stats stats;
        lbk_kdtree_get_stats(tree, &stats);
        LBK_EXPECT_EQ_INT(stats.levels, 0);
        float q[6] = {0, 0, 0, 1, 1, 1};
        float keys[10];
        uint32_t idx[10];
        lbk_knn_result r = {.queries = 2, .k = 5, .keys = keys, .index = idx};
        LBK_EXPECT_EQ_INT(lbk_tree_query(tree, q, 2, 5, LBK_METRIC_L2, &r, NULL), LBK_OK,
                          "query empty");
        for (int i = 0; i < 10; i++) {
            LBK_EXPECT_TRUE(isinf(keys[i]), "pad %d: key %g", i, (double)keys[i]);
            LBK_EXPECT_EQ_U64(idx[i], UINT32_MAX, "pad %d", i);
        }
        lbk_kdtree_destroy(tree);
    }
    /* AUTO: the select builder on CPU devices and radix on GPUs when they
     * fit, bitonic under a tight budget. */
    const uint32_t n = 5000;
    float *pts = make_points(n, 3, DATA_UNIFORM);
    const lbk_dataset ds = {.rows = n, .dim = 3, .points = pts};
    for (int tight = 0; tight < 2; tight++) {
        const lbk_kdtree_params params = {
            .split = LBK_SPLIT_ROUND_ROBIN,
            .sort = LBK_SORT_AUTO,
            .verify = true,
            .memory_budget =
                tight ? lbk_kdtree_build_bytes(n, 3, LBK_SPLIT_ROUND_ROBIN, LBK_SORT_BITONIC)
                      : 0};
        lbk_kdtree *t = NULL;
        LBK_EXPECT_EQ_INT(lbk_kdtree_build(dev, &ds, &params, &t), LBK_OK, "auto build");
        if (t) {
            lbk_kdtree_stats stats;
            lbk_kdtree_get_stats(t, &stats);
            const lbk_tree_sort roomy = lbk_device_is_gpu(dev) ? LBK_SORT_RADIX : LBK_SORT_SELECT;
            LBK_EXPECT_EQ_INT(stats.sort_used, tight ? LBK_SORT_BITONIC : roomy, "tight=%d",
                              tight);
            lbk_kdtree_destroy(t);
        }
    }
    /* Radix explicitly requested under a budget it cannot fit: an error. */
    const lbk_kdtree_params small = {
        .split = LBK_SPLIT_ROUND_ROBIN, .sort = LBK_SORT_RADIX, .memory_budget = 1000};
    lbk_kdtree *t = NULL;
    lbk_log_set_quiet(true);
    LBK_EXPECT_EQ_INT(lbk_kdtree_build(dev, &ds, &small, &t), LBK_ERR_NOMEM, "radix over budget");
    LBK_EXPECT_TRUE(t == NULL, "radix over budget");
    free(pts);
}

/* ---- ocl: tree kNN against the oracle ---- */

static void knn_case(uint32_t n, int dim, data_kind kind, int metric, int k, lbk_tree_split split,
                     uint32_t nq)
{
    float *pts = make_points(n, dim, kind);
    float *qs = make_points(nq, dim, kind);
    /* Some queries exactly on reference points (zero keys, plane ties). */
    for (uint32_t i = 0; i < nq && n > 0; i += 3)
        memcpy(qs + (size_t)i * dim, pts + (size_t)(rng_next() % n) * dim,
               (size_t)dim * sizeof(float));
    const size_t slots = (size_t)nq * k;
    float *ok = malloc(slots * sizeof *ok + 4), *tk = malloc(slots * sizeof *tk + 4);
    uint32_t *oi = malloc(slots * sizeof *oi + 4), *ti = malloc(slots * sizeof *ti + 4);
    LBK_ASSERT_TRUE(ok && tk && oi && ti, "out of memory");
    LBK_EXPECT_EQ_INT(oracle_knn(pts, n, qs, nq, dim, metric, k, ok, oi), 0, "oracle");
    lbk_kdtree *tree = build(pts, n, dim, split, LBK_SORT_AUTO, false);
    if (tree) {
        lbk_knn_result r = {.queries = nq, .k = k, .keys = tk, .index = ti};
        LBK_EXPECT_EQ_INT(lbk_tree_query(tree, qs, nq, k, (lbk_metric)metric, &r, NULL), LBK_OK);
        int bad = 0;
        for (size_t s = 0; s < slots && bad < 3; s++) {
            if (memcmp(&ok[s], &tk[s], sizeof(float)) == 0 && oi[s] == ti[s])
                continue;
            bad++;
            char where[128];
            snprintf(where, sizeof where,
                     "n=%u dim=%d %s metric=%d k=%d split=%d: query %zu slot %zu", n, dim,
                     data_names[kind], metric, k, split, s / k, s % k);
            LBK_EXPECT_EQ_FLOAT(tk[s], ok[s], "%s: tree vs oracle key", where);
            LBK_EXPECT_EQ_U64(ti[s], oi[s], "%s: tree vs oracle index", where);
        }
        lbk_kdtree_destroy(tree);
    }
    free(pts);
    free(qs);
    free(ok);
    free(tk);
    free(oi);
    free(ti);
}

static void test_knn(data_kind kind, int metric)
{
    const int ks[] = {1, 16, 100, 256};
    for (size_t i = 0; i < 4; i++) {
        const lbk_tree_split split = (i & 1) ? LBK_SPLIT_WIDEST : LBK_SPLIT_ROUND_ROBIN;
        knn_case(3000, kind == DATA_GRID ? 2 : 3, kind, metric, ks[i], split, 150);
        knn_case(2000, kind == DATA_GRID ? 4 : 6, kind, metric, ks[i], split, 60);
    }
    knn_case(300, 3, kind, metric, 300, LBK_SPLIT_ROUND_ROBIN, 40); /* K = N */
    knn_case(100, 3, kind, metric, 256, LBK_SPLIT_WIDEST, 40);      /* K > N */
    knn_case(1, 3, kind, metric, 4, LBK_SPLIT_ROUND_ROBIN, 10);     /* N = 1 */
    knn_case(1, 1, kind, metric, 1, LBK_SPLIT_WIDEST, 10);
    knn_case(0, 3, kind, metric, 4, LBK_SPLIT_ROUND_ROBIN, 10); /* empty */
    knn_case(7, 1, kind, metric, 3, LBK_SPLIT_ROUND_ROBIN, 20);
}

/* A bound per query (lbk_tree_query_bounded, the spatial partition's phase
 * 2): the list must be the oracle's unbounded K-list cut after its last key
 * <= the bound, pads after. Bounds: the K-th key itself (ties at the bound
 * on the grid), an earlier key, +inf, and just below the nearest key (an
 * empty list). with_bounds false: no bounds at all (NULL). in_order: through
 * lbk_tree_query_in_order, which walks the queries as given (here in random
 * order, not the Morton order a self search hands it): the walk order must
 * not change an answer. */
static void bounded_case_how(uint32_t n, int dim, data_kind kind, int metric, int k, uint32_t nq,
                             bool in_order, bool with_bounds)
{
    float *pts = make_points(n, dim, kind), *qs = make_points(nq, dim, kind);
    const size_t slots = (size_t)nq * k;
    float *ok = malloc(slots * sizeof *ok), *tk = malloc(slots * sizeof *tk);
    uint32_t *oi = malloc(slots * sizeof *oi), *ti = malloc(slots * sizeof *ti);
    float *bounds = malloc(nq * sizeof *bounds);
    LBK_ASSERT_TRUE(pts && qs && ok && tk && oi && ti && bounds, "out of memory");
    LBK_EXPECT_EQ_INT(oracle_knn(pts, n, qs, nq, dim, metric, k, ok, oi), 0, "oracle");
    for (uint32_t q = 0; q < nq; q++) {
        const float *list = ok + (size_t)q * k;
        switch (q % 4) {
        case 0: bounds[q] = list[k - 1]; break;
        case 1: bounds[q] = list[rng_next() % (uint64_t)k]; break;
        case 2: bounds[q] = INFINITY; break;
        /* Keys are >= +0, and so are bounds (a negative one's bits would
         * sort above every key): a query on a point keeps its zeros. */
        default: bounds[q] = list[0] > 0.0f ? nextafterf(list[0], 0.0f) : 0.0f; break;
        }
        if (!with_bounds)
            bounds[q] = INFINITY;
    }
    lbk_kdtree *tree = build(pts, n, dim, LBK_SPLIT_ROUND_ROBIN, LBK_SORT_AUTO, false);
    if (tree) {
        lbk_knn_result r = {.queries = nq, .k = k, .keys = tk, .index = ti};
        const float *given = with_bounds ? bounds : NULL;
        LBK_EXPECT_EQ_INT(
            in_order
                ? lbk_tree_query_in_order(tree, qs, given, nq, k, (lbk_metric)metric, &r, NULL)
                : lbk_tree_query_bounded(tree, qs, given, nq, k, (lbk_metric)metric, &r, NULL),
            LBK_OK);
        int bad = 0;
        for (size_t s = 0; s < slots && bad < 3; s++) {
            const bool kept = ok[s] <= bounds[s / k];
            const float want_key = kept ? ok[s] : INFINITY;
            const uint32_t want_row = kept ? oi[s] : UINT32_MAX;
            if (memcmp(&want_key, &tk[s], sizeof(float)) == 0 && want_row == ti[s])
                continue;
            bad++;
            LBK_EXPECT_EQ_FLOAT(tk[s], want_key,
                                "n=%u %s metric=%d k=%d in_order=%d: query %zu slot %zu", n,
                                data_names[kind], metric, k, in_order, s / k, s % k);
            LBK_EXPECT_EQ_U64(ti[s], want_row,
                              "n=%u %s metric=%d k=%d in_order=%d: query %zu slot %zu", n,
                              data_names[kind], metric, k, in_order, s / k, s % k);
        }
        lbk_kdtree_destroy(tree);
    }
    free(pts);
    free(qs);
    free(ok);
    free(tk);
    free(oi);
    free(ti);
    free(bounds);
}

static void bounded_case(uint32_t n, int dim, data_kind kind, int metric, int k, uint32_t nq)
{
    bounded_case_how(n, dim, kind, metric, k, nq, false, true);
}

static void test_knn_bounded(void)
{
    for (int metric = 0; metric < 3; metric++) {
        bounded_case(3000, 2, DATA_GRID, metric, 16, 200);
        bounded_case(3000, 3, DATA_UNIFORM, metric, 16, 200);
        bounded_case(2000, 3, DATA_CLUSTERED, metric, 100, 80);
    }
    bounded_case(50, 3, DATA_UNIFORM, 0, 64, 20); /* K > N: pads before the bound too */
}

/* The self search's path: queries walked in the order given. Query counts
 * off the work-group size (257, 1001) leave work-items past the end. */
static void test_knn_in_order(void)
{
    for (int metric = 0; metric < 3; metric++) {
        bounded_case_how(3000, 3, DATA_UNIFORM, metric, 16, 1001, true, false);
        bounded_case_how(3000, 2, DATA_GRID, metric, 16, 257, true, true);
    }
    bounded_case_how(2000, 3, DATA_CLUSTERED, 0, 100, 80, true, false);
    bounded_case_how(50, 3, DATA_UNIFORM, 0, 64, 20, true, false); /* K > N: pads */
}

/* K at the tree's limit, LBK_TREE_K_MAX = 1024 (one insertion-sorted list
 * per work-item), against the oracle for every metric, both splits, ties
 * (the grid) and N below K (padding); one more is refused as a
 * configuration error that writes no result. Small N and few queries: the
 * lists, not the data, are what is large. */
static void test_knn_k_max(void)
{
    LBK_ASSERT_EQ_INT(LBK_TREE_K_MAX, 1024, "the limit docs/user-guide.md documents");
    for (int metric = 0; metric < 3; metric++) {
        knn_case(1500, 3, DATA_UNIFORM, metric, LBK_TREE_K_MAX, LBK_SPLIT_ROUND_ROBIN, 12);
        knn_case(1100, 2, DATA_GRID, metric, LBK_TREE_K_MAX, LBK_SPLIT_WIDEST, 9);
    }
    knn_case(1024, 3, DATA_CLUSTERED, 0, LBK_TREE_K_MAX, LBK_SPLIT_WIDEST, 6);   /* K = N */
    knn_case(700, 3, DATA_UNIFORM, 1, LBK_TREE_K_MAX, LBK_SPLIT_ROUND_ROBIN, 6); /* K > N */

    const uint32_t n = 1200;
    float *pts = make_points(n, 3, DATA_UNIFORM);
    lbk_kdtree *tree = build(pts, n, 3, LBK_SPLIT_ROUND_ROBIN, LBK_SORT_AUTO, false);
    if (tree) {
        enum { K = LBK_TREE_K_MAX + 1 };
        float *keys = malloc(K * sizeof *keys);
        uint32_t *idx = malloc(K * sizeof *idx);
        LBK_ASSERT_TRUE(keys && idx, "out of memory");
        for (int s = 0; s < K; s++) {
            keys[s] = -1.0f;
            idx[s] = 7;
        }
        lbk_knn_result r = {.queries = 1, .k = K, .keys = keys, .index = idx};
        LBK_EXPECT_EQ_INT(lbk_tree_query(tree, pts, 1, K, LBK_METRIC_L2, &r, NULL),
                          LBK_ERR_CONFIG, "K = %d", K);
        int untouched = 1;
        for (int s = 0; s < K; s++)
            untouched &= keys[s] == -1.0f && idx[s] == 7;
        LBK_EXPECT_TRUE(untouched, "K = %d wrote results", K);
        /* The tree is still good for K = 1024 after the refusal. */
        lbk_knn_result ok = {.queries = 1, .k = K - 1, .keys = keys, .index = idx};
        LBK_EXPECT_EQ_INT(lbk_tree_query(tree, pts, 1, K - 1, LBK_METRIC_L2, &ok, NULL), LBK_OK);
        LBK_EXPECT_EQ_FLOAT(keys[0], 0.0f, "the query is reference row 0");
        free(keys);
        free(idx);
        lbk_kdtree_destroy(tree);
    }
    free(pts);
}

/* Non-finite coordinates are rejected by the dataset module; should one get
 * through, the build and the traversal must still terminate and stay in
 * bounds (their order is then unspecified). */
static void test_nonfinite(void)
{
    const uint32_t n = 500;
    float *pts = make_points(n, 2, DATA_UNIFORM);
    pts[10] = NAN;
    pts[21] = INFINITY;
    pts[33] = -INFINITY;
    for (int s = 0; s < 2; s++) {
        lbk_kdtree *tree = build(pts, n, 2, s ? LBK_SPLIT_WIDEST : LBK_SPLIT_ROUND_ROBIN,
                                 s ? LBK_SORT_RADIX : LBK_SORT_BITONIC, false);
        if (!tree)
            continue;
        float q[4] = {0.5f, NAN, 0.1f, 0.2f};
        float keys[32];
        uint32_t idx[32];
        lbk_knn_result r = {.queries = 2, .k = 16, .keys = keys, .index = idx};
        LBK_EXPECT_EQ_INT(lbk_tree_query(tree, q, 2, 16, LBK_METRIC_L2, &r, NULL), LBK_OK);
        for (int i = 0; i < 32; i++)
            LBK_EXPECT_TRUE(idx[i] < n || idx[i] == UINT32_MAX, "slot %d: index %u of %u", i,
                            idx[i], n);
        lbk_kdtree_destroy(tree);
    }
    free(pts);
}

/* ---- the cases ---- */

/* The device cases open the device first (skipping without one). */
typedef struct {
    const char *name;
    void (*run)(void);
} device_case;

static void run_on_device(const void *row)
{
    open_device();
    ((const device_case *)row)->run();
    lbk_device_close(dev);
}

static void test_ref_rr_bitonic(void) { test_reference(LBK_SPLIT_ROUND_ROBIN, LBK_SORT_BITONIC); }
static void test_ref_rr_radix(void) { test_reference(LBK_SPLIT_ROUND_ROBIN, LBK_SORT_RADIX); }
static void test_ref_widest_bitonic(void) { test_reference(LBK_SPLIT_WIDEST, LBK_SORT_BITONIC); }
static void test_ref_widest_radix(void) { test_reference(LBK_SPLIT_WIDEST, LBK_SORT_RADIX); }
static void test_ref_rr_select(void) { test_reference(LBK_SPLIT_ROUND_ROBIN, LBK_SORT_SELECT); }

/* The select builder orders each node by the composite key the tag sorts'
 * stability implies (kernels/kdtree.cl); with ties in every coordinate it
 * must still build the radix builder's tree, node for node. */
static void select_vs_radix(uint32_t n, int dim, data_kind kind)
{
    float *pts = make_points(n, dim, kind);
    lbk_kdtree *a = build(pts, n, dim, LBK_SPLIT_ROUND_ROBIN, LBK_SORT_RADIX, false);
    lbk_kdtree *b = build(pts, n, dim, LBK_SPLIT_ROUND_ROBIN, LBK_SORT_SELECT, true);
    if (a && b) {
        float *pa, *pb;
        uint32_t *ia, *ib;
        uint8_t *da, *db;
        LBK_ASSERT_EQ_INT(lbk_kdtree_download(a, &pa, &ia, &da), LBK_OK);
        LBK_ASSERT_EQ_INT(lbk_kdtree_download(b, &pb, &ib, &db), LBK_OK);
        int bad = 0;
        for (uint32_t i = 0; i < n && bad < 3; i++) {
            if (ia[i] == ib[i])
                continue;
            bad++;
            LBK_EXPECT_EQ_U64(ib[i], ia[i], "n=%u dim=%d %s: node %u, select vs radix row", n,
                              dim, data_names[kind], i);
        }
        LBK_EXPECT_EQ_MEM(pb, pa, (size_t)n * dim * sizeof(float), "n=%u dim=%d %s: points", n,
                          dim, data_names[kind]);
        free(pa);
        free(pb);
        free(ia);
        free(ib);
        free(da);
        free(db);
    }
    lbk_kdtree_destroy(a);
    lbk_kdtree_destroy(b);
    free(pts);
}

static void test_select_ties(void)
{
    const data_kind kinds[] = {DATA_DUPLICATES, DATA_GRID, DATA_IDENTICAL, DATA_CLUSTERED};
    const uint32_t ns[] = {1, 2, 5, 17, 1000, 4097, 70001};
    const int dims[] = {1, 2, 3, 4};
    for (size_t k = 0; k < 4; k++)
        for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
            select_vs_radix(ns[a], dims[(a + k) % 4], kinds[k]);
}

/* A rotated round-robin tree (the root splits dimension `rot`, as a
 * spatial partition's local tree continues its top tree): the builders
 * give the same tree, it holds the k-d invariant for its rotation (and,
 * on distinct coordinates, not for the next one, so the rotation is really
 * used), and the query walks it to the oracle's lists. */
static void rotation_case(uint32_t n, int dim, int rot, data_kind kind)
{
    const lbk_tree_sort sorts[] = {LBK_SORT_RADIX, LBK_SORT_BITONIC, LBK_SORT_SELECT};
    float *pts = make_points(n, dim, kind);
    float *tp[3] = {NULL, NULL, NULL};
    uint32_t *ids[3] = {NULL, NULL, NULL};
    uint8_t *sd[3] = {NULL, NULL, NULL};
    lbk_kdtree *trees[3];
    char what[96];
    snprintf(what, sizeof what, "n=%u dim=%d rotation=%d %s", n, dim, rot, data_names[kind]);
    for (int b = 0; b < 3; b++) {
        trees[b] = build_rotated(pts, n, dim, LBK_SPLIT_ROUND_ROBIN, rot, sorts[b], true);
        if (trees[b])
            LBK_EXPECT_EQ_INT(lbk_kdtree_download(trees[b], &tp[b], &ids[b], &sd[b]), LBK_OK);
    }
    /* The bitonic sort is not stable: on ties it builds a valid tree of
     * its own (as without a rotation), so it is compared on distinct
     * coordinates only. */
    for (int b = 1; b < 3; b++)
        if (tp[0] && tp[b] && (sorts[b] != LBK_SORT_BITONIC || kind == DATA_UNIQUE)) {
            LBK_EXPECT_EQ_MEM(ids[b], ids[0], (size_t)n * 4, "%s: %s vs radix rows", what,
                              sort_name(sorts[b]));
            LBK_EXPECT_EQ_MEM(tp[b], tp[0], (size_t)n * dim * 4, "%s: %s vs radix points", what,
                              sort_name(sorts[b]));
        }
    if (tp[0]) {
        LBK_EXPECT_EQ_INT(lbk_kdtree_check(tp[0], n, dim, NULL, rot), LBK_OK, "%s", what);
        if (kind == DATA_UNIQUE && dim > 1)
            LBK_EXPECT_EQ_INT(lbk_kdtree_check(tp[0], n, dim, NULL, (rot + 1) % dim),
                              LBK_ERR_INTERNAL, "%s: checked as rotation %d", what,
                              (rot + 1) % dim);
    }
    const uint32_t nq = 100;
    const int k = 16;
    float *qs = make_points(nq, dim, kind);
    float *ok = malloc(nq * k * sizeof *ok), *tk = malloc(nq * k * sizeof *tk);
    uint32_t *oi = malloc(nq * k * sizeof *oi), *ti = malloc(nq * k * sizeof *ti);
    LBK_ASSERT_TRUE(ok && tk && oi && ti, "out of memory");
    LBK_EXPECT_EQ_INT(oracle_knn(pts, n, qs, nq, dim, 0, k, ok, oi), 0, "oracle");
    if (trees[0]) {
        lbk_knn_result r = {.queries = nq, .k = k, .keys = tk, .index = ti};
        LBK_EXPECT_EQ_INT(lbk_tree_query(trees[0], qs, nq, k, LBK_METRIC_L2, &r, NULL), LBK_OK);
        LBK_EXPECT_EQ_MEM(tk, ok, nq * k * sizeof *tk, "%s: tree vs oracle keys", what);
        LBK_EXPECT_EQ_MEM(ti, oi, nq * k * sizeof *ti, "%s: tree vs oracle rows", what);
    }
    for (int b = 0; b < 3; b++) {
        free(tp[b]);
        free(ids[b]);
        free(sd[b]);
        lbk_kdtree_destroy(trees[b]);
    }
    free(pts);
    free(qs);
    free(ok);
    free(tk);
    free(oi);
    free(ti);
}

static void test_rotation(void)
{
    rotation_case(1000, 3, 1, DATA_UNIQUE);
    rotation_case(1025, 3, 2, DATA_UNIQUE);
    rotation_case(4097, 5, 4, DATA_CLUSTERED);
    rotation_case(2000, 2, 1, DATA_DUPLICATES);
    rotation_case(70001, 3, 1, DATA_UNIFORM);
}

/* kNN against the oracle: one case per data kind and metric. */
typedef struct {
    const char *name;
    data_kind kind;
    int metric;
} knn_row;

static void run_knn(const void *row)
{
    const knn_row *c = row;
    open_device();
    test_knn(c->kind, c->metric);
    lbk_device_close(dev);
}

/* Nodes of s's subtree within `depths` levels, counted by walking it. */
static uint64_t walked_nodes(uint64_t s, uint64_t n, int depths)
{
    if (s >= n || depths == 0)
        return 0;
    return 1 + walked_nodes(2 * s + 1, n, depths - 1) + walked_nodes(2 * s + 2, n, depths - 1);
}

/* The query's bucket tiles (lbk_shared.h): each bucket's nodes, counted by
 * walking its subtree, fit its tiles; tiles follow each other without gaps
 * or overlaps; and the copy's size is what the tiles need. */
static void test_bucket_tiles(void)
{
    for (uint64_t n = 1; n <= 4100 && lbk_test_failures() < 10; n++) {
        const uint32_t level = lbk_tq_bucket_level(n);
        const uint64_t buckets = (uint64_t)1 << level, twos = lbk_tq_two_tile_buckets(n);
        uint64_t next = 0, nodes = (1ull << level) - 1;
        for (uint64_t b = 0; b < buckets; b++) {
            const uint64_t count = walked_nodes(buckets - 1 + b, n, LBK_TREE_BUCKET_LEVELS);
            const uint64_t tiles = b < twos ? 2 : 1;
            LBK_EXPECT_TRUE(count <= tiles * LBK_TREE_TILE_LANES && count > (tiles - 1) * 8,
                            "n = %llu, bucket %llu: %llu nodes in %llu tiles",
                            (unsigned long long)n, (unsigned long long)b,
                            (unsigned long long)count, (unsigned long long)tiles);
            LBK_EXPECT_EQ_U64(lbk_tq_tile_start(b, twos), next, "n = %llu, bucket %llu",
                              (unsigned long long)n, (unsigned long long)b);
            next += tiles;
            nodes += count;
        }
        LBK_EXPECT_EQ_U64(nodes, n, "every node above or in a bucket, n = %llu",
                          (unsigned long long)n);
        LBK_EXPECT_EQ_U64(lbk_tree_buckets_bytes(n, 3, LBK_DTYPE_FLOAT32),
                          next * LBK_TREE_TILE_LANES * 16, "n = %llu", (unsigned long long)n);
    }
}

static const lbk_test_case host_cases[] = {
    {"formulas_hand10", test_formulas_hand10},
    {"formulas_vs_count", test_formulas_vs_count},
    {"bucket_tiles", test_bucket_tiles},
};

static const device_case device_cases[] = {
    {"hand10_device", test_hand10_device},
    {"ref_rr_bitonic", test_ref_rr_bitonic},
    {"ref_rr_radix", test_ref_rr_radix},
    {"ref_widest_bitonic", test_ref_widest_bitonic},
    {"ref_widest_radix", test_ref_widest_radix},
    {"ref_rr_select", test_ref_rr_select},
    {"select_ties", test_select_ties},
    {"rotation", test_rotation},
    {"invariant", test_invariant_default},
    {"corrupt", test_corrupt},
    {"empty_and_auto", test_empty_and_auto},
    {"nonfinite", test_nonfinite},
    {"knn_k1024", test_knn_k_max},
    {"knn_bounded", test_knn_bounded},
    {"knn_in_order", test_knn_in_order},
};

/* Label slow (tests/kdtree/CMakeLists.txt). */
static const device_case slow_cases[] = {
    {"invariant_full", test_invariant_full},
};

static const knn_row knn_cases[] = {
    {"knn_grid_l2", DATA_GRID, 0},     {"knn_grid_l1", DATA_GRID, 1},
    {"knn_grid_linf", DATA_GRID, 2},   {"knn_float_l2", DATA_UNIFORM, 0},
    {"knn_float_l1", DATA_UNIFORM, 1}, {"knn_float_linf", DATA_UNIFORM, 2},
};

LBK_TEST_MAIN(LBK_TEST_CASES(host_cases), LBK_TEST_ROWS(device_cases, run_on_device),
              LBK_TEST_ROWS(slow_cases, run_on_device), LBK_TEST_ROWS(knn_cases, run_knn))
