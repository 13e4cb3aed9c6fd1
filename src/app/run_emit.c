/* The run's sink of the index's final K-lists: each slice is voted (task
 * regress: averaged), scored and written to the result files at its
 * offsets. */
#include "run_state.h"

#include "checkpoint.h"

#include "log.h"
#include "try.h"
#include "votes.h"

#include <stdio.h>
#include <stdlib.h>

/* Predictions and probabilities are variable-length text: every rank's
 * slice goes after the slices of the ranks before it, so offsets come from
 * an exclusive scan, which a rank joins even when it has failed, so that no
 * rank is left waiting in it. `text` (len bytes) is this rank's slice;
 * *offset the file's bytes so far, over all ranks. */
typedef lbk_status (*text_writer)(lbk_outputs *out, uint64_t offset, const char *text,
                                  size_t len);

static lbk_status write_text_slice(lbk_run_state *s, text_writer write, uint64_t *offset,
                                   const char *text, size_t len, lbk_status st)
{
    uint64_t before = 0, total = len;
    if (s->plan.sliced) {
        const lbk_status scan = lbk_comm_exscan_u64(s->comm, len, &before, &total);
        st = st != LBK_OK ? st : scan;
    }
    if (st == LBK_OK && len > 0)
        st = write(&s->outputs, *offset + before, text, len);
    *offset += total;
    return st;
}

/* How the run's lists vote (src/task/votes.h): every slot of lists K long. */
static lbk_votes votes_of(const lbk_run_state *s, int k)
{
    const lbk_job *job = s->job;
    return (lbk_votes){
        {job->knn.metric, job->knn.weights, job->knn.temperature}, k, k, s->classes};
}

/* The slice's votes: predictions, accuracy (top-1 and top-5) and, when
 * `rows` is given, the probability rows appended to it, proba_queries
 * queries at a time (the rows of `proba`). */
static lbk_status vote_slice(lbk_run_state *s, const lbk_index_slice *b, const int32_t *truth,
                             int32_t *predictions, FILE *rows)
{
    const lbk_votes v = votes_of(s, s->job->knn.k);
    const uint64_t piece = rows ? s->proba_queries : b->slice_count;
    for (uint64_t at = 0; at < b->slice_count; at += piece) {
        const uint64_t n = b->slice_count - at < piece ? b->slice_count - at : piece;
        const lbk_votes_labels out = {predictions + at, rows ? s->proba : NULL,
                                      truth ? truth + at : NULL, &s->confusion};
        LBK_TRY(lbk_votes_classify(&v, b->lists + at * (uint64_t)v.stride, n, &out));
        /* The global row once per run of consecutive ones, not per row. */
        uint64_t g = 0, run = 0;
        for (uint64_t q = 0; rows && q < n; q++, g++, run--) {
            if (run == 0) {
                g = lbk_run_rows_global(s, b->first + b->slice_first + at + q, &run);
                run += run == 0; /* past the rows (never): looked up row by row */
            }
            lbk_outputs_print_probabilities(rows, g, s->proba + q * (uint64_t)s->classes,
                                            s->classes);
        }
    }
    return LBK_OK;
}

static bool want_probabilities(const lbk_run_state *s)
{
    return s->outputs_open && s->shape.reference_labels &&
           lbk_outputs_want_probabilities(&s->outputs);
}

/* This rank's predictions of queries [first, first + count) and its
 * probability rows (`proba`, len bytes), each after the slices of the ranks
 * before it. Both scans are joined whatever st is: every rank takes the same
 * collective steps. */
static lbk_status write_texts(lbk_run_state *s, uint64_t first, uint64_t count, const char *proba,
                              size_t proba_len, lbk_status st)
{
    char *pred = NULL;
    size_t pred_len = 0;
    /* The predictions of [first, first + count): an owned slice's at their
     * place in it, a batch's from its start. */
    const uint64_t at = s->plan.owns_slice ? first - s->query_first : 0;
    /* Searched rows in one range here: a resumed run's text is in order
     * only where the finished rows are a prefix (plans that do not own
     * slices), or the checkpoint's held files give it (write_held). */
    const uint64_t row = lbk_run_rows_global(s, first, NULL);
    if (st == LBK_OK && s->outputs_open && lbk_outputs_want_predictions(&s->outputs))
        st = s->values ? lbk_outputs_format_values(row, count, s->values + at, &pred, &pred_len)
                       : lbk_outputs_format_predictions(row, count, s->predictions + at, &pred,
                                                        &pred_len);
    st = write_text_slice(s, lbk_outputs_write_text, &s->outputs.text_offset, pred, pred_len, st);
    if (s->job->output.probabilities[0])
        st = write_text_slice(s, lbk_outputs_write_probabilities, &s->outputs.proba_offset, proba,
                              proba_len, st);
    free(pred);
    return st;
}

/* The slice's lists into the array outputs (and, with `truth`, compared
 * with the ground truth) at their rows of the query file, range by range
 * of the searched rows. */
static lbk_status write_lists(lbk_run_state *s, const lbk_index_slice *b, bool truth)
{
    const uint64_t v = b->first + b->slice_first;
    for (uint64_t q = 0; q < b->slice_count;) {
        uint64_t run;
        const uint64_t g = lbk_run_rows_global(s, v + q, &run);
        run = run < b->slice_count - q ? run : b->slice_count - q;
        const lbk_knn_candidate *lists = b->lists + q * (uint64_t)b->k;
        if (s->outputs_open)
            LBK_TRY(lbk_outputs_write_lists(&s->outputs, g, run, lists));
        if (truth)
            LBK_TRY(lbk_truth_add(s->job, s->shape.dim, g, run, lists, &s->truth));
        q += run;
    }
    return LBK_OK;
}

/* The true labels of the slice, where the queries have them: this rank's
 * own (owns_slice), rank 0's, or, where every rank emits a slice of rank
 * 0's batch, rank 0's broadcast (a collective every rank joins). */
static lbk_status slice_truth(lbk_run_state *s, const lbk_index_slice *b, const int32_t **truth)
{
    *truth = NULL;
    if (!s->shape.query_labels)
        return LBK_OK;
    if (s->plan.owns_slice) {
        *truth = s->queries.labels + (b->first - s->query_first) + b->slice_first;
        return LBK_OK;
    }
    int32_t *batch = s->root ? s->queries.labels + b->first : s->batch_truth;
    if (s->plan.sliced)
        LBK_TRY(lbk_comm_bcast_bytes(s->comm, batch, b->count * sizeof *batch));
    *truth = batch + b->slice_first;
    return LBK_OK;
}

/* slice_truth's for task regress: the true values of the slice. */
static lbk_status slice_truth_values(lbk_run_state *s, const lbk_index_slice *b,
                                     const double **truth)
{
    *truth = NULL;
    if (!s->shape.query_targets)
        return LBK_OK;
    if (s->plan.owns_slice) {
        *truth = s->query_targets + (b->first - s->query_first) + b->slice_first;
        return LBK_OK;
    }
    if (!s->plan.sliced && !s->root)
        return LBK_OK; /* an empty slice: rank 0 holds the batch */
    double *batch = s->root ? s->query_targets + b->first : s->batch_truth_values;
    if (s->plan.sliced)
        LBK_TRY(lbk_comm_bcast_bytes(s->comm, batch, b->count * sizeof *batch));
    *truth = batch + b->slice_first;
    return LBK_OK;
}

/* Task regress: every rank, every batch (the lookup is collective). */
static lbk_status regress_slice(lbk_run_state *s, const lbk_index_slice *b)
{
    const double *truth = NULL;
    lbk_status st = slice_truth_values(s, b, &truth);
    double *t = s->neighbour_targets;
    st = lbk_run_targets_lookup(s, b, t, st);
    const bool owns = s->plan.owns_slice;
    double *values = owns ? s->values + (b->first - s->query_first) : s->values;
    const lbk_votes v = votes_of(s, b->k);
    const lbk_votes_values out = {values, truth, &s->score};
    if (st == LBK_OK)
        st = lbk_votes_regress(&v, b->lists, t, b->slice_count, &out);
    if (st == LBK_OK)
        st = write_lists(s, b, false);
    if (!owns)
        st = write_texts(s, b->first + b->slice_first, b->slice_count, NULL, 0, st);
    return st;
}

lbk_status lbk_run_emit(void *run_state, const lbk_index_slice *b)
{
    lbk_run_state *s = run_state;
    if (s->job->task == LBK_TASK_REGRESS)
        return regress_slice(s, b);
    const int32_t *truth = NULL;
    /* Every failure below falls through to write_texts, whose scans every
     * rank that emits must join. */
    lbk_status st = slice_truth(s, b, &truth);
    /* Ranks that own a slice of the query file vote batch by batch but write
     * their text once, at the end (lbk_run_emit_finish): a slice's offsets
     * depend on every earlier rank's whole slice. */
    const bool owns = s->plan.owns_slice;
    int32_t *predictions = owns ? s->predictions + (b->first - s->query_first) : s->predictions;
    char *proba = NULL;
    size_t proba_len = 0;
    FILE *rows = owns ? s->proba_rows : NULL;
    if (st == LBK_OK && !owns && want_probabilities(s)) {
        rows = open_memstream(&proba, &proba_len);
        if (!rows) {
            lbk_error("out of host memory rendering probabilities");
            st = LBK_ERR_NOMEM;
        }
    }
    if (st == LBK_OK && s->shape.reference_labels)
        st = vote_slice(s, b, truth, predictions, rows);
    if (!owns && rows && fclose(rows) != 0 && st == LBK_OK) {
        lbk_error("out of host memory rendering probabilities");
        st = LBK_ERR_NOMEM;
    }
    if (st == LBK_OK)
        st = write_lists(s, b, true);
    if (!owns)
        st = write_texts(s, b->first + b->slice_first, b->slice_count, proba, proba_len, st);
    free(proba);
    return st;
}

lbk_status lbk_run_emit_graph(void *run_state, const lbk_index_slice *slice)
{
    lbk_run_state *s = run_state;
    if (!s->graph_queries)
        return lbk_run_graph_add(&s->graph, slice);
    /* Searched as queries: each row's global row from the order. */
    lbk_index_slice b = *slice;
    b.own = NULL;
    b.order = s->graph_order;
    const lbk_status st = lbk_checkpoint_hold_graph(s, &s->graph.rows, &b, s->graph_order);
    /* Joined whatever st is: the rows may travel in a collective. */
    const lbk_status added = lbk_run_graph_add(&s->graph, &b);
    return st != LBK_OK ? st : added;
}

lbk_status lbk_run_emit_finish(lbk_run_state *s)
{
    if (s->job->task == LBK_TASK_GRAPH) {
        /* The rows the checkpoint's runs finished, held in their files. */
        if (s->graph_queries)
            LBK_TRY(lbk_comm_agree(s->comm, lbk_checkpoint_load_graph(s)));
        return s->outputs_open ? lbk_run_graph_write(&s->graph, &s->outputs, s->job->output.graph)
                               : LBK_OK;
    }
    if (!s->plan.owns_slice)
        return LBK_OK;
    /* A checkpointed run's rows are in its held files, with those of the
     * runs before it (resumed on another rank count: other slices). */
    if (s->checkpoint)
        return lbk_checkpoint_write_held(s);
    lbk_status st = LBK_OK;
    if (s->proba_rows) {
        const int rc = fclose(s->proba_rows);
        s->proba_rows = NULL;
        if (rc != 0) {
            lbk_error("out of host memory rendering probabilities");
            st = LBK_ERR_NOMEM;
        }
    }
    /* Every rank's slice text after those of the ranks before it: one scan
     * over the whole slices, which every rank joins. */
    return write_texts(s, s->query_first, s->queries.rows, s->proba_text, s->proba_text_len, st);
}
