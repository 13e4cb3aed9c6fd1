/* task: graph — the sink of the index's self search. Each final list holds
 * K + 1 points, the query point itself among them (or, with more than K
 * exact duplicates of lower id, not): dropping it by id leaves the K
 * nearest other points in (key, id) order, scikit-learn's kneighbors(X=None).
 * The lists reach their sinks in no file order (a spatial rank emits its own
 * box's points), so each rank gathers the graph rows of its own output
 * slice (rows [first, first + rows) of the reference set; rank 0 all of them
 * where only rank 0 emits) and writes them once, at the end. The rows are
 * the largest thing a graph run holds (K per point), so they are kept as
 * (float key, id) with 4-byte ids wherever the ids fit, 8 bytes a neighbour
 * instead of a merge candidate's 16, and only rows another rank owns travel. */
#ifndef LBK_RUN_GRAPH_H
#define LBK_RUN_GRAPH_H

#include "comm.h"
#include "exchange.h"
#include "index.h"
#include "knn.h"
#include "outputs.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const lbk_comm *comm;
    int k;                               /* neighbours per row (the index searches k + 1) */
    uint64_t points;                     /* rows of the graph: every reference point */
    bool sliced;                         /* every rank emits (and writes its own slice) */
    uint64_t first;                      /* this rank's output slice */
    uint64_t rows;                       /*   and its length */
    uint64_t filled;                     /* rows of the slice received so far */
    int id_bytes;                        /* 4 where every id fits in uint32, else 8 */
    float *keys;                         /* rows x k, in row order */
    void *ids;                           /*   and their ids, id_bytes each */
    uint64_t *send_counts, *recv_counts; /* per rank */
    lbk_exchange_buffer out, in;         /* (row, k keys, k ids) records */
} lbk_run_graph;

/* Collective: this rank's slice of the graph of `points` rows. */
lbk_status lbk_run_graph_init(lbk_run_graph *g, const lbk_comm *comm, int k, uint64_t points,
                              bool sliced);
void lbk_run_graph_free(lbk_run_graph *g);

/* One slice of K + 1 lists (collective when sliced: the rows travel to the
 * ranks whose output slices hold them). */
lbk_status lbk_run_graph_add(lbk_run_graph *g, const lbk_index_slice *slice);

/* After the last batch: the slice's rows, every one of them present, into
 * the neighbours and distances files and, when graph_path is not empty,
 * the .npz graph (collective when sliced: rank 0 completes the file from
 * every rank's slice). */
lbk_status lbk_run_graph_write(lbk_run_graph *g, lbk_outputs *out, const char *graph_path);

#endif
