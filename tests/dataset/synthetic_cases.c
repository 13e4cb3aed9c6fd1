/* The synthetic generator: rows are a pure function of (seed, set, row). */
#include "cases.h"
#include "lbk_test.h"
#include "testkit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lbk_job_synthetic_spec spec(uint64_t seed)
{
    return (lbk_job_synthetic_spec){
        .points = 500, .queries = 200, .dim = 7, .classes = 4, .seed = seed, .spread = 2.0};
}

static bool same_rows(const lbk_dataset *a, uint64_t a_first, const lbk_dataset *b)
{
    for (uint64_t i = 0; i < b->rows; i++) {
        if (a->labels[a_first + i] != b->labels[i])
            return false;
        if (memcmp(a->points + (a_first + i) * (uint64_t)a->dim, b->points + i * (uint64_t)b->dim,
                   sizeof(float) * (size_t)b->dim) != 0)
            return false;
    }
    return true;
}

static void case_ranges(void)
{
    lbk_job_synthetic_spec s = spec(42);
    for (int q = 0; q < 2; q++) {
        uint64_t n = q ? s.queries : s.points;
        lbk_dataset all;
        LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s, q, 0, n, &all), LBK_OK);
        LBK_EXPECT_EQ_U64(all.rows, n);
        LBK_EXPECT_EQ_INT(all.dim, s.dim);
        LBK_EXPECT_EQ_U64(all.first_row, 0);
        LBK_EXPECT_TRUE(all.labels != NULL);
        /* Shards as 3 ranks would cut them, and some awkward ranges. */
        const uint64_t cuts[][2] = {{0, n / 3}, {n / 3, 2 * n / 3}, {2 * n / 3, n}, {0, 0},
                                    {n, n},     {n - 1, n},         {17, 18},       {1, n - 1}};
        for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
            lbk_dataset part;
            LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s, q, cuts[c][0], cuts[c][1], &part), LBK_OK);
            LBK_EXPECT_EQ_U64(part.rows, cuts[c][1] - cuts[c][0], "cut %zu", c);
            LBK_EXPECT_EQ_U64(part.first_row, cuts[c][0], "cut %zu", c);
            LBK_EXPECT_TRUE(same_rows(&all, cuts[c][0], &part), "rows [%llu, %llu) of set %d",
                            (unsigned long long)cuts[c][0], (unsigned long long)cuts[c][1], q);
            lbk_dataset_free(&part);
        }
        lbk_dataset_free(&all);
    }
}

static void case_deterministic(void)
{
    lbk_job_synthetic_spec s = spec(7);
    lbk_dataset a, b;
    LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s, false, 0, s.points, &a), LBK_OK);
    LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s, false, 0, s.points, &b), LBK_OK);
    LBK_EXPECT_TRUE(same_rows(&a, 0, &b));
    lbk_dataset_free(&a);
    lbk_dataset_free(&b);
}

static void case_labels_in_range(void)
{
    lbk_job_synthetic_spec s = spec(3);
    lbk_dataset d;
    LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s, false, 0, s.points, &d), LBK_OK);
    int count[4] = {0};
    bool in_range = true, finite = true;
    for (uint64_t i = 0; i < d.rows; i++) {
        in_range = in_range && d.labels[i] >= 0 && d.labels[i] < s.classes;
        if (d.labels[i] >= 0 && d.labels[i] < 4)
            count[d.labels[i]]++;
    }
    for (uint64_t i = 0; i < d.rows * (uint64_t)d.dim; i++)
        finite = finite && isfinite(d.points[i]);
    LBK_EXPECT_TRUE(in_range);
    LBK_EXPECT_TRUE(finite);
    /* Every class appears: 500 rows over 4 classes. */
    for (int c = 0; c < 4; c++)
        LBK_EXPECT_INT(count[c], >, 50, "class %d", c);
    lbk_dataset_free(&d);
}

/* Points cluster: each row lies nearer its own class mean than any other
 * class mean for most rows (spread 0.5 with centres spread over [0, 10)-ish
 * boxes; the test does not assume the exact centre scale). */
static void case_blobs(void)
{
    lbk_job_synthetic_spec s = spec(11);
    s.spread = 0.1;
    lbk_dataset d;
    LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s, false, 0, s.points, &d), LBK_OK);
    double mean[4][7] = {{0}};
    int count[4] = {0};
    for (uint64_t i = 0; i < d.rows; i++) {
        count[d.labels[i]]++;
        for (int j = 0; j < d.dim; j++)
            mean[d.labels[i]][j] += d.points[i * 7 + (uint64_t)j];
    }
    for (int c = 0; c < 4; c++)
        for (int j = 0; j < 7; j++)
            mean[c][j] /= count[c] ? count[c] : 1;
    uint64_t nearest_own = 0;
    double var = 0;
    for (uint64_t i = 0; i < d.rows; i++) {
        int best = -1;
        double best_d = INFINITY;
        for (int c = 0; c < 4; c++) {
            double dist = 0;
            for (int j = 0; j < 7; j++) {
                double t = d.points[i * 7 + (uint64_t)j] - mean[c][j];
                dist += t * t;
            }
            if (c == d.labels[i])
                var += dist;
            if (dist < best_d) {
                best_d = dist;
                best = c;
            }
        }
        nearest_own += best == d.labels[i];
    }
    LBK_EXPECT_EQ_U64(nearest_own, d.rows);
    /* Per-coordinate variance matches spread^2 within sampling error. */
    double per_coord = var / (double)(d.rows * 7);
    LBK_EXPECT_TRUE(per_coord > 0.8 * 0.01 && per_coord < 1.2 * 0.01, "variance %g", per_coord);
    lbk_dataset_free(&d);
}

static void case_seeds_and_streams_differ(void)
{
    lbk_job_synthetic_spec s1 = spec(1), s2 = spec(2);
    lbk_dataset a, b, q;
    LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s1, false, 0, 100, &a), LBK_OK);
    LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s2, false, 0, 100, &b), LBK_OK);
    LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s1, true, 0, 100, &q), LBK_OK);
    size_t bytes = sizeof(float) * 100 * 7;
    LBK_EXPECT_INT(memcmp(a.points, b.points, bytes), !=, 0);
    LBK_EXPECT_INT(memcmp(a.points, q.points, bytes), !=, 0);
    /* Not even a single row coincides. */
    bool any_equal = false;
    for (int i = 0; i < 100; i++)
        any_equal = any_equal || memcmp(a.points + i * 7, q.points + i * 7, 28) == 0;
    LBK_EXPECT_FALSE(any_equal);
    lbk_dataset_free(&a);
    lbk_dataset_free(&b);
    lbk_dataset_free(&q);
}

static void case_bad_ranges(void)
{
    lbk_job_synthetic_spec s = spec(1);
    lbk_dataset d;
    tk_capture_begin();
    lbk_status st = lbk_synthetic_rows(&s, true, 0, s.queries + 1, &d);
    char *err = tk_capture_end();
    LBK_EXPECT_EQ_INT(st, LBK_ERR_INPUT);
    LBK_EXPECT_EQ_STR(err, "lbknn: error: synthetic query set: rows [0, 201) requested, but it "
                           "has 200 rows\n");
    free(err);
    s.classes = 0;
    tk_capture_begin();
    LBK_EXPECT_EQ_INT(lbk_synthetic_rows(&s, false, 0, 1, &d), LBK_ERR_CONFIG);
    free(tk_capture_end());
}

static const lbk_test_case cases[] = {
    {"synthetic_ranges", case_ranges},
    {"synthetic_deterministic", case_deterministic},
    {"synthetic_labels_in_range", case_labels_in_range},
    {"synthetic_blobs", case_blobs},
    {"synthetic_seeds_and_streams_differ", case_seeds_and_streams_differ},
    {"synthetic_bad_ranges", case_bad_ranges},
};

const lbk_test_table tk_synthetic_cases = LBK_TEST_CASES(cases);
