/* test_api_run_compare DIR K ENGINE WEIGHTS: DIR holds `lbknn generate`'s
 * data set and `lbknn run`'s outputs nn.ivecs, dist.fvecs, pred.csv and
 * proba.csv (same_as_run.sh); the library, given the same rows and
 * options, must produce the same bytes. */
#include "lbknn.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* DIR/NAME whole, NUL-terminated (text files compare as strings); its
 * length in *bytes. Any failure ends the test. */
static char *read_file(const char *dir, const char *name, size_t *bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    char *data = calloc((size_t)n + 1, 1);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: cannot read\n", path);
        exit(1);
    }
    fclose(f);
    *bytes = (size_t)n;
    return data;
}

static char *read_text(const char *dir, const char *name)
{
    size_t bytes;
    return read_file(dir, name, &bytes);
}

/* A TEXMEX file (.fvecs / .ivecs): each row its dimension, then the values,
 * returned without the dimensions (4-byte values, row-major). */
static void *read_vecs(const char *dir, const char *name, int64_t *rows, int *dim)
{
    size_t bytes;
    char *file = read_file(dir, name, &bytes);
    int32_t d = 0;
    if (bytes >= 4)
        memcpy(&d, file, 4);
    if (d < 1) {
        fprintf(stderr, "%s/%s: bad header\n", dir, name);
        exit(1);
    }
    const size_t row = 4 * ((size_t)d + 1);
    *dim = d;
    *rows = (int64_t)(bytes / row);
    char *out = malloc((size_t)*rows * (size_t)d * 4);
    for (int64_t r = 0; r < *rows; r++) {
        int32_t head;
        memcpy(&head, file + (size_t)r * row, 4);
        if (head != d) {
            fprintf(stderr, "%s/%s: bad row %lld\n", dir, name, (long long)r);
            exit(1);
        }
        memcpy(out + (size_t)r * (size_t)d * 4, file + (size_t)r * row + 4, (size_t)d * 4);
    }
    free(file);
    return out;
}

static void die_on(int rc, const char *what, const char *message)
{
    if (rc != LBKNN_OK) {
        fprintf(stderr, "%s: %s\n", what, message);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: test_api_run_compare DIR K ENGINE WEIGHTS\n");
        return 2;
    }
    const char *dir = argv[1], *engine = argv[3], *weights_name = argv[4];
    const int k = atoi(argv[2]);
    const lbknn_weights weights = strcmp(weights_name, "distance") == 0  ? LBKNN_WEIGHTS_DISTANCE
                                  : strcmp(weights_name, "softmax") == 0 ? LBKNN_WEIGHTS_SOFTMAX
                                                                         : LBKNN_WEIGHTS_UNIFORM;
    int64_t n, nq, rows;
    int dim, qdim, one;
    float *ref = read_vecs(dir, "reference.fvecs", &n, &dim);
    int32_t *labels = read_vecs(dir, "reference-labels.ivecs", &rows, &one);
    float *queries = read_vecs(dir, "query.fvecs", &nq, &qdim);
    int32_t *run_ids = read_vecs(dir, "nn.ivecs", &rows, &one);
    float *run_dist = read_vecs(dir, "dist.fvecs", &rows, &one);
    char *run_pred = read_text(dir, "pred.csv"), *run_proba = read_text(dir, "proba.csv");

    lbknn_options *o = NULL;
    char error[512], kk[16];
    snprintf(kk, sizeof kk, "%d", k);
    die_on(lbknn_options_create(&o), "options", "");
    die_on(lbknn_options_set(o, "knn.k", kk), "knn.k", lbknn_options_error(o));
    die_on(lbknn_options_set(o, "knn.engine", engine), "knn.engine", lbknn_options_error(o));
    die_on(lbknn_options_set(o, "device.batch", "64"), "device.batch", lbknn_options_error(o));
    lbknn_context *ctx = NULL;
    die_on(lbknn_context_create(o, NULL, &ctx, error, sizeof error), "context", error);
    lbknn_index *ix = NULL;
    die_on(lbknn_index_build(ctx, o, n, dim, ref, labels, NULL, &ix), "build",
           lbknn_context_error(ctx));
    const int classes = lbknn_index_classes(ix);
    int64_t *ids = malloc((size_t)(nq * k) * sizeof *ids);
    float *dist = malloc((size_t)(nq * k) * sizeof *dist);
    int32_t *pred = malloc((size_t)nq * sizeof *pred);
    double *proba = malloc((size_t)nq * (size_t)classes * sizeof *proba);
    die_on(lbknn_index_search(ix, nq, queries, k, ids, dist), "search", lbknn_index_error(ix));
    die_on(lbknn_index_classify(ix, nq, queries, k, weights, 0.5, pred, proba), "classify",
           lbknn_index_error(ix));

    int bad = 0;
    for (int64_t s = 0; s < nq * k; s++)
        if (ids[s] != run_ids[s] || memcmp(&dist[s], &run_dist[s], sizeof(float)) != 0) {
            if (bad++ < 5)
                fprintf(stderr, "slot %lld: library %lld %.9g, lbknn run %d %.9g\n", (long long)s,
                        (long long)ids[s], dist[s], run_ids[s], run_dist[s]);
        }
    /* The CLI's text, rebuilt from the library's answers. */
    size_t cap = (size_t)nq * (64 + (size_t)classes * 20) + 4096, used = 0;
    char *pred_text = malloc(cap), *proba_text = malloc(cap);
    used = (size_t)snprintf(pred_text, cap, "query,label\n");
    for (int64_t q = 0; q < nq; q++)
        used +=
            (size_t)snprintf(pred_text + used, cap - used, "%lld,%d\n", (long long)q, pred[q]);
    used = (size_t)snprintf(proba_text, cap, "query");
    for (int c = 0; c < classes; c++)
        used += (size_t)snprintf(proba_text + used, cap - used, ",p%d", c);
    used += (size_t)snprintf(proba_text + used, cap - used, "\n");
    for (int64_t q = 0; q < nq; q++) {
        used += (size_t)snprintf(proba_text + used, cap - used, "%lld", (long long)q);
        for (int c = 0; c < classes; c++)
            used +=
                (size_t)snprintf(proba_text + used, cap - used, ",%.9g", proba[q * classes + c]);
        used += (size_t)snprintf(proba_text + used, cap - used, "\n");
    }
    if (strcmp(pred_text, run_pred) != 0) {
        fprintf(stderr, "predictions differ from lbknn run's\n");
        bad++;
    }
    if (strcmp(proba_text, run_proba) != 0) {
        fprintf(stderr, "probabilities differ from lbknn run's\n");
        bad++;
    }
    printf("%s: %s engine %s weights %s: %lld queries x %d, %d classes: %s\n", dir,
           lbknn_index_engine(ix), engine, weights_name, (long long)nq, k, classes,
           bad ? "DIFFERENT" : "identical");
    lbknn_index_destroy(ix);
    lbknn_context_destroy(ctx);
    lbknn_options_destroy(o);
    void *arrays[] = {ref, labels, queries, run_ids, run_dist,  run_pred,  run_proba,
                      ids, dist,   pred,    proba,   pred_text, proba_text};
    for (size_t i = 0; i < sizeof arrays / sizeof *arrays; i++)
        free(arrays[i]);
    return bad ? 1 : 0;
}
