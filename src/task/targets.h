/* Task regress: the neighbours' targets, by global id, from the rank that
 * holds them: the one implementation under `lbknn run` and the library.
 * Each rank keeps the targets of the rows it was given ([first, first +
 * rows) of the reference set), and they stay there: the final K-lists
 * carry global ids, so a target need not travel with its point through the
 * spatial partition's redistribution, nor be held by every rank (8 N bytes
 * each). Per lookup, each rank's ids go to their holders and the targets
 * come back: two exchanges of 8 bytes per neighbour (docs/design.md
 * section 12). Replicated (every rank holds every row) or on one rank,
 * every target is here and nothing travels. */
#ifndef LBK_TARGETS_H
#define LBK_TARGETS_H

#include "comm.h"
#include "exchange.h"
#include "knn.h"
#include "status.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const lbk_comm *comm;
    const double *values; /* this rank's targets (borrowed) */
    uint64_t first, rows; /*   of the rows [first, first + rows) */
    uint64_t *starts;     /* ranks + 1: rank r holds [starts[r], starts[r + 1]) */
    bool local;           /* every target is here */
    uint64_t *counts;     /* 4 x ranks: sent, received, answered, a cursor */
    lbk_exchange_buffer send, recv, back;
} lbk_targets;

/* The lookup over `values` (borrowed: they must outlive it),
 * this rank's targets of rows [first, first + rows) of `points`; `starts`
 * (ranks + 1 entries, copied; NULL: lbk_row_split_range's ranges) says who
 * holds which rows; `local`: every rank holds every row. Not collective. */
lbk_status lbk_targets_init(lbk_targets *t, const lbk_comm *comm, const double *values,
                            uint64_t first, uint64_t rows, uint64_t points,
                            const uint64_t *starts, bool local);
void lbk_targets_free(lbk_targets *t);

/* Collective unless local (joined whatever `prep` is, which it agrees):
 * the targets of the first k neighbours of `count` lists of `stride`
 * candidates into out (count x k; a padding id's 0). */
lbk_status lbk_targets_lookup(lbk_targets *t, const lbk_knn_candidate *lists, uint64_t count,
                              int stride, int k, double *out, lbk_status prep);

#endif
