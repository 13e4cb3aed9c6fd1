#include "classify.h"

#include "bounds.h"
#include "log.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A voter's sort key: (label, slot), a total order, so equal labels keep
 * slot order and every class's weights are summed in the same order
 * everywhere. The label is biased to sort as unsigned. */
static uint64_t vote_key(int32_t label, int slot)
{
    return (uint64_t)((uint32_t)label ^ 0x80000000u) << 32 | (uint32_t)slot;
}

static int32_t key_label(uint64_t key) { return (int32_t)((uint32_t)(key >> 32) ^ 0x80000000u); }

static int key_slot(uint64_t key) { return (int)(uint32_t)key; }

static int key_cmp(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Insertion sort up to this many votes: qsort, sorting a list of K = 16
 * 100k times, took half of a 1e6-point tree job's output phase (0.133 ->
 * 0.06 s with this and the uniform shortcut). Sorting 8-byte keys rather
 * than the 16-byte scores took that phase (predictions written) from 0.073
 * to 0.064 s (medians of 8 interleaved runs). */
#define VOTE_INSERTION_MAX 32

static void sort_keys(uint64_t *v, int n)
{
    if (n > VOTE_INSERTION_MAX) {
        qsort(v, (size_t)n, sizeof *v, key_cmp);
        return;
    }
    for (int i = 1; i < n; i++) {
        const uint64_t x = v[i];
        int j = i;
        for (; j > 0 && x < v[j - 1]; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* The similarity softmax weighs: larger is nearer. */
static double similarity(lbk_metric metric, float key)
{
    return lbk_knn_is_similarity(metric) ? -(double)key
                                         : -(double)lbk_knn_key_to_distance(metric, key);
}

/* What the weights of one list depend on beyond each slot's own key. */
typedef struct {
    bool any_zero;  /* some voter at distance 0 */
    double sim_max; /* the largest similarity of a voter */
} list_facts;

static list_facts facts_of(const lbk_knn_candidate *list, int k, lbk_metric metric)
{
    list_facts f = {false, -INFINITY};
    for (int i = 0; i < k; i++) {
        if (list[i].id == UINT64_MAX)
            continue;
        f.any_zero |= lbk_knn_key_to_distance(metric, list[i].key) == 0.0f;
        const double s = similarity(metric, list[i].key);
        f.sim_max = s > f.sim_max ? s : f.sim_max;
    }
    return f;
}

static double weight_of(float key, const lbk_classify_rule *rule, const list_facts *f)
{
    switch (rule->weights) {
    case LBK_WEIGHTS_DISTANCE: {
        const double d = lbk_knn_key_to_distance(rule->metric, key);
        return f->any_zero ? (d == 0.0 ? 1.0 : 0.0) : 1.0 / d;
    }
    case LBK_WEIGHTS_SOFTMAX:
        return exp((similarity(rule->metric, key) - f->sim_max) / rule->temperature);
    default: return 1.0;
    }
}

int lbk_classify_scores_keys(const lbk_knn_candidate *list, int k, const lbk_classify_rule *rule,
                             uint64_t *keys, lbk_classify_score *out)
{
    /* Uniform votes need no distances (the common case, once per query). */
    const list_facts facts = rule->weights == LBK_WEIGHTS_UNIFORM
                                 ? (list_facts){false, -INFINITY}
                                 : facts_of(list, k, rule->metric);
    int n = 0;
    for (int i = 0; i < k; i++)
        if (list[i].id != UINT64_MAX)
            keys[n++] = vote_key(list[i].label, i);
    sort_keys(keys, n);
    /* Each label's run, its weights summed in slot order. */
    int classes = 0;
    for (int i = 0; i < n;) {
        lbk_classify_score c = {key_label(keys[i]), key_slot(keys[i]), 0.0};
        for (; i < n && key_label(keys[i]) == c.label; i++)
            c.score += weight_of(list[key_slot(keys[i])].key, rule, &facts);
        out[classes++] = c;
    }
    return classes;
}

int lbk_classify_scores(const lbk_knn_candidate *list, int k, const lbk_classify_rule *rule,
                        lbk_classify_score *out)
{
    uint64_t keys[LBK_K_MAX];
    return lbk_classify_scores_keys(list, k < LBK_K_MAX ? k : LBK_K_MAX, rule, keys, out);
}

int32_t lbk_classify_top(const lbk_classify_score *scores, int n)
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

bool lbk_classify_in_top(const lbk_classify_score *scores, int n, int32_t truth, int top)
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
        before +=
            scores[i].label != truth && (scores[i].score > s_truth ||
                                         (scores[i].score == s_truth && scores[i].label < truth));
    if (s_truth == 0.0)
        before += (int64_t)truth - voters_below;
    return before < top;
}

int32_t lbk_classify_vote(const lbk_knn_candidate *list, int k, const lbk_classify_rule *rule,
                          lbk_classify_score *scratch)
{
    return lbk_classify_top(scratch, lbk_classify_scores(list, k, rule, scratch));
}

void lbk_classify_probabilities(const lbk_classify_score *scores, int n, int classes, double *out)
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

lbk_status lbk_classify_confusion_init(lbk_classify_confusion *c, int classes)
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

void lbk_classify_confusion_add(lbk_classify_confusion *c, int32_t truth, int32_t predicted)
{
    c->total++;
    c->correct += truth == predicted;
    if (truth >= 0 && predicted >= 0 && truth < c->classes && predicted < c->classes)
        c->matrix[(size_t)truth * (size_t)c->classes + (size_t)predicted]++;
    else
        c->other++;
}

void lbk_classify_confusion_free(lbk_classify_confusion *c)
{
    free(c->matrix);
    memset(c, 0, sizeof *c);
}
