/* The library's radius searches (lbknn_index_radius, lbknn_index_radius_self):
 * the index's radius search (src/index/index_radius.c) through a sink that
 * keeps each rank's lists, then the result: a query set's on every rank
 * (each byte from one rank, the others' zeros, OR'ed), a self search's rows
 * each to the one rank that passed them (an exchange). */
#include "lbknn_radius_impl.h"

#include "alloc_large.h"
#include "exchange.h"
#include "knn.h"
#include "log.h"
#include "normalize.h"
#include "radius.h"
#include "try.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct lbknn_radius_result {
    int64_t queries;
    int64_t *indptr, *indices, *counts;
    float *distances;
    uint8_t *truncated;
};

/* What this rank's sink got: per query its global row, count and stored
 * length; the lists one after another. */
typedef struct {
    uint64_t n, cap; /* queries */
    uint64_t *row, *count, *len;
    uint64_t m, mcap; /* entries */
    uint64_t *ids;
    float *keys;
} kept_lists;

/* *p with room for n elements (its contents kept). */
static bool grow_to(void **p, uint64_t n, size_t size)
{
    void *a = realloc(*p, (size_t)n * size);
    if (a)
        *p = a;
    return a != NULL;
}

static uint64_t room(uint64_t cap, uint64_t need)
{
    uint64_t want = cap ? cap : 1024;
    while (want < need)
        want *= 2;
    return want;
}

static lbk_status keep_emit(void *user, const lbk_index_radius_slice *slice)
{
    kept_lists *k = user;
    const uint64_t n = slice->slice_count;
    const uint64_t m = slice->indptr ? slice->indptr[n] : 0;
    bool ok = true;
    if (k->n + n > k->cap) {
        const uint64_t want = room(k->cap, k->n + n);
        ok = grow_to((void **)&k->row, want, sizeof *k->row) &&
             grow_to((void **)&k->count, want, sizeof *k->count) &&
             grow_to((void **)&k->len, want, sizeof *k->len);
        k->cap = ok ? want : k->cap;
    }
    if (ok && k->m + m > k->mcap) {
        const uint64_t want = room(k->mcap, k->m + m);
        ok = grow_to((void **)&k->ids, want, sizeof *k->ids) &&
             grow_to((void **)&k->keys, want, sizeof *k->keys);
        k->mcap = ok ? want : k->mcap;
    }
    LBK_FAIL_IF(!ok, LBK_ERR_NOMEM, "out of host memory for the radius search's lists");
    for (uint64_t q = 0; q < n; q++) {
        k->row[k->n + q] = lbk_index_radius_row(slice, q);
        k->count[k->n + q] = slice->counts[q];
        k->len[k->n + q] = slice->indptr ? slice->indptr[q + 1] - slice->indptr[q] : 0;
    }
    if (m) {
        memcpy(k->ids + k->m, slice->ids, (size_t)m * sizeof *k->ids);
        memcpy(k->keys + k->m, slice->keys, (size_t)m * sizeof *k->keys);
    }
    k->n += n;
    k->m += m;
    return LBK_OK;
}

static void kept_free(kept_lists *k)
{
    free(k->row);
    free(k->count);
    free(k->len);
    free(k->ids);
    free(k->keys);
}

void lbknn_radius_result_free(lbknn_radius_result *r)
{
    if (!r)
        return;
    lbk_alloc_large_free(r->indptr);
    lbk_alloc_large_free(r->indices);
    lbk_alloc_large_free(r->counts);
    lbk_alloc_large_free(r->distances);
    lbk_alloc_large_free(r->truncated);
    free(r);
}

int64_t lbknn_radius_result_queries(const lbknn_radius_result *r) { return r ? r->queries : 0; }
const int64_t *lbknn_radius_result_indptr(const lbknn_radius_result *r)
{
    return r ? r->indptr : NULL;
}
const int64_t *lbknn_radius_result_indices(const lbknn_radius_result *r)
{
    return r ? r->indices : NULL;
}
const float *lbknn_radius_result_distances(const lbknn_radius_result *r)
{
    return r ? r->distances : NULL;
}
const int64_t *lbknn_radius_result_counts(const lbknn_radius_result *r)
{
    return r ? r->counts : NULL;
}
const uint8_t *lbknn_radius_result_truncated(const lbknn_radius_result *r)
{
    return r ? r->truncated : NULL;
}

lbk_status lbk_api_radius_check_radii(const lbknn_index *ix, uint64_t n, const float *radii,
                                      float radius)
{
    const lbk_metric metric = ix->options.knn.metric;
    const char *rule = metric == LBK_METRIC_IP ? "a finite number (ip: a least dot product)"
                                               : "a finite number >= 0";
    if (!radii)
        LBK_FAIL_IF(!lbk_radius_valid(metric, radius), LBK_ERR_USAGE, "radius = %g: must be %s",
                    (double)radius, rule);
    for (uint64_t q = 0; radii && q < n; q++)
        LBK_FAIL_IF(!lbk_radius_valid(metric, radii[q]), LBK_ERR_USAGE,
                    "radii[%llu] = %g: must be %s", (unsigned long long)q, (double)radii[q],
                    rule);
    return LBK_OK;
}

lbk_status lbk_api_radius_check(const lbknn_index *ix, int64_t queries, const float *points,
                                const float *radii, float radius)
{
    LBK_FAIL_IF(queries < 0, LBK_ERR_USAGE, "queries = %lld: must not be negative",
                (long long)queries);
    LBK_FAIL_IF(queries > 0 && !points, LBK_ERR_USAGE, "points is NULL for %lld queries",
                (long long)queries);
    const uint64_t nq = (uint64_t)queries, dim = (uint64_t)ix->dim;
    LBK_TRY(lbk_api_radius_check_radii(ix, nq, radii, radius));
    for (uint64_t i = 0; i < nq * dim; i++)
        LBK_FAIL_IF(!isfinite(points[i]), LBK_ERR_INPUT,
                    "queries[%llu][%llu] = %g: not a finite number (NaN or infinity)",
                    (unsigned long long)(i / dim), (unsigned long long)(i % dim),
                    (double)points[i]);
    return LBK_OK;
}

/* Collective: every rank passed the same number of queries. */
static lbk_status same_count(const lbk_comm *comm, uint64_t nq)
{
    uint64_t lo = nq, hi = nq;
    LBK_TRY(lbk_comm_allreduce_u64(comm, &lo, LBK_REDUCE_MIN));
    LBK_TRY(lbk_comm_allreduce_u64(comm, &hi, LBK_REDUCE_MAX));
    LBK_FAIL_IF(lo != hi, LBK_ERR_USAGE,
                "ranks passed %llu to %llu queries: every rank passes the same ones",
                (unsigned long long)lo, (unsigned long long)hi);
    return LBK_OK;
}

lbk_status lbk_api_radius_queries_prepare(const lbknn_index *ix, lbk_status checked,
                                          int64_t queries, const float *points,
                                          lbk_api_radius_queries *out)
{
    const lbk_comm *comm = &ix->context->comm;
    *out = (lbk_api_radius_queries){0};
    LBK_TRY(lbk_comm_agree(comm, checked));
    LBK_TRY(lbk_api_widen_for_radius(ix));
    const uint64_t nq = (uint64_t)queries, dim = (uint64_t)ix->dim;
    LBK_TRY(same_count(comm, nq));
    out->count = nq;
    lbk_status st = LBK_OK;
    if (ix->options.knn.metric == LBK_METRIC_COSINE) {
        out->normalized = lbk_alloc_large_logged(nq * dim + 1, sizeof(float), "queries", &st);
        if (st == LBK_OK && nq) {
            memcpy(out->normalized, points, (size_t)(nq * dim) * sizeof(float));
            lbk_normalize_rows(out->normalized, nq, ix->dim);
        }
        points = out->normalized;
    }
    LBK_TRY(lbk_comm_agree(comm, st));
    out->mine = points;
    if (ix->plan.owns_slice) { /* row shards: each rank searches its slice */
        uint64_t first = 0, n = 0;
        lbk_index_query_slice(nq, comm, &first, &n);
        out->mine = points ? points + first * dim : NULL;
    }
    return LBK_OK;
}

void lbk_api_radius_queries_free(lbk_api_radius_queries *q)
{
    lbk_alloc_large_free(q->normalized);
    q->normalized = NULL;
}

static lbk_status check_options(const lbknn_radius_options *o)
{
    LBK_FAIL_IF(o && o->max_neighbors < 0, LBK_ERR_USAGE,
                "max_neighbors = %lld: must not be negative (0: no cap)",
                (long long)o->max_neighbors);
    return LBK_OK;
}

/* The rows [first, first + n) of the result, from every rank's kept lists. */
static lbk_status result_alloc(lbknn_radius_result *res, uint64_t n, bool lists)
{
    lbk_status st = LBK_OK;
    res->queries = (int64_t)n;
    res->counts = lbk_alloc_large_logged(n ? n : 1, sizeof *res->counts, "radius counts", &st);
    if (st == LBK_OK)
        res->truncated =
            lbk_alloc_large_logged(n ? n : 1, sizeof *res->truncated, "radius flags", &st);
    if (st == LBK_OK && lists)
        res->indptr = lbk_alloc_large_logged(n + 1, sizeof *res->indptr, "radius indptr", &st);
    if (st == LBK_OK) {
        memset(res->counts, 0, (size_t)n * sizeof *res->counts);
        memset(res->truncated, 0, (size_t)n);
    }
    return st;
}

/* Collective: the result's n rows from every rank's lists, on every rank. */
static lbk_status assemble(const lbknn_index *ix, const kept_lists *k, uint64_t n, bool lists,
                           lbknn_radius_result *res)
{
    const lbk_comm *comm = &ix->context->comm;
    LBK_TRY(lbk_comm_agree(comm, result_alloc(res, n, lists)));
    uint64_t *len = NULL;
    lbk_status st = LBK_OK;
    if (lists)
        len = lbk_alloc_large_logged(n ? n : 1, sizeof *len, "radius lengths", &st);
    LBK_TRY(lbk_comm_agree(comm, st));
    if (lists)
        memset(len, 0, (size_t)n * sizeof *len);
    for (uint64_t q = 0; q < k->n; q++)
        if (k->row[q] < n) {
            res->counts[k->row[q]] = (int64_t)k->count[q];
            if (lists)
                len[k->row[q]] = k->len[q];
        }
    st = lbk_comm_allreduce_or_bytes(comm, res->counts, n * sizeof *res->counts);
    if (st == LBK_OK && lists)
        st = lbk_comm_allreduce_or_bytes(comm, len, n * sizeof *len);
    uint64_t m = 0;
    if (st == LBK_OK && lists) {
        for (uint64_t q = 0; q < n; q++) {
            res->indptr[q] = (int64_t)m;
            m += len[q];
            res->truncated[q] = (uint64_t)res->counts[q] > len[q];
        }
        res->indptr[n] = (int64_t)m;
        res->indices = lbk_alloc_large_logged(m ? m : 1, sizeof *res->indices, "radius ids", &st);
        if (st == LBK_OK)
            res->distances = lbk_alloc_large_logged(m ? m : 1, sizeof *res->distances,
                                                    "radius distances", &st);
    }
    lbk_alloc_large_free(len);
    LBK_TRY(lbk_comm_agree(comm, st));
    if (!lists)
        return LBK_OK;
    memset(res->indices, 0, (size_t)m * sizeof *res->indices);
    memset(res->distances, 0, (size_t)m * sizeof *res->distances);
    const lbk_metric metric = ix->options.knn.metric;
    for (uint64_t q = 0, at = 0; q < k->n; at += k->len[q], q++) {
        if (k->row[q] >= n)
            continue;
        const uint64_t to = (uint64_t)res->indptr[k->row[q]];
        for (uint64_t e = 0; e < k->len[q]; e++) {
            res->indices[to + e] = (int64_t)k->ids[at + e];
            res->distances[to + e] = lbk_knn_key_to_distance(metric, k->keys[at + e]);
        }
    }
    LBK_TRY(lbk_comm_allreduce_or_bytes(comm, res->indices, m * sizeof *res->indices));
    return lbk_comm_allreduce_or_bytes(comm, res->distances, m * sizeof *res->distances);
}

/* A self search's list on its way to the rank that passed its row. */
typedef struct {
    uint64_t row, count, len;
} sent_row;
typedef struct {
    uint64_t id;
    float key;
    uint32_t unused; /* zero: every byte defined */
} sent_entry;

/* The rank whose rows [first, first + n) hold `row` (ranges: 2 a rank). */
static bool holds(const uint64_t *ranges, int d, uint64_t row)
{
    return row >= ranges[2 * d] && row - ranges[2 * d] < ranges[2 * d + 1];
}

/* This rank's kept lists packed by the ranks that passed their rows (each
 * rank that did: under replicate every rank passes every row). */
static lbk_status pack_self(const kept_lists *k, const uint64_t *ranges, int p,
                            uint64_t *send_rows, uint64_t *send_entries, sent_row **rows_out,
                            sent_entry **entries_out)
{
    uint64_t n = 0, m = 0;
    for (uint64_t q = 0; q < k->n; q++) {
        int to = 0;
        for (int d = 0; d < p; d++)
            if (holds(ranges, d, k->row[q])) {
                send_rows[d]++;
                send_entries[d] += k->len[q];
                n++;
                m += k->len[q];
                to++;
            }
        LBK_FAIL_IF(to == 0, LBK_ERR_INTERNAL, "internal: radius row %llu is no rank's",
                    (unsigned long long)k->row[q]);
    }
    sent_row *rows = malloc((size_t)(n ? n : 1) * sizeof *rows);
    sent_entry *entries = calloc((size_t)(m ? m : 1), sizeof *entries);
    *rows_out = rows;
    *entries_out = entries;
    LBK_FAIL_IF(!rows || !entries, LBK_ERR_NOMEM, "out of host memory sending %llu radius lists",
                (unsigned long long)n);
    uint64_t r = 0, f = 0;
    for (int d = 0; d < p; d++)
        for (uint64_t q = 0, e = 0; q < k->n; e += k->len[q], q++) {
            if (!holds(ranges, d, k->row[q]))
                continue;
            rows[r++] = (sent_row){k->row[q], k->count[q], k->len[q]};
            for (uint64_t i = 0; i < k->len[q]; i++)
                entries[f++] = (sent_entry){k->ids[e + i], k->keys[e + i], 0};
        }
    return LBK_OK;
}

/* The received rows [first, first + n) into the result. */
static lbk_status place_self(const lbknn_index *ix, const sent_row *rows, uint64_t n_rows,
                             const sent_entry *entries, uint64_t first, uint64_t n, bool lists,
                             lbknn_radius_result *res)
{
    LBK_FAIL_IF(n_rows != n, LBK_ERR_INTERNAL, "internal: %llu radius rows for %llu",
                (unsigned long long)n_rows, (unsigned long long)n);
    LBK_TRY(result_alloc(res, n, lists));
    if (!lists) {
        for (uint64_t i = 0; i < n; i++)
            res->counts[rows[i].row - first] = (int64_t)rows[i].count;
        return LBK_OK;
    }
    for (uint64_t i = 0; i <= n; i++)
        res->indptr[i] = 0;
    for (uint64_t i = 0; i < n; i++) {
        res->counts[rows[i].row - first] = (int64_t)rows[i].count;
        res->indptr[rows[i].row - first + 1] = (int64_t)rows[i].len;
    }
    for (uint64_t i = 0; i < n; i++) {
        res->indptr[i + 1] += res->indptr[i];
        res->truncated[i] = res->counts[i] > res->indptr[i + 1] - res->indptr[i];
    }
    const uint64_t m = (uint64_t)res->indptr[n];
    lbk_status st = LBK_OK;
    res->indices = lbk_alloc_large_logged(m ? m : 1, sizeof *res->indices, "radius ids", &st);
    if (st == LBK_OK)
        res->distances =
            lbk_alloc_large_logged(m ? m : 1, sizeof *res->distances, "radius distances", &st);
    const lbk_metric metric = ix->options.knn.metric;
    for (uint64_t i = 0, e = 0; i < n && st == LBK_OK; i++) {
        const int64_t to = res->indptr[rows[i].row - first];
        for (uint64_t j = 0; j < rows[i].len; j++, e++) {
            res->indices[to + (int64_t)j] = (int64_t)entries[e].id;
            res->distances[to + (int64_t)j] = lbk_knn_key_to_distance(metric, entries[e].key);
        }
    }
    return st;
}

/* Collective, a self search: each rank's rows [first, first + n) from the
 * ranks that hold their lists, each list sent once, to that rank alone. */
static lbk_status assemble_self(const lbknn_index *ix, const kept_lists *k, uint64_t first,
                                uint64_t n, bool lists, lbknn_radius_result *res)
{
    const lbk_comm *comm = &ix->context->comm;
    const int p = comm->size;
    uint64_t mine[2] = {first, n}, bytes = 0;
    uint64_t *ranges = calloc(6 * (size_t)p, sizeof *ranges);
    LBK_FAIL_IF(!ranges, LBK_ERR_NOMEM, "out of host memory for the radius result's routes");
    uint64_t *send_rows = ranges + 2 * p, *send_entries = ranges + 3 * p;
    uint64_t *recv_rows = ranges + 4 * p, *recv_entries = ranges + 5 * p;
    lbk_exchange_buffer in_rows = {0}, in_entries = {0};
    sent_row *rows = NULL;
    sent_entry *entries = NULL;
    lbk_status st = lbk_comm_allgather_bytes(comm, mine, ranges, (int)sizeof mine);
    if (st == LBK_OK) {
        const lbk_status packed =
            pack_self(k, ranges, p, send_rows, send_entries, &rows, &entries);
        st = lbk_exchange_rows(comm, packed, rows, send_rows, sizeof *rows, &in_rows, recv_rows,
                               &bytes);
    }
    free(rows);
    if (st == LBK_OK)
        st = lbk_exchange_rows(comm, LBK_OK, entries, send_entries, sizeof *entries, &in_entries,
                               recv_entries, &bytes);
    free(entries);
    uint64_t n_rows = 0;
    for (int d = 0; d < p; d++)
        n_rows += recv_rows[d];
    if (st == LBK_OK)
        st = lbk_comm_agree(
            comm, place_self(ix, in_rows.data, n_rows, in_entries.data, first, n, lists, res));
    lbk_exchange_buffer_free(&in_rows);
    lbk_exchange_buffer_free(&in_entries);
    free(ranges);
    return st;
}

/* Collective: the search into the kept lists, then the result. */
static lbk_status radius_run(lbknn_index *ix, bool self, uint64_t nq, const float *points,
                             const float *radii, float radius, const lbknn_radius_options *o,
                             uint64_t first, uint64_t n, lbknn_radius_result **out)
{
    const lbk_comm *comm = &ix->context->comm;
    const lbk_index_radius_params params = {radii,
                                            radius,
                                            o && o->max_neighbors > 0 ? (uint64_t)o->max_neighbors
                                                                      : 0,
                                            o && o->truncate,
                                            o && o->count_only,
                                            NULL,
                                            false};
    kept_lists kept = {0};
    const lbk_index_radius_sink sink = {keep_emit, NULL, &kept};
    lbk_status st = lbk_index_radius(ix->index, self, nq, points, &params, &sink);
    lbknn_radius_result *res = NULL;
    if (st == LBK_OK) {
        res = calloc(1, sizeof *res);
        if (!res)
            lbk_error("out of host memory for the radius result");
        st = lbk_comm_agree(comm, res ? LBK_OK : LBK_ERR_NOMEM);
    }
    if (st == LBK_OK)
        st = self ? assemble_self(ix, &kept, first, n, !params.count_only, res)
                  : assemble(ix, &kept, nq, !params.count_only, res);
    kept_free(&kept);
    if (st == LBK_OK) {
        *out = res;
        res = NULL;
    }
    lbknn_radius_result_free(res);
    return st;
}

static lbk_status query_radius(lbknn_index *ix, int64_t queries, lbknn_dtype type,
                               const void *points, const float *radii, float radius,
                               const lbknn_radius_options *o, lbknn_radius_result **out)
{
    lbk_api_queries typed;
    lbk_status st = lbk_api_queries_widen(ix, queries, type, points, &typed);
    if (st == LBK_OK)
        st = lbk_api_radius_check(ix, queries, typed.points, radii, radius);
    if (st == LBK_OK)
        st = check_options(o);
    lbk_api_radius_queries q;
    st = lbk_api_radius_queries_prepare(ix, st, queries, typed.points, &q);
    if (st == LBK_OK)
        st = radius_run(ix, false, q.count, q.mine, radii, radius, o, 0, q.count, out);
    lbk_api_radius_queries_free(&q);
    lbk_api_queries_free(&typed);
    return st;
}

lbknn_status lbknn_index_radius_typed(lbknn_index *ix, int64_t queries, lbknn_dtype type,
                                      const void *points, const float *radii, float radius,
                                      const lbknn_radius_options *opts,
                                      lbknn_radius_result **result)
{
    if (!ix || !result)
        return LBKNN_ERR_USAGE;
    *result = NULL;
    lbk_api_call call;
    lbk_api_begin(&call, ix->context, ix->error);
    return lbk_api_end(&call,
                       query_radius(ix, queries, type, points, radii, radius, opts, result));
}

lbknn_status lbknn_index_radius(lbknn_index *ix, int64_t queries, const float *points,
                                const float *radii, float radius,
                                const lbknn_radius_options *opts, lbknn_radius_result **result)
{
    return lbknn_index_radius_typed(ix, queries, LBKNN_DTYPE_FLOAT32, points, radii, radius, opts,
                                    result);
}

lbknn_status lbknn_index_radius_self(lbknn_index *ix, const float *radii, float radius,
                                     const lbknn_radius_options *opts,
                                     lbknn_radius_result **result)
{
    if (!ix || !result)
        return LBKNN_ERR_USAGE;
    *result = NULL;
    lbk_api_call call;
    lbk_api_begin(&call, ix->context, ix->error);
    const lbk_comm *comm = &ix->context->comm;
    lbk_status st = lbk_api_radius_check_radii(ix, ix->rows, radii, radius);
    if (st == LBK_OK)
        st = check_options(opts);
    st = lbk_comm_agree(comm, st);
    if (st == LBK_OK)
        st = lbk_api_widen_for_radius(ix);
    if (st == LBK_OK)
        st = radius_run(ix, true, ix->rows, NULL, radii, radius, opts, ix->first_row,
                        ix->local_rows, result);
    return lbk_api_end(&call, st);
}
