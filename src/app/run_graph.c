#include "run_graph.h"

#include "alloc_large.h"
#include "graph_npz.h"
#include "log.h"
#include "merge.h"
#include "try.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A row on its way to the rank whose output slice holds it: the row, then
 * its k keys, then its k ids of id_bytes each (copied, not cast: an 8-byte
 * id need not be aligned in a record). */
static size_t record_bytes(const lbk_run_graph *g)
{
    return sizeof(uint64_t) + (size_t)g->k * (sizeof(float) + (size_t)g->id_bytes);
}

static void store_id(void *ids, int id_bytes, uint64_t slot, uint64_t id)
{
    if (id_bytes == 4) {
        const uint32_t narrow = id == UINT64_MAX ? UINT32_MAX : (uint32_t)id;
        memcpy((char *)ids + slot * 4, &narrow, 4);
    } else {
        memcpy((char *)ids + slot * 8, &id, 8);
    }
}

static uint64_t load_id(const void *ids, int id_bytes, uint64_t slot)
{
    if (id_bytes == 4) {
        uint32_t narrow;
        memcpy(&narrow, (const char *)ids + slot * 4, 4);
        return narrow == UINT32_MAX ? UINT64_MAX : narrow;
    }
    uint64_t id;
    memcpy(&id, (const char *)ids + slot * 8, 8);
    return id;
}

lbk_status lbk_run_graph_init(lbk_run_graph *g, const lbk_comm *comm, int k, uint64_t points,
                              bool sliced)
{
    memset(g, 0, sizeof *g);
    g->comm = comm;
    g->k = k;
    g->points = points;
    g->sliced = sliced;
    g->id_bytes = points < UINT32_MAX ? 4 : 8;
    lbk_status st = LBK_OK;
    if (sliced)
        lbk_merge_query_slice(points, comm->size, comm->rank, &g->first, &g->rows);
    else
        g->rows = comm->rank == 0 ? points : 0;
    const uint64_t slots = g->rows * (uint64_t)k;
    g->keys = lbk_alloc_large_logged(slots, sizeof *g->keys, "graph rows' distances", &st);
    g->ids = lbk_alloc_large_logged(slots, (size_t)g->id_bytes, "graph rows' ids", &st);
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
    lbk_alloc_large_free(g->keys);
    lbk_alloc_large_free(g->ids);
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
    const uint64_t point = b->order ? b->order[at] : at;
    return b->own ? lbk_dataset_id(b->own, point) : point;
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

static bool owns_row(const lbk_run_graph *g, uint64_t row)
{
    return row >= g->first && row < g->first + g->rows;
}

static lbk_status check_owned(const lbk_run_graph *g, uint64_t row)
{
    LBK_FAIL_IF(!owns_row(g, row), LBK_ERR_INTERNAL,
                "internal: graph row %" PRIu64 " reached the rank of rows %" PRIu64 "..%" PRIu64,
                row, g->first, g->first + g->rows);
    return LBK_OK;
}

/* The K + 1 list of `row`, less the point itself, into its slot. */
static lbk_status place_list(lbk_run_graph *g, uint64_t row, const lbk_knn_candidate *list)
{
    LBK_TRY(check_owned(g, row));
    lbk_knn_candidate kept[LBK_K_MAX];
    drop_self(list, g->k, row, kept);
    const uint64_t slot = (row - g->first) * (uint64_t)g->k;
    for (int i = 0; i < g->k; i++) {
        g->keys[slot + (uint64_t)i] = kept[i].key;
        store_id(g->ids, g->id_bytes, slot + (uint64_t)i, kept[i].id);
    }
    g->filled++;
    return LBK_OK;
}

static void pack_record(const lbk_run_graph *g, uint64_t row, const lbk_knn_candidate *list,
                        char *rec)
{
    lbk_knn_candidate kept[LBK_K_MAX];
    drop_self(list, g->k, row, kept);
    memcpy(rec, &row, sizeof row);
    char *keys = rec + sizeof row, *ids = keys + (size_t)g->k * sizeof(float);
    for (int i = 0; i < g->k; i++) {
        memcpy(keys + (size_t)i * sizeof(float), &kept[i].key, sizeof(float));
        store_id(ids, g->id_bytes, (uint64_t)i, kept[i].id);
    }
}

static lbk_status place_record(lbk_run_graph *g, const char *rec)
{
    uint64_t row;
    memcpy(&row, rec, sizeof row);
    LBK_TRY(check_owned(g, row));
    const uint64_t slot = (row - g->first) * (uint64_t)g->k;
    const size_t key_bytes = (size_t)g->k * sizeof(float);
    memcpy(g->keys + slot, rec + sizeof row, key_bytes);
    memcpy((char *)g->ids + slot * (uint64_t)g->id_bytes, rec + sizeof row + key_bytes,
           (size_t)g->k * (size_t)g->id_bytes);
    g->filled++;
    return LBK_OK;
}

/* Collective: the slice's rows of this rank's output slice placed, the
 * others packed by owner, exchanged and placed where they arrive. */
static lbk_status exchange_rows(lbk_run_graph *g, const lbk_index_slice *b)
{
    const int p = g->comm->size, k1 = b->k;
    const size_t record = record_bytes(g);
    lbk_status st = LBK_OK;
    memset(g->send_counts, 0, (size_t)p * sizeof *g->send_counts);
    uint64_t remote = 0;
    for (uint64_t q = 0; q < b->slice_count && st == LBK_OK; q++) {
        const uint64_t row = global_row(b, q);
        if (owns_row(g, row)) {
            st = place_list(g, row, b->lists + q * (uint64_t)k1);
        } else {
            g->send_counts[owner_of(g, row)]++;
            remote++;
        }
    }
    if (st == LBK_OK)
        st = lbk_exchange_buffer_reserve(&g->out, (size_t)remote * record,
                                         "graph rows for other ranks");
    if (st == LBK_OK) {
        uint64_t *cursor = g->recv_counts; /* free until the exchange fills it */
        uint64_t at = 0;
        for (int r = 0; r < p; at += g->send_counts[r], r++)
            cursor[r] = at;
        for (uint64_t q = 0; q < b->slice_count; q++) {
            const uint64_t row = global_row(b, q);
            if (!owns_row(g, row))
                pack_record(g, row, b->lists + q * (uint64_t)k1,
                            (char *)g->out.data + cursor[owner_of(g, row)]++ * record);
        }
    }
    uint64_t sent = 0;
    LBK_TRY(lbk_exchange_rows(g->comm, st, g->out.data, g->send_counts, record, &g->in,
                              g->recv_counts, &sent));
    uint64_t received = 0;
    for (int r = 0; r < p; r++)
        received += g->recv_counts[r];
    for (uint64_t i = 0; i < received; i++)
        LBK_TRY(place_record(g, (const char *)g->in.data + i * record));
    return LBK_OK;
}

lbk_status lbk_run_graph_add(lbk_run_graph *g, const lbk_index_slice *b)
{
    if (g->sliced && g->comm->size > 1)
        return exchange_rows(g, b);
    for (uint64_t q = 0; q < b->slice_count; q++)
        LBK_TRY(place_list(g, global_row(b, q), b->lists + q * (uint64_t)b->k));
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
        for (uint64_t i = 0; i < n * k; i++) {
            dist[i] = lbk_knn_key_to_distance(out->metric, g->keys[at * k + i]);
            ids[i] = load_id(g->ids, g->id_bytes, at * k + i);
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

/* The neighbours and distances files, in pieces rebuilt as the candidate
 * lists their writer takes. */
static lbk_status write_lists(const lbk_run_graph *g, lbk_outputs *out)
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
                                           .id = load_id(g->ids, g->id_bytes, at * k + i)};
        st = lbk_outputs_write_lists(out, g->first + at, n, lists);
    }
    lbk_alloc_large_free(lists);
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
    if (st == LBK_OK)
        st = write_lists(g, out);
    /* Joined whatever st is: the slices meet in a collective. */
    return graph_path[0] ? write_npz(g, out, graph_path, st) : st;
}
