/* One batch of queries under a partition strategy: how the queries reach
 * the ranks, how each rank's K-lists become the final lists, and which
 * rank's sink gets which slice. The index's search (index.c) calls the
 * stages in order and agrees on every rank's status after each; a stage
 * does its rank's part and at most one collective step of its own (an
 * exchange agrees on its own preparation first), so a partition is a list
 * of stages. The spatial partition's stages live in batch_spatial.c. */
#ifndef LBK_BATCH_IMPL_H
#define LBK_BATCH_IMPL_H

#include "index_impl.h"

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uint64_t first, count;             /* queries [first, first + count) of the query file */
    const float *points;               /* the batch's query points on this rank */
    uint64_t slice_first, slice_count; /* the final lists this rank holds in s->merged:
                                        * queries first + slice_first, ... */
    bool in_order; /* points are a self search's own, in Morton order (s->self_order) */
} lbk_batch;

typedef lbk_status (*lbk_batch_step)(lbk_index *s, lbk_batch *b);

/* One stage of a batch and the phase its time counts in. */
typedef struct {
    lbk_batch_step step;
    lbk_index_phase phase;
} lbk_batch_stage;

#define LBK_BATCH_STAGES_MAX 8

typedef struct lbk_batch_strategy {
    /* Collective, once before the engine is built, or NULL: the spatial
     * partition moves the reference points to their owners here. */
    lbk_status (*redistribute)(lbk_index *s);
    /* The stages, up to the first with a NULL step; lbk_batch_emit is the
     * last one of every strategy. */
    lbk_batch_stage stages[LBK_BATCH_STAGES_MAX];
    /* Every rank emits its own slice (true), or rank 0 the whole batch. */
    bool sliced;
    /* Each rank holds and answers its own contiguous slice of the
     * queries, in batches of its own. */
    bool owns_slice;
} lbk_batch_strategy;

/* `auto` resolved: spatial for the k-d tree on more than one rank, shard
 * otherwise; `why` gets a static sentence. */
lbk_partition lbk_batch_partition_resolve(lbk_partition requested, lbk_engine engine, int ranks,
                                          const char **why);

/* The strategy of a resolved partition and the job's mpi.merge; `self`:
 * of the self search (lbk_index_prepare_self), whose queries are the
 * reference points where they are held. */
const lbk_batch_strategy *lbk_batch_strategy_for(lbk_partition partition, lbk_merge_mode merge,
                                                 bool self);

/* The spatial partition (batch_spatial.c), and its state's release. */
extern const lbk_batch_strategy lbk_batch_spatial_strategy;
extern const lbk_batch_strategy lbk_batch_spatial_self_strategy;
void lbk_batch_spatial_free(lbk_index_spatial *spatial);
/* A saved index: the spatial state over a top tree read back (taken),
 * the shard already its owner's, instead of the redistribution. */
lbk_status lbk_batch_spatial_adopt(lbk_index *s, lbk_toptree *tree);
/* The rotation of this rank's round-robin local tree (kdtree.h): its leaf's
 * depth in the top tree mod D under the spatial partition, else 0. */
int lbk_batch_spatial_rotation(const lbk_index *s);

/* The K-lists of `count` query points in this rank's references, as merge
 * candidates (global ids, labels), in chunks of the run's batch. `bounds`
 * (NULL: none) and `in_order`: lbk_engine_query's. */
lbk_status lbk_batch_search(lbk_index *s, const float *points, const float *bounds, bool in_order,
                            uint64_t count, lbk_knn_candidate *out);

/* The last stage of every strategy: this rank's final lists to the sink,
 * if it emits. */
lbk_status lbk_batch_emit(lbk_index *s, lbk_batch *b);

/* A self search's batch of the rank's own points: in place, or (in
 * s->self_order) gathered into s->batch_points, which b->in_order then
 * says; NULL for an empty batch. */
const float *lbk_batch_own_points(lbk_index *s, lbk_batch *b);
/* `count` rows of `shard` from `row` on as float32 into out (compact rows
 * widened, exactly): a self search's queries, a batch at a time. */
void lbk_batch_rows_as_floats(const lbk_dataset *shard, uint64_t row, uint64_t count, float *out);

#endif
