/* End-to-end oracle: reads a data set written by `lbknn generate` (fvecs +
 * ivecs labels) and the result files of a run, recomputes everything with the
 * independent host oracle and an independent vote, and compares exactly.
 * usage: verify_outputs outputs DATA_DIR K METRIC(l2|l1|linf) WEIGHTS(uniform|distance)
 *                       PREDICTIONS.csv NEIGHBORS.ivecs DISTANCES.fvecs */
#include "knn_oracle.h"
#include "lbk_test.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole fvecs/ivecs file: rows of dim 4-byte values. */
static void *read_vecs(const char *path, int *dim, uint32_t *rows)
{
    FILE *f = fopen(path, "rb");
    LBK_ASSERT_TRUE(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    int32_t d = 0;
    LBK_ASSERT_TRUE(fread(&d, 4, 1, f) == 1 && d > 0, "%s: bad header", path);
    fseek(f, 0, SEEK_SET);
    const long record = 4L * (d + 1);
    *rows = (uint32_t)(size / record);
    *dim = d;
    char *raw = malloc((size_t)size + 1);
    char *data = malloc((size_t)*rows * (size_t)d * 4 + 1);
    LBK_ASSERT_TRUE(raw && data && fread(raw, 1, (size_t)size, f) == (size_t)size,
                    "%s: read failed", path);
    for (uint32_t r = 0; r < *rows; r++)
        memcpy(data + (size_t)r * d * 4, raw + (size_t)r * record + 4, (size_t)d * 4);
    free(raw);
    fclose(f);
    return data;
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

typedef struct {
    int k, metric, distance_weights;
    int dim;
    uint32_t n, nq;
    float *ref, *queries;
    int32_t *labels;
} problem;

/* The data set and the run's settings, from the arguments. */
static void load_problem(problem *p)
{
    char path[4096];
    int one, qdim;
    uint32_t nl;
    const char *dir = lbk_test_arg(0), *metric = lbk_test_arg(2);
    p->k = atoi(lbk_test_arg(1));
    p->metric = strcmp(metric, "l2") == 0 ? 0 : strcmp(metric, "l1") == 0 ? 1 : 2;
    p->distance_weights = strcmp(lbk_test_arg(3), "distance") == 0;
    snprintf(path, sizeof path, "%s/reference.fvecs", dir);
    p->ref = read_vecs(path, &p->dim, &p->n);
    snprintf(path, sizeof path, "%s/reference-labels.ivecs", dir);
    p->labels = read_vecs(path, &one, &nl);
    snprintf(path, sizeof path, "%s/query.fvecs", dir);
    p->queries = read_vecs(path, &qdim, &p->nq);
    LBK_ASSERT_EQ_U64(nl, p->n, "labels");
    LBK_ASSERT_EQ_INT(qdim, p->dim, "query dimension");
}

/* Neighbours, distances and predictions of the run against the oracle; the
 * first difference stops the check. */
static void case_outputs(void)
{
    lbk_test_args(7, 7,
                  "DATA_DIR K METRIC WEIGHTS PREDICTIONS.csv NEIGHBORS.ivecs DISTANCES.fvecs");
    problem p;
    load_problem(&p);
    const int k = p.k;
    int kk, kd;
    uint32_t nneigh, ndist;
    int32_t *neigh = read_vecs(lbk_test_arg(5), &kk, &nneigh);
    float *dist = read_vecs(lbk_test_arg(6), &kd, &ndist);
    LBK_ASSERT_EQ_INT(kk, k, "neighbours per row");
    LBK_ASSERT_EQ_INT(kd, k, "distances per row");
    LBK_ASSERT_EQ_U64(nneigh, p.nq, "neighbour rows");
    LBK_ASSERT_EQ_U64(ndist, p.nq, "distance rows");
    float *keys = malloc((size_t)p.nq * k * sizeof *keys);
    uint32_t *idx = malloc((size_t)p.nq * k * sizeof *idx);
    LBK_ASSERT_TRUE(keys && idx, "out of memory");
    LBK_ASSERT_EQ_INT(oracle_knn(p.ref, p.n, p.queries, p.nq, p.dim, p.metric, k, keys, idx), 0);
    const char *predictions = lbk_test_arg(4);
    FILE *pred = fopen(predictions, "r");
    char line[256] = "";
    LBK_ASSERT_TRUE(pred && fgets(line, sizeof line, pred), "cannot read %s", predictions);
    LBK_ASSERT_EQ_STR(line, "query,label\n", "%s: header", predictions);
    for (uint32_t q = 0; q < p.nq; q++) {
        for (int s = 0; s < k; s++) {
            const size_t at = (size_t)q * k + s;
            const int32_t want_id = idx[at] == UINT32_MAX ? -1 : (int32_t)idx[at];
            const float want_d = p.metric == 0 ? sqrtf(keys[at]) : keys[at];
            LBK_ASSERT_EQ_INT(neigh[at], want_id, "neighbour id of query %u slot %d", q, s);
            LBK_ASSERT_EQ_FLOAT(dist[at], want_d, "distance of query %u slot %d", q, s);
        }
        unsigned long qq = 0;
        long label = 0;
        LBK_ASSERT_TRUE(fgets(line, sizeof line, pred) && sscanf(line, "%lu,%ld", &qq, &label) == 2,
                        "%s: prediction row of query %u", predictions, q);
        LBK_ASSERT_EQ_U64(qq, q, "%s: prediction row", predictions);
        LBK_ASSERT_EQ_INT(label, vote(keys + (size_t)q * k, idx + (size_t)q * k, p.labels, k,
                                      p.metric, p.distance_weights),
                          "predicted label of query %u", q);
    }
    LBK_ASSERT_FALSE(fgets(line, sizeof line, pred), "%s: extra rows", predictions);
    printf("verified %u queries x %d neighbours, distances and predictions\n", p.nq, k);
    fclose(pred);
    free(keys);
    free(idx);
    free(neigh);
    free(dist);
    free(p.ref);
    free(p.queries);
    free(p.labels);
}

static const lbk_test_case cases[] = {
    {"outputs", case_outputs},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
