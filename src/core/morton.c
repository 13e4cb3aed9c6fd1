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

/* The box the codes quantise: per used coordinate its low end and scale. */
typedef struct {
    int dim, used;
    float lo[3], scale[3];
} morton_frame;

static morton_frame frame_of(const float *q, uint64_t nq, int dim)
{
    morton_frame f = {.dim = dim, .used = dim < 3 ? dim : 3};
    for (int j = 0; j < f.used && nq > 0; j++) {
        float hi = q[j];
        f.lo[j] = q[j];
        for (uint64_t i = 1; i < nq; i++) {
            const float v = q[i * (uint64_t)dim + (uint64_t)j];
            f.lo[j] = v < f.lo[j] ? v : f.lo[j];
            hi = v > hi ? v : hi;
        }
        const float span = hi - f.lo[j];
        f.scale[j] = span > 0 && isfinite(span) ? 1023.0f / span : 0.0f;
    }
    return f;
}

static uint32_t code_of(const morton_frame *f, const float *x)
{
    uint32_t code = 0;
    for (int j = 0; j < f->used; j++) {
        const float t = (x[j] - f->lo[j]) * f->scale[j];
        const uint32_t cell = t > 0 ? (t < 1023.0f ? (uint32_t)t : 1023u) : 0u;
        code |= spread10(cell) << j;
    }
    return code;
}

void lbk_morton_codes(const float *q, uint64_t nq, int dim, uint32_t *codes)
{
    const morton_frame f = frame_of(q, nq, dim);
    for (uint64_t i = 0; i < nq; i++)
        codes[i] = code_of(&f, q + i * (uint64_t)dim);
}

const uint32_t *lbk_morton_radix_order(uint32_t *codes, uint32_t *codes2, uint32_t *order,
                                       uint32_t *order2, uint64_t nq, bool identity)
{
    uint32_t bits = 0;
    for (uint64_t i = 0; i < nq; i++) {
        if (identity)
            order[i] = (uint32_t)i;
        bits |= codes[i];
    }
    for (int shift = 0; shift < 30 && (shift == 0 || bits >> shift); shift += 10) {
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

#define TOP_SHIFT 20 /* the codes' top 10 bits of 30 */
#define LOW_BITS ((1u << TOP_SHIFT) - 1)

/* Each point's bucket (the top 10 bits of its code): bucket b's points are
 * at start[b], ... of order, in index order, with their codes' low bits in
 * low; start[1024] = n. */
static void top_buckets(const morton_frame *f, const float *points, uint64_t n,
                        uint64_t start[1025], uint32_t *order, uint32_t *low)
{
    memset(start, 0, 1025 * sizeof *start);
    for (uint64_t i = 0; i < n; i++)
        start[(code_of(f, points + i * (uint64_t)f->dim) >> TOP_SHIFT) + 1]++;
    for (int b = 0; b < 1024; b++)
        start[b + 1] += start[b];
    uint64_t at[1024];
    memcpy(at, start, sizeof at);
    for (uint64_t i = 0; i < n; i++) {
        const uint32_t code = code_of(f, points + i * (uint64_t)f->dim);
        const uint64_t to = at[code >> TOP_SHIFT]++;
        order[to] = (uint32_t)i;
        low[to] = code & LOW_BITS;
    }
}

/* The Morton order sorts the top 10 bits first, straight into `order`, and
 * then each bucket by its low 20 bits with scratch of the largest bucket's
 * size: 4 bytes a point and 8 a point of that bucket, where three radix
 * passes over all points took 12 bytes a point (120 MB for 1e7 points: the
 * peak of a count-only radius graph, issue 40). The result is the three
 * passes' one: by code, ties in index order. */
lbk_status lbk_morton_order(const float *points, uint64_t n, int dim, uint32_t *order)
{
    const morton_frame f = frame_of(points, n, dim);
    lbk_status st = LBK_OK;
    uint32_t *low = lbk_alloc_large_logged(n + 1, sizeof *low, "Morton codes", &st);
    uint64_t start[1025], most = 0;
    if (st == LBK_OK)
        top_buckets(&f, points, n, start, order, low);
    for (int b = 0; b < 1024 && st == LBK_OK; b++)
        most = start[b + 1] - start[b] > most ? start[b + 1] - start[b] : most;
    uint32_t *scratch =
        lbk_alloc_large_logged(2 * most + 1, sizeof *scratch, "Morton order", &st);
    for (int b = 0; b < 1024 && st == LBK_OK; b++) {
        const uint64_t m = start[b + 1] - start[b];
        uint32_t *in = order + start[b];
        if (m < 2)
            continue;
        const uint32_t *sorted =
            lbk_morton_radix_order(low + start[b], scratch, in, scratch + m, m, false);
        if (sorted != in)
            memcpy(in, sorted, (size_t)m * sizeof *in);
    }
    lbk_alloc_large_free(low);
    lbk_alloc_large_free(scratch);
    return st;
}
