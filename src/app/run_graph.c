#include "run_graph.h"

#include "alloc_large.h"
#include "graph_npz.h"
#include "log.h"
#include "try.h"

#include <stdlib.h>
#include <string.h>

lbk_status lbk_run_graph_init(lbk_run_graph *g, const lbk_comm *comm, int k, uint64_t points,
                              bool sliced)
{
    g->sliced = sliced;
    if (sliced)
        return lbk_self_rows_init(&g->rows, comm, k, points, NULL, true);
    /* Rank 0 emits every list and writes every row. */
    uint64_t *rank0 = malloc(((size_t)comm->size + 1) * sizeof *rank0);
    for (int r = 0; rank0 && r <= comm->size; r++)
        rank0[r] = r == 0 ? 0 : points;
    lbk_status st = LBK_OK;
    if (!rank0) {
        lbk_error("out of host memory for the graph's row owners");
        st = LBK_ERR_NOMEM;
    }
    st = lbk_comm_agree(comm, st);
    if (st == LBK_OK)
        st = lbk_self_rows_init(&g->rows, comm, k, points, rank0, false);
    free(rank0);
    return st;
}

void lbk_run_graph_free(lbk_run_graph *g) { lbk_self_rows_free(&g->rows); }

lbk_status lbk_run_graph_add(lbk_run_graph *g, const lbk_index_slice *b)
{
    return lbk_self_rows_add(&g->rows, b);
}

/* Rows per piece of the final writes, whose formatting buffers are the
 * writers' own. */
#define WRITE_PIECE ((uint64_t)1 << 16)

static lbk_status write_graph_at(void *file, uint64_t offset, const void *data, size_t size)
{
    return lbk_outfile_write_at(file, offset, data, size);
}

/* This rank's rows of the .npz graph, in pieces, their CRCs combined into
 * one slice for the finisher. */
static lbk_status write_npz_rows(const lbk_self_rows *g, lbk_outputs *out,
                                 const lbk_graph_npz_layout *layout,
                                 const lbk_graph_npz_sink *sink, lbk_graph_npz_slice *slice)
{
    const uint64_t k = (uint64_t)g->k, piece_slots = WRITE_PIECE * k;
    lbk_status st = LBK_OK;
    float *dist = lbk_alloc_large_logged(piece_slots, sizeof *dist, "graph distances", &st);
    uint64_t *ids = lbk_alloc_large_logged(piece_slots, sizeof *ids, "graph ids", &st);
    for (uint64_t at = 0; at < g->rows && st == LBK_OK; at += WRITE_PIECE) {
        const uint64_t n = g->rows - at < WRITE_PIECE ? g->rows - at : WRITE_PIECE;
        for (uint64_t i = 0; i < n * k; i++) {
            dist[i] = lbk_knn_key_to_distance(out->metric, g->keys[at * k + i]);
            ids[i] = lbk_self_rows_id(g, at + i / k, (int)(i % k));
        }
        const lbk_graph_npz_rows rows = {g->first + at, g->first + at + n, dist, ids, (size_t)k};
        lbk_graph_npz_slice part;
        st = lbk_graph_npz_write_rows(layout, sink, &rows, &part);
        if (st == LBK_OK)
            lbk_graph_npz_slice_append(layout, slice, &part);
    }
    lbk_alloc_large_free(dist);
    lbk_alloc_large_free(ids);
    return st;
}

/* Collective where every rank writes a slice: each rank its rows, then
 * rank 0 the rest of the file from every slice's CRCs. */
static lbk_status write_npz(const lbk_run_graph *graph, lbk_outputs *out, const char *path,
                            lbk_status st)
{
    const lbk_self_rows *g = &graph->rows;
    lbk_graph_npz_layout layout;
    if (st == LBK_OK)
        st = lbk_graph_npz_layout_make(&layout, g->points, (uint64_t)g->k,
                                       lbk_graph_npz_index_size(g->points, (uint64_t)g->k), path);
    const lbk_graph_npz_sink sink = {path, -1, write_graph_at, &out->graph.file};
    lbk_graph_npz_slice mine = {g->first, g->first, 0, 0, 0, 0}; /* grown by the pieces */
    if (st == LBK_OK)
        st = write_npz_rows(g, out, &layout, &sink, &mine);
    const bool all_ranks = graph->sliced && g->comm->size > 1;
    lbk_graph_npz_slice *slices = &mine;
    if (all_ranks) {
        LBK_TRY(lbk_comm_agree(g->comm, st));
        slices =
            lbk_alloc_large_logged((uint64_t)g->comm->size, sizeof *slices, "graph slices", &st);
        st = lbk_comm_agree(g->comm, st);
        if (st == LBK_OK)
            st = lbk_comm_allgather_bytes(g->comm, &mine, slices, (int)sizeof mine);
    }
    if (st == LBK_OK && g->comm->rank == 0)
        st = lbk_graph_npz_finish(&layout, &sink, slices, all_ranks ? (size_t)g->comm->size : 1);
    if (slices != &mine)
        lbk_alloc_large_free(slices);
    return st;
}

/* The neighbours and distances files, in pieces rebuilt as the candidate
 * lists their writer takes. */
static lbk_status write_lists(const lbk_self_rows *g, lbk_outputs *out)
{
    const uint64_t k = (uint64_t)g->k;
    lbk_status st = LBK_OK;
    if (out->neighbors.file.fd < 0 && out->distances.file.fd < 0)
        return LBK_OK;
    lbk_knn_candidate *lists =
        lbk_alloc_large_logged(WRITE_PIECE * k, sizeof *lists, "graph rows to write", &st);
    for (uint64_t at = 0; at < g->rows && st == LBK_OK; at += WRITE_PIECE) {
        const uint64_t n = g->rows - at < WRITE_PIECE ? g->rows - at : WRITE_PIECE;
        for (uint64_t i = 0; i < n * k; i++)
            lists[i] = (lbk_knn_candidate){.key = g->keys[at * k + i],
                                           .label = -1,
                                           .id = lbk_self_rows_id(g, at + i / k, (int)(i % k))};
        st = lbk_outputs_write_lists(out, g->first + at, n, lists);
    }
    lbk_alloc_large_free(lists);
    return st;
}

lbk_status lbk_run_graph_write(lbk_run_graph *g, lbk_outputs *out, const char *graph_path)
{
    lbk_status st = lbk_self_rows_check(&g->rows);
    if (st == LBK_OK)
        st = write_lists(&g->rows, out);
    /* Joined whatever st is: the slices meet in a collective. */
    return graph_path[0] ? write_npz(g, out, graph_path, st) : st;
}
