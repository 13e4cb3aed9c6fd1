#include "compact.h"

#include <stddef.h>

const char *lbk_compact_why(lbk_metric metric, unsigned uses)
{
    if (metric == LBK_METRIC_COSINE)
        return "cosine normalises the rows in float32";
    if (uses & LBK_COMPACT_SELF)
        return "a self search's queries are the points themselves, searched as float32";
    if (uses & LBK_COMPACT_RADIUS)
        return "radius search reads float32 points for now";
    if (uses & LBK_COMPACT_SAVE)
        return "a saved index holds float32 points for now";
    if (uses & LBK_COMPACT_CHECKPOINT)
        return "checkpointed runs keep float32 points for now";
    return NULL;
}

const char *lbk_compact_job_why(const lbk_job *job)
{
    unsigned uses = 0;
    if (lbk_job_self_search(job))
        uses |= LBK_COMPACT_SELF;
    if (lbk_job_radius_task(job) || lbk_job_radius_votes(job))
        uses |= LBK_COMPACT_RADIUS;
    if (job->index.path[0])
        uses |= LBK_COMPACT_SAVE;
    if (job->run.checkpoint[0])
        uses |= LBK_COMPACT_CHECKPOINT;
    return lbk_compact_why(job->knn.metric, uses);
}
