/* The public library (lbknn.h) against the independent host oracle
 * (tests/oracle): every metric, engine and partition, on one process or on
 * the ranks of mpirun, each rank passing its own uneven shard (one rank
 * none at all with --empty-rank). Searches, votes and regression are
 * checked against the oracle's lists with the vote and averaging rules
 * written out here from docs/design.md and scikit-learn's documentation.
 * Usage: test_api_oracle [--mpi] [--empty-rank] [--seed S] */
#include "knn_oracle.h"
#include "lbknn.h"

#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *metrics[] = {"l2", "l1", "linf", "cosine", "ip"};

typedef struct {
    int metric;         /* index into metrics (the oracle's numbering) */
    const char *engine; /* knn.engine */
    const char *partition;
    uint32_t n, nq;
    int dim, k;
} api_case;

static const api_case cases[] = {
    {0, "auto", "auto", 700, 90, 3, 5},       {0, "kdtree", "shard", 333, 41, 2, 7},
    {0, "kdtree", "spatial", 900, 77, 3, 9},  {0, "brute", "shard", 257, 33, 24, 6},
    {0, "brute", "replicate", 120, 20, 5, 4}, {1, "auto", "auto", 640, 50, 4, 5},
    {2, "kdtree", "spatial", 500, 60, 3, 11}, {3, "brute", "shard", 300, 35, 16, 5},
    {4, "brute", "auto", 280, 31, 8, 3},      {0, "brute", "shard", 5, 9, 3, 8},
};

static uint64_t rng_state;
static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static int failures;
#define CHECK(cond, ...)                                                                         \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                 \
            fprintf(stderr, __VA_ARGS__);                                                        \
            fprintf(stderr, "\n");                                                               \
            failures++;                                                                          \
        }                                                                                        \
    } while (0)

/* scikit-learn's votes: weight 1 or 1/d (only the d == 0 neighbours when
 * there are any), ties to the smaller label. */
static int32_t oracle_vote(const float *dist, const int32_t *lab, int k, int classes,
                           bool by_distance, double *proba)
{
    bool exact = false;
    for (int j = 0; j < k; j++)
        exact |= by_distance && dist[j] == 0;
    double total = 0;
    memset(proba, 0, (size_t)classes * sizeof *proba);
    for (int j = 0; j < k; j++) {
        const double w = !by_distance ? 1 : exact ? (dist[j] == 0) : 1.0 / dist[j];
        proba[lab[j]] += w;
    }
    int32_t best = 0;
    for (int c = 0; c < classes; c++) {
        total += proba[c];
        if (proba[c] > proba[best])
            best = c;
    }
    for (int c = 0; c < classes; c++)
        proba[c] = total > 0 ? proba[c] / total : 0;
    return best;
}

static double oracle_regress(const float *dist, const double *y, int k, bool by_distance)
{
    bool exact = false;
    for (int j = 0; j < k; j++)
        exact |= by_distance && dist[j] == 0;
    double sum = 0, weights = 0;
    for (int j = 0; j < k; j++) {
        const double w = !by_distance ? 1 : exact ? (dist[j] == 0) : 1.0 / (double)dist[j];
        sum += w * y[j];
        weights += w;
    }
    return sum / weights;
}

static lbknn_options *options_for(const api_case *c, int k_max)
{
    lbknn_options *o = NULL;
    char k[16];
    snprintf(k, sizeof k, "%d", k_max);
    if (lbknn_options_create(&o) != LBKNN_OK || lbknn_options_set(o, "knn.k", k) ||
        lbknn_options_set(o, "knn.metric", metrics[c->metric]) ||
        lbknn_options_set(o, "knn.engine", c->engine) ||
        lbknn_options_set(o, "mpi.partition", c->partition) ||
        lbknn_options_set(o, "device.batch", "16")) {
        fprintf(stderr, "options: %s\n", o ? lbknn_options_error(o) : "no memory");
        exit(1);
    }
    return o;
}

typedef struct {
    float *ref, *queries, *keys, *dist;
    int32_t *labels;
    double *targets;
    uint32_t *index;
} case_data;

static void make_data(const api_case *c, case_data *d, uint64_t seed)
{
    rng_state = seed;
    d->ref = malloc((size_t)c->n * (size_t)c->dim * sizeof(float));
    d->queries = malloc((size_t)c->nq * (size_t)c->dim * sizeof(float));
    d->labels = malloc(c->n * sizeof(int32_t));
    d->targets = malloc(c->n * sizeof(double));
    d->keys = malloc((size_t)c->nq * (size_t)c->k * sizeof(float));
    d->dist = malloc((size_t)c->nq * (size_t)c->k * sizeof(float));
    d->index = malloc((size_t)c->nq * (size_t)c->k * sizeof(uint32_t));
    /* A coarse grid: many exact ties, so the (distance, id) order shows. */
    for (uint64_t i = 0; i < (uint64_t)c->n * (uint64_t)c->dim; i++)
        d->ref[i] = (float)((int)(uniform() * 8) - 3);
    for (uint64_t i = 0; i < (uint64_t)c->nq * (uint64_t)c->dim; i++)
        d->queries[i] = (float)(uniform() * 8 - 3.5);
    for (uint32_t i = 0; i < c->n; i++) {
        d->labels[i] = (int32_t)(uniform() * 4);
        d->targets[i] = uniform() * 100 - 50;
    }
    float *r = malloc((size_t)c->n * (size_t)c->dim * sizeof(float));
    float *q = malloc((size_t)c->nq * (size_t)c->dim * sizeof(float));
    memcpy(r, d->ref, (size_t)c->n * (size_t)c->dim * sizeof(float));
    memcpy(q, d->queries, (size_t)c->nq * (size_t)c->dim * sizeof(float));
    if (c->metric == 3) {
        oracle_normalize(r, c->n, c->dim);
        oracle_normalize(q, c->nq, c->dim);
    }
    oracle_knn(r, c->n, q, c->nq, c->dim, c->metric, c->k, d->keys, d->index);
    for (uint64_t s = 0; s < (uint64_t)c->nq * (uint64_t)c->k; s++)
        d->dist[s] =
            d->index[s] == UINT32_MAX ? INFINITY : oracle_distance(d->keys[s], c->metric);
    free(r);
    free(q);
}

static void free_data(case_data *d)
{
    free(d->ref);
    free(d->queries);
    free(d->labels);
    free(d->targets);
    free(d->keys);
    free(d->dist);
    free(d->index);
}

static void check_results(const api_case *c, int ci, const case_data *d, lbknn_index *ix)
{
    const size_t slots = (size_t)c->nq * (size_t)c->k;
    int64_t *ids = malloc(slots * sizeof *ids);
    float *dist = malloc(slots * sizeof *dist);
    int rc = lbknn_index_search(ix, c->nq, d->queries, c->k, ids, dist);
    CHECK(rc == LBKNN_OK, "case %d: search: %s", ci, lbknn_index_error(ix));
    for (size_t s = 0; rc == LBKNN_OK && s < slots; s++) {
        const int64_t want = d->index[s] == UINT32_MAX ? -1 : (int64_t)d->index[s];
        CHECK(ids[s] == want && memcmp(&dist[s], &d->dist[s], sizeof(float)) == 0,
              "case %d: query %zu slot %zu: id %lld distance %.9g, oracle %lld %.9g", ci,
              s / (size_t)c->k, s % (size_t)c->k, (long long)ids[s], dist[s], (long long)want,
              d->dist[s]);
    }
    const bool full = c->n >= (uint32_t)c->k; /* every slot filled: the vote oracles apply */
    const int classes = lbknn_index_classes(ix);
    CHECK(classes == 4, "case %d: classes %d, expected 4", ci, classes);
    int32_t *pred = malloc(c->nq * sizeof *pred);
    double *proba = malloc((size_t)c->nq * 4 * sizeof *proba), want_p[4];
    double *values = malloc(c->nq * sizeof *values);
    for (int w = 0; w < 2 && full && c->metric != 4; w++) {
        rc =
            lbknn_index_classify(ix, c->nq, d->queries, c->k, (lbknn_weights)w, 1.0, pred, proba);
        CHECK(rc == LBKNN_OK, "case %d: classify: %s", ci, lbknn_index_error(ix));
        rc |= lbknn_index_regress(ix, c->nq, d->queries, c->k, (lbknn_weights)w, values);
        CHECK(rc == LBKNN_OK, "case %d: regress: %s", ci, lbknn_index_error(ix));
        for (uint32_t q = 0; rc == LBKNN_OK && q < c->nq; q++) {
            int32_t lab[64];
            double y[64];
            for (int j = 0; j < c->k; j++) {
                lab[j] = d->labels[d->index[q * (uint32_t)c->k + (uint32_t)j]];
                y[j] = d->targets[d->index[q * (uint32_t)c->k + (uint32_t)j]];
            }
            const float *qd = d->dist + (size_t)q * (size_t)c->k;
            const int32_t want = oracle_vote(qd, lab, c->k, 4, w == 1, want_p);
            CHECK(pred[q] == want, "case %d weights %d query %u: label %d, oracle %d", ci, w, q,
                  pred[q], want);
            for (int cl = 0; cl < 4; cl++)
                CHECK(fabs(proba[q * 4 + (uint32_t)cl] - want_p[cl]) <= 1e-12,
                      "case %d weights %d query %u class %d: p %.17g, oracle %.17g", ci, w, q, cl,
                      proba[q * 4 + (uint32_t)cl], want_p[cl]);
            const double want_v = oracle_regress(qd, y, c->k, w == 1);
            CHECK(fabs(values[q] - want_v) <= 1e-9 * (1 + fabs(want_v)),
                  "case %d weights %d query %u: value %.17g, oracle %.17g", ci, w, q, values[q],
                  want_v);
        }
    }
    free(ids);
    free(dist);
    free(pred);
    free(proba);
    free(values);
}

static void my_rows(const api_case *c, int rank, int size, bool empty, uint32_t *lo,
                    uint32_t *hi);

/* Under the spatial partition each rank searches its own copy of the
 * queries: a NaN in the last rank's copy alone must fail the search on
 * every rank (that rank with its message, the others as remote), with no
 * rank left waiting. */
static void check_bad_copy(lbknn_context *ctx, int rank, int size)
{
    const api_case c = {0, "kdtree", "spatial", 400, 8, 3, 4};
    case_data d;
    make_data(&c, &d, 99);
    uint32_t lo, hi;
    my_rows(&c, rank, size, false, &lo, &hi);
    lbknn_options *o = options_for(&c, c.k);
    lbknn_index *ix = NULL;
    int rc = lbknn_index_build(ctx, o, hi - lo, c.dim, d.ref + (size_t)lo * (size_t)c.dim, NULL,
                               NULL, &ix);
    CHECK(rc == LBKNN_OK, "bad copy: build: %s", lbknn_context_error(ctx));
    if (rank == size - 1)
        d.queries[(c.nq - 1) * (uint32_t)c.dim] = NAN;
    int64_t ids[8 * 4];
    rc = lbknn_index_search(ix, c.nq, d.queries, c.k, ids, NULL);
    const int want = rank == size - 1 ? LBKNN_ERR_INPUT : LBKNN_ERR_REMOTE;
    CHECK(rc == want, "bad copy on rank %d: rank %d got status %d (%s), expected %d", size - 1,
          rank, rc, lbknn_index_error(ix), want);
    if (rank == 0)
        printf("a NaN in rank %d's copy of the queries: rank 0 got \"%s\"\n", size - 1,
               lbknn_index_error(ix));
    lbknn_index_destroy(ix);
    lbknn_options_destroy(o);
    free_data(&d);
}

/* This rank's rows: uneven blocks (rank r gets a share growing with r),
 * or none on the last rank with `empty`; all of them for replicate. */
static void my_rows(const api_case *c, int rank, int size, bool empty, uint32_t *lo, uint32_t *hi)
{
    if (strcmp(c->partition, "replicate") == 0) {
        *lo = 0;
        *hi = c->n;
        return;
    }
    const int parts = empty && size > 1 ? size - 1 : size;
    const uint64_t weight_total = (uint64_t)parts * (uint64_t)(parts + 1) / 2;
    uint64_t before = (uint64_t)rank * (uint64_t)(rank + 1) / 2;
    *lo = rank >= parts ? c->n : (uint32_t)((uint64_t)c->n * before / weight_total);
    before += (uint64_t)rank + 1;
    *hi = rank >= parts ? c->n : (uint32_t)((uint64_t)c->n * before / weight_total);
}

int main(int argc, char **argv)
{
    bool use_mpi = false, empty = false;
    uint64_t seed = 20261202;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--mpi") == 0)
            use_mpi = true;
        else if (strcmp(argv[i], "--empty-rank") == 0)
            empty = true;
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
    }
    int rank = 0, size = 1;
    MPI_Comm world = MPI_COMM_WORLD;
    if (use_mpi) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(world, &rank);
        MPI_Comm_size(world, &size);
    }
    if (rank == 0)
        printf("test_api_oracle: seed %llu, %d rank(s)%s\n", (unsigned long long)seed, size,
               empty ? ", last rank empty" : "");
    char error[512];
    lbknn_options *device = NULL;
    lbknn_options_create(&device);
    lbknn_context *ctx = NULL;
    if (lbknn_context_create(device, use_mpi ? &world : NULL, &ctx, error, sizeof error)) {
        fprintf(stderr, "context: %s\n", error);
        return 1;
    }
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const api_case *c = &cases[ci];
        case_data d;
        make_data(c, &d, seed + ci);
        uint32_t lo, hi;
        my_rows(c, rank, size, empty, &lo, &hi);
        lbknn_options *o = options_for(c, c->k + 2); /* searches ask fewer than knn.k */
        lbknn_index *ix = NULL;
        const int rc =
            lbknn_index_build(ctx, o, hi - lo, c->dim, d.ref + (size_t)lo * (size_t)c->dim,
                              d.labels + lo, d.targets + lo, &ix);
        CHECK(rc == LBKNN_OK, "case %zu: build: %s", ci, lbknn_context_error(ctx));
        if (rc == LBKNN_OK) {
            CHECK(lbknn_index_rows(ix) == c->n, "case %zu: rows %lld", ci,
                  (long long)lbknn_index_rows(ix));
            check_results(c, (int)ci, &d, ix);
            if (rank == 0)
                printf("case %zu: %s %s/%s n=%u nq=%u dim=%d k=%d: engine %s, partition %s\n", ci,
                       metrics[c->metric], c->engine, c->partition, c->n, c->nq, c->dim, c->k,
                       lbknn_index_engine(ix), lbknn_index_partition(ix));
        }
        lbknn_index_destroy(ix);
        lbknn_options_destroy(o);
        free_data(&d);
    }
    if (size > 1)
        check_bad_copy(ctx, rank, size);
    lbknn_context_destroy(ctx);
    lbknn_options_destroy(device);
    if (use_mpi) {
        MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, world);
        MPI_Finalize();
    }
    if (rank == 0)
        printf("%s: %d failure(s); replay: test_api_oracle --seed %llu\n",
               failures ? "FAILED" : "OK", failures, (unsigned long long)seed);
    return failures ? 1 : 0;
}
