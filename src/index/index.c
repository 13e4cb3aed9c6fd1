#include "index.h"

#include "alloc_large.h"
#include "batch_impl.h"
#include "engine_params.h"
#include "log.h"
#include "merge.h"
#include "morton.h"
#include "normalize.h"
#include "row_split.h"
#include "timer.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

/* Upper bound on queries per batch, whatever the engine could take, so the
 * host-side K-lists of one batch stay in the hundreds of MiB at most: at
 * most BATCH_CAP queries and BATCH_LIST_BYTES of each of the two K-list
 * buffers (K = 4096 lists are 64 KiB each). */
#define BATCH_CAP (1u << 18)
#define BATCH_LIST_BYTES ((uint64_t)256 << 20)

/* The self search's automatic batch (device.batch: 0) is at most a
 * SELF_BATCH_SHARE-th of the most points a rank searches: its buffers
 * (about five K-list copies of 16 bytes a candidate, engine, device,
 * merged and the two exchanges) then stay near a quarter of the graph
 * collector's 8 bytes a candidate per row, whatever K, and so fall with P
 * like the rest of the rank's memory instead of staying fixed. Never below
 * SELF_BATCH_FLOOR: enough queries in flight to keep a GPU's tree walk busy
 * (half of BATCH_CAP; an H200 holds about 270 000 resident threads), and
 * far more than the per-batch costs (a launch, a few collectives) need. */
#define SELF_BATCH_SHARE 32u
#define SELF_BATCH_FLOOR (BATCH_CAP / 2)

void lbk_index_plan_make(const lbk_index_params *options, int dim, uint64_t reference_rows,
                         int ranks, lbk_index_plan *plan)
{
    lbk_engine_params params;
    lbk_engine_params_from_index(options, NULL, &params);
    plan->engine = lbk_engine_resolve(&params, dim, reference_rows, &plan->engine_why);
    plan->partition = lbk_batch_partition_resolve(options->partition, plan->engine, ranks,
                                                  &plan->partition_why);
    const lbk_batch_strategy *strategy =
        lbk_batch_strategy_for(plan->partition, options->merge, false);
    plan->replicated = plan->partition == LBK_PARTITION_REPLICATE;
    plan->owns_slice = strategy->owns_slice;
    plan->sliced = strategy->sliced;
}

void lbk_index_query_slice(uint64_t queries, const lbk_comm *comm, uint64_t *first,
                           uint64_t *count)
{
    lbk_row_split_range(queries, comm->size, comm->rank, first, count);
}

/* Collective, where the strategy moves the reference points (spatial). */
static lbk_status redistribute(lbk_index *s)
{
    if (!s->strategy->redistribute)
        return LBK_OK;
    const double t = lbk_timer_now();
    const lbk_status st = s->strategy->redistribute(s);
    s->info.phase[LBK_PHASE_BUILD] += lbk_timer_now() - t;
    return st;
}

/* reference.type auto: whether brute force searches this shard's points
 * faster widened. float16 shards take the prefilter as float32 ones do, but
 * not yet the L2 cascade. */
static bool auto_widens(const lbk_index *s)
{
    const lbk_index_params *p = &s->params;
    if (s->shard.dtype == LBK_DTYPE_FLOAT16)
        return lbk_engine_float16_slower(s->device, p->metric, p->k, s->shape.dim);
    return lbk_engine_float32_faster(s->device, s->shard.dtype, p->metric, p->k, s->shape.dim);
}

/* Compact points widened, exactly, where `why` says they must be (NULL:
 * they stay), rank 0 saying why once; cosine's rows normalised as the
 * app's float32 rows are. */
static lbk_status widen_shard(lbk_index *s, const char *why)
{
    if (s->shard.dtype == LBK_DTYPE_FLOAT32 || !why)
        return LBK_OK;
    if (s->root)
        lbk_info("%s reference points widened to float32: %s", lbk_dtype_name(s->shard.dtype),
                 why);
    const bool normalise = s->params.metric == LBK_METRIC_COSINE; /* as the app's float32 rows */
    LBK_TRY(lbk_dataset_widen(&s->shard));
    if (normalise)
        lbk_normalize_rows(s->shard.points, s->shard.rows, s->shard.dim);
    return LBK_OK;
}

/* Compact points (dataset.h) stay compact where the plan searches them so:
 * brute force and the k-d tree (uint8 and int8 up to its exact dimension),
 * over any partition (the spatial one moves them at their own width).
 * Elsewhere they are widened, exactly, and rank 0 says why once. */
const char *lbk_index_plan_compact_why(const lbk_index_plan *plan, lbk_metric metric,
                                       lbk_dtype type, int dim, bool radius)
{
    if (type == LBK_DTYPE_FLOAT32)
        return NULL;
    /* Only brute force normalises compact (float16) rows on the fly. */
    if (metric == LBK_METRIC_COSINE &&
        (plan->engine != LBK_ENGINE_BRUTE || plan->partition == LBK_PARTITION_SPATIAL))
        return "cosine over the k-d tree or the spatial partition reads normalised float32 rows";
    const char *engine_why =
        lbk_engine_compact_why(plan->engine, plan->partition == LBK_PARTITION_SPATIAL, type, dim);
    if (engine_why)
        return engine_why;
    if (radius && plan->engine == LBK_ENGINE_BRUTE)
        return "brute force's radius search reads float32 points for now";
    return NULL;
}

const char *lbk_index_compact_why(const lbk_index *s, bool radius)
{
    return lbk_index_plan_compact_why(&s->plan, s->params.metric, s->shard.dtype, s->shape.dim,
                                      radius);
}

static lbk_status widen_for_plan(lbk_index *s)
{
    const char *plan_why = lbk_index_plan_compact_why(&s->plan, s->params.metric, s->shard.dtype,
                                                      s->shape.dim, s->params.radius);
    const char *why =
        plan_why ? plan_why
        : s->plan.engine == LBK_ENGINE_BRUTE && !s->params.compact_asked && auto_widens(s)
            ? (s->shard.dtype == LBK_DTYPE_FLOAT16
                   ? "reference.type auto: the float32 L2 cascade may be faster on this device "
                     "for now (name the type in reference.type to keep them compact)"
                   : "reference.type auto: the float32 prefilter is faster on this device for "
                     "now (name the type in reference.type to keep them compact)")
            : NULL;
    return widen_shard(s, why);
}

static lbk_status build_engine(lbk_index *s, const lbk_tuning *tuning)
{
    const double t = lbk_timer_now();
    lbk_engine_params params;
    lbk_engine_params_from_index(&s->params, tuning, &params);
    params.rotation = lbk_batch_spatial_rotation(s);
    const lbk_status st =
        lbk_engine_create(s->device, &params, s->plan.engine, &s->shard, &s->engine);
    s->info.phase[LBK_PHASE_BUILD] += lbk_timer_now() - t;
    s->info.stats.points = s->shard.rows;
    return st;
}

lbk_status lbk_index_create_empty(const lbk_comm *comm, lbk_device *device,
                                  const lbk_index_params *params, const lbk_index_plan *plan,
                                  uint64_t reference_rows, bool reference_labels,
                                  lbk_dataset *shard, lbk_index **out)
{
    lbk_index *s = calloc(1, sizeof *s);
    *out = s;
    if (!s)
        lbk_error("out of host memory for the index");
    LBK_TRY(lbk_comm_agree(comm, s ? LBK_OK : LBK_ERR_NOMEM));
    s->comm = comm;
    s->params = *params;
    s->plan = *plan;
    s->strategy = lbk_batch_strategy_for(plan->partition, params->merge, false);
    s->root = comm->rank == 0;
    s->shape.reference_rows = reference_rows;
    s->shape.dim = shard->dim;
    s->shape.reference_labels = reference_labels;
    s->shard = *shard;
    *shard = (lbk_dataset){0};
    s->device = device;
    return LBK_OK;
}

lbk_status lbk_index_create(const lbk_comm *comm, lbk_device *device, const lbk_tuning *tuning,
                            const lbk_index_params *params, const lbk_index_plan *plan,
                            uint64_t reference_rows, bool reference_labels, lbk_dataset *shard,
                            const lbk_dataset *queries, lbk_index **out)
{
    LBK_TRY(lbk_index_create_empty(comm, device, params, plan, reference_rows, reference_labels,
                                   shard, out));
    lbk_index *s = *out;
    LBK_TRY(lbk_comm_agree(comm, widen_for_plan(s)));
    s->balance_queries = queries;
    const lbk_status st = redistribute(s); /* spatial: points to their owners */
    s->balance_queries = NULL;
    LBK_TRY(st);
    return lbk_comm_agree(comm, build_engine(s, tuning));
}

lbk_status lbk_index_widen(lbk_index *s, const lbk_tuning *tuning, const char *why)
{
    if (s->shard.dtype == LBK_DTYPE_FLOAT32 || !why)
        return LBK_OK;
    LBK_TRY(lbk_comm_agree(s->comm, widen_shard(s, why)));
    lbk_engine_destroy(s->engine);
    s->engine = NULL;
    return lbk_comm_agree(s->comm, build_engine(s, tuning));
}

lbk_dtype lbk_index_dtype(const lbk_index *s) { return s->shard.dtype; }

void lbk_index_destroy(lbk_index *s)
{
    if (!s)
        return;
    lbk_engine_destroy(s->engine);
    lbk_engine_result_free(&s->result);
    lbk_dataset_free(&s->shard);
    lbk_alloc_large_free(s->local);
    lbk_alloc_large_free(s->merged);
    lbk_alloc_large_free(s->batch_points);
    lbk_alloc_large_free(s->self_order);
    lbk_batch_spatial_free(s->spatial);
    free(s);
}

/* Collective: the queries one rank batches: all of them, or the largest
 * rank's slice, or (a spatial self search) the most points a rank owns. */
static lbk_status queries_to_batch(const lbk_index *s, uint64_t *nq)
{
    const uint64_t p = (uint64_t)s->comm->size;
    *nq = s->query_rows;
    if (s->self && s->spatial) {
        *nq = s->query_count;
        return lbk_comm_allreduce_u64(s->comm, nq, LBK_REDUCE_MAX);
    }
    if (s->plan.owns_slice)
        *nq = s->query_rows / p + (s->query_rows % p != 0);
    return LBK_OK;
}

/* Collective: the smallest batch any rank's device can take. */
static lbk_status plan_batches(lbk_index *s, uint64_t cap)
{
    uint64_t nq = 0;
    LBK_TRY(queries_to_batch(s, &nq));
    uint64_t batch = lbk_engine_max_batch(s->engine);
    if (s->params.batch > 0 && s->params.batch < batch)
        batch = s->params.batch;
    if (cap > 0 && cap < batch)
        batch = cap;
    if (batch > BATCH_CAP)
        batch = BATCH_CAP;
    if (s->self && s->params.batch == 0) {
        const uint64_t share = nq / SELF_BATCH_SHARE;
        const uint64_t most = share > SELF_BATCH_FLOOR ? share : SELF_BATCH_FLOOR;
        if (batch > most)
            batch = most;
    }
    const uint64_t list_bytes = (uint64_t)s->params.k * sizeof(lbk_knn_candidate);
    if (batch > BATCH_LIST_BYTES / list_bytes)
        batch = BATCH_LIST_BYTES / list_bytes;
    if (batch > nq)
        batch = nq;
    if (batch == 0)
        batch = 1;
    LBK_TRY(lbk_comm_allreduce_u64(s->comm, &batch, LBK_REDUCE_MIN));
    s->info.batch = batch;
    s->info.batches = (nq + batch - 1) / batch;
    return LBK_OK;
}

/* This rank's buffers for batches of s->info.batch queries, kept from one
 * search to the next while they are large enough; the K-lists too or not
 * (a radius search has its own). */
static lbk_status alloc_buffers(lbk_index *s, bool lists_too)
{
    const uint64_t batch = s->info.batch, lists = batch * (uint64_t)s->params.k;
    const bool owns = s->plan.owns_slice;
    /* Rows of another rank's batch, or (self search of row shards) of
     * every rank's part of it. */
    const bool points = s->self ? s->self_order || (!s->spatial && !s->plan.replicated) ||
                                      s->shard.dtype != LBK_DTYPE_FLOAT32 /* widened per batch */
                                : !s->root && !owns;
    if (s->buffers_for >= batch && (!points || s->batch_points) &&
        lists_too == (s->merged != NULL))
        return LBK_OK;
    lbk_engine_result_free(&s->result);
    lbk_alloc_large_free(s->local);
    lbk_alloc_large_free(s->merged);
    lbk_alloc_large_free(s->batch_points);
    s->local = s->merged = NULL;
    s->batch_points = NULL;
    s->buffers_for = 0;
    lbk_status st = LBK_OK;
    if (lists_too)
        st = lbk_engine_result_alloc(&s->result, batch, s->params.k);
    if (st == LBK_OK && lists_too && !owns && s->comm->size > 1) /* one rank's are final */
        s->local = lbk_alloc_large_logged(lists, sizeof *s->local, "local K-lists", &st);
    if (st == LBK_OK && lists_too)
        s->merged = lbk_alloc_large_logged(lists, sizeof *s->merged, "merged K-lists", &st);
    if (st == LBK_OK && points)
        s->batch_points = lbk_alloc_large_logged(batch * (uint64_t)s->shape.dim, sizeof(float),
                                                 "query batch", &st);
    if (st == LBK_OK)
        s->buffers_for = batch;
    return st;
}

static lbk_status prepare(lbk_index *s, uint64_t query_rows, uint64_t batch_cap, bool lists)
{
    s->self = false;
    s->strategy = lbk_batch_strategy_for(s->plan.partition, s->params.merge, false);
    s->query_rows = query_rows;
    s->query_first = 0;
    s->query_count = query_rows;
    if (s->plan.owns_slice)
        lbk_index_query_slice(query_rows, s->comm, &s->query_first, &s->query_count);
    LBK_TRY(plan_batches(s, batch_cap));
    return lbk_comm_agree(s->comm, alloc_buffers(s, lists));
}

lbk_status lbk_index_prepare(lbk_index *s, uint64_t query_rows, uint64_t batch_cap)
{
    return prepare(s, query_rows, batch_cap, true);
}

/* A tree searches a batch of points that lie together faster than one
 * spread over its whole box (the nodes and buckets they touch stay in
 * cache): 12 % less CPU time for the graph of 1e6 uniform points. Where a
 * rank holds all the points it searches (its own box, a replica, or the one
 * rank's shard) its batches take them in Morton order, one 4-byte row each
 * (not a radius search that asks for row order: lbk_index_radius_params);
 * row shards search rows that other ranks hold, and keep row order. */
/* The Morton order reads the first three coordinates only: of compact
 * points, a transient float32 copy of those (at most 12 bytes a point,
 * the order's own scratch), not of the shard. */
static lbk_status self_morton_order(lbk_index *s)
{
    if (s->shard.dtype == LBK_DTYPE_FLOAT32)
        return lbk_morton_order(s->shard.points, s->shard.rows, s->shape.dim, s->self_order);
    const int used = s->shape.dim < 3 ? s->shape.dim : 3;
    lbk_status st = LBK_OK;
    float *first = lbk_alloc_large_logged(s->shard.rows * (uint64_t)used, sizeof *first,
                                          "the self search's order keys", &st);
    float *row = malloc((size_t)s->shape.dim * sizeof *row);
    if (st == LBK_OK && !row) {
        lbk_error("out of host memory for the self search's order");
        st = LBK_ERR_NOMEM;
    }
    for (uint64_t i = 0; st == LBK_OK && i < s->shard.rows; i++) {
        lbk_batch_rows_as_floats(&s->shard, i, 1, row);
        memcpy(first + i * (uint64_t)used, row, (size_t)used * sizeof *row);
    }
    free(row);
    if (st != LBK_OK) {
        lbk_alloc_large_free(first);
        return st;
    }
    st = lbk_morton_order(first, s->shard.rows, used, s->self_order);
    lbk_alloc_large_free(first);
    return st;
}

static lbk_status plan_self_order(lbk_index *s, bool morton)
{
    const bool holds_all = s->spatial || s->plan.replicated || s->comm->size == 1;
    lbk_alloc_large_free(s->self_order);
    s->self_order = NULL;
    lbk_status st = LBK_OK;
    if (morton && holds_all && s->plan.engine == LBK_ENGINE_KDTREE && s->shard.rows > 1 &&
        s->shard.rows < UINT32_MAX) {
        s->self_order = lbk_alloc_large_logged(s->shard.rows, sizeof *s->self_order,
                                               "the self search's order", &st);
        if (st == LBK_OK)
            st = self_morton_order(s);
    }
    return lbk_comm_agree(s->comm, st);
}

static lbk_status prepare_self(lbk_index *s, uint64_t batch_cap, bool lists, bool morton)
{
    LBK_TRY(plan_self_order(s, morton));
    s->self = true;
    s->strategy = lbk_batch_strategy_for(s->plan.partition, s->params.merge, true);
    s->query_rows = s->shape.reference_rows;
    s->query_first = 0;
    s->query_count = s->spatial ? s->shard.rows : s->query_rows;
    LBK_TRY(plan_batches(s, batch_cap));
    return lbk_comm_agree(s->comm, alloc_buffers(s, lists));
}

lbk_status lbk_index_prepare_self(lbk_index *s, uint64_t batch_cap)
{
    return prepare_self(s, batch_cap, true, true);
}

lbk_status lbk_index_prepare_radius(lbk_index *s, bool self, uint64_t query_rows, bool row_order)
{
    return self ? prepare_self(s, 0, false, !row_order) : prepare(s, query_rows, 0, false);
}

static lbk_status timed(lbk_index *s, lbk_index_phase phase, lbk_batch_step step, lbk_batch *b)
{
    const double t = lbk_timer_now();
    const lbk_status st = step(s, b);
    s->info.phase[phase] += lbk_timer_now() - t;
    return st;
}

/* One batch: the strategy's stages, with every rank's status agreed after
 * each, so that a failure anywhere (a failed write included) stops every
 * rank before the next collective step, batch or close. */
static lbk_status run_batch(lbk_index *s, lbk_batch *b)
{
    const lbk_batch_stage *stage = s->strategy->stages;
    for (int i = 0; i < LBK_BATCH_STAGES_MAX && stage[i].step; i++)
        LBK_TRY(lbk_comm_agree(s->comm, timed(s, stage[i].phase, stage[i].step, b)));
    return LBK_OK;
}

/* Batch i: of every query, or (owns_slice) of this rank's slice, where a
 * rank with a shorter slice runs empty batches at the end. */
static lbk_batch batch_at(const lbk_index *s, uint64_t i)
{
    const uint64_t nq = s->query_count, at = i * s->info.batch;
    lbk_batch b = {.first = s->query_first + at};
    b.count = at >= nq ? 0 : nq - at < s->info.batch ? nq - at : s->info.batch;
    return b;
}

lbk_status lbk_index_search(lbk_index *s, const float *points, const lbk_index_sink *sink)
{
    s->query_points = points;
    s->sink = sink;
    const double t_search = lbk_timer_now();
    lbk_status st = LBK_OK;
    for (uint64_t i = sink->first_batch; i < s->info.batches && st == LBK_OK; i++) {
        lbk_batch b = batch_at(s, i);
        st = run_batch(s, &b);
        if (st == LBK_OK && sink->progress)
            sink->progress(sink->user, i + 1, s->info.batches);
        if (st == LBK_OK && sink->after_batch)
            st = sink->after_batch(sink->user, i + 1);
    }
    s->info.search_s = lbk_timer_now() - t_search;
    s->query_points = NULL;
    s->sink = NULL;
    return st;
}

const lbk_index_info *lbk_index_info_of(const lbk_index *s) { return &s->info; }

void lbk_index_describe(const lbk_index *s, char *buf, size_t size)
{
    lbk_engine_describe(s->engine, buf, size);
}

uint64_t lbk_index_peak_device_bytes(const lbk_index *s)
{
    return lbk_engine_peak_device_bytes(s->engine, s->info.largest_search);
}

void lbk_index_reference_bytes(const lbk_index *s, uint64_t *device, uint64_t *host)
{
    *device = lbk_engine_reference_bytes(s->engine);
    const bool rows = s->shard.points || s->shard.raw;
    *host = rows ? s->shard.rows * (uint64_t)s->shard.dim * lbk_dataset_type_bytes(s->shard.dtype)
                 : 0;
}
