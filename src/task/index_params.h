/* What each layer below reads of the options, from a job: the one place
 * where the job's keys meet the index's parameters, for both of the
 * index's clients (`lbknn run` and the library), so they cannot read a key
 * differently. */
#ifndef LBK_INDEX_PARAMS_H
#define LBK_INDEX_PARAMS_H

#include "index.h"
#include "job.h"
#include "status.h"

/* task graph: k is knn.k + 1 (each point's list holds itself first). */
void lbk_index_params_from_job(const lbk_job *job, lbk_index_params *params);

/* The keys the library's options take (lbknn_options_set), in the order
 * its message names them, NULL-terminated: those that
 * lbk_index_params_from_job, lbk_device_request_from_job and
 * lbk_device_tuning_from_job read, and no other (`task`, which the first
 * reads for `lbknn run`'s graph, stays at its default in the library).
 * tests/api/test_api_option_keys.c changes every other key of the job and
 * checks that none of the three reads it. */
extern const char *const lbk_index_params_option_keys[];

/* LBK_OK when `key` is one of them; otherwise LBK_ERR_CONFIG, logged as
 * "KEY: not an option of the library (it takes: knn.k, ..., device.*, ...)". */
lbk_status lbk_index_params_check_option(const char *key);

#endif
