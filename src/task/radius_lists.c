#include "radius_lists.h"

#include "grow.h"
#include "log.h"
#include "try.h"

#include <stdlib.h>

lbk_status lbk_radius_lists_fill(lbk_radius_lists *l, const lbk_index_radius_slice *slice,
                                 lbk_targets *lookup)
{
    const uint64_t n = slice->slice_count, nnz = n ? slice->indptr[n] : 0;
    lbk_status st = lbk_grow_buffer((void **)&l->offsets, &l->offsets_room, n + 1,
                                    sizeof *l->offsets, "list offsets");
    if (st == LBK_OK)
        st = lbk_grow_buffer((void **)&l->lists, &l->lists_room, nnz, sizeof *l->lists,
                             "neighbours");
    if (st == LBK_OK && lookup)
        st = lbk_grow_buffer((void **)&l->targets, &l->targets_room, nnz, sizeof *l->targets,
                             "neighbour targets");
    for (uint64_t q = 0; st == LBK_OK && q <= n; q++)
        l->offsets[q] = n ? slice->indptr[q] : 0;
    for (uint64_t j = 0; st == LBK_OK && j < nnz; j++)
        l->lists[j] = (lbk_knn_candidate){slice->keys[j], slice->labels ? slice->labels[j] : -1,
                                          slice->ids[j]};
    if (!lookup)
        return st;
    return lbk_targets_lookup(lookup, l->lists, st == LBK_OK ? nnz : 0, 1, 1, l->targets, st);
}

void lbk_radius_lists_free(lbk_radius_lists *l)
{
    free(l->lists);
    free(l->targets);
    free(l->offsets);
    *l = (lbk_radius_lists){0};
}
