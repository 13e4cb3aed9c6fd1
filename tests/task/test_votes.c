/* src/task/votes: a slice's votes (predictions, probabilities, the tally of
 * top-1, top-5 and confusion) and averaged targets, against an oracle of
 * its own written from the rules of docs/design.md section 2 (a score
 * array indexed by label, weights added in slot order, classes ranked by a
 * full sort), not from src/core's code. Metric L1, whose key is the
 * distance, so that every weight is the same double both ways. */
#include "lbk_test.h"
#include "votes.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { LABELS = 7, STRIDE = 9, QUERIES = 300 };

/* ---- the oracle ---- */

static bool pad(const lbk_knn_candidate *c) { return c->id == UINT64_MAX; }

/* Each label's summed weight of the first k slots of `list`. */
static void oracle_scores(const lbk_knn_candidate *list, int k, lbk_weights w, double temperature,
                          double *score)
{
    bool zero = false;
    double nearest = INFINITY;
    for (int j = 0; j < k; j++)
        if (!pad(&list[j])) {
            zero |= list[j].key == 0.0f;
            nearest = fmin(nearest, (double)list[j].key);
        }
    for (int c = 0; c < LABELS; c++)
        score[c] = 0.0;
    for (int j = 0; j < k; j++) {
        if (pad(&list[j]))
            continue;
        const double d = (double)list[j].key;
        double weight = 1.0;
        if (w == LBK_WEIGHTS_DISTANCE)
            weight = zero ? (d == 0.0 ? 1.0 : 0.0) : 1.0 / d;
        else if (w == LBK_WEIGHTS_SOFTMAX)
            weight = exp((-d - -nearest) / temperature);
        score[list[j].label] += weight;
    }
}

static const double *sort_scores; /* qsort's context */

static int by_rank(const void *a, const void *b)
{
    const int x = *(const int *)a, y = *(const int *)b;
    if (sort_scores[x] != sort_scores[y])
        return sort_scores[x] > sort_scores[y] ? -1 : 1;
    return x - y;
}

/* The labels by score descending, ties to the smaller label. */
static void oracle_rank(const double *score, int *order)
{
    for (int c = 0; c < LABELS; c++)
        order[c] = c;
    sort_scores = score;
    qsort(order, LABELS, sizeof *order, by_rank);
}

static bool any_voter(const lbk_knn_candidate *list, int k)
{
    for (int j = 0; j < k; j++)
        if (!pad(&list[j]))
            return true;
    return false;
}

/* ---- the slices ---- */

/* Random lists of `STRIDE` sorted L1 keys with repeated labels and keys
 * (ties), zero distances and padding tails (at least `least` real slots). */
static void make_lists(lbk_knn_candidate *lists, double *targets_all, uint64_t seed, int least)
{
    lbk_test_rng rng = LBK_TEST_RNG(seed);
    for (int q = 0; q < QUERIES; q++) {
        const int real = least + (int)lbk_test_rng_below(&rng, (uint64_t)(STRIDE + 1 - least));
        const bool zero = lbk_test_rng_below(&rng, 5) == 0;
        float key = zero ? 0.0f : 0.25f * (float)(1 + lbk_test_rng_below(&rng, 4));
        for (int j = 0; j < STRIDE; j++) {
            lbk_knn_candidate *c = &lists[q * STRIDE + j];
            if (j >= real) {
                *c = (lbk_knn_candidate){INFINITY, -1, UINT64_MAX};
                targets_all[q * STRIDE + j] = 0.0;
                continue;
            }
            key += 0.5f * (float)lbk_test_rng_below(&rng, 3); /* equal keys too */
            *c = (lbk_knn_candidate){key, (int32_t)lbk_test_rng_below(&rng, LABELS),
                                     (uint64_t)(q * STRIDE + j)};
            targets_all[q * STRIDE + j] = (double)lbk_test_rng_below(&rng, 1000) / 8.0 - 60.0;
        }
    }
}

typedef struct {
    const char *name;
    lbk_weights weights;
    int k;
    double temperature;
} votes_case;

static const votes_case cases[] = {
    {"uniform_k9", LBK_WEIGHTS_UNIFORM, 9, 0},   {"uniform_k4", LBK_WEIGHTS_UNIFORM, 4, 0},
    {"distance_k9", LBK_WEIGHTS_DISTANCE, 9, 0}, {"distance_k5", LBK_WEIGHTS_DISTANCE, 5, 0},
    {"softmax_k9", LBK_WEIGHTS_SOFTMAX, 9, 0.3}, {"softmax_k1", LBK_WEIGHTS_SOFTMAX, 1, 2.0},
};

/* Every output at once, in two slices (query order must carry over),
 * against the oracle query by query. */
static void run_classify(const void *row)
{
    const votes_case *c = row;
    static lbk_knn_candidate lists[QUERIES * STRIDE];
    static double unused[QUERIES * STRIDE], proba[QUERIES * LABELS];
    static int32_t predictions[QUERIES], truth[QUERIES];
    make_lists(lists, unused, 11u + (uint64_t)c->k, 0);
    for (int q = 0; q < QUERIES; q++)
        truth[q] = (int32_t)((q * 5) % (LABELS + 1)); /* LABELS: no matrix row */
    const lbk_votes v = {{LBK_METRIC_L1, c->weights, c->temperature}, c->k, STRIDE, LABELS};
    lbk_classify_confusion tally;
    LBK_ASSERT_EQ_INT(lbk_classify_confusion_init(&tally, LABELS), LBK_OK);
    const uint64_t cut = 123;
    const lbk_votes_labels a = {predictions, proba, truth, &tally};
    const lbk_votes_labels b = {predictions + cut, proba + cut * LABELS, truth + cut, &tally};
    LBK_EXPECT_EQ_INT(lbk_votes_classify(&v, lists, cut, &a), LBK_OK);
    LBK_EXPECT_EQ_INT(lbk_votes_classify(&v, lists + cut * STRIDE, QUERIES - cut, &b), LBK_OK);
    uint64_t correct = 0, top5 = 0, other = 0, matrix[LABELS][LABELS] = {{0}};
    for (int q = 0; q < QUERIES; q++) {
        double score[LABELS], total = 0.0;
        int order[LABELS];
        oracle_scores(lists + q * STRIDE, c->k, c->weights, c->temperature, score);
        oracle_rank(score, order);
        const int32_t want = any_voter(lists + q * STRIDE, c->k) ? order[0] : -1;
        LBK_EXPECT_EQ_INT(predictions[q], want, "query %d", q);
        for (int l = 0; l < LABELS; l++)
            total += score[l];
        for (int l = 0; l < LABELS; l++)
            LBK_EXPECT_NEAR(proba[q * LABELS + l], total > 0 ? score[l] / total : 0.0, 1e-15,
                            "query %d, class %d", q, l);
        correct += truth[q] == want;
        for (int r = 0; r < 5; r++)
            top5 += order[r] == truth[q];
        if (truth[q] < LABELS && want >= 0)
            matrix[truth[q]][want]++;
        else
            other++;
    }
    LBK_EXPECT_EQ_U64(tally.total, QUERIES);
    LBK_EXPECT_EQ_U64(tally.correct, correct);
    LBK_EXPECT_EQ_U64(tally.correct_top5, top5);
    LBK_EXPECT_EQ_U64(tally.other, other);
    LBK_EXPECT_EQ_MEM(tally.matrix, matrix, sizeof matrix);
    lbk_classify_confusion_free(&tally);
}

/* The oracle's average of the first k targets (distance: 1/d, or the
 * zero-distance neighbours alone); NaN with no neighbour. */
static double oracle_value(const lbk_knn_candidate *list, const double *targets, int k,
                           bool by_distance)
{
    bool zero = false;
    for (int j = 0; j < k; j++)
        zero |= !pad(&list[j]) && list[j].key == 0.0f;
    double sum = 0.0, weights = 0.0;
    for (int j = 0; j < k; j++) {
        if (pad(&list[j]))
            continue;
        const double d = (double)list[j].key;
        const double w = !by_distance ? 1.0 : zero ? (d == 0.0) : 1.0 / d;
        sum += w * targets[j];
        weights += w;
    }
    return weights > 0.0 ? sum / weights : NAN;
}

/* Values and scores, the targets k per query as lbk_targets_lookup lays
 * them out while the lists are STRIDE apart. */
static void run_regress(const void *row)
{
    const votes_case *c = row;
    if (c->weights == LBK_WEIGHTS_SOFTMAX)
        return; /* regression weighs uniform or by distance */
    static lbk_knn_candidate lists[QUERIES * STRIDE];
    static double all[QUERIES * STRIDE], targets[QUERIES * STRIDE], values[QUERIES];
    static double truth[QUERIES];
    make_lists(lists, all, 29u + (uint64_t)c->k, 1);
    for (int q = 0; q < QUERIES; q++) {
        for (int j = 0; j < c->k; j++)
            targets[q * c->k + j] = all[q * STRIDE + j];
        truth[q] = (double)(q % 13) - 6.0;
    }
    const lbk_votes v = {{LBK_METRIC_L1, c->weights, 0}, c->k, STRIDE, 0};
    lbk_regress_score score = {0};
    const lbk_votes_values out = {values, truth, &score};
    LBK_EXPECT_EQ_INT(lbk_votes_regress(&v, lists, targets, QUERIES, &out), LBK_OK);
    const bool by_distance = c->weights == LBK_WEIGHTS_DISTANCE;
    double squared = 0.0, absolute = 0.0, mean = 0.0;
    for (int q = 0; q < QUERIES; q++) {
        const double want = oracle_value(lists + q * STRIDE, all + q * STRIDE, c->k, by_distance);
        LBK_EXPECT_NEAR(values[q], want, 1e-12, "query %d", q);
        squared += (truth[q] - want) * (truth[q] - want);
        absolute += fabs(truth[q] - want);
        mean += truth[q] / QUERIES;
    }
    LBK_EXPECT_EQ_U64(score.count, QUERIES);
    LBK_EXPECT_NEAR(score.squared_error, squared, 1e-9);
    LBK_EXPECT_NEAR(score.absolute_error, absolute, 1e-9);
    LBK_EXPECT_NEAR(score.mean, mean, 1e-12);
}

static void run_both(const void *row)
{
    run_classify(row);
    run_regress(row);
}

/* Nothing wanted, nothing written; a list of padding alone votes -1 with
 * probabilities all 0 and no value. */
static void case_padding_and_nulls(void)
{
    const lbk_knn_candidate list[2] = {{INFINITY, -1, UINT64_MAX}, {INFINITY, -1, UINT64_MAX}};
    const lbk_votes v = {{LBK_METRIC_L2, LBK_WEIGHTS_DISTANCE, 0}, 2, 2, 3};
    int32_t label = 5;
    double p[3] = {9, 9, 9}, value = 0.0;
    const double targets[2] = {1.0, 2.0};
    const lbk_votes_labels none = {NULL, NULL, NULL, NULL};
    LBK_EXPECT_EQ_INT(lbk_votes_classify(&v, list, 1, &none), LBK_OK);
    const lbk_votes_labels out = {&label, p, NULL, NULL};
    LBK_EXPECT_EQ_INT(lbk_votes_classify(&v, list, 1, &out), LBK_OK);
    LBK_EXPECT_EQ_INT(label, -1);
    LBK_EXPECT_EQ_DOUBLE(p[0] + p[1] + p[2], 0.0);
    const lbk_votes_values values = {&value, NULL, NULL};
    LBK_EXPECT_EQ_INT(lbk_votes_regress(&v, list, targets, 1, &values), LBK_OK);
    LBK_EXPECT_TRUE(isnan(value));
    LBK_EXPECT_EQ_INT(lbk_votes_classify(&v, list, 0, &out), LBK_OK);
}

/* Parameters no door passes: refused, nothing written. */
static void case_refused(void)
{
    const lbk_knn_candidate list[1] = {{1.0f, 0, 0}};
    int32_t label = 5;
    const lbk_votes_labels out = {&label, NULL, NULL, NULL};
    const lbk_votes wide = {{LBK_METRIC_L1, LBK_WEIGHTS_UNIFORM, 0}, 2, 1, 1};
    LBK_EXPECT_EQ_INT(lbk_votes_classify(&wide, list, 1, &out), LBK_ERR_INTERNAL);
    const lbk_votes none = {{LBK_METRIC_L1, LBK_WEIGHTS_UNIFORM, 0}, 0, 1, 1};
    LBK_EXPECT_EQ_INT(lbk_votes_classify(&none, list, 1, &out), LBK_ERR_INTERNAL);
    LBK_EXPECT_EQ_INT(label, 5);
}

/* Radius lists: RQ queries of 0 to beyond LBK_K_MAX neighbours (sorted L1
 * keys, ties and zero distances as make_lists), every neighbour voting. */
enum { RQ = 24, RADIUS_MOST = LBK_K_MAX + 700 };

static uint64_t make_radius_lists(lbk_knn_candidate *lists, double *targets, uint64_t *offsets)
{
    lbk_test_rng rng = LBK_TEST_RNG(4001);
    uint64_t at = 0;
    for (int q = 0; q < RQ; q++) {
        offsets[q] = at;
        const uint64_t n = q % 6 == 0   ? 0
                           : q % 6 == 1 ? LBK_K_MAX + lbk_test_rng_below(&rng, 700)
                                        : lbk_test_rng_below(&rng, 40);
        float key = lbk_test_rng_below(&rng, 4) == 0 ? 0.0f : 0.5f;
        for (uint64_t j = 0; j < n; j++, at++) {
            key += 0.25f * (float)lbk_test_rng_below(&rng, 2);
            lists[at] = (lbk_knn_candidate){key, (int32_t)lbk_test_rng_below(&rng, LABELS), at};
            targets[at] = (double)lbk_test_rng_below(&rng, 1000) / 8.0 - 60.0;
        }
    }
    offsets[RQ] = at;
    return at;
}

/* Every weight, and an outlier label that is a class, no class
 * (>= LABELS: predicted, probabilities 0) and none (-1). */
static void case_radius(void)
{
    static lbk_knn_candidate lists[RQ * RADIUS_MOST];
    static double targets[RQ * RADIUS_MOST];
    uint64_t offsets[RQ + 1];
    make_radius_lists(lists, targets, offsets);
    const lbk_weights weights[] = {LBK_WEIGHTS_UNIFORM, LBK_WEIGHTS_DISTANCE};
    const int32_t outliers[] = {3, LABELS + 2, -1};
    for (int w = 0; w < 2; w++)
        for (int o = 0; o < 3; o++) {
            const lbk_votes_radius v = {{LBK_METRIC_L1, weights[w], 0}, LABELS, outliers[o]};
            int32_t labels[RQ];
            double proba[RQ * LABELS], values[RQ];
            const lbk_votes_labels out = {labels, proba, NULL, NULL};
            /* Two slices: the offsets need not start at 0. */
            LBK_EXPECT_EQ_INT(lbk_votes_radius_classify(&v, lists, offsets, 7, &out), LBK_OK);
            const lbk_votes_labels rest = {labels + 7, proba + 7 * LABELS, NULL, NULL};
            LBK_EXPECT_EQ_INT(lbk_votes_radius_classify(&v, lists, offsets + 7, RQ - 7, &rest),
                              LBK_OK);
            uint64_t empty = 99;
            const lbk_votes_values vout = {values, NULL, NULL};
            LBK_EXPECT_EQ_INT(
                lbk_votes_radius_regress(&v, lists, targets, offsets, RQ, &vout, &empty), LBK_OK);
            LBK_EXPECT_EQ_U64(empty, (RQ + 5) / 6);
            for (int q = 0; q < RQ; q++) {
                const int n = (int)(offsets[q + 1] - offsets[q]);
                double score[LABELS], total = 0.0;
                int order[LABELS];
                oracle_scores(lists + offsets[q], n, weights[w], 0, score);
                if (n == 0 && outliers[o] >= 0 && outliers[o] < LABELS)
                    score[outliers[o]] = 1.0;
                oracle_rank(score, order);
                const int32_t want = n > 0 ? order[0] : outliers[o];
                LBK_EXPECT_EQ_INT(labels[q], want, "weights %d, outlier %d, query %d", w,
                                  outliers[o], q);
                for (int l = 0; l < LABELS; l++)
                    total += score[l];
                for (int l = 0; l < LABELS; l++)
                    LBK_EXPECT_NEAR(proba[q * LABELS + l], total > 0 ? score[l] / total : 0.0,
                                    1e-12, "query %d, class %d", q, l);
                const double value = oracle_value(lists + offsets[q], targets + offsets[q], n,
                                                  weights[w] == LBK_WEIGHTS_DISTANCE);
                if (n == 0)
                    LBK_EXPECT_TRUE(isnan(values[q]), "query %d", q);
                else
                    LBK_EXPECT_NEAR(values[q], value, 1e-9, "query %d", q);
            }
        }
}

static const lbk_test_case other_cases[] = {
    {"padding_and_nulls", case_padding_and_nulls},
    {"refused", case_refused},
    {"radius", case_radius},
};

LBK_TEST_MAIN(LBK_TEST_ROWS(cases, run_both), LBK_TEST_CASES(other_cases))
