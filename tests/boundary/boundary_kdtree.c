/* Randomized boundary cases of the k-d tree engine (build and query)
 * against the host oracle: keys and indices byte-identical, in (key, id)
 * order. Every case is drawn from (seed, case number) alone: the point
 * count next to powers of two (a left-balanced tree's last level empty,
 * full or holding one node), to multiples of the query's bucket tiles
 * (subtrees of 4 levels in tiles of 8 lanes) and of the radix builder's
 * per-work-item run length; dimensions 1 to 16; K from 1 to 1024 (the
 * tree's maximum), below, at and above the point count; both split rules,
 * every sort (bitonic, radix with runs sorted globally, per work-item or
 * both, select, auto under a budget that rules the radix sort out), the
 * tree's invariant checked on the device's output now and then; L2, L1 and
 * Linf; caller slices of the queries (device.batch). Every array the engine
 * sees comes from lbk_alloc_large in exactly its size: under
 * LBKNN_GUARD_PAGES=1 a read or write past one faults.
 *
 *   boundary_kdtree default|slow [--seed S] [--cases N] [--case I]
 *
 * A failing or crashing case prints its shape and the one command that
 * replays it alone. */
#include "boundary.h"
#include "device.h"
#include "kdtree.h"
#include "knn_oracle.h"
#include "lbk_test.h"
#include "tree_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const metric_names[] = {"l2", "l1", "linf"};
static const char *const sort_names[] = {"auto", "bitonic", "radix", "select"};

/* The query's buckets: subtrees of LBK_TREE_BUCKET_LEVELS = 4 levels (15
 * nodes) in tiles of LBK_TREE_TILE_LANES = 8 (kernels/lbk_shared.h). */
#define BUCKET_NODES 15
#define TILE_LANES 8
#define TREE_K_MAX 1024

typedef struct {
    int metric;
    int k;
    uint32_t n, nq;
    int dim;
    lbk_bnd_data data;
    lbk_tree_split split;
    lbk_tree_sort sort;
    bool segment_max_set;
    uint64_t segment_max;
    bool tight_budget; /* the bitonic builder's bytes: AUTO may not take the radix sort */
    bool verify;
    uint32_t slice; /* queries per lbk_tree_query call; 0 = all in one */
} shape;

static int pick(lbk_test_rng *rng, const int *values, size_t n)
{
    return values[lbk_test_rng_below(rng, n)];
}
#define PICK(rng, ...)                                                                           \
    pick(rng, (const int[]){__VA_ARGS__}, sizeof((const int[]){__VA_ARGS__}) / sizeof(int))

static shape draw_shape(uint64_t seed, const char *set, uint32_t index)
{
    lbk_test_rng rng = lbk_bnd_rng(seed, set, index);
    const bool slow = strcmp(set, "slow") == 0;
    shape s = {.metric = (int)lbk_test_rng_below(&rng, 3)};
    s.split = lbk_test_rng_below(&rng, 2) ? LBK_SPLIT_WIDEST : LBK_SPLIT_ROUND_ROBIN;
    s.sort = (lbk_tree_sort)lbk_test_rng_below(&rng, 4);
    if (s.sort == LBK_SORT_SELECT) /* the select builder splits round robin only */
        s.split = LBK_SPLIT_ROUND_ROBIN;
    s.segment_max_set = lbk_test_rng_below(&rng, 2) == 0;
    if (s.segment_max_set)
        s.segment_max = (uint64_t[]){
            0, 1, 2, 7, 8, 16, 64, 100, 256, 4096, UINT64_MAX}[lbk_test_rng_below(&rng, 11)];
    s.tight_budget = s.sort == LBK_SORT_AUTO && lbk_test_rng_below(&rng, 3) == 0;
    s.verify = lbk_test_rng_below(&rng, 4) == 0;
    /* Powers of two: the last level; 15 and 8: the buckets and their
     * tiles; the others: radix runs per work-item. The default set takes
     * its counts from a fixed list of such edges: the builder and the query
     * launch their small kernels with the runtime's choice of work-group
     * (src/engines/kdtree.c launch, tree_query.c), for which PoCL compiles each
     * kernel again (about half a second on a cold cache) for every new
     * global size. */
    if (slow) {
        const uint32_t blocks[] = {1u << lbk_test_rng_below(&rng, 14),
                                   1u << lbk_test_rng_below(&rng, 14),
                                   BUCKET_NODES,
                                   2 * BUCKET_NODES + 1,
                                   TILE_LANES,
                                   64,
                                   256};
        s.n = lbk_bnd_pick_count(&rng, blocks, sizeof blocks / sizeof blocks[0], 20000);
    } else {
        s.n = (uint32_t)PICK(&rng, 1, 2, 7, 8, 15, 16, 17, 31, 255, 256, 257, 1023, 1025, 4095);
    }
    const int edges[] = {1, 2, 3, 4, 8, 16};
    s.dim = lbk_bnd_pick_dim(&rng, edges, sizeof edges / sizeof edges[0], 16);
    if (lbk_test_rng_below(&rng, 6) == 0) {
        const int around = (int)s.n - 1 + (int)lbk_test_rng_below(&rng, 3);
        s.k = around < 1 ? 1 : around > TREE_K_MAX ? TREE_K_MAX : around;
    } else if (lbk_test_rng_below(&rng, 4) == 0) {
        s.k = (int)lbk_bnd_between(&rng, 1, TREE_K_MAX);
    } else {
        s.k = PICK(&rng, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100, 255, 256, 257,
                   1000, 1023, 1024);
    }
    /* A tree query visits about every point when K nears n: keep the
     * work to about 1e7 (oracle) and 2e7 list steps (device). */
    const uint64_t per_query = (uint64_t)s.n * ((uint64_t)s.dim + (uint64_t)s.k / 16 + 1);
    const uint32_t most = (uint32_t)(10000000u / per_query) + 1;
    if (slow) {
        const uint32_t qblocks[] = {8, 32, 64};
        s.nq = lbk_bnd_pick_count(&rng, qblocks, 3, 200);
        s.nq = s.nq < most ? s.nq : most;
        s.slice = lbk_test_rng_below(&rng, 3) == 0 ? lbk_bnd_between(&rng, 1, s.nq) : 0;
    } else { /* a few query counts (work-group shapes, as above) */
        s.nq = (uint32_t)PICK(&rng, 1, 2, 5, 64, 65, 100);
        while (s.nq > most && s.nq > 1)
            s.nq = s.nq == 100 ? 65 : s.nq == 65 ? 64 : s.nq == 64 ? 5 : 1;
        s.slice = lbk_test_rng_below(&rng, 3) == 0 ? (uint32_t)PICK(&rng, 1, 7, 64) : 0;
    }
    s.data = (lbk_bnd_data)lbk_test_rng_below(&rng, LBK_BND_DATA_KINDS);
    return s;
}

static void describe(const shape *s, const char *set, uint32_t index, char *out, size_t size)
{
    char segment[32] = "default";
    if (s->segment_max_set)
        snprintf(segment, sizeof segment, "%llu", (unsigned long long)s->segment_max);
    snprintf(out, size,
             "kdtree %s case %u: metric=%s K=%d n=%u dim=%d nq=%u data=%s split=%s sort=%s "
             "segment_max=%s budget=%s verify=%d caller_slice=%u",
             set, index, metric_names[s->metric], s->k, s->n, s->dim, s->nq,
             lbk_bnd_data_name(s->data), s->split == LBK_SPLIT_WIDEST ? "widest" : "round_robin",
             sort_names[s->sort], segment, s->tight_budget ? "bitonic-only" : "0", s->verify,
             s->slice);
}

/* ---- coverage ---- */

enum {
    COV_FULL_TREE,
    COV_ONE_ON_LEVEL,
    COV_K_ABOVE_N,
    COV_K_EQUALS_N,
    COV_N_ONE,
    COV_LARGE_K,
    COV_BITONIC,
    COV_RADIX,
    COV_SELECT,
    COV_RADIX_GLOBAL,
    COV_WIDEST,
    COV_DIM_ONE,
    COV_SLICES,
    COV_COUNT
};

static lbk_bnd_coverage coverage[COV_COUNT] = {
    [COV_FULL_TREE] = {"n = 2^L - 1 (every level full)", 4, 0},
    [COV_ONE_ON_LEVEL] = {"n = 2^L (one node on the last level)", 4, 0},
    [COV_K_ABOVE_N] = {"K > n (pads in every list)", 10, 0},
    [COV_K_EQUALS_N] = {"K == n", 1, 0},
    [COV_N_ONE] = {"n == 1", 1, 0},
    [COV_LARGE_K] = {"K > 256", 10, 0},
    [COV_BITONIC] = {"bitonic builder", 10, 0},
    [COV_RADIX] = {"radix builder", 10, 0},
    [COV_SELECT] = {"select builder", 10, 0},
    [COV_RADIX_GLOBAL] = {"radix builder, runs beyond segment_max (global sorts)", 3, 0},
    [COV_WIDEST] = {"widest split", 10, 0},
    [COV_DIM_ONE] = {"dimension 1", 2, 0},
    [COV_SLICES] = {"several lbk_tree_query calls", 10, 0},
};

static void count_coverage(const shape *s, lbk_tree_sort used)
{
    const bool pow2 = (s->n & (s->n - 1)) == 0, below_pow2 = ((s->n + 1) & s->n) == 0;
    const uint64_t seg = s->segment_max_set ? s->segment_max : 65536;
    const bool hit[COV_COUNT] = {
        [COV_FULL_TREE] = below_pow2 && s->n > 1,
        [COV_ONE_ON_LEVEL] = pow2 && s->n > 1,
        [COV_K_ABOVE_N] = (uint32_t)s->k > s->n,
        [COV_K_EQUALS_N] = (uint32_t)s->k == s->n,
        [COV_N_ONE] = s->n == 1,
        [COV_LARGE_K] = s->k > 256,
        [COV_BITONIC] = used == LBK_SORT_BITONIC,
        [COV_RADIX] = used == LBK_SORT_RADIX,
        [COV_SELECT] = used == LBK_SORT_SELECT,
        [COV_RADIX_GLOBAL] = used == LBK_SORT_RADIX && s->n > seg,
        [COV_WIDEST] = s->split == LBK_SPLIT_WIDEST,
        [COV_DIM_ONE] = s->dim == 1,
        [COV_SLICES] = s->slice && s->slice < s->nq,
    };
    for (int i = 0; i < COV_COUNT; i++)
        coverage[i].count += hit[i];
}

/* ---- running a case ---- */

static bool query_slice(lbk_kdtree *tree, const shape *s, const float *queries, uint32_t off,
                        uint32_t m, float *got_k, uint32_t *got_i, const char *what)
{
    const size_t k = (size_t)s->k;
    float *q = lbk_bnd_copy(queries + (size_t)off * s->dim, (size_t)m * s->dim);
    lbk_knn_result r = {.queries = m, .k = s->k};
    r.keys = lbk_bnd_alloc((size_t)m * k * sizeof *r.keys);
    r.index = lbk_bnd_alloc((size_t)m * k * sizeof *r.index);
    const lbk_status st = lbk_tree_query(tree, q, m, s->k, (lbk_metric)s->metric, &r, NULL);
    const bool ok = LBK_EXPECT_EQ_INT(st, LBK_OK, "%s: queries [%u, +%u): %s", what, off, m,
                                      lbk_status_name(st));
    if (ok) {
        memcpy(got_k + (size_t)off * k, r.keys, (size_t)m * k * sizeof *got_k);
        memcpy(got_i + (size_t)off * k, r.index, (size_t)m * k * sizeof *got_i);
    }
    lbk_bnd_free(q);
    lbk_bnd_free(r.keys);
    lbk_bnd_free(r.index);
    return ok;
}

static void run_case(lbk_device *dev, const shape *s, uint64_t seed, uint32_t index,
                     const char *what)
{
    lbk_test_rng rng = lbk_bnd_rng(seed, "kdtree.data", index);
    const size_t k = (size_t)s->k, slots = (size_t)s->nq * k;
    float *ref = lbk_bnd_alloc((size_t)s->n * s->dim * sizeof *ref);
    float *queries = lbk_bnd_alloc((size_t)s->nq * s->dim * sizeof *queries);
    float *want_k = malloc(slots * sizeof *want_k), *got_k = malloc(slots * sizeof *got_k);
    uint32_t *want_i = malloc(slots * sizeof *want_i), *got_i = malloc(slots * sizeof *got_i);
    LBK_ASSERT_TRUE(want_k && got_k && want_i && got_i, "out of memory");
    lbk_bnd_fill(ref, s->n, s->dim, s->data, &rng);
    lbk_bnd_fill(queries, s->nq, s->dim, s->data == LBK_BND_DUPLICATES ? LBK_BND_GRID : s->data,
                 &rng);
    lbk_bnd_copy_rows(queries, s->nq, ref, s->n, s->dim, &rng);
    LBK_ASSERT_EQ_INT(
        oracle_knn(ref, s->n, queries, s->nq, s->dim, s->metric, s->k, want_k, want_i), 0,
        "oracle out of memory");

    const lbk_dataset data = {.rows = s->n, .dim = s->dim, .points = ref};
    const lbk_kdtree_params params = {
        .split = s->split,
        .sort = s->sort,
        .verify = s->verify,
        .memory_budget = s->tight_budget
                             ? lbk_kdtree_build_bytes(s->n, s->dim, s->split, LBK_SORT_BITONIC)
                             : 0,
        .segment_max_set = s->segment_max_set,
        .segment_max = s->segment_max};
    lbk_kdtree *tree = NULL;
    const lbk_status st = lbk_kdtree_build(dev, &data, &params, &tree);
    if (LBK_EXPECT_EQ_INT(st, LBK_OK, "%s: lbk_kdtree_build: %s", what, lbk_status_name(st))) {
        lbk_kdtree_stats stats;
        lbk_kdtree_get_stats(tree, &stats);
        if (s->tight_budget)
            LBK_EXPECT_TRUE(stats.sort_used != LBK_SORT_RADIX,
                            "%s: the radix sort over a budget that only fits the bitonic one",
                            what);
        const uint32_t step = s->slice ? s->slice : s->nq;
        bool ok = true;
        for (uint32_t off = 0; off < s->nq && ok; off += step)
            ok = query_slice(tree, s, queries, off, s->nq - off < step ? s->nq - off : step,
                             got_k, got_i, what);
        if (ok) {
            lbk_bnd_compare(got_k, got_i, want_k, want_i, s->nq, s->k, what);
            count_coverage(s, stats.sort_used);
        }
    }
    lbk_kdtree_destroy(tree);
    lbk_bnd_free(ref);
    lbk_bnd_free(queries);
    free(want_k);
    free(got_k);
    free(want_i);
    free(got_i);
}

/* run_case's arguments, for lbk_bnd_run_case. */
typedef struct {
    lbk_device *dev;
    const shape *s;
    uint64_t seed;
    uint32_t index;
    const char *what;
} case_run;

static void run_one(void *ctx)
{
    const case_run *c = ctx;
    run_case(c->dev, c->s, c->seed, c->index, c->what);
}

static void run_set(const char *set, uint64_t seed, uint32_t count)
{
    lbk_test_require_opencl();
    lbk_bnd_options o;
    lbk_bnd_parse(&o, seed, count);
    lbk_bnd_catch_crashes();
    lbk_device *dev = NULL;
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
    uint32_t failed = 0;
    for (uint32_t i = o.first; i < o.first + o.count; i++) {
        const shape s = draw_shape(o.seed, set, i);
        char what[512];
        describe(&s, set, i, what, sizeof what);
        case_run c = {dev, &s, o.seed, i, what};
        failed += lbk_bnd_run_case(set, o.seed, i, what, run_one, &c);
    }
    lbk_device_close(dev);
    lbk_bnd_set_done(failed, &o, coverage, COV_COUNT);
}

static void set_default(void) { run_set("default", 20240612u, 80); }
static void set_slow(void) { run_set("slow", 978u, 2500); }

static const lbk_test_case sets[] = {
    {"default", set_default},
    {"slow", set_slow},
};

LBK_TEST_MAIN(LBK_TEST_CASES(sets))
