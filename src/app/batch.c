#include "batch.h"

#include "classify.h"
#include "merge.h"
#include "try.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Rank 0 holds the queries; every rank gets the whole batch, and where every
 * rank emits a slice, the labels to score it. */
static lbk_status broadcast_batch(lbk_run_state *s, lbk_batch *b)
{
    const uint64_t dim = (uint64_t)s->shape.dim;
    b->points = s->root ? s->queries.points + b->first * dim : s->batch_points;
    b->truth = NULL;
    LBK_TRY(lbk_comm_bcast_floats(s->comm, b->points, b->count * dim));
    if (!s->shape.query_labels)
        return LBK_OK;
    b->truth = s->root ? s->queries.labels + b->first : s->batch_truth;
    if (!s->strategy->sliced)
        return LBK_OK;
    return lbk_comm_bcast_bytes(s->comm, b->truth, b->count * sizeof *b->truth);
}

/* Engine output (shard rows) to merge candidates (global ids, labels). A
 * row the shard does not have is an engine's bug, caught here before its
 * label or id is read. */
static lbk_status to_candidates(const lbk_knn_result *res, const lbk_dataset *shard,
                                lbk_knn_candidate *out)
{
    const uint64_t slots = res->queries * (uint64_t)res->k;
    for (uint64_t s = 0; s < slots; s++) {
        const uint32_t idx = res->index[s];
        if (idx == UINT32_MAX) {
            out[s].key = INFINITY;
            out[s].label = -1;
            out[s].id = UINT64_MAX;
        } else {
            LBK_FAIL_IF(idx >= shard->rows, LBK_ERR_INTERNAL,
                        "internal: the engine answered row %lu of a shard of %llu rows",
                        (unsigned long)idx, (unsigned long long)shard->rows);
            out[s].key = res->keys[s];
            out[s].label = shard->labels ? shard->labels[idx] : -1;
            out[s].id = lbk_dataset_id(shard, idx);
        }
    }
    return LBK_OK;
}

lbk_status lbk_batch_search(lbk_run_state *s, const float *points, uint64_t count,
                            lbk_knn_candidate *out)
{
    const uint64_t dim = (uint64_t)s->shape.dim, k = (uint64_t)s->job->knn.k;
    for (uint64_t at = 0; at < count; at += s->batch) {
        const uint64_t n = count - at < s->batch ? count - at : s->batch;
        s->result.queries = n;
        LBK_TRY(lbk_engine_query(s->engine, points + at * dim, n, &s->result));
        LBK_TRY(to_candidates(&s->result, &s->shard, out + at * k));
        s->largest_search = n > s->largest_search ? n : s->largest_search;
    }
    return LBK_OK;
}

/* The K-lists of the batch's queries [first, first + count) in this rank's
 * references. */
static lbk_status search_range(lbk_run_state *s, const lbk_batch *b, uint64_t first,
                               uint64_t count, lbk_knn_candidate *out)
{
    s->stats.queries_phase1 += count;
    return lbk_batch_search(s, b->points + first * (uint64_t)s->shape.dim, count, out);
}

/* Sharded references: every rank searches the whole batch in its shard. */
static lbk_status search_whole_batch(lbk_run_state *s, lbk_batch *b)
{
    b->slice_first = 0;
    b->slice_count = b->count;
    return search_range(s, b, 0, b->count, s->local);
}

/* Replicated references: each rank searches only its own slice of the batch,
 * and those lists are already final, so they go straight to s->merged. */
static lbk_status search_own_slice(lbk_run_state *s, lbk_batch *b)
{
    lbk_merge_query_slice(b->count, s->comm->size, s->comm->rank, &b->slice_first,
                          &b->slice_count);
    return search_range(s, b, b->slice_first, b->slice_count, s->merged);
}

/* The K-list reduction: rank 0 gets every list (reduce), or each rank its
 * slice (reduce_scatter). */
static lbk_status merge_lists(lbk_run_state *s, lbk_batch *b)
{
    uint64_t moved = 0;
    const lbk_status st =
        lbk_merge_candidates(s->comm, s->job->mpi.merge, s->local, b->count, s->job->knn.k,
                             s->merged, &b->slice_first, &b->slice_count, &moved);
    s->merge_bytes += moved;
    s->stats.bytes_sent += moved;
    return st;
}

static const lbk_batch_strategy shard_reduce = {NULL,
                                                {{broadcast_batch, LBK_PHASE_DISTRIBUTE},
                                                 {search_whole_batch, LBK_PHASE_QUERY},
                                                 {merge_lists, LBK_PHASE_MERGE},
                                                 {lbk_batch_emit, LBK_PHASE_OUTPUT}},
                                                false,
                                                false};
static const lbk_batch_strategy shard_reduce_scatter = {NULL,
                                                        {{broadcast_batch, LBK_PHASE_DISTRIBUTE},
                                                         {search_whole_batch, LBK_PHASE_QUERY},
                                                         {merge_lists, LBK_PHASE_MERGE},
                                                         {lbk_batch_emit, LBK_PHASE_OUTPUT}},
                                                        true,
                                                        false};
static const lbk_batch_strategy replicate = {NULL,
                                             {{broadcast_batch, LBK_PHASE_DISTRIBUTE},
                                              {search_own_slice, LBK_PHASE_QUERY},
                                              {lbk_batch_emit, LBK_PHASE_OUTPUT}},
                                             true,
                                             false};

lbk_partition lbk_batch_partition_resolve(lbk_partition requested, lbk_engine engine, int ranks,
                                          const char **why)
{
    if (requested != LBK_PARTITION_AUTO) {
        *why = "requested by mpi.partition";
        return requested;
    }
    if (ranks == 1) {
        *why = "auto: one rank holds every reference point";
        return LBK_PARTITION_SHARD;
    }
    if (engine == LBK_ENGINE_KDTREE) {
        *why = "auto: k-d tree on several ranks: each rank owns one box of space and searches "
               "only the queries that can have neighbours in it";
        return LBK_PARTITION_SPATIAL;
    }
    *why = "auto: brute force on several ranks: each rank searches every query in its row "
           "shard, so the work per rank falls with the shard";
    return LBK_PARTITION_SHARD;
}

const lbk_batch_strategy *lbk_batch_strategy_for(lbk_partition partition, lbk_merge_mode merge)
{
    /* A switch, so that -Wswitch points here when a partition is added. */
    switch (partition) {
    case LBK_PARTITION_AUTO: /* resolved before this is asked */
    case LBK_PARTITION_SHARD: break;
    case LBK_PARTITION_REPLICATE: return &replicate;
    case LBK_PARTITION_SPATIAL: return &lbk_batch_spatial_strategy;
    }
    return merge == LBK_MERGE_REDUCE_SCATTER ? &shard_reduce_scatter : &shard_reduce;
}

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
    if (s->strategy->sliced) {
        const lbk_status scan = lbk_comm_exscan_u64(s->comm, len, &before, &total);
        st = st != LBK_OK ? st : scan;
    }
    if (st == LBK_OK && len > 0)
        st = write(&s->outputs, *offset + before, text, len);
    *offset += total;
    return st;
}

/* The slice's votes: predictions, accuracy (top-1 and top-5) and, when
 * `rows` is given, the probability rows appended to it. */
static void vote_slice(lbk_run_state *s, const lbk_batch *b, int32_t *predictions, FILE *rows)
{
    const lbk_job *job = s->job;
    const int k = job->knn.k;
    const lbk_classify_rule rule = {job->knn.metric, job->knn.weights, job->knn.temperature};
    const int32_t *truth = b->truth ? b->truth + b->slice_first : NULL;
    for (uint64_t q = 0; q < b->slice_count; q++) {
        const int n = lbk_classify_scores(s->merged + q * (uint64_t)k, k, &rule, s->scores);
        predictions[q] = lbk_classify_top(s->scores, n);
        if (truth) {
            lbk_classify_confusion_add(&s->confusion, truth[q], predictions[q]);
            s->confusion.correct_top5 += lbk_classify_in_top(s->scores, n, truth[q], 5);
        }
        if (rows) {
            lbk_classify_probabilities(s->scores, n, s->classes, s->proba);
            lbk_outputs_print_probabilities(rows, b->first + b->slice_first + q, s->proba,
                                            s->classes);
        }
    }
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
static lbk_status write_texts(lbk_run_state *s, uint64_t first, uint64_t count,
                              const int32_t *predictions, const char *proba, size_t proba_len,
                              lbk_status st)
{
    char *pred = NULL;
    size_t pred_len = 0;
    if (st == LBK_OK && s->outputs_open && lbk_outputs_want_predictions(&s->outputs))
        st = lbk_outputs_format_predictions(first, count, predictions, &pred, &pred_len);
    st = write_text_slice(s, lbk_outputs_write_text, &s->outputs.text_offset, pred, pred_len, st);
    if (s->job->output.probabilities[0])
        st = write_text_slice(s, lbk_outputs_write_probabilities, &s->outputs.proba_offset, proba,
                              proba_len, st);
    free(pred);
    return st;
}

lbk_status lbk_batch_emit(lbk_run_state *s, lbk_batch *b)
{
    if (!s->strategy->sliced && !s->root)
        return LBK_OK;
    /* Ranks that own a slice of the query file vote batch by batch but write
     * their text once, at the end (lbk_batch_finish): a slice's offsets
     * depend on every earlier rank's whole slice. */
    const bool owns = s->strategy->owns_slice;
    int32_t *predictions = owns ? s->predictions + (b->first - s->query_first) : s->predictions;
    char *proba = NULL;
    size_t proba_len = 0;
    FILE *rows = owns ? s->proba_rows : NULL;
    if (!owns && want_probabilities(s)) {
        rows = open_memstream(&proba, &proba_len);
        LBK_FAIL_IF(!rows, LBK_ERR_NOMEM, "out of host memory rendering probabilities");
    }
    if (s->shape.reference_labels)
        vote_slice(s, b, predictions, rows);
    s->stats.queries_owned += b->slice_count;
    lbk_status st = LBK_OK;
    if (!owns && rows && fclose(rows) != 0) {
        lbk_error("out of host memory rendering probabilities");
        st = LBK_ERR_NOMEM;
    }
    if (st == LBK_OK && s->outputs_open)
        st = lbk_outputs_write_lists(&s->outputs, b->first + b->slice_first, b->slice_count,
                                     s->merged);
    if (!owns)
        st = write_texts(s, b->first + b->slice_first, b->slice_count, predictions, proba,
                         proba_len, st);
    free(proba);
    return st;
}

lbk_status lbk_batch_finish(lbk_run_state *s)
{
    if (!s->strategy->owns_slice)
        return LBK_OK;
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
    return write_texts(s, s->query_first, s->queries.rows, s->predictions, s->proba_text,
                       s->proba_text_len, st);
}
