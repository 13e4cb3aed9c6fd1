/* The radius search's routes (index_radius_impl.h): each owned query to
 * the ranks that may hold its neighbours, and the counts and rounds of
 * those work rows between holders and owners. */
#include "index_radius_impl.h"

#include "row_split.h"
#include "try.h"

#include <string.h>

#define AT LBK_INDEX_RADIUS_AT

/* Row shards and replicas: the work rows are the batch's points where
 * they are, and the routes follow from who owns what. */
static lbk_status route_local(lbk_index_radius_run *r)
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
    const uint64_t sent = lbk_index_radius_total(r->send_counts, p);
    LBK_TRY(lbk_index_radius_reserve(r, SENT_QUERY, sent * sizeof(uint32_t), "radius routes"));
    LBK_TRY(lbk_index_radius_reserve(r, WORK_BOUND, r->n_work * sizeof(float), "radius bounds"));
    for (uint64_t i = 0; i < sent; i++)
        AT(r, SENT_QUERY, uint32_t)[i] = (uint32_t)(i % (r->own_n ? r->own_n : 1));
    const uint64_t first = replicated ? r->b.slice_first : 0;
    float *bound = AT(r, WORK_BOUND, float);
    for (uint64_t w = 0; w < r->n_work; w++)
        bound[w] = lbk_index_radius_bound(r, lbk_index_radius_batch_row(r, first + w));
    return LBK_OK;
}

/* Spatial: the packing of each owned query (point, bound) for every rank
 * whose box meets its ball. */
static lbk_status pack_spatial(lbk_index_radius_run *r)
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
    const uint64_t sent = lbk_index_radius_total(r->send_counts, p);
    LBK_TRY(lbk_index_radius_reserve(r, SENT_QUERY, sent * sizeof(uint32_t), "radius routes"));
    LBK_TRY(lbk_index_radius_reserve(r, SEND, sent * row, "radius queries for other ranks"));
    lbk_index_radius_starts(r->send_counts, p, r->send_start);
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
static lbk_status route_spatial(lbk_index_radius_run *r)
{
    lbk_index *s = r->s;
    const int p = s->comm->size;
    const uint64_t dim = (uint64_t)s->shape.dim;
    const size_t row = (size_t)(dim + 1) * sizeof(float);
    const lbk_status prep = pack_spatial(r);
    LBK_TRY(lbk_exchange_rows(s->comm, prep, r->buf[SEND].data, r->send_counts, row,
                              &r->buf[WORK], r->recv_counts, &s->info.stats.bytes_sent));
    r->n_work = lbk_index_radius_total(r->recv_counts, p);
    for (int q = 0; q < p; q++)
        s->info.stats.bytes_received += q == s->comm->rank ? 0 : r->recv_counts[q] * row;
    LBK_TRY(lbk_index_radius_reserve(r, WORK_BOUND, r->n_work * sizeof(float), "radius bounds"));
    float *rows = r->buf[WORK].data, *bound = AT(r, WORK_BOUND, float);
    for (uint64_t w = 0; w < r->n_work; w++) {
        bound[w] = rows[w * (dim + 1) + dim];
        memmove(rows + w * dim, rows + w * (dim + 1), (size_t)dim * sizeof(float));
    }
    r->work = rows;
    return LBK_OK;
}

/* Collective: agreed after the routing, whose own steps after the
 * exchange (route_spatial's bounds) may fail on one rank. */
lbk_status lbk_index_radius_route(lbk_index_radius_run *r)
{
    return lbk_comm_agree(r->s->comm, r->spatial ? route_spatial(r) : route_local(r));
}

/* Collective: the work rows' counts back to their owners, summed per
 * owned query. */
lbk_status lbk_index_radius_counts_back(lbk_index_radius_run *r)
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
    lbk_index_radius_starts(r->send_counts, p, r->send_start);
    lbk_index_radius_starts(r->recv_counts, p, r->recv_start);
    const uint64_t sent = lbk_index_radius_total(r->send_counts, p);
    const uint32_t *query = AT(r, SENT_QUERY, uint32_t);
    const uint64_t *back = AT(r, BACK, uint64_t);
    uint64_t *count = AT(r, OWN_COUNT, uint64_t),
             *recv = r->keep ? lbk_index_radius_own_recv(r) : NULL;
    for (uint64_t i = 0; i < sent; i++) {
        count[query[i]] += back[i];
        if (recv)
            recv[query[i]] += back[i] > r->keep ? r->keep : back[i];
    }
    return LBK_OK;
}

/* Collective: each work row's round, from its owner. */
lbk_status lbk_index_radius_rounds_out(lbk_index_radius_run *r)
{
    lbk_index *s = r->s;
    const int p = s->comm->size;
    const uint64_t sent = lbk_index_radius_total(r->send_counts, p);
    lbk_status st = lbk_index_radius_reserve(r, SEND, sent * sizeof(uint32_t), "radius rounds");
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
