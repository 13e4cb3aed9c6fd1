/* End-to-end oracle: reads a data set written by `lbknn generate` (fvecs +
 * ivecs labels) and the result files of a run, recomputes everything with the
 * independent host oracle and an independent vote, and compares exactly.
 * usage: verify_outputs DATA_DIR K METRIC(l2|l1|linf) WEIGHTS(uniform|distance)
 *                       PREDICTIONS.csv NEIGHBORS.ivecs DISTANCES.fvecs */
#include "knn_oracle.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *read_vecs(const char *path, int *dim, uint32_t *rows)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    int32_t d = 0;
    if (fread(&d, 4, 1, f) != 1 || d <= 0) {
        fprintf(stderr, "%s: bad header\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_SET);
    const long record = 4L * (d + 1);
    *rows = (uint32_t)(size / record);
    *dim = d;
    char *raw = malloc((size_t)size + 1);
    char *data = malloc((size_t)*rows * (size_t)d * 4 + 1);
    if (!raw || !data || fread(raw, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "%s: read failed\n", path);
        exit(1);
    }
    for (uint32_t r = 0; r < *rows; r++)
        memcpy(data + (size_t)r * d * 4, raw + (size_t)r * record + 4, (size_t)d * 4);
    free(raw);
    fclose(f);
    return data;
}

static int fail(const char *what, uint32_t q, int s)
{
    fprintf(stderr, "MISMATCH %s at query %u slot %d\n", what, q, s);
    return 1;
}

/* Independent of src/classify.c: counts per label over a small label range. */
static int32_t vote(const float *keys, const uint32_t *idx, const int32_t *labels, int k,
                    int metric, int distance_weights)
{
    double w[1024] = {0};
    int zero = 0;
    for (int s = 0; s < k; s++)
        zero |= idx[s] != UINT32_MAX && keys[s] == 0.0f;
    for (int s = 0; s < k; s++) {
        if (idx[s] == UINT32_MAX)
            continue;
        const double d = metric == 0 ? sqrtf(keys[s]) : keys[s];
        w[labels[idx[s]]] += !distance_weights ? 1.0 : zero ? (d == 0.0) : 1.0 / d;
    }
    int32_t best = -1;
    for (int32_t l = 0; l < 1024; l++)
        if (w[l] > 0 && (best < 0 || w[l] > w[best]))
            best = l;
    return best;
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: see the comment at the top of verify_outputs.c\n");
        return 2;
    }
    char path[4096];
    int dim, qdim, one;
    uint32_t n, nq, nl, nneigh, ndist;
    const int k = atoi(argv[2]);
    const int metric = strcmp(argv[3], "l2") == 0 ? 0 : strcmp(argv[3], "l1") == 0 ? 1 : 2;
    const int distance_weights = strcmp(argv[4], "distance") == 0;
    snprintf(path, sizeof path, "%s/reference.fvecs", argv[1]);
    float *ref = read_vecs(path, &dim, &n);
    snprintf(path, sizeof path, "%s/reference-labels.ivecs", argv[1]);
    int32_t *labels = read_vecs(path, &one, &nl);
    snprintf(path, sizeof path, "%s/query.fvecs", argv[1]);
    float *queries = read_vecs(path, &qdim, &nq);
    int kk;
    int32_t *neigh = read_vecs(argv[6], &kk, &nneigh);
    float *dist = read_vecs(argv[7], &kk, &ndist);
    if (nl != n || qdim != dim || kk != k || nneigh != nq || ndist != nq) {
        fprintf(stderr, "shape mismatch: n=%u labels=%u dim=%d qdim=%d k=%d/%d rows=%u/%u/%u\n", n,
                nl, dim, qdim, kk, k, nneigh, ndist, nq);
        return 1;
    }
    float *keys = malloc((size_t)nq * k * sizeof *keys);
    uint32_t *idx = malloc((size_t)nq * k * sizeof *idx);
    if (!keys || !idx || oracle_knn(ref, n, queries, nq, dim, metric, k, keys, idx) != 0)
        return 1;
    FILE *pred = fopen(argv[5], "r");
    char line[256];
    if (!pred || !fgets(line, sizeof line, pred) || strcmp(line, "query,label\n") != 0) {
        fprintf(stderr, "%s: missing or wrong header\n", argv[5]);
        return 1;
    }
    for (uint32_t q = 0; q < nq; q++) {
        for (int s = 0; s < k; s++) {
            const size_t at = (size_t)q * k + s;
            const int32_t want_id = idx[at] == UINT32_MAX ? -1 : (int32_t)idx[at];
            const float want_d = metric == 0 ? sqrtf(keys[at]) : keys[at];
            if (neigh[at] != want_id)
                return fail("neighbour id", q, s);
            if (memcmp(&dist[at], &want_d, 4) != 0)
                return fail("distance", q, s);
        }
        unsigned long qq;
        long label;
        if (!fgets(line, sizeof line, pred) || sscanf(line, "%lu,%ld", &qq, &label) != 2 || qq != q)
            return fail("prediction row", q, -1);
        if (label != vote(keys + (size_t)q * k, idx + (size_t)q * k, labels, k, metric,
                          distance_weights))
            return fail("predicted label", q, -1);
    }
    if (fgets(line, sizeof line, pred)) {
        fprintf(stderr, "%s: extra rows\n", argv[5]);
        return 1;
    }
    printf("verified %u queries x %d neighbours, distances and predictions\n", nq, k);
    return 0;
}
