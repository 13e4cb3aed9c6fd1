/* test_api_self DIR K KK ENGINE PARTITION (under mpirun -n P, or alone):
 * the library's self search (lbknn_index_search_self) gives what `lbknn
 * run` with task: graph wrote into DIR/graph-nn.ivecs and
 * DIR/graph-dist.fvecs, byte for byte. Each rank passes an uneven share of
 * DIR/reference.fvecs (rank r: rows [n r^2 / P^2, n (r+1)^2 / P^2), so the
 * owners of the rows are not the CLI's even split), builds the index with
 * knn.k = KK (>= K + 1) and gets the rows of its own points, which rank 0
 * gathers and compares: ids, and distances bit for bit. */
#include "lbknn.h"

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank = 0, size = 1;

static void die(const char *what, const char *why)
{
    fprintf(stderr, "FAIL rank %d: %s: %s\n", rank, what, why);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* A TEXMEX file (.fvecs / .ivecs) without its row headers: rows x dim
 * 4-byte values. */
static void *read_vecs(const char *dir, const char *name, int64_t *rows, int *dim)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        die(path, "cannot open");
    int32_t d = 0;
    if (fread(&d, 4, 1, f) != 1 || d < 1)
        die(path, "bad header");
    fseek(f, 0, SEEK_END);
    const long bytes = ftell(f);
    const size_t row = 4 * ((size_t)d + 1);
    *dim = d;
    *rows = (int64_t)((size_t)bytes / row);
    char *out = malloc((size_t)*rows * (size_t)d * 4 + 1);
    if (!out)
        die(path, "out of memory");
    for (int64_t r = 0; r < *rows; r++) {
        fseek(f, (long)((size_t)r * row + 4), SEEK_SET);
        if (fread(out + (size_t)r * (size_t)d * 4, 4, (size_t)d, f) != (size_t)d)
            die(path, "short read");
    }
    fclose(f);
    return out;
}

static int64_t share_start(int64_t n, int r)
{
    return (int64_t)((double)n * (double)r * (double)r / ((double)size * (double)size));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm world = MPI_COMM_WORLD;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (argc != 6)
        die("usage", "test_api_self DIR K KK ENGINE PARTITION");
    const char *dir = argv[1], *engine = argv[4], *partition = argv[5];
    const int k = atoi(argv[2]);
    int64_t n = 0, gn = 0;
    int dim = 0, gk = 0;
    float *ref = read_vecs(dir, "reference.fvecs", &n, &dim);
    int32_t *want_ids = read_vecs(dir, "graph-nn.ivecs", &gn, &gk);
    float *want_dist = read_vecs(dir, "graph-dist.fvecs", &gn, &gk);
    if (gn != n || gk != k)
        die("graph files", "not the reference set's rows x K");
    const int replicate = strcmp(partition, "replicate") == 0;
    const int64_t lo = replicate ? 0 : share_start(n, rank);
    const int64_t hi = replicate ? n : share_start(n, rank + 1);

    char error[1024] = "";
    lbknn_options *o = NULL;
    if (lbknn_options_create(&o) || lbknn_options_set(o, "knn.k", argv[3]) ||
        lbknn_options_set(o, "knn.engine", engine) ||
        lbknn_options_set(o, "mpi.partition", partition) ||
        lbknn_options_set(o, "device.batch", "97"))
        die("options", lbknn_options_error(o));
    lbknn_context *ctx = NULL;
    if (lbknn_context_create(o, size > 1 ? &world : NULL, &ctx, error, sizeof error))
        die("context", error);
    lbknn_index *ix = NULL;
    if (lbknn_index_build(ctx, o, hi - lo, dim, ref + lo * dim, NULL, NULL, &ix))
        die("build", lbknn_context_error(ctx));
    const int64_t rows = hi - lo;
    int64_t *ids = malloc((size_t)(rows * k + 1) * sizeof *ids);
    float *dist = malloc((size_t)(rows * k + 1) * sizeof *dist);
    if (lbknn_index_search_self(ix, k, ids, dist))
        die("search_self", lbknn_index_error(ix));

    /* Every rank checks its own rows against the CLI's. */
    int64_t bad = 0, first_bad = -1;
    for (int64_t i = 0; i < rows * k; i++) {
        const int64_t slot = lo * k + i;
        if (ids[i] != want_ids[slot] || memcmp(&dist[i], &want_dist[slot], sizeof(float)) != 0) {
            if (first_bad < 0)
                first_bad = slot;
            bad++;
        }
    }
    if (bad)
        fprintf(stderr,
                "rank %d: %lld of %lld entries differ from task graph's; first: row %lld "
                "neighbour %lld: id %lld dist %.9g, task graph %d %.9g\n",
                rank, (long long)bad, (long long)(rows * k), (long long)(first_bad / k),
                (long long)(first_bad % k), (long long)ids[first_bad - lo * k],
                (double)dist[first_bad - lo * k], want_ids[first_bad],
                (double)want_dist[first_bad]);
    int64_t total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT64_T, MPI_SUM, world);
    if (rank == 0)
        printf("%s %s P=%d K=%d knn.k=%s: %lld rows, %s\n", engine, lbknn_index_partition(ix),
               size, k, argv[3], (long long)n, total ? "DIFFERENT" : "byte-identical");
    lbknn_index_destroy(ix);
    lbknn_context_destroy(ctx);
    lbknn_options_destroy(o);
    free(ids);
    free(dist);
    free(ref);
    free(want_ids);
    free(want_dist);
    MPI_Finalize();
    return total ? 1 : 0;
}
