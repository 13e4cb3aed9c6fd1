/* Brute engine vs the independent host oracle: keys and indices must be
 * byte-identical. One CTest test per case name (argv[1]). Integer-grid data
 * makes many exact ties, so the (key, index) tie rule is exercised. */
#include "brute.h"
#include "cuknn_baseline.h"
#include "device.h"
#include "knn_oracle.h"
#include "lbk_test.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OFFSET: uniform plus 1000, so |q|^2 + |r|^2 - 2 q.r cancels catastrophically
 * and only a rigorous prefilter bound stays exact. HUGE: values +-3e38 and 1,
 * so inner products overflow to both infinities (NaN sums: key +inf). SMOOTH:
 * random walks (steps of at most 0.05), whose neighbouring dimensions are
 * alike as an image's pixels are: the cascade's group sums prune well.
 * ROUGH: SMOOTH rows, every fourth row uniform instead (cascade: some
 * queries prune well and some do not). */
typedef enum {
    DATA_GRID,
    DATA_UNIFORM,
    DATA_DUPLICATES,
    DATA_MIXED,
    DATA_OFFSET,
    DATA_HUGE,
    DATA_SMOOTH,
    DATA_ROUGH
} data_kind;

/* The oracle's cosine metric (knn_oracle.h). */
#define COS 3

/* The bubble or the sort-merge forced at any K, the engine's own choice (the
 * bubble below K = 64, the sort-merge from there on), or the benchmarks'
 * full-sort baseline (bench/cuknn_baseline.h) in its place. */
typedef enum { SELECT_BUBBLE, SELECT_FULL_SORT, SELECT_SORT_MERGE, SELECT_AUTO } select_kind;

typedef struct {
    const char *name;
    int metric;
    int k;
    uint32_t n;
    uint32_t nq;
    int dim;
    data_kind data;
    select_kind select;
    int groups;
    uint64_t budget;
    int expect_chunks; /* 1: assert the budget forced reference chunks; 2: query
                          batches (and no chunks: the cascade needs none); 3: the
                          whole shard in one chunk */
    lbk_brute_distance distance;
    lbk_brute_prefilter prefilter;
    int expect_fallback; /* prefilter ON: 1 = some queries must take the exact path,
                            2 = some but not all, -1 = at most half may, -2 = the
                            prefilter must decline (values too large for its bound);
                            CASCADE: the same for the cascade's fallback to the
                            prefilter path, and 3 = only the probe batch ran it (all
                            capped, then off); any mode: -3 = the cascade must not
                            run */
    int work_group_limit;
    const lbk_tuning *tuning; /* the blocked kernel's parameters; NULL = the device's */
} test_case;

static void fill(float *x, size_t rows, int dim, data_kind kind, uint64_t seed)
{
    lbk_test_rng rng = LBK_TEST_RNG(seed);
    for (size_t i = 0; i < rows; i++) {
        const bool walk = kind == DATA_SMOOTH || (kind == DATA_ROUGH && i % 4 != 0);
        for (int j = 0; j < dim; j++) {
            float v;
            if (walk)
                v = (j == 0 ? 0.0f : x[i * dim + j - 1]) +
                    (float)lbk_test_rng_below(&rng, 100001u) / 1000000.0f - 0.05f;
            else if (kind == DATA_UNIFORM || kind == DATA_MIXED || kind == DATA_ROUGH)
                v = (float)lbk_test_rng_below(&rng, 2000001u) / 1000000.0f - 1.0f;
            else if (kind == DATA_OFFSET)
                v = (float)lbk_test_rng_below(&rng, 2000001u) / 1000000.0f + 1000.0f;
            else if (kind == DATA_HUGE)
                v = (float[]){-3e38f, 3e38f, 1.0f}[lbk_test_rng_below(&rng, 3u)];
            else
                v = (float)(int)lbk_test_rng_below(&rng, 4u) - 1.0f;
            x[i * dim + j] = v;
        }
        /* Duplicates: each row repeats one of the first 7 rows. */
        if (kind == DATA_DUPLICATES && i >= 7)
            memcpy(x + i * dim, x + lbk_test_rng_below(&rng, 7u) * dim, (size_t)dim * sizeof *x);
        /* Mixed: every second row repeats one of the first 7, so queries near
         * those points tie far beyond K and the others do not. */
        if (kind == DATA_MIXED && i >= 7 && i % 2 == 0)
            memcpy(x + i * dim, x + lbk_test_rng_below(&rng, 7u) * dim, (size_t)dim * sizeof *x);
    }
}

/* Runs the engine over the queries in max-batch slices, as the run driver
 * does, and counts the queries the prefilter took and those of them that
 * needed the exact path. */
static void query_all(const test_case *c, lbk_brute *engine, const float *queries,
                      lbk_knn_result *got, lbk_brute_timing *sum)
{
    const uint64_t batch = lbk_brute_max_batch(engine);
    LBK_ASSERT_U64(batch, >, 0);
    for (uint64_t off = 0; off < c->nq; off += batch) {
        const uint64_t n = c->nq - off < batch ? c->nq - off : batch;
        lbk_knn_result slice = {.queries = n,
                                .k = c->k,
                                .keys = got->keys + off * c->k,
                                .index = got->index + off * c->k};
        LBK_ASSERT_EQ_INT(lbk_brute_query(engine, queries + off * c->dim, n, &slice), LBK_OK,
                          "queries [%llu, +%llu)", (unsigned long long)off,
                          (unsigned long long)n);
        lbk_brute_timing t;
        lbk_brute_last_timing(engine, &t);
        lbk_brute_timing_add(sum, &t);
    }
}

/* The engine's device bytes (the report's peak_device_bytes): at least the
 * shard's rows of one chunk, and, where the case gives a budget, within the
 * budget the plan was made for (also where the cascade is dropped after its
 * upload); none for an empty shard. */
static void check_device_bytes(const test_case *c, const lbk_brute *engine)
{
    const uint64_t peak = lbk_brute_peak_device_bytes(engine);
    const uint64_t chunk = lbk_brute_chunk_rows(engine) * (uint64_t)c->dim * 4;
    if (c->n == 0) {
        LBK_EXPECT_EQ_U64(peak, 0, "%s: an empty shard holds no buffers", c->name);
        return;
    }
    LBK_EXPECT_U64(peak, >=, chunk, "%s: fewer bytes than a chunk of the shard", c->name);
    if (c->budget)
        LBK_EXPECT_U64(peak, <=, c->budget, "%s: beyond the memory budget", c->name);
}

/* The cascade (when forced) took the queries, and as many of them needed the
 * prefilter path as the case's data implies; a batch where most did turns
 * the cascade off for the later ones. Other cases only print what it did. */
static void check_cascade(const test_case *c, const lbk_brute_timing *t)
{
    const uint64_t settled = t->cascade_queries - t->cascade_fallback_queries;
    printf("%s: %llu queries through the cascade, %llu of them on the prefilter path; "
           "%.1f rows checked per settled query\n",
           c->name, (unsigned long long)t->cascade_queries,
           (unsigned long long)t->cascade_fallback_queries,
           settled ? (double)t->cascade_checked_rows / (double)settled : 0.0);
    if (c->expect_fallback == -3) {
        LBK_EXPECT_EQ_U64(t->cascade_queries, 0, "the cascade must not run");
        return;
    }
    if (c->prefilter != LBK_PREFILTER_CASCADE)
        return;
    LBK_EXPECT_U64(t->cascade_queries, >, 0, "the cascade must run");
    if (c->expect_fallback == 3) {
        LBK_EXPECT_EQ_U64(t->cascade_queries, c->nq < 64 ? c->nq : 64, "the probe batch");
        LBK_EXPECT_EQ_U64(t->cascade_fallback_queries, t->cascade_queries);
    }
    if (c->expect_fallback > 0)
        LBK_EXPECT_U64(t->cascade_fallback_queries, >, 0, "some queries must hit the cap");
    if (c->expect_fallback == 2)
        LBK_EXPECT_U64(t->cascade_fallback_queries, <, t->cascade_queries,
                       "not every query may hit the cap");
    if (c->expect_fallback < 0) {
        LBK_EXPECT_EQ_U64(t->cascade_queries, c->nq);
        LBK_EXPECT_U64(t->cascade_fallback_queries, <=, c->nq / 2,
                       "at most half may hit the cap");
    }
}

/* The prefilter (when forced on) saw every query, and as many of them took
 * the exact path as the case's data implies. */
static void check_prefilter(const test_case *c, uint64_t prefiltered, uint64_t fallback)
{
    if (c->prefilter == LBK_PREFILTER_CASCADE)
        return;
    printf("%s: %llu queries prefiltered, %llu of them on the exact path\n", c->name,
           (unsigned long long)prefiltered, (unsigned long long)fallback);
    if (c->prefilter != LBK_PREFILTER_ON || c->n == 0)
        return;
    if (c->expect_fallback == -2) {
        LBK_EXPECT_EQ_U64(prefiltered, 0, "the bound arithmetic would overflow");
        return;
    }
    LBK_EXPECT_EQ_U64(prefiltered, c->nq);
    if (c->expect_fallback > 0)
        LBK_EXPECT_U64(fallback, >, 0, "some queries must take the exact path");
    if (c->expect_fallback == 2)
        LBK_EXPECT_U64(fallback, <, c->nq, "not every query may take the exact path");
    if (c->expect_fallback < 0)
        LBK_EXPECT_U64(fallback, <=, c->nq / 2, "at most half may take the exact path");
}

/* Byte-identical keys and indices; the first few differing slots shown. */
static void compare(const test_case *c, const lbk_knn_result *got, const float *want_k,
                    const uint32_t *want_i)
{
    const size_t slots = (size_t)c->nq * c->k;
    size_t bad = 0;
    for (size_t s = 0; s < slots; s++) {
        if (memcmp(&got->keys[s], &want_k[s], sizeof(float)) == 0 && got->index[s] == want_i[s])
            continue;
        if (++bad <= 10) {
            LBK_EXPECT_EQ_FLOAT(got->keys[s], want_k[s], "query %zu slot %zu", s / c->k,
                                s % c->k);
            LBK_EXPECT_EQ_U64(got->index[s], want_i[s], "query %zu slot %zu", s / c->k, s % c->k);
        }
    }
    LBK_EXPECT_EQ_U64(bad, 0, "slots that differ from the oracle, of %zu", slots);
}

static void run_case(const void *row)
{
    const test_case *c = row;
    lbk_test_require_opencl();
    lbk_device *dev = NULL;
    lbk_brute *engine = NULL;
    float *ref = malloc(((size_t)c->n * c->dim + 1) * sizeof *ref);
    float *queries = malloc(((size_t)c->nq * c->dim + 1) * sizeof *queries);
    float *want_k = malloc((size_t)c->nq * c->k * sizeof *want_k);
    uint32_t *want_i = malloc((size_t)c->nq * c->k * sizeof *want_i);
    lbk_knn_result got = {.queries = c->nq, .k = c->k};
    got.keys = malloc(((size_t)c->nq * c->k + 1) * sizeof *got.keys);
    got.index = malloc(((size_t)c->nq * c->k + 1) * sizeof *got.index);
    LBK_ASSERT_TRUE(ref && queries && want_k && want_i && got.keys && got.index, "out of memory");
    fill(ref, c->n, c->dim, c->data, 12345u + c->n);
    fill(queries, c->nq, c->dim,
         c->data == DATA_DUPLICATES ? DATA_GRID
         : c->data == DATA_MIXED    ? DATA_UNIFORM
                                    : c->data,
         777u);
    /* Some queries coincide with reference points: zero keys tie too. */
    for (uint32_t q = 0; q < c->nq && q < c->n; q += 3)
        memcpy(queries + (size_t)q * c->dim, ref + (size_t)(q * 7 % c->n) * c->dim,
               (size_t)c->dim * sizeof *queries);
    /* Cosine runs on rows the host normalised (the run does it right after
     * reading); zero rows stay zero: distance 1 to everything. */
    if (c->metric == COS) {
        if (c->n > 5)
            memset(ref + 5 * (size_t)c->dim, 0, (size_t)c->dim * sizeof *ref);
        if (c->nq > 1)
            memset(queries + (size_t)c->dim, 0, (size_t)c->dim * sizeof *queries);
        oracle_normalize(ref, c->n, c->dim);
        oracle_normalize(queries, c->nq, c->dim);
    }
    LBK_ASSERT_EQ_INT(
        oracle_knn(ref, c->n, queries, c->nq, c->dim, c->metric, c->k, want_k, want_i), 0,
        "oracle out of memory");

    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    if (!LBK_EXPECT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK))
        goto cleanup;
    const lbk_dataset data = {.rows = c->n, .dim = c->dim, .points = ref};
    const lbk_brute_params params = {.k = c->k,
                                     .metric = (lbk_metric)c->metric,
                                     .groups = c->groups,
                                     .memory_budget = c->budget,
                                     .distance = c->distance,
                                     .prefilter = c->prefilter,
                                     .work_group_limit = c->work_group_limit,
                                     .tuning = c->tuning,
                                     .selection =
                                         c->select == SELECT_SORT_MERGE ? LBK_SELECTION_SORT_MERGE
                                         : c->select == SELECT_BUBBLE   ? LBK_SELECTION_BUBBLE
                                                                        : LBK_SELECTION_AUTO};
    if (!LBK_EXPECT_EQ_INT(c->select == SELECT_FULL_SORT
                               ? lbk_cuknn_create(dev, &data, &params, &engine)
                               : lbk_brute_create(dev, &data, &params, &engine),
                           LBK_OK))
        goto cleanup;
    if (c->expect_chunks == 1) {
        /* The budget must force reference chunks and query batches. */
        const unsigned long long budget = c->budget;
        const int chunked =
            LBK_EXPECT_U64(lbk_brute_chunk_rows(engine), <, c->n, "budget %llu", budget);
        const int batched =
            LBK_EXPECT_U64(lbk_brute_max_batch(engine), <, c->nq, "budget %llu", budget);
        if (!chunked || !batched)
            goto cleanup;
    }
    if (c->expect_chunks == 2)
        LBK_EXPECT_U64(lbk_brute_max_batch(engine), <, c->nq, "query batches wanted");
    if (c->expect_chunks == 3)
        LBK_EXPECT_EQ_U64(lbk_brute_chunk_rows(engine), c->n, "the shard in one chunk");
    check_device_bytes(c, engine);
    lbk_brute_timing sum = {0};
    query_all(c, engine, queries, &got, &sum);
    check_prefilter(c, sum.prefiltered_queries, sum.fallback_queries);
    if (c->n > 0)
        check_cascade(c, &sum);
    compare(c, &got, want_k, want_i);
cleanup:
    free(got.keys);
    free(got.index);
    lbk_brute_destroy(engine);
    lbk_device_close(dev);
    free(ref);
    free(queries);
    free(want_k);
    free(want_i);
}

/* K above the maximum: a clear configuration error, not a crash. */
static void run_k_too_large(void)
{
    lbk_test_require_opencl();
    lbk_device *dev = NULL;
    lbk_brute *engine = NULL;
    float point[3] = {0, 1, 2};
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
    const lbk_dataset data = {.rows = 1, .dim = 3, .points = point};
    const lbk_brute_params params = {.k = LBK_BRUTE_K_MAX + 1};
    const lbk_status st = lbk_brute_create(dev, &data, &params, &engine);
    LBK_EXPECT_EQ_INT(st, LBK_ERR_CONFIG, "got %s", lbk_status_name(st));
    LBK_EXPECT_TRUE(engine == NULL);
    lbk_brute_destroy(engine);
    lbk_device_close(dev);
}

#define L2 0
#define L1 1
#define LINF 2
#define IP 4
#define BUB SELECT_BUBBLE
#define SORT SELECT_FULL_SORT
#define MERGE SELECT_SORT_MERGE
#define AUTO SELECT_AUTO
/* PRE: the prefilter needs the blocked kernel, the default only on CPUs. */
#define DEF LBK_DISTANCE_AUTO, LBK_PREFILTER_AUTO, 0, 0, NULL
#define TILED LBK_DISTANCE_TILED, LBK_PREFILTER_AUTO, 0, 0, NULL
#define OFF LBK_DISTANCE_AUTO, LBK_PREFILTER_OFF, 0, 0, NULL
#define PRE(fallback) LBK_DISTANCE_BLOCKED, LBK_PREFILTER_ON, fallback, 0, NULL
#define LIMIT(wg) LBK_DISTANCE_AUTO, LBK_PREFILTER_AUTO, 0, wg, NULL
#define PRE_LIMIT(fallback, wg) LBK_DISTANCE_BLOCKED, LBK_PREFILTER_ON, fallback, wg, NULL
/* Forced kernel parameters (tuning.h): every lane count, register blocks
 * from 1 x 1 to 16 x 1 and 3 x 5, query tiles of 1 to 32 blocks, slices
 * shorter than, not dividing, and longer than the dimension. */
#define TUNED(t) LBK_DISTANCE_BLOCKED, LBK_PREFILTER_OFF, 0, 0, &t
#define PRE_TUNED(t) LBK_DISTANCE_BLOCKED, LBK_PREFILTER_ON, -1, 0, &t
/* The cascade forced (it needs L2 and K < 64; the dimension and the device
 * do not matter then). */
#define CAS(fallback) LBK_DISTANCE_BLOCKED, LBK_PREFILTER_CASCADE, fallback, 0, NULL
#define CAS_TUNED(fallback, t) LBK_DISTANCE_BLOCKED, LBK_PREFILTER_CASCADE, fallback, 0, &t
static const lbk_tuning tune_l4 = {.lanes = 4,
                                   .block_queries = 1,
                                   .block_vectors = 1,
                                   .tile_blocks = 1,
                                   .slice = 8,
                                   .segment_log2 = 16};
static const lbk_tuning tune_l8 = {.lanes = 8,
                                   .block_queries = 6,
                                   .block_vectors = 2,
                                   .tile_blocks = 3,
                                   .slice = 13,
                                   .segment_log2 = 16};
static const lbk_tuning tune_l16 = {.lanes = 16,
                                    .block_queries = 3,
                                    .block_vectors = 5,
                                    .tile_blocks = 32,
                                    .slice = 4096,
                                    .segment_log2 = 16};
static const lbk_tuning tune_l16b = {.lanes = 16,
                                     .block_queries = 16,
                                     .block_vectors = 1,
                                     .tile_blocks = 2,
                                     .slice = 24,
                                     .segment_log2 = 16};

static const test_case cases[] = {
    /* name, metric, k, n, nq, dim, data, select, groups, budget, expect_chunks,
     * distance kernel, prefilter, expect_fallback, work_group_limit, tuning */
    {"l2_k1", L2, 1, 1000, 64, 5, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"l2_k2", L2, 2, 1000, 64, 5, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"l2_k16", L2, 16, 4099, 64, 37, DATA_UNIFORM, BUB, 0, 0, 0, DEF},
    {"l2_k16_grid", L2, 16, 4099, 64, 6, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"l2_k100", L2, 100, 1000, 40, 5, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"l2_k256", L2, 256, 4099, 24, 9, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"l1_k1", L1, 1, 1000, 64, 5, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"l1_k16", L1, 16, 4099, 64, 33, DATA_UNIFORM, BUB, 0, 0, 0, DEF},
    {"l1_k100", L1, 100, 1000, 40, 5, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"l1_k256", L1, 256, 1000, 24, 7, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"linf_k2", LINF, 2, 1000, 64, 5, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"linf_k16", LINF, 16, 4099, 64, 40, DATA_UNIFORM, BUB, 0, 0, 0, DEF},
    {"linf_k256", LINF, 256, 1000, 24, 3, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"duplicates", L2, 16, 1000, 64, 4, DATA_DUPLICATES, BUB, 0, 0, 0, DEF},
    {"k_equals_n", L2, 100, 100, 32, 5, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"k_above_n", L2, 16, 10, 32, 5, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"n_one", L1, 5, 1, 16, 3, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"empty_shard", L2, 4, 0, 16, 3, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"groups_1", L2, 16, 4099, 32, 6, DATA_GRID, BUB, 1, 0, 0, DEF},
    {"groups_3", L2, 16, 4099, 32, 6, DATA_GRID, BUB, 3, 0, 0, DEF},
    {"groups_100", L2, 16, 4099, 32, 6, DATA_GRID, BUB, 100, 0, 0, DEF},
    {"groups_5000", L2, 2, 4099, 32, 6, DATA_GRID, BUB, 5000, 0, 0, DEF},
    {"multibatch_bubble", L2, 16, 3001, 301, 8, DATA_GRID, BUB, 0, 120000, 1, DEF},
    {"multibatch_sort", L1, 16, 3001, 301, 8, DATA_GRID, SORT, 0, 120000, 1, DEF},
    {"multibatch_streamed", L2, 5, 3001, 301, 8, DATA_GRID, BUB, 0, 40000, 1, DEF},
    {"sort_l2_k1", L2, 1, 1000, 64, 5, DATA_GRID, SORT, 0, 0, 0, DEF},
    {"sort_l2_k16", L2, 16, 4099, 64, 37, DATA_UNIFORM, SORT, 0, 0, 0, DEF},
    {"sort_linf_k100", LINF, 100, 4099, 40, 5, DATA_GRID, SORT, 0, 0, 0, DEF},
    {"sort_l1_k256", L1, 256, 4099, 24, 7, DATA_GRID, SORT, 0, 0, 0, DEF},
    {"sort_k_above_n", L2, 16, 10, 32, 5, DATA_GRID, SORT, 0, 0, 0, DEF},
    /* The L2 prefilter (lower bounds from dot products, exact re-rank). Grid
     * data ties at the K-th neighbour, so its bound cannot settle every query
     * and the exact fallback runs too. */
    {"prefilter_uniform_k16", L2, 16, 4099, 64, 37, DATA_UNIFORM, BUB, 0, 0, 0, PRE(-1)},
    {"prefilter_uniform_k1", L2, 1, 4099, 64, 5, DATA_UNIFORM, BUB, 0, 0, 0, PRE(-1)},
    {"prefilter_uniform_k64", L2, 64, 4099, 64, 20, DATA_UNIFORM, BUB, 0, 0, 0, PRE(-1)},
    {"prefilter_grid_k5", L2, 5, 1000, 64, 6, DATA_GRID, BUB, 0, 0, 0, PRE(0)},
    {"prefilter_mixed", L2, 16, 1000, 96, 2, DATA_MIXED, BUB, 0, 0, 0, PRE(2)},
    {"prefilter_duplicates", L2, 16, 1000, 64, 4, DATA_DUPLICATES, BUB, 0, 0, 0, PRE(1)},
    {"prefilter_offset", L2, 8, 4099, 64, 64, DATA_OFFSET, BUB, 0, 0, 0, PRE(0)},
    {"exact_l2_k16", L2, 16, 4099, 64, 37, DATA_UNIFORM, BUB, 0, 0, 0, OFF},
    {"prefilter_k_above_n", L2, 16, 30, 32, 17, DATA_UNIFORM, BUB, 0, 0, 0, PRE(0)},
    {"prefilter_multibatch", L2, 8, 3001, 301, 24, DATA_UNIFORM, BUB, 0, 1200000, 1, PRE(-1)},
    /* The local-memory tiled distance kernel (the GPU default). */
    {"tiled_l2_k16", L2, 16, 4099, 64, 37, DATA_UNIFORM, BUB, 0, 0, 0, TILED},
    {"tiled_l1_k100", L1, 100, 1000, 40, 5, DATA_GRID, BUB, 0, 0, 0, TILED},
    {"tiled_linf_k2", LINF, 2, 1000, 64, 40, DATA_UNIFORM, BUB, 0, 0, 0, TILED},
    {"tiled_multibatch_streamed", L2, 5, 3001, 301, 8, DATA_GRID, BUB, 0, 40000, 1, TILED},
    {"tiled_sort_l2_k16", L2, 16, 4099, 33, 37, DATA_UNIFORM, SORT, 0, 0, 0, TILED},
    /* Work-groups smaller than K: several bubbles per work-item, and
     * several compare-exchange pairs per work-item in the sort. */
    {"bubbles_per_item_k100", L2, 100, 4099, 40, 5, DATA_GRID, BUB, 0, 0, 0, LIMIT(16)},
    {"bubbles_per_item_k16", L1, 16, 4099, 40, 5, DATA_GRID, BUB, 3, 0, 0, LIMIT(5)},
    {"bubbles_per_item_prefilter", L2, 20, 4099, 40, 24, DATA_UNIFORM, BUB, 0, 0, 0,
     PRE_LIMIT(-1, 7)},
    {"sort_small_groups_k100", LINF, 100, 4099, 40, 5, DATA_GRID, SORT, 0, 0, 0, LIMIT(32)},
    /* Cosine and inner product: keys -(dot product), rows normalised for
     * cosine (with a zero row each side), every kernel and selection. The
     * rows above force the bubble (their K predates the sort-merge); these
     * take the engine's choice. */
    {"cos_k1", COS, 1, 1000, 64, 5, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"cos_k16", COS, 16, 4099, 64, 37, DATA_UNIFORM, AUTO, 0, 0, 0, OFF},
    {"cos_k16_grid", COS, 16, 4099, 64, 6, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"cos_k100", COS, 100, 1000, 40, 5, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"cos_k300", COS, 300, 4099, 24, 9, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"ip_k1", IP, 1, 1000, 64, 5, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"ip_k16", IP, 16, 4099, 64, 37, DATA_UNIFORM, AUTO, 0, 0, 0, OFF},
    {"ip_k16_grid", IP, 16, 4099, 64, 6, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"ip_k100", IP, 100, 1000, 40, 5, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"ip_k300", IP, 300, 4099, 24, 9, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"ip_duplicates", IP, 16, 1000, 64, 4, DATA_DUPLICATES, AUTO, 0, 0, 0, DEF},
    {"ip_overflow", IP, 8, 1000, 32, 7, DATA_HUGE, AUTO, 0, 0, 0, DEF},
    {"ip_multibatch_streamed", IP, 5, 3001, 301, 8, DATA_GRID, AUTO, 0, 40000, 1, DEF},
    {"sort_ip_k16", IP, 16, 4099, 64, 37, DATA_UNIFORM, SORT, 0, 0, 0, DEF},
    {"tiled_cos_k16", COS, 16, 4099, 64, 37, DATA_UNIFORM, AUTO, 0, 0, 0, TILED},
    {"tiled_ip_k100", IP, 100, 1000, 40, 5, DATA_GRID, AUTO, 0, 0, 0, TILED},
    {"tiled_ip_k300", IP, 300, 1000, 24, 40, DATA_UNIFORM, AUTO, 0, 0, 0, TILED},
    /* The prefilter for cosine and ip: bounds |q||r| (2 gamma_n + 16u). */
    {"prefilter_cos_k16", COS, 16, 4099, 64, 37, DATA_UNIFORM, AUTO, 0, 0, 0, PRE(-1)},
    {"prefilter_cos_k64", COS, 64, 4099, 64, 20, DATA_UNIFORM, AUTO, 0, 0, 0, PRE(-1)},
    {"prefilter_cos_grid", COS, 5, 1000, 64, 6, DATA_GRID, AUTO, 0, 0, 0, PRE(0)},
    {"prefilter_ip_k16", IP, 16, 4099, 64, 37, DATA_UNIFORM, AUTO, 0, 0, 0, PRE(-1)},
    {"prefilter_ip_grid", IP, 5, 1000, 64, 6, DATA_GRID, AUTO, 0, 0, 0, PRE(0)},
    {"prefilter_ip_offset", IP, 8, 4099, 64, 64, DATA_OFFSET, AUTO, 0, 0, 0, PRE(0)},
    {"prefilter_ip_duplicates", IP, 16, 1000, 64, 4, DATA_DUPLICATES, AUTO, 0, 0, 0, PRE(1)},
    {"prefilter_ip_multibatch", IP, 8, 3001, 301, 24, DATA_UNIFORM, AUTO, 0, 1200000, 1, PRE(-1)},
    {"prefilter_ip_huge", IP, 8, 500, 16, 20, DATA_HUGE, AUTO, 0, 0, 0, PRE(-2)},
    /* Large K: the sort-merge selection (brute_sort.cl) from K = 64 on. */
    {"sortmerge_l2_k64", L2, 64, 4099, 24, 9, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"sortmerge_l2_k128", L2, 128, 4099, 24, 9, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"sortmerge_l1_k1000", L1, 1000, 3000, 8, 6, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"sortmerge_groups_5", L2, 200, 4099, 16, 6, DATA_UNIFORM, AUTO, 5, 0, 0, DEF},
    {"sortmerge_small_groups", LINF, 300, 4099, 16, 5, DATA_GRID, AUTO, 0, 0, 0, LIMIT(16)},
    {"sortmerge_multibatch", IP, 150, 3001, 301, 8, DATA_GRID, AUTO, 1, 100000, 1, DEF},
    {"sortmerge_k_above_n", COS, 500, 300, 16, 5, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"sortmerge_k4096", L2, 4096, 6000, 8, 8, DATA_GRID, AUTO, 0, 0, 0, DEF},
    {"sortmerge_ip_k4096", IP, 4096, 9000, 6, 12, DATA_UNIFORM, AUTO, 0, 0, 0, DEF},
    {"sortmerge_forced_k1", L2, 1, 1000, 64, 5, DATA_GRID, MERGE, 0, 0, 0, DEF},
    {"sortmerge_forced_k16", L1, 16, 4099, 64, 6, DATA_GRID, MERGE, 3, 0, 0, DEF},
    {"sortmerge_forced_prefilter", COS, 16, 4099, 64, 37, DATA_UNIFORM, MERGE, 0, 0, 0, PRE(-1)},
    /* Forced kernel parameters: results byte-identical whatever they are. */
    {"tuned_l4_exact_l2", L2, 16, 4099, 70, 37, DATA_UNIFORM, BUB, 0, 0, 0, TUNED(tune_l4)},
    {"tuned_l4_prefilter", L2, 16, 4099, 70, 37, DATA_UNIFORM, BUB, 0, 0, 0, PRE_TUNED(tune_l4)},
    {"tuned_l8_exact_l1", L1, 16, 4099, 70, 33, DATA_UNIFORM, BUB, 0, 0, 0, TUNED(tune_l8)},
    {"tuned_l8_prefilter", L2, 16, 4099, 70, 37, DATA_UNIFORM, BUB, 0, 0, 0, PRE_TUNED(tune_l8)},
    {"tuned_l8_grid_linf", LINF, 5, 1000, 64, 6, DATA_GRID, BUB, 0, 0, 0, TUNED(tune_l8)},
    {"tuned_l16_prefilter_cos", COS, 16, 4099, 70, 37, DATA_UNIFORM, AUTO, 0, 0, 0,
     PRE_TUNED(tune_l16)},
    {"tuned_l16_exact_ip", IP, 16, 4099, 70, 37, DATA_UNIFORM, AUTO, 0, 0, 0, TUNED(tune_l16)},
    {"tuned_l16b_prefilter", L2, 8, 3001, 301, 24, DATA_UNIFORM, BUB, 0, 1200000, 1,
     PRE_TUNED(tune_l16b)},
    {"tuned_l16b_streamed", L2, 5, 3001, 301, 8, DATA_GRID, BUB, 0, 40000, 1, TUNED(tune_l16b)},
    {"tuned_l8_streamed", L1, 5, 3001, 301, 8, DATA_GRID, BUB, 0, 40000, 1, TUNED(tune_l8)},
    {"tuned_l4_small_batch", L2, 3, 50, 5, 17, DATA_UNIFORM, BUB, 0, 0, 0, PRE_TUNED(tune_l4)},
    {"cascade_smooth_k5", L2, 5, 4099, 64, 96, DATA_SMOOTH, BUB, 0, 0, 0, CAS(-1)},
    /* K above the shard's rows, which are not a multiple of 16: the coarse
     * threshold stays infinite, and the padding lanes of the last block of
     * 16 must not be taken for rows (they were, past the caller's array). */
    {"cascade_k_above_rows", L2, 8, 5, 7, 16, DATA_SMOOTH, BUB, 0, 0, 0, CAS(0)},
    {"cascade_k_above_rows_tail", L2, 25, 20, 9, 64, DATA_SMOOTH, BUB, 0, 0, 0, CAS(0)},
    {"cascade_smooth_k16_tail", L2, 16, 4099, 64, 98, DATA_SMOOTH, BUB, 0, 0, 0, CAS(-1)},
    {"cascade_smooth_k1", L2, 1, 2000, 64, 64, DATA_SMOOTH, BUB, 0, 0, 0, CAS(-1)},
    {"cascade_uniform_k16", L2, 16, 4099, 64, 64, DATA_UNIFORM, BUB, 0, 0, 0, CAS(1)},
    {"cascade_rough_k8", L2, 8, 4099, 64, 80, DATA_ROUGH, BUB, 0, 0, 0, CAS(2)},
    {"cascade_grid_k5", L2, 5, 1000, 64, 64, DATA_GRID, BUB, 0, 0, 0, CAS(0)},
    {"cascade_duplicates", L2, 16, 1000, 64, 64, DATA_DUPLICATES, BUB, 0, 0, 0, CAS(0)},
    {"cascade_offset", L2, 8, 4099, 64, 64, DATA_OFFSET, BUB, 0, 0, 0, CAS(0)},
    {"cascade_mixed", L2, 16, 1000, 96, 64, DATA_MIXED, BUB, 0, 0, 0, CAS(0)},
    {"cascade_k_above_n", L2, 16, 30, 32, 17, DATA_UNIFORM, BUB, 0, 0, 0, CAS(0)},
    {"cascade_multibatch", L2, 8, 3001, 601, 64, DATA_SMOOTH, BUB, 0, 8400000, 2, CAS(-1)},
    {"cascade_tuned_l4", L2, 3, 500, 37, 33, DATA_SMOOTH, BUB, 0, 0, 0, CAS_TUNED(-1, tune_l4)},
    {"cascade_tuned_l8", L2, 7, 1000, 40, 72, DATA_SMOOTH, BUB, 0, 0, 0, CAS_TUNED(-1, tune_l8)},
    {"cascade_tuned_l16", L2, 12, 2000, 50, 128, DATA_SMOOTH, BUB, 0, 0, 0,
     CAS_TUNED(-1, tune_l16b)},
    {"cascade_auto_smooth", L2, 5, 4099, 64, 96, DATA_SMOOTH, AUTO, 0, 0, 0, DEF},
    /* Uniform data: the probe batch is all capped and turns the cascade off
     * for the later batches; left to AUTO, the set-up sample declines it. */
    {"cascade_uniform_multibatch", L2, 8, 3001, 601, 64, DATA_UNIFORM, BUB, 0, 8400000, 2,
     CAS(3)},
    {"cascade_auto_uniform", L2, 5, 4099, 64, 96, DATA_UNIFORM, AUTO, 0, 0, 0, LBK_DISTANCE_AUTO,
     LBK_PREFILTER_AUTO, -3, 0, NULL},
    /* A budget that holds the shard for the prefilter but not the cascade's
     * extra rows as well: the prefilter keeps its single resident chunk. */
    {"cascade_budget_declined", L2, 5, 3001, 64, 256, DATA_SMOOTH, BUB, 0, 12000000, 3, CAS(-3)},
};

/* Large shapes: label slow (tests/brute/CMakeLists.txt). */
static const test_case slow_cases[] = {
    {"slow_l2_k1024", L2, 1024, 20000, 32, 16, DATA_GRID, BUB, 0, 0, 0, DEF},
    {"slow_sort_k1024", L2, 1024, 20000, 32, 16, DATA_GRID, SORT, 0, 0, 0, DEF},
    {"slow_l2_large", L2, 64, 100003, 200, 100, DATA_UNIFORM, BUB, 0, 0, 0, DEF},
    {"slow_cos_large", COS, 20, 100003, 300, 96, DATA_UNIFORM, AUTO, 0, 0, 0, DEF},
    {"slow_sortmerge_k4096_large", IP, 4096, 200000, 16, 32, DATA_UNIFORM, AUTO, 0, 0, 0, DEF},
};

static const lbk_test_case other_cases[] = {
    {"k_too_large", run_k_too_large},
};

LBK_TEST_MAIN(LBK_TEST_ROWS(cases, run_case), LBK_TEST_ROWS(slow_cases, run_case),
              LBK_TEST_CASES(other_cases))
