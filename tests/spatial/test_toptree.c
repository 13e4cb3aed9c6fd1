/* The spatial partition's pure pieces (src/comm/toptree.h), no MPI: the
 * order image, the proportional split and the tree's shape, the box key as
 * a lower bound of every point's key (against the independent oracle's key,
 * bit for bit), the walks by key and by float, and the pruned near-rank
 * search against a scan of every rank. */
#include "knn_oracle.h"
#include "lbk_test.h"
#include "toptree.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

/* Between lo and hi, without forming hi - lo (which may overflow). */
static float rng_range(lbk_test_rng *rng, float lo, float hi)
{
    const float u = lbk_test_rng_unit(rng);
    const float x = lo * (1.0f - u) + hi * u;
    return x < lo ? lo : x > hi ? hi : x;
}

static uint32_t bits_of(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* Floats in ascending order, -0 before +0 (the image's order). */
static void case_order_image(void)
{
    const float sorted[] = {-INFINITY,  -FLT_MAX, -1e20f,  -1.0f,   -FLT_MIN, -1e-40f,
                            -0.0f,      0.0f,     1e-45f,  1e-40f,  FLT_MIN,  1.0f,
                            1.0000001f, 3e38f,    FLT_MAX, INFINITY};
    const int n = (int)(sizeof sorted / sizeof *sorted);
    for (int i = 0; i < n; i++) {
        LBK_EXPECT_EQ_U64(bits_of(lbk_toptree_order_float(lbk_toptree_order_image(sorted[i]))),
                          bits_of(sorted[i]), "round trip of %g", (double)sorted[i]);
        if (i > 0)
            LBK_EXPECT_U64(lbk_toptree_order_image(sorted[i - 1]), <,
                           lbk_toptree_order_image(sorted[i]), "%g before %g",
                           (double)sorted[i - 1], (double)sorted[i]);
    }
    lbk_test_rng rng = LBK_TEST_RNG(11);
    for (int i = 0; i < 200000; i++) {
        uint32_t ba = (uint32_t)lbk_test_rng_next(&rng), bb = (uint32_t)lbk_test_rng_next(&rng);
        float a, b;
        memcpy(&a, &ba, sizeof a);
        memcpy(&b, &bb, sizeof b);
        if (isnan(a) || isnan(b))
            continue;
        if (a < b && !LBK_EXPECT_U64(lbk_toptree_order_image(a), <, lbk_toptree_order_image(b),
                                     "%a < %a", (double)a, (double)b))
            return;
    }
}

/* floor(n * ceil(p/2) / p) for any n, and a shape whose leaves are the
 * ranks in order, each with its proportional share give or take a point per
 * level. */
static void case_split_counts(void)
{
    const uint64_t ns[] = {
        0, 1, 2, 3, 7, 10, 1000, 999983, (UINT64_C(1) << 40) + 3, UINT64_MAX / 3};
    const int ps[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 1000, 1023};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (size_t j = 0; j < sizeof ps / sizeof *ps; j++) {
            const int p = ps[j], a = (p + 1) / 2;
            LBK_EXPECT_EQ_INT(lbk_toptree_left_ranks(p), a);
            const u128 want = (u128)ns[i] * (u128)a / (u128)p;
            LBK_EXPECT_EQ_U64(lbk_toptree_left_points(ns[i], p), (uint64_t)want, "n %llu p %d",
                              (unsigned long long)ns[i], p);
        }
    for (int p = 1; p <= 40; p++) {
        const uint64_t n = 1000 + (uint64_t)p * 37;
        lbk_toptree t;
        LBK_ASSERT_EQ_INT(lbk_toptree_shape(&t, p, 3, n), LBK_OK);
        LBK_EXPECT_EQ_INT(t.count, 2 * p - 1);
        int next_rank = 0, levels = 0;
        for (int q = 1; q < p; q *= 2)
            levels++;
        LBK_EXPECT_EQ_INT(lbk_toptree_levels(&t), levels, "%d ranks", p);
        for (int i = 0; i < t.count; i++) {
            const lbk_toptree_node *nd = &t.nodes[i];
            if (nd->ranks > 1) {
                const lbk_toptree_node *l = &t.nodes[nd->left], *r = &t.nodes[nd->right];
                LBK_EXPECT_EQ_U64(l->points + r->points, nd->points);
                LBK_EXPECT_EQ_INT(l->first, nd->first);
                LBK_EXPECT_EQ_INT(r->first, nd->first + l->ranks);
                LBK_EXPECT_EQ_INT(l->ranks + r->ranks, nd->ranks);
                continue;
            }
            const double share = (double)n / p;
            LBK_EXPECT_NEAR((double)nd->points, share, levels, "rank %d of %d", nd->first, p);
            next_rank++;
        }
        LBK_EXPECT_EQ_INT(next_rank, p);
        lbk_toptree_free(&t);
    }
}

/* The key a device that flushes subnormals would compute. */
static float ftz(float x) { return fabsf(x) < FLT_MIN ? 0.0f : x; }

static float ftz_key(const float *a, const float *b, int dim, int metric)
{
    float s = 0.0f;
    for (int j = 0; j < dim; j++) {
        const float d = ftz(ftz(a[j]) - ftz(b[j]));
        if (metric == 0) {
            volatile float sq = ftz(d * d);
            s = ftz(s + sq);
        } else if (metric == 1) {
            s = ftz(s + fabsf(d));
        } else {
            s = fmaxf(s, fabsf(d));
        }
    }
    return s;
}

/* One random box, a point in it (some coordinates on its faces), a query
 * anywhere: the box key is at most the point's key, with or without
 * flushing, and equals the key of the box's nearest point at normal scale. */
static int box_key_trial(lbk_test_rng *rng, float scale, int dim, int metric)
{
    float lo[8], hi[8], p[8], q[8], near[8];
    for (int j = 0; j < dim; j++) {
        const float a = rng_range(rng, -scale, scale), b = rng_range(rng, -scale, scale);
        lo[j] = a < b ? a : b;
        hi[j] = a < b ? b : a;
        const uint64_t where = lbk_test_rng_below(rng, 4);
        p[j] = where == 0 ? lo[j] : where == 1 ? hi[j] : rng_range(rng, lo[j], hi[j]);
        p[j] = p[j] < lo[j] ? lo[j] : p[j] > hi[j] ? hi[j] : p[j];
        q[j] = rng_range(rng, -3 * scale, 3 * scale);
        near[j] = q[j] < lo[j] ? lo[j] : q[j] > hi[j] ? hi[j] : q[j];
    }
    const lbk_metric m = metric == 0   ? LBK_METRIC_L2
                         : metric == 1 ? LBK_METRIC_L1
                                       : LBK_METRIC_LINF;
    const float bk = lbk_toptree_box_key(q, lo, hi, dim, m);
    const float key = oracle_key(q, p, dim, metric);
    int ok = LBK_EXPECT_TRUE(bk <= key, "box key %a above the point's key %a (scale %g)",
                             (double)bk, (double)key, (double)scale);
    ok &= LBK_EXPECT_TRUE(bk <= ftz_key(q, p, dim, metric), "box key %a above a flushing key %a",
                          (double)bk, (double)ftz_key(q, p, dim, metric));
    if (scale >= 1e-3f && scale <= 1e3f)
        ok &= LBK_EXPECT_EQ_FLOAT(bk, oracle_key(q, near, dim, metric), "nearest point");
    return ok;
}

static void case_box_key_lower_bound(void)
{
    lbk_test_rng rng = LBK_TEST_RNG(5);
    const float scales[] = {1.0f, 1e3f, 1e-3f, 1e-20f, 1e-39f, 1e19f, 1e38f};
    for (size_t s = 0; s < sizeof scales / sizeof *scales; s++)
        for (int metric = 0; metric < 3; metric++)
            for (int i = 0; i < 20000; i++)
                if (!box_key_trial(&rng, scales[s], 1 + (int)lbk_test_rng_below(&rng, 6), metric))
                    return;
    /* Inside the box: 0; integer grids: exact. */
    const float lo[3] = {0, 0, 0}, hi[3] = {2, 2, 2}, in[3] = {1, 2, 0}, out[3] = {-1, 4, 1};
    LBK_EXPECT_EQ_FLOAT(lbk_toptree_box_key(in, lo, hi, 3, LBK_METRIC_L2), 0.0f);
    LBK_EXPECT_EQ_FLOAT(lbk_toptree_box_key(out, lo, hi, 3, LBK_METRIC_L2), 5.0f);
    LBK_EXPECT_EQ_FLOAT(lbk_toptree_box_key(out, lo, hi, 3, LBK_METRIC_L1), 3.0f);
    LBK_EXPECT_EQ_FLOAT(lbk_toptree_box_key(out, lo, hi, 3, LBK_METRIC_LINF), 2.0f);
}

static lbk_toptree_node *node(lbk_toptree *t, int i) { return &t->nodes[i]; }

/* Hand-set planes: 3 ranks, 10 points in 2-D. Root (ranks 0-2): dim 0 at
 * 5.0 from id 4; left child (ranks 0-1): dim 1 at 2.0 from id 7. */
static void case_walks(void)
{
    lbk_toptree t;
    LBK_ASSERT_EQ_INT(lbk_toptree_shape(&t, 3, 2, 10), LBK_OK);
    LBK_ASSERT_EQ_INT(node(&t, 0)->ranks, 3);
    LBK_ASSERT_EQ_INT(node(&t, 1)->ranks, 2);
    node(&t, 0)->dim = 0;
    node(&t, 0)->image = lbk_toptree_order_image(5.0f);
    node(&t, 0)->id = 4;
    node(&t, 1)->dim = 1;
    node(&t, 1)->image = lbk_toptree_order_image(2.0f);
    node(&t, 1)->id = 7;
    const float a[2] = {4.0f, 1.0f}, b[2] = {4.0f, 2.0f}, c[2] = {5.0f, 0.0f},
                d[2] = {6.0f, 9.0f};
    LBK_EXPECT_EQ_INT(lbk_toptree_owner(&t, a, 9), 0);
    LBK_EXPECT_EQ_INT(lbk_toptree_owner(&t, b, 6), 0, "tie on the plane, smaller id: left");
    LBK_EXPECT_EQ_INT(lbk_toptree_owner(&t, b, 7), 1, "the plane's own point: right");
    LBK_EXPECT_EQ_INT(lbk_toptree_owner(&t, c, 3), 0, "x = 5 with id 3 < 4: left");
    LBK_EXPECT_EQ_INT(lbk_toptree_owner(&t, c, 4), 2, "x = 5 with id 4: right");
    LBK_EXPECT_EQ_INT(lbk_toptree_owner(&t, d, 0), 2);
    LBK_EXPECT_EQ_INT(lbk_toptree_home(&t, a), 0);
    LBK_EXPECT_EQ_INT(lbk_toptree_home(&t, b), 1, "equal to the plane: right");
    LBK_EXPECT_EQ_INT(lbk_toptree_home(&t, c), 2, "equal to the plane: right");
    LBK_EXPECT_EQ_INT(lbk_toptree_home(&t, d), 2);
    lbk_toptree_free(&t);
    /* One point, two ranks: the left child is empty, every query goes right. */
    LBK_ASSERT_EQ_INT(lbk_toptree_shape(&t, 2, 1, 1), LBK_OK);
    LBK_EXPECT_EQ_U64(node(&t, 1)->points, 0u);
    node(&t, 0)->image = lbk_toptree_order_image(3.0f);
    const float left_of_it[1] = {-100.0f};
    LBK_EXPECT_EQ_INT(lbk_toptree_home(&t, left_of_it), 1);
    lbk_toptree_free(&t);
}

/* lbk_toptree_near against a scan of every rank, with random boxes (some
 * ranks empty) and bounds that include a rank's exact box key. */
static void case_near_matches_scan(void)
{
    lbk_test_rng rng = LBK_TEST_RNG(23);
    for (int trial = 0; trial < 3000; trial++) {
        const int p = 2 + (int)lbk_test_rng_below(&rng, 12);
        const int dim = 1 + (int)lbk_test_rng_below(&rng, 4);
        const lbk_metric m = (lbk_metric)lbk_test_rng_below(&rng, 3);
        lbk_toptree t;
        LBK_ASSERT_EQ_INT(lbk_toptree_shape(&t, p, dim, (uint64_t)p * 3), LBK_OK);
        for (int r = 0; r < p; r++) {
            t.owned[r] = lbk_test_rng_below(&rng, 5) ? 3 : 0;
            for (int j = 0; j < dim; j++) {
                float *lo = &t.lo[r * dim + j], *hi = &t.hi[r * dim + j];
                *lo = t.owned[r] ? rng_range(&rng, 0, 10) : INFINITY;
                *hi = t.owned[r] ? *lo + rng_range(&rng, 0, 2) : -INFINITY;
            }
        }
        lbk_toptree_set_node_boxes(&t);
        float q[4];
        for (int j = 0; j < dim; j++)
            q[j] = rng_range(&rng, -2, 12);
        const int skip = (int)lbk_test_rng_below(&rng, (uint64_t)p);
        const int pick = (int)lbk_test_rng_below(&rng, (uint64_t)p);
        const uint64_t how = lbk_test_rng_below(&rng, 3);
        const float *plo = &t.lo[pick * dim], *phi = &t.hi[pick * dim];
        const float bound = how == 0   ? INFINITY
                            : how == 1 ? lbk_toptree_box_key(q, plo, phi, dim, m)
                                       : rng_range(&rng, 0, 30);
        int got[16], want[16], nwant = 0;
        const int ngot = lbk_toptree_near(&t, q, bound, m, skip, got);
        for (int r = 0; r < p; r++)
            if (r != skip && t.owned[r] &&
                lbk_toptree_box_key(q, &t.lo[r * dim], &t.hi[r * dim], dim, m) <= bound)
                want[nwant++] = r;
        const int ok =
            LBK_EXPECT_EQ_INT(ngot, nwant, "trial %d", trial) &&
            LBK_EXPECT_EQ_MEM(got, want, (size_t)nwant * sizeof *got, "trial %d", trial);
        lbk_toptree_free(&t);
        if (!ok)
            return;
    }
}

static const lbk_test_case cases[] = {
    {"order_image", case_order_image},
    {"split_counts", case_split_counts},
    {"box_key_lower_bound", case_box_key_lower_bound},
    {"walks", case_walks},
    {"near_matches_scan", case_near_matches_scan},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
