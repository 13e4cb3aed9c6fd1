/* lbknn_index_radius and lbknn_index_radius_self (lbknn.h) against an
 * oracle of this file's own: every metric, both engines, the shard,
 * replicate and spatial partitions, one radius and per-query radii, ties
 * at exactly r (integer grid points, duplicates among them), empty lists,
 * count-only, a cap that truncates and one that fails naming the query,
 * and bad radii refused; on one process or under mpirun (--mpi), where
 * each rank passes its slice of the rows and every rank must get the
 * oracle's arrays bit for bit. */
#include "lbk_test.h"
#include "lbknn.h"

#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 600
#define NQ 70
#define DIM 3

static float ref[N * DIM], queries[NQ * DIM], radii[N];
static int rank, size;
static MPI_Comm world;
static bool use_mpi;

/* Points of a 7^3 grid (so duplicates and distances exactly r), shifted
 * by -3 so that dot products have both signs. */
static void make_data(uint64_t seed)
{
    lbk_test_rng rng = LBK_TEST_RNG(seed);
    for (int i = 0; i < N * DIM; i++)
        ref[i] = (float)(int)lbk_test_rng_below(&rng, 7) - 3.0f;
    for (int i = 0; i < NQ * DIM; i++)
        queries[i] = (float)(int)lbk_test_rng_below(&rng, 7) - 3.0f;
    for (int i = 0; i < N; i++)
        radii[i] = (float)lbk_test_rng_below(&rng, 5);
}

/* The oracle: lbknn's keys in their fixed order (docs/design.md §2), the
 * reported distance, and the test "distance <= r" (ip: dot >= r). */
static void normalize(float *x)
{
    double s = 0;
    for (int j = 0; j < DIM; j++)
        s = s + (double)x[j] * (double)x[j];
    const double n = sqrt(s);
    for (int j = 0; n > 0 && j < DIM; j++)
        x[j] = (float)(x[j] / n);
}

static float key_of(const char *metric, const float *q, const float *x)
{
    const bool dot = !strcmp(metric, "ip") || !strcmp(metric, "cosine");
    float qn[DIM], xn[DIM];
    memcpy(qn, q, sizeof qn);
    memcpy(xn, x, sizeof xn);
    if (!strcmp(metric, "cosine")) {
        normalize(qn);
        normalize(xn);
    }
    float s = 0;
    for (int j = 0; j < DIM; j++) {
        const float d = qn[j] - xn[j];
        volatile float p = dot ? qn[j] * xn[j] : d * d;
        if (dot || !strcmp(metric, "l2"))
            s = s + p;
        else if (!strcmp(metric, "l1"))
            s = s + fabsf(d);
        else
            s = fabsf(d) > s ? fabsf(d) : s;
    }
    return dot ? -s : s;
}

static float distance_of(const char *metric, float key)
{
    if (!strcmp(metric, "l2"))
        return sqrtf(key);
    if (!strcmp(metric, "ip"))
        return -key;
    if (!strcmp(metric, "cosine")) {
        const float d = 1.0f + key;
        return d < 0 ? 0 : d > 2 ? 2 : d;
    }
    return key;
}

static bool inside(const char *metric, float key, float r)
{
    const float d = distance_of(metric, key);
    return !strcmp(metric, "ip") ? d >= r : d <= r;
}

typedef struct {
    const char *engine, *partition, *metric;
    bool self, per_query, count_only, truncate;
    int64_t cap;
    float radius;
} radius_case;

/* The oracle's row q, sorted by (key, id), into keys/ids; its count. */
static int64_t oracle_row(const radius_case *c, const float *q, float r, int64_t self_id,
                          float *keys, int64_t *ids)
{
    int64_t n = 0;
    for (int64_t i = 0; i < N; i++) {
        if (i == self_id)
            continue;
        const float k = key_of(c->metric, q, ref + i * DIM);
        if (!inside(c->metric, k, r))
            continue;
        int64_t j = n++;
        while (j > 0 && (keys[j - 1] > k || (keys[j - 1] == k && ids[j - 1] > i))) {
            keys[j] = keys[j - 1];
            ids[j] = ids[j - 1];
            j--;
        }
        keys[j] = k;
        ids[j] = i;
    }
    return n;
}

static int check(const radius_case *c, const lbknn_radius_result *res, int64_t first,
                 int64_t rows)
{
    static float keys[N];
    static int64_t ids[N];
    if (lbknn_radius_result_queries(res) != rows) {
        fprintf(stderr, "rank %d: %lld rows, expected %lld\n", rank,
                (long long)lbknn_radius_result_queries(res), (long long)rows);
        return 1;
    }
    const int64_t *indptr = lbknn_radius_result_indptr(res),
                  *got = lbknn_radius_result_indices(res);
    const int64_t *counts = lbknn_radius_result_counts(res);
    const float *dist = lbknn_radius_result_distances(res);
    const uint8_t *trunc = lbknn_radius_result_truncated(res);
    if (c->count_only != (indptr == NULL)) {
        fprintf(stderr, "rank %d: lists %s in count-only %d\n", rank, indptr ? "kept" : "absent",
                c->count_only);
        return 1;
    }
    for (int64_t q = 0; q < rows; q++) {
        const int64_t row = first + q;
        const float *point = c->self ? ref + row * DIM : queries + row * DIM;
        const float r = c->per_query ? radii[row] : c->radius;
        const int64_t n = oracle_row(c, point, r, c->self ? row : -1, keys, ids);
        const int64_t stored = c->truncate && c->cap > 0 && n > c->cap ? c->cap : n;
        if (counts[q] != n || (!c->count_only && trunc[q] != (stored < n))) {
            fprintf(stderr, "rank %d: row %lld: count %lld (truncated %d), expected %lld\n", rank,
                    (long long)row, (long long)counts[q], trunc[q], (long long)n);
            return 1;
        }
        if (c->count_only)
            continue;
        if (indptr[q + 1] - indptr[q] != stored) {
            fprintf(stderr, "rank %d: row %lld: %lld stored, expected %lld\n", rank,
                    (long long)row, (long long)(indptr[q + 1] - indptr[q]), (long long)stored);
            return 1;
        }
        for (int64_t j = 0; j < stored; j++) {
            const float want = distance_of(c->metric, keys[j]);
            if (got[indptr[q] + j] != ids[j] ||
                memcmp(&dist[indptr[q] + j], &want, sizeof want) != 0) {
                fprintf(stderr,
                        "rank %d: row %lld slot %lld: id %lld d %.9g, expected %lld %.9g\n", rank,
                        (long long)row, (long long)j, (long long)got[indptr[q] + j],
                        (double)dist[indptr[q] + j], (long long)ids[j], (double)want);
                return 1;
            }
        }
    }
    return 0;
}

static lbknn_options *options(const radius_case *c)
{
    lbknn_options *o = NULL;
    if (lbknn_options_create(&o) || lbknn_options_set(o, "knn.engine", c->engine) ||
        lbknn_options_set(o, "mpi.partition", c->partition) ||
        lbknn_options_set(o, "knn.metric", c->metric) ||
        lbknn_options_set(o, "device.batch", "16") ||
        lbknn_options_set(o, "device.memory_mb", "1")) {
        fprintf(stderr, "options: %s\n", o ? lbknn_options_error(o) : "no memory");
        exit(1);
    }
    return o;
}

/* This rank's rows: its slice, or every row (replicate). */
static void my_rows(const radius_case *c, int64_t *first, int64_t *n)
{
    const bool all = !strcmp(c->partition, "replicate");
    *first = all ? 0 : (int64_t)N * rank / size;
    *n = all ? N : (int64_t)N * (rank + 1) / size - *first;
}

static int run_case(lbknn_context *ctx, const radius_case *c)
{
    lbknn_options *o = options(c);
    lbknn_index *ix = NULL;
    int64_t first, n;
    my_rows(c, &first, &n);
    int bad = 0;
    if (lbknn_index_build(ctx, o, n, DIM, ref + first * DIM, NULL, NULL, &ix)) {
        fprintf(stderr, "build: %s\n", lbknn_context_error(ctx));
        bad = 1;
    }
    const lbknn_radius_options ro = {c->cap, c->truncate, c->count_only};
    lbknn_radius_result *res = NULL;
    const float *r = c->per_query ? radii : NULL;
    if (!bad) {
        const lbknn_status st =
            c->self ? lbknn_index_radius_self(ix, r, c->radius, &ro, &res)
                    : lbknn_index_radius(ix, NQ, queries, r, c->radius, &ro, &res);
        if (st) {
            fprintf(stderr, "rank %d: radius: %s\n", rank, lbknn_index_error(ix));
            bad = 1;
        } else {
            bad = c->self ? check(c, res, first, n) : check(c, res, 0, NQ);
        }
    }
    if (rank == 0 || bad)
        printf("%s %s %s self=%d per_query=%d count_only=%d cap=%lld%s r=%g: %s\n", c->engine,
               c->partition, c->metric, c->self, c->per_query, c->count_only, (long long)c->cap,
               c->truncate ? " truncate" : "", (double)c->radius, bad ? "FAILED" : "ok");
    lbknn_radius_result_free(res);
    lbknn_index_destroy(ix);
    lbknn_options_destroy(o);
    return bad;
}

/* A cap without truncation fails naming the query and its count; bad
 * radii fail before any search. */
static int refusals(lbknn_context *ctx)
{
    const radius_case c = {"brute", "shard", "l2", false, false, false, false, 2, 2.0f};
    lbknn_options *o = options(&c);
    lbknn_index *ix = NULL;
    int64_t first, n;
    my_rows(&c, &first, &n);
    int bad = lbknn_index_build(ctx, o, n, DIM, ref + first * DIM, NULL, NULL, &ix) != LBKNN_OK;
    lbknn_radius_result *res = NULL;
    const lbknn_radius_options ro = {2, 0, 0};
    if (!bad) {
        const lbknn_status st = lbknn_index_radius(ix, NQ, queries, NULL, 2.0f, &ro, &res);
        const char *m = lbknn_index_error(ix);
        const bool named = rank == 0 ? st == LBKNN_ERR_INPUT && strstr(m, "query row 0 has")
                                     : st == LBKNN_ERR_REMOTE;
        if (!named) {
            fprintf(stderr, "rank %d: cap: status %d, message '%s'\n", rank, (int)st, m);
            bad = 1;
        }
        const float nan_radius = NAN;
        if (lbknn_index_radius(ix, NQ, queries, NULL, -1.0f, NULL, &res) != LBKNN_ERR_USAGE ||
            !strstr(lbknn_index_error(ix), "radius = -1") ||
            lbknn_index_radius(ix, NQ, queries, NULL, nan_radius, NULL, &res) !=
                LBKNN_ERR_USAGE ||
            res != NULL) {
            fprintf(stderr, "rank %d: bad radius accepted: '%s'\n", rank, lbknn_index_error(ix));
            bad = 1;
        }
    }
    if (rank == 0)
        printf("refusals: %s\n", bad ? "FAILED" : "ok");
    lbknn_index_destroy(ix);
    lbknn_options_destroy(o);
    return bad;
}

int main(int argc, char **argv)
{
    use_mpi = argc > 1 && strcmp(argv[1], "--mpi") == 0;
    world = MPI_COMM_WORLD;
    size = 1;
    if (use_mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(world, &rank);
        MPI_Comm_size(world, &size);
    }
    const uint64_t seed = 40;
    if (rank == 0)
        printf("test_api_radius: seed %llu, %d rank(s)\n", (unsigned long long)seed, size);
    make_data(seed);
    char error[512];
    lbknn_context *ctx = NULL;
    if (lbknn_context_create(NULL, use_mpi ? &world : NULL, &ctx, error, sizeof error)) {
        fprintf(stderr, "context: %s\n", error);
        return 1;
    }
    const radius_case cases[] = {
        {"kdtree", "shard", "l2", false, false, false, false, 0, 2.0f},
        {"kdtree", "spatial", "l2", false, true, false, false, 0, 0},
        {"kdtree", "spatial", "l1", true, false, false, false, 0, 3.0f},
        {"kdtree", "spatial", "linf", true, true, false, true, 5, 0},
        {"kdtree", "shard", "linf", false, false, true, false, 0, 1.0f},
        {"brute", "shard", "ip", false, false, false, false, 0, 4.0f},
        {"brute", "replicate", "ip", true, false, false, true, 3, -2.0f},
        {"brute", "shard", "cosine", true, false, false, false, 0, 0.25f},
        {"brute", "replicate", "cosine", false, true, true, false, 0, 0},
        {"brute", "shard", "l2", true, false, false, true, 4, 0.0f},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        bad |= run_case(ctx, &cases[i]);
    bad |= refusals(ctx);
    lbknn_context_destroy(ctx);
    if (use_mpi) {
        int any = bad;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, world);
        bad = any;
        MPI_Finalize();
    }
    return bad;
}
