/* Radius search's engine layer: the radius as a key bound (radius.h) and
 * both engines' count and fill (engine.h) against the host oracle
 * (tests/oracle), which selects by the reported distance, not the key. */
#include "knn_oracle.h"
#include "lbk_test.h"
#include "radius.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

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

static const lbk_test_case unit_cases[] = {
    {"bound_values", bound_values},
    {"bound_tight", bound_tight},
    {"valid", valid},
};

LBK_TEST_MAIN(LBK_TEST_CASES(unit_cases))
