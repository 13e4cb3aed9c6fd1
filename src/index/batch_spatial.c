/* The spatial partition: the reference points are redistributed once so
 * that each rank owns one box of a global k-d split (comm/decompose.h), and
 * each rank answers its own slice of the query file in two phases per
 * batch:
 *   1. every query goes to its home rank (the box whose cell holds it),
 *      which returns its K-list; the K-th key is the query's bound (+inf
 *      when the home box has fewer than K points);
 *   2. the query goes to every other rank whose box key is within the
 *      bound (inclusive), those return their K-lists, and the owner merges
 *      them into the home list with the (key, id) merge.
 * Why that is exact: docs/design.md, "Spatial partition". */
#include "batch_impl.h"

#include "decompose.h"
#include "log.h"
#include "timer.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

void lbk_batch_spatial_free(lbk_index_spatial *sp)
{
    if (!sp)
        return;
    lbk_toptree_free(&sp->tree);
    free(sp->send_counts);
    free(sp->recv_counts);
    free(sp->back_counts);
    free(sp->cursor);
    free(sp->near);
    lbk_exchange_buffer *buffers[] = {
        &sp->home,     &sp->row,       &sp->rows_out, &sp->rows_in,    &sp->lists_out,
        &sp->lists_in, &sp->extra_row, &sp->bound,    &sp->near_count, &sp->extra_bound};
    for (size_t i = 0; i < sizeof buffers / sizeof *buffers; i++)
        lbk_exchange_buffer_free(buffers[i]);
    free(sp);
}

static lbk_status spatial_alloc(lbk_index *s)
{
    const size_t p = (size_t)s->comm->size;
    lbk_index_spatial *sp = calloc(1, sizeof *sp);
    s->spatial = sp;
    LBK_FAIL_IF(!sp, LBK_ERR_NOMEM, "out of host memory for the spatial partition");
    sp->send_counts = calloc(p, sizeof *sp->send_counts);
    sp->recv_counts = calloc(p, sizeof *sp->recv_counts);
    sp->back_counts = calloc(p, sizeof *sp->back_counts);
    sp->cursor = calloc(p, sizeof *sp->cursor);
    sp->near = calloc(p, sizeof *sp->near);
    LBK_FAIL_IF(!sp->send_counts || !sp->recv_counts || !sp->back_counts || !sp->cursor ||
                    !sp->near,
                LBK_ERR_NOMEM, "out of host memory for the spatial partition (%zu ranks)", p);
    sp->lists_out.huge_pages = true;
    return LBK_OK;
}

/* Compact values as floats (exact) for the decomposition's planes and
 * boxes; the rows themselves move at their own width. */
static float value_u8(const void *raw, uint64_t at) { return (float)((const uint8_t *)raw)[at]; }
static float value_i8(const void *raw, uint64_t at) { return (float)((const int8_t *)raw)[at]; }
static float value_f16(const void *raw, uint64_t at)
{
    return lbk_dataset_half_to_float(((const uint16_t *)raw)[at]);
}

static lbk_decompose_value_fn value_of(lbk_dtype type)
{
    return type == LBK_DTYPE_UINT8     ? value_u8
           : type == LBK_DTYPE_INT8    ? value_i8
           : type == LBK_DTYPE_FLOAT16 ? value_f16
                                       : NULL;
}

/* Collective: the row shard becomes the points of this rank's box, with
 * their global ids (ascending, so the engine's (key, row) order is the
 * (key, id) order). */
static lbk_status spatial_redistribute(lbk_index *s)
{
    const double t = lbk_timer_now();
    LBK_TRY(lbk_comm_agree(s->comm, spatial_alloc(s)));
    lbk_index_spatial *sp = s->spatial;
    const lbk_dataset *q = s->balance_queries;
    const lbk_decompose_shard view = {.rows = s->shard.rows,
                                      .first_row = s->shard.first_row,
                                      .total_rows = s->shape.reference_rows,
                                      .dim = s->shape.dim,
                                      .points = s->shard.points,
                                      .raw = s->shard.raw,
                                      .value_bytes = lbk_dataset_type_bytes(s->shard.dtype),
                                      .value_of = value_of(s->shard.dtype),
                                      .labels = s->shard.labels,
                                      .has_labels = s->shape.reference_labels,
                                      .balance = s->balance_queries != NULL,
                                      .queries = q ? q->points : NULL,
                                      .query_rows = q ? q->rows : 0};
    lbk_decompose_owned own;
    uint64_t bytes = 0;
    LBK_TRY(lbk_decompose(s->comm, s->params.split, &view, &sp->tree, &own, &bytes));
    const lbk_dtype dtype = s->shard.dtype;
    lbk_dataset_free(&s->shard);
    s->shard = (lbk_dataset){.rows = own.rows,
                             .dim = own.dim,
                             .points = own.points,
                             .dtype = dtype,
                             .raw = own.raw,
                             .labels = own.labels,
                             .ids = own.ids,
                             .ids32 = own.ids32};
    sp->report.levels = lbk_toptree_levels(&sp->tree);
    sp->report.redistribute_s = lbk_timer_now() - t;
    s->info.spatial = &sp->report;
    sp->report.redistribute_bytes = bytes;
    return LBK_OK;
}

lbk_status lbk_batch_spatial_adopt(lbk_index *s, lbk_toptree *tree)
{
    LBK_TRY(spatial_alloc(s));
    lbk_index_spatial *sp = s->spatial;
    sp->tree = *tree;
    memset(tree, 0, sizeof *tree);
    sp->report.levels = lbk_toptree_levels(&sp->tree);
    s->info.spatial = &sp->report;
    return LBK_OK;
}

/* Under round robin the top levels split a rank's cell along dimensions
 * 0, 1, ..., depth - 1 mod D; a local tree that started at 0 again would
 * cut the same dimensions first and leave cells elongated (P = 16 in 3-D:
 * boxes 1/4 x 1/2 x 1/2 cut along x first; 15 % more distance evaluations
 * than P = 1, bench/RESULTS.md run L). Continuing the rotation makes the
 * local levels the ones a single tree over every point would have. */
int lbk_batch_spatial_rotation(const lbk_index *s)
{
    if (!s->spatial || s->shape.dim < 1)
        return 0;
    return lbk_toptree_leaf_depth(&s->spatial->tree, s->comm->rank) % s->shape.dim;
}

static uint64_t sum_counts(const uint64_t *counts, int p)
{
    uint64_t n = 0;
    for (int r = 0; r < p; r++)
        n += counts[r];
    return n;
}

/* Rows of row_bytes received from the other ranks (this rank's own rows
 * do not cross a link): the query-time bytes_received. */
static uint64_t bytes_from_others(const lbk_index *s, const uint64_t *counts, size_t row_bytes)
{
    uint64_t rows = 0;
    for (int r = 0; r < s->comm->size; r++)
        rows += r == s->comm->rank ? 0 : counts[r];
    return rows * (uint64_t)row_bytes;
}

/* cursor[r] = the first row for rank r when rows are packed by rank. */
static void start_cursors(lbk_index_spatial *sp, int p)
{
    uint64_t at = 0;
    for (int r = 0; r < p; r++) {
        sp->cursor[r] = at;
        at += sp->send_counts[r];
    }
}

/* Phase 1, out: each query of the batch to its home rank, rows packed by
 * rank; query q's row is row[q]. */
static lbk_status route_home(lbk_index *s, lbk_batch *b)
{
    lbk_index_spatial *sp = s->spatial;
    const int p = s->comm->size;
    const uint64_t dim = (uint64_t)s->shape.dim, off = b->first - s->query_first;
    const size_t row = (size_t)dim * sizeof(float);
    b->points = b->count ? s->query_points + off * dim : NULL;
    b->slice_first = 0;
    b->slice_count = b->count;
    memset(sp->send_counts, 0, (size_t)p * sizeof *sp->send_counts);
    lbk_status st =
        lbk_exchange_buffer_reserve(&sp->home, (size_t)b->count * sizeof(int), "home ranks");
    if (st == LBK_OK)
        st = lbk_exchange_buffer_reserve(&sp->row, (size_t)b->count * sizeof(uint64_t),
                                         "query rows");
    if (st == LBK_OK)
        st = lbk_exchange_buffer_reserve(&sp->rows_out, (size_t)b->count * row,
                                         "queries for other ranks");
    if (st == LBK_OK) {
        int *home = sp->home.data;
        uint64_t *at = sp->row.data;
        for (uint64_t q = 0; q < b->count; q++) {
            home[q] = lbk_toptree_home(&sp->tree, b->points + q * dim);
            sp->send_counts[home[q]]++;
        }
        start_cursors(sp, p);
        for (uint64_t q = 0; q < b->count; q++) {
            at[q] = sp->cursor[home[q]]++;
            memcpy((char *)sp->rows_out.data + at[q] * row, b->points + q * dim, row);
        }
    }
    LBK_TRY(lbk_exchange_rows(s->comm, st, sp->rows_out.data, sp->send_counts, row, &sp->rows_in,
                              sp->recv_counts, &s->info.stats.bytes_sent));
    s->info.stats.bytes_received += bytes_from_others(s, sp->recv_counts, row);
    return LBK_OK;
}

/* The K-lists of every query received, in the order received (`bounds`:
 * per query, or NULL). */
static lbk_status search_received(lbk_index *s, const float *bounds, uint64_t *answered)
{
    lbk_index_spatial *sp = s->spatial;
    const uint64_t n = sum_counts(sp->recv_counts, s->comm->size);
    const size_t list = (size_t)s->params.k * sizeof(lbk_knn_candidate);
    LBK_TRY(
        lbk_exchange_buffer_reserve(&sp->lists_out, (size_t)n * list, "K-lists for other ranks"));
    *answered += n;
    return lbk_batch_search(s, sp->rows_in.data, bounds, false, n, sp->lists_out.data);
}

/* Phase 1's search. The K-lists of this rank's own queries go straight to
 * where return_home's exchange would put them in s->merged (after the
 * lists of the queries it sent to lower ranks); only the other ranks'
 * take room in lists_out, whose copy and first touch they alone cost. */
static lbk_status search_home(lbk_index *s, lbk_batch *b)
{
    (void)b;
    lbk_index_spatial *sp = s->spatial;
    const int me = s->comm->rank;
    const uint64_t n = sum_counts(sp->recv_counts, s->comm->size), own = sp->recv_counts[me];
    const uint64_t dim = (uint64_t)s->shape.dim, k = (uint64_t)s->params.k;
    const uint64_t before = sum_counts(sp->recv_counts, me),
                   home = sum_counts(sp->send_counts, me);
    const size_t list = (size_t)k * sizeof(lbk_knn_candidate);
    LBK_TRY(lbk_exchange_buffer_reserve(&sp->lists_out, (size_t)(n - own) * list,
                                        "K-lists for other ranks"));
    s->info.stats.queries_phase1 += n;
    const float *rows = sp->rows_in.data;
    lbk_knn_candidate *others = sp->lists_out.data;
    LBK_TRY(lbk_batch_search(s, rows, NULL, false, before, others));
    LBK_TRY(lbk_batch_search(s, rows + before * dim, NULL, false, own, s->merged + home * k));
    return lbk_batch_search(s, rows + (before + own) * dim, NULL, false, n - before - own,
                            others + before * k);
}

/* A phase-2 row is the query's point and its home bound: the rows become
 * the points (moved down in place: row i's point lands at or below where
 * row i began) and the bounds. */
static lbk_status split_extra_rows(lbk_index *s, float **bounds)
{
    lbk_index_spatial *sp = s->spatial;
    const uint64_t n = sum_counts(sp->recv_counts, s->comm->size);
    const uint64_t dim = (uint64_t)s->shape.dim;
    LBK_TRY(lbk_exchange_buffer_reserve(&sp->extra_bound, (size_t)n * sizeof(float),
                                        "phase-2 bounds"));
    float *rows = sp->rows_in.data, *bound = sp->extra_bound.data;
    for (uint64_t i = 0; i < n; i++) {
        bound[i] = rows[i * (dim + 1) + dim];
        memmove(rows + i * dim, rows + i * (dim + 1), (size_t)dim * sizeof(float));
    }
    *bounds = bound;
    return LBK_OK;
}

/* Only keys within the home bound can displace one of the home list's K,
 * so the other box is searched up to it: most of a phase-2 walk's keys
 * were beyond it (docs/design.md §9). */
static lbk_status search_extra(lbk_index *s, lbk_batch *b)
{
    (void)b;
    float *bounds = NULL;
    LBK_TRY(split_extra_rows(s, &bounds));
    return search_received(s, bounds, &s->info.stats.queries_phase2);
}

/* Collective: the K-lists back to the queries' owners, into `into`, which
 * get exactly as many from each rank as they sent it queries. */
static lbk_status return_lists(lbk_index *s, lbk_exchange_buffer *into, bool own_placed)
{
    lbk_index_spatial *sp = s->spatial;
    const size_t list = (size_t)s->params.k * sizeof(lbk_knn_candidate);
    uint64_t bytes = 0;
    LBK_TRY(own_placed
                ? lbk_exchange_rows_own_placed(s->comm, sp->lists_out.data, sp->recv_counts, list,
                                               into, sp->back_counts, &bytes)
                : lbk_exchange_rows(s->comm, LBK_OK, sp->lists_out.data, sp->recv_counts, list,
                                    into, sp->back_counts, &bytes));
    s->info.stats.bytes_sent += bytes;
    s->info.stats.bytes_received += bytes_from_others(s, sp->back_counts, list);
    s->info.merge_bytes += bytes;
    for (int r = 0; r < s->comm->size; r++)
        LBK_FAIL_IF(sp->back_counts[r] != sp->send_counts[r], LBK_ERR_INTERNAL,
                    "internal: rank %d returned %llu K-lists for %llu queries", r,
                    (unsigned long long)sp->back_counts[r],
                    (unsigned long long)sp->send_counts[r]);
    return LBK_OK;
}

/* A list's K-th key as the float key the top tree's box keys are compared
 * with: brute force's exact integer keys are coded (lbk_engine_int_keys),
 * and decode to the float32 key, which is the exact integer where the
 * index keeps integer points compact under this partition (widen_for_plan:
 * up to LBK_KDTREE_INT_DIM_MAX dimensions, where the box keys are exact
 * integers too). */
static float bound_of(const lbk_index *s, const lbk_knn_candidate *kth)
{
    if (!lbk_engine_int_keys(s->engine))
        return kth->key;
    lbk_knn_candidate c = *kth;
    lbk_engine_int_keys_decode(s->params.metric, &c, 1);
    return c.key;
}

/* Phase 1, back: the home lists come back in the order the queries went
 * out, straight into s->merged (query q's at row[q]), where phase 2 merges
 * into them in place: no second list buffer. */
static lbk_status return_home(lbk_index *s, lbk_batch *b)
{
    lbk_index_spatial *sp = s->spatial;
    const uint64_t k = (uint64_t)s->params.k;
    const size_t lists = (size_t)s->info.batch * (size_t)k * sizeof(lbk_knn_candidate);
    lbk_exchange_buffer merged = {.data = s->merged, .capacity = lists, .borrowed = true};
    LBK_TRY(return_lists(s, &merged, true));
    /* The bounds in row order, one pass down the lists: phase 2 reads them
     * by query, and reading each from its list in batch order (a row per
     * 256 bytes, out of order) cost 20-30 ms a 100k-query batch in cache
     * misses. */
    LBK_TRY(lbk_exchange_buffer_reserve(&sp->bound, (size_t)b->count * sizeof(float),
                                        "phase-1 bounds"));
    float *bound = sp->bound.data;
    for (uint64_t at = 0; at < b->count; at++)
        bound[at] = bound_of(s, &s->merged[at * k + k - 1]);
    return LBK_OK;
}

/* The self search's phase 1, with no exchange: the batch is this rank's
 * own points, their home is this rank, and their lists go straight to
 * s->merged, in batch order. */
static lbk_status search_own_points(lbk_index *s, lbk_batch *b)
{
    lbk_index_spatial *sp = s->spatial;
    const uint64_t k = (uint64_t)s->params.k;
    b->points = lbk_batch_own_points(s, b);
    b->slice_first = 0;
    b->slice_count = b->count;
    LBK_TRY(lbk_exchange_buffer_reserve(&sp->home, (size_t)b->count * sizeof(int), "home ranks"));
    LBK_TRY(
        lbk_exchange_buffer_reserve(&sp->row, (size_t)b->count * sizeof(uint64_t), "query rows"));
    LBK_TRY(lbk_exchange_buffer_reserve(&sp->bound, (size_t)b->count * sizeof(float),
                                        "phase-1 bounds"));
    s->info.stats.queries_phase1 += b->count;
    LBK_TRY(lbk_batch_search(s, b->points, NULL, b->in_order, b->count, s->merged));
    int *home = sp->home.data;
    uint64_t *row = sp->row.data;
    float *bound = sp->bound.data;
    for (uint64_t q = 0; q < b->count; q++) {
        home[q] = s->comm->rank;
        row[q] = q;
        bound[q] = bound_of(s, &s->merged[q * k + k - 1]);
    }
    return LBK_OK;
}

/* Phase 2's ranks of query q: every other rank whose box is within the
 * home list's K-th key. */
static int near_ranks(lbk_index *s, const lbk_batch *b, uint64_t q)
{
    lbk_index_spatial *sp = s->spatial;
    const uint64_t at = ((const uint64_t *)sp->row.data)[q];
    const float bound = ((const float *)sp->bound.data)[at];
    return lbk_toptree_near(&sp->tree, b->points + q * (uint64_t)s->shape.dim, bound,
                            s->params.metric, ((const int *)sp->home.data)[q], sp->near);
}

/* Phase 2, out: each query to the other ranks within its bound. */
static lbk_status route_extra(lbk_index *s, lbk_batch *b)
{
    lbk_index_spatial *sp = s->spatial;
    const int p = s->comm->size;
    const uint64_t dim = (uint64_t)s->shape.dim;
    const size_t point = (size_t)dim * sizeof(float), row = point + sizeof(float);
    memset(sp->send_counts, 0, (size_t)p * sizeof *sp->send_counts);
    lbk_status st = lbk_exchange_buffer_reserve(&sp->near_count, (size_t)b->count * sizeof(int),
                                                "phase-2 counts");
    int *count = sp->near_count.data;
    for (uint64_t q = 0; q < b->count && st == LBK_OK; q++) {
        count[q] = near_ranks(s, b, q);
        for (int i = 0; i < count[q]; i++)
            sp->send_counts[sp->near[i]]++;
        s->info.stats.owned_phase2 += count[q] > 0;
    }
    const uint64_t total = sum_counts(sp->send_counts, p);
    if (st == LBK_OK)
        st = lbk_exchange_buffer_reserve(&sp->rows_out, (size_t)total * row, "phase-2 queries");
    if (st == LBK_OK)
        st = lbk_exchange_buffer_reserve(&sp->extra_row, (size_t)total * sizeof(uint64_t),
                                         "phase-2 list rows");
    if (st == LBK_OK) {
        uint64_t *which = sp->extra_row.data;
        const uint64_t *rows = sp->row.data;
        const float *bound = sp->bound.data;
        start_cursors(sp, p);
        /* Only the few queries with phase-2 ranks walk the top tree again;
         * the cursors were counted from the first walk, so the second must
         * agree with it. */
        for (uint64_t q = 0; q < b->count && st == LBK_OK; q++) {
            const int n = count[q] > 0 ? near_ranks(s, b, q) : 0;
            if (n != count[q]) {
                lbk_error("internal: phase 2 of query %llu: %d ranks, then %d",
                          (unsigned long long)(b->first + q), count[q], n);
                st = LBK_ERR_INTERNAL;
            }
            for (int i = 0; i < n && st == LBK_OK; i++) {
                const uint64_t at = sp->cursor[sp->near[i]]++;
                char *out = (char *)sp->rows_out.data + at * row;
                memcpy(out, b->points + q * dim, point);
                memcpy(out + point, bound + rows[q], sizeof(float));
                which[at] = rows[q];
            }
        }
    }
    LBK_TRY(lbk_exchange_rows(s->comm, st, sp->rows_out.data, sp->send_counts, row, &sp->rows_in,
                              sp->recv_counts, &s->info.stats.bytes_sent));
    s->info.stats.bytes_received += bytes_from_others(s, sp->recv_counts, row);
    return LBK_OK;
}

/* Row q of `lists` takes row at[q]'s list: each cycle of the permutation
 * followed once, with one list aside; at[] ends as the identity. */
static void to_batch_order(lbk_knn_candidate *lists, uint64_t *at, uint64_t count, int k)
{
    lbk_knn_candidate aside[LBK_K_MAX];
    const size_t list = (size_t)k * sizeof *lists;
    for (uint64_t q = 0; q < count; q++) {
        if (at[q] == q)
            continue;
        memcpy(aside, lists + q * (uint64_t)k, list);
        uint64_t j = q;
        while (at[j] != q) {
            const uint64_t from = at[j];
            memcpy(lists + j * (uint64_t)k, lists + from * (uint64_t)k, list);
            at[j] = j;
            j = from;
        }
        memcpy(lists + j * (uint64_t)k, aside, list);
        at[j] = j;
    }
}

/* Phase 2, back: every list merged into its query's home list, then the
 * lists put in batch order for the votes and the writes. */
static lbk_status return_extra(lbk_index *s, lbk_batch *b)
{
    lbk_index_spatial *sp = s->spatial;
    const int k = s->params.k;
    const size_t list = (size_t)k * sizeof(lbk_knn_candidate);
    LBK_TRY(return_lists(s, &sp->lists_in, false));
    const uint64_t total = sum_counts(sp->send_counts, s->comm->size);
    const uint64_t *which = sp->extra_row.data;
    const lbk_knn_candidate *in = sp->lists_in.data;
    lbk_knn_candidate tmp[LBK_K_MAX];
    for (uint64_t e = 0; e < total; e++) {
        lbk_knn_candidate *mine = s->merged + which[e] * (uint64_t)k;
        lbk_knn_merge(mine, in + e * (uint64_t)k, tmp, k);
        memcpy(mine, tmp, list);
    }
    to_batch_order(s->merged, sp->row.data, b->count, k);
    return LBK_OK;
}

const lbk_batch_strategy lbk_batch_spatial_strategy = {spatial_redistribute,
                                                       {{route_home, LBK_PHASE_DISTRIBUTE},
                                                        {search_home, LBK_PHASE_QUERY},
                                                        {return_home, LBK_PHASE_MERGE},
                                                        {route_extra, LBK_PHASE_DISTRIBUTE},
                                                        {search_extra, LBK_PHASE_QUERY},
                                                        {return_extra, LBK_PHASE_MERGE},
                                                        {lbk_batch_emit, LBK_PHASE_OUTPUT}},
                                                       true,
                                                       true};

const lbk_batch_strategy lbk_batch_spatial_self_strategy = {spatial_redistribute,
                                                            {{search_own_points, LBK_PHASE_QUERY},
                                                             {route_extra, LBK_PHASE_DISTRIBUTE},
                                                             {search_extra, LBK_PHASE_QUERY},
                                                             {return_extra, LBK_PHASE_MERGE},
                                                             {lbk_batch_emit, LBK_PHASE_OUTPUT}},
                                                            true,
                                                            true};
