#include "regress.h"

#include <math.h>

double lbk_regress_predict(const lbk_knn_candidate *list, const double *targets, int k,
                           lbk_metric metric, bool by_distance)
{
    bool exact = false;
    for (int j = 0; j < k && by_distance; j++)
        exact |= list[j].id != UINT64_MAX && lbk_knn_key_to_distance(metric, list[j].key) == 0;
    double sum = 0, weights = 0;
    for (int j = 0; j < k; j++) {
        if (list[j].id == UINT64_MAX)
            continue;
        const double d = lbk_knn_key_to_distance(metric, list[j].key);
        const double w = !by_distance ? 1.0 : exact ? (d == 0 ? 1.0 : 0.0) : 1.0 / d;
        sum += w * targets[j];
        weights += w;
    }
    return weights > 0 ? sum / weights : NAN;
}

void lbk_regress_score_add(lbk_regress_score *s, double truth, double predicted)
{
    const double error = truth - predicted, delta = truth - s->mean;
    s->count++;
    s->mean += delta / (double)s->count;
    s->deviations += delta * (truth - s->mean);
    s->squared_error += error * error;
    s->absolute_error += fabs(error);
}

void lbk_regress_score_merge(lbk_regress_score *into, const lbk_regress_score *part)
{
    if (part->count == 0)
        return;
    if (into->count == 0) {
        *into = *part;
        return;
    }
    const double n_a = (double)into->count, n_b = (double)part->count, n = n_a + n_b;
    const double delta = part->mean - into->mean;
    into->mean += delta * (n_b / n);
    into->deviations += part->deviations + delta * delta * (n_a * n_b / n);
    into->count += part->count;
    into->squared_error += part->squared_error;
    into->absolute_error += part->absolute_error;
}

double lbk_regress_score_r2(const lbk_regress_score *s)
{
    if (s->deviations == 0)
        return s->squared_error == 0 ? 1.0 : 0.0;
    return 1.0 - s->squared_error / s->deviations;
}

double lbk_regress_score_mae(const lbk_regress_score *s)
{
    return s->count ? s->absolute_error / (double)s->count : NAN;
}
