#include "classify.h"

#include "log.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t label;
    double weight;
} vote;

static int vote_by_label(const void *a, const void *b)
{
    const vote *x = a, *y = b;
    return (x->label > y->label) - (x->label < y->label);
}

int32_t lbk_vote(const lbk_candidate *list, int k, lbk_metric metric, lbk_weights weights)
{
    vote votes[LBK_K_MAX];
    int n = 0;
    bool any_zero = false;
    if (k > LBK_K_MAX)
        k = LBK_K_MAX;
    for (int i = 0; i < k; i++)
        if (list[i].id != UINT64_MAX && list[i].key == 0.0f)
            any_zero = true;
    for (int i = 0; i < k; i++) {
        if (list[i].id == UINT64_MAX)
            continue;
        double w = 1.0;
        if (weights == LBK_WEIGHTS_DISTANCE) {
            const double d = lbk_key_to_distance(metric, list[i].key);
            if (any_zero)
                w = d == 0.0 ? 1.0 : 0.0;
            else
                w = 1.0 / d;
        }
        votes[n].label = list[i].label;
        votes[n].weight = w;
        n++;
    }
    if (n == 0)
        return -1;
    /* Sorting by label makes the scan below meet labels in ascending order,
     * so a strict '>' keeps the smallest label among equal totals. */
    qsort(votes, (size_t)n, sizeof votes[0], vote_by_label);
    int32_t best = -1;
    double best_total = -1.0;
    for (int i = 0; i < n;) {
        const int32_t label = votes[i].label;
        double total = 0.0;
        for (; i < n && votes[i].label == label; i++)
            total += votes[i].weight;
        if (total > best_total) {
            best_total = total;
            best = label;
        }
    }
    return best;
}

lbk_status lbk_confusion_init(lbk_confusion *c, int classes)
{
    memset(c, 0, sizeof *c);
    if (classes <= 0)
        return LBK_OK;
    c->matrix = calloc((size_t)classes * (size_t)classes, sizeof *c->matrix);
    if (!c->matrix) {
        lbk_error("out of host memory for a %d x %d confusion matrix", classes, classes);
        return LBK_ERR_NOMEM;
    }
    c->classes = classes;
    return LBK_OK;
}

void lbk_confusion_add(lbk_confusion *c, int32_t truth, int32_t predicted)
{
    c->total++;
    c->correct += truth == predicted;
    if (truth >= 0 && predicted >= 0 && truth < c->classes && predicted < c->classes)
        c->matrix[(size_t)truth * (size_t)c->classes + (size_t)predicted]++;
    else
        c->other++;
}

void lbk_confusion_free(lbk_confusion *c)
{
    free(c->matrix);
    memset(c, 0, sizeof *c);
}
