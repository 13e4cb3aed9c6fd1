#include "compact.h"

#include <stddef.h>

const char *lbk_compact_why(lbk_metric metric)
{
    if (metric == LBK_METRIC_COSINE)
        return "cosine normalises the rows in float32";
    return NULL;
}

const char *lbk_compact_job_why(const lbk_job *job) { return lbk_compact_why(job->knn.metric); }
