/* The CUKNN-style full-sort selection (every block of S distances bitonic-
 * sorted, its K smallest kept, until one block holds them all): the baseline
 * the benchmarks compare the brute engine's parallel bubble with. It replaces
 * only the engine's selection (src/engines/brute_select.h); the distance
 * kernels, memory plan and batching are the engine's. Kernels:
 * bench/cuknn_select.cl. Not part of lbknn. */
#ifndef LBK_CUKNN_BASELINE_H
#define LBK_CUKNN_BASELINE_H

#include "brute.h"

/* lbk_brute_create with the full-sort selection in place of the bubble
 * (params->selector is ignored; the L2 prefilter does not apply). Query,
 * time and destroy the engine as any other. */
lbk_status lbk_cuknn_create(lbk_device *dev, const lbk_dataset *reference,
                            const lbk_brute_params *params, lbk_brute **out);

#endif
