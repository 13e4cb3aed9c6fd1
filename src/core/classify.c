#include "classify.h"

#include "log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* (label, slot): a total order, so equal labels keep slot order and every
 * class's weights are summed in the same order everywhere. */
static bool vote_less(const lbk_class_score *x, const lbk_class_score *y)
{
    return x->label != y->label ? x->label < y->label : x->slot < y->slot;
}

static int vote_cmp(const void *a, const void *b)
{
    return vote_less(b, a) - vote_less(a, b);
}

/* Insertion sort up to this many votes: qsort, sorting a list of K = 16
 * 100k times, took half of a 1e6-point tree job's output phase (0.133 ->
 * 0.06 s with this and the uniform shortcut). Both sorts give the one order
 * of the (label, slot) keys, which are distinct. */
#define VOTE_INSERTION_MAX 32

static void sort_votes(lbk_class_score *v, int n)
{
    if (n > VOTE_INSERTION_MAX) {
        qsort(v, (size_t)n, sizeof *v, vote_cmp);
        return;
    }
    for (int i = 1; i < n; i++) {
        const lbk_class_score x = v[i];
        int j = i;
        for (; j > 0 && vote_less(&x, &v[j - 1]); j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* The similarity softmax weighs: larger is nearer. */
static double similarity(lbk_metric metric, float key)
{
    return lbk_metric_is_similarity(metric) ? -(double)key
                                            : -(double)lbk_key_to_distance(metric, key);
}

/* What the weights of one list depend on beyond each slot's own key. */
typedef struct {
    bool any_zero;           /* some voter at distance 0 */
    double sim_max;          /* the largest similarity of a voter */
} list_facts;

static list_facts facts_of(const lbk_candidate *list, int k, lbk_metric metric)
{
    list_facts f = {false, -INFINITY};
    for (int i = 0; i < k; i++) {
        if (list[i].id == UINT64_MAX)
            continue;
        f.any_zero |= lbk_key_to_distance(metric, list[i].key) == 0.0f;
        const double s = similarity(metric, list[i].key);
        f.sim_max = s > f.sim_max ? s : f.sim_max;
    }
    return f;
}

static double weight_of(float key, const lbk_vote_rule *rule, const list_facts *f)
{
    switch (rule->weights) {
    case LBK_WEIGHTS_DISTANCE: {
        const double d = lbk_key_to_distance(rule->metric, key);
        return f->any_zero ? (d == 0.0 ? 1.0 : 0.0) : 1.0 / d;
    }
    case LBK_WEIGHTS_SOFTMAX:
        return exp((similarity(rule->metric, key) - f->sim_max) / rule->temperature);
    default: return 1.0;
    }
}

int lbk_class_scores(const lbk_candidate *list, int k, const lbk_vote_rule *rule,
                     lbk_class_score *out)
{
    /* Uniform votes need no distances (the common case, once per query). */
    const list_facts facts = rule->weights == LBK_WEIGHTS_UNIFORM
                                 ? (list_facts){false, -INFINITY}
                                 : facts_of(list, k, rule->metric);
    int n = 0;
    for (int i = 0; i < k; i++)
        if (list[i].id != UINT64_MAX)
            out[n++] = (lbk_class_score){list[i].label, i, weight_of(list[i].key, rule, &facts)};
    sort_votes(out, n);
    /* Sum each label's run in place: entry `classes` is never ahead of i. */
    int classes = 0;
    for (int i = 0; i < n;) {
        lbk_class_score c = {out[i].label, out[i].slot, 0.0};
        for (; i < n && out[i].label == c.label; i++)
            c.score += out[i].score;
        out[classes++] = c;
    }
    return classes;
}

int32_t lbk_top_class(const lbk_class_score *scores, int n)
{
    /* Labels ascend, so a strict '>' keeps the smallest among equal scores. */
    int32_t best = -1;
    double best_score = -INFINITY;
    for (int i = 0; i < n; i++)
        if (best < 0 || scores[i].score > best_score) {
            best = scores[i].label;
            best_score = scores[i].score;
        }
    return best;
}

bool lbk_in_top(const lbk_class_score *scores, int n, int32_t truth, int top)
{
    double s_truth = 0.0;
    int64_t voters_below = 0; /* classes with neighbours and a label below truth */
    for (int i = 0; i < n; i++) {
        if (scores[i].label == truth)
            s_truth = scores[i].score;
        voters_below += scores[i].label < truth;
    }
    /* Classes ranked before truth: those with neighbours that score more or
     * as much with a smaller label, and, when truth scores 0, every class
     * without neighbours below it (they score 0 too). */
    int64_t before = 0;
    for (int i = 0; i < n; i++)
        before += scores[i].label != truth &&
                  (scores[i].score > s_truth ||
                   (scores[i].score == s_truth && scores[i].label < truth));
    if (s_truth == 0.0)
        before += (int64_t)truth - voters_below;
    return before < top;
}

int32_t lbk_vote(const lbk_candidate *list, int k, const lbk_vote_rule *rule,
                 lbk_class_score *scratch)
{
    return lbk_top_class(scratch, lbk_class_scores(list, k, rule, scratch));
}

void lbk_class_probabilities(const lbk_class_score *scores, int n, int classes, double *out)
{
    double total = 0.0;
    for (int c = 0; c < classes; c++)
        out[c] = 0.0;
    for (int i = 0; i < n; i++)
        if (scores[i].label >= 0 && scores[i].label < classes) {
            out[scores[i].label] = scores[i].score;
            total += scores[i].score;
        }
    if (total == 0.0)
        return;
    for (int c = 0; c < classes; c++)
        out[c] /= total;
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
