/* Cosine's row normalisation (src/core/normalize.h), run on every row right
 * after it is read: bit for bit what the independent oracle's
 * oracle_normalize computes, and a zero row left zero (its cosine with
 * anything is then 0, distance 1; dividing it by its norm 0 would make it
 * NaN, distance 2). */
#include "cases.h"
#include "knn_oracle.h"
#include "lbk_test.h"
#include "normalize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 64, DIM = 9 };

/* Rows of every kind: ordinary, tiny (subnormal squares), huge, one
 * non-zero coordinate, negative zeros, and all-zero rows. */
static void make_rows(float *x)
{
    lbk_test_rng rng = LBK_TEST_RNG(0x5eed0f0c05u);
    for (int i = 0; i < ROWS; i++) {
        float *row = x + (size_t)i * DIM;
        const int kind = i % 6;
        for (int j = 0; j < DIM; j++) {
            const float u = lbk_test_rng_unit(&rng) * 2.0f - 1.0f;
            row[j] = kind == 0   ? u
                     : kind == 1 ? u * 1e-30f
                     : kind == 2 ? u * 1e30f
                     : kind == 3 ? (j == i % DIM ? u : 0.0f)
                     : kind == 4 ? (j % 2 ? -0.0f : u)
                                 : (j % 2 ? -0.0f : 0.0f);
        }
    }
}

static void case_cosine_rows_match_oracle(void)
{
    float got[ROWS * DIM], want[ROWS * DIM];
    make_rows(got);
    memcpy(want, got, sizeof got);
    lbk_normalize_rows(got, ROWS, DIM);
    oracle_normalize(want, ROWS, DIM);
    for (int i = 0; i < ROWS * DIM && lbk_test_failures() < 5; i++)
        LBK_EXPECT_EQ_FLOAT(got[i], want[i], "row %d column %d", i / DIM, i % DIM);
}

static void case_cosine_zero_row_stays_zero(void)
{
    float rows[4][3] = {{0.0f, 0.0f, 0.0f}, {3.0f, 0.0f, 4.0f}, {-0.0f, 0.0f, -0.0f}, {0, 0, 0}};
    const float want[4][3] = {
        {0.0f, 0.0f, 0.0f}, {0.6f, 0.0f, 0.8f}, {-0.0f, 0.0f, -0.0f}, {0, 0, 0}};
    lbk_normalize_rows(&rows[0][0], 4, 3);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            LBK_EXPECT_EQ_FLOAT(rows[i][j], want[i][j], "row %d column %d", i, j);
    /* A one-dimensional zero row too (the loop's bounds). */
    float one = 0.0f;
    lbk_normalize_rows(&one, 1, 1);
    LBK_EXPECT_EQ_FLOAT(one, 0.0f);
}

static const lbk_test_case cases[] = {
    {"cosine_rows_match_oracle", case_cosine_rows_match_oracle},
    {"cosine_zero_row_stays_zero", case_cosine_zero_row_stays_zero},
};

const lbk_test_table tk_normalize_cases = LBK_TEST_CASES(cases);
