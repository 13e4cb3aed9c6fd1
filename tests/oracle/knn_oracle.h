/* Independent host oracle for exact kNN: a plain double loop with a full sort,
 * written without any code from src/ so that engines are checked against
 * something they do not share. Keys follow the rule in src/knn.h (float,
 * j ascending, separate multiply and add), ordered by (key, global id). */
#ifndef LBK_TEST_KNN_ORACLE_H
#define LBK_TEST_KNN_ORACLE_H

#include <stdint.h>

/* metric: 0 = L2 (squared key), 1 = L1, 2 = Linf, 3 = cosine and 4 = inner
 * product (both: key = -(sum of products), a NaN sum +inf; cosine's rows
 * must be normalised first, with oracle_normalize). For each of nq queries,
 * writes k (key, index) pairs; slots beyond n get key +inf, index UINT32_MAX.
 * Returns 0, or -1 when out of memory. */
int oracle_knn(const float *ref, uint32_t n, const float *queries, uint32_t nq, int dim,
               int metric, int k, float *keys, uint32_t *index);

/* The key of one pair, as every engine must compute it. */
float oracle_key(const float *a, const float *b, int dim, int metric);

/* Cosine's normalisation as docs/design.md defines it: per row, the sum of
 * squares in double (j ascending), its square root, each value divided by
 * it in double and rounded to float; zero rows stay zero. */
void oracle_normalize(float *x, uint32_t rows, int dim);

/* The distance an output file reports for a key (L2: sqrt, cosine: 1 + key
 * clipped to [0, 2], inner product: -key). */
float oracle_distance(float key, int metric);

/* Radius search: whether a key's point is inside radius r (its reported
 * distance <= r; inner product: its dot product -key >= r). */
int oracle_radius_inside(float key, int metric, float radius);

/* Every reference point inside query q's radius radii[q], by the reported
 * distance (not a key bound), sorted by (key, index): query q's in
 * [offsets[q], offsets[q + 1]) of *keys and *index (malloc'd; the caller
 * frees them). offsets has nq + 1 entries. Returns 0, or -1 when out of
 * memory. */
int oracle_radius(const float *ref, uint32_t n, const float *queries, uint32_t nq, int dim,
                  int metric, const float *radii, uint64_t *offsets, float **keys,
                  uint32_t **index);

/* Exact integer kNN (uint8 and int8 points, values given as int32): keys
 * in 64-bit, L2 sum d^2, L1 sum |d|, Linf max |d|, inner product -(sum of
 * products), ordered by (key, index); slots beyond n: key INT64_MAX, index
 * UINT32_MAX. Returns 0, or -1 when out of memory. */
int64_t oracle_int_key(const int32_t *a, const int32_t *b, int dim, int metric);
int oracle_knn_int(const int32_t *ref, uint32_t n, const int32_t *queries, uint32_t nq, int dim,
                   int metric, int k, int64_t *keys, uint32_t *index);
/* The float32 key an engine reports for an exact integer key. */
float oracle_int_key_float(int64_t key, int metric);

#endif
