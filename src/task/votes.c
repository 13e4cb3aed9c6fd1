#include "votes.h"

#include "bounds.h"
#include "log.h"
#include "try.h"

#include <limits.h>
#include <stdlib.h>

static lbk_status check_votes(const lbk_votes *v)
{
    LBK_FAIL_IF(v->k < 1 || v->k > v->stride || v->k > LBK_K_MAX, LBK_ERR_INTERNAL,
                "votes: k = %d with lists of %d (1 .. %d)", v->k, v->stride, LBK_K_MAX);
    LBK_FAIL_IF(v->classes < 0, LBK_ERR_INTERNAL, "votes: %d classes", v->classes);
    return LBK_OK;
}

/* One query's scores (n of them) into what `out` asks for, at row q. */
static void use_scores(int classes, const lbk_classify_score *scores, int n, uint64_t q,
                       const lbk_votes_labels *out)
{
    const int32_t predicted = lbk_classify_top(scores, n);
    if (out->predictions)
        out->predictions[q] = predicted;
    if (out->truth && out->tally) {
        lbk_classify_confusion_add(out->tally, out->truth[q], predicted);
        out->tally->correct_top5 += lbk_classify_in_top(scores, n, out->truth[q], 5);
    }
    if (out->probabilities)
        lbk_classify_probabilities(scores, n, classes,
                                   out->probabilities + q * (uint64_t)classes);
}

lbk_status lbk_votes_classify(const lbk_votes *v, const lbk_knn_candidate *lists, uint64_t count,
                              const lbk_votes_labels *out)
{
    LBK_TRY(check_votes(v));
    if (count == 0)
        return LBK_OK;
    /* One query's scores at a time: k of them at most (one per voter). */
    lbk_classify_score *scores = malloc((size_t)v->k * sizeof *scores);
    LBK_FAIL_IF(!scores, LBK_ERR_NOMEM, "out of host memory for %d class scores", v->k);
    for (uint64_t q = 0; q < count; q++) {
        const int n =
            lbk_classify_scores(lists + q * (uint64_t)v->stride, v->k, &v->rule, scores);
        use_scores(v->classes, scores, n, q, out);
    }
    free(scores);
    return LBK_OK;
}

lbk_status lbk_votes_regress(const lbk_votes *v, const lbk_knn_candidate *lists,
                             const double *targets, uint64_t count, const lbk_votes_values *out)
{
    LBK_TRY(check_votes(v));
    LBK_FAIL_IF(count > 0 && !out->values, LBK_ERR_INTERNAL, "votes: no room for the values");
    /* Anything but distance weights averages plainly: `lbknn run`'s job
     * takes softmax for task regress too, and has always averaged so. */
    const bool by_distance = v->rule.weights == LBK_WEIGHTS_DISTANCE;
    for (uint64_t q = 0; q < count; q++) {
        const double value =
            lbk_regress_predict(lists + q * (uint64_t)v->stride, targets + q * (uint64_t)v->k,
                                v->k, v->rule.metric, by_distance);
        out->values[q] = value;
        if (out->truth && out->score)
            lbk_regress_score_add(out->score, out->truth[q], value);
    }
    return LBK_OK;
}

/* The longest list of a slice: the scratch one query's vote needs. */
static lbk_status longest_list(const uint64_t *offsets, uint64_t count, uint64_t *longest)
{
    *longest = 0;
    for (uint64_t q = 0; q < count; q++) {
        const uint64_t n = offsets[q + 1] - offsets[q];
        LBK_FAIL_IF(n > INT_MAX, LBK_ERR_INPUT,
                    "query %llu has %llu neighbours within its radius: more than %d cannot vote",
                    (unsigned long long)q, (unsigned long long)n, INT_MAX);
        *longest = n > *longest ? n : *longest;
    }
    return LBK_OK;
}

lbk_status lbk_votes_radius_classify(const lbk_votes_radius *v, const lbk_knn_candidate *lists,
                                     const uint64_t *offsets, uint64_t count,
                                     const lbk_votes_labels *out)
{
    LBK_FAIL_IF(v->classes < 0, LBK_ERR_INTERNAL, "votes: %d classes", v->classes);
    uint64_t longest = 0;
    LBK_TRY(longest_list(offsets, count, &longest));
    if (count == 0)
        return LBK_OK;
    /* One query's scores and sort keys at a time (an outlier's one score). */
    const size_t room = longest > 0 ? (size_t)longest : 1;
    lbk_classify_score *scores = malloc(room * sizeof *scores);
    uint64_t *keys = malloc(room * sizeof *keys);
    lbk_status st = LBK_OK;
    if (!scores || !keys) {
        lbk_error("out of host memory for the votes of %llu neighbours",
                  (unsigned long long)longest);
        st = LBK_ERR_NOMEM;
    }
    for (uint64_t q = 0; q < count && st == LBK_OK; q++) {
        const int n = (int)(offsets[q + 1] - offsets[q]);
        int classes = 0;
        if (n > 0)
            classes = lbk_classify_scores_keys(lists + offsets[q], n, &v->rule, keys, scores);
        else if (v->outlier >= 0) {
            /* scikit-learn's outlier: predicted, and probability 1 if a class. */
            scores[0] = (lbk_classify_score){v->outlier, 0, 1.0};
            classes = 1;
        }
        use_scores(v->classes, scores, classes, q, out);
    }
    free(scores);
    free(keys);
    return st;
}

lbk_status lbk_votes_radius_regress(const lbk_votes_radius *v, const lbk_knn_candidate *lists,
                                    const double *targets, const uint64_t *offsets,
                                    uint64_t count, const lbk_votes_values *out, uint64_t *empty)
{
    uint64_t longest = 0, none = 0;
    LBK_TRY(longest_list(offsets, count, &longest));
    LBK_FAIL_IF(count > 0 && !out->values, LBK_ERR_INTERNAL, "votes: no room for the values");
    const bool by_distance = v->rule.weights == LBK_WEIGHTS_DISTANCE;
    for (uint64_t q = 0; q < count; q++) {
        const int n = (int)(offsets[q + 1] - offsets[q]);
        /* NaN with no neighbour: scikit-learn's prediction there. */
        const double value = lbk_regress_predict(lists + offsets[q], targets + offsets[q], n,
                                                 v->rule.metric, by_distance);
        none += n == 0;
        out->values[q] = value;
        /* A NaN has no error to score: the summary counts such queries. */
        if (out->truth && out->score && n > 0)
            lbk_regress_score_add(out->score, out->truth[q], value);
    }
    if (empty)
        *empty = none;
    return LBK_OK;
}
