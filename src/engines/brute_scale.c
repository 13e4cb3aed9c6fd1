/* float16 shards on the brute engine's host side (brute_scale.h). */
#include "brute_scale.h"

#include "alloc_large.h"
#include "brute_core_impl.h"
#include "log.h"
#include "normalize.h"
#include "try.h"

#include <stdlib.h>

/* Nudges of lo tried for a row before giving up. hi + lo is within about
 * 2^-48 of 1/n, so fma(x, hi, x * lo) rounds a value within about 2^-47 of
 * x / n once: it differs from the normaliser's (float)(x / n) only where
 * x / n lies that close to a rounding boundary of float32 (about one value
 * in 2^22), and there moving lo by an ulp or a few moves it across. */
#define SCALE_NUDGES 64

/* The first value of the row that the factors miss: +1 when lo must grow,
 * -1 when it must shrink, 0 when none. */
static int miss(const float *x, int dim, double n, float hi, float lo)
{
    for (int j = 0; j < dim; j++) {
        const float want = (float)((double)x[j] / n);
        const float got = lbk_brute_scale_apply(x[j], hi, lo);
        if (got != want)
            return (got < want) == (x[j] > 0.0f) ? 1 : -1;
    }
    return 0;
}

bool lbk_brute_scale_factors(const float *x, int dim, float *hi, float *lo)
{
    const double n = lbk_normalize_norm(x, dim);
    *hi = 1.0f;
    *lo = 0.0f;
    if (n == 0.0)
        return true; /* the normaliser leaves a zero row as it is */
    const double inv = 1.0 / n;
    *hi = (float)inv;
    *lo = (float)(inv - (double)*hi);
    for (int t = 0; t < SCALE_NUDGES; t++) {
        const int dir = miss(x, dim, n, *hi, *lo);
        if (dir == 0)
            return true;
        *lo = nextafterf(*lo, dir > 0 ? INFINITY : -INFINITY);
    }
    return false;
}

void lbk_brute_scale_row(const lbk_brute *e, const uint16_t *rows, uint64_t i, float *out)
{
    const size_t dim = (size_t)e->dim;
    const uint16_t *row = rows + i * dim;
    for (size_t j = 0; j < dim; j++)
        out[j] = lbk_brute_scale_half(row[j]);
    if (!e->host_rscale)
        return;
    const size_t o = (size_t)(i / e->vw) * 2 * e->vw + (size_t)(i % e->vw);
    const float hi = e->host_rscale[o], lo = e->host_rscale[o + e->vw];
    for (size_t j = 0; j < dim; j++)
        out[j] = lbk_brute_scale_apply(out[j], hi, lo);
}

/* Each row's factors into e->host_rscale (x: dim floats of scratch); false
 * at the first row without (its number in *row). */
static bool all_factors(lbk_brute *e, const uint16_t *rows, float *x, uint64_t *row)
{
    const size_t dim = (size_t)e->dim, vw = e->vw;
    for (uint64_t i = 0; i < e->n; i++) {
        for (size_t j = 0; j < dim; j++)
            x[j] = lbk_brute_scale_half(rows[i * dim + j]);
        float *at = e->host_rscale + (i / vw) * 2 * vw + i % vw;
        if (!lbk_brute_scale_factors(x, e->dim, at, at + vw)) {
            *row = i;
            return false;
        }
    }
    return true;
}

lbk_status lbk_brute_scale_shard(lbk_brute *e, const uint16_t *rows)
{
    /* Whole blocks of vw rows, also where the layout is row-major (tiled)
     * and its rows are not padded. */
    const size_t blocks = ((size_t)e->n + e->vw - 1) / e->vw;
    const size_t bytes = 2 * blocks * e->vw * sizeof *e->host_rscale;
    e->host_rscale = lbk_alloc_large(bytes); /* the core frees it */
    float *x = malloc((size_t)e->dim * sizeof *x);
    uint64_t row = 0;
    bool ok = e->host_rscale && x;
    if (ok) {
        memset(e->host_rscale, 0, bytes); /* the padding rows' */
        ok = all_factors(e, rows, x, &row);
    }
    free(x);
    LBK_FAIL_IF(!e->host_rscale || !x, LBK_ERR_NOMEM,
                "out of host memory for the cosine row factors");
    LBK_FAIL_IF(!ok, LBK_ERR_INPUT,
                "brute engine: cosine over float16 points: no float32 factors reproduce the "
                "normalised values of shard row %llu; give reference.type: float32",
                (unsigned long long)row + 1);
    return lbk_brute_device_buffer(e, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes,
                                   e->host_rscale, "the cosine row factors", &e->rscale);
}

/* Rows taken at a time: a multiple of lbk_brute_norms' groups of 4. */
#define SCALE_NORM_ROWS 64

bool lbk_brute_scale_norms(const lbk_brute *e, const uint16_t *rows, float *out, bool *nomem)
{
    const size_t dim = (size_t)e->dim;
    float *x = malloc(SCALE_NORM_ROWS * dim * sizeof *x);
    *nomem = !x;
    bool ok = x != NULL;
    for (uint64_t i = 0; ok && i < e->n; i += SCALE_NORM_ROWS) {
        const uint64_t m = e->n - i < SCALE_NORM_ROWS ? e->n - i : SCALE_NORM_ROWS;
        for (uint64_t r = 0; r < m; r++)
            lbk_brute_scale_row(e, rows, i + r, x + r * dim);
        ok = lbk_brute_norms(e, x, m, dim, out + i);
    }
    free(x);
    return ok;
}
