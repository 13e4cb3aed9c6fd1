/* One run's state, shared by the run driver (run.c) and the batch
 * strategies (batch.c); private to src/app. */
#ifndef LBK_RUN_STATE_H
#define LBK_RUN_STATE_H

#include "classify.h"
#include "comm.h"
#include "dataset.h"
#include "device.h"
#include "engine.h"
#include "inputs.h"
#include "job.h"
#include "knn.h"
#include "output.h"
#include "report.h"
#include "run.h"

#include <stdbool.h>
#include <stdint.h>

struct lbk_batch_strategy;

typedef struct {
    const lbk_comm *comm;
    lbk_job *job;                    /* rank 0's, once broadcast */
    const lbk_run_options *options;
    const struct lbk_batch_strategy *strategy;
    bool root;
    double t_start, t_read;          /* the run's clock, and the read phase's */

    lbk_input_shape shape;           /* rank 0's, once broadcast */
    lbk_dataset shard, queries;      /* queries: rank 0 only */
    int32_t label_max;               /* over every rank's labels */
    int classes;                     /* reference labels: 0 .. classes - 1 (over every rank) */
    lbk_device *device;
    lbk_rank_device *devices;        /* every rank's, in rank order */
    lbk_engine engine_kind;
    const char *engine_why;
    lbk_engine_state *engine;

    uint64_t batch, batches;         /* queries per batch (the same on every rank), batches */
    lbk_knn_result result;           /* the engine's lists of one batch */
    lbk_candidate *local, *merged;   /* this rank's lists, and the final ones it emits */
    int32_t *predictions;
    lbk_class_score *scores;         /* one query's class scores (K entries) */
    double *proba;                   /* one query's probabilities (classes entries) */
    float *batch_points;             /* ranks but 0: the batch's queries */
    int32_t *batch_truth;            /* ranks but 0 that emit slices: their labels */
    lbk_confusion confusion;

    lbk_outputs outputs;
    bool outputs_open;               /* partial files exist (opened by this rank) */
    bool committed;                  /* renamed into place: nothing to clean up */

    double phase[LBK_PHASE_COUNT];   /* this rank's seconds per phase */
    double *rank_phases;             /* rank 0: every rank's */
    double search_s;                 /* the batch loop's wall time */
    uint64_t merge_bytes;
    lbk_run_report report;           /* rank 0 fills and writes it */
} lbk_run_state;

#endif
