/* The end-of-run summary (stdout, for people) and report (YAML, for
 * scripts), both from one lbk_run_report filled by the run driver. */
#ifndef LBK_REPORT_H
#define LBK_REPORT_H

#include "classify.h"
#include "cpu_threads.h"
#include "job.h"
#include "status.h"

#include <stdint.h>
#include <stdio.h>

typedef enum {
    LBK_PHASE_READ = 0,   /* reading the shard (and, on rank 0, the queries) */
    LBK_PHASE_DEVICE,     /* opening the OpenCL device */
    LBK_PHASE_BUILD,      /* uploading the shard / building the tree */
    LBK_PHASE_DISTRIBUTE, /* broadcasting query batches */
    LBK_PHASE_QUERY,      /* per-shard top-K on the device */
    LBK_PHASE_MERGE,      /* the MPI K-list reduction */
    LBK_PHASE_OUTPUT,     /* classification and writing results */
    LBK_PHASE_COUNT
} lbk_phase;

#define LBK_DEVICE_DESC 200

/* One rank's device, as every rank tells the others (sent as bytes). */
typedef struct {
    char desc[LBK_DEVICE_DESC];          /* "<device> [index i, node rank r]" */
    int cpu_threads;                     /* a CPU device's worker threads (its compute
                                          * units); 0 for a GPU */
    lbk_cpu_threads_source cpu_threads_source;
} lbk_rank_device;

typedef struct {
    const lbk_job *job;
    uint64_t reference_rows, query_rows;
    int dim;
    bool reference_labels, query_labels;
    int ranks;
    const lbk_rank_device *devices; /* one per rank, in rank order */
    lbk_engine engine;
    const char *engine_why;
    char engine_detail[256];
    uint64_t batches, batch_size;
    double phase_min[LBK_PHASE_COUNT], phase_avg[LBK_PHASE_COUNT], phase_max[LBK_PHASE_COUNT];
    const double *rank_phases;     /* ranks * LBK_PHASE_COUNT: who was slow, when min and max differ */
    double total_s;                /* wall time of the whole run on rank 0 */
    double search_s;               /* wall time of the batch loop on rank 0 */
    uint64_t merge_bytes;          /* sum over ranks */
    const lbk_confusion *confusion; /* NULL without query labels */
} lbk_run_report;

const char *lbk_phase_name(lbk_phase phase);
void lbk_print_summary(FILE *out, const lbk_run_report *r);
/* The report as YAML text in a malloc'd buffer (the caller writes it with the
 * other outputs, so that it too appears only when the whole run succeeded). */
lbk_status lbk_render_report(const lbk_run_report *r, char **text, size_t *len);

#endif
