/* Radius search's engine layer: the radius as a key bound (radius.h) and
 * both engines' count and fill (engine.h) against the host oracle
 * (tests/oracle), which selects by the reported distance, not the key. */
#include "brute.h"
#include "device.h"
#include "engine.h"
#include "knn_oracle.h"
#include "lbk_test.h"
#include "radius.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the key bound ---- */

/* The bound's defining property, checked with the oracle's own distance:
 * the bound is inside and the next float above it is not. */
static void expect_tight(lbk_metric metric, float r)
{
    const float b = lbk_radius_key_bound(metric, r);
    const int m = (int)metric;
    const bool ip = metric == LBK_METRIC_IP;
    if (b == -INFINITY) {
        /* The least key the metric gives: +0 for sums of non-negative terms. */
        const float least =
            metric == LBK_METRIC_IP || metric == LBK_METRIC_COSINE ? -INFINITY : 0.0f;
        const float d = oracle_distance(least, m);
        LBK_EXPECT_FALSE(ip ? d >= r : d <= r, "metric %d r %a: nothing inside", m, r);
        return;
    }
    const float d = oracle_distance(b, m);
    LBK_EXPECT_TRUE(ip ? d >= r : d <= r, "metric %d r %a: bound %a inside", m, r, b);
    if (b == INFINITY)
        return;
    const float above = oracle_distance(nextafterf(b, INFINITY), m);
    LBK_EXPECT_TRUE(ip ? above < r : above > r, "metric %d r %a: above bound %a outside", m, r,
                    b);
}

static void bound_values(void)
{
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_L2, 0.0f), 0.0f);
    /* sqrtf(1 + 2^-23) rounds to 1, sqrtf(1 + 2^-22) to 1 + 2^-23. */
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_L2, 1.0f), 0x1.000002p0f);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_L2, 0.5f), 0x1.000002p-2f);
    /* sqrtf(2.0000002f) rounds to sqrtf(2)'s float: the bound is above 2. */
    LBK_EXPECT_TRUE(lbk_radius_key_bound(LBK_METRIC_L2, sqrtf(2.0f)) >= 2.0f);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_L2, -1.0f), -INFINITY);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_L2, NAN), -INFINITY);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_L1, 2.5f), 2.5f);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_LINF, 0.0f), 0.0f);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_LINF, -0.5f), -INFINITY);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_IP, 0.75f), -0.75f);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_IP, -3.0f), 3.0f);
    /* 1 + 2^-24 is halfway and rounds (to even) to 1, 1 + the next float
     * above 2^-24 to 1 + 2^-23. */
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_COSINE, 1.0f), 0x1p-24f);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_COSINE, 0.0f), -1.0f);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_COSINE, 2.0f), INFINITY);
    LBK_EXPECT_EQ_FLOAT(lbk_radius_key_bound(LBK_METRIC_COSINE, -0.5f), -INFINITY);
}

static void bound_tight(void)
{
    lbk_test_rng rng = LBK_TEST_RNG(40);
    printf("seed 40\n");
    const lbk_metric metrics[] = {LBK_METRIC_L2, LBK_METRIC_L1, LBK_METRIC_LINF,
                                  LBK_METRIC_COSINE, LBK_METRIC_IP};
    const float fixed[] = {0.0f,       0x1p-149f, 1e-30f, 1e-20f, 1e-3f,   0.5f,  1.0f,
                           1.9999999f, 2.0f,      3.0f,   1e19f,  1.8e19f, 1e30f, FLT_MAX};
    for (int m = 0; m < 5; m++) {
        for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
            expect_tight(metrics[m], fixed[i]);
            expect_tight(metrics[m], -fixed[i]);
        }
        for (int i = 0; i < 2000; i++) {
            const float u = lbk_test_rng_unit(&rng);
            expect_tight(metrics[m], u * 2.5f);
            expect_tight(metrics[m], ldexpf(u, (int)lbk_test_rng_below(&rng, 200) - 100));
        }
    }
}

static void valid(void)
{
    LBK_EXPECT_TRUE(lbk_radius_valid(LBK_METRIC_L2, 0.0f));
    LBK_EXPECT_TRUE(lbk_radius_valid(LBK_METRIC_COSINE, 3.0f));
    LBK_EXPECT_FALSE(lbk_radius_valid(LBK_METRIC_L2, -1e-30f));
    LBK_EXPECT_FALSE(lbk_radius_valid(LBK_METRIC_L1, NAN));
    LBK_EXPECT_FALSE(lbk_radius_valid(LBK_METRIC_LINF, INFINITY));
    LBK_EXPECT_TRUE(lbk_radius_valid(LBK_METRIC_IP, -5.0f));
    LBK_EXPECT_FALSE(lbk_radius_valid(LBK_METRIC_IP, -INFINITY));
}

/* A double radius rounds toward the inside of its ball (0.1 rounds up to
 * the nearest float, whose ball takes in a point at 0.1f), and the double
 * itself is validated (-1e-50 is negative though it rounds to -0). */
static void of_double(void)
{
    const float below = lbk_radius_of_double(LBK_METRIC_L2, 0.1);
    LBK_EXPECT_TRUE((double)below <= 0.1);
    LBK_EXPECT_TRUE((double)nextafterf(below, INFINITY) > 0.1);
    LBK_EXPECT_TRUE(below < 0.1f); /* 0.1f is above 0.1 */
    const float above = lbk_radius_of_double(LBK_METRIC_IP, 0.1);
    LBK_EXPECT_TRUE(above == 0.1f);
    LBK_EXPECT_TRUE(lbk_radius_of_double(LBK_METRIC_IP, -0.1) == nextafterf(-0.1f, INFINITY));
    LBK_EXPECT_TRUE(lbk_radius_of_double(LBK_METRIC_L1, 0.5) == 0.5f); /* exact: kept */
    LBK_EXPECT_TRUE(lbk_radius_of_double(LBK_METRIC_L2, 1e-50) == 0.0f);
    LBK_EXPECT_TRUE(lbk_radius_of_double(LBK_METRIC_L2, (double)FLT_MAX) == FLT_MAX);
    LBK_EXPECT_TRUE(lbk_radius_refusal(LBK_METRIC_L2, 0.0) == NULL);
    LBK_EXPECT_TRUE(lbk_radius_refusal(LBK_METRIC_IP, -3.0) == NULL);
    LBK_EXPECT_TRUE(lbk_radius_refusal(LBK_METRIC_L2, (double)FLT_MAX) == NULL);
    LBK_EXPECT_TRUE(lbk_radius_refusal(LBK_METRIC_L2, -1e-50) != NULL);
    LBK_EXPECT_TRUE(lbk_radius_refusal(LBK_METRIC_COSINE, 1e39) != NULL);
    LBK_EXPECT_TRUE(lbk_radius_refusal(LBK_METRIC_IP, -1e39) != NULL);
    LBK_EXPECT_TRUE(lbk_radius_refusal(LBK_METRIC_L1, NAN) != NULL);
    LBK_EXPECT_TRUE(lbk_radius_refusal(LBK_METRIC_LINF, INFINITY) != NULL);
}

/* ---- the engines against the oracle ---- */

enum { L2, L1, LINF, COS, IP };
enum { UNIFORM, GRID, DUPS };
/* Which engines a case runs: the k-d tree, brute force through the engine,
 * brute force with the row-major (GPU) layout through brute.h. */
enum { TREE = 1, BRUTE = 2, TILED = 4 };

typedef struct {
    const char *name;
    int metric;
    uint32_t n, nq;
    int dim;
    int data;
    int engines;
    uint64_t budget; /* device bytes; 0: the device's */
    uint64_t window; /* fill window entries; 0: from the budget */
    lbk_tree_split split;
} radius_row;

/* GRID: integer coordinates 0..3, so that many points lie exactly on the
 * sphere of an integer radius (or its square root) and many coincide;
 * DUPS: each point four times. */
static void fill_points(float *x, uint32_t rows, int dim, int data, uint64_t seed)
{
    lbk_test_rng rng = LBK_TEST_RNG(seed);
    for (uint32_t i = 0; i < rows; i++)
        for (int j = 0; j < dim; j++) {
            float *v = x + (size_t)i * dim + j;
            if (data == GRID)
                *v = (float)lbk_test_rng_below(&rng, 4);
            else if (data == DUPS && i % 4)
                *v = x[(size_t)(i - i % 4) * dim + j];
            else
                *v = lbk_test_rng_unit(&rng) * 2.0f - 0.5f;
        }
}

/* A typical distance between two points of the data, to scale the radii. */
static float scale(const radius_row *c)
{
    const float side = c->data == GRID ? 3.0f : 2.0f;
    switch (c->metric) {
    case L2: return side * sqrtf((float)c->dim);
    case L1: return side * (float)c->dim;
    case COS: return 1.0f;
    case IP: return side * side * (float)c->dim;
    default: return side;
    }
}

/* Per query: 0, a tiny radius, small and medium ones, one that takes every
 * point, none (ip: a dot product above every one), and the distance of the
 * query to some reference point exactly (a point on the sphere). */
static float radius_of(const radius_row *c, const float *ref, const float *q, uint32_t i)
{
    const float s = scale(c);
    const bool ip = c->metric == IP;
    switch (i % 7) {
    case 0: return ip ? 0.0f : 0.0f;
    case 1: return ip ? s * 0.05f : 1e-6f;
    case 2: return ip ? s * 0.2f : s * 0.08f;
    case 3: return ip ? -s * 0.1f : s * 0.3f;
    case 4: return ip ? -1e30f : 1e30f;
    case 5: return ip ? 1e30f : s * 0.01f;
    default: {
        const uint32_t j = c->n ? (i * 7919u) % c->n : 0;
        if (!c->n)
            return s * 0.2f;
        const float key = oracle_key(q, ref + (size_t)j * c->dim, c->dim, c->metric);
        return oracle_distance(key, c->metric);
    }
    }
}

typedef struct {
    float *ref, *queries, *radii, *bounds;
    uint64_t *want_off;
    float *want_k;
    uint32_t *want_i;
} case_data;

static void make_data(const radius_row *c, case_data *d)
{
    d->ref = malloc(((size_t)c->n * c->dim + 1) * sizeof *d->ref);
    d->queries = malloc(((size_t)c->nq * c->dim + 1) * sizeof *d->queries);
    d->radii = malloc(((size_t)c->nq + 1) * sizeof *d->radii);
    d->bounds = malloc(((size_t)c->nq + 1) * sizeof *d->bounds);
    d->want_off = malloc(((size_t)c->nq + 1) * sizeof *d->want_off);
    LBK_ASSERT_TRUE(d->ref && d->queries && d->radii && d->bounds && d->want_off);
    const uint64_t seed = 4000u + c->n;
    printf("seed %llu\n", (unsigned long long)seed);
    fill_points(d->ref, c->n, c->dim, c->data, seed);
    fill_points(d->queries, c->nq, c->dim, c->data == DUPS ? UNIFORM : c->data, seed + 1);
    /* Where the brute engine filters by the prefilter's lower bounds
     * (dim >= 16): a zero row, which query 0 copies, has lower bound 0
     * exactly at its radius 0 (key bound 0), a tie the filter must keep. */
    if (c->dim >= 16 && c->n)
        memset(d->ref, 0, (size_t)c->dim * sizeof *d->ref);
    /* Some queries are reference points: zero keys, and their duplicates. */
    for (uint32_t q = 0; c->n && q < c->nq; q += 5)
        memcpy(d->queries + (size_t)q * c->dim, d->ref + (size_t)(q * 13u % c->n) * c->dim,
               (size_t)c->dim * sizeof *d->queries);
    if (c->metric == COS) {
        if (c->n > 3) /* a zero row: distance 1 to everything */
            memset(d->ref + 3 * (size_t)c->dim, 0, (size_t)c->dim * sizeof *d->ref);
        oracle_normalize(d->ref, c->n, c->dim);
        oracle_normalize(d->queries, c->nq, c->dim);
    }
    for (uint32_t q = 0; q < c->nq; q++) {
        d->radii[q] = radius_of(c, d->ref, d->queries + (size_t)q * c->dim, q);
        d->bounds[q] = lbk_radius_key_bound((lbk_metric)c->metric, d->radii[q]);
    }
    LBK_ASSERT_EQ_INT(oracle_radius(d->ref, c->n, d->queries, c->nq, c->dim, c->metric, d->radii,
                                    d->want_off, &d->want_k, &d->want_i),
                      0, "oracle out of memory");
}

static void free_data(case_data *d)
{
    free(d->ref);
    free(d->queries);
    free(d->radii);
    free(d->bounds);
    free(d->want_off);
    free(d->want_k);
    free(d->want_i);
}

/* An engine's answer, count and fill, as the caller of engine.h sees it. */
typedef struct {
    lbk_engine_state *engine; /* or */
    lbk_brute *brute;
    uint64_t evals; /* brute.h's */
} under_test;

static lbk_status count_of(under_test *u, const case_data *d, uint32_t nq, uint64_t *counts)
{
    if (u->engine)
        return lbk_engine_radius_count(u->engine, d->queries, d->bounds, nq, counts);
    return lbk_brute_radius_count(u->brute, d->queries, d->bounds, nq, counts, &u->evals);
}

/* brute.h's lists come in row order: sorted here by (key, row) the
 * oracle's way (the engine sorts its own). */
static void sort_lists(uint32_t nq, const uint64_t *off, float *keys, uint32_t *rows)
{
    for (uint32_t q = 0; q < nq; q++) {
        for (uint64_t i = off[q] + 1; i < off[q + 1]; i++)
            for (uint64_t j = i; j > off[q]; j--) {
                const bool less =
                    keys[j] < keys[j - 1] || (keys[j] == keys[j - 1] && rows[j] < rows[j - 1]);
                if (!less)
                    break;
                const float k = keys[j];
                keys[j] = keys[j - 1];
                keys[j - 1] = k;
                const uint32_t r = rows[j];
                rows[j] = rows[j - 1];
                rows[j - 1] = r;
            }
    }
}

static lbk_status fill_of(under_test *u, const radius_row *c, const case_data *d,
                          const uint64_t *off, float *keys, uint32_t *rows)
{
    if (u->engine)
        return lbk_engine_radius_fill(u->engine, d->queries, d->bounds, c->nq, off, keys, rows);
    const lbk_status st =
        lbk_brute_radius_fill(u->brute, d->queries, d->bounds, c->nq, off,
                              c->window ? c->window : 1000, keys, rows, &u->evals);
    sort_lists(c->nq, off, keys, rows);
    return st;
}

/* Counts, then the lists, the same bytes as the oracle's. */
static void check_engine(const char *what, under_test *u, const radius_row *c, const case_data *d)
{
    uint64_t *counts = malloc(((size_t)c->nq + 1) * sizeof *counts);
    uint64_t *off = malloc(((size_t)c->nq + 1) * sizeof *off);
    const uint64_t total = d->want_off[c->nq];
    float *keys = malloc(((size_t)total + 1) * sizeof *keys);
    uint32_t *rows = malloc(((size_t)total + 1) * sizeof *rows);
    LBK_ASSERT_TRUE(counts && off && keys && rows);
    if (LBK_EXPECT_EQ_INT(count_of(u, d, c->nq, counts), LBK_OK, "%s count", what)) {
        off[0] = 0;
        int bad = 0;
        for (uint32_t q = 0; q < c->nq; q++) {
            const uint64_t want = d->want_off[q + 1] - d->want_off[q];
            if (counts[q] != want && ++bad <= 5)
                LBK_EXPECT_EQ_U64(counts[q], want, "%s: query %u's count, radius %a", what, q,
                                  d->radii[q]);
            off[q + 1] = off[q] + counts[q];
        }
        LBK_EXPECT_INT(bad, ==, 0, "%s: queries whose count differs", what);
        if (bad == 0 &&
            LBK_EXPECT_EQ_INT(fill_of(u, c, d, off, keys, rows), LBK_OK, "%s fill", what)) {
            LBK_EXPECT_EQ_MEM(keys, d->want_k, (size_t)total * sizeof *keys, "%s keys", what);
            LBK_EXPECT_EQ_MEM(rows, d->want_i, (size_t)total * sizeof *rows, "%s rows", what);
        }
    }
    printf("%s: %llu points in %u balls\n", what, (unsigned long long)total, c->nq);
    free(counts);
    free(off);
    free(keys);
    free(rows);
}

static lbk_engine_state *make_engine(lbk_device *dev, const radius_row *c, const case_data *d,
                                     lbk_engine engine, uint64_t window)
{
    const lbk_engine_params params = {.engine = engine,
                                      .k = 1,
                                      .metric = (lbk_metric)c->metric,
                                      .memory_budget = c->budget,
                                      .split = c->split,
                                      .radius_window = window};
    const lbk_dataset data = {.rows = c->n, .dim = c->dim, .points = d->ref};
    lbk_engine_state *state = NULL;
    LBK_EXPECT_EQ_INT(lbk_engine_create(dev, &params, engine, &data, &state), LBK_OK);
    return state;
}

/* The work counts of count + fill: the same whatever the window. */
static void work_of(lbk_engine_state *state, const case_data *d, const radius_row *c,
                    lbk_engine_work *work)
{
    uint64_t *off = calloc((size_t)c->nq + 1, sizeof *off);
    const uint64_t total = d->want_off[c->nq];
    float *keys = malloc(((size_t)total + 1) * sizeof *keys);
    uint32_t *rows = malloc(((size_t)total + 1) * sizeof *rows);
    LBK_ASSERT_TRUE(off && keys && rows);
    LBK_EXPECT_EQ_INT(lbk_engine_radius_count(state, d->queries, d->bounds, c->nq, off + 1),
                      LBK_OK);
    for (uint32_t q = 0; q < c->nq; q++)
        off[q + 1] += off[q];
    LBK_EXPECT_EQ_INT(
        lbk_engine_radius_fill(state, d->queries, d->bounds, c->nq, off, keys, rows), LBK_OK);
    lbk_engine_work_of(state, work);
    free(off);
    free(keys);
    free(rows);
}

static void check_work(lbk_device *dev, const radius_row *c, const case_data *d,
                       lbk_engine engine)
{
    lbk_engine_state *small = make_engine(dev, c, d, engine, c->window);
    lbk_engine_state *large = make_engine(dev, c, d, engine, 0);
    lbk_engine_work a = {0}, b = {0};
    if (small && large) {
        work_of(small, d, c, &a);
        work_of(large, d, c, &b);
        LBK_EXPECT_EQ_U64(a.distance_evals, b.distance_evals, "window %llu",
                          (unsigned long long)c->window);
        LBK_EXPECT_EQ_U64(a.nodes_visited, b.nodes_visited);
        LBK_EXPECT_U64(a.distance_evals, >, 0);
    }
    lbk_engine_destroy(small);
    lbk_engine_destroy(large);
}

static void run_engines(const void *row)
{
    const radius_row *c = row;
    lbk_test_require_opencl();
    case_data d = {0};
    make_data(c, &d);
    lbk_device *dev = NULL;
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
    if (c->engines & TREE) {
        under_test u = {.engine = make_engine(dev, c, &d, LBK_ENGINE_KDTREE, c->window)};
        if (u.engine)
            check_engine("kdtree", &u, c, &d);
        lbk_engine_destroy(u.engine);
        if (c->window && c->n)
            check_work(dev, c, &d, LBK_ENGINE_KDTREE);
    }
    if (c->engines & BRUTE) {
        under_test u = {.engine = make_engine(dev, c, &d, LBK_ENGINE_BRUTE, c->window)};
        if (u.engine)
            check_engine("brute", &u, c, &d);
        lbk_engine_destroy(u.engine);
        if (c->window && c->n)
            check_work(dev, c, &d, LBK_ENGINE_BRUTE);
    }
    if (c->engines & TILED) {
        const lbk_dataset data = {.rows = c->n, .dim = c->dim, .points = d.ref};
        const lbk_brute_params params = {.k = 1,
                                         .metric = (lbk_metric)c->metric,
                                         .memory_budget = c->budget,
                                         .distance = LBK_DISTANCE_TILED};
        under_test u = {0};
        if (LBK_EXPECT_EQ_INT(lbk_brute_create(dev, &data, &params, &u.brute), LBK_OK))
            check_engine("brute, row-major", &u, c, &d);
        if (c->budget)
            LBK_EXPECT_U64(lbk_brute_chunk_rows(u.brute), <, c->n, "a streamed shard");
        lbk_brute_destroy(u.brute);
    }
    lbk_device_close(dev);
    free_data(&d);
}

#define RR LBK_SPLIT_ROUND_ROBIN
#define WIDE LBK_SPLIT_WIDEST
#define ALL_ (TREE | BRUTE)

/* name, metric, n, nq, dim, data, engines, budget, window, split */
static const radius_row engine_cases[] = {
    {"l2_uniform", L2, 2000, 140, 3, UNIFORM, ALL_, 0, 0, RR},
    {"l1_uniform", L1, 2000, 140, 3, UNIFORM, ALL_, 0, 0, RR},
    {"linf_uniform", LINF, 2000, 140, 3, UNIFORM, ALL_, 0, 0, RR},
    {"l2_grid", L2, 1500, 140, 3, GRID, ALL_, 0, 0, RR},
    {"l1_grid", L1, 1500, 140, 2, GRID, ALL_, 0, 0, RR},
    {"linf_grid", LINF, 1500, 140, 4, GRID, ALL_, 0, 0, WIDE},
    {"l2_duplicates", L2, 1200, 140, 3, DUPS, ALL_, 0, 0, WIDE},
    {"l2_dim16", L2, 1000, 70, 16, UNIFORM, ALL_ | TILED, 0, 0, RR},
    {"cosine_uniform", COS, 1000, 140, 8, UNIFORM, BRUTE | TILED, 0, 0, RR},
    {"cosine_grid", COS, 1000, 140, 3, GRID, BRUTE, 0, 0, RR},
    {"ip_uniform", IP, 1000, 140, 8, UNIFORM, BRUTE | TILED, 0, 0, RR},
    {"ip_grid", IP, 1000, 140, 3, GRID, BRUTE, 0, 0, RR},
    {"l2_windows", L2, 1500, 140, 3, GRID, ALL_, 0, 97, RR},
    /* Lists cut by windows are sorted on the host: negative keys and -0. */
    {"ip_windows", IP, 1000, 140, 3, GRID, BRUTE | TILED, 0, 97, RR},
    {"cosine_windows", COS, 1000, 140, 3, GRID, BRUTE, 0, 61, RR},
    {"l1_streamed", L1, 3001, 70, 8, GRID, BRUTE | TILED, 40000, 4000, RR},
    {"l2_tiny", L2, 3, 21, 2, GRID, ALL_ | TILED, 0, 0, RR},
    {"l2_one_bucket", L2, 15, 21, 3, UNIFORM, ALL_, 0, 0, RR},
    {"linf_two_levels", LINF, 17, 21, 3, GRID, ALL_, 0, 0, RR},
    {"l2_one_point", L2, 1, 14, 3, UNIFORM, ALL_ | TILED, 0, 0, RR},
    {"l2_empty", L2, 0, 14, 3, UNIFORM, ALL_ | TILED, 0, 0, RR},
    /* The brute engine's filter by the prefilter's lower bounds (64-d:
     * the blocked layout with the prefilter; the row-major one without):
     * points on the sphere (radius_of's last case), duplicates, a zero
     * row at r = 0, a streamed shard with windows. */
    {"l2_dim64", L2, 1500, 140, 64, UNIFORM, BRUTE | TILED, 0, 0, RR},
    {"l2_dim64_duplicates", L2, 1500, 140, 64, DUPS, BRUTE, 0, 0, RR},
    {"cosine_dim64", COS, 1500, 140, 64, UNIFORM, BRUTE | TILED, 0, 0, RR},
    {"ip_dim64", IP, 1500, 140, 64, UNIFORM, BRUTE | TILED, 0, 0, RR},
    {"l2_dim64_streamed", L2, 3001, 70, 64, UNIFORM, BRUTE, 300000, 97, RR},
};

/* Fashion-MNIST's shape, every filtered metric. */
static const radius_row slow_cases[] = {
    {"l2_dim784", L2, 6000, 280, 784, UNIFORM, BRUTE | TILED, 0, 0, RR},
    {"cosine_dim784", COS, 6000, 280, 784, DUPS, BRUTE, 0, 0, RR},
    {"ip_dim784", IP, 6000, 280, 784, UNIFORM, BRUTE, 0, 0, RR},
};

static const lbk_test_case unit_cases[] = {
    {"bound_values", bound_values},
    {"bound_tight", bound_tight},
    {"valid", valid},
    {"of_double", of_double},
};

LBK_TEST_MAIN(LBK_TEST_CASES(unit_cases), LBK_TEST_ROWS(engine_cases, run_engines),
              LBK_TEST_ROWS(slow_cases, run_engines))
