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

/* Collective, after the index is built: the search, its files committed. */
lbk_status lbk_run_radius(lbk_run_state *s);

#endif
