/* Tests of the tag-sort k-d tree builder and the tree kNN engine. One
 * executable, one CTest test per case: `test_kdtree CASE`. Oracles: the host
 * reference builder in ref_tagsort.c and oracle_knn, neither of which shares
 * code with src/. */
#include "device.h"
#include "kdtree.h"
#include "knn_oracle.h"
#include "log.h"
#include "query.h"
#include "ref_tagsort.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);            \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fprintf(stderr, "\n");                                                              \
            failures++;                                                                         \
        }                                                                                       \
    } while (0)

/* ---- data ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_unit(void) { return (float)(rng_next() >> 40) / (float)(1 << 24); }

static float rng_normal(void)
{
    float u = rng_unit(), v = rng_unit();
    if (u < 1e-7f)
        u = 1e-7f;
    return sqrtf(-2.0f * logf(u)) * cosf(6.2831853f * v);
}

typedef enum { DATA_UNIQUE, DATA_UNIFORM, DATA_CLUSTERED, DATA_DUPLICATES, DATA_IDENTICAL,
               DATA_GRID } data_kind;

static const char *const data_names[] = {"unique", "uniform", "clustered", "duplicates",
                                         "identical", "grid"};

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

static void open_device(void)
{
    const lbk_device_request req = {.type = LBK_DEVICE_ANY, .local_rank = 0, .list = NULL,
                                     .list_len = 0};
    if (lbk_device_open(&req, &dev) != LBK_OK) {
        fprintf(stderr, "no OpenCL device\n");
        exit(1);
    }
}

static lbk_kdtree *build(float *points, uint32_t n, int dim, lbk_tree_split split,
                         lbk_tree_sort sort, bool verify)
{
    const lbk_dataset ds = {.rows = n, .dim = dim, .first_row = 0, .points = points,
                            .labels = NULL};
    const lbk_kdtree_params params = {.split = split, .sort = sort, .verify = verify,
                                      .memory_budget = 0, .segment_max_set = segment_max_set,
                                      .segment_max = segment_max};
    lbk_kdtree *tree = NULL;
    const lbk_status st = lbk_kdtree_build(dev, &ds, &params, &tree);
    CHECK(st == LBK_OK, "build n=%u dim=%d split=%d sort=%d: %s", n, dim, split, sort,
          lbk_status_name(st));
    return tree;
}

static const char *sort_name(lbk_tree_sort s) { return s == LBK_SORT_RADIX ? "radix" : "bitonic"; }

/* ---- unit: shape formulas ---- */

static void test_formulas_hand10(void)
{
    /* DESIGN.md: N = 10 gives pivots 6 (root), 4 and 8, then 4, 7, 8, 9. */
    const uint64_t want[7] = {6, 4, 8, 4, 7, 8, 9};
    for (uint64_t s = 0; s < 7; s++)
        CHECK(lbk_kdtree_pivot(s, 10) == want[s], "pivot(%llu) = %llu, want %llu",
              (unsigned long long)s, (unsigned long long)lbk_kdtree_pivot(s, 10),
              (unsigned long long)want[s]);
    CHECK(lbk_kdtree_levels(10) == 4, "levels(10) = %d", lbk_kdtree_levels(10));
    CHECK(lbk_kdtree_levels(1) == 1 && lbk_kdtree_levels(0) == 0, "levels of 0 and 1");
}

static void test_formulas_vs_count(void)
{
    uint64_t *size = malloc(5000 * sizeof *size);
    for (uint64_t n = 1; n <= 4100 && failures < 10; n++) {
        ref_subtree_sizes(n, size);
        for (uint64_t s = 0; s < n; s++) {
            CHECK(lbk_kdtree_subtree_size(s, n) == size[s], "ss(%llu) n=%llu",
                  (unsigned long long)s, (unsigned long long)n);
        }
        CHECK(lbk_kdtree_subtree_size(n, n) == 0, "ss(n) must be 0");
        /* Segment begins: settled nodes, then the level's subtrees in order. */
        for (int l = 0; ((uint64_t)1 << (l + 1)) <= n; l++) {
            const uint64_t first = ((uint64_t)1 << l) - 1;
            uint64_t pos = first;
            for (uint64_t s = first; s < 2 * first + 1 && s < n; s++) {
                CHECK(lbk_kdtree_segment_begin(s, n) == pos, "sb(%llu) n=%llu",
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
        CHECK(lbk_kdtree_subtree_size(0, n) == n, "ss(0) n=%llu", (unsigned long long)n);
        CHECK(lbk_kdtree_subtree_size(1, n) + lbk_kdtree_subtree_size(2, n) + 1 == n,
              "children of the root n=%llu", (unsigned long long)n);
        CHECK(lbk_kdtree_pivot(0, n) == lbk_kdtree_subtree_size(1, n), "root pivot n=%llu",
              (unsigned long long)n);
        const uint64_t last_first = (1ull << (lbk_kdtree_levels(n) - 2)) - 1;
        const uint64_t s = n / 2 - 1 > last_first ? last_first + 12345 : last_first;
        CHECK(lbk_kdtree_segment_begin(s + 1, n) ==
                  lbk_kdtree_segment_begin(s, n) + lbk_kdtree_subtree_size(s, n),
              "consecutive segments n=%llu", (unsigned long long)n);
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
        CHECK(lbk_kdtree_download(tree, &tp, &ids, &sd) == LBK_OK, "download");
        float seq[10];
        uint64_t pos = 0;
        in_order(tp, 10, 0, seq, &pos);
        for (int i = 0; i < 10; i++)
            CHECK(seq[i] == (float)i, "%s: in-order position %d holds %g", sort_name(sorts[si]),
                  i, (double)seq[i]);
        /* Sorted 0..9: the root holds the value at pivot 6 of the whole. */
        CHECK(tp[0] == 6.0f, "root %g", (double)tp[0]);
        for (int i = 0; i < 10; i++)
            CHECK(pts[ids[i]] == tp[i], "id of node %d", i);
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
    CHECK(ref_tagsort_build(pts, n, dim, split == LBK_SPLIT_WIDEST, rt, rr, rd) == 0,
          "reference n=%u", n);
    lbk_kdtree *tree = build(pts, n, dim, split, sort, true);
    if (tree) {
        float *tp;
        uint32_t *ids;
        uint8_t *sd;
        CHECK(lbk_kdtree_download(tree, &tp, &ids, &sd) == LBK_OK, "download");
        CHECK((split == LBK_SPLIT_WIDEST) == (sd != NULL), "split dims present iff widest");
        int bad = 0;
        for (uint32_t i = 0; i < n && bad < 3; i++) {
            const bool ok = ids[i] == rr[i] &&
                            memcmp(tp + (size_t)i * dim, rt + (size_t)i * dim,
                                   (size_t)dim * sizeof(float)) == 0 &&
                            (!sd || sd[i] == rd[i]);
            if (!ok)
                bad++;
            CHECK(ok, "n=%u dim=%d %s %s: node %u: device row %u dim %d, reference row %u dim %d",
                  n, dim, split == LBK_SPLIT_WIDEST ? "widest" : "round-robin", sort_name(sort),
                  i, ids[i], sd ? sd[i] : -1, rr[i], rd[i]);
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
        CHECK(lbk_kdtree_download(tree, &tp, &ids, &sd) == LBK_OK, "download");
        const lbk_status st = lbk_kdtree_check(tp, n, dim, sd);
        CHECK(st == LBK_OK, "invariant n=%u dim=%d %s split=%d %s", n, dim, data_names[kind],
              split, sort_name(sort));
        /* The ids are a permutation and name the point each node holds. */
        uint8_t *seen = calloc((size_t)n + 1, 1);
        for (uint32_t i = 0; i < n; i++) {
            CHECK(ids[i] < n && !seen[ids[i]], "ids not a permutation at node %u", i);
            if (ids[i] < n) {
                seen[ids[i]] = 1;
                CHECK(memcmp(tp + (size_t)i * dim, pts + (size_t)ids[i] * dim,
                             (size_t)dim * sizeof(float)) == 0,
                      "node %u does not hold row %u", i, ids[i]);
            }
        }
        free(seen);
        free(tp);
        free(ids);
        free(sd);
        lbk_kdtree_stats stats;
        lbk_kdtree_get_stats(tree, &stats);
        CHECK(stats.sort_used == sort && stats.levels == lbk_kdtree_levels(n), "stats");
        CHECK(stats.peak_device_bytes <= lbk_kdtree_build_bytes(n, dim, split, sort),
              "peak %llu over the estimate", (unsigned long long)stats.peak_device_bytes);
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
            const lbk_tree_sort sort = (c & 2) ? LBK_SORT_RADIX : LBK_SORT_BITONIC;
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
        CHECK(lbk_kdtree_download(tree, &tp, &ids, &sd) == LBK_OK, "download");
        CHECK(lbk_kdtree_check(tp, n, dim, sd) == LBK_OK, "intact tree");
        /* Swap the root with a leaf: the leaf's value breaks the root plane. */
        for (int j = 0; j < dim; j++) {
            const float t = tp[j];
            tp[j] = tp[(size_t)(n - 1) * dim + j];
            tp[(size_t)(n - 1) * dim + j] = t;
        }
        lbk_log_set_quiet(true);
        CHECK(lbk_kdtree_check(tp, n, dim, sd) == LBK_ERR_INTERNAL, "swapped nodes");
        /* Deep corruption: one coordinate of a leaf pushed past an ancestor. */
        for (int j = 0; j < dim; j++) {
            const float t = tp[j];
            tp[j] = tp[(size_t)(n - 1) * dim + j];
            tp[(size_t)(n - 1) * dim + j] = t;
        }
        tp[(size_t)(n - 1) * dim + 0] = tp[0] < 0 ? 1e30f : -1e30f;
        CHECK(lbk_kdtree_check(tp, n, dim, sd) == LBK_ERR_INTERNAL, "leaf past the root");
        uint8_t bad[3] = {7, 0, 0};
        CHECK(lbk_kdtree_check(tp, 3, dim, bad) == LBK_ERR_INTERNAL, "split dim out of range");
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
        CHECK(stats.levels == 0, "empty levels");
        float q[6] = {0, 0, 0, 1, 1, 1};
        float keys[10];
        uint32_t idx[10];
        lbk_knn_result r = {.queries = 2, .k = 5, .keys = keys, .index = idx};
        CHECK(lbk_tree_query(tree, q, 2, 5, LBK_METRIC_L2, &r) == LBK_OK, "query empty");
        for (int i = 0; i < 10; i++)
            CHECK(isinf(keys[i]) && idx[i] == UINT32_MAX, "pad %d", i);
        lbk_kdtree_destroy(tree);
    }
    /* AUTO: radix when it fits, bitonic under a tight budget. */
    const uint32_t n = 5000;
    float *pts = make_points(n, 3, DATA_UNIFORM);
    const lbk_dataset ds = {.rows = n, .dim = 3, .points = pts};
    for (int tight = 0; tight < 2; tight++) {
        const lbk_kdtree_params params = {
            .split = LBK_SPLIT_ROUND_ROBIN, .sort = LBK_SORT_AUTO, .verify = true,
            .memory_budget = tight ? lbk_kdtree_build_bytes(n, 3, LBK_SPLIT_ROUND_ROBIN,
                                                            LBK_SORT_BITONIC)
                                   : 0};
        lbk_kdtree *t = NULL;
        CHECK(lbk_kdtree_build(dev, &ds, &params, &t) == LBK_OK, "auto build");
        if (t) {
            lbk_kdtree_stats stats;
            lbk_kdtree_get_stats(t, &stats);
            CHECK(stats.sort_used == (tight ? LBK_SORT_BITONIC : LBK_SORT_RADIX),
                  "auto picked %d (tight=%d)", stats.sort_used, tight);
            lbk_kdtree_destroy(t);
        }
    }
    /* Radix explicitly requested under a budget it cannot fit: an error. */
    const lbk_kdtree_params small = {.split = LBK_SPLIT_ROUND_ROBIN, .sort = LBK_SORT_RADIX,
                                     .memory_budget = 1000};
    lbk_kdtree *t = NULL;
    lbk_log_set_quiet(true);
    CHECK(lbk_kdtree_build(dev, &ds, &small, &t) == LBK_ERR_NOMEM && !t, "radix over budget");
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
    CHECK(oracle_knn(pts, n, qs, nq, dim, metric, k, ok, oi) == 0, "oracle");
    lbk_kdtree *tree = build(pts, n, dim, split, LBK_SORT_AUTO, false);
    if (tree) {
        lbk_knn_result r = {.queries = nq, .k = k, .keys = tk, .index = ti};
        CHECK(lbk_tree_query(tree, qs, nq, k, (lbk_metric)metric, &r) == LBK_OK, "query");
        int bad = 0;
        for (size_t s = 0; s < slots && bad < 3; s++) {
            const bool same = memcmp(&ok[s], &tk[s], sizeof(float)) == 0 && oi[s] == ti[s];
            if (!same)
                bad++;
            CHECK(same, "n=%u dim=%d %s metric=%d k=%d split=%d: query %zu slot %zu: tree "
                  "(%.9g, %u) oracle (%.9g, %u)", n, dim, data_names[kind], metric, k, split,
                  s / k, s % k, (double)tk[s], ti[s], (double)ok[s], oi[s]);
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
    knn_case(300, 3, kind, metric, 300, LBK_SPLIT_ROUND_ROBIN, 40);   /* K = N */
    knn_case(100, 3, kind, metric, 256, LBK_SPLIT_WIDEST, 40);        /* K > N */
    knn_case(1, 3, kind, metric, 4, LBK_SPLIT_ROUND_ROBIN, 10);       /* N = 1 */
    knn_case(1, 1, kind, metric, 1, LBK_SPLIT_WIDEST, 10);
    knn_case(0, 3, kind, metric, 4, LBK_SPLIT_ROUND_ROBIN, 10);       /* empty */
    knn_case(7, 1, kind, metric, 3, LBK_SPLIT_ROUND_ROBIN, 20);
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
        CHECK(lbk_tree_query(tree, q, 2, 16, LBK_METRIC_L2, &r) == LBK_OK, "query");
        for (int i = 0; i < 32; i++)
            CHECK(idx[i] < n || idx[i] == UINT32_MAX, "index in range");
        lbk_kdtree_destroy(tree);
    }
    free(pts);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[2], "--segment-max") == 0) {
        segment_max_set = true;
        segment_max = strtoull(argv[3], NULL, 10);
    } else if (argc != 2) {
        fprintf(stderr, "usage: test_kdtree CASE [--segment-max N]\n");
        return 2;
    }
    const char *c = argv[1];
    if (strcmp(c, "formulas_hand10") == 0) {
        test_formulas_hand10();
    } else if (strcmp(c, "formulas_vs_count") == 0) {
        test_formulas_vs_count();
    } else {
        open_device();
        if (strcmp(c, "hand10_device") == 0)
            test_hand10_device();
        else if (strcmp(c, "ref_rr_bitonic") == 0)
            test_reference(LBK_SPLIT_ROUND_ROBIN, LBK_SORT_BITONIC);
        else if (strcmp(c, "ref_rr_radix") == 0)
            test_reference(LBK_SPLIT_ROUND_ROBIN, LBK_SORT_RADIX);
        else if (strcmp(c, "ref_widest_bitonic") == 0)
            test_reference(LBK_SPLIT_WIDEST, LBK_SORT_BITONIC);
        else if (strcmp(c, "ref_widest_radix") == 0)
            test_reference(LBK_SPLIT_WIDEST, LBK_SORT_RADIX);
        else if (strcmp(c, "invariant") == 0)
            test_invariant_default();
        else if (strcmp(c, "invariant_full") == 0)
            test_invariant_full();
        else if (strcmp(c, "corrupt") == 0)
            test_corrupt();
        else if (strcmp(c, "empty_and_auto") == 0)
            test_empty_and_auto();
        else if (strcmp(c, "nonfinite") == 0)
            test_nonfinite();
        else if (strncmp(c, "knn_", 4) == 0) {
            const data_kind kind = strstr(c, "grid") ? DATA_GRID : DATA_UNIFORM;
            const int metric = strstr(c, "linf") ? 2 : strstr(c, "l1") ? 1 : 0;
            test_knn(kind, metric);
        } else {
            fprintf(stderr, "unknown case %s\n", c);
            lbk_device_close(dev);
            return 2;
        }
        lbk_device_close(dev);
    }
    if (failures)
        fprintf(stderr, "%s: %d check(s) failed\n", c, failures);
    return failures ? 1 : 0;
}
