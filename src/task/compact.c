#include "compact.h"

#include <stddef.h>

const char *lbk_compact_why(lbk_metric metric, lbk_dtype type)
{
    /* float16 rows are normalised on the fly by brute force, bit for bit
     * (src/engines/brute_scale.h). */
    if (metric == LBK_METRIC_COSINE && type != LBK_DTYPE_FLOAT16)
        return "cosine normalises integer rows in float32";
    return NULL;
}

const char *lbk_compact_job_why(const lbk_job *job, lbk_dtype type)
{
    return lbk_compact_why(job->knn.metric, type);
}
