/* A program written as a user of the installed library would write it, built
 * outside the lbknn tree against an installed prefix only (by CMake's
 * find_package and by pkg-config; tests/install/install.sh). It searches and
 * classifies a few queries among nine 2-D points and compares with results
 * worked out by hand below: prints OK and exits 0, or prints each mismatch
 * and exits 1. */
#include <lbknn.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define DIM 2
#define ROWS 9
#define QUERIES 4
#define K 3
#define CLASSES 3

/* Three clusters of three points, one label each; ids are the row numbers. */
static const float points[ROWS * DIM] = {
    0,  0,  1,  0,  0,  1,  /* ids 0-2, label 0 */
    10, 10, 11, 10, 10, 11, /* ids 3-5, label 1 */
    0,  10, 1,  10, 0,  11, /* ids 6-8, label 2 */
};
static const int32_t labels[ROWS] = {0, 0, 0, 1, 1, 1, 2, 2, 2};
static const float queries[QUERIES * DIM] = {0, 0, 13, 14, 5, 10, 6, 10};

/* By hand, squared distances from each query, then the K smallest in
 * (distance, id) order:
 *  (0,0):   id 0: 0; ids 1, 2: 1; the rest >= 100         -> 0, 1, 2
 *  (13,14): id 3: 9+16 = 25; id 4: 4+16 = 20; id 5: 9+9 = 18;
 *           id 7: 144+16; the rest more                    -> 5, 4, 3
 *  (5,10):  id 7: 16; ids 3, 6: 25 (the smaller id first); ids 5, 8: 26;
 *           id 4: 36                                        -> 7, 3, 6
 *  (6,10):  id 3: 16; id 5: 16+1 = 17; ids 4, 7: 25; id 6: 36 -> 3, 5, 4
 * Distances are the square roots: sqrt 17 = 4.1231056, sqrt 18 =
 * 4.2426407, sqrt 20 = 4.4721360. */
static const int64_t want_ids[QUERIES * K] = {0, 1, 2, 5, 4, 3, 7, 3, 6, 3, 5, 4};
static const float want_distances[QUERIES * K] = {
    0, 1, 1, 4.2426407f, 4.4721360f, 5, 4, 5, 5, 4, 4.1231056f, 5,
};
/* Uniform votes of those neighbours' labels: (0,0,0), (1,1,1), (2,1,2),
 * (1,1,1); so the labels, and each class's share of the three votes. */
static const int32_t want_labels[QUERIES] = {0, 1, 2, 1};
static const double want_probabilities[QUERIES * CLASSES] = {
    1, 0, 0, 0, 1, 0, 0, 1.0 / 3, 2.0 / 3, 0, 1, 0,
};

static int failures;

static void mismatch(const char *what, int q, int j, double got, double want)
{
    printf("MISMATCH %s: query %d, column %d: got %.9g, expected %.9g\n", what, q, j, got, want);
    failures++;
}

static int check(lbknn_status status, const char *call, const char *message)
{
    if (status == LBKNN_OK)
        return 1;
    printf("FAIL %s: %s (%s)\n", call, lbknn_status_string(status), message ? message : "");
    return 0;
}

int main(void)
{
    /* The header and the library found must be the same version. */
    if (strcmp(lbknn_version(), LBKNN_VERSION_STRING) != 0) {
        printf("MISMATCH version: library %s, header %s\n", lbknn_version(),
               LBKNN_VERSION_STRING);
        return 1;
    }
    lbknn_options *options = NULL;
    if (!check(lbknn_options_create(&options), "lbknn_options_create", NULL))
        return 1;
    if (!check(lbknn_options_set(options, "knn.k", "3"), "lbknn_options_set knn.k",
               lbknn_options_error(options)) ||
        !check(lbknn_options_set(options, "device.type", "any"), "lbknn_options_set device.type",
               lbknn_options_error(options)))
        return 1;
    lbknn_context *context = NULL;
    char error[512] = "";
    if (!check(lbknn_context_create(options, NULL, &context, error, sizeof error),
               "lbknn_context_create", error))
        return 1;
    printf("device: %s\n", lbknn_context_device(context));
    lbknn_index *index = NULL;
    if (!check(lbknn_index_build(context, options, ROWS, DIM, points, labels, NULL, &index),
               "lbknn_index_build", lbknn_context_error(context)))
        return 1;
    if (lbknn_index_rows(index) != ROWS || lbknn_index_dim(index) != DIM ||
        lbknn_index_classes(index) != CLASSES) {
        printf("MISMATCH index: rows %lld dim %d classes %d, expected %d %d %d\n",
               (long long)lbknn_index_rows(index), lbknn_index_dim(index),
               (int)lbknn_index_classes(index), ROWS, DIM, CLASSES);
        failures++;
    }

    int64_t ids[QUERIES * K];
    float distances[QUERIES * K];
    if (!check(lbknn_index_search(index, QUERIES, queries, K, ids, distances),
               "lbknn_index_search", lbknn_index_error(index)))
        return 1;
    for (int q = 0; q < QUERIES; q++)
        for (int j = 0; j < K; j++) {
            const int i = q * K + j;
            if (ids[i] != want_ids[i])
                mismatch("id", q, j, (double)ids[i], (double)want_ids[i]);
            if (fabsf(distances[i] - want_distances[i]) > 1e-5f)
                mismatch("distance", q, j, distances[i], want_distances[i]);
        }

    int32_t predicted[QUERIES];
    double probabilities[QUERIES * CLASSES];
    if (!check(lbknn_index_classify(index, QUERIES, queries, K, LBKNN_WEIGHTS_UNIFORM, 0,
                                    predicted, probabilities),
               "lbknn_index_classify", lbknn_index_error(index)))
        return 1;
    for (int q = 0; q < QUERIES; q++) {
        if (predicted[q] != want_labels[q])
            mismatch("label", q, 0, predicted[q], want_labels[q]);
        for (int c = 0; c < CLASSES; c++)
            if (fabs(probabilities[q * CLASSES + c] - want_probabilities[q * CLASSES + c]) >
                1e-12)
                mismatch("probability", q, c, probabilities[q * CLASSES + c],
                         want_probabilities[q * CLASSES + c]);
    }

    lbknn_index_destroy(index);
    lbknn_context_destroy(context);
    lbknn_options_destroy(options);
    if (failures) {
        printf("FAIL: %d mismatches\n", failures);
        return 1;
    }
    printf("OK\n");
    return 0;
}
