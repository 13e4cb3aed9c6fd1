/* Radius classification and regression (lbknn_index_radius_classify,
 * lbknn_index_radius_regress): the index's radius search, each slice of
 * lists voted as it comes (src/task/votes.c, scikit-learn's
 * RadiusNeighborsClassifier and RadiusNeighborsRegressor rules, the same
 * arithmetic as `lbknn run`), so no list outlives its slice. Each query's
 * result is written on the rank its list came to; the other ranks' rows
 * stay zero, and an OR over the ranks gives every rank every result. */
#include "lbknn_radius_impl.h"

#include "alloc_large.h"
#include "knn.h"
#include "log.h"
#include "radius_lists.h"
#include "try.h"
#include "votes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    lbknn_index *ix;
    lbk_votes_radius votes;
    int32_t *labels;        /* queries, or NULL */
    double *probabilities;  /* queries x classes, or NULL */
    double *values;         /* queries (regress) */
    uint64_t empty;         /* this rank's queries with no neighbour */
    lbk_radius_lists slice; /* the slice's lists, offsets and (regress) targets */
} radius_votes;

/* The slice's results, at their queries' rows, into the outputs. */
static lbk_status classify_emit(void *user, const lbk_index_radius_slice *s)
{
    radius_votes *rv = user;
    LBK_TRY(lbk_radius_lists_fill(&rv->slice, s, NULL));
    const uint64_t classes = (uint64_t)rv->votes.classes;
    for (uint64_t q = 0; q < s->slice_count; q++) {
        const uint64_t row = lbk_index_radius_row(s, q);
        const lbk_votes_labels out = {
            rv->labels ? rv->labels + row : NULL,
            rv->probabilities ? rv->probabilities + row * classes : NULL, NULL, NULL};
        LBK_TRY(lbk_votes_radius_classify(&rv->votes, rv->slice.lists, rv->slice.offsets + q, 1,
                                          &out));
    }
    return LBK_OK;
}

static lbk_status regress_emit(void *user, const lbk_index_radius_slice *s)
{
    radius_votes *rv = user;
    LBK_TRY(lbk_radius_lists_fill(&rv->slice, s, &rv->ix->lookup));
    for (uint64_t q = 0; q < s->slice_count; q++) {
        const uint64_t row = lbk_index_radius_row(s, q);
        uint64_t none = 0;
        const lbk_votes_values out = {rv->values + row, NULL, NULL};
        LBK_TRY(lbk_votes_radius_regress(&rv->votes, rv->slice.lists, rv->slice.targets,
                                         rv->slice.offsets + q, 1, &out, &none));
        rv->empty += none;
    }
    return LBK_OK;
}

/* Collective: the search with the votes of `sink`, every rank's results
 * gathered. `checked`: this rank's verdict on the arguments. */
static lbk_status run(radius_votes *rv, int64_t queries, const float *points, const float *radii,
                      float radius, lbk_status checked,
                      lbk_status (*emit)(void *, const lbk_index_radius_slice *))
{
    lbknn_index *ix = rv->ix;
    const lbk_comm *comm = &ix->context->comm;
    lbk_api_radius_queries q;
    lbk_status st = lbk_api_radius_queries_prepare(ix, checked, queries, points, &q);
    const uint64_t nq = q.count;
    if (rv->labels)
        memset(rv->labels, 0, (size_t)nq * sizeof *rv->labels);
    if (rv->probabilities)
        memset(rv->probabilities, 0,
               (size_t)nq * (size_t)rv->votes.classes * sizeof *rv->probabilities);
    if (rv->values)
        memset(rv->values, 0, (size_t)nq * sizeof *rv->values);
    const lbk_index_radius_params params = {radii, radius, 0, false, false, NULL, false};
    const lbk_index_radius_sink sink = {emit, NULL, rv};
    if (st == LBK_OK)
        st = lbk_index_radius(ix->index, false, nq, q.mine, &params, &sink);
    if (st == LBK_OK && rv->labels)
        st = lbk_comm_allreduce_or_bytes(comm, rv->labels, nq * sizeof *rv->labels);
    if (st == LBK_OK && rv->probabilities)
        st = lbk_comm_allreduce_or_bytes(comm, rv->probabilities,
                                         nq * (uint64_t)rv->votes.classes * sizeof(double));
    if (st == LBK_OK && rv->values)
        st = lbk_comm_allreduce_or_bytes(comm, rv->values, nq * sizeof *rv->values);
    if (st == LBK_OK && rv->values)
        st = lbk_comm_allreduce_u64(comm, &rv->empty, LBK_REDUCE_SUM);
    lbk_api_radius_queries_free(&q);
    lbk_radius_lists_free(&rv->slice);
    return st;
}

lbknn_status lbknn_index_radius_classify_typed(lbknn_index *ix, int64_t queries, lbknn_dtype type,
                                               const void *points, const float *radii,
                                               float radius, lbknn_weights weights,
                                               double temperature, int32_t outlier_label,
                                               int32_t *labels, double *probabilities)
{
    if (!ix)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, ix->context, ix->error);
    lbk_api_queries q;
    lbk_status st = lbk_api_queries_widen(ix, queries, type, points, &q);
    if (st == LBK_OK)
        st = lbk_api_radius_check(ix, queries, q.points, radii, radius);
    if (st == LBK_OK && ix->classes == 0) {
        lbk_error("radius_classify: the index was built without labels");
        st = LBK_ERR_USAGE;
    }
    if (st == LBK_OK && outlier_label < -1) {
        lbk_error("outlier_label = %d: a label (>= 0), or -1 for none", outlier_label);
        st = LBK_ERR_USAGE;
    }
    if (st == LBK_OK)
        st = lbk_api_check_weights(ix, weights, temperature, false);
    const lbk_classify_rule rule = {ix->options.knn.metric, (lbk_weights)weights, temperature};
    radius_votes rv = {.ix = ix,
                       .votes = {rule, ix->classes, outlier_label},
                       .labels = labels,
                       .probabilities = probabilities};
    st = run(&rv, queries, q.points, radii, radius, st, classify_emit);
    lbk_api_queries_free(&q);
    return lbk_api_end(&call, st);
}

lbknn_status lbknn_index_radius_classify(lbknn_index *ix, int64_t queries, const float *points,
                                         const float *radii, float radius, lbknn_weights weights,
                                         double temperature, int32_t outlier_label,
                                         int32_t *labels, double *probabilities)
{
    return lbknn_index_radius_classify_typed(ix, queries, LBKNN_DTYPE_FLOAT32, points, radii,
                                             radius, weights, temperature, outlier_label, labels,
                                             probabilities);
}

lbknn_status lbknn_index_radius_regress_typed(lbknn_index *ix, int64_t queries, lbknn_dtype type,
                                              const void *points, const float *radii,
                                              float radius, lbknn_weights weights, double *values,
                                              int64_t *empty)
{
    if (!ix)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, ix->context, ix->error);
    lbk_api_queries q;
    lbk_status st = lbk_api_queries_widen(ix, queries, type, points, &q);
    if (st == LBK_OK)
        st = lbk_api_radius_check(ix, queries, q.points, radii, radius);
    if (st == LBK_OK && !ix->has_targets) {
        lbk_error("radius_regress: the index was built without targets");
        st = LBK_ERR_USAGE;
    }
    if (st == LBK_OK && queries > 0 && !values) {
        lbk_error("radius_regress: values must not be NULL");
        st = LBK_ERR_USAGE;
    }
    if (st == LBK_OK)
        st = lbk_api_check_weights(ix, weights, 0, true);
    const lbk_classify_rule rule = {ix->options.knn.metric, (lbk_weights)weights, 0};
    radius_votes rv = {.ix = ix, .votes = {rule, 0, -1}, .values = values};
    st = run(&rv, queries, q.points, radii, radius, st, regress_emit);
    lbk_api_queries_free(&q);
    if (empty)
        *empty = st == LBK_OK ? (int64_t)rv.empty : 0;
    return lbk_api_end(&call, st);
}

lbknn_status lbknn_index_radius_regress(lbknn_index *ix, int64_t queries, const float *points,
                                        const float *radii, float radius, lbknn_weights weights,
                                        double *values, int64_t *empty)
{
    return lbknn_index_radius_regress_typed(ix, queries, LBKNN_DTYPE_FLOAT32, points, radii,
                                            radius, weights, values, empty);
}
