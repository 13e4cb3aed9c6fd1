#include "knn_oracle.h"

#include <math.h>
#include <stdlib.h>

/* volatile stops the compiler contracting a*a + s into an FMA, which the
 * engines are forbidden to do too. */
float oracle_key(const float *a, const float *b, int dim, int metric)
{
    float s = 0.0f;
    for (int j = 0; j < dim; j++) {
        const float d = a[j] - b[j];
        if (metric == 0) {
            volatile float sq = d * d;
            s = s + sq;
        } else if (metric == 1) {
            s = s + fabsf(d);
        } else if (metric == 2) {
            s = fmaxf(s, fabsf(d));
        } else {
            volatile float p = a[j] * b[j];
            s = s + p;
        }
    }
    if (metric >= 3)
        return isnan(s) ? INFINITY : -s;
    return s;
}

void oracle_normalize(float *x, uint32_t rows, int dim)
{
    for (uint32_t i = 0; i < rows; i++) {
        float *row = x + (size_t)i * dim;
        double sum = 0.0;
        for (int j = 0; j < dim; j++)
            sum += (double)row[j] * (double)row[j];
        if (sum > 0.0) {
            const double norm = sqrt(sum);
            for (int j = 0; j < dim; j++)
                row[j] = (float)(row[j] / norm);
        }
    }
}

float oracle_distance(float key, int metric)
{
    if (metric == 0)
        return sqrtf(key);
    if (metric == 4)
        return -key;
    if (metric == 3) {
        const float d = 1.0f + key;
        return d < 0.0f ? 0.0f : d > 2.0f ? 2.0f : d;
    }
    return key;
}

typedef struct {
    float key;
    uint32_t index;
} pair;

static int pair_cmp(const void *a, const void *b)
{
    const pair *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int oracle_knn(const float *ref, uint32_t n, const float *queries, uint32_t nq, int dim,
               int metric, int k, float *keys, uint32_t *index)
{
    pair *all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return -1;
    for (uint32_t q = 0; q < nq; q++) {
        for (uint32_t i = 0; i < n; i++) {
            all[i].key =
                oracle_key(queries + (size_t)q * dim, ref + (size_t)i * dim, dim, metric);
            all[i].index = i;
        }
        qsort(all, n, sizeof *all, pair_cmp);
        for (int s = 0; s < k; s++) {
            keys[(size_t)q * k + s] = (uint32_t)s < n ? all[s].key : INFINITY;
            index[(size_t)q * k + s] = (uint32_t)s < n ? all[s].index : UINT32_MAX;
        }
    }
    free(all);
    return 0;
}

int oracle_radius_inside(float key, int metric, float radius)
{
    if (metric == 4)
        return -key >= radius;
    return oracle_distance(key, metric) <= radius;
}

int oracle_radius(const float *ref, uint32_t n, const float *queries, uint32_t nq, int dim,
                  int metric, const float *radii, uint64_t *offsets, float **keys,
                  uint32_t **index)
{
    *keys = NULL;
    *index = NULL;
    pair *all = malloc((n ? n : 1) * sizeof *all);
    uint64_t cap = 16, used = 0;
    float *k = malloc(cap * sizeof *k);
    uint32_t *ix = malloc(cap * sizeof *ix);
    if (!all || !k || !ix)
        goto fail;
    offsets[0] = 0;
    for (uint32_t q = 0; q < nq; q++) {
        uint32_t m = 0;
        for (uint32_t i = 0; i < n; i++) {
            const float key =
                oracle_key(queries + (size_t)q * dim, ref + (size_t)i * dim, dim, metric);
            if (oracle_radius_inside(key, metric, radii[q]))
                all[m++] = (pair){key, i};
        }
        qsort(all, m, sizeof *all, pair_cmp);
        if (used + m > cap) {
            while (used + m > cap)
                cap *= 2;
            float *k2 = realloc(k, cap * sizeof *k);
            if (k2)
                k = k2;
            uint32_t *ix2 = realloc(ix, cap * sizeof *ix);
            if (ix2)
                ix = ix2;
            if (!k2 || !ix2)
                goto fail;
        }
        for (uint32_t s = 0; s < m; s++) {
            k[used + s] = all[s].key;
            ix[used + s] = all[s].index;
        }
        used += m;
        offsets[q + 1] = used;
    }
    free(all);
    *keys = k;
    *index = ix;
    return 0;
fail:
    free(all);
    free(k);
    free(ix);
    return -1;
}

/* ---- exact integer keys (uint8 and int8 points) ---- */

int64_t oracle_int_key(const int32_t *a, const int32_t *b, int dim, int metric)
{
    int64_t s = 0;
    for (int j = 0; j < dim; j++) {
        const int64_t d = (int64_t)a[j] - b[j], ad = d < 0 ? -d : d;
        if (metric == 0)
            s += d * d;
        else if (metric == 1)
            s += ad;
        else if (metric == 2)
            s = ad > s ? ad : s;
        else
            s += (int64_t)a[j] * b[j];
    }
    return metric >= 3 ? -s : s;
}

typedef struct {
    int64_t key;
    uint32_t index;
} int_pair;

static int int_pair_cmp(const void *a, const void *b)
{
    const int_pair *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int oracle_knn_int(const int32_t *ref, uint32_t n, const int32_t *queries, uint32_t nq, int dim,
                   int metric, int k, int64_t *keys, uint32_t *index)
{
    int_pair *all = malloc((n ? n : 1) * sizeof *all);
    if (!all)
        return -1;
    for (uint32_t q = 0; q < nq; q++) {
        for (uint32_t i = 0; i < n; i++) {
            all[i].key =
                oracle_int_key(queries + (size_t)q * dim, ref + (size_t)i * dim, dim, metric);
            all[i].index = i;
        }
        qsort(all, n, sizeof *all, int_pair_cmp);
        for (int s = 0; s < k; s++) {
            keys[(size_t)q * k + s] = (uint32_t)s < n ? all[s].key : INT64_MAX;
            index[(size_t)q * k + s] = (uint32_t)s < n ? all[s].index : UINT32_MAX;
        }
    }
    free(all);
    return 0;
}

float oracle_int_key_float(int64_t key, int metric)
{
    /* The float32 rounding of the exact key; the inner product's zero is
     * -0, as its negated float sum is. */
    if (key == 0 && metric >= 3)
        return -0.0f;
    return (float)key;
}
