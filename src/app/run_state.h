/* One run's state, shared by the run driver (run.c) and its sink of the
 * index's K-lists (run_emit.c); private to src/app. */
#ifndef LBK_RUN_STATE_H
#define LBK_RUN_STATE_H

#include "classify.h"
#include "comm.h"
#include "dataset.h"
#include "device.h"
#include "exchange.h"
#include "index.h"
#include "inputs.h"
#include "job.h"
#include "knn.h"
#include "outputs.h"
#include "progress.h"
#include "regress.h"
#include "report.h"
#include "run.h"
#include "run_graph.h"
#include "targets.h"
#include "truth.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The held parts of a checkpointed run: where ranks own slices, the
 * predictions (int32 labels or double values, raw) and the probability
 * rows' text; for task graph, the graph rows each rank emitted (records). */
enum {
    LBK_RUN_HELD_PREDICTIONS,
    LBK_RUN_HELD_PROBABILITIES,
    LBK_RUN_HELD_GRAPH,
    LBK_RUN_HELD_COUNT
};
#define LBK_RUN_PARTS (LBK_JOB_OUTPUT_COUNT + LBK_RUN_HELD_COUNT)

/* A run of global query rows [first, first + count). */
typedef struct {
    uint64_t first, count;
} lbk_run_range;

/* Largest class count for which the report carries a confusion matrix. */
#define LBK_RUN_CONFUSION_MAX_CLASSES 256

/* What lbk_run does with index.path. */
enum { LBK_RUN_INDEX_NONE, LBK_RUN_INDEX_LOAD, LBK_RUN_INDEX_SAVE };

typedef struct {
    const lbk_comm *comm;
    lbk_job *job; /* rank 0's, once broadcast */
    const lbk_run_options *options;
    bool root;
    double t_start, t_read; /* the run's clock, and the read phase's */

    lbk_inputs_shape shape;     /* rank 0's, once broadcast */
    float *radii;               /* query.radii: every query's (the radius tasks and votes) */
    int32_t outlier;            /* classify by radius: the outlier label (LBK_JOB_OUTLIER_NONE) */
    uint64_t radius_empty;      /* regress by radius: queries without a neighbour, all ranks' */
    lbk_dataset shard, queries; /* queries: rank 0's all, or (owns_slice) every rank's slice;
                                 * the shard until the index takes it */
    uint64_t query_first;       /* owns_slice: the slice's first row of the searched ones */
    /* The query rows this run searches, in row order: all of them, or
     * (resumed) those no checkpoint finished. Its rows are the index's
     * query rows 0 .. todo_rows - 1 (lbk_run_rows_global). */
    lbk_run_range *todo;
    uint64_t todo_count, todo_rows;
    lbk_index_plan plan; /* engine, partition */
    int32_t label_max;   /* over every rank's labels */
    int classes;         /* reference labels: 0 .. classes - 1 (over every rank) */
    lbk_device *device;
    lbk_tuning tuning;               /* this rank's device's kernel parameters (tune.h) */
    char tuning_file[48];            /* the tuning cache file looked for ("" = none) */
    lbk_report_rank_device *devices; /* every rank's, in rank order */
    lbk_index *index;
    int index_mode;               /* index.path: LBK_RUN_INDEX_* (run_index.c) */
    char *index_manifest;         /* a loaded index's manifest, every rank */
    lbk_index_saved *index_saved; /* its engine image and top tree until the index takes them */
    lbk_index_params
        index_params;    /* the job's keys the index reads (lbk_index_params_from_job) */
    lbk_run_graph graph; /* task graph: this rank's rows of the graph */
    /* task graph with run.checkpoint: searched as queries (the reference
     * rows not finished), each searched row's global row */
    bool graph_queries;
    uint32_t *graph_order;

    int32_t *predictions;   /* one batch's, or (owns_slice) the whole slice's */
    double *proba;          /* the probabilities of proba_queries queries, */
    uint64_t proba_queries; /*   classes each (computed in pieces, then printed) */
    FILE *proba_rows;       /* owns_slice: the slice's probability rows, written */
    char *proba_text;       /*   at the end from proba_text (open_memstream) */
    size_t proba_text_len;
    int32_t *batch_truth; /* ranks but 0 that emit slices: their labels */
    lbk_classify_confusion confusion;
    lbk_truth_counts truth; /* ground-truth agreement of this rank's slices */

    /* task regress (run_targets.c): this rank's reference targets, of the
     * rows it read, [targets_first, targets_first + targets_rows) of the
     * input (every row when replicated), which stay here while the points
     * may move (the spatial partition); looked up by global id. */
    double *targets;
    uint64_t targets_first, targets_rows;
    double *query_targets;      /* as queries.labels: rank 0's all or the own slice */
    double *values;             /* predictions: as `predictions` */
    double *batch_truth_values; /* as batch_truth */
    double *neighbour_targets;  /* one batch's, K per query */
    lbk_targets lookup;         /* of the neighbours' targets by id (src/task) */
    lbk_regress_score score;    /* this rank's; rank 0: every rank's after the reduction */
    lbk_progress progress;
    uint64_t progress_total;

    lbk_outputs outputs;
    bool outputs_open; /* partial files exist (opened by this rank) */
    bool committed;    /* renamed into place: nothing to clean up */

    /* run.checkpoint (checkpoint.c): this rank's parts of the partial
     * files, LBK_JOB_OUTPUT_LIST order (a whole file, or this rank's rows of
     * it), then the held ones (LBK_RUN_HELD_*: what an owned slice keeps
     * until the end, in a file of this rank's own) */
    bool checkpoint;
    uint64_t done_rows;                  /* finished before this run (resumed) */
    struct lbk_checkpoint_kept *resumed; /* what the checkpoint held (checkpoint.c) */
    double t_checkpoint;                 /* rank 0: the last checkpoint's time */
    double t_resume;                     /* when lbk_checkpoint_read began */
    double resume_s;      /* reading and checking the checkpoint (not the index built between) */
    double checkpoint_s;  /* this rank's seconds in the after-batch hook, checkpoints included */
    uint64_t checkpoints; /* checkpoints written by this run */
    bool checkpoint_bad;  /* rank 0: resumed from PATH.prev, PATH failed its CRC */
    bool kept_on[LBK_RUN_PARTS];
    uint64_t kept_len[LBK_RUN_PARTS]; /* as of the last checkpoint */
    uint32_t kept_crc[LBK_RUN_PARTS];
    uint64_t kept_cut[LBK_JOB_OUTPUT_COUNT]; /* rank 0: the lengths to open the files at */
    uint64_t kept_hdf5_offset[LBK_JOB_OUTPUT_COUNT]; /* an HDF5 array kept: its rows' start */
    int held_fd[LBK_RUN_HELD_COUNT];                 /* -1: none */
    uint64_t held_written[LBK_RUN_HELD_COUNT];

    double phase[LBK_PHASE_COUNT]; /* this rank's seconds per phase (the index's added) */
    double *rank_phases;           /* rank 0: every rank's */
    uint64_t merge_bytes;
    lbk_report_spatial spatial;        /* over every rank, when the partition is spatial */
    lbk_report_rank_stats stats;       /* this rank's */
    lbk_report_rank_stats *rank_stats; /* every rank's, in rank order */
    lbk_report report;                 /* rank 0 fills and writes it */
} lbk_run_state;

/* The global row of the searched row v (run_rows.c), and in *run how
 * many rows from v on follow it without a gap. */
uint64_t lbk_run_rows_global(const lbk_run_state *s, uint64_t v, uint64_t *run);
/* The searched rows [v, v + count) read into `out` (a range of the query
 * file read, the finished rows in it dropped). */
lbk_status lbk_run_rows_read(const lbk_run_state *s, uint64_t v, uint64_t count,
                             lbk_dataset *out);
lbk_status lbk_run_rows_read_targets(const lbk_run_state *s, uint64_t v, uint64_t count,
                                     double *out);
/* todo: every query row but the finished ranges (sorted, disjoint). */
lbk_status lbk_run_rows_set(lbk_run_state *s, const lbk_run_range *finished, uint64_t n);

/* The index's sink (run_emit.c): votes, scores and writes each slice of final
 * K-lists; and, after the last batch, the predictions of plans that own
 * slices (collective: offsets from an exclusive scan over the ranks). */
lbk_status lbk_run_emit(void *run_state, const lbk_index_slice *slice);
lbk_status lbk_run_emit_finish(lbk_run_state *s);
/* task graph's sink: lbk_run_graph_add. */
lbk_status lbk_run_emit_graph(void *run_state, const lbk_index_slice *slice);

/* Collective, every rank in every batch (the sink's every_rank): the
 * targets of the slice's neighbours (slice_count x k, 0 for padding) into
 * out, each from the rank that read it; `prep` this rank's status so far,
 * agreed before any data moves. Replicated targets are read locally. */
/* Task regress: the lookup of the neighbours' targets, once their rows
 * are read (not collective). */
lbk_status lbk_run_targets_init(lbk_run_state *s);
lbk_status lbk_run_targets_lookup(lbk_run_state *s, const lbk_index_slice *slice, double *out,
                                  lbk_status prep);
void lbk_run_targets_free(lbk_run_state *s);

/* Collective, task radius and radius_graph: the run's numbers reduced over
 * the ranks; rank 0 prints the summary and renders the report's text
 * (malloc'ed, *text NULL without output.report). */
lbk_status lbk_run_report_text(lbk_run_state *s, char **text, size_t *len);

#endif
