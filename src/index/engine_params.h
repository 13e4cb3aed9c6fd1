/* The engine's parameters from a job: the one place where the job's knn,
 * device and tree sections meet the engine interface (engine.h), which
 * knows nothing of jobs. */
#ifndef LBK_ENGINE_PARAMS_H
#define LBK_ENGINE_PARAMS_H

#include "engine.h"
#include "job.h"

/* `tuning`: kept by pointer (NULL = derived from the device). */
void lbk_engine_params_from_job(const lbk_job *job, const lbk_tuning *tuning,
                                lbk_engine_params *params);

#endif
