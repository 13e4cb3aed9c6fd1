/* Turning merged K-lists into class scores and predictions, with
 * scikit-learn's KNeighborsClassifier rules (docs/design.md section 2) plus
 * the softmax vote of kNN evaluations of learned embeddings, and accuracy
 * bookkeeping (top-1 and top-5). */
#ifndef LBK_CLASSIFY_H
#define LBK_CLASSIFY_H

#include "enums.h"
#include "knn.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>

/* How one query's neighbours vote. Padding slots (id UINT64_MAX) never vote.
 *   uniform:  weight 1 (scores are vote counts);
 *   distance: weight 1/d with d = lbk_knn_key_to_distance(key); when some
 *             neighbour has d == 0 only those vote, with weight 1
 *             (scikit-learn); not for IP (the job rejects it);
 *   softmax:  weight exp((sim - sim_max) / temperature), sim the
 *             similarity: the dot product for IP, cos for COSINE, minus the
 *             distance for L2, L1 and Linf; sim_max the largest of the
 *             query's neighbours (a factor common to every weight, so the
 *             ranking is that of exp(sim / T) without its overflow).
 * Everything is computed in double, in slot order, from the merged list
 * alone, so it does not depend on the rank count. */
typedef struct {
    lbk_metric metric;
    lbk_weights weights;
    double temperature;
} lbk_classify_rule;

/* One class's score: the sum of its neighbours' weights. */
typedef struct {
    int32_t label;
    int32_t slot; /* its nearest neighbour's slot */
    double score;
} lbk_classify_score;

/* The classes among the k candidates (k <= LBK_K_MAX, as every engine
 * allows), labels ascending, each with its score (weights summed in slot
 * order). `out` has room for k entries; returns how many were written (0
 * when no candidate votes). */
int lbk_classify_scores(const lbk_knn_candidate *list, int k, const lbk_classify_rule *rule,
                        lbk_classify_score *out);
/* The same for a list of any length k (a radius search's: every neighbour
 * within r votes), with the caller's scratch of k keys. */
int lbk_classify_scores_keys(const lbk_knn_candidate *list, int k, const lbk_classify_rule *rule,
                             uint64_t *keys, lbk_classify_score *out);

/* The highest score, ties to the smallest label; -1 for no class. */
int32_t lbk_classify_top(const lbk_classify_score *scores, int n);

/* Whether `truth` is among the `top` best classes when every class
 * 0, 1, 2, ... is ranked by score (a class without neighbours scores 0)
 * descending, ties to the smaller label: top-5 accuracy with top = 5. */
bool lbk_classify_in_top(const lbk_classify_score *scores, int n, int32_t truth, int top);

/* The predicted label of one query (lbk_classify_scores then lbk_classify_top);
 * scratch holds k entries. -1 when no candidate votes. */
int32_t lbk_classify_vote(const lbk_knn_candidate *list, int k, const lbk_classify_rule *rule,
                          lbk_classify_score *scratch);

/* The class probabilities of one query over classes 0..classes-1 (as
 * scikit-learn's predict_proba): each class's score over the sum of all
 * scores (summed in label order); all zero when that sum is 0. Labels at or
 * above `classes` are left out. */
void lbk_classify_probabilities(const lbk_classify_score *scores, int n, int classes,
                                double *out);

/* Running accuracy and confusion counts over labels 0..classes-1; labels at
 * or above `classes` are counted in `other` (no matrix row). */
typedef struct {
    uint64_t total, correct;
    uint64_t correct_top5; /* the true label among the 5 best classes (lbk_classify_in_top) */
    int classes;           /* 0 = no matrix */
    uint64_t *matrix;      /* classes x classes, [true][predicted] */
    uint64_t other;
} lbk_classify_confusion;

lbk_status lbk_classify_confusion_init(lbk_classify_confusion *c, int classes);
void lbk_classify_confusion_add(lbk_classify_confusion *c, int32_t truth, int32_t predicted);
void lbk_classify_confusion_free(lbk_classify_confusion *c);

#endif
