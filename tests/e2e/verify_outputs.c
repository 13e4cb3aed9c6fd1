/* End-to-end oracle: reads a data set written by `lbknn generate` (fvecs +
 * ivecs labels) and the result files of a run, recomputes everything with the
 * independent host oracle and an independent vote, and compares exactly.
 * usage: verify_outputs outputs DATA_DIR K METRIC(l2|l1|linf|cosine|ip)
 *                       WEIGHTS(uniform|distance|softmax) PREDICTIONS.csv
 *                       NEIGHBORS.ivecs DISTANCES.fvecs [TEMPERATURE]
 *        verify_outputs same-arrays A B
 *            A and B (each .ivecs/.fvecs, .ibin/.fbin or .npy) hold the same
 *            rows of the same 4-byte values
 *        verify_outputs probabilities PROBABILITIES.csv PREDICTIONS.csv QUERIES
 *            one row per query, each summing to 1, its largest entry (the
 *            smallest such class) the predicted label */
#include "knn_oracle.h"
#include "lbk_test.h"

#include <math.h>
#include <stdbool.h>
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

enum { UNIFORM, DISTANCE, SOFTMAX };

/* Independent of src/classify.c: per-label sums over a small label range,
 * in slot order. Softmax weighs exp((sim - sim_max) / T), sim the dot
 * product (cosine, ip) or minus the distance. */
static int32_t vote(const float *keys, const uint32_t *idx, const int32_t *labels, int k,
                    int metric, int weights, double temperature)
{
    double w[1024] = {0}, sim_max = -INFINITY;
    int zero = 0, voted[1024] = {0};
    for (int s = 0; s < k; s++) {
        if (idx[s] == UINT32_MAX)
            continue;
        zero |= oracle_distance(keys[s], metric) == 0.0f;
        const double sim = metric >= 3 ? -(double)keys[s] : -(double)oracle_distance(keys[s], metric);
        sim_max = sim > sim_max ? sim : sim_max;
    }
    for (int s = 0; s < k; s++) {
        if (idx[s] == UINT32_MAX)
            continue;
        const double d = oracle_distance(keys[s], metric);
        const double sim = metric >= 3 ? -(double)keys[s] : -d;
        const int32_t l = labels[idx[s]];
        voted[l] = 1;
        w[l] += weights == UNIFORM    ? 1.0
                : weights == DISTANCE ? (zero ? (d == 0.0) : 1.0 / d)
                                      : exp((sim - sim_max) / temperature);
    }
    int32_t best = -1;
    for (int32_t l = 0; l < 1024; l++)
        if (voted[l] && (best < 0 || w[l] > w[best]))
            best = l;
    return best;
}

typedef struct {
    int k, metric, weights;
    double temperature;
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
    const char *const metrics[] = {"l2", "l1", "linf", "cosine", "ip"};
    p->k = atoi(lbk_test_arg(1));
    p->metric = -1;
    for (int m = 0; m < 5; m++)
        if (strcmp(metric, metrics[m]) == 0)
            p->metric = m;
    LBK_ASSERT_TRUE(p->metric >= 0, "unknown metric %s", metric);
    const char *weights = lbk_test_arg(3);
    p->weights = strcmp(weights, "distance") == 0  ? DISTANCE
                 : strcmp(weights, "softmax") == 0 ? SOFTMAX
                                                   : UNIFORM;
    p->temperature = lbk_test_arg_count() > 7 ? atof(lbk_test_arg(7)) : 0.07;
    snprintf(path, sizeof path, "%s/reference.fvecs", dir);
    p->ref = read_vecs(path, &p->dim, &p->n);
    snprintf(path, sizeof path, "%s/reference-labels.ivecs", dir);
    p->labels = read_vecs(path, &one, &nl);
    snprintf(path, sizeof path, "%s/query.fvecs", dir);
    p->queries = read_vecs(path, &qdim, &p->nq);
    LBK_ASSERT_EQ_U64(nl, p->n, "labels");
    LBK_ASSERT_EQ_INT(qdim, p->dim, "query dimension");
    if (p->metric == 3) { /* cosine: the rows every engine sees */
        oracle_normalize(p->ref, p->n, p->dim);
        oracle_normalize(p->queries, p->nq, p->dim);
    }
}

/* Neighbours, distances and predictions of the run against the oracle; the
 * first difference stops the check. */
static void case_outputs(void)
{
    lbk_test_args(7, 8,
                  "DATA_DIR K METRIC WEIGHTS PREDICTIONS.csv NEIGHBORS.ivecs DISTANCES.fvecs "
                  "[TEMPERATURE]");
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
            const float want_d = idx[at] == UINT32_MAX ? INFINITY : oracle_distance(keys[at], p.metric);
            LBK_ASSERT_EQ_INT(neigh[at], want_id, "neighbour id of query %u slot %d", q, s);
            LBK_ASSERT_EQ_FLOAT(dist[at], want_d, "distance of query %u slot %d", q, s);
        }
        unsigned long qq = 0;
        long label = 0;
        LBK_ASSERT_TRUE(fgets(line, sizeof line, pred) && sscanf(line, "%lu,%ld", &qq, &label) == 2,
                        "%s: prediction row of query %u", predictions, q);
        LBK_ASSERT_EQ_U64(qq, q, "%s: prediction row", predictions);
        LBK_ASSERT_EQ_INT(label, vote(keys + (size_t)q * k, idx + (size_t)q * k, p.labels, k,
                                      p.metric, p.weights, p.temperature),
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

/* A result array of any layout as rows x cols raw 4-byte values (malloc'd),
 * read with nothing from src/: TEXMEX records, big-ann header, or .npy. */
static uint32_t *read_array(const char *path, uint32_t *rows, uint32_t *cols)
{
    size_t n = strlen(path);
    const bool npy = n > 4 && strcmp(path + n - 4, ".npy") == 0;
    const bool bin = n > 5 && (strcmp(path + n - 5, ".ibin") == 0 || strcmp(path + n - 5, ".fbin") == 0);
    if (!npy && !bin) {
        int dim = 0;
        uint32_t *v = read_vecs(path, &dim, rows);
        *cols = (uint32_t)dim;
        return v;
    }
    FILE *f = fopen(path, "rb");
    LBK_ASSERT_TRUE(f != NULL, "cannot open %s", path);
    unsigned char head[256];
    LBK_ASSERT_TRUE(fread(head, 1, 10, f) == 10, "%s: short file", path);
    size_t skip = 8;
    if (npy) {
        LBK_ASSERT_TRUE(memcmp(head, "\x93NUMPY\x01\x00", 8) == 0, "%s: not .npy 1.0", path);
        const size_t len = (size_t)head[8] | (size_t)head[9] << 8;
        LBK_ASSERT_TRUE(len < sizeof head - 10 && fread(head + 10, 1, len, f) == len, "%s", path);
        head[10 + len] = '\0';
        const char *shape = strstr((char *)head + 10, "'shape': (");
        LBK_ASSERT_TRUE(shape && sscanf(shape, "'shape': (%u, %u)", rows, cols) == 2,
                        "%s: no 2-D shape in '%s'", path, (char *)head + 10);
        LBK_ASSERT_TRUE(strstr((char *)head + 10, "'fortran_order': False") != NULL, "%s", path);
        skip = 10 + len;
    } else {
        memcpy(rows, head, 4);
        memcpy(cols, head + 4, 4);
    }
    const size_t bytes = (size_t)*rows * *cols * 4;
    uint32_t *v = malloc(bytes + 4);
    LBK_ASSERT_TRUE(v && fseek(f, (long)skip, SEEK_SET) == 0 && fread(v, 1, bytes, f) == bytes,
                    "%s: data", path);
    LBK_ASSERT_TRUE(fgetc(f) == EOF, "%s: bytes after the data", path);
    fclose(f);
    return v;
}

static void case_same_arrays(void)
{
    lbk_test_args(2, 2, "A B");
    uint32_t ra, ca, rb, cb;
    uint32_t *a = read_array(lbk_test_arg(0), &ra, &ca), *b = read_array(lbk_test_arg(1), &rb, &cb);
    LBK_ASSERT_EQ_U64(ra, rb, "rows");
    LBK_ASSERT_EQ_U64(ca, cb, "columns");
    for (size_t i = 0; i < (size_t)ra * ca; i++)
        LBK_ASSERT_EQ_U64(a[i], b[i], "row %zu column %zu", i / ca, i % ca);
    printf("same %u x %u arrays\n", ra, ca);
    free(a);
    free(b);
}

/* The probabilities CSV: header query,p0..; each row's query number, values
 * summing to 1 (to print precision), its argmax the prediction. */
static void case_probabilities(void)
{
    lbk_test_args(3, 3, "PROBABILITIES.csv PREDICTIONS.csv QUERIES");
    FILE *pf = fopen(lbk_test_arg(0), "r"), *qf = fopen(lbk_test_arg(1), "r");
    const long nq = atol(lbk_test_arg(2));
    LBK_ASSERT_TRUE(pf && qf, "cannot open the files");
    static char line[1 << 16], pred[256];
    LBK_ASSERT_TRUE(fgets(line, sizeof line, pf) && strncmp(line, "query,p0", 8) == 0, "header");
    LBK_ASSERT_TRUE(fgets(pred, sizeof pred, qf) != NULL, "predictions header");
    long q = 0;
    for (; fgets(line, sizeof line, pf); q++) {
        char *p = line, *end;
        LBK_ASSERT_EQ_INT(strtol(p, &end, 10), q, "query number");
        double sum = 0.0, best = -1.0;
        long best_class = -1;
        for (long c = 0; *end == ','; c++) {
            const double v = strtod(end + 1, &end);
            sum += v;
            if (v > best) {
                best = v;
                best_class = c;
            }
        }
        LBK_EXPECT_TRUE(fabs(sum - 1.0) < 1e-6, "query %ld: probabilities sum to %.9g", q, sum);
        long qq = -1, label = -2;
        LBK_ASSERT_TRUE(fgets(pred, sizeof pred, qf) && sscanf(pred, "%ld,%ld", &qq, &label) == 2,
                        "prediction of query %ld", q);
        LBK_EXPECT_EQ_INT(label, best_class, "query %ld: prediction vs largest probability", q);
    }
    LBK_EXPECT_EQ_INT(q, nq, "probability rows");
    printf("verified %ld probability rows\n", q);
    fclose(pf);
    fclose(qf);
}

static const lbk_test_case cases[] = {
    {"outputs", case_outputs},
    {"same-arrays", case_same_arrays},
    {"probabilities", case_probabilities},
};

LBK_TEST_MAIN(LBK_TEST_CASES(cases))
