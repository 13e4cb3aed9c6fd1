/* A radius slice's lists as the radius votes take them (src/task/votes.h):
 * candidates (key, label, id), offsets from 0 and, for regression, each
 * neighbour's target. The one implementation under `lbknn run`'s radius
 * votes and the library's lbknn_index_radius_classify and _regress; the
 * buffers grow to the largest slice and are reused slice after slice. */
#ifndef LBK_RADIUS_LISTS_H
#define LBK_RADIUS_LISTS_H

#include "index.h"
#include "knn.h"
#include "status.h"
#include "targets.h"

#include <stdint.h>

typedef struct {
    lbk_knn_candidate *lists;
    double *targets; /* regress only */
    uint64_t *offsets;
    uint64_t lists_room, targets_room, offsets_room;
} lbk_radius_lists;

/* The slice's lists into `l`. Collective when `lookup` is given (regress:
 * every rank joins every slice, also an empty one, since the targets come
 * from the ranks that hold them); NULL: no targets. */
lbk_status lbk_radius_lists_fill(lbk_radius_lists *l, const lbk_index_radius_slice *slice,
                                 lbk_targets *lookup);

void lbk_radius_lists_free(lbk_radius_lists *l);

#endif
