/* The rows of a self search (the kNN graph of the reference set), gathered
 * to the ranks that own them: the one implementation under `lbknn run`'s
 * task graph and the library's lbknn_index_search_self.
 *
 * The index's self search hands each K-list of a point to a sink in no row
 * order (a spatial rank emits its own box's points, a shard's rank 0 every
 * list), each list holding the point itself (or, with more exact duplicates
 * of lower id than k, not): dropping it by id leaves the k nearest other
 * points in (key, id) order, scikit-learn's kneighbors(X=None). Each rank
 * keeps the rows it owns, [starts[r], starts[r+1]) of the caller's split,
 * and only rows another rank owns travel (one exchange a batch). The rows
 * are the largest thing a graph holds (k per point), so they are kept as
 * (float key, id) with 4-byte ids wherever the ids fit: 8 bytes a neighbour
 * instead of a merge candidate's 16. */
#ifndef LBK_SELF_ROWS_H
#define LBK_SELF_ROWS_H

#include "comm.h"
#include "exchange.h"
#include "index.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const lbk_comm *comm;
    int k;                               /* neighbours per row, the point itself left out */
    uint64_t points;                     /* rows of the graph: every reference point */
    uint64_t *starts;                    /* ranks + 1: rank r owns [starts[r], starts[r + 1]) */
    bool exchange;                       /* rows travel to their owners (add is collective) */
    uint64_t first, rows;                /* this rank's rows */
    uint64_t filled;                     /* of them, received so far */
    int id_bytes;                        /* 4 where every id fits in uint32, else 8 */
    float *keys;                         /* rows x k, in row order */
    void *ids;                           /*   and their ids, id_bytes each */
    uint64_t *send_counts, *recv_counts; /* per rank */
    lbk_exchange_buffer out, in;         /* (row, k keys, k ids) records */
} lbk_self_rows;

/* Collective: this rank's rows of a self search of `points` rows with k
 * neighbours each (the index's lists hold at least k + 1). `starts`
 * (ranks + 1 entries, copied; NULL: lbk_row_split_range's ranges) says who
 * owns which rows. `exchange`: lists reach ranks that do not own them, so
 * every rank calls lbk_self_rows_add with every batch; else each list
 * reaches its owner (one rank emitting every list, which it owns). */
lbk_status lbk_self_rows_init(lbk_self_rows *g, const lbk_comm *comm, int k, uint64_t points,
                              const uint64_t *starts, bool exchange);
void lbk_self_rows_free(lbk_self_rows *g);

/* One slice of the self search's lists (collective with exchange). */
lbk_status lbk_self_rows_add(lbk_self_rows *g, const lbk_index_slice *slice);

/* A row as a record (row, k keys, k ids: the point itself dropped from
 * `list`), as rows travel between ranks; a run with checkpoints keeps the
 * records of its lists in files, and places this rank's own ones from
 * them after a resume (not collective). */
size_t lbk_self_rows_record_bytes(const lbk_self_rows *g);
void lbk_self_rows_pack(const lbk_self_rows *g, uint64_t row, const lbk_knn_candidate *list,
                        void *rec);
uint64_t lbk_self_rows_record_row(const void *rec);
bool lbk_self_rows_owns(const lbk_self_rows *g, uint64_t row);
lbk_status lbk_self_rows_place(lbk_self_rows *g, const void *rec);

/* After the last batch: every row of this rank arrived (else an internal
 * error naming the rows). */
lbk_status lbk_self_rows_check(const lbk_self_rows *g);

/* Neighbour j of this rank's row i (i < rows): its key and global id. */
static inline float lbk_self_rows_key(const lbk_self_rows *g, uint64_t i, int j)
{
    return g->keys[i * (uint64_t)g->k + (uint64_t)j];
}
uint64_t lbk_self_rows_id(const lbk_self_rows *g, uint64_t i, int j);

#endif
