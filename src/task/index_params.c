#include "index_params.h"

#include "log.h"

#include <string.h>

/* Grouped by section, so that the message can name a whole one as
 * "section.*" (lbk_job_join_names). */
const char *const lbk_index_params_option_keys[] = {
    /* lbk_index_params_from_job (and the api's own reads of the options:
     * knn.k, knn.metric, mpi.partition) */
    "knn.k", "knn.metric", "knn.engine",
    /* lbk_device_request_from_job, then lbk_index_params_from_job */
    "device.type", "device.list", "device.threads", "device.batch", "device.groups",
    "device.memory_mb",
    /* lbk_index_params_from_job */
    "tree.split", "tree.sort", "tree.verify",
    /* lbk_device_tuning_from_job */
    "tuning.cache", "tuning.lanes", "tuning.block_queries", "tuning.block_vectors",
    "tuning.tile_blocks", "tuning.slice", "tuning.segment_log2",
    /* lbk_index_params_from_job */
    "mpi.partition", "mpi.merge",
    /* lbk_index_params_from_job (compact_asked), the typed build's (lbknn_typed.c) */
    "reference.type", NULL};

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
        .compact_asked =
            job->reference.type != LBK_DTYPE_AUTO && job->reference.type != LBK_DTYPE_FLOAT32,
    };
}

lbk_status lbk_index_params_check_option(const char *key)
{
    for (const char *const *k = lbk_index_params_option_keys; *k; k++)
        if (strcmp(*k, key) == 0)
            return LBK_OK;
    char keys[512];
    lbk_job_join_names(lbk_index_params_option_keys, keys, sizeof keys);
    lbk_error("%.64s: not an option of the library (it takes: %s)", key, keys);
    return LBK_ERR_CONFIG;
}
