/* Vote rules against hand-computed cases (scikit-learn KNeighborsClassifier
 * semantics): one CTest test per case, selected by argv[1]. */
#include "classify.h"
#include "lbk_test.h"

#include <math.h>
#include <stdint.h>

#define PAD {INFINITY, -1, UINT64_MAX}

typedef struct {
    const char *name;
    lbk_metric metric;
    lbk_weights weights;
    int k;
    lbk_candidate list[8];
    int32_t expected;
} vote_case;

static const vote_case cases[] = {
    /* 2 votes each for labels 2 and 1: the tie goes to the smaller label. */
    {"uniform_tie_smallest", LBK_METRIC_L2, LBK_WEIGHTS_UNIFORM, 5,
     {{1, 2, 10}, {2, 1, 11}, {3, 2, 12}, {4, 1, 13}, {5, 3, 14}}, 1},
    {"uniform_majority", LBK_METRIC_L2, LBK_WEIGHTS_UNIFORM, 3,
     {{1, 3, 0}, {2, 3, 1}, {3, 1, 2}}, 3},
    /* Nearest-first order must not matter for ties: 5,5 then 2,2 -> 2. */
    {"uniform_tie_not_nearest", LBK_METRIC_L1, LBK_WEIGHTS_UNIFORM, 5,
     {{1, 5, 0}, {2, 5, 1}, {3, 2, 2}, {4, 2, 3}, {5, 9, 4}}, 2},
    /* L2 keys 1,4,4 are distances 1,2,2: weights 1 vs 0.5+0.5 -> tie -> 5. */
    {"distance_tie_smallest", LBK_METRIC_L2, LBK_WEIGHTS_DISTANCE, 3,
     {{1, 5, 0}, {4, 7, 1}, {4, 7, 2}}, 5},
    /* Distance weights beat the majority: L1 keys 1 vs 4,4: 1 > 0.25+0.25. */
    {"distance_beats_majority", LBK_METRIC_L1, LBK_WEIGHTS_DISTANCE, 3,
     {{1, 8, 0}, {4, 2, 1}, {4, 2, 2}}, 8},
    /* Any zero distance: only zero-distance neighbours vote, weight 1. */
    {"distance_zero_only", LBK_METRIC_L2, LBK_WEIGHTS_DISTANCE, 4,
     {{0, 9, 0}, {1, 3, 1}, {1, 3, 2}, {1, 3, 3}}, 9},
    {"distance_zero_tie", LBK_METRIC_LINF, LBK_WEIGHTS_DISTANCE, 4,
     {{0, 7, 0}, {0, 4, 1}, {0.5f, 4, 2}, {0.5f, 7, 3}}, 4},
    /* Padding slots (shard smaller than K) do not vote. */
    {"padding_ignored", LBK_METRIC_L2, LBK_WEIGHTS_UNIFORM, 4,
     {{1, 6, 0}, {2, 2, 1}, PAD, PAD}, 2},
    {"all_padding", LBK_METRIC_L2, LBK_WEIGHTS_UNIFORM, 2, {PAD, PAD}, -1},
    {"k1", LBK_METRIC_L2, LBK_WEIGHTS_DISTANCE, 1, {{2.5f, 11, 5}}, 11},
};

static void run_vote(const void *row)
{
    const vote_case *c = row;
    const lbk_vote_rule rule = {c->metric, c->weights, 1.0};
    lbk_class_score scratch[8];
    LBK_EXPECT_EQ_INT(lbk_vote(c->list, c->k, &rule, scratch), c->expected);
}

LBK_TEST_MAIN(LBK_TEST_ROWS(cases, run_vote))
