/* The index's state, shared by its driver (index.c) and the batch
 * strategies (batch.c, batch_spatial.c); private to src/index. */
#ifndef LBK_INDEX_IMPL_H
#define LBK_INDEX_IMPL_H

#include "comm.h"
#include "dataset.h"
#include "device.h"
#include "engine.h"
#include "exchange.h"
#include "index.h"
#include "knn.h"
#include "toptree.h"

#include <stdbool.h>
#include <stdint.h>

struct lbk_batch_strategy;

/* The spatial partition's state (batch_spatial.c): the replicated top tree
 * and the buffers its exchanges reuse from batch to batch. */
typedef struct {
    lbk_toptree tree;
    uint64_t *send_counts, *recv_counts, *back_counts; /* per rank */
    uint64_t *cursor;                                  /* per rank */
    int *near;                               /* one query's phase-2 ranks (ranks entries) */
    lbk_exchange_buffer home;                /* batch: each query's home rank (int) */
    lbk_exchange_buffer row;                 /* batch: each query's row (uint64_t) in the phase-1
                                              * exchange, and so in s->merged until the lists
                                              * are put back in batch order */
    lbk_exchange_buffer rows_out, rows_in;   /* query points to / from other ranks */
    lbk_exchange_buffer lists_out, lists_in; /* K-lists to / from other ranks (phase 1's come
                                              * back straight into s->merged) */
    lbk_exchange_buffer extra_row;   /* phase 2: the s->merged row (uint64_t) of each row sent */
    lbk_exchange_buffer bound;       /* phase 1: each home list's K-th key (float), by row */
    lbk_exchange_buffer near_count;  /* batch: each query's phase-2 rank count (int) */
    lbk_exchange_buffer extra_bound; /* phase 2: the bound (float) of each query received */
    lbk_index_spatial_report report;
} lbk_index_spatial;

struct lbk_index {
    const lbk_comm *comm;
    lbk_index_params params;
    lbk_index_plan plan;
    const struct lbk_batch_strategy *strategy;
    bool root;
    struct {
        uint64_t reference_rows;
        int dim;
        bool reference_labels;
    } shape;
    lbk_dataset shard;
    lbk_index_spatial *spatial;         /* spatial partition only */
    const lbk_dataset *balance_queries; /* lbk_index_create's queries, during the call */
    lbk_device *device;                 /* borrowed */
    lbk_engine_state *engine;

    bool self;                         /* the search prepared is the self search */
    uint64_t query_rows;               /* of the search prepared */
    uint64_t query_first, query_count; /* owns_slice: this rank's slice */
    const float *query_points;         /* the search's: the slice, or rank 0's all */
    lbk_knn_result result;             /* the engine's lists of one batch */
    lbk_knn_candidate *local, *merged; /* this rank's lists, and the final ones its sink
                                        * gets; no local where ranks own slices (the
                                        * spatial stages build the final lists in place) */
    float *batch_points;               /* ranks but 0, where rank 0 holds the queries; every
                                        * rank in a self search of row shards, or in one
                                        * taken in self_order */
    uint32_t *self_order;              /* a tree's self search: its points in Morton order,
                                        * the order its batches take them in; NULL: row order */
    uint64_t buffers_for;              /* the batch size the buffers hold */
    const lbk_index_sink *sink;        /* the search's */
    lbk_index_info info;
};

/* lbk_index_create's first step, shared with lbk_index_create_saved
 * (index_store.c): the index over `shard` (taken) with no engine yet.
 * Collective: agrees on its allocation. */
lbk_status lbk_index_create_empty(const lbk_comm *comm, lbk_device *device,
                                  const lbk_index_params *params, const lbk_index_plan *plan,
                                  uint64_t reference_rows, bool reference_labels,
                                  lbk_dataset *shard, lbk_index **out);

/* A saved part's items (index_store.c), each refused with one line naming
 * it: part r's manifest value rR.WHAT; its file rR.WHAT, `bytes` long, size
 * and CRC checked; its k-d tree's node-to-row map (rR.tree_ids), every
 * entry a row of the part's n. */
lbk_status lbk_index_part_u64(const char *dir, const char *manifest, int r, const char *what,
                              uint64_t *v);
lbk_status lbk_index_part_read(const char *dir, const char *manifest, int r, const char *what,
                               void *data, uint64_t bytes);
lbk_status lbk_index_part_tree_rows(const char *dir, const char *manifest, int r, uint64_t n,
                                    uint32_t *rows);

/* Collective (index_reshape.c): a saved index of `parts` ranks, read on
 * this run's other rank count, as the row shard a fresh build here reads
 * from the reference file: rows [first, first + rows) of the even split,
 * with their labels when `labels` and, where `targets` is not NULL, their
 * targets (*targets, from *targets_first). `tree`: the parts hold k-d
 * trees (else the brute engine's rows, of `type`: the shard's rows are of
 * it too). `prep`: this rank's status so far,
 * agreed before the exchange. */
lbk_status lbk_index_reshape_read(lbk_status prep, const char *dir, const char *manifest,
                                  const lbk_comm *comm, int parts, bool tree, int dim,
                                  lbk_dtype type, uint64_t reference_rows, bool labels,
                                  lbk_dataset *shard, double **targets, uint64_t *targets_first);

#endif
