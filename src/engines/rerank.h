/* The prefilter's host half, private to the brute engine: given a query's
 * K' candidates by lower bound (from the device's bound kernel and
 * selection), prove that they hold the query's exact K best in the shard,
 * and rank them by exact keys. The exact keys use the step of
 * kernels/lbk_shared.h, compiled here as in the kernels (no contraction), so
 * they are the device's keys to the bit. Working on the host lets the
 * prefilter serve a shard that is streamed to the device chunk by chunk: the
 * re-rank needs any candidate's row, and the host has them all. */
#ifndef LBK_RERANK_H
#define LBK_RERANK_H

#include "enums.h"

#include <stdbool.h>
#include <stdint.h>

/* Largest K' the host re-rank takes (the prefilter's K' = K + max(K, 8)
 * with K <= 64). */
#define LBK_RERANK_KP_MAX 128

typedef struct {
    lbk_metric metric;
    int k, kp, dim;
    float bound_c;             /* the bound's constant (lbk_brute_prefilter_bound_c) */
    const float *rows;         /* the shard, row-major (the caller's points), or */
    const uint16_t *half_rows; /* a float16 shard's (binary16 bits), with */
    const float *rscale;       /* cosine's row factors (brute_scale.h) or NULL, */
    uint32_t vw;               /* in blocks of vw rows */
    const float *rnorm;        /* the bound's norm of every shard row */
} lbk_rerank;

/* q: the query's row and its bound norm qn; ck/ci: its K' candidates,
 * sorted by lower bound, padded with (+inf, LBK_NO_INDEX). True when the
 * bound proves that no other row can be among the K best (even by a tie);
 * then keys/index (K slots) get the K best by (exact key, index). False:
 * the query needs the exact path. */
bool lbk_rerank_query(const lbk_rerank *r, const float *q, float qn, const float *ck,
                      const uint32_t *ci, float *keys, uint32_t *index);

#endif
