/* The k-d tree over compact points (uint8, int8, float16; docs/design.md
 * "Compact reference points") against the independent oracles and the
 * brute engine: uint8 and int8 lists equal the exact 64-bit integer
 * oracle's (ties by index) and the brute engine's exact integer keys, bit
 * for bit, for every builder; float16 lists equal the same tree's over the
 * widened float32 points, and the float32 oracle's. One CTest test per
 * case name. */
#include "brute.h"
#include "device.h"
#include "engine.h"
#include "kdtree.h"
#include "kdtree_cl.h"
#include "knn_oracle.h"
#include "lbk_test.h"
#include "tree_query.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lbk_device *dev;

static void open_device(void)
{
    lbk_test_require_opencl();
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
}

typedef struct {
    lbk_tree_split split;
    lbk_tree_sort sort;
    const char *name;
} builder;

static const builder builders[] = {
    {LBK_SPLIT_ROUND_ROBIN, LBK_SORT_SELECT, "round robin, select"},
    {LBK_SPLIT_ROUND_ROBIN, LBK_SORT_RADIX, "round robin, radix"},
    {LBK_SPLIT_ROUND_ROBIN, LBK_SORT_BITONIC, "round robin, bitonic"},
    {LBK_SPLIT_WIDEST, LBK_SORT_RADIX, "widest, radix"},
};
#define BUILDERS (sizeof builders / sizeof builders[0])

/* n rows of dim integers of `type`, as the engines take them (bytes) and
 * as the oracle does (int32): each value within 2 of one of three centres
 * (the type's two ends and its middle), so exact ties abound; every fifth
 * row repeats an earlier one. */
static void fill_ints(lbk_dtype type, uint32_t n, int dim, lbk_test_rng *rng, void *bytes,
                      int32_t *ints)
{
    const int lo = type == LBK_DTYPE_UINT8 ? 0 : -128;
    const int centres[3] = {lo + 2, lo + 128, lo + 253};
    for (size_t i = 0; i < (size_t)n * dim; i++) {
        const size_t row = i / (size_t)dim;
        int v;
        if (row >= 5 && row % 5 == 0)
            v = ints[(row / 5 - 1) * (size_t)dim + i % (size_t)dim];
        else
            v = centres[lbk_test_rng_below(rng, 3u)] - 2 + (int)lbk_test_rng_below(rng, 5u);
        ints[i] = v;
        if (type == LBK_DTYPE_UINT8)
            ((uint8_t *)bytes)[i] = (uint8_t)v;
        else
            ((int8_t *)bytes)[i] = (int8_t)v;
    }
}

static lbk_kdtree *build(const lbk_dataset *ds, const builder *b)
{
    const lbk_kdtree_params params = {.split = b->split, .sort = b->sort, .verify = true};
    lbk_kdtree *tree = NULL;
    const lbk_status st = lbk_kdtree_build(dev, ds, &params, &tree);
    LBK_EXPECT_EQ_INT(st, LBK_OK, "build %s over %u x %d %s: %s", b->name, (unsigned)ds->rows,
                      ds->dim, lbk_dtype_name(ds->dtype), lbk_status_name(st));
    return st == LBK_OK ? tree : NULL;
}

static void tree_search(lbk_kdtree *tree, const float *queries, uint32_t nq, int k, int metric,
                        lbk_knn_candidate *out)
{
    float *keys = malloc((size_t)nq * k * sizeof *keys);
    uint32_t *index = malloc((size_t)nq * k * sizeof *index);
    LBK_ASSERT_TRUE(keys && index, "out of memory");
    lbk_knn_result r = {.queries = nq, .k = k, .keys = keys, .index = index};
    LBK_EXPECT_EQ_INT(lbk_tree_query(tree, queries, nq, k, (lbk_metric)metric, &r, NULL), LBK_OK);
    for (size_t s = 0; s < (size_t)nq * k; s++)
        out[s] = (lbk_knn_candidate){keys[s], -1, index[s]};
    free(keys);
    free(index);
}

/* The brute engine's lists, its integer keys decoded as every run does. */
static void brute_search(const lbk_dataset *ds, const float *queries, uint32_t nq, int k,
                         int metric, lbk_knn_candidate *out)
{
    lbk_brute *engine = NULL;
    const lbk_brute_params params = {.k = k, .metric = (lbk_metric)metric};
    LBK_ASSERT_EQ_INT(lbk_brute_create(dev, ds, &params, &engine), LBK_OK);
    float *keys = malloc((size_t)nq * k * sizeof *keys);
    uint32_t *index = malloc((size_t)nq * k * sizeof *index);
    LBK_ASSERT_TRUE(keys && index, "out of memory");
    lbk_knn_result r = {.queries = nq, .k = k, .keys = keys, .index = index};
    LBK_EXPECT_EQ_INT(lbk_brute_query(engine, queries, nq, &r), LBK_OK);
    for (size_t s = 0; s < (size_t)nq * k; s++)
        out[s] = (lbk_knn_candidate){keys[s], -1, index[s]};
    if (lbk_brute_int_keys(engine))
        lbk_engine_int_keys_decode((lbk_metric)metric, out, (uint64_t)nq * k);
    free(keys);
    free(index);
    lbk_brute_destroy(engine);
}

/* Slots whose index or key bits differ; the first few are reported. */
static size_t differ(const char *what, const lbk_knn_candidate *got,
                     const lbk_knn_candidate *want, size_t slots)
{
    size_t bad = 0;
    for (size_t s = 0; s < slots; s++) {
        if (memcmp(&got[s].key, &want[s].key, sizeof(float)) == 0 && got[s].id == want[s].id)
            continue;
        if (++bad <= 3)
            LBK_EXPECT_TRUE(false, "%s: slot %zu: (%.9g, %llu), want (%.9g, %llu)", what, s,
                            (double)got[s].key, (unsigned long long)got[s].id,
                            (double)want[s].key, (unsigned long long)want[s].id);
    }
    return bad;
}

/* The tree holds its points at their own width (and gives them back
 * widened, in tree order: each node's row is the input row). */
static void check_held(lbk_kdtree *tree, const lbk_dataset *ds, const int32_t *ints)
{
    const uint64_t n = ds->rows, dim = (uint64_t)ds->dim;
    LBK_EXPECT_EQ_INT(lbk_kdtree_dtype(tree), ds->dtype);
    const uint64_t dims = lbk_kdtree_split_dims(tree) ? n : 0;
    LBK_EXPECT_EQ_U64(lbk_kdtree_bytes(tree),
                      n * (dim * lbk_dataset_type_bytes(ds->dtype) + 4) + dims +
                          lbk_tree_buckets_bytes(n, ds->dim, ds->dtype),
                      "device bytes of the %s tree", lbk_dtype_name(ds->dtype));
    float *p = NULL;
    uint32_t *ids = NULL;
    uint8_t *sd = NULL;
    LBK_ASSERT_EQ_INT(lbk_kdtree_download(tree, &p, &ids, &sd), LBK_OK);
    size_t bad = 0;
    for (uint64_t i = 0; i < n * dim; i++)
        bad += p[i] != (float)ints[(uint64_t)ids[i / dim] * dim + i % dim];
    LBK_EXPECT_EQ_U64(bad, 0, "downloaded values that are not the input's");
    free(p);
    free(ids);
    free(sd);
}

/* uint8 and int8 in 2, 5 and 8 dimensions, l2, l1 and linf, every
 * builder: the tree's lists are the exact oracle's and the brute engine's,
 * bit for bit. A third of the queries are reference rows, and some lie at
 * the origin, where an integer tree's spare bucket lanes (zero values, no
 * row) would enter the lists if the walk took them. */
static void case_int(void)
{
    open_device();
    lbk_test_rng rng = LBK_TEST_RNG(4242);
    const lbk_dtype types[2] = {LBK_DTYPE_UINT8, LBK_DTYPE_INT8};
    const int dims[3] = {2, 5, 8}, metrics[3] = {0, 1, 2};
    const uint32_t n = 700, nq = 40;
    const int k = 9;
    for (int t = 0; t < 2; t++)
        for (int d = 0; d < 3; d++) {
            const int dim = dims[d];
            uint8_t *bytes = malloc((size_t)n * dim);
            int32_t *ints = malloc((size_t)n * dim * sizeof *ints);
            int32_t *qints = malloc((size_t)nq * dim * sizeof *qints);
            float *queries = malloc((size_t)nq * dim * sizeof *queries);
            uint8_t *qbytes = malloc((size_t)nq * dim);
            LBK_ASSERT_TRUE(bytes && ints && qints && queries && qbytes, "out of memory");
            fill_ints(types[t], n, dim, &rng, bytes, ints);
            fill_ints(types[t], nq, dim, &rng, qbytes, qints);
            for (uint32_t q = 0; q < nq; q++) {
                if (q % 3 == 0)
                    memcpy(qints + (size_t)q * dim, ints + (size_t)(q * 17 % n) * dim,
                           (size_t)dim * sizeof *ints);
                else if (q % 7 == 1)
                    memset(qints + (size_t)q * dim, 0, (size_t)dim * sizeof *qints);
            }
            for (size_t i = 0; i < (size_t)nq * dim; i++)
                queries[i] = (float)qints[i];
            const lbk_dataset ds = {.rows = n, .dim = dim, .dtype = types[t], .raw = bytes};
            const size_t slots = (size_t)nq * k;
            int64_t *ok = malloc(slots * sizeof *ok);
            uint32_t *oi = malloc(slots * sizeof *oi);
            lbk_knn_candidate *want = malloc(slots * sizeof *want);
            lbk_knn_candidate *brute = malloc(slots * sizeof *brute);
            lbk_knn_candidate *got = malloc(slots * sizeof *got);
            LBK_ASSERT_TRUE(ok && oi && want && brute && got, "out of memory");
            for (int m = 0; m < 3; m++) {
                LBK_ASSERT_EQ_INT(oracle_knn_int(ints, n, qints, nq, dim, metrics[m], k, ok, oi),
                                  0);
                for (size_t s = 0; s < slots; s++)
                    want[s] =
                        (lbk_knn_candidate){oracle_int_key_float(ok[s], metrics[m]), -1, oi[s]};
                char what[128];
                snprintf(what, sizeof what, "%s, %d-d, metric %d: brute vs oracle",
                         lbk_dtype_name(types[t]), dim, metrics[m]);
                brute_search(&ds, queries, nq, k, metrics[m], brute);
                LBK_EXPECT_EQ_U64(differ(what, brute, want, slots), 0, "%s", what);
                for (size_t b = 0; b < BUILDERS; b++) {
                    lbk_kdtree *tree = build(&ds, &builders[b]);
                    if (!tree)
                        continue;
                    if (m == 0)
                        check_held(tree, &ds, ints);
                    tree_search(tree, queries, nq, k, metrics[m], got);
                    snprintf(what, sizeof what, "%s, %d-d, metric %d, %s: tree vs oracle",
                             lbk_dtype_name(types[t]), dim, metrics[m], builders[b].name);
                    LBK_EXPECT_EQ_U64(differ(what, got, want, slots), 0, "%s", what);
                    snprintf(what, sizeof what, "%s, %d-d, metric %d, %s: tree vs brute",
                             lbk_dtype_name(types[t]), dim, metrics[m], builders[b].name);
                    LBK_EXPECT_EQ_U64(differ(what, got, brute, slots), 0, "%s", what);
                    lbk_kdtree_destroy(tree);
                }
            }
            free(ok);
            free(oi);
            free(want);
            free(brute);
            free(got);
            free(bytes);
            free(ints);
            free(qints);
            free(queries);
            free(qbytes);
        }
    lbk_device_close(dev);
}

/* float16 in 3 and 6 dimensions (normal halves of either sign with many
 * ties), every builder: the tree's lists equal the same builder's over
 * the widened float32 points and the float32 oracle's, bit for bit. */
static void case_f16(void)
{
    open_device();
    lbk_test_rng rng = LBK_TEST_RNG(1616);
    const int dims[2] = {3, 6};
    const uint32_t n = 600, nq = 30;
    const int k = 7;
    for (int d = 0; d < 2; d++) {
        const int dim = dims[d];
        uint16_t *half = malloc((size_t)n * dim * sizeof *half);
        float *wide = malloc((size_t)n * dim * sizeof *wide);
        float *queries = malloc((size_t)nq * dim * sizeof *queries);
        LBK_ASSERT_TRUE(half && wide && queries, "out of memory");
        for (size_t i = 0; i < (size_t)n * dim; i++) {
            /* Exponents -2..1 and four mantissas: many equal values. */
            const uint16_t bits = (uint16_t)((lbk_test_rng_below(&rng, 2u) << 15) |
                                             ((13u + lbk_test_rng_below(&rng, 4u)) << 10) |
                                             lbk_test_rng_below(&rng, 4u) << 8);
            half[i] = bits;
            const float v =
                ldexpf(1.0f + (float)(bits & 0x3ff) / 1024.0f, (bits >> 10 & 31) - 15);
            wide[i] = bits & 0x8000 ? -v : v;
        }
        for (size_t i = 0; i < (size_t)nq * dim; i++)
            queries[i] = (float)lbk_test_rng_below(&rng, 4001u) / 1000.0f - 2.0f;
        const lbk_dataset compact = {
            .rows = n, .dim = dim, .dtype = LBK_DTYPE_FLOAT16, .raw = half};
        const lbk_dataset widened = {.rows = n, .dim = dim, .points = wide};
        const size_t slots = (size_t)nq * k;
        float *ok = malloc(slots * sizeof *ok);
        uint32_t *oi = malloc(slots * sizeof *oi);
        lbk_knn_candidate *want = malloc(slots * sizeof *want);
        lbk_knn_candidate *f32 = malloc(slots * sizeof *f32);
        lbk_knn_candidate *got = malloc(slots * sizeof *got);
        LBK_ASSERT_TRUE(ok && oi && want && f32 && got, "out of memory");
        for (int metric = 0; metric < 3; metric++) {
            LBK_ASSERT_EQ_INT(oracle_knn(wide, n, queries, nq, dim, metric, k, ok, oi), 0);
            for (size_t s = 0; s < slots; s++)
                want[s] = (lbk_knn_candidate){ok[s], -1, oi[s]};
            for (size_t b = 0; b < BUILDERS; b++) {
                lbk_kdtree *t16 = build(&compact, &builders[b]);
                lbk_kdtree *t32 = build(&widened, &builders[b]);
                if (t16 && t32) {
                    tree_search(t16, queries, nq, k, metric, got);
                    tree_search(t32, queries, nq, k, metric, f32);
                    char what[128];
                    snprintf(what, sizeof what, "float16, %d-d, metric %d, %s: vs widened", dim,
                             metric, builders[b].name);
                    LBK_EXPECT_EQ_U64(differ(what, got, f32, slots), 0, "%s", what);
                    snprintf(what, sizeof what, "float16, %d-d, metric %d, %s: vs oracle", dim,
                             metric, builders[b].name);
                    LBK_EXPECT_EQ_U64(differ(what, got, want, slots), 0, "%s", what);
                    LBK_EXPECT_TRUE(lbk_kdtree_bytes(t16) < lbk_kdtree_bytes(t32),
                                    "the float16 tree holds fewer bytes");
                }
                lbk_kdtree_destroy(t16);
                lbk_kdtree_destroy(t32);
            }
        }
        free(ok);
        free(oi);
        free(want);
        free(f32);
        free(got);
        free(half);
        free(wide);
        free(queries);
    }
    lbk_device_close(dev);
}

/* At the limit, 258 dimensions: a near tie just below 2^24 (squared
 * distances D + 1 and D from the origin, D = 257 x 255^2; the farther row
 * first) is ordered by value, as the brute engine's exact keys order it.
 * One more dimension is refused by the engine, and the index is told to
 * widen (lbk_engine_compact_why). */
static void case_dim_limit(void)
{
    open_device();
    enum { DIM = LBK_KDTREE_INT_DIM_MAX, N = 4 };
    static uint8_t bytes[N * (DIM + 1)];
    static int32_t ints[N * DIM];
    const int last[N] = {1, 0, 2, 255};
    for (int i = 0; i < N; i++)
        for (int j = 0; j < DIM; j++) {
            const int v = j == DIM - 1 ? last[i] : 255;
            bytes[i * DIM + j] = (uint8_t)v;
            ints[i * DIM + j] = v;
        }
    static float queries[DIM];
    static int32_t qints[DIM];
    int64_t ok[N];
    uint32_t oi[N];
    LBK_ASSERT_EQ_INT(oracle_knn_int(ints, N, qints, 1, DIM, 0, N, ok, oi), 0);
    LBK_ASSERT_TRUE(oi[0] == 1 && oi[1] == 0 && ok[3] < (1 << 24) && ok[3] > (1 << 24) - 1000,
                    "the data set is a near tie below 2^24");
    const lbk_dataset ds = {.rows = N, .dim = DIM, .dtype = LBK_DTYPE_UINT8, .raw = bytes};
    lbk_knn_candidate want[N], brute[N], got[N];
    for (int s = 0; s < N; s++)
        want[s] = (lbk_knn_candidate){oracle_int_key_float(ok[s], 0), -1, oi[s]};
    brute_search(&ds, queries, 1, N, 0, brute);
    LBK_EXPECT_EQ_U64(differ("258-d near tie: brute", brute, want, N), 0);
    lbk_kdtree *tree = build(&ds, &builders[0]);
    if (tree) {
        tree_search(tree, queries, 1, N, 0, got);
        LBK_EXPECT_EQ_U64(differ("258-d near tie: tree", got, want, N), 0);
        lbk_kdtree_destroy(tree);
    }
    const lbk_dataset wider = {.rows = 1, .dim = DIM + 1, .dtype = LBK_DTYPE_INT8, .raw = bytes};
    const lbk_engine_params params = {.k = 1, .metric = LBK_METRIC_L2};
    lbk_engine_state *engine = NULL;
    LBK_EXPECT_EQ_INT(lbk_engine_create(dev, &params, LBK_ENGINE_KDTREE, &wider, &engine),
                      LBK_ERR_CONFIG);
    LBK_EXPECT_TRUE(engine == NULL);
    LBK_EXPECT_TRUE(lbk_engine_compact_why(LBK_ENGINE_KDTREE, false, LBK_DTYPE_UINT8, DIM) ==
                    NULL);
    LBK_EXPECT_TRUE(lbk_engine_compact_why(LBK_ENGINE_KDTREE, false, LBK_DTYPE_INT8, DIM + 1) !=
                    NULL);
    LBK_EXPECT_TRUE(lbk_engine_compact_why(LBK_ENGINE_BRUTE, false, LBK_DTYPE_UINT8, DIM + 1) ==
                    NULL);
    LBK_EXPECT_TRUE(lbk_engine_compact_why(LBK_ENGINE_BRUTE, true, LBK_DTYPE_UINT8, DIM + 1) !=
                    NULL);
    LBK_EXPECT_TRUE(lbk_engine_compact_why(LBK_ENGINE_KDTREE, true, LBK_DTYPE_FLOAT16, 1000) ==
                    NULL);
    lbk_device_close(dev);
}

static const lbk_test_case cases[] = {
    {"int", case_int},
    {"f16", case_f16},
    {"dim_limit", case_dim_limit},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
