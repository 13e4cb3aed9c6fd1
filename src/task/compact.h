/* Where compact reference points (uint8, int8, float16) stay compact: the
 * searches' side of the decision, for both of the index's clients (`lbknn
 * run` reads it from the job, the library from the call it answers); the
 * plan's side (engine, partition, the brute auto rule) is the index's, at
 * its creation (docs/design.md "Compact reference points"). */
#ifndef LBK_COMPACT_H
#define LBK_COMPACT_H

#include "enums.h"
#include "job.h"

/* What is done with the points besides a K-nearest search of query rows
 * (search, classify, regress: 0), as flags. */
typedef enum {
    LBK_COMPACT_SELF = 1 << 0,       /* the points are the queries (graph, self searches) */
    LBK_COMPACT_RADIUS = 1 << 1,     /* radius search, radius votes */
    LBK_COMPACT_SAVE = 1 << 2,       /* a saved index (index.path, lbknn_index_save) */
    LBK_COMPACT_CHECKPOINT = 1 << 3, /* run.checkpoint */
} lbk_compact_use;

/* Why points searched with `metric` for `uses` are read as float32 (one
 * sentence, said after "... reference points widened to float32: "), or
 * NULL where they may stay compact. */
const char *lbk_compact_why(lbk_metric metric, unsigned uses);

/* The same for a job: its metric, task, index.path and run.checkpoint. */
const char *lbk_compact_job_why(const lbk_job *job);

#endif
