/* The votes of a slice of final K-lists: predicted labels, class
 * probabilities and their tally against true labels (task classify), or
 * averaged targets and their scores (task regress). The one implementation
 * under `lbknn run`'s sink and the library's lbknn_index_classify and
 * lbknn_index_regress; the arithmetic of one query is core's (classify.h,
 * regress.h: scikit-learn's rules, sums in slot order), so a query's result
 * depends on its list alone, never on the slice it came in. */
#ifndef LBK_VOTES_H
#define LBK_VOTES_H

#include "classify.h"
#include "knn.h"
#include "regress.h"
#include "status.h"

#include <stdint.h>

/* How a slice votes: the first k candidates of each list, the lists
 * `stride` candidates apart (a library search may read k below the
 * index's K). */
typedef struct {
    lbk_classify_rule rule; /* regress: distance weights, or else uniform */
    int k, stride;          /* 1 <= k <= stride, k <= LBK_K_MAX */
    int classes;            /* the probabilities' columns (lbk_classes_count) */
} lbk_votes;

/* Where a slice's class votes go; NULL for what is not wanted. */
typedef struct {
    int32_t *predictions;          /* count labels (lbk_classify_top; -1: no voter) */
    double *probabilities;         /* count x classes (lbk_classify_probabilities) */
    const int32_t *truth;          /* count true labels, and with them */
    lbk_classify_confusion *tally; /*   top-1, top-5 and the confusion matrix */
} lbk_votes_labels;

/* The votes of `count` lists, in query order (the tally's counts follow
 * it). Fails only for parameters out of range or out of memory. */
lbk_status lbk_votes_classify(const lbk_votes *v, const lbk_knn_candidate *lists, uint64_t count,
                              const lbk_votes_labels *out);

/* Where a slice's averaged targets go. */
typedef struct {
    double *values;           /* count predictions (NaN: no neighbour counts) */
    const double *truth;      /* count true values or NULL, and with them */
    lbk_regress_score *score; /*   R² and MAE's sums (NULL: none) */
} lbk_votes_values;

/* lbk_regress_predict of `count` lists, whose neighbours' targets are
 * `targets` (count x k, lbk_targets_lookup's layout), in query order. */
lbk_status lbk_votes_regress(const lbk_votes *v, const lbk_knn_candidate *lists,
                             const double *targets, uint64_t count, const lbk_votes_values *out);

/* ---- Radius votes (scikit-learn's RadiusNeighborsClassifier and
 * RadiusNeighborsRegressor): every neighbour of a query's list votes, lists
 * of any length, query q's `lists[offsets[q] .. offsets[q + 1])` (offsets:
 * count + 1 entries, relative to `lists`). ---- */
typedef struct {
    lbk_classify_rule rule; /* regress: distance weights, or else uniform */
    int classes;            /* the probabilities' columns */
    /* A query with no neighbour: predicted `outlier`, its probability 1 for
     * that class (all 0 when it is no class, >= classes); -1: none, the
     * prediction -1 and the probabilities all 0. */
    int32_t outlier;
} lbk_votes_radius;

/* The votes of `count` lists into `out`, in query order, as
 * lbk_votes_classify's (the tally counts an outlier's prediction too).
 * Fails only for out of memory or a list longer than INT_MAX. */
lbk_status lbk_votes_radius_classify(const lbk_votes_radius *v, const lbk_knn_candidate *lists,
                                     const uint64_t *offsets, uint64_t count,
                                     const lbk_votes_labels *out);

/* lbk_regress_predict of `count` lists, targets[j] the target of lists[j]
 * (the same offsets): NaN for a query with no neighbour (left out of
 * out->score), and `*empty` (may be NULL) counts such queries. */
lbk_status lbk_votes_radius_regress(const lbk_votes_radius *v, const lbk_knn_candidate *lists,
                                    const double *targets, const uint64_t *offsets,
                                    uint64_t count, const lbk_votes_values *out, uint64_t *empty);

#endif
