#include "run_graph.h"

#include "alloc_large.h"
#include "graph_npz.h"
#include "log.h"
#include "merge.h"
#include "try.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A row on its way to the rank whose output slice holds it. */
typedef struct {
    uint64_t row;
    lbk_knn_candidate list[]; /* k */
} graph_record;

static size_t record_bytes(const lbk_run_graph *g)
{
    return sizeof(graph_record) + (size_t)g->k * sizeof(lbk_knn_candidate);
}

lbk_status lbk_run_graph_init(lbk_run_graph *g, const lbk_comm *comm, int k, uint64_t points,
                              bool sliced)
{
    memset(g, 0, sizeof *g);
    g->comm = comm;
    g->k = k;
    g->points = points;
    g->sliced = sliced;
    lbk_status st = LBK_OK;
    if (sliced)
        lbk_merge_query_slice(points, comm->size, comm->rank, &g->first, &g->rows);
    else
        g->rows = comm->rank == 0 ? points : 0;
    g->lists = lbk_alloc_large_logged(g->rows * (uint64_t)k, sizeof *g->lists, "graph rows", &st);
    if (st == LBK_OK && sliced) {
        g->send_counts = calloc((size_t)comm->size, sizeof *g->send_counts);
        g->recv_counts = calloc((size_t)comm->size, sizeof *g->recv_counts);
        if (!g->send_counts || !g->recv_counts) {
            lbk_error("out of host memory for the graph's exchange (%d ranks)", comm->size);
            st = LBK_ERR_NOMEM;
        }
    }
    return lbk_comm_agree(comm, st);
}

void lbk_run_graph_free(lbk_run_graph *g)
{
    lbk_alloc_large_free(g->lists);
    free(g->send_counts);
    free(g->recv_counts);
    lbk_exchange_buffer_free(&g->out);
    lbk_exchange_buffer_free(&g->in);
    memset(g, 0, sizeof *g);
}

/* The K nearest points other than `self` of a list of K + 1: the list
 * without `self`, or its first K where `self` is not in it (then all K + 1
 * lie at least as near as it, K of them before it in (key, id) order). */
static void drop_self(const lbk_knn_candidate *list, int k, uint64_t self, lbk_knn_candidate *out)
{
    int kept = 0;
    for (int i = 0; i <= k && kept < k; i++)
        if (list[i].id != self)
            out[kept++] = list[i];
}

static uint64_t global_row(const lbk_index_slice *b, uint64_t q)
{
    const uint64_t at = b->first + b->slice_first + q;
    return b->own ? lbk_dataset_id(b->own, at) : at;
}

/* The rank whose output slice holds `row`: the slices are
 * lbk_merge_query_slice's, so a first guess from the mean length is off by
 * at most one rank. */
static int owner_of(const lbk_run_graph *g, uint64_t row)
{
    const int p = g->comm->size;
    int r = (int)((double)row * p / (double)g->points);
    r = r < 0 ? 0 : r >= p ? p - 1 : r;
    for (;;) {
        uint64_t first, count;
        lbk_merge_query_slice(g->points, p, r, &first, &count);
        if (row < first)
            r--;
        else if (row >= first + count)
            r++;
        else
            return r;
    }
}

static lbk_status place(lbk_run_graph *g, uint64_t row, const lbk_knn_candidate *list)
{
    LBK_FAIL_IF(row < g->first || row >= g->first + g->rows, LBK_ERR_INTERNAL,
                "internal: graph row %" PRIu64 " reached the rank of rows %" PRIu64 "..%" PRIu64,
                row, g->first, g->first + g->rows);
    memcpy(g->lists + (row - g->first) * (uint64_t)g->k, list,
           (size_t)g->k * sizeof(lbk_knn_candidate));
    g->filled++;
    return LBK_OK;
}

/* Collective: the slice's rows packed by owner, exchanged, placed. */
static lbk_status exchange_rows(lbk_run_graph *g, const lbk_index_slice *b)
{
    const int p = g->comm->size, k1 = b->k;
    const size_t record = record_bytes(g);
    memset(g->send_counts, 0, (size_t)p * sizeof *g->send_counts);
    for (uint64_t q = 0; q < b->slice_count; q++)
        g->send_counts[owner_of(g, global_row(b, q))]++;
    lbk_status st = lbk_exchange_buffer_reserve(&g->out, (size_t)b->slice_count * record,
                                                "graph rows for other ranks");
    if (st == LBK_OK) {
        uint64_t *cursor = g->recv_counts; /* free until the exchange fills it */
        uint64_t at = 0;
        for (int r = 0; r < p; at += g->send_counts[r], r++)
            cursor[r] = at;
        for (uint64_t q = 0; q < b->slice_count; q++) {
            const uint64_t row = global_row(b, q);
            graph_record *rec =
                (graph_record *)((char *)g->out.data + cursor[owner_of(g, row)]++ * record);
            rec->row = row;
            drop_self(b->lists + q * (uint64_t)k1, g->k, row, rec->list);
        }
    }
    uint64_t sent = 0;
    LBK_TRY(lbk_exchange_rows(g->comm, st, g->out.data, g->send_counts, record, &g->in,
                              g->recv_counts, &sent));
    uint64_t received = 0;
    for (int r = 0; r < p; r++)
        received += g->recv_counts[r];
    for (uint64_t i = 0; i < received; i++) {
        const graph_record *rec = (const graph_record *)((const char *)g->in.data + i * record);
        LBK_TRY(place(g, rec->row, rec->list));
    }
    return LBK_OK;
}

lbk_status lbk_run_graph_add(lbk_run_graph *g, const lbk_index_slice *b)
{
    if (g->sliced && g->comm->size > 1)
        return exchange_rows(g, b);
    lbk_knn_candidate kept[LBK_K_MAX];
    for (uint64_t q = 0; q < b->slice_count; q++) {
        const uint64_t row = global_row(b, q);
        drop_self(b->lists + q * (uint64_t)b->k, g->k, row, kept);
        LBK_TRY(place(g, row, kept));
    }
    return LBK_OK;
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
static lbk_status write_npz_rows(const lbk_run_graph *g, lbk_outputs *out,
                                 const lbk_graph_npz_layout *layout,
                                 const lbk_graph_npz_sink *sink, lbk_graph_npz_slice *slice)
{
    const uint64_t k = (uint64_t)g->k, piece_slots = WRITE_PIECE * k;
    lbk_status st = LBK_OK;
    float *dist = lbk_alloc_large_logged(piece_slots, sizeof *dist, "graph distances", &st);
    uint64_t *ids = lbk_alloc_large_logged(piece_slots, sizeof *ids, "graph ids", &st);
    for (uint64_t at = 0; at < g->rows && st == LBK_OK; at += WRITE_PIECE) {
        const uint64_t n = g->rows - at < WRITE_PIECE ? g->rows - at : WRITE_PIECE;
        const lbk_knn_candidate *c = g->lists + at * k;
        for (uint64_t i = 0; i < n * k; i++) {
            dist[i] = lbk_knn_key_to_distance(out->metric, c[i].key);
            ids[i] = c[i].id;
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
static lbk_status write_npz(const lbk_run_graph *g, lbk_outputs *out, const char *path,
                            lbk_status st)
{
    lbk_graph_npz_layout layout;
    if (st == LBK_OK)
        st = lbk_graph_npz_layout_make(&layout, g->points, (uint64_t)g->k,
                                       lbk_graph_npz_index_size(g->points, (uint64_t)g->k), path);
    const lbk_graph_npz_sink sink = {path, -1, write_graph_at, &out->graph.file};
    lbk_graph_npz_slice mine = {g->first, g->first, 0, 0, 0, 0}; /* grown by the pieces */
    if (st == LBK_OK)
        st = write_npz_rows(g, out, &layout, &sink, &mine);
    const bool all_ranks = g->sliced && g->comm->size > 1;
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

lbk_status lbk_run_graph_write(lbk_run_graph *g, lbk_outputs *out, const char *graph_path)
{
    lbk_status st = LBK_OK;
    if (g->filled != g->rows) {
        lbk_error("internal: %" PRIu64 " of the graph's %" PRIu64 " rows %" PRIu64 "..%" PRIu64
                  " arrived",
                  g->filled, g->rows, g->first, g->first + g->rows);
        st = LBK_ERR_INTERNAL;
    }
    for (uint64_t at = 0; at < g->rows && st == LBK_OK; at += WRITE_PIECE)
        st = lbk_outputs_write_lists(out, g->first + at,
                                     g->rows - at < WRITE_PIECE ? g->rows - at : WRITE_PIECE,
                                     g->lists + at * (uint64_t)g->k);
    /* Joined whatever st is: the slices meet in a collective. */
    return graph_path[0] ? write_npz(g, out, graph_path, st) : st;
}
