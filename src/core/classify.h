/* Turning merged K-lists into class predictions, with scikit-learn's
 * KNeighborsClassifier rules (DESIGN.md §2), and accuracy bookkeeping. */
#ifndef LBK_CLASSIFY_H
#define LBK_CLASSIFY_H

#include "enums.h"
#include "knn.h"
#include "status.h"

#include <stdint.h>

/* The predicted label of one query from its k candidates (sorted by key).
 * Padding slots (id UINT64_MAX) do not vote. uniform: majority, ties to the
 * smallest label. distance: weight 1/d; when some neighbour has d == 0 only
 * the zero-distance neighbours vote, with weight 1; ties to the smallest
 * label. Returns -1 when no candidate votes. */
int32_t lbk_vote(const lbk_candidate *list, int k, lbk_metric metric, lbk_weights weights);

/* Running accuracy and confusion counts over labels 0..classes-1; labels at
 * or above `classes` are counted in `other` (no matrix row). */
typedef struct {
    uint64_t total, correct;
    int classes;          /* 0 = no matrix */
    uint64_t *matrix;     /* classes x classes, [true][predicted] */
    uint64_t other;
} lbk_confusion;

lbk_status lbk_confusion_init(lbk_confusion *c, int classes);
void lbk_confusion_add(lbk_confusion *c, int32_t truth, int32_t predicted);
void lbk_confusion_free(lbk_confusion *c);

#endif
