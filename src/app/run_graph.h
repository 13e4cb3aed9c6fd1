/* task: graph, the sink of the index's self search: the rows gathered to
 * their writers by src/task's self_rows (rank 0 all of them where only rank
 * 0 emits, else each rank its slice of the reference set, [n*r/p,
 * n*(r+1)/p)), then written once, at the end. */
#ifndef LBK_RUN_GRAPH_H
#define LBK_RUN_GRAPH_H

#include "comm.h"
#include "index.h"
#include "knn.h"
#include "outputs.h"
#include "self_rows.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    lbk_self_rows rows; /* this rank's rows of the graph */
    bool sliced;        /* every rank emits (and writes its own slice) */
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
