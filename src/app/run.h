/* The run driver: the data flow of docs/design.md §1 across ranks, from the
 * job to the result files, the summary and the report. */
#ifndef LBK_RUN_H
#define LBK_RUN_H

#include "comm.h"
#include "cpu_threads.h"
#include "job.h"
#include "status.h"

#include <stdbool.h>

typedef struct {
    bool progress;                      /* draw the progress line (rank 0) */
    lbk_cpu_threads_source cpu_threads; /* this rank's, from lbk_share_cpu_threads */
    const char *tune_cache_dir;         /* `lbknn tune`'s cache directory ("" = none; main.c) */
    bool build_only; /* `lbknn build`: save the index to index.path, search nothing */
    bool resume;     /* --resume: continue after run.checkpoint's batch */
} lbk_run_options;

/* Every rank calls this; `job` is meaningful on rank 0 only (it is broadcast)
 * and `load_status` is rank 0's status of loading it, so that all ranks stop
 * together when the job file was bad. */
lbk_status lbk_run(const lbk_comm *comm, lbk_status load_status, lbk_job *job,
                   const lbk_run_options *options);

#endif
