#include "cascade.h"

#include "log.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

int lbk_cascade_dim(int dim) { return (dim + LBK_CASCADE_GROUP - 1) / LBK_CASCADE_GROUP; }

void lbk_cascade_group_of(const int *perm, int dim, int *group_of)
{
    const int slots = lbk_cascade_dim(dim) * LBK_CASCADE_GROUP;
    for (int s = 0; s < slots; s++)
        if (perm[s] >= 0)
            group_of[perm[s]] = s / LBK_CASCADE_GROUP;
}

void lbk_cascade_coarsen(const float *row, int dim, const int *group_of, float *out)
{
    const int dc = lbk_cascade_dim(dim);
    for (int g = 0; g < dc; g++)
        out[g] = 0.0f;
    for (int j = 0; j < dim; j++)
        out[group_of[j]] += row[j];
    for (int g = 0; g < dc; g++)
        out[g] *= 0.5f;
}

#define GROUPING_SAMPLE 256

double lbk_cascade_capture(const float *x, size_t rows, int dim, const int *group_of,
                           float *scratch)
{
    const size_t m = rows < GROUPING_SAMPLE ? rows : GROUPING_SAMPLE, d = (size_t)dim;
    const int dc = lbk_cascade_dim(dim);
    float *a = scratch, *b = scratch + dc;
    double coarse = 0.0, full = 0.0;
    for (size_t i = 0; i + 1 < m; i += 2) {
        const float *p = x + (i * rows / m) * d, *q = x + ((i + 1) * rows / m) * d;
        for (size_t j = 0; j < d; j++)
            full += ((double)p[j] - q[j]) * ((double)p[j] - q[j]);
        lbk_cascade_coarsen(p, dim, group_of, a);
        lbk_cascade_coarsen(q, dim, group_of, b);
        for (int g = 0; g < dc; g++)
            coarse += ((double)a[g] - b[g]) * ((double)a[g] - b[g]);
    }
    return full > 0.0 ? coarse / full : 1.0;
}

static void consecutive(int dim, int *perm)
{
    const int slots = lbk_cascade_dim(dim) * LBK_CASCADE_GROUP;
    for (int j = 0; j < slots; j++)
        perm[j] = j < dim ? j : -1;
}

/* The correlation matrix (d x d) of m sample rows, centred in place. A
 * dimension constant over the sample correlates 1 with the other constant
 * ones (their differences are all zero) and 0 with the rest. */
static void correlation(float *x, size_t m, int d, float *acc, double *corr)
{
    for (int j = 0; j < d; j++) {
        double mean = 0.0;
        for (size_t i = 0; i < m; i++)
            mean += x[i * d + j];
        mean /= (double)m;
        for (size_t i = 0; i < m; i++)
            x[i * d + j] = (float)(x[i * d + j] - mean);
    }
    /* Products summed in float (vectorised; the grouping is a heuristic). */
    for (size_t k = 0; k < (size_t)d * d; k++)
        acc[k] = 0.0f;
    for (size_t i = 0; i < m; i++) {
        const float *row = x + i * d;
        for (int a = 0; a < d; a++) {
            const float v = row[a];
            float *c = acc + (size_t)a * d;
            for (int b = a; b < d; b++)
                c[b] += v * row[b];
        }
    }
    for (size_t k = 0; k < (size_t)d * d; k++)
        corr[k] = acc[k];
    for (int a = 0; a < d; a++)
        for (int b = a + 1; b < d; b++) {
            const double va = corr[(size_t)a * d + a], vb = corr[(size_t)b * d + b];
            const double r = va > 0.0 && vb > 0.0 ? corr[(size_t)a * d + b] / sqrt(va * vb)
                                                  : (va == 0.0 && vb == 0.0 ? 1.0 : 0.0);
            corr[(size_t)a * d + b] = corr[(size_t)b * d + a] = r;
        }
}

/* Greedy groups from the correlations (see cascade.h). */
static void greedy_groups(const double *corr, int d, int *perm, unsigned char *taken)
{
    int slot = 0;
    for (int start = 0; start < d; start++) {
        if (taken[start])
            continue;
        int members = 1;
        perm[slot] = start;
        taken[start] = 1;
        for (; members < LBK_CASCADE_GROUP; members++) {
            int best = -1;
            double best_score = -INFINITY;
            for (int j = 0; j < d; j++) {
                if (taken[j])
                    continue;
                double score = INFINITY;
                for (int t = 0; t < members; t++) {
                    const double c = corr[(size_t)perm[slot + t] * d + j];
                    score = c < score ? c : score;
                }
                if (score > best_score) {
                    best_score = score;
                    best = j;
                }
            }
            if (best < 0)
                break;
            perm[slot + members] = best;
            taken[best] = 1;
        }
        for (; members < LBK_CASCADE_GROUP; members++)
            perm[slot + members] = -1;
        slot += LBK_CASCADE_GROUP;
    }
}

lbk_status lbk_cascade_grouping(const float *x, size_t rows, int dim, int *perm)
{
    consecutive(dim, perm);
    if (dim > LBK_CASCADE_GROUPING_MAX_DIM || rows < 2 || dim <= LBK_CASCADE_GROUP)
        return LBK_OK;
    const size_t m = rows < GROUPING_SAMPLE ? rows : GROUPING_SAMPLE, d = (size_t)dim;
    lbk_status st = LBK_OK;
    float *sample = malloc(m * d * sizeof *sample);
    double *corr = malloc(d * d * sizeof *corr);
    float *acc = malloc(d * d * sizeof *acc);
    unsigned char *taken = calloc(d, 1);
    if (!sample || !corr || !acc || !taken) {
        lbk_error("out of host memory grouping %d dimensions for the cascade", dim);
        st = LBK_ERR_NOMEM;
        goto cleanup;
    }
    for (size_t i = 0; i < m; i++) {
        const float *row = x + (i * rows / m) * d;
        for (size_t j = 0; j < d; j++)
            sample[i * d + j] = row[j];
    }
    correlation(sample, m, dim, acc, corr);
    greedy_groups(corr, dim, perm, taken);
cleanup:
    free(sample);
    free(corr);
    free(acc);
    free(taken);
    return st;
}

/* u = 2^-24, n = dim. The exact key is a sequential float sum of n rounded
 * squares of rounded differences, so key >= D (1 - (n + 2) u) with D the
 * true squared distance; D >= C, the true coarse distance (Cauchy-Schwarz);
 * a row that could be a neighbour has key <= kth, so its coarse bound
 * (<= C + 2^-20 S, see eps) is at most kth / (1 - (n + 2) u) + 2^-20 S <=
 * kth (1 + 1.01 (n + 2) u) + 2^-20 S for n <= 1.6e5. The device computes
 * fl(fl(kth * slope) + eps) >= kth slope (1 - 2u) + eps (1 - u); with slope
 * = 1 + 2 (n + 8) u, rounded up, slope (1 - 2u) >= 1 + 1.01 (n + 2) u. */
float lbk_cascade_slope(int dim)
{
    const double v = 1.0 + 2.0 * ((double)dim + 8.0) * ldexp(1.0, -24);
    float f = (float)v;
    if ((double)f < v)
        f = nextafterf(f, INFINITY);
    return f;
}

/* A coarse value is a float sum of at most 4 values (off by at most
 * gamma_3 sum|x_j|, gamma_3 ~ 3u), halved, so the coarse rows are off from
 * the true halved group sums by at most gamma_3 |x| in norm; with C~ their
 * squared distance, sqrt C >= sqrt C~ - gamma_3 (|q| + |r|), hence C >= C~ -
 * 4 gamma_3 (1 + gamma_3) S >= C~ - 2^-20 S, S = |q|^2 + |r|^2. The bound
 * kernel's value is <= C~ (the prefilter's proof on the coarse rows). eps =
 * 2^-19 (|q|^2 + max |r|^2): twice that term, which covers its own rounding
 * and the norms' rounding to float; FLT_MIN covers halving subnormals. */
float lbk_cascade_eps(double query_norm2, double largest_ref_norm2)
{
    const double v = ldexp(query_norm2 + largest_ref_norm2, -19) + FLT_MIN;
    float f = (float)v;
    if ((double)f < v)
        f = nextafterf(f, INFINITY);
    return f;
}
