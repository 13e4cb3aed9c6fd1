/* The radius search of the index (docs/design.md "Radius search"): every
 * reference point within each query's radius, exact counts, lists in
 * (key, id) order, with results of unknown size held within a memory
 * budget. One scheme for every partition: the queries a rank owns (whose
 * lists its sink gets) go to the ranks that may hold neighbours ("work
 * rows" there), which count them; the counts come back to the owner, which
 * splits its queries into rounds of at most its share of the budget; each
 * round, the holders fill their lists of that round's queries and send
 * them back, and the owner sorts each query's lists together.
 *   row shards: every rank holds every query of the batch (broadcast);
 *               the owners are rank 0 (reduce) or the slices
 *               (reduce_scatter);
 *   replicate:  each rank owns a slice and is its only holder;
 *   spatial:    each query goes to every rank whose box meets its ball
 *               (box key <= the bound: one routed phase). */
#include "index_radius_impl.h"

#include "log.h"
#include "radius.h"
#include "row_split.h"
#include "timer.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

/* The results a rank holds at once: device.memory_mb, else this. A round
 * keeps all its buffers until the next, so an entry costs ENTRY_BYTES at
 * the peak: the holder's fill output (key, row: 8) and its entries out,
 * the owner's entries in and placed (3 entries in all), the sink's lists
 * (id, key, label: 16) and the sink's own copy (LBK_INDEX_RADIUS_SINK_BYTES):
 * 120 bytes. The engine's window of codes has a bound of its own. */
#define RADIUS_BUDGET_BYTES ((uint64_t)256 << 20)
#define ENTRY_BYTES                                                                              \
    (8u + 3u * (unsigned)sizeof(lbk_index_radius_entry) + 16u + LBK_INDEX_RADIUS_SINK_BYTES)

#define AT LBK_INDEX_RADIUS_AT

/* The owner's entries to receive per query: the counts themselves unless
 * holders cut their lists at `keep` (a count-only search holds neither
 * this nor the rounds: 12 bytes a query less). */
uint64_t *lbk_index_radius_own_recv(const lbk_index_radius_run *r)
{
    return r->keep ? AT(r, OWN_RECV, uint64_t) : AT(r, OWN_COUNT, uint64_t);
}

lbk_status lbk_index_radius_reserve(lbk_index_radius_run *r, int which, uint64_t bytes,
                                    const char *what)
{
    return lbk_exchange_buffer_reserve(&r->buf[which], (size_t)(bytes < 64 ? 64 : bytes), what);
}

uint64_t lbk_index_radius_row(const lbk_index_radius_slice *slice, uint64_t q)
{
    uint64_t i = slice->first + slice->slice_first + q;
    if (slice->order)
        i = slice->order[i];
    return slice->own ? lbk_dataset_id(slice->own, i) : i;
}

/* The global row of batch row j. */
uint64_t lbk_index_radius_batch_row(const lbk_index_radius_run *r, uint64_t j)
{
    const lbk_index *s = r->s;
    const lbk_index_radius_slice at = {.first = r->b.first,
                                       .own = r->self && r->spatial ? &s->shard : NULL,
                                       .order = r->self ? s->self_order : NULL};
    return lbk_index_radius_row(&at, j);
}

/* The last radius's bound is kept: a bound is a bisection over the float
 * order (32 square roots for l2), and one radius for all, or neighbouring
 * queries' equal radii, would repeat it for every query and work row (3 %
 * of a search at 16 neighbours). Equal bits, equal bound. */
float lbk_index_radius_bound(lbk_index_radius_run *r, uint64_t row)
{
    const float radius = r->p->radii ? r->p->radii[row] : r->p->radius;
    uint32_t bits;
    memcpy(&bits, &radius, sizeof bits);
    if (!r->bound_known || bits != r->bound_radius) {
        r->bound = lbk_radius_key_bound(r->s->params.metric, radius);
        r->bound_radius = bits;
        r->bound_known = true;
    }
    return r->bound;
}

void lbk_index_radius_starts(const uint64_t *counts, int p, uint64_t *start)
{
    uint64_t at = 0;
    for (int i = 0; i < p; i++) {
        start[i] = at;
        at += counts[i];
    }
}

uint64_t lbk_index_radius_total(const uint64_t *counts, int p)
{
    uint64_t n = 0;
    for (int i = 0; i < p; i++)
        n += counts[i];
    return n;
}

/* The batch's query points on this rank, and the queries it owns. */
static lbk_status batch_points(lbk_index_radius_run *r)
{
    lbk_index *s = r->s;
    lbk_batch *b = &r->b;
    const int p = s->comm->size, me = s->comm->rank;
    if (r->spatial) {
        const uint64_t dim = (uint64_t)s->shape.dim;
        if (r->self)
            b->points = lbk_batch_own_points(s, b);
        else
            b->points = b->count ? s->query_points + (b->first - s->query_first) * dim : NULL;
        b->slice_first = 0;
        b->slice_count = b->count;
    } else {
        LBK_TRY(s->strategy->stages[0].step(s, b)); /* broadcast, or the rows gathered */
        if (s->strategy->sliced)
            lbk_row_split_range(b->count, p, me, &b->slice_first, &b->slice_count);
        else {
            b->slice_first = 0;
            b->slice_count = s->root ? b->count : 0;
        }
    }
    r->own_n = b->slice_count;
    return LBK_OK;
}

/* The owned queries' rows and bounds. */
static lbk_status own_queries(lbk_index_radius_run *r)
{
    const uint64_t n = r->own_n;
    LBK_TRY(lbk_index_radius_reserve(r, OWN_BOUND, n * sizeof(float), "radius bounds"));
    LBK_TRY(lbk_index_radius_reserve(r, OWN_ROW, n * sizeof(uint64_t), "radius query rows"));
    LBK_TRY(lbk_index_radius_reserve(r, OWN_COUNT, n * sizeof(uint64_t), "radius counts"));
    if (r->keep)
        LBK_TRY(lbk_index_radius_reserve(r, OWN_RECV, n * sizeof(uint64_t), "radius counts"));
    if (!r->p->count_only)
        LBK_TRY(lbk_index_radius_reserve(r, OWN_ROUND, n * sizeof(uint32_t), "radius rounds"));
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t row = lbk_index_radius_batch_row(r, r->b.slice_first + i);
        AT(r, OWN_ROW, uint64_t)[i] = row;
        AT(r, OWN_BOUND, float)[i] = lbk_index_radius_bound(r, row);
        AT(r, OWN_COUNT, uint64_t)[i] = 0;
        lbk_index_radius_own_recv(r)[i] = 0;
    }
    return LBK_OK;
}

/* The engine's calls take at most this many queries. */
uint64_t lbk_index_radius_engine_chunk(const lbk_index_radius_run *r)
{
    const uint64_t most = lbk_engine_radius_max_batch(r->s->engine);
    return most > 0 ? most : 1;
}

void lbk_index_radius_engine_work(lbk_index *s)
{
    lbk_engine_work work;
    lbk_engine_work_of(s->engine, &work);
    s->info.stats.distance_evals = work.distance_evals;
    s->info.stats.nodes_visited = work.nodes_visited;
}

static lbk_status timed(lbk_index_radius_run *r, lbk_index_phase phase,
                        lbk_status (*step)(lbk_index_radius_run *))
{
    const double t = lbk_timer_now();
    const lbk_status st = step(r);
    r->s->info.phase[phase] += lbk_timer_now() - t;
    return st;
}

/* Collective: one batch, every step agreed. */
static lbk_status run_batch(lbk_index_radius_run *r)
{
    const lbk_comm *comm = r->s->comm;
    LBK_TRY(lbk_comm_agree(comm, timed(r, LBK_PHASE_DISTRIBUTE, batch_points)));
    LBK_TRY(lbk_comm_agree(comm, own_queries(r)));
    LBK_TRY(timed(r, LBK_PHASE_DISTRIBUTE, lbk_index_radius_route));
    LBK_TRY(lbk_comm_agree(comm, timed(r, LBK_PHASE_QUERY, lbk_index_radius_count)));
    LBK_TRY(lbk_comm_agree(comm, timed(r, LBK_PHASE_MERGE, lbk_index_radius_counts_back)));
    LBK_TRY(lbk_comm_agree(comm, lbk_index_radius_plan_rounds(r)));
    if (r->p->count_only)
        return timed(r, LBK_PHASE_OUTPUT, lbk_index_radius_emit_counts);
    uint64_t rounds = r->own_rounds;
    LBK_TRY(lbk_comm_allreduce_u64(comm, &rounds, LBK_REDUCE_MAX));
    LBK_TRY(lbk_comm_agree(comm, timed(r, LBK_PHASE_DISTRIBUTE, lbk_index_radius_rounds_out)));
    for (uint64_t i = 0; i < rounds; i++)
        LBK_TRY(lbk_index_radius_run_round(r, (uint32_t)i));
    return LBK_OK;
}

static lbk_status run_alloc(lbk_index_radius_run *r)
{
    const size_t p = (size_t)r->s->comm->size;
    uint64_t *all = calloc(7 * p, sizeof *all);
    LBK_FAIL_IF(!all, LBK_ERR_NOMEM, "out of host memory for the radius search's routes");
    r->send_counts = all;
    r->recv_counts = all + p;
    r->back_counts = all + 2 * p;
    r->send_start = all + 3 * p;
    r->recv_start = all + 4 * p;
    r->out_counts = all + 5 * p;
    r->in_counts = all + 6 * p;
    return LBK_OK;
}

static void run_free(lbk_index_radius_run *r)
{
    free(r->send_counts);
    for (int i = 0; i < BUFFERS; i++)
        lbk_exchange_buffer_free(&r->buf[i]);
}

/* Batch i: as the kNN search's (index.c). */
static void batch_at(lbk_index_radius_run *r, uint64_t i)
{
    const lbk_index *s = r->s;
    const uint64_t nq = s->query_count, at = i * s->info.batch;
    r->b = (lbk_batch){.first = s->query_first + at};
    r->b.count = at >= nq ? 0 : nq - at < s->info.batch ? nq - at : s->info.batch;
}

lbk_status lbk_index_radius(lbk_index *s, bool self, uint64_t query_rows, const float *points,
                            const lbk_index_radius_params *params,
                            const lbk_index_radius_sink *sink)
{
    lbk_index_radius_run r = {
        .s = s, .p = params, .sink = sink, .self = self, .spatial = s->spatial != NULL};
    const int p = s->comm->size;
    const uint64_t bytes =
        s->params.memory_mb > 0 ? s->params.memory_mb << 20 : RADIUS_BUDGET_BYTES;
    r.budget = bytes / ENTRY_BYTES;
    /* Several owners send one holder their rounds at once: each gets a
     * share. */
    const bool one_owner = !r.spatial && (s->plan.replicated || !s->plan.sliced);
    r.limit = one_owner ? r.budget : r.budget / (uint64_t)p;
    r.limit = r.limit > 0 ? r.limit : 1;
    if (params->truncate && params->max_neighbors > 0)
        r.keep = params->max_neighbors + (self ? 1 : 0);
    lbk_status st = lbk_comm_agree(s->comm, run_alloc(&r));
    if (st == LBK_OK)
        st = lbk_index_prepare_radius(s, self, query_rows, params->row_order);
    s->query_points = points;
    const double t_search = lbk_timer_now();
    for (uint64_t i = 0; i < s->info.batches && st == LBK_OK; i++) {
        batch_at(&r, i);
        st = run_batch(&r);
        if (st == LBK_OK && sink->progress)
            sink->progress(sink->user, i + 1, s->info.batches);
    }
    s->info.search_s += lbk_timer_now() - t_search; /* the CLI's passes together */
    if (st == LBK_OK && params->kept && params->count_only)
        params->kept->full = true;
    else if (st == LBK_OK && params->kept && params->kept->at != params->kept->n) {
        lbk_error("internal: the radius fill read %llu of %llu kept counts",
                  (unsigned long long)params->kept->at, (unsigned long long)params->kept->n);
        st = LBK_ERR_INTERNAL;
    }
    s->query_points = NULL;
    run_free(&r);
    return st;
}
