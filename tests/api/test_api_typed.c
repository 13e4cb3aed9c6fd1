/* The typed doors of lbknn.h (lbknn_index_build_typed, the _typed searches)
 * against an oracle written here: uint8 and int8 keys as exact integers
 * (int64), float16 data on a grid where every float32 sum is exact, so the
 * float64 keys are the library's; distances as lbknn.h reports them (l2
 * sqrtf of the key rounded to float32, l1 and linf the key, ip the dot
 * product), lists in (key, id) order. Each type, metric and engine, with
 * typed and float32 queries; a near tie above 2^24 that float32 sums would
 * order by id; classify and regress; the self and radius searches that
 * widen a compact index (and say so); a compact k-d tree index saved and
 * loaded at its type; the refused types and values. With
 * --mpi each rank passes its own shard (the cases of its own partitions).
 * Usage: test_api_typed [--mpi]; --cli-write and --cli-compare serve
 * typed_as_run.sh. */
/* mkdtemp is POSIX 2008. */
#define _POSIX_C_SOURCE 200809L

#include "lbknn.h"

#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { U8 = LBKNN_DTYPE_UINT8, I8 = LBKNN_DTYPE_INT8, F16 = LBKNN_DTYPE_FLOAT16 };
enum { L2, L1, LINF, COSINE, IP };
static const char *metric_names[] = {"l2", "l1", "linf", "cosine", "ip"};
static const char *type_names[] = {"float32", "uint8", "int8", "float16"};

typedef struct {
    int type, metric;
    const char *engine, *partition, *reftype; /* knn.engine, mpi.partition, reference.type */
    int n, nq, dim, k;
    int compact; /* lbknn_index_dtype must be `type` (1), float32 (0), either (-1: the
                  * engine chooser's or the auto rule's call) */
} typed_case;

static const typed_case cases[] = {
    {U8, L2, "brute", "shard", "uint8", 300, 40, 20, 6, 1},
    {U8, L1, "brute", "replicate", "uint8", 150, 30, 7, 5, 1},
    {U8, LINF, "brute", "shard", "auto", 200, 25, 5, 4, 1},
    {U8, IP, "brute", "shard", "uint8", 180, 30, 16, 5, 1},
    {U8, L2, "kdtree", "shard", "auto", 400, 30, 3, 5, -1},
    {I8, L2, "brute", "shard", "int8", 260, 35, 24, 7, 1},
    {I8, IP, "brute", "shard", "int8", 160, 20, 9, 3, 1},
    {I8, L1, "auto", "auto", "auto", 220, 30, 4, 5, -1},
    {F16, L2, "brute", "shard", "float16", 240, 30, 16, 5, 1},
    {F16, IP, "brute", "replicate", "float16", 120, 20, 8, 4, 1},
    {F16, LINF, "kdtree", "spatial", "auto", 300, 25, 3, 6, 1},
    {U8, COSINE, "brute", "shard", "auto", 150, 20, 8, 5, 0},
    {U8, L2, "brute", "shard", "float32", 100, 20, 6, 5, 0},
    {U8, L2, "kdtree", "spatial", "uint8", 300, 30, 4, 5, 1},
};

static int rank, ranks, failures;
static bool use_mpi;
#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "FAIL rank %d %s:%d: ", rank, __FILE__, __LINE__);                   \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fprintf(stderr, "\n");                                                               \
            failures++;                                                                          \
        }                                                                                        \
    } while (0)

static uint64_t rng_state;
static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* binary16 bits of v, a multiple of 1/4 with |v| <= 32 (exact). */
static uint16_t half_bits(double v)
{
    if (v == 0)
        return 0;
    const uint16_t sign = v < 0 ? 0x8000 : 0;
    double m = fabs(v);
    int e = 0;
    while (m >= 2) {
        m /= 2;
        e++;
    }
    while (m < 1) {
        m *= 2;
        e--;
    }
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)((m - 1) * 1024));
}

/* Values of a type, as doubles, and the same packed at the type's width. */
typedef struct {
    double *v;
    void *packed;
    float *wide; /* the values as float32 */
} values;

static double draw(int type)
{
    if (type == U8)
        return (double)(int)(uniform() * 256);
    if (type == I8)
        return (double)((int)(uniform() * 256) - 128);
    return (double)((int)(uniform() * 65) - 32) / 4; /* float16: -8 .. 8 by 1/4 */
}

static void pack(int type, values *x, size_t count)
{
    const size_t width = type == F16 ? 2 : 1;
    x->packed = malloc(count * width + 1);
    x->wide = malloc(count * sizeof(float) + 1);
    for (size_t i = 0; i < count; i++) {
        x->wide[i] = (float)x->v[i];
        if (type == U8)
            ((uint8_t *)x->packed)[i] = (uint8_t)x->v[i];
        else if (type == I8)
            ((int8_t *)x->packed)[i] = (int8_t)x->v[i];
        else
            ((uint16_t *)x->packed)[i] = half_bits(x->v[i]);
    }
}

static void values_free(values *x)
{
    free(x->v);
    free(x->packed);
    free(x->wide);
}

/* The exact key of the metric (ip: minus the dot product). */
static double key_of(int metric, const double *q, const double *r, int dim)
{
    double s = 0;
    for (int j = 0; j < dim; j++) {
        const double d = q[j] - r[j];
        if (metric == L2)
            s += d * d;
        else if (metric == L1)
            s += fabs(d);
        else if (metric == LINF)
            s = fabs(d) > s ? fabs(d) : s;
        else
            s -= q[j] * r[j];
    }
    return s;
}

static float distance_of(int metric, double key)
{
    return metric == L2 ? sqrtf((float)key) : metric == IP ? (float)-key : (float)key;
}

/* The k smallest (key, id) of each query, skipping id `skip_from + q`
 * where skip_from >= 0 (the self search). */
static void oracle(int metric, const double *ref, int n, const double *q, int nq, int dim, int k,
                   int64_t skip_from, int64_t *ids, float *dist)
{
    double *keys = malloc((size_t)n * sizeof *keys);
    for (int i = 0; i < nq; i++) {
        for (int r = 0; r < n; r++)
            keys[r] =
                key_of(metric, q + (size_t)i * (size_t)dim, ref + (size_t)r * (size_t)dim, dim);
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int r = 0; r < n; r++) {
                bool taken = skip_from >= 0 && r == skip_from + i;
                for (int t = 0; t < j && !taken; t++)
                    taken = ids[(size_t)i * (size_t)k + (size_t)t] == r;
                if (!taken && (best < 0 || keys[r] < keys[best]))
                    best = r;
            }
            ids[(size_t)i * (size_t)k + (size_t)j] = best;
            dist[(size_t)i * (size_t)k + (size_t)j] = distance_of(metric, keys[best]);
        }
    }
    free(keys);
}

static void check_lists(const char *what, int ci, size_t slots, int k, const int64_t *ids,
                        const float *dist, const int64_t *want_ids, const float *want_dist)
{
    for (size_t s = 0; s < slots; s++)
        CHECK(ids[s] == want_ids[s] && memcmp(&dist[s], &want_dist[s], sizeof(float)) == 0,
              "case %d %s: query %zu slot %zu: id %lld distance %.9g, oracle %lld %.9g", ci, what,
              s / (size_t)k, s % (size_t)k, (long long)ids[s], (double)dist[s],
              (long long)want_ids[s], (double)want_dist[s]);
}

static char last_info[1024];
static void on_log(void *user, lbknn_log_level level, const char *message)
{
    (void)user;
    if (level == LBKNN_LOG_INFO && strstr(message, "widened"))
        snprintf(last_info, sizeof last_info, "%s", message);
}

static lbknn_options *options(int metric, const char *engine, const char *partition,
                              const char *reftype, int k)
{
    lbknn_options *o = NULL;
    char kk[16];
    snprintf(kk, sizeof kk, "%d", k);
    if (lbknn_options_create(&o) || lbknn_options_set(o, "knn.k", kk) ||
        lbknn_options_set(o, "knn.metric", metric_names[metric]) ||
        lbknn_options_set(o, "knn.engine", engine) ||
        lbknn_options_set(o, "mpi.partition", partition) ||
        lbknn_options_set(o, "reference.type", reftype) ||
        lbknn_options_set(o, "device.batch", "16")) {
        fprintf(stderr, "options: %s\n", o ? lbknn_options_error(o) : "no memory");
        exit(1);
    }
    return o;
}

/* This rank's rows of n: its part of the even split (replicate: all). */
static void my_rows(const typed_case *c, int *first, int *count)
{
    const bool all = strcmp(c->partition, "replicate") == 0;
    *first = all ? 0 : (int)((int64_t)c->n * rank / ranks);
    *count = all ? c->n : (int)((int64_t)c->n * (rank + 1) / ranks) - *first;
}

/* A compact k-d tree index saved and loaded (on as many ranks) keeps its
 * type, and answers as the built one (`ids`, `dist`: its answers to the
 * typed queries). Collective. */
static void save_load(lbknn_context *ctx, int ci, const lbknn_options *o, lbknn_index *ix,
                      const void *queries, const int64_t *ids, const float *dist)
{
    const typed_case *c = &cases[ci];
    const size_t slots = (size_t)c->nq * (size_t)c->k;
    char dir[256] = {0};
    if (rank == 0) {
        snprintf(dir, sizeof dir, "%s/lbk-api-typed-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir))
            dir[0] = '\0';
    }
    if (use_mpi)
        MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    CHECK(dir[0], "case %d: mkdtemp failed", ci);
    if (!dir[0])
        return;
    last_info[0] = '\0';
    lbknn_index *loaded = NULL;
    int rc = lbknn_index_save(ix, dir);
    CHECK(rc == LBKNN_OK, "case %d: save: %s", ci, lbknn_index_error(ix));
    CHECK((int)lbknn_index_dtype(ix) == c->type && !strstr(last_info, "widened"),
          "case %d: the save widened: '%s'", ci, last_info);
    if (rc == LBKNN_OK) {
        rc = lbknn_index_load(ctx, o, dir, &loaded);
        CHECK(rc == LBKNN_OK, "case %d: load: %s", ci, lbknn_context_error(ctx));
    }
    if (loaded) {
        CHECK((int)lbknn_index_dtype(loaded) == c->type, "case %d: loaded as %s", ci,
              type_names[lbknn_index_dtype(loaded)]);
        int64_t *lids = malloc(slots * sizeof *lids);
        float *ldist = malloc(slots * sizeof *ldist);
        rc = lbknn_index_search_typed(loaded, c->nq, (lbknn_dtype)c->type, queries, c->k, lids,
                                      ldist);
        CHECK(rc == LBKNN_OK, "case %d: search (loaded): %s", ci, lbknn_index_error(loaded));
        if (rc == LBKNN_OK)
            check_lists("loaded", ci, slots, c->k, lids, ldist, ids, dist);
        free(lids);
        free(ldist);
    }
    lbknn_index_destroy(loaded);
    if (use_mpi)
        MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0, "case %d: could not remove %s", ci, dir);
    }
}

/* Votes of the first k neighbours, uniform, ties to the smaller label. */
static int32_t vote(const int64_t *ids, int k)
{
    int count[3] = {0, 0, 0};
    for (int j = 0; j < k; j++)
        count[ids[j] % 3]++;
    int best = 0;
    for (int c = 1; c < 3; c++)
        best = count[c] > count[best] ? c : best;
    return best;
}

static void run_case(lbknn_context *ctx, int ci)
{
    const typed_case *c = &cases[ci];
    const size_t width = c->type == F16 ? 2 : 1, slots = (size_t)c->nq * (size_t)c->k;
    values ref = {malloc((size_t)c->n * (size_t)c->dim * sizeof(double)), NULL, NULL};
    values qs = {malloc((size_t)c->nq * (size_t)c->dim * sizeof(double)), NULL, NULL};
    for (size_t i = 0; i < (size_t)c->n * (size_t)c->dim; i++)
        ref.v[i] = draw(c->type);
    for (size_t i = 0; i < (size_t)c->nq * (size_t)c->dim; i++)
        qs.v[i] = draw(c->type);
    pack(c->type, &ref, (size_t)c->n * (size_t)c->dim);
    pack(c->type, &qs, (size_t)c->nq * (size_t)c->dim);
    int32_t *labels = malloc((size_t)c->n * sizeof *labels);
    double *targets = malloc((size_t)c->n * sizeof *targets);
    for (int i = 0; i < c->n; i++) {
        labels[i] = i % 3;
        targets[i] = i * 0.5;
    }
    int first, count;
    my_rows(c, &first, &count);
    lbknn_options *o = options(c->metric, c->engine, c->partition, c->reftype, c->k + 1);
    lbknn_index *ix = NULL;
    const size_t at = (size_t)first * (size_t)c->dim;
    int rc = lbknn_index_build_typed(ctx, o, count, c->dim, (lbknn_dtype)c->type,
                                     (const char *)ref.packed + at * width, labels + first,
                                     targets + first, &ix);
    CHECK(rc == LBKNN_OK, "case %d: build: %s", ci, lbknn_context_error(ctx));
    if (rc != LBKNN_OK)
        exit(1);
    const int kept = lbknn_index_dtype(ix);
    CHECK(c->compact < 0 || kept == (c->compact ? c->type : LBKNN_DTYPE_FLOAT32),
          "case %d: %s %s %s reference.type %s: kept as %s", ci, type_names[c->type],
          metric_names[c->metric], c->engine, c->reftype, type_names[kept]);
    int64_t *ids = malloc(slots * sizeof *ids), *want = malloc(slots * sizeof *want);
    float *dist = malloc(slots * sizeof *dist), *want_dist = malloc(slots * sizeof *want_dist);
    if (c->metric == COSINE) {
        /* Widened for cosine: the float32 index of the same values, bit for bit. */
        lbknn_index *wide = NULL;
        rc = lbknn_index_build(ctx, o, count, c->dim, ref.wide + at, labels + first,
                               targets + first, &wide);
        rc |= lbknn_index_search(wide, c->nq, qs.wide, c->k, want, want_dist);
        lbknn_index_destroy(wide);
        CHECK(rc == LBKNN_OK && (rank != 0 || strstr(last_info, "cosine normalises")),
              "case %d: the float32 cosine index (%d), or no reason said: %s", ci, rc, last_info);
    } else {
        oracle(c->metric, ref.v, c->n, qs.v, c->nq, c->dim, c->k, -1, want, want_dist);
    }
    for (int typed = 0; typed < 2; typed++) {
        rc = typed ? lbknn_index_search_typed(ix, c->nq, (lbknn_dtype)c->type, qs.packed, c->k,
                                              ids, dist)
                   : lbknn_index_search(ix, c->nq, qs.wide, c->k, ids, dist);
        CHECK(rc == LBKNN_OK, "case %d: search: %s", ci, lbknn_index_error(ix));
        if (rc == LBKNN_OK)
            check_lists(typed ? "typed queries" : "float32 queries", ci, slots, c->k, ids, dist,
                        want, want_dist);
    }
    if (c->compact == 1 && strcmp(c->engine, "kdtree") == 0)
        save_load(ctx, ci, o, ix, qs.packed, ids, dist);
    int32_t *pred = malloc((size_t)c->nq * sizeof *pred);
    double *mean = malloc((size_t)c->nq * sizeof *mean);
    rc = lbknn_index_classify_typed(ix, c->nq, (lbknn_dtype)c->type, qs.packed, c->k,
                                    LBKNN_WEIGHTS_UNIFORM, 1.0, pred, NULL);
    rc |= lbknn_index_regress_typed(ix, c->nq, (lbknn_dtype)c->type, qs.packed, c->k,
                                    LBKNN_WEIGHTS_UNIFORM, mean);
    CHECK(rc == LBKNN_OK, "case %d: classify/regress: %s", ci, lbknn_index_error(ix));
    for (int q = 0; rc == LBKNN_OK && q < c->nq; q++) {
        double sum = 0;
        for (int j = 0; j < c->k; j++)
            sum += targets[want[(size_t)q * (size_t)c->k + (size_t)j]];
        CHECK(pred[q] == vote(want + (size_t)q * (size_t)c->k, c->k) && mean[q] == sum / c->k,
              "case %d query %d: label %d, mean %.17g", ci, q, pred[q], mean[q]);
    }
    if (ci == 0) {
        /* The self search keeps the compact index (its queries are the
         * rows, widened a batch at a time); each rank gets the lists of
         * the rows it passed. */
        const size_t self_slots = (size_t)count * (size_t)c->k;
        int64_t *sids = malloc(self_slots * sizeof *sids + 1),
                *swant = malloc(self_slots * sizeof *swant + 1);
        float *sdist = malloc(self_slots * sizeof *sdist + 1),
              *swd = malloc(self_slots * sizeof *swd + 1);
        last_info[0] = '\0';
        rc = lbknn_index_search_self(ix, c->k, sids, sdist);
        CHECK(rc == LBKNN_OK, "case %d: search_self: %s", ci, lbknn_index_error(ix));
        oracle(c->metric, ref.v, c->n, ref.v + at, count, c->dim, c->k, first, swant, swd);
        if (rc == LBKNN_OK)
            check_lists("self", ci, self_slots, c->k, sids, sdist, swant, swd);
        CHECK((int)lbknn_index_dtype(ix) == c->type, "case %d: widened", ci);
        CHECK(!strstr(last_info, "widened"), "case %d: the self search said: '%s'", ci,
              last_info);
        free(sids);
        free(swant);
        free(sdist);
        free(swd);
    }
    if (ci == 5) {
        /* Radius search on a compact int8 index: widened, then every point
         * within the oracle's 6th distance of each query. */
        lbknn_radius_result *res = NULL;
        rc = lbknn_index_radius_typed(ix, c->nq, (lbknn_dtype)c->type, qs.packed, NULL,
                                      want_dist[5], NULL, &res);
        CHECK(rc == LBKNN_OK, "case %d: radius: %s", ci, lbknn_index_error(ix));
        const int64_t *indptr = rc == LBKNN_OK ? lbknn_radius_result_indptr(res) : NULL;
        for (int q = 0; indptr && q < c->nq; q++) {
            int64_t within = 0;
            for (int j = 0; j < c->k; j++)
                within += want_dist[(size_t)q * (size_t)c->k + (size_t)j] <= want_dist[5];
            const int64_t got = indptr[q + 1] - indptr[q];
            CHECK(within == c->k ? got >= within : got == within,
                  "case %d query %d: %lld within the radius, oracle %lld", ci, q, (long long)got,
                  (long long)within);
            for (int64_t j = 0; j < within && j < got; j++)
                CHECK(lbknn_radius_result_indices(res)[indptr[q] + j] ==
                          want[(size_t)q * (size_t)c->k + (size_t)j],
                      "case %d query %d: radius neighbour %lld", ci, q, (long long)j);
        }
        lbknn_radius_result_free(res);
        CHECK(lbknn_index_dtype(ix) == LBKNN_DTYPE_FLOAT32, "case %d: not widened", ci);
    }
    lbknn_index_destroy(ix);
    lbknn_options_destroy(o);
    values_free(&ref);
    values_free(&qs);
    free(labels);
    free(targets);
    free(ids);
    free(want);
    free(dist);
    free(want_dist);
    free(pred);
    free(mean);
}

/* Two points at squared distances D + 1 (id 0) and D (id 1) from the
 * query, D > 2^24: float32 sums hold no odd integer there, so only the
 * exact integer key puts id 1 first. */
static void near_tie(lbknn_context *ctx)
{
    enum { DIM = 784, N = 8 };
    static uint8_t ref[N * DIM], query[DIM];
    for (int r = 0; r < N; r++)
        for (int j = 0; j < DIM; j++)
            ref[r * DIM + j] = r < 2 ? (j < 260 ? 255 : 0) : (uint8_t)(250 - r);
    ref[0 * DIM + 300] = 1;
    lbknn_options *o = options(L2, "brute", "replicate", "uint8", 2);
    lbknn_index *ix = NULL;
    int64_t ids[2] = {0, 0};
    float dist[2] = {0, 0};
    int rc = lbknn_index_build_typed(ctx, o, N, DIM, LBKNN_DTYPE_UINT8, ref, NULL, NULL, &ix);
    if (rc == LBKNN_OK)
        rc = lbknn_index_search_typed(ix, 1, LBKNN_DTYPE_UINT8, query, 2, ids, dist);
    const double d = 260.0 * 255 * 255;
    CHECK(rc == LBKNN_OK && ids[0] == 1 && ids[1] == 0 && dist[0] == sqrtf((float)d) &&
              dist[1] == sqrtf((float)(d + 1)),
          "near tie: %d, ids %lld %lld, distances %.9g %.9g", rc, (long long)ids[0],
          (long long)ids[1], (double)dist[0], (double)dist[1]);
    lbknn_index_destroy(ix);
    lbknn_options_destroy(o);
}

/* Refused, with the status and a message naming what is wrong: on every
 * rank, or (`everywhere` false: the one query is rank 0's) there alone. */
static void expect(const char *what, int rc, int want, const char *message, const char *part,
                   bool everywhere)
{
    if (everywhere || rank == 0)
        CHECK(rc == want && strstr(message, part), "%s: status %d (expected %d), message '%s'",
              what, rc, want, message);
    else
        CHECK(rc != LBKNN_OK, "%s: passed on rank %d", what, rank);
}

static void refusals(lbknn_context *ctx)
{
    static uint8_t u8[4 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    static const int8_t i8[3] = {1, 2, 3};
    static uint16_t nan16[3] = {0x3c00, 0x7e00, 0};
    lbknn_options *o = options(L2, "brute", "shard", "uint8", 2);
    lbknn_index *ix = NULL;
    int rc = lbknn_index_build_typed(ctx, o, 4, 3, (lbknn_dtype)7, u8, NULL, NULL, &ix);
    expect("type 7", rc, LBKNN_ERR_USAGE, lbknn_context_error(ctx), "type = 7", true);
    rc = lbknn_index_build_typed(ctx, o, 4, 3, LBKNN_DTYPE_INT8, u8, NULL, NULL, &ix);
    expect("reference.type uint8, int8 points", rc, LBKNN_ERR_INPUT, lbknn_context_error(ctx),
           "reference.type is uint8, but the points passed are int8", true);
    lbknn_options_set(o, "reference.type", "auto");
    rc = lbknn_index_build_typed(ctx, o, 1, 3, LBKNN_DTYPE_FLOAT16, nan16, NULL, NULL, &ix);
    expect("float16 NaN", rc, LBKNN_ERR_INPUT, lbknn_context_error(ctx), "points[0][1]", true);
    lbknn_options_set(o, "reference.type", "uint8");
    rc = lbknn_index_build_typed(ctx, o, 4, 3, LBKNN_DTYPE_UINT8, u8, NULL, NULL, &ix);
    CHECK(rc == LBKNN_OK, "uint8 build: %s", lbknn_context_error(ctx));
    if (rc != LBKNN_OK)
        return;
    int64_t ids[2];
    float dist[2];
    rc = lbknn_index_search_typed(ix, 1, LBKNN_DTYPE_INT8, i8, 2, ids, dist);
    expect("int8 queries", rc, LBKNN_ERR_USAGE, lbknn_index_error(ix),
           "queries of type int8 for an index built from uint8 points", true);
    const float half[3] = {1, 2.5f, 3}, big[3] = {1, 256, 3};
    rc = lbknn_index_search(ix, 1, half, 2, ids, dist);
    expect("2.5 for uint8", rc, LBKNN_ERR_INPUT, lbknn_index_error(ix), "2.5", false);
    rc = lbknn_index_search(ix, 1, big, 2, ids, dist);
    expect("256 for uint8", rc, LBKNN_ERR_INPUT, lbknn_index_error(ix), "256", false);
    rc = lbknn_index_search_typed(ix, 1, LBKNN_DTYPE_UINT8, u8, 2, ids, dist);
    CHECK(rc == LBKNN_OK && ids[0] == 0 && dist[0] == 0, "the index after refusals: %d %lld", rc,
          (long long)ids[0]);
    lbknn_index_destroy(ix);
    lbknn_options_destroy(o);
}

/* ---- byte for byte as `lbknn run` (typed_as_run.sh) ---- */

enum { CLI_N = 500, CLI_NQ = 60, CLI_DIM = 24, CLI_K = 6 };

static void cli_data(int type, int8_t *ref, int8_t *queries)
{
    rng_state = 9;
    for (int i = 0; i < CLI_N * CLI_DIM; i++)
        ref[i] = (int8_t)draw(type);
    for (int i = 0; i < CLI_NQ * CLI_DIM; i++)
        queries[i] = (int8_t)draw(type);
}

/* A big-ann file (.u8bin, .i8bin): uint32 rows, uint32 dim, the bytes. */
static void write_bin(const char *dir, const char *name, const int8_t *v, uint32_t rows)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    const uint32_t head[2] = {rows, CLI_DIM};
    if (!f || fwrite(head, sizeof head, 1, f) != 1 ||
        fwrite(v, (size_t)rows * CLI_DIM, 1, f) != 1 || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

/* The rows of a TEXMEX file of CLI_K values a row, without the counts. */
static void read_vecs(const char *dir, const char *name, void *out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    for (int r = 0; f && r < CLI_NQ; r++) {
        int32_t count = 0;
        if (fread(&count, 4, 1, f) != 1 || count != CLI_K ||
            fread((char *)out + (size_t)r * CLI_K * 4, 4, CLI_K, f) != CLI_K) {
            fprintf(stderr, "%s: row %d unreadable\n", path, r);
            exit(1);
        }
    }
    if (!f) {
        perror(path);
        exit(1);
    }
    fclose(f);
}

/* --cli-write DIR TYPE: the data; --cli-compare DIR TYPE METRIC: the
 * typed index's lists against lbknn run's nn.ivecs and dist.fvecs. */
static int cli(const char *mode, const char *dir, const char *type_name, const char *metric)
{
    const int type = strcmp(type_name, "uint8") == 0 ? U8 : I8;
    static int8_t ref[CLI_N * CLI_DIM], queries[CLI_NQ * CLI_DIM];
    cli_data(type, ref, queries);
    if (strcmp(mode, "--cli-write") == 0) {
        write_bin(dir, type == U8 ? "reference.u8bin" : "reference.i8bin", ref, CLI_N);
        write_bin(dir, type == U8 ? "query.u8bin" : "query.i8bin", queries, CLI_NQ);
        return 0;
    }
    int m = 0;
    while (strcmp(metric_names[m], metric) != 0)
        m++;
    lbknn_context *ctx = NULL;
    char error[512] = "";
    lbknn_options *o = options(m, "brute", "auto", type_name, CLI_K);
    lbknn_index *ix = NULL;
    static int64_t ids[CLI_NQ * CLI_K];
    static int32_t want_ids[CLI_NQ * CLI_K];
    static float dist[CLI_NQ * CLI_K], want_dist[CLI_NQ * CLI_K];
    if (lbknn_context_create(NULL, NULL, &ctx, error, sizeof error) ||
        lbknn_index_build_typed(ctx, o, CLI_N, CLI_DIM, (lbknn_dtype)type, ref, NULL, NULL,
                                &ix) ||
        lbknn_index_search_typed(ix, CLI_NQ, (lbknn_dtype)type, queries, CLI_K, ids, dist)) {
        fprintf(stderr, "library: %s%s%s\n", error, ctx ? lbknn_context_error(ctx) : "",
                ix ? lbknn_index_error(ix) : "");
        return 1;
    }
    CHECK((int)lbknn_index_dtype(ix) == type, "%s %s: not kept compact", type_name, metric);
    read_vecs(dir, "nn.ivecs", want_ids);
    read_vecs(dir, "dist.fvecs", want_dist);
    for (int s = 0; s < CLI_NQ * CLI_K; s++)
        CHECK(ids[s] == want_ids[s] && memcmp(&dist[s], &want_dist[s], 4) == 0,
              "%s %s: query %d slot %d: library %lld %.9g, lbknn run %d %.9g", type_name, metric,
              s / CLI_K, s % CLI_K, (long long)ids[s], (double)dist[s], want_ids[s],
              (double)want_dist[s]);
    lbknn_index_destroy(ix);
    lbknn_options_destroy(o);
    lbknn_context_destroy(ctx);
    printf("test_api_typed %s %s: %s\n", type_name, metric,
           failures ? "FAILED" : "the same bytes");
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strncmp(argv[1], "--cli-", 6) == 0)
        return cli(argv[1], argv[2], argv[3], argc > 4 ? argv[4] : "l2");
    const bool mpi = use_mpi = argc > 1 && strcmp(argv[1], "--mpi") == 0;
    if (mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    } else {
        ranks = 1;
    }
    const uint64_t seed = 42;
    if (rank == 0)
        printf("test_api_typed: seed %llu, %d rank(s)\n", (unsigned long long)seed, ranks);
    rng_state = seed;
    lbknn_set_log_callback(on_log, NULL);
    lbknn_options *device = NULL;
    lbknn_options_create(&device);
    lbknn_context *ctx = NULL;
    char error[512] = "";
    MPI_Comm comm = MPI_COMM_WORLD;
    if (lbknn_context_create(device, mpi ? (const void *)&comm : NULL, &ctx, error,
                             sizeof error) != LBKNN_OK) {
        fprintf(stderr, "context: %s\n", error);
        return 1;
    }
    /* Under mpirun the compact cases whose ranks do something of their
     * own: row shards (the self search's rows, the radius search),
     * replicas and a saved spatial tree (the default run's time is short). */
    for (int ci = 0; ci < (int)(sizeof cases / sizeof *cases); ci++)
        if (!mpi || ci == 0 || ci == 1 || ci == 5 || ci == 9 || ci == 13)
            run_case(ctx, ci);
    if (!mpi)
        near_tie(ctx);
    refusals(ctx);
    lbknn_context_destroy(ctx);
    lbknn_options_destroy(device);
    if (mpi) {
        MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Finalize();
    }
    if (rank == 0)
        printf("test_api_typed: %s (%d failure(s))\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
