/* The library's self search (lbknn_index_search_self): the kNN graph of
 * the index's own points, each list to the rank that passed its point
 * (src/task's self_rows, which `lbknn run`'s task graph uses too). */
#include "lbknn_impl.h"

#include "compact.h"

#include "knn.h"
#include "log.h"
#include "self_rows.h"
#include "try.h"

#include <math.h>
#include <string.h>

static lbk_status self_emit(void *user, const lbk_index_slice *slice)
{
    return lbk_self_rows_add(user, slice);
}

static lbk_status check_self(const lbknn_index *ix, int k, const int64_t *ids,
                             const float *distances)
{
    LBK_FAIL_IF(k < 1 || k >= ix->options.knn.k, LBK_ERR_USAGE,
                "k = %d: must be 1 .. %d (the index's knn.k less one: each point's list holds "
                "itself first)",
                k, ix->options.knn.k - 1);
    LBK_FAIL_IF((uint64_t)k >= ix->rows, LBK_ERR_USAGE,
                "k = %d: the index holds %llu points, each with %llu others", k,
                (unsigned long long)ix->rows, (unsigned long long)ix->rows - 1);
    LBK_FAIL_IF(ix->local_rows > 0 && !ids && !distances, LBK_ERR_USAGE,
                "search_self: ids and distances are both NULL");
    return LBK_OK;
}

/* Rows [at, at + g->rows) of the caller's arrays from this rank's rows. */
static void copy_rows(const lbknn_index *ix, const lbk_self_rows *g, uint64_t at, int64_t *ids,
                      float *distances)
{
    const uint64_t k = (uint64_t)g->k;
    for (uint64_t i = 0; i < g->rows; i++)
        for (int j = 0; j < g->k; j++) {
            const uint64_t id = lbk_self_rows_id(g, i, j), slot = (at + i) * k + (uint64_t)j;
            const bool pad = id == UINT64_MAX;
            if (ids)
                ids[slot] = pad ? -1 : (int64_t)id;
            if (distances)
                distances[slot] = pad ? INFINITY
                                      : lbk_knn_key_to_distance(ix->options.knn.metric,
                                                                lbk_self_rows_key(g, i, j));
        }
}

/* Collective: whether every rank passed ids, and distances, alike. */
static lbk_status same_arrays(const lbk_comm *comm, bool ids, bool distances)
{
    const uint64_t mine = (uint64_t)ids | (uint64_t)distances << 1;
    uint64_t lo = mine, hi = mine;
    LBK_TRY(lbk_comm_allreduce_u64(comm, &lo, LBK_REDUCE_MIN));
    LBK_TRY(lbk_comm_allreduce_u64(comm, &hi, LBK_REDUCE_MAX));
    LBK_FAIL_IF(lo != hi, LBK_ERR_USAGE,
                "search_self: under mpi.partition = replicate every rank passes ids and "
                "distances alike (some passed NULL where others did not)");
    return LBK_OK;
}

/* Collective: each rank's rows of the graph into its arrays. Under
 * replicate every rank passed every row: the rows are gathered in the
 * even split, then OR'ed into every rank's arrays (each byte has one
 * source, the others' zeros). */
static lbk_status search_self(lbknn_index *ix, int k, int64_t *ids, float *distances,
                              lbk_status checked)
{
    const lbk_comm *comm = &ix->context->comm;
    const bool replicated = ix->plan.replicated;
    LBK_TRY(lbk_comm_agree(comm, checked));
    LBK_TRY(lbk_api_widen_for(ix, LBK_COMPACT_SELF));
    if (replicated) /* the arrays meet in reductions of their own sizes */
        LBK_TRY(same_arrays(comm, ids != NULL, distances != NULL));
    lbk_self_rows g;
    LBK_TRY(lbk_self_rows_init(&g, comm, k, ix->rows, replicated ? NULL : ix->starts, true));
    lbk_status st = lbk_index_prepare_self(ix->index, 0);
    const lbk_index_sink sink = {self_emit, NULL, &g, true, 0, NULL};
    if (st == LBK_OK)
        st = lbk_index_search(ix->index, NULL, &sink);
    if (st == LBK_OK)
        st = lbk_comm_agree(comm, lbk_self_rows_check(&g));
    const uint64_t slots = ix->local_rows * (uint64_t)k;
    if (st == LBK_OK && replicated) {
        if (ids)
            memset(ids, 0, (size_t)slots * sizeof *ids);
        if (distances)
            memset(distances, 0, (size_t)slots * sizeof *distances);
    }
    if (st == LBK_OK)
        copy_rows(ix, &g, replicated ? g.first : 0, ids, distances);
    if (st == LBK_OK && replicated && ids)
        st = lbk_comm_allreduce_or_bytes(comm, ids, slots * sizeof *ids);
    if (st == LBK_OK && replicated && distances)
        st = lbk_comm_allreduce_or_bytes(comm, distances, slots * sizeof *distances);
    lbk_self_rows_free(&g);
    return st;
}

lbknn_status lbknn_index_search_self(lbknn_index *ix, int k, int64_t *ids, float *distances)
{
    if (!ix)
        return LBKNN_ERR_USAGE;
    lbk_api_call call;
    lbk_api_begin(&call, ix->context, ix->error);
    return lbk_api_end(&call,
                       search_self(ix, k, ids, distances, check_self(ix, k, ids, distances)));
}
