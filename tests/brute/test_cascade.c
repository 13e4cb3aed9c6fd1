/* The L2 cascade's host arithmetic (src/engines/cascade.c): the groups are a
 * partition of the dimensions, coarse rows are the halved group sums, and
 * the threshold's inequality holds on data chosen to round badly. The
 * engine's exactness against the oracle is test_brute's cascade_* cases. */
#include "cascade.h"
#include "lbk_test.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Every dimension in exactly one group, at most LBK_CASCADE_GROUP each. */
static void expect_partition(const int *perm, int dim)
{
    const int slots = lbk_cascade_dim(dim) * LBK_CASCADE_GROUP;
    int *seen = calloc((size_t)dim, sizeof *seen);
    LBK_ASSERT_TRUE(seen != NULL);
    for (int s = 0; s < slots; s++) {
        if (perm[s] < 0)
            continue;
        LBK_ASSERT_INT(perm[s], <, dim, "slot %d", s);
        seen[perm[s]]++;
    }
    for (int j = 0; j < dim; j++)
        LBK_EXPECT_EQ_INT(seen[j], 1, "dimension %d of %d", j, dim);
    free(seen);
}

/* Dimension j of a row is the row's value v[j % 7] plus a little noise:
 * dimensions of equal j % 7 correlate closely and the others hardly, so with
 * 16 dimensions in each class (dim 112) every group is one class. */
static void run_grouping_partition(void)
{
    const int dims[] = {1, 3, 4, 5, 17, 64, 112, 784, LBK_CASCADE_GROUPING_MAX_DIM + 3};
    for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
        const int dim = dims[t];
        const size_t rows = 300;
        float *x = malloc(rows * (size_t)dim * sizeof *x);
        int *perm = malloc((size_t)lbk_cascade_dim(dim) * LBK_CASCADE_GROUP * sizeof *perm);
        LBK_ASSERT_TRUE(x && perm);
        lbk_test_rng rng = LBK_TEST_RNG(7u + (uint64_t)dim);
        for (size_t i = 0; i < rows; i++) {
            float v[7];
            for (int c = 0; c < 7; c++)
                v[c] = (float)lbk_test_rng_below(&rng, 1000u);
            for (int j = 0; j < dim; j++)
                x[i * dim + j] = v[j % 7] + (float)lbk_test_rng_below(&rng, 3u);
        }
        LBK_ASSERT_EQ_INT(lbk_cascade_grouping(x, rows, dim, perm), LBK_OK);
        expect_partition(perm, dim);
        if (dim == 112) {
            for (int g = 0; g < lbk_cascade_dim(dim); g++)
                for (int s = 1; s < LBK_CASCADE_GROUP; s++) {
                    const int a = perm[g * LBK_CASCADE_GROUP],
                              b = perm[g * LBK_CASCADE_GROUP + s];
                    if (a >= 0 && b >= 0)
                        LBK_EXPECT_EQ_INT(a % 7, b % 7, "group %d", g);
                }
        }
        free(x);
        free(perm);
    }
}

static void run_coarse_rows(void)
{
    const int dim = 10, perm[12] = {0, 4, 8, -1, 1, 2, 3, 5, 6, 7, 9, -1};
    int group_of[10];
    lbk_cascade_group_of(perm, dim, group_of);
    const float row[10] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
    float out[3];
    lbk_cascade_coarsen(row, dim, group_of, out);
    LBK_EXPECT_EQ_FLOAT(out[0], (1.0f + 16.0f + 256.0f) / 2.0f);
    LBK_EXPECT_EQ_FLOAT(out[1], (2.0f + 4.0f + 8.0f + 32.0f) / 2.0f);
    LBK_EXPECT_EQ_FLOAT(out[2], (64.0f + 128.0f + 512.0f) / 2.0f);
}

/* For random pairs with a large common offset (cancellation) and with
 * values spread over many binades: the coarse distance C~ of the rounded
 * coarse rows, in double, never exceeds the threshold made from the pair's
 * own float exact key, kth * slope + eps, evaluated in float as the kernel
 * does. (The bound kernel's value is below C~ by its own proof.) */
static void run_threshold_holds(void)
{
    const int dims[] = {5, 64, 784, 4099};
    lbk_test_rng rng = LBK_TEST_RNG(99u);
    for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
        const int dim = dims[t], dc = lbk_cascade_dim(dim);
        float *q = malloc((size_t)dim * 2 * sizeof *q), *r = q + dim;
        float *qc = malloc((size_t)dc * 2 * sizeof *qc), *rc = qc + dc;
        int *perm = malloc((size_t)dc * LBK_CASCADE_GROUP * sizeof *perm);
        int *group_of = malloc((size_t)dim * sizeof *group_of);
        LBK_ASSERT_TRUE(q && qc && perm && group_of);
        for (int s = 0; s < dc * LBK_CASCADE_GROUP; s++)
            perm[s] = s < dim ? s : -1;
        lbk_cascade_group_of(perm, dim, group_of);
        const float slope = lbk_cascade_slope(dim);
        for (int trial = 0; trial < 2000; trial++) {
            const bool offset = trial % 2 == 0;
            double qn = 0.0, rn = 0.0;
            for (int j = 0; j < dim; j++) {
                const float a = (float)lbk_test_rng_below(&rng, 2000001u) / 1e6f - 1.0f;
                const float b = (float)lbk_test_rng_below(&rng, 2000001u) / 1e6f - 1.0f;
                const float scale =
                    offset ? 1.0f : ldexpf(1.0f, (int)lbk_test_rng_below(&rng, 40u) - 20);
                q[j] = offset ? 1000.0f + a * 1e-3f : a * scale;
                r[j] = offset ? 1000.0f + b * 1e-3f
                              : (trial % 4 == 1 ? q[j] + b * 1e-6f * scale : b * scale);
                qn += (double)q[j] * q[j];
                rn += (double)r[j] * r[j];
            }
            float key = 0.0f;
            for (int j = 0; j < dim; j++) {
                const float d = q[j] - r[j];
                const float sq = d * d;
                key = key + sq;
            }
            lbk_cascade_coarsen(q, dim, group_of, qc);
            lbk_cascade_coarsen(r, dim, group_of, rc);
            double coarse = 0.0;
            for (int g = 0; g < dc; g++)
                coarse += ((double)qc[g] - rc[g]) * ((double)qc[g] - rc[g]);
            volatile float scaled = key * slope;
            const float threshold = scaled + lbk_cascade_eps(qn, rn);
            if (!LBK_EXPECT_TRUE((double)threshold >= coarse,
                                 "dim %d trial %d: key %.9g, "
                                 "coarse %.17g, threshold %.9g",
                                 dim, trial, (double)key, coarse, (double)threshold))
                break;
        }
        free(q);
        free(qc);
        free(perm);
        free(group_of);
    }
}

static const lbk_test_case cases[] = {
    {"grouping_partition", run_grouping_partition},
    {"coarse_rows", run_coarse_rows},
    {"threshold_holds", run_threshold_holds},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
