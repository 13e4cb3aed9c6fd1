#include "morton.h"

#include "alloc_large.h"

#include <math.h>
#include <string.h>

static uint32_t spread10(uint32_t v)
{
    v &= 0x3ff;
    v = (v | v << 16) & 0x030000ffu;
    v = (v | v << 8) & 0x0300f00fu;
    v = (v | v << 4) & 0x030c30c3u;
    v = (v | v << 2) & 0x09249249u;
    return v;
}

void lbk_morton_codes(const float *q, uint64_t nq, int dim, uint32_t *codes)
{
    const int used = dim < 3 ? dim : 3;
    float lo[3] = {0, 0, 0}, scale[3] = {0, 0, 0};
    for (int j = 0; j < used && nq > 0; j++) {
        float hi = q[j];
        lo[j] = q[j];
        for (uint64_t i = 1; i < nq; i++) {
            const float v = q[i * (uint64_t)dim + (uint64_t)j];
            lo[j] = v < lo[j] ? v : lo[j];
            hi = v > hi ? v : hi;
        }
        const float span = hi - lo[j];
        scale[j] = span > 0 && isfinite(span) ? 1023.0f / span : 0.0f;
    }
    for (uint64_t i = 0; i < nq; i++) {
        uint32_t code = 0;
        for (int j = 0; j < used; j++) {
            const float t = (q[i * (uint64_t)dim + (uint64_t)j] - lo[j]) * scale[j];
            const uint32_t cell = t > 0 ? (t < 1023.0f ? (uint32_t)t : 1023u) : 0u;
            code |= spread10(cell) << j;
        }
        codes[i] = code;
    }
}

const uint32_t *lbk_morton_radix_order(uint32_t *codes, uint32_t *codes2, uint32_t *order,
                                       uint32_t *order2, uint64_t nq)
{
    for (uint64_t i = 0; i < nq; i++)
        order[i] = (uint32_t)i;
    for (int shift = 0; shift < 30; shift += 10) {
        uint64_t start[1024] = {0};
        for (uint64_t i = 0; i < nq; i++)
            start[(codes[i] >> shift) & 1023u]++;
        uint64_t sum = 0;
        for (int b = 0; b < 1024; b++) {
            const uint64_t c = start[b];
            start[b] = sum;
            sum += c;
        }
        for (uint64_t i = 0; i < nq; i++) {
            const uint64_t to = start[(codes[i] >> shift) & 1023u]++;
            codes2[to] = codes[i];
            order2[to] = order[i];
        }
        uint32_t *swap = codes;
        codes = codes2;
        codes2 = swap;
        swap = order;
        order = order2;
        order2 = swap;
    }
    return order;
}

lbk_status lbk_morton_order(const float *points, uint64_t n, int dim, uint32_t *order)
{
    lbk_status st = LBK_OK;
    uint32_t *codes = lbk_alloc_large_logged(n * 2, sizeof *codes, "Morton codes", &st);
    uint32_t *other = lbk_alloc_large_logged(n, sizeof *other, "Morton order", &st);
    if (st == LBK_OK) {
        lbk_morton_codes(points, n, dim, codes);
        const uint32_t *sorted = lbk_morton_radix_order(codes, codes + n, order, other, n);
        if (sorted != order)
            memcpy(order, sorted, (size_t)n * sizeof *order);
    }
    lbk_alloc_large_free(codes);
    lbk_alloc_large_free(other);
    return st;
}
