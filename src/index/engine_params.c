#include "engine_params.h"

void lbk_engine_params_from_index(const lbk_index_params *index, const lbk_tuning *tuning,
                                  lbk_engine_params *params)
{
    *params = (lbk_engine_params){
        .engine = index->engine,
        .k = index->k,
        .metric = index->metric,
        /* device.memory_mb may be as large as INT64_MAX: saturate, because a
         * wrapped product would become a tiny budget (or 0, "from the device"). */
        .memory_budget =
            index->memory_mb > (UINT64_MAX >> 20) ? UINT64_MAX : index->memory_mb << 20,
        .groups = index->groups,
        .split = index->split,
        .sort = index->sort,
        .verify = index->verify,
        .tuning = tuning,
    };
}
