/* The brute-force engine of PBKNN (He et al. 2016): a tiled distance kernel,
 * grouped parallel-bubble selection (G groups per query, K work-items each),
 * and a final selection of K out of G*K. Also the CUKNN-style full-sort
 * baseline, used only by the benchmark. */
#ifndef LBK_BRUTE_H
#define LBK_BRUTE_H

#include "config.h"
#include "dataset.h"
#include "device.h"
#include "knn.h"
#include "status.h"

typedef struct lbk_brute lbk_brute;

typedef enum {
    LBK_SELECT_BUBBLE = 0,   /* the PBKNN engine */
    LBK_SELECT_FULL_SORT     /* CUKNN-style baseline: sort every work-group's distances */
} lbk_brute_select;

typedef struct {
    int k;
    lbk_metric metric;
    int groups;              /* 0 = default */
    lbk_brute_select select;
    uint64_t memory_budget;  /* bytes of device memory the engine may use; 0 = from device */
} lbk_brute_params;

/* Upload the reference shard (may be empty: then every result slot is a pad). */
lbk_status lbk_brute_create(lbk_device *dev, const lbk_dataset *reference,
                            const lbk_brute_params *params, lbk_brute **out);

/* Largest query batch that fits the memory budget. */
uint64_t lbk_brute_max_batch(const lbk_brute *engine);

/* nq <= max batch. `result` is allocated by the caller (lbk_knn_result with
 * queries = nq, k = params.k). */
lbk_status lbk_brute_query(lbk_brute *engine, const float *queries, uint64_t nq,
                           lbk_knn_result *result);

/* Kernel-only timings of the last query call, in seconds (benchmarks). */
typedef struct {
    double distance_s;
    double select_s;
    double final_s;
} lbk_brute_timing;
void lbk_brute_last_timing(const lbk_brute *engine, lbk_brute_timing *timing);

void lbk_brute_destroy(lbk_brute *engine);

#endif
