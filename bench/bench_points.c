/* Point sets for the scaling benchmarks (bench/scaling.sh), written as
 * fvecs points, ivecs labels and a job.yaml beside them:
 *
 *   bench_points DIR uniform|clustered|skewed N NQ [DIM]
 *
 * uniform: every coordinate uniform in [0, 1); clustered: 64 Gaussian blobs
 * (sigma 0.01) with centres uniform in [0, 1)^DIM, the distributions of
 * bench/kdtree_bench.c. Queries come from the same distribution, except
 * skewed: the references of clustered, the queries from only its first
 * SKEWED_BLOBS blobs (the spatial partition's load-balance case); labels are
 * the blob (mod 10) for clustered data and a hash of the row for uniform.
 * Rows are a pure function of (kind, row), so N = 2e6 starts with the rows
 * of N = 1e6. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BLOBS 64
#define MAX_DIM 64
#define SKEWED_BLOBS 4

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* (0, 1]: never 0, so the Box-Muller log is finite. */
static float unit(uint64_t h) { return (float)((h >> 40) + 1) / (float)(1 << 24); }

/* blobs: how many of the BLOBS a clustered row may come from. */
static void make_row(int clustered, int blobs, int dim, uint64_t stream, uint64_t row, float *p,
                     int32_t *label)
{
    const uint64_t key = mix(mix(stream) ^ row);
    const int blob = (int)(mix(key) % (uint64_t)blobs);
    *label = clustered ? blob % 10 : (int32_t)(key % 10);
    for (int j = 0; j < dim; j++) {
        const uint64_t h = mix(key + (uint64_t)(j + 1) * 0x9E3779B97F4A7C15ull);
        if (!clustered) {
            p[j] = unit(h) - 1.0f / (float)(1 << 24);
            continue;
        }
        const float centre = unit(mix(0xC3A5C85C97CB3127ull ^ (uint64_t)(blob * MAX_DIM + j)));
        p[j] = centre + 0.01f * sqrtf(-2.0f * logf(unit(h))) * cosf(6.2831853f * unit(mix(h)));
    }
}

static int write_set(const char *dir, const char *name, int clustered, int blobs, int dim,
                     uint64_t stream, uint64_t rows)
{
    char points[4096], labels[4096];
    snprintf(points, sizeof points, "%s/%s.fvecs", dir, name);
    snprintf(labels, sizeof labels, "%s/%s-labels.ivecs", dir, name);
    FILE *fp = fopen(points, "wb"), *fl = fopen(labels, "wb");
    if (!fp || !fl)
        return -1;
    const int32_t d = dim, one = 1;
    float p[MAX_DIM];
    int32_t label;
    int bad = 0;
    for (uint64_t i = 0; i < rows && !bad; i++) {
        make_row(clustered, blobs, dim, stream, i, p, &label);
        bad = fwrite(&d, 4, 1, fp) != 1 || fwrite(p, 4, (size_t)dim, fp) != (size_t)dim ||
              fwrite(&one, 4, 1, fl) != 1 || fwrite(&label, 4, 1, fl) != 1;
    }
    bad |= fclose(fp) != 0;
    bad |= fclose(fl) != 0;
    return bad ? -1 : 0;
}

/* mkdir -p: the bench scripts name directories under bench/out/, which a
 * fresh clone does not have. */
static int make_dirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return errno = ENAMETOOLONG, -1;
    for (char *slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/')) {
        if (slash)
            *slash = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -1;
        if (!slash)
            return 0;
        *slash = '/';
    }
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6 ||
        (strcmp(argv[2], "uniform") != 0 && strcmp(argv[2], "clustered") != 0 &&
         strcmp(argv[2], "skewed") != 0)) {
        fprintf(stderr, "usage: bench_points DIR uniform|clustered|skewed N NQ [DIM]\n");
        return 2;
    }
    const char *dir = argv[1];
    const int skewed = strcmp(argv[2], "skewed") == 0;
    const int clustered = skewed || strcmp(argv[2], "clustered") == 0;
    const uint64_t n = strtoull(argv[3], NULL, 10), nq = strtoull(argv[4], NULL, 10);
    const int dim = argc == 6 ? atoi(argv[5]) : 3;
    if (n == 0 || dim < 1 || dim > MAX_DIM) {
        fprintf(stderr, "bench_points: N >= 1 and DIM in 1..%d\n", MAX_DIM);
        return 2;
    }
    if (make_dirs(dir) != 0)
        return perror(dir), 1;
    if (write_set(dir, "reference", clustered, BLOBS, dim, 1, n) ||
        write_set(dir, "query", clustered, skewed ? SKEWED_BLOBS : BLOBS, dim, 2, nq))
        return fprintf(stderr, "bench_points: cannot write %s\n", dir), 1;
    char job[4096];
    snprintf(job, sizeof job, "%s/job.yaml", dir);
    FILE *f = fopen(job, "w");
    if (!f)
        return perror(job), 1;
    fprintf(f,
            "# bench_points %s: %llu reference rows, %llu queries, %d-D\n"
            "reference: {path: reference.fvecs, labels: reference-labels.ivecs}\n"
            "query: {path: query.fvecs, labels: query-labels.ivecs}\n",
            argv[2], (unsigned long long)n, (unsigned long long)nq, dim);
    return fclose(f) != 0;
}
