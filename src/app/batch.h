/* One batch of queries under a partition strategy: how the queries reach
 * the ranks, how each rank's K-lists become the final lists, and which rank
 * classifies and writes which slice. The run driver (run.c) calls the steps
 * in order and agrees on every rank's status between them; each step here
 * does its rank's part and never agrees by itself, so a new partition (say
 * one that routes queries to the ranks owning nearby space, with an
 * all-to-all exchange) is one more strategy in batch.c. */
#ifndef LBK_BATCH_H
#define LBK_BATCH_H

#include "run_state.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uint64_t first, count;            /* queries [first, first + count) */
    float *points;                    /* the batch's query points on this rank */
    int32_t *truth;                   /* their labels, where this rank scores them; or NULL */
    uint64_t slice_first, slice_count; /* the final lists this rank holds in s->merged:
                                        * queries first + slice_first, ... */
} lbk_batch;

typedef lbk_status (*lbk_batch_step)(lbk_run_state *s, lbk_batch *b);

typedef struct lbk_batch_strategy {
    /* The batch's queries (and labels) to the ranks that search them. */
    lbk_batch_step distribute;
    /* This rank's K-lists for the queries it searches. */
    lbk_batch_step search;
    /* Every rank's lists to the final lists of the slices the ranks emit;
     * NULL when search already made final lists. */
    lbk_batch_step combine;
    /* Every rank emits its own slice (true), or rank 0 the whole batch. */
    bool sliced;
} lbk_batch_strategy;

/* The strategy of the job's mpi.partition and mpi.merge. */
const lbk_batch_strategy *lbk_batch_strategy_for(const lbk_job *job);

/* Classify, score and write this rank's final lists, if it emits. Where
 * every rank emits, every rank must call it: it holds a collective scan. */
lbk_status lbk_batch_emit(lbk_run_state *s, lbk_batch *b);

#endif
