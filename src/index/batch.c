#include "batch_impl.h"

#include "merge.h"
#include "row_split.h"
#include "try.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rank 0 holds the queries; every rank gets the whole batch. */
static lbk_status broadcast_batch(lbk_index *s, lbk_batch *b)
{
    const uint64_t dim = (uint64_t)s->shape.dim;
    float *points = s->root ? (float *)s->query_points + b->first * dim : s->batch_points;
    b->points = points;
    return lbk_comm_bcast_floats(s->comm, points, b->count * dim);
}

/* Compact rows widened a batch at a time, never the whole shard. */
void lbk_batch_rows_as_floats(const lbk_dataset *shard, uint64_t row, uint64_t count, float *out)
{
    const uint64_t dim = (uint64_t)shard->dim, first = row * dim, values = count * dim;
    if (shard->dtype == LBK_DTYPE_FLOAT32) {
        memcpy(out, shard->points + first, (size_t)values * sizeof(float));
        return;
    }
    lbk_dataset_values_to_float(shard->dtype, shard->raw, first, values, out);
}

const float *lbk_batch_own_points(lbk_index *s, lbk_batch *b)
{
    b->in_order = s->self_order != NULL;
    if (b->count == 0)
        return NULL;
    if (!s->self_order && s->shard.dtype == LBK_DTYPE_FLOAT32)
        return s->shard.points + b->first * (uint64_t)s->shape.dim;
    if (!s->self_order) {
        lbk_batch_rows_as_floats(&s->shard, b->first, b->count, s->batch_points);
        return s->batch_points;
    }
    for (uint64_t q = 0; q < b->count; q++)
        lbk_batch_rows_as_floats(&s->shard, s->self_order[b->first + q], 1,
                                 s->batch_points + q * (uint64_t)s->shape.dim);
    return s->batch_points;
}

/* Self search of row shards: the batch's reference rows from the ranks
 * that hold them. Each rank puts its own rows into a zeroed buffer and a
 * bitwise OR over the ranks fills in the rest, exactly, as every row has
 * one holder. */
static lbk_status gather_own_rows(lbk_index *s, lbk_batch *b)
{
    const uint64_t dim = (uint64_t)s->shape.dim, end = b->first + b->count;
    const uint64_t held_first = s->shard.first_row, held_end = held_first + s->shard.rows;
    const uint64_t lo = b->first > held_first ? b->first : held_first;
    const uint64_t hi = end < held_end ? end : held_end;
    if (s->self_order) { /* one rank: it holds every row */
        b->points = lbk_batch_own_points(s, b);
        return LBK_OK;
    }
    b->points = s->batch_points;
    memset(s->batch_points, 0, (size_t)(b->count * dim) * sizeof(float));
    if (hi > lo)
        lbk_batch_rows_as_floats(&s->shard, lo - held_first, hi - lo,
                                 s->batch_points + (lo - b->first) * dim);
    return lbk_comm_allreduce_or_bytes(s->comm, s->batch_points, b->count * dim * sizeof(float));
}

/* Self search of replicas: every rank holds every row. */
static lbk_status replica_rows(lbk_index *s, lbk_batch *b)
{
    b->points = lbk_batch_own_points(s, b);
    return LBK_OK;
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

lbk_status lbk_batch_search(lbk_index *s, const float *points, const float *bounds, bool in_order,
                            uint64_t count, lbk_knn_candidate *out)
{
    const uint64_t dim = (uint64_t)s->shape.dim, k = (uint64_t)s->params.k;
    for (uint64_t at = 0; at < count; at += s->info.batch) {
        const uint64_t n = count - at < s->info.batch ? count - at : s->info.batch;
        s->result.queries = n;
        LBK_TRY(lbk_engine_query(s->engine, points + at * dim, bounds ? bounds + at : NULL,
                                 in_order, n, &s->result));
        LBK_TRY(to_candidates(&s->result, &s->shard, out + at * k));
        s->info.largest_search = n > s->info.largest_search ? n : s->info.largest_search;
    }
    lbk_engine_work work;
    lbk_engine_work_of(s->engine, &work);
    s->info.stats.distance_evals = work.distance_evals;
    s->info.stats.nodes_visited = work.nodes_visited;
    s->info.stats.queries_answered += count;
    return LBK_OK;
}

/* The K-lists of the batch's queries [first, first + count) in this rank's
 * references. */
static lbk_status search_range(lbk_index *s, const lbk_batch *b, uint64_t first, uint64_t count,
                               lbk_knn_candidate *out)
{
    s->info.stats.queries_phase1 += count;
    return lbk_batch_search(s, b->points + first * (uint64_t)s->shape.dim, NULL, b->in_order,
                            count, out);
}

/* Sharded references: every rank searches the whole batch in its shard.
 * One rank's lists are already final: they go straight to s->merged (a
 * copy of every list otherwise, 5 % of a 1e6-query tree search). */
static lbk_status search_whole_batch(lbk_index *s, lbk_batch *b)
{
    b->slice_first = 0;
    b->slice_count = b->count;
    return search_range(s, b, 0, b->count, s->comm->size == 1 ? s->merged : s->local);
}

/* Replicated references: each rank searches only its own slice of the batch,
 * and those lists are already final, so they go straight to s->merged. */
static lbk_status search_own_slice(lbk_index *s, lbk_batch *b)
{
    lbk_row_split_range(b->count, s->comm->size, s->comm->rank, &b->slice_first, &b->slice_count);
    return search_range(s, b, b->slice_first, b->slice_count, s->merged);
}

/* The bytes the K-list merge's model (merge.h) has this rank receive: the
 * other ranks' lists of the queries it ends up with (reduce: rank 0 all of
 * them; reduce-scatter: its slice), so that the sum over the ranks equals
 * the model's bytes sent. */
static uint64_t merge_received(const lbk_index *s, const lbk_batch *b)
{
    const uint64_t list = (uint64_t)s->params.k * sizeof(lbk_knn_candidate);
    return (uint64_t)(s->comm->size - 1) * b->slice_count * list;
}

/* The K-list reduction: rank 0 gets every list (reduce), or each rank its
 * slice (reduce_scatter). */
static lbk_status merge_lists(lbk_index *s, lbk_batch *b)
{
    if (s->comm->size == 1)
        return LBK_OK; /* search_whole_batch wrote the final lists */
    uint64_t moved = 0;
    const lbk_status st =
        lbk_merge_candidates(s->comm, s->params.merge, s->local, b->count, s->params.k, s->merged,
                             &b->slice_first, &b->slice_count, &moved);
    s->info.merge_bytes += moved;
    s->info.stats.bytes_sent += moved;
    s->info.stats.bytes_received += merge_received(s, b);
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

static const lbk_batch_strategy shard_reduce_self = {NULL,
                                                     {{gather_own_rows, LBK_PHASE_DISTRIBUTE},
                                                      {search_whole_batch, LBK_PHASE_QUERY},
                                                      {merge_lists, LBK_PHASE_MERGE},
                                                      {lbk_batch_emit, LBK_PHASE_OUTPUT}},
                                                     false,
                                                     false};
static const lbk_batch_strategy shard_reduce_scatter_self = {
    NULL,
    {{gather_own_rows, LBK_PHASE_DISTRIBUTE},
     {search_whole_batch, LBK_PHASE_QUERY},
     {merge_lists, LBK_PHASE_MERGE},
     {lbk_batch_emit, LBK_PHASE_OUTPUT}},
    true,
    false};
static const lbk_batch_strategy replicate_self = {NULL,
                                                  {{replica_rows, LBK_PHASE_DISTRIBUTE},
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

const lbk_batch_strategy *lbk_batch_strategy_for(lbk_partition partition, lbk_merge_mode merge,
                                                 bool self)
{
    /* A switch, so that -Wswitch points here when a partition is added. */
    switch (partition) {
    case LBK_PARTITION_AUTO: /* resolved before this is asked */
    case LBK_PARTITION_SHARD: break;
    case LBK_PARTITION_REPLICATE: return self ? &replicate_self : &replicate;
    case LBK_PARTITION_SPATIAL:
        return self ? &lbk_batch_spatial_self_strategy : &lbk_batch_spatial_strategy;
    }
    if (merge == LBK_MERGE_REDUCE_SCATTER)
        return self ? &shard_reduce_scatter_self : &shard_reduce_scatter;
    return self ? &shard_reduce_self : &shard_reduce;
}

lbk_status lbk_batch_emit(lbk_index *s, lbk_batch *b)
{
    /* Exact integer keys travel coded through the merge; the final lists
     * the sink sees hold their float32 keys. */
    if (lbk_engine_int_keys(s->engine) && (s->strategy->sliced || s->root))
        lbk_engine_int_keys_decode(s->params.metric, s->merged,
                                   b->slice_count * (uint64_t)s->params.k);
    if (!s->strategy->sliced && !s->root) {
        if (!s->sink->every_rank)
            return LBK_OK;
        const lbk_index_slice none = {b->first,  b->count,    0,    0,
                                      s->merged, s->params.k, NULL, NULL};
        return s->sink->emit(s->sink->user, &none);
    }
    s->info.stats.queries_owned += b->slice_count;
    const lbk_index_slice slice = {b->first,
                                   b->count,
                                   b->slice_first,
                                   b->slice_count,
                                   s->merged,
                                   s->params.k,
                                   s->self && s->spatial ? &s->shard : NULL,
                                   s->self ? s->self_order : NULL};
    return s->sink->emit(s->sink->user, &slice);
}
