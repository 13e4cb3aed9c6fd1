/* Vote rules against hand-computed cases (scikit-learn KNeighborsClassifier
 * semantics, and the softmax vote of embedding kNN evaluations), top-5
 * membership and class probabilities: one CTest test per case, selected by
 * argv[1]. */
#include "classify.h"
#include "lbk_test.h"

#include <math.h>
#include <stdint.h>

#define PAD                                                                                      \
    {                                                                                            \
        INFINITY, -1, UINT64_MAX                                                                 \
    }

typedef struct {
    const char *name;
    lbk_metric metric;
    lbk_weights weights;
    int k;
    lbk_knn_candidate list[8];
    int32_t expected;
    double temperature; /* softmax only */
} vote_case;

static const vote_case cases[] = {
    /* 2 votes each for labels 2 and 1: the tie goes to the smaller label. */
    {"uniform_tie_smallest",
     LBK_METRIC_L2,
     LBK_WEIGHTS_UNIFORM,
     5,
     {{1, 2, 10}, {2, 1, 11}, {3, 2, 12}, {4, 1, 13}, {5, 3, 14}},
     1,
     0},
    {"uniform_majority",
     LBK_METRIC_L2,
     LBK_WEIGHTS_UNIFORM,
     3,
     {{1, 3, 0}, {2, 3, 1}, {3, 1, 2}},
     3,
     0},
    /* Nearest-first order must not matter for ties: 5,5 then 2,2 -> 2. */
    {"uniform_tie_not_nearest",
     LBK_METRIC_L1,
     LBK_WEIGHTS_UNIFORM,
     5,
     {{1, 5, 0}, {2, 5, 1}, {3, 2, 2}, {4, 2, 3}, {5, 9, 4}},
     2,
     0},
    /* L2 keys 1,4,4 are distances 1,2,2: weights 1 vs 0.5+0.5 -> tie -> 5. */
    {"distance_tie_smallest",
     LBK_METRIC_L2,
     LBK_WEIGHTS_DISTANCE,
     3,
     {{1, 5, 0}, {4, 7, 1}, {4, 7, 2}},
     5,
     0},
    /* Distance weights beat the majority: L1 keys 1 vs 4,4: 1 > 0.25+0.25. */
    {"distance_beats_majority",
     LBK_METRIC_L1,
     LBK_WEIGHTS_DISTANCE,
     3,
     {{1, 8, 0}, {4, 2, 1}, {4, 2, 2}},
     8,
     0},
    /* Any zero distance: only zero-distance neighbours vote, weight 1. */
    {"distance_zero_only",
     LBK_METRIC_L2,
     LBK_WEIGHTS_DISTANCE,
     4,
     {{0, 9, 0}, {1, 3, 1}, {1, 3, 2}, {1, 3, 3}},
     9,
     0},
    {"distance_zero_tie",
     LBK_METRIC_LINF,
     LBK_WEIGHTS_DISTANCE,
     4,
     {{0, 7, 0}, {0, 4, 1}, {0.5f, 4, 2}, {0.5f, 7, 3}},
     4,
     0},
    /* Zero-distance neighbours count one each: 2 for label 4 beat 1 for
     * label 2 (weights 1/0 would tie them at +inf, and the tie would go
     * to 2). */
    {"distance_zero_majority",
     LBK_METRIC_LINF,
     LBK_WEIGHTS_DISTANCE,
     4,
     {{0, 2, 0}, {0, 4, 1}, {0, 4, 2}, {0.5f, 2, 3}},
     4,
     0},
    /* Padding slots (shard smaller than K) do not vote. */
    {"padding_ignored",
     LBK_METRIC_L2,
     LBK_WEIGHTS_UNIFORM,
     4,
     {{1, 6, 0}, {2, 2, 1}, PAD, PAD},
     2,
     0},
    {"all_padding", LBK_METRIC_L2, LBK_WEIGHTS_UNIFORM, 2, {PAD, PAD}, -1, 0},
    {"k1", LBK_METRIC_L2, LBK_WEIGHTS_DISTANCE, 1, {{2.5f, 11, 5}}, 11, 0},
    /* Softmax over cos (keys -cos): weights exp((cos - 0.9) / T). T = 0.1:
     * 1 vs e^-1 + e^-2 = 0.50 -> 1; T = 1: 1 vs e^-0.1 + e^-0.2 = 1.72 -> 2. */
    {"softmax_cosine_sharp",
     LBK_METRIC_COSINE,
     LBK_WEIGHTS_SOFTMAX,
     3,
     {{-0.9f, 1, 0}, {-0.8f, 2, 1}, {-0.7f, 2, 2}},
     1,
     0.1},
    {"softmax_cosine_flat",
     LBK_METRIC_COSINE,
     LBK_WEIGHTS_SOFTMAX,
     3,
     {{-0.9f, 1, 0}, {-0.8f, 2, 1}, {-0.7f, 2, 2}},
     2,
     1.0},
    /* ip: similarity = dot = -key. T = 1: 1 vs 2e^-1 -> 1; T = 2: 2e^-0.5 = 1.21 -> 2. */
    {"softmax_ip_sharp",
     LBK_METRIC_IP,
     LBK_WEIGHTS_SOFTMAX,
     3,
     {{-10, 1, 0}, {-9, 2, 1}, {-9, 2, 2}},
     1,
     1.0},
    {"softmax_ip_flat",
     LBK_METRIC_IP,
     LBK_WEIGHTS_SOFTMAX,
     3,
     {{-10, 1, 0}, {-9, 2, 1}, {-9, 2, 2}},
     2,
     2.0},
    /* L2: similarity = -distance (sqrt of the key): distances 1, 2, 2.
     * T = 1: 1 vs 2e^-1 -> 3; T = 10: 2e^-0.1 = 1.81 -> 5. */
    {"softmax_l2_sharp",
     LBK_METRIC_L2,
     LBK_WEIGHTS_SOFTMAX,
     3,
     {{1, 3, 0}, {4, 5, 1}, {4, 5, 2}},
     3,
     1.0},
    {"softmax_l2_flat",
     LBK_METRIC_L2,
     LBK_WEIGHTS_SOFTMAX,
     3,
     {{1, 3, 0}, {4, 5, 1}, {4, 5, 2}},
     5,
     10.0},
    /* Weights far below the largest underflow to 0, never to NaN: the
     * nearest decides, padding still ignored. */
    {"softmax_underflow",
     LBK_METRIC_IP,
     LBK_WEIGHTS_SOFTMAX,
     4,
     {{-1000, 4, 0}, {0, 2, 1}, {0, 2, 2}, PAD},
     4,
     0.07},
    /* Equal similarities: equal weights, a tie, the smaller label. */
    {"softmax_tie_smallest",
     LBK_METRIC_COSINE,
     LBK_WEIGHTS_SOFTMAX,
     2,
     {{-0.5f, 8, 0}, {-0.5f, 6, 1}},
     6,
     0.07},
    /* Cosine distance 1 + key: a key of -1 is distance 0, so only it votes. */
    {"distance_cosine_zero",
     LBK_METRIC_COSINE,
     LBK_WEIGHTS_DISTANCE,
     3,
     {{-1, 7, 0}, {-0.99f, 2, 1}, {-0.98f, 2, 2}},
     7,
     0},
    /* Distances 0.2 and 0.5, 0.5: weights 5 vs 2 + 2 -> 7 (a majority
     * would say 2). */
    {"distance_cosine",
     LBK_METRIC_COSINE,
     LBK_WEIGHTS_DISTANCE,
     3,
     {{-0.8f, 7, 0}, {-0.5f, 2, 1}, {-0.5f, 2, 2}},
     7,
     0},
};

static void run_vote(const void *row)
{
    const vote_case *c = row;
    const lbk_classify_rule rule = {c->metric, c->weights, c->temperature};
    lbk_classify_score scratch[8];
    LBK_EXPECT_EQ_INT(lbk_classify_vote(c->list, c->k, &rule, scratch), c->expected);
}

/* lbk_classify_in_top: classes ranked by score, then by the smaller label; classes
 * without neighbours score 0 and rank by label among the zeros. */
static void case_top5(void)
{
    const lbk_classify_score s[] = {{2, 0, 3.0}, {4, 0, 1.0}, {7, 0, 2.0}, {9, 0, 1.0}};
    /* Ranks: 2 (3.0), 7 (2.0), 4 and 9 (1.0: 4 first), then 0, 1, 3, ... */
    LBK_EXPECT_TRUE(lbk_classify_in_top(s, 4, 2, 1));
    LBK_EXPECT_FALSE(lbk_classify_in_top(s, 4, 7, 1));
    LBK_EXPECT_TRUE(lbk_classify_in_top(s, 4, 7, 2));
    LBK_EXPECT_TRUE(lbk_classify_in_top(s, 4, 9, 4));
    LBK_EXPECT_FALSE(lbk_classify_in_top(s, 4, 9, 3));
    LBK_EXPECT_TRUE(lbk_classify_in_top(s, 4, 0, 5));  /* the first class without neighbours */
    LBK_EXPECT_FALSE(lbk_classify_in_top(s, 4, 1, 5)); /* the sixth */
    LBK_EXPECT_FALSE(lbk_classify_in_top(s, 4, 3, 5));
    /* Fewer than 5 classes voted: the smallest labels fill the top 5. */
    const lbk_classify_score one[] = {{5, 0, 1.0}};
    LBK_EXPECT_TRUE(lbk_classify_in_top(one, 1, 5, 5));
    LBK_EXPECT_TRUE(lbk_classify_in_top(one, 1, 3, 5));
    LBK_EXPECT_FALSE(lbk_classify_in_top(one, 1, 4, 5));
    LBK_EXPECT_FALSE(lbk_classify_in_top(one, 1, 6, 5));
    /* A class whose weights are all 0 (zero-distance rule) ranks by label
     * among the zeros too. */
    const lbk_classify_score zero[] = {{1, 0, 0.0}, {3, 0, 2.0}};
    LBK_EXPECT_TRUE(lbk_classify_in_top(zero, 2, 1, 3)); /* 3, 0, 1 */
    LBK_EXPECT_FALSE(lbk_classify_in_top(zero, 2, 1, 2));
    LBK_EXPECT_TRUE(lbk_classify_in_top(zero, 2, 0, 2));
}

/* Class scores and probabilities, as scikit-learn's predict_proba: uniform
 * counts over K, distance weights normalised, zero total all zeros. */
static void case_probabilities(void)
{
    const lbk_knn_candidate list[] = {{1, 2, 10}, {4, 0, 11}, {4, 2, 12}, PAD};
    lbk_classify_score sc[4];
    double p[4];
    const lbk_classify_rule uniform = {LBK_METRIC_L2, LBK_WEIGHTS_UNIFORM, 1.0};
    int n = lbk_classify_scores(list, 4, &uniform, sc);
    LBK_ASSERT_EQ_INT(n, 2);
    LBK_EXPECT_EQ_INT(sc[0].label, 0);
    LBK_EXPECT_EQ_DOUBLE(sc[0].score, 1.0);
    LBK_EXPECT_EQ_INT(sc[1].label, 2);
    LBK_EXPECT_EQ_DOUBLE(sc[1].score, 2.0);
    lbk_classify_probabilities(sc, n, 4, p);
    LBK_EXPECT_EQ_DOUBLE(p[0], 1.0 / 3.0);
    LBK_EXPECT_EQ_DOUBLE(p[1], 0.0);
    LBK_EXPECT_EQ_DOUBLE(p[2], 2.0 / 3.0);
    LBK_EXPECT_EQ_DOUBLE(p[3], 0.0);
    /* Distances 1, 2, 2: weights 1, 0.5, 0.5 -> 0.5 / 2 for class 0. */
    const lbk_classify_rule distance = {LBK_METRIC_L2, LBK_WEIGHTS_DISTANCE, 1.0};
    n = lbk_classify_scores(list, 4, &distance, sc);
    lbk_classify_probabilities(sc, n, 3, p);
    LBK_EXPECT_EQ_DOUBLE(p[0], 0.25);
    LBK_EXPECT_EQ_DOUBLE(p[2], 0.75);
    /* Labels past the columns are left out; nothing to share: all zero. */
    lbk_classify_probabilities(sc, n, 1, p);
    LBK_EXPECT_EQ_DOUBLE(p[0], 1.0);
    const lbk_knn_candidate pads[] = {PAD, PAD};
    n = lbk_classify_scores(pads, 2, &uniform, sc);
    LBK_EXPECT_EQ_INT(n, 0);
    lbk_classify_probabilities(sc, n, 2, p);
    LBK_EXPECT_EQ_DOUBLE(p[0], 0.0);
    LBK_EXPECT_EQ_DOUBLE(p[1], 0.0);
}

/* The zero-distance rule in the scores and probabilities: the neighbours
 * at distance 0 weigh 1 each, the others 0, so every probability is finite
 * (1/0 weights would make them inf / inf = NaN). */
static void case_distance_zero_probabilities(void)
{
    const lbk_knn_candidate list[] = {{0, 2, 10}, {1, 0, 11}, {0, 2, 12}, {0, 1, 13}, {4, 0, 14}};
    lbk_classify_score sc[5];
    double p[3];
    const lbk_classify_rule l2 = {LBK_METRIC_L2, LBK_WEIGHTS_DISTANCE, 1.0};
    const int n = lbk_classify_scores(list, 5, &l2, sc);
    LBK_ASSERT_EQ_INT(n, 3);
    LBK_EXPECT_EQ_INT(sc[0].label, 0);
    LBK_EXPECT_EQ_DOUBLE(sc[0].score, 0.0);
    LBK_EXPECT_EQ_INT(sc[1].label, 1);
    LBK_EXPECT_EQ_DOUBLE(sc[1].score, 1.0);
    LBK_EXPECT_EQ_INT(sc[2].label, 2);
    LBK_EXPECT_EQ_DOUBLE(sc[2].score, 2.0);
    LBK_EXPECT_EQ_INT(lbk_classify_top(sc, n), 2);
    lbk_classify_probabilities(sc, n, 3, p);
    LBK_EXPECT_EQ_DOUBLE(p[0], 0.0);
    LBK_EXPECT_EQ_DOUBLE(p[1], 1.0 / 3.0);
    LBK_EXPECT_EQ_DOUBLE(p[2], 2.0 / 3.0);
    /* One neighbour at distance 0 (cosine: key -1): it takes everything. */
    const lbk_knn_candidate one[] = {{-0.5f, 0, 3}, {-1.0f, 1, 4}};
    const lbk_classify_rule cosine = {LBK_METRIC_COSINE, LBK_WEIGHTS_DISTANCE, 1.0};
    const int m = lbk_classify_scores(one, 2, &cosine, sc);
    LBK_ASSERT_EQ_INT(m, 2);
    lbk_classify_probabilities(sc, m, 2, p);
    LBK_EXPECT_EQ_DOUBLE(p[0], 0.0);
    LBK_EXPECT_EQ_DOUBLE(p[1], 1.0);
    /* Top-5 counts with the same scores: class 0's weight 0 ranks it among
     * the classes without neighbours. */
    LBK_EXPECT_TRUE(lbk_classify_in_top(sc, m, 1, 1));
    LBK_EXPECT_FALSE(lbk_classify_in_top(sc, m, 0, 1));
}

/* Each class's weights are summed in slot order, whatever order its slots
 * come in the list: the same doubles, bit for bit, on every rank count. */
static void case_sum_order(void)
{
    const lbk_knn_candidate list[] = {{-0.9f, 3, 5}, {-0.8f, 1, 2}, {-0.7f, 3, 9}, {-0.6f, 3, 1}};
    lbk_classify_score sc[4];
    const lbk_classify_rule rule = {LBK_METRIC_COSINE, LBK_WEIGHTS_SOFTMAX, 0.07};
    const int n = lbk_classify_scores(list, 4, &rule, sc);
    LBK_ASSERT_EQ_INT(n, 2);
    double want = 0.0;
    const double cos[] = {0.9f, 0.7f, 0.6f};
    for (int i = 0; i < 3; i++)
        want += exp((cos[i] - (double)0.9f) / 0.07);
    LBK_EXPECT_EQ_INT(sc[1].label, 3);
    LBK_EXPECT_EQ_DOUBLE(sc[1].score, want);
    LBK_EXPECT_EQ_INT(sc[1].slot, 0);
}

/* Lists short and long (the votes are sorted two ways, by length): every
 * class's count, in ascending label order, each with its first slot. */
static void case_long_lists(void)
{
    enum { KMAX = 100, LABELS = 13 };
    lbk_knn_candidate list[KMAX];
    lbk_classify_score sc[KMAX];
    const lbk_classify_rule uniform = {LBK_METRIC_L2, LBK_WEIGHTS_UNIFORM, 1.0};
    const int ks[] = {2, 31, 32, 33, KMAX};
    for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
        const int k = ks[t];
        int count[LABELS] = {0}, first[LABELS];
        for (int i = 0; i < k; i++) {
            const int32_t label = (int32_t)((i * 7 + 3) % LABELS);
            list[i] = (lbk_knn_candidate){(float)i, label, (uint64_t)i};
            if (count[label]++ == 0)
                first[label] = i;
        }
        const int n = lbk_classify_scores(list, k, &uniform, sc);
        int c = 0;
        for (int label = 0; label < LABELS; label++) {
            if (count[label] == 0)
                continue;
            LBK_ASSERT_TRUE(c < n);
            LBK_EXPECT_EQ_INT(sc[c].label, label);
            LBK_EXPECT_EQ_DOUBLE(sc[c].score, (double)count[label]);
            LBK_EXPECT_EQ_INT(sc[c].slot, first[label]);
            c++;
        }
        LBK_EXPECT_EQ_INT(n, c);
    }
}

static const lbk_test_case other_cases[] = {
    {"top5", case_top5},
    {"probabilities", case_probabilities},
    {"distance_zero_probabilities", case_distance_zero_probabilities},
    {"sum_order", case_sum_order},
    {"long_lists", case_long_lists},
};

LBK_TEST_MAIN(LBK_TEST_ROWS(cases, run_vote), LBK_TEST_CASES(other_cases))
