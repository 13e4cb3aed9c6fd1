/* Turning merged K-lists into averaged targets, with scikit-learn's
 * KNeighborsRegressor rules (docs/design.md section 2), and the scores of
 * such predictions against true targets (scikit-learn's r2_score and
 * mean_absolute_error). Shared by `lbknn run` and the library. */
#ifndef LBK_REGRESS_H
#define LBK_REGRESS_H

#include "enums.h"
#include "knn.h"

#include <stdbool.h>
#include <stdint.h>

/* One query's prediction from its k candidates and their targets
 * (targets[j] belongs to list[j]; padding slots, id UINT64_MAX, count for
 * nothing): uniform = the mean; by_distance = weights 1/d with d =
 * lbk_knn_key_to_distance(key), and when some neighbour has d == 0 only
 * those count, with weight 1. Every sum in double, in slot order, from the
 * merged list alone, so it does not depend on the rank count. NaN when no
 * slot counts. */
double lbk_regress_predict(const lbk_knn_candidate *list, const double *targets, int k,
                           lbk_metric metric, bool by_distance);

/* Running scores of predictions against true targets: the true values'
 * mean and sum of squared deviations by Welford's update (no cancellation
 * of sum y^2 - (sum y)^2 / n), the residuals' squares and absolute values
 * summed, every sum in double in the order the queries are added. */
typedef struct {
    uint64_t count;
    double mean, deviations; /* of the true values: mean and sum of (y - mean)^2 */
    double squared_error, absolute_error;
} lbk_regress_score;

void lbk_regress_score_add(lbk_regress_score *s, double truth, double predicted);
/* `into` and `part` as one set of queries (Chan et al.'s pairwise update
 * of the mean and the deviations). */
void lbk_regress_score_merge(lbk_regress_score *into, const lbk_regress_score *part);
/* scikit-learn's r2_score: 1 - squared_error / deviations; when the true
 * values are all equal, 1 for a perfect prediction and 0 otherwise. */
double lbk_regress_score_r2(const lbk_regress_score *s);
/* scikit-learn's mean_absolute_error. */
double lbk_regress_score_mae(const lbk_regress_score *s);

#endif
