/* The radius search's counts (index_radius_impl.h): the holders' counts
 * of their work rows (or those a count-only search kept), each owned
 * query's exact count, the rounds of the fill, and a count-only batch to
 * the sink. */
#include "index_radius_impl.h"

#include "log.h"
#include "try.h"

#include <math.h>
#include <stdlib.h>

#define AT LBK_INDEX_RADIUS_AT

/* A fill search after a count-only one: the counts it kept, as the same
 * routes give the same work rows. */
static lbk_status read_kept(lbk_index_radius_run *r, uint64_t *count)
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
static lbk_status write_kept(lbk_index_radius_run *r, const uint64_t *count)
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
lbk_status lbk_index_radius_count(lbk_index_radius_run *r)
{
    lbk_index *s = r->s;
    const uint64_t dim = (uint64_t)s->shape.dim, chunk = lbk_index_radius_engine_chunk(r);
    LBK_TRY(
        lbk_index_radius_reserve(r, WORK_COUNT, r->n_work * sizeof(uint64_t), "radius counts"));
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
    lbk_index_radius_engine_work(s);
    return r->p->kept && r->p->count_only ? write_kept(r, count) : LBK_OK;
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

/* Owned query i's exact count as a count-only search gives it: a self
 * search's point itself taken out where it counted. */
uint64_t lbk_index_radius_exact_count(const lbk_index_radius_run *r, uint64_t i)
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
lbk_status lbk_index_radius_plan_rounds(lbk_index_radius_run *r)
{
    const uint64_t cap = r->p->max_neighbors;
    const uint64_t *count = lbk_index_radius_own_recv(r);
    uint32_t *round = AT(r, OWN_ROUND, uint32_t);
    uint64_t in_round = 0, rounds = 0;
    for (uint64_t i = 0; i < r->own_n; i++) {
        const uint64_t n = lbk_index_radius_exact_count(r, i), row = AT(r, OWN_ROW, uint64_t)[i];
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
lbk_status lbk_index_radius_emit_counts(lbk_index_radius_run *r)
{
    const lbk_comm *comm = r->s->comm;
    LBK_TRY(
        lbk_comm_agree(comm, lbk_index_radius_reserve(r, OUT_COUNTS, r->own_n * sizeof(uint64_t),
                                                      "radius counts")));
    uint64_t *out = AT(r, OUT_COUNTS, uint64_t);
    for (uint64_t i = 0; i < r->own_n; i++)
        out[i] = lbk_index_radius_exact_count(r, i);
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
