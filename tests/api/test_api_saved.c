/* lbknn_index_save / lbknn_index_load (lbknn.h): an index loaded from its
 * saved files answers searches, votes' inputs and regressions exactly as
 * the index that was saved (ids, distances, values, and the radius votes'
 * labels and probabilities, whose labels a loaded index's radius lists
 * carry from its shards, compared bit for bit), for both engines and the shard, replicate and spatial partitions,
 * on one process or under mpirun (--mpi); under mpirun on 3 ranks or more
 * the index saved by every rank also loads on fewer (a context over ranks
 * 0 .. P'-1, P' = 1 and P - 1) and answers the same; loading with another
 * metric, or from a directory with a corrupted file, fails with a
 * message. */
/* mkdtemp is POSIX 2008. */
#define _POSIX_C_SOURCE 200809L

#include "lbk_test.h"
#include "lbknn.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 3000
#define NQ 200
#define DIM 4
#define K 7

static float ref[N * DIM], queries[NQ * DIM];
static int32_t labels[N];
static double targets[N];
static int rank, size;
static MPI_Comm world;
static bool use_mpi;
/* Under mpirun: contexts over the ranks 0 .. P'-1 (NULL on the others). */
static lbknn_context *fewer[2];
static int fewer_size[2];

static void make_data(uint64_t seed)
{
    lbk_test_rng rng = LBK_TEST_RNG(seed);
    for (int i = 0; i < N * DIM; i++)
        ref[i] = lbk_test_rng_unit(&rng);
    for (int i = 0; i < NQ * DIM; i++)
        queries[i] = lbk_test_rng_unit(&rng);
    for (int i = 0; i < N; i++) {
        labels[i] = (int32_t)lbk_test_rng_below(&rng, 5);
        targets[i] = (double)labels[i] * 0.5 + 1.0;
    }
}

static lbknn_options *options(const char *engine, const char *partition, const char *metric)
{
    lbknn_options *o = NULL;
    char k[16];
    snprintf(k, sizeof k, "%d", K);
    if (lbknn_options_create(&o) || lbknn_options_set(o, "knn.k", k) ||
        lbknn_options_set(o, "knn.engine", engine) ||
        lbknn_options_set(o, "mpi.partition", partition) ||
        lbknn_options_set(o, "knn.metric", metric) ||
        lbknn_options_set(o, "device.batch", "32")) {
        fprintf(stderr, "options: %s\n", o ? lbknn_options_error(o) : "no memory");
        exit(1);
    }
    return o;
}

typedef struct {
    int64_t ids[NQ * K];
    float dist[NQ * K];
    double values[NQ];
    int32_t radius_labels[NQ];
    double radius_proba[NQ * 5];
} answers;

/* The radius 0.08 leaves some of the queries without a neighbour: their
 * label is the outlier's, 4. */
static int answer(lbknn_index *ix, answers *a)
{
    return lbknn_index_search(ix, NQ, queries, K, a->ids, a->dist) ||
           lbknn_index_regress(ix, NQ, queries, K, LBKNN_WEIGHTS_DISTANCE, a->values) ||
           lbknn_index_radius_classify(ix, NQ, queries, NULL, 0.08f, LBKNN_WEIGHTS_DISTANCE, 0, 4,
                                       a->radius_labels, a->radius_proba);
}

static int fail(const char *what, const char *why)
{
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, why);
    return 1;
}

/* Rank 0 flips one byte of a file the load must read. */
static void corrupt(const char *dir, const char *name)
{
    if (rank == 0) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        FILE *f = fopen(path, "r+b");
        if (f) {
            const int c = fgetc(f);
            fseek(f, 0, SEEK_SET);
            fputc(c ^ 0x40, f);
            fclose(f);
        }
    }
    if (use_mpi)
        MPI_Barrier(world);
}

/* The index saved by every rank, loaded by fewer: the same answers as
 * the index that was saved. */
static int load_on_fewer(const lbknn_options *o, const char *dir, const answers *a)
{
    static answers b;
    int bad = 0;
    for (int i = 0; i < 2; i++) {
        lbknn_index *ix = NULL;
        if (!fewer[i])
            continue;
        if (lbknn_index_load(fewer[i], o, dir, &ix)) {
            bad = fail("load on fewer ranks", lbknn_context_error(fewer[i]));
            continue;
        }
        if (answer(ix, &b))
            bad = fail("search (loaded on fewer ranks)", lbknn_index_error(ix));
        else if (memcmp(a->ids, b.ids, sizeof a->ids) ||
                 memcmp(a->dist, b.dist, sizeof a->dist) ||
                 memcmp(a->values, b.values, sizeof a->values) ||
                 memcmp(a->radius_labels, b.radius_labels, sizeof a->radius_labels) ||
                 memcmp(a->radius_proba, b.radius_proba, sizeof a->radius_proba))
            bad = fail("answers loaded on fewer ranks", "differ from the saved index's");
        else if (rank == 0)
            printf("  loaded on %d rank(s): answers identical\n", fewer_size[i]);
        lbknn_index_destroy(ix);
    }
    if (use_mpi)
        MPI_Barrier(world);
    return bad;
}

static int run_case(lbknn_context *ctx, const char *engine, const char *partition,
                    const char *dir)
{
    const bool all = strcmp(partition, "replicate") == 0;
    const int64_t lo = all ? 0 : (int64_t)N * rank / size,
                  hi = all ? N : (int64_t)N * (rank + 1) / size;
    lbknn_options *o = options(engine, partition, "l2");
    lbknn_index *built = NULL, *loaded = NULL, *other = NULL;
    static answers a, b;
    int bad = 0;
    /* Every rank makes every collective call, whatever failed before, so
     * that none waits for another; messages are rank 0's (the others say
     * "another rank failed"). */
    if (lbknn_index_build(ctx, o, hi - lo, DIM, ref + lo * DIM, labels + lo, targets + lo,
                          &built))
        return fail("build", lbknn_context_error(ctx));
    if (answer(built, &a))
        bad = fail("search (built)", lbknn_index_error(built));
    if (lbknn_index_save(built, dir))
        bad = fail("save", lbknn_index_error(built));
    if (lbknn_index_load(ctx, o, dir, &loaded))
        bad = fail("load", lbknn_context_error(ctx));
    if (loaded && answer(loaded, &b))
        bad = fail("search (loaded)", lbknn_index_error(loaded));
    if (loaded && (memcmp(a.ids, b.ids, sizeof a.ids) || memcmp(a.dist, b.dist, sizeof a.dist) ||
                   memcmp(a.values, b.values, sizeof a.values) ||
                   memcmp(a.radius_labels, b.radius_labels, sizeof a.radius_labels) ||
                   memcmp(a.radius_proba, b.radius_proba, sizeof a.radius_proba)))
        bad = fail("loaded answers", "differ from the saved index's");
    if (loaded && (lbknn_index_rows(loaded) != N || lbknn_index_classes(loaded) != 5 ||
                   strcmp(lbknn_index_engine(loaded), engine) != 0))
        bad = fail("loaded index", "rows, classes or engine differ");
    bad |= load_on_fewer(o, dir, &a);
    lbknn_options *l1 = options(engine, partition, "l1");
    if (lbknn_index_load(ctx, l1, dir, &other) == LBKNN_OK)
        bad = fail("load with metric l1", "succeeded");
    else if (rank == 0 && !strstr(lbknn_context_error(ctx), "metric = l2, this run has l1"))
        bad = fail("load with metric l1: the message does not name the metric",
                   lbknn_context_error(ctx));
    lbknn_index_destroy(other);
    other = NULL;
    corrupt(dir, strcmp(engine, "kdtree") == 0 ? "r0.tree_points" : "r0.points");
    if (lbknn_index_load(ctx, o, dir, &other) == LBKNN_OK)
        bad = fail("load of a corrupted file", "succeeded");
    else if (rank == 0 && !strstr(lbknn_context_error(ctx), "corrupted"))
        bad = fail("load of a corrupted file: the message", lbknn_context_error(ctx));
    lbknn_index_destroy(other);
    lbknn_index_destroy(loaded);
    lbknn_index_destroy(built);
    lbknn_options_destroy(l1);
    lbknn_options_destroy(o);
    if (!bad && rank == 0)
        printf("%s %s, %d rank(s): loaded answers identical; l1 and corruption refused\n", engine,
               partition, size);
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
    const uint64_t seed = 24;
    if (rank == 0)
        printf("test_api_saved: seed %llu, %d rank(s)\n", (unsigned long long)seed, size);
    make_data(seed);
    char dir[256] = {0};
    if (rank == 0) {
        snprintf(dir, sizeof dir, "%s/lbk-api-saved-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir))
            dir[0] = '\0';
    }
    if (use_mpi)
        MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, world);
    if (!dir[0])
        return fail("mkdtemp", "failed");
    char error[512];
    lbknn_options *device = NULL;
    lbknn_options_create(&device);
    lbknn_context *ctx = NULL;
    if (lbknn_context_create(device, use_mpi ? &world : NULL, &ctx, error, sizeof error))
        return fail("context", error);
    for (int i = 0; use_mpi && size >= 3 && i < 2; i++) {
        fewer_size[i] = i == 0 ? 1 : size - 1;
        MPI_Comm sub = MPI_COMM_NULL;
        MPI_Comm_split(world, rank < fewer_size[i] ? 0 : MPI_UNDEFINED, rank, &sub);
        if (sub == MPI_COMM_NULL)
            continue;
        const int failed = lbknn_context_create(device, &sub, &fewer[i], error, sizeof error);
        MPI_Comm_free(&sub); /* the context holds its own duplicate */
        if (failed)
            return fail("context on fewer ranks", error);
    }
    const char *cases[][2] = {
        {"kdtree", "shard"}, {"kdtree", "spatial"}, {"brute", "shard"}, {"brute", "replicate"}};
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char sub[300];
        snprintf(sub, sizeof sub, "%s/%zu", dir, i);
        bad |= run_case(ctx, cases[i][0], cases[i][1], sub);
    }
    lbknn_context_destroy(ctx);
    lbknn_context_destroy(fewer[0]);
    lbknn_context_destroy(fewer[1]);
    lbknn_options_destroy(device);
    if (use_mpi)
        MPI_Barrier(world);
    if (rank == 0) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    }
    if (use_mpi) {
        int any = bad;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, world);
        bad = any;
        MPI_Finalize();
    }
    return bad;
}
