/* Task classify and regress with knn.radius (docs/design.md "Radius
 * search", "The CLI's radius votes"): the index's radius search, each
 * slice of lists voted as it comes (src/task/votes.c, scikit-learn's
 * RadiusNeighborsClassifier and RadiusNeighborsRegressor rules, the code
 * under lbknn_index_radius_classify and _regress), so no list outlives its
 * slice. A query's result is made on the rank its list came to, in no
 * fixed order over the ranks, so the results are placed by query: every
 * rank's predictions (4 or 8 bytes a query) are OR'ed together and rank 0
 * writes the predictions file; each rank keeps the probability rows it
 * rendered and writes them at their offsets, from every row's length. */
#include "run_radius.h"

#include "alloc_large.h"
#include "grow.h"
#include "log.h"
#include "radius.h"
#include "radius_lists.h"
#include "try.h"
#include "votes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The predictions file is rendered this many queries at a time. */
#define TEXT_PIECE ((uint64_t)1 << 16)

typedef struct {
    lbk_run_state *s;
    bool regress;
    lbk_votes_radius votes;
    uint64_t rows; /* queries */
    /* The true labels or values of the queries this rank may own, the
     * query q's at q - truth_first (NULL: the queries have none). */
    const int32_t *truth;
    const double *truth_values;
    uint64_t truth_first;
    void *truth_copy; /* a rank but 0 without its own slice: rank 0's, broadcast */
    int32_t *labels;  /* rows: every query's prediction (OR'ed over the ranks) */
    double *values;   /* rows (regress) */
    double *proba;    /* one query's probabilities */
    FILE *proba_rows; /* this rank's probability rows, in the order voted */
    char *proba_text;
    size_t proba_len;
    uint64_t *proba_row;  /* the row of each of them */
    uint64_t *proba_size; /* rows: each row's bytes (OR'ed over the ranks) */
    uint64_t proba_count, proba_room;
    uint64_t outlier_row;   /* the first query without a neighbour (none: UINT64_MAX) */
    uint64_t empty;         /* regress: queries without a neighbour */
    lbk_radius_lists slice; /* one slice's lists, offsets and (regress) targets */
} radius_votes;

/* Query `row`'s probability row, rendered after this rank's others. */
static lbk_status keep_probabilities(radius_votes *rv, uint64_t row)
{
    LBK_TRY(lbk_grow_buffer((void **)&rv->proba_row, &rv->proba_room, rv->proba_count + 1,
                            sizeof *rv->proba_row, "probability rows"));
    const long before = ftell(rv->proba_rows);
    lbk_outputs_print_probabilities(rv->proba_rows, row, rv->proba, rv->s->classes);
    const long after = ftell(rv->proba_rows);
    LBK_FAIL_IF(before < 0 || after < before, LBK_ERR_NOMEM,
                "out of host memory rendering probabilities");
    rv->proba_row[rv->proba_count++] = row;
    rv->proba_size[row] = (uint64_t)(after - before);
    return LBK_OK;
}

static lbk_status classify_emit(void *user, const lbk_index_radius_slice *b)
{
    radius_votes *rv = user;
    lbk_run_state *s = rv->s;
    LBK_TRY(lbk_radius_lists_fill(&rv->slice, b, rv->regress ? &rv->s->lookup : NULL));
    for (uint64_t q = 0; q < b->slice_count; q++) {
        const uint64_t row = lbk_index_radius_row(b, q);
        const lbk_votes_labels out = {rv->labels + row, rv->proba_rows ? rv->proba : NULL,
                                      rv->truth ? rv->truth + (row - rv->truth_first) : NULL,
                                      &s->confusion};
        LBK_TRY(lbk_votes_radius_classify(&rv->votes, rv->slice.lists, rv->slice.offsets + q, 1,
                                          &out));
        if (rv->slice.offsets[q + 1] == rv->slice.offsets[q] && row < rv->outlier_row)
            rv->outlier_row = row;
        if (rv->proba_rows)
            LBK_TRY(keep_probabilities(rv, row));
    }
    return LBK_OK;
}

static lbk_status regress_emit(void *user, const lbk_index_radius_slice *b)
{
    radius_votes *rv = user;
    LBK_TRY(lbk_radius_lists_fill(&rv->slice, b, rv->regress ? &rv->s->lookup : NULL));
    for (uint64_t q = 0; q < b->slice_count; q++) {
        const uint64_t row = lbk_index_radius_row(b, q);
        const double *truth =
            rv->truth_values ? rv->truth_values + (row - rv->truth_first) : NULL;
        const lbk_votes_values out = {rv->values + row, truth, &rv->s->score};
        uint64_t none = 0;
        LBK_TRY(lbk_votes_radius_regress(&rv->votes, rv->slice.lists, rv->slice.targets,
                                         rv->slice.offsets + q, 1, &out, &none));
        rv->empty += none;
    }
    return LBK_OK;
}

/* Collective: the true labels or values where the queries have them, on
 * each rank for the queries it may own: its own slice, or rank 0's, which
 * the other ranks get a copy of. */
static lbk_status share_truth(radius_votes *rv)
{
    lbk_run_state *s = rv->s;
    const bool has = rv->regress ? s->shape.query_targets : s->shape.query_labels;
    if (!has)
        return LBK_OK;
    const size_t size = rv->regress ? sizeof(double) : sizeof(int32_t);
    const void *own = rv->regress ? (const void *)s->query_targets : s->queries.labels;
    rv->truth_first = s->plan.owns_slice ? s->query_first : 0;
    if (!s->plan.owns_slice && s->comm->size > 1) {
        lbk_status st = LBK_OK;
        if (!s->root)
            rv->truth_copy = lbk_alloc_large_logged(rv->rows ? rv->rows : 1, size,
                                                    "query labels or targets", &st);
        LBK_TRY(lbk_comm_agree(s->comm, st));
        if (!s->root)
            own = rv->truth_copy;
        LBK_TRY(lbk_comm_bcast_bytes(s->comm, (void *)own, rv->rows * size));
    }
    if (rv->regress)
        rv->truth_values = own;
    else
        rv->truth = own;
    return LBK_OK;
}

static lbk_status alloc_votes(radius_votes *rv)
{
    lbk_run_state *s = rv->s;
    lbk_status st = LBK_OK;
    const uint64_t n = rv->rows ? rv->rows : 1;
    if (rv->regress) {
        rv->values = lbk_alloc_large_logged(n, sizeof *rv->values, "values", &st);
        if (st == LBK_OK)
            memset(rv->values, 0, (size_t)rv->rows * sizeof *rv->values);
        return st == LBK_OK ? lbk_run_targets_init(s) : st;
    }
    LBK_FAIL_IF(!s->shape.reference_labels, LBK_ERR_INPUT,
                "task classify with knn.radius needs reference labels (reference.labels or "
                "reference.label_column)");
    rv->labels = lbk_alloc_large_logged(n, sizeof *rv->labels, "predictions", &st);
    if (st == LBK_OK)
        memset(rv->labels, 0, (size_t)rv->rows * sizeof *rv->labels);
    if (st == LBK_OK && s->shape.query_labels)
        st = lbk_classify_confusion_init(
            &s->confusion, s->label_max < LBK_RUN_CONFUSION_MAX_CLASSES ? s->label_max + 1 : 0);
    if (st != LBK_OK || !s->job->output.probabilities[0])
        return st;
    rv->proba =
        lbk_alloc_large_logged((uint64_t)s->classes, sizeof *rv->proba, "probabilities", &st);
    if (st == LBK_OK)
        rv->proba_size =
            lbk_alloc_large_logged(rv->rows + 1, sizeof *rv->proba_size, "probability rows", &st);
    if (st == LBK_OK) {
        memset(rv->proba_size, 0, (size_t)(rv->rows + 1) * sizeof *rv->proba_size);
        rv->proba_rows = open_memstream(&rv->proba_text, &rv->proba_len);
        LBK_FAIL_IF(!rv->proba_rows, LBK_ERR_NOMEM, "out of host memory for probabilities");
    }
    return st;
}

/* Collective: the search, each slice voted by this rank's sink. */
static lbk_status search(radius_votes *rv)
{
    lbk_run_state *s = rv->s;
    const lbk_job *job = s->job;
    const lbk_index_radius_params params = {
        s->radii, lbk_radius_of_double(job->knn.metric, lbk_job_radius(job)),
        0,        false,
        false,    NULL,
        false};
    const lbk_index_radius_sink sink = {rv->regress ? regress_emit : classify_emit, NULL, rv};
    return lbk_index_radius(s->index, false, rv->rows, s->queries.points, &params, &sink);
}

/* Every rank alike: a query without a neighbour where there is no outlier
 * label fails the run, rank 0 naming the first. */
static lbk_status check_outliers(radius_votes *rv)
{
    lbk_run_state *s = rv->s;
    if (rv->regress || rv->votes.outlier != LBK_JOB_OUTLIER_NONE)
        return LBK_OK;
    LBK_TRY(lbk_comm_allreduce_u64(s->comm, &rv->outlier_row, LBK_REDUCE_MIN));
    if (rv->outlier_row == UINT64_MAX)
        return LBK_OK;
    const double r = s->radii ? (double)s->radii[rv->outlier_row] : lbk_job_radius(s->job);
    if (s->root)
        lbk_error("task classify: query row %llu has no neighbour within its radius (%g); "
                  "knn.outlier_label (most_frequent or a label) classifies such queries",
                  (unsigned long long)rv->outlier_row, r);
    return LBK_ERR_INPUT;
}

/* Rank 0: the predictions file, TEXT_PIECE queries at a time. */
static lbk_status write_predictions(radius_votes *rv)
{
    lbk_run_state *s = rv->s;
    if (!s->outputs_open || !lbk_outputs_want_predictions(&s->outputs))
        return LBK_OK;
    uint64_t offset = 0;
    for (uint64_t at = 0; at < rv->rows; at += TEXT_PIECE) {
        const uint64_t n = rv->rows - at < TEXT_PIECE ? rv->rows - at : TEXT_PIECE;
        char *text = NULL;
        size_t len = 0;
        lbk_status st = rv->regress
                            ? lbk_outputs_format_values(at, n, rv->values + at, &text, &len)
                            : lbk_outputs_format_predictions(at, n, rv->labels + at, &text, &len);
        if (st == LBK_OK)
            st = lbk_outputs_write_text(&s->outputs, offset, text, len);
        free(text);
        LBK_TRY(st);
        offset += len;
    }
    return LBK_OK;
}

/* Every rank: its probability rows at their offsets (proba_size, made
 * offsets: rows + 1), runs of consecutive rows in one write each. */
static lbk_status write_probabilities(radius_votes *rv)
{
    lbk_run_state *s = rv->s;
    const uint64_t *off = rv->proba_size;
    uint64_t at = 0; /* in this rank's text */
    for (uint64_t i = 0; i < rv->proba_count;) {
        uint64_t n = 1;
        while (i + n < rv->proba_count && rv->proba_row[i + n] == rv->proba_row[i] + n)
            n++;
        const uint64_t first = rv->proba_row[i], len = off[first + n] - off[first];
        LBK_FAIL_IF(at + len > rv->proba_len, LBK_ERR_INTERNAL,
                    "internal: probability rows of %llu bytes, %llu rendered",
                    (unsigned long long)(at + len), (unsigned long long)rv->proba_len);
        LBK_TRY(lbk_outputs_write_probabilities(&s->outputs, off[first], rv->proba_text + at,
                                                (size_t)len));
        at += len;
        i += n;
    }
    return LBK_OK;
}

/* Collective: every rank's results on every rank (predictions) and the
 * probability rows' offsets, then the files. */
static lbk_status gather_and_write(radius_votes *rv)
{
    lbk_run_state *s = rv->s;
    const lbk_comm *comm = s->comm;
    if (rv->regress) {
        LBK_TRY(lbk_comm_allreduce_or_bytes(comm, rv->values, rv->rows * sizeof *rv->values));
        LBK_TRY(lbk_comm_allreduce_u64(comm, &rv->empty, LBK_REDUCE_SUM));
        s->radius_empty = rv->empty;
    } else {
        LBK_TRY(lbk_comm_allreduce_or_bytes(comm, rv->labels, rv->rows * sizeof *rv->labels));
    }
    LBK_TRY(lbk_comm_agree(comm, s->root ? write_predictions(rv) : LBK_OK));
    if (!rv->proba_rows)
        return LBK_OK;
    lbk_status st = fclose(rv->proba_rows) == 0 ? LBK_OK : LBK_ERR_NOMEM;
    rv->proba_rows = NULL;
    if (st != LBK_OK)
        lbk_error("out of host memory rendering probabilities");
    LBK_TRY(lbk_comm_agree(comm, st));
    LBK_TRY(lbk_comm_allreduce_or_bytes(comm, rv->proba_size, rv->rows * sizeof *rv->proba_size));
    uint64_t total = 0; /* the sizes become offsets */
    for (uint64_t q = 0; q <= rv->rows; q++) {
        const uint64_t size = q < rv->rows ? rv->proba_size[q] : 0;
        rv->proba_size[q] = total;
        total += size;
    }
    return lbk_comm_agree(comm, s->outputs_open ? write_probabilities(rv) : LBK_OK);
}

static void votes_free(radius_votes *rv)
{
    if (rv->proba_rows)
        fclose(rv->proba_rows);
    free(rv->proba_text);
    free(rv->proba_row);
    lbk_alloc_large_free(rv->proba_size);
    lbk_alloc_large_free(rv->proba);
    lbk_alloc_large_free(rv->labels);
    lbk_alloc_large_free(rv->values);
    lbk_alloc_large_free(rv->truth_copy);
    lbk_radius_lists_free(&rv->slice);
}

lbk_status lbk_run_radius_votes(lbk_run_state *s)
{
    const lbk_job *job = s->job;
    radius_votes rv = {.s = s,
                       .regress = job->task == LBK_TASK_REGRESS,
                       .votes = {{job->knn.metric, job->knn.weights, job->knn.temperature},
                                 s->classes,
                                 s->outlier},
                       .rows = s->shape.query_rows,
                       .outlier_row = UINT64_MAX};
    lbk_status st = lbk_comm_agree(s->comm, alloc_votes(&rv));
    if (st == LBK_OK)
        st = share_truth(&rv);
    if (st == LBK_OK)
        st = search(&rv);
    if (st == LBK_OK)
        st = lbk_comm_agree(s->comm, check_outliers(&rv));
    if (st == LBK_OK)
        st = gather_and_write(&rv);
    votes_free(&rv);
    return st;
}

/* Rank 0: the most frequent label of the counts (ties: the smaller). */
static int32_t most_frequent(const uint64_t *counts, int classes)
{
    int32_t best = 0;
    for (int c = 1; c < classes; c++)
        best = counts[c] > counts[best] ? c : best;
    return best;
}

lbk_status lbk_run_radius_votes_prepare(lbk_run_state *s)
{
    s->outlier = LBK_JOB_OUTLIER_NONE;
    if (!lbk_job_radius_votes(s->job) || s->job->task != LBK_TASK_CLASSIFY)
        return LBK_OK;
    int32_t label = LBK_JOB_OUTLIER_NONE;
    (void)lbk_job_outlier_label(s->job, &label); /* checked with the job */
    s->outlier = label;
    if (label != LBK_JOB_OUTLIER_MOST_FREQUENT || s->classes <= 0)
        return LBK_OK;
    /* Every reference row once: a replicated set's on rank 0 alone. */
    lbk_status st = LBK_OK;
    uint64_t *counts =
        lbk_alloc_large_logged((uint64_t)s->classes, sizeof *counts, "label counts", &st);
    if (st == LBK_OK) {
        memset(counts, 0, (size_t)s->classes * sizeof *counts);
        const bool mine = !s->plan.replicated || s->root;
        for (uint64_t i = 0; mine && s->shard.labels && i < s->shard.rows; i++)
            if (s->shard.labels[i] >= 0 && s->shard.labels[i] < s->classes)
                counts[s->shard.labels[i]]++;
    }
    st = lbk_comm_agree(s->comm, st);
    if (st == LBK_OK)
        st = lbk_comm_reduce_sum_u64(s->comm, counts, (uint64_t)s->classes);
    if (st == LBK_OK) {
        s->outlier = s->root ? most_frequent(counts, s->classes) : 0;
        st = lbk_comm_bcast_bytes(s->comm, &s->outlier, sizeof s->outlier);
    }
    lbk_alloc_large_free(counts);
    return st;
}
