#include "rerank.h"

#include "brute_scale.h"
#include "lbk_shared.h"

#include <math.h>

/* An upper bound of the exact key from its lower bound L: L + 2c(|q|^2 +
 * |r|^2) for L2 (squared norms), L + 2c|q||r| for IP and COSINE (the bound
 * is symmetric around the dot product). The 1e-6 margins and the slack in c
 * (lbk_brute_prefilter_bound_c) cover the rounding of these sums. */
static float upper_bound(const lbk_rerank *r, float lower, float qn, float rn)
{
    if (r->metric == LBK_METRIC_COSINE || r->metric == LBK_METRIC_IP) {
        const float u = lower + 2.0f * r->bound_c * (qn * rn);
        return u + fabsf(u) * 1e-6f;
    }
    return (lower + 2.0f * r->bound_c * (qn + rn)) * 1.000001f;
}

/* With U_K the K-th smallest upper bound among the candidates, every row
 * left out has exact key >= its lower bound >= L_K' > U_K >= the K-th
 * smallest exact key, so it cannot be a neighbour even by a tie. True when
 * that holds, or when every row of the shard is a candidate. */
static bool settled(const lbk_rerank *r, float qn, const float *ck, const uint32_t *ci)
{
    float upper[LBK_RERANK_KP_MAX];
    for (int s = 0; s < r->kp; s++) {
        if (ci[s] == LBK_NO_INDEX)
            return true;
        const float v = upper_bound(r, ck[s], qn, r->rnorm[ci[s]]);
        int t = s; /* insertion: upper[0..s] ascending */
        while (t > 0 && upper[t - 1] > v) {
            upper[t] = upper[t - 1];
            t--;
        }
        upper[t] = v;
    }
    return ck[r->kp - 1] > upper[r->k - 1];
}

/* A float16 row's key: each value converted exactly, and normalised as the
 * float32 path's rows are where the metric is cosine. */
static float half_key(const lbk_rerank *r, const float *q, uint32_t i)
{
    const uint16_t *row = r->half_rows + (uint64_t)i * (uint64_t)r->dim;
    float hi = 1.0f, lo = 0.0f;
    if (r->rscale) {
        const size_t o = (size_t)(i / r->vw) * 2 * r->vw + i % r->vw;
        hi = r->rscale[o];
        lo = r->rscale[o + r->vw];
    }
    float s = 0.0f;
    for (int j = 0; j < r->dim; j++) {
        const float x = lbk_brute_scale_half(row[j]);
        s = lbk_key_step(s, q[j], r->rscale ? lbk_brute_scale_apply(x, hi, lo) : x,
                         (int)r->metric);
    }
    return lbk_key_finish(s, (int)r->metric);
}

static float exact_key(const lbk_rerank *r, const float *q, uint32_t i)
{
    if (r->half_rows)
        return half_key(r, q, i);
    const float *row = r->rows + (uint64_t)i * (uint64_t)r->dim;
    float s = 0.0f;
    for (int j = 0; j < r->dim; j++)
        s = lbk_key_step(s, q[j], row[j], (int)r->metric);
    return lbk_key_finish(s, (int)r->metric);
}

bool lbk_rerank_query(const lbk_rerank *r, const float *q, float qn, const float *ck,
                      const uint32_t *ci, float *keys, uint32_t *index)
{
    if (!settled(r, qn, ck, ci))
        return false;
    for (int s = 0; s < r->k; s++) {
        keys[s] = INFINITY;
        index[s] = LBK_NO_INDEX;
    }
    for (int s = 0; s < r->kp && ci[s] != LBK_NO_INDEX; s++) {
        const float key = exact_key(r, q, ci[s]);
        if (!lbk_candidate_less(key, ci[s], keys[r->k - 1], index[r->k - 1]))
            continue;
        int t = r->k - 1;
        while (t > 0 && lbk_candidate_less(key, ci[s], keys[t - 1], index[t - 1])) {
            keys[t] = keys[t - 1];
            index[t] = index[t - 1];
            t--;
        }
        keys[t] = key;
        index[t] = ci[s];
    }
    return true;
}
