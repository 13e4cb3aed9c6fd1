#include "radius_lists.h"

#include "log.h"
#include "try.h"

#include <stdlib.h>

/* Grown at least twofold, so that slices of slowly rising size do not
 * reallocate each time. */
static lbk_status grow(void **buffer, uint64_t *room, uint64_t need, size_t size,
                       const char *what)
{
    if (need <= *room)
        return LBK_OK;
    const uint64_t want = need > 2 * *room ? need : 2 * *room;
    void *bigger = realloc(*buffer, (size_t)want * size);
    LBK_FAIL_IF(!bigger, LBK_ERR_NOMEM, "out of host memory for %llu %s",
                (unsigned long long)want, what);
    *buffer = bigger;
    *room = want;
    return LBK_OK;
}

lbk_status lbk_radius_lists_fill(lbk_radius_lists *l, const lbk_index_radius_slice *slice,
                                 lbk_targets *lookup)
{
    const uint64_t n = slice->slice_count, nnz = n ? slice->indptr[n] : 0;
    lbk_status st =
        grow((void **)&l->offsets, &l->offsets_room, n + 1, sizeof *l->offsets, "list offsets");
    if (st == LBK_OK)
        st = grow((void **)&l->lists, &l->lists_room, nnz, sizeof *l->lists, "neighbours");
    if (st == LBK_OK && lookup)
        st = grow((void **)&l->targets, &l->targets_room, nnz, sizeof *l->targets,
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
