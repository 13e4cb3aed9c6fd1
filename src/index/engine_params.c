#include "engine_params.h"

void lbk_engine_params_from_job(const lbk_job *job, const lbk_tuning *tuning,
                                lbk_engine_params *params)
{
    *params = (lbk_engine_params){
        .engine = job->knn.engine,
        .k = job->knn.k,
        .metric = job->knn.metric,
        /* device.memory_mb may be as large as INT64_MAX: saturate, because a
         * wrapped product would become a tiny budget (or 0, "from the device"). */
        .memory_budget =
            job->device.memory_mb > (UINT64_MAX >> 20) ? UINT64_MAX : job->device.memory_mb << 20,
        .groups = job->device.groups,
        .split = job->tree.split,
        .sort = job->tree.sort,
        .verify = job->tree.verify,
        .tuning = tuning,
    };
}
