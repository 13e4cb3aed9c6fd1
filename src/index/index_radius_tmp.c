/* TEMPORARY (radius-index branch only, until radius-engine's kernels land):
 * a host loop standing in for lbk_engine_radius_count/fill. */
#include "index_impl.h"

#include <math.h>

static float key_of(lbk_metric m, const float *q, const float *x, int dim)
{
    float s = 0.0f;
    for (int j = 0; j < dim; j++) {
        if (m == LBK_METRIC_IP || m == LBK_METRIC_COSINE) {
            volatile float p = q[j] * x[j];
            s = s + p;
        } else {
            const float d = q[j] - x[j];
            if (m == LBK_METRIC_L2) {
                volatile float p = d * d;
                s = s + p;
            } else if (m == LBK_METRIC_L1) {
                s = s + fabsf(d);
            } else {
                s = fmaxf(s, fabsf(d));
            }
        }
    }
    if (m == LBK_METRIC_IP || m == LBK_METRIC_COSINE)
        return isnan(s) ? INFINITY : -s;
    return s;
}

lbk_status lbk_index_radius_tmp_count(const lbk_index *s, const float *queries,
                                      const float *bounds, uint64_t nq, uint64_t *counts);
lbk_status lbk_index_radius_tmp_count(const lbk_index *s, const float *queries,
                                      const float *bounds, uint64_t nq, uint64_t *counts)
{
    const int dim = s->shape.dim;
    for (uint64_t q = 0; q < nq; q++) {
        counts[q] = 0;
        for (uint64_t i = 0; i < s->shard.rows; i++)
            counts[q] += key_of(s->params.metric, queries + q * dim, s->shard.points + i * dim,
                                dim) <= bounds[q];
    }
    return LBK_OK;
}

lbk_status lbk_index_radius_tmp_fill(const lbk_index *s, const float *queries,
                                     const float *bounds, uint64_t nq, const uint64_t *offsets,
                                     float *keys, uint32_t *rows);
lbk_status lbk_index_radius_tmp_fill(const lbk_index *s, const float *queries,
                                     const float *bounds, uint64_t nq, const uint64_t *offsets,
                                     float *keys, uint32_t *rows)
{
    const int dim = s->shape.dim;
    for (uint64_t q = 0; q < nq; q++) {
        uint64_t at = offsets[q];
        for (uint64_t i = 0; i < s->shard.rows; i++) {
            const float k =
                key_of(s->params.metric, queries + q * dim, s->shard.points + i * dim, dim);
            if (k <= bounds[q]) {
                /* insertion by (key, row) */
                uint64_t j = at;
                while (j > offsets[q] && keys[j - 1] > k) {
                    keys[j] = keys[j - 1];
                    rows[j] = rows[j - 1];
                    j--;
                }
                keys[j] = k;
                rows[j] = (uint32_t)i;
                at++;
            }
        }
        if (at != offsets[q + 1])
            return LBK_ERR_INTERNAL;
    }
    return LBK_OK;
}
