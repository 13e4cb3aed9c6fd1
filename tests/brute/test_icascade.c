/* The integer L2 cascade (uint8 and int8 shards, brute_icascade.c): its
 * K-lists against the independent exact integer oracle and, bytes and all,
 * the dot path's (prefilter on: no cascade), on smooth clustered rows (the
 * cascade settles them), wide random rows (most queries capped, down to the
 * dot path), dimensions whose coarse rows cross the float32 spans of 64 (65 and
 * 196 coarse dimensions), the 784-d near tie above 2^24, and rows at
 * exactly C4 = 4 kth (the boundary the threshold must keep). */
#include "brute.h"
#include "device.h"
#include "engine.h"
#include "knn_oracle.h"
#include "lbk_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lbk_device *open_device(void)
{
    lbk_test_require_opencl();
    lbk_device *dev = NULL;
    const lbk_device_request req = {.type = LBK_DEVICE_ANY};
    LBK_ASSERT_EQ_INT(lbk_device_open(&req, &dev), LBK_OK);
    return dev;
}

static void to_bytes(const int32_t *ints, size_t count, lbk_dtype type, void *bytes)
{
    for (size_t i = 0; i < count; i++) {
        if (type == LBK_DTYPE_UINT8)
            ((uint8_t *)bytes)[i] = (uint8_t)ints[i];
        else
            ((int8_t *)bytes)[i] = (int8_t)ints[i];
    }
}

/* The decoded K-lists of every query; the cascade's counters summed. */
static bool search(lbk_device *dev, const lbk_dataset *data, lbk_brute_prefilter prefilter, int k,
                   const float *queries, uint32_t nq, lbk_knn_candidate *out,
                   lbk_brute_timing *sum)
{
    const lbk_brute_params params = {.k = k,
                                     .metric = LBK_METRIC_L2,
                                     .distance = LBK_DISTANCE_BLOCKED,
                                     .prefilter = prefilter};
    lbk_brute *engine = NULL;
    if (!LBK_EXPECT_EQ_INT(lbk_brute_create(dev, data, &params, &engine), LBK_OK))
        return false;
    const uint64_t batch = lbk_brute_max_batch(engine);
    float *keys = malloc((size_t)nq * k * sizeof *keys);
    uint32_t *index = malloc((size_t)nq * k * sizeof *index);
    LBK_ASSERT_TRUE(keys && index, "out of memory");
    memset(sum, 0, sizeof *sum);
    bool ok = true;
    for (uint64_t off = 0; off < nq && ok; off += batch) {
        const uint64_t n = nq - off < batch ? nq - off : batch;
        lbk_knn_result r = {
            .queries = n, .k = k, .keys = keys + off * k, .index = index + off * k};
        ok = LBK_EXPECT_EQ_INT(lbk_brute_query(engine, queries + off * data->dim, n, &r), LBK_OK);
        lbk_brute_timing t;
        lbk_brute_last_timing(engine, &t);
        lbk_brute_timing_add(sum, &t);
    }
    for (size_t s = 0; s < (size_t)nq * k; s++)
        out[s] = (lbk_knn_candidate){keys[s], -1, index[s]};
    lbk_engine_int_keys_decode(LBK_METRIC_L2, out, (uint64_t)nq * k);
    free(keys);
    free(index);
    lbk_brute_destroy(engine);
    return ok;
}

/* The forced cascade, the automatic choice and the dot path against the
 * oracle, the first two byte for byte against the dot path; returns the
 * forced run's counters. */
static lbk_brute_timing check_all(lbk_device *dev, const char *what, lbk_dtype type,
                                  const int32_t *ref, uint32_t n, const int32_t *qints,
                                  uint32_t nq, int dim, int k)
{
    void *bytes = malloc((size_t)n * dim + 1);
    float *queries = malloc((size_t)nq * dim * sizeof *queries);
    int64_t *want_k = malloc((size_t)nq * k * sizeof *want_k);
    uint32_t *want_i = malloc((size_t)nq * k * sizeof *want_i);
    lbk_knn_candidate *got = malloc((size_t)3 * nq * k * sizeof *got);
    LBK_ASSERT_TRUE(bytes && queries && want_k && want_i && got, "out of memory");
    to_bytes(ref, (size_t)n * dim, type, bytes);
    for (size_t i = 0; i < (size_t)nq * dim; i++)
        queries[i] = (float)qints[i];
    LBK_ASSERT_EQ_INT(oracle_knn_int(ref, n, qints, nq, dim, 0, k, want_k, want_i), 0);
    const lbk_dataset data = {.rows = n, .dim = dim, .dtype = type, .raw = bytes};
    const lbk_brute_prefilter modes[3] = {LBK_PREFILTER_CASCADE, LBK_PREFILTER_AUTO,
                                          LBK_PREFILTER_ON};
    const char *names[3] = {"forced cascade", "auto", "dot path"};
    lbk_brute_timing forced = {0};
    for (int m = 0; m < 3; m++) {
        lbk_knn_candidate *out = got + (size_t)m * nq * k;
        lbk_brute_timing t;
        if (!search(dev, &data, modes[m], k, queries, nq, out, &t))
            continue;
        if (m == 0)
            forced = t;
        size_t bad = 0;
        for (size_t s = 0; s < (size_t)nq * k; s++) {
            const float want =
                want_i[s] == UINT32_MAX ? INFINITY : oracle_int_key_float(want_k[s], 0);
            if (memcmp(&out[s].key, &want, sizeof want) == 0 && out[s].id == want_i[s])
                continue;
            if (++bad <= 3)
                LBK_EXPECT_EQ_U64(out[s].id, want_i[s], "%s %s %s: query %zu slot %zu", what,
                                  lbk_dtype_name(type), names[m], s / k, s % k);
        }
        LBK_EXPECT_EQ_U64(bad, 0, "%s %s %s: slots that differ from the exact oracle", what,
                          lbk_dtype_name(type), names[m]);
    }
    for (int m = 0; m < 2; m++)
        LBK_EXPECT_TRUE(memcmp(got + (size_t)m * nq * k, got + (size_t)2 * nq * k,
                               (size_t)nq * k * sizeof *got) == 0,
                        "%s %s: the %s's lists are the dot path's, bytes and all", what,
                        lbk_dtype_name(type), names[m]);
    LBK_EXPECT_EQ_U64(forced.cascade_queries, nq, "%s %s: the forced cascade took every query",
                      what, lbk_dtype_name(type));
    free(bytes);
    free(queries);
    free(want_k);
    free(want_i);
    free(got);
    return forced;
}

/* Rows near one of 12 smooth profiles (neighbouring dimensions alike, as
 * in images), or uniform over the type's range (`wide`); queries likewise,
 * every fifth a reference row (zero keys, exact ties), every seventh row a
 * repeat of an earlier one. */
static void fill(int32_t *x, uint32_t rows, int dim, lbk_dtype type, bool wide, uint64_t seed)
{
    lbk_test_rng rng = LBK_TEST_RNG(seed);
    const int lo = type == LBK_DTYPE_UINT8 ? 0 : -128, hi = lo + 255;
    for (uint32_t i = 0; i < rows; i++) {
        int32_t *row = x + (size_t)i * dim;
        if (i >= 7 && i % 7 == 0) {
            memcpy(row, x + (size_t)(i / 7) * dim, (size_t)dim * sizeof *row);
            continue;
        }
        const int c = (int)lbk_test_rng_below(&rng, 12u);
        for (int j = 0; j < dim; j++) {
            int v = wide ? lo + (int)lbk_test_rng_below(&rng, 256u)
                         : lo + 128 + (int)(120.0 * sin(0.05 * j * (c + 1) + c)) - 4 +
                               (int)lbk_test_rng_below(&rng, 9u);
            row[j] = v < lo ? lo : v > hi ? hi : v;
        }
    }
}

static void case_oracle(void)
{
    lbk_device *dev = open_device();
    const lbk_dtype types[2] = {LBK_DTYPE_UINT8, LBK_DTYPE_INT8};
    const int dims[3] = {64, 260, 784};
    const uint32_t n = 1200, nq = 48;
    for (int t = 0; t < 2; t++)
        for (int d = 0; d < 3; d++)
            for (int wide = 0; wide < 2; wide++) {
                const int dim = dims[d];
                const uint64_t seed = 4200u + (uint64_t)t * 100 + (uint64_t)d * 10 + wide;
                printf("seed %llu: %s %d-d %s\n", (unsigned long long)seed,
                       lbk_dtype_name(types[t]), dim, wide ? "wide" : "smooth");
                int32_t *ref = malloc((size_t)n * dim * sizeof *ref);
                int32_t *qs = malloc((size_t)nq * dim * sizeof *qs);
                LBK_ASSERT_TRUE(ref && qs, "out of memory");
                fill(ref, n, dim, types[t], wide, seed);
                fill(qs, nq, dim, types[t], wide, seed + 5000u);
                for (uint32_t q = 0; q < nq; q += 5)
                    memcpy(qs + (size_t)q * dim, ref + (size_t)(q * 17 % n) * dim,
                           (size_t)dim * sizeof *qs);
                const lbk_brute_timing f =
                    check_all(dev, wide ? "wide" : "smooth", types[t], ref, n, qs, nq, dim, 5);
                /* Smooth rows: settled by the cascade, most rows never
                 * checked; wide rows: capped, down to the dot path. */
                if (!wide)
                    LBK_EXPECT_TRUE(f.cascade_fallback_queries < nq / 2 &&
                                        f.cascade_checked_rows < (uint64_t)nq * n / 2,
                                    "%s %d-d smooth: %llu capped, %llu rows checked",
                                    lbk_dtype_name(types[t]), dim,
                                    (unsigned long long)f.cascade_fallback_queries,
                                    (unsigned long long)f.cascade_checked_rows);
                else
                    LBK_EXPECT_TRUE(f.cascade_fallback_queries > 0,
                                    "%s %d-d wide: some queries capped", lbk_dtype_name(types[t]),
                                    dim);
                free(ref);
                free(qs);
            }
    lbk_device_close(dev);
}

/* Exact equality in the bound: a row differing from the query by the same
 * c in every dimension has C4 = sum_g (4c)^2 = 4 D for any grouping of a
 * dimension divisible by 4 into full groups of 4, while a row differing in
 * one dimension by a has C4 = D = a^2. Query: all `mid`. Row 0 (the
 * boundary row): every value mid + 1, D = 64, C4 = 256. Rows 1..14
 * (decoys): one dimension off by +-9..+-15, D = C4 = 81..225. Rows 15..19:
 * one dimension off by 8, D = C4 = 64. K = 5: the K' = 13 smallest C4 are
 * rows 15..19 and 8 decoys, so kth = 64 and the threshold 4 kth = 256 =
 * row 0's C4: only C4 <= 4 kth checks row 0, whose key ties rows 15..19's
 * and whose index is smaller, so it comes first. Then the 784-d near tie
 * (exact keys D and D + 1 above 2^24). K = 5 throughout: the programs are
 * the oracle case's. */
static void case_ties(void)
{
    lbk_device *dev = open_device();
    const lbk_dtype types[2] = {LBK_DTYPE_UINT8, LBK_DTYPE_INT8};
    enum { DIM = 64, N = 20 };
    for (int t = 0; t < 2; t++) {
        const int mid = types[t] == LBK_DTYPE_UINT8 ? 100 : 0;
        int32_t ref[N * DIM], q[DIM];
        for (int j = 0; j < DIM; j++)
            q[j] = mid;
        for (int i = 0; i < N; i++)
            for (int j = 0; j < DIM; j++) {
                const int a = 9 + (i - 1) / 2;
                ref[i * DIM + j] = i == 0    ? mid + 1
                                   : i >= 15 ? mid + (j == 3 * i - 40 ? 8 : 0)
                                             : mid + (j == i * 3 ? (i % 2 ? a : -a) : 0);
            }
        int64_t want_k[5];
        uint32_t want_i[5];
        LBK_ASSERT_EQ_INT(oracle_knn_int(ref, N, q, 1, DIM, 0, 5, want_k, want_i), 0);
        LBK_ASSERT_TRUE(want_i[0] == 0 && want_k[0] == 64 && want_k[4] == 64 && want_i[4] == 18,
                        "the boundary set is what it claims");
        check_all(dev, "C4 = 4 kth", types[t], ref, N, q, 1, DIM, 5);
        /* K above the rows: pads after the three rows' keys. */
        check_all(dev, "K above rows", types[t], ref, 3, q, 1, DIM, 5);
    }
    enum { NDIM = 784, NN = 8 };
    static int32_t near[NN * NDIM], nq[NDIM];
    const int last[NN] = {1, 0, 2, 255, 0, 1, 3, 0};
    for (int i = 0; i < NN; i++)
        for (int j = 0; j < NDIM; j++)
            near[i * NDIM + j] = j == NDIM - 1 ? last[i] : (i == 7 ? 254 : 255);
    check_all(dev, "near tie", LBK_DTYPE_UINT8, near, NN, nq, 1, NDIM, 5);
    lbk_device_close(dev);
}

static const lbk_test_case cases[] = {
    {"oracle", case_oracle},
    {"ties", case_ties},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
