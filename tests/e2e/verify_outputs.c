/* End-to-end oracle: reads a data set written by `lbknn generate` (fvecs +
 * ivecs labels) and the result files of a run, recomputes everything with the
 * independent host oracle and an independent vote, and compares exactly.
 * usage: verify_outputs outputs DATA_DIR K METRIC(l2|l1|linf|cosine|ip)
 *                       WEIGHTS(uniform|distance|softmax) PREDICTIONS.csv
 *                       NEIGHBORS DISTANCES [TEMPERATURE]
 *                       [probabilities=PROBABILITIES.csv] [report=REPORT.yaml]
 *            neighbours and distances in any layout lbknn writes (.ivecs /
 *            .fvecs, .ibin / .fbin, .npy); probabilities=: every class's
 *            probability recomputed from the oracle's neighbours (its score
 *            over the sum of all scores, scikit-learn's predict_proba);
 *            report=: accuracy, top-5 accuracy and the confusion matrix
 *            recomputed from DATA_DIR/query-labels.ivecs and the same votes
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

/* Labels the independent vote handles (scores per label in an array). */
#define MAX_CLASSES 4096

/* Independent of src/core/classify.c: per-label sums in slot order into
 * w[0..MAX_CLASSES) (voted[l]: label l has a neighbour). Softmax weighs
 * exp((sim - sim_max) / T), sim the dot product (cosine, ip) or minus the
 * distance; distance weighs 1/d, or, when a neighbour is at distance 0,
 * 1 for those and 0 for the others. */
static void class_weights(const float *keys, const uint32_t *idx, const int32_t *labels, int k,
                          int metric, int weights, double temperature, double *w, int *voted)
{
    double sim_max = -INFINITY;
    int zero = 0;
    for (int l = 0; l < MAX_CLASSES; l++) {
        w[l] = 0.0;
        voted[l] = 0;
    }
    for (int s = 0; s < k; s++) {
        if (idx[s] == UINT32_MAX)
            continue;
        zero |= oracle_distance(keys[s], metric) == 0.0f;
        const double sim =
            metric >= 3 ? -(double)keys[s] : -(double)oracle_distance(keys[s], metric);
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
}

/* The largest score among labels with a neighbour, ties to the smallest;
 * -1 when no neighbour votes. */
static int32_t best_class(const double *w, const int *voted)
{
    int32_t best = -1;
    for (int32_t l = 0; l < MAX_CLASSES; l++)
        if (voted[l] && (best < 0 || w[l] > w[best]))
            best = l;
    return best;
}

/* The top-5 of docs/user-guide.md: every class 0, 1, 2, ... ranked by score (0 without
 * neighbours) descending, ties to the smaller label; truth among the first
 * five. Counted directly: the classes that rank before truth. */
static int in_top5(const double *w, int32_t truth)
{
    const double st = truth >= 0 && truth < MAX_CLASSES ? w[truth] : 0.0;
    int before = 0;
    for (int32_t c = 0; c < MAX_CLASSES; c++)
        if (c != truth && (w[c] > st || (w[c] == st && c < truth)))
            before++;
    return before < 5;
}

typedef struct {
    int k, metric, weights;
    double temperature;
    int dim;
    uint32_t n, nq;
    float *ref, *queries;
    int32_t *labels;
    int32_t label_max; /* the largest reference label */
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
                 : strcmp(weights, "uniform") == 0 ? UNIFORM
                                                   : -1;
    LBK_ASSERT_TRUE(p->weights >= 0, "unknown weights %s", weights);
    p->temperature = 0.07;
    if (lbk_test_arg_count() > 7 && !strchr(lbk_test_arg(7), '='))
        p->temperature = atof(lbk_test_arg(7));
    snprintf(path, sizeof path, "%s/reference.fvecs", dir);
    p->ref = read_vecs(path, &p->dim, &p->n);
    snprintf(path, sizeof path, "%s/reference-labels.ivecs", dir);
    p->labels = read_vecs(path, &one, &nl);
    snprintf(path, sizeof path, "%s/query.fvecs", dir);
    p->queries = read_vecs(path, &qdim, &p->nq);
    LBK_ASSERT_EQ_U64(nl, p->n, "labels");
    LBK_ASSERT_EQ_INT(qdim, p->dim, "query dimension");
    p->label_max = -1;
    for (uint32_t i = 0; i < p->n; i++) {
        LBK_ASSERT_TRUE(p->labels[i] >= 0 && p->labels[i] < MAX_CLASSES,
                        "reference label %d of row %u outside 0..%d", p->labels[i], i,
                        MAX_CLASSES - 1);
        p->label_max = p->labels[i] > p->label_max ? p->labels[i] : p->label_max;
    }
    if (p->metric == 3) { /* cosine: the rows every engine sees */
        oracle_normalize(p->ref, p->n, p->dim);
        oracle_normalize(p->queries, p->nq, p->dim);
    }
}

/* A result array of any layout as rows x cols raw 4-byte values (malloc'd),
 * read with nothing from src/: TEXMEX records, big-ann header, or .npy. */
static uint32_t *read_array(const char *path, uint32_t *rows, uint32_t *cols)
{
    size_t n = strlen(path);
    const bool npy = n > 4 && strcmp(path + n - 4, ".npy") == 0;
    const bool bin =
        n > 5 && (strcmp(path + n - 5, ".ibin") == 0 || strcmp(path + n - 5, ".fbin") == 0);
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

/* The report's line "KEY: VALUE" (VALUE up to the end of the line, at most
 * n bytes); 0 when there is none. */
static int report_value(const char *report, const char *key, char *value, size_t n)
{
    const size_t len = strlen(key);
    for (const char *line = report; line && *line;) {
        const char *nl = strchr(line, '\n');
        if (strncmp(line, key, len) == 0 && line[len] == ':' && line[len + 1] == ' ') {
            const char *v = line + len + 2;
            const size_t vl = nl ? (size_t)(nl - v) : strlen(v);
            snprintf(value, n, "%.*s", (int)vl, v);
            return 1;
        }
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    LBK_ASSERT_TRUE(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    LBK_ASSERT_TRUE(text && fread(text, 1, (size_t)size, f) == (size_t)size, "%s: read", path);
    text[size] = '\0';
    fclose(f);
    return text;
}

/* What the report's accuracy section must say, recomputed from the votes. */
typedef struct {
    uint64_t evaluated, correct, correct_top5, other;
    int classes;      /* of the confusion matrix: the largest label anywhere + 1 */
    uint64_t *matrix; /* classes x classes, [true][predicted] */
} tally;

/* The integer of `key`, which must be there. */
static uint64_t report_count(const char *report, const char *path, const char *key)
{
    char v[128];
    LBK_ASSERT_TRUE(report_value(report, key, v, sizeof v), "%s: no '%s:' line", path, key);
    char *end = NULL;
    const unsigned long long n = strtoull(v, &end, 10);
    LBK_ASSERT_TRUE(end != v && *end == '\0', "%s: %s: '%s' is not a count", path, key, v);
    return n;
}

static double report_ratio(const char *report, const char *path, const char *key)
{
    char v[128];
    LBK_ASSERT_TRUE(report_value(report, key, v, sizeof v), "%s: no '%s:' line", path, key);
    char *end = NULL;
    const double x = strtod(v, &end);
    LBK_ASSERT_TRUE(end != v && *end == '\0', "%s: %s: '%s' is not a number", path, key, v);
    return x;
}

/* accuracy/correct/evaluated, top5_accuracy/correct_top5 and every row of
 * the confusion matrix (rows: true label, columns: predicted). */
static void check_report(const char *path, const tally *t)
{
    char *report = read_text(path);
    LBK_EXPECT_EQ_U64(report_count(report, path, "evaluated"), t->evaluated, "%s: evaluated",
                      path);
    LBK_EXPECT_EQ_U64(report_count(report, path, "correct"), t->correct, "%s: correct", path);
    LBK_EXPECT_EQ_U64(report_count(report, path, "correct_top5"), t->correct_top5,
                      "%s: correct_top5", path);
    /* Printed with 6 decimals. */
    LBK_EXPECT_NEAR(report_ratio(report, path, "accuracy"),
                    (double)t->correct / (double)t->evaluated, 5.1e-7, "%s: accuracy", path);
    LBK_EXPECT_NEAR(report_ratio(report, path, "top5_accuracy"),
                    (double)t->correct_top5 / (double)t->evaluated, 5.1e-7, "%s: top5_accuracy",
                    path);
    const char *m = strstr(report, "\nconfusion_matrix:");
    if (t->classes == 0) {
        LBK_EXPECT_TRUE(m == NULL, "%s: a confusion matrix for more than 256 classes", path);
    } else {
        LBK_ASSERT_TRUE(m != NULL, "%s: no confusion_matrix", path);
        const char *line = strchr(m + 1, '\n');
        for (int r = 0; r < t->classes; r++) {
            LBK_ASSERT_TRUE(line && strncmp(line, "\n  - [", 6) == 0,
                            "%s: confusion_matrix row %d missing", path, r);
            const char *p = line + 6;
            for (int c = 0; c < t->classes; c++) {
                char *end = NULL;
                const unsigned long long v = strtoull(p, &end, 10);
                LBK_ASSERT_TRUE(end != p, "%s: confusion_matrix row %d column %d", path, r, c);
                LBK_EXPECT_EQ_U64(v, t->matrix[(size_t)r * t->classes + c],
                                  "%s: confusion_matrix[true %d][predicted %d]", path, r, c);
                p = end;
                const char *sep = c + 1 < t->classes ? ", " : "]";
                LBK_ASSERT_TRUE(strncmp(p, sep, strlen(sep)) == 0,
                                "%s: confusion_matrix row %d: '%s' after column %d", path, r, sep,
                                c);
                p += strlen(sep);
            }
            line = strchr(line + 1, '\n');
        }
        LBK_EXPECT_FALSE(line && strncmp(line, "\n  - [", 6) == 0,
                         "%s: confusion_matrix has more than %d rows", path, t->classes);
    }
    char v[64];
    if (t->other)
        LBK_EXPECT_EQ_U64(report_count(report, path, "confusion_outside_matrix"), t->other, "%s",
                          path);
    else
        LBK_EXPECT_FALSE(report_value(report, "confusion_outside_matrix", v, sizeof v),
                         "%s: confusion_outside_matrix", path);
    free(report);
}

/* One probabilities row against the scores: "q,p0,...,p{classes-1}", each
 * w[c] / (the sum of w in label order), 0 printed as "0", else %.9g (a
 * relative error of 5e-9 at most). NaN never passes. */
static void check_probability_row(const char *path, const char *line, uint32_t q, const double *w,
                                  int classes)
{
    double total = 0.0;
    for (int c = 0; c < classes; c++)
        total += w[c];
    char *end = NULL;
    const unsigned long qq = strtoul(line, &end, 10);
    LBK_ASSERT_TRUE(end != line && qq == q, "%s: row of query %u starts '%.20s'", path, q, line);
    for (int c = 0; c < classes; c++) {
        LBK_ASSERT_TRUE(*end == ',', "%s: query %u: column p%d missing", path, q, c);
        const char *v = end + 1;
        const double got = strtod(v, &end);
        LBK_ASSERT_TRUE(end != v, "%s: query %u: p%d is not a number", path, q, c);
        const double want = total > 0.0 ? w[c] / total : 0.0;
        if (want == 0.0)
            LBK_ASSERT_TRUE(got == 0.0 && end - v == 1, "%s: query %u: p%d is '%.*s', want 0",
                            path, q, c, (int)(end - v), v);
        else
            LBK_ASSERT_NEAR(got, want, 1e-8 * want, "%s: query %u: p%d", path, q, c);
    }
    LBK_ASSERT_TRUE(*end == '\n' || *end == '\0', "%s: query %u: more than %d columns", path, q,
                    classes);
}

/* Neighbours, distances and predictions of the run against the oracle, and
 * the probabilities and the report's accuracy when named; the first
 * difference stops the check. */
static void case_outputs(void)
{
    lbk_test_args(7, 10,
                  "DATA_DIR K METRIC WEIGHTS PREDICTIONS.csv NEIGHBORS DISTANCES "
                  "[TEMPERATURE] [probabilities=FILE] [report=FILE]");
    problem p;
    load_problem(&p);
    const char *proba_path = NULL, *report_path = NULL;
    for (int i = 7; i < lbk_test_arg_count(); i++) {
        const char *a = lbk_test_arg(i);
        if (strncmp(a, "probabilities=", 14) == 0)
            proba_path = a + 14;
        else if (strncmp(a, "report=", 7) == 0)
            report_path = a + 7;
        else
            LBK_ASSERT_TRUE(i == 7 && !strchr(a, '='), "unknown argument '%s'", a);
    }
    const int k = p.k;
    uint32_t kk, kd, nneigh, ndist;
    int32_t *neigh = (int32_t *)read_array(lbk_test_arg(5), &nneigh, &kk);
    float *dist = (float *)read_array(lbk_test_arg(6), &ndist, &kd);
    LBK_ASSERT_EQ_U64(kk, (uint64_t)k, "neighbours per row");
    LBK_ASSERT_EQ_U64(kd, (uint64_t)k, "distances per row");
    LBK_ASSERT_EQ_U64(nneigh, p.nq, "neighbour rows");
    LBK_ASSERT_EQ_U64(ndist, p.nq, "distance rows");
    float *keys = malloc((size_t)p.nq * k * sizeof *keys + 4);
    uint32_t *idx = malloc((size_t)p.nq * k * sizeof *idx + 4);
    double *w = malloc(MAX_CLASSES * sizeof *w);
    int *voted = malloc(MAX_CLASSES * sizeof *voted);
    LBK_ASSERT_TRUE(keys && idx && w && voted, "out of memory");
    LBK_ASSERT_EQ_INT(oracle_knn(p.ref, p.n, p.queries, p.nq, p.dim, p.metric, k, keys, idx), 0);

    int32_t *truth = NULL;
    tally t = {0};
    if (report_path) {
        char path[4096];
        int one;
        uint32_t nt;
        snprintf(path, sizeof path, "%s/query-labels.ivecs", lbk_test_arg(0));
        truth = read_vecs(path, &one, &nt);
        LBK_ASSERT_EQ_U64(nt, p.nq, "%s: rows", path);
        int32_t label_max = p.label_max;
        for (uint32_t q = 0; q < p.nq; q++) {
            LBK_ASSERT_TRUE(truth[q] >= 0 && truth[q] < MAX_CLASSES, "%s: label %d", path,
                            truth[q]);
            label_max = truth[q] > label_max ? truth[q] : label_max;
        }
        /* The report carries a matrix up to 256 classes. */
        t.classes = label_max + 1 <= 256 ? label_max + 1 : 0;
        t.matrix = calloc((size_t)t.classes * t.classes + 1, sizeof *t.matrix);
        LBK_ASSERT_TRUE(t.matrix != NULL, "out of memory");
    }
    const int classes = p.label_max + 1;
    FILE *proba = NULL;
    static char row[1 << 16];
    if (proba_path) {
        proba = fopen(proba_path, "r");
        LBK_ASSERT_TRUE(proba && fgets(row, sizeof row, proba), "cannot read %s", proba_path);
        char want[1 << 16];
        int len = snprintf(want, sizeof want, "query");
        for (int c = 0; c < classes && len < (int)sizeof want - 16; c++)
            len += snprintf(want + len, sizeof want - (size_t)len, ",p%d", c);
        snprintf(want + len, sizeof want - (size_t)len, "\n");
        LBK_ASSERT_EQ_STR(row, want, "%s: header", proba_path);
    }

    const char *predictions = lbk_test_arg(4);
    FILE *pred = fopen(predictions, "r");
    char line[256] = "";
    LBK_ASSERT_TRUE(pred && fgets(line, sizeof line, pred), "cannot read %s", predictions);
    LBK_ASSERT_EQ_STR(line, "query,label\n", "%s: header", predictions);
    for (uint32_t q = 0; q < p.nq; q++) {
        for (int s = 0; s < k; s++) {
            const size_t at = (size_t)q * k + s;
            const int32_t want_id = idx[at] == UINT32_MAX ? -1 : (int32_t)idx[at];
            const float want_d =
                idx[at] == UINT32_MAX ? INFINITY : oracle_distance(keys[at], p.metric);
            LBK_ASSERT_EQ_INT(neigh[at], want_id, "neighbour id of query %u slot %d", q, s);
            LBK_ASSERT_EQ_FLOAT(dist[at], want_d, "distance of query %u slot %d", q, s);
        }
        class_weights(keys + (size_t)q * k, idx + (size_t)q * k, p.labels, k, p.metric, p.weights,
                      p.temperature, w, voted);
        const int32_t best = best_class(w, voted);
        unsigned long qq = 0;
        long label = 0;
        LBK_ASSERT_TRUE(fgets(line, sizeof line, pred) &&
                            sscanf(line, "%lu,%ld", &qq, &label) == 2,
                        "%s: prediction row of query %u", predictions, q);
        LBK_ASSERT_EQ_U64(qq, q, "%s: prediction row", predictions);
        LBK_ASSERT_EQ_INT(label, best, "predicted label of query %u", q);
        if (proba) {
            LBK_ASSERT_TRUE(fgets(row, sizeof row, proba) != NULL, "%s: row of query %u missing",
                            proba_path, q);
            check_probability_row(proba_path, row, q, w, classes);
        }
        if (truth) {
            t.evaluated++;
            t.correct += best == truth[q];
            t.correct_top5 += in_top5(w, truth[q]);
            if (best >= 0 && best < t.classes && truth[q] < t.classes)
                t.matrix[(size_t)truth[q] * t.classes + best]++;
            else
                t.other++;
        }
    }
    LBK_ASSERT_FALSE(fgets(line, sizeof line, pred), "%s: extra rows", predictions);
    if (proba)
        LBK_ASSERT_FALSE(fgets(row, sizeof row, proba), "%s: extra rows", proba_path);
    if (report_path)
        check_report(report_path, &t);
    printf("verified %u queries x %d neighbours, distances and predictions%s%s\n", p.nq, k,
           proba ? ", probabilities" : "", report_path ? ", the report's accuracy" : "");
    if (report_path)
        printf("  correct %llu, top-5 %llu of %llu; %d x %d confusion matrix\n",
               (unsigned long long)t.correct, (unsigned long long)t.correct_top5,
               (unsigned long long)t.evaluated, t.classes, t.classes);
    if (proba)
        fclose(proba);
    fclose(pred);
    free(t.matrix);
    free(truth);
    free(w);
    free(voted);
    free(keys);
    free(idx);
    free(neigh);
    free(dist);
    free(p.ref);
    free(p.queries);
    free(p.labels);
}

static void case_same_arrays(void)
{
    lbk_test_args(2, 2, "A B");
    uint32_t ra, ca, rb, cb;
    uint32_t *a = read_array(lbk_test_arg(0), &ra, &ca),
             *b = read_array(lbk_test_arg(1), &rb, &cb);
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
