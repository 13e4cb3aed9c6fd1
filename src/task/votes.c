#include "votes.h"

#include "bounds.h"
#include "log.h"
#include "try.h"

#include <stdlib.h>

static lbk_status check_votes(const lbk_votes *v)
{
    LBK_FAIL_IF(v->k < 1 || v->k > v->stride || v->k > LBK_K_MAX, LBK_ERR_INTERNAL,
                "votes: k = %d with lists of %d (1 .. %d)", v->k, v->stride, LBK_K_MAX);
    LBK_FAIL_IF(v->classes < 0, LBK_ERR_INTERNAL, "votes: %d classes", v->classes);
    return LBK_OK;
}

/* One query's scores (n of them) into what `out` asks for, at row q. */
static void use_scores(const lbk_votes *v, const lbk_classify_score *scores, int n, uint64_t q,
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
        lbk_classify_probabilities(scores, n, v->classes,
                                   out->probabilities + q * (uint64_t)v->classes);
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
        use_scores(v, scores, n, q, out);
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
