/* Where compact reference points (uint8, int8, float16) stay compact: the
 * searches' side of the decision, for both of the index's clients (`lbknn
 * run` reads it from the job, the library from the call it answers); the
 * plan's side (engine, partition, the brute auto rule) is the index's, at
 * its creation (docs/design.md "Compact reference points"). */
#ifndef LBK_COMPACT_H
#define LBK_COMPACT_H

#include "enums.h"
#include "job.h"

/* Why points of `type` searched with `metric` are read as float32 (one
 * sentence, said after "... reference points widened to float32: "), or
 * NULL where they may stay compact; the plan's reasons are
 * lbk_index_plan_compact_why's. */
const char *lbk_compact_why(lbk_metric metric, lbk_dtype type);

/* The same for a job. */
const char *lbk_compact_job_why(const lbk_job *job, lbk_dtype type);

#endif
