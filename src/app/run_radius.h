/* task radius and radius_graph (docs/design.md "Radius search"): the
 * index's radius search in two passes, counts first (every query's count
 * on every rank: the graph's row offsets), then the lists, each slice
 * written at its rows' offsets by the rank that got it, so that no rank
 * holds more than the search's memory budget of lists; rank 0 finishes
 * the .npz (reading the arrays back for their CRCs) and writes the counts. */
#ifndef LBK_RUN_RADIUS_H
#define LBK_RUN_RADIUS_H

#include "run_state.h"
#include "status.h"

/* Collective: query.radii read and checked by rank 0 (one line naming the
 * file and the row), then on every rank; nothing without it. */
lbk_status lbk_run_radius_share(lbk_run_state *s);

/* Before a radius task reads its inputs: large freed blocks go back to the
 * system (glibc's mmap threshold fixed; nothing elsewhere). */
void lbk_run_radius_malloc_policy(void);

/* Collective, after the index is built: the search, its files committed. */
lbk_status lbk_run_radius(lbk_run_state *s);

/* Task classify and regress with knn.radius (run_radius_votes.c). */
/* Collective, once the reference labels are read: the outlier label, the
 * most frequent reference label where knn.outlier_label asks for it. */
lbk_status lbk_run_radius_votes_prepare(lbk_run_state *s);
/* Collective, with the index built and the partial files open: the search,
 * each slice voted as it comes, the predictions and probabilities written,
 * the tally and the score kept for the report. A query without a neighbour
 * fails classification without an outlier label (rank 0 names it). */
lbk_status lbk_run_radius_votes(lbk_run_state *s);

#endif
