#include "self_rows.h"

#include "alloc_large.h"
#include "log.h"
#include "row_split.h"
#include "try.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* A row on its way to the rank that owns it: the row, then its k keys,
 * then its k ids of id_bytes each (copied, not cast: an 8-byte id need not
 * be aligned in a record). */
static size_t record_bytes(const lbk_self_rows *g)
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

uint64_t lbk_self_rows_id(const lbk_self_rows *g, uint64_t i, int j)
{
    return load_id(g->ids, g->id_bytes, i * (uint64_t)g->k + (uint64_t)j);
}

static lbk_status alloc_rows(lbk_self_rows *g)
{
    lbk_status st = LBK_OK;
    const uint64_t slots = g->rows * (uint64_t)g->k;
    g->keys = lbk_alloc_large_logged(slots, sizeof *g->keys, "graph rows' distances", &st);
    g->ids = lbk_alloc_large_logged(slots, (size_t)g->id_bytes, "graph rows' ids", &st);
    if (st != LBK_OK || !g->exchange)
        return st;
    g->send_counts = calloc((size_t)g->comm->size, sizeof *g->send_counts);
    g->recv_counts = calloc((size_t)g->comm->size, sizeof *g->recv_counts);
    LBK_FAIL_IF(!g->send_counts || !g->recv_counts, LBK_ERR_NOMEM,
                "out of host memory for the graph's exchange (%d ranks)", g->comm->size);
    return LBK_OK;
}

lbk_status lbk_self_rows_init(lbk_self_rows *g, const lbk_comm *comm, int k, uint64_t points,
                              const uint64_t *starts, bool exchange)
{
    memset(g, 0, sizeof *g);
    g->comm = comm;
    g->k = k;
    g->points = points;
    g->exchange = exchange && comm->size > 1;
    g->id_bytes = points < UINT32_MAX ? 4 : 8;
    const int p = comm->size;
    lbk_status st = LBK_OK;
    g->starts = malloc(((size_t)p + 1) * sizeof *g->starts);
    if (!g->starts) {
        lbk_error("out of host memory for the graph's row owners (%d ranks)", p);
        st = LBK_ERR_NOMEM;
    }
    if (st == LBK_OK) {
        lbk_row_split_starts(points, p, starts, g->starts);
        g->first = g->starts[comm->rank];
        g->rows = g->starts[comm->rank + 1] - g->first;
        st = alloc_rows(g);
    }
    st = lbk_comm_agree(comm, st);
    if (st != LBK_OK)
        lbk_self_rows_free(g); /* every rank's, whichever failed */
    return st;
}

void lbk_self_rows_free(lbk_self_rows *g)
{
    lbk_alloc_large_free(g->keys);
    lbk_alloc_large_free(g->ids);
    free(g->starts);
    free(g->send_counts);
    free(g->recv_counts);
    lbk_exchange_buffer_free(&g->out);
    lbk_exchange_buffer_free(&g->in);
    memset(g, 0, sizeof *g);
}

/* The k nearest points other than `self` of a list of at least k + 1: the
 * first k + 1 without `self`, or their first k where `self` is not among
 * them (then all k + 1 lie at least as near as it, k of them before it in
 * (key, id) order). */
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

static int owner_of(const lbk_self_rows *g, uint64_t row)
{
    return lbk_row_split_find(g->starts, g->comm->size, row);
}

static bool owns_row(const lbk_self_rows *g, uint64_t row)
{
    return row >= g->first && row - g->first < g->rows;
}

static lbk_status check_owned(const lbk_self_rows *g, uint64_t row)
{
    LBK_FAIL_IF(!owns_row(g, row), LBK_ERR_INTERNAL,
                "internal: graph row %" PRIu64 " reached the rank of rows %" PRIu64 "..%" PRIu64,
                row, g->first, g->first + g->rows);
    return LBK_OK;
}

/* The list of `row`, less the point itself, into its slot. */
static lbk_status place_list(lbk_self_rows *g, uint64_t row, const lbk_knn_candidate *list)
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

static void pack_record(const lbk_self_rows *g, uint64_t row, const lbk_knn_candidate *list,
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

static lbk_status place_record(lbk_self_rows *g, const char *rec)
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

size_t lbk_self_rows_record_bytes(const lbk_self_rows *g) { return record_bytes(g); }

void lbk_self_rows_pack(const lbk_self_rows *g, uint64_t row, const lbk_knn_candidate *list,
                        void *rec)
{
    pack_record(g, row, list, rec);
}

lbk_status lbk_self_rows_place(lbk_self_rows *g, const void *rec) { return place_record(g, rec); }

uint64_t lbk_self_rows_record_row(const void *rec)
{
    uint64_t row;
    memcpy(&row, rec, sizeof row);
    return row;
}

bool lbk_self_rows_owns(const lbk_self_rows *g, uint64_t row) { return owns_row(g, row); }

/* This rank's own rows of the slice placed, the others packed by owner
 * (in `remote` records), into g->out. */
static lbk_status pack_remote(lbk_self_rows *g, const lbk_index_slice *b)
{
    const int p = g->comm->size;
    const size_t record = record_bytes(g);
    memset(g->send_counts, 0, (size_t)p * sizeof *g->send_counts);
    uint64_t remote = 0;
    for (uint64_t q = 0; q < b->slice_count; q++) {
        const uint64_t row = global_row(b, q);
        if (owns_row(g, row)) {
            LBK_TRY(place_list(g, row, b->lists + q * (uint64_t)b->k));
        } else {
            g->send_counts[owner_of(g, row)]++;
            remote++;
        }
    }
    LBK_TRY(lbk_exchange_buffer_reserve(&g->out, (size_t)remote * record,
                                        "graph rows for other ranks"));
    uint64_t *cursor = g->recv_counts; /* free until the exchange fills it */
    uint64_t at = 0;
    for (int r = 0; r < p; at += g->send_counts[r], r++)
        cursor[r] = at;
    for (uint64_t q = 0; q < b->slice_count; q++) {
        const uint64_t row = global_row(b, q);
        if (!owns_row(g, row))
            pack_record(g, row, b->lists + q * (uint64_t)b->k,
                        (char *)g->out.data + cursor[owner_of(g, row)]++ * record);
    }
    return LBK_OK;
}

/* Collective: the slice's rows to their owners, placed where they arrive. */
static lbk_status exchange_rows(lbk_self_rows *g, const lbk_index_slice *b)
{
    const lbk_status st = pack_remote(g, b);
    uint64_t sent = 0;
    LBK_TRY(lbk_exchange_rows(g->comm, st, g->out.data, g->send_counts, record_bytes(g), &g->in,
                              g->recv_counts, &sent));
    uint64_t received = 0;
    for (int r = 0; r < g->comm->size; r++)
        received += g->recv_counts[r];
    for (uint64_t i = 0; i < received; i++)
        LBK_TRY(place_record(g, (const char *)g->in.data + i * record_bytes(g)));
    return LBK_OK;
}

lbk_status lbk_self_rows_add(lbk_self_rows *g, const lbk_index_slice *b)
{
    if (g->exchange)
        return exchange_rows(g, b);
    for (uint64_t q = 0; q < b->slice_count; q++)
        LBK_TRY(place_list(g, global_row(b, q), b->lists + q * (uint64_t)b->k));
    return LBK_OK;
}

lbk_status lbk_self_rows_check(const lbk_self_rows *g)
{
    LBK_FAIL_IF(g->filled != g->rows, LBK_ERR_INTERNAL,
                "internal: %" PRIu64 " of the graph's %" PRIu64 " rows %" PRIu64 "..%" PRIu64
                " arrived",
                g->filled, g->rows, g->first, g->first + g->rows);
    return LBK_OK;
}
