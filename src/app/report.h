/* The end-of-run summary (stdout, for people) and report (YAML, for
 * scripts), both from one lbk_report filled by the run driver. */
#ifndef LBK_REPORT_H
#define LBK_REPORT_H

#include "classify.h"
#include "cpu_threads.h"
#include "index.h"
#include "job.h"
#include "regress.h"
#include "status.h"
#include "truth.h"
#include "tuning.h"

#include <stdint.h>
#include <stdio.h>

/* The phases of a rank's time: the index's (index.h). */
typedef lbk_index_phase lbk_report_phase;

#define LBK_REPORT_DEVICE_DESC 200

/* One rank's device, as every rank tells the others (sent as bytes). */
typedef struct {
    char desc[LBK_REPORT_DEVICE_DESC]; /* "<device> [index i, node rank r]" */
    int cpu_threads;                   /* a CPU device's worker threads (its compute
                                          * units); 0 for a GPU */
    lbk_cpu_threads_source cpu_threads_source;
    lbk_tuning tuning;    /* the kernel parameters this rank ran with */
    char tuning_file[48]; /* the tuning cache file it looked for ("" = none) */
} lbk_report_rank_device;

/* One rank's work and resources, and the spatial partition's numbers over
 * every rank (index.h). */
typedef lbk_index_rank_stats lbk_report_rank_stats;
typedef lbk_index_spatial_report lbk_report_spatial;

typedef struct {
    const lbk_job *job;
    uint64_t reference_rows, query_rows;
    int dim;
    bool reference_labels, query_labels;
    int ranks;
    const lbk_report_rank_device *devices; /* one per rank, in rank order */
    const char *tuning_dir;                /* `lbknn tune`'s cache directory ("" = none) */
    lbk_engine engine;
    const char *engine_why;
    char engine_detail[256];
    uint64_t batches, batch_size;
    double phase_min[LBK_PHASE_COUNT], phase_avg[LBK_PHASE_COUNT], phase_max[LBK_PHASE_COUNT];
    const double
        *rank_phases;     /* ranks * LBK_PHASE_COUNT: who was slow, when min and max differ */
    double total_s;       /* wall time of the whole run on rank 0 */
    double search_s;      /* wall time of the batch loop on rank 0 */
    double checkpoint_s;  /* rank 0's part of search_s in the checkpoint hook (< 0: off) */
    uint64_t checkpoints; /* checkpoints written */
    uint64_t merge_bytes; /* sum over ranks */
    const lbk_classify_confusion *confusion; /* NULL without query labels */
    const lbk_truth_counts *truth;           /* NULL without ground truth */
    const lbk_regress_score *score;          /* task regress: NULL without query targets */
    bool radius_votes;                       /* task classify or regress with knn.radius */
    uint64_t radius_empty;   /* regress by radius: queries without a neighbour (NaN) */
    lbk_partition partition; /* resolved: never AUTO */
    const char *partition_why;
    const lbk_report_rank_stats *rank_stats; /* one per rank, in rank order */
    const lbk_report_spatial *spatial;       /* NULL unless the partition is spatial */
} lbk_report;

const char *lbk_report_phase_name(lbk_report_phase phase);
void lbk_report_print_summary(FILE *out, const lbk_report *r);
/* The report as YAML text in a malloc'd buffer (the caller writes it with the
 * other outputs, so that it too appears only when the whole run succeeded). */
lbk_status lbk_report_render(const lbk_report *r, char **text, size_t *len);

#endif
