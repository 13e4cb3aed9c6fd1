/* Task regress: the neighbours' targets, by global id, from the rank that
 * read them (src/task's lookup): each rank reads the targets of the
 * reference rows it reads ([r*N/P, (r+1)*N/P)) and keeps them. */
#include "run_state.h"

#include "alloc_large.h"

lbk_status lbk_run_targets_init(lbk_run_state *s)
{
    return lbk_targets_init(&s->lookup, s->comm, s->targets, s->targets_first, s->targets_rows,
                            s->shape.reference_rows, NULL, s->plan.replicated);
}

lbk_status lbk_run_targets_lookup(lbk_run_state *s, const lbk_index_slice *b, double *out,
                                  lbk_status prep)
{
    return lbk_targets_lookup(&s->lookup, b->lists, b->slice_count, b->k, b->k, out, prep);
}

void lbk_run_targets_free(lbk_run_state *s)
{
    lbk_alloc_large_free(s->targets);
    lbk_alloc_large_free(s->query_targets);
    lbk_alloc_large_free(s->values);
    lbk_alloc_large_free(s->batch_truth_values);
    lbk_alloc_large_free(s->neighbour_targets);
    lbk_targets_free(&s->lookup);
}
