/* lbk_run's saved index (index.path; docs/design.md, "A saved index"):
 * whether a run loads it or builds and saves it, the manifest that says
 * what it was made for, and the regress targets saved beside the index's
 * own files. */
#ifndef LBK_RUN_INDEX_H
#define LBK_RUN_INDEX_H

#include "run_state.h"

/* Rank 0, in place of lbk_inputs_probe: without index.path, the probe as
 * always; with it, the saved index's manifest checked against the job and
 * the rank count (a mismatch refused with one line naming the item, or,
 * with index.rebuild or under `build_only`, the index rebuilt), and the
 * reference side of the shape from the manifest where it is loaded. */
lbk_status lbk_run_index_probe(lbk_run_state *s, bool build_only);

/* Collective: rank 0's decision and manifest to every rank. */
lbk_status lbk_run_index_share(lbk_run_state *s);

/* This rank's part of a loaded index: s->shard, s->index_saved and, task
 * regress, its reference targets. */
lbk_status lbk_run_index_read(lbk_run_state *s);

/* Collective, after the index is built where s->index_mode says to save:
 * every rank's files, then rank 0's manifest. */
lbk_status lbk_run_index_save(lbk_run_state *s);

void lbk_run_index_free(lbk_run_state *s);

#endif
