/* What each layer below reads of the options, from a job: the one place
 * where the job's keys meet the index's parameters, for both of the
 * index's clients (`lbknn run` and the library), so they cannot read a key
 * differently. */
#ifndef LBK_INDEX_PARAMS_H
#define LBK_INDEX_PARAMS_H

#include "index.h"
#include "job.h"

/* task graph: k is knn.k + 1 (each point's list holds itself first). */
void lbk_index_params_from_job(const lbk_job *job, lbk_index_params *params);

#endif
