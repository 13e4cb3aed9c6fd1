/* One run's state, shared by the run driver (run.c) and the batch
 * strategies (batch.c); private to src/app. */
#ifndef LBK_RUN_STATE_H
#define LBK_RUN_STATE_H

#include "classify.h"
#include "comm.h"
#include "dataset.h"
#include "device.h"
#include "engine.h"
#include "exchange.h"
#include "inputs.h"
#include "job.h"
#include "knn.h"
#include "outputs.h"
#include "report.h"
#include "run.h"
#include "toptree.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

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
                                      * exchange, and so in s->merged until the lists are
                                      * put back in batch order */
    lbk_exchange_buffer rows_out, rows_in;   /* query points to / from other ranks */
    lbk_exchange_buffer lists_out, lists_in; /* K-lists to / from other ranks (phase 1's come back
                                      * straight into s->merged) */
    lbk_exchange_buffer extra_row;  /* phase 2: the s->merged row (uint64_t) of each row sent */
    lbk_exchange_buffer bound;      /* phase 1: each home list's K-th key (float), by row */
    lbk_exchange_buffer near_count; /* batch: each query's phase-2 rank count (int) */
    lbk_report_spatial report;
} lbk_run_spatial;

typedef struct {
    const lbk_comm *comm;
    lbk_job *job; /* rank 0's, once broadcast */
    const lbk_run_options *options;
    const struct lbk_batch_strategy *strategy;
    bool root;
    double t_start, t_read; /* the run's clock, and the read phase's */

    lbk_inputs_shape shape;     /* rank 0's, once broadcast */
    lbk_dataset shard, queries; /* queries: rank 0's all, or (owns_slice) every rank's slice */
    uint64_t query_first;       /* owns_slice: the slice's first row in the query file */
    lbk_partition partition;    /* resolved: never AUTO */
    const char *partition_why;
    lbk_run_spatial *spatial; /* spatial partition only */
    int32_t label_max;        /* over every rank's labels */
    int classes;              /* reference labels: 0 .. classes - 1 (over every rank) */
    lbk_device *device;
    lbk_tuning tuning;               /* this rank's device's kernel parameters (tune.h) */
    char tuning_file[48];            /* the tuning cache file looked for ("" = none) */
    lbk_report_rank_device *devices; /* every rank's, in rank order */
    lbk_engine engine_kind;
    const char *engine_why;
    lbk_engine_state *engine;

    uint64_t batch, batches;           /* queries per batch (the same on every rank), batches */
    lbk_knn_result result;             /* the engine's lists of one batch */
    lbk_knn_candidate *local, *merged; /* this rank's lists, and the final ones it emits;
                                      * no local where ranks own slices (the spatial
                                      * stages build the final lists in place) */
    int32_t *predictions;              /* one batch's, or (owns_slice) the whole slice's */
    lbk_classify_score *scores;        /* one query's class scores (K entries) */
    double *proba;                     /* one query's probabilities (classes entries) */
    FILE *proba_rows;                  /* owns_slice: the slice's probability rows, written */
    char *proba_text;                  /*   at the end from proba_text (open_memstream) */
    size_t proba_text_len;
    float *batch_points;  /* ranks but 0: the batch's queries */
    int32_t *batch_truth; /* ranks but 0 that emit slices: their labels */
    lbk_classify_confusion confusion;

    lbk_outputs outputs;
    bool outputs_open; /* partial files exist (opened by this rank) */
    bool committed;    /* renamed into place: nothing to clean up */

    double phase[LBK_PHASE_COUNT]; /* this rank's seconds per phase */
    double *rank_phases;           /* rank 0: every rank's */
    double search_s;               /* the batch loop's wall time */
    uint64_t merge_bytes;
    uint64_t largest_search;           /* most queries in one engine call */
    lbk_report_rank_stats stats;       /* this rank's */
    lbk_report_rank_stats *rank_stats; /* every rank's, in rank order */
    lbk_report report;                 /* rank 0 fills and writes it */
} lbk_run_state;

#endif
