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
#include "batch_impl.h"

#include "log.h"
#include "radius.h"
#include "row_split.h"
#include "timer.h"
#include "try.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The results a rank holds at once: device.memory_mb, else this. A round
 * keeps all its buffers until the next, so an entry costs ENTRY_BYTES at
 * the peak: the holder's fill output (key, row: 8) and its entries out,
 * the owner's entries in and placed (3 entries in all), the sink's lists
 * (id, key, label: 16) and the sink's own copy (LBK_INDEX_RADIUS_SINK_BYTES):
 * 120 bytes. The engine's window of codes has a bound of its own. */
#define RADIUS_BUDGET_BYTES ((uint64_t)256 << 20)
#define ENTRY_BYTES (8u + 3u * (unsigned)sizeof(radius_entry) + 16u + LBK_INDEX_RADIUS_SINK_BYTES)

/* One neighbour on its way back to its query's owner: `pos` is the work
 * row's place among the rows its owner sent this rank; the label travels
 * with it, as a K-list candidate's does (-1 without labels). */
typedef struct {
    float key;
    uint32_t pos;
    int32_t label;
    uint32_t unused; /* zero: the entries' bytes are all defined */
    uint64_t id;
} radius_entry;
_Static_assert(sizeof(radius_entry) == 24, "radius_entry is sent as 24 bytes");

enum {
    OWN_BOUND,   /* owner: each owned query's key bound (float) */
    OWN_ROW,     /* owner: each owned query's global row (uint64_t) */
    OWN_COUNT,   /* owner: the counts summed over the holders (uint64_t) */
    OWN_RECV,    /* owner: the entries the holders send (each at most `keep`) */
    OWN_ROUND,   /* owner: each owned query's fill round (uint32_t) */
    SENT_QUERY,  /* owner: the owned query of each row sent, packed by rank (uint32_t) */
    SEND,        /* rows out: work rows, rounds */
    BACK,        /* counts back (uint64_t) */
    WORK,        /* holder: the work rows received (point, bound) */
    WORK_BOUND,  /* holder: each work row's bound (float) */
    WORK_COUNT,  /* holder: each work row's count here (uint64_t) */
    WORK_ROUND,  /* holder: each work row's round (uint32_t) */
    SEL_POINTS,  /* holder: one round's work rows */
    SEL_BOUND,   /* holder */
    SEL_POS,     /* holder: their places (uint32_t) */
    SEL_OFFSETS, /* holder: uint64_t, n + 1 */
    FILL_KEYS,   /* holder: the engine's lists */
    FILL_ROWS,
    CHUNK_OFFSETS,
    ENTRIES_OUT,
    ENTRIES_IN,
    PLACED,     /* owner: a round's entries by query */
    OUT_COUNTS, /* owner: the sink's arrays */
    OUT_INDPTR,
    OUT_IDS,
    OUT_KEYS,
    OUT_LABELS,
    BUFFERS
};

typedef struct {
    lbk_index *s;
    const lbk_index_radius_params *p;
    const lbk_index_radius_sink *sink;
    bool self, spatial;
    uint64_t budget; /* entries a rank may hold */
    uint64_t limit;  /* entries of one owner's round */
    uint64_t keep;   /* the most entries a holder sends of one list (0: all):
                      * the cap, plus one for the point itself (self search) */
    lbk_batch b;
    uint64_t own_n;      /* owned queries: batch rows b.slice_first, ... */
    const float *work;   /* holder: n_work points */
    uint64_t n_work;     /* holder */
    uint64_t own_rounds; /* owner: rounds of this batch */
    bool bound_known;    /* bound_of's last radius (its bits) and bound */
    uint32_t bound_radius;
    float bound;
    uint64_t *send_counts, *recv_counts, *back_counts, *send_start, *recv_start, *out_counts,
        *in_counts; /* per rank each */
    lbk_exchange_buffer buf[BUFFERS];
} radius_run;

#define AT(r, which, type) ((type *)(r)->buf[which].data)

/* The owner's entries to receive per query: the counts themselves unless
 * holders cut their lists at `keep` (a count-only search holds neither
 * this nor the rounds: 12 bytes a query less). */
static uint64_t *own_recv(const radius_run *r)
{
    return r->keep ? AT(r, OWN_RECV, uint64_t) : AT(r, OWN_COUNT, uint64_t);
}

static lbk_status reserve(radius_run *r, int which, uint64_t bytes, const char *what)
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
static uint64_t batch_row(const radius_run *r, uint64_t j)
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
static float bound_of(radius_run *r, uint64_t row)
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

/* The key of a point to itself, in the engines' order (knn.h): 0 but for
 * the dot products; a self search counts the point itself only where this
 * is within its bound. */
static float self_key(lbk_metric metric, const float *x, int dim)
{
    if (!lbk_knn_is_similarity(metric))
        return 0.0f;
    float s = 0.0f;
    for (int j = 0; j < dim; j++) {
        volatile float product = x[j] * x[j]; /* rounded on its own, as the kernels */
        s = s + product;
    }
    return isnan(s) ? INFINITY : -s;
}

/* The batch's query points on this rank, and the queries it owns. */
static lbk_status batch_points(radius_run *r)
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
static lbk_status own_queries(radius_run *r)
{
    const uint64_t n = r->own_n;
    LBK_TRY(reserve(r, OWN_BOUND, n * sizeof(float), "radius bounds"));
    LBK_TRY(reserve(r, OWN_ROW, n * sizeof(uint64_t), "radius query rows"));
    LBK_TRY(reserve(r, OWN_COUNT, n * sizeof(uint64_t), "radius counts"));
    if (r->keep)
        LBK_TRY(reserve(r, OWN_RECV, n * sizeof(uint64_t), "radius counts"));
    if (!r->p->count_only)
        LBK_TRY(reserve(r, OWN_ROUND, n * sizeof(uint32_t), "radius rounds"));
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t row = batch_row(r, r->b.slice_first + i);
        AT(r, OWN_ROW, uint64_t)[i] = row;
        AT(r, OWN_BOUND, float)[i] = bound_of(r, row);
        AT(r, OWN_COUNT, uint64_t)[i] = 0;
        own_recv(r)[i] = 0;
    }
    return LBK_OK;
}

static void starts(const uint64_t *counts, int p, uint64_t *start)
{
    uint64_t at = 0;
    for (int i = 0; i < p; i++) {
        start[i] = at;
        at += counts[i];
    }
}

static uint64_t total(const uint64_t *counts, int p)
{
    uint64_t n = 0;
    for (int i = 0; i < p; i++)
        n += counts[i];
    return n;
}

/* Row shards and replicas: the work rows are the batch's points where
 * they are, and the routes follow from who owns what. */
static lbk_status route_local(radius_run *r)
{
    lbk_index *s = r->s;
    const int p = s->comm->size, me = s->comm->rank;
    const uint64_t dim = (uint64_t)s->shape.dim, count = r->b.count;
    const bool replicated = s->plan.replicated;
    for (int q = 0; q < p; q++) {
        uint64_t first = 0, n = 0;
        if (s->strategy->sliced)
            lbk_row_split_range(count, p, q, &first, &n);
        else
            n = q == 0 ? count : 0;
        r->recv_counts[q] = replicated && q != me ? 0 : n;
        r->send_counts[q] = replicated && q != me ? 0 : r->own_n;
    }
    r->n_work = replicated ? r->own_n : count;
    r->work = r->b.points ? r->b.points + (replicated ? r->b.slice_first * dim : 0) : NULL;
    const uint64_t sent = total(r->send_counts, p);
    LBK_TRY(reserve(r, SENT_QUERY, sent * sizeof(uint32_t), "radius routes"));
    LBK_TRY(reserve(r, WORK_BOUND, r->n_work * sizeof(float), "radius bounds"));
    for (uint64_t i = 0; i < sent; i++)
        AT(r, SENT_QUERY, uint32_t)[i] = (uint32_t)(i % (r->own_n ? r->own_n : 1));
    const uint64_t first = replicated ? r->b.slice_first : 0;
    for (uint64_t w = 0; w < r->n_work; w++)
        AT(r, WORK_BOUND, float)[w] = bound_of(r, batch_row(r, first + w));
    return LBK_OK;
}

/* Spatial: the packing of each owned query (point, bound) for every rank
 * whose box meets its ball. */
static lbk_status pack_spatial(radius_run *r)
{
    lbk_index *s = r->s;
    lbk_index_spatial *sp = s->spatial;
    const int p = s->comm->size;
    const uint64_t dim = (uint64_t)s->shape.dim;
    const size_t point = (size_t)dim * sizeof(float), row = point + sizeof(float);
    const float *bound = AT(r, OWN_BOUND, float);
    memset(r->send_counts, 0, (size_t)p * sizeof *r->send_counts);
    for (uint64_t i = 0; i < r->own_n; i++) {
        const int n = lbk_toptree_near(&sp->tree, r->b.points + i * dim, bound[i],
                                       s->params.metric, -1, sp->near);
        for (int j = 0; j < n; j++)
            r->send_counts[sp->near[j]]++;
    }
    const uint64_t sent = total(r->send_counts, p);
    LBK_TRY(reserve(r, SENT_QUERY, sent * sizeof(uint32_t), "radius routes"));
    LBK_TRY(reserve(r, SEND, sent * row, "radius queries for other ranks"));
    starts(r->send_counts, p, r->send_start);
    memcpy(sp->cursor, r->send_start, (size_t)p * sizeof *sp->cursor);
    for (uint64_t i = 0; i < r->own_n; i++) {
        const int n = lbk_toptree_near(&sp->tree, r->b.points + i * dim, bound[i],
                                       s->params.metric, -1, sp->near);
        for (int j = 0; j < n; j++) {
            const uint64_t at = sp->cursor[sp->near[j]]++;
            char *out = (char *)r->buf[SEND].data + at * row;
            memcpy(out, r->b.points + i * dim, point);
            memcpy(out + point, bound + i, sizeof(float));
            AT(r, SENT_QUERY, uint32_t)[at] = (uint32_t)i;
        }
    }
    return LBK_OK;
}

/* Spatial, collective: the work rows to their holders, split into points
 * (moved down in place) and bounds. */
static lbk_status route_spatial(radius_run *r)
{
    lbk_index *s = r->s;
    const int p = s->comm->size;
    const uint64_t dim = (uint64_t)s->shape.dim;
    const size_t row = (size_t)(dim + 1) * sizeof(float);
    const lbk_status prep = pack_spatial(r);
    LBK_TRY(lbk_exchange_rows(s->comm, prep, r->buf[SEND].data, r->send_counts, row,
                              &r->buf[WORK], r->recv_counts, &s->info.stats.bytes_sent));
    r->n_work = total(r->recv_counts, p);
    for (int q = 0; q < p; q++)
        s->info.stats.bytes_received += q == s->comm->rank ? 0 : r->recv_counts[q] * row;
    LBK_TRY(reserve(r, WORK_BOUND, r->n_work * sizeof(float), "radius bounds"));
    float *rows = r->buf[WORK].data, *bound = AT(r, WORK_BOUND, float);
    for (uint64_t w = 0; w < r->n_work; w++) {
        bound[w] = rows[w * (dim + 1) + dim];
        memmove(rows + w * dim, rows + w * (dim + 1), (size_t)dim * sizeof(float));
    }
    r->work = rows;
    return LBK_OK;
}

/* The engine's calls take at most this many queries. */
static uint64_t engine_chunk(const radius_run *r)
{
    const uint64_t most = lbk_engine_radius_max_batch(r->s->engine);
    return most > 0 ? most : 1;
}

static void engine_work(lbk_index *s)
{
    lbk_engine_work work;
    lbk_engine_work_of(s->engine, &work);
    s->info.stats.distance_evals = work.distance_evals;
    s->info.stats.nodes_visited = work.nodes_visited;
}

/* A fill search after a count-only one: the counts it kept, as the same
 * routes give the same work rows. */
static lbk_status read_kept(radius_run *r, uint64_t *count)
{
    lbk_index_radius_kept *kept = r->p->kept;
    LBK_FAIL_IF(kept->at + r->n_work > kept->n, LBK_ERR_INTERNAL,
                "internal: %llu radius work rows past the %llu counts kept",
                (unsigned long long)(kept->at + r->n_work), (unsigned long long)kept->n);
    for (uint64_t w = 0; w < r->n_work; w++)
        count[w] = kept->counts[kept->at + w];
    kept->at += r->n_work;
    return LBK_OK;
}

/* A count-only search: its counts kept for the fill search that follows. */
static lbk_status write_kept(radius_run *r, const uint64_t *count)
{
    lbk_index_radius_kept *kept = r->p->kept;
    if (kept->n + r->n_work > kept->cap) {
        uint64_t want = kept->cap ? kept->cap : 4096;
        while (want < kept->n + r->n_work)
            want *= 2;
        uint32_t *grown = realloc(kept->counts, (size_t)want * sizeof *grown);
        LBK_FAIL_IF(!grown, LBK_ERR_NOMEM, "out of host memory keeping %llu radius counts",
                    (unsigned long long)want);
        kept->counts = grown;
        kept->cap = want;
    }
    for (uint64_t w = 0; w < r->n_work; w++) {
        LBK_FAIL_IF(count[w] > UINT32_MAX, LBK_ERR_INTERNAL,
                    "internal: a radius count of %llu in one shard",
                    (unsigned long long)count[w]);
        kept->counts[kept->n + w] = (uint32_t)count[w];
    }
    kept->n += r->n_work;
    return LBK_OK;
}

void lbk_index_radius_kept_free(lbk_index_radius_kept *kept)
{
    free(kept->counts);
    *kept = (lbk_index_radius_kept){0};
}

/* The holder: every work row's count in this rank's points (counted once:
 * a fill after a count-only search with kept counts reads them). */
static lbk_status count_work(radius_run *r)
{
    lbk_index *s = r->s;
    const uint64_t dim = (uint64_t)s->shape.dim, chunk = engine_chunk(r);
    LBK_TRY(reserve(r, WORK_COUNT, r->n_work * sizeof(uint64_t), "radius counts"));
    uint64_t *count = AT(r, WORK_COUNT, uint64_t);
    if (r->p->kept && r->p->kept->full && !r->p->count_only)
        return read_kept(r, count);
    for (uint64_t at = 0; at < r->n_work; at += chunk) {
        const uint64_t n = r->n_work - at < chunk ? r->n_work - at : chunk;
        LBK_TRY(lbk_engine_radius_count(s->engine, r->work + at * dim,
                                        AT(r, WORK_BOUND, float) + at, n, count + at));
        s->info.largest_search = n > s->info.largest_search ? n : s->info.largest_search;
    }
    s->info.stats.queries_phase1 += r->n_work;
    s->info.stats.queries_answered += r->n_work;
    engine_work(s);
    return r->p->kept && r->p->count_only ? write_kept(r, count) : LBK_OK;
}

/* Collective: the work rows' counts back to their owners, summed per
 * owned query. */
static lbk_status counts_back(radius_run *r)
{
    lbk_index *s = r->s;
    const int p = s->comm->size;
    LBK_TRY(lbk_exchange_rows(s->comm, LBK_OK, r->buf[WORK_COUNT].data, r->recv_counts,
                              sizeof(uint64_t), &r->buf[BACK], r->back_counts,
                              &s->info.stats.bytes_sent));
    for (int q = 0; q < p; q++) {
        LBK_FAIL_IF(r->back_counts[q] != r->send_counts[q], LBK_ERR_INTERNAL,
                    "internal: rank %d returned %llu radius counts for %llu queries", q,
                    (unsigned long long)r->back_counts[q], (unsigned long long)r->send_counts[q]);
        s->info.stats.bytes_received +=
            q == s->comm->rank ? 0 : r->back_counts[q] * sizeof(uint64_t);
    }
    starts(r->send_counts, p, r->send_start);
    starts(r->recv_counts, p, r->recv_start);
    const uint64_t sent = total(r->send_counts, p);
    const uint32_t *query = AT(r, SENT_QUERY, uint32_t);
    const uint64_t *back = AT(r, BACK, uint64_t);
    uint64_t *count = AT(r, OWN_COUNT, uint64_t), *recv = r->keep ? own_recv(r) : NULL;
    for (uint64_t i = 0; i < sent; i++) {
        count[query[i]] += back[i];
        if (recv)
            recv[query[i]] += back[i] > r->keep ? r->keep : back[i];
    }
    return LBK_OK;
}

/* Owned query i's exact count as a count-only search gives it: a self
 * search's point itself taken out where it counted. */
static uint64_t exact_count(const radius_run *r, uint64_t i)
{
    const uint64_t n = AT(r, OWN_COUNT, uint64_t)[i];
    if (!r->self || n == 0)
        return n;
    const lbk_index *s = r->s;
    const float *x = r->b.points + (r->b.slice_first + i) * (uint64_t)s->shape.dim;
    return self_key(s->params.metric, x, s->shape.dim) <= AT(r, OWN_BOUND, float)[i] ? n - 1 : n;
}

/* The owner: the cap (an error where it is one), the budget, and the
 * rounds of the fill, each within this rank's share of the budget. */
static lbk_status plan_rounds(radius_run *r)
{
    const uint64_t cap = r->p->max_neighbors;
    const uint64_t *count = own_recv(r);
    uint32_t *round = AT(r, OWN_ROUND, uint32_t);
    uint64_t in_round = 0, rounds = 0;
    for (uint64_t i = 0; i < r->own_n; i++) {
        const uint64_t n = exact_count(r, i), row = AT(r, OWN_ROW, uint64_t)[i];
        LBK_FAIL_IF(cap > 0 && !r->p->truncate && n > cap, LBK_ERR_INPUT,
                    "radius: %s %llu has %llu neighbours within its radius, more than "
                    "max_neighbors = %llu",
                    r->self ? "reference row" : "query row", (unsigned long long)row,
                    (unsigned long long)n, (unsigned long long)cap);
        if (r->p->count_only)
            continue;
        LBK_FAIL_IF(count[i] > r->budget, LBK_ERR_NOMEM,
                    "radius: %s %llu has %llu neighbours within its radius to gather, more "
                    "than the memory budget holds at once (%llu; device.memory_mb)",
                    r->self ? "reference row" : "query row", (unsigned long long)row,
                    (unsigned long long)count[i], (unsigned long long)r->budget);
        if (rounds == 0 || in_round + count[i] > r->limit) {
            rounds++;
            in_round = 0;
        }
        in_round += count[i];
        round[i] = (uint32_t)(rounds - 1);
    }
    r->own_rounds = rounds;
    return LBK_OK;
}

/* Collective, count-only: the batch's counts to the sink, agreed before
 * (a sink may be collective: the vote sink looks labels up across ranks)
 * and after. */
static lbk_status emit_counts(radius_run *r)
{
    const lbk_comm *comm = r->s->comm;
    LBK_TRY(lbk_comm_agree(comm,
                           reserve(r, OUT_COUNTS, r->own_n * sizeof(uint64_t), "radius counts")));
    uint64_t *out = AT(r, OUT_COUNTS, uint64_t);
    for (uint64_t i = 0; i < r->own_n; i++)
        out[i] = exact_count(r, i);
    r->s->info.stats.queries_owned += r->own_n;
    const lbk_index_radius_slice slice = {r->b.first,
                                          r->b.count,
                                          r->b.slice_first,
                                          r->own_n,
                                          out,
                                          NULL,
                                          NULL,
                                          NULL,
                                          NULL,
                                          r->self && r->spatial ? &r->s->shard : NULL,
                                          r->self ? r->s->self_order : NULL};
    return lbk_comm_agree(comm, r->sink->emit(r->sink->user, &slice));
}

/* Collective: each work row's round, from its owner. */
static lbk_status rounds_out(radius_run *r)
{
    lbk_index *s = r->s;
    const int p = s->comm->size;
    const uint64_t sent = total(r->send_counts, p);
    lbk_status st = reserve(r, SEND, sent * sizeof(uint32_t), "radius rounds");
    if (st == LBK_OK)
        for (uint64_t i = 0; i < sent; i++)
            AT(r, SEND, uint32_t)[i] = AT(r, OWN_ROUND, uint32_t)[AT(r, SENT_QUERY, uint32_t)[i]];
    LBK_TRY(lbk_exchange_rows(s->comm, st, r->buf[SEND].data, r->send_counts, sizeof(uint32_t),
                              &r->buf[WORK_ROUND], r->back_counts, &s->info.stats.bytes_sent));
    for (int q = 0; q < p; q++)
        LBK_FAIL_IF(r->back_counts[q] != r->recv_counts[q], LBK_ERR_INTERNAL,
                    "internal: rank %d sent %llu rounds for %llu radius queries", q,
                    (unsigned long long)r->back_counts[q], (unsigned long long)r->recv_counts[q]);
    return LBK_OK;
}

/* The holder: round `round`'s work rows gathered, with their places. */
static lbk_status select_round(radius_run *r, uint32_t round, uint64_t *n_sel)
{
    lbk_index *s = r->s;
    const int p = s->comm->size;
    const uint64_t dim = (uint64_t)s->shape.dim;
    const uint32_t *rounds = AT(r, WORK_ROUND, uint32_t);
    uint64_t n = 0;
    for (uint64_t w = 0; w < r->n_work; w++)
        n += rounds[w] == round;
    LBK_TRY(reserve(r, SEL_POINTS, n * dim * sizeof(float), "radius round"));
    LBK_TRY(reserve(r, SEL_BOUND, n * sizeof(float), "radius round"));
    LBK_TRY(reserve(r, SEL_POS, n * sizeof(uint32_t), "radius round"));
    LBK_TRY(reserve(r, SEL_OFFSETS, (n + 1) * sizeof(uint64_t), "radius round"));
    uint64_t *offsets = AT(r, SEL_OFFSETS, uint64_t);
    memset(r->out_counts, 0, (size_t)p * sizeof *r->out_counts);
    offsets[0] = 0;
    int src = 0;
    uint64_t j = 0;
    for (uint64_t w = 0; w < r->n_work; w++) {
        while (src + 1 < p && w >= r->recv_start[src + 1])
            src++;
        if (rounds[w] != round)
            continue;
        memcpy(AT(r, SEL_POINTS, float) + j * dim, r->work + w * dim,
               (size_t)dim * sizeof(float));
        AT(r, SEL_BOUND, float)[j] = AT(r, WORK_BOUND, float)[w];
        AT(r, SEL_POS, uint32_t)[j] = (uint32_t)(w - r->recv_start[src]);
        const uint64_t c = AT(r, WORK_COUNT, uint64_t)[w];
        offsets[j + 1] = offsets[j] + c;
        r->out_counts[src] += r->keep && c > r->keep ? r->keep : c;
        j++;
    }
    *n_sel = n;
    return LBK_OK;
}

/* The holder: the selected rows [j0, j1) through the engine, their lists
 * from the start of FILL_KEYS and FILL_ROWS. */
static lbk_status fill_group(radius_run *r, uint64_t j0, uint64_t j1)
{
    lbk_index *s = r->s;
    const uint64_t dim = (uint64_t)s->shape.dim, chunk = engine_chunk(r);
    const uint64_t *offsets = AT(r, SEL_OFFSETS, uint64_t);
    for (uint64_t at = j0; at < j1; at += chunk) {
        const uint64_t m = j1 - at < chunk ? j1 - at : chunk, from = offsets[at] - offsets[j0];
        uint64_t *off = AT(r, CHUNK_OFFSETS, uint64_t);
        for (uint64_t i = 0; i <= m; i++)
            off[i] = offsets[at + i] - offsets[at];
        LBK_TRY(lbk_engine_radius_fill(
            s->engine, AT(r, SEL_POINTS, float) + at * dim, AT(r, SEL_BOUND, float) + at, m, off,
            AT(r, FILL_KEYS, float) + from, AT(r, FILL_ROWS, uint32_t) + from));
    }
    return LBK_OK;
}

/* The end of the group of selected rows from j0 whose whole lists the
 * budget holds (one row at least: a truncated list is filled whole before
 * its first `keep` are taken). */
static uint64_t group_end(const radius_run *r, uint64_t j0, uint64_t n)
{
    const uint64_t *offsets = AT(r, SEL_OFFSETS, uint64_t);
    uint64_t j1 = j0 + 1;
    while (j1 < n && offsets[j1 + 1] - offsets[j0] <= r->budget)
        j1++;
    return j1;
}

static radius_entry entry_of(const lbk_index *s, float key, uint32_t pos, uint32_t row)
{
    return (radius_entry){key, pos, s->shard.labels ? s->shard.labels[row] : -1, 0,
                          lbk_dataset_id(&s->shard, row)};
}

static int id_cmp(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A list longer than `keep`: its first `keep` by (key, id). The engine's
 * list is in (key, row) order, so only the keys equal to the last one kept
 * need their ids: the smallest of them go. */
static lbk_status keep_first(const lbk_index *s, const float *keys, const uint32_t *rows,
                             uint64_t m, uint64_t keep, uint32_t pos, radius_entry *out)
{
    const float last = keys[keep - 1];
    uint64_t a = keep - 1, b = keep;
    while (a > 0 && keys[a - 1] == last)
        a--;
    while (b < m && keys[b] == last)
        b++;
    for (uint64_t e = 0; e < a; e++)
        out[e] = entry_of(s, keys[e], pos, rows[e]);
    uint64_t *tie = malloc((size_t)(b - a) * 2 * sizeof *tie);
    LBK_FAIL_IF(!tie, LBK_ERR_NOMEM, "out of host memory for %llu tied radius entries",
                (unsigned long long)(b - a));
    for (uint64_t e = a; e < b; e++) /* (id, row) pairs, sorted by id */
        tie[2 * (e - a)] = lbk_dataset_id(&s->shard, rows[e]), tie[2 * (e - a) + 1] = rows[e];
    qsort(tie, (size_t)(b - a), 2 * sizeof *tie, id_cmp);
    for (uint64_t e = a; e < keep; e++)
        out[e] = entry_of(s, last, pos, (uint32_t)tie[2 * (e - a) + 1]);
    free(tie);
    return LBK_OK;
}

/* The holder: selected row j's list (m entries at `first` in the fill
 * arrays) as entries for its owner, at most `keep` of them. */
static lbk_status list_entries(radius_run *r, uint64_t j, uint64_t first, uint64_t m,
                               radius_entry *out, uint64_t *n_out)
{
    const lbk_index *s = r->s;
    const float *keys = AT(r, FILL_KEYS, float) + first;
    const uint32_t *rows = AT(r, FILL_ROWS, uint32_t) + first;
    const uint32_t pos = AT(r, SEL_POS, uint32_t)[j];
    for (uint64_t e = 0; e < m; e++)
        LBK_FAIL_IF(rows[e] >= s->shard.rows, LBK_ERR_INTERNAL,
                    "internal: the engine answered row %lu of a shard of %llu rows",
                    (unsigned long)rows[e], (unsigned long long)s->shard.rows);
    const uint64_t keep = r->keep && m > r->keep ? r->keep : m;
    if (keep < m)
        LBK_TRY(keep_first(s, keys, rows, m, keep, pos, out + *n_out));
    else
        for (uint64_t e = 0; e < m; e++)
            out[*n_out + e] = entry_of(s, keys[e], pos, rows[e]);
    *n_out += keep;
    return LBK_OK;
}

/* The holder: the round's lists from the engine, as entries for their
 * owners (packed by owner, since work rows come in source order), filled
 * in groups within the budget. */
static lbk_status fill_round(radius_run *r, uint32_t round)
{
    lbk_index *s = r->s;
    uint64_t n = 0, most = 0, n_out = 0;
    LBK_TRY(select_round(r, round, &n));
    const uint64_t *offsets = AT(r, SEL_OFFSETS, uint64_t);
    for (uint64_t j0 = 0, j1 = 0; j0 < n; j0 = j1) {
        j1 = group_end(r, j0, n);
        most = offsets[j1] - offsets[j0] > most ? offsets[j1] - offsets[j0] : most;
    }
    const uint64_t sent = total(r->out_counts, s->comm->size);
    LBK_TRY(reserve(r, FILL_KEYS, most * sizeof(float), "radius lists"));
    LBK_TRY(reserve(r, FILL_ROWS, most * sizeof(uint32_t), "radius lists"));
    LBK_TRY(reserve(r, CHUNK_OFFSETS, (engine_chunk(r) + 1) * sizeof(uint64_t), "radius lists"));
    LBK_TRY(reserve(r, ENTRIES_OUT, sent * sizeof(radius_entry), "radius lists out"));
    radius_entry *out = AT(r, ENTRIES_OUT, radius_entry);
    for (uint64_t j0 = 0, j1 = 0; j0 < n; j0 = j1) {
        j1 = group_end(r, j0, n);
        LBK_TRY(fill_group(r, j0, j1));
        for (uint64_t j = j0; j < j1; j++)
            LBK_TRY(list_entries(r, j, offsets[j] - offsets[j0], offsets[j + 1] - offsets[j], out,
                                 &n_out));
    }
    engine_work(s);
    LBK_FAIL_IF(n_out != sent, LBK_ERR_INTERNAL,
                "internal: %llu radius entries out where %llu were counted",
                (unsigned long long)n_out, (unsigned long long)sent);
    return LBK_OK;
}

/* (key, id) order: x before y. */
static bool entry_before(const radius_entry *x, const radius_entry *y)
{
    return x->key < y->key || (!(x->key > y->key) && x->id < y->id);
}

/* The end of the run of entries in (key, id) order from i. */
static uint64_t run_end(const radius_entry *a, uint64_t i, uint64_t n)
{
    while (i + 1 < n && !entry_before(&a[i + 1], &a[i]))
        i++;
    return i + 1;
}

/* One query's entries in (key, id) order: each holder's come as a run in
 * (key, row) order, which is (key, id) order where a shard's ids ascend
 * with its rows (row shards, replicas, one rank), so a list from one
 * holder is checked, not sorted, and several holders' runs are merged in
 * pairs (tmp: room for n). Returns where the sorted list lies. */
static const radius_entry *sort_list(radius_entry *a, radius_entry *tmp, uint64_t n)
{
    if (n == 0 || run_end(a, 0, n) == n)
        return a;
    radius_entry *src = a, *dst = tmp;
    for (;;) {
        uint64_t runs = 0;
        for (uint64_t i = 0; i < n; runs++) {
            const uint64_t j = run_end(src, i, n), k = j < n ? run_end(src, j, n) : j;
            uint64_t x = i, y = j, o = i;
            while (x < j && y < k)
                dst[o++] = entry_before(&src[y], &src[x]) ? src[y++] : src[x++];
            while (x < j)
                dst[o++] = src[x++];
            while (y < k)
                dst[o++] = src[y++];
            i = k;
        }
        radius_entry *t = src;
        src = dst;
        dst = t;
        if (runs <= 1)
            return src;
    }
}

/* The owner: the round's queries [q0, q1) (contiguous: rounds follow the
 * query order). */
static void round_range(const radius_run *r, uint32_t round, uint64_t *q0, uint64_t *q1)
{
    const uint32_t *rounds = AT(r, OWN_ROUND, uint32_t);
    uint64_t i = 0;
    while (i < r->own_n && rounds[i] < round)
        i++;
    *q0 = i;
    while (i < r->own_n && rounds[i] == round)
        i++;
    *q1 = i;
}

/* The owner: the entries received, each query's placed together (counts
 * into OUT_INDPTR, relative to q0). Entries that came grouped by query in
 * query order (one holder: one rank, replicas) are placed already: the
 * buffers change places, PLACED's room becoming finish_round's scratch. */
static lbk_status place_entries(radius_run *r, uint64_t q0, uint64_t q1, uint64_t *placed)
{
    const int p = r->s->comm->size;
    const uint64_t n = total(r->in_counts, p), nq = q1 - q0;
    const radius_entry *in = r->buf[ENTRIES_IN].data;
    const uint32_t *sent = AT(r, SENT_QUERY, uint32_t);
    LBK_TRY(reserve(r, PLACED, n * sizeof(radius_entry), "radius lists"));
    LBK_TRY(reserve(r, OUT_INDPTR, (nq + 1) * sizeof(uint64_t), "radius lists"));
    uint64_t *at = AT(r, OUT_INDPTR, uint64_t);
    memset(at, 0, (size_t)(nq + 1) * sizeof *at);
    bool in_order = true;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t e = 0, last = q0;
        for (int d = 0; d < p; d++)
            for (uint64_t i = 0; i < r->in_counts[d]; i++, e++) {
                const uint64_t q = sent[r->send_start[d] + in[e].pos];
                LBK_FAIL_IF(q < q0 || q >= q1, LBK_ERR_INTERNAL,
                            "internal: rank %d answered radius query %llu outside its round", d,
                            (unsigned long long)q);
                in_order = in_order && q >= last;
                last = q;
                if (pass == 0)
                    at[q - q0 + 1]++;
                else
                    AT(r, PLACED, radius_entry)[at[q - q0]++] = in[e];
            }
        if (pass == 0)
            for (uint64_t q = 0; q < nq; q++)
                at[q + 1] += at[q];
        if (pass == 0 && in_order) {
            const lbk_exchange_buffer room = r->buf[PLACED];
            r->buf[PLACED] = r->buf[ENTRIES_IN];
            r->buf[ENTRIES_IN] = room;
            break;
        }
        if (pass == 1) /* at[q] moved to the end of q's entries: back to the starts */
            for (uint64_t q = nq; q > 0; q--)
                at[q] = at[q - 1];
        at[0] = 0;
    }
    *placed = n;
    return LBK_OK;
}

/* The owner: the round's entries placed and the sink's arrays. */
static lbk_status round_arrays(radius_run *r, uint64_t q0, uint64_t q1, uint64_t *n)
{
    LBK_TRY(place_entries(r, q0, q1, n));
    LBK_TRY(reserve(r, OUT_COUNTS, (q1 - q0) * sizeof(uint64_t), "radius counts"));
    LBK_TRY(reserve(r, OUT_IDS, *n * sizeof(uint64_t), "radius lists"));
    LBK_TRY(reserve(r, OUT_KEYS, *n * sizeof(float), "radius lists"));
    return reserve(r, OUT_LABELS, *n * sizeof(int32_t), "radius lists");
}

/* Collective: the owner's queries of the round, each's entries sorted,
 * itself left out (self search), cut at the cap (truncate), and the round
 * to the sink, agreed before (a sink may be collective: the vote sink
 * looks labels up across ranks) and after. */
static lbk_status finish_round(radius_run *r, uint32_t round)
{
    const lbk_comm *comm = r->s->comm;
    uint64_t q0 = 0, q1 = 0, n = 0;
    round_range(r, round, &q0, &q1);
    const uint64_t nq = q1 - q0, cap = r->p->truncate ? r->p->max_neighbors : 0;
    LBK_TRY(lbk_comm_agree(comm, round_arrays(r, q0, q1, &n)));
    uint64_t *indptr = AT(r, OUT_INDPTR, uint64_t), *count = AT(r, OUT_COUNTS, uint64_t);
    uint64_t *ids = AT(r, OUT_IDS, uint64_t);
    float *keys = AT(r, OUT_KEYS, float);
    int32_t *labels = AT(r, OUT_LABELS, int32_t);
    radius_entry *placed = AT(r, PLACED, radius_entry);
    radius_entry *scratch = r->buf[ENTRIES_IN].data; /* placed: free again */
    uint64_t out = 0, begin = 0;
    for (uint64_t q = 0; q < nq; q++) {
        const uint64_t end = indptr[q + 1], self = AT(r, OWN_ROW, uint64_t)[q0 + q];
        const radius_entry *list = sort_list(placed + begin, scratch + begin, end - begin);
        indptr[q] = out;
        uint64_t kept = 0;
        for (uint64_t e = 0; e < end - begin; e++) {
            if (r->self && list[e].id == self)
                continue;
            if (cap == 0 || kept < cap) {
                ids[out + kept] = list[e].id;
                keys[out + kept] = list[e].key;
                labels[out + kept] = list[e].label;
            }
            kept++;
        }
        /* Where holders sent their first `keep` alone, the count is the
         * holders' sum, as a count-only search gives it. */
        const bool cut = own_recv(r)[q0 + q] < AT(r, OWN_COUNT, uint64_t)[q0 + q];
        count[q] = cut ? exact_count(r, q0 + q) : kept;
        out += cap > 0 && kept > cap ? cap : kept;
        begin = end;
    }
    indptr[nq] = out;
    r->s->info.stats.queries_owned += nq;
    const lbk_index_radius_slice slice = {r->b.first,
                                          r->b.count,
                                          r->b.slice_first + q0,
                                          nq,
                                          count,
                                          indptr,
                                          ids,
                                          keys,
                                          r->s->shard.labels ? labels : NULL,
                                          r->self && r->spatial ? &r->s->shard : NULL,
                                          r->self ? r->s->self_order : NULL};
    return lbk_comm_agree(comm, r->sink->emit(r->sink->user, &slice));
}

/* Collective: the holders' entries to their owners. One rank is its own
 * holder: the buffers change places instead of 24 bytes an entry copied
 * (0.07 s of a 1 s search at 128 neighbours, 1e5 queries). */
static lbk_status entries_back(radius_run *r, lbk_status st)
{
    lbk_index *s = r->s;
    if (s->comm->size > 1)
        return lbk_exchange_rows(s->comm, st, r->buf[ENTRIES_OUT].data, r->out_counts,
                                 sizeof(radius_entry), &r->buf[ENTRIES_IN], r->in_counts,
                                 &s->info.stats.bytes_sent);
    LBK_TRY(st);
    const lbk_exchange_buffer out = r->buf[ENTRIES_OUT];
    r->buf[ENTRIES_OUT] = r->buf[ENTRIES_IN];
    r->buf[ENTRIES_IN] = out;
    r->in_counts[0] = r->out_counts[0];
    return LBK_OK;
}

/* Collective: one round of the fill: the holders' lists to the owners,
 * then the owners' lists to the sinks. */
static lbk_status run_round(radius_run *r, uint32_t round)
{
    lbk_index *s = r->s;
    double t = lbk_timer_now();
    const lbk_status st = fill_round(r, round);
    s->info.phase[LBK_PHASE_QUERY] += lbk_timer_now() - t;
    t = lbk_timer_now();
    LBK_TRY(entries_back(r, st));
    for (int q = 0; q < s->comm->size; q++)
        s->info.stats.bytes_received +=
            q == s->comm->rank ? 0 : r->in_counts[q] * sizeof(radius_entry);
    s->info.phase[LBK_PHASE_MERGE] += lbk_timer_now() - t;
    t = lbk_timer_now();
    const lbk_status done = finish_round(r, round);
    s->info.phase[LBK_PHASE_OUTPUT] += lbk_timer_now() - t;
    return done;
}

static lbk_status timed(radius_run *r, lbk_index_phase phase, lbk_status (*step)(radius_run *))
{
    const double t = lbk_timer_now();
    const lbk_status st = step(r);
    r->s->info.phase[phase] += lbk_timer_now() - t;
    return st;
}

/* Collective: agreed after the routing, whose own steps after the
 * exchange (route_spatial's bounds) may fail on one rank. */
static lbk_status route(radius_run *r)
{
    return lbk_comm_agree(r->s->comm, r->spatial ? route_spatial(r) : route_local(r));
}

/* Collective: one batch, every step agreed. */
static lbk_status run_batch(radius_run *r)
{
    const lbk_comm *comm = r->s->comm;
    LBK_TRY(lbk_comm_agree(comm, timed(r, LBK_PHASE_DISTRIBUTE, batch_points)));
    LBK_TRY(lbk_comm_agree(comm, own_queries(r)));
    LBK_TRY(timed(r, LBK_PHASE_DISTRIBUTE, route));
    LBK_TRY(lbk_comm_agree(comm, timed(r, LBK_PHASE_QUERY, count_work)));
    LBK_TRY(lbk_comm_agree(comm, timed(r, LBK_PHASE_MERGE, counts_back)));
    LBK_TRY(lbk_comm_agree(comm, plan_rounds(r)));
    if (r->p->count_only)
        return timed(r, LBK_PHASE_OUTPUT, emit_counts);
    uint64_t rounds = r->own_rounds;
    LBK_TRY(lbk_comm_allreduce_u64(comm, &rounds, LBK_REDUCE_MAX));
    LBK_TRY(lbk_comm_agree(comm, timed(r, LBK_PHASE_DISTRIBUTE, rounds_out)));
    for (uint64_t i = 0; i < rounds; i++)
        LBK_TRY(run_round(r, (uint32_t)i));
    return LBK_OK;
}

static lbk_status run_alloc(radius_run *r)
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

static void run_free(radius_run *r)
{
    free(r->send_counts);
    for (int i = 0; i < BUFFERS; i++)
        lbk_exchange_buffer_free(&r->buf[i]);
}

/* Batch i: as the kNN search's (index.c). */
static void batch_at(radius_run *r, uint64_t i)
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
    radius_run r = {
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
        st = self ? lbk_index_prepare_self(s, 0) : lbk_index_prepare(s, query_rows, 0);
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
