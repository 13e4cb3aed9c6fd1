#include "index_params.h"

void lbk_index_params_from_job(const lbk_job *job, lbk_index_params *params)
{
    *params = (lbk_index_params){
        /* A graph's lists hold K + 1 points: each point finds itself first
         * (and the plan is made for them: an automatic engine at K = 1024
         * is brute force, the k-d tree stopping at 1024). */
        .k = job->knn.k + (job->task == LBK_TASK_GRAPH),
        .metric = job->knn.metric,
        .engine = job->knn.engine,
        .split = job->tree.split,
        .sort = job->tree.sort,
        .verify = job->tree.verify,
        .partition = job->mpi.partition,
        .merge = job->mpi.merge,
        .batch = job->device.batch,
        .groups = job->device.groups,
        .memory_mb = job->device.memory_mb,
    };
}
