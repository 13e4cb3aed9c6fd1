/* One interface over the two per-shard engines, and the `auto` rule that picks
 * between them. The run driver sees only this. */
#ifndef LBK_ENGINE_H
#define LBK_ENGINE_H

#include "job.h"
#include "dataset.h"
#include "device.h"
#include "knn.h"
#include "status.h"
#include "tuning.h"

typedef struct lbk_engine_state lbk_engine_state;

/* Resolve the job's knn.engine for this data: returns KDTREE or BRUTE and a
 * sentence saying why (static string). `auto` never picks the tree for
 * cosine or ip, or for K above LBK_TREE_K_MAX. */
lbk_engine lbk_engine_resolve(const lbk_job *job, int dim, uint64_t reference_rows,
                              const char **why);

/* `tuning`: the device's kernel parameters (tuning.h); NULL = derived from
 * the device. */
lbk_status lbk_engine_create(lbk_device *dev, const lbk_job *job, lbk_engine engine,
                             const lbk_dataset *reference, const lbk_tuning *tuning,
                             lbk_engine_state **out);
uint64_t lbk_engine_max_batch(const lbk_engine_state *state);
lbk_status lbk_engine_query(lbk_engine_state *state, const float *queries, uint64_t nq,
                            lbk_knn_result *result);
/* Peak device bytes: the tree's build peak, or the built tree plus the
 * buffers of a query call of `largest_query` queries, whichever is larger;
 * 0 for brute force (not tracked) and before a build. */
uint64_t lbk_engine_peak_device_bytes(const lbk_engine_state *state, uint64_t largest_query);
/* Extra lines for the report, e.g. tree peak memory; may be empty. */
void lbk_engine_describe(const lbk_engine_state *state, char *buf, size_t size);
void lbk_engine_destroy(lbk_engine_state *state);

lbk_status lbk_knn_result_alloc(lbk_knn_result *result, uint64_t queries, int k);
void lbk_knn_result_free(lbk_knn_result *result);

#endif
