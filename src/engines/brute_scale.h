/* float16 shards on the brute engine's host side, private to it
 * (docs/design.md "Compact reference points"): the exact conversion of a
 * binary16 value, and cosine's row factors. Cosine over float16 points
 * keeps the rows as read; row r's normalised value of x is
 * fma(x, hi_r, x * lo_r), checked here at set-up to equal the normaliser's
 * (float)((double)x / |r|) (normalize.h) for every value of the row, so the
 * kernels, the bounds' norms and the re-rank all see the float32 path's
 * normalised rows, bit for bit, without storing them. */
#ifndef LBK_BRUTE_SCALE_H
#define LBK_BRUTE_SCALE_H

#include "brute.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* A binary16 value as float32 (exact: every binary16 value is a float32). */
static inline float lbk_brute_scale_half(uint16_t bits)
{
    const uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
    const uint32_t exponent = bits >> 10 & 0x1fu, mantissa = bits & 0x3ffu;
    if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24, exact */
        const float v = (float)mantissa * 0x1p-24f;
        return sign ? -v : v;
    }
    const uint32_t u =
        sign | (exponent == 31 ? 0x7f800000u : (exponent + 112u) << 23) | mantissa << 13;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Value x of a row with factors hi, lo: its normalised value. */
static inline float lbk_brute_scale_apply(float x, float hi, float lo)
{
    return fmaf(x, hi, x * lo);
}

/* The factors of a (float32) row: true when fma(x, hi, x * lo) equals the
 * normaliser's value for each of its values (a zero row: 1 and 0). */
bool lbk_brute_scale_factors(const float *x, int dim, float *hi, float *lo);

/* Cosine: every shard row's factors, on the host (e->host_rscale) and the
 * device (e->rscale), [block][hi lanes, lo lanes] per block of vw rows. */
lbk_status lbk_brute_scale_shard(lbk_brute *e, const uint16_t *rows);

/* Row i of a float16 shard as the float32 path sees it: converted, and
 * normalised where the engine scales (cosine). */
void lbk_brute_scale_row(const lbk_brute *e, const uint16_t *rows, uint64_t i, float *out);

/* lbk_brute_norms over a float16 shard's rows as lbk_brute_scale_row gives
 * them; the same result as on those rows in float32. */
bool lbk_brute_scale_norms(const lbk_brute *e, const uint16_t *rows, float *out, bool *nomem);

#endif
